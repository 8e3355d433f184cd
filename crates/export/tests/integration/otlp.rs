//! OTLP profiles: the synthetic trace written in both encodings and read back with the
//! generated prost types (totals per sample type equal the folded expectations, every table's
//! zero entry, indices in range), inlined frames as lines of one location, mappings with build
//! ids, and the OTLP/JSON rules (lowerCamelCase, 64-bit integers as strings, hex ids).
//! The official Python classes decode real inputs' outputs in the CLI's tests (otlp.rs there).

use profkit_export::otlp::generated::profiles::v1development as pb;
use profkit_export::otlp::{Encoding, OtlpSink};
use profkit_model::events::{EventSink, MappingInfo, ProcessInfo, Sample, ThreadInfo, TraceInfo};
use profkit_model::{Clock, FuncId, FuncInfo, FuncKind, FunctionTable};
use prost::Message;

use crate::synthetic;

fn decode(bytes: &[u8]) -> pb::ProfilesData {
    pb::ProfilesData::decode(bytes).unwrap()
}

/// Sum of values per sample type over all profiles, and the number of observations.
fn totals(data: &pb::ProfilesData) -> std::collections::BTreeMap<String, (i64, usize)> {
    let d = data.dictionary.as_ref().unwrap();
    let mut out = std::collections::BTreeMap::new();
    for rp in &data.resource_profiles {
        for sp in &rp.scope_profiles {
            for p in &sp.profiles {
                let t = p.sample_type.unwrap();
                let name = d.string_table[t.type_strindex as usize].clone();
                let e: &mut (i64, usize) = out.entry(name).or_default();
                for s in &p.samples {
                    e.0 += s.values.iter().sum::<i64>();
                    e.1 += s.values.len();
                    assert!(
                        s.timestamps_unix_nano.is_empty()
                            || s.timestamps_unix_nano.len() == s.values.len()
                    );
                    assert!((s.stack_index as usize) < d.stack_table.len());
                }
            }
        }
    }
    out
}

fn check_dictionary(d: &pb::ProfilesDictionary) {
    assert_eq!(d.string_table[0], "");
    assert_eq!(d.mapping_table[0], pb::Mapping::default());
    assert_eq!(d.location_table[0], pb::Location::default());
    assert_eq!(d.function_table[0], pb::Function::default());
    assert_eq!(d.stack_table[0], pb::Stack::default());
    assert_eq!(d.attribute_table[0], pb::KeyValueAndUnit::default());
    assert_eq!(d.link_table[0].trace_id, vec![0; 16]);
    for l in &d.location_table {
        assert!((l.mapping_index as usize) < d.mapping_table.len());
        for line in &l.lines {
            assert!((line.function_index as usize) < d.function_table.len());
        }
    }
    for s in &d.stack_table {
        for &l in &s.location_indices {
            assert!((l as usize) < d.location_table.len());
        }
    }
}

#[test]
fn synthetic_trace_totals_equal_the_folded_expectations() {
    let sink = synthetic::run(OtlpSink::new(Vec::new(), Encoding::Protobuf, false));
    let data = sink.build();
    check_dictionary(data.dictionary.as_ref().unwrap());
    // The folded expectation holds the calls' exclusive time and, at their stacks, the
    // samples' weights.
    let [exclusive, _, _] = synthetic::expected_folded();
    let weights: u64 = synthetic::samples().iter().map(|s| s.3).sum();
    let t = totals(&data);
    assert_eq!(
        t["time"].0 as u64,
        exclusive.values().sum::<u64>() - weights
    );
    assert_eq!(t["calls"].0 as usize, synthetic::call_count());
    assert_eq!(t["samples"], (weights as i64, synthetic::samples().len()));
    // One resource per process, `time` first.
    assert_eq!(data.resource_profiles.len(), 2);
    // The encoded bytes decode to the same message.
    assert_eq!(decode(&sink.encode()), data);
}

