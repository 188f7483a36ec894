//! Where a command goes, decided before anything is sent: refused (it
//! would change a shared connection), to one slot's owner, split by slot,
//! or to every master; and the requests it takes.

use bytes::{Bytes, BytesMut};
use zaris_core::{
    cached_read, command_info, command_keys, command_route, slot_for_key, Cacheable, CommandError,
    CommandInfo, Reply, Target, SLOT_COUNT,
};

use crate::codec::{room_for, write_command};
use crate::inner::Inner;
use crate::learned::Lookup;
use crate::route::{Packed, Route};
use crate::seam;
use crate::Error;

/// What the tables say of a command, for as long as the client runs (a
/// learned command's description is kept for the process).
pub(crate) type Info = CommandInfo<'static>;

/// A command no node knows, sent as it is for its server to refuse.
const UNKNOWN: Info = CommandInfo::unknown("unknown");

/// Whether a route failed for want of learning: a command (or subcommand)
/// the table lacks and this client has not learned, or a learned one whose
/// keys only its server can find.
pub(crate) fn to_learn<T>(routed: &Result<T, Error>) -> bool {
    matches!(
        routed,
        Err(Error::Command {
            error: CommandError::UnknownCommand
                | CommandError::UnknownSubcommand
                | CommandError::KeysNotDescribed,
            ..
        })
    )
}

/// Commands that change what a connection is for: refused on the shared,
/// multiplexed connections, with what to use instead.
const REFUSED: &[(&str, &str)] = &[
    (
        "subscribe",
        "it turns the connection into a push channel (sharded pub/sub: Client::ssubscribe)",
    ),
    ("psubscribe", "it turns the connection into a push channel"),
    (
        "ssubscribe",
        "use Client::ssubscribe, which keeps each channel on its slot's owner",
    ),
    ("unsubscribe", "it belongs to a subscription's connection"),
    ("punsubscribe", "it belongs to a subscription's connection"),
    (
        "sunsubscribe",
        "drop the Subscription from Client::ssubscribe",
    ),
    ("monitor", "it turns the connection into a feed"),
    ("sync", "it turns the connection into a replication stream"),
    ("psync", "it turns the connection into a replication stream"),
    (
        "multi",
        "use Client::transaction, which sends MULTI ... EXEC as one write",
    ),
    ("exec", "use Client::transaction"),
    ("discard", "use Client::transaction"),
    (
        "watch",
        "use Client::watch, which keeps the watch on a connection of its own",
    ),
    ("unwatch", "use Client::watch"),
    ("select", "a cluster has database 0 only"),
    ("swapdb", "a cluster has database 0 only"),
    (
        "auth",
        "every connection authenticates itself (Builder::auth)",
    ),
    (
        "hello",
        "the client picks each connection's protocol (Builder::protocol; RESP3 with the client cache)",
    ),
    ("reset", "it resets the connection other requests share"),
    ("quit", "it closes the connection other requests share"),
    ("readonly", "the client decides where reads go"),
    ("readwrite", "the client decides where reads go"),
    ("asking", "the client follows ASK redirects itself"),
    (
        "scan",
        "its cursor belongs to one node: use Client::scan, which walks every master",
    ),
];

