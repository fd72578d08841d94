/* SPDX-License-Identifier: Apache-2.0 */
/* rtc_smoke.c - run-time compilation on a real CUDA device through the CUDA
 * plugin's kernel table (kernel.compile_target, kernel.compile: NVRTC opened
 * at run time), driven directly: the plugin is opened as xdev opens it and
 * given this program's host services, so the slots are checked whatever the
 * core's xdev_module_compile does with them.
 *
 * Checked: the target line and format; dialect source (shared memory and
 * barriers, a 64-bit atomic, f16 rounding, a -D option of the caller's)
 * compiled, loaded with kernel.module_load, launched and its results
 * compared on the host; the conformance suite's kernel file compiled and
 * every kernel found in it; source that does not compile and an option
 * NVRTC refuses (XDEV_ERROR_COMPILE, the log's first lines in the message,
 * the whole log in out->log); four threads compiling at once. It prints the
 * NVRTC library the process mapped. Argument "missing" (run with
 * XDEV_NVRTC_PATH naming nothing): both slots XDEV_ERROR_NOT_SUPPORTED
 * naming the variable. Exit 0 = pass, 1 = fail, 77 = skipped (no usable CUDA
 * plugin or device, or no NVRTC found). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xdev/backend.h"
#include "xdev/support/half.h"

#define OK(call) CHECK((call) == XDEV_SUCCESS, "%s", g_msg)
#include "../common/xt_die.h"

/* ------------------------------------------------------------ host services */
static _Thread_local char g_msg[2048];

static xdev_status_t set_error_v(xdev_status_t status, const char *fmt, va_list ap) {
    vsnprintf(g_msg, sizeof g_msg, fmt, ap);
    return status;
}

__attribute__((format(printf, 2, 3))) static xdev_status_t set_error(xdev_status_t status,
                                                                     const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    set_error_v(status, fmt, ap);
    va_end(ap);
    return status;
}

static xdev_status_t set_vendor_error(xdev_status_t status, const char *name, const char *text,
                                      const char *what, va_list ap) {
    char call[1024];
    vsnprintf(call, sizeof call, what, ap);
    snprintf(g_msg, sizeof g_msg, "%s: %s: %s", call, name, text);
    return status;
}

static const char *get_env(const char *name) {
    return getenv(name);
}

static const xdev_host_services_t g_host = {
    .size = sizeof(xdev_host_services_t),
    .abi_major = XDEV_BACKEND_ABI_MAJOR,
    .abi_minor = XDEV_BACKEND_ABI_MINOR,
    .set_error = set_error,
    .set_error_v = set_error_v,
    .set_vendor_error = set_vendor_error,
    .get_env = get_env,
};

static const xdev_backend_api_t *g_api;
static xdev_backend_device_t *g_dev;
static xdev_image_format_t g_format; /* what compile_target said */

/* ------------------------------------------------------------ sources */
static const char k_source[] =
    "#include <xdev/kernel_lang.h>\n"
    "XDEV_KERNEL(rtc_saxpy, XDEV_PARAM(long, n), XDEV_PARAM(float, a), XDEV_PTR(const float, x),\n"
    "            XDEV_PTR(float, y)) {\n"
    "    long i = xdev_global_id(0);\n"
    "    if (i < n) y[i] = a * x[i] + y[i] + RTC_BIAS;\n"
    "}\n"
    "XDEV_KERNEL_SYNC(rtc_sum, XDEV_PARAM(int, n), XDEV_PTR(const int, x),\n"
    "                 XDEV_PTR(unsigned long long, total)) {\n"
    "    XDEV_SHARED(int, part, 256);\n"
    "    int t = xdev_local_id(0);\n"
    "    long i = xdev_global_id(0);\n"
    "    part[t] = i < n ? x[i] : 0;\n"
    "    xdev_barrier();\n"
    "    for (int s = xdev_local_size(0) / 2; s > 0; s /= 2) {\n"
    "        if (t < s) part[t] += part[t + s];\n"
    "        xdev_barrier();\n"
    "    }\n"
    "    if (t == 0) xdev_atomic_add_u64(total, (unsigned long long)part[0]);\n"
    "}\n"
    "XDEV_KERNEL(rtc_half, XDEV_PARAM(int, n), XDEV_PTR(const float, x), XDEV_PTR(uint16_t, h),\n"
    "            XDEV_PTR(float, back)) {\n"
    "    long i = xdev_global_id(0);\n"
    "    if (i < n) {\n"
    "        xdev_store_f16(&h[i], x[i]);\n"
    "        back[i] = xdev_load_f16(&h[i]);\n"
    "    }\n"
    "}\n";

