//! Which arguments of a command line are keys, and so where it must go:
//! one slot, any node, or every master. No allocation.
//!
//! The table behind it ([`crate::command_table`]) is generated from the
//! `COMMAND` replies of real Redis and Valkey servers, and the search is
//! theirs: the key specifications first (an argument index or a keyword to
//! begin at; a range, or a key count to read), then, where a command's specs
//! cannot say everything (`SORT ... STORE`, `MIGRATE ... KEYS`, an `EVAL`
//! whose `numkeys` does not parse), the servers' own fallback procedures.
//! A test holds every answer to the servers' `COMMAND GETKEYS`.
//!
//! ```
//! use zaris_core::{command_target, slot_for_key, CommandError, Reply, Target};
//!
//! let mset: [&[u8]; 5] = [b"MSET", b"{u1}:a", b"1", b"{u1}:b", b"2"];
//! assert_eq!(command_target(&mset), Ok(Target::Slot(slot_for_key(b"u1"))));
//! let eval: [&[u8]; 5] = [b"EVAL", b"return 1", b"2", b"k1", b"k2"];
//! assert!(matches!(command_target(&eval), Err(CommandError::CrossSlot { .. })));
//! assert_eq!(command_target(&[b"PING"]), Ok(Target::AnyNode));
//! assert_eq!(command_target(&[b"DBSIZE"]), Ok(Target::AllMasters(Reply::Sum)));
//! assert_eq!(command_target(&[b"NOSUCH"]), Err(CommandError::UnknownCommand));
//! ```

use core::fmt;

use crate::command_spec::{cmd, key, Begin, Fallback, Find, KeySpec, Spec};
pub use crate::command_spec::{Fanout, Reply};
use crate::command_table::TABLE;
use crate::slot_for_key;

/// Where a command line must go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// To the owner of this slot: every key of the command hashes to it.
    Slot(u16),
    /// To any node: no keys, no fan-out (`PING`, `ECHO`, `EVAL` of no key).
    AnyNode,
    /// To every master, answers combined as the [`Reply`] says.
    AllMasters(Reply),
    /// To every node, replicas included.
    AllNodes(Reply),
}

/// Why a command line has no target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CommandError {
    /// No command name at all.
    Empty,
    /// Neither server knows the command.
    UnknownCommand,
    /// The command knows no such subcommand (`OBJECT NOSUCH`).
    UnknownSubcommand,
    /// Not the number of arguments the command takes.
    WrongArity {
        /// `n`: exactly `n` arguments (the name included); `-n`: at least.
        arity: i8,
        /// How many were given (the name included).
        given: usize,
    },
    /// The arguments do not say which keys (a `numkeys` that is not a
    /// number, or larger than the arguments; `XREAD` without `STREAMS`):
    /// the server would refuse the command, so nothing is sent.
    InvalidArguments,
    /// The keys hash to different slots: no one node can run the command.
    CrossSlot {
        /// The first key's slot.
        first: u16,
        /// The first slot that differs from it.
        second: u16,
    },
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            CommandError::Empty => f.write_str("empty command"),
            CommandError::UnknownCommand => f.write_str("unknown command"),
            CommandError::UnknownSubcommand => f.write_str("unknown subcommand"),
            CommandError::WrongArity { arity, given } if arity >= 0 => {
                write!(f, "wrong number of arguments: {given} given, {arity} expected (the name included)")
            }
            CommandError::WrongArity { arity, given } => write!(
                f,
                "wrong number of arguments: {given} given, at least {} expected (the name included)",
                -i16::from(arity)
            ),
            CommandError::InvalidArguments => {
                f.write_str("the arguments do not say which keys (a bad numkeys, or a missing keyword)")
            }
            CommandError::CrossSlot { first, second } => write!(
                f,
                "the keys hash to different slots ({first} and {second}): no one node can run the command"
            ),
        }
    }
}

impl core::error::Error for CommandError {}

/// What the tables say of a command: the servers' flags, for a client that
/// treats reads, writes and blocking commands differently.
#[derive(Clone, Copy, Debug)]
pub struct CommandInfo {
    spec: &'static Spec,
}

impl CommandInfo {
    /// The command's name (a subcommand's without its container's).
    #[must_use]
    pub fn name(&self) -> &'static str {
        self.spec.name
    }

    /// It may change data (`write`): only a primary takes it.
    #[must_use]
    pub fn is_write(&self) -> bool {
        self.spec.flags & cmd::WRITE != 0
    }

    /// It only reads data (`readonly`): a replica may answer it.
    #[must_use]
    pub fn is_read_only(&self) -> bool {
        self.spec.flags & cmd::READONLY != 0
    }

    /// It may block the connection (`BLPOP`, `XREAD BLOCK`).
    #[must_use]
    pub fn is_blocking(&self) -> bool {
        self.spec.flags & cmd::BLOCKING != 0
    }

    /// A pub/sub command, which changes what the connection receives.
    #[must_use]
    pub fn is_pubsub(&self) -> bool {
        self.spec.flags & cmd::PUBSUB != 0
    }

    /// It may not run inside `MULTI` (`no_multi`).
    #[must_use]
    pub fn refused_in_transactions(&self) -> bool {
        self.spec.flags & cmd::NO_MULTI != 0
    }

    /// Which nodes it goes to when it has no keys.
    #[must_use]
    pub fn fanout(&self) -> Fanout {
        self.spec.fanout
    }
}

