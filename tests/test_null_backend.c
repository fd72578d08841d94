/* SPDX-License-Identifier: Apache-2.0 */
/* test_null_backend.c - the null backend skeleton (backends/null) stays an
 * ABI 3 backend whose optional slots are NULL, and a backend linked into the
 * process registers through the public xdev_backend_register like the
 * shipped ones.
 *   abi       every REQUIRED slot set, every OPTIONAL one NULL (from the slot
 *             list); its tiny host-memory device works: a fill, a copy and
 *             a host function run in order on a stream, an event follows
 *   register  the skeleton built as "hip" replaces the shipped hip plugin
 *             factory (XDEV_BACKEND_REPLACE) before initialisation: it loads,
 *             built in, 1 device; a new name gets type 3;
 *             late, malformed and duplicate registrations are refused;
 *             without memory.managed slots, xdev_malloc_managed is
 *             NOT_SUPPORTED naming the backend
 *   half_group a backend registered in process whose table sets half of a
 *             slot group (memory.malloc_async without free_async) is
 *             refused when it loads, naming the group and the missing slot */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xdev/backend.h"
#include "xt.h"

static char g_msg[512];
static xdev_status_t capture_v(xdev_status_t st, const char *fmt, va_list ap) {
    vsnprintf(g_msg, sizeof g_msg, fmt, ap);
    return st;
}

static const xdev_backend_api_t *load(const char *path) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(h != NULL, "dlopen %s: %s", path, dlerror());
    xdev_backend_entry_fn entry;
    *(void **)&entry = dlsym(h, XDEV_BACKEND_ENTRY_SYMBOL);
    ck_assert_ptr_nonnull(entry);
    return entry();
}

/* Each slot of the skeleton's tables is set exactly when the list marks it
 * REQUIRED: optional means NULL (the core's fallbacks then apply). */
