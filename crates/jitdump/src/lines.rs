//! Where a DEBUG_INFO table's addresses really are: the one decision about a dump's address
//! bias and each producer's habits, shared by `validate`, `symbolize`, `convert` and `inject`.
//!
//! The spec says a JIT_CODE_DEBUG_INFO entry's `addr` is a code address of the function its
//! LOAD describes. Producers bend that in three known ways:
//!
//! * **V8 and LLVM add a bias**: every address is code address + 0x40 (+0x34 on 32-bit), the
//!   size of the ELF header perf inject puts before the code. A V8 table starts exactly at
//!   +0x40, and its last entries may lie past the code's end until the bias is removed.
//! * **Erlang/OTP BeamAsm and QEMU end each table with a terminator**: an entry exactly at
//!   the code's end with line 0 (and an empty file name), deliberately, to close the last
//!   line's range. It is not evidence of anything, not out of range and not a line.
//! * **OTP 25 starts a table before its function**: the first entry is 48–55 bytes before
//!   the code, inside the `-CodeInfoPrologue` load before it (it repeats the previous
//!   function's last line). That is a producer bug, reported as such; the entry is unusable.
//!
//! [`TableSpan`] collects one table's addresses as its entries are read; [`TableSpan::place`]
//! sets it against its LOAD (setting the terminator aside), and [`BiasDecision`] decides the
//! dump's bias from every placed table: a bias is chosen only when **every** table fits it
//! and some table gives positive evidence (an entry exactly at the bias, or entries past the
//! code's end that fit only with it). A terminator, or a table that starts before its code,
//! can never make a bias: the first is set aside, the second fits no bias.

/// The biases producers are known to add, 64-bit first.
pub const KNOWN_BIASES: [u64; 2] = [0x40, 0x34];

/// The addresses of one DEBUG_INFO table, gathered entry by entry without allocating.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TableSpan {
    /// Smallest and largest address of every entry but the last.
    body: Option<(u64, u64)>,
    /// The last entry: (address, line).
    last: Option<(u64, u32)>,
    /// Entries with line 0, the last one excluded.
    body_line_zero: u64,
}

impl TableSpan {
    /// Adds the next entry.
    pub fn push(&mut self, addr: u64, line: u32) {
        if let Some((a, l)) = self.last {
            self.body = Some(self.body.map_or((a, a), |(lo, hi)| (lo.min(a), hi.max(a))));
            self.body_line_zero += u64::from(l == 0);
        }
        self.last = Some((addr, line));
    }

    /// Entries with line 0, the last one included (for a table no LOAD places).
    pub fn line_zero(&self) -> u64 {
        self.body_line_zero + u64::from(self.last.is_some_and(|(_, l)| l == 0))
    }

    /// The table set against its function's code `[code_addr, code_addr + code_size)`.
    pub fn place(&self, code_addr: u64, code_size: u64) -> PlacedTable {
        let end = code_addr.saturating_add(code_size);
        let terminator = self.last.is_some_and(|(a, l)| a == end && l == 0);
        let mut span = self.body;
        let mut line_zero = self.body_line_zero;
        if let Some((a, l)) = self.last.filter(|_| !terminator) {
            span = Some(span.map_or((a, a), |(lo, hi)| (lo.min(a), hi.max(a))));
            line_zero += u64::from(l == 0);
        }
        PlacedTable {
            start: code_addr,
            end,
            span,
            terminator,
            line_zero,
        }
    }
}

/// One table against its function's code, the terminator set aside.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlacedTable {
    /// The function's first code address.
    pub start: u64,
    /// One past its last code address.
    pub end: u64,
    /// Smallest and largest entry address, the terminator excluded (`None`: no such entry).
    pub span: Option<(u64, u64)>,
    /// Whether the table ends with a terminator entry (at `end`, line 0).
    pub terminator: bool,
    /// Entries with line 0 that are not the terminator.
    pub line_zero: u64,
}

impl PlacedTable {
    /// Whether every entry is in the code once `bias` is subtracted.
    pub fn fits(&self, bias: u64) -> bool {
        self.span.is_none_or(|(lo, hi)| {
            lo >= self.start.saturating_add(bias)
                && hi - bias < self.end.max(self.start.saturating_add(1))
        })
    }

    /// How many bytes before the code the first entry is, when it is before it by less than
    /// 64 bytes (OTP's first-entry bug); `None` otherwise.
    pub fn starts_early_by(&self) -> Option<u64> {
        let (lo, _) = self.span?;
        let by = self.start.checked_sub(lo).filter(|&b| b > 0)?;
        (by < 64).then_some(by)
    }
}

