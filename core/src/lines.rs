//! Keys in a newline-separated batch: the one rule every batch entry point
//! (wasm, the C ABI, Python) reads text by.

use memchr::Memchr;

/// The keys of `text`, one per line: split at `\n`, a `\r` before it
/// dropped (CRLF text), a final newline ending the last key rather than
/// starting an empty one (so `"\n"` alone holds no key). Empty lines are
/// empty keys (a key like any other).
///
/// ```
/// use zaris_core::key_lines;
/// let keys: Vec<&[u8]> = key_lines(b"a\r\n\nb\n").collect();
/// assert_eq!(keys, [&b"a"[..], b"", b"b"]);
/// assert_eq!(key_lines(b"").count(), 0);
/// ```
#[must_use]
pub fn key_lines(text: &[u8]) -> KeyLines<'_> {
    let text = text.strip_suffix(b"\n").unwrap_or(text);
    KeyLines {
        text,
        ends: memchr::memchr_iter(b'\n', text),
        start: 0,
        done: text.is_empty(),
    }
}

/// The iterator of [`key_lines`].
#[derive(Clone)]
pub struct KeyLines<'a> {
    text: &'a [u8],
    ends: Memchr<'a>,
    start: usize,
    done: bool,
}

impl<'a> Iterator for KeyLines<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.done {
            return None;
        }
        let end = match self.ends.next() {
            Some(end) => end,
            None => {
                self.done = true;
                self.text.len()
            }
        };
        let line = &self.text[self.start..end];
        self.start = end + 1;
        Some(line.strip_suffix(b"\r").unwrap_or(line))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_as_a_batch_reads_them() {
        let all =
            |text: &'static [u8]| -> heapless::Vec<&'static [u8], 8> { key_lines(text).collect() };
        assert_eq!(all(b"a\nb"), [&b"a"[..], b"b"]);
        assert_eq!(all(b"a\nb\n"), [&b"a"[..], b"b"]);
        assert!(all(b"\n").is_empty(), "one newline ends nothing");
        assert_eq!(all(b"\n\n"), [&b""[..], b""]);
        assert_eq!(all(b"\n\na"), [&b""[..], b"", b"a"]);
        assert_eq!(all(b"x\r\ny\r"), [&b"x"[..], b"y"]);
        assert_eq!(all(b"\r"), [&b""[..]]);
        assert!(all(b"").is_empty());
    }
}
