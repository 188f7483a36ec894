//! One request under the core's retry machine: route it, send it on the
//! owner's connection, read the reply (`failure::read_reply`), and let
//! `RetryLoop` decide what each outcome means (docs/behaviour.md §2, §3,
//! §7): both bounds, the delays, `ASK` followed once with `ASKING`, a typed
//! final outcome. By job, each building on the ones after it: running
//! the rounds ([`run`]: requests run together, judged, the next round,
//! waits for an owner), sending ([`send`]: each node's share in one
//! write, room, the attempt's time-out, the verdict on its replies), a
//! call's state ([`round`]: `Round`), and the retry state ([`retry`]: a
//! request's loop and deadline, and what a round of failures asks of the
//! next).

mod retry;
mod round;
mod run;
mod send;

pub(crate) use retry::Retrying;
