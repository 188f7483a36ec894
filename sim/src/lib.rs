//! A model Redis Cluster node for the deterministic simulation: it speaks
//! RESP2 over turmoil's network and answers what the real client needs to
//! route (`CLUSTER SLOTS`; `CLUSTER SHARDS` refused, as Redis 6 does) and
//! a key-value store's `GET`/`SET`. A first step: one master owning every
//! slot. The model (epochs, migration, replication with lag,
//! faults) grows from here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One command off the wire: an array of bulk strings, or `None` when
/// more bytes are needed. Anything else is an error (the real client sends
/// only arrays).
pub fn take_command(buf: &mut BytesMut) -> Result<Option<Vec<Vec<u8>>>, String> {
    let text = &buf[..];
    let line = |from: usize| -> Option<(usize, usize)> {
        let end = text[from..].windows(2).position(|w| w == b"\r\n")? + from;
        Some((from, end))
    };
    let number = |(a, b): (usize, usize)| -> Result<usize, String> {
        std::str::from_utf8(&text[a + 1..b])
            .ok()
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| "a bad length".to_owned())
    };
    let Some(head) = line(0) else { return Ok(None) };
    if text[0] != b'*' {
        return Err(format!("not an array: {:?}", text[0] as char));
    }
    let count = number(head)?;
    let mut at = head.1 + 2;
    let mut args = Vec::with_capacity(count);
    for _ in 0..count {
        let Some(len_line) = line(at) else {
            return Ok(None);
        };
        if text[at] != b'$' {
            return Err("an argument that is not a bulk string".into());
        }
        let len = number(len_line)?;
        let start = len_line.1 + 2;
        if text.len() < start + len + 2 {
            return Ok(None);
        }
        args.push(text[start..start + len].to_vec());
        at = start + len + 2;
    }
    buf.advance(at);
    Ok(Some(args))
}

/// A RESP2 bulk string.
fn bulk(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(format!("${}\r\n", b.len()).as_bytes());
    out.extend_from_slice(b);
    out.extend_from_slice(b"\r\n");
}

/// A master owning every slot, at `host:port`, with its data.
#[derive(Clone)]
pub struct Node {
    host: String,
    port: u16,
    data: Arc<Mutex<HashMap<Vec<u8>, Vec<u8>>>>,
}

impl Node {
    /// A node announcing itself as `host:port`.
    #[must_use]
    pub fn new(host: &str, port: u16) -> Self {
        Self {
            host: host.to_owned(),
            port,
            data: Arc::default(),
        }
    }

    /// The reply to `args`.
    #[must_use]
    pub fn answer(&self, args: &[Vec<u8>]) -> Vec<u8> {
        let mut out = Vec::new();
        let word = |i: usize| args.get(i).map(|a| a.to_ascii_uppercase());
        match (word(0).as_deref(), word(1).as_deref()) {
            (Some(b"CLUSTER"), Some(b"SLOTS")) => {
                out.extend_from_slice(b"*1\r\n*3\r\n:0\r\n:16383\r\n*3\r\n");
                bulk(&mut out, self.host.as_bytes());
                out.extend_from_slice(format!(":{}\r\n", self.port).as_bytes());
                bulk(&mut out, b"0000000000000000000000000000000000000001");
            }
            (Some(b"CLUSTER"), _) => out.extend_from_slice(b"-ERR unknown subcommand\r\n"),
            (Some(b"SET"), _) if args.len() >= 3 => {
                let mut data = self.data.lock().unwrap_or_else(|e| e.into_inner());
                data.insert(args[1].clone(), args[2].clone());
                out.extend_from_slice(b"+OK\r\n");
            }
            (Some(b"GET"), _) if args.len() == 2 => {
                let data = self.data.lock().unwrap_or_else(|e| e.into_inner());
                match data.get(&args[1]) {
                    Some(v) => bulk(&mut out, v),
                    None => out.extend_from_slice(b"$-1\r\n"),
                }
            }
            (Some(b"PING"), _) => out.extend_from_slice(b"+PONG\r\n"),
            _ => out.extend_from_slice(b"-ERR unknown command in the model\r\n"),
        }
        out
    }

    /// Serves clients on turmoil's network until the simulation ends.
    ///
    /// # Errors
    /// The listener could not bind.
    pub async fn serve(self) -> std::io::Result<()> {
        let listener = turmoil::net::TcpListener::bind(("0.0.0.0", self.port)).await?;
        loop {
            let (mut stream, _) = listener.accept().await?;
            let node = self.clone();
            tokio::spawn(async move {
                let mut buf = BytesMut::with_capacity(4096);
                loop {
                    loop {
                        match take_command(&mut buf) {
                            Ok(Some(args)) => {
                                if stream.write_all(&node.answer(&args)).await.is_err() {
                                    return;
                                }
                            }
                            Ok(None) => break,
                            Err(_) => return,
                        }
                    }
                    match stream.read_buf(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(_) => {}
                    }
                }
            });
        }
    }
}
