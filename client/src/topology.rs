//! The cluster map replies the client reads (`CLUSTER SHARDS`, or
//! `CLUSTER SLOTS` on servers before Redis 7): each shard's slot ranges,
//! its primary and its replicas.

use std::collections::HashMap;

use zaris_core::SLOT_COUNT;

use crate::Value;

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

/// A map of `(first, last, master)` ranges with no replicas, for tests.
#[cfg(test)]
pub(crate) fn ranges_of(owners: &[(u16, u16, &str)]) -> Vec<SlotRange> {
    owners
        .iter()
        .map(|&(first, last, master)| SlotRange {
            first,
            last,
            master: master.into(),
            replicas: vec![],
        })
        .collect()
}

/// Why a cluster map reply could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unreadable cluster map: {0}")]
pub struct MapError(pub String);

fn bad(what: impl Into<String>) -> MapError {
    MapError(what.into())
}

fn text(value: &Value) -> Option<&str> {
    std::str::from_utf8(value.as_bytes()?).ok()
}

fn int(value: &Value) -> Option<i64> {
    match value {
        Value::Int(i) => Some(*i),
        other => text(other)?.parse().ok(),
    }
}

fn slot(value: &Value) -> Result<u16, MapError> {
    int(value)
        .and_then(|i| u16::try_from(i).ok())
        .filter(|s| *s < SLOT_COUNT)
        .ok_or_else(|| bad(format!("{value:?} is not a slot")))
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
///
/// A node with both ports is named by its plain-text `port`; see
/// [`parse_cluster_shards_over`] for a TLS client.
pub(crate) fn parse_cluster_shards(reply: &Value, asked: &str) -> Result<Vec<SlotRange>, MapError> {
    parse_cluster_shards_over(reply, asked, false)
}

/// [`parse_cluster_shards`] for a client speaking TLS (`tls`): a node
/// with both ports is named by its `tls-port`.
pub(crate) fn parse_cluster_shards_over(
    reply: &Value,
    asked: &str,
    tls: bool,
) -> Result<Vec<SlotRange>, MapError> {
    let (preferred, fallback) = if tls {
        ("tls-port", "port")
    } else {
        ("port", "tls-port")
    };
    let Value::Array(shards) = reply else {
        return Err(bad("CLUSTER SHARDS reply is not an array"));
    };
    let mut ranges = Vec::new();
    for shard in shards {
        let fields = map_fields(shard)?;
        let slots = match fields.get("slots") {
            Some(Value::Array(slots)) => slots,
            _ => return Err(bad("shard without a slots list")),
        };
        let Some(Value::Array(nodes)) = fields.get("nodes") else {
            return Err(bad("shard without a nodes list"));
        };
        let mut master = None;
        let mut replicas = Vec::new();
        for node in nodes {
            let node = map_fields(node)?;
            let port = node
                .get(preferred)
                .or_else(|| node.get(fallback))
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
                // A replica Redis calls "loading" may only have an offset of
                // 0 (an idle primary): it serves reads, and one that really
                // is loading answers LOADING, retried on the primary.
                _ if online => replicas.push(addr),
                _ => {}
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
pub(crate) fn parse_cluster_slots(reply: &Value, asked: &str) -> Result<Vec<SlotRange>, MapError> {
    let Value::Array(entries) = reply else {
        return Err(bad("CLUSTER SLOTS reply is not an array"));
    };
    let node_addr = |value: &Value| -> Result<String, MapError> {
        let Value::Array(parts) = value else {
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
            let Value::Array(parts) = entry else {
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

/// A map by key: a RESP3 map, or a RESP2 flattened one (`[k1, v1, k2,
/// v2, ...]`).
fn map_fields(value: &Value) -> Result<HashMap<&str, &Value>, MapError> {
    if let Value::Map(pairs) = value {
        return pairs
            .iter()
            .map(|(k, v)| Ok((text(k).ok_or_else(|| bad("non-text key"))?, v)))
            .collect();
    }
    let Value::Array(items) = value else {
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

    fn bulk(s: &str) -> Value {
        Value::Data(s.to_owned().into())
    }

    fn arr(items: Vec<Value>) -> Value {
        Value::Array(items)
    }

    fn node(ip: &str, port: i64, role: &str, health: &str) -> Value {
        arr(vec![
            bulk("id"),
            bulk("abc"),
            bulk("port"),
            Value::Int(port),
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
                    Value::Int(0),
                    Value::Int(5460),
                    Value::Int(6000),
                    Value::Int(6001),
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
                arr(vec![Value::Int(5461), Value::Int(5999)]),
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
            arr(vec![Value::Int(9), Value::Int(3)]),
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
            Value::Int(0),
            Value::Int(16383),
            arr(vec![bulk(""), Value::Int(7000), bulk("id0")]),
            arr(vec![bulk("127.0.0.1"), Value::Int(7001), bulk("id1")]),
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
            Value::Int(0),
            Value::Int(16384),
            arr(vec![bulk("h"), Value::Int(1)]),
        ])]);
        assert!(parse_cluster_slots(&out_of_range, "x:1").is_err());
    }

    #[test]
    fn addresses() {
        assert_eq!(host_of("[::1]:7000"), "::1");
        assert_eq!(address("::1", 7000, "x"), "[::1]:7000");
        assert_eq!(address("?", 7000, "10.0.0.1"), "10.0.0.1:7000");
    }
}
