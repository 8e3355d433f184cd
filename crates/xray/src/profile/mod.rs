//! XRay **profiling mode**: the aggregated call trees of `xray_mode=xray-profiling`
//! (compiler-rt's `libclang_rt.xray-profiling`), a format of its own that llvm-xray cannot read
//! (llvm/llvm-project#88761).
//!
//! # The layout
//! All integers are in the writing host's byte order (the runtime copies its structures out of
//! memory); the magic tells the order. A file is a 32-byte **file header** followed by
//! **blocks**, one per thread that completed a call (in the order the threads handed their data
//! to the collector: threads at their exit, the thread that finalizes — usually the main thread
//! at `exit` — last):
//!
//! ```text
//! file header   u64 magic 0x7872617970726f66 ("xrayprof" as a big-endian number)
//!               u64 version 0x20180424
//!               u64 timestamp: CLOCK_REALTIME nanoseconds when the file was written
//!               u64 pid
//! block header  u32 block_size   bytes of the block, this 16-byte header included
//!               u32 block_number 0, 1, 2 … in file order
//!               u64 thread id
//! record        i32 function id × n   the call path, leaf (innermost) first
//!               i32 0                 end of the path
//!               u64 call_count        calls that returned on this path
//!               u64 cumulative_time   their total duration in TSC ticks
//! ```
//!
//! Records follow each other until the block's size is used up. Each record is one node of the
//! thread's call trie, written depth first (a caller's record before its callees'). What the
//! runtime counts (`xray_function_call_trie.h`):
//!
//! * a node is a call path: the same function called from another path, or at another
//!   recursion depth, is another node (`fib` at depth 1, 2, 3 … are separate records);
//! * `call_count` counts the calls on that path that **returned**; a call still running when
//!   the profile was written (an enclosing `main`) has count 0 and time 0 while its callees
//!   have theirs;
//! * `cumulative_time` is **inclusive** (callees' time included), despite its name: each
//!   return adds `exit TSC - entry TSC`. A node's exclusive time is its time minus its callees'
//!   times. The ticks are raw `rdtscp` values on x86-64 (`clock_gettime` nanoseconds on other
//!   targets); the file records no frequency;
//! * an exit of a function deeper than the top frame (frames left without an exit by `longjmp`
//!   or an exception) closes the frames above it; the runtime then subtracts the closed
//!   callees' times from each outer frame, which can wrap below zero (reported by
//!   [`verify()`](verify::verify) as `profile-time-wrapped`);
//! * every time the thread's stack is empty, an entered function starts a new root, so a block
//!   can hold several records with the same path (readers add them up).
//!
//! Function ids are those of the instrumentation map (`-fxray-shared`: packed
//! `object << 24 | id`), written as `int32_t`; they are returned as their `u32` bits. LLVM's
//! own `loadProfile` (`llvm/lib/XRay/Profile.cpp`) expects no file header and one record per
//! block, so it cannot read what the runtime writes.
//!
//! # API
//! [`Profile::parse`] checks the header; [`Profile::entries`] walks the blocks and records
//! ([`ProfileEntry`]), zero-copy: a record's [`PathIds`] borrow the file. Everything is
//! checked against the bytes that remain before it is read; nothing is allocated from a size
//! field. A file cut inside a block is an outcome: every complete record is delivered and
//! [`ProfileEntries::truncation`] says where the cut is. [`write::ProfileWriter`] writes
//! profiles (tests, round trips); [`summary()`](summary::summary), [`dump`](mod@dump) and
//! [`verify()`](verify::verify) are what `profkit info`, `dump` and `validate` show.

pub mod dump;
pub mod summary;
pub mod verify;
pub mod write;

use crate::error::{Error, ErrorExt, Result, Truncation};
use crate::raw::{bytes_at, field, Endian};

/// `"xrayprof"` read as a big-endian `u64`: the first field of every profile.
pub const PROFILE_MAGIC: u64 = 0x7872_6179_7072_6f66;
/// The only version of the format (compiler-rt's `XRayProfilingVersion`, LLVM 7 to 22).
pub const PROFILE_VERSION: u64 = 0x2018_0424;
/// Size of the file header.
pub const PROFILE_HEADER_SIZE: usize = 32;
/// Size of a block header.
pub const BLOCK_HEADER_SIZE: usize = 16;
/// Bytes of a record after its path: the 0 sentinel, the call count and the time.
pub const RECORD_TAIL_SIZE: usize = 20;

