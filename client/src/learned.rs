//! What a client learned of the commands its table lacks (a module's
//! `FT.SEARCH`, a newer server's `HGETEX`): each name's description, as a
//! node gave it to `COMMAND INFO` and the core read it, asked once per
//! client (callers asking at once share one question). The asking and the
//! routing are `command/learn.rs`'s.
//!
//! A process keeps one copy of each description it learns (a few hundred
//! bytes, as many as the servers describe), so that a plan can name it for
//! as long as it likes.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::OnceCell;
use tokio::time::Instant;
use zaris_core::LearnedCommand;

use crate::seam;

/// How long "no node knows this name" stands before a node is asked again
/// (a module loaded since, a rolling upgrade).
const UNKNOWN_FOR: Duration = Duration::from_secs(5);

/// Descriptions learned by this client, by lowercase name (`name|sub` for
/// a subcommand).
pub(crate) struct Learned {
    by_name: Mutex<seam::HashMap<Vec<u8>, Arc<OnceCell<Answer>>>>,
    /// Names the table is taken not to know (`Builder::learn_instead`).
    instead: Vec<Vec<u8>>,
}

/// A node's answer: the description, or none (it does not know the name).
#[derive(Clone, Copy)]
pub(crate) struct Answer {
    pub(crate) command: Option<&'static LearnedCommand>,
    pub(crate) at: Instant,
}

/// What this client knows of a name the table lacks.
pub(crate) enum Lookup {
    Known(&'static LearnedCommand),
    /// A node said it knows no such command, a moment ago.
    Unknown,
    /// Not asked yet (or asked too long ago): ask for this name.
    Ask(Vec<u8>),
}

impl Learned {
    pub(crate) fn new(instead: Vec<Vec<u8>>) -> Self {
        Self {
            by_name: Mutex::new(seam::map()),
            instead,
        }
    }

    /// Whether the table is to be taken not to know `name`.
    #[inline]
    pub(crate) fn instead(&self, name: &[u8]) -> bool {
        !self.instead.is_empty() && self.instead.iter().any(|n| n.eq_ignore_ascii_case(name))
    }

    fn answer(&self, name: &[u8]) -> Option<Answer> {
        let by_name = self.by_name.lock().unwrap_or_else(PoisonError::into_inner);
        by_name.get(name).and_then(|cell| cell.get().copied())
    }

    /// What is known of the command `args` names: by its name, or by
    /// `name|sub` when the table knows the command but not its subcommand
    /// (`args[1]`), or the learned command has subcommands.
    pub(crate) fn lookup(&self, args: &[&[u8]]) -> Lookup {
        let mut name = args[0].to_ascii_lowercase();
        let container = args.len() > 1
            && !self.instead(args[0])
            && zaris_core::command_info(&args[..1]).is_some();
        if !container {
            match self.answer(&name) {
                Some(Answer {
                    command: Some(command),
                    ..
                }) if !command.is_container() || args.len() < 2 => return Lookup::Known(command),
                Some(Answer {
                    command: Some(_), ..
                }) => {}
                Some(Answer { command: None, at }) if at.elapsed() < UNKNOWN_FOR => {
                    return Lookup::Unknown
                }
                _ => return Lookup::Ask(name),
            }
        }
        name.push(b'|');
        name.extend(args[1].iter().map(u8::to_ascii_lowercase));
        match self.answer(&name) {
            Some(Answer {
                command: Some(command),
                ..
            }) => Lookup::Known(command),
            Some(Answer { command: None, at }) if at.elapsed() < UNKNOWN_FOR => Lookup::Unknown,
            _ => Lookup::Ask(name),
        }
    }

    /// The cell `name`'s answer goes in: a fresh one when the last answer
    /// was "unknown" and is stale.
    pub(crate) fn cell(&self, name: &[u8]) -> Arc<OnceCell<Answer>> {
        let mut by_name = self.by_name.lock().unwrap_or_else(PoisonError::into_inner);
        let cell = by_name.entry(name.to_vec()).or_default();
        if cell
            .get()
            .is_some_and(|a| a.command.is_none() && a.at.elapsed() >= UNKNOWN_FOR)
        {
            *cell = Arc::default();
        }
        cell.clone()
    }
}

/// One copy of `command` for the process: the one kept already, if equal.
pub(crate) fn kept(command: LearnedCommand) -> &'static LearnedCommand {
    static KEPT: Mutex<Vec<&'static LearnedCommand>> = Mutex::new(Vec::new());
    let mut kept = KEPT.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(same) = kept.iter().find(|k| ***k == command) {
        return same;
    }
    let command = Box::leak(Box::new(command));
    kept.push(command);
    command
}
