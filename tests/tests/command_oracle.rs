//! The core's key extraction against the servers' own: thousands of
//! generated command lines (every command and subcommand the servers list,
//! random arities, binary and tagged keys, the keywords the key specs and
//! the servers' fallback procedures look for) go to `COMMAND GETKEYS` on a
//! real Redis 7.0 and Valkey 8, and `zaris_core::command_keys` must give the
//! same answer on every one.
//!
//! Lines not compared, and why:
//! - a command name alone, on Redis 7.0: its `COMMAND GETKEYS` wants at
//!   least one argument after the name (arity -4; Valkey 8 takes none), so
//!   the server cannot answer;
//! - a command whose arity differs between the two servers (`ZRANK` and
//!   `ZREVRANK` take `WITHSCORE` on Valkey 8, not on Redis 7.0): the core
//!   keeps the more permissive arity, so the stricter server refuses lines
//!   the core routes (to a server that will say the same).
//!
//! Both are counted and listed, not failed.
//!
//! The same lines are held to each command as *learned* from the server
//! (its `COMMAND INFO` reply read by `zaris_core::learn_command`, as a
//! client reads a command its table lacks): wherever the description can
//! say which arguments are keys, it must say what `COMMAND GETKEYS` says;
//! where it cannot (a spec `incomplete`), the client asks the server, and
//! those lines are counted.

use std::collections::BTreeSet;

use std::collections::BTreeMap;

use zaris_core::{command_has_keys, command_keys, learn_command, CommandError, LearnedCommand};
use zaris_tests::{servers_under_test, Frame, RedisNode, RespConn};

/// Lines per command (and per subcommand).
const LINES_PER_COMMAND: usize = 16;

/// A deterministic generator (xorshift64*), so a failure can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// One command as a server lists it.
struct Listed {
    /// `["object", "encoding"]` for a subcommand.
    words: Vec<String>,
    arity: i64,
}

fn text(frame: &Frame) -> Option<String> {
    match frame {
        Frame::BulkString(b) | Frame::SimpleString(b) => {
            Some(String::from_utf8_lossy(b).into_owned())
        }
        _ => None,
    }
}

/// Every command and subcommand the server lists, and every keyword its key
/// specs search for.
fn listed(conn: &mut RespConn) -> (Vec<Listed>, BTreeSet<String>) {
    let reply = conn.command(&[b"COMMAND"]).unwrap();
    let Frame::Array(entries) = reply else {
        panic!("COMMAND: {reply:?}")
    };
    let mut commands = Vec::new();
    let mut keywords = BTreeSet::new();
    fn walk_keywords(frame: &Frame, out: &mut BTreeSet<String>) {
        if let Frame::Array(items) = frame {
            for pair in items.windows(2) {
                if text(&pair[0]).as_deref() == Some("keyword") {
                    if let Some(k) = text(&pair[1]) {
                        out.insert(k);
                    }
                }
            }
            for item in items {
                walk_keywords(item, out);
            }
        }
    }
    for entry in &entries {
        let Frame::Array(parts) = entry else { continue };
        let name = text(&parts[0]).unwrap();
        let arity = match &parts[1] {
            Frame::Integer(a) => *a,
            other => panic!("arity {other:?}"),
        };
        walk_keywords(entry, &mut keywords);
        commands.push(Listed {
            words: vec![name.clone()],
            arity,
        });
        if let Some(Frame::Array(subs)) = parts.get(9) {
            for sub in subs {
                let Frame::Array(sp) = sub else { continue };
                let full = text(&sp[0]).unwrap();
                let sub_name = full
                    .split_once('|')
                    .map_or(full.as_str(), |(_, s)| s)
                    .to_owned();
                let arity = match &sp[1] {
                    Frame::Integer(a) => *a,
                    other => panic!("arity {other:?}"),
                };
                commands.push(Listed {
                    words: vec![name.clone(), sub_name],
                    arity,
                });
            }
        }
    }
    (commands, keywords)
}

/// A random argument: a key (binary, tagged, ASCII), a number, or a keyword.
fn argument(rng: &mut Rng, keywords: &[&str]) -> Vec<u8> {
    match rng.below(10) {
        0 | 1 => {
            let len = rng.below(12);
            (0..len)
                .map(|_| rng.next() as u8)
                .filter(|&b| b != 0)
                .collect()
        }
        2 | 3 => format!("{{user{}}}:k{}", rng.below(50), rng.below(1000)).into_bytes(),
        4 => ["0", "1", "2", "3", "5", "-1", "01", "x", "", "99999999999"][rng.below(10)]
            .as_bytes()
            .to_vec(),
        5 | 6 => {
            let word = keywords[rng.below(keywords.len())];
            if rng.below(2) == 0 {
                word.to_ascii_lowercase()
            } else {
                word.to_owned()
            }
            .into_bytes()
        }
        _ => format!("k{}", rng.below(10_000)).into_bytes(),
    }
}

