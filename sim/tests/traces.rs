//! The traces the playground carries (`web/traces/`, listed in its
//! `index.json` with why each is worth a look) stay true of this build:
//! each seed still stages what its entry says it shows, and a planted
//! bug's seed still gets caught. A change to the client or the model that
//! moves a seed off its story fails here; `just replay-traces` (with a new
//! seed in its list, from `zaris-sim`'s hunt or a campaign) writes them
//! again.

use std::path::Path;

use zaris_sim::{run, Setup};

#[test]
fn each_shipped_trace_still_shows_what_it_says() {
    let index = Path::new(env!("CARGO_MANIFEST_DIR")).join("../web/traces/index.json");
    let text = std::fs::read_to_string(&index).expect("web/traces/index.json");
    let entries: Vec<serde_json::Value> = serde_json::from_str(&text).expect("a JSON list");
    assert!(entries.len() >= 3, "{entries:?}");
    for entry in &entries {
        let seed = entry["seed"].as_u64().expect("a seed");
        let plant = entry["plant"].as_str().map(str::to_owned);
        let stages = entry["stages"].as_str().expect("what the seed stages");
        let outcome = run(&Setup {
            plant: plant.clone(),
            ..Setup::campaign(seed)
        });
        let staged = outcome.counts.get(stages).copied().unwrap_or(0);
        assert!(
            staged > 0,
            "seed {seed}: no longer stages {stages:?}: `just replay-traces` with another seed"
        );
        match plant {
            Some(plant) => assert!(
                !outcome.violations.is_empty(),
                "seed {seed}: {plant} planted, and no check caught it: `just replay-traces` with another seed"
            ),
            None => assert!(
                outcome.violations.is_empty(),
                "seed {seed}: {:#?}",
                outcome.violations
            ),
        }
    }
}
