#![no_main]
//! Any text pasted into the playground's "One command": the splitter
//! answers with arguments or an error where the problem is, never a panic.
//! A line without quotes splits as redis-cli splits it; and arguments it returns,
//! quoted back (every byte as `\xHH`) and joined, split to the same ones.

use libfuzzer_sys::fuzz_target;
use zaris_wasm::_fuzz::split_args;

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    let args = match split_args(line) {
        Ok(args) => args,
        Err(e) => {
            assert!(e.at <= line.len(), "{e:?} past the end of {line:?}");
            return;
        }
    };
    if !line.contains(['"', '\'']) {
        assert_eq!(args, unquoted_words(line.as_bytes()), "{line:?}");
    }
    let quoted: Vec<String> = args
        .iter()
        .map(|arg| {
            format!(
                "\"{}\"",
                arg.iter()
                    .map(|b| format!("\\x{b:02x}"))
                    .collect::<String>()
            )
        })
        .collect();
    assert_eq!(
        split_args(&quoted.join(" ")).as_ref(),
        Ok(&args),
        "{line:?}"
    );
});

/// redis-cli's words of a line without quotes: white space (and NUL)
/// between them skipped; a word ends at a space, `\n`, `\r`, `\t` or NUL.
fn unquoted_words(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut words = Vec::new();
    let mut i = 0;
    loop {
        while i < bytes.len() && (bytes[i].is_ascii_whitespace() || bytes[i] == 0) {
            i += 1;
        }
        if i == bytes.len() {
            return words;
        }
        let start = i;
        while i < bytes.len() && !matches!(bytes[i], b' ' | b'\n' | b'\r' | b'\t' | 0) {
            i += 1;
        }
        words.push(bytes[start..i].to_vec());
    }
}
