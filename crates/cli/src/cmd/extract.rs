//! `profkit extract BIN [--symbolize]`: the XRay instrumentation map as llvm-xray extract's YAML.

use std::collections::HashMap;
use std::io::Write;
use std::process::ExitCode;

use anyhow::{anyhow, Result};
use profkit_xray::{InstrMap, Symbolizer};

use crate::cli::ExtractArgs;
use crate::input;
use profkit_export::Output;

pub fn run(args: &ExtractArgs) -> Result<ExitCode> {
    let inp = input::open(&args.binary)?;
    let map = InstrMap::from_object(&inp.data)
        .map_err(|e| anyhow!("{}: cannot extract the instrumentation map: {e}", inp.name))?;
    let yaml = if args.symbolize {
        let sym = Symbolizer::new(&inp.data).map_err(|e| anyhow!("{}: {e}", inp.name))?;
        let mut cache: HashMap<u64, String> = HashMap::new();
        map.to_yaml(|s| {
            cache
                .entry(s.function)
                .or_insert_with(|| sym.symbolize(s.function).display_name(s.function))
                .clone()
        })
    } else {
        map.to_yaml(|_| String::new())
    };
    let target = match &args.output {
        Some(p) => Output::staged(p),
        None => Output::stdout(),
    };
    let mut out = target.create()?;
    out.write_all(yaml.as_bytes())?;
    out.flush()?;
    drop(out);
    target.commit()?;
    Ok(ExitCode::SUCCESS)
}
