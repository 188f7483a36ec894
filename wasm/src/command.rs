//! A pasted command line, routed: its arguments split as `redis-cli` splits
//! them, then the core's key extraction and target.

use wasm_bindgen::prelude::*;
use zaris_core::{command_keys, command_target, slot_for_key, CommandError, Reply, Target};

use crate::cluster::ClusterMap;
use crate::json;

/// Why a command line does not split into arguments.
#[derive(Debug, PartialEq, Eq)]
pub struct SplitError {
    /// The character offset where the problem is.
    pub at: usize,
    /// What is wrong.
    pub message: &'static str,
}

/// The arguments of `line`, split as `redis-cli` splits them (`sdssplitargs`):
/// white space separates; `"..."` takes `\n \r \t \b \a \\ \" \xHH`
/// escapes; `'...'` takes `\'`; a closing quote must be followed by white
/// space or the end.
///
/// # Errors
/// An unbalanced quote, or a closing quote followed by more text.
pub fn split_args(line: &str) -> Result<Vec<Vec<u8>>, SplitError> {
    let bytes = line.as_bytes();
    let mut args = Vec::new();
    let mut i = 0;
    loop {
        // Between arguments: white space, and NUL, which ends an unquoted
        // argument below (it ends redis-cli's C string) and must be
        // stepped over here, or it would end an empty argument forever.
        while i < bytes.len() && (bytes[i].is_ascii_whitespace() || bytes[i] == 0) {
            i += 1;
        }
        if i == bytes.len() {
            return Ok(args);
        }
        let mut arg = Vec::new();
        let (mut in_double, mut in_single) = (false, false);
        let start = i;
        loop {
            let Some(&c) = bytes.get(i) else {
                if in_double || in_single {
                    return Err(SplitError {
                        at: start,
                        message: "a quote is not closed",
                    });
                }
                break;
            };
            if in_double {
                if c == b'\\' && bytes.get(i + 1) == Some(&b'x') {
                    let hex = bytes.get(i + 2..i + 4).and_then(|h| {
                        core::str::from_utf8(h)
                            .ok()
                            .and_then(|h| u8::from_str_radix(h, 16).ok())
                    });
                    if let Some(b) = hex {
                        arg.push(b);
                        i += 4;
                        continue;
                    }
                }
                if c == b'\\' && i + 1 < bytes.len() {
                    arg.push(match bytes[i + 1] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                    i += 2;
                } else if c == b'"' {
                    if bytes.get(i + 1).is_some_and(|n| !n.is_ascii_whitespace()) {
                        return Err(SplitError {
                            at: i,
                            message: "a closing quote must be followed by a space",
                        });
                    }
                    i += 1;
                    break;
                } else {
                    arg.push(c);
                    i += 1;
                }
            } else if in_single {
                if c == b'\\' && bytes.get(i + 1) == Some(&b'\'') {
                    arg.push(b'\'');
                    i += 2;
                } else if c == b'\'' {
                    if bytes.get(i + 1).is_some_and(|n| !n.is_ascii_whitespace()) {
                        return Err(SplitError {
                            at: i,
                            message: "a closing quote must be followed by a space",
                        });
                    }
                    i += 1;
                    break;
                } else {
                    arg.push(c);
                    i += 1;
                }
            } else {
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => break,
                    b'"' => in_double = true,
                    b'\'' => in_single = true,
                    _ => arg.push(c),
                }
                i += 1;
            }
        }
        args.push(arg);
    }
}

fn reply_name(reply: Reply) -> &'static str {
    match reply {
        Reply::EachNode => "each node's answer",
        Reply::AllSucceeded => "one answer if all succeed",
        Reply::OneSucceeded => "one answer if any succeeds",
        Reply::Sum => "the sum",
        Reply::LogicalAnd => "true where all are",
        Reply::LogicalOr => "true where any is",
        Reply::Min => "the least",
        Reply::Max => "the greatest",
        _ => "the command's own way",
    }
}

/// Routes a pasted command line against `map`: a JSON object
/// `{args, keys: [{index, key, slot, owner}], target, slot?, owner?,
/// error?}`. `target` is `slot`, `any-node`, `all-masters`, `all-nodes`, or
/// `none` (with `error` saying why no one node can run it).
///
/// # Errors
/// A line that does not split (an unbalanced quote), naming where.
#[wasm_bindgen(js_name = routeCommand)]
pub fn route_command(line: &str, map: &ClusterMap) -> Result<String, JsError> {
    let args = split_args(line)
        .map_err(|e| JsError::new(&format!("character {}: {}", e.at + 1, e.message)))?;
    Ok(route_json(&args, map))
}

