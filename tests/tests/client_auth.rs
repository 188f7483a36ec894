//! `zaris-client` on a password-protected cluster node (`requirepass`): the
//! right password works, a wrong or missing one is a clear error.

use zaris_client::Error;
use zaris_tests::builder;
use zaris_tests::scenario::eventually;
use zaris_tests::{each_server, Frame, RedisNode};

const PASSWORD: &str = "s3cret pass";

/// One cluster-mode node owning every slot, behind a password.
fn protected_node(server: &str) -> RedisNode {
    let node = RedisNode::start_cluster_node(server, &["--requirepass", PASSWORD]).expect("start");
    let mut conn = node.connect().unwrap();
    assert_eq!(
        conn.command(&[b"AUTH", PASSWORD.as_bytes()]).unwrap(),
        zaris_tests::simple("OK")
    );
    assert_eq!(
        conn.command(&[b"CLUSTER", b"ADDSLOTSRANGE", b"0", b"16383"])
            .unwrap(),
        zaris_tests::simple("OK")
    );
    eventually(
        &format!("{server}: cluster_state:ok"),
        std::time::Duration::from_secs(10),
        || {
            matches!(conn.command(&[b"CLUSTER", b"INFO"]).unwrap(),
                Frame::BulkString(info) if String::from_utf8_lossy(&info).contains("cluster_state:ok"))
        },
    );
    node
}

#[test]
fn passwords_are_sent_and_refusals_are_clear() {
    each_server(|server| {
        let node = protected_node(server);
        let addr = node.addr();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let client = builder()
                .auth(None, PASSWORD)
                .connect(&[&addr])
                .await
                .expect("the password is accepted");
            client.set("k", "v").await.unwrap();
            assert_eq!(client.get("k").await.unwrap().as_deref(), Some(&b"v"[..]));
            assert_eq!(client.owners(), vec![addr.clone()]);

            let wrong = builder()
                .auth(None, "nope")
                .connect(&[&addr])
                .await
                .err()
                .unwrap();
            let Error::NoSeedReachable { tried } = &wrong else {
                panic!("{wrong:?}")
            };
            assert!(
                tried[0].1.contains("credentials refused") && tried[0].1.contains("WRONGPASS"),
                "{server}: {tried:?}"
            );

            let missing = builder().connect(&[&addr]).await.err().unwrap();
            let Error::NoSeedReachable { tried } = &missing else {
                panic!("{missing:?}")
            };
            assert!(tried[0].1.contains("NOAUTH"), "{server}: {tried:?}");

            // The password never shows in debug output.
            let credentials = zaris_client::Credentials {
                username: None,
                password: PASSWORD.into(),
            };
            assert!(!format!("{credentials:?}").contains(PASSWORD));
        });
    });
}
