/*
 * The dynamic cache on the GPU (dyncache_gpu.h): kernels over the state of dyncache_impl.h in
 * device memory. Lookups, fills, releases and window counts run one thread per row; placing
 * the misses runs the reference's sequential rules in one thread, over the misses only, in
 * their order, so that every decision equals the CPU reference's. The misses are listed with a
 * CUB prefix sum over per-row flags, which keeps their order.
 */
#include "core/cuda.h"
#include "core/dev_error.h"
#include "feature/dyncache_gpu.h"
#include "feature/dyncache_impl.h"

#include <cub/cub.cuh>

#include <string.h>

namespace {

constexpr int BLOCK = 256;

enum { ERR_ROW_RANGE = 1, ERR_RELEASE = 2, ERR_PENDING_OVER = 3, ERR_PENDING_UNDER = 4 };

unsigned grid_for(int64_t n) {
    /* One thread per row (n < 2^31, so the grid stays within its 2^31 - 1 blocks). */
    const int64_t g = (n + BLOCK - 1) / BLOCK;
    return (unsigned)(g < 1 ? 1 : g);
}

__global__ void init_rows_kernel(int64_t *slot_of, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        slot_of[i] = -1;
}

__global__ void init_slots_kernel(gd__dync c, int64_t n) {
    for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < n;
         k += (int64_t)gridDim.x * blockDim.x) {
        c.row_of[k] = -1;
        c.state[k] = GD__SLOT_FREE;
        c.users[k] = 0;
        c.bit[k] = 0;
        c.prev[k] = c.next[k] = -1;
        c.free_slots[k] = n - 1 - k;
    }
}

/* One thread per row: take the hits, flag the misses; count lookups and hits per warp. */
__global__ void lookup_kernel(gd__dync c, const int64_t *rows, int64_t n, int64_t *slots,
                              int *flags, gd__dev_error *err) {
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    const bool active = i < n;
    int64_t k = -1;
    bool disk = false;
    if (active) {
        const int64_t row = rows[i];
        const bool ok = row >= 0 && row < c.s->num_rows;
        if (!ok) gd__dev_error_record(err, ERR_ROW_RANGE, i, row, c.s->num_rows);
        /* With a map, rows of other tiers are not the cache's: neither hits nor misses. */
        disk = ok && (!c.loc || gd__loc_tier(c.loc[row]) == GD__TIER_SSD);
        if (disk) k = gd__dync_hit(&c, row);
        slots[i] = k;
        flags[i] = disk && k < 0;
    }
    const unsigned looked = __ballot_sync(0xffffffffu, disk);
    const unsigned hit = __ballot_sync(0xffffffffu, k >= 0);
    if ((threadIdx.x & 31) == 0 && looked) {
        atomicAdd((unsigned long long *)&c.s->stats.lookups, (unsigned long long)__popc(looked));
        atomicAdd((unsigned long long *)&c.s->stats.hits, (unsigned long long)__popc(hit));
    }
}

/* The misses' positions and rows, in order, from the flags and their exclusive sum. */
__global__ void compact_kernel(const int64_t *rows, const int *flags, const int *pos, int64_t n,
                               int64_t *miss_pos, int64_t *miss_rows, int64_t *num_misses) {
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (flags[i]) {
        miss_pos[pos[i]] = i;
        miss_rows[pos[i]] = rows[i];
    }
    if (i == n - 1) *num_misses = pos[i] + flags[i];
}

/*
 * The misses in order, one thread: the reference's placement. The scalars are worked on in
 * registers and written back once.
 */
__global__ void place_kernel(gd__dync c, const int64_t *rows, int64_t *slots,
                             const int64_t *miss_pos, const int64_t *num_misses) {
    gd__dync_scalars sc = *c.s;
    gd__dync l = c;
    l.s = &sc;
    int exhausted = 0;
    const int64_t m = *num_misses;
    for (int64_t j = 0; j < m; j++) {
        const int64_t i = miss_pos[j];
        slots[i] = gd__dync_place(&l, rows[i], &exhausted);
    }
    *c.s = sc;
}

