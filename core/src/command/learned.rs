//! A command the table does not know (a module's `FT.SEARCH`, a newer
//! server's `HGETEX`), learned from the server itself: its `COMMAND INFO
//! name` reply, read as it came off the socket (RESP2 or RESP3) into fixed
//! room, then routed by the table's own search (`keys.rs`).
//!
//! What is kept is what routing needs: the arity, the flags, the request
//! and response tips, and the key specifications (or, from a server before
//! Redis 7, the legacy first key, last key and step, as the servers
//! themselves turn them into a spec). Where the specs cannot say which
//! arguments are keys (a spec `incomplete` or `unknown`, flags that vary
//! with the arguments, more specs than fit), the route is
//! [`CommandError::KeysNotDescribed`]: ask the server (`COMMAND GETKEYS`),
//! then [`keys_target`](super::keys_target).

use super::error::CommandError;
use super::keys::{by_specs, check_arity, found_some, CommandKeys, Invalid};
use super::spec::{cmd, key, Begin, Fallback, Fanout, Find, KeySpec, Reply, Spec};
use super::target::{keys_target, CommandInfo, Target};

/// The longest command name kept (the longest the servers list is 26).
pub const MAX_LEARNED_NAME: usize = 64;
/// Key specs kept per command (the servers' own commands have at most 3).
pub const MAX_LEARNED_KEY_SPECS: usize = 4;
/// The longest keyword a spec may begin its search at.
const MAX_KEYWORD: usize = 32;

/// A command as a server described it, in fixed room.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LearnedCommand {
    name: heapless::String<MAX_LEARNED_NAME>,
    arity: i8,
    flags: u32,
    fanout: Fanout,
    keys: heapless::Vec<LearnedKey, MAX_LEARNED_KEY_SPECS>,
    /// Every spec was read and fits: the search can say which are keys.
    described: bool,
    /// It has subcommands (`name|sub` describes each).
    container: bool,
}

/// One key spec, its keyword (if any) held in place.
#[derive(Clone, Debug, PartialEq, Eq)]
struct LearnedKey {
    flags: u16,
    begin: LearnedBegin,
    find: Find,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum LearnedBegin {
    Index(i8),
    Keyword {
        keyword: heapless::String<MAX_KEYWORD>,
        start_from: i8,
    },
    Unknown,
}

/// Why a reply is no command description.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LearnError {
    /// The bytes are not one whole RESP value.
    NotResp,
    /// RESP, but not a `COMMAND INFO` entry (a field missing or of another
    /// kind).
    NotCommandInfo,
    /// The server answered with an error (a server before `COMMAND INFO`).
    Refused,
    /// The name is longer than [`MAX_LEARNED_NAME`].
    NameTooLong,
}

impl core::fmt::Display for LearnError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            LearnError::NotResp => "the reply is not RESP",
            LearnError::NotCommandInfo => "the reply is not a COMMAND INFO entry",
            LearnError::Refused => "the server refused COMMAND INFO",
            LearnError::NameTooLong => "the command name is too long to keep",
        })
    }
}

/// Reads a server's reply to `COMMAND INFO name` (the bytes of one whole
/// reply): the command as it describes it, or `None` when the server does
/// not know the name (it answers nil).
///
/// ```
/// use zaris_core::{learn_command, Target, slot_for_key};
///
/// // redis-server 7 on `COMMAND INFO FT.SEARCH` (RediSearch 1.2), RESP2.
/// let reply = b"*1\r\n*10\r\n$9\r\nFT.SEARCH\r\n:-1\r\n*2\r\n+readonly\r\n+module\r\n\
///     :1\r\n:1\r\n:1\r\n*0\r\n*0\r\n*1\r\n*6\r\n$5\r\nflags\r\n*1\r\n+RO\r\n\
///     $12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n\
///     *2\r\n$5\r\nindex\r\n:1\r\n$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n\
///     $4\r\nspec\r\n*6\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n\
///     *0\r\n";
/// let search = learn_command(reply).unwrap().unwrap();
/// assert_eq!(search.name(), "ft.search");
/// let (target, info) = search.route(&[b"FT.SEARCH", b"idx", b"hello"]).unwrap();
/// assert_eq!(target, Target::Slot(slot_for_key(b"idx")));
/// assert!(info.is_read_only());
/// assert_eq!(learn_command(b"*1\r\n*-1\r\n"), Ok(None));
/// ```
///
/// # Errors
/// [`LearnError`]: bytes that are not RESP, a value that is not a command
/// description, an error reply, a name too long to keep.
pub fn learn_command(reply: &[u8]) -> Result<Option<LearnedCommand>, LearnError> {
    let mut r = Reader {
        bytes: reply,
        at: 0,
    };
    let found = match r.next()? {
        Item::Array(1) => match r.next()? {
            Item::Nil => None,
            Item::Array(n) => Some(r.entry(n)?),
            _ => return Err(LearnError::NotCommandInfo),
        },
        Item::Error => return Err(LearnError::Refused),
        _ => return Err(LearnError::NotCommandInfo),
    };
    if r.at != reply.len() {
        return Err(LearnError::NotResp);
    }
    Ok(found)
}

