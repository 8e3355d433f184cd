//! The read layer: a perf.data file in memory ([`PerfData`]) or a pipe-mode stream
//! ([`PerfStream`]), their metadata ([`Meta`]: [`Header`], [`Attr`]s, [`Features`]) and their
//! time-ordered [`Events`].
//!
//! Parsing is linux-perf-data's (header, attrs, feature sections, record sorting, zstd) and
//! linux-perf-event-reader's (the fields of each record but SAMPLE, whose body `sample.rs`
//! reads in place, in linux-perf-event-reader's order). profkit adds what they lack for untrusted
//! input: the header and every size it gives are checked before linux-perf-data sees them,
//! the record stream is framed first so a cut or corrupt tail ends it cleanly (see `frame.rs`
//! and `header.rs`), and each record body is guarded where linux-perf-event-reader could panic.
//! A whole file-mode recording can instead be read in one pass ([`PerfData::parse_one_pass`],
//! `direct.rs`): framed, sorted and handed on by profkit's own reader, with linux-perf-data's
//! order and the check's ends.

mod ahead;
pub(crate) mod bytes;
mod direct;
mod events;
pub(crate) mod frame;
pub(crate) mod header;
mod meta;
mod records;
mod sample;

use std::io::{self, Read, Seek, SeekFrom};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use linux_perf_data::PerfFileReader;

pub use bytes::Endian;
pub use events::{Events, Outcome};
pub use frame::{FrameEnd, FrameLog, MAX_WINDOW_INFLATED, MAX_WINDOW_RECORDS};
pub use header::{FeatureSection, Header, Mode, Section};
pub use meta::{section_bytes, Attr, BuildId, ClockData, Features, Meta};
pub use records::{
    jitdump_file_pid, misc_is_kernel, Callchain, Comm, Context, Event, EventData, Frame, Frames,
    Lost, Mmap, MmapBuildId, Sample, SplitChain, Task, UserRegs, UserStack,
};

use crate::error::{Error, ErrorKind, Result};
use crate::raw::PIPE_HEADER_SIZE;
use events::Source;
use frame::Framer;
use header::{Overlay, Plan};

/// The input linux-perf-data reads for a file in memory (opaque).
pub struct SliceSource<'a>(SliceInner<'a>);

enum SliceInner<'a> {
    File(Overlay<'a>),
    Pipe(Framer<&'a [u8]>),
}

impl Read for SliceSource<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &mut self.0 {
            SliceInner::File(o) => o.read(buf),
            SliceInner::Pipe(f) => f.read(buf),
        }
    }
}

impl Seek for SliceSource<'_> {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        match &mut self.0 {
            SliceInner::File(o) => o.seek(pos),
            SliceInner::Pipe(_) => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "a pipe-mode stream does not seek",
            )),
        }
    }
}

/// The input linux-perf-data reads for a stream (opaque).
pub struct StreamSource<R>(Framer<R>);

impl<R: Read> Read for StreamSource<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

fn lpd_error(e: linux_perf_data::Error) -> Error {
    Error::unlocated(ErrorKind::Malformed, None, format!("linux-perf-data: {e}"))
}

/// linux-perf-data's reader over a file in memory, and the framing log it fills.
type Opened<'a> = (
    linux_perf_data::PerfFile,
    (
        linux_perf_data::PerfRecordIter<SliceSource<'a>>,
        Arc<Mutex<FrameLog>>,
        Option<Arc<AtomicU64>>,
    ),
);

/// A perf.data file in memory (file or pipe mode), checked and ready to walk.
pub struct PerfData<'a> {
    data: &'a [u8],
    plan: Plan,
    meta: Meta,
    /// The records' framing is not checked yet: [`PerfData::with_events_read_ahead`] checks
    /// it as it reads (`direct.rs`), the other walks check it first.
    one_pass: bool,
}

impl<'a> PerfData<'a> {
    /// Checks the header of `data` and reads its attrs and features. The records are read by
    /// [`PerfData::events`].
    pub fn parse(data: &'a [u8]) -> Result<PerfData<'a>> {
        Self::parse_releasing(data, None)
    }

    /// [`PerfData::parse`], telling `release` the byte ranges of `data` the check of the
    /// records' framing has walked past (every 8 MiB), so that a mapped input can drop their
    /// pages behind it and the check does not make the whole file resident.
    pub fn parse_releasing(
        data: &'a [u8],
        release: Option<&(dyn Fn(u64, u64) + Sync)>,
    ) -> Result<PerfData<'a>> {
        Self::of_plan(data, header::plan(data, release)?)
    }

