/* SPDX-License-Identifier: Apache-2.0 */
/* test_cuda_ipc.c - CUDA IPC across two processes.
 *
 * The parent allocates device memory, fills it with A, then on a stream
 * spins for a while, fills an interior range with B and records an
 * interprocess event. It sends a memory handle for the interior pointer and
 * the event handle through a pipe to a child (fork + exec of this program
 * with "child"). The child opens both, makes its stream wait for the event,
 * copies the range back and expects B (without the wait it would see A),
 * then writes C over it and closes its handles. The parent checks C. The
 * child's calls are measured against the exported allocation, not the
 * segment mapped around it (docs/bounds.md, IPC row): one byte more is
 * refused, xdev_pointer_get_info reports the extent, and the parent's
 * neighbouring allocation stays as it was.
 * Exit 0 = pass, 1 = fail, 77 = skipped (no usable CUDA backend). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "xdev/xdev.h"
#include "xg_kernels.h"

#define WORDS (1u << 20)        /* the shared range: 4 MiB */
#define OFFSET_WORDS (1u << 18) /* 1 MiB into the allocation */
#define A 0x11111111u
#define B 0x22222222u
#define C_BYTE 0x33
#define SPIN_MS 1500.0

static const char *g_who = "parent";

#define XT_DIE_WHO g_who
#include "../common/xt_die.h"

static void expect_words(const uint32_t *p, size_t n, uint32_t v) {
    for (size_t i = 0; i < n; i++)
        CHECK(p[i] == v, "word %zu is 0x%x, expected 0x%x", i, p[i], v);
}

static void read_all(int fd, void *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)buf + got, n - got);
        CHECK(r > 0, "short read from the parent (%zd)", r);
        got += (size_t)r;
    }
}

static int child_main(void) {
    g_who = "child";
    OK(xdev_init());
    xdev_ipc_mem_handle_t mh;
    xdev_ipc_event_handle_t eh;
    read_all(0, &mh, sizeof mh);
    read_all(0, &eh, sizeof eh);
    xdev_device_t dev;
    size_t bytes = 0;
    OK(xdev_ipc_mem_handle_info(&mh, &dev, &bytes));
    CHECK(bytes >= WORDS * 4, "the handle offers %zu bytes", bytes);
    uint32_t *p = NULL, *again = NULL, *host = NULL;
    OK(xdev_ipc_open_mem_handle(&mh, (void **)&p));
    OK(xdev_ipc_open_mem_handle(&mh, (void **)&again)); /* cached, reference counted */
    CHECK(p == again, "reopening gave %p, first %p", (void *)again, (void *)p);
    xdev_device_t owner;
    OK(xdev_device_of(p, &owner));
    CHECK(xdev_device_equal(owner, dev), "device_of the mapping differs from the handle's");
    xdev_event_t ev;
    OK(xdev_ipc_open_event_handle(&eh, &ev));
    xdev_stream_t s;
    OK(xdev_stream_create(dev, XDEV_STREAM_PRIORITY_NORMAL, &s));
    OK(xdev_host_alloc((void **)&host, WORDS * 4));
    OK(xdev_stream_wait_event(s, ev));
    OK(xdev_memcpy_async(host, p, WORDS * 4, s));
    OK(xdev_stream_synchronize(s));
    expect_words(host, WORDS, B);
    OK(xdev_memset_async(p, C_BYTE, WORDS * 4, s));
    OK(xdev_stream_synchronize(s));
    xdev_status_t over = xdev_memset_async(p, C_BYTE, bytes + 1, s);
    CHECK(over == XDEV_ERROR_INVALID_VALUE && strstr(xdev_last_error(), "past the end"),
          "a memset of the exported %zu bytes + 1 returned %d (%s)", bytes, (int)over,
          xdev_last_error());
    xdev_pointer_info_t info;
    OK(xdev_pointer_get_info(p, &info));
    CHECK(info.base == p && info.size == bytes, "pointer_get_info: base %p size %zu", info.base,
          info.size);
    OK(xdev_stream_synchronize(s));
    OK(xdev_ipc_close_mem_handle(again));
    OK(xdev_ipc_close_mem_handle(p));
    CHECK(xdev_ipc_close_mem_handle(p) == XDEV_ERROR_INVALID_VALUE, "a third close succeeded");
    OK(xdev_ipc_collect());
    OK(xdev_event_destroy(ev));
    OK(xdev_host_free(host));
    OK(xdev_stream_destroy(s));
    printf("child: saw B after waiting on the parent's event; wrote C\n");
    return 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1 && strcmp(argv[1], "child") == 0) return child_main();
    if (xdev_init() != XDEV_SUCCESS || !xdev_is_available(XDEV_DEVICE_CUDA)) {
        xdev_backend_info_t info;
        const char *why = xdev_last_error();
        if (xdev_backend_get_info(XDEV_DEVICE_CUDA, &info) == XDEV_SUCCESS && info.reason)
            why = info.reason;
        printf("SKIP ipc: the cuda backend cannot be used: %s\n", why);
        return 77;
    }
    char why[512];
    CHECK(xg_kernels_load(why, sizeof why), "%s", why);
    const size_t total = (size_t)(OFFSET_WORDS + WORDS + 4096) * 4;
    uint32_t *base = NULL, *host = NULL, *next = NULL;
    OK(xdev_malloc((void **)&base, total));
    OK(xdev_malloc((void **)&next, total)); /* most likely the next block of base's segment */
    OK(xdev_host_alloc((void **)&host, WORDS * 4));
    uint32_t *shared = base + OFFSET_WORDS;
    xdev_stream_t s;
    OK(xdev_stream_create(xdev_cuda(-1), XDEV_STREAM_PRIORITY_NORMAL, &s));
    void *native = NULL;
    OK(xdev_stream_native_handle(s, &native));
    CHECK(xg_fill((cudaStream_t)native, base, A, total / 4) == cudaSuccess, "fill A");
    CHECK(xg_fill((cudaStream_t)native, next, A, total / 4) == cudaSuccess, "fill A");
    OK(xdev_stream_synchronize(s));
    xdev_event_t ev;
    OK(xdev_event_create(XDEV_EVENT_INTERPROCESS, &ev));
    CHECK(xg_spin((cudaStream_t)native, SPIN_MS) == cudaSuccess, "spin");
    CHECK(xg_fill((cudaStream_t)native, shared, B, WORDS) == cudaSuccess, "fill B");
    OK(xdev_event_record(ev, s));
    xdev_ipc_mem_handle_t mh;
    xdev_ipc_event_handle_t eh;
    OK(xdev_ipc_get_mem_handle(shared, &mh));
    OK(xdev_ipc_get_event_handle(ev, &eh));

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
    CHECK(write(fds[1], &mh, sizeof mh) == (ssize_t)sizeof mh, "write handle");
    CHECK(write(fds[1], &eh, sizeof eh) == (ssize_t)sizeof eh, "write handle");
    close(fds[1]);
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed (status 0x%x)", status);

    OK(xdev_memcpy(host, shared, WORDS * 4));
    expect_words(host, WORDS, 0x33333333u);
    OK(xdev_memcpy(host, base, 4096 * 4)); /* outside the shared range: untouched */
    expect_words(host, 4096, A);
    OK(xdev_memcpy(host, next, 4096 * 4)); /* the neighbour: untouched */
    expect_words(host, 4096, A);
    OK(xdev_event_destroy(ev));
    OK(xdev_stream_destroy(s));
    OK(xdev_host_free(host));
    OK(xdev_free(next));
    OK(xdev_free(base));
    printf("parent: the child saw B through the handles and its C came back\n");
    return 0;
}