impl LearnedCommand {
    /// Its name, lowercase (`container|sub` for a subcommand).
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// It has subcommands: each is learned as `name|sub`, and routed by
    /// its own description.
    #[must_use]
    pub fn is_container(&self) -> bool {
        self.container
    }

    /// Whether its description has keys (key specs that are not shard
    /// channels): the servers' `doesCommandHaveKeys`, without a procedure.
    #[must_use]
    pub fn has_keys(&self) -> bool {
        self.keys.iter().any(|k| k.flags & key::NOT_KEY == 0)
    }

    /// Its flags, as [`command_info`](super::command_info) gives a table
    /// command's.
    #[must_use]
    pub fn info(&self) -> CommandInfo<'_> {
        self.with_spec(|spec| CommandInfo::of(spec).named(self.name()))
    }

    /// Where the command line `args` (its name first) must go, as
    /// [`command_route`](super::command_route) says for a table command.
    ///
    /// # Errors
    /// As `command_route`, and [`CommandError::KeysNotDescribed`] when the
    /// description cannot say which arguments are keys: the server can
    /// (`COMMAND GETKEYS`).
    pub fn route(&self, args: &[&[u8]]) -> Result<(Target, CommandInfo<'_>), CommandError> {
        let keys = self.find_keys(args, true)?;
        let info = self.info();
        let target = keys_target(keys.map(|at| args[at]), info.fanout())?;
        Ok((target, info))
    }

    /// The positions of the keys in `args`, as `COMMAND GETKEYS` answers
    /// (shard channels left out).
    ///
    /// # Errors
    /// As [`LearnedCommand::route`], never `CrossSlot`.
    pub fn keys(&self, args: &[&[u8]]) -> Result<CommandKeys, CommandError> {
        self.find_keys(args, false)
    }

    fn find_keys(&self, args: &[&[u8]], routing: bool) -> Result<CommandKeys, CommandError> {
        if args.is_empty() {
            return Err(CommandError::Empty);
        }
        self.with_spec(|spec| {
            check_arity(spec, args.len())?;
            if !self.described {
                return Err(CommandError::KeysNotDescribed);
            }
            match by_specs(spec, args, routing) {
                Ok(keys) => found_some(spec, keys, routing),
                Err(Invalid::KeyCount) if routing => Err(CommandError::InvalidArguments),
                // The server would fall back on a procedure of its own.
                Err(_) => Err(CommandError::KeysNotDescribed),
            }
        })
    }

    /// Keeps a key spec read, or notes that the description is not whole
    /// (`None`: one that could not be kept, or no room).
    fn keep(&mut self, spec: Option<LearnedKey>) {
        if spec.is_none_or(|spec| self.keys.push(spec).is_err()) {
            self.described = false;
        }
    }

    /// `f` on the description as the table's search reads one.
    fn with_spec<R>(&self, f: impl FnOnce(&Spec<'_>) -> R) -> R {
        let mut keys = [KeySpec {
            flags: 0,
            begin: Begin::Unknown,
            find: Find::Unknown,
        }; MAX_LEARNED_KEY_SPECS];
        for (slot, learned) in keys.iter_mut().zip(&self.keys) {
            *slot = KeySpec {
                flags: learned.flags,
                begin: match &learned.begin {
                    LearnedBegin::Index(at) => Begin::Index(*at),
                    LearnedBegin::Keyword {
                        keyword,
                        start_from,
                    } => Begin::Keyword {
                        keyword,
                        start_from: *start_from,
                    },
                    LearnedBegin::Unknown => Begin::Unknown,
                },
                find: learned.find,
            };
        }
        f(&Spec {
            name: &self.name,
            arity: self.arity,
            flags: self.flags,
            fanout: self.fanout,
            keys: &keys[..self.keys.len()],
            fallback: Fallback::None,
            subcommands: &[],
        })
    }
}

/// The command flags kept, by the names `COMMAND` gives them.
const FLAGS: [(&str, u32); 14] = [
    ("write", cmd::WRITE),
    ("readonly", cmd::READONLY),
    ("denyoom", cmd::DENYOOM),
    ("admin", cmd::ADMIN),
    ("pubsub", cmd::PUBSUB),
    ("noscript", cmd::NOSCRIPT),
    ("blocking", cmd::BLOCKING),
    ("loading", cmd::LOADING),
    ("stale", cmd::STALE),
    ("fast", cmd::FAST),
    ("no_mandatory_keys", cmd::NO_MANDATORY_KEYS),
    ("movablekeys", cmd::MOVABLEKEYS),
    ("no_multi", cmd::NO_MULTI),
    ("allow_busy", cmd::ALLOW_BUSY),
];

