//! Writer → reader round trips for every data version (1-17 but 7), every event the version
//! defines, and property tests of the delta encodings.

use profkit_mlpd::read::{CounterDesc, CounterValue, HeapRef, Root};
use profkit_mlpd::write::Writer;
use profkit_mlpd::{ClassRef, EventKind, File, Header, MetaAction, Metadata};
use proptest::prelude::*;

const VERSIONS: [u8; 16] = [1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17];

fn header(v: u8, ptrsize: u8) -> Header {
    let major = Header::major_for(v);
    Header {
        major,
        minor: 0,
        data_version: v,
        ptrsize,
        startup_ms: 1_700_000_000_000,
        startup_ns: if major >= 3 { 123_456 } else { 0 },
        timer_overhead: 22,
        pid: 4242,
        port: if v >= 4 { 5555 } else { 0 },
        args: if major >= 1 {
            "log:calls".into()
        } else {
            String::new()
        },
        arch: if major >= 1 {
            "x86-64".into()
        } else {
            String::new()
        },
        os: if major >= 1 {
            "linux".into()
        } else {
            String::new()
        },
        ..Header::default()
    }
}

fn meta(action: MetaAction, mtype: u8, ptr: u64) -> Metadata<'static> {
    Metadata {
        action,
        mtype,
        ptr,
        image: 0,
        domain: 0,
        class: 0,
        name: b"",
        mvid: b"",
    }
}

