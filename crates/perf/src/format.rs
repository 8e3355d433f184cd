//! The face `profkit` sees ([`profkit_common::InputFormat`]): [`PERF`].

use std::io::Write;
use std::path::{Path, PathBuf};

use profkit_common::format::{
    dump_parsed, Context, DumpOptions, DumpResult, Dumped, Input, InputFormat, JitFiles, Outcome,
};
use profkit_common::summary::Value;
use profkit_common::{Summary, Validation};

use crate::read::PerfData;

/// perf.data, file or pipe mode, either byte order.
pub struct Perf;

/// perf.data.
pub static PERF: Perf = Perf;

impl InputFormat for Perf {
    fn name(&self) -> &'static str {
        "perf"
    }

    fn detect(&self, head: &[u8]) -> bool {
        matches!(head.get(..8), Some(b"PERFILE2" | b"2ELIFREP"))
    }

    /// The reader's summary, and where each JIT process's jitdump and perf map are when the
    /// caller says how to look ([`Context::jit`]).
    fn summary(&self, input: Input<'_>, cx: &Context<'_>) -> Outcome<Summary> {
        let data = PerfData::parse(input.bytes(self.name())?)?;
        let mut s = crate::summary(&data);
        if let Some(jit) = cx.jit {
            push_jit_metadata(&mut s, &data, jit);
        }
        Ok(s)
    }

    fn validate(&self, input: Input<'_>) -> Outcome<Validation> {
        Ok(crate::validate(input.bytes(self.name())?))
    }

    /// Every event in time order (`code`: with its stack).
    fn dump(&self, input: Input<'_>, o: &DumpOptions, out: &mut dyn Write) -> DumpResult {
        let opts = crate::dump::DumpOptions {
            json: o.json,
            stacks: o.code,
        };
        dump_parsed(PerfData::parse(input.bytes(self.name())?), |data| {
            let r = crate::dump::write(&data, opts, out)?;
            Ok(Dumped::ended(r.error, r.truncation))
        })
    }
}

/// The `jit metadata` detail: per process with JIT code, its jitdump and perf map as `jit`
/// finds them (or the paths it tried).
pub fn push_jit_metadata(s: &mut Summary, data: &PerfData<'_>, jit: &dyn JitFiles) {
    let Ok((processes, _)) = crate::jit_processes(data) else {
        return;
    };
    let tried = |t: &[PathBuf]| {
        t.iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut found = Vec::new();
    for p in processes {
        let Ok(pid) = u32::try_from(p.pid) else {
            continue;
        };
        let marker = p.jitdumps.first().map(|m| Path::new(&m.path));
        let mut line = format!("pid {pid}");
        if let Some(c) = &p.comm {
            line.push_str(&format!(" ({c})"));
        }
        match jit.jitdump(pid, marker) {
            Ok(p) => line.push_str(&format!(": jitdump {}", p.display())),
            Err(t) if t.is_empty() => line.push_str(": no jitdump"),
            Err(t) => line.push_str(&format!(": jitdump not found (tried {})", tried(&t))),
        }
        match jit.perf_map(pid) {
            Ok(p) => line.push_str(&format!(", perf map {}", p.display())),
            Err(t) => line.push_str(&format!(", no perf map (tried {})", tried(&t))),
        }
        found.push(Value::Str(line));
    }
    if !found.is_empty() {
        s.details.push(("jit metadata", Value::List(found)));
    }
}
