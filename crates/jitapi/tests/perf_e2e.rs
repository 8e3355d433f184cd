//! End to end with perf: a JIT program reports three functions, runs under
//! `perf record -k 1`; `perf inject --jit` + `perf report` must name them.

use std::process::Command;

use crate::support::{c_host, read_dump};

#[cfg(target_arch = "x86_64")]
#[test]
fn perf_inject_names_jit_functions() {
    let dir = tempfile::tempdir().unwrap();
    let exe = c_host("jitloop", dir.path());
    let Some(perf) = profkit_testkit::perf("perf_inject_names_jit_functions") else {
        // The JIT side still has to work without perf.
        let st = Command::new(&exe)
            .current_dir(dir.path())
            .env("PROFKIT_JITDUMP_DIR", dir.path())
            .status()
            .unwrap();
        assert!(st.success());
        return;
    };
    let data = dir.path().join("perf.data");
    let st = Command::new(&perf)
        .args(["record", "-q", "-k", "1", "-e", "cpu-clock", "-o"])
        .arg(&data)
        .arg(&exe)
        .current_dir(dir.path())
        .env("PROFKIT_JITDUMP_DIR", dir.path())
        .env("PERF_BUILDID_DIR", dir.path().join("buildid"))
        .status()
        .unwrap();
    assert!(st.success(), "perf record");
    let dump = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("jit-"))
        .expect("jit-<pid>.dump");
    let loads = read_dump(&dump);
    let names: Vec<_> = loads.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["jitfn_alpha", "jitfn_beta", "jitfn_gamma"]);
    let injected = dir.path().join("perf.jit.data");
    let o = Command::new(&perf)
        .args(["inject", "--jit", "-i"])
        .arg(&data)
        .arg("-o")
        .arg(&injected)
        .current_dir(dir.path())
        .env("PERF_BUILDID_DIR", dir.path().join("buildid"))
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "perf inject: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = Command::new(&perf)
        .args(["report", "--stdio", "--sort", "sym", "-i"])
        .arg(&injected)
        .current_dir(dir.path())
        .env("PERF_BUILDID_DIR", dir.path().join("buildid"))
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "perf report: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    for f in ["jitfn_alpha", "jitfn_beta", "jitfn_gamma"] {
        assert!(
            report.contains(f),
            "{f} missing from perf report:\n{report}"
        );
    }
    // profkit reads the same recording (the dump found through perf's marker mmap) and gives
    // each JIT function the share perf gives it.
    let ours = profkit_self_shares(&data);
    for f in ["jitfn_alpha", "jitfn_beta", "jitfn_gamma"] {
        let theirs: f64 = report
            .lines()
            .filter(|l| l.trim_end().ends_with(&format!("[.] {f}")))
            .filter_map(|l| l.trim().split('%').next()?.parse::<f64>().ok())
            .sum();
        let mine = ours.get(f).copied().unwrap_or(0.0);
        assert!(
            (mine - theirs).abs() <= 0.5,
            "{f}: perf {theirs:.2}%, profkit {mine:.2}%\n{report}"
        );
    }
}

/// Self share (percent of the weight) of each leaf function, from profkit's perf.data driver.
fn profkit_self_shares(data: &std::path::Path) -> std::collections::HashMap<String, f64> {
    use profkit_model::events::{EventSink, Sample, TraceInfo};
    use profkit_model::feed::perf::{feed, PerfOptions};
    use profkit_model::{FuncId, FuncInfo};
    #[derive(Default)]
    struct Leaves {
        names: std::collections::HashMap<FuncId, String>,
        weights: std::collections::HashMap<String, u64>,
        total: u64,
    }
    impl EventSink for Leaves {
        fn begin(&mut self, _: &TraceInfo<'_>) -> std::io::Result<()> {
            Ok(())
        }
        fn function(&mut self, id: FuncId, info: &FuncInfo) -> std::io::Result<()> {
            self.names.insert(id, info.name.clone().unwrap_or_default());
            Ok(())
        }
        fn sample(&mut self, s: &Sample<'_>) -> std::io::Result<()> {
            let leaf = s.stack.last().and_then(|id| self.names.get(id)).cloned();
            *self.weights.entry(leaf.unwrap_or_default()).or_default() += s.weight;
            self.total += s.weight;
            Ok(())
        }
        fn finish(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let bytes = std::fs::read(data).unwrap();
    let mut sink = Leaves::default();
    let (_, report) = feed(
        &bytes,
        "perf.data",
        &PerfOptions::new(Some(data), Vec::new()),
        None,
        &mut sink,
    )
    .unwrap();
    assert!(
        report.processes.iter().any(|p| p.jitdump.is_some()),
        "no jitdump found: {:?}",
        report.warnings()
    );
    let total = sink.total.max(1) as f64;
    sink.weights
        .into_iter()
        .map(|(k, v)| (k, 100.0 * v as f64 / total))
        .collect()
}
