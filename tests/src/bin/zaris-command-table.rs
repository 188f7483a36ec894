//! Writes `core/src/command/table.rs`, the core's table of which arguments
//! of each command are keys, from the servers themselves: the `COMMAND`
//! replies (arity, flags, ACL categories, request and response tips, key
//! specifications, subcommands) of a real `redis-server` and
//! `valkey-server`, merged.
//!
//! `just command-table` runs it (both servers must be installed). A command
//! both servers know must be described the same way by both; where they
//! differ the run stops and says how.
//!
//! The servers fall back on C procedures where a key specification cannot
//! say everything (`SORT ... STORE`, `MIGRATE ... KEYS`, an `EVAL` whose
//! `numkeys` does not parse). `COMMAND` does not report those, so which
//! command has which is listed here ([`FALLBACKS`]), from the servers'
//! `getkeys_proc` entries.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use zaris_tests::{Frame, RedisNode};

/// The commands whose servers resort to a C procedure when their key specs
/// fail, and which one (the names of `Fallback`'s variants in the core).
const FALLBACKS: &[(&str, &str)] = &[
    ("eval", "Generic { store: 0, count: 2, first: 3 }"),
    ("eval_ro", "Generic { store: 0, count: 2, first: 3 }"),
    ("evalsha", "Generic { store: 0, count: 2, first: 3 }"),
    ("evalsha_ro", "Generic { store: 0, count: 2, first: 3 }"),
    ("fcall", "Generic { store: 0, count: 2, first: 3 }"),
    ("fcall_ro", "Generic { store: 0, count: 2, first: 3 }"),
    ("sintercard", "Generic { store: 0, count: 1, first: 2 }"),
    ("zunionstore", "Generic { store: 1, count: 2, first: 3 }"),
    ("zinterstore", "Generic { store: 1, count: 2, first: 3 }"),
    ("zdiffstore", "Generic { store: 1, count: 2, first: 3 }"),
    ("zunion", "Generic { store: 0, count: 1, first: 2 }"),
    ("zinter", "Generic { store: 0, count: 1, first: 2 }"),
    ("zdiff", "Generic { store: 0, count: 1, first: 2 }"),
    ("zintercard", "Generic { store: 0, count: 1, first: 2 }"),
    ("lmpop", "Generic { store: 0, count: 1, first: 2 }"),
    ("zmpop", "Generic { store: 0, count: 1, first: 2 }"),
    ("blmpop", "Generic { store: 0, count: 2, first: 3 }"),
    ("bzmpop", "Generic { store: 0, count: 2, first: 3 }"),
    ("sort", "Sort"),
    ("sort_ro", "SortRo"),
    ("migrate", "Migrate"),
    ("georadius", "Georadius"),
    ("georadiusbymember", "Georadius"),
    ("xread", "Xread"),
    ("xreadgroup", "Xread"),
    ("set", "First"),
    ("bitfield", "First"),
];

/// The command flags the core keeps, and their bit names there.
const FLAGS: &[(&str, &str)] = &[
    ("write", "WRITE"),
    ("readonly", "READONLY"),
    ("denyoom", "DENYOOM"),
    ("admin", "ADMIN"),
    ("pubsub", "PUBSUB"),
    ("noscript", "NOSCRIPT"),
    ("blocking", "BLOCKING"),
    ("loading", "LOADING"),
    ("stale", "STALE"),
    ("fast", "FAST"),
    ("no_mandatory_keys", "NO_MANDATORY_KEYS"),
    ("movablekeys", "MOVABLEKEYS"),
    ("no_multi", "NO_MULTI"),
    ("allow_busy", "ALLOW_BUSY"),
];

/// Key spec flags, likewise.
const KEY_FLAGS: &[(&str, &str)] = &[
    ("RO", "RO"),
    ("RW", "RW"),
    ("OW", "OW"),
    ("RM", "RM"),
    ("access", "ACCESS"),
    ("update", "UPDATE"),
    ("insert", "INSERT"),
    ("delete", "DELETE"),
    ("not_key", "NOT_KEY"),
    ("incomplete", "INCOMPLETE"),
    ("variable_flags", "VARIABLE_FLAGS"),
];

#[derive(Clone, Debug, PartialEq, Eq)]
struct Command {
    name: String,
    arity: i64,
    flags: Vec<String>,
    connection: bool,
    request_policy: Option<String>,
    response_policy: Option<String>,
    key_specs: Vec<String>,
    subcommands: Vec<Command>,
}

fn text(frame: &Frame) -> Option<String> {
    match frame {
        Frame::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Frame::SimpleString(s) => Some(String::from_utf8_lossy(s).into_owned()),
        _ => None,
    }
}

fn array(frame: &Frame) -> Result<&[Frame]> {
    match frame {
        Frame::Array(items) => Ok(items),
        other => bail!("expected an array, got {other:?}"),
    }
}

