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

use rustc_hash::FxHashMap;
use std::io::{self, Write};

use crate::account::human_ns;
use profkit_model::events::{CallPath, CallTree, EventSink, ThreadInfo, TraceInfo};
use profkit_model::func::{FuncId, FuncInfo, FunctionTable};
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

/// A function's name in a diff: a name from a function table, or `#ID` (a function no table
/// names), which is made when it is written (an input can name 12.5M functions: issue #23 B5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiffName<'a> {
    /// A function table's name.
    Named(&'a str),
    /// `#ID`.
    Id(u32),
}

impl DiffName<'_> {
    /// Calls `f` with the name's text.
    pub fn with_str<R>(&self, f: impl FnOnce(&str) -> R) -> R {
        match self {
            DiffName::Named(s) => f(s),
            DiffName::Id(id) => {
                let mut buf = [0u8; 11];
                f(profkit_model::func::unnamed(&mut buf, *id))
            }
        }
    }
}

impl std::fmt::Display for DiffName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DiffName::Named(s) => f.write_str(s),
            DiffName::Id(id) => write!(f, "#{id}"),
        }
    }
}

/// The id of a name written `#ID` exactly as [`FunctionTable::name`] writes an unnamed id (so
/// that the two are one name).
fn id_of_text(name: &str) -> Option<u32> {
    let digits = name.strip_prefix('#')?;
    let id: u32 = digits.parse().ok()?;
    let mut buf = [0u8; 11];
    (profkit_model::func::unnamed(&mut buf, id) == name).then_some(id)
}

/// A name as a number: `#ID` is the id, a table name `2^32 +` its index in
/// [`InputTotals::named`].
type Key = u64;

const NAMED: u64 = 1 << 32;

/// Per-function totals of one input, by name (values through `to_units`): one entry per
/// function name, sorted by name.
#[derive(Clone, Debug, Default)]
pub struct InputTotals<'a> {
    named: Vec<&'a str>,
    entries: Vec<(Key, Totals)>,
}

impl<'a> InputTotals<'a> {
    /// Totals given by name (tests, and inputs aggregated elsewhere).
    pub fn from_list(list: &[(&'a str, Totals)]) -> InputTotals<'a> {
        let mut t = InputTotals::default();
        for &(name, totals) in list {
            let key = t.key(name);
            t.entries.push((key, totals));
        }
        t.sort_and_merge();
        t
    }

    fn key(&mut self, name: &'a str) -> Key {
        if let Some(id) = id_of_text(name) {
            return u64::from(id);
        }
        match self.named.iter().position(|n| *n == name) {
            Some(i) => NAMED + i as u64,
            None => {
                self.named.push(name);
                NAMED + (self.named.len() - 1) as u64
            }
        }
    }

    /// The name of `key`.
    fn name(&self, key: Key) -> DiffName<'a> {
        match key.checked_sub(NAMED) {
            None => DiffName::Id(key as u32),
            Some(i) => DiffName::Named(self.named.get(i as usize).copied().unwrap_or("?")),
        }
    }

    /// Sorts the entries by name and adds up those of one name.
    fn sort_and_merge(&mut self) {
        let mut entries = std::mem::take(&mut self.entries);
        entries.sort_unstable_by(|a, b| self.cmp_names(self, a.0, b.0));
        entries.dedup_by(|later, earlier| {
            if later.0 != earlier.0 {
                return false;
            }
            earlier.1.calls = earlier.1.calls.saturating_add(later.1.calls);
            earlier.1.self_ = earlier.1.self_.saturating_add(later.1.self_);
            earlier.1.total = earlier.1.total.saturating_add(later.1.total);
            true
        });
        entries.shrink_to_fit();
        self.entries = entries;
    }

    /// The byte order of the name of `a` (a key of `self`) and of `b` (a key of `other`).
    fn cmp_names(&self, other: &InputTotals<'_>, a: Key, b: Key) -> std::cmp::Ordering {
        self.name(a)
            .with_str(|x| other.name(b).with_str(|y| x.cmp(y)))
    }

    /// Number of functions.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there is no function.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The totals of the function named `name`.
    pub fn get(&self, name: &str) -> Option<Totals> {
        self.entries
            .iter()
            .find(|(k, _)| self.name(*k).with_str(|n| n == name))
            .map(|(_, t)| *t)
    }
}

/// Per-function totals of `tree` by name (values through `to_units`); see [`RawTotals`].
pub fn totals<'a>(
    tree: &StackTree,
    names: &'a FunctionTable,
    to_units: &dyn Fn(u64) -> u64,
) -> InputTotals<'a> {
    RawTotals::of_stack_tree(tree, names, to_units).resolve(names)
}

