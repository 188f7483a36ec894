//! What the command table says of a command, as the servers describe it
//! in their `COMMAND` replies: flags, arity, key specifications, the
//! fallback procedure where the specs cannot say everything, and request
//! and response tips. `table.rs` is made of these; `index.rs` finds them
//! by name and `keys.rs` reads them.

/// Command flags the table keeps (from `COMMAND`), one bit each.
pub(crate) mod cmd {
    pub(crate) const WRITE: u32 = 1;
    pub(crate) const READONLY: u32 = 1 << 1;
    pub(crate) const DENYOOM: u32 = 1 << 2;
    pub(crate) const ADMIN: u32 = 1 << 3;
    pub(crate) const PUBSUB: u32 = 1 << 4;
    pub(crate) const NOSCRIPT: u32 = 1 << 5;
    pub(crate) const BLOCKING: u32 = 1 << 6;
    pub(crate) const LOADING: u32 = 1 << 7;
    pub(crate) const STALE: u32 = 1 << 8;
    pub(crate) const FAST: u32 = 1 << 9;
    pub(crate) const NO_MANDATORY_KEYS: u32 = 1 << 10;
    pub(crate) const MOVABLEKEYS: u32 = 1 << 11;
    pub(crate) const NO_MULTI: u32 = 1 << 12;
    pub(crate) const ALLOW_BUSY: u32 = 1 << 13;
    /// In the `@connection` ACL category.
    pub(crate) const CONNECTION: u32 = 1 << 14;
}

/// Key spec flags (from `COMMAND`), one bit each.
pub(crate) mod key {
    pub(crate) const RO: u16 = 1;
    pub(crate) const RW: u16 = 1 << 1;
    pub(crate) const OW: u16 = 1 << 2;
    pub(crate) const RM: u16 = 1 << 3;
    pub(crate) const ACCESS: u16 = 1 << 4;
    pub(crate) const UPDATE: u16 = 1 << 5;
    pub(crate) const INSERT: u16 = 1 << 6;
    pub(crate) const DELETE: u16 = 1 << 7;
    /// Not a key: a shard channel (`SPUBLISH`), routed like one.
    pub(crate) const NOT_KEY: u16 = 1 << 8;
    /// The spec may miss keys: the server falls back on its procedure.
    pub(crate) const INCOMPLETE: u16 = 1 << 9;
    /// The flags depend on the arguments: the server uses its procedure.
    pub(crate) const VARIABLE_FLAGS: u16 = 1 << 10;
}

/// A command as the servers describe it: the table's (`'static`), or
/// one learned from a server (`learned.rs`), borrowed from where it is kept.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Spec<'a> {
    pub(crate) name: &'a str,
    /// `n`: exactly `n` arguments (the name included); `-n`: at least `n`.
    pub(crate) arity: i8,
    pub(crate) flags: u32,
    pub(crate) fanout: Fanout,
    pub(crate) keys: &'a [KeySpec<'a>],
    pub(crate) fallback: Fallback,
    pub(crate) subcommands: &'a [Spec<'a>],
}

/// Where a key spec's search begins.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Begin<'a> {
    /// At this argument.
    Index(i8),
    /// After the first `keyword` found from `start_from` (negative: counted
    /// from the end, searching backwards).
    Keyword { keyword: &'a str, start_from: i8 },
    /// The spec cannot say.
    Unknown,
}

/// Which arguments from there are keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Find {
    /// `last_key` arguments on (negative: counted from the end), every
    /// `step`-th; with `limit` > 1 and `last_key` -1, only the first
    /// `1 / limit` of the rest (`XREAD ... STREAMS k1 k2 id1 id2`).
    Range { last_key: i8, step: i8, limit: i8 },
    /// A count at `key_num_index`, then that many keys from `first_key`.
    KeyNum {
        key_num_index: i8,
        first_key: i8,
        step: i8,
    },
    /// The spec cannot say.
    Unknown,
}

/// One key specification.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KeySpec<'a> {
    pub(crate) flags: u16,
    pub(crate) begin: Begin<'a>,
    pub(crate) find: Find,
}

/// The servers' own procedures, for when a command's specs cannot say
/// (they are C functions in the servers: `getkeys_proc`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Fallback {
    /// No procedure: no keys.
    None,
    /// `[store-key] numkeys key...` (`EVAL`, `ZUNIONSTORE`, `LMPOP`, ...):
    /// the count at `count`, the keys from `first`, and a store key at
    /// `store` (0: none).
    Generic { store: u8, count: u8, first: u8 },
    /// `SORT key ... [STORE key]`.
    Sort,
    /// `SORT_RO key ...`.
    SortRo,
    /// `MIGRATE host port key|"" db timeout [...] [KEYS key...]`.
    Migrate,
    /// `GEORADIUS key ... [STORE key] [STOREDIST key]`.
    Georadius,
    /// `XREAD [options] STREAMS key... id...`.
    Xread,
    /// The first argument (`SET`, `BITFIELD`, whose key flags vary).
    First,
}

/// Which nodes a keyless command goes to (the servers' request tips).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fanout {
    /// One node, any.
    None,
    /// Every master (`request_policy:all_shards`: `DBSIZE`, `KEYS`,
    /// `FLUSHALL`), their answers combined as the reply policy says.
    AllMasters(Reply),
    /// Every node, replicas too (`request_policy:all_nodes`: `SCRIPT
    /// LOAD`, `CONFIG SET`).
    AllNodes(Reply),
}

/// How the answers of a fanned-out command combine (the servers'
/// `response_policy` tips).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Reply {
    /// No policy: the caller gets each node's answer.
    EachNode,
    /// One answer, if every node succeeded (the first error otherwise).
    AllSucceeded,
    /// One answer, if any node succeeded.
    OneSucceeded,
    /// The sum of the integer answers (`DBSIZE`).
    Sum,
    /// `true` where all are (`SCRIPT EXISTS`, element by element).
    LogicalAnd,
    /// `true` where any is.
    LogicalOr,
    /// The least answer.
    Min,
    /// The greatest answer.
    Max,
    /// The command has its own way (`SCAN`, `RANDOMKEY`): each node's.
    Special,
}
