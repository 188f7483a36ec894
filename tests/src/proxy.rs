//! A fault-injecting TCP proxy, for the network faults a `kill -9` or a
//! `SIGSTOP` cannot make: added latency, every connection dropped, a black
//! hole (accepted, never answered: no reset, no `MOVED`), one direction
//! cut, and replies slowed to a trickle.
//!
//! A proxied [`Cluster`](crate::cluster::Cluster) puts one in front of each
//! node's client port and one in front of its cluster bus, and has the node
//! announce the proxies' ports (`cluster-announce-port`,
//! `cluster-announce-bus-port`): clients, replication and the other nodes
//! all reach it through them, as they would reach a node across a network.
//! The harness's own administrative connections go to the node directly.
//!
//! Every proxy runs on one runtime of its own, so a stalled test or client
//! runtime never stalls the network.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch, Notify};
use tokio::time::Instant;

/// How bytes go one way through a proxy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Flow {
    /// As they come.
    #[default]
    Open,
    /// Held: not read from the sender (whose socket buffers then fill, as
    /// across a partition), delivered once the flow opens again.
    Stopped,
    /// Slowed down.
    Trickle {
        /// At most this many bytes a second.
        bytes_per_sec: u32,
    },
}

/// The faults a proxy applies now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    /// Added to every byte's trip from the node to the client.
    pub latency: Duration,
    /// From the client to the node.
    pub to_node: Flow,
    /// From the node to the client.
    pub to_client: Flow,
}

impl Faults {
    /// Nothing wrong.
    pub const HEALTHY: Self = Self {
        latency: Duration::ZERO,
        to_node: Flow::Open,
        to_client: Flow::Open,
    };

    /// Connections are accepted and nothing ever comes back; what was sent
    /// is held, not lost, so a partition that heals delivers it late.
    pub const BLACK_HOLE: Self = Self {
        latency: Duration::ZERO,
        to_node: Flow::Stopped,
        to_client: Flow::Stopped,
    };

    /// `latency` added to every reply.
    #[must_use]
    pub fn latency(latency: Duration) -> Self {
        Self {
            latency,
            ..Self::HEALTHY
        }
    }

    /// Replies slowed to `bytes_per_sec`.
    #[must_use]
    pub fn trickle(bytes_per_sec: u32) -> Self {
        Self {
            to_client: Flow::Trickle { bytes_per_sec },
            ..Self::HEALTHY
        }
    }
}

/// What every connection of a proxy watches: the faults, the sources cut
/// off, and a count bumped to drop every connection open now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Control {
    faults: Faults,
    /// Sources (by the last octet of their `127.0.0.x` address) whose
    /// connections are black holes whatever the faults.
    blocked: [u64; 4],
    drops: u64,
}

impl Control {
    fn blocks(&self, source: u8) -> bool {
        self.blocked[usize::from(source / 64)] & (1 << (source % 64)) != 0
    }

    /// How bytes go `direction` on a connection from `source`.
    fn flow(&self, direction: Direction, source: u8) -> Flow {
        if self.blocks(source) {
            return Flow::Stopped;
        }
        match direction {
            Direction::ToNode => self.faults.to_node,
            Direction::ToClient => self.faults.to_client,
        }
    }
}

/// A TCP proxy on 127.0.0.1 in front of one upstream port.
pub struct Proxy {
    port: u16,
    upstream: Arc<AtomicU16>,
    control: watch::Sender<Control>,
}

/// The runtime every proxy of the process runs on.
fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("zaris-proxy")
            .enable_all()
            .build()
            .expect("the proxies' runtime")
    })
}

