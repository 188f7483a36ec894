//! The real client, unchanged but for its transport, in simulated time on
//! turmoil's network: it reads the map from the model node, writes and
//! reads, and a request held in the network completes once released.

use std::time::Duration;

use zaris_client::Client;
use zaris_sim::Node;

#[test]
fn the_real_client_runs_in_simulated_time() {
    let mut sim = turmoil::Builder::new()
        .simulation_duration(Duration::from_secs(60))
        .build();
    sim.host("node1", || async {
        Node::new("node1", 6379).serve().await?;
        Ok(())
    });
    sim.client("app", async {
        let client = Client::builder()
            .env(|_| None)
            .connect(&["node1:6379"])
            .await?;
        assert_eq!(client.owners(), ["node1:6379"]);
        client.set("k", "v").await?;
        assert_eq!(client.get("k").await?.as_deref(), Some(&b"v"[..]));
        // Held messages wait in the network; released, the read completes.
        turmoil::hold("app", "node1");
        let read = tokio::spawn({
            let client = client.clone();
            async move { client.get("k").await }
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!read.is_finished(), "held in the network");
        turmoil::release("app", "node1");
        assert_eq!(read.await??.as_deref(), Some(&b"v"[..]));
        Ok(())
    });
    sim.run().expect("the simulation ran");
}
