/* SPDX-License-Identifier: Apache-2.0 */
/* tests/api_use/api_use.c - the public helpers a program leans on, used as
 * a program would, compiled with XDEV_NODISCARD and -Werror (so every status
 * here is used):
 *   - XDEV_TRY returns a failed call's status from the enclosing function
 *     and leaves the message; a success goes on;
 *   - XDEV_MUST exits with EXIT_FAILURE and prints file:line, the call, the
 *     status and the message (`api_use must-fail`, run by the script);
 *   - the comm calls take a plain `void *bufs[]` without a cast.
 * Prints "api_use: ok". XDEV_BACKEND=cpu XDEV_CPU_DEVICES=2. */
#include <stdio.h>
#include <string.h>

#include <xdev/xdev.h>

static int failures;

#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "api_use: %s:%d: ", __FILE__, __LINE__);                               \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static int reached_after_try;

static xdev_status_t two_steps(void *p, size_t n, const void *src) {
    XDEV_TRY(xdev_memcpy(p, src, n));
    reached_after_try = 1;
    return XDEV_SUCCESS;
}

int main(int argc, char **argv) {
    XDEV_MUST(xdev_init());
    if (argc > 1 && strcmp(argv[1], "must-fail") == 0) {
        XDEV_MUST(xdev_set_device(xdev_cpu(63))); /* no such device: exits */
        return 0;
    }
    float host[4] = {1, 2, 3, 4};
    void *d0 = NULL, *d1 = NULL, *dst = NULL;
    XDEV_MUST(xdev_malloc_device(xdev_cpu(0), &d0, sizeof host));
    XDEV_MUST(xdev_malloc_device(xdev_cpu(1), &d1, sizeof host));
    XDEV_MUST(xdev_malloc_device(xdev_cpu(0), &dst, sizeof host));

    /* XDEV_TRY: a failure returns its status, a success goes on */
    xdev_clear_error();
    xdev_status_t st = two_steps(NULL, sizeof host, host);
    EXPECT(st == XDEV_ERROR_INVALID_VALUE, "XDEV_TRY gave %s", xdev_status_string(st));
    EXPECT(!reached_after_try, "XDEV_TRY went on after a failure");
    EXPECT(strstr(xdev_last_error(), "xdev_memcpy") != NULL, "message: %s", xdev_last_error());
    st = two_steps(d0, sizeof host, host);
    EXPECT(st == XDEV_SUCCESS && reached_after_try, "XDEV_TRY stopped a success");
    XDEV_MUST(xdev_memcpy(d1, host, sizeof host));

    /* plain arrays of void * where the sources are const void *const * */
    void *bufs[2] = {d0, d1};
    XDEV_MUST(xdev_comm_reduce_add(bufs, 2, dst, 4, XDEV_DTYPE_F32));
    float sum[4];
    XDEV_MUST(xdev_memcpy(sum, dst, sizeof sum));
    EXPECT(sum[0] == 2 && sum[3] == 8, "reduce_add gave %g .. %g", sum[0], sum[3]);
    const void *cbufs[2] = {d0, d1};
    XDEV_MUST(xdev_comm_reduce_add(cbufs, 2, dst, 4, XDEV_DTYPE_F32));
    void *gathered = NULL;
    XDEV_MUST(xdev_malloc_device(xdev_cpu(0), &gathered, 2 * sizeof host));
    size_t chunks[2] = {sizeof host, sizeof host};
    XDEV_MUST(xdev_comm_gather(bufs, chunks, 2, gathered));
    void *copies[1] = {NULL};
    XDEV_MUST(xdev_malloc_device(xdev_cpu(1), &copies[0], sizeof host));
    size_t sizes[1] = {sizeof host};
    void *one[1] = {d0};
    XDEV_MUST(xdev_comm_broadcast_coalesced(one, sizes, 1, copies, 1, 0));
    XDEV_MUST(xdev_synchronize());

    XDEV_MUST(xdev_free(copies[0]));
    XDEV_MUST(xdev_free(gathered));
    XDEV_MUST(xdev_free(dst));
    XDEV_MUST(xdev_free(d1));
    XDEV_MUST(xdev_free(d0));
    if (failures) return 1;
    printf("api_use: ok\n");
    return 0;
}
