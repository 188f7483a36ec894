//! The soak's workload: tasks that each own a kind of data and record
//! every operation in the history, and the read-back of the final state.
//!
//! - registers: each writer writes strictly increasing values (`w.n`) to
//!   its own keys, durable (`WAIT 1`) or plain, and reads them back;
//! - list appends of unique values to shared lists, two sharing a slot;
//! - counters (`INCRBY 1`, durable);
//! - versioned compare-and-set chains (durable);
//! - `MSET`/`MGET` across slots; pipelines of mixed commands;
//! - one-slot transactions (two counters that must stay equal);
//! - blocking pops of a queue fed by a producer;
//! - sharded pub/sub;
//! - cached readers (`Builder::client_cache`) of the durable registers,
//!   whose every read the checker holds to the cache's bound; and, on a
//!   client of their own, cached readers of registers written only every
//!   100 ms (writer `r`): their reads nearly all hit, so a node that stops
//!   answering is found by the cache's own checks, not by a read that
//!   missed and timed out.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::JoinHandle;
use zaris_client::{CacheConfig, Client, Error, Received, Value};

use super::{Clock, History};

/// Each request's deadline: the bound "no operation ran past its deadline
/// by more than 100 ms" is checked against.
pub(crate) const DEADLINE: Duration = Duration::from_secs(10);
const ATTEMPT: Duration = Duration::from_secs(1);

pub(crate) const WRITERS: usize = 3;
pub(crate) const KEYS_PER_WRITER: usize = 8;
pub(crate) const LISTS: [&str; 4] = ["list:{a}:0", "list:{a}:1", "list:b", "list:c"];
pub(crate) const COUNTERS: usize = 6;
pub(crate) const CAS_TASKS: usize = 2;
pub(crate) const CAS_KEYS: usize = 3;
pub(crate) const MULTI_KEYS: [&str; 4] = ["mm:0", "mm:1", "mm:2", "mm:3"];
pub(crate) const TX_KEYS: [&str; 2] = ["{tx}:a", "{tx}:b"];
pub(crate) const QUEUE: &str = "queue:{j}";
const CHANNEL: &str = "news:{s}";

/// The cached readers' lease: a read that starts more than this long
/// after a durable register write was acknowledged must see it.
pub(crate) const CACHE_LEASE: Duration = Duration::from_millis(250);
/// Tasks reading through the cache.
pub(crate) const CACHED_READERS: usize = 4;
/// The writer of the registers written rarely, and its pause.
pub(crate) const RARE_WRITER: &str = "r";
const RARE_PAUSE: Duration = Duration::from_millis(100);

/// A register key: `dreg:w:k` (durable) or `preg:w:k` (plain).
pub(crate) fn register(durable: bool, writer: &str, k: usize) -> String {
    format!("{}:{writer}:{k}", if durable { "dreg" } else { "preg" })
}

/// The soak's clients: plain writes, durable ones (`WAIT 1`), and reads
/// through the client cache.
#[derive(Clone)]
pub struct Clients {
    /// Plain writes and reads.
    pub plain: Client,
    /// Durable writes (`WAIT 1`).
    pub durable: Client,
    /// Reads through the client cache.
    pub cached: Client,
    /// Reads only the rarely written registers, through its own cache.
    pub cached_rare: Client,
}

impl Clients {
    /// The four clients, connected to `seeds`.
    ///
    /// # Errors
    /// No seed answered with a map.
    pub async fn connect(seeds: &[String]) -> Result<Self, Error> {
        let builder = || {
            Client::builder()
                .env(crate::no_env)
                .attempt_timeout(ATTEMPT)
                .request_timeout(Some(DEADLINE))
        };
        Ok(Self {
            plain: builder().connect(seeds).await?,
            durable: builder()
                .durable_writes(1, Duration::from_secs(1))
                .connect(seeds)
                .await?,
            cached: builder()
                .client_cache(CacheConfig {
                    lease: CACHE_LEASE,
                    ..CacheConfig::default()
                })
                .connect(seeds)
                .await?,
            cached_rare: builder()
                .client_cache(CacheConfig {
                    lease: CACHE_LEASE,
                    ..CacheConfig::default()
                })
                .connect(seeds)
                .await?,
        })
    }
}

/// A task's own draws (not the nemesis's: the workload's timing is not
/// replayed, the schedule is).
fn pick(state: &mut u64, n: usize) -> usize {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    (*state % n as u64) as usize
}

