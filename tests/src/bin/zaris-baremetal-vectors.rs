//! Writes `baremetal/src/vectors.rs`: keys and the slots a real
//! `redis-server` gives them, for the bare-metal program to check the core
//! against on a board with no OS.

use std::path::PathBuf;

use anyhow::{Context, Result};

fn main() -> Result<()> {
    let source = zaris_tests::keys::baremetal_vectors(&zaris_tests::server_binary())
        .context("CLUSTER KEYSLOT from redis-server")?;
    let path: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "..",
        "baremetal",
        "src",
        "vectors.rs",
    ]
    .iter()
    .collect();
    std::fs::write(&path, source).with_context(|| format!("writing {}", path.display()))?;
    eprintln!("wrote {}", path.display());
    Ok(())
}
