/*
 * The gather kernels of the CUDA feature backend (feature_cuda.cu, which alone includes this
 * file), and the choice of the aligned kernel's shape for a row width.
 *
 * The zero-copy gather is the point of the module. A group of G lanes (a warp for wide rows,
 * a sub-warp for narrow ones) copies one row. It reads the aligned 16-byte words that cover
 * the row, starting at the 128-byte boundary at or below it (16*G bytes for groups narrower
 * than 8 lanes), so that each warp-wide load touches whole cachelines, and lanes whose word
 * holds no byte of the row stay idle. Every lane issues U loads (plus one look-ahead word on
 * the group's first lane) before it stores anything, so many independent PCIe reads are in
 * flight per thread. A row that does not start on the same 16-byte phase as its destination
 * is realigned in registers: each output word is a funnel shift of a lane's word and its
 * neighbour's, fetched with one shuffle. Output words that the row covers fully are written
 * with 16-byte stores; the first and last, shared with neighbouring rows, byte by byte.
 * The row's tier comes from the tier store (tier.h): without a location map every row is in
 * the store's home tier (pinned host memory for "zerocopy", GPU memory for "gpu"); with one,
 * one load of the map gives the tier and the slot, and only the base pointer changes (a peer
 * GPU's cache too: its row is read with the same loads, over NVLink). The naive
 * kernel (one thread per element) is kept for comparison.
 */
#ifndef GD_FEATURE_GATHER_KERNELS_CUH
#define GD_FEATURE_GATHER_KERNELS_CUH

#include "core/cuda.h"
#include "core/dev_error.h"
#include "tier.h"

#include <cuda_runtime.h>

#include <stdio.h>
#include <string.h>

/*
 * What a kernel records about the first out-of-range id it meets (core/dev_error.h): the output
 * position, then the id.
 */
#define ERR_ID_RANGE 1u

#define BLOCK_THREADS 256
#define FULL_MASK 0xffffffffu

/* ------------------------------------------------------------------ kernels */

/* Concatenate two 16-byte words (lo first) and take the 16 bytes starting at byte off. */
__device__ __forceinline__ uint4 shift_bytes(uint4 lo, uint4 hi, unsigned off) {
    unsigned y0, y1, y2, y3, y4, y5;
    if (off & 8) {
        y0 = lo.z, y1 = lo.w, y2 = hi.x, y3 = hi.y, y4 = hi.z, y5 = hi.w;
    } else {
        y0 = lo.x, y1 = lo.y, y2 = lo.z, y3 = lo.w, y4 = hi.x, y5 = hi.y;
    }
    if (off & 4) {
        y0 = y1, y1 = y2, y2 = y3, y3 = y4, y4 = y5;
    }
    const unsigned bits = (off & 3) * 8;
    uint4 r;
    r.x = __funnelshift_r(y0, y1, bits);
    r.y = __funnelshift_r(y1, y2, bits);
    r.z = __funnelshift_r(y2, y3, bits);
    r.w = __funnelshift_r(y3, y4, bits);
    return r;
}

__device__ __forceinline__ uint4 shfl_word(uint4 v, int src_lane, int width) {
    uint4 r;
    r.x = __shfl_sync(FULL_MASK, v.x, src_lane, width);
    r.y = __shfl_sync(FULL_MASK, v.y, src_lane, width);
    r.z = __shfl_sync(FULL_MASK, v.z, src_lane, width);
    r.w = __shfl_sync(FULL_MASK, v.w, src_lane, width);
    return r;
}

/* Write bytes [lo, hi) of word w to p + lo ... p + hi - 1 (p is the word's 16-byte slot). */
__device__ __forceinline__ void store_partial(unsigned char *p, uint4 w, unsigned lo, unsigned hi) {
    for (unsigned b = lo; b < hi; b++) {
        unsigned c = b < 8 ? (b < 4 ? w.x : w.y) : (b < 12 ? w.z : w.w);
        p[b] = (unsigned char)(c >> (8 * (b & 3)));
    }
}

/*
 * Which positions a launch of the aligned gather writes: every one, or, for a split of the host
 * rows (host_gather.h), those without a staging slot (the first pass, beside the CPU's copying)
 * or those with one (the second, after the DMA).
 */
#define PASS_ALL 0
#define PASS_UNSTAGED 1
#define PASS_STAGED 2

/*
 * The aligned gather: row ids[i] of the table to row perm[i] (or i) of out, for i in [0, n)
 * (those the pass takes). G lanes per row, U loads per lane per round; the row loop strides
 * over the whole grid, so a grid capped by the SM budget still covers every row. Trip counts
 * are kept uniform across the warp because the shuffles need every lane.
 */