    /// [`PerfData::parse_overlapped`] without a framing check before the walk where the file
    /// allows it (its header says where the records end; no COMPRESSED or simpleperf
    /// records): [`PerfData::with_events_read_ahead`] then checks each record's framing as it
    /// reads it, in one pass over the file (a cut or corrupt record ends the events as the
    /// check would have ended them), and the markers of jitdumps come with the events
    /// ([`Events::jitdump_markers_ahead`]). `meanwhile` runs first, with the metadata. Other
    /// files are checked first, as by [`PerfData::parse_overlapped`].
    pub fn parse_one_pass<T>(
        data: &'a [u8],
        release: Option<&(dyn Fn(u64, u64) + Sync)>,
        meanwhile: impl FnOnce(&Meta) -> T,
    ) -> Result<(PerfData<'a>, T)> {
        match header::begin(data)? {
            header::Begun::File(early) if early.one_pass() => {
                let mut pd = Self::of_plan(data, early.assuming_clean_records())?;
                pd.one_pass = true;
                let t = meanwhile(pd.meta());
                Ok((pd, t))
            }
            _ => Self::parse_overlapped(data, release, meanwhile),
        }
    }

    /// [`PerfData::parse_releasing`], calling `meanwhile` with the recording's metadata while
    /// the check of the records' framing walks them on another thread, so that start-up work
    /// that needs only the metadata (opening binaries, reading kernel symbols) overlaps the
    /// walk. When the header does not say where the data ends (a killed or cut recording),
    /// the check comes first, as the metadata depends on it.
    pub fn parse_overlapped<T>(
        data: &'a [u8],
        release: Option<&(dyn Fn(u64, u64) + Sync)>,
        meanwhile: impl FnOnce(&Meta) -> T,
    ) -> Result<(PerfData<'a>, T)> {
        let early = match header::begin(data)? {
            header::Begun::File(early) if early.complete() => early,
            _ => {
                let pd = Self::parse_releasing(data, release)?;
                let t = meanwhile(pd.meta());
                return Ok((pd, t));
            }
        };
        std::thread::scope(|scope| {
            let walker = early.clone();
            let scan = std::thread::Builder::new()
                .name("perf-scan".into())
                .spawn_scoped(scope, move || walker.scan(data, release));
            let join = |scan: std::thread::ScopedJoinHandle<'_, FrameLog>| match scan.join() {
                Ok(frames) => frames,
                Err(panic) => std::panic::resume_unwind(panic),
            };
            match (scan, Self::of_plan(data, early.assuming_clean_records())) {
                // The metadata do not depend on the walk's findings when the header is complete.
                (Ok(scan), Ok(before)) => {
                    let t = meanwhile(before.meta());
                    let pd = Self::of_plan(data, early.finish(join(scan)))?;
                    Ok((pd, t))
                }
                (scan, _) => {
                    let frames = match scan {
                        Ok(scan) => join(scan),
                        // No second thread: check here.
                        Err(_) => early.scan(data, release),
                    };
                    let pd = Self::of_plan(data, early.finish(frames))?;
                    let t = meanwhile(pd.meta());
                    Ok((pd, t))
                }
            }
        })
    }

    /// The recording as `plan` makes linux-perf-data see it, with its metadata read.
    fn of_plan(data: &'a [u8], plan: Plan) -> Result<PerfData<'a>> {
        let mut pd = PerfData {
            data,
            meta: Meta {
                header: plan.header.clone(),
                attrs: Vec::new(),
                features: Features::default(),
                problems: plan.problems.clone(),
            },
            plan,
            one_pass: false,
        };
        let (file, _) = pd.open()?;
        pd.meta = Meta::new(pd.plan.header.clone(), &file, pd.plan.problems.clone());
        Ok(pd)
    }

    fn open(&self) -> Result<Opened<'a>> {
        let e = self.plan.header.endian;
        match self.plan.header.mode {
            Mode::File => {
                let log = Arc::new(Mutex::new(self.plan.frames.clone()));
                let progress = Arc::new(AtomicU64::new(0));
                let src = SliceSource(SliceInner::File(Overlay::new(
                    self.data,
                    self.plan.patches.clone(),
                    progress.clone(),
                )));
                let r = PerfFileReader::parse_file(src).map_err(lpd_error)?;
                // Parsing read the header and the feature sections at the end; from here on
                // the records are read in file order.
                progress.store(0, Ordering::Relaxed);
                Ok((r.perf_file, (r.record_iter, log, Some(progress))))
            }
            Mode::Pipe => {
                let log = Arc::new(Mutex::new(FrameLog::default()));
                let head = self
                    .data
                    .get(..PIPE_HEADER_SIZE as usize)
                    .unwrap_or_default();
                let rest = self
                    .data
                    .get(PIPE_HEADER_SIZE as usize..)
                    .unwrap_or_default();
                let framer = Framer::new(
                    rest,
                    e,
                    head.to_vec(),
                    PIPE_HEADER_SIZE,
                    Some(self.data.len() as u64),
                    log.clone(),
                );
                let r = PerfFileReader::parse_pipe(SliceSource(SliceInner::Pipe(framer)))
                    .map_err(|err| pipe_open_error(err, &log))?;
                Ok((r.perf_file, (r.record_iter, log, None)))
            }
        }
    }

    /// Whether [`PerfData::with_events_read_ahead`] checks the records' framing as it reads
    /// them (see [`PerfData::parse_one_pass`]): no walk has read the records before.
    pub fn one_pass(&self) -> bool {
        self.one_pass
    }

    /// The metadata: header, attrs, features, header problems.
    pub fn meta(&self) -> &Meta {
        &self.meta
    }

    /// The file header.
    pub fn header(&self) -> &Header {
        &self.meta.header
    }

    /// The attrs (events), in the file's order.
    pub fn attrs(&self) -> &[Attr] {
        &self.meta.attrs
    }

    /// The decoded feature sections.
    pub fn features(&self) -> &Features {
        &self.meta.features
    }

    /// The jitdump marker mmaps (`(pid, path)`) the check of the file's framing came across,
    /// before any event is read (a file's first [`frame::MAX_MARKERS`], inside COMPRESSED
    /// records too; none for pipe mode): where a walk can start loading dumps early.
    pub fn jitdump_markers(&self) -> &[(u32, Vec<u8>)] {
        &self.plan.frames.jitdump_markers
    }

    /// The bytes it reads.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// A fresh walk over the events in time order.
    pub fn events(&self) -> Result<Events<SliceSource<'a>>> {
        if self.one_pass {
            // linux-perf-data reads only checked records.
            return Self::of_plan(self.data, header::plan(self.data, None)?)?.events();
        }
        let (file, (iter, log, progress)) = self.open()?;
        Ok(Events::new(
            Source::Here(Box::new(iter), Box::new(file)),
            self.meta.header.endian,
            &self.meta.attrs,
            log,
            progress,
        ))
    }

    /// Calls `walk` with the events in time order, as [`PerfData::events`] gives them, while a
    /// second thread reads the records ahead (linux-perf-data's reading, inflating and
    /// sorting; see `ahead.rs`). The walk may stop early; the thread is done when this returns.
    /// The reading thread tells `release` the byte ranges of a file it has read (every 8 MiB:
    /// the events are copies), so that a mapped input can drop their pages behind it; where no
    /// second thread can start, the records are read on the walk's thread and none are told.
    pub fn with_events_read_ahead<T>(
        &self,
        release: Option<&(dyn Fn(u64, u64) + Sync)>,
        walk: impl FnOnce(&mut Events<SliceSource<'a>>) -> T,
    ) -> Result<T> {
        let (file, (iter, log, progress)) = self.open()?;
        let endian = self.meta.header.endian;
        let attrs = &self.meta.attrs;
        let direct = match (self.one_pass, &progress) {
            (true, Some(progress)) => {
                let d = self.meta.header.data;
                let direct = direct::Direct::new(
                    self.data,
                    d.offset,
                    d.offset.saturating_add(d.size),
                    endian,
                    &file,
                    log.clone(),
                    progress.clone(),
                );
                // linux-perf-data refuses such attrs when it opens the file: not reached.
                Some(direct.ok_or_else(|| {
                    Error::unlocated(
                        ErrorKind::Malformed,
                        None,
                        "several attrs, not all with IDENTIFIER: a record's attr is unknown",
                    )
                })?)
            }
            _ => None,
        };
        let release = release
            .zip(progress.clone())
            .map(|(r, p)| ahead::Release::new(r, p));
        std::thread::scope(|scope| {
            let (ahead, reader) = ahead::channel_pair();
            let thread = std::thread::Builder::new()
                .name("perf-read".into())
                .spawn_scoped(scope, move || match direct {
                    Some(direct) => reader.run(direct, release),
                    None => reader.run(ahead::Lpd(iter, file), release),
                });
            let mut events = match thread {
                Ok(_) => Events::new(Source::Ahead(ahead), endian, attrs, log, progress),
                // No second thread: read here.
                Err(_) => self.events()?,
            };
            let out = walk(&mut events);
            // Dropping the walk's side stops a reader still going. A reader that panicked
            // ended the walk with an error; it is not raised again here.
            drop(events);
            if let Ok(t) = thread {
                let _ = t.join();
            }
            Ok(out)
        })
    }

    /// linux-perf-data's view of the file (feature sections profkit does not decode).
    pub fn perf_file(&self) -> Result<linux_perf_data::PerfFile> {
        Ok(self.open()?.0)
    }
}

