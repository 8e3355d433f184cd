//! The per-function difference of two profiles (`profkit diff A B`).
//!
//! Each input's stacks ([`StackTree`], from calls or samples) are reduced to per-function
//! totals matched **by name** across the inputs (their ids differ between builds and runs):
//!
//! * `calls`: calls of the function (for samples: samples with the function as leaf);
//! * `self`: time (or sample weight) in the function itself, the sum of the exclusive values of
//!   the stacks it ends;
//! * `total`: time in the function and its callees, the sum of the exclusive values of every
//!   stack it appears in, counted once per stack, so recursion is not counted twice (llvm-xray's
//!   account sums recursive calls' durations again).
//!
//! Rows are sorted by the absolute change of one of them ([`DiffKey`]), largest first, and
//! written as text, CSV or JSON (`profkit.diff/1`), in one [`DiffUnit`].

use std::collections::{HashMap, HashSet};
use std::io::{self, Write};

use crate::account::human_ns;
use profkit_model::func::FunctionTable;
use profkit_model::stack::StackTree;

/// Per-function totals of one input (in the report's [`DiffUnit`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Calls (samples).
    pub calls: u64,
    /// Self time (weight).
    pub self_: u64,
    /// Inclusive time (weight), each stack counted once.
    pub total: u64,
}

/// Totals per function name of `tree` (values through `to_units`).
pub fn totals(
    tree: &StackTree,
    names: &FunctionTable,
    to_units: &dyn Fn(u64) -> u64,
) -> HashMap<String, Totals> {
    let mut out: HashMap<String, Totals> = HashMap::new();
    let mut cache: HashMap<profkit_model::func::FuncId, String> = HashMap::new();
    let mut seen: HashSet<&str> = HashSet::new();
    let paths = tree.paths();
    for p in &paths {
        for f in &p.path {
            cache.entry(*f).or_insert_with(|| names.name(*f));
        }
    }
    for p in &paths {
        let exclusive = to_units(p.exclusive);
        seen.clear();
        for f in &p.path {
            let Some(name) = cache.get(f) else { continue };
            if seen.insert(name.as_str()) {
                let t = out.entry(name.clone()).or_default();
                t.total = t.total.saturating_add(exclusive);
            }
        }
        if let Some(name) = p.path.last().and_then(|f| cache.get(f)) {
            let t = out.entry(name.clone()).or_default();
            t.calls += p.count;
            t.self_ = t.self_.saturating_add(exclusive);
        }
    }
    out
}

/// Which change orders the rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DiffKey {
    /// Self time.
    #[default]
    SelfTime,
    /// Inclusive time.
    Total,
    /// Calls.
    Calls,
}

impl DiffKey {
    fn of(self, t: &Totals) -> u64 {
        match self {
            DiffKey::SelfTime => t.self_,
            DiffKey::Total => t.total,
            DiffKey::Calls => t.calls,
        }
    }

    fn name(self) -> &'static str {
        match self {
            DiffKey::SelfTime => "self",
            DiffKey::Total => "total",
            DiffKey::Calls => "calls",
        }
    }
}

/// The unit of a report's times: nanoseconds, TSC ticks (a clock that is unknown: an XRay
/// profiling-mode file without `--tsc-hz`, an XRay header whose cycle frequency is 0), or sample
/// weights. Named as `account --json`'s `time_unit` names times (`ns`, `ticks`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiffUnit {
    /// Nanoseconds.
    Nanoseconds,
    /// Raw TSC ticks.
    Ticks,
    /// Sample weight (a perf sample's period, 1 per Mono hit).
    Weight,
}

impl DiffUnit {
    /// The name in JSON (`"unit"`) and CSV column names: `ns`, `ticks`, `weight`.
    pub fn name(self) -> &'static str {
        match self {
            DiffUnit::Nanoseconds => "ns",
            DiffUnit::Ticks => "ticks",
            DiffUnit::Weight => "weight",
        }
    }
}

/// One function in both inputs (zeros where it is absent).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiffRow {
    /// The function's name.
    pub name: String,
    /// In the first input.
    pub a: Totals,
    /// In the second input.
    pub b: Totals,
}

fn delta(a: u64, b: u64) -> i128 {
    i128::from(b) - i128::from(a)
}

/// The rows of every function of `a` or `b`, by absolute change of `key` (largest first), then
/// name.
pub fn rows(
    a: &HashMap<String, Totals>,
    b: &HashMap<String, Totals>,
    key: DiffKey,
) -> Vec<DiffRow> {
    let mut names: Vec<&String> = a.keys().chain(b.keys()).collect();
    names.sort_unstable();
    names.dedup();
    let mut rows: Vec<DiffRow> = names
        .into_iter()
        .map(|n| DiffRow {
            name: n.clone(),
            a: a.get(n).copied().unwrap_or_default(),
            b: b.get(n).copied().unwrap_or_default(),
        })
        .collect();
    rows.sort_by(|x, y| {
        let dx = delta(key.of(&x.a), key.of(&x.b)).unsigned_abs();
        let dy = delta(key.of(&y.a), key.of(&y.b)).unsigned_abs();
        dy.cmp(&dx).then_with(|| x.name.cmp(&y.name))
    });
    rows
}