impl Proxy {
    /// Listens on a free 127.0.0.1 port; forwards there once
    /// [`Proxy::forward_to`] names the upstream. While nothing listens
    /// upstream (a killed node), the proxy stops listening too, so that
    /// clients are refused as they would be by the node's host, and
    /// listens again once the node is back.
    ///
    /// # Errors
    /// No port could be bound.
    pub fn start() -> io::Result<Self> {
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let upstream = Arc::new(AtomicU16::new(0));
        let (control, watching) = watch::channel(Control::default());
        let to = upstream.clone();
        let rt = runtime();
        let listener = {
            let _entered = rt.enter();
            TcpListener::from_std(listener)?
        };
        rt.spawn(accept(listener, to, watching));
        Ok(Self {
            port,
            upstream,
            control,
        })
    }

    /// The port clients connect to.
    #[must_use]
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Forwards to `127.0.0.1:port` from now on.
    pub fn forward_to(&self, port: u16) {
        self.upstream.store(port, Ordering::Relaxed);
    }

    /// Applies `faults` to every connection, open or to come.
    pub fn set(&self, faults: Faults) {
        self.control.send_modify(|c| c.faults = faults);
    }

    /// The faults applied now.
    #[must_use]
    pub fn faults(&self) -> Faults {
        self.control.borrow().faults
    }

    /// Connections from `127.0.0.{source}` become black holes (`true`) or
    /// flow again (`false`): a node cut off from this one, both ways, when
    /// nodes connect from addresses of their own (`bind-source-addr`).
    pub fn block_source(&self, source: u8, blocked: bool) {
        self.control.send_modify(|c| {
            let (word, bit) = (usize::from(source / 64), 1u64 << (source % 64));
            if blocked {
                c.blocked[word] |= bit;
            } else {
                c.blocked[word] &= !bit;
            }
        });
    }

    /// Closes every connection open now, both ends (new ones are accepted).
    pub fn drop_connections(&self) {
        self.control.send_modify(|c| c.drops += 1);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        // Closing the channel ends the accept loop and every connection.
        self.control.send_modify(|c| c.drops += 1);
    }
}

async fn accept(
    listener: TcpListener,
    upstream: Arc<AtomicU16>,
    control: watch::Receiver<Control>,
) {
    let port = match listener.local_addr() {
        Ok(addr) => addr.port(),
        Err(_) => return,
    };
    let refused = Arc::new(Notify::new());
    let mut closed = control.clone();
    let mut listener = Some(listener);
    loop {
        let Some(open) = &listener else {
            // Nothing listens upstream (a killed node): neither does the
            // proxy, so clients are refused as they would be, until the
            // node is back.
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(50)) => {}
                changed = closed.changed() => if changed.is_err() { return },
            }
            let up = upstream.load(Ordering::Relaxed);
            if TcpStream::connect((Ipv4Addr::LOCALHOST, up)).await.is_ok() {
                listener = TcpListener::bind((Ipv4Addr::LOCALHOST, port)).await.ok();
            }
            continue;
        };
        tokio::select! {
            accepted = open.accept() => {
                let Ok((client, from)) = accepted else { continue };
                let _ = client.set_nodelay(true);
                let port = upstream.load(Ordering::Relaxed);
                let source = match from.ip() {
                    std::net::IpAddr::V4(ip) => ip.octets()[3],
                    std::net::IpAddr::V6(_) => 1,
                };
                tokio::spawn(connection(client, source, port, control.clone(), refused.clone()));
            }
            () = refused.notified() => listener = None,
            // The proxy was dropped.
            changed = closed.changed() => if changed.is_err() { return },
        }
    }
}

