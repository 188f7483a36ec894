//! redis-rs's async connection trait over Zaris (`redis-compat` feature):
//! code written against redis-rs (`AsyncCommands`, `redis::pipe()`,
//! `redis::Script`, `FromRedisValue`) runs on a Zaris client unchanged but
//! for the line that connects.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use redis::AsyncCommands;
//!
//! let client = zaris_client::Client::connect(&["127.0.0.1:7000"]).await?;
//! let mut con = client.redis_compat(); // was: redis_rs_client.get_async_connection()
//! let _: () = con.set("{user1}:name", "Ada").await?;
//! let name: Option<String> = con.get("{user1}:name").await?;
//! # Ok(()) }
//! ```
//!
//! | redis-rs | on Zaris |
//! |---|---|
//! | `AsyncCommands`, `cmd(..).query_async` | [`Client::cmd`]'s path: the core's key specs, the owner, the retry loop; `MGET`, `MSET`, `DEL`, `EXISTS` split by slot |
//! | `FromRedisValue` | unchanged: replies become `redis::Value` with nothing lost |
//! | `redis::pipe()` | a [`crate::Pipeline`]: each command to its owner, across slots; `ignore()`, `ignore_errors()` and `req_packed_commands`' offset and count as redis-rs documents them |
//! | `pipe().atomic()` | a [`crate::Transaction`] on the keys' one slot; keys in several: `ErrorKind::Server(CrossSlot)`, nothing sent |
//! | `Script::invoke_async` | `EVALSHA`; once redis-rs has `SCRIPT LOAD`ed it here, a `NOSCRIPT` is answered by its source on the same owner ([`Client::invoke`]) |
//! | `SCAN`, `scan_match` | the whole cluster ([`Client::scan`]), behind a cursor of this connection's own ([`MAX_OPEN_SCANS`] kept open) |
//! | blocking commands | a connection of their own |
//! | `SUBSCRIBE`, `WATCH`, `MULTI`, `SELECT` | refused, `ErrorKind::Client`, with [`Error::Unsupported`]'s reason |
//! | `get_db()` | 0 |
//!
//! Errors keep the server's code (`WRONGTYPE` is `ErrorKind::Extension`,
//! `NOSCRIPT` `Server(NoScript)`); `MOVED` and `ASK` never reach the
//! caller; a status the retries did not clear reads as `TRYAGAIN`,
//! `CLUSTERDOWN` or `READONLY`, a request with no answer as `Io` with its
//! `io::ErrorKind`, and `NotReplicated` as the code `NOTREPLICATED`.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::FutureExt;
use redis::aio::ConnectionLike;
use redis::{Arg, Cmd, ErrorKind, RedisError, RedisFuture, RedisResult};
use smallvec::SmallVec;

use crate::{Client, Error, KvStatus, Scan, ScanOptions, Script, TransportFailure, Value};

/// The scans a connection keeps open between `SCAN` calls: a caller that
/// stops iterating leaves one behind, so the oldest goes past this many.
pub const MAX_OPEN_SCANS: usize = 64;

/// The scripts a connection keeps the source of: past this many (a
/// program that makes scripts as it goes), a new one's `NOSCRIPT` goes
/// back to redis-rs, which loads it again, as it would on redis-rs.
pub const MAX_KNOWN_SCRIPTS: usize = 1024;

/// A Zaris client behind `redis::aio::ConnectionLike` (see the module
/// docs); from [`Client::redis_compat`]. A clone is a handle on the same
/// multiplexed client, as redis-rs's `ClusterConnection` is.
#[derive(Clone)]
pub struct RedisConnection {
    client: Client,
    kept: Arc<Kept>,
}

/// What a connection keeps, shared by its clones.
#[derive(Default)]
struct Kept {
    /// The scripts `SCRIPT LOAD`ed through it, by SHA-1: their `EVALSHA`
    /// falls back to the source on the same owner ([`Client::invoke`]).
    scripts: Mutex<HashMap<String, Script>>,
    /// The scans in progress, by cursor.
    scans: Mutex<Scans>,
}

