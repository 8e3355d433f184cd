//! What a perf.data file says about itself: its attrs (one per event) and its feature sections,
//! taken from linux-perf-data's `PerfFile` into owned, plain values.

use linux_perf_data::linux_perf_event_reader::{
    AttrFlags, ClockId, PerfClock, PerfEventAttr, PerfEventType, SampleFormat, SamplingPolicy,
    SoftwareCounterType,
};
use linux_perf_data::{Feature, PerfFile};

use crate::error::Error;
use crate::raw::{MISC_BUILD_ID_SIZE, MISC_CPUMODE_MASK, MISC_GUEST_KERNEL, MISC_KERNEL};
use crate::read::bytes::{range, u16_at, u32_at, until_nul, Endian};
use crate::read::header::Header;

/// One event of the recording (`perf_event_attr` with its name and ids).
#[derive(Clone, Debug)]
pub struct Attr {
    /// Index in the file's attr list (samples refer to it).
    pub index: usize,
    /// Event name from EVENT_DESC (`cpu-clock:ppp`, `cycles:u` …), when the file has one.
    pub name: Option<String>,
    /// The sample ids that belong to this attr.
    pub ids: Vec<u64>,
    /// `sample_type` bits (known ones; see [`crate::raw::sample_type_names`]).
    pub sample_type: u64,
    /// `sample_regs_user`: which user registers each sample carries (`--call-graph dwarf`).
    pub sample_regs_user: u64,
    /// `sample_stack_user`: bytes of user stack each sample copies.
    pub sample_stack_user: u32,
    /// `use_clockid` (`perf record -k`).
    pub use_clockid: bool,
    /// `clockid` when `use_clockid` is set.
    pub clockid: Option<u32>,
    /// `sample_id_all`: non-sample records carry pid/tid/time/… too.
    pub sample_id_all: bool,
    /// `freq`: `sample_period_or_freq` is a frequency.
    pub freq: bool,
    /// The sampling period or frequency.
    pub sample_period_or_freq: u64,
    /// The event type as linux-perf-event-reader decodes it (`Software(CpuClock)` …).
    pub event_type: String,
    /// linux-perf-event-reader's decoded attr, for anything else.
    pub raw: PerfEventAttr,
}

impl Attr {
    pub(crate) fn from_lpd(index: usize, d: &linux_perf_data::AttributeDescription) -> Attr {
        let a = &d.attr;
        let clockid = match a.clock {
            PerfClock::ClockId(c) => Some(clockid_number(c)),
            _ => None,
        };
        let (freq, value) = match a.sampling_policy {
            SamplingPolicy::Frequency(f) => (true, f),
            SamplingPolicy::Period(p) => (false, p.get()),
            _ => (false, 0),
        };
        Attr {
            index,
            name: d.name.clone(),
            ids: d.event_ids.clone(),
            sample_type: a.sample_format.bits(),
            sample_regs_user: a.sample_regs_user,
            sample_stack_user: a.sample_stack_user,
            use_clockid: a.flags.contains(AttrFlags::USE_CLOCKID),
            clockid,
            sample_id_all: a.flags.contains(AttrFlags::SAMPLE_ID_ALL),
            freq,
            sample_period_or_freq: value,
            event_type: format!("{:?}", a.type_),
            raw: *a,
        }
    }

    /// Whether a sample's period is time in nanoseconds: the cpu-clock and task-clock events
    /// (any other event's period counts its occurrences).
    pub fn period_is_time(&self) -> bool {
        matches!(
            self.raw.type_,
            PerfEventType::Software(SoftwareCounterType::CpuClock | SoftwareCounterType::TaskClock)
        )
    }

    /// Whether `sample_type` has `bit` (a `PERF_SAMPLE_*` value).
    pub fn has(&self, bit: u64) -> bool {
        self.sample_type & bit != 0
    }

    /// Whether samples carry a time (`PERF_SAMPLE_TIME`).
    pub fn has_time(&self) -> bool {
        self.raw.sample_format.contains(SampleFormat::TIME)
    }