/// A visitor of a tree's nodes: depth, function, calls, exclusive value.
type Visit<'v> = dyn FnMut(u32, FuncId, u64, u64) + 'v;

/// The keys of functions: an unnamed function's (or one named `#ID`) is its id, a named one's
/// `NAMED +` the index of its name, in the order names are first seen.
struct Keys<'n> {
    names: &'n FunctionTable,
    named_key: FxHashMap<&'n str, Key>,
    /// Per named key, a function with that name.
    named: Vec<FuncId>,
}

impl<'n> Keys<'n> {
    fn new(names: &'n FunctionTable) -> Keys<'n> {
        Keys {
            names,
            named_key: FxHashMap::default(),
            named: Vec::new(),
        }
    }

    fn of(&mut self, f: FuncId) -> Key {
        match self.names.get(f).and_then(|i| i.name.as_deref()) {
            None => u64::from(f.0),
            Some(n) => match id_of_text(n) {
                Some(id) => u64::from(id),
                None => *self.named_key.entry(n).or_insert_with(|| {
                    self.named.push(f);
                    NAMED + (self.named.len() - 1) as u64
                }),
            },
        }
    }
}

/// Per-function totals of one input whose names are not yet looked up (a name is a key: an id,
/// or a function of the table that has it, [`RawTotals::resolve`]).
///
/// In a tree's depth-first order every node gets a record: its name, its place (`pre`), the
/// end of its subtree and its subtree's value; a node with calls adds them and its value to its
/// function's `calls` and `self`. A function's `total` is the value of the subtrees of its
/// outermost nodes (no caller above them has its name): sorted by name and place, a node is
/// outermost when it starts after the end of every earlier node of its name. Memory: 32 bytes
/// a node in one allocation, whatever the depth (the records become the totals in place), and
/// nothing a level: the open path is a chain through the records (the stack-by-stack count of
/// names this replaces copied every path and held a name string per function: 1.2 GB for 3M
/// functions; a 12.5M-deep path's open stack was 100 MB more).
#[derive(Clone, Debug, Default)]
pub struct RawTotals {
    /// Per named key (`NAMED + i`), a function with that name.
    named: Vec<FuncId>,
    entries: Vec<(Key, Totals)>,
    /// Whether a node has calls.
    calls: bool,
}

impl RawTotals {
    /// The totals of a [`StackTree`].
    pub fn of_stack_tree(
        tree: &StackTree,
        names: &FunctionTable,
        to_units: &dyn Fn(u64) -> u64,
    ) -> RawTotals {
        let mut keys = Keys::new(names);
        let mut raw = Self::of_walk(
            tree.len(),
            &mut |visit| {
                tree.for_each_node(|path, s| {
                    if let Some(&f) = path.last() {
                        visit(path.len() as u32, f, s.count, s.exclusive);
                    }
                })
            },
            &mut keys,
            to_units,
        );
        raw.named = keys.named;
        raw
    }

