//! Reading ahead: linux-perf-data's record iterator (reading, zstd inflating, sorting each
//! FINISHED_ROUND window) runs on a thread of its own and hands the records, in time order, to
//! the walk in batches. The walk's thread then only decodes and uses them: on a file of deep
//! callchains, reading and sorting is a third of what one thread did per record.
//!
//! A batch holds up to [`BATCH_RECORDS`] records (or about [`BATCH_BYTES`] of bodies), copied
//! into one buffer; at most [`IN_FLIGHT`] batches wait (the reader is woken once per run of
//! them: [`profkit_common::handoff`]), and emptied batches go back to the
//! reader, so memory stays bounded whatever the file's size. The last batch carries how the
//! reader ended (the end of the records, or linux-perf-data's error). When the walk stops
//! early its side of the channel is dropped, and the reader stops at its next batch.
//!
//! The bodies are copies, so the file's bytes before the reader's position are not read again:
//! the reader tells its input so ([`Release`]), in steps of [`Release::STEP`], on its own
//! thread (`madvise` of a mapped file's pages was 2–3% of the walk's thread).

use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;

use profkit_common::handoff::{self, Wake};

use linux_perf_data::linux_perf_event_reader::{RawData, RawEventRecord, RecordParseInfo};
use linux_perf_data::{PerfFile, PerfFileRecord, PerfRecordIter};

use crate::raw::RecordType;

/// Records per batch.
pub(crate) const BATCH_RECORDS: usize = 1024;
/// A batch is sent once its bodies hold this many bytes.
pub(crate) const BATCH_BYTES: usize = 1 << 20;
/// Batches waiting for the walk at most.
pub(crate) const IN_FLIGHT: usize = 6;
/// The reader, faster than the walk, waits on a full queue until the walk has taken all but
/// this many (so it is woken once per four batches, not at each; see
/// [`profkit_common::handoff`]).
const RESUME_AT: usize = 2;

/// A record as the reader left it: where its body is in the batch, and what decoding needs.
struct Held {
    kind: HeldKind,
    misc: u16,
    body: (usize, usize),
}

enum HeldKind {
    /// A kernel record of attr `attr_index`.
    Event {
        attr_index: usize,
        record_type: u32,
        parse_info: RecordParseInfo,
    },
    /// A user record (perf's own: build ids, feature records in pipe mode …).
    User { record_type: u32 },
}

#[derive(Default)]
struct Batch {
    held: Vec<Held>,
    bytes: Vec<u8>,
    /// Jitdump markers the reader came across before this batch's records (one-pass reader).
    markers: Vec<(u32, Vec<u8>)>,
    /// The last batch: how reading ended.
    end: Option<Result<(), linux_perf_data::Error>>,
}

/// One record, borrowed from the reader (on this thread) or from a batch.
pub(crate) enum Rec<'r> {
    /// A kernel record.
    Event {
        attr_index: usize,
        record: RawEventRecord<'r>,
    },
    /// A user record.
    User {
        record_type: RecordType,
        misc: u16,
        body: &'r [u8],
    },
}

impl<'r> Rec<'r> {
    /// linux-perf-data's record as a [`Rec`].
    pub(crate) fn of(record: PerfFileRecord<'r>) -> Rec<'r> {
        match record {
            PerfFileRecord::EventRecord { attr_index, record } => Rec::Event { attr_index, record },
            PerfFileRecord::UserRecord(u) => Rec::User {
                record_type: RecordType(u.record_type.record_type().0),
                misc: u.misc,
                body: single(u.data),
            },
        }
    }
}

/// The bytes of a record body linux-perf-data copied into one buffer.
pub(crate) fn single(r: RawData<'_>) -> &[u8] {
    match r {
        RawData::Single(s) => s,
        RawData::Split(a, _) => a,
    }
}

/// Where the reader takes records from, in time order.
pub(crate) trait Records {
    /// The next record; `None` at the end.
    fn next_record(&mut self) -> Result<Option<Rec<'_>>, linux_perf_data::Error>;
    /// Jitdump markers read since the last call, ahead of the records handed on.
    fn take_markers(&mut self, _into: &mut Vec<(u32, Vec<u8>)>) {}
}

/// linux-perf-data's iterator over a checked input.
pub(crate) struct Lpd<S: Read>(pub PerfRecordIter<S>, pub PerfFile);

impl<S: Read> Records for Lpd<S> {
    fn next_record(&mut self) -> Result<Option<Rec<'_>>, linux_perf_data::Error> {
        Ok(self.0.next_record(&mut self.1)?.map(Rec::of))
    }
}

impl Records for crate::read::direct::Direct<'_> {
    fn next_record(&mut self) -> Result<Option<Rec<'_>>, linux_perf_data::Error> {
        Ok(crate::read::direct::Direct::next_record(self))
    }

    fn take_markers(&mut self, into: &mut Vec<(u32, Vec<u8>)>) {
        crate::read::direct::Direct::take_markers(self, into);
    }
}

/// The walk's side: the batch being used and the channel the next come through.
pub(crate) struct Ahead {
    batches: handoff::Receiver<Batch>,
    spent: Sender<Batch>,
    current: Batch,
    next: usize,
    /// Markers of the batches received, not yet taken.
    markers: Vec<(u32, Vec<u8>)>,
}

/// The reader's side, to run on its thread with [`Reader::run`].
pub(crate) struct Reader {
    batches: handoff::Sender<Batch>,
    spent: Receiver<Batch>,
}

