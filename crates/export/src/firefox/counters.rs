//! Counters in the Firefox profile: a counter track per counter of a process — except Mono's
//! ~240 performance counters, of which only a handful are tracks ([`MONO_COUNTER_TRACKS`]) and
//! the others `counter` markers on their process's busiest thread.

use super::*;

impl<W: Write + Send> FirefoxSink<W> {
    /// Writes the counters that are not tracks as `counter` markers (name: the counter's;
    /// fields: its value) on the busiest thread of their process, shown in the marker chart
    /// and table only.
    pub(super) fn finish_other_counters(
        &mut self,
        per_pid: &HashMap<u32, ThreadHandle>,
    ) -> io::Result<()> {
        let samples = std::mem::take(&mut self.other_counters);
        if samples.is_empty() {
            return Ok(());
        }
        let names = std::mem::take(&mut self.other_counter_names);
        let schema = RuntimeSchemaMarkerSchema {
            type_name: "counter".to_string(),
            description: Some("counter values (counters that are not tracks)".to_string()),
            locations: MarkerLocations::MARKER_CHART | MarkerLocations::MARKER_TABLE,
            chart_label: Some("{marker.data.value}".to_string()),
            tooltip_label: Some("{marker.name} = {marker.data.value}".to_string()),
            table_label: Some("{marker.name} = {marker.data.value}".to_string()),
            fields: vec![RuntimeSchemaMarkerField {
                key: "value".to_string(),
                label: "Value".to_string(),
                format: MarkerFieldFormat::Decimal,
                flags: MarkerFieldFlags::SEARCHABLE,
            }],
            graphs: Vec::new(),
        };
        let p = self.profile.as_mut().ok_or_else(not_begun)?;
        let ty = p.register_marker_type(schema);
        let mut threads: HashMap<u32, ThreadHandle> = per_pid.clone();
        for (pid, name, time, value) in samples {
            let th = match threads.get(&pid) {
                Some(h) => *h,
                None => {
                    let h = self.new_fx_thread(pid, u64::from(pid), "counters", false)?;
                    threads.insert(pid, h);
                    h
                }
            };
            let p = self.profile.as_mut().ok_or_else(not_begun)?;
            let name = names.get(name as usize).map_or("counter", String::as_str);
            let marker = FxMarker {
                ty,
                name: p.intern_string(name),
                category: CategoryHandle::OTHER,
                empty: p.intern_string(""),
                fields: vec![FieldValue::Num(value)],
            };
            p.add_marker(th, MarkerTiming::Instant(ts(time)), marker);
        }
        Ok(())
    }
}

/// Mono performance counters kept as counter tracks: the GC heap (from GC resizes), the
/// process's memory, allocations, JIT-compiled methods, GC collections. Mono writes some 240
/// counters; the others become `counter` markers (marker chart and table), so that the
/// threads stay at the top of the timeline.
pub(super) const MONO_COUNTER_TRACKS: [&str; 5] = [
    "GC heap size",
    "Working Set",
    "Event: GC allocations",
    "Methods JITted using mono JIT",
    "Major GC collections",
];

/// Whether counter `name` of an input of `format` is a counter track (else a marker).
pub(super) fn counter_is_track(format: &str, name: &str) -> bool {
    format != "mlpd" || MONO_COUNTER_TRACKS.contains(&name)
}
