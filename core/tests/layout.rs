//! The core's layout, checked: its imports point down (no cycle), the CRC
//! engines import nothing above them (a file never imports the file that
//! dispatches to it), a type's `impl` blocks live in the file that defines
//! it, and ARCHITECTURE.md names every file. The reading of the source is
//! `tools/layout.rs`, shared with the client's layout test.

use std::path::Path;

#[path = "../../tools/layout.rs"]
mod layout;

use layout::Layout;

fn core() -> Layout {
    Layout::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

#[test]
fn the_core_imports_point_down_and_have_no_cycle() {
    let graph = core().imports();
    for (module, targets) in &graph {
        if module.starts_with("engine") {
            for target in targets {
                assert!(
                    target.starts_with("engine"),
                    "{module} imports {target}: the engines must not import the files above them"
                );
            }
            if module != "engine" {
                assert!(
                    !targets.contains("engine"),
                    "{module} imports engine/mod.rs, the file that dispatches to it"
                );
            }
        }
        // The portable tables run on any CPU: no instruction set of one.
        if module == "engine/portable" {
            assert!(
                !targets
                    .iter()
                    .any(|t| t.starts_with("engine/x86_64") || t == "engine/aarch64"),
                "{module} imports {targets:?}"
            );
        }
        assert!(
            !Layout::reach(&graph, module).contains(module),
            "import cycle through {module}: {targets:?}"
        );
    }
    // The check sees the imports: a cycle-free result is not vacuous.
    assert!(graph["engine/x86_64/avx512"].contains("engine/x86_64/pclmul"));
    assert!(graph["engine/x86_64/tables"].contains("engine/portable"));
    assert!(graph["placement"].contains("engine"));
    assert!(
        graph["command"].contains("command/index"),
        "{:?}",
        graph["command"]
    );
    assert!(
        graph["simulate/churn"].contains("redirect"),
        "{:?}",
        graph["simulate/churn"]
    );
    assert!(graph.len() > 25, "{:?}", graph.keys());
}

#[test]
fn a_type_is_implemented_where_it_is_defined() {
    let foreign = core().foreign_impls();
    assert!(
        foreign.is_empty(),
        "impl blocks outside the file of their type (type, defined in, implemented in): {foreign:?}"
    );
}

#[test]
fn the_code_map_names_every_file() {
    let map =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../ARCHITECTURE.md"))
            .expect("ARCHITECTURE.md");
    let section = layout::section(&map, "core/").expect("a section for core/");
    let unnamed = core().unnamed_in(section);
    assert!(
        unnamed.is_empty(),
        "ARCHITECTURE.md does not name core/src/{unnamed:?}"
    );
}
