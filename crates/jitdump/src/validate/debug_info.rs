//! The checks of line tables: DEBUG_INFO and DEBUG_INFO2 records against the code they
//! describe (entries inside the code, order, terminators, line 0, file names), and the
//! evidence for V8's +0x40 address bias gathered across the whole dump (one decision,
//! `crate::lines::BiasDecision`, reported once).

use super::*;

impl Validator {
    pub(super) fn account_bias(
        &mut self,
        index: u64,
        offset: u64,
        d: DebugPending,
        start: u64,
        size: u64,
    ) {
        let t = d.span.place(start, size);
        self.report_line_zero(index, offset, t.line_zero);
        let b = &mut self.bias;
        b.decision.add(&t);
        if t.terminator {
            b.first_terminator.get_or_insert((index, offset));
        }
        if t.span.is_none() {
            return;
        }
        b.first.get_or_insert((index, offset));
        if !t.fits(0) {
            let early = t.starts_early_by().is_some();
            let n = if early {
                &mut b.unfit.0
            } else {
                &mut b.unfit.1
            };
            *n += 1;
            if *n <= MAX_PER_CODE as u64 {
                b.out_of_range.push((index, offset, t));
            }
        }
    }

    pub(super) fn report_line_zero(&mut self, index: u64, offset: u64, n: u64) {
        if n > 0 {
            self.push(
                "debug-info-line-zero",
                offset,
                Some(index),
                format!("{n} entries have line 0 (lines are 1-based)"),
            );
        }
    }

    pub(super) fn report_bias(&mut self) {
        let b = std::mem::take(&mut self.bias);
        let d = &b.decision;
        if let Some((index, offset)) = b.first_terminator {
            self.push(
                "debug-info-end-terminator",
                offset,
                Some(index),
                format!(
                    "{} DEBUG_INFO tables end with an entry exactly at the code's end with line 0 (Erlang/OTP BeamAsm and QEMU close the last line's range this way; it is not a line and profkit ignores it)",
                    d.terminators
                ),
            );
        }
        if let (Some(e), Some((index, offset))) = (d.chosen(), b.first) {
            let bias = e.bias;
            self.push(
                if bias == 0x40 {
                    "debug-info-address-bias-0x40"
                } else {
                    "debug-info-address-bias-0x34"
                },
                offset,
                Some(index),
                format!(
                    "DEBUG_INFO addresses are code address + {bias:#x}: all {} tables fit it, {} start exactly {bias:#x} bytes into their code and {} have entries past the code's end that fit only once {bias:#x} is subtracted (V8 and LLVM add the ELF header size{})",
                    d.tables,
                    e.start_at,
                    e.fit_only_with,
                    if bias == 0x40 { "; 64-bit" } else { "; 32-bit" }
                ),
            );
            return;
        }
        for (index, offset, t) in &b.out_of_range {
            let (lo, hi) = t.span.unwrap_or_default();
            match t.starts_early_by() {
                Some(by) => self.push(
                    "debug-info-before-function",
                    *offset,
                    Some(*index),
                    format!(
                        "the first DEBUG_INFO entry ({lo:#x}) is {by} bytes before the function's code {:#x}..{:#x}: Erlang/OTP BeamAsm writes it inside the function's -CodeInfoPrologue (an OTP bug; the entry repeats the previous function's last line)",
                        t.start, t.end
                    ),
                ),
                None => self.push(
                    "debug-info-out-of-range",
                    *offset,
                    Some(*index),
                    format!(
                        "DEBUG_INFO entries span {lo:#x}..={hi:#x}, outside the function's code {:#x}..{:#x}",
                        t.start, t.end
                    ),
                ),
            }
        }
        // Counted past the listing cap.
        for (code, n) in [
            ("debug-info-before-function", b.unfit.0),
            ("debug-info-out-of-range", b.unfit.1),
        ] {
            for _ in MAX_PER_CODE as u64..n {
                self.push(code, 0, None, String::new());
            }
        }
    }

