//! pprof: the synthetic trace decoded with a small protobuf reader written here from the
//! public `profile.proto`, totals per stack checked against the call trees; the npm package
//! `pprof-format` decodes the same file as an external check.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::process::Command;

use profkit_export::pprof::PprofSink;
use profkit_export::{Format, Options, Output};

use crate::synthetic::{self, calls, check_output, deps_dir, external, name, scratch, Call};

/// A decoded protobuf field value.
#[derive(Clone, Debug)]
enum V<'a> {
    Int(u64),
    Bytes(&'a [u8]),
}

fn varint(b: &[u8], at: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let x = b[*at];
        *at += 1;
        v |= u64::from(x & 0x7f) << shift;
        if x < 0x80 {
            return v;
        }
        shift += 7;
    }
}

/// The fields of one message, in order.
fn fields(b: &[u8]) -> Vec<(u32, V<'_>)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < b.len() {
        let key = varint(b, &mut at);
        let (field, wire) = ((key >> 3) as u32, key & 7);
        match wire {
            0 => out.push((field, V::Int(varint(b, &mut at)))),
            1 => {
                out.push((
                    field,
                    V::Int(u64::from_le_bytes(b[at..at + 8].try_into().unwrap())),
                ));
                at += 8;
            }
            2 => {
                let len = varint(b, &mut at) as usize;
                out.push((field, V::Bytes(&b[at..at + len])));
                at += len;
            }
            w => panic!("unexpected wire type {w}"),
        }
    }
    out
}

fn int(v: &V<'_>) -> u64 {
    match v {
        V::Int(i) => *i,
        V::Bytes(_) => panic!("expected an integer"),
    }
}

fn bytes<'a>(v: &V<'a>) -> &'a [u8] {
    match v {
        V::Bytes(b) => b,
        V::Int(_) => panic!("expected bytes"),
    }
}

/// Packed or unpacked repeated varints.
fn repeated(out: &mut Vec<u64>, v: &V<'_>) {
    match v {
        V::Int(i) => out.push(*i),
        V::Bytes(b) => {
            let mut at = 0;
            while at < b.len() {
                out.push(varint(b, &mut at));
            }
        }
    }
}

/// A sample: stack names (root first), values, string labels, numeric labels.
pub type DecodedSample = (
    Vec<String>,
    Vec<u64>,
    Vec<(String, String)>,
    Vec<(String, u64)>,
);

/// The parts of a Profile the tests look at.
#[derive(Debug, Default)]
pub struct Decoded {
    pub strings: Vec<String>,
    pub sample_types: Vec<(String, String)>,
    /// (stack names root first, values, string labels, numeric labels)
    pub samples: Vec<DecodedSample>,
    pub default_type: String,
    pub functions: Vec<(String, String, u64)>,
    /// `period_type` and `period`.
    pub period: Option<((String, String), u64)>,
}

pub fn decode(pb: &[u8]) -> Decoded {
    let top = fields(pb);
    let strings: Vec<String> = top
        .iter()
        .filter(|(f, _)| *f == 6)
        .map(|(_, v)| String::from_utf8(bytes(v).to_vec()).unwrap())
        .collect();
    let s = |i: u64| strings[i as usize].clone();
    let mut d = Decoded::default();
    let mut func_name: HashMap<u64, String> = HashMap::new();
    let mut loc_func: HashMap<u64, u64> = HashMap::new();
    for (f, v) in &top {
        match f {
            5 => {
                let fs = fields(bytes(v));
                let get = |n: u32| fs.iter().find(|(f, _)| *f == n).map_or(0, |(_, v)| int(v));
                func_name.insert(get(1), s(get(2)));
                d.functions.push((s(get(2)), s(get(4)), get(5)));
            }
            4 => {
                let fs = fields(bytes(v));
                let id = fs.iter().find(|(f, _)| *f == 1).map_or(0, |(_, v)| int(v));
                let line = fs.iter().find(|(f, _)| *f == 4).expect("a line");
                let lf = fields(bytes(&line.1));
                loc_func.insert(id, int(&lf.iter().find(|(f, _)| *f == 1).unwrap().1));
            }
            _ => {}
        }
    }
    for (f, v) in &top {
        match f {
            1 => {
                let fs = fields(bytes(v));
                d.sample_types.push((s(int(&fs[0].1)), s(int(&fs[1].1))));
            }
            2 => {
                let fs = fields(bytes(v));
                let (mut locs, mut vals) = (Vec::new(), Vec::new());
                let (mut sl, mut nl) = (Vec::new(), Vec::new());
                for (f, v) in &fs {
                    match f {
                        1 => repeated(&mut locs, v),
                        2 => repeated(&mut vals, v),
                        3 => {
                            let l = fields(bytes(v));
                            let get =
                                |n: u32| l.iter().find(|(f, _)| *f == n).map_or(0, |(_, v)| int(v));
                            if get(2) != 0 {
                                sl.push((s(get(1)), s(get(2))));
                            } else {
                                nl.push((s(get(1)), get(3)));
                            }
                        }
                        _ => {}
                    }
                }
                let mut stack: Vec<String> = locs
                    .iter()
                    .map(|l| func_name[&loc_func[l]].clone())
                    .collect();
                stack.reverse();
                d.samples.push((stack, vals, sl, nl));
            }
            14 => d.default_type = s(int(v)),
            11 => {
                let fs = fields(bytes(v));
                let t = (s(int(&fs[0].1)), s(int(&fs[1].1)));
                d.period = Some((t, d.period.as_ref().map_or(0, |p| p.1)));
            }
            12 => {
                let t = d.period.take().map(|p| p.0).unwrap_or_default();
                d.period = Some((t, int(v)));
            }
            _ => {}
        }
    }
    d.strings = strings;
    d
}

