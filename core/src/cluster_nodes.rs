//! Reading `CLUSTER NODES` output (what `redis-cli cluster nodes` prints),
//! one line at a time, borrowing from the text: no allocation. The
//! playground reads pasted maps with it; any host can.
//!
//! ```
//! use zaris_core::{parse_cluster_nodes, SlotEntry};
//!
//! let text = "\
//! 07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30004@31004 slave e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317239 4 connected
//! e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 0-5460 [93->-292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f]
//! ";
//! let nodes: Vec<_> = parse_cluster_nodes(text).collect::<Result<_, _>>().unwrap();
//! assert_eq!(nodes[0].master_id, Some("e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca"));
//! assert!(nodes[1].flags.myself && nodes[1].flags.master);
//! let slots: Vec<_> = nodes[1].slots().collect::<Result<_, _>>().unwrap();
//! assert_eq!(slots[0], SlotEntry::Served { first: 0, last: 5460 });
//! assert_eq!(slots.len(), 2); // the migrating slot 93 is listed too
//! ```

use core::fmt;

use crate::SLOT_COUNT;

/// One node line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClusterNode<'a> {
    /// The 40-hex-digit node id.
    pub id: &'a str,
    /// Its address as `host:port` (IPv6 hosts as printed, without brackets).
    pub addr: &'a str,
    /// The host part of `addr`.
    pub host: &'a str,
    /// The client port.
    pub port: u16,
    /// The cluster bus port (after `@`), when printed.
    pub bus_port: Option<u16>,
    /// The announced hostname (after `,`), when printed (Redis 7).
    pub hostname: Option<&'a str>,
    /// The flags.
    pub flags: NodeFlags,
    /// A replica's master, by id.
    pub master_id: Option<&'a str>,
    /// Whether the cluster bus link is up (`connected`).
    pub connected: bool,
    /// Its config epoch: a master's grows when it takes slots over (a
    /// failover, an import finished). `None` when the field is not a
    /// number.
    pub config_epoch: Option<u64>,
    /// The line it was read from, from 1.
    pub line: usize,
    /// The slot fields, unread (see [`ClusterNode::slots`]).
    slot_fields: &'a str,
}

/// The flags of a node line that matter for routing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[allow(clippy::struct_excessive_bools)]
pub struct NodeFlags {
    /// The node the output came from.
    pub myself: bool,
    /// A master.
    pub master: bool,
    /// A replica (`slave` or `replica`).
    pub replica: bool,
    /// Failing, as agreed by the majority (`fail`).
    pub fail: bool,
    /// Possibly failing, as this node sees it (`fail?`).
    pub possibly_failing: bool,
    /// Still being introduced (`handshake`), or without an address yet
    /// (`noaddr`): not a routing target.
    pub joining: bool,
}

/// One slot field of a node line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotEntry<'a> {
    /// `first-last` (or one slot): served by this node.
    Served {
        /// First slot.
        first: u16,
        /// Last slot, inclusive.
        last: u16,
    },
    /// `[slot->-id]`: this node still serves `slot` and is migrating it to
    /// node `to`.
    Migrating {
        /// The slot.
        slot: u16,
        /// The node it goes to.
        to: &'a str,
    },
    /// `[slot-<-id]`: this node is importing `slot` from node `from`.
    Importing {
        /// The slot.
        slot: u16,
        /// The node it comes from.
        from: &'a str,
    },
}

/// What is wrong with a line of `CLUSTER NODES` output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClusterNodesError<'a> {
    /// The line, from 1.
    pub line: usize,
    /// What is wrong.
    pub kind: ClusterNodesErrorKind<'a>,
}

/// What is wrong with a line, naming the field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClusterNodesErrorKind<'a> {
    /// Fewer than the 8 fields every line has.
    TooFewFields {
        /// How many there were.
        found: usize,
    },
    /// The first field is not a node id (hex digits, at least 8).
    NotANodeId(&'a str),
    /// The second field is not `host:port[@bus-port][,hostname]`.
    NotAnAddress(&'a str),
    /// The flags name neither `master` nor `replica`/`slave`.
    NoRole,
    /// A slot field that is not `N`, `A-B` or `[N->-id]`/`[N-<-id]` within
    /// 0..16384.
    BadSlot(&'a str),
}

impl fmt::Display for ClusterNodesError<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.kind)
    }
}