/// A stream with a mapping, an inlined frame and a JIT frame with a tier.
fn inline_stream(sink: &mut dyn EventSink) {
    let mut f = FunctionTable::new();
    let native = |name: &str, line: u32| FuncInfo {
        name: Some(name.to_string()),
        file: Some("app.c".to_string()),
        line,
        module: Some("app".to_string()),
        address: Some(0x1100),
        kind: FuncKind::Native,
        ..FuncInfo::default()
    };
    f.insert(FuncId(0), native("main", 1));
    f.insert(FuncId(1), native("helper (inlined)", 40));
    f.insert(
        FuncId(2),
        FuncInfo {
            name: Some("JS:*fib".to_string()),
            kind: FuncKind::Jit,
            tier: Some(profkit_model::FuncTier {
                name: "Turbofan".to_string(),
                color: 0,
                js: true,
            }),
            ..FuncInfo::default()
        },
    );
    sink.begin(&TraceInfo {
        format: "perf",
        functions: &f,
        clock: Clock::NANOSECONDS,
        origin_ns: 1_000,
        name: "t",
        samples: None,
        origin_unix_ns: None,
    })
    .unwrap();
    sink.process(&ProcessInfo {
        pid: 7,
        name: "app",
    })
    .unwrap();
    sink.thread(&ThreadInfo {
        index: 0,
        pid: 7,
        tid: 8,
        name: "main",
    })
    .unwrap();
    sink.mapping(&MappingInfo {
        pid: 7,
        start: 0x1000,
        end: 0x2000,
        file_offset: 0,
        path: "/usr/bin/app",
        build_id: Some(&[0xab, 0xcd, 0x01]),
    })
    .unwrap();
    for (time, stack, lines) in [
        (5, &[0u32, 1, 2][..], &[12u32, 44, 0][..]),
        (9, &[0, 1, 2][..], &[12, 44, 0][..]),
    ] {
        let stack: Vec<FuncId> = stack.iter().map(|&i| FuncId(i)).collect();
        sink.sample(&Sample {
            thread: 0,
            time,
            stack: &stack,
            lines,
            weight: 3,
            shared: 0,
        })
        .unwrap();
    }
    sink.finish().unwrap();
}

#[test]
fn inlined_frames_are_lines_of_one_location_with_mapping_and_attributes() {
    let mut sink = OtlpSink::new(Vec::new(), Encoding::Protobuf, false);
    inline_stream(&mut sink);
    let data = sink.build();
    let d = data.dictionary.as_ref().unwrap();
    check_dictionary(d);
    let s = |i: i32| d.string_table[i as usize].as_str();
    let profile = &data.resource_profiles[0].scope_profiles[0].profiles[0];
    // Two samples of one stack and thread: one Sample with two observations.
    assert_eq!(profile.samples.len(), 1);
    let sample = &profile.samples[0];
    assert_eq!(sample.values, vec![3, 3]);
    assert_eq!(sample.timestamps_unix_nano, vec![1_005, 1_009]);
    let stack = &d.stack_table[sample.stack_index as usize];
    // Leaf first: the JIT frame, then main with helper inlined into it.
    assert_eq!(stack.location_indices.len(), 2);
    let leaf = &d.location_table[stack.location_indices[0] as usize];
    let outer = &d.location_table[stack.location_indices[1] as usize];
    let fname = |l: &pb::Line| s(d.function_table[l.function_index as usize].name_strindex);
    assert_eq!(fname(&leaf.lines[0]), "JS:*fib");
    let names: Vec<(&str, i64)> = outer.lines.iter().map(|l| (fname(l), l.line)).collect();
    assert_eq!(names, [("helper", 44), ("main", 12)]);
    let attrs = |idx: &[i32]| -> Vec<(String, String)> {
        idx.iter()
            .map(|&i| {
                let a = &d.attribute_table[i as usize];
                let v = match a.value.as_ref().unwrap().value.as_ref().unwrap() {
                    profkit_export::otlp::generated::common::v1::any_value::Value::StringValue(
                        v,
                    ) => v.clone(),
                    profkit_export::otlp::generated::common::v1::any_value::Value::IntValue(n) => {
                        n.to_string()
                    }
                    other => format!("{other:?}"),
                };
                (s(a.key_strindex).to_string(), v)
            })
            .collect()
    };
    let leaf_attrs = attrs(&leaf.attribute_indices);
    for (k, v) in [
        ("profkit.jit.tier", "Turbofan"),
        ("profkit.code.kind", "jit"),
        ("profile.frame.type", "v8js"),
    ] {
        assert!(
            leaf_attrs.contains(&(k.to_string(), v.to_string())),
            "{leaf_attrs:?}"
        );
    }
    assert!(
        attrs(&outer.attribute_indices).contains(&("profile.frame.type".into(), "native".into()))
    );
    let m = &d.mapping_table[outer.mapping_index as usize];
    assert_eq!((m.memory_start, m.memory_limit), (0x1000, 0x2000));
    assert_eq!(s(m.filename_strindex), "/usr/bin/app");
    assert_eq!(
        attrs(&m.attribute_indices),
        [(
            "process.executable.build_id.gnu".to_string(),
            "abcd01".to_string()
        )]
    );
    assert_eq!(
        attrs(&sample.attribute_indices),
        [
            ("thread.id".to_string(), "8".to_string()),
            ("thread.name".to_string(), "main".to_string())
        ]
    );
    let res = data.resource_profiles[0].resource.as_ref().unwrap();
    assert_eq!(res.attributes[0].key, "service.name");
    assert_eq!(res.attributes[1].key, "process.pid");
}

