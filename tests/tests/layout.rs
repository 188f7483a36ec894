//! The repository's shape, checked: the invariants ARCHITECTURE.md states
//! (crates depend downward, placement lives in the core alone, `unsafe`
//! stays where it is allowed, the core is `no_std` without `alloc`, the
//! code map names every file in its crate's section), and that the guide
//! names every check here, so it cannot drift from them.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The code map's sections and what names a file (the crates' module
/// graphs there are the core's and the client's layout tests' alone).
#[allow(dead_code)]
#[path = "../../tools/layout.rs"]
mod layout;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

/// Every file below `dir` with one of `extensions`, leaving out build
/// output, installed packages and generated copies of other projects' code.
fn files(dir: &Path, extensions: &[&str]) -> Vec<PathBuf> {
    // Built or fetched, never written by hand (all in .gitignore).
    const SKIPPED: [&str; 7] = [
        "target",
        "node_modules",
        ".git",
        "pkg",
        "vendor",
        "corpus",
        "dashboard",
    ];
    let mut out = Vec::new();
    let Ok(entries) = fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !SKIPPED.contains(&name.as_str()) {
                out.extend(files(&path, extensions));
            }
        } else if extensions.iter().any(|e| name.ends_with(&format!(".{e}"))) {
            out.push(path);
        }
    }
    out
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap()
        .to_string_lossy()
        .replace('\\', "/")
}

/// The Zaris crates a manifest depends on (not dev- or build-dependencies).
fn zaris_dependencies(manifest: &str) -> BTreeSet<String> {
    let mut table = String::new();
    let mut found = BTreeSet::new();
    for line in manifest.lines().map(str::trim) {
        if let Some(header) = line.strip_prefix('[') {
            table = header.trim_end_matches(']').to_owned();
            continue;
        }
        let runtime = table == "dependencies" || table.ends_with(".dependencies");
        if runtime && !table.contains("dev-dependencies") {
            if let Some(name) = line
                .split(['=', ' '])
                .next()
                .filter(|n| n.starts_with("zaris"))
            {
                found.insert(name.to_owned());
            }
        }
    }
    found
}

#[test]
fn crates_depend_downward() {
    // Each crate and the Zaris crates it may depend on.
    let allowed: BTreeMap<&str, &[&str]> = [
        ("core", &[][..]),
        ("client", &["zaris-core"][..]),
        ("cli", &["zaris-core", "zaris-client"][..]),
        ("ffi", &["zaris-core"][..]),
        ("wasm", &["zaris-core"][..]),
        ("python", &["zaris-core"][..]),
        ("baremetal", &["zaris-core"][..]),
        ("bench", &["zaris-core"][..]),
        ("tests", &["zaris-core", "zaris-client"][..]),
        // The simulation is a test crate: the soak's workload, nemesis and
        // checker run in it (it is its own workspace, never published).
        ("sim", &["zaris-core", "zaris-client", "zaris-tests"][..]),
        ("core/fuzz", &["zaris-core"][..]),
        ("client/fuzz", &["zaris-client"][..]),
        ("wasm/fuzz", &["zaris-wasm"][..]),
    ]
    .into_iter()
    .collect();
    let manifests = files(&root(), &["toml"])
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n == "Cargo.toml") && p.parent() != Some(&root()))
        .collect::<Vec<_>>();
    assert!(manifests.len() >= allowed.len(), "{manifests:?}");
    for manifest in manifests {
        let dir = relative(manifest.parent().unwrap());
        let Some(may) = allowed.get(dir.as_str()) else {
            panic!("{dir}: a crate this test does not know; add it (and to ARCHITECTURE.md)");
        };
        let text = fs::read_to_string(&manifest).unwrap();
        let uses = zaris_dependencies(&text);
        for dep in &uses {
            assert!(
                may.contains(&dep.as_str()),
                "{dir} depends on {dep}: crates depend downward (ARCHITECTURE.md)"
            );
        }
        assert!(
            dir == "sim" || !uses.contains("zaris-tests"),
            "{dir}: the test harness is a dev-dependency only"
        );
    }
    // The check reads what it should: the client's one Zaris dependency.
    let client = fs::read_to_string(root().join("client/Cargo.toml")).unwrap();
    assert_eq!(
        zaris_dependencies(&client),
        BTreeSet::from(["zaris-core".to_owned()])
    );
}

#[test]
fn placement_lives_in_the_core() {
    // The CRC-16/XMODEM polynomial, as code writes it (normal and
    // reflected): a second placement implementation would carry it.
    let needles = ["0x1021", "0x8408"];
    let mut found = Vec::new();
    let sources = files(
        &root(),
        &[
            "rs", "js", "mjs", "cjs", "ts", "py", "c", "h", "cpp", "html",
        ],
    );
    assert!(sources.len() > 50, "{}", sources.len());
    for file in sources {
        let path = relative(&file);
        if path.starts_with("core/") || path == "tests/tests/layout.rs" {
            continue;
        }
        let text = fs::read_to_string(&file)
            .unwrap_or_default()
            .to_ascii_lowercase();
        if needles.iter().any(|n| text.contains(n)) {
            found.push(path);
        }
    }
    assert!(
        found.is_empty(),
        "a CRC-16 outside the core: {found:?}; call zaris-core instead"
    );
}

