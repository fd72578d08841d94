/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/cuda_graph.c - the graph table (ABI 3.2, xdev/graph.h):
 * stream capture into a CUDA graph, and its replay.
 *
 *   capture_begin  cudaStreamBeginCapture, mode Global / ThreadLocal /
 *                  Relaxed for XDEV_CAPTURE_GLOBAL / _THREAD_LOCAL / _RELAXED
 *   capture_end    cudaStreamEndCapture, cudaGraphInstantiateWithFlags(0)
 *                  with the thread's capture mode relaxed (relax_begin: so
 *                  it works beside another thread's global capture);
 *                  the cudaGraph_t is destroyed once instantiated; the core
 *                  gets a small record (xc_graph_t) holding the
 *                  cudaGraphExec_t and the BLAS workspaces the capture used
 *   launch         cuGraphLaunch, the driver's call, where the driver has it
 *                  (CUDA; HIP: hipGraphLaunch): the runtime's cudaGraphLaunch
 *                  took ~55 ns more host time a launch on an H200 host, most
 *                  of what a replay may add over a raw CUDA graph (issue 50:
 *                  5% of ~1.7 us). A failed driver launch enqueued nothing;
 *                  cudaGraphLaunch then makes the same launch once, and its
 *                  result is the slot's: the runtime's error names and the
 *                  same mapping to xdev's statuses as before (a failure that
 *                  already had an effect, e.g. invalidating another stream's
 *                  capture by touching the legacy stream, had it with the
 *                  runtime's call alone too)
 *   destroy        cudaGraphExecDestroy; the workspaces go back to the
 *                  device's free list
 * Every slot runs with the device current (the device guard).
 *
 * The default stream. A device's default stream is the legacy stream
 * (cuda_stream.c), which CUDA cannot capture (cudaStreamBeginCapture refuses
 * cudaStreamLegacy; HIP's NULL stream likewise): capture_begin answers
 * XDEV_ERROR_CAPTURE for it, naming the remedy (a created stream, as
 * torch.cuda.graph captures on a side stream). cudaStreamPerThread can be
 * captured.
 *
 * Failures. The runtime's stream-capture errors (cudaErrorStreamCapture*,
 * cudaErrorCapturedEvent; cudaErrorIllegalState from begin or end: the stream
 * already captures / does not), a fork that did not join back
 * (cudaErrorStreamCaptureUnjoined) included, are XDEV_ERROR_CAPTURE; the
 * message names the runtime's error and what it means. A failed capture_end has stopped recording
 * (the runtime ends an invalidated or unjoined capture and returns no graph), except where the
 * runtime keeps it going: a Global or ThreadLocal capture ended from another
 * thread than the one that began it (cudaErrorStreamCaptureWrongThread),
 * which the message says.
 *
 * BLAS workspaces. cuBLAS must not allocate its default workspace inside a
 * capture, and a workspace baked into a graph must not be used by other work
 * while the graph may run. So each capture owns the workspaces its BLAS calls
 * use, one per stream recording into it (the origin and forked streams may
 * run concurrently in the graph): cuda_blas.c asks xc_capture_workspace while
 * a capture is under way on the device, which finds the capture by the
 * runtime's capture id (shared by forked streams) and gives the stream's
 * workspace, taken from the device's free list or allocated (cudaMalloc, the
 * size cuBLAS recommends). The graph keeps them until it is destroyed (launches
 * of one cudaGraphExec_t never overlap, so its replays may share them); then,
 * or when the capture fails, they return to the free list. Nothing frees
 * them: cudaFree synchronizes the device, which a capture under way on another
 * thread forbids; the process's end releases them. Outside captures cuBLAS
 * keeps its own default workspace, per stream, as before. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda_internal.h"

#if !defined(XC_VENDOR_HIP)
#include <cuda.h>
#include <string.h>

/* The driver's cuGraphLaunch (NULL: not found; launches take the runtime's). */
typedef CUresult (*xc_graph_launch_fn)(CUgraphExec, CUstream);
static pthread_once_t g_launch_once = PTHREAD_ONCE_INIT;
static xc_graph_launch_fn g_cu_graph_launch;

static void launch_lookup(void) {
    void *fn = xc_driver_entry("cuGraphLaunch", 12000);
    memcpy(&g_cu_graph_launch, &fn, sizeof fn);
}
#endif

