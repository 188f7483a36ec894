//! The client-side cache's rules, sans-IO (docs/behaviour.md §9): which
//! commands a cache may answer, when a stored reply may be kept, and when
//! a node's entries may be served.
//!
//! - [`cacheable`]: the read-only single-key commands whose reply is a
//!   function of the key's value (and, for `TTL`/`PTTL`, of the clock).
//! - [`InvalidationLog`]: the invalidations since a request was sent. A
//!   reply is stored only if none of them named its key, and none flushed
//!   everything; a log that forgot that far back says no.
//! - [`lease_holds`] and [`heartbeat_due`]: a node's entries are served
//!   only while the node has shown, within the lease, counted from when
//!   the proof was asked for, that it is a master of the cluster it serves.

use core::time::Duration;

use crate::command::info_and_lone_key;

/// How a command's reply may be served from a cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cacheable {
    /// Not from a cache: it writes, has no key or several, blocks, or its
    /// reply is not a function of its key's value (`SRANDMEMBER`).
    No,
    /// Its reply, as stored, until its key changes.
    Value,
    /// A time to live counting down: served as stored less the time since,
    /// in this unit (`TTL`: seconds, `PTTL`: milliseconds).
    Countdown(TtlUnit),
}

/// The unit of a cached time to live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TtlUnit {
    /// `TTL`.
    Seconds,
    /// `PTTL`.
    Milliseconds,
}

/// Whether `name` (lowercase) is a read-only command with one key whose
/// reply is not a function of that key's value: random picks, scans with
/// a cursor, `SORT_RO` (whose `BY` and `GET` patterns read other keys),
/// the object's own metadata. (A match: most names differ in length from
/// every one of these, and are told apart without comparing a byte.)
fn not_a_function_of_the_value(name: &[u8]) -> bool {
    matches!(
        name,
        b"srandmember"
            | b"hrandfield"
            | b"zrandmember"
            | b"sort_ro"
            | b"hscan"
            | b"sscan"
            | b"zscan"
            | b"object"
            | b"memory"
    )
}

/// How `args` (a whole command, name first) may be served from a cache.
#[must_use]
pub fn cacheable(args: &[&[u8]]) -> Cacheable {
    cached_read(args).map_or(Cacheable::No, |(_, rule)| rule)
}

/// Where the key of `args` is and how its reply may be served from a
/// cache, or `None` when it may not be ([`cacheable`] says
/// [`Cacheable::No`]): what a cache's hit path needs, from one look at the
/// command tables.
///
/// ```
/// use zaris_core::{cached_read, Cacheable, TtlUnit};
///
/// assert_eq!(cached_read(&[b"GET", b"k"]), Some((1, Cacheable::Value)));
/// assert_eq!(cached_read(&[b"HGET", b"h", b"f"]), Some((1, Cacheable::Value)));
/// assert_eq!(
///     cached_read(&[b"PTTL", b"k"]),
///     Some((1, Cacheable::Countdown(TtlUnit::Milliseconds)))
/// );
/// assert_eq!(cached_read(&[b"SET", b"k", b"v"]), None);
/// assert_eq!(cached_read(&[b"SRANDMEMBER", b"s"]), None);
/// ```
#[must_use]
pub fn cached_read(args: &[&[u8]]) -> Option<(usize, Cacheable)> {
    let (info, at) = info_and_lone_key(args)?;
    if !info.is_read_only() || info.is_write() || info.is_blocking() {
        return None;
    }
    let name = info.name();
    if not_a_function_of_the_value(name.as_bytes()) {
        return None;
    }
    // A subcommand (`OBJECT ENCODING`, named `encoding`) goes by its
    // container's name, the first word, too.
    let container = args.first().copied().unwrap_or_default();
    if !name.as_bytes().eq_ignore_ascii_case(container) {
        let mut lower = [0u8; 12];
        let lower = lower.get_mut(..container.len()).map(|l| {
            l.copy_from_slice(container);
            l.make_ascii_lowercase();
            &*l
        });
        if lower.is_some_and(not_a_function_of_the_value) {
            return None;
        }
    }
    let rule = match name {
        "ttl" => Cacheable::Countdown(TtlUnit::Seconds),
        "pttl" => Cacheable::Countdown(TtlUnit::Milliseconds),
        _ => Cacheable::Value,
    };
    Some((at, rule))
}

