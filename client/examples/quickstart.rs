//! Connect, run commands, a pipeline across slots and a one-slot
//! transaction.
//!
//! ```sh
//! just cluster-up                      # prints its seeds
//! cargo run -p zaris-client --example quickstart -- 127.0.0.1:7000
//! ```

use zaris_client::{Client, Value};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seed = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:7000".into());
    let client = Client::connect(&[seed.as_str()]).await?;
    println!("connected: {} masters", client.owners().len());

    // Any command goes to the owner of its keys.
    client
        .cmd(&["HSET", "{user1000}:profile", "name", "Ada", "lang", "en"])
        .await?;
    let name = client.cmd(&["HGET", "{user1000}:profile", "name"]).await?;
    println!("HGET {{user1000}}:profile name -> {}", show(&name));
    println!(
        "{{user1000}}:profile lives on {}",
        client.owner_of("{user1000}:profile").unwrap_or_default()
    );

    // A pipeline across slots: each node gets its share in one write, and
    // the replies come back in order.
    let mut pipeline = client.pipeline();
    pipeline
        .cmd(&["SET", "quickstart:a", "1"])
        .cmd(&["INCR", "quickstart:b"])
        .cmd(&["GET", "quickstart:a"]);
    for (i, reply) in pipeline.run().await?.into_iter().enumerate() {
        println!("pipeline[{i}] -> {}", show(&reply?));
    }

    // A transaction: its keys share a hash tag, so one slot, one node.
    let mut tx = client.transaction();
    tx.cmd(&["INCR", "{cart:7}:n"])
        .cmd(&["RPUSH", "{cart:7}:log", "added"]);
    let values = tx.exec().await?;
    println!(
        "transaction -> {}",
        values.iter().map(show).collect::<Vec<_>>().join(", ")
    );

    let stats = client.stats();
    println!(
        "attempts {}, redirects {}",
        stats.attempts,
        stats.moved_redirects + stats.ask_redirects
    );
    Ok(())
}

/// A reply as text.
fn show(value: &Value) -> String {
    match value {
        Value::Data(bytes) | Value::Status(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        Value::Int(n) => n.to_string(),
        Value::Nil => "(nil)".into(),
        other => format!("{other:?}"),
    }
}
