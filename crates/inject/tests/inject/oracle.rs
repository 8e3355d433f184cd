//! `perf report` on our output against `perf inject --jit`'s, on the committed recordings:
//! the same self share per symbol (top 20 within 0.1 point), a handful of files instead of
//! thousands, `--call-graph dwarf` unwinding through JIT frames as well, `perf annotate` and
//! `--sort srcline` working. Needs perf; skipped without it unless
//! `PROFKIT_REQUIRE_EXTERNAL=1`.

use std::path::{Path, PathBuf};
use std::process::Command;

use profkit_inject::{inject, Options, Report};

use crate::{count_files, stage};

fn perf(test: &str) -> Option<PathBuf> {
    profkit_testkit::tool(
        test,
        "perf",
        "perf (linux-perf, for perf inject and perf report)",
    )
}

/// `perf` with its build-id cache beside `data` (perf inject copies every ELF it writes into
/// the cache, `~/.debug` by default: 2,505 files per run here).
fn perf_cmd(perf: &Path, data: &Path) -> Command {
    let mut c = Command::new(perf);
    c.arg("--buildid-dir")
        .arg(data.parent().unwrap_or(Path::new(".")).join("buildid"));
    c
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `perf inject --jit -i data -o out`.
fn perf_inject(perf: &Path, data: &Path, out: &Path) {
    run(perf_cmd(perf, data)
        .arg("inject")
        .arg("--jit")
        .arg("-i")
        .arg(data)
        .arg("-o")
        .arg(out));
}

/// Ours, with the ELFs in `<out>-jit/`.
fn ours(data: &Path, out: &Path) -> Report {
    inject(&Options {
        input: data.to_path_buf(),
        output: out.to_path_buf(),
        ..Options::default()
    })
    .unwrap()
}

/// `(symbol, self %)` of `perf report --sort sym`, in perf's order.
fn shares(perf: &Path, data: &Path) -> Vec<(String, f64)> {
    let text = run(perf_cmd(perf, data)
        .args([
            "report",
            "--stdio",
            "--no-children",
            "--sort",
            "sym",
            "-g",
            "none",
            "-i",
        ])
        .arg(data));
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (pct, sym) = l.trim().split_once("%  ")?;
            Some((sym.trim().to_string(), pct.trim().parse().ok()?))
        })
        .collect()
}

/// How perf unwinds samples whose leaf is JIT code: (samples, JIT-leaf samples, of those
/// reaching `node::Start`, mean JIT frames per JIT-leaf sample).
fn unwinding(perf: &Path, data: &Path) -> (usize, usize, usize, f64) {
    let text = run(perf_cmd(perf, data)
        .args(["script", "-F", "comm,tid,time,ip,sym,dso", "-i"])
        .arg(data));
    let (mut all, mut jit, mut reach, mut frames) = (0, 0, 0, 0usize);
    for sample in text.split("\n\n") {
        let lines: Vec<&str> = sample
            .lines()
            .skip(1)
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.contains("[kernel.kallsyms]"))
            .collect();
        if sample.trim().is_empty() {
            continue;
        }
        all += 1;
        let is_jit = |l: &str| l.contains("jitted-") || l.contains("profkit-jit-");
        if lines.first().is_some_and(|l| is_jit(l)) {
            jit += 1;
            if lines.iter().any(|l| l.contains("node::Start")) {
                reach += 1;
            }
            frames += lines.iter().filter(|l| is_jit(l)).count();
        }
    }
    (all, jit, reach, frames as f64 / jit.max(1) as f64)
}

/// Both tools on one staged recording; returns (ours, perf's) outputs and our report.
fn both(perf: &Path, data: &str, dump: &str) -> (tempfile::TempDir, PathBuf, PathBuf, Report) {
    let (dir, input) = stage(data, dump);
    let theirs = dir.path().join("perf.jit.data");
    perf_inject(perf, &input, &theirs);
    let mine = dir.path().join("ours.data");
    let report = ours(&input, &mine);
    (dir, mine, theirs, report)
}

