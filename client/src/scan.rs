//! A cluster `SCAN` that survives churn (docs/behaviour.md, "Scanning").
//!
//! `SCAN` is per node, and its guarantee (every key present for the whole
//! scan is returned) holds only while the node keeps its keys. In a
//! cluster, slots move: a key migrated away from a node before its cursor
//! got there, into a node already scanned, is missed by both. So the scan
//! keeps track of the slots, not the nodes:
//!
//! - Each pass groups the slots not yet covered by their owner in the
//!   current map and scans each owner with a cursor, handing on only the
//!   keys of the slots it was sent for.
//! - Before and after a node's scan it asks the node itself what it serves
//!   (`CLUSTER NODES`, its own line): its slots, the slots it is importing
//!   or migrating, its config epoch. A slot counts as covered only if the
//!   node served it both times, was moving it neither time, and its epoch
//!   did not change (a slot that left and came back while the cursor ran
//!   comes back by an import, which raises the epoch).
//! - Slots left uncovered (moved, mid-migration, a node that died or
//!   failed over mid-scan) are scanned again on their owner in the next
//!   pass, after the next map refresh, up to [`MAX_SCAN_PASSES`] passes.
//!
//! Every key present for the whole scan is returned at least once; a key
//! in a slot scanned twice may come twice. Memory is one batch (and a bit
//! per slot), whatever the size of the keyspace: the stream reads nothing
//! ahead of its reader.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::Instant;

use bytes::Bytes;
use zaris_core::{parse_cluster_nodes, slot_for_key, SlotEntry, SLOT_COUNT};

use crate::codec::Frame;
use crate::inner::Inner;
use crate::pool::Node;
use crate::reply::{unexpected, Replies};
use crate::route::{pack, Packed, Route};
use crate::stats::{Counters, RefreshCause};
use crate::{Client, Error};

/// Passes over the uncovered slots before the scan gives up
/// ([`Error::ScanIncomplete`]); each after a map refresh, so at least the
/// refresh interval apart.
pub const MAX_SCAN_PASSES: u32 = 16;

/// What [`Client::scan`] looks for: `SCAN`'s `MATCH`, `COUNT` and `TYPE`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScanOptions {
    /// A glob the keys match (`MATCH`); `None`: every key.
    pub pattern: Option<String>,
    /// The work per `SCAN` call (`COUNT`, a hint to the server); `None`:
    /// 1000.
    pub count: Option<u32>,
    /// Only keys of this type (`TYPE`: `string`, `hash`, ...).
    pub type_: Option<String>,
}

/// The key batches of a [`Client::scan`], as a `Stream`. The scan runs as
/// its reader reads: one `SCAN` call (or a node's `CLUSTER NODES`) per batch
/// asked for, nothing ahead; dropping it ends the scan.
pub struct Scan {
    batches: Pin<Box<dyn futures_core::Stream<Item = Result<Vec<Bytes>, Error>> + Send>>,
}

impl futures_core::Stream for Scan {
    type Item = Result<Vec<Bytes>, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.batches.as_mut().poll_next(cx)
    }
}

impl Scan {
    /// The next batch; `None` once every slot is covered (or after the
    /// error that ended the scan).
    pub async fn next(&mut self) -> Option<Result<Vec<Bytes>, Error>> {
        futures_util::StreamExt::next(self).await
    }
}

impl Client {
    /// Every key of the cluster (matching `options`), as a stream of
    /// batches, churn or not: see [`Scan`] and docs/behaviour.md. Every
    /// key present for the whole scan comes at least once; a key may come
    /// twice when its slot moved mid-scan and was scanned again.
    ///
    /// ```no_run
    /// # async fn demo(client: zaris_client::Client) -> Result<(), zaris_client::Error> {
    /// use zaris_client::ScanOptions;
    /// let mut scan = client.scan(ScanOptions {
    ///     pattern: Some("user:*".into()),
    ///     ..ScanOptions::default()
    /// });
    /// while let Some(batch) = scan.next().await {
    ///     for key in batch? {
    ///         println!("{key:?}");
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn scan(&self, options: ScanOptions) -> Scan {
        let state = Scanning {
            inner: self.inner.clone(),
            options,
            covered: SlotSet::default(),
            pass: 0,
            work: Vec::new(),
            node: None,
            done: false,
        };
        let batches = futures_util::stream::unfold(state, |mut state| async move {
            if state.done {
                return None;
            }
            let next = state.next_batch().await;
            state.done = !matches!(next, Some(Ok(_)));
            next.map(|batch| (batch, state))
        });
        Scan {
            batches: Box::pin(batches),
        }
    }
}

