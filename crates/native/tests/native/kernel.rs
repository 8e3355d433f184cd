//! kallsyms on this machine: /proc/kallsyms parses, and every symbol is found at its own
//! address (or the file is restricted, and then nothing is).

use profkit_native::Kallsyms;

#[test]
fn proc_kallsyms() {
    let test = "kernel::proc_kallsyms";
    let Some(path) = profkit_testkit::external(
        test,
        "/proc/kallsyms (Linux)",
        "/proc/kallsyms".into(),
        |_| true,
    ) else {
        return;
    };
    let text = std::fs::read_to_string(path).unwrap();
    let k = Kallsyms::parse(&text);
    if k.is_restricted() {
        assert!(k.is_empty());
        return;
    }
    assert!(k.len() > 1000, "{} symbols", k.len());
    let mut checked = 0;
    for line in text.lines().step_by(97) {
        let mut f = line.split_whitespace();
        let (Some(addr), Some(kind), Some(name)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        if !matches!(kind, "t" | "T") {
            continue;
        }
        let addr = u64::from_str_radix(addr, 16).unwrap();
        let s = k.lookup(addr).unwrap();
        assert_eq!(s.start, addr);
        // Aliases share an address; one of them is kept.
        let aliases: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with(&format!("{addr:016x} ")))
            .filter_map(|l| l.split_whitespace().nth(2))
            .collect();
        assert!(aliases.contains(&s.name), "{name}: {}", s.name);
        checked += 1;
    }
    assert!(checked > 10);
}