fn same_self_shares(perf: &Path, data: &str, dump: &str) {
    let (dir, mine, theirs, report) = both(perf, data, dump);
    let a = shares(perf, &theirs);
    let b = shares(perf, &mine);
    let get = |v: &[(String, f64)], s: &str| v.iter().find(|x| x.0 == s).map_or(0.0, |x| x.1);
    for (sym, pct) in a.iter().take(20) {
        let got = get(&b, sym);
        assert!(
            (got - pct).abs() <= 0.1,
            "{data}: {sym}: perf inject {pct}%, ours {got}%"
        );
    }
    for (sym, pct) in b.iter().take(20) {
        let want = get(&a, sym);
        assert!(
            (want - pct).abs() <= 0.1,
            "{data}: {sym}: ours {pct}%, perf inject {want}%"
        );
    }
    let jit_share: f64 = b
        .iter()
        .filter(|(s, _)| {
            s.contains("JS:") || s.contains("Builtin:") || s.contains("BytecodeHandler:")
        })
        .map(|(_, p)| p)
        .sum();
    assert!(jit_share > 50.0, "{data}: JIT symbols have {jit_share}%");

    // A handful of files instead of one per function.
    let theirs_files = count_files(dir.path(), "jitted-");
    let elf_dir = profkit_inject::default_elf_dir(&mine);
    let ours_files = count_files(&elf_dir, "profkit-jit-");
    assert_eq!(ours_files, report.elfs_written);
    assert!(ours_files <= 4, "{ours_files} ELFs");
    assert!(theirs_files > 1000, "perf inject wrote {theirs_files}");
    assert!(report.mmap2_added < 20, "{} MMAP2", report.mmap2_added);
    eprintln!(
        "{data}: perf report self shares equal on {} symbols; perf inject: {theirs_files} ELFs; profkit: {ours_files} ELFs, {} MMAP2, {} functions",
        a.len(),
        report.mmap2_added,
        report.functions
    );
}

#[test]
fn self_shares_match_perf_inject() {
    let Some(perf) = perf("self_shares_match_perf_inject") else {
        return;
    };
    same_self_shares(&perf, "node-fp.data", "node-fp.jit-");
    same_self_shares(&perf, "node-dwarf.data.gz", "node-dwarf.jit-");
}

#[test]
fn dwarf_unwinding_through_jit_frames_matches_perf_inject() {
    let Some(perf) = perf("dwarf_unwinding_through_jit_frames_matches_perf_inject") else {
        return;
    };
    let (_dir, mine, theirs, report) = both(&perf, "node-dwarf.data.gz", "node-dwarf.jit-");
    // The JIT code with unwinding info got its FDEs, mapped where perf reads them.
    assert!(report.processes[0]
        .elfs
        .iter()
        .any(|e| e.fdes > 0 && e.unwind_map.is_some()));
    let t = unwinding(&perf, &theirs);
    let o = unwinding(&perf, &mine);
    eprintln!("node-dwarf: (samples, JIT leaf, reaching node::Start, JIT frames per sample): perf inject {t:?}, profkit {o:?}");
    assert_eq!(o.1, t.1);
    assert!(o.2 + 1 >= t.2, "perf inject {t:?}, ours {o:?}");
    assert!(o.3 + 0.5 >= t.3, "perf inject {t:?}, ours {o:?}");
    assert!(o.2 * 10 >= o.1 * 9, "{o:?}");
}

#[test]
fn annotate_and_srcline_work_on_jit_code() {
    let Some(perf) = perf("annotate_and_srcline_work_on_jit_code") else {
        return;
    };
    let (dir, input) = stage("node-fp.data", "node-fp.jit-");
    let mine = dir.path().join("ours.data");
    ours(&input, &mine);
    let top = shares(&perf, &mine)
        .into_iter()
        .find(|(s, _)| s.starts_with("[.] JS:"))
        .unwrap()
        .0;
    let name = top.trim_start_matches("[.] ");
    let text = run(perf_cmd(&perf, &mine)
        .args(["annotate", "--stdio", "-i"])
        .arg(&mine)
        .arg("-s")
        .arg(name));
    let instructions = text
        .lines()
        .filter(|l| {
            l.contains(" :   ") && (l.contains("mov") || l.contains("cmp") || l.contains("j"))
        })
        .count();
    assert!(instructions > 10, "perf annotate of {name}:\n{text}");
    // Lines from DEBUG_INFO: most samples land on busy.js lines.
    let lines = run(perf_cmd(&perf, &mine)
        .args([
            "report",
            "--stdio",
            "--no-children",
            "--sort",
            "srcline",
            "-g",
            "none",
            "-i",
        ])
        .arg(&mine));
    let busy: f64 = lines
        .lines()
        .filter(|l| l.contains("busy.js:"))
        .filter_map(|l| l.trim().split_once('%')?.0.parse::<f64>().ok())
        .sum();
    assert!(busy > 50.0, "srcline:\n{lines}");
}
