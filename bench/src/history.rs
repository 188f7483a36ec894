//! One benchmark run as a [`Record`], and the history file: JSON Lines, one
//! record per run, oldest first, committed in the repo.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// One benchmark run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The commit benchmarked (`git describe --always --dirty`).
    pub commit: String,
    /// When the run ended, RFC 3339 UTC.
    pub date: String,
    /// `rustc -V`.
    pub rustc: String,
    /// The CPU model, as `/proc/cpuinfo` names it, with its family, model
    /// and stepping numbers where it gives them (see [`cpu_identity`]).
    pub cpu: String,
    /// Logical CPUs.
    pub cpus: usize,
    /// The CRC engine the core picked on this CPU.
    pub crc_engine: String,
    /// Criterion's `--quick` mode (noisier; not appended to the history).
    #[serde(default)]
    pub quick: bool,
    /// Median time per operation in nanoseconds, by criterion id
    /// (`group/function/parameter`).
    pub medians_ns: BTreeMap<String, f64>,
    /// Heap allocations per operation, by operation (all must be 0).
    #[serde(default)]
    pub allocations_per_op: BTreeMap<String, f64>,
    /// The CRC engines this CPU runs, narrowest first (the last is in use).
    #[serde(default)]
    pub engines: Vec<String>,
    /// Quiet-phase time per operation (ns) from the interleaved run of every
    /// engine against the peers (`benches/tiers.rs`), by id.
    #[serde(default)]
    pub interleaved_ns: BTreeMap<String, f64>,
}

impl Record {
    /// The median of `id`, if this run measured it.
    #[must_use]
    pub fn median(&self, id: &str) -> Option<f64> {
        self.medians_ns.get(id).copied()
    }

    /// The commit, shortened for chart labels.
    #[must_use]
    pub fn short_commit(&self) -> &str {
        short_commit(&self.commit)
    }
}

/// A commit, shortened for chart labels (its first 10 characters).
#[must_use]
pub fn short_commit(commit: &str) -> &str {
    let end = commit
        .char_indices()
        .nth(10)
        .map_or(commit.len(), |(i, _)| i);
    &commit[..end]
}

/// The first line `program args` prints, `unknown` when it fails.
#[must_use]
pub fn first_line_of(program: &str, args: &[&str]) -> String {
    std::process::Command::new(program)
        .args(args)
        .output()
        .ok()
        .filter(|out| out.status.success())
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .and_then(|text| text.lines().next().map(str::to_owned))
        .unwrap_or_else(|| "unknown".into())
}

/// The commit this tree is at (`git describe --always --dirty
/// --abbrev=12`), `unknown` outside a checkout.
#[must_use]
pub fn this_commit() -> String {
    first_line_of("git", &["describe", "--always", "--dirty", "--abbrev=12"])
}

/// This machine's CPU as runs are compared on ([`cpu_identity`]), the
/// architecture's name where `/proc/cpuinfo` says nothing.
#[must_use]
pub fn this_cpu() -> String {
    fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| cpu_identity(&info))
        .unwrap_or_else(|| std::env::consts::ARCH.to_owned())
}

/// The CPU a run is compared on, from the text of `/proc/cpuinfo`: the
/// model name, then the family, model and stepping numbers where they are
/// given (x86). Virtual machines name different parts alike ("Intel(R)
/// Xeon(R) Processor" has stood for a 3.0 GHz and a 4.2 GHz part, whose
/// vector code and table look-ups did not speed up alike), so the name
/// alone would compare runs from different CPUs. `None` without a model
/// name.
#[must_use]
pub fn cpu_identity(cpuinfo: &str) -> Option<String> {
    // The first processor's fields, up to the blank line after them.
    let field = |key: &str| {
        cpuinfo
            .lines()
            .take_while(|line| !line.trim().is_empty())
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                (name.trim() == key).then(|| value.trim())
            })
    };
    let name = field("model name")?;
    let numbers = (field("cpu family"), field("model"), field("stepping"));
    Some(match numbers {
        (Some(family), Some(model), Some(stepping)) => {
            format!("{name} (family {family}, model {model}, stepping {stepping})")
        }
        _ => name.to_owned(),
    })
}

