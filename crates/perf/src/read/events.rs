//! Events in time order: linux-perf-data's record iterator (FINISHED_ROUND sorting, zstd
//! blocks, pipe mode) over the checked input, each record decoded by linux-perf-event-reader
//! into a borrowed, typed [`Event`].
//!
//! [`Events::next_event`] is a lending iterator: an event borrows the reader's current record
//! buffer until the next call, so memory stays bounded by linux-perf-data's sorting window.
//! The records come from linux-perf-data's iterator on the walk's thread or, for
//! [`PerfData::with_events_read_ahead`](crate::PerfData::with_events_read_ahead), from the
//! batches a second thread reads ahead (`ahead.rs`); both deliver the same events and ends.
//! A callchain is read straight from the record's bytes (one pass over `u64` entries).
//! Bodies that do not decode become [`EventData::Malformed`] and the walk goes on; the walk
//! stops at a corrupt record (an `Err`, with its offset and file-order index) or at the cut
//! of a truncated file ([`Events::truncation`]).

use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use linux_perf_data::linux_perf_event_reader::{
    CpuMode, EventRecord, Mmap2FileId, RawEventRecord, Regs, SampleRecord,
};
use linux_perf_data::{PerfFile, PerfRecordIter};

use crate::error::{Error, Truncation};
use crate::raw::{
    RecordType, MISC_CPUMODE_MASK, MISC_GUEST_KERNEL, MISC_KERNEL, MISC_MMAP_BUILD_ID,
    MISC_MMAP_DATA, PERF_CONTEXT_GUEST, PERF_CONTEXT_GUEST_KERNEL, PERF_CONTEXT_GUEST_USER,
    PERF_CONTEXT_HV, PERF_CONTEXT_KERNEL, PERF_CONTEXT_MAX, PERF_CONTEXT_USER, PROT_EXEC,
};
use crate::read::ahead::{single, Ahead, Rec};
use crate::read::bytes::{u64_at, Endian};
use crate::read::frame::{FrameEnd, FrameLog};
use crate::read::meta::{Attr, BuildId};

/// One record, decoded.
#[derive(Debug, Clone)]
pub struct Event<'a> {
    /// Position in delivery (time) order, from 0.
    pub index: u64,
    /// The record type.
    pub record_type: RecordType,
    /// The record header's `misc`.
    pub misc: u16,
    /// The attr it belongs to (kernel records only).
    pub attr_index: Option<usize>,
    /// Its time, when the record carries one (samples with TIME; others with sample_id_all).
    pub time: Option<u64>,
    /// The decoded body.
    pub data: EventData<'a>,
    /// The body bytes (after the 8-byte record header).
    pub body: &'a [u8],
}

/// What a record says.
// A sample is large (linux-perf-event-reader's record is kept whole); boxing it would
// allocate per sample, and events are not stored.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum EventData<'a> {
    /// PERF_RECORD_SAMPLE.
    Sample(Sample<'a>),
    /// PERF_RECORD_MMAP or PERF_RECORD_MMAP2.
    Mmap(Mmap<'a>),
    /// PERF_RECORD_COMM.
    Comm(Comm<'a>),
    /// PERF_RECORD_FORK.
    Fork(Task),
    /// PERF_RECORD_EXIT.
    Exit(Task),
    /// PERF_RECORD_LOST or PERF_RECORD_LOST_SAMPLES.
    Lost(Lost),
    /// PERF_RECORD_HEADER_BUILD_ID (pipe mode writes build ids as records).
    BuildId(BuildId),
    /// Any other record (counted by kind; the body is in [`Event::body`]).
    Other,
    /// A record whose body does not decode: what is wrong.
    Malformed(String),
}

/// A sample, with every field its attr's `sample_type` asks for.
#[derive(Debug, Clone)]
pub struct Sample<'a> {
    /// The attr (event) it belongs to.
    pub attr_index: usize,
    /// `PERF_SAMPLE_ID` / `IDENTIFIER`.
    pub id: Option<u64>,
    /// `PERF_SAMPLE_IP`.
    pub ip: Option<u64>,
    /// `PERF_SAMPLE_TID`: process id.
    pub pid: Option<i32>,
    /// `PERF_SAMPLE_TID`: thread id.
    pub tid: Option<i32>,
    /// `PERF_SAMPLE_TIME`.
    pub time: Option<u64>,
    /// `PERF_SAMPLE_CPU`.
    pub cpu: Option<u32>,
    /// `PERF_SAMPLE_PERIOD`.
    pub period: Option<u64>,
    /// Where the sample was taken (from `misc`).
    pub cpu_mode: CpuMode,
    /// `PERF_SAMPLE_CALLCHAIN`: raw entries with `PERF_CONTEXT_*` markers.
    pub callchain: Option<Callchain<'a>>,
    /// `PERF_SAMPLE_REGS_USER`.
    pub user_regs: Option<UserRegs<'a>>,
    /// `PERF_SAMPLE_STACK_USER`.
    pub user_stack: Option<UserStack<'a>>,
    /// Everything linux-perf-event-reader decoded (addr, raw, intr regs, …).
    pub record: SampleRecord<'a>,
}

/// A sample's callchain: `u64` entries, context markers (`PERF_CONTEXT_KERNEL`,
/// `PERF_CONTEXT_USER`, …) followed by the frames of that context, innermost first.
#[derive(Clone, Copy, Debug)]
pub struct Callchain<'a> {
    /// The `nr` entries after the count, whole (the layout walk checked they fit).
    bytes: &'a [u8],
    endian: Endian,
}