    /// The totals of the threads' [`CallTree`]s (an XRay profile's own trees: no
    /// [`StackTree`] of them is made), as those of their merged tree, which they are when no
    /// path without calls has time (the merged path of such a path and of another thread's
    /// with calls would count its time: `None`), and no sum passes `u64::MAX` (the merged
    /// tree's sums wrap: `None`). One thread's tree is its merged tree.
    pub fn of_call_trees(
        trees: &[&dyn CallTree],
        names: &FunctionTable,
        to_units: &dyn Fn(u64) -> u64,
    ) -> Option<RawTotals> {
        if trees.len() > 1 && !Self::mergeable(trees) {
            return None;
        }
        // One walk through every tree: a node's subtree ends before the next tree's first
        // place, so no node of one thread is below another thread's, and the totals are the
        // sums of the threads'.
        let mut keys = Keys::new(names);
        let len = trees.iter().fold(0usize, |n, t| n.saturating_add(t.len()));
        let mut raw = Self::of_walk(
            len,
            &mut |visit| {
                for tree in trees {
                    tree.walk(&mut |n| visit(n.depth, n.func, n.calls, n.exclusive));
                }
            },
            &mut keys,
            to_units,
        );
        raw.named = keys.named;
        Some(raw)
    }

    /// Whether the threads' trees add up to their merged tree's totals (see
    /// [`RawTotals::of_call_trees`]).
    fn mergeable(trees: &[&dyn CallTree]) -> bool {
        let mut ok = true;
        let (mut calls, mut time) = (0u64, 0u64);
        for tree in trees {
            tree.walk(&mut |n| {
                if n.calls == 0 && n.exclusive > 0 {
                    ok = false;
                }
                match (calls.checked_add(n.calls), time.checked_add(n.exclusive)) {
                    (Some(c), Some(t)) => (calls, time) = (c, t),
                    _ => ok = false,
                }
            });
        }
        ok
    }

    /// Whether a node has calls (or samples).
    pub fn has_calls(&self) -> bool {
        self.calls
    }

    /// The totals by name, sorted by name.
    pub fn resolve(self, names: &FunctionTable) -> InputTotals<'_> {
        let named = self
            .named
            .iter()
            .map(|&f| names.get(f).and_then(|i| i.name.as_deref()).unwrap_or("?"))
            .collect();
        let mut out = InputTotals {
            named,
            entries: self.entries,
        };
        out.sort_and_merge();
        out
    }

