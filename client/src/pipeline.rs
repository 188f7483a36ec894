//! Pipelines across slots: every node gets its share of the commands in one
//! write, and the replies come back in the order the commands were added.
//! A command that meets `MOVED`, `ASK`, `TRYAGAIN` (or a dead socket) is
//! retried under its own retry loop, without sending the others again.

use std::sync::Arc;

use bytes::BytesMut;
use smallvec::SmallVec;
use tracing::Instrument;

use crate::client::Inner;
use crate::command::{join, Plan, Planned};
use crate::request::{Packed, Route};
use crate::{Client, Error, Value};

/// Commands collected to run together (see [`Client::pipeline`]).
///
/// ```no_run
/// # async fn demo(client: zaris_client::Client) -> Result<(), zaris_client::Error> {
/// let mut pipeline = client.pipeline();
/// pipeline.cmd(&["SET", "a", "1"]).cmd(&["HSET", "h", "f", "v"]).cmd(&["GET", "a"]);
/// let replies = pipeline.run().await?; // one result per command, in order
/// assert_eq!(replies.len(), 3);
/// # Ok(()) }
/// ```
pub struct Pipeline {
    inner: Arc<Inner>,
    /// The single-request commands, encoded back to back as they come.
    bytes: BytesMut,
    entries: Vec<Entry>,
}

/// A command added to a pipeline.
enum Entry {
    /// One request: its bytes end at `end` in the pipeline's buffer.
    One {
        end: usize,
        slot: u16,
        replies: usize,
        write: bool,
        blocking: bool,
    },
    /// Several requests (a split `MGET`, a command for every master).
    Many(Planned),
    /// Refused before sending.
    Refused(Error),
}

impl Client {
    /// An empty pipeline: commands for any keys, sent to their owners with
    /// one write per node.
    #[must_use]
    pub fn pipeline(&self) -> Pipeline {
        Pipeline {
            inner: self.inner.clone(),
            bytes: BytesMut::new(),
            entries: Vec::new(),
        }
    }
}

impl Pipeline {
    /// Adds a command (any arguments that are bytes). It is routed and
    /// encoded now; a command that cannot run (unknown, cross-slot) gets
    /// its error in its place in [`Pipeline::run`]'s results.
    pub fn cmd<A: AsRef<[u8]>>(&mut self, args: &[A]) -> &mut Self {
        let args: SmallVec<[&[u8]; 8]> = args.iter().map(AsRef::as_ref).collect();
        let entry = match self.inner.plan(&args) {
            Ok((Plan::Slot(slot), info)) => {
                let (replies, write, blocking) =
                    self.inner.encode_command(&mut self.bytes, &args, info);
                Entry::One {
                    end: self.bytes.len(),
                    slot,
                    replies,
                    write,
                    blocking,
                }
            }
            Ok((plan, info)) => match self.inner.planned_as(plan, info, &args) {
                Ok(planned) => Entry::Many(planned),
                Err(e) => Entry::Refused(e),
            },
            Err(e) => Entry::Refused(e),
        };
        self.entries.push(entry);
        self
    }

    /// How many commands wait.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether none wait.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Sends every command (the pipeline is emptied) and returns one result
    /// per command, in the order they were added.
    ///
    /// Each command becomes the requests [`Client::cmd`] would make (one,
    /// one per slot of a split `MGET`, one per master), and all of them go
    /// out at once: every node gets its share in one write, in order. The
    /// requests to retry (`MOVED`, `ASK`, `TRYAGAIN`, a lost connection)
    /// go again together, each under its own retry loop, in their order;
    /// the others are not sent again. Commands on one key keep their order;
    /// a command retried after `TRYAGAIN` may see writes that came after it
    /// in the pipeline. A blocking command runs on a connection of its own,
    /// alongside.
    ///
    /// # Errors
    /// None today for the pipeline as a whole: each command's failure
    /// (cross-slot, unknown, the server's error, the last status once its
    /// retries stop) is its own result.
    pub async fn run(&mut self) -> Result<Vec<Result<Value, Error>>, Error> {
        let entries = std::mem::take(&mut self.entries);
        let bytes = std::mem::take(&mut self.bytes).freeze();
        let inner = &self.inner;
        let mut requests: Vec<(Route, Packed)> = Vec::with_capacity(entries.len());
        // For each request, whether it writes (its `WAIT` to check).
        let mut writes: Vec<bool> = Vec::with_capacity(entries.len());
        let mut start = 0;
        for entry in &entries {
            match entry {
                &Entry::One {
                    end,
                    slot,
                    replies,
                    write,
                    blocking,
                } => {
                    let packed = Packed {
                        name: "COMMAND",
                        bytes: bytes.slice(start..end),
                        replies,
                        blocking,
                    };
                    requests.push((Route::Slot(slot), packed));
                    writes.push(write);
                    start = end;
                }
                Entry::Many(planned) => {
                    for part in &planned.parts {
                        requests.push((part.route.clone(), part.packed.clone()));
                        writes.push(part.write);
                    }
                }
                Entry::Refused(_) => {}
            }
        }
        let span = tracing::debug_span!("zaris.pipeline", commands = entries.len());
        let mut answers: Vec<Option<Result<Value, Error>>> =
            requests.iter().map(|_| None).collect();
        inner
            .execute_all(&requests, |i, replies| {
                answers[i] = Some(replies.and_then(|r| inner.answer(writes[i], r)));
            })
            .instrument(span)
            .await;
        let mut answers = answers
            .into_iter()
            .map(|a| a.unwrap_or_else(|| unreachable!("every request ends with a result")));
        let mut next = || answers.next().unwrap_or_else(|| unreachable!("in step"));
        Ok(entries
            .into_iter()
            .map(|entry| match entry {
                Entry::One { .. } => next(),
                Entry::Many(planned) => {
                    let answers = planned.parts.iter().map(|_| next()).collect();
                    join(&planned.join, answers)
                }
                Entry::Refused(e) => Err(e),
            })
            .collect())
    }
}
