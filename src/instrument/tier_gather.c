/*
 * Per-tier gather bandwidth (tier_gather.h). Two contexts of a staged group (one registry, so
 * both GPUs register the table once): the peer's gatherer caches every row; the device's
 * gatherers read them from its own cache, from the peer's cache, or from host memory.
 */
#include "instrument/tier_gather.h"

#include "core/comm.h"
#include "core/cuda.h"
#include "core/internal.h"
#include "feature/placed.h"

#include <string.h>

#ifdef GD_WITH_CUDA
typedef struct {
    gd_context_t *ctx[2]; /* device's, peer's */
    gd_host_tensor_t *table[2];
    gd_gatherer_t *own, *peer_side, *reader, *host;
    int64_t *ids; /* device memory, n ids */
    void *out, *stream, *ev[2];
} tier_run;

/* A gatherer over t caching rows (count, NULL: none) itself and reading `peers` from peer 1. */
static gd_status placed(gd_host_tensor_t *t, gd_context_t *ctx, int64_t n, int64_t count,
                        const int64_t *rows, const gd__tier_cache_rows *peer, gd_gatherer_t **g) {
    gd_gatherer_options o = GD_GATHERER_OPTIONS_INIT;
    o.max_ids = n;
    o.sort_ids = -1; /* training's order: the rows as the minibatch lists them */
    const gd__tier_cache_rows none = {NULL, 0, 0};
    gd__tier_cache_rows peers[2] = {none, peer ? *peer : none};
    const gd__gather_placed p = {
        {rows, count, count * gd_host_tensor_row_bytes(t)}, peers, peer ? 2 : 0};
    return gd__gatherer_create_placed(t, ctx, &o, &p, g);
}

#define CHECKED_IDS 4096

/* The first gathered rows against the table: a bandwidth of wrong rows is no ceiling. */
static gd_status check_rows(tier_run *r, int64_t n, int64_t row_bytes, const char *tier) {
    gd_status st = GD_OK;
    const int64_t k = n < CHECKED_IDS ? n : CHECKED_IDS;
    unsigned char *got = NULL;
    int64_t *ids = NULL;
    GD_ALLOC(got, (size_t)(k * row_bytes), "the checked rows");
    GD_ALLOC(ids, (size_t)k * sizeof *ids, "the checked ids");
    GD_CHECK(gd__cuda_memcpy_async(got, r->out, (size_t)(k * row_bytes), r->stream));
    GD_CHECK(gd__cuda_memcpy_async(ids, r->ids, (size_t)k * sizeof *ids, r->stream));
    GD_CHECK(gd__cuda_stream_sync(r->stream));
    const unsigned char *table = gd_host_tensor_data(r->table[0]);
    for (int64_t i = 0; i < k; i++)
        GD_REQUIRE(memcmp(got + i * row_bytes, table + ids[i] * row_bytes, (size_t)row_bytes) == 0,
                   GD_ERR_INTERNAL, "tier gather: the %s gather returned a wrong row %lld at %lld",
                   tier, (long long)ids[i], (long long)i);
fail:
    gd_free(got);
    gd_free(ids);
    return st;
}

/* Useful GB/s of iters gathers of the n ids by g, after one warm-up whose rows are checked. */
static gd_status time_gather(tier_run *r, gd_gatherer_t *g, int64_t n, int64_t row_bytes,
                             int iters, const char *tier, double *gbs) {
    gd_status st = GD_OK;
    float ms = 0;
    GD_CHECK(gd__cuda_memset_async(r->out, 0, (size_t)(n * row_bytes), r->stream));
    GD_CHECK(gd_gather(g, r->ids, n, 1, r->out, r->stream));
    GD_CHECK(gd_gatherer_check_errors(g));
    GD_CHECK(check_rows(r, n, row_bytes, tier));
    GD_CHECK(gd__cuda_event_record(r->ev[0], r->stream));
    for (int k = 0; k < iters; k++) GD_CHECK(gd_gather(g, r->ids, n, 1, r->out, r->stream));
    GD_CHECK(gd__cuda_event_record(r->ev[1], r->stream));
    GD_CHECK(gd__cuda_event_sync(r->ev[1]));
    GD_CHECK(gd_gatherer_check_errors(g));
    GD_CHECK(gd__cuda_event_ms(r->ev[0], r->ev[1], &ms));
    *gbs = (double)n * (double)row_bytes * iters / (ms > 0 ? ms * 1e-3 : 1e-9) / 1e9;
fail:
    return st;
}

