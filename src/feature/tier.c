/*
 * The tier store's common part and its CPU implementation (tier.h). The common part creates a
 * store over a table, plans the GPU cache (which rows get which slots under the budget) and
 * keeps the host's record of what the cache holds; the implementations allocate, fill and
 * publish. The CPU implementation keeps every array in host memory: builds without CUDA use it,
 * and the tests compare the CUDA implementation (tier_cuda.cu) with it on random tables.
 */
#include "tier.h"

#include <string.h>

static const char *const tier_names[GD__TIER_COUNT] = {"pinned host", "gpu cache", "gpu", "ssd",
                                                       "peer gpu"};

static int variable_rows(const gd__row_shape *shape) {
    return shape->offsets || shape->d_offsets;
}

gd_status gd__tier_store_create(const gd__row_shape *shape, int device, int home, const void *base,
                                int64_t home_units, gd__tier_store **out) {
    gd_status st = GD_OK;
    gd__tier_store *s = NULL;
    const gd__tier_impl *impl = &gd__tier_cpu_impl;
    GD_REQUIRE(out && shape, GD_ERR_INVALID_ARG, "tier store: NULL %s", out ? "shape" : "output");
    *out = NULL;
    GD_REQUIRE(shape->rows >= 0 && shape->unit_bytes > 0 && home_units >= 0, GD_ERR_INVALID_ARG,
               "tier store: a table of %lld rows in %lld slots of %lld bytes: the counts must not "
               "be negative and a slot must have bytes",
               (long long)shape->rows, (long long)home_units, (long long)shape->unit_bytes);
    GD_REQUIRE(home == GD__TIER_HOST || home == GD__TIER_GPU, GD_ERR_INVALID_ARG,
               "tier store: tier %d cannot hold a whole table; use the host or the GPU tier", home);
    GD_REQUIRE(base || home_units == 0, GD_ERR_INVALID_ARG,
               "tier store: NULL base for a table of %lld slots", (long long)home_units);
    if (device >= 0) {
#ifdef GD_WITH_CUDA
        impl = &gd__tier_cuda_impl;
#else
        GD_REQUIRE(0, GD_ERR_NO_DEVICE,
                   "a tier store on GPU %d needs a GPU, but graphdirect was built without CUDA: "
                   "install the CUDA toolkit and rebuild, or keep the table in host memory",
                   device);
#endif
    }
    /* The implementation reads its own copy of the offsets in its loops and kernels. */
    GD_REQUIRE(!variable_rows(shape) || (device >= 0 ? shape->d_offsets : shape->offsets),
               GD_ERR_INVALID_ARG,
               "tier store: variable rows without the %s offsets its %s "
               "implementation reads",
               device >= 0 ? "device" : "host", impl->name);
    s = gd_calloc(1, sizeof *s);
    GD_REQUIRE(s, GD_ERR_NO_MEMORY, "tier store: out of memory for the handle");
    s->shape = *shape;
    s->device = device;
    s->impl = impl;
    s->home = home;
    s->tier[home] = (gd__tier){impl->table_ops,
                               tier_names[home],
                               home,
                               base,
                               home_units,
                               home_units * shape->unit_bytes,
                               s};
    *out = s;
    return GD_OK;
fail:
    return st;
}

static void cache_clear(gd__tier_store *s) {
    if (s->cache.mem || s->loc) s->impl->release(s);
    gd_free(s->cache.rows);
    gd_free(s->cache.slots);
    gd_free(s->cache.resident);
    memset(&s->cache, 0, sizeof s->cache);
    memset(&s->tier[GD__TIER_GPU_CACHE], 0, sizeof s->tier[GD__TIER_GPU_CACHE]);
    s->loc = NULL;
    s->cache.mem = NULL;
    s->map_bytes = 0;
}

void gd__tier_store_destroy(gd__tier_store *s) {
    if (!s) return;
    cache_clear(s);
    gd_free(s);
}

/*
 * One pass of the slot assignment over the candidates, with the resident bitmap clear at the
 * start: count (and, with rows non-NULL, record) the rows taken and the slots they use. A row
 * is taken when it is not empty, not taken already, and fits the slots left.
 */
