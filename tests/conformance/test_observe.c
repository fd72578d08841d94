/* SPDX-License-Identifier: Apache-2.0 */
/* test_observe.c - seeing what the runtime did, on the backend under test:
 * allocation tags (xdev_memory_tag_push/pop) in snapshots, history and the
 * torch export; the memory view (xdev_memory_viz_html/_write): the page
 * carries the snapshot, refuses what is not one; the stream trace
 * (xdev_trace_start/stop): valid JSON, one track per stream, events sorted
 * by time, device intervals that measure the work (a 30 ms host function
 * lasts >= 30 ms on its stream while its enqueue takes far less), allocator
 * events and markers, and its bad-input cases; text that is not UTF-8 (tags
 * refused, markers repaired and cut at a character) never makes a file
 * Python's json.load or pickle.load refuses. The full structure check of a
 * trace and a page loaded in a real browser are tests/observe's.
 * Conformance: XDEV_BACKEND=<backend under test>. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "json_check.h"
#include "xt.h"

#define MIB ((size_t)1 << 20)

static void setup(void) {
    xt_reset_state();
}

/* The whole of a file, NUL-terminated (fails the test when unreadable). */
static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static const char *tmp_path(const char *name) {
    static char path[256];
    snprintf(path, sizeof path, "%s/xdev-observe-%d-%s",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid(), name);
    return path;
}

static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = strstr(hay, needle); p != NULL; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* Python's own reader (json.load, strict UTF-8, or pickle.load: `kind`) on
 * the file `path`, through check_loads.py: it must load, and hold each of
 * the strings that follow (a NULL ends them) exactly. Where no Python 3
 * was found at configure time this says so and checks nothing. */
static void python_loads(const char *kind, const char *path, ...) {
    const char *python = XT_PYTHON;
    if (python[0] == '\0') {
        printf("%s not loaded in Python: no Python 3 found at configure time\n", path);
        return;
    }
    static char cmd[16384];
    int n = snprintf(cmd, sizeof cmd, "'%s' '%s' %s '%s'", python, XT_CHECK_LOADS, kind, path);
    va_list ap;
    va_start(ap, path);
    for (const char *want = va_arg(ap, const char *); want != NULL;
         want = va_arg(ap, const char *)) {
        n += snprintf(cmd + n, sizeof cmd - (size_t)n, " ");
        for (const unsigned char *b = (const unsigned char *)want; *b; b++)
            n += snprintf(cmd + n, sizeof cmd - (size_t)n, "%02x", *b);
    }
    va_end(ap);
    ck_assert_uint_lt((size_t)n, sizeof cmd);
    fflush(stdout);
    int rc = system(cmd);
    ck_assert_msg(rc == 0, "Python could not read %s (%s): %s", path, kind, cmd);
}

/* ------------------------------------------------------------------ tags */

START_TEST(tags_label_blocks_and_history) {
    XT_OK(xdev_memory_record_history(xt_dev(0), true, 256));
    void *untagged = NULL, *inner = NULL, *outer = NULL;
    XT_OK(xdev_malloc_device(xt_dev(0), &untagged, 4096));
    XT_OK(xdev_memory_tag_push("step"));
    XT_OK(xdev_malloc_device(xt_dev(0), &outer, 3 * MIB));
    XT_OK(xdev_memory_tag_push("fwd\"<x>"));
    XT_OK(xdev_malloc_device(xt_dev(0), &inner, 5 * MIB));
    XT_OK(xdev_memory_tag_pop());
    XT_OK(xdev_memory_tag_pop());
    char *json = NULL;
    XT_OK(xdev_memory_snapshot(&json));
    char err[256];
    ck_assert_msg(json_check(json, err, sizeof err), "%s", err);
    /* escaped: the quote, and '<' so that the text can sit in a page */
    ck_assert_msg(strstr(json, "\"tag\":\"step/fwd\\\"\\u003cx>\"") != NULL, "%.2000s", json);
    ck_assert_msg(strstr(json, "\"tag\":\"step\"") != NULL, "%.2000s", json);
    /* blocks and alloc entries: each tagged allocation twice, the untagged never */
    ck_assert_int_eq(count(json, "\"tag\":\"step\""), 2);
    ck_assert_msg(strstr(json, "\"device_stats\"") && strstr(json, "allocated_bytes.all.current") &&
                      strstr(json, "xdev memory summary"),
                  "no device_stats");
    free(json);
    XT_OK(xdev_free(inner));
    XT_OK(xdev_free(outer));
    XT_OK(xdev_free(untagged));
    /* the free entries keep the allocation's tag */
    XT_OK(xdev_memory_snapshot(&json));
    ck_assert_int_eq(count(json, "\"tag\":\"step\""), 2);
    free(json);
    XT_OK(xdev_memory_record_history(xt_dev(0), false, 0));
}
END_TEST

