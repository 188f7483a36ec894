//! `zaris map SEED`: the map as the client builds it (the most complete
//! map most of the nodes it asks agree on), then every node's own view
//! (`CLUSTER NODES`, read by the core's parser) held against it slot by
//! slot: who disagrees, on which slots, and which slots are uncovered or
//! migrating. Inconsistent (exit 1): a node that disagrees or does not
//! answer, or slots no one serves. A migration under way is reported, not
//! held against the cluster.

use std::process::ExitCode;

use futures_util::future::join_all;
use serde::Serialize;
use zaris_client::{Client, SlotRange};
use zaris_core::{parse_cluster_nodes, ClusterNode, SlotEntry, SLOT_COUNT};

use crate::connect::{self, Options};
use crate::slot::json;
use crate::{show, Outcome};

#[derive(clap::Args)]
pub(crate) struct Args {
    /// A node of the cluster (host:port).
    seed: String,
    /// JSON on stdout instead of tables.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    connection: Options,
}

/// The whole report.
#[derive(Serialize)]
struct Report {
    seed: String,
    /// The client's map.
    map: Vec<Range>,
    slots_covered: u32,
    uncovered: Vec<Span>,
    migrating: Vec<Migration>,
    nodes: Vec<View>,
    consistent: bool,
}

#[derive(Serialize)]
struct Range {
    first: u16,
    last: u16,
    master: String,
    replicas: Vec<String>,
}

#[derive(Serialize, Clone, Copy, PartialEq, Eq)]
struct Span {
    first: u16,
    last: u16,
}

/// A slot on its way from one node to another, as one of them says.
#[derive(Serialize)]
struct Migration {
    slot: u16,
    from: String,
    to: String,
    /// The node whose `CLUSTER NODES` says so.
    reported_by: String,
}

/// One node's view held against the client's map.
#[derive(Serialize)]
struct View {
    node: String,
    /// `master` or `replica`, as the node says of itself.
    role: String,
    /// Why its view could not be had (it did not answer, or said something else).
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    /// Slots on whose owner it agrees with the map.
    agrees: u32,
    /// Runs of slots where it names another owner (or none).
    differs: Vec<Difference>,
}

#[derive(Serialize)]
struct Difference {
    first: u16,
    last: u16,
    /// The owner this node names (`None`: no one).
    says: Option<String>,
    /// The owner in the client's map.
    map: Option<String>,
}