/// One proxied connection: connects upstream once bytes may flow to the
/// node, then pumps both ways until either end closes or it is dropped.
async fn connection(
    client: TcpStream,
    source: u8,
    port: u16,
    mut control: watch::Receiver<Control>,
    refused: Arc<Notify>,
) {
    let drops = control.borrow().drops;
    let dropped = |c: &Control| c.drops != drops;
    // A black hole accepts and then holds the connection, unanswered.
    let open = control
        .wait_for(|c| dropped(c) || c.flow(Direction::ToNode, source) != Flow::Stopped)
        .await
        .map(|c| !dropped(&c));
    if port == 0 || !matches!(open, Ok(true)) {
        return;
    }
    let node = match TcpStream::connect(SocketAddr::from((Ipv4Addr::LOCALHOST, port))).await {
        Ok(node) => node,
        Err(e) => {
            // Closing this one resets it; the listener closes too.
            if e.kind() == io::ErrorKind::ConnectionRefused {
                refused.notify_one();
            }
            return;
        }
    };
    let _ = node.set_nodelay(true);
    let (client_read, client_write) = client.into_split();
    let (node_read, node_write) = node.into_split();
    let to_node = pump(
        client_read,
        node_write,
        (source, Direction::ToNode),
        control.clone(),
        drops,
    );
    let to_client = pump(
        node_read,
        client_write,
        (source, Direction::ToClient),
        control,
        drops,
    );
    // Either direction ending (a close, a drop) ends the connection.
    tokio::select! {
        () = to_node => {}
        () = to_client => {}
    }
}

#[derive(Clone, Copy, Debug)]
enum Direction {
    ToNode,
    ToClient,
}

/// Chunks in flight one way: read as they come, written once their
/// latency has passed, so latency delays bytes without capping throughput.
const CHUNKS_IN_FLIGHT: usize = 256;

/// Bytes one way: a reader that holds off while the flow is stopped, and a
/// writer that applies the latency and the trickle.
async fn pump(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    (source, direction): (u8, Direction),
    control: watch::Receiver<Control>,
    drops: u64,
) {
    let (chunks, mut queue) = mpsc::channel::<(Instant, Vec<u8>)>(CHUNKS_IN_FLIGHT);
    let mut reading = control.clone();
    let read = async move {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            if flowing(&mut reading, drops, (source, direction))
                .await
                .is_none()
            {
                return;
            }
            let n = match from.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            if chunks
                .send((Instant::now(), buf[..n].to_vec()))
                .await
                .is_err()
            {
                return;
            }
        }
    };
    let mut dropping = control.clone();
    let mut writing = control;
    let write = async move {
        while let Some((read_at, chunk)) = queue.recv().await {
            let Some(c) = flowing(&mut writing, drops, (source, direction)).await else {
                return;
            };
            if matches!(direction, Direction::ToClient) && !c.faults.latency.is_zero() {
                tokio::time::sleep_until(read_at + c.faults.latency).await;
            }
            let written = match c.flow(direction, source) {
                Flow::Trickle { bytes_per_sec } => trickle(&mut to, &chunk, bytes_per_sec).await,
                _ => to.write_all(&chunk).await,
            };
            if written.is_err() {
                return;
            }
        }
    };
    // Dropped (or the proxy gone) ends both halves, whatever they wait on;
    // the sockets close as the halves are dropped.
    let dropped = async move {
        let _ = dropping.wait_for(|c| c.drops != drops).await;
    };
    tokio::select! {
        () = read => {}
        () = write => {}
        () = dropped => {}
    }
}

/// Waits until bytes may flow `direction` from `source`: the control
/// then, or `None` once the connection is dropped (or the proxy gone).
async fn flowing(
    control: &mut watch::Receiver<Control>,
    drops: u64,
    (source, direction): (u8, Direction),
) -> Option<Control> {
    let c = control
        .wait_for(|c| c.drops != drops || c.flow(direction, source) != Flow::Stopped)
        .await
        .map(|c| *c)
        .ok()?;
    (c.drops == drops).then_some(c)
}

/// Writes `chunk` at about `bytes_per_sec`, in pieces every 10 ms.
async fn trickle(to: &mut OwnedWriteHalf, chunk: &[u8], bytes_per_sec: u32) -> io::Result<()> {
    let piece = usize::try_from(bytes_per_sec / 100).unwrap_or(1).max(1);
    for part in chunk.chunks(piece) {
        to.write_all(part).await?;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}
