//! Integration tests of profkit-perf: real recordings, truncation, hostile input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