static const char k_broken[] = "#include <xdev/kernel_lang.h>\n"
                               "XDEV_KERNEL(rtc_broken, XDEV_PTR(float, y)) {\n"
                               "    y[0] = no_such_name;\n"
                               "}\n";

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *b = malloc((size_t)n + 1);
    CHECK(b != NULL && fread(b, 1, (size_t)n, f) == (size_t)n, "cannot read %s", path);
    b[n] = '\0';
    fclose(f);
    return b;
}

static xdev_status_t compile(const char *source, const char *name, const char *const *opts,
                             int nopts, xdev_compiled_t *out) {
    xdev_compile_desc_t d = {
        .size = sizeof d,
        .source = source,
        .name = name,
        .options = opts,
        .noptions = nopts,
        .include_dir = XG_SOURCE_DIR "/include",
        .work_dir = "/tmp",
    };
    memset(out, 0, sizeof *out);
    out->size = sizeof *out;
    g_msg[0] = '\0';
    return g_api->kernel->compile(g_dev, &d, out);
}

/* ------------------------------------------------------------ device helpers */
static void *dev_alloc(size_t bytes) {
    void *p = NULL;
    OK(g_api->memory->malloc(g_dev, bytes, &p));
    return p;
}

static void copy(void *dst, const void *src, size_t bytes, xdev_copy_kind_t kind, void *stream) {
    xdev_copy_desc_t c = {.size = sizeof c, .dst = dst, .src = src, .bytes = bytes, .kind = kind};
    if (kind == XDEV_COPY_HOST_TO_DEVICE) c.dst_device = g_dev;
    if (kind == XDEV_COPY_DEVICE_TO_HOST) c.src_device = g_dev;
    OK(g_api->memory->memcpy_async(g_dev, &c, stream));
    OK(g_api->stream->synchronize(g_dev, stream));
}

static void launch(void *fn, const char *name, unsigned grid, unsigned block, int nargs,
                   void *const *args, const size_t *sizes, void *stream) {
    xdev_launch_desc_t l = {.size = sizeof l,
                            .function = fn,
                            .grid = {grid, 1, 1},
                            .block = {block, 1, 1},
                            .nargs = nargs,
                            .args = args,
                            .arg_sizes = sizes,
                            .name = name};
    OK(g_api->kernel->launch(g_dev, &l, stream));
}

static void *get_function(void *module, const char *name, xdev_kernel_attributes_t *attrs) {
    void *fn = NULL;
    memset(attrs, 0, sizeof *attrs);
    attrs->nparams = -1;
    OK(g_api->kernel->get_function(g_dev, module, name, &fn, attrs));
    return fn;
}