/// Starts every workload task (on the current runtime); each runs until
/// `stop`.
pub fn spawn(clients: &Clients, history: &History, stop: &Arc<Control>) -> Vec<JoinHandle<()>> {
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        for durable in [true, false] {
            let client = if durable {
                clients.durable.clone()
            } else {
                clients.plain.clone()
            };
            tasks.push(tokio::spawn(registers(
                client,
                durable,
                w.to_string(),
                history.clone(),
                stop.clone(),
            )));
        }
    }
    for t in 0..2 {
        tasks.push(tokio::spawn(appends(
            clients.plain.clone(),
            t,
            history.clone(),
            stop.clone(),
        )));
        tasks.push(tokio::spawn(counters(
            clients.durable.clone(),
            t,
            history.clone(),
            stop.clone(),
        )));
    }
    for t in 0..CAS_TASKS {
        tasks.push(tokio::spawn(cas(
            clients.durable.clone(),
            t,
            history.clone(),
            stop.clone(),
        )));
    }
    tasks.push(tokio::spawn(scripts(
        clients.plain.clone(),
        history.clone(),
        stop.clone(),
    )));
    tasks.push(tokio::spawn(multi(
        clients.plain.clone(),
        history.clone(),
        stop.clone(),
    )));
    tasks.push(tokio::spawn(pipelines(
        clients.plain.clone(),
        history.clone(),
        stop.clone(),
    )));
    tasks.push(tokio::spawn(transactions(
        clients.plain.clone(),
        history.clone(),
        stop.clone(),
    )));
    tasks.push(tokio::spawn(producer(
        clients.durable.clone(),
        history.clone(),
        stop.clone(),
    )));
    tasks.push(tokio::spawn(consumer(
        clients.plain.clone(),
        history.clone(),
        stop.clone(),
    )));
    tasks.push(tokio::spawn(pubsub(
        clients.plain.clone(),
        history.clone(),
        stop.clone(),
    )));
    let busy: Vec<String> = (0..WRITERS)
        .flat_map(|w| (0..KEYS_PER_WRITER).map(move |k| register(true, &w.to_string(), k)))
        .collect();
    for t in 0..CACHED_READERS {
        tasks.push(tokio::spawn(cached_reads(
            clients.cached.clone(),
            busy.clone(),
            t,
            history.clone(),
            stop.clone(),
        )));
    }
    tasks.push(tokio::spawn(rare_writes(
        clients.durable.clone(),
        history.clone(),
        stop.clone(),
    )));
    // One reader a key: a read that waits on a dead node holds up no
    // other key's reads, so the others go on hitting as long as the cache
    // lets them.
    for k in 0..KEYS_PER_WRITER {
        tasks.push(tokio::spawn(cached_reads(
            clients.cached_rare.clone(),
            vec![register(true, RARE_WRITER, k)],
            k + CACHED_READERS,
            history.clone(),
            stop.clone(),
        )));
    }
    tasks
}

/// Durable writes of writer `r`'s registers, one every 100 ms.
async fn rare_writes(client: Client, history: History, stop: Arc<Control>) {
    let mut draws = 0x4A4E_0001u64;
    let mut n = 0u64;
    while go(&stop).await {
        n += 1;
        let key = register(true, RARE_WRITER, pick(&mut draws, KEYS_PER_WRITER));
        let value = format!("{RARE_WRITER}.{n}");
        let at = history.clock.ms();
        let outcome = client.set(&key, &value).await;
        history.record("dw", &key, &value, at, outcome);
        tokio::time::sleep(RARE_PAUSE).await;
    }
}