__global__ void filled_kernel(uint8_t *state, const int64_t *slots, const int64_t *miss_pos,
                              const int64_t *num_misses, int64_t max) {
    const int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (j >= max || j >= *num_misses) return;
    const int64_t k = slots[miss_pos[j]];
    if (k >= 0) state[k] = GD__SLOT_VALID;
}

__global__ void cancel_kernel(gd__dync c, const int64_t *rows, const int64_t *slots,
                              const int64_t *miss_pos, const int64_t *num_misses) {
    gd__dync_scalars sc = *c.s;
    gd__dync l = c;
    l.s = &sc;
    const int64_t m = *num_misses;
    for (int64_t j = 0; j < m; j++) {
        const int64_t i = miss_pos[j], k = slots[i];
        if (k >= 0) gd__dync_cancel(&l, rows[i], k);
    }
    *c.s = sc;
}

__global__ void release_kernel(int32_t *users, const int64_t *slots, int64_t n, int64_t num_slots,
                               gd__dev_error *err) {
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int64_t k = slots[i];
    if (k < 0) return;
    if (k >= num_slots || atomicSub((int *)&users[k], 1) <= 0) {
        if (k < num_slots) atomicAdd((int *)&users[k], 1);
        gd__dev_error_record(err, ERR_RELEASE, i, k, 0);
    }
}

/*
 * A row's window count, a uint16 in a 4-byte word that it shares with its neighbour: add to its
 * half of the word. The bounds are checked on the old value and a step past them is undone.
 */
__global__ void window_kernel(uint16_t *pending, const int64_t *rows, int64_t n, int64_t num_rows,
                              int up, gd__dev_error *err) {
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int64_t row = rows[i];
    if (row < 0 || row >= num_rows) {
        gd__dev_error_record(err, ERR_ROW_RANGE, i, row, num_rows);
        return;
    }
    unsigned *word = (unsigned *)((uintptr_t)(pending + row) & ~(uintptr_t)3);
    const unsigned shift = ((uintptr_t)(pending + row) & 2) ? 16u : 0u;
    const unsigned one = 1u << shift;
    if (up) {
        const unsigned old = (atomicAdd(word, one) >> shift) & 0xffffu;
        if (old >= GD__DYNC_MAX_PENDING) {
            atomicSub(word, one);
            gd__dev_error_record(err, ERR_PENDING_OVER, i, row, 0);
        }
    } else {
        const unsigned old = (atomicSub(word, one) >> shift) & 0xffffu;
        if (old == 0) {
            atomicAdd(word, one);
            gd__dev_error_record(err, ERR_PENDING_UNDER, i, row, 0);
        }
    }
}

/* A snapshot's per-row slots from a location map. */
__global__ void slots_of_loc_kernel(gd__dync c, int64_t *out, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        out[i] = gd__dync_slot(&c, i);
}

} // namespace

struct gd__dyncache_gpu {
    gd__dyncache_gpu_config cfg;
    gd__dync c; /* device pointers */
    int64_t *own_slot_of;
    int *flags, *pos;
    void *scan_tmp;
    size_t scan_bytes;
    gd__dev_error *d_err;
};

void gd__dyncache_gpu_destroy(gd__dyncache_gpu *c) {
    if (!c) return;
    int prev = -1;
    if (gd__cuda_enter_device(c->cfg.device, &prev) != GD_OK) gd_clear_error();
    void *const mem[] = {c->c.s,     c->own_slot_of, c->c.pending,    c->c.row_of, c->c.state,
                         c->c.users, c->c.bit,       c->c.free_slots, c->c.prev,   c->c.next,
                         c->flags,   c->pos,         c->scan_tmp,     c->d_err};
    for (size_t i = 0; i < sizeof mem / sizeof mem[0]; i++)
        if (mem[i]) cudaFree(mem[i]);
    (void)cudaGetLastError();
    gd__cuda_leave_device(c->cfg.device, prev);
    gd_free(c);
}

template <typename T> static cudaError_t alloc_n(T **p, int64_t n) {
    return cudaMalloc((void **)p, (size_t)(n > 0 ? n : 1) * sizeof(T));
}

