/*
 * The dynamic cache on the GPU (issue 16, items 2 and 3): the state of dyncache.h (per-slot
 * states, users, policy bits, the sieve queue, the free list, window counts) in device memory,
 * changed by kernels with the shared rules of dyncache_impl.h, so that it decides what the CPU
 * reference decides, slot for slot (tests/test_dyncache_cuda.c). A minibatch goes through it in
 * steps queued on one stream, with no host walk of its rows:
 *   lookup   one thread per row: hits are taken (in use, referenced); the misses are listed, in
 *            order, with their count (memory the host may read, after an event: it reads those
 *            rows from disk);
 *   place    one thread, over the misses in order: a free slot or a victim under the policy
 *            (FILLING, in use), or a bypass (-1); it runs while the host reads the misses;
 *   filled   the misses' reads landed (the caller copied them into the slots): VALID;
 *   cancel   the reads failed: the misses' slots go back to FREE;
 *   release  the minibatch is done reading its slots.
 * The per-row slot is kept in a tier store's location map when one is given: a row of the disk
 * tier is gd__loc_make(GD__TIER_SSD, slot) while it has a slot and GD__DYNC_LOC_ABSENT (slot
 * bits all ones) when it has none, so the gather reads the cache through the map it already
 * reads. Rows whose map entry is another tier are never touched: callers look up only rows of
 * the disk tier (or every row, with a map of the disk tier alone). Rows of one minibatch must be
 * distinct (a sampler's input nodes are); an id out of range is recorded and fails
 * gd__dyncache_gpu_check_errors. Every call of one cache goes on one stream, or on streams
 * ordered by events: the placement writes the cache's scalars back as a whole.
 */
#ifndef GD_FEATURE_DYNCACHE_GPU_H
#define GD_FEATURE_DYNCACHE_GPU_H

#include "feature/dyncache.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gd__dyncache_gpu gd__dyncache_gpu;

typedef struct {
    int device;
    int64_t num_rows, num_slots;
    gd__evict_policy policy;
    uint64_t seed;
    /*
     * A location map of num_rows entries in the device's memory, the caller's (it outlives the
     * cache); every row the cache serves must be GD__DYNC_LOC_ABSENT in it at create. NULL: the
     * cache keeps its own slot per row.
     */
    int64_t *loc;
    int window;       /* 1: announce/withdraw (a uint16 per row in device memory) */
    int64_t max_rows; /* rows of one lookup at most (the scratch of the misses' list) */
} gd__dyncache_gpu_config;

gd_status gd__dyncache_gpu_create(const gd__dyncache_gpu_config *cfg, gd__dyncache_gpu **out);
/* Waits for nothing: the caller has finished the streams that used the cache. */
void gd__dyncache_gpu_destroy(gd__dyncache_gpu *c);

/*
 * Lookup of rows[0..n) (device memory): slots[i] = the hit's slot or -1 (with a map, also for
 * a row of another tier, which is neither a hit nor a miss); the misses' positions
 * i in order into miss_pos[0..m), their rows into miss_rows[0..m), m into *num_misses. slots
 * and miss_pos in device memory; miss_rows and num_misses in device memory or mapped pinned
 * memory (which the host reads once an event after this call has completed).
 */
gd_status gd__dyncache_gpu_lookup(gd__dyncache_gpu *c, const int64_t *rows, int64_t n,
                                  int64_t *slots, int64_t *miss_pos, int64_t *miss_rows,
                                  int64_t *num_misses, void *stream);
/* The misses of the last lookup take slots (slots[miss_pos[j]] = slot, or -1: bypass). */
gd_status gd__dyncache_gpu_place(gd__dyncache_gpu *c, const int64_t *rows, int64_t *slots,
                                 const int64_t *miss_pos, const int64_t *num_misses, void *stream);
/* The misses' slots (those >= 0) hold their rows now: VALID. */
gd_status gd__dyncache_gpu_filled(gd__dyncache_gpu *c, const int64_t *slots,
                                  const int64_t *miss_pos, const int64_t *num_misses, void *stream);
/* The misses' reads failed: their slots go back to FREE (the rows uncached). */
gd_status gd__dyncache_gpu_cancel(gd__dyncache_gpu *c, const int64_t *rows, const int64_t *slots,
                                  const int64_t *miss_pos, const int64_t *num_misses, void *stream);
/* The minibatch that acquired slots[0..n) (-1 skipped) is done reading them. */
gd_status gd__dyncache_gpu_release(gd__dyncache_gpu *c, const int64_t *slots, int64_t n,
                                   void *stream);
/* Window buffering: rows[0..n) (device memory, distinct) announced / withdrawn. */
gd_status gd__dyncache_gpu_announce(gd__dyncache_gpu *c, const int64_t *rows, int64_t n,
                                    void *stream);
gd_status gd__dyncache_gpu_withdraw(gd__dyncache_gpu *c, const int64_t *rows, int64_t n,
                                    void *stream);
/*
 * Errors the kernels recorded (a row out of range, a release of a slot not in use, a window
 * count past its bounds), after the work queued on stream: GD_ERR_RANGE / GD_ERR_INTERNAL.
 */
gd_status gd__dyncache_gpu_check_errors(gd__dyncache_gpu *c, void *stream);

/* The statistics, after the work queued on stream. */
gd_status gd__dyncache_gpu_stats(gd__dyncache_gpu *c, void *stream, gd__dyncache_stats *out);

/* The whole state, copied to host memory after the work queued on stream (tests). */
typedef struct {
    int64_t *slot_of;  /* num_rows */
    uint16_t *pending; /* num_rows (zeros without a window) */
    int64_t *row_of;   /* num_slots */
    uint8_t *state, *bit;
    int32_t *users;
    gd__dyncache_stats stats;
    int64_t num_free;
} gd__dyncache_gpu_snapshot;

gd_status gd__dyncache_gpu_snapshot_take(gd__dyncache_gpu *c, void *stream,
                                         gd__dyncache_gpu_snapshot *out);
void gd__dyncache_gpu_snapshot_free(gd__dyncache_gpu_snapshot *s);

#ifdef __cplusplus
}
#endif

#endif /* GD_FEATURE_DYNCACHE_GPU_H */
