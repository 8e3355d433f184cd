//! Parity with mprof-report 6.8 on the committed fixtures (its outputs are in
//! `NAME.report.txt`), and the documented differences where mprof-report is wrong.

use std::collections::{BTreeMap, BTreeSet};

use profkit_analysis::mono_report::{self as report, Options, Report};
use profkit_mlpd::File;

use super::{fixtures, load, mlpd_files};

/// mprof-report's text split into sections (by their title lines).
fn sections(text: &str) -> BTreeMap<String, Vec<String>> {
    let titles = [
        "Mono log profiler data",
        "JIT summary",
        "GC summary",
        "Statistical samples summary",
        "Allocation summary",
        "Method call summary",
        "Metadata summary",
        "Exception summary",
        "Monitor lock summary",
        "Thread summary",
        "Domain summary",
        "Context summary",
        "Heap shot summary",
        "Counters:",
    ];
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut cur: Option<String> = None;
    for line in text.lines() {
        if let Some(t) = titles.iter().find(|&&t| line == t) {
            cur = Some(t.to_string());
            out.entry(t.to_string()).or_default();
            continue;
        }
        if line.starts_with("unmatched leave") || line.is_empty() {
            continue;
        }
        if let Some(c) = &cur {
            out.entry(c.clone()).or_default().push(line.to_string());
        }
    }
    out
}

fn compute(path: &std::path::Path) -> Report {
    let data = load(path);
    let file = File::parse(&data).expect("header");
    report::compute(
        &file,
        &Options {
            parallel: true,
            ..Options::default()
        },
    )
}

fn text(r: &Report, verbose: bool) -> String {
    let mut v = Vec::new();
    let sections: Vec<&str> = report::SECTIONS
        .iter()
        .copied()
        .filter(|&s| s != "stats")
        .collect();
    report::write_text(&mut v, r, &sections, verbose).expect("write");
    String::from_utf8(v).expect("utf8")
}

fn num(s: &str) -> u64 {
    s.trim()
        .trim_end_matches("us")
        .parse()
        .unwrap_or_else(|_| panic!("number {s:?}"))
}

/// `  Bytes Count Average Name` rows → name → (bytes, count).
fn rows(lines: &[String]) -> BTreeMap<String, (u64, u64)> {
    let mut m = BTreeMap::new();
    for l in lines {
        let parts: Vec<&str> = l.split_whitespace().collect();
        if parts.len() < 4 {
            continue;
        }
        let (Ok(b), Ok(c), Ok(_)) = (
            parts[0].parse::<u64>(),
            parts[1].parse::<u64>(),
            parts[2].parse::<u64>(),
        ) else {
            continue;
        };
        let rest = parts[3..].join(" ");
        let name = match rest.find(" (bytes: ") {
            Some(i) => rest[..i].to_string(),
            None => rest,
        };
        m.insert(name, (b, c));
    }
    m
}

#[test]
fn every_fixture_decodes_without_problems() {
    let files = mlpd_files();
    assert!(files.len() >= 10, "run scripts/fixtures/mono.sh");
    for f in files {
        let r = compute(&f);
        assert!(r.problems.is_empty(), "{}: {:?}", f.display(), r.problems);
        assert_eq!(r.skipped_bytes, 0, "{}", f.display());
        assert!(r.events > 1000, "{}", f.display());
        assert_eq!(r.header.data_version, 17);
        assert_eq!(r.header.major, 3);
    }
}

