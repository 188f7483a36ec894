// A JS string as the UTF-16 code units the core's UTF-16 path takes.
// (Not `Uint16Array.from(string)`: that iterates code points and garbles
// astral characters such as emoji.)
export function utf16Units(text) {
  const out = new Uint16Array(text.length);
  for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
  return out;
}
