//! The client's settings: the retry policy (docs/behaviour.md §3), the refresh
//! wait (section 5), time-outs and limits, from the builder and the
//! environment.

use std::time::Duration;

use zaris_core::{
    parse_disable_retries, parse_refresh_wait_ms, parse_request_timeout, RetryPolicy,
    DEFAULT_REFRESH_WAIT, ENV_DISABLE_RETRIES, ENV_REFRESH_WAIT_MS, ENV_REQUEST_TIMEOUT,
};

use std::sync::Arc;

use crate::cache::CacheConfig;
use crate::codec::Limits;
use crate::conn::{AddressMap, ConnOptions, Credentials, CredentialsSource};
use crate::Error;

/// Which nodes serve reads (commands the servers flag read-only).
///
/// A replica serves what it has received from its primary so far:
/// replication is asynchronous, so a read from a replica right after a
/// write may not see it. Reads that must see the latest write belong on
/// the primary ([`ReadFrom::Primary`], the default). Writes always go to
/// the primary, and a retried read (after `MOVED`, a dead replica, a
/// time-out) goes to the primary too.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReadFrom {
    /// Every command to the slot's primary.
    #[default]
    Primary,
    /// Reads to a replica of the slot's primary (round robin), the primary
    /// when it has none that is reachable.
    PreferReplica,
    /// Reads round robin over the primary and its replicas.
    PrimaryAndReplicas,
}

/// The protocol every shared connection speaks (`Builder::protocol`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Protocol {
    /// RESP2: every server speaks it; maps come as flat arrays, doubles as
    /// strings.
    #[default]
    Resp2,
    /// RESP3 (`HELLO 3`, Redis 6+ and Valkey): maps, sets, doubles,
    /// booleans, big numbers and verbatim strings come typed
    /// ([`crate::Value::Map`], ...).
    Resp3,
}

/// A node's health is the core's rule (`zaris_core::health`): requests
/// timed out in a row that open a node (docs/behaviour.md §5, "Opened
/// nodes"), and the reconnect backoff's base and cap.
pub use zaris_core::{OPEN_AFTER_TIMEOUTS, RECONNECT_BACKOFF_BASE, RECONNECT_BACKOFF_CAP};

/// The poll interval of docs/behaviour.md §5: a lost push heals within it.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(10);
/// A refresh within this long of the last one is a no-op (docs/behaviour.md §5).
pub const REFRESH_DEBOUNCE: Duration = zaris_core::REFRESH_MIN_INTERVAL;
/// How long one attempt may wait for a connection and its reply.
pub const DEFAULT_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a new connection may take to be ready (TCP, TLS, `AUTH`):
/// far above a handshake's milliseconds, far below the attempt time-out,
/// so a node whose host drops connection attempts (no refusal, no answer)
/// costs an attempt 2 s, not 5.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// The largest reply accepted (Redis's own `proto-max-bulk-len`).
pub const DEFAULT_MAX_REPLY_BYTES: usize = 512 * 1024 * 1024;
/// Requests one node may hold unanswered on its shared connection (the
/// in-flight limit valkey-glide applies per client, applied here per node):
/// far above what a healthy node holds at once, so it binds only on a node
/// that has stopped answering.
pub const DEFAULT_MAX_IN_FLIGHT_PER_NODE: usize = 1000;

/// The most permits a semaphore holds (tokio's limit, far past any use).
const MAX_PERMITS: usize = 1 << 28;

/// Writes that wait for replicas (`WAIT`) before they are acknowledged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Durability {
    /// Replicas that must acknowledge each write.
    pub replicas: u32,
    /// How long the primary waits for them.
    pub timeout: Duration,
}