/// Writes every event of version `v`, returns the file.
fn everything(v: u8) -> Vec<u8> {
    let mut w = Writer::new(header(v, 8));
    let mut b = w.buffer(0x7f00_0000_1000, 1_000_000);
    let m1 = 0x5555_0000_1000u64;
    let m2 = 0x5555_0000_2000u64;
    let class = 0x6000_0000_0100u64;
    b.metadata(
        1_000_010,
        &Metadata {
            image: 0x6000_0000_0010,
            name: b"System.String",
            ..meta(MetaAction::Load, 1, class)
        },
    );
    b.metadata(
        1_000_020,
        &Metadata {
            name: b"mscorlib.dll",
            mvid: b"guid",
            ..meta(MetaAction::Load, 2, 0x6000_0000_0010)
        },
    );
    b.metadata(
        1_000_030,
        &Metadata {
            image: 0x6000_0000_0010,
            name: b"mscorlib",
            ..meta(MetaAction::Load, 3, 0x6000_0000_0020)
        },
    );
    b.metadata(
        1_000_040,
        &Metadata {
            name: b"Main",
            ..meta(MetaAction::Name, 5, 0x7f00_0000_1000)
        },
    );
    b.metadata(
        1_000_050,
        &Metadata {
            name: b"app",
            ..meta(MetaAction::Name, 4, 0)
        },
    );
    if v >= 11 {
        b.metadata(
            1_000_060,
            &Metadata {
                domain: 0,
                ..meta(MetaAction::Load, 6, 0x6000_0000_0030)
            },
        );
    }
    if v >= 15 {
        b.metadata(
            1_000_070,
            &Metadata {
                domain: 0,
                class,
                ..meta(MetaAction::Load, 7, 0x6000_0000_0040)
            },
        );
    }
    b.jit(1_000_080, m1, 0x4000_1000, 100, b"A:F ()");
    b.jit(999_000, m2, 0x4000_2000, 50, b"A:G ()"); // written late: a wrapped negative delta
    b.enter(1_000_100, m1);
    b.enter(1_000_110, m2);
    b.exc_leave(1_000_120, m2);
    b.leave(1_000_130, m1);
    let alloc_class = if v >= 15 { 0x6000_0000_0040 } else { class };
    b.alloc(1_000_140, alloc_class, 0x7000_0000_0008, 24, None);
    b.alloc(
        1_000_150,
        alloc_class,
        0x7000_0000_0040,
        32,
        Some(&[m1, m2]),
    );
    b.gc_event(1_000_160, 0, 1);
    b.gc_resize(1_000_170, 1 << 20);
    b.gc_move(1_000_180, &[0x7000_0000_0008, 0x7100_0000_0008]);
    b.gc_event(1_000_190, 5, 1);
    b.gc_handle_created(1_000_200, 2, 7, 0x7000_0000_0040, None);
    b.gc_handle_destroyed(1_000_210, 2, 7, None);
    if v >= 11 {
        b.gc_handle_created(1_000_220, 1, 8, 0x7000_0000_0040, Some(&[m1]));
        b.gc_handle_destroyed(1_000_230, 1, 8, Some(&[m2]));
    }
    if v >= 13 {
        b.gc_finalize(1_000_240, 0x80, 0);
        b.gc_finalize(1_000_250, 0xA0, 0x7000_0000_0040);
        b.gc_finalize(1_000_260, 0xB0, 0x7000_0000_0040);
        b.gc_finalize(1_000_270, 0x90, 0);
    }
    b.throw(1_000_280, 0x7000_0000_0080, Some(&[m2, m1]));
    b.throw(1_000_285, 0x7000_0000_0080, None);
    b.clause(1_000_290, 2, 0, m1, 0x7000_0000_0080);
    b.monitor(1_000_300, 1, 0x7000_0000_00c0, Some(&[m1]));
    b.monitor(1_000_310, 2, 0x7000_0000_00c0, None);
    b.monitor(1_000_320, 3, 0x7000_0000_00c0, None);
    b.heap_mark(1_000_330, false);
    b.heap_object(
        1_000_340,
        0x7000_0000_0040,
        alloc_class,
        32,
        1,
        &[(8, 0x7000_0000_0008), (16, 0x7000_0000_0080)],
    );
    if v >= 3 {
        b.heap_roots(
            1_000_350,
            3,
            &[Root {
                obj: 0x7000_0000_0040,
                root_type: 1,
                extra: 0,
                slot: if v >= 15 { 0x4000_9000 } else { 0 },
            }],
        );
    }
    b.heap_mark(1_000_360, true);
    if v >= 15 {
        b.root_register(1_000_370, 0x4000_9000, 64, 3, 0, b"statics");
        b.root_unregister(1_000_380, 0x4000_9000);
    }
    if v >= 4 {
        b.sample_hit(
            1_000_390,
            1,
            77,
            0x7f00_0000_1000,
            &[0x4000_1010],
            &[m1, m2],
        );
        b.usym(1_000_400, 0x4100_0000, 64, b"memcpy");
    }
    if (4..16).contains(&v) {
        b.ubin(1_000_410, 0x4100_0000, 0, 4096, b"libc.so");
    }
    if v >= 5 {
        b.counters_desc(
            1_000_420,
            &[
                CounterDesc {
                    section: 1 << 14,
                    section_name: b"",
                    name: b"User Time",
                    ctype: 3,
                    unit: if (13..=14).contains(&v) { 0 } else { 2 << 24 },
                    variance: 0,
                    index: 1,
                },
                CounterDesc {
                    section: 1 << 15,
                    section_name: b"Proc",
                    name: b"x",
                    ctype: 5,
                    unit: 0,
                    variance: 0,
                    index: 2,
                },
            ],
        );
        b.counters(
            1_000_430,
            12,
            &[
                (1, 3, CounterValue::Signed(-5)),
                (2, 5, CounterValue::Double(1.5)),
            ],
        );
    }
    if v >= 8 {
        b.jit_helper(1_000_440, 5, 0x4000_3000, 16, b"tramp");
        b.jit_helper(1_000_450, 6, 0x4000_4000, 16, b"");
    }
    if v >= 13 {
        b.sync_point(1_000_460, 1);
    }
    if v >= 16 {
        b.aot_id(1_000_470, b"aot-guid");
    }
    b.finish();
    w.into_bytes()
}

