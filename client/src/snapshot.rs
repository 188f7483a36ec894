//! The routing snapshot (docs/behaviour.md §4): slot → owner index → node,
//! immutable, swapped whole.

use std::ops::Range;
use std::sync::{Arc, OnceLock};

use tokio::time::Instant;

use zaris_core::{OwnerId, OwnershipChange, RouteError, SegmentTable, NO_OWNER, SLOT_COUNT};

use crate::config::ReadFrom;
use crate::pool::{Node, Registry};
use crate::topology::SlotRange;

/// An immutable routing snapshot: slot -> owner index -> node.
pub(crate) struct Snapshot {
    pub(crate) table: SegmentTable<Box<[OwnerId]>>,
    pub(crate) owners: Vec<Arc<Node>>,
    /// The replicas of each owner (same index), for replica reads.
    pub(crate) replicas: Vec<Vec<Arc<Node>>>,
    /// Each owner's slot ranges (same index), read from the table on
    /// first use: the cache's lease checks ask for them often.
    by_owner: OnceLock<Vec<Vec<Range<u16>>>>,
    /// A server with cluster support off: one node owns every slot, and
    /// keys of any slots go to it together.
    standalone: bool,
    /// When it was made: what it says held then (a refresh's answer, a
    /// pushed change).
    pub(crate) made: Instant,
}

impl Snapshot {
    /// A map with no owners (before the first refresh).
    pub(crate) fn empty() -> Self {
        let unowned = vec![NO_OWNER; usize::from(SLOT_COUNT)].into_boxed_slice();
        Self {
            table: SegmentTable::new(unowned).expect("16384 segments"),
            owners: Vec::new(),
            replicas: Vec::new(),
            by_owner: OnceLock::new(),
            standalone: false,
            made: Instant::now(),
        }
    }

    /// Builds a snapshot from a cluster map.
    pub(crate) fn from_ranges(ranges: &[SlotRange], registry: &Registry) -> Self {
        let mut map = Self::empty();
        for range in ranges {
            let owner = owner_index(&mut map.owners, &range.master, registry);
            map.replicas.resize_with(map.owners.len(), Vec::new);
            let replicas = &mut map.replicas[usize::from(owner)];
            for addr in &range.replicas {
                if !replicas.iter().any(|n| *n.addr == **addr) {
                    replicas.push(registry.node(addr));
                }
            }
            map.table.apply(&OwnershipChange {
                first_slot: range.first,
                last_slot: range.last,
                owner,
            });
        }
        map
    }

    /// The map of a server with cluster support off: `addr` owns every
    /// slot.
    pub(crate) fn standalone(addr: &str, registry: &Registry) -> Self {
        let ranges = [SlotRange {
            first: 0,
            last: SLOT_COUNT - 1,
            master: addr.to_owned(),
            replicas: Vec::new(),
        }];
        Self {
            standalone: true,
            ..Self::from_ranges(&ranges, registry)
        }
    }

    /// Whether this is a server with cluster support off: its one node
    /// takes keys of any slots together (`MSET a 1 b 2`, a transaction).
    #[inline]
    pub(crate) fn is_standalone(&self) -> bool {
        self.standalone
    }

    /// The node owning `slot`: a hash was already paid, this is one index.
    #[inline]
    pub(crate) fn owner_of_slot(&self, slot: u16) -> Result<&Arc<Node>, RouteError> {
        let owner = self.table.owner_of_slot(slot)?;
        self.owners
            .get(usize::from(owner))
            .ok_or(RouteError::MapMidUpdate { segment: slot })
    }

    /// The address of `slot`'s owner, if it has one.
    pub(crate) fn owner_addr(&self, slot: u16) -> Option<&str> {
        self.owner_of_slot(slot).ok().map(|n| &*n.addr)
    }

    /// Whether `addr` owns `slot`.
    pub(crate) fn owns(&self, addr: &str, slot: u16) -> bool {
        self.owner_addr(slot) == Some(addr)
    }

    /// The slot ranges `addr` owns, in order.
    pub(crate) fn ranges_of(&self, addr: &str) -> &[Range<u16>] {
        let Some(index) = self.owners.iter().position(|n| *n.addr == *addr) else {
            return &[];
        };
        let by_owner = self.by_owner.get_or_init(|| {
            let mut by_owner = vec![Vec::new(); self.owners.len()];
            for (run, owner) in self.table.runs() {
                if let Some(ranges) = by_owner.get_mut(usize::from(owner)) {
                    ranges.push(run);
                }
            }
            by_owner
        });
        by_owner.get(index).map_or(&[], Vec::as_slice)
    }