template <int G, int U>
__global__ void __launch_bounds__(BLOCK_THREADS)
    gather_aligned_kernel(gd__tier_bases tiers, const long long *__restrict__ loc,
                          long long rows, long long row_bytes, const long long *__restrict__ ids,
                          const int *__restrict__ perm, long long n,
                          unsigned char *__restrict__ out, const unsigned char *stage,
                          const long long *__restrict__ stage_slot, int pass,
                          gd__dev_error *err) {
    constexpr int GROUPS = 32 / G;
    constexpr unsigned long long SPAN = 16ull * G < 128 ? 16ull * G : 128;
    const int lane = threadIdx.x & 31;
    const int lig = lane % G;
    const int grp = lane / G;
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
    const unsigned long long R = (unsigned long long)row_bytes;
    const unsigned long long home_base = (unsigned long long)gd__tier_base(tiers, tiers.home, NULL);

    for (long long r0 = warp * GROUPS; r0 < n; r0 += warps * GROUPS) {
        const long long r = r0 + grp;
        bool active = r < n;
        /* A pass of a split skips the positions the other pass writes. */
        if (active && pass != PASS_ALL) active = (stage_slot[r] >= 0) == (pass == PASS_STAGED);
        long long id = 0, dst = 0;
        if (active) {
            id = ids[r];
            dst = perm ? (long long)perm[r] : r;
        }
        const bool bad = active && (id < 0 || id >= rows);
        if (bad && lig == 0) gd__dev_error_record(err, ERR_ID_RANGE, dst, id, 0);
        const bool load_ok = active && !bad;
        /* With a location map, it says which tier holds the row and where; without, the row
         * is at its own index in the store's home tier. */
        unsigned long long base = home_base;
        int64_t slot = id;
        if (loc && load_ok)
            base = (unsigned long long)gd__tier_base_of(tiers, __ldg(loc + id), &slot, NULL);
        /* A host row the CPU gathered (host_gather.h) is read from its staging slot instead. */
        if (stage_slot && load_ok) {
            const long long k = stage_slot[r];
            if (k >= 0) {
                base = (unsigned long long)stage;
                slot = k;
            }
        }

        /*
         * Geometry of the row, all in byte addresses. Output word v (16-byte aligned, at
         * d0 + 16v) needs the 16 source bytes at s - e + 16v, which lie in source words
         * a + v and a + v + 1 counted from w0, shifted by off bytes.
         */
        const unsigned long long s = base + (load_ok ? (unsigned long long)slot * R : 0);
        const unsigned long long d = (unsigned long long)out + (unsigned long long)dst * R;
        const unsigned long long e = d & 15;
        const unsigned long long d0 = d - e;
        const unsigned long long nw = (((d + R + 15) & ~15ull) - d0) >> 4;
        const unsigned long long sa = s - e;
        const unsigned long long a_addr = sa & ~15ull;
        const unsigned off = (unsigned)(sa - a_addr);
        const unsigned long long w0 = a_addr & ~(SPAN - 1);
        const long long a = (long long)((a_addr - w0) >> 4);
        const long long m_lo = (long long)((s - w0) >> 4);
        const long long m_hi = (long long)((s + R - 1 - w0) >> 4);
        const unsigned chunks = active ? (unsigned)(m_hi / G + 1) : 0u;
        const unsigned rounds_chunks = __reduce_max_sync(FULL_MASK, chunks);
        const uint4 *words = (const uint4 *)w0;

        for (unsigned c0 = 0; c0 < rounds_chunks; c0 += U) {
            uint4 w[U + 1];
            /* Issue every load of the round before any store. */
#pragma unroll
            for (int k = 0; k <= U; k++) {
                const long long m = (long long)(c0 + k) * G + lig;
                w[k] = make_uint4(0, 0, 0, 0);
                if (load_ok && (k < U || lig == 0) && m >= m_lo && m <= m_hi)
                    w[k] = __ldg(words + m);
            }
#pragma unroll
            for (int k = 0; k < U; k++) {
                /* The first lane lends the next chunk's word to the last lane. */
                const uint4 lend = lig == 0 ? w[k + 1] : w[k];
                const uint4 next = shfl_word(lend, (lig + 1) % G, G);
                const long long m = (long long)(c0 + k) * G + lig;
                const long long v = m - a;
                if (!active || v < 0 || (unsigned long long)v >= nw) continue;
                const uint4 o = shift_bytes(w[k], next, off);
                const unsigned long long slot = d0 + 16ull * (unsigned long long)v;
                unsigned lo = slot < d ? (unsigned)(d - slot) : 0u;
                unsigned hi = slot + 16 > d + R ? (unsigned)(d + R - slot) : 16u;
                if (lo == 0 && hi == 16)
                    *(uint4 *)slot = o;
                else
                    store_partial((unsigned char *)slot, o, lo, hi);
            }
        }
    }
}

