#!/usr/bin/env python3
"""Decodes profkit's OpenTelemetry profiles with the official generated classes (PyPI package
opentelemetry-proto) and checks them.

Usage: otlp_check.py FILE [--total TYPE=N]... [--name NAME]... [--attr KEY=VALUE]...

FILE ending in .json is parsed with google.protobuf.json_format (the OTLP/JSON encoding),
anything else with ProfilesData.FromString (binary protobuf). Checks:
  * every dictionary table has its zero value at index 0 (string_table[0] == "");
  * every index (stack, location, function, mapping, attribute, string) is in range;
  * a sample has values or timestamps, the same number of each when it has both;
  * the attribute keys of a sample, location and mapping are unique;
  * --total TYPE=N: the values of all profiles of sample type TYPE add up to N (for timestamps
    without values, each counts 1);
  * --name NAME: NAME is in the string table and names a function;
  * --attr KEY=VALUE: the attribute table has KEY with the string value VALUE;
  * the same bytes (or JSON) decode as the collector's ExportProfilesServiceRequest, the body
    of an OTLP export (docs/fleet.md posts the file as it is).
Prints one JSON line: {"file", "encoding", "profiles", "totals": {type: sum}, "samples":
{type: n}}; exits 1 with the reasons on stderr when a check fails.
"""

import json
import sys

from google.protobuf import json_format
from opentelemetry.proto.collector.profiles.v1development import profiles_service_pb2
from opentelemetry.proto.profiles.v1development import profiles_pb2


def load(path, message):
    with open(path, "rb") as f:
        raw = f.read()
    if path.endswith(".json"):
        return json_format.Parse(raw.decode("utf-8"), message()), "json"
    return message.FromString(raw), "protobuf"


def main(argv):
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    path = argv[0]
    totals_wanted = {}
    names_wanted = []
    attrs_wanted = []
    rest = argv[1:]
    while rest:
        opt = rest.pop(0)
        if opt == "--total" and rest:
            t, n = rest.pop(0).split("=", 1)
            totals_wanted[t] = int(n)
        elif opt == "--name" and rest:
            names_wanted.append(rest.pop(0))
        elif opt == "--attr" and rest:
            attrs_wanted.append(tuple(rest.pop(0).split("=", 1)))
        else:
            print(f"otlp_check: unknown argument {opt!r}", file=sys.stderr)
            return 2

    data, encoding = load(path, profiles_pb2.ProfilesData)
    request, _ = load(path, profiles_service_pb2.ExportProfilesServiceRequest)
    d = data.dictionary
    errors = []

    def err(msg):
        if len(errors) < 20:
            errors.append(msg)

    if (list(request.resource_profiles) != list(data.resource_profiles)
            or request.dictionary != data.dictionary):
        err("the file does not decode as the same ExportProfilesServiceRequest")

    strings = list(d.string_table)
    if not strings or strings[0] != "":
        err("string_table[0] is not \"\"")
    for table, zero in [
        ("mapping_table", profiles_pb2.Mapping()),
        ("location_table", profiles_pb2.Location()),
        ("function_table", profiles_pb2.Function()),
        ("attribute_table", profiles_pb2.KeyValueAndUnit()),
        ("stack_table", profiles_pb2.Stack()),
    ]:
        t = getattr(d, table)
        if len(t) == 0 or t[0] != zero:
            err(f"{table}[0] is not the zero value")
    if len(d.link_table) == 0:
        err("link_table[0] is missing")

    def in_range(i, n, what):
        if not 0 <= i < n:
            err(f"{what} {i} out of range (table of {n})")

    def attrs_unique(indices, what):
        keys = []
        for a in indices:
            in_range(a, len(d.attribute_table), f"{what} attribute")
            if 0 <= a < len(d.attribute_table):
                keys.append(d.attribute_table[a].key_strindex)
        if len(keys) != len(set(keys)):
            err(f"{what}: duplicate attribute keys")

    for i, f in enumerate(d.function_table):
        for s in (f.name_strindex, f.system_name_strindex, f.filename_strindex):
            in_range(s, len(strings), f"function {i} string")
        if i and not (f.name_strindex or f.system_name_strindex or f.filename_strindex):
            err(f"function {i} has no name, system name or file")
    for i, m in enumerate(d.mapping_table):
        in_range(m.filename_strindex, len(strings), f"mapping {i} filename")
        attrs_unique(m.attribute_indices, f"mapping {i}")
    for i, loc in enumerate(d.location_table):
        in_range(loc.mapping_index, len(d.mapping_table), f"location {i} mapping")
        for line in loc.lines:
            in_range(line.function_index, len(d.function_table), f"location {i} function")
        if i and not loc.lines:
            err(f"location {i} has no lines")
        attrs_unique(loc.attribute_indices, f"location {i}")
    for i, a in enumerate(d.attribute_table):
        in_range(a.key_strindex, len(strings), f"attribute {i} key")
    for i, st in enumerate(d.stack_table):
        for loc in st.location_indices:
            in_range(loc, len(d.location_table), f"stack {i} location")

    totals = {}
    counts = {}
    nprofiles = 0
    for rp in data.resource_profiles:
        for sp in rp.scope_profiles:
            for p in sp.profiles:
                nprofiles += 1
                in_range(p.sample_type.type_strindex, len(strings), "sample type")
                ty = strings[p.sample_type.type_strindex] if p.sample_type.type_strindex < len(strings) else "?"
                for s in p.samples:
                    in_range(s.stack_index, len(d.stack_table), "sample stack")
                    in_range(s.link_index, len(d.link_table), "sample link")
                    attrs_unique(s.attribute_indices, "sample")
                    if not s.values and not s.timestamps_unix_nano:
                        err("a sample has neither values nor timestamps")
                    if s.values and s.timestamps_unix_nano and len(s.values) != len(s.timestamps_unix_nano):
                        err("a sample has a different number of values and timestamps")
                    total = sum(s.values) if s.values else len(s.timestamps_unix_nano)
                    totals[ty] = totals.get(ty, 0) + total
                    counts[ty] = counts.get(ty, 0) + max(len(s.values), len(s.timestamps_unix_nano))

    for ty, want in totals_wanted.items():
        if totals.get(ty) != want:
            err(f"{ty}: values add up to {totals.get(ty)}, expected {want}")
    named = {strings[f.name_strindex] for f in d.function_table if f.name_strindex < len(strings)}
    for n in names_wanted:
        if n not in strings:
            err(f"{n!r} is not in the string table")
        elif n not in named:
            err(f"{n!r} names no function")

    have_attrs = {
        (strings[a.key_strindex], a.value.string_value)
        for a in d.attribute_table
        if a.key_strindex < len(strings) and a.value.WhichOneof("value") == "string_value"
    }
    for k, v in attrs_wanted:
        if (k, v) not in have_attrs:
            err(f"no attribute {k}={v!r}")

    print(json.dumps({
        "file": path,
        "encoding": encoding,
        "profiles": nprofiles,
        "totals": totals,
        "samples": counts,
        "functions": len(d.function_table) - 1,
        "locations": len(d.location_table) - 1,
        "mappings": len(d.mapping_table) - 1,
    }, sort_keys=True))
    if errors:
        for e in errors:
            print(f"otlp_check: {path}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
