/* A tiny JIT: copies x86-64 machine code into PROT_EXEC pages, reports each function through
 * the drop-in API, then calls them in a loop (for the perf end-to-end test). */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include "profkit_jitprofiling.h"

/* mov ecx, N ; 1: dec ecx ; jnz 1b ; ret */
static const unsigned char spin[] = {0xb9, 0x00, 0x00, 0x00, 0x00, 0xff, 0xc9, 0x75, 0xfc, 0xc3};

int main(void) {
    const char *names[3] = {"jitfn_alpha", "jitfn_beta", "jitfn_gamma"};
    const unsigned counts[3] = {3000000, 2000000, 1000000};
    void (*fns[3])(void);
    unsigned char *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) return 2;
    for (int i = 0; i < 3; i++) {
        unsigned char *f = mem + i * 64;
        memcpy(f, spin, sizeof spin);
        memcpy(f + 1, &counts[i], 4);
        fns[i] = (void (*)(void))f;
    }
    if (mprotect(mem, 4096, PROT_READ | PROT_EXEC) != 0) return 3;
    for (int i = 0; i < 3; i++) {
        LineNumberInfo lines[2] = {{5, 1}, {sizeof spin, 2}};
        iJIT_Method_Load m = {0};
        m.method_id = iJIT_GetNewMethodID();
        m.method_name = (char *)names[i];
        m.method_load_address = (void *)fns[i];
        m.method_size = sizeof spin;
        m.line_number_size = 2;
        m.line_number_table = lines;
        m.source_file_name = "jitloop.js";
        if (iJIT_NotifyEvent(iJVM_EVENT_TYPE_METHOD_LOAD_FINISHED, &m) != 1) return 4;
    }
    iJIT_NotifyEvent(iJVM_EVENT_TYPE_SHUTDOWN, NULL);
    for (int r = 0; r < 300; r++)
        for (int i = 0; i < 3; i++) fns[i]();
    puts("done");
    return 0;
}