/// Where the command line `args` (the name first) must go: the slot of its
/// keys (all of them in one; shard channels count as keys), any node, or
/// every master or node.
///
/// # Errors
/// [`CommandError`]: no command, an unknown one, the wrong number of
/// arguments, arguments that do not say which keys, or keys in different
/// slots (naming the first two slots that differ).
pub fn command_target(args: &[&[u8]]) -> Result<Target, CommandError> {
    command_route(args).map(|(target, _)| target)
}

/// [`command_target`] and [`command_info`] from one look at the tables:
/// what a client needs to send a command (where, and whether it writes or
/// blocks).
///
/// # Errors
/// As [`command_target`].
pub fn command_route(args: &[&[u8]]) -> Result<(Target, CommandInfo), CommandError> {
    let spec = lookup(args)?;
    check_arity(spec, args.len())?;
    if let Some(at) = lone_key(spec).filter(|&at| at < args.len()) {
        return Ok((Target::Slot(slot_for_key(args[at])), CommandInfo { spec }));
    }
    route_by_search(spec, args)
}

/// [`command_route`] by the whole search (its way for any command; the
/// short way for one key at a fixed place must agree with it).
fn route_by_search(
    spec: &'static Spec,
    args: &[&[u8]],
) -> Result<(Target, CommandInfo), CommandError> {
    let keys = keys_of(spec, args, true)?;
    let mut slot = None;
    for at in keys {
        let key_slot = slot_for_key(args.get(at).copied().unwrap_or_default());
        match slot {
            None => slot = Some(key_slot),
            Some(first) if first != key_slot => {
                return Err(CommandError::CrossSlot {
                    first,
                    second: key_slot,
                })
            }
            Some(_) => {}
        }
    }
    let target = match (slot, spec.fanout) {
        (Some(slot), _) => Target::Slot(slot),
        (None, Fanout::None) => Target::AnyNode,
        (None, Fanout::AllMasters(reply)) => Target::AllMasters(reply),
        (None, Fanout::AllNodes(reply)) => Target::AllNodes(reply),
    };
    Ok((target, CommandInfo { spec }))
}

/// The positions in `args` of the command's keys, in the servers' order:
/// what `COMMAND GETKEYS` answers (shard channels, which are not keys, left
/// out). A command with no keys yields none.
///
/// # Errors
/// As [`command_target`], but never `CrossSlot`.
pub fn command_keys(args: &[&[u8]]) -> Result<CommandKeys, CommandError> {
    find_keys(args, false).map(|(_, keys)| keys)
}

/// What the tables say of the command `args` names (its subcommand's
/// entry where it has one), or `None` for an unknown command.
#[must_use]
pub fn command_info(args: &[&[u8]]) -> Option<CommandInfo> {
    lookup(args).ok().map(|spec| CommandInfo { spec })
}

/// Whether the command is one whose definition has keys (as the servers'
/// `doesCommandHaveKeys`: key specs that are keys, or a fallback procedure).
#[must_use]
pub fn command_has_keys(args: &[&[u8]]) -> bool {
    lookup(args).is_ok_and(|spec| has_keys(spec, false))
}

/// At most this many ranges of keys (key specs, or a fallback's parts).
const MAX_RANGES: usize = 6;

/// The keys of one command line: positions in its arguments, in order.
#[derive(Clone, Debug)]
pub struct CommandKeys {
    ranges: [KeyRange; MAX_RANGES],
    count: usize,
    /// The range being walked, and the next position in it.
    current: usize,
    next: usize,
}

/// Positions `first..=last`, every `step`-th.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct KeyRange {
    first: usize,
    last: usize,
    step: usize,
}

impl CommandKeys {
    const fn none() -> Self {
        Self {
            ranges: [KeyRange {
                first: 0,
                last: 0,
                step: 1,
            }; MAX_RANGES],
            count: 0,
            current: 0,
            next: 0,
        }
    }

    fn push(&mut self, range: KeyRange) -> Result<(), Invalid> {
        let slot = self.ranges.get_mut(self.count).ok_or(Invalid::Other)?;
        *slot = range;
        self.count += 1;
        if self.count == 1 {
            self.next = range.first;
        }
        Ok(())
    }
}

impl Iterator for CommandKeys {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        while self.current < self.count {
            let range = self.ranges[self.current];
            if self.next <= range.last {
                let at = self.next;
                self.next += range.step.max(1);
                return Some(at);
            }
            self.current += 1;
            if let Some(next) = self
                .ranges
                .get(self.current)
                .filter(|_| self.current < self.count)
            {
                self.next = next.first;
            }
        }
        None
    }
}

/// A key spec (or a fallback) that cannot find keys in these arguments.
#[derive(Debug)]
enum Invalid {
    /// A key count that is not a number, negative, or more keys than
    /// there are arguments: the command itself would fail, so a router
    /// sends nothing (`COMMAND GETKEYS` falls back on the servers'
    /// procedure, which finds no keys).
    KeyCount,
    /// Anything else: the servers fall back on their procedure.
    Other,
}

