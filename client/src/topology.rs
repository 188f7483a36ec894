//! The routing snapshot (docs/behaviour.md §4) and the cluster map replies it is
//! built from (`CLUSTER SHARDS`, or `CLUSTER SLOTS` on older servers).

use std::collections::HashMap;
use std::sync::Arc;

use arc_swap::ArcSwapOption;
use redis_protocol::resp2::types::BytesFrame;
use tokio::sync::Mutex;
use zaris_core::{OwnerId, OwnershipChange, RouteError, SegmentTable, NO_OWNER, SLOT_COUNT};

use crate::conn::{ConnError, ConnOptions, Connection};

/// One node: its address and its one shared connection, made on first use
/// and remade after it breaks.
pub(crate) struct Node {
    pub(crate) addr: Arc<str>,
    conn: ArcSwapOption<Connection>,
    connecting: Mutex<()>,
}

impl Node {
    pub(crate) fn new(addr: &str) -> Self {
        Self {
            addr: addr.into(),
            conn: ArcSwapOption::empty(),
            connecting: Mutex::new(()),
        }
    }

    /// The live connection, connecting (once, however many callers ask) if
    /// there is none.
    pub(crate) async fn connection(
        &self,
        timeout: std::time::Duration,
        options: &ConnOptions,
    ) -> Result<Arc<Connection>, ConnError> {
        if let Some(conn) = self.conn.load_full().filter(|c| c.is_alive()) {
            return Ok(conn);
        }
        let _one_at_a_time = tokio::time::timeout(timeout, self.connecting.lock())
            .await
            .map_err(|_| ConnError::TimedOut)?;
        if let Some(conn) = self.conn.load_full().filter(|c| c.is_alive()) {
            return Ok(conn);
        }
        let conn = Arc::new(Connection::connect(&self.addr, timeout, options).await?);
        self.conn.store(Some(conn.clone()));
        Ok(conn)
    }
}

/// Every node the client has heard of, by address: seeds, map entries,
/// redirect targets. Touched on refreshes and redirects, never per request.
#[derive(Default)]
pub(crate) struct Registry {
    nodes: std::sync::Mutex<HashMap<Arc<str>, Arc<Node>>>,
}

impl Registry {
    /// The node at `addr`, created if new.
    pub(crate) fn node(&self, addr: &str) -> Arc<Node> {
        let mut nodes = self.nodes.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(node) = nodes.get(addr) {
            return node.clone();
        }
        let node = Arc::new(Node::new(addr));
        nodes.insert(node.addr.clone(), node.clone());
        node
    }

    /// Every known node.
    pub(crate) fn all(&self) -> Vec<Arc<Node>> {
        self.nodes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect()
    }
}

/// An immutable routing snapshot: slot -> owner index -> node.
pub(crate) struct Snapshot {
    pub(crate) table: SegmentTable<Box<[OwnerId]>>,
    pub(crate) owners: Vec<Arc<Node>>,
}

impl Snapshot {
    /// A map with no owners (before the first refresh).
    pub(crate) fn empty() -> Self {
        let unowned = vec![NO_OWNER; usize::from(SLOT_COUNT)].into_boxed_slice();
        Self {
            table: SegmentTable::new(unowned).expect("16384 segments"),
            owners: Vec::new(),
        }
    }

    /// Builds a snapshot from a cluster map.
    pub(crate) fn from_ranges(ranges: &[SlotRange], registry: &Registry) -> Self {
        let mut map = Self::empty();
        for range in ranges {
            let owner = owner_index(&mut map.owners, &range.master, registry);
            map.table.apply(&OwnershipChange {
                first_slot: range.first,
                last_slot: range.last,
                owner,
            });
        }
        map
    }

    /// The node owning `slot`: a hash was already paid, this is one index.
    #[inline]
    pub(crate) fn owner_of_slot(&self, slot: u16) -> Result<&Arc<Node>, RouteError> {
        let owner = self.table.owner_of_slot(slot)?;
        self.owners
            .get(usize::from(owner))
            .ok_or(RouteError::MapMidUpdate { segment: slot })
    }

