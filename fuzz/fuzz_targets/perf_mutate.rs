#![no_main]
//! A structure-aware perf.data mutator (issue #23): instead of flipping bytes, each mutation
//! reads the recording's structure (file header, attr section, data records, feature table; or
//! a pipe-mode stream of records) and changes one thing a producer or an attacker controls:
//! a record's size or type, `sample_type`/`read_format`/`branch_sample_type` bits and
//! `attr.size`, a SAMPLE's callchain `nr` (or extra frames), a branch stack's `nr` (or a branch
//! stack added to every sample), the user stack's sizes, the attr section's size and offsets,
//! the data section, feature bits and feature-table entries, a record duplicated many times,
//! records wrapped in COMPRESSED records (faithfully, as a zstd bomb, or corrupt), a cut.
//! Sections after the data are moved when the data grows or shrinks, so a mutation tests what
//! it names and not a broken offset.
//!
//! Every perf.data entry point then runs on the result: profkit-perf's `validate`, `parse`,
//! the events (slice and read ahead), `summary` (`info`), `dump` (text and NDJSON, with
//! stacks); profkit-export's `check_convert` (the model's driver into every writer, outputs
//! bounded by the input); and `inject` (with the recording's jitdump). Run with
//! `-rss_limit_mb=512`: a size field or a compression ratio must not buy memory.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::{fuzz_mutator, fuzz_target, fuzzer_mutate};
use profkit_inject::{inject_bytes, Options};
use profkit_model::feed::perf::jit::JitSearch;
use profkit_model::feed::perf::PerfOptions;
use profkit_perf::{dump, EventData, PerfData};

fuzz_target!(|data: &[u8]| {
    check(data);
});

fuzz_mutator!(|data: &mut [u8], size: usize, max_size: usize, seed: u32| {
    let mut rng = Rng(u64::from(seed).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    if rng.below(10) != 0 {
        if let Some(out) = mutate(&data[..size], &mut rng) {
            if out.len() <= max_size && out != data[..size] {
                data[..out.len()].copy_from_slice(&out);
                return out.len();
            }
        }
    }
    fuzzer_mutate(data, size, max_size)
});

// ---------------------------------------------------------------------------------------------
// The entry points.

fn check(data: &[u8]) {
    let _ = profkit_perf::validate(data);
    if let Ok(pd) = PerfData::parse(data) {
        let _ = profkit_perf::summary(&pd);
        for (json, stacks) in [(false, true), (true, true)] {
            let _ = dump::write(
                &pd,
                dump::DumpOptions { json, stacks },
                &mut std::io::sink(),
            );
        }
        let ahead = pd.with_events_read_ahead(None, |ev| {
            let mut n = 0u64;
            while let Some(Ok(_)) = ev.next_event() {
                n += 1;
            }
            n
        });
        if let Ok(mut ev) = pd.events() {
            let mut here = 0u64;
            while let Some(e) = ev.next_event() {
                let Ok(e) = e else { break };
                here += 1;
                if let EventData::Sample(s) = &e.data {
                    if let Some(c) = &s.callchain {
                        let _ = c.split();
                    }
                    if let Some(r) = &s.user_regs {
                        let _ = r.iter().count();
                    }
                }
            }
            if let Ok(n) = ahead {
                assert_eq!(n, here, "read ahead delivers other events");
            }
        }
    }
    profkit_export::harness::check_convert(data);
    inject(data);
}

fn fixture(name: &str) -> Vec<u8> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/perf")
        .join(name);
    let raw = std::fs::read(&p).unwrap();
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(&raw[..])
        .read_to_end(&mut out)
        .unwrap();
    out
}

