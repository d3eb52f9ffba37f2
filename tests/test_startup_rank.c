/*
 * The start-up's neighbour-list cache planning on every core (issue 19), against the serial
 * rule it replaced, on fresh random graphs: the slot walk (gd__tier_cache_slots, which the cache
 * builds use) equals gd__tier_assign_serial (every slot, the count, the units) for candidates
 * ranked by gd__graph_rank_lists, for random candidates with repeats and empty rows, for budgets
 * from nothing to more than every list, at 1 to 16 threads; a CPU store's built cache holds
 * exactly the serial rule's rows and slots in candidate order; the out-degrees of the graph
 * (gd__graph_out_degrees over a host graph) equal gd_csc_degree_scores' and a bad index is
 * named the same way. GD_TEST_STARTUP_NODES=N (millions of nodes) instead times each start-up
 * pass on a generated graph of N nodes: the serial rule and the compaction before and after.
 */
#include "skewed_graph.h"

#include "core/internal.h"
#include "feature/tier.h"
#include "graph/internal.h"

#include <math.h>

static gd_graph_t *host_graph(const skewed_graph *g) {
    gd_graph_t *hg = NULL;
    T_OK(gd_graph_create(g->n, g->indptr, g->indices, GD_DTYPE_INT32, NULL, &hg));
    return hg;
}

static void set_threads(int threads) {
    char text[16];
    snprintf(text, sizeof text, "%d", threads);
    T_OK(gd_param_set("GD_THREADS", text));
}

/* The candidates: the ranking of the lists (distinct, the start-up's), or random rows with
 * repeats. */
static int64_t candidates(uint64_t *state, const skewed_graph *g, gd_graph_t *hg, int ranked,
                          int64_t *cand) {
    if (ranked) {
        int64_t *score = malloc(sizeof *score * (size_t)g->n), count = 0;
        T_ASSERT(score);
        T_OK(gd__graph_out_degrees(hg, score));
        T_OK(gd__graph_rank_lists(hg, g->indptr, score, score, cand, &count));
        T_EQ_INT(count, g->n);
        free(score);
        return count;
    }
    const int64_t n = 1 + (int64_t)(t_rand(state) % (uint64_t)(2 * g->n));
    for (int64_t k = 0; k < n; k++) cand[k] = (int64_t)(t_rand(state) % (uint64_t)g->n);
    return n;
}

static void check_round(uint64_t *state, int64_t nodes, int ranked, int threads) {
    skewed_graph g = make_skewed_graph(state, nodes, 1 + (int64_t)(t_rand(state) % 200), GD_DTYPE_INT32);
    gd_graph_t *hg = host_graph(&g);
    const gd__row_shape shape = {g.n, 4, g.indptr, NULL};
    int64_t *cand = malloc(sizeof *cand * (size_t)(2 * g.n + 1));
    int64_t *want = malloc(sizeof *want * (size_t)(2 * g.n + 1));
    int64_t *got = malloc(sizeof *got * (size_t)(2 * g.n + 1));
    unsigned char *bits = calloc((size_t)(g.n + 7) / 8, 1);
    T_ASSERT(cand && want && got && bits);
    set_threads(threads);
    const int64_t n = candidates(state, &g, hg, ranked, cand);
    const int64_t total = g.edges * 4;
    const int pick = (int)(t_rand(state) % 4);
    const int64_t budget = pick == 0   ? 0
                           : pick == 1 ? 2 * total + 4
                                       : (int64_t)(t_rand(state) % (uint64_t)(total + 1));
    int64_t want_count = 0, want_units = 0, count = -1, units = -1;
    gd__tier_assign_serial(g.indptr, cand, n, budget / 4, bits, want, &want_count, &want_units);
    T_OK(gd__tier_cache_slots(&shape, cand, n, budget, got, &count, &units));
    T_EQ_INT(count, want_count);
    T_EQ_INT(units, want_units);
    for (int64_t k = 0; k < n; k++)
        if (got[k] != want[k])
            T_FAIL_("%lld nodes, %s candidates, %d threads, budget %lld: slot of candidate %lld "
                    "(row %lld) is %lld, the serial rule gives %lld",
                    (long long)g.n, ranked ? "ranked" : "random", threads, (long long)budget,
                    (long long)k, (long long)cand[k], (long long)got[k], (long long)want[k]);
    /* A built cache (CPU store) holds the rule's rows and slots in candidate order, and each
     * cached list equals the graph's. */
    gd__tier_store *s = NULL;
    T_OK(gd__tier_store_create(&shape, -1, GD__TIER_HOST, g.indices, g.edges, &s));
    T_OK(gd__tier_cache_build(s, cand, n, budget));
    T_EQ_INT(s->cache.count, want_count);
    for (int64_t k = 0, j = 0; k < n; k++) {
        if (want[k] < 0) continue;
        T_EQ_INT(s->cache.rows[j], cand[k]);
        T_EQ_INT(s->cache.slots[j], want[k]);
        if (j % 97 == 0 && s->cache.mem) {
            const int64_t r = cand[k], d = g.indptr[r + 1] - g.indptr[r];
            T_ASSERT(memcmp((const int32_t *)s->cache.mem + want[k], (const int32_t *)g.indices + g.indptr[r],
                            (size_t)d * 4) == 0);
        }
        j++;
    }
    gd__tier_store_destroy(s);
    gd_graph_destroy(hg);
    free(cand);
    free(want);
    free(got);
    free(bits);
    free_skewed_graph(&g);
}

