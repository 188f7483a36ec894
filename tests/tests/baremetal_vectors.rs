//! The bare-metal program's vectors (`baremetal/src/vectors.rs`) are what a
//! real `redis-server` answers today: regenerated and compared.

#[test]
fn the_committed_vectors_are_the_servers() {
    let fresh = zaris_tests::keys::baremetal_vectors(&zaris_tests::server_binary())
        .expect("CLUSTER KEYSLOT from redis-server");
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../baremetal/src/vectors.rs");
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        committed == fresh,
        "baremetal/src/vectors.rs differs from a fresh run: `just baremetal-vectors`"
    );
}
