//! `zaris-core`: where a key lives on a Redis Cluster, and what a client does
//! when ownership moves.
//!
//! The placement and decision logic shared by every Zaris component (the
//! tokio client, the wasm playground, the benchmarks): `no_std`, no
//! allocator, no clock. Placement is byte-for-byte Redis Cluster's
//! `CLUSTER KEYSLOT`, so a Zaris host routes against real Redis or Valkey
//! clusters.
//!
//! ```
//! use core::time::Duration;
//! use zaris_core::{parse_error_reply, slot_for_key, Decision, RetryLoop, RetryPolicy};
//!
//! // Where does the key live?
//! assert_eq!(slot_for_key(b"{user1000}.following"), 3443);
//!
//! // A node says it moved: what now?
//! let reply = parse_error_reply(b"-MOVED 3443 127.0.0.1:7001\r\n").unwrap();
//! let mut retries = RetryLoop::new(RetryPolicy::DEFAULT);
//! let next = retries.record(reply.outcome(), Some(Duration::from_secs(60)));
//! assert_eq!(next, Decision::Retry { refresh_map: true, delay: Duration::from_millis(100) });
//!
//! // An ASK is followed at once, without a refresh.
//! let reply = parse_error_reply(b"-ASK 3443 127.0.0.1:7002").unwrap();
//! assert_eq!(retries.record(reply.outcome(), Some(Duration::from_secs(60))), Decision::FollowAsk);
//! ```
//!
//! # Features
//! - `std` (default): picks the CRC engine by run-time CPU detection
//!   ([`crc_engine`] names it). Without it the choice is made at compile
//!   time from the target features (`-C target-feature=+pclmulqdq,+ssse3`
//!   on x86_64, `+aes` for PMULL on aarch64).
//! - `serde`: `Serialize`/`Deserialize` for the map and policy types.
//! - `simulate` (default): the playground's simulators, [`replay`] (a
//!   script of outcomes through the retry machine) and [`simulate_churn`]
//!   (a client's requests through a failover, a kill, a migration).
#![no_std]
#![warn(clippy::std_instead_of_core, clippy::alloc_instead_of_core)]

#[cfg(feature = "std")]
extern crate std;

mod backoff;
mod cache;
mod cluster_nodes;
mod command;
mod crc16;
mod engine;
mod health;
mod hold;
mod lines;
mod placement;
mod policy;
mod redirect;
mod refresh;
mod retry;
mod routing;
#[cfg(feature = "simulate")]
mod simulate;
mod status;
mod utf16;

pub use backoff::{retry_delay, DEFAULT_BACKOFF, MAX_RETRY_DELAY, MIGRATING_BACKOFF_MULTIPLIER};
pub use cache::{
    cacheable, cached_read, countdown, heartbeat_due, lease_holds, Cacheable, InvalidationLog,
    TtlUnit, HEARTBEATS_PER_LEASE,
};
pub use cluster_nodes::{
    parse_cluster_nodes, ClusterNode, ClusterNodesError, ClusterNodesErrorKind, NodeFlags,
    SlotEntry,
};
pub use command::{
    command_has_keys, command_info, command_keys, command_names, command_route, command_target,
    keys_target, learn_command, CommandError, CommandInfo, CommandKeys, Fanout, LearnError,
    LearnedCommand, Reply, Target, MAX_LEARNED_KEY_SPECS, MAX_LEARNED_NAME,
};
pub use crc16::{crc16, crc16_bitwise, Crc16};
pub use engine::{crc_engine, CrcEngine};
pub use health::{
    opens_after, probe_due, probe_interval, recently_failed, reconnect_delay, OPEN_AFTER_TIMEOUTS,
    RECONNECT_BACKOFF_BASE, RECONNECT_BACKOFF_CAP, REPLICA_PAUSE,
};
pub use hold::{
    at_attempt_time_out, lane, stalled, write_lane, AtTimeOut, HeldWrites, Lane, Liveness,
    Progress, WriteConn, ALIVE_ANSWER_FRESH, ALIVE_CHECK_EVERY, ALIVE_CHECK_TIMEOUT, STALL_TICK,
    WRITE_LANES,
};
pub use lines::{key_lines, KeyLines};
pub use placement::{
    hash_tag, hash_tag_span, segment_for_key, segment_for_slot, slot_for_key, SegmentCount,
    SegmentCountError, SLOT_COUNT,
};
pub use policy::{
    parse_disable_retries, parse_refresh_wait_ms, parse_request_timeout, RetryPolicy, SettingError,
    DEFAULT_MAX_ATTEMPTS, DEFAULT_REFRESH_WAIT, DEFAULT_REQUEST_TIMEOUT, ENV_DISABLE_RETRIES,
    ENV_REFRESH_WAIT_MS, ENV_REQUEST_TIMEOUT,
};
pub use redirect::{
    parse_error_reply, ErrorReply, Redirect, RedirectMemory, ReplyError, REDIRECT_LOOP_WINDOW,
};
pub use refresh::{
    owner_wait_until, RefreshAsk, RefreshGate, OWNER_PROBE_INTERVAL, REFRESH_MIN_INTERVAL,
};
pub use retry::{Decision, Outcome, RetryClass, RetryLoop, StopReason, TransportFailure};
pub use routing::{
    CapacityError, OwnerId, OwnershipChange, RouteError, SegmentTable, TableSizeError, NO_OWNER,
};
#[cfg(feature = "simulate")]
pub use simulate::{
    parse_script, replay, simulate_churn, ChurnError, ChurnEvent, ChurnScenario, ChurnTotals,
    ClientModel, Entry as ChurnEntry, Mark as ChurnMark, Milestone as ChurnMilestone, Replay, Step,
    UnknownOutcome, MAX_CHURN_MASTERS, MAX_CHURN_REQUESTS,
};
pub use status::{ownership_failure_status, KvStatus};
pub use utf16::{hash_tag_span_utf16, slot_for_utf16, utf8_from_utf16_lossy};

/// Entry points that benches and tests call directly; not a stable API.
#[doc(hidden)]
pub mod _benchable {
    use crate::engine;
    pub use crate::engine::CrcEngine;

    /// [`crate::slot_for_key`] on a given engine, or `None` where this CPU
    /// lacks it: one machine measures every tier it has.
    #[inline(always)]
    pub fn slot_for_key_on(engine: CrcEngine, key: &[u8]) -> Option<u16> {
        engine::key_crc_on(engine, key).map(|crc| crc & (crate::SLOT_COUNT - 1))
    }

    /// [`crate::crc16`] on a given engine, or `None` where this CPU lacks it.
    #[inline]
    pub fn crc16_on(engine: CrcEngine, bytes: &[u8]) -> Option<u16> {
        engine::crc_on(engine, bytes)
    }

    /// The plain slicing-by-16 walk, without the one-step short blocks.
    pub fn crc16_slicing16(bytes: &[u8]) -> u16 {
        engine::update_slicing(0, bytes)
    }
}
