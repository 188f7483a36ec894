//! Keyspace notifications from the whole cluster, through churn
//! (docs/behaviour.md §8, "Keyspace notifications"): each node publishes
//! those of its own keys only, so `Client::keyspace_events` listens on
//! every master and follows the map. A writer sets a new key each time
//! (`ev:N`, spread over every slot) through a manual failover, a `kill
//! -9` of a master, a subscription's connection dropped (`CLIENT KILL`),
//! a slot migrated and a scale-out, on Redis 7 and
//! Valkey 8 with `notify-keyspace-events KEA`, by the subscribing client
//! and by another. Every acknowledged write's notification must arrive,
//! or lie in a gap that names its slot and a window around the write; and
//! since the subscribing client's writes wait for the subscriptions to
//! hear their node, its own miss only those on their way at the kill or
//! the drop. Counted in the output.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zaris_client::KeyspaceEvent;
use zaris_core::slot_for_key;
use zaris_tests::cluster::Cluster;
use zaris_tests::{each_server, patient, runtime};

/// One acknowledged write: its key's slot, and when it was sent and
/// answered.
struct Written {
    slot: u16,
    sent: Instant,
    acked: Instant,
}

/// A gap the stream told of.
struct Gap {
    node: String,
    slots: Vec<(u16, u16)>,
    from: Instant,
    to: Instant,
}

impl Gap {
    /// Whether it covers a write to `slot` sent at `sent` and answered at
    /// `acked` (its notification was published in between).
    fn covers(&self, slot: u16, sent: Instant, acked: Instant) -> bool {
        self.slots.iter().any(|&(a, b)| (a..=b).contains(&slot))
            && self.from <= acked
            && self.to >= sent
    }
}

/// A writer's acknowledged writes, by number.
type Writes = Arc<Mutex<BTreeMap<u64, Written>>>;

/// What the subscription received.
#[derive(Default)]
struct Heard {
    /// The write numbers whose notification came.
    events: BTreeSet<u64>,
    /// Each gap: its node, slots, and window.
    gaps: Vec<Gap>,
}