impl fmt::Display for ClusterNodesErrorKind<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ClusterNodesErrorKind::TooFewFields { found } => {
                write!(f, "expected at least 8 fields, found {found}")
            }
            ClusterNodesErrorKind::NotANodeId(id) => write!(f, "'{id}' is not a node id"),
            ClusterNodesErrorKind::NotAnAddress(addr) => {
                write!(f, "'{addr}' is not host:port@cport")
            }
            ClusterNodesErrorKind::NoRole => f.write_str("flags name neither master nor replica"),
            ClusterNodesErrorKind::BadSlot(slot) => write!(f, "bad slot range '{slot}'"),
        }
    }
}

impl core::error::Error for ClusterNodesError<'_> {}

/// The node lines of `CLUSTER NODES` output, in order; blank lines are
/// skipped, and a line that does not parse is an error naming its number.
pub fn parse_cluster_nodes(
    text: &str,
) -> impl Iterator<Item = Result<ClusterNode<'_>, ClusterNodesError<'_>>> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| parse_line(line, i + 1))
}

fn parse_line(text: &str, line: usize) -> Result<ClusterNode<'_>, ClusterNodesError<'_>> {
    let err = |kind| ClusterNodesError { line, kind };
    let mut fields = text.split_ascii_whitespace();
    let mut next = || fields.next();
    let (Some(id), Some(addr), Some(flags), Some(master), Some(_ping), Some(_pong)) =
        (next(), next(), next(), next(), next(), next())
    else {
        let found = text.split_ascii_whitespace().count();
        return Err(err(ClusterNodesErrorKind::TooFewFields { found }));
    };
    let (Some(epoch), Some(link)) = (next(), next()) else {
        let found = text.split_ascii_whitespace().count();
        return Err(err(ClusterNodesErrorKind::TooFewFields { found }));
    };
    if id.len() < 8 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(err(ClusterNodesErrorKind::NotANodeId(id)));
    }
    let address = parse_address(addr).ok_or(err(ClusterNodesErrorKind::NotAnAddress(addr)))?;
    let mut node_flags = NodeFlags::default();
    for flag in flags.split(',') {
        match flag {
            "myself" => node_flags.myself = true,
            "master" => node_flags.master = true,
            "slave" | "replica" => node_flags.replica = true,
            "fail" => node_flags.fail = true,
            "fail?" => node_flags.possibly_failing = true,
            "handshake" | "noaddr" => node_flags.joining = true,
            _ => {}
        }
    }
    if !node_flags.master && !node_flags.replica {
        return Err(err(ClusterNodesErrorKind::NoRole));
    }
    // The slots are what follows the eight fixed fields.
    let slot_fields = after_fields(text, 8);
    let node = ClusterNode {
        id,
        addr: address.0,
        host: address.1,
        port: address.2,
        bus_port: address.3,
        hostname: address.4,
        flags: node_flags,
        master_id: (master != "-").then_some(master),
        connected: link == "connected",
        config_epoch: epoch.parse().ok(),
        slot_fields,
        line,
    };
    // Check every slot field now, so that an accepted line reads cleanly.
    node.slots().try_for_each(|slot| slot.map(|_| ()))?;
    Ok(node)
}

/// What follows the first `n` white-space separated fields of `text`.
fn after_fields(text: &str, n: usize) -> &str {
    let mut rest = text.trim_start();
    for _ in 0..n {
        let end = rest
            .find(|c: char| c.is_ascii_whitespace())
            .unwrap_or(rest.len());
        rest = rest.get(end..).unwrap_or("").trim_start();
    }
    rest.trim_end()
}

/// `host:port[@bus][,hostname]` → (`host:port`, host, port, bus, hostname).
#[allow(clippy::type_complexity)]
fn parse_address(field: &str) -> Option<(&str, &str, u16, Option<u16>, Option<&str>)> {
    let (addr, hostname) = match field.split_once(',') {
        Some((addr, name)) => (addr, (!name.is_empty()).then_some(name)),
        None => (field, None),
    };
    let (addr, bus) = match addr.split_once('@') {
        Some((addr, bus)) => (addr, Some(bus.parse::<u16>().ok()?)),
        None => (addr, None),
    };
    let (host, port) = addr.rsplit_once(':')?;
    let port = port.parse::<u16>().ok()?;
    Some((addr, host, port, bus, hostname))
}

impl<'a> ClusterNode<'a> {
    /// The node's slot fields, in order.
    pub fn slots(&self) -> impl Iterator<Item = Result<SlotEntry<'a>, ClusterNodesError<'a>>> {
        let line = self.line;
        self.slot_fields.split_ascii_whitespace().map(move |field| {
            parse_slot(field).ok_or(ClusterNodesError {
                line,
                kind: ClusterNodesErrorKind::BadSlot(field),
            })
        })
    }

