//! The kernel side of sampling: the `perf_event_attr` profkit records with, one event per CPU
//! following a process tree, and each event's mmap ring buffer read record by record.
//!
//! The syscall and the attr's layout come from `perf-event-open-sys2`; what is set, and the
//! ring's protocol (`data_head` read with acquire order, `data_tail` written with release
//! order after the records are copied out, records wrapping at the ring's end) are here.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

use perf_event_open_sys as sys;
use sys::bindings::{perf_event_attr, perf_event_mmap_page};

/// The attr size written to perf.data and given to the kernel: `PERF_ATTR_SIZE_VER7` (up to
/// `sig_data`). perf 6.1 refuses a file whose attrs are larger than its own struct (136 bytes
/// came with `config3` in 6.3).
pub const ATTR_SIZE: u32 = 128;

/// `PERF_SAMPLE_*` bits of profkit's samples.
pub mod sample {
    /// Instruction pointer.
    pub const IP: u64 = 1 << 0;
    /// Process and thread id.
    pub const TID: u64 = 1 << 1;
    /// Time (CLOCK_MONOTONIC, as jitdumps are timed).
    pub const TIME: u64 = 1 << 2;
    /// Call chain (frame pointers; with `-g dwarf` only the kernel part).
    pub const CALLCHAIN: u64 = 1 << 5;
    /// CPU.
    pub const CPU: u64 = 1 << 7;
    /// Period.
    pub const PERIOD: u64 = 1 << 8;
    /// User registers (`-g dwarf`).
    pub const REGS_USER: u64 = 1 << 12;
    /// A copy of the user stack (`-g dwarf`).
    pub const STACK_USER: u64 = 1 << 13;
}

/// x86-64 user registers for DWARF unwinding: perf's `PERF_REGS_MASK` (AX…R15 without the
/// segment registers DS, ES, FS, GS).
#[cfg(target_arch = "x86_64")]
pub const REGS_USER_MASK: u64 = 0xff_0fff;
/// aarch64: x0–x30, sp, pc.
#[cfg(target_arch = "aarch64")]
pub const REGS_USER_MASK: u64 = (1 << 33) - 1;
/// Other architectures: frame pointers only.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub const REGS_USER_MASK: u64 = 0;

/// What is sampled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// `cycles` (a hardware PMU).
    Cycles,
    /// `cpu-clock` (a timer: machines without a PMU, VMs).
    CpuClock,
}

impl Event {
    /// perf's name of the event.
    pub fn name(self) -> &'static str {
        match self {
            Event::Cycles => "cycles",
            Event::CpuClock => "cpu-clock",
        }
    }
}

/// How samples are taken.
#[derive(Clone, Copy, Debug)]
pub struct Sampling {
    /// The event.
    pub event: Event,
    /// Samples per second per CPU.
    pub frequency: u64,
    /// Bytes of user stack copied per sample (`-g dwarf`); `None`: frame-pointer call chains.
    pub stack_copy: Option<u32>,
    /// Whether kernel code is sampled (`perf_event_paranoid` and privileges allow it).
    pub kernel: bool,
}

/// The attr for `sampling`: disabled until the workload's exec (or until enabled), inherited
/// by every thread and child, with the side-band records a recording needs (MMAP2, COMM, FORK,
/// EXIT, context switches) and CLOCK_MONOTONIC times (`perf record -k 1`).
pub fn attr(sampling: &Sampling, enable_on_exec: bool) -> perf_event_attr {
    let mut a = perf_event_attr::default();
    a.size = ATTR_SIZE;
    match sampling.event {
        Event::Cycles => {
            a.type_ = sys::bindings::PERF_TYPE_HARDWARE;
            a.config = u64::from(sys::bindings::PERF_COUNT_HW_CPU_CYCLES);
        }
        Event::CpuClock => {
            a.type_ = sys::bindings::PERF_TYPE_SOFTWARE;
            a.config = u64::from(sys::bindings::PERF_COUNT_SW_CPU_CLOCK);
        }
    }
    a.__bindgen_anon_1.sample_freq = sampling.frequency;
    a.set_freq(1);
    a.sample_type =
        sample::IP | sample::TID | sample::TIME | sample::CALLCHAIN | sample::CPU | sample::PERIOD;
    if let Some(size) = sampling.stack_copy {
        a.sample_type |= sample::REGS_USER | sample::STACK_USER;
        a.sample_regs_user = REGS_USER_MASK;
        a.sample_stack_user = size;
        // user frames come from the stack copy (as `perf record --call-graph dwarf`)
        a.set_exclude_callchain_user(1);
    }
    a.set_disabled(1);
    a.set_enable_on_exec(u64::from(enable_on_exec));
    a.set_inherit(1);
    a.set_mmap(1);
    a.set_mmap2(1);
    a.set_comm(1);
    a.set_comm_exec(1);
    a.set_task(1);
    a.set_context_switch(1);
    a.set_sample_id_all(1);
    a.set_exclude_kernel(u64::from(!sampling.kernel));
    a.set_exclude_hv(1);
    a.set_use_clockid(1);
    a.clockid = libc::CLOCK_MONOTONIC;
    // wake the reader when a quarter of the ring is full (or at its poll timeout)
    a.set_watermark(1);
    a.__bindgen_anon_2.wakeup_watermark = RING_BYTES / 4;
    a
}

