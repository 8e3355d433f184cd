//! The one definition of "anonymous memory" in a mapping's recorded file name.
//!
//! perf records a file name for every mapping; for memory that no file backs (where JIT
//! runtimes put their code) it records one of a few conventional names. perf itself treats
//! these as anonymous and names their addresses from `/tmp/perf-<pid>.map`:
//!
//! * `//anon` — private anonymous memory (`mmap(MAP_ANONYMOUS)`);
//! * `/dev/zero`, `/dev/zero (deleted)` — *shared* anonymous memory (`MAP_SHARED|MAP_ANONYMOUS`
//!   is backed by a deleted `/dev/zero` inode: PHP's opcache JIT buffer lives there);
//! * `/anon_hugepage`, `/anon_hugepage (deleted)` — anonymous huge pages;
//! * `/SYSV00000000 (deleted)` — System V shared memory;
//! * `/memfd:NAME`, `/memfd:NAME (deleted)` — memfd mappings (Julia's and wasmtime's
//!   dual-mapped code, .NET's double mapping);
//! * `[anon:NAME]` — anonymous memory named with `PR_SET_VMA_ANON_NAME` (V8, Android);
//! * `anon_inode:NAME` — memory of an anonymous inode;
//! * the empty name.
//!
//! Every reader (perf.data events, the symbolizer, `info`'s counts, `validate`'s
//! `anon-exec-without-jitdump`, `inject`) asks [`is_anonymous_memory`], so they agree.

/// Whether a recorded mapping name (raw bytes as in an `MMAP`/`MMAP2` record) names
/// anonymous memory (see the [module docs](self)).
pub fn is_anonymous_memory(name: &[u8]) -> bool {
    const PREFIXES: &[&[u8]] = &[
        b"//anon",
        b"/dev/zero",
        b"/anon_hugepage",
        b"/SYSV",
        b"/memfd:",
        b"[anon:",
        b"[anon_shmem:",
        b"anon_inode:",
    ];
    name.is_empty() || PREFIXES.iter().any(|p| name.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perfs_names_and_their_deleted_forms() {
        for n in [
            "",
            "//anon",
            "/dev/zero",
            "/dev/zero (deleted)",
            "/anon_hugepage (deleted)",
            "/SYSV00000000 (deleted)",
            "/memfd:wasmtime-code (deleted)",
            "/memfd:doublemapper",
            "[anon:v8 code]",
            "anon_inode:[perf_event]",
        ] {
            assert!(is_anonymous_memory(n.as_bytes()), "{n:?}");
        }
        for n in [
            "/usr/lib/libc.so.6",
            "/tmp/a.out (deleted)",
            "[vdso]",
            "[heap]",
            "/dev/dri/card0",
            "/tmp/jit-12.dump",
        ] {
            assert!(!is_anonymous_memory(n.as_bytes()), "{n:?}");
        }
    }
}
