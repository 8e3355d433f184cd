//! Integration tests: one binary, one module per area.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

mod c_threads;
mod fork;
mod itt;
mod misuse;
mod perf_e2e;
mod stub;