static void plan_pass(gd__tier_store *s, const int64_t *cand, int64_t n, int64_t slots_left,
                      int64_t *rows, int64_t *slots, int64_t *count, int64_t *units) {
    const int64_t *off = s->shape.offsets;
    unsigned char *bits = s->cache.resident;
    int64_t taken = 0, used = 0;
    for (int64_t k = 0; k < n && slots_left > 0; k++) {
        const int64_t r = cand[k], u = gd__row_units(off, r);
        if (u == 0 || u > slots_left || ((bits[r >> 3] >> (r & 7)) & 1)) continue;
        bits[r >> 3] |= (unsigned char)(1u << (r & 7));
        if (rows) {
            rows[taken] = r;
            slots[taken] = used;
        }
        taken++;
        used += u;
        slots_left -= u;
    }
    *count = taken;
    *units = used;
}

gd_status gd__tier_cache_build(gd__tier_store *s, const int64_t *candidates, int64_t n,
                               int64_t budget) {
    gd_status st = GD_OK;
    const int64_t rows = s->shape.rows, bitmap = (rows + 7) / 8;
    int64_t count = 0, units = 0;
    GD_REQUIRE(!s->cache.resident && !s->loc, GD_ERR_INTERNAL,
               "tier store: its cache is built once");
    GD_REQUIRE(n >= 0 && budget >= 0 && (n == 0 || candidates), GD_ERR_INVALID_ARG,
               "tier store: %lld candidates, budget %lld bytes: pass the rows to cache and a "
               "budget of 0 or more",
               (long long)n, (long long)budget);
    GD_REQUIRE(!variable_rows(&s->shape) || s->shape.offsets, GD_ERR_INVALID_ARG,
               "tier store: planning a cache of variable rows needs their host offsets");
    for (int64_t k = 0; k < n; k++)
        GD_REQUIRE(candidates[k] >= 0 && candidates[k] < rows, GD_ERR_RANGE,
                   "tier store: candidate %lld is row %lld, outside the table's rows [0, %lld)",
                   (long long)k, (long long)candidates[k], (long long)rows);
    s->cache.budget = budget;
    GD_ALLOC(s->cache.resident, (size_t)bitmap, "the GPU cache's record of its rows");
    memset(s->cache.resident, 0, (size_t)bitmap);
    plan_pass(s, candidates, n, budget / s->shape.unit_bytes, NULL, NULL, &count, &units);
    if (count == 0) {
        cache_clear(s);
        return GD_OK;
    }
    GD_ALLOC(s->cache.rows, (size_t)count * sizeof(int64_t), "the GPU cache's rows");
    GD_ALLOC(s->cache.slots, (size_t)count * sizeof(int64_t), "the GPU cache's slots");
    /* The second pass replays the first from a clear bitmap, now recording. */
    memset(s->cache.resident, 0, (size_t)bitmap);
    plan_pass(s, candidates, n, budget / s->shape.unit_bytes, s->cache.rows, s->cache.slots, &count,
              &units);
    s->cache.count = count;
    s->cache.units = units;
    s->map_bytes = rows * (int64_t)sizeof(int64_t);
    GD_CHECK(s->impl->cache_fill(s));
    s->tier[GD__TIER_GPU_CACHE] = (gd__tier){s->impl->cache_ops,
                                             tier_names[GD__TIER_GPU_CACHE],
                                             GD__TIER_GPU_CACHE,
                                             s->cache.mem,
                                             units,
                                             units * s->shape.unit_bytes,
                                             s};
    GD_DEBUG("tier store: GPU cache of %lld rows, %lld slots (%lld of %lld budget bytes), "
             "over the %s tier",
             (long long)count, (long long)units, (long long)(units * s->shape.unit_bytes),
             (long long)budget, tier_names[s->home]);
    return GD_OK;
fail:
    cache_clear(s);
    return st;
}

int gd__tier_cache_holds(const gd__tier_store *s, int64_t r) {
    if (!s || !s->cache.resident || r < 0 || r >= s->shape.rows) return 0;
    return (s->cache.resident[r >> 3] >> (r & 7)) & 1;
}

gd_status gd__tier_map_update(gd__tier_store *s, const int64_t *rows, const int64_t *locs,
                              int64_t n, void *stream) {
    if (!s->loc)
        return gd__error(GD_ERR_INTERNAL, "tier store: a map update before the map exists");
    if (n <= 0) return GD_OK;
    return s->impl->map_update(s, rows, locs, n, stream);
}

