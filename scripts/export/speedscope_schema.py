#!/usr/bin/env python3
"""Validate a speedscope file against the JSON schema shipped in the npm `speedscope` package.

Usage: speedscope_schema.py PROFILE.speedscope.json SCHEMA.json

Prints "ok" and exits 0 when valid; prints every violation and exits 1 otherwise.
Uses the `jsonschema` package (draft-07, as the schema declares).
"""
import json
import sys

import jsonschema


def main():
    with open(sys.argv[1], "rb") as f:
        doc = json.load(f)
    with open(sys.argv[2], "rb") as f:
        schema = json.load(f)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    errors = sorted(cls(schema).iter_errors(doc), key=lambda e: list(e.absolute_path))
    for e in errors[:20]:
        print(f"{'/'.join(map(str, e.absolute_path))}: {e.message[:300]}", file=sys.stderr)
    if errors:
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
