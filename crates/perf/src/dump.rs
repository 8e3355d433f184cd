//! `profkit dump`: one line per record, as text or NDJSON, in time order (the order the
//! model sees them; `perf script` order).
//!
//! Text: `HEADER …`, one `ATTR #i …` per attr, `FEATURE …` lines, then
//! `#<index> <time> <TYPE> …` per event. With [`DumpOptions::stacks`] a sample's callchain
//! frames follow on lines indented by four spaces.
//!
//! NDJSON: one object per line with the keys in alphabetical order: the header
//! (`"type":"HEADER"`), attrs (`"type":"ATTR"`), features (`"type":"FEATURE"`), then per event
//! `index`, `time`, `type` and its fields (`error` for a body that does not decode). Paths and
//! names are UTF-8 (invalid bytes replaced); addresses are numbers.

use std::io::{self, Write};

use profkit_common::json::{self, Object as Obj};

use crate::raw::{clock_name, feature_name, sample_type_names};
use crate::read::{Event, EventData, Events, Meta, Mode, PerfData};

pub use crate::read::Outcome as DumpOutcome;

/// How records are rendered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DumpOptions {
    /// NDJSON instead of text.
    pub json: bool,
    /// Also list each sample's callchain frames (and the user stack size).
    pub stacks: bool,
}

/// Renders `data`: header, attrs, features, then every event until the end, a cut or a
/// corrupt record (the outcome says which).
pub fn write(
    data: &PerfData<'_>,
    options: DumpOptions,
    out: &mut dyn Write,
) -> io::Result<DumpOutcome> {
    let events = data
        .events()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
    write_events(data.meta(), events, options, out)
}

/// [`write()`] for any event source (a stream's events too).
pub fn write_events<S: io::Read>(
    meta: &Meta,
    mut events: Events<S>,
    options: DumpOptions,
    out: &mut dyn Write,
) -> io::Result<DumpOutcome> {
    let mut buf = Vec::with_capacity(4096);
    header(&mut buf, meta, options);
    out.write_all(&buf)?;
    while let Some(ev) = events.next_event() {
        let Ok(ev) = ev else { break };
        buf.clear();
        if options.json {
            event_json(&mut buf, &ev, options);
        } else {
            event_text(&mut buf, &ev, options);
        }
        out.write_all(&buf)?;
    }
    Ok(events.outcome())
}

