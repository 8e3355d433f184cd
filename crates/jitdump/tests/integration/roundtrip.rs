//! write → read gives back what was written, for every record kind, in both byte orders.

use proptest::prelude::*;

use profkit_jitdump::read::{FunctionRecord, InlineCallRecord, LineRecord, Range};
use profkit_jitdump::write::{
    CodeLoadData, DebugInfo2Data, HeaderOptions, JitDumpWriter, Tier, Unwinding,
};
use profkit_jitdump::{validate, CodeMove, DebugEntry, Endian, JitDump, Record, RecordType};

/// A record's content with byte-order details (and borrowed data) taken out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sem {
    Load {
        pid: u32,
        tid: u32,
        vma: u64,
        code_addr: u64,
        code_size: u64,
        code: Option<Vec<u8>>,
        index: u64,
        name: Vec<u8>,
    },
    Move(CodeMove),
    Close,
    Debug {
        code_addr: u64,
        entries: Vec<(u64, u32, u32, Vec<u8>)>,
    },
    Di2(DebugInfo2Data),
    Tier {
        code_addr: u64,
        color: u32,
        flags: u32,
        name: Vec<u8>,
    },
    Unwind {
        eh: Vec<u8>,
        hdr: Vec<u8>,
        mapped: u64,
    },
    Embedded {
        path: Vec<u8>,
        content: Vec<u8>,
    },
    Raw {
        id: u32,
        body: Vec<u8>,
    },
}

pub fn sem(r: &Record<'_>) -> Sem {
    match r {
        Record::CodeLoad(l) => Sem::Load {
            pid: l.pid,
            tid: l.tid,
            vma: l.vma,
            code_addr: l.code_addr,
            code_size: l.code_size,
            code: l.code.map(<[u8]>::to_vec),
            index: l.code_index,
            name: l.name.to_vec(),
        },
        Record::CodeMove(m) => Sem::Move(*m),
        Record::CodeClose => Sem::Close,
        Record::DebugInfo(d) => Sem::Debug {
            code_addr: d.code_addr,
            entries: d
                .entries()
                .map(|e| (e.addr, e.line, e.discrim, e.file.to_vec()))
                .collect(),
        },
        Record::DebugInfo2(d) => Sem::Di2(DebugInfo2Data::from_record(d)),
        Record::JitTier(t) => Sem::Tier {
            code_addr: t.code_addr,
            color: t.color,
            flags: t.flags,
            name: t.name.to_vec(),
        },
        Record::UnwindingInfo(u) => Sem::Unwind {
            eh: u.eh_frame().to_vec(),
            hdr: u.eh_frame_hdr().to_vec(),
            mapped: u.mapped_size,
        },
        Record::EmbeddedSourceFile(s) => Sem::Embedded {
            path: s.path.to_vec(),
            content: s.content.to_vec(),
        },
        Record::Unknown(raw) => Sem::Raw {
            id: raw.record_type.0,
            body: raw.body.to_vec(),
        },
        _ => unreachable!("every Record kind is covered"),
    }
}

pub fn assert_same_record(a: &Record<'_>, b: &Record<'_>) {
    assert_eq!(sem(a), sem(b));
}

#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)]
enum Gen {
    Load {
        ts: u64,
        pid: u32,
        tid: u32,
        vma: u64,
        addr: u64,
        code: Option<Vec<u8>>,
        absent_size: u64,
        index: u64,
        name: String,
        debug: Option<Vec<(u64, u32, u32, String)>>,
        di2: Option<DebugInfo2Data>,
        tier: Option<(u32, u32, String)>,
        unwind: Option<(Vec<u8>, Vec<u8>, u64)>,
    },
    Move(u64, CodeMove),
    Close(u64),
    Embedded(u64, String, Vec<u8>),
    Raw(u64, u32, Vec<u8>),
}

fn text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9_:./ <>~*^é]{0,24}"
}

fn di2() -> impl Strategy<Value = DebugInfo2Data> {
    (
        prop::collection::vec(text(), 0..4),
        prop::collection::vec(text(), 0..4),
        prop::collection::vec(any::<[u32; 5]>(), 0..4),
        prop::collection::vec(any::<[u32; 5]>(), 0..4),
        prop::collection::vec(any::<[u32; 2]>(), 0..5),
        prop::collection::vec(any::<[u32; 4]>(), 0..6),
    )
        .prop_map(|(files, function_names, f, c, r, l)| DebugInfo2Data {
            files,
            function_names,
            functions: f
                .into_iter()
                .map(|[a, b, c, d, e]| FunctionRecord {
                    function_name_index: a,
                    file_index: b,
                    start_line: c,
                    start_column: d,
                    flags: e,
                })
                .collect(),
            inline_calls: c
                .into_iter()
                .map(|[a, b, c, d, e]| InlineCallRecord {
                    depth: a,
                    range_count: b,
                    function_index: c,
                    call_line_number: d,
                    call_column_number: e,
                })
                .collect(),
            ranges: r
                .into_iter()
                .map(|[a, b]| Range {
                    start_offset: a,
                    size: b,
                })
                .collect(),
            lines: l
                .into_iter()
                .map(|[a, b, c, d]| LineRecord {
                    code_offset: a,
                    file_index: b,
                    line_number: c,
                    column_number: d,
                })
                .collect(),
        })
}