/// The attr's bytes as perf.data stores them (the first [`ATTR_SIZE`] bytes of the struct).
pub fn attr_bytes(a: &perf_event_attr) -> Vec<u8> {
    let len = std::mem::size_of::<perf_event_attr>().min(ATTR_SIZE as usize);
    // SAFETY: perf_event_attr is a plain C struct (integers, unions of integers, bitfield
    // bytes) of at least `len` bytes; every byte of it is initialised by `Default` (zeroed).
    let bytes =
        unsafe { std::slice::from_raw_parts((a as *const perf_event_attr).cast::<u8>(), len) };
    bytes.to_vec()
}

/// One opened event: its file descriptor, its id and its ring.
pub struct Counter {
    fd: OwnedFd,
    /// The id the kernel gave it (perf.data lists it with the attr).
    pub id: u64,
    /// The CPU it counts on.
    pub cpu: u32,
    ring: Ring,
}

/// Data pages of each ring: 128 pages (512 KiB), perf's default for privileged users.
const RING_PAGES: usize = 128;
const RING_BYTES: u32 = (RING_PAGES * 4096) as u32;

/// Opens `attr` for `pid` (and its descendants) on `cpu` with its ring.
pub fn open(attr: &perf_event_attr, pid: i32, cpu: u32) -> io::Result<Counter> {
    let mut a = *attr;
    let cpu_arg = i32::try_from(cpu).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: `a` is a valid attr of `a.size` bytes; the syscall only reads it (and may write
    // the size it expects back into it on E2BIG).
    let fd = unsafe {
        sys::perf_event_open(
            &mut a,
            pid,
            cpu_arg,
            -1,
            u64::from(sys::bindings::PERF_FLAG_FD_CLOEXEC) as libc::c_ulong,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new descriptor this process owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut id = 0u64;
    // SAFETY: ID writes one u64 through the pointer.
    if unsafe { sys::ioctls::ID(fd.as_raw_fd(), &mut id) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let ring = Ring::map(&fd, RING_PAGES)?;
    Ok(Counter { fd, id, cpu, ring })
}

impl Counter {
    /// Enables counting (for an attached process; a workload's events enable on its exec).
    pub fn enable(&self) -> io::Result<()> {
        // SAFETY: ENABLE takes no pointer.
        if unsafe { sys::ioctls::ENABLE(self.fd.as_raw_fd(), 0) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Stops counting (the ring keeps what it has).
    pub fn disable(&self) {
        // SAFETY: DISABLE takes no pointer. A failure leaves the event counting until closed.
        unsafe { sys::ioctls::DISABLE(self.fd.as_raw_fd(), 0) };
    }

    /// The descriptor, for poll.
    pub fn raw_fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    /// Hands every complete record in the ring to `f` (header included, contiguous even when
    /// it wrapped), then frees their space. Returns the number of bytes read.
    pub fn drain(&mut self, f: &mut dyn FnMut(&[u8])) -> u64 {
        self.ring.drain(f)
    }
}

/// A mapped ring: one metadata page, then `2^n` data pages.
struct Ring {
    base: *mut u8,
    len: usize,
    data_offset: usize,
    data_size: usize,
    scratch: Vec<u8>,
}

// SAFETY: the mapping belongs to this Ring alone; the kernel writes it concurrently only
// through the protocol `drain` follows.
unsafe impl Send for Ring {}

impl Ring {
    fn map(fd: &OwnedFd, pages: usize) -> io::Result<Ring> {
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
            .ok()
            .filter(|p| *p > 0)
            .unwrap_or(4096);
        let len = (pages + 1) * page;
        // SAFETY: a shared mapping of the event's ring, as perf_event_open(2) describes.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Ring {
            base: base.cast(),
            len,
            data_offset: page,
            data_size: pages * page,
            scratch: Vec::new(),
        })
    }

    fn meta(&self) -> *mut perf_event_mmap_page {
        self.base.cast()
    }

    fn drain(&mut self, f: &mut dyn FnMut(&[u8])) -> u64 {
        // SAFETY: data_head and data_tail are naturally aligned u64s in the mapped metadata
        // page; the kernel writes data_head, we write data_tail.
        let (head_ptr, tail_ptr) = unsafe {
            let m = self.meta();
            (
                &*(std::ptr::addr_of_mut!((*m).data_head) as *const AtomicU64),
                &*(std::ptr::addr_of_mut!((*m).data_tail) as *const AtomicU64),
            )
        };
        let head = head_ptr.load(Ordering::Acquire);
        let start = tail_ptr.load(Ordering::Relaxed);
        let mut tail = start;
        let size = self.data_size as u64;
        while head.saturating_sub(tail) >= 8 {
            let at = (tail % size) as usize;
            let mut header = [0u8; 8];
            self.copy_out(at, &mut header);
            let len = u64::from(u16::from_ne_bytes([header[6], header[7]]));
            if len < 8 || len > head - tail {
                // a record the kernel did not finish or a corrupt ring: drop what is left
                tail = head;
                break;
            }
            let mut buf = std::mem::take(&mut self.scratch);
            buf.resize(len as usize, 0);
            self.copy_out(at, &mut buf);
            f(&buf);
            self.scratch = buf;
            tail += len;
        }
        tail_ptr.store(tail, Ordering::Release);
        tail - start
    }

    /// Copies `out.len()` bytes of the data area from `at`, wrapping at its end.
    fn copy_out(&self, at: usize, out: &mut [u8]) {
        let first = out.len().min(self.data_size - at);
        // SAFETY: `at < data_size` and the two copies stay inside the data area
        // [data_offset, data_offset + data_size) of the mapping; `out.len() <= data_size`
        // (a record is at most 64 KiB and the ring 512 KiB).
        unsafe {
            let data = self.base.add(self.data_offset);
            std::ptr::copy_nonoverlapping(data.add(at), out.as_mut_ptr(), first);
            if first < out.len() {
                std::ptr::copy_nonoverlapping(data, out.as_mut_ptr().add(first), out.len() - first);
            }
        }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, unmapped once.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// The CPUs that are online (`/sys/devices/system/cpu/online`: `0-3,6`).
pub fn online_cpus() -> Vec<u32> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let mut ends = part.splitn(2, '-').map(|n| n.trim().parse::<u32>());
        match (ends.next(), ends.next()) {
            (Some(Ok(a)), Some(Ok(b))) if a <= b && b - a < 4096 => cpus.extend(a..=b),
            (Some(Ok(a)), None) => cpus.push(a),
            _ => {}
        }
    }
    if cpus.is_empty() {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        cpus.extend(0..u32::try_from(n).unwrap_or(1));
    }
    cpus
}

/// `/proc/sys/kernel/perf_event_paranoid` (2 when unreadable: the kernel's default).
pub fn paranoid() -> i32 {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(2)
}

/// A TSC reading, CLOCK_MONOTONIC (the samples' clock) and CLOCK_REALTIME at one instant, in
/// that order (ns): the best of a few tries (the one whose two TSC reads around the clocks
/// are closest). `None` off x86-64.
pub fn clock_readings() -> Option<(u64, u64, u64)> {
    #[cfg(target_arch = "x86_64")]
    {
        let ns = |ts: libc::timespec| {
            u64::try_from(ts.tv_sec)
                .ok()?
                .checked_mul(1_000_000_000)?
                .checked_add(u64::try_from(ts.tv_nsec).ok()?)
        };
        let mut best: Option<((u64, u64, u64), u64)> = None;
        for _ in 0..8 {
            let mut mono = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            let mut real = mono;
            // SAFETY: rdtsc has no preconditions on x86-64; clock_gettime writes the timespecs.
            let (before, ok, after) = unsafe {
                let before = core::arch::x86_64::_rdtsc();
                let ok = libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut mono) == 0
                    && libc::clock_gettime(libc::CLOCK_REALTIME, &mut real) == 0;
                (before, ok, core::arch::x86_64::_rdtsc())
            };
            if !ok || after < before {
                continue;
            }
            let (Some(m), Some(r)) = (ns(mono), ns(real)) else {
                continue;
            };
            let gap = after - before;
            if best.is_none_or(|b| gap < b.1) {
                best = Some(((before + gap / 2, m, r), gap));
            }
        }
        best.map(|(r, _)| r)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}