#[test]
fn json_encoding_follows_otlp_json() {
    let mut sink = OtlpSink::new(Vec::new(), Encoding::Json, false);
    inline_stream(&mut sink);
    let v: serde_json::Value = serde_json::from_slice(&sink.encode()).unwrap();
    let p = &v["resourceProfiles"][0]["scopeProfiles"][0]["profiles"][0];
    assert_eq!(p["samples"][0]["values"], serde_json::json!(["3", "3"]));
    assert_eq!(
        p["samples"][0]["timestampsUnixNano"],
        serde_json::json!(["1005", "1009"])
    );
    assert_eq!(p["timeUnixNano"], "1000");
    assert!(p["sampleType"]["typeStrindex"].is_number());
    let d = &v["dictionary"];
    assert_eq!(d["linkTable"][0]["traceId"], "0".repeat(32));
    assert_eq!(d["linkTable"][0]["spanId"], "0".repeat(16));
    assert_eq!(d["mappingTable"][0], serde_json::json!({}));
    assert_eq!(d["mappingTable"][1]["memoryStart"], "4096");
    assert_eq!(d["stringTable"][0], "");
    assert_eq!(
        v["resourceProfiles"][0]["resource"]["attributes"][1]["value"]["intValue"],
        "7"
    );
    // The same data as the binary encoding, field for field (sizes of the tables).
    let mut bin = OtlpSink::new(Vec::new(), Encoding::Protobuf, false);
    inline_stream(&mut bin);
    let data = decode(&bin.encode());
    let dict = data.dictionary.unwrap();
    assert_eq!(
        d["locationTable"].as_array().unwrap().len(),
        dict.location_table.len()
    );
    assert_eq!(
        d["stringTable"].as_array().unwrap().len(),
        dict.string_table.len()
    );
}

/// Per (thread id, frames): the (time, value) observations.
type Observed = std::collections::BTreeMap<(i64, Vec<String>), Vec<(u64, i64)>>;

