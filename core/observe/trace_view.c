/* SPDX-License-Identifier: Apache-2.0 */
/* trace_view.c - xdev_trace_view_html: a stream trace as a timeline page
 * (trace_view.html, compiled in by cmake/embed_file.cmake), for a first look
 * without Perfetto or chrome://tracing. */
#include "base/error_internal.h"
#include "observe/page.h"
#include "xdev/trace.h"

extern const char xdev_trace_view_page[];

xdev_status_t xdev_trace_view_html(const char *trace_json, size_t len, char **html,
                                   size_t *html_len) {
    XDEV_REQUIRE_ARG(trace_json);
    XDEV_REQUIRE_ARG(html);
    *html = NULL;
    if (html_len != NULL) *html_len = 0;
    XDEV_CHECK(xdev_page_with_json(xdev_trace_view_page, "@XDEV_TRACE@", trace_json, len,
                                   "traceEvents", "a trace (Trace Event Format, object form)", html,
                                   html_len));
    return XDEV_SUCCESS;
}