/// Sections whose every line must equal mprof-report's (order-insensitive where mprof-report
/// prints in hash order).
#[test]
fn simple_sections_equal_mprof_report() {
    for f in mlpd_files() {
        let golden = std::fs::read_to_string(f.with_extension("report.txt")).expect("golden");
        let g = sections(&golden);
        let ours = sections(&text(&compute(&f), false));
        let name = f.display().to_string();
        for s in [
            "JIT summary",
            "Metadata summary",
            "Exception summary",
            "Statistical samples summary",
            "Monitor lock summary",
            "Domain summary",
            "Context summary",
        ] {
            let a: BTreeSet<_> = g.get(s).cloned().unwrap_or_default().into_iter().collect();
            let b: BTreeSet<_> = ours
                .get(s)
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .collect();
            assert_eq!(a, b, "{name}: section {s}");
        }
        // threads: the same ids and names (mprof-report prints them in hash order)
        let a: BTreeSet<_> = g
            .get("Thread summary")
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .collect();
        let b: BTreeSet<_> = ours
            .get("Thread summary")
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .collect();
        assert_eq!(a, b, "{name}: threads");
        // header: everything but the startup line (mprof-report prints ctime)
        let strip = |v: Vec<String>| -> Vec<String> {
            v.into_iter()
                .filter(|l| !l.contains("Program startup"))
                .collect()
        };
        assert_eq!(
            strip(g.get("Mono log profiler data").cloned().unwrap_or_default()),
            strip(
                ours.get("Mono log profiler data")
                    .cloned()
                    .unwrap_or_default()
            ),
            "{name}: header"
        );
        // counters: every value mprof-report prints
        let a = g.get("Counters:").cloned().unwrap_or_default();
        let b = ours.get("Counters:").cloned().unwrap_or_default();
        assert_eq!(a, b, "{name}: counters");
    }
}

#[test]
fn gc_summary_equals_mprof_report() {
    for f in mlpd_files() {
        let golden = std::fs::read_to_string(f.with_extension("report.txt")).expect("golden");
        let g = sections(&golden);
        let ours = sections(&text(&compute(&f), false));
        let name = f.display().to_string();
        let mut a = g.get("GC summary").cloned().unwrap_or_default();
        // profkit also lists pinned handles, which mprof-report leaves out
        let mut b: Vec<String> = ours
            .get("GC summary")
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|l| !l.contains("GC handles pinned"))
            .collect();
        if name.contains("churn_gc_heapshot") {
            // collections that end on another thread than they started: the same counts, but
            // mprof-report's pauses are nonsense there (gc_pauses_pair_across_threads)
            let count = |l: &String| l.split(", max time").next().unwrap_or(l).to_string();
            a = a.iter().map(count).collect();
            b = b.iter().map(count).collect();
        }
        assert_eq!(a, b, "{name}");
    }
}

/// Issue #13: a Gen1 collection may start on one thread and end on another (in
/// churn_gc_heapshot, sgen's concurrent major collections start on Main and end on the
/// finalizer thread). A collection is process-wide: profkit pairs START and END across
/// threads, in time order. mprof-report pairs them per thread, so an END on a thread that
/// started nothing is measured from time 0.
#[test]
fn gc_pauses_pair_across_threads() {
    let f = fixtures().join("churn_gc_heapshot.mlpd");
    let r = compute(&f);
    // the Gen1 START and END times as `mprof-report --debug` prints them ("gc event for gen1:
    // start at T (thread: ...)"), with their threads: M the main thread, F the finalizer
    let gen1 = [
        (34158867100365u64, 'M', 34158867812598u64, 'F'),
        (34158867813209, 'F', 34158867981179, 'F'),
        (34158869415860, 'M', 34158869775106, 'F'),
        (34158869775427, 'F', 34158869934925, 'F'),
        (34158871427963, 'M', 34158872273505, 'F'),
        (34158872273795, 'F', 34158872500714, 'F'),
        (34159886145686, 'M', 34159887001603, 'M'),
    ];
    assert!(gen1.iter().any(|&(_, a, _, b)| a != b));
    let total: u64 = gen1.iter().map(|&(s, _, e, _)| e - s).sum();
    let max = gen1.iter().map(|&(s, _, e, _)| e - s).max().unwrap_or(0);
    assert_eq!(r.gc_gens[1], (7, max, total));
    let ours = sections(&text(&r, false));
    let line = "\tGen1 collections: 7, max time: 855us, total time: 3327us, average: 475us";
    assert!(
        ours["GC summary"].iter().any(|l| l == line),
        "{:?}",
        ours["GC summary"]
    );
    // mprof-report: the same count, and the first cross-thread END measured from 0
    let golden = std::fs::read_to_string(f.with_extension("report.txt")).expect("golden");
    let theirs = sections(&golden);
    let want = format!("\tGen1 collections: 7, max time: {}us,", gen1[0].2 / 1000);
    assert!(
        theirs["GC summary"].iter().any(|l| l.starts_with(&want)),
        "{:?}",
        theirs["GC summary"]
    );
}

