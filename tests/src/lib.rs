//! Real servers for Zaris's integration tests.
//!
//! [`RedisNode::start_cluster_node`] runs a `redis-server` (or `valkey-server`) on a free
//! 127.0.0.1 port in a temporary directory and kills it when dropped, or
//! when the thread that started it dies (`PR_SET_PDEATHSIG`), so no test
//! leaves a server behind. [`RespConn`] is a small blocking RESP2 connection
//! over `redis-protocol`'s codec, for driving and inspecting those servers.
//!
//! The server binary is `$ZARIS_REDIS_SERVER`, or `redis-server`.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

pub mod cluster;
pub mod keys;
pub mod proxy;
pub mod scenario;
pub mod soak;
pub mod tls;
use std::time::{Duration, Instant};

use redis_protocol::resp2::decode::decode;
use redis_protocol::resp2::encode::encode;
use redis_protocol::resp2::types::{OwnedFrame, Resp2Frame};

pub use redis_protocol::resp2::types::OwnedFrame as Frame;

/// How long a server gets to start answering `PING`.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// Ports tried for a server whose free port another process took first.
const PORT_TRIES: u32 = 5;

/// I/O bound on every test connection, so a wedged server fails a test
/// instead of hanging it.
const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// The runtime the client tests drive `zaris-client` with: two workers,
/// like the machines they run on. `ZARIS_TEST_LOG` (a `tracing` filter,
/// such as `zaris_client=debug`) shows what the client did.
///
/// # Panics
/// The runtime cannot be built.
#[must_use]
pub fn runtime() -> tokio::runtime::Runtime {
    if let Ok(filter) = std::env::var("ZARIS_TEST_LOG") {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_test_writer()
            .try_init();
    }
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// An environment with no variables set, for `Builder::env`: the client
/// tests run with the defaults of docs/behaviour.md §3, whatever this
/// process's environment holds.
#[must_use]
pub fn no_env(_: &str) -> Option<String> {
    None
}

/// The one way a test starts a client's settings: the defaults of
/// docs/behaviour.md §3, read from no environment ([`no_env`]). A client
/// on a test cluster comes from [`cluster::Cluster::client`]; this is for
/// tests of connecting itself (seeds, passwords, TLS, hostnames).
#[must_use]
pub fn builder() -> zaris_client::Builder {
    zaris_client::Client::builder().env(no_env)
}

/// A client's settings that ride out churn in these tests: 500 ms
/// attempts, 50 ms between them, 50 of them, a 20 s deadline, on top of
/// `builder`'s. Tests add what they measure: `cluster.client(&rt, patient)`.
#[must_use]
pub fn patient(builder: zaris_client::Builder) -> zaris_client::Builder {
    builder
        .attempt_timeout(std::time::Duration::from_millis(500))
        .backoff(std::time::Duration::from_millis(50))
        .max_attempts(50)
        .request_timeout(Some(std::time::Duration::from_secs(20)))
}

/// The least a healthy median counts as when a test holds a loaded one
/// to twice it. A lone reader's median GET on a 2-core host swings
/// between 25 and 110 µs with the tests run beside it (how soon an idle
/// core wakes, not the client), which alone broke a bare 2x; a request
/// held up behind a frozen or black-holed node waits for an attempt
/// time-out, hundreds of milliseconds.
pub const PACE_FLOOR: Duration = Duration::from_micros(250);

/// Whether a median under load (`loaded`) keeps within twice the healthy
/// one (counted as at least [`PACE_FLOOR`]).
#[must_use]
pub fn keeps_pace(loaded: Duration, healthy: Duration) -> bool {
    loaded <= healthy.max(PACE_FLOOR) * 2
}

/// The server binary to run.
#[must_use]
pub fn server_binary() -> String {
    std::env::var("ZARIS_REDIS_SERVER").unwrap_or_else(|_| "redis-server".to_owned())
}

/// Whether `binary` can be run here (for tests of optional servers, such as
/// Valkey).
#[must_use]
pub fn binary_available(binary: &str) -> bool {
    Command::new(binary)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The servers the cluster tests run against: `redis-server` (or
/// `$ZARIS_REDIS_SERVER`), and `valkey-server` where it is installed. With
/// `ZARIS_REQUIRE_VALKEY=1` (CI), a missing Valkey fails instead of being
/// skipped.
#[must_use]
pub fn servers_under_test() -> Vec<String> {
    let mut servers = vec![server_binary()];
    if binary_available("valkey-server") {
        servers.push("valkey-server".to_owned());
    } else {
        let required = std::env::var("ZARIS_REQUIRE_VALKEY").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "ZARIS_REQUIRE_VALKEY=1 but valkey-server is not installed"
        );
        eprintln!("valkey-server not installed: Valkey runs skipped");
    }
    servers
}

/// Runs `test` once for each server under test ([`servers_under_test`]),
/// announcing each on standard error, so that a failure's output says
/// which server it met.
pub fn each_server(mut test: impl FnMut(&str)) {
    for server in servers_under_test() {
        eprintln!("==> on {server}");
        test(&server);
    }
}

/// How a node is reached: plain text, or TLS only.
#[derive(Clone, Default)]
pub enum Transport {
    /// A plain-text port.
    #[default]
    Plain,
    /// A TLS port and no plain-text one; nodes talk TLS to each other.
    Tls {
        /// The certificates.
        pki: std::sync::Arc<tls::Pki>,
        /// The certificate the node presents.
        cert: tls::ServerCert,
        /// Whether clients must present a certificate.
        mutual: bool,
    },
}

impl Transport {
    /// TLS with a valid certificate, client certificates optional.
    #[must_use]
    pub fn tls(pki: &std::sync::Arc<tls::Pki>) -> Self {
        Transport::Tls {
            pki: pki.clone(),
            cert: tls::ServerCert::Valid,
            mutual: false,
        }
    }

    fn port_args(&self, port: u16) -> Vec<String> {
        match self {
            Transport::Plain => vec!["--port".into(), port.to_string()],
            Transport::Tls { pki, cert, mutual } => pki.server_args(port, *cert, *mutual),
        }
    }
}

/// A running server process, killed on drop.
pub struct RedisNode {
    port: u16,
    child: Child,
    dir: tempfile::TempDir,
    binary: String,
    args: Vec<String>,
    transport: Transport,
    running: bool,
    frozen: bool,
}

/// Runs `binary` in cluster mode on `port` in `dir`, killed with its parent
/// thread.
fn spawn(
    binary: &str,
    dir: &std::path::Path,
    port: u16,
    transport: &Transport,
    extra: &[String],
) -> io::Result<Child> {
    let mut cmd = Command::new(binary);
    cmd.current_dir(dir)
        .args(["--bind", "127.0.0.1"])
        .args(transport.port_args(port))
        .args([
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
        ])
        .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
        .args(["--logfile", "server.log"])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: prctl(PR_SET_PDEATHSIG) is async-signal-safe and touches
    // no memory of the parent; it makes the kernel kill the server when
    // the thread that started it exits, even if the test is killed.
    #[allow(unsafe_code)]
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.spawn().map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot run {binary}: {e} (is it installed?)"),
        )
    })
}

