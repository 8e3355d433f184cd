//! The instrumented binaries of `-m`: which XRay object id each one is, and the function names
//! their instrumentation maps give the trace's ids.

use std::path::PathBuf;

use anyhow::{anyhow, bail, Result};
use profkit_model::feed::xray::add_object;
use profkit_model::FunctionTable;
use profkit_xray::{InstrMap, Symbolizer};

use crate::input;

/// The objects `-m` names: `(object id, path)`. `-m BIN` arguments take ids in order (the
/// executable is object 0, then each shared object in the order the XRay runtime registered
/// it); `-m ID=PATH` pins an id (0-255).
pub fn instr_maps(specs: &[String]) -> Result<Vec<(u8, PathBuf)>> {
    let mut out: Vec<(u8, PathBuf)> = Vec::new();
    let mut next = 0u16;
    for spec in specs {
        if let Some((id, _)) = spec.split_once('=') {
            if !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) && id.parse::<u8>().is_err()
            {
                bail!("-m {spec}: object id {id} is not one XRay can give (0-255)");
            }
        }
        let pinned = spec
            .split_once('=')
            .and_then(|(id, path)| Some((id.parse::<u8>().ok()?, path)));
        let (id, path) = match pinned {
            Some((id, path)) => (id, path),
            None => (
                u8::try_from(next).map_err(|_| anyhow!("-m: more than 256 objects"))?,
                spec.as_str(),
            ),
        };
        if out.iter().any(|(o, _)| *o == id) {
            bail!("-m {spec}: object id {id} is given twice");
        }
        next = u16::from(id) + 1;
        out.push((id, PathBuf::from(path)));
    }
    Ok(out)
}

/// Function names from the instrumented binaries (`-m`, see [`instr_maps`]); empty without
/// one (ids print as `#N`). Functions of shared object `k` get the packed ids the XRay runtime
/// writes: `k << 24 | id`.
pub fn names(specs: &[String]) -> Result<FunctionTable> {
    let mut table = FunctionTable::new();
    for (object, bin) in instr_maps(specs)? {
        let inp = input::open(&bin)?;
        let map = InstrMap::from_object(&inp.data)
            .map_err(|e| anyhow!("{}: cannot read the instrumentation map: {e}", inp.name))?;
        let sym = Symbolizer::new(&inp.data).ok();
        add_object(&mut table, object, &map, sym.as_ref());
    }
    Ok(table)
}
