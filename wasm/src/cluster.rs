//! Cluster maps from `CLUSTER NODES` text or a JSON map, routed with the
//! core's `SegmentTable`.

use core::fmt;

use crate::json;
use wasm_bindgen::prelude::*;
use zaris_core::{
    parse_cluster_nodes, OwnerId, OwnershipChange, SegmentTable, SlotEntry, NO_OWNER, SLOT_COUNT,
};

/// One node of the map.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Node {
    id: String,
    addr: String,
    /// The master's id for a replica.
    replica_of: Option<String>,
    /// Flagged `fail` (or `fail?`) by the cluster.
    failing: bool,
    /// Slots it is moving, `[slot->-id]` (true) or `[slot-<-id]` (false),
    /// with the other node's id.
    moving: Vec<(u16, bool, String)>,
}

/// A cluster map: nodes, and which node serves each of the 16384 slots.
#[wasm_bindgen]
#[derive(Clone, Debug)]
pub struct ClusterMap {
    nodes: Vec<Node>,
    table: SegmentTable<Vec<OwnerId>>,
}

/// What is wrong with a map's text, and where.
#[derive(Debug, PartialEq, Eq)]
pub struct MapError {
    /// 1-based line (0 for the map as a whole).
    pub line: usize,
    /// What was wrong.
    pub message: String,
}

impl fmt::Display for MapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            0 => f.write_str(&self.message),
            line => write!(f, "line {line}: {}", self.message),
        }
    }
}

impl std::error::Error for MapError {}

fn err(line: usize, message: impl Into<String>) -> MapError {
    MapError {
        line,
        message: message.into(),
    }
}

// The three host functions JSON maps need, imported directly (js-sys would
// bring far more code than the module's size budget allows).
#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = JSON, js_name = parse, catch)]
    fn json_parse(text: &str) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(js_namespace = Reflect, js_name = get, catch)]
    fn reflect_get(target: &JsValue, key: &JsValue) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(js_namespace = Array, js_name = isArray)]
    fn is_array(value: &JsValue) -> bool;
}

/// `obj[name]`, or `None` when missing, `null` or not an object.
fn js_field(obj: &JsValue, name: &str) -> Option<JsValue> {
    if !obj.is_object() {
        return None;
    }
    reflect_get(obj, &JsValue::from_str(name))
        .ok()
        .filter(|v| !v.is_undefined() && !v.is_null())
}

/// The items of a JS array.
fn js_items(array: &JsValue) -> Vec<JsValue> {
    let len = js_field(array, "length")
        .and_then(|l| l.as_f64())
        .unwrap_or(0.0) as u32;
    (0..len)
        .filter_map(|i| reflect_get(array, &JsValue::from(i)).ok())
        .collect()
}

/// Redis's default slot split for three masters.
const DEMO_SPLIT: [(u16, u16); 3] = [(0, 5460), (5461, 10922), (10923, 16383)];
/// The demo cluster's first port (masters 7000-7002, replicas 7003-7005).
const DEMO_BASE_PORT: u16 = 7000;
/// The demo nodes' ids, masters first: 40 hex digits each, like the ids a
/// real cluster draws at random (these are SHA-1s of "zaris demo node N").
const DEMO_IDS: [&str; 6] = [
    "8ecd482a0804ae39a0d73a35194332dfb4b612d9",
    "7934269af2dc25c3353e30614f8174c781c7bede",
    "23e690fd457666299cb145cfda31dacb4cf23f4f",
    "7551a85c5c47160ff68c78d78ffbe17147a781a2",
    "e96ae522564fc2ac931fc05961378776747c515e",
    "b97e5d93f746b212d4411e67b654ae760a18a222",
];