/// The command `args` names: its entry, or its subcommand's.
fn lookup(args: &[&[u8]]) -> Result<&'static Spec, CommandError> {
    let name = args.first().ok_or(CommandError::Empty)?;
    let spec = find_command(name).ok_or(CommandError::UnknownCommand)?;
    if spec.subcommands.is_empty() || args.len() == 1 {
        return Ok(spec);
    }
    find_spec(spec.subcommands, args[1]).ok_or(CommandError::UnknownSubcommand)
}

/// The longest command or subcommand name the tables hold, or longer.
const MAX_NAME: usize = 32;

/// Every command, sorted by name.
static COMMANDS: [Spec; TABLE.len()] = TABLE;

/// Slots of the name index: a power of two, four times the commands, so a
/// name is found on its first probe nearly always.
const INDEX_SLOTS: usize = 1024;

/// An empty slot of the name index.
const NO_COMMAND: u8 = u8::MAX;

/// A name as words: its bytes lowered, eight to a word (little-endian,
/// zero after its end). The client looks up every command it sends, so a
/// name is read, lowered, hashed and compared a word at a time: about a
/// third of the instructions of the same done a byte at a time.
type Words = [u64; MAX_NAME / 8];
const _: () = assert!(MAX_NAME / 8 == 4, "slot_of mixes four words");

/// Command number by the hash of its name's [`Words`] (open addressing,
/// linear probing), built at compile time: a name costs one hash and one
/// compare where a binary search over the table costs eight compares and
/// as many mispredicted branches.
static INDEX: [u8; INDEX_SLOTS] = build_index();

/// Each byte of `word` that is an ASCII capital, lowered; the others as
/// they are (eight at once: no byte's sum carries into the next).
const fn lower(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = ONES * 0x80;
    let low7 = word & !HIGH;
    let from_a = low7 + ONES * (0x80 - b'A' as u64);
    let past_z = low7 + ONES * (0x7f - b'Z' as u64);
    let capital = from_a & !past_z & !word & HIGH;
    word | (capital >> 2)
}

/// The first `n` bytes of `bytes` (`n` at most eight) as a little-endian
/// word, zero after them: whole-word or overlapping reads, no loop.
#[cfg_attr(not(target_arch = "wasm32"), inline(always))]
const fn read_word(bytes: &[u8], n: usize) -> u64 {
    const fn u32_at(bytes: &[u8], at: usize) -> u64 {
        match bytes.split_at_checked(at) {
            Some((_, rest)) => match rest.first_chunk::<4>() {
                Some(four) => u32::from_le_bytes(*four) as u64,
                None => 0,
            },
            None => 0,
        }
    }
    const fn byte(bytes: &[u8], at: usize) -> u64 {
        if at < bytes.len() {
            bytes[at] as u64
        } else {
            0
        }
    }
    match n {
        8.. => match bytes.first_chunk::<8>() {
            Some(eight) => u64::from_le_bytes(*eight),
            None => 0,
        },
        4..=7 => u32_at(bytes, 0) | u32_at(bytes, n - 4) << (8 * (n - 4)),
        1..=3 => {
            byte(bytes, 0)
                | byte(bytes, n / 2) << (8 * (n / 2))
                | byte(bytes, n - 1) << (8 * (n - 1))
        }
        0 => 0,
    }
}

/// Word `i` of `name` as it lies (not lowered): zero past its end.
#[cfg_attr(not(target_arch = "wasm32"), inline(always))]
const fn word_at(name: &[u8], i: usize) -> u64 {
    match name.split_at_checked(i * 8) {
        Some((_, rest)) => read_word(rest, rest.len()),
        None => 0,
    }
}

/// Whether the table's `name` (lowercase) is `typed`, word by word,
/// read where it lies (no table of words in the binary).
#[cfg_attr(not(target_arch = "wasm32"), inline(always))]
fn is_named(name: &[u8], typed: &Words) -> bool {
    typed
        .iter()
        .enumerate()
        .take(name.len().div_ceil(8))
        .all(|(i, &word)| word_at(name, i) == word)
}

/// `name` (at most [`MAX_NAME`] bytes) as [`Words`]: at run time for a
/// long name typed, at compile time for every name of the table.
const fn words(name: &[u8]) -> Words {
    let mut words = [0; MAX_NAME / 8];
    let mut i = 0;
    while i < words.len() {
        words[i] = lower(word_at(name, i));
        i += 1;
    }
    words
}

/// A name's slot in [`INDEX`]: its words and its length, mixed and
/// multiplied (the top bits of a product depend on every bit below).
const fn slot_of(words: &Words, len: usize) -> usize {
    let mixed = len as u64
        ^ words[0]
        ^ words[1].rotate_left(16)
        ^ words[2].rotate_left(32)
        ^ words[3].rotate_left(48);
    (mixed.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - INDEX_SLOTS.trailing_zeros())) as usize
}

const fn build_index() -> [u8; INDEX_SLOTS] {
    assert!(
        TABLE.len() < NO_COMMAND as usize,
        "command numbers fit a u8"
    );
    let mut index = [NO_COMMAND; INDEX_SLOTS];
    let mut i = 0;
    while i < TABLE.len() {
        let name = TABLE[i].name.as_bytes();
        assert!(name.len() <= MAX_NAME, "names fit MAX_NAME");
        let mut slot = slot_of(&words(name), name.len());
        while index[slot] != NO_COMMAND {
            slot = (slot + 1) % INDEX_SLOTS;
        }
        index[slot] = i as u8;
        i += 1;
    }
    index
}

