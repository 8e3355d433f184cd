//! `profkit dump FILE`: one line per record in the format's own terms (NDJSON with `--json`);
//! `--follow` tails a live JIT's growing jitdump.

use std::fs::File;
use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use profkit_jitdump::dump::{DumpOptions, Dumper};
use profkit_jitdump::{FollowReader, RecordType};

use crate::cli::DumpArgs;
use crate::source::Scanned;
use crate::{formats, output};

pub fn run(args: &DumpArgs) -> Result<ExitCode> {
    if args.follow {
        return follow(args);
    }
    let mut o = Scanned::open(&args.file, &args.input)?;
    let mut out = output::stdout();
    let d = formats::dump(&mut o, args, &mut out)?;
    if let Some(t) = &d.truncation {
        output::print_truncation(o.name(), t);
        if args.json {
            // The NDJSON stream's last line says where the file is cut, as every JSON output does.
            let mut line = b"{\"truncated\":".to_vec();
            profkit_common::truncation::push_json(&mut line, Some(t));
            line.extend_from_slice(b"}\n");
            out.write_all(&line)?;
            out.flush()?;
        }
    }
    for p in d.problems.iter().take(20) {
        output::print_warning(&format!("{}: {p}", o.name()));
    }
    if d.problems.len() > 20 {
        output::print_warning(&format!(
            "{}: {} more problems",
            o.name(),
            d.problems.len() - 20
        ));
    }
    if let Some(e) = d.stopped {
        return Err(anyhow!("{}: {e}", o.name()));
    }
    Ok(if d.problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}

/// Why a followed file must be read again: it is shorter than what was read, or its name
/// now names another file.
fn restarted(path: &std::path::Path, open: &File, read: u64) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let now = std::fs::metadata(path).ok()?;
    let ours = open.metadata().ok()?;
    if (now.dev(), now.ino()) != (ours.dev(), ours.ino()) {
        return Some("the file was replaced".to_string());
    }
    (ours.len() < read).then(|| {
        format!(
            "the file shrank to {} bytes after {read} were read",
            ours.len()
        )
    })
}

/// Tails a growing jitdump until JIT_CODE_CLOSE, Ctrl-C or `--timeout` without new records.
fn follow(args: &DumpArgs) -> Result<ExitCode> {
    let name = args.file.display().to_string();
    let file = File::open(&args.file).with_context(|| format!("{name}: cannot open"))?;
    let mut reader = FollowReader::new(file);
    let mut out = output::stdout();
    let mut dumper = Dumper::new(DumpOptions {
        json: args.json,
        code: args.code,
    });
    let timeout = args.timeout.map(Duration::from_secs_f64);
    let mut last_progress = Instant::now();
    let mut header_done = false;
    loop {
        // As `tail -F`: a file cut below what was read (truncated and rewritten) or replaced
        // under its name is read again from its start.
        let read = reader.bytes_read();
        if let Some(why) = restarted(&args.file, reader.get_mut(), read) {
            output::print_warning(&format!("{name}: {why}; reading it again from the start"));
            let file = File::open(&args.file).with_context(|| format!("{name}: cannot open"))?;
            reader.restart(file);
            header_done = false;
        }
        let added = reader
            .fill()
            .with_context(|| format!("{name}: cannot read"))?;
        if added > 0 {
            last_progress = Instant::now();
        }
        if !header_done {
            if let Some(h) = reader.header().map_err(|e| anyhow!("{name}: {e}"))? {
                header_done = true;
                dumper.header(&mut out, &h)?;
            }
        }
        let mut closed = false;
        while let Some(raw) = reader.next_record().map_err(|e| anyhow!("{name}: {e}"))? {
            closed |= raw.record_type == RecordType::CODE_CLOSE;
            dumper.record(&mut out, &raw)?;
        }
        out.flush()?;
        if closed {
            break;
        }
        if timeout.is_some_and(|t| last_progress.elapsed() >= t) {
            if reader.pending_bytes() > 0 {
                output::print_warning(&format!(
                    "{name}: stopped after the timeout with {} bytes of an incomplete record at offset {:#x}",
                    reader.pending_bytes(),
                    reader.offset()
                ));
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(ExitCode::SUCCESS)
}
