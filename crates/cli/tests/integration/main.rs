//! End-to-end tests of the `profkit` binary. One test binary for the crate; one module per
//! format.

mod jitdump;
mod mlpd;
mod xray;
