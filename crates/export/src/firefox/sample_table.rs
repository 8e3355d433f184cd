//! The `samples` tables of sampled threads, written by profkit rather than by fxprof's
//! serializer.
//!
//! A sampled thread's table is most of a profile's numbers (four per sample). Through fxprof's
//! `Serialize` and serde_json each number went through serde's per-element calls and
//! [`LinesFormatter`](super::lines::LinesFormatter)'s per-token bookkeeping, ~330 instructions
//! a number: most of the time the profile took to write once the input was read (scale90 of
//! `scripts/bench/perf-scale.sh`: 370 M of the writer's 481 M instructions after the walk).
//! Here a table is written column by column into a fixed buffer, each number as a 24-byte text
//! copied whole (its length counts): integers by their digits, the times' gaps by the
//! formatter serde_json itself uses ([`CompactFormatter`], so the bytes are the ones fxprof
//! would have written), kept by value (most gaps are the sampling period give or take a few
//! µs), as are the weight and CPU time (the same for every sample of a perf recording).
//! That is ~110 instructions a number. The table is
//!
//! `{"length":N,"weightType":"samples","stack":[…],"timeDeltas":[…],"weight":[…],"threadCPUDelta":[…]}`
//!
//! with the stack index (or null), the time since the previous sample in milliseconds (`f64`,
//! from 0), the weight (`i32`) and the CPU time in microseconds, in time order — the layout
//! of fxprof 0.8.1's `SampleTable` when its samples are sorted by time (a thread whose
//! samples are not is given to fxprof as before).
//!
//! **Which thread is which.** fxprof writes threads in an order of its own (main threads
//! first, then by start time, name and tid). So each such thread gets one stand-in sample
//! in fxprof, of weight `-1 - k` for table `k` (profkit gives no sample a negative weight):
//! when the formatter reaches a thread's `samples`, it holds fxprof's table back and writes
//! table `k` in its place if it is a stand-in, fxprof's table otherwise.

use std::io::{self, Write};

use serde_json::ser::{CompactFormatter, Formatter};

use super::chunks;

/// Bytes gathered before they are written.
const BUFFER: usize = 1 << 16;

/// One sampled thread's samples.
#[derive(Debug)]
struct Table {
    /// (time in ns, stack index, hits), times not decreasing once expanded.
    samples: Vec<(u64, Option<u32>, u64)>,
    /// ns of CPU time a hit stands for.
    period: u64,
}

/// The tables of the sampled threads (see the [module docs](self)).
#[derive(Debug, Default)]
pub(crate) struct SampleTables {
    tables: Vec<Table>,
}

impl SampleTables {
    /// Whether there is no table.
    pub(crate) fn is_empty(&self) -> bool {
        self.tables.is_empty()
    }

    /// Takes `samples` (each of `period` ns of CPU time a hit) as a table, if they are in
    /// time order once expanded; the weight of the stand-in sample to give fxprof for it.
    /// `Err(samples)`: not in order (fxprof writes them, in its own order).
    #[allow(clippy::type_complexity)]
    pub(crate) fn add(
        &mut self,
        samples: Vec<(u64, Option<u32>, u64)>,
        period: u64,
    ) -> Result<i32, Vec<(u64, Option<u32>, u64)>> {
        let (mut last, mut sorted) = (0, true);
        let _ = each(&samples, |at, _, _| {
            sorted &= at >= last;
            last = at;
            Ok(())
        });
        let Ok(k) = i32::try_from(self.tables.len()) else {
            return Err(samples);
        };
        if !sorted || k == i32::MAX {
            return Err(samples);
        }
        self.tables.push(Table { samples, period });
        Ok(-1 - k)
    }

    /// The table a thread's fxprof `samples` stands for: one of `length` samples whose first
    /// weight is `weight`.
    pub(crate) fn stand_in(&self, length: Option<u64>, weight: Option<i64>) -> Option<usize> {
        match (length, weight) {
            (Some(1), Some(w)) if w < 0 => {
                let k = usize::try_from(-1 - w).ok()?;
                (k < self.tables.len()).then_some(k)
            }
            _ => None,
        }
    }

    /// Writes table `k` as fxprof would have.
    pub(crate) fn write<W: ?Sized + Write>(&self, k: usize, out: &mut W) -> io::Result<()> {
        let Some(t) = self.tables.get(k) else {
            return Ok(());
        };
        let mut w = Numbers::new(out);
        w.text(b"{\"length\":")?;
        let mut length = 0u64;
        each(&t.samples, |_, _, _| {
            length += 1;
            Ok(())
        })?;
        w.integer(length)?;
        w.text(b",\"weightType\":\"samples\",\"stack\":[")?;
        each(&t.samples, |_, stack, _| match stack {
            Some(s) => w.integer(u64::from(s)),
            None => w.put(&NULL),
        })?;
        w.text(b"],\"timeDeltas\":[")?;
        // Most gaps are the period give or take a few µs: a gap's text is kept by its value.
        let mut gaps = Cache::new(GAPS);
        let mut previous = 0;
        each(&t.samples, |at, _, _| {
            let gap = at - previous;
            previous = at;
            w.put(gaps.get(gap, |buf| {
                CompactFormatter.write_f64(buf, gap as f64 / 1_000_000.0)
            })?)
        })?;
        w.text(b"],\"weight\":[")?;
        let mut weights = Cache::new(1);
        each(&t.samples, |_, _, weight| {
            let key = u64::from(weight as u32);
            w.put(weights.get(key, |buf| CompactFormatter.write_i32(buf, weight))?)
        })?;
        w.text(b"],\"threadCPUDelta\":[")?;
        let mut cpu = Cache::new(1);
        each(&t.samples, |_, _, weight| {
            let micros = u64::try_from(weight).unwrap_or(0).saturating_mul(t.period) / 1000;
            w.put(cpu.get(micros, |buf| CompactFormatter.write_u64(buf, micros))?)
        })?;
        w.text(b"]}")?;
        w.flush()
    }
}