/// The top-level command `name`, any case: read as lowered [`Words`],
/// then looked up in [`INDEX`] and compared a word at a time.
fn find_command(name: &[u8]) -> Option<&'static Spec> {
    if name.len() <= 8 {
        // Most names: one word, in registers.
        return find_words(&[lower(read_word(name, name.len())), 0, 0, 0], name.len());
    }
    find_long_command(name)
}

/// [`find_command`] for a name longer than a word (apart, so that the
/// short way needs few registers).
#[inline(never)]
fn find_long_command(name: &[u8]) -> Option<&'static Spec> {
    if name.len() > MAX_NAME {
        return None;
    }
    find_words(&words(name), name.len())
}

/// The command whose name is `typed`, `len` bytes long.
#[cfg_attr(not(target_arch = "wasm32"), inline(always))]
fn find_words(typed: &Words, len: usize) -> Option<&'static Spec> {
    let mut slot = slot_of(typed, len);
    loop {
        let number = usize::from(INDEX[slot]);
        let spec = COMMANDS.get(number)?;
        // Whole words: both are zero past the name (its length tells a
        // name from the same name and a NUL).
        if spec.name.len() == len && is_named(spec.name.as_bytes(), typed) {
            return Some(spec);
        }
        slot = (slot + 1) % INDEX_SLOTS;
    }
}