gd_status gd__dyncache_gpu_create(const gd__dyncache_gpu_config *cfg, gd__dyncache_gpu **out) {
    gd_status st = GD_OK;
    gd__dyncache_gpu *c = NULL;
    int prev = -1, entered = 0;
    int64_t S = 0, R = 0, M = 0;
    gd__dync_scalars sc;
    *out = NULL;
    GD_REQUIRE(cfg && cfg->num_rows >= 0 && cfg->num_slots >= 0 && cfg->max_rows >= 0 &&
                   cfg->max_rows < INT32_MAX,
               GD_ERR_INVALID_ARG,
               "dynamic GPU cache: %lld rows, %lld slots, lookups of %lld rows; use 0 or more "
               "of each (lookups below 2^31 rows)",
               cfg ? (long long)cfg->num_rows : 0LL, cfg ? (long long)cfg->num_slots : 0LL,
               cfg ? (long long)cfg->max_rows : 0LL);
    GD_REQUIRE((int)cfg->policy >= 0 && cfg->policy < GD__EVICT_COUNT, GD_ERR_INVALID_ARG,
               "dynamic GPU cache: eviction policy %d; use clock, sieve or random",
               (int)cfg->policy);
    GD_CHECK(gd__cuda_enter_device(cfg->device, &prev));
    entered = 1;
    c = (gd__dyncache_gpu *)gd_calloc(1, sizeof *c);
    GD_REQUIRE(c, GD_ERR_NO_MEMORY, "out of memory allocating the dynamic GPU cache");
    c->cfg = *cfg;
    memset(&sc, 0, sizeof sc);
    sc.num_rows = cfg->num_rows;
    sc.num_slots = cfg->num_slots;
    sc.policy = (int32_t)cfg->policy;
    sc.seed = cfg->seed;
    sc.num_free = cfg->num_slots;
    sc.head = sc.tail = sc.sieve_hand = -1;
    GD_CUDA_CHECK(alloc_n(&c->c.s, 1));
    GD_CUDA_CHECK(cudaMemcpy(c->c.s, &sc, sizeof sc, cudaMemcpyHostToDevice));
    S = cfg->num_slots;
    R = cfg->num_rows;
    M = cfg->max_rows;
    if (cfg->loc) {
        c->c.loc = cfg->loc;
    } else {
        GD_CUDA_CHECK(alloc_n(&c->own_slot_of, R));
        c->c.slot_of = c->own_slot_of;
        init_rows_kernel<<<grid_for(R), BLOCK>>>(c->own_slot_of, R);
        GD_CUDA_CHECK_LAUNCH();
    }
    if (cfg->window) {
        /* Whole 4-byte words, so that the last row's half-word atomics stay inside. */
        GD_CUDA_CHECK(cudaMalloc((void **)&c->c.pending, (size_t)(R + 2) / 2 * 4));
        GD_CUDA_CHECK(cudaMemset(c->c.pending, 0, (size_t)(R + 2) / 2 * 4));
    }
    GD_CUDA_CHECK(alloc_n(&c->c.row_of, S));
    GD_CUDA_CHECK(alloc_n(&c->c.state, S));
    GD_CUDA_CHECK(alloc_n(&c->c.users, S));
    GD_CUDA_CHECK(alloc_n(&c->c.bit, S));
    GD_CUDA_CHECK(alloc_n(&c->c.free_slots, S));
    GD_CUDA_CHECK(alloc_n(&c->c.prev, S));
    GD_CUDA_CHECK(alloc_n(&c->c.next, S));
    if (S > 0) {
        init_slots_kernel<<<grid_for(S), BLOCK>>>(c->c, S);
        GD_CUDA_CHECK_LAUNCH();
    }
    GD_CUDA_CHECK(alloc_n(&c->flags, M));
    GD_CUDA_CHECK(alloc_n(&c->pos, M));
    GD_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(NULL, c->scan_bytes, (const int *)NULL, (int *)NULL,
                                                (int)(M > 0 ? M : 1)));
    GD_CUDA_CHECK(cudaMalloc(&c->scan_tmp, c->scan_bytes ? c->scan_bytes : 16));
    GD_CUDA_CHECK(cudaMalloc((void **)&c->d_err, sizeof(gd__dev_error)));
    GD_CUDA_CHECK(cudaMemset(c->d_err, 0, sizeof(gd__dev_error)));
    /* The initialisation ran on the legacy stream: finished before any stream uses it. */
    GD_CUDA_CHECK(cudaDeviceSynchronize());
    gd__cuda_leave_device(cfg->device, prev);
    *out = c;
    return GD_OK;
