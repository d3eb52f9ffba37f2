/*
 * The per-type gather of heterogeneous training (docs/hetero.md): a typed minibatch lists, for
 * each node type t, the global ids of its input nodes; type t owns the ids [first, first + rows)
 * and its own feature table (rows x dim, float32, float16 or bfloat16), so input node i's row is
 * row ids[i] - first of that table. The gather writes those rows, widened to the float32 the
 * model reads, as n consecutive rows of dim floats. The CPU function is the cpu and cpu-centric
 * modes' gather and the kernel's reference; the CUDA one is the gather of the GPU-centric modes,
 * reading a table in GPU memory (all-gpu) or registered host memory over PCIe (zero-copy).
 *
 * Where a row is: a table's rows are read through a gd__hetero_rows, the view a tier store
 * (tier.h) gives of them. Without a location map every row is at home (row r at slot r of the
 * home tier); zero-copy gives each type's table a store whose GPU cache holds the type's
 * hottest rows, and the map sends a cached row to its cache slot, so one launch per type reads
 * the cached rows from GPU memory and the rest over PCIe. The ids are the typed sampler's, which
 * draws only nodes of the type, so neither side checks them.
 */
#ifndef GD_FEATURE_HETERO_GATHER_H
#define GD_FEATURE_HETERO_GATHER_H

#include "core/internal.h"
#include "tier.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The rows of one table as the gather reads them: every tier's base (kernels take it by value)
 * and the location map of the table's rows (NULL: every row at home, slot = row). For the CUDA
 * gather the bases are device addresses and loc GPU memory; for the CPU gather host memory.
 */
typedef struct {
    gd__tier_bases bases;
    const int64_t *loc;
} gd__hetero_rows;

/* A table with every row at home (no cache): table is its row 0. */
gd__hetero_rows gd__hetero_rows_table(const void *table);
/* The rows of a tier store: its bases and its map (NULL until a cache is built). */
gd__hetero_rows gd__hetero_rows_store(const gd__tier_store *s);

/*
 * Where row r of a table of row_bytes rows starts, as rows says (host or device code). By value
 * and through gd__tier_base's switch rather than an indexed load, as tier.h's kernels take the
 * bases, so that a kernel keeps its copy in its parameter space.
 */
GD_HOST_DEVICE const unsigned char *gd__hetero_row_at(gd__hetero_rows rows, int64_t r,
                                                      int64_t row_bytes) {
    int64_t slot = r;
    const void *base = rows.loc ? gd__tier_base_of(rows.bases, rows.loc[r], &slot, NULL)
                                : gd__tier_base(rows.bases, rows.bases.home, NULL);
    return (const unsigned char *)base + slot * row_bytes;
}

/*
 * out[i * dim + j] = element (ids[i] - first, j) of the table (dtype float32, float16 or
 * bfloat16) as float32, each row read where rows says, for i in [0, n), with up to `threads`
 * threads (large gathers only).
 */
void gd__hetero_gather_cpu(const gd__hetero_rows *rows, gd_dtype dtype, int64_t dim,
                           int64_t first, const int64_t *ids, int64_t n, float *out, int threads);
#ifdef GD_WITH_CUDA
/*
 * The same on GPU device, queued on stream (a cudaStream_t of device): the bases are GPU memory
 * or device addresses of registered host memory, the map, ids and out GPU memory. The launch is
 * checked; nothing waits: readers of out order themselves after stream.
 */
gd_status gd__hetero_gather_cuda(int device, const gd__hetero_rows *rows, gd_dtype dtype,
                                 int64_t dim, int64_t first, const int64_t *ids, int64_t n,
                                 float *out, void *stream);
#endif

#ifdef __cplusplus
}
#endif

#endif /* GD_FEATURE_HETERO_GATHER_H */
