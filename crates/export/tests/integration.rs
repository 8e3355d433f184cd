//! Integration tests of profkit-export: one binary, one module per output format.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
#[path = "integration/call_args.rs"]
mod call_args;
#[path = "integration/chrome.rs"]
mod chrome;
#[path = "integration/firefox.rs"]
mod firefox;
#[path = "integration/folded.rs"]
mod folded;
#[path = "integration/harness.rs"]
mod harness;
#[path = "integration/otlp.rs"]
mod otlp;
#[path = "integration/parquet.rs"]
mod parquet;
#[path = "integration/perfetto.rs"]
mod perfetto;
#[path = "integration/perfmap.rs"]
mod perfmap;
#[path = "integration/pprof.rs"]
mod pprof;
#[path = "integration/real_inputs.rs"]
mod real_inputs;
#[path = "integration/speedscope.rs"]
mod speedscope;
#[path = "integration/synthetic.rs"]
mod synthetic;
#[path = "integration/viewer_fixtures.rs"]
mod viewer_fixtures;
