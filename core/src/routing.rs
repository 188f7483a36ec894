//! Segment -> owner tables, with no allocator (docs/behaviour.md §4).
//!
//! The storage is the caller's: a `[OwnerId; N]` array, a `&mut [OwnerId]`,
//! a `heapless::Vec`, or a boxed slice in a host with an allocator. Routing a
//! key is one hash plus one index. Updates patch the table in place; a host
//! that shares the table between threads clones it, patches the clone and
//! publishes it with one reference swap (copy-on-write).

use core::fmt;
use core::ops::{Range, RangeInclusive};

use crate::retry::TransportFailure;
use crate::{segment_for_slot, slot_for_key, slot_for_utf16, SegmentCount};

/// Index of a node in the host's node list.
pub type OwnerId = u16;

/// The owner of a segment nobody serves.
pub const NO_OWNER: OwnerId = OwnerId::MAX;

/// Why a key could not be routed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RouteError {
    /// The segment has no mapped owner: partition unavailable (retried after
    /// a map refresh).
    Unavailable {
        /// The segment without an owner.
        segment: u16,
    },
    /// The segment lies past the table: the map is mid-update (retried).
    MapMidUpdate {
        /// The segment asked for.
        segment: u16,
    },
}

impl RouteError {
    /// The retry loop's view of this error.
    #[must_use]
    pub const fn transport_failure(self) -> TransportFailure {
        match self {
            RouteError::Unavailable { .. } => TransportFailure::NoOwnerMapped,
            RouteError::MapMidUpdate { .. } => TransportFailure::MapMidUpdate,
        }
    }
}

impl fmt::Display for RouteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RouteError::Unavailable { segment } => {
                write!(
                    f,
                    "partition unavailable: no owner mapped for segment {segment}"
                )
            }
            RouteError::MapMidUpdate { segment } => {
                write!(
                    f,
                    "segment {segment} is past the routing table (map mid-update)"
                )
            }
        }
    }
}

impl core::error::Error for RouteError {}

/// A table whose size is not a valid segment count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableSizeError {
    /// The length that was refused.
    pub len: usize,
}

impl fmt::Display for TableSizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a routing table has 1 to 16384 segments, not {}",
            self.len
        )
    }
}

impl core::error::Error for TableSizeError {}

/// More distinct owners than the caller's container holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CapacityError {
    /// The container's capacity.
    pub capacity: usize,
}

impl fmt::Display for CapacityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "more than {} distinct owners", self.capacity)
    }
}

impl core::error::Error for CapacityError {}

/// "Slots `first_slot..=last_slot` are now served by `owner`": one push
/// event from a control plane, or one range of a refreshed map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct OwnershipChange {
    /// First slot of the range.
    pub first_slot: u16,
    /// Last slot of the range, inclusive.
    pub last_slot: u16,
    /// The new owner ([`NO_OWNER`] to unmap).
    pub owner: OwnerId,
}

/// Segment -> owner, over storage the caller owns.
///
/// ```
/// use zaris_core::{OwnershipChange, SegmentTable, NO_OWNER};
///
/// let mut table = SegmentTable::new([NO_OWNER; 16384]).unwrap();
/// table.apply(&OwnershipChange { first_slot: 0, last_slot: 8191, owner: 0 });
/// table.apply(&OwnershipChange { first_slot: 8192, last_slot: 16383, owner: 1 });
/// assert_eq!(table.owner_for_key(b"123456789"), Ok(1)); // slot 12739
/// let owners = table.distinct_owners::<4>().unwrap();
/// assert_eq!(owners.as_slice(), &[0, 1]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SegmentTable<S> {
    owners: S,
}

impl<S: AsRef<[OwnerId]>> SegmentTable<S> {
    /// Wraps `owners`, one entry per segment (its length is the segment count).
    ///
    /// # Errors
    /// [`TableSizeError`] unless the length is within `1..=16384`.
    pub fn new(owners: S) -> Result<Self, TableSizeError> {
        let len = owners.as_ref().len();
        match u16::try_from(len).ok().map(SegmentCount::new) {
            Some(Ok(_)) => Ok(Self { owners }),
            _ => Err(TableSizeError { len }),
        }
    }

    /// The segment count (the table's length).
    #[must_use]
    pub fn segment_count(&self) -> SegmentCount {
        // `new` checked the length.
        SegmentCount::clamped(self.owners.as_ref().len() as u16)
    }

