//! Shapes several client tests share, written once: a client on a cluster
//! ([`crate::cluster::Cluster::client`]), clusters started one at a time,
//! a lone request to a node that does not answer, a writer through a
//! failover, readers that time every `GET`, writes that arrive on their
//! own.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::runtime::Runtime;
use zaris_client::{Client, Error, TransportFailure};

use crate::cluster::Cluster;

/// Clusters are started one at a time where a test file asks: on 2 cores,
/// two clusters failing over at once would time each other out.
static ONE_CLUSTER_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Holds the other tests of this process that ask back until dropped.
pub fn one_cluster_at_a_time() -> MutexGuard<'static, ()> {
    ONE_CLUSTER_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// How much later than its attempt time-out a lone request to a silent
/// node may end: the timer's slack and a loaded machine.
const TIMEOUT_SLACK: Duration = Duration::from_millis(300);

/// One `GET` of `key` by `once` (a client of one attempt of `attempt`) to a
/// node that neither answers nor refuses (frozen, black-holed) ends by its
/// attempt time-out, as a `TimedOut` transport failure. How long it took.
///
/// # Panics
/// It ended otherwise, or not within the slack.
pub fn times_out(rt: &Runtime, once: &Client, key: &str, attempt: Duration) -> Duration {
    let started = Instant::now();
    let lone = rt.block_on(once.get(key));
    let took = started.elapsed();
    assert!(
        matches!(
            lone,
            Err(Error::Transport {
                failure: TransportFailure::TimedOut,
                ..
            })
        ),
        "{lone:?}"
    );
    assert!(
        took >= attempt && took < attempt + TIMEOUT_SLACK,
        "{took:?} for an attempt of {attempt:?}"
    );
    took
}

/// A write that kept at it while the cluster failed its master over.
pub struct ThroughFailover {
    /// The node that took the slot over.
    pub new_master: usize,
    /// When the cluster named it.
    pub failed_over: Instant,
    /// How long after that the write landed.
    pub late: Duration,
}

/// A `SET` of `key` (in `slot`, on `master`) by `client` that keeps
/// trying while the cluster fails `master` over.
///
/// # Panics
/// The write failed, or no replica took over in time.
pub fn write_through_failover(
    rt: &Runtime,
    client: &Client,
    cluster: &Cluster,
    master: usize,
    slot: u16,
    key: &str,
) -> ThroughFailover {
    let writer = rt.spawn({
        let (client, key) = (client.clone(), key.to_owned());
        async move {
            client
                .set(&key, "after")
                .await
                .expect("the write lands once failed over");
            Instant::now()
        }
    });
    let new_master = cluster.wait_failover_of(master, slot).unwrap();
    let failed_over = Instant::now();
    let written = rt.block_on(writer).unwrap();
    ThroughFailover {
        new_master,
        failed_over,
        late: written.saturating_duration_since(failed_over),
    }
}

/// How often [`eventually`] asks.
const POLL: Duration = Duration::from_millis(10);

/// Waits until `holds` does (asked every 10 ms), for at most `limit`: a
/// condition that says what a test waits for, where a sleep would only
/// hope it came.
///
/// # Panics
/// It never held; the message names `what`.
pub fn eventually(what: &str, limit: Duration, mut holds: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !holds() {
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        std::thread::sleep(POLL);
    }
}

/// The median of `samples`.
///
/// # Panics
/// There are none.
#[must_use]
pub fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

/// `GET`s of `keys`, in turn, until `stop`: each one's latency.
///
/// # Panics
/// A `GET` failed: these keys live on healthy shards.
pub async fn read_until(
    client: Client,
    keys: Arc<Vec<String>>,
    stop: Arc<AtomicBool>,
) -> Vec<Duration> {
    let mut latencies = Vec::new();
    while !stop.load(Ordering::Acquire) {
        for key in keys.iter() {
            let started = Instant::now();
            client.get(key).await.expect("a healthy shard answers");
            latencies.push(started.elapsed());
        }
    }
    latencies
}

/// Writes that arrive on their own, as requests come to a server: one
/// every `every`, whatever the others wait for, `write(key)` of each of
/// `keys` in turn, until `stop`. What each came to, in the order sent.
/// (Run on a tokio runtime: each write is a task of its own.)
pub async fn arrivals<W, F, T>(
    every: Duration,
    keys: &[String],
    stop: &AtomicBool,
    write: W,
) -> Vec<T>
where
    W: Fn(String) -> F,
    F: std::future::Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let mut sent = Vec::new();
    let mut tick = tokio::time::interval(every);
    for i in 0.. {
        tick.tick().await;
        if stop.load(Ordering::Acquire) {
            break;
        }
        sent.push(tokio::spawn(write(keys[i % keys.len()].clone())));
    }
    let mut done = Vec::with_capacity(sent.len());
    for write in sent {
        done.push(write.await.expect("an arriving write"));
    }
    done
}