fn route_json(args: &[Vec<u8>], map: &ClusterMap) -> String {
    let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
    let owner = |slot: u16| map.owner_of_slot(slot);
    let label = |slot: u16| map.node_label(usize::try_from(owner(slot)).unwrap_or(usize::MAX));
    let mut out = String::new();
    let mut o = json::Object::open(&mut out);
    let shown: Vec<String> = args
        .iter()
        .map(|a| {
            let mut quoted = String::new();
            json::string(&mut quoted, &String::from_utf8_lossy(a));
            quoted
        })
        .collect();
    o.raw("args", &format!("[{}]", shown.join(",")));
    let keys: Vec<String> = match command_keys(&refs) {
        Ok(positions) => positions
            .map(|at| {
                let key = &args[at];
                let slot = slot_for_key(key);
                let mut k = String::new();
                json::Object::open(&mut k)
                    .num("index", at as u64)
                    .str("key", &String::from_utf8_lossy(key))
                    .num("slot", slot.into())
                    .str("owner", &label(slot))
                    .close();
                k
            })
            .collect(),
        Err(_) => Vec::new(),
    };
    o.raw("keys", &format!("[{}]", keys.join(",")));
    match command_target(&refs) {
        Ok(Target::Slot(slot)) => {
            o.str("target", "slot")
                .num("slot", slot.into())
                .str("owner", &label(slot));
        }
        Ok(Target::AnyNode) => {
            o.str("target", "any-node");
        }
        Ok(Target::AllMasters(reply)) => {
            o.str("target", "all-masters")
                .str("reply", reply_name(reply));
        }
        Ok(Target::AllNodes(reply)) => {
            o.str("target", "all-nodes").str("reply", reply_name(reply));
        }
        Err(e) => {
            let why = match e {
                CommandError::CrossSlot { first, second } => format!(
                    "its keys hash to different slots ({first} on {}, {second} on {}): no one node can run it; split it by slot, or give the keys one hash tag",
                    label(first),
                    label(second)
                ),
                other => other.to_string(),
            };
            o.str("target", "none").str("error", &why);
        }
    }
    o.close();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(line: &str) -> Vec<String> {
        split_args(line)
            .unwrap()
            .iter()
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect()
    }

    /// Found by the `command_line` fuzz target: a NUL between arguments
    /// made the splitter push empty arguments until memory ran out.
    #[test]
    fn a_nul_separates_arguments_and_ends_nothing_else() {
        assert_eq!(split("a\0b"), ["a", "b"]);
        assert_eq!(split("\0\0SET\0 k\0"), ["SET", "k"]);
        assert_eq!(
            split("\"a\0b\" c"),
            ["a\0b", "c"],
            "inside quotes it is a byte like any other"
        );
        assert_eq!(
            split_args("SE) \0\"a\"b 1"),
            Err(SplitError {
                at: 7,
                message: "a closing quote must be followed by a space"
            })
        );
    }

    #[test]
    fn splits_as_redis_cli_does() {
        assert_eq!(
            split("MSET {u1}:a 1 {u1}:b 2"),
            ["MSET", "{u1}:a", "1", "{u1}:b", "2"]
        );
        assert_eq!(
            split(r#"EVAL "return redis.call('get', KEYS[1])" 1 k"#),
            ["EVAL", "return redis.call('get', KEYS[1])", "1", "k"]
        );
        assert_eq!(split(r#"SET "a\x41\n" 'it\'s'"#), ["SET", "aA\n", "it's"]);
        assert_eq!(split("  GET   k  "), ["GET", "k"]);
        assert_eq!(split(r#"SET "" x"#), ["SET", "", "x"]);
        assert!(split_args("").unwrap().is_empty());
        assert_eq!(
            split_args(r#"GET "k"#).unwrap_err().message,
            "a quote is not closed"
        );
        assert_eq!(split_args(r#"GET "k"x"#).unwrap_err().at, 6);
    }

    #[test]
    fn routes_against_the_demo_map() {
        let map = ClusterMap::parse_cluster_nodes(&ClusterMap::demo_cluster_nodes()).unwrap();
        let route = |line: &str| -> serde_json::Value {
            serde_json::from_str(&route_json(&split_args(line).unwrap(), &map)).unwrap()
        };
        let mset = route("MSET {u1}:a 1 {u1}:b 2");
        assert_eq!(mset["target"], "slot");
        assert_eq!(mset["slot"], u64::from(slot_for_key(b"u1")));
        assert_eq!(mset["keys"].as_array().map(Vec::len), Some(2));
        assert_eq!(mset["keys"][1]["index"], 3);
        let eval = route(r#"EVAL "return 1" 2 k1 k2"#);
        assert_eq!(eval["target"], "none");
        assert!(
            eval["error"].as_str().unwrap().contains("different slots"),
            "{eval}"
        );
        assert_eq!(eval["keys"].as_array().map(Vec::len), Some(2));
        assert_eq!(route("DBSIZE")["target"], "all-masters");
        assert_eq!(route("DBSIZE")["reply"], "the sum");
        assert_eq!(route("PING")["target"], "any-node");
        assert_eq!(route("NOPE x")["error"], "unknown command");
        assert_eq!(
            route("EVAL s 3 k")["error"]
                .as_str()
                .map(|e| e.starts_with("the arguments")),
            Some(true)
        );
    }
}
