//! `profkit extract BIN... [--symbolize]`: the XRay instrumentation map as llvm-xray extract's
//! YAML. Several objects (an executable and its `-fxray-shared` libraries, in the order the
//! runtime registers them, or `ID=PATH` to pin an object id) give one map whose ids are the
//! packed ids their traces hold (`object << 24 | id`); one binary prints what llvm-xray prints.

use std::collections::HashMap;
use std::io::Write;
use std::process::ExitCode;

use anyhow::{anyhow, Result};
use profkit_xray::{InstrMap, Symbolizer};

use crate::cli::ExtractArgs;
use crate::input;
use crate::instr_maps::instr_maps;
use profkit_export::Output;

pub fn run(args: &ExtractArgs) -> Result<ExitCode> {
    let mut all = InstrMap::default();
    // Per object id, its symbolizer (with --symbolize).
    let mut symbolizers: HashMap<u32, Symbolizer> = HashMap::new();
    for (object, path) in instr_maps(&args.binaries)? {
        let inp = input::open(&path)?;
        let map = InstrMap::from_object(&inp.data)
            .map_err(|e| anyhow!("{}: cannot extract the instrumentation map: {e}", inp.name))?;
        let object = u32::from(object);
        all.sleds.extend(map.sleds.into_iter().map(|mut s| {
            s.func_id |= object << 24;
            s
        }));
        if args.symbolize {
            let sym = Symbolizer::new(&inp.data).map_err(|e| anyhow!("{}: {e}", inp.name))?;
            symbolizers.insert(object, sym);
        }
    }
    let mut cache: HashMap<(u32, u64), String> = HashMap::new();
    let yaml = all.to_yaml(|s| {
        let object = s.func_id >> 24;
        let Some(sym) = symbolizers.get(&object) else {
            return String::new();
        };
        cache
            .entry((object, s.function))
            .or_insert_with(|| sym.symbolize(s.function).display_name(s.function))
            .clone()
    });
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
