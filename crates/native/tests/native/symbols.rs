//! Symbols, lines and inline frames of real gcc -O2 -g binaries (PIE, non-PIE, shared
//! library, stripped + separate debug file), against binutils: `nm` for the symbol table,
//! `addr2line -a -f -i -C` for DWARF frames at every address of `.text`.

use std::path::Path;
use std::process::Command;

use profkit_native::{Binary, BinaryKind, Source};

use crate::common::{programs, run};

/// `.text`'s SVMA range, from `readelf -SW`.
fn text_range(bin: &Path) -> (u64, u64) {
    let out = run(Command::new("readelf").arg("-SW").arg(bin));
    for line in out.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if let Some(i) = f.iter().position(|w| *w == ".text") {
            let addr = u64::from_str_radix(f[i + 2], 16).unwrap();
            let size = u64::from_str_radix(f[i + 4], 16).unwrap();
            return (addr, addr + size);
        }
    }
    panic!("no .text in {}", bin.display());
}

/// One address's frames as addr2line prints them: (function, file, line).
type Frames = Vec<(String, String, Option<u32>)>;

fn addr2line(bin: &Path, addrs: &[u64]) -> Vec<Frames> {
    let mut cmd = Command::new("addr2line");
    cmd.args(["-a", "-f", "-i", "-C", "-e"]).arg(bin);
    for a in addrs {
        cmd.arg(format!("{a:#x}"));
    }
    let out = run(&mut cmd);
    let mut result: Vec<Frames> = Vec::new();
    let mut lines = out.lines();
    while let Some(line) = lines.next() {
        if line.starts_with("0x") && u64::from_str_radix(&line[2..], 16).is_ok() {
            result.push(Vec::new());
            continue;
        }
        let func = line.to_string();
        let loc = lines.next().unwrap();
        let loc = loc.split(" (discriminator").next().unwrap();
        let (file, line_no) = loc.rsplit_once(':').unwrap();
        result
            .last_mut()
            .unwrap()
            .push((func, file.to_string(), line_no.parse().ok()));
    }
    assert_eq!(result.len(), addrs.len());
    result
}

/// Compares every address of `.text` with addr2line; returns how many addresses had DWARF
/// frames there.
fn check_against_addr2line(test: &str, bin: &Path) -> usize {
    if profkit_testkit::tool(test, "addr2line", "binutils").is_none() {
        return 0;
    }
    let binary = Binary::open(bin).unwrap();
    let (start, end) = text_range(bin);
    let addrs: Vec<u64> = (start..end).collect();
    let expected = addr2line(bin, &addrs);
    let mut compared = 0;
    let mut mismatches = Vec::new();
    for (&addr, want) in addrs.iter().zip(&expected) {
        let got = binary.lookup(addr);
        if want.first().is_none_or(|f| f.0 == "??" || f.2.is_none()) {
            // No DWARF lines there (crt code; addr2line names it from the symbol table, with
            // `??:?` or `crtstuff.c:?`): the symbol table must still name it if a symbol
            // covers it.
            if let (Some(got), Some(sym)) = (&got, binary.symbol(addr)) {
                assert_eq!(got.frames.last().unwrap().function, sym.name);
            }
            continue;
        }
        compared += 1;
        let Some(got) = got else {
            mismatches.push(format!("{addr:#x}: addr2line {want:?}, we: nothing"));
            continue;
        };
        assert_eq!(got.source, Source::Dwarf, "{addr:#x}");
        let ours: Frames = got
            .frames
            .iter()
            .map(|f| {
                (
                    f.function.to_string(),
                    f.file.as_deref().unwrap_or("??").to_string(),
                    f.line,
                )
            })
            .collect();
        // Padding after a function (inside the CU, outside every subprogram and symbol):
        // addr2line names the preceding symbol, we say `??`.
        let padding = binary.symbol(addr).is_none();
        let same = ours.len() == want.len()
            && ours.iter().zip(want).all(|(o, w)| {
                (o.0 == w.0 || (padding && o.0 == "??"))
                    && Path::new(&o.1).file_name() == Path::new(&w.1).file_name()
                    && o.2 == w.2
            });
        if !same {
            mismatches.push(format!("{addr:#x}: addr2line {want:?}, we {ours:?}"));
        }
        // Repeated lookups come from the cache: the same answer, the same allocation.
        let again = binary.lookup(addr).unwrap();
        assert!(std::sync::Arc::ptr_eq(&got, &again));
    }
    assert!(
        mismatches.is_empty(),
        "{}: {} of {compared} addresses differ from addr2line:\n{}",
        bin.display(),
        mismatches.len(),
        mismatches.join("\n")
    );
    compared
}

