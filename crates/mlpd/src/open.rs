//! gzip detection: `.mlpd` files written with `zip` (or piped through gzip) keep their name.

use std::borrow::Cow;
use std::io::Read;

/// The gzip magic.
pub const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// True when `data` starts like a gzip stream.
pub fn is_gzip(data: &[u8]) -> bool {
    data.starts_with(&GZIP_MAGIC)
}

/// `data` itself, or its decompressed content when it is gzip.
pub fn decompress(data: &[u8]) -> std::io::Result<Cow<'_, [u8]>> {
    if !is_gzip(data) {
        return Ok(Cow::Borrowed(data));
    }
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(data).read_to_end(&mut out)?;
    Ok(Cow::Owned(out))
}