/// The resolved settings.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub policy: RetryPolicy,
    pub refresh_wait: Duration,
    pub poll_interval: Duration,
    pub attempt_timeout: Duration,
    pub conn: ConnOptions,
    pub durability: Option<Durability>,
    pub read_from: ReadFrom,
    pub refresh_min_interval: Duration,
    pub max_in_flight_per_node: usize,
    /// The client cache (`Builder::client_cache`).
    pub cache: Option<CacheConfig>,
    /// Commands the table is taken not to know (`Builder::learn_instead`).
    pub learn_instead: Vec<Vec<u8>>,
}

impl Config {
    /// The deadline of a call that starts at `started` (none without a
    /// request time-out).
    pub(crate) fn deadline_from(
        &self,
        started: tokio::time::Instant,
    ) -> Option<tokio::time::Instant> {
        self.policy.deadline.map(|d| started + d)
    }
}

type EnvLookup = Box<dyn Fn(&str) -> Result<Option<String>, String> + Send + Sync>;

/// Settings for [`crate::Client`]. Explicit settings win over the
/// environment, except `ZARIS_DISABLE_RETRIES=true`, which always makes the
/// budget one attempt (it exists to observe raw statuses).
pub struct Builder {
    max_attempts: Option<u32>,
    backoff: Option<Duration>,
    request_timeout: Option<Option<Duration>>,
    refresh_wait: Option<Duration>,
    poll_interval: Duration,
    attempt_timeout: Duration,
    max_reply_bytes: usize,
    durability: Option<Durability>,
    credentials: Option<CredentialsSource>,
    tls: Option<rustls::ClientConfig>,
    map_address: Option<AddressMap>,
    read_from: ReadFrom,
    learn_instead: Vec<Vec<u8>>,
    refresh_min_interval: Duration,
    max_in_flight_per_node: usize,
    connect_timeout: Duration,
    /// `None`: not asked for (RESP2, or RESP3 with the cache).
    protocol: Option<Protocol>,
    cache: Option<CacheConfig>,
    env: EnvLookup,
}

impl Default for Builder {
    fn default() -> Self {
        Self {
            max_attempts: None,
            backoff: None,
            request_timeout: None,
            refresh_wait: None,
            poll_interval: DEFAULT_POLL_INTERVAL,
            attempt_timeout: DEFAULT_ATTEMPT_TIMEOUT,
            max_reply_bytes: DEFAULT_MAX_REPLY_BYTES,
            durability: None,
            credentials: None,
            tls: None,
            map_address: None,
            read_from: ReadFrom::Primary,
            learn_instead: Vec::new(),
            refresh_min_interval: REFRESH_DEBOUNCE,
            max_in_flight_per_node: DEFAULT_MAX_IN_FLIGHT_PER_NODE,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            protocol: None,
            cache: None,
            env: Box::new(|name| match std::env::var(name) {
                Ok(value) => Ok(Some(value)),
                Err(std::env::VarError::NotPresent) => Ok(None),
                Err(std::env::VarError::NotUnicode(_)) => Err(format!("{name} is not valid UTF-8")),
            }),
        }
    }
}

