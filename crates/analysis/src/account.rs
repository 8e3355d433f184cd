//! Exact per-function accounting: count, min, median, p90, p99, max, sum.
//!
//! Percentiles follow llvm-xray exactly: with `n` durations, the median is the order statistic
//! at index `n / 2`, p90 at `floor(n * 0.9)`, p99 at `floor(n * 0.99)` (0-based, computed in
//! double), so the numbers match `llvm-xray account`.

use std::collections::HashMap;
use std::io::{self, Write};

use crate::llvm::{densemap_order, format_e};
use profkit_model::clock::Clock;
use profkit_model::func::{FuncId, FunctionTable};
use profkit_model::replay::Fold;
use profkit_model::span::{Span, SpanSink};

/// Function ids below this index a dense table; larger ones go through a hash map.
const DENSE_LIMIT: u32 = 1 << 20;

/// Durations below this value are counted in a histogram once a function has many calls.
const HIST_LIMIT: u64 = 4096;
/// Number of listed durations after which a function switches to the histogram.
const HIST_AFTER: usize = 1024;

/// The durations of one function's calls, stored exactly but compactly: a plain list while
/// short, then a histogram of the values below 4096 ticks (counts by value) plus a list of the
/// larger ones. Order statistics, sums and extremes are exact either way.
///
/// Calls known only by their number and total duration (XRay profiling mode) are kept apart
/// ([`Durations::add_totals`]): they add to the count and the sum, not to the order statistics.
#[derive(Clone, Debug, Default)]
pub struct Durations {
    hist: Vec<u64>,
    hist_on: bool,
    list: Vec<u64>,
    /// Calls without a duration of their own, and their total duration.
    totals: (u64, u64),
}

impl Durations {
    /// Adds one duration.
    #[inline]
    pub fn push(&mut self, d: u64) {
        if self.hist_on {
            if let Some(c) = self.hist.get_mut(d as usize) {
                *c += 1;
                return;
            }
        }
        self.push_slow(d);
    }

    #[inline(never)]
    fn push_slow(&mut self, d: u64) {
        if self.hist_on && d < HIST_LIMIT {
            let i = d as usize;
            if i >= self.hist.len() {
                self.hist.resize(i + 1, 0);
            }
            if let Some(c) = self.hist.get_mut(i) {
                *c += 1;
            }
        } else {
            self.list.push(d);
            if !self.hist_on && self.list.len() >= HIST_AFTER {
                self.switch_to_hist();
            }
        }
    }

    fn switch_to_hist(&mut self) {
        self.hist_on = true;
        for d in std::mem::take(&mut self.list) {
            self.push(d);
        }
    }

    /// Number of durations counted in the histogram (not kept per push: the loop that feeds
    /// durations stays free of a second memory counter).
    fn hist_count(&self) -> u64 {
        self.hist.iter().sum()
    }

    /// Number of durations.
    pub fn len(&self) -> u64 {
        self.hist_count() + self.list.len() as u64
    }

    /// Whether there are none (and no totals).
    pub fn is_empty(&self) -> bool {
        self.len() == 0 && self.totals.0 == 0
    }

    /// Adds `calls` calls whose durations are known only as their total `sum`.
    pub fn add_totals(&mut self, calls: u64, sum: u64) {
        self.totals.0 = self.totals.0.saturating_add(calls);
        self.totals.1 = self.totals.1.saturating_add(sum);
    }

    /// Adds all of `other`'s durations.
    pub fn merge(&mut self, other: Durations) {
        self.add_totals(other.totals.0, other.totals.1);
        if !other.hist_on {
            for d in other.list {
                self.push(d);
            }
            return;
        }
        if !self.hist_on {
            self.switch_to_hist();
        }
        if self.hist.len() < other.hist.len() {
            self.hist.resize(other.hist.len(), 0);
        }
        for (a, b) in self.hist.iter_mut().zip(other.hist.iter()) {
            *a += *b;
        }
        if self.list.is_empty() {
            self.list = other.list;
        } else {
            self.list.extend_from_slice(&other.list);
        }
    }

    /// The statistics (reorders the stored list). Calls known only by their totals add to the
    /// count and the sum; min, median, p90, p99 and max are those of the single durations (0
    /// when there are none).
    pub fn row(&mut self, func: FuncId) -> Row {
        let mut row = self.row_of_durations(func);
        row.count = row.count.saturating_add(self.totals.0);
        row.sum = row.sum.saturating_add(self.totals.1);
        row
    }

