#!/usr/bin/env bash
# A real browser against `profkit view`'s CORS, without the internet: Chromium (headless) maps
# profiler.firefox.com (and evil.example) to 127.0.0.1, where a local HTTPS server (a throwaway
# self-signed certificate, port 443: run as root) serves a page that fetches the profile, posts
# to /source/v1 (a preflighted request) and /symbolicate/v5, and tries a wrong token. From
# https://profiler.firefox.com everything but the wrong token must be readable; from
# https://evil.example nothing. Needs chromium, openssl, python3 and a built profkit.
#
#   scripts/view/cors-chromium.sh [PROFILE]   (default: the node perf.data fixture, converted)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
profkit=${PROFKIT:-$root/target/debug/profkit}
input=${1:-$root/tests/fixtures/perf/node-fp.data}
work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

setsid "$profkit" view --no-open --port 0 "$input" >"$work/url" 2>"$work/err" &
pids+=($!)
for _ in $(seq 100); do grep -q 'Ctrl-C' "$work/err" 2>/dev/null && break; sleep 0.1; done
local_url=$(sed -n 's/.*serving \(http[^ ]*\) .*/\1/p' "$work/err")
[ -n "$local_url" ] || { cat "$work/err"; exit 1; }
base=${local_url%/*}

openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/k.pem" -out "$work/c.pem" -days 1 \
    -subj /CN=localhost 2>/dev/null
cat >"$work/index.html" <<HTML
<html><head><title>start</title></head><body><pre id=out></pre><script>
async function run() {
  const r = [];
  const t = async (name, url, init, show) => {
    try { const res = await fetch(url, init); r.push(name + ' ' + res.status + ' ' + await show(res)); }
    catch (e) { r.push(name + ' blocked'); }
  };
  await t('GET', '$local_url', {}, async res => {
    const b = new Uint8Array(await res.arrayBuffer()); return b.length + ' bytes, gzip ' + (b[0] == 0x1f && b[1] == 0x8b); });
  await t('SOURCE', '$base/source/v1', {method: 'POST', headers: {'Content-Type': 'application/json'},
    body: JSON.stringify({debugName: 'x', debugId: 'y', moduleOffset: '0x1', file: '/etc/passwd'})},
    async res => (await res.text()).slice(0, 40));
  await t('SYMBOLICATE', '$base/symbolicate/v5', {method: 'POST',
    body: JSON.stringify({jobs: [{memoryMap: [['a', 'b']], stacks: [[[0, 1]]]}]})},
    async res => (await res.text()).slice(0, 40));
  await t('WRONG-TOKEN', '${base}0/profile.json', {}, async res => '');
  document.getElementById('out').textContent = r.join('\n');
  document.title = 'done';
}
run();
</script></body></html>
HTML
cat >"$work/srv.py" <<'PY'
import http.server, ssl, sys, os
os.chdir(sys.argv[1])
class H(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a): pass
s = http.server.HTTPServer(('127.0.0.1', 443), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain('c.pem', 'k.pem')
s.socket = ctx.wrap_socket(s.socket, server_side=True)
s.serve_forever()
PY
setsid python3 "$work/srv.py" "$work" &
pids+=($!)
sleep 1

page() {
    timeout 60 chromium --headless=new --no-sandbox --disable-gpu --ignore-certificate-errors \
        --user-data-dir="$work/profile-$1" --host-resolver-rules="MAP $1 127.0.0.1" \
        --virtual-time-budget=8000 --dump-dom "https://$1/index.html" 2>/dev/null |
        sed -n '/<pre/,/<\/pre>/p' | sed 's/.*<pre id="out">//; s/<\/pre>.*//'
}
echo "== from https://profiler.firefox.com"
ok=$(page profiler.firefox.com)
echo "$ok"
echo "== from https://evil.example"
evil=$(page evil.example)
echo "$evil"
fail=0
grep -q '^GET 200 .* gzip true' <<<"$ok" || fail=1
grep -q '^SOURCE 404 {"error":"/etc/passwd: not a file' <<<"$ok" || fail=1
grep -q '^SYMBOLICATE 200 {"results"' <<<"$ok" || fail=1
grep -q '^WRONG-TOKEN blocked' <<<"$ok" || fail=1
[ "$(grep -c blocked <<<"$evil")" = 4 ] || fail=1
[ $fail = 0 ] && echo "cors-chromium: ok" || { echo "cors-chromium: FAILED"; exit 1; }
