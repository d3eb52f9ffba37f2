/*
 * Helpers shared by the sampler tests (test_sample.c on the CPU, test_sample_cuda.c on a GPU):
 * random graphs with isolated nodes and hubs, minibatches copied to host memory and compared, an
 * independent serial statement of the determinism contract of docs/sampling.md, and the block
 * invariants every minibatch must satisfy.
 */
#ifndef GD_TEST_SAMPLE_UTIL_H
#define GD_TEST_SAMPLE_UTIL_H

#include "core/philox.h"
#include "sample/internal.h"
#include "test.h"

#ifdef GD_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

/* ------------------------------------------------------------------ graphs */

typedef struct {
    int64_t n, e;
    int64_t *indptr;
    void *indices;
    gd_dtype dtype;
} graph;

static inline int64_t nbr(const graph *g, int64_t p) {
    return g->dtype == GD_DTYPE_INT32 ? ((const int32_t *)g->indices)[p]
                                      : ((const int64_t *)g->indices)[p];
}

/*
 * A random graph: every 13th node isolated, three hubs with in-edges from about half the nodes, the
 * rest with 0..2*avg in-neighbours, some lists shorter than the fanouts and some longer.
 */
static inline graph make_graph(uint64_t *state, int64_t n, int avg, gd_dtype dtype) {
    int64_t cap = n * (int64_t)avg * 2 + 3 * n, m = 0;
    int64_t *src = malloc(sizeof(int64_t) * (size_t)cap),
            *dst = malloc(sizeof(int64_t) * (size_t)cap);
    T_ASSERT(src && dst);
    for (int64_t v = 0; v < n; v++) {
        int64_t d;
        if (v % 13 == 5)
            d = 0;
        else if (v < 3 && n > 100)
            d = n / 2;
        else
            d = (int64_t)(t_rand(state) % (uint64_t)(2 * avg + 1));
        for (int64_t k = 0; k < d && m < cap; k++) {
            src[m] = (int64_t)(t_rand(state) % (uint64_t)n);
            dst[m] = v;
            m++;
        }
    }
    graph g = {n, 0, NULL, NULL, dtype};
    gd_csc_options o = GD_CSC_OPTIONS_INIT;
    o.index_dtype = dtype;
    gd_dtype got;
    T_OK(gd_csc_from_coo(n, m, src, dst, &o, &g.indptr, &g.indices, &got, &g.e));
    T_ASSERT(got == dtype);
    free(src);
    free(dst);
    return g;
}

static inline void free_graph(graph *g) {
    gd_free(g->indptr);
    gd_free(g->indices);
}

/* n distinct random seeds from [0, g->n). */
static inline void make_seeds(uint64_t *state, int64_t num_nodes, int64_t n, int64_t *seeds) {
    int64_t *all = malloc(sizeof(int64_t) * (size_t)num_nodes), nb;
    int64_t *perm = malloc(sizeof(int64_t) * (size_t)num_nodes);
    T_ASSERT(all && perm);
    for (int64_t i = 0; i < num_nodes; i++) all[i] = i;
    T_OK(gd_seed_batches(all, num_nodes, 1, t_rand(state), 0, 0, perm, &nb));
    memcpy(seeds, perm, sizeof(int64_t) * (size_t)n);
    free(all);
    free(perm);
}

/* ------------------------------------------------------------ a minibatch copied to host memory */

typedef struct {
    int L;
    int64_t num_nodes;
    int64_t *nodes;
    gd_block b[GD_SAMPLER_MAX_LAYERS];
    int32_t *indptr[GD_SAMPLER_MAX_LAYERS], *indices[GD_SAMPLER_MAX_LAYERS];
} host_mb;

static inline void host_mb_free(host_mb *h) {
    free(h->nodes);
    for (int l = 0; l < h->L; l++) {
        free(h->indptr[l]);
        free(h->indices[l]);
    }
    memset(h, 0, sizeof *h);
}

