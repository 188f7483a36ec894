//! Sharded pub/sub that follows its channels through churn: subscribes to
//! two channels, publishes COUNT messages to them, and prints what
//! arrives, gaps included. Fail a master over in another terminal while it
//! runs (`redis-cli -p PORT cluster failover` on a replica) to see one.
//!
//! ```sh
//! cargo run -p zaris-client --example pubsub -- 127.0.0.1:7000 20
//! ```

use std::time::Duration;

use zaris_client::{Client, Received};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let seed = args.next().unwrap_or_else(|| "127.0.0.1:7000".into());
    let count: usize = args.next().map_or(Ok(10), |n| n.parse())?;
    let client = Client::connect(&[seed.as_str()]).await?;
    let channels = ["orders:{eu}", "orders:{us}"];
    let mut orders = client.ssubscribe(&channels).await?;
    println!("subscribed to {}", channels.join(", "));

    let publisher = tokio::spawn({
        let client = client.clone();
        async move {
            for i in 0..count {
                let channel = channels[i % channels.len()];
                if let Err(e) = client.spublish(channel, format!("order {i}")).await {
                    eprintln!("publish {i}: {e}");
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    });
    let mut received = 0;
    while received < count {
        match tokio::time::timeout(Duration::from_secs(30), orders.next()).await {
            Ok(Some(Received::Message { channel, payload })) => {
                received += 1;
                println!(
                    "{}: {}",
                    String::from_utf8_lossy(&channel),
                    String::from_utf8_lossy(&payload)
                );
            }
            // The slot moved or its master failed: resubscribed on the new
            // owner; messages published meanwhile may be lost (at most once).
            Ok(Some(Received::Gap { channel, lasted })) => {
                println!(
                    "gap on {} ({lasted:?}): resubscribed",
                    String::from_utf8_lossy(&channel)
                );
            }
            Ok(Some(_)) => {}
            Ok(None) => break,
            Err(_) => return Err("no message for 30 s".into()),
        }
    }
    publisher.await?;
    println!("received {received} of {count}");
    Ok(())
}