#[test]
fn every_version_round_trips() {
    for v in VERSIONS {
        let bytes = everything(v);
        let f = File::parse(&bytes).unwrap_or_else(|e| panic!("v{v}: {e}"));
        assert_eq!(
            f.header,
            Header {
                size: f.header.size,
                ..header(v, 8)
            },
            "v{v}"
        );
        let bufs: Vec<_> = f.buffers().collect::<Result<_, _>>().expect("buffers");
        assert_eq!(bufs.len(), 1);
        let evs: Vec<_> = bufs[0]
            .events()
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("v{v}: {e}"));
        let find = |pred: &dyn Fn(&EventKind) -> bool| {
            evs.iter()
                .find(|e| pred(&e.kind))
                .unwrap_or_else(|| panic!("v{v}: missing event"))
        };
        // method cursor, late JIT with a wrapped delta
        let jit = find(&|k| matches!(k, EventKind::Jit { name, .. } if *name == b"A:G ()"));
        assert_eq!(jit.time, 999_000, "v{v}");
        assert!(matches!(
            jit.kind,
            EventKind::Jit {
                method: 0x5555_0000_2000,
                code: 0x4000_2000,
                size: 50,
                ..
            }
        ));
        let calls: Vec<_> = evs
            .iter()
            .filter_map(|e| match e.kind {
                EventKind::Enter { method } => Some(("enter", method, e.time)),
                EventKind::Leave { method } => Some(("leave", method, e.time)),
                EventKind::ExcLeave { method } => Some(("exc", method, e.time)),
                _ => None,
            })
            .collect();
        assert_eq!(
            calls,
            vec![
                ("enter", 0x5555_0000_1000, 1_000_100),
                ("enter", 0x5555_0000_2000, 1_000_110),
                ("exc", 0x5555_0000_2000, 1_000_120),
                ("leave", 0x5555_0000_1000, 1_000_130),
            ],
            "v{v}"
        );
        // allocation with backtrace (absolute frames before v13, running cursor after)
        let a = find(&|k| matches!(k, EventKind::Alloc { size: 32, .. }));
        if let EventKind::Alloc {
            class,
            obj,
            backtrace,
            ..
        } = a.kind
        {
            let want = if v >= 15 {
                ClassRef::Vtable(0x6000_0000_0040)
            } else {
                ClassRef::Class(0x6000_0000_0100)
            };
            assert_eq!(class, want, "v{v}");
            assert_eq!(obj, 0x7000_0000_0040, "v{v}");
            assert_eq!(
                backtrace.collect::<Vec<_>>(),
                vec![0x5555_0000_1000, 0x5555_0000_2000],
                "v{v}"
            );
        }
        let mv = find(&|k| matches!(k, EventKind::GcMove { .. }));
        if let EventKind::GcMove { objects } = mv.kind {
            assert_eq!(
                objects.collect::<Vec<_>>(),
                vec![0x7000_0000_0008, 0x7100_0000_0008]
            );
        }
        let t = find(&|k| matches!(k, EventKind::Throw { backtrace, .. } if !backtrace.is_empty()));
        if let EventKind::Throw { obj, backtrace } = t.kind {
            assert_eq!(obj, 0x7000_0000_0080);
            assert_eq!(
                backtrace.collect::<Vec<_>>(),
                vec![0x5555_0000_2000, 0x5555_0000_1000],
                "v{v}"
            );
        }
        let c = find(&|k| matches!(k, EventKind::Clause { .. }));
        if let EventKind::Clause {
            clause_type,
            method,
            obj,
            ..
        } = c.kind
        {
            assert_eq!((clause_type, method), (2, 0x5555_0000_1000), "v{v}");
            assert_eq!(
                obj,
                if v >= 14 {
                    Some(0x7000_0000_0080)
                } else {
                    None
                }
            );
        }
        let mons: Vec<u8> = evs
            .iter()
            .filter_map(|e| match e.kind {
                EventKind::Monitor { event, obj, .. } => {
                    assert_eq!(obj, 0x7000_0000_00c0);
                    Some(event)
                }
                _ => None,
            })
            .collect();
        assert_eq!(mons, vec![1, 2, 3], "v{v}");
        let ho = find(&|k| matches!(k, EventKind::HeapObject { .. }));
        if let EventKind::HeapObject {
            obj,
            size,
            generation,
            refs,
            ..
        } = ho.kind
        {
            assert_eq!((obj, size), (0x7000_0000_0040, 32));
            assert_eq!(generation, if v >= 16 { Some(1) } else { None });
            let r: Vec<HeapRef> = refs.collect();
            let offs: Vec<u64> = r.iter().map(|x| x.offset).collect();
            assert_eq!(offs, if v >= 2 { vec![8, 16] } else { vec![0, 0] }, "v{v}");
            assert_eq!(r[1].obj, 0x7000_0000_0080);
        }
        if v >= 3 {
            let hr = find(&|k| matches!(k, EventKind::HeapRoots { .. }));
            if let EventKind::HeapRoots { roots, .. } = hr.kind {
                let r: Vec<Root> = roots.collect();
                assert_eq!(r.len(), 1);
                assert_eq!(r[0].obj, 0x7000_0000_0040);
            }
        }
        if v >= 4 {
            let s = find(&|k| matches!(k, EventKind::SampleHit { .. }));
            if let EventKind::SampleHit {
                ips,
                frames,
                thread,
                ..
            } = s.kind
            {
                assert_eq!(ips.collect::<Vec<_>>(), vec![0x4000_1010]);
                let want: Vec<u64> = if v >= 6 {
                    vec![0x5555_0000_1000, 0x5555_0000_2000]
                } else {
                    vec![]
                };
                assert_eq!(frames.collect::<Vec<_>>(), want, "v{v}");
                assert_eq!(thread, if v >= 11 { 0x7f00_0000_1000 } else { 0 });
            }
        }
        if v >= 5 {
            let d = find(&|k| matches!(k, EventKind::CountersDesc { .. }));
            if let EventKind::CountersDesc { descs } = d.kind {
                let d: Vec<_> = descs.collect();
                assert_eq!(d.len(), 2);
                assert_eq!(d[1].section_name, b"Proc");
            }
            let c = find(&|k| matches!(k, EventKind::Counters { .. }));
            if let EventKind::Counters { values, .. } = c.kind {
                let vals: Vec<_> = values.collect();
                assert_eq!(
                    vals,
                    vec![
                        (1, 3, CounterValue::Signed(-5)),
                        (2, 5, CounterValue::Double(1.5))
                    ]
                );
            }
        }
        if v >= 8 {
            let h = find(&|k| matches!(k, EventKind::JitHelper { htype: 5, .. }));
            assert!(matches!(h.kind, EventKind::JitHelper { name, .. } if name == b"tramp"));
        }
        if v >= 13 {
            find(&|k| matches!(k, EventKind::SyncPoint { kind: 1 }));
        }
        if v >= 16 {
            find(&|k| matches!(k, EventKind::AotId { id } if *id == b"aot-guid"));
            let img = find(&|k| matches!(k, EventKind::Metadata(m) if m.mtype == 2));
            assert!(matches!(img.kind, EventKind::Metadata(m) if m.mvid == b"guid"));
        }
        if v >= 15 {
            let vt = find(&|k| matches!(k, EventKind::Metadata(m) if m.mtype == 7));
            assert!(matches!(vt.kind, EventKind::Metadata(m) if m.class == 0x6000_0000_0100));
        }
        let th = find(&|k| matches!(k, EventKind::Metadata(m) if m.mtype == 5));
        assert!(matches!(th.kind, EventKind::Metadata(m) if m.name == b"Main"));
    }
}

