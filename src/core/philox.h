/*
 * Philox4x32-10 (Salmon et al., SC'11), a counter-based random number generator: the output is
 * a pure function of a 128-bit counter and a 64-bit key, so any thread on the CPU or the GPU can
 * draw the number for (seed, epoch, minibatch, layer, node) directly, and the CPU and CUDA
 * samplers produce the same neighbours. This header compiles as C11 and as CUDA C: the same
 * function body runs on both sides.
 */
#ifndef GD_CORE_PHILOX_H
#define GD_CORE_PHILOX_H

#include <stdint.h>

#if defined(__CUDACC__)
#define GD_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define GD_HOST_DEVICE static inline
#endif

typedef struct {
    uint32_t v[4];
} gd_philox_ctr;

typedef struct {
    uint32_t v[2];
} gd_philox_key;

#define GD_PHILOX_M0 0xD2511F53u
#define GD_PHILOX_M1 0xCD9E8D57u
#define GD_PHILOX_W0 0x9E3779B9u
#define GD_PHILOX_W1 0xBB67AE85u

GD_HOST_DEVICE uint32_t gd_philox_mulhilo(uint32_t a, uint32_t b, uint32_t *hi) {
#if defined(__CUDA_ARCH__)
    *hi = __umulhi(a, b);
    return a * b;
#else
    uint64_t p = (uint64_t)a * (uint64_t)b;
    *hi = (uint32_t)(p >> 32);
    return (uint32_t)p;
#endif
}

/* One Philox round: two multiplications, the high halves xor-ed with the other words and key. */
GD_HOST_DEVICE gd_philox_ctr gd_philox_round(gd_philox_ctr c, gd_philox_key k) {
    uint32_t hi0, hi1;
    uint32_t lo0 = gd_philox_mulhilo(GD_PHILOX_M0, c.v[0], &hi0);
    uint32_t lo1 = gd_philox_mulhilo(GD_PHILOX_M1, c.v[2], &hi1);
    gd_philox_ctr out;
    out.v[0] = hi1 ^ c.v[1] ^ k.v[0];
    out.v[1] = lo1;
    out.v[2] = hi0 ^ c.v[3] ^ k.v[1];
    out.v[3] = lo0;
    return out;
}

/* Ten rounds, bumping the key by the Weyl constants between rounds. */
GD_HOST_DEVICE gd_philox_ctr gd_philox4x32_10(gd_philox_ctr c, gd_philox_key k) {
    for (int r = 0; r < 10; r++) {
        if (r > 0) {
            k.v[0] += GD_PHILOX_W0;
            k.v[1] += GD_PHILOX_W1;
        }
        c = gd_philox_round(c, k);
    }
    return c;
}

/*
 * The convention every graphdirect component uses: the key is the 64-bit seed, the counter is
 * (a, b, c, d) — e.g. (node low, node high, epoch/minibatch, layer/purpose) — so that streams for
 * different purposes never overlap.
 */
GD_HOST_DEVICE gd_philox_ctr gd_philox(uint64_t seed, uint32_t a, uint32_t b, uint32_t c,
                                       uint32_t d) {
    gd_philox_ctr ctr;
    gd_philox_key key;
    ctr.v[0] = a;
    ctr.v[1] = b;
    ctr.v[2] = c;
    ctr.v[3] = d;
    key.v[0] = (uint32_t)seed;
    key.v[1] = (uint32_t)(seed >> 32);
    return gd_philox4x32_10(ctr, key);
}

/* A uniform float in [0, 1) from the top 24 bits of a word (exact on both sides). */
GD_HOST_DEVICE float gd_philox_uniform(uint32_t x) { return (float)(x >> 8) * (1.0f / 16777216.0f); }

/* A uniform double in [0, 1) from two words (53 bits). */
GD_HOST_DEVICE double gd_philox_uniform_double(uint32_t hi, uint32_t lo) {
    uint64_t bits = ((uint64_t)hi << 21) ^ (uint64_t)(lo >> 11);
    return (double)(bits & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0);
}

/*
 * An integer uniform in [0, n) without modulo bias worth measuring: Lemire's multiply-shift on
 * a 32-bit word for n < 2^32 (bias below n / 2^32), two words for larger n.
 */
GD_HOST_DEVICE uint64_t gd_philox_below(uint32_t x, uint32_t y, uint64_t n) {
    if (n <= 0xffffffffull) return ((uint64_t)x * n) >> 32;
    uint64_t r = ((uint64_t)x << 32) | y;
#if defined(__CUDA_ARCH__)
    return __umul64hi(r, n);
#else
    return (uint64_t)(((unsigned __int128)r * n) >> 64);
#endif
}

#endif
