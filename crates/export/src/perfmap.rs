//! perf map output (`perf-<pid>.map`): one `START SIZE name` line per symbol, START and SIZE
//! in bare lowercase hex, written by profkit-jitdump's [`write_entry`] (the layout V8 and
//! perf's `jit-interface.txt` use).
//!
//! Sources, in order of preference for an address:
//! * **code events** ([`EventSink::code`]): jitdump loads and moves, Mono JIT events. A move
//!   removes the entry at the old address and adds one at the new address; a load at an
//!   address that already has an entry replaces it (the JIT reused the memory). The map is a
//!   snapshot of the code live at the end of the trace, like the JDK's `DumpPerfMapAtExit`: a
//!   perf map has no timestamps, so it cannot tell reused addresses apart anyway.
//! * **the function table** ([`TraceInfo::functions`]): every function whose
//!   [`FuncInfo::address`](profkit_model::FuncInfo::address) is known (XRay instrumentation
//!   maps) and whose address no code event covered. Its size is unknown, so it is the distance
//!   to the next function's address in the table, or 1 for the last function. These entries
//!   belong to the first process the trace declares (pid 0 if none).
//!
//! Files: with one process (the usual case), every entry goes to the output. With several
//! processes, the output gets the first declared process's entries and every other process's
//! entries go to `perf-<pid>.map` in the output's directory; standard output gets every
//! process, one after the other. Lines are sorted by address; names have newlines replaced by
//! spaces.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::PathBuf;

use profkit_jitdump::perfmap::write_entry;
use profkit_model::events::{CodeEvent, CodeRegion, EventSink, ProcessInfo, TraceInfo};

use crate::{Dest, Options, Output};

/// A writer into `output`.
pub fn sink(output: &Output, _options: &Options) -> io::Result<Box<dyn EventSink + Send>> {
    Ok(Box::new(PerfMapSink::new(output.clone())))
}

/// One perf map entry.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    size: u64,
    name: String,
}

/// Collects code regions and writes perf map files at [`EventSink::finish`].
#[derive(Debug)]
pub struct PerfMapSink {
    output: Output,
    /// pid → address → entry (code events).
    code: BTreeMap<u32, BTreeMap<u64, Entry>>,
    /// Pids in declaration order.
    pids: Vec<u32>,
    /// Function-table entries (address, size, name), sorted by address.
    table: Vec<(u64, u64, String)>,
}

impl PerfMapSink {
    /// A writer that writes into `output` when the trace ends.
    pub fn new(output: Output) -> Self {
        PerfMapSink {
            output,
            code: BTreeMap::new(),
            pids: Vec::new(),
            table: Vec::new(),
        }
    }

    /// The entries of each pid, merged from code events and the function table, sorted by
    /// address.
    fn entries(&self) -> BTreeMap<u32, BTreeMap<u64, Entry>> {
        let mut all = self.code.clone();
        if !self.table.is_empty() {
            let pid = self.pids.first().copied().unwrap_or(0);
            let map = all.entry(pid).or_default();
            for (addr, size, name) in &self.table {
                let covered = map
                    .range(..=*addr)
                    .next_back()
                    .is_some_and(|(start, e)| addr.wrapping_sub(*start) < e.size.max(1));
                if !covered {
                    map.insert(
                        *addr,
                        Entry {
                            size: *size,
                            name: name.clone(),
                        },
                    );
                }
            }
        }
        all
    }
}

fn clean_name(name: &str) -> String {
    name.replace(['\n', '\r'], " ")
}

fn write_map<W: Write>(w: &mut W, map: &BTreeMap<u64, Entry>) -> io::Result<()> {
    for (addr, e) in map {
        write_entry(w, *addr, e.size, e.name.as_bytes())?;
    }
    Ok(())
}

impl EventSink for PerfMapSink {
    fn begin(&mut self, trace: &TraceInfo<'_>) -> io::Result<()> {
        let mut with_addr: Vec<(u64, String)> = trace
            .functions
            .iter()
            .filter_map(|(id, f)| {
                let addr = f.address?;
                let name = f.name.clone().unwrap_or_else(|| format!("#{}", id.0));
                Some((addr, clean_name(&name)))
            })
            .collect();
        with_addr.sort();
        with_addr.dedup_by_key(|e| e.0);
        let nexts: Vec<Option<u64>> = with_addr
            .iter()
            .skip(1)
            .map(|e| Some(e.0))
            .chain(std::iter::once(None))
            .collect();
        self.table = with_addr
            .into_iter()
            .zip(nexts)
            .map(|((addr, name), next)| {
                let size = next.map_or(1, |n| n.saturating_sub(addr).max(1));
                (addr, size, name)
            })
            .collect();
        Ok(())
    }

    fn process(&mut self, process: &ProcessInfo<'_>) -> io::Result<()> {
        if !self.pids.contains(&process.pid) {
            self.pids.push(process.pid);
        }
        Ok(())
    }

    fn code(&mut self, code: &CodeRegion<'_>) -> io::Result<()> {
        if !self.pids.contains(&code.pid) {
            self.pids.push(code.pid);
        }
        let map = self.code.entry(code.pid).or_default();
        if let CodeEvent::Move { old_address } = code.event {
            map.remove(&old_address);
        }
        map.insert(
            code.address,
            Entry {
                size: code.size,
                name: clean_name(code.name),
            },
        );
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        let all = self.entries();
        match self.output.dest() {
            Dest::Stdout => {
                let mut w = self.output.create()?;
                for map in all.values() {
                    write_map(&mut w, map)?;
                }
                w.flush()
            }
            Dest::Path(path) => {
                let first = self
                    .pids
                    .first()
                    .copied()
                    .or_else(|| all.keys().next().copied());
                let mut w = self.output.create()?;
                if let Some(map) = first.and_then(|p| all.get(&p)) {
                    write_map(&mut w, map)?;
                }
                w.flush()?;
                let dir = path.parent().map(PathBuf::from).unwrap_or_default();
                for (pid, map) in &all {
                    if Some(*pid) == first {
                        continue;
                    }
                    let mut w = self
                        .output
                        .create_beside(&dir.join(format!("perf-{pid}.map")))?;
                    write_map(&mut w, map)?;
                    w.flush()?;
                }
                Ok(())
            }
        }
    }
}
