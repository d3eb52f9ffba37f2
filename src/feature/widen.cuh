/*
 * The device side of widening one float16 or bfloat16 value to float32, bit for bit as the CPU
 * reference (widen.c) computes it: the widen kernel (widen_cuda.cu) and the per-type gather of
 * heterogeneous training (hetero_gather_cuda.cu), which widens in registers as it copies, share
 * it so that every GPU path converts the same way.
 */
#ifndef GD_FEATURE_WIDEN_CUH
#define GD_FEATURE_WIDEN_CUH

#include <cuda_runtime.h>
#include <stdint.h>

/* float16 -> float32, bit for bit as widen.c's half_to_float. */
__device__ __forceinline__ float widen_half(uint32_t h) {
    const uint32_t sign = (h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0) {
        const float f = (float)mant * 5.9604644775390625e-8f; /* 2^-24: exact, a normal float */
        return sign ? -f : f;
    }
    if (exp == 0x1f) return __uint_as_float(sign | 0x7f800000u | (mant << 13));
    return __uint_as_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

/* A float16 (bf16 = 0) or bfloat16 (bf16 = 1) value in the low 16 bits of h, as float32. */
__device__ __forceinline__ float widen_one(uint32_t h, int bf16) {
    return bf16 ? __uint_as_float(h << 16) : widen_half(h);
}

#endif /* GD_FEATURE_WIDEN_CUH */
