//! Categories of the Firefox profile: what kind of code a frame runs ([`CodeKind`], from its
//! name and the input format: JavaScript with V8's tier, builtins, Python, Wasm, managed,
//! native, kernel, other JIT code), the category and subcategory each kind gets, the colours of
//! jitdump JIT tiers, and the marker categories.

use fx::{CategoryColor, CategoryHandle, CategoryPairHandle, FrameFlags, Profile};
use fxprof_processed_profile as fx;
use profkit_model::{FuncInfo, FuncKind};

/// The kind of code a frame runs, which picks its category.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CodeKind {
    /// JavaScript, with its V8 tier when the name says it.
    JavaScript(Option<JsTier>),
    /// V8 builtins, bytecode handlers, stubs, regexp code.
    Builtin,
    /// Python (CPython's perf trampolines, `py::`).
    Python,
    /// WebAssembly.
    Wasm,
    /// .NET / Mono managed code.
    Managed,
    /// Native code (C, C++, Rust: XRay-instrumented programs, ELF symbols of perf.data).
    Native,
    /// The kernel (perf.data).
    Kernel,
    /// JIT code the name does not classify (perf maps, jitdumps of other runtimes).
    Jit,
    /// Anything else.
    Other,
}

/// A V8 compilation tier, from the marker after `JS:` (or `LazyCompile:` …).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JsTier {
    /// `*`: optimized (TurboFan).
    Optimized,
    /// `^`: baseline (Sparkplug).
    Baseline,
    /// `+`: mid-tier (Maglev).
    Maglev,
    /// `~`: interpreted (Ignition).
    Interpreted,
}

/// The kind of code a function named `name` from an input of format `format` (`"xray"`,
/// `"mlpd"`, `"jitdump"` …) is.
///
/// ```
/// use profkit_export::firefox::{classify, CodeKind, JsTier};
/// assert_eq!(classify("JS:*fib file.js:1:1", "jitdump"), CodeKind::JavaScript(Some(JsTier::Optimized)));
/// assert_eq!(classify("LazyCompile:~main x.js:2", "jitdump"), CodeKind::JavaScript(Some(JsTier::Interpreted)));
/// assert_eq!(classify("Builtin:ArrayMap", "jitdump"), CodeKind::Builtin);
/// assert_eq!(classify("main", "xray"), CodeKind::Native);
/// ```
pub fn classify(name: &str, format: &str) -> CodeKind {
    const JS: [&str; 6] = [
        "JS:",
        "LazyCompile:",
        "Function:",
        "Script:",
        "Eval:",
        "InterpretedFunction:",
    ];
    const BUILTIN: [&str; 6] = [
        "Builtin:",
        "BytecodeHandler:",
        "Stub:",
        "Handler:",
        "RegExp:",
        "InlinedBuiltin:",
    ];
    for p in JS {
        if let Some(rest) = name.strip_prefix(p) {
            let tier = match rest.as_bytes().first() {
                Some(b'*') => Some(JsTier::Optimized),
                Some(b'^') => Some(JsTier::Baseline),
                Some(b'+') => Some(JsTier::Maglev),
                Some(b'~') => Some(JsTier::Interpreted),
                _ => None,
            };
            return CodeKind::JavaScript(tier);
        }
    }
    if BUILTIN.iter().any(|p| name.starts_with(p)) {
        return CodeKind::Builtin;
    }
    if name.starts_with("py::") {
        return CodeKind::Python;
    }
    if name.starts_with("wasm") || name.contains("wasm-function[") {
        return CodeKind::Wasm;
    }
    match format {
        "mlpd" => CodeKind::Managed,
        "xray" => CodeKind::Native,
        _ => CodeKind::Other,
    }
}

/// The kind of `info`'s code: by its name ([`classify`]) when the name says, else by what the
/// driver knows ([`FuncKind`]).
pub(super) fn classify_func(name: &str, info: Option<&FuncInfo>, format: &str) -> CodeKind {
    match classify(name, format) {
        CodeKind::Other => match info.map(|f| f.kind) {
            Some(FuncKind::Native) => CodeKind::Native,
            Some(FuncKind::Kernel) => CodeKind::Kernel,
            Some(FuncKind::Jit) => CodeKind::Jit,
            _ => CodeKind::Other,
        },
        kind => kind,
    }
}