static inline void copy_out(void *dst, const void *src, size_t bytes, int on_device) {
    if (bytes == 0) return;
#ifdef GD_WITH_CUDA
    if (on_device) {
        CU(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
        return;
    }
#endif
    T_ASSERT(!on_device);
    memcpy(dst, src, bytes);
}

static inline host_mb to_host(gd_minibatch_t *mb) {
    host_mb h;
    memset(&h, 0, sizeof h);
    const int dev = gd_minibatch_on_device(mb);
    h.L = gd_minibatch_num_layers(mb);
    const int64_t *ids;
    T_OK(gd_minibatch_input_nodes(mb, &ids, &h.num_nodes));
    h.nodes = malloc(sizeof(int64_t) * (size_t)(h.num_nodes + 1));
    T_ASSERT(h.nodes);
    copy_out(h.nodes, ids, sizeof(int64_t) * (size_t)h.num_nodes, dev);
    for (int l = 0; l < h.L; l++) {
        T_OK(gd_minibatch_block(mb, l, &h.b[l]));
        h.indptr[l] = malloc(sizeof(int32_t) * (size_t)(h.b[l].num_dst + 1));
        h.indices[l] = malloc(sizeof(int32_t) * (size_t)(h.b[l].num_edges + 1));
        T_ASSERT(h.indptr[l] && h.indices[l]);
        copy_out(h.indptr[l], h.b[l].indptr, sizeof(int32_t) * (size_t)(h.b[l].num_dst + 1), dev);
        copy_out(h.indices[l], h.b[l].indices, sizeof(int32_t) * (size_t)h.b[l].num_edges, dev);
    }
    return h;
}

static inline void expect_equal(const host_mb *a, const host_mb *b, const char *what) {
    if (a->L != b->L) T_FAIL_("%s: %d vs %d layers", what, a->L, b->L);
    if (a->num_nodes != b->num_nodes)
        T_FAIL_("%s: %lld vs %lld input nodes", what, (long long)a->num_nodes,
                (long long)b->num_nodes);
    for (int64_t i = 0; i < a->num_nodes; i++)
        if (a->nodes[i] != b->nodes[i])
            T_FAIL_("%s: input node %lld: %lld vs %lld", what, (long long)i, (long long)a->nodes[i],
                    (long long)b->nodes[i]);
    for (int l = 0; l < a->L; l++) {
        if (a->b[l].num_dst != b->b[l].num_dst || a->b[l].num_src != b->b[l].num_src ||
            a->b[l].num_edges != b->b[l].num_edges)
            T_FAIL_("%s: layer %d sizes (%lld, %lld, %lld) vs (%lld, %lld, %lld)", what, l,
                    (long long)a->b[l].num_dst, (long long)a->b[l].num_src,
                    (long long)a->b[l].num_edges, (long long)b->b[l].num_dst,
                    (long long)b->b[l].num_src, (long long)b->b[l].num_edges);
        for (int64_t i = 0; i <= a->b[l].num_dst; i++)
            if (a->indptr[l][i] != b->indptr[l][i])
                T_FAIL_("%s: layer %d indptr[%lld]: %d vs %d", what, l, (long long)i,
                        a->indptr[l][i], b->indptr[l][i]);
        for (int64_t i = 0; i < a->b[l].num_edges; i++)
            if (a->indices[l][i] != b->indices[l][i])
                T_FAIL_("%s: layer %d indices[%lld]: %d vs %d", what, l, (long long)i,
                        a->indices[l][i], b->indices[l][i]);
    }
}

/* --------------------------------------------------------- the contract, restated independently */

static inline uint64_t words64(gd_philox_ctr r) { return ((uint64_t)r.v[1] << 32) | r.v[0]; }

static inline uint64_t ref_key(uint64_t seed, int64_t epoch, int64_t batch) {
    uint64_t e = (uint64_t)epoch, b = (uint64_t)batch;
    uint64_t ek = words64(gd_philox(seed, (uint32_t)e, (uint32_t)(e >> 32), 0, 0x45504f43u));
    return words64(gd_philox(ek, (uint32_t)b, (uint32_t)(b >> 32), 0, 0x42415443u));
}

static inline uint64_t ref_draw(uint64_t key, int64_t v, int hop, int64_t j, uint64_t n) {
    gd_philox_ctr r =
        gd_philox(key, (uint32_t)v, (uint32_t)((uint64_t)v >> 32), (uint32_t)j, (uint32_t)hop);
    return ((uint64_t)r.v[0] * n) >> 32; /* every test degree is below 2^32 */
}

static inline int ref_bit(const uint8_t *bitmap, int64_t u) {
    return (bitmap[u / 8] >> (u % 8)) & 1;
}

/*
 * The biased draws of docs/sampling.md ("Biased sampling"), restated naively: the list positions
 * of each class still available, in list order, and at step j a draw over their total weight
 * (factor per buffered entry, 1 per other) that picks, in the order buffered then other, the
 * entry whose weight interval holds it; without replacement the entry is then removed.
 */
static inline void ref_biased_positions(const graph *g, const uint8_t *bitmap, int factor,
                                        uint64_t key, int64_t v, int hop, int replace, int64_t cnt,
                                        int64_t *pos) {
    const int64_t s0 = g->indptr[v], deg = g->indptr[v + 1] - s0;
    int64_t *cls[2], len[2] = {0, 0};
    cls[0] = malloc(sizeof(int64_t) * (size_t)(deg + 1));
    cls[1] = malloc(sizeof(int64_t) * (size_t)(deg + 1));
    T_ASSERT(cls[0] && cls[1]);
    for (int64_t p = 0; p < deg; p++) {
        const int other = !ref_bit(bitmap, nbr(g, s0 + p));
        cls[other][len[other]++] = p;
    }
    for (int64_t j = 0; j < cnt; j++) {
        const uint64_t wb = (uint64_t)factor * (uint64_t)len[0];
        const uint64_t r = ref_draw(key, v, hop, j, wb + (uint64_t)len[1]);
        const int other = r >= wb;
        const int64_t k = other ? (int64_t)(r - wb) : (int64_t)(r / (uint64_t)factor);
        pos[j] = cls[other][k];
        if (!replace) {
            memmove(cls[other] + k, cls[other] + k + 1,
                    sizeof(int64_t) * (size_t)(len[other] - k - 1));
            len[other]--;
        }
    }
    free(cls[0]);
    free(cls[1]);
}

/*
 * The serial reference: Floyd's algorithm (or, with a bitmap and a factor above 1, the biased
 * draws), then first-appearance local ids.
 */
static inline host_mb reference_biased(const graph *g, const int *fanouts, int L, int replace,
                                       const uint8_t *bitmap, int factor, uint64_t seed,
                                       int64_t epoch, int64_t batch, const int64_t *seeds,
                                       int64_t n) {
    host_mb h;
    memset(&h, 0, sizeof h);
    h.L = L;
    const uint64_t key = ref_key(seed, epoch, batch);
    int64_t *local = malloc(sizeof(int64_t) * (size_t)g->n);
    int64_t cap = n + 16, nn = n;
    int64_t *nodes = malloc(sizeof(int64_t) * (size_t)cap);
    T_ASSERT(local && nodes);
    for (int64_t v = 0; v < g->n; v++) local[v] = -1;
    memcpy(nodes, seeds, sizeof(int64_t) * (size_t)n);
    for (int hop = 0; hop < L; hop++) {
        const int l = L - 1 - hop, f = fanouts[hop];
        const int64_t nf = nn;
        int64_t ecap = 16, ne = 0;
        int64_t *edges = malloc(sizeof(int64_t) * (size_t)ecap);
        int32_t *ip = malloc(sizeof(int32_t) * (size_t)(nf + 1));
        T_ASSERT(edges && ip);
        ip[0] = 0;
        for (int64_t i = 0; i < nf; i++) {
            const int64_t v = nodes[i], s0 = g->indptr[v], deg = g->indptr[v + 1] - s0;
            int64_t cnt = f < 0 || deg == 0 ? deg : replace ? f : (deg < f ? deg : f);
            if (ne + cnt > ecap) {
                while (ne + cnt > ecap) ecap *= 2;
                edges = realloc(edges, sizeof(int64_t) * (size_t)ecap);
                T_ASSERT(edges);
            }
            int64_t *pos = edges + ne;
            const int all = f < 0 || (!replace && cnt == deg);
            if (!all && cnt > 0 && factor > 1)
                ref_biased_positions(g, bitmap, factor, key, v, hop, replace, cnt, pos);
            for (int64_t j = 0; j < cnt && (all || factor <= 1); j++) {
                if (all)
                    pos[j] = j;
                else if (replace)
                    pos[j] = (int64_t)ref_draw(key, v, hop, j, (uint64_t)deg);
                else {
                    int64_t up = deg - cnt + j,
                            t = (int64_t)ref_draw(key, v, hop, j, (uint64_t)up + 1);
                    for (int64_t q = 0; q < j; q++)
                        if (pos[q] == t) t = up;
                    pos[j] = t;
                }
            }
            for (int64_t j = 0; j < cnt; j++) pos[j] = nbr(g, s0 + pos[j]);
            ne += cnt;
            ip[i + 1] = (int32_t)ne;
        }
        for (int64_t i = 0; i < nf; i++) local[nodes[i]] = i;
        int32_t *ix = malloc(sizeof(int32_t) * (size_t)(ne + 1));
        T_ASSERT(ix);
        for (int64_t j = 0; j < ne; j++) {
            const int64_t u = edges[j];
            if (local[u] < 0) {
                if (nn == cap) {
                    cap *= 2;
                    nodes = realloc(nodes, sizeof(int64_t) * (size_t)cap);
                    T_ASSERT(nodes);
                }
                local[u] = nn;
                nodes[nn++] = u;
            }
            ix[j] = (int32_t)local[u];
        }
        for (int64_t i = 0; i < nn; i++) local[nodes[i]] = -1;
        h.b[l].num_dst = nf;
        h.b[l].num_src = nn;
        h.b[l].num_edges = ne;
        h.indptr[l] = ip;
        h.indices[l] = ix;
        free(edges);
    }
    h.nodes = nodes;
    h.num_nodes = nn;
    free(local);
    return h;
}

static inline host_mb reference(const graph *g, const int *fanouts, int L, int replace,
                                uint64_t seed, int64_t epoch, int64_t batch, const int64_t *seeds,
                                int64_t n) {
    return reference_biased(g, fanouts, L, replace, NULL, 1, seed, epoch, batch, seeds, n);
}

/* ------------------------------------------------------------------ invariants */

static inline int64_t find_in_list(const graph *g, int64_t v, int64_t u) {
    int64_t lo = g->indptr[v], hi = g->indptr[v + 1];
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2, x = nbr(g, mid);
        if (x == u) return mid;
        if (x < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static inline void check_invariants(const graph *g, const host_mb *h, const int *fanouts,
                                    int replace, const int64_t *seeds, int64_t n) {
    const int L = h->L;
    T_EQ_INT(h->b[L - 1].num_dst, n);
    T_EQ_INT(h->b[0].num_src, h->num_nodes);
    for (int64_t i = 0; i < n; i++) T_EQ_INT(h->nodes[i], seeds[i]);
    /* Input nodes are distinct nodes of the graph. */
    unsigned char *seen = calloc((size_t)g->n, 1);
    T_ASSERT(seen);
    for (int64_t i = 0; i < h->num_nodes; i++) {
        T_ASSERT(h->nodes[i] >= 0 && h->nodes[i] < g->n);
        if (seen[h->nodes[i]]) T_FAIL_("input node %lld repeats", (long long)h->nodes[i]);
        seen[h->nodes[i]] = 1;
    }
    free(seen);
    for (int l = 0; l < L; l++) {
        const gd_block *b = &h->b[l];
        const int f = fanouts[L - 1 - l];
        if (l + 1 < L) T_EQ_INT(b->num_dst, h->b[l + 1].num_src);
        T_ASSERT(b->num_src >= b->num_dst);
        T_EQ_INT(h->indptr[l][0], 0);
        T_EQ_INT(h->indptr[l][b->num_dst], b->num_edges);
        int64_t next_new = b->num_dst;
        for (int64_t d = 0; d < b->num_dst; d++) {
            const int32_t lo = h->indptr[l][d], hi = h->indptr[l][d + 1];
            T_ASSERT(lo <= hi);
            const int64_t v = h->nodes[d], deg = g->indptr[v + 1] - g->indptr[v];
            const int64_t want = f < 0 || deg == 0 ? deg : replace ? f : (deg < f ? deg : f);
            if (hi - lo != want)
                T_FAIL_("layer %d node %lld (degree %lld, fanout %d%s): %d neighbours, "
                        "want %lld",
                        l, (long long)v, (long long)deg, f, replace ? ", replace" : "", hi - lo,
                        (long long)want);
            for (int32_t e = lo; e < hi; e++) {
                const int32_t s = h->indices[l][e];
                T_ASSERT(s >= 0 && s < b->num_src);
                if (s >= b->num_dst) {
                    /* New source nodes appear in order of first reference. */
                    T_ASSERT(s <= next_new);
                    if (s == next_new) next_new++;
                }
                if (find_in_list(g, v, h->nodes[s]) < 0)
                    T_FAIL_("layer %d: %lld is not an in-neighbour of %lld", l,
                            (long long)h->nodes[s], (long long)v);
                if (!replace)
                    for (int32_t e2 = lo; e2 < e; e2++)
                        if (h->indices[l][e2] == s)
                            T_FAIL_("layer %d: node %lld got neighbour %lld twice", l, (long long)v,
                                    (long long)h->nodes[s]);
            }
            if (want == deg && !replace) {
                /* All neighbours taken: exactly the list, in list order. */
                for (int32_t e = lo; e < hi; e++)
                    T_EQ_INT(h->nodes[h->indices[l][e]], nbr(g, g->indptr[v] + (e - lo)));
            }
        }
        T_EQ_INT(next_new, b->num_src); /* every new source node is referenced */
    }
}

typedef struct {
    int L;
    int fanouts[4];
} fanout_set;

static const fanout_set fanout_sets[] = {
    {3, {15, 10, 5}}, {2, {25, 10}}, {2, {-1, 3}}, {2, {40, 2}}, {3, {2, 0, 3}}, {1, {1}},
};
#define NUM_FANOUT_SETS ((int)(sizeof fanout_sets / sizeof fanout_sets[0]))

/* A sampler with biased draws: bitmap and factor as gd_sampler_options' bias fields. */
static inline gd_sampler_t *make_biased(gd_graph_t *gg, const fanout_set *fs,
                                        gd_sampler_backend be, int64_t max_batch, int replace,
                                        uint64_t seed, int threads, const uint8_t *bitmap,
                                        int factor) {
    gd_sampler_options o = GD_SAMPLER_OPTIONS_INIT;
    o.backend = be;
    o.max_batch = max_batch;
    o.replace = replace;
    o.seed = seed;
    o.threads = threads;
    o.bias_bitmap = bitmap;
    o.bias_factor = factor;
    gd_sampler_t *s = NULL;
    T_OK(gd_sampler_create(gg, fs->fanouts, fs->L, &o, &s));
    return s;
}

static inline gd_sampler_t *make_sampler(gd_graph_t *gg, const fanout_set *fs,
                                         gd_sampler_backend be, int64_t max_batch, int replace,
                                         uint64_t seed, int threads) {
    return make_biased(gg, fs, be, max_batch, replace, seed, threads, NULL, 0);
}

/* A bitmap of n nodes (one bit per node) with each bit set with probability permille / 1000. */
static inline uint8_t *make_bitmap(uint64_t *state, int64_t n, int permille) {
    uint8_t *b = calloc((size_t)(n + 7) / 8 + 1, 1);
    T_ASSERT(b);
    for (int64_t v = 0; v < n; v++)
        if ((int)(t_rand(state) % 1000) < permille) b[v / 8] |= (uint8_t)(1u << (v % 8));
    return b;
}

/* Bitmap densities (per mille) and factors the biased sampler tests draw from. */
static const int bias_densities[] = {0, 1000, 100, 500, 900};
static const int bias_factors[] = {2, 3, 7, 64};

/*
 * The CPU sampler against the reference: on random graphs (int32 and int64 indices), every fanout
 * set, with and without replacement, samplers with 1 and 4 threads (the serial and the parallel
 * relabelling) sample full, single-seed and random-size minibatches, which must keep the block
 * invariants and equal the reference bit for bit; another minibatch index draws other neighbours.
 * biased: each configuration with a random bitmap and factor (test_sample_bias), else uniform.
 */
static inline void check_cpu_sampler(uint64_t *state, int biased) {
    for (int gi = 0; gi < 4; gi++) {
        const gd_dtype dt = gi % 2 ? GD_DTYPE_INT64 : GD_DTYPE_INT32;
        const int64_t n = gi < 2 ? 3000 : 30000;
        graph g = make_graph(state, n, gi < 2 ? 12 : 20, dt);
        gd_graph_t *gg = NULL;
        T_OK(gd_graph_create(g.n, g.indptr, g.indices, g.dtype, NULL, &gg));
        for (int fi = 0; fi < NUM_FANOUT_SETS; fi++) {
            const fanout_set *fs = &fanout_sets[fi];
            if (n > 3000 && fi != 1 && fi != 3) continue; /* large graph: the big hops only */
            for (int replace = 0; replace < 2; replace++) {
                const int dens = bias_densities[t_rand(state) % 5];
                const int factor = biased ? bias_factors[t_rand(state) % 4] : 0;
                uint8_t *bitmap = biased ? make_bitmap(state, g.n, dens) : NULL;
                const uint64_t seed = t_rand(state);
                const int64_t max_batch = n > 3000 ? 700 : 200;
                gd_sampler_t *s1 = make_biased(gg, fs, GD_SAMPLER_CPU, max_batch, replace, seed, 1,
                                               bitmap, factor);
                gd_sampler_t *s4 = make_biased(gg, fs, GD_SAMPLER_CPU, max_batch, replace, seed, 4,
                                               bitmap, factor);
                char what[2][160];
                for (int th = 0; th < 2; th++)
                    snprintf(what[th], sizeof what[th],
                             "reference vs CPU (%d thread%s, fanouts set %d, replace %d, factor "
                             "%d, bitmap density %d/1000)",
                             th ? 4 : 1, th ? "s" : "", fi, replace, factor, biased ? dens : 0);
                gd_minibatch_t *m1, *m4;
                T_OK(gd_minibatch_create(s1, &m1));
                T_OK(gd_minibatch_create(s4, &m4));
                int64_t *seeds = malloc(sizeof(int64_t) * (size_t)max_batch);
                T_ASSERT(seeds);
                const int64_t sizes[3] = {max_batch, 1,
                                          1 + (int64_t)(t_rand(state) % (uint64_t)max_batch)};
                for (int k = 0; k < 3; k++) {
                    const int64_t nb = sizes[k], epoch = (int64_t)(t_rand(state) % 5),
                                  batch = (int64_t)(t_rand(state) % 1000);
                    make_seeds(state, g.n, nb, seeds);
                    T_OK(gd_sample(s1, seeds, nb, 0, epoch, batch, NULL, m1));
                    T_OK(gd_sample(s4, seeds, nb, 0, epoch, batch, NULL, m4));
                    host_mb a = to_host(m1), b = to_host(m4);
                    host_mb r = reference_biased(&g, fs->fanouts, fs->L, replace, bitmap, factor,
                                                 seed, epoch, batch, seeds, nb);
                    check_invariants(&g, &a, fs->fanouts, replace, seeds, nb);
                    expect_equal(&r, &a, what[0]);
                    expect_equal(&r, &b, what[1]);
                    host_mb_free(&a);
                    host_mb_free(&b);
                    host_mb_free(&r);
                }
                /*
                 * Other minibatch indices draw other neighbours (a node of high degree). One
                 * other index alone may draw the same: with fanout 1 and degree 5 one time in
                 * five (a seed did), so 16 are tried and one of them must differ.
                 */
                seeds[0] = 0;
                T_OK(gd_sample(s1, seeds, 1, 0, 0, 0, NULL, m1));
                host_mb a = to_host(m1);
                const int64_t deg0 = g.indptr[1] - g.indptr[0];
                if (fs->fanouts[0] > 0 && deg0 > 4 * fs->fanouts[0] && a.b[a.L - 1].num_edges > 0) {
                    int all_same = 1;
                    for (int64_t other = 1; other <= 16 && all_same; other++) {
                        T_OK(gd_sample(s1, seeds, 1, 0, 0, other, NULL, m1));
                        host_mb b = to_host(m1);
                        int same = a.b[a.L - 1].num_edges == b.b[b.L - 1].num_edges;
                        for (int64_t e = 0; same && e < a.b[a.L - 1].num_edges; e++)
                            same = a.nodes[a.indices[a.L - 1][e]] == b.nodes[b.indices[b.L - 1][e]];
                        all_same = same;
                        host_mb_free(&b);
                    }
                    T_ASSERT(!all_same);
                }
                host_mb_free(&a);
                free(seeds);
                free(bitmap);
                gd_minibatch_destroy(m1);
                gd_minibatch_destroy(m4);
                gd_sampler_destroy(s1);
                gd_sampler_destroy(s4);
            }
        }
        gd_graph_destroy(gg);
        free_graph(&g);
    }
}


#endif