/// A connected pair.
pub(crate) fn channel_pair() -> (Ahead, Reader) {
    let (tx, rx) = handoff::bounded(
        IN_FLIGHT,
        Wake {
            sender_at: RESUME_AT,
            // The walk is the slower side: it goes on as soon as there is a batch.
            receiver_at: 1,
        },
    );
    let (spent_tx, spent_rx) = channel();
    (
        Ahead {
            batches: rx,
            spent: spent_tx,
            current: Batch::default(),
            next: 0,
            markers: Vec::new(),
        },
        Reader {
            batches: tx,
            spent: spent_rx,
        },
    )
}

impl Reader {
    /// Reads every record of `records` into batches until the end, an error, or the walk's
    /// side is gone, releasing the bytes it has read as it goes (`release`).
    pub(crate) fn run(self, mut records: impl Records, mut release: Option<Release<'_>>) {
        let mut batch = Batch::default();
        loop {
            let end = match records.next_record() {
                Ok(Some(record)) => {
                    batch.push(record);
                    // Read before this record is handed on: the walk takes them when it
                    // reaches the batch, before its first record.
                    records.take_markers(&mut batch.markers);
                    if batch.held.len() < BATCH_RECORDS && batch.bytes.len() < BATCH_BYTES {
                        continue;
                    }
                    None
                }
                Ok(None) => Some(Ok(())),
                Err(e) => Some(Err(e)),
            };
            let last = end.is_some();
            if let Some(release) = &mut release {
                release.reached();
            }
            batch.end = end;
            let next = self.spent.try_recv().unwrap_or_default();
            if self
                .batches
                .send(std::mem::replace(&mut batch, next))
                .is_err()
                || last
            {
                return;
            }
        }
    }
}

/// Tells the input which of its bytes the reader has left behind (see the
/// [module docs](self)).
pub(crate) struct Release<'d> {
    release: &'d (dyn Fn(u64, u64) + Sync),
    /// The offset below which every record is read (copied).
    progress: Arc<AtomicU64>,
    done: u64,
}

impl<'d> Release<'d> {
    /// Bytes released at once at least.
    const STEP: u64 = 8 << 20;

    pub(crate) fn new(release: &'d (dyn Fn(u64, u64) + Sync), progress: Arc<AtomicU64>) -> Self {
        Release {
            release,
            progress,
            done: 0,
        }
    }

    fn reached(&mut self) {
        let upto = self.progress.load(Ordering::Relaxed);
        if upto >= self.done + Self::STEP {
            (self.release)(self.done, upto);
            self.done = upto;
        }
    }
}

impl Batch {
    fn push(&mut self, rec: Rec<'_>) {
        let start = self.bytes.len();
        let (kind, misc) = match rec {
            Rec::Event { attr_index, record } => {
                self.bytes.extend_from_slice(single(record.data));
                let kind = HeldKind::Event {
                    attr_index,
                    record_type: record.record_type.0,
                    parse_info: record.parse_info,
                };
                (kind, record.misc)
            }
            Rec::User {
                record_type,
                misc,
                body,
            } => {
                self.bytes.extend_from_slice(body);
                let kind = HeldKind::User {
                    record_type: record_type.0,
                };
                (kind, misc)
            }
        };
        self.held.push(Held {
            kind,
            misc,
            body: (start, self.bytes.len()),
        });
    }

    fn clear(&mut self) {
        self.held.clear();
        self.bytes.clear();
        self.markers.clear();
        self.end = None;
    }
}

impl Ahead {
    /// The jitdump markers the reader came across before the next record (one-pass reader
    /// only): waits for the next batch when the current one is used up.
    pub(crate) fn markers_before_next(&mut self) -> Vec<(u32, Vec<u8>)> {
        if self.next != usize::MAX
            && self.next >= self.current.held.len()
            && self.current.end.is_none()
        {
            if let Some(batch) = self.batches.recv() {
                let mut spent = std::mem::replace(&mut self.current, batch);
                self.markers.append(&mut self.current.markers);
                spent.clear();
                let _ = self.spent.send(spent);
                self.next = 0;
            }
        }
        std::mem::take(&mut self.markers)
    }

    /// The next record in time order; `None` at the end; an error ends the walk.
    pub(crate) fn next_record(&mut self) -> Result<Option<Rec<'_>>, linux_perf_data::Error> {
        while self.next >= self.current.held.len() {
            if let Some(end) = self.current.end.take() {
                self.next = usize::MAX;
                return end.map(|()| None);
            }
            if self.next == usize::MAX {
                return Ok(None);
            }
            let Some(batch) = self.batches.recv() else {
                // The reader is gone without an end: it panicked.
                self.next = usize::MAX;
                return Err(linux_perf_data::Error::IoError(std::io::Error::other(
                    "the read-ahead thread stopped",
                )));
            };
            let mut spent = std::mem::replace(&mut self.current, batch);
            self.markers.append(&mut self.current.markers);
            spent.clear();
            let _ = self.spent.send(spent);
            self.next = 0;
        }
        let Some(h) = self.current.held.get(self.next) else {
            return Ok(None);
        };
        self.next += 1;
        let body = self
            .current
            .bytes
            .get(h.body.0..h.body.1)
            .unwrap_or_default();
        Ok(Some(match h.kind {
            HeldKind::Event {
                attr_index,
                record_type,
                parse_info,
            } => Rec::Event {
                attr_index,
                record: RawEventRecord {
                    record_type: linux_perf_data::linux_perf_event_reader::RecordType(record_type),
                    misc: h.misc,
                    data: RawData::Single(body),
                    parse_info,
                },
            },
            HeldKind::User { record_type } => Rec::User {
                record_type: RecordType(record_type),
                misc: h.misc,
                body,
            },
        }))
    }
}
