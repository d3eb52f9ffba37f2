/*
 * What the graph's degrees say, from its CSC arrays. gd_csc_degree_stats summarises the
 * in-degrees (min, max, mean, quantiles, the log2 histogram, the share of edges into the top 1 %
 * of nodes) for `graphdirect info`. gd_csc_degree_scores gives every node its in-degree or
 * out-degree as a score: the feature store ranks its hot rows by it (feature/hot_rows.c selects
 * them), and graph.c ranks the lists of the neighbour-list GPU cache by it.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#define GD_REQUIRE_ARG(cond, ...) GD_REQUIRE(cond, GD_ERR_INVALID_ARG, __VA_ARGS__)

gd_status gd_csc_degree_scores(int64_t num_nodes, const int64_t *indptr, const void *indices,
                               gd_dtype indices_dtype, gd_degree_kind kind, int64_t *scores) {
    gd_status st = GD_OK;
    int64_t edges;
    GD_REQUIRE_ARG(num_nodes >= 0, "gd_csc_degree_scores: negative node count %lld",
                   (long long)num_nodes);
    GD_REQUIRE_ARG(indptr && scores, "gd_csc_degree_scores: NULL %s",
                   indptr ? "scores" : "indptr");
    if (kind == GD_DEGREE_IN) {
        for (int64_t v = 0; v < num_nodes; v++) scores[v] = indptr[v + 1] - indptr[v];
        return GD_OK;
    }
    GD_REQUIRE_ARG(kind == GD_DEGREE_OUT, "gd_csc_degree_scores: unknown degree kind %d",
                   (int)kind);
    GD_REQUIRE_ARG(indices_dtype == GD_DTYPE_INT32 || indices_dtype == GD_DTYPE_INT64,
                   "gd_csc_degree_scores: indices must be int32 or int64, not %s",
                   gd_dtype_name(indices_dtype));
    edges = indptr[num_nodes];
    GD_REQUIRE_ARG(edges == 0 || indices, "gd_csc_degree_scores: NULL indices for %lld edges",
                   (long long)edges);
    return gd__csc_out_degrees(num_nodes, edges, indices, indices_dtype, scores);
fail:
    return st;
}

gd_status gd__csc_out_degrees(int64_t num_nodes, int64_t edges, const void *indices,
                              gd_dtype indices_dtype, int64_t *scores) {
    gd_status st = GD_OK;
    memset(scores, 0, (size_t)num_nodes * sizeof *scores);
    /*
     * A scatter of one increment per edge to a random node: on papers (1.6G edges, 111M nodes)
     * one thread took about 16 s, each increment a cache miss. The threads take slices of the
     * edges and add atomically (relaxed: only the totals matter). A bad index fails naming the
     * first bad position; the scores are then incomplete. With a GPU the start-up counts them
     * there instead (gd__graph_out_degrees).
     */
    int64_t bad = edges;
    const int threads = gd__num_threads();
#pragma omp parallel for schedule(static) num_threads(threads) reduction(min : bad)
    for (int64_t e = 0; e < edges; e++) {
        const int64_t u = indices_dtype == GD_DTYPE_INT32 ? ((const int32_t *)indices)[e]
                                                           : ((const int64_t *)indices)[e];
        if (u < 0 || u >= num_nodes) {
            if (e < bad) bad = e;
            continue;
        }
        __atomic_fetch_add(&scores[u], 1, __ATOMIC_RELAXED);
    }
    if (bad < edges) {
        const int64_t u = indices_dtype == GD_DTYPE_INT32 ? ((const int32_t *)indices)[bad]
                                                           : ((const int64_t *)indices)[bad];
        GD_REQUIRE(0, GD_ERR_RANGE,
                   "gd_csc_degree_scores: indices[%lld] = %lld is outside [0, %lld): the graph "
                   "is corrupt",
                   (long long)bad, (long long)u, (long long)num_nodes);
    }
    return GD_OK;
fail:
    return st;
}

static int log2_bucket(int64_t d) { return d <= 0 ? 0 : 64 - __builtin_clzll((uint64_t)d); }

/*
 * Degree statistics in O(n) time: one parallel pass for min, max, sum and the log2 histogram,
 * then a counting histogram of the degrees (capped so it stays small; the few larger degrees
 * are sorted) from which the order statistics and the top-1% share are read. Quantiles use the
 * nearest-rank rule: the q-quantile is the degree at 1-based rank ceil(q * n) in ascending order.
 */
#define DEG_HIST_CAP ((int64_t)1 << 20)

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

