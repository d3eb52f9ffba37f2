/*
 * The start-up's GPU passes (issue 19) against their CPU references, on fresh random graphs
 * (exits 77 without a GPU). The out-degrees counted by the GPU over the graph's pinned or GPU
 * indices (gd__graph_out_degrees, int32 and int64 indices) equal gd_csc_degree_scores' on the
 * host arrays, every entry poisoned first; a bad index is named as the CPU pass names it. The
 * neighbour-list cache of a graph built the start-up's way (placed without a cache, out-degrees
 * on the GPU, then gd__graph_build_cache), and of one whose gd_graph_create counts them itself,
 * equals the cache of the old way (gd_graph_create given the CPU out-degrees): the same lists
 * in the same order and slots as the serial slot rule over the CPU ranking, the same location
 * map and the same cache memory, byte for byte.
 */
#include "skewed_graph.h"

#include "core/internal.h"
#include "feature/tier.h"
#include "graph/internal.h"

#ifdef GD_WITH_CUDA
static gd_graph_t *placed(const skewed_graph *g, gd_placement indices, int64_t cache,
                          const int64_t *outdeg) {
    gd_graph_options o = GD_GRAPH_OPTIONS_INIT;
    gd_graph_t *pg = NULL;
    o.indptr_placement = GD_PLACE_GPU;
    o.indices_placement = indices;
    o.narrow_indices = 0;
    o.gpu_cache_bytes = cache;
    o.out_degrees = outdeg;
    T_OK(gd_graph_create(g->n, g->indptr, g->indices, g->dtype, &o, &pg));
    return pg;
}

static void *download(const void *d, size_t bytes) {
    void *h = malloc(bytes ? bytes : 1);
    T_ASSERT(h);
    if (bytes) CU(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));
    return h;
}

/* Two graphs' caches: the same rows, slots, map and memory. */
static void same_cache(const gd_graph_t *a, const gd_graph_t *b, int64_t es) {
    const gd__tier_cache *x = &a->store->cache, *y = &b->store->cache;
    T_EQ_INT(x->count, y->count);
    T_EQ_INT(x->units, y->units);
    T_EQ_INT(a->cache_bytes, b->cache_bytes);
    for (int64_t k = 0; k < x->count; k++) {
        T_EQ_INT(x->rows[k], y->rows[k]);
        T_EQ_INT(x->slots[k], y->slots[k]);
    }
    if (!a->d_loc) {
        T_ASSERT(!b->d_loc);
        return;
    }
    int64_t *ma = download(a->d_loc, (size_t)a->num_nodes * 8);
    int64_t *mb = download(b->d_loc, (size_t)b->num_nodes * 8);
    for (int64_t v = 0; v < a->num_nodes; v++) T_EQ_U64(ma[v], mb[v]);
    unsigned char *ca = download(a->d_cache, (size_t)(x->units * es));
    unsigned char *cb = download(b->d_cache, (size_t)(y->units * es));
    T_ASSERT(memcmp(ca, cb, (size_t)(x->units * es)) == 0);
    free(ma);
    free(mb);
    free(ca);
    free(cb);
}