/* A BLAS workspace, idle (on the free list) or given to `stream` of a capture. */
typedef struct xc_ws {
    void *stream;
    void *mem;
    struct xc_ws *next;
} xc_ws_t;

/* A capture begun by capture_begin, until capture_end. */
typedef struct xc_capture {
    int device;
    void *stream;          /* the origin */
    unsigned long long id; /* the runtime's capture sequence id */
    xc_ws_t *ws;           /* the workspaces its streams took */
    struct xc_capture *next;
} xc_capture_t;

/* The graph handed to the core. */
typedef struct xc_graph {
    cudaGraphExec_t exec;
    xc_ws_t *ws;
#if !defined(XC_VENDOR_HIP)
    xc_graph_launch_fn drv_launch; /* g_cu_graph_launch, read once at instantiation */
#endif
} xc_graph_t;

/* Guards the captures' list, the free lists and the workspace sizes. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static xc_capture_t *g_captures;
static xc_ws_t *g_free[XC_MAX_DEVICES];
static size_t g_ws_bytes[XC_MAX_DEVICES]; /* 0 until the device's first workspace */

static const char *const g_mode_names[] = {"global", "thread_local", "relaxed"};

/* ------------------------------------------------------------- errors */

bool xc_capture_error(cudaError_t err) {
    switch (err) {
    case cudaErrorStreamCaptureUnsupported:
    case cudaErrorStreamCaptureInvalidated:
    case cudaErrorStreamCaptureMerge:
    case cudaErrorStreamCaptureUnmatched:
    case cudaErrorStreamCaptureUnjoined:
    case cudaErrorStreamCaptureIsolation:
    case cudaErrorStreamCaptureImplicit:
    case cudaErrorCapturedEvent:
    case cudaErrorStreamCaptureWrongThread:
        return true;
    default:
        return false;
    }
}

/* Report a failed runtime call: "<what>: <name>: <string>[; <hint>]".
 * status XDEV_SUCCESS: XDEV_ERROR_CAPTURE for a capture error, else xc_fail's
 * mapping (out of memory, a lost context, XDEV_ERROR_BACKEND). */
static xdev_status_t graph_fail(xdev_status_t status, cudaError_t err, const char *hint,
                                const char *what, ...) __attribute__((format(printf, 4, 5)));

static xdev_status_t graph_fail(xdev_status_t status, cudaError_t err, const char *hint,
                                const char *what, ...) {
    char call[256];
    va_list ap;
    va_start(ap, what);
    vsnprintf(call, sizeof call, what, ap);
    va_end(ap);
    if (status == XDEV_SUCCESS && xc_capture_error(err)) status = XDEV_ERROR_CAPTURE;
    if (status == XDEV_SUCCESS) {
        status = xc_fail(err, "%s", call); /* clears a non-sticky error */
        if (hint == NULL) return status;
    } else {
        (void)cudaGetLastError();
    }
    return xc_error(status, "%s: %s: %s%s%s", call, cudaGetErrorName(err), cudaGetErrorString(err),
                    hint != NULL ? "; " : "", hint != NULL ? hint : "");
}

/* ------------------------------------------------------------- workspaces */

/* Give a capture's workspaces back to the device's free list. */
static void ws_release(int device, xc_ws_t *ws) {
    if (ws == NULL) return;
    pthread_mutex_lock(&g_lock);
    while (ws != NULL) {
        xc_ws_t *next = ws->next;
        ws->stream = NULL;
        ws->next = g_free[device];
        g_free[device] = ws;
        ws = next;
    }
    pthread_mutex_unlock(&g_lock);
}

/* Under g_lock, the device current: an idle workspace, or a new one. */
static xdev_status_t ws_take_locked(int device, xc_ws_t **out) {
    xc_ws_t *w = g_free[device];
    if (w != NULL) {
        g_free[device] = w->next;
        *out = w;
        return XDEV_SUCCESS;
    }
    if (g_ws_bytes[device] == 0) g_ws_bytes[device] = xc_vendor_blas_workspace_bytes(device);
    w = calloc(1, sizeof *w);
    if (w == NULL)
        return xc_error(XDEV_ERROR_OUT_OF_MEMORY, XC_NAME ": no host memory for a BLAS workspace");
    cudaError_t err = xc_malloc_any_mode(&w->mem, g_ws_bytes[device]);
    if (err != cudaSuccess) {
        free(w);
        return xc_fail(err,
                       XC_STR(cudaMalloc) "(%zu bytes: the BLAS workspace of a capture) on "
                                          "device %d",
                       g_ws_bytes[device], device);
    }
    *out = w;
    return XDEV_SUCCESS;
}