START_TEST(tags_in_torch_frames) {
    XT_OK(xdev_memory_tag_push("layer7"));
    void *p = NULL;
    XT_OK(xdev_malloc_device(xt_dev(0), &p, 1 * MIB));
    XT_OK(xdev_memory_tag_pop());
    void *data = NULL;
    size_t n = 0;
    XT_OK(xdev_memory_snapshot_torch(xt_type(), &data, &n));
    ck_assert_ptr_nonnull(memmem(data, n, "layer7", 6));
    ck_assert_ptr_nonnull(memmem(data, n, "xdev_memory_tag_push", 20));
    free(data);
    XT_OK(xdev_free(p));
}
END_TEST

START_TEST(tags_bad_input) {
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_tag_pop(), "no tag is pushed");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_tag_push(NULL), "tag");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_tag_push(""), "length 0");
    char long_tag[300];
    memset(long_tag, 'a', sizeof long_tag - 1);
    long_tag[sizeof long_tag - 1] = '\0';
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_tag_push(long_tag), "299");
    int pushed = 0;
    xdev_status_t st;
    while ((st = xdev_memory_tag_push("d")) == XDEV_SUCCESS)
        pushed++;
    ck_assert_int_eq(pushed, 32);
    ck_assert_int_eq(st, XDEV_ERROR_INVALID_VALUE);
    ck_assert_msg(strstr(xdev_last_error(), "32 tags") != NULL, "%s", xdev_last_error());
    for (int i = 0; i < pushed; i++)
        XT_OK(xdev_memory_tag_pop());
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_tag_pop(), "no tag");
}
END_TEST

/* JSON and pickle hold only UTF-8: a tag that is not is refused at push;
 * any character is kept, control characters, quotes and '<' included, and
 * Python's json.load and pickle.load read the snapshots back to the tag. */
START_TEST(tags_utf8) {
    static const char *const bad[] = {"bad\xff",
                                      "cut\xc3",
                                      "\xc0\xaf overlong",
                                      "\xed\xa0\x80 surrogate",
                                      "\xf4\x90\x80\x80 >10FFFF",
                                      "\x80 continuation",
                                      "two\xe2\x82"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_tag_push(bad[i]), "UTF-8");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_tag_pop(), "no tag is pushed");
    const char *tag =
        "caf\xc3\xa9 \xe2\x82\xac\xf0\x9f\x98\x80 tab\tnl\ncr\r\x01\x1f\x7f \"q\\ <s>";
    XT_OK(xdev_memory_record_history(xt_dev(0), true, 64));
    XT_OK(xdev_memory_tag_push(tag));
    void *p = NULL;
    XT_OK(xdev_malloc_device(xt_dev(0), &p, 1 * MIB));
    XT_OK(xdev_memory_tag_pop());
    char *json = NULL;
    XT_OK(xdev_memory_snapshot(&json));
    char err[256];
    ck_assert_msg(json_check(json, err, sizeof err), "%s", err);
    free(json);
    /* the files the write calls make are what Python reads */
    const char *path = tmp_path("utf8-snapshot.json");
    XT_OK(xdev_memory_snapshot_write(path));
    python_loads("json", path, tag, (const char *)NULL);
    unlink(path);
    void *data = NULL;
    size_t n = 0;
    XT_OK(xdev_memory_snapshot_torch(xt_type(), &data, &n));
    ck_assert(n > 2 && ((unsigned char *)data)[0] == 0x80 && ((char *)data)[n - 1] == '.');
    free(data);
    path = tmp_path("utf8-snapshot.pickle");
    XT_OK(xdev_memory_snapshot_torch_write(xt_type(), path));
    python_loads("pickle", path, tag, (const char *)NULL);
    unlink(path);
    XT_OK(xdev_free(p));
    XT_OK(xdev_memory_record_history(xt_dev(0), false, 0));
}
END_TEST