    /// Whether samples carry a callchain (`-g`).
    pub fn has_callchain(&self) -> bool {
        self.raw.sample_format.contains(SampleFormat::CALLCHAIN)
    }

    /// Whether samples carry user registers and a user stack copy (`--call-graph dwarf`).
    pub fn has_user_stack(&self) -> bool {
        self.raw
            .sample_format
            .contains(SampleFormat::REGS_USER | SampleFormat::STACK_USER)
    }

    /// The name for messages: the event name, or `attr #<index>`.
    pub fn display_name(&self) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| format!("attr #{}", self.index))
    }
}

/// The `clockid_t` number of linux-perf-event-reader's `ClockId`.
fn clockid_number(c: ClockId) -> u32 {
    match c {
        ClockId::Realtime => 0,
        ClockId::Monotonic => 1,
        ClockId::ProcessCputimeId => 2,
        ClockId::ThreadCputimeId => 3,
        ClockId::MonotonicRaw => 4,
        ClockId::RealtimeCoarse => 5,
        ClockId::MonotonicCoarse => 6,
        ClockId::Boottime => 7,
        ClockId::RealtimeAlarm => 8,
        ClockId::BoottimeAlarm => 9,
        _ => u32::MAX,
    }
}

/// One entry of the BUILD_ID feature (or a HEADER_BUILD_ID record in pipe mode).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildId {
    /// The pid perf recorded (-1 for the kernel and most DSOs).
    pub pid: i32,
    /// The record's `misc` (cpu mode: kernel or user).
    pub misc: u16,
    /// The build id bytes (usually 20).
    pub build_id: Vec<u8>,
    /// The file's path as recorded (`[kernel.kallsyms]`, `/usr/bin/node` …).
    pub path: String,
}

impl BuildId {
    /// Whether it is the kernel's or a kernel module's.
    pub fn is_kernel(&self) -> bool {
        matches!(
            self.misc & MISC_CPUMODE_MASK,
            MISC_KERNEL | MISC_GUEST_KERNEL
        )
    }

    /// The build id in lowercase hex.
    pub fn hex(&self) -> String {
        self.build_id.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Parses one `build_id_event` body (after its 8-byte header) of `size` bytes in all.
    pub(crate) fn parse_body(body: &[u8], misc: u16, e: Endian) -> Option<BuildId> {
        let pid = u32_at(body, 0, e)? as i32;
        let raw: [u8; 24] = crate::read::bytes::array(body, 4)?;
        let len = if misc & MISC_BUILD_ID_SIZE != 0 {
            usize::from(raw[20].min(20))
        } else {
            // Older perf: trailing 4-byte groups of zeros are not part of the id.
            let mut len = 20;
            while len >= 4
                && raw
                    .get(len - 4..len)
                    .is_some_and(|c| c.iter().all(|&b| b == 0))
            {
                len -= 4;
            }
            len
        };
        let path = until_nul(body.get(28..).unwrap_or_default());
        Some(BuildId {
            pid,
            misc,
            build_id: raw.get(..len).unwrap_or_default().to_vec(),
            path: String::from_utf8_lossy(path).into_owned(),
        })
    }
}

/// CLOCK_DATA: a reference point between the recording's clock and wall-clock time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockData {
    /// The clock sample times are on (`clockid_t`).
    pub clockid: u32,
    /// Wall-clock time, ns since the Unix epoch, at the reference instant.
    pub wall_clock_ns: u64,
    /// The recording clock's time at the same instant.
    pub clockid_time_ns: u64,
}

