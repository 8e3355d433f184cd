//! JIT facts of a recording: per process, the jitdump marker mmaps and the anonymous
//! executable mappings (where JIT code lives), so the model can find each process's
//! `jit-<pid>.dump` and `/tmp/perf-<pid>.map`.
//!
//! A JIT that writes a jitdump mmaps the first page of `jit-<pid>.dump` executable; `perf
//! record` logs that as an MMAP/MMAP2 whose path is the dump's absolute path. perf accepts it
//! when the file name is `jit-<pid>.dump` and the pid is the mapping process's; samply accepts
//! any `jit-*.dump`. [`JitScan`] records every `jit-*.dump` path and says whether its pid
//! matches, so callers can apply either rule.

use std::collections::BTreeMap;

use crate::read::{jitdump_file_pid, Event, EventData, Mmap};

/// A jitdump marker mmap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JitMarker {
    /// The mapping process.
    pub pid: i32,
    /// The mapping thread.
    pub tid: i32,
    /// The dump's path as recorded.
    pub path: String,
    /// The pid in the file name (`jit-<pid>.dump`), when it is a number.
    pub file_pid: Option<u32>,
    /// Whether the file name's pid is the mapping process's (perf's rule; differs inside
    /// containers, where the name has the namespace pid).
    pub pid_matches: bool,
    /// When the marker was mapped (the record's time).
    pub time: Option<u64>,
}

/// The JIT facts of one process.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcessJit {
    /// Process id.
    pub pid: i32,
    /// Its last COMM name.
    pub comm: Option<String>,
    /// Jitdump marker mmaps, in time order.
    pub jitdumps: Vec<JitMarker>,
    /// Anonymous executable mappings (JIT code regions).
    pub anon_exec_mappings: u64,
    /// Their total size.
    pub anon_exec_bytes: u64,
}

impl ProcessJit {
    /// Where the process's perf map would be (`/tmp/perf-<pid>.map`, as perf and samply look).
    pub fn perf_map_path(&self) -> String {
        format!("/tmp/perf-{}.map", self.pid)
    }

    /// Whether the process has JIT code or a jitdump.
    pub fn has_jit(&self) -> bool {
        self.anon_exec_mappings > 0 || !self.jitdumps.is_empty()
    }
}

/// Whether `path`'s file name is `jit-*.dump` (samply's rule; perf also wants digits).
pub fn is_jitdump_marker(path: &[u8]) -> bool {
    let name = path.rsplit(|&c| c == b'/').next().unwrap_or_default();
    name.starts_with(b"jit-") && name.ends_with(b".dump") && name.len() > 9
}

/// Collects JIT facts from events as they go by (feed it every event of a walk).
#[derive(Clone, Debug, Default)]
pub struct JitScan {
    procs: BTreeMap<i32, ProcessJit>,
}

impl JitScan {
    /// A scan with nothing seen.
    pub fn new() -> JitScan {
        JitScan::default()
    }

    fn proc(&mut self, pid: i32) -> &mut ProcessJit {
        self.procs.entry(pid).or_insert_with(|| ProcessJit {
            pid,
            ..ProcessJit::default()
        })
    }

    /// Looks at one event (MMAP/MMAP2 and COMM matter).
    pub fn observe(&mut self, ev: &Event<'_>) {
        match &ev.data {
            EventData::Mmap(m) => self.mmap(m, ev.time),
            EventData::Comm(c) if c.pid == c.tid || c.exec => {
                self.proc(c.pid).comm = Some(String::from_utf8_lossy(c.name).into_owned());
            }
            _ => {}
        }
    }

    fn mmap(&mut self, m: &Mmap<'_>, time: Option<u64>) {
        if m.is_kernel() {
            return;
        }
        if is_jitdump_marker(m.path) {
            let file_pid = jitdump_file_pid(m.path);
            let marker = JitMarker {
                pid: m.pid,
                tid: m.tid,
                path: String::from_utf8_lossy(m.path).into_owned(),
                file_pid,
                pid_matches: file_pid.is_some_and(|p| i64::from(p) == i64::from(m.pid)),
                time,
            };
            self.proc(m.pid).jitdumps.push(marker);
        } else if m.executable && m.is_anonymous() {
            let p = self.proc(m.pid);
            p.anon_exec_mappings += 1;
            p.anon_exec_bytes = p.anon_exec_bytes.saturating_add(m.len);
        }
    }

    /// The processes with JIT code or a jitdump marker, by pid.
    pub fn processes(&self) -> Vec<ProcessJit> {
        self.procs
            .values()
            .filter(|p| p.has_jit())
            .cloned()
            .collect()
    }

    /// Every jitdump marker, in time order per process.
    pub fn markers(&self) -> impl Iterator<Item = &JitMarker> {
        self.procs.values().flat_map(|p| p.jitdumps.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers() {
        assert!(is_jitdump_marker(b"/tmp/x/jit-12.dump"));
        assert!(is_jitdump_marker(b"jit-abc.dump"));
        assert!(!is_jitdump_marker(b"/tmp/jit-.dump"));
        assert!(!is_jitdump_marker(b"/tmp/xjit-1.dump"));
        assert!(!is_jitdump_marker(b"/tmp/jit-1.dump/x"));
        let p = ProcessJit {
            pid: 7,
            ..ProcessJit::default()
        };
        assert_eq!(p.perf_map_path(), "/tmp/perf-7.map");
        assert!(!p.has_jit());
    }
}
