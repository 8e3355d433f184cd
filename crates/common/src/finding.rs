//! Findings: what `profkit validate` reports about a file.
//!
//! A format's validator owns a table of codes (`(code, severity, description)`, documented in
//! the format's page under docs/) and pushes findings into a [`Findings`] collector, which
//! looks the severity up, caps each code at [`MAX_PER_CODE`] listed findings, and at the end
//! adds the two codes every format shares: [`TRUNCATED`] (the file is cut off) and
//! [`FINDINGS_CAPPED`] (more findings of a code than were listed).

use core::fmt;
use std::collections::HashMap;

use crate::truncation::Truncation;

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// A known producer quirk, or something consumers cope with.
    Warning,
    /// A violation of the format's specification.
    Error,
}

impl Severity {
    /// `"error"` or `"warning"`.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// One problem found in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Stable kebab-case identifier, listed in the format's code table.
    pub code: &'static str,
    /// Error or warning.
    pub severity: Severity,
    /// Absolute byte offset the finding is about (in the decompressed data).
    pub offset: u64,
    /// Index of the record (event, line) it is about; `None` for the file header or the file
    /// as a whole.
    pub record: Option<u64>,
    /// What is wrong, and which producer is known to do it.
    pub message: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[{}] ", self.severity.name(), self.code)?;
        match self.record {
            Some(r) => write!(f, "record #{r} at offset {:#x}: ", self.offset)?,
            None => write!(f, "offset {:#x}: ", self.offset)?,
        }
        f.write_str(&self.message)
    }
}

/// A table of finding codes: `(code, severity, one-line description)`.
pub type CodeTable = &'static [(&'static str, Severity, &'static str)];

/// The file ends inside a record (every format).
pub const TRUNCATED: &str = "truncated";
/// More findings of one code than are listed (every format).
pub const FINDINGS_CAPPED: &str = "findings-capped";

/// The codes every format shares, with their severities.
pub const COMMON_CODES: CodeTable = &[
    (
        TRUNCATED,
        Severity::Error,
        "the file ends inside a record (everything before the cut was checked)",
    ),
    (
        FINDINGS_CAPPED,
        Severity::Warning,
        "more findings of one code than are listed",
    ),
];

/// Findings of one code beyond this number are counted, not listed.
pub const MAX_PER_CODE: usize = 100;

/// The result of validating a file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Validation {
    /// Findings in file order (findings about the whole file last).
    pub findings: Vec<Finding>,
    /// Records checked (events for Mono, lines for a perf map).
    pub records: u64,
    /// Where the file is cut, if it is (also listed as a [`TRUNCATED`] error).
    pub truncation: Option<Truncation>,
    /// Errors counted past [`MAX_PER_CODE`] of their code (not in `findings`).
    pub unlisted_errors: u64,
    /// Warnings counted past [`MAX_PER_CODE`] of their code (not in `findings`).
    pub unlisted_warnings: u64,
}

impl Validation {
    /// Findings with severity error.
    pub fn errors(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
    }

    /// Findings with severity warning.
    pub fn warnings(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Warning)
    }

    /// How many errors were found, listed or not (the true count, not the listing cap).
    pub fn error_count(&self) -> u64 {
        self.errors().count() as u64 + self.unlisted_errors
    }

    /// How many warnings were found, listed or not (the [`FINDINGS_CAPPED`] notes included).
    pub fn warning_count(&self) -> u64 {
        self.warnings().count() as u64 + self.unlisted_warnings
    }

    /// Whether any finding is an error.
    pub fn has_errors(&self) -> bool {
        self.errors().next().is_some()
    }
}

/// Collects findings: severities from a code table, each code capped at [`MAX_PER_CODE`].
#[derive(Debug)]
pub struct Findings {
    table: CodeTable,
    findings: Vec<Finding>,
    per_code: HashMap<&'static str, usize>,
}

impl Findings {
    /// A collector for a format whose codes are `table` (plus [`COMMON_CODES`]).
    pub fn new(table: CodeTable) -> Findings {
        Findings {
            table,
            findings: Vec::new(),
            per_code: HashMap::new(),
        }
    }

    /// The severity of `code` in the table (or the common codes); unknown codes are errors.
    pub fn severity(&self, code: &str) -> Severity {
        severity_in(self.table, code).unwrap_or(Severity::Error)
    }

