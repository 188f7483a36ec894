//! The command table's name index: a command's name read a word at a
//! time, lowered, hashed, and found in a table built at compile time.

use super::error::CommandError;
use super::spec::Spec;
use super::table::TABLE;

/// The longest command or subcommand name the tables hold, or longer.
pub(super) const MAX_NAME: usize = 32;

/// Every command, sorted by name.
pub(super) static COMMANDS: [Spec<'static>; TABLE.len()] = TABLE;

/// Slots of the name index: a power of two, four times the commands, so a
/// name is found on its first probe nearly always.
pub(super) const INDEX_SLOTS: usize = 1024;

/// An empty slot of the name index.
pub(super) const NO_COMMAND: u8 = u8::MAX;

/// A name as words: its bytes lowered, eight to a word (little-endian,
/// zero after its end). The client looks up every command it sends, so a
/// name is read, lowered, hashed and compared a word at a time: about a
/// third of the instructions of the same done a byte at a time.
type Words = [u64; MAX_NAME / 8];
const _: () = assert!(MAX_NAME / 8 == 4, "slot_of mixes four words");

/// Command number by the hash of its name's [`Words`] (open addressing,
/// linear probing), built at compile time: a name costs one hash and one
/// compare where a binary search over the table costs eight compares and
/// as many mispredicted branches.
pub(super) static INDEX: [u8; INDEX_SLOTS] = build_index();

/// Each byte of `word` that is an ASCII capital, lowered; the others as
/// they are (eight at once: no byte's sum carries into the next).
pub(super) const fn lower(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = ONES * 0x80;
    let low7 = word & !HIGH;
    let from_a = low7 + ONES * (0x80 - b'A' as u64);
    let past_z = low7 + ONES * (0x7f - b'Z' as u64);
    let capital = from_a & !past_z & !word & HIGH;
    word | (capital >> 2)
}

/// The first `n` bytes of `bytes` (`n` at most eight) as a little-endian
/// word, zero after them: whole-word or overlapping reads, no loop.
#[cfg_attr(not(target_arch = "wasm32"), inline(always))]
pub(super) const fn read_word(bytes: &[u8], n: usize) -> u64 {
    const fn u32_at(bytes: &[u8], at: usize) -> u64 {
        match bytes.split_at_checked(at) {
            Some((_, rest)) => match rest.first_chunk::<4>() {
                Some(four) => u32::from_le_bytes(*four) as u64,
                None => 0,
            },
            None => 0,
        }
    }
    const fn byte(bytes: &[u8], at: usize) -> u64 {
        if at < bytes.len() {
            bytes[at] as u64
        } else {
            0
        }
    }
    match n {
        8.. => match bytes.first_chunk::<8>() {
            Some(eight) => u64::from_le_bytes(*eight),
            None => 0,
        },
        4..=7 => u32_at(bytes, 0) | u32_at(bytes, n - 4) << (8 * (n - 4)),
        1..=3 => {
            byte(bytes, 0)
                | byte(bytes, n / 2) << (8 * (n / 2))
                | byte(bytes, n - 1) << (8 * (n - 1))
        }
        0 => 0,
    }
}

/// Word `i` of `name` as it lies (not lowered): zero past its end.
#[cfg_attr(not(target_arch = "wasm32"), inline(always))]
pub(super) const fn word_at(name: &[u8], i: usize) -> u64 {
    match name.split_at_checked(i * 8) {
        Some((_, rest)) => read_word(rest, rest.len()),
        None => 0,
    }
}

/// Whether the table's `name` (lowercase) is `typed`, word by word,
/// read where it lies (no table of words in the binary).
#[cfg_attr(not(target_arch = "wasm32"), inline(always))]
pub(super) fn is_named(name: &[u8], typed: &Words) -> bool {
    typed
        .iter()
        .enumerate()
        .take(name.len().div_ceil(8))
        .all(|(i, &word)| word_at(name, i) == word)
}

/// `name` (at most [`MAX_NAME`] bytes) as [`Words`]: at run time for a
/// long name typed, at compile time for every name of the table.
pub(super) const fn words(name: &[u8]) -> Words {
    let mut words = [0; MAX_NAME / 8];
    let mut i = 0;
    while i < words.len() {
        words[i] = lower(word_at(name, i));
        i += 1;
    }
    words
}

/// A name's slot in [`INDEX`]: its words and its length, mixed and
/// multiplied (the top bits of a product depend on every bit below).
pub(super) const fn slot_of(words: &Words, len: usize) -> usize {
    let mixed = len as u64
        ^ words[0]
        ^ words[1].rotate_left(16)
        ^ words[2].rotate_left(32)
        ^ words[3].rotate_left(48);
    (mixed.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - INDEX_SLOTS.trailing_zeros())) as usize
}