/// Issue #13: frames still open at the end of the file (Threads.exe ends in
/// Environment.Exit) close at the time of their thread's last event, as mprof-report closes
/// them: the same rows, to the millisecond, for Exit and the frames below it.
#[test]
fn frames_open_at_the_end_close_at_the_threads_last_event() {
    let f = fixtures().join("threads_calls.mlpd");
    let r = compute(&f);
    assert_eq!(r.unfinished, 3);
    let golden = std::fs::read_to_string(f.with_extension("report.txt")).expect("golden");
    let theirs = sections(&golden);
    let ours = sections(&text(&r, false));
    let mut checked = 0;
    for method in [
        "System.Environment:Exit (int)",
        "Threads:Main (string[])",
        "<Module>:runtime_invoke_int_object",
    ] {
        let t = theirs["Method call summary"]
            .iter()
            .find(|l| l.contains(method))
            .unwrap_or_else(|| panic!("mprof-report has no {method}"));
        let o = ours["Method call summary"]
            .iter()
            .find(|l| l.contains(method))
            .unwrap_or_else(|| panic!("profkit has no {method}"));
        let cols = |l: &str| -> Vec<u64> { l.split_whitespace().take(3).map(num).collect() };
        let (a, b) = (cols(t), cols(o));
        assert_eq!(a[2], b[2], "{method}: calls");
        assert!(
            a[0].abs_diff(b[0]) <= 1 && a[1].abs_diff(b[1]) <= 1,
            "{t} / {o}"
        );
        // Exit returns never: the runtime stops about a second later
        assert!(b[0] >= 1000, "{o}");
        checked += 1;
    }
    assert_eq!(checked, 3);
}

/// Issue #13: every thread is listed, with a name or not (Threads.exe leaves one worker
/// unnamed; mprof-report lists it as `name: ""`), sorted by name then id.
#[test]
fn threads_without_a_name_are_listed_in_name_order() {
    let f = fixtures().join("threads_calls.mlpd");
    let r = compute(&f);
    let unnamed: Vec<_> = r.threads.iter().filter(|(_, n)| n.is_empty()).collect();
    assert_eq!(unnamed.len(), 1, "{:?}", r.threads);
    let mut sorted = r.threads.clone();
    sorted.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(&b.0)));
    assert_eq!(r.threads, sorted);
    let golden = std::fs::read_to_string(f.with_extension("report.txt")).expect("golden");
    let mut theirs = sections(&golden)["Thread summary"].clone();
    let mut ours = sections(&text(&r, false))["Thread summary"].clone();
    assert!(theirs.iter().any(|l| l.ends_with("name: \"\"")));
    theirs.sort();
    ours.sort();
    assert_eq!(theirs, ours);
}

/// Allocation rows equal mprof-report's, except its "unresolved class (nil)" row (bug 6.4.1),
/// which profkit splits into the classes the late-bound vtables name.
#[test]
fn alloc_equals_mprof_report_with_late_binding() {
    let mut checked_unresolved = 0;
    for f in mlpd_files() {
        let golden = std::fs::read_to_string(f.with_extension("report.txt")).expect("golden");
        let g = sections(&golden);
        let Some(ga) = g.get("Allocation summary") else {
            continue;
        };
        let r = compute(&f);
        let name = f.display().to_string();
        let theirs = rows(ga);
        let ours: BTreeMap<String, (u64, u64)> = r
            .alloc
            .iter()
            .map(|(n, b, c)| (n.clone(), (*b, *c)))
            .collect();
        assert!(
            !ours.keys().any(|k| k.starts_with("unresolved")),
            "{name}: {ours:?}"
        );
        let mut extra = (0u64, 0u64);
        for (k, v) in &ours {
            match theirs.get(k) {
                Some(t) if t == v => {}
                Some(t) => {
                    // a class that also had unresolved allocations in mprof-report
                    assert!(
                        v.0 > t.0 && v.1 > t.1,
                        "{name}: {k}: ours {v:?} theirs {t:?}"
                    );
                    extra.0 += v.0 - t.0;
                    extra.1 += v.1 - t.1;
                }
                None => {
                    extra.0 += v.0;
                    extra.1 += v.1;
                }
            }
        }
        let unresolved = theirs
            .get("unresolved class (nil)")
            .copied()
            .unwrap_or((0, 0));
        assert_eq!(extra, unresolved, "{name}: late-bound allocations");
        if unresolved.1 > 0 {
            checked_unresolved += 1;
        }
        for k in theirs.keys() {
            assert!(
                k == "unresolved class (nil)" || ours.contains_key(k),
                "{name}: missing {k}"
            );
        }
        let total = ga
            .iter()
            .find(|l| l.starts_with("Total memory allocated"))
            .expect("total line");
        let (tb, tc) = r
            .alloc
            .iter()
            .fold((0, 0), |a, (_, b, c)| (a.0 + b, a.1 + c));
        assert_eq!(
            total,
            &format!("Total memory allocated: {tb} bytes in {tc} objects"),
            "{name}"
        );
    }
    assert!(
        checked_unresolved > 0,
        "no fixture shows mprof-report's unresolved-vtable bug"
    );
}

