//! The client's layout, checked: the import graph of `client/src` has no
//! cycle; the files below the shared state (the codec, the connections,
//! the topology parsers, the failure readings, the nodes and the map)
//! never reach it; a type's `impl` blocks live in the file that defines it
//! but for the rooms listed in [`SPREAD`]; and ARCHITECTURE.md names
//! every file. The reading of the source (imports through `crate::`,
//! `super::`, `self::`, child modules and re-exports; comments left out)
//! is `tools/layout.rs`, shared with the core's layout test.

use std::collections::BTreeMap;
use std::path::Path;

#[path = "../../tools/layout.rs"]
mod layout;

use layout::Layout;

/// The files with no state of the client's: they must not reach `inner`
/// (the shared state) or anything built on it.
const BELOW_THE_STATE: &[&str] = &[
    "cache",
    "codec",
    "conn",
    "conn/connection",
    "conn/dial",
    "conn/driver",
    "conn/error",
    "conn/shared",
    "conn/slot",
    "conn/watch",
    "config",
    "error",
    "failure",
    "gate",
    "metrics",
    "ownership",
    "pool",
    "reply",
    "route",
    "seam",
    "side",
    "snapshot",
    "stats",
    "topology",
    "value",
];

/// The types whose `impl` blocks may live outside the file that defines
/// them, where, and why. Anything else is a circle the imports do not
/// show (a file that fills in another's type, called from there).
const SPREAD: &[(&str, &[&str], &str)] = &[
    (
        "Shared",
        &["conn/watch"],
        "a connection's side of a pause (ticks, checks, holds) apart from its queue and replies",
    ),
    (
        "Builder",
        &["client"],
        "Builder::connect makes a Client: config.rs is below the state and cannot name it",
    ),
    (
        "Client",
        &[
            "command",
            "compat",
            "pipeline",
            "pubsub",
            "scan",
            "script",
            "transaction",
        ],
        "the API: each feature's calls on Client live with the feature",
    ),
    (
        "Inner",
        &[
            "command/plan",
            "command/run",
            "lease",
            "refresh",
            "request/retry",
            "request/round",
            "request/send",
        ],
        "what runs on the shared state, by job, above it (inner.rs holds only the state)",
    ),
];

fn client() -> Layout {
    Layout::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

#[test]
fn the_client_imports_have_no_cycle() {
    let graph = client().imports();
    for module in graph.keys() {
        assert!(
            !Layout::reach(&graph, module).contains(module),
            "import cycle through {module}: {:?}",
            graph[module]
        );
    }
    // The check sees the imports: a cycle-free result is not vacuous.
    assert!(
        graph["request/round"].contains("inner"),
        "{:?}",
        graph["request/round"]
    );
    // Through a child module (`mod retry;` ... `retry::Retrying`).
    assert!(
        graph["request"].contains("request/retry"),
        "{:?}",
        graph["request"]
    );
    // Through a nested re-export (`crate::request::Retrying`).
    assert!(
        graph["transaction"].contains("request/retry"),
        "{:?}",
        graph["transaction"]
    );
    assert!(graph["conn/shared"].contains("codec"));
    assert!(graph["conn/connection"].contains("conn/driver"));
    assert!(graph["pipeline"].contains("route"));
    assert!(graph.len() > 25, "{:?}", graph.keys());
}

#[test]
fn the_files_below_the_state_never_reach_it() {
    let graph = client().imports();
    for module in BELOW_THE_STATE {
        assert!(graph.contains_key(*module), "no file {module}");
        let reached = Layout::reach(&graph, module);
        for state in ["inner", "client", "request", "refresh", "command"] {
            assert!(
                !reached
                    .iter()
                    .any(|r| r == state || r.starts_with(&format!("{state}/"))),
                "{module} reaches {state}: {reached:?}"
            );
        }
    }
    // Everything else is built on the state.
    for module in graph.keys() {
        if !BELOW_THE_STATE.contains(&module.as_str()) && module != "inner" && module != "lib" {
            assert!(
                Layout::reach(&graph, module).contains("inner"),
                "{module} is neither below the state nor built on it: list it"
            );
        }
    }
}

#[test]
fn a_type_is_implemented_where_it_is_defined() {
    let client = client();
    let spread: BTreeMap<&str, &[&str]> = SPREAD.iter().map(|(t, files, _)| (*t, *files)).collect();
    let foreign = client.foreign_impls();
    for (ty, home, at) in &foreign {
        assert!(
            spread.get(ty.as_str()).is_some_and(|files| files.contains(&at.as_str())),
            "impl {ty} in {at}.rs, defined in {home}.rs: move it home, or list it in SPREAD with its reason"
        );
    }
    // The check sees them: the API's calls are spread as listed.
    assert!(foreign
        .iter()
        .any(|(ty, _, at)| ty == "Client" && at == "pipeline"));
    assert!(foreign
        .iter()
        .any(|(ty, _, at)| ty == "Inner" && at == "request/send"));
}

#[test]
fn the_code_map_names_every_file() {
    let map =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../ARCHITECTURE.md"))
            .expect("ARCHITECTURE.md");
    let section = layout::section(&map, "client/").expect("a section for client/");
    let unnamed = client().unnamed_in(section);
    assert!(
        unnamed.is_empty(),
        "ARCHITECTURE.md does not name client/src/{unnamed:?}"
    );
}

/// The most lines a file's product code may take (its unit tests, last in
/// the file, not counted): past it, a file holds more than one job.
const MOST_LINES: usize = 700;

#[test]
fn no_file_is_over_the_most_lines() {
    fn walk(dir: &Path, out: &mut Vec<(String, usize)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                let product = text.split("\n#[cfg(test)]\nmod tests").next().unwrap();
                out.push((path.display().to_string(), product.lines().count()));
            }
        }
    }
    let mut files = Vec::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    let over: Vec<_> = files.iter().filter(|(_, n)| *n > MOST_LINES).collect();
    assert!(files.len() > 30, "{files:?}");
    assert!(over.is_empty(), "over {MOST_LINES} product lines: {over:?}");
}