static void check_round(uint64_t *state, int round) {
    const gd_dtype dtype = round % 2 ? GD_DTYPE_INT64 : GD_DTYPE_INT32;
    const int64_t es = (int64_t)gd_dtype_size(dtype);
    const int64_t n = round % 3 == 0 ? 20 + (int64_t)(t_rand(state) % 500)
                                     : 100000 + (int64_t)(t_rand(state) % 1000000);
    skewed_graph g = make_skewed_graph(state, n, 1 + (int64_t)(t_rand(state) % 150), dtype);
    int64_t *want = malloc(sizeof *want * (size_t)n), *got = malloc(sizeof *got * (size_t)n);
    T_ASSERT(want && got);
    T_OK(gd_csc_degree_scores(n, g.indptr, g.indices, dtype, GD_DEGREE_OUT, want));

    /* The out-degrees from pinned and from GPU indices. */
    for (int where = 0; where < 2; where++) {
        gd_graph_t *pg = placed(&g, where ? GD_PLACE_GPU : GD_PLACE_PINNED, 0, NULL);
        for (int64_t v = 0; v < n; v++) got[v] = -0x5a5a;
        T_OK(gd__graph_out_degrees(pg, got));
        for (int64_t v = 0; v < n; v++)
            if (got[v] != want[v])
                T_FAIL_("%s %s indices, %lld nodes: out-degree of %lld is %lld on the GPU, %lld "
                        "on the CPU",
                        where ? "GPU" : "pinned", gd_dtype_name(dtype), (long long)n,
                        (long long)v, (long long)got[v], (long long)want[v]);
        gd_graph_destroy(pg);
    }

    /* The list cache three ways, under a budget from nothing to every list. */
    const int64_t lists = g.edges * es;
    const int pick = (int)(t_rand(state) % 3);
    const int64_t budget = pick == 0 ? es : pick == 1 ? lists + es
                                                    : es + (int64_t)(t_rand(state) % (uint64_t)(lists + 1));
    gd_graph_t *old = placed(&g, GD_PLACE_PINNED, budget, want);
    gd_graph_t *inside = placed(&g, GD_PLACE_PINNED, budget, NULL);
    gd_graph_t *fresh = placed(&g, GD_PLACE_PINNED, 0, NULL);
    T_OK(gd__graph_out_degrees(fresh, got));
    T_OK(gd__graph_build_cache(fresh, g.indptr, budget, got));
    T_FAILS(gd__graph_build_cache(fresh, g.indptr, budget, got), GD_ERR_INVALID_ARG, "no cache yet");
    same_cache(old, fresh, es);
    same_cache(old, inside, es);
    /* ... and the serial rule over the CPU ranking. */
    {
        int64_t *score = malloc(sizeof *score * (size_t)n), *rank = malloc(sizeof *rank * (size_t)n);
        int64_t *slots = malloc(sizeof *slots * (size_t)n), count = 0, units = 0, ranked = 0;
        unsigned char *bits = calloc((size_t)(n + 7) / 8, 1);
        T_ASSERT(score && rank && slots && bits);
        T_OK(gd__graph_rank_lists(fresh, g.indptr, want, score, rank, &ranked));
        gd__tier_assign_serial(g.indptr, rank, ranked, budget / es, bits, slots, &count, &units);
        const gd__tier_cache *c = &fresh->store->cache;
        T_EQ_INT(c->count, count);
        T_EQ_INT(c->units, units);
        for (int64_t k = 0, j = 0; k < ranked; k++) {
            if (slots[k] < 0) continue;
            T_EQ_INT(c->rows[j], rank[k]);
            T_EQ_INT(c->slots[j++], slots[k]);
        }
        free(score);
        free(rank);
        free(slots);
        free(bits);
    }
    gd_graph_destroy(old);
    gd_graph_destroy(inside);
    gd_graph_destroy(fresh);

    /* A bad index, named as the CPU pass names it. */
    if (g.edges > 2) {
        const int64_t at = g.edges - 1 - (int64_t)(t_rand(state) % (uint64_t)(g.edges / 2));
        if (dtype == GD_DTYPE_INT32)
            ((int32_t *)g.indices)[at] = -3;
        else
            ((int64_t *)g.indices)[at] = n + 5;
        gd_graph_t *pg = placed(&g, GD_PLACE_PINNED, 0, NULL);
        char where[64];
        snprintf(where, sizeof where, "indices[%lld] = %lld", (long long)at,
                 dtype == GD_DTYPE_INT32 ? -3LL : (long long)(n + 5));
        const char *named = where;
        T_FAILS(gd__graph_out_degrees(pg, got), GD_ERR_RANGE, named);
        T_FAILS(gd_csc_degree_scores(n, g.indptr, g.indices, dtype, GD_DEGREE_OUT, want),
                GD_ERR_RANGE, named);
        gd_graph_destroy(pg);
    }
    free(want);
    free(got);
    free_skewed_graph(&g);
}

int main(void) {
    if (gd_device_count() == 0) {
        fprintf(stderr, "no GPU: skipped\n");
        return GD_TEST_SKIP;
    }
    uint64_t state = t_seed();
    for (int round = 0; round < 12; round++) check_round(&state, round);
    gd_clear_error();
    t_check_no_leaks();
    return 0;
}
#else
int main(void) {
    fprintf(stderr, "built without CUDA: skipped\n");
    return GD_TEST_SKIP;
}
#endif