/// Every function symbol `nm` lists is found at its address, and at its last byte.
fn check_against_nm(test: &str, bin: &Path, dynamic: bool) {
    if profkit_testkit::tool(test, "nm", "binutils").is_none() {
        return;
    }
    let binary = Binary::open(bin).unwrap();
    let text = text_range(bin);
    let mut cmd = Command::new("nm");
    cmd.args(["-S", "--defined-only"]);
    if dynamic {
        cmd.arg("-D");
    }
    let out = run(cmd.arg(bin));
    let mut checked = 0;
    for line in out.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (addr, size, kind, name) = match f.as_slice() {
            [a, s, k, n] => (*a, Some(*s), *k, *n),
            [a, k, n] => (*a, None, *k, *n),
            _ => continue,
        };
        if !matches!(kind, "T" | "t" | "W" | "w") {
            continue;
        }
        let addr = u64::from_str_radix(addr, 16).unwrap();
        // Weak symbols (W/w) may be data (`data_start`): only functions are ours to find.
        if matches!(kind, "W" | "w") && !(text.0..text.1).contains(&addr) {
            continue;
        }
        let size = size.map(|s| u64::from_str_radix(s, 16).unwrap());
        let names_here: Vec<&str> = out
            .lines()
            .filter(|l| l.starts_with(&format!("{addr:016x} ")))
            .filter_map(|l| l.split_whitespace().last())
            // `nm -D` prints symbol versions (`_exit@@GLIBC_2.2.5`); names are unversioned.
            .map(|n| n.split('@').next().unwrap_or(n))
            .collect();
        let sym = binary
            .symbol(addr)
            .unwrap_or_else(|| panic!("{name} at {addr:#x} not found"));
        assert_eq!(sym.start, addr, "{name}");
        assert!(
            names_here.contains(&&*sym.name),
            "{addr:#x}: {} not among {names_here:?}",
            sym.name
        );
        if let Some(size) = size.filter(|&s| s > 0) {
            assert_eq!(sym.size, Some(size), "{name}");
            assert_eq!(
                binary.symbol(addr + size - 1).unwrap().start,
                addr,
                "{name}"
            );
        }
        checked += 1;
    }
    assert!(checked > 0, "{}: nm listed no functions", bin.display());
}

/// Every PLT stub `objdump -d` labels `<name@plt>` is that symbol (perf's synthesized names),
/// C++ names demangled as perf shows them; returns how many were checked.
fn check_plt_against_objdump(test: &str, bin: &Path) -> usize {
    if profkit_testkit::tool(test, "objdump", "binutils").is_none() {
        return 0;
    }
    let binary = Binary::open(bin).unwrap();
    let out = run(Command::new("objdump")
        .args(["-d", "-j", ".plt", "-j", ".plt.sec"])
        .arg(bin));
    let mut checked = 0;
    for line in out.lines() {
        // `0000000000001050 <level2@plt>:`
        let Some((addr, rest)) = line.split_once(" <") else {
            continue;
        };
        let Some(name) = rest.strip_suffix(">:") else {
            continue;
        };
        if !name.ends_with("@plt") || name.contains('+') {
            continue;
        }
        let addr = u64::from_str_radix(addr.trim(), 16).unwrap();
        let want = profkit_native::demangle(name.trim_end_matches("@plt")).to_string() + "@plt";
        for probe in [addr, addr + 15] {
            let got = binary.symbol(probe).map(|s| s.name.to_string());
            assert_eq!(
                got.as_deref(),
                Some(want.as_str()),
                "{}: {probe:#x}",
                bin.display()
            );
        }
        checked += 1;
    }
    checked
}

