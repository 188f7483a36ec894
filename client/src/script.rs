//! Lua scripts that survive churn: `EVALSHA` to the owner of the keys,
//! and, when that node does not have the script (`NOSCRIPT`: a new master
//! after a failover, a slot moved to another node, `SCRIPT FLUSH`), the
//! source itself (`EVAL`) to the same owner. That is safe: a `NOSCRIPT`
//! answer means the script did not run. Nothing is loaded ahead of time,
//! and nothing is sent to nodes that do not own the keys.

use std::sync::Arc;

use crate::stats::Counters;
use crate::{Client, Error, Value};

/// A Lua script, by its source and its SHA-1 (what `EVALSHA` names).
///
/// ```no_run
/// # async fn demo(client: zaris_client::Client) -> Result<(), zaris_client::Error> {
/// use zaris_client::Script;
///
/// let add = Script::new("return redis.call('INCRBY', KEYS[1], ARGV[1])");
/// let total = client.invoke(&add, &["visits:{home}"], &["3"]).await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Script {
    source: Arc<str>,
    sha: Arc<str>,
}

impl Script {
    /// The script with `source`; its SHA-1 is computed here, once.
    #[must_use]
    pub fn new(source: impl Into<String>) -> Self {
        let source: String = source.into();
        let sha = sha1_smol::Sha1::from(source.as_bytes())
            .digest()
            .to_string();
        Self {
            source: source.into(),
            sha: sha.into(),
        }
    }

    /// Its SHA-1, in lowercase hex, as `SCRIPT LOAD` answers it.
    #[must_use]
    pub fn sha(&self) -> &str {
        &self.sha
    }

    /// Its source.
    #[must_use]
    pub fn source(&self) -> &str {
        &self.source
    }

    /// `EVALSHA sha numkeys keys.. args..` (or `EVAL source ...` when
    /// `by_source`).
    pub(crate) fn command<K: AsRef<[u8]>, A: AsRef<[u8]>>(
        &self,
        by_source: bool,
        keys: &[K],
        args: &[A],
    ) -> Vec<Vec<u8>> {
        let (name, body): (&[u8], &[u8]) = if by_source {
            (b"EVAL", self.source.as_bytes())
        } else {
            (b"EVALSHA", self.sha.as_bytes())
        };
        with_numkeys(name, body, keys, args)
    }
}

/// `name body numkeys keys.. args..`: the shape of `EVAL`, `EVALSHA`,
/// `FCALL` and `FCALL_RO`.
pub(crate) fn with_numkeys<K: AsRef<[u8]>, A: AsRef<[u8]>>(
    name: &[u8],
    body: &[u8],
    keys: &[K],
    args: &[A],
) -> Vec<Vec<u8>> {
    let mut command = Vec::with_capacity(3 + keys.len() + args.len());
    command.push(name.to_vec());
    command.push(body.to_vec());
    command.push(keys.len().to_string().into_bytes());
    command.extend(keys.iter().map(|k| k.as_ref().to_vec()));
    command.extend(args.iter().map(|a| a.as_ref().to_vec()));
    command
}

/// Whether a server error says the script is not in that node's cache.
pub(crate) fn is_noscript(result: &Result<Value, Error>) -> bool {
    matches!(result, Err(Error::Server(message)) if message.starts_with("NOSCRIPT"))
}

impl Client {
    /// Runs `script` with `keys` (one slot) and `args` on the keys' owner:
    /// `EVALSHA`, then `EVAL` on `NOSCRIPT`. Every retry and refresh rule
    /// of [`Client::cmd`] holds; the fallbacks are counted
    /// ([`crate::Stats::noscript_fallbacks`]).
    ///
    /// # Errors
    /// As [`Client::cmd`]: [`Error::CrossSlot`] for keys in several slots,
    /// [`Error::Server`] for the script's own error, the last status once
    /// the retries stop.
    pub async fn invoke<K: AsRef<[u8]>, A: AsRef<[u8]>>(
        &self,
        script: &Script,
        keys: &[K],
        args: &[A],
    ) -> Result<Value, Error> {
        let result = self.cmd(&script.command(false, keys, args)).await;
        if !is_noscript(&result) {
            return result;
        }
        Counters::bump(&self.inner.counters().noscript_fallbacks);
        tracing::debug!(sha = script.sha(), "NOSCRIPT: sending the script itself");
        self.cmd(&script.command(true, keys, args)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sha_is_what_redis_names_the_script_by() {
        // `redis-cli SCRIPT LOAD "return 1"`.
        assert_eq!(
            Script::new("return 1").sha(),
            "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"
        );
        let s = Script::new("return KEYS[1]");
        let command = s.command(false, &["k"], &["a", "b"]);
        assert_eq!(
            command,
            [
                b"EVALSHA".to_vec(),
                s.sha().as_bytes().to_vec(),
                b"1".to_vec(),
                b"k".to_vec(),
                b"a".to_vec(),
                b"b".to_vec()
            ]
        );
        assert_eq!(
            s.command(true, &["k"], &[] as &[&str])[1],
            b"return KEYS[1]"
        );
    }
}
