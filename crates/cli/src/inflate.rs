//! A stream read whole: what a reader that needs the whole input gets from a gzip file, stdin
//! or a pipe — the stream inflated into a [`crate::spool::Spool`] (an unlinked temporary file,
//! then mapped), at most [`max_inflated`] bytes (`PROFKIT_MAX_INFLATED`).

use std::io::{self, Read};

use anyhow::{bail, Context, Result};
use profkit_common::Truncation;

use crate::input::{Input, StreamInput};

/// How much of a stream a reader that needs the whole input may inflate unless
/// `PROFKIT_MAX_INFLATED` says otherwise (to a temporary file: this guards the disk from a bomb).
const MAX_INFLATED: u64 = 16 << 30;

/// The most bytes [`read_whole`] takes from a stream: `PROFKIT_MAX_INFLATED` (bytes, or with a
/// `K`, `M` or `G` suffix, powers of 1024), else 16 GiB.
pub fn max_inflated() -> Result<u64> {
    let Some(v) = std::env::var_os("PROFKIT_MAX_INFLATED") else {
        return Ok(MAX_INFLATED);
    };
    let s = v.to_string_lossy();
    let t = s.trim();
    let (digits, shift) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (t.get(..i), 10),
        Some((i, 'm' | 'M')) => (t.get(..i), 20),
        Some((i, 'g' | 'G')) => (t.get(..i), 30),
        _ => (Some(t), 0),
    };
    digits
        .and_then(|d| d.trim().parse::<u64>().ok())
        .and_then(|n| n.checked_mul(1 << shift))
        .with_context(|| format!("PROFKIT_MAX_INFLATED={s:?}: expected a size in bytes (e.g. 4G)"))
}

/// Reads the rest of a stream into a [`crate::spool::Spool`] (an unlinked temporary file, then
/// mapped): a reader that needs the whole input sees it as a plain file, and readers that
/// release what they have read keep resident memory flat whatever the decompressed size. At
/// most [`max_inflated`] bytes are taken (an error beyond: `what` names what was to be read). A
/// gzip stream cut off or corrupt part-way is kept up to there ([`Input::cut`]).
pub fn read_whole(mut s: StreamInput, what: &str) -> Result<Input> {
    let limit = max_inflated()?;
    let mut spool = crate::spool::Spool::new();
    let mut chunk = vec![0u8; 1 << 20];
    let failed = loop {
        let n = match s.read(&mut chunk) {
            Ok(0) => break None,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => break Some(e),
        };
        if spool.len + n as u64 > limit {
            let from = match s.compression {
                Some(c) => format!("a {c} stream"),
                None => "a stream".to_string(),
            };
            bail!(
                "{}: {what} is inflated whole from {from}, and it is over the limit of {limit} bytes \
                 (PROFKIT_MAX_INFLATED, 16G by default): decompress it to a file first, or raise the limit",
                s.name
            );
        }
        spool
            .write(chunk.get(..n).unwrap_or_default())
            .with_context(|| {
                format!(
                    "{}: cannot write the inflated stream to a temporary file",
                    s.name
                )
            })?;
    };
    let len = spool.len;
    let cut = match failed {
        None => None,
        Some(e) if len == 0 || s.compression.is_none() => {
            let what = if s.compression.is_some() {
                "gzip data is corrupt or cut off"
            } else {
                "cannot read"
            };
            return Err(anyhow::Error::new(e).context(format!("{}: {what}", s.name)));
        }
        Some(e) => Some(Truncation::new(
            len,
            None,
            format!(
                "the gzip stream is cut off or corrupt ({e}); offsets are in the {len} bytes inflated before it"
            ),
        )),
    };
    let data = spool.into_bytes().map_err(|e| {
        if e.raw_os_error() == Some(libc::ENOMEM) {
            // The address space is limited (`ulimit -v`) below the inflated size.
            anyhow::anyhow!(
                "{}: {what} inflates to {len} bytes, more than the address space left to map it \
                 (is it limited? ulimit -v): raise the limit, or set PROFKIT_MAX_INFLATED below it \
                 to refuse such streams before they are inflated",
                s.name
            )
        } else {
            anyhow::Error::new(e).context(format!("{}: cannot map the inflated stream", s.name))
        }
    })?;
    Ok(Input {
        name: s.name,
        data,
        compression: s.compression,
        cut,
    })
}
