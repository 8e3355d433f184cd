//! Checks of a profiling-mode file, with exact offsets: [`verify`]. The codes are
//! [`codes::ALL`], documented in docs/xray.md ("Profiling mode").

use std::collections::HashSet;

use profkit_common::{Findings, Validation};

use crate::profile::{Profile, ProfileEntry};

/// The finding codes of [`verify`]: `(code, severity, description)`. The codes every format
/// shares (`truncated`, `findings-capped`) are added by [`Findings`].
pub mod codes {
    use profkit_common::finding::CodeTable;
    use profkit_common::Severity::{Error as E, Warning as W};

    /// A block whose size is below its own 16-byte header.
    pub const BLOCK_SIZE: &str = "profile-block-size";
    /// A record that does not fit in what is left of its block.
    pub const RECORD_OVERRUN: &str = "profile-record-overrun";
    /// A record with no function on its path.
    pub const EMPTY_PATH: &str = "profile-empty-path";
    /// Block numbers that do not count 0, 1, 2 … in file order.
    pub const BLOCK_NUMBER: &str = "profile-block-number";
    /// A thread with more than one block.
    pub const THREAD_REPEATED: &str = "profile-thread-repeated";
    /// A record whose caller's record is not where a depth-first walk puts it.
    pub const PATH_ORDER: &str = "profile-path-order";
    /// A cumulative time that wrapped below zero (compiler-rt's unwinding).
    pub const TIME_WRAPPED: &str = "profile-time-wrapped";

    /// Every code, its severity and what it means.
    pub const ALL: CodeTable = &[
        (BLOCK_SIZE, E, "a block whose size is below its 16-byte header; the rest of the file cannot be walked"),
        (RECORD_OVERRUN, E, "a record that does not fit in what is left of its block (no 0 ends its path there, or its counts run past the block's end); the rest of the block is skipped"),
        (EMPTY_PATH, E, "a record whose path is empty (it starts with the 0 that ends a path); readers skip it"),
        (BLOCK_NUMBER, W, "block numbers that do not count 0, 1, 2 ... in file order, as compiler-rt numbers them"),
        (THREAD_REPEATED, W, "a thread with more than one block (compiler-rt writes one per thread; a thread id the OS reused looks the same); readers add its blocks up"),
        (PATH_ORDER, W, "a record whose caller's path is not a prefix of the record before it: compiler-rt writes each thread's call trie depth first, a caller before its callees"),
        (TIME_WRAPPED, W, "a cumulative time of 2^63 ticks or more: compiler-rt's exit of a function below the top frame (frames left by longjmp or an exception) subtracts the closed callees' times from each outer frame and can wrap below zero"),
    ];
}

/// Verifies a profile: block sizes and numbers, records inside their blocks, empty paths, the
/// depth-first order of each block's records, threads with several blocks, wrapped times, and
/// the cut of a truncated file (the common `truncated` code; everything before it is
/// checked). `records` counts the records read.
pub fn verify(profile: &Profile<'_>) -> Validation {
    let mut f = Findings::new(codes::ALL);
    let mut tids: HashSet<u64> = HashSet::new();
    // The previous record's path in this block (root first), and the current one's.
    let mut chain: Vec<u32> = Vec::new();
    let mut path: Vec<u32> = Vec::new();
    let mut it = profile.entries();
    for entry in it.by_ref() {
        match entry {
            ProfileEntry::Block(b) => {
                chain.clear();
                if u64::from(b.number) != b.index {
                    f.push(
                        codes::BLOCK_NUMBER,
                        b.offset,
                        None,
                        format!("block #{} of the file is numbered {}", b.index, b.number),
                    );
                }
                if !tids.insert(b.tid) {
                    f.push(
                        codes::THREAD_REPEATED,
                        b.offset,
                        None,
                        format!("thread {} already had a block", b.tid),
                    );
                }
            }
            ProfileEntry::Record(r) => {
                let at = (r.offset, Some(r.index));
                if r.path.is_empty() {
                    f.push(
                        codes::EMPTY_PATH,
                        at.0,
                        at.1,
                        "the path is empty (the record starts with its 0)",
                    );
                    continue;
                }
                if r.cumulative_time >= 1 << 63 {
                    f.push(
                        codes::TIME_WRAPPED,
                        at.0,
                        at.1,
                        format!(
                            "cumulative time {} (= {} as a signed number): wrapped below zero",
                            r.cumulative_time, r.cumulative_time as i64
                        ),
                    );
                }
                path.clear();
                path.extend(r.path.root_first());
                let caller = path.len() - 1;
                if caller > 0 && chain.get(..caller) != path.get(..caller) {
                    f.push(
                        codes::PATH_ORDER,
                        at.0,
                        at.1,
                        "its caller's path is not a prefix of the previous record's path",
                    );
                }
                std::mem::swap(&mut chain, &mut path);
            }
            ProfileEntry::Problem(e) => {
                // Records carry their index; a bad block header does not.
                let code = if e.record.is_some() {
                    codes::RECORD_OVERRUN
                } else {
                    codes::BLOCK_SIZE
                };
                f.push(code, e.known_offset().unwrap_or(0), e.record, e.to_string());
                chain.clear();
            }
        }
    }
    let truncation = it.truncation().cloned();
    f.finish(it.records(), truncation)
}
