/*
 * The public gatherer API: parse the mode, validate the arguments once, resolve the options
 * (SM budget, thread count, capacity) and hand the work to the backend that serves the mode.
 * The gatherer sits between the sampler, which produces the input node ids of a minibatch, and
 * training, which consumes their feature rows.
 */
#include "internal.h"

#include "core/context.h"

#include <string.h>

static const char *const mode_names[GD_GATHER_MODE_COUNT] = {
    "zerocopy", "naive-zerocopy", "cpu-dma", "gpu", "cpu",
};

const char *gd_gather_mode_name(gd_gather_mode mode) {
    if ((unsigned)mode >= GD_GATHER_MODE_COUNT) return NULL;
    return mode_names[mode];
}

gd_status gd_gather_mode_parse(const char *name, gd_gather_mode *out) {
    if (!name || !out) return gd__error(GD_ERR_INVALID_ARG, "gd_gather_mode_parse: NULL argument");
    const int i = gd__name_index(mode_names, GD_GATHER_MODE_COUNT, name);
    if (i >= 0) return *out = (gd_gather_mode)i, GD_OK;
    return gd__error(GD_ERR_INVALID_ARG,
                     "unknown gather mode '%s': use zerocopy, naive-zerocopy, cpu-dma, gpu or cpu",
                     name);
}

const gd__feature_backend *gd__feature_backend_for(gd_gather_mode mode) {
#ifdef GD_WITH_CUDA
    if (mode != GD_GATHER_CPU) return &gd__feature_cuda_backend;
#endif
    (void)mode;
    return &gd__feature_cpu_backend;
}

#define DEFAULT_MAX_IDS 65536
#define SORT_BELOW_ROW_BYTES 2048

/* Pick the rows the cache budget holds, hottest first; the backend's tier store caches them. */
static gd_status choose_hot_rows(gd_gatherer_t *g, const gd_gatherer_options *o) {
    gd_status st = GD_OK;
    const gd_host_tensor_t *t = g->tensor;
    int64_t want;
    GD_REQUIRE(g->mode == GD_GATHER_ZEROCOPY, GD_ERR_INVALID_ARG,
               "gd_gatherer_create: a hot-row cache (cache_bytes %lld) serves the zerocopy mode, "
               "not \"%s\": set cache_bytes to 0 or use zerocopy",
               (long long)o->cache_bytes, gd_gather_mode_name(g->mode));
    GD_REQUIRE(o->cache_scores, GD_ERR_INVALID_ARG,
               "gd_gatherer_create: cache_bytes %lld needs cache_scores (one per row: "
               "gd_csc_degree_scores or gd_access_counts_add)",
               (long long)o->cache_bytes);
    want = t->row_bytes ? o->cache_bytes / t->row_bytes : 0;
    if (want > t->rows) want = t->rows;
    if (want == 0) return GD_OK;
    GD_ALLOC(g->hot_rows, (size_t)want * sizeof *g->hot_rows, "the hot-row list");
    GD_CHECK(gd_hot_rows_select(o->cache_scores, t->rows, want, g->hot_rows, &g->hot_count));
    g->cache_budget = o->cache_bytes;
    return GD_OK;
fail:
    gd__error_context(st, "choosing the rows of the GPU cache");
    return st;
}