    /// A copy with `first..=last` pointed at `addr` (the push path: clone,
    /// patch, swap), or `None` when nothing would change.
    pub(crate) fn with_change(
        &self,
        first: u16,
        last: u16,
        addr: &str,
        registry: &Registry,
    ) -> Option<(Self, u16)> {
        // Most pushes repeat what the map says (every request that met the
        // same MOVED brings the same hint): check before copying anything.
        let (low, high) = (first.min(last), first.max(last).min(SLOT_COUNT - 1));
        let settled =
            (low..=high).all(|slot| self.owner_of_slot(slot).is_ok_and(|n| *n.addr == *addr));
        if settled {
            return None;
        }
        let mut owners = self.owners.clone();
        let owner = owner_index(&mut owners, addr, registry);
        let mut table =
            SegmentTable::new(self.table.owners().to_vec().into_boxed_slice()).expect("same size");
        let changed = table.apply(&OwnershipChange {
            first_slot: first,
            last_slot: last,
            owner,
        });
        (changed > 0).then(|| (Self { table, owners }, changed))
    }

    /// The distinct owners, in slot order: the targets of a fan-out.
    pub(crate) fn active_owners(&self) -> Vec<Arc<Node>> {
        let mut seen: Vec<Arc<Node>> = Vec::new();
        for (_, owner) in self.table.runs() {
            if let Some(node) = self.owners.get(usize::from(owner)) {
                if !seen.iter().any(|n| Arc::ptr_eq(n, node)) {
                    seen.push(node.clone());
                }
            }
        }
        seen
    }
}

/// The index of the node at `addr` in `owners`, appended (from the
/// registry) if it is not there yet.
fn owner_index(owners: &mut Vec<Arc<Node>>, addr: &str, registry: &Registry) -> OwnerId {
    let index = match owners.iter().position(|n| *n.addr == *addr) {
        Some(i) => i,
        None => {
            owners.push(registry.node(addr));
            owners.len() - 1
        }
    };
    index as OwnerId
}

/// Slots `first..=last` are served by `master` (replicas listed too).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotRange {
    /// First slot.
    pub first: u16,
    /// Last slot, inclusive.
    pub last: u16,
    /// `host:port` of the primary.
    pub master: String,
    /// `host:port` of each replica.
    pub replicas: Vec<String>,
}

/// Why a cluster map reply could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unreadable cluster map: {0}")]
pub struct MapError(pub String);

fn bad(what: impl Into<String>) -> MapError {
    MapError(what.into())
}

fn text(frame: &BytesFrame) -> Option<&str> {
    match frame {
        BytesFrame::BulkString(b) | BytesFrame::SimpleString(b) => std::str::from_utf8(b).ok(),
        _ => None,
    }
}

fn int(frame: &BytesFrame) -> Option<i64> {
    match frame {
        BytesFrame::Integer(i) => Some(*i),
        other => text(other)?.parse().ok(),
    }
}

fn slot(frame: &BytesFrame) -> Result<u16, MapError> {
    int(frame)
        .and_then(|i| u16::try_from(i).ok())
        .filter(|s| *s < SLOT_COUNT)
        .ok_or_else(|| bad(format!("{frame:?} is not a slot")))
}