/* ------------------------------------------------------------------ memory view */

START_TEST(memviz_page_holds_snapshot) {
    void *p = NULL;
    XT_OK(xdev_memory_tag_push("viz</script>"));
    XT_OK(xdev_malloc_device(xt_dev(0), &p, 7 * MIB));
    XT_OK(xdev_memory_tag_pop());
    char *json = NULL;
    XT_OK(xdev_memory_snapshot(&json));
    char *html = NULL;
    size_t len = 0;
    XT_OK(xdev_memory_viz_html(json, strlen(json), &html, &len));
    ck_assert_uint_eq(strlen(html), len);
    ck_assert(strncmp(html, "<!doctype html>", 15) == 0);
    ck_assert_msg(strstr(html, "@XDEV_SNAPSHOT@") == NULL, "marker left in the page");
    ck_assert_msg(strstr(html, "viz</script>") == NULL, "a tag closed the script element");
    char addr[32];
    snprintf(addr, sizeof addr, "\"address\":%llu", (unsigned long long)(uintptr_t)p);
    ck_assert_msg(strstr(html, addr) != NULL, "block %s not in the page", addr);
    /* no fetches: everything inline */
    ck_assert(strstr(html, "src=\"http") == NULL && strstr(html, "href=\"http") == NULL);
    ck_assert_int_eq(count(html, "<script"), 2);
    free(html);
    const char *path = tmp_path("view.html");
    XT_OK(xdev_memory_viz_write(path));
    char *written = slurp(path);
    ck_assert(strstr(written, addr) != NULL);
    free(written);
    unlink(path);
    free(json);
    XT_OK(xdev_free(p));
}
END_TEST

START_TEST(memviz_bad_input) {
    char *html = (char *)1;
    size_t len = 1;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_viz_html(NULL, 0, &html, &len), "snapshot_json");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_viz_html("{}", 2, NULL, &len), "html");
    const char *bad = "{\"segments\":[1,]}";
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_viz_html(bad, strlen(bad), &html, &len),
           "byte 15");
    ck_assert_ptr_null(html);
    ck_assert_uint_eq(len, 0);
    const char *other = "{\"traceEvents\":[]}";
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_viz_html(other, strlen(other), &html, &len),
           "not an xdev memory snapshot");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_viz_html("{\"segments\":[]}\0x", 17, &html, &len),
           "NUL");
    /* JSON is UTF-8: other bytes are refused, naming where */
    const char *latin1 = "{\"segments\":[],\"x\":\"\xe9t\xe9\"}";
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_viz_html(latin1, strlen(latin1), &html, &len),
           "UTF-8", "byte 20");
    ck_assert_ptr_null(html);
    /* "segments" must be the top-level object's own member, an array */
    static const char *const outline[] = {
        "{\"x\":{\"segments\":[]}}",           /* nested */
        "{\"x\":[{\"segments\":[]}]}",         /* nested in an array */
        "{\"note\":\"segments\",\"x\":[]}",    /* the name as a value */
        "{\"segments\":{\"blocks\":[]}}",      /* not an array */
        "{\"segments\":\"[]\"}",               /* not an array */
        "{\"segments\":[],\"segments\":null}", /* the last one counts, as in a browser */
    };
    for (size_t i = 0; i < sizeof outline / sizeof outline[0]; i++) {
        XT_ERR(XDEV_ERROR_INVALID_VALUE,
               xdev_memory_viz_html(outline[i], strlen(outline[i]), &html, &len),
               "not an xdev memory snapshot", "\"segments\"");
        ck_assert_ptr_null(html);
    }
    const char *spaced = " { \"a\" : {\"segments\":1} , \"segments\" : [ ] } ";
    XT_OK(xdev_memory_viz_html(spaced, strlen(spaced), &html, &len));
    free(html);
    html = NULL;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_viz_write(NULL), "path");
    XT_ERR(XDEV_ERROR_IO, xdev_memory_viz_write("/nonexistent-dir/x/view.html"),
           "/nonexistent-dir/x/view.html");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_snapshot_write(NULL), "path");
    XT_ERR(XDEV_ERROR_IO, xdev_memory_snapshot_write("/nonexistent-dir/x/s.json"),
           "xdev_memory_snapshot_write", "/nonexistent-dir/x/s.json", "No such file");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_snapshot_torch_write(xt_type(), NULL), "path");
    XT_ERR(XDEV_ERROR_IO, xdev_memory_snapshot_torch_write(xt_type(), "/nonexistent-dir/x/s.pkl"),
           "/nonexistent-dir/x/s.pkl");
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_memory_snapshot_torch_write(99, "/tmp/x.pkl"),
           "unknown device type 99");
}
END_TEST