static gd_status create(gd_host_tensor_t *t, gd_context_t *context, gd_gather_mode mode,
                        const gd_gatherer_options *options, const gd__gather_placed *placed,
                        gd_gatherer_t **out) {
    gd_status st = GD_OK;
    gd_gatherer_t *g = NULL;
    gd_gatherer_options o = GD_GATHERER_OPTIONS_INIT;
    const char *budget = NULL;
    GD_REQUIRE(out, GD_ERR_INVALID_ARG, "gd_gatherer_create: NULL output handle");
    *out = NULL;
    GD_REQUIRE(t, GD_ERR_INVALID_ARG, "gd_gatherer_create: NULL tensor");
    GD_REQUIRE((unsigned)mode < GD_GATHER_MODE_COUNT, GD_ERR_INVALID_ARG,
               "gd_gatherer_create: gather mode %d is not a gd_gather_mode", (int)mode);
    if (options)
        GD_CHECK(gd__options_in(&o, sizeof o, options, 0, "gd_gatherer_create: options",
                                "GD_GATHERER_OPTIONS_INIT"));
    GD_REQUIRE(o.max_ids >= 0 && o.max_ids <= INT32_MAX, GD_ERR_INVALID_ARG,
               "gd_gatherer_create: max_ids %lld is outside [0, %d]", (long long)o.max_ids,
               INT32_MAX);
    GD_CHECK(gd__threads_check(o.threads, "gd_gatherer_create"));

    g = gd_calloc(1, sizeof *g);
    GD_REQUIRE(g, GD_ERR_NO_MEMORY, "gd_gatherer_create: out of memory for the handle");
    g->tensor = t;
    g->device = 0;
    GD_CHECK(gd__context_acquire(context, &g->device, &g->context));
    g->mode = mode;
    g->max_ids = o.max_ids ? o.max_ids : DEFAULT_MAX_IDS;
    GD_REQUIRE(o.sort_ids >= -1 && o.sort_ids <= 1, GD_ERR_INVALID_ARG,
               "gd_gatherer_create: sort_ids %d is not -1 (off), 0 (default) or 1 (on)",
               o.sort_ids);
    /*
     * Default: sort in zerocopy for rows under SORT_BELOW_ROW_BYTES. Random reads over a large
     * registered table cost a translation per row (~23 ns on the lent H100 over 4 GiB), which
     * rules narrow rows; from 2 KiB a row takes longer than that on the link, and the sort's
     * fixed cost (~25 us) only shows on small calls.
     */
    g->sort_ids = o.sort_ids == 0
                      ? mode == GD_GATHER_ZEROCOPY && t->row_bytes < SORT_BELOW_ROW_BYTES
                      : o.sort_ids > 0;
    g->threads = o.threads ? o.threads : gd__num_threads();
    budget = o.sm_budget;
    if (!budget) GD_CHECK(gd_param_get("GD_GATHER_SMS", &budget));
    st = gd__parse_sm_budget(budget, &g->sm_budget_count, &g->sm_budget_percent);
    if (st != GD_OK) {
        gd__error_context(st, "%s", o.sm_budget ? "gather option sm_budget" : "GD_GATHER_SMS");
        goto fail;
    }
    g->grid_cap_only = o.sm_grid_cap_only != 0;
    GD_REQUIRE(o.host_gather == 0 || o.host_gather == 1, GD_ERR_INVALID_ARG,
               "gd_gatherer_create: host_gather %d is not 0 (zero-copy loads) or 1 (CPU gather "
               "and one copy)",
               o.host_gather);
    GD_REQUIRE(!o.host_gather || mode == GD_GATHER_ZEROCOPY, GD_ERR_INVALID_ARG,
               "gd_gatherer_create: host_gather = 1 serves the host rows of the zerocopy mode, "
               "not \"%s\": leave it 0 (cpu-dma gathers every row on the CPU already)",
               gd_gather_mode_name(mode));
    g->host_gather = g->host_cpu = o.host_gather;
    GD_REQUIRE(o.cache_bytes >= 0, GD_ERR_INVALID_ARG,
               "gd_gatherer_create: negative cache_bytes %lld", (long long)o.cache_bytes);
    if (o.cache_bytes > 0) GD_CHECK(choose_hot_rows(g, &o));
    g->placed = placed;
    g->info = (gd_gatherer_info)GD_GATHERER_INFO_INIT;
    GD_CHECK(gd__feature_backend_for(mode)->gatherer_init(g));
    g->placed = NULL;
    gd_free(g->hot_rows);
    g->hot_rows = NULL;
    *out = g;
    return GD_OK;
fail:
    if (g) {
        gd_free(g->hot_rows);
        gd__context_unref(g->context);
    }
    gd_free(g);
    return st;
}

gd_status gd_gatherer_create(gd_host_tensor_t *t, gd_context_t *context, gd_gather_mode mode,
                             const gd_gatherer_options *options, gd_gatherer_t **out) {
    return create(t, context, mode, options, NULL, out);
}

gd_status gd__gatherer_create_placed(gd_host_tensor_t *t, gd_context_t *context,
                                     const gd_gatherer_options *options,
                                     const gd__gather_placed *placed, gd_gatherer_t **out) {
    if (!placed || (options && options->cache_bytes != 0))
        return gd__error(GD_ERR_INVALID_ARG, "gd__gatherer_create_placed: %s",
                         placed ? "the placement gives the cache, so cache_bytes must be 0"
                                : "NULL placement");
    return create(t, context, GD_GATHER_ZEROCOPY, options, placed, out);
}