#[derive(Default)]
struct Scans {
    open: BTreeMap<u64, Scan>,
    last: u64,
}

impl Client {
    /// This client as a redis-rs async connection: `redis::AsyncCommands`,
    /// `redis::pipe()` and `redis::Script` run on it through Zaris's
    /// routing, retries and churn handling (see [`crate::compat`]).
    #[must_use]
    pub fn redis_compat(&self) -> RedisConnection {
        RedisConnection {
            client: self.clone(),
            kept: Arc::default(),
        }
    }
}

impl ConnectionLike for RedisConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, redis::Value> {
        async move {
            let mut packed = None;
            let args = args_of(cmd, &mut packed)?;
            let result = self.run(&args).await;
            result.map(to_redis_value).map_err(to_redis_error)
        }
        .boxed()
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<redis::Value>> {
        async move {
            let replies = if pipeline.is_transaction() {
                self.transaction(pipeline).await?
            } else {
                self.pipeline(pipeline).await?
            };
            let total = replies.len();
            match offset.checked_add(count) {
                Some(end) if end <= total => {
                    Ok(replies.into_iter().skip(offset).take(count).collect())
                }
                _ => Err(RedisError::from((
                    ErrorKind::Client,
                    "offset and count past the pipeline's replies",
                    format!("{offset} + {count} of {total}"),
                ))),
            }
        }
        .boxed()
    }

    fn get_db(&self) -> i64 {
        0
    }
}

impl RedisConnection {
    /// One command, the way [`Client::cmd`] runs it, but for what this
    /// connection adds: `SCAN` over the cluster, and the scripts it saw
    /// loaded falling back to their source.
    async fn run(&self, args: &[&[u8]]) -> Result<Value, Error> {
        let name = args.first().copied().unwrap_or_default();
        if name.eq_ignore_ascii_case(b"SCAN") {
            return self.scan(args).await;
        }
        if let Some(call) = self.known_script(args) {
            return self.client.invoke(&call.script, call.keys, call.args).await;
        }
        let answer = self.client.inner.cmd(args).await;
        self.learn_script(args, &answer);
        answer
    }

