//! Turning on each runtime's JIT metadata through the environment it reads, only for the
//! runtime the command is (docs/record.md has the table and why each switch).
//!
//! The command's program is resolved as a shell would, a script is seen through its `#!`
//! interpreter (`/usr/bin/env node` → node), and the runtime is told by the interpreter's
//! file name. A command that is none (a wrapper: `unshare … sh -c '… node app.js'`, `env`,
//! `timeout`, a shell) runs the runtimes its words name: each of those is turned on. Variables the user already set are extended, not replaced. Two switches are
//! set for every command because only the runtimes that read them act on them: the JIT
//! Profiling API collector (`INTEL_JIT_PROFILER64`, read by every JIT that reports to VTune)
//! and, for an XRay-instrumented binary, `XRAY_OPTIONS`.

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::path::{Path, PathBuf};

/// A runtime profkit knows how to turn on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runtime {
    /// Node.js / V8.
    Node,
    /// CPython (3.12: perf map trampolines; 3.13+: jitdump).
    Python,
    /// .NET CoreCLR.
    Dotnet,
    /// OpenJDK HotSpot.
    Java,
    /// Erlang/OTP BeamAsm (and Elixir's launchers).
    Erlang,
    /// PHP (opcache JIT, when the user enabled it).
    Php,
    /// Mono.
    Mono,
    /// A binary instrumented with LLVM XRay.
    Xray,
}

impl Runtime {
    /// Its name in messages and the manifest.
    pub fn name(self) -> &'static str {
        match self {
            Runtime::Node => "node",
            Runtime::Python => "cpython",
            Runtime::Dotnet => "dotnet",
            Runtime::Java => "openjdk",
            Runtime::Erlang => "erlang",
            Runtime::Php => "php",
            Runtime::Mono => "mono",
            Runtime::Xray => "xray",
        }
    }
}

/// What the environment of the command gets.
#[derive(Debug, Default)]
pub struct JitEnv {
    /// The runtimes the command was recognised as (or names).
    pub runtimes: Vec<Runtime>,
    /// Variables to set (name, full value).
    pub vars: Vec<(OsString, OsString)>,
    /// Extra files to create before the start (PHP's ini directory: path, contents).
    pub files: Vec<(PathBuf, String)>,
    /// What was decided and why, for the manifest and the summary.
    pub notes: Vec<String>,
}

/// The runtime `program` (resolved) is: by its file name, or its `#!` interpreter's.
pub fn recognise(program: &Path) -> Option<Runtime> {
    if let Some(r) = by_name(program) {
        return Some(r);
    }
    let interp = shebang(program);
    if let Some(r) = interp.as_deref().and_then(by_name) {
        return Some(r);
    }
    if has_xray_map(program) {
        return Some(Runtime::Xray);
    }
    None
}

fn by_name(program: &Path) -> Option<Runtime> {
    let name = program.file_name()?.to_str()?;
    let stem = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    Some(match stem {
        "node" | "nodejs" => Runtime::Node,
        "python" | "python3" => Runtime::Python,
        "dotnet" => Runtime::Dotnet,
        "java" => Runtime::Java,
        "erl" | "erlexec" | "escript" | "elixir" | "iex" | "mix" | "rebar" => Runtime::Erlang,
        "php" | "php-cli" => Runtime::Php,
        "mono" | "mono-sgen" => Runtime::Mono,
        _ if name.starts_with("python3.") => Runtime::Python,
        _ if name.starts_with("php8") || name.starts_with("php7") => Runtime::Php,
        _ => return None,
    })
}

/// The interpreter a script's `#!` line names (`/usr/bin/env X` → X).
fn shebang(program: &Path) -> Option<PathBuf> {
    let mut head = [0u8; 256];
    let n = std::fs::File::open(program).ok()?.read(&mut head).ok()?;
    let line = head.get(..n)?.strip_prefix(b"#!")?;
    let line = line.split(|b| *b == b'\n').next()?;
    let text = std::str::from_utf8(line).ok()?;
    let mut words = text.split_whitespace();
    let interp = words.next()?;
    if Path::new(interp).file_name() == Some(OsStr::new("env")) {
        let word = words.find(|w| !w.starts_with('-'))?;
        return Some(PathBuf::from(word));
    }
    Some(PathBuf::from(interp))
}

