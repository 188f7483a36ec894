//! A run's trace: every attempt a node received and what it answered
//! (redirects and refreshes among them), every fault and reconfiguration,
//! every operation of the workload, and the checker's verdict, as JSON
//! lines. Each line is hashed as it is written (`trace_sha256`: the same
//! seed gives the same hash); the lines themselves are kept only when
//! asked for (`just sim-trace`), so a campaign pays for the hash alone.

use std::fmt::Write as _;
use std::time::Duration;

use sha2::{Digest, Sha256};

/// The trace of one run.
#[derive(Default)]
pub struct Trace {
    hash: Sha256,
    lines: Option<Vec<String>>,
    /// Lines written.
    pub count: u64,
}

impl Trace {
    /// A trace that keeps its lines.
    #[must_use]
    pub fn keeping() -> Self {
        Self {
            lines: Some(Vec::new()),
            ..Self::default()
        }
    }

    /// Writes one line (a JSON object).
    pub fn line(&mut self, line: String) {
        self.hash.update(line.as_bytes());
        self.hash.update(b"\n");
        self.count += 1;
        if let Some(lines) = &mut self.lines {
            lines.push(line);
        }
    }

    /// A node received `command` (its name and first argument) on
    /// connection `conn` and answered `reply` (its first word).
    pub fn attempt(
        &mut self,
        at: Duration,
        node: usize,
        conn: u64,
        command: &[Vec<u8>],
        reply: &str,
    ) {
        let mut line = String::with_capacity(112);
        let _ = write!(
            line,
            r#"{{"t":{},"kind":"attempt","node":{node},"conn":{conn},"cmd":"#,
            at.as_micros()
        );
        let name = command.first().map_or(&[][..], Vec::as_slice);
        push_json(
            &mut line,
            &String::from_utf8_lossy(name).to_ascii_uppercase(),
        );
        if let Some(arg) = command.get(1) {
            line.push_str(r#","arg":"#);
            push_json(&mut line, &String::from_utf8_lossy(arg));
        }
        line.push_str(r#","reply":"#);
        push_json(&mut line, reply);
        line.push('}');
        self.line(line);
    }

    /// Something happened to node `node` (a fault, a failover, a view).
    pub fn note(&mut self, at: Duration, kind: &str, node: usize, what: &str) {
        self.line(format!(
            r#"{{"t":{},"kind":{},"node":{node},"what":{}}}"#,
            at.as_micros(),
            json(kind),
            json(what)
        ));
    }

    /// The hash of every line so far, in hex.
    #[must_use]
    pub fn sha256(&self) -> String {
        self.hash
            .clone()
            .finalize()
            .iter()
            .fold(String::with_capacity(64), |mut s, b| {
                let _ = write!(s, "{b:02x}");
                s
            })
    }

    /// The lines kept (none unless [`Trace::keeping`]).
    #[must_use]
    pub fn lines(&self) -> &[String] {
        self.lines.as_deref().unwrap_or_default()
    }
}

/// `text` as a JSON string.
#[must_use]
pub fn json(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    push_json(&mut out, text);
    out
}

/// Appends `text` to `out` as a JSON string (serde_json's escaping,
/// written in place).
pub fn push_json(out: &mut String, text: &str) {
    let mut bytes = std::mem::take(out).into_bytes();
    // Writing a `str` into a `Vec` cannot fail, and keeps it UTF-8.
    let _ = serde_json::to_writer(&mut bytes, text);
    *out = String::from_utf8(bytes).unwrap_or_default();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_written_as_json_writes_them() {
        for text in [
            "plain",
            "quote \" and \\",
            "line\nbreak\ttab\r",
            "\u{1}\u{8}\u{c}\u{1f}",
            "ünï €",
        ] {
            assert_eq!(json(text), serde_json::to_string(text).unwrap(), "{text:?}");
        }
    }
}
