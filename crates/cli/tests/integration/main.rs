//! End-to-end tests of the `profkit` binary. One test binary for the crate; one module per
//! format or area, and `support` for what they share.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod cuts;
mod export;
mod fleet;
mod graph;
mod gzip;
mod jitdump;
mod limits;
mod mlpd;
mod otlp;
mod perf;
mod record;
mod runtimes;
mod support;
mod view;
mod xray;