/* The naive zero-copy gather: one thread per element of T, for comparison. */
template <typename T>
__global__ void __launch_bounds__(BLOCK_THREADS)
    gather_naive_kernel(const T *__restrict__ src, long long rows, long long cols,
                        const long long *__restrict__ ids, long long n, T *__restrict__ out,
                        gd__dev_error *err) {
    const long long total = n * cols;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        const long long r = i / cols, c = i - r * cols;
        const long long id = ids[r];
        if (id < 0 || id >= rows) {
            if (c == 0) gd__dev_error_record(err, ERR_ID_RANGE, r, id, 0);
            out[i] = T(0);
        } else {
            out[i] = src[id * cols + c];
        }
    }
}

/*
 * Step 1 of the CPU gather of host rows (host_gather.h), in two kernels around a prefix sum of
 * the flags: flag the positions whose row is in the host tier (every in-range row without a
 * map: the zerocopy home is host memory), then, of the m host rows, give the last s =
 * gd__host_share_rows(m, share) in position order their staging slots and list their rows in
 * pinned memory, with their number s (share GD__HOST_SHARE_ONE: every host row). The others
 * get slot -1. gd__host_rows_split_cpu is the reference.
 */
__global__ void host_flag_kernel(const long long *__restrict__ loc, long long rows,
                                 const long long *__restrict__ ids, long long n, int *flags) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        const long long id = ids[i];
        flags[i] = id >= 0 && id < rows && (!loc || gd__loc_tier(__ldg(loc + id)) == GD__TIER_HOST);
    }
}

__global__ void host_list_kernel(const long long *__restrict__ ids, const int *__restrict__ flags,
                                 const int *__restrict__ pos, long long n, int share,
                                 long long *stage_slot, long long *list, long long *count) {
    if (n <= 0) return;
    const long long m = (long long)pos[n - 1] + flags[n - 1];
    const long long s = (long long)gd__host_share_rows(m, share), z = m - s;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        const long long j = (long long)pos[i] - z;
        const bool staged = flags[i] && j >= 0;
        stage_slot[i] = staged ? j : -1;
        if (staged) list[j] = ids[i];
        if (i == n - 1) *count = s;
    }
}

__global__ void iota_kernel(int *p, long long n) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        p[i] = (int)i;
}

/* ------------------------------------------------------------- kernel choice */

typedef void (*aligned_kernel_fn)(gd__tier_bases, const long long *, long long, long long,
                                  const long long *, const int *, long long, unsigned char *,
                                  const unsigned char *, const long long *, int,
                                  gd__dev_error *);

/*
 * Lanes per row: enough that one round of U loads per lane covers a row with its alignment
 * slack, so narrow rows share a warp (fewer idle lanes) and wide rows get whole warps. Groups
 * of 8 lanes or more read whole 128-byte lines per load instruction (one full PCIe request).
 * GD_GATHER_SHAPE = "LANESxLOADS" overrides the choice, for tuning.
 */
static gd_status choose_group(long long row_bytes, int *group, int *unroll) {
    gd_status st = GD_OK;
    const char *shape = NULL;
    const long long words = (row_bytes + 15) / 16 + 8;
    /* Rows of 128 bytes or more get 8 lanes or more: 64-byte requests halve the throughput. */
    int g = row_bytes >= 128 ? 8 : 1, u = 8;
    GD_CHECK(gd_param_get("GD_GATHER_SHAPE", &shape));
    if (shape && *shape && strcmp(shape, "auto") != 0) {
        char tail = 0;
        GD_REQUIRE(sscanf(shape, "%dx%d%c", &g, &u, &tail) == 2 && g >= 1 && g <= 32 &&
                       (g & (g - 1)) == 0 && (u == 4 || u == 8 || u == 16),
                   GD_ERR_INVALID_ARG,
                   "GD_GATHER_SHAPE '%s' is not auto or LANESxLOADS with LANES a power of two "
                   "in 1..32 and LOADS 4, 8 or 16 (e.g. 8x8)",
                   shape);
    } else {
        while (g < 32 && (long long)g * u < words) g *= 2;
    }
    *group = g;
    *unroll = u;
    return GD_OK;
fail:
    return st;
}

#define GD_GATHER_KERNELS(G)                                                                       \
    case G:                                                                                        \
        return unroll == 4   ? gather_aligned_kernel<G, 4>                                         \
               : unroll == 8 ? gather_aligned_kernel<G, 8>                                         \
                             : gather_aligned_kernel<G, 16>;

static aligned_kernel_fn aligned_kernel(int group, int unroll) {
    switch (group) {
        GD_GATHER_KERNELS(1)
        GD_GATHER_KERNELS(2)
        GD_GATHER_KERNELS(4)
        GD_GATHER_KERNELS(8)
        GD_GATHER_KERNELS(16)
    default:
        GD_GATHER_KERNELS(32)
    }
}

#endif /* GD_FEATURE_GATHER_KERNELS_CUH */
