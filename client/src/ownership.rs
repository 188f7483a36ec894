//! Ownership changes as the client sees them: each swap of the routing
//! snapshot, diffed slot by slot against the one it replaced, told to
//! whoever listens ([`crate::Client::ownership_changes`]), with what
//! revealed it. Nothing is diffed while no one listens.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use tokio::sync::broadcast;
use zaris_core::SLOT_COUNT;

use crate::snapshot::Snapshot;
use crate::stats::RefreshCause;

/// What told the client that slots changed owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Revealed {
    /// A map refresh, started for this reason (a poll, a `MOVED`, a
    /// failure, a redirect loop, a caller's request).
    Refresh(RefreshCause),
    /// A `MOVED` reply's hint, applied before any refresh.
    Moved,
    /// [`crate::Client::apply_ownership_change`].
    Pushed,
}

impl std::fmt::Display for Revealed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self {
            Revealed::Refresh(RefreshCause::Poll) => "poll",
            Revealed::Refresh(RefreshCause::Moved) => "refresh after MOVED",
            Revealed::Refresh(RefreshCause::Failure) => "refresh after a failure",
            Revealed::Refresh(RefreshCause::RedirectLoop) => "refresh after a redirect loop",
            Revealed::Refresh(RefreshCause::Requested) => "refresh requested",
            Revealed::Moved => "MOVED",
            Revealed::Pushed => "pushed",
        };
        f.write_str(name)
    }
}

/// Slots `first..=last` changed owner in the client's map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnershipEvent {
    /// First slot of the range.
    pub first: u16,
    /// Last slot of the range, inclusive.
    pub last: u16,
    /// The owner before (`host:port`), `None` when the slots had none.
    pub old_owner: Option<String>,
    /// The owner now, `None` when the cluster no longer assigns them.
    pub new_owner: Option<String>,
    /// When the client's map changed.
    pub at: SystemTime,
    /// What revealed the change.
    pub revealed: Revealed,
}

/// Events queued per listener before the oldest are dropped (and counted
/// in [`OwnershipChanges::missed`]): a failover of every master is a few
/// events, a resharding slot by slot a few thousand.
const BACKLOG: usize = 4096;

/// The sending side, in the client's shared state.
pub(crate) struct Announcer {
    sender: broadcast::Sender<OwnershipEvent>,
}

impl Default for Announcer {
    fn default() -> Self {
        Self {
            sender: broadcast::channel(BACKLOG).0,
        }
    }
}

impl Announcer {
    /// Tells listeners which slots `next` gives another owner than
    /// `previous`, as ranges of consecutive slots with the same change.
    pub(crate) fn announce(&self, previous: &Snapshot, next: &Snapshot, revealed: Revealed) {
        if self.sender.receiver_count() == 0 {
            return;
        }
        let at = SystemTime::now();
        let mut run: Option<OwnershipEvent> = None;
        for slot in 0..SLOT_COUNT {
            let (old, new) = (previous.owner_addr(slot), next.owner_addr(slot));
            let changed = old != new;
            if let Some(event) = &mut run {
                let same = changed
                    && event.last + 1 == slot
                    && event.old_owner.as_deref() == old
                    && event.new_owner.as_deref() == new;
                if same {
                    event.last = slot;
                    continue;
                }
                if let Some(done) = run.take() {
                    let _ = self.sender.send(done);
                }
            }
            if changed {
                run = Some(OwnershipEvent {
                    first: slot,
                    last: slot,
                    old_owner: old.map(|a| a.to_string()),
                    new_owner: new.map(|a| a.to_string()),
                    at,
                    revealed,
                });
            }
        }
        if let Some(done) = run {
            let _ = self.sender.send(done);
        }
    }

    pub(crate) fn subscribe(&self) -> OwnershipChanges {
        OwnershipChanges {
            receiver: self.sender.subscribe(),
            missed: AtomicU64::new(0),
        }
    }
}

/// Every ownership change the client's map goes through from the moment
/// this was made ([`crate::Client::ownership_changes`]).
pub struct OwnershipChanges {
    receiver: broadcast::Receiver<OwnershipEvent>,
    missed: AtomicU64,
}

impl OwnershipChanges {
    /// The next change, waiting for it; `None` once the client is gone. A
    /// listener too slow for the last 4,096 changes loses the oldest
    /// ([`Self::missed`] counts them) and goes on with the rest.
    pub async fn next(&mut self) -> Option<OwnershipEvent> {
        loop {
            match self.receiver.recv().await {
                Ok(event) => return Some(event),
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!(missed = n, "ownership listener fell behind");
                    self.missed.fetch_add(n, Ordering::Relaxed);
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }

    /// Changes dropped because this listener fell behind.
    #[must_use]
    pub fn missed(&self) -> u64 {
        self.missed.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::Registry;
    use crate::topology::ranges_of;

    fn snapshot(ranges: &[(u16, u16, &str)], registry: &Registry) -> Snapshot {
        Snapshot::from_ranges(&ranges_of(ranges), registry)
    }

    #[tokio::test]
    async fn a_swap_is_told_as_ranges_of_the_same_change() {
        let registry = Registry::default();
        let before = snapshot(&[(0, 8191, "a:1"), (8192, 16383, "b:1")], &registry);
        let after = snapshot(
            &[
                (0, 99, "a:1"),
                (100, 200, "c:1"),
                (201, 8191, "a:1"),
                (8192, 16383, "d:1"),
            ],
            &registry,
        );
        let announcer = Announcer::default();
        announcer.announce(&before, &after, Revealed::Moved);
        let mut changes = announcer.subscribe();
        // Nothing is sent to no one, and nothing before subscribing.
        let unowned = snapshot(&[(0, 8191, "a:1"), (8193, 16383, "d:1")], &registry);
        announcer.announce(&before, &after, Revealed::Refresh(RefreshCause::Poll));
        announcer.announce(&after, &unowned, Revealed::Pushed);
        let mut seen = Vec::new();
        for _ in 0..4 {
            let e = changes.next().await.unwrap();
            seen.push((
                e.first,
                e.last,
                e.old_owner,
                e.new_owner,
                e.revealed.to_string(),
            ));
        }
        let some = |s: &str| Some(s.to_owned());
        assert_eq!(
            seen,
            [
                (100, 200, some("a:1"), some("c:1"), "poll".into()),
                (8192, 16383, some("b:1"), some("d:1"), "poll".into()),
                (100, 200, some("c:1"), some("a:1"), "pushed".into()),
                (8192, 8192, some("d:1"), None, "pushed".into()),
            ]
        );
        assert_eq!(changes.missed(), 0);
    }
}
