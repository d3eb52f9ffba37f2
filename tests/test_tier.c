/*
 * The tier store (src/feature/tier.h). CPU: the location encoding round-trips every tier code and
 * slots up to 2^56 - 1; the cache component's slot assignment on random tables of fixed and of
 * variable rows (empty lists and hubs included) matches the rule stated in tier.h under budgets
 * of 0, less than one row, parts of the table and more than the whole table ("everything fits"),
 * with repeated candidates; the location map, the cache's contents and its record of what it
 * holds agree with the table; the tier interface (locate, read, through the cache and from the
 * table) and the map update give what the map says; bad arguments are refused. GPU (exits 77
 * without one): the CUDA implementation, on fresh random inputs with its home tier in pinned
 * host memory and in GPU memory, builds exactly the CPU implementation's map and cache, and its
 * locate, read and map update equal the CPU ones, outputs poisoned first.
 */
#include "tier_util.h"

/* ------------------------------------------------------------------ CPU checks */

static void check_encoding(uint64_t *state) {
    T_EQ_INT(GD__TIER_HOST, 0);
    T_EQ_INT(GD__TIER_GPU_CACHE, 1);
    T_ASSERT(GD__TIER_COUNT <= 256);
    for (int tier = 0; tier < GD__TIER_COUNT; tier++) {
        const int64_t slots[] = {0, 1, 12345, GD__LOC_SLOT_MASK - 1, GD__LOC_SLOT_MASK};
        for (int k = 0; k < 5; k++) {
            const int64_t loc = gd__loc_make(tier, slots[k]);
            T_EQ_INT(gd__loc_tier(loc), tier);
            T_EQ_INT(gd__loc_slot(loc), slots[k]);
            T_ASSERT(loc >= 0);
        }
        for (int k = 0; k < 1000; k++) {
            const int64_t slot = (int64_t)(t_rand(state) & (uint64_t)GD__LOC_SLOT_MASK);
            const int64_t loc = gd__loc_make(tier, slot);
            T_EQ_INT(gd__loc_tier(loc), tier);
            T_EQ_INT(gd__loc_slot(loc), slot);
        }
    }
    /* Host tier locations are the slots themselves: the graph's map keeps indptr offsets. */
    T_EQ_INT(gd__loc_make(GD__TIER_HOST, 777), 777);
    /* The kernels' view picks each tier's base and size by its code. */
    gd__tier_bases b;
    memset(&b, 0, sizeof b);
    static char arrays[GD__TIER_COUNT];
    for (int c = 0; c < GD__TIER_COUNT; c++) {
        b.base[c] = &arrays[c];
        b.units[c] = 10 + c;
    }
    for (int c = 0; c < GD__TIER_COUNT; c++) {
        int64_t units = -1;
        T_ASSERT(gd__tier_base(b, c, NULL) == &arrays[c]);
        T_ASSERT(gd__tier_base(b, c, &units) == &arrays[c]);
        T_EQ_INT(units, 10 + c);
    }
}

/*
 * What the store must have built for these candidates and budget, checked independently: the
 * rule of tier.h walked here, then the store's rows, slots, map, contents and record compared.
 */
static void check_cache_layout(const table *t, const gd__tier_store *s, const int64_t *cand,
                               int64_t n, int64_t budget) {
    const int64_t rows = t->rows, ub = t->unit_bytes;
    unsigned char *taken = calloc((size_t)rows, 1);
    int64_t left = budget / ub, count = 0, used = 0;
    T_ASSERT(taken);
    for (int64_t k = 0; k < n && left > 0; k++) {
        const int64_t r = cand[k], u = row_units(t, r);
        if (u == 0 || u > left || taken[r]) continue;
        taken[r] = 1;
        T_ASSERT(count < s->cache.count);
        T_EQ_INT(s->cache.rows[count], r);
        T_EQ_INT(s->cache.slots[count], used);
        count++;
        used += u;
        left -= u;
    }
    T_EQ_INT(s->cache.count, count);
    T_EQ_INT(s->cache.units, used);
    T_ASSERT(used * ub <= budget);
    for (int64_t r = 0; r < rows; r++) T_EQ_INT(gd__tier_cache_holds(s, r), taken[r]);
    T_EQ_INT(gd__tier_cache_holds(s, -1), 0);
    T_EQ_INT(gd__tier_cache_holds(s, rows), 0);
    if (count == 0) {
        T_ASSERT(s->loc == NULL && s->cache.mem == NULL);
        T_EQ_INT(s->map_bytes, 0);
        T_ASSERT(s->tier[GD__TIER_GPU_CACHE].ops == NULL);
        free(taken);
        return;
    }
    T_EQ_INT(s->map_bytes, rows * 8);
    T_EQ_INT(s->tier[GD__TIER_GPU_CACHE].units, used);
    T_EQ_INT(s->tier[GD__TIER_GPU_CACHE].bytes, used * ub);
    for (int64_t k = 0; k < count; k++) {
        const int64_t r = s->cache.rows[k];
        T_EQ_INT(s->loc[r], gd__loc_make(GD__TIER_GPU_CACHE, s->cache.slots[k]));
        T_ASSERT(memcmp((const unsigned char *)s->cache.mem + s->cache.slots[k] * ub,
                        t->data + row_start(t, r) * ub, (size_t)(row_units(t, r) * ub)) == 0);
    }
    for (int64_t r = 0; r < rows; r++)
        if (!taken[r]) T_EQ_INT(s->loc[r], gd__loc_make(s->home, row_start(t, r)));
    free(taken);
}

