//! A command line from the API to its answer: planned (learned first,
//! if the table lacks it: `learn.rs`), its parts run (`run.rs`), their
//! answers joined (`join.rs`).

use std::sync::Arc;

use super::join;
use super::plan::Planned;
use crate::inner::Inner;
use crate::pool::Node;
use crate::route::Noting;
use crate::{Error, Value};

impl Inner {
    /// `args` from the API: its requests run and their answers joined.
    pub(crate) async fn cmd(self: &Arc<Self>, args: &[&[u8]]) -> Result<Value, Error> {
        let planned = self.planned(args).await?;
        let answers = self.run_parts(&planned.parts).await;
        join(&planned.join, answers)
    }

    /// `args`, a command with one owner (its keys' slot), and the node
    /// that answered it (after an `ASKING` too): for a caller that acts on
    /// that node after its answer (a function library it lacked is loaded
    /// there). Other commands run as [`Inner::cmd`] runs them, answered by
    /// no one node.
    pub(crate) async fn cmd_answered_by(
        self: &Arc<Self>,
        args: &[&[u8]],
    ) -> (Result<Value, Error>, Option<Arc<Node>>) {
        let planned = match self.planned(args).await {
            Ok(planned) => planned,
            Err(e) => return (Err(e), None),
        };
        let [part] = &planned.parts[..] else {
            let answers = self.run_parts(&planned.parts).await;
            return (join(&planned.join, answers), None);
        };
        let requests = [(part.route.clone(), part.packed.clone())];
        let noting = Noting::new(&requests[..]);
        let mut answer = None;
        self.execute_all(&noting, |_, result| {
            answer = Some(result.and_then(|r| self.answer(part.write, r)));
        })
        .await;
        let answer = answer.unwrap_or_else(|| unreachable!("every request ends with a result"));
        (answer, noting.by(0).map(|(node, _)| node))
    }

    /// `args` as the requests they take: one, one per master, or one per
    /// slot of their keys.
    pub(crate) async fn planned(self: &Arc<Self>, args: &[&[u8]]) -> Result<Planned, Error> {
        let (plan, info) = self.plan_learning(args).await?;
        self.planned_as(plan, info, args)
    }
}