/// A cached time to live `stored` (as the server answered it), `elapsed`
/// after it was stored: `Some` of what to answer, or `None` when the key
/// may have expired meanwhile (ask the server). The negative answers (`-1`
/// no expiry, `-2` no key) do not count down.
#[must_use]
pub fn countdown(stored: i64, unit: TtlUnit, elapsed: Duration) -> Option<i64> {
    if stored < 0 {
        return Some(stored);
    }
    let gone = match unit {
        // Whole seconds, rounded as the server rounds its answer.
        TtlUnit::Seconds => i64::try_from((elapsed.as_millis() + 500) / 1000).unwrap_or(i64::MAX),
        TtlUnit::Milliseconds => i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX),
    };
    let left = stored.saturating_sub(gone);
    (left > 0).then_some(left)
}

/// The invalidations a cache received, the last `N` by key hash, in order:
/// whether a reply to a request sent at sequence number `since` may be
/// stored is [`InvalidationLog::may_store`].
#[derive(Clone, Debug)]
pub struct InvalidationLog<const N: usize> {
    /// Invalidations so far (the next one's number is `seq + 1`).
    seq: u64,
    /// `ring[n % N]` holds invalidation `n`'s key hash.
    ring: [u64; N],
    /// The last invalidation of everything (a flush, a lost connection).
    everything_at: u64,
}

impl<const N: usize> Default for InvalidationLog<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> InvalidationLog<N> {
    /// An empty log.
    #[must_use]
    pub const fn new() -> Self {
        Self {
            seq: 0,
            ring: [0; N],
            everything_at: 0,
        }
    }

    /// The sequence number now: a request sent now keeps it to ask
    /// [`Self::may_store`] when its reply comes.
    #[must_use]
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Records an invalidation of the key hashed to `hash`.
    pub fn record(&mut self, hash: u64) {
        self.seq += 1;
        if N > 0 {
            self.ring[(self.seq % N as u64) as usize] = hash;
        }
    }

    /// Records an invalidation of every key.
    pub fn record_everything(&mut self) {
        self.seq += 1;
        self.everything_at = self.seq;
    }

    /// Whether a reply for the key hashed to `hash`, to a request sent at
    /// `since`, may be stored: no invalidation since named the key (or a
    /// key with its hash) or everything, and the log still holds them all.
    #[must_use]
    pub fn may_store(&self, since: u64, hash: u64) -> bool {
        if self.everything_at > since || self.seq.saturating_sub(since) > N as u64 {
            return false;
        }
        (since + 1..=self.seq).all(|n| self.ring[(n % N as u64) as usize] != hash)
    }
}

/// Whether entries proven by a check asked for at `proven_at` (`None`:
/// never proven) may be served at `now`: the lease runs from when the
/// proof was asked for, not from when it came, since the node could have
/// stopped being a master at any moment after it answered.
#[must_use]
pub fn lease_holds(proven_at: Option<Duration>, now: Duration, lease: Duration) -> bool {
    proven_at.is_some_and(|at| now < at.saturating_add(lease))
}

/// How often, in parts of the lease, a node with entries is checked: a
/// check answered within a quarter of the lease keeps it unbroken.
pub const HEARTBEATS_PER_LEASE: u32 = 4;