fail:
    if (entered) gd__cuda_leave_device(cfg->device, prev);
    gd__dyncache_gpu_destroy(c);
    return st;
}

gd_status gd__dyncache_gpu_lookup(gd__dyncache_gpu *c, const int64_t *rows, int64_t n,
                                  int64_t *slots, int64_t *miss_pos, int64_t *miss_rows,
                                  int64_t *num_misses, void *stream) {
    gd_status st = GD_OK;
    int prev = -1;
    cudaStream_t s = (cudaStream_t)stream;
    GD_REQUIRE(n >= 0 && n <= c->cfg.max_rows, GD_ERR_INVALID_ARG,
               "dynamic GPU cache: a lookup of %lld rows; the cache was sized for %lld",
               (long long)n, (long long)c->cfg.max_rows);
    GD_CHECK(gd__cuda_enter_device(c->cfg.device, &prev));
    if (n == 0) {
        GD_CUDA_CHECK(cudaMemsetAsync(num_misses, 0, sizeof *num_misses, s));
    } else {
        lookup_kernel<<<grid_for(n), BLOCK, 0, s>>>(c->c, rows, n, slots, c->flags, c->d_err);
        GD_CUDA_CHECK_LAUNCH();
        size_t bytes = c->scan_bytes;
        GD_CUDA_CHECK(
            cub::DeviceScan::ExclusiveSum(c->scan_tmp, bytes, c->flags, c->pos, (int)n, s));
        compact_kernel<<<grid_for(n), BLOCK, 0, s>>>(rows, c->flags, c->pos, n, miss_pos, miss_rows,
                                                     num_misses);
        GD_CUDA_CHECK_LAUNCH();
    }
fail:
    gd__cuda_leave_device(c->cfg.device, prev);
    return st;
}

gd_status gd__dyncache_gpu_place(gd__dyncache_gpu *c, const int64_t *rows, int64_t *slots,
                                 const int64_t *miss_pos, const int64_t *num_misses, void *stream) {
    gd_status st = GD_OK;
    int prev = -1;
    GD_CHECK(gd__cuda_enter_device(c->cfg.device, &prev));
    place_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(c->c, rows, slots, miss_pos, num_misses);
    GD_CUDA_CHECK_LAUNCH();
fail:
    gd__cuda_leave_device(c->cfg.device, prev);
    return st;
}

gd_status gd__dyncache_gpu_filled(gd__dyncache_gpu *c, const int64_t *slots,
                                  const int64_t *miss_pos, const int64_t *num_misses,
                                  void *stream) {
    gd_status st = GD_OK;
    int prev = -1;
    const int64_t max = c->cfg.max_rows;
    GD_CHECK(gd__cuda_enter_device(c->cfg.device, &prev));
    if (max > 0) {
        filled_kernel<<<grid_for(max), BLOCK, 0, (cudaStream_t)stream>>>(c->c.state, slots,
                                                                         miss_pos, num_misses, max);
        GD_CUDA_CHECK_LAUNCH();
    }
fail:
    gd__cuda_leave_device(c->cfg.device, prev);
    return st;
}

gd_status gd__dyncache_gpu_cancel(gd__dyncache_gpu *c, const int64_t *rows, const int64_t *slots,
                                  const int64_t *miss_pos, const int64_t *num_misses,
                                  void *stream) {
    gd_status st = GD_OK;
    int prev = -1;
    GD_CHECK(gd__cuda_enter_device(c->cfg.device, &prev));
    cancel_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(c->c, rows, slots, miss_pos, num_misses);
    GD_CUDA_CHECK_LAUNCH();
fail:
    gd__cuda_leave_device(c->cfg.device, prev);
    return st;
}

