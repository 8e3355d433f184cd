//! The records of perf.data as profkit reads them: [`Event`] and its [`EventData`] (samples with
//! their callchains, registers and stacks; mmaps, comms, tasks, lost counts), borrowed from the
//! record's bytes. `events.rs` delivers them in time order; `sample.rs` decodes a sample's body.

use linux_perf_data::linux_perf_event_reader::CpuMode;

use crate::raw::{
    RecordType, MISC_CPUMODE_MASK, MISC_GUEST_KERNEL, MISC_KERNEL, PERF_CONTEXT_GUEST,
    PERF_CONTEXT_GUEST_KERNEL, PERF_CONTEXT_GUEST_USER, PERF_CONTEXT_HV, PERF_CONTEXT_KERNEL,
    PERF_CONTEXT_MAX, PERF_CONTEXT_USER,
};
use crate::read::bytes::{u64_at, Endian};
use crate::read::meta::BuildId;

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
}

impl<'a> Sample<'a> {
    /// Appends the sample to `out` as [`Sample::read_copy`] reads it back: every field but the
    /// user registers and stack (another thread names it from this copy; the record it
    /// borrows from is gone by then). Little-endian fields after a byte of flags.
    pub fn write_copy(&self, out: &mut Vec<u8>) {
        let options = [self.id, self.ip, self.time, self.period];
        let mut flags = 0u8;
        for (i, o) in options.iter().enumerate() {
            if o.is_some() {
                flags |= 1 << i;
            }
        }
        let bits = [
            (self.pid.is_some(), 4),
            (self.tid.is_some(), 5),
            (self.cpu.is_some(), 6),
            (self.callchain.is_some(), 7),
        ];
        for (set, bit) in bits {
            if set {
                flags |= 1 << bit;
            }
        }
        out.push(flags);
        out.push(cpu_mode_code(self.cpu_mode));
        let big = self.callchain.is_some_and(|c| c.endian == Endian::Big);
        out.push(u8::from(big));
        out.extend_from_slice(&(self.attr_index as u64).to_le_bytes());
        for o in options {
            out.extend_from_slice(&o.unwrap_or(0).to_le_bytes());
        }
        out.extend_from_slice(&self.pid.unwrap_or(0).to_le_bytes());
        out.extend_from_slice(&self.tid.unwrap_or(0).to_le_bytes());
        out.extend_from_slice(&self.cpu.unwrap_or(0).to_le_bytes());
        let chain = self.callchain.map_or(&[][..], |c| c.bytes);
        out.extend_from_slice(&(chain.len() as u64).to_le_bytes());
        out.extend_from_slice(chain);
    }

    /// A sample [`Sample::write_copy`] wrote at the start of `bytes`, and the bytes after it;
    /// `None` if they do not hold one.
    pub fn read_copy(bytes: &'a [u8]) -> Option<(Sample<'a>, &'a [u8])> {
        let (head, rest) = bytes.split_at_checked(COPY_HEAD)?;
        let (&[flags, mode, big], fields) = head.split_first_chunk::<3>()?;
        let le64 = |at: usize| -> Option<u64> {
            Some(u64::from_le_bytes(fields.get(at..at + 8)?.try_into().ok()?))
        };
        let le32 = |at: usize| -> Option<u32> {
            Some(u32::from_le_bytes(fields.get(at..at + 4)?.try_into().ok()?))
        };
        let has = |bit: u8| flags & (1 << bit) != 0;
        // Field `i` of the id, ip, time and period, if its flag says it is there.
        let option = |i: u8| -> Option<Option<u64>> {
            Some(if has(i) {
                Some(le64(8 + 8 * usize::from(i))?)
            } else {
                None
            })
        };
        let (id, ip, time, period) = (option(0)?, option(1)?, option(2)?, option(3)?);
        let pid = if has(4) { Some(le32(40)? as i32) } else { None };
        let tid = if has(5) { Some(le32(44)? as i32) } else { None };
        let cpu = if has(6) { Some(le32(48)?) } else { None };
        let len = usize::try_from(le64(52)?).ok()?;
        let (chain, rest) = rest.split_at_checked(len)?;
        let endian = if big == 1 {
            Endian::Big
        } else {
            Endian::Little
        };
        let sample = Sample {
            attr_index: usize::try_from(le64(0)?).ok()?,
            id,
            ip,
            pid,
            tid,
            time,
            cpu,
            period,
            cpu_mode: cpu_mode_of_code(mode),
            callchain: has(7).then(|| Callchain::new(chain, endian)),
            user_regs: None,
            user_stack: None,
        };
        Some((sample, rest))
    }
}

/// Bytes of a sample's copy before its callchain: flags, cpu mode and byte order, then the
/// attr index, id, ip, time and period (8 each), pid, tid and cpu (4 each), the chain's length
/// (8).
const COPY_HEAD: usize = 3 + 5 * 8 + 3 * 4 + 8;

fn cpu_mode_code(mode: CpuMode) -> u8 {
    match mode {
        CpuMode::Kernel => 1,
        CpuMode::User => 2,
        CpuMode::Hypervisor => 3,
        CpuMode::GuestKernel => 4,
        CpuMode::GuestUser => 5,
        _ => 0,
    }
}

fn cpu_mode_of_code(code: u8) -> CpuMode {
    match code {
        1 => CpuMode::Kernel,
        2 => CpuMode::User,
        3 => CpuMode::Hypervisor,
        4 => CpuMode::GuestKernel,
        5 => CpuMode::GuestUser,
        _ => CpuMode::Unknown,
    }
}

/// A sample's callchain: `u64` entries, context markers (`PERF_CONTEXT_KERNEL`,
/// `PERF_CONTEXT_USER`, …) followed by the frames of that context, innermost first.
#[derive(Clone, Copy, Debug)]
pub struct Callchain<'a> {
    /// The `nr` entries after the count, whole (the sample decoder checked they fit).
    pub(super) bytes: &'a [u8],
    pub(super) endian: Endian,
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
    /// The callchain whose entries (markers and addresses, `nr` of them after a SAMPLE's
    /// count) are `bytes`, in byte order `endian`; a partial last entry is not one.
    pub fn new(bytes: &'a [u8], endian: crate::read::bytes::Endian) -> Callchain<'a> {
        let whole = bytes.len() / 8 * 8;
        Callchain {
            bytes: bytes.get(..whole).unwrap_or_default(),
            endian,
        }
    }

    /// The entries' bytes as recorded (8 per entry, in the file's byte order): two chains'
    /// entries are equal where their bytes are.
    #[inline]
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The byte order of its entries.
    pub fn endian(&self) -> crate::read::bytes::Endian {
        self.endian
    }

    /// Raw entries, markers included.
    #[inline]
    pub fn len(&self) -> usize {
        self.bytes.len() / 8
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.bytes.len() < 8
    }

    /// Entry `i` (marker or address).
    #[inline]
    pub fn get(&self, i: usize) -> Option<u64> {
        u64_at(self.bytes, i.checked_mul(8)?, self.endian)
    }

    /// Every raw entry, markers included.
    #[inline]
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
    pub(super) endian: Endian,
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
    pub(super) len: u8,
    pub(super) bytes: [u8; 20],
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

/// Whether `misc` says kernel mode.
pub fn misc_is_kernel(misc: u16) -> bool {
    matches!(misc & MISC_CPUMODE_MASK, MISC_KERNEL | MISC_GUEST_KERNEL)
}