    fn row_of_durations(&mut self, func: FuncId) -> Row {
        if !self.hist_on {
            return stats(func, &mut self.list);
        }
        let n = self.len();
        let mut sum: u128 = 0;
        let mut min = u64::MAX;
        let mut max = 0u64;
        for (v, &c) in self.hist.iter().enumerate() {
            if c > 0 {
                sum += u128::from(v as u64) * u128::from(c);
                min = min.min(v as u64);
                max = max.max(v as u64);
            }
        }
        for &d in &self.list {
            sum += u128::from(d);
            min = min.min(d);
            max = max.max(d);
        }
        let mut row = Row {
            func,
            count: n,
            min: if n == 0 { 0 } else { min },
            median: 0,
            p90: 0,
            p99: 0,
            max,
            sum: u64::try_from(sum).unwrap_or(u64::MAX),
        };
        if n == 0 {
            return row;
        }
        let hist = &self.hist;
        let hist_count = self.hist_count();
        let list = &mut self.list;
        let mut at = |k: u64| -> u64 {
            let k = k.min(n - 1);
            if k < hist_count {
                let mut seen = 0u64;
                for (v, &c) in hist.iter().enumerate() {
                    seen += c;
                    if seen > k {
                        return v as u64;
                    }
                }
                return 0;
            }
            let j = (k - hist_count) as usize;
            if j >= list.len() {
                return 0;
            }
            let (_, v, _) = list.select_nth_unstable(j);
            *v
        };
        row.median = at(n / 2);
        row.p90 = at((n as f64 * 0.9).floor() as u64);
        row.p99 = at((n as f64 * 0.99).floor() as u64);
        row
    }
}

/// Collects the duration of every completed call, per function. A [`SpanSink`], and a
/// [`Fold`] that also takes call-path totals (XRay profiling mode: counts and sums only).
#[derive(Clone, Debug, Default)]
pub struct Accounting {
    dense: Vec<u32>,
    sparse: HashMap<u32, u32>,
    funcs: Vec<(FuncId, Durations)>,
}

impl SpanSink for Accounting {
    #[inline(always)]
    fn span(&mut self, span: &Span) {
        self.record(span.func, span.duration());
    }
}

/// A worker's part is an accounting of its own: merged in order, functions keep the order in
/// which they first completed a call.
impl Fold for Accounting {
    type Part = Accounting;

    fn resolve(&mut self, part: Accounting) {
        if !part.is_empty() {
            self.merge(part);
        }
    }

    /// The path's calls and inclusive time count for its last function.
    fn call_path(&mut self, path: &profkit_model::events::CallPath<'_>) -> bool {
        if let Some(&f) = path.stack.last() {
            self.record_totals(f, path.calls, path.inclusive);
        }
        true
    }
}

/// Statistics of one function (raw clock units).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    /// The function.
    pub func: FuncId,
    /// Number of completed calls.
    pub count: u64,
    /// Shortest call.
    pub min: u64,
    /// Order statistic at `n / 2`.
    pub median: u64,
    /// Order statistic at `floor(n * 0.9)`.
    pub p90: u64,
    /// Order statistic at `floor(n * 0.99)`.
    pub p99: u64,
    /// Longest call.
    pub max: u64,
    /// Total (saturating).
    pub sum: u64,
}

impl Row {
    /// A function without completed calls (every statistic 0).
    pub fn empty(func: FuncId) -> Self {
        Row {
            func,
            count: 0,
            min: 0,
            median: 0,
            p90: 0,
            p99: 0,
            max: 0,
            sum: 0,
        }
    }
}

impl Accounting {
    /// An empty accounting.
    pub fn new() -> Self {
        Self::default()
    }

    #[inline(always)]
    fn slot(&mut self, func: FuncId) -> usize {
        let id = func.0;
        let existing = if id < DENSE_LIMIT {
            self.dense.get(id as usize).copied().unwrap_or(0)
        } else {
            self.sparse.get(&id).copied().unwrap_or(0)
        };
        if existing != 0 {
            return existing as usize - 1;
        }
        self.new_slot(func)
    }

