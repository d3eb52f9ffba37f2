/*
 * Feature rows read from disk through a host dynamic cache: the SSD tier's CPU path (issue 16,
 * items 1, 3 and 7; docs/feature_store.md, "Rows on disk"). The table stays in its file (a
 * dataset's features.npy, from its data offset); a gather of distinct rows looks each one up in
 * the dynamic cache (dyncache.h), copies the hits out of the cache's host slots, has the I/O
 * engine (io/ioeng.h: io_uring or pread threads, O_DIRECT) read the misses into their slots and
 * the rows that find no slot straight into the output, and releases the slots. A failed read
 * fails the gather naming the file and the offset, and leaves no slot holding what it read: the
 * output is never a wrong row. The GPU path (a lookup kernel, pinned staging) builds on the same
 * cache rules.
 */
#ifndef GD_FEATURE_DISK_ROWS_H
#define GD_FEATURE_DISK_ROWS_H

#include "core/internal.h"
#include "feature/dyncache.h"
#include "io/ioeng.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const char *path;    /* the file of the table (num_stripes 0) */
    int64_t data_offset; /* where row 0 starts */
    /* Or the table striped over num_stripes files (ioeng.h, gd__stripes): stripes[k] is file
     * k's path and data offset, stripe_rows the rows of a unit; path is then unused. */
    const gd__ioeng_file *stripes;
    int num_stripes;
    int64_t stripe_rows;
    int64_t rows, row_bytes;
    int64_t cache_rows; /* host cache slots (0: every row is read from the file) */
    gd__evict_policy policy;
    gd__ioeng_options io; /* queue depth, instances, backend, O_DIRECT */
} gd__disk_rows_config;

typedef struct {
    int64_t gathers, rows, hits, fills, bypasses;
    int64_t bytes_read; /* what the file gave (aligned spans included) */
} gd__disk_rows_stats;

typedef struct gd__disk_rows gd__disk_rows;

/* Open the file (its size must hold rows x row_bytes from data_offset) and allocate the cache. */
gd_status gd__disk_rows_open(const gd__disk_rows_config *cfg, gd__disk_rows **out);
void gd__disk_rows_close(gd__disk_rows *d);
/* Rows ids[0..n) (distinct, in [0, rows)) into out, row after row. */
gd_status gd__disk_rows_gather(gd__disk_rows *d, const int64_t *ids, int64_t n, void *out);
gd__disk_rows_stats gd__disk_rows_get_stats(gd__disk_rows *d);

#ifdef __cplusplus
}
#endif

#endif /* GD_FEATURE_DISK_ROWS_H */
