//! [`RecordSource`]: one way to walk a jitdump's records, whether the file is in memory
//! ([`SliceRecords`], from [`JitDump::source`]) or read as a stream ([`StreamRecords`]: a gzip
//! file, a pipe) — so `summary`, `validate` and `dump` are written once.
//!
//! [`StreamRecords`] holds one record at a time: it reads the 16-byte record header, then
//! `total_size` bytes (as they arrive: nothing is allocated from the size field before the bytes
//! are there), and hands them to the slice reader ([`Records`]), so both paths share one record
//! parser and say the same things in the same words. A stream that ends inside a record is cut
//! like a file that does ([`RecordSource::truncation`]); a stream that *fails* (a cut or corrupt
//! gzip stream) is cut where it failed, and the reason says why. Offsets are offsets in the
//! (decompressed) stream.

use std::io::{self, BufRead, Read};

use super::header::{Header, JitDump};
use super::records::{RawRecord, Records};
use crate::error::{Error, Result, Truncation};
use crate::raw::{Endian, RecordType, FILE_HEADER_SIZE, MAGIC, RECORD_HEADER_SIZE};

/// The largest record (or file header) a [`StreamRecords`] holds in memory: 256 MiB. Real
/// records are a few KiB (a LOAD with its code, a line table); a larger `total_size` in a stream
/// is an error at that record (the file can still be read whole once decompressed).
pub const MAX_STREAM_RECORD: u32 = 256 << 20;

/// A jitdump's header and records, in file order, from memory or from a stream.
pub trait RecordSource {
    /// The file header.
    fn header(&self) -> Header<'_>;

    /// The next complete record. `None` at the end, at a cut ([`RecordSource::truncation`] then
    /// says where) and after an error; an `Err` (a record whose `total_size` cannot be right)
    /// ends the walk.
    fn next(&mut self) -> Option<Result<RawRecord<'_>>>;

    /// Where the input is cut, once the walk has reached the cut.
    fn truncation(&self) -> Option<&Truncation>;
}

/// The records of a [`JitDump`] in memory, as a [`RecordSource`].
#[derive(Debug, Clone)]
pub struct SliceRecords<'a> {
    header: Header<'a>,
    records: Records<'a>,
}

impl<'a> JitDump<'a> {
    /// The header and records as a [`RecordSource`].
    pub fn source(&self) -> SliceRecords<'a> {
        SliceRecords {
            header: *self.header(),
            records: self.records(),
        }
    }
}

impl RecordSource for SliceRecords<'_> {
    fn header(&self) -> Header<'_> {
        self.header
    }

    fn next(&mut self) -> Option<Result<RawRecord<'_>>> {
        self.records.next()
    }

    fn truncation(&self) -> Option<&Truncation> {
        self.records.truncation()
    }
}

/// Reads until `buf` is full, the stream ends or fails: the bytes read, and the failure.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> (usize, Option<io::Error>) {
    let mut n = 0;
    while let Some(rest) = buf.get_mut(n..).filter(|r| !r.is_empty()) {
        match r.read(rest) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return (n, Some(e)),
        }
    }
    (n, None)
}

/// Appends up to `n` bytes of `r` to `buf` as they arrive (never reserving `n` up front): the
/// failure of the stream, if it failed.
fn append(r: &mut impl Read, buf: &mut Vec<u8>, n: u64) -> Option<io::Error> {
    r.take(n).read_to_end(buf).err()
}

/// Reads and drops up to `n` bytes: how many were missing (the stream ended or failed first),
/// and the failure.
fn skip(r: &mut impl BufRead, mut n: u64) -> (u64, Option<io::Error>) {
    while n > 0 {
        let got = match r.fill_buf() {
            Ok([]) => break,
            Ok(b) => b.len().min(usize::try_from(n).unwrap_or(usize::MAX)),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return (n, Some(e)),
        };
        r.consume(got);
        n -= got as u64;
    }
    (n, None)
}

/// `reason`, with the stream's failure when there was one.
fn with_failure(reason: String, failed: Option<&io::Error>) -> String {
    match failed {
        Some(e) => format!("{reason} (the stream fails: {e})"),
        None => reason,
    }
}

/// A jitdump read from a stream, one record at a time (see the [module docs](self)).
#[derive(Debug)]
pub struct StreamRecords<R> {
    r: R,
    /// The header's fields (its `extra` bytes are in `extra`).
    header: Header<'static>,
    extra: Vec<u8>,
    /// The current record's bytes (header and body).
    buf: Vec<u8>,
    /// Offset of the next record.
    pos: u64,
    index: usize,
    done: bool,
    truncation: Option<Truncation>,
}

