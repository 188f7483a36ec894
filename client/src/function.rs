//! Functions that survive churn, as scripts do: a [`Library`] registered
//! with the client by its code, `FCALL`/`FCALL_RO` to the owner of the
//! keys, and, when that node does not have the function (a new master
//! after a scale-out, a slot moved to a node added later: functions are
//! not copied to a new shard, redis#11780, valkey#2005), the library
//! loaded on every master (`FUNCTION LOAD REPLACE`, which the command
//! table fans out) and the call made once more. That is safe: "Function
//! not found" means the call did not run. Nothing is loaded ahead of time.

use std::sync::Arc;

use crate::script::with_numkeys;
use crate::stats::Counters;
use crate::{Client, Error, Value};

/// A Redis 7 function library, by its code (`#!lua name=...` and the
/// `redis.register_function` calls).
///
/// ```no_run
/// # async fn demo(client: zaris_client::Client) -> Result<(), zaris_client::Error> {
/// use zaris_client::Library;
///
/// let counters = Library::new(
///     "#!lua name=counters\n\
///      redis.register_function('add', function(keys, args)\n\
///        return redis.call('INCRBY', keys[1], args[1]) end)",
/// );
/// let total = client.fcall(&counters, "add", &["visits:{home}"], &["3"]).await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Library {
    code: Arc<str>,
    name: Arc<str>,
}

impl Library {
    /// The library whose code is `code`; its name is read from the code's
    /// first line (`#!lua name=NAME`; empty when it has none, and the
    /// server will refuse it when loading).
    #[must_use]
    pub fn new(code: impl Into<String>) -> Self {
        let code: String = code.into();
        let name = code
            .lines()
            .next()
            .and_then(|first| first.strip_prefix("#!"))
            .and_then(|shebang| {
                shebang
                    .split_whitespace()
                    .find_map(|field| field.strip_prefix("name="))
            })
            .unwrap_or_default()
            .to_owned();
        Self {
            code: code.into(),
            name: name.into(),
        }
    }

    /// Its name, as its first line gives it.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its code.
    #[must_use]
    pub fn code(&self) -> &str {
        &self.code
    }
}

/// `FCALL function numkeys keys.. args..` (`FCALL_RO` when `read_only`).
fn call<K: AsRef<[u8]>, A: AsRef<[u8]>>(
    read_only: bool,
    function: &str,
    keys: &[K],
    args: &[A],
) -> Vec<Vec<u8>> {
    let name: &[u8] = if read_only { b"FCALL_RO" } else { b"FCALL" };
    with_numkeys(name, function.as_bytes(), keys, args)
}

/// Whether a server error says the node has no such function (Redis 7
/// and Valkey 8: `ERR Function not found`).
fn is_not_found(result: &Result<Value, Error>) -> bool {
    matches!(result, Err(Error::Server(message)) if message.contains("Function not found"))
}

impl Client {
    /// Calls `function` of `library` with `keys` (one slot) and `args` on
    /// the keys' owner (`FCALL`). A node that does not have it gets the
    /// library (`FUNCTION LOAD REPLACE` on every master) and the call once
    /// more; the loads are counted ([`crate::Stats::function_loads`]).
    /// Every retry and refresh rule of [`Client::cmd`] holds.
    ///
    /// # Errors
    /// As [`Client::cmd`]: [`Error::CrossSlot`] for keys in several slots,
    /// [`Error::Server`] for the function's own error (or the load's: a
    /// library the server refuses), the last status once the retries stop.
    pub async fn fcall<K: AsRef<[u8]>, A: AsRef<[u8]>>(
        &self,
        library: &Library,
        function: &str,
        keys: &[K],
        args: &[A],
    ) -> Result<Value, Error> {
        self.call_function(library, &call(false, function, keys, args))
            .await
    }

    /// [`Client::fcall`] for a function registered with the `no-writes`
    /// flag (`FCALL_RO`): a read, which a client reading from replicas
    /// may send to one.
    ///
    /// # Errors
    /// As [`Client::fcall`].
    pub async fn fcall_ro<K: AsRef<[u8]>, A: AsRef<[u8]>>(
        &self,
        library: &Library,
        function: &str,
        keys: &[K],
        args: &[A],
    ) -> Result<Value, Error> {
        self.call_function(library, &call(true, function, keys, args))
            .await
    }

    async fn call_function(&self, library: &Library, command: &[Vec<u8>]) -> Result<Value, Error> {
        let args: Vec<&[u8]> = command.iter().map(Vec::as_slice).collect();
        let (result, by) = self.inner.cmd_answered_by(&args).await;
        if !is_not_found(&result) {
            return result;
        }
        Counters::bump(&self.inner.counters().function_loads);
        tracing::debug!(
            library = library.name(),
            node = ?by.as_ref().map(|n| n.addr.to_string()),
            "function not found: loading the library"
        );
        // On every master of the map (the owners to come of other slots),
        // each on its own: a node the map still names but that stepped
        // down (READONLY) fails its load alone. Then on the node that
        // lacked it, unless loaded already: mid-migration that is the
        // target an `ASK` reached, which the map does not name yet.
        let load: [&[u8]; 4] = [b"FUNCTION", b"LOAD", b"REPLACE", library.code().as_bytes()];
        let loaded = self.cmd_each_master(&load).await?;
        let mut refused = None;
        for (addr, answer) in &loaded {
            if let Err(e) = answer {
                tracing::debug!(addr, error = %e, "the library was not loaded there");
                refused.get_or_insert_with(|| e.clone());
            }
        }
        if let Some(node) = by {
            let done = loaded
                .iter()
                .any(|(addr, answer)| *addr == *node.addr && answer.is_ok());
            if !done {
                self.cmd_on_node(&node.addr, &load).await?;
            }
        }
        let again = self.cmd(command).await;
        match (again, refused) {
            // Still not there: why the load failed says more.
            (again, Some(refused)) if is_not_found(&again) => Err(refused),
            (again, _) => again,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_library_is_named_by_its_first_line() {
        let lib =
            Library::new("#!lua name=mylib\nredis.register_function('f', function() return 1 end)");
        assert_eq!(lib.name(), "mylib");
        assert_eq!(Library::new("#!lua engine=x name=other\n").name(), "other");
        // No shebang, no name: the server says what is wrong when loading.
        assert_eq!(Library::new("return 1").name(), "");
        assert_eq!(Library::new("").name(), "");
        assert_eq!(
            call(true, "f", &["k"], &["a"]),
            [
                b"FCALL_RO".to_vec(),
                b"f".to_vec(),
                b"1".to_vec(),
                b"k".to_vec(),
                b"a".to_vec()
            ]
        );
        assert!(is_not_found(&Err(Error::Server(
            "ERR Function not found".into()
        ))));
        assert!(!is_not_found(&Err(Error::Server(
            "ERR Error running script".into()
        ))));
        assert!(!is_not_found(&Ok(Value::Nil)));
    }
}
