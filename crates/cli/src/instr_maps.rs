//! The instrumented binaries of `-m`: which XRay object id each one is, and the function names
//! their instrumentation maps give the trace's ids.

use std::path::PathBuf;

use anyhow::{anyhow, Result};
use profkit_model::feed::xray::add_object;
use profkit_model::FunctionTable;
use profkit_xray::instr_map::{object_ids, ObjectIdError};
use profkit_xray::{InstrMap, Symbolizer};

use crate::input;

/// The objects `-m` names: `(object id, path)` (profkit-xray's [`object_ids`]: `-m BIN` takes
/// ids in order, `-m ID=PATH` pins one).
pub fn instr_maps(specs: &[String]) -> Result<Vec<(u8, PathBuf)>> {
    object_ids(specs).map_err(|e| match e {
        ObjectIdError::OutOfRange { spec, id } => {
            anyhow!("-m {spec}: object id {id} is not one XRay can give (0-255)")
        }
        ObjectIdError::Twice { spec, id } => anyhow!("-m {spec}: object id {id} is given twice"),
        ObjectIdError::TooMany => anyhow!("-m: more than 256 objects"),
    })
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