/// `inject` of the mutated recording with the first 400 KB of the node recording's jitdump
/// (pid 30519, named as `--jit-dir FILE` names it: the path the recording names may exist on
/// this machine); it returns, never panics, leaves no temporary file and writes nothing when
/// it fails.
fn inject(recording: &[u8]) {
    static DUMP: OnceLock<Vec<u8>> = OnceLock::new();
    let dump = DUMP.get_or_init(|| {
        let mut d = fixture("node-fp.jit-30519.dump.gz");
        d.truncate(400_000);
        d
    });
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("jit-30519.dump"), dump).unwrap();
    let output: PathBuf = dir.path().join("out.data");
    let options = Options {
        input: dir.path().join("in.data"),
        output: output.clone(),
        jit: Some(JitSearch {
            dump_files: vec![(30519, dir.path().join("jit-30519.dump"))],
            ..PerfOptions::isolated().jit
        }),
        elf_dir: None,
    };
    let ok = inject_bytes(&options, "fuzz", recording).is_ok();
    for e in std::fs::read_dir(dir.path()).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        assert!(!name.ends_with(".tmp"), "{name} left");
        if !ok {
            assert!(
                name == "jit-30519.dump",
                "inject failed and left {name} behind"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The mutator.

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
    fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[self.below(v.len())]
    }
    /// A value a size or count field is worth trying with, near `cur` or at an edge.
    fn size_like(&mut self, cur: u64) -> u64 {
        match self.below(12) {
            0 => 0,
            1 => cur.wrapping_add(1),
            2 => cur.wrapping_sub(1),
            3 => cur.wrapping_add(8),
            4 => cur.wrapping_sub(8),
            5 => cur.wrapping_mul(2),
            6 => u64::from(u32::MAX),
            7 => u64::MAX,
            8 => 1 << 62,
            9 => 0x7fff_ffff,
            10 => 1 << self.below(40),
            _ => self.next() & 0xffff,
        }
    }
}

fn get64(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        b.get(off..off.checked_add(8)?)?.try_into().ok()?,
    ))
}
fn get32(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(off..off.checked_add(4)?)?.try_into().ok()?,
    ))
}
fn get16(b: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_le_bytes(
        b.get(off..off.checked_add(2)?)?.try_into().ok()?,
    ))
}
fn put64(b: &mut [u8], off: usize, v: u64) {
    if let Some(s) = b.get_mut(off..off + 8) {
        s.copy_from_slice(&v.to_le_bytes());
    }
}
fn put32(b: &mut [u8], off: usize, v: u32) {
    if let Some(s) = b.get_mut(off..off + 4) {
        s.copy_from_slice(&v.to_le_bytes());
    }
}
fn put16(b: &mut [u8], off: usize, v: u16) {
    if let Some(s) = b.get_mut(off..off + 2) {
        s.copy_from_slice(&v.to_le_bytes());
    }
}

const MAGIC: &[u8; 8] = b"PERFILE2";
const SAMPLE: u32 = 9;
const HEADER_ATTR: u32 = 64;
const FINISHED_ROUND: u32 = 68;
const COMPRESSED: u32 = 81;

/// The structure of a little-endian perf.data (file or pipe mode).
struct Layout {
    pipe: bool,
    /// Start and end of the data records (file: the data section; pipe: after the header).
    data: (usize, usize),
    /// Offsets of the records inside `data` (each fits: the walk stops at the first that does not).
    records: Vec<usize>,
    /// Offsets of `perf_event_attr`s (file: the attr section's entries; pipe: HEADER_ATTR bodies).
    attrs: Vec<usize>,
}

fn layout(b: &[u8]) -> Option<Layout> {
    if b.get(..8)? != MAGIC {
        return None;
    }
    let hsize = get64(b, 8)?;
    let pipe = hsize == 16;
    let data = if pipe {
        (16, b.len())
    } else {
        let off = usize::try_from(get64(b, 40)?).ok()?;
        let size = usize::try_from(get64(b, 48)?).ok()?;
        let end = off.checked_add(size)?.min(b.len());
        (off.min(end), end)
    };
    let mut records = Vec::new();
    let mut off = data.0;
    while off + 8 <= data.1 && records.len() < 100_000 {
        let size = usize::from(get16(b, off + 6)?);
        if size < 8 || off + size > data.1 {
            break;
        }
        records.push(off);
        off += size;
    }
    let mut attrs = Vec::new();
    if pipe {
        for &r in &records {
            if get32(b, r)? == HEADER_ATTR {
                attrs.push(r + 8);
            }
        }
    } else {
        let attr_size = usize::try_from(get64(b, 16)?).ok()?;
        let a_off = usize::try_from(get64(b, 24)?).ok()?;
        let a_size = usize::try_from(get64(b, 32)?).ok()?;
        if attr_size >= 64 {
            let mut o = a_off;
            while o.checked_add(attr_size)? <= a_off.saturating_add(a_size).min(b.len())
                && attrs.len() < 64
            {
                attrs.push(o);
                o += attr_size;
            }
        }
    }
    Some(Layout {
        pipe,
        data,
        records,
        attrs,
    })
}

