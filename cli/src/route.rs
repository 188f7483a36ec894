//! `zaris route -- COMMAND ARGS...`: where a command must go, as the
//! core's `command_route` decides it for the client: its keys (the
//! servers' own key specifications), their slots, and one slot's owner,
//! any node, every master or every node; or why no one node can run it.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::process::ExitCode;

use serde::Serialize;
use zaris_core::{
    command_info, command_keys, command_route, slot_for_key, CommandError, Reply, Target,
};

use crate::connect::Options;
use crate::slot::json;
use crate::{show, Outcome};

#[derive(clap::Args)]
pub(crate) struct Args {
    /// A node of the cluster (host:port), to name the owner.
    #[arg(long)]
    seed: Option<String>,
    /// JSON on stdout instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    connection: Options,
    /// The command line, after `--` (`zaris route -- MSET a 1 b 2`).
    #[arg(required = true, last = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

/// Where the command goes, for `--json`.
#[derive(Serialize)]
struct Routed {
    command: String,
    keys: Vec<KeyAt>,
    /// `slot`, `any-node`, `all-masters`, `all-nodes`, or `refused`.
    target: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    slot: Option<u16>,
    /// How a fanned-out command's answers combine.
    #[serde(skip_serializing_if = "Option::is_none")]
    combine: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    owner: Option<String>,
    write: bool,
    blocking: bool,
    /// Why no one node can run it.
    #[serde(skip_serializing_if = "Option::is_none")]
    refused: Option<String>,
}

#[derive(Serialize)]
struct KeyAt {
    /// Its position in the command line (the name is 0).
    arg: usize,
    key: String,
    slot: u16,
}

pub(crate) async fn run(args: Args) -> Outcome {
    let line: Vec<&[u8]> = args.command.iter().map(|a| a.as_bytes()).collect();
    let name = show::key(line[0]).to_uppercase();
    let keys: Vec<KeyAt> = command_keys(&line)
        .map(|keys| {
            keys.filter_map(|at| {
                line.get(at).map(|key| KeyAt {
                    arg: at,
                    key: show::key(key).into_owned(),
                    slot: slot_for_key(key),
                })
            })
            .collect()
        })
        .unwrap_or_default();
    let mut routed = Routed {
        command: name,
        keys,
        target: "refused",
        slot: None,
        combine: None,
        owner: None,
        write: false,
        blocking: false,
        refused: None,
    };
    if let Some(info) = command_info(&line) {
        routed.write = info.is_write();
        routed.blocking = info.is_blocking();
    }
    match command_route(&line) {
        Ok((target, _)) => match target {
            Target::Slot(slot) => {
                routed.target = "slot";
                routed.slot = Some(slot);
            }
            Target::AnyNode => routed.target = "any-node",
            Target::AllMasters(reply) => {
                routed.target = "all-masters";
                routed.combine = Some(combine(reply).into());
            }
            Target::AllNodes(reply) => {
                routed.target = "all-nodes";
                routed.combine = Some(combine(reply).into());
            }
        },
        Err(error) => routed.refused = Some(refusal(&error, &routed.keys)),
    }
    if let (Some(seed), Some(slot)) = (&args.seed, routed.slot) {
        let client = args.connection.connect(std::slice::from_ref(seed)).await?;
        routed.owner = client
            .slot_ranges()
            .into_iter()
            .find(|r| (r.first..=r.last).contains(&slot))
            .map(|r| r.master);
    }
    if args.json {
        println!("{}", json(&routed));
    } else {
        print!("{}", render(&routed));
    }
    Ok(if routed.refused.is_some() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// How answers combine, in words.
fn combine(reply: Reply) -> &'static str {
    match reply {
        Reply::EachNode => "each node's answer",
        Reply::AllSucceeded => "one answer if every node succeeds",
        Reply::OneSucceeded => "one answer if any node succeeds",
        Reply::Sum => "the sum",
        Reply::LogicalAnd => "true where all are",
        Reply::LogicalOr => "true where any is",
        Reply::Min => "the least",
        Reply::Max => "the greatest",
        _ => "each node's answer, combined the command's own way",
    }
}

/// Why no one node can run the command, naming the keys where it is them.
fn refusal(error: &CommandError, keys: &[KeyAt]) -> String {
    match *error {
        CommandError::CrossSlot { first, second } => {
            let named = |slot: u16| {
                keys.iter()
                    .find(|k| k.slot == slot)
                    .map_or_else(String::new, |k| format!(" ({})", k.key))
            };
            format!(
                "no one node can run it: its keys hash to slot {first}{} and slot {second}{}. \
                 Give them one hash tag ({{user1}}:a, {{user1}}:b) to keep them together",
                named(first),
                named(second)
            )
        }
        other => format!("no node would take it: {other}"),
    }
}

fn render(routed: &Routed) -> String {
    let mut out = String::new();
    let kind = match (routed.write, routed.blocking) {
        (_, true) => " (blocking)",
        (true, false) => " (write)",
        (false, false) => "",
    };
    out.push_str(&format!("{}{kind}\n", routed.command));
    if routed.keys.is_empty() {
        out.push_str("keys: none\n");
    } else {
        let mut rows = vec![vec!["ARG".into(), "KEY".into(), "SLOT".into()]];
        for k in &routed.keys {
            rows.push(vec![k.arg.to_string(), k.key.clone(), k.slot.to_string()]);
        }
        out.push_str(&show::table(&rows));
    }
    let line = match (routed.target, routed.slot) {
        ("slot", Some(slot)) => match &routed.owner {
            Some(owner) => format!("goes to the owner of slot {slot}: {owner}"),
            None => format!("goes to the owner of slot {slot}"),
        },
        ("any-node", _) => "goes to any node".into(),
        ("all-masters", _) => format!(
            "goes to every master; answers: {}",
            routed.combine.as_deref().unwrap_or_default()
        ),
        ("all-nodes", _) => format!(
            "goes to every node, replicas too; answers: {}",
            routed.combine.as_deref().unwrap_or_default()
        ),
        _ => routed.refused.clone().unwrap_or_default(),
    };
    out.push_str(&line);
    out.push('\n');
    out
}
