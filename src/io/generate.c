/*
 * The synthetic dataset generator behind `graphdirect generate`. It builds a complete dataset
 * (CSC graph, features, labels, splits) whose shape matches real node-classification graphs, so
 * that every later stage of the data path (hot-row caching, sampling, gathering, training) can
 * be exercised and benchmarked at any scale, from a 10K-node test graph to the shape of
 * ogbn-papers100M, without downloading anything.
 *
 * What the data looks like, and why:
 *   - Communities are the labels. Each node draws its community uniformly from num_classes.
 *   - In-degrees follow a discrete Lomax (shifted Pareto) law, d = 1 + floor(s (u^(-1/a) - 1)),
 *     a = 1.5 (density tail exponent 2.5, as in web and co-purchase graphs), capped at
 *     num_nodes / (2 num_classes) (and 2^22) so that a list never needs more than half a
 *     community.
 *     Every node has at least one in-neighbour. The scale s is found by bisection on the exact
 *     mean of the capped law (a finite sum, no sampling), so the average degree matches the
 *     request in expectation and the calibration is deterministic.
 *   - A fraction p_in of v's in-neighbours (d_v p_in, randomly rounded) comes from v's own
 *     community (homophily); the rest comes from the community of a uniformly drawn node, so
 *     communities are hit in proportion to their size. The two parts are drawn and
 *     deduplicated separately: collisions are more frequent among the concentrated in-community
 *     picks, and redrawing a mixed list would drift below p_in. Within the chosen community
 *     the source is picked by a skewed rank over the members sorted by in-degree (descending,
 *     ties by id): rank = floor(S u^g). The pick probability of rank fraction q is then
 *     proportional to q^(1/g - 1), and the in-degree at rank fraction q is proportional to
 *     q^(-1/a); with g = a / (a - 1) = 3 the expected out-degree is proportional to the
 *     in-degree. Real graphs such as ogbn-products are undirected, so a node sampled often as
 *     a neighbour also has many neighbours; the hot-row cache, which ranks rows by in-degree,
 *     relies on that. The measured edge homophily is p_in + (1 - p_in) sum_c (|c| / N)^2.
 *   - Features are x_v = mu_c(v) + noise * N(0, I), with class centroids mu_c ~ N(0, I). The
 *     noise is set per preset so that a linear classifier on x alone is mediocre, while the
 *     mean of x over a node and its in-neighbours (mostly of the same class) is far better: the
 *     graph must help, as it does on the real datasets. When the feature dimension is
 *     overridden the noise scales with sqrt(dim), which keeps the class separation (and so the
 *     accuracy without the graph) about the same.
 *   - Labels are the communities, for every node. Each node draws its split: tiny and small
 *     use 60/20/20 % train/valid/test; products uses ogbn-products' fractions (8.03/1.61/90.37);
 *     papers uses ogbn-papers100M's (1.09/0.11/0.19 %), the other 98.6 % being in no split
 *     (they keep their label, which training and evaluation never read).
 *
 * How it is built. The CSC is produced directly, never through a COO edge list, so papers
 * (1.6 billion edges) needs only its output arrays plus O(num_nodes) of scratch: degrees are
 * drawn into indptr, summed in place, communities are ordered by a counting sort (the member
 * lists, one int64 per node), and then every node's list is filled in parallel straight into
 * the indices array, which is either heap memory or a writable mapping of the .npy file being
 * built (gd__dataset_alloc). Features are written the same way, row by row. No array exists
 * twice. Each list is sorted, without duplicates or self-loops: collisions are redrawn for a
 * few rounds, and a list still short after that (only hubs whose degree is a large part of
 * their community) is completed by a walk over the community, then over all nodes, from a
 * random start. Indices are int32 below 2^31 nodes, else int64. Sizes, for scale: products
 * takes about 1.3 GB; papers about 65 GB with float32 features (36 GB with float16), which on
 * disk is written through the page cache and needs little memory beyond the O(N) scratch.
 *
 * Determinism. Every random number is a Philox block keyed by the seed with the counter
 * (node low, node high, draw index, stream), so the output bytes are a function of the options
 * alone: the same for any thread count, in memory or on disk. Floating-point work that is not
 * per-node (the calibration) runs serially.
 */
#include "core/internal.h"
#include "core/philox.h"
#include "io/dataset.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* The Lomax tail index a (density exponent a + 1 = 2.5) and the matching rank skew g. */
#define GEN_ALPHA 1.5
#define GEN_RANK_SKEW 3 /* a / (a - 1); rank = floor(S u^3) */

/* The largest in-degree at any size (papers, capped by its communities, stays far below). */
#define GEN_MAX_DEGREE ((int64_t)1 << 22)

/* Redraw rounds for colliding neighbours before the deterministic walk completes a list. */
#define GEN_ROUNDS 4

/* Nodes per progress report (and per parallel loop); the output does not depend on it. */
#define GEN_BLOCK ((int64_t)1 << 16)

/* Philox streams (counter word 3): a distinct one per purpose, tagged "GD" so they do not
 * meet the streams of the samplers even with the same seed. */
