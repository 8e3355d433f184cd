//! What `profkit info` shows of a perf.data file, in profkit-common's [`Summary`] shape.

use std::collections::BTreeMap;

use profkit_common::{Summary, ThreadSummary, TimeSpan, Value};

use crate::raw::{clock_name, feature_name, sample_type_names, RecordType};
use crate::read::{Meta, Mode, PerfData};
use crate::scan::Scan;

/// What `profkit info` shows of `data`:
///
/// * header: `mode`, `endian`, `header_size`, then in file mode `attr_size`, `attrs_offset`,
///   `attrs_size`, `data_offset`, `data_size`, `features` (the recorded bitmap's names);
/// * kinds: records per type (perf's names, type order), FINISHED_ROUND and COMPRESSED counted
///   from the file even though they are not delivered as events;
/// * threads: `(pid, tid)` of samples, with COMM names and sample counts;
/// * time: first and last event time (ns on the recording's clock);
/// * details: `events`, `sample_types`, `clock`, `call_graph`, `samples`, `lost_events`,
///   `lost_samples`, `processes`, `jit_processes`, `jitdump_markers`, `anon_exec_mappings`,
///   `hostname`, `os_release`, `perf_version`, `arch`, `nr_cpus`, `cmdline`, `build_ids`,
///   `clock_reference` (CLOCK_DATA), `stack_copies_full` (dwarf mode), `stopped_at` (only when
///   a corrupt record stopped the walk);
/// * problems: header problems, feature sections that do not decode, records that do not decode
///   and the error that stopped the walk.
pub fn summary(data: &PerfData<'_>) -> Summary {
    match data.events() {
        Ok(events) => summary_of(data.meta(), &Scan::of(events)),
        Err(e) => {
            let mut s = summary_of(data.meta(), &Scan::default());
            s.problems += 1;
            s.first_problem.get_or_insert(e.to_string());
            s
        }
    }
}

