//! Atomic slot migration pauses the writes of the migrating slot alone
//! (docs/behaviour.md §5, "Paused nodes"). Redis 7 and Valkey 8 can only
//! pause every write of a node, so this is shown on the model, whose
//! pause holds one slot as Valkey 9 and Redis 8.4 do.
//!
//! The workload, on one client with its defaults: 4 tasks `INCR` counters
//! in the slot that migrates, and, as requests come to a server, an
//! `INCR` of another counter of the same master (each in a slot of its
//! own) every 10 ms, whatever the others wait for. 1 s in, the slot
//! migrates with a final sync of 5 s. What must hold:
//! - the writes to the other slots, sent once the hold is seen (300 ms
//!   into the pause), take at most 250 ms: they go on a write lane;
//! - every increment acknowledged was applied once;
//! - nothing fails.
//!
//! - a caller that gives up on a write held behind the pause (to another
//!   slot, sent in the moment before the hold was seen) and then writes
//!   the same key again is not undone: the second write waits behind the
//!   first, and the key ends with the second's value.
//!
//! Planted, "writes never take a lane" makes those writes wait out the
//! final sync, and the bar fails; "a given-up write not noted" lets the
//! second write overtake the first on a lane, and the first, landing
//! last, undoes it: the test is shown to catch both.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;
use zaris_client::Client;
use zaris_core::slot_for_key;
use zaris_sim::churn::SimCluster;
use zaris_sim::model::{Model, HOST};
use zaris_sim::run::simulation;
use zaris_tests::scenario::arrivals;
use zaris_tests::soak::Churn;

const FINAL_SYNC: Duration = Duration::from_secs(5);
/// Writes sent this long into the pause or later find the hold seen.
const SEEN_BY: Duration = Duration::from_millis(300);
const BAR: Duration = Duration::from_millis(250);

/// What one run came to.
#[derive(Debug, Default)]
struct Run {
    /// The longest write to another slot sent during the final sync, once
    /// the hold was seen.
    other_slots: Duration,
    /// The longest write to the migrating slot.
    migrating: Duration,
    acknowledged: u64,
    applied: u64,
    writes_moved: u64,
    errors: Vec<String>,
    /// The value of the key written twice by one caller, who gave up on
    /// the first write ("first") while the pause held it, then wrote
    /// "second": what it holds at the end.
    last_word: Option<String>,
}

fn migrate_under_writes(plant: Option<&str>) -> Run {
    let seed = 57;
    zaris_client::sim_seed(seed);
    zaris_client::sim_plant(plant).expect("a known plant");
    let model = Rc::new(RefCell::new(Model::new(3, true, 13, seed)));
    let mut sim = simulation(seed, Duration::from_secs(120)).build();
    sim.host(HOST, {
        let model = model.clone();
        move || zaris_sim::serve::cluster(model.clone())
    });
    let run: Rc<RefCell<Run>> = Rc::default();
    sim.client("app", {
        let (model, run) = (model.clone(), run.clone());
        async move {
            *run.borrow_mut() = drive(model).await;
            Ok(())
        }
    });
    sim.run().expect("the simulation");
    let _ = zaris_client::sim_plant(None);
    run.take()
}