/// Binary search of `table` (sorted by lowercase name) for `name`, any
/// case: lowered once, then compared as bytes. Apart, so that a command
/// with no subcommands (most) needs few registers.
#[inline(never)]
fn find_spec(table: &'static [Spec], name: &[u8]) -> Option<&'static Spec> {
    let mut lower = [0u8; MAX_NAME];
    let lower = lower.get_mut(..name.len())?;
    for (to, from) in lower.iter_mut().zip(name) {
        *to = from.to_ascii_lowercase();
    }
    table
        .binary_search_by(|spec| spec.name.as_bytes().cmp(lower))
        .ok()
        .map(|at| &table[at])
}

/// Whether `spec`'s definition has keys (shard channels counting when
/// routing).
fn has_keys(spec: &Spec, routing: bool) -> bool {
    !matches!(spec.fallback, Fallback::None)
        || spec
            .keys
            .iter()
            .any(|k| routing || k.flags & key::NOT_KEY == 0)
}

/// The servers' search: the command, its arity, then its keys by spec or
/// by fallback (`getKeysFromCommandWithSpecs`). `routing` counts shard
/// channels as keys (they decide a node as keys do) and refuses a bad key
/// count outright; without it the answer is `COMMAND GETKEYS`'s.
fn find_keys(args: &[&[u8]], routing: bool) -> Result<(&'static Spec, CommandKeys), CommandError> {
    let spec = lookup(args)?;
    check_arity(spec, args.len())?;
    keys_of(spec, args, routing).map(|keys| (spec, keys))
}

/// Whether `given` arguments (the name included) meet `spec`'s arity.
fn check_arity(spec: &Spec, given: usize) -> Result<(), CommandError> {
    let arity = spec.arity;
    if (arity > 0 && usize::from(arity.unsigned_abs()) != given)
        || given < usize::from(arity.unsigned_abs())
    {
        return Err(CommandError::WrongArity { arity, given });
    }
    Ok(())
}

/// Where the one key of a command is, when its definition puts exactly
/// one at a fixed place (`GET`, `SET`, `HSET`: most commands): what
/// [`keys_of`] finds when routing, given that many arguments, without
/// the search.
fn lone_key(spec: &Spec) -> Option<usize> {
    let variable = spec.keys.iter().any(|k| k.flags & key::VARIABLE_FLAGS != 0);
    if spec.keys.is_empty() || variable {
        return matches!(spec.fallback, Fallback::First).then_some(1);
    }
    match *spec.keys {
        [KeySpec {
            flags,
            begin: Begin::Index(at),
            find: Find::Range { last_key: 0, .. },
        }] if flags & key::INCOMPLETE == 0 => usize::try_from(at).ok(),
        _ => None,
    }
}

/// The keys of `args` by `spec` (its arity met).
fn keys_of(spec: &Spec, args: &[&[u8]], routing: bool) -> Result<CommandKeys, CommandError> {
    let key_specs = spec
        .keys
        .iter()
        .any(|k| routing || k.flags & key::NOT_KEY == 0);
    let variable = spec.keys.iter().any(|k| k.flags & key::VARIABLE_FLAGS != 0);
    let mut keys = None;
    if key_specs && !variable {
        match by_specs(spec, args, routing) {
            Ok(found) => keys = Some(found),
            Err(Invalid::KeyCount) if routing => return Err(CommandError::InvalidArguments),
            Err(_) => {}
        }
    }
    let keys = match keys {
        Some(keys) => keys,
        None => by_fallback(spec.fallback, args).unwrap_or(CommandKeys::none()),
    };
    if keys.count == 0 && has_keys(spec, routing) && spec.flags & cmd::NO_MANDATORY_KEYS == 0 {
        // The servers' `COMMAND GETKEYS` says "Invalid arguments specified
        // for command", and the command itself would fail.
        return Err(CommandError::InvalidArguments);
    }
    Ok(keys)
}

/// `getKeysUsingKeySpecs`: every spec, in order; a spec that fails (or is
/// incomplete) fails the whole search.
fn by_specs(spec: &Spec, args: &[&[u8]], routing: bool) -> Result<CommandKeys, Invalid> {
    let argc = args.len() as i64;
    let mut keys = CommandKeys::none();
    for key_spec in spec.keys {
        if key_spec.flags & key::NOT_KEY != 0 && !routing {
            continue;
        }
        let first = match key_spec.begin {
            Begin::Index(at) => i64::from(at),
            Begin::Keyword {
                keyword,
                start_from,
            } => {
                let start_from = i64::from(start_from);
                let (start, end) = if start_from > 0 {
                    (start_from, argc - 1)
                } else {
                    (argc + start_from, 1)
                };
                let mut found = 0;
                let mut i = start;
                while i != end {
                    if i >= argc || i < 1 {
                        break;
                    }
                    if arg(args, i).eq_ignore_ascii_case(keyword.as_bytes()) {
                        found = i + 1;
                        break;
                    }
                    i += if start <= end { 1 } else { -1 };
                }
                if found == 0 {
                    // The keyword is optional: this spec finds nothing.
                    continue;
                }
                found
            }
            Begin::Unknown => return Err(Invalid::Other),
        };
        let mut first = first;
        let (last, step) = match key_spec.find {
            Find::Range {
                last_key,
                step: range_step,
                limit,
            } => {
                let (last_key, limit) = (i64::from(last_key), i64::from(limit));
                let last = if last_key >= 0 {
                    first + last_key
                } else if limit == 0 {
                    argc + last_key
                } else {
                    first + ((argc - first) / limit + last_key)
                };
                (last, i64::from(range_step))
            }
            Find::KeyNum {
                key_num_index,
                first_key,
                step: num_step,
            } => {
                let index = first + i64::from(key_num_index);
                if i64::from(key_num_index) >= argc || index >= argc {
                    return Err(Invalid::Other);
                }
                let numkeys = string_to_ll(arg(args, index))
                    .filter(|&n| n >= 0)
                    .ok_or(Invalid::KeyCount)?;
                first += i64::from(first_key);
                // The servers compute in a C `int`.
                let last = first + i64::from(numkeys as i32) - 1;
                if last >= argc {
                    return Err(Invalid::KeyCount);
                }
                (last, i64::from(num_step))
            }
            Find::Unknown => return Err(Invalid::Other),
        };
        if last >= argc || last < first || first >= argc {
            return Err(Invalid::Other);
        }
        keys.push(KeyRange {
            first: first as usize,
            last: last as usize,
            step: step.max(1) as usize,
        })?;
        if key_spec.flags & key::INCOMPLETE != 0 {
            return Err(Invalid::Other);
        }
    }
    Ok(keys)
}

/// The servers' fallback procedures (`getkeys_proc`).
fn by_fallback(fallback: Fallback, args: &[&[u8]]) -> Result<CommandKeys, Invalid> {
    let argc = args.len();
    let mut keys = CommandKeys::none();
    let one = |at: usize| KeyRange {
        first: at,
        last: at,
        step: 1,
    };
    match fallback {
        Fallback::None => {}
        Fallback::First => keys.push(one(1))?,
        Fallback::Generic {
            store,
            count,
            first,
        } => {
            // `genericGetKeys`: the count read by C's `atoi`; none when it
            // is below 1 or more than the arguments hold.
            let num = atoi(args.get(usize::from(count)).copied().unwrap_or_default());
            let first = usize::from(first);
            if num < 1 || num as usize > argc.saturating_sub(first) {
                return Ok(keys);
            }
            keys.push(KeyRange {
                first,
                last: first + num as usize - 1,
                step: 1,
            })?;
            if store > 0 {
                keys.push(one(usize::from(store)))?;
            }
        }
        Fallback::SortRo => keys.push(one(1))?,
        Fallback::Sort => {
            keys.push(one(1))?;
            // Options take no argument unless listed; the last STORE wins.
            let mut store = None;
            let mut i = 2;
            while i < argc {
                let word = args[i];
                if word.eq_ignore_ascii_case(b"limit") {
                    i += 2;
                } else if word.eq_ignore_ascii_case(b"get") || word.eq_ignore_ascii_case(b"by") {
                    i += 1;
                } else if word.eq_ignore_ascii_case(b"store") && i + 1 < argc {
                    store = Some(i + 1);
                }
                i += 1;
            }
            if let Some(at) = store {
                keys.push(one(at))?;
            }
        }
        Fallback::Migrate => {
            // The plain form: one key at 3; the KEYS form: all after it
            // (none when argument 3 is not empty: a syntax error).
            let (mut first, mut num) = (3, 1);
            if argc > 6 {
                let mut i = 6;
                while i < argc {
                    let word = args[i];
                    if word.eq_ignore_ascii_case(b"keys") {
                        if arg(args, 3).is_empty() {
                            first = i + 1;
                            num = argc - first;
                        } else {
                            num = 0;
                        }
                        break;
                    }
                    if word.eq_ignore_ascii_case(b"auth") {
                        i += 1;
                    } else if word.eq_ignore_ascii_case(b"auth2") {
                        i += 2;
                    }
                    i += 1;
                }
            }
            if num > 0 {
                keys.push(KeyRange {
                    first,
                    last: first + num - 1,
                    step: 1,
                })?;
            }
        }
        Fallback::Georadius => {
            keys.push(one(1))?;
            let mut stored = None;
            let mut i = 5;
            while i < argc {
                let word = args[i];
                if (word.eq_ignore_ascii_case(b"store") || word.eq_ignore_ascii_case(b"storedist"))
                    && i + 1 < argc
                {
                    stored = Some(i + 1);
                    i += 1;
                }
                i += 1;
            }
            if let Some(at) = stored {
                keys.push(one(at))?;
            }
        }
        Fallback::Xread => {
            let mut streams = None;
            let mut i = 1;
            while i < argc {
                let word = args[i];
                if word.eq_ignore_ascii_case(b"block") || word.eq_ignore_ascii_case(b"count") {
                    i += 1;
                } else if word.eq_ignore_ascii_case(b"group") {
                    i += 2;
                } else if word.eq_ignore_ascii_case(b"noack") {
                } else if word.eq_ignore_ascii_case(b"streams") {
                    streams = Some(i);
                    break;
                } else {
                    break;
                }
                i += 1;
            }
            let Some(at) = streams else {
                return Ok(keys);
            };
            let num = argc - at - 1;
            if num == 0 || !num.is_multiple_of(2) {
                return Ok(keys);
            }
            keys.push(KeyRange {
                first: at + 1,
                last: at + num / 2,
                step: 1,
            })?;
        }
    }
    Ok(keys)
}

/// Argument `i`, or nothing past the end.
fn arg<'a>(args: &[&'a [u8]], i: i64) -> &'a [u8] {
    usize::try_from(i)
        .ok()
        .and_then(|i| args.get(i))
        .copied()
        .unwrap_or_default()
}