/* The table (random bytes) registered for both GPUs, the ids, the buffers, the gatherers. */
static gd_status setup(tier_run *r, int device, int peer, int64_t rows, int64_t row_bytes,
                       int64_t n, int64_t *all) {
    gd_status st = GD_OK;
    int64_t *ids = NULL;
    const int devs[2] = {device, peer};
    GD_CHECK(gd__context_create_staged_group(2, devs, r->ctx));
    GD_CHECK(gd_host_tensor_create(rows, row_bytes, GD_DTYPE_UINT8, 0, &r->table[0]));
    uint64_t x = 0x9e3779b97f4a7c15ull;
    unsigned char *data = gd_host_tensor_data(r->table[0]);
    for (int64_t i = 0; i < rows * row_bytes; i++, x = x * 6364136223846793005ull + 1)
        data[i] = (unsigned char)(x >> 56);
    GD_CHECK(gd_host_tensor_adopt(data, rows, row_bytes, GD_DTYPE_UINT8, 0, &r->table[1]));
    for (int k = 0; k < 2; k++) GD_CHECK(gd_host_tensor_register(r->table[k], r->ctx[k]));
    GD_ALLOC(ids, (size_t)n * sizeof *ids, "the ids");
    for (int64_t i = 0; i < n; i++, x = x * 6364136223846793005ull + 1)
        ids[i] = (int64_t)((x >> 33) % (uint64_t)rows);
    for (int64_t i = 0; i < rows; i++) all[i] = i;
    GD_CHECK(gd__cuda_malloc(device, (void **)&r->ids, (size_t)n * sizeof *ids, "the ids"));
    GD_CHECK(gd__cuda_malloc(device, &r->out, (size_t)(n * row_bytes), "the gathered rows"));
    GD_CHECK(gd__cuda_stream_create(device, &r->stream));
    for (int k = 0; k < 2; k++) GD_CHECK(gd__cuda_event_create(device, 1, &r->ev[k]));
    GD_CHECK(gd__cuda_memcpy_async(r->ids, ids, (size_t)n * sizeof *ids, r->stream));
    GD_CHECK(gd__cuda_stream_sync(r->stream));
fail:
    gd_free(ids);
    return st;
}

static void teardown(tier_run *r) {
    gd__cuda_event_destroy(r->ev[0]);
    gd__cuda_event_destroy(r->ev[1]);
    gd__cuda_stream_destroy(r->stream);
    gd__cuda_free(r->ids);
    gd__cuda_free(r->out);
    gd_gatherer_destroy(r->reader);
    gd_gatherer_destroy(r->own);
    gd_gatherer_destroy(r->host);
    gd_gatherer_destroy(r->peer_side);
    for (int k = 0; k < 2; k++) {
        gd_host_tensor_destroy(r->table[1 - k]);
        gd_context_destroy(r->ctx[k]);
    }
}
#endif

gd_status gd_instrument_tier_gather(int device, int peer, int64_t rows, int64_t row_bytes,
                                    int64_t n, int iters, gd_instrument_tier_gbs *out) {
    gd_status st = GD_OK;
    int64_t *all = NULL;
#ifdef GD_WITH_CUDA
    tier_run r;
    memset(&r, 0, sizeof r);
#endif
    GD_REQUIRE(rows > 0 && row_bytes > 0 && n > 0 && iters > 0 && out, GD_ERR_INVALID_ARG,
               "tier gather: %lld rows of %lld bytes, %lld ids, %d runs: all must be > 0",
               (long long)rows, (long long)row_bytes, (long long)n, iters);
    memset(out, 0, sizeof *out);
#ifdef GD_WITH_CUDA
    GD_ALLOC(all, (size_t)rows * sizeof *all, "the row list");
    GD_CHECK(setup(&r, device, peer, rows, row_bytes, n, all));
    const gd__tier_cache_rows whole = {all, rows, rows * row_bytes};
    GD_CHECK(placed(r.table[0], r.ctx[0], n, rows, all, NULL, &r.own));
    GD_CHECK(placed(r.table[1], r.ctx[1], n, rows, all, NULL, &r.peer_side));
    GD_CHECK(placed(r.table[0], r.ctx[0], n, 0, NULL, &whole, &r.reader));
    GD_CHECK(placed(r.table[0], r.ctx[0], n, 0, NULL, NULL, &r.host));
    if (peer != device) GD_CHECK(gd__cuda_enable_peer_access(device, peer));
    int64_t units = 0;
    const void *mem = gd__gatherer_cache_mem(r.peer_side, &units);
    GD_CHECK(gd__gatherer_set_peer(r.reader, 1, mem, units));
    GD_CHECK(time_gather(&r, r.own, n, row_bytes, iters, "own cache", &out->local_gbs));
    GD_CHECK(time_gather(&r, r.reader, n, row_bytes, iters, "peer cache", &out->peer_gbs));
    GD_CHECK(time_gather(&r, r.host, n, row_bytes, iters, "host", &out->host_gbs));
#else
    (void)device, (void)peer;
    st = gd__error(GD_ERR_NO_DEVICE, "tier gather: this build has no CUDA");
#endif
fail:
#ifdef GD_WITH_CUDA
    teardown(&r);
#endif
    gd_free(all);
    return st;
}