#[test]
fn pie_executable() {
    let test = "symbols::pie_executable";
    let Some(dir) = programs(test) else { return };
    let bin = dir.join("chain");
    let b = Binary::open(&bin).unwrap();
    assert_eq!(b.kind(), BinaryKind::Dynamic);
    assert_eq!(b.e_machine(), 62);
    assert!(b.has_dwarf() && b.has_unwind_info());
    check_against_nm(test, &bin, false);
    assert!(check_against_addr2line(test, &bin) > 100);
    // strtod, clock_gettime and level2 (in libmid.so) are called through the PLT.
    if profkit_testkit::tool(test, "objdump", "binutils").is_some() {
        assert!(check_plt_against_objdump(test, &bin) >= 3);
    }
    // leaf's loop has mix() inlined: some address must show two frames.
    let leaf = b.symbols().find(|s| s.2 == "leaf").unwrap();
    let inlined = (leaf.0..leaf.0 + leaf.1)
        .filter_map(|a| b.lookup(a))
        .find(|s| s.frames.len() == 2)
        .expect("an address of leaf with mix inlined");
    assert_eq!(&*inlined.frames[0].function, "mix");
    assert_eq!(&*inlined.frames[1].function, "leaf");
    assert_eq!(inlined.symbol.as_ref().unwrap().start, leaf.0);
}

#[test]
fn non_pie_executable() {
    let test = "symbols::non_pie_executable";
    let Some(dir) = programs(test) else { return };
    let bin = dir.join("chain-nopie");
    assert_eq!(Binary::open(&bin).unwrap().kind(), BinaryKind::Executable);
    check_against_nm(test, &bin, false);
    assert!(check_against_addr2line(test, &bin) > 100);
}

#[test]
fn shared_library() {
    let test = "symbols::shared_library";
    let Some(dir) = programs(test) else { return };
    let bin = dir.join("libmid.so");
    check_against_nm(test, &bin, false);
    check_against_nm(test, &bin, true);
    assert!(check_against_addr2line(test, &bin) > 10);
    check_plt_against_objdump(test, &bin);
}

#[test]
fn system_library_plt_stubs() {
    // libstdc++ calls hundreds of C++ functions through its PLT (mangled names).
    let test = "symbols::system_library_plt_stubs";
    let Some(lib) = [
        "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
        "/lib/x86_64-linux-gnu/libstdc++.so.6",
    ]
    .into_iter()
    .map(Path::new)
    .find(|p| p.exists())
    .or_else(|| profkit_testkit::missing(test, "libstdc++.so.6", "apt-get install libstdc++6")) else {
        return;
    };
    if profkit_testkit::tool(test, "objdump", "binutils").is_none() {
        return;
    }
    assert!(check_plt_against_objdump(test, lib) > 100);
}

#[test]
fn system_library_dynsym() {
    // libc as the distribution ships it: .dynsym only (no .symtab, no DWARF).
    let test = "symbols::system_library_dynsym";
    let libc = Path::new("/usr/lib/x86_64-linux-gnu/libc.so.6");
    let Some(libc) =
        profkit_testkit::external(test, "glibc (x86-64 Debian layout)", libc.into(), |_| true)
    else {
        return;
    };
    check_against_nm(test, &libc, true);
    let b = Binary::open(&libc).unwrap();
    assert!(b.build_id().is_some());
    let sym = b.symbols().find(|s| s.2 == "malloc").unwrap();
    let s = b.lookup(sym.0 + 1).unwrap();
    assert_eq!(s.symbol.as_ref().unwrap().start, sym.0);
}