xdev_status_t xc_capture_workspace(xc_device_t *dev, void *stream, void **mem, size_t *bytes) {
    *mem = NULL;
    *bytes = 0;
    if (stream == NULL || stream == (void *)XC_STREAM_LEGACY)
        return XDEV_SUCCESS; /* never captures */
    xc_capture_status_t status = cudaStreamCaptureStatusNone;
    unsigned long long id = 0;
    cudaError_t err = xc_vendor_capture_info((cudaStream_t)stream, &status, &id);
    if (err != cudaSuccess)
        return graph_fail(XDEV_SUCCESS, err, NULL,
                          XC_CAPTURE_INFO_CALL " before a BLAS call on device %d", dev->index);
    if (status != cudaStreamCaptureStatusActive) return XDEV_SUCCESS;
    xdev_status_t st = XDEV_SUCCESS;
    pthread_mutex_lock(&g_lock);
    xc_capture_t *c = g_captures;
    while (c != NULL && !(c->device == dev->index && c->id == id))
        c = c->next;
    if (c != NULL) { /* else a capture begun outside xdev: cuBLAS's default workspace */
        xc_ws_t *w = c->ws;
        while (w != NULL && w->stream != stream)
            w = w->next;
        if (w == NULL) {
            st = ws_take_locked(dev->index, &w);
            if (st == XDEV_SUCCESS) {
                w->stream = stream;
                w->next = c->ws;
                c->ws = w;
            }
        }
        if (st == XDEV_SUCCESS) {
            *mem = w->mem;
            *bytes = g_ws_bytes[dev->index];
        }
    }
    pthread_mutex_unlock(&g_lock);
    return st;
}

/* ------------------------------------------------------------- captures */

/* The calling thread's capture mode relaxed, around a call that makes or
 * destroys an executable graph (instantiate, cudaGraphDestroy,
 * cudaGraphExecDestroy). The runtime counts them unsafe: in global mode,
 * while any thread's global capture is under way, they fail
 * (cudaErrorStreamCaptureUnsupported) and invalidate that capture. They are
 * safe to make then: they enqueue nothing on any stream, wait for no
 * captured work, and what they allocate or free belongs to the executable
 * graph, which no capture records (it is launched only by graph_launch,
 * which the core refuses on a capturing stream). The capture still under
 * way records exactly what it did before. */
static xc_capture_mode_t relax_begin(void) {
    xc_capture_mode_t mode = cudaStreamCaptureModeRelaxed;
    (void)cudaThreadExchangeStreamCaptureMode(&mode);
    return mode;
}

static void relax_end(xc_capture_mode_t mode) {
    (void)cudaThreadExchangeStreamCaptureMode(&mode);
}

/* Take the record of the capture of `stream` (and id `id`, when known: the
 * per-thread stream's handle is every thread's) off the list (NULL when there
 * is none): the capture has ended. */
static xc_capture_t *capture_forget(xc_device_t *dev, void *stream, bool known,
                                    unsigned long long id) {
    pthread_mutex_lock(&g_lock);
    xc_capture_t *found = NULL;
    for (xc_capture_t **p = &g_captures; *p != NULL; p = &(*p)->next)
        if ((*p)->device == dev->index && (*p)->stream == stream && (!known || (*p)->id == id)) {
            found = *p;
            *p = found->next;
            __atomic_sub_fetch(&dev->captures, 1, __ATOMIC_RELAXED);
            break;
        }
    pthread_mutex_unlock(&g_lock);
    return found;
}