fn int(frame: &Frame) -> Result<i64> {
    match frame {
        Frame::Integer(i) => Ok(*i),
        other => text(other)
            .and_then(|t| t.parse().ok())
            .with_context(|| format!("expected an integer, got {other:?}")),
    }
}

/// A RESP2 map (`[k1, v1, ...]`) by key.
fn map(frame: &Frame) -> Result<BTreeMap<String, &Frame>> {
    let items = array(frame)?;
    items
        .chunks(2)
        .map(|kv| Ok((text(&kv[0]).context("non-text map key")?, &kv[1])))
        .collect()
}

/// One key spec as the Rust expression the core's table holds.
fn key_spec(frame: &Frame) -> Result<String> {
    let fields = map(frame)?;
    let flags: Vec<String> = match fields.get("flags") {
        Some(f) => array(f)?.iter().filter_map(text).collect(),
        None => Vec::new(),
    };
    let mut bits = Vec::new();
    for flag in &flags {
        let (_, name) = KEY_FLAGS
            .iter()
            .find(|(f, _)| f == flag)
            .with_context(|| format!("unknown key spec flag {flag}"))?;
        bits.push(format!("key::{name}"));
    }
    let bits = if bits.is_empty() {
        "0".to_owned()
    } else {
        bits.join(" | ")
    };
    let begin = map(fields.get("begin_search").context("no begin_search")?)?;
    let begin_type = text(begin.get("type").context("no type")?).unwrap_or_default();
    let begin = match begin_type.as_str() {
        "index" => {
            let spec = map(begin.get("spec").context("no spec")?)?;
            format!(
                "Begin::Index({})",
                int(spec.get("index").context("no index")?)?
            )
        }
        "keyword" => {
            let spec = map(begin.get("spec").context("no spec")?)?;
            format!(
                "Begin::Keyword {{ keyword: {:?}, start_from: {} }}",
                text(spec.get("keyword").context("no keyword")?).unwrap_or_default(),
                int(spec.get("startfrom").context("no startfrom")?)?
            )
        }
        "unknown" => "Begin::Unknown".to_owned(),
        other => bail!("unknown begin_search type {other}"),
    };
    let find = map(fields.get("find_keys").context("no find_keys")?)?;
    let find_type = text(find.get("type").context("no type")?).unwrap_or_default();
    let find = match find_type.as_str() {
        "range" => {
            let spec = map(find.get("spec").context("no spec")?)?;
            format!(
                "Find::Range {{ last_key: {}, step: {}, limit: {} }}",
                int(spec.get("lastkey").context("no lastkey")?)?,
                int(spec.get("keystep").context("no keystep")?)?,
                int(spec.get("limit").context("no limit")?)?
            )
        }
        "keynum" => {
            let spec = map(find.get("spec").context("no spec")?)?;
            format!(
                "Find::KeyNum {{ key_num_index: {}, first_key: {}, step: {} }}",
                int(spec.get("keynumidx").context("no keynumidx")?)?,
                int(spec.get("firstkey").context("no firstkey")?)?,
                int(spec.get("keystep").context("no keystep")?)?
            )
        }
        "unknown" => "Find::Unknown".to_owned(),
        other => bail!("unknown find_keys type {other}"),
    };
    Ok(format!(
        "KeySpec {{ flags: {bits}, begin: {begin}, find: {find} }}"
    ))
}

/// One `COMMAND` entry: `[name, arity, flags, first, last, step, acl
/// categories, tips, key specs, subcommands]` (Redis 7 and Valkey 8).
fn command(frame: &Frame) -> Result<Command> {
    let parts = array(frame)?;
    if parts.len() < 10 {
        bail!(
            "a COMMAND entry of {} fields (a server before Redis 7?)",
            parts.len()
        );
    }
    let name = text(&parts[0]).context("no name")?.to_ascii_lowercase();
    let flags: Vec<String> = array(&parts[2])?.iter().filter_map(text).collect();
    let categories: Vec<String> = array(&parts[6])?.iter().filter_map(text).collect();
    let tips: Vec<String> = array(&parts[7])?.iter().filter_map(text).collect();
    let tip = |prefix: &str| {
        tips.iter()
            .find_map(|t| t.strip_prefix(prefix).map(str::to_owned))
    };
    let key_specs = array(&parts[8])?
        .iter()
        .map(key_spec)
        .collect::<Result<Vec<_>>>()
        .with_context(|| format!("the key specs of {name}"))?;
    let mut subcommands = array(&parts[9])?
        .iter()
        .map(command)
        .collect::<Result<Vec<_>>>()?;
    for sub in &mut subcommands {
        // `object|encoding` is listed under `object` as `encoding`.
        if let Some((_, short)) = sub.name.split_once('|') {
            sub.name = short.to_owned();
        }
    }
    subcommands.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Command {
        name,
        arity: int(&parts[1])?,
        flags,
        connection: categories.iter().any(|c| c == "@connection"),
        request_policy: tip("request_policy:"),
        response_policy: tip("response_policy:"),
        key_specs,
        subcommands,
    })
}

