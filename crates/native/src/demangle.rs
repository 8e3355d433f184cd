//! Demangling of C++ (Itanium ABI) and Rust (legacy and v0) symbol names.

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

/// The readable form of a symbol name: Rust (`_ZN…17h<hash>E` legacy, `_R…` v0; printed
/// without the hash) and C++ Itanium (`_Z…`, with parameter types and GCC's
/// `[clone .part.0]` suffixes, as `c++filt` and `addr2line -C` print them). Any other name,
/// or a name that does not demangle, comes back unchanged (borrowed). A PLT stub's
/// `name@plt` is `name` demangled, then `@plt` (as perf shows it).
pub fn demangle(name: &str) -> Cow<'_, str> {
    if let Some(base) = name.strip_suffix("@plt") {
        return match demangle(base) {
            Cow::Owned(d) => Cow::Owned(d + "@plt"),
            Cow::Borrowed(_) => Cow::Borrowed(name),
        };
    }
    // Rust first: legacy Rust names are valid Itanium names too, but only rustc-demangle
    // knows to drop the hash.
    if name.starts_with("_R") || name.starts_with("_ZN") || name.starts_with("__R") {
        if let Ok(d) = rustc_demangle::try_demangle(name) {
            let s = format!("{d:#}");
            if s != name {
                return Cow::Owned(s);
            }
        }
    }
    if name.starts_with("_Z") || name.starts_with("__Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(name) {
            let opts = if CPP_PARAMETERS.load(Ordering::Relaxed) {
                cpp_demangle::DemangleOptions::default()
            } else {
                cpp_demangle::DemangleOptions::default()
                    .no_params()
                    .no_return_type()
            };
            if let Ok(s) = sym.demangle(&opts) {
                return Cow::Owned(s);
            }
        }
    }
    Cow::Borrowed(name)
}

#[cfg(test)]
mod tests {
    use super::demangle;

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
}
