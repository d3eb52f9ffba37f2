/*
 * gd_instrument_cache_sim (cache_sim.h): the dynamic cache's CPU reference driven as the
 * pipeline drives it.
 */
#include "instrument/cache_sim.h"

#include "core/internal.h"
#include "feature/dyncache.h"

#include <string.h>

static const int64_t *batch(const int64_t *ids, const int64_t *offsets, int b, int64_t *n) {
    *n = offsets[b + 1] - offsets[b];
    return ids + offsets[b];
}

gd_status gd_instrument_cache_sim(const int64_t *ids, const int64_t *offsets, int count,
                                  int64_t num_rows, int64_t slots, const char *policy, int window,
                                  int in_flight, uint64_t seed, double *per_batch_hit,
                                  gd_instrument_cache_result *out) {
    gd_status st = GD_OK;
    gd__dyncache *c = NULL;
    int64_t *got = NULL, longest = 0, held = 0;
    gd__dyncache_fill *fills = NULL;
    GD_REQUIRE(ids && offsets && count >= 0 && window >= 0 && in_flight >= 1 && out,
               GD_ERR_INVALID_ARG,
               "cache replay: ids, offsets and out must be given, window >= 0, in_flight >= 1");
    memset(out, 0, sizeof *out);
    const int p = policy ? gd__name_index(gd__evict_names, GD__EVICT_COUNT, policy) : -1;
    GD_REQUIRE(p >= 0, GD_ERR_INVALID_ARG,
               "cache replay: eviction policy '%s'; use clock, sieve or random",
               policy ? policy : "(null)");
    for (int b = 0; b < count; b++) longest = gd__max64(longest, offsets[b + 1] - offsets[b]);
    GD_ALLOC(got, (size_t)gd__max64(offsets[count], 1) * sizeof *got, "the replay's slots");
    GD_ALLOC(fills, (size_t)gd__max64(longest, 1) * sizeof *fills, "the replay's fills");
    GD_CHECK(gd__dyncache_create(num_rows, slots, (gd__evict_policy)p, seed, &c));
    for (int b = 0; b < window && b < count; b++) {
        int64_t n;
        const int64_t *r = batch(ids, offsets, b, &n);
        GD_CHECK(gd__dyncache_announce(c, r, n));
        held += n;
    }
    for (int b = 0; b < count; b++) {
        int64_t n, nf, nb, na;
        const int64_t *r = batch(ids, offsets, b, &n);
        if (window > 0) {
            if (b + window < count) {
                const int64_t *ra = batch(ids, offsets, b + window, &na);
                GD_CHECK(gd__dyncache_announce(c, ra, na));
                held += na;
            }
            out->protected_max = gd__max64(out->protected_max, held);
            GD_CHECK(gd__dyncache_withdraw(c, r, n));
            held -= n;
        }
        const int64_t hits0 = gd__dyncache_get_stats(c).hits;
        GD_CHECK(gd__dyncache_acquire(c, r, n, got + offsets[b], fills, &nf, &nb));
        GD_CHECK(gd__dyncache_filled(c, fills, nf));
        if (per_batch_hit)
            per_batch_hit[b] = n ? (double)(gd__dyncache_get_stats(c).hits - hits0) / n : 0;
        if (b >= in_flight) {
            const int o = b - in_flight;
            GD_CHECK(gd__dyncache_release(c, got + offsets[o], offsets[o + 1] - offsets[o]));
        }
    }
    const gd__dyncache_stats s = gd__dyncache_get_stats(c);
    out->lookups = s.lookups;
    out->hits = s.hits;
    out->fills = s.fills;
    out->evictions = s.evictions;
    out->bypasses = s.bypasses;
fail:
    gd__dyncache_destroy(c);
    gd_free(got);
    gd_free(fills);
    return st;
}
