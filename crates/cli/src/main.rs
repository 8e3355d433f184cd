//! `profkit`: the command-line front end. Thin: it parses arguments, opens inputs, picks the
//! library pieces and prints. Exit codes: 0 ok, 1 findings (`validate`), 2 usage, I/O or
//! parse failure. A closed output pipe (`profkit dump x | head`) ends quietly with 0.

mod cli;
mod cmd;
mod detect;
mod formats;
mod graphs;
mod input;
mod instr_maps;
mod output;
mod progress;
mod source;
mod spool;

use std::process::ExitCode;

/// mimalloc (v3) instead of glibc's malloc: a conversion first-touches tens of MB of fresh
/// heap on every thread (a folded writer's stack tree, DWARF sections, code maps), and page
/// faults were a tenth of `convert perf.data`'s time; mimalloc's segments take them in far
/// fewer faults. `convert` of the tsc recording: 0.163 -> 0.149 s, peak RSS 115 -> 130 MB;
/// XRay and Mono runs as fast as before (docs/BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::Parser;

fn main() -> ExitCode {
    // The process ends with its command: large structures are left to the exit.
    profkit_common::release::at_exit_only();
    let args = cli::Cli::parse();
    profkit_native::set_cpp_parameters(!args.short_names);
    let result = match args.command {
        cli::Command::Info(a) => cmd::info::run(&a),
        cli::Command::Dump(a) => cmd::dump::run(&a),
        cli::Command::Validate(a) => cmd::validate::run(&a),
        cli::Command::Convert(a) => cmd::convert::run(&a),
        cli::Command::Account(a) => cmd::account::run(&a),
        cli::Command::Stack(a) => cmd::stack::run(&a),
        cli::Command::Graph(a) => cmd::graph::run(&a),
        cli::Command::Diff(a) => cmd::diff::run(&a),
        cli::Command::Extract(a) => cmd::extract::run(&a),
        cli::Command::Report(a) => cmd::report::run(&a),
        cli::Command::Symbolize(a) => cmd::symbolize::run(&a),
        cli::Command::Inject(a) => cmd::inject::run(&a),
        cli::Command::Completions(a) => cmd::completions::run(&a),
    };
    match result {
        Ok(code) => code,
        Err(e) if output::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            output::print_error(&format!("{e:#}"));
            ExitCode::from(2)
        }
    }
}
