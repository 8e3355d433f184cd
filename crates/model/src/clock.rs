//! Time: raw units of the trace and their conversion to nanoseconds.

/// How a trace's raw time values convert to nanoseconds.
///
/// XRay stores TSC ticks with a cycle frequency in the header; jitdump and mlpd are already in
/// nanoseconds (`ticks_per_second = 1e9`). A frequency of 0 means "unknown": values pass through
/// unchanged (llvm-xray then prints raw ticks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clock {
    /// Raw units per second (0 = unknown).
    pub ticks_per_second: u64,
}

impl Default for Clock {
    fn default() -> Self {
        Clock::NANOSECONDS
    }
}

impl Clock {
    /// A clock whose raw unit already is the nanosecond.
    pub const NANOSECONDS: Clock = Clock {
        ticks_per_second: 1_000_000_000,
    };

    /// A clock with `ticks_per_second` raw units per second (0 = unknown).
    pub fn new(ticks_per_second: u64) -> Self {
        Clock { ticks_per_second }
    }

    /// Raw units to nanoseconds (exact integer arithmetic, rounded down; unchanged if unknown).
    pub fn to_ns(&self, ticks: u64) -> u64 {
        match self.ticks_per_second {
            0 | 1_000_000_000 => ticks,
            f => {
                let ns = u128::from(ticks) * 1_000_000_000 / u128::from(f);
                u64::try_from(ns).unwrap_or(u64::MAX)
            }
        }
    }

    /// Raw units to seconds as llvm-xray computes them (`ticks / frequency` in double; raw ticks
    /// when the frequency is 0).
    pub fn to_seconds_f64(&self, ticks: f64) -> f64 {
        if self.ticks_per_second == 0 {
            ticks
        } else {
            ticks / self.ticks_per_second as f64
        }
    }
}