#[test]
fn four_byte_pointers_are_masked() {
    let mut w = Writer::new(header(17, 4));
    let mut b = w.buffer(1, 0);
    b.enter(1, 0x8000_0000);
    b.enter(2, 0x7fff_fff0);
    b.finish();
    let bytes = w.into_bytes();
    let f = File::parse(&bytes).expect("header");
    let buf = f.buffers().next().expect("buffer").expect("ok");
    let m: Vec<u64> = buf
        .events()
        .map(|e| match e.expect("event").kind {
            EventKind::Enter { method } => method,
            _ => 0,
        })
        .collect();
    assert_eq!(m, vec![0x8000_0000, 0x7fff_fff0]);
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Enter(u64, u64),
    Leave(u64, u64),
    Alloc(u64, u64, u64, u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (any::<u64>(), 0x1000u64..0xffff_ffff_ffff).prop_map(|(t, m)| Op::Enter(t, m)),
        (any::<u64>(), 0x1000u64..0xffff_ffff_ffff).prop_map(|(t, m)| Op::Leave(t, m)),
        (any::<u64>(), any::<u64>(), any::<u64>(), any::<u64>())
            .prop_map(|(t, c, o, s)| Op::Alloc(t, c, o & !7, s)),
    ]
}

proptest! {
    #[test]
    fn random_events_round_trip(v in prop::sample::select(VERSIONS.to_vec()), ops in prop::collection::vec(op(), 0..60), base in any::<u64>()) {
        let mut w = Writer::new(header(v, 8));
        let mut b = w.buffer(9, base);
        for o in &ops {
            match *o {
                Op::Enter(t, m) => b.enter(t, m),
                Op::Leave(t, m) => b.leave(t, m),
                Op::Alloc(t, c, ob, s) => b.alloc(t, c, ob, s, None),
            }
        }
        b.finish();
        let bytes = w.into_bytes();
        let f = File::parse(&bytes).expect("header");
        let evs: Vec<_> = f.buffers().flat_map(|b| b.expect("buffer").events().collect::<Vec<_>>()).collect::<Result<_, _>>().expect("events");
        prop_assert_eq!(evs.len(), ops.len());
        for (e, o) in evs.iter().zip(&ops) {
            match (*o, e.kind) {
                (Op::Enter(t, m), EventKind::Enter { method }) | (Op::Leave(t, m), EventKind::Leave { method }) => {
                    prop_assert_eq!((e.time, method), (t, m));
                }
                (Op::Alloc(t, c, ob, s), EventKind::Alloc { class, obj, size, .. }) => {
                    prop_assert_eq!(e.time, t);
                    let cl = match class { ClassRef::Class(x) | ClassRef::Vtable(x) => x };
                    prop_assert_eq!((cl, obj, size), (c, ob, s));
                }
                _ => prop_assert!(false, "kind mismatch {:?} {:?}", o, e.kind),
            }
        }
    }
}

