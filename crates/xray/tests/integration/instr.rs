//! Instrumentation maps from synthetic objects, sled versions, YAML.

use object::write::{Object as WObject, Relocation, StandardSection, Symbol, SymbolSection};
use object::{
    Architecture, BinaryFormat, Endianness, RelocationEncoding, RelocationFlags, RelocationKind,
    SectionKind, SymbolFlags, SymbolKind, SymbolScope,
};

use profkit_xray::{Endian, InstrMap, Sled, SledKind};

fn entry64(address: u64, function: u64, kind: u8, version: u8) -> Vec<u8> {
    let mut e = Vec::new();
    e.extend_from_slice(&address.to_le_bytes());
    e.extend_from_slice(&function.to_le_bytes());
    e.extend_from_slice(&[kind, 1, version]);
    e.resize(32, 0);
    e
}

/// A relocatable object with two functions and version-0 sleds whose fields are relocations.
fn object_with_relocated_sleds(arch: Architecture) -> Vec<u8> {
    let mut obj = WObject::new(BinaryFormat::Elf, arch, Endianness::Little);
    let text = obj.section_id(StandardSection::Text);
    obj.append_section_data(text, &[0x90; 64], 16);
    let mut sym = |name: &[u8], value: u64| {
        obj.add_symbol(Symbol {
            name: name.to_vec(),
            value,
            size: 16,
            kind: SymbolKind::Text,
            scope: SymbolScope::Linkage,
            weak: false,
            section: SymbolSection::Section(text),
            flags: SymbolFlags::None,
        })
    };
    let f = sym(b"_Z1fv", 0);
    let g = sym(b"_ZN4core3fmt5write17h0123456789abcdefE", 32);
    let map = obj.add_section(Vec::new(), b"xray_instr_map".to_vec(), SectionKind::Data);
    let mut data = Vec::new();
    // (symbol, sled addend, kind)
    let sleds = [(f, 0u64, 0u8), (f, 10, 1), (g, 0, 0), (g, 8, 5), (g, 12, 2)];
    for (i, &(_, _, kind)) in sleds.iter().enumerate() {
        let _ = i;
        data.extend_from_slice(&entry64(0, 0, kind, 0));
    }
    obj.append_section_data(map, &data, 8);
    let flags = RelocationFlags::Generic {
        kind: RelocationKind::Absolute,
        encoding: RelocationEncoding::Generic,
        size: 64,
    };
    for (i, &(s, addend, _)) in sleds.iter().enumerate() {
        let off = (i * 32) as u64;
        obj.add_relocation(
            map,
            Relocation {
                offset: off,
                symbol: s,
                addend: addend as i64,
                flags,
            },
        )
        .unwrap();
        obj.add_relocation(
            map,
            Relocation {
                offset: off + 8,
                symbol: s,
                addend: 0,
                flags,
            },
        )
        .unwrap();
    }
    obj.write().unwrap()
}

#[test]
fn relocatable_x86_64_and_aarch64() {
    for arch in [Architecture::X86_64, Architecture::Aarch64] {
        let bytes = object_with_relocated_sleds(arch);
        let map = InstrMap::from_object(&bytes).unwrap();
        let got: Vec<(u64, u64, u8, u32)> = map
            .sleds
            .iter()
            .map(|s| (s.address, s.function, s.kind.0, s.func_id))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, 0, 0, 1),
                (10, 0, 1, 1),
                (32, 32, 0, 2),
                (40, 32, 5, 2),
                (44, 32, 2, 2)
            ],
            "{arch:?}"
        );
        assert_eq!(map.functions, vec![0, 32]);
        let sym = profkit_xray::Symbolizer::new(&bytes).unwrap();
        assert_eq!(sym.symbolize(0).name.as_deref(), Some("f()"));
        assert_eq!(sym.symbolize(32).name.as_deref(), Some("core::fmt::write"));
        assert_eq!(sym.symbolize(32).debug_string(), "<invalid>:0:0");
    }
}

#[test]
fn pc_relative_version_2() {
    let base = 0x1000u64;
    let mut data = Vec::new();
    // Entry 0 at 0x1000: sled 0x2000, function 0x2000.
    data.extend_from_slice(&entry64(0x1000, 0x2000 - (base + 8), 0, 2));
    // Entry 1 at 0x1020: sled 0x2010 (exit), function 0x2000; negative offsets wrap.
    let e1 = base + 32;
    data.extend_from_slice(&entry64(
        0x2010u64.wrapping_sub(e1),
        0x2000u64.wrapping_sub(e1 + 8),
        1,
        2,
    ));
    // Entry 2 at 0x1040: below the section: sled 0x800.
    let e2 = base + 64;
    data.extend_from_slice(&entry64(
        0x800u64.wrapping_sub(e2),
        0x800u64.wrapping_sub(e2 + 8),
        0,
        2,
    ));
    let map = InstrMap::from_section(&data, base, 8, Endian::Little).unwrap();
    let got: Vec<(u64, u64, u32)> = map
        .sleds
        .iter()
        .map(|s| (s.address, s.function, s.func_id))
        .collect();
    assert_eq!(
        got,
        vec![(0x2000, 0x2000, 1), (0x2010, 0x2000, 1), (0x800, 0x800, 2)]
    );
    assert_eq!(map.function_address(2), Some(0x800));
    assert_eq!(map.function_id(0x2000), Some(1));
    assert_eq!(map.function_address(0), None);
    assert_eq!(map.function_address(3), None);
}

