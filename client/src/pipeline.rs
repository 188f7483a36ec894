//! Pipelines across slots: every node gets its share of the commands in one
//! write, and the replies come back in the order the commands were added.
//! A command that meets `MOVED`, `ASK`, `TRYAGAIN` (or a dead socket) is
//! retried under its own retry loop, without sending the others again.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use smallvec::SmallVec;
use tracing::Instrument;

use crate::codec::encoded_len;
use crate::command::{join, to_learn, Info, Join, Plan};
use crate::inner::Inner;
use crate::route::{Requests, Route};
use crate::script::{is_noscript, Script};
use crate::stats::Counters;
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
    pub(crate) inner: Arc<Inner>,
    /// Every request, encoded back to back as the commands come.
    bytes: BytesMut,
    /// Every request, in order: where its bytes end, where it goes.
    requests: Vec<Request>,
    /// How many commands were added.
    commands: usize,
    /// The commands that are not one request each (split, fanned out,
    /// refused), by place; most pipelines have none.
    uncommon: Vec<(usize, Command)>,
    /// Script entries (their place, and their `EVAL`) to send again if
    /// answered `NOSCRIPT`.
    fallbacks: Vec<(usize, Vec<Vec<u8>>)>,
    /// Commands added from the first one the client must learn (a command
    /// the table lacks) on, in order: planned when the pipeline runs, once
    /// learned, so that the order holds.
    waiting: Vec<Vec<Vec<u8>>>,
}

/// One request of a pipeline.
struct Request {
    /// Its bytes end here in the pipeline's buffer (and start where the
    /// previous request's end).
    end: usize,
    route: Route,
    name: &'static str,
    replies: u8,
    write: bool,
    blocking: bool,
    read: bool,
}

/// A command added to a pipeline that is not one request.
enum Command {
    /// Several requests (a split `MGET`, a command for every master), and
    /// how their answers join.
    Many { parts: usize, join: Join },
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
            requests: Vec::new(),
            commands: 0,
            uncommon: Vec::new(),
            fallbacks: Vec::new(),
            waiting: Vec::new(),
        }
    }
}

impl Pipeline {
    /// Adds a command (any arguments that are bytes). It is routed and
    /// encoded now; a command that cannot run (unknown, cross-slot) gets
    /// its error in its place in [`Pipeline::run`]'s results.
    pub fn cmd<A: AsRef<[u8]>>(&mut self, args: &[A]) -> &mut Self {
        let args: SmallVec<[&[u8]; 8]> = args.iter().map(AsRef::as_ref).collect();
        if self.waiting.is_empty() {
            match self.inner.plan(&args) {
                // Most commands: one request to a slot's owner.
                Ok((Plan::Slot(slot), info)) => return self.add_one(&args, slot, info),
                plan if !to_learn(&plan) => return self.add(&args, plan),
                _ => {}
            }
        }
        self.wait_for_learning(&args)
    }

    /// Adds `args` as one request to `slot`'s owner.
    #[inline(always)]
    fn add_one(&mut self, args: &[&[u8]], slot: u16, info: Info) -> &mut Self {
        if self.requests.capacity() == 0 {
            self.make_room(args);
        }
        let encoded = self.inner.encode_command(&mut self.bytes, args, info);
        self.requests.push(Request {
            end: self.bytes.len(),
            route: Route::Slot(slot),
            name: info.name(),
            replies: encoded.replies as u8,
            write: encoded.write,
            blocking: encoded.blocking,
            read: encoded.read,
        });
        self.commands += 1;
        self
    }

    /// The commands kept for learning, learned and added, in order.
    #[cold]
    async fn plan_waiting(&mut self) {
        for args in std::mem::take(&mut self.waiting) {
            let args: SmallVec<[&[u8]; 8]> = args.iter().map(Vec::as_slice).collect();
            let plan = self.inner.plan_learning(&args).await;
            self.add(&args, plan);
        }
    }

    /// Keeps `args` until the pipeline runs: it, or a command before it,
    /// is one the client must learn first.
    #[cold]
    fn wait_for_learning(&mut self, args: &[&[u8]]) -> &mut Self {
        self.waiting
            .push(args.iter().map(|arg| arg.to_vec()).collect());
        self
    }

    /// Adds `args`, planned so.
    fn add(&mut self, args: &[&[u8]], plan: Result<(Plan, Info), Error>) -> &mut Self {
        let command = match plan {
            Ok((Plan::Slot(slot), info)) => return self.add_one(args, slot, info),
            Ok((plan, info)) => {
                if self.requests.capacity() == 0 {
                    self.make_room(args);
                }
                match self.inner.planned_as(plan, info, args) {
                    Ok(planned) => {
                        for part in &planned.parts {
                            self.bytes.extend_from_slice(&part.packed.bytes);
                            self.requests.push(Request {
                                end: self.bytes.len(),
                                route: part.route.clone(),
                                name: part.packed.name,
                                replies: part.packed.replies as u8,
                                write: part.write,
                                blocking: part.packed.blocking,
                                read: part.packed.read,
                            });
                        }
                        Command::Many {
                            parts: planned.parts.len(),
                            join: planned.join,
                        }
                    }
                    Err(e) => Command::Refused(e),
                }
            }
            Err(e) => Command::Refused(e),
        };
        self.uncommon.push((self.commands, command));
        self.commands += 1;
        self
    }

