/*
 * The disk tier on the GPU (disk_tier.h): the location map and the dynamic cache in GPU memory,
 * the hottest rows in a pinned host buffer, the misses read by the host I/O engine into pinned
 * staging. Kernels move whole rows a warp at a time, with 16-byte loads when the row size and
 * the bases allow it.
 */
#include "core/cuda.h"
#include "core/dev_error.h"
#include "feature/disk_tier.h"
#include "feature/dyncache_gpu.h"
#include "feature/dyncache_impl.h"

#include <stdio.h>
#include <string.h>

namespace {

constexpr int BLOCK = 256;
constexpr int WARPS = BLOCK / 32;
/* Staging rows start on a 4 KiB boundary, so that rows of whole blocks are read in place. */
constexpr size_t ALIGN = 4096;

enum { ERR_ID_RANGE = 1, ERR_TIER = 2 };

unsigned warp_grid(int64_t rows) {
    const int64_t g = (rows + WARPS - 1) / WARPS;
    return (unsigned)(g < 1 ? 1 : g > 65535 ? 65535 : g);
}

/* One row of bytes, by the warp: 16-byte words when wide is set, else bytes. */
__device__ __forceinline__ void copy_row(unsigned char *dst, const unsigned char *src,
                                         int64_t bytes, bool wide, int lane) {
    if (wide) {
        const uint4 *s = (const uint4 *)src;
        uint4 *d = (uint4 *)dst;
        for (int64_t w = lane; w < bytes / 16; w += 32) d[w] = s[w];
    } else {
        for (int64_t b = lane; b < bytes; b += 32) dst[b] = src[b];
    }
}

__global__ void absent_kernel(int64_t *loc, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        loc[i] = GD__DYNC_LOC_ABSENT;
}

__global__ void host_loc_kernel(int64_t *loc, const int64_t *rows, int64_t first, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        loc[rows[i]] = gd__loc_make(GD__TIER_HOST, first + i);
}

/* Each read row from staging into its slot, or (no slot) straight into the output. */
__global__ void copy_in_kernel(const unsigned char *staging, unsigned char *cache,
                               unsigned char *out, const int64_t *slots, const int64_t *miss_pos,
                               int64_t m, int64_t row_bytes, bool wide) {
    const int lane = threadIdx.x & 31;
    for (int64_t j = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5; j < m;
         j += ((int64_t)gridDim.x * blockDim.x) >> 5) {
        const int64_t i = miss_pos[j], k = slots[i];
        unsigned char *dst = k >= 0 ? cache + k * row_bytes : out + i * row_bytes;
        copy_row(dst, staging + j * row_bytes, row_bytes, wide, lane);
    }
}

/*
 * Every row that the copy-in did not write: from the host buffer (zero-copy) or the cache
 * slot its lookup or placement gave it. A bypassed row (no slot) was written by the copy-in.
 */
__global__ void gather_kernel(const int64_t *loc, const int64_t *ids, const int64_t *slots,
                              int64_t n, int64_t rows, const unsigned char *host,
                              const unsigned char *cache, unsigned char *out, int64_t row_bytes,
                              bool wide, gd__dev_error *err) {
    const int lane = threadIdx.x & 31;
    for (int64_t i = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5; i < n;
         i += ((int64_t)gridDim.x * blockDim.x) >> 5) {
        const int64_t id = ids[i];
        if (id < 0 || id >= rows) {
            if (lane == 0) gd__dev_error_record(err, ERR_ID_RANGE, i, id, rows);
            continue;
        }
        const int64_t l = loc[id];
        const unsigned char *src;
        if (gd__loc_tier(l) == GD__TIER_HOST) {
            src = host + gd__loc_slot(l) * row_bytes;
        } else if (gd__loc_tier(l) == GD__TIER_SSD) {
            const int64_t k = slots[i];
            if (k < 0) continue; /* bypassed: the copy-in wrote it */
            src = cache + k * row_bytes;
        } else {
            if (lane == 0) gd__dev_error_record(err, ERR_TIER, i, id, l);
            continue;
        }
        copy_row(out + i * row_bytes, src, row_bytes, wide, lane);
    }
}

/* A failed read: the misses hold no slot any more (cancelled), so nothing releases them. */
__global__ void drop_misses_kernel(int64_t *slots, const int64_t *miss_pos, int64_t m) {
    for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < m;
         j += (int64_t)gridDim.x * blockDim.x)
        slots[miss_pos[j]] = -1;
}

} // namespace