    #[cold]
    fn new_slot(&mut self, func: FuncId) -> usize {
        let id = func.0;
        self.funcs.push((func, Durations::default()));
        let n = self.funcs.len() as u32;
        if id < DENSE_LIMIT {
            if self.dense.len() <= id as usize {
                self.dense.resize(id as usize + 1, 0);
            }
            if let Some(s) = self.dense.get_mut(id as usize) {
                *s = n;
            }
        } else {
            self.sparse.insert(id, n);
        }
        n as usize - 1
    }

    /// Records one call of `func` lasting `duration`.
    #[inline(always)]
    pub fn record(&mut self, func: FuncId, duration: u64) {
        let i = self.slot(func);
        if let Some((_, v)) = self.funcs.get_mut(i) {
            v.push(duration);
        }
    }

    /// Records `calls` calls of `func` whose durations are known only as their total `sum`.
    pub fn record_totals(&mut self, func: FuncId, calls: u64, sum: u64) {
        let i = self.slot(func);
        if let Some((_, v)) = self.funcs.get_mut(i) {
            v.add_totals(calls, sum);
        }
    }

    /// Appends another accounting's durations (e.g. another thread's).
    pub fn merge(&mut self, other: Accounting) {
        for (f, v) in other.funcs {
            let i = self.slot(f);
            if let Some((_, mine)) = self.funcs.get_mut(i) {
                if mine.is_empty() {
                    *mine = v;
                } else {
                    mine.merge(v);
                }
            }
        }
    }

    /// Number of functions with at least one completed call.
    pub fn len(&self) -> usize {
        self.funcs.len()
    }

    /// Whether no call completed.
    pub fn is_empty(&self) -> bool {
        self.funcs.is_empty()
    }

    /// Statistics per function, in the order the functions first completed a call.
    pub fn rows(&mut self) -> Vec<Row> {
        self.funcs.iter_mut().map(|(f, v)| v.row(*f)).collect()
    }
}

/// Statistics of `durations` (reordered in place).
pub fn stats(func: FuncId, durations: &mut [u64]) -> Row {
    let n = durations.len();
    let mut row = Row {
        count: n as u64,
        ..Row::empty(func)
    };
    if n == 0 {
        return row;
    }
    let mut sum: u128 = 0;
    let mut min = u64::MAX;
    let mut max = 0;
    for &d in durations.iter() {
        sum += u128::from(d);
        min = min.min(d);
        max = max.max(d);
    }
    row.sum = u64::try_from(sum).unwrap_or(u64::MAX);
    row.min = min;
    row.max = max;
    let at = |d: &mut [u64], k: usize| -> u64 {
        let k = k.min(n - 1);
        let (_, v, _) = d.select_nth_unstable(k);
        *v
    };
    row.median = at(durations, n / 2);
    row.p90 = at(durations, (n as f64 * 0.9).floor() as usize);
    row.p99 = at(durations, (n as f64 * 0.99).floor() as usize);
    row
}

/// The column to sort by (llvm-xray `-s`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SortKey {
    /// Function id (default).
    #[default]
    FuncId,
    /// Call count.
    Count,
    /// Minimum.
    Min,
    /// Median.
    Med,
    /// 90th percentile.
    P90,
    /// 99th percentile.
    P99,
    /// Maximum.
    Max,
    /// Sum.
    Sum,
    /// Function name (llvm-xray 14 leaves this unimplemented and prints unsorted).
    Func,
}

/// Sorts rows as llvm-xray does: the rows start in the iteration order of llvm's `DenseMap`
/// keyed by function id (insertion = first completion) and are sorted stably by `key`
/// (llvm uses `std::sort`, which is stable for up to 16 rows; beyond that ties may differ).
pub fn sort_rows(rows: &mut Vec<Row>, key: SortKey, descending: bool, names: &FunctionTable) {
    let ids: Vec<u32> = rows.iter().map(|r| r.func.0).collect();
    let order = densemap_order(&ids);
    let mut ordered: Vec<Row> = order.iter().filter_map(|&i| rows.get(i).copied()).collect();
    let k = |r: &Row| -> u64 {
        match key {
            SortKey::FuncId | SortKey::Func => u64::from(r.func.0),
            SortKey::Count => r.count,
            SortKey::Min => r.min,
            SortKey::Med => r.median,
            SortKey::P90 => r.p90,
            SortKey::P99 => r.p99,
            SortKey::Max => r.max,
            SortKey::Sum => r.sum,
        }
    };
    if key == SortKey::Func {
        ordered.sort_by_cached_key(|r| names.name(r.func));
    } else {
        ordered.sort_by_key(k);
    }
    if descending {
        // Stable descending: reverse the order of distinct keys, keep ties in order.
        if key == SortKey::Func {
            ordered.reverse();
        } else {
            ordered.sort_by_key(|r| std::cmp::Reverse(k(r)));
        }
    }
    *rows = ordered;
}

