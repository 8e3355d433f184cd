//! [`open_tag!`](crate::open_tag): an on-disk tag as an open newtype (`struct RecordType(pub
//! u32)` with a constant per known value), so values this crate does not know pass through the
//! readers and can be reported, counted or copied instead of failing the parse.
//!
//! ```
//! profkit_common::open_tag! {
//!     /// A record type.
//!     pub struct RecordType(u32) {
//!         /// The first kind.
//!         LOAD = 0 => "LOAD",
//!         /// The second kind.
//!         MOVE = 1 => "MOVE",
//!     }
//!     unknown "UNKNOWN_{}"
//! }
//! assert_eq!(RecordType::LOAD.name(), Some("LOAD"));
//! assert_eq!(RecordType(7).to_string(), "UNKNOWN_7");
//! assert_eq!(RecordType::KNOWN, [RecordType::LOAD, RecordType::MOVE]);
//! assert!(!RecordType(7).is_known());
//! ```

/// Declares an open tag newtype: the struct (`Clone, Copy, PartialEq, Eq, Hash, PartialOrd,
/// Ord, Default`), a constant per known value, `KNOWN` (every known value, in the order
/// given), `name()` (the spec's name, `None` for unknown values), `is_known()`, and `Display`
/// (the name, or the `unknown` format string with the raw value). `Debug` is derived unless
/// the declaration says `debug "…"`: then it prints that format with the `Display` text.
///
/// Where the spec's names are the constants' names, `struct T(u32) prefix "PERF_RECORD_" {
/// MMAP = 1, LOST = 2, … }` names each value by its constant and documents it as
/// `PERF_RECORD_MMAP`.
#[macro_export]
macro_rules! open_tag {
    (
        $(#[$m:meta])*
        $vis:vis struct $name:ident($ty:ty) prefix $prefix:literal {
            $($c:ident = $v:expr),* $(,)?
        }
        unknown $unknown:literal
    ) => {
        $crate::open_tag! {
            $(#[$m])*
            $vis struct $name($ty) {
                $(#[doc = concat!("`", $prefix, stringify!($c), "`.")] $c = $v => stringify!($c),)*
            }
            unknown $unknown
        }
    };
    (
        $(#[$m:meta])*
        $vis:vis struct $name:ident($ty:ty) {
            $($(#[$cm:meta])* $c:ident = $v:expr => $s:expr,)*
        }
        unknown $unknown:literal
        $(debug $debug:literal)?
    ) => {
        $(#[$m])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        $vis struct $name(pub $ty);

        impl $name {
            $($(#[$cm])* pub const $c: $name = $name($v);)*

            /// Every value the spec defines, in the order of the declaration.
            pub const KNOWN: [$name; [$(stringify!($c)),*].len()] = [$($name::$c),*];

            /// The spec's name of a known value, `None` for unknown values.
            pub fn name(self) -> Option<&'static str> {
                $(if self == $name::$c { return Some($s); })*
                None
            }

            /// Whether the value is one the spec defines.
            pub fn is_known(self) -> bool {
                self.name().is_some()
            }
        }

        impl core::fmt::Display for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                match self.name() {
                    Some(s) => f.write_str(s),
                    None => write!(f, $unknown, self.0),
                }
            }
        }

        $crate::open_tag!(@debug $name $($debug)?);
    };
    (@debug $name:ident) => {
        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.debug_tuple(stringify!($name)).field(&self.0).finish()
            }
        }
    };
    (@debug $name:ident $debug:literal) => {
        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                write!(f, $debug, self)
            }
        }
    };
}
