//! `perf_rewrite IN OUT`: reads a perf.data (file or pipe mode) and writes it back in file mode
//! through profkit-perf's write layer, with nothing added. `perf report` on both should agree;
//! a quick check of the writer on any recording.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::BufWriter;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, input, output] = args.as_slice() else {
        return Err("usage: perf_rewrite IN OUT".into());
    };
    let bytes = std::fs::read(input)?;
    let data = profkit_perf::PerfData::parse(&bytes)?;
    let out = BufWriter::new(std::fs::File::create(output)?);
    let stats = profkit_perf::write(&data, &[], &[], Default::default(), out)?;
    eprintln!("{stats:?}");
    Ok(())
}
