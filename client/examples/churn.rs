//! Writes while you fail a master over (or kill one, or migrate a slot) in
//! another terminal, printing each second what the client saw: writes
//! acknowledged and failed, retries, redirects and refreshes, and every
//! ownership change with what revealed it.
//!
//! ```sh
//! cargo run -p zaris-client --example churn -- 127.0.0.1:7000 60
//! redis-cli -p REPLICA_PORT cluster failover      # in another terminal
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use zaris_client::{Client, Stats};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let seed = args.next().unwrap_or_else(|| "127.0.0.1:7000".into());
    let seconds: u64 = args.next().map_or(Ok(60), |n| n.parse())?;
    let client = Client::builder()
        .poll_interval(Duration::from_secs(1))
        .connect(&[seed.as_str()])
        .await?;
    let mut changes = client.ownership_changes();
    tokio::spawn(async move {
        while let Some(change) = changes.next().await {
            println!(
                "ownership: slots {}-{} {} -> {} ({})",
                change.first,
                change.last,
                change.old_owner.as_deref().unwrap_or("no owner"),
                change.new_owner.as_deref().unwrap_or("no owner"),
                change.revealed
            );
        }
    });
    let (ok, failed) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let end = Instant::now() + Duration::from_secs(seconds);
    // Eight writers over 1,000 keys spread across every master.
    for writer in 0..8 {
        let (client, ok, failed) = (client.clone(), ok.clone(), failed.clone());
        tokio::spawn(async move {
            let mut i: u64 = 0;
            while Instant::now() < end {
                let key = format!("churn:{}", (i * 8 + writer) % 1000);
                match client.set(&key, i.to_string()).await {
                    Ok(()) => ok.fetch_add(1, Ordering::Relaxed),
                    Err(e) => {
                        eprintln!("write {key}: {e}");
                        failed.fetch_add(1, Ordering::Relaxed)
                    }
                };
                i += 1;
            }
        });
    }
    let mut last = client.stats();
    while Instant::now() < end {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = client.stats();
        println!(
            "writes ok {} failed {} | this second: retries {}, redirects {}, refreshes {}",
            ok.load(Ordering::Relaxed),
            failed.load(Ordering::Relaxed),
            retries(&now) - retries(&last),
            now.moved_redirects + now.ask_redirects - last.moved_redirects - last.ask_redirects,
            now.refreshes_started - last.refreshes_started,
        );
        last = now;
    }
    Ok(())
}

/// Retries so far, for any status or a failed connection.
fn retries(stats: &Stats) -> u64 {
    stats.retries_by_status.iter().map(|(_, n)| n).sum::<u64>()
        + stats.retries_after_transport_failure
}
