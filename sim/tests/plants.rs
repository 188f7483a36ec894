//! The checker catches known bugs: each planted in the real client alone
//! (`zaris_client::sim_plant`), the simulation must report a violation
//! within 500 seeds.

use zaris_sim::hunt;

fn caught(plant: &str) {
    match hunt(plant, 500, 1, 2) {
        Some((seed, what)) => eprintln!("{plant}: caught by seed {seed}: {what}"),
        None => panic!("{plant}: 500 seeds and no violation"),
    }
}

#[test]
fn two_callers_replies_swapped_are_caught() {
    caught("swapped-replies");
}

#[test]
fn a_conflict_retried_is_caught() {
    caught("conflict-retried");
}

#[test]
fn asking_forgotten_is_caught() {
    caught("asking-forgotten");
}

#[test]
fn an_increment_repeated_is_caught() {
    caught("increment-repeated");
}

#[test]
fn a_map_from_a_node_covering_fewer_slots_is_caught() {
    caught("map-from-fewer-slots");
}

#[test]
fn a_paused_write_sent_again_is_caught() {
    caught("resent-after-time-out");
}