impl Builder {
    /// Attempts per request, the first included (default 3).
    #[must_use]
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = Some(attempts);
        self
    }

    /// The backoff unit: attempt `n` is followed by `n * backoff` (default 100 ms).
    #[must_use]
    pub fn backoff(mut self, backoff: Duration) -> Self {
        self.backoff = Some(backoff);
        self
    }

    /// The wall-clock bound of one request, retries included (`None`: no
    /// bound). Default: `ZARIS_REQUEST_TIMEOUT`, else 60 s.
    #[must_use]
    pub fn request_timeout(mut self, deadline: Option<Duration>) -> Self {
        self.request_timeout = Some(deadline);
        self
    }

    /// How long a request waits for a shared map refresh. Default:
    /// `ZARIS_CLIENT_MAP_REFRESH_WAIT_MS`, else 15 s.
    #[must_use]
    pub fn refresh_wait(mut self, wait: Duration) -> Self {
        self.refresh_wait = Some(wait);
        self
    }

    /// How often the whole map is refreshed regardless (default 10 s).
    #[must_use]
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval;
        self
    }

    /// How long one attempt may take to connect and get its reply (default 5 s).
    #[must_use]
    pub fn attempt_timeout(mut self, timeout: Duration) -> Self {
        self.attempt_timeout = timeout;
        self
    }

    /// The most a new connection may take to be ready: TCP connect, TLS
    /// handshake, `AUTH`, `READONLY` (default
    /// [`DEFAULT_CONNECT_TIMEOUT`], 2 s; never more than the attempt
    /// time-out, which bounds the whole attempt). A node whose host drops
    /// connection attempts costs this, not the attempt time-out.
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// At most `n` requests in flight on one node's shared connection
    /// (default [`DEFAULT_MAX_IN_FLIGHT_PER_NODE`], 1000). A node that
    /// stops answering (frozen, black-holed) holds no more than that;
    /// callers for its slots then wait, unsent, for room, for the map to
    /// move their slot, or for their attempt's time-out, and callers for
    /// other nodes are not slowed. A pipeline larger than `n` goes when the
    /// node holds nothing else. Blocking commands, on connections of their
    /// own, do not count.
    #[must_use]
    pub fn max_in_flight_per_node(mut self, n: usize) -> Self {
        self.max_in_flight_per_node = n;
        self
    }

    /// The largest reply accepted (default 512 MiB); a larger one is
    /// [`Error::ReplyTooLarge`] and closes that connection.
    #[must_use]
    pub fn max_reply_bytes(mut self, limit: usize) -> Self {
        self.max_reply_bytes = limit;
        self
    }

    /// Acknowledge writes only once `replicas` replicas have them (`WAIT`),
    /// so a failover cannot lose an acknowledged write.
    #[must_use]
    pub fn durable_writes(mut self, replicas: u32, timeout: Duration) -> Self {
        self.durability = Some(Durability { replicas, timeout });
        self
    }

    /// The protocol of every shared and dedicated connection: RESP2 (the
    /// default) or RESP3, asked for with `HELLO 3` right after `AUTH`. A
    /// node that does not speak RESP3 fails the connection as
    /// [`Error::Protocol`]. Subscriptions speak RESP2 whatever this says
    /// (their messages are the same either way).
    #[must_use]
    pub fn protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = Some(protocol);
        self
    }

    /// Serves reads from memory (docs/behaviour.md §9): [`Client::get`],
    /// each slot's part of [`Client::mget`], and through [`Client::cmd`]
    /// the read-only single-key commands whose reply is a function of the
    /// key (`GET`, `HGET`, `HGETALL`, `LRANGE`, `SMEMBERS`, `ZRANGE`,
    /// `STRLEN`, `TYPE`, ...; `TTL` and `PTTL` count down from when they
    /// were stored). A read that starts more than `lease` after a write
    /// was acknowledged, to any client, sees it or a later one, through
    /// failovers, migrations, kills, freezes and partitions.
    ///
    /// Implies RESP3 (every connection tracks the keys it reads,
    /// `CLIENT TRACKING ON`); asking for RESP2 as well, or for replica
    /// reads, is [`Error::Config`] at `connect`.
    ///
    /// [`Client::get`]: crate::Client::get
    /// [`Client::mget`]: crate::Client::mget
    /// [`Client::cmd`]: crate::Client::cmd
    #[must_use]
    pub fn client_cache(mut self, cache: CacheConfig) -> Self {
        self.cache = Some(cache);
        self
    }

    /// Authenticates every connection (`AUTH [username] password`), for
    /// servers with `requirepass` (`username: None`) or ACL users.
    #[must_use]
    pub fn auth(self, username: Option<&str>, password: &str) -> Self {
        let credentials = Credentials {
            username: username.map(str::to_owned),
            password: password.to_owned(),
        };
        self.credentials(move || std::future::ready(Ok::<_, String>(credentials.clone())))
    }

    /// Authenticates every connection with what `provider` returns, asked
    /// anew for every new connection and by
    /// [`Client::reauthenticate`](crate::Client::reauthenticate): for
    /// credentials that rotate (IAM tokens, which expire every 15 minutes,
    /// or a vault's leases). The provider may be async; an `Err` it returns
    /// fails the connection as [`Error::Auth`] naming the node, and is
    /// never retried blindly. The last call wins over [`Builder::auth`].
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), zaris_client::Error> {
    /// use zaris_client::{Client, Credentials};
    /// let client = Client::builder()
    ///     .credentials(|| async {
    ///         // fetch a fresh token here
    ///         Ok::<_, std::io::Error>(Credentials {
    ///             username: Some("app".into()),
    ///             password: "token".into(),
    ///         })
    ///     })
    ///     .connect(&["127.0.0.1:7000"])
    ///     .await?;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn credentials<F, Fut, E>(mut self, provider: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<Credentials, E>> + Send + 'static,
        E: std::fmt::Display,
    {
        let provider = Arc::new(provider);
        self.credentials = Some(Arc::new(move || {
            let fetch = provider();
            Box::pin(async move { fetch.await.map_err(|e| e.to_string()) })
        }));
        self
    }

    /// Speaks TLS to every node, with `config`: the roots to verify the
    /// nodes' certificates against (a custom CA), and a client certificate
    /// for mutual TLS, are set there. Each node's certificate is verified
    /// for the host dialed (after [`Builder::map_address`]). Without this
    /// setting, `rediss://` seeds turn TLS on with the Mozilla roots
    /// (`webpki-roots`).
    ///
    /// ```no_run
    /// # async fn demo(ca_pem: &[u8]) -> Result<(), Box<dyn std::error::Error>> {
    /// use zaris_client::{rustls, Client};
    ///
    /// let mut roots = rustls::RootCertStore::empty();
    /// for cert in rustls::pki_types::pem::PemObject::pem_slice_iter(ca_pem) {
    ///     roots.add(cert?)?;
    /// }
    /// let tls = rustls::ClientConfig::builder_with_provider(
    ///     rustls::crypto::ring::default_provider().into(),
    /// )
    /// .with_safe_default_protocol_versions()?
    /// .with_root_certificates(roots)
    /// .with_no_client_auth();
    /// let client = Client::builder().tls(tls).connect(&["rediss://redis.example.com:6380"]).await?;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn tls(mut self, config: rustls::ClientConfig) -> Self {
        self.tls = Some(config);
        self
    }

    /// Maps the address a node announces (`host:port`, as the cluster map
    /// names it) to the address to dial; `None` dials it as announced.
    /// For clusters behind NAT or in containers, whose nodes announce
    /// addresses (or `cluster-announce-hostname` names) only they can
    /// reach.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), zaris_client::Error> {
    /// let client = zaris_client::Client::builder()
    ///     .map_address(|announced| match announced {
    ///         "redis-0.cluster.internal:6379" => Some("203.0.113.7:16379".to_owned()),
    ///         _ => None,
    ///     })
    ///     .connect(&["203.0.113.7:16379"])
    ///     .await?;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn map_address(
        mut self,
        map: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.map_address = Some(Arc::new(map));
        self
    }

    /// The least time between two map refreshes, whatever asks for them
    /// (default [`REFRESH_DEBOUNCE`], 500 ms): a request within it of the
    /// last refresh uses the map as it is (`Stats::refreshes_debounced`).
    #[must_use]
    pub fn refresh_min_interval(mut self, interval: Duration) -> Self {
        self.refresh_min_interval = interval;
        self
    }

    /// Which nodes serve reads (default [`ReadFrom::Primary`]). With
    /// replicas, every connection sends `READONLY` first.
    #[must_use]
    pub fn read_from(mut self, policy: ReadFrom) -> Self {
        self.read_from = policy;
        self
    }

    /// Commands (lowercase names) to learn from the servers as if the
    /// command table did not have them: what a table that lacks a command
    /// the servers have (a newer server's, a module's) does, tested on the
    /// servers here.
    #[doc(hidden)]
    #[must_use]
    pub fn learn_instead(mut self, names: &[&str]) -> Self {
        self.learn_instead = names
            .iter()
            .map(|n| n.to_ascii_lowercase().into_bytes())
            .collect();
        self
    }

    /// Reads settings from `lookup` instead of the process environment
    /// (tests, embedding).
    #[must_use]
    pub fn env(mut self, lookup: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        self.env = Box::new(move |name| Ok(lookup(name)));
        self
    }

    /// The seeds' addresses and the settings, checked (the TLS scheme of
    /// the seeds and the configuration agree): what `Builder::connect`
    /// (`client.rs`) connects with.
    pub(crate) fn settle<S: AsRef<str>>(
        mut self,
        seeds: &[S],
    ) -> Result<(Vec<String>, Config), Error> {
        let (seeds, scheme) = parse_seeds(seeds)?;
        match (scheme, self.tls.is_some()) {
            (Some(Scheme::Tls), false) => self.tls = Some(default_tls()?),
            (Some(Scheme::Plain), true) => {
                return Err(Error::Config(
                    "redis:// seeds with a TLS configuration: use rediss:// (or host:port)".into(),
                ))
            }
            _ => {}
        }
        Ok((seeds, self.resolve()?))
    }

    pub(crate) fn resolve(self) -> Result<Config, Error> {
        let env = |name: &str| (self.env)(name).map_err(Error::Config);
        let mut policy = RetryPolicy::DEFAULT;
        if let Some(text) = env(ENV_REQUEST_TIMEOUT)? {
            policy.deadline = parse_request_timeout(&text)?;
        }
        let disable_retries = match env(ENV_DISABLE_RETRIES)? {
            Some(text) => parse_disable_retries(&text)?,
            None => false,
        };
        let env_refresh_wait = env(ENV_REFRESH_WAIT_MS)?
            .map(|t| parse_refresh_wait_ms(&t))
            .transpose()?;
        if let Some(attempts) = self.max_attempts {
            policy.max_attempts = attempts;
        }
        if let Some(backoff) = self.backoff {
            policy.backoff = backoff;
        }
        if let Some(deadline) = self.request_timeout {
            policy.deadline = deadline;
        }
        if disable_retries {
            policy = policy.without_retries();
        }
        if self.attempt_timeout.is_zero() {
            return Err(Error::Config(
                "the attempt time-out must be positive".into(),
            ));
        }
        if self.poll_interval.is_zero() {
            return Err(Error::Config("the poll interval must be positive".into()));
        }
        if self.connect_timeout.is_zero() {
            return Err(Error::Config(
                "the connect time-out must be positive".into(),
            ));
        }
        let protocol = match (self.protocol, self.cache) {
            (Some(Protocol::Resp2), Some(_)) => {
                return Err(Error::Config(
                    "the client cache needs RESP3 (its invalidations are RESP3 pushes): \
                     drop protocol(Protocol::Resp2)"
                        .into(),
                ))
            }
            (_, Some(_)) if self.read_from != ReadFrom::Primary => {
                return Err(Error::Config(
                    "the client cache reads from masters (their leases are what bound its \
                     staleness): drop read_from, or the cache"
                        .into(),
                ))
            }
            (_, Some(cache)) if cache.lease.is_zero() || cache.max_bytes == 0 => {
                return Err(Error::Config(
                    "the client cache needs a positive lease and max_bytes".into(),
                ))
            }
            (Some(p), _) => p,
            (None, Some(_)) => Protocol::Resp3,
            (None, None) => Protocol::Resp2,
        };
        if self.max_in_flight_per_node == 0 {
            return Err(Error::Config(
                "max_in_flight_per_node must be at least 1".into(),
            ));
        }
        Ok(Config {
            policy,
            refresh_wait: self
                .refresh_wait
                .or(env_refresh_wait)
                .unwrap_or(DEFAULT_REFRESH_WAIT),
            poll_interval: self.poll_interval,
            attempt_timeout: self.attempt_timeout,
            conn: ConnOptions {
                limits: Limits {
                    max_reply_bytes: self.max_reply_bytes.max(64),
                },
                credentials: self.credentials,
                tls: self.tls.map(Arc::new),
                map_address: self.map_address,
                readonly: self.read_from != ReadFrom::Primary,
                connect_timeout: self.connect_timeout,
                resp3: protocol == Protocol::Resp3,
                // Set by the client, whose cache the sink is.
                tracking: None,
            },
            durability: self.durability,
            read_from: self.read_from,
            learn_instead: self.learn_instead,
            refresh_min_interval: self.refresh_min_interval,
            max_in_flight_per_node: self.max_in_flight_per_node.min(MAX_PERMITS),
            cache: self.cache,
        })
    }
}