impl RedisNode {
    /// Starts a node in cluster mode on a free port and waits for `PING`.
    ///
    /// # Errors
    /// The binary is missing, or the server did not answer in time.
    pub fn start_cluster_node(binary: &str, extra: &[&str]) -> io::Result<Self> {
        Self::start_cluster_node_on(binary, extra, Transport::Plain)
    }

    /// Starts a server with cluster support off (`--cluster-enabled no`,
    /// which overrides the cluster arguments) on a free port, with `extra`
    /// arguments, and waits for `PING`.
    ///
    /// # Errors
    /// The binary is missing, or the server did not answer in time.
    pub fn start_standalone(binary: &str, extra: &[&str]) -> io::Result<Self> {
        let mut args = extra.to_vec();
        args.extend(["--cluster-enabled", "no"]);
        Self::start_cluster_node_on(binary, &args, Transport::Plain)
    }

    /// Starts a node in cluster mode on a free port, reached by
    /// `transport`, and waits for `PING`.
    ///
    /// # Errors
    /// The binary is missing, or the server did not answer in time.
    pub fn start_cluster_node_on(
        binary: &str,
        extra: &[&str],
        transport: Transport,
    ) -> io::Result<Self> {
        let args: Vec<String> = extra.iter().map(|a| (*a).to_owned()).collect();
        let mut tries = 0;
        loop {
            tries += 1;
            let dir = tempfile::Builder::new().prefix("zaris-redis-").tempdir()?;
            let port = free_port()?;
            let child = spawn(binary, dir.path(), port, &transport, &args)?;
            let mut node = Self {
                port,
                child,
                dir,
                binary: binary.to_owned(),
                args: args.clone(),
                transport: transport.clone(),
                running: true,
                frozen: false,
            };
            match node.wait_ready() {
                Ok(()) => {
                    tracing::debug!(port, "server up");
                    return Ok(node);
                }
                // The free port was taken between the check and the
                // server's bind (another test's server, or its bus port):
                // another port.
                Err(e)
                    if tries < PORT_TRIES && e.to_string().contains("Address already in use") =>
                {
                    tracing::debug!(port, "port taken meanwhile; another");
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// `kill -9`: the process dies at once; its directory (and cluster
    /// config) stays for [`RedisNode::restart`].
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.running = false;
    }

    /// Starts the killed server again on the same port and directory, so it
    /// rejoins the cluster it knew.
    ///
    /// # Errors
    /// The server did not come back.
    pub fn restart(&mut self) -> io::Result<()> {
        if self.running {
            return Ok(());
        }
        self.child = spawn(
            &self.binary,
            self.dir.path(),
            self.port,
            &self.transport,
            &self.args,
        )?;
        self.running = true;
        self.wait_ready()
    }

    /// Whether the process is running (not killed, not frozen).
    #[must_use]
    pub fn is_running(&self) -> bool {
        self.running && !self.frozen
    }

    /// `kill -STOP`: the process keeps its sockets (connections are
    /// accepted by the kernel) and never answers, until [`RedisNode::thaw`].
    ///
    /// # Errors
    /// The signal could not be sent.
    pub fn freeze(&mut self) -> io::Result<()> {
        self.signal(libc::SIGSTOP)?;
        self.frozen = true;
        Ok(())
    }

    /// `kill -CONT` after [`RedisNode::freeze`].
    ///
    /// # Errors
    /// The signal could not be sent.
    pub fn thaw(&mut self) -> io::Result<()> {
        self.signal(libc::SIGCONT)?;
        self.frozen = false;
        Ok(())
    }

    fn signal(&self, signal: libc::c_int) -> io::Result<()> {
        let pid = libc::pid_t::try_from(self.child.id()).map_err(io::Error::other)?;
        // SAFETY: kill(2) on our own child's pid, which we have not reaped
        // (it is running), so the pid cannot have been reused.
        #[allow(unsafe_code)]
        let sent = unsafe { libc::kill(pid, signal) };
        if sent == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    fn wait_ready(&mut self) -> io::Result<()> {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Err(io::Error::other(format!(
                    "server exited with {status} before answering; log: {}",
                    self.log_tail(5)
                )));
            }
            if let Ok(mut conn) = self.connect() {
                // A server with `requirepass` answers NOAUTH, and a replica
                // loading its master's data answers LOADING: up too.
                let up = |f: &OwnedFrame| match f {
                    OwnedFrame::SimpleString(s) => s == b"PONG",
                    OwnedFrame::Error(e) => e.starts_with("NOAUTH") || e.starts_with("LOADING"),
                    _ => false,
                };
                if conn.command(&[b"PING"]).is_ok_and(|f| up(&f)) {
                    return Ok(());
                }
            }
            if started.elapsed() > START_TIMEOUT {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "server did not answer PING",
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The port it listens on (127.0.0.1).
    #[must_use]
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1:port`.
    #[must_use]
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// A fresh connection.
    ///
    /// # Errors
    /// The server does not accept it.
    pub fn connect(&self) -> io::Result<RespConn> {
        match &self.transport {
            Transport::Plain => RespConn::connect(&self.addr()),
            Transport::Tls { pki, .. } => RespConn::connect_tls(&self.addr(), pki),
        }
    }

    /// How the node is reached.
    #[must_use]
    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    /// The server's log file.
    #[must_use]
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("server.log")
    }

    /// The last `n` lines of its log, joined with ` | `.
    #[must_use]
    pub fn log_tail(&self, n: usize) -> String {
        let log = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        let lines: Vec<&str> = log.lines().rev().take(n).collect();
        lines.into_iter().rev().collect::<Vec<_>>().join(" | ")
    }
}

impl Drop for RedisNode {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A port that was free a moment ago, with its bus port (+ 10000) free
/// too. Both lie below the kernel's ephemeral range when it leaves room:
/// a node killed with `kill -9` comes back on its own port, and while it is
/// down no outgoing connection (the client's, a bus link, another lane's)
/// may take that port as its local one.
fn free_port() -> io::Result<u16> {
    use std::hash::{BuildHasher, Hasher};
    const LOWEST: u16 = 10000;
    let below = ephemeral_low().saturating_sub(BUS_OFFSET);
    let random = std::collections::hash_map::RandomState::new();
    for attempt in 0u16..200 {
        let port = if below > LOWEST + 1000 {
            let mut hasher = random.build_hasher();
            hasher.write_u16(attempt);
            LOWEST + (hasher.finish() % u64::from(below - LOWEST)) as u16
        } else {
            TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
                .local_addr()?
                .port()
        };
        if port < 55536
            && TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok()
            && TcpListener::bind((Ipv4Addr::LOCALHOST, port + BUS_OFFSET)).is_ok()
        {
            return Ok(port);
        }
    }
    Err(io::Error::other("no free port pair found"))
}

/// A cluster node's bus listens this far above its port.
const BUS_OFFSET: u16 = 10000;

/// The first port the kernel hands to outgoing connections (32768 unless
/// configured).
fn ephemeral_low() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse().ok())
        .unwrap_or(32768)
}

/// A TCP connection with the test time-outs.
fn tcp(addr: &str) -> io::Result<TcpStream> {
    let stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// A simple-string frame.
#[must_use]
pub fn simple(s: &str) -> OwnedFrame {
    OwnedFrame::SimpleString(s.as_bytes().to_vec())
}

/// A blocking RESP2 connection for tests and tooling.
pub struct RespConn {
    stream: Stream,
    buf: Vec<u8>,
}

/// A test connection's socket: plain or TLS.
enum Stream {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

impl RespConn {
    /// Connects to `addr`.
    ///
    /// # Errors
    /// The connection is refused or times out.
    pub fn connect(addr: &str) -> io::Result<Self> {
        Ok(Self {
            stream: Stream::Plain(tcp(addr)?),
            buf: Vec::new(),
        })
    }

    /// Connects to `addr` over TLS, trusting the test CA and presenting
    /// the client certificate.
    ///
    /// # Errors
    /// The connection is refused or times out, or the handshake fails.
    pub fn connect_tls(addr: &str, pki: &tls::Pki) -> io::Result<Self> {
        let config = std::sync::Arc::new(tls::AnyCert::config(pki)?);
        let name =
            rustls::pki_types::ServerName::try_from("localhost").map_err(io::Error::other)?;
        let conn = rustls::ClientConnection::new(config, name).map_err(io::Error::other)?;
        let mut stream = rustls::StreamOwned::new(conn, tcp(addr)?);
        // The handshake now, so a failure shows here.
        while stream.conn.is_handshaking() {
            stream.conn.complete_io(&mut stream.sock)?;
        }
        Ok(Self {
            stream: Stream::Tls(Box::new(stream)),
            buf: Vec::new(),
        })
    }

    /// Sends one command and reads its reply.
    ///
    /// # Errors
    /// I/O failure or a reply that does not decode.
    pub fn command(&mut self, args: &[&[u8]]) -> io::Result<OwnedFrame> {
        let mut replies = self.pipeline(std::iter::once(args))?;
        replies.pop().ok_or_else(|| io::Error::other("no reply"))
    }

    /// Sends every command, then reads one reply per command, in order.
    ///
    /// # Errors
    /// I/O failure or a reply that does not decode.
    pub fn pipeline<'a>(
        &mut self,
        commands: impl IntoIterator<Item = &'a [&'a [u8]]>,
    ) -> io::Result<Vec<OwnedFrame>> {
        let count = self.send(commands)?;
        self.replies(count)
    }

    /// Sends `commands` back to back, reading nothing (a command the node
    /// holds, a pause's); their number. [`Self::replies`] reads them.
    ///
    /// # Errors
    /// I/O failure.
    pub fn send<'a>(
        &mut self,
        commands: impl IntoIterator<Item = &'a [&'a [u8]]>,
    ) -> io::Result<usize> {
        let mut out = Vec::new();
        let mut count = 0;
        for args in commands {
            let frame = OwnedFrame::Array(
                args.iter()
                    .map(|a| OwnedFrame::BulkString(a.to_vec()))
                    .collect(),
            );
            let start = out.len();
            out.resize(start + frame.encode_len(false), 0);
            encode(&mut out[start..], &frame, false).map_err(io::Error::other)?;
            count += 1;
        }
        self.stream.write_all(&out)?;
        self.stream.flush()?;
        Ok(count)
    }

    /// The next `count` replies.
    ///
    /// # Errors
    /// I/O failure or a reply that does not decode.
    pub fn replies(&mut self, count: usize) -> io::Result<Vec<OwnedFrame>> {
        (0..count).map(|_| self.read_frame()).collect()
    }

    fn read_frame(&mut self) -> io::Result<OwnedFrame> {
        loop {
            if let Some((frame, used)) = decode(&self.buf).map_err(io::Error::other)? {
                self.buf.drain(..used);
                return Ok(frame);
            }
            let mut chunk = [0u8; 64 * 1024];
            let n = self.stream.read(&mut chunk)?;
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}
