//! The npm package's fast path: the host writes keys straight into wasm
//! memory and asks for their slots, with no allocation and no copy per
//! call. Through wasm-bindgen's slice glue, every call of `slotForBytes`
//! allocates in the module, copies and frees: measured in Node, 186 ns for
//! an 8-byte key where the hash takes a few. Here a call is one write into
//! a view the host keeps and one call with a length.

use wasm_bindgen::prelude::*;
use zaris_core::slot_for_key;

/// A place in wasm memory for keys: `bytes` for their bytes (back to back
/// for a batch), `ends` for where each batch key ends, `slots` for the
/// answers. Views of it stay valid until the module's memory grows (then
/// `memory.buffer` changes: view it again).
#[wasm_bindgen]
pub struct KeyScratch {
    bytes: Vec<u8>,
    ends: Vec<u32>,
    slots: Vec<u16>,
}

#[wasm_bindgen]
impl KeyScratch {
    /// Room for `bytes` bytes of keys and `keys` keys per batch call.
    #[wasm_bindgen(constructor)]
    #[must_use]
    pub fn new(bytes: usize, keys: usize) -> KeyScratch {
        KeyScratch {
            bytes: vec![0; bytes],
            ends: vec![0; keys],
            slots: vec![0; keys],
        }
    }

    /// Where the key bytes start in wasm memory.
    #[wasm_bindgen(js_name = bytesPtr)]
    #[must_use]
    pub fn bytes_ptr(&self) -> usize {
        self.bytes.as_ptr() as usize
    }

    /// Room for key bytes.
    #[wasm_bindgen(js_name = bytesCapacity)]
    #[must_use]
    pub fn bytes_capacity(&self) -> usize {
        self.bytes.len()
    }

    /// Where the batch keys' ends (`u32`, little-endian) start.
    #[wasm_bindgen(js_name = endsPtr)]
    #[must_use]
    pub fn ends_ptr(&self) -> usize {
        self.ends.as_ptr() as usize
    }

    /// Where the batch's slots (`u16`) are written.
    #[wasm_bindgen(js_name = slotsPtr)]
    #[must_use]
    pub fn slots_ptr(&self) -> usize {
        self.slots.as_ptr() as usize
    }

    /// Room for keys per batch call.
    #[wasm_bindgen(js_name = keysCapacity)]
    #[must_use]
    pub fn keys_capacity(&self) -> usize {
        self.ends.len()
    }

    /// The slot of the key in the first `len` bytes; `len` past the room is
    /// an error value, 65535 (no slot is).
    #[must_use]
    pub fn slot(&self, len: usize) -> u16 {
        self.bytes.get(..len).map_or(u16::MAX, slot_for_key)
    }

    /// The slots of `count` keys, key `i` being the bytes from the end of
    /// key `i - 1` (0 for the first) to `ends[i]`, written to `slots`.
    ///
    /// # Errors
    /// `count` past the room, or ends that go backwards or past the bytes.
    pub fn fill(&mut self, count: usize) -> Result<(), JsError> {
        let ends = self.ends.get(..count).ok_or_else(|| {
            JsError::new(&format!(
                "{count} keys in a scratch for {}",
                self.ends.len()
            ))
        })?;
        let mut start = 0usize;
        for (slot, &end) in self.slots.iter_mut().zip(ends) {
            let end = end as usize;
            let key = self
                .bytes
                .get(start..end)
                .ok_or_else(|| JsError::new("a key ends before the previous or past the bytes"))?;
            *slot = slot_for_key(key);
            start = end;
        }
        Ok(())
    }
}

#[wasm_bindgen]
impl KeyScratch {
    /// The slots of the newline-separated keys in the first `len` bytes
    /// (read as `slotsForUtf8Lines` reads them), written to `slots`; how
    /// many keys there were (more than the room: only the room's worth
    /// written), or `usize::MAX` for `len` past the bytes.
    #[wasm_bindgen(js_name = fillLines)]
    #[must_use]
    pub fn fill_lines(&mut self, len: usize) -> usize {
        let Some(text) = self.bytes.get(..len) else {
            return usize::MAX;
        };
        let mut count = 0;
        for key in zaris_core::key_lines(text) {
            if let Some(slot) = self.slots.get_mut(count) {
                *slot = slot_for_key(key);
            }
            count += 1;
        }
        count
    }
}

/// The module's memory, for views of a [`KeyScratch`] (the nodejs glue
/// keeps its own handle private).
#[wasm_bindgen(js_name = wasmMemory)]
#[must_use]
pub fn wasm_memory() -> JsValue {
    wasm_bindgen::memory()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_written_in_place_get_their_slots() {
        let mut scratch = KeyScratch::new(64, 4);
        scratch.bytes[..20].copy_from_slice(b"{user1000}.following");
        assert_eq!(scratch.slot(20), 3443);
        assert_eq!(scratch.slot(65), u16::MAX, "past the room");
        scratch.bytes[..6].copy_from_slice(b"abcdef");
        scratch.ends[..3].copy_from_slice(&[1, 3, 6]);
        scratch.fill(3).unwrap();
        assert_eq!(
            scratch.slots[..3],
            [
                slot_for_key(b"a"),
                slot_for_key(b"bc"),
                slot_for_key(b"def")
            ]
        );
    }
}
