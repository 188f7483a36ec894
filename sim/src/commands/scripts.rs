//! Scripts: the model has no Lua; it runs the scripts it knows by their
//! source and refuses any other.

use super::*;

/// The soak's script (the model also runs the client's own,
/// `sim_scripts`: its compare-and-set and once-only increment).
const SET_SCRIPT: &str = "return redis.call('SET', KEYS[1], ARGV[1])";

/// The SHA1 of a script's source, in hex, as `EVALSHA` names it.
#[must_use]
pub fn sha1(source: &[u8]) -> String {
    sha1_smol::Sha1::from(source).digest().to_string()
}

/// An error raised inside a script, as Redis 7 words it.
fn script_error(e: &Reply) -> Reply {
    match e {
        Reply::Error(text) => Reply::Error(format!("{text} script: model")),
        other => other.clone(),
    }
}

impl Model {
    /// `EVAL` and `EVALSHA` of the scripts the model knows.
    pub(super) fn eval(
        &mut self,
        me: usize,
        name: &str,
        args: &[Vec<u8>],
    ) -> (Reply, Vec<Vec<u8>>) {
        let Some(script) = args.get(1) else {
            return (arity(name), Vec::new());
        };
        let sha = if name == "EVAL" {
            let sha = sha1(script);
            self.nodes[me].scripts.insert(sha.clone());
            sha
        } else {
            let sha = String::from_utf8_lossy(script).to_ascii_lowercase();
            if !self.nodes[me].scripts.contains(&sha) {
                self.count(Effect::NoscriptAnswered, 1);
                return (
                    Reply::Error("NOSCRIPT No matching script. Please use EVAL.".into()),
                    Vec::new(),
                );
            }
            sha
        };
        let n = args.get(2).and_then(|a| int(a)).unwrap_or(-1);
        if n < 0 || args.len() < 3 + n as usize {
            return (
                Reply::Error("ERR Number of keys can't be greater than number of args".into()),
                Vec::new(),
            );
        }
        let keys = &args[3..3 + n as usize];
        let argv = &args[3 + n as usize..];
        let arg = |i: usize| argv.get(i).cloned().unwrap_or_default();
        if sha == sha1(SET_SCRIPT.as_bytes()) && !keys.is_empty() {
            self.put(me, &keys[0], Data::Str(arg(0)), None);
            return (Reply::ok(), vec![keys[0].clone()]);
        }
        if sha == sha1(SET_IF_VERSION.as_bytes()) && !keys.is_empty() {
            let key = &keys[0];
            let stored = match self.get(me, key).map(|e| &e.data) {
                None => 0,
                Some(Data::Hash(h)) => h.get(&b"v"[..]).and_then(|v| int(v)).unwrap_or(0),
                Some(_) => return (script_error(&wrong_type()), Vec::new()),
            };
            if Some(stored) != int(&arg(1)) {
                return (
                    Reply::Array(vec![Reply::Int(0), Reply::Int(stored)]),
                    Vec::new(),
                );
            }
            let pairs = [
                b"v".to_vec(),
                (stored + 1).to_string().into_bytes(),
                b"d".to_vec(),
                arg(0),
            ];
            if let Err(e) = self.hset(me, key, &pairs) {
                return (script_error(&e), Vec::new());
            }
            return (
                Reply::Array(vec![Reply::Int(1), Reply::Int(stored + 1)]),
                vec![key.clone()],
            );
        }
        if sha == sha1(INCR_ONCE.as_bytes()) && keys.len() >= 2 {
            let (key, marker) = (&keys[0], &keys[1]);
            let px = int(&arg(1)).unwrap_or(60_000).max(1) as u64;
            let expires = Some(now() + Duration::from_millis(px));
            if self.exists(me, marker) {
                let recorded = match self.get(me, marker).map(|e| &e.data) {
                    Some(Data::Str(v)) => int(v),
                    _ => None,
                };
                return (recorded.map_or(Reply::Nil, Reply::Int), Vec::new());
            }
            let Some(by) = int(&arg(0)) else {
                return (script_error(&not_int()), Vec::new());
            };
            return match self.incr(me, key, by) {
                Ok(v) => {
                    self.put(me, marker, Data::Str(v.to_string().into_bytes()), expires);
                    (Reply::Int(v), vec![key.clone(), marker.clone()])
                }
                Err(e) => (script_error(&e), Vec::new()),
            };
        }
        (
            Reply::Error(
                "ERR the model cluster does not run this script (sim/src/commands/scripts.rs)"
                    .into(),
            ),
            Vec::new(),
        )
    }

    pub(super) fn script(&mut self, me: usize, args: &[Vec<u8>]) -> Reply {
        match args.get(1).map(|a| upper(a)).as_deref() {
            Some("LOAD") => match args.get(2) {
                Some(source) => {
                    let sha = sha1(source);
                    self.nodes[me].scripts.insert(sha.clone());
                    Reply::text(sha)
                }
                None => arity("script|load"),
            },
            Some("EXISTS") => Reply::Array(
                args[2..]
                    .iter()
                    .map(|s| {
                        let sha = String::from_utf8_lossy(s).to_ascii_lowercase();
                        Reply::Int(i64::from(self.nodes[me].scripts.contains(&sha)))
                    })
                    .collect(),
            ),
            Some("FLUSH") => {
                self.nodes[me].scripts.clear();
                Reply::ok()
            }
            _ => Reply::Error("ERR unknown subcommand. Try SCRIPT HELP.".into()),
        }
    }
}
