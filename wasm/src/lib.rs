//! `zaris-wasm`: the Zaris core for browsers and Node, through wasm-bindgen.
//!
//! Every slot, tag, segment, route and retry decision here is computed by
//! `zaris-core`; this crate only moves data across the boundary and turns
//! text (key lists, `CLUSTER NODES` output, a JSON map, a status script) into
//! the core's types, with errors that name the line and what was wrong.
//!
//! Strings: one key comes in as UTF-16 code units (a `Uint16Array` of the JS
//! string's `charCodeAt` values), so the core's UTF-16 path hashes it with no
//! conversion; a batch comes in as the UTF-8 bytes of newline-separated keys
//! (`TextEncoder`, native), which cross into linear memory as one copy, so
//! the per-key cost is the hash, not the boundary.
//!
//! The bindings are plain Rust functions too, so they are tested natively:
//!
//! ```
//! let units: Vec<u16> = "{user1000}.following".encode_utf16().collect();
//! assert_eq!(zaris_wasm::slot_for_utf16(&units), 3443);
//! assert_eq!(zaris_wasm::slot_for_bytes(b"user1000"), 3443);
//! ```
//!
//! From JS (`wasm-pack build --target web`, or the npm package `zaris`):
//!
//! ```js
//! import init, * as zaris from 'zaris/web';
//! await init();
//! zaris.slotForUtf16(Uint16Array.from('{user1000}.following', (c) => c.charCodeAt(0))); // 3443
//! ```

use wasm_bindgen::prelude::*;
use zaris_core::slot_for_key;

mod churn;
mod cluster;
mod command;
mod json;
mod scratch;
mod simulate;

pub use churn::simulate_churn_js;
pub use cluster::ClusterMap;
pub use command::route_command;
pub use scratch::{wasm_memory, KeyScratch};
pub use simulate::simulate_retries;

/// Entry points for the fuzz targets (`wasm/fuzz`): the playground's
/// parsers of pasted text. Not part of the API.
#[doc(hidden)]
pub mod _fuzz {
    pub use crate::command::{split_args, SplitError};
}

/// Slot of a key given as UTF-16 code units (a JS string's `charCodeAt`s).
#[wasm_bindgen(js_name = slotForUtf16)]
#[must_use]
pub fn slot_for_utf16(units: &[u16]) -> u16 {
    zaris_core::slot_for_utf16(units)
}

/// Slot of a binary key.
#[wasm_bindgen(js_name = slotForBytes)]
#[must_use]
pub fn slot_for_bytes(bytes: &[u8]) -> u16 {
    slot_for_key(bytes)
}

/// The hashed span of a UTF-16 key as `[start, end)` code-unit offsets (JS
/// string indices), or `undefined` when the whole key is hashed.
#[wasm_bindgen(js_name = hashTagSpanUtf16)]
#[must_use]
pub fn hash_tag_span_utf16(units: &[u16]) -> Option<Vec<u32>> {
    zaris_core::hash_tag_span_utf16(units).map(|r| vec![r.start as u32, r.end as u32])
}

/// The hashed span of a binary key as `[start, end)` byte offsets, or
/// `undefined` when the whole key is hashed.
#[wasm_bindgen(js_name = hashTagSpanBytes)]
#[must_use]
pub fn hash_tag_span(bytes: &[u8]) -> Option<Vec<u32>> {
    zaris_core::hash_tag_span(bytes).map(|r| vec![r.start as u32, r.end as u32])
}

/// The segment of `slot` among `segments` (clamped into 1..=16384; see the
/// core's `segment_for_slot`).
#[wasm_bindgen(js_name = segmentForSlot)]
#[must_use]
pub fn segment_for_slot(slot: u16, segments: u16) -> u16 {
    zaris_core::segment_for_slot(slot, segments)
}

/// Segments of many slots at once.
#[wasm_bindgen(js_name = segmentsForSlots)]
#[must_use]
pub fn segments_for_slots(slots: &[u16], segments: u16) -> Vec<u16> {
    slots
        .iter()
        .map(|&s| zaris_core::segment_for_slot(s, segments))
        .collect()
}

/// Slots of every line of `text` (lines end with `\n` or `\r\n`; a middle
/// empty line is the empty key; the last line needs no `\n`), as a
/// `Uint16Array`. From JS pass `new TextEncoder().encode(text)`: a byte
/// array crosses into wasm as one copy, where a string would be copied a
/// character at a time. Lines may hold any bytes, so binary keys work too.
#[wasm_bindgen(js_name = slotsForUtf8Lines)]
#[must_use]
pub fn slots_for_lines(text: &[u8]) -> Vec<u16> {
    zaris_core::key_lines(text).map(slot_for_key).collect()
}

