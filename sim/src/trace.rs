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

    /// A node received `command` (its name and first key) on connection
    /// `conn` and answered `reply` (its first word).
    pub fn attempt(
        &mut self,
        at: Duration,
        node: usize,
        conn: u64,
        command: &[Vec<u8>],
        reply: &str,
    ) {
        let mut line = String::with_capacity(96);
        let _ = write!(
            line,
            r#"{{"t":{},"kind":"attempt","node":{node},"conn":{conn},"cmd":{}"#,
            at.as_micros(),
            json(
                &String::from_utf8_lossy(command.first().map_or(&[][..], |c| c))
                    .to_ascii_uppercase()
            ),
        );
        if let Some(key) = command.get(1) {
            let _ = write!(line, r#","arg":{}"#, json(&String::from_utf8_lossy(key)));
        }
        let _ = write!(line, r#","reply":{}}}"#, json(reply));
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
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}