#define CHECK_SLOT(table, slot, need, kind, since, p, a)                                           \
    ck_assert_msg((XDEV_BACKEND_SLOT(api->table, slot) != NULL) ==                                 \
                      (strcmp(#need, "REQUIRED") == 0),                                            \
                  "null backend: %s.%s is %s but the list says %s", #table, #slot,                 \
                  XDEV_BACKEND_SLOT(api->table, slot) ? "set" : "NULL", #need);
#define CHECK_TABLE(table, list) list(CHECK_SLOT)

static const char *get_env(const char *name) {
    return getenv(name);
}

static void done(void *arg) {
    *(int *)arg = 1;
}

START_TEST(abi) {
    const xdev_backend_api_t *api = load(XT_NULL_BACKEND);
    ck_assert_uint_eq(api->abi_major, XDEV_BACKEND_ABI_MAJOR);
    ck_assert_uint_eq(api->size, sizeof *api);
    ck_assert_str_eq(api->name, "null");
    ck_assert_int_eq(api->type, XDEV_DEVICE_TYPE_ANY);
    ck_assert_uint_eq(api->flags, XDEV_BACKEND_HOST_MEMORY);
    ck_assert_ptr_nonnull(api->init);
    ck_assert_ptr_nonnull(api->at_exit);
    XDEV_BACKEND_TABLES(CHECK_TABLE)
    /* a tiny real device: one device, asynchronous streams, host memory */
    xdev_host_services_t host = {.size = sizeof host,
                                 .abi_major = XDEV_BACKEND_ABI_MAJOR,
                                 .abi_minor = XDEV_BACKEND_ABI_MINOR,
                                 .set_error_v = capture_v,
                                 .get_env = get_env};
    ck_assert_int_eq(api->init(&host), XDEV_SUCCESS);
    int n = -1;
    ck_assert_int_eq(api->device->count(&n), XDEV_SUCCESS);
    ck_assert_int_eq(n, 1);
    xdev_backend_device_t *dev = NULL;
    ck_assert_int_eq(api->device->open(0, &dev), XDEV_SUCCESS);
    void *s = NULL, *e = NULL, *a = NULL, *b = NULL;
    ck_assert_int_eq(api->stream->create(dev, 0, &s), XDEV_SUCCESS);
    ck_assert_int_eq(api->event->create(dev, 0, &e), XDEV_SUCCESS);
    ck_assert_int_eq(api->memory->malloc(dev, 4096, &a), XDEV_SUCCESS);
    ck_assert_int_eq(api->memory->malloc(dev, 4096, &b), XDEV_SUCCESS);
    ck_assert_int_eq(api->memory->memset_async(dev, a, 7, 4096, s), XDEV_SUCCESS);
    xdev_copy_desc_t c = {.size = sizeof c,
                          .dst = b,
                          .src = a,
                          .bytes = 4096,
                          .kind = XDEV_COPY_DEVICE_TO_DEVICE,
                          .dst_device = dev,
                          .src_device = dev};
    ck_assert_int_eq(api->memory->memcpy_async(dev, &c, s), XDEV_SUCCESS);
    int ran = 0;
    ck_assert_int_eq(api->stream->launch_host_func(dev, s, done, &ran), XDEV_SUCCESS);
    ck_assert_int_eq(api->event->record(dev, e, s), XDEV_SUCCESS);
    ck_assert_int_eq(api->event->synchronize(dev, e), XDEV_SUCCESS);
    ck_assert_int_eq(api->event->query(dev, e), XDEV_SUCCESS);
    ck_assert_int_eq(ran, 1);
    ck_assert_int_eq(((unsigned char *)b)[4095], 7);
    ck_assert_int_eq(api->stream->query(dev, s), XDEV_SUCCESS);
    ck_assert_int_eq(api->memory->free(dev, a), XDEV_SUCCESS);
    ck_assert_int_eq(api->memory->free(dev, b), XDEV_SUCCESS);
    ck_assert_int_eq(api->event->destroy(dev, e), XDEV_SUCCESS);
    ck_assert_int_eq(api->stream->destroy(dev, s), XDEV_SUCCESS);
    api->at_exit();
}
END_TEST

START_TEST(register_in_process) {
    xdev_backend_factory_t f = {.size = sizeof f,
                                .name = "hip",
                                .type = XDEV_DEVICE_HIP,
                                .entry = (xdev_backend_entry_fn)NULL,
                                .flags = 0};
    const xdev_backend_api_t *api = load(XT_NULL_BACKEND_AS_HIP);
    (void)api;
    void *h = dlopen(XT_NULL_BACKEND_AS_HIP, RTLD_NOW | RTLD_LOCAL);
    *(void **)&f.entry = dlsym(h, XDEV_BACKEND_ENTRY_SYMBOL);
    /* malformed factories */
    XT_STATUS(XDEV_ERROR_INVALID_VALUE, xdev_backend_register(NULL));
    xdev_backend_factory_t bad = f;
    bad.size = 0;
    XT_STATUS(XDEV_ERROR_INVALID_VALUE, xdev_backend_register(&bad));
    bad = f;
    bad.name = "h ip";
    XT_STATUS(XDEV_ERROR_INVALID_VALUE, xdev_backend_register(&bad));
    bad = f;
    bad.type = XDEV_MAX_DEVICE_TYPES;
    XT_STATUS(XDEV_ERROR_INVALID_VALUE, xdev_backend_register(&bad));
    bad = f;
    bad.name = "cpu"; /* a shipped name, another type */
    XT_STATUS(XDEV_ERROR_INVALID_VALUE, xdev_backend_register(&bad));
    /* a new name cannot take a shipped type ("bar" as hip replaced hip) */
    bad = f;
    bad.name = "bar";
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_backend_register(&bad), "bar", "XDEV_DEVICE_TYPE_ANY");
    /* the shipped name without XDEV_BACKEND_REPLACE: refused, naming the flag */
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_backend_register(&f), "hip", "XDEV_BACKEND_REPLACE");
    /* a new name is given the first free type; the same name twice names both */
    xdev_backend_factory_t foo = f;
    foo.name = "foo";
    foo.type = XDEV_DEVICE_TYPE_ANY;
    XT_OK(xdev_backend_register(&foo));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_backend_register(&foo), "'foo' is already registered",
           "device type 3");
    /* replaces the shipped (DEFAULT) hip plugin factory; a second is refused */
    f.flags = XDEV_BACKEND_REPLACE;
    XT_OK(xdev_backend_register(&f));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_backend_register(&f), "already registered");
    xdev_device_type_t t;
    XT_OK(xdev_device_type_find("foo", &t));
    ck_assert_int_eq(t, 3);
    ck_assert_str_eq(xdev_device_type_name(t), "foo");
    xdev_device_t d;
    XT_OK(xdev_device_parse("foo:0", &d));
    ck_assert_int_eq(d.type, 3);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_device_type_find("nope", &t), "nope", "registered");
    xdev_backend_info_t info;
    XT_OK(xdev_backend_get_info(XDEV_DEVICE_HIP, &info));
    ck_assert_int_eq(info.state, XDEV_BACKEND_LOADED);
    ck_assert_int_eq(info.device_count, 1); /* the skeleton's host-memory device */
    ck_assert_str_eq(info.path, "built-in");
    ck_assert_uint_eq(info.abi_major, XDEV_BACKEND_ABI_MAJOR);
    /* initialised now: registration is closed */
    f.name = "hip";
    XT_STATUS(XDEV_ERROR_INVALID_VALUE, xdev_backend_register(&f));
    ck_assert_msg(strstr(xdev_last_error(), "already initialised"), "%s", xdev_last_error());
    int count = -1;
    XT_OK(xdev_device_count(XDEV_DEVICE_HIP, &count));
    ck_assert_int_eq(count, 1);
    /* no memory.managed slots: managed memory is refused, naming the backend */
    void *m = (void *)1;
    XT_ERR(XDEV_ERROR_NOT_SUPPORTED,
           xdev_malloc_managed((xdev_device_t){XDEV_DEVICE_HIP, 0}, &m, 64, 0),
           "xdev_malloc_managed", "the hip backend has no managed memory", "malloc_managed");
    ck_assert_ptr_null(m);
}
END_TEST

