/*
 * Fuzz target for the edge-list parser (gd__edgelist_parse). The first byte picks the options
 * (negative ids allowed, an id limit) and where the buffer is split, so the carrying of an
 * unfinished line between chunks is exercised as the file reader uses it. Everything parsed
 * is freed; a leak or an edge count that disagrees between the two ways of parsing aborts.
 */
#include "io/ingest.h"

#include <stdlib.h>
#include <string.h>

static int64_t parse(const char *buf, size_t len, uint8_t flags, size_t split) {
    gd__edgelist el;
    memset(&el, 0, sizeof el);
    el.what = "fuzz";
    el.allow_negative = flags & 1;
    el.limit = (flags & 2) ? 1000 : 0;
    size_t used = 0;
    int64_t edges = -1;
    if (split > len) split = len;
    /* first piece, not final: only whole lines are consumed */
    if (gd__edgelist_parse(&el, buf, split, 0, &used) == GD_OK) {
        if (used > split) abort();
        if (gd__edgelist_parse(&el, buf + used, len - used, 1, &used) == GD_OK) edges = el.src.len;
    }
    if (el.src.len != el.dst.len) abort();
    gd__edgelist_free(&el);
    return edges;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    uint8_t flags = data[0];
    const char *buf = (const char *)data + 1;
    size_t len = size - 1;
    int64_t b0, y0, b1, y1;
    gd_alloc_stats(&b0, &y0);
    int64_t whole = parse(buf, len, flags, len);
    int64_t split = parse(buf, len, flags, (size_t)(flags >> 2) * len / 64);
    if (whole != split) abort();
    gd_alloc_stats(&b1, &y1);
    if (b1 != b0 || y1 != y0) abort();
    return 0;
}