    /// The first command's room: a pipeline is seldom one command, and
    /// growing its buffers a doubling at a time from nothing moved each of
    /// them half a dozen times on the way to a hundred. Room for
    /// [`FIRST_ROOM`] like this one.
    fn make_room(&mut self, args: &[&[u8]]) {
        self.bytes.reserve(FIRST_ROOM * encoded_len(args));
        self.requests.reserve(FIRST_ROOM);
    }

    /// How many commands wait.
    #[must_use]
    pub fn len(&self) -> usize {
        self.commands + self.waiting.len()
    }

    /// Whether none wait.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
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
        if !self.waiting.is_empty() {
            // Boxed: a pipeline that waits for nothing carries none of it.
            Box::pin(self.plan_waiting()).await;
        }
        let batch = Batch {
            bytes: std::mem::take(&mut self.bytes).freeze(),
            requests: std::mem::take(&mut self.requests),
        };
        let commands = std::mem::take(&mut self.commands);
        let uncommon = std::mem::take(&mut self.uncommon);
        let fallbacks = std::mem::take(&mut self.fallbacks);
        let inner = &self.inner;
        let span = tracing::debug_span!("zaris.pipeline", commands);
        // One answer per request, in place.
        let mut answers: Vec<Result<Value, Error>> =
            batch.requests.iter().map(|_| Ok(Value::Nil)).collect();
        inner
            .execute_all(&batch, |i, replies| {
                answers[i] = replies.and_then(|r| inner.answer(batch.requests[i].write, r));
            })
            .instrument(span)
            .await;
        let mut results = if uncommon.is_empty() {
            answers
        } else {
            let mut answers = answers.into_iter();
            let mut uncommon = uncommon.into_iter().peekable();
            (0..commands)
                .map(|at| match uncommon.next_if(|(place, _)| *place == at) {
                    None => answers.next().unwrap_or(Ok(Value::Nil)),
                    Some((_, Command::Many { parts, join: how })) => {
                        join(&how, answers.by_ref().take(parts).collect())
                    }
                    Some((_, Command::Refused(e))) => Err(e),
                })
                .collect()
        };
        if !fallbacks.is_empty() {
            self.run_fallbacks(fallbacks, &mut results).await;
        }
        Ok(results)
    }

    /// A client on the same shared state.
    pub(crate) fn client(&self) -> Client {
        Client {
            inner: self.inner.clone(),
        }
    }
}

impl Pipeline {
    /// Adds `script` with `keys` and `args`: `EVALSHA` in the pipeline; an
    /// entry answered `NOSCRIPT` is sent again as `EVAL` once the pipeline
    /// has run (so it runs after the pipeline's other commands on its node).
    pub fn invoke<K: AsRef<[u8]>, A: AsRef<[u8]>>(
        &mut self,
        script: &Script,
        keys: &[K],
        args: &[A],
    ) -> &mut Self {
        let at = self.len();
        self.cmd(&script.command(false, keys, args));
        self.fallbacks.push((at, script.command(true, keys, args)));
        self
    }

    /// After a run: the script entries answered `NOSCRIPT`, sent again as
    /// `EVAL` together, their answers put in place.
    async fn run_fallbacks(
        &mut self,
        fallbacks: Vec<(usize, Vec<Vec<u8>>)>,
        results: &mut [Result<Value, Error>],
    ) {
        let missing: Vec<(usize, Vec<Vec<u8>>)> = fallbacks
            .into_iter()
            .filter(|(at, _)| results.get(*at).is_some_and(is_noscript))
            .collect();
        if missing.is_empty() {
            return;
        }
        for _ in &missing {
            Counters::bump(&self.inner.counters().noscript_fallbacks);
        }
        let mut again = self.client().pipeline();
        for (_, command) in &missing {
            again.cmd(command);
        }
        let Ok(answers) = Box::pin(again.run()).await else {
            return;
        };
        for ((at, _), answer) in missing.into_iter().zip(answers) {
            results[at] = answer;
        }
    }
}

/// How many commands a pipeline makes room for at its first.
const FIRST_ROOM: usize = 32;

/// A pipeline's requests, as [`Inner::execute_all`] takes them.
struct Batch {
    bytes: Bytes,
    requests: Vec<Request>,
}

impl Batch {
    fn start(&self, i: usize) -> usize {
        i.checked_sub(1).map_or(0, |p| self.requests[p].end)
    }
}

impl Requests for Batch {
    fn count(&self) -> usize {
        self.requests.len()
    }

    fn route(&self, i: usize) -> &Route {
        &self.requests[i].route
    }

    fn name(&self, i: usize) -> &'static str {
        self.requests[i].name
    }

    fn bytes(&self, i: usize) -> &[u8] {
        &self.bytes[self.start(i)..self.requests[i].end]
    }

    fn replies(&self, i: usize) -> usize {
        usize::from(self.requests[i].replies)
    }

    fn blocking(&self, i: usize) -> bool {
        self.requests[i].blocking
    }

    fn read(&self, i: usize) -> bool {
        self.requests[i].read
    }
}