gd_status gd__dyncache_gpu_release(gd__dyncache_gpu *c, const int64_t *slots, int64_t n,
                                   void *stream) {
    gd_status st = GD_OK;
    int prev = -1;
    if (n <= 0) return GD_OK;
    GD_CHECK(gd__cuda_enter_device(c->cfg.device, &prev));
    release_kernel<<<grid_for(n), BLOCK, 0, (cudaStream_t)stream>>>(c->c.users, slots, n,
                                                                    c->cfg.num_slots, c->d_err);
    GD_CUDA_CHECK_LAUNCH();
fail:
    gd__cuda_leave_device(c->cfg.device, prev);
    return st;
}

static gd_status window_step(gd__dyncache_gpu *c, const int64_t *rows, int64_t n, int up,
                             void *stream) {
    gd_status st = GD_OK;
    int prev = -1;
    GD_REQUIRE(c->c.pending, GD_ERR_INVALID_ARG,
               "dynamic GPU cache: %s without a window (create it with window = 1)",
               up ? "announce" : "withdraw");
    if (n <= 0) return GD_OK;
    GD_CHECK(gd__cuda_enter_device(c->cfg.device, &prev));
    window_kernel<<<grid_for(n), BLOCK, 0, (cudaStream_t)stream>>>(c->c.pending, rows, n,
                                                                   c->cfg.num_rows, up, c->d_err);
    GD_CUDA_CHECK_LAUNCH();
fail:
    gd__cuda_leave_device(c->cfg.device, prev);
    return st;
}

gd_status gd__dyncache_gpu_announce(gd__dyncache_gpu *c, const int64_t *rows, int64_t n,
                                    void *stream) {
    return window_step(c, rows, n, 1, stream);
}

gd_status gd__dyncache_gpu_withdraw(gd__dyncache_gpu *c, const int64_t *rows, int64_t n,
                                    void *stream) {
    return window_step(c, rows, n, 0, stream);
}

gd_status gd__dyncache_gpu_check_errors(gd__dyncache_gpu *c, void *stream) {
    gd_status st = GD_OK;
    gd__dev_error e;
    int prev = -1;
    GD_CHECK(gd__cuda_enter_device(c->cfg.device, &prev));
    GD_CUDA_CHECK(cudaStreamSynchronize((cudaStream_t)stream));
    gd__cuda_leave_device(c->cfg.device, prev);
    GD_CHECK(gd__dev_error_take(c->cfg.device, NULL, stream, c->d_err, &e));
    if (!e.flag) return GD_OK;
    switch (e.kind) {
    case ERR_ROW_RANGE:
        return gd__error(GD_ERR_RANGE,
                         "dynamic GPU cache: row %lld (position %lld) is outside [0, %lld)", e.v[1],
                         e.v[0], e.v[2]);
    case ERR_RELEASE:
        return gd__error(GD_ERR_INTERNAL,
                         "dynamic GPU cache: release of slot %lld (position %lld), which is not "
                         "in use",
                         e.v[1], e.v[0]);
    case ERR_PENDING_OVER:
        return gd__error(GD_ERR_INVALID_ARG,
                         "dynamic GPU cache: row %lld is announced by %d minibatches already; "
                         "withdraw those that were acquired",
                         e.v[1], GD__DYNC_MAX_PENDING);
    default:
        return gd__error(GD_ERR_INVALID_ARG,
                         "dynamic GPU cache: row %lld has no announcement to withdraw", e.v[1]);
    }
fail:
    gd__cuda_leave_device(c->cfg.device, prev);
    return st;
}

