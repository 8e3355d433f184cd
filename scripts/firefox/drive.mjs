// Loads profiles in a built Firefox Profiler (dist/) in headless Chromium and reports what a user sees:
// error banners and console errors, the visible tracks (which one is selected, which are counters), the call
// tree's header, roots and first rows (their accessible labels carry the totals), the profile's interval (Profile
// Info panel). Writes a screenshot of the call tree, the Profile Info panel, the Marker Table and the flame graph
// per profile, and a JSON file of the readings, into --shots. Part of scripts/firefox/check.sh (which installs
// playwright-core and finds chromium); NODE_PATH must reach playwright-core.
//
//   node drive.mjs --dist DIST --shots DIR PROFILE...
//
// Two loopback servers: the app (dist/; an unknown path without an extension is answered with index.html, as
// the app's hosting does; /sw.js, which the build leaves out, with a worker that does nothing) and the
// profiles, with CORS (the app fetches the profile from another origin, as profiler.firefox.com would from
// `profkit view`). Exit status 1 if a profile shows an error or logs one to the console.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { chromium } = require('playwright-core');

const args = process.argv.slice(2);
let dist = null;
let shots = '/tmp/profkit-ffshots';
const profiles = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--dist') dist = args[++i];
  else if (args[i] === '--shots') shots = args[++i];
  else profiles.push(args[i]);
}
if (!dist || profiles.length === 0) {
  console.error('usage: node drive.mjs --dist DIST --shots DIR PROFILE...');
  process.exit(2);
}
fs.mkdirSync(shots, { recursive: true });

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.json': 'application/json',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ftl': 'text/plain; charset=utf-8',
};