/// Whether `program` is an ELF file with an `xray_instr_map` section.
fn has_xray_map(program: &Path) -> bool {
    use object::{Object, ObjectSection};
    let Ok(data) = std::fs::read(program) else {
        return false;
    };
    if data.get(..4) != Some(b"\x7fELF") {
        return false;
    }
    object::File::parse(&*data).is_ok_and(|f| {
        f.sections()
            .any(|s| s.name().is_ok_and(|n| n == "xray_instr_map"))
    })
}

/// `value` appended to what the environment has for `name` (separated by `sep`).
fn extended(name: &str, value: &str, sep: &str) -> (OsString, OsString) {
    let mut v = std::env::var_os(name).unwrap_or_default();
    if !v.is_empty() {
        v.push(sep);
    }
    v.push(value);
    (OsString::from(name), v)
}

/// The CPython version of `program` (`3.12` → (3, 12)), from its name or by asking it.
fn python_version(program: &Path) -> Option<(u32, u32)> {
    let parse = |s: &str| {
        let mut it = s.trim().split('.');
        Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
    };
    if let Some(v) = program
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("python"))
        .and_then(parse)
    {
        return Some(v);
    }
    let out = std::process::Command::new(program)
        .args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
        .env_remove("PYTHONSTARTUP")
        .output()
        .ok()?;
    parse(std::str::from_utf8(&out.stdout).ok()?)
}

/// The runtimes `args` (the command line after the program) names: words of the arguments
/// (shell text split at blanks and `;&|()`) that are a runtime's program.
fn named_in(args: &[OsString]) -> Vec<Runtime> {
    let mut out = Vec::new();
    for arg in args {
        let text = arg.to_string_lossy();
        for word in text.split(|c: char| c.is_whitespace() || ";&|()'\"`".contains(c)) {
            if let Some(r) = by_name(Path::new(word)) {
                if !out.contains(&r) {
                    out.push(r);
                }
            }
        }
    }
    out
}

/// The environment that turns on the JIT metadata of `program` (resolved; `args` are the
/// words after it). `dir` is the recording directory (XRay logs and PHP's extra ini file go
/// there); `collector` is profkit's JIT Profiling API library, when it is installed.
pub fn jit_env(program: &Path, args: &[OsString], dir: &Path, collector: Option<&Path>) -> JitEnv {
    let mut env = JitEnv::default();
    if let Some(lib) = collector {
        env.vars.push((
            OsString::from("INTEL_JIT_PROFILER64"),
            lib.as_os_str().to_os_string(),
        ));
        env.notes.push(format!(
            "INTEL_JIT_PROFILER64={} (JIT Profiling API users write a jitdump)",
            lib.display()
        ));
    }
    let interp = shebang(program);
    // the program that runs: the script's interpreter, or the program itself
    let runs = match (&interp, by_name(program)) {
        (Some(i), None) => crate::workload::resolve(i.as_os_str()).unwrap_or_else(|| i.clone()),
        _ => program.to_path_buf(),
    };
    env.runtimes = match recognise(program) {
        Some(r) => vec![r],
        None => named_in(args),
    };
    for runtime in env.runtimes.clone() {
        turn_on(&mut env, runtime, &runs, dir);
    }
    for (k, v) in &env.vars {
        if k != "INTEL_JIT_PROFILER64" {
            env.notes
                .push(format!("{}={}", k.to_string_lossy(), v.to_string_lossy()));
        }
    }
    env
}

