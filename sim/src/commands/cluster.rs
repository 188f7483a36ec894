//! `CLUSTER` and `INFO`, as the node's own view has them.

use super::*;

impl Model {
    pub(super) fn info(&self, me: usize) -> Reply {
        let view = &self.nodes[me].view;
        let role = if view.is_master(me) {
            "master"
        } else {
            "slave"
        };
        Reply::Verbatim(format!(
            "# Server\r\nredis_version:7.2.0\r\nredis_mode:cluster\r\n\r\n# Replication\r\nrole:{role}\r\n\r\n# Cluster\r\ncluster_enabled:1\r\n"
        ))
    }

    /// `CLUSTER` subcommands, from the node's own view.
    pub(super) fn cluster(&self, me: usize, args: &[Vec<u8>]) -> Reply {
        let view = &self.nodes[me].view;
        let sub = args.get(1).map(|a| upper(a)).unwrap_or_default();
        match sub.as_str() {
            "MYID" => Reply::text(&self.nodes[me].id),
            "KEYSLOT" => args.get(2).map_or_else(
                || arity("cluster|keyslot"),
                |k| Reply::Int(i64::from(slot_for_key(k))),
            ),
            "COUNTKEYSINSLOT" | "GETKEYSINSLOT" => {
                let Some(slot) = args
                    .get(2)
                    .and_then(|a| int(a))
                    .filter(|s| (0..SLOTS as i64).contains(s))
                else {
                    return Reply::Error("ERR Invalid slot".into());
                };
                let keys = self.keys_in(me, slot as u16, usize::MAX);
                if sub == "COUNTKEYSINSLOT" {
                    Reply::Int(keys.len() as i64)
                } else {
                    let n = args.get(3).and_then(|a| int(a)).unwrap_or(10).max(0) as usize;
                    Reply::Array(keys.into_iter().take(n).map(Reply::Bulk).collect())
                }
            }
            "SHARDS" => Reply::Array(
                (0..self.nodes.len())
                    .filter(|&m| view.is_master(m))
                    .map(|m| {
                        let mut slots = Vec::new();
                        for &(a, b) in view.ranges(m) {
                            slots.push(Reply::Int(i64::from(a)));
                            slots.push(Reply::Int(i64::from(b)));
                        }
                        let nodes = std::iter::once(m)
                            .chain(view.replicas(m))
                            .map(|n| self.shard_node(view, n))
                            .collect();
                        Reply::Map(vec![
                            (Reply::text("slots"), Reply::Array(slots)),
                            (Reply::text("nodes"), Reply::Array(nodes)),
                        ])
                    })
                    .collect(),
            ),
            "SLOTS" => {
                let mut ranges = Vec::new();
                for m in (0..self.nodes.len()).filter(|&m| view.is_master(m)) {
                    for &(a, b) in view.ranges(m) {
                        let mut entry = vec![Reply::Int(i64::from(a)), Reply::Int(i64::from(b))];
                        for n in std::iter::once(m).chain(view.replicas(m)) {
                            entry.push(Reply::Array(vec![
                                Reply::text(&self.nodes[n].host),
                                Reply::Int(i64::from(self.nodes[n].port)),
                                Reply::text(&self.nodes[n].id),
                            ]));
                        }
                        ranges.push((a, Reply::Array(entry)));
                    }
                }
                ranges.sort_by_key(|(a, _)| *a);
                Reply::Array(ranges.into_iter().map(|(_, r)| r).collect())
            }
            "NODES" => Reply::Verbatim(self.nodes_text(me)),
            "INFO" => {
                let served = |m: usize| {
                    view.ranges(m)
                        .iter()
                        .map(|&(a, b)| usize::from(b - a) + 1)
                        .sum::<usize>()
                };
                let masters = (0..self.nodes.len()).filter(|&m| view.member[m]);
                let assigned: usize = masters.clone().map(served).sum();
                let failing: usize = masters.filter(|&m| view.failed[m]).map(served).sum();
                let state = if assigned == SLOTS && failing == 0 {
                    "ok"
                } else {
                    "fail"
                };
                let members = view.member.iter().filter(|m| **m).count();
                let size = (0..self.nodes.len())
                    .filter(|&m| view.is_master(m) && !view.ranges(m).is_empty())
                    .count();
                Reply::Verbatim(format!(
                    "cluster_state:{state}\r\ncluster_slots_assigned:{assigned}\r\ncluster_slots_ok:{}\r\n\
                     cluster_slots_pfail:0\r\ncluster_slots_fail:{failing}\r\ncluster_known_nodes:{members}\r\n\
                     cluster_size:{size}\r\ncluster_current_epoch:{}\r\ncluster_my_epoch:{}\r\n",
                    assigned - failing,
                    self.current_epoch,
                    view.epoch[view.master_of[me].unwrap_or(me)],
                ))
            }
            _ => Reply::Error(format!(
                "ERR unknown subcommand '{}'. Try CLUSTER HELP.",
                sub.to_ascii_lowercase()
            )),
        }
    }