/* A plugin xdev never heard of, found by name on XDEV_PLUGIN_PATH, that
 * says it is an accelerator (api.flags): it gets a type, its devices are
 * named by it, and XDEV_VISIBLE_DEVICES=3,1 selects and renumbers them as it
 * does CUDA's (the ctest entry sets NULL_BACKEND_DEVICES=4). */
START_TEST(by_name) {
    xdev_device_type_t t;
    XT_OK(xdev_device_type_find("nullacc", &t));
    ck_assert_int_ge(t, 3);
    xdev_device_type_t def;
    XT_OK(xdev_default_device_type(&def));
    ck_assert_int_eq(def, t);
    int n = 0;
    XT_OK(xdev_device_count(t, &n));
    ck_assert_int_eq(n, 2);
    xdev_device_properties_t p;
    xdev_device_t d;
    XT_OK(xdev_device_parse("nullacc:0", &d));
    XT_OK(xdev_get_device_properties(d, &p));
    ck_assert_int_eq(p.physical_index, 3);
    XT_OK(xdev_device_parse("nullacc:1", &d));
    XT_OK(xdev_get_device_properties(d, &p));
    ck_assert_int_eq(p.physical_index, 1);
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_set_device((xdev_device_t){t, 2}), "nullacc:2");
    /* its memory works: a round trip through nullacc:1 */
    int host[256], back[256];
    for (int i = 0; i < 256; i++)
        host[i] = i * 7;
    void *m = NULL;
    XT_OK(xdev_malloc_device(d, &m, sizeof host));
    XT_OK(xdev_memcpy(m, host, sizeof host));
    XT_OK(xdev_memcpy(back, m, sizeof back));
    ck_assert_int_eq(memcmp(host, back, sizeof host), 0);
    XT_OK(xdev_free(m));
    xdev_backend_info_t info;
    XT_OK(xdev_backend_get_info(t, &info));
    ck_assert_str_eq(info.name, "nullacc");
    ck_assert_int_eq(info.state, XDEV_BACKEND_LOADED);
}
END_TEST

/* The skeleton's table with one slot of the memory.async group set. */
static xdev_backend_api_t g_half_api;
static xdev_memory_vtable_t g_half_memory;

static xdev_status_t half_malloc_async(xdev_backend_device_t *dev, size_t bytes, void *stream,
                                       void **out) {
    return XDEV_ERROR_INTERNAL; /* never called: the table is refused */
}

static const xdev_backend_api_t *half_entry(void) {
    return &g_half_api;
}

START_TEST(half_group) {
    const xdev_backend_api_t *api = load(XT_NULL_BACKEND);
    g_half_api = *api;
    g_half_memory = *api->memory;
    g_half_memory.malloc_async = half_malloc_async;
    g_half_api.memory = &g_half_memory;
    g_half_api.name = "half";
    xdev_backend_factory_t f = {
        .size = sizeof f, .name = "half", .type = XDEV_DEVICE_TYPE_ANY, .entry = half_entry};
    XT_OK(xdev_backend_register(&f));
    xdev_device_type_t t;
    XT_OK(xdev_device_type_find("half", &t));
    int n = -1;
    XT_OK(xdev_device_count(t, &n)); /* a backend that cannot load has no device */
    ck_assert_int_eq(n, 0);
    xdev_backend_info_t info;
    XT_OK(xdev_backend_get_info(t, &info));
    ck_assert_int_eq(info.state, XDEV_BACKEND_FAILED);
    const char *why = info.reason ? info.reason : "(null)";
    printf("half: %s\n", why);
    ck_assert_msg(strstr(why, "half backend") && strstr(why, "memory.async") &&
                      strstr(why, "memory.free_async") && !strstr(why, "memory.malloc_async"),
                  "reason: %s", why);
    void *m = NULL;
    XT_ERR_ANY(XT_BIT(XDEV_ERROR_BACKEND_UNAVAILABLE) | XT_BIT(XDEV_ERROR_INVALID_DEVICE),
               xdev_malloc_device((xdev_device_t){t, 0}, &m, 64), "half");
    ck_assert_ptr_null(m);
}
END_TEST

int main(int argc, char **argv) {
    Suite *abi_suite = suite_create("abi");
    TCase *tc = tcase_create("abi");
    tcase_add_test(tc, abi);
    suite_add_tcase(abi_suite, tc);
    Suite *reg_suite = suite_create("register");
    tc = tcase_create("register");
    tcase_add_test(tc, register_in_process);
    suite_add_tcase(reg_suite, tc);
    Suite *name_suite = suite_create("by_name");
    tc = tcase_create("by_name");
    tcase_add_test(tc, by_name);
    suite_add_tcase(name_suite, tc);
    Suite *half_suite = suite_create("half_group");
    tc = tcase_create("half_group");
    tcase_add_test(tc, half_group);
    suite_add_tcase(half_suite, tc);
    SRunner *r = srunner_create(abi_suite);
    srunner_add_suite(r, reg_suite);
    srunner_add_suite(r, name_suite);
    srunner_add_suite(r, half_suite);
    return xt_run(r, "abi", argc, argv);
}
