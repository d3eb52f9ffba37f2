/*
 * Locality-aware sampling in training (issue 14, item 5; the placement paper's sampler): the
 * sampler draws a neighbour whose feature row is in GPU memory (this GPU's cache, or a peer's
 * under `partition` / `auto`) k times as likely as one read from host memory
 * (docs/sampling.md, "Biased sampling"). It changes the distribution the model trains on, so it
 * is off by default; it applies to training passes only, and evaluation samples uniformly.
 * k is fixed (--locality K) or adapted after each epoch (--locality auto) to the ratio of data
 * movement to compute that the epoch measured: k = clamp(round(2 * gather_s / train_s), 1, 16),
 * so a pipeline whose gather takes under half its training time samples uniformly; and once a
 * biased epoch is no faster than the fastest uniform one, auto samples uniformly for the rest
 * of the run (gd__locality_next).
 */
#include "train/datapath.h"

#include "feature/placed.h"
#include "sample/internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define AUTO_MAX_FACTOR 16

/* Bit v of the bitmap: row v is in this GPU's cache or a peer's. */
static gd_status buffered_rows(const gd__datapath *d, uint8_t **bitmap) {
    gd_status st = GD_OK;
    const size_t bytes = (size_t)(d->num_nodes + 7) / 8;
    GD_ALLOC(*bitmap, bytes ? bytes : 1, "the bitmap of the rows in GPU memory");
    memset(*bitmap, 0, bytes ? bytes : 1);
    for (int64_t v = 0; v < d->num_nodes; v++)
        if (gd__gatherer_in_gpu_memory(d->gatherer, v))
            (*bitmap)[v / 8] |= (uint8_t)(1u << (v % 8));
fail:
    return st;
}

gd_status gd__datapath_locality_init(gd__datapath *d) {
    gd_status st = GD_OK;
    uint8_t *bitmap = NULL;
    const int k = d->cfg.locality;
    if (k == 0 || k == 1) return GD_OK;
    GD_REQUIRE(k == GD__LOCALITY_AUTO || (k >= 2 && k <= GD_SAMPLER_MAX_BIAS), GD_ERR_INVALID_ARG,
               "trainer: locality %d: use 0 (off), auto, or a factor from 2 to %d", k,
               GD_SAMPLER_MAX_BIAS);
    GD_REQUIRE(d->mode == GD__TRAIN_ZERO_COPY && d->feature_cache_rows > 0, GD_ERR_INVALID_ARG,
               "trainer: locality-aware sampling favours the rows the GPU caches: it needs "
               "--mode zero-copy with a feature cache (--gpu-cache above 0), not %s%s",
               d->mode == GD__TRAIN_ZERO_COPY ? "a cache of 0 rows" : "this mode",
               d->mode == GD__TRAIN_ZERO_COPY ? "" : " (the other modes read every row alike)");
    GD_CHECK(buffered_rows(d, &bitmap));
    /* auto starts uniform: the first epoch measures the pipeline. */
    d->locality_factor = k > 0 ? k : 1;
    GD_CHECK(gd__sampler_set_bias(d->sampler, bitmap, 1));
    const size_t used = strlen(d->plan.text);
    snprintf(d->plan.text + used, sizeof d->plan.text - used,
             "; locality-aware sampling %s (training passes)", k > 0 ? "fixed" : "auto");
fail:
    gd_free(bitmap);
    return st;
}

gd_status gd__datapath_locality_pass(gd__datapath *d, int train) {
    if (d->cfg.locality == 0 || d->cfg.locality == 1) return GD_OK;
    const int want = train ? d->locality_factor : 1;
    if (want == d->sampler->bias_factor) return GD_OK;
    return gd__sampler_set_bias(d->sampler, NULL, want);
}

int gd__locality_next(gd__locality_auto *s, double gather_s, double train_s, double epoch_s) {
    const int ran = s->factor < 1 ? 1 : s->factor;
    if (ran == 1 && epoch_s > 0 && (s->best_uniform_s <= 0 || epoch_s < s->best_uniform_s))
        s->best_uniform_s = epoch_s;
    if (ran > 1 && s->best_uniform_s > 0 && !(epoch_s < s->best_uniform_s)) s->settled = 1;
    if (s->settled) {
        s->factor = 1;
        return 1;
    }
    const double r = train_s > 0 ? 2 * gather_s / train_s : 1;
    const double k = isfinite(r) ? floor(r + 0.5) : 1;
    s->factor = k < 1 ? 1 : k > AUTO_MAX_FACTOR ? AUTO_MAX_FACTOR : (int)k;
    return s->factor;
}

int gd__datapath_locality_adapt(gd__datapath *d, double gather_s, double train_s, double epoch_s) {
    if (d->cfg.locality != GD__LOCALITY_AUTO) return 0;
    d->locality_auto.factor = d->locality_factor;
    d->locality_factor = gd__locality_next(&d->locality_auto, gather_s, train_s, epoch_s);
    return d->locality_factor;
}