    /// The script an `EVALSHA` names, if it was loaded through this
    /// connection, with its keys and arguments.
    fn known_script<'a>(&self, args: &'a [&'a [u8]]) -> Option<Invocation<'a>> {
        let [name, sha, numkeys, rest @ ..] = args else {
            return None;
        };
        if !name.eq_ignore_ascii_case(b"EVALSHA") {
            return None;
        }
        let numkeys: usize = std::str::from_utf8(numkeys).ok()?.parse().ok()?;
        let (keys, rest) = rest.split_at_checked(numkeys)?;
        let sha = std::str::from_utf8(sha).ok()?.to_ascii_lowercase();
        let script = lock(&self.kept.scripts).get(&sha)?.clone();
        Some(Invocation {
            script,
            keys,
            args: rest,
        })
    }

    /// After `SCRIPT LOAD source` answered its SHA-1: the source, kept
    /// for that SHA-1's `EVALSHA`.
    fn learn_script(&self, args: &[&[u8]], answer: &Result<Value, Error>) {
        let ([script, load, source], Ok(Value::Data(sha))) = (args, answer) else {
            return;
        };
        if !script.eq_ignore_ascii_case(b"SCRIPT") || !load.eq_ignore_ascii_case(b"LOAD") {
            return;
        }
        let Ok(source) = std::str::from_utf8(source) else {
            return;
        };
        let script = Script::new(source);
        let mut scripts = lock(&self.kept.scripts);
        if sha.eq_ignore_ascii_case(script.sha().as_bytes()) && scripts.len() < MAX_KNOWN_SCRIPTS {
            scripts.insert(script.sha().to_owned(), script);
        }
    }

    /// `SCAN cursor [MATCH p] [COUNT n] [TYPE t]` over the whole cluster:
    /// cursor 0 starts a [`Client::scan`], whose next batch each later
    /// call with the cursor it answered takes; `0` again once every slot
    /// is covered.
    async fn scan(&self, args: &[&[u8]]) -> Result<Value, Error> {
        let (cursor, options) = scan_args(args)?;
        let (cursor, mut scan) = if cursor == 0 {
            let mut scans = lock(&self.kept.scans);
            scans.last += 1;
            (scans.last, self.client.scan(options))
        } else {
            let open = lock(&self.kept.scans).open.remove(&cursor);
            let scan = open.ok_or_else(|| {
                Error::Server(format!(
                    "ERR invalid cursor {cursor}: not one this connection has open (a scan's cursors are its connection's own; at most {MAX_OPEN_SCANS} stay open)"
                ))
            })?;
            (cursor, scan)
        };
        let (next, keys) = match scan.next().await {
            Some(batch) => (cursor, batch?),
            None => (0, Vec::new()),
        };
        if next != 0 {
            let mut scans = lock(&self.kept.scans);
            scans.open.insert(next, scan);
            while scans.open.len() > MAX_OPEN_SCANS {
                scans.open.pop_first();
            }
        }
        Ok(Value::Array(vec![
            Value::Data(next.to_string().into()),
            Value::Array(keys.into_iter().map(Value::Data).collect()),
        ]))
    }

    /// Each command of `commands` to `add`, with the script it invokes if
    /// it is an `EVALSHA` of one this connection saw loaded; how many.
    fn each_command(
        &self,
        commands: &redis::Pipeline,
        mut add: impl FnMut(&[&[u8]], Option<Invocation<'_>>),
    ) -> RedisResult<usize> {
        let mut count = 0;
        for cmd in commands.cmd_iter() {
            let mut packed = None;
            let args = args_of(cmd, &mut packed)?;
            add(&args, self.known_script(&args));
            count += 1;
        }
        Ok(count)
    }

    /// A plain pipeline: each command to its owner, every reply in its
    /// place (a command's error as a server error there, as redis-rs puts
    /// it), unless one got no answer at all, which fails the call as a
    /// lost connection fails redis-rs's.
    async fn pipeline(&self, commands: &redis::Pipeline) -> RedisResult<Vec<redis::Value>> {
        let mut pipeline = self.client.pipeline();
        self.each_command(commands, |args, call| {
            match call {
                Some(call) => pipeline.invoke(&call.script, call.keys, call.args),
                None => pipeline.cmd(args),
            };
        })?;
        let results = pipeline.run().await.map_err(to_redis_error)?;
        results
            .into_iter()
            .map(|result| match result {
                Ok(value) => Ok(to_redis_value(value)),
                Err(e) => in_place(&e).ok_or_else(|| to_redis_error(e)),
            })
            .collect()
    }

    /// An atomic pipeline: a [`crate::Transaction`] on its one slot, its
    /// replies as the server sends them (`OK`, a `QUEUED` per command,
    /// then `EXEC`'s array), so that redis-rs's offset finds `EXEC`'s.
    async fn transaction(&self, commands: &redis::Pipeline) -> RedisResult<Vec<redis::Value>> {
        let mut transaction = self.client.transaction();
        let queued = self.each_command(commands, |args, call| {
            match call {
                Some(call) => transaction.invoke(&call.script, call.keys, call.args),
                None => transaction.cmd(args),
            };
        })?;
        let values = transaction.exec().await.map_err(to_redis_error)?;
        let mut replies = Vec::with_capacity(queued + 2);
        replies.push(redis::Value::Okay);
        replies.extend((0..queued).map(|_| redis::Value::SimpleString("QUEUED".to_owned())));
        replies.push(redis::Value::Array(
            values.into_iter().map(to_redis_value).collect(),
        ));
        Ok(replies)
    }
}

/// An `EVALSHA` of a script this connection saw loaded.
struct Invocation<'a> {
    script: Script,
    keys: &'a [&'a [u8]],
    args: &'a [&'a [u8]],
}