    pub(super) fn check_debug_info(&mut self, raw: &RawRecord<'_>, d: &DebugInfo<'_>) {
        if d.nr_entry == 0 {
            self.at(
                raw,
                "debug-info-empty",
                "JIT_CODE_DEBUG_INFO has no entries".into(),
            );
        }
        let walk = d.walk_end();
        let mut corrupt_reason = match walk {
            DebugWalkEnd::Exact { .. } => None,
            DebugWalkEnd::Leftover { leftover } => Some(format!(
                "after {} entries {} bytes remain",
                d.nr_entry, leftover
            )),
            DebugWalkEnd::Overrun { entry, offset } => Some(format!(
                "entry {entry} at offset {offset:#x} runs past the record's end"
            )),
        };
        let mut span = TableSpan::default();
        if corrupt_reason.is_none() {
            for (i, e) in d.entries().enumerate() {
                if !valid_name(e.file) || e.file.iter().any(|&c| c < 0x20 && c != b'\t') {
                    corrupt_reason = Some(format!(
                        "entry {i} has a garbage file name {:?}",
                        lossy(e.file)
                    ));
                    break;
                }
                span.push(e.addr, e.line);
                self.debug_files.insert(e.file.to_vec());
            }
        }
        if let Some(reason) = &corrupt_reason {
            let recovery = match d.fixed_stride() {
                Some(stride) => {
                    let first = d.entry_at_stride(stride, 0);
                    let tail = first
                        .map(|e| recovered_name_tail(e.file))
                        .unwrap_or_default();
                    format!(
                        "; the entries do fit a fixed {stride}-byte stride (one file name of {} bytes whose first bytes were overwritten; it ends in {tail:?}), so profkit recovers their lines",
                        stride - 17
                    )
                }
                None => String::new(),
            };
            self.at(
                raw,
                "debug-info-corrupt",
                format!(
                    "JIT_CODE_DEBUG_INFO for {:#x} with {} entries is corrupt: {reason} (V8 in Node 20 frees script names before writing them: the file name's first 16 bytes are heap pointers and the NUL-walk desynchronizes){recovery}",
                    d.code_addr, d.nr_entry
                ),
            );
        }
        // Line 0 and the addresses are judged at the LOAD, which says where the code ends
        // (a terminator there is not a line).
        let pending = DebugPending {
            code_addr: d.code_addr,
            span,
            corrupt: corrupt_reason.is_some(),
        };
        hold(
            &mut self.findings,
            &mut self.pending_debug,
            "JIT_CODE_DEBUG_INFO",
            raw,
            pending,
        );
    }