enum {
    GEN_STREAM_NODE = 0x47440101u,     /* per node: community, degree, split */
    GEN_STREAM_EDGE_IN = 0x47440102u,  /* per node and draw: an in-community in-neighbour */
    GEN_STREAM_EDGE_ANY = 0x47440103u, /* per node and draw: an in-neighbour from anywhere */
    GEN_STREAM_WALK = 0x47440104u,     /* per node: in-community count, walk starts */
    GEN_STREAM_FEATURE = 0x47440105u,  /* per node and 4 dims: noise */
    GEN_STREAM_CENTROID = 0x47440106u  /* per class and 4 dims: centroid */
};

typedef struct {
    const char *name;
    int64_t num_nodes;
    double avg_degree;
    int64_t feature_dim;
    int64_t num_classes;
    double p_in;        /* probability that an in-neighbour is from the node's community */
    double noise;       /* feature noise standard deviation at feature_dim (signal: 1) */
    double train, valid, test; /* split fractions */
} gen_preset;

/*
 * The presets. products and papers take their node and edge counts, feature widths, class
 * counts and split fractions from ogbn-products and ogbn-papers100M; p_in is close to their
 * measured edge homophily. The noise levels were chosen by measuring nearest-centroid accuracy
 * (centroids fitted on the train split, scored on test) on raw features against the mean over
 * the node and its in-neighbours (tests/test_generate.c): tiny 55-65 % vs 85-92 %, small
 * 56-58 % vs 90-91 %, products 54 % vs 94 %, papers' shape at 2M nodes 52 % vs 90 %, igb-tiny
 * 57 % vs 85 %. The igb presets take IGB's shape: 1024-dim features (4 KiB float32 rows), 19
 * classes, 12 in-edges a node (IGB-small 1M nodes / 12M edges, IGB-medium 10M / 120M).
 */
static const gen_preset gen_presets[] = {
    {"tiny", 10000, 15.0, 32, 8, 0.75, 3.2, 0.6, 0.2, 0.2},
    {"small", 200000, 20.0, 64, 16, 0.75, 4.0, 0.6, 0.2, 0.2},
    {"products", 2449029, 61859140.0 / 2449029.0, 100, 47, 0.80, 4.2, 196615.0 / 2449029.0,
     39323.0 / 2449029.0, 2213091.0 / 2449029.0},
    {"papers", 111059956, 1615685872.0 / 111059956.0, 128, 172, 0.70, 3.8,
     1207179.0 / 111059956.0, 125265.0 / 111059956.0, 214338.0 / 111059956.0},
    {"igb-tiny", 20000, 12.0, 1024, 19, 0.75, 14.0, 0.6, 0.2, 0.2},
    {"igb-small", 1000000, 12.0, 1024, 19, 0.75, 14.0, 0.6, 0.2, 0.2},
    {"igb-medium", 10000000, 12.0, 1024, 19, 0.75, 14.0, 0.6, 0.2, 0.2},
};

#define GEN_PRESETS (sizeof gen_presets / sizeof gen_presets[0])

/* The preset called name, or GD_ERR_INVALID_ARG naming every preset. */
static gd_status gen_find_preset(const char *name, const gen_preset **out) {
    char names[256];
    size_t used = 0;
    for (size_t i = 0; i < GEN_PRESETS; i++) {
        if (strcmp(gen_presets[i].name, name) == 0) return *out = &gen_presets[i], GD_OK;
        used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "",
                                 gen_presets[i].name);
    }
    return gd__error(GD_ERR_INVALID_ARG, "generate: unknown preset '%s' (expected %s, or a "
                     "heterogeneous one: %s)", name, names, gd__generate_hetero_names());
}

/* Everything the parallel loops read. */
typedef struct {
    uint64_t seed;
    int64_t n, classes, dim;
    double p_in, noise, scale;
    int64_t cap;
    double train, valid, test;
    int threads;
    int64_t *indptr;
    int64_t *labels;
    void *indices;
    int wide; /* indices are int64 */
    int64_t *members;  /* node ids grouped by community, each group by in-degree descending */
    int64_t *comm_off; /* classes + 1 offsets into members */
    float *centroids;  /* classes x dim */
    void *features;
    gd_dtype feature_dtype;
} gen_ctx;

#ifdef _OPENMP
#define GEN_THREAD() omp_get_thread_num()
#else
#define GEN_THREAD() 0
#endif

/* ------------------------------------------------------------ degree law */

/*
 * The exact mean of the capped law: E[min(cap, 1 + floor(X))] = 1 + sum_{k=1}^{cap-1} P(X >= k)
 * with P(X >= k) = (1 + k/s)^-a. The first terms are summed; the smooth remainder is its
 * midpoint integral, whose error is far below the sampling noise of any graph we generate.
 */
static double lomax_mean(double s, int64_t cap) {
    const int64_t exact = 4096;
    double sum = 1.0;
    int64_t k_end = cap - 1 < exact ? cap - 1 : exact;
    for (int64_t k = 1; k <= k_end; k++) sum += pow(1.0 + (double)k / s, -GEN_ALPHA);
    if (cap - 1 > exact) {
        double a1 = 1.0 - GEN_ALPHA;
        double lo = pow(1.0 + ((double)exact + 0.5) / s, a1);
        double hi = pow(1.0 + ((double)cap - 0.5) / s, a1);
        sum += s / (GEN_ALPHA - 1.0) * (lo - hi);
    }
    return sum;
}

