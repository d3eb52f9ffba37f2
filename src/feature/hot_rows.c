/*
 * Which rows go into the GPU cache. A score per row ranks them (higher = read more often):
 * the in-degree or out-degree of the node from the CSC graph (gd_csc_degree_scores, in
 * graph/degree.c), or how often pre-sampled minibatches asked for it (gd_access_counts_add,
 * here). gd_hot_rows_select turns scores into a list of rows, hottest first, with ties broken by
 * the lower id so that every run caches the same rows.
 *
 * Selection is a counting sort: scores are degrees or counts, so almost all of them are small
 * integers. Scores below BUCKETS are placed by one histogram pass and one placement pass (ids
 * ascending within a bucket, which is the tie rule for free); the few larger ones (hubs) are
 * sorted with qsort. That is O(rows + BUCKETS + hubs log hubs), a second or so for 111M rows.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#define BUCKETS (1 << 20)
#define GD_REQUIRE_ARG(cond, ...) GD_REQUIRE(cond, GD_ERR_INVALID_ARG, __VA_ARGS__)

gd_status gd_access_counts_add(int64_t *counts, int64_t num_nodes, const int64_t *ids,
                               int64_t n) {
    gd_status st = GD_OK;
    GD_REQUIRE_ARG(num_nodes >= 0 && n >= 0, "gd_access_counts_add: negative %s",
                   num_nodes < 0 ? "node count" : "id count");
    GD_REQUIRE_ARG(n == 0 || (counts && ids), "gd_access_counts_add: NULL %s",
                   counts ? "ids" : "counts");
    /* Reject before counting, so that a bad id leaves the counts as they were. */
    GD_CHECK(gd__gather_check_ids(ids, n, num_nodes));
    for (int64_t i = 0; i < n; i++) counts[ids[i]]++;
    return GD_OK;
fail:
    return st;
}

typedef struct {
    int64_t score, id;
} scored_row;

static int hotter_first(const void *a, const void *b) {
    const scored_row *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

gd_status gd_hot_rows_select(const int64_t *scores, int64_t num_rows, int64_t max_rows,
                             int64_t *rows, int64_t *count) {
    gd_status st = GD_OK;
    int64_t *hist = NULL;
    scored_row *hubs = NULL;
    int64_t k, nhubs = 0, placed = 0;
    GD_REQUIRE(count, GD_ERR_INVALID_ARG, "gd_hot_rows_select: NULL count");
    *count = 0;
    GD_REQUIRE(num_rows >= 0 && max_rows >= 0, GD_ERR_INVALID_ARG,
               "gd_hot_rows_select: negative %s", num_rows < 0 ? "row count" : "max_rows");
    k = max_rows < num_rows ? max_rows : num_rows;
    if (k == 0) return GD_OK;
    GD_REQUIRE(scores && rows, GD_ERR_INVALID_ARG, "gd_hot_rows_select: NULL %s",
               scores ? "rows" : "scores");

    GD_ALLOC(hist, BUCKETS * sizeof *hist, "gd_hot_rows_select: the score histogram");
    memset(hist, 0, BUCKETS * sizeof *hist);
    for (int64_t i = 0; i < num_rows; i++) {
        GD_REQUIRE(scores[i] >= 0, GD_ERR_INVALID_ARG,
                   "gd_hot_rows_select: score[%lld] = %lld is negative: scores are degrees or "
                   "access counts",
                   (long long)i, (long long)scores[i]);
        if (scores[i] < BUCKETS)
            hist[scores[i]]++;
        else
            nhubs++;
    }
    if (nhubs) {
        GD_ALLOC(hubs, (size_t)nhubs * sizeof *hubs, "gd_hot_rows_select: the high scores");
        nhubs = 0;
        for (int64_t i = 0; i < num_rows; i++)
            if (scores[i] >= BUCKETS) hubs[nhubs++] = (scored_row){scores[i], i};
        qsort(hubs, (size_t)nhubs, sizeof *hubs, hotter_first);
        for (; placed < nhubs && placed < k; placed++) rows[placed] = hubs[placed].id;
    }
    /* hist[b] becomes the output position of the next row of score b (hottest first). */
    for (int64_t b = BUCKETS - 1, at = placed; b >= 0; b--) {
        const int64_t c = hist[b];
        hist[b] = at;
        at += c;
    }
    for (int64_t i = 0; i < num_rows; i++) {
        if (scores[i] >= BUCKETS) continue;
        const int64_t at = hist[scores[i]]++;
        if (at < k) rows[at] = i;
    }
    *count = k;
fail:
    gd_free(hist);
    gd_free(hubs);
    return st;
}