fn commands_of(binary: &str) -> Result<(String, BTreeMap<String, Command>)> {
    let node =
        RedisNode::start_cluster_node(binary, &[]).with_context(|| format!("starting {binary}"))?;
    let mut conn = node.connect()?;
    let version = match conn.command(&[b"INFO", b"server"])? {
        Frame::BulkString(info) => {
            let info = String::from_utf8_lossy(&info);
            // Valkey reports a Redis-compatible `redis_version` as well.
            let field = |name: &str| {
                info.lines()
                    .find_map(|l| l.strip_prefix(name).map(str::to_owned))
            };
            field("valkey_version:")
                .or_else(|| field("redis_version:"))
                .unwrap_or_default()
        }
        _ => String::new(),
    };
    let reply = conn.command(&[b"COMMAND"])?;
    let mut commands = BTreeMap::new();
    for entry in array(&reply)? {
        let c = command(entry)?;
        commands.insert(c.name.clone(), c);
    }
    Ok((version.trim().to_owned(), commands))
}

fn policy(request: Option<&str>, response: Option<&str>, connection: bool) -> Result<String> {
    let reply = match response {
        None => "Reply::EachNode",
        Some("all_succeeded") => "Reply::AllSucceeded",
        Some("one_succeeded") => "Reply::OneSucceeded",
        Some("agg_sum") => "Reply::Sum",
        Some("agg_logical_and") => "Reply::LogicalAnd",
        Some("agg_logical_or") => "Reply::LogicalOr",
        Some("agg_min") => "Reply::Min",
        Some("agg_max") => "Reply::Max",
        Some("special") => "Reply::Special",
        Some(other) => bail!("unknown response policy {other}"),
    };
    Ok(match request {
        // PING and ECHO are tipped all_shards, but any node answers them
        // for the connection that asks.
        _ if connection => "Fanout::None".to_owned(),
        None | Some("multi_shard") | Some("special") => "Fanout::None".to_owned(),
        Some("all_shards") => format!("Fanout::AllMasters({reply})"),
        Some("all_nodes") => format!("Fanout::AllNodes({reply})"),
        Some(other) => bail!("unknown request policy {other}"),
    })
}

/// Writes `c` as a `Spec` (a command either server knows: the union).
fn write_command(out: &mut String, c: &Command, indent: &str) -> Result<()> {
    let mut flags: Vec<String> = Vec::new();
    for flag in &c.flags {
        if let Some((_, name)) = FLAGS.iter().find(|(f, _)| f == flag) {
            flags.push(format!("cmd::{name}"));
        }
    }
    if c.connection {
        flags.push("cmd::CONNECTION".to_owned());
    }
    let flags = if flags.is_empty() {
        "0".to_owned()
    } else {
        flags.join(" | ")
    };
    // Fallbacks belong to top-level commands (`CONFIG SET` is not `SET`).
    let fallback = FALLBACKS
        .iter()
        .find(|(n, _)| *n == c.name && indent.len() == 4)
        .map_or("None", |(_, f)| f);
    let fanout = policy(
        c.request_policy.as_deref(),
        c.response_policy.as_deref(),
        c.connection,
    )?;
    writeln!(out, "{indent}Spec {{")?;
    writeln!(out, "{indent}    name: {:?},", c.name)?;
    writeln!(out, "{indent}    arity: {},", c.arity)?;
    writeln!(out, "{indent}    flags: {flags},")?;
    writeln!(out, "{indent}    fanout: {fanout},")?;
    if c.key_specs.is_empty() {
        writeln!(out, "{indent}    keys: &[],")?;
    } else {
        writeln!(out, "{indent}    keys: &[")?;
        for spec in &c.key_specs {
            writeln!(out, "{indent}        {spec},")?;
        }
        writeln!(out, "{indent}    ],")?;
    }
    writeln!(out, "{indent}    fallback: Fallback::{fallback},")?;
    if c.subcommands.is_empty() {
        writeln!(out, "{indent}    subcommands: &[],")?;
    } else {
        writeln!(out, "{indent}    subcommands: &[")?;
        for sub in &c.subcommands {
            write_command(out, sub, &format!("{indent}        "))?;
        }
        writeln!(out, "{indent}    ],")?;
    }
    writeln!(out, "{indent}}},")?;
    Ok(())
}