fn gen() -> impl Strategy<Value = Gen> {
    let load = (
        (
            any::<u64>(),
            any::<u32>(),
            any::<u32>(),
            any::<u64>(),
            any::<u64>(),
        ),
        (
            prop::option::of(prop::collection::vec(any::<u8>(), 0..64)),
            1..u64::MAX,
            any::<u64>(),
            text(),
        ),
        prop::option::of(prop::collection::vec(
            (any::<u64>(), any::<u32>(), any::<u32>(), text()),
            0..5,
        )),
        prop::option::of(di2()),
        prop::option::of((0..14u32, 0..2u32, text())),
        prop::option::of((
            prop::collection::vec(any::<u8>(), 0..40),
            prop::collection::vec(any::<u8>(), 0..24),
            any::<u64>(),
        )),
    )
        .prop_map(
            |(
                (ts, pid, tid, vma, addr),
                (code, absent_size, index, name),
                debug,
                di2,
                tier,
                unwind,
            )| Gen::Load {
                ts,
                pid,
                tid,
                vma,
                addr,
                code,
                absent_size,
                index,
                name,
                debug,
                di2,
                tier,
                unwind,
            },
        );
    prop_oneof![
        4 => load,
        1 => (any::<u64>(), any::<[u64; 5]>(), any::<[u32; 2]>()).prop_map(|(ts, v, p)| Gen::Move(
            ts,
            CodeMove { pid: p[0], tid: p[1], vma: v[0], old_code_addr: v[1], new_code_addr: v[2], code_size: v[3], code_index: v[4] }
        )),
        1 => any::<u64>().prop_map(Gen::Close),
        1 => (any::<u64>(), text(), prop::collection::vec(any::<u8>(), 0..100)).prop_map(|(t, p, c)| Gen::Embedded(t, p, c)),
        1 => (any::<u64>(), 5..0x3150_0000u32, prop::collection::vec(any::<u8>(), 0..50)).prop_map(|(t, id, b)| Gen::Raw(t, id, b)),
    ]
}

/// Writes `gens` and returns the bytes and the expected (timestamp, record) sequence.
fn write_all(endian: Endian, gens: &[Gen]) -> (Vec<u8>, Vec<(u64, Sem)>) {
    let header = HeaderOptions {
        endian,
        pid: 7,
        timestamp: 9,
        ..HeaderOptions::default()
    };
    let mut w = JitDumpWriter::new(Vec::new(), &header).unwrap();
    let mut expected = Vec::new();
    for g in gens {
        match g {
            Gen::Load {
                ts,
                pid,
                tid,
                vma,
                addr,
                code,
                absent_size,
                index,
                name,
                debug,
                di2,
                tier,
                unwind,
            } => {
                let entries: Option<Vec<DebugEntry<'_>>> = debug.as_ref().map(|d| {
                    d.iter()
                        .map(|(a, l, c, f)| DebugEntry {
                            addr: *a,
                            line: *l,
                            discrim: *c,
                            file: f.as_bytes(),
                        })
                        .collect()
                });
                let code_size = code.as_ref().map_or(*absent_size, |c| c.len() as u64);
                let load = CodeLoadData {
                    timestamp: *ts,
                    pid: *pid,
                    tid: *tid,
                    vma: *vma,
                    code_addr: *addr,
                    code_size,
                    code: code.as_deref(),
                    code_index: *index,
                    name: name.as_bytes(),
                    debug_info: entries.as_deref(),
                    debug_info2: di2.as_ref(),
                    tier: tier.as_ref().map(|(c, f, n)| Tier {
                        color: *c,
                        flags: *f,
                        name: n,
                    }),
                    unwinding: unwind.as_ref().map(|(e, h, m)| Unwinding {
                        eh_frame: e,
                        eh_frame_hdr: h,
                        mapped_size: *m,
                    }),
                };
                w.write_code_load(&load).unwrap();
                if let Some((c, f, n)) = tier {
                    expected.push((
                        *ts,
                        Sem::Tier {
                            code_addr: *addr,
                            color: *c,
                            flags: *f,
                            name: n.as_bytes().to_vec(),
                        },
                    ));
                }
                if let Some(d) = debug {
                    expected.push((
                        *ts,
                        Sem::Debug {
                            code_addr: *addr,
                            entries: d
                                .iter()
                                .map(|(a, l, c, f)| (*a, *l, *c, f.as_bytes().to_vec()))
                                .collect(),
                        },
                    ));
                }
                if let Some(d) = di2 {
                    expected.push((*ts, Sem::Di2(d.clone())));
                }
                if let Some((e, h, m)) = unwind {
                    expected.push((
                        *ts,
                        Sem::Unwind {
                            eh: e.clone(),
                            hdr: h.clone(),
                            mapped: *m,
                        },
                    ));
                }
                expected.push((
                    *ts,
                    Sem::Load {
                        pid: *pid,
                        tid: *tid,
                        vma: *vma,
                        code_addr: *addr,
                        code_size,
                        // An empty code with size 0 reads back as present and empty.
                        code: code.clone(),
                        index: *index,
                        name: name.as_bytes().to_vec(),
                    },
                ));
            }
            Gen::Move(ts, m) => {
                w.write_code_move_record(*ts, m).unwrap();
                expected.push((*ts, Sem::Move(*m)));
            }
            Gen::Close(ts) => {
                w.write_code_close_record(*ts).unwrap();
                expected.push((*ts, Sem::Close));
            }
            Gen::Embedded(ts, p, c) => {
                w.write_embedded_source_record(*ts, p, c).unwrap();
                expected.push((
                    *ts,
                    Sem::Embedded {
                        path: p.as_bytes().to_vec(),
                        content: c.clone(),
                    },
                ));
            }
            Gen::Raw(ts, id, body) => {
                let id = RecordType(*id);
                if id.is_known() {
                    continue;
                }
                w.write_raw_record(id, *ts, body).unwrap();
                expected.push((
                    *ts,
                    Sem::Raw {
                        id: id.0,
                        body: body.clone(),
                    },
                ));
            }
        }
    }
    (w.into_inner(), expected)
}

