#!/usr/bin/env bash
# profkit record against perf record and samply record, side by side (see record.py).
# usage: scripts/bench/record.sh [--rounds 5] [--seconds 10] [--freq 999]
exec python3 "$(dirname "$0")/record.py" "$@"
