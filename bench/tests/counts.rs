//! The system-call and wake-up counters on this process's threads. They
//! count every thread of the process, so these tests live in a binary of
//! their own (no other test's calls in the counts) and run one at a time.

use std::sync::{Mutex, MutexGuard, PoisonError};

use zaris_bench::counts::{is_root, SyscallCounter};

/// Held by each test: the counters see the whole process.
static ALONE: Mutex<()> = Mutex::new(());

/// The counters see the calls this thread and a thread it starts make,
/// by kind. Needs the syscall tracepoints (root, as the bench runs):
/// where the kernel refuses them the bench prints why, and so does
/// this test.
#[test]
fn system_calls_are_counted_by_kind_on_every_thread() {
    let Some((_alone, counter)) = counter() else {
        return;
    };
    let (mut a, mut b) = std::os::unix::net::UnixStream::pair().unwrap();
    use std::io::{Read, Write};
    for _ in 0..100 {
        a.write_all(b"x").unwrap();
    }
    let reader = std::thread::spawn(move || {
        let mut byte = [0u8; 1];
        for _ in 0..100 {
            b.read_exact(&mut byte).unwrap();
        }
    });
    reader.join().unwrap();
    let counts = counter.stop();
    assert!(counts.send >= 100, "{counts:?}");
    assert!(
        counts.recv >= 100,
        "the started thread's reads count: {counts:?}"
    );
    assert!(counts.total >= counts.send + counts.recv, "{counts:?}");
    assert!(
        counts.send < 150 && counts.recv < 150,
        "nothing else reads or writes much here: {counts:?}"
    );
}

/// A ping-pong between two threads: a write mostly finds the other
/// asleep in its read, so the counters see about one wake-up per write.
#[test]
fn wakeups_of_sleeping_threads_are_counted() {
    let Some((_alone, counter)) = counter() else {
        return;
    };
    use std::io::{Read, Write};
    let (mut a, mut b) = std::os::unix::net::UnixStream::pair().unwrap();
    let echo = std::thread::spawn(move || {
        let mut byte = [0u8; 1];
        for _ in 0..100 {
            b.read_exact(&mut byte).unwrap();
            b.write_all(&byte).unwrap();
        }
    });
    let mut byte = [0u8; 1];
    for _ in 0..100 {
        // Time for the echo thread to fall asleep in its read.
        std::thread::sleep(std::time::Duration::from_micros(200));
        a.write_all(b"x").unwrap();
        a.read_exact(&mut byte).unwrap();
    }
    echo.join().unwrap();
    let counts = counter.stop();
    let Some(wakeups) = counts.wakeups else {
        eprintln!("this kernel has no sched:sched_waking tracepoint");
        return;
    };
    // 200 writes, nearly all to a reader asleep (the echo thread's
    // reads, and this thread's while the echo wakes); the sleeps'
    // timers may add some.
    assert!((150..600).contains(&wakeups), "{counts:?}");
    assert!(
        counts.total < 2_000,
        "wake-ups are not system calls: {counts:?}"
    );
}

/// Counters on this process, with the lock that keeps the other tests
/// out; `None` (and why, printed) where the
/// kernel refuses them to a user who is not root. Root must get them.
fn counter() -> Option<(MutexGuard<'static, ()>, SyscallCounter)> {
    let alone = ALONE.lock().unwrap_or_else(PoisonError::into_inner);
    match SyscallCounter::start() {
        Ok(counter) => Some((alone, counter)),
        Err(e) if !is_root() => {
            eprintln!("not root, so no tracepoints: {e}");
            None
        }
        Err(e) => panic!("root, yet no counters: {e}"),
    }
}