/// Calls `f` with the time, stack and weight of each sample of `samples` once expanded: a
/// sample of `hits` ns or hits becomes [`chunks`] samples 1 ns apart (as the samples fxprof is
/// given; the usual sample is one).
fn each(
    samples: &[(u64, Option<u32>, u64)],
    mut f: impl FnMut(u64, Option<u32>, i32) -> io::Result<()>,
) -> io::Result<()> {
    for &(time, stack, hits) in samples {
        match i32::try_from(hits) {
            Ok(w) if w > 0 => f(time, stack, w)?,
            _ => {
                for (i, w) in (0..).zip(chunks(hits)) {
                    f(time.saturating_add(i), stack, w)?;
                }
            }
        }
    }
    Ok(())
}

/// `null`.
const NULL: Text = (*b"null\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 4);

/// Entries of the cache of gaps' texts (a power of two).
const GAPS: usize = 1024;

/// The longest number text kept whole: an `f64`'s shortest form is at most 24 bytes
/// (`-1.2345678901234567e-308`), an integer's 20.
const TEXT: usize = 24;

/// A number's text: its bytes, and how many of them count.
type Text = ([u8; TEXT], usize);

/// Texts of numbers by value, direct-mapped (a value's slot is the value modulo the size).
struct Cache {
    keys: Vec<Option<u64>>,
    texts: Vec<Text>,
    scratch: Vec<u8>,
}

impl Cache {
    /// A cache of `size` (a power of two) entries.
    fn new(size: usize) -> Cache {
        Cache {
            keys: vec![None; size],
            texts: vec![([0; TEXT], 0); size],
            scratch: Vec::with_capacity(TEXT),
        }
    }

    /// The text of `key`, made by `format` unless kept.
    fn get(
        &mut self,
        key: u64,
        format: impl FnOnce(&mut Vec<u8>) -> io::Result<()>,
    ) -> io::Result<&Text> {
        let slot = (key as usize) & (self.keys.len() - 1);
        let (Some(k), Some(text)) = (self.keys.get_mut(slot), self.texts.get_mut(slot)) else {
            return Err(io::Error::other("sample table: no cache slot"));
        };
        if *k != Some(key) {
            self.scratch.clear();
            format(&mut self.scratch)?;
            for (d, &b) in text.0.iter_mut().zip(&self.scratch) {
                *d = b;
            }
            text.1 = self.scratch.len().min(TEXT);
            // (Longer texts cannot be: written cut, they would be wrong; not kept, they are
            // formatted again.)
            *k = (self.scratch.len() <= TEXT).then_some(key);
        }
        Ok(text)
    }
}

/// Numbers written into a fixed buffer, a [`TEXT`]-byte copy each (no call per number),
/// handed to the output when nearly full.
struct Numbers<'w, W: ?Sized> {
    out: &'w mut W,
    buf: Vec<u8>,
    len: usize,
    /// The next number is not its column's first: a comma goes before it.
    comma: bool,
}

impl<'w, W: ?Sized + Write> Numbers<'w, W> {
    fn new(out: &'w mut W) -> Self {
        Numbers {
            out,
            buf: vec![0; BUFFER + TEXT + 1],
            len: 0,
            comma: false,
        }
    }