/// Reads every record of a history file (a missing file is an empty history).
///
/// # Errors
/// Unreadable file, or a line that is not a record (the error names the line).
pub fn load(path: &Path) -> Result<Vec<Record>> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    parse(&text).with_context(|| format!("in {}", path.display()))
}

/// Parses history text: one JSON record per non-blank line.
///
/// # Errors
/// A line that is not a record, named by its number.
pub fn parse(text: &str) -> Result<Vec<Record>> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            serde_json::from_str(line)
                .with_context(|| format!("line {} is not a benchmark record", i + 1))
        })
        .collect()
}

/// Appends `record` to the history file as one line.
///
/// # Errors
/// A record with no medians, or the file cannot be written.
pub fn append(path: &Path, record: &Record) -> Result<()> {
    if record.medians_ns.is_empty() {
        bail!("refusing to record a run with no medians (did the benches run?)");
    }
    let mut line = serde_json::to_string(record)?;
    line.push('\n');
    let mut file = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))?;
    file.write_all(line.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A record with the given medians, for the tests of this crate.
    pub(crate) fn record(commit: &str, medians: &[(&str, f64)]) -> Record {
        Record {
            commit: commit.into(),
            date: "2026-11-30T08:00:00Z".into(),
            rustc: "rustc 1.95.0".into(),
            cpu: "Test CPU".into(),
            cpus: 2,
            crc_engine: "portable".into(),
            quick: false,
            medians_ns: medians
                .iter()
                .map(|&(id, ns)| (id.to_owned(), ns))
                .collect(),
            allocations_per_op: BTreeMap::from([("slot_for_key".to_owned(), 0.0)]),
            engines: Vec::new(),
            interleaved_ns: BTreeMap::new(),
        }
    }

    #[test]
    fn a_cpu_is_its_name_and_numbers() {
        let x86 = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\n\
                   model\t\t: 167\nmodel name\t: Intel(R) Xeon(R) Processor\n\
                   stepping\t: 1\n\nprocessor\t: 1\nmodel\t\t: 85\n";
        assert_eq!(
            cpu_identity(x86).as_deref(),
            Some("Intel(R) Xeon(R) Processor (family 6, model 167, stepping 1)")
        );
        let named_only = "processor\t: 0\nmodel name\t: ARMv8 Processor rev 1 (v8l)\n";
        assert_eq!(
            cpu_identity(named_only).as_deref(),
            Some("ARMv8 Processor rev 1 (v8l)")
        );
        assert_eq!(cpu_identity("processor\t: 0\nCPU part\t: 0xd0c\n"), None);
        assert_eq!(cpu_identity(""), None);
    }

    #[test]
    fn records_round_trip_through_the_file_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.jsonl");
        assert_eq!(
            load(&path).unwrap(),
            vec![],
            "a missing file is an empty history"
        );
        let first = record("abc1234", &[("slot-ascii/zaris/8", 2.25)]);
        let second = record(
            "def5678",
            &[("slot-ascii/zaris/8", 2.5), ("route/zaris-table", 3.0)],
        );
        append(&path, &first).unwrap();
        append(&path, &second).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 2);
        assert_eq!(load(&path).unwrap(), vec![first, second.clone()]);
        assert_eq!(second.median("route/zaris-table"), Some(3.0));
        assert_eq!(second.median("route/nothing"), None);
    }

    #[test]
    fn a_bad_line_is_named() {
        let good = serde_json::to_string(&record("abc", &[("a", 1.0)])).unwrap();
        let err = parse(&format!("{good}\n\n{{\"commit\": 3}}\n")).unwrap_err();
        assert_eq!(err.to_string(), "line 3 is not a benchmark record");
    }

    #[test]
    fn an_empty_run_is_not_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.jsonl");
        assert!(append(&path, &record("abc", &[])).is_err());
        assert!(!path.exists());
    }

    #[test]
    fn commits_shorten_on_char_boundaries() {
        assert_eq!(record("0123456789abcdef", &[]).short_commit(), "0123456789");
        assert_eq!(record("ab-dirty", &[]).short_commit(), "ab-dirty");
    }
}
