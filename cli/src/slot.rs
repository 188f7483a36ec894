//! `zaris slot`: where keys land. Each key's slot and hashed span (and
//! owner, given a seed); or, for many keys on stdin, how they spread over
//! the slots and nodes, how uneven that is, and which hash tags are hot.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::process::ExitCode;

use serde::Serialize;
use zaris_core::{hash_tag, hash_tag_span, key_lines, slot_for_key, SLOT_COUNT};

use crate::connect::{self, Failure, Options};
use crate::{show, Outcome};

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The keys (any bytes).
    #[arg(required_unless_present = "stdin", conflicts_with = "stdin")]
    keys: Vec<OsString>,
    /// Read keys from stdin, one per line, and report how they spread.
    #[arg(long)]
    stdin: bool,
    /// A node of the cluster (host:port), to name each key's owner.
    #[arg(long)]
    seed: Option<String>,
    /// How many hot slots and hot tags to list (--stdin).
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// JSON on stdout instead of a table.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    connection: Options,
}

pub(crate) async fn run(args: Args) -> Outcome {
    let client = match &args.seed {
        Some(seed) => Some(args.connection.connect(std::slice::from_ref(seed)).await?),
        None => None,
    };
    let owners = client.as_ref().map(|c| owner_table(&c.slot_ranges()));
    if args.stdin {
        let mut text = Vec::new();
        let reading = connect::spinner("reading keys from stdin");
        std::io::stdin()
            .lock()
            .read_to_end(&mut text)
            .map_err(|e| Failure::new(format!("reading stdin: {e}")))?;
        reading.finish_and_clear();
        let spread = Spread::of(&text, owners.as_deref(), args.top);
        if args.json {
            println!("{}", json(&spread));
        } else {
            print!("{}", spread.render());
        }
        return Ok(ExitCode::SUCCESS);
    }
    let placed: Vec<Placed> = args
        .keys
        .iter()
        .map(|key| {
            let bytes = key.as_bytes();
            let slot = slot_for_key(bytes);
            let span = hash_tag_span(bytes).unwrap_or(0..bytes.len());
            Placed {
                key: show::key(bytes).into_owned(),
                slot,
                hashed: show::key(&bytes[span.clone()]).into_owned(),
                hashed_from: span.start,
                hashed_to: span.end,
                owner: owners.as_deref().and_then(|o| owner_in(o, slot)),
            }
        })
        .collect();
    if args.json {
        println!("{}", json(&placed));
        return Ok(ExitCode::SUCCESS);
    }
    let mut rows = vec![vec![
        "KEY".into(),
        "SLOT".into(),
        "HASHED".into(),
        "BYTES".into(),
    ]];
    if client.is_some() {
        rows[0].push("OWNER".into());
    }
    for p in &placed {
        let mut row = vec![
            p.key.clone(),
            p.slot.to_string(),
            p.hashed.clone(),
            format!("{}..{}", p.hashed_from, p.hashed_to),
        ];
        if client.is_some() {
            row.push(p.owner.clone().unwrap_or_else(|| "(no owner)".into()));
        }
        rows.push(row);
    }
    print!("{}", show::table(&rows));
    Ok(ExitCode::SUCCESS)
}

/// One key placed.
#[derive(Serialize)]
struct Placed {
    key: String,
    slot: u16,
    /// The bytes hashed: the hash tag's content, or the whole key.
    hashed: String,
    hashed_from: usize,
    hashed_to: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    owner: Option<String>,
}

/// The client's map as `(first, last, master)` ranges, in slot order.
fn owner_table(ranges: &[zaris_client::SlotRange]) -> Vec<(u16, u16, String)> {
    ranges
        .iter()
        .map(|r| (r.first, r.last, r.master.clone()))
        .collect()
}

/// The master of `slot` in `owners`.
fn owner_in(owners: &[(u16, u16, String)], slot: u16) -> Option<String> {
    owners
        .iter()
        .find(|(first, last, _)| (*first..=*last).contains(&slot))
        .map(|(_, _, node)| node.clone())
}

/// How many keys went where.
#[derive(Serialize)]
struct Spread {
    keys: usize,
    slots_used: usize,
    /// Keys in the fullest slot over the mean per slot.
    slot_imbalance: f64,
    hot_slots: Vec<HotSlot>,
    /// Per master, with --seed; empty without.
    nodes: Vec<NodeShare>,
    /// Keys on the fullest master over the mean per master, with --seed.
    #[serde(skip_serializing_if = "Option::is_none")]
    node_imbalance: Option<f64>,
    hot_tags: Vec<HotTag>,
}

#[derive(Serialize)]
struct HotSlot {
    slot: u16,
    keys: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    owner: Option<String>,
}

#[derive(Serialize)]
struct NodeShare {
    node: String,
    slots: u32,
    keys: u64,
}

#[derive(Serialize)]
struct HotTag {
    tag: String,
    slot: u16,
    keys: u64,
}