    /// Adds a finding (counted but not listed once its code has [`MAX_PER_CODE`]).
    pub fn push(
        &mut self,
        code: &'static str,
        offset: u64,
        record: Option<u64>,
        message: impl Into<String>,
    ) {
        let n = self.per_code.entry(code).or_insert(0);
        *n += 1;
        if *n > MAX_PER_CODE {
            return;
        }
        let severity = self.severity(code);
        self.findings.push(Finding {
            code,
            severity,
            offset,
            record,
            message: message.into(),
        });
    }

    /// How many findings of `code` were pushed (listed or not).
    pub fn count(&self, code: &str) -> usize {
        self.per_code.get(code).copied().unwrap_or(0)
    }

    /// Whether nothing was pushed.
    pub fn is_empty(&self) -> bool {
        self.findings.is_empty()
    }

    /// Ends the collection: the cut (if any) becomes a [`TRUNCATED`] error, and each capped
    /// code one [`FINDINGS_CAPPED`] warning (codes in alphabetical order).
    pub fn finish(mut self, records: u64, truncation: Option<Truncation>) -> Validation {
        if let Some(t) = &truncation {
            self.findings.push(Finding {
                code: TRUNCATED,
                severity: Severity::Error,
                offset: t.offset,
                record: t.record,
                message: format!("the file ends inside a record: {}", t.reason),
            });
        }
        let mut capped: Vec<(&'static str, usize)> = self
            .per_code
            .iter()
            .filter(|(_, &n)| n > MAX_PER_CODE)
            .map(|(&c, &n)| (c, n))
            .collect();
        capped.sort_unstable();
        let (mut unlisted_errors, mut unlisted_warnings) = (0u64, 0u64);
        for (code, n) in capped {
            let unlisted = (n - MAX_PER_CODE) as u64;
            match self.severity(code) {
                Severity::Error => unlisted_errors += unlisted,
                Severity::Warning => unlisted_warnings += unlisted,
            }
            self.findings.push(Finding {
                code: FINDINGS_CAPPED,
                severity: Severity::Warning,
                offset: 0,
                record: None,
                message: format!(
                    "{n} findings of `{code}`; only the first {MAX_PER_CODE} are listed"
                ),
            });
        }
        Validation {
            findings: self.findings,
            records,
            truncation,
            unlisted_errors,
            unlisted_warnings,
        }
    }
}

/// The severity of `code` in `table` or in [`COMMON_CODES`].
pub fn severity_in(table: CodeTable, code: &str) -> Option<Severity> {
    table
        .iter()
        .chain(COMMON_CODES.iter())
        .find(|(c, _, _)| *c == code)
        .map(|(_, s, _)| *s)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CODES: CodeTable = &[
        ("a-error", Severity::Error, "an error"),
        ("a-quirk", Severity::Warning, "a quirk"),
    ];

    #[test]
    fn severities_caps_and_truncation() {
        let mut f = Findings::new(CODES);
        for i in 0..(MAX_PER_CODE as u64 + 5) {
            f.push("a-quirk", i, Some(i), "q");
        }
        f.push("a-error", 7, None, "e");
        f.push("not-in-table", 9, None, "x");
        assert_eq!(f.count("a-quirk"), MAX_PER_CODE + 5);
        let v = f.finish(200, Some(Truncation::new(300, Some(200), "cut")));
        assert_eq!(v.warnings().count(), MAX_PER_CODE + 1);
        assert_eq!(
            v.warning_count(),
            v.warnings().count() as u64 + v.unlisted_warnings
        );
        let errors: Vec<_> = v.errors().map(|f| f.code).collect();
        assert_eq!(errors, ["a-error", "not-in-table", TRUNCATED]);
        let last = v.findings.last().unwrap();
        assert_eq!(last.code, FINDINGS_CAPPED);
        assert!(last.message.contains("105 findings of `a-quirk`"));
        assert!(v.has_errors());
        assert_eq!(v.records, 200);
    }

    #[test]
    fn display() {
        let f = Finding {
            code: "x",
            severity: Severity::Error,
            offset: 0x10,
            record: Some(2),
            message: "m".into(),
        };
        assert_eq!(f.to_string(), "error[x] record #2 at offset 0x10: m");
    }
}
