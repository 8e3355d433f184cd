//! End-to-end tests of the `profkit` binary. One test binary for the crate; one module per
//! format or area, and `support` for what they share.

mod export;
mod jitdump;
mod mlpd;
mod support;
mod xray;
