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