impl ClusterMap {
    /// Parses `CLUSTER NODES` output (as `redis-cli cluster nodes` prints it)
    /// with the core's parser.
    ///
    /// # Errors
    /// The first line that does not parse, or a slot served twice.
    pub fn parse_cluster_nodes(text: &str) -> Result<Self, MapError> {
        let mut nodes = Vec::new();
        let mut ranges: Vec<(usize, u16, u16, usize)> = Vec::new();
        for node in parse_cluster_nodes(text) {
            let node = node.map_err(|e| err(e.line, e.kind.to_string()))?;
            let mut moving = Vec::new();
            for slot in node.slots() {
                // `[slot->-id]` and `[slot-<-id]`: a migration in progress;
                // the owner is still the node that lists the slot plainly.
                match slot {
                    Ok(SlotEntry::Served { first, last }) => {
                        ranges.push((node.line, first, last, nodes.len()));
                    }
                    Ok(SlotEntry::Migrating { slot, to }) => {
                        moving.push((slot, true, to.to_owned()))
                    }
                    Ok(SlotEntry::Importing { slot, from }) => {
                        moving.push((slot, false, from.to_owned()));
                    }
                    Err(_) => {}
                }
            }
            nodes.push(Node {
                id: node.id.to_owned(),
                addr: node.addr.to_owned(),
                replica_of: node
                    .master_id
                    .filter(|_| node.flags.replica)
                    .map(str::to_owned),
                failing: node.flags.fail || node.flags.possibly_failing,
                moving,
            });
        }
        if nodes.is_empty() {
            return Err(err(
                0,
                "no nodes: paste the output of `redis-cli cluster nodes`",
            ));
        }
        Self::build(nodes, ranges)
    }

    /// Reads the JSON map format from a parsed value:
    /// `{"nodes":[{"id","addr","replicaOf"?}], "slots":[{"from","to","node"}]}`.
    ///
    /// # Errors
    /// A missing or mistyped field (named by its path), an unknown node, a
    /// bad range, a slot twice.
    fn from_json_value(value: &JsValue) -> Result<Self, MapError> {
        let array = |obj: &JsValue, name: &str| {
            js_field(obj, name)
                .filter(is_array)
                .map(|v| js_items(&v))
                .ok_or_else(|| err(0, format!("\"{name}\" must be an array")))
        };
        let text = |obj: &JsValue, path: String| {
            obj.as_string()
                .ok_or_else(|| err(0, format!("{path} must be a string")))
        };
        let mut nodes = Vec::new();
        for (i, node) in array(value, "nodes")?.into_iter().enumerate() {
            let get = |name: &str| js_field(&node, name).unwrap_or(JsValue::UNDEFINED);
            nodes.push(Node {
                id: text(&get("id"), format!("nodes[{i}].id"))?,
                addr: text(&get("addr"), format!("nodes[{i}].addr"))?,
                replica_of: match js_field(&node, "replicaOf") {
                    Some(master) => Some(text(&master, format!("nodes[{i}].replicaOf"))?),
                    None => None,
                },
                failing: false,
                moving: Vec::new(),
            });
        }
        if nodes.is_empty() {
            return Err(err(0, "the map has no nodes"));
        }
        let mut ranges = Vec::new();
        for (i, range) in array(value, "slots")?.into_iter().enumerate() {
            let slot = |name: &str| {
                js_field(&range, name)
                    .and_then(|v| v.as_f64())
                    .filter(|f| f.fract() == 0.0 && (0.0..f64::from(SLOT_COUNT)).contains(f))
                    .map(|f| f as u16)
                    .ok_or_else(|| {
                        err(
                            0,
                            format!("slots[{i}].{name} must be a slot from 0 to 16383"),
                        )
                    })
            };
            let (from, to) = (slot("from")?, slot("to")?);
            let node = text(
                &js_field(&range, "node").unwrap_or(JsValue::UNDEFINED),
                format!("slots[{i}].node"),
            )?;
            let owner = nodes
                .iter()
                .position(|n| n.id == node)
                .ok_or_else(|| err(0, format!("slots[{i}]: no node has id '{node}'")))?;
            if from > to {
                return Err(err(
                    0,
                    format!("slots[{i}]: {from}-{to} is not a slot range"),
                ));
            }
            ranges.push((0, from, to, owner));
        }
        Self::build(nodes, ranges)
    }