/* ------------------------------------------------------------ checks */
static void check_run(void *stream) {
    static const char *const opts[] = {"-DRTC_BIAS=0.5f"};
    xdev_compiled_t img;
    OK(compile(k_source, "rtc_smoke", opts, 1, &img));
    CHECK((img.format == g_format || img.format == XDEV_IMAGE_PTX) && img.data != NULL &&
              img.data_size > 0,
          "format %d, %zu bytes", (int)img.format, img.data_size);
    printf("compiled rtc_smoke: format %d, %zu bytes, log \"%s\"\n", (int)img.format, img.data_size,
           img.log != NULL ? img.log : "(none)");
    xdev_kernel_image_t image = {img.format, img.data, img.data_size};
    void *module = NULL;
    OK(g_api->kernel->module_load(g_dev, &image, &module));
    free(img.data);
    free(img.log);

    enum { N = 1000 };
    float hx[N], hy[N], hback[N];
    int hi[N];
    uint16_t hh[N];
    unsigned long long want_sum = 0;
    for (int i = 0; i < N; i++) {
        hx[i] = (float)i;
        hy[i] = 1.0f;
        hi[i] = i % 7;
        want_sum += (unsigned long long)(i % 7);
    }
    float *dx = dev_alloc(sizeof hx), *dy = dev_alloc(sizeof hy), *dback = dev_alloc(sizeof hback);
    int *di = dev_alloc(sizeof hi);
    uint16_t *dh = dev_alloc(sizeof hh);
    unsigned long long *dsum = dev_alloc(sizeof(unsigned long long)), zero = 0, sum = 0;
    copy(dx, hx, sizeof hx, XDEV_COPY_HOST_TO_DEVICE, stream);
    copy(dy, hy, sizeof hy, XDEV_COPY_HOST_TO_DEVICE, stream);
    copy(di, hi, sizeof hi, XDEV_COPY_HOST_TO_DEVICE, stream);
    copy(dsum, &zero, sizeof zero, XDEV_COPY_HOST_TO_DEVICE, stream);

    xdev_kernel_attributes_t attrs;
    void *saxpy = get_function(module, "rtc_saxpy", &attrs);
    CHECK(attrs.nparams == 4 || attrs.nparams == -1, "rtc_saxpy: %d parameters", attrs.nparams);
    long n = N;
    float a = 2.0f;
    void *saxpy_args[] = {&n, &a, &dx, &dy};
    size_t saxpy_sizes[] = {sizeof n, sizeof a, sizeof dx, sizeof dy};
    launch(saxpy, "rtc_saxpy", (N + 127) / 128, 128, 4, saxpy_args, saxpy_sizes, stream);
    copy(hy, dy, sizeof hy, XDEV_COPY_DEVICE_TO_HOST, stream);
    for (int i = 0; i < N; i++)
        CHECK(hy[i] == 2.0f * (float)i + 1.5f, "y[%d] = %g, want %g", i, hy[i], 2.0 * i + 1.5);

    void *sum_fn = get_function(module, "rtc_sum", &attrs);
    CHECK(attrs.static_shared_bytes >= 256 * sizeof(int), "rtc_sum: %zu static shared bytes",
          attrs.static_shared_bytes);
    int ni = N;
    void *sum_args[] = {&ni, &di, &dsum};
    size_t sum_sizes[] = {sizeof ni, sizeof di, sizeof dsum};
    launch(sum_fn, "rtc_sum", (N + 255) / 256, 256, 3, sum_args, sum_sizes, stream);
    copy(&sum, dsum, sizeof sum, XDEV_COPY_DEVICE_TO_HOST, stream);
    CHECK(sum == want_sum, "sum %llu, want %llu", sum, want_sum);

    for (int i = 0; i < N; i++)
        hx[i] = (float)i * 0.37f - 120.0f + 1e-3f * (float)(i % 13);
    copy(dx, hx, sizeof hx, XDEV_COPY_HOST_TO_DEVICE, stream);
    void *half_fn = get_function(module, "rtc_half", &attrs);
    void *half_args[] = {&ni, &dx, &dh, &dback};
    size_t half_sizes[] = {sizeof ni, sizeof dx, sizeof dh, sizeof dback};
    launch(half_fn, "rtc_half", (N + 127) / 128, 128, 4, half_args, half_sizes, stream);
    copy(hh, dh, sizeof hh, XDEV_COPY_DEVICE_TO_HOST, stream);
    copy(hback, dback, sizeof hback, XDEV_COPY_DEVICE_TO_HOST, stream);
    for (int i = 0; i < N; i++) {
        uint16_t want = xdev_f32_to_f16(hx[i]);
        CHECK(hh[i] == want, "f16(%g) = 0x%04x, want 0x%04x", hx[i], hh[i], want);
        CHECK(hback[i] == xdev_f16_to_f32(want), "back[%d] = %g", i, hback[i]);
    }
    void *ptrs[] = {dx, dy, dback, di, dh, dsum};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++)
        OK(g_api->memory->free(g_dev, ptrs[i]));
    OK(g_api->kernel->module_unload(g_dev, module));
    printf("rtc_smoke kernels: saxpy, block sum with barriers and a u64 atomic, f16: ok\n");
}

