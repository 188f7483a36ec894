//! Reads the medians of a run out of criterion's output directory
//! (`target/criterion/<id>/new/{benchmark,estimates}.json`).

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::time::SystemTime;

use anyhow::{Context, Result};
use serde::Deserialize;

#[derive(Deserialize)]
struct Benchmark {
    full_id: String,
}

#[derive(Deserialize)]
struct Estimates {
    median: Estimate,
}

#[derive(Deserialize)]
struct Estimate {
    point_estimate: f64,
}

/// The median (ns) of every benchmark under `dir` whose estimates were
/// written at or after `since`: the benchmarks of this run, not stale ones
/// left by an earlier run or another crate.
///
/// # Errors
/// An unreadable directory or a malformed criterion file.
pub fn collect(dir: &Path, since: SystemTime) -> Result<BTreeMap<String, f64>> {
    let mut medians = BTreeMap::new();
    walk(dir, since, &mut medians)?;
    Ok(medians)
}

fn walk(dir: &Path, since: SystemTime, medians: &mut BTreeMap<String, f64>) -> Result<()> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("listing {}", dir.display())),
    };
    for entry in entries {
        let path = entry?.path();
        if !path.is_dir() {
            continue;
        }
        let estimates = path.join("new/estimates.json");
        let fresh = fs::metadata(&estimates)
            .and_then(|m| m.modified())
            .is_ok_and(|written| written >= since);
        if fresh {
            let read = |p: &Path| {
                fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))
            };
            let bench: Benchmark = serde_json::from_str(&read(&path.join("new/benchmark.json"))?)?;
            let est: Estimates = serde_json::from_str(&read(&estimates)?)
                .with_context(|| format!("parsing {}", estimates.display()))?;
            medians.insert(bench.full_id, est.median.point_estimate);
        }
        if path
            .file_name()
            .is_some_and(|n| n != "new" && n != "base" && n != "report")
        {
            walk(&path, since, medians)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn write_bench(root: &Path, dir: &str, id: &str, median: f64) {
        let new = root.join(dir).join("new");
        fs::create_dir_all(&new).unwrap();
        fs::write(
            new.join("benchmark.json"),
            format!(r#"{{"group_id":"g","full_id":"{id}","title":"{id}"}}"#),
        )
        .unwrap();
        let estimate = |v: f64| {
            format!(
                r#"{{"point_estimate":{v},"standard_error":0.1,"confidence_interval":{{"confidence_level":0.95,"lower_bound":{v},"upper_bound":{v}}}}}"#
            )
        };
        fs::write(
            new.join("estimates.json"),
            format!(
                r#"{{"mean":{},"median":{}}}"#,
                estimate(median + 1.0),
                estimate(median)
            ),
        )
        .unwrap();
    }

    #[test]
    fn reads_medians_of_this_run_only() {
        let root = tempfile::tempdir().unwrap();
        write_bench(
            root.path(),
            "slot-ascii/zaris/8",
            "slot-ascii/zaris/8",
            2.25,
        );
        write_bench(root.path(), "route/btreemap/3", "route/btreemap/3", 7.5);
        write_bench(root.path(), "route/zaris-table", "route/zaris-table", 3.0);
        let all = collect(root.path(), SystemTime::UNIX_EPOCH).unwrap();
        assert_eq!(
            all,
            BTreeMap::from([
                ("route/btreemap/3".to_owned(), 7.5),
                ("route/zaris-table".to_owned(), 3.0),
                ("slot-ascii/zaris/8".to_owned(), 2.25),
            ])
        );
        let later = SystemTime::now() + Duration::from_secs(60);
        assert!(
            collect(root.path(), later).unwrap().is_empty(),
            "stale results are left out"
        );
        assert!(
            collect(&root.path().join("missing"), SystemTime::UNIX_EPOCH)
                .unwrap()
                .is_empty()
        );
    }
}