struct gd__disk_tier {
    gd__disk_tier_config cfg;
    gd__stripes geo; /* the table's layout over the engine's files */
    gd__ioeng *io;
    int64_t *d_loc;
    unsigned char *host_buf; /* pinned, host_count rows */
    unsigned char *cache;    /* GPU memory, gpu_slots rows */
    gd__dyncache_gpu *dc;
    int64_t *d_slots, *d_miss_pos;
    int64_t *h_miss_rows, *h_num; /* pinned */
    unsigned char *staging;       /* pinned, max_rows rows, 4 KiB aligned */
    gd__ioeng_request *reqs;
    cudaEvent_t looked, staged;
    int staged_pending;
    gd__dev_error *d_err;
    gd__disk_tier_stats stats;
    int64_t host_bytes, gpu_bytes;
};

void gd__disk_tier_close(gd__disk_tier *t) {
    if (!t) return;
    int prev = -1;
    if (gd__cuda_enter_device(t->cfg.device, &prev) != GD_OK) gd_clear_error();
    if (t->staged_pending) cudaEventSynchronize(t->staged);
    gd__dyncache_gpu_destroy(t->dc);
    void *const dev[] = {t->d_loc, t->cache, t->d_slots, t->d_miss_pos, t->d_err};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
        if (dev[i]) cudaFree(dev[i]);
    void *const pinned[] = {t->host_buf, t->h_miss_rows, t->h_num, t->staging};
    for (size_t i = 0; i < sizeof pinned / sizeof pinned[0]; i++)
        if (pinned[i]) cudaFreeHost(pinned[i]);
    if (t->looked) cudaEventDestroy(t->looked);
    if (t->staged) cudaEventDestroy(t->staged);
    (void)cudaGetLastError();
    gd__cuda_leave_device(t->cfg.device, prev);
    gd__ioeng_close(t->io);
    gd_free(t->reqs);
    gd_free(t);
}

static bool wide_rows(const gd__disk_tier *t) {
    return t->cfg.row_bytes % 16 == 0;
}

/*
 * Read the host buffer's rows into slots 0.., file by file and in increasing row order within
 * each (*slot_rows, gd_malloc'd, gets them: slot i holds (*slot_rows)[i]; with one file that is
 * increasing order). The rows are checked first: in range and none twice. Each file's rows are
 * read as covering spans (gd__ioeng_read_rows): the hottest rows of a table lie all over the
 * file, and a buffer of a fifth of papers' 256-byte rows is a row on most of its 4 KiB blocks,
 * which spans read in one pass where a read a row took one random read each. The engine's
 * counters are reset after, so that the tier's bytes read are its gathers'.
 */
static gd_status fill_host_buffer(gd__disk_tier *t, const int64_t *rows, int64_t **slot_rows) {
    gd_status st = GD_OK;
    const int64_t H = t->cfg.host_count, rb = t->cfg.row_bytes;
    const size_t bytes = (size_t)(H > 0 ? H : 1) * sizeof(int64_t);
    int64_t *sorted = (int64_t *)gd_malloc(bytes), *grouped = (int64_t *)gd_malloc(bytes);
    int64_t *local = (int64_t *)gd_malloc(bytes), at = 0;
    const double t0 = gd__now();
    GD_REQUIRE(sorted && grouped && local, GD_ERR_NO_MEMORY,
               "out of memory reading the host buffer's rows");
    for (int64_t i = 0; i < H; i++) {
        GD_REQUIRE(rows[i] >= 0 && rows[i] < t->cfg.rows, GD_ERR_RANGE,
                   "disk tier: host buffer row %lld is outside [0, %lld)", (long long)rows[i],
                   (long long)t->cfg.rows);
        sorted[i] = rows[i];
    }
    gd__sort_i64(sorted, H);
    for (int64_t i = 1; i < H; i++)
        GD_REQUIRE(sorted[i] != sorted[i - 1], GD_ERR_INVALID_ARG,
                   "disk tier: row %lld is listed twice for the host buffer", (long long)sorted[i]);
    /* A pass per file keeps its rows increasing, and so their rows within the file. */
    for (int k = 0; k < t->geo.nfiles; k++) {
        const int64_t first = at;
        for (int64_t i = 0; i < H; i++) {
            int file;
            int64_t l;
            gd__stripes_locate(&t->geo, sorted[i], &file, &l);
            if (file != k) continue;
            grouped[at] = sorted[i];
            local[at++] = l;
        }
        GD_CHECK(gd__ioeng_read_rows(t->io, k, local + first, at - first, rb,
                                     t->host_buf + first * rb));
    }
    if (H > 0) {
        gd__ioeng_stats io = GD__IOENG_STATS_INIT;
        gd__ioeng_stats_get(t->io, &io);
        GD_INFO("disk tier: the host buffer's %lld rows (%.2f GB) read in %.2f s as %lld spans "
                "(%.2f GB)",
                (long long)H, (double)(H * rb) / 1e9, gd__now() - t0, (long long)io.requests,
                (double)io.bytes_read / 1e9);
    }
    gd__ioeng_stats_reset(t->io);
    *slot_rows = grouped;
    grouped = NULL;
fail:
    gd_free(sorted);
    gd_free(grouped);
    gd_free(local);
    return st;
}