/* ------------------------------------------------------------------ stream trace */

/* Every "ts": in file order is >= the one before (the writer sorts by time,
 * so each track's events are in order too). */
static void assert_sorted(const char *json) {
    double prev = -1;
    int n = 0;
    for (const char *p = strstr(json, "\"ts\":"); p != NULL; p = strstr(p + 5, "\"ts\":")) {
        double ts = strtod(p + 5, NULL);
        ck_assert_msg(ts >= prev, "ts %.3f after %.3f", ts, prev);
        prev = ts;
        n++;
    }
    ck_assert_int_gt(n, 10);
}

/* The "dur" of the first event whose text starts with `head`. */
static double dur_of(const char *json, const char *head) {
    const char *e = strstr(json, head);
    ck_assert_msg(e != NULL, "no event %s", head);
    const char *d = strstr(e, "\"dur\":");
    ck_assert_ptr_nonnull(d);
    return strtod(d + 6, NULL);
}

START_TEST(trace_records_streams) {
    const char *path = tmp_path("trace.json");
    XT_OK(xdev_trace_start(path));
    xdev_stream_t a = xt_new_stream(0), b = xt_new_stream(0);
    void *d = NULL;
    XT_OK(xdev_malloc_stream(&d, 2 * MIB, a));
    XT_OK(xdev_memset_async(d, 1, 2 * MIB, a));
    static unsigned char host[4096];
    XT_OK(xdev_memcpy_async(host, d, sizeof host, a));
    xt_sleep_task_t task = {30, NULL};
    XT_OK(xdev_launch_host_func(b, xt_sleep_fn, &task));
    xdev_event_t ev;
    XT_OK(xdev_event_create(XDEV_EVENT_DEFAULT, &ev));
    XT_OK(xdev_event_record(ev, b));
    XT_OK(xdev_stream_wait_event(a, ev));
    XT_OK(xdev_fill_async(d, XDEV_DTYPE_F32, xdev_scalar_f64(2.0), 1024, a));
    XT_OK(xdev_trace_range_push("phase", NULL));
    XT_OK(xdev_trace_mark("here"));
    XT_OK(xdev_trace_range_pop(NULL));
    XT_OK(xdev_free(d));
    XT_OK(xdev_trace_stop());
    char *json = slurp(path);
    char err[256];
    ck_assert_msg(json_check(json, err, sizeof err), "%s", err);
    ck_assert(strstr(json, "\"traceEvents\"") && strstr(json, "\"displayTimeUnit\""));
    assert_sorted(json);
    void *na = NULL, *nb = NULL;
    XT_OK(xdev_stream_native_handle(a, &na));
    XT_OK(xdev_stream_native_handle(b, &nb));
    char name[64];
    /* one track per stream: each stream named exactly once */
    snprintf(name, sizeof name, "\"name\":\"stream %p\"", na);
    ck_assert_msg(count(json, name) == 1, "%s: %d tracks", name, count(json, name));
    snprintf(name, sizeof name, "\"name\":\"stream %p\"", nb);
    ck_assert_msg(count(json, name) == 1, "%s: %d tracks", name, count(json, name));
    ck_assert_msg(strstr(json, xt_fmt("\"args\":{\"name\":\"%s\"}", xt_name(0))) != NULL,
                  "no process named %s", xt_name(0));
    static const char *const ops[] = {"memset",       "memcpy",     "host_func",
                                      "event_record", "wait_event", "fill"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        ck_assert_msg(strstr(json, xt_fmt("{\"name\":\"%s\",\"cat\":\"stream\"", ops[i])),
                      "no %s on a stream track", ops[i]);
        ck_assert_msg(strstr(json, xt_fmt("{\"name\":\"%s\",\"cat\":\"enqueue\"", ops[i])),
                      "no %s enqueue", ops[i]);
    }
    ck_assert(strstr(json, "\"kind\":\"DtoH\",\"bytes\":4096"));
    /* the host function ran 30 ms on its stream; enqueueing it took far less */
    ck_assert_msg(strstr(json, "\"timing\":\"device\"") != NULL, "no device timing");
    double on_stream = dur_of(json, "{\"name\":\"host_func\",\"cat\":\"stream\"");
    double enqueue = dur_of(json, "{\"name\":\"host_func\",\"cat\":\"enqueue\"");
    ck_assert_msg(on_stream >= 29000.0, "host function lasted %.1f us on its stream", on_stream);
    ck_assert_msg(enqueue < on_stream / 2, "enqueue %.1f us, stream %.1f us", enqueue, on_stream);
    /* allocator events and the counter, markers on the host */
    ck_assert(strstr(json, "{\"name\":\"alloc\",\"cat\":\"memory\",\"ph\":\"i\""));
    ck_assert(strstr(json, "{\"name\":\"memory\",\"ph\":\"C\""));
    ck_assert(strstr(json, "{\"name\":\"phase\",\"cat\":\"marker\",\"ph\":\"B\""));
    ck_assert(strstr(json, "{\"name\":\"here\",\"cat\":\"marker\",\"ph\":\"i\""));
    ck_assert(strstr(json, "\"cat\":\"marker\",\"ph\":\"E\""));
    ck_assert_int_eq(count(json, "\"ph\":\"s\""), count(json, "\"ph\":\"f\""));
    free(json);
    unlink(path);
    XT_OK(xdev_event_destroy(ev));
    XT_OK(xdev_stream_destroy(a));
    XT_OK(xdev_stream_destroy(b));
}
END_TEST

