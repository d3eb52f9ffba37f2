/*
 * The GPU side of widening half feature rows (widen.h): one kernel, queued on the gather stream
 * right after a half table's gather, converts the minibatch's rows from the set's half staging
 * buffer into its float32 rows before the event the train stage waits on. The rows are in GPU
 * memory on both sides, so the kernel is a plain grid-stride loop, two elements per thread
 * step where the buffers allow it; its cost is small next to the gather over PCIe that it
 * halves. The conversion follows the bits exactly as the CPU reference (widen.c) does.
 */
#include "widen.h"
#include "widen.cuh"

#include "core/cuda.h"

#include <cuda_runtime.h>

#define WIDEN_THREADS 256
#define WIDEN_MAX_BLOCKS 4096

/*
 * Pairs: src read as 32-bit words and out written as float2 (both aligned, count even, which
 * the caller checks), so a warp moves 128 B in and 256 B out per step.
 */
__global__ void widen_pairs(const uint32_t *__restrict__ src, int bf16, int64_t pairs,
                            float2 *__restrict__ out) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < pairs; i += stride) {
        const uint32_t w = __ldg(src + i);
        out[i] = make_float2(widen_one(w & 0xffffu, bf16), widen_one(w >> 16, bf16));
    }
}

__global__ void widen_single(const uint16_t *__restrict__ src, int bf16, int64_t count,
                             float *__restrict__ out) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride)
        out[i] = widen_one(src[i], bf16);
}

static unsigned blocks_for(int64_t items) {
    const int64_t b = (items + WIDEN_THREADS - 1) / WIDEN_THREADS;
    return (unsigned)(b < WIDEN_MAX_BLOCKS ? b : WIDEN_MAX_BLOCKS);
}

extern "C" gd_status gd__widen_cuda(int device, const void *src, gd_dtype dtype, int64_t count,
                                    float *out, void *stream) {
    gd_status st = GD_OK;
    int prev = -1, entered = 0;
    GD_REQUIRE(gd__widen_dtype(dtype), GD_ERR_INTERNAL,
               "widen: %s values are not float16 or bfloat16", gd_dtype_name(dtype));
    GD_REQUIRE(count >= 0 && (count == 0 || (src && out)), GD_ERR_INTERNAL,
               "widen: %lld values from %p into %p", (long long)count, src, (void *)out);
    if (count == 0) return GD_OK;
    GD_CHECK(gd__cuda_enter_device(device, &prev));
    entered = 1;
    {
        const cudaStream_t s = (cudaStream_t)stream;
        const int bf16 = dtype == GD_DTYPE_BFLOAT16;
        const int pairs_ok = count % 2 == 0 && (uintptr_t)src % 4 == 0 && (uintptr_t)out % 8 == 0;
        if (pairs_ok) {
            widen_pairs<<<blocks_for(count / 2), WIDEN_THREADS, 0, s>>>(
                (const uint32_t *)src, bf16, count / 2, (float2 *)out);
        } else {
            widen_single<<<blocks_for(count), WIDEN_THREADS, 0, s>>>((const uint16_t *)src, bf16,
                                                                     count, out);
        }
        GD_CUDA_CHECK_LAUNCH();
    }
fail:
    if (entered) gd__cuda_leave_device(device, prev);
    return st;
}
