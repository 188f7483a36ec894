//! Pub/sub through churn, sharded (`SSUBSCRIBE`/`SPUBLISH`) and classic
//! (`SUBSCRIBE`/`PUBLISH`, with a `PSUBSCRIBE` alongside), on real clusters
//! (3 masters with a replica each): publishers and a subscriber run while
//! the cluster goes through a manual failover, a slot migration and a
//! `kill -9` of a master. After each, the subscription is back on the new
//! owners by itself with a gap notice per interrupted channel; every
//! message whose publish reached the subscriber's node outside a gap is
//! received, in order per channel; no `SSUBSCRIBE` ever spans two slots.
//! The pattern subscription gets every channel's messages in order, and
//! the last one of each.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zaris_client::Received;
use zaris_core::slot_for_key;
use zaris_tests::cluster::Cluster;
use zaris_tests::runtime;
use zaris_tests::scenario::eventually;
use zaris_tests::{each_server, Frame};

/// What the publisher sent: per channel, each sequence number with when
/// it was published and whether a subscriber was there to get it.
type Published = HashMap<String, Vec<(u64, Instant, bool)>>;

/// What the subscriber got: per channel, each sequence number; and each
/// gap notice with when it came.
#[derive(Default)]
struct Got {
    messages: HashMap<String, Vec<u64>>,
    gaps: Vec<(String, Duration, Instant)>,
}

fn errorstats(cluster: &Cluster) -> String {
    let mut all = String::new();
    for i in cluster.running() {
        if let Ok(Frame::BulkString(text)) =
            cluster.conn(i).unwrap().command(&[b"INFO", b"errorstats"])
        {
            all.push_str(&String::from_utf8_lossy(&text));
        }
    }
    all
}

#[test]
fn subscriptions_survive_failover_migration_and_kill() {
    each_server(|server| {
        churn(server, false);
        churn(server, true);
    });
}

/// Pattern messages per channel, in arrival order.
type ByPattern = Arc<Mutex<HashMap<String, Vec<u64>>>>;

