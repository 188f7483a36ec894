// `npm publish --dry-run` on the packed npm package (target/npm/package,
// `just npm-pack`): it must send exactly what a user needs (the entry
// points, their types, the two wasm builds with their glue, the README and
// the licenses) and nothing else: no sources, maps, tests or lockfiles.
import { execFileSync } from 'node:child_process';
import assert from 'node:assert/strict';
import path from 'node:path';

const root = new URL('../', import.meta.url).pathname;
const dir = path.join(root, 'target/npm/package');
const report = JSON.parse(execFileSync('npm', ['publish', '--dry-run', '--json'], { cwd: dir, stdio: ['ignore', 'pipe', 'ignore'] }));
const { files, size, name, version } = report.zaris;
const sent = files.map((f) => f.path).sort();
const wanted = [
  'LICENSE-APACHE', 'LICENSE-MIT', 'README.md', 'index.cjs', 'index.d.ts', 'index.mjs', 'package.json',
  'node/zaris_wasm.d.ts', 'node/zaris_wasm.js', 'node/zaris_wasm_bg.wasm',
  'web/zaris_wasm.d.ts', 'web/zaris_wasm.js', 'web/zaris_wasm_bg.wasm',
].sort();
assert.deepEqual(sent, wanted, 'npm publish would send other files than a user needs');
for (const f of files) assert.ok(f.size > 0, `${f.path} is empty`);
console.log(`npm publish --dry-run: ${name}@${version}, ${files.length} files, ${(size / 1024).toFixed(1)} KiB packed`);
