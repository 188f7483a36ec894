//! The servers' key search: a command's key specifications (an argument
//! index or a keyword to begin at; a range, or a key count to read), then
//! its fallback procedure where the specs cannot say.

use super::error::CommandError;
use super::index::lookup;
use super::spec::{cmd, key, Begin, Fallback, Find, KeySpec, Spec};

/// At most this many ranges of keys (key specs, or a fallback's parts).
pub(super) const MAX_RANGES: usize = 6;

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
pub(super) struct KeyRange {
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
pub(super) enum Invalid {
    /// A key count that is not a number, negative, or more keys than
    /// there are arguments: the command itself would fail, so a router
    /// sends nothing (`COMMAND GETKEYS` falls back on the servers'
    /// procedure, which finds no keys).
    KeyCount,
    /// Anything else: the servers fall back on their procedure.
    Other,
}

/// Whether `spec`'s definition has keys (shard channels counting when
/// routing).
pub(super) fn has_keys(spec: &Spec<'_>, routing: bool) -> bool {
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
pub(super) fn find_keys(
    args: &[&[u8]],
    routing: bool,
) -> Result<(&'static Spec<'static>, CommandKeys), CommandError> {
    let spec = lookup(args)?;
    check_arity(spec, args.len())?;
    keys_of(spec, args, routing).map(|keys| (spec, keys))
}

/// Whether `given` arguments (the name included) meet `spec`'s arity.
pub(super) fn check_arity(spec: &Spec<'_>, given: usize) -> Result<(), CommandError> {
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
pub(super) fn lone_key(spec: &Spec<'_>) -> Option<usize> {
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
pub(super) fn keys_of(
    spec: &Spec<'_>,
    args: &[&[u8]],
    routing: bool,
) -> Result<CommandKeys, CommandError> {
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
    found_some(spec, keys, routing)
}

/// `keys`, unless none were found in a command that must have some: the
/// servers' `COMMAND GETKEYS` says "Invalid arguments specified for
/// command", and the command itself would fail.
#[inline(always)]
pub(super) fn found_some(
    spec: &Spec<'_>,
    keys: CommandKeys,
    routing: bool,
) -> Result<CommandKeys, CommandError> {
    if keys.count == 0 && has_keys(spec, routing) && spec.flags & cmd::NO_MANDATORY_KEYS == 0 {
        return Err(CommandError::InvalidArguments);
    }
    Ok(keys)
}

/// `getKeysUsingKeySpecs`: every spec, in order; a spec that fails (or is
/// incomplete) fails the whole search.
// Always inlined: its one caller in a build without learned commands (the
// wasm playground's) keeps the size it had before they came.
#[inline(always)]
pub(super) fn by_specs(
    spec: &Spec<'_>,
    args: &[&[u8]],
    routing: bool,
) -> Result<CommandKeys, Invalid> {
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
        // The name is never a key: a spec that points at it (none of the
        // table's; a learned one may) cannot say.
        if last >= argc || last < first || first >= argc || first < 1 {
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
pub(super) fn by_fallback(fallback: Fallback, args: &[&[u8]]) -> Result<CommandKeys, Invalid> {
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
pub(super) fn arg<'a>(args: &[&'a [u8]], i: i64) -> &'a [u8] {
    usize::try_from(i)
        .ok()
        .and_then(|i| args.get(i))
        .copied()
        .unwrap_or_default()
}

/// The servers' `string2ll`: an optional `-`, then digits with no leading
/// zero (or just `0`), that fit in an `i64`.
pub(super) fn string_to_ll(text: &[u8]) -> Option<i64> {
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

pub(super) fn digits_to_u64(digits: &[u8]) -> Option<u64> {
    digits.iter().try_fold(0u64, |n, &d| {
        d.is_ascii_digit()
            .then(|| n.checked_mul(10)?.checked_add(u64::from(d - b'0')))
            .flatten()
    })
}

/// C's `atoi` as glibc has it: `(int) strtol(text, NULL, 10)`. Leading
/// white space, a sign, digits up to the first non-digit; out of range
/// clamps to the `long` bounds, then the cast keeps the low 32 bits.
pub(super) fn atoi(text: &[u8]) -> i32 {
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