/*
 * SAMPLE rows to read, a few outside the table (which locate marks and read skips), each with
 * its destination slot (3 slots for a row outside, which must stay poisoned). Returns the slots.
 */
#define SAMPLE 64
static int64_t sample_rows(uint64_t *state, const table *t, int64_t *ids, int64_t *slots) {
    int64_t total = 0;
    for (int64_t i = 0; i < SAMPLE; i++) {
        const uint64_t k = t_rand(state) % 16;
        ids[i] = k == 0 ? -1 : k == 1 ? t->rows : (int64_t)(t_rand(state) % (uint64_t)t->rows);
        slots[i] = total;
        total += ids[i] >= 0 && ids[i] < t->rows ? row_units(t, ids[i]) : 3;
    }
    return total;
}

/* locate and read of every tier of a CPU store, and a map update, against the map. */
static void check_cpu_interface(uint64_t *state, const table *t, gd__tier_store *s) {
    const int64_t n = SAMPLE, ub = t->unit_bytes;
    int64_t ids[SAMPLE], locs[SAMPLE], slots[SAMPLE];
    const int64_t total = sample_rows(state, t, ids, slots);
    unsigned char *out = malloc((size_t)(total * ub) + 1);
    T_ASSERT(out);
    for (int c = 0; c < GD__TIER_COUNT; c++) {
        const gd__tier *tier = &s->tier[c];
        if (!tier->ops) continue;
        T_OK(tier->ops->locate(tier, ids, n, locs, NULL));
        memset(out, POISON, (size_t)(total * ub));
        T_OK(tier->ops->read(tier, ids, slots, n, out, NULL));
        for (int64_t i = 0; i < n; i++) {
            const int64_t r = ids[i];
            if (r < 0 || r >= t->rows) {
                T_EQ_INT(locs[i], GD__LOC_NONE);
                for (int64_t b = 0; b < 3 * ub; b++) T_EQ_INT(out[slots[i] * ub + b], POISON);
                continue;
            }
            const int64_t want =
                c == GD__TIER_GPU_CACHE && s->loc
                    ? s->loc[r]
                    : gd__loc_make(c == GD__TIER_GPU_CACHE ? s->home : c, row_start(t, r));
            T_EQ_INT(locs[i], want);
            T_ASSERT(memcmp(out + slots[i] * ub, t->data + row_start(t, r) * ub,
                            (size_t)(row_units(t, r) * ub)) == 0);
        }
        if (!t->offsets) {
            /* Fixed rows may omit the destination slots: row i goes to slot i. */
            memset(out, POISON, (size_t)(n * ub));
            T_OK(tier->ops->read(tier, ids, NULL, n, out, NULL));
            for (int64_t i = 0; i < n; i++)
                if (ids[i] >= 0 && ids[i] < t->rows)
                    T_ASSERT(memcmp(out + i * ub, t->data + ids[i] * ub, (size_t)ub) == 0);
        } else {
            T_FAILS(tier->ops->read(tier, ids, NULL, n, out, NULL), GD_ERR_INVALID_ARG,
                    "destination slots");
        }
    }
    free(out);
    if (!s->loc) {
        T_FAILS(gd__tier_map_update(s, ids, locs, 1, NULL), GD_ERR_INTERNAL, "map");
        return;
    }
    /* A map update moves a row (here: back home) and leaves the others. */
    const int64_t r = s->cache.rows[0], home = gd__loc_make(s->home, row_start(t, r));
    const int64_t other = r == 0 ? t->rows - 1 : 0, before = s->loc[other];
    T_OK(gd__tier_map_update(s, &r, &home, 1, NULL));
    T_EQ_INT(s->loc[r], home);
    if (other != r) T_EQ_INT(s->loc[other], before);
}