/// How seeds name their transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scheme {
    Plain,
    Tls,
}

/// The seeds as `host:port`, and the scheme they named (`None`: bare
/// `host:port`, the builder decides). Mixed schemes are refused.
fn parse_seeds<S: AsRef<str>>(seeds: &[S]) -> Result<(Vec<String>, Option<Scheme>), Error> {
    let mut scheme = None;
    let mut out = Vec::with_capacity(seeds.len());
    for seed in seeds {
        let seed = seed.as_ref();
        let (this, rest) = if let Some(rest) = seed.strip_prefix("rediss://") {
            (Some(Scheme::Tls), rest)
        } else if let Some(rest) = seed.strip_prefix("redis://") {
            (Some(Scheme::Plain), rest)
        } else {
            (None, seed)
        };
        let addr = rest.trim_end_matches('/');
        if addr.contains('@') {
            return Err(Error::Config(format!(
                "seed {seed:?}: credentials go in Builder::auth, not in the address"
            )));
        }
        let port = addr
            .rsplit_once(':')
            .and_then(|(host, port)| (!host.is_empty()).then_some(port));
        if port.and_then(|p| p.parse::<u16>().ok()).is_none() {
            return Err(Error::Config(format!("seed {seed:?} is not host:port")));
        }
        if this.is_some() && scheme.is_some() && this != scheme {
            return Err(Error::Config(
                "seeds mix redis:// and rediss://: a cluster is reached one way".into(),
            ));
        }
        scheme = scheme.or(this);
        out.push(addr.to_owned());
    }
    Ok((out, scheme))
}