/* A named stream: its trace track, its snapshot entry and the memory view
 * use the name; one named before the trace and one named after its track
 * began both show; a destroyed stream's name is forgotten. */
START_TEST(stream_names_in_trace_and_snapshot) {
    const char *path = tmp_path("named.json");
    xdev_stream_t a = xt_new_stream(0), b = xt_new_stream(0);
    XT_OK(xdev_stream_set_name(a, "copy \"in\""));
    XT_OK(xdev_trace_start(path));
    void *d = NULL;
    XT_OK(xdev_malloc_stream(&d, 1 * MIB, a));
    XT_OK(xdev_memset_async(d, 1, 1 * MIB, a));
    XT_OK(xdev_stream_wait_stream(b, a)); /* b writes d after a did */
    XT_OK(xdev_memset_async(d, 2, 1 * MIB, b));
    XT_OK(xdev_stream_set_name(b, "compute")); /* after b's track began */
    XT_OK(xdev_stream_synchronize(b));
    XT_OK(xdev_trace_stop());
    char *json = slurp(path);
    char err[256];
    ck_assert_msg(json_check(json, err, sizeof err), "%s", err);
    ck_assert_msg(count(json, "\"args\":{\"name\":\"copy \\\"in\\\"\"}") == 1,
                  "no track named copy \"in\"");
    ck_assert_msg(count(json, "\"args\":{\"name\":\"compute\"}") == 1, "no track named compute");
    free(json);
    unlink(path);
    char *snap = NULL;
    XT_OK(xdev_memory_snapshot(&snap));
    ck_assert_msg(json_check(snap, err, sizeof err), "%s", err);
    ck_assert_msg(strstr(snap, xt_fmt("{\"device\":\"%s\",\"stream\":\"%p\",\"name\":\"copy "
                                      "\\\"in\\\"\"}",
                                      xt_name(0), (void *)a)) != NULL,
                  "no stream_names entry for a: %s", strstr(snap, "stream_names"));
    free(snap);
    char *html = NULL;
    size_t len = 0;
    XT_OK(xdev_memory_snapshot(&snap));
    XT_OK(xdev_memory_viz_html(snap, strlen(snap), &html, &len));
    ck_assert(strstr(html, "streamLabel") != NULL && strstr(html, "compute") != NULL);
    free(html);
    free(snap);
    XT_OK(xdev_free(d));
    XT_OK(xdev_stream_destroy(a));
    XT_OK(xdev_memory_snapshot(&snap));
    ck_assert_msg(strstr(snap, "copy \\\"in\\\"") == NULL, "a destroyed stream's name stayed");
    free(snap);
    XT_OK(xdev_stream_destroy(b));
}
END_TEST