    /// `walk` calls its visitor with every node of a tree, or of trees one after the other
    /// (`len` in all), depth first: depth (1: a root call), function, calls and exclusive
    /// value. `named` is left empty: the names are `keys`'.
    fn of_walk(
        len: usize,
        walk: &mut dyn FnMut(&mut Visit<'_>),
        keys: &mut Keys<'_>,
        to_units: &dyn Fn(u64) -> u64,
    ) -> RawTotals {
        /// A node: its name (and, in bit 63, whether its subtree has calls), its place and the
        /// end of its subtree (`a`: place in the low half), its subtree's value (`b`) and, while
        /// it is open, its caller's record (`c`); then, in the same memory, a function's totals
        /// (`a` calls, `b` self, `c` total): the records become the entries in place (one large
        /// allocation, not two: 400 MB each for 12.5M functions).
        #[derive(Clone, Copy)]
        struct Slot {
            key: u64,
            a: u64,
            b: u64,
            c: u64,
        }
        const COUNTED: u64 = 1 << 63;
        const NO_CALLER: u64 = u64::MAX;
        let mut out = RawTotals::default();
        let mut recs: Vec<Slot> = Vec::with_capacity(len);
        // The nodes with calls: their name, calls and value.
        let mut counted: Vec<Slot> = Vec::new();
        // The innermost open node (its record) and its depth; its callers are a chain through
        // `c`.
        let mut top = NO_CALLER;
        let mut depth = 0u32;
        // Closes the innermost open node at place `at`: its end, and its value and flag go to
        // its caller. Returns the caller.
        let close = |recs: &mut Vec<Slot>, i: u64, at: u32| -> u64 {
            let (sum, flag, caller) = match recs.get_mut(i as usize) {
                Some(r) => {
                    r.a = (r.a & 0xffff_ffff) | (u64::from(at) << 32);
                    let caller = std::mem::replace(&mut r.c, 0);
                    (r.b, r.key & COUNTED, caller)
                }
                None => return NO_CALLER,
            };
            if let Some(p) = recs.get_mut(caller as usize) {
                p.b = p.b.saturating_add(sum);
                p.key |= flag;
            }
            caller
        };
        let mut at = 0u32;
        walk(&mut |d, f, count, exclusive| {
            while depth >= d && top != NO_CALLER {
                top = close(&mut recs, top, at);
                depth -= 1;
            }
            let key = keys.of(f);
            let mut own = 0;
            let mut flag = 0;
            if count > 0 {
                own = to_units(exclusive);
                flag = COUNTED;
                counted.push(Slot {
                    key,
                    a: count,
                    b: own,
                    c: 0,
                });
            }
            let caller = top;
            top = recs.len() as u64;
            depth = depth.saturating_add(1);
            recs.push(Slot {
                key: key | flag,
                a: u64::from(at),
                b: own,
                c: caller,
            });
            at = at.saturating_add(1);
        });
        while top != NO_CALLER {
            top = close(&mut recs, top, at);
        }
        out.calls = !counted.is_empty();
        recs.sort_unstable_by_key(|r| (r.key & !COUNTED, r.a & 0xffff_ffff));
        // A function's total: its outermost nodes' subtrees with calls. Only a function on the
        // path of a node with calls has a row. Written over the records (a group's entry goes
        // at or before the group's first record).
        let mut kept = 0usize;
        let mut i = 0usize;
        while let Some(first) = recs.get(i).copied() {
            let key = first.key & !COUNTED;
            let mut total = 0u64;
            let mut present = false;
            let mut end = 0u32;
            while let Some(r) = recs.get(i).filter(|r| r.key & !COUNTED == key) {
                let (pre, r_end) = (r.a as u32, (r.a >> 32) as u32);
                if pre >= end && r.key & COUNTED != 0 {
                    total = total.saturating_add(r.b);
                    present = true;
                }
                end = end.max(r_end);
                i += 1;
            }
            if present {
                if let Some(slot) = recs.get_mut(kept) {
                    *slot = Slot {
                        key,
                        a: 0,
                        b: 0,
                        c: total,
                    };
                }
                kept += 1;
            }
        }
        recs.truncate(kept);
        // Calls and self time, added in place (a function with calls is on its own path: it
        // has an entry; both lists are by key).
        counted.sort_unstable_by_key(|c| c.key);
        let mut at = 0usize;
        for c in &counted {
            while recs.get(at).is_some_and(|r| r.key < c.key) {
                at += 1;
            }
            if let Some(r) = recs.get_mut(at).filter(|r| r.key == c.key) {
                r.a = r.a.saturating_add(c.a);
                r.b = r.b.saturating_add(c.b);
            }
        }
        drop(counted);
        // The same memory (same size and alignment).
        out.entries = recs
            .into_iter()
            .map(|r| {
                (
                    r.key,
                    Totals {
                        calls: r.a,
                        self_: r.b,
                        total: r.c,
                    },
                )
            })
            .collect();
        out
    }
}

/// An [`EventSink`] for an input of call paths (an XRay profiling-mode file) that keeps only
/// its per-function totals: the driver's per-thread trees are taken whole
/// ([`EventSink::call_trees`]) and reduced to their totals at once, so no [`StackTree`] of
/// them is made (a 12.5M-deep path was 500 MB of `StackTree` beside the driver's own 400 MB
/// tree: issue #23 B5). When the threads' totals are not those of their merged tree (see
/// [`RawTotals::of_call_trees`]), the paths come one by one into a `StackTree` as before.
#[derive(Debug, Default)]
pub struct TotalsSink {
    functions: FunctionTable,
    threads: u32,
    taken: Option<RawTotals>,
    tree: StackTree,
    paths: bool,
}

impl TotalsSink {
    /// An empty sink.
    pub fn new() -> Self {
        Self::default()
    }