static xdev_status_t graph_capture_begin(xc_device_t *dev, void *stream, int mode) {
    int device = dev->index;
    if (mode < 0 || mode > 2)
        return xc_error(XDEV_ERROR_INVALID_VALUE,
                        XC_NAME ":%d: capture mode %d is none of xdev_capture_mode_t's (0 global, "
                                "1 thread_local, 2 relaxed)",
                        device, mode);
    if (stream == NULL || stream == (void *)XC_STREAM_LEGACY)
        return xc_error(XDEV_ERROR_CAPTURE,
                        XC_NAME
                        ":%d: the device's default stream is the runtime's legacy stream, "
                        "which cannot be captured; capture on a stream made with "
                        "xdev_stream_create (as torch.cuda.graph captures on a side stream)",
                        device);
    static const xc_capture_mode_t modes[] = {cudaStreamCaptureModeGlobal,
                                              cudaStreamCaptureModeThreadLocal,
                                              cudaStreamCaptureModeRelaxed};
    xc_capture_t *c = calloc(1, sizeof *c);
    if (c == NULL)
        return xc_error(XDEV_ERROR_OUT_OF_MEMORY, XC_NAME ": no host memory for a capture");
    c->device = device;
    c->stream = stream;
    xc_guard_t g;
    xdev_status_t st = xc_guard_begin(&g, device);
    if (st != XDEV_SUCCESS) {
        free(c);
        return st;
    }
    cudaError_t err = cudaStreamBeginCapture((cudaStream_t)stream, modes[mode]);
    if (err != cudaSuccess) {
        st = graph_fail(err == cudaErrorIllegalState ? XDEV_ERROR_CAPTURE : XDEV_SUCCESS, err,
                        err == cudaErrorIllegalState ? "the stream is already capturing" : NULL,
                        XC_STR(cudaStreamBeginCapture) "(%s mode) on device %d", g_mode_names[mode],
                        device);
    } else {
        xc_capture_status_t status = cudaStreamCaptureStatusNone;
        err = xc_vendor_capture_info((cudaStream_t)stream, &status, &c->id);
        if (err != cudaSuccess) {
            st = graph_fail(XDEV_SUCCESS, err, "the capture was abandoned",
                            XC_CAPTURE_INFO_CALL " after beginning a capture on device %d", device);
            cudaGraph_t graph = NULL;
            if (cudaStreamEndCapture((cudaStream_t)stream, &graph) == cudaSuccess && graph != NULL)
                (void)cudaGraphDestroy(graph);
            (void)cudaGetLastError();
        }
    }
    if (st == XDEV_SUCCESS) {
        pthread_mutex_lock(&g_lock);
        c->next = g_captures;
        g_captures = c;
        __atomic_add_fetch(&dev->captures, 1, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&g_lock);
    } else {
        free(c);
    }
    xc_guard_end(&g);
    return st;
}

/* What a failed cudaStreamEndCapture means for the caller. */
static const char *end_hint(cudaError_t err, bool ended) {
    if (!ended)
        return err == cudaErrorStreamCaptureWrongThread
                   ? "a global or thread_local capture must end on the thread that began it; "
                     "the stream is still capturing"
                   : "the stream is still capturing";
    switch (err) {
    case cudaErrorStreamCaptureInvalidated:
        return "a call the runtime cannot record invalidated the capture (a synchronizing call, "
               "or, in global mode, an unsafe call of another thread); it has ended and recorded "
               "nothing";
    case cudaErrorStreamCaptureUnjoined:
        return "a stream forked into the capture (it waited on an event recorded in it) has work "
               "that no capturing stream waited for: join it (record an event on it after its "
               "last work and make the capturing stream wait on it) before ending; the capture "
               "has ended and recorded nothing";
    case cudaErrorIllegalState:
        return "the stream is not capturing";
    default:
        return "the capture has ended and recorded nothing";
    }
}

