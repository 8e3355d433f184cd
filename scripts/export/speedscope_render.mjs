#!/usr/bin/env node
// Load a profile into the real speedscope app (npm `speedscope`), offline, in headless
// Chromium, and check that it renders without error.
//
// Usage: node speedscope_render.mjs NODE_MODULES CHROMIUM PROFILE [SCREENSHOT.png]
//
// NODE_MODULES holds `speedscope` and `puppeteer-core` (scripts/ci/install-export-deps.sh puts
// them in target/export-deps/npm/node_modules). The profile is handed to the app the way the
// `speedscope` CLI does it: a script calling `speedscope.loadFileFromBase64(name, base64)`,
// named by `#localProfilePath=` in the file:// URL of the app's index.html — no server, no
// network. Any format speedscope imports works (speedscope JSON, Chrome trace events, …).
// Passes (exit 0, a JSON summary on stdout) when the page title names the loaded profile, the
// page shows no error, the console has no error or warning and no script threw, and the
// screenshot is not blank (many distinct colours: the flame chart is drawn).
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const [nodeModules, chromium, profile, shotArg] = process.argv.slice(2);
if (!profile) {
  console.error('usage: speedscope_render.mjs NODE_MODULES CHROMIUM PROFILE [SCREENSHOT.png]');
  process.exit(2);
}
const require = createRequire(path.join(path.resolve(nodeModules), 'noop.js'));
const puppeteer = require('puppeteer-core');

const app = path.join(path.resolve(nodeModules), 'speedscope/dist/release/index.html');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'profkit-speedscope-'));
const loader = path.join(tmp, 'profile.js');
const name = path.basename(profile);
fs.writeFileSync(
  loader,
  `speedscope.loadFileFromBase64(${JSON.stringify(name)}, ${JSON.stringify(
    fs.readFileSync(profile).toString('base64'),
  )})`,
);
const shot = shotArg || path.join(tmp, 'screenshot.png');

const problems = [];
// Whatever happens (a page stuck in a loop), give up after a minute.
const watchdog = setTimeout(() => {
  console.log(JSON.stringify({ problems: [...problems, 'timed out after 60 s'] }));
  process.exit(1);
}, 60000);
const browser = await puppeteer.launch({
  executablePath: chromium,
  headless: true,
  protocolTimeout: 30000,
  userDataDir: path.join(tmp, 'user-data'),
  args: [
    '--no-sandbox',
    '--allow-file-access-from-files',
    '--use-angle=swiftshader',
    '--enable-unsafe-swiftshader',
    '--no-first-run',
    '--disable-extensions',
    '--disable-background-networking',
  ],
});
let summary = {};
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1200, height: 800 });
  // Errors, and warnings too: speedscope's importers only warn when, say, an end event
  // matches no open frame.
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warn' || m.type() === 'warning') {
      problems.push(`console ${m.type()}: ${m.text()}`);
    }
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`));
  await page.goto(`file://${app}#localProfilePath=${loader}`, {
    waitUntil: 'domcontentloaded',
    timeout: 20000,
  });
  try {
    await page.waitForFunction(
      () => document.title.endsWith(' - speedscope') || document.body.innerText.includes('Something went wrong'),
      { timeout: 20000 },
    );
  } catch (e) {
    problems.push(`the profile did not load within 20 s (title ${JSON.stringify(await page.title())})`);
  }
  // Let the flame chart draw.
  await new Promise((r) => setTimeout(r, 1000));
  const body = await page.evaluate(() => document.body.innerText);
  for (const bad of ['Something went wrong', 'Unrecognized format', 'Failed to load']) {
    if (body.includes(bad)) problems.push(`the page says: ${bad}`);
  }
  await page.screenshot({ path: shot });
  // Count the screenshot's colours in a 2D canvas (the app's own canvas is WebGL).
  const png = fs.readFileSync(shot).toString('base64');
  const colours = await page.evaluate(async (data) => {
    const img = new Image();
    img.src = `data:image/png;base64,${data}`;
    await img.decode();
    const c = document.createElement('canvas');
    c.width = img.width;
    c.height = img.height;
    const g = c.getContext('2d');
    g.drawImage(img, 0, 0);
    const px = g.getImageData(0, 0, c.width, c.height).data;
    const seen = new Set();
    for (let i = 0; i < px.length; i += 4) seen.add((px[i] << 16) | (px[i + 1] << 8) | px[i + 2]);
    return seen.size;
  }, png);
  if (colours < 16) problems.push(`the screenshot is blank (${colours} colours)`);
  summary = { title: await page.title(), colours, screenshot: shot, text: body.slice(0, 300) };
} catch (e) {
  problems.push(`driver error: ${e.message}`);
} finally {
  await browser.close();
}
summary.problems = problems;
console.log(JSON.stringify(summary));
fs.rmSync(path.join(tmp, 'user-data'), { recursive: true, force: true });
clearTimeout(watchdog);
process.exit(problems.length ? 1 : 0);