static void check_cpu_cache(uint64_t *state) {
    for (int round = 0; round < 40; round++) {
        const int variable = round % 2;
        table t = make_table(state, variable);
        const int64_t total = t.units * t.unit_bytes;
        int64_t *cand = malloc(sizeof *cand * (size_t)(2 * t.rows + 1));
        T_ASSERT(cand);
        const int64_t n = make_candidates(state, t.rows, cand);
        const int64_t budgets[] = {0,
                                   t.unit_bytes - 1,
                                   t.unit_bytes,
                                   (int64_t)(t_rand(state) % (uint64_t)(total + 1)),
                                   total / 3,
                                   total > 0 ? total - 1 : 0,
                                   total,
                                   2 * total + 5};
        for (int bi = 0; bi < 8; bi++) {
            const gd__row_shape shape = shape_of(&t);
            const int home = bi % 2 ? GD__TIER_GPU : GD__TIER_HOST;
            gd__tier_store *s = NULL;
            T_OK(gd__tier_store_create(&shape, -1, home, t.data, t.units, &s));
            T_EQ_INT(s->tier[home].bytes, total);
            T_OK(gd__tier_cache_build(s, cand, n, budgets[bi]));
            check_cache_layout(&t, s, cand, n, budgets[bi]);
            if (budgets[bi] >= total) {
                /* Everything fits: every non-empty row is cached. */
                for (int64_t r = 0; r < t.rows; r++)
                    T_EQ_INT(gd__tier_cache_holds(s, r), row_units(&t, r) > 0);
            }
            if (budgets[bi] < t.unit_bytes) T_EQ_INT(s->cache.count, 0);
            gd__tier_bases b = gd__tier_store_bases(s);
            T_EQ_INT(b.home, home);
            T_ASSERT(b.base[home] == t.data && b.units[home] == t.units);
            T_ASSERT(b.base[GD__TIER_GPU_CACHE] == s->cache.mem);
            check_cpu_interface(state, &t, s);
            gd__tier_store_destroy(s);
        }
        free(cand);
        free_table(&t);
    }
    t_check_no_leaks();
}

static void check_errors(void) {
    uint64_t state = 7;
    table t = make_table(&state, 1);
    gd__row_shape shape = shape_of(&t);
    gd__tier_store *s = (gd__tier_store *)1;
    int64_t bad = t.rows, fine = 0;
    while (fine < t.rows - 1 && row_units(&t, fine) == 0) fine++;
    T_FAILS(gd__tier_store_create(&shape, -1, GD__TIER_GPU_CACHE, t.data, t.units, &s),
            GD_ERR_INVALID_ARG, "whole table");
    T_ASSERT(s == NULL);
    shape.unit_bytes = 0;
    T_FAILS(gd__tier_store_create(&shape, -1, GD__TIER_HOST, t.data, t.units, &s),
            GD_ERR_INVALID_ARG, "bytes");
    shape = shape_of(&t);
    shape.offsets = NULL;
    shape.d_offsets = t.offsets;
    T_FAILS(gd__tier_store_create(&shape, -1, GD__TIER_HOST, t.data, t.units, &s),
            GD_ERR_INVALID_ARG, "host offsets");
    shape = shape_of(&t);
#ifndef GD_WITH_CUDA
    T_FAILS(gd__tier_store_create(&shape, 0, GD__TIER_HOST, t.data, t.units, &s), GD_ERR_NO_DEVICE,
            "CUDA");
#endif
    T_OK(gd__tier_store_create(&shape, -1, GD__TIER_HOST, t.data, t.units, &s));
    T_FAILS(gd__tier_cache_build(s, &bad, 1, 1 << 20), GD_ERR_RANGE, "outside");
    T_FAILS(gd__tier_cache_build(s, &fine, 1, -1), GD_ERR_INVALID_ARG, "budget");
    T_OK(gd__tier_cache_build(s, &fine, 1, 1 << 20));
    T_FAILS(gd__tier_cache_build(s, &fine, 1, 1 << 20), GD_ERR_INTERNAL, "once");
    gd__tier_store_destroy(s);
    gd__tier_store_destroy(NULL);
    /* Allocation faults fail cleanly and leak nothing. */
    for (int k = 1; k < 20; k++) {
        int64_t cand[3] = {0, 1, 2};
        gd_fault_set(GD_FAULT_ALLOC, k);
        gd_status st = gd__tier_store_create(&shape, -1, GD__TIER_HOST, t.data, t.units, &s);
        if (st == GD_OK) {
            st = gd__tier_cache_build(s, cand, t.rows < 3 ? t.rows : 3, 1 << 20);
            gd__tier_store_destroy(s);
        }
        gd_fault_set(GD_FAULT_ALLOC, 0);
        T_ASSERT(st == GD_OK || st == GD_ERR_NO_MEMORY);
        t_check_no_leaks();
    }
    free_table(&t);
    t_check_no_leaks();
}

