//! Any command, routed by the keys the core finds in it: to one slot's
//! owner, to any node, or to every master with the answers combined as the
//! servers' tips say. Multi-key commands split by slot where their meaning
//! allows (`MGET`, `MSET`, `DEL`, `UNLINK`, `EXISTS`, `TOUCH`); the rest
//! must have all their keys in one slot.
//!
//! The API is here; `plan.rs` decides where a command goes (or why it
//! goes nowhere) and what requests it takes, `run.rs` sends them (through
//! the client cache where one answers), `join.rs` makes the command's
//! value of their answers.

use tracing::Instrument;
use zaris_core::command_has_keys;

use crate::route::Route;
use crate::{Client, Error, Value};

mod call;
mod join;
mod learn;
mod plan;
mod run;

pub(crate) use join::join;
pub(crate) use plan::{to_learn, Info, Join, Plan};

impl Client {
    /// Any command, e.g. `client.cmd(&["HSET", "k", "f", "v"])`: routed to
    /// the owner of its keys (found by the core in the servers' own key
    /// specifications), to any node when it has none, or to every master
    /// when the servers say so (`DBSIZE` answers the sum). Every retry and
    /// refresh rule of docs/behaviour.md holds.
    ///
    /// # Errors
    /// - [`Error::CrossSlot`]: keys in different slots, for a command that
    ///   cannot be split (nothing sent);
    /// - [`Error::Command`]: the wrong number of arguments, or a `numkeys`
    ///   that does not match them (nothing sent). A command the table lacks
    ///   is learned from the cluster first (`COMMAND INFO`, once per name);
    ///   a name no node knows gets the server's own refusal
    ///   ([`Error::Server`]);
    /// - [`Error::Unsupported`]: a command that would change the shared
    ///   connection (`SUBSCRIBE`, `MULTI`, `SELECT`, ...; nothing sent);
    /// - [`Error::Server`]: the server's own error reply (`WRONGTYPE`);
    /// - the last status or transport failure once the retries stop.
    pub async fn cmd<A: AsRef<[u8]>>(&self, args: &[A]) -> Result<Value, Error> {
        // The arguments as slices, on the stack for most commands (a cache
        // hit allocates nothing).
        let mut room: [&[u8]; 8] = [&[]; 8];
        let spilled: Vec<&[u8]>;
        let args: &[&[u8]] = if args.len() <= room.len() {
            for (slot, arg) in room.iter_mut().zip(args) {
                *slot = arg.as_ref();
            }
            &room[..args.len()]
        } else {
            spilled = args.iter().map(AsRef::as_ref).collect();
            &spilled
        };
        if let Some(hit) = self.inner.cache_hit(args) {
            return Ok(hit);
        }
        let name = args.first().map(|n| String::from_utf8_lossy(n));
        let span = tracing::debug_span!("zaris.cmd", command = name.as_deref().unwrap_or(""));
        self.inner.cmd(args).instrument(span).await
    }

    /// A keyless command on every master, each node's answer apart (by
    /// address, in the map's order): `INFO`, `CONFIG GET`, `MEMORY STATS`,
    /// or `DBSIZE` per shard rather than summed.
    ///
    /// # Errors
    /// Before sending: [`Error::Command`] as for [`Client::cmd`], and
    /// [`Error::Unsupported`] for a command with keys (they have one owner:
    /// use [`Client::cmd`]) or one refused on shared connections. Each
    /// node's own failure is in its entry.
    pub async fn cmd_each_master<A: AsRef<[u8]>>(
        &self,
        args: &[A],
    ) -> Result<Vec<(String, Result<Value, Error>)>, Error> {
        let args: Vec<&[u8]> = args.iter().map(AsRef::as_ref).collect();
        match self.inner.plan_learning(&args).await? {
            (Plan::Fanout(_), info) => Ok(self.inner.each_master(&args, info).await),
            (Plan::Slot(_), info) if !command_has_keys(&args) => {
                Ok(self.inner.each_master(&args, info).await)
            }
            (Plan::Slot(_) | Plan::Split { .. }, _) => Err(keys_have_one_owner(&args)),
        }
    }

    /// A keyless command on one node, named by its address as the map
    /// names it (a master or a replica: [`Client::slot_ranges`] lists
    /// them), and that node's own answer: `CLUSTER NODES`, `ROLE`, `INFO
    /// replication`. A dead connection is retried as any request is; the
    /// node was named, so no redirect is followed.
    ///
    /// # Errors
    /// Before sending: [`Error::Command`] as for [`Client::cmd`];
    /// [`Error::Unsupported`] for a command with keys (use
    /// [`Client::cmd`]) or one refused on shared connections;
    /// [`Error::Config`] for an address that is neither a seed nor in the
    /// map. Then the node's failure, as for [`Client::cmd`].
    pub async fn cmd_on_node<A: AsRef<[u8]>>(
        &self,
        node: &str,
        args: &[A],
    ) -> Result<Value, Error> {
        let args: Vec<&[u8]> = args.iter().map(AsRef::as_ref).collect();
        let (_, info) = self.inner.plan_learning(&args).await?;
        if command_has_keys(&args) {
            return Err(keys_have_one_owner(&args));
        }
        let Some(node) = self.inner.registry().known(node) else {
            return Err(Error::Config(format!(
                "{node} is not a node of this cluster (neither a seed nor in the map)"
            )));
        };
        let part = self.inner.part(Route::Node(node), &args, info);
        let mut answers = self.inner.run_parts(&[part]).await;
        answers
            .pop()
            .unwrap_or_else(|| unreachable!("one part, one answer"))
    }
}

/// A command with keys, refused where a node is chosen for it: its keys'
/// owner is the only node that can run it.
fn keys_have_one_owner(args: &[&[u8]]) -> Error {
    Error::Unsupported {
        command: String::from_utf8_lossy(args[0]).to_ascii_lowercase(),
        why: "its keys have one owner: use Client::cmd",
    }
}
