//! Demangling of C++ (Itanium ABI) and Rust (legacy and v0) symbol names: the one demangler of
//! the workspace, by perf's rules or llvm-symbolizer's ([`Style`]).

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether C++ names keep their parameter lists (see [`set_cpp_parameters`]).
static CPP_PARAMETERS: AtomicBool = AtomicBool::new(true);

/// Chooses, for the whole process, whether C++ names are demangled in full (`true`, the
/// default: `ns::f(int, char const*)`, as `c++filt` prints them) or short, without parameter
/// lists and return types (`ns::f`, as `perf report` prints them). A display preference like
/// perf's own, set once by the command line before any binary is read.
pub fn set_cpp_parameters(keep: bool) {
    CPP_PARAMETERS.store(keep, Ordering::Relaxed);
}

/// Whose rules [`demangle_as`] follows: the two tools profkit's outputs are compared with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// perf's (see [`demangle`]).
    Perf,
    /// llvm-symbolizer's as llvm-xray shows names: Rust v0 (`_R…`) and legacy names that carry
    /// a hash (`_ZN…17h<hash>E`) through the Rust demangler (without the hash); any other `_Z…`
    /// name as C++ with parameter lists, whatever [`set_cpp_parameters`] chose; no `@plt`
    /// (LLVM's tools read `.symtab`, which has no PLT stubs), no `__R`/`__Z` prefixes.
    LlvmSymbolizer,
}

/// The readable form of a symbol name: Rust (`_ZN…17h<hash>E` legacy, `_R…` v0; printed
/// without the hash) and C++ Itanium (`_Z…`, with parameter types and GCC's
/// `[clone .part.0]` suffixes, as `c++filt` and `addr2line -C` print them). Any other name,
/// or a name that does not demangle, comes back unchanged (borrowed). A PLT stub's
/// `name@plt` is `name` demangled, then `@plt` (as perf shows it). perf's rules
/// ([`Style::Perf`]).
pub fn demangle(name: &str) -> Cow<'_, str> {
    demangle_as(name, Style::Perf)
}

/// The readable form of a symbol name by `style`'s rules.
pub fn demangle_as(name: &str, style: Style) -> Cow<'_, str> {
    match style {
        Style::Perf => perf(name),
        Style::LlvmSymbolizer => llvm_symbolizer(name),
    }
}

fn perf(name: &str) -> Cow<'_, str> {
    if let Some(base) = name.strip_suffix("@plt") {
        return match perf(base) {
            Cow::Owned(d) => Cow::Owned(d + "@plt"),
            Cow::Borrowed(_) => Cow::Borrowed(name),
        };
    }
    // Rust first: legacy Rust names are valid Itanium names too, but only rustc-demangle
    // knows to drop the hash.
    if name.starts_with("_R") || name.starts_with("_ZN") || name.starts_with("__R") {
        if let Some(s) = rust(name).filter(|s| s != name) {
            return Cow::Owned(s);
        }
    }
    if name.starts_with("_Z") || name.starts_with("__Z") {
        if let Some(s) = cpp(name, CPP_PARAMETERS.load(Ordering::Relaxed)) {
            return Cow::Owned(s);
        }
    }
    Cow::Borrowed(name)
}

fn llvm_symbolizer(name: &str) -> Cow<'_, str> {
    let rust_legacy = name.starts_with("_ZN") && name.ends_with('E') && name.contains("17h");
    if name.starts_with("_R") || rust_legacy {
        if let Some(s) = rust(name) {
            return Cow::Owned(s);
        }
    }
    if name.starts_with("_Z") {
        if let Some(s) = cpp(name, true) {
            return Cow::Owned(s);
        }
    }
    Cow::Borrowed(name)
}

/// A Rust name demangled, without its hash.
fn rust(name: &str) -> Option<String> {
    rustc_demangle::try_demangle(name)
        .ok()
        .map(|d| format!("{d:#}"))
}

/// An Itanium C++ name demangled, with parameter lists and return types or without.
fn cpp(name: &str, parameters: bool) -> Option<String> {
    let sym = cpp_demangle::Symbol::new(name).ok()?;
    let opts = if parameters {
        cpp_demangle::DemangleOptions::default()
    } else {
        cpp_demangle::DemangleOptions::default()
            .no_params()
            .no_return_type()
    };
    sym.demangle(&opts).ok()
}

#[cfg(test)]
mod tests {
    use super::{demangle, demangle_as, Style};

    #[test]
    fn cpp_rust_and_plain() {
        assert_eq!(demangle("_ZN3foo3barEi"), "foo::bar(int)");
        assert_eq!(demangle("_Z3fooi.part.0"), "foo(int) [clone .part.0]");
        assert_eq!(demangle("_ZN3foo3barEi@plt"), "foo::bar(int)@plt");
        assert_eq!(demangle("memcpy@plt"), "memcpy@plt");
        assert_eq!(
            demangle("_ZN4core3fmt5write17h0123456789abcdefE"),
            "core::fmt::write"
        );
        assert_eq!(demangle("_RNvCs1234_7mycrate4main"), "mycrate::main");
        assert_eq!(demangle("main"), "main");
        assert_eq!(demangle("_Z"), "_Z");
        assert_eq!(demangle(""), "");
    }

    #[test]
    fn llvm_symbolizer_rules() {
        // Rust legacy names only with a hash; no `@plt` rule and no `__Z` prefix.
        let cases = [
            ("_ZN3foo3barEi", "foo::bar(int)"),
            ("_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write"),
            ("_RNvCs1234_7mycrate4main", "mycrate::main"),
            ("memcpy@plt", "memcpy@plt"),
            ("__Z3fooi", "__Z3fooi"),
            ("main", "main"),
        ];
        for (name, want) in cases {
            assert_eq!(demangle_as(name, Style::LlvmSymbolizer), want, "{name}");
        }
    }
}