/// What an answer comes to, for comparing the servers' with the core's.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    Keys(Vec<Vec<u8>>),
    NoKeyArguments,
    UnknownCommand,
    WrongArity,
    InvalidArguments,
    /// `COMMAND GETKEYS` itself refused the line (a name alone, on Redis 7.0).
    Unanswerable,
}

fn server_answer(reply: &Frame) -> Answer {
    match reply {
        Frame::Array(keys) => Answer::Keys(
            keys.iter()
                .map(|k| match k {
                    Frame::BulkString(b) => b.to_vec(),
                    other => panic!("a key that is not a bulk string: {other:?}"),
                })
                .collect(),
        ),
        Frame::Error(e) if e.contains("Invalid command specified") => Answer::UnknownCommand,
        Frame::Error(e) if e.contains("has no key arguments") => Answer::NoKeyArguments,
        Frame::Error(e) if e.contains("Invalid number of arguments") => Answer::WrongArity,
        Frame::Error(e) if e.contains("Invalid arguments specified") => Answer::InvalidArguments,
        Frame::Error(e) if e.contains("wrong number of arguments for 'command|getkeys'") => {
            Answer::Unanswerable
        }
        other => panic!("an answer COMMAND GETKEYS never gives: {other:?}"),
    }
}

fn core_answer(line: &[Vec<u8>]) -> Answer {
    let args: Vec<&[u8]> = line.iter().map(Vec::as_slice).collect();
    match command_keys(&args) {
        Err(
            CommandError::UnknownCommand | CommandError::UnknownSubcommand | CommandError::Empty,
        ) => Answer::UnknownCommand,
        // The servers look for keys only in commands that have some, and
        // check the arity after that.
        _ if !command_has_keys(&args) => Answer::NoKeyArguments,
        Ok(keys) => Answer::Keys(keys.map(|at| line[at].clone()).collect()),
        Err(CommandError::WrongArity { .. }) => Answer::WrongArity,
        Err(CommandError::InvalidArguments) => Answer::InvalidArguments,
        Err(other) => panic!("command_keys never answers {other:?}"),
    }
}

/// What a command learned from the server says of `line`: `None` where its
/// description cannot say (the client would ask the server).
fn learned_answer(learned: &LearnedCommand, line: &[Vec<u8>]) -> Option<Answer> {
    let args: Vec<&[u8]> = line.iter().map(Vec::as_slice).collect();
    if !learned.has_keys() {
        return Some(Answer::NoKeyArguments);
    }
    match learned.keys(&args) {
        Ok(keys) => Some(Answer::Keys(keys.map(|at| line[at].clone()).collect())),
        Err(CommandError::WrongArity { .. }) => Some(Answer::WrongArity),
        Err(CommandError::InvalidArguments) => Some(Answer::InvalidArguments),
        Err(CommandError::KeysNotDescribed) => None,
        Err(other) => panic!("a learned command's keys never answer {other:?}"),
    }
}

/// Every listed command (`name` or `name|sub`) as the server describes it
/// to `COMMAND INFO`, read as a client reads it: from the reply's bytes.
fn learned(conn: &mut RespConn, commands: &[Listed]) -> BTreeMap<String, LearnedCommand> {
    let names: Vec<String> = commands.iter().map(|c| c.words.join("|")).collect();
    let lines: Vec<Vec<&[u8]>> = names
        .iter()
        .map(|n| vec![&b"COMMAND"[..], b"INFO", n.as_bytes()])
        .collect();
    let replies = conn.pipeline(lines.iter().map(Vec::as_slice)).unwrap();
    names
        .into_iter()
        .zip(replies)
        .map(|(name, reply)| {
            use redis_protocol::resp2::types::Resp2Frame;
            let mut bytes = vec![0; reply.encode_len(false)];
            redis_protocol::resp2::encode::encode(&mut bytes, &reply, false).unwrap();
            let command = learn_command(&bytes)
                .unwrap_or_else(|e| panic!("COMMAND INFO {name}: {e}"))
                .unwrap_or_else(|| panic!("COMMAND INFO {name}: unknown"));
            assert_eq!(command.name(), name);
            (name, command)
        })
        .collect()
}

