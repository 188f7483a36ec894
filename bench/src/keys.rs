//! The keys and maps the benches run on, shared with the allocation run so
//! both time the same work.

use zaris_core::{OwnerId, OwnershipChange, SegmentTable, SLOT_COUNT};

/// Key lengths of the `slot-*` groups, in bytes.
pub const LENGTHS: [usize; 7] = [8, 16, 32, 64, 256, 1024, 4096];

/// How many different keys the route lookups cycle through.
pub const ROUTE_KEYS: usize = 1024;

/// The kinds of key each length is measured with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    /// Printable ASCII with no `{`.
    Ascii,
    /// A short hash tag at the front (`{user:1234}...`), as applications
    /// write them; at most half the key.
    Tagged,
    /// Multi-byte UTF-8 text (Greek and CJK).
    Utf8,
    /// Pseudo-random bytes, braces included.
    Binary,
}

impl KeyKind {
    /// Every kind, in chart order.
    pub const ALL: [KeyKind; 4] = [Self::Ascii, Self::Tagged, Self::Utf8, Self::Binary];

    /// The name used in benchmark ids (`slot-<name>`).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Ascii => "ascii",
            Self::Tagged => "tagged",
            Self::Utf8 => "utf8",
            Self::Binary => "binary",
        }
    }

    /// A key of this kind, exactly `len` bytes long.
    #[must_use]
    pub fn key(self, len: usize) -> Vec<u8> {
        match self {
            Self::Ascii => ascii_text(len).into_bytes(),
            Self::Tagged => {
                let mut key = ascii_text(len).into_bytes();
                let tag = (len / 2).min(12);
                key[0] = b'{';
                key[tag] = b'}';
                key
            }
            Self::Utf8 => utf8_text(len).into_bytes(),
            Self::Binary => binary(len),
        }
    }
}

/// Printable ASCII, `len` bytes, no braces.
#[must_use]
pub fn ascii_text(len: usize) -> String {
    (0..len)
        .map(|i| char::from(b'a' + (i * 7 % 26) as u8))
        .collect()
}

/// Multi-byte UTF-8 text of exactly `len` bytes (ASCII fills the last
/// bytes a whole character would overrun).
#[must_use]
pub fn utf8_text(len: usize) -> String {
    let mut text = String::with_capacity(len);
    for c in "κλειδί:用户:данные:".chars().cycle() {
        if text.len() + c.len_utf8() > len {
            break;
        }
        text.push(c);
    }
    while text.len() < len {
        text.push('x');
    }
    text
}

/// `len` pseudo-random bytes (xorshift, fixed seed).
#[must_use]
pub fn binary(len: usize) -> Vec<u8> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 56) as u8
        })
        .collect()
}

/// The keys route lookups cycle through: `user:<n>:profile`.
#[must_use]
pub fn route_keys() -> Box<[Vec<u8>; ROUTE_KEYS]> {
    let keys: Vec<Vec<u8>> = (0..ROUTE_KEYS)
        .map(|n| format!("user:{n}:profile").into_bytes())
        .collect();
    keys.try_into().expect("ROUTE_KEYS keys")
}

/// `ranges` contiguous slot ranges `(first, last, owner)` covering every
/// slot in order, owners cycling through ten nodes.
#[must_use]
pub fn slot_ranges(ranges: u16) -> Vec<(u16, u16, OwnerId)> {
    let ranges = ranges.clamp(1, SLOT_COUNT);
    (0..ranges)
        .map(|i| {
            let first = (u32::from(i) * u32::from(SLOT_COUNT) / u32::from(ranges)) as u16;
            let end = (u32::from(i + 1) * u32::from(SLOT_COUNT) / u32::from(ranges)) as u16;
            (first, end - 1, (i % 10) as OwnerId)
        })
        .collect()
}

/// `table` with its slots split evenly over `owners` nodes.
#[must_use]
pub fn split_evenly<S>(mut table: SegmentTable<S>, owners: u16) -> SegmentTable<S>
where
    S: AsRef<[OwnerId]> + AsMut<[OwnerId]>,
{
    for (first_slot, last_slot, owner) in slot_ranges(owners) {
        table.apply(&OwnershipChange {
            first_slot,
            last_slot,
            owner,
        });
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use zaris_core::{slot_for_key, NO_OWNER};

    #[test]
    fn keys_have_the_promised_length_and_shape() {
        for kind in KeyKind::ALL {
            for len in LENGTHS {
                assert_eq!(kind.key(len).len(), len, "{kind:?} {len}");
            }
        }
        assert!(std::str::from_utf8(&KeyKind::Utf8.key(64))
            .unwrap()
            .chars()
            .any(|c| c.len_utf8() > 1));
        assert!(!KeyKind::Ascii.key(4096).contains(&b'{'));
        let tagged = KeyKind::Tagged.key(256);
        assert_eq!(zaris_core::hash_tag(&tagged), &tagged[1..12]);
    }

    #[test]
    fn ranges_cover_every_slot_once() {
        for n in [1, 3, 100, 16384] {
            let ranges = slot_ranges(n);
            assert_eq!(ranges.len(), usize::from(n));
            assert_eq!(ranges[0].0, 0);
            assert_eq!(ranges.last().unwrap().1, SLOT_COUNT - 1);
            assert!(ranges.windows(2).all(|w| w[1].0 == w[0].1 + 1));
        }
        assert_eq!(
            slot_ranges(3),
            vec![(0, 5460, 0), (5461, 10921, 1), (10922, 16383, 2)]
        );
        let table = split_evenly(SegmentTable::new(vec![NO_OWNER; 16384]).unwrap(), 3);
        let key = b"123456789"; // slot 12739
        assert_eq!(slot_for_key(key), 12739);
        assert_eq!(table.owner_for_key(key), Ok(2));
    }
}
