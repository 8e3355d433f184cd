#!/usr/bin/env python3
"""Writes an XRay profiling-mode file (layout: crates/xray/src/profile/mod.rs) whose call paths
name millions of distinct functions, for the address-space measurements of
scripts/limits/xray-profile.sh (issue #23, B5).

Usage: xray-profile-gen.py SHAPE MB OUT
  deep: one thread, one record whose call path is N distinct functions deep (ids N..1 leaf
        first, 4 bytes each): MB megabytes hold ~MB*262,144 functions in one stack.
  wide: one thread, N records of a path [main, f] (f distinct, 1 call each): 28 bytes a record,
        ~MB*37,449 functions, each its own path.
  paths: one thread, records whose call paths are DEPTH (environment, default 1,500,000)
        distinct functions deep, no function in two paths: a call tree of ~MB*262,144 nodes
        whose first path alone fills a writer's frames up to DEPTH (the Firefox writer's worst
        case: its bound of frames reached with the input's whole call tree beside it).
"""
import os
import struct
import sys


def main():
    shape, mb, out = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    size = int(mb * 1_000_000)
    header = struct.pack("<QQQQ", 0x7872617970726F66, 0x20180424, 0, 42)
    with open(out, "wb") as f:
        f.write(header)
        if shape == "deep":
            depth = (size - 32 - 16 - 20) // 4
            f.write(struct.pack("<IIQ", 16 + depth * 4 + 20, 0, 7))
            chunk = 1 << 16
            for hi in range(depth, 0, -chunk):
                lo = max(hi - chunk, 0)
                f.write(struct.pack("<%dI" % (hi - lo), *range(hi, lo, -1)))
            f.write(struct.pack("<IQQ", 0, 1, 1000))
        elif shape == "wide":
            n = (size - 32 - 16) // 28
            f.write(struct.pack("<IIQ", 16 + n * 28, 0, 7))
            rec = struct.Struct("<IIIQQ")
            buf = bytearray()
            for i in range(n):
                # leaf first: f (2 + i), then main (1)
                buf += rec.pack(2 + i, 1, 0, 1, 10 + i % 1000)
                if len(buf) >= 1 << 20:
                    f.write(buf)
                    buf.clear()
            f.write(buf)
        elif shape == "paths":
            depth = int(os.environ.get("DEPTH", "1500000"))
            rec_size = depth * 4 + 20
            n = max((size - 32 - 16) // rec_size, 1)
            f.write(struct.pack("<IIQ", 16 + n * rec_size, 0, 7))
            for r in range(n):
                top = (r + 1) * depth
                chunk = 1 << 16
                for hi in range(top, top - depth, -chunk):
                    lo = max(hi - chunk, top - depth)
                    f.write(struct.pack("<%dI" % (hi - lo), *range(hi, lo, -1)))
                f.write(struct.pack("<IQQ", 0, 1, 1000))
        else:
            sys.exit("shape: deep, wide or paths")


main()
