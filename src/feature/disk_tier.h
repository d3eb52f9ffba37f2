/*
 * Feature rows on disk, read for a GPU (issue 16, items 1-4; docs/feature_store.md, "The disk
 * tier on the GPU"). Three tiers of one table: the hottest rows in a pinned host buffer that
 * the GPU reads with zero-copy loads, a dynamic GPU cache (dyncache_gpu.h) filled and evicted
 * during the epoch, and the file (a dataset's features.npy from its data offset) read by the
 * host I/O engine (io/ioeng.h: io_uring or pread threads, O_DIRECT) into pinned staging. One
 * location map in GPU memory says, per row, the host buffer's slot or the disk tier (with the
 * row's cache slot while it has one), as the tier store's encoding does (tier.h).
 *
 * A gather of a minibatch's distinct rows, queued on one stream:
 *   1. the GPU looks every row up (hits are taken; the disk rows without a slot are listed, in
 *      order, in pinned memory);
 *   2. the host waits for that list only, and the I/O engine reads those rows into pinned
 *      staging, while the GPU places them in the cache (free slots, victims, bypasses);
 *   3. the GPU copies each read row into its slot (or, bypassing the cache, straight into the
 *      output), then gathers every other row from the host buffer or the cache, and releases
 *      the minibatch's slots.
 * The host never walks the minibatch's ids and never copies a row: it reads the misses. A failed
 * read fails the gather naming the file and the offset; the slots of its rows are cancelled,
 * so no later gather reads what the failed read left.
 */
#ifndef GD_FEATURE_DISK_TIER_H
#define GD_FEATURE_DISK_TIER_H

#include "core/internal.h"
#include "feature/dyncache.h"
#include "io/ioeng.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const char *path;    /* the file of the table (num_stripes 0) */
    int64_t data_offset; /* where row 0 starts */
    /* Or the table striped over num_stripes files (io/ioeng.h, gd__stripes): stripes[k] is file
     * k's path and data offset, stripe_rows the rows of a unit; path is then unused. */
    const gd__ioeng_file *stripes;
    int num_stripes;
    int64_t stripe_rows;
    int64_t rows, row_bytes;
    int device; /* the GPU */
    /* The rows of the pinned host buffer (distinct, hottest first), host_count of them. */
    const int64_t *host_rows;
    int64_t host_count;
    int64_t gpu_slots; /* rows the dynamic GPU cache holds */
    gd__evict_policy policy;
    uint64_t seed;
    int64_t max_rows; /* rows of one gather at most */
    int window;       /* 1: window buffering (gd__disk_tier_announce / _withdraw) */
    gd__ioeng_options io;
} gd__disk_tier_config;

typedef struct {
    int64_t gathers, rows;
    int64_t host_rows;        /* rows read from the pinned host buffer */
    gd__dyncache_stats cache; /* the disk rows: lookups, hits, fills, evictions, bypasses */
    int64_t bytes_read;       /* what the gathers read from the file (aligned spans included;
                                 not the host buffer's fill at open) */
    int64_t bytes_useful;     /* the misses' rows */
    double read_s;            /* host time in the I/O engine's reads */
} gd__disk_tier_stats;

typedef struct gd__disk_tier gd__disk_tier;

/*
 * Open the file (it must hold rows x row_bytes from data_offset), read the host buffer's rows
 * into pinned memory, and build the map and the cache on the GPU.
 */
gd_status gd__disk_tier_open(const gd__disk_tier_config *cfg, gd__disk_tier **out);
/* Waits for the stream work of its gathers first. */
void gd__disk_tier_close(gd__disk_tier *t);
/*
 * Rows ids[0..n) (device memory, distinct, in [0, rows)) into out (device memory, n rows of
 * row_bytes), on stream. Returns once the reads from disk have landed in pinned staging; the
 * GPU work is queued on stream (readers of out order themselves after it).
 */
gd_status gd__disk_tier_gather(gd__disk_tier *t, const int64_t *ids, int64_t n, void *out,
                               void *stream);
/*
 * Window buffering (dyncache.h): the rows ids[0..n) (device memory, distinct) of a minibatch
 * sampled ahead are announced, on stream, so that the cache keeps those it holds until the
 * minibatch withdraws them, just before its own gather. A tier opened with window = 1 only.
 */
gd_status gd__disk_tier_announce(gd__disk_tier *t, const int64_t *ids, int64_t n, void *stream);
gd_status gd__disk_tier_withdraw(gd__disk_tier *t, const int64_t *ids, int64_t n, void *stream);
/* Errors its kernels recorded (an id out of range), after the work queued on stream. */
gd_status gd__disk_tier_check_errors(gd__disk_tier *t, void *stream);
/* The counts so far (waits for the work queued on stream, for the cache's). */
gd_status gd__disk_tier_get_stats(gd__disk_tier *t, void *stream, gd__disk_tier_stats *out);
/* The pinned host buffer's bytes and the GPU's (map and cache), for the plan. */
void gd__disk_tier_bytes(const gd__disk_tier *t, int64_t *host_bytes, int64_t *gpu_bytes);

#ifdef __cplusplus
}
#endif

#endif /* GD_FEATURE_DISK_TIER_H */
