/* SPDX-License-Identifier: Apache-2.0 */
/* solo_transport.c - a transport module as a third party would write one
 * (xdev/transport.h), for test_transports.c: "solo" carries groups of one
 * rank (every collective copies send to recv; an all_reduce product is
 * refused, so that a test sees a module's error reach the caller). Built as libxdevcomm-solo.so;
 * with FAKE_ABI, FAKE_NAME or FAKE_NO_RUN defined it is broken in that one way, for the loader's
 * checks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xdev/transport.h"

#ifndef FAKE_ABI
#define FAKE_ABI XDEV_TRANSPORT_ABI
#endif
#ifndef FAKE_NAME
#define FAKE_NAME "solo"
#endif

static size_t elem(xdev_dtype_t dt) {
    return dt == XDEV_DTYPE_C128                                                   ? 16
           : dt == XDEV_DTYPE_F64 || dt == XDEV_DTYPE_I64 || dt == XDEV_DTYPE_C64  ? 8
           : dt == XDEV_DTYPE_F32 || dt == XDEV_DTYPE_I32                          ? 4
           : dt == XDEV_DTYPE_F16 || dt == XDEV_DTYPE_BF16 || dt == XDEV_DTYPE_I16 ? 2
                                                                                   : 1;
}

static xdev_status_t unique_id(unsigned char id[XDEV_TRANSPORT_ID_BYTES], char *err,
                               size_t errlen) {
    (void)err;
    (void)errlen;
    memset(id, 0, XDEV_TRANSPORT_ID_BYTES);
    memcpy(id, "solo-id", 8);
    return XDEV_SUCCESS;
}

static xdev_status_t join(const xdev_transport_join_t *j, void **group, char *err, size_t errlen) {
    if (j->nranks != 1) {
        snprintf(err, errlen, "the solo transport carries groups of one rank, not %d", j->nranks);
        return XDEV_ERROR_NOT_SUPPORTED;
    }
    int *g = malloc(sizeof *g);
    if (g == NULL) return XDEV_ERROR_OUT_OF_MEMORY;
    *g = 0; /* collectives run */
    *group = g;
    return XDEV_SUCCESS;
}

__attribute__((unused)) static xdev_status_t run(void *group, const xdev_collective_desc_t *d,
                                                 uint64_t seq, char *err, size_t errlen) {
    int *ran = group;
    if (d->kind == XDEV_COLL_ALL_REDUCE && d->op == XDEV_REDUCE_PROD) { /* for the test */
        snprintf(err, errlen, "solo refuses products");
        return XDEV_ERROR_NOT_SUPPORTED;
    }
    if ((uint64_t)*ran != seq) {
        snprintf(err, errlen, "solo: collective %llu came before %d", (unsigned long long)seq,
                 *ran);
        return XDEV_ERROR_INVALID_VALUE;
    }
    ++*ran;
    if (d->recv != NULL && d->recv != d->send) memmove(d->recv, d->send, d->count * elem(d->dtype));
    return XDEV_SUCCESS;
}

#ifdef FAKE_NO_RUN
#define FAKE_RUN NULL
#else
#define FAKE_RUN run
#endif

static void abort_group(void *group) {
    (void)group;
}

static void leave(void *group) {
    free(group);
}

static const xdev_transport_t k_table = {sizeof(xdev_transport_t),
                                         FAKE_ABI,
                                         FAKE_NAME,
                                         0,
                                         unique_id,
                                         join,
                                         FAKE_RUN,
                                         abort_group,
                                         leave};

XDEV_API const xdev_transport_t *xdev_transport_entry(void);
const xdev_transport_t *xdev_transport_entry(void) {
    return &k_table;
}