function listen(handler) {
  return new Promise((resolve) => {
    const server = http.createServer(handler);
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
}

const distRoot = path.resolve(dist);
const app = await listen((req, res) => {
  const url = new URL(req.url, 'http://x');
  let file = path.join(distRoot, decodeURIComponent(url.pathname));
  if (!file.startsWith(distRoot) || !fs.existsSync(file) || fs.statSync(file).isDirectory()) {
    if (url.pathname === '/sw.js') {
      // The app registers its offline service worker, which `yarn build-sw` (not run) makes: a
      // worker that does nothing stands in, so that the registration succeeds and caches nothing.
      res.writeHead(200, { 'Content-Type': 'text/javascript' });
      res.end('// profkit check: no offline cache\n');
      return;
    }
    if (!url.pathname.endsWith('/') && path.extname(url.pathname) !== '') {
      res.writeHead(404);
      res.end();
      return;
    }
    file = path.join(distRoot, 'index.html');
  }
  res.writeHead(200, { 'Content-Type': TYPES[path.extname(file)] || 'application/octet-stream' });
  fs.createReadStream(file).pipe(res);
});

const byName = new Map(profiles.map((p) => [path.basename(p), path.resolve(p)]));
const files = await listen((req, res) => {
  const cors = {
    'Access-Control-Allow-Origin': '*',
    'Access-Control-Allow-Methods': 'GET, OPTIONS',
    'Access-Control-Allow-Headers': '*',
  };
  if (req.method === 'OPTIONS') {
    res.writeHead(204, cors);
    res.end();
    return;
  }
  const name = decodeURIComponent(new URL(req.url, 'http://x').pathname.replace(/^\/profiles\//, ''));
  const file = byName.get(name);
  if (!file) {
    res.writeHead(404, cors);
    res.end();
    return;
  }
  res.writeHead(200, { ...cors, 'Content-Type': 'application/octet-stream' });
  fs.createReadStream(file).pipe(res);
});

const appBase = `http://127.0.0.1:${app.address().port}`;
const filesBase = `http://127.0.0.1:${files.address().port}/profiles`;

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || 'chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});

let failed = false;
for (const [name] of byName) {
  const stem = name.replace(/\.(fxprof|firefox)?\.?json(\.gz)?$/, '');
  const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
  const consoleErrors = [];
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(m.text());
  });
  page.on('pageerror', (e) => consoleErrors.push(String(e)));
  const profileUrl = `${filesBase}/${encodeURIComponent(name)}`;
  const url = `${appBase}/from-url/${encodeURIComponent(profileUrl)}/`;
  const result = { profile: name, url, ok: false };
  try {
    await page.goto(url);
    await page.waitForSelector('.treeViewRowScrolledColumns, .appErrorBoundary, .rootMessage', {
      timeout: 60000,
    });
    await page.waitForTimeout(1500);
    const error = await page.$eval('body', (b) => {
      const e = b.querySelector('.appErrorBoundary, .rootMessage, .photon-message-bar-error');
      return e ? e.innerText : null;
    });
    result.error = error;
    // A counter track's row holds its graph; thread rows hold an activity graph.
    result.tracks = await page.$$eval('.timelineTrackRow', (rows) =>
      rows.map((r) => ({
        kind: r.classList.contains('timelineTrackGlobalRow') ? 'global' : 'local',
        name: (r.querySelector('.timelineTrackNameButton')?.innerText || '').replace(/\s+/g, ' ').trim(),
        counter: !!r.querySelector('.timelineTrackCounter'),
        selected: r.classList.contains('selected'),
      }))
    );
    result.header = await page.$$eval('.treeViewHeaderColumn', (cols) =>
      cols.map((c) => c.innerText.trim()).filter((t) => t)
    );
    const readRows = () =>
      page.$$eval('.treeViewRowScrolledColumns', (rows) =>
        rows.map((r) => ({ level: Number(r.getAttribute('aria-level')), label: r.getAttribute('aria-label') }))
      );
    result.roots = (await readRows()).filter((r) => r.level === 1).map((r) => r.label.replace(/\s+/g, ' ').trim());
    // The call tree's total: its roots' running counts or times added up (as its "Complete" node says).
    let total = 0;
    let unit = '';
    for (const r of result.roots) {
      const m = /(?:running (?:count|time) is) ([\d,.]+) ?(ms|samples?)/.exec(r);
      if (m) {
        total += Number(m[1].replace(/,/g, ''));
        unit = m[2].startsWith('sample') ? 'samples' : 'ms';
      }
    }
    result.total = unit === 'ms' ? `${total.toFixed(3)}ms` : `${total} ${unit}`;
    // Expand everything under the selected root (the tree has the focus, `*`), as a user exploring would.
    if (await page.$('.treeViewBody')) {
      await page.focus('.treeViewBody');
      await page.keyboard.press('*');
      await page.waitForTimeout(500);
    }
    result.rows = (await readRows()).slice(0, 25).map((r) => `${'  '.repeat(r.level - 1)}${r.label.replace(/\s+/g, ' ').trim()}`);
    await page.screenshot({ path: path.join(shots, `${stem}-calltree.png`) });
    // The Profile Info panel: the interval.
    const info = await page.$('.menuButtonsMetaInfoButtonButton');
    if (info) {
      await info.click();
      await page.waitForSelector('.metaInfoRow', { timeout: 10000 }).catch(() => {});
      await page.waitForTimeout(300);
      result.meta = await page.$$eval('.metaInfoRow, .moreInfoRow', (rows) =>
        rows.map((r) => r.innerText.replace(/\s+/g, ' ').trim()).filter((t) => t)
      );
      await page.screenshot({ path: path.join(shots, `${stem}-info.png`) });
      await page.keyboard.press('Escape');
    }
    // The Marker Table of the selected thread, searched for Mono's counter markers.
    const markers = await page.$('[data-name="marker-table"]');
    if (markers) {
      await markers.click();
      await page.waitForTimeout(800);
      // The counter markers first: the ones Mono's counters became.
      result.markerRows = await page.$$eval('.markerTable .treeViewRowScrolledColumns', (rows) =>
        rows
          .map((r) => [...r.children].map((c) => c.textContent.trim()).filter((t) => t).join(': '))
          .filter((t) => t)
          .sort((a, b) => Number(/ = /.test(b)) - Number(/ = /.test(a)))
          .slice(0, 10)
      );
      await page.screenshot({ path: path.join(shots, `${stem}-markers.png`) });
    }
    // The flame graph of the selected thread.
    const flame = await page.$('[data-name="flame-graph"]');
    if (flame) {
      await flame.click();
      await page.waitForTimeout(1000);
      await page.screenshot({ path: path.join(shots, `${stem}-flame.png`) });
    }
    result.consoleErrors = consoleErrors;
    result.ok = !error && consoleErrors.length === 0;
  } catch (e) {
    result.error = String(e);
    result.consoleErrors = consoleErrors;
    await page.screenshot({ path: path.join(shots, `${stem}-failure.png`) }).catch(() => {});
  }
  if (!result.ok) failed = true;
  fs.writeFileSync(path.join(shots, `${stem}.json`), JSON.stringify(result, null, 2) + '\n');
  const selected = (result.tracks || []).filter((t) => t.selected).map((t) => t.name);
  const counters = (result.tracks || []).filter((t) => t.counter).length;
  console.log(`${result.ok ? 'ok  ' : 'FAIL'} ${name}`);
  if (result.error) console.log(`     error: ${result.error}`);
  for (const e of (result.consoleErrors || []).slice(0, 3)) console.log(`     console error: ${e}`);
  console.log(`     tracks: ${(result.tracks || []).length} (${counters} counters); selected: ${selected.join(', ')}`);
  const list = (result.tracks || []).map((t) => `${t.kind === 'local' ? '  ' : ''}${t.name}${t.counter ? ' [counter]' : ''}${t.selected ? ' [selected]' : ''}`);
  console.log(`     track list: ${list.join(' | ')}`);
  console.log(`     call tree: ${(result.header || []).join(' | ')}; total ${result.total}`);
  for (const r of (result.roots || []).slice(0, 5)) console.log(`     root: ${r}`);
  if (result.markerRows?.length) console.log(`     marker table: ${result.markerRows.slice(0, 3).join(' | ')} …`);
  const interval = (result.meta || []).find((m) => /^Interval/.test(m));
  if (interval) console.log(`     ${interval}`);
  await page.close();
}

await browser.close();
app.close();
files.close();
process.exit(failed ? 1 : 0);