/// Calls equal mprof-report's for every method; Self equal (1 ms of rounding slack for the
/// frames mprof-report drops at its "unmatched leave"); Total never above mprof-report's,
/// and below it for recursive methods (bug 6.4: recursion counted several times).
#[test]
fn calls_match_mprof_report_and_fix_recursion() {
    let mut recursive_fixed = 0;
    for f in mlpd_files() {
        let golden = std::fs::read_to_string(f.with_extension("report.txt")).expect("golden");
        let g = sections(&golden);
        let Some(gc) = g.get("Method call summary") else {
            continue;
        };
        let r = compute(&f);
        let name = f.display().to_string();
        // several MonoMethods may share a name (mprof-report keeps them apart too)
        let mut ours: BTreeMap<&str, Vec<_>> = BTreeMap::new();
        for (n, s) in &r.calls {
            ours.entry(n.as_str()).or_default().push(s);
        }
        for l in gc.iter().skip(1) {
            if let Some(t) = l.strip_prefix("Total calls: ") {
                let total: u64 = r.calls.iter().map(|(_, s)| s.calls).sum();
                assert_eq!(num(t), total, "{name}: total calls");
                continue;
            }
            let parts: Vec<&str> = l.split_whitespace().collect();
            let (tot, slf, calls) = (num(parts[0]), num(parts[1]), num(parts[2]));
            let method = parts[3..].join(" ");
            let cands = ours
                .get(method.as_str())
                .unwrap_or_else(|| panic!("{name}: no {method}"));
            let s = cands.iter().find(|s| s.calls == calls).unwrap_or_else(|| {
                panic!("{name}: {method}: no candidate with {calls} calls: {cands:?}")
            });
            let our_self = s.self_ns / 1_000_000;
            assert!(
                our_self.abs_diff(slf) <= 1,
                "{name}: {method} self {our_self} vs {slf}"
            );
            let all = s.total_all_ns / 1_000_000;
            assert!(
                all.abs_diff(tot) <= 1,
                "{name}: {method} mprof-style total {all} vs {tot}"
            );
            assert!(
                s.total_ns / 1_000_000 <= tot + 1,
                "{name}: {method} total {} vs {tot}",
                s.total_ns / 1_000_000
            );
            if method == "Busy:Fib (int)" && s.total_ns / 1_000_000 < tot {
                recursive_fixed += 1;
            }
        }
    }
    assert!(recursive_fixed > 0, "no fixture shows the recursion fix");
}

/// Heap shots: the same sizes and object counts (mprof-report prints roots: 0 without --traces;
/// profkit counts them).
#[test]
fn heapshots_match_mprof_report() {
    let mut shots = 0;
    for f in mlpd_files() {
        let golden = std::fs::read_to_string(f.with_extension("report.txt")).expect("golden");
        let r = compute(&f);
        let theirs: Vec<&str> = golden
            .lines()
            .filter(|l| l.trim_start().starts_with("Heap shot ") && l.contains(" at "))
            .collect();
        assert_eq!(theirs.len(), r.heapshots.len(), "{}", f.display());
        for (t, h) in theirs.iter().zip(&r.heapshots) {
            let want = format!("size: {}, object count: {},", h.size, h.objects);
            assert!(t.contains(&want), "{}: {t} vs {want}", f.display());
            shots += 1;
        }
    }
    assert!(shots > 0);
}

