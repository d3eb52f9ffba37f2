/*
 * The feature module's internals: the host tensor and gatherer objects, the CPU gather that is
 * both the "cpu" mode and the oracle of the GPU tests, and the backend table. gather.c and
 * host_tensor.c hold the public API and pick a backend: the CPU one (gather_cpu.c) always
 * exists, the CUDA one (feature_cuda.cu) only in builds with GD_WITH_CUDA. A GPU gatherer reads
 * its table through a tier store (tier.h), which also holds its hot-row cache. This header is
 * plain C so that the .cu file can include it.
 */
#ifndef GD_FEATURE_INTERNAL_H
#define GD_FEATURE_INTERNAL_H

#include "core/internal.h"
#include "host_gather.h"
#include "placed.h"
#include "tier.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where the memory of a host tensor came from, which decides how it is released. */
typedef enum {
    GD__TENSOR_OWNED = 0,   /* anonymous mmap of our own */
    GD__TENSOR_ADOPTED = 1, /* the caller's memory; never freed here */
    GD__TENSOR_SHM = 2      /* a mapping of a POSIX shared memory segment */
} gd__tensor_kind;

struct gd_host_tensor {
    void *data;
    int64_t rows, cols, row_bytes;
    size_t bytes; /* rows * row_bytes */
    gd_dtype dtype;
    unsigned flags;
    gd__tensor_kind kind;
    void *map_base; /* OWNED and SHM: the mapping to munmap */
    size_t map_len;
    char *shm_name; /* SHM: the normalised name ("/..."), for messages */

    /*
     * Registration with the GPU (CUDA backend only). A tensor registered through a context
     * (gd_host_tensor_register) shares the registration of the context's registry, reg_holder,
     * and mirrors its chunks and device pointer; the holder itself is registered directly.
     */
    int registered;      /* 1 while every chunk is registered */
    int reg_device;      /* the device whose context registered it */
    int64_t reg_chunks;  /* chunks registered so far (kept exact while registering) */
    size_t chunk_bytes;  /* the chunk size used (page multiple) */
    void *device_ptr;    /* the tensor's address as kernels see it */
    gd_context_t *reg_context;    /* the context whose registry holds it (a reference) */
    gd_host_tensor_t *reg_holder; /* the registry's registration of its memory */
};

/*
 * A handle over t's memory that owns none of it (nothing is freed or unmapped with it), with
 * t's shape, read-only flag and kind (for the messages of a failed pin): what a context's
 * registry registers, so that the registration outlives whichever tensor asked first.
 */
gd_status gd__host_tensor_holder(const gd_host_tensor_t *t, gd_host_tensor_t **out);

typedef struct gd__cuda_gatherer gd__cuda_gatherer; /* defined in feature_cuda.cu */

struct gd_gatherer {
    gd_host_tensor_t *tensor;
    gd_context_t *context; /* its GPU (a reference) */
    int device;            /* the context's */
    gd_gather_mode mode;
    int64_t max_ids;
    int sort_ids;
    int threads;
    int sm_budget_count;     /* SMs, 0 = all; resolved from sm_budget_percent at create */
    double sm_budget_percent; /* > 0 when the budget was given as "N%" */
    int grid_cap_only;        /* do not use a green context for the SM budget */
    /*
     * zerocopy created with the host_gather option: the buffers of the CPU gather of host rows
     * exist (host_gather.h), and host_cpu says whether gathers take that way now; host_split
     * whether they split the host rows instead, host_share (GD__HOST_SHARE_ONE = all) to the CPU.
     */
    int host_gather;
    int host_cpu;
    int host_split;
    int host_share;
    int64_t host_rows_copied; /* rows CPU threads copied into staging (cpu, split), since create */
    gd__host_probe probe;     /* the last gd__gatherer_host_probe (rows 0: none) */
    /* The hot-row cache (zerocopy). hot_rows lives only while the backend builds the cache. */
    int64_t *hot_rows;        /* the rows to cache, hottest first; slot i holds hot_rows[i] */
    int64_t hot_count;        /* their number */
    int64_t cache_budget;     /* the cache's bytes (cache_bytes) */
    /* A placed cache (placed.h) instead of the hot rows: valid only while the backend builds. */
    const gd__gather_placed *placed;
    gd__tier_store *store;    /* aligned GPU modes: the table's tiers, the cache, the map */
    gd_gatherer_info info;    /* filled by the backend at init */
    gd__cuda_gatherer *cuda;  /* GPU modes: streams, events, device buffers */
};

/* ---- the CPU side (gather_cpu.c) */

/*
 * Find the first id outside [0, rows): GD_OK if none, else GD_ERR_RANGE with a message naming
 * the id, its position and the valid range.
 */