/// [`summary`] from metadata and a scan (for streams: `Scan::of(stream.events())`).
pub fn summary_of(meta: &Meta, s: &Scan) -> Summary {
    let h = &meta.header;
    let mut header: Vec<(&'static str, Value)> = vec![
        ("mode", h.mode.name().into()),
        ("endian", h.endian.name().into()),
        ("header_size", h.header_size.into()),
    ];
    if h.mode == Mode::File {
        header.extend([
            ("attr_size", h.attr_size.into()),
            ("attrs_offset", Value::Hex(h.attrs.offset)),
            ("attrs_size", h.attrs.size.into()),
            ("data_offset", Value::Hex(h.data.offset)),
            ("data_size", h.data.size.into()),
            (
                "features",
                Value::List(
                    h.recorded_features()
                        .into_iter()
                        .map(|b| Value::Str(feature_name(b)))
                        .collect(),
                ),
            ),
        ]);
    }
    let mut kinds: BTreeMap<RecordType, u64> = s.kinds.clone();
    for t in [
        RecordType::FINISHED_ROUND,
        RecordType::COMPRESSED,
        RecordType::COMPRESSED2,
        RecordType::HEADER_ATTR,
        RecordType::HEADER_FEATURE,
    ] {
        if let Some(&n) = s.frames.counts.get(&t) {
            kinds.insert(t, n);
        }
    }
    let f = &meta.features;
    let clock = match meta.clockid() {
        Some(c) => format!("{} (use_clockid {c})", clock_name(c)),
        None => "perf clock (no use_clockid)".to_string(),
    };
    let call_graph = meta
        .attrs
        .iter()
        .map(|a| {
            if a.has_user_stack() {
                format!("dwarf ({}-byte stack copies)", a.sample_stack_user)
            } else if a.has_callchain() {
                "frame pointers (callchain)".to_string()
            } else {
                "none".to_string()
            }
        })
        .collect::<Vec<_>>();
    let jit = s.jit_processes();
    let mut details: Vec<(&'static str, Value)> = vec![
        (
            "events",
            Value::List(
                meta.attrs
                    .iter()
                    .map(|a| Value::Str(a.display_name()))
                    .collect(),
            ),
        ),
        (
            "sample_types",
            Value::List(
                meta.attrs
                    .iter()
                    .map(|a| Value::Str(sample_type_names(a.sample_type)))
                    .collect(),
            ),
        ),
        ("clock", clock.into()),
        (
            "call_graph",
            Value::List(call_graph.into_iter().map(Value::Str).collect()),
        ),
        ("samples", s.samples().into()),
        ("lost_events", s.lost.into()),
        ("lost_samples", s.lost_samples.into()),
        (
            "processes",
            s.threads
                .iter()
                .map(|t| t.0)
                .collect::<std::collections::BTreeSet<_>>()
                .len()
                .into(),
        ),
        (
            "jit_processes",
            Value::List(jit.iter().map(|p| Value::I64(i64::from(p.pid))).collect()),
        ),
        (
            "jitdump_markers",
            Value::List(
                s.jit
                    .markers()
                    .map(|m| Value::Str(m.path.clone()))
                    .collect(),
            ),
        ),
        (
            "anon_exec_mappings",
            jit.iter().map(|p| p.anon_exec_mappings).sum::<u64>().into(),
        ),
        ("hostname", f.hostname.clone().into()),
        ("os_release", f.os_release.clone().into()),
        ("perf_version", f.perf_version.clone().into()),
        ("arch", f.arch.clone().into()),
        (
            "nr_cpus",
            f.nr_cpus
                .map(|(avail, online)| format!("{online} online, {avail} available"))
                .into(),
        ),
        ("cmdline", f.cmdline.as_ref().map(|c| c.join(" ")).into()),
        ("build_ids", f.build_ids.len().into()),
        (
            "clock_reference",
            f.clock_data
                .map(|c| {
                    format!(
                        "{} {} ns = wall clock {} ns",
                        clock_name(c.clockid),
                        c.clockid_time_ns,
                        c.wall_clock_ns
                    )
                })
                .into(),
        ),
    ];
    if s.stack_samples > 0 {
        details.push((
            "stack_copies_full",
            format!("{} of {}", s.stack_full, s.stack_samples).into(),
        ));
    }
    if let Some(e) = &s.error {
        details.push(("stopped_at", e.to_string().into()));
    }
    let mut problems_list: Vec<String> = meta.problems.iter().map(|e| e.to_string()).collect();
    problems_list.extend(f.problems.iter().cloned());
    problems_list.extend(
        s.malformed
            .iter()
            .take(1)
            .map(|(i, m)| format!("record #{i}: {m}")),
    );
    if let Some(e) = &s.error {
        problems_list.push(e.to_string());
    }
    let problems = (meta.problems.len() + f.problems.len()) as u64
        + s.malformed_count
        + u64::from(s.error.is_some());
    Summary {
        format: "perf.data",
        kind: format!(
            "perf.data {} mode, {}-endian",
            h.mode.name(),
            h.endian.name()
        ),
        header,
        records: s.events,
        kinds: kinds.iter().map(|(t, &n)| (t.to_string(), n)).collect(),
        threads: s
            .threads
            .iter()
            .map(|&(pid, tid, n)| ThreadSummary {
                pid: u32::try_from(pid).ok(),
                tid: u64::try_from(tid).unwrap_or(u64::MAX),
                name: s.names.get(&tid).cloned(),
                records: n,
            })
            .collect(),
        time: match (s.first_time, s.last_time) {
            (Some(first), Some(last)) => Some(TimeSpan {
                first,
                last,
                duration_ns: last.saturating_sub(first),
            }),
            _ => None,
        },
        details,
        problems,
        first_problem: problems_list.into_iter().next(),
        truncation: s.truncation.clone(),
    }
}
