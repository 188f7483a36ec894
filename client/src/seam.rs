//! The one seam between the client and the world it cannot replay: every
//! random draw, every hash seed, the clock's origin and every connection
//! go through here. A production build takes the operating system's; the
//! `sim` feature (the deterministic simulation of `sim/`) takes a seeded
//! generator per thread, fixed hash keys, and turmoil's network, so that
//! one seed replays one run to the byte.
//!
//! The clock itself is `tokio::time::Instant` everywhere in the client:
//! turmoil drives tokio's paused clock, so reading it needs no seam.

use tokio::time::Instant;

use crate::conn::ConnError;

/// The hasher of every map and of the invalidation log: seeded by the OS
/// in production, fixed under `sim` (iteration order is part of a run).
#[cfg(not(feature = "sim"))]
pub(crate) type Hasher = std::hash::RandomState;
/// See the production definition.
#[cfg(feature = "sim")]
pub(crate) type Hasher = std::hash::BuildHasherDefault<std::collections::hash_map::DefaultHasher>;

/// A map keyed through [`Hasher`].
pub(crate) type HashMap<K, V> = std::collections::HashMap<K, V, Hasher>;

/// A number that differs from call to call (the reconnect jitter's draw,
/// the increment markers' prefix).
#[cfg(not(feature = "sim"))]
pub(crate) fn random() -> u64 {
    let state = std::hash::RandomState::new();
    std::hash::BuildHasher::hash_one(&state, Instant::now())
}

#[cfg(feature = "sim")]
thread_local! {
    /// This thread's run: its generator's state and its clock's origin.
    static RUN: std::cell::Cell<(u64, Option<Instant>)> = const { std::cell::Cell::new((0x5EED, None)) };
}

/// See the production definition: under `sim`, the next draw of this
/// thread's generator (xorshift64*, seeded by [`seed`]).
#[cfg(feature = "sim")]
pub(crate) fn random() -> u64 {
    RUN.with(|run| {
        let (mut x, origin) = run.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        run.set((x, origin));
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    })
}

/// Starts a run on this thread: its draws from `seed`, its clock from the
/// next read. Call it before the client is built (`sim` only).
#[cfg(feature = "sim")]
pub fn seed(seed: u64) {
    RUN.with(|run| run.set((seed | 1, None)));
}