static gd_status calibrate_scale(double avg_degree, int64_t cap, int64_t n, int64_t classes,
                                 double *scale) {
    gd_status st = GD_OK;
    double lo = 1e-9, hi = 1e12;
    GD_REQUIRE(avg_degree <= lomax_mean(hi, cap), GD_ERR_INVALID_ARG,
               "generate: avg_degree %g cannot be reached with %lld nodes and %lld classes (an "
               "in-degree is capped at %lld: num_nodes / (2 num_classes), at most 2^22): lower "
               "avg_degree or num_classes, or raise num_nodes",
               avg_degree, (long long)n, (long long)classes, (long long)cap);
    if (avg_degree <= 1.0) {
        *scale = lo;
        return GD_OK;
    }
    /* Bisection on log s: the mean is increasing in s. */
    for (int it = 0; it < 100; it++) {
        double mid = sqrt(lo * hi);
        if (lomax_mean(mid, cap) < avg_degree)
            lo = mid;
        else
            hi = mid;
    }
    *scale = sqrt(lo * hi);
fail:
    return st;
}

/* ------------------------------------------------------------- sorted lists */

static int64_t dedupe_sorted(int64_t *a, int64_t n) {
    if (n == 0) return 0;
    int64_t m = 1;
    for (int64_t i = 1; i < n; i++)
        if (a[i] != a[m - 1]) a[m++] = a[i];
    return m;
}