gd_status gd__dyncache_gpu_stats(gd__dyncache_gpu *c, void *stream, gd__dyncache_stats *out) {
    gd_status st = GD_OK;
    int prev = -1;
    gd__dync_scalars sc;
    GD_CHECK(gd__cuda_enter_device(c->cfg.device, &prev));
    GD_CUDA_CHECK(
        cudaMemcpyAsync(&sc, c->c.s, sizeof sc, cudaMemcpyDeviceToHost, (cudaStream_t)stream));
    GD_CUDA_CHECK(cudaStreamSynchronize((cudaStream_t)stream));
    *out = sc.stats;
fail:
    gd__cuda_leave_device(c->cfg.device, prev);
    return st;
}

void gd__dyncache_gpu_snapshot_free(gd__dyncache_gpu_snapshot *s) {
    gd_free(s->slot_of);
    gd_free(s->pending);
    gd_free(s->row_of);
    gd_free(s->state);
    gd_free(s->bit);
    gd_free(s->users);
    memset(s, 0, sizeof *s);
}

gd_status gd__dyncache_gpu_snapshot_take(gd__dyncache_gpu *c, void *stream,
                                         gd__dyncache_gpu_snapshot *out) {
    gd_status st = GD_OK;
    int prev = -1, entered = 0;
    int64_t *d_slots = NULL;
    const int64_t R = c->cfg.num_rows, S = c->cfg.num_slots;
    const size_t r = (size_t)(R > 0 ? R : 1), sl = (size_t)(S > 0 ? S : 1);
    gd__dync_scalars sc;
    memset(out, 0, sizeof *out);
    GD_CHECK(gd__cuda_enter_device(c->cfg.device, &prev));
    entered = 1;
    GD_CUDA_CHECK(cudaStreamSynchronize((cudaStream_t)stream));
    out->slot_of = (int64_t *)gd_malloc(r * sizeof *out->slot_of);
    out->pending = (uint16_t *)gd_malloc(r * sizeof *out->pending);
    out->row_of = (int64_t *)gd_malloc(sl * sizeof *out->row_of);
    out->state = (uint8_t *)gd_malloc(sl);
    out->bit = (uint8_t *)gd_malloc(sl);
    out->users = (int32_t *)gd_malloc(sl * sizeof *out->users);
    GD_REQUIRE(out->slot_of && out->pending && out->row_of && out->state && out->bit && out->users,
               GD_ERR_NO_MEMORY, "out of memory allocating a dynamic cache snapshot");
    GD_CUDA_CHECK(alloc_n(&d_slots, R));
    if (R > 0) {
        slots_of_loc_kernel<<<grid_for(R), BLOCK>>>(c->c, d_slots, R);
        GD_CUDA_CHECK_LAUNCH();
    }
    GD_CUDA_CHECK(
        cudaMemcpy(out->slot_of, d_slots, (size_t)R * sizeof(int64_t), cudaMemcpyDeviceToHost));
    if (c->c.pending)
        GD_CUDA_CHECK(cudaMemcpy(out->pending, c->c.pending, (size_t)R * sizeof(uint16_t),
                                 cudaMemcpyDeviceToHost));
    else
        memset(out->pending, 0, r * sizeof *out->pending);
    GD_CUDA_CHECK(
        cudaMemcpy(out->row_of, c->c.row_of, (size_t)S * sizeof(int64_t), cudaMemcpyDeviceToHost));
    GD_CUDA_CHECK(cudaMemcpy(out->state, c->c.state, (size_t)S, cudaMemcpyDeviceToHost));
    GD_CUDA_CHECK(cudaMemcpy(out->bit, c->c.bit, (size_t)S, cudaMemcpyDeviceToHost));
    GD_CUDA_CHECK(
        cudaMemcpy(out->users, c->c.users, (size_t)S * sizeof(int32_t), cudaMemcpyDeviceToHost));
    GD_CUDA_CHECK(cudaMemcpy(&sc, c->c.s, sizeof sc, cudaMemcpyDeviceToHost));
    out->stats = sc.stats;
    out->num_free = sc.num_free;
    cudaFree(d_slots);
    gd__cuda_leave_device(c->cfg.device, prev);
    return GD_OK;
fail:
    if (d_slots) cudaFree(d_slots);
    if (entered) gd__cuda_leave_device(c->cfg.device, prev);
    gd__dyncache_gpu_snapshot_free(out);
    return st;
}
