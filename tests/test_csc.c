/*
 * CSC build from COO, validation and degree statistics. Fresh random edge lists (duplicates,
 * self-loops, isolated nodes, a hub with a long list of repeated neighbours) are built with every
 * option and thread count and compared with a plain reference: sort (dst, src) pairs, drop
 * repeats. Corrupted graphs must be rejected with messages naming the position and value.
 *
 * GD_BENCH_CSC=<edges> (and optionally GD_BENCH_CSC_NODES=<nodes>, default 2,450,000, the
 * ogbn-products shape) instead times one large random build and prints edges/s.
 */
#include "test.h"

typedef struct {
    int64_t n, e;
    int64_t *src, *dst;
} coo;

typedef struct {
    int64_t *indptr;
    int64_t *indices;
    int64_t m;
} ref_csc;

static int cmp_pair(const void *a, const void *b) {
    const int64_t *x = a, *y = b;
    if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
    return (x[1] > y[1]) - (x[1] < y[1]);
}

/* The reference: every edge (and its reverse) as a (dst, src) pair, sorted, repeats dropped. */
static ref_csc reference(const coo *g, int symmetrize, int drop_loops) {
    int64_t *pairs = malloc(sizeof(int64_t) * 4 * (size_t)(g->e + 1));
    int64_t np = 0;
    for (int64_t i = 0; i < g->e; i++) {
        int64_t s = g->src[i], d = g->dst[i];
        if (s == d && drop_loops) continue;
        pairs[2 * np] = d, pairs[2 * np + 1] = s, np++;
        if (symmetrize) pairs[2 * np] = s, pairs[2 * np + 1] = d, np++;
    }
    qsort(pairs, (size_t)np, 2 * sizeof(int64_t), cmp_pair);
    ref_csc r;
    r.indptr = calloc((size_t)g->n + 1, sizeof(int64_t));
    r.indices = malloc(sizeof(int64_t) * (size_t)(np + 1));
    r.m = 0;
    for (int64_t i = 0; i < np; i++) {
        if (i > 0 && pairs[2 * i] == pairs[2 * i - 2] && pairs[2 * i + 1] == pairs[2 * i - 1])
            continue;
        r.indices[r.m++] = pairs[2 * i + 1];
        r.indptr[pairs[2 * i] + 1]++;
    }
    for (int64_t v = 0; v < g->n; v++) r.indptr[v + 1] += r.indptr[v];
    free(pairs);
    return r;
}

/* A random graph with the awkward cases: repeated edges, self-loops, nodes with no edges (ids
 * drawn from the lower part of the range only, mostly) and a hub whose list is long enough for
 * the introsort path and full of repeats. */
static coo random_coo(uint64_t *rng) {
    coo g;
    g.n = 1 + (int64_t)(t_rand(rng) % 3000);
    int64_t base = (int64_t)(t_rand(rng) % 20000);
    int64_t hub_edges = (int64_t)(t_rand(rng) % 6000);
    g.e = base + hub_edges;
    g.src = malloc(sizeof(int64_t) * (size_t)(g.e + 1));
    g.dst = malloc(sizeof(int64_t) * (size_t)(g.e + 1));
    int64_t used = g.n > 10 ? g.n * 9 / 10 : g.n; /* the top tenth stays isolated */
    int64_t hub = (int64_t)(t_rand(rng) % (uint64_t)g.n);
    for (int64_t i = 0; i < g.e; i++) {
        uint64_t r = t_rand(rng);
        if (i >= base) {
            /* hub: few distinct sources, so most of its list is repeats */
            g.src[i] = (int64_t)(r % (uint64_t)(g.n < 50 ? g.n : 50)) * (g.n / 50 + 1) % g.n;
            g.dst[i] = hub;
        } else if (i > 0 && r % 10 == 0) { /* repeat an earlier edge */
            int64_t j = (int64_t)((r >> 8) % (uint64_t)i);
            g.src[i] = g.src[j], g.dst[i] = g.dst[j];
        } else if (r % 10 == 1) { /* self-loop */
            g.src[i] = g.dst[i] = (int64_t)((r >> 8) % (uint64_t)used);
        } else {
            g.src[i] = (int64_t)((r >> 8) % (uint64_t)used);
            g.dst[i] = (int64_t)((r >> 36) % (uint64_t)used);
        }
    }
    /* shuffle so the hub's edges are spread out */
    for (int64_t i = g.e - 1; i > 0; i--) {
        int64_t j = (int64_t)(t_rand(rng) % (uint64_t)(i + 1));
        int64_t t = g.src[i];
        g.src[i] = g.src[j], g.src[j] = t;
        t = g.dst[i];
        g.dst[i] = g.dst[j], g.dst[j] = t;
    }
    return g;
}

