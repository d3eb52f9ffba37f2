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

/*
 * The counting sort runs on chunks of rows in parallel: each chunk counts its scores into its own
 * histogram, the positions are laid out bucket by bucket (hottest first) and chunk by chunk
 * within a bucket, so that ids stay ascending within a score, as one pass would leave them, and
 * each chunk places its rows. On papers' 111M rows one pass took about 2 s, twice per trainer
 * build (the neighbour lists' ranking and the feature cache's).
 */
#define MAX_CHUNKS 32
#define MIN_CHUNK_ROWS (1 << 20)

gd_status gd_hot_rows_select(const int64_t *scores, int64_t num_rows, int64_t max_rows,
                             int64_t *rows, int64_t *count) {
    gd_status st = GD_OK;
    int64_t *hist = NULL;
    scored_row *hubs = NULL;
    int64_t k, nhubs = 0, placed = 0;
    int64_t bad[MAX_CHUNKS], chunk_hubs[MAX_CHUNKS + 1];
    GD_REQUIRE(count, GD_ERR_INVALID_ARG, "gd_hot_rows_select: NULL count");
    *count = 0;
    GD_REQUIRE(num_rows >= 0 && max_rows >= 0, GD_ERR_INVALID_ARG,
               "gd_hot_rows_select: negative %s", num_rows < 0 ? "row count" : "max_rows");
    k = max_rows < num_rows ? max_rows : num_rows;
    if (k == 0) return GD_OK;
    GD_REQUIRE(scores && rows, GD_ERR_INVALID_ARG, "gd_hot_rows_select: NULL %s",
               scores ? "rows" : "scores");

    int chunks = gd__num_threads();
    if (chunks > MAX_CHUNKS) chunks = MAX_CHUNKS;
    if ((int64_t)chunks * MIN_CHUNK_ROWS > num_rows)
        chunks = (int)(num_rows / MIN_CHUNK_ROWS > 0 ? num_rows / MIN_CHUNK_ROWS : 1);
    const int64_t per = (num_rows + chunks - 1) / chunks;
    GD_ALLOC(hist, (size_t)chunks * BUCKETS * sizeof *hist, "gd_hot_rows_select: the histograms");
#pragma omp parallel for schedule(static, 1) num_threads(chunks)
    for (int c = 0; c < chunks; c++) {
        int64_t *h = hist + (size_t)c * BUCKETS, hubs_here = 0;
        const int64_t lo = c * per, hi = lo + per < num_rows ? lo + per : num_rows;
        memset(h, 0, BUCKETS * sizeof *h);
        bad[c] = -1;
        for (int64_t i = lo; i < hi; i++) {
            const int64_t v = scores[i];
            if (v < 0) {
                if (bad[c] < 0) bad[c] = i;
            } else if (v < BUCKETS) {
                h[v]++;
            } else {
                hubs_here++;
            }
        }
        chunk_hubs[c + 1] = hubs_here;
    }
    for (int c = 0; c < chunks; c++)
        GD_REQUIRE(bad[c] < 0, GD_ERR_INVALID_ARG,
                   "gd_hot_rows_select: score[%lld] = %lld is negative: scores are degrees or "
                   "access counts",
                   (long long)bad[c], (long long)scores[bad[c]]);
    chunk_hubs[0] = 0;
    for (int c = 0; c < chunks; c++) chunk_hubs[c + 1] += chunk_hubs[c];
    nhubs = chunk_hubs[chunks];
    if (nhubs) {
        GD_ALLOC(hubs, (size_t)nhubs * sizeof *hubs, "gd_hot_rows_select: the high scores");
#pragma omp parallel for schedule(static, 1) num_threads(chunks)
        for (int c = 0; c < chunks; c++) {
            const int64_t lo = c * per, hi = lo + per < num_rows ? lo + per : num_rows;
            int64_t at = chunk_hubs[c];
            for (int64_t i = lo; i < hi; i++)
                if (scores[i] >= BUCKETS) hubs[at++] = (scored_row){scores[i], i};
        }
        qsort(hubs, (size_t)nhubs, sizeof *hubs, hotter_first);
        for (; placed < nhubs && placed < k; placed++) rows[placed] = hubs[placed].id;
    }
    /* hist[c][b] becomes the output position of chunk c's next row of score b (hottest first,
     * then chunk by chunk: ids ascending within a score). */
    for (int64_t b = BUCKETS - 1, at = placed; b >= 0; b--)
        for (int c = 0; c < chunks; c++) {
            int64_t *h = hist + (size_t)c * BUCKETS + b;
            const int64_t n = *h;
            *h = at;
            at += n;
        }
#pragma omp parallel for schedule(static, 1) num_threads(chunks)
    for (int c = 0; c < chunks; c++) {
        int64_t *h = hist + (size_t)c * BUCKETS;
        const int64_t lo = c * per, hi = lo + per < num_rows ? lo + per : num_rows;
        for (int64_t i = lo; i < hi; i++) {
            if (scores[i] >= BUCKETS) continue;
            const int64_t at = h[scores[i]]++;
            if (at < k) rows[at] = i;
        }
    }
    *count = k;
fail:
    gd_free(hist);
    gd_free(hubs);
    return st;
}