pub(crate) async fn run(args: Args) -> Outcome {
    let client = args
        .connection
        .connect(std::slice::from_ref(&args.seed))
        .await?;
    let ranges = client.slot_ranges();
    let mut map_owner: Vec<Option<&str>> = vec![None; usize::from(SLOT_COUNT)];
    for r in &ranges {
        for slot in r.first..=r.last {
            map_owner[usize::from(slot)] = Some(&r.master);
        }
    }
    let nodes = nodes_of(&ranges, &args.seed);
    let asking = connect::spinner(&format!("asking {} nodes for their view", nodes.len()));
    let answers = join_all(nodes.iter().map(|node| cluster_nodes(&client, node))).await;
    asking.finish_and_clear();
    let mut migrating = Vec::new();
    let mut views = Vec::new();
    for (node, answer) in nodes.iter().zip(answers) {
        views.push(match answer {
            Ok(text) => view_of(node, &text, &map_owner, &mut migrating),
            Err(error) => View {
                node: node.clone(),
                role: "?".into(),
                error: Some(error),
                agrees: 0,
                differs: Vec::new(),
            },
        });
    }
    let uncovered = runs(0..SLOT_COUNT, |slot| map_owner[usize::from(slot)].is_none());
    let slots_covered = u32::from(SLOT_COUNT)
        - uncovered
            .iter()
            .map(|s| u32::from(s.last - s.first) + 1)
            .sum::<u32>();
    let consistent = uncovered.is_empty()
        && views
            .iter()
            .all(|v| v.error.is_none() && v.differs.is_empty());
    let report = Report {
        seed: args.seed,
        map: ranges
            .into_iter()
            .map(|r| Range {
                first: r.first,
                last: r.last,
                master: r.master,
                replicas: r.replicas,
            })
            .collect(),
        slots_covered,
        uncovered,
        migrating,
        nodes: views,
        consistent,
    };
    if args.json {
        println!("{}", json(&report));
    } else {
        print!("{}", render(&report));
    }
    Ok(if consistent {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Every node to ask: each master in slot order followed by its
/// replicas, then the seed if the map does not name it.
fn nodes_of(ranges: &[SlotRange], seed: &str) -> Vec<String> {
    let mut nodes: Vec<String> = Vec::new();
    for r in ranges {
        for node in std::iter::once(&r.master).chain(&r.replicas) {
            if !nodes.contains(node) {
                nodes.push(node.clone());
            }
        }
    }
    let seed = seed.rsplit("://").next().unwrap_or(seed);
    if !nodes.iter().any(|n| n == seed) {
        nodes.push(seed.to_owned());
    }
    nodes
}

/// `CLUSTER NODES` as `node` answers it, or why not.
async fn cluster_nodes(client: &Client, node: &str) -> Result<String, String> {
    match client.cmd_on_node(node, &["CLUSTER", "NODES"]).await {
        Ok(value) => value
            .as_bytes()
            .map(|text| String::from_utf8_lossy(text).into_owned())
            .ok_or_else(|| format!("answered {value:?} to CLUSTER NODES")),
        Err(e) => Err(e.to_string()),
    }
}

/// `node`'s view (`CLUSTER NODES` text) held against the map; the
/// migrations it reports go to `migrating`.
fn view_of(
    node: &str,
    text: &str,
    map_owner: &[Option<&str>],
    migrating: &mut Vec<Migration>,
) -> View {
    let mut says: Vec<Option<String>> = vec![None; usize::from(SLOT_COUNT)];
    let mut role = String::from("?");
    let lines: Result<Vec<_>, _> = parse_cluster_nodes(text).collect();
    let lines = match lines {
        Ok(lines) => lines,
        Err(e) => {
            return View {
                node: node.to_owned(),
                role,
                error: Some(format!("its CLUSTER NODES does not parse: {e}")),
                agrees: 0,
                differs: Vec::new(),
            }
        }
    };
    // A node that has met no other does not know its own IP yet and
    // prints `:port` for itself: that is the address it was asked at.
    let addr = |line: &ClusterNode<'_>| {
        if line.host.is_empty() && line.flags.myself {
            node.to_owned()
        } else {
            line.addr.to_owned()
        }
    };
    let addr_of = |id: &str| {
        lines
            .iter()
            .find(|l| l.id == id)
            .map_or_else(|| id.to_owned(), addr)
    };
    for line in &lines {
        if line.flags.myself {
            role = if line.flags.master {
                "master"
            } else {
                "replica"
            }
            .into();
        }
        for entry in line.slots().flatten() {
            match entry {
                SlotEntry::Served { first, last } => {
                    for slot in first..=last {
                        says[usize::from(slot)] = Some(addr(line));
                    }
                }
                SlotEntry::Migrating { slot, to } => migrating.push(Migration {
                    slot,
                    from: addr(line),
                    to: addr_of(to),
                    reported_by: node.to_owned(),
                }),
                SlotEntry::Importing { slot, from } => migrating.push(Migration {
                    slot,
                    from: addr_of(from),
                    to: addr(line),
                    reported_by: node.to_owned(),
                }),
            }
        }
    }
    let differ = |slot: u16| says[usize::from(slot)].as_deref() != map_owner[usize::from(slot)];
    let differs = runs(0..SLOT_COUNT, differ)
        .into_iter()
        .flat_map(|span| {
            // One entry per run of the same pair of owners.
            let pair = |slot: u16| {
                (
                    says[usize::from(slot)].clone(),
                    map_owner[usize::from(slot)],
                )
            };
            let mut out: Vec<Difference> = Vec::new();
            for slot in span.first..=span.last {
                let (said, mapped) = pair(slot);
                match out.last_mut() {
                    Some(d) if d.says == said && d.map.as_deref() == mapped => d.last = slot,
                    _ => out.push(Difference {
                        first: slot,
                        last: slot,
                        says: said,
                        map: mapped.map(str::to_owned),
                    }),
                }
            }
            out
        })
        .collect::<Vec<_>>();
    let differing: u32 = differs
        .iter()
        .map(|d| u32::from(d.last - d.first) + 1)
        .sum();
    View {
        node: node.to_owned(),
        role,
        error: None,
        agrees: u32::from(SLOT_COUNT) - differing,
        differs,
    }
}

/// The runs of consecutive slots in `slots` for which `test` holds.
fn runs(slots: std::ops::Range<u16>, test: impl Fn(u16) -> bool) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::new();
    for slot in slots.filter(|&s| test(s)) {
        match out.last_mut() {
            Some(span) if span.last + 1 == slot => span.last = slot,
            _ => out.push(Span {
                first: slot,
                last: slot,
            }),
        }
    }
    out
}

fn render(report: &Report) -> String {
    let masters = report
        .map
        .iter()
        .map(|r| &r.master)
        .collect::<std::collections::BTreeSet<_>>();
    let mut out = format!(
        "the map of the cluster of {} as the client built it: {} of {} slots on {} masters\n\n",
        report.seed,
        report.slots_covered,
        SLOT_COUNT,
        masters.len()
    );
    let mut rows = vec![vec!["SLOTS".into(), "MASTER".into(), "REPLICAS".into()]];
    for r in &report.map {
        rows.push(vec![
            show::slots(r.first, r.last),
            r.master.clone(),
            r.replicas.join(", "),
        ]);
    }
    out.push_str(&show::table(&rows));
    out.push_str("\neach node's own view (CLUSTER NODES):\n");
    let mut rows = vec![vec![
        "NODE".into(),
        "ROLE".into(),
        "AGREES".into(),
        "DIFFERS".into(),
    ]];
    for v in &report.nodes {
        let differs = match &v.error {
            Some(e) => format!("no view: {e}"),
            None if v.differs.is_empty() => "-".into(),
            None => v
                .differs
                .iter()
                .map(|d| {
                    format!(
                        "{}: says {}, the map {}",
                        show::slots(d.first, d.last),
                        d.says.as_deref().unwrap_or("no owner"),
                        d.map.as_deref().unwrap_or("no owner")
                    )
                })
                .collect::<Vec<_>>()
                .join("; "),
        };
        let agrees = if v.error.is_some() {
            "-".into()
        } else {
            format!("{} slots", v.agrees)
        };
        rows.push(vec![v.node.clone(), v.role.clone(), agrees, differs]);
    }
    out.push_str(&show::table(&rows));
    out.push('\n');
    if report.uncovered.is_empty() {
        out.push_str("uncovered: none\n");
    } else {
        let spans: Vec<String> = report
            .uncovered
            .iter()
            .map(|s| show::slots(s.first, s.last))
            .collect();
        out.push_str(&format!(
            "uncovered: {} (no master serves them)\n",
            spans.join(", ")
        ));
    }
    if report.migrating.is_empty() {
        out.push_str("migrating: none\n");
    } else {
        for m in &report.migrating {
            out.push_str(&format!(
                "migrating: slot {} from {} to {} (says {})\n",
                m.slot, m.from, m.to, m.reported_by
            ));
        }
    }
    let disagreeing = report
        .nodes
        .iter()
        .filter(|v| !v.differs.is_empty())
        .count();
    let silent = report.nodes.iter().filter(|v| v.error.is_some()).count();
    if report.consistent {
        out.push_str(&format!(
            "consistent: all {} nodes agree with the map\n",
            report.nodes.len()
        ));
    } else {
        out.push_str(&format!(
            "INCONSISTENT: {disagreeing} of {} nodes disagree, {silent} gave no view, {} slots uncovered\n",
            report.nodes.len(),
            u32::from(SLOT_COUNT) - report.slots_covered
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const VIEW: &str = "\
aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-99 101-8191 [5->-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb]
bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb 127.0.0.1:7001@17001 master - 0 0 2 connected 8192-16383
cccccccccccccccccccccccccccccccccccccccc 127.0.0.1:7002@17002 slave aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 0 0 1 connected
";

    #[test]
    fn a_view_is_held_against_the_map_slot_by_slot() {
        let mut map_owner: Vec<Option<&str>> = vec![Some("127.0.0.1:7000"); 8192];
        map_owner.extend(vec![Some("127.0.0.1:7001"); 8192]);
        map_owner[16383] = None;
        let mut migrating = Vec::new();
        let view = view_of("127.0.0.1:7000", VIEW, &map_owner, &mut migrating);
        assert_eq!(view.role, "master");
        // Slot 100: the node names no owner; 16383: the map has none.
        let differs: Vec<(u16, u16, Option<&str>, Option<&str>)> = view
            .differs
            .iter()
            .map(|d| (d.first, d.last, d.says.as_deref(), d.map.as_deref()))
            .collect();
        assert_eq!(
            differs,
            [
                (100, 100, None, Some("127.0.0.1:7000")),
                (16383, 16383, Some("127.0.0.1:7001"), None)
            ]
        );
        assert_eq!(view.agrees, 16382);
        assert_eq!(migrating.len(), 1);
        assert_eq!(
            (migrating[0].slot, migrating[0].to.as_str()),
            (5, "127.0.0.1:7001")
        );
        let garbled = view_of("x:1", "not a line\n", &map_owner, &mut migrating);
        assert!(garbled.error.unwrap().contains("does not parse"));
    }

    #[test]
    fn a_node_that_met_no_other_is_where_it_was_asked() {
        let alone = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa :7000@17000 myself,master - 0 0 0 connected 0-16383\n";
        let map_owner = vec![Some("127.0.0.1:7000"); 16384];
        let view = view_of("127.0.0.1:7000", alone, &map_owner, &mut Vec::new());
        assert!(view.differs.is_empty() && view.agrees == 16384);
    }

    #[test]
    fn runs_join_consecutive_slots() {
        let spans = runs(0..20, |s| (3..=5).contains(&s) || s == 9);
        assert!(spans == [Span { first: 3, last: 5 }, Span { first: 9, last: 9 }]);
    }
}