fn gunzip(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(b)
        .read_to_end(&mut out)
        .unwrap();
    out
}

/// (calls, exclusive ns) per stack (names joined by `\u{1}`), from the call trees.
fn expected_calls() -> BTreeMap<String, (u64, u64)> {
    fn walk(c: &Call, prefix: &str, out: &mut BTreeMap<String, (u64, u64)>) {
        let path = if prefix.is_empty() {
            name(c.func)
        } else {
            format!("{prefix}\u{1}{}", name(c.func))
        };
        let kids: u64 = c.children.iter().map(|k| k.end - k.start).sum();
        let e = out.entry(path.clone()).or_default();
        e.0 += 1;
        e.1 += c.end - c.start - kids;
        for k in &c.children {
            walk(k, &path, out);
        }
    }
    let mut out = BTreeMap::new();
    for (_, cs) in calls() {
        for c in &cs {
            walk(c, "", &mut out);
        }
    }
    out
}

fn synthetic_pb() -> Vec<u8> {
    let mut out = Vec::new();
    synthetic::run(PprofSink::new(&mut out, false, false));
    out
}

#[test]
fn decodes_with_exact_totals() {
    let d = decode(&synthetic_pb());
    assert_eq!(d.strings[0], "", "string_table[0] must be empty");
    assert_eq!(
        d.sample_types,
        vec![
            ("calls".into(), "count".into()),
            ("time".into(), "nanoseconds".into()),
            ("samples".into(), "count".into()),
        ]
    );
    assert_eq!(d.default_type, "time");
    let mut got: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut sampled: BTreeMap<String, u64> = BTreeMap::new();
    for (stack, vals, sl, nl) in &d.samples {
        assert_eq!(vals.len(), 3);
        assert!(sl.iter().any(|(k, _)| k == "thread"), "thread label");
        assert!(nl.iter().any(|(k, _)| k == "pid"), "pid label");
        let key = stack.join("\u{1}");
        if vals[0] != 0 || vals[1] != 0 {
            let e = got.entry(key.clone()).or_default();
            e.0 += vals[0];
            e.1 += vals[1];
        }
        if vals[2] != 0 {
            *sampled.entry(key).or_default() += vals[2];
        }
    }
    let want = expected_calls();
    // Stacks whose calls all have zero self time still count calls.
    assert_eq!(got, want);
    let total_self: u64 = want.values().map(|v| v.1).sum();
    let total_top: u64 = calls()
        .iter()
        .flat_map(|(_, cs)| cs.iter().map(|c| c.end - c.start))
        .sum();
    assert_eq!(total_self, total_top, "flat time sums to the traced time");
    let mut want_s: BTreeMap<String, u64> = BTreeMap::new();
    for (_, _, stack, w) in synthetic::samples() {
        let k: Vec<String> = stack.iter().map(|&f| name(f)).collect();
        *want_s.entry(k.join("\u{1}")).or_default() += w;
    }
    assert_eq!(sampled, want_s);
    // File and line of functions that have them.
    assert!(d
        .functions
        .iter()
        .any(|(n, f, l)| n == "main" && f == "main.c" && *l == 10));
}

#[test]
fn counts_option_and_gzip_file() {
    let path = scratch("synthetic.pb.gz");
    let opts = Options {
        counts: true,
        ..Options::default()
    };
    let mut sink = profkit_export::open(Format::Pprof, &Output::path(path.clone()), &opts).unwrap();
    synthetic::feed(&mut *sink).unwrap();
    drop(sink);
    let raw = std::fs::read(&path).unwrap();
    assert_eq!(&raw[..2], &[0x1f, 0x8b], "gzip");
    let d = decode(&gunzip(&raw));
    assert_eq!(d.default_type, "calls");
    assert!(d.samples.len() > 5);
}

