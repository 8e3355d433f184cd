#![no_main]
//! Fuzz the llvm-xray YAML trace reader: `trace_yaml::read_yaml`, `yaml_to_binary`, the binary
//! readers on what it encodes, and reading back the YAML written from that. The checks live in
//! `profkit_xray::harness`, which the regression test replays too.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    profkit_xray::harness::check_yaml(data);
});
