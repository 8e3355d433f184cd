#![no_main]
//! Structure-aware: an `arbitrary` list of threads and events is written by profkit's own
//! writers as an XRay FDR or basic trace, a Mono log profiler file or a jitdump — inputs deep
//! in each format, where random bytes rarely get — then a few of its bytes are flipped, and
//! the result goes through the readers' checks and every writer
//! (`profkit_export::harness::check_convert`).

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use profkit_xray::write::{BasicTraceWriter, FdrTraceWriter, OwnedEvent};
use profkit_xray::{EventKind, FileHeader};

#[derive(Arbitrary, Debug)]
enum Input {
    XrayFdr {
        version: u8,
        threads: Vec<XThread>,
        flips: Vec<(u16, u8)>,
    },
    XrayBasic {
        threads: Vec<XThread>,
        flips: Vec<(u16, u8)>,
    },
    Mlpd {
        version: u8,
        buffers: Vec<MBuffer>,
        flips: Vec<(u16, u8)>,
    },
    Jitdump {
        loads: Vec<JLoad>,
        flips: Vec<(u16, u8)>,
    },
}

#[derive(Arbitrary, Debug)]
struct XThread {
    tid: u8,
    events: Vec<XEvent>,
}

#[derive(Arbitrary, Debug)]
enum XEvent {
    Enter(u8, u16),
    Exit(u8, u16),
    TailExit(u8, u16),
    EnterArg(u8, u16, Vec<u64>),
    Custom(u16, Vec<u8>),
    Jump(u64),
}

#[derive(Arbitrary, Debug)]
struct MBuffer {
    thread: u8,
    time_base: u32,
    events: Vec<MEvent>,
}

#[derive(Arbitrary, Debug)]
enum MEvent {
    Enter(u16, u8),
    Leave(u16, u8),
    ExcLeave(u16, u8),
    Jit(u16, u8, u16, Vec<u8>),
    Alloc(u16, u8, u32),
    Gc(u16, u8, u8),
    Throw(u16, u16),
    Monitor(u16, u8, u16),
}

#[derive(Arbitrary, Debug)]
struct JLoad {
    addr: u16,
    size: u8,
    dt: u16,
    name: String,
    moved_to: Option<u16>,
}

fn flip(mut bytes: Vec<u8>, flips: &[(u16, u8)]) -> Vec<u8> {
    for &(at, x) in flips.iter().take(8) {
        let n = bytes.len().max(1);
        if let Some(b) = bytes.get_mut(usize::from(at) % n) {
            *b ^= x;
        }
    }
    bytes
}

fn xray_events(t: &XThread) -> Vec<OwnedEvent> {
    let mut tsc = 1_000u64;
    let mut out = Vec::new();
    for e in t.events.iter().take(4096) {
        let mut ev = match e {
            XEvent::Enter(f, dt) => {
                tsc += u64::from(*dt);
                OwnedEvent::function(EventKind::Enter, u32::from(*f) + 1, tsc)
            }
            XEvent::Exit(f, dt) => {
                tsc += u64::from(*dt);
                OwnedEvent::function(EventKind::Exit, u32::from(*f) + 1, tsc)
            }
            XEvent::TailExit(f, dt) => {
                tsc += u64::from(*dt);
                OwnedEvent::function(EventKind::TailExit, u32::from(*f) + 1, tsc)
            }
            XEvent::EnterArg(f, dt, args) => {
                tsc += u64::from(*dt);
                let mut ev = OwnedEvent::function(EventKind::EnterArg, u32::from(*f) + 1, tsc);
                ev.args = args.iter().copied().take(6).collect();
                if ev.args.is_empty() {
                    ev.args.push(0);
                }
                ev
            }
            XEvent::Custom(dt, data) => {
                tsc += u64::from(*dt);
                let mut ev = OwnedEvent::function(EventKind::CustomEvent, 0, tsc);
                ev.data = data.iter().copied().take(256).collect();
                if ev.data.is_empty() {
                    ev.data.push(1);
                }
                ev
            }
            XEvent::Jump(to) => {
                tsc = tsc.wrapping_add(*to);
                continue;
            }
        };
        ev.tsc = tsc;
        out.push(ev);
    }
    out
}

fn xray(fdr: Option<u8>, threads: &[XThread]) -> Vec<u8> {
    match fdr {
        Some(v) => {
            let mut w = FdrTraceWriter::new(FileHeader::fdr(u16::from(v % 5) + 1));
            for t in threads.iter().take(8) {
                let _ = w.thread(7, u32::from(t.tid) + 1, &xray_events(t));
            }
            w.finish()
        }
        None => {
            let mut w = BasicTraceWriter::new(FileHeader::basic(3));
            for t in threads.iter().take(8) {
                let events: Vec<OwnedEvent> = xray_events(t)
                    .into_iter()
                    .filter(|e| e.kind != Some(EventKind::CustomEvent))
                    .collect();
                let _ = w.thread(7, u32::from(t.tid) + 1, &events);
            }
            w.finish()
        }
    }
}

