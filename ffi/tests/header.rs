//! The committed `ffi/include/zaris.h` is what cbindgen makes of the crate
//! now. `ZARIS_BLESS=1 cargo test -p zaris-ffi --test header` rewrites it
//! (`just ffi-header`).

use std::path::Path;

#[test]
fn the_committed_header_is_current() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config =
        cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut fresh = Vec::new();
    cbindgen::Builder::new()
        .with_crate(crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen reads the crate")
        .write(&mut fresh);
    let path = crate_dir.join("include/zaris.h");
    if std::env::var("ZARIS_BLESS").is_ok_and(|v| v == "1") {
        std::fs::write(&path, &fresh).expect("write the header");
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "ffi/include/zaris.h is stale: run `just ffi-header` (ZARIS_BLESS=1 cargo test -p zaris-ffi --test header)"
    );
}
