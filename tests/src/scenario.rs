//! Shapes several client tests share, written once: a client on a cluster
//! ([`crate::cluster::Cluster::client`]), clusters started one at a time,
//! a lone request to a node that does not answer, a writer through a
//! failover, readers that time every `GET`, writes that arrive on their
//! own, a writer that counts what was acknowledged through churn.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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

/// A writer that keeps writing (one call after another, 2 ms apart) until
/// stopped, counting the calls acknowledged and those of unknown outcome
/// (a write in flight when its node died), and keeping every other error.
pub struct CountingWriter {
    stop: Arc<AtomicBool>,
    acknowledged: Arc<AtomicU64>,
    unknown: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<Vec<String>>,
}

/// What a [`CountingWriter`] counted.
#[derive(Debug)]
pub struct Tally {
    /// Calls answered with success.
    pub acknowledged: u64,
    /// Calls whose outcome no one can know (`OutcomeUnknown`,
    /// `TransactionUnknown`, a durable write `NotReplicated`).
    pub unknown: u64,
    /// Every other error, in words.
    pub errors: Vec<String>,
}

impl Tally {
    /// Whether a counter the writes incremented (by one each) stands where
    /// they say: every acknowledged write once, and no more than were sent.
    #[must_use]
    pub fn accounts_for(&self, counter: u64) -> bool {
        (self.acknowledged..=self.acknowledged + self.unknown).contains(&counter)
    }
}

impl CountingWriter {
    /// Starts writing with `write` on `rt`.
    pub fn start<F, Fut>(rt: &Runtime, mut write: F) -> Self
    where
        F: FnMut() -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<(), Error>> + Send,
    {
        let stop = Arc::new(AtomicBool::new(false));
        let acknowledged = Arc::new(AtomicU64::new(0));
        let unknown = Arc::new(AtomicU64::new(0));
        let task = rt.spawn({
            let (stop, acknowledged, unknown) =
                (stop.clone(), acknowledged.clone(), unknown.clone());
            async move {
                let mut errors = Vec::new();
                while !stop.load(Ordering::Acquire) {
                    match write().await {
                        Ok(()) => {
                            acknowledged.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(
                            Error::OutcomeUnknown { .. }
                            | Error::TransactionUnknown { .. }
                            | Error::NotReplicated { .. },
                        ) => {
                            unknown.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => errors.push(e.to_string()),
                    }
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                errors
            }
        });
        Self {
            stop,
            acknowledged,
            unknown,
            task,
        }
    }

    /// Calls acknowledged so far.
    #[must_use]
    pub fn acknowledged(&self) -> u64 {
        self.acknowledged.load(Ordering::Relaxed)
    }

    /// Stops it (after the call in flight) and tells what it counted.
    ///
    /// # Panics
    /// The writer task panicked.
    pub fn stop(self, rt: &Runtime) -> Tally {
        self.stop.store(true, Ordering::Release);
        let errors = rt.block_on(self.task).expect("the writer");
        Tally {
            acknowledged: self.acknowledged.load(Ordering::Relaxed),
            unknown: self.unknown.load(Ordering::Relaxed),
            errors,
        }
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