    /// The owner entries, one per segment.
    #[must_use]
    pub fn owners(&self) -> &[OwnerId] {
        self.owners.as_ref()
    }

    /// Hands the storage back.
    pub fn into_inner(self) -> S {
        self.owners
    }

    /// The owner of `segment`.
    ///
    /// # Errors
    /// [`RouteError`] when the segment is unowned or past the table.
    #[inline]
    pub fn owner_of_segment(&self, segment: u16) -> Result<OwnerId, RouteError> {
        match self.owners.as_ref().get(usize::from(segment)) {
            Some(&NO_OWNER) => Err(RouteError::Unavailable { segment }),
            Some(&owner) => Ok(owner),
            None => Err(RouteError::MapMidUpdate { segment }),
        }
    }

    /// The owner of `slot`.
    ///
    /// # Errors
    /// [`RouteError::Unavailable`] when its segment is unowned.
    #[inline]
    pub fn owner_of_slot(&self, slot: u16) -> Result<OwnerId, RouteError> {
        self.owner_of_segment(segment_for_slot(slot, self.segment_count().get()))
    }

    /// The owner of `key`: one hash, one index.
    ///
    /// # Errors
    /// [`RouteError::Unavailable`] when the key's segment is unowned.
    #[inline]
    pub fn owner_for_key(&self, key: &[u8]) -> Result<OwnerId, RouteError> {
        self.owner_of_slot(slot_for_key(key))
    }

    /// The owner of a UTF-16 key (see [`slot_for_utf16`]).
    ///
    /// # Errors
    /// [`RouteError::Unavailable`] when the key's segment is unowned.
    pub fn owner_for_utf16(&self, units: &[u16]) -> Result<OwnerId, RouteError> {
        self.owner_of_slot(slot_for_utf16(units))
    }

    /// Maximal runs of consecutive segments with the same owner, in order.
    pub fn runs(&self) -> impl Iterator<Item = (Range<u16>, OwnerId)> + '_ {
        let owners = self.owners.as_ref();
        let mut start = 0usize;
        core::iter::from_fn(move || {
            let owner = *owners.get(start)?;
            let len = owners[start..].iter().take_while(|&&o| o == owner).count();
            let run = start as u16..(start + len) as u16;
            start += len;
            Some((run, owner))
        })
    }

    /// The distinct owners (unowned segments left out), in order of first
    /// appearance: the targets of a fan-out such as `SCAN`.
    ///
    /// # Errors
    /// [`CapacityError`] when there are more than `N`.
    pub fn distinct_owners<const N: usize>(
        &self,
    ) -> Result<heapless::Vec<OwnerId, N>, CapacityError> {
        let mut seen = heapless::Vec::new();
        for (_, owner) in self.runs() {
            if owner != NO_OWNER && !seen.contains(&owner) {
                seen.push(owner)
                    .map_err(|_| CapacityError { capacity: N })?;
            }
        }
        Ok(seen)
    }
}

impl<S: AsRef<[OwnerId]> + AsMut<[OwnerId]>> SegmentTable<S> {
    /// Points every segment in `segments` (clipped to the table) at `owner`,
    /// returning how many segments changed owner. Nothing changed, nothing
    /// written.
    pub fn assign_segments(&mut self, segments: RangeInclusive<u16>, owner: OwnerId) -> u16 {
        let table = self.owners.as_mut();
        let start = usize::from(*segments.start());
        let end = (usize::from(*segments.end()) + 1).min(table.len());
        let Some(range) = table.get_mut(start..end) else {
            return 0;
        };
        // A count, then a fill: both branch-free loops the compiler
        // vectorizes (a filtered loop took 0.5 ns a segment). A table holds
        // at most 16384 segments, so the count fits.
        let changed = range.iter().map(|&e| u16::from(e != owner)).sum();
        if changed > 0 {
            range.fill(owner);
        }
        changed
    }

