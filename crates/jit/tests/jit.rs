//! profkit-jit's tests: the code map on real and hand-made jitdumps.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

#[path = "jit/codemap.rs"]
mod codemap;
