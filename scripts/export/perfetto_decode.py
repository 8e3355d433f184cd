#!/usr/bin/env python3
"""Decode a Perfetto trace with Perfetto's own protos and print a JSON summary.

Usage: perfetto_decode.py TRACE.pftrace

Uses the generated module shipped in the PyPI `perfetto` package
(perfetto/protos/perfetto/trace/perfetto_trace_pb2.py, needs `protobuf`). Fails (exit 1) when
the file does not parse as a `Trace`, when any message holds fields the protos do not know
(a wrong field number), when an interned name is used before it is defined or on a packet
without SEQ_NEEDS_INCREMENTAL_STATE, or when a sequence's first packet lacks
SEQ_INCREMENTAL_STATE_CLEARED, or when a profiling entry (function name, mapping, frame,
callstack) is used before it is interned. The summary lists the tracks, the track events with
their names resolved and the perf samples with their frames (outermost first), for the Rust
tests to check.
"""
import json
import sys

from google.protobuf.unknown_fields import UnknownFieldSet
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

CLEARED = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
NEEDS = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE


def fail(msg):
    print("perfetto_decode: " + msg, file=sys.stderr)
    sys.exit(1)


def check_known(msg, path):
    if len(UnknownFieldSet(msg)) != 0:
        fail(f"{path}: unknown fields {[f.field_number for f in UnknownFieldSet(msg)]}")
    for field, value in msg.ListFields():
        if field.message_type is None:
            continue
        if field.is_repeated:
            for i, v in enumerate(value):
                check_known(v, f"{path}.{field.name}[{i}]")
        else:
            check_known(value, f"{path}.{field.name}")


def annotation_value(a):
    if len(a.array_values):
        return [annotation_value(v) for v in a.array_values]
    which = [f.name for f, _ in a.ListFields() if f.name not in ("name", "name_iid")]
    if not which:
        return None
    return getattr(a, which[0])


def main():
    data = open(sys.argv[1], "rb").read()
    trace = pb.Trace()
    trace.ParseFromString(data)
    check_known(trace, "trace")
    tracks = {}
    events = []
    names = {}  # sequence -> iid -> name
    prof = {}  # sequence -> table -> iid -> entry
    samples = []
    seen_seq = set()
    for n, p in enumerate(trace.packet):
        seq = p.trusted_packet_sequence_id
        if seq not in seen_seq:
            seen_seq.add(seq)
            if not p.sequence_flags & CLEARED:
                fail(f"packet {n}: first packet of sequence {seq} lacks SEQ_INCREMENTAL_STATE_CLEARED")
            names[seq] = {}
            prof[seq] = {k: {} for k in ("function_names", "source_paths", "mapping_paths",
                                          "mappings", "frames", "callstacks")}
        tables = prof[seq]
        idata = p.interned_data
        for table in ("function_names", "source_paths", "mapping_paths"):
            for s in getattr(idata, table):
                tables[table][s.iid] = s.str.decode()
        for m in idata.mappings:
            for sid in m.path_string_ids:
                if sid not in tables["mapping_paths"]:
                    fail(f"packet {n}: mapping {m.iid} uses path {sid} before it is interned")
            tables["mappings"][m.iid] = "/".join(tables["mapping_paths"][i] for i in m.path_string_ids)
        for f in idata.frames:
            if f.function_name_id not in tables["function_names"]:
                fail(f"packet {n}: frame {f.iid} uses name {f.function_name_id} before it is interned")
            if f.mapping_id not in tables["mappings"]:
                fail(f"packet {n}: frame {f.iid} uses mapping {f.mapping_id} before it is interned")
            if f.HasField("source_path_iid") and f.source_path_iid not in tables["source_paths"]:
                fail(f"packet {n}: frame {f.iid} uses source {f.source_path_iid} before it is interned")
            tables["frames"][f.iid] = {
                "name": tables["function_names"][f.function_name_id],
                "mapping": tables["mappings"][f.mapping_id],
                "file": tables["source_paths"].get(f.source_path_iid) if f.HasField("source_path_iid") else None,
                "line": f.line_number if f.HasField("line_number") else None,
                "kind": pb.Frame.Kind.Name(f.kind) if f.HasField("kind") else None,
            }
        for c in idata.callstacks:
            for fid in c.frame_ids:
                if fid not in tables["frames"]:
                    fail(f"packet {n}: callstack {c.iid} uses frame {fid} before it is interned")
            tables["callstacks"][c.iid] = [tables["frames"][i] for i in c.frame_ids]
        if p.HasField("perf_sample"):
            ps = p.perf_sample
            if not p.sequence_flags & NEEDS:
                fail(f"packet {n}: perf_sample without SEQ_NEEDS_INCREMENTAL_STATE")
            if ps.callstack_iid not in tables["callstacks"]:
                fail(f"packet {n}: callstack {ps.callstack_iid} not interned")
            samples.append({"ts": p.timestamp, "pid": ps.pid, "tid": ps.tid,
                            "cpu_mode": pb.Profiling.CpuMode.Name(ps.cpu_mode),
                            "frames": tables["callstacks"][ps.callstack_iid]})
        for en in p.interned_data.event_names:
            if en.iid == 0:
                fail(f"packet {n}: interned name with iid 0")
            names[seq][en.iid] = en.name
        if p.HasField("track_descriptor"):
            td = p.track_descriptor
            t = {"name": td.name or None, "parent": td.parent_uuid or None}
            if td.HasField("process"):
                t.update(kind="process", pid=td.process.pid,
                         name=td.process.process_name or None)
            elif td.HasField("thread"):
                t.update(kind="thread", pid=td.thread.pid, tid=td.thread.tid,
                         name=td.thread.thread_name or None)
            elif td.HasField("counter"):
                t.update(kind="counter")
            else:
                t.update(kind="other")
            tracks[str(td.uuid)] = t
        if p.HasField("track_event"):
            te = p.track_event
            name = te.name if te.HasField("name") else None
            if te.HasField("name_iid"):
                if not p.sequence_flags & NEEDS:
                    fail(f"packet {n}: name_iid without SEQ_NEEDS_INCREMENTAL_STATE")
                if te.name_iid not in names[seq]:
                    fail(f"packet {n}: name_iid {te.name_iid} not interned")
                name = names[seq][te.name_iid]
            if str(te.track_uuid) not in tracks:
                fail(f"packet {n}: track {te.track_uuid} has no descriptor before it")
            e = {
                "ts": p.timestamp,
                "type": pb.TrackEvent.Type.Name(te.type),
                "track": str(te.track_uuid),
                "name": name,
                "categories": list(te.categories),
                "annotations": {a.name: annotation_value(a) for a in te.debug_annotations},
            }
            if te.HasField("double_counter_value"):
                e["value"] = te.double_counter_value
            events.append(e)
    json.dump({"packets": len(trace.packet), "sequences": sorted(seen_seq),
               "tracks": tracks, "events": events, "samples": samples}, sys.stdout)


if __name__ == "__main__":
    main()