/// Which part of the system a callchain frame is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Context {
    /// Before any marker (perf always writes one first; kept for odd producers).
    Unknown,
    /// `PERF_CONTEXT_HV`.
    Hypervisor,
    /// `PERF_CONTEXT_KERNEL`.
    Kernel,
    /// `PERF_CONTEXT_USER`.
    User,
    /// `PERF_CONTEXT_GUEST`.
    Guest,
    /// `PERF_CONTEXT_GUEST_KERNEL`.
    GuestKernel,
    /// `PERF_CONTEXT_GUEST_USER`.
    GuestUser,
}

impl Context {
    /// The context a marker entry opens, if `value` is one.
    pub fn of_marker(value: u64) -> Option<Context> {
        if value < PERF_CONTEXT_MAX {
            return None;
        }
        Some(match value {
            PERF_CONTEXT_HV => Context::Hypervisor,
            PERF_CONTEXT_KERNEL => Context::Kernel,
            PERF_CONTEXT_USER => Context::User,
            PERF_CONTEXT_GUEST => Context::Guest,
            PERF_CONTEXT_GUEST_KERNEL => Context::GuestKernel,
            PERF_CONTEXT_GUEST_USER => Context::GuestUser,
            _ => Context::Unknown,
        })
    }

    /// Whether frames of this context are kernel code.
    pub fn is_kernel(self) -> bool {
        matches!(
            self,
            Context::Kernel | Context::GuestKernel | Context::Hypervisor
        )
    }
}

/// One real frame of a callchain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    /// The address as recorded.
    pub addr: u64,
    /// The context it is in.
    pub context: Context,
    /// Whether it is the first frame of its context: the sampled pc (kernel context, or user
    /// context without kernel frames) or the user pc where the kernel was entered. Every other
    /// frame is a return address, to be looked up at `addr - 1`.
    pub first_in_context: bool,
}

impl Frame {
    /// The address to symbolize: `addr` for the first frame of a context, `addr - 1` for a
    /// return address (it points after the call).
    pub fn lookup_addr(&self) -> u64 {
        if self.first_in_context {
            self.addr
        } else {
            self.addr.saturating_sub(1)
        }
    }
}

/// Kernel and user frames of a callchain, innermost first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SplitChain {
    /// Kernel (and hypervisor) frames.
    pub kernel: Vec<u64>,
    /// User frames.
    pub user: Vec<u64>,
    /// Guest frames (guest kernel and guest user).
    pub guest: Vec<u64>,
}

impl<'a> Callchain<'a> {
    /// Raw entries, markers included.
    pub fn len(&self) -> usize {
        self.bytes.len() / 8
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.bytes.len() < 8
    }

    /// Entry `i` (marker or address).
    pub fn get(&self, i: usize) -> Option<u64> {
        u64_at(self.bytes, i.checked_mul(8)?, self.endian)
    }

    /// Every raw entry, markers included.
    pub fn raw(&self) -> impl Iterator<Item = u64> + 'a {
        let e = self.endian;
        self.bytes
            .chunks_exact(8)
            .filter_map(move |c| c.try_into().ok().map(|b| e.u64(b)))
    }

    /// The real frames, each with its context.
    pub fn frames(&self) -> Frames<'a> {
        Frames {
            entries: self.bytes.chunks_exact(8),
            endian: self.endian,
            context: Context::Unknown,
            first: true,
        }
    }

    /// Kernel, user and guest frames apart (allocates; see [`Callchain::frames`] for a walk).
    pub fn split(&self) -> SplitChain {
        let mut s = SplitChain::default();
        for f in self.frames() {
            match f.context {
                Context::Kernel | Context::Hypervisor => s.kernel.push(f.addr),
                Context::User | Context::Unknown => s.user.push(f.addr),
                Context::Guest | Context::GuestKernel | Context::GuestUser => s.guest.push(f.addr),
            }
        }
        s
    }

    /// User frames only.
    pub fn user_frames(&self) -> impl Iterator<Item = Frame> + 'a {
        self.frames()
            .filter(|f| matches!(f.context, Context::User | Context::Unknown))
    }

    /// Kernel frames only.
    pub fn kernel_frames(&self) -> impl Iterator<Item = Frame> + 'a {
        self.frames().filter(|f| f.context.is_kernel())
    }
}

