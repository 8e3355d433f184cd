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

use linux_perf_data::{PerfFile, PerfRecordIter};

use crate::error::{Error, Truncation};
use crate::raw::RecordType;
use crate::read::ahead::{single, Ahead, Rec};
use crate::read::bytes::Endian;
use crate::read::frame::{FrameEnd, FrameLog};
use crate::read::meta::{Attr, BuildId};

use crate::read::records::*;
use crate::read::sample::{decode, SampleLayout};

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

    /// The jitdump marker mmaps (`(pid, path)`) the one-pass reader came across since the
    /// last call, before the next event is delivered: a walk can start loading their dumps
    /// before it reaches them (at least one FINISHED_ROUND window ahead). Empty for the
    /// other readers: their markers are [`crate::PerfData::jitdump_markers`]. May wait for
    /// the reader, as [`Events::next_event`] would.
    pub fn jitdump_markers_ahead(&mut self) -> Vec<(u32, Vec<u8>)> {
        match &mut self.source {
            Source::Ahead(ahead) if !self.done => ahead.markers_before_next(),
            _ => Vec::new(),
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
