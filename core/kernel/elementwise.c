/* SPDX-License-Identifier: Apache-2.0 */
/* elementwise.c - xdev_elementwise: an element-wise expression made into a
 * kernel, compiled at run time, cached and launched (torch's jiterator idea,
 * on every backend).
 *
 * The expression is checked to be one C expression (no statements, comments,
 * strings or preprocessor), wrapped in a dialect kernel over in0 .. in7 and
 * compiled with xdev_module_compile (so it lands in the on-disk cache too).
 * This process keeps each compiled kernel by (expression, dtype, inputs,
 * device): a repeat costs a lookup and a launch. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error_internal.h"
#include "kernel/kernel_internal.h"
#include "alloc/alloc_lookup.h"
#include "runtime/device_record.h"
#include "runtime/stream_internal.h"
#include "xdev/dtype.h"

#define EW_MAX_INPUTS 8
#define EW_MAX_EXPR 1024

typedef struct ew_entry {
    struct ew_entry *next;
    xdev_dtype_t dtype;
    int ninputs;
    xdev_device_t device;
    xdev_module_t module;
    xdev_kernel_t kernel;
    char expr[];
} ew_entry_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static ew_entry_t *g_entries;

static const char *c_type(xdev_dtype_t t) {
    switch (t) {
    case XDEV_DTYPE_F32:
        return "float";
    case XDEV_DTYPE_F64:
        return "double";
    case XDEV_DTYPE_I32:
        return "int";
    case XDEV_DTYPE_I64:
        return "long long";
    default:
        return NULL;
    }
}

/* Bytes and name of an element of the four dtypes c_type accepts (no call
 * up into math/ for them). */
static size_t elem_size(xdev_dtype_t t) {
    return t == XDEV_DTYPE_F32 || t == XDEV_DTYPE_I32 ? 4u : 8u;
}
static const char *elem_name(xdev_dtype_t t) {
    return t == XDEV_DTYPE_F32   ? "f32"
           : t == XDEV_DTYPE_F64 ? "f64"
           : t == XDEV_DTYPE_I32 ? "i32"
                                 : "i64";
}

/* One C expression: no ';', braces, '#', quotes or comments; parentheses
 * balanced. */
static xdev_status_t check_expression(const char *e) {
    size_t n = strlen(e);
    if (n == 0 || n > EW_MAX_EXPR)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "expression of %zu bytes: 1 to %d", n,
                         EW_MAX_EXPR);
    int depth = 0;
    for (size_t i = 0; i < n; i++) {
        char c = e[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  strchr("_ .+-*/%()<>=!&|^~?:,\t", c) != NULL;
        if (!ok || (c == '/' && (e[i + 1] == '/' || e[i + 1] == '*')))
            return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "expression '%.200s': '%c' at %zu is not allowed (one C expression "
                             "over in0 .. in7: no ';', braces, quotes, '#' or comments)",
                             e, c, i);
        depth += c == '(' ? 1 : c == ')' ? -1 : 0;
        if (depth < 0) break;
    }
    if (depth != 0)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "expression '%.200s': unbalanced parentheses",
                         e);
    return XDEV_SUCCESS;
}

/* The device an operand lives on: device memory xdev allocated, holding the
 * `count` elements of `dtype` the kernel reads or writes from p (the bytes
 * requested for its allocation, as every pointer + length call checks:
 * xdev/memory.h). Without the extent check a count past the end would read
 * or overwrite the next allocation with a success status. */
static xdev_status_t operand_device(const void *p, const char *what, size_t count,
                                    xdev_dtype_t dtype, xdev_device_t *dev, const char **be) {
    xdev_live_ref_t ref;
    xdev_status_t st = xdev_live_lookup(p, what, &ref);
    if (st != XDEV_SUCCESS) return st;
    if (!ref.known || ref.e.kind != XDEV_MEMORY_DEVICE)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "%s (%p) is not device memory xdev allocated (xdev_malloc)", what, p);
    char arg[96];
    snprintf(arg, sizeof arg, "%s (count = %zu %s elements)", what, count, elem_name(dtype));
    /* count <= 2^39 (checked by the caller): count * 8 does not overflow */
    st = xdev_live_check_extent(&ref, p, count * elem_size(dtype), arg);
    if (st != XDEV_SUCCESS) return st;
    *dev = (xdev_device_t){ref.e.be->type, ref.e.index};
    *be = ref.e.be->name;
    return XDEV_SUCCESS;
}