/// The 32-byte file header of a profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProfileHeader {
    /// Format version ([`PROFILE_VERSION`]).
    pub version: u64,
    /// When the runtime wrote the file: `CLOCK_REALTIME` nanoseconds.
    pub timestamp_ns: u64,
    /// Process id.
    pub pid: u64,
    /// Byte order of the whole file (the writing host's).
    pub endian: Endian,
}

impl Default for ProfileHeader {
    fn default() -> Self {
        ProfileHeader {
            version: PROFILE_VERSION,
            timestamp_ns: 0,
            pid: 0,
            endian: Endian::Little,
        }
    }
}

impl ProfileHeader {
    /// Whether `data` starts with the profile magic (either byte order).
    pub fn is_profile(data: &[u8]) -> bool {
        bytes_at::<8>(data, 0).is_some_and(|m| {
            u64::from_le_bytes(m) == PROFILE_MAGIC || u64::from_be_bytes(m) == PROFILE_MAGIC
        })
    }

    /// Parses the header at the start of `data`: the magic decides the byte order; a version
    /// other than [`PROFILE_VERSION`] is an [`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported) error.
    pub fn parse(data: &[u8]) -> Result<ProfileHeader> {
        let Some(h) = bytes_at::<PROFILE_HEADER_SIZE>(data, 0) else {
            return Err(crate::error::truncated(
                0,
                "profile file header",
                PROFILE_HEADER_SIZE,
                data.len(),
            ));
        };
        let magic: [u8; 8] = field(&h, 0);
        let endian = if u64::from_le_bytes(magic) == PROFILE_MAGIC {
            Endian::Little
        } else if u64::from_be_bytes(magic) == PROFILE_MAGIC {
            Endian::Big
        } else {
            return Err(crate::error::invalid(
                0,
                "the XRay profiling-mode magic \"xrayprof\" (0x7872617970726f66)",
                format!("{:#018x}", u64::from_le_bytes(magic)),
            ));
        };
        let header = ProfileHeader {
            version: endian.u64(field(&h, 8)),
            timestamp_ns: endian.u64(field(&h, 16)),
            pid: endian.u64(field(&h, 24)),
            endian,
        };
        if header.version != PROFILE_VERSION {
            return Err(crate::error::unsupported(format_args!(
                "XRay profiling-mode version {:#x} (supported: {PROFILE_VERSION:#x})",
                header.version
            )));
        }
        Ok(header)
    }

    /// The 32 bytes of this header, in its byte order.
    pub fn to_bytes(&self) -> [u8; PROFILE_HEADER_SIZE] {
        let e = self.endian;
        let mut out = [0u8; PROFILE_HEADER_SIZE];
        let fields = [PROFILE_MAGIC, self.version, self.timestamp_ns, self.pid];
        for (chunk, v) in out.chunks_exact_mut(8).zip(fields) {
            chunk.copy_from_slice(&e.u64_bytes(v));
        }
        out
    }
}

/// A parsed profile: its header and the bytes of its blocks.
#[derive(Clone, Copy, Debug)]
pub struct Profile<'a> {
    /// The file header.
    pub header: ProfileHeader,
    data: &'a [u8],
}

impl<'a> Profile<'a> {
    /// Parses the header of `data` (the whole file). The blocks are read lazily by
    /// [`Profile::entries`].
    pub fn parse(data: &'a [u8]) -> Result<Profile<'a>> {
        Ok(Profile {
            header: ProfileHeader::parse(data)?,
            data,
        })
    }

    /// The whole file.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// Every block and record in file order, with problems where a block or record cannot be
    /// read.
    pub fn entries(&self) -> ProfileEntries<'a> {
        ProfileEntries {
            data: self.data,
            endian: self.header.endian,
            pos: PROFILE_HEADER_SIZE,
            block: None,
            blocks: 0,
            records: 0,
            done: false,
            truncation: None,
        }
    }

    /// Where the file is cut, if it is (walks the blocks).
    pub fn truncation(&self) -> Option<Truncation> {
        let mut it = self.entries();
        it.by_ref().for_each(drop);
        it.truncation
    }
}

