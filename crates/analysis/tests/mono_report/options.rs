//! mprof-report's options on the fixtures (`tests/fixtures/mlpd/options/commands.txt` lists
//! each golden with the options that made it): `--method-sort`, `--alloc-sort`, `--traces
//! --maxframes`, `--find` and `--track`.

use profkit_analysis::mono_report::{self as report, AllocSort, Find, MethodSort, Options, Report};
use profkit_mlpd::File;

use super::{fixtures, load};

struct Case {
    golden: String,
    report: Report,
    sections: Vec<&'static str>,
    verbose: bool,
    opts: Options,
}

fn parse(args: &str) -> (Options, Vec<&'static str>, bool) {
    let mut o = Options {
        parallel: true,
        ..Options::default()
    };
    let mut sections: Vec<&'static str> = report::SECTIONS
        .iter()
        .copied()
        .filter(|&s| s != "stats")
        .collect();
    let mut verbose = false;
    for a in args.split_whitespace() {
        let (k, v) = a.split_once('=').unwrap_or((a, ""));
        match k {
            "--method-sort" => {
                o.method_sort = match v {
                    "self" => MethodSort::SelfTime,
                    "calls" => MethodSort::Calls,
                    _ => MethodSort::Total,
                }
            }
            "--alloc-sort" => {
                o.alloc_sort = if v == "count" {
                    AllocSort::Count
                } else {
                    AllocSort::Bytes
                }
            }
            "--verbose" => verbose = true,
            "--traces" => o.traces = true,
            "--maxframes" => o.maxframes = v.parse().unwrap(),
            "--reports" => {
                sections = v
                    .split(',')
                    .map(|s| *report::SECTIONS.iter().find(|&&x| x == s).unwrap())
                    .collect()
            }
            "--find" => {
                let f = o.find.get_or_insert_with(Find::default);
                if let Some(n) = v.strip_prefix("S:") {
                    f.min_size = n.parse().unwrap();
                } else if let Some(n) = v.strip_prefix("T:") {
                    f.name = Some(n.to_string());
                }
            }
            "--track" => {
                o.track = v
                    .split(',')
                    .map(|x| u64::from_str_radix(x.trim_start_matches("0x"), 16).unwrap())
                    .collect()
            }
            other => panic!("option {other}"),
        }
    }
    (o, sections, verbose)
}

fn cases() -> Vec<Case> {
    let dir = fixtures().join("options");
    let list = std::fs::read_to_string(dir.join("commands.txt")).expect("commands.txt");
    list.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let mut it = l.split('\t');
            let (golden, fixture, args) =
                (it.next().unwrap(), it.next().unwrap(), it.next().unwrap());
            let (opts, sections, verbose) = parse(args);
            let data = load(&fixtures().join(fixture));
            let file = File::parse(&data).expect("header");
            Case {
                golden: std::fs::read_to_string(dir.join(golden)).expect("golden"),
                report: report::compute(&file, &opts),
                sections,
                verbose,
                opts,
            }
        })
        .collect()
}

fn text(c: &Case) -> String {
    let mut v = Vec::new();
    report::write_text(&mut v, &c.report, &c.sections, c.verbose).expect("write");
    String::from_utf8(v).expect("utf8")
}

/// The rows of a table section: (numbers, name).
fn rows(text: &str, title: &str) -> Vec<(Vec<u64>, String)> {
    let mut out = Vec::new();
    let mut on = false;
    for l in text.lines() {
        if l.trim() == title || l.trim_start().starts_with(title) {
            on = true;
            continue;
        }
        if !on {
            continue;
        }
        let w: Vec<&str> = l.split_whitespace().collect();
        let n = w.iter().take_while(|x| x.parse::<u64>().is_ok()).count();
        if n >= 3
            && l.starts_with(|c: char| c == ' ' || c == '\t' || c.is_ascii_digit())
            && !l.starts_with("\t\t")
        {
            let mut name = w[n..].join(" ");
            if let Some(i) = name.find(" (bytes: ") {
                name.truncate(i);
            }
            out.push((w[..n].iter().map(|x| x.parse().unwrap()).collect(), name));
        } else if l.is_empty() && !out.is_empty() && title != "Heap shot" {
            break;
        }
    }
    out
}