proptest! {
    /// The decoder's fast paths (`next_call_fast`, `next_leave_here` and `next_alloc_fast`,
    /// which stop at what they do not read, then `next_call` and `next_alloc`) give the general
    /// decoder's events, with short and long deltas, up to the buffer's end; what a fast path
    /// does not take is left for the next one.
    #[test]
    fn fast_paths_decode_as_the_general_decoder(v in prop::sample::select(VERSIONS.to_vec()), ops in prop::collection::vec(op(), 0..60), base in any::<u64>(), near in 0u64..3, leaves_here in any::<bool>()) {
        let mut w = Writer::new(header(v, 8));
        let mut b = w.buffer(9, base);
        let mut t = base;
        // with `leaves_here`, every LEAVE is of the last method entered or left (a leaf call's)
        let mut last = 0;
        for o in &ops {
            // near times too (the short deltas of real files), not only random ones
            let time = |x: u64, t: &mut u64| {
                *t = if near > 0 { t.wrapping_add(x % (1 << (7 * near))) } else { x };
                *t
            };
            match *o {
                Op::Enter(x, m) => {
                    last = m;
                    b.enter(time(x, &mut t), m)
                }
                Op::Leave(x, m) => {
                    let m = if leaves_here && last != 0 { last } else { m };
                    last = m;
                    b.leave(time(x, &mut t), m)
                }
                Op::Alloc(x, c, ob, s) => b.alloc(time(x, &mut t), c, ob, s, None),
            }
        }
        b.finish();
        let bytes = w.into_bytes();
        let f = File::parse(&bytes).expect("header");
        let buf = f.buffers().next().expect("buffer").expect("ok");
        let general: Vec<_> = buf.events().collect::<Result<_, _>>().expect("events");
        let mut fast = buf.events();
        let mut cursor = buf.header.method_base;
        for e in &general {
            let before = fast.remaining();
            // the LEAVE of the method the cursor is at has a fast path of its own, which takes
            // nothing else (and such a LEAVE wherever the call fast path does)
            let mut probe = fast.clone();
            let here = matches!(e.kind, EventKind::Leave { method } if method == cursor);
            match probe.next_leave_here() {
                Some((size, time)) => {
                    prop_assert!(here);
                    prop_assert_eq!((size, time), (e.size, e.time));
                    prop_assert_eq!(before - probe.remaining(), e.size as usize);
                }
                None => {
                    prop_assert_eq!(probe.remaining(), before);
                    prop_assert!(!here || fast.clone().next_call_fast().is_none());
                }
            }
            if let EventKind::Enter { method } | EventKind::Leave { method } = e.kind {
                cursor = method;
            }
            let got = if let Some((byte, size, time, method)) = fast.next_call_fast() {
                (byte, size, time, method, None)
            } else if let Some((byte, size, time, method)) = fast.next_call() {
                (byte, size, time, method, None)
            } else if let Some((size, time, class, obj, n)) = fast.next_alloc_fast() {
                (profkit_mlpd::raw::event::ALLOC, size, time, 0, Some((class, obj, n)))
            } else if let Some((size, time, class, obj, n)) = fast.next_alloc() {
                (profkit_mlpd::raw::event::ALLOC, size, time, 0, Some((class, obj, n)))
            } else {
                prop_assert!(false, "no fast path took {:?}", e);
                unreachable!()
            };
            let want = match e.kind {
                EventKind::Enter { method } | EventKind::Leave { method } => (e.byte, e.size, e.time, method, None),
                EventKind::Alloc { class, obj, size, .. } => (e.byte, e.size, e.time, 0, Some((class, obj, size))),
                _ => unreachable!(),
            };
            prop_assert_eq!(got, want);
            prop_assert_eq!(before - fast.remaining(), e.size as usize);
        }
        prop_assert!(fast.next().is_none());
    }
}

/// Synthetic files for the versions no packaged Mono writes, committed in
/// `tests/fixtures/mlpd/synthetic/` (regenerate with `PROFKIT_BLESS=1`), plus a truncated one.
#[test]
fn synthetic_fixtures_are_current() {
    for v in [1u8, 4, 8, 11, 13, 14, 15, 16, 17] {
        profkit_testkit::golden(
            format!("tests/fixtures/mlpd/synthetic/v{v}.mlpd"),
            &everything(v),
        );
    }
    let cut = everything(17);
    profkit_testkit::golden(
        "tests/fixtures/mlpd/synthetic/v17_truncated.mlpd",
        &cut[..cut.len() - 7],
    );
}
