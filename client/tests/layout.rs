//! The client's layout, checked: the import graph of `client/src` has no
//! cycle, and the files below the shared state (the codec, the
//! connections, the topology parsers, the nodes and the map) never reach
//! it. A name used through the crate root (`crate::Error`) counts as an
//! import of the file that defines it; comments do not count.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The files with no state of the client's: they must not reach `inner`
/// (the shared state) or anything built on it.
const BELOW_THE_STATE: &[&str] = &[
    "codec",
    "conn",
    "conn/dial",
    "conn/driver",
    "config",
    "error",
    "gate",
    "metrics",
    "ownership",
    "pool",
    "reply",
    "route",
    "snapshot",
    "stats",
    "topology",
    "value",
];

/// Module id (`conn/dial`) of every source file, with its code: comments
/// and the `#[cfg(test)] mod tests` at a file's end left out.
fn sources() -> BTreeMap<String, String> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<String, String>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, root, out);
                continue;
            }
            let rel = path.strip_prefix(root).unwrap().with_extension("");
            let mut id = rel.to_string_lossy().replace('\\', "/");
            if id.ends_with("/mod") {
                id.truncate(id.len() - 4);
            }
            let text = fs::read_to_string(&path).unwrap();
            let code = match text.find("#[cfg(test)]\nmod tests") {
                Some(at) => &text[..at],
                None => &text,
            };
            let code: String = code
                .lines()
                .map(|line| line.find("//").map_or(line, |at| &line[..at]))
                .collect::<Vec<_>>()
                .join("\n");
            out.insert(id, code);
        }
    }
    let root: PathBuf = [env!("CARGO_MANIFEST_DIR"), "src"].iter().collect();
    let mut out = BTreeMap::new();
    walk(&root, &root, &mut out);
    out
}

/// Every path a file names from the crate root or its parent
/// (`crate::a::b`, `super::x`, each member of `crate::{a, b::{c, d}}`), as
/// segment lists.
fn paths(module: &str, code: &str) -> Vec<Vec<String>> {
    /// The paths of a use-tree starting at `rest` (after a `::`), each
    /// prefixed with `base`; how many bytes were read.
    fn tree(rest: &str, base: &[String], out: &mut Vec<Vec<String>>) -> usize {
        let bytes = rest.as_bytes();
        let mut at = 0;
        let mut path = base.to_vec();
        loop {
            while at < bytes.len() && bytes[at].is_ascii_whitespace() {
                at += 1;
            }
            if bytes.get(at) == Some(&b'{') {
                at += 1;
                loop {
                    at += tree(&rest[at..], &path, out);
                    while at < bytes.len() && bytes[at].is_ascii_whitespace() {
                        at += 1;
                    }
                    match bytes.get(at) {
                        Some(b',') => at += 1,
                        Some(b'}') => return at + 1,
                        _ => return at,
                    }
                    while at < bytes.len() && bytes[at].is_ascii_whitespace() {
                        at += 1;
                    }
                    if bytes.get(at) == Some(&b'}') {
                        return at + 1;
                    }
                }
            }
            let start = at;
            while at < bytes.len() && (bytes[at].is_ascii_alphanumeric() || bytes[at] == b'_') {
                at += 1;
            }
            if start == at {
                break;
            }
            path.push(rest[start..at].to_owned());
            if rest[at..].starts_with("::") {
                at += 2;
            } else {
                break;
            }
        }
        if path.len() > base.len() {
            out.push(path);
        }
        at
    }
    let own: Vec<String> = module.split('/').map(str::to_owned).collect();
    let mut found = Vec::new();
    for (prefix, base) in [
        ("crate::", Vec::new()),
        ("super::", own[..own.len().saturating_sub(1)].to_vec()),
    ] {
        let mut from = 0;
        while let Some(at) = code[from..].find(prefix) {
            let start = from + at;
            let word_start = start == 0
                || !code.as_bytes()[start - 1].is_ascii_alphanumeric()
                    && code.as_bytes()[start - 1] != b'_';
            from = start + prefix.len();
            if word_start {
                tree(&code[from..], &base, &mut found);
            }
        }
    }
    found
}

/// Who imports whom, by module id.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let files = sources();
    // Names the crate root re-exports, and the file each comes from.
    let mut reexports: BTreeMap<String, String> = BTreeMap::new();
    for stmt in files["lib"].split("pub use ").skip(1) {
        let stmt = &stmt[..stmt.find(';').unwrap()];
        let Some((module, names)) = stmt.split_once("::") else {
            continue;
        };
        let names = names.trim_start_matches('{').trim_end_matches('}');
        for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let name = name.split(" as ").next().unwrap().trim();
            reexports.insert(name.to_owned(), module.trim().to_owned());
        }
    }
    let resolve = |segments: &[String]| -> Option<String> {
        for n in (1..=segments.len()).rev() {
            let id = segments[..n].join("/");
            if files.contains_key(&id) {
                return Some(id);
            }
        }
        segments
            .first()
            .and_then(|name| reexports.get(name).cloned())
    };
    let mut graph = BTreeMap::new();
    for (module, code) in &files {
        if module == "lib" {
            continue;
        }
        let targets: &mut BTreeSet<String> = graph.entry(module.clone()).or_default();
        for path in paths(module, code) {
            if let Some(target) = resolve(&path) {
                if target != *module && target != "lib" {
                    targets.insert(target);
                }
            }
        }
    }
    graph
}

/// Every module `from` reaches.
fn reach(graph: &BTreeMap<String, BTreeSet<String>>, from: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![from.to_owned()];
    while let Some(next) = todo.pop() {
        for target in graph.get(&next).into_iter().flatten() {
            if seen.insert(target.clone()) {
                todo.push(target.clone());
            }
        }
    }
    seen
}

#[test]
fn the_client_imports_have_no_cycle() {
    let graph = graph();
    for module in graph.keys() {
        assert!(
            !reach(&graph, module).contains(module),
            "import cycle through {module}: {:?}",
            graph[module]
        );
    }
    // The check sees the imports: a cycle-free result is not vacuous.
    assert!(graph["request"].contains("inner"), "{:?}", graph["request"]);
    assert!(graph["client"].contains("request") || graph["client"].contains("inner"));
    assert!(graph["conn/driver"].contains("codec"));
    assert!(graph["pipeline"].contains("route"));
    assert!(graph.len() > 20, "{:?}", graph.keys());
}

#[test]
fn the_files_below_the_state_never_reach_it() {
    let graph = graph();
    for module in BELOW_THE_STATE {
        assert!(graph.contains_key(*module), "no file {module}");
        let reached = reach(&graph, module);
        for state in ["inner", "client", "request", "refresh", "command"] {
            assert!(
                !reached.contains(state),
                "{module} reaches {state}: {reached:?}"
            );
        }
    }
    // Everything else is built on the state.
    for module in graph.keys() {
        if !BELOW_THE_STATE.contains(&module.as_str()) && module != "inner" {
            assert!(
                reach(&graph, module).contains("inner"),
                "{module} is neither below the state nor built on it: list it"
            );
        }
    }
}
