//! Bounds-checked little/big-endian reads from byte slices: profkit-common's, shared by every
//! format. [`Endian`] is a perf.data file's byte order (`PERFILE2` little, `2ELIFREP` big).

pub(crate) use profkit_common::endian::{array, range, u16_at, u32_at, u64_at, until_nul};
pub use profkit_common::Endian;