/// A command's arguments, as slices: of the `redis::Cmd` itself, where
/// they lie as given; for a cursor (which redis-rs keeps apart and writes
/// only when it packs the command), of its packed form read back into
/// `packed` by redis-rs's own parser.
fn args_of<'a>(
    cmd: &'a Cmd,
    packed: &'a mut Option<Vec<Vec<u8>>>,
) -> RedisResult<SmallVec<[&'a [u8]; 8]>> {
    if cmd.in_scan_mode() {
        let unpacked = packed.insert(unpacked(cmd)?);
        return Ok(unpacked.iter().map(Vec::as_slice).collect());
    }
    cmd.args_iter()
        .map(|arg| match arg {
            Arg::Simple(bytes) => Ok(bytes),
            _ => Err(not_a_command()),
        })
        .collect()
}

/// The packed command as an array of bulk strings.
fn unpacked(cmd: &Cmd) -> RedisResult<Vec<Vec<u8>>> {
    match redis::parse_redis_value(&cmd.get_packed_command())? {
        redis::Value::Array(items) => items
            .into_iter()
            .map(|item| match item {
                redis::Value::BulkString(bytes) => Ok(bytes),
                _ => Err(not_a_command()),
            })
            .collect(),
        _ => Err(not_a_command()),
    }
}

fn not_a_command() -> RedisError {
    RedisError::from((
        ErrorKind::Client,
        "the command did not pack as an array of strings",
    ))
}

