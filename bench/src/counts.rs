//! Counts that noise cannot move, for the client benchmark: system calls
//! by kind, context switches, and user-space instructions.
//!
//! - System calls are counted by the kernel's own syscall tracepoints
//!   (`syscalls:sys_enter_*`) through `perf_event_open`, in counting mode
//!   (no samples, no ptrace: far cheaper than `strace`), on every thread of
//!   this process and every thread those threads start while the counters
//!   are open. Still, each call counted costs the kernel more (1.4-2.3 µs
//!   on a 2-core VM), so the bench takes no CPU time from a counted run.
//! - Wake-ups come from the scheduler's `sched:sched_waking` tracepoint,
//!   counted the same way: it fires in the waker's context, whenever one of
//!   this process's threads wakes a sleeping thread (a node's server thread
//!   that its send woke, or one of its own parked threads).
//! - Context switches come from `getrusage` (`ru_nvcsw`, `ru_nivcsw`).
//! - Instructions come from callgrind's totals ([`callgrind_total`]): the
//!   bench runs each client in a child under
//!   `valgrind --tool=callgrind --toggle-collect=...`.

use std::fs;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The system calls each kind counts, by their tracepoint names (a name
/// this kernel lacks is skipped).
pub const KINDS: [(&str, &[&str]); 4] = [
    (
        "send",
        &["sendto", "sendmsg", "sendmmsg", "write", "writev"],
    ),
    (
        "recv",
        &["recvfrom", "recvmsg", "recvmmsg", "read", "readv"],
    ),
    ("epoll", &["epoll_wait", "epoll_pwait", "epoll_pwait2"]),
    (
        "futex",
        &["futex", "futex_wait", "futex_wake", "futex_waitv"],
    ),
];

/// System calls made over a window, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Syscalls {
    /// Every system call.
    pub total: u64,
    /// Writes to sockets or files: `sendto`, `sendmsg`, `write`, `writev`.
    pub send: u64,
    /// Reads: `recvfrom`, `recvmsg`, `read`, `readv`.
    pub recv: u64,
    /// Waits for readiness: `epoll_wait` and its variants.
    pub epoll: u64,
    /// Thread parks and wake-ups: `futex`.
    pub futex: u64,
    /// Not system calls, and not in `total`: the sleeping threads this
    /// process's threads woke (`sched:sched_waking`), of the servers and
    /// its own; `None` where the kernel has no such tracepoint.
    #[serde(default)]
    pub wakeups: Option<u64>,
}

/// What a counter adds to, beyond [`KINDS`]' kinds.
const TOTAL: usize = KINDS.len();
const WAKEUPS: usize = KINDS.len() + 1;

impl Syscalls {
    fn kind_mut(&mut self, kind: usize) -> &mut u64 {
        match kind {
            0 => &mut self.send,
            1 => &mut self.recv,
            2 => &mut self.epoll,
            3 => &mut self.futex,
            WAKEUPS => self.wakeups.get_or_insert(0),
            _ => &mut self.total,
        }
    }
}

/// The tracefs directory of syscall events, mounting tracefs when it is
/// not (root may; perf does the same).
fn events_dir() -> Result<PathBuf, String> {
    let candidates = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];
    let found = || {
        candidates
            .iter()
            .map(|root| Path::new(root).join("events/syscalls"))
            .find(|dir| dir.is_dir())
    };
    if let Some(dir) = found() {
        return Ok(dir);
    }
    // SAFETY: every pointer is a NUL-terminated literal that outlives the
    // call; a failed mount changes nothing.
    #[allow(unsafe_code)]
    unsafe {
        libc::mount(
            c"nodev".as_ptr(),
            c"/sys/kernel/tracing".as_ptr(),
            c"tracefs".as_ptr(),
            0,
            std::ptr::null(),
        );
    }
    found().ok_or_else(|| {
        "no syscall tracepoints (tracefs is not mounted at /sys/kernel/tracing and could not be)"
            .to_owned()
    })
}