gd__tier_bases gd__tier_store_bases(const gd__tier_store *s) {
    gd__tier_bases b;
    memset(&b, 0, sizeof b);
    if (!s) return b;
    for (int c = 0; c < GD__TIER_COUNT; c++) {
        if (!s->tier[c].ops) continue;
        b.base[c] = s->tier[c].base;
        b.units[c] = s->tier[c].units;
    }
    b.home = s->home;
    return b;
}

/* ------------------------------------------------------- the CPU implementation */

/*
 * Where row r is as tier t serves it: the GPU cache answers from the map (the home tier while
 * it holds nothing), a table tier holds every row at its home slot.
 */
static int64_t cpu_locate_row(const gd__tier *t, int64_t r) {
    const gd__tier_store *s = t->store;
    if (r < 0 || r >= s->shape.rows) return GD__LOC_NONE;
    if (t->code == GD__TIER_GPU_CACHE && s->loc) return s->loc[r];
    const int code = t->code == GD__TIER_GPU_CACHE ? s->home : t->code;
    return gd__loc_make(code, gd__row_start(s->shape.offsets, r));
}

static gd_status cpu_locate(const gd__tier *t, const int64_t *rows, int64_t n, int64_t *locs,
                            void *stream) {
    for (int64_t i = 0; i < n; i++) locs[i] = cpu_locate_row(t, rows[i]);
    return GD_OK;
}

static gd_status cpu_read(const gd__tier *t, const int64_t *rows, const int64_t *dst_slots,
                          int64_t n, void *dst, void *stream) {
    const gd__tier_store *s = t->store;
    const size_t ub = (size_t)s->shape.unit_bytes;
    if (!dst_slots && s->shape.offsets)
        return gd__error(GD_ERR_INVALID_ARG,
                         "tier read: variable rows need their destination slots");
    for (int64_t i = 0; i < n; i++) {
        const int64_t loc = cpu_locate_row(t, rows[i]);
        if (loc == GD__LOC_NONE) continue;
        const unsigned char *src = s->tier[gd__loc_tier(loc)].base;
        const int64_t to = dst_slots ? dst_slots[i] : i;
        memcpy((unsigned char *)dst + (size_t)to * ub, src + (size_t)gd__loc_slot(loc) * ub,
               (size_t)gd__row_units(s->shape.offsets, rows[i]) * ub);
    }
    return GD_OK;
}

static gd_status cpu_map_update(gd__tier_store *s, const int64_t *rows, const int64_t *locs,
                                int64_t n, void *stream) {
    for (int64_t i = 0; i < n; i++)
        if (rows[i] >= 0 && rows[i] < s->shape.rows) s->loc[rows[i]] = locs[i];
    return GD_OK;
}

static gd_status cpu_cache_fill(gd__tier_store *s) {
    gd_status st = GD_OK;
    const gd__tier_cache *c = &s->cache;
    const int64_t rows = s->shape.rows;
    int64_t *locs = NULL;
    GD_ALLOC(s->loc, (size_t)rows * sizeof(int64_t), "the location map");
    for (int64_t r = 0; r < rows; r++)
        s->loc[r] = gd__loc_make(s->home, gd__row_start(s->shape.offsets, r));
    GD_ALLOC(s->cache.mem, (size_t)(c->units * s->shape.unit_bytes), "the cache's slots");
    GD_CHECK(s->tier[s->home].ops->read(&s->tier[s->home], c->rows, c->slots, c->count,
                                        s->cache.mem, NULL));
    GD_ALLOC(locs, (size_t)c->count * sizeof(int64_t), "the cached rows' locations");
    for (int64_t k = 0; k < c->count; k++) locs[k] = gd__loc_make(GD__TIER_GPU_CACHE, c->slots[k]);
    GD_CHECK(cpu_map_update(s, c->rows, locs, c->count, NULL));
fail:
    gd_free(locs);
    return st;
}

static void cpu_release(gd__tier_store *s) {
    gd_free(s->loc);
    gd_free(s->cache.mem);
    s->loc = NULL;
    s->cache.mem = NULL;
}

static const gd__tier_ops cpu_ops = {cpu_locate, cpu_read};

const gd__tier_impl gd__tier_cpu_impl = {
    "cpu", &cpu_ops, &cpu_ops, cpu_cache_fill, cpu_map_update, cpu_release,
};