/// Everything an account report needs.
pub struct Report<'a> {
    /// Rows to print (already sorted and cut to `--top`).
    pub rows: &'a [Row],
    /// Number of functions before `--top`.
    pub total_functions: usize,
    /// Names.
    pub names: &'a FunctionTable,
    /// Clock of the raw values.
    pub clock: Clock,
    /// Calls that never returned.
    pub unfinished: u64,
    /// Exits without an enter.
    pub unmatched_exits: u64,
    /// Whether each call's duration is known, so that min, median, p90, p99 and max mean
    /// something. `false` for XRay profiling mode (only counts and sums per call path): the
    /// text table shows `-` and JSON `null` for those columns.
    pub latencies: bool,
    /// Where the input is cut, if it is (JSON `"truncated"`).
    pub truncation: Option<&'a profkit_common::Truncation>,
}

fn llvm_debug(names: &FunctionTable, f: FuncId) -> &str {
    names.debug(f).unwrap_or("(unknown)")
}

/// Writes one line per row of `r` with `line(out, row, times, debug, name)`: `times` are the
/// min, median, 90p, 99p, max and sum in seconds; `debug` is llvm-xray's debug column.
fn write_llvm_rows(
    out: &mut dyn Write,
    r: &Report<'_>,
    line: impl Fn(&mut dyn Write, &Row, [f64; 6], &str, &str) -> io::Result<()>,
) -> io::Result<()> {
    for row in r.rows {
        let times = [row.min, row.median, row.p90, row.p99, row.max, row.sum]
            .map(|v| r.clock.to_seconds_f64(v as f64));
        let name = r.names.name(row.func);
        line(out, row, times, llvm_debug(r.names, row.func), &name)?;
    }
    Ok(())
}

/// `llvm-xray account` text output, byte for byte.
pub fn write_llvm_text(out: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    writeln!(out, "Functions with latencies: {}", r.total_functions)?;
    out.write_all(b"   funcid      count [      min,       med,       90p,       99p,       max]       sum  function    \n")?;
    write_llvm_rows(
        out,
        r,
        |out, row, [min, med, p90, p99, max, sum], debug, name| {
            writeln!(
            out,
            "{:>9} {:>10} [{min:>9.6}, {med:>9.6}, {p90:>9.6}, {p99:>9.6}, {max:>9.6}] {sum:>9.6}  {debug}: {name}",
            row.func.0, row.count,
        )
        },
    )
}

/// `llvm-xray account -f csv` output, byte for byte.
pub fn write_llvm_csv(out: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    out.write_all(b"funcid,count,min,median,90%ile,99%ile,max,sum,debug,function\n")?;
    write_llvm_rows(out, r, |out, row, times, debug, name| {
        let [min, med, p90, p99, max, sum] = times.map(format_e);
        writeln!(
            out,
            "{},{},{min},{med},{p90},{p99},{max},{sum},\"{debug}\",\"{name}\"",
            row.func.0, row.count,
        )
    })
}

/// A duration in nanoseconds with a unit: `850 ns`, `2.86 µs`, `14.65 ms`, `1.20 s`.
pub fn human_ns(ns: u64) -> String {
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.2} µs", ns as f64 / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.2} ms", ns as f64 / 1e6)
    } else {
        format!("{:.2} s", ns as f64 / 1e9)
    }
}

/// A raw duration with a unit: converted by `clock` and shown as [`human_ns`], or `N ticks`
/// when the clock is unknown (frequency 0: an XRay header that says 0, a profiling-mode file).
pub fn human_time(clock: &Clock, raw: u64) -> String {
    if clock.ticks_per_second == 0 {
        format!("{raw} ticks")
    } else {
        human_ns(clock.to_ns(raw))
    }
}

