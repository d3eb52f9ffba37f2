/*
 * Feature rows from disk through the host dynamic cache (disk_rows.h).
 */
#include "feature/disk_rows.h"

#include <stdio.h>
#include <string.h>

/* The slots start on a 4 KiB boundary, so that rows of whole blocks are read in place. */
#define SLOT_ALIGN 4096

struct gd__disk_rows {
    gd__disk_rows_config cfg;
    gd__stripes geo; /* the table's layout over the engine's files */
    gd__ioeng *io;
    gd__dyncache *cache;
    unsigned char *slots_base, *slots; /* cache_rows x row_bytes, slots aligned */
    /* Per gather, grown as needed: the slots, the fills and the reads. */
    int64_t cap;
    int64_t *got;
    gd__dyncache_fill *fills;
    gd__ioeng_request *reqs;
    gd__disk_rows_stats stats;
};

void gd__disk_rows_close(gd__disk_rows *d) {
    if (!d) return;
    gd__ioeng_close(d->io);
    gd__dyncache_destroy(d->cache);
    gd_free(d->slots_base);
    gd_free(d->got);
    gd_free(d->fills);
    gd_free(d->reqs);
    gd_free(d);
}

gd_status gd__disk_rows_open(const gd__disk_rows_config *cfg, gd__disk_rows **out) {
    gd_status st = GD_OK;
    gd__disk_rows *d = NULL;
    *out = NULL;
    GD_REQUIRE(cfg && cfg->rows >= 0 && cfg->row_bytes > 0 && cfg->cache_rows >= 0 &&
                   cfg->data_offset >= 0,
               GD_ERR_INVALID_ARG,
               "rows on disk: rows >= 0, row bytes > 0, cache rows >= 0 and a data offset >= 0 "
               "are needed");
    GD_REQUIRE(cfg->rows <= INT64_MAX / cfg->row_bytes &&
                   cfg->cache_rows <= (INT64_MAX - SLOT_ALIGN) / cfg->row_bytes,
               GD_ERR_INVALID_ARG,
               "rows on disk: %lld rows (or %lld cached) of %lld bytes overflow",
               (long long)cfg->rows, (long long)cfg->cache_rows, (long long)cfg->row_bytes);
    GD_ALLOC(d, sizeof *d, "the rows on disk");
    memset(d, 0, sizeof *d);
    d->cfg = *cfg;
    /* The caller's, read during open only: the engine keeps its own copies of the paths. */
    d->cfg.path = NULL;
    d->cfg.stripes = NULL;
    GD_CHECK(gd__ioeng_open_table(cfg->path, cfg->data_offset, cfg->stripes, cfg->num_stripes,
                                  cfg->stripe_rows, cfg->rows, cfg->row_bytes, &cfg->io,
                                  "rows on disk", &d->geo, &d->io));
    GD_CHECK(gd__dyncache_create(cfg->rows, cfg->cache_rows, cfg->policy, 0, &d->cache));
    GD_ALLOC(d->slots_base, (size_t)(cfg->cache_rows * cfg->row_bytes + SLOT_ALIGN),
             "the rows on disk's host cache");
    d->slots = (unsigned char *)(((uintptr_t)d->slots_base + SLOT_ALIGN - 1) &
                                 ~(uintptr_t)(SLOT_ALIGN - 1));
    *out = d;
    return GD_OK;
fail:
    gd__disk_rows_close(d);
    return st;
}

/* Room for a gather of n rows in the per-gather arrays. */
static gd_status reserve(gd__disk_rows *d, int64_t n) {
    gd_status st = GD_OK;
    if (n <= d->cap) return GD_OK;
    const int64_t cap = n > 2 * d->cap ? n : 2 * d->cap;
    gd_free(d->got);
    gd_free(d->fills);
    gd_free(d->reqs);
    d->got = NULL;
    d->fills = NULL;
    d->reqs = NULL;
    d->cap = 0;
    GD_ALLOC(d->got, (size_t)cap * sizeof *d->got, "a gather's slots");
    GD_ALLOC(d->fills, (size_t)cap * sizeof *d->fills, "a gather's fills");
    GD_ALLOC(d->reqs, (size_t)cap * sizeof *d->reqs, "a gather's reads");
    d->cap = cap;
fail:
    return st;
}

gd_status gd__disk_rows_gather(gd__disk_rows *d, const int64_t *ids, int64_t n, void *out) {
    gd_status st = GD_OK;
    int64_t nf = 0, nb = 0, nr = 0;
    int acquired = 0;
    GD_REQUIRE(d && (ids || n == 0) && (out || n == 0) && n >= 0, GD_ERR_INVALID_ARG,
               "rows on disk: gather of %lld rows with a NULL argument", (long long)n);
    GD_CHECK(reserve(d, n));
    const int64_t rb = d->cfg.row_bytes;
    unsigned char *o = out;
    /* Ids are checked (range, repeats) by the cache before anything changes. */
    GD_CHECK(gd__dyncache_acquire(d->cache, ids, n, d->got, d->fills, &nf, &nb));
    acquired = 1;
    for (int64_t f = 0; f < nf; f++)
        d->reqs[nr++] =
            gd__stripes_request(&d->geo, d->fills[f].row, rb, d->slots + d->fills[f].slot * rb);
    for (int64_t i = 0; i < n; i++)
        if (d->got[i] < 0) d->reqs[nr++] = gd__stripes_request(&d->geo, ids[i], rb, o + i * rb);
    st = gd__ioeng_read(d->io, d->reqs, nr);
    if (st != GD_OK) {
        /* No slot keeps what a failed batch left in it. */
        (void)gd__dyncache_cancel(d->cache, d->fills, nf);
        for (int64_t i = 0; i < n; i++) /* the cancelled slots are FREE: nothing to release */
            if (d->got[i] >= 0 && gd__dyncache_state(d->cache, d->got[i]) == GD__SLOT_FREE)
                d->got[i] = -1;
        goto fail;
    }
    GD_CHECK(gd__dyncache_filled(d->cache, d->fills, nf));
    for (int64_t i = 0; i < n; i++)
        if (d->got[i] >= 0) memcpy(o + i * rb, d->slots + d->got[i] * rb, (size_t)rb);
    d->stats.gathers++;
    d->stats.rows += n;
    d->stats.hits += n - nf - nb;
    d->stats.fills += nf;
    d->stats.bypasses += nb;
fail:
    if (acquired) {
        const gd_status rs = gd__dyncache_release(d->cache, d->got, n);
        if (st == GD_OK) st = rs;
    }
    return st;
}

gd__disk_rows_stats gd__disk_rows_get_stats(gd__disk_rows *d) {
    gd__disk_rows_stats s = d->stats;
    gd__ioeng_stats io = GD__IOENG_STATS_INIT;
    gd__ioeng_stats_get(d->io, &io);
    s.bytes_read = io.bytes_read;
    return s;
}