gd_status gd_csc_degree_stats(int64_t num_nodes, const int64_t *indptr, gd_degree_stats *out) {
    gd_status st = GD_OK;
    int64_t *hist = NULL, *big = NULL;
    GD_REQUIRE(indptr && out, GD_ERR_INVALID_ARG, "gd_csc_degree_stats: NULL argument");
    GD_REQUIRE(num_nodes >= 0, GD_ERR_INVALID_ARG,
               "gd_csc_degree_stats: num_nodes = %lld is negative", (long long)num_nodes);
    GD_REQUIRE(indptr[0] == 0, GD_ERR_FORMAT, "indptr[0] = %lld, expected 0",
               (long long)indptr[0]);
    int threads = gd__num_threads();
    int64_t v = gd__csc_first_descent(indptr, num_nodes, threads);
    GD_REQUIRE(v > num_nodes, GD_ERR_FORMAT,
               "indptr[%lld] = %lld < indptr[%lld] = %lld: not monotone, degrees would be negative",
               (long long)v, (long long)indptr[v], (long long)(v - 1), (long long)indptr[v - 1]);

    gd_degree_stats s;
    memset(&s, 0, sizeof s);
    s.num_nodes = num_nodes;
    s.num_edges = indptr[num_nodes];
    if (num_nodes == 0) {
        *out = s;
        return GD_OK;
    }
    int64_t mn = INT64_MAX, mx = 0, isolated = 0;
    int64_t *lh = s.log2_hist;
#pragma omp parallel for schedule(static) num_threads(threads) reduction(min : mn) \
    reduction(max : mx) reduction(+ : isolated) reduction(+ : lh[:64])
    for (int64_t i = 0; i < num_nodes; i++) {
        int64_t d = indptr[i + 1] - indptr[i];
        if (d < mn) mn = d;
        if (d > mx) mx = d;
        if (d == 0) isolated++;
        lh[log2_bucket(d)]++;
    }
    s.min_degree = mn;
    s.max_degree = mx;
    s.isolated = isolated;
    s.mean_degree = (double)s.num_edges / (double)num_nodes;

    /* Counting histogram of degrees below the cap; the degrees at or above it, sorted. */
    int64_t cap = mx + 1 < DEG_HIST_CAP ? mx + 1 : DEG_HIST_CAP, nbig = 0;
    GD_ALLOC(hist, (size_t)cap * sizeof *hist, "the degree histogram");
    memset(hist, 0, (size_t)cap * sizeof *hist);
    for (int64_t i = 0; i < num_nodes; i++) {
        int64_t d = indptr[i + 1] - indptr[i];
        if (d < cap) hist[d]++;
        else nbig++;
    }
    GD_ALLOC(big, (size_t)(nbig > 0 ? nbig : 1) * sizeof *big, "the high degrees");
    for (int64_t i = 0, j = 0; i < num_nodes && j < nbig; i++) {
        int64_t d = indptr[i + 1] - indptr[i];
        if (d >= cap) big[j++] = d;
    }
    qsort(big, (size_t)nbig, sizeof *big, cmp_i64);

    /* Ranks (0-based, ascending) of the three quantiles. */
    const int pct[3] = {50, 90, 99};
    int64_t rank[3], value[3];
    for (int q = 0; q < 3; q++) {
        rank[q] = (num_nodes * pct[q] + 99) / 100 - 1;
        if (rank[q] < 0) rank[q] = 0;
    }
    int64_t seen = 0;
    int next = 0;
    for (int64_t d = 0; d < cap && next < 3; d++) {
        seen += hist[d];
        while (next < 3 && rank[next] < seen) value[next++] = d;
    }
    for (; next < 3; next++) value[next] = big[rank[next] - seen];
    s.median_degree = value[0];
    s.p90_degree = value[1];
    s.p99_degree = value[2];

    /* Edges into the ceil(n / 100) nodes of highest degree, walking down from the top. */
    int64_t top = (num_nodes + 99) / 100, left = top, top_edges = 0;
    for (int64_t j = nbig - 1; j >= 0 && left > 0; j--, left--) top_edges += big[j];
    for (int64_t d = cap - 1; d >= 0 && left > 0; d--) {
        int64_t take = hist[d] < left ? hist[d] : left;
        top_edges += take * d;
        left -= take;
    }
    s.top1pct_share = s.num_edges > 0 ? (double)top_edges / (double)s.num_edges : 0.0;

    gd_free(hist);
    gd_free(big);
    *out = s;
    return GD_OK;
fail:
    gd_free(hist);
    gd_free(big);
    return st;
}