/// Everything a diff report needs.
pub struct DiffReport<'a> {
    /// The first input's name.
    pub a: &'a str,
    /// The second input's name.
    pub b: &'a str,
    /// Rows, sorted and cut.
    pub rows: &'a [DiffRow],
    /// Number of functions before the cut.
    pub functions: usize,
    /// The sort key.
    pub key: DiffKey,
    /// The unit of the values.
    pub unit: DiffUnit,
    /// Where each input is cut, if it is (JSON `"truncated": {"a": …, "b": …}`).
    pub truncated: [Option<&'a profkit_common::Truncation>; 2],
}

impl DiffReport<'_> {
    /// A value in the report's unit (ns with a unit; ticks and weights as numbers, the header
    /// names their unit).
    fn value(&self, v: u64) -> String {
        match self.unit {
            DiffUnit::Nanoseconds => human_ns(v),
            DiffUnit::Ticks | DiffUnit::Weight => v.to_string(),
        }
    }

    /// A change, signed (`+2.10 ms`, `-850 ns`, `0 ns`).
    fn change(&self, d: i128) -> String {
        let sign = match d.signum() {
            1 => "+",
            -1 => "-",
            _ => "",
        };
        let abs = u64::try_from(d.unsigned_abs()).unwrap_or(u64::MAX);
        format!("{sign}{}", self.value(abs))
    }
}

/// A table: the change and both values of self time, total time and calls per function.
pub fn write_text(out: &mut dyn Write, r: &DiffReport<'_>) -> io::Result<()> {
    writeln!(out, "A: {}", r.a)?;
    writeln!(out, "B: {}", r.b)?;
    writeln!(
        out,
        "{} of {} function(s), by change of {}{}",
        r.rows.len(),
        r.functions,
        r.key.name(),
        match (r.key, r.unit) {
            (DiffKey::Calls, DiffUnit::Ticks) => ", times in TSC ticks",
            (DiffKey::Calls, _) => "",
            (_, DiffUnit::Nanoseconds) => " time",
            (_, DiffUnit::Ticks) => " time, in TSC ticks",
            (_, DiffUnit::Weight) => " (sample weight)",
        }
    )?;
    writeln!(
        out,
        "{:>12} {:>12} {:>12}  {:>12} {:>12} {:>12}  {:>10} {:>10}  function",
        "Δ self", "self A", "self B", "Δ total", "total A", "total B", "calls A", "calls B"
    )?;
    let v = |x: u64| r.value(x);
    for row in r.rows {
        writeln!(
            out,
            "{:>12} {:>12} {:>12}  {:>12} {:>12} {:>12}  {:>10} {:>10}  {}",
            r.change(delta(row.a.self_, row.b.self_)),
            v(row.a.self_),
            v(row.b.self_),
            r.change(delta(row.a.total, row.b.total)),
            v(row.a.total),
            v(row.b.total),
            row.a.calls,
            row.b.calls,
            row.name
        )?;
    }
    Ok(())
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// CSV (RFC 4180 quoting); the column names end in the unit (`self_a_ns`, `self_a_ticks`,
/// `self_a_weight` …).
pub fn write_csv(out: &mut dyn Write, r: &DiffReport<'_>) -> io::Result<()> {
    let u = r.unit.name();
    writeln!(
        out,
        "function,self_a_{u},self_b_{u},delta_self_{u},total_a_{u},total_b_{u},delta_total_{u},calls_a,calls_b,delta_calls"
    )?;
    for row in r.rows {
        writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{}",
            csv_field(&row.name),
            row.a.self_,
            row.b.self_,
            delta(row.a.self_, row.b.self_),
            row.a.total,
            row.b.total,
            delta(row.a.total, row.b.total),
            row.a.calls,
            row.b.calls,
            delta(row.a.calls, row.b.calls)
        )?;
    }
    Ok(())
}