/// The dump's DEBUG_INFO address bias, decided over all its tables (see the [module
/// docs](self)).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BiasDecision {
    /// Tables with at least one entry besides a terminator.
    pub tables: u64,
    /// Tables that end with a terminator.
    pub terminators: u64,
    /// Tables whose first entry is before the code (OTP's bug).
    pub early: u64,
    /// Per [`KNOWN_BIASES`], what the tables say of it.
    pub evidence: [BiasEvidence; 2],
}

/// What the tables say of one bias.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BiasEvidence {
    /// The bias.
    pub bias: u64,
    /// Tables that fit it.
    pub fit: u64,
    /// Tables that start exactly at it.
    pub start_at: u64,
    /// Tables with entries past the code's end that fit only with it.
    pub fit_only_with: u64,
}

impl BiasDecision {
    /// Counts one table.
    pub fn add(&mut self, t: &PlacedTable) {
        self.terminators += u64::from(t.terminator);
        let Some((lo, hi)) = t.span else {
            return;
        };
        self.tables += 1;
        self.early += u64::from(t.starts_early_by().is_some());
        for (e, bias) in self.evidence.iter_mut().zip(KNOWN_BIASES) {
            if !t.fits(bias) {
                continue;
            }
            e.fit += 1;
            if lo == t.start.saturating_add(bias) {
                e.start_at += 1;
            }
            if hi >= t.end {
                e.fit_only_with += 1;
            }
        }
    }

    /// The bias to subtract from every DEBUG_INFO address: 0x40 or 0x34 when every table
    /// fits it and some table shows it, else 0.
    pub fn bias(&self) -> u64 {
        self.chosen().map_or(0, |e| e.bias)
    }

    /// The evidence of the bias chosen, if one was.
    pub fn chosen(&self) -> Option<BiasEvidence> {
        self.evidence
            .iter()
            .zip(KNOWN_BIASES)
            .find(|(e, _)| {
                self.tables > 0 && e.fit == self.tables && e.start_at + e.fit_only_with > 0
            })
            .map(|(e, bias)| BiasEvidence { bias, ..*e })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(entries: &[(u64, u32)]) -> TableSpan {
        let mut t = TableSpan::default();
        for &(a, l) in entries {
            t.push(a, l);
        }
        t
    }

    #[test]
    fn qemu_terminator_is_no_evidence() {
        // QEMU without libdw: one entry, at the code's end, line 0.
        let mut d = BiasDecision::default();
        for i in 0..100u64 {
            let start = 0x1000 + i * 0x200;
            let p = table(&[(start + 0xd6, 0)]).place(start, 0xd6);
            assert!(p.terminator && p.span.is_none() && p.line_zero == 0);
            d.add(&p);
        }
        assert_eq!((d.bias(), d.terminators, d.tables), (0, 100, 0));
    }

    #[test]
    fn erlang_tables_keep_their_addresses() {
        // OTP 25: first entry 0x32 before the code, a terminator at the end; other tables
        // start 0x40 or more into their code.
        let mut d = BiasDecision::default();
        let early = table(&[(0x52e, 83), (0x585, 84), (0x5ca, 93), (0x5d0, 0)]).place(0x560, 0x70);
        assert_eq!(early.starts_early_by(), Some(0x32));
        assert!(early.terminator);
        d.add(&early);
        let late = table(&[(0x1045, 10), (0x1080, 11), (0x10a0, 0)]).place(0x1000, 0xa0);
        d.add(&late);
        assert_eq!(d.bias(), 0);
        // Even with no early table, entries 0x40 in and a terminator are not V8's bias.
        let mut d = BiasDecision::default();
        d.add(&late);
        assert_eq!(d.bias(), 0);
    }

    #[test]
    fn v8_bias() {
        let mut d = BiasDecision::default();
        // Starts exactly at +0x40; the second has entries past the end.
        d.add(&table(&[(0x1040, 1), (0x1060, 2)]).place(0x1000, 0x80));
        d.add(&table(&[(0x2040, 1), (0x20a0, 2)]).place(0x2000, 0x80));
        assert_eq!(d.bias(), 0x40);
        assert_eq!(d.chosen().map(|e| e.start_at), Some(2));
        // One table starting at its code rules the bias out.
        d.add(&table(&[(0x3000, 1)]).place(0x3000, 0x80));
        assert_eq!(d.bias(), 0);
    }

    #[test]
    fn hostile_addresses_do_not_overflow() {
        let p = table(&[(u64::MAX, 1), (0, 0)]).place(u64::MAX - 1, u64::MAX);
        let mut d = BiasDecision::default();
        d.add(&p);
        let _ = d.bias();
        let _ = p.starts_early_by();
    }
}