pub(super) const fn build_index() -> [u8; INDEX_SLOTS] {
    assert!(
        TABLE.len() < NO_COMMAND as usize,
        "command numbers fit a u8"
    );
    let mut index = [NO_COMMAND; INDEX_SLOTS];
    let mut i = 0;
    while i < TABLE.len() {
        let name = TABLE[i].name.as_bytes();
        assert!(name.len() <= MAX_NAME, "names fit MAX_NAME");
        let mut slot = slot_of(&words(name), name.len());
        while index[slot] != NO_COMMAND {
            slot = (slot + 1) % INDEX_SLOTS;
        }
        index[slot] = i as u8;
        i += 1;
    }
    index
}

/// The top-level command `name`, any case: read as lowered [`Words`],
/// then looked up in [`INDEX`] and compared a word at a time.
pub(super) fn find_command(name: &[u8]) -> Option<&'static Spec<'static>> {
    if name.len() <= 8 {
        // Most names: one word, in registers.
        return find_words(&[lower(read_word(name, name.len())), 0, 0, 0], name.len());
    }
    find_long_command(name)
}

/// [`find_command`] for a name longer than a word (apart, so that the
/// short way needs few registers).
#[inline(never)]
pub(super) fn find_long_command(name: &[u8]) -> Option<&'static Spec<'static>> {
    if name.len() > MAX_NAME {
        return None;
    }
    find_words(&words(name), name.len())
}

/// The command whose name is `typed`, `len` bytes long.
#[cfg_attr(not(target_arch = "wasm32"), inline(always))]
pub(super) fn find_words(typed: &Words, len: usize) -> Option<&'static Spec<'static>> {
    let mut slot = slot_of(typed, len);
    loop {
        let number = usize::from(INDEX[slot]);
        let spec = COMMANDS.get(number)?;
        // Whole words: both are zero past the name (its length tells a
        // name from the same name and a NUL).
        if spec.name.len() == len && is_named(spec.name.as_bytes(), typed) {
            return Some(spec);
        }
        slot = (slot + 1) % INDEX_SLOTS;
    }
}

/// Binary search of `table` (sorted by lowercase name) for `name`, any
/// case: lowered once, then compared as bytes. Apart, so that a command
/// with no subcommands (most) needs few registers.
#[inline(never)]
pub(super) fn find_spec(
    table: &'static [Spec<'static>],
    name: &[u8],
) -> Option<&'static Spec<'static>> {
    let mut lower = [0u8; MAX_NAME];
    let lower = lower.get_mut(..name.len())?;
    for (to, from) in lower.iter_mut().zip(name) {
        *to = from.to_ascii_lowercase();
    }
    table
        .binary_search_by(|spec| spec.name.as_bytes().cmp(lower))
        .ok()
        .map(|at| &table[at])
}

/// The command `args` names: its entry, or its subcommand's.
pub(super) fn lookup(args: &[&[u8]]) -> Result<&'static Spec<'static>, CommandError> {
    let name = args.first().ok_or(CommandError::Empty)?;
    let spec = find_command(name).ok_or(CommandError::UnknownCommand)?;
    if spec.subcommands.is_empty() || args.len() == 1 {
        return Ok(spec);
    }
    find_spec(spec.subcommands, args[1]).ok_or(CommandError::UnknownSubcommand)
}