/// The real frames of a callchain ([`Callchain::frames`]).
#[derive(Clone, Debug)]
pub struct Frames<'a> {
    entries: std::slice::ChunksExact<'a, u8>,
    endian: Endian,
    context: Context,
    first: bool,
}

impl Iterator for Frames<'_> {
    type Item = Frame;

    fn next(&mut self) -> Option<Frame> {
        loop {
            let v = self.endian.u64(self.entries.next()?.try_into().ok()?);
            if let Some(c) = Context::of_marker(v) {
                self.context = c;
                self.first = true;
                continue;
            }
            let f = Frame {
                addr: v,
                context: self.context,
                first_in_context: self.first,
            };
            self.first = false;
            return Some(f);
        }
    }
}

/// `PERF_SAMPLE_REGS_USER`: the user registers at the sample.
#[derive(Clone, Debug)]
pub struct UserRegs<'a> {
    /// `PERF_SAMPLE_REGS_ABI_*`: 1 = 32-bit, 2 = 64-bit (0 means no registers: kernel thread).
    pub abi: u64,
    /// The attr's `sample_regs_user`: which registers are present, lowest bit first.
    pub mask: u64,
    /// The register values in the file's byte order, one `u64` per set bit of `mask`.
    pub bytes: &'a [u8],
    endian: Endian,
}

impl UserRegs<'_> {
    /// Register number `reg` (`PERF_REG_X86_*`, `PERF_REG_ARM64_*` …), if the mask has it.
    pub fn get(&self, reg: u32) -> Option<u64> {
        if reg >= 64 || self.mask & (1u64 << reg) == 0 {
            return None;
        }
        let index = (self.mask & ((1u64 << reg) - 1)).count_ones() as usize;
        u64_at(self.bytes, index * 8, self.endian)
    }

    /// Every present register as `(number, value)`.
    pub fn iter(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        (0..64u32).filter_map(|r| self.get(r).map(|v| (r, v)))
    }
}

/// `PERF_SAMPLE_STACK_USER`: a copy of the user stack from the stack pointer up.
#[derive(Clone, Copy, Debug)]
pub struct UserStack<'a> {
    /// The copy (`sample_stack_user` bytes; only `dyn_size` of them are valid).
    pub bytes: &'a [u8],
    /// How many bytes the kernel actually copied.
    pub dyn_size: u64,
}

impl<'a> UserStack<'a> {
    /// The valid part of the copy.
    pub fn valid(&self) -> &'a [u8] {
        let n = usize::try_from(self.dyn_size)
            .unwrap_or(usize::MAX)
            .min(self.bytes.len());
        self.bytes.get(..n).unwrap_or_default()
    }
}

/// A build id carried by an MMAP2 record (`PERF_RECORD_MISC_MMAP_BUILD_ID`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MmapBuildId {
    len: u8,
    bytes: [u8; 20],
}

impl MmapBuildId {
    /// The id bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.bytes
            .get(..usize::from(self.len))
            .unwrap_or(&self.bytes)
    }
}

/// PERF_RECORD_MMAP / MMAP2: a mapping of a process (or the kernel).
#[derive(Clone, Debug)]
pub struct Mmap<'a> {
    /// Whether the record is MMAP2 (prot, flags, inode or build id).
    pub mmap2: bool,
    /// Process id (-1 for the kernel).
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// Start address.
    pub start: u64,
    /// Length in bytes.
    pub len: u64,
    /// File offset of `start`.
    pub pgoff: u64,
    /// The path as recorded (`//anon`, `[vdso]`, `/tmp/jit-123.dump` …).
    pub path: &'a [u8],
    /// The build id, when the record carries one.
    pub build_id: Option<MmapBuildId>,
    /// `(major, minor, inode, generation)`, when the record carries them.
    pub inode: Option<(u32, u32, u64, u64)>,
    /// MMAP2 `prot`.
    pub prot: Option<u32>,
    /// MMAP2 `flags`.
    pub flags: Option<u32>,
    /// Where the mapping lives (kernel, user …).
    pub cpu_mode: CpuMode,
    /// Whether the mapping is executable (`!PERF_RECORD_MISC_MMAP_DATA`, and PROT_EXEC in
    /// MMAP2's prot).
    pub executable: bool,
}

