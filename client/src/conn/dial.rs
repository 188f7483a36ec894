//! Dialing a node: TCP, TLS over it, the address map, and the handshake
//! a new connection makes before it carries requests (`AUTH` with fresh
//! credentials, `READONLY`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::net::TcpStream;
use tokio_util::either::Either;

use super::connection::{Connection, Stream};
use super::error::ConnError;
use crate::codec::{encode, Frame, Limits};
use crate::seam;
use crate::topology::host_of;

/// Who the client is, for servers with `requirepass` or ACL users.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The ACL user (`None`: the default user, `AUTH <password>`).
    pub username: Option<String>,
    /// The password.
    pub password: String,
}

impl Credentials {
    /// `AUTH [username] password`, encoded.
    pub(crate) fn command(&self) -> Bytes {
        let password = self.password.as_bytes();
        match &self.username {
            Some(user) => encode(&[&[b"AUTH", user.as_bytes(), password]]),
            None => encode(&[&[b"AUTH", password]]),
        }
    }
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

/// Maps an address a node announces to the one to dial (`None`: dial it
/// as announced). See `Builder::map_address`.
pub(crate) type AddressMap = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// How connections are made: limits, credentials, TLS, address mapping.
#[derive(Clone)]
pub(crate) struct ConnOptions {
    pub limits: Limits,
    /// Where each new connection's credentials come from.
    pub credentials: Option<CredentialsSource>,
    /// Every connection speaks TLS with this configuration.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    pub map_address: Option<AddressMap>,
    /// Send `READONLY` first: replicas may serve this client's reads.
    pub readonly: bool,
    /// The most a new connection may take to be ready (TCP, TLS, `AUTH`,
    /// `HELLO`, `READONLY`), whatever the attempt's own time-out.
    pub connect_timeout: Duration,
    /// Speak RESP3 (`HELLO 3`).
    pub resp3: bool,
    /// Track the keys read (`CLIENT TRACKING ON`, RESP3 only) and hand
    /// the invalidations to this sink: the client cache.
    pub tracking: Option<Arc<dyn super::PushSink>>,
}

impl std::fmt::Debug for ConnOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnOptions")
            .field("limits", &self.limits)
            .field("credentials", &self.credentials.is_some())
            .field("tls", &self.tls.is_some())
            .field("map_address", &self.map_address.is_some())
            .field("tracking", &self.tracking.is_some())
            .finish()
    }
}

impl ConnOptions {
    /// Where to dial for a node known as `addr`.
    fn dial_address(&self, addr: &str) -> String {
        self.map_address
            .as_ref()
            .and_then(|map| map(addr))
            .unwrap_or_else(|| addr.to_owned())
    }
}

/// Where every new connection's credentials come from (see
/// `Builder::credentials`): asked once per connection, and by
/// `Client::reauthenticate`.
pub(crate) type CredentialsSource = Arc<
    dyn Fn() -> Pin<Box<dyn Future<Output = Result<Credentials, String>> + Send>> + Send + Sync,
>;

/// Connects to `addr` (or where the address map sends it) within
/// `timeout` and the connect time-out, TLS handshake included, and makes
/// the handshake: `AUTH` when the options carry credentials, `READONLY`
/// for replica reads.
pub(crate) async fn connect(
    addr: &str,
    timeout: Duration,
    options: &ConnOptions,
) -> Result<Connection, ConnError> {
    let timeout = timeout.min(options.connect_timeout);
    let deadline = tokio::time::Instant::now() + timeout;
    let stream = open(addr, timeout, options).await?;
    let conn = Connection::start(stream, options.limits, addr);
    if let Some(source) = &options.credentials {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let credentials = tokio::time::timeout(left, source())
            .await
            .map_err(|_| ConnError::TimedOut)?
            .map_err(|why| ConnError::Rejected(format!("the credentials provider: {why}")))?;
        authenticate(&conn, addr, &credentials, timeout).await?;
    }
    if options.resp3 {
        match conn
            .request(&encode(&[&[b"HELLO", b"3"]]), 1, timeout)
            .await?
            .pop()
        {
            Some(Frame::Map(_)) => {}
            Some(Frame::Error(why)) => {
                return Err(ConnError::Protocol(format!(
                    "{addr} does not speak RESP3 (HELLO 3: {why})"
                )))
            }
            other => {
                return Err(ConnError::Protocol(format!(
                    "{addr} answered HELLO 3 with {other:?}"
                )))
            }
        }
    }
    if let (true, Some(sink)) = (options.resp3, &options.tracking) {
        // Pushes go to the sink before the reply that turns tracking on.
        conn.send_pushes_to(sink.clone());
        expect_ok(&conn, addr, &[b"CLIENT", b"TRACKING", b"ON"], timeout).await?;
    }
    if options.readonly {
        expect_ok(&conn, addr, &[b"READONLY"], timeout).await?;
    }
    tracing::debug!(addr, tls = options.tls.is_some(), "connected");
    Ok(conn)
}