/// The servers' `string2ll`: an optional `-`, then digits with no leading
/// zero (or just `0`), that fit in an `i64`.
fn string_to_ll(text: &[u8]) -> Option<i64> {
    match text {
        [] => None,
        [b'0'] => Some(0),
        [b'-', digits @ ..] => match digits {
            [b'1'..=b'9', ..] => {
                let magnitude = digits_to_u64(digits)?;
                0i64.checked_sub_unsigned(magnitude)
            }
            _ => None,
        },
        [b'1'..=b'9', ..] => i64::try_from(digits_to_u64(text)?).ok(),
        _ => None,
    }
}

fn digits_to_u64(digits: &[u8]) -> Option<u64> {
    digits.iter().try_fold(0u64, |n, &d| {
        d.is_ascii_digit()
            .then(|| n.checked_mul(10)?.checked_add(u64::from(d - b'0')))
            .flatten()
    })
}

/// C's `atoi` as glibc has it: `(int) strtol(text, NULL, 10)`. Leading
/// white space, a sign, digits up to the first non-digit; out of range
/// clamps to the `long` bounds, then the cast keeps the low 32 bits.
fn atoi(text: &[u8]) -> i32 {
    let text = text
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))
        .map_or(&[][..], |at| &text[at..]);
    let (negative, digits) = match text {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, text),
    };
    let mut value: i64 = 0;
    let mut clamped = false;
    for &d in digits.iter().take_while(|d| d.is_ascii_digit()) {
        match value
            .checked_mul(10)
            .and_then(|v| v.checked_add(i64::from(d - b'0')))
        {
            Some(v) => value = v,
            None => {
                clamped = true;
                break;
            }
        }
    }
    let long = match (negative, clamped) {
        (false, true) => i64::MAX,
        (true, true) => i64::MIN,
        (true, false) => -value,
        (false, false) => value,
    };
    long as i32
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Strategy;

    fn keys(args: &[&[u8]]) -> Result<heapless::Vec<usize, 16>, CommandError> {
        command_keys(args).map(Iterator::collect)
    }

    #[test]
    fn the_table_is_sorted_for_binary_search() {
        for pair in COMMANDS.windows(2) {
            assert!(
                pair[0].name < pair[1].name,
                "{} then {}",
                pair[0].name,
                pair[1].name
            );
        }
        for spec in &COMMANDS {
            for pair in spec.subcommands.windows(2) {
                assert!(pair[0].name < pair[1].name);
            }
        }
        assert!(COMMANDS.len() > 200);
        let names = COMMANDS
            .iter()
            .chain(COMMANDS.iter().flat_map(|c| c.subcommands));
        for spec in names {
            assert!(spec.name.len() <= MAX_NAME, "{}", spec.name);
            assert_eq!(spec.name, spec.name.to_ascii_lowercase());
        }
        assert_eq!(lookup(&[b"GeT"]).map(|s| s.name), Ok("get"));
        for spec in &COMMANDS {
            let mut upper = [0u8; MAX_NAME + 1];
            let name = spec.name.as_bytes();
            upper[..name.len()].copy_from_slice(name);
            upper.make_ascii_uppercase();
            let found = find_command(&upper[..name.len()]).unwrap();
            assert!(core::ptr::eq(found, spec), "{}", spec.name);
            // The name and a NUL: no command.
            assert!(find_command(&upper[..=name.len()]).is_none());
        }
        assert!(find_command(b"").is_none());
        assert_eq!(
            lookup(&[&[b'a'; MAX_NAME + 1]]).map(|s| s.name),
            Err(CommandError::UnknownCommand)
        );
    }

    #[test]
    fn names_are_lowered_and_read_a_word_at_a_time_as_bytes_are() {
        for b in 0..=u8::MAX {
            for at in 0..8 {
                let word = u64::from(b) << (8 * at) | 0x4a00_0061_5a00_7a41 & !(0xff << (8 * at));
                let bytes = word.to_le_bytes().map(|b| b.to_ascii_lowercase());
                assert_eq!(lower(word), u64::from_le_bytes(bytes), "{b:#x} at {at}");
            }
        }
        let bytes = *b"ABCDEFGHIJ";
        for n in 0..=8 {
            let mut padded = [0u8; 8];
            padded[..n].copy_from_slice(&bytes[..n]);
            assert_eq!(read_word(&bytes, n), u64::from_le_bytes(padded), "{n}");
        }
    }

    /// The name index against a search of the whole table.
    fn find_by_search(name: &[u8]) -> Option<&'static Spec> {
        COMMANDS
            .iter()
            .find(|spec| spec.name.as_bytes().eq_ignore_ascii_case(name))
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_find_the_command_a_search_finds(
            name in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40),
            command in 0..TABLE.len(),
            cases in proptest::collection::vec(proptest::prelude::any::<bool>(), 32),
            cut in 0usize..40,
        ) {
            let found = find_command(&name).map(|s| s.name);
            proptest::prop_assert_eq!(found, find_by_search(&name).map(|s| s.name));
            // A real name in any case, and cut short or lengthened.
            let mut typed: heapless::Vec<u8, 40> = COMMANDS[command]
                .name
                .bytes()
                .zip(&cases)
                .map(|(b, &up)| if up { b.to_ascii_uppercase() } else { b })
                .collect();
            proptest::prop_assert_eq!(find_command(&typed).map(|s| s.name), Some(COMMANDS[command].name));
            typed.truncate(cut);
            proptest::prop_assert_eq!(
                find_command(&typed).map(|s| s.name),
                find_by_search(&typed).map(|s| s.name)
            );
            let _ = typed.extend_from_slice(&name[..name.len().min(40 - typed.len())]);
            proptest::prop_assert_eq!(
                find_command(&typed).map(|s| s.name),
                find_by_search(&typed).map(|s| s.name)
            );
        }
    }

    /// Arguments that keyed commands look for.
    const WORDS: &[&[u8]] = &[
        b"k", b"{t}a", b"{t}b", b"0", b"1", b"2", b"-1", b"STORE", b"KEYS", b"STREAMS", b"WEIGHTS",
        b"BY", b"COUNT", b"",
    ];

    /// [`command_route`] by the whole search only.
    fn route_by_search_only(args: &[&[u8]]) -> Result<(Target, &'static str), CommandError> {
        let spec = lookup(args)?;
        check_arity(spec, args.len())?;
        route_by_search(spec, args).map(|(target, info)| (target, info.name()))
    }

    proptest::proptest! {
        #[test]
        fn the_short_way_to_one_key_routes_as_the_search_does(
            rest in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::sample::select(WORDS).prop_map(<[u8]>::to_vec),
                    proptest::collection::vec(proptest::prelude::any::<u8>(), 0..6),
                ],
                0..9,
            ),
        ) {
            // Every command and subcommand, with every prefix of the rest.
            let lines = COMMANDS.iter().flat_map(|spec| {
                let subcommands = spec.subcommands.iter().map(move |sub| [spec.name, sub.name]);
                core::iter::once([spec.name, ""]).chain(subcommands)
            });
            for [name, subcommand] in lines {
                let mut args: heapless::Vec<&[u8], 12> = heapless::Vec::new();
                let _ = args.push(name.as_bytes());
                if !subcommand.is_empty() {
                    let _ = args.push(subcommand.as_bytes());
                }
                for arg in &rest {
                    let _ = args.push(arg);
                }
                for n in 0..=args.len() {
                    let quick = command_route(&args[..n]).map(|(target, info)| (target, info.name()));
                    proptest::prop_assert_eq!(quick, route_by_search_only(&args[..n]), "{:?}", &args[..n]);
                }
            }
        }
    }

    #[test]
    fn most_commands_have_their_one_key_at_a_fixed_place() {
        let lone = |name: &str| find_command(name.as_bytes()).and_then(lone_key);
        assert_eq!(
            (lone("get"), lone("set"), lone("hset")),
            (Some(1), Some(1), Some(1))
        );
        assert_eq!(
            (lone("mget"), lone("eval"), lone("ping")),
            (None, None, None)
        );
        let with_one = COMMANDS
            .iter()
            .filter(|spec| lone_key(spec).is_some())
            .count();
        assert!(
            with_one * 2 > COMMANDS.len(),
            "{with_one} of {}",
            COMMANDS.len()
        );
    }

    #[test]
    fn keys_as_the_servers_find_them() {
        let cases: &[(&[&[u8]], &[usize])] = &[
            (&[b"GET", b"k"], &[1]),
            (&[b"mset", b"a", b"1", b"b", b"2"], &[1, 3]),
            (&[b"EVAL", b"s", b"2", b"k1", b"k2", b"arg"], &[3, 4]),
            (&[b"EVAL", b"s", b"0"], &[]),
            (
                &[
                    b"XREAD", b"COUNT", b"2", b"STREAMS", b"s1", b"s2", b"0", b"0",
                ],
                &[4, 5],
            ),
            (
                &[
                    b"ZUNIONSTORE",
                    b"d",
                    b"2",
                    b"a",
                    b"b",
                    b"WEIGHTS",
                    b"1",
                    b"2",
                ],
                &[1, 3, 4],
            ),
            (&[b"SORT", b"k", b"BY", b"w", b"STORE", b"dst"], &[1, 5]),
            (
                &[b"MIGRATE", b"h", b"1", b"", b"0", b"5", b"KEYS", b"a", b"b"],
                &[7, 8],
            ),
            (&[b"OBJECT", b"ENCODING", b"k"], &[2]),
            (&[b"MEMORY", b"USAGE", b"k", b"SAMPLES", b"5"], &[2]),
            (&[b"SPUBLISH", b"ch", b"msg"], &[]),
        ];
        for &(args, want) in cases {
            assert_eq!(
                keys(args).as_deref(),
                Ok(want),
                "{:?}",
                args.iter()
                    .map(|a| a.escape_ascii())
                    .collect::<heapless::Vec<_, 16>>()
            );
        }
    }

    #[test]
    fn bad_input_is_a_typed_error() {
        assert_eq!(command_target(&[]), Err(CommandError::Empty));
        assert_eq!(
            command_target(&[b"nope"]),
            Err(CommandError::UnknownCommand)
        );
        assert_eq!(
            command_target(&[b"OBJECT", b"NOPE"]),
            Err(CommandError::UnknownSubcommand)
        );
        assert_eq!(
            command_target(&[b"GET"]),
            Err(CommandError::WrongArity { arity: 2, given: 1 })
        );
        // numkeys larger than the arguments, or not a number.
        assert_eq!(
            command_target(&[b"EVAL", b"s", b"5", b"k"]),
            Err(CommandError::InvalidArguments)
        );
        assert_eq!(
            command_target(&[b"EVAL", b"s", b"x", b"k"]),
            Err(CommandError::InvalidArguments)
        );
        assert_eq!(
            command_target(&[b"XREAD", b"COUNT", b"1", b"x"]),
            Err(CommandError::InvalidArguments)
        );
        let (a, b) = (slot_for_key(b"a"), slot_for_key(b"b"));
        assert_eq!(
            command_target(&[b"MGET", b"a", b"b"]),
            Err(CommandError::CrossSlot {
                first: a,
                second: b
            })
        );
    }

    #[test]
    fn targets() {
        assert_eq!(
            command_target(&[b"SPUBLISH", b"ch", b"m"]),
            Ok(Target::Slot(slot_for_key(b"ch")))
        );
        assert_eq!(command_target(&[b"ECHO", b"x"]), Ok(Target::AnyNode));
        assert_eq!(
            command_target(&[b"EVAL", b"return 1", b"0"]),
            Ok(Target::AnyNode)
        );
        assert_eq!(
            command_target(&[b"FLUSHALL"]),
            Ok(Target::AllMasters(Reply::AllSucceeded))
        );
        assert_eq!(
            command_target(&[b"KEYS", b"*"]),
            Ok(Target::AllMasters(Reply::EachNode))
        );
        assert_eq!(
            command_target(&[b"SCRIPT", b"LOAD", b"return 1"]),
            Ok(Target::AllNodes(Reply::AllSucceeded))
        );
        let info = command_info(&[b"blpop"]).unwrap();
        assert!(info.is_blocking() && info.is_write());
        assert!(command_info(&[b"get"]).is_some_and(|i| i.is_read_only()));
        assert!(command_has_keys(&[b"GET", b"k"]) && !command_has_keys(&[b"PING"]));
        let (target, info) = command_route(&[b"SET", b"k", b"v"]).unwrap();
        assert_eq!(target, Target::Slot(crate::slot_for_key(b"k")));
        assert!(info.is_write() && info.name() == "set");
        assert_eq!(
            command_route(&[b"MGET", b"a", b"b"]).map(|(t, _)| t),
            command_target(&[b"MGET", b"a", b"b"])
        );
    }

    #[test]
    fn c_number_parsing() {
        assert_eq!(string_to_ll(b"0"), Some(0));
        assert_eq!(string_to_ll(b"-12"), Some(-12));
        for bad in [
            &b""[..],
            b"01",
            b"-0",
            b"+1",
            b" 1",
            b"1x",
            b"99999999999999999999",
        ] {
            assert_eq!(string_to_ll(bad), None, "{:?}", bad.escape_ascii());
        }
        assert_eq!(string_to_ll(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(string_to_ll(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(atoi(b"  +12abc"), 12);
        assert_eq!(atoi(b"x1"), 0);
        assert_eq!(atoi(b"-3"), -3);
        assert_eq!(atoi(b"4294967297"), 1, "the int cast keeps the low 32 bits");
        assert_eq!(
            atoi(b"99999999999999999999"),
            -1,
            "clamped to LONG_MAX, then cast"
        );
    }
}