#[test]
fn thirty_two_bit_entries() {
    let mut data = Vec::new();
    for (a, f, k) in [
        (0x100u32, 0x100u32, 0u8),
        (0x120, 0x100, 1),
        (0x200, 0x200, 3),
    ] {
        data.extend_from_slice(&a.to_le_bytes());
        data.extend_from_slice(&f.to_le_bytes());
        data.extend_from_slice(&[k, 0, 1, 0, 0, 0, 0, 0]);
    }
    let map = InstrMap::from_section(&data, 0, 4, Endian::Little).unwrap();
    assert_eq!(map.functions, vec![0x100, 0x200]);
    assert_eq!(map.sleds[2].kind, SledKind::LOG_ARGS_ENTER);
    assert!(InstrMap::from_section(&data[..40], 0, 4, Endian::Little).is_err());
}

#[test]
fn yaml_round_trip_and_quoting() {
    let sleds = vec![
        Sled {
            address: 0x10,
            function: 0x10,
            kind: SledKind::ENTRY,
            always_instrument: true,
            version: 2,
            func_id: 0,
        },
        Sled {
            address: 0x1A,
            function: 0x10,
            kind: SledKind::TYPED_EVENT,
            always_instrument: false,
            version: 2,
            func_id: 0,
        },
        Sled {
            address: 0x30,
            function: 0x30,
            kind: SledKind(9),
            always_instrument: false,
            version: 0,
            func_id: 0,
        },
    ];
    let map = InstrMap::from_sleds(sleds);
    let names = ["fib(int)", "it's", "main"];
    let mut i = 0;
    let text = map.to_yaml(|_| {
        i += 1;
        names[(i - 1) % 3].to_string()
    });
    assert!(text.contains("function-name: 'fib(int)'"));
    assert!(text.contains("function-name: 'it''s'"));
    assert!(text.contains("function-name: main,"));
    let (back, got_names) = InstrMap::from_yaml(&text).unwrap();
    assert_eq!(back.sleds, map.sleds);
    assert_eq!(back.functions, map.functions);
    assert_eq!(got_names, names);
    assert!(InstrMap::from_yaml("- { id: 1 }").is_err());
    assert!(InstrMap::from_yaml("- { id: 1, address: zz").is_err());
}

#[test]
fn yaml_scalars_like_llvm() {
    use profkit_xray::yaml::scalar;
    assert_eq!(scalar(""), "''");
    assert_eq!(scalar("3"), "'3'");
    assert_eq!(scalar("custom-event-0"), "custom-event-0");
    assert_eq!(scalar("true"), "'true'");
    assert_eq!(scalar("a/b"), "'a/b'");
    assert_eq!(scalar("x\u{1}"), "\"x\\x01\"");
    assert_eq!(scalar("-x"), "'-x'");
}

#[test]
fn not_an_object_or_no_map() {
    assert!(InstrMap::from_object(b"not an elf").is_err());
    let obj = WObject::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little)
        .write()
        .unwrap();
    let e = InstrMap::from_object(&obj).unwrap_err();
    assert!(e.to_string().contains("xray_instr_map"));
}

/// llvm-symbolizer's file for a symbol without line information: the `STT_FILE` symbol before a
/// local symbol, unless that name is empty (a linker writes an empty one before the symbols it
/// made local, such as hidden-visibility functions: brotli's `BrotliFree` in an executable);
/// then, as for a global symbol, `<invalid>`.
#[test]
fn debug_column_file_symbols() {
    let mut obj = WObject::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
    let text = obj.section_id(StandardSection::Text);
    obj.append_section_data(text, &[0x90; 48], 16);
    let func = |obj: &mut WObject, name: &[u8], value: u64, scope: SymbolScope| {
        obj.add_symbol(Symbol {
            name: name.to_vec(),
            value,
            size: 16,
            kind: SymbolKind::Text,
            scope,
            weak: false,
            section: SymbolSection::Section(text),
            flags: SymbolFlags::None,
        });
    };
    obj.add_file_symbol(b"a.c".to_vec());
    func(&mut obj, b"a_static", 0, SymbolScope::Compilation);
    obj.add_file_symbol(Vec::new());
    func(&mut obj, b"hidden_fn", 16, SymbolScope::Compilation);
    func(&mut obj, b"global_fn", 32, SymbolScope::Linkage);
    let bytes = obj.write().unwrap();
    let sym = profkit_xray::Symbolizer::new(&bytes).unwrap();
    let got: Vec<String> = [0, 16, 32]
        .iter()
        .map(|&a| {
            let i = sym.symbolize(a);
            format!("{}: {}", i.debug_string(), i.display_name(a))
        })
        .collect();
    assert_eq!(
        got,
        [
            "a.c:0:0: a_static",
            "<invalid>:0:0: hidden_fn",
            "<invalid>:0:0: global_fn"
        ]
    );
}