gd_status gd__disk_tier_open(const gd__disk_tier_config *cfg, gd__disk_tier **out) {
    gd_status st = GD_OK;
    gd__disk_tier *t = NULL;
    int prev = -1, entered = 0;
    int64_t *d_rows = NULL, *h_rows = NULL; /* the host buffer's rows, slot by slot */
    int64_t rb = 0, H = 0, M = 0;
    gd__dyncache_gpu_config dcfg;
    *out = NULL;
    GD_REQUIRE(cfg && cfg->rows >= 0 && cfg->row_bytes > 0 && cfg->host_count >= 0 &&
                   (cfg->host_rows || cfg->host_count == 0) && cfg->gpu_slots >= 0 &&
                   cfg->max_rows >= 0 && cfg->data_offset >= 0,
               GD_ERR_INVALID_ARG,
               "disk tier: rows >= 0, row bytes > 0, host rows, cache slots and a data offset >= "
               "0 are needed");
    GD_REQUIRE(cfg->rows <= INT64_MAX / cfg->row_bytes &&
                   cfg->max_rows <= (INT64_MAX - (int64_t)ALIGN) / cfg->row_bytes,
               GD_ERR_INVALID_ARG, "disk tier: %lld rows of %lld bytes overflow",
               (long long)cfg->rows, (long long)cfg->row_bytes);
    GD_CHECK(gd__cuda_enter_device(cfg->device, &prev));
    entered = 1;
    t = (gd__disk_tier *)gd_calloc(1, sizeof *t);
    GD_REQUIRE(t, GD_ERR_NO_MEMORY, "out of memory allocating the disk tier");
    t->cfg = *cfg;
    /* The caller's, read during open only: the engine keeps its own copies of the paths. */
    t->cfg.host_rows = NULL;
    t->cfg.path = NULL;
    t->cfg.stripes = NULL;
    GD_CHECK(gd__ioeng_open_table(cfg->path, cfg->data_offset, cfg->stripes, cfg->num_stripes,
                                  cfg->stripe_rows, cfg->rows, cfg->row_bytes, &cfg->io,
                                  "disk tier", &t->geo, &t->io));
    rb = cfg->row_bytes;
    H = cfg->host_count;
    M = cfg->max_rows;
    GD_CHECK(gd__cuda_pinned_alloc((void **)&t->host_buf, (size_t)(H * rb),
                                   "the disk tier's host buffer", "lower the host budget"));
    GD_CHECK(gd__cuda_pinned_alloc((void **)&t->staging, (size_t)(M * rb + (int64_t)ALIGN),
                                   "the disk tier's staging", "lower the batch size"));
    GD_CHECK(gd__cuda_pinned_alloc((void **)&t->h_miss_rows, (size_t)M * sizeof(int64_t),
                                   "the disk tier's miss list", "lower the batch size"));
    GD_CHECK(gd__cuda_pinned_alloc((void **)&t->h_num, sizeof(int64_t),
                                   "the disk tier's miss count", "lower the batch size"));
    t->reqs = (gd__ioeng_request *)gd_malloc((size_t)(M > 0 ? M : 1) * sizeof *t->reqs);
    GD_REQUIRE(t->reqs, GD_ERR_NO_MEMORY, "out of memory allocating the disk tier's reads");
    t->host_bytes = H * rb + M * rb + (int64_t)ALIGN;
    GD_CHECK(fill_host_buffer(t, cfg->host_rows, &h_rows));
    GD_CUDA_CHECK(cudaMalloc((void **)&t->d_loc, (size_t)(cfg->rows > 0 ? cfg->rows : 1) * 8));
    GD_CUDA_CHECK(cudaMalloc((void **)&t->cache, (size_t)(cfg->gpu_slots * rb + 16)));
    GD_CUDA_CHECK(cudaMalloc((void **)&t->d_slots, (size_t)(M > 0 ? M : 1) * 8));
    GD_CUDA_CHECK(cudaMalloc((void **)&t->d_miss_pos, (size_t)(M > 0 ? M : 1) * 8));
    GD_CUDA_CHECK(cudaMalloc((void **)&t->d_err, sizeof(gd__dev_error)));
    GD_CUDA_CHECK(cudaMemset(t->d_err, 0, sizeof(gd__dev_error)));
    t->gpu_bytes = cfg->rows * 8 + cfg->gpu_slots * rb + 2 * M * 8;
    if (cfg->rows > 0) {
        absent_kernel<<<1024, BLOCK>>>(t->d_loc, cfg->rows);
        GD_CUDA_CHECK_LAUNCH();
    }
    if (H > 0) {
        GD_CUDA_CHECK(cudaMalloc((void **)&d_rows, (size_t)H * 8));
        GD_CUDA_CHECK(cudaMemcpy(d_rows, h_rows, (size_t)H * 8, cudaMemcpyHostToDevice));
        host_loc_kernel<<<1024, BLOCK>>>(t->d_loc, d_rows, 0, H);
        GD_CUDA_CHECK_LAUNCH();
    }
    GD_CUDA_CHECK(cudaDeviceSynchronize());
    memset(&dcfg, 0, sizeof dcfg);
    dcfg.device = cfg->device;
    dcfg.num_rows = cfg->rows;
    dcfg.num_slots = cfg->gpu_slots;
    dcfg.policy = cfg->policy;
    dcfg.seed = cfg->seed;
    dcfg.loc = t->d_loc;
    dcfg.max_rows = M;
    dcfg.window = cfg->window;
    GD_CHECK(gd__dyncache_gpu_create(&dcfg, &t->dc));
    GD_CUDA_CHECK(cudaEventCreateWithFlags(&t->looked, cudaEventDisableTiming));
    GD_CUDA_CHECK(cudaEventCreateWithFlags(&t->staged, cudaEventDisableTiming));
    if (d_rows) cudaFree(d_rows);
    gd_free(h_rows);
    gd__cuda_leave_device(cfg->device, prev);
    *out = t;
    return GD_OK;
fail:
    gd_free(h_rows);
    if (d_rows) cudaFree(d_rows);
    if (entered) gd__cuda_leave_device(cfg->device, prev);
    gd__disk_tier_close(t);
    return st;
}