/*
 * One budget over several tables (heterogeneous zero-copy: one feature table per node type).
 * Caching a row saves its reads times its bytes of PCIe traffic and costs its bytes of GPU
 * memory, so the saving per cached byte is the row's read count whatever its width: one ranking
 * of every table's rows by score, filled in that order while the budget lasts, saves the most.
 * Each table's candidates are its hottest rows (gd_hot_rows_select, at most what the budget
 * could hold of them); a T-way merge takes the hottest head, ties to the lower table (node types
 * own ascending id ranges, so that is the lower global id). A table's first row also pays for
 * its location map; a row that does not fit closes its table, whose later rows are as wide.
 */
gd_status gd__hot_rows_split(int T, const int64_t *const *scores, const int64_t *rows,
                             const int64_t *row_bytes, const int64_t *map_bytes, int64_t budget,
                             int64_t **lists, int64_t *counts) {
    gd_status st = GD_OK;
    int64_t *cand[GD_MAX_NODE_TYPES] = {NULL}, have[GD_MAX_NODE_TYPES] = {0};
    int64_t pos[GD_MAX_NODE_TYPES] = {0}, used = 0;
    int open[GD_MAX_NODE_TYPES] = {0}, closed[GD_MAX_NODE_TYPES] = {0};
    /* Refused before anything is set: the cleanup below walks T tables. */
    if (!(T >= 0 && T <= GD_MAX_NODE_TYPES && counts && scores && rows && row_bytes && map_bytes))
        return gd__error(GD_ERR_INVALID_ARG,
                         "gd__hot_rows_split: %d tables (at most %d) or a NULL array", T,
                         GD_MAX_NODE_TYPES);
    for (int t = 0; t < T; t++) {
        counts[t] = 0;
        if (lists) lists[t] = NULL;
    }
    for (int t = 0; t < T; t++) {
        const int64_t room = budget - map_bytes[t];
        if (rows[t] <= 0 || row_bytes[t] <= 0 || room < row_bytes[t]) continue;
        const int64_t most = gd__min64(rows[t], room / row_bytes[t]);
        GD_ALLOC(cand[t], (size_t)most * sizeof(int64_t), "the hottest rows of a node type");
        GD_CHECK(gd_hot_rows_select(scores[t], rows[t], most, cand[t], &have[t]));
    }
    for (;;) {
        int best = -1;
        for (int t = 0; t < T; t++) {
            if (closed[t] || pos[t] >= have[t]) continue;
            if (best < 0 || scores[t][cand[t][pos[t]]] > scores[best][cand[best][pos[best]]])
                best = t;
        }
        if (best < 0) break;
        const int64_t cost = row_bytes[best] + (open[best] ? 0 : map_bytes[best]);
        if (cost > budget - used) {
            closed[best] = 1;
            continue;
        }
        used += cost;
        open[best] = 1;
        pos[best]++;
    }
    for (int t = 0; t < T; t++) {
        counts[t] = pos[t];
        if (lists && pos[t] > 0) {
            lists[t] = cand[t];
            cand[t] = NULL;
        }
    }
fail:
    for (int t = 0; t < T; t++) gd_free(cand[t]);
    if (st != GD_OK && lists)
        for (int t = 0; t < T; t++) {
            gd_free(lists[t]);
            lists[t] = NULL;
        }
    return st;
}