/* The kernel for the expression, compiled now or found. */
static xdev_status_t get_kernel(const char *expr, xdev_dtype_t dtype, int ninputs,
                                xdev_device_t dev, xdev_kernel_t *out) {
    pthread_mutex_lock(&g_lock);
    for (ew_entry_t *e = g_entries; e != NULL; e = e->next)
        if (e->dtype == dtype && e->ninputs == ninputs && e->device.type == dev.type &&
            e->device.index == dev.index && strcmp(e->expr, expr) == 0) {
            *out = e->kernel;
            pthread_mutex_unlock(&g_lock);
            return XDEV_SUCCESS;
        }
    pthread_mutex_unlock(&g_lock);
    const char *t = c_type(dtype);
    char src[EW_MAX_EXPR + 2048];
    int len = snprintf(src, sizeof src,
                       "#include <xdev/kernel_lang.h>\n"
                       "XDEV_KERNEL(xdev_elementwise_kernel, XDEV_PARAM(long, n)");
    for (int i = 0; i < ninputs; i++)
        len += snprintf(src + len, sizeof src - (size_t)len, ", XDEV_PTR(const %s, p%d)", t, i);
    len += snprintf(src + len, sizeof src - (size_t)len,
                    ", XDEV_PTR(%s, out)) {\n    long i = xdev_global_id(0);\n"
                    "    if (i >= n) return;\n",
                    t);
    for (int i = 0; i < ninputs; i++)
        len += snprintf(src + len, sizeof src - (size_t)len, "    %s in%d = p%d[i];\n", t, i, i);
    snprintf(src + len, sizeof src - (size_t)len, "    out[i] = (%s)(%s);\n}\n", t, expr);
    xdev_compile_options_t o = {.size = sizeof o, .name = "elementwise"};
    xdev_module_t m = NULL;
    xdev_status_t st = xdev_module_compile(dev, src, &o, &m);
    if (st != XDEV_SUCCESS) { /* the message is xdev_elementwise's: drop the inner call's name */
        char why[2048];
        const char *msg = xdev_last_error();
        const char *prefix = "xdev_module_compile: ";
        snprintf(why, sizeof why, "%s",
                 strncmp(msg, prefix, strlen(prefix)) == 0 ? msg + strlen(prefix) : msg);
        return XDEV_FAIL(st, "%s", why);
    }
    xdev_kernel_t k = NULL;
    if (st == XDEV_SUCCESS) st = xdev_module_get_kernel(m, "xdev_elementwise_kernel", &k);
    ew_entry_t *e = st == XDEV_SUCCESS ? malloc(sizeof *e + strlen(expr) + 1) : NULL;
    if (st == XDEV_SUCCESS && e == NULL)
        st = XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for the kernel cache");
    if (st != XDEV_SUCCESS) {
        if (m != NULL) {
            xdev_error_state_t saved;
            xdev_core_error_save(&saved);
            (void)xdev_module_unload(m);
            xdev_core_error_restore(&saved);
        }
        return st;
    }
    *e = (ew_entry_t){.dtype = dtype, .ninputs = ninputs, .device = dev, .module = m, .kernel = k};
    strcpy(e->expr, expr);
    pthread_mutex_lock(&g_lock); /* another thread may have made it too: both work */
    e->next = g_entries;
    g_entries = e;
    pthread_mutex_unlock(&g_lock);
    *out = k;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_elementwise_cache_clear(void) {
    pthread_mutex_lock(&g_lock);
    ew_entry_t *all = g_entries;
    g_entries = NULL;
    pthread_mutex_unlock(&g_lock);
    xdev_status_t first = XDEV_SUCCESS;
    char why[1024] = "";
    for (ew_entry_t *e = all, *next; e != NULL; e = next) {
        next = e->next;
        xdev_status_t st = xdev_module_unload(e->module);
        if (st != XDEV_SUCCESS && first == XDEV_SUCCESS) {
            first = st;
            snprintf(why, sizeof why, "%s", xdev_last_error());
        }
        free(e);
    }
    if (first != XDEV_SUCCESS) return XDEV_API_FAIL(first, "%s", why);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_elementwise(const char *expression, xdev_dtype_t dtype, int ninputs,
                               const void *const *inputs, void *out, size_t count,
                               xdev_stream_t stream) {
    XDEV_REQUIRE_ARG(expression);
    XDEV_REQUIRE_ARG(out);
    XDEV_CHECK(xdev_core_ensure_init());
    XDEV_CHECK(check_expression(expression));
    if (c_type(dtype) == NULL)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "dtype %d: xdev_elementwise takes f32, f64, i32 or i64", (int)dtype);
    if (ninputs < 0 || ninputs > EW_MAX_INPUTS || (ninputs > 0 && inputs == NULL))
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "ninputs = %d with inputs %p: 0 .. %d inputs", ninputs,
                             (const void *)inputs, EW_MAX_INPUTS);
    if (count > (size_t)2147483647 * 256)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "count %zu is more than one launch covers",
                             count);
    xdev_device_t dev = {0};
    const char *be = "", *ibe = "";
    XDEV_CHECK(operand_device(out, "out", count, dtype, &dev, &be));
    for (int i = 0; i < ninputs; i++) {
        char what[32];
        snprintf(what, sizeof what, "inputs[%d]", i);
        xdev_device_t d = {0};
        XDEV_CHECK(operand_device(inputs[i], what, count, dtype, &d, &ibe));
        if (d.type != dev.type || d.index != dev.index)
            return XDEV_API_FAIL(XDEV_ERROR_CROSS_DEVICE,
                                 "inputs[%d] is memory of %s:%d, out of %s:%d: the operands of an "
                                 "element-wise kernel share one device",
                                 i, ibe, d.index, be, dev.index);
    }
    if (count == 0) return XDEV_SUCCESS;
    xdev_kernel_t k;
    XDEV_CHECK(get_kernel(expression, dtype, ninputs, dev, &k));
    long n = (long)count;
    xdev_arg_t args[EW_MAX_INPUTS + 2];
    args[0] = (xdev_arg_t){&n, sizeof n};
    for (int i = 0; i < ninputs; i++)
        args[1 + i] = (xdev_arg_t){&inputs[i], sizeof inputs[i]};
    args[1 + ninputs] = (xdev_arg_t){&out, sizeof out};
    xdev_launch_config_t cfg = {
        .grid = {(unsigned)((count + 255) / 256), 1, 1}, .block = {256, 1, 1}, .stream = stream};
    /* The operands as the sanitizer and observers see them (a kernel
     * compiled at run time has no signature for launch.c to go by). */
    size_t bytes = count * elem_size(dtype);
    xdev_op_use_t uses[EW_MAX_INPUTS + 1];
    for (int i = 0; i < ninputs; i++)
        uses[i] = (xdev_op_use_t){inputs[i], bytes, XDEV_OP_READ, 0};
    uses[ninputs] = (xdev_op_use_t){out, bytes, XDEV_OP_WRITE, 0};
    const xdev_launch_as_t as = {XDEV_OP_ELEMENTWISE, "xdev_elementwise", uses, ninputs + 1};
    xdev_status_t st = xdev_core_launch_kernel(k, &cfg, args, ninputs + 2, &as);
    /* the launch's failure names the launch, as when this called xdev_launch_kernel */
    if (st != XDEV_SUCCESS) return xdev_core_blame(st, "xdev_launch_kernel");
    return XDEV_SUCCESS;
}