/// Whether a node whose last check was asked for at `asked_at` (`None`:
/// never) should be checked again at `now`, with none in flight.
#[must_use]
pub fn heartbeat_due(
    asked_at: Option<Duration>,
    in_flight: bool,
    now: Duration,
    lease: Duration,
) -> bool {
    !in_flight && asked_at.is_none_or(|at| now >= at.saturating_add(lease / HEARTBEATS_PER_LEASE))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The key `cached_read` finds is the one key the full search finds,
    /// for every command of the tables at every length up to 6.
    #[test]
    fn the_hit_path_finds_the_key_the_search_finds() {
        let words: [&[u8]; 6] = [b"", b"k", b"f", b"1", b"2", b"x"];
        let mut cacheable_seen = 0;
        for name in crate::command_names() {
            for len in 1..=words.len() {
                let mut args = words;
                args[0] = name.as_bytes();
                let args = &args[..len];
                let one_key = crate::command_keys(args)
                    .ok()
                    .and_then(|mut keys| keys.next().filter(|_| keys.next().is_none()));
                match cached_read(args) {
                    Some((at, _)) => {
                        assert_eq!(Some(at), one_key, "{name} of {len}");
                        cacheable_seen += 1;
                    }
                    None => assert_eq!(cacheable(args), Cacheable::No),
                }
            }
        }
        assert!(cacheable_seen > 40, "{cacheable_seen}");
    }

    fn of(args: &[&str]) -> Cacheable {
        let args: [&[u8]; 8] =
            core::array::from_fn(|i| args.get(i).map_or(&b""[..], |a| a.as_bytes()));
        cacheable(&args[..args.iter().position(|a| a.is_empty()).unwrap_or(8)])
    }

    #[test]
    fn the_reads_of_one_key_are_cacheable_and_nothing_else() {
        for read in [
            &["GET", "k"][..],
            &["HGET", "h", "f"],
            &["HGETALL", "h"],
            &["HMGET", "h", "a", "b"],
            &["EXISTS", "k"],
            &["STRLEN", "k"],
            &["LRANGE", "l", "0", "-1"],
            &["SMEMBERS", "s"],
            &["SISMEMBER", "s", "m"],
            &["ZRANGE", "z", "0", "-1"],
            &["ZSCORE", "z", "m"],
            &["GETRANGE", "k", "0", "3"],
            &["TYPE", "k"],
        ] {
            assert_eq!(of(read), Cacheable::Value, "{read:?}");
        }
        assert_eq!(of(&["TTL", "k"]), Cacheable::Countdown(TtlUnit::Seconds));
        assert_eq!(
            of(&["pttl", "k"]),
            Cacheable::Countdown(TtlUnit::Milliseconds)
        );
        for not in [
            &["SET", "k", "v"][..],
            &["INCR", "k"],
            &["MGET", "a", "b"],
            &["EXISTS", "a", "b"],
            &["SRANDMEMBER", "s"],
            &["HRANDFIELD", "h"],
            &["SSCAN", "s", "0"],
            &["SORT_RO", "l"],
            &["OBJECT", "ENCODING", "k"],
            &["BLPOP", "l", "0"],
            &["PING"],
            &["DBSIZE"],
            &["NOSUCH", "k"],
            &["GET"],
        ] {
            assert_eq!(of(not), Cacheable::No, "{not:?}");
        }
    }

    #[test]
    fn a_time_to_live_counts_down_and_expires_to_the_server() {
        let ms = Duration::from_millis;
        assert_eq!(countdown(10, TtlUnit::Seconds, ms(2_400)), Some(8));
        assert_eq!(countdown(10, TtlUnit::Seconds, ms(2_600)), Some(7));
        assert_eq!(
            countdown(5_000, TtlUnit::Milliseconds, ms(1_234)),
            Some(3_766)
        );
        assert_eq!(
            countdown(1, TtlUnit::Seconds, ms(600)),
            None,
            "may have expired"
        );
        assert_eq!(countdown(-1, TtlUnit::Seconds, ms(99_000)), Some(-1));
        assert_eq!(countdown(-2, TtlUnit::Milliseconds, ms(99_000)), Some(-2));
    }

    #[test]
    fn a_reply_is_stored_only_if_no_invalidation_since_named_its_key() {
        let mut log = InvalidationLog::<4>::new();
        let sent = log.seq();
        assert!(log.may_store(sent, 7), "nothing since");
        log.record(9);
        assert!(log.may_store(sent, 7), "another key");
        log.record(7);
        assert!(!log.may_store(sent, 7), "its key");
        assert!(log.may_store(log.seq(), 7), "sent after it");
        // The log forgets: four back it still knows, five it does not.
        let sent = log.seq();
        for hash in [1, 2, 3, 4] {
            log.record(hash);
        }
        assert!(log.may_store(sent, 7));
        log.record(5);
        assert!(!log.may_store(sent, 7), "forgotten: not known to be safe");
        // Everything.
        let sent = log.seq();
        log.record_everything();
        assert!(!log.may_store(sent, 7));
        assert!(log.may_store(log.seq(), 7));
    }

    #[test]
    fn a_lease_runs_from_when_its_proof_was_asked_for() {
        let ms = Duration::from_millis;
        let lease = ms(250);
        assert!(!lease_holds(None, ms(0), lease));
        assert!(lease_holds(Some(ms(1_000)), ms(1_249), lease));
        assert!(!lease_holds(Some(ms(1_000)), ms(1_250), lease));
        assert!(heartbeat_due(None, false, ms(0), lease));
        assert!(!heartbeat_due(Some(ms(1_000)), false, ms(1_062), lease));
        assert!(heartbeat_due(Some(ms(1_000)), false, ms(1_063), lease));
        assert!(
            !heartbeat_due(Some(ms(1_000)), true, ms(2_000), lease),
            "one at a time"
        );
    }
}