#[test]
fn sorting_matches_mprof_report() {
    for c in cases() {
        let ours = text(&c);
        let (col, title) = match (c.opts.method_sort, c.opts.alloc_sort, c.sections.as_slice()) {
            (MethodSort::SelfTime, _, ["call"]) => (1, "Total(ms)"),
            (MethodSort::Calls, _, ["call"]) => (2, "Total(ms)"),
            (_, AllocSort::Count, ["alloc"]) => (1, "Bytes"),
            (_, AllocSort::Count, ["heapshot"]) => (1, "Bytes"),
            _ => continue,
        };
        let g = rows(&c.golden, title);
        let o = rows(&ours, title);
        assert!(g.len() > 10, "{}: {} rows", c.golden.len(), g.len());
        // the sort column, in order, is the same (ties may come in another order), except
        // where mprof-report leaves allocations unresolved (late binding changes counts)
        let key = |r: &Vec<(Vec<u64>, String)>| -> Vec<u64> {
            r.iter()
                .filter(|x| !x.1.starts_with("unresolved"))
                .map(|x| x.0[col])
                .collect()
        };
        let (gk, ok) = (key(&g), key(&o));
        assert!(
            ok.windows(2).all(|w| w[0] >= w[1]),
            "profkit's order: {ok:?}"
        );
        if title == "Total(ms)" {
            assert_eq!(gk, ok);
            // and the same rows (Self and Calls; Total is recursion-corrected)
            let set = |r: &Vec<(Vec<u64>, String)>| {
                let mut v: Vec<(u64, u64, String)> =
                    r.iter().map(|x| (x.0[1], x.0[2], x.1.clone())).collect();
                v.sort();
                v
            };
            assert_eq!(set(&g), set(&o));
        } else {
            // late binding moves a few classes (and the top-30 cut of heap shots takes other
            // classes of equal count): nearly every row is found with the same numbers
            let same = g.iter().filter(|r| o.contains(r)).count();
            assert!(same * 10 >= g.len() * 9, "{same} of {}", g.len());
        }
    }
}

/// `--find` and `--track` print only what happens to the objects, in file order, as
/// mprof-report does (class names bound late: mprof-report's "unresolved class" lines name
/// the class here).
#[test]
fn find_and_track_match_mprof_report() {
    let mut n = 0;
    for c in cases() {
        if c.opts.find.is_none() && c.opts.track.is_empty() {
            continue;
        }
        let ours = text(&c);
        let g: Vec<&str> = c
            .golden
            .lines()
            .filter(|l| !l.starts_with("unmatched leave"))
            .collect();
        let o: Vec<&str> = ours.lines().collect();
        assert_eq!(g.len(), o.len(), "{}", &c.golden[..80]);
        for (a, b) in g.iter().zip(&o) {
            if a.contains("unresolved class") {
                continue;
            }
            assert_eq!(a, b);
            n += 1;
        }
    }
    assert!(n > 1000, "{n} lines compared");
}

/// `--traces --maxframes=3`: backtraces cut at 3 frames.
#[test]
fn maxframes_matches_mprof_report() {
    for c in cases() {
        if !c.opts.traces || c.opts.maxframes == 6 || c.opts.find.is_some() {
            continue;
        }
        let ours = text(&c);
        let (g, o) = (
            super::traces::blocks(&c.golden),
            super::traces::blocks(&ours),
        );
        let mut same = 0;
        for (k, (line, gb)) in &g {
            let Some((oline, ob)) = o.get(k) else {
                continue;
            };
            if line != oline || gb.is_empty() {
                continue;
            }
            assert!(ob.iter().all(|b| b.2.len() <= 3));
            let (mut a, mut b) = (gb.clone(), ob.clone());
            a.sort();
            b.sort();
            assert_eq!(a, b, "{k:?}");
            same += 1;
        }
        assert!(same > 50, "{same}");
    }
}
