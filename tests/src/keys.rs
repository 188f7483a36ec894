//! Keys of every kind for the oracle tests, and their slots as a real
//! server computes them (`CLUSTER KEYSLOT`).

use std::io;

use crate::{Frame, RedisNode};

/// Deterministic pseudo-random numbers (SplitMix64), so a failure replays.
pub struct Rng(pub u64);

impl Rng {
    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number below `n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// `count` keys of every kind: binary of all lengths up to 4096 (so every
/// CRC path runs), UTF-8 text of every width, hash-tagged, and degenerate
/// tags (`{}`, unbalanced braces). The same keys every time.
#[must_use]
pub fn keys(count: usize) -> Vec<Vec<u8>> {
    const TEXT: [&str; 8] = ["user", "κλειδί", "ключ", "键", "😀", "{", "}", ":"];
    let mut rng = Rng(0x5EED);
    (0..count)
        .map(|i| match i % 4 {
            0 => {
                let len = if rng.below(8) == 0 {
                    rng.below(4097)
                } else {
                    rng.below(64)
                };
                (0..len).map(|_| rng.next_u64() as u8).collect()
            }
            1 => (0..rng.below(12))
                .map(|_| TEXT[rng.below(TEXT.len())])
                .collect::<String>()
                .into_bytes(),
            2 => format!(
                "prefix{{user{}}}:suffix{}",
                rng.below(100_000),
                rng.below(10)
            )
            .into_bytes(),
            _ => {
                let mut key: Vec<u8> = (0..rng.below(300))
                    .map(|_| b'a' + rng.below(26) as u8)
                    .collect();
                for _ in 0..rng.below(4) {
                    let at = rng.below(key.len() + 1);
                    key.insert(at, if rng.below(2) == 0 { b'{' } else { b'}' });
                }
                key
            }
        })
        .collect()
}

/// The slots `binary` (`redis-server`, `valkey-server`) gives `keys`: a
/// cluster-mode node started for the purpose, asked `CLUSTER KEYSLOT` for
/// each in one pipeline.
///
/// # Errors
/// The server did not start or answered something else.
pub fn server_slots(binary: &str, keys: &[Vec<u8>]) -> io::Result<Vec<u16>> {
    let node = RedisNode::start_cluster_node(binary, &[])?;
    let mut conn = node.connect()?;
    let commands: Vec<[&[u8]; 3]> = keys
        .iter()
        .map(|k| [&b"CLUSTER"[..], b"KEYSLOT", k])
        .collect();
    let replies = conn.pipeline(commands.iter().map(|c| &c[..]))?;
    keys.iter()
        .zip(replies)
        .map(|(key, reply)| match reply {
            Frame::Integer(slot) => u16::try_from(slot).map_err(io::Error::other),
            other => Err(io::Error::other(format!(
                "CLUSTER KEYSLOT {:?} answered {other:?}",
                key.escape_ascii().to_string()
            ))),
        })
        .collect()
}
