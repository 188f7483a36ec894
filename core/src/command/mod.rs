//! Which arguments of a command line are keys, and so where it must go:
//! one slot, any node, or every master. No allocation.
//!
//! The table behind it (`table.rs`, entries as `spec.rs` describes
//! them, found by name through `index.rs`) is generated from the `COMMAND`
//! replies of real Redis and Valkey servers, and the search (`keys.rs`) is
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

mod error;
mod index;
mod keys;
mod learned;
mod spec;
mod table;
mod target;

pub use self::error::CommandError;
use self::index::lookup;
pub use self::keys::CommandKeys;
use self::keys::{check_arity, find_keys, has_keys, keys_of, lone_key};
pub use self::learned::{
    learn_command, LearnError, LearnedCommand, MAX_LEARNED_KEY_SPECS, MAX_LEARNED_NAME,
};
use self::spec::Spec;
pub use self::spec::{Fanout, Reply};
pub use self::target::{keys_target, CommandInfo, Target};
use crate::slot_for_key;

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
pub fn command_route(args: &[&[u8]]) -> Result<(Target, CommandInfo<'static>), CommandError> {
    let spec = lookup(args)?;
    check_arity(spec, args.len())?;
    if let Some(at) = lone_key(spec).filter(|&at| at < args.len()) {
        return Ok((Target::Slot(slot_for_key(args[at])), CommandInfo::of(spec)));
    }
    route_by_search(spec, args)
}

/// [`command_route`] by the whole search (its way for any command; the
/// short way for one key at a fixed place must agree with it).
fn route_by_search<'a>(
    spec: &Spec<'a>,
    args: &[&[u8]],
) -> Result<(Target, CommandInfo<'a>), CommandError> {
    let keys = keys_of(spec, args, true)?;
    let target = keys_target(
        keys.map(|at| args.get(at).copied().unwrap_or_default()),
        spec.fanout,
    )?;
    Ok((target, CommandInfo::of(spec)))
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
pub fn command_info(args: &[&[u8]]) -> Option<CommandInfo<'static>> {
    lookup(args).ok().map(CommandInfo::of)
}

/// What the tables say of the command `args` names and where its one key
/// is: `None` for an unknown command, a wrong number of arguments, or a
/// line with no key or several. One look at the tables, for the client
/// cache's hit path ([`crate::cached_read`]).
pub(crate) fn info_and_lone_key(args: &[&[u8]]) -> Option<(CommandInfo<'static>, usize)> {
    let spec = lookup(args).ok()?;
    check_arity(spec, args.len()).ok()?;
    let plain = spec.keys.iter().all(|k| k.flags & spec::key::NOT_KEY == 0);
    if let Some(at) = lone_key(spec).filter(|&at| plain && at < args.len()) {
        return Some((CommandInfo::of(spec), at));
    }
    let mut keys = keys_of(spec, args, false).ok()?;
    let at = keys.next()?;
    keys.next().is_none().then(|| (CommandInfo::of(spec), at))
}

/// The name of every command the tables know (lowercase, in byte order;
/// subcommands are their command's): to list them, or to hold another
/// list of commands to the tables.
pub fn command_names() -> impl Iterator<Item = &'static str> {
    table::TABLE.iter().map(|spec| spec.name)
}

/// Whether the command is one whose definition has keys (as the servers'
/// `doesCommandHaveKeys`: key specs that are keys, or a fallback procedure).
#[must_use]
pub fn command_has_keys(args: &[&[u8]]) -> bool {
    lookup(args).is_ok_and(|spec| has_keys(spec, false))
}

#[cfg(test)]
mod tests {
    use super::index::*;
    use super::keys::*;
    use super::spec::*;
    use super::table::TABLE;
    use super::*;

    #[test]
    fn every_command_is_named_once_in_order() {
        assert!(command_names().count() > 200);
        let mut names = command_names().zip(command_names().skip(1));
        assert!(names.all(|(a, b)| a < b), "sorted, each once");
        assert!(command_names().any(|n| n == "get") && command_names().any(|n| n == "cluster"));
        assert!(
            command_names().all(|n| command_info(&[n.as_bytes()]).is_some_and(|i| i.name() == n))
        );
    }
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
    fn find_by_search(name: &[u8]) -> Option<&'static Spec<'static>> {
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