/* ------------------------------------------------------------------ GPU checks */

#ifdef GD_WITH_CUDA

/* The CUDA store's locate, read and map update equal the CPU store's (poisoned outputs). */
static void compare_interface(uint64_t *state, const table *t, gd__tier_store *cpu,
                              gd__tier_store *gpu, cudaStream_t stream) {
    const int64_t n = SAMPLE, ub = t->unit_bytes;
    int64_t ids[SAMPLE], slots[SAMPLE], locs[SAMPLE];
    const int64_t total = sample_rows(state, t, ids, slots);
    const size_t out_bytes = (size_t)(total * ub);
    int64_t *d_ids = to_device(ids, sizeof ids), *d_slots = to_device(slots, sizeof slots);
    int64_t *d_locs = NULL;
    unsigned char *d_out = NULL, *want = malloc(out_bytes + 1);
    T_ASSERT(want);
    CU(cudaMalloc((void **)&d_locs, sizeof locs));
    CU(cudaMalloc((void **)&d_out, out_bytes + 16));
    for (int c = 0; c < GD__TIER_COUNT; c++) {
        const gd__tier *tc = &cpu->tier[c], *tg = &gpu->tier[c];
        T_ASSERT((tc->ops == NULL) == (tg->ops == NULL));
        if (!tc->ops) continue;
        T_EQ_INT(tc->units, tg->units);
        T_EQ_INT(tc->bytes, tg->bytes);
        T_OK(tc->ops->locate(tc, ids, n, locs, NULL));
        CU(cudaMemset(d_locs, POISON, sizeof locs));
        CU(cudaDeviceSynchronize());
        T_OK(tg->ops->locate(tg, d_ids, n, d_locs, stream));
        CU(cudaStreamSynchronize(stream));
        int64_t *got = to_host(d_locs, sizeof locs);
        for (int64_t i = 0; i < n; i++) T_EQ_INT(got[i], locs[i]);
        free(got);
        memset(want, POISON, out_bytes);
        T_OK(tc->ops->read(tc, ids, slots, n, want, NULL));
        CU(cudaMemset(d_out, POISON, out_bytes + 16));
        CU(cudaDeviceSynchronize());
        T_OK(tg->ops->read(tg, d_ids, d_slots, n, d_out, stream));
        CU(cudaStreamSynchronize(stream));
        unsigned char *out = to_host(d_out, out_bytes);
        for (size_t b = 0; b < out_bytes; b++)
            if (out[b] != want[b])
                T_FAIL_("tier %s read: byte %zu is 0x%02x, expected 0x%02x", tg->name, b, out[b],
                        want[b]);
        free(out);
    }
    if (cpu->loc) {
        /* Distinct rows (and one outside the table) move to random locations. */
        const int64_t m = t->rows < n - 1 ? t->rows : n - 1;
        for (int64_t i = 0; i < m; i++) ids[i] = m - 1 - i;
        ids[m] = t->rows;
        for (int64_t i = 0; i <= m; i++)
            locs[i] = gd__loc_make((int)(t_rand(state) % GD__TIER_COUNT),
                                   (int64_t)(t_rand(state) % 1000));
        CU(cudaMemcpy(d_ids, ids, sizeof ids, cudaMemcpyHostToDevice));
        CU(cudaMemcpy(d_locs, locs, sizeof locs, cudaMemcpyHostToDevice));
        T_OK(gd__tier_map_update(cpu, ids, locs, m + 1, NULL));
        T_OK(gd__tier_map_update(gpu, d_ids, d_locs, m + 1, stream));
        CU(cudaStreamSynchronize(stream));
        int64_t *map = to_host(gpu->loc, (size_t)gpu->map_bytes);
        for (int64_t r = 0; r < t->rows; r++) T_EQ_INT(map[r], cpu->loc[r]);
        free(map);
    }
    free(want);
    CU(cudaFree(d_ids));
    CU(cudaFree(d_slots));
    CU(cudaFree(d_locs));
    CU(cudaFree(d_out));
}

/*
 * One random table, cached by both implementations under the same candidates and budget: the
 * home tier in pinned host memory (read over PCIe) or in GPU memory.
 */