    pub(super) fn check_debug_info2(&mut self, raw: &RawRecord<'_>, d: &DebugInfo2<'_>) {
        let c = d.counts;
        for (what, list, count, size) in [
            ("file", d.files(), c.file_count, c.file_list_size),
            (
                "function-name",
                d.function_names(),
                c.function_names_count,
                c.function_names_list_size,
            ),
        ] {
            if size % 4 != 0 {
                self.at(
                    raw,
                    "debug-info2-list-size",
                    format!("{what} list size {size} is not a multiple of 4"),
                );
            }
            let mut it = list;
            let mut found = 0u32;
            let mut bad_utf8 = None;
            for s in &mut it {
                if bad_utf8.is_none() && !valid_name(s) {
                    bad_utf8 = Some(lossy(s));
                }
                if what == "file" {
                    self.debug_files.insert(s.to_vec());
                }
                found += 1;
            }
            if found != count {
                self.at(
                    raw,
                    "debug-info2-string-count",
                    format!("{what} list declares {count} strings but holds {found}"),
                );
            } else if it.rest().len() >= 4 || !all_zero(it.rest()) {
                let extra = it.rest().iter().filter(|&&b| b == 0).count();
                self.at(raw, "debug-info2-string-count", format!("{what} list holds more than its {count} strings ({} bytes after the last, {extra} NULs)", it.rest().len()));
            }
            if let Some(s) = bad_utf8 {
                self.at(
                    raw,
                    "name-not-utf8",
                    format!("DEBUG_INFO2 {what} {s:?} is not UTF-8"),
                );
            }
        }
        if c.function_count == 0 {
            self.at(
                raw,
                "debug-info2-no-function",
                "function list is empty; its first entry must describe the outer function".into(),
            );
        }
        for (i, f) in d.functions().enumerate() {
            if f.function_name_index >= c.function_names_count || f.file_index >= c.file_count {
                self.at(
                    raw,
                    "debug-info2-index",
                    format!(
                        "function {i}: name index {} (of {}) / file index {} (of {})",
                        f.function_name_index, c.function_names_count, f.file_index, c.file_count
                    ),
                );
            }
        }
        let ranges: Vec<_> = d.ranges().collect();
        let mut range_pos = 0usize;
        let mut prev_depth: Option<u32> = None;
        // Per depth: the ranges of the siblings seen under the current parent.
        let mut siblings: Vec<std::collections::BTreeMap<u64, u64>> = Vec::new();
        let mut max_end = 0u64;
        let mut range_sum = 0u64;
        for (i, call) in d.inline_calls().enumerate() {
            let ok_depth = match prev_depth {
                None => call.depth == 0,
                Some(p) => call.depth <= p + 1,
            };
            if !ok_depth {
                self.at(
                    raw,
                    "debug-info2-depth",
                    format!(
                        "inline call {i} has depth {} after depth {}",
                        call.depth,
                        prev_depth.map_or("none".to_string(), |p| p.to_string())
                    ),
                );
            }
            prev_depth = Some(call.depth);
            if call.function_index >= c.function_count {
                self.at(
                    raw,
                    "debug-info2-index",
                    format!(
                        "inline call {i}: function index {} (of {})",
                        call.function_index, c.function_count
                    ),
                );
            }
            if call.range_count == 0 {
                self.at(
                    raw,
                    "debug-info2-range-count",
                    format!("inline call {i} has no ranges"),
                );
            }
            range_sum += u64::from(call.range_count);
            // A depth from the file is only trusted up to one level below the current one,
            // so a hostile depth cannot size an allocation.
            let depth = (call.depth as usize).min(siblings.len());
            if depth < siblings.len() {
                siblings.truncate(depth + 1);
            } else {
                siblings.resize_with(depth + 1, Default::default);
            }
            let mut mine = Vec::new();
            // The count comes from the file: walk only the ranges that exist.
            let mine_ranges = ranges
                .get(range_pos..)
                .unwrap_or(&[])
                .iter()
                .take(call.range_count as usize);
            for r in mine_ranges {
                let (s, e) = (
                    u64::from(r.start_offset),
                    u64::from(r.start_offset) + u64::from(r.size),
                );
                max_end = max_end.max(e);
                mine.push((s, e));
            }
            range_pos = range_pos.saturating_add(call.range_count as usize);
            if let Some(level) = siblings.get_mut(depth) {
                // Sibling ranges are kept ordered by start, so each check is a lookup.
                let overlap = mine.iter().any(|&(s, e)| {
                    s < e && level.range(..e).next_back().is_some_and(|(_, &e2)| e2 > s)
                });
                if overlap {
                    self.at(
                        raw,
                        "debug-info2-overlap",
                        format!("inline call {i}'s ranges overlap a sibling's at depth {depth}"),
                    );
                }
                for (s, e) in mine {
                    let end = level.entry(s).or_insert(e);
                    *end = (*end).max(e);
                }
            }
            // Children of this call start a fresh sibling set.
            siblings.truncate(depth + 1);
        }
        if range_sum != u64::from(c.range_count) {
            self.at(
                raw,
                "debug-info2-range-count",
                format!(
                    "inline calls consume {range_sum} ranges but range_count is {}",
                    c.range_count
                ),
            );
        }
        let mut max_line = None::<u32>;
        for (i, l) in d.lines().enumerate() {
            if l.file_index >= c.file_count {
                self.at(
                    raw,
                    "debug-info2-index",
                    format!(
                        "line record {i}: file index {} (of {})",
                        l.file_index, c.file_count
                    ),
                );
            }
            max_line = Some(max_line.map_or(l.code_offset, |m| m.max(l.code_offset)));
        }
        if !d.trailing.is_empty() && (d.trailing.len() >= 8 || !all_zero(d.trailing)) {
            self.at(
                raw,
                "debug-info2-size",
                format!(
                    "total_size {} is {} bytes more than the sum of its parts",
                    raw.total_size(),
                    d.trailing.len()
                ),
            );
        }
        let pending = Di2Pending {
            max_range_end: max_end,
            max_line_offset: max_line,
        };
        hold(
            &mut self.findings,
            &mut self.pending_di2,
            "SAMPLY_JIT_CODE_DEBUG_INFO2",
            raw,
            pending,
        );
    }
}