#[test]
fn every_notification_arrives_or_lies_in_a_gap() {
    each_server(|server| {
        let mut cluster = Cluster::start_with(server, 3, 1, &["--notify-keyspace-events", "KEA"])
            .expect("a cluster that publishes keyspace notifications");
        let rt = runtime();
        let client = cluster.client(&rt, patient);
        let mut events = rt
            .block_on(client.keyspace_events("__keyspace@0__:ev:*"))
            .expect("every master subscribed");
        let heard = Arc::new(Mutex::new(Heard::default()));
        let listener = rt.spawn({
            let heard = heard.clone();
            async move {
                while let Some(event) = events.next().await {
                    let mut heard = heard.lock().unwrap();
                    match event {
                        // A migration's `restore` and `del` are not the writer's.
                        KeyspaceEvent::Event {
                            channel, payload, ..
                        } if &payload[..] == b"set" => {
                            let key = channel.strip_prefix(b"__keyspace@0__:ev:").unwrap();
                            let n = std::str::from_utf8(key).unwrap().parse().unwrap();
                            heard.events.insert(n);
                        }
                        KeyspaceEvent::Gap {
                            node,
                            slots,
                            from,
                            to,
                        } => {
                            heard.gaps.push(Gap {
                                node,
                                slots,
                                from,
                                to,
                            });
                        }
                        _ => {}
                    }
                }
            }
        });
        // Every other write lands in a slot the churn moves (`ev:N` keys
        // found for them), so that each move meets writes.
        let churned: Vec<u16> = (0..6)
            .map(|i| slot_for_key(format!("ev:{i}").as_bytes()))
            .collect();
        let mut in_churned =
            (6u64..).filter(|n| churned.contains(&slot_for_key(format!("ev:{n}").as_bytes())));
        let pool: Vec<u64> = (&mut in_churned).take(3000).collect();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        // Two writers: the subscribing client itself (its writes wait for
        // the subscriptions to hear their node), and another client (no
        // such wait: what it writes where no one listens yet is a gap).
        let other = cluster.client(&rt, patient);
        let (mine, theirs): (Vec<u64>, Vec<u64>) = pool.iter().partition(|n| *n % 2 == 0);
        let (written, writer) = write(&rt, &client, &stop, mine, 10_000_000);
        let (written_by_other, other_writer) = write(&rt, &other, &stop, theirs, 20_000_000);
        let pause = || std::thread::sleep(Duration::from_millis(500));
        pause();
        let quiet_gaps = heard.lock().unwrap().gaps.len();
        // A manual failover.
        let slot = slot_for_key(b"ev:0");
        let first = cluster.owner_index(slot).unwrap();
        cluster
            .failover(cluster.replica_of(first).unwrap())
            .expect("the failover");
        pause();
        // A kill -9 of a master, its replica taking over.
        let victim_slot = slot_for_key(b"ev:1");
        let victim = cluster.owner_index(victim_slot).unwrap();
        let victim_addr = cluster.addr(victim);
        let kill_at = Instant::now();
        cluster.kill(victim);
        cluster
            .wait_failover_of(victim, victim_slot)
            .expect("a replica takes over");
        pause();
        // A subscription's connection dropped (the map unchanged): what
        // the master published until it was subscribed again is a gap.
        let dropped = cluster.owner_index(slot_for_key(b"ev:2")).unwrap();
        let dropped_addr = cluster.addr(dropped);
        let drop_at = Instant::now();
        let killed = cluster
            .conn(dropped)
            .unwrap()
            .command(&[b"CLIENT", b"KILL", b"TYPE", b"pubsub"])
            .unwrap();
        assert_eq!(
            killed,
            zaris_tests::Frame::Integer(1),
            "{server}: our one subscription there"
        );
        pause();
        // A slot migrated between two masters.
        let moving = slot_for_key(b"ev:2");
        let from = cluster.owner_index(moving).unwrap();
        let to = (0..cluster.running().len().max(6))
            .find(|&i| {
                i != from && cluster.running().contains(&i) && cluster.is_master(i).unwrap_or(false)
            })
            .unwrap();
        cluster.move_slot(moving, to).expect("migrated");
        pause();
        // A scale-out: a new master takes slots.
        let added = cluster.add_master().expect("a new master");
        for key in ["ev:3", "ev:4", "ev:5"] {
            cluster
                .move_slot(slot_for_key(key.as_bytes()), added)
                .expect("moved to the new master");
        }
        pause();
        stop.store(true, std::sync::atomic::Ordering::Release);
        let unknown = rt.block_on(writer).unwrap() + rt.block_on(other_writer).unwrap();
        // The last notifications on their way.
        std::thread::sleep(Duration::from_millis(500));
        listener.abort();
        let heard = heard.lock().unwrap();
        let written = written.lock().unwrap();
        let written_by_other = written_by_other.lock().unwrap();
        let (mut received, mut in_gap, mut lost) = (0, 0, Vec::new());
        for (n, w) in written.iter().chain(written_by_other.iter()) {
            if heard.events.contains(n) {
                received += 1;
            } else if heard.gaps.iter().any(|g| g.covers(w.slot, w.sent, w.acked)) {
                in_gap += 1;
            } else {
                lost.push(*n);
            }
        }
        eprintln!(
            "{server}: {} writes acknowledged ({} by this client, {unknown} failed), through a \
             manual failover, a kill -9, a dropped connection, a migration and a scale-out: \
             {received} notifications received, {in_gap} inside a gap, {} lost outside any",
            written.len() + written_by_other.len(),
            written.len(),
            lost.len()
        );
        for gap in &heard.gaps {
            let count: u32 = gap.slots.iter().map(|&(a, b)| u32::from(b - a) + 1).sum();
            eprintln!(
                "  gap: {}, {count} slots in {} ranges, {:?}",
                gap.node,
                gap.slots.len(),
                gap.to.duration_since(gap.from)
            );
        }
        assert!(
            written.len() > 1000,
            "{server}: only {} writes",
            written.len()
        );
        assert!(
            lost.is_empty(),
            "{server}: notifications lost outside any gap: {:?}",
            &lost[..lost.len().min(20)]
        );
        assert_eq!(quiet_gaps, 0, "{server}: no gap before the churn");
        assert!(
            heard.gaps.iter().any(|g| g.node == victim_addr),
            "{server}: the killed master's gap is told"
        );
        // This client's write waits for the subscriptions to hear its node
        // (a new master, a node whose subscription dropped): the only
        // notifications of its writes missing are those answered a moment
        // before the kill or the drop, still on their way then.
        let in_flight =
            |w: &Written, at: Instant| w.sent <= at && w.acked + Duration::from_millis(100) >= at;
        let unheard: Vec<u64> = written
            .iter()
            .filter(|(n, w)| {
                !heard.events.contains(n) && !in_flight(w, kill_at) && !in_flight(w, drop_at)
            })
            .map(|(n, _)| *n)
            .collect();
        assert!(
            unheard.is_empty(),
            "{server}: writes whose notification did not come, not on their way at the kill or the drop: {:?}",
            &unheard[..unheard.len().min(20)]
        );
        assert!(
            heard.gaps.iter().any(|g| g.node == dropped_addr),
            "{server}: the dropped connection's gap is told"
        );
    });
}

/// A writer of new keys `ev:N` on `client` until `stop`: every other one
/// from `pool` (slots the churn moves), the rest numbered from `from`.
/// What it wrote, and its task (which returns how many writes failed).
fn write(
    rt: &tokio::runtime::Runtime,
    client: &zaris_client::Client,
    stop: &Arc<std::sync::atomic::AtomicBool>,
    pool: Vec<u64>,
    from: u64,
) -> (Writes, tokio::task::JoinHandle<u64>) {
    let written = Writes::default();
    let task = rt.spawn({
        let (client, written, stop) = (client.clone(), written.clone(), stop.clone());
        async move {
            let mut unknown = 0u64;
            let mut next = from;
            let mut pool = pool.into_iter();
            let mut turn = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Acquire) {
                turn += 1;
                let pooled = if turn.is_multiple_of(2) {
                    pool.next()
                } else {
                    None
                };
                let n = pooled.unwrap_or_else(|| {
                    next += 1;
                    next
                });
                let key = format!("ev:{n}");
                let sent = Instant::now();
                match client.set(&key, "x").await {
                    Ok(_) => {
                        let slot = slot_for_key(key.as_bytes());
                        let acked = Instant::now();
                        written
                            .lock()
                            .unwrap()
                            .insert(n, Written { slot, sent, acked });
                    }
                    Err(_) => unknown += 1,
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            unknown
        }
    });
    (written, task)
}