/// The feature sections profkit uses, decoded.
#[derive(Clone, Debug, Default)]
pub struct Features {
    /// Feature bits present (after dropping malformed sections), ascending.
    pub present: Vec<u32>,
    /// BUILD_ID entries, in file order (pipe mode: HEADER_BUILD_ID records are events).
    pub build_ids: Vec<BuildId>,
    /// CMDLINE: perf's argument vector.
    pub cmdline: Option<Vec<String>>,
    /// HOSTNAME.
    pub hostname: Option<String>,
    /// OSRELEASE.
    pub os_release: Option<String>,
    /// VERSION: perf's version.
    pub perf_version: Option<String>,
    /// ARCH.
    pub arch: Option<String>,
    /// CPUDESC.
    pub cpu_desc: Option<String>,
    /// NRCPUS: `(available, online)`.
    pub nr_cpus: Option<(u32, u32)>,
    /// TOTAL_MEM in kB.
    pub total_mem_kb: Option<u64>,
    /// CLOCKID: the resolution of the recording clock in ns (perf's "clockid frequency").
    pub clock_resolution: Option<u64>,
    /// CLOCK_DATA.
    pub clock_data: Option<ClockData>,
    /// SAMPLE_TIME: first and last sample time.
    pub sample_time: Option<(u64, u64)>,
    /// COMPRESSED: `(type, level)` (type 1 = zstd).
    pub compression: Option<(u32, u32)>,
    /// Feature sections that did not decode (a problem each).
    pub problems: Vec<String>,
}

impl Features {
    pub(crate) fn from_lpd(file: &PerfFile, e: Endian) -> Features {
        let mut f = Features {
            present: file.features().iter().map(|x| x.0).collect(),
            ..Features::default()
        };
        let problem = |what: &str, err: linux_perf_data::Error| format!("{what}: {err}");
        let mut problems = Vec::new();
        macro_rules! take {
            ($field:ident, $call:expr, $what:literal) => {
                match $call {
                    Ok(v) => f.$field = v,
                    Err(err) => problems.push(problem($what, err)),
                }
            };
        }
        take!(
            hostname,
            file.hostname().map(|o| o.map(str::to_string)),
            "HOSTNAME"
        );
        take!(
            os_release,
            file.os_release().map(|o| o.map(str::to_string)),
            "OSRELEASE"
        );
        take!(
            perf_version,
            file.perf_version().map(|o| o.map(str::to_string)),
            "VERSION"
        );
        take!(arch, file.arch().map(|o| o.map(str::to_string)), "ARCH");
        take!(
            cpu_desc,
            file.cpu_desc().map(|o| o.map(str::to_string)),
            "CPUDESC"
        );
        take!(
            nr_cpus,
            file.nr_cpus()
                .map(|o| o.map(|n| (n.nr_cpus_available, n.nr_cpus_online))),
            "NRCPUS"
        );
        take!(total_mem_kb, file.total_mem(), "TOTAL_MEM");
        take!(clock_resolution, file.clock_frequency(), "CLOCKID");
        take!(
            clock_data,
            file.clock_data().map(|o| o.map(|c| ClockData {
                clockid: c.clockid,
                wall_clock_ns: c.wall_clock_ns,
                clockid_time_ns: c.clockid_time_ns,
            })),
            "CLOCK_DATA"
        );
        take!(
            sample_time,
            file.sample_time_range()
                .map(|o| o.map(|t| (t.first_sample_time, t.last_sample_time))),
            "SAMPLE_TIME"
        );
        take!(
            compression,
            file.compression_info()
                .map(|o| o.map(|c| (c.type_, c.level))),
            "COMPRESSED"
        );
        // CMDLINE: linux-perf-data reserves a vector of the recorded count before checking
        // it; only let it parse a count the section can hold (4 bytes per string at least).
        if let Some(s) = file.feature_section_data(Feature::CMDLINE) {
            let n = u32_at(s, 0, e).unwrap_or(u32::MAX) as usize;
            if n <= s.len() / 4 {
                take!(
                    cmdline,
                    file.cmdline()
                        .map(|o| o.map(|v| v.into_iter().map(str::to_string).collect())),
                    "CMDLINE"
                );
            } else {
                problems.push(format!(
                    "CMDLINE: {n} strings cannot fit in {} bytes",
                    s.len()
                ));
            }
        }
        if let Some(s) = file.feature_section_data(Feature::BUILD_ID) {
            let (ids, problem) = parse_build_id_section(s, e);
            f.build_ids = ids;
            problems.extend(problem);
        }
        f.problems = problems;
        f
    }
}

