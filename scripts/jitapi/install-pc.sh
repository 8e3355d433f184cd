#!/usr/bin/env bash
# Installs the library, header and pkg-config file under PREFIX (default /usr/local).
set -euo pipefail
cd "$(dirname "$0")/../.."
PREFIX="${1:-/usr/local}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
cargo build --release -p profkit-jitapi
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
install -d "$PREFIX/lib/pkgconfig" "$PREFIX/include"
install -m 644 "$CARGO_TARGET_DIR/release/libprofkit_jitapi.a" "$PREFIX/lib/"
install -m 755 "$CARGO_TARGET_DIR/release/libprofkit_jitapi.so" "$PREFIX/lib/"
install -m 644 crates/jitapi/include/profkit_jitprofiling.h "$PREFIX/include/"
sed -e "s|@PREFIX@|$PREFIX|" -e "s|@VERSION@|$VERSION|" crates/jitapi/profkit-jitapi.pc.in \
  > "$PREFIX/lib/pkgconfig/profkit-jitapi.pc"
echo "installed; try: pkg-config --cflags --libs profkit-jitapi"