    /// One node of a `CLUSTER SHARDS` shard.
    pub(super) fn shard_node(&self, view: &crate::model::Layout, n: usize) -> Reply {
        let node = &self.nodes[n];
        let health = if view.failed[n] {
            "fail"
        } else if node.syncing_until.is_some_and(|t| t > now()) {
            "loading"
        } else {
            "online"
        };
        let field = |k: &str, v: Reply| (Reply::text(k), v);
        Reply::Map(vec![
            field("id", Reply::text(&node.id)),
            field("port", Reply::Int(i64::from(node.port))),
            field("ip", Reply::text(&node.host)),
            field("endpoint", Reply::text(&node.host)),
            field("hostname", Reply::text(&node.host)),
            field(
                "role",
                Reply::text(if view.is_master(n) {
                    "master"
                } else {
                    "replica"
                }),
            ),
            field(
                "replication-offset",
                Reply::Int(node.offset.max(node.applied) as i64),
            ),
            field("health", Reply::text(health)),
        ])
    }

    /// `CLUSTER NODES` from node `me`'s view.
    pub(super) fn nodes_text(&self, me: usize) -> String {
        use std::fmt::Write as _;
        let view = &self.nodes[me].view;
        let mut text = String::new();
        for n in (0..self.nodes.len()).filter(|&n| view.member[n]) {
            let node = &self.nodes[n];
            let mut flags = Vec::new();
            if n == me {
                flags.push("myself");
            }
            flags.push(if view.is_master(n) { "master" } else { "slave" });
            if view.failed[n] {
                flags.push("fail");
            }
            let master = view.master_of[n].map_or("-".to_owned(), |m| self.nodes[m].id.clone());
            let _ = write!(
                text,
                "{} {}:{}@{},{} {} {master} 0 0 {} connected",
                node.id,
                node.host,
                node.port,
                node.port + 10000,
                node.host,
                flags.join(","),
                view.epoch[view.master_of[n].unwrap_or(n)],
            );
            for &(a, b) in view.ranges(n) {
                if a == b {
                    let _ = write!(text, " {a}");
                } else {
                    let _ = write!(text, " {a}-{b}");
                }
            }
            if n == me {
                for (slot, to) in &self.nodes[me].migrating {
                    let _ = write!(text, " [{slot}->-{}]", self.nodes[*to].id);
                }
                for (slot, from) in &self.nodes[me].importing {
                    let _ = write!(text, " [{slot}-<-{}]", self.nodes[*from].id);
                }
            }
            text.push('\n');
        }
        text
    }

    /// Up to `n` keys of `slot` on node `i`, in order.
    #[must_use]
    pub fn keys_in(&self, i: usize, slot: u16, n: usize) -> Vec<Vec<u8>> {
        self.nodes[i]
            .data
            .keys()
            .filter(|k| slot_for_key(k) == slot)
            .take(n)
            .cloned()
            .collect()
    }
}