/// A block header and where it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProfileBlock {
    /// Absolute offset of the block header.
    pub offset: u64,
    /// Index of the block in the file (0 = first).
    pub index: u64,
    /// The block's size as written (header included).
    pub size: u32,
    /// The block number as written (the runtime counts 0, 1, 2 … in file order).
    pub number: u32,
    /// Thread id.
    pub tid: u64,
    /// The file ends before the block does.
    pub cut: bool,
}

/// A record's call path: its function ids as they are on disk, leaf first, without the 0 that
/// ends them. Borrows the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathIds<'a> {
    bytes: &'a [u8],
    endian: Endian,
}

impl<'a> PathIds<'a> {
    /// Number of functions on the path (its depth).
    pub fn len(&self) -> usize {
        self.bytes.len() / 4
    }

    /// Whether the path is empty (the record starts with its 0).
    pub fn is_empty(&self) -> bool {
        self.bytes.len() < 4
    }

    /// The ids, leaf (innermost call) first, as on disk.
    pub fn leaf_first(&self) -> impl DoubleEndedIterator<Item = u32> + ExactSizeIterator + 'a {
        let e = self.endian;
        self.bytes
            .chunks_exact(4)
            .map(move |c| e.u32(<[u8; 4]>::try_from(c).unwrap_or([0; 4])))
    }

    /// The ids, root (outermost call) first.
    pub fn root_first(&self) -> impl Iterator<Item = u32> + 'a {
        self.leaf_first().rev()
    }

    /// The innermost function (the one the record counts), if the path is not empty.
    pub fn leaf(&self) -> Option<u32> {
        self.leaf_first().next()
    }
}

/// One record: a call path and its totals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProfileRecord<'a> {
    /// Absolute offset of the record.
    pub offset: u64,
    /// Index of the record in the file (0 = first record of the first block).
    pub index: u64,
    /// Index of its block.
    pub block: u64,
    /// Thread id of its block.
    pub tid: u64,
    /// The call path.
    pub path: PathIds<'a>,
    /// Calls on this path that returned.
    pub call_count: u64,
    /// Their total duration in TSC ticks, callees included (the runtime's
    /// `CumulativeLocalTime`).
    pub cumulative_time: u64,
}

/// What [`ProfileEntries`] yields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProfileEntry<'a> {
    /// A block header; its records follow.
    Block(ProfileBlock),
    /// A record of the last block.
    Record(ProfileRecord<'a>),
    /// A block or record that cannot be read; what it affects is skipped (a record: the rest
    /// of its block; a block header: the rest of the file).
    Problem(Error),
}

/// The block being walked.
#[derive(Clone, Copy, Debug)]
struct Current {
    index: u64,
    tid: u64,
    /// End of the block's bytes in the file (at most the file's end).
    end: usize,
    /// The file ends before the block does.
    cut: bool,
    /// Bytes the block claims, when it is cut (for the reason of the cut).
    claimed_end: u64,
}

/// Iterator over the blocks and records of a profile ([`Profile::entries`]).
#[derive(Clone, Debug)]
pub struct ProfileEntries<'a> {
    data: &'a [u8],
    endian: Endian,
    pos: usize,
    block: Option<Current>,
    blocks: u64,
    records: u64,
    done: bool,
    truncation: Option<Truncation>,
}

impl<'a> ProfileEntries<'a> {
    /// Set once the walk stopped at the end of a file cut inside a block.
    pub fn truncation(&self) -> Option<&Truncation> {
        self.truncation.as_ref()
    }

    /// Records read so far (and, once done, in the file).
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Blocks read so far.
    pub fn blocks(&self) -> u64 {
        self.blocks
    }

