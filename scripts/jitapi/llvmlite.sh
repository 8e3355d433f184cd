#!/usr/bin/env bash
# llvmlite (PyPI wheel, MCJIT with Intel JIT events): the iJIT path
# (INTEL_JIT_BACKWARD_COMPATIBILITY=1 + INTEL_JIT_PROFILER64) and the ITT path
# (INTEL_LIBITTNOTIFY64). Prints the LOADs of each dump.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
LIB="$("$ROOT/scripts/jitapi/build.sh" | head -1)"
WORK="${WORK:-$(mktemp -d)}"
cd "$WORK"
python3 -m venv venv >/dev/null && ./venv/bin/pip -q install llvmlite
cat > jit.py <<'PY'
import llvmlite.binding as llvm
llvm.initialize_native_target(); llvm.initialize_native_asmprinter()
IR = r'''
define internal i32 @callee(i32 %x) !dbg !10 {
  %y = mul i32 %x, 3, !dbg !12
  ret i32 %y, !dbg !12
}
define i32 @square_plus(i32 %x) !dbg !13 {
  %s = mul i32 %x, %x, !dbg !14
  %c = call i32 @callee(i32 %s), !dbg !15
  %r = add i32 %c, 1, !dbg !16
  ret i32 %r, !dbg !16
}
!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!3, !4}
!0 = distinct !DICompileUnit(language: DW_LANG_C99, file: !1, producer: "hand", isOptimized: true, runtimeVersion: 0, emissionKind: FullDebug)
!1 = !DIFile(filename: "jit.c", directory: "/tmp")
!3 = !{i32 2, !"Dwarf Version", i32 4}
!4 = !{i32 2, !"Debug Info Version", i32 3}
!9 = !DISubroutineType(types: !{})
!10 = distinct !DISubprogram(name: "callee", scope: !1, file: !1, line: 1, type: !9, unit: !0, spFlags: DISPFlagDefinition | DISPFlagOptimized)
!12 = !DILocation(line: 2, scope: !10)
!13 = distinct !DISubprogram(name: "square_plus", scope: !1, file: !1, line: 4, type: !9, unit: !0, spFlags: DISPFlagDefinition | DISPFlagOptimized)
!14 = !DILocation(line: 5, scope: !13)
!15 = !DILocation(line: 6, scope: !13)
!16 = !DILocation(line: 7, scope: !13)
'''
mod = llvm.parse_assembly(IR); mod.verify()
tm = llvm.Target.from_default_triple().create_target_machine(opt=2)
pto = llvm.create_pipeline_tuning_options(2)
pb = llvm.create_pass_builder(tm, pto)
pb.getModulePassManager().run(mod, pb)   # inlines callee into square_plus
ee = llvm.create_mcjit_compiler(mod, tm)
ee.enable_jit_events()
ee.finalize_object()
print("square_plus at", hex(ee.get_function_address("square_plus")))
PY
mkdir -p ijit itt
INTEL_JIT_BACKWARD_COMPATIBILITY=1 INTEL_JIT_PROFILER64="$LIB" PROFKIT_JITDUMP_DIR="$WORK/ijit" ./venv/bin/python jit.py || true
INTEL_LIBITTNOTIFY64="$LIB" PROFKIT_JITDUMP_DIR="$WORK/itt" ./venv/bin/python jit.py || true
ls -l ijit itt
for d in ijit/jit-*.dump itt/jit-*.dump; do
  [ -f "$d" ] && { echo "== $d"; strings -n 6 "$d" | grep -E 'square_plus|callee|jit\.c' | sort | uniq -c; }
done
