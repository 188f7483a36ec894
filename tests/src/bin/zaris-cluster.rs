//! Runs a local cluster (3 masters, 3 replicas) until killed, for manual
//! use: `just cluster-up` / `just cluster-down`.
//!
//! `zaris-cluster [SERVER] [SEEDS_FILE]`: SERVER is `redis-server` (default)
//! or `valkey-server`; the node addresses are written, space-separated, to
//! SEEDS_FILE once the cluster is healthy. The servers die with this
//! process.

use zaris_tests::cluster::Cluster;

fn main() {
    let mut args = std::env::args().skip(1);
    let server = args.next().unwrap_or_else(|| "redis-server".to_owned());
    let seeds_file = args.next();
    let cluster = match Cluster::start(&server, 3, 1) {
        Ok(cluster) => cluster,
        Err(e) => {
            eprintln!("zaris-cluster: {e}");
            std::process::exit(1);
        }
    };
    let seeds = cluster.addrs().join(" ");
    eprintln!("zaris-cluster: {server} cluster up: {seeds}");
    if let Some(file) = seeds_file {
        if let Err(e) = std::fs::write(&file, &seeds) {
            eprintln!("zaris-cluster: writing {file}: {e}");
            std::process::exit(1);
        }
    }
    // The servers are children of this thread; parking keeps them alive
    // until the process is killed, and they die with it.
    loop {
        std::thread::park();
    }
}
