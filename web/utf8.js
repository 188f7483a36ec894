// UTF-8 encoding of a JS string into a caller's byte array, lone surrogates
// as U+FFFD, exactly as `TextEncoder.encodeInto` writes it. Chromium's
// encodeInto takes 33-43 ms on the playground's 12.9M-character benchmark
// text (its path for strings holding non-Latin-1 characters); this loop
// takes about 24 ms, so the batch call uses it. `out` must hold
// `3 * text.length` bytes, which is always enough.

/** Encodes `text` into `out` from index 0; returns the bytes written. */
export function encodeUtf8Into(text, out) {
  const n = text.length;
  let j = 0;
  for (let i = 0; i < n; i++) {
    let c = text.charCodeAt(i);
    if (c < 0x80) {
      out[j++] = c;
      continue;
    }
    if (c < 0x800) {
      out[j++] = 0xc0 | (c >> 6);
      out[j++] = 0x80 | (c & 0x3f);
      continue;
    }
    if (c >= 0xd800 && c < 0xe000) {
      const low = i + 1 < n ? text.charCodeAt(i + 1) : 0;
      if (c < 0xdc00 && low >= 0xdc00 && low < 0xe000) {
        i++;
        c = 0x10000 + ((c - 0xd800) << 10) + (low - 0xdc00);
        out[j++] = 0xf0 | (c >> 18);
        out[j++] = 0x80 | ((c >> 12) & 0x3f);
        out[j++] = 0x80 | ((c >> 6) & 0x3f);
        out[j++] = 0x80 | (c & 0x3f);
        continue;
      }
      c = 0xfffd; // a lone surrogate
    }
    out[j++] = 0xe0 | (c >> 12);
    out[j++] = 0x80 | ((c >> 6) & 0x3f);
    out[j++] = 0x80 | (c & 0x3f);
  }
  return j;
}
