//! The growing-file reader: "not enough bytes yet" versus corruption.

use std::io::Read;
use std::sync::{Arc, Mutex};

use profkit_jitdump::{FollowReader, RecordType};

use crate::handmade;

/// A source that grows as the test appends to it, like a file a JIT is writing.
#[derive(Clone, Default)]
pub struct Growing(Arc<Mutex<(Vec<u8>, usize)>>);

impl Growing {
    pub fn append(&self, bytes: &[u8]) {
        self.0.lock().unwrap().0.extend_from_slice(bytes);
    }
}

impl Read for Growing {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut g = self.0.lock().unwrap();
        let (data, pos) = &mut *g;
        let n = (data.len() - *pos).min(buf.len());
        buf[..n].copy_from_slice(&data[*pos..*pos + n]);
        *pos += n;
        Ok(n)
    }
}

#[test]
fn waits_for_the_header_and_for_partial_records() {
    let bytes = handmade::all_records(profkit_jitdump::Endian::Big);
    let src = Growing::default();
    let mut r = FollowReader::new(src.clone());
    r.fill().unwrap();
    assert!(r.header().unwrap().is_none());
    src.append(&bytes[..20]);
    r.fill().unwrap();
    assert!(r.header().unwrap().is_none(), "20 of 40 header bytes");
    assert!(r.next_record().unwrap().is_none());
    src.append(&bytes[20..60]);
    r.fill().unwrap();
    assert_eq!(r.header().unwrap().unwrap().pid, 4242);
    assert!(r.next_record().unwrap().is_none(), "record incomplete");
    src.append(&bytes[60..]);
    r.fill().unwrap();
    let mut last = None;
    while let Some(rec) = r.next_record().unwrap() {
        last = Some((rec.record_type, rec.offset as usize + rec.total_size()));
    }
    assert_eq!(last, Some((RecordType::CODE_CLOSE, bytes.len())));
}

#[test]
fn wrong_magic_fails_early_and_corruption_is_an_error() {
    let src = Growing::default();
    src.append(b"ELF!");
    let mut r = FollowReader::new(src.clone());
    r.fill().unwrap();
    assert!(r.header().is_err());

    let bytes = crate::fixture("handmade/record-size-8.dump");
    let src = Growing::default();
    src.append(&bytes);
    let mut r = FollowReader::new(src);
    r.fill().unwrap();
    assert!(r.next_record().unwrap().is_some());
    let e = r.next_record().unwrap_err();
    assert_eq!((e.offset, e.record), (103, Some(1)));
}
