#![no_main]
//! The CLI's gzip spool and profkit-export's output staging.
//!
//! * Spool: the input inflated (gzip, at most 1 MiB, as `read_whole` bounds it by
//!   `PROFKIT_MAX_INFLATED`) into `Spool` in pieces whose sizes come from the input, then
//!   mapped: it holds every byte written, and for a clean stream what an in-memory inflate
//!   gives.
//! * Staging: outputs named from the input (a main file and side files, some names repeated,
//!   some already present as files or symbolic links) written and then committed or dropped:
//!   after a commit every name holds what was last written for it and no side file was written
//!   through a link; after a drop nothing changed; no temporary file is ever left.

#[path = "../../crates/cli/src/spool.rs"]
#[allow(dead_code)]
mod spool;

use std::io::{Read, Write};

use libfuzzer_sys::fuzz_target;
use profkit_export::Output;

const LIMIT: u64 = 1 << 20;

fn check_spool(data: &[u8]) {
    let mut want = Vec::new();
    let clean = flate2::read::MultiGzDecoder::new(data)
        .take(LIMIT)
        .read_to_end(&mut want)
        .is_ok();
    let mut s = spool::Spool::new();
    let mut z = flate2::read::MultiGzDecoder::new(data).take(LIMIT);
    let mut got = 0usize;
    let mut failed = false;
    let mut step = data.first().map_or(1, |&b| usize::from(b) + 1);
    let mut buf = vec![0u8; 257];
    loop {
        let n = match z.read(&mut buf[..step]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(_) => {
                failed = true;
                break;
            }
        };
        s.write(&buf[..n]).unwrap();
        got += n;
        step = step % 257 + 1;
    }
    assert_eq!(s.len, got as u64);
    let bytes = s.into_bytes().unwrap();
    assert_eq!(bytes.len(), got);
    // A corrupt stream fails where its reads fall (flate2 checks a member's trailer after
    // handing out its bytes): only a clean stream must give the same bytes both ways.
    if clean && !failed {
        assert_eq!(&bytes[..], &want[..]);
    }
}

fn check_staging(data: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, b"keep").unwrap();
    let name = |b: u8| dir.path().join(format!("o{}", b % 6));
    // Names present before: a file, or a link to the victim.
    for (i, &b) in data.iter().take(3).enumerate() {
        let p = name(b);
        if p.exists() || std::fs::symlink_metadata(&p).is_ok() {
            continue;
        }
        if i % 2 == 0 {
            std::fs::write(&p, b"old").unwrap();
        } else {
            std::os::unix::fs::symlink(&victim, &p).unwrap();
        }
    }
    let before = listing(dir.path());
    let main = name(data.get(3).copied().unwrap_or(0));
    let out = Output::staged(&main);
    let mut written: Vec<(std::path::PathBuf, Vec<u8>)> = Vec::new();
    for (i, chunk) in data.get(4..).unwrap_or_default().chunks(7).take(8).enumerate() {
        let p = if i == 0 { main.clone() } else { name(chunk[0]) };
        let w = if p == main {
            out.create()
        } else {
            out.create_beside(&p)
        };
        let Ok(mut w) = w else { continue };
        if w.write_all(chunk).and_then(|()| w.flush()).is_ok() {
            written.retain(|(q, _)| q != &p);
            written.push((p, chunk.to_vec()));
        }
    }
    let commit = data.last().is_some_and(|b| b & 1 == 1);
    if commit {
        if out.commit().is_ok() {
            for (p, bytes) in &written {
                assert_eq!(&std::fs::read(p).unwrap(), bytes, "{}", p.display());
                // A side file replaces a link; only the main output (named by the user) is
                // written through one.
                if *p != main {
                    assert!(!std::fs::symlink_metadata(p).unwrap().file_type().is_symlink());
                }
            }
            if !written.iter().any(|(p, _)| *p == main) {
                assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
            }
        }
    } else {
        drop(out);
        assert_eq!(listing(dir.path()), before);
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
    }
    assert!(listing(dir.path()).iter().all(|n| !n.ends_with(".tmp")));
}

fn listing(d: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fuzz_target!(|data: &[u8]| {
    check_spool(data);
    check_staging(data);
});
