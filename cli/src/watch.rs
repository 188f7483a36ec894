//! `zaris watch SEED`: ownership changes as the client sees them, live,
//! until Ctrl-C: each range of slots that moved, from which owner to
//! which, when, and what revealed it (a poll, a refresh and why, a
//! `MOVED`). For watching a migration or a failover happen.

use std::process::ExitCode;
use std::time::Duration;

use serde::Serialize;
use zaris_client::OwnershipEvent;

use crate::connect::Options;
use crate::{show, Outcome};

#[derive(clap::Args)]
pub(crate) struct Args {
    /// A node of the cluster (host:port).
    seed: String,
    /// How often the whole map is asked for (a change nothing else reveals
    /// shows within this).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = humantime::parse_duration)]
    interval: Duration,
    /// One JSON object per line on stdout instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    connection: Options,
}

/// One change, for `--json`.
#[derive(Serialize)]
struct Change<'a> {
    at: String,
    first: u16,
    last: u16,
    old_owner: Option<&'a str>,
    new_owner: Option<&'a str>,
    revealed: String,
}

pub(crate) async fn run(args: Args) -> Outcome {
    let interval = args.interval;
    let client = args
        .connection
        .connect_with(std::slice::from_ref(&args.seed), |b| {
            b.poll_interval(interval)
        })
        .await?;
    let mut changes = client.ownership_changes();
    let ranges = client.slot_ranges();
    let masters: std::collections::BTreeSet<&str> =
        ranges.iter().map(|r| r.master.as_str()).collect();
    if args.json {
        let start = serde_json::json!({
            "watching": args.seed,
            "ranges": ranges.len(),
            "masters": masters,
            "interval_ms": u64::try_from(interval.as_millis()).unwrap_or(u64::MAX),
        });
        println!("{start}");
    } else {
        println!(
            "watching {} ({} ranges on {} masters; the map asked for every {}); Ctrl-C stops",
            args.seed,
            ranges.len(),
            masters.len(),
            humantime::format_duration(interval)
        );
    }
    let mut missed = 0;
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => break,
            change = changes.next() => {
                let Some(change) = change else { break };
                if changes.missed() > missed {
                    missed = changes.missed();
                    eprintln!("zaris: fell behind; {missed} changes were not shown");
                }
                println!("{}", line(&change, args.json));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A change as one line of text or JSON.
fn line(change: &OwnershipEvent, json: bool) -> String {
    let at = humantime::format_rfc3339_millis(change.at).to_string();
    if json {
        let change = Change {
            at,
            first: change.first,
            last: change.last,
            old_owner: change.old_owner.as_deref(),
            new_owner: change.new_owner.as_deref(),
            revealed: change.revealed.to_string(),
        };
        return serde_json::to_string(&change).unwrap_or_default();
    }
    format!(
        "{at}  slots {:<11}  {} -> {}  ({})",
        show::slots(change.first, change.last),
        change.old_owner.as_deref().unwrap_or("no owner"),
        change.new_owner.as_deref().unwrap_or("no owner"),
        change.revealed
    )
}