/// Where the variable parts of a SAMPLE record are, as its attr's `sample_type` says.
#[derive(Default)]
struct SampleParts {
    callchain: Option<usize>,
    /// Where a branch stack is (or goes, when `sample_type` has none).
    branch: usize,
    has_branch: bool,
    stack_user: Option<usize>,
}

fn sample_parts(b: &[u8], attr: usize, rec: usize) -> Option<SampleParts> {
    let st = get64(b, attr + 24)?;
    let rf = get64(b, attr + 32)?;
    let bit = |n: u32| st & (1 << n) != 0;
    let end = rec + usize::from(get16(b, rec + 6)?);
    let mut o = rec + 8;
    for n in [16, 0, 1, 2, 3, 6, 9, 7, 8] {
        if bit(n) {
            o += 8;
        }
    }
    if bit(4) {
        let extra = |m: u32| usize::from(rf & (1 << m) != 0) * 8;
        if rf & (1 << 3) != 0 {
            let nr = usize::try_from(get64(b, o)?).ok()?.min(1 << 16);
            o += 8 + extra(0) + extra(1) + nr * (8 + extra(2) + extra(4));
        } else {
            o += 8 + extra(0) + extra(1) + extra(2) + extra(4);
        }
    }
    let mut parts = SampleParts::default();
    if bit(5) {
        parts.callchain = Some(o);
        let nr = usize::try_from(get64(b, o)?).ok()?.min(1 << 16);
        o += 8 + nr * 8;
    }
    if bit(10) {
        o += 4 + get32(b, o)? as usize;
    }
    parts.branch = o;
    if bit(11) {
        parts.has_branch = true;
        let hw = usize::from(get64(b, attr + 72)? & (1 << 17) != 0) * 8;
        let nr = usize::try_from(get64(b, o)?).ok()?.min(1 << 16);
        o += 8 + hw + nr * 24;
    }
    if bit(12) {
        let abi = get64(b, o)?;
        o += 8;
        if abi != 0 {
            o += get64(b, attr + 80)?.count_ones() as usize * 8;
        }
    }
    if bit(13) {
        parts.stack_user = Some(o);
    }
    (o <= end).then_some(parts)
}

/// `b` with the data records replaced by `records` (file mode: the header's data size fixed and
/// whatever followed the data moved, feature-table offsets that pointed past it shifted).
fn with_records(b: &[u8], l: &Layout, records: &[u8]) -> Vec<u8> {
    let mut out = b[..l.data.0].to_vec();
    out.extend_from_slice(records);
    // A pipe stream's bytes after the last whole record (a cut) are dropped.
    if l.pipe {
        return out;
    }
    let delta = records.len() as i64 - (l.data.1 - l.data.0) as i64;
    put64(&mut out, 48, records.len() as u64);
    let tail_start = out.len();
    out.extend_from_slice(&b[l.data.1..]);
    let nfeat = b[72..104]
        .iter()
        .map(|x| x.count_ones() as usize)
        .sum::<usize>();
    for i in 0..nfeat {
        let at = tail_start + i * 16;
        if let Some(off) = get64(&out, at) {
            if off >= l.data.1 as u64 {
                put64(&mut out, at, (off as i64).wrapping_add(delta) as u64);
            }
        }
    }
    out
}

fn record_bytes<'a>(b: &'a [u8], r: usize) -> &'a [u8] {
    &b[r..r + usize::from(get16(b, r + 6).unwrap_or(8))]
}

/// One record with `body`, its size set (None when it does not fit a u16).
fn make_record(ty: u32, body: &[u8]) -> Option<Vec<u8>> {
    let size = u16::try_from(body.len() + 8).ok()?;
    let mut r = ty.to_le_bytes().to_vec();
    r.extend_from_slice(&0u16.to_le_bytes());
    r.extend_from_slice(&size.to_le_bytes());
    r.extend_from_slice(body);
    Some(r)
}

fn zstd(raw: &[u8]) -> Vec<u8> {
    let mut z = vec![0u8; zstd_safe::compress_bound(raw.len())];
    let n = zstd_safe::compress(&mut z[..], raw, 1).unwrap_or(0);
    z.truncate(n);
    z
}