/* The out-degrees of a host graph equal gd_csc_degree_scores'; a bad index is named. */
static void check_degrees(uint64_t *state) {
    skewed_graph g = make_skewed_graph(state, 1000 + (int64_t)(t_rand(state) % 200000), 60, GD_DTYPE_INT32);
    gd_graph_t *hg = host_graph(&g);
    int64_t *a = malloc(sizeof *a * (size_t)g.n), *b = malloc(sizeof *b * (size_t)g.n);
    T_ASSERT(a && b);
    T_OK(gd_csc_degree_scores(g.n, g.indptr, g.indices, GD_DTYPE_INT32, GD_DEGREE_OUT, a));
    for (int64_t v = 0; v < g.n; v++) b[v] = -7;
    T_OK(gd__graph_out_degrees(hg, b));
    for (int64_t v = 0; v < g.n; v++) T_EQ_INT(b[v], a[v]);
    if (g.edges > 3) {
        const int64_t at = g.edges / 3;
        ((int32_t *)g.indices)[at] = (int32_t)g.n;
        T_FAILS(gd__graph_out_degrees(hg, b), GD_ERR_RANGE, "is outside");
        char where[64];
        snprintf(where, sizeof where, "indices[%lld]", (long long)at);
        T_ASSERT(strstr(gd_last_error(), where) != NULL);
    }
    gd_graph_destroy(hg);
    free(a);
    free(b);
    free_skewed_graph(&g);
}

/* The slot rule's walk and the compaction on one core and on every core, on n nodes. */
static void time_passes(uint64_t *state, int64_t nodes) {
    double t0 = gd__now();
    skewed_graph g = make_skewed_graph(state, nodes, 120, GD_DTYPE_INT32);
    gd_graph_t *hg = host_graph(&g);
    const gd__row_shape shape = {g.n, 4, g.indptr, NULL};
    int64_t *score = malloc(sizeof *score * (size_t)g.n), *rank = malloc(sizeof *rank * (size_t)g.n);
    int64_t *want = malloc(sizeof *want * (size_t)g.n), *got = malloc(sizeof *got * (size_t)g.n);
    unsigned char *bits = calloc((size_t)(g.n + 7) / 8, 1);
    int64_t count = 0, units = 0, wc = 0, wu = 0;
    T_ASSERT(score && rank && want && got && bits);
    fprintf(stderr, "%lld nodes, %lld edges (generated in %.2f s), %d threads\n",
            (long long)g.n, (long long)g.edges, gd__now() - t0, gd__num_threads());
    t0 = gd__now();
    T_OK(gd__graph_out_degrees(hg, score));
    fprintf(stderr, "out-degrees (CPU, every core): %.3f s\n", gd__now() - t0);
    t0 = gd__now();
    T_OK(gd__graph_rank_lists(hg, g.indptr, score, score, rank, &count));
    fprintf(stderr, "ranking of the lists: %.3f s\n", gd__now() - t0);
    /* The plan's budget on papers: about half of the lists' bytes. */
    const int64_t budget = g.edges * 4 / 2;
    t0 = gd__now();
    gd__tier_assign_serial(g.indptr, rank, count, budget / 4, bits, want, &wc, &wu);
    const double serial = gd__now() - t0;
    t0 = gd__now();
    T_OK(gd__tier_cache_slots(&shape, rank, count, budget, got, &count, &units));
    const double parallel = gd__now() - t0;
    T_EQ_INT(count, wc);
    T_EQ_INT(units, wu);
    for (int64_t k = 0; k < g.n; k++) T_EQ_INT(got[k], want[k]);
    fprintf(stderr, "slot walk: serial %.3f s, every core %.3f s (includes its bitmap), %lld "
            "lists cached\n", serial, parallel, (long long)wc);
    /* The compaction into the cache's rows and slots: one loop, then the store's. */
    int64_t *rows = malloc(sizeof *rows * (size_t)(wc + 1)), *slots = malloc(sizeof *slots * (size_t)(wc + 1));
    T_ASSERT(rows && slots);
    t0 = gd__now();
    for (int64_t i = 0, k = 0; i < g.n; i++) {
        if (want[i] < 0) continue;
        rows[k] = rank[i];
        slots[k++] = want[i];
    }
    const double loop = gd__now() - t0;
    gd__tier_store *s = NULL;
    T_OK(gd__tier_store_create(&shape, -1, GD__TIER_HOST, g.indices, g.edges, &s));
    t0 = gd__now();
    T_OK(gd__tier_cache_build(s, rank, g.n, budget));
    fprintf(stderr, "compaction: one loop %.3f s; the CPU store's whole build (walk, compaction, "
            "map, fill) %.3f s\n", loop, gd__now() - t0);
    T_EQ_INT(s->cache.count, wc);
    for (int64_t k = 0; k < wc; k++) T_EQ_INT(s->cache.rows[k], rows[k]);
    gd__tier_store_destroy(s);
    gd_graph_destroy(hg);
    free(rows);
    free(slots);
    free(score);
    free(rank);
    free(want);
    free(got);
    free(bits);
    free_skewed_graph(&g);
}

int main(void) {
    uint64_t state = t_seed();
    const char *scale = getenv("GD_TEST_STARTUP_NODES");
    if (scale) {
        time_passes(&state, (int64_t)(atof(scale) * 1e6));
        return 0;
    }
    static const int threads[] = {1, 2, 3, 8, 16};
    for (int round = 0; round < 24; round++) {
        const int64_t nodes = round % 3 == 0 ? 1 + (int64_t)(t_rand(&state) % 300)
                                             : 150000 + (int64_t)(t_rand(&state) % 400000);
        check_round(&state, nodes, round % 4 != 3, threads[round % 5]);
    }
    T_OK(gd_param_set("GD_THREADS", "0"));
    check_degrees(&state);
    gd_clear_error();
    t_check_no_leaks();
    return 0;
}
