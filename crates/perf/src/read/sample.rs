//! A sample's body: [`SampleLayout`], the fields an attr's `sample_type` puts in its samples,
//! read straight from the record's bytes into a borrowed [`Sample`] (callchain, user
//! registers and stack kept as slices; branch stacks and the other fields skipped), and the
//! decoding of the other kernel records through linux-perf-event-reader.

use linux_perf_data::linux_perf_event_reader::{
    CpuMode, EventRecord, Mmap2FileId, RawData, RawDataU64, RawEventRecord, Regs,
};

use crate::raw::*;
use crate::read::ahead::single;
use crate::read::bytes::{u32_at, u64_at, Endian};
use crate::read::meta::Attr;

use crate::read::records::*;

/// The fields an attr's `sample_type` puts in its samples, in the order and with the widths
/// linux-perf-event-reader 0.10 reads them (including its PERF_SAMPLE_READ layout, see
/// docs/perf.md), so that a sample decodes, and fails to, as it would there.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SampleLayout {
    sample_type: u64,
    read_format: u64,
    branch_hw_index: bool,
    regs_user: u64,
    regs_intr: u64,
    /// The fields before READ, each a `u64` at a fixed place: see [`Fixed`].
    fixed: Fixed,
}

/// Where the fields before PERF_SAMPLE_READ are (all are one `u64`, so their offsets follow
/// from `sample_type` alone): a body at least `len` bytes long has them all, read at their
/// offsets without walking the fields one by one (that walk was most of a sample's decoding).
#[derive(Clone, Copy, Debug, Default)]
struct Fixed {
    len: usize,
    identifier: Option<usize>,
    ip: Option<usize>,
    tid: Option<usize>,
    time: Option<usize>,
    id: Option<usize>,
    cpu: Option<usize>,
    period: Option<usize>,
}

impl Fixed {
    fn of(sample_type: u64) -> Fixed {
        let mut len = 0;
        let mut at = |bit: u64| {
            (sample_type & bit != 0).then(|| {
                len += 8;
                len - 8
            })
        };
        let identifier = at(PERF_SAMPLE_IDENTIFIER);
        let ip = at(PERF_SAMPLE_IP);
        let tid = at(PERF_SAMPLE_TID);
        let time = at(PERF_SAMPLE_TIME);
        at(PERF_SAMPLE_ADDR);
        let id = at(PERF_SAMPLE_ID);
        at(PERF_SAMPLE_STREAM_ID);
        let cpu = at(PERF_SAMPLE_CPU);
        let period = at(PERF_SAMPLE_PERIOD);
        Fixed {
            len,
            identifier,
            ip,
            tid,
            time,
            id,
            cpu,
            period,
        }
    }
}

/// Why a sample's body did not decode.
enum Bad {
    /// A field runs past the body's end (linux-perf-event-reader's `UnexpectedEof`).
    Short,
    /// The callchain's count is more than the body holds.
    Callchain { nr: u64, rest: usize },
}

/// Reads a sample's fields in order; [`Bad::Short`] past the body's end.
struct Cursor<'a> {
    body: &'a [u8],
    off: usize,
    e: Endian,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Bad> {
        let end = self.off.checked_add(n).ok_or(Bad::Short)?;
        let bytes = self.body.get(self.off..end).ok_or(Bad::Short)?;
        self.off = end;
        Ok(bytes)
    }

    fn u64(&mut self) -> Result<u64, Bad> {
        let v = u64_at(self.body, self.off, self.e).ok_or(Bad::Short)?;
        self.off += 8;
        Ok(v)
    }

    fn u32(&mut self) -> Result<u32, Bad> {
        let v = u32_at(self.body, self.off, self.e).ok_or(Bad::Short)?;
        self.off += 4;
        Ok(v)
    }

    fn u64_if(&mut self, present: bool) -> Result<Option<u64>, Bad> {
        if present {
            self.u64().map(Some)
        } else {
            Ok(None)
        }
    }

    /// `n` entries of `width` bytes.
    fn skip(&mut self, n: u64, width: usize) -> Result<(), Bad> {
        let bytes = usize::try_from(n)
            .ok()
            .and_then(|n| n.checked_mul(width))
            .ok_or(Bad::Short)?;
        self.take(bytes).map(drop)
    }
}

impl SampleLayout {
    pub(crate) fn of(attr: &Attr) -> SampleLayout {
        SampleLayout {
            sample_type: attr.sample_type,
            read_format: attr.raw.read_format.bits(),
            branch_hw_index: attr.raw.branch_sample_format.bits() & (1 << 17) != 0,
            regs_user: attr.sample_regs_user,
            regs_intr: attr.raw.sample_regs_intr,
            fixed: Fixed::of(attr.sample_type),
        }
    }

