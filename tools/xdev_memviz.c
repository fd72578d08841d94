/* SPDX-License-Identifier: Apache-2.0 */
/* tools/xdev_memviz.c - xdev-memviz: a memory snapshot file (the JSON of
 * xdev_memory_snapshot / xdev_memory_snapshot_write) to the memory view, or
 * a stream trace file (xdev_trace_start, XDEV_TRACE_FILE) to its timeline,
 * each one self-contained HTML page (xdev/memviz.h, xdev_trace_view_html).
 * Which of the two a file is, is told from its top-level key ("segments" or
 * "traceEvents"); --snapshot or --trace says it instead.
 *
 *   xdev-memviz snapshot.json              writes snapshot.html, says so
 *   xdev-memviz trace.json -o timeline.html
 *   xdev-memviz - -o view.html             reads standard input
 *
 * Exit status: 0 written, 1 the input is neither (or not what was asked
 * for), or a file could not be read or written (the message says which),
 * 2 bad usage. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xdev/xdev.h"

static const char k_usage[] =
    "usage: xdev-memviz [--snapshot | --trace] INPUT.json|- [-o OUT.html]\n";

static int usage(void) {
    fputs(k_usage, stderr);
    fputs("       xdev-memviz --help\n", stderr);
    return 2;
}

static int help(void) {
    fputs(k_usage, stdout);
    fputs("\n"
          "Turns a file a program wrote with xdev into one self-contained HTML page that any\n"
          "browser opens (inline script and style, no network):\n"
          "  a memory snapshot (xdev_memory_snapshot_write, xdev_memory_snapshot): the memory\n"
          "    view - segments and blocks per device, memory over time, largest allocations,\n"
          "    bytes by tag, out-of-memory events;\n"
          "  a stream trace (xdev_trace_start/stop, XDEV_TRACE_FILE): the timeline of what ran\n"
          "    on each stream.\n"
          "Which one the input is, is told from its top-level key (\"segments\" or\n"
          "\"traceEvents\").\n"
          "\n"
          "  INPUT.json    the file to read; - reads standard input (then -o is required)\n"
          "  -o OUT.html   where to write the page (default: INPUT with .json replaced by\n"
          "                .html, or .html added); the path written is printed\n"
          "  --snapshot    the input must be a memory snapshot\n"
          "  --trace       the input must be a stream trace\n"
          "  -h, --help    this text\n"
          "\n"
          "Exit status: 0 the page was written; 1 the input could not be read, is neither\n"
          "kind (or not the kind asked for), or the page could not be written - the message\n"
          "says which; 2 bad usage.\n",
          stdout);
    return 0;
}

/* The page's default name: INPUT with a final ".json" replaced by ".html",
 * else ".html" added. NULL without memory. */
static char *default_out(const char *in) {
    size_t n = strlen(in);
    bool json = n > 5 && strcmp(in + n - 5, ".json") == 0;
    char *out = malloc(n + 6);
    if (out != NULL) sprintf(out, "%.*s.html", (int)(json ? n - 5 : n), in);
    return out;
}

/* What the text is, from its top-level keys: 's' snapshot, 't' trace, 0
 * neither. A look at the outline only; the library parses it properly. */
static char kind_of(const char *json) {
    if (strstr(json, "\"traceEvents\"") != NULL && strstr(json, "\"segments\"") == NULL) return 't';
    if (strstr(json, "\"segments\"") != NULL) return 's';
    return 0;
}

/* The whole of f, or NULL with *err set. */
static char *read_all(FILE *f, size_t *len, int *err) {
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf != NULL) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        char *more = realloc(buf, cap * 2);
        if (more == NULL) free(buf);
        buf = more;
        cap *= 2;
    }
    if (buf == NULL || ferror(f)) {
        *err = buf == NULL ? ENOMEM : errno;
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

int main(int argc, char **argv) {
    const char *in = NULL, *out = NULL;
    char want = 0; /* 's', 't', or 0: tell from the input */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
            out = argv[++i];
        else if (strcmp(argv[i], "--trace") == 0)
            want = 't';
        else if (strcmp(argv[i], "--snapshot") == 0)
            want = 's';
        else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return help();
        else if (in == NULL && (argv[i][0] != '-' || strcmp(argv[i], "-") == 0))
            in = argv[i];
        else
            return usage();
    }
    if (in == NULL) return usage();
    char *out_owned = NULL;
    if (out == NULL) {
        if (strcmp(in, "-") == 0) {
            fprintf(stderr, "xdev-memviz: reading standard input: name the page with -o\n");
            return usage();
        }
        out = out_owned = default_out(in);
        if (out == NULL) return 1;
    }
    FILE *f = strcmp(in, "-") == 0 ? stdin : fopen(in, "rb");
    if (f == NULL) {
        fprintf(stderr, "xdev-memviz: cannot open '%s': %s\n", in, strerror(errno));
        free(out_owned);
        return 1;
    }
    size_t len = 0;
    int err = 0;
    char *json = read_all(f, &len, &err);
    if (f != stdin) fclose(f);
    if (json == NULL) {
        fprintf(stderr, "xdev-memviz: cannot read '%s': %s\n", in, strerror(err));
        free(out_owned);
        return 1;
    }
    char kind = want != 0 ? want : kind_of(json);
    if (kind == 0) kind = 's'; /* neither outline: the snapshot check says what is wrong */
    char *html = NULL;
    size_t html_len = 0;
    int rc = 0;
    xdev_status_t st = kind == 't' ? xdev_trace_view_html(json, len, &html, &html_len)
                                   : xdev_memory_viz_html(json, len, &html, &html_len);
    if (st != XDEV_SUCCESS) {
        fprintf(stderr, "xdev-memviz: %s: %s\n", in, xdev_last_error());
        if (want == 0 && kind_of(json) == 0)
            fprintf(stderr,
                    "xdev-memviz: %s is neither a memory snapshot (a top-level "
                    "\"segments\") nor a stream trace (\"traceEvents\")\n",
                    in);
        rc = 1;
    } else {
        FILE *o = fopen(out, "wb");
        if (o == NULL || fwrite(html, 1, html_len, o) != html_len || fclose(o) != 0) {
            fprintf(stderr, "xdev-memviz: cannot write '%s': %s\n", out, strerror(errno));
            rc = 1;
        } else {
            printf("xdev-memviz: wrote %s (%s of %s, %zu bytes)\n", out,
                   kind == 't' ? "the stream trace's timeline" : "the memory view",
                   strcmp(in, "-") == 0 ? "standard input" : in, html_len);
        }
    }
    free(html);
    free(json);
    free(out_owned);
    return rc;
}
