//! Commands the table lacks (a module's `FT.SEARCH`, a newer server's
//! `HGETEX`), learned from the cluster: `COMMAND INFO name` asked once per
//! client, read by the core (`learn_command`), then routed as the table's
//! commands are, flags and tips included. Where a description cannot say
//! which arguments are keys, the server says, per call (`COMMAND GETKEYS`).
//! A name no node knows is sent as it is, so that the server's own
//! "unknown command" reaches the caller.
//! What was learned is kept in `learned.rs`.

use std::sync::Arc;

use tokio::time::Instant;
use zaris_core::{keys_target, learn_command, CommandError, LearnedCommand, Target};

use super::join;
use super::plan::{refuse, to_learn, Info, Plan};
use crate::inner::Inner;
use crate::learned::{kept, Answer, Lookup};
use crate::{Error, Value};

impl Inner {
    /// [`Inner::route`] for any command: one the table lacks is learned
    /// from the cluster first (once per client; callers asking at once
    /// share one question), and one whose keys its description cannot
    /// find is routed by the server's `COMMAND GETKEYS`.
    pub(crate) async fn route_learning(
        self: &Arc<Self>,
        args: &[&[u8]],
    ) -> Result<(Target, Info), Error> {
        // A name, then perhaps its subcommand: two questions at most.
        for _ in 0..3 {
            let routed = self.route(args);
            if !to_learn(&routed) {
                return routed;
            }
            let keys_unknown = matches!(
                routed,
                Err(Error::Command {
                    error: CommandError::KeysNotDescribed,
                    ..
                })
            );
            match self.learned().lookup(args) {
                Lookup::Ask(name) => Box::pin(self.learn(&name)).await?,
                Lookup::Known(command) if keys_unknown => {
                    return Box::pin(self.route_by_server_keys(command, args)).await
                }
                // Learned meanwhile: route again.
                Lookup::Known(_) | Lookup::Unknown => {}
            }
        }
        self.route(args)
    }

    /// [`Inner::plan`] for any command, learning it first if need be.
    pub(crate) async fn plan_learning(
        self: &Arc<Self>,
        args: &[&[u8]],
    ) -> Result<(Plan, Info), Error> {
        refuse(args)?;
        let routed = self.route_learning(args).await;
        self.plan_routed(args, routed)
    }

    /// A command of the table's, for a question about another (no
    /// learning: it knows them all).
    async fn ask(self: &Arc<Self>, args: &[&[u8]]) -> Result<Value, Error> {
        let (plan, info) = self.plan(args)?;
        let planned = self.planned_as(plan, info, args)?;
        join(&planned.join, self.run_parts(&planned.parts).await)
    }

    /// Asks a node to describe `name`, and keeps its answer.
    async fn learn(self: &Arc<Self>, name: &[u8]) -> Result<(), Error> {
        let cell = self.learned().cell(name);
        cell.get_or_try_init(|| async {
            let reply = self.ask(&[b"COMMAND", b"INFO", name]).await?;
            let mut bytes = Vec::new();
            reply.write_resp(&mut bytes);
            let command = learn_command(&bytes).map_err(|e| Error::UnexpectedReply {
                command: "COMMAND INFO",
                reply: format!("{e} (for {})", String::from_utf8_lossy(name)),
            })?;
            tracing::debug!(
                command = %String::from_utf8_lossy(name),
                known = command.is_some(),
                "learned a command the table lacks"
            );
            Ok::<_, Error>(Answer {
                command: command.map(kept),
                at: Instant::now(),
            })
        })
        .await?;
        Ok(())
    }

    /// The route of a learned command whose keys the server finds:
    /// `COMMAND GETKEYS` on any node, then their slot. A line the server
    /// finds no keys in (or refuses) goes where a keyless one goes, and its
    /// server answers it.
    async fn route_by_server_keys(
        self: &Arc<Self>,
        command: &'static LearnedCommand,
        args: &[&[u8]],
    ) -> Result<(Target, Info), Error> {
        let mut line: Vec<&[u8]> = vec![b"COMMAND", b"GETKEYS"];
        line.extend_from_slice(args);
        let keys = match self.ask(&line).await {
            Ok(Value::Array(keys)) => keys,
            Ok(_) | Err(Error::Server(_)) => Vec::new(),
            Err(e) => return Err(e),
        };
        let info = command.info();
        keys_target(keys.iter().filter_map(Value::as_bytes), info.fanout())
            .map(|target| (target, info))
            .map_err(|e| Error::command(args, e))
    }
}
