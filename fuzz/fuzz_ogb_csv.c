/*
 * Fuzz target for the OGB CSV parser (gd__csv_parse_chunk) in its three modes: integers (with
 * and without splitting two columns), labels and float features. The first byte picks the
 * mode, an id limit and where the buffer is split between two calls. Everything parsed is
 * freed; a leak, or values that do not add up to rows x columns, aborts.
 */
#include "io/ingest.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int64_t parse(const char *buf, size_t len, uint8_t flags, size_t split) {
    gd__csv c;
    memset(&c, 0, sizeof c);
    c.what = "fuzz.csv";
    c.kind = (gd__csv_kind)(flags % 3);
    if (c.kind == GD__CSV_INT && (flags & 4)) {
        c.split2 = 1;
        c.ncols = 2;
    }
    if (c.kind == GD__CSV_LABEL) c.ncols = 1;
    c.limit = (flags & 8) ? 5000 : 0;
    c.reserve_rows = (flags & 16) ? 3 : 0;
    size_t used = 0;
    int64_t rows = -1;
    if (split > len) split = len;
    if (gd__csv_parse_chunk(&c, buf, split, 0, &used) == GD_OK) {
        if (used > split) abort();
        if (gd__csv_parse_chunk(&c, buf + used, len - used, 1, &used) == GD_OK) rows = c.rows;
    }
    if (c.kind == GD__CSV_FLOAT) {
        if (c.floats.len != c.rows * c.ncols && rows >= 0) abort();
        for (int64_t i = 0; i < c.floats.len; i++)
            if (!isfinite(c.floats.data[i])) abort();
    } else if (rows >= 0) {
        int64_t per = c.split2 ? 1 : c.ncols;
        if (c.ints.len != c.rows * per || (c.split2 && c.ints2.len != c.rows)) abort();
    }
    gd__csv_free(&c);
    return rows;
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
    int64_t split = parse(buf, len, flags, (size_t)(flags >> 5) * len / 8);
    if (whole != split) abort();
    gd_alloc_stats(&b1, &y1);
    if (b1 != b0 || y1 != y0) abort();
    return 0;
}