/// Key spec flags, likewise.
const KEY_FLAGS: [(&str, u16); 11] = [
    ("RO", key::RO),
    ("RW", key::RW),
    ("OW", key::OW),
    ("RM", key::RM),
    ("access", key::ACCESS),
    ("update", key::UPDATE),
    ("insert", key::INSERT),
    ("delete", key::DELETE),
    ("not_key", key::NOT_KEY),
    ("incomplete", key::INCOMPLETE),
    ("variable_flags", key::VARIABLE_FLAGS),
];

/// The bit `name` has in `table`, in any case (0: not one kept).
fn bit_of<T: Copy + Default>(table: &[(&str, T)], name: &[u8]) -> T {
    table
        .iter()
        .find(|(n, _)| n.as_bytes().eq_ignore_ascii_case(name))
        .map_or_else(T::default, |&(_, bit)| bit)
}

/// The fan-out the tips ask for: `request_policy:all_shards` to every
/// master, `all_nodes` to every node, with the answers combined as
/// `response_policy` says; a command of the `@connection` category (`PING`
/// is tipped `all_shards`) answers for the connection that asks, on any
/// node. A policy this build does not know asks for no fan-out (request)
/// or for each node's answer (response).
pub(super) fn fanout_of(request: &[u8], response: &[u8], connection: bool) -> Fanout {
    let reply = match response {
        b"all_succeeded" => Reply::AllSucceeded,
        b"one_succeeded" => Reply::OneSucceeded,
        b"agg_sum" => Reply::Sum,
        b"agg_logical_and" => Reply::LogicalAnd,
        b"agg_logical_or" => Reply::LogicalOr,
        b"agg_min" => Reply::Min,
        b"agg_max" => Reply::Max,
        b"special" => Reply::Special,
        _ => Reply::EachNode,
    };
    match request {
        _ if connection => Fanout::None,
        b"all_shards" => Fanout::AllMasters(reply),
        b"all_nodes" => Fanout::AllNodes(reply),
        _ => Fanout::None,
    }
}

/// One RESP value's head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Item<'a> {
    /// An array or set of this many values.
    Array(usize),
    /// A map of this many pairs.
    Map(usize),
    Text(&'a [u8]),
    Int(i64),
    Nil,
    Error,
    /// Anything else (a double, a boolean): read, not used.
    Other,
}