impl Mmap<'_> {
    /// Whether it is a kernel mapping (the kernel image, modules).
    pub fn is_kernel(&self) -> bool {
        matches!(self.cpu_mode, CpuMode::Kernel | CpuMode::GuestKernel) || self.pid == -1
    }

    /// Whether it maps anonymous memory (where JIT code lives): `//anon`, `/dev/zero`,
    /// `[anon:…]`, `/memfd:…` … — the project's one definition,
    /// [`profkit_common::anon::is_anonymous_memory`].
    pub fn is_anonymous(&self) -> bool {
        profkit_common::anon::is_anonymous_memory(self.path)
    }

    /// The pid in the file name when the path is a jitdump marker (`…/jit-<pid>.dump`).
    pub fn jitdump_pid(&self) -> Option<u32> {
        jitdump_file_pid(self.path)
    }

    /// One past the last address.
    pub fn end(&self) -> u64 {
        self.start.saturating_add(self.len)
    }
}

/// The pid of a `jit-<pid>.dump` file name at the end of `path` (perf's pattern).
pub fn jitdump_file_pid(path: &[u8]) -> Option<u32> {
    let name = path.rsplit(|&c| c == b'/').next()?;
    let digits = name.strip_prefix(b"jit-")?.strip_suffix(b".dump")?;
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// PERF_RECORD_COMM: a thread's name.
#[derive(Clone, Debug)]
pub struct Comm<'a> {
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// The name (at most 16 bytes in the kernel).
    pub name: &'a [u8],
    /// Whether the name changed because of an exec (`PERF_RECORD_MISC_COMM_EXEC`).
    pub exec: bool,
}

/// PERF_RECORD_FORK / EXIT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Task {
    /// Process id.
    pub pid: i32,
    /// Parent process id.
    pub ppid: i32,
    /// Thread id.
    pub tid: i32,
    /// Parent thread id.
    pub ptid: i32,
    /// The record's own time field.
    pub time: u64,
}

/// PERF_RECORD_LOST / LOST_SAMPLES.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lost {
    /// The event id (LOST only).
    pub id: Option<u64>,
    /// Lost records (LOST) or samples (LOST_SAMPLES).
    pub count: u64,
    /// Whether it is LOST_SAMPLES (samples dropped by the kernel, e.g. AUX or BPF filters).
    pub samples: bool,
}

/// Where a sample's variable parts are, walked the way linux-perf-event-reader 0.10 reads
/// them (including its PERF_SAMPLE_READ layout, see docs/perf.md).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SampleLayout {
    sample_type: u64,
    read_format: u64,
    branch_hw_index: bool,
    regs_user: u64,
}

/// What the layout walk found.
#[derive(Clone, Copy, Debug, Default)]
struct SampleExtra {
    /// `(abi, offset of the register values)` of REGS_USER.
    regs_user: Option<(u64, usize)>,
    /// `(offset, length)` of the callchain's entries.
    callchain: Option<(usize, usize)>,
}

const S_IP: u64 = 1 << 0;
const S_TID: u64 = 1 << 1;
const S_TIME: u64 = 1 << 2;
const S_ADDR: u64 = 1 << 3;
const S_READ: u64 = 1 << 4;
const S_CALLCHAIN: u64 = 1 << 5;
const S_ID: u64 = 1 << 6;
const S_CPU: u64 = 1 << 7;
const S_PERIOD: u64 = 1 << 8;
const S_STREAM_ID: u64 = 1 << 9;
const S_RAW: u64 = 1 << 10;
const S_BRANCH_STACK: u64 = 1 << 11;
const S_REGS_USER: u64 = 1 << 12;
const S_IDENTIFIER: u64 = 1 << 16;

impl SampleLayout {
    pub(crate) fn of(attr: &Attr) -> SampleLayout {
        SampleLayout {
            sample_type: attr.sample_type,
            read_format: attr.raw.read_format.bits(),
            branch_hw_index: attr.raw.branch_sample_format.bits() & (1 << 17) != 0,
            regs_user: attr.sample_regs_user,
        }
    }