/// JSON, schema `profkit.diff/1` (docs/cli.md).
pub fn write_json(out: &mut dyn Write, r: &DiffReport<'_>) -> io::Result<()> {
    use profkit_common::json::quoted;
    write!(
        out,
        "{{\"schema\":\"profkit.diff/1\",\"a\":{},\"b\":{},\"unit\":\"{}\",\"sort\":\"{}\",\"functions\":[",
        quoted(r.a),
        quoted(r.b),
        r.unit.name(),
        r.key.name()
    )?;
    let totals = |t: &Totals| {
        format!(
            "{{\"calls\":{},\"self\":{},\"total\":{}}}",
            t.calls, t.self_, t.total
        )
    };
    for (i, row) in r.rows.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        write!(
            out,
            "{{\"name\":{},\"a\":{},\"b\":{},\"delta\":{{\"calls\":{},\"self\":{},\"total\":{}}}}}",
            quoted(&row.name),
            totals(&row.a),
            totals(&row.b),
            delta(row.a.calls, row.b.calls),
            delta(row.a.self_, row.b.self_),
            delta(row.a.total, row.b.total)
        )?;
    }
    writeln!(
        out,
        "],\"truncated\":{{\"a\":{},\"b\":{}}}}}",
        profkit_common::truncation::json(r.truncated[0]),
        profkit_common::truncation::json(r.truncated[1])
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use profkit_model::func::{FuncId, FuncInfo};

    fn names(list: &[&str]) -> FunctionTable {
        let mut t = FunctionTable::new();
        for (i, n) in list.iter().enumerate() {
            let info = FuncInfo {
                name: Some(n.to_string()),
                ..FuncInfo::default()
            };
            t.insert(FuncId(i as u32), info);
        }
        t
    }

    #[test]
    fn recursion_counts_once_in_total() {
        let n = names(&["main", "fib"]);
        let mut tree = StackTree::new();
        tree.add_sample(&[FuncId(0), FuncId(1), FuncId(1)], 3);
        tree.add_sample(&[FuncId(0), FuncId(1)], 2);
        tree.add_sample(&[FuncId(0)], 1);
        let t = totals(&tree, &n, &|v| v);
        assert_eq!(
            t["fib"],
            Totals {
                calls: 2,
                self_: 5,
                total: 5
            }
        );
        assert_eq!(
            t["main"],
            Totals {
                calls: 1,
                self_: 1,
                total: 6
            }
        );
    }

    #[test]
    fn rows_by_absolute_change() {
        let a: HashMap<String, Totals> = [
            (
                "x".to_string(),
                Totals {
                    calls: 1,
                    self_: 10,
                    total: 10,
                },
            ),
            (
                "y".to_string(),
                Totals {
                    calls: 1,
                    self_: 50,
                    total: 50,
                },
            ),
        ]
        .into();
        let b: HashMap<String, Totals> = [
            (
                "x".to_string(),
                Totals {
                    calls: 1,
                    self_: 30,
                    total: 30,
                },
            ),
            (
                "z".to_string(),
                Totals {
                    calls: 2,
                    self_: 5,
                    total: 5,
                },
            ),
        ]
        .into();
        let r = rows(&a, &b, DiffKey::SelfTime);
        let order: Vec<&str> = r.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(order, ["y", "x", "z"]);
        let mut csv = Vec::new();
        let report = DiffReport {
            a: "A",
            b: "B",
            rows: &r,
            functions: 3,
            key: DiffKey::SelfTime,
            unit: DiffUnit::Nanoseconds,
            truncated: [None, None],
        };
        write_csv(&mut csv, &report).unwrap();
        assert!(String::from_utf8(csv)
            .unwrap()
            .contains("\ny,50,0,-50,50,0,-50,1,0,-1\n"));
    }

    #[test]
    fn ticks_are_named_in_every_layout() {
        let t = Totals {
            calls: 2,
            self_: 1500,
            total: 1500,
        };
        let a: HashMap<String, Totals> = [("f".to_string(), t)].into();
        let b = HashMap::new();
        let r = rows(&a, &b, DiffKey::SelfTime);
        let report = DiffReport {
            a: "A",
            b: "B",
            rows: &r,
            functions: 1,
            key: DiffKey::SelfTime,
            unit: DiffUnit::Ticks,
            truncated: [None, None],
        };
        let text = |report: &DiffReport<'_>| {
            let mut v = Vec::new();
            write_text(&mut v, report).unwrap();
            String::from_utf8(v).unwrap()
        };
        let t = text(&report);
        assert!(
            t.contains("1 of 1 function(s), by change of self time, in TSC ticks\n"),
            "{t}"
        );
        // Plain numbers (the header names the unit), not human_ns's `1.50 µs`.
        assert!(t.contains("-1500 "), "{t}");
        let calls = text(&DiffReport {
            key: DiffKey::Calls,
            ..report
        });
        assert!(
            calls.contains("by change of calls, times in TSC ticks\n"),
            "{calls}"
        );
        let mut json = Vec::new();
        write_json(&mut json, &report).unwrap();
        let json = String::from_utf8(json).unwrap();
        assert!(json.contains("\"unit\":\"ticks\""), "{json}");
        let mut csv = Vec::new();
        write_csv(&mut csv, &report).unwrap();
        assert!(String::from_utf8(csv)
            .unwrap()
            .starts_with("function,self_a_ticks,"));
    }
}
