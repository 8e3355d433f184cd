//! perf map output (`perf-<pid>.map`): one `START SIZE name` line per symbol, START and SIZE
//! in bare lowercase hex, sorted by address.
//!
//! The map means what every perf map profkit writes means (profkit-jitdump's
//! [`MapBuilder`]): a perf map has no timestamps, so it holds the code live at the end of the
//! trace, the last writer winning per address range.
//! * **code events** ([`EventSink::code`]): jitdump loads and moves, Mono JIT events, applied
//!   in stream order: a load removes every entry it overlaps (the JIT reused the memory), a
//!   move removes the entry at the old address and adds one at the new address. A jitdump
//!   converts to exactly the map of profkit-jitdump's `convert::jitdump_to_perf_map`.
//! * **the function table** ([`TraceInfo::functions`]): every function whose
//!   [`FuncInfo::address`](profkit_model::FuncInfo::address) is known (XRay instrumentation
//!   maps) and whose address no code event covered. Its size is unknown, so it is the distance
//!   to the next function's address in the table, or 1 for the last function (and never past
//!   the next entry). These entries belong to the first process the trace declares (pid 0 if
//!   none).
//!
//! Files: with one process (the usual case), every entry goes to the output. With several
//! processes, the output gets the first declared process's entries and every other process's
//! entries go to `perf-<pid>.map` in the output's directory; standard output gets every
//! process, one after the other. Names have newlines replaced by spaces.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::PathBuf;

use profkit_jitdump::perfmap::MapBuilder;
use profkit_model::events::{CallPath, CodeEvent, CodeRegion, EventSink, ProcessInfo, TraceInfo};

use crate::{Dest, Options, Output};

/// A writer into `output`.
pub fn sink(output: &Output, _options: &Options) -> io::Result<Box<dyn EventSink + Send>> {
    Ok(Box::new(PerfMapSink::new(output.clone())))
}

/// Collects code regions and writes perf map files at [`EventSink::finish`].
#[derive(Debug)]
pub struct PerfMapSink {
    output: Output,
    /// pid → its map (code events).
    code: BTreeMap<u32, MapBuilder>,
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

    /// The map of each pid: code events, then the function table where no code is.
    fn maps(&self) -> BTreeMap<u32, MapBuilder> {
        let mut all = self.code.clone();
        if !self.table.is_empty() {
            let pid = self.pids.first().copied().unwrap_or(0);
            let map = all.entry(pid).or_default();
            for (addr, size, name) in &self.table {
                map.add_if_free(*addr, *size, name.as_bytes());
            }
        }
        all
    }
}

impl EventSink for PerfMapSink {
    /// A perf map lists code: call-path totals add nothing to it (the function table does).
    fn call_path(&mut self, _path: &CallPath<'_>) -> io::Result<()> {
        Ok(())
    }

    fn begin(&mut self, trace: &TraceInfo<'_>) -> io::Result<()> {
        let mut with_addr: Vec<(u64, String)> = trace
            .functions
            .iter()
            .filter_map(|(id, f)| {
                let addr = f.address?;
                let name = f.name.clone().unwrap_or_else(|| format!("#{}", id.0));
                Some((addr, name))
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
        let name = code.name.as_bytes();
        match code.event {
            CodeEvent::Load => map.load(code.address, code.size, name),
            CodeEvent::Move { old_address } => {
                // The driver names a move after its load; an unnamed one keeps the old
                // entry's name (or adds nothing).
                let name = Some(name).filter(|n| !n.is_empty());
                map.move_code(old_address, code.address, code.size, name);
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        let all = self.maps();
        match self.output.dest() {
            Dest::Stdout => {
                let mut w = self.output.create()?;
                for map in all.values() {
                    map.write(&mut w)?;
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
                    map.write(&mut w)?;
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
                    map.write(&mut w)?;
                    w.flush()?;
                }
                Ok(())
            }
        }
    }
}
