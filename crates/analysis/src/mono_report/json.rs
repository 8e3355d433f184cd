//! The report as JSON (schema `profkit.mlpd-report/1`).

use serde_json::{json, Value};

use super::aggregate::{section_name, Report, Trace, TrackEvent, HANDLE_NAMES};

/// The report as JSON (schema `profkit.mlpd-report/1`).
pub fn to_json(r: &Report) -> Value {
    let h = &r.header;
    let tr = r.traces.as_ref();
    // with traces, an entry carries its backtraces
    let with = |mut v: Value, key: &str, t: Option<&Vec<Trace>>| -> Value {
        if let (Some(obj), true) = (v.as_object_mut(), tr.is_some()) {
            obj.insert(key.into(), traces_json(t));
        }
        v
    };
    let gens: Vec<Value> = r
        .gc_gens
        .iter()
        .enumerate()
        .filter(|(_, g)| g.0 > 0)
        .map(|(i, &(c, m, t))| json!({"generation": i, "count": c, "max_ns": m, "total_ns": t}))
        .collect();
    let handles: Vec<Value> = r
        .gc_handles
        .iter()
        .enumerate()
        .filter(|(_, h)| h.0 > 0 || h.1 > 0)
        .map(|(i, &(c, d, m))| {
            let v = json!({"type": HANDLE_NAMES.get(i).copied().unwrap_or("?"), "created": c, "destroyed": d, "max": m});
            let th = tr.and_then(|t| t.handles.get(i));
            let v = with(v, "created_traces", th.map(|h| &h.0));
            with(v, "destroyed_traces", th.map(|h| &h.1))
        })
        .collect();
    let (throws, cl) = r.exceptions;
    let exceptions = with(
        json!({"throws": throws, "catch": cl.first(), "filter": cl.get(1), "finally": cl.get(2), "fault": cl.get(4)}),
        "traces",
        tr.map(|t| &t.throws),
    );
    let mut v = json!({
        "schema": "profkit.mlpd-report/1",
        "header": {
            "major": h.major, "minor": h.minor, "data_version": h.data_version,
            "args": h.args, "arch": h.arch, "os": h.os, "pid": h.pid, "port": h.port,
            "ptrsize": h.ptrsize, "timer_overhead_ns": h.timer_overhead, "startup_ms": h.startup_ms,
        },
        "jit": {"methods": r.jit.0, "code_size": r.jit.1, "helpers": r.jit.2, "helpers_code_size": r.jit.3},
        "gc": {"resizes": r.gc.0, "max_heap_size": r.gc.1, "object_moves": r.gc.2, "collections": gens, "handles": handles},
        "samples": {
            "unmanaged": r.samples.1, "managed": r.samples.2, "unresolved": r.samples.3,
            "methods": r.samples.0.iter().map(|(n, c)| json!({"method": n, "hits": c})).collect::<Vec<_>>(),
        },
        "alloc": r.alloc.iter().map(|(n, b, c)| with(
            json!({"class": n, "bytes": b, "count": c}), "traces", tr.and_then(|t| t.alloc.get(n)),
        )).collect::<Vec<_>>(),
        "calls": r.calls.iter().enumerate().filter(|(_, (_, s))| s.calls > 0).map(|(i, (n, s))| with(json!({
            "method": n, "calls": s.calls, "total_ns": s.total_ns, "self_ns": s.self_ns,
            "total_all_activations_ns": s.total_all_ns,
        }), "traces", tr.and_then(|t| t.calls.get(i)))).collect::<Vec<_>>(),
        "metadata": {"images": r.metadata.0, "assemblies": r.metadata.1},
        "exceptions": exceptions,
        "monitors": r.monitors.iter().map(|&(o, n, w, m)| with(
            json!({"object": o, "contentions": n, "wait_ns": w, "max_wait_ns": m}),
            "traces", tr.and_then(|t| t.monitors.get(&o)),
        )).collect::<Vec<_>>(),
        "monitor_totals": {"contentions": r.monitor_totals.0, "acquired": r.monitor_totals.1, "failures": r.monitor_totals.2},
        "threads": r.threads.iter().map(|(t, n)| json!({"id": t, "name": n})).collect::<Vec<_>>(),
        "domains": r.domains.iter().map(|(d, n)| json!({"id": d, "name": n})).collect::<Vec<_>>(),
        "contexts": r.contexts.iter().map(|(c, d)| json!({"id": c, "domain": d})).collect::<Vec<_>>(),
        "heapshots": r.heapshots.iter().map(|h| json!({
            "time_ns": h.time_ns, "size": h.size, "objects": h.objects, "roots": h.roots,
            "classes": h.classes.iter().map(|(n, b, c)| {
                let mut v = json!({"class": n, "bytes": b, "count": c});
                if let (Some(o), true) = (v.as_object_mut(), tr.is_some()) {
                    let (roots, pinning) = h.root_refs.get(n).copied().unwrap_or((0, 0));
                    o.insert("root_references".into(), roots.into());
                    o.insert("pinning_root_references".into(), pinning.into());
                    o.insert("references_from".into(), h.refs.get(n).into_iter().flatten()
                        .map(|(f, k)| json!({"class": f, "references": k})).collect::<Vec<_>>().into());
                }
                v
            }).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "counters": r.counters.iter().map(|c| json!({"section": section_name(c.section), "name": c.name, "value": c.value})).collect::<Vec<_>>(),
        "stats": {"buffers": r.buffers, "events": r.events, "problems": r.problems.len(), "skipped_bytes": r.skipped_bytes,
                  "unmatched_leaves": r.unmatched_leaves, "unfinished_frames": r.unfinished},
    });
    if let Some(o) = v.as_object_mut() {
        let cut = profkit_common::truncation::json(r.truncation.as_ref());
        o.insert(
            "truncated".into(),
            serde_json::from_str(&cut).unwrap_or(Value::Null),
        );
    }
    if let (Some(t), Some(o)) = (&r.tracking, v.as_object_mut()) {
        o.insert(
            "tracking".into(),
            t.iter().map(track_json).collect::<Vec<_>>().into(),
        );
    }
    v
}

fn traces_json(t: Option<&Vec<Trace>>) -> Value {
    t.into_iter()
        .flatten()
        .map(|t| json!({"count": t.count, "frames": t.frames}))
        .collect::<Vec<_>>()
        .into()
}

fn track_json(e: &TrackEvent) -> Value {
    match e {
        TrackEvent::Created {
            obj,
            class,
            size,
            secs,
            frames,
        } => {
            json!({"event": "created", "object": obj, "class": class, "size": size, "secs": secs, "frames": frames})
        }
        TrackEvent::Handle {
            obj,
            handle,
            secs,
            frames,
        } => {
            json!({"event": "handle", "object": obj, "handle": handle, "secs": secs, "frames": frames})
        }
        TrackEvent::MovedTo { obj, to } => json!({"event": "moved_to", "object": obj, "to": to}),
        TrackEvent::MovedFrom { obj, from } => {
            json!({"event": "moved_from", "object": obj, "from": from})
        }
        TrackEvent::Referenced { obj, parent, class } => {
            json!({"event": "referenced", "object": obj, "from": parent, "class": class})
        }
    }
}
