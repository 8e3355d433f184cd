//! Where a stream that a reader needs whole goes ([`crate::inflate::read_whole`]): an unlinked
//! temporary file (in `TMPDIR`, else `/tmp`) that is mapped once written, so the bytes live in
//! the page cache like a plain file's and not in the process's memory; or memory when no
//! temporary file can be made.

use std::fs::File;
use std::io;

use profkit_common::FileBytes;

/// The bytes of a stream as they arrive (see the [module docs](self)).
pub struct Spool {
    file: Option<File>,
    memory: Vec<u8>,
    /// Bytes written so far.
    pub len: u64,
}

impl Spool {
    /// An empty spool: a new temporary file, or memory.
    pub fn new() -> Spool {
        Spool {
            file: tempfile::tempfile().ok(),
            memory: Vec::new(),
            len: 0,
        }
    }

    /// Appends `bytes`.
    pub fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        match &mut self.file {
            Some(f) => io::Write::write_all(f, bytes)?,
            None => self.memory.extend_from_slice(bytes),
        }
        self.len += bytes.len() as u64;
        Ok(())
    }

    /// Everything written: the file mapped, or the bytes in memory.
    pub fn into_bytes(self) -> io::Result<FileBytes> {
        match self.file {
            Some(f) => FileBytes::of_file(&f),
            None => Ok(FileBytes::Owned(self.memory)),
        }
    }
}