async fn drive(model: Rc<RefCell<Model>>) -> Run {
    let seeds: Vec<String> = (0..3).map(|i| model.borrow().addr(i)).collect();
    let client = Client::builder()
        .env(zaris_tests::no_env)
        .connect(&seeds)
        .await
        .expect("connected");
    let slot = slot_for_key(b"{mig}");
    let (source, others, twice) = {
        let m = model.borrow();
        let owner = |s: u16| m.truth.owner[usize::from(s)];
        let source = owner(slot).expect("an owner");
        let others: Vec<String> = (0..5000)
            .map(|i| format!("pc:{i}"))
            .filter(|k| {
                let s = slot_for_key(k.as_bytes());
                s != slot && owner(s) == Some(source)
            })
            .take(32)
            .collect();
        let twice = (0..5000)
            .map(|i| format!("gu:{i}"))
            .find(|k| {
                let s = slot_for_key(k.as_bytes());
                s != slot && owner(s) == Some(source)
            })
            .expect("a key of the source");
        (source, others, twice)
    };
    let to = (0..3usize)
        .map(|i| model.borrow().truth.owner[i * 5461 + 1].expect("an owner"))
        .find(|&m| m != source)
        .expect("another master");
    let counters: Vec<String> = (0..32).map(|i| format!("{{mig}}:ctr:{i}")).collect();

    let stop = Arc::new(AtomicBool::new(false));
    let acknowledged = Arc::new(AtomicU64::new(0));
    let errors: Arc<Mutex<Vec<String>>> = Arc::default();
    let incr = {
        let (client, acknowledged, errors) = (client.clone(), acknowledged.clone(), errors.clone());
        move |key: String| {
            let (client, acknowledged, errors) =
                (client.clone(), acknowledged.clone(), errors.clone());
            async move {
                let started = Instant::now();
                match client.cmd(&["INCR", key.as_str()]).await {
                    Ok(_) => {
                        acknowledged.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => errors.lock().unwrap().push(format!("INCR {key}: {e}")),
                }
                (started, started.elapsed())
            }
        }
    };
    let writers: Vec<_> = (0..4)
        .map(|t| {
            let (incr, counters, stop) = (incr.clone(), counters.clone(), stop.clone());
            tokio::spawn(async move {
                let mut longest = Duration::ZERO;
                let mut i = t;
                while !stop.load(Ordering::Acquire) {
                    longest = longest.max(incr(counters[i % counters.len()].clone()).await.1);
                    i += 4;
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                longest
            })
        })
        .collect();
    let arrivals = {
        let (incr, stop) = (incr.clone(), stop.clone());
        tokio::spawn(async move {
            let done = arrivals(Duration::from_millis(10), &others, &stop, incr).await;
            (others, done)
        })
    };

    tokio::time::sleep(Duration::from_secs(1)).await;
    let paused_at = Instant::now();
    let cluster = SimCluster::new(model.clone());
    let migration = cluster.atomic_migration(slot, to, Duration::from_secs(10), FINAL_SYNC);
    // One caller: a write sent as the pause begins, queued behind the
    // paused writes on the shared connection, given up on; then, the hold
    // seen, the same key written again.
    let given_up = async {
        tokio::time::sleep(Duration::from_millis(10)).await;
        let first = tokio::time::timeout(SEEN_BY / 2, client.set(&twice, "first")).await;
        assert!(first.is_err(), "the pause held the first write: {first:?}");
        tokio::time::sleep_until(paused_at + SEEN_BY).await;
        client.set(&twice, "second").await
    };
    let (moved, second) = tokio::join!(migration, given_up);
    assert!(
        moved.expect("the migration"),
        "the slot moved within the pause time-out"
    );
    if let Err(e) = second {
        errors.lock().unwrap().push(format!("SET {twice}: {e}"));
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop.store(true, Ordering::Release);

    let mut run = Run::default();
    for writer in writers {
        run.migrating = run.migrating.max(writer.await.expect("a writer"));
    }
    let (others, done) = arrivals.await.expect("the arrivals");
    let during = paused_at + SEEN_BY..paused_at + FINAL_SYNC;
    run.other_slots = done
        .iter()
        .filter(|(started, _)| during.contains(started))
        .map(|&(_, took)| took)
        .max()
        .unwrap_or_default();
    run.acknowledged = acknowledged.load(Ordering::Relaxed);
    for key in counters.iter().chain(others.iter()) {
        if let Some(v) = client.get(key).await.expect("read back") {
            run.applied += std::str::from_utf8(&v).unwrap().parse::<u64>().unwrap();
        }
    }
    run.writes_moved = client.stats().writes_moved;
    run.last_word = client
        .get(&twice)
        .await
        .expect("read back")
        .map(|v| String::from_utf8_lossy(&v).into_owned());
    run.errors = std::mem::take(&mut errors.lock().unwrap());
    run
}

#[test]
fn under_atomic_migration_writes_to_other_slots_do_not_wait_for_the_pause() {
    let run = migrate_under_writes(None);
    eprintln!("{run:?}");
    assert!(run.errors.is_empty(), "{:?}", run.errors);
    assert_eq!(run.applied, run.acknowledged, "each increment applied once");
    assert!(
        run.migrating >= FINAL_SYNC - SEEN_BY,
        "the migrating slot's writes waited for the final sync: {:?}",
        run.migrating
    );
    assert!(
        run.other_slots <= BAR,
        "a write to another slot waited {:?}",
        run.other_slots
    );
    assert!(run.writes_moved > 0, "{run:?}");
    assert_eq!(
        run.last_word.as_deref(),
        Some("second"),
        "the write given up on landed after the next"
    );
}

#[test]
fn a_next_write_that_overtakes_one_given_up_on_is_caught() {
    let run = migrate_under_writes(Some("given-up-overtaken"));
    eprintln!("planted: {run:?}");
    assert!(run.errors.is_empty(), "{:?}", run.errors);
    assert_eq!(
        run.last_word.as_deref(),
        Some("first"),
        "planted, the given-up write still landed first: the test would not catch it"
    );
}

#[test]
fn writes_that_never_take_a_lane_are_caught() {
    let run = migrate_under_writes(Some("writes-stay-held"));
    eprintln!("planted: {run:?}");
    assert!(run.errors.is_empty(), "{:?}", run.errors);
    assert_eq!(run.applied, run.acknowledged);
    assert!(
        run.other_slots > BAR,
        "planted, a write to another slot still took {:?}: the bar would not catch it",
        run.other_slots
    );
    assert_eq!(run.writes_moved, 0);
}
