//! JIT code in the Firefox profile, built when the stream ends: one `JIT` library per process
//! (several when the code spans more than 2 GiB) with a symbol table of every code region and a
//! mapping over the code's range, and a `JIT code` marker per load or move whose stack is the
//! code's address.

use super::*;

impl<W: Write + Send> FirefoxSink<W> {
    /// Builds the JIT libraries and the code markers.
    pub(super) fn finish_code(&mut self) -> io::Result<()> {
        let code = std::mem::take(&mut self.code);
        if code.is_empty() {
            return Ok(());
        }
        let cats = self.cats.ok_or_else(not_begun)?;
        let mut by_pid: HashMap<u32, Vec<(u64, u64, String)>> = HashMap::default();
        for c in &code {
            by_pid
                .entry(c.pid)
                .or_default()
                .push((c.address, c.size.max(1), c.name.clone()));
        }
        let mut pids: Vec<u32> = by_pid.keys().copied().collect();
        pids.sort_unstable();
        for pid in pids {
            let Some(mut regions) = by_pid.remove(&pid) else {
                continue;
            };
            regions.sort();
            let process = self.process_handle(pid)?;
            // Group regions into libraries whose relative addresses fit in 31 bits: those from
            // `lines::SYNTHETIC_BASE` up are the sampled functions' lines.
            let mut groups: Vec<(u64, u64, Vec<Symbol>)> = Vec::new();
            for (addr, size, name) in regions {
                let end = addr.saturating_add(size);
                let fits = groups
                    .last()
                    .is_some_and(|(base, _, _)| end - base <= i32::MAX as u64);
                if !fits {
                    groups.push((addr, end, Vec::new()));
                }
                if let Some((base, gend, syms)) = groups.last_mut() {
                    *gend = (*gend).max(end);
                    syms.push(Symbol {
                        address: u32::try_from(addr - *base).unwrap_or(u32::MAX),
                        size: u32::try_from(size).ok(),
                        name,
                    });
                }
            }
            let p = self.profile.as_mut().ok_or_else(not_begun)?;
            for (i, (base, end, syms)) in groups.into_iter().enumerate() {
                let path = if i == 0 {
                    format!("jit-{pid}")
                } else {
                    format!("jit-{pid}-{i}")
                };
                let lib = p.add_lib(LibraryInfo {
                    name: "JIT".to_string(),
                    debug_name: "JIT".to_string(),
                    path: path.clone(),
                    debug_path: path,
                    debug_id: fx::debugid::DebugId::nil(),
                    code_id: None,
                    arch: None,
                    symbol_table: Some(Arc::new(SymbolTable::new(syms))),
                });
                p.add_lib_mapping(process, lib, base, end, 0);
            }
        }
        let layout = vec![
            ("name".to_string(), false),
            ("address".to_string(), false),
            ("size".to_string(), true),
            ("event".to_string(), false),
        ];
        let ty = self.marker_type("JIT code", layout)?;
        for c in code {
            let th = match c.thread.filter(|t| self.threads.contains_key(t)) {
                Some(t) => self.marker_thread(t)?,
                None => match self.code_threads.get(&c.pid) {
                    Some(h) => *h,
                    None => {
                        let h = self.new_fx_thread(c.pid, u64::from(c.pid), "JIT", false)?;
                        self.code_threads.insert(c.pid, h);
                        h
                    }
                },
            };
            let (category, flags) = match &c.tier {
                Some((name, color, js)) => (self.tier_category(name, *color)?, tier_flags(*js)),
                None => (cats.jit, FrameFlags::empty()),
            };
            let p = self.profile.as_mut().ok_or_else(not_begun)?;
            let marker = FxMarker {
                ty,
                name: p.intern_string("JIT code"),
                category,
                empty: p.intern_string(""),
                fields: vec![
                    FieldValue::Str(p.intern_string(&c.name)),
                    FieldValue::Str(p.intern_string(&format!("{:#x}", c.address))),
                    FieldValue::Num(c.size as f64),
                    FieldValue::Str(p.intern_string(if c.moved { "move" } else { "load" })),
                ],
            };
            let mh = p.add_marker(th, MarkerTiming::Instant(ts(c.time)), marker);
            let stack = p.intern_stack_frames(
                th,
                std::iter::once(FrameInfo {
                    frame: Frame::InstructionPointer(c.address),
                    category_pair: category.into(),
                    flags,
                }),
            );
            p.set_marker_stack(th, mh, stack);
        }
        Ok(())
    }
}
