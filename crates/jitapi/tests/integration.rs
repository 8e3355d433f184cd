//! Integration tests: one binary, one module per area.

mod support;

mod c_threads;
mod fork;
mod itt;
mod perf_e2e;
mod stub;
