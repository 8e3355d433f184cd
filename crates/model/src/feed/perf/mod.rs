//! The perf.data driver: samples named through the recording's JIT metadata and binaries.

pub mod jit;
