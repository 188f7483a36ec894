// zaris: Redis Cluster key slots from Zaris's Rust core.

/**
 * A key: a string (hashed as UTF-8, a lone surrogate as U+FFFD), a number,
 * bigint or boolean (hashed as the text ioredis sends, `String(key)`), a
 * Buffer, a Uint8Array or byte values.
 */
export type Key = string | number | bigint | boolean | Uint8Array | ArrayLike<number>;

/** The slot of `key`: exactly CLUSTER KEYSLOT. */
export function generate(key: Key): number;
/** The slot all `keys` share, or -1 when they do not share one (or there are none). */
export function generateMulti(keys: ArrayLike<Key>): number;
/** The slots of `keys`, in few calls into the module. */
export function generateBatch(keys: ArrayLike<Key>): Uint16Array;

export * from './node/zaris_wasm';

/** The main export: `generate` itself, carrying every other export (as cluster-key-slot's is). */
declare const zaris: typeof generate & typeof import('./node/zaris_wasm') & {
  generate: typeof generate;
  generateMulti: typeof generateMulti;
  generateBatch: typeof generateBatch;
};
export default zaris;