/// Where a scan is.
struct Scanning {
    inner: Arc<Inner>,
    options: ScanOptions,
    /// Slots a node scan covered (see [`NodeView::covered`]).
    covered: SlotSet,
    /// Passes started.
    pass: u32,
    /// This pass's nodes still to scan, each for its slots.
    work: Vec<(Arc<Node>, SlotSet)>,
    /// The node being scanned now.
    node: Option<NodeScan>,
    done: bool,
}

/// One node's scan under way.
struct NodeScan {
    node: Arc<Node>,
    slots: SlotSet,
    before: NodeView,
    cursor: Bytes,
}

impl Scanning {
    /// The next non-empty batch; `None` when every assigned slot is
    /// covered; the error that ends the scan.
    async fn next_batch(&mut self) -> Option<Result<Vec<Bytes>, Error>> {
        loop {
            if let Some(scan) = &mut self.node {
                match step(&self.inner, scan, &self.options).await {
                    Ok((keys, finished)) => {
                        if finished {
                            let scan = self.node.take().expect("a node scan");
                            match view_of(&self.inner, &scan.node).await {
                                Ok(after) => {
                                    self.covered.add(&scan.before.covered(&after, &scan.slots));
                                }
                                Err(e) => cut_short(&scan.node, &e),
                            }
                        }
                        if !keys.is_empty() {
                            return Some(Ok(keys));
                        }
                    }
                    Err(e) => {
                        cut_short(&scan.node, &e);
                        self.node = None;
                    }
                }
                continue;
            }
            if let Some((node, slots)) = self.work.pop() {
                if self.pass > 1 {
                    Counters::bump(&self.inner.counters().scan_rescans);
                }
                match view_of(&self.inner, &node).await {
                    Ok(before) => {
                        self.node = Some(NodeScan {
                            node,
                            slots,
                            before,
                            cursor: Bytes::from_static(b"0"),
                        });
                    }
                    Err(e) => cut_short(&node, &e),
                }
                continue;
            }
            if self.pass > 0 {
                if self.pass == MAX_SCAN_PASSES {
                    let uncovered = owners_of_uncovered(&self.inner, &self.covered)
                        .iter()
                        .map(|(_, slots)| slots.count())
                        .sum();
                    return (uncovered > 0).then_some(Err(Error::ScanIncomplete {
                        uncovered,
                        passes: MAX_SCAN_PASSES,
                    }));
                }
                // Another pass, on the next map the refresh interval allows.
                let wait = self.inner.config().refresh_wait;
                self.inner
                    .refresh_next(RefreshCause::Requested, wait, Instant::now(), None)
                    .await;
            }
            self.pass += 1;
            self.work = owners_of_uncovered(&self.inner, &self.covered);
            if self.work.is_empty() {
                return None;
            }
        }
    }
}

/// A node's scan given up (its slots go again next pass).
fn cut_short(node: &Node, error: &Error) {
    tracing::info!(node = %node.addr, %error, "scan of a node cut short: its slots go again");
}

/// One `SCAN` call of a node's scan: the keys of its slots, and whether
/// its cursor came back to 0.
async fn step(
    inner: &Arc<Inner>,
    scan: &mut NodeScan,
    options: &ScanOptions,
) -> Result<(Vec<Bytes>, bool), Error> {
    let count = options.count.unwrap_or(1000).max(1).to_string();
    let mut args: Vec<&[u8]> = vec![b"SCAN", &scan.cursor];
    if let Some(pattern) = &options.pattern {
        args.extend([&b"MATCH"[..], pattern.as_bytes()]);
    }
    args.extend([&b"COUNT"[..], count.as_bytes()]);
    if let Some(type_) = &options.type_ {
        args.extend([&b"TYPE"[..], type_.as_bytes()]);
    }
    let frames = on_node(inner, &scan.node, pack("SCAN", &[&args])).await?;
    let (next, keys) = scan_reply(&frames[0])?;
    let mine = keys
        .into_iter()
        .filter(|k| scan.slots.contains(slot_for_key(k)))
        .collect();
    let finished = &next[..] == b"0";
    scan.cursor = next;
    Ok((mine, finished))
}

