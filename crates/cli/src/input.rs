//! Opening inputs: a path (memory-mapped) or `-` (stdin), with gzip unwrapped transparently.

use std::fs::File;
use std::io::{self, Read};
use std::ops::Deref;
use std::path::Path;

use anyhow::{Context, Result};

/// The bytes of an input.
pub enum Data {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl Data {
    /// Tells the kernel the first `upto` bytes will not be read again: for a mapped file, their
    /// pages leave the process's resident set (they stay in the page cache), so a reader that
    /// moves forward keeps its memory flat. Owned data is kept.
    pub fn release(&self, upto: u64) {
        if let Data::Mapped(m) = self {
            let len = (upto as usize).min(m.len()) & !0xfff;
            if len > 0 {
                // SAFETY: the map is shared, read-only and file-backed: a dropped page is read
                // again from the file on its next access, so no reference sees other contents
                // (save the usual caveat of a file changed under a map).
                let _ =
                    unsafe { m.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, 0, len) };
            }
        }
    }
}

impl Data {
    /// Tells the kernel bytes `start..end` will not be read again soon (see
    /// [`Data::release`]); does nothing for owned data.
    pub fn release_range(&self, start: u64, end: u64) {
        if let Data::Mapped(m) = self {
            let (Ok(start), Ok(end)) = (usize::try_from(start), usize::try_from(end)) else {
                return;
            };
            if start < end && end <= m.len() {
                // SAFETY: as in `release`: a shared, read-only, file-backed map.
                let _ = unsafe {
                    m.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start)
                };
            }
        }
    }
}

impl Deref for Data {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Data::Mapped(m) => m,
            Data::Owned(v) => v,
        }
    }
}

/// An opened input.
pub struct Input {
    /// Name for messages: the path as given, or `<stdin>`.
    pub name: String,
    /// The (decompressed) content.
    pub data: Data,
    /// `Some("gzip")` when the file was compressed.
    pub compression: Option<&'static str>,
}

pub const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Opens `path` (`-` = stdin) and unwraps gzip.
pub fn open(path: &Path) -> Result<Input> {
    let (name, raw) = if path.as_os_str() == "-" {
        let mut v = Vec::new();
        io::stdin()
            .lock()
            .read_to_end(&mut v)
            .context("<stdin>: cannot read")?;
        ("<stdin>".to_string(), Data::Owned(v))
    } else {
        let name = path.display().to_string();
        let file = File::open(path).with_context(|| format!("{name}: cannot open"))?;
        let len = file
            .metadata()
            .with_context(|| format!("{name}: cannot stat"))?
            .len();
        let data = if len == 0 || !file.metadata()?.is_file() {
            let mut v = Vec::new();
            (&file)
                .read_to_end(&mut v)
                .with_context(|| format!("{name}: cannot read"))?;
            Data::Owned(v)
        } else {
            // SAFETY: the map is read-only; if another process truncates the file while we
            // read it we may fault, the usual caveat of every mmap-based reader.
            let map = unsafe { memmap2::Mmap::map(&file) }
                .with_context(|| format!("{name}: cannot map"))?;
            Data::Mapped(map)
        };
        (name, data)
    };
    if raw.starts_with(&GZIP_MAGIC) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(&raw[..])
            .read_to_end(&mut out)
            .with_context(|| {
                format!(
                    "{name}: gzip data is corrupt or cut off after {} decompressed bytes",
                    out.len()
                )
            })?;
        return Ok(Input {
            name,
            data: Data::Owned(out),
            compression: Some("gzip"),
        });
    }
    Ok(Input {
        name,
        data: raw,
        compression: None,
    })
}

/// An input opened for a streaming reader: plain files stay mapped (their pages can be
/// released as the reader moves on); gzip files and stdin are read as a stream, so memory does
/// not grow with the input.
pub enum Opened {
    /// A plain file, mapped (or read, when it cannot be mapped).
    Data(Input),
    /// A stream: `head` is a peek at its first (decompressed) bytes for format detection.
    Stream(StreamInput),
}

/// A stream input.
pub struct StreamInput {
    /// Name for messages.
    pub name: String,
    /// The (decompressed) bytes; reading starts at the beginning.
    pub reader: Box<dyn io::BufRead + Send>,
}

impl StreamInput {
    /// The first bytes of the stream (for format detection), without consuming them.
    pub fn peek(&mut self) -> Result<&[u8]> {
        let name = &self.name;
        self.reader
            .fill_buf()
            .with_context(|| format!("{name}: cannot read"))
    }
}

/// Opens `path` (`-` = stdin) for streaming: gzip (by its magic) and stdin become streams,
/// plain files are mapped as with [`open`].
pub fn open_streaming(path: &Path) -> Result<Opened> {
    const BUF: usize = 1 << 20;
    let (name, mut raw): (String, Box<dyn io::BufRead + Send>) = if path.as_os_str() == "-" {
        (
            "<stdin>".to_string(),
            Box::new(io::BufReader::with_capacity(BUF, io::stdin())),
        )
    } else {
        let name = path.display().to_string();
        let mut file = File::open(path).with_context(|| format!("{name}: cannot open"))?;
        let mut magic = [0u8; 2];
        let n = file
            .read(&mut magic)
            .with_context(|| format!("{name}: cannot read"))?;
        let is_file = file.metadata().map(|m| m.is_file()).unwrap_or(false);
        if is_file && !(n == 2 && magic == GZIP_MAGIC) {
            return open(path).map(Opened::Data);
        }
        let head = io::Cursor::new(magic.get(..n).unwrap_or_default().to_vec());
        (
            name,
            Box::new(io::BufReader::with_capacity(BUF, head.chain(file))),
        )
    };
    let is_gzip = raw
        .fill_buf()
        .with_context(|| format!("{name}: cannot read"))?
        .starts_with(&GZIP_MAGIC);
    let reader: Box<dyn io::BufRead + Send> = if is_gzip {
        Box::new(io::BufReader::with_capacity(
            1 << 16,
            flate2::bufread::MultiGzDecoder::new(raw),
        ))
    } else {
        raw
    };
    Ok(Opened::Stream(StreamInput { name, reader }))
}
