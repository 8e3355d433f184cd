// Rewrites the Firefox Profiler's package.json for scripts/firefox/check.sh: the two dependencies that are not on
// the npm registry point at profkit's stand-ins, and devDependencies keep only what scripts/build.mjs imports.
import fs from 'node:fs';

const [from, to] = process.argv.slice(2);
const pkg = JSON.parse(fs.readFileSync(from, 'utf8'));
const buildTools = [
  'esbuild',
  'esbuild-plugin-copy',
  'esbuild-plugin-wasm',
  'browserslist',
  'browserslist-to-esbuild',
  'caniuse-lite',
];
pkg.dependencies['json-slabs'] = 'file:.profkit-standins/json-slabs';
pkg.dependencies['iongraph-web'] = 'file:.profkit-standins/iongraph-web';
const dev = {};
for (const name of buildTools) {
  if (pkg.devDependencies?.[name]) dev[name] = pkg.devDependencies[name];
}
pkg.devDependencies = dev;
delete pkg.scripts;
delete pkg.devEngines;
fs.writeFileSync(to, JSON.stringify(pkg, null, 2) + '\n');