/// `host:port`, bracketing IPv6 hosts; an empty or `?` host is the host of
/// the node that answered.
pub(crate) fn address(host: &str, port: u16, fallback_host: &str) -> String {
    let host = if host.is_empty() || host == "?" {
        fallback_host
    } else {
        host
    };
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// The host part of `host:port` (brackets removed).
pub(crate) fn host_of(addr: &str) -> &str {
    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
    host.trim_start_matches('[').trim_end_matches(']')
}

/// Reads a `CLUSTER SHARDS` reply (Redis 7+, Valkey): each shard's slot
/// ranges, its online primary and replicas.
pub fn parse_cluster_shards(reply: &BytesFrame, asked: &str) -> Result<Vec<SlotRange>, MapError> {
    let BytesFrame::Array(shards) = reply else {
        return Err(bad("CLUSTER SHARDS reply is not an array"));
    };
    let mut ranges = Vec::new();
    for shard in shards {
        let fields = map_fields(shard)?;
        let slots = match fields.get("slots") {
            Some(BytesFrame::Array(slots)) => slots,
            _ => return Err(bad("shard without a slots list")),
        };
        let Some(BytesFrame::Array(nodes)) = fields.get("nodes") else {
            return Err(bad("shard without a nodes list"));
        };
        let mut master = None;
        let mut replicas = Vec::new();
        for node in nodes {
            let node = map_fields(node)?;
            let port = node
                .get("port")
                .or_else(|| node.get("tls-port"))
                .and_then(|p| int(p))
                .and_then(|p| u16::try_from(p).ok());
            let Some(port) = port else {
                return Err(bad("node without a port"));
            };
            let host = node
                .get("endpoint")
                .and_then(|h| text(h))
                .filter(|h| !h.is_empty() && *h != "?")
                .or_else(|| node.get("ip").and_then(|h| text(h)))
                .unwrap_or("");
            let addr = address(host, port, host_of(asked));
            let online = !node
                .get("health")
                .and_then(|h| text(h))
                .is_some_and(|h| h.starts_with("fail"));
            match node.get("role").and_then(|r| text(r)) {
                Some("master") if online => master = Some(addr),
                Some("master") => {}
                _ => replicas.push(addr),
            }
        }
        if slots.len() % 2 != 0 {
            return Err(bad("odd number of slot bounds"));
        }
        // A shard whose primary failed is left unowned until a replica takes
        // over: routing there would only time out.
        let Some(master) = master else { continue };
        for pair in slots.chunks(2) {
            let (first, last) = (slot(&pair[0])?, slot(&pair[1])?);
            if first > last {
                return Err(bad(format!("slot range {first}-{last} runs backwards")));
            }
            ranges.push(SlotRange {
                first,
                last,
                master: master.clone(),
                replicas: replicas.clone(),
            });
        }
    }
    Ok(ranges)
}

/// Reads a `CLUSTER SLOTS` reply: `[first, last, [host, port, id], replicas...]`.
pub fn parse_cluster_slots(reply: &BytesFrame, asked: &str) -> Result<Vec<SlotRange>, MapError> {
    let BytesFrame::Array(entries) = reply else {
        return Err(bad("CLUSTER SLOTS reply is not an array"));
    };
    let node_addr = |frame: &BytesFrame| -> Result<String, MapError> {
        let BytesFrame::Array(parts) = frame else {
            return Err(bad("node entry is not an array"));
        };
        let host = parts.first().and_then(text).unwrap_or("");
        let port = parts
            .get(1)
            .and_then(int)
            .and_then(|p| u16::try_from(p).ok())
            .ok_or_else(|| bad("node without a port"))?;
        Ok(address(host, port, host_of(asked)))
    };
    entries
        .iter()
        .map(|entry| {
            let BytesFrame::Array(parts) = entry else {
                return Err(bad("slot entry is not an array"));
            };
            let [first, last, master, replicas @ ..] = parts.as_slice() else {
                return Err(bad("slot entry too short"));
            };
            let (first, last) = (slot(first)?, slot(last)?);
            if first > last {
                return Err(bad(format!("slot range {first}-{last} runs backwards")));
            }
            Ok(SlotRange {
                first,
                last,
                master: node_addr(master)?,
                replicas: replicas.iter().map(node_addr).collect::<Result<_, _>>()?,
            })
        })
        .collect()
}

/// A RESP2 flattened map (`[k1, v1, k2, v2, ...]`) by key.
fn map_fields(frame: &BytesFrame) -> Result<HashMap<&str, &BytesFrame>, MapError> {
    let BytesFrame::Array(items) = frame else {
        return Err(bad("expected a key/value list"));
    };
    if items.len() % 2 != 0 {
        return Err(bad("key/value list of odd length"));
    }
    items
        .chunks(2)
        .map(|kv| Ok((text(&kv[0]).ok_or_else(|| bad("non-text key"))?, &kv[1])))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> BytesFrame {
        BytesFrame::BulkString(s.to_owned().into())
    }

    fn arr(items: Vec<BytesFrame>) -> BytesFrame {
        BytesFrame::Array(items)
    }

    fn node(ip: &str, port: i64, role: &str, health: &str) -> BytesFrame {
        arr(vec![
            bulk("id"),
            bulk("abc"),
            bulk("port"),
            BytesFrame::Integer(port),
            bulk("ip"),
            bulk(ip),
            bulk("endpoint"),
            bulk(ip),
            bulk("role"),
            bulk(role),
            bulk("health"),
            bulk(health),
        ])
    }

    #[test]
    fn reads_cluster_shards() {
        let reply = arr(vec![
            arr(vec![
                bulk("slots"),
                arr(vec![
                    BytesFrame::Integer(0),
                    BytesFrame::Integer(5460),
                    BytesFrame::Integer(6000),
                    BytesFrame::Integer(6001),
                ]),
                bulk("nodes"),
                arr(vec![
                    node("127.0.0.1", 7000, "master", "online"),
                    node("::1", 7003, "replica", "online"),
                ]),
            ]),
            // A failed primary: its slots are left unowned.
            arr(vec![
                bulk("slots"),
                arr(vec![BytesFrame::Integer(5461), BytesFrame::Integer(5999)]),
                bulk("nodes"),
                arr(vec![node("127.0.0.1", 7001, "master", "failed")]),
            ]),
            arr(vec![
                bulk("slots"),
                arr(vec![]),
                bulk("nodes"),
                arr(vec![node("", 7009, "master", "online")]),
            ]),
        ]);
        let ranges = parse_cluster_shards(&reply, "10.0.0.9:7000").unwrap();
        assert_eq!(
            ranges,
            vec![
                SlotRange {
                    first: 0,
                    last: 5460,
                    master: "127.0.0.1:7000".into(),
                    replicas: vec!["[::1]:7003".into()]
                },
                SlotRange {
                    first: 6000,
                    last: 6001,
                    master: "127.0.0.1:7000".into(),
                    replicas: vec!["[::1]:7003".into()]
                },
            ]
        );
        assert!(parse_cluster_shards(&bulk("nope"), "x:1").is_err());
        let backwards = arr(vec![arr(vec![
            bulk("slots"),
            arr(vec![BytesFrame::Integer(9), BytesFrame::Integer(3)]),
            bulk("nodes"),
            arr(vec![node("h", 1, "master", "online")]),
        ])]);
        assert_eq!(
            parse_cluster_shards(&backwards, "x:1")
                .unwrap_err()
                .to_string(),
            "unreadable cluster map: slot range 9-3 runs backwards"
        );
    }

    #[test]
    fn reads_cluster_slots() {
        let reply = arr(vec![arr(vec![
            BytesFrame::Integer(0),
            BytesFrame::Integer(16383),
            arr(vec![bulk(""), BytesFrame::Integer(7000), bulk("id0")]),
            arr(vec![
                bulk("127.0.0.1"),
                BytesFrame::Integer(7001),
                bulk("id1"),
            ]),
        ])]);
        let ranges = parse_cluster_slots(&reply, "10.1.2.3:7000").unwrap();
        assert_eq!(
            ranges,
            vec![SlotRange {
                first: 0,
                last: 16383,
                master: "10.1.2.3:7000".into(),
                replicas: vec!["127.0.0.1:7001".into()]
            }]
        );
        let out_of_range = arr(vec![arr(vec![
            BytesFrame::Integer(0),
            BytesFrame::Integer(16384),
            arr(vec![bulk("h"), BytesFrame::Integer(1)]),
        ])]);
        assert!(parse_cluster_slots(&out_of_range, "x:1").is_err());
    }

    #[test]
    fn snapshots_route_and_patch() {
        let registry = Registry::default();
        let ranges = [
            SlotRange {
                first: 0,
                last: 8191,
                master: "a:1".into(),
                replicas: vec![],
            },
            SlotRange {
                first: 8192,
                last: 16383,
                master: "b:1".into(),
                replicas: vec![],
            },
        ];
        let snap = Snapshot::from_ranges(&ranges, &registry);
        assert_eq!(&*snap.owner_of_slot(12739).unwrap().addr, "b:1");
        assert!(
            snap.with_change(0, 10, "a:1", &registry).is_none(),
            "nothing changed, nothing paid"
        );
        let (moved, changed) = snap.with_change(12739, 12739, "c:1", &registry).unwrap();
        assert_eq!(changed, 1);
        assert_eq!(&*moved.owner_of_slot(12739).unwrap().addr, "c:1");
        assert_eq!(&*moved.owner_of_slot(12740).unwrap().addr, "b:1");
        let fan_out: Vec<String> = moved
            .active_owners()
            .iter()
            .map(|n| n.addr.to_string())
            .collect();
        assert_eq!(fan_out, ["a:1", "b:1", "c:1"]);
        assert!(
            Arc::ptr_eq(&registry.node("b:1"), snap.owner_of_slot(9000).unwrap()),
            "one node object per address"
        );
        assert!(matches!(
            Snapshot::empty().owner_of_slot(5),
            Err(RouteError::Unavailable { .. })
        ));
        assert_eq!(host_of("[::1]:7000"), "::1");
        assert_eq!(address("::1", 7000, "x"), "[::1]:7000");
    }
}