START_TEST(trace_off_records_nothing) {
    const char *path = tmp_path("trace2.json");
    XT_OK(xdev_trace_start(path));
    XT_OK(xdev_trace_stop());
    void *d = NULL;
    XT_OK(xdev_malloc_device(xt_dev(0), &d, 4096));
    XT_OK(xdev_memset_async(d, 0, 4096, NULL));
    XT_OK(xdev_free(d));
    char *json = slurp(path);
    char err[256];
    ck_assert_msg(json_check(json, err, sizeof err), "%s", err);
    ck_assert_msg(strstr(json, "memset") == NULL && strstr(json, "\"alloc\"") == NULL,
                  "recorded after stop: %s", json);
    ck_assert(strstr(json, "\"records\":0"));
    free(json);
    unlink(path);
}
END_TEST

/* A child forked while a trace runs inherits the exit handler that writes
 * an unstopped trace: it must leave the parent's file alone. On the CPU
 * backend only: the check is the tracer's, and a GPU runtime's own exit
 * handlers in a forked child may hang (they did under compute-sanitizer). */
START_TEST(trace_fork_child_leaves_the_file) {
    XT_REQUIRE_CPU();
    char path[256];
    snprintf(path, sizeof path, "%s", tmp_path("trace-fork.json"));
    XT_OK(xdev_trace_start(path));
    void *d = NULL;
    XT_OK(xdev_malloc_device(xt_dev(0), &d, 4096));
    XT_OK(xdev_memset_async(d, 0, 4096, NULL));
    fflush(NULL);
    pid_t child = fork();
    if (child == 0) exit(0); /* runs the atexit handlers */
    ck_assert_int_gt(child, 0);
    int status = 0;
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_msg(st.st_size == 0, "the forked child wrote %lld bytes of the trace",
                  (long long)st.st_size);
    XT_OK(xdev_free(d));
    XT_OK(xdev_trace_stop());
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_gt(st.st_size, 100);
    unlink(path);
}
END_TEST

/* A marker is kept to 63 bytes in the trace, cut before a character that
 * would not fit whole, bytes that are not UTF-8 written as U+FFFD: the file
 * stays JSON that Python reads, whatever the markers held. */
