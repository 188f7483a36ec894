//! One call's requests in rounds ([`Round`]): what every step of the
//! engine shares (the state, the requests, when the call started and its
//! deadline, when this round is sent, and the requests in it). The steps
//! build on it: sending (`send.rs`) and running the rounds (`run.rs`).

use std::sync::Arc;

use smallvec::SmallVec;
use tokio::time::Instant;

use super::retry::{deadline_of, InFlight};
use crate::inner::Inner;
use crate::route::Requests;

/// One call's requests, run together in rounds: each round sends every
/// node its share, judges each reply against the request's own retry
/// loop, and makes the requests to retry the next round.
pub(super) struct Round<'a, R: ?Sized> {
    pub(super) inner: &'a Arc<Inner>,
    pub(super) requests: &'a R,
    /// The call's deadline: every request's, as they started together
    /// (a retry's state counts from then too).
    pub(super) deadline: Option<Instant>,
    /// When this round is sent: the first goes out as the call starts
    /// (one clock read serves both); a later one after its wait.
    pub(super) sending: Instant,
    /// The requests of this round, in the caller's order.
    pub(super) in_flight: SmallVec<[InFlight; 1]>,
}

impl<'a, R: Requests + ?Sized> Round<'a, R> {
    /// The first round of a call of `requests`, starting now.
    #[inline]
    pub(super) fn new(inner: &'a Arc<Inner>, requests: &'a R) -> Self {
        let started = Instant::now();
        Self {
            inner,
            requests,
            deadline: deadline_of(inner, started),
            sending: started,
            in_flight: (0..requests.count()).map(InFlight::new).collect(),
        }
    }
}
