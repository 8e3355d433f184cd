//! The file header: three layouts chosen by the major version byte.

use crate::cursor::Cursor;
use crate::error::{self, Result};
use crate::raw::{LOG_HEADER_ID, MAX_DATA_VERSION};

/// A decoded file header (fields a layout does not have are 0 / empty).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// Profiler major version (0, 1, 2 or 3): decides the layout.
    pub major: u8,
    /// Profiler minor version.
    pub minor: u8,
    /// Data version (`format`), 1-17.
    pub data_version: u8,
    /// Pointer size of the profiled process.
    pub ptrsize: u8,
    /// Start time, ms since the Unix epoch.
    pub startup_ms: u64,
    /// Start time on the event clock (major 3 only).
    pub startup_ns: u64,
    /// Mean timer overhead (ns).
    pub timer_overhead: u32,
    /// Flags (0).
    pub flags: u32,
    /// Process id.
    pub pid: u32,
    /// Command-server port (major 1-3; major 0 files from 0.4 on split sysid into port + sysid).
    pub port: u16,
    /// System id (major 0).
    pub sysid: u32,
    /// Profiler arguments (major 1-3).
    pub args: String,
    /// Architecture (major 1-3).
    pub arch: String,
    /// Operating system (major 1-3).
    pub os: String,
    /// Header size in bytes.
    pub size: usize,
}

fn lp_string(c: &mut Cursor<'_>, what: &'static str) -> Result<String> {
    let off = c.offset();
    let len = c.u32le(what)? as usize;
    if len > c.remaining() {
        return Err(if c.at_eof {
            error::truncated(off, what)
        } else {
            error::bad_value(off, what, len as u64)
        });
    }
    let b = c.bytes(len, what)?;
    let b = match b.split_last() {
        Some((0, rest)) => rest,
        _ => b,
    };
    Ok(String::from_utf8_lossy(b).into_owned())
}

impl Header {
    /// Parses the header at the start of `data`.
    pub fn parse(data: &[u8]) -> Result<Header> {
        let mut c = Cursor::new(data, 0, true);
        let id = c.u32le("file header")?;
        if id != LOG_HEADER_ID {
            return Err(error::bad_magic(id));
        }
        let mut h = Header {
            major: c.u8("file header")?,
            minor: c.u8("file header")?,
            data_version: c.u8("file header")?,
            ptrsize: c.u8("file header")?,
            startup_ms: c.u64le("file header")?,
            ..Header::default()
        };
        if h.data_version == 0 || h.data_version > MAX_DATA_VERSION || h.data_version == 7 {
            return Err(error::unsupported_version(6, h.data_version));
        }
        if h.major == 0 {
            h.timer_overhead = c.u32le("file header")?;
            h.flags = c.u32le("file header")?;
            h.pid = c.u32le("file header")?;
            h.sysid = c.u32le("file header")?;
            if h.data_version >= 4 {
                h.port = (h.sysid & 0xffff) as u16;
                h.sysid >>= 16;
            }
        } else {
            if h.major >= 3 {
                h.startup_ns = c.u64le("file header")?;
            }
            h.timer_overhead = c.u32le("file header")?;
            h.flags = c.u32le("file header")?;
            h.pid = c.u32le("file header")?;
            h.port = c.u16le("file header")?;
            h.args = lp_string(&mut c, "header args")?;
            h.arch = lp_string(&mut c, "header arch")?;
            h.os = lp_string(&mut c, "header os")?;
        }
        h.size = c.pos;
        Ok(h)
    }

    /// Encodes the header in the layout of its major version.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(128);
        v.extend_from_slice(&LOG_HEADER_ID.to_le_bytes());
        v.extend_from_slice(&[self.major, self.minor, self.data_version, self.ptrsize]);
        v.extend_from_slice(&self.startup_ms.to_le_bytes());
        if self.major == 0 {
            v.extend_from_slice(&self.timer_overhead.to_le_bytes());
            v.extend_from_slice(&self.flags.to_le_bytes());
            v.extend_from_slice(&self.pid.to_le_bytes());
            let sysid = if self.data_version >= 4 {
                (self.sysid << 16) | u32::from(self.port)
            } else {
                self.sysid
            };
            v.extend_from_slice(&sysid.to_le_bytes());
        } else {
            if self.major >= 3 {
                v.extend_from_slice(&self.startup_ns.to_le_bytes());
            }
            v.extend_from_slice(&self.timer_overhead.to_le_bytes());
            v.extend_from_slice(&self.flags.to_le_bytes());
            v.extend_from_slice(&self.pid.to_le_bytes());
            v.extend_from_slice(&self.port.to_le_bytes());
            for s in [&self.args, &self.arch, &self.os] {
                v.extend_from_slice(&(s.len() as u32 + 1).to_le_bytes());
                v.extend_from_slice(s.as_bytes());
                v.push(0);
            }
        }
        v
    }

    /// The usual major for a data version (0 up to 12, 1 for 13, 2 for 14-15, 3 for 16-17).
    pub fn major_for(data_version: u8) -> u8 {
        match data_version {
            0..=12 => 0,
            13 => 1,
            14 | 15 => 2,
            _ => 3,
        }
    }
}