fn churn(binary: &str, classic: bool) {
    let label = format!("{binary} {}", if classic { "classic" } else { "sharded" });
    let server = label.as_str();
    let mut cluster = Cluster::start(binary, 3, 1).expect("cluster");
    let rt = runtime();
    let settings = |b: zaris_client::Builder| {
        b.max_attempts(20)
            .attempt_timeout(Duration::from_secs(1))
            .request_timeout(Some(Duration::from_secs(10)))
    };
    let subscriber = cluster.client(&rt, settings);
    let publisher = cluster.client(&rt, settings);
    // Channels over many slots, some sharing one (a hash tag).
    let mut channels: Vec<String> = (0..24).map(|i| format!("news:{i}")).collect();
    channels.extend((0..6).map(|i| format!("{{room}}:{i}")));
    let mut subscription = rt
        .block_on(async {
            if classic {
                subscriber.subscribe(&channels).await
            } else {
                subscriber.ssubscribe(&channels).await
            }
        })
        .expect("subscribe");
    // Classic: a pattern subscription too, over every news channel.
    let by_pattern: ByPattern = Arc::default();
    let patterns = classic.then(|| {
        let mut patterns = rt
            .block_on(subscriber.psubscribe(&["news:*"]))
            .expect("psubscribe");
        let by_pattern = by_pattern.clone();
        rt.spawn(async move {
            while let Some(event) = patterns.next().await {
                if let Received::PatternMessage {
                    pattern,
                    channel,
                    payload,
                } = event
                {
                    assert_eq!(&pattern[..], b"news:*");
                    let channel = String::from_utf8_lossy(&channel).into_owned();
                    let seq: u64 = std::str::from_utf8(&payload).unwrap().parse().unwrap();
                    by_pattern
                        .lock()
                        .unwrap()
                        .entry(channel)
                        .or_default()
                        .push(seq);
                }
            }
        })
    });

    let got = Arc::new(Mutex::new(Got::default()));
    let consumer = rt.spawn({
        let got = got.clone();
        async move {
            while let Some(event) = subscription.next().await {
                let mut got = got.lock().unwrap();
                match event {
                    Received::Message { channel, payload } => {
                        let channel = String::from_utf8_lossy(&channel).into_owned();
                        let seq: u64 = std::str::from_utf8(&payload).unwrap().parse().unwrap();
                        got.messages.entry(channel).or_default().push(seq);
                    }
                    Received::Gap { channel, lasted } => {
                        let channel = String::from_utf8_lossy(&channel).into_owned();
                        got.gaps.push((channel, lasted, Instant::now()));
                    }
                    other => panic!("unexpected {other:?}"),
                }
            }
        }
    });
    let stop = Arc::new(AtomicBool::new(false));
    // The sequence number of the round being published.
    let round = Arc::new(AtomicU64::new(0));
    let publishing = rt.spawn({
        let (publisher, channels, stop) = (publisher.clone(), channels.clone(), stop.clone());
        let round = round.clone();
        async move {
            let mut published = Published::new();
            let mut seq = 0u64;
            while !stop.load(Ordering::Acquire) {
                seq += 1;
                round.store(seq, Ordering::Release);
                for channel in &channels {
                    let at = Instant::now();
                    // A publish the retries could not place is simply not
                    // counted as reaching anyone.
                    let sent = if classic {
                        publisher.publish(channel, seq.to_string()).await
                    } else {
                        publisher.spublish(channel, seq.to_string()).await
                    };
                    let reached = sent.is_ok_and(|n| n > 0);
                    published
                        .entry(channel.clone())
                        .or_default()
                        .push((seq, at, reached));
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            published
        }
    });
    // Every channel hears a round published after `since`: its
    // subscription is placed (again), and any gap it had is reported.
    let all_hear_after = |since: u64, what: &str| {
        eventually(what, Duration::from_secs(15), || {
            let got = got.lock().unwrap();
            channels.iter().all(|channel| {
                got.messages
                    .get(channel)
                    .and_then(|seqs| seqs.last())
                    .is_some_and(|&last| last > since)
            })
        });
    };
    all_hear_after(0, &format!("{server}: every channel heard"));

    let mut gaps_seen = 0;
    let mut event = |name: &str, cluster: &mut Cluster, run: &mut dyn FnMut(&mut Cluster)| {
        let started = Instant::now();
        run(cluster);
        let took = started.elapsed();
        // The cluster settles (one view of the slots, replicas in sync)
        // before the next event asks it who is master.
        cluster.wait_healthy().unwrap();
        all_hear_after(
            round.load(Ordering::Acquire),
            &format!("{server} {name}: every channel heard again"),
        );
        let got = got.lock().unwrap();
        let new: Vec<&(String, Duration, Instant)> = got.gaps[gaps_seen..].iter().collect();
        let longest = new.iter().map(|g| g.1).max().unwrap_or_default();
        let back = new.iter().map(|g| g.2 - started).max().unwrap_or_default();
        eprintln!(
            "{server} {name} (the cluster took {took:?}, all resubscribed {back:?} after it began): {} channel(s) resubscribed, gaps up to {longest:?}: {:?}",
            new.len(),
            new.iter().map(|g| (&g.0, g.1)).collect::<Vec<_>>()
        );
        // A classic channel is heard on every node: a failover or a
        // migration of its slot need not interrupt it; a dead node does.
        if !classic || name.starts_with("kill") {
            assert!(!new.is_empty(), "{server} {name}: the subscription noticed");
        }
        gaps_seen = got.gaps.len();
    };

    // The master of news:0's slot fails over to its replica.
    // Where news:5's classic subscription was placed: its slot's master
    // when it subscribed (it stays there through the failover and the
    // migration below, replica or not).
    let doomed = slot_for_key(b"news:5");
    let placed = cluster.owner_index(doomed).unwrap();
    let first = slot_for_key(b"news:0");
    event("manual failover", &mut cluster, &mut |c| {
        let master = c.owner_index(first).unwrap();
        let replica = c.replica_of(master).unwrap();
        c.failover(replica).unwrap();
    });
    // The {room} slot migrates to another master.
    let room = slot_for_key(b"{room}");
    event("slot migration", &mut cluster, &mut |c| {
        // The slot's owner as the cluster reports it is a master by its
        // own account (a failed-over master's role flips a moment later).
        let mut from = 0;
        eventually(
            "the {room} slot's owner is a master",
            Duration::from_secs(10),
            || {
                from = c.owner_index(room).unwrap();
                c.is_master(from).unwrap_or(false)
            },
        );
        let to = (0..c.running().len())
            .find(|&i| i != from && c.is_master(i).unwrap_or(false))
            .unwrap();
        c.move_slot(room, to).unwrap();
    });
    // A master is killed; its replica takes over.
    // Sharded: the channel's master now. Classic: the node its
    // subscription is on, master or replica by now.
    event("kill -9 of a node", &mut cluster, &mut |c| {
        let victim = if classic {
            placed
        } else {
            c.owner_index(doomed).unwrap()
        };
        let was_master = c.is_master(victim).unwrap();
        c.kill(victim);
        if was_master {
            c.wait_failover_of(victim, doomed).unwrap();
        }
    });

    // Enough rounds to judge order by (30 channels a round).
    eventually(
        &format!("{server}: 60 rounds published"),
        Duration::from_secs(30),
        || round.load(Ordering::Acquire) >= 60,
    );
    stop.store(true, Ordering::Release);
    let published = rt.block_on(publishing).unwrap();
    // The last round that reached a subscriber has arrived everywhere (the
    // assertions below say which channel if one never does).
    let last_reached =
        |sent: &Vec<(u64, Instant, bool)>| sent.iter().rev().find(|s| s.2).map(|s| s.0);
    eventually(
        &format!("{server}: the last round arrived"),
        Duration::from_secs(5),
        || {
            let got = got.lock().unwrap();
            let patterns = by_pattern.lock().unwrap();
            published.iter().all(|(channel, sent)| {
                let heard = |seqs: Option<&Vec<u64>>| {
                    seqs.and_then(|s| s.last().copied()) >= last_reached(sent)
                };
                heard(got.messages.get(channel))
                    && (!classic || !channel.starts_with("news:") || heard(patterns.get(channel)))
            })
        },
    );
    consumer.abort();
    let got = got.lock().unwrap();
    let mut checked = 0;
    for (channel, sent) in &published {
        let received = got.messages.get(channel).cloned().unwrap_or_default();
        assert!(
            received.windows(2).all(|w| w[0] < w[1]),
            "{server} {channel}: in order"
        );
        // A message reached our node and was lost only inside a gap.
        let gaps: Vec<(Instant, Instant)> = got
            .gaps
            .iter()
            .filter(|g| g.0 == *channel)
            .map(|g| (g.2 - g.1 - Duration::from_millis(500), g.2))
            .collect();
        for &(seq, at, reached) in sent {
            if !reached || received.binary_search(&seq).is_ok() {
                continue;
            }
            assert!(
                gaps.iter().any(|&(from, to)| at >= from && at <= to),
                "{server} {channel}: message {seq} reached a subscriber and was lost outside any gap"
            );
        }
        let last = last_reached(sent);
        assert_eq!(
            received.last().copied(),
            last,
            "{server} {channel}: the last message arrived"
        );
        checked += received.len();
    }
    eprintln!(
        "{server}: {checked} messages received in order across {} channels",
        published.len()
    );
    assert!(checked > 1000, "{server}: messages really flowed");
    if let Some(patterns) = patterns {
        patterns.abort();
        let by_pattern = by_pattern.lock().unwrap();
        for (channel, sent) in published.iter().filter(|(c, _)| c.starts_with("news:")) {
            let received = by_pattern.get(channel).cloned().unwrap_or_default();
            assert!(
                received.windows(2).all(|w| w[0] < w[1]),
                "{server} {channel}: pattern messages in order"
            );
            assert_eq!(
                received.last().copied(),
                last_reached(sent),
                "{server} {channel}: the pattern got the last message"
            );
        }
        let heard: usize = by_pattern.values().map(Vec::len).sum();
        eprintln!("{server}: the pattern heard {heard} messages");
    }
    let errors = errorstats(&cluster);
    assert!(
        !errors.contains("CROSSSLOT"),
        "{server}: a cross-slot SSUBSCRIBE: {errors}"
    );
}