gd_status gd__disk_tier_gather(gd__disk_tier *t, const int64_t *ids, int64_t n, void *out,
                               void *stream) {
    gd_status st = GD_OK;
    int prev = -1;
    cudaStream_t s = (cudaStream_t)stream;
    const int64_t rb = t->cfg.row_bytes;
    int64_t m = 0;
    unsigned char *staging = NULL;
    double t0;
    GD_REQUIRE(n >= 0 && n <= t->cfg.max_rows && (ids || n == 0) && (out || n == 0),
               GD_ERR_INVALID_ARG, "disk tier: a gather of %lld rows (at most %lld)", (long long)n,
               (long long)t->cfg.max_rows);
    GD_CHECK(gd__cuda_enter_device(t->cfg.device, &prev));
    if (n == 0) goto fail; /* nothing to do: st is GD_OK */
    staging = (unsigned char *)(((uintptr_t)t->staging + ALIGN - 1) & ~(uintptr_t)(ALIGN - 1));
    /* 1. Look up; the misses' list is what the host waits for. */
    GD_CHECK(gd__dyncache_gpu_lookup(t->dc, ids, n, t->d_slots, t->d_miss_pos, t->h_miss_rows,
                                     t->h_num, s));
    GD_CUDA_CHECK(cudaEventRecord(t->looked, s));
    /* 2. The GPU places the misses while the host reads them. */
    GD_CHECK(gd__dyncache_gpu_place(t->dc, ids, t->d_slots, t->d_miss_pos, t->h_num, s));
    GD_CUDA_CHECK(cudaEventSynchronize(t->looked));
    /* The staging of the previous gather has been copied out. */
    if (t->staged_pending) GD_CUDA_CHECK(cudaEventSynchronize(t->staged));
    t->staged_pending = 0;
    m = *t->h_num;
    for (int64_t j = 0; j < m; j++)
        t->reqs[j] = gd__stripes_request(&t->geo, t->h_miss_rows[j], rb, staging + j * rb);
    t0 = gd__now();
    st = gd__ioeng_read(t->io, t->reqs, m);
    t->stats.read_s += gd__now() - t0;
    if (st != GD_OK) {
        /* No slot keeps what the failed batch left; the misses are not released later. */
        const gd_status keep = st;
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", gd_last_error());
        if (gd__dyncache_gpu_cancel(t->dc, ids, t->d_slots, t->d_miss_pos, t->h_num, s) == GD_OK &&
            m > 0) {
            drop_misses_kernel<<<warp_grid(m), BLOCK, 0, s>>>(t->d_slots, t->d_miss_pos, m);
            (void)cudaGetLastError();
        }
        (void)gd__dyncache_gpu_release(t->dc, t->d_slots, n, s);
        (void)cudaStreamSynchronize(s);
        (void)cudaGetLastError();
        st = gd__error(keep, "%s", msg);
        goto fail;
    }
    /* 3. Rows into their slots (or the output), the slots valid, every other row gathered. */
    if (m > 0) {
        copy_in_kernel<<<warp_grid(m), BLOCK, 0, s>>>(staging, t->cache, (unsigned char *)out,
                                                      t->d_slots, t->d_miss_pos, m, rb,
                                                      wide_rows(t));
        GD_CUDA_CHECK_LAUNCH();
    }
    GD_CUDA_CHECK(cudaEventRecord(t->staged, s));
    t->staged_pending = 1;
    GD_CHECK(gd__dyncache_gpu_filled(t->dc, t->d_slots, t->d_miss_pos, t->h_num, s));
    gather_kernel<<<warp_grid(n), BLOCK, 0, s>>>(t->d_loc, ids, t->d_slots, n, t->cfg.rows,
                                                 t->host_buf, t->cache, (unsigned char *)out, rb,
                                                 wide_rows(t), t->d_err);
    GD_CUDA_CHECK_LAUNCH();
    GD_CHECK(gd__dyncache_gpu_release(t->dc, t->d_slots, n, s));
    t->stats.gathers++;
    t->stats.rows += n;
    t->stats.bytes_useful += m * rb;
fail:
    gd__cuda_leave_device(t->cfg.device, prev);
    return st;
}

