//! What the simulator found, kept: each finding's seeds run again and must
//! stage the situation and pass. (Each was also staged on the real servers:
//! `tests/tests/client_blocked_failover.rs`.)

use zaris_sim::{run, Setup};

/// A `BLPOP` blocked on a master that a manual failover turned replica:
/// the server lets it go with `-UNBLOCKED ... (master -> replica?)`, which
/// the client handed to the caller as a server error. It now reads it as
/// `ReplicaWriteRejected` (nothing done; refresh, retry at the owner).
/// Found by seeds 14, 67 and 145 of the schedules of 14 event kinds; with
/// the fifteenth (every node replaced, a failover a shard) seeds 1, 5 and
/// 9 stage it.
#[test]
fn a_blocked_pop_let_go_by_a_demotion_blocks_again_on_the_new_master() {
    for seed in [1, 5, 9] {
        let outcome = run(&Setup::campaign(seed));
        let let_go = outcome
            .counts
            .get("blocked commands let go by a demotion")
            .copied()
            .unwrap_or(0);
        assert!(let_go > 0, "seed {seed} no longer stages it");
        assert!(
            outcome.violations.is_empty(),
            "seed {seed}: {:#?}",
            outcome.violations
        );
    }
}

/// The model's own bug, found by the long campaign (seeds 30880, 34168 and
/// 37956 of 200,000): every change to a node (a promotion, a partition, a
/// freeze elsewhere in its shard) woke its listener, which dropped its port
/// and bound it again. turmoil refuses the connections still waiting in a
/// dropped listener's accept queue, so a client dialling a node just
/// promoted in a replacement was refused by a node that was up, and spent
/// its last attempt on it. No server closes its port on a role change; the
/// listener now keeps it until the node stops. Each seed replaces nodes
/// and must pass.
#[test]
fn a_node_keeps_its_port_open_through_a_change() {
    for seed in [30880, 34168, 37956] {
        let outcome = run(&Setup::campaign(seed));
        let joined = outcome
            .counts
            .get("nodes joined at a new address")
            .copied()
            .unwrap_or(0);
        assert!(joined > 0, "seed {seed} no longer replaces nodes");
        assert!(
            outcome.violations.is_empty(),
            "seed {seed}: {:#?}",
            outcome.violations
        );
    }
}
