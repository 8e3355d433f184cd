//! llvm-xray's YAML: traces written and read back, and the small subset of YAML llvm-xray
//! writes.
//!
//! * [`write_yaml`]: a whole trace as `llvm-xray convert -f yaml` writes it (sorted or in file
//!   order, with ids or names), in parallel and streaming for FDR traces.
//! * [`read_yaml`] and [`yaml_to_binary`] ([`text_to_binary`] from a file's bytes): that YAML (profkit's and llvm-xray's) read back and
//!   re-encoded as a binary trace, so every reader and analysis works on YAML input too.
//! * [`scalar`], [`parse_flow_map`], [`parse_int`]: LLVM's quoting rules and the one-line
//!   flow maps of its YAML (also used for the instrumentation map's `extract` YAML).
//!
//! # Output
//! Byte-compatible with llvm-xray 14 on traces where llvm is right: the `header:` block, then
//! one flow map per record `{ type, func-id, function, [args,] cpu, thread, [process,] kind,
//! tsc, data }`. As llvm does, a custom or typed event carries the function id of the thread's
//! previous function record. Unlike llvm, a typed event's type does not stick to later records.
//!
//! # Lossless payloads (profkit extension)
//! llvm writes a payload as a YAML scalar, which mangles bytes that are not UTF-8. profkit
//! writes `data:` the same way when the payload is UTF-8 text without control characters;
//! otherwise it writes `data: ''` followed by `data-hex: '<lowercase hex of every byte>'`. The
//! reader accepts both, so payloads round-trip exactly. (llvm-xray 14 cannot read back YAML of
//! version > 1 anyway, so the extra key costs no compatibility.)

pub(crate) mod basic;
pub(crate) mod convert;
mod syntax;
pub(crate) mod trace;

pub use convert::{write_yaml, YamlOptions, YamlOutcome};
pub use syntax::{logical_lines, parse_flow_map, parse_int, scalar};
pub use trace::{read_yaml, text_to_binary, yaml_to_binary, YamlTrace};