    /// Whether the node is a master that can take requests: not failing,
    /// not still joining.
    #[must_use]
    pub fn is_serving_master(&self) -> bool {
        self.flags.master && !self.flags.fail && !self.flags.joining
    }
}

fn parse_slot(field: &str) -> Option<SlotEntry<'_>> {
    let slot = |text: &str| text.parse::<u16>().ok().filter(|&s| s < SLOT_COUNT);
    if let Some(inner) = field.strip_prefix('[').and_then(|f| f.strip_suffix(']')) {
        // `N->-id` or `N-<-id`: the slot, a three-character arrow, the node.
        let (s, rest) = inner.split_once('-')?;
        let arrow = rest.get(..2)?;
        let node = rest.get(2..)?;
        return match arrow {
            ">-" => Some(SlotEntry::Migrating {
                slot: slot(s)?,
                to: node,
            }),
            "<-" => Some(SlotEntry::Importing {
                slot: slot(s)?,
                from: node,
            }),
            _ => None,
        };
    }
    let (first, last) = field.split_once('-').unwrap_or((field, field));
    let (first, last) = (slot(first)?, slot(last)?);
    (first <= last).then_some(SlotEntry::Served { first, last })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sample in the Redis documentation of `CLUSTER NODES`.
    /// The sample of Redis's `CLUSTER NODES` documentation, with
    /// hostnames (one file for the core's tests and the wasm package's).
    const REDIS_DOC_SAMPLE: &str = include_str!("../testdata/cluster-nodes.txt");

    #[test]
    fn reads_the_documented_sample() {
        let nodes: heapless::Vec<ClusterNode<'_>, 8> = parse_cluster_nodes(REDIS_DOC_SAMPLE)
            .map(Result::unwrap)
            .collect();
        assert_eq!(nodes.len(), 6);
        let first = &nodes[0];
        assert_eq!(
            (
                first.addr,
                first.host,
                first.port,
                first.bus_port,
                first.hostname
            ),
            (
                "127.0.0.1:30004",
                "127.0.0.1",
                30004,
                Some(31004),
                Some("hostname4")
            )
        );
        assert!(first.flags.replica && !first.flags.master && first.connected);
        assert_eq!(
            first.master_id,
            Some("e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca")
        );
        assert_eq!(first.slots().count(), 0);
        let me = &nodes[5];
        assert!(me.flags.myself && me.is_serving_master());
        assert_eq!((first.config_epoch, me.config_epoch), (Some(4), Some(1)));
        let slots: heapless::Vec<SlotEntry<'_>, 4> = me.slots().map(Result::unwrap).collect();
        assert_eq!(
            slots.as_slice(),
            [
                SlotEntry::Served {
                    first: 0,
                    last: 5460
                },
                SlotEntry::Migrating {
                    slot: 93,
                    to: "292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f"
                }
            ]
        );
    }

    #[test]
    fn errors_name_the_line_and_the_field() {
        let message = |text: &'static str| {
            let e = parse_cluster_nodes(text).find_map(Result::err).unwrap();
            let mut out = heapless::String::<128>::new();
            core::fmt::write(&mut out, format_args!("{e}")).unwrap();
            out
        };
        assert_eq!(
            message("garbage"),
            "line 1: expected at least 8 fields, found 1"
        );
        assert_eq!(
            message("\nzz 1.2.3.4:1@2 master - 0 0 1 connected"),
            "line 2: 'zz' is not a node id"
        );
        assert_eq!(
            message("abcdef0123 nowhere master - 0 0 1 connected"),
            "line 1: 'nowhere' is not host:port@cport"
        );
        assert_eq!(
            message("abcdef0123 h:1@2 myself - 0 0 1 connected"),
            "line 1: flags name neither master nor replica"
        );
        assert_eq!(
            message("abcdef0123 h:1@2 master - 0 0 1 connected 5-3"),
            "line 1: bad slot range '5-3'"
        );
        assert_eq!(
            message("abcdef0123 h:1@2 master - 0 0 1 connected 16384"),
            "line 1: bad slot range '16384'"
        );
    }

    #[test]
    fn ipv6_and_old_addresses() {
        let node =
            parse_cluster_nodes("abcdef0123 ::1:7000@17000 master,fail - 0 0 1 disconnected 7")
                .next()
                .unwrap()
                .unwrap();
        assert_eq!((node.host, node.port, node.connected), ("::1", 7000, false));
        assert!(!node.is_serving_master());
        let old = parse_cluster_nodes("abcdef0123 10.0.0.1:7000 slave abcdef0124 0 0 1 connected")
            .next()
            .unwrap()
            .unwrap();
        assert_eq!((old.bus_port, old.hostname), (None, None));
    }
}