/// `SCAN`'s cursor and options.
fn scan_args(args: &[&[u8]]) -> Result<(u64, ScanOptions), Error> {
    let bad = |why: &str| Error::Server(format!("ERR SCAN: {why}"));
    let text = |bytes: &[u8]| {
        std::str::from_utf8(bytes)
            .map(str::to_owned)
            .map_err(|_| bad("an argument that is not UTF-8"))
    };
    let [_, cursor, rest @ ..] = args else {
        return Err(bad("wrong number of arguments"));
    };
    let cursor = text(cursor)?.parse().map_err(|_| bad("invalid cursor"))?;
    let mut options = ScanOptions::default();
    for pair in rest.chunks(2) {
        let [option, value] = pair else {
            return Err(bad("syntax error"));
        };
        match option.to_ascii_uppercase().as_slice() {
            b"MATCH" => options.pattern = Some(text(value)?),
            b"COUNT" => {
                let count = text(value)?
                    .parse()
                    .map_err(|_| bad("COUNT is not an integer"))?;
                options.count = Some(count);
            }
            b"TYPE" => options.type_ = Some(text(value)?),
            _ => return Err(bad("syntax error")),
        }
    }
    Ok((cursor, options))
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A reply as redis-rs's `Value`, nothing lost. The kinds whose shape
/// depends on redis-rs's features (a big number is a `BigInt` with
/// `num-bigint`) are built by redis-rs's own parser from their RESP3 form.
fn to_redis_value(value: Value) -> redis::Value {
    match value {
        Value::Nil => redis::Value::Nil,
        Value::Int(i) => redis::Value::Int(i),
        Value::Data(bytes) => redis::Value::BulkString(bytes.into()),
        Value::Status(s) if &s[..] == b"OK" => redis::Value::Okay,
        Value::Status(s) => redis::Value::SimpleString(String::from_utf8_lossy(&s).into_owned()),
        Value::Array(items) => redis::Value::Array(items.into_iter().map(to_redis_value).collect()),
        Value::Error(message) => server_error(&message),
        Value::Map(pairs) => redis::Value::Map(
            pairs
                .into_iter()
                .map(|(k, v)| (to_redis_value(k), to_redis_value(v)))
                .collect(),
        ),
        Value::Set(items) => redis::Value::Set(items.into_iter().map(to_redis_value).collect()),
        Value::Double(d) => redis::Value::Double(d),
        Value::Boolean(b) => redis::Value::Boolean(b),
        Value::BigNumber(digits) => parsed(format!("({digits}\r\n").as_bytes()),
        Value::Verbatim { format, text } => {
            let mut resp = format!("={}\r\n{format}:", format.len() + 1 + text.len()).into_bytes();
            resp.extend_from_slice(&text);
            resp.extend_from_slice(b"\r\n");
            parsed(&resp)
        }
    }
}

/// `resp` read by redis-rs's parser; what it cannot read, a client error
/// in place (the bytes came from a reply already parsed, so never).
fn parsed(resp: &[u8]) -> redis::Value {
    redis::parse_redis_value(resp)
        .unwrap_or_else(|e| server_error(&format!("ZARIS the reply does not convert: {e}")))
}

/// A server's error line (`WRONGTYPE Operation ...`) as the
/// `Value::ServerError` redis-rs makes of it, its code kept.
fn server_error(line: &str) -> redis::Value {
    let line: String = line
        .chars()
        .map(|c| if c == '\r' || c == '\n' { ' ' } else { c })
        .collect();
    let line = if line.is_empty() { "ERR" } else { &line };
    // A line without CR or LF, not empty: always an error to the parser.
    redis::parse_redis_value(format!("-{line}\r\n").as_bytes()).unwrap_or(redis::Value::Nil)
}

/// The error line a failure reads as on redis-rs, for those a server
/// could have sent: kept in its place in a pipeline's replies.
fn error_line(e: &Error) -> Option<String> {
    Some(match e {
        Error::Server(message) => message.clone(),
        Error::CrossSlot { .. } => {
            format!("CROSSSLOT Keys in request don't hash to the same slot ({e})")
        }
        Error::Command { .. } => format!("ERR {e}"),
        Error::Status { status, .. } => format!("{} {e}", status_code(*status)),
        Error::Conflict { .. } => format!("CONFLICT {e}"),
        Error::NotReplicated { .. } => format!("NOTREPLICATED {e}"),
        _ => return None,
    })
}

/// A status the retries did not clear, as the server code a redis-rs user
/// matches on: ownership in motion is `TRYAGAIN` (a `MOVED` or `ASK`
/// never reaches the caller), no owner `CLUSTERDOWN`, a replica's refusal
/// `READONLY`.
fn status_code(status: KvStatus) -> &'static str {
    match status {
        KvStatus::Unavailable => "CLUSTERDOWN",
        KvStatus::ReplicaWriteRejected => "READONLY",
        KvStatus::Conflict => "CONFLICT",
        _ => "TRYAGAIN",
    }
}

/// A pipeline entry's failure as a server error in its place, if it is
/// one a server could have sent.
fn in_place(e: &Error) -> Option<redis::Value> {
    error_line(e).map(|line| server_error(&line))
}

/// A Zaris failure as redis-rs's error, with the kind a redis-rs user's
/// `match` expects: a server's code kept (`WRONGTYPE` is an extension,
/// `NOSCRIPT` is `Server(NoScript)`), a lost connection `Io` (with its
/// `io::ErrorKind`, so `is_timeout` and `is_connection_dropped` read
/// true), refused credentials `AuthenticationFailed`.
fn to_redis_error(e: Error) -> RedisError {
    if let Some(line) = error_line(&e) {
        if let redis::Value::ServerError(error) = server_error(&line) {
            return error.into();
        }
    }
    let (kind, what) = match &e {
        Error::Transport { failure, .. } => {
            return io::Error::new(io_kind(*failure), e.to_string()).into();
        }
        Error::TransactionUnknown { .. } => {
            return io::Error::new(io::ErrorKind::ConnectionAborted, e.to_string()).into();
        }
        Error::OutcomeUnknown { .. } => {
            return io::Error::new(io::ErrorKind::TimedOut, e.to_string()).into();
        }
        Error::Tls { .. } => {
            return io::Error::new(io::ErrorKind::InvalidData, e.to_string()).into();
        }
        Error::Auth { .. } => (ErrorKind::AuthenticationFailed, "authentication failed"),
        Error::Protocol { .. } => (ErrorKind::Parse, "protocol violation"),
        Error::UnexpectedReply { .. } => (ErrorKind::UnexpectedReturnType, "unexpected reply"),
        Error::Config(_) => (ErrorKind::InvalidClientConfig, "invalid setting"),
        Error::NoSeedReachable { .. } => {
            (ErrorKind::ClusterConnectionNotFound, "no seed reachable")
        }
        Error::Unsupported { .. } => (ErrorKind::Client, "not sent on Zaris's shared connections"),
        _ => (ErrorKind::Client, "zaris"),
    };
    RedisError::from((kind, what, e.to_string()))
}

