/* 8 threads x 1000 events of every kind through the drop-in iJIT_* API (linked statically).
 * Prints a manifest of every LOAD the dump must contain: "L tid addr size t i kind name". */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#ifdef USE_INTEL_STUB
/* Intel's header and static stub (ittapi-sys); the stub's id counter is not atomic. */
#include "jitprofiling.h"
static unsigned id_counter = 0;
#define NEW_ID() __atomic_add_fetch(&id_counter, 1, __ATOMIC_RELAXED)
#else
#include "profkit_jitprofiling.h"
#define NEW_ID() iJIT_GetNewMethodID()
#endif

#define THREADS 8
#define ITERS 1000
#define SLOT 128

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static int failures = 0;

static void fill(unsigned char *p, unsigned n, int t, int i) {
    for (unsigned j = 0; j < n; j++) p[j] = (unsigned char)(t * 31 + i * 7 + j);
}

#define CHECK(expr, want) do { int r_ = (expr); if (r_ != (want)) { \
    pthread_mutex_lock(&out_lock); failures++; \
    fprintf(stderr, "line %d: %s returned %d, want %d\n", __LINE__, #expr, r_, want); \
    pthread_mutex_unlock(&out_lock); } } while (0)

static void *run(void *arg) {
    int t = (int)(long)arg;
    long tid = syscall(SYS_gettid);
    unsigned char *arena = calloc(ITERS, SLOT);
    char *log = malloc(ITERS * 160);
    size_t len = 0;
    char name[64], file[64];
    unsigned last_plain_id = 0;
    unsigned char *last_plain = NULL;
    unsigned last_plain_size = 0;
    int last_plain_i = 0;
    snprintf(file, sizeof file, "file_t%d.c", t);
    for (int i = 0; i < ITERS; i++) {
        unsigned char *code = arena + (size_t)i * SLOT;
        unsigned size = 24 + (unsigned)(i % 64);
        int kind = i % 8;
        fill(code, size, t, i);
        switch (kind) {
        case 0: {
            LineNumberInfo lines[3] = {{4, 10}, {12, 11}, {size, 12}};
            iJIT_Method_Load m = {0};
            m.method_id = NEW_ID();
            snprintf(name, sizeof name, "t%d_m%d", t, i);
            m.method_name = name; m.method_load_address = code; m.method_size = size;
            m.line_number_size = 3; m.line_number_table = lines;
            m.class_file_name = "Klass"; m.source_file_name = file;
            CHECK(iJIT_NotifyEvent(iJVM_EVENT_TYPE_METHOD_LOAD_FINISHED, &m), 1);
            len += sprintf(log + len, "L %ld %p %u %d %d 0 %s\n", tid, (void *)code, size, t, i, name);
            last_plain_id = m.method_id; last_plain = code; last_plain_size = size; last_plain_i = i;
            break;
        }
        case 1: { /* NULL name, NULL table with a count, NULL strings */
            iJIT_Method_Load_V2 m = {0};
            m.method_id = NEW_ID();
            m.method_load_address = code; m.method_size = size; m.line_number_size = 5;
            CHECK(iJIT_NotifyEvent(iJVM_EVENT_TYPE_METHOD_LOAD_FINISHED_V2, &m), 1);
            len += sprintf(log + len, "L %ld %p %u %d %d 1 jit_method_%u\n", tid, (void *)code, size, t, i, m.method_id);
            break;
        }
        case 2: { /* start-convention table, unsorted */
            LineNumberInfo lines[2] = {{8, 21}, {0, 20}};
            iJIT_Method_Load_V3 m = {0};
            m.method_id = NEW_ID();
            snprintf(name, sizeof name, "v3_t%d_m%d", t, i);
            m.method_name = name; m.method_load_address = code; m.method_size = size;
            m.line_number_size = 2; m.line_number_table = lines;
            m.source_file_name = file; m.module_name = "mod"; m.module_arch = iJIT_CA_64;
            CHECK(iJIT_NotifyEvent(iJVM_EVENT_TYPE_METHOD_LOAD_FINISHED_V3, &m), 1);
            len += sprintf(log + len, "L %ld %p %u %d %d 2 %s\n", tid, (void *)code, size, t, i, name);
            break;
        }
        case 3: { /* inline tree two levels deep, children reported before their parent */
            size = 64; fill(code, size, t, i);
            LineNumberInfo pl[3] = {{16, 100}, {40, 101}, {64, 102}};
            LineNumberInfo l1[2] = {{8, 200}, {32, 201}};
            LineNumberInfo l2[1] = {{8, 300}};
            iJIT_Method_Load p = {0};
            unsigned pid = NEW_ID(), i1 = NEW_ID(),
                     i2 = NEW_ID(), i3 = NEW_ID();
            snprintf(name, sizeof name, "p_t%d_m%d", t, i);
            p.method_id = pid; p.method_name = name; p.method_load_address = code;
            p.method_size = size; p.line_number_size = 3; p.line_number_table = pl;
            p.source_file_name = "p.c";
            CHECK(iJIT_NotifyEvent(iJVM_EVENT_TYPE_METHOD_LOAD_FINISHED, &p), 1);
            iJIT_Method_Inline_Load a = {0}, b = {0}, c = {0};
            b.method_id = i2; b.parent_method_id = i1; b.method_name = "inl2";
            b.method_load_address = code + 16; b.method_size = 8;
            b.line_number_size = 1; b.line_number_table = l2; b.source_file_name = "inl2.c";
            CHECK(iJIT_NotifyEvent(iJVM_EVENT_TYPE_METHOD_INLINE_LOAD_FINISHED, &b), 1);
            c.method_id = i3; c.parent_method_id = pid; /* NULL name and table */
            c.method_load_address = code + 48; c.method_size = 8; c.line_number_size = 2;
            CHECK(iJIT_NotifyEvent(iJVM_EVENT_TYPE_METHOD_INLINE_LOAD_FINISHED, &c), 1);
            a.method_id = i1; a.parent_method_id = pid; a.method_name = "inl1";
            a.method_load_address = code + 8; a.method_size = 32;
            a.line_number_size = 2; a.line_number_table = l1; a.source_file_name = "inl1.c";
            CHECK(iJIT_NotifyEvent(iJVM_EVENT_TYPE_METHOD_INLINE_LOAD_FINISHED, &a), 1);
            /* parent id 0 and id 0 are rejected */
            a.parent_method_id = 0;
            CHECK(iJIT_NotifyEvent(iJVM_EVENT_TYPE_METHOD_INLINE_LOAD_FINISHED, &a), 0);
            len += sprintf(log + len, "L %ld %p %u %d %d 3 %s jit_method_%u\n", tid, (void *)code, size, t, i, name, i3);
            break;
        }
        case 4: { /* unload of a method that never was, and of a real one */
            unsigned id = 0xfffffff0u;
            CHECK(iJIT_NotifyEvent(iJVM_EVENT_TYPE_METHOD_UNLOAD_START, &id), 1);
            break;
        }
        case 5: { /* update: the kind-0 method's code is rewritten in place */
            iJIT_Method_Load m = {0};
            fill(last_plain, last_plain_size, t, i);
            snprintf(name, sizeof name, "t%d_m%d", t, last_plain_i);
            m.method_id = last_plain_id; m.method_name = name; m.method_load_address = last_plain;
            m.method_size = last_plain_size;
            CHECK(iJIT_NotifyEvent(iJVM_EVENT_TYPE_METHOD_UPDATE, &m), 1);
            len += sprintf(log + len, "L %ld %p %u %d %d 5 t%d_m%d\n", tid, (void *)last_plain, last_plain_size, t, i, t, last_plain_i);
            CHECK(iJIT_NotifyEvent(iJVM_EVENT_TYPE_METHOD_UNLOAD_START, &last_plain_id), 1);
            break;
        }
        case 6: { /* id 0 and NULL payloads */
            iJIT_Method_Load m = {0};
            m.method_load_address = code; m.method_size = size; m.method_name = "zero";
            CHECK(iJIT_NotifyEvent(iJVM_EVENT_TYPE_METHOD_LOAD_FINISHED, &m), 0);
#ifndef USE_INTEL_STUB /* the stub dereferences these */
            CHECK(iJIT_NotifyEvent(iJVM_EVENT_TYPE_METHOD_LOAD_FINISHED, NULL), 0);
            CHECK(iJIT_NotifyEvent(iJVM_EVENT_TYPE_METHOD_INLINE_LOAD_FINISHED, NULL), 0);
#endif
            CHECK(iJIT_NotifyEvent(iJVM_EVENT_TYPE_METHOD_UNLOAD_START, NULL), 0);
            CHECK(iJIT_NotifyEvent((iJIT_JVM_EVENT)99, &m), 0);
            break;
        }
        case 7: {
            iJIT_Method_Update u = {code, 4, iJIT_CT_CODE, "raw"};
            CHECK(iJIT_NotifyEvent(iJVM_EVENT_TYPE_METHOD_UPDATE_V2, &u), 1);
            CHECK(iJIT_IsProfilingActive(), iJIT_SAMPLING_ON);
            break;
        }
        }
    }
#ifndef USE_INTEL_STUB
    FinalizeThread();
#endif
    pthread_mutex_lock(&out_lock);
    fwrite(log, 1, len, stdout);
    pthread_mutex_unlock(&out_lock);
    /* the arena stays allocated: the dump was written from it */
    free(log);
    return NULL;
}

int main(void) {
    pthread_t th[THREADS];
#ifndef USE_INTEL_STUB
    iJIT_RegisterCallbackEx(NULL, NULL);
#endif
    /* like real JITs: ask first, so no thread races the stub's collector load */
    CHECK(iJIT_IsProfilingActive(), iJIT_SAMPLING_ON);
    for (long t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, run, (void *)t);
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    CHECK(iJIT_NotifyEvent(iJVM_EVENT_TYPE_SHUTDOWN, NULL), 1);
    /* another engine keeps reporting after SHUTDOWN */
    static unsigned char late[32];
    iJIT_Method_Load m = {0};
    m.method_id = NEW_ID(); m.method_name = "after_shutdown";
    m.method_load_address = late; m.method_size = sizeof late;
    CHECK(iJIT_NotifyEvent(iJVM_EVENT_TYPE_METHOD_LOAD_FINISHED, &m), 1);
    printf("L %ld %p %u -1 -1 9 after_shutdown\n", (long)syscall(SYS_gettid), (void *)late, (unsigned)sizeof late);
    fflush(stdout);
    if (failures) { fprintf(stderr, "%d failures\n", failures); return 1; }
    return 0; /* the exit handler writes the pending load */
}