    fn build(nodes: Vec<Node>, ranges: Vec<(usize, u16, u16, usize)>) -> Result<Self, MapError> {
        let mut table = SegmentTable::new(vec![NO_OWNER; usize::from(SLOT_COUNT)])
            .map_err(|e| err(0, e.to_string()))?;
        for (line, from, to, owner) in ranges {
            if let Some(taken) = (from..=to).find(|&s| table.owner_of_slot(s).is_ok()) {
                let other = table
                    .owner_of_slot(taken)
                    .map_or("?", |o| nodes[usize::from(o)].id.as_str());
                return Err(err(line, format!("slot {taken} is also served by {other}")));
            }
            let owner = OwnerId::try_from(owner).map_err(|_| err(line, "too many nodes"))?;
            table.apply(&OwnershipChange {
                first_slot: from,
                last_slot: to,
                owner,
            });
        }
        Ok(Self { nodes, table })
    }

    /// The address of `node`'s master, when it is a replica of a node the
    /// map lists.
    fn master_addr(&self, node: &Node) -> Option<&str> {
        let master = node.replica_of.as_deref()?;
        self.nodes
            .iter()
            .find(|n| n.id == master)
            .map(|n| n.addr.as_str())
    }

    /// The owner's node index for `slot`, if any.
    #[must_use]
    pub fn owner_index(&self, slot: u16) -> Option<usize> {
        self.table.owner_of_slot(slot).ok().map(usize::from)
    }
}

#[wasm_bindgen]
impl ClusterMap {
    /// Parses `CLUSTER NODES` output; the error names the line.
    ///
    /// # Errors
    /// As [`ClusterMap::parse_cluster_nodes`].
    #[wasm_bindgen(js_name = fromClusterNodes)]
    pub fn from_cluster_nodes(text: &str) -> Result<ClusterMap, JsError> {
        Self::parse_cluster_nodes(text).map_err(|e| JsError::new(&e.to_string()))
    }

    /// Parses the JSON map format with the host's own `JSON.parse`, then
    /// checks its fields. A syntax error is located (line and column) by
    /// serde_json, since the host's message says what but not where.
    ///
    /// # Errors
    /// Bad JSON; a missing or mistyped field (named by its path), an
    /// unknown node, a bad range, a slot twice.
    #[wasm_bindgen(js_name = fromJson)]
    pub fn from_json(text: &str) -> Result<ClusterMap, JsError> {
        let value = json_parse(text).map_err(|e| {
            // The host's message says what but not where; serde_json, asked
            // only to skip over the text, says where (and never formats a
            // float, which keeps its deserializer small).
            let located = serde_json::from_str::<serde::de::IgnoredAny>(text).err();
            let message = match located {
                Some(located) => format!("line {}: not JSON: {located}", located.line()),
                None => js_field(&e, "message")
                    .and_then(|m| m.as_string())
                    .unwrap_or_default(),
            };
            JsError::new(&message)
        })?;
        Self::from_json_value(&value).map_err(|e| JsError::new(&e.to_string()))
    }

    /// The demo cluster as `CLUSTER NODES` text: 3 masters with 3 replicas on
    /// 127.0.0.1:7000-7005, Redis's default slot split.
    #[wasm_bindgen(js_name = demoClusterNodes)]
    #[must_use]
    pub fn demo_cluster_nodes() -> String {
        let id = |i: u16| DEMO_IDS[usize::from(i)];
        let mut text = String::new();
        for (i, (from, to)) in (0u16..).zip(DEMO_SPLIT) {
            let port = DEMO_BASE_PORT + i;
            let myself = if i == 0 { "myself," } else { "" };
            text += &format!(
                "{} 127.0.0.1:{port}@{} {myself}master - 0 1700000000000 {} connected {from}-{to}\n",
                id(i),
                port + 10000,
                i + 1
            );
        }
        for i in 0u16..3 {
            let port = DEMO_BASE_PORT + 3 + i;
            text += &format!(
                "{} 127.0.0.1:{port}@{} slave {} 0 1700000000000 {} connected\n",
                id(3 + i),
                port + 10000,
                id(i),
                i + 1
            );
        }
        text
    }