/// `command` on `conn` (to `addr`), answered `+OK`, or a protocol error
/// naming what it answered.
async fn expect_ok(
    conn: &Connection,
    addr: &str,
    command: &[&[u8]],
    timeout: Duration,
) -> Result<(), ConnError> {
    match conn.request(&encode(&[command]), 1, timeout).await?.pop() {
        Some(Frame::SimpleString(ok)) if &ok[..] == b"OK" => Ok(()),
        other => Err(ConnError::Protocol(format!(
            "{addr} answered {} with {other:?}",
            String::from_utf8_lossy(&command.join(&b' '))
        ))),
    }
}

/// `AUTH` with `credentials` on `conn` (to `addr`).
pub(crate) async fn authenticate(
    conn: &Connection,
    addr: &str,
    credentials: &Credentials,
    timeout: Duration,
) -> Result<(), ConnError> {
    match conn
        .request(&credentials.command(), 1, timeout)
        .await?
        .pop()
    {
        Some(Frame::SimpleString(ok)) if &ok[..] == b"OK" => Ok(()),
        Some(Frame::Error(why)) => Err(ConnError::Rejected(format!("{addr}: {why}"))),
        other => Err(ConnError::Protocol(format!(
            "{addr} answered AUTH with {other:?}"
        ))),
    }
}

/// Opens a socket to the node known as `addr` (dialing where the address
/// map sends it) within `timeout`, TLS handshake included.
pub(crate) async fn open(
    addr: &str,
    timeout: Duration,
    options: &ConnOptions,
) -> Result<Stream, ConnError> {
    let deadline = tokio::time::Instant::now() + timeout;
    let dial = options.dial_address(addr);
    let socket = tokio::time::timeout_at(deadline, seam::connect(addr, &dial))
        .await
        .map_err(|_| ConnError::TimedOut)??;
    #[cfg(feature = "sim")]
    {
        // The simulated network (turmoil): no TLS, every stream boxed.
        let _ = options;
        Ok(Either::Right(Box::new(socket)))
    }
    #[cfg(not(feature = "sim"))]
    {
        socket
            .set_nodelay(true)
            .map_err(|e| ConnError::Reset(e.to_string()))?;
        match &options.tls {
            None => Ok(Either::Left(socket)),
            Some(config) => Ok(Either::Right(Box::new(
                tls_handshake(config, addr, &dial, socket, deadline).await?,
            ))),
        }
    }
}

/// The TLS handshake on `stream`, verifying the certificate against the
/// host dialed (`dial`, after any address mapping), by `deadline`.
#[cfg_attr(feature = "sim", allow(dead_code))]
async fn tls_handshake(
    config: &Arc<rustls::ClientConfig>,
    addr: &str,
    dial: &str,
    stream: TcpStream,
    deadline: tokio::time::Instant,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, ConnError> {
    let host = host_of(dial);
    let name = rustls::pki_types::ServerName::try_from(host.to_owned()).map_err(|_| {
        ConnError::Tls(format!(
            "{addr}: {host:?} is not a name a certificate can carry"
        ))
    })?;
    let connector = tokio_rustls::TlsConnector::from(config.clone());
    match tokio::time::timeout_at(deadline, connector.connect(name, stream)).await {
        Ok(Ok(stream)) => Ok(stream),
        Ok(Err(e)) => {
            let hint = if e.to_string().contains("corrupt message") {
                " (the node answered in plain text: is this port TLS?)"
            } else {
                ""
            };
            Err(ConnError::Tls(format!("handshake failed: {e}{hint}")))
        }
        Err(_) => Err(ConnError::Tls(
            "handshake timed out (a plain-text port waits for a command that \
             never comes: does the node speak TLS there?)"
                .into(),
        )),
    }
}
