//! What the faults did to the model, by name: each run counts them, in
//! all and per event (a fault that never took effect proves nothing, and
//! `campaign::proof_of` names the effect that proves each kind). One
//! enum, so that the compiler pairs every count with its name; the name
//! is what the report, the trace and the findings read.

/// One kind of effect a fault had on the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Effect {
    /// "NOSCRIPT answered"
    NoscriptAnswered,
    /// "sunsubscribed"
    Sunsubscribed,
    /// "full syncs"
    FullSyncs,
    /// "keys dropped by a full sync"
    KeysDroppedByFullSync,
    /// "writes a dead replica missed"
    WritesADeadReplicaMissed,
    /// "automatic failovers"
    AutomaticFailovers,
    /// "writes lost in a takeover"
    WritesLostInATakeover,
    /// "writes held by a pause"
    WritesHeldByAPause,
    /// "blocked commands let go by a demotion"
    BlockedLetGoByADemotion,
    /// "maps given from a partial view"
    MapsFromAPartialView,
    /// "MOVED answered"
    MovedAnswered,
    /// "ASK answered"
    AskAnswered,
    /// "TRYAGAIN answered"
    TryagainAnswered,
    /// "replies delayed by latency"
    RepliesDelayedByLatency,
    /// "bytes trickled"
    BytesTrickled,
    /// "manual failovers"
    ManualFailovers,
    /// "forced takeovers"
    ForcedTakeovers,
    /// "connections cut by a kill"
    ConnectionsCutByAKill,
    /// "masters added"
    MastersAdded,
    /// "new nodes deaf to a master for a while"
    NewNodesDeafToAMaster,
    /// "nodes joined at a new address"
    NodesJoinedAtANewAddress,
    /// "connections cut by a node forgotten"
    ConnectionsCutByANodeForgotten,
    /// "keys migrated"
    KeysMigrated,
    /// "atomic slot hand-overs"
    AtomicSlotHandOvers,
    /// "connections dropped"
    ConnectionsDropped,
    /// "write pauses"
    WritePauses,
    /// "atomic migrations given up"
    AtomicMigrationsGivenUp,
    /// "atomic slot migrations"
    AtomicSlotMigrations,
    /// "connections held by a freeze"
    ConnectionsHeldByAFreeze,
    /// "connections held by a partition"
    ConnectionsHeldByAPartition,
    /// "replies held by a one-way cut"
    RepliesHeldByAOneWayCut,
    /// "replies held by a freeze or partition"
    RepliesHeldByAFreezeOrPartition,
}

impl Effect {
    /// Every effect.
    pub const ALL: [Effect; 32] = [
        Effect::NoscriptAnswered,
        Effect::Sunsubscribed,
        Effect::FullSyncs,
        Effect::KeysDroppedByFullSync,
        Effect::WritesADeadReplicaMissed,
        Effect::AutomaticFailovers,
        Effect::WritesLostInATakeover,
        Effect::WritesHeldByAPause,
        Effect::BlockedLetGoByADemotion,
        Effect::MapsFromAPartialView,
        Effect::MovedAnswered,
        Effect::AskAnswered,
        Effect::TryagainAnswered,
        Effect::RepliesDelayedByLatency,
        Effect::BytesTrickled,
        Effect::ManualFailovers,
        Effect::ForcedTakeovers,
        Effect::ConnectionsCutByAKill,
        Effect::MastersAdded,
        Effect::NewNodesDeafToAMaster,
        Effect::NodesJoinedAtANewAddress,
        Effect::ConnectionsCutByANodeForgotten,
        Effect::KeysMigrated,
        Effect::AtomicSlotHandOvers,
        Effect::ConnectionsDropped,
        Effect::WritePauses,
        Effect::AtomicMigrationsGivenUp,
        Effect::AtomicSlotMigrations,
        Effect::ConnectionsHeldByAFreeze,
        Effect::ConnectionsHeldByAPartition,
        Effect::RepliesHeldByAOneWayCut,
        Effect::RepliesHeldByAFreezeOrPartition,
    ];

    /// Its name in the counts, the report and the trace.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Effect::NoscriptAnswered => "NOSCRIPT answered",
            Effect::Sunsubscribed => "sunsubscribed",
            Effect::FullSyncs => "full syncs",
            Effect::KeysDroppedByFullSync => "keys dropped by a full sync",
            Effect::WritesADeadReplicaMissed => "writes a dead replica missed",
            Effect::AutomaticFailovers => "automatic failovers",
            Effect::WritesLostInATakeover => "writes lost in a takeover",
            Effect::WritesHeldByAPause => "writes held by a pause",
            Effect::BlockedLetGoByADemotion => "blocked commands let go by a demotion",
            Effect::MapsFromAPartialView => "maps given from a partial view",
            Effect::MovedAnswered => "MOVED answered",
            Effect::AskAnswered => "ASK answered",
            Effect::TryagainAnswered => "TRYAGAIN answered",
            Effect::RepliesDelayedByLatency => "replies delayed by latency",
            Effect::BytesTrickled => "bytes trickled",
            Effect::ManualFailovers => "manual failovers",
            Effect::ForcedTakeovers => "forced takeovers",
            Effect::ConnectionsCutByAKill => "connections cut by a kill",
            Effect::MastersAdded => "masters added",
            Effect::NewNodesDeafToAMaster => "new nodes deaf to a master for a while",
            Effect::NodesJoinedAtANewAddress => "nodes joined at a new address",
            Effect::ConnectionsCutByANodeForgotten => "connections cut by a node forgotten",
            Effect::KeysMigrated => "keys migrated",
            Effect::AtomicSlotHandOvers => "atomic slot hand-overs",
            Effect::ConnectionsDropped => "connections dropped",
            Effect::WritePauses => "write pauses",
            Effect::AtomicMigrationsGivenUp => "atomic migrations given up",
            Effect::AtomicSlotMigrations => "atomic slot migrations",
            Effect::ConnectionsHeldByAFreeze => "connections held by a freeze",
            Effect::ConnectionsHeldByAPartition => "connections held by a partition",
            Effect::RepliesHeldByAOneWayCut => "replies held by a one-way cut",
            Effect::RepliesHeldByAFreezeOrPartition => "replies held by a freeze or partition",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Effect;

    #[test]
    fn every_effect_has_a_name_of_its_own() {
        let mut names: Vec<&str> = Effect::ALL.iter().map(|e| e.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Effect::ALL.len());
    }
}
