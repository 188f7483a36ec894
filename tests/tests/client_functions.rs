//! Functions that survive churn (docs/behaviour.md §8): Redis 7 and
//! Valkey 8 do not copy function libraries to a new shard's master
//! (redis#11780, valkey#2005), so a slot moved to a master added later
//! answers `FCALL` with "Function not found". A `Library` registered with
//! the client is loaded then (on every master) and the call made once
//! more. Through a manual failover (the replica has the library, copied by
//! replication: nothing to load), a scale-out with the key's slot moved to
//! the new master (one load), and the slot moved back (nothing to load), a
//! writer's increments all land once, and the loads are counted.

use std::time::Duration;

use zaris_client::{Library, Value};
use zaris_core::slot_for_key;
use zaris_tests::cluster::Cluster;
use zaris_tests::scenario::CountingWriter;
use zaris_tests::{each_server, runtime};

const CODE: &str = "#!lua name=zaris_test
redis.register_function('incr_by', function(keys, args)
  return redis.call('INCRBY', keys[1], args[1])
end)
redis.register_function{function_name = 'read', flags = {'no-writes'},
  callback = function(keys) return redis.call('GET', keys[1]) end}";

#[test]
fn a_library_follows_its_keys_to_a_new_master() {
    each_server(|server| {
        let mut cluster = Cluster::start(server, 3, 1).expect("cluster");
        let rt = runtime();
        let client = cluster.client(&rt, |b| b);
        let library = Library::new(CODE);
        assert_eq!(library.name(), "zaris_test");
        let key = "{fn}:counter";
        let slot = slot_for_key(key.as_bytes());
        let first = cluster.owner_index(slot).unwrap();

        // Nothing loaded yet: the first call loads the library.
        let one = rt.block_on(client.fcall(&library, "incr_by", &[key], &["1"]));
        assert_eq!(one, Ok(Value::Int(1)), "{server}");
        assert_eq!(client.stats().function_loads, 1, "{server}");
        let read = rt.block_on(client.fcall_ro(&library, "read", &[key], &[] as &[&str]));
        assert_eq!(read, Ok(Value::Data("1".into())), "{server}");

        // A writer, one call after another, through the churn.
        let writer = CountingWriter::start(&rt, {
            let (client, library) = (client.clone(), library.clone());
            move || {
                let (client, library) = (client.clone(), library.clone());
                async move {
                    client
                        .fcall(&library, "incr_by", &[key], &["1"])
                        .await
                        .map(drop)
                }
            }
        });
        let pause = || std::thread::sleep(Duration::from_millis(300));
        pause();
        // A manual failover: the replica has the library already.
        let replica = cluster.replica_of(first).unwrap();
        cluster.failover(replica).expect("the failover");
        pause();
        let after_failover = client.stats().function_loads;
        // A scale-out: a new master, without the library, takes the slot.
        let added = cluster.add_master().expect("a new master");
        cluster.move_slot(slot, added).expect("the slot moved");
        pause();
        let after_move = client.stats().function_loads;
        // And back to the master that has it.
        cluster
            .move_slot(slot, replica)
            .expect("the slot moved back");
        pause();
        let tally = writer.stop(&rt);
        let stats = client.stats();
        let counter = rt.block_on(client.get(key)).unwrap().unwrap();
        let counter: u64 = std::str::from_utf8(&counter).unwrap().parse().unwrap();
        eprintln!(
            "{server}: {} calls acknowledged after the first, the counter at {counter}; loads: {} \
             after the failover, {} after the move to the new master, {} in all",
            tally.acknowledged, after_failover, after_move, stats.function_loads
        );
        assert!(tally.errors.is_empty(), "{server}: {:?}", tally.errors);
        assert_eq!(
            (counter, tally.unknown),
            (1 + tally.acknowledged, 0),
            "{server}: every call acknowledged ran once"
        );
        assert_eq!(after_failover, 1, "{server}: the promoted replica had it");
        assert_eq!(after_move, 2, "{server}: the new master got it once");
        assert_eq!(
            stats.function_loads, 2,
            "{server}: the old master still had it"
        );
        // A library the server refuses: its refusal reaches the caller,
        // not "Function not found".
        let broken = Library::new("return 1");
        let refused = rt.block_on(client.fcall(&broken, "nothing", &[key], &[] as &[&str]));
        assert!(
            matches!(&refused, Err(zaris_client::Error::Server(m)) if !m.contains("Function not found")),
            "{server}: {refused:?}"
        );
        eprintln!("{server}: a broken library: {refused:?}");
        // The new master has it now, loaded by the client.
        let mut conn = cluster.conn(added).unwrap();
        let listed = conn
            .command(&[b"FUNCTION", b"LIST", b"LIBRARYNAME", b"zaris_test"])
            .unwrap();
        assert!(
            matches!(&listed, zaris_tests::Frame::Array(libraries) if libraries.len() == 1),
            "{server}: {listed:?}"
        );
    });
}