    /// Room for a text.
    fn room(&mut self) -> io::Result<()> {
        if self.len >= BUFFER {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out
            .write_all(self.buf.get(..self.len).unwrap_or_default())?;
        self.len = 0;
        Ok(())
    }

    /// Writes a number of its column (after a comma unless it is the first).
    fn put(&mut self, text: &Text) -> io::Result<()> {
        self.room()?;
        if self.comma {
            if let Some(b) = self.buf.get_mut(self.len) {
                *b = b',';
                self.len += 1;
            }
        }
        self.comma = true;
        let Some(dest) = self.buf.get_mut(self.len..self.len + TEXT) else {
            return Err(io::Error::other("sample table: buffer"));
        };
        dest.copy_from_slice(&text.0);
        self.len += text.1.min(TEXT);
        Ok(())
    }

    fn integer(&mut self, v: u64) -> io::Result<()> {
        let mut text = ([0; TEXT], 0);
        let digits = v.checked_ilog10().unwrap_or(0) as usize + 1;
        let mut rest = v;
        for d in text.0.iter_mut().take(digits).rev() {
            *d = b'0' + (rest % 10) as u8;
            rest /= 10;
        }
        text.1 = digits;
        self.put(&text)
    }

    /// Writes text between columns (the next number is a column's first).
    fn text(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.flush()?;
        self.comma = false;
        self.out.write_all(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fxprof_processed_profile::{
        CategoryHandle, CpuDelta, Frame, FrameFlags, FrameInfo, Profile, Timestamp,
    };

    /// fxprof's `samples` of one thread with `samples` (stack indices 0 and 1 exist), and ours.
    fn both(samples: &[(u64, Option<u32>, u64)], period: u64) -> (String, String) {
        let (mut p, th) = super::super::one_thread_profile();
        let frame = |p: &mut Profile, name: &str| {
            let s = p.intern_string(name);
            let info = FrameInfo {
                frame: Frame::Label(s),
                category_pair: CategoryHandle::OTHER.into(),
                flags: FrameFlags::empty(),
            };
            p.intern_frame(th, info)
        };
        let (f, g) = (frame(&mut p, "f"), frame(&mut p, "g"));
        let s0 = p.intern_stack(th, None, f);
        let s1 = p.intern_stack(th, Some(s0), g);
        let handles = [s0, s1];
        for &(time, stack, hits) in samples {
            let stack = stack.map(|s| handles[s as usize]);
            for (at, w) in (time..).zip(chunks(hits)) {
                let cpu = u64::try_from(w).unwrap().saturating_mul(period);
                p.add_sample(
                    th,
                    Timestamp::from_nanos_since_reference(at),
                    stack,
                    CpuDelta::from_nanos(cpu),
                    w,
                );
            }
        }
        let json = serde_json::to_string(&p).unwrap();
        let start = json.find("\"samples\":").unwrap() + "\"samples\":".len();
        let end = start + json[start..].find('}').unwrap() + 1;
        let theirs = json[start..end].to_string();

        let mut tables = SampleTables::default();
        assert_eq!(tables.add(samples.to_vec(), period), Ok(-1));
        assert_eq!(tables.stand_in(Some(1), Some(-1)), Some(0));
        let mut ours = Vec::new();
        tables.write(0, &mut ours).unwrap();
        (theirs, String::from_utf8(ours).unwrap())
    }

    #[test]
    fn a_table_is_written_as_fxprof_writes_it() {
        let samples = [
            (0, Some(0), 1),
            (100_089, Some(1), 1),
            (200_178, Some(1), 1),
            (300_001, None, 1),
            (300_001, Some(0), 3),
            (1_000_000_000_123, Some(1), 1),
            (1_000_000_100_212, Some(0), 7),
        ];
        let (theirs, ours) = both(&samples, 100_000);
        assert_eq!(ours, theirs);
        assert!(theirs.contains("\"timeDeltas\":[0.0,0.100089,"), "{theirs}");
    }

    #[test]
    fn heavy_samples_are_split_as_fxprof_is_given_them() {
        let max = i32::MAX as u64;
        let samples = [(5, Some(1), 3 * max + 12), (10_000_000_000, Some(0), 1)];
        let (theirs, ours) = both(&samples, 1);
        assert_eq!(ours, theirs);
        assert!(theirs.starts_with("{\"length\":5,"), "{theirs}");
    }

    #[test]
    fn many_samples_fill_the_buffer_more_than_once() {
        let samples: Vec<_> = (0..40_000u64)
            .map(|i| (i * 100_000 + i % 97, Some((i % 2) as u32), 1 + i % 3))
            .collect();
        let (theirs, ours) = both(&samples, 250_000);
        assert!(ours.len() > 2 * BUFFER);
        assert_eq!(ours, theirs);
    }

    #[test]
    fn samples_out_of_time_order_stay_fxprof_s() {
        let mut tables = SampleTables::default();
        let late_first = vec![(10, Some(0), 1), (5, Some(0), 1)];
        assert!(tables.add(late_first, 1).is_err());
        // A heavy sample's split reaches past the next one's time.
        let overlapping = vec![(10, Some(0), i32::MAX as u64 * 3), (11, Some(0), 1)];
        assert!(tables.add(overlapping, 1).is_err());
        assert!(tables.is_empty());
        assert_eq!(tables.stand_in(Some(1), Some(-1)), None);
    }

    #[test]
    fn only_a_stand_in_names_a_table() {
        let mut tables = SampleTables::default();
        assert_eq!(tables.add(vec![(0, None, 1)], 1), Ok(-1));
        assert_eq!(tables.add(vec![(0, None, 1)], 1), Ok(-2));
        assert_eq!(tables.stand_in(Some(1), Some(-2)), Some(1));
        assert_eq!(tables.stand_in(Some(1), Some(-3)), None, "no such table");
        assert_eq!(tables.stand_in(Some(2), Some(-1)), None, "two samples");
        assert_eq!(tables.stand_in(Some(1), Some(1)), None, "a real weight");
        assert_eq!(tables.stand_in(None, Some(-1)), None);
    }
}