/* The conformance suite's kernel file: every dialect feature compiles. */
static void check_conformance_file(void) {
    char *src = slurp(XG_SOURCE_DIR "/tests/conformance/kernels/conformance_kernels.c");
    xdev_compiled_t img;
    OK(compile(src, "conformance_kernels", NULL, 0, &img));
    free(src);
    xdev_kernel_image_t image = {img.format, img.data, img.data_size};
    void *module = NULL;
    OK(g_api->kernel->module_load(g_dev, &image, &module));
    static const char *const names[] = {
        "saxpy",         "empty",
        "block_sum",     "block_sum_fiber",
        "block_reverse", "block_reverse_fiber",
        "atomics",       "stencil",
        "ids3d",         "ids3d_block",
        "arg_types",     "half_round_trip",
        "trap_if",       "undeclared_barrier",
        "slow_fill",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        xdev_kernel_attributes_t attrs;
        (void)get_function(module, names[i], &attrs);
    }
    OK(g_api->kernel->module_unload(g_dev, module));
    printf("conformance_kernels.c: %zu bytes of image, %zu kernels found\n", img.data_size,
           sizeof names / sizeof names[0]);
    free(img.data);
    free(img.log);
}

static void check_failures(void) {
    xdev_compiled_t img;
    xdev_status_t st = compile(k_broken, "rtc_broken", NULL, 0, &img);
    CHECK(st == XDEV_ERROR_COMPILE, "status %d: %s", (int)st, g_msg);
    CHECK(strstr(g_msg, "no_such_name") != NULL && strstr(g_msg, "rtc_broken") != NULL,
          "message: %s", g_msg);
    CHECK(img.log != NULL && strstr(img.log, "no_such_name") != NULL, "log: %s",
          img.log != NULL ? img.log : "(null)");
    CHECK(img.data == NULL, "an image from broken source");
    printf("broken source: %s\n", g_msg);
    free(img.log);

    static const char *const bad[] = {"--no-such-option"};
    st = compile(k_source, "rtc_smoke", bad, 1, &img);
    CHECK(st == XDEV_ERROR_COMPILE, "status %d: %s", (int)st, g_msg);
    CHECK(strstr(g_msg, "no-such-option") != NULL, "message: %s", g_msg);
    printf("bad option: %s\n", g_msg);
    free(img.log);
}

typedef struct {
    xdev_status_t st;
    size_t bytes;
    char msg[512];
} job_t;

static void *compile_job(void *arg) {
    job_t *job = arg;
    static const char *const opts[] = {"-DRTC_BIAS=0.25f"};
    xdev_compiled_t img;
    job->st = compile(k_source, "rtc_thread", opts, 1, &img);
    job->bytes = img.data_size;
    snprintf(job->msg, sizeof job->msg, "%.500s", g_msg);
    free(img.data);
    free(img.log);
    return NULL;
}

static void check_threads(void) {
    enum { T = 4 };
    pthread_t th[T];
    job_t jobs[T];
    for (int i = 0; i < T; i++)
        CHECK(pthread_create(&th[i], NULL, compile_job, &jobs[i]) == 0, "pthread_create");
    for (int i = 0; i < T; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < T; i++) {
        CHECK(jobs[i].st == XDEV_SUCCESS, "thread %d: %s", i, jobs[i].msg);
        CHECK(jobs[i].bytes == jobs[0].bytes, "thread %d: %zu bytes, thread 0 %zu", i,
              jobs[i].bytes, jobs[0].bytes);
    }
    printf("%d threads compiled at once: %zu bytes each\n", T, jobs[0].bytes);
}