impl<R: BufRead> StreamRecords<R> {
    /// Reads and checks the file header. The errors are [`Header::parse`]'s on the bytes the
    /// stream has (a stream that fails inside the header also says how it fails).
    pub fn new(mut r: R) -> Result<StreamRecords<R>> {
        let mut head = vec![0u8; FILE_HEADER_SIZE];
        let (n, failed) = read_full(&mut r, &mut head);
        head.truncate(n);
        let fail = |mut e: Error| {
            e.message = with_failure(e.message.clone(), failed.as_ref());
            e
        };
        let endian = match (n, head.get(..4)) {
            (FILE_HEADER_SIZE, Some(m)) if m == MAGIC.to_le_bytes() => Endian::Little,
            (FILE_HEADER_SIZE, Some(m)) if m == MAGIC.to_be_bytes() => Endian::Big,
            // Header::parse says what is missing or wrong
            _ => {
                return Err(fail(Header::parse(&head).err().unwrap_or_else(|| {
                    Error::header(0, format!("file header needs {FILE_HEADER_SIZE} bytes"))
                })))
            }
        };
        let total = super::bytes::u32_at(&head, 8, endian).unwrap_or(0);
        if total > MAX_STREAM_RECORD {
            return Err(Error::header(
                8,
                format!(
                    "header total_size {total} is over the {MAX_STREAM_RECORD} bytes a streamed header may have"
                ),
            ));
        }
        let failed = append(
            &mut r,
            &mut head,
            u64::from(total).saturating_sub(FILE_HEADER_SIZE as u64),
        );
        let h = Header::parse(&head).map_err(|mut e| {
            e.message = with_failure(e.message.clone(), failed.as_ref());
            e
        })?;
        let header = Header { extra: &[], ..h };
        let extra = h.extra.to_vec();
        Ok(StreamRecords {
            r,
            header,
            extra,
            buf: Vec::with_capacity(64 << 10),
            pos: u64::from(total),
            index: 0,
            done: false,
            truncation: None,
        })
    }

    /// Offset of the next record in the (decompressed) stream.
    pub fn offset(&self) -> u64 {
        self.pos
    }

    /// Stops at a cut at the current record.
    #[cold]
    fn cut(&mut self, reason: String) {
        self.done = true;
        self.truncation = Some(Truncation::new(self.pos, Some(self.index as u64), reason));
    }
}