/// TLS for `rediss://` seeds given no configuration: certificates verified
/// against the Mozilla roots, no client certificate.
fn default_tls() -> Result<rustls::ClientConfig, Error> {
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    Ok(rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| Error::Config(format!("TLS: {e}")))?
    .with_root_certificates(roots)
    .with_no_client_auth())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_env(vars: &'static [(&'static str, &'static str)]) -> Builder {
        Builder::default().env(move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn defaults_are_the_spec() {
        let config = with_env(&[]).resolve().unwrap();
        assert_eq!(config.policy, RetryPolicy::DEFAULT);
        assert_eq!(config.policy.max_attempts, 3);
        assert_eq!(config.policy.backoff, Duration::from_millis(100));
        assert_eq!(config.policy.deadline, Some(Duration::from_secs(60)));
        assert_eq!(config.refresh_wait, Duration::from_millis(15_000));
        assert_eq!(config.poll_interval, Duration::from_secs(10));
    }

    #[test]
    fn environment_variables() {
        let config = with_env(&[
            ("ZARIS_REQUEST_TIMEOUT", "infinite"),
            ("ZARIS_DISABLE_RETRIES", "true"),
            ("ZARIS_CLIENT_MAP_REFRESH_WAIT_MS", "250"),
        ])
        .resolve()
        .unwrap();
        assert_eq!(config.policy.deadline, None);
        assert_eq!(config.policy.max_attempts, 1);
        assert_eq!(config.refresh_wait, Duration::from_millis(250));
        let config = with_env(&[("ZARIS_REQUEST_TIMEOUT", "2.5")])
            .resolve()
            .unwrap();
        assert_eq!(config.policy.deadline, Some(Duration::from_millis(2500)));
    }

    #[test]
    fn explicit_settings_win_but_disabled_retries_always_do() {
        let config = with_env(&[
            ("ZARIS_REQUEST_TIMEOUT", "5"),
            ("ZARIS_CLIENT_MAP_REFRESH_WAIT_MS", "250"),
        ])
        .request_timeout(Some(Duration::from_secs(9)))
        .refresh_wait(Duration::from_secs(1))
        .max_attempts(7)
        .resolve()
        .unwrap();
        assert_eq!(config.policy.deadline, Some(Duration::from_secs(9)));
        assert_eq!(config.refresh_wait, Duration::from_secs(1));
        assert_eq!(config.policy.max_attempts, 7);
        let config = with_env(&[("ZARIS_DISABLE_RETRIES", "1")])
            .max_attempts(7)
            .resolve()
            .unwrap();
        assert_eq!(config.policy.max_attempts, 1);
    }

    #[test]
    fn seeds_name_their_transport_once() {
        let (seeds, scheme) = parse_seeds(&["rediss://a:1", "rediss://b:2/", "c:3"]).unwrap();
        assert_eq!(seeds, ["a:1", "b:2", "c:3"]);
        assert_eq!(scheme, Some(Scheme::Tls));
        assert_eq!(parse_seeds(&["[::1]:7000"]).unwrap().1, None);
        assert_eq!(
            parse_seeds(&["redis://a:1"]).unwrap(),
            (vec!["a:1".to_owned()], Some(Scheme::Plain))
        );
        for (seeds, message) in [
            (
                &["redis://a:1", "rediss://b:2"][..],
                "invalid setting: seeds mix redis:// and rediss://: a cluster is reached one way",
            ),
            (&["rediss://a"][..], "invalid setting: seed \"rediss://a\" is not host:port"),
            (
                &["rediss://u:p@a:1"][..],
                "invalid setting: seed \"rediss://u:p@a:1\": credentials go in Builder::auth, not in the address",
            ),
            (&[":7000"][..], "invalid setting: seed \":7000\" is not host:port"),
        ] {
            assert_eq!(parse_seeds(seeds).unwrap_err().to_string(), message);
        }
    }

    #[test]
    fn bad_values_are_errors_not_defaults() {
        for (var, value, message) in [
            (
                "ZARIS_REQUEST_TIMEOUT",
                "soon",
                "ZARIS_REQUEST_TIMEOUT must be a positive number of seconds or `infinite`",
            ),
            (
                "ZARIS_REQUEST_TIMEOUT",
                "0",
                "ZARIS_REQUEST_TIMEOUT must be a positive number of seconds or `infinite`",
            ),
            (
                "ZARIS_DISABLE_RETRIES",
                "yes",
                "ZARIS_DISABLE_RETRIES must be `true` or `false`",
            ),
            (
                "ZARIS_CLIENT_MAP_REFRESH_WAIT_MS",
                "1.5",
                "ZARIS_CLIENT_MAP_REFRESH_WAIT_MS must be a whole number of milliseconds",
            ),
        ] {
            let err = Builder::default()
                .env(move |name| (name == var).then(|| value.to_owned()))
                .resolve()
                .unwrap_err();
            assert_eq!(err, Error::Config(message.into()), "{var}={value}");
        }
    }
}