fn read_all(bytes: &[u8]) -> Vec<(u64, Sem)> {
    let dump = JitDump::parse(bytes).unwrap();
    let mut records = dump.records();
    let out: Vec<_> = (&mut records)
        .map(|r| {
            let r = r.unwrap();
            (r.timestamp, sem(&r.parse().unwrap()))
        })
        .collect();
    assert!(records.truncation().is_none());
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_record_kind_round_trips(gens in prop::collection::vec(gen(), 0..12), big in any::<bool>()) {
        let endian = if big { Endian::Big } else { Endian::Little };
        let (bytes, expected) = write_all(endian, &gens);
        prop_assert_eq!(read_all(&bytes), expected.clone());
        // Re-encoding into the other byte order and back is lossless.
        let dump = JitDump::parse(&bytes).unwrap();
        let other = if big { Endian::Little } else { Endian::Big };
        let mut w = JitDumpWriter::new(Vec::new(), &profkit_jitdump::convert::header_like(&dump, other)).unwrap();
        let stats = profkit_jitdump::convert::reencode(&dump, &mut w).unwrap();
        // Unknown records cannot be byte-swapped: they are skipped and counted.
        let unknown = expected.iter().filter(|(_, s)| matches!(s, Sem::Raw { .. })).count() as u64;
        prop_assert_eq!(stats.skipped, unknown);
        let swapped = w.into_inner();
        let known: Vec<_> = read_all(&bytes).into_iter().filter(|(_, s)| !matches!(s, Sem::Raw { .. })).collect();
        prop_assert_eq!(read_all(&swapped), known);
        // The validator never panics on what the writer produces.
        let _ = validate(&bytes);
    }
}

#[test]
fn empty_code_with_zero_size_reads_back_present() {
    let (bytes, _) = write_all(
        Endian::Little,
        &[Gen::Load {
            ts: 1,
            pid: 1,
            tid: 1,
            vma: 0,
            addr: 0,
            code: None,
            absent_size: 0,
            index: 0,
            name: "x".into(),
            debug: None,
            di2: None,
            tier: None,
            unwind: None,
        }],
    );
    let got = read_all(&bytes);
    assert!(matches!(&got[0].1, Sem::Load { code: Some(c), code_size: 0, .. } if c.is_empty()));
}

#[test]
fn writer_rejects_what_it_cannot_encode() {
    let mut w = JitDumpWriter::new(Vec::new(), &HeaderOptions::default()).unwrap();
    let code = [0u8; 4];
    let mut l = CodeLoadData::new(0, 0x1000, &code, "a\0b");
    assert!(w.write_code_load(&l).is_err(), "NUL in a name");
    l.name = b"ok";
    l.code_size = 5;
    assert!(w.write_code_load(&l).is_err(), "code_size != code.len()");
    assert!(w
        .write_jit_tier_record(
            0,
            0,
            &Tier {
                color: 0,
                flags: 0,
                name: "a\0"
            }
        )
        .is_err());
    assert!(w.write_embedded_source_record(0, "a\0", b"").is_err());
}