static xdev_status_t graph_capture_end(xc_device_t *dev, void *stream, void **graph) {
    int device = dev->index;
    *graph = NULL;
    xc_guard_t g;
    xdev_status_t st = xc_guard_begin(&g, device);
    if (st != XDEV_SUCCESS) return st;
    xc_capture_status_t status = cudaStreamCaptureStatusNone;
    unsigned long long id = 0;
    bool known = xc_vendor_capture_info((cudaStream_t)stream, &status, &id) == cudaSuccess &&
                 status != cudaStreamCaptureStatusNone;
    (void)cudaGetLastError();
    cudaGraph_t captured = NULL;
    cudaError_t err = cudaStreamEndCapture((cudaStream_t)stream, &captured);
    bool ended = true;
    if (err != cudaSuccess) { /* ended, unless the runtime says the stream still captures */
        status = cudaStreamCaptureStatusNone;
        if (cudaStreamIsCapturing((cudaStream_t)stream, &status) == cudaSuccess &&
            status != cudaStreamCaptureStatusNone)
            ended = false;
        (void)cudaGetLastError();
    }
    xc_capture_t *c = ended ? capture_forget(dev, stream, known, id) : NULL;
    xc_ws_t *ws = c != NULL ? c->ws : NULL;
    free(c);
    if (err != cudaSuccess) {
        if (captured != NULL) (void)cudaGraphDestroy(captured);
        ws_release(device, ws);
        xdev_status_t as = XDEV_SUCCESS;
        if (err == cudaErrorStreamCaptureUnjoined) as = XDEV_ERROR_CAPTURE;
        if (err == cudaErrorIllegalState) as = XDEV_ERROR_CAPTURE;
        st = graph_fail(as, err, end_hint(err, ended), XC_STR(cudaStreamEndCapture) " on device %d",
                        device);
        xc_guard_end(&g);
        return st;
    }
    cudaGraphExec_t exec = NULL;
    /* This thread's capture has ended, but another thread's global capture
     * would make instantiation (an unsafe call to the runtime) fail and
     * invalidate that capture: relaxed meanwhile (see relax_begin). */
    xc_capture_mode_t mode = relax_begin();
    err = cudaGraphInstantiateWithFlags(&exec, captured, 0);
    (void)cudaGraphDestroy(captured); /* the executable graph keeps what it needs */
    relax_end(mode);
    xc_graph_t *out = NULL;
    if (err != cudaSuccess) {
        st = graph_fail(XDEV_SUCCESS, err, "the capture has ended and made no graph",
                        XC_STR(cudaGraphInstantiateWithFlags) " on device %d", device);
    } else if ((out = malloc(sizeof *out)) == NULL) {
        (void)cudaGraphExecDestroy(exec);
        st = xc_error(XDEV_ERROR_OUT_OF_MEMORY, XC_NAME ": no host memory for a graph");
    }
    if (st == XDEV_SUCCESS) {
        out->exec = exec;
        out->ws = ws;
#if !defined(XC_VENDOR_HIP)
        pthread_once(&g_launch_once, launch_lookup);
        out->drv_launch = g_cu_graph_launch;
#endif
        *graph = out;
    } else {
        ws_release(device, ws);
    }
    xc_guard_end(&g);
    return st;
}

/* With the graph's device current, whatever the stream: unlike the other
 * stream-ordered calls, cudaGraphLaunch is not documented to take the
 * stream's device, and other projects found a multi-device launch needs it
 * current (mlx had to add the same guard). graph.replay_with_other_device_current
 * replays with another device current. */
static xdev_status_t graph_launch(xc_device_t *dev, void *graph, void *stream) {
    const xc_graph_t *gr = graph;
    xc_guard_t g;
    xdev_status_t st = xc_guard_begin(&g, dev->index);
    if (st != XDEV_SUCCESS) return st;
#if !defined(XC_VENDOR_HIP)
    if (gr->drv_launch != NULL && gr->drv_launch(gr->exec, (CUstream)stream) == CUDA_SUCCESS) {
        xc_guard_end(&g);
        return XDEV_SUCCESS;
    }
#endif
    cudaError_t err = cudaGraphLaunch(gr->exec, (cudaStream_t)stream);
    if (err != cudaSuccess)
        st = graph_fail(XDEV_SUCCESS, err, NULL, XC_STR(cudaGraphLaunch) " on device %d",
                        dev->index);
    xc_guard_end(&g);
    return st;
}

/* No replay is pending (the core synchronized the device) and none will
 * come: the workspaces are idle and the record goes, whatever the runtime
 * answers (a failure is reported; the executable graph is then left). */
static xdev_status_t graph_destroy(xc_device_t *dev, void *graph) {
    xc_graph_t *gr = graph;
    xc_guard_t g;
    xdev_status_t st = xc_guard_begin(&g, dev->index);
    if (st == XDEV_SUCCESS) {
        xc_capture_mode_t mode = relax_begin(); /* beside another capture */
        cudaError_t err = cudaGraphExecDestroy(gr->exec);
        relax_end(mode);
        if (err != cudaSuccess)
            st = graph_fail(XDEV_SUCCESS, err, NULL, XC_STR(cudaGraphExecDestroy) " on device %d",
                            dev->index);
        xc_guard_end(&g);
    }
    ws_release(dev->index, gr->ws);
    free(gr);
    return st;
}

const xdev_graph_vtable_t xc_graph_vtable = {
    .size = sizeof(xdev_graph_vtable_t),
    .capture_begin = graph_capture_begin,
    .capture_end = graph_capture_end,
    .launch = graph_launch,
    .destroy = graph_destroy,
};
