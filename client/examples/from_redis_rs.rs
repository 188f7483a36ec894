//! A redis-rs program moved to Zaris: only the connection changed (the
//! README shows the diff). Typed commands, a pipeline, an
//! atomic pipeline and a script, all from redis-rs, routed by Zaris.
//!
//! `cargo run --example from_redis_rs --features redis-compat -- 127.0.0.1:7000`

use std::collections::HashMap;

use redis::AsyncCommands;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seed = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:7000".into());
    let client = zaris_client::Client::connect(&[seed]).await?;
    let mut con = client.redis_compat();

    let _: () = con.set("{user1000}:name", "Ada").await?;
    let name: Option<String> = con.get("{user1000}:name").await?;
    println!("name -> {name:?}");

    let _: () = con
        .hset_multiple("{user1000}:settings", &[("lang", "en"), ("city", "London")])
        .await?;
    let settings: HashMap<String, String> = con.hgetall("{user1000}:settings").await?;
    println!("settings has {} fields", settings.len());

    let (a, b): (i64, i64) = redis::pipe()
        .incr("{visits}:home", 1)
        .incr("{visits}:about", 1)
        .query_async(&mut con)
        .await?;
    println!("pipeline -> {a} {b}");

    let (n, log): (i64, Vec<String>) = redis::pipe()
        .atomic()
        .incr("{cart7}:items", 1)
        .rpush("{cart7}:log", "+1")
        .ignore()
        .lrange("{cart7}:log", 0, -1)
        .query_async(&mut con)
        .await?;
    println!("transaction -> {n} items, log of {}", log.len());

    let add = redis::Script::new("return redis.call('INCRBY', KEYS[1], ARGV[1])");
    let total: i64 = add
        .key("{visits}:home")
        .arg(10)
        .invoke_async(&mut con)
        .await?;
    println!("script -> {total}");
    Ok(())
}
