//! `zaris-client`: an async Redis/Valkey Cluster client that sends each
//! request straight to the node owning its key, over one multiplexed
//! connection per node, and hides ownership churn (failover, migration,
//! scale-out, failback) behind bounded retries and coalesced map refreshes,
//! without ever hiding a real answer.
//!
//! ```no_run
//! # async fn demo() -> Result<(), zaris_client::Error> {
//! use zaris_client::Client;
//!
//! let client = Client::connect(&["127.0.0.1:7000"]).await?;
//! client.set("{user1000}.following", "42").await?;
//! assert_eq!(client.get("{user1000}.following").await?.as_deref(), Some(&b"42"[..]));
//! let version = client.set_if_version("profile:7", "v1", 0).await?; // create
//! client.set_if_version("profile:7", "v2", version).await?;         // compare and set
//! println!("{:?}", client.stats());
//! # Ok(()) }
//! ```
//!
//! - **Routing** (docs/behaviour.md §4): the map is an immutable snapshot swapped
//!   atomically (`arc-swap`); routing a key is `zaris_core::slot_for_key`,
//!   one array index and no lock.
//! - **Retries** (sections 2, 3, 7): every outcome goes through the core's
//!   `RetryLoop`: an attempt budget and a deadline, the delays of docs/behaviour.md §3,
//!   `ASK` followed once with `ASKING`, and the last typed status or
//!   failure when a bound stops it.
//! - **Refreshes** (section 5): push (`apply_ownership_change`, `MOVED`
//!   hints), poll (every 10 s) and react; single-flight, debounced 500 ms,
//!   bounded wait, lock-free cleanup.
//! - **Protocol**: RESP2, encoded and parsed by hand in one pass (held to
//!   `redis-protocol` by property tests), zero-copy into `Bytes`; TLS by
//!   rustls.
//! - **Production**: replica reads (`Builder::read_from`), TLS
//!   (`Builder::tls`, `rediss://`), announced hostnames
//!   (`Builder::map_address`), sharded pub/sub that follows its slots
//!   (`Client::ssubscribe`, docs/behaviour.md §8).
//!
//! # Environment
//! `ZARIS_REQUEST_TIMEOUT` (seconds or `infinite`, default 60),
//! `ZARIS_DISABLE_RETRIES` (`true`: one attempt, raw statuses),
//! `ZARIS_CLIENT_MAP_REFRESH_WAIT_MS` (default 15000). A bad value is an
//! [`Error::Config`] when the client is built.

// The layers, bottom up (tests/layout.rs holds them to it): what has no
// state (`codec`, `topology`, `value`, `error`, `config`, `stats`, `reply`),
// the connections (`conn`), the nodes and the map (`pool`, `snapshot`,
// `route`, `gate`, `ownership`), the shared state (`inner`), what runs on
// it (`request`, `refresh`, `command`), and the API (`client`,
// `pipeline`, `transaction`, `script`, `pubsub`).
mod cache;
mod client;
mod codec;
mod command;
#[cfg(feature = "redis-compat")]
pub mod compat;
mod config;
mod conn;
mod error;
mod failure;
mod function;
mod gate;
mod hearing;
mod inner;
mod keyspace;
mod learned;
mod lease;
mod metrics;
mod ownership;
mod pipeline;
mod pool;
mod pubsub;
mod refresh;
mod reply;
mod request;
mod route;
mod scan;
mod script;
mod seam;
mod side;
mod snapshot;
mod stats;
mod topology;
mod transaction;
mod value;

pub use cache::CacheConfig;
pub use client::{Client, Versioned};
pub use config::{
    Builder, Durability, Protocol, ReadFrom, DEFAULT_ATTEMPT_TIMEOUT, DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_MAX_IN_FLIGHT_PER_NODE, DEFAULT_MAX_REPLY_BYTES, DEFAULT_POLL_INTERVAL,
    OPEN_AFTER_TIMEOUTS, RECONNECT_BACKOFF_BASE, RECONNECT_BACKOFF_CAP, REFRESH_DEBOUNCE,
};
pub use conn::Credentials;
pub use error::Error;
pub use function::Library;
pub use keyspace::{KeyspaceEvent, KeyspaceEvents};
pub use ownership::{OwnershipChanges, OwnershipEvent, Revealed};
pub use pipeline::Pipeline;
pub use pubsub::{Listening, Received, Subscription};
/// The TLS library [`Builder::tls`] takes a configuration of, re-exported
/// so its version always matches.
pub use rustls;
pub use scan::{Scan, ScanOptions, MAX_SCAN_PASSES};
pub use script::Script;
/// Plants a known bug in this thread's simulated runs (the `sim` feature).
#[cfg(feature = "sim")]
pub use seam::plant as sim_plant;

/// The Lua the client sends (compare-and-set, the once-only increment),
/// for the simulation's model to know it by its SHA1 (the `sim` feature).
#[cfg(feature = "sim")]
pub mod sim_scripts {
    pub use crate::client::{INCR_ONCE, SET_IF_VERSION};
}
/// Seeds this thread's simulated run (the `sim` feature: `sim/`).
#[cfg(feature = "sim")]
pub use seam::seed as sim_seed;
pub use stats::{RefreshCause, Stats};
pub use topology::{MapError, SlotRange};
pub use transaction::{Transaction, Watched};
pub use value::Value;
pub use zaris_core::{CommandError, KvStatus, StopReason, TransportFailure};

/// Entry points for the fuzz targets (`client/fuzz`): the parsers that read
/// what comes off a socket, over any bytes. Not part of the API.
#[doc(hidden)]
pub mod _fuzz {
    use bytes::BytesMut;

    pub use crate::codec::Frame;
    use crate::codec::Limits;
    use crate::topology::{MapError, SlotRange};

    /// A `CLUSTER SHARDS` reply from the node at `asked`, as the client
    /// reads it.
    ///
    /// # Errors
    /// What the client refuses in it.
    pub fn parse_cluster_shards(
        reply: &crate::Value,
        asked: &str,
    ) -> Result<Vec<SlotRange>, MapError> {
        crate::topology::parse_cluster_shards(reply, asked)
    }

    /// A `CLUSTER SLOTS` reply from the node at `asked`, as the client
    /// reads it.
    ///
    /// # Errors
    /// What the client refuses in it.
    pub fn parse_cluster_slots(
        reply: &crate::Value,
        asked: &str,
    ) -> Result<Vec<SlotRange>, MapError> {
        crate::topology::parse_cluster_slots(reply, asked)
    }

    /// Every complete reply in `reads` (the bytes of successive reads off
    /// a socket, in order), as a connection's decoder takes them; the
    /// decoder's error in words; and how many bytes were left waiting for
    /// more.
    pub fn replies(
        reads: &[&[u8]],
        max_reply_bytes: usize,
    ) -> (Vec<Frame>, Result<(), String>, usize) {
        let limits = Limits { max_reply_bytes };
        let mut input = BytesMut::new();
        let mut frames = Vec::new();
        for read in reads {
            input.extend_from_slice(read);
            let taken = crate::codec::take_frames(&mut input, limits, |frame| {
                frames.push(frame);
                Ok::<(), crate::codec::CodecError>(())
            });
            if let Err(e) = taken {
                return (frames, Err(e.to_string()), input.len());
            }
        }
        (frames, Ok(()), input.len())
    }

    /// A reply as a caller sees it.
    #[must_use]
    pub fn value(frame: Frame) -> crate::Value {
        crate::value::from_frame(frame)
    }
}
