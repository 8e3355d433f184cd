#!/usr/bin/env bash
# Builds libprofkit_jitapi.so / .a (release) and prints their paths.
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
cargo build --release -p profkit-jitapi >&2
echo "$CARGO_TARGET_DIR/release/libprofkit_jitapi.so"
echo "$CARGO_TARGET_DIR/release/libprofkit_jitapi.a"