fn tracepoint_id(dir: &Path, event: &str) -> Option<u64> {
    fs::read_to_string(dir.join(event).join("id"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// `struct perf_event_attr` as far as its first published size
/// (`PERF_ATTR_SIZE_VER0`, 64 bytes): all a counting tracepoint needs.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    /// Bit 0 `disabled`, bit 1 `inherit`, ...
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

const PERF_TYPE_TRACEPOINT: u32 = 2;
const PERF_FLAG_INHERIT: u64 = 1 << 1;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// Opens a counting tracepoint on thread `tid`, inherited by the threads
/// it starts, enabled at once.
fn open(id: u64, tid: libc::pid_t) -> Result<OwnedFd, std::io::Error> {
    let attr = PerfEventAttr {
        type_: PERF_TYPE_TRACEPOINT,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config: id,
        flags: PERF_FLAG_INHERIT,
        ..PerfEventAttr::default()
    };
    // SAFETY: perf_event_open reads `size` bytes of `attr`, which we own
    // and which lives across the call; it returns a new descriptor or -1.
    #[allow(unsafe_code)]
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            tid,
            -1 as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the descriptor was just returned to us and nothing else owns it.
    #[allow(unsafe_code)]
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

fn read_count(fd: &OwnedFd) -> u64 {
    use std::io::Read;
    let mut file = fs::File::from(fd.try_clone().expect("a counter descriptor duplicates"));
    let mut value = [0u8; 8];
    match file.read_exact(&mut value) {
        Ok(()) => u64::from_ne_bytes(value),
        Err(_) => 0,
    }
}

/// Counters of system calls open on every thread of this process.
pub struct SyscallCounter {
    /// A counter and the kind it adds to (a [`KINDS`] index, [`TOTAL`]
    /// or [`WAKEUPS`]).
    counters: Vec<(usize, OwnedFd)>,
}

impl SyscallCounter {
    /// Starts counting, on every thread this process has now and every
    /// thread they start until [`Self::stop`]. Start it after any child
    /// process is spawned: a fork inherits the counters too.
    ///
    /// # Errors
    /// The kernel offers no syscall tracepoints, or refuses them (they
    /// need root, or `CAP_PERFMON`).
    pub fn start() -> Result<Self, String> {
        let dir = events_dir()?;
        let raw = tracepoint_id(&dir.join(".."), "raw_syscalls/sys_enter")
            .ok_or("no raw_syscalls:sys_enter tracepoint")?;
        let mut events: Vec<(usize, u64)> = vec![(TOTAL, raw)];
        for (kind, (_, names)) in KINDS.iter().enumerate() {
            for name in *names {
                if let Some(id) = tracepoint_id(&dir, &format!("sys_enter_{name}")) {
                    events.push((kind, id));
                }
            }
        }
        if let Some(id) = tracepoint_id(&dir.join(".."), "sched/sched_waking") {
            events.push((WAKEUPS, id));
        }
        let threads: Vec<libc::pid_t> = fs::read_dir("/proc/self/task")
            .map_err(|e| format!("listing this process's threads: {e}"))?
            .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
            .collect();
        let mut counters = Vec::with_capacity(threads.len() * events.len());
        for &tid in &threads {
            for &(kind, id) in &events {
                match open(id, tid) {
                    Ok(fd) => counters.push((kind, fd)),
                    // A thread that ended since the listing.
                    Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                    Err(e) => return Err(format!("perf_event_open: {e}")),
                }
            }
        }
        Ok(Self { counters })
    }

    /// The system calls made since [`Self::start`].
    #[must_use]
    pub fn stop(self) -> Syscalls {
        let mut counts = Syscalls::default();
        for (kind, fd) in &self.counters {
            *counts.kind_mut(*kind) += read_count(fd);
        }
        counts
    }
}

fn usage() -> libc::rusage {
    // SAFETY: getrusage writes one rusage struct into the zeroed value we
    // own, and reads nothing else.
    #[allow(unsafe_code)]
    unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    }
}

/// Whether this process runs as root (the tracepoints need it).
#[must_use]
pub fn is_root() -> bool {
    // SAFETY: geteuid reads the calling process's effective user id.
    #[allow(unsafe_code)]
    unsafe {
        libc::geteuid() == 0
    }
}

/// Context switches of this process so far (every thread, ended ones
/// included): voluntary (it waited) and involuntary (it was preempted).
#[must_use]
pub fn context_switches() -> (u64, u64) {
    let usage = usage();
    (usage.ru_nvcsw as u64, usage.ru_nivcsw as u64)
}

/// CPU time this process has used so far, user and system (every thread).
#[must_use]
pub fn process_cpu() -> (std::time::Duration, std::time::Duration) {
    let usage = usage();
    let time = |t: libc::timeval| {
        std::time::Duration::from_secs(t.tv_sec as u64)
            + std::time::Duration::from_micros(t.tv_usec as u64)
    };
    (time(usage.ru_utime), time(usage.ru_stime))
}

/// The calling thread's CPU time so far, user and system
/// (`CLOCK_THREAD_CPUTIME_ID`): on a current-thread runtime, everything
/// its client does.
#[must_use]
pub fn thread_cpu() -> std::time::Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into the value we own.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    std::time::Duration::new(
        u64::try_from(ts.tv_sec).unwrap_or(0),
        u32::try_from(ts.tv_nsec).unwrap_or(0),
    )
}

/// The instructions a callgrind profile counted: its `totals:` line (or,
/// in older formats, `summary:`), the first event (`Ir`).
#[must_use]
pub fn callgrind_total(profile: &str) -> Option<u64> {
    let after = |prefix: &str| {
        profile
            .lines()
            .find_map(|line| line.strip_prefix(prefix))
            .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
    };
    after("totals:").or_else(|| after("summary:"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callgrind_totals_are_read_from_a_profile() {
        let profile = "# callgrind format\nversion: 1\ncreator: callgrind-3.19.0\n\
                       events: Ir\nsummary: 12\n\nfn=(1) main\n3 12\n\ntotals: 48213377\n";
        assert_eq!(callgrind_total(profile), Some(48_213_377));
        assert_eq!(
            callgrind_total("events: Ir\nsummary: 991\n"),
            Some(991),
            "older profiles carry only a summary"
        );
        assert_eq!(callgrind_total("events: Ir\n"), None);
        assert_eq!(callgrind_total("totals: many\n"), None);
    }
}
