/*
 * The GPU side of the per-type gather (hetero_gather.h): one launch per node type writes the
 * type's input rows, widened to float32, into the model's input tensor on the nn stream. The
 * table is GPU memory (all-gpu) or registered host memory read over PCIe (zero-copy), so the
 * reads are what matters: a group of G lanes (a power of two up to a warp, sized to the row)
 * copies one row, lane k reading words k, k + G, ... of it, so a group's loads cover the row's
 * consecutive bytes and whole cachelines. Where the row size, the table and the output are
 * 16-byte aligned (every width that is a multiple of 4 float32 or 8 half values, in tables that
 * start aligned as the dataset's .npy files do) each load is a 16-byte word and the widened
 * values leave as 16-byte stores; otherwise each lane moves one element at a time, still
 * consecutive across the group. A half value is widened in registers (widen.cuh), so a half
 * table crosses PCIe at half the bytes with no staging buffer. Rows are independent: the row
 * loop strides over the grid, so a capped grid covers any count. A row's start comes from the
 * view of its table (gd__hetero_row_at): with a location map (zero-copy's per-type GPU cache)
 * one load of the map picks the cache slot or the home row, so the cached rows are read from
 * GPU memory and the rest over PCIe in the same launch; the 16-byte path then needs every
 * tier's base aligned.
 */
#include "hetero_gather.h"
#include "widen.cuh"

#include "core/cuda.h"

#include <cuda_runtime.h>

#define HG_THREADS 256
#define HG_MAX_BLOCKS 4096

/* What a table holds: the template parameter of the kernels. */
enum { HG_F32 = 0, HG_F16 = 1, HG_BF16 = 2 };

/* Element k of a row of kind K, as float32. */
template <int K> __device__ __forceinline__ float hg_elem(const void *row, long long k) {
    if (K == HG_F32) return __ldg((const float *)row + k);
    return widen_one(__ldg((const unsigned short *)row + k), K == HG_BF16);
}

/* Two half values packed in a 32-bit word, widened (the low one first, as memory holds them). */
template <int K> __device__ __forceinline__ float2 hg_pair(unsigned w) {
    return make_float2(widen_one(w & 0xffffu, K == HG_BF16), widen_one(w >> 16, K == HG_BF16));
}

/*
 * The aligned kernel: words 16-byte words a row (4 float32 or 8 half values), each written as
 * one float4 (float32) or two (half) of the output row.
 */
template <int K>
__global__ void __launch_bounds__(HG_THREADS)
    hg_rows_vec(gd__hetero_rows rows, long long words, long long first,
                const long long *__restrict__ ids, long long n, float4 *__restrict__ out,
                int group) {
    constexpr int PER = K == HG_F32 ? 1 : 2; /* output float4 per input word */
    const int lig = threadIdx.x & (group - 1);
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long groups = (long long)gridDim.x * blockDim.x / group;
    for (long long r = tid / group; r < n; r += groups) {
        const uint4 *src = (const uint4 *)gd__hetero_row_at(rows, ids[r] - first, words * 16);
        float4 *dst = out + r * words * PER;
#pragma unroll 4
        for (long long w = lig; w < words; w += group) {
            const uint4 v = __ldg(src + w);
            if (K == HG_F32) {
                dst[w] = make_float4(__uint_as_float(v.x), __uint_as_float(v.y),
                                     __uint_as_float(v.z), __uint_as_float(v.w));
            } else {
                const float2 a = hg_pair<K>(v.x), b = hg_pair<K>(v.y), c = hg_pair<K>(v.z),
                             d = hg_pair<K>(v.w);
                dst[2 * w] = make_float4(a.x, a.y, b.x, b.y);
                dst[2 * w + 1] = make_float4(c.x, c.y, d.x, d.y);
            }
        }
    }
}

