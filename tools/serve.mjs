// A static file server on 127.0.0.1: `./run play` serves web/ with it, and
// the browser tests start one per test file. Node is all it needs.
//
//   node tools/serve.mjs DIR [PORT]
import { createServer } from 'node:http';
import { readFile } from 'node:fs';
import { extname, join, normalize, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const TYPES = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.mjs': 'text/javascript',
  '.css': 'text/css', '.wasm': 'application/wasm', '.svg': 'image/svg+xml',
  '.json': 'application/json', '.png': 'image/png', '.ts': 'text/plain',
};

/** Serves `dir` on 127.0.0.1:`port` (0: a free port): `{ url, close() }`. */
export async function serveStatic(dir, port = 0) {
  const root = resolve(dir);
  const server = createServer((req, res) => {
    let path;
    try {
      path = normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname));
    } catch {
      res.writeHead(400).end();
      return;
    }
    const file = join(root, path.endsWith('/') ? `${path}index.html` : path);
    if (!file.startsWith(root)) { res.writeHead(403).end(); return; }
    readFile(file, (error, body) => {
      if (error) { res.writeHead(404).end(); return; }
      res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' }).end(body);
    });
  });
  await new Promise((ready, fail) => {
    server.once('error', fail);
    server.listen(port, '127.0.0.1', ready);
  });
  return {
    url: `http://127.0.0.1:${server.address().port}/`,
    close: () => new Promise((done) => server.close(done)),
  };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [dir = 'web', port = '8080'] = process.argv.slice(2);
  try {
    const { url } = await serveStatic(dir, Number(port));
    console.log(`==> serving ${dir}/ on ${url} (the dashboard: ${url}dashboard/); Ctrl-C stops it`);
  } catch (error) {
    console.error(`cannot serve on 127.0.0.1:${port}: ${error.message}` +
      (error.code === 'EADDRINUSE' ? ` (pick another port: ./run play ${Number(port) + 1})` : ''));
    process.exit(1);
  }
}