/// A cursor over one reply's bytes.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    /// The next line's bytes (after the type byte), and past its CRLF.
    fn line(&mut self) -> Result<&'a [u8], LearnError> {
        let rest = self.bytes.get(self.at..).ok_or(LearnError::NotResp)?;
        let end = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or(LearnError::NotResp)?;
        self.at += end + 2;
        Ok(&rest[..end])
    }

    fn number(line: &[u8]) -> Result<i64, LearnError> {
        super::keys::string_to_ll(line).ok_or(LearnError::NotResp)
    }

    /// A count of values that could still follow: no larger than the
    /// bytes left (each value takes three at least).
    fn count(&self, n: i64, per: usize) -> Result<usize, LearnError> {
        let n = usize::try_from(n).map_err(|_| LearnError::NotResp)?;
        let left = self.bytes.len() - self.at;
        if n.saturating_mul(per).saturating_mul(3) > left {
            return Err(LearnError::NotResp);
        }
        Ok(n)
    }

    fn next(&mut self) -> Result<Item<'a>, LearnError> {
        let kind = *self.bytes.get(self.at).ok_or(LearnError::NotResp)?;
        self.at += 1;
        let line = self.line()?;
        Ok(match kind {
            b'*' | b'~' | b'>' => match Self::number(line)? {
                -1 => Item::Nil,
                n => Item::Array(self.count(n, 1)?),
            },
            b'%' => Item::Map(self.count(Self::number(line)?, 2)?),
            b'$' | b'=' => match Self::number(line)? {
                -1 => Item::Nil,
                n => {
                    let n = usize::try_from(n).map_err(|_| LearnError::NotResp)?;
                    let end = self.at.checked_add(n).ok_or(LearnError::NotResp)?;
                    let text = self.bytes.get(self.at..end).ok_or(LearnError::NotResp)?;
                    if self.bytes.get(end..end + 2) != Some(b"\r\n") {
                        return Err(LearnError::NotResp);
                    }
                    self.at = end + 2;
                    Item::Text(text)
                }
            },
            b'+' => Item::Text(line),
            b':' => Item::Int(Self::number(line)?),
            b'_' => Item::Nil,
            b'-' => Item::Error,
            b'!' => {
                let n = usize::try_from(Self::number(line)?).map_err(|_| LearnError::NotResp)?;
                self.at = self.at.checked_add(n + 2).ok_or(LearnError::NotResp)?;
                if self.at > self.bytes.len() {
                    return Err(LearnError::NotResp);
                }
                Item::Error
            }
            b',' | b'#' | b'(' => Item::Other,
            _ => return Err(LearnError::NotResp),
        })
    }

    /// Past one whole value.
    fn skip(&mut self) -> Result<(), LearnError> {
        let mut pending = 1usize;
        while pending > 0 {
            pending -= 1;
            pending += match self.next()? {
                Item::Array(n) => n,
                Item::Map(n) => 2 * n,
                _ => 0,
            };
        }
        Ok(())
    }

    fn text(&mut self) -> Result<&'a [u8], LearnError> {
        match self.next()? {
            Item::Text(text) => Ok(text),
            _ => Err(LearnError::NotCommandInfo),
        }
    }

    fn int(&mut self) -> Result<i64, LearnError> {
        match self.next()? {
            Item::Int(n) => Ok(n),
            _ => Err(LearnError::NotCommandInfo),
        }
    }

    /// A small number (an index, a step), as the search keeps one: `None`
    /// when out of its range.
    fn small(&mut self) -> Result<Option<i8>, LearnError> {
        Ok(i8::try_from(self.int()?).ok())
    }

    fn array(&mut self) -> Result<usize, LearnError> {
        match self.next()? {
            Item::Array(n) => Ok(n),
            _ => Err(LearnError::NotCommandInfo),
        }
    }

    /// A map's pair count: RESP3 sends a map, RESP2 an array of keys and
    /// values.
    fn pairs(&mut self) -> Result<usize, LearnError> {
        match self.next()? {
            Item::Map(n) => Ok(n),
            Item::Array(n) if n % 2 == 0 => Ok(n / 2),
            _ => Err(LearnError::NotCommandInfo),
        }
    }

    /// `each` on every text of an array (or set); other values skipped.
    fn texts(&mut self, mut each: impl FnMut(&'a [u8])) -> Result<(), LearnError> {
        for _ in 0..self.array()? {
            match self.next()? {
                Item::Text(text) => each(text),
                Item::Array(n) => self.skip_rest(n)?,
                Item::Map(n) => self.skip_rest(2 * n)?,
                _ => {}
            }
        }
        Ok(())
    }

    fn skip_rest(&mut self, n: usize) -> Result<(), LearnError> {
        for _ in 0..n {
            self.skip()?;
        }
        Ok(())
    }

    /// One `COMMAND` entry of `n` fields: `[name, arity, flags, first key,
    /// last key, step, ACL categories, tips, key specs, subcommands]`
    /// (the last four from Redis 7 on).
    fn entry(&mut self, n: usize) -> Result<LearnedCommand, LearnError> {
        if n < 6 {
            return Err(LearnError::NotCommandInfo);
        }
        let mut name = heapless::String::new();
        for &b in self.text()? {
            name.push(char::from(b.to_ascii_lowercase()))
                .map_err(|_| LearnError::NameTooLong)?;
        }
        if !name.is_ascii() {
            return Err(LearnError::NotCommandInfo);
        }
        let arity = i8::try_from(self.int()?.clamp(-128, 127)).unwrap_or(-1);
        let mut flags = 0;
        self.texts(|flag| flags |= bit_of(&FLAGS, flag))?;
        let (first, last, step) = (self.int()?, self.int()?, self.int()?);
        let mut command = LearnedCommand {
            name,
            arity,
            flags,
            fanout: Fanout::None,
            keys: heapless::Vec::new(),
            described: true,
            container: false,
        };
        let mut connection = false;
        let (mut request, mut response): (&[u8], &[u8]) = (b"", b"");
        let mut specs = None;
        for field in 6..n {
            match field {
                6 => self.texts(|c| connection |= c.eq_ignore_ascii_case(b"@connection"))?,
                7 => self.texts(|tip| {
                    if let Some(policy) = tip.strip_prefix(b"request_policy:") {
                        request = policy;
                    } else if let Some(policy) = tip.strip_prefix(b"response_policy:") {
                        response = policy;
                    }
                })?,
                8 => {
                    let count = self.array()?;
                    for _ in 0..count {
                        command.keep(self.key_spec()?);
                    }
                    specs = Some(count);
                }
                9 => {
                    let count = self.array()?;
                    command.container = count > 0;
                    self.skip_rest(count)?;
                }
                _ => self.skip()?,
            }
        }
        if connection {
            command.flags |= cmd::CONNECTION;
        }
        command.fanout = fanout_of(request, response, connection);
        if specs.is_none() && first > 0 {
            // A server before key specs: the legacy triple, as the servers
            // turn it into a spec (`populateCommandLegacyRangeSpec`).
            let spec = match (i8::try_from(first), i8::try_from(last), i8::try_from(step)) {
                (Ok(first), Ok(last), Ok(step)) => Some(LearnedKey {
                    flags: 0,
                    begin: LearnedBegin::Index(first),
                    find: Find::Range {
                        last_key: if last < 0 { last } else { last - first },
                        step,
                        limit: 0,
                    },
                }),
                _ => None,
            };
            command.keep(spec);
        }
        if command.keys.iter().any(|k| {
            k.flags & (key::INCOMPLETE | key::VARIABLE_FLAGS) != 0
                || k.begin == LearnedBegin::Unknown
                || k.find == Find::Unknown
        }) {
            command.described = false;
        }
        Ok(command)
    }

    /// One key spec: `None` when it holds what the search cannot keep (an
    /// index out of range, a keyword too long).
    fn key_spec(&mut self) -> Result<Option<LearnedKey>, LearnError> {
        let mut spec = Some(LearnedKey {
            flags: 0,
            begin: LearnedBegin::Unknown,
            find: Find::Unknown,
        });
        let (mut begin, mut find) = (false, false);
        for _ in 0..self.pairs()? {
            let field = self.text()?;
            match field {
                b"flags" => {
                    let mut flags = 0;
                    self.texts(|flag| flags |= bit_of(&KEY_FLAGS, flag))?;
                    if let Some(spec) = &mut spec {
                        spec.flags = flags;
                    }
                }
                b"begin_search" => {
                    begin = true;
                    let read = self.search(Self::begin)?;
                    match (&mut spec, read) {
                        (Some(spec), Some(read)) => spec.begin = read,
                        _ => spec = None,
                    }
                }
                b"find_keys" => {
                    find = true;
                    let read = self.search(Self::find)?;
                    match (&mut spec, read) {
                        (Some(spec), Some(read)) => spec.find = read,
                        _ => spec = None,
                    }
                }
                _ => self.skip()?,
            }
        }
        if !(begin && find) {
            return Err(LearnError::NotCommandInfo);
        }
        Ok(spec)
    }

    /// A `{type, spec}` pair (`begin_search`, `find_keys`), read by `read`
    /// once its type is known.
    fn search<T>(
        &mut self,
        read: impl FnOnce(&mut Self, &[u8], usize) -> Result<Option<T>, LearnError>,
    ) -> Result<Option<T>, LearnError> {
        let pairs = self.pairs()?;
        if pairs != 2 || self.text()? != b"type" {
            return Err(LearnError::NotCommandInfo);
        }
        let kind = self.text()?;
        if self.text()? != b"spec" {
            return Err(LearnError::NotCommandInfo);
        }
        let fields = self.pairs()?;
        read(self, kind, fields)
    }

    /// A spec's named small numbers, in any order: `names[i]` into
    /// `values[i]` (`None`: absent or out of range).
    fn numbers<const N: usize>(
        &mut self,
        fields: usize,
        names: [&[u8]; N],
    ) -> Result<[Option<i8>; N], LearnError> {
        let mut values = [None; N];
        for _ in 0..fields {
            let field = self.text()?;
            match names.iter().position(|&n| n == field) {
                Some(i) => values[i] = self.small()?,
                None => self.skip()?,
            }
        }
        Ok(values)
    }

    fn begin(&mut self, kind: &[u8], fields: usize) -> Result<Option<LearnedBegin>, LearnError> {
        Ok(match kind {
            b"index" => self.numbers(fields, [b"index"])?[0].map(LearnedBegin::Index),
            b"keyword" => {
                let (mut keyword, mut start_from) = (None, None);
                for _ in 0..fields {
                    match self.text()? {
                        b"keyword" => {
                            keyword = core::str::from_utf8(self.text()?)
                                .ok()
                                .and_then(|k| heapless::String::try_from(k).ok());
                        }
                        b"startfrom" => start_from = self.small()?,
                        _ => self.skip()?,
                    }
                }
                keyword
                    .zip(start_from)
                    .map(|(keyword, start_from)| LearnedBegin::Keyword {
                        keyword,
                        start_from,
                    })
            }
            _ => {
                self.skip_rest(2 * fields)?;
                Some(LearnedBegin::Unknown)
            }
        })
    }

    fn find(&mut self, kind: &[u8], fields: usize) -> Result<Option<Find>, LearnError> {
        Ok(match kind {
            b"range" => match self.numbers(fields, [b"lastkey", b"keystep", b"limit"])? {
                [Some(last_key), Some(step), Some(limit)] => Some(Find::Range {
                    last_key,
                    step,
                    limit,
                }),
                _ => None,
            },
            b"keynum" => match self.numbers(fields, [b"keynumidx", b"firstkey", b"keystep"])? {
                [Some(key_num_index), Some(first_key), Some(step)] => Some(Find::KeyNum {
                    key_num_index,
                    first_key,
                    step,
                }),
                _ => None,
            },
            _ => {
                self.skip_rest(2 * fields)?;
                Some(Find::Unknown)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    // The tests build their replies with `format!`; the core itself has
    // no `std` (`cargo test --no-default-features` runs these too).
    extern crate std;

    use super::*;
    use crate::slot_for_key;
    use crate::Reply;
    use std::string::String;
    use std::vec;
    use std::vec::Vec;

    /// A RESP value, to write as RESP2 or RESP3.
    enum V {
        A(Vec<V>),
        /// A map: RESP3's `%`, RESP2's flat array.
        M(Vec<(&'static str, V)>),
        S(&'static str),
        I(i64),
        Nil,
    }

    fn write(v: &V, resp3: bool, out: &mut Vec<u8>) {
        match v {
            V::A(items) => {
                out.extend(std::format!("*{}\r\n", items.len()).bytes());
                items.iter().for_each(|i| write(i, resp3, out));
            }
            V::M(pairs) => {
                if resp3 {
                    out.extend(std::format!("%{}\r\n", pairs.len()).bytes());
                } else {
                    out.extend(std::format!("*{}\r\n", 2 * pairs.len()).bytes());
                }
                for (k, v) in pairs {
                    write(&V::S(k), resp3, out);
                    write(v, resp3, out);
                }
            }
            V::S(s) => out.extend(std::format!("${}\r\n{s}\r\n", s.len()).bytes()),
            V::I(n) => out.extend(std::format!(":{n}\r\n").bytes()),
            V::Nil if resp3 => out.extend(b"_\r\n"),
            V::Nil => out.extend(b"*-1\r\n"),
        }
    }

    fn reply(entry: V, resp3: bool) -> Vec<u8> {
        let mut out = Vec::new();
        write(&V::A(vec![entry]), resp3, &mut out);
        out
    }

    fn texts(words: &[&'static str]) -> V {
        V::A(words.iter().map(|w| V::S(w)).collect())
    }

    fn range(index: i64, last: i64, step: i64, limit: i64, flags: &[&'static str]) -> V {
        V::M(vec![
            ("flags", texts(flags)),
            (
                "begin_search",
                V::M(vec![
                    ("type", V::S("index")),
                    ("spec", V::M(vec![("index", V::I(index))])),
                ]),
            ),
            (
                "find_keys",
                V::M(vec![
                    ("type", V::S("range")),
                    (
                        "spec",
                        V::M(vec![
                            ("lastkey", V::I(last)),
                            ("keystep", V::I(step)),
                            ("limit", V::I(limit)),
                        ]),
                    ),
                ]),
            ),
        ])
    }

    /// A Redis 7 entry: `[name, arity, flags, first, last, step,
    /// categories, tips, specs, subcommands]`.
    fn entry(
        name: &'static str,
        arity: i64,
        flags: &[&'static str],
        tips: &[&'static str],
        specs: Vec<V>,
    ) -> V {
        V::A(vec![
            V::S(name),
            V::I(arity),
            texts(flags),
            V::I(0),
            V::I(0),
            V::I(0),
            texts(&["@hash"]),
            texts(tips),
            V::A(specs),
            V::A(vec![]),
        ])
    }

    fn learned(entry: V) -> LearnedCommand {
        learn_command(&reply(entry, false)).unwrap().unwrap()
    }

    fn hgetex() -> V {
        entry(
            "HGETEX",
            -5,
            &["write", "fast"],
            &[],
            vec![range(1, 0, 1, 0, &["RW", "access", "update"])],
        )
    }

    #[test]
    fn a_command_the_table_lacks_routes_by_its_own_spec() {
        let command = learned(hgetex());
        assert_eq!(command.name(), "hgetex");
        assert!(!command.is_container());
        let args: [&[u8]; 5] = [b"HGETEX", b"{u}h", b"FIELDS", b"1", b"f"];
        let (target, info) = command.route(&args).unwrap();
        assert_eq!(target, Target::Slot(slot_for_key(b"u")));
        assert!(info.is_write() && !info.is_read_only() && !info.is_blocking());
        assert_eq!(info.name(), "hgetex");
        assert_eq!(command.keys(&args).unwrap().collect::<Vec<_>>(), [1]);
        assert_eq!(
            command.route(&args[..2]),
            Err(CommandError::WrongArity {
                arity: -5,
                given: 2
            })
        );
        assert_eq!(command.route(&[]), Err(CommandError::Empty));
    }

    #[test]
    fn resp2_and_resp3_say_the_same() {
        for build in [hgetex, || {
            entry(
                "X.MSET",
                -3,
                &["write"],
                &[],
                vec![range(1, -1, 2, 0, &["OW"])],
            )
        }] {
            let two = learn_command(&reply(build(), false)).unwrap();
            let three = learn_command(&reply(build(), true)).unwrap();
            assert!(two.is_some());
            assert_eq!(two, three);
        }
        assert_eq!(learn_command(&reply(V::Nil, false)), Ok(None));
        assert_eq!(learn_command(&reply(V::Nil, true)), Ok(None));
        assert_eq!(
            learn_command(b"-ERR unknown subcommand 'INFO'\r\n"),
            Err(LearnError::Refused)
        );
        assert_eq!(learn_command(b"!3\r\nERR\r\n"), Err(LearnError::Refused));
    }

    #[test]
    fn every_cut_of_a_reply_is_an_error_and_so_is_more() {
        for resp3 in [false, true] {
            let whole = reply(hgetex(), resp3);
            for cut in 0..whole.len() {
                assert!(learn_command(&whole[..cut]).is_err(), "cut at {cut}");
            }
            let mut more = whole.clone();
            more.extend(b"+OK\r\n");
            assert_eq!(learn_command(&more), Err(LearnError::NotResp));
        }
    }

    #[test]
    fn keywords_ranges_and_counts_as_the_servers_search() {
        // XREAD's streams: after `STREAMS`, half of the rest.
        let xread = V::M(vec![
            ("flags", texts(&["RO"])),
            (
                "begin_search",
                V::M(vec![
                    ("type", V::S("keyword")),
                    (
                        "spec",
                        V::M(vec![("keyword", V::S("STREAMS")), ("startfrom", V::I(1))]),
                    ),
                ]),
            ),
            (
                "find_keys",
                V::M(vec![
                    ("type", V::S("range")),
                    (
                        "spec",
                        V::M(vec![
                            ("lastkey", V::I(-1)),
                            ("keystep", V::I(1)),
                            ("limit", V::I(2)),
                        ]),
                    ),
                ]),
            ),
        ]);
        let command = learned(entry(
            "M.XREAD",
            -4,
            &["readonly", "blocking", "movablekeys"],
            &[],
            vec![xread],
        ));
        let args: [&[u8]; 7] = [
            b"M.XREAD", b"COUNT", b"1", b"STREAMS", b"{s}a", b"{s}b", b"0",
        ];
        // Seven arguments: from 4, (7 - 4) / 2 + -1 = 0 more.
        assert_eq!(command.keys(&args).unwrap().collect::<Vec<_>>(), [4]);
        let args: [&[u8]; 8] = [
            b"M.XREAD", b"COUNT", b"1", b"STREAMS", b"{s}a", b"{s}b", b"0", b"0",
        ];
        assert_eq!(command.keys(&args).unwrap().collect::<Vec<_>>(), [4, 5]);
        assert!(command.info().is_blocking());
        // A key count: `numkeys key...`.
        let keynum = V::M(vec![
            ("flags", texts(&["RW"])),
            (
                "begin_search",
                V::M(vec![
                    ("type", V::S("index")),
                    ("spec", V::M(vec![("index", V::I(2))])),
                ]),
            ),
            (
                "find_keys",
                V::M(vec![
                    ("type", V::S("keynum")),
                    (
                        "spec",
                        V::M(vec![
                            ("keynumidx", V::I(0)),
                            ("firstkey", V::I(1)),
                            ("keystep", V::I(1)),
                        ]),
                    ),
                ]),
            ),
        ]);
        let command = learned(entry("M.EVAL", -3, &["write"], &[], vec![keynum]));
        let line: [&[u8]; 6] = [b"M.EVAL", b"src", b"2", b"{t}a", b"{t}b", b"x"];
        assert_eq!(command.keys(&line).unwrap().collect::<Vec<_>>(), [3, 4]);
        assert_eq!(
            command.route(&line).map(|(t, _)| t),
            Ok(Target::Slot(slot_for_key(b"t")))
        );
        let cross: [&[u8]; 5] = [b"M.EVAL", b"src", b"2", b"a", b"b"];
        assert_eq!(
            command.route(&cross).map(|(t, _)| t),
            Err(CommandError::CrossSlot {
                first: slot_for_key(b"a"),
                second: slot_for_key(b"b")
            })
        );
        let bad: [&[u8]; 4] = [b"M.EVAL", b"src", b"9", b"a"];
        assert_eq!(
            command.route(&bad).map(|(t, _)| t),
            Err(CommandError::InvalidArguments)
        );
    }

    #[test]
    fn a_server_before_key_specs_gives_first_last_and_step() {
        // Redis 6: seven fields, the legacy triple.
        let entry = V::A(vec![
            V::S("old.mset"),
            V::I(-3),
            texts(&["write"]),
            V::I(1),
            V::I(-1),
            V::I(2),
            texts(&[]),
        ]);
        let command = learned(entry);
        let args: [&[u8]; 5] = [b"OLD.MSET", b"{k}1", b"v", b"{k}2", b"v"];
        assert_eq!(command.keys(&args).unwrap().collect::<Vec<_>>(), [1, 3]);
        let none = V::A(vec![
            V::S("old.ping"),
            V::I(1),
            texts(&["fast"]),
            V::I(0),
            V::I(0),
            V::I(0),
        ]);
        assert_eq!(
            learned(none).route(&[b"old.ping"]).map(|(t, _)| t),
            Ok(Target::AnyNode)
        );
    }

    #[test]
    fn what_the_description_cannot_say_the_server_is_asked() {
        let incomplete = learned(entry(
            "M.SORT",
            -2,
            &["write", "movablekeys"],
            &[],
            vec![
                range(1, 0, 1, 0, &["RO"]),
                range(2, 0, 1, 0, &["OW", "incomplete"]),
            ],
        ));
        assert_eq!(
            incomplete.route(&[b"M.SORT", b"k", b"x"]),
            Err(CommandError::KeysNotDescribed)
        );
        let five = (0..5).map(|_| range(1, 0, 1, 0, &["RO"])).collect();
        let crowded = learned(entry("M.FIVE", -2, &["readonly"], &[], five));
        assert_eq!(
            crowded.route(&[b"M.FIVE", b"k"]),
            Err(CommandError::KeysNotDescribed)
        );
        let unknown = V::M(vec![
            ("flags", texts(&["RW"])),
            (
                "begin_search",
                V::M(vec![("type", V::S("unknown")), ("spec", V::M(vec![]))]),
            ),
            (
                "find_keys",
                V::M(vec![("type", V::S("unknown")), ("spec", V::M(vec![]))]),
            ),
        ]);
        let command = learned(entry(
            "M.ANY",
            -1,
            &["write", "movablekeys"],
            &[],
            vec![unknown],
        ));
        assert_eq!(
            command.route(&[b"M.ANY", b"k"]),
            Err(CommandError::KeysNotDescribed)
        );
        // A spec that points at the name (found by fuzzing): the server
        // is asked.
        let at_name = learned(entry(
            "M.ZERO",
            -1,
            &[],
            &[],
            vec![range(0, 0, 1, 0, &["RW"])],
        ));
        assert_eq!(
            at_name.route(&[b"M.ZERO", b"k"]),
            Err(CommandError::KeysNotDescribed)
        );
        // A key index past i8: kept as not described, not wrapped.
        let far = learned(entry("M.FAR", -2, &[], &[], vec![range(300, 0, 1, 0, &[])]));
        assert_eq!(
            far.route(&[b"M.FAR", b"k"]),
            Err(CommandError::KeysNotDescribed)
        );
    }

    #[test]
    fn tips_decide_the_fan_out_and_a_container_says_so() {
        let count = learned(entry(
            "M.COUNT",
            1,
            &["readonly"],
            &["request_policy:all_shards", "response_policy:agg_sum"],
            vec![],
        ));
        assert_eq!(
            count.route(&[b"M.COUNT"]).map(|(t, _)| t),
            Ok(Target::AllMasters(Reply::Sum))
        );
        let nodes = learned(entry(
            "M.LOAD",
            2,
            &[],
            &["request_policy:all_nodes"],
            vec![],
        ));
        assert_eq!(
            nodes.route(&[b"M.LOAD", b"x"]).map(|(t, _)| t),
            Ok(Target::AllNodes(Reply::EachNode))
        );
        let container = V::A(vec![
            V::S("M.CONFIG"),
            V::I(-2),
            texts(&[]),
            V::I(0),
            V::I(0),
            V::I(0),
            texts(&[]),
            texts(&[]),
            V::A(vec![]),
            V::A(vec![entry("m.config|get", 3, &["readonly"], &[], vec![])]),
        ]);
        assert!(learned(container).is_container());
        let long: String = "x".repeat(MAX_LEARNED_NAME + 1);
        let mut bytes = Vec::new();
        bytes.extend(
            std::format!(
                "*1\r\n*6\r\n${}\r\n{long}\r\n:1\r\n*0\r\n:0\r\n:0\r\n:0\r\n",
                long.len()
            )
            .bytes(),
        );
        assert_eq!(learn_command(&bytes), Err(LearnError::NameTooLong));
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_are_read_or_refused_never_a_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256)) {
            let _ = learn_command(&bytes);
        }

        #[test]
        fn any_byte_changed_in_a_reply_is_read_or_refused(at in 0usize..400, to in proptest::prelude::any::<u8>(), resp3 in proptest::prelude::any::<bool>()) {
            let mut bytes = reply(hgetex(), resp3);
            let at = at % bytes.len();
            bytes[at] = to;
            if let Ok(Some(command)) = learn_command(&bytes) {
                let _ = command.route(&[b"HGETEX", b"k", b"FIELDS", b"1", b"f"]);
            }
        }
    }
}
