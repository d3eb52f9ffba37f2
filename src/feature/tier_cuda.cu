/*
 * The CUDA implementation of the tier store (tier.h): the location map and the GPU cache's
 * slots in GPU memory, and the kernels behind the tier interface. A table tier (pinned host
 * memory that kernels read over PCIe, or GPU memory) and the GPU cache share them: locate writes
 * each row's location, read copies rows with one warp per row, from wherever the location says,
 * and the map update sets loc[row] = new for a list of rows, which is how a cache publishes rows
 * once their slots are filled (and how a dynamic cache will flip slots during an epoch).
 *
 * The gather and the sampler do not go through these functions on the hot path: they take the
 * store's gd__tier_bases by value and read the map themselves, one launch for every tier. The
 * cache is built once, on the legacy stream, and finished with a device synchronisation, since
 * the non-blocking streams that later read it do not wait for that stream. Every CUDA call is
 * checked.
 */
#include "core/cuda.h"
#include "tier.h"

#include <cuda_runtime.h>

#define BLOCK 256
#define MAX_GRID 65536

/* ------------------------------------------------------------------ kernels */

/*
 * The location of row r as a tier serves it: from the map when there is one (the GPU cache),
 * else in tier code at its home slot; GD__LOC_NONE outside the table.
 */
__device__ __forceinline__ int64_t locate_row(const int64_t *__restrict__ map, int code,
                                              const int64_t *__restrict__ offsets, int64_t rows,
                                              int64_t r) {
    if (r < 0 || r >= rows) return GD__LOC_NONE;
    return map ? map[r] : gd__loc_make(code, gd__row_start(offsets, r));
}

__global__ void __launch_bounds__(BLOCK)
    locate_kernel(const int64_t *__restrict__ map, int code, const int64_t *__restrict__ offsets,
                  int64_t rows, const int64_t *__restrict__ ids, int64_t n,
                  int64_t *__restrict__ locs) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        locs[i] = locate_row(map, code, offsets, rows, ids[i]);
}

/* Copy len bytes by the 32 lanes of a warp, in the widest words both ends and len allow. */
__device__ __forceinline__ void warp_copy(const unsigned char *src, unsigned char *dst,
                                          uint64_t len, int lane) {
    const uint64_t a = (uint64_t)(uintptr_t)src | (uint64_t)(uintptr_t)dst | len;
    if ((a & 15) == 0) {
        for (uint64_t k = lane; k < len / 16; k += 32) ((uint4 *)dst)[k] = ((const uint4 *)src)[k];
    } else if ((a & 3) == 0) {
        for (uint64_t k = lane; k < len / 4; k += 32)
            ((unsigned *)dst)[k] = ((const unsigned *)src)[k];
    } else {
        for (uint64_t k = lane; k < len; k += 32) dst[k] = src[k];
    }
}

/* Row ids[i] to dst from slot dst_slots[i] (or i), one warp per row. */
__global__ void __launch_bounds__(BLOCK)
    read_kernel(gd__tier_bases tb, const int64_t *__restrict__ map, int code,
                const int64_t *__restrict__ offsets, int64_t unit_bytes, int64_t rows,
                const int64_t *__restrict__ ids, const int64_t *__restrict__ dst_slots, int64_t n,
                unsigned char *dst) {
    const int lane = threadIdx.x & 31;
    const int64_t warps = ((int64_t)gridDim.x * blockDim.x) >> 5;
    for (int64_t i = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; i < n; i += warps) {
        const int64_t r = ids[i];
        const int64_t loc = locate_row(map, code, offsets, rows, r);
        if (loc == GD__LOC_NONE) continue;
        int64_t slot = 0;
        const unsigned char *src =
            (const unsigned char *)gd__tier_base_of(tb, loc, &slot, NULL) + slot * unit_bytes;
        unsigned char *to = dst + (dst_slots ? dst_slots[i] : i) * unit_bytes;
        warp_copy(src, to, (uint64_t)(gd__row_units(offsets, r) * unit_bytes), lane);
    }
}

__global__ void __launch_bounds__(BLOCK)
    map_update_kernel(int64_t *map, int64_t rows, const int64_t *__restrict__ ids,
                      const int64_t *__restrict__ locs, int64_t n) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = ids[i];
        if (r >= 0 && r < rows) map[r] = locs[i];
    }
}