/// A stream that ends inside its metadata records has nothing to read: say where.
fn pipe_open_error(err: linux_perf_data::Error, log: &Arc<Mutex<FrameLog>>) -> Error {
    match log.lock().map(|l| l.end.clone()) {
        Ok(FrameEnd::Corrupt(e)) => e,
        Ok(FrameEnd::Truncated(t)) => Error::new(
            ErrorKind::Truncated,
            t.offset,
            t.record,
            format!(
                "the stream ends inside its attr and feature records: {}",
                t.reason
            ),
        ),
        _ => lpd_error(err),
    }
}

/// A pipe-mode perf.data stream (`perf record -o - | …`), read as it arrives.
pub struct PerfStream<R: Read> {
    meta: Meta,
    events: Events<StreamSource<R>>,
}

impl<R: Read> PerfStream<R> {
    /// Reads the pipe header and the attr and feature records at the start of `reader`.
    /// A file-mode perf.data needs seeking: read it into memory and use [`PerfData`].
    pub fn open(mut reader: R) -> Result<PerfStream<R>> {
        let mut head = [0u8; PIPE_HEADER_SIZE as usize];
        let mut got = 0;
        while got < head.len() {
            match reader.read(head.get_mut(got..).unwrap_or_default()) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::header(got as u64, format!("reading: {e}"))),
            }
        }
        let (endian, mode, _) = header::detect(head.get(..got).unwrap_or_default())?;
        if mode != Mode::Pipe {
            return Err(Error::header(
                8,
                "a file-mode perf.data cannot be read as a stream: read it into memory",
            ));
        }
        let log = Arc::new(Mutex::new(FrameLog::default()));
        let framer = Framer::new(
            reader,
            endian,
            head.to_vec(),
            PIPE_HEADER_SIZE,
            None,
            log.clone(),
        );
        let r = PerfFileReader::parse_pipe(StreamSource(framer))
            .map_err(|err| pipe_open_error(err, &log))?;
        let header = Header {
            mode: Mode::Pipe,
            endian,
            header_size: PIPE_HEADER_SIZE,
            attr_size: 0,
            attrs: Section::default(),
            data: Section {
                offset: PIPE_HEADER_SIZE,
                size: 0,
            },
            event_types: Section::default(),
            feature_bits: [0; 4],
            feature_sections: Vec::new(),
        };
        let meta = Meta::new(header, &r.perf_file, Vec::new());
        let events = Events::new(
            Source::Here(Box::new(r.record_iter), Box::new(r.perf_file)),
            endian,
            &meta.attrs,
            log,
            None,
        );
        Ok(PerfStream { meta, events })
    }

    /// The metadata from the stream's attr and feature records.
    pub fn meta(&self) -> &Meta {
        &self.meta
    }

    /// The events, in time order, as the stream delivers them.
    pub fn events(&mut self) -> &mut Events<StreamSource<R>> {
        &mut self.events
    }

    /// Metadata and events apart (to walk the events while looking at the attrs).
    pub fn split(&mut self) -> (&Meta, &mut Events<StreamSource<R>>) {
        (&self.meta, &mut self.events)
    }
}