    /// Checks what linux-perf-event-reader would compute without checking (the callchain's
    /// `nr * 8` overflows for a hostile `nr`) and finds REGS_USER's abi.
    fn walk(&self, body: &[u8], e: Endian) -> Result<SampleExtra, String> {
        let st = self.sample_type;
        let has = |b: u64| st & b != 0;
        let mut off = 0usize;
        for b in [
            S_IDENTIFIER,
            S_IP,
            S_TID,
            S_TIME,
            S_ADDR,
            S_ID,
            S_STREAM_ID,
            S_CPU,
            S_PERIOD,
        ] {
            if has(b) {
                off += 8;
            }
        }
        let mut done = SampleExtra::default();
        if has(S_READ) {
            let rf = self.read_format;
            let te = usize::from(rf & 1 != 0) * 8;
            let tr = usize::from(rf & 2 != 0) * 8;
            let id = usize::from(rf & 4 != 0) * 8;
            if rf & 8 != 0 {
                off += 8 + te + tr + id;
            } else {
                let Some(nr) = u64_at(body, off, e) else {
                    return Ok(done);
                };
                let Some(n) = usize::try_from(nr).ok().and_then(|n| n.checked_mul(8 + id)) else {
                    return Ok(done);
                };
                off = match off.checked_add(8 + te + tr).and_then(|o| o.checked_add(n)) {
                    Some(o) => o,
                    None => return Ok(done),
                };
            }
        }
        if has(S_CALLCHAIN) {
            let Some(nr) = u64_at(body, off, e) else {
                return Ok(done);
            };
            let rest = body.len().saturating_sub(off + 8);
            match usize::try_from(nr).ok().and_then(|n| n.checked_mul(8)) {
                Some(bytes) if bytes <= rest => {
                    done.callchain = Some((off + 8, bytes));
                    off += 8 + bytes;
                }
                _ => {
                    return Err(format!(
                        "callchain of {nr} entries does not fit in the {rest} bytes that follow"
                    ))
                }
            }
        }
        if has(S_RAW) {
            let Some(size) = crate::read::bytes::u32_at(body, off, e) else {
                return Ok(done);
            };
            off = off.saturating_add(4).saturating_add(size as usize);
        }
        if has(S_BRANCH_STACK) {
            let Some(nr) = u64_at(body, off, e) else {
                return Ok(done);
            };
            let n = usize::try_from(nr)
                .ok()
                .and_then(|n| n.checked_mul(24))
                .unwrap_or(usize::MAX);
            off = off
                .saturating_add(8 + usize::from(self.branch_hw_index) * 8)
                .saturating_add(n);
        }
        if has(S_REGS_USER) {
            if let Some(abi) = u64_at(body, off, e) {
                done.regs_user = Some((abi, off + 8));
            }
        }
        Ok(done)
    }
}

/// Decodes a kernel record.
fn decode<'a>(
    rec: &RawEventRecord<'a>,
    attr_index: usize,
    layout: Option<&SampleLayout>,
    e: Endian,
) -> EventData<'a> {
    let ty = RecordType(rec.record_type.0);
    let body = single(rec.data);
    let malformed = |err: std::io::Error| {
        EventData::Malformed(format!(
            "{ty} body of {} bytes does not hold its fields ({err})",
            body.len()
        ))
    };
    if ty == RecordType::SAMPLE {
        let extra = match layout.map(|l| l.walk(body, e)) {
            Some(Ok(x)) => x,
            Some(Err(m)) => return EventData::Malformed(format!("SAMPLE: {m}")),
            None => SampleExtra::default(),
        };
        return match rec.parse() {
            Ok(EventRecord::Sample(s)) => {
                EventData::Sample(Sample::new(s, extra, body, attr_index, layout, e))
            }
            Ok(_) => EventData::Other,
            Err(err) => malformed(err),
        };
    }
    if ty == RecordType::MMAP2 && rec.misc & MISC_MMAP_BUILD_ID != 0 {
        // linux-perf-event-reader asserts this (a panic on input).
        if let Some(&n) = body.get(32) {
            if n > 20 {
                return EventData::Malformed(format!("MMAP2 build id length {n} is over 20"));
            }
        }
    }
    if ty == RecordType::LOST_SAMPLES {
        return match u64_at(body, 0, e) {
            Some(count) => EventData::Lost(Lost {
                id: None,
                count,
                samples: true,
            }),
            None => EventData::Malformed(format!(
                "LOST_SAMPLES body of {} bytes has no count",
                body.len()
            )),
        };
    }
    match rec.parse() {
        Ok(EventRecord::Mmap(m)) => EventData::Mmap(Mmap {
            mmap2: false,
            pid: m.pid,
            tid: m.tid,
            start: m.address,
            len: m.length,
            pgoff: m.page_offset,
            path: single(m.path),
            build_id: None,
            inode: None,
            prot: None,
            flags: None,
            cpu_mode: m.cpu_mode,
            executable: m.is_executable,
        }),
        Ok(EventRecord::Mmap2(m)) => {
            let (build_id, inode) = match &m.file_id {
                Mmap2FileId::BuildId(b) => {
                    let mut bytes = [0u8; 20];
                    let len = b.len().min(20);
                    if let (Some(d), Some(s)) = (bytes.get_mut(..len), b.get(..len)) {
                        d.copy_from_slice(s);
                    }
                    (
                        Some(MmapBuildId {
                            len: len as u8,
                            bytes,
                        }),
                        None,
                    )
                }
                Mmap2FileId::InodeAndVersion(i) => {
                    (None, Some((i.major, i.minor, i.inode, i.inode_generation)))
                }
            };
            EventData::Mmap(Mmap {
                mmap2: true,
                pid: m.pid,
                tid: m.tid,
                start: m.address,
                len: m.length,
                pgoff: m.page_offset,
                path: single(m.path),
                build_id,
                inode,
                prot: Some(m.protection),
                flags: Some(m.flags),
                cpu_mode: m.cpu_mode,
                executable: rec.misc & MISC_MMAP_DATA == 0 && m.protection & PROT_EXEC != 0,
            })
        }
        Ok(EventRecord::Comm(c)) => EventData::Comm(Comm {
            pid: c.pid,
            tid: c.tid,
            name: single(c.name),
            exec: c.is_execve,
        }),
        Ok(EventRecord::Fork(f)) => EventData::Fork(Task {
            pid: f.pid,
            ppid: f.ppid,
            tid: f.tid,
            ptid: f.ptid,
            time: f.timestamp,
        }),
        Ok(EventRecord::Exit(f)) => EventData::Exit(Task {
            pid: f.pid,
            ppid: f.ppid,
            tid: f.tid,
            ptid: f.ptid,
            time: f.timestamp,
        }),
        Ok(EventRecord::Lost(l)) => EventData::Lost(Lost {
            id: Some(l.id),
            count: l.count,
            samples: false,
        }),
        Ok(_) => EventData::Other,
        Err(err) => malformed(err),
    }
}

