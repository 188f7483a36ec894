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
//! use zaris_core::{
//!     parse_error_reply, slot_for_key, Decision, ErrorReply, Outcome, RetryLoop, RetryPolicy,
//! };
//!
//! // Where does the key live?
//! assert_eq!(slot_for_key(b"{user1000}.following"), 3443);
//!
//! // A node says it moved: what now?
//! let reply = parse_error_reply(b"-MOVED 3443 127.0.0.1:7001\r\n").unwrap();
//! let mut retries = RetryLoop::new(RetryPolicy::DEFAULT);
//! let next = retries.record(Outcome::Status(reply.status()), Some(Duration::from_secs(60)));
//! assert_eq!(next, Decision::Retry { refresh_map: true, delay: Duration::from_millis(100) });
//! ```
//!
//! # Features
//! - `std` (default): picks the carry-less-multiply CRC path by run-time CPU
//!   detection. Without it the choice is made at compile time from the
//!   target features (`-C target-feature=+pclmulqdq,+ssse3` on x86_64,
//!   `+aes` for PMULL on aarch64).
//! - `serde`: `Serialize`/`Deserialize` for the map and policy types.
#![no_std]
#![warn(clippy::std_instead_of_core, clippy::alloc_instead_of_core)]

#[cfg(feature = "std")]
extern crate std;

mod backoff;
mod crc16;
mod placement;
mod policy;
mod redirect;
mod retry;
mod routing;
mod simd;
mod status;

pub use backoff::{retry_delay, DEFAULT_BACKOFF, MAX_RETRY_DELAY, MIGRATING_BACKOFF_MULTIPLIER};
pub use crc16::{crc16, crc16_bitwise, Crc16};
pub use placement::{
    hash_tag, hash_tag_span, hash_tag_span_utf16, segment_for_key, segment_for_slot, slot_for_key,
    slot_for_utf16, utf8_from_utf16_lossy, SegmentCount, SegmentCountError, SLOT_COUNT,
};
pub use policy::{
    parse_disable_retries, parse_refresh_wait_ms, parse_request_timeout, RetryPolicy, SettingError,
    DEFAULT_MAX_ATTEMPTS, DEFAULT_REFRESH_WAIT, DEFAULT_REQUEST_TIMEOUT, ENV_DISABLE_RETRIES,
    ENV_REFRESH_WAIT_MS, ENV_REQUEST_TIMEOUT,
};
pub use redirect::{parse_error_reply, ErrorReply, Redirect, ReplyError};
pub use retry::{Decision, Outcome, RetryClass, RetryLoop, StopReason, TransportFailure};
pub use routing::{
    CapacityError, OwnerId, OwnershipChange, RouteError, SegmentTable, TableSizeError, NO_OWNER,
};
pub use status::{ownership_failure_status, KvStatus};

#[doc(hidden)]
pub use crc16::_benchable;