impl Spread {
    /// The spread of the keys in `text` (one per line, as the core splits
    /// lines), over `owners` when the map is known.
    fn of(text: &[u8], owners: Option<&[(u16, u16, String)]>, top: usize) -> Self {
        let mut per_slot = vec![0u64; usize::from(SLOT_COUNT)];
        let mut tags: HashMap<&[u8], u64> = HashMap::new();
        let mut keys = 0;
        for key in key_lines(text) {
            keys += 1;
            per_slot[usize::from(slot_for_key(key))] += 1;
            let tag = hash_tag(key);
            if tag.len() != key.len() {
                *tags.entry(tag).or_default() += 1;
            }
        }
        let mut hot: Vec<(u16, u64)> = (0..SLOT_COUNT)
            .map(|s| (s, per_slot[usize::from(s)]))
            .filter(|&(_, n)| n > 0)
            .collect();
        let slots_used = hot.len();
        hot.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let max_slot = hot.first().map_or(0, |&(_, n)| n);
        let mean_slot = keys as f64 / f64::from(SLOT_COUNT);
        let mut nodes: Vec<NodeShare> = Vec::new();
        for (first, last, node) in owners.unwrap_or(&[]) {
            let keys: u64 = per_slot[usize::from(*first)..=usize::from(*last)]
                .iter()
                .sum();
            let slots = u32::from(last - first) + 1;
            match nodes.iter_mut().find(|n| n.node == *node) {
                Some(share) => {
                    share.keys += keys;
                    share.slots += slots;
                }
                None => nodes.push(NodeShare {
                    node: node.clone(),
                    slots,
                    keys,
                }),
            }
        }
        let node_imbalance = (!nodes.is_empty() && keys > 0).then(|| {
            let max = nodes.iter().map(|n| n.keys).max().unwrap_or(0) as f64;
            max / (keys as f64 / nodes.len() as f64)
        });
        let mut hot_tags: Vec<(&[u8], u64)> = tags.into_iter().filter(|&(_, n)| n > 1).collect();
        hot_tags.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        Spread {
            keys,
            slots_used,
            slot_imbalance: if keys == 0 {
                0.0
            } else {
                max_slot as f64 / mean_slot
            },
            hot_slots: hot
                .into_iter()
                .take(top)
                .map(|(slot, keys)| HotSlot {
                    slot,
                    keys,
                    owner: owners.and_then(|o| owner_in(o, slot)),
                })
                .collect(),
            nodes,
            node_imbalance,
            hot_tags: hot_tags
                .into_iter()
                .take(top)
                .map(|(tag, keys)| HotTag {
                    tag: show::key(tag).into_owned(),
                    slot: slot_for_key(tag),
                    keys,
                })
                .collect(),
        }
    }

    fn render(&self) -> String {
        let mut out = format!(
            "{} keys in {} of {} slots; the fullest slot holds {:.1}x the mean\n",
            self.keys, self.slots_used, SLOT_COUNT, self.slot_imbalance
        );
        if self.nodes.is_empty() {
            out.push_str("(give --seed for the counts per node)\n");
        } else {
            let mut rows = vec![vec![
                "NODE".into(),
                "SLOTS".into(),
                "KEYS".into(),
                "SHARE".into(),
            ]];
            for n in &self.nodes {
                rows.push(vec![
                    n.node.clone(),
                    n.slots.to_string(),
                    n.keys.to_string(),
                    format!("{:.1}%", 100.0 * n.keys as f64 / self.keys.max(1) as f64),
                ]);
            }
            out.push('\n');
            out.push_str(&show::table(&rows));
            if let Some(imbalance) = self.node_imbalance {
                out.push_str(&format!(
                    "imbalance (max over mean, per node): {imbalance:.2}\n"
                ));
            }
        }
        if !self.hot_slots.is_empty() {
            let mut rows = vec![vec!["HOT SLOT".into(), "KEYS".into(), "OWNER".into()]];
            for h in &self.hot_slots {
                rows.push(vec![
                    h.slot.to_string(),
                    h.keys.to_string(),
                    h.owner.clone().unwrap_or_default(),
                ]);
            }
            out.push('\n');
            out.push_str(&show::table(&rows));
        }
        if !self.hot_tags.is_empty() {
            let mut rows = vec![vec!["HOT TAG".into(), "SLOT".into(), "KEYS".into()]];
            for t in &self.hot_tags {
                rows.push(vec![t.tag.clone(), t.slot.to_string(), t.keys.to_string()]);
            }
            out.push('\n');
            out.push_str(&show::table(&rows));
        }
        out
    }
}

/// `value` as JSON text (the types here always serialize).
pub(crate) fn json(value: &impl Serialize) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_keys_spread_over_slots_nodes_and_tags() {
        let text = b"{u1}a\n{u1}b\n{u1}c\nplain\n{u2}x\n{u2}y\n";
        let owners = vec![(0, 8191, "a:1".to_owned()), (8192, 16383, "b:1".to_owned())];
        let spread = Spread::of(text, Some(&owners), 10);
        assert_eq!(spread.keys, 6);
        assert_eq!(spread.slots_used, 3);
        assert_eq!(spread.hot_slots[0].slot, slot_for_key(b"u1"));
        assert_eq!(spread.hot_slots[0].keys, 3);
        let tags: Vec<(&str, u64)> = spread
            .hot_tags
            .iter()
            .map(|t| (t.tag.as_str(), t.keys))
            .collect();
        assert_eq!(tags, [("u1", 3), ("u2", 2)]);
        let on_a: u64 = [(&b"u1"[..], 3), (b"plain", 1), (b"u2", 2)]
            .iter()
            .filter(|(hashed, _)| slot_for_key(hashed) < 8192)
            .map(|(_, keys)| keys)
            .sum();
        assert_eq!(
            spread
                .nodes
                .iter()
                .find(|n| n.node == "a:1")
                .map_or(0, |n| n.keys),
            on_a
        );
        assert_eq!(spread.nodes.iter().map(|n| n.keys).sum::<u64>(), 6);
        let max = spread.nodes.iter().map(|n| n.keys).max().unwrap() as f64;
        assert_eq!(spread.node_imbalance, Some(max / 3.0));
        assert!(spread.render().contains("6 keys in 3 of 16384 slots"));
    }
}
