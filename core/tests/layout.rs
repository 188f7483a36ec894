//! The core's layout, checked: the import graph of `core/src` has no cycle,
//! and the engines below `engine/` never import the public files above
//! them (`crc16.rs`, `placement.rs`, `utf16.rs`, ...). A name used through
//! the crate root (`crate::SLOT_COUNT`) counts as an import of the file
//! that defines it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Module id (`engine/x86_64/pclmul`) of every source file, test files left
/// out (`tests.rs`, and the `#[cfg(test)] mod tests` at a file's end).
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
            if id.ends_with("tests") {
                continue;
            }
            let text = fs::read_to_string(&path).unwrap();
            let code = match text.find("#[cfg(test)]\nmod tests") {
                Some(at) => text[..at].to_owned(),
                None => text,
            };
            out.insert(id, code);
        }
    }
    let root: PathBuf = [env!("CARGO_MANIFEST_DIR"), "src"].iter().collect();
    let mut out = BTreeMap::new();
    walk(&root, &root, &mut out);
    out
}

/// The paths a file names: `crate::a::b`, `super::x`, and the members of
/// `use crate::{a, b::c}` groups, as module-ish segment lists.
fn paths(module: &str, code: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let words: Vec<&str> = code
        .split(|c: char| {
            !(c.is_alphanumeric() || c == '_' || c == ':' || c == '{' || c == '}' || c == ',')
        })
        .filter(|w| !w.is_empty())
        .collect();
    let own: Vec<String> = module.split('/').map(str::to_owned).collect();
    for word in words {
        let word = word.trim_matches(|c| c == '{' || c == '}' || c == ',');
        let (base, rest): (Vec<String>, &str) = if let Some(rest) = word.strip_prefix("crate::") {
            (Vec::new(), rest)
        } else if let Some(rest) = word.strip_prefix("super::") {
            // `super` of a `foo/mod.rs` is `foo`'s parent; of `foo/bar.rs`, `foo`.
            let mut base = own.clone();
            base.pop();
            (base, rest)
        } else {
            continue;
        };
        let head: Vec<String> = base
            .into_iter()
            .chain(
                rest.split("::")
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned),
            )
            .collect();
        found.push(head);
    }
    found
}

#[test]
fn the_core_imports_point_down_and_have_no_cycle() {
    let files = sources();
    // Names the crate root re-exports, and the file each comes from.
    let mut reexports: BTreeMap<String, String> = BTreeMap::new();
    let lib = &files["lib"];
    for stmt in lib.split("pub use ").skip(1) {
        let stmt = &stmt[..stmt.find(';').unwrap()];
        let (module, names) = stmt.split_once("::").unwrap();
        let names = names.trim_start_matches('{').trim_end_matches('}');
        for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let module = match name.split_once("::") {
                Some((sub, _)) => format!("{module}/{sub}"),
                None => module.to_owned(),
            };
            let name = name.rsplit("::").next().unwrap().to_owned();
            reexports.insert(name, module);
        }
    }
    let resolve = |segments: &[String]| -> Option<String> {
        // The longest prefix that is a file, else a re-exported name.
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
    let mut graph: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for (module, code) in &files {
        if module == "lib" {
            continue;
        }
        let targets = graph.entry(module).or_default();
        for path in paths(module, code) {
            if let Some(target) = resolve(&path) {
                if target != *module && target != "lib" {
                    targets.insert(target);
                }
            }
        }
    }
    for (module, targets) in &graph {
        if module.starts_with("engine") {
            for target in targets {
                assert!(
                    target.starts_with("engine"),
                    "{module} imports {target}: the engines must not import the files above them"
                );
            }
            if *module != "engine" {
                assert!(
                    !targets.contains("engine"),
                    "{module} imports engine/mod.rs, the file that dispatches to it"
                );
            }
        }
    }
    // Depth-first search for a cycle.
    fn visit<'a>(
        node: &'a str,
        graph: &'a BTreeMap<&str, BTreeSet<String>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) {
        if done.contains(node) {
            return;
        }
        if let Some(at) = path.iter().position(|&n| n == node) {
            panic!("import cycle: {} -> {node}", path[at..].join(" -> "));
        }
        path.push(node);
        for next in graph.get(node).into_iter().flatten() {
            visit(next, graph, path, done);
        }
        path.pop();
        done.insert(node);
    }
    let mut done = BTreeSet::new();
    for module in graph.keys() {
        visit(module, &graph, &mut Vec::new(), &mut done);
    }
    // The check sees the engines: a cycle-free result is not vacuous.
    assert!(graph["engine/x86_64/avx512"].contains("engine/x86_64/pclmul"));
    assert!(graph["placement"].contains("engine"));
    assert!(graph.len() > 15, "{:?}", graph.keys());
}
