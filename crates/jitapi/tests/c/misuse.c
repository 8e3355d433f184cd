/* misuse: a host that reports a 4 GiB method (argv[1] = "huge") or runs on a full disk
 * (argv[1] = "full": a file size limit of 0 makes every write fail, as ENOSPC would).
 * Prints the return value of each iJIT_NotifyEvent call (and, for "huge", its peak RSS on
 * stderr). */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include "profkit_jitprofiling.h"

static unsigned char code[16] = {0x90, 0xc3};

static int report(const char *name, void *addr, unsigned int size) {
    iJIT_Method_Load m = {0};
    m.method_id = iJIT_GetNewMethodID();
    m.method_name = (char *)name;
    m.method_load_address = addr;
    m.method_size = size;
    return iJIT_NotifyEvent(iJVM_EVENT_TYPE_METHOD_LOAD_FINISHED, &m);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "full") == 0) {
        struct rlimit r = {0, 0};
        signal(SIGXFSZ, SIG_IGN);
        if (setrlimit(RLIMIT_FSIZE, &r) != 0) return 2;
        printf("%d\n", report("on_a_full_disk", code, 16));
        printf("%d\n", report("still_full", code, 16));
    } else {
        /* 4 GiB of readable memory that is never touched (no RSS unless copied). */
        size_t len = 0xFFFFFFFFul;
        void *big = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (big == MAP_FAILED) return 3;
        printf("%d\n", report("huge", big, 0xFFFFFFFFu));
        printf("%d\n", report("after_huge", code, 16));
        struct rusage u;
        getrusage(RUSAGE_SELF, &u);
        fprintf(stderr, "rss_kb=%ld\n", u.ru_maxrss);
    }
    iJIT_NotifyEvent(iJVM_EVENT_TYPE_SHUTDOWN, NULL);
    return 0;
}
