//! The status vocabulary every Zaris component speaks (docs/behaviour.md §2).

use core::fmt;

/// What one request against a node produced.
///
/// Answers (`Ok`, `NotFound`, `Conflict`) are handed to the caller as they
/// are; the rest describe ownership churn and are retried, some after a map
/// refresh.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum KvStatus {
    /// Success.
    Ok,
    /// The key is not there: an answer, never retried.
    NotFound,
    /// A precondition (version, absence) failed: an answer, never retried.
    Conflict,
    /// This node does not own the segment; the caller's routing is stale.
    Moved,
    /// Ownership of the segment is being handed over right now.
    OwnershipChanging,
    /// This node holds the segment as a replica, not the active primary.
    ReplicaWriteRejected,
    /// The segment is mid-migration; writes are held briefly.
    Migrating,
    /// No reachable owner for the partition at this instant.
    Unavailable,
}

impl KvStatus {
    /// Every status, in declaration order.
    pub const ALL: [KvStatus; 8] = [
        KvStatus::Ok,
        KvStatus::NotFound,
        KvStatus::Conflict,
        KvStatus::Moved,
        KvStatus::OwnershipChanging,
        KvStatus::ReplicaWriteRejected,
        KvStatus::Migrating,
        KvStatus::Unavailable,
    ];

    /// Whether the status is an answer for the caller (never retried).
    #[must_use]
    pub const fn is_answer(self) -> bool {
        matches!(self, KvStatus::Ok | KvStatus::NotFound | KvStatus::Conflict)
    }

    /// Whether a request that got this status is tried again.
    #[must_use]
    pub const fn should_retry(self) -> bool {
        matches!(
            self,
            KvStatus::Moved
                | KvStatus::OwnershipChanging
                | KvStatus::ReplicaWriteRejected
                | KvStatus::Migrating
                | KvStatus::Unavailable
        )
    }

    /// Whether the routing map is refreshed before that retry.
    #[must_use]
    pub const fn requires_map_refresh(self) -> bool {
        matches!(
            self,
            KvStatus::Moved | KvStatus::OwnershipChanging | KvStatus::ReplicaWriteRejected
        )
    }

    /// The status's name as the wire and the logs spell it.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            KvStatus::Ok => "Ok",
            KvStatus::NotFound => "NotFound",
            KvStatus::Conflict => "Conflict",
            KvStatus::Moved => "Moved",
            KvStatus::OwnershipChanging => "OwnershipChanging",
            KvStatus::ReplicaWriteRejected => "ReplicaWriteRejected",
            KvStatus::Migrating => "Migrating",
            KvStatus::Unavailable => "Unavailable",
        }
    }
}

impl fmt::Display for KvStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a node answers for a segment it does not actively own: a hand-off
/// in progress must not look like a routing bug in the logs.
#[must_use]
pub const fn ownership_failure_status(transitioning: bool) -> KvStatus {
    if transitioning {
        KvStatus::OwnershipChanging
    } else {
        KvStatus::Moved
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use KvStatus::*;

    #[test]
    fn table_of_spec_section_2() {
        // (status, retry?, refresh first?)
        let table = [
            (Ok, false, false),
            (NotFound, false, false),
            (Conflict, false, false),
            (Moved, true, true),
            (OwnershipChanging, true, true),
            (ReplicaWriteRejected, true, true),
            (Migrating, true, false),
            (Unavailable, true, false),
        ];
        for (status, retry, refresh) in table {
            assert_eq!(status.should_retry(), retry, "{status}");
            assert_eq!(status.requires_map_refresh(), refresh, "{status}");
            assert_eq!(status.is_answer(), !retry, "{status}");
        }
        assert_eq!(KvStatus::ALL.len(), table.len());
    }

    #[test]
    fn server_rule() {
        assert_eq!(ownership_failure_status(true), OwnershipChanging);
        assert_eq!(ownership_failure_status(false), Moved);
    }
}
