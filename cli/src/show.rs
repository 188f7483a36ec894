//! Output: keys as people can read them, and aligned tables.

use std::borrow::Cow;

/// A key as text: as it is when it is printable UTF-8, else with every
/// byte outside printable ASCII escaped (`\xff`, `\n`), as `redis-cli`
/// shows binary keys.
pub(crate) fn key(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) if !text.chars().any(char::is_control) => Cow::Borrowed(text),
        _ => Cow::Owned(bytes.escape_ascii().to_string()),
    }
}

/// Slots `first..=last` as `first-last`, or `first` alone.
pub(crate) fn slots(first: u16, last: u16) -> String {
    if first == last {
        first.to_string()
    } else {
        format!("{first}-{last}")
    }
}

/// Rows printed in columns as wide as their widest cell, two spaces
/// apart; the first row is the header.
pub(crate) fn table(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c + 1 == row.len() {
                line.push_str(cell);
            } else {
                let pad = widths[c] - cell.chars().count();
                line.push_str(cell);
                line.extend(std::iter::repeat_n(' ', pad + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_tables_and_ranges_read_as_people_expect() {
        assert_eq!(key(b"{user1000}.following"), "{user1000}.following");
        assert_eq!(key("clé".as_bytes()), "clé");
        assert_eq!(key(b"a\xffb\n"), "a\\xffb\\n");
        assert_eq!(slots(5, 5), "5");
        assert_eq!(slots(0, 5460), "0-5460");
        let rows = vec![
            vec!["KEY".into(), "SLOT".into()],
            vec!["a-long-key".into(), "15495".into()],
        ];
        assert_eq!(table(&rows), "KEY         SLOT\na-long-key  15495\n");
    }
}