impl<R: BufRead> RecordSource for StreamRecords<R> {
    fn header(&self) -> Header<'_> {
        Header {
            extra: &self.extra,
            ..self.header
        }
    }

    fn next(&mut self) -> Option<Result<RawRecord<'_>>> {
        if self.done {
            return None;
        }
        let mut head = [0u8; RECORD_HEADER_SIZE];
        let (n, failed) = read_full(&mut self.r, &mut head);
        if n == 0 && failed.is_none() {
            self.done = true;
            return None;
        }
        if n < RECORD_HEADER_SIZE {
            self.cut(with_failure(
                format!("record header needs {RECORD_HEADER_SIZE} bytes, {n} remain"),
                failed.as_ref(),
            ));
            return None;
        }
        let endian = self.header.endian;
        let id = super::bytes::u32_at(&head, 0, endian).unwrap_or(0);
        let total_size = super::bytes::u32_at(&head, 4, endian).unwrap_or(0);
        if total_size > MAX_STREAM_RECORD {
            // Too big to hold; but if the stream ends inside it, the file is cut there, as
            // the slice reader says: count what remains (without keeping it) to tell.
            let body = u64::from(total_size) - RECORD_HEADER_SIZE as u64;
            let (left, failed) = skip(&mut self.r, body);
            if left > 0 {
                self.cut(with_failure(
                    format!(
                        "{} declares total_size {total_size} but only {} bytes remain",
                        RecordType(id),
                        RECORD_HEADER_SIZE as u64 + body - left
                    ),
                    failed.as_ref(),
                ));
                return None;
            }
            self.done = true;
            return Some(Err(Error::record(
                self.index as u64,
                self.pos,
                format!(
                    "{} total_size {total_size} is over the {MAX_STREAM_RECORD} bytes a streamed record may have (decompress the file to read it)",
                    RecordType(id)
                ),
            )));
        }
        self.buf.clear();
        self.buf.extend_from_slice(&head);
        let body = u64::from(total_size).saturating_sub(RECORD_HEADER_SIZE as u64);
        let failed = append(&mut self.r, &mut self.buf, body);
        if total_size as usize >= RECORD_HEADER_SIZE && self.buf.len() < total_size as usize {
            self.cut(with_failure(
                format!(
                    "{} declares total_size {total_size} but only {} bytes remain",
                    RecordType(id),
                    self.buf.len()
                ),
                failed.as_ref(),
            ));
            return None;
        }
        // The slice reader parses the record (and rejects a total_size below its header).
        let (pos, index) = (self.pos, self.index);
        let mut records = Records::new(&self.buf, 0, endian);
        let next = records.next();
        match next {
            Some(Ok(mut raw)) => {
                raw.offset = pos;
                raw.index = index;
                self.pos += raw.total_size() as u64;
                self.index += 1;
                Some(Ok(raw))
            }
            Some(Err(mut e)) => {
                self.done = true;
                e.offset += pos;
                e.record = Some(index as u64);
                Some(Err(e))
            }
            None => {
                self.done = true;
                None
            }
        }
    }

    fn truncation(&self) -> Option<&Truncation> {
        self.truncation.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a walk yields: (index, offset, type, body) per record, the error, the cut.
    type Walk = (
        Vec<(usize, u64, u32, Vec<u8>)>,
        Option<Error>,
        Option<Truncation>,
    );

    fn walk(records: &mut dyn RecordSource) -> Walk {
        let mut out = Vec::new();
        let mut error = None;
        while let Some(r) = records.next() {
            match r {
                Ok(r) => out.push((r.index, r.offset, r.record_type.0, r.body.to_vec())),
                Err(e) => error = Some(e),
            }
        }
        (out, error, records.truncation().cloned())
    }

    fn example() -> Vec<u8> {
        let mut bytes = crate::write::example_dump();
        // a second header byte order is not needed; a corrupt record at the end is
        bytes.extend_from_slice(&[0, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]);
        bytes
    }

    #[test]
    fn a_stream_walks_like_the_slice_at_every_cut() {
        let bytes = example();
        for len in 0..=bytes.len() {
            let cut = &bytes[..len];
            let slice = JitDump::parse(cut).map(|d| walk(&mut d.source()));
            let stream = StreamRecords::new(cut).map(|mut s| walk(&mut s));
            assert_eq!(stream, slice, "cut at {len}");
        }
    }

    /// A reader that gives `n` bytes of `data`, then fails (a cut gzip stream).
    #[derive(Debug)]
    struct Failing<'a>(&'a [u8]);

    impl Read for Failing<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.0.is_empty() {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "corrupt deflate stream",
                ));
            }
            let n = self.0.read(buf)?;
            Ok(n)
        }
    }

    #[test]
    fn a_failing_stream_is_cut_where_it_fails() {
        let bytes = crate::write::example_dump();
        let whole = walk(&mut JitDump::parse(&bytes).unwrap().source());
        for len in [40, 57, 100, bytes.len()] {
            let mut s = StreamRecords::new(io::BufReader::new(Failing(&bytes[..len]))).unwrap();
            let (records, error, cut) = walk(&mut s);
            assert_eq!(error, None);
            assert_eq!(records[..], whole.0[..records.len()]);
            let cut = cut.unwrap();
            let end = records.last().map_or(40, |r| r.1 + 16 + r.3.len() as u64);
            assert_eq!((cut.offset, cut.record), (end, Some(records.len() as u64)));
            assert!(
                cut.reason
                    .ends_with("(the stream fails: corrupt deflate stream)"),
                "{cut}"
            );
        }
        let e = StreamRecords::new(io::BufReader::new(Failing(&bytes[..20]))).unwrap_err();
        assert!(
            e.message
                .contains("file header needs 40 bytes, file has 20 (the stream fails"),
            "{e}"
        );
    }

    #[test]
    fn a_huge_total_size_is_refused_before_it_is_read() {
        // A record over the bound where the stream goes on past it: an error, nothing held.
        let mut bytes = crate::write::example_dump();
        let at = bytes.len() as u64;
        let huge = MAX_STREAM_RECORD + 1;
        bytes.extend_from_slice(&[0, 0, 0, 0]);
        bytes.extend_from_slice(&huge.to_le_bytes());
        bytes.extend_from_slice(&[0; 8]);
        let rest = io::repeat(0).take(u64::from(huge));
        let mut s = StreamRecords::new(io::BufReader::new(Read::chain(&bytes[..], rest))).unwrap();
        let (_, error, cut) = walk(&mut s);
        let e = error.unwrap();
        assert_eq!(e.offset, at);
        assert!(e.message.contains("a streamed record may have"), "{e}");
        assert_eq!(cut, None);
        // Where the stream ends inside it, the file is cut there, as the slice reader says.
        bytes[at as usize + 4..at as usize + 8].copy_from_slice(&0xffff_fff0u32.to_le_bytes());
        let slice = walk(&mut JitDump::parse(&bytes).unwrap().source());
        let stream = walk(&mut StreamRecords::new(&bytes[..]).unwrap());
        assert_eq!(stream, slice);
        assert!(stream.2.is_some());
        let mut head = crate::write::example_dump();
        head.truncate(40);
        head[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        let e = StreamRecords::new(&head[..]).unwrap_err();
        assert!(e.message.contains("a streamed header may have"), "{e}");
    }
}