    /// How many nodes the map has (masters and replicas).
    #[wasm_bindgen(js_name = nodeCount)]
    #[must_use]
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// The nodes as JSON: `[{id, addr, replica_of, master_addr, failing,
    /// slots, ranges, moving}]`: a replica's master by id and by address,
    /// `slots` counting the slots each serves, `ranges` listing them, and
    /// `moving` the slots it is migrating (`[slot, "to", id]`) or importing
    /// (`[slot, "from", id]`).
    #[wasm_bindgen(js_name = nodesJson)]
    #[must_use]
    pub fn nodes_json(&self) -> String {
        let mut slots = vec![0u32; self.nodes.len()];
        let mut ranges = vec![String::new(); self.nodes.len()];
        for (segments, owner) in self.table.runs() {
            let owner = usize::from(owner);
            if let (Some(count), Some(list)) = (slots.get_mut(owner), ranges.get_mut(owner)) {
                *count += u32::from(segments.end - segments.start);
                let sep = if list.is_empty() { "" } else { "," };
                *list += &format!("{sep}[{},{}]", segments.start, segments.end - 1);
            }
        }
        let mut out = String::from("[");
        for (i, node) in self.nodes.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            json::Object::open(&mut out)
                .str("id", &node.id)
                .str("addr", &node.addr)
                .opt_str("replica_of", node.replica_of.as_deref())
                .opt_str("master_addr", self.master_addr(node))
                .bool("failing", node.failing)
                .num("slots", slots[i].into())
                .raw("ranges", &format!("[{}]", ranges[i]))
                .raw("moving", &moving_json(&node.moving))
                .close();
        }
        out.push(']');
        out
    }

    /// The owning node's index for `slot`, or -1 where no node serves it.
    #[wasm_bindgen(js_name = ownerOfSlot)]
    #[must_use]
    pub fn owner_of_slot(&self, slot: u16) -> i32 {
        self.owner_index(slot).map_or(-1, |i| i as i32)
    }

    /// `id addr` of node `index`.
    #[wasm_bindgen(js_name = nodeLabel)]
    #[must_use]
    pub fn node_label(&self, index: usize) -> String {
        let short = |id: &str| id.get(..8).unwrap_or(id).to_owned();
        self.nodes
            .get(index)
            .map(|n| short(&n.id) + " " + &n.addr)
            .unwrap_or_default()
    }

    /// Owner index per slot (-1 unserved), for routing many slots at once.
    #[wasm_bindgen(js_name = ownersOfSlots)]
    #[must_use]
    pub fn owners_of_slots(&self, slots: &[u16]) -> Vec<i32> {
        slots.iter().map(|&s| self.owner_of_slot(s)).collect()
    }

    /// Keys per node for the lines of `text` (UTF-8 bytes, as
    /// `slotsForUtf8Lines` reads them); the extra last entry counts keys
    /// whose slot no node serves.
    #[wasm_bindgen(js_name = keysPerNode)]
    #[must_use]
    pub fn keys_per_node(&self, text: &[u8]) -> Vec<u32> {
        let mut counts = vec![0u32; self.nodes.len() + 1];
        for key in zaris_core::key_lines(text) {
            let slot = zaris_core::slot_for_key(key);
            let at = self.owner_index(slot).unwrap_or(self.nodes.len());
            counts[at] += 1;
        }
        counts
    }
}