/// The instant the client's millisecond clock counts from: the first read
/// in this process (in this thread's run, under `sim`).
#[cfg(not(feature = "sim"))]
pub(crate) fn origin() -> Instant {
    static ORIGIN: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

/// See the production definition.
#[cfg(feature = "sim")]
pub(crate) fn origin() -> Instant {
    RUN.with(|run| {
        let (x, origin) = run.get();
        origin.unwrap_or_else(|| {
            let now = Instant::now();
            run.set((x, Some(now)));
            now
        })
    })
}

/// A known bug the simulation plants, one at a time, to prove its checker
/// catches it (`sim` only: elsewhere [`planted`] is `false`, and every
/// site folds away).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(feature = "sim"), allow(dead_code))]
pub(crate) enum Plant {
    /// Two callers' replies on a shared connection swapped.
    SwappedReplies,
    /// A `Conflict` retried (the stored version taken as the expected one).
    ConflictRetried,
    /// `ASKING` forgotten before the retry an `ASK` asks for.
    AskingForgotten,
    /// An increment's recorded result ignored on a repeat (sent as a plain
    /// `INCRBY`, so a retry applies it again).
    IncrementRepeated,
    /// A map taken from the node that covers the fewest slots.
    MapFromFewerSlots,
    /// A write timed out sent again whatever its node answered: a paused
    /// node taken for a dead one (its held copy lands too).
    ResentAfterTimeOut,
    /// Writes never take a write lane: under atomic migration a write to a
    /// slot that does not migrate waits behind the paused ones (a latency
    /// bug, caught by `sim/tests/pause.rs`, not by the checker).
    WritesStayHeld,
    /// A write its caller gave up on, held by a pause, not noted: the
    /// caller's next write to its slot takes a lane, overtakes it, and is
    /// undone when the held one lands (caught by `sim/tests/pause.rs`).
    GivenUpOvertaken,
}

impl Plant {
    #[cfg_attr(not(feature = "sim"), allow(dead_code))]
    const ALL: [(Plant, &'static str); 8] = [
        (Plant::SwappedReplies, "swapped-replies"),
        (Plant::ConflictRetried, "conflict-retried"),
        (Plant::AskingForgotten, "asking-forgotten"),
        (Plant::IncrementRepeated, "increment-repeated"),
        (Plant::MapFromFewerSlots, "map-from-fewer-slots"),
        (Plant::ResentAfterTimeOut, "resent-after-time-out"),
        (Plant::WritesStayHeld, "writes-stay-held"),
        (Plant::GivenUpOvertaken, "given-up-overtaken"),
    ];
}

/// Whether `plant` is planted: never outside the simulation.
#[cfg(not(feature = "sim"))]
#[inline(always)]
pub(crate) const fn planted(_: Plant) -> bool {
    false
}

#[cfg(feature = "sim")]
thread_local! {
    static PLANTED: std::cell::Cell<Option<Plant>> = const { std::cell::Cell::new(None) };
}

/// See the production definition: under `sim`, whether this thread's run
/// plants it.
#[cfg(feature = "sim")]
pub(crate) fn planted(plant: Plant) -> bool {
    PLANTED.with(std::cell::Cell::get) == Some(plant)
}

/// Plants the bug named `name` in this thread's runs (`None`: none), for
/// the test that the simulation's checker catches it (`sim` only). The
/// names: `swapped-replies`, `conflict-retried`, `asking-forgotten`,
/// `increment-repeated`, `map-from-fewer-slots`, `resent-after-time-out`,
/// `writes-stay-held`, `given-up-overtaken`.
///
/// # Errors
/// A name that is none of these.
#[cfg(feature = "sim")]
pub fn plant(name: Option<&str>) -> Result<(), String> {
    let plant = match name {
        None => None,
        Some(name) => Some(
            Plant::ALL
                .iter()
                .find(|(_, n)| *n == name)
                .map(|(p, _)| *p)
                .ok_or_else(|| format!("no plant named {name:?}"))?,
        ),
    };
    PLANTED.with(|p| p.set(plant));
    Ok(())
}

/// A new map keyed through [`Hasher`].
pub(crate) fn map<K, V>() -> HashMap<K, V> {
    HashMap::with_hasher(Hasher::default())
}

/// A connection to `dial`, the address of the node known as `addr`: a TCP
/// socket. A name that does not resolve gets its own error: clusters
/// behind NAT or in containers announce addresses only they can resolve.
#[cfg(not(feature = "sim"))]
pub(crate) async fn connect(addr: &str, dial: &str) -> Result<tokio::net::TcpStream, ConnError> {
    let resolved: Vec<std::net::SocketAddr> = match tokio::net::lookup_host(dial).await {
        Ok(resolved) => resolved.collect(),
        Err(e) => {
            let mapped = if dial == addr {
                String::new()
            } else {
                format!(" (mapped to {dial})")
            };
            return Err(ConnError::Unresolved(format!(
                "the cluster announces {addr}{mapped}, which does not resolve here ({e}): \
                 map it to an address this client can reach with Builder::map_address"
            )));
        }
    };
    let mut last = None;
    for target in resolved {
        match tokio::net::TcpStream::connect(target).await {
            Ok(stream) => return Ok(stream),
            Err(e) => last = Some(e),
        }
    }
    let why = last.map_or_else(|| "no address".to_owned(), |e| e.to_string());
    Err(ConnError::Refused(format!("{addr}: {why}")))
}

/// See the production definition: under `sim`, a stream on turmoil's
/// simulated network.
#[cfg(feature = "sim")]
pub(crate) async fn connect(addr: &str, dial: &str) -> Result<turmoil::net::TcpStream, ConnError> {
    turmoil::net::TcpStream::connect(dial)
        .await
        .map_err(|e| ConnError::Refused(format!("{addr}: {e}")))
}