/// The frames of a decoded stack, outermost first, as function names (each location's lines
/// reversed: the caller, then what was inlined into it).
fn frames_of(d: &pb::ProfilesDictionary, stack: i32) -> Vec<String> {
    let mut out = Vec::new();
    for &l in d.stack_table[stack as usize].location_indices.iter().rev() {
        for line in d.location_table[l as usize].lines.iter().rev() {
            let f = &d.function_table[line.function_index as usize];
            out.push(d.string_table[f.name_strindex as usize].clone());
        }
    }
    out
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Any stream of samples: decoding the binary output gives back every sample's weight and
    /// time under its thread, and its frames (an inlined frame a line of its caller's location);
    /// the OTLP/JSON output holds the same values.
    #[test]
    fn samples_round_trip(
        samples in proptest::collection::vec(
            (0u32..3, proptest::collection::vec(0u32..6, 1..7), 1u64..5000, 0u64..1000),
            1..40,
        )
    ) {
        // Functions 0..6; 3 and 4 are inlined frames (after their caller), 5 is JIT code.
        let mut table = FunctionTable::new();
        for i in 0..6u32 {
            let name = match i {
                3 | 4 => format!("f{i} (inlined)"),
                _ => format!("f{i}"),
            };
            table.insert(FuncId(i), FuncInfo {
                name: Some(name),
                kind: if i == 5 { FuncKind::Jit } else { FuncKind::Native },
                module: Some("m".into()),
                ..FuncInfo::default()
            });
        }
        let run = |encoding| {
            let mut sink = OtlpSink::new(Vec::new(), encoding, false);
            sink.begin(&TraceInfo {
                format: "perf",
                functions: &table,
                clock: Clock::NANOSECONDS,
                origin_ns: 0,
                name: "p",
                samples: None,
                origin_unix_ns: None,
            }).unwrap();
            for t in 0..3u32 {
                sink.thread(&ThreadInfo { index: t, pid: 1 + t % 2, tid: 100 + u64::from(t), name: "t" }).unwrap();
            }
            let mut time = 0;
            for (thread, stack, weight, gap) in &samples {
                time += gap;
                let mut stack: Vec<FuncId> = stack.iter().map(|&f| FuncId(f)).collect();
                // An inlined frame never comes first (it needs a caller).
                if matches!(stack[0].0, 3 | 4) {
                    stack.insert(0, FuncId(0));
                }
                sink.sample(&Sample { thread: *thread, time, stack: &stack, lines: &[], weight: *weight, shared: 0 }).unwrap();
            }
            sink
        };
        let sink = run(Encoding::Protobuf);
        let data = decode(&sink.encode());
        let d = data.dictionary.as_ref().unwrap();
        check_dictionary(d);
        // (tid, frames) -> observations, from the output.
        let mut got: Observed = Default::default();
        for rp in &data.resource_profiles {
            for p in &rp.scope_profiles[0].profiles {
                for s in &p.samples {
                    let tid = s.attribute_indices.iter().find_map(|&a| {
                        let kv = &d.attribute_table[a as usize];
                        (d.string_table[kv.key_strindex as usize] == "thread.id").then(|| {
                            match kv.value.as_ref().unwrap().value.as_ref().unwrap() {
                                profkit_export::otlp::generated::common::v1::any_value::Value::IntValue(n) => *n,
                                _ => -1,
                            }
                        })
                    }).unwrap();
                    let e = got.entry((tid, frames_of(d, s.stack_index))).or_default();
                    e.extend(s.timestamps_unix_nano.iter().copied().zip(s.values.iter().copied()));
                }
            }
        }
        let mut want: Observed = Default::default();
        let mut time = 0;
        for (thread, stack, weight, gap) in &samples {
            time += gap;
            let mut names: Vec<String> = stack.iter().map(|f| format!("f{f}")).collect();
            if matches!(stack[0], 3 | 4) {
                names.insert(0, "f0".into());
            }
            want.entry((100 + i64::from(*thread), names)).or_default().push((time, *weight as i64));
        }
        for v in got.values_mut() {
            v.sort_unstable();
        }
        for v in want.values_mut() {
            v.sort_unstable();
        }
        proptest::prop_assert_eq!(got, want);

        // OTLP/JSON: the same values, as strings.
        let json: serde_json::Value = serde_json::from_slice(&run(Encoding::Json).encode()).unwrap();
        let mut total = 0i64;
        for rp in json["resourceProfiles"].as_array().unwrap() {
            for p in rp["scopeProfiles"][0]["profiles"].as_array().unwrap() {
                for s in p["samples"].as_array().unwrap() {
                    for v in s["values"].as_array().unwrap() {
                        total += v.as_str().unwrap().parse::<i64>().unwrap();
                    }
                }
            }
        }
        proptest::prop_assert_eq!(total, samples.iter().map(|s| s.2 as i64).sum::<i64>());
    }
}