    /// The sample in `body`. Its fields are read straight from the record's bytes, not
    /// through linux-perf-event-reader's `SampleRecord`: that struct is 280 bytes, and moving
    /// it and the enum around it from the parser to the walk copied ~900 bytes per sample
    /// (a tenth of the walk's thread). The reads, their order and where a short body fails
    /// are linux-perf-event-reader's; the callchain's count is checked before it is
    /// multiplied (there it overflows).
    fn sample<'a>(
        &self,
        body: &'a [u8],
        misc: u16,
        attr_index: usize,
        e: Endian,
    ) -> Result<Sample<'a>, Bad> {
        let st = self.sample_type;
        let has = |b: u64| st & b != 0;
        let mut c = Cursor { body, off: 0, e };
        let f = &self.fixed;
        let (identifier, ip, tid, time, id, cpu, period) = if body.len() >= f.len {
            // All there: each read at its place (in bounds, so `None` only where absent).
            let at = |field: Option<usize>| field.and_then(|o| u64_at(body, o, e));
            c.off = f.len;
            (
                at(f.identifier),
                at(f.ip),
                at(f.tid),
                at(f.time),
                at(f.id),
                at(f.cpu),
                at(f.period),
            )
        } else {
            // Short: read in order, to fail where linux-perf-event-reader does.
            let identifier = c.u64_if(has(PERF_SAMPLE_IDENTIFIER))?;
            let ip = c.u64_if(has(PERF_SAMPLE_IP))?;
            let tid = c.u64_if(has(PERF_SAMPLE_TID))?;
            let time = c.u64_if(has(PERF_SAMPLE_TIME))?;
            c.u64_if(has(PERF_SAMPLE_ADDR))?;
            let id = c.u64_if(has(PERF_SAMPLE_ID))?;
            c.u64_if(has(PERF_SAMPLE_STREAM_ID))?;
            let cpu = c.u64_if(has(PERF_SAMPLE_CPU))?;
            let period = c.u64_if(has(PERF_SAMPLE_PERIOD))?;
            (identifier, ip, tid, time, id, cpu, period)
        };
        let (pid, tid) = match tid {
            Some(v) => {
                let (pid, tid) = match e {
                    Endian::Little => (v as u32, (v >> 32) as u32),
                    Endian::Big => ((v >> 32) as u32, v as u32),
                };
                (Some(pid as i32), Some(tid as i32))
            }
            None => (None, None),
        };
        let cpu = cpu.map(|v| match e {
            Endian::Little => v as u32,
            Endian::Big => (v >> 32) as u32,
        });
        if has(PERF_SAMPLE_READ) {
            let rf = self.read_format;
            let (te, tr, with_id) = (rf & 1 != 0, rf & 2 != 0, rf & 4 != 0);
            if rf & 8 != 0 {
                c.skip(1 + u64::from(te) + u64::from(tr) + u64::from(with_id), 8)?;
            } else {
                let nr = c.u64()?;
                c.skip(u64::from(te) + u64::from(tr), 8)?;
                c.skip(nr, 8 + usize::from(with_id) * 8)?;
            }
        }
        let mut callchain = None;
        if has(PERF_SAMPLE_CALLCHAIN) {
            let nr = c.u64()?;
            let rest = body.len() - c.off;
            match usize::try_from(nr).ok().and_then(|n| n.checked_mul(8)) {
                Some(len) if len <= rest => {
                    callchain = Some(Callchain {
                        bytes: c.take(len)?,
                        endian: e,
                    })
                }
                _ => return Err(Bad::Callchain { nr, rest }),
            }
        }
        if has(PERF_SAMPLE_RAW) {
            let size = c.u32()?;
            c.take(size as usize)?;
        }
        if has(PERF_SAMPLE_BRANCH_STACK) {
            let nr = c.u64()?;
            c.u64_if(self.branch_hw_index)?;
            c.skip(nr, 24)?;
        }
        let mut user_regs = None;
        if has(PERF_SAMPLE_REGS_USER) {
            let abi = c.u64()?;
            if abi != 0 {
                user_regs = Some(UserRegs {
                    abi,
                    mask: self.regs_user,
                    bytes: c.take(self.regs_user.count_ones() as usize * 8)?,
                    endian: e,
                });
            }
        }
        let mut user_stack = None;
        if has(PERF_SAMPLE_STACK_USER) {
            let size = c.u64()?;
            let bytes = c.take(usize::try_from(size).map_err(|_| Bad::Short)?)?;
            let dyn_size = if size != 0 { c.u64()? } else { 0 };
            user_stack = Some(UserStack { bytes, dyn_size });
        }
        // The rest is not kept, but read: a body too short for it is malformed there too.
        // (linux-perf-event-reader reads neither CGROUP nor WEIGHT_STRUCT, and AUX before
        // the page sizes.)
        c.u64_if(has(PERF_SAMPLE_WEIGHT))?;
        c.u64_if(has(PERF_SAMPLE_DATA_SRC))?;
        c.u64_if(has(PERF_SAMPLE_TRANSACTION))?;
        if has(PERF_SAMPLE_REGS_INTR) && c.u64()? != 0 {
            c.skip(u64::from(self.regs_intr.count_ones()), 8)?;
        }
        c.u64_if(has(PERF_SAMPLE_PHYS_ADDR))?;
        if has(PERF_SAMPLE_AUX) {
            let size = c.u64()?;
            c.skip(size, 1)?;
        }
        c.u64_if(has(PERF_SAMPLE_DATA_PAGE_SIZE))?;
        c.u64_if(has(PERF_SAMPLE_CODE_PAGE_SIZE))?;
        Ok(Sample {
            attr_index,
            id: identifier.or(id),
            ip,
            pid,
            tid,
            time,
            cpu,
            period,
            cpu_mode: CpuMode::from_misc(misc),
            callchain,
            user_regs,
            user_stack,
        })
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
        let Some(layout) = layout else {
            return EventData::Malformed(format!(
                "SAMPLE of attr {attr_index}, which has no layout"
            ));
        };
        return match layout.sample(body, rec.misc, attr_index, e) {
            Ok(s) => EventData::Sample(s),
            Err(Bad::Short) => malformed(std::io::ErrorKind::UnexpectedEof.into()),
            Err(Bad::Callchain { nr, rest }) => EventData::Malformed(format!(
                "SAMPLE: callchain of {nr} entries does not fit in the {rest} bytes that follow"
            )),
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
    /// linux-perf-event-reader's register accessor for the user registers.
    pub fn regs(&self) -> Option<Regs<'a>> {
        let r = self.user_regs.as_ref()?;
        let raw = RawData::Single(r.bytes);
        let raw = match r.endian {
            Endian::Little => RawDataU64::from_raw_data::<byteorder::LittleEndian>(raw),
            Endian::Big => RawDataU64::from_raw_data::<byteorder::BigEndian>(raw),
        };
        Some(Regs::new(r.mask, raw))
    }

    /// Whether the sample was taken in kernel mode.
    pub fn in_kernel(&self) -> bool {
        matches!(self.cpu_mode, CpuMode::Kernel | CpuMode::GuestKernel)
    }
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
            sample_type: PERF_SAMPLE_IP | PERF_SAMPLE_CALLCHAIN,
            read_format: 0,
            branch_hw_index: false,
            regs_user: 0,
            regs_intr: 0,
            fixed: Fixed::of(PERF_SAMPLE_IP | PERF_SAMPLE_CALLCHAIN),
        };
        let decode = |body: &[u8]| l.sample(body, 0, 0, Endian::Little).map(|s| s.ip);
        let mut body = 0x1234u64.to_le_bytes().to_vec();
        body.extend_from_slice(&(1u64 << 61).to_le_bytes());
        assert!(matches!(decode(&body), Err(Bad::Callchain { nr, rest: 0 }) if nr == 1 << 61));
        body.truncate(8);
        body.extend_from_slice(&1u64.to_le_bytes());
        body.extend_from_slice(&7u64.to_le_bytes());
        assert!(matches!(decode(&body), Ok(Some(0x1234))));
        assert!(matches!(
            decode(&body[..20]),
            Err(Bad::Callchain { nr: 1, rest: 4 })
        ));
        assert!(matches!(decode(&body[..12]), Err(Bad::Short)));
    }

    /// The sample decoder against linux-perf-event-reader's `SampleRecord::parse` on random
    /// layouts and bodies, both byte orders: the same fields, and a failure exactly where it
    /// fails.
    #[test]
    fn samples_decode_as_linux_perf_event_reader_parses_them() {
        use byteorder::{BigEndian, ByteOrder, LittleEndian};
        use linux_perf_data::linux_perf_event_reader::{
            Endianness, PerfEventAttr, RecordParseInfo, RecordType as LpRecordType,
        };
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        const BITS: [u64; 23] = [
            PERF_SAMPLE_IP,
            PERF_SAMPLE_TID,
            PERF_SAMPLE_TIME,
            PERF_SAMPLE_ADDR,
            PERF_SAMPLE_READ,
            PERF_SAMPLE_CALLCHAIN,
            PERF_SAMPLE_ID,
            PERF_SAMPLE_CPU,
            PERF_SAMPLE_PERIOD,
            PERF_SAMPLE_STREAM_ID,
            PERF_SAMPLE_RAW,
            PERF_SAMPLE_BRANCH_STACK,
            PERF_SAMPLE_REGS_USER,
            PERF_SAMPLE_STACK_USER,
            PERF_SAMPLE_WEIGHT,
            PERF_SAMPLE_DATA_SRC,
            PERF_SAMPLE_IDENTIFIER,
            PERF_SAMPLE_TRANSACTION,
            PERF_SAMPLE_REGS_INTR,
            PERF_SAMPLE_PHYS_ADDR,
            PERF_SAMPLE_AUX,
            PERF_SAMPLE_DATA_PAGE_SIZE,
            PERF_SAMPLE_CODE_PAGE_SIZE,
        ];
        let (mut ok, mut failed) = (0, 0);
        for round in 0..20_000 {
            let big = round % 2 == 1;
            let e = if big { Endian::Big } else { Endian::Little };
            let mut sample_type = 0;
            for b in BITS {
                if next() % 3 == 0 {
                    sample_type |= b;
                }
            }
            let read_format = next() % 16;
            let regs_user = next() & 0x00ff_00ff;
            let regs_intr = next() & 0x0f0f;
            let hw_index = next() % 2 == 0;
            let mut attr = [0u8; 128];
            let put = |a: &mut [u8], off: usize, v: u64, width: usize| {
                let b = &mut a[off..off + width];
                match (big, width) {
                    (false, 8) => LittleEndian::write_u64(b, v),
                    (true, 8) => BigEndian::write_u64(b, v),
                    (false, _) => LittleEndian::write_u32(b, v as u32),
                    (true, _) => BigEndian::write_u32(b, v as u32),
                }
            };
            put(&mut attr, 4, 128, 4);
            put(&mut attr, 24, sample_type, 8);
            put(&mut attr, 32, read_format, 8);
            put(&mut attr, 72, u64::from(hw_index) << 17, 8);
            put(&mut attr, 80, regs_user, 8);
            put(&mut attr, 96, regs_intr, 8);
            let (parsed, _) = if big {
                PerfEventAttr::parse::<_, BigEndian>(&attr[..]).unwrap()
            } else {
                PerfEventAttr::parse::<_, LittleEndian>(&attr[..]).unwrap()
            };
            let endianness = if big {
                Endianness::BigEndian
            } else {
                Endianness::LittleEndian
            };
            let info = RecordParseInfo::new(&parsed, endianness);
            let layout = SampleLayout {
                sample_type,
                read_format,
                branch_hw_index: hw_index,
                regs_user,
                regs_intr,
                fixed: Fixed::of(sample_type),
            };
            // Mostly small values, so that counts and sizes fit now and then.
            let words = (next() % 40) as usize;
            let mut body = vec![0u8; words * 8];
            for w in 0..words {
                let v = match next() % 8 {
                    0 => next(),
                    1..=3 => next() % 4,
                    4 => next() % 64,
                    _ => next() % 3 * 8,
                };
                put(&mut body, w * 8, v, 8);
            }
            body.truncate(body.len() - (next() % 8) as usize * usize::from(words > 0));
            let misc = (next() % 8) as u16;
            let ours = layout.sample(&body, misc, 3, e);
            if let Err(Bad::Callchain { nr, .. }) = ours {
                if nr > u64::MAX / 8 {
                    failed += 1; // linux-perf-event-reader's `nr * 8` overflows here
                    continue;
                }
            }
            let ours = ours.ok();
            let rec = RawEventRecord::new(LpRecordType::SAMPLE, misc, RawData::Single(&body), info);
            let theirs = match rec.parse() {
                Ok(EventRecord::Sample(s)) => Some(s),
                Ok(_) => panic!("not a sample"),
                Err(_) => None,
            };
            let (Some(t), Some(o)) = (&theirs, &ours) else {
                assert_eq!(theirs.is_some(), ours.is_some(), "round {round}: {body:?}");
                failed += 1;
                continue;
            };
            ok += 1;
            assert_eq!((o.id, o.ip, o.pid, o.tid), (t.id, t.ip, t.pid, t.tid));
            assert_eq!((o.time, o.cpu, o.period), (t.timestamp, t.cpu, t.period));
            assert_eq!(o.cpu_mode, t.cpu_mode);
            let chain: Option<Vec<u64>> = o.callchain.map(|c| c.raw().collect());
            let their_chain: Option<Vec<u64>> = t
                .callchain
                .map(|c| (0..c.len()).filter_map(|i| c.get(i)).collect());
            assert_eq!(chain, their_chain, "round {round}");
            let regs = |r: Option<&Regs>| r.map(|r| (0..64).map(|i| r.get(i)).collect::<Vec<_>>());
            assert_eq!(regs(o.regs().as_ref()), regs(t.user_regs.as_ref()));
            assert_eq!(o.user_regs.is_some(), t.user_regs.is_some());
            assert_eq!(
                o.user_stack.map(|s| (s.bytes.to_vec(), s.dyn_size)),
                t.user_stack.map(|(d, n)| (single(d).to_vec(), n))
            );
        }
        assert!(ok > 1000 && failed > 1000, "{ok} decoded, {failed} failed");
    }
}