/// Frame flags of code of a tier that runs JavaScript-like source (or not).
pub(super) fn tier_flags(js: bool) -> FrameFlags {
    if js {
        FrameFlags::IS_JS
    } else {
        FrameFlags::empty()
    }
}

/// The Firefox Profiler colour of a JIT_TIER colour index (docs/extension-records.md's list;
/// past the list: grey).
pub(super) fn tier_color(index: u32) -> CategoryColor {
    const COLORS: [CategoryColor; 14] = [
        CategoryColor::Transparent,
        CategoryColor::LightBlue,
        CategoryColor::Red,
        CategoryColor::LightRed,
        CategoryColor::Orange,
        CategoryColor::Blue,
        CategoryColor::Green,
        CategoryColor::Purple,
        CategoryColor::Yellow,
        CategoryColor::Brown,
        CategoryColor::Magenta,
        CategoryColor::LightGreen,
        CategoryColor::Gray,
        CategoryColor::DarkGray,
    ];
    COLORS
        .get(index as usize)
        .copied()
        .unwrap_or(CategoryColor::Gray)
}

/// The profile's categories.
#[derive(Clone, Copy, Debug)]
pub(super) struct Categories {
    js: CategoryHandle,
    js_optimized: CategoryPairHandle,
    js_baseline: CategoryPairHandle,
    js_maglev: CategoryPairHandle,
    js_interpreted: CategoryPairHandle,
    builtin: CategoryHandle,
    python: CategoryHandle,
    wasm: CategoryHandle,
    managed: CategoryHandle,
    native: CategoryHandle,
    kernel: CategoryHandle,
    pub(super) jit: CategoryHandle,
    gc: CategoryHandle,
    exception: CategoryHandle,
}

impl Categories {
    pub(super) fn new(p: &mut Profile) -> Self {
        let js = p.add_category("JavaScript", CategoryColor::Yellow);
        let js_optimized = p.add_subcategory(js, "Optimized");
        let js_baseline = p.add_subcategory(js, "Baseline");
        let js_maglev = p.add_subcategory(js, "Maglev");
        let js_interpreted = p.add_subcategory(js, "Interpreted");
        Categories {
            js,
            js_optimized,
            js_baseline,
            js_maglev,
            js_interpreted,
            builtin: p.add_category("Builtin", CategoryColor::Orange),
            python: p.add_category("Python", CategoryColor::Blue),
            wasm: p.add_category("Wasm", CategoryColor::Brown),
            managed: p.add_category("Managed", CategoryColor::Green),
            native: p.add_category("Native", CategoryColor::LightBlue),
            kernel: p.add_category("Kernel", CategoryColor::Orange),
            jit: p.add_category("JIT", CategoryColor::Purple),
            gc: p.add_category("GC", CategoryColor::Orange),
            exception: p.add_category("Exception", CategoryColor::Red),
        }
    }

    pub(super) fn frame(&self, kind: CodeKind) -> (CategoryPairHandle, FrameFlags) {
        match kind {
            CodeKind::JavaScript(tier) => (
                match tier {
                    Some(JsTier::Optimized) => self.js_optimized,
                    Some(JsTier::Baseline) => self.js_baseline,
                    Some(JsTier::Maglev) => self.js_maglev,
                    Some(JsTier::Interpreted) => self.js_interpreted,
                    None => self.js.into(),
                },
                FrameFlags::IS_JS,
            ),
            CodeKind::Builtin => (self.builtin.into(), FrameFlags::IS_RELEVANT_FOR_JS),
            CodeKind::Python => (self.python.into(), FrameFlags::empty()),
            CodeKind::Wasm => (self.wasm.into(), FrameFlags::empty()),
            CodeKind::Managed => (self.managed.into(), FrameFlags::empty()),
            CodeKind::Native => (self.native.into(), FrameFlags::empty()),
            CodeKind::Kernel => (self.kernel.into(), FrameFlags::empty()),
            CodeKind::Jit => (self.jit.into(), FrameFlags::empty()),
            CodeKind::Other => (CategoryHandle::OTHER.into(), FrameFlags::empty()),
        }
    }

    pub(super) fn marker(&self, category: &str) -> CategoryHandle {
        match category {
            "gc" => self.gc,
            "exception" => self.exception,
            "jit" => self.jit,
            _ => CategoryHandle::OTHER,
        }
    }
}