/// The commands split by slot when their keys span slots, and how each
/// part's answer combines: `stride` arguments per key (`MSET` key value).
const SPLIT: &[(&str, usize, Merge)] = &[
    ("mget", 1, Merge::InOrder),
    ("mset", 2, Merge::Ok),
    ("del", 1, Merge::Sum),
    ("unlink", 1, Merge::Sum),
    ("exists", 1, Merge::Sum),
    ("touch", 1, Merge::Sum),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Merge {
    /// The parts' arrays, back in the order of the keys.
    InOrder,
    /// `OK` when every part said so.
    Ok,
    /// The sum of the parts' counts.
    Sum,
}

/// Where one command goes, decided before anything is sent.
pub(crate) enum Plan {
    /// One request, to a slot's owner (or, for a keyless command, to the
    /// owner of a slot picked in turn, so they spread over the masters).
    Slot(u16),
    /// One request to every master, the answers combined.
    Fanout(Reply),
    /// Parts by slot, the answers merged.
    Split { stride: usize, merge: Merge },
}

/// What [`Inner::encode_command`] wrote: its reply count, whether it
/// writes (so its `WAIT` is checked), whether it blocks (so it goes on a
/// connection of its own), whether a replica may serve it.
#[derive(Clone, Copy)]
pub(crate) struct Encoded {
    pub(crate) replies: usize,
    pub(crate) write: bool,
    pub(crate) blocking: bool,
    pub(crate) read: bool,
}

/// One request a command takes.
pub(crate) struct Part {
    pub(crate) route: Route,
    pub(crate) packed: Packed,
    /// A write: with durable writes its `WAIT` must count enough replicas.
    pub(crate) write: bool,
    /// How the client cache may answer it, when there is one.
    pub(crate) cached: Option<Cached>,
}

/// How the client cache answers a part.
pub(crate) enum Cached {
    /// A read of one key: its reply, stored under its command.
    One { key: Bytes, rule: Cacheable },
    /// One slot's part of `MGET`: each key's value, stored as the reply to
    /// `MGET key` (not `GET key`: `MGET` answers nil for a key of another
    /// type, where `GET` answers an error).
    EachKey(Vec<Bytes>),
}

/// How the answers of a command's parts make its value.
pub(crate) enum Join {
    /// One part: its answer.
    One,
    /// Parts by slot: `members[p]` are the key numbers part `p` carried.
    Merge {
        merge: Merge,
        members: Vec<Vec<usize>>,
        keys: usize,
    },
    /// One part per master, combined as the servers' tip says.
    Combine(Reply),
    /// `RANDOMKEY` on every master: a key from any that has one.
    AnyKey,
}

/// A command as the requests it takes and how their answers join.
pub(crate) struct Planned {
    pub(crate) parts: Vec<Part>,
    pub(crate) join: Join,
}

/// The entry of [`REFUSED`] for the command `name`, if any: this runs for
/// every command, so most are let through on their length and first letter
/// ([`REFUSED_SHAPES`]); the rest are lowered once, then compared as bytes.
fn refusal(name: &[u8]) -> Option<&'static (&'static str, &'static str)> {
    let shape = REFUSED_SHAPES.get(name.len()).copied().unwrap_or(0);
    let letter = name.first().map_or(0, |&c| {
        // `| 0x20` folds an ASCII letter to lowercase (anything else
        // lands anywhere: the compare below decides).
        1u32.checked_shl(u32::from((c | 0x20).wrapping_sub(b'a')))
            .unwrap_or(0)
    });
    if shape & letter == 0 {
        return None;
    }
    let mut lower = [0u8; 12];
    let lower = lower.get_mut(..name.len())?;
    for (to, from) in lower.iter_mut().zip(name) {
        *to = from.to_ascii_lowercase();
    }
    REFUSED
        .iter()
        .find(|(refused, _)| refused.as_bytes() == lower)
}

/// For each length of a refused name, the first letters of those that
/// long (bit 0: `a`): most commands pass on this alone, without a compare.
const REFUSED_SHAPES: [u32; 16] = refused_shapes();

const fn refused_shapes() -> [u32; 16] {
    let mut shapes = [0u32; 16];
    let mut i = 0;
    while i < REFUSED.len() {
        let name = REFUSED[i].0.as_bytes();
        shapes[name.len()] |= 1 << (name[0] - b'a');
        i += 1;
    }
    shapes
}

/// A command refused on the client's shared connections, with why.
#[inline]
pub(super) fn refuse(args: &[&[u8]]) -> Result<(), Error> {
    match refusal(args.first().copied().unwrap_or_default()) {
        Some(&(command, why)) => Err(Error::Unsupported {
            command: command.to_owned(),
            why,
        }),
        None => Ok(()),
    }
}

/// Whether `name` is `command`, in any case.
fn is(name: &[u8], command: &str) -> bool {
    name.eq_ignore_ascii_case(command.as_bytes())
}

impl Inner {
    /// Decides where `args` go, or why they go nowhere; with what the
    /// tables say of the command. A command the table lacks is planned as
    /// learned (`learn.rs`); one not learned yet is
    /// [`zaris_core::CommandError::UnknownCommand`] here, and
    /// [`Inner::plan_learning`] learns it.
    #[inline]
    pub(crate) fn plan(&self, args: &[&[u8]]) -> Result<(Plan, Info), Error> {
        refuse(args)?;
        match self.table_route(args) {
            // The table's commands: the common way, with no error to carry.
            Ok((target, info)) => Ok(self.plan_of(target, info)),
            Err(error) => self.plan_routed(args, self.route_otherwise(args, error)),
        }
    }