static void compare_once(uint64_t *state, int variable, int home, int64_t budget_pick,
                         cudaStream_t stream) {
    table t = make_table(state, variable);
    const int64_t total = t.units * t.unit_bytes;
    const size_t bytes = (size_t)total;
    int64_t *cand = malloc(sizeof *cand * (size_t)(2 * t.rows + 1));
    T_ASSERT(cand);
    const int64_t n = make_candidates(state, t.rows, cand);
    const int64_t budget = budget_pick == 0   ? 0
                           : budget_pick == 1 ? 2 * total
                                              : (int64_t)(t_rand(state) % (uint64_t)(total + 1));
    void *pinned = NULL, *d_table = NULL, *d_offsets = NULL;
    const void *base = NULL;
    if (home == GD__TIER_HOST) {
        CU(cudaHostAlloc(&pinned, bytes ? bytes : 16, cudaHostAllocMapped));
        if (bytes) memcpy(pinned, t.data, bytes);
        void *dp = NULL;
        CU(cudaHostGetDevicePointer(&dp, pinned, 0));
        base = dp;
    } else {
        d_table = to_device(t.data, bytes);
        base = d_table;
    }
    if (variable) d_offsets = to_device(t.offsets, sizeof(int64_t) * (size_t)(t.rows + 1));
    gd__row_shape shape = shape_of(&t);
    gd__tier_store *cpu = NULL, *gpu = NULL;
    T_OK(gd__tier_store_create(&shape, -1, home, t.data, t.units, &cpu));
    shape.d_offsets = d_offsets;
    T_OK(gd__tier_store_create(&shape, 0, home, base, t.units, &gpu));
    T_OK(gd__tier_cache_build(cpu, cand, n, budget));
    T_OK(gd__tier_cache_build(gpu, cand, n, budget));
    check_cache_layout(&t, cpu, cand, n, budget);
    T_EQ_INT(gpu->cache.count, cpu->cache.count);
    T_EQ_INT(gpu->cache.units, cpu->cache.units);
    T_EQ_INT(gpu->map_bytes, cpu->map_bytes);
    for (int64_t k = 0; k < cpu->cache.count; k++) {
        T_EQ_INT(gpu->cache.rows[k], cpu->cache.rows[k]);
        T_EQ_INT(gpu->cache.slots[k], cpu->cache.slots[k]);
    }
    if (cpu->cache.count == 0) {
        T_ASSERT(gpu->loc == NULL && gpu->cache.mem == NULL);
    } else {
        int64_t *map = to_host(gpu->loc, (size_t)gpu->map_bytes);
        for (int64_t r = 0; r < t.rows; r++) T_EQ_INT(map[r], cpu->loc[r]);
        free(map);
        const size_t cache_bytes = (size_t)(cpu->cache.units * t.unit_bytes);
        unsigned char *mem = to_host(gpu->cache.mem, cache_bytes);
        T_ASSERT(memcmp(mem, cpu->cache.mem, cache_bytes) == 0);
        free(mem);
    }
    gd__tier_bases b = gd__tier_store_bases(gpu);
    T_ASSERT(b.base[home] == base && b.home == home);
    T_ASSERT(b.base[GD__TIER_GPU_CACHE] == gpu->cache.mem);
    compare_interface(state, &t, cpu, gpu, stream);
    gd__tier_store_destroy(cpu);
    gd__tier_store_destroy(gpu);
    if (pinned) CU(cudaFreeHost(pinned));
    if (d_table) CU(cudaFree(d_table));
    if (d_offsets) CU(cudaFree(d_offsets));
    free(cand);
    free_table(&t);
}

static void check_gpu(uint64_t *state) {
    cudaStream_t stream;
    CU(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    for (int round = 0; round < 48; round++)
        compare_once(state, round % 2, (round / 2) % 2 ? GD__TIER_GPU : GD__TIER_HOST,
                     (round / 4) % 3, stream);
    CU(cudaStreamDestroy(stream));
    t_check_no_leaks();
}
#endif

int main(void) {
    uint64_t state = t_seed();
    check_encoding(&state);
    check_cpu_cache(&state);
    check_errors();
    fprintf(stderr, "CPU checks passed\n");
#ifdef GD_WITH_CUDA
    if (gd_device_count() == 0) {
        fprintf(stderr, "no GPU: the CUDA tier store checks are skipped\n");
        return GD_TEST_SKIP;
    }
    check_gpu(&state);
    printf("the CUDA tier store equals the CPU one\n");
    return 0;
#else
    fprintf(stderr, "built without CUDA: the CUDA tier store checks are skipped\n");
    return GD_TEST_SKIP;
#endif
}
