/*
 * Reading a neighbour list with full-width coalesced loads: the CUDA sampler's whole-list reads
 * (sample_cuda.cu) and the link ceiling's replay of them (read_plan_cuda.cu) share this code, so
 * the replay makes exactly the sampler's requests. CUDA only.
 */
#ifndef GD_SAMPLE_LIST_READ_CUH
#define GD_SAMPLE_LIST_READ_CUH

#include <cuda_runtime.h>
#include <stdint.h>

/* Width of the coalesced loads of a list (an int4 / longlong2 per lane). */
#define GD__LIST_VEC_BYTES 16

/* One 16-byte aligned load of indices, as its 16 / sizeof(IdxT) entries. */
__device__ __forceinline__ void gd__load_vec(const int *p,
                                             int (&e)[GD__LIST_VEC_BYTES / sizeof(int)]) {
    const int4 v = __ldg((const int4 *)p);
    e[0] = v.x;
    e[1] = v.y;
    e[2] = v.z;
    e[3] = v.w;
}

__device__ __forceinline__ void gd__load_vec(const long long *p,
                                             long long (&e)[GD__LIST_VEC_BYTES /
                                                            sizeof(long long)]) {
    const longlong2 v = __ldg((const longlong2 *)p);
    e[0] = v.x;
    e[1] = v.y;
}

/*
 * Entries [start, start + len) of indices, read by the G lanes of a group and handed to
 * sink(k, entry) for k in [0, len): lane j loads the j-th, (j + G)-th, ... 16-byte aligned piece
 * of the span, so one load of the group covers 16 * G consecutive bytes (full 128-byte requests
 * over PCIe). A piece's entries outside the list belong to neighbouring lists of the same array
 * and are dropped. A piece that is not wholly inside the array (only possible at its two ends
 * when the array is not 16-byte aligned there, as a caller's pinned array may be) is read entry
 * by entry instead, so nothing outside the array is ever read. Lanes may run different
 * iteration counts: no collectives here.
 */
template <int G, typename IdxT, typename Sink>
__device__ __forceinline__ void gd__read_list(const IdxT *__restrict__ indices, long long num_edges,
                                              long long start, long long len, int lane,
                                              Sink sink) {
    constexpr int PER = GD__LIST_VEC_BYTES / (int)sizeof(IdxT);
    const uintptr_t base = (uintptr_t)indices, end = (uintptr_t)(indices + num_edges);
    const uintptr_t lo = (uintptr_t)(indices + start), hi = (uintptr_t)(indices + start + len);
    for (uintptr_t a = (lo & ~(uintptr_t)(GD__LIST_VEC_BYTES - 1)) +
                       (uintptr_t)lane * GD__LIST_VEC_BYTES;
         a < hi; a += (uintptr_t)G * GD__LIST_VEC_BYTES) {
        /* List position of the piece's first entry: negative for the entries before the list
         * (a and lo are both multiples of sizeof(IdxT), so the division is exact). */
        const long long k0 = (long long)(intptr_t)(a - lo) / (long long)sizeof(IdxT);
        if (a >= base && a + GD__LIST_VEC_BYTES <= end) {
            IdxT e[PER];
            gd__load_vec((const IdxT *)a, e);
#pragma unroll
            for (int q = 0; q < PER; q++)
                if (k0 + q >= 0 && k0 + q < len) sink(k0 + q, e[q]);
        } else {
#pragma unroll
            for (int q = 0; q < PER; q++)
                if (k0 + q >= 0 && k0 + q < len) sink(k0 + q, __ldg(indices + start + k0 + q));
        }
    }
}

/*
 * indptr[v] and indptr[v + 1]: one 16-byte load for an even v when indptr is 16-byte aligned
 * (vec), else two loads.
 */
__device__ __forceinline__ void gd__read_indptr(const long long *__restrict__ indptr, long long v,
                                                int vec, long long *start, long long *end) {
    if (vec && (v & 1) == 0) {
        const longlong2 p = __ldg((const longlong2 *)(indptr + v));
        *start = p.x;
        *end = p.y;
    } else {
        *start = __ldg(indptr + v);
        *end = __ldg(indptr + v + 1);
    }
}

#endif /* GD_SAMPLE_LIST_READ_CUH */