    /// The node to read `slot` from under `policy`: a replica of its owner
    /// (round robin by `turn`, passing over replicas that just failed to
    /// connect), else the owner.
    pub(crate) fn reader_of_slot(
        &self,
        slot: u16,
        policy: ReadFrom,
        turn: usize,
    ) -> Result<&Arc<Node>, RouteError> {
        let index = usize::from(self.table.owner_of_slot(slot)?);
        let owner = self
            .owners
            .get(index)
            .ok_or(RouteError::MapMidUpdate { segment: slot })?;
        let replicas = self.replicas.get(index).map_or(&[][..], Vec::as_slice);
        let healthy = replicas.iter().filter(|n| !n.recently_failed());
        let count = healthy.clone().count();
        Ok(match policy {
            ReadFrom::Primary => owner,
            ReadFrom::PreferReplica if count == 0 => owner,
            ReadFrom::PreferReplica => healthy.clone().nth(turn % count).unwrap_or(owner),
            ReadFrom::PrimaryAndReplicas => match turn % (count + 1) {
                0 => owner,
                i => healthy.clone().nth(i - 1).unwrap_or(owner),
            },
        })
    }

    /// A copy with `first..=last` pointed at `addr` (the push path: clone,
    /// patch, swap), or `None` when nothing would change.
    pub(crate) fn with_change(
        &self,
        first: u16,
        last: u16,
        addr: &str,
        registry: &Registry,
    ) -> Option<(Self, u16)> {
        // Most pushes repeat what the map says (every request that met the
        // same MOVED brings the same hint): check before copying anything.
        let (low, high) = (first.min(last), first.max(last).min(SLOT_COUNT - 1));
        let settled = (low..=high).all(|slot| self.owns(addr, slot));
        if settled {
            return None;
        }
        let mut owners = self.owners.clone();
        let owner = owner_index(&mut owners, addr, registry);
        let mut table =
            SegmentTable::new(self.table.owners().to_vec().into_boxed_slice()).expect("same size");
        let changed = table.apply(&OwnershipChange {
            first_slot: first,
            last_slot: last,
            owner,
        });
        let mut replicas = self.replicas.clone();
        replicas.resize_with(owners.len(), Vec::new);
        (changed > 0).then(|| {
            let next = Self {
                table,
                owners,
                replicas,
                by_owner: OnceLock::new(),
                standalone: self.standalone,
                made: Instant::now(),
            };
            (next, changed)
        })
    }

    /// Whether the node at `addr` is in the map, as an owner or a replica.
    pub(crate) fn knows(&self, addr: &str) -> bool {
        self.owners
            .iter()
            .chain(self.replicas.iter().flatten())
            .any(|n| *n.addr == *addr)
    }

    /// The distinct owners, in slot order: the targets of a fan-out.
    pub(crate) fn active_owners(&self) -> Vec<Arc<Node>> {
        let mut seen: Vec<Arc<Node>> = Vec::new();
        for (_, owner) in self.table.runs() {
            if let Some(node) = self.owners.get(usize::from(owner)) {
                if !seen.iter().any(|n| Arc::ptr_eq(n, node)) {
                    seen.push(node.clone());
                }
            }
        }
        seen
    }
}

/// The index of the node at `addr` in `owners`, appended (from the
/// registry) if it is not there yet.
fn owner_index(owners: &mut Vec<Arc<Node>>, addr: &str, registry: &Registry) -> OwnerId {
    let index = match owners.iter().position(|n| *n.addr == *addr) {
        Some(i) => i,
        None => {
            owners.push(registry.node(addr));
            owners.len() - 1
        }
    };
    index as OwnerId
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshots_route_and_patch() {
        let registry = Registry::default();
        let ranges = [
            SlotRange {
                first: 0,
                last: 8191,
                master: "a:1".into(),
                replicas: vec![],
            },
            SlotRange {
                first: 8192,
                last: 16383,
                master: "b:1".into(),
                replicas: vec![],
            },
        ];
        let snap = Snapshot::from_ranges(&ranges, &registry);
        assert_eq!(&*snap.owner_of_slot(12739).unwrap().addr, "b:1");
        assert!(
            snap.with_change(0, 10, "a:1", &registry).is_none(),
            "nothing changed, nothing paid"
        );
        let (moved, changed) = snap.with_change(12739, 12739, "c:1", &registry).unwrap();
        assert_eq!(changed, 1);
        assert_eq!(&*moved.owner_of_slot(12739).unwrap().addr, "c:1");
        assert_eq!(&*moved.owner_of_slot(12740).unwrap().addr, "b:1");
        let fan_out: Vec<String> = moved
            .active_owners()
            .iter()
            .map(|n| n.addr.to_string())
            .collect();
        assert_eq!(fan_out, ["a:1", "b:1", "c:1"]);
        assert!(
            Arc::ptr_eq(&registry.node("b:1"), snap.owner_of_slot(9000).unwrap()),
            "one node object per address"
        );
        assert!(matches!(
            Snapshot::empty().owner_of_slot(5),
            Err(RouteError::Unavailable { .. })
        ));
        // Each owner's slots, as `owns` gives them one by one.
        for addr in ["a:1", "b:1", "c:1", "nobody:1"] {
            let by_run: Vec<u16> = moved.ranges_of(addr).iter().cloned().flatten().collect();
            let by_name: Vec<u16> = (0..SLOT_COUNT).filter(|&s| moved.owns(addr, s)).collect();
            assert_eq!(by_run, by_name, "{addr}");
        }
        assert_eq!(moved.ranges_of("c:1").first(), Some(&(12739..12740)));
        assert_eq!(moved.ranges_of("b:1"), [8192..12739, 12740..16384]);
    }
}
