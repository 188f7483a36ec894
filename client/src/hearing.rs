//! Which nodes the client's keyspace subscriptions hear
//! (`Client::keyspace_events`), shared with the request path: a write
//! about to go to a node that a live subscription does not hear yet (a
//! master the map has just named, after a failover or a scale-out) waits,
//! within its attempt, until every subscription has subscribed there, so
//! that the notification of the client's own write is heard. With no
//! subscription, the check is one atomic load.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{mpsc, Notify};
use tokio::time::Instant;

use crate::seam;

/// The subscriptions alive, and what each hears.
#[derive(Default)]
pub(crate) struct Hearing {
    /// How many subscriptions are alive: zero, and writes never look.
    alive: AtomicUsize,
    listeners: Mutex<seam::HashMap<u64, Listener>>,
    next_id: AtomicUsize,
    /// Told whenever a subscription hears a node.
    heard: Notify,
}

/// One subscription: the nodes it hears, and how to ask it for another.
struct Listener {
    nodes: HashSet<Arc<str>>,
    ask: mpsc::UnboundedSender<Arc<str>>,
}

impl Hearing {
    /// A new subscription: its id, and where it is asked for nodes.
    pub(crate) fn join(&self) -> (u64, mpsc::UnboundedReceiver<Arc<str>>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) as u64;
        let (ask, asked) = mpsc::unbounded_channel();
        self.lock().insert(
            id,
            Listener {
                nodes: HashSet::new(),
                ask,
            },
        );
        self.alive.fetch_add(1, Ordering::Release);
        (id, asked)
    }

    /// The subscription `id` ended.
    pub(crate) fn leave(&self, id: u64) {
        if self.lock().remove(&id).is_some() {
            self.alive.fetch_sub(1, Ordering::Release);
        }
        self.heard.notify_waiters();
    }

    /// Subscription `id` hears `node` (`true`) or no longer does.
    pub(crate) fn hears(&self, id: u64, node: &Arc<str>, hears: bool) {
        if let Some(listener) = self.lock().get_mut(&id) {
            if hears {
                listener.nodes.insert(node.clone());
            } else {
                listener.nodes.remove(node);
            }
        }
        if hears {
            self.heard.notify_waiters();
        }
    }

    /// Whether any subscription is alive (writes look only then).
    #[inline]
    pub(crate) fn any(&self) -> bool {
        self.alive.load(Ordering::Acquire) > 0
    }

    /// Before a write to `node`: if a subscription does not hear it,
    /// asks it to, and waits until every one does, or `until`.
    pub(crate) async fn before_write(&self, node: &Arc<str>, until: Instant) {
        loop {
            let heard = self.heard.notified();
            tokio::pin!(heard);
            heard.as_mut().enable();
            let deaf: Vec<mpsc::UnboundedSender<Arc<str>>> = self
                .lock()
                .values()
                .filter(|l| !l.nodes.contains(node))
                .map(|l| l.ask.clone())
                .collect();
            if deaf.is_empty() {
                return;
            }
            for ask in deaf {
                let _ = ask.send(node.clone());
            }
            if tokio::time::timeout_at(until, heard).await.is_err() {
                tracing::debug!(%node, "a write went before a keyspace subscription heard its node");
                return;
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, seam::HashMap<u64, Listener>> {
        self.listeners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}