    /// Applies an ownership change: the segments that hold any of its slots
    /// go to the new owner (with fewer segments than slots, a segment only
    /// partly covered moves too: a segment has one owner). Returns how many
    /// segments changed owner.
    pub fn apply(&mut self, change: &OwnershipChange) -> u16 {
        let n = self.segment_count().get();
        let (first, last) = if change.first_slot <= change.last_slot {
            (change.first_slot, change.last_slot)
        } else {
            (change.last_slot, change.first_slot)
        };
        let first = segment_for_slot(first.min(crate::SLOT_COUNT - 1), n);
        let last = segment_for_slot(last.min(crate::SLOT_COUNT - 1), n);
        self.assign_segments(first..=last, change.owner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn three_masters() -> SegmentTable<[OwnerId; 16384]> {
        let mut t = SegmentTable::new([NO_OWNER; 16384]).unwrap();
        // Redis's default split for three masters.
        t.apply(&OwnershipChange {
            first_slot: 0,
            last_slot: 5460,
            owner: 0,
        });
        t.apply(&OwnershipChange {
            first_slot: 5461,
            last_slot: 10922,
            owner: 1,
        });
        t.apply(&OwnershipChange {
            first_slot: 10923,
            last_slot: 16383,
            owner: 2,
        });
        t
    }

    #[test]
    fn routes_keys() {
        let t = three_masters();
        assert_eq!(t.owner_for_key(b"{user1000}.following"), Ok(0)); // slot 3443
        assert_eq!(t.owner_for_key(b"foo"), Ok(2)); // slot 12182
        assert_eq!(t.owner_of_slot(5461), Ok(1));
        let runs: heapless::Vec<_, 4> = t.runs().collect();
        assert_eq!(
            runs.as_slice(),
            &[(0..5461, 0), (5461..10923, 1), (10923..16384, 2)]
        );
    }

    #[test]
    fn changes_report_what_moved() {
        let mut t = three_masters();
        let change = OwnershipChange {
            first_slot: 5000,
            last_slot: 5460,
            owner: 3,
        };
        assert_eq!(t.apply(&change), 461);
        assert_eq!(t.apply(&change), 0, "nothing changed, nothing paid");
        assert_eq!(t.owner_of_slot(5000), Ok(3));
        assert_eq!(t.owner_of_slot(4999), Ok(0));
        assert_eq!(t.distinct_owners::<8>().unwrap().as_slice(), &[0, 3, 1, 2]);
        assert_eq!(t.distinct_owners::<3>(), Err(CapacityError { capacity: 3 }));
        // Reversed bounds are read as the same range.
        let back = OwnershipChange {
            first_slot: 5460,
            last_slot: 5000,
            owner: 0,
        };
        assert_eq!(t.apply(&back), 461);
    }

    #[test]
    fn unowned_and_out_of_table() {
        let mut t = three_masters();
        t.assign_segments(100..=100, NO_OWNER);
        assert_eq!(
            t.owner_of_segment(100),
            Err(RouteError::Unavailable { segment: 100 })
        );
        assert_eq!(
            RouteError::Unavailable { segment: 1 }.transport_failure(),
            TransportFailure::NoOwnerMapped
        );
        let mut small = SegmentTable::new([0u16; 4]).unwrap();
        assert_eq!(
            small.owner_of_segment(4),
            Err(RouteError::MapMidUpdate { segment: 4 })
        );
        assert_eq!(small.assign_segments(3..=60000, 9), 1);
        assert_eq!(small.assign_segments(10..=20, 9), 0);
        assert_eq!(small.owner_of_slot(16383), Ok(9));
        assert!(distinct_is(&small, &[0, 9]));
    }

    fn distinct_is(t: &SegmentTable<[OwnerId; 4]>, want: &[OwnerId]) -> bool {
        t.distinct_owners::<4>().is_ok_and(|v| v.as_slice() == want)
    }

    #[test]
    fn coarse_segments_take_partial_ranges() {
        let mut t = SegmentTable::new([0u16; 4]).unwrap();
        // Slot 4096 is the first slot of segment 1; 4095 the last of segment 0.
        assert_eq!(
            t.apply(&OwnershipChange {
                first_slot: 4095,
                last_slot: 4096,
                owner: 1
            }),
            2
        );
        assert_eq!(t.owners(), &[1, 1, 0, 0]);
    }

    #[test]
    fn sizes() {
        assert!(SegmentTable::new([0u16; 0]).is_err());
        assert_eq!(
            SegmentTable::new(&[0u16; 16385][..]).unwrap_err(),
            TableSizeError { len: 16385 }
        );
        assert_eq!(
            SegmentTable::new([0u16; 7]).unwrap().segment_count().get(),
            7
        );
    }
}
