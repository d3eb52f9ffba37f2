/*
 * The CUDA side of the core module, seen from C: device discovery and the GPU half of the
 * Philox cross-check. Implemented in device_cuda.cu when the toolkit is there; device.c gives
 * the CPU-only answers otherwise. Every CUDA call is checked; an error is read and cleared once.
 */
#ifndef GD_CORE_CUDA_H
#define GD_CORE_CUDA_H

#include "internal.h"

#ifdef __CUDACC__
#include <cuda_runtime.h>

/*
 * Check a CUDA runtime call inside a function that follows the GD_CHECK convention (st, fail:).
 * The error is read and cleared once and turned into a gd_status naming the call.
 */
#define GD_CUDA_CHECK(call)                                                               \
    do {                                                                                  \
        cudaError_t ce_ = (call);                                                         \
        if (ce_ != cudaSuccess) {                                                         \
            (void)cudaGetLastError();                                                     \
            st = gd__error(ce_ == cudaErrorMemoryAllocation ? GD_ERR_NO_MEMORY : GD_ERR_CUDA, \
                           "%s failed: %s (%s)", #call, cudaGetErrorString(ce_),          \
                           cudaGetErrorName(ce_));                                        \
            goto fail;                                                                    \
        }                                                                                 \
    } while (0)

/* Check the launch that just happened. */
#define GD_CUDA_CHECK_LAUNCH() GD_CUDA_CHECK(cudaGetLastError())
#endif

#ifdef __cplusplus
extern "C" {
#endif

#ifdef GD_WITH_CUDA
int gd__cuda_device_count(void);
gd_status gd__cuda_device_info(int device, gd_device_info *info);
/*
 * GD_OK if GPU device exists; else GD_ERR_NO_DEVICE (no GPU: "<what> needs a GPU ... or
 * <instead>") or GD_ERR_RANGE (no such ordinal), with that message.
 */
gd_status gd__cuda_check_device(int device, const char *what, const char *instead);
/* Make device current, remembering the previous one in *prev for gd__cuda_leave_device. */
gd_status gd__cuda_enter_device(int device, int *prev);
void gd__cuda_leave_device(int device, int prev);
/*
 * cudaHostAlloc of bytes (at least 16) for `what`; a failure (or an injected GD_FAULT_PIN)
 * gives GD_ERR_PIN naming the size, the locked-memory limit and how to raise it, and `instead`
 * (another way out, e.g. "lower max_ids").
 */
gd_status gd__cuda_pinned_alloc(void **p, size_t bytes, const char *what, const char *instead);
/*
 * Fill out[i] (4 words each) with gd_philox(seed, i, i >> 32 ... ) computed on the GPU, for the
 * CPU/GPU equality test: counter = (i low, i high, c, d).
 */
gd_status gd__cuda_philox_fill(int device, uint64_t seed, uint32_t c, uint32_t d, int64_t n,
                               uint32_t *out);
#endif

#ifdef __cplusplus
}
#endif

#endif