/// A node's moving slots as `[[slot, "to"|"from", id], ...]`.
fn moving_json(moving: &[(u16, bool, String)]) -> String {
    let mut out = String::from("[");
    for (i, (slot, out_going, other)) in moving.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&format!(
            "[{slot},\"{}\",",
            if *out_going { "to" } else { "from" }
        ));
        json::string(&mut out, other);
        out.push(']');
    }
    out.push(']');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sample of Redis's `CLUSTER NODES` documentation, with
    /// hostnames (one file for the core's tests and the wasm package's).
    const REDIS_DOC_SAMPLE: &str = include_str!("../../core/testdata/cluster-nodes.txt");

    #[test]
    fn parses_the_redis_documentation_sample() {
        let map = ClusterMap::parse_cluster_nodes(REDIS_DOC_SAMPLE).unwrap();
        assert_eq!(map.node_count(), 6);
        assert_eq!(map.owner_index(0), Some(5));
        assert_eq!(
            map.owner_index(93),
            Some(5),
            "a migrating slot stays with its owner"
        );
        assert_eq!(map.owner_index(5461), Some(1));
        assert_eq!(map.owner_index(16383), Some(2));
        assert_eq!(
            map.nodes[0].replica_of.as_deref(),
            Some("e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca")
        );
        assert_eq!(map.nodes[1].addr, "127.0.0.1:30002");
        let nodes: serde_json::Value = serde_json::from_str(&map.nodes_json()).unwrap();
        assert_eq!(
            nodes[5]["moving"],
            serde_json::json!([[93, "to", "292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f"]])
        );
        assert_eq!(nodes[1]["moving"], serde_json::json!([]));
    }

    #[test]
    fn demo_map_is_three_masters_three_replicas() {
        let map = ClusterMap::parse_cluster_nodes(&ClusterMap::demo_cluster_nodes()).unwrap();
        assert_eq!(map.node_count(), 6);
        // {user1000}.following is slot 3443: the first master.
        assert_eq!(map.owner_index(3443), Some(0));
        assert_eq!(map.owner_index(12739), Some(2));
        let counts = map.keys_per_node(b"{user1000}.following\n123456789\nfoo\n");
        assert_eq!(counts, vec![1, 0, 2, 0, 0, 0, 0]);
        let nodes: serde_json::Value = serde_json::from_str(&map.nodes_json()).unwrap();
        assert_eq!(nodes[0]["slots"], 5461);
        assert_eq!(nodes[3]["replica_of"], nodes[0]["id"]);
        assert_eq!(nodes[3]["master_addr"], "127.0.0.1:7000");
        let ids: std::collections::HashSet<_> = (0..6).map(|i| nodes[i]["id"].clone()).collect();
        assert_eq!(ids.len(), 6, "six distinct node ids");
    }

    #[test]
    fn errors_name_the_line() {
        let cases = [
            ("garbage", "line 1: expected at least 8 fields, found 1"),
            ("\n\nnot a node id at all but eight fields", "line 3: 'not' is not a node id"),
            (
                "07c37dfeb235 nowhere master - 0 0 1 connected 0-5",
                "line 1: 'nowhere' is not host:port@cport",
            ),
            (
                "07c37dfeb235 1.2.3.4:1@2 master - 0 0 1 connected 0-16384",
                "line 1: bad slot range '0-16384'",
            ),
            (
                "07c37dfeb235 1.2.3.4:1@2 master - 0 0 1 connected 0-5\n07c37dfeb236 1.2.3.4:2@3 master - 0 0 1 connected 5",
                "line 2: slot 5 is also served by 07c37dfeb235",
            ),
            ("", "no nodes: paste the output of `redis-cli cluster nodes`"),
        ];
        for (text, want) in cases {
            let got = ClusterMap::parse_cluster_nodes(text)
                .unwrap_err()
                .to_string();
            assert_eq!(got, want, "{text:?}");
        }
    }

    #[test]
    fn any_text_is_an_error_or_a_map_never_a_panic() {
        for text in [
            "\u{0}",
            "a b c d e f g h [",
            "aaaaaaaa 1:1 master - 0 0 0 c 5-4",
            "aaaaaaaa :0@0 fail,master - 0 0 0 c",
        ] {
            let _ = ClusterMap::parse_cluster_nodes(text);
        }
    }
}

