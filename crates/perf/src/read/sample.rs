//! A sample's body: [`SampleLayout`], the fields an attr's `sample_type` puts in its samples
//! and where they are, and the decoding of a record into a borrowed [`Sample`] (callchain read
//! straight from the record's bytes, user registers and stack, branch stacks skipped).

use linux_perf_data::linux_perf_event_reader::{
    CpuMode, EventRecord, Mmap2FileId, RawEventRecord, Regs, SampleRecord,
};

use crate::raw::{RecordType, MISC_MMAP_BUILD_ID, MISC_MMAP_DATA, PROT_EXEC};
use crate::read::ahead::single;
use crate::read::bytes::{u64_at, Endian};
use crate::read::meta::Attr;

use crate::read::records::*;

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

pub(super) const S_IP: u64 = 1 << 0;
pub(super) const S_TID: u64 = 1 << 1;
pub(super) const S_TIME: u64 = 1 << 2;
pub(super) const S_ADDR: u64 = 1 << 3;
pub(super) const S_READ: u64 = 1 << 4;
pub(super) const S_CALLCHAIN: u64 = 1 << 5;
pub(super) const S_ID: u64 = 1 << 6;
pub(super) const S_CPU: u64 = 1 << 7;
pub(super) const S_PERIOD: u64 = 1 << 8;
pub(super) const S_STREAM_ID: u64 = 1 << 9;
pub(super) const S_RAW: u64 = 1 << 10;
pub(super) const S_BRANCH_STACK: u64 = 1 << 11;
pub(super) const S_REGS_USER: u64 = 1 << 12;
pub(super) const S_IDENTIFIER: u64 = 1 << 16;

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
pub(super) fn decode<'a>(
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
            reader_regs: s.user_regs,
        }
    }

    /// linux-perf-event-reader's register accessor for the user registers.
    pub fn regs(&self) -> Option<&Regs<'a>> {
        self.reader_regs.as_ref()
    }

    /// Whether the sample was taken in kernel mode.
    pub fn in_kernel(&self) -> bool {
        matches!(self.cpu_mode, CpuMode::Kernel | CpuMode::GuestKernel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raw::*;

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