    /// The function table (from the stream) and the totals (values as the stream gave them).
    pub fn into_totals(self) -> (FunctionTable, RawTotals) {
        let raw = match self.taken {
            Some(raw) => raw,
            None => RawTotals::of_stack_tree(&self.tree, &self.functions, &|v| v),
        };
        (self.functions, raw)
    }
}

impl EventSink for TotalsSink {
    fn begin(&mut self, trace: &TraceInfo<'_>) -> io::Result<()> {
        self.functions = trace.functions.clone();
        Ok(())
    }

    fn function(&mut self, id: FuncId, info: &FuncInfo) -> io::Result<()> {
        self.functions.insert(id, info.clone());
        Ok(())
    }

    fn thread(&mut self, _thread: &ThreadInfo<'_>) -> io::Result<()> {
        self.threads = self.threads.saturating_add(1);
        Ok(())
    }

    fn call_path(&mut self, p: &CallPath<'_>) -> io::Result<()> {
        if self.taken.is_some() {
            return Err(io::Error::other(
                "internal: a call path after the call trees of every thread",
            ));
        }
        self.paths = true;
        self.tree.add_call_path(p);
        Ok(())
    }

    /// Taken when they are all the input's threads' and their totals are those of their
    /// merged tree ([`RawTotals::of_call_trees`]).
    fn call_trees(&mut self, trees: &[&dyn CallTree]) -> io::Result<bool> {
        if self.paths || self.taken.is_some() || trees.len() != self.threads as usize {
            return Ok(false);
        }
        self.taken = RawTotals::of_call_trees(trees, &self.functions, &|v| v);
        Ok(self.taken.is_some())
    }

    fn finish(&mut self) -> io::Result<()> {
        Ok(())
    }
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DiffRow<'a> {
    /// The function's name.
    pub name: DiffName<'a>,
    /// In the first input.
    pub a: Totals,
    /// In the second input.
    pub b: Totals,
}

fn delta(a: u64, b: u64) -> i128 {
    i128::from(b) - i128::from(a)
}

/// The rows of a diff: every function of either input, in order (see [`rows`]).
#[derive(Clone, Debug, Default)]
pub struct DiffRows<'a> {
    a: InputTotals<'a>,
    b: InputTotals<'a>,
    /// Per row, its entry in `a` and in `b` (`u32::MAX`: absent).
    order: Vec<(u32, u32)>,
}

impl<'a> DiffRows<'a> {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Whether there is no row.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Keeps the first `n` rows.
    pub fn truncate(&mut self, n: usize) {
        self.order.truncate(n);
    }

    fn row(&self, (ia, ib): (u32, u32)) -> DiffRow<'a> {
        let ea = self.a.entries.get(ia as usize);
        let eb = self.b.entries.get(ib as usize);
        let name = match (ea, eb) {
            (Some(&(k, _)), _) => self.a.name(k),
            (None, Some(&(k, _))) => self.b.name(k),
            (None, None) => DiffName::Named("?"),
        };
        DiffRow {
            name,
            a: ea.map(|e| e.1).unwrap_or_default(),
            b: eb.map(|e| e.1).unwrap_or_default(),
        }
    }

    /// The rows in order.
    pub fn iter(&self) -> impl Iterator<Item = DiffRow<'a>> + '_ {
        self.order.iter().map(|&o| self.row(o))
    }
}