#[test]
fn samples_only_profile() {
    use profkit_model::events::{EventSink, Sample, TraceInfo};
    use profkit_model::{Clock, FuncId, FunctionTable};
    let mut out = Vec::new();
    let mut s = PprofSink::new(&mut out, false, false);
    let t = FunctionTable::new();
    s.begin(&TraceInfo {
        format: "mlpd",
        functions: &t,
        clock: Clock::default(),
        origin_ns: 0,
        name: "x",
        samples: None,
        origin_unix_ns: None,
    })
    .unwrap();
    s.sample(&Sample {
        thread: 0,
        time: 5,
        stack: &[FuncId(1), FuncId(2)],
        lines: &[],
        weight: 3,
        shared: 0,
    })
    .unwrap();
    s.finish().unwrap();
    drop(s);
    let d = decode(&out);
    assert_eq!(d.sample_types, vec![("samples".into(), "count".into())]);
    assert_eq!(d.default_type, "samples");
    assert_eq!(d.samples.len(), 1);
    assert_eq!(d.samples[0].0, vec!["#1".to_string(), "#2".to_string()]);
    assert_eq!(d.samples[0].1, vec![3]);
}

/// perf.data samples weigh their period: the sample type says what it measures (ns on a CPU
/// for cpu-clock), as OTLP's does, with the period between samples.
#[test]
fn perf_samples_are_typed_by_what_they_weigh() {
    use profkit_model::events::{EventSink, Sample, SampleWeight, TraceInfo};
    use profkit_model::{Clock, FuncId, FunctionTable};
    let mut out = Vec::new();
    let mut s = PprofSink::new(&mut out, false, false);
    let t = FunctionTable::new();
    s.begin(&TraceInfo {
        format: "perf",
        functions: &t,
        clock: Clock::NANOSECONDS,
        origin_ns: 0,
        name: "x",
        samples: Some(SampleWeight {
            kind: "cpu",
            unit: "nanoseconds",
            period: 1_001_001,
        }),
        origin_unix_ns: None,
    })
    .unwrap();
    s.sample(&Sample {
        thread: 0,
        time: 5,
        stack: &[FuncId(1)],
        lines: &[],
        weight: 1_000_917,
        shared: 0,
    })
    .unwrap();
    s.finish().unwrap();
    drop(s);
    let d = decode(&out);
    let cpu = ("cpu".to_string(), "nanoseconds".to_string());
    assert_eq!(d.sample_types, vec![cpu.clone()]);
    assert_eq!(d.default_type, "cpu");
    assert_eq!(d.period, Some((cpu, 1_001_001)));
    assert_eq!(d.samples[0].1, vec![1_000_917]);
}

/// The npm package `pprof-format` (a complete pprof decoder) reads the file; totals match.
#[test]
fn pprof_format_decodes() {
    let Some(pkg) = external(
        "pprof_format_decodes",
        "npm package pprof-format (scripts/ci/install-export-py.sh)",
        deps_dir().join("npm/node_modules/pprof-format"),
    ) else {
        return;
    };
    let path = scratch("synthetic-ext.pb.gz");
    let mut sink = profkit_export::open(
        Format::Pprof,
        &Output::path(path.clone()),
        &Options::default(),
    )
    .unwrap();
    synthetic::feed(&mut *sink).unwrap();
    drop(sink);
    let js = r#"
const fs = require('fs'), zlib = require('zlib');
const { Profile } = require(process.argv[1]);
const p = Profile.decode(zlib.gunzipSync(fs.readFileSync(process.argv[2])));
const st = p.stringTable.strings;
const types = p.sampleType.map(t => st[Number(t.type)] + '/' + st[Number(t.unit)]);
const totals = types.map(() => 0);
const self = {};
const fname = {};
for (const f of p.function) fname[Number(f.id)] = st[Number(f.name)];
const locf = {};
for (const l of p.location) locf[Number(l.id)] = Number(l.line[0].functionId);
for (const s of p.sample) {
  s.value.forEach((v, i) => totals[i] += Number(v));
  const leaf = fname[locf[Number(s.locationId[0])]];
  self[leaf] = (self[leaf] || 0) + Number(s.value[1]);
}
console.log(JSON.stringify({ types, totals, self, first: st[0], n: p.sample.length }));
"#;
    let out = check_output(Command::new("node").arg("-e").arg(js).arg(&pkg).arg(&path));
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["first"], "");
    assert_eq!(
        v["types"],
        serde_json::json!(["calls/count", "time/nanoseconds", "samples/count"])
    );
    let want = expected_calls();
    let calls: u64 = want.values().map(|v| v.0).sum();
    let time: u64 = want.values().map(|v| v.1).sum();
    let samples: u64 = synthetic::samples().iter().map(|s| s.3).sum();
    assert_eq!(v["totals"], serde_json::json!([calls, time, samples]));
    // Self time of `fib` (func 5) = its exclusive time in the trees.
    let mut fib_self = 0;
    for (k, (_, t)) in &want {
        if k.rsplit('\u{1}').next() == Some("fib") {
            fib_self += t;
        }
    }
    assert_eq!(v["self"]["fib"], serde_json::json!(fib_self));
}