/* Any width and alignment: one element a lane per step. */
template <int K>
__global__ void __launch_bounds__(HG_THREADS)
    hg_rows_scalar(gd__hetero_rows rows, long long dim, long long row_bytes, long long first,
                   const long long *__restrict__ ids, long long n, float *__restrict__ out,
                   int group) {
    const int lig = threadIdx.x & (group - 1);
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long groups = (long long)gridDim.x * blockDim.x / group;
    for (long long r = tid / group; r < n; r += groups) {
        const unsigned char *src = gd__hetero_row_at(rows, ids[r] - first, row_bytes);
        float *dst = out + r * dim;
#pragma unroll 4
        for (long long j = lig; j < dim; j += group) dst[j] = hg_elem<K>(src, j);
    }
}

/* Lanes a row: the smallest power of two that gives each lane at most one unit, up to a warp. */
static int group_for(long long units) {
    int g = 1;
    while (g < 32 && g < units) g *= 2;
    return g;
}

static unsigned blocks_for(long long n, int group) {
    const long long rows_per_block = HG_THREADS / group;
    const long long b = (n + rows_per_block - 1) / rows_per_block;
    return (unsigned)(b < HG_MAX_BLOCKS ? b : HG_MAX_BLOCKS);
}

/* Whether every tier the view can send a row to starts on a 16-byte boundary. */
static int bases_aligned(const gd__hetero_rows *rows) {
    uintptr_t a = 0;
    for (int c = 0; c < GD__TIER_COUNT; c++) a |= (uintptr_t)rows->bases.base[c];
    for (int q = 0; q < GD__TIER_MAX_PEERS; q++) a |= (uintptr_t)rows->bases.peer_base[q];
    return a % 16 == 0;
}

template <int K>
static void hg_launch(const gd__hetero_rows *rows, long long dim, long long first,
                      const long long *ids, long long n, float *out, cudaStream_t stream) {
    const long long row_bytes = dim * (K == HG_F32 ? 4 : 2);
    const int aligned = row_bytes % 16 == 0 && bases_aligned(rows) && (uintptr_t)out % 16 == 0;
    if (aligned) {
        const long long words = row_bytes / 16;
        const int g = group_for(words);
        hg_rows_vec<K><<<blocks_for(n, g), HG_THREADS, 0, stream>>>(*rows, words, first, ids, n,
                                                                     (float4 *)out, g);
    } else {
        const int g = group_for(dim);
        hg_rows_scalar<K><<<blocks_for(n, g), HG_THREADS, 0, stream>>>(*rows, dim, row_bytes,
                                                                        first, ids, n, out, g);
    }
}

extern "C" gd_status gd__hetero_gather_cuda(int device, const gd__hetero_rows *rows,
                                            gd_dtype dtype, int64_t dim, int64_t first,
                                            const int64_t *ids, int64_t n, float *out,
                                            void *stream) {
    gd_status st = GD_OK;
    int prev = -1, entered = 0;
    GD_REQUIRE(dtype == GD_DTYPE_FLOAT32 || dtype == GD_DTYPE_FLOAT16 ||
                   dtype == GD_DTYPE_BFLOAT16,
               GD_ERR_INTERNAL, "per-type gather: a %s table is not float32, float16 or bfloat16",
               gd_dtype_name(dtype));
    GD_REQUIRE(n >= 0 && dim >= 0 &&
                   (n == 0 || dim == 0 ||
                    (rows && rows->bases.base[rows->bases.home] && ids && out)),
               GD_ERR_INTERNAL, "per-type gather: %lld rows of %lld values from %p into %p",
               (long long)n, (long long)dim,
               rows ? rows->bases.base[rows->bases.home] : NULL, (void *)out);
    if (n == 0 || dim == 0) return GD_OK;
    GD_CHECK(gd__cuda_enter_device(device, &prev));
    entered = 1;
    {
        const cudaStream_t s = (cudaStream_t)stream;
        const long long *lids = (const long long *)ids;
        if (dtype == GD_DTYPE_FLOAT32)
            hg_launch<HG_F32>(rows, dim, first, lids, n, out, s);
        else if (dtype == GD_DTYPE_FLOAT16)
            hg_launch<HG_F16>(rows, dim, first, lids, n, out, s);
        else
            hg_launch<HG_BF16>(rows, dim, first, lids, n, out, s);
        GD_CUDA_CHECK_LAUNCH();
    }
fail:
    if (entered) gd__cuda_leave_device(device, prev);
    return st;
}