fn io_kind(failure: TransportFailure) -> io::ErrorKind {
    match failure {
        TransportFailure::ConnectionRefused => io::ErrorKind::ConnectionRefused,
        TransportFailure::TimedOut => io::ErrorKind::TimedOut,
        TransportFailure::ConnectionReset => io::ErrorKind::ConnectionReset,
        _ => io::ErrorKind::NotConnected,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::{ErrorKind, ServerErrorKind};

    #[test]
    fn replies_convert_with_nothing_lost() {
        let value = Value::Array(vec![
            Value::Nil,
            Value::Int(-3),
            Value::Data("b\r\nin".into()),
            Value::Status("OK".into()),
            Value::Status("PONG".into()),
            Value::Map(vec![(Value::Data("f".into()), Value::Double(1.5))]),
            Value::Set(vec![Value::Boolean(true)]),
            Value::BigNumber("3492890328409238509324850943850943825024385".into()),
            Value::Verbatim {
                format: "txt".into(),
                text: "some\r\ntext".into(),
            },
        ]);
        let redis::Value::Array(items) = to_redis_value(value) else {
            panic!("an array stays one");
        };
        assert_eq!(items[0], redis::Value::Nil);
        assert_eq!(items[1], redis::Value::Int(-3));
        assert_eq!(items[2], redis::Value::BulkString(b"b\r\nin".to_vec()));
        assert_eq!(items[3], redis::Value::Okay);
        assert_eq!(items[4], redis::Value::SimpleString("PONG".into()));
        assert_eq!(
            items[5],
            redis::Value::Map(vec![(
                redis::Value::BulkString(b"f".to_vec()),
                redis::Value::Double(1.5)
            )])
        );
        assert_eq!(
            items[6],
            redis::Value::Set(vec![redis::Value::Boolean(true)])
        );
        assert_eq!(
            items[7],
            redis::parse_redis_value(b"(3492890328409238509324850943850943825024385\r\n").unwrap()
        );
        assert_eq!(
            items[8],
            redis::Value::VerbatimString {
                format: redis::VerbatimFormat::Text,
                text: "some\r\ntext".into()
            }
        );
    }

    fn kind_of(e: Error) -> (ErrorKind, Option<String>) {
        let e = to_redis_error(e);
        (e.kind(), e.code().map(str::to_owned))
    }

    #[test]
    fn failures_map_to_the_kinds_redis_rs_users_match_on() {
        assert_eq!(
            kind_of(Error::Server("WRONGTYPE Operation against a key".into())),
            (ErrorKind::Extension, Some("WRONGTYPE".into()))
        );
        assert_eq!(
            kind_of(Error::Server("NOSCRIPT No matching script".into())).0,
            ErrorKind::Server(ServerErrorKind::NoScript)
        );
        assert_eq!(
            kind_of(Error::CrossSlot {
                first: 1,
                second: 2
            })
            .0,
            ErrorKind::Server(ServerErrorKind::CrossSlot)
        );
        let exhausted = |status| Error::Status {
            status,
            attempts: 3,
            stop: zaris_core::StopReason::AttemptsExhausted,
        };
        for (status, kind) in [
            (KvStatus::Moved, ServerErrorKind::TryAgain),
            (KvStatus::Migrating, ServerErrorKind::TryAgain),
            (KvStatus::OwnershipChanging, ServerErrorKind::TryAgain),
            (KvStatus::Unavailable, ServerErrorKind::ClusterDown),
            (KvStatus::ReplicaWriteRejected, ServerErrorKind::ReadOnly),
        ] {
            assert_eq!(
                kind_of(exhausted(status)).0,
                ErrorKind::Server(kind),
                "{status:?}"
            );
        }
        assert_eq!(
            kind_of(Error::NotReplicated {
                acked: 0,
                needed: 1
            }),
            (ErrorKind::Extension, Some("NOTREPLICATED".into()))
        );
        assert_eq!(
            kind_of(Error::Conflict {
                current_version: Some(3)
            }),
            (ErrorKind::Extension, Some("CONFLICT".into()))
        );
        let timed_out = to_redis_error(Error::Transport {
            failure: TransportFailure::TimedOut,
            detail: "127.0.0.1:7000".into(),
            attempts: 3,
            stop: zaris_core::StopReason::AttemptsExhausted,
        });
        assert_eq!(timed_out.kind(), ErrorKind::Io);
        assert!(timed_out.is_timeout());
        let unsupported = to_redis_error(Error::Unsupported {
            command: "SUBSCRIBE".into(),
            why: "it turns the connection into a push channel",
        });
        assert_eq!(unsupported.kind(), ErrorKind::Client);
        assert!(
            unsupported.to_string().contains("SUBSCRIBE"),
            "{unsupported}"
        );
        assert_eq!(
            kind_of(Error::Auth {
                node: "n".into(),
                detail: "WRONGPASS".into()
            })
            .0,
            ErrorKind::AuthenticationFailed
        );
    }

    #[test]
    fn an_error_line_of_any_text_is_a_server_error() {
        for line in ["", "\r\n", "ERR", "x\ry\nz", "NOSCRIPT"] {
            assert!(
                matches!(server_error(line), redis::Value::ServerError(_)),
                "{line:?}"
            );
        }
    }

    #[test]
    fn scan_arguments_read_as_the_server_reads_them() {
        let (cursor, options) = scan_args(&[
            b"SCAN", b"7", b"match", b"user:*", b"COUNT", b"50", b"TYPE", b"hash",
        ])
        .unwrap();
        assert_eq!(cursor, 7);
        assert_eq!(options.pattern.as_deref(), Some("user:*"));
        assert_eq!(options.count, Some(50));
        assert_eq!(options.type_.as_deref(), Some("hash"));
        assert!(scan_args(&[b"SCAN"]).is_err());
        assert!(scan_args(&[b"SCAN", b"x"]).is_err());
        assert!(scan_args(&[b"SCAN", b"0", b"MATCH"]).is_err());
        assert!(scan_args(&[b"SCAN", b"0", b"LIMIT", b"1"]).is_err());
    }

    #[test]
    fn a_cursor_is_read_back_from_the_packed_command() {
        let mut cmd = redis::cmd("SSCAN");
        cmd.arg("set").cursor_arg(42).arg("COUNT").arg(10);
        let mut packed = None;
        let args = args_of(&cmd, &mut packed).unwrap();
        assert_eq!(
            args.as_slice(),
            &[&b"SSCAN"[..], b"set", b"42", b"COUNT", b"10"]
        );
        let mut plain = redis::cmd("GET");
        plain.arg("k");
        let mut packed = None;
        assert_eq!(
            args_of(&plain, &mut packed).unwrap().as_slice(),
            &[&b"GET"[..], b"k"]
        );
        assert_eq!(
            packed, None,
            "nothing packed for a command without a cursor"
        );
    }
}