/// The rows of every function of `a` or `b`, by absolute change of `key` (largest first), then
/// name.
pub fn rows<'a>(a: InputTotals<'a>, b: InputTotals<'a>, key: DiffKey) -> DiffRows<'a> {
    const NONE: u32 = u32::MAX;
    // Both are sorted by name: merge them, in name order.
    let mut order: Vec<(u32, u32)> = Vec::with_capacity(a.len().max(b.len()));
    let (mut i, mut j) = (0usize, 0usize);
    loop {
        let ord = match (a.entries.get(i), b.entries.get(j)) {
            (None, None) => break,
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (Some(x), Some(y)) => a.cmp_names(&b, x.0, y.0),
        };
        match ord {
            std::cmp::Ordering::Less => {
                order.push((i as u32, NONE));
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                order.push((NONE, j as u32));
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                order.push((i as u32, j as u32));
                i += 1;
                j += 1;
            }
        }
    }
    let mut rows = DiffRows { a, b, order };
    // Stable: rows of one change stay in name order.
    let change = |rows: &DiffRows<'_>, o: (u32, u32)| {
        let r = rows.row(o);
        delta(key.of(&r.a), key.of(&r.b)).unsigned_abs()
    };
    let mut order = std::mem::take(&mut rows.order);
    order.sort_by_key(|&o| std::cmp::Reverse(change(&rows, o)));
    rows.order = order;
    rows
}