/* Every row at home: loc[r] = its home tier and first home slot. */
__global__ void __launch_bounds__(BLOCK)
    map_home_kernel(int64_t *map, int home, const int64_t *__restrict__ offsets, int64_t rows) {
    for (int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; r < rows;
         r += (int64_t)gridDim.x * blockDim.x)
        map[r] = gd__loc_make(home, gd__row_start(offsets, r));
}

/* The cache's locations of its rows: locs[k] = the GPU cache tier at slots[k]. */
__global__ void __launch_bounds__(BLOCK)
    cache_locs_kernel(const int64_t *__restrict__ slots, int64_t n, int64_t *locs) {
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < n;
         k += (int64_t)gridDim.x * blockDim.x)
        locs[k] = gd__loc_make(GD__TIER_GPU_CACHE, slots[k]);
}

/* ------------------------------------------------------------- host side */

static unsigned grid_for(int64_t threads) {
    int64_t b = (threads + BLOCK - 1) / BLOCK;
    if (b < 1) b = 1;
    return (unsigned)(b < MAX_GRID ? b : MAX_GRID);
}

/* The map a tier reads through (the GPU cache's, once built) and the code of a map-less row. */
static void tier_view(const gd__tier *t, const int64_t **map, int *code) {
    const gd__tier_store *s = t->store;
    const int cache = t->code == GD__TIER_GPU_CACHE;
    *map = cache ? s->loc : NULL;
    *code = cache ? s->home : t->code;
}

static gd_status cuda_locate(const gd__tier *t, const int64_t *rows, int64_t n, int64_t *locs,
                             void *stream) {
    gd_status st = GD_OK;
    const gd__tier_store *s = t->store;
    const int64_t *map = NULL;
    int code = 0, prev = -1;
    if (n <= 0) return GD_OK;
    tier_view(t, &map, &code);
    GD_CHECK(gd__cuda_enter_device(s->device, &prev));
    locate_kernel<<<grid_for(n), BLOCK, 0, (cudaStream_t)stream>>>(map, code, s->shape.d_offsets,
                                                                   s->shape.rows, rows, n, locs);
    GD_CUDA_CHECK_LAUNCH();
fail:
    gd__cuda_leave_device(s->device, prev);
    return st;
}

static gd_status cuda_read(const gd__tier *t, const int64_t *rows, const int64_t *dst_slots,
                           int64_t n, void *dst, void *stream) {
    gd_status st = GD_OK;
    const gd__tier_store *s = t->store;
    const int64_t *map = NULL;
    int code = 0, prev = -1;
    if (n <= 0) return GD_OK;
    if (!dst_slots && s->shape.d_offsets)
        return gd__error(GD_ERR_INVALID_ARG,
                         "tier read: variable rows need their destination slots");
    tier_view(t, &map, &code);
    GD_CHECK(gd__cuda_enter_device(s->device, &prev));
    read_kernel<<<grid_for(n * 32), BLOCK, 0, (cudaStream_t)stream>>>(
        gd__tier_store_bases(s), map, code, s->shape.d_offsets, s->shape.unit_bytes, s->shape.rows,
        rows, dst_slots, n, (unsigned char *)dst);
    GD_CUDA_CHECK_LAUNCH();
fail:
    gd__cuda_leave_device(s->device, prev);
    return st;
}

static gd_status cuda_map_update(gd__tier_store *s, const int64_t *rows, const int64_t *locs,
                                 int64_t n, void *stream) {
    gd_status st = GD_OK;
    int prev = -1;
    GD_CHECK(gd__cuda_enter_device(s->device, &prev));
    map_update_kernel<<<grid_for(n), BLOCK, 0, (cudaStream_t)stream>>>(s->loc, s->shape.rows, rows,
                                                                       locs, n);
    GD_CUDA_CHECK_LAUNCH();
fail:
    gd__cuda_leave_device(s->device, prev);
    return st;
}

static void cuda_release(gd__tier_store *s) {
    int prev = -1;
    /* Release is best effort: a failed free cannot be acted on, so errors are dropped. */
    if (gd__cuda_enter_device(s->device, &prev) == GD_OK) {
        if (s->loc) (void)cudaFree(s->loc);
        if (s->cache.mem) (void)cudaFree(s->cache.mem);
        (void)cudaGetLastError();
        gd__cuda_leave_device(s->device, prev);
    }
    s->loc = NULL;
    s->cache.mem = NULL;
}

