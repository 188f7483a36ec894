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

use zaris_core::{SlotEntry, HEARTBEATS_PER_LEASE, SLOT_COUNT};

use crate::cache::Checked;
use crate::codec::{encode, Frame};
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

/// A standalone server's check (`ROLE`) read: a master serves every slot.
fn read_role(role: Option<&Frame>) -> Result<Checked, String> {
    match role {
        Some(Frame::Array(fields)) => match fields.first().and_then(Frame::text) {
            Some(kind) if &kind[..] == b"master" => Ok(Checked::Master(vec![(0, SLOT_COUNT - 1)])),
            Some(_) => Ok(Checked::NotServing("it is not a master")),
            None => Err(format!("ROLE answered {role:?}")),
        },
        other => Err(format!("ROLE answered {other:?}")),
    }
}

/// A check's replies (`CLUSTER INFO`, `CLUSTER NODES`) read: whether the
/// node is a master of a healthy cluster, and the slots it claims.
fn read_check(info: &Frame, nodes: &Frame) -> Result<Checked, String> {
    let text = |f: &Frame| f.text().map(|b| String::from_utf8_lossy(b).into_owned());
    let info = text(info).ok_or_else(|| format!("CLUSTER INFO answered {info:?}"))?;
    if !info.lines().any(|l| l.trim() == "cluster_state:ok") {
        return Ok(Checked::NotServing(
            "its cluster is failed (cluster_state is not ok)",
        ));
    }
    let nodes = text(nodes).ok_or_else(|| format!("CLUSTER NODES answered {nodes:?}"))?;
    let me = zaris_core::parse_cluster_nodes(&nodes)
        .filter_map(Result::ok)
        .find(|n| n.flags.myself)
        .ok_or("CLUSTER NODES has no line for the node itself")?;
    if !me.is_serving_master() {
        return Ok(Checked::NotServing("it is not a serving master"));
    }
    // What it serves: its ranges, and the slots it is migrating away
    // (their keys go by MIGRATE, which invalidates them).
    let claimed = me
        .slots()
        .filter_map(|entry| match entry {
            Ok(SlotEntry::Served { first, last }) => Some((first, last)),
            Ok(SlotEntry::Migrating { slot, .. }) => Some((slot, slot)),
            _ => None,
        })
        .collect();
    Ok(Checked::Master(claimed))
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    fn value(v: &str) -> Frame {
        Frame::BulkString(Bytes::copy_from_slice(v.as_bytes()))
    }

    #[test]
    fn checks_read_what_the_node_says() {
        let info = |state: &str| value(&format!("cluster_enabled:1\r\ncluster_state:{state}\r\n"));
        let me = "07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30004@31004 myself,master - 0 0 1 connected 0-5460 [5461->-e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca]\n\
                  e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@31001 master - 0 0 2 connected 5462-10922\n";
        assert_eq!(
            read_check(&info("ok"), &value(me)),
            Ok(Checked::Master(vec![(0, 5460), (5461, 5461)]))
        );
        assert!(matches!(
            read_check(&info("fail"), &value(me)),
            Ok(Checked::NotServing(_))
        ));
        let replica = me.replace(
            "myself,master -",
            "myself,slave e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca",
        );
        assert!(matches!(
            read_check(&info("ok"), &value(&replica)),
            Ok(Checked::NotServing(_))
        ));
        assert!(read_check(&Frame::Integer(1), &value(me)).is_err());
    }
}