/// The slots the map assigns and `covered` lacks, by owner.
fn owners_of_uncovered(inner: &Inner, covered: &SlotSet) -> Vec<(Arc<Node>, SlotSet)> {
    let snapshot = inner.map();
    let mut work: Vec<(Arc<Node>, SlotSet)> = Vec::new();
    for slot in 0..SLOT_COUNT {
        if covered.contains(slot) {
            continue;
        }
        let Ok(owner) = snapshot.owner_of_slot(slot) else {
            continue;
        };
        match work.iter_mut().find(|(n, _)| Arc::ptr_eq(n, owner)) {
            Some((_, slots)) => slots.insert(slot),
            None => {
                let mut slots = SlotSet::default();
                slots.insert(slot);
                work.push((owner.clone(), slots));
            }
        }
    }
    work
}

/// `command` on `node`, under the retry rules but for one attempt's time
/// and a second at most: a node that is gone (killed, failed over) costs
/// the scan that, not the whole retry budget; its slots go again next pass,
/// on their new owner. (A read: giving up on it loses nothing.)
async fn on_node(inner: &Arc<Inner>, node: &Arc<Node>, command: Packed) -> Result<Replies, Error> {
    let bound = inner.config().attempt_timeout + Duration::from_secs(1);
    match tokio::time::timeout(bound, inner.execute(Route::Node(node.clone()), command)).await {
        Ok(replies) => replies,
        Err(_) => Err(Error::Transport {
            failure: zaris_core::TransportFailure::TimedOut,
            detail: format!("{}: no answer to the scan within {bound:?}", node.addr),
            attempts: 1,
            stop: zaris_core::StopReason::DeadlineReached,
        }),
    }
}

/// A `SCAN` reply: the next cursor and the keys.
fn scan_reply(reply: &Frame) -> Result<(Bytes, Vec<Bytes>), Error> {
    let Frame::Array(parts) = reply else {
        return Err(unexpected("SCAN", reply));
    };
    let [Frame::BulkString(next), Frame::Array(batch)] = parts.as_slice() else {
        return Err(unexpected("SCAN", reply));
    };
    let keys = batch
        .iter()
        .map(|k| match k {
            Frame::BulkString(k) => Ok(k.clone()),
            other => Err(unexpected("SCAN", other)),
        })
        .collect::<Result<_, _>>()?;
    Ok((next.clone(), keys))
}

/// What a node says of itself: the slots it serves, those it is moving
/// (importing or migrating), its config epoch.
#[derive(Debug, PartialEq, Eq)]
struct NodeView {
    epoch: Option<u64>,
    served: SlotSet,
    moving: SlotSet,
}

impl NodeView {
    /// Its own line of a `CLUSTER NODES` reply.
    fn parse(text: &str) -> Option<NodeView> {
        let me = parse_cluster_nodes(text)
            .filter_map(Result::ok)
            .find(|n| n.flags.myself)?;
        let mut view = NodeView {
            epoch: me.config_epoch,
            served: SlotSet::default(),
            moving: SlotSet::default(),
        };
        if !me.flags.master {
            return Some(view);
        }
        for entry in me.slots().filter_map(Result::ok) {
            match entry {
                SlotEntry::Served { first, last } => {
                    (first..=last).for_each(|s| view.served.insert(s));
                }
                SlotEntry::Migrating { slot, .. } | SlotEntry::Importing { slot, .. } => {
                    view.moving.insert(slot);
                }
            }
        }
        Some(view)
    }

    /// A server with cluster support off, from its `INFO server
    /// replication`: a master serves every slot, and its run id stands for
    /// the epoch (a restart between two views is a new one).
    fn standalone(info: &str) -> Option<NodeView> {
        let field = |name: &str| info.lines().find_map(|l| l.trim().strip_prefix(name));
        let run_id = field("run_id:")?;
        let mut view = NodeView {
            epoch: u64::from_str_radix(run_id.get(..16)?, 16).ok(),
            served: SlotSet::default(),
            moving: SlotSet::default(),
        };
        if field("role:") == Some("master") {
            (0..SLOT_COUNT).for_each(|s| view.served.insert(s));
        }
        Some(view)
    }

    /// Of `slots`, those a scan between this view and `after` covered:
    /// served both times, moving neither time, the epoch unchanged.
    fn covered(&self, after: &NodeView, slots: &SlotSet) -> SlotSet {
        let mut covered = SlotSet::default();
        if self.epoch.is_none() || self.epoch != after.epoch {
            return covered;
        }
        for slot in slots.iter() {
            if self.served.contains(slot)
                && after.served.contains(slot)
                && !self.moving.contains(slot)
                && !after.moving.contains(slot)
            {
                covered.insert(slot);
            }
        }
        covered
    }
}

