//! The client cache's checks (docs/behaviour.md §9): every quarter of
//! the lease, each node whose entries are in use is asked `CLUSTER INFO`
//! and `CLUSTER NODES` on its shared connection, the one its entries were
//! read on, so any invalidation it sent before comes first. A node that
//! answers as a master of a healthy cluster has its lease renewed from
//! when it was asked; one that does not answer within the lease, or
//! answers as a replica or from a failed cluster, loses its entries; the
//! slots it no longer claims lose theirs, and the map is refreshed.

use std::sync::{Arc, Weak};
use std::time::Duration;

use zaris_core::HEARTBEATS_PER_LEASE;

use crate::cache::{read_check, read_role, Checked};
use crate::codec::encode;
use crate::inner::Inner;
use crate::route::{Packed, Route};
use crate::stats::RefreshCause;

/// Checks the nodes in use, for as long as the client lives.
pub(crate) async fn check_leases(inner: Weak<Inner>) {
    let Some(lease) = inner
        .upgrade()
        .and_then(|i| i.cache().map(|c| c.config.lease))
    else {
        return;
    };
    // Ticks twice as often as checks fall due: a check is then never
    // late by a whole period for a tick that came a hair early.
    let every = (lease / (2 * HEARTBEATS_PER_LEASE)).max(Duration::from_millis(1));
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let Some(inner) = inner.upgrade() else { return };
        let Some(cache) = inner.cache() else {
            return;
        };
        for (addr, asked_at) in cache.checks_due() {
            let inner = inner.clone();
            tokio::spawn(async move {
                let verdict = inner.check(&addr, lease).await;
                let Some(cache) = inner.cache() else { return };
                let snapshot = inner.map();
                let mine = snapshot.ranges_of(&addr);
                let lost = cache.checked(&addr, asked_at, verdict, mine);
                if !lost.is_empty() {
                    let wait = inner.config().refresh_wait;
                    inner.refresh(RefreshCause::Failure, wait).await;
                }
            });
        }
    }
}

impl Inner {
    /// One check of the node at `addr`, answered within `lease` or failed.
    async fn check(self: &Arc<Self>, addr: &str, lease: Duration) -> Result<Checked, String> {
        let node = self.registry().node(addr);
        if self.map().is_standalone() {
            // No cluster: a server with cluster support off serves every
            // slot while it is a master.
            let asked = self.execute(
                Route::Node(node),
                Packed::new("ROLE", encode(&[&[b"ROLE"]]), 1),
            );
            return match tokio::time::timeout(lease, asked).await {
                Err(_) => Err(format!(
                    "no answer to its check within the lease ({lease:?})"
                )),
                Ok(Err(e)) => Err(format!("its check failed: {e}")),
                Ok(Ok(replies)) => read_role(replies.first()),
            };
        }
        let bytes = encode(&[&[b"CLUSTER", b"INFO"], &[b"CLUSTER", b"NODES"]]);
        let asked = self.execute(Route::Node(node), Packed::new("CLUSTER", bytes, 2));
        match tokio::time::timeout(lease, asked).await {
            Err(_) => Err(format!(
                "no answer to its check within the lease ({lease:?})"
            )),
            Ok(Err(e)) => Err(format!("its check failed: {e}")),
            Ok(Ok(replies)) => match &replies[..] {
                [info, nodes] => read_check(info, nodes),
                other => Err(format!("its check answered {} replies", other.len())),
            },
        }
    }
}