/// Adds `runtime`'s switches to `env`; `program` is the runtime's executable when the command
/// is it (CPython's version is asked from it).
fn turn_on(env: &mut JitEnv, runtime: Runtime, program: &Path, dir: &Path) {
    match runtime {
        Runtime::Node => env.vars.push(extended(
            "NODE_OPTIONS",
            "--perf-prof --perf-prof-unwinding-info --interpreted-frames-native-stack",
            " ",
        )),
        Runtime::Python => {
            let program = if by_name(program) == Some(Runtime::Python) {
                program.to_path_buf()
            } else {
                crate::workload::resolve(OsStr::new("python3"))
                    .unwrap_or_else(|| PathBuf::from("python3"))
            };
            match python_version(&program) {
                Some(v) if v >= (3, 13) => {
                    env.vars.push(("PYTHON_PERF_JIT_SUPPORT".into(), "1".into()));
                }
                Some(v) if v >= (3, 12) => env.vars.push(("PYTHONPERFSUPPORT".into(), "1".into())),
                Some((major, minor)) => env.notes.push(format!(
                    "CPython {major}.{minor} has no perf support (3.12 adds a perf map, 3.13 a jitdump): its frames stay interpreter frames"
                )),
                None => env.notes.push("CPython of unknown version: no perf switch set".into()),
            }
        }
        Runtime::Dotnet => env.vars.push(("DOTNET_PerfMapEnabled".into(), "1".into())),
        Runtime::Java => env.vars.push(extended(
            "JAVA_TOOL_OPTIONS",
            "-XX:+PreserveFramePointer -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit",
            " ",
        )),
        Runtime::Erlang => env.vars.push(extended("ERL_FLAGS", "+JPperf true", " ")),
        Runtime::Php => {
            // PHP reads every .ini in PHP_INI_SCAN_DIR; a leading ':' keeps the built-in
            // directory. jit_debug 0x20 writes a jitdump (and 8.2+ a perf map): it does
            // nothing unless the user's settings turn the JIT on.
            let ini_dir = dir.join("php-ini");
            env.files.push((
                ini_dir.join("zz-profkit-jitdump.ini"),
                "; written by profkit record: jitdump of opcache's JIT code\nopcache.jit_debug=0x20\n".into(),
            ));
            let mut scan = std::env::var_os("PHP_INI_SCAN_DIR").unwrap_or_default();
            scan.push(":");
            scan.push(ini_dir.as_os_str());
            env.vars.push(("PHP_INI_SCAN_DIR".into(), scan));
            env.notes.push(
                "php: opcache.jit_debug=0x20 added (a jitdump when the JIT is enabled: opcache.enable_cli=1, opcache.jit, opcache.jit_buffer_size)".into(),
            );
        }
        Runtime::Mono => {
            // --jitdump came after Mono 6.8 (Debian 12's), which refuses the option and
            // exits: ask this mono, and fall back to its perf map
            let mono = if by_name(program) == Some(Runtime::Mono) {
                program.to_path_buf()
            } else {
                crate::workload::resolve(OsStr::new("mono"))
                    .unwrap_or_else(|| PathBuf::from("mono"))
            };
            let takes = |option: &str| {
                std::process::Command::new(&mono)
                    .arg("--version")
                    .env("MONO_ENV_OPTIONS", option)
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success())
            };
            if takes("--jitdump") {
                env.vars
                    .push(extended("MONO_ENV_OPTIONS", "--jitdump", " "));
            } else {
                env.vars.push(extended("MONO_ENV_OPTIONS", "--jitmap", " "));
                env.notes.push(
                    "mono: this Mono (6.8 and older) refuses --jitdump: its perf map (--jitmap) instead".into(),
                );
            }
        }
        Runtime::Xray => {
            // Basic mode: the runtime writes its log at exit by itself (FDR mode writes only
            // when the program flushes it). The user's own XRAY_OPTIONS (a mode, a program
            // that starts FDR itself) are kept; only the log's place is added, last, so it wins.
            let mut base = OsString::from("xray_logfile_base=");
            base.push(dir.as_os_str());
            base.push("/xray-log.");
            let mut v = std::env::var_os("XRAY_OPTIONS").unwrap_or_default();
            if v.is_empty() {
                v.push("patch_premain=true xray_mode=xray-basic ");
            } else {
                v.push(" ");
            }
            v.push(base);
            env.vars.push(("XRAY_OPTIONS".into(), v));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtimes_by_name() {
        for (name, want) in [
            ("/usr/bin/node", Some(Runtime::Node)),
            ("python3.12", Some(Runtime::Python)),
            ("/usr/lib/jvm/bin/java", Some(Runtime::Java)),
            ("erl", Some(Runtime::Erlang)),
            ("php8.2", Some(Runtime::Php)),
            ("mono-sgen", Some(Runtime::Mono)),
            ("dotnet", Some(Runtime::Dotnet)),
            ("/bin/ls", None),
            ("nodemon", None),
        ] {
            assert_eq!(by_name(Path::new(name)), want, "{name}");
        }
    }

    #[test]
    fn wrappers_name_their_runtimes() {
        let args: Vec<OsString> = [
            "-p",
            "-f",
            "sh",
            "-c",
            "cd /tmp && node app.js; erl -noshell",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        assert_eq!(named_in(&args), vec![Runtime::Node, Runtime::Erlang]);
    }
}
