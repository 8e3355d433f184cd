//! Writing profiling-mode files, as compiler-rt's collector lays them out (for tests and round
//! trips; see the [module docs](super) for the layout).
//!
//! ```
//! use profkit_xray::profile::write::{PathRecord, ProfileWriter};
//! use profkit_xray::profile::{Profile, ProfileEntry, ProfileHeader};
//! let mut w = ProfileWriter::new(&ProfileHeader { pid: 42, ..ProfileHeader::default() });
//! // main (1) calls work (2) three times: the caller's record first, paths root first here.
//! w.block(7, &[PathRecord::new(&[1], 1, 100), PathRecord::new(&[1, 2], 3, 60)]).unwrap();
//! let bytes = w.finish();
//! let p = Profile::parse(&bytes).unwrap();
//! let paths: Vec<Vec<u32>> = p
//!     .entries()
//!     .filter_map(|e| match e {
//!         ProfileEntry::Record(r) => Some(r.path.root_first().collect()),
//!         _ => None,
//!     })
//!     .collect();
//! assert_eq!(paths, [vec![1], vec![1, 2]]);
//! ```

use crate::error::Result;
use crate::profile::{ProfileHeader, BLOCK_HEADER_SIZE, RECORD_TAIL_SIZE};

/// One record to write: a call path and its totals.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PathRecord {
    /// Function ids, **root first** (the writer puts them leaf first, as on disk). Ids are
    /// written as their `i32` bits; 0 cannot be written (it ends a path).
    pub path: Vec<u32>,
    /// Calls that returned on this path.
    pub call_count: u64,
    /// Their total (inclusive) time in ticks.
    pub cumulative_time: u64,
}

impl PathRecord {
    /// A record of `path` (root first).
    pub fn new(path: &[u32], call_count: u64, cumulative_time: u64) -> Self {
        PathRecord {
            path: path.to_vec(),
            call_count,
            cumulative_time,
        }
    }

    /// Bytes of the record on disk.
    pub fn size(&self) -> usize {
        self.path
            .len()
            .saturating_mul(4)
            .saturating_add(RECORD_TAIL_SIZE)
    }
}

/// Writes a profile: the file header, then blocks numbered 0, 1, 2 … in the order they are
/// added.
#[derive(Clone, Debug)]
pub struct ProfileWriter {
    header: ProfileHeader,
    out: Vec<u8>,
    next_number: u32,
}

impl ProfileWriter {
    /// A profile with `header` (its byte order is the file's).
    pub fn new(header: &ProfileHeader) -> Self {
        ProfileWriter {
            header: *header,
            out: header.to_bytes().to_vec(),
            next_number: 0,
        }
    }

    /// Adds the block of thread `tid` with `records`, numbered after the previous block.
    /// Fails (writing nothing) when a path holds a 0 or the block does not fit its `u32` size.
    pub fn block(&mut self, tid: u64, records: &[PathRecord]) -> Result<()> {
        let number = self.next_number;
        self.block_numbered(number, tid, records)?;
        self.next_number = number.wrapping_add(1);
        Ok(())
    }

    /// Adds a block with an explicit block number (the next [`ProfileWriter::block`] counts on
    /// from the previous one, not from this one).
    pub fn block_numbered(&mut self, number: u32, tid: u64, records: &[PathRecord]) -> Result<()> {
        let at = self.out.len();
        let mut size = BLOCK_HEADER_SIZE as u64;
        for r in records {
            if r.path.contains(&0) {
                return Err(crate::error::invalid(
                    at,
                    "a path without function id 0 (0 ends a path)",
                    format!("{:?}", r.path),
                ));
            }
            size = size.saturating_add(r.size() as u64);
        }
        let size = u32::try_from(size).map_err(|_| {
            crate::error::invalid(
                at,
                "a block of at most 4 GiB (its size is a u32)",
                format!("{size} bytes"),
            )
        })?;
        let e = self.header.endian;
        self.out.reserve(size as usize);
        self.out.extend_from_slice(&e.u32_bytes(size));
        self.out.extend_from_slice(&e.u32_bytes(number));
        self.out.extend_from_slice(&e.u64_bytes(tid));
        for r in records {
            for &id in r.path.iter().rev() {
                self.out.extend_from_slice(&e.u32_bytes(id));
            }
            self.out.extend_from_slice(&[0; 4]);
            self.out.extend_from_slice(&e.u64_bytes(r.call_count));
            self.out.extend_from_slice(&e.u64_bytes(r.cumulative_time));
        }
        Ok(())
    }

    /// The bytes written so far.
    pub fn bytes(&self) -> &[u8] {
        &self.out
    }

    /// The file.
    pub fn finish(self) -> Vec<u8> {
        self.out
    }
}