gd_status gd__gather_check_ids(const int64_t *ids, int64_t n, int64_t rows);
/*
 * One GPU memory budget over T tables (hot_rows.c): table t has rows[t] rows of row_bytes[t]
 * bytes (0 rows or 0 bytes: no table) scored by scores[t] (higher = read more often) and a
 * location map of map_bytes[t] bytes, paid once it caches a row. counts[t] gets how many of its
 * hottest rows to cache, the rows of every table ranked together by score (ties: the lower
 * table, then the lower row) and taken while they fit; with lists non-NULL, lists[t] gets those
 * rows, hottest first (gd_free; NULL for none).
 */
gd_status gd__hot_rows_split(int T, const int64_t *const *scores, const int64_t *rows,
                             const int64_t *row_bytes, const int64_t *map_bytes, int64_t budget,
                             int64_t **lists, int64_t *counts);
/*
 * out[i] = row ids[i] of src for i in [0, n), with up to `threads` threads; the ids must have
 * been checked. This is the "cpu" mode, the CPU half of "cpu-dma" and the tests' oracle.
 */
void gd__gather_rows_cpu(const void *src, int64_t row_bytes, const int64_t *ids, int64_t n,
                         void *out, int threads);
/*
 * The same copy in chunks of `chunk` rows (the last may be shorter), cut into pieces of `piece`
 * rows that the threads of one parallel region take in increasing order; done(user, lo, k) is
 * called once for each chunk [lo, lo + k), by the thread that copied its last piece, when all
 * of it is written, so that the caller can move it on (a DMA) while later chunks are copied.
 * done runs on the copying threads, concurrently.
 */
void gd__gather_rows_cpu_chunks(const void *src, int64_t row_bytes, const int64_t *ids, int64_t n,
                                void *out, int threads, int64_t piece, int64_t chunk,
                                void (*done)(void *user, int64_t lo, int64_t k), void *user);

/*
 * Parse an SM budget: "0" or "" = all SMs, "N" = N SMs, "N%" = that fraction of the SMs
 * (0 < N <= 100, fractions allowed). Exactly one of *count / *percent is set non-zero, or both
 * are zero for "all".
 */
gd_status gd__parse_sm_budget(const char *text, int *count, double *percent);
/* The SMs a budget allows on a GPU with `sms` multiprocessors (at least 1, at most sms). */
int gd__sm_budget_resolve(int count, double percent, int sms);

/* ---- host rows by CPU gather + DMA (host_gather.h; the CUDA backend) */

/*
 * Switch a zerocopy gatherer created with host_gather = 1 between zero-copy loads (cpu 0) and
 * the CPU gather (cpu 1) of its host rows; later gathers take the new way.
 */
gd_status gd__gatherer_set_host_cpu(gd_gatherer_t *g, int cpu);
/*
 * Switch such a gatherer to split (host_gather.h): the CPU copies the fraction f in [0, 1] of
 * the host rows while the kernel reads the rest zero-copy; gd__gatherer_set_host_cpu leaves it.
 */
gd_status gd__gatherer_set_host_split(gd_gatherer_t *g, double f);
/*
 * The host-row list of the gatherer's last CPU-gather or split call, for tests: *rows (pinned
 * host memory, *m entries: the staged rows) and *stage_slot (GPU memory, one entry per id in
 * the order the kernel read them: sorted when the gatherer sorts), valid until the next call.
 * *m = -1 when the last call did not take either way.
 */
gd_status gd__gatherer_host_list(gd_gatherer_t *g, const int64_t **rows,
                                 const int64_t **stage_slot, int64_t *m);
/*
 * Measure the ways on this table (start-up of "auto" and "split"): up to max_rows distinct
 * random rows that the GPU cache does not hold (seeded), gathered into scratch GPU memory the
 * probe allocates and frees, each way once to warm up and then `reps` times: zero-copy loads,
 * the CPU gather, then split with the CPU fraction split_f (< 0: gd__host_split_fraction of
 * the two rates just measured). The best rates go to *out and g->probe. The gatherer is left
 * in the way it was.
 */
gd_status gd__gatherer_host_probe(gd_gatherer_t *g, int64_t max_rows, int reps, uint64_t seed,
                                  double split_f, gd__host_probe *out);

/* ---- backends */

typedef struct {
    const char *name;
    gd_status (*tensor_register)(gd_host_tensor_t *t, int device);
    gd_status (*tensor_unregister)(gd_host_tensor_t *t);
    gd_status (*gatherer_init)(gd_gatherer_t *g);
    void (*gatherer_release)(gd_gatherer_t *g);
    gd_status (*gather)(gd_gatherer_t *g, const int64_t *ids, int64_t n, int ids_on_device,
                        void *out, void *stream);
    gd_status (*check_errors)(gd_gatherer_t *g);
} gd__feature_backend;

extern const gd__feature_backend gd__feature_cpu_backend;
#ifdef GD_WITH_CUDA
extern const gd__feature_backend gd__feature_cuda_backend;
#endif

/* The backend that serves a mode in this build (the CPU one reports GD_ERR_NO_DEVICE). */
const gd__feature_backend *gd__feature_backend_for(gd_gather_mode mode);

#ifdef __cplusplus
}
#endif

#endif /* GD_FEATURE_INTERNAL_H */