const void *gd__gatherer_cache_mem(const gd_gatherer_t *g, int64_t *units) {
    *units = g->store ? g->store->cache.units : 0;
    return g->store ? g->store->cache.mem : NULL;
}

int gd__gatherer_in_gpu_memory(const gd_gatherer_t *g, int64_t id) {
    if (gd_gatherer_is_cached(g, id)) return 1;
    const gd__tier_cache *c = g->store ? &g->store->cache : NULL;
    if (!c || !c->in_gpu) return 0;
    return (c->in_gpu[id / 8] >> (id % 8)) & 1;
}

int64_t gd__gatherer_peer_units(const gd_gatherer_t *g, int peer) {
    if (!g->store || peer < 0 || peer >= g->store->cache.num_peers) return 0;
    return g->store->cache.peer[peer].count > 0 ? g->store->cache.peer[peer].units : 0;
}

gd_status gd__gatherer_set_peer(gd_gatherer_t *g, int peer, const void *base, int64_t units) {
    if (!g->store)
        return gd__error(GD_ERR_INVALID_ARG, "gd__gatherer_set_peer: the gatherer has no cache");
    return gd__tier_store_set_peer(g->store, peer, base, units);
}

gd_status gd__gatherer_set_host_cpu(gd_gatherer_t *g, int cpu) {
    if (cpu && !g->host_gather)
        return gd__error(GD_ERR_INVALID_ARG,
                         "the gatherer was created without host_gather, so it has no staging "
                         "for a CPU gather of its host rows: create it with host_gather = 1");
    g->host_cpu = cpu != 0;
    g->host_split = 0;
    return GD_OK;
}

gd_status gd__gatherer_set_host_split(gd_gatherer_t *g, double f) {
    if (!g->host_gather)
        return gd__error(GD_ERR_INVALID_ARG,
                         "the gatherer was created without host_gather, so it has no staging "
                         "for a split of its host rows: create it with host_gather = 1");
    if (!(f >= 0 && f <= 1))
        return gd__error(GD_ERR_INVALID_ARG,
                         "host rows split: the CPU's fraction %g is not in [0, 1]", f);
    g->host_cpu = 0;
    g->host_split = 1;
    g->host_share = gd__host_share(f);
    return GD_OK;
}

void gd_gatherer_destroy(gd_gatherer_t *g) {
    if (!g) return;
    gd__feature_backend_for(g->mode)->gatherer_release(g);
    gd__context_unref(g->context);
    gd_free(g);
}

gd_status gd_gatherer_get_info(const gd_gatherer_t *g, gd_gatherer_info *info) {
    if (!g || !info) return gd__error(GD_ERR_INVALID_ARG, "gd_gatherer_get_info: NULL argument");
    return gd__info_out(info, &g->info, sizeof g->info, "gd_gatherer_get_info: info",
                        "GD_GATHERER_INFO_INIT");
}

int gd_gatherer_is_cached(const gd_gatherer_t *g, int64_t id) {
    if (!g || id < 0 || id >= g->tensor->rows) return 0;
    return gd__tier_cache_holds(g->store, id);
}

gd_status gd_gather(gd_gatherer_t *g, const int64_t *ids, int64_t n, int ids_on_device, void *out,
                    void *stream) {
    if (!g) return gd__error(GD_ERR_INVALID_ARG, "gd_gather: NULL gatherer");
    if (n < 0)
        return gd__error(GD_ERR_INVALID_ARG, "gd_gather: negative id count %lld", (long long)n);
    if (n == 0) return GD_OK;
    if (!ids || !out)
        return gd__error(GD_ERR_INVALID_ARG, "gd_gather: NULL %s for %lld ids",
                         ids ? "output" : "ids", (long long)n);
    if (g->mode != GD_GATHER_CPU && n > g->max_ids)
        return gd__error(GD_ERR_RANGE,
                         "gd_gather: %lld ids exceed the gatherer's capacity of %lld: create it "
                         "with a larger max_ids option",
                         (long long)n, (long long)g->max_ids);
    return gd__feature_backend_for(g->mode)->gather(g, ids, n, ids_on_device, out, stream);
}

gd_status gd_gatherer_check_errors(gd_gatherer_t *g) {
    if (!g) return gd__error(GD_ERR_INVALID_ARG, "gd_gatherer_check_errors: NULL gatherer");
    return gd__feature_backend_for(g->mode)->check_errors(g);
}