fn lossy(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

fn header(buf: &mut Vec<u8>, meta: &Meta, o: DumpOptions) {
    let h = &meta.header;
    let f = &meta.features;
    let features: Vec<String> = h
        .recorded_features()
        .into_iter()
        .map(feature_name)
        .collect();
    if o.json {
        let mut j = Obj::new(buf);
        j.num("attr_size", h.attr_size)
            .num("data_offset", h.data.offset)
            .num("data_size", h.data.size)
            .str("endian", h.endian.name());
        let b = j.key("features");
        b.push(b'[');
        for (i, n) in features.iter().enumerate() {
            if i > 0 {
                b.push(b',');
            }
            json::push_str(b, n);
        }
        b.push(b']');
        j.num("header_size", h.header_size)
            .str("mode", h.mode.name())
            .str("type", "HEADER");
        j.end_line();
        for a in &meta.attrs {
            let mut j = Obj::new(buf);
            j.opt("clockid", a.clockid)
                .str("event_type", &a.event_type)
                .bool("freq", a.freq)
                .nums("ids", a.ids.iter().copied())
                .num("index", a.index)
                .str("name", &a.display_name())
                .bool("sample_id_all", a.sample_id_all)
                .num("sample_period_or_freq", a.sample_period_or_freq)
                .num("sample_regs_user", a.sample_regs_user)
                .num("sample_stack_user", a.sample_stack_user)
                .num("sample_type", a.sample_type)
                .str("sample_type_names", &sample_type_names(a.sample_type))
                .str("type", "ATTR")
                .bool("use_clockid", a.use_clockid);
            j.end_line();
        }
        let strs = [
            ("HOSTNAME", &f.hostname),
            ("OSRELEASE", &f.os_release),
            ("VERSION", &f.perf_version),
            ("ARCH", &f.arch),
        ];
        for (name, v) in strs {
            if let Some(v) = v {
                let mut j = Obj::new(buf);
                j.str("feature", name)
                    .str("type", "FEATURE")
                    .str("value", v);
                j.end_line();
            }
        }
        if let Some(c) = &f.cmdline {
            let mut j = Obj::new(buf);
            j.str("feature", "CMDLINE").str("type", "FEATURE");
            let b = j.key("value");
            b.push(b'[');
            for (i, a) in c.iter().enumerate() {
                if i > 0 {
                    b.push(b',');
                }
                json::push_str(b, a);
            }
            b.push(b']');
            j.end_line();
        }
        if let Some(c) = f.clock_data {
            let mut j = Obj::new(buf);
            j.num("clockid", c.clockid)
                .num("clockid_time_ns", c.clockid_time_ns)
                .str("feature", "CLOCK_DATA")
                .str("type", "FEATURE")
                .num("wall_clock_ns", c.wall_clock_ns);
            j.end_line();
        }
        for b in &f.build_ids {
            let mut j = Obj::new(buf);
            j.str("build_id", &b.hex())
                .str("feature", "BUILD_ID")
                .bool("kernel", b.is_kernel())
                .str("path", &b.path)
                .num("pid", b.pid)
                .str("type", "FEATURE");
            j.end_line();
        }
        return;
    }
    let _ = write!(
        buf,
        "HEADER {}-mode {}-endian header_size {}",
        h.mode.name(),
        h.endian.name(),
        h.header_size
    );
    if h.mode == Mode::File {
        let _ = write!(
            buf,
            " attr_size {} attrs {:#x}+{} data {:#x}+{} features {}",
            h.attr_size,
            h.attrs.offset,
            h.attrs.size,
            h.data.offset,
            h.data.size,
            features.join(",")
        );
    }
    buf.push(b'\n');
    for a in &meta.attrs {
        let _ = writeln!(
            buf,
            "ATTR #{} {} type {} sample_type {} {} {} sample_id_all {} clock {} regs_user {:#x} stack_user {} ids {:?}",
            a.index,
            a.display_name(),
            a.event_type,
            sample_type_names(a.sample_type),
            if a.freq { "freq" } else { "period" },
            a.sample_period_or_freq,
            a.sample_id_all,
            a.clockid.map_or("perf".to_string(), |c| clock_name(c).to_string()),
            a.sample_regs_user,
            a.sample_stack_user,
            a.ids
        );
    }
    let strs = [
        ("HOSTNAME", &f.hostname),
        ("OSRELEASE", &f.os_release),
        ("VERSION", &f.perf_version),
        ("ARCH", &f.arch),
    ];
    for (name, v) in strs {
        if let Some(v) = v {
            let _ = writeln!(buf, "FEATURE {name} {v}");
        }
    }
    if let Some(c) = &f.cmdline {
        let _ = writeln!(buf, "FEATURE CMDLINE {}", c.join(" "));
    }
    if let Some(c) = f.clock_data {
        let _ = writeln!(
            buf,
            "FEATURE CLOCK_DATA {} {} ns = wall clock {} ns",
            clock_name(c.clockid),
            c.clockid_time_ns,
            c.wall_clock_ns
        );
    }
    for b in &f.build_ids {
        let _ = writeln!(buf, "FEATURE BUILD_ID pid {} {} {}", b.pid, b.hex(), b.path);
    }
}

fn event_text(buf: &mut Vec<u8>, ev: &Event<'_>, o: DumpOptions) {
    let time = ev.time.map_or("-".to_string(), |t| t.to_string());
    let _ = write!(
        buf,
        "#{:<7} {:>16} {:<14}",
        ev.index,
        time,
        ev.record_type.to_string()
    );
    match &ev.data {
        EventData::Sample(s) => {
            let _ = write!(
                buf,
                " attr {} pid {} tid {} cpu {} period {} ip {:#x} {:?}",
                s.attr_index,
                s.pid.unwrap_or(-1),
                s.tid.unwrap_or(-1),
                s.cpu.map_or("-".to_string(), |c| c.to_string()),
                s.period.unwrap_or(0),
                s.ip.unwrap_or(0),
                s.cpu_mode
            );
            if let Some(c) = &s.callchain {
                let (k, u) = c.frames().fold((0, 0), |(k, u), f| {
                    if f.context.is_kernel() {
                        (k + 1, u)
                    } else {
                        (k, u + 1)
                    }
                });
                let _ = write!(buf, " callchain {k} kernel + {u} user");
            }
            if let Some(r) = &s.user_regs {
                let _ = write!(buf, " regs abi {} n {}", r.abi, r.mask.count_ones());
            }
            if let Some(st) = &s.user_stack {
                let _ = write!(buf, " stack {}/{}", st.dyn_size, st.bytes.len());
            }
            buf.push(b'\n');
            if o.stacks {
                if let Some(c) = &s.callchain {
                    for f in c.frames() {
                        let _ = writeln!(buf, "    {:#018x} {:?}", f.addr, f.context);
                    }
                }
            }
        }
        EventData::Mmap(m) => {
            let _ = write!(
                buf,
                " pid {} tid {} {:#x}..{:#x} pgoff {:#x}",
                m.pid,
                m.tid,
                m.start,
                m.end(),
                m.pgoff
            );
            if let (Some(p), Some(f)) = (m.prot, m.flags) {
                let _ = write!(buf, " prot {p:#x} flags {f:#x}");
            }
            if let Some(b) = &m.build_id {
                let _ = write!(buf, " build_id ");
                for x in b.as_bytes() {
                    let _ = write!(buf, "{x:02x}");
                }
            }
            let _ = write!(
                buf,
                " {}{} ",
                if m.executable { "x" } else { "-" },
                if m.is_kernel() { "k" } else { "u" }
            );
            buf.extend_from_slice(m.path);
            buf.push(b'\n');
        }
        EventData::Comm(c) => {
            let _ = write!(
                buf,
                " pid {} tid {}{} ",
                c.pid,
                c.tid,
                if c.exec { " exec" } else { "" }
            );
            buf.extend_from_slice(c.name);
            buf.push(b'\n');
        }
        EventData::Fork(t) | EventData::Exit(t) => {
            let _ = writeln!(
                buf,
                " pid {} ppid {} tid {} ptid {}",
                t.pid, t.ppid, t.tid, t.ptid
            );
        }
        EventData::Lost(l) => {
            let _ = writeln!(buf, " count {}", l.count);
        }
        EventData::BuildId(b) => {
            let _ = writeln!(buf, " pid {} {} {}", b.pid, b.hex(), b.path);
        }
        EventData::Other => {
            let _ = writeln!(buf, " ({} body bytes)", ev.body.len());
        }
        EventData::Malformed(m) => {
            let _ = writeln!(buf, " MALFORMED: {m}");
        }
    }
}

fn event_json(buf: &mut Vec<u8>, ev: &Event<'_>, o: DumpOptions) {
    let ty = ev.record_type.to_string();
    let mut j = Obj::new(buf);
    match &ev.data {
        EventData::Sample(s) => {
            j.num("attr", s.attr_index);
            if let Some(c) = &s.callchain {
                if o.stacks {
                    j.nums("callchain", c.raw());
                } else {
                    j.num("callchain_len", c.len());
                }
            }
            j.opt("cpu", s.cpu)
                .str("cpu_mode", &format!("{:?}", s.cpu_mode))
                .num("index", ev.index)
                .opt("ip", s.ip)
                .opt("period", s.period)
                .opt("pid", s.pid);
            if let Some(r) = &s.user_regs {
                j.num("regs_abi", r.abi).num("regs_mask", r.mask);
            }
            if let Some(st) = &s.user_stack {
                j.num("stack_dyn_size", st.dyn_size)
                    .num("stack_size", st.bytes.len());
            }
            j.opt("tid", s.tid).opt("time", ev.time).str("type", &ty);
        }
        EventData::Mmap(m) => {
            if let Some(b) = &m.build_id {
                let hex: String = b.as_bytes().iter().map(|x| format!("{x:02x}")).collect();
                j.str("build_id", &hex);
            }
            j.bool("executable", m.executable)
                .opt("flags", m.flags)
                .num("index", ev.index)
                .bool("kernel", m.is_kernel())
                .num("len", m.len)
                .str("path", &lossy(m.path))
                .num("pgoff", m.pgoff)
                .num("pid", m.pid)
                .opt("prot", m.prot)
                .num("start", m.start)
                .num("tid", m.tid)
                .opt("time", ev.time)
                .str("type", &ty);
        }
        EventData::Comm(c) => {
            j.bool("exec", c.exec)
                .num("index", ev.index)
                .str("name", &lossy(c.name))
                .num("pid", c.pid)
                .num("tid", c.tid)
                .opt("time", ev.time)
                .str("type", &ty);
        }
        EventData::Fork(t) | EventData::Exit(t) => {
            j.num("index", ev.index)
                .num("pid", t.pid)
                .num("ppid", t.ppid)
                .num("ptid", t.ptid)
                .num("tid", t.tid)
                .opt("time", ev.time)
                .str("type", &ty);
        }
        EventData::Lost(l) => {
            j.num("count", l.count)
                .opt("id", l.id)
                .num("index", ev.index)
                .opt("time", ev.time)
                .str("type", &ty);
        }
        EventData::BuildId(b) => {
            j.str("build_id", &b.hex())
                .num("index", ev.index)
                .str("path", &b.path)
                .num("pid", b.pid)
                .opt("time", ev.time)
                .str("type", &ty);
        }
        EventData::Other => {
            j.num("body_size", ev.body.len())
                .num("index", ev.index)
                .opt("time", ev.time)
                .str("type", &ty);
        }
        EventData::Malformed(m) => {
            j.str("error", m)
                .num("index", ev.index)
                .opt("time", ev.time)
                .str("type", &ty);
        }
    }
    j.end_line();
}