static int contains_sorted(const int64_t *a, int64_t n, int64_t x) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (a[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && a[lo] == x;
}

/* ------------------------------------------------------------- node draws */

static gd_philox_ctr node_block(const gen_ctx *g, int64_t v) {
    return gd_philox(g->seed, (uint32_t)v, (uint32_t)((uint64_t)v >> 32), 0, GEN_STREAM_NODE);
}

/* Community from word 0, in-degree from words 1-2 (word 3 is the split). */
static void draw_node(const gen_ctx *g, int64_t v) {
    gd_philox_ctr r = node_block(g, v);
    g->labels[v] = (int64_t)gd_philox_below(r.v[0], 0, (uint64_t)g->classes);
    double u = 1.0 - gd_philox_uniform_double(r.v[1], r.v[2]); /* (0, 1] */
    double x = g->scale * (pow(u, -1.0 / GEN_ALPHA) - 1.0);
    int64_t d = x >= (double)(g->cap - 1) ? g->cap : 1 + (int64_t)x;
    g->indptr[v + 1] = d;
}

/* 0 train, 1 valid, 2 test, 3 none. */
static int node_split(const gen_ctx *g, int64_t v) {
    double u = (double)gd_philox_uniform(node_block(g, v).v[3]);
    if (u < g->train) return 0;
    if (u < g->train + g->valid) return 1;
    if (u < g->train + g->valid + g->test) return 2;
    return 3;
}

/* In-place exclusive prefix sum of indptr[1..n] (which holds degrees) with indptr[0] = 0. */
static gd_status prefix_sum(gen_ctx *g) {
    gd_status st = GD_OK;
    int64_t n = g->n, nb = (n + GEN_BLOCK - 1) / GEN_BLOCK;
    int64_t *sums = NULL;
    GD_ALLOC(sums, (size_t)nb * sizeof *sums, "generate: prefix sums");
    g->indptr[0] = 0;
#pragma omp parallel for num_threads(g->threads) schedule(static)
    for (int64_t b = 0; b < nb; b++) {
        int64_t end = (b + 1) * GEN_BLOCK < n ? (b + 1) * GEN_BLOCK : n, s = 0;
        for (int64_t v = b * GEN_BLOCK; v < end; v++) s += g->indptr[v + 1];
        sums[b] = s;
    }
    int64_t run = 0;
    for (int64_t b = 0; b < nb; b++) {
        int64_t s = sums[b];
        sums[b] = run;
        run += s;
    }
#pragma omp parallel for num_threads(g->threads) schedule(static)
    for (int64_t b = 0; b < nb; b++) {
        int64_t end = (b + 1) * GEN_BLOCK < n ? (b + 1) * GEN_BLOCK : n, s = sums[b];
        for (int64_t v = b * GEN_BLOCK; v < end; v++) {
            s += g->indptr[v + 1];
            g->indptr[v + 1] = s;
        }
    }
fail:
    gd_free(sums);
    return st;
}

/*
 * Group node ids by community (a stable counting sort over fixed blocks, so ids stay ascending
 * within a group) and order each group by in-degree, descending (a counting sort on the degree,
 * stable, so ties stay by id). Memory: the member list, one offset per block and class, and
 * per-thread histograms.
 */
static gd_status build_members(gen_ctx *g, gd_progress_fn progress, void *user) {
    gd_status st = GD_OK;
    int64_t n = g->n, c = g->classes, nb = (n + GEN_BLOCK - 1) / GEN_BLOCK;
    int64_t *counts = NULL, *scratch = NULL, max_size = 0;
    int64_t cnt_elems;
    GD_REQUIRE(!gd__mul_overflow_i64(nb, c, &cnt_elems), GD_ERR_OVERFLOW,
               "generate: %lld blocks x %lld classes overflows", (long long)nb, (long long)c);
    GD_ALLOC(counts, (size_t)cnt_elems * sizeof *counts, "generate: community counts");
    memset(counts, 0, (size_t)cnt_elems * sizeof *counts);
#pragma omp parallel for num_threads(g->threads) schedule(static)
    for (int64_t b = 0; b < nb; b++) {
        int64_t end = (b + 1) * GEN_BLOCK < n ? (b + 1) * GEN_BLOCK : n;
        for (int64_t v = b * GEN_BLOCK; v < end; v++) counts[b * c + g->labels[v]]++;
    }
    /* Offsets in (class, block) order: class-major, so each class is contiguous. */
    int64_t run = 0;
    for (int64_t k = 0; k < c; k++) {
        g->comm_off[k] = run;
        for (int64_t b = 0; b < nb; b++) {
            int64_t x = counts[b * c + k];
            counts[b * c + k] = run;
            run += x;
        }
    }
    g->comm_off[c] = run;
#pragma omp parallel for num_threads(g->threads) schedule(static)
    for (int64_t b = 0; b < nb; b++) {
        int64_t end = (b + 1) * GEN_BLOCK < n ? (b + 1) * GEN_BLOCK : n;
        for (int64_t v = b * GEN_BLOCK; v < end; v++)
            g->members[counts[b * c + g->labels[v]]++] = v;
    }
    GD_CHECK(gd__progress(progress, user, "generate: communities", 1, 2));

    for (int64_t k = 0; k < c; k++) {
        int64_t size = g->comm_off[k + 1] - g->comm_off[k];
        if (size > max_size) max_size = size;
    }
    /* Per thread: a histogram of cap + 1 degrees and a copy of one community. */
    int64_t per_thread = g->cap + 1 + max_size;
    GD_ALLOC(scratch, (size_t)g->threads * (size_t)per_thread * sizeof *scratch,
             "generate: community sort scratch");
#pragma omp parallel num_threads(g->threads)
    {
        int64_t *hist = scratch + (size_t)GEN_THREAD() * (size_t)per_thread;
        int64_t *tmp = hist + g->cap + 1;
#pragma omp for schedule(dynamic, 1)
        for (int64_t k = 0; k < c; k++) {
            int64_t off = g->comm_off[k], size = g->comm_off[k + 1] - off;
            int64_t *mem = g->members + off;
            memset(hist, 0, (size_t)(g->cap + 1) * sizeof *hist);
            for (int64_t i = 0; i < size; i++) {
                int64_t v = mem[i];
                tmp[i] = v;
                hist[g->cap - (g->indptr[v + 1] - g->indptr[v])]++;
            }
            int64_t s = 0;
            for (int64_t d = 0; d <= g->cap; d++) {
                int64_t x = hist[d];
                hist[d] = s;
                s += x;
            }
            for (int64_t i = 0; i < size; i++) {
                int64_t v = tmp[i];
                mem[hist[g->cap - (g->indptr[v + 1] - g->indptr[v])]++] = v;
            }
        }
    }
    GD_CHECK(gd__progress(progress, user, "generate: communities", 2, 2));
fail:
    gd_free(counts);
    gd_free(scratch);
    return st;
}

/* ------------------------------------------------------------------- edges */

/*
 * Complete a short list by walking a pool (members[off .. off+size), or all ids when members is
 * NULL) from a random start. buf[0..n) is sorted and distinct on entry; a walk visits each
 * candidate once, so what it appends is distinct too. Returns the new length, sorted.
 */
static int64_t walk_fill(const gen_ctx *g, const int64_t *members, int64_t size, uint32_t which,
                         int64_t v, int64_t d, int64_t *buf, int64_t n) {
    gd_philox_ctr r =
        gd_philox(g->seed, (uint32_t)v, (uint32_t)((uint64_t)v >> 32), which, GEN_STREAM_WALK);
    int64_t start = (int64_t)gd_philox_below(r.v[0], r.v[1], (uint64_t)size);
    int64_t n0 = n;
    for (int64_t i = 0; i < size && n < d; i++) {
        int64_t j = start + i < size ? start + i : start + i - size;
        int64_t w = members ? members[j] : j;
        if (w == v || contains_sorted(buf, n0, w)) continue;
        buf[n++] = w;
    }
    gd__sort_i64(buf, n);
    return n;
}

/*
 * The community holding position j of the member list. A uniform j picks a community with
 * probability proportional to its size, as a uniform node would, without touching the labels.
 */
static int64_t community_at(const gen_ctx *g, int64_t j) {
    int64_t lo = 0, hi = g->classes - 1;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (g->comm_off[mid] <= j)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/*
 * Draw up to target distinct sources for v into out (sorted on return), none equal to v or in
 * excl[0..nexcl) (sorted). community >= 0 picks from that community; -1 picks the community of
 * a uniformly drawn node first. Each pick is a skewed rank over the members ordered by
 * in-degree. Collisions are redrawn for a few rounds; the caller completes what is missing.
 */
static int64_t draw_distinct(const gen_ctx *g, int64_t v, int64_t community, int64_t target,
                             int64_t *out, const int64_t *excl, int64_t nexcl, uint32_t stream) {
    uint32_t lo = (uint32_t)v, hi = (uint32_t)((uint64_t)v >> 32), draw = 0;
    int64_t n = 0;
    for (int round = 0; round < GEN_ROUNDS && n < target; round++) {
        /* Two passes: first every pick's position in the member list, with a prefetch, then
         * the loads. The member list is far larger than the caches and the loads are random,
         * so issuing them together rather than one per Philox block is what sets the speed. */
        int64_t want = target - n;
        for (int64_t i = 0; i < want; i++) {
            gd_philox_ctr r = gd_philox(g->seed, lo, hi, draw++, stream);
            int64_t cc = community >= 0
                             ? community
                             : community_at(g, (int64_t)gd_philox_below(r.v[2], r.v[3],
                                                                        (uint64_t)g->n));
            int64_t off = g->comm_off[cc], size = g->comm_off[cc + 1] - off;
            double u = ((double)r.v[1] + 0.5) * (1.0 / 4294967296.0);
            int64_t rank = (int64_t)((double)size * u * u * u);
            if (rank >= size) rank = size - 1;
            out[n + i] = off + rank;
            __builtin_prefetch(g->members + off + rank);
        }
        int64_t end = n + want;
        for (int64_t i = n; i < end; i++) {
            int64_t w = g->members[out[i]];
            if (w != v && !contains_sorted(excl, nexcl, w)) out[n++] = w;
        }
        gd__sort_i64(out, n);
        n = dedupe_sorted(out, n);
    }
    return n;
}

/*
 * The in-neighbour list of v. The number from v's own community is fixed first
 * (d p_in, randomly rounded) and each part is drawn and deduplicated on its own, so that
 * collisions, which are more frequent among the concentrated in-community picks, do not shift
 * the homophily away from p_in.
 */
static void node_edges(const gen_ctx *g, int64_t v, int64_t *buf) {
    int64_t pos = g->indptr[v], d = g->indptr[v + 1] - pos;
    int64_t c = g->labels[v];
    gd_philox_ctr r =
        gd_philox(g->seed, (uint32_t)v, (uint32_t)((uint64_t)v >> 32), 2, GEN_STREAM_WALK);
    int64_t k_in = (int64_t)((double)d * g->p_in + gd_philox_uniform_double(r.v[0], r.v[1]));
    if (k_in > d) k_in = d;

    /* In-community part, completed by a walk over the community if needed. */
    int64_t na = draw_distinct(g, v, c, k_in, buf, NULL, 0, GEN_STREAM_EDGE_IN);
    if (na < k_in) {
        int64_t off = g->comm_off[c], size = g->comm_off[c + 1] - off;
        na = walk_fill(g, g->members + off, size, 0, v, k_in, buf, na);
    }
    /* The rest from anywhere, distinct from the first part; then a walk over all nodes. */
    int64_t nb = draw_distinct(g, v, -1, d - na, buf + na, buf, na, GEN_STREAM_EDGE_ANY);
    int64_t n = na + nb;
    gd__sort_i64(buf, n);
    if (n < d) n = walk_fill(g, NULL, g->n, 1, v, d, buf, n);
    if (g->wide) {
        memcpy((int64_t *)g->indices + pos, buf, (size_t)d * sizeof *buf);
    } else {
        int32_t *out = (int32_t *)g->indices + pos;
        for (int64_t i = 0; i < d; i++) out[i] = (int32_t)buf[i];
    }
}

/* ---------------------------------------------------------------- features */

/* Four standard normals from one Philox block (Box-Muller on two pairs of words). */
static void normals4(gd_philox_ctr r, float out[4]) {
    for (int p = 0; p < 2; p++) {
        float u1 = ((float)(r.v[2 * p] >> 8) + 1.0f) * (1.0f / 16777216.0f); /* (0, 1] */
        float u2 = (float)(r.v[2 * p + 1] >> 8) * (1.0f / 16777216.0f);
        float rad = sqrtf(-2.0f * logf(u1));
        float th = 6.28318530718f * u2;
        out[2 * p] = rad * cosf(th);
        out[2 * p + 1] = rad * sinf(th);
    }
}

static void make_centroids(gen_ctx *g) {
    for (int64_t k = 0; k < g->classes; k++) {
        float *mu = g->centroids + k * g->dim;
        for (int64_t j = 0; j < g->dim; j += 4) {
            float z[4];
            normals4(gd_philox(g->seed, (uint32_t)k, 0, (uint32_t)(j / 4), GEN_STREAM_CENTROID),
                     z);
            for (int64_t t = 0; t < 4 && j + t < g->dim; t++) mu[j + t] = z[t];
        }
    }
}

static void feature_row(const gen_ctx *g, int64_t v, float *row) {
    const float *mu = g->centroids + g->labels[v] * g->dim;
    float noise = (float)g->noise;
    uint32_t lo = (uint32_t)v, hi = (uint32_t)((uint64_t)v >> 32);
    for (int64_t j = 0; j < g->dim; j += 4) {
        float z[4];
        normals4(gd_philox(g->seed, lo, hi, (uint32_t)(j / 4), GEN_STREAM_FEATURE), z);
        for (int64_t t = 0; t < 4 && j + t < g->dim; t++) row[j + t] = mu[j + t] + noise * z[t];
    }
    size_t at = (size_t)v * (size_t)g->dim;
    if (g->feature_dtype == GD_DTYPE_FLOAT32) {
        memcpy((float *)g->features + at, row, (size_t)g->dim * sizeof *row);
    } else if (g->feature_dtype == GD_DTYPE_FLOAT16) {
        uint16_t *out = (uint16_t *)g->features + at;
        for (int64_t j = 0; j < g->dim; j++) out[j] = gd_float_to_half(row[j]);
    } else {
        uint16_t *out = (uint16_t *)g->features + at;
        for (int64_t j = 0; j < g->dim; j++) out[j] = gd_float_to_bfloat16(row[j]);
    }
}

/* ------------------------------------------------------------------ splits */

static gd_status make_splits(gen_ctx *g, gd_dataset_t *ds, gd_progress_fn progress,
                             void *user) {
    gd_status st = GD_OK;
    int64_t n = g->n, nb = (n + GEN_BLOCK - 1) / GEN_BLOCK;
    int64_t *counts = NULL;
    int64_t *out[3] = {NULL, NULL, NULL};
    static const gd_array_id ids[3] = {GD_ARRAY_TRAIN_IDX, GD_ARRAY_VALID_IDX,
                                       GD_ARRAY_TEST_IDX};
    GD_ALLOC(counts, (size_t)nb * 4 * sizeof *counts, "generate: split counts");
#pragma omp parallel for num_threads(g->threads) schedule(static)
    for (int64_t b = 0; b < nb; b++) {
        int64_t end = (b + 1) * GEN_BLOCK < n ? (b + 1) * GEN_BLOCK : n;
        int64_t *cnt = counts + 4 * b;
        cnt[0] = cnt[1] = cnt[2] = cnt[3] = 0;
        for (int64_t v = b * GEN_BLOCK; v < end; v++) cnt[node_split(g, v)]++;
    }
    int64_t total[4] = {0, 0, 0, 0};
    for (int64_t b = 0; b < nb; b++)
        for (int s = 0; s < 4; s++) {
            int64_t x = counts[4 * b + s];
            counts[4 * b + s] = total[s];
            total[s] += x;
        }
    for (int s = 0; s < 3; s++) {
        int64_t shape[2] = {total[s], 1};
        void *p = NULL;
        GD_CHECK(gd__dataset_alloc(ds, ids[s], GD_DTYPE_INT64, 1, shape, &p));
        out[s] = p;
    }
    GD_CHECK(gd__progress(progress, user, "generate: splits", 1, 2));
#pragma omp parallel for num_threads(g->threads) schedule(static)
    for (int64_t b = 0; b < nb; b++) {
        int64_t end = (b + 1) * GEN_BLOCK < n ? (b + 1) * GEN_BLOCK : n;
        int64_t *at = counts + 4 * b;
        for (int64_t v = b * GEN_BLOCK; v < end; v++) {
            int s = node_split(g, v);
            if (s < 3) out[s][at[s]++] = v;
        }
    }
    GD_CHECK(gd__progress(progress, user, "generate: splits", 2, 2));
fail:
    gd_free(counts);
    return st;
}

/* ------------------------------------------------------------------ public */

gd_status gd_generate_preset_sizes(const char *preset, int64_t *num_nodes, double *avg_degree,
                                   int64_t *feature_dim, int64_t *num_classes) {
    const gen_preset *p = NULL;
    gd_status st = gen_find_preset(preset ? preset : "tiny", &p);
    if (st != GD_OK) return st;
    if (num_nodes) *num_nodes = p->num_nodes;
    if (avg_degree) *avg_degree = p->avg_degree;
    if (feature_dim) *feature_dim = p->feature_dim;
    if (num_classes) *num_classes = p->num_classes;
    return GD_OK;
}

/*
 * The generator's parameters from the options, the preset filling what they leave unset, each
 * range-checked, and the degree law calibrated to the average degree asked for (*avg_out).
 */
static gd_status gen_setup(gen_ctx *g, const gd_generate_options *o, const gen_preset *p,
                           double *avg_out) {
    gd_status st = GD_OK;
    g->seed = o->seed;
    g->n = o->num_nodes ? o->num_nodes : p->num_nodes;
    double avg = o->avg_degree != 0.0 ? o->avg_degree : p->avg_degree;
    g->dim = o->feature_dim ? o->feature_dim : p->feature_dim;
    g->classes = o->num_classes ? o->num_classes : p->num_classes;
    g->feature_dtype = o->feature_dtype == GD_DTYPE_INVALID ? GD_DTYPE_FLOAT32 : o->feature_dtype;
    g->p_in = p->p_in;
    g->noise = p->noise * sqrt((double)g->dim / (double)p->feature_dim);
    g->train = p->train;
    g->valid = p->valid;
    g->test = p->test;
    g->threads = o->threads > 0 ? o->threads : gd__num_threads();
    *avg_out = avg;
    GD_CHECK(gd__threads_check(g->threads, "generate"));

    GD_REQUIRE(g->n >= 2 && g->n <= ((int64_t)1 << 40), GD_ERR_INVALID_ARG,
               "generate: num_nodes %lld is out of range: use 2 to 2^40", (long long)g->n);
    GD_REQUIRE(g->classes >= 1 && g->classes <= g->n / 2 && g->classes <= (1 << 24),
               GD_ERR_INVALID_ARG,
               "generate: num_classes %lld is out of range for %lld nodes: use 1 to "
               "min(num_nodes / 2, 2^24)",
               (long long)g->classes, (long long)g->n);
    GD_REQUIRE(g->dim >= 1 && g->dim <= (1 << 20), GD_ERR_INVALID_ARG,
               "generate: feature_dim %lld is out of range: use 1 to 2^20", (long long)g->dim);
    GD_REQUIRE(isfinite(avg) && avg >= 1.0, GD_ERR_INVALID_ARG,
               "generate: avg_degree %g is out of range: every node has at least one "
               "in-neighbour, so use a value of at least 1",
               avg);
    GD_REQUIRE(g->feature_dtype == GD_DTYPE_FLOAT32 || g->feature_dtype == GD_DTYPE_FLOAT16 ||
                   g->feature_dtype == GD_DTYPE_BFLOAT16,
               GD_ERR_INVALID_ARG,
               "generate: feature dtype %s is not supported: use float32, float16 or bfloat16",
               gd_dtype_name(g->feature_dtype));
    int64_t feat_elems;
    GD_REQUIRE(!gd__mul_overflow_i64(g->n, g->dim, &feat_elems) && feat_elems < ((int64_t)1 << 60),
               GD_ERR_OVERFLOW, "generate: %lld nodes x %lld features overflows", (long long)g->n,
               (long long)g->dim);

    /* The cap keeps a list within half a community, so redraws find free members quickly, and
     * below GEN_MAX_DEGREE, so that per-thread scratch stays small at any size. */
    g->cap = g->n / (2 * g->classes);
    if (g->cap > GEN_MAX_DEGREE) g->cap = GEN_MAX_DEGREE;
    if (g->cap > g->n - 1) g->cap = g->n - 1;
    if (g->cap < 1) g->cap = 1;
    GD_CHECK(calibrate_scale(avg, g->cap, g->n, g->classes, &g->scale));
fail:
    return st;
}

/* Stage 3: the in-neighbour lists, written straight into the indices array of ds. */
static gd_status gen_edges(gen_ctx *g, gd_dataset_t *ds, int64_t num_edges, gd_progress_fn progress,
                           void *user) {
    gd_status st = GD_OK;
    int64_t *scratch = NULL;
    int64_t shape[2] = {num_edges, 1};
    void *ptr = NULL;
    g->wide = g->n > INT32_MAX;
    GD_CHECK(gd__dataset_alloc(ds, GD_ARRAY_INDICES, g->wide ? GD_DTYPE_INT64 : GD_DTYPE_INT32, 1,
                               shape, &ptr));
    g->indices = ptr;
    GD_ALLOC(scratch, (size_t)g->threads * (size_t)g->cap * sizeof *scratch,
             "generate: neighbour list scratch");
    for (int64_t b0 = 0; b0 < g->n; b0 += GEN_BLOCK) {
        GD_CHECK(gd__progress(progress, user, "generate: edges", (uint64_t)g->indptr[b0],
                              (uint64_t)num_edges));
        int64_t b1 = b0 + GEN_BLOCK < g->n ? b0 + GEN_BLOCK : g->n;
#pragma omp parallel num_threads(g->threads)
        {
            int64_t *buf = scratch + (size_t)GEN_THREAD() * (size_t)g->cap;
#pragma omp for schedule(dynamic, 64)
            for (int64_t v = b0; v < b1; v++) node_edges(g, v, buf);
        }
    }
    GD_CHECK(
        gd__progress(progress, user, "generate: edges", (uint64_t)num_edges, (uint64_t)num_edges));
fail:
    gd_free(scratch);
    return st;
}

/* Stage 4: the class centroids (kept in g), then the features row by row into ds. */
static gd_status gen_features(gen_ctx *g, gd_dataset_t *ds, gd_progress_fn progress, void *user) {
    gd_status st = GD_OK;
    float *rows = NULL;
    int64_t shape[2] = {g->n, g->dim};
    void *ptr = NULL;
    GD_ALLOC(g->centroids, (size_t)(g->classes * g->dim) * sizeof *g->centroids,
             "generate: class centroids");
    make_centroids(g);
    GD_CHECK(gd__dataset_alloc(ds, GD_ARRAY_FEATURES, g->feature_dtype, 2, shape, &ptr));
    g->features = ptr;
    GD_ALLOC(rows, (size_t)g->threads * (size_t)g->dim * sizeof *rows, "generate: feature rows");
    for (int64_t b0 = 0; b0 < g->n; b0 += GEN_BLOCK) {
        GD_CHECK(gd__progress(progress, user, "generate: features", (uint64_t)b0, (uint64_t)g->n));
        int64_t b1 = b0 + GEN_BLOCK < g->n ? b0 + GEN_BLOCK : g->n;
#pragma omp parallel num_threads(g->threads)
        {
            float *row = rows + (size_t)GEN_THREAD() * (size_t)g->dim;
#pragma omp for schedule(static)
            for (int64_t v = b0; v < b1; v++) feature_row(g, v, row);
        }
    }
    GD_CHECK(gd__progress(progress, user, "generate: features", (uint64_t)g->n, (uint64_t)g->n));
fail:
    gd_free(rows);
    return st;
}

gd_status gd_generate(const gd_generate_options *options, gd_dataset_t **out) {
    gd_status st = GD_OK;
    gd_dataset_t *ds = NULL;
    gen_ctx g;
    memset(&g, 0, sizeof g);
    gd_generate_options o = GD_GENERATE_OPTIONS_INIT;
    double avg = 0;
    if (out) *out = NULL;

    if (options)
        GD_CHECK(gd__options_in(&o, sizeof o, options, 1, "generate: options",
                                "GD_GENERATE_OPTIONS_INIT"));
    if (gd__generate_is_hetero(o.preset)) return gd__generate_hetero(&o, out);
    const gen_preset *p = NULL;
    GD_CHECK(gen_find_preset(o.preset ? o.preset : "tiny", &p));
    gd_progress_fn progress = o.progress;
    void *user = o.progress_user;
    GD_CHECK(gen_setup(&g, &o, p, &avg));
    if (!o.out_dir) /* in memory: the arrays must fit in host memory before minutes of work */
        GD_CHECK(gd__dataset_memory_check(g.n, (int64_t)(avg * (double)g.n), g.dim,
                                          (int64_t)gd_dtype_size(g.feature_dtype), 8 * g.n,
                                          "generate: the dataset in memory"));

    char name[64];
    snprintf(name, sizeof name, "synthetic-%s", p->name);
    GD_CHECK(gd__dataset_new(name, o.out_dir, o.overwrite, &ds));

    int64_t shape[2] = {g.n, 1};
    void *ptr = NULL;
    GD_CHECK(gd__dataset_alloc(ds, GD_ARRAY_LABELS, GD_DTYPE_INT64, 1, shape, &ptr));
    g.labels = ptr;
    shape[0] = g.n + 1;
    GD_CHECK(gd__dataset_alloc(ds, GD_ARRAY_INDPTR, GD_DTYPE_INT64, 1, shape, &ptr));
    g.indptr = ptr;

    /* Stage 1: community and in-degree of every node. */
    for (int64_t b0 = 0; b0 < g.n; b0 += GEN_BLOCK) {
        GD_CHECK(gd__progress(progress, user, "generate: degrees", (uint64_t)b0, (uint64_t)g.n));
        int64_t b1 = b0 + GEN_BLOCK < g.n ? b0 + GEN_BLOCK : g.n;
#pragma omp parallel for num_threads(g.threads) schedule(static)
        for (int64_t v = b0; v < b1; v++) draw_node(&g, v);
    }
    GD_CHECK(prefix_sum(&g));
    GD_CHECK(gd__progress(progress, user, "generate: degrees", (uint64_t)g.n, (uint64_t)g.n));
    int64_t num_edges = g.indptr[g.n];

    /* Stage 2: member lists ordered by popularity. */
    GD_ALLOC(g.comm_off, (size_t)(g.classes + 1) * sizeof *g.comm_off, "generate: communities");
    GD_ALLOC(g.members, (size_t)g.n * sizeof *g.members, "generate: community members");
    GD_CHECK(build_members(&g, progress, user));

    GD_CHECK(gen_edges(&g, ds, num_edges, progress, user));
    gd_free(g.members);
    g.members = NULL;
    GD_CHECK(gen_features(&g, ds, progress, user));

    /* Stage 5: splits, then provenance and the finishing checks. */
    GD_CHECK(make_splits(&g, ds, progress, user));
    GD_CHECK(gd__dataset_set_infof(ds, "generator", "graphdirect synthetic v1"));
    GD_CHECK(gd__dataset_set_infof(ds, "preset", "%s", p->name));
    GD_CHECK(gd__dataset_set_infof(ds, "seed", "%llu", (unsigned long long)g.seed));
    GD_CHECK(gd__dataset_set_infof(ds, "avg_degree_target", "%.6g", avg));
    GD_CHECK(gd__dataset_set_infof(ds, "degree_law", "lomax alpha=%.2f scale=%.6g max=%lld", GEN_ALPHA, g.scale,
                      (long long)g.cap));
    GD_CHECK(gd__dataset_set_infof(ds, "source_pick", "p_in=%.2f rank=floor(S*u^%d) by in-degree", g.p_in,
                      GEN_RANK_SKEW));
    GD_CHECK(gd__dataset_set_infof(ds, "features", "centroid N(0,1) + %.4g * N(0,1)", g.noise));
    GD_CHECK(gd__dataset_set_infof(ds, "split", "train=%.6g valid=%.6g test=%.6g", g.train, g.valid, g.test));
    ds->num_classes = g.classes;
    GD_CHECK(gd__progress(progress, user, "generate: finish", 0, 1));
    /* The graph is valid by construction; checking every index is left to small graphs, where
     * it is cheap, so that papers is not read back whole. */
    /* Finishing publishes the directory: from here on the run is complete and no longer
     * offers the caller a point to stop. */
    GD_CHECK(gd__dataset_finish(ds, num_edges <= ((int64_t)1 << 24)));

    gd_free(g.centroids);
    gd_free(g.comm_off);
    if (out)
        *out = ds;
    else
        gd_dataset_close(ds);
    return GD_OK;

fail:
    gd_free(g.members);
    gd_free(g.comm_off);
    gd_free(g.centroids);
    if (ds) gd_dataset_close(ds);
    return st;
}
