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