impl<'a> Sample<'a> {
    fn new(
        s: SampleRecord<'a>,
        extra: SampleExtra,
        body: &'a [u8],
        attr_index: usize,
        layout: Option<&SampleLayout>,
        e: Endian,
    ) -> Sample<'a> {
        let mask = layout.map_or(0, |l| l.regs_user);
        let user_regs = match (s.user_regs.as_ref(), extra.regs_user) {
            (Some(_), Some((abi, off))) => {
                let n = mask.count_ones() as usize * 8;
                body.get(off..off.saturating_add(n)).map(|bytes| UserRegs {
                    abi,
                    mask,
                    bytes,
                    endian: e,
                })
            }
            _ => None,
        };
        Sample {
            attr_index,
            id: s.id,
            ip: s.ip,
            pid: s.pid,
            tid: s.tid,
            time: s.timestamp,
            cpu: s.cpu,
            period: s.period,
            cpu_mode: s.cpu_mode,
            callchain: extra
                .callchain
                .filter(|_| s.callchain.is_some())
                .and_then(|(off, len)| body.get(off..off.checked_add(len)?))
                .map(|bytes| Callchain { bytes, endian: e }),
            user_regs,
            user_stack: s.user_stack.map(|(d, dyn_size)| UserStack {
                bytes: single(d),
                dyn_size,
            }),
            record: s,
        }
    }

    /// linux-perf-event-reader's register accessor for the user registers.
    pub fn regs(&self) -> Option<&Regs<'a>> {
        self.record.user_regs.as_ref()
    }

    /// Whether the sample was taken in kernel mode.
    pub fn in_kernel(&self) -> bool {
        matches!(self.cpu_mode, CpuMode::Kernel | CpuMode::GuestKernel)
    }
}

/// How a walk over the events ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Events delivered.
    pub events: u64,
    /// Where the input is cut (every complete record before it was delivered).
    pub truncation: Option<Truncation>,
    /// The corrupt record (or reader error) that stopped the walk.
    pub error: Option<Error>,
}

/// The time-ordered events of a recording ([`crate::PerfData::events`],
/// [`crate::PerfStream::events`]).
pub struct Events<S: Read> {
    source: Source<S>,
    endian: Endian,
    layouts: Vec<SampleLayout>,
    log: Arc<Mutex<FrameLog>>,
    /// How far into the file the reader has read (file mode).
    progress: Option<Arc<AtomicU64>>,
    index: u64,
    done: bool,
    error: Option<Error>,
}

/// Where [`Events`] takes its records from.
pub(crate) enum Source<S: Read> {
    /// linux-perf-data's iterator, on the walk's thread.
    Here(Box<PerfRecordIter<S>>, Box<PerfFile>),
    /// The batches of a read-ahead thread.
    Ahead(Ahead),
}

impl<S: Read> Events<S> {
    pub(crate) fn new(
        source: Source<S>,
        endian: Endian,
        attrs: &[Attr],
        log: Arc<Mutex<FrameLog>>,
        progress: Option<Arc<AtomicU64>>,
    ) -> Events<S> {
        Events {
            source,
            endian,
            layouts: attrs.iter().map(SampleLayout::of).collect(),
            log,
            progress,
            index: 0,
            done: false,
            error: None,
        }
    }