/// A zstd frame of `n` bytes `byte` in RLE blocks (4 bytes per 128 KiB).
fn zstd_rle(n: u64, byte: u8) -> Vec<u8> {
    let mut z = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38];
    let mut left = n;
    while left > 0 {
        let size = left.min(128 << 10) as u32;
        left -= u64::from(size);
        let head = u32::from(left == 0) | (1 << 1) | (size << 3);
        z.extend_from_slice(&head.to_le_bytes()[..3]);
        z.push(byte);
    }
    z
}

/// COMPRESSED records holding `payload` (split into records of at most 64 KiB).
fn compressed_records(payload: &[u8]) -> Vec<u8> {
    payload
        .chunks(0xfff0)
        .flat_map(|c| make_record(COMPRESSED, c).unwrap_or_default())
        .collect()
}

fn mutate(b: &[u8], rng: &mut Rng) -> Option<Vec<u8>> {
    let l = layout(b)?;
    let mut out = b.to_vec();
    let rec =
        |rng: &mut Rng| (!l.records.is_empty()).then(|| l.records[rng.below(l.records.len())]);
    let samples: Vec<usize> = l
        .records
        .iter()
        .copied()
        .filter(|&r| get32(b, r) == Some(SAMPLE))
        .collect();
    let attr0 = l.attrs.first().copied();
    match rng.below(16) {
        // A record's size.
        0 => {
            let r = rec(rng)?;
            let cur = u64::from(get16(b, r + 6)?);
            put16(&mut out, r + 6, rng.size_like(cur) as u16);
        }
        // A record's type.
        1 => {
            let r = rec(rng)?;
            let ty = match rng.below(3) {
                0 => rng.pick(&[1, 2, 3, 4, 5, 7, 9, 10, 11, 14, 17, 64, 68, 73, 79, 81, 83]),
                1 => 64 + rng.below(24) as u32,
                _ => rng.next() as u32,
            };
            put32(&mut out, r, ty);
        }
        // sample_type, read_format, branch_sample_type, flags bits of one attr or all.
        2 | 3 => {
            let field = rng.pick(&[24usize, 24, 24, 32, 40, 72]);
            let bit = match field {
                24 => rng.pick(&[
                    4, 5, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24,
                ]),
                32 => rng.below(6) as u32,
                40 => {
                    let any = rng.below(64) as u32;
                    rng.pick(&[18, 33, 34, 35, any])
                }
                _ => rng.below(20) as u32,
            };
            let all = rng.below(2) == 0;
            let first = rng.below(l.attrs.len().max(1));
            for (i, &a) in l.attrs.iter().enumerate() {
                if all || i == first {
                    let v = get64(b, a + field)?;
                    put64(&mut out, a + field, v ^ (1 << bit));
                }
            }
        }
        // attr.size, the user register mask, the user stack size.
        4 => {
            let a = *l.attrs.get(rng.below(l.attrs.len()))?;
            match rng.below(3) {
                0 => {
                    let v = rng.pick(&[
                        0u32,
                        8,
                        63,
                        64,
                        72,
                        80,
                        96,
                        104,
                        112,
                        120,
                        128,
                        136,
                        0x7fff_ffff,
                    ]);
                    put32(&mut out, a + 4, v);
                }
                1 => put64(&mut out, a + 80, rng.next()),
                _ => put32(
                    &mut out,
                    a + 88,
                    rng.size_like(u64::from(get32(b, a + 88)?)) as u32,
                ),
            }
        }
        // The attr section: attr_size, its offset and size, an attr's ids section.
        5 => {
            if l.pipe {
                return None;
            }
            match rng.below(4) {
                0 => put64(&mut out, 16, rng.size_like(get64(b, 16)?)),
                1 => put64(&mut out, 24, rng.size_like(get64(b, 24)?)),
                2 => put64(&mut out, 32, rng.size_like(get64(b, 32)?)),
                _ => {
                    let a = *l.attrs.get(rng.below(l.attrs.len().max(1)))?;
                    let attr_size = usize::try_from(get64(b, 16)?).ok()?;
                    let at = a + attr_size - 16 + 8 * rng.below(2);
                    put64(&mut out, at, rng.size_like(get64(b, at)?));
                }
            }
        }
        // The data section (file) or the header size (pipe).
        6 => {
            let at = if l.pipe {
                8
            } else {
                rng.pick(&[40, 48, 56, 64])
            };
            put64(&mut out, at, rng.size_like(get64(b, at)?));
        }
        // A SAMPLE's callchain nr, or frames added to it.
        7 => {
            let r = *samples.get(rng.below(samples.len().max(1)))?;
            let p = sample_parts(b, attr0?, r)?;
            let cc = p.callchain?;
            let nr = get64(b, cc)?;
            if rng.below(2) == 0 {
                put64(&mut out, cc, rng.size_like(nr));
            } else {
                let n = 1 + rng.below(64);
                let nr_end = usize::try_from(nr)
                    .ok()?
                    .checked_mul(8)?
                    .checked_add(cc + 8)?;
                if nr_end > r + usize::from(get16(b, r + 6)?) {
                    return None;
                }
                let mut extra = Vec::new();
                for _ in 0..n {
                    let v = match rng.below(4) {
                        0 => 0xffff_ffff_ffff_fe00u64, // PERF_CONTEXT_USER
                        1 => 0xffff_ffff_ffff_ff80,    // PERF_CONTEXT_KERNEL
                        2 => get64(b, cc + 8).unwrap_or(0),
                        _ => rng.next(),
                    };
                    extra.extend_from_slice(&v.to_le_bytes());
                }
                let mut rb = record_bytes(b, r).to_vec();
                put64(&mut rb, cc - r, nr + n as u64);
                rb.splice(nr_end - r..nr_end - r, extra);
                let size = u16::try_from(rb.len()).ok()?;
                put16(&mut rb, 6, size);
                let mut data = b[l.data.0..r].to_vec();
                data.extend_from_slice(&rb);
                data.extend_from_slice(&b[r + usize::from(get16(b, r + 6)?)..l.data.1]);
                return Some(with_records(b, &l, &data));
            }
        }
        // A branch stack: its nr, or one added to every sample (sample_type bit 11 set).
        8 => {
            let a = attr0?;
            let first = *samples.first()?;
            let p = sample_parts(b, a, first)?;
            if p.has_branch {
                let r = *samples.get(rng.below(samples.len()))?;
                let p = sample_parts(b, a, r)?;
                put64(&mut out, p.branch, rng.size_like(get64(b, p.branch)?));
            } else {
                let n = rng.pick(&[0usize, 1, 2, 16, 32, 2000]);
                let hw = get64(b, a + 72)? & (1 << 17) != 0;
                // The attrs say so first (pipe mode: inside the records copied below).
                for &at in &l.attrs {
                    let v = get64(b, at + 24)?;
                    put64(&mut out, at + 24, v | (1 << 11));
                }
                let src = &out;
                let mut data = Vec::new();
                let mut prev = l.data.0;
                for &r in &samples {
                    let p = sample_parts(b, a, r)?;
                    data.extend_from_slice(&src[prev..p.branch]);
                    let mut stack = (n as u64).to_le_bytes().to_vec();
                    if hw {
                        stack.extend_from_slice(&rng.size_like(0).to_le_bytes());
                    }
                    for _ in 0..n {
                        let from = get64(b, r + 16).unwrap_or(0);
                        stack.extend_from_slice(&from.to_le_bytes());
                        stack.extend_from_slice(&rng.next().to_le_bytes());
                        stack.extend_from_slice(&(rng.next() & 0xffff_ffff).to_le_bytes());
                    }
                    let size = usize::from(get16(b, r + 6)?) + stack.len();
                    let start = data.len() - (p.branch - r);
                    data.extend_from_slice(&stack);
                    data.extend_from_slice(&src[p.branch..r + usize::from(get16(b, r + 6)?)]);
                    put16(&mut data, start + 6, size.min(0xffff) as u16);
                    prev = r + usize::from(get16(b, r + 6)?);
                }
                data.extend_from_slice(&src[prev..l.data.1]);
                return Some(with_records(src, &l, &data));
            }
        }
        // The user stack copy's size or dyn_size.
        9 => {
            let r = *samples.get(rng.below(samples.len().max(1)))?;
            let p = sample_parts(b, attr0?, r)?;
            let su = p.stack_user?;
            let size = get64(b, su)?;
            if rng.below(2) == 0 {
                put64(&mut out, su, rng.size_like(size));
            } else {
                let dyn_at = usize::try_from(size).ok()?.checked_add(su + 8)?;
                put64(&mut out, dyn_at, rng.size_like(get64(b, dyn_at)?));
            }
        }
        // Feature bits and the feature table's entries; a feature section's first count.
        10 | 11 => {
            if l.pipe {
                return None;
            }
            let nfeat: usize = b[72..104].iter().map(|x| x.count_ones() as usize).sum();
            match rng.below(4) {
                0 => {
                    let bit = rng.below(32);
                    out[72 + bit / 8] ^= 1 << (bit % 8);
                }
                1 | 2 if nfeat > 0 => {
                    let at = l.data.1 + 16 * rng.below(nfeat) + 8 * rng.below(2);
                    put64(&mut out, at, rng.size_like(get64(b, at)?));
                }
                _ if nfeat > 0 => {
                    let entry = l.data.1 + 16 * rng.below(nfeat);
                    let off = usize::try_from(get64(b, entry)?).ok()?;
                    let cur = u64::from(get32(b, off)?);
                    put32(&mut out, off, rng.size_like(cur) as u32);
                }
                _ => return None,
            }
        }
        // One record repeated (many MMAPs of one binary, many samples at one time).
        12 => {
            let r = rec(rng)?;
            let one = record_bytes(b, r);
            let times = rng.pick(&[2usize, 16, 256, 4096]);
            let mut data = b[l.data.0..l.data.1].to_vec();
            let at = r + one.len() - l.data.0;
            let rep: Vec<u8> = one.repeat(times);
            data.splice(at..at, rep);
            return Some(with_records(b, &l, &data));
        }
        // A run of records wrapped in COMPRESSED records (as `perf record -z`).
        13 => {
            if l.records.is_empty() {
                return None;
            }
            let i = rng.below(l.records.len());
            let j = (i + 1 + rng.below(64)).min(l.records.len());
            let start = l.records[i];
            let end = l.records.get(j).copied().unwrap_or(l.data.1);
            let z = zstd(&b[start..end]);
            let mut data = b[l.data.0..start].to_vec();
            data.extend_from_slice(&compressed_records(&z));
            data.extend_from_slice(&b[end..l.data.1]);
            return Some(with_records(b, &l, &data));
        }
        // A COMPRESSED bomb, or a COMPRESSED record's payload corrupted or cut.
        14 => {
            let existing: Vec<usize> = l
                .records
                .iter()
                .copied()
                .filter(|&r| get32(b, r) == Some(COMPRESSED))
                .collect();
            if !existing.is_empty() && rng.below(2) == 0 {
                let r = existing[rng.below(existing.len())];
                let len = usize::from(get16(b, r + 6)?);
                if len <= 8 {
                    return None;
                }
                let at = r + 8 + rng.below(len - 8);
                match rng.below(3) {
                    0 => out[at] ^= 1 << rng.below(8),
                    1 => out[at] = rng.next() as u8,
                    _ => {
                        // The payload cut short: the record shrinks.
                        let mut data = b[l.data.0..at].to_vec();
                        data.extend_from_slice(&b[r + len..l.data.1]);
                        let rs = r - l.data.0;
                        put16(&mut data, rs + 6, (at - r) as u16);
                        return Some(with_records(b, &l, &data));
                    }
                }
            } else {
                let payload = match rng.below(4) {
                    0 => zstd_rle(rng.pick(&[1u64 << 20, 64 << 20, 1 << 30, 8 << 30]), 0),
                    1 => zstd_rle(rng.pick(&[1u64 << 20, 128 << 20]), 0x44),
                    2 => {
                        let round = make_record(FINISHED_ROUND, &[])?;
                        zstd(&round.repeat(rng.pick(&[1000usize, 100_000, 500_000])))
                    }
                    _ => {
                        let s = *samples.first()?;
                        zstd(&record_bytes(b, s).repeat(rng.pick(&[100usize, 10_000, 50_000])))
                    }
                };
                let at = rec(rng).unwrap_or(l.data.0);
                let mut data = b[l.data.0..at].to_vec();
                data.extend_from_slice(&compressed_records(&payload));
                data.extend_from_slice(&b[at..l.data.1]);
                return Some(with_records(b, &l, &data));
            }
        }
        // A cut: at a record's start, inside it, or in the feature sections.
        _ => {
            let cut = match rng.below(3) {
                0 => rec(rng)?,
                1 => rec(rng)? + 1 + rng.below(7),
                _ => l.data.1 + rng.below(b.len().saturating_sub(l.data.1).max(1)),
            };
            out.truncate(cut.min(b.len()));
        }
    }
    Some(out)
}
