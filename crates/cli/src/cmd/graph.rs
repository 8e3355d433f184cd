//! `profkit graph FILE [-m BIN]`: the call graph of an XRay trace or a Mono `calls` file as DOT
//! (llvm-xray graph's lines, labels and colours).

use std::process::ExitCode;

use anyhow::Result;
use profkit_analysis::graph::dot;
use profkit_export::Output;

use crate::cli::GraphArgs;
use crate::graphs::call_graph;
use crate::source::Opened;

pub fn run(args: &GraphArgs) -> Result<ExitCode> {
    let opened = Opened::open(&args.file, &args.input)?;
    let graph = call_graph(&opened, &args.instr_map, args.deduce_sibling_calls)?;
    let target = match &args.output {
        Some(p) => Output::staged(p),
        None => Output::stdout(),
    };
    let mut out = target.create()?;
    dot::write_graph(&mut out, graph.named(), args.style.style())?;
    out.flush()?;
    drop(out);
    target.commit()?;
    Ok(ExitCode::SUCCESS)
}