/*
 * The map at home, the planned rows copied into their slots by the home tier's read, then their
 * locations published: a reader that sees a cache location finds the slots filled. The cache
 * memory is padded to whole 16-byte words plus one, so that kernels reading aligned words (the
 * gather) stay inside it.
 */
static gd_status cuda_cache_fill(gd__tier_store *s) {
    gd_status st = GD_OK;
    const gd__tier_cache *c = &s->cache;
    const gd__tier *home = &s->tier[s->home];
    const size_t map_bytes = (size_t)s->map_bytes, list_bytes = (size_t)c->count * 8;
    const size_t mem_bytes = (size_t)(c->units * s->shape.unit_bytes + 15) / 16 * 16 + 16;
    int64_t *d_tmp = NULL;
    int prev = -1;
    GD_CHECK(gd__cuda_check_device(s->device, "a GPU cache", "set its budget to 0"));
    GD_CHECK(gd__cuda_enter_device(s->device, &prev));
    GD_CUDA_CHECK(cudaMalloc((void **)&s->loc, map_bytes));
    GD_CUDA_CHECK(cudaMalloc(&s->cache.mem, mem_bytes));
    /* A placed cache may hold no row itself (peers only): the lists are then empty. The rows'
     * locations are made from their slots here rather than on the host (57M on papers). */
    GD_CUDA_CHECK(cudaMalloc((void **)&d_tmp, list_bytes ? 3 * list_bytes : 16));
    GD_CUDA_CHECK(cudaMemcpy(d_tmp, c->rows, list_bytes, cudaMemcpyHostToDevice));
    GD_CUDA_CHECK(cudaMemcpy(d_tmp + c->count, c->slots, list_bytes, cudaMemcpyHostToDevice));
    if (c->count > 0) {
        cache_locs_kernel<<<grid_for(c->count), BLOCK>>>(d_tmp + c->count, c->count,
                                                         d_tmp + 2 * c->count);
        GD_CUDA_CHECK_LAUNCH();
    }
    map_home_kernel<<<grid_for(s->shape.rows), BLOCK>>>(s->loc, s->home, s->shape.d_offsets,
                                                        s->shape.rows);
    GD_CUDA_CHECK_LAUNCH();
    GD_CHECK(home->ops->read(home, d_tmp, d_tmp + c->count, c->count, s->cache.mem, NULL));
    GD_CHECK(cuda_map_update(s, d_tmp, d_tmp + 2 * c->count, c->count, NULL));
    GD_CUDA_CHECK(cudaDeviceSynchronize());
    GD_CUDA_CHECK(cudaFree(d_tmp));
    gd__cuda_leave_device(s->device, prev);
    return GD_OK;
fail:
    /* The caller releases the map and the cache memory. */
    if (d_tmp) (void)cudaFree(d_tmp);
    (void)cudaGetLastError();
    gd__cuda_leave_device(s->device, prev);
    return st;
}

/* The map update from host arrays, on the legacy stream and finished with the device. */
static gd_status cuda_publish(gd__tier_store *s, const int64_t *rows, const int64_t *locs,
                              int64_t n) {
    gd_status st = GD_OK;
    const size_t bytes = (size_t)n * sizeof(int64_t);
    int64_t *d_tmp = NULL;
    int prev = -1;
    GD_CHECK(gd__cuda_enter_device(s->device, &prev));
    GD_CUDA_CHECK(cudaMalloc((void **)&d_tmp, 2 * bytes + 16));
    GD_CUDA_CHECK(cudaMemcpy(d_tmp, rows, bytes, cudaMemcpyHostToDevice));
    GD_CUDA_CHECK(cudaMemcpy(d_tmp + n, locs, bytes, cudaMemcpyHostToDevice));
    GD_CHECK(cuda_map_update(s, d_tmp, d_tmp + n, n, NULL));
    GD_CUDA_CHECK(cudaDeviceSynchronize());
    {
        int64_t *done = d_tmp;
        d_tmp = NULL;
        GD_CUDA_CHECK(cudaFree(done));
    }
fail:
    if (d_tmp) {
        (void)cudaFree(d_tmp);
        (void)cudaGetLastError();
    }
    gd__cuda_leave_device(s->device, prev);
    return st;
}

static const gd__tier_ops cuda_ops = {cuda_locate, cuda_read};

extern "C" const gd__tier_impl gd__tier_cuda_impl = {
    "cuda", &cuda_ops, &cuda_ops, cuda_cache_fill, cuda_map_update, cuda_publish, cuda_release,
};