#[test]
fn unsafe_stays_where_it_is_allowed() {
    const ALLOWED_DIRS: [&str; 2] = ["core/src/engine/", "ffi/src/"];
    const ALLOWED_FILES: [&str; 4] = [
        "tests/src/lib.rs",
        "core/tests/no_alloc.rs",
        "bench/benches/allocs.rs",
        "bench/src/counts.rs",
    ];
    // Spelled in two halves, so this file does not match itself.
    let word = ["uns", "afe"].concat();
    let forms = [" {", " fn", " impl", " extern"].map(|f| format!("{word}{f}"));
    let mut seen_engine = false;
    for file in files(&root(), &["rs"]) {
        let path = relative(&file);
        let text = fs::read_to_string(&file).unwrap();
        let code = text.lines().filter(|l| !l.trim_start().starts_with("//"));
        let uses = code
            .into_iter()
            .any(|l| forms.iter().any(|f| l.contains(f.as_str())));
        if !uses {
            continue;
        }
        seen_engine |= path.starts_with("core/src/engine/");
        assert!(
            ALLOWED_DIRS.iter().any(|d| path.starts_with(d)) || ALLOWED_FILES.contains(&path.as_str()),
            "{path} uses {word}: it belongs in the core's engines, the C ABI or a listed test helper (ARCHITECTURE.md)"
        );
    }
    assert!(seen_engine, "the check sees the engines' intrinsics");
}

#[test]
fn the_core_is_no_std_without_alloc() {
    let src = root().join("core/src");
    let lib = fs::read_to_string(src.join("lib.rs")).unwrap();
    assert!(lib.contains("#![no_std]"));
    for file in files(&src, &["rs"]) {
        let path = relative(&file);
        let text = fs::read_to_string(&file).unwrap();
        let code: Vec<&str> = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect();
        for banned in [
            "extern crate alloc",
            "alloc::",
            "Instant::now",
            "SystemTime",
        ] {
            assert!(
                !code.iter().any(|l| l.contains(banned)),
                "{path} names {banned}: the core never allocates and never reads a clock"
            );
        }
    }
}

#[test]
fn the_code_map_names_every_file_in_its_section() {
    let map = fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let mut unnamed = Vec::new();
    for (dir, src, extensions) in [
        ("sim/", "sim/src", &["rs"][..]),
        ("tests/", "tests/src", &["rs"]),
        ("cli/", "cli/src", &["rs"]),
        ("bench/", "bench/src", &["rs"]),
        ("wasm/", "wasm/src", &["rs"]),
        ("ffi/", "ffi/src", &["rs"]),
        ("python/", "python/src", &["rs"]),
        ("baremetal/", "baremetal/src", &["rs"]),
        ("web/", "web", &["js", "css", "html"]),
    ] {
        let Some(section) = layout::section(&map, dir) else {
            unnamed.push(format!("no section headed `{dir}`"));
            continue;
        };
        let src = root().join(src);
        for file in files(&src, extensions) {
            let file = file
                .strip_prefix(&src)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            if !layout::names_file(section, &file) {
                unnamed.push(format!("{dir}: {file}"));
            }
        }
    }
    assert!(
        unnamed.is_empty(),
        "ARCHITECTURE.md's code map does not name these in their crate's section: {unnamed:#?}"
    );
}

#[test]
fn the_architecture_guide_names_every_check() {
    let guide = fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let guide = guide.split_whitespace().collect::<Vec<_>>().join(" ");
    let this = fs::read_to_string(root().join("tests/tests/layout.rs")).unwrap();
    let tests: Vec<&str> = this
        .split("#[test]\nfn ")
        .skip(1)
        .filter_map(|rest| rest.split('(').next())
        .collect();
    assert_eq!(tests.len(), 6, "{tests:?}");
    for test in tests
        .iter()
        .filter(|t| **t != "the_architecture_guide_names_every_check")
    {
        assert!(
            guide.contains(&format!("`{test}`")),
            "ARCHITECTURE.md does not name the check {test}"
        );
    }
    // And every check the guide names exists.
    let marks = guide.split("(checked: ").skip(1).collect::<Vec<_>>();
    assert_eq!(marks.len(), 6, "the guide marks each invariant it checks");
    for named in marks {
        let named = named.split(')').next().unwrap();
        for name in named.split('`').skip(1).step_by(2) {
            let file = name.ends_with(".rs") && root().join(name).exists();
            assert!(
                tests.contains(&name) || file,
                "ARCHITECTURE.md names {name:?}, which is no check"
            );
        }
    }
}