/// Widest function column of [`write_table`] (in characters): longer names (Mono wrappers and
/// generic signatures reach 300) are cut and end in `...`; `--json` keeps them whole.
pub const FUNCTION_COLUMN: usize = 60;

/// `name` cut to `limit` characters, its last three `...`, when it is longer.
fn cut_name(name: String, limit: usize) -> String {
    if name.chars().count() <= limit {
        return name;
    }
    let mut s: String = name.chars().take(limit.saturating_sub(3)).collect();
    s.push_str("...");
    s
}

/// profkit's text table: aligned columns, times with units; the function column is as wide as
/// the longest name shown, at most [`FUNCTION_COLUMN`].
pub fn write_table(out: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    let ns = |v: u64| human_time(&r.clock, v);
    let lat = |v: u64| {
        if r.latencies {
            ns(v)
        } else {
            "-".to_string()
        }
    };
    let cells: Vec<[String; 9]> = r
        .rows
        .iter()
        .map(|row| {
            [
                row.func.0.to_string(),
                cut_name(r.names.name(row.func), FUNCTION_COLUMN),
                row.count.to_string(),
                lat(row.min),
                lat(row.median),
                lat(row.p90),
                lat(row.p99),
                lat(row.max),
                ns(row.sum),
            ]
        })
        .collect();
    let head = [
        "id", "function", "count", "min", "median", "p90", "p99", "max", "sum",
    ];
    let mut w: [usize; 9] = head.map(|h| h.chars().count());
    for c in &cells {
        for (wi, s) in w.iter_mut().zip(c.iter()) {
            *wi = (*wi).max(s.chars().count());
        }
    }
    let line = |out: &mut dyn Write, c: &[&str]| -> io::Result<()> {
        let mut s = String::new();
        for (i, (cell, width)) in c.iter().zip(w.iter()).enumerate() {
            let pad = width.saturating_sub(cell.chars().count());
            if i > 0 {
                s.push_str("  ");
            }
            if i == 1 {
                s.push_str(cell);
                if i + 1 < c.len() {
                    s.extend(std::iter::repeat_n(' ', pad));
                }
            } else {
                s.extend(std::iter::repeat_n(' ', pad));
                s.push_str(cell);
            }
        }
        writeln!(out, "{}", s.trim_end())
    };
    line(out, &head)?;
    for c in &cells {
        let refs: Vec<&str> = c.iter().map(String::as_str).collect();
        line(out, &refs)?;
    }
    Ok(())
}

/// `{"schema":"profkit.account/1","functions":[…],"unfinished":N,"unmatched_exits":N,
/// "time_unit":"ns","truncated":null|{…}}`. Without [`Report::latencies`], `min_ns` … `max_ns` are `null`; when the
/// clock is unknown (frequency 0) the `*_ns` values are raw ticks and `time_unit` is `ticks`.
pub fn write_json(out: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    out.write_all(b"{\"schema\":\"profkit.account/1\",\"functions\":[")?;
    let ns = |v: u64| r.clock.to_ns(v);
    let lat = |v: u64| {
        if r.latencies {
            ns(v).to_string()
        } else {
            "null".to_string()
        }
    };
    for (i, row) in r.rows.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        let debug = match r.names.debug(row.func) {
            Some(d) => profkit_common::json::quoted(d),
            None => "null".to_string(),
        };
        write!(
            out,
            "{{\"id\":{},\"name\":{},\"debug\":{},\"count\":{},\"min_ns\":{},\"median_ns\":{},\"p90_ns\":{},\"p99_ns\":{},\"max_ns\":{},\"sum_ns\":{}}}",
            row.func.0,
            profkit_common::json::quoted(&r.names.name(row.func)),
            debug,
            row.count,
            lat(row.min),
            lat(row.median),
            lat(row.p90),
            lat(row.p99),
            lat(row.max),
            ns(row.sum)
        )?;
    }
    writeln!(
        out,
        "],\"unfinished\":{},\"unmatched_exits\":{},\"time_unit\":\"{}\",\"truncated\":{}}}",
        r.unfinished,
        r.unmatched_exits,
        if r.clock.ticks_per_second == 0 {
            "ticks"
        } else {
            "ns"
        },
        profkit_common::truncation::json(r.truncation)
    )
}