    /// Where `args` go: by the table, or by what this client learned of a
    /// command the table lacks. Not learned yet:
    /// [`CommandError::UnknownCommand`] (or `UnknownSubcommand`).
    #[inline]
    pub(crate) fn route(&self, args: &[&[u8]]) -> Result<(Target, Info), Error> {
        self.table_route(args)
            .or_else(|error| self.route_otherwise(args, error))
    }

    /// Where the table says `args` go (a command this client is taken not
    /// to know, `Builder::learn_instead`, is unknown to it).
    #[inline]
    fn table_route(&self, args: &[&[u8]]) -> Result<(Target, Info), CommandError> {
        let name = args.first().copied().unwrap_or_default();
        if self.learned().instead(name) {
            return Err(CommandError::UnknownCommand);
        }
        command_route(args)
    }

    /// [`Inner::route`] where the table cannot say: a learned command, or
    /// the table's error.
    #[cold]
    #[inline(never)]
    fn route_otherwise(
        &self,
        args: &[&[u8]],
        error: CommandError,
    ) -> Result<(Target, Info), Error> {
        // One server takes keys of any slots together, as it allows.
        let one_server =
            |routed: Result<(Target, Info), CommandError>, info: Option<Info>| match (routed, info)
            {
                (Err(CommandError::CrossSlot { first, .. }), Some(info))
                    if self.map().is_standalone() =>
                {
                    Ok((Target::Slot(first), info))
                }
                (routed, _) => routed,
            };
        let routed = match error {
            CommandError::UnknownCommand | CommandError::UnknownSubcommand => {
                match self.learned().lookup(args) {
                    Lookup::Known(command) => one_server(command.route(args), Some(command.info())),
                    Lookup::Unknown => Ok((Target::AnyNode, UNKNOWN)),
                    Lookup::Ask(_) => Err(error),
                }
            }
            error => one_server(Err(error), command_info(args)),
        };
        routed.map_err(|error| Error::command(args, error))
    }

    /// The plan for `args` routed so: a cross-slot command split where
    /// its meaning allows.
    #[inline]
    pub(super) fn plan_routed(
        &self,
        args: &[&[u8]],
        routed: Result<(Target, Info), Error>,
    ) -> Result<(Plan, Info), Error> {
        match routed {
            Ok((target, info)) => Ok(self.plan_of(target, info)),
            Err(Error::CrossSlot { first, second }) => {
                let name = args.first().copied().unwrap_or_default();
                match (
                    SPLIT.iter().find(|(split, ..)| is(name, split)),
                    command_info(args),
                ) {
                    (Some(&(_, stride, merge)), Some(info)) => {
                        Ok((Plan::Split { stride, merge }, info))
                    }
                    _ => Err(Error::CrossSlot { first, second }),
                }
            }
            Err(e) => Err(e),
        }
    }

    /// The plan for a command's target.
    #[inline]
    pub(super) fn plan_of(&self, target: Target, info: Info) -> (Plan, Info) {
        match target {
            Target::Slot(slot) => (Plan::Slot(slot), info),
            Target::AnyNode => {
                let turn = self.next_turn();
                // Step through the slots a master's share at a time.
                let slot = ((turn * 5461) % usize::from(SLOT_COUNT)) as u16;
                (Plan::Slot(slot), info)
            }
            Target::AllMasters(reply) | Target::AllNodes(reply) => (Plan::Fanout(reply), info),
        }
    }

    /// [`Inner::planned`] for a plan already made.
    pub(crate) fn planned_as(
        &self,
        plan: Plan,
        info: Info,
        args: &[&[u8]],
    ) -> Result<Planned, Error> {
        Ok(match plan {
            Plan::Slot(slot) => Planned {
                parts: vec![self.part(Route::Slot(slot), args, info)],
                join: Join::One,
            },
            Plan::Fanout(reply) => Planned {
                parts: self.master_parts(args, info),
                join: if reply == Reply::Special && is(args[0], "randomkey") {
                    Join::AnyKey
                } else {
                    Join::Combine(reply)
                },
            },
            Plan::Split { stride, merge } => {
                let positions: Vec<usize> = command_keys(args)
                    .map_err(|error| Error::command(args, error))?
                    .collect();
                let mut slots: Vec<u16> = Vec::new();
                let mut members: Vec<Vec<usize>> = Vec::new();
                let mut index: seam::HashMap<u16, usize> = seam::map();
                for (i, &at) in positions.iter().enumerate() {
                    let slot = slot_for_key(args[at]);
                    let p = *index.entry(slot).or_insert_with(|| {
                        slots.push(slot);
                        members.push(Vec::new());
                        members.len() - 1
                    });
                    members[p].push(i);
                }
                let parts = slots
                    .iter()
                    .zip(&members)
                    .map(|(&slot, keys)| {
                        let mut part: Vec<&[u8]> = vec![args[0]];
                        for &i in keys {
                            let at = positions[i];
                            part.extend_from_slice(&args[at..(at + stride).min(args.len())]);
                        }
                        self.part(Route::Slot(slot), &part, info)
                    })
                    .collect();
                Planned {
                    parts,
                    join: Join::Merge {
                        merge,
                        members,
                        keys: positions.len(),
                    },
                }
            }
        })
    }