/// Reads of `keys` (durable registers) through the cache (`cr`), a
/// millisecond apart: most hit, and each is judged against the writes
/// before it.
async fn cached_reads(
    client: Client,
    keys: Vec<String>,
    t: usize,
    history: History,
    stop: Arc<Control>,
) {
    let mut draws = 0xCAC4_E5EEu64 + t as u64;
    while go(&stop).await {
        let key = &keys[pick(&mut draws, keys.len())];
        let at = history.clock.ms();
        match client.get(&key).await {
            Ok(value) => history.record::<Error>("cr", key, &text(value), at, Ok(())),
            Err(e) => history.record("cr", key, "-", at, Err(e)),
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// When the workload stops, and how it is paced.
#[derive(Debug, Default)]
pub struct Control {
    stop: AtomicBool,
    pace: Option<Duration>,
}

impl Control {
    /// A workload that runs until stopped, each task waiting `pace`
    /// before each operation (none: as fast as it goes, as the real soak
    /// runs; the simulation paces it in simulated time).
    #[must_use]
    pub fn new(pace: Option<Duration>) -> Arc<Self> {
        Arc::new(Self {
            stop: AtomicBool::new(false),
            pace,
        })
    }

    /// Every task stops after its operation in flight.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Release);
    }
}

/// Whether a task goes on (after its pause, when paced).
async fn go(control: &Control) -> bool {
    if let Some(pace) = control.pace {
        tokio::time::sleep(pace).await;
    }
    !control.stop.load(Ordering::Acquire)
}

async fn registers(
    client: Client,
    durable: bool,
    writer: String,
    history: History,
    stop: Arc<Control>,
) {
    let (write, read) = if durable { ("dw", "dr") } else { ("pw", "pr") };
    let mut draws = 0x9E37_79B9u64 + writer.len() as u64 * 7 + u64::from(durable);
    let mut n = 0u64;
    while go(&stop).await {
        n += 1;
        let key = register(durable, &writer, pick(&mut draws, KEYS_PER_WRITER));
        let value = format!("{writer}.{n}");
        let at = history.clock.ms();
        let outcome = client.set(&key, &value).await;
        history.record(write, &key, &value, at, outcome);
        if pick(&mut draws, 4) == 0 {
            let key = register(durable, &writer, pick(&mut draws, KEYS_PER_WRITER));
            let at = history.clock.ms();
            match client.get(&key).await {
                Ok(value) => history.record::<Error>(read, &key, &text(value), at, Ok(())),
                Err(e) => history.record(read, &key, "-", at, Err(e)),
            }
        }
    }
}

/// Plain register writes by script (writer `s`): `EVALSHA` to the key's
/// owner, the source on `NOSCRIPT` (a new master after a kill or a
/// failover, a slot moved to another node), judged as any plain write; a
/// read in four.
async fn scripts(client: Client, history: History, stop: Arc<Control>) {
    let set = zaris_client::Script::new("return redis.call('SET', KEYS[1], ARGV[1])");
    let mut draws = 0x5C21_7E55u64;
    let mut n = 0u64;
    while go(&stop).await {
        n += 1;
        let key = register(false, "s", pick(&mut draws, KEYS_PER_WRITER));
        let value = format!("s.{n}");
        let at = history.clock.ms();
        let outcome = client.invoke(&set, &[&key], &[&value]).await.map(drop);
        history.record("pw", &key, &value, at, outcome);
        if pick(&mut draws, 4) == 0 {
            let key = register(false, "s", pick(&mut draws, KEYS_PER_WRITER));
            let at = history.clock.ms();
            match client.get(&key).await {
                Ok(value) => history.record::<Error>("pr", &key, &text(value), at, Ok(())),
                Err(e) => history.record("pr", &key, "-", at, Err(e)),
            }
        }
        // A few hundred a second: scripts are one task among many.
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// A read value as the history writes it: `-` for none.
fn text(value: Option<bytes::Bytes>) -> String {
    value.map_or_else(
        || "-".to_owned(),
        |v| String::from_utf8_lossy(&v).into_owned(),
    )
}

async fn appends(client: Client, task: usize, history: History, stop: Arc<Control>) {
    let mut draws = 0xA5A5_5A5Au64 + task as u64;
    let mut n = 0u64;
    while go(&stop).await {
        n += 1;
        let list = LISTS[pick(&mut draws, LISTS.len())];
        let value = format!("{task}.{n}");
        let at = history.clock.ms();
        let outcome = client.cmd(&["RPUSH", list, &value]).await.map(drop);
        history.record("ap", list, &value, at, outcome);
        // At most 500 a second: the lists are read back whole at the end,
        // and a replica's full sync of them must stay short.
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

async fn counters(client: Client, task: usize, history: History, stop: Arc<Control>) {
    let mut draws = 0x1234_5678u64 + task as u64;
    while go(&stop).await {
        let key = format!("ctr:{}", pick(&mut draws, COUNTERS));
        let at = history.clock.ms();
        let outcome = client.incr_by(&key, 1).await.map(drop);
        history.record("inc", &key, "1", at, outcome);
    }
}

async fn cas(client: Client, task: usize, history: History, stop: Arc<Control>) {
    let mut draws = 0x0F0F_F0F0u64 + task as u64;
    while go(&stop).await {
        let key = format!("cas:{task}:{}", pick(&mut draws, CAS_KEYS));
        let at = history.clock.ms();
        let version = match client.get_versioned(&key).await {
            Ok(v) => v.map_or(0, |v| v.version),
            Err(e) => {
                history.record("cas", &key, "-", at, Err(e));
                continue;
            }
        };
        let at = history.clock.ms();
        let next = (version + 1).to_string();
        match client.set_if_version(&key, &next, version).await {
            Ok(applied) => history.record::<Error>("cas", &key, &applied.to_string(), at, Ok(())),
            // An answer: not applied (the stored version was another).
            Err(Error::Conflict { .. }) => {
                history.record("cas", &key, &next, at, Err("conflict"));
            }
            Err(e) => history.record("cas", &key, &next, at, Err(e)),
        }
    }
}

async fn multi(client: Client, history: History, stop: Arc<Control>) {
    let mut n = 0u64;
    while go(&stop).await {
        n += 1;
        let value = format!("m.{n}");
        let pairs: Vec<(&str, &str)> = MULTI_KEYS.iter().map(|k| (*k, value.as_str())).collect();
        let at = history.clock.ms();
        let outcome = client.mset(&pairs).await;
        history.record("mw", &MULTI_KEYS.join(","), &value, at, outcome);
        let at = history.clock.ms();
        match client.mget(&MULTI_KEYS).await {
            Ok(values) => {
                let read: Vec<String> = values.into_iter().map(text).collect();
                history.record::<Error>("mr", &MULTI_KEYS.join(","), &read.join(","), at, Ok(()));
            }
            Err(e) => history.record("mr", &MULTI_KEYS.join(","), "-", at, Err(e)),
        }
    }
}

async fn pipelines(client: Client, history: History, stop: Arc<Control>) {
    let mut draws = 0xDEAD_BEEFu64;
    let mut n = 0u64;
    while go(&stop).await {
        let mut pipeline = client.pipeline();
        let mut writes = Vec::new();
        for _ in 0..4 {
            n += 1;
            let key = register(false, "p", pick(&mut draws, KEYS_PER_WRITER));
            let value = format!("p.{n}");
            pipeline.cmd(&["SET", key.as_str(), value.as_str()]);
            writes.push((key, value));
        }
        let read = register(false, "p", pick(&mut draws, KEYS_PER_WRITER));
        pipeline.cmd(&["GET", read.as_str()]);
        let at = history.clock.ms();
        match pipeline.run().await {
            Ok(mut replies) => {
                let got = replies.pop();
                for ((key, value), reply) in writes.iter().zip(replies) {
                    history.record("pw", key, value, at, reply.map(drop));
                }
                match got {
                    Some(Ok(Value::Data(v))) => history.record::<Error>(
                        "pr",
                        &read,
                        &String::from_utf8_lossy(&v),
                        at,
                        Ok(()),
                    ),
                    Some(Ok(Value::Nil)) => history.record::<Error>("pr", &read, "-", at, Ok(())),
                    other => history.record("pr", &read, "-", at, Err(format!("{other:?}"))),
                }
            }
            Err(e) => {
                for (key, value) in &writes {
                    history.record("pw", key, value, at, Err(&e));
                }
            }
        }
    }
}

async fn transactions(client: Client, history: History, stop: Arc<Control>) {
    while go(&stop).await {
        let at = history.clock.ms();
        let outcome = client
            .transaction()
            .cmd(&["INCR", TX_KEYS[0]])
            .cmd(&["INCR", TX_KEYS[1]])
            .exec()
            .await
            .map(drop);
        history.record("tx", TX_KEYS[0], "1", at, outcome);
    }
}

async fn producer(client: Client, history: History, stop: Arc<Control>) {
    let mut n = 0u64;
    while go(&stop).await {
        n += 1;
        let value = n.to_string();
        let at = history.clock.ms();
        let outcome = client.cmd(&["RPUSH", QUEUE, &value]).await.map(drop);
        history.record("push", QUEUE, &value, at, outcome);
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

async fn consumer(client: Client, history: History, stop: Arc<Control>) {
    while go(&stop).await {
        let at = history.clock.ms();
        match client.cmd(&["BLPOP", QUEUE, "1"]).await {
            Ok(Value::Array(pair)) => {
                let item = pair.get(1).and_then(Value::as_bytes).unwrap_or_default();
                let item = String::from_utf8_lossy(item).into_owned();
                history.record::<Error>("pop", QUEUE, &item, at, Ok(()));
            }
            Ok(_) => {}
            Err(e) => history.record("pop", QUEUE, "-", at, Err(e)),
        }
    }
}

async fn pubsub(client: Client, history: History, stop: Arc<Control>) {
    let mut subscription = match client.ssubscribe(&[CHANNEL]).await {
        Ok(s) => s,
        Err(e) => {
            history.record("sub", CHANNEL, "-", history.clock.ms(), Err(e));
            return;
        }
    };
    let listener = {
        let history = history.clone();
        tokio::spawn(async move {
            while let Some(event) = subscription.next().await {
                let at = history.clock.ms();
                match event {
                    Received::Message { payload, .. } => history.record::<Error>(
                        "recv",
                        CHANNEL,
                        &String::from_utf8_lossy(&payload),
                        at,
                        Ok(()),
                    ),
                    Received::Gap { .. } => {
                        history.record::<Error>("gap", CHANNEL, "-", at, Ok(()))
                    }
                    _ => {}
                }
            }
        })
    };
    let mut n = 0u64;
    while go(&stop).await {
        n += 1;
        let at = history.clock.ms();
        let outcome = client.spublish(CHANNEL, n.to_string()).await.map(drop);
        history.record("pub", CHANNEL, &n.to_string(), at, outcome);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    listener.abort();
}

/// One sample a second: the process's resident memory and the clients'
/// counters, for the timeline and the memory check.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct Sample {
    /// When (ms).
    pub at_ms: f64,
    /// Resident memory (KiB).
    pub rss_kib: u64,
    /// Map refreshes started so far.
    pub refreshes: u64,
}

fn rss_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4
}

pub(crate) async fn sample(
    clients: Clients,
    clock: Clock,
    stop: Arc<Control>,
    samples: Arc<Mutex<Vec<Sample>>>,
) {
    while go(&stop).await {
        let refreshes =
            clients.plain.stats().refreshes_started + clients.durable.stats().refreshes_started;
        let s = Sample {
            at_ms: clock.ms(),
            rss_kib: rss_kib(),
            refreshes,
        };
        samples.lock().unwrap_or_else(|e| e.into_inner()).push(s);
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// The cluster's final state, read once the nemesis is done.
#[derive(Debug, Default)]
pub struct Finals {
    /// Each register's, counter's and multi-key's value.
    pub values: HashMap<String, Option<String>>,
    /// Each list's items.
    pub lists: HashMap<String, Vec<String>>,
    /// Each compare-and-set key's version.
    pub versions: HashMap<String, u64>,
}

/// The cluster's final state, through `clients.plain`.
///
/// # Errors
/// A read failed.
pub async fn read_back(clients: &Clients) -> Result<Finals, Error> {
    let client = &clients.plain;
    let mut finals = Finals::default();
    let mut keys: Vec<String> = Vec::new();
    for w in (0..WRITERS).map(|w| w.to_string()).chain([
        "p".to_owned(),
        "s".to_owned(),
        RARE_WRITER.to_owned(),
    ]) {
        for k in 0..KEYS_PER_WRITER {
            keys.push(register(true, &w, k));
            keys.push(register(false, &w, k));
        }
    }
    keys.extend((0..COUNTERS).map(|i| format!("ctr:{i}")));
    keys.extend(MULTI_KEYS.iter().map(|k| (*k).to_owned()));
    keys.extend(TX_KEYS.iter().map(|k| (*k).to_owned()));
    for key in keys {
        let value = client.get(&key).await?;
        finals
            .values
            .insert(key, value.map(|v| String::from_utf8_lossy(&v).into_owned()));
    }
    for list in LISTS.iter().chain([&QUEUE]) {
        let items = match client.cmd(&["LRANGE", list, "0", "-1"]).await? {
            Value::Array(items) => items
                .iter()
                .filter_map(Value::as_bytes)
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .collect(),
            _ => Vec::new(),
        };
        finals.lists.insert((*list).to_owned(), items);
    }
    for t in 0..CAS_TASKS {
        for k in 0..CAS_KEYS {
            let key = format!("cas:{t}:{k}");
            let version = client.get_versioned(&key).await?.map_or(0, |v| v.version);
            finals.versions.insert(key, version);
        }
    }
    Ok(finals)
}