/// The JSON path runs on the host's `JSON.parse`, so it is tested in a real
/// browser: `just test` runs these in headless Chromium.
#[cfg(all(test, target_arch = "wasm32"))]
mod browser_tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

    fn message(result: Result<ClusterMap, JsError>) -> String {
        let error: JsValue = result.unwrap_err().into();
        js_field(&error, "message")
            .and_then(|m| m.as_string())
            .unwrap_or_default()
    }

    #[wasm_bindgen_test]
    fn json_maps_route_keys() {
        let map = ClusterMap::from_json(
            r#"{"nodes":[{"id":"a","addr":"10.0.0.1:7000"},{"id":"b","addr":"10.0.0.2:7000","replicaOf":null}],
                "slots":[{"from":0,"to":8191,"node":"a"},{"from":8192,"to":16383,"node":"b"}]}"#,
        )
        .unwrap();
        assert_eq!(map.owner_of_slot(crate::slot_for_bytes(b"123456789")), 1); // 12739
        assert_eq!(map.owner_of_slot(3443), 0);
        assert_eq!(map.node_label(1), "b 10.0.0.2:7000");
    }

    #[wasm_bindgen_test]
    fn bad_json_maps_say_what_is_wrong() {
        let syntax = message(ClusterMap::from_json("{\n \"nodes\": [ }"));
        assert_eq!(
            syntax,
            "line 2: not JSON: expected value at line 2 column 13"
        );
        let cases = [
            (r#"{"slots":[]}"#, "\"nodes\" must be an array"),
            (r#"{"nodes":[],"slots":[]}"#, "the map has no nodes"),
            (
                r#"{"nodes":[{"id":1,"addr":"x"}],"slots":[]}"#,
                "nodes[0].id must be a string",
            ),
            (
                r#"{"nodes":[{"id":"a","addr":"x:1"}],"slots":[{"from":0,"to":16384,"node":"a"}]}"#,
                "slots[0].to must be a slot from 0 to 16383",
            ),
            (
                r#"{"nodes":[{"id":"a","addr":"x:1"}],"slots":[{"from":0,"to":1,"node":"z"}]}"#,
                "slots[0]: no node has id 'z'",
            ),
            (
                r#"{"nodes":[{"id":"a","addr":"x:1"}],"slots":[{"from":0,"to":9,"node":"a"},{"from":9,"to":9,"node":"a"}]}"#,
                "slot 9 is also served by a",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(message(ClusterMap::from_json(text)), want, "{text}");
        }
    }

    /// The module's CRC path (8 tables on wasm) against the one-bit-at-a-time
    /// reference, on keys long enough to take every slicing step.
    #[wasm_bindgen_test]
    fn slots_in_the_browser_equal_the_bitwise_reference() {
        fn reference(key: &[u8]) -> u16 {
            let tag = key.iter().position(|&b| b == b'{').and_then(|open| {
                let close = open + 1 + key[open + 1..].iter().position(|&b| b == b'}')?;
                (close > open + 1).then(|| &key[open + 1..close])
            });
            zaris_core::crc16_bitwise(tag.unwrap_or(key)) & 0x3fff
        }
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut byte = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Braces one byte in 32, so tags of every length turn up.
            match x % 64 {
                0 => b'{',
                1 => b'}',
                _ => (x >> 32) as u8,
            }
        };
        for len in 0..600 {
            for _ in 0..4 {
                let key: Vec<u8> = (0..len).map(|_| byte()).collect();
                assert_eq!(crate::slot_for_bytes(&key), reference(&key), "{key:?}");
            }
        }
    }

    #[wasm_bindgen_test]
    fn the_api_in_a_browser() {
        let units: Vec<u16> = "{user1000}.following".encode_utf16().collect();
        assert_eq!(crate::slot_for_utf16(&units), 3443);
        assert_eq!(
            crate::slots_for_lines(b"123456789\n{user1000}.x\n"),
            vec![12739, 3443]
        );
        let events = crate::simulate_retries("Moved, Ok", 3, 100, None, 1).unwrap();
        assert!(events.contains(r#""event":"refresh""#), "{events}");
        // A batch read past what was written is an error, not a phantom key.
        let batch = crate::KeyBatch::new(16);
        assert_eq!(batch.slots(16).map(|s| s.len()).ok(), Some(1));
        assert!(batch.slots(17).is_err());
    }
}