#[test]
fn keys_extracted_by_the_core_equal_command_getkeys() {
    let seed = std::env::var("ZARIS_ORACLE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5EED_2026_u64);
    let mut total = 0;
    let mut compared_keys = 0;
    let mut permissive_arity = Vec::new();
    let mut cannot_answer = 0;
    let (mut learned_compared, mut learned_asks) = (0, 0);
    let mut failures = Vec::new();
    for binary in servers_under_test() {
        let node = RedisNode::start_cluster_node(&binary, &[]).unwrap();
        let mut conn = node.connect().unwrap();
        let (commands, keywords) = listed(&mut conn);
        let described = learned(&mut conn, &commands);
        let mut words: Vec<&str> = keywords.iter().map(String::as_str).collect();
        // The servers' fallback procedures look for these too.
        words.extend([
            "STORE",
            "STOREDIST",
            "BY",
            "GET",
            "LIMIT",
            "KEYS",
            "AUTH",
            "AUTH2",
            "COPY",
            "REPLACE",
            "BLOCK",
            "COUNT",
            "GROUP",
            "NOACK",
            "STREAMS",
            "WEIGHTS",
            "AGGREGATE",
            "WITHSCORES",
        ]);
        let mut rng = Rng(seed);
        let mut lines: Vec<Vec<Vec<u8>>> = Vec::new();
        for command in &commands {
            // COMMAND GETKEYS of COMMAND itself would nest; it has no keys.
            if command.words[0] == "command" {
                continue;
            }
            let base = command.arity.unsigned_abs() as usize;
            for _ in 0..LINES_PER_COMMAND {
                let len = match rng.below(4) {
                    0 => base.saturating_sub(1).max(command.words.len()),
                    1 => base,
                    _ => base + rng.below(8),
                };
                let mut line: Vec<Vec<u8>> = command
                    .words
                    .iter()
                    .map(|w| {
                        // Any case: the servers compare names case-insensitively.
                        if rng.below(2) == 0 {
                            w.to_ascii_uppercase()
                        } else {
                            w.clone()
                        }
                        .into_bytes()
                    })
                    .collect();
                while line.len() < len {
                    line.push(argument(&mut rng, &words));
                }
                lines.push(line);
            }
        }
        // Pipelined, a batch at a time.
        for batch in lines.chunks(500) {
            let commands: Vec<Vec<&[u8]>> = batch
                .iter()
                .map(|line| {
                    let mut args: Vec<&[u8]> = vec![b"COMMAND", b"GETKEYS"];
                    args.extend(line.iter().map(Vec::as_slice));
                    args
                })
                .collect();
            let replies = conn.pipeline(commands.iter().map(Vec::as_slice)).unwrap();
            for (line, reply) in batch.iter().zip(replies) {
                total += 1;
                let theirs = server_answer(&reply);
                let ours = core_answer(line);
                let name = line[..line.len().min(2)]
                    .iter()
                    .map(|w| String::from_utf8_lossy(w).to_ascii_lowercase())
                    .collect::<Vec<_>>();
                // A container's subcommand by its own description, as the
                // client asks for one (`name|sub`); one the server does not
                // describe is unknown to it.
                let learned = match described.get(&name[0]) {
                    Some(c) if c.is_container() && name.len() > 1 => {
                        match described.get(&name.join("|")) {
                            Some(sub) => learned_answer(sub, line),
                            None => Some(Answer::UnknownCommand),
                        }
                    }
                    Some(c) => learned_answer(c, line),
                    None => Some(Answer::UnknownCommand),
                };
                match learned {
                    None => learned_asks += 1,
                    Some(learned) if learned == theirs => learned_compared += 1,
                    Some(learned) if theirs != Answer::Unanswerable => {
                        failures.push(format!(
                            "{binary}: {} (learned)\n    server:  {theirs:?}\n    learned: {learned:?}",
                            line.iter()
                                .map(|a| a.escape_ascii().to_string())
                                .collect::<Vec<_>>()
                                .join(" "),
                        ));
                    }
                    _ => {}
                }
                if theirs == ours {
                    compared_keys += usize::from(matches!(ours, Answer::Keys(_)));
                    continue;
                }
                let shown: Vec<String> =
                    line.iter().map(|a| a.escape_ascii().to_string()).collect();
                let name = String::from_utf8_lossy(&line[0]).to_ascii_lowercase();
                if theirs == Answer::Unanswerable {
                    cannot_answer += 1;
                    continue;
                }
                if theirs == Answer::WrongArity && matches!(name.as_str(), "zrank" | "zrevrank") {
                    permissive_arity.push(format!("{binary}: {}", shown.join(" ")));
                    continue;
                }
                failures.push(format!(
                    "{binary}: {}\n    server: {theirs:?}\n    core:   {ours:?}",
                    shown.join(" ")
                ));
            }
        }
    }
    eprintln!(
        "{total} command lines sent to COMMAND GETKEYS ({compared_keys} with keys); not compared: \
         {cannot_answer} the server could not answer (a name alone), {} of an arity the servers differ on:",
        permissive_arity.len()
    );
    for line in &permissive_arity {
        eprintln!("  {line}");
    }
    eprintln!(
        "as learned from COMMAND INFO: {learned_compared} lines agree with COMMAND GETKEYS; \
         {learned_asks} the descriptions cannot say (the client asks the server)"
    );
    assert!(
        learned_compared > 5_000,
        "only {learned_compared} lines compared as learned"
    );
    assert!(total > 5_000, "only {total} lines");
    assert!(
        compared_keys > 2_000,
        "only {compared_keys} lines with keys"
    );
    assert!(
        failures.is_empty(),
        "{} of {total} lines disagree with COMMAND GETKEYS:\n{}",
        failures.len(),
        failures[..failures.len().min(40)].join("\n")
    );
}
