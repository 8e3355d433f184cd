/* fork: the parent and the child each report one method; each must land in its own dump. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include "profkit_jitprofiling.h"

static unsigned char code_parent[16] = {0xc3}, code_before[16] = {0x90, 0xc3}, code_child[16] = {0xcc};

static int report(const char *name, unsigned char *code) {
    iJIT_Method_Load m = {0};
    m.method_id = iJIT_GetNewMethodID();
    m.method_name = (char *)name;
    m.method_load_address = code;
    m.method_size = 16;
    return iJIT_NotifyEvent(iJVM_EVENT_TYPE_METHOD_LOAD_FINISHED, &m);
}

int main(void) {
    if (report("before_fork", code_before) != 1) return 2;  /* still pending at fork time */
    pid_t pid = fork();
    if (pid == 0) {
        if (report("in_child", code_child) != 1) _exit(3);
        return 0; /* exit handlers flush the child's own dump */
    }
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) return 4;
    if (report("in_parent", code_parent) != 1) return 5;
    printf("%d\n", (int)pid);
    return 0;
}
