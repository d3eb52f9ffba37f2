/*
 * Hot-row choice for the GPU cache: degree scores from a CSC graph, access counts, and the
 * top-k selection against a plain sort (score descending, id ascending) on fresh random
 * scores, small and huge (the histogram path and the path for scores past its range), with
 * ties, k = 0, k = n, k > n, bad arguments and allocation faults. One budget split over
 * several tables (gd__hot_rows_split, heterogeneous zero-copy's per-type caches) against a
 * plain sort of every table's rows together, filled greedily with each table's map paid at
 * its first row, on fresh random tables, widths and budgets.
 */
#include "feature/internal.h"
#include "test.h"

#include <stdlib.h>

typedef struct {
    int64_t score, id;
} pair;

static int by_score_then_id(const void *a, const void *b) {
    const pair *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static void check_select(uint64_t *state) {
    /* The last rounds have millions of rows: the selection then runs in chunks (one per thread,
     * at least 2^20 rows each), and must still equal one sort, ties by id included. */
    T_OK(gd_param_set("GD_THREADS", "5"));
    for (int round = 0; round < 63; round++) {
        const int64_t n = round == 0 ? 0
                          : round >= 60
                              ? (INT64_C(1) << 20) * (2 + round - 60) + (int64_t)(t_rand(state) % 999)
                              : 1 + (int64_t)(t_rand(state) % 5000);
        int64_t *scores = malloc(sizeof *scores * (size_t)(n + 1));
        pair *ref = malloc(sizeof *ref * (size_t)(n + 1));
        int64_t *rows = malloc(sizeof *rows * (size_t)(n + 1));
        T_ASSERT(scores && ref && rows);
        const int kind = round % 3; /* small scores with many ties, power law, huge values */
        for (int64_t i = 0; i < n; i++) {
            uint64_t r = t_rand(state);
            if (kind == 0)
                scores[i] = (int64_t)(r % 7);
            else if (kind == 1)
                scores[i] = (int64_t)(1000000.0 / (1.0 + (double)(r % 100000))) - 10;
            else
                scores[i] = (int64_t)(r % 3 == 0 ? (r >> 3) % (1ll << 40) : (r >> 5) % 50);
            if (scores[i] < 0) scores[i] = 0;
            ref[i] = (pair){scores[i], i};
        }
        qsort(ref, (size_t)n, sizeof *ref, by_score_then_id);
        const int64_t ks[] = {0, 1, n / 5, n / 2, n, n + 3};
        for (int ki = 0; ki < 6; ki++) {
            const int64_t k = ks[ki];
            int64_t count = -1;
            T_OK(gd_hot_rows_select(scores, n, k, rows, &count));
            T_EQ_INT(count, k < n ? k : n);
            for (int64_t i = 0; i < count; i++)
                if (rows[i] != ref[i].id)
                    T_FAIL_("round %d, k %lld: rows[%lld] = %lld, want %lld (score %lld)", round,
                            (long long)k, (long long)i, (long long)rows[i],
                            (long long)ref[i].id, (long long)ref[i].score);
        }
        free(scores);
        free(ref);
        free(rows);
    }
    T_OK(gd_param_set("GD_THREADS", NULL));
    int64_t s[3] = {4, -1, 2}, rows[3], count = 7;
    T_FAILS(gd_hot_rows_select(s, 3, 2, rows, &count), GD_ERR_INVALID_ARG, "score[1] = -1");
    T_EQ_INT(count, 0);
    T_FAILS(gd_hot_rows_select(s, -1, 2, rows, &count), GD_ERR_INVALID_ARG, "negative");
    T_FAILS(gd_hot_rows_select(NULL, 3, 2, rows, &count), GD_ERR_INVALID_ARG, "scores");
    T_FAILS(gd_hot_rows_select(s, 3, 2, rows, NULL), GD_ERR_INVALID_ARG, "count");
    t_check_no_leaks();
}

static void check_faults(void) {
    int64_t s[4] = {1, 2, 3, 1ll << 33}, rows[4], count;
    for (int64_t k = 1; k <= 2; k++) {
        gd_fault_set(GD_FAULT_ALLOC, k);
        T_FAILS(gd_hot_rows_select(s, 4, 2, rows, &count), GD_ERR_NO_MEMORY, "");
        t_check_no_leaks();
    }
    gd_fault_set(GD_FAULT_ALLOC, 0);
    T_OK(gd_hot_rows_select(s, 4, 2, rows, &count));
    T_EQ_INT(rows[0], 3);
    T_EQ_INT(rows[1], 2);
}

/* A random graph: the degree scores against counting by hand, both index widths. */
static void check_degrees(uint64_t *state) {
    const int64_t nodes = 300, edges = 4000;
    int64_t *src = malloc(sizeof *src * edges), *dst = malloc(sizeof *dst * edges);
    int64_t in[300] = {0}, out[300] = {0}, scores[300];
    T_ASSERT(src && dst);
    for (int64_t e = 0; e < edges; e++) {
        /* Skewed sources so the out-degrees differ from the in-degrees. */
        uint64_t r = t_rand(state);
        src[e] = (int64_t)((r % nodes) * (r % nodes) / nodes);
        dst[e] = (int64_t)(t_rand(state) % nodes);
    }
    for (int wide = 0; wide < 2; wide++) {
        gd_csc_options o = GD_CSC_OPTIONS_INIT;
        int64_t *indptr = NULL, m = 0;
        void *indices = NULL;
        gd_dtype dt;
        o.index_dtype = wide ? GD_DTYPE_INT64 : GD_DTYPE_INT32;
        T_OK(gd_csc_from_coo(nodes, edges, src, dst, &o, &indptr, &indices, &dt, &m));
        memset(in, 0, sizeof in);
        memset(out, 0, sizeof out);
        for (int64_t v = 0; v < nodes; v++)
            for (int64_t e = indptr[v]; e < indptr[v + 1]; e++) {
                int64_t u = wide ? ((int64_t *)indices)[e] : ((int32_t *)indices)[e];
                in[v]++;
                out[u]++;
            }
        T_OK(gd_csc_degree_scores(nodes, indptr, indices, dt, GD_DEGREE_IN, scores));
        for (int64_t v = 0; v < nodes; v++) T_EQ_INT(scores[v], in[v]);
        T_OK(gd_csc_degree_scores(nodes, indptr, indices, dt, GD_DEGREE_OUT, scores));
        for (int64_t v = 0; v < nodes; v++) T_EQ_INT(scores[v], out[v]);
        /* A corrupt index is named. */
        if (wide)
            ((int64_t *)indices)[5] = nodes;
        else
            ((int32_t *)indices)[5] = -3;
        T_FAILS(gd_csc_degree_scores(nodes, indptr, indices, dt, GD_DEGREE_OUT, scores),
                GD_ERR_RANGE, "indices[5]");
        T_FAILS(gd_csc_degree_scores(nodes, indptr, indices, GD_DTYPE_FLOAT32, GD_DEGREE_OUT,
                                     scores),
                GD_ERR_INVALID_ARG, "float32");
        T_FAILS(gd_csc_degree_scores(nodes, indptr, indices, dt, (gd_degree_kind)7, scores),
                GD_ERR_INVALID_ARG, "kind");
        gd_free(indptr);
        gd_free(indices);
    }
    free(src);
    free(dst);
    t_check_no_leaks();
}

static void check_access_counts(uint64_t *state) {
    int64_t counts[50] = {0}, want[50] = {0}, ids[400];
    for (int round = 0; round < 5; round++) {
        for (int i = 0; i < 400; i++) {
            ids[i] = (int64_t)(t_rand(state) % 50);
            want[ids[i]]++;
        }
        T_OK(gd_access_counts_add(counts, 50, ids, 400));
    }
    for (int i = 0; i < 50; i++) T_EQ_INT(counts[i], want[i]);
    ids[17] = 50;
    T_FAILS(gd_access_counts_add(counts, 50, ids, 400), GD_ERR_RANGE, "id 50 at position 17");
    for (int i = 0; i < 50; i++) T_EQ_INT(counts[i], want[i]); /* nothing was counted */
    T_OK(gd_access_counts_add(counts, 50, NULL, 0));
}

typedef struct {
    int64_t score, table, row;
} split_row;

static int split_order(const void *a, const void *b) {
    const split_row *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    if (x->table != y->table) return x->table < y->table ? -1 : 1;
    return x->row < y->row ? -1 : x->row > y->row;
}

static void check_split(uint64_t *state) {
    enum { TABLES = 5 };
    for (int round = 0; round < 200; round++) {
        const int T = 1 + (int)(t_rand(state) % TABLES);
        int64_t rows[TABLES], rb[TABLES], maps[TABLES], counts[TABLES], want[TABLES];
        int64_t *scores[TABLES], *lists[TABLES], total = 0, all_bytes = 0;
        const int64_t *typed[TABLES];
        for (int t = 0; t < T; t++) {
            /* Some tables absent (no rows or no width), scores with many ties. */
            rows[t] = t_rand(state) % 4 == 0 ? 0 : (int64_t)(t_rand(state) % 300);
            rb[t] = t_rand(state) % 6 == 0 ? 0 : 4 * (1 + (int64_t)(t_rand(state) % 64));
            maps[t] = 8 * rows[t];
            scores[t] = malloc((size_t)(rows[t] + 1) * sizeof(int64_t));
            T_ASSERT(scores[t]);
            for (int64_t r = 0; r < rows[t]; r++)
                scores[t][r] = (int64_t)(t_rand(state) % (round % 2 ? 5 : 100000));
            typed[t] = scores[t];
            total += rows[t];
            if (rb[t] > 0) all_bytes += rows[t] * rb[t] + maps[t];
        }
        const int64_t budget =
            round % 10 == 0 ? all_bytes : (int64_t)(t_rand(state) % (uint64_t)(all_bytes + 2));
        /* The reference: every row of every table in one order, taken greedily. */
        split_row *all = malloc((size_t)(total + 1) * sizeof *all);
        T_ASSERT(all);
        int64_t k = 0, used = 0;
        int closed[TABLES] = {0};
        for (int t = 0; t < T; t++) {
            want[t] = 0;
            for (int64_t r = 0; r < rows[t]; r++) all[k++] = (split_row){scores[t][r], t, r};
        }
        qsort(all, (size_t)k, sizeof *all, split_order);
        for (int64_t i = 0; i < k; i++) {
            const int t = (int)all[i].table;
            const int64_t cost = rb[t] + (want[t] ? 0 : maps[t]);
            if (rb[t] == 0 || closed[t]) continue;
            if (cost > budget - used) {
                closed[t] = 1;
                continue;
            }
            used += cost;
            want[t]++;
        }
        T_OK(gd__hot_rows_split(T, typed, rows, rb, maps, budget, lists, counts));
        for (int t = 0; t < T; t++) {
            T_EQ_INT(counts[t], want[t]);
            T_ASSERT((lists[t] != NULL) == (counts[t] > 0));
            /* Each table's rows in the order of the reference. */
            int64_t at = 0;
            for (int64_t i = 0; i < k && at < counts[t]; i++)
                if (all[i].table == t) T_EQ_INT(lists[t][at++], all[i].row);
            gd_free(lists[t]);
        }
        if (round % 10 == 0)
            for (int t = 0; t < T; t++) T_EQ_INT(counts[t], rb[t] > 0 ? rows[t] : 0);
        T_OK(gd__hot_rows_split(T, typed, rows, rb, maps, budget, NULL, counts));
        for (int t = 0; t < T; t++) T_EQ_INT(counts[t], want[t]);
        for (int t = 0; t < T; t++) free(scores[t]);
        free(all);
    }
    int64_t one = 1;
    const int64_t *none[1] = {&one};
    int64_t c[1];
    T_FAILS(gd__hot_rows_split(GD_MAX_NODE_TYPES + 1, none, &one, &one, &one, 10, NULL, c),
            GD_ERR_INVALID_ARG, "tables");
    t_check_no_leaks();
}

int main(void) {
    uint64_t state = t_seed();
    check_split(&state);
    check_select(&state);
    check_faults();
    check_degrees(&state);
    check_access_counts(&state);
    return 0;
}