    fn cut(&mut self, offset: usize, reason: String) -> Option<ProfileEntry<'a>> {
        self.done = true;
        self.truncation = Some(Truncation::new(offset as u64, Some(self.records), reason));
        None
    }

    fn next_block(&mut self) -> Option<ProfileEntry<'a>> {
        let offset = self.pos;
        let remain = self.data.len() - offset.min(self.data.len());
        let Some(h) = bytes_at::<BLOCK_HEADER_SIZE>(self.data, offset) else {
            return self.cut(
                offset,
                format!("block header needs {BLOCK_HEADER_SIZE} bytes, {remain} remain"),
            );
        };
        let e = self.endian;
        let size = e.u32(field(&h, 0));
        let number = e.u32(field(&h, 4));
        let tid = e.u64(field(&h, 8));
        if (size as usize) < BLOCK_HEADER_SIZE {
            self.done = true;
            return Some(ProfileEntry::Problem(crate::error::invalid(
                offset,
                "a block size of at least 16 bytes (its header); the rest of the file cannot be walked",
                format!("block size {size}"),
            )));
        }
        let claimed_end = offset as u64 + u64::from(size);
        let end = usize::try_from(claimed_end)
            .unwrap_or(usize::MAX)
            .min(self.data.len());
        let cut = claimed_end > self.data.len() as u64;
        let index = self.blocks;
        self.blocks += 1;
        self.block = Some(Current {
            index,
            tid,
            end,
            cut,
            claimed_end,
        });
        self.pos = offset + BLOCK_HEADER_SIZE;
        Some(ProfileEntry::Block(ProfileBlock {
            offset: offset as u64,
            index,
            size,
            number,
            tid,
            cut,
        }))
    }

    /// The record at `self.pos` in block `b` (which has bytes left).
    fn next_record(&mut self, b: Current) -> Option<ProfileEntry<'a>> {
        let offset = self.pos;
        let block_bytes = self.data.get(offset..b.end).unwrap_or(&[]);
        // The path: i32s up to the first 0.
        let ids = block_bytes.chunks_exact(4).position(|c| c == [0, 0, 0, 0]);
        let need = ids.map(|n| n * 4 + RECORD_TAIL_SIZE);
        match need {
            Some(need) if need <= block_bytes.len() => {
                let path_len = need - RECORD_TAIL_SIZE;
                let e = self.endian;
                let tail = offset + path_len + 4;
                let (Some(count), Some(time)) = (
                    bytes_at::<8>(self.data, tail),
                    bytes_at::<8>(self.data, tail + 8),
                ) else {
                    return self.overrun(b, offset, need, block_bytes.len());
                };
                let rec = ProfileRecord {
                    offset: offset as u64,
                    index: self.records,
                    block: b.index,
                    tid: b.tid,
                    path: PathIds {
                        bytes: block_bytes.get(..path_len).unwrap_or(&[]),
                        endian: e,
                    },
                    call_count: e.u64(count),
                    cumulative_time: e.u64(time),
                };
                self.records += 1;
                self.pos = offset + need;
                Some(ProfileEntry::Record(rec))
            }
            _ => {
                // Too short: the path has no 0 in the block (it needs at least the ids there
                // are, a 0 and the counts), or the counts do not fit.
                let need = need.unwrap_or((block_bytes.len() / 4) * 4 + RECORD_TAIL_SIZE);
                self.overrun(b, offset, need, block_bytes.len())
            }
        }
    }

    /// A record that does not fit in what is left of block `b`: the cut of the file if the
    /// block is cut, else a problem (the rest of the block is skipped).
    fn overrun(
        &mut self,
        b: Current,
        offset: usize,
        need: usize,
        have: usize,
    ) -> Option<ProfileEntry<'a>> {
        if b.cut {
            return self.cut(
                offset,
                format!(
                    "record needs at least {need} bytes, {have} remain (block #{} ends {} bytes past the end of the file)",
                    b.index,
                    b.claimed_end - self.data.len() as u64
                ),
            );
        }
        self.pos = b.end;
        self.block = None;
        Some(ProfileEntry::Problem(
            crate::error::invalid(
                offset,
                "a record inside its block (path ids, a 0, call count and time)",
                format!("it needs at least {need} bytes, {have} remain in the block"),
            )
            .with_record(self.records),
        ))
    }
}

impl<'a> Iterator for ProfileEntries<'a> {
    type Item = ProfileEntry<'a>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if let Some(b) = self.block {
            if self.pos < b.end {
                return self.next_record(b);
            }
            self.block = None;
            if b.cut {
                // The file ends exactly between two records of a cut block.
                return self.cut(
                    self.pos,
                    format!(
                        "block #{} (thread {}) ends {} bytes past the end of the file",
                        b.index,
                        b.tid,
                        b.claimed_end - self.data.len() as u64
                    ),
                );
            }
        }
        if self.pos >= self.data.len() {
            self.done = true;
            return None;
        }
        self.next_block()
    }
}

#[cfg(test)]
mod tests;
