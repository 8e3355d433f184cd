//! The ITT path: an ELF object with DWARF (from `cc -c -g`) handed to
//! `__itt_module_load_with_sections` in-process, as LLVM does.

use std::ffi::CString;

use object::{Object, ObjectSection};
use profkit_jitapi::abi::{IttId, IttModuleObject, IttSectionInfo};

use crate::support::{crate_dir, read_dump};

#[test]
fn module_with_sections_gives_inline_trees() {
    let dir = tempfile::tempdir().unwrap();
    let obj_path = dir.path().join("itt_inline.o");
    let st = std::process::Command::new("cc")
        .args([
            "-c",
            "-g",
            "-O0",
            "-ffunction-sections",
            "-fno-asynchronous-unwind-tables",
            "-o",
        ])
        .arg(&obj_path)
        .arg(crate_dir().join("tests/c/itt_inline.c"))
        .status()
        .unwrap();
    assert!(st.success());
    let bytes = std::fs::read(&obj_path).unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    // "Load" each text section into its own buffer, as a JIT would.
    let mut names = Vec::new();
    let mut buffers: Vec<Vec<u8>> = Vec::new();
    for s in file.sections() {
        let name = s.name().unwrap();
        if name.starts_with(".text") && s.size() > 0 {
            names.push(CString::new(name).unwrap());
            buffers.push(s.data().unwrap().to_vec());
        }
    }
    let infos: Vec<IttSectionInfo> = names
        .iter()
        .zip(&buffers)
        .map(|(n, b)| IttSectionInfo {
            name: n.as_ptr(),
            section_type: 3,
            flags: 6,
            start_addr: b.as_ptr().cast(),
            size: b.len(),
            file_offset: 0,
        })
        .collect();
    let mut module = IttModuleObject {
        version: 1,
        module_id: IttId { d: [0; 3] },
        module_type: 1,
        module_name: c"md5".as_ptr(),
        module_buffer: bytes.as_ptr().cast(),
        module_size: bytes.len(),
        section_array: infos.as_ptr(),
        section_number: infos.len(),
    };
    // This test is the only one using the in-process collector.
    std::env::set_var("PROFKIT_JITDUMP_DIR", dir.path());
    // SAFETY: a valid module object whose buffers outlive the call.
    unsafe { profkit_jitapi::itt::__itt_module_load_with_sections(&mut module) };
    profkit_jitapi::collector::flush_all(false);
    let loads = read_dump(&dir.path().join(format!("jit-{}.dump", std::process::id())));
    let top = loads.iter().find(|l| l.name == "top").expect("top");
    let other = loads.iter().find(|l| l.name == "other").expect("other");
    let top_text = &buffers[names
        .iter()
        .position(|n| n.to_str().unwrap() == ".text.top")
        .unwrap()];
    assert_eq!(top.code_addr, top_text.as_ptr() as u64);
    assert_eq!(&top.code, top_text);
    assert!(other.di2.is_none(), "no inlines in other");
    assert!(!other.lines.is_empty());
    assert!(
        top.lines.iter().all(|l| l.2.ends_with("itt_inline.c")),
        "{:?}",
        top.lines
    );
    let d = top.di2.as_ref().expect("DEBUG_INFO2 for top");
    let fname =
        |i: u32| d.function_names[d.functions[i as usize].function_name_index as usize].as_str();
    assert_eq!(fname(0), "top");
    let calls: Vec<(u32, &str)> = d
        .inline_calls
        .iter()
        .map(|c| (c.depth, fname(c.function_index)))
        .collect();
    assert!(calls.contains(&(0, "mid")), "{calls:?}");
    assert!(calls.contains(&(1, "leaf")), "{calls:?}");
    let mid = d
        .inline_calls
        .iter()
        .find(|c| fname(c.function_index) == "mid")
        .unwrap();
    assert_eq!(mid.call_line_number, 12);
    let leaf = d
        .inline_calls
        .iter()
        .find(|c| fname(c.function_index) == "leaf")
        .unwrap();
    assert_eq!(leaf.call_line_number, 7);
    // Lines inside leaf's ranges point at leaf's body (line 4).
    assert!(d.lines.iter().any(|l| l.line_number == 4));
}
