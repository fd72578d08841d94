/* SPDX-License-Identifier: Apache-2.0 */
/* test_ipc_extent.c - a pointer opened from an IPC memory handle reaches the
 * exported allocation only, not the exporter's segment around it (issue 41
 * item 1, docs/bounds.md's IPC row).
 *
 * The CPU backend cannot share memory between processes (malloc'ed), so this
 * runs on the fake cuda plugin built with FAKE_IPC (tests/plugins/
 * fake_cuda.c: a memfd per device segment, mapped by the other process). The
 * parent allocates two neighbouring small allocations A and B - one caching
 * allocator segment, so one mapping in the child - fills them, exports both
 * and execs itself as the child. The child opens both handles, and:
 *   - memset / memcpy of A's size + 1 through A's pointer, and of B's size + 1
 *     through B's, are XDEV_ERROR_INVALID_VALUE naming the extent;
 *   - a pointer between A's end and B (exporter's slack, never exported) is
 *     refused;
 *   - xdev_pointer_get_info reports base = the opened pointer, size = the
 *     requested bytes;
 *   - the exact sizes work; after closing, the pointers are refused.
 * The parent then finds A rewritten and B untouched.
 * Run: XDEV_BACKEND=cuda XDEV_PLUGIN_PATH=<the ipc plugin's directory>. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "xt.h"

#define A_BYTES 1000 /* requested: the block is rounded up to 1024 */
#define B_BYTES 600
#define A_FILL 0x11
#define B_FILL 0x22
#define CHILD_FILL 0x33

static const char *g_who = "parent";

#define XT_DIE_WHO g_who
#include "common/xt_die.h"
/* call must be INVALID_VALUE with a message holding every needle. */
#define REFUSED(call, ...)                                                                         \
    do {                                                                                           \
        xdev_status_t st_ = (call);                                                                \
        const char *needles_[] = {__VA_ARGS__};                                                    \
        CHECK(st_ == XDEV_ERROR_INVALID_VALUE, "%s returned %d (%s)", #call, (int)st_,             \
              xdev_last_error());                                                                  \
        for (size_t i_ = 0; i_ < sizeof needles_ / sizeof *needles_; i_++)                         \
            CHECK(xt_icontains(xdev_last_error(), needles_[i_]), "%s: '%s' lacks '%s'", #call,     \
                  xdev_last_error(), needles_[i_]);                                                \
        printf("%s: refused as expected: %s\n", g_who, xdev_last_error());                         \
    } while (0)

typedef struct msg {
    xdev_ipc_mem_handle_t a, b;
    size_t gap; /* B - A in the exporter */
} msg_t;

static void read_all(int fd, void *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)buf + got, n - got);
        CHECK(r > 0, "short read from the parent (%zd)", r);
        got += (size_t)r;
    }
}

static void expect_bytes(const unsigned char *p, size_t n, int v, const char *what) {
    for (size_t i = 0; i < n; i++)
        CHECK(p[i] == (unsigned char)v, "%s byte %zu is 0x%x, expected 0x%x", what, i, p[i], v);
}

