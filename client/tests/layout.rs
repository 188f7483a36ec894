//! The client's layout, checked: the import graph of `client/src` has no
//! cycle; the files below the shared state (the codec, the connections,
//! the topology parsers, the failure readings, the nodes and the map)
//! never reach it; a type's `impl` blocks live in the file that defines it
//! but for the rooms listed in [`SPREAD`]; and ARCHITECTURE.md names
//! every file. The reading of the source (imports through `crate::`,
//! `super::`, `self::`, child modules and re-exports; comments left out)
//! is `tools/layout.rs`, shared with the core's layout test.

use std::collections::{BTreeMap, BTreeSet};
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
    "hearing",
    "learned",
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
        "a connection's side of a pause (ticks, checks, holds), built on its queue and replies",
    ),
    (
        "Round",
        &["request/run", "request/send"],
        "a call's rounds by job: running them, above sending each share (round.rs holds the state)",
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
            "function",
            "keyspace",
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
            "command/call",
            "command/learn",
            "command/plan",
            "command/run",
            "lease",
            "refresh",
            "request/retry",
            "request/run",
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

/// The import graph with the calls between the files of each spread type
/// ([`SPREAD`]) added: a file calling a method of `Inner` that another
/// file defines depends on that file as if it imported it.
fn imports_and_calls(layout: &Layout) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph = layout.imports();
    for (ty, _, _) in SPREAD {
        for (caller, definers) in layout.method_calls(ty) {
            graph.entry(caller).or_default().extend(definers);
        }
    }
    graph
}

/// The first module on a cycle of `graph`, with what it reaches.
fn a_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<(String, BTreeSet<String>)> {
    graph
        .keys()
        .find(|module| Layout::reach(graph, module).contains(*module))
        .map(|module| (module.clone(), graph[module].clone()))
}

#[test]
fn the_spread_files_call_each_other_without_a_cycle() {
    let client = client();
    let graph = imports_and_calls(&client);
    assert_eq!(a_cycle(&graph), None, "a cycle of imports and calls");
    // The calls are seen: running the rounds calls the sending and the
    // retry state (methods of Inner and Round, in other files).
    let calls = client.method_calls("Inner");
    assert!(
        calls["request/run"].contains("request/send")
            && calls["request/run"].contains("request/retry"),
        "{:?}",
        calls["request/run"]
    );
    assert!(calls.len() > 5, "{calls:?}");
    assert!(client.method_calls("Round")["request/run"].contains("request/send"));
}

#[test]
fn a_call_back_into_a_spread_file_is_a_cycle() {
    // Planted: two files filling in `Inner`, each calling the other (as
    // the retry state once called the rounds' `deadline_of`, which called
    // the retry state), with no import between them.
    let files = [
        (
            "inner",
            "pub(crate) struct Inner { x: u8 }\nimpl Inner { fn get(&self) -> u8 { self.x } }",
        ),
        (
            "round",
            "use crate::inner::Inner;\nimpl Inner {\n    fn run(&self) { self\n        .decide(); }\n    fn deadline_of(&self) {}\n}",
        ),
        (
            "retry",
            "use crate::inner::Inner;\nimpl Inner {\n    fn decide(&self) { inner.deadline_of(); }\n}",
        ),
    ];
    let planted = Layout {
        files: files
            .iter()
            .map(|(id, code)| ((*id).to_owned(), (*code).to_owned()))
            .collect(),
    };
    assert_eq!(
        a_cycle(&planted.imports()),
        None,
        "the imports alone show none"
    );
    let found = a_cycle(&imports_and_calls(&planted));
    assert!(
        found
            .as_ref()
            .is_some_and(|(m, _)| m == "retry" || m == "round"),
        "{found:?}"
    );
}

#[test]
fn the_shared_state_keeps_its_fields() {
    // `Inner`'s fields are private: each job reaches the state through
    // its accessors, and the map changes only through `Inner::publish`
    // (no other file can reach the `ArcSwap` to swap it).
    let client = client();
    let code = &client.files["inner"];
    let start = code
        .find("pub(crate) struct Inner {")
        .expect("Inner in inner.rs");
    let body = &code[start..start + code[start..].find('}').expect("its end")];
    let fields: Vec<&str> = body
        .lines()
        .skip(1)
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    assert!(fields.len() > 10, "{fields:?}");
    let open: Vec<&&str> = fields
        .iter()
        .filter(|f| f.starts_with("pub ") || f.starts_with("pub("))
        .collect();
    assert!(
        open.is_empty(),
        "fields of Inner open to other files: {open:?}"
    );
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