/// The BUILD_ID feature: `build_id_event`s back to back, each with its own size. linux-perf-data
/// keys them by a canonical DSO name and drops the pid; profkit keeps every entry as recorded.
fn parse_build_id_section(s: &[u8], e: Endian) -> (Vec<BuildId>, Option<String>) {
    let mut out = Vec::new();
    let mut off = 0usize;
    while off < s.len() {
        let (Some(misc), Some(size)) = (u16_at(s, off + 4, e), u16_at(s, off + 6, e)) else {
            return (out, Some(format!("BUILD_ID: entry at +{off} is cut")));
        };
        let size = usize::from(size);
        let Some(body) = s.get(off + 8..off + size.max(8)).filter(|_| size >= 8 + 28) else {
            return (
                out,
                Some(format!("BUILD_ID: entry at +{off} has size {size}")),
            );
        };
        if let Some(b) = BuildId::parse_body(body, misc, e) {
            out.push(b);
        }
        off += size;
    }
    (out, None)
}

/// The metadata of a recording: header, attrs, features, and what was patched or dropped.
#[derive(Clone, Debug)]
pub struct Meta {
    /// The file header.
    pub header: Header,
    /// Attrs, in the file's order.
    pub attrs: Vec<Attr>,
    /// Decoded feature sections.
    pub features: Features,
    /// Non-fatal problems of the header and feature sections (what was dropped or patched).
    pub problems: Vec<Error>,
}

impl Meta {
    pub(crate) fn new(header: Header, file: &PerfFile, problems: Vec<Error>) -> Meta {
        let attrs = file
            .event_attributes()
            .iter()
            .enumerate()
            .map(|(i, d)| Attr::from_lpd(i, d))
            .collect();
        let features = Features::from_lpd(file, header.endian);
        Meta {
            header,
            attrs,
            features,
            problems,
        }
    }

    /// The clock sample times are on: the attrs' `clockid` when every attr uses one, else
    /// `None` (perf's own clock).
    pub fn clockid(&self) -> Option<u32> {
        let mut ids = self.attrs.iter().map(|a| a.clockid);
        let first = ids.next()??;
        ids.all(|c| c == Some(first)).then_some(first)
    }
}

/// `data[offset..offset + size]` of a section, for callers that have the file.
pub fn section_bytes(data: &[u8], s: crate::read::header::Section) -> Option<&[u8]> {
    range(data, s.offset, s.size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_id_entries() {
        let e = Endian::Little;
        let mut s = Vec::new();
        let mut entry = |pid: i32, misc: u16, id: &[u8], path: &str| {
            let mut body = pid.to_le_bytes().to_vec();
            let mut raw = [0u8; 24];
            raw[..id.len()].copy_from_slice(id);
            if misc & MISC_BUILD_ID_SIZE != 0 {
                raw[20] = id.len() as u8;
            }
            body.extend_from_slice(&raw);
            body.extend_from_slice(path.as_bytes());
            body.push(0);
            while !(body.len() + 8).is_multiple_of(8) {
                body.push(0);
            }
            s.extend_from_slice(&67u32.to_le_bytes());
            s.extend_from_slice(&misc.to_le_bytes());
            s.extend_from_slice(&((body.len() + 8) as u16).to_le_bytes());
            s.extend_from_slice(&body);
        };
        entry(-1, 1 | MISC_BUILD_ID_SIZE, &[0xab; 20], "[kernel.kallsyms]");
        entry(
            42,
            2,
            &[1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0],
            "/usr/bin/node",
        );
        let (ids, problem) = parse_build_id_section(&s, e);
        assert_eq!(problem, None);
        assert_eq!(ids.len(), 2);
        assert!(ids[0].is_kernel());
        assert_eq!(ids[0].build_id.len(), 20);
        assert_eq!(ids[0].path, "[kernel.kallsyms]");
        assert_eq!(ids[1].pid, 42);
        assert_eq!(ids[1].hex(), "0102030405060708");
        assert!(!ids[1].is_kernel());
        // Cut or hostile sizes stop the walk with a problem, never a panic.
        for cut in 0..s.len() {
            let _ = parse_build_id_section(&s[..cut], e);
        }
        let mut bad = s.clone();
        bad[6] = 3;
        bad[7] = 0;
        assert!(parse_build_id_section(&bad, e).1.is_some());
    }
}
