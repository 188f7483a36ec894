//! `Builder::connect_timeout`: a host that drops connection attempts (no
//! refusal, no answer: here a listener whose accept queue is full) costs
//! the connect time-out, not the attempt time-out.

use std::net::{Ipv4Addr, TcpStream};
use std::time::{Duration, Instant};

use zaris_client::Error;
use zaris_tests::builder;

/// A listener that takes no more connections: its accept queue (backlog
/// 0) is full, so the kernel drops further connection attempts unanswered.
fn full_listener(rt: &tokio::runtime::Runtime) -> (tokio::net::TcpListener, Vec<TcpStream>) {
    let listener = rt.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind((Ipv4Addr::LOCALHOST, 0).into()).unwrap();
        socket.listen(0).unwrap()
    });
    let addr = listener.local_addr().unwrap();
    let fillers = (0..4)
        .filter_map(|_| TcpStream::connect_timeout(&addr, Duration::from_millis(200)).ok())
        .collect();
    (listener, fillers)
}

#[test]
fn a_host_that_drops_connection_attempts_costs_the_connect_timeout() {
    let rt = zaris_tests::runtime();
    let (listener, _fillers) = full_listener(&rt);
    let seed = listener.local_addr().unwrap().to_string();
    // It really hangs: a plain connect gets nowhere in a second.
    assert!(
        TcpStream::connect_timeout(&listener.local_addr().unwrap(), Duration::from_secs(1))
            .is_err()
    );
    let started = Instant::now();
    let result = rt.block_on(
        builder()
            .attempt_timeout(Duration::from_secs(5))
            .connect_timeout(Duration::from_millis(300))
            .connect(&[seed.as_str()]),
    );
    let took = started.elapsed();
    eprintln!(
        "a seed that drops connection attempts: {took:?}, {result:?}",
        result = result.as_ref().err()
    );
    match result {
        Err(Error::NoSeedReachable { .. }) => {}
        Err(other) => panic!("{other:?}"),
        Ok(_) => panic!("connected to a host that answers nothing"),
    }
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(2),
        "{took:?}: the connect time-out, not the attempt's 5 s"
    );
    let result = rt.block_on(
        builder()
            .connect_timeout(Duration::ZERO)
            .connect(&[seed.as_str()]),
    );
    assert!(
        matches!(result, Err(Error::Config(_))),
        "{:?}",
        result.err()
    );
}