    /// The next event in time order; `None` at the end. An `Err` (a corrupt record, a zstd
    /// block that does not inflate, an I/O error) is the last item.
    pub fn next_event(&mut self) -> Option<Result<Event<'_>, Error>> {
        let Events {
            source,
            endian,
            layouts,
            log,
            index,
            done,
            error,
            ..
        } = self;
        if *done {
            return None;
        }
        let i = *index;
        let record = match source {
            Source::Here(iter, file) => iter.next_record(file).map(|r| r.map(Rec::of)),
            Source::Ahead(ahead) => ahead.next_record(),
        };
        match record {
            Ok(Some(Rec::Event { attr_index, record })) => {
                *index += 1;
                let ty = RecordType(record.record_type.0);
                let data = decode(&record, attr_index, layouts.get(attr_index), *endian);
                let time = match &data {
                    EventData::Sample(s) => s.time,
                    _ => record.timestamp(),
                };
                Some(Ok(Event {
                    index: i,
                    record_type: ty,
                    misc: record.misc,
                    attr_index: Some(attr_index),
                    time,
                    body: single(record.data),
                    data,
                }))
            }
            Ok(Some(Rec::User {
                record_type: ty,
                misc,
                body,
            })) => {
                *index += 1;
                let data = if ty == RecordType::HEADER_BUILD_ID {
                    match BuildId::parse_body(body, misc, *endian) {
                        Some(b) => EventData::BuildId(b),
                        None => EventData::Malformed(format!(
                            "HEADER_BUILD_ID body of {} bytes is too short",
                            body.len()
                        )),
                    }
                } else {
                    EventData::Other
                };
                Some(Ok(Event {
                    index: i,
                    record_type: ty,
                    misc,
                    attr_index: None,
                    time: None,
                    body,
                    data,
                }))
            }
            Ok(None) => {
                *done = true;
                let end = log.lock().map(|l| l.end.clone()).unwrap_or_default();
                match end {
                    FrameEnd::Corrupt(err) => {
                        *error = Some(err.clone());
                        Some(Err(err))
                    }
                    _ => None,
                }
            }
            Err(err) => {
                *done = true;
                let err = Error::unlocated(
                    crate::error::ErrorKind::Malformed,
                    Some(i),
                    format!("linux-perf-data: {err}"),
                );
                *error = Some(err.clone());
                Some(Err(err))
            }
        }
    }

    /// For a file in memory: the offset below which the reader has read every record (those
    /// not yet delivered are held in its buffers), so the bytes before it are not read again.
    /// `None` for streams.
    pub fn read_offset(&self) -> Option<u64> {
        self.progress.as_ref().map(|p| p.load(Ordering::Relaxed))
    }

    /// Where the input is cut, once the walk has reached it. Its record number is the one the
    /// cut record would have had among the events delivered (as `dump` numbers them: a pipe's
    /// header records are not events), once they all were.
    pub fn truncation(&self) -> Option<Truncation> {
        match self.log.lock().map(|l| l.end.clone()) {
            Ok(FrameEnd::Truncated(t)) => Some(Truncation {
                record: Some(self.index),
                ..t
            }),
            _ => None,
        }
    }

    /// The error that stopped the walk, if one did.
    pub fn error(&self) -> Option<&Error> {
        self.error.as_ref()
    }

    /// Events delivered so far.
    pub fn delivered(&self) -> u64 {
        self.index
    }

    /// What the framing walk has seen so far: outer records per type in file order
    /// (FINISHED_ROUND and COMPRESSED blocks included, which are not delivered as events).
    pub fn frames(&self) -> FrameLog {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Walks the remaining events with `f`, then says how the walk ended.
    pub fn for_each(mut self, mut f: impl FnMut(&Event<'_>)) -> Outcome {
        while let Some(ev) = self.next_event() {
            match ev {
                Ok(ev) => f(&ev),
                Err(_) => break,
            }
        }
        self.outcome()
    }

    /// How the walk ended so far.
    pub fn outcome(&self) -> Outcome {
        Outcome {
            events: self.index,
            truncation: self.truncation(),
            error: self.error.clone(),
        }
    }
}

/// Whether `misc` says kernel mode.
pub fn misc_is_kernel(misc: u16) -> bool {
    matches!(misc & MISC_CPUMODE_MASK, MISC_KERNEL | MISC_GUEST_KERNEL)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(values: &[u64]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    fn frames_of(bytes: &[u8]) -> Vec<Frame> {
        let c = Callchain {
            bytes,
            endian: Endian::Little,
        };
        c.frames().collect()
    }

    #[test]
    fn callchain_split() {
        let b = chain(&[
            PERF_CONTEXT_KERNEL,
            0xffff_0001,
            0xffff_0002,
            PERF_CONTEXT_USER,
            0x1000,
            0x2000,
            0x3000,
        ]);
        let f = frames_of(&b);
        assert_eq!(f.len(), 5);
        assert_eq!(f[0].context, Context::Kernel);
        assert!(f[0].first_in_context);
        assert_eq!(f[0].lookup_addr(), 0xffff_0001);
        assert_eq!(f[1].lookup_addr(), 0xffff_0001);
        assert_eq!(f[2].context, Context::User);
        assert!(f[2].first_in_context);
        assert_eq!(f[2].lookup_addr(), 0x1000);
        assert_eq!(f[3].lookup_addr(), 0x1fff);
        let c = Callchain {
            bytes: &b,
            endian: Endian::Little,
        };
        let s = c.split();
        assert_eq!(s.kernel, [0xffff_0001, 0xffff_0002]);
        assert_eq!(s.user, [0x1000, 0x2000, 0x3000]);
        assert!(s.guest.is_empty());
        assert_eq!(c.raw().count(), 7);
        assert_eq!(c.user_frames().count(), 3);
        assert_eq!(c.kernel_frames().count(), 2);
    }

    #[test]
    fn callchain_edge_cases() {
        // User only, markers only, unknown marker, frames before any marker.
        let f = frames_of(&chain(&[PERF_CONTEXT_USER, 5, 6]));
        assert_eq!(f.iter().map(|f| f.addr).collect::<Vec<_>>(), [5, 6]);
        assert!(frames_of(&chain(&[PERF_CONTEXT_KERNEL, PERF_CONTEXT_USER])).is_empty());
        let f = frames_of(&chain(&[7, PERF_CONTEXT_MAX + 1, 8]));
        assert_eq!(f[0].context, Context::Unknown);
        assert_eq!(f[1].context, Context::Unknown);
        assert!(f[1].first_in_context);
        let f = frames_of(&chain(&[PERF_CONTEXT_GUEST_KERNEL, 1, PERF_CONTEXT_HV, 2]));
        assert_eq!(f[0].context, Context::GuestKernel);
        assert!(f[1].context.is_kernel());
        assert!(frames_of(&[]).is_empty());
        assert_eq!(
            frames_of(&[1, 2, 3]).len(),
            0,
            "a partial entry is not a frame"
        );
        assert_eq!(
            Frame {
                addr: 0,
                context: Context::User,
                first_in_context: false
            }
            .lookup_addr(),
            0
        );
    }

    #[test]
    fn jitdump_names() {
        assert_eq!(jitdump_file_pid(b"/tmp/x/jit-1234.dump"), Some(1234));
        assert_eq!(jitdump_file_pid(b"jit-7.dump"), Some(7));
        assert_eq!(jitdump_file_pid(b"/tmp/jit-.dump"), None);
        assert_eq!(jitdump_file_pid(b"/tmp/jit-12a.dump"), None);
        assert_eq!(jitdump_file_pid(b"/tmp/jit-12.dump.gz"), None);
        assert_eq!(jitdump_file_pid(b"/tmp/jit-99999999999.dump"), None);
    }

    #[test]
    fn user_regs_by_mask() {
        let bytes = chain(&[10, 20, 30]);
        let r = UserRegs {
            abi: 2,
            mask: (1 << 3) | (1 << 7) | (1 << 63),
            bytes: &bytes,
            endian: if cfg!(target_endian = "little") {
                Endian::Little
            } else {
                Endian::Big
            },
        };
        assert_eq!(r.get(3), Some(10));
        assert_eq!(r.get(7), Some(20));
        assert_eq!(r.get(63), Some(30));
        assert_eq!(r.get(4), None);
        assert_eq!(r.get(64), None);
        assert_eq!(r.iter().count(), 3);
        let s = UserStack {
            bytes: &bytes,
            dyn_size: 8,
        };
        assert_eq!(s.valid().len(), 8);
        let s = UserStack {
            bytes: &bytes,
            dyn_size: u64::MAX,
        };
        assert_eq!(s.valid().len(), 24);
    }

    #[test]
    fn hostile_callchain_is_malformed_not_a_panic() {
        let l = SampleLayout {
            sample_type: S_IP | S_CALLCHAIN,
            read_format: 0,
            branch_hw_index: false,
            regs_user: 0,
        };
        let mut body = 0x1234u64.to_le_bytes().to_vec();
        body.extend_from_slice(&(1u64 << 61).to_le_bytes());
        assert!(l.walk(&body, Endian::Little).is_err());
        body.truncate(8);
        body.extend_from_slice(&1u64.to_le_bytes());
        body.extend_from_slice(&7u64.to_le_bytes());
        assert!(l.walk(&body, Endian::Little).is_ok());
    }
}