START_TEST(trace_marker_utf8) {
    char two[101] = "", four[101] = "", ascii[71];
    for (int i = 0; i < 50; i++)
        strcat(two, "\xc3\xa9"); /* U+00E9, 2 bytes: 100 bytes, 63 falls inside one */
    for (int i = 0; i < 25; i++)
        strcat(four, "\xf0\x9f\x98\x80"); /* U+1F600, 4 bytes */
    memset(ascii, 'a', 70);
    ascii[70] = '\0';
    const char *path = tmp_path("trace-utf8.json");
    XT_OK(xdev_trace_start(path));
    XT_OK(xdev_trace_mark(two));
    XT_OK(xdev_trace_range_push(four, NULL));
    XT_OK(xdev_trace_range_pop(NULL));
    XT_OK(xdev_trace_mark("x\xff\xc3(y"));
    XT_OK(xdev_trace_mark(ascii));
    XT_OK(xdev_trace_stop());
    char kept_two[64], kept_four[64], kept_ascii[64];
    snprintf(kept_two, sizeof kept_two, "%.62s", two);    /* 31 characters */
    snprintf(kept_four, sizeof kept_four, "%.60s", four); /* 15 characters */
    snprintf(kept_ascii, sizeof kept_ascii, "%.63s", ascii);
    const char *repaired = "x\xef\xbf\xbd\xef\xbf\xbd(y";
    char *json = slurp(path);
    char err[256];
    ck_assert_msg(json_check(json, err, sizeof err), "%s", err);
    const char *kept[] = {kept_two, kept_four, repaired, kept_ascii};
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
        ck_assert_msg(strstr(json, xt_fmt("{\"name\":\"%s\",\"cat\":\"marker\"", kept[i])),
                      "marker %zu not kept as its longest whole-character prefix", i);
    free(json);
    python_loads("json", path, kept_two, kept_four, repaired, kept_ascii, (const char *)NULL);
    unlink(path);
}
END_TEST

START_TEST(trace_bad_input) {
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_trace_stop(), "no trace is running");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_trace_start(NULL), "path");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_trace_start(""), "length 0");
    XT_ERR(XDEV_ERROR_IO, xdev_trace_start("/nonexistent-dir/t.json"), "/nonexistent-dir/t.json");
    char path[256];
    snprintf(path, sizeof path, "%s", tmp_path("trace3.json"));
    XT_OK(xdev_trace_start(path));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_trace_start(tmp_path("trace4.json")), "already running",
           path);
    XT_OK(xdev_trace_stop());
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_trace_stop(), "no trace");
    /* the timeline page takes the file, refuses what is not a trace */
    char *json = slurp(path), *html = NULL;
    size_t len = 0;
    XT_OK(xdev_trace_view_html(json, strlen(json), &html, &len));
    ck_assert_uint_eq(strlen(html), len);
    ck_assert(strstr(html, "@XDEV_TRACE@") == NULL && strstr(html, "\"traceEvents\"") != NULL);
    free(html);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_trace_view_html(json, strlen(json) - 3, &html, &len),
           "not JSON");
    ck_assert_ptr_null(html);
    free(json);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_trace_view_html("{\"segments\":[]}", 15, &html, &len),
           "traceEvents");
    const char *nested = "{\"x\":{\"traceEvents\":[]}}";
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_trace_view_html(nested, strlen(nested), &html, &len),
           "traceEvents");
    const char *not_utf8 = "{\"traceEvents\":[{\"name\":\"\xff\"}]}";
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_trace_view_html(not_utf8, strlen(not_utf8), &html, &len),
           "UTF-8", "byte 25");
    ck_assert_ptr_null(html);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_trace_view_html(NULL, 0, &html, &len), "trace_json");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_trace_view_html("{}", 2, NULL, &len), "html");
    unlink(path);
}
END_TEST

int main(int argc, char **argv) {
    Suite *s = suite_create("observe");
    TCase *tc = tcase_create("tags");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, tags_label_blocks_and_history);
    tcase_add_test(tc, tags_in_torch_frames);
    tcase_add_test(tc, tags_bad_input);
    tcase_add_test(tc, tags_utf8);
    suite_add_tcase(s, tc);
    tc = tcase_create("memviz");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, memviz_page_holds_snapshot);
    tcase_add_test(tc, stream_names_in_trace_and_snapshot);
    tcase_add_test(tc, memviz_bad_input);
    suite_add_tcase(s, tc);
    tc = tcase_create("trace");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, trace_records_streams);
    tcase_add_test(tc, trace_off_records_nothing);
    tcase_add_test(tc, trace_fork_child_leaves_the_file);
    tcase_add_test(tc, trace_marker_utf8);
    tcase_add_test(tc, trace_bad_input);
    suite_add_tcase(s, tc);
    return xt_run(srunner_create(s), "observe", argc, argv);
}
