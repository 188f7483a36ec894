//! What a router needs from a command's description: where its line goes
//! ([`Target`], by the slot of its keys or the servers' tips) and what the
//! command is ([`CommandInfo`]: reads, writes, blocks), for the table's
//! commands and learned ones alike.

use super::error::CommandError;
use super::spec::{cmd, Fanout, Reply, Spec};
use crate::slot_for_key;

/// Where a command line must go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// To the owner of this slot: every key of the command hashes to it.
    Slot(u16),
    /// To any node: no keys, no fan-out (`PING`, `ECHO`, `EVAL` of no key).
    AnyNode,
    /// To every master, answers combined as the [`Reply`] says.
    AllMasters(Reply),
    /// To every node, replicas included.
    AllNodes(Reply),
}

/// What the tables (or a server, for a
/// [`LearnedCommand`](super::LearnedCommand)) say of a command: the
/// servers' flags, for a client that treats reads, writes and blocking
/// commands differently. `'a` is where its name lives: `'static`
/// for the table's commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommandInfo<'a> {
    name: &'a str,
    flags: u32,
    fanout: Fanout,
}

impl<'a> CommandInfo<'a> {
    pub(super) fn of(spec: &Spec<'a>) -> Self {
        Self {
            name: spec.name,
            flags: spec.flags,
            fanout: spec.fanout,
        }
    }

    /// A command no one describes (no node knows it either): no flags, no
    /// fan-out. Sent as it is, its server says what it thinks of it.
    #[must_use]
    pub const fn unknown(name: &'a str) -> Self {
        Self {
            name,
            flags: 0,
            fanout: Fanout::None,
        }
    }

    /// The same command under a name kept elsewhere (a client that keeps
    /// one copy of each learned name).
    #[must_use]
    pub fn named<'b>(self, name: &'b str) -> CommandInfo<'b> {
        CommandInfo {
            name,
            flags: self.flags,
            fanout: self.fanout,
        }
    }
}

impl<'a> CommandInfo<'a> {
    /// The command's name (a subcommand's without its container's).
    #[must_use]
    pub fn name(&self) -> &'a str {
        self.name
    }

    /// It may change data (`write`): only a primary takes it.
    #[must_use]
    pub fn is_write(&self) -> bool {
        self.flags & cmd::WRITE != 0
    }

    /// It only reads data (`readonly`): a replica may answer it.
    #[must_use]
    pub fn is_read_only(&self) -> bool {
        self.flags & cmd::READONLY != 0
    }

    /// It may block the connection (`BLPOP`, `XREAD BLOCK`).
    #[must_use]
    pub fn is_blocking(&self) -> bool {
        self.flags & cmd::BLOCKING != 0
    }

    /// A pub/sub command, which changes what the connection receives.
    #[must_use]
    pub fn is_pubsub(&self) -> bool {
        self.flags & cmd::PUBSUB != 0
    }

    /// It may not run inside `MULTI` (`no_multi`).
    #[must_use]
    pub fn refused_in_transactions(&self) -> bool {
        self.flags & cmd::NO_MULTI != 0
    }

    /// Which nodes it goes to when it has no keys.
    #[must_use]
    pub fn fanout(&self) -> Fanout {
        self.fanout
    }
}

/// Where a command with these keys goes: their one slot, or, with none, as
/// its `fanout` says. For keys found elsewhere (the server's `COMMAND
/// GETKEYS`, for a [`LearnedCommand`](super::LearnedCommand) whose description cannot say).
///
/// # Errors
/// [`CommandError::CrossSlot`]: the keys hash to different slots.
#[inline]
pub fn keys_target<'k>(
    keys: impl IntoIterator<Item = &'k [u8]>,
    fanout: Fanout,
) -> Result<Target, CommandError> {
    let mut slot = None;
    for key in keys {
        let key_slot = slot_for_key(key);
        match slot {
            None => slot = Some(key_slot),
            Some(first) if first != key_slot => {
                return Err(CommandError::CrossSlot {
                    first,
                    second: key_slot,
                })
            }
            Some(_) => {}
        }
    }
    Ok(match (slot, fanout) {
        (Some(slot), _) => Target::Slot(slot),
        (None, Fanout::None) => Target::AnyNode,
        (None, Fanout::AllMasters(reply)) => Target::AllMasters(reply),
        (None, Fanout::AllNodes(reply)) => Target::AllNodes(reply),
    })
}