#[test]
fn stripped_with_debug_file() {
    let test = "symbols::stripped_with_debug_file";
    let Some(dir) = programs(test) else { return };
    let stripped = Binary::open(dir.join("chain-stripped")).unwrap();
    assert!(!stripped.has_dwarf());
    assert_eq!(stripped.debuglink().unwrap().0, "chain.debug");
    let full = Binary::open(dir.join("chain")).unwrap();
    assert_eq!(stripped.build_id(), full.build_id());
    // Without the debug file: no local symbols (main is not in .dynsym).
    let main = full.symbols().find(|s| s.2 == "main").unwrap();
    assert!(stripped.lookup(main.0).is_none());

    // The finder attaches chain.debug through the debug link (same directory).
    let mut finder = profkit_native::Binaries::empty();
    let found = finder
        .find(&dir.join("chain-stripped"), stripped.build_id())
        .unwrap();
    assert_eq!(found.debug_file(), Some(dir.join("chain.debug").as_path()));
    let (start, end) = text_range(&dir.join("chain"));
    for addr in start..end {
        assert_eq!(found.lookup(addr), full.lookup(addr), "{addr:#x}");
    }
    // Attached by path (its DWARF loaded ahead, its symbols read once) as when opened first.
    let mut by_path = Binary::open(dir.join("chain-stripped")).unwrap();
    assert!(by_path.attach_debug_file(&dir.join("chain.debug")));
    let mut opened = Binary::open(dir.join("chain-stripped")).unwrap();
    assert!(opened.set_debug_file(Binary::open(dir.join("chain.debug")).unwrap()));
    assert_eq!(by_path.symbol_count(), opened.symbol_count());
    for addr in start..end {
        assert_eq!(by_path.lookup(addr), opened.lookup(addr), "{addr:#x}");
    }
    // A debug file of another build is refused, and so is a file that is not ELF.
    let mut other = Binary::open(dir.join("chain-stripped")).unwrap();
    assert!(!other.set_debug_file(Binary::open(dir.join("libmid.so")).unwrap()));
    assert!(!other.attach_debug_file(&dir.join("libmid.so")));
    assert!(!other.attach_debug_file(&Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")));
    assert!(other.debug_file().is_none());
}

/// A program built with each linker prints its functions' addresses and its own
/// /proc/self/maps: the kernel's r-x mapping of it, through [`Binary::mapping`], must give
/// each address its function's name. lld puts the code segment in the page the read-only
/// segment ends in (pgoff below p_offset, inside the R segment); gold maps one r-x segment
/// from offset 0; bfd with `-z separate-code` page-aligns it.
#[test]
fn linkers_that_share_pages_between_segments() {
    let test = "symbols::linkers_that_share_pages_between_segments";
    let Some(cc) = profkit_testkit::tool(test, "cc", "a C compiler (gcc)") else {
        return;
    };
    let linkers = [
        ("lld", "ld.lld", "lld (apt-get install lld)"),
        ("gold", "ld.gold", "binutils (ld.gold)"),
        ("bfd", "ld.bfd", "binutils"),
    ];
    let dir = profkit_testkit::scratch_dir().join("native-linkers");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("linkers.c");
    std::fs::write(
        &src,
        r#"#include <stdio.h>
__attribute__((noinline)) int alpha(int x) { return x * 3 + 1; }
__attribute__((noinline)) int beta(int x) { return alpha(x) ^ 0x55; }
__attribute__((noinline)) int gamma_(int x) { return beta(x) + alpha(x); }
int main(void) {
  printf("alpha %lx\nbeta %lx\ngamma_ %lx\nmain %lx\n", (unsigned long)alpha,
         (unsigned long)beta, (unsigned long)gamma_, (unsigned long)main);
  FILE *f = fopen("/proc/self/maps", "r");
  char line[600];
  while (f && fgets(line, sizeof line, f)) fputs(line, stdout);
  return gamma_(3) == 0;
}
"#,
    )
    .unwrap();
    for (name, tool, what) in linkers {
        if profkit_testkit::tool(test, tool, what).is_none() {
            continue;
        }
        let bin = dir.join(format!("linkers-{name}"));
        let mut cmd = Command::new(&cc);
        cmd.args(["-O1", "-fPIE", "-pie"])
            .arg(format!("-fuse-ld={name}"));
        if name == "bfd" {
            cmd.args(["-Wl,-z,separate-code"]);
        }
        run(cmd.arg("-o").arg(&bin).arg(&src));
        let out = run(&mut Command::new(&bin));
        let b = Binary::open(&bin).unwrap();
        let bin_name = bin.to_str().unwrap();
        // start-end perms pgoff dev inode path
        let exec = out
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|f| f.len() >= 6 && f[5] == bin_name && f[1].contains('x'))
            .unwrap_or_else(|| panic!("{name}: no r-x mapping of {bin_name} in\n{out}"));
        let (lo, hi) = exec[0].split_once('-').unwrap();
        let lo = u64::from_str_radix(lo, 16).unwrap();
        let hi = u64::from_str_radix(hi, 16).unwrap();
        let pgoff = u64::from_str_radix(exec[2], 16).unwrap();
        let mapping = b.mapping(lo, hi - lo, pgoff).unwrap();
        let mut checked = 0;
        for line in out.lines().take(4) {
            let (func, addr) = line.split_once(' ').unwrap();
            let addr = u64::from_str_radix(addr, 16).unwrap();
            let sym = b.symbol(mapping.to_svma(addr));
            assert_eq!(
                sym.as_ref().map(|s| &*s.name),
                Some(func),
                "{name}: {addr:#x} (pgoff {pgoff:#x}, segments {:x?})",
                b.segments()
            );
            checked += 1;
        }
        assert_eq!(checked, 4);
    }
}
