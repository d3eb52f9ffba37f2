/*
 * The per-type gather of heterogeneous training (docs/hetero.md): a typed minibatch lists, for
 * each node type t, the global ids of its input nodes; type t owns the ids [first, first + rows)
 * and its own feature table (rows x dim, float32, float16 or bfloat16), so input node i's row is
 * row ids[i] - first of that table. The gather writes those rows, widened to the float32 the
 * model reads, as n consecutive rows of dim floats. The CPU function is the cpu and cpu-centric
 * modes' gather and the kernel's reference; the CUDA one is the gather of the GPU-centric modes,
 * reading a table in GPU memory (all-gpu) or registered host memory over PCIe (zero-copy). The
 * ids are the typed sampler's, which draws only nodes of the type, so neither checks them.
 */
#ifndef GD_FEATURE_HETERO_GATHER_H
#define GD_FEATURE_HETERO_GATHER_H

#include "core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * out[i * dim + j] = element (ids[i] - first, j) of table (dtype float32, float16 or bfloat16)
 * as float32, for i in [0, n), with up to `threads` threads (large gathers only).
 */
void gd__hetero_gather_cpu(const void *table, gd_dtype dtype, int64_t dim, int64_t first,
                           const int64_t *ids, int64_t n, float *out, int threads);
#ifdef GD_WITH_CUDA
/*
 * The same on GPU device, queued on stream (a cudaStream_t of device): table is GPU memory or
 * the device address of registered host memory, ids and out GPU memory. The launch is checked;
 * nothing waits: readers of out order themselves after stream.
 */
gd_status gd__hetero_gather_cuda(int device, const void *table, gd_dtype dtype, int64_t dim,
                                 int64_t first, const int64_t *ids, int64_t n, float *out,
                                 void *stream);
#endif

#ifdef __cplusplus
}
#endif

#endif /* GD_FEATURE_HETERO_GATHER_H */