/// `node`'s view of itself.
async fn view_of(inner: &Arc<Inner>, node: &Arc<Node>) -> Result<NodeView, Error> {
    if inner.map().is_standalone() {
        let info: &[&[u8]] = &[b"INFO", b"server", b"replication"];
        let frames = on_node(inner, node, pack("INFO", &[info])).await?;
        return frames[0]
            .text()
            .and_then(|text| std::str::from_utf8(text).ok())
            .and_then(NodeView::standalone)
            .ok_or_else(|| unexpected("INFO", &frames[0]));
    }
    let frames = on_node(inner, node, pack("CLUSTER", &[&[b"CLUSTER", b"NODES"]])).await?;
    frames[0]
        .text()
        .and_then(|text| std::str::from_utf8(text).ok())
        .and_then(NodeView::parse)
        .ok_or_else(|| unexpected("CLUSTER NODES", &frames[0]))
}

/// A set of slots, a bit each.
#[derive(Clone, PartialEq, Eq)]
struct SlotSet([u64; SLOT_COUNT as usize / 64]);

impl Default for SlotSet {
    fn default() -> Self {
        SlotSet([0; SLOT_COUNT as usize / 64])
    }
}

impl std::fmt::Debug for SlotSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SlotSet({} slots)", self.count())
    }
}

impl SlotSet {
    fn insert(&mut self, slot: u16) {
        if let Some(word) = self.0.get_mut(usize::from(slot / 64)) {
            *word |= 1 << (slot % 64);
        }
    }

    fn contains(&self, slot: u16) -> bool {
        self.0
            .get(usize::from(slot / 64))
            .is_some_and(|w| w & (1 << (slot % 64)) != 0)
    }

    fn add(&mut self, other: &SlotSet) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a |= b;
        }
    }

    fn count(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }

    fn iter(&self) -> impl Iterator<Item = u16> + '_ {
        (0..SLOT_COUNT).filter(|&s| self.contains(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: &str = "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca";
    const OTHER: &str = "67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1";

    fn view(epoch: u64, slots: &str) -> NodeView {
        let text = format!(
            "{OTHER} 127.0.0.1:7001@17001 master - 0 1 2 connected 9000-16383\n\
             {ME} 127.0.0.1:7000@17000 myself,master - 0 0 {epoch} connected {slots}\n"
        );
        NodeView::parse(&text).unwrap()
    }

    fn set(slots: impl IntoIterator<Item = u16>) -> SlotSet {
        let mut set = SlotSet::default();
        slots.into_iter().for_each(|s| set.insert(s));
        set
    }

    #[test]
    fn a_node_reads_its_own_line() {
        let v = view(7, &format!("0-99 200 [300->-{OTHER}] [301-<-{OTHER}]"));
        assert_eq!(v.epoch, Some(7));
        assert_eq!(v.served.count(), 101);
        assert!(v.served.contains(200) && !v.served.contains(300));
        assert_eq!(v.moving, set([300, 301]));
        let replica = format!("{ME} 127.0.0.1:7000@17000 myself,slave {OTHER} 0 0 3 connected\n");
        assert_eq!(NodeView::parse(&replica).unwrap().served.count(), 0);
        assert_eq!(NodeView::parse("garbage"), None);
    }

    #[test]
    fn only_slots_held_still_the_whole_scan_are_covered() {
        let asked = set(0..100);
        let steady = view(3, "0-99");
        assert_eq!(steady.covered(&view(3, "0-99"), &asked), asked);
        // Slot 5 migrated away mid-scan: not covered.
        assert_eq!(
            steady.covered(&view(3, "0-4 6-99"), &asked),
            set((0..100).filter(|&s| s != 5))
        );
        // Slot 7 mid-migration at the end: not covered.
        let migrating = view(3, &format!("0-99 [7->-{OTHER}]"));
        assert!(!steady.covered(&migrating, &asked).contains(7));
        // Away and back (an import raises the epoch): nothing is trusted.
        assert_eq!(steady.covered(&view(4, "0-99"), &asked).count(), 0);
        // Only the slots asked for count.
        assert_eq!(steady.covered(&steady, &set([1, 2, 500])), set([1, 2]));
    }
}