static int child_main(void) {
    g_who = "child";
    OK(xdev_init());
    msg_t m;
    read_all(0, &m, sizeof m);
    size_t bytes = 0;
    OK(xdev_ipc_mem_handle_info(&m.a, NULL, &bytes));
    CHECK(bytes == A_BYTES, "A's handle offers %zu bytes", bytes);
    unsigned char *pa = NULL, *pb = NULL, *host = NULL;
    OK(xdev_ipc_open_mem_handle(&m.a, (void **)&pa));
    OK(xdev_ipc_open_mem_handle(&m.b, (void **)&pb));
    CHECK((size_t)(pb - pa) == m.gap, "A and B are %td bytes apart here, %zu in the exporter",
          pb - pa, m.gap);
    OK(xdev_host_alloc((void **)&host, 4096));
    memset(host, CHILD_FILL, 4096);

    /* Over the exported allocation by one byte: refused, naming its extent. */
    REFUSED(xdev_memset_async(pa, CHILD_FILL, A_BYTES + 1, NULL), "1000 bytes");
    REFUSED(xdev_memcpy(pa, host, A_BYTES + 1), "1000 bytes");
    REFUSED(xdev_memcpy(host, pa, A_BYTES + 1), "1000 bytes");
    REFUSED(xdev_memset_async(pa, CHILD_FILL, m.gap + 8, NULL), "1000 bytes"); /* into B */
    REFUSED(xdev_memset_async(pb, CHILD_FILL, B_BYTES + 1, NULL), "600 bytes");
    /* The exporter's slack after A was never exported. */
    REFUSED(xdev_memset_async(pa + A_BYTES + 8, CHILD_FILL, 8, NULL), "ipc|opened");

    xdev_pointer_info_t info;
    OK(xdev_pointer_get_info(pa + 10, &info));
    CHECK(info.kind == XDEV_MEMORY_DEVICE, "kind %d", (int)info.kind);
    CHECK(info.base == pa && info.size == A_BYTES && info.block_size == A_BYTES,
          "pointer_get_info: base %p size %zu block %zu; expected %p, %d", info.base, info.size,
          info.block_size, (void *)pa, A_BYTES);
    OK(xdev_pointer_get_info(pb, &info));
    CHECK(info.base == pb && info.size == B_BYTES, "B: base %p size %zu", info.base, info.size);

    /* B as the exporter wrote it; A's exact size works. */
    OK(xdev_memcpy(host, pb, B_BYTES));
    expect_bytes(host, B_BYTES, B_FILL, "B (child)");
    OK(xdev_memset_async(pa, CHILD_FILL, A_BYTES, NULL));

    OK(xdev_ipc_close_mem_handle(pa));
    REFUSED(xdev_memset_async(pa, CHILD_FILL, 1, NULL), "ipc|opened");
    OK(xdev_memcpy(host, pb, B_BYTES)); /* B's open is its own */
    OK(xdev_ipc_close_mem_handle(pb));
    OK(xdev_ipc_collect());
    /* A forged handle whose segment is larger than the device's memory (the
     * wire's seg_size, bytes 16-23: ipc.c's ipc_wire_t) is refused before
     * anything is mapped or recorded. */
    xdev_ipc_mem_handle_t forged = m.a;
    const uint64_t huge = (uint64_t)1 << 62;
    memcpy(forged.bytes + 16, &huge, sizeof huge);
    unsigned char *pf = NULL;
    REFUSED(xdev_ipc_open_mem_handle(&forged, (void **)&pf), "corrupt handle", "larger than");
    CHECK(pf == NULL, "a refused open returned %p", (void *)pf);
    OK(xdev_host_free(host));
    printf("child: the opened pointers reached their own allocations only\n");
    return 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1 && strcmp(argv[1], "child") == 0) return child_main();
    OK(xdev_init());
    if (!xdev_is_available(XDEV_DEVICE_CUDA)) {
        printf("SKIP: no cuda backend with IPC (run with XDEV_PLUGIN_PATH at the FAKE_IPC "
               "plugin): %s\n",
               xdev_last_error());
        return 77;
    }
    OK(xdev_set_device(xdev_cuda(0)));
    unsigned char *a = NULL, *b = NULL, *host = NULL;
    OK(xdev_malloc((void **)&a, A_BYTES));
    OK(xdev_malloc((void **)&b, B_BYTES));
    CHECK(b > a && b - a < 4096, "A %p and B %p are not neighbours in one segment", (void *)a,
          (void *)b);
    OK(xdev_memset_async(a, A_FILL, A_BYTES, NULL));
    OK(xdev_memset_async(b, B_FILL, B_BYTES, NULL));
    msg_t m = {.gap = (size_t)(b - a)};
    OK(xdev_ipc_get_mem_handle(a, &m.a));
    OK(xdev_ipc_get_mem_handle(b, &m.b));
    /* A pointer in A's rounding slack is not A's to export. */
    xdev_ipc_mem_handle_t h;
    REFUSED(xdev_ipc_get_mem_handle(a + A_BYTES + 8, &h), "ptr");

    int fds[2];
    CHECK(pipe(fds) == 0, "pipe");
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        dup2(fds[0], 0);
        close(fds[0]);
        close(fds[1]);
        execl("/proc/self/exe", argv[0], "child", (char *)NULL);
        _exit(127);
    }
    close(fds[0]);
    CHECK(write(fds[1], &m, sizeof m) == (ssize_t)sizeof m, "write handles");
    close(fds[1]);
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed (status 0x%x)", status);

    OK(xdev_host_alloc((void **)&host, 4096));
    OK(xdev_memcpy(host, a, A_BYTES));
    expect_bytes(host, A_BYTES, CHILD_FILL, "A");
    OK(xdev_memcpy(host, b, B_BYTES));
    expect_bytes(host, B_BYTES, B_FILL, "B");
    OK(xdev_host_free(host));
    OK(xdev_free(b));
    OK(xdev_free(a));
    printf("parent: the child wrote A only; B is untouched\n");
    return 0;
}
