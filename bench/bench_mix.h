/*
 * The benchmarks' counter-based random numbers, in a header of their own so that the
 * standalone helpers (bench/helpers/gen_ogb_npz.c, which needs only zlib) draw with the same
 * code as the drivers behind `graphdirect bench`.
 */
#ifndef GD_BENCH_MIX_H
#define GD_BENCH_MIX_H

#include <stdint.h>

/* One step of SplitMix64: a fast, well-mixed counter-based generator. */
static inline uint64_t bench_mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}
/* A uniform integer in [0, bound) from 64 random bits (bias below 2^-32 for bounds < 2^32). */
static inline int64_t bench_below(uint64_t bits, int64_t bound) {
    return (int64_t)(((unsigned __int128)bits * (uint64_t)bound) >> 64);
}

#endif
