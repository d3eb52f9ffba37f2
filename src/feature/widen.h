/*
 * Half-precision feature rows (float16, bfloat16) widened to the float32 the model reads. A
 * half table is stored, cached and gathered in its own dtype, so every tier moves half the
 * bytes (disk, PCIe, the caches); the data path widens each minibatch's rows once, after the
 * gather: on the GPU with the kernel of widen_cuda.cu, on the gather stream, from a half
 * staging buffer into the set's float32 rows; on the CPU inside the gather itself, row by row
 * from the table, with no staging. Both conversions are exact (every float16 and bfloat16
 * value is a float32) and agree bit for bit, NaN payloads included: gd__widen_cpu is the
 * kernel's reference. Non-finite values pass through as the float32 path passes them; the
 * dataset check (io/dataset_check.c) is what refuses them, for every dtype alike.
 */
#ifndef GD_FEATURE_WIDEN_H
#define GD_FEATURE_WIDEN_H

#include "core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when rows of dtype are widened for the model (float16, bfloat16), else 0. */
int gd__widen_dtype(gd_dtype dtype);
/* out[i] = src[i] as float32 for i in [0, count): the CPU conversion and the kernel's oracle. */
void gd__widen_cpu(const uint16_t *src, gd_dtype dtype, int64_t count, float *out);
/*
 * The "cpu" gather of a half table, widening as it copies: out row i (cols float32) = table
 * row ids[i]. Checks the ids as gd_gather does; g must be a "cpu" gatherer of a half table.
 */
gd_status gd__gather_widen(gd_gatherer_t *g, const int64_t *ids, int64_t n, float *out);
#ifdef GD_WITH_CUDA
/*
 * Queue on stream (a cudaStream_t of GPU device) the widening of count half values at src (GPU
 * memory) into out (GPU memory); the launch is checked. Nothing waits: readers of out order
 * themselves after stream, as they do after the gather.
 */
gd_status gd__widen_cuda(int device, const void *src, gd_dtype dtype, int64_t count, float *out,
                         void *stream);
#endif

#ifdef __cplusplus
}
#endif

#endif /* GD_FEATURE_WIDEN_H */