/* Which NVRTC the process mapped (the search's answer). */
static void print_mapped_nvrtc(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    if (f == NULL) return;
    char line[4096], last[4096] = "";
    while (fgets(line, sizeof line, f) != NULL) {
        char *path = strchr(line, '/');
        if (path == NULL || strstr(path, "nvrtc") == NULL || strcmp(path, last) == 0) continue;
        snprintf(last, sizeof last, "%s", path);
        printf("mapped: %s", path);
    }
    fclose(f);
}

int main(int argc, char **argv) {
    bool missing = argc > 1 && strcmp(argv[1], "missing") == 0;
    void *h = dlopen(XG_CUDA_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    CHECK(h != NULL, "%s", dlerror());
    xdev_backend_entry_fn entry;
    *(void **)(&entry) = dlsym(h, XDEV_BACKEND_ENTRY_SYMBOL);
    CHECK(entry != NULL, "%s", dlerror());
    g_api = entry();
    if (g_api->init(&g_host) != XDEV_SUCCESS) {
        printf("skipped: the CUDA plugin cannot be used: %s\n", g_msg);
        return 77;
    }
    int count = 0;
    OK(g_api->device->count(&count));
    if (count == 0) {
        printf("skipped: no CUDA device\n");
        return 77;
    }
    OK(g_api->device->open(0, &g_dev));
    const xdev_kernel_vtable_t *k = g_api->kernel;
    CHECK(k != NULL && XDEV_BACKEND_SLOT(k, compile_target) != NULL &&
              XDEV_BACKEND_SLOT(k, compile) != NULL,
          "the CUDA plugin has no compile slots (built without nvrtc.h?)");

    char id[256];
    xdev_image_format_t format = XDEV_IMAGE_PTX;
    g_msg[0] = '\0';
    xdev_status_t st = k->compile_target(g_dev, id, sizeof id, &format);
    if (missing) {
        CHECK(st == XDEV_ERROR_NOT_SUPPORTED && strstr(g_msg, "XDEV_NVRTC_PATH") != NULL,
              "status %d: %s", (int)st, g_msg);
        printf("compile_target with XDEV_NVRTC_PATH=%s: %s\n", getenv("XDEV_NVRTC_PATH"), g_msg);
        xdev_compiled_t img;
        st = compile(k_source, "rtc_smoke", NULL, 0, &img);
        CHECK(st == XDEV_ERROR_NOT_SUPPORTED && strstr(g_msg, "XDEV_NVRTC_PATH") != NULL,
              "status %d: %s", (int)st, g_msg);
        CHECK(img.data == NULL && img.log == NULL, "output without a compiler");
        return 0;
    }
    if (st == XDEV_ERROR_NOT_SUPPORTED) {
        printf("skipped: %s\n", g_msg);
        return 77;
    }
    OK(st);
    printf("compile_target: \"%s\", format %s\n", id,
           format == XDEV_IMAGE_CUBIN ? "cubin"
           : format == XDEV_IMAGE_PTX ? "PTX"
                                      : "other");
    /* "nvrtc-file <path> <size> <mtime> sm_XX" (NVRTC named by its file, not
     * loaded), or "nvrtc <version> sm_XX" where only the loader finds it. */
    CHECK((strncmp(id, "nvrtc-file /", 12) == 0 || strncmp(id, "nvrtc ", 6) == 0) &&
              strstr(id, " sm_") != NULL,
          "target line %s", id);
    CHECK(format == XDEV_IMAGE_CUBIN || format == XDEV_IMAGE_PTX, "format %d", (int)format);
    g_format = format;

    void *stream = NULL;
    OK(g_api->stream->get_default(g_dev, &stream));
    check_run(stream);
    check_conformance_file();
    check_failures();
    check_threads();
    print_mapped_nvrtc();
    if (g_api->at_exit != NULL) g_api->at_exit();
    printf("rtc_smoke: ok\n");
    return 0;
}