/// Everything a diff report needs.
pub struct DiffReport<'a> {
    /// The first input's name.
    pub a: &'a str,
    /// The second input's name.
    pub b: &'a str,
    /// Rows, sorted and cut.
    pub rows: &'a DiffRows<'a>,
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
    for row in r.rows.iter() {
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
    for row in r.rows.iter() {
        writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{}",
            row.name.with_str(csv_field),
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
            row.name.with_str(quoted),
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

    fn listed(t: &InputTotals<'_>) -> Vec<(String, Totals)> {
        t.entries
            .iter()
            .map(|&(k, v)| (t.name(k).to_string(), v))
            .collect()
    }

    /// Ids 1..=6: two of one name, a table name that is another id's `#ID`, two unnamed.
    fn profile_names() -> FunctionTable {
        let mut t = FunctionTable::new();
        for (id, n) in [(1, "main"), (2, "work"), (3, "work"), (4, "#5")] {
            let info = FuncInfo {
                name: Some(n.to_string()),
                ..FuncInfo::default()
            };
            t.insert(FuncId(id), info);
        }
        t
    }

    /// A profiling-mode file of `threads`, each a list of (path, calls, time).
    fn profile_bytes(threads: &[Vec<(Vec<u32>, u64, u64)>]) -> Vec<u8> {
        use profkit_xray::profile::write::{PathRecord, ProfileWriter};
        let mut w = ProfileWriter::new(&profkit_xray::profile::ProfileHeader::default());
        for (tid, records) in threads.iter().enumerate() {
            let records: Vec<PathRecord> = records
                .iter()
                .map(|(p, c, t)| PathRecord::new(p, *c, *t))
                .collect();
            w.block(tid as u64 + 1, &records).unwrap();
        }
        w.finish()
    }

    /// The totals by the definition: per path with calls, its calls and self time to its last
    /// function, its self time once to every function on it.
    fn by_definition(sink: &profkit_model::stack::StackSink) -> Vec<(String, Totals)> {
        let mut m: std::collections::BTreeMap<String, Totals> = Default::default();
        for p in sink.tree().paths() {
            let names: Vec<String> = p
                .path
                .iter()
                .map(|&f| sink.functions.name(f).to_string())
                .collect();
            let mut seen = std::collections::BTreeSet::new();
            for n in &names {
                if seen.insert(n.clone()) {
                    let t = m.entry(n.clone()).or_default();
                    t.total += p.exclusive;
                }
            }
            let t = m.entry(names.last().unwrap().clone()).or_default();
            t.calls += p.count;
            t.self_ += p.exclusive;
        }
        m.into_iter().collect()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]
        /// A profile's totals made from its own call tree (TotalsSink) are those made from the
        /// StackTree of its paths, and those of the definition, whether its threads' trees
        /// are taken or (a path without calls but with time) its paths go to a StackTree.
        #[test]
        fn totals_of_the_profile_tree_are_those_of_the_stack_tree(
            threads in proptest::collection::vec(
                proptest::collection::vec(
                    (proptest::collection::vec(1..7u32, 1..7), 0..3u64, 0..1000u64),
                    1..12),
                1..3),
        ) {
            use profkit_model::clock::Clock;
            use profkit_model::feed::xray_profile;
            use profkit_model::stack::StackSink;
            let bytes = profile_bytes(&threads);
            let profile = profkit_xray::profile::Profile::parse(&bytes).unwrap();
            let functions = profile_names();
            let mut tree_sink = StackSink::new();
            xray_profile::feed(&profile, &functions, Clock::new(0), "t", &mut tree_sink).unwrap();
            let mut totals_sink = TotalsSink::new();
            xray_profile::feed(&profile, &functions, Clock::new(0), "t", &mut totals_sink).unwrap();
            let names_a = std::mem::take(&mut tree_sink.functions);
            let old = totals(tree_sink.tree(), &names_a, &|v| v);
            let (names_b, raw) = totals_sink.into_totals();
            proptest::prop_assert_eq!(raw.has_calls(), !tree_sink.tree().is_empty());
            let new = raw.resolve(&names_b);
            proptest::prop_assert_eq!(listed(&old), listed(&new));
            tree_sink.functions = names_a;
            // A row for every function on a path with calls, in byte order of names.
            proptest::prop_assert_eq!(listed(&new), by_definition(&tree_sink));
        }
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
            t.get("fib").unwrap(),
            Totals {
                calls: 2,
                self_: 5,
                total: 5
            }
        );
        assert_eq!(
            t.get("main").unwrap(),
            Totals {
                calls: 1,
                self_: 1,
                total: 6
            }
        );
    }

    /// Two functions of one name count once per stack; a table name `#7` and the unnamed id 7
    /// are one function; names without a table entry are `#ID`.
    #[test]
    fn one_name_is_one_function() {
        let mut n = names(&["main", "main"]);
        n.insert(
            FuncId(8),
            FuncInfo {
                name: Some("#7".to_string()),
                ..FuncInfo::default()
            },
        );
        let mut tree = StackTree::new();
        tree.add_sample(&[FuncId(0), FuncId(1), FuncId(7)], 4);
        tree.add_sample(&[FuncId(0), FuncId(8)], 2);
        tree.add_sample(&[FuncId(0), FuncId(9)], 1);
        let t = totals(&tree, &n, &|v| v);
        assert_eq!(t.len(), 3);
        assert_eq!(
            t.get("main").unwrap(),
            Totals {
                calls: 0,
                self_: 0,
                total: 7
            }
        );
        assert_eq!(
            t.get("#7").unwrap(),
            Totals {
                calls: 2,
                self_: 6,
                total: 6
            }
        );
        assert_eq!(t.get("#9").unwrap().total, 1);
        let r = rows(t, InputTotals::default(), DiffKey::Total);
        let order: Vec<String> = r.iter().map(|r| r.name.to_string()).collect();
        assert_eq!(order, ["main", "#7", "#9"]);
    }

    #[test]
    fn rows_by_absolute_change() {
        let a = InputTotals::from_list(&[
            (
                "x",
                Totals {
                    calls: 1,
                    self_: 10,
                    total: 10,
                },
            ),
            (
                "y",
                Totals {
                    calls: 1,
                    self_: 50,
                    total: 50,
                },
            ),
        ]);
        let b = InputTotals::from_list(&[
            (
                "x",
                Totals {
                    calls: 1,
                    self_: 30,
                    total: 30,
                },
            ),
            (
                "z",
                Totals {
                    calls: 2,
                    self_: 5,
                    total: 5,
                },
            ),
        ]);
        let r = rows(a, b, DiffKey::SelfTime);
        let order: Vec<String> = r.iter().map(|r| r.name.to_string()).collect();
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
        let a = InputTotals::from_list(&[("f", t)]);
        let b = InputTotals::default();
        let r = rows(a, b, DiffKey::SelfTime);
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