gd_status gd__disk_tier_announce(gd__disk_tier *t, const int64_t *ids, int64_t n, void *stream) {
    return gd__dyncache_gpu_announce(t->dc, ids, n, stream);
}

gd_status gd__disk_tier_withdraw(gd__disk_tier *t, const int64_t *ids, int64_t n, void *stream) {
    return gd__dyncache_gpu_withdraw(t->dc, ids, n, stream);
}

gd_status gd__disk_tier_check_errors(gd__disk_tier *t, void *stream) {
    gd_status st = GD_OK;
    gd__dev_error e;
    GD_CHECK(gd__dyncache_gpu_check_errors(t->dc, stream));
    GD_CHECK(gd__dev_error_take(t->cfg.device, NULL, stream, t->d_err, &e));
    if (!e.flag) return GD_OK;
    if (e.kind == ERR_ID_RANGE)
        return gd__error(GD_ERR_RANGE,
                         "disk tier: id %lld at position %lld is outside the table's rows [0, "
                         "%lld); its output row was not written",
                         e.v[1], e.v[0], e.v[2]);
    return gd__error(GD_ERR_INTERNAL, "disk tier: row %lld has location %llx, of no tier it reads",
                     e.v[1], (unsigned long long)e.v[2]);
fail:
    return st;
}

gd_status gd__disk_tier_get_stats(gd__disk_tier *t, void *stream, gd__disk_tier_stats *out) {
    gd_status st = GD_OK;
    gd__ioeng_stats io = GD__IOENG_STATS_INIT;
    *out = t->stats;
    GD_CHECK(gd__dyncache_gpu_stats(t->dc, stream, &out->cache));
    out->host_rows = out->rows - out->cache.lookups;
    gd__ioeng_stats_get(t->io, &io);
    out->bytes_read = io.bytes_read;
fail:
    return st;
}

void gd__disk_tier_bytes(const gd__disk_tier *t, int64_t *host_bytes, int64_t *gpu_bytes) {
    *host_bytes = t->host_bytes;
    *gpu_bytes = t->gpu_bytes;
}