static int64_t index_at(const void *idx, gd_dtype dt, int64_t i) {
    return dt == GD_DTYPE_INT32 ? ((const int32_t *)idx)[i] : ((const int64_t *)idx)[i];
}

static void check_against_reference(const coo *g, int sym, int loops, gd_dtype want) {
    gd_csc_options o = GD_CSC_OPTIONS_INIT;
    o.symmetrize = sym;
    o.remove_self_loops = loops;
    o.index_dtype = want;
    int64_t *indptr, m;
    void *idx;
    gd_dtype dt;
    T_OK(gd_csc_from_coo(g->n, g->e, g->src, g->dst, &o, &indptr, &idx, &dt, &m));
    T_EQ_INT(dt, want == GD_DTYPE_INVALID ? GD_DTYPE_INT32 : want);
    ref_csc r = reference(g, sym, loops);
    T_EQ_INT(m, r.m);
    for (int64_t v = 0; v <= g->n; v++)
        if (indptr[v] != r.indptr[v]) T_EQ_INT(indptr[v], r.indptr[v]);
    for (int64_t i = 0; i < m; i++)
        if (index_at(idx, dt, i) != r.indices[i]) T_EQ_INT(index_at(idx, dt, i), r.indices[i]);
    T_OK(gd_csc_validate(g->n, indptr, idx, dt, m));
    free(r.indptr);
    free(r.indices);
    gd_free(indptr);
    gd_free(idx);
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Degree statistics computed the slow way: sort all degrees. */
static void check_degree_stats(int64_t n, const int64_t *indptr) {
    gd_degree_stats s;
    T_OK(gd_csc_degree_stats(n, indptr, &s));
    T_EQ_INT(s.num_nodes, n);
    T_EQ_INT(s.num_edges, indptr[n]);
    if (n == 0) return;
    int64_t *deg = malloc(sizeof(int64_t) * (size_t)n);
    int64_t hist[64] = {0}, isolated = 0;
    for (int64_t v = 0; v < n; v++) {
        deg[v] = indptr[v + 1] - indptr[v];
        int b = 0;
        while (b < 63 && ((int64_t)1 << b) <= deg[v]) b++;
        hist[b]++;
        isolated += deg[v] == 0;
    }
    qsort(deg, (size_t)n, sizeof *deg, cmp_i64);
    T_EQ_INT(s.min_degree, deg[0]);
    T_EQ_INT(s.max_degree, deg[n - 1]);
    T_NEAR(s.mean_degree, (double)indptr[n] / (double)n, 1e-9);
    /* nearest rank: 1-based rank ceil(q n) */
    T_EQ_INT(s.median_degree, deg[(int64_t)ceil(0.5 * (double)n - 1e-9) - 1]);
    T_EQ_INT(s.p90_degree, deg[(int64_t)ceil(0.9 * (double)n - 1e-9) - 1]);
    T_EQ_INT(s.p99_degree, deg[(int64_t)ceil(0.99 * (double)n - 1e-9) - 1]);
    T_EQ_INT(s.isolated, isolated);
    for (int b = 0; b < 64; b++) T_EQ_INT(s.log2_hist[b], hist[b]);
    int64_t top = (n + 99) / 100, top_edges = 0;
    for (int64_t i = 0; i < top; i++) top_edges += deg[n - 1 - i];
    T_NEAR(s.top1pct_share, indptr[n] ? (double)top_edges / (double)indptr[n] : 0.0, 1e-12);
    free(deg);
}

static int stop_at_sort(void *user, const char *stage, uint64_t done, uint64_t total) {
    int *calls = user;
    (*calls)++;
    T_ASSERT(total == 0 || done <= total);
    return strcmp(stage, "csc: sort") == 0;
}

static void check_validation(uint64_t *rng) {
    /* a small graph we can corrupt by hand */
    coo g = random_coo(rng);
    while (g.e < 100 || g.n < 10) {
        free(g.src);
        free(g.dst);
        g = random_coo(rng);
    }
    int64_t *indptr, m;
    void *idx;
    gd_dtype dt;
    gd_csc_options o = GD_CSC_OPTIONS_INIT;
    o.index_dtype = GD_DTYPE_INT64;
    T_OK(gd_csc_from_coo(g.n, g.e, g.src, g.dst, &o, &indptr, &idx, &dt, &m));
    int64_t *ix = idx;
    char wbuf[256];
    const char *want = wbuf; /* a pointer: T_FAILS tests it for NULL */

    /* an index out of range, at a random position, then a negative one */
    int64_t pos = (int64_t)(t_rand(rng) % (uint64_t)m), keep = ix[pos];
    ix[pos] = g.n + 7;
    snprintf(wbuf, sizeof wbuf, "indices[%lld] = %lld is outside [0, %lld)", (long long)pos,
             (long long)(g.n + 7), (long long)g.n);
    T_FAILS(gd_csc_validate(g.n, indptr, idx, dt, m), GD_ERR_FORMAT, want);
    ix[pos] = -1;
    snprintf(wbuf, sizeof wbuf, "indices[%lld] = -1 is outside", (long long)pos);
    T_FAILS(gd_csc_validate(g.n, indptr, idx, dt, m), GD_ERR_FORMAT, want);
    ix[pos] = keep;
    T_OK(gd_csc_validate(g.n, indptr, idx, dt, m));

    /* indptr not monotone at a node with a non-empty list */
    int64_t v = 1 + (int64_t)(t_rand(rng) % (uint64_t)g.n);
    while (indptr[v] == indptr[v - 1] && v < g.n) v++;
    if (indptr[v] > indptr[v - 1]) {
        int64_t old = indptr[v - 1];
        indptr[v - 1] = indptr[v] + 2;
        snprintf(wbuf, sizeof wbuf, "indptr[%lld] = %lld < indptr[%lld] = %lld: not monotone",
                 (long long)v, (long long)indptr[v], (long long)(v - 1),
                 (long long)indptr[v - 1]);
        if (v - 1 == 0) snprintf(wbuf, sizeof wbuf, "indptr[0] = %lld", (long long)indptr[0]);
        T_FAILS(gd_csc_validate(g.n, indptr, idx, dt, m), GD_ERR_FORMAT, want);
        indptr[v - 1] = old;
    }
    /* indptr[0] != 0 */
    indptr[0] = 1;
    T_FAILS(gd_csc_validate(g.n, indptr, idx, dt, m), GD_ERR_FORMAT, "indptr[0] = 1, expected 0");
    indptr[0] = 0;
    /* sizes that do not match */
    snprintf(wbuf, sizeof wbuf, "indptr[%lld] = %lld but indices holds %lld entries",
             (long long)g.n, (long long)m, (long long)(m + 1));
    T_FAILS(gd_csc_validate(g.n, indptr, idx, dt, m + 1), GD_ERR_FORMAT, want);
    /* wrong index dtypes */
    T_FAILS(gd_csc_validate(g.n, indptr, idx, GD_DTYPE_FLOAT32, m), GD_ERR_FORMAT, "float32");
    T_FAILS(gd_csc_validate(g.n, NULL, idx, dt, m), GD_ERR_INVALID_ARG, "indptr");
    T_FAILS(gd_csc_validate(((int64_t)1 << 32), indptr, idx, GD_DTYPE_INT32, m), GD_ERR_FORMAT,
            "int32");
    T_OK(gd_csc_validate(g.n, indptr, idx, dt, m));

    /* degree stats refuse a broken indptr too */
    indptr[0] = 3;
    T_FAILS(gd_csc_degree_stats(g.n, indptr, &(gd_degree_stats){0}), GD_ERR_FORMAT, "indptr[0]");
    indptr[0] = 0;

    /* int32 indices: a corrupted entry is found there as well */
    gd_free(indptr);
    gd_free(idx);
    T_OK(gd_csc_from_coo(g.n, g.e, g.src, g.dst, NULL, &indptr, &idx, &dt, &m));
    T_EQ_INT(dt, GD_DTYPE_INT32);
    ((int32_t *)idx)[m - 1] = (int32_t)g.n;
    snprintf(wbuf, sizeof wbuf, "indices[%lld] = %lld is outside [0, %lld) (in the list of node",
             (long long)(m - 1), (long long)g.n, (long long)g.n);
    T_FAILS(gd_csc_validate(g.n, indptr, idx, dt, m), GD_ERR_FORMAT, want);
    gd_free(indptr);
    gd_free(idx);

    /* bad COO input: the first bad edge is named with its value */
    int64_t bad = (int64_t)(t_rand(rng) % (uint64_t)g.e), old_src = g.src[bad];
    g.src[bad] = -3;
    snprintf(wbuf, sizeof wbuf, "edge %lld (-3 -> %lld): src = -3 is outside [0, %lld)",
             (long long)bad, (long long)g.dst[bad], (long long)g.n);
    T_FAILS(gd_csc_from_coo(g.n, g.e, g.src, g.dst, NULL, &indptr, &idx, &dt, &m), GD_ERR_RANGE,
            want);
    g.src[bad] = old_src;
    g.dst[g.e - 1] = g.n;
    snprintf(wbuf, sizeof wbuf, "edge %lld (%lld -> %lld): dst = %lld is outside",
             (long long)(g.e - 1), (long long)g.src[g.e - 1], (long long)g.n, (long long)g.n);
    T_FAILS(gd_csc_from_coo(g.n, g.e, g.src, g.dst, NULL, &indptr, &idx, &dt, &m), GD_ERR_RANGE,
            want);
    T_FAILS(gd_csc_from_coo(-1, 0, NULL, NULL, NULL, &indptr, &idx, &dt, &m), GD_ERR_INVALID_ARG,
            "num_nodes = -1");
    o.index_dtype = GD_DTYPE_INT32;
    T_FAILS(gd_csc_from_coo((int64_t)1 << 32, 0, NULL, NULL, &o, &indptr, &idx, &dt, &m),
            GD_ERR_RANGE, "int32");
    o.index_dtype = GD_DTYPE_FLOAT16;
    T_FAILS(gd_csc_from_coo(5, 0, NULL, NULL, &o, &indptr, &idx, &dt, &m), GD_ERR_INVALID_ARG,
            "float16");
    o.index_dtype = GD_DTYPE_INVALID;
    o.size = 3;
    T_FAILS(gd_csc_from_coo(5, 0, NULL, NULL, &o, &indptr, &idx, &dt, &m), GD_ERR_INVALID_ARG,
            "GD_CSC_OPTIONS_INIT");
    T_FAILS(gd_csc_from_coo(((int64_t)1 << 62), 5, g.src, g.dst, NULL, &indptr, &idx, &dt, &m),
            GD_ERR_OVERFLOW, "overflow");
    free(g.src);
    free(g.dst);
}

static void check_faults_and_progress(uint64_t *rng) {
    coo g = random_coo(rng);
    int64_t *indptr, m;
    void *idx;
    gd_dtype dt;
    gd_csc_options o = GD_CSC_OPTIONS_INIT;
    o.symmetrize = 1;
    int calls = 0;
    o.progress = stop_at_sort;
    o.progress_user = &calls;
    T_FAILS(gd_csc_from_coo(g.n, g.e, g.src, g.dst, &o, &indptr, &idx, &dt, &m),
            GD_ERR_INTERRUPTED, "csc: sort");
    T_ASSERT(calls >= 3 && indptr == NULL && idx == NULL);
    t_check_no_leaks();
    o.progress = NULL;

    /* walk an allocation failure over every allocation of the build */
    gd_fault_set(GD_FAULT_ALLOC, 0);
    T_OK(gd_csc_from_coo(g.n, g.e, g.src, g.dst, &o, &indptr, &idx, &dt, &m));
    int64_t n_alloc = gd_fault_calls(GD_FAULT_ALLOC);
    gd_free(indptr);
    gd_free(idx);
    T_ASSERT(n_alloc >= 5);
    for (int64_t k = 1; k <= n_alloc; k++) {
        gd_fault_set(GD_FAULT_ALLOC, k);
        gd_status s = gd_csc_from_coo(g.n, g.e, g.src, g.dst, &o, &indptr, &idx, &dt, &m);
        gd_fault_set(GD_FAULT_ALLOC, 0);
        if (s == GD_OK) { /* only the final shrinking may fail harmlessly */
            T_OK(gd_csc_validate(g.n, indptr, idx, dt, m));
            gd_free(indptr);
            gd_free(idx);
        } else {
            T_EQ_INT(s, GD_ERR_NO_MEMORY);
            T_ASSERT(strstr(gd_last_error(), "out of memory"));
        }
        t_check_no_leaks();
    }
    free(g.src);
    free(g.dst);
}

static void bench(int64_t edges) {
    const char *ns = getenv("GD_BENCH_CSC_NODES");
    int64_t n = ns ? strtoll(ns, NULL, 10) : 2450000;
    uint64_t rng = 12345;
    int64_t *src = malloc(sizeof(int64_t) * (size_t)edges);
    int64_t *dst = malloc(sizeof(int64_t) * (size_t)edges);
    T_ASSERT(src && dst);
    for (int64_t i = 0; i < edges; i++) {
        uint64_t r = t_rand(&rng);
        /* skewed sources and destinations: squaring a uniform gives a heavy head */
        double a = (double)(r >> 40) / (double)(1 << 24), b = (double)(r & 0xffffff) / 16777216.0;
        if (getenv("GD_BENCH_CSC_UNIFORM")) {
            src[i] = (int64_t)(a * (double)n);
            dst[i] = (int64_t)(b * (double)n);
        } else {
            src[i] = (int64_t)(a * a * (double)n);
            dst[i] = (int64_t)(b * b * (double)n);
        }
    }
    for (int sym = 0; sym <= 1; sym++) {
        gd_csc_options o = GD_CSC_OPTIONS_INIT;
        o.symmetrize = sym;
        int64_t *indptr, m;
        void *idx;
        gd_dtype dt;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        T_OK(gd_csc_from_coo(n, edges, src, dst, &o, &indptr, &idx, &dt, &m));
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        const char *th = getenv("GD_THREADS");
        printf("csc bench: %lld nodes, %lld edges, symmetrize %d -> %lld CSC edges (%s): %.3f s, "
               "%.1f M input edges/s (GD_THREADS=%s)\n",
               (long long)n, (long long)edges, sym, (long long)m, gd_dtype_name(dt), s,
               (double)edges / s / 1e6, th ? th : "all");
        clock_gettime(CLOCK_MONOTONIC, &t0);
        T_OK(gd_csc_validate(n, indptr, idx, dt, m));
        clock_gettime(CLOCK_MONOTONIC, &t1);
        s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        printf("csc bench: validate %.3f s\n", s);
        gd_free(indptr);
        gd_free(idx);
    }
    free(src);
    free(dst);
}

int main(void) {
    const char *b = getenv("GD_BENCH_CSC");
    if (b) {
        bench(strtoll(b, NULL, 10));
        return 0;
    }
    uint64_t rng = t_seed();
    const char *threads[2] = {"1", "2"};
    for (int round = 0; round < 6; round++) {
        coo g = random_coo(&rng);
        T_OK(gd_param_set("GD_THREADS", threads[round % 2]));
        gd_dtype dts[3] = {GD_DTYPE_INVALID, GD_DTYPE_INT32, GD_DTYPE_INT64};
        for (int sym = 0; sym <= 1; sym++)
            for (int loops = 0; loops <= 1; loops++)
                for (int d = 0; d < 3; d++) check_against_reference(&g, sym, loops, dts[d]);
        int64_t *indptr, m;
        void *idx;
        gd_dtype dt;
        T_OK(gd_csc_from_coo(g.n, g.e, g.src, g.dst, NULL, &indptr, &idx, &dt, &m));
        check_degree_stats(g.n, indptr);
        gd_free(indptr);
        gd_free(idx);
        free(g.src);
        free(g.dst);
    }
    T_OK(gd_param_set("GD_THREADS", "2"));

    /* edge cases: no nodes, no edges, a single self-loop, one list of identical entries */
    int64_t *indptr, m;
    void *idx;
    gd_dtype dt;
    T_OK(gd_csc_from_coo(0, 0, NULL, NULL, NULL, &indptr, &idx, &dt, &m));
    T_EQ_INT(m, 0);
    T_EQ_INT(indptr[0], 0);
    check_degree_stats(0, indptr);
    gd_free(indptr);
    gd_free(idx);
    T_OK(gd_csc_from_coo(4, 0, NULL, NULL, NULL, &indptr, &idx, &dt, &m));
    T_EQ_INT(m, 0);
    T_EQ_INT(indptr[4], 0);
    check_degree_stats(4, indptr);
    gd_free(indptr);
    gd_free(idx);
    {
        int64_t s1[1] = {2}, d1[1] = {2};
        gd_csc_options o = GD_CSC_OPTIONS_INIT;
        o.symmetrize = 1;
        T_OK(gd_csc_from_coo(3, 1, s1, d1, &o, &indptr, &idx, &dt, &m));
        T_EQ_INT(m, 1); /* a self-loop is added once, not twice, by symmetrize */
        T_EQ_INT(((int32_t *)idx)[0], 2);
        gd_free(indptr);
        gd_free(idx);
        o.remove_self_loops = 1;
        T_OK(gd_csc_from_coo(3, 1, s1, d1, &o, &indptr, &idx, &dt, &m));
        T_EQ_INT(m, 0);
        gd_free(indptr);
        gd_free(idx);
    }
    {
        enum { N = 5000 };
        coo g = {3, N, malloc(sizeof(int64_t) * N), malloc(sizeof(int64_t) * N)};
        for (int i = 0; i < N; i++) g.src[i] = i % 7 == 0 ? 0 : 1, g.dst[i] = 2;
        check_against_reference(&g, 0, 0, GD_DTYPE_INT32);
        check_against_reference(&g, 1, 1, GD_DTYPE_INT64);
        /* an already sorted and a reverse sorted long list */
        free(g.src);
        free(g.dst);
        g.n = N + 1;
        g.src = malloc(sizeof(int64_t) * N);
        g.dst = malloc(sizeof(int64_t) * N);
        for (int i = 0; i < N; i++) g.src[i] = i, g.dst[i] = N;
        check_against_reference(&g, 0, 0, GD_DTYPE_INT32);
        for (int i = 0; i < N; i++) g.src[i] = N - 1 - i;
        check_against_reference(&g, 1, 0, GD_DTYPE_INT32);
        free(g.src);
        free(g.dst);
    }

    check_validation(&rng);
    check_faults_and_progress(&rng);
    T_OK(gd_param_set("GD_THREADS", NULL));
    t_check_no_leaks();
    printf("csc ok\n");
    return 0;
}
