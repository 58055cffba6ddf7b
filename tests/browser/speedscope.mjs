// Opens a Chrome trace in speedscope (served from localhost) in headless Chromium, checks that
// it imports without an error and shows the trace's threads, and saves a screenshot.
//
//   node speedscope.mjs TRACE.json SCREENSHOT.png [THREAD_COUNT]
//
// Exit status 0 when the trace imported and shows at least THREAD_COUNT threads (default 1).
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const [trace, screenshot, minThreads = '1'] = process.argv.slice(2);
if (!trace || !screenshot) {
  console.error('usage: node speedscope.mjs TRACE.json SCREENSHOT.png [THREAD_COUNT]');
  process.exit(2);
}
const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, 'node_modules', 'speedscope', 'dist', 'release');
const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json',
                '.wasm': 'application/wasm', '.png': 'image/png', '.woff2': 'font/woff2' };
const server = createServer((req, res) => {
  let path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
  if (path === '/') path = '/index.html';
  try {
    const body = path === '/trace.json' ? readFileSync(trace) : readFileSync(join(root, path));
    res.writeHead(200, { 'content-type': types[extname(path)] ?? 'application/octet-stream' });
    res.end(body);
  } catch {
    res.writeHead(404);
    res.end();
  }
});
await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
const port = server.address().port;

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
                                        args: ['--no-sandbox'] });
let failed = '';
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 700 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('dialog', async (d) => { errors.push('dialog: ' + d.message()); await d.dismiss(); });
  await page.goto(`http://127.0.0.1:${port}/#profileURL=${encodeURIComponent(`http://127.0.0.1:${port}/trace.json`)}&title=trace.json`);
  // speedscope names each thread's profile and shows "k/n" in its thread selector.
  const toolbar = page.locator('text=/\\d+\\/\\d+/').first();
  await toolbar.waitFor({ timeout: 30000 });
  const text = await toolbar.textContent();
  const m = /(\d+)\/(\d+)/.exec(text ?? '');
  const threads = m ? Number(m[2]) : 0;
  const body = await page.textContent('body');
  if (/Something went wrong|Unrecognized format|Failed to load/i.test(body ?? '')) failed = 'speedscope reported an import error';
  if (errors.length) failed = 'page errors: ' + errors.join('; ');
  if (threads < Number(minThreads)) failed = `shows ${threads} threads, expected at least ${minThreads}`;
  await page.waitForTimeout(500);
  await page.screenshot({ path: screenshot });
  console.log(`speedscope imported ${trace}: ${threads} threads${failed ? '' : ', no errors'}`);
} catch (e) {
  failed = String(e);
} finally {
  await browser.close();
  server.close();
}
if (failed) {
  console.error('FAILED: ' + failed);
  process.exit(1);
}