fn mlpd(version: u8, buffers: &[MBuffer]) -> Vec<u8> {
    let v = [1u8, 12, 13, 14, 15, 16, 17][usize::from(version) % 7];
    let mut w = profkit_mlpd::write::Writer::new(profkit_mlpd::Header {
        major: profkit_mlpd::Header::major_for(v),
        data_version: v,
        ptrsize: 8,
        ..profkit_mlpd::Header::default()
    });
    for buf in buffers.iter().take(16) {
        let base = u64::from(buf.time_base);
        let mut t = base;
        let mut b = w.buffer(u64::from(buf.thread) + 1, base);
        let method = |m: u8| 0x5000 + u64::from(m) * 16;
        for e in buf.events.iter().take(1024) {
            match e {
                MEvent::Enter(dt, m) => {
                    t += u64::from(*dt);
                    b.enter(t, method(*m));
                }
                MEvent::Leave(dt, m) => {
                    t += u64::from(*dt);
                    b.leave(t, method(*m));
                }
                MEvent::ExcLeave(dt, m) => {
                    t += u64::from(*dt);
                    b.exc_leave(t, method(*m));
                }
                MEvent::Jit(dt, m, size, name) => {
                    t += u64::from(*dt);
                    let name: Vec<u8> = name.iter().copied().filter(|&c| c != 0).take(64).collect();
                    b.jit(
                        t,
                        method(*m),
                        0x7000 + u64::from(*m) * 64,
                        u64::from(*size),
                        &name,
                    );
                }
                MEvent::Alloc(dt, class, size) => {
                    t += u64::from(*dt);
                    b.alloc(
                        t,
                        0x9000 + u64::from(*class),
                        0x10_0000 + t,
                        u64::from(*size),
                        None,
                    );
                }
                MEvent::Gc(dt, event, generation) => {
                    t += u64::from(*dt);
                    b.gc_event(t, u64::from(*event % 10), u64::from(*generation % 3));
                }
                MEvent::Throw(dt, obj) => {
                    t += u64::from(*dt);
                    b.throw(t, 0x20_0000 + u64::from(*obj), None);
                }
                MEvent::Monitor(dt, ev, obj) => {
                    t += u64::from(*dt);
                    b.monitor(t, *ev % 3, 0x30_0000 + u64::from(*obj), None);
                }
            }
        }
        b.finish();
    }
    w.into_bytes()
}

fn jitdump(loads: &[JLoad]) -> Vec<u8> {
    use profkit_jitdump::write::{CodeLoadData, HeaderOptions, JitDumpWriter};
    let Ok(mut w) = JitDumpWriter::new(Vec::new(), &HeaderOptions::default()) else {
        return Vec::new();
    };
    let code = [0xc3u8; 256];
    let mut time = 1_000u64;
    for (i, l) in loads.iter().take(256).enumerate() {
        time += u64::from(l.dt);
        let addr = 0x40_0000 + u64::from(l.addr) * 16;
        let name: String = l.name.chars().filter(|&c| c != '\0').take(64).collect();
        let mut load = CodeLoadData::new(i as u64, addr, &code[..usize::from(l.size)], &name);
        load.timestamp = time;
        let _ = w.write_code_load(&load);
        if let Some(to) = l.moved_to {
            let m = profkit_jitdump::read::CodeMove {
                pid: load.pid,
                tid: 0,
                vma: 0x50_0000 + u64::from(to) * 16,
                old_code_addr: addr,
                new_code_addr: 0x50_0000 + u64::from(to) * 16,
                code_size: u64::from(l.size),
                code_index: i as u64,
            };
            let _ = w.write_code_move_record(time + 1, &m);
        }
    }
    w.into_inner()
}

fuzz_target!(|input: Input| {
    let bytes = match &input {
        Input::XrayFdr {
            version,
            threads,
            flips,
        } => flip(xray(Some(*version), threads), flips),
        Input::XrayBasic { threads, flips } => flip(xray(None, threads), flips),
        Input::Mlpd {
            version,
            buffers,
            flips,
        } => flip(mlpd(*version, buffers), flips),
        Input::Jitdump { loads, flips } => flip(jitdump(loads), flips),
    };
    // STRUCTURED_DUMP=FILE saves the bytes made (to keep a finding as a regression input of the
    // format's own target, which cargo test replays).
    if let Some(path) = std::env::var_os("STRUCTURED_DUMP") {
        let _ = std::fs::write(path, &bytes);
    }
    match &input {
        Input::XrayFdr { .. } | Input::XrayBasic { .. } => {
            profkit_xray::harness::check_read(&bytes)
        }
        _ => {}
    }
    profkit_export::harness::check_convert(&bytes);
});