/// A buffer in wasm memory for a batch of newline-separated keys, so the
/// host can encode its text straight into it (`TextEncoder.encodeInto` on a
/// view of `memory.buffer` at [`KeyBatch::ptr`]) with no intermediate copy:
/// in Chromium that is the fastest way in for large batches.
#[wasm_bindgen]
pub struct KeyBatch {
    bytes: Vec<u8>,
}

#[wasm_bindgen]
impl KeyBatch {
    /// A zeroed buffer of `capacity` bytes (3 per UTF-16 unit always fits
    /// `encodeInto`'s output).
    #[wasm_bindgen(constructor)]
    #[must_use]
    pub fn new(capacity: usize) -> KeyBatch {
        KeyBatch {
            bytes: vec![0; capacity],
        }
    }

    /// Where the buffer starts in wasm memory (valid until the module next
    /// allocates, so view it, fill it, then call [`KeyBatch::slots`]).
    #[must_use]
    pub fn ptr(&self) -> usize {
        self.bytes.as_ptr() as usize
    }

    /// The buffer's size in bytes.
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.bytes.len()
    }

    /// Slots of the keys in the first `len` bytes, as [`slots_for_lines`].
    ///
    /// # Errors
    /// `len` past the buffer's capacity: those bytes were never written, so
    /// they hold no keys (reading them would invent one).
    pub fn slots(&self, len: usize) -> Result<Vec<u16>, JsError> {
        match self.bytes.get(..len) {
            Some(text) => Ok(slots_for_lines(text)),
            None => Err(JsError::new(&format!(
                "{len} bytes asked of a batch of {} bytes",
                self.bytes.len()
            ))),
        }
    }
}

/// [`slots_for_lines`] over UTF-16 code units, through the core's UTF-16
/// path (lone surrogates hash as U+FFFD).
#[wasm_bindgen(js_name = slotsForUtf16Lines)]
#[must_use]
pub fn slots_for_utf16_lines(units: &[u16]) -> Vec<u16> {
    let units = units.strip_suffix(&[u16::from(b'\n')]).unwrap_or(units);
    if units.is_empty() {
        return Vec::new();
    }
    units
        .split(|&u| u == u16::from(b'\n'))
        .map(|line| {
            zaris_core::slot_for_utf16(line.strip_suffix(&[u16::from(b'\r')]).unwrap_or(line))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn units(s: &str) -> Vec<u16> {
        s.encode_utf16().collect()
    }

    #[test]
    fn single_keys() {
        assert_eq!(slot_for_utf16(&units("{user1000}.following")), 3443);
        assert_eq!(slot_for_utf16(&units("123456789")), 12739);
        assert_eq!(slot_for_bytes(b"123456789"), 12739);
        assert_eq!(hash_tag_span_utf16(&units("κ{δ}x")), Some(vec![2, 3]));
        assert_eq!(hash_tag_span("κ{δ}x".as_bytes()), Some(vec![3, 5]));
        assert_eq!(hash_tag_span_utf16(&units("{}x")), None);
    }

    #[test]
    fn batches_agree_with_single_keys() {
        let text = "a\r\n{user1}:x\n\nκλειδί\n123456789\n";
        let want: Vec<u16> = ["a", "{user1}:x", "", "κλειδί", "123456789"]
            .iter()
            .map(|k| slot_for_key(k.as_bytes()))
            .collect();
        assert_eq!(slots_for_lines(text.as_bytes()), want);
        assert_eq!(slots_for_utf16_lines(&units(text)), want);
        assert_eq!(slots_for_lines(b"x"), vec![slot_for_key(b"x")]);
        assert_eq!(
            slots_for_lines(b"\xff\x00{\n\n"),
            vec![slot_for_key(b"\xff\x00{"), 0]
        );
        assert!(slots_for_lines(b"").is_empty());
        let mut batch = KeyBatch::new(64);
        batch.bytes[..text.len()].copy_from_slice(text.as_bytes());
        assert_eq!(batch.slots(text.len()).ok(), Some(want.clone()));
        assert_eq!(batch.slots(64).map(|s| s.len()).ok(), Some(want.len() + 1));
        assert!(slots_for_utf16_lines(&[]).is_empty());
        assert_eq!(
            segments_for_slots(&[0, 8191, 8192, 16383], 2),
            vec![0, 0, 1, 1]
        );
    }
}
