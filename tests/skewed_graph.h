/*
 * A skewed random CSC graph for the start-up tests (test_startup_rank.c on the CPU,
 * test_degree_cuda.c on a GPU): 10 % of the lists empty, in-degrees heavy-tailed up to max_deg,
 * sources drawn with a square bias so that the out-degrees spread too (the cache ranks by them).
 * Millions of nodes in a second or two, so the CPU test can also time the passes at scale.
 */
#ifndef GD_TEST_SKEWED_GRAPH_H
#define GD_TEST_SKEWED_GRAPH_H

#include "test.h"

typedef struct {
    int64_t n, edges;
    int64_t *indptr;
    void *indices;
    gd_dtype dtype;
} skewed_graph;

static inline double skewed_unit(uint64_t *state) {
    return (double)(t_rand(state) >> 11) / 9007199254740992.0;
}

static inline skewed_graph make_skewed_graph(uint64_t *state, int64_t n, int64_t max_deg,
                                             gd_dtype dtype) {
    skewed_graph g;
    g.n = n;
    g.dtype = dtype;
    g.indptr = malloc(sizeof *g.indptr * (size_t)(n + 1));
    T_ASSERT(g.indptr);
    g.indptr[0] = 0;
    for (int64_t v = 0; v < n; v++) {
        const double u = skewed_unit(state);
        const int64_t d = t_rand(state) % 10 == 0 ? 0 : 1 + (int64_t)(u * u * u * u * max_deg);
        g.indptr[v + 1] = g.indptr[v] + d;
    }
    g.edges = g.indptr[n];
    g.indices = malloc(gd_dtype_size(dtype) * (size_t)(g.edges + 1));
    T_ASSERT(g.indices);
    for (int64_t e = 0; e < g.edges; e++) {
        const double u = skewed_unit(state);
        const int64_t v = (int64_t)(u * u * (double)n) % n;
        if (dtype == GD_DTYPE_INT32)
            ((int32_t *)g.indices)[e] = (int32_t)v;
        else
            ((int64_t *)g.indices)[e] = v;
    }
    return g;
}

static inline void free_skewed_graph(skewed_graph *g) {
    free(g->indptr);
    free(g->indices);
}

#endif /* GD_TEST_SKEWED_GRAPH_H */
