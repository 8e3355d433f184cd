//! profkit-xray integration tests (one binary; modules per area).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common {
    use std::path::PathBuf;

    pub fn fixture_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/xray")
    }

    pub fn fixture(name: &str) -> Vec<u8> {
        let p = fixture_dir().join(name);
        std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    pub fn golden(name: &str) -> String {
        String::from_utf8(fixture(&format!("llvm-xray/{name}"))).unwrap()
    }

    /// One llvm-xray `convert -f yaml` record.
    #[derive(Debug, Clone, PartialEq)]
    pub struct LlvmRecord {
        pub func_id: u32,
        pub args: Vec<u64>,
        pub cpu: u16,
        pub thread: u32,
        pub process: u32,
        pub kind: String,
        pub tsc: u64,
        pub data: String,
    }

    pub fn llvm_records(yaml: &str) -> Vec<LlvmRecord> {
        let mut out = Vec::new();
        for (i, line) in yaml.lines().enumerate() {
            if !line.trim_start().starts_with("- {") {
                continue;
            }
            let f = profkit_xray::yaml::parse_flow_map(line, i + 1).unwrap();
            let get = |k: &str| f.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
            let num = |k: &str| get(k).map(|v| v.parse::<u64>().unwrap()).unwrap_or(0);
            out.push(LlvmRecord {
                func_id: num("func-id") as u32,
                args: get("args")
                    .map(|a| a.split(',').map(|x| x.trim().parse().unwrap()).collect())
                    .unwrap_or_default(),
                cpu: num("cpu") as u16,
                thread: num("thread") as u32,
                process: num("process") as u32,
                kind: get("kind").unwrap(),
                tsc: num("tsc"),
                data: get("data").unwrap_or_default(),
            });
        }
        out
    }
}

#[path = "integration/basic_chunks.rs"]
mod basic_chunks;
#[path = "integration/fuzz_regressions.rs"]
mod fuzz_regressions;
#[path = "integration/instr.rs"]
mod instr;
#[path = "integration/malformed.rs"]
mod malformed;
#[path = "integration/real.rs"]
mod real;
#[path = "integration/roundtrip.rs"]
mod roundtrip;
#[path = "integration/synthetic.rs"]
mod synthetic;
#[path = "integration/yaml.rs"]
mod yaml;