/// The key specs with only the flags that change which keys are found
/// (`not_key`, `incomplete`, `variable_flags`): access flags may differ.
fn routing_specs(c: &Command) -> Vec<String> {
    c.key_specs
        .iter()
        .map(|spec| {
            let (flags, rest) = spec.split_once(", begin").unwrap_or((spec, ""));
            let kept: Vec<&str> = flags
                .trim_start_matches("KeySpec { flags: ")
                .split(" | ")
                .filter(|f| {
                    matches!(
                        *f,
                        "key::NOT_KEY" | "key::INCOMPLETE" | "key::VARIABLE_FLAGS"
                    )
                })
                .collect();
            format!("{} / begin{rest}", kept.join("|"))
        })
        .collect()
}

/// One description from two: the key specs must agree (else an error);
/// the arity is the more permissive (a server may accept an option the
/// other does not), the flags their union, and the tips the newer
/// server's (Valkey's) where it has any.
fn merge(name: &str, redis: &Command, valkey: &Command) -> Result<Command> {
    if routing_specs(redis) != routing_specs(valkey) {
        bail!(
            "{name}: the servers find its keys differently:\n  redis  {:?}\n  valkey {:?}",
            redis.key_specs,
            valkey.key_specs
        );
    }
    let arity = match (redis.arity, valkey.arity) {
        (a, b) if a == b => a,
        (a, b) => -(a.abs().min(b.abs())),
    };
    let mut flags = redis.flags.clone();
    flags.extend(
        valkey
            .flags
            .iter()
            .filter(|f| !redis.flags.contains(f))
            .cloned(),
    );
    let tips = if valkey.request_policy.is_some() || valkey.response_policy.is_some() {
        (
            valkey.request_policy.clone(),
            valkey.response_policy.clone(),
        )
    } else {
        (redis.request_policy.clone(), redis.response_policy.clone())
    };
    Ok(Command {
        arity,
        flags,
        connection: redis.connection || valkey.connection,
        request_policy: tips.0,
        response_policy: tips.1,
        ..valkey.clone()
    })
}

fn main() -> Result<()> {
    let (redis_version, redis) = commands_of("redis-server")?;
    let (valkey_version, valkey) = commands_of("valkey-server")?;
    let mut names: Vec<&String> = redis.keys().chain(valkey.keys()).collect();
    names.sort();
    names.dedup();
    let mut body = String::new();
    let mut differences: Vec<String> = Vec::new();
    for name in &names {
        let entry = match (redis.get(*name), valkey.get(*name)) {
            (Some(r), Some(v)) => {
                let mut merged = merge(name, r, v)?;
                // Subcommands: the union, merged where both have one.
                merged.subcommands = Vec::new();
                let mut sub_names: Vec<&String> = r
                    .subcommands
                    .iter()
                    .chain(&v.subcommands)
                    .map(|s| &s.name)
                    .collect();
                sub_names.sort();
                sub_names.dedup();
                for sub in sub_names {
                    let rs = r.subcommands.iter().find(|s| &s.name == sub);
                    let vs = v.subcommands.iter().find(|s| &s.name == sub);
                    let entry = match (rs, vs) {
                        (Some(a), Some(b)) => merge(&format!("{name}|{sub}"), a, b)?,
                        (Some(a), None) => a.clone(),
                        (None, Some(b)) => b.clone(),
                        (None, None) => unreachable!("a name from one of the two lists"),
                    };
                    merged.subcommands.push(entry);
                }
                if r.arity != v.arity {
                    differences.push(format!(
                        "{name}: arity {} (redis) and {} (valkey)",
                        r.arity, v.arity
                    ));
                }
                merged
            }
            (Some(r), None) => r.clone(),
            (None, Some(v)) => v.clone(),
            (None, None) => unreachable!("a name from one of the two maps"),
        };
        write_command(&mut body, &entry, "    ")?;
    }
    for difference in &differences {
        eprintln!("note: {difference}");
    }
    let count = names.len();
    let out = format!(
        "//! Which arguments of each command are keys: generated from the `COMMAND`
//! replies of redis-server {redis_version} and valkey-server {valkey_version}
//! (arity, flags, request and response tips, key specifications,
//! subcommands), merged.
//!
//! Do not edit. Regenerate with `just command-table` (both servers
//! installed): it runs `tests/src/bin/zaris-command-table.rs`.

use super::spec::{{cmd, key, Begin, Fallback, Fanout, Find, KeySpec, Reply, Spec}};

/// Every command, by name (lowercase, in byte order, for binary search);
/// `index.rs` builds the name index from it at compile time.
pub(crate) const TABLE: [Spec<'static>; {count}] = [
{body}];
"
    );
    let path: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "..",
        "core",
        "src",
        "command",
        "table.rs",
    ]
    .iter()
    .collect();
    std::fs::write(&path, out).with_context(|| format!("writing {}", path.display()))?;
    eprintln!(
        "wrote {} commands (redis-server {redis_version}, valkey-server {valkey_version}) to {}",
        count,
        path.display()
    );
    Ok(())
}