    /// `args` as one request on `route`.
    pub(super) fn part(&self, route: Route, args: &[&[u8]], info: Info) -> Part {
        let mut bytes = room_for(args);
        let encoded = self.encode_command(&mut bytes, args, info);
        let cached = self
            .cache()
            .as_ref()
            .filter(|_| matches!(route, Route::Slot(_)))
            .and_then(|_| cached_as(args, info));
        Part {
            route,
            packed: Packed::new(info.name(), bytes.freeze(), encoded.replies)
                .flagged(encoded.blocking, encoded.read),
            write: encoded.write,
            cached,
        }
    }

    /// Appends `args` to `buf` as one request: followed by `WAIT` for a
    /// write when writes are durable.
    pub(crate) fn encode_command(&self, buf: &mut BytesMut, args: &[&[u8]], info: Info) -> Encoded {
        let blocking = info.is_blocking();
        let write = info.is_write() && !blocking;
        let read = info.is_read_only() && !blocking;
        write_command(buf, args);
        let replies = 1 + usize::from(write && self.append_wait(buf));
        Encoded {
            replies,
            write,
            blocking,
            read,
        }
    }

    /// `args` for every master of the map; with no map yet, one request
    /// the retry machine routes once it has found one.
    pub(super) fn master_parts(&self, args: &[&[u8]], info: Info) -> Vec<Part> {
        let owners = self.map().active_owners();
        if owners.is_empty() {
            return vec![self.part(Route::Slot(0), args, info)];
        }
        owners
            .into_iter()
            .map(|node| self.part(Route::Node(node), args, info))
            .collect()
    }
}

/// How the cache may answer `args`, if at all.
fn cached_as(args: &[&[u8]], info: Info) -> Option<Cached> {
    if info.name() == "mget" {
        return Some(Cached::EachKey(
            args[1..]
                .iter()
                .map(|k| Bytes::copy_from_slice(k))
                .collect(),
        ));
    }
    // The key and the rule from one look at the table, as the hit path
    // finds them.
    let (at, rule) = cached_read(args)?;
    Some(Cached::One {
        key: Bytes::copy_from_slice(args[at]),
        rule,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_commands_are_found_in_any_case() {
        assert!(REFUSED.iter().all(|(name, _)| name.len() <= 12));
        assert_eq!(refusal(b"SUBSCRIBE").map(|r| r.0), Some("subscribe"));
        assert_eq!(refusal(b"ScAn").map(|r| r.0), Some("scan"));
        assert_eq!(refusal(b"punsubscribe").map(|r| r.0), Some("punsubscribe"));
        assert_eq!(refusal(b"get"), None);
        assert_eq!(refusal(b"subscribe-with-a-long-name"), None);
        assert_eq!(refusal(b""), None);
        // Every entry, in every case, passes the length-and-letter filter.
        for &(name, _) in REFUSED {
            let upper = name.to_ascii_uppercase();
            let mixed: String = name
                .chars()
                .enumerate()
                .map(|(i, c)| {
                    if i % 2 == 0 {
                        c.to_ascii_uppercase()
                    } else {
                        c
                    }
                })
                .collect();
            for typed in [name, upper.as_str(), mixed.as_str()] {
                assert_eq!(refusal(typed.as_bytes()).map(|r| r.0), Some(name));
            }
        }
        for allowed in ["HSET", "SET", "slowlog", "SCRIPT", "Sync2", "@uth", "[ync"] {
            assert_eq!(refusal(allowed.as_bytes()), None, "{allowed}");
        }
    }
}
