/* SPDX-License-Identifier: Apache-2.0 */
/* tools/xdev_memviz.c - xdev-memviz: a memory snapshot file (the JSON of
 * xdev_memory_snapshot) to the memory view, one self-contained HTML page
 * (xdev/memviz.h), for snapshots written by programs that did not make
 * the page themselves; with --trace, a stream trace file (xdev_trace_start,
 * XDEV_TRACE_FILE) to its timeline page (xdev_trace_view_html).
 *
 *   xdev-memviz snapshot.json              writes snapshot.json.html
 *   xdev-memviz snapshot.json -o view.html
 *   xdev-memviz - -o view.html             reads standard input
 *   xdev-memviz --trace trace.json [-o timeline.html]
 *
 * Exit status: 0 written, 1 the input is not a snapshot or a file could not
 * be read or written (the message says which), 2 bad usage. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xdev/xdev.h"

static int usage(void) {
    fprintf(stderr, "usage: xdev-memviz [--trace] SNAPSHOT.json|TRACE.json|- [-o OUT.html]\n");
    return 2;
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
    bool trace = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
            out = argv[++i];
        else if (strcmp(argv[i], "--trace") == 0)
            trace = true;
        else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return usage() - 2;
        else if (in == NULL && (argv[i][0] != '-' || strcmp(argv[i], "-") == 0))
            in = argv[i];
        else
            return usage();
    }
    if (in == NULL) return usage();
    char *out_owned = NULL;
    if (out == NULL) {
        if (strcmp(in, "-") == 0) return usage();
        out_owned = malloc(strlen(in) + 6);
        if (out_owned == NULL) return 1;
        sprintf(out_owned, "%s.html", in);
        out = out_owned;
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
    char *html = NULL;
    size_t html_len = 0;
    int rc = 0;
    xdev_status_t st = trace ? xdev_trace_view_html(json, len, &html, &html_len)
                             : xdev_memory_viz_html(json, len, &html, &html_len);
    if (st != XDEV_SUCCESS) {
        fprintf(stderr, "xdev-memviz: %s: %s\n", in, xdev_last_error());
        rc = 1;
    } else {
        FILE *o = fopen(out, "wb");
        if (o == NULL || fwrite(html, 1, html_len, o) != html_len || fclose(o) != 0) {
            fprintf(stderr, "xdev-memviz: cannot write '%s': %s\n", out, strerror(errno));
            rc = 1;
        }
    }
    free(html);
    free(json);
    free(out_owned);
    return rc;
}