#[test]
fn per_section_goldens_agree_with_the_full_report() {
    // the goldens of `--reports=SECTION` are what the parity tests read, section by section
    let f = fixtures().join("busy_everything.jit.txt");
    let t = std::fs::read_to_string(f).expect("golden");
    assert!(t.contains("JIT summary"));
}

#[test]
fn thread_filter_keeps_only_that_thread() {
    let f = fixtures().join("busy_calls_alloc.mlpd");
    let data = load(&f);
    let file = File::parse(&data).expect("header");
    let all = report::compute(&file, &Options::default());
    let (main, _) = all
        .threads
        .iter()
        .find(|(_, n)| n == "MainWorker")
        .expect("main thread")
        .clone();
    let one = report::compute(
        &file,
        &Options {
            thread: Some(main),
            ..Options::default()
        },
    );
    let a: u64 = all.alloc.iter().map(|x| x.2).sum();
    let b: u64 = one.alloc.iter().map(|x| x.2).sum();
    assert!(b < a && b > 0, "{b} of {a}");
    assert!(one.calls.iter().all(|(n, _)| n != "Busy:Contend (object)"));
}

#[test]
fn gzip_and_plain_give_the_same_report() {
    let z = fixtures().join("hello_zip.mlpd");
    let raw = std::fs::read(&z).expect("read");
    assert!(profkit_mlpd::open::is_gzip(&raw));
    let r = compute(&z);
    assert!(r.calls.iter().any(|(n, _)| n.contains("Hello:Square")));
}

/// mprof-report 6.8 decodes profkit's synthetic files of every version (tests/fixtures/mlpd/
/// synthetic, its outputs beside them): the same totals. For v13 it reads the monitor event
/// from a byte v13 does not write (bug 6.4.3) and reports no contention; profkit reports one.
#[test]
fn synthetic_versions_match_mprof_report() {
    let dir = fixtures().join("synthetic");
    for v in [1u8, 4, 8, 11, 13, 14, 15, 16, 17] {
        let f = dir.join(format!("v{v}.mlpd"));
        let golden = std::fs::read_to_string(dir.join(format!("v{v}.report.txt"))).expect("golden");
        let r = compute(&f);
        assert!(r.problems.is_empty(), "v{v}: {:?}", r.problems);
        let ours = text(&r, false);
        for prefix in [
            "Total memory allocated",
            "Total calls",
            "\tThrows",
            "\tExecuted",
            "\tData version",
            "\tGC resizes",
            "\tObject moves",
        ] {
            let a: Vec<&str> = golden.lines().filter(|l| l.starts_with(prefix)).collect();
            let b: Vec<&str> = ours.lines().filter(|l| l.starts_with(prefix)).collect();
            assert_eq!(a, b, "v{v}: {prefix}");
        }
        let contentions = |t: &str| {
            t.lines()
                .find(|l| l.starts_with("\tLock contentions"))
                .map(str::to_string)
        };
        if v == 13 {
            assert_eq!(
                contentions(&golden).as_deref(),
                Some("\tLock contentions: 0")
            );
            assert_eq!(contentions(&ours).as_deref(), Some("\tLock contentions: 1"));
        } else {
            assert_eq!(contentions(&golden), contentions(&ours), "v{v}");
        }
        let shots = |t: &str| -> Vec<String> {
            t.lines()
                .filter(|l| l.contains("Heap shot 0"))
                .map(|l| l.split(", class count").next().unwrap_or("").to_string())
                .collect()
        };
        assert_eq!(shots(&golden), shots(&ours), "v{v}");
    }
    let cut = compute(&dir.join("v17_truncated.mlpd"));
    assert_eq!(cut.problems.len(), 1);
    assert!(cut.problems[0].is_truncation());
}
