//! Opening inputs: a path (memory-mapped) or `-` (stdin), with gzip unwrapped transparently.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use anyhow::{Context, Result};
use profkit_common::{FileBytes, Truncation};

/// An opened input.
pub struct Input {
    /// Name for messages: the path as given, or `<stdin>`.
    pub name: String,
    /// The (decompressed) content.
    pub data: FileBytes,
    /// `Some("gzip")` when the file was compressed.
    pub compression: Option<&'static str>,
    /// Where a compressed stream is cut off (or corrupt): `data` holds what was inflated
    /// before, which the format's reader reads like any cut file.
    pub cut: Option<Truncation>,
}

/// How much of a gzip stream is inflated before [`open_checked`]'s check sees it.
const CHECK_HEAD: usize = 64 << 10;

pub const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Opens `path` (`-` = stdin) and unwraps gzip.
pub fn open(path: &Path) -> Result<Input> {
    open_checked(path, &|_| Ok(()))
}

/// [`open`], with `check` run on the first decompressed bytes of a gzip stream (up to 64 KiB)
/// before the rest is inflated: a stream that is not a known format fails at once, whatever
/// its size. A stream cut off or corrupt part-way is kept up to there ([`Input::cut`]).
pub fn open_checked(path: &Path, check: &dyn Fn(&[u8]) -> Result<()>) -> Result<Input> {
    let (name, raw) = if path.as_os_str() == "-" {
        let mut v = Vec::new();
        io::stdin()
            .lock()
            .read_to_end(&mut v)
            .context("<stdin>: cannot read")?;
        ("<stdin>".to_string(), FileBytes::Owned(v))
    } else {
        let name = path.display().to_string();
        let file = File::open(path).with_context(|| format!("{name}: cannot open"))?;
        let data = FileBytes::of_file(&file).with_context(|| format!("{name}: cannot read"))?;
        (name, data)
    };
    if raw.starts_with(&GZIP_MAGIC) {
        let mut out = Vec::new();
        let mut gz = flate2::read::MultiGzDecoder::new(&raw[..]);
        let head = (&mut gz).take(CHECK_HEAD as u64).read_to_end(&mut out);
        if head.is_ok() {
            check(&out)?;
        }
        let rest = head.and_then(|_| gz.read_to_end(&mut out));
        let cut = match rest {
            Ok(_) => None,
            Err(e) if out.is_empty() => {
                return Err(anyhow::Error::new(e)
                    .context(format!("{name}: gzip data is corrupt or cut off")))
            }
            Err(e) => Some(Truncation::new(
                out.len() as u64,
                None,
                format!(
                    "the gzip stream is cut off or corrupt ({e}); offsets are in the {} bytes inflated before it",
                    out.len()
                ),
            )),
        };
        return Ok(Input {
            name,
            data: FileBytes::Owned(out),
            compression: Some("gzip"),
            cut,
        });
    }
    Ok(Input {
        name,
        data: raw,
        compression: None,
        cut: None,
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
