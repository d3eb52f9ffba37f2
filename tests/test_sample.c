/*
 * Neighbour sampler, CPU side. On fresh random graphs with isolated nodes and hubs, int32 and
 * int64 indices, with and without replacement, fanouts from 0 to all (-1) and past a warp:
 *   - every block is well formed (indptr, local ids in range, destination nodes the prefix of
 *     the source nodes, layers chained, new source nodes in first-appearance order), every
 *     sampled neighbour is a real in-neighbour, there are no duplicates without replacement,
 *     the fanout is respected and a node of degree <= fanout gets all its neighbours;
 *   - the CPU sampler equals an independent statement of the determinism contract
 *     (sample_util.h, from docs/sampling.md), bit for bit, with 1 and 4 threads (the serial
 *     and the parallel relabelling);
 *   - draws are uniform: chi-square over the neighbours of a 200-neighbour node, over the 35
 *     3-subsets of a 7-neighbour node (Floyd's algorithm), with replacement, and with more
 *     draws than a warp has lanes;
 *   - the epoch iterator is a permutation, deterministic per (seed, epoch);
 *   - the link ceiling's read plan (sample/read_plan.h) lists, for every frontier node of every
 *     hop in node order, reads that give exactly the neighbours the sampler took: the scattered
 *     positions, or the whole list by the CUDA sampler's rule;
 *   - argument errors and allocation faults fail cleanly without leaks.
 * The CUDA sampler is compared with this one by test_sample_cuda.
 */
#include "sample/read_plan.h"
#include "sample_util.h"

/* ------------------------------------------------------------------ uniformity */

/* A graph where node 0 has in-neighbours 1..deg and nothing else has any. */
static void star(int64_t deg, int64_t **indptr, int32_t **indices) {
    *indptr = calloc((size_t)deg + 2, sizeof(int64_t));
    *indices = malloc(sizeof(int32_t) * (size_t)deg);
    T_ASSERT(*indptr && *indices);
    for (int64_t v = 1; v <= deg + 1; v++) (*indptr)[v] = deg;
    for (int64_t i = 0; i < deg; i++) (*indices)[i] = (int32_t)(i + 1);
}

/*
 * Chi-square statistics against thresholds at p ~ 1e-4 (Wilson-Hilferty), so that a correct sampler
 * fails about once in ten thousand runs.
 */
static void check_uniformity(uint64_t *state) {
    struct {
        int64_t deg;
        int fanout, replace, subsets;
        int64_t trials;
        double threshold;
    } cases[] = {
        {200, 10, 0, 0, 4000, 282.0}, /* 199 degrees of freedom */
        {50, 10, 1, 0, 2000, 95.0},   /* 49 */
        {7, 3, 0, 1, 7000, 74.0},     /* 34: the 35 subsets of 3 out of 7 */
        {64, 40, 0, 0, 1000, 108.0},  /* 63: more draws than a warp has lanes */
    };
    for (int c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++) {
        int64_t *indptr;
        int32_t *indices;
        star(cases[c].deg, &indptr, &indices);
        gd_graph_t *gg;
        T_OK(gd_graph_create(cases[c].deg + 1, indptr, indices, GD_DTYPE_INT32, NULL, &gg));
        fanout_set fs = {1, {cases[c].fanout}};
        gd_sampler_t *s =
            make_sampler(gg, &fs, GD_SAMPLER_CPU, 1, cases[c].replace, t_rand(state), 1);
        gd_minibatch_t *mb;
        T_OK(gd_minibatch_create(s, &mb));
        const int64_t cells = cases[c].subsets ? 128 : cases[c].deg;
        int64_t *count = calloc((size_t)cells, sizeof(int64_t));
        T_ASSERT(count);
        const int64_t seed0 = 0;
        const int64_t epoch = (int64_t)(t_rand(state) % 100);
        for (int64_t t = 0; t < cases[c].trials; t++) {
            T_OK(gd_sample(s, &seed0, 1, 0, epoch, t, NULL, mb));
            gd_block b;
            const int64_t *ids;
            int64_t nn;
            T_OK(gd_minibatch_block(mb, 0, &b));
            T_OK(gd_minibatch_input_nodes(mb, &ids, &nn));
            T_EQ_INT(b.num_edges, cases[c].fanout);
            if (cases[c].subsets) {
                unsigned mask = 0;
                for (int64_t e = 0; e < b.num_edges; e++) mask |= 1u << (ids[b.indices[e]] - 1);
                count[mask]++;
            } else {
                for (int64_t e = 0; e < b.num_edges; e++) count[ids[b.indices[e]] - 1]++;
            }
        }
        double chi2 = 0.0;
        int64_t k = 0;
        const double expect =
            cases[c].subsets ? (double)cases[c].trials / 35.0
                             : (double)cases[c].trials * cases[c].fanout / (double)cases[c].deg;
        for (int64_t i = 0; i < cells; i++) {
            if (cases[c].subsets && __builtin_popcount((unsigned)i) != 3) {
                T_EQ_INT(count[i], 0);
                continue;
            }
            chi2 += (count[i] - expect) * (count[i] - expect) / expect;
            k++;
        }
        /* Without replacement the counts vary less than multinomial ones, by (D - k) / (D - 1):
         * scaled back, the statistic follows chi-square with D - 1 degrees of freedom. */
        if (!cases[c].subsets && !cases[c].replace)
            chi2 *= (double)(cases[c].deg - 1) / (double)(cases[c].deg - cases[c].fanout);
        fprintf(stderr,
                "uniformity: degree %lld, fanout %d%s%s: chi2 %.1f over %lld cells "
                "(threshold %.0f)\n",
                (long long)cases[c].deg, cases[c].fanout, cases[c].replace ? ", replace" : "",
                cases[c].subsets ? ", subsets" : "", chi2, (long long)k, cases[c].threshold);
        if (!(chi2 < cases[c].threshold)) T_FAIL_("draws are not uniform: chi2 %.1f", chi2);
        free(count);
        gd_minibatch_destroy(mb);
        gd_sampler_destroy(s);
        gd_graph_destroy(gg);
        free(indptr);
        free(indices);
    }
}

/* ------------------------------------------------------------------ epochs */

static void check_seed_batches(uint64_t *state) {
    const int64_t n = 1000 + (int64_t)(t_rand(state) % 1000);
    int64_t *ids = malloc(sizeof(int64_t) * (size_t)n), *a = malloc(sizeof(int64_t) * (size_t)n),
            *b = malloc(sizeof(int64_t) * (size_t)n), nb;
    unsigned char *seen = calloc((size_t)n, 1);
    T_ASSERT(ids && a && b && seen);
    for (int64_t i = 0; i < n; i++) ids[i] = 5 * i + 3;
    const uint64_t seed = t_rand(state);
    T_OK(gd_seed_batches(ids, n, 128, seed, 7, 0, a, &nb));
    T_EQ_INT(nb, (n + 127) / 128);
    for (int64_t i = 0; i < n; i++) {
        T_ASSERT(a[i] % 5 == 3 && a[i] / 5 < n);
        T_ASSERT(!seen[a[i] / 5]);
        seen[a[i] / 5] = 1;
    }
    T_OK(gd_seed_batches(ids, n, 128, seed, 7, 1, b, &nb));
    T_EQ_INT(nb, n / 128);
    T_ASSERT(memcmp(a, b, sizeof(int64_t) * (size_t)n) == 0);
    T_OK(gd_seed_batches(ids, n, 128, seed, 8, 1, b, &nb));
    T_ASSERT(memcmp(a, b, sizeof(int64_t) * (size_t)n) != 0);
    /* In place gives the same order. */
    memcpy(b, ids, sizeof(int64_t) * (size_t)n);
    T_OK(gd_seed_batches(b, n, 128, seed, 7, 0, b, &nb));
    T_ASSERT(memcmp(a, b, sizeof(int64_t) * (size_t)n) == 0);
    T_OK(gd_seed_batches(ids, 0, 4, seed, 0, 0, NULL, &nb));
    T_EQ_INT(nb, 0);
    T_FAILS(gd_seed_batches(ids, n, 0, seed, 0, 0, a, &nb), GD_ERR_INVALID_ARG, "batch_size");
    free(ids);
    free(a);
    free(b);
    free(seen);
}

/* ------------------------------------------------------------------ errors */

static void check_api_errors(uint64_t *state) {
    graph g = make_graph(state, 500, 6, GD_DTYPE_INT32);
    gd_graph_t *gg = NULL;
    gd_sampler_t *s = NULL, *s2 = NULL;
    gd_minibatch_t *mb = NULL, *mb2 = NULL;
    gd_placement p;
    T_OK(gd_placement_parse("pinned", &p));
    T_EQ_INT(p, GD_PLACE_PINNED);
    T_EQ_STR(gd_placement_name(GD_PLACE_GPU), "gpu");
    T_FAILS(gd_placement_parse("device", &p), GD_ERR_INVALID_ARG, "device");
    T_OK(gd_graph_create(g.n, g.indptr, g.indices, g.dtype, NULL, &gg));
    gd_graph_info gi = GD_GRAPH_INFO_INIT;
    T_OK(gd_graph_get_info(gg, &gi));
    T_EQ_INT(gi.num_edges, g.e);
    {
        int64_t maxd = 0;
        for (int64_t v = 0; v < g.n; v++)
            if (g.indptr[v + 1] - g.indptr[v] > maxd) maxd = g.indptr[v + 1] - g.indptr[v];
        T_EQ_INT(gi.max_degree, maxd);
        T_ASSERT(maxd > 150);
    }
    T_ASSERT(gi.indices_dtype == GD_DTYPE_INT32);
    /* A graph without a GPU list cache holds no list there, whatever the node. */
    T_EQ_INT(gd_graph_is_cached(gg, 0), 0);
    T_EQ_INT(gd_graph_is_cached(gg, g.n - 1), 0);
    T_EQ_INT(gd_graph_is_cached(gg, -1), 0);
    T_EQ_INT(gd_graph_is_cached(gg, g.n), 0);
    T_EQ_INT(gd_graph_is_cached(NULL, 0), 0);
    int fan[3] = {5, 5, 5};
    gd_sampler_options o = GD_SAMPLER_OPTIONS_INIT;
    o.max_batch = 16;
    T_FAILS(gd_sampler_create(gg, fan, 0, &o, &s), GD_ERR_INVALID_ARG, "layers");
    T_FAILS(gd_sampler_create(gg, fan, GD_SAMPLER_MAX_LAYERS + 1, &o, &s), GD_ERR_INVALID_ARG,
            "layers");
    fan[1] = -2;
    T_FAILS(gd_sampler_create(gg, fan, 3, &o, &s), GD_ERR_INVALID_ARG, "fanout -2");
    fan[1] = 5;
    o.size = 3;
    T_FAILS(gd_sampler_create(gg, fan, 3, &o, &s), GD_ERR_INVALID_ARG, "GD_SAMPLER_OPTIONS_INIT");
    o.size = sizeof o;
    /* The read schedule: one of gd_sample_reads, kept by the sampler; options of a caller built
     * before the field existed mean the default. */
    o.sort_reads = 2;
    T_FAILS(gd_sampler_create(gg, fan, 3, &o, &s), GD_ERR_INVALID_ARG, "sort_reads 2");
    o.sort_reads = GD_SAMPLE_READS_SORTED;
    T_OK(gd_sampler_create(gg, fan, 3, &o, &s));
    T_EQ_INT(s->sort_reads, GD__SORT_ALWAYS);
    gd_sampler_destroy(s);
    o.sort_reads = GD_SAMPLE_READS_FRONTIER;
    o.size = offsetof(gd_sampler_options, sort_reads);
    T_OK(gd_sampler_create(gg, fan, 3, &o, &s));
    T_EQ_INT(s->sort_reads, GD__SORT_AUTO);
    gd_sampler_destroy(s);
    s = NULL;
    o.sort_reads = GD_SAMPLE_READS_AUTO;
    o.size = sizeof o;
    /* A fanout of all neighbours over many hops can overflow int32 local ids. */
    {
        gd_sampler_options big = o;
        big.max_batch = 1 << 20;
        big.replace = 1;
        int huge[2] = {1 << 23, 1 << 23};
        T_FAILS(gd_sampler_create(gg, huge, 2, &big, &s), GD_ERR_RANGE, "int32");
    }
    T_OK(gd_sampler_create(gg, fan, 3, &o, &s));
    T_OK(gd_sampler_create(gg, fan, 3, &o, &s2));
    gd_sampler_info si = GD_SAMPLER_INFO_INIT;
    T_OK(gd_sampler_get_info(s, &si));
    T_EQ_INT(si.num_layers, 3);
    T_ASSERT(si.max_input_nodes <= 500 + 16 && si.max_input_nodes >= 16);
    T_OK(gd_minibatch_create(s, &mb));
    T_OK(gd_minibatch_create(s2, &mb2));
    gd_block b;
    T_FAILS(gd_minibatch_block(mb, 0, &b), GD_ERR_INVALID_ARG, "nothing was sampled");
    int64_t seeds[20];
    make_seeds(state, g.n, 20, seeds);
    T_FAILS(gd_sample(s, seeds, 17, 0, 0, 0, NULL, mb), GD_ERR_RANGE, "max_batch of 16");
    T_FAILS(gd_sample(s, seeds, 4, 0, 0, 0, NULL, mb2), GD_ERR_INVALID_ARG, "another sampler");
    T_FAILS(gd_sample(s, seeds, 4, 1, 0, 0, NULL, mb), GD_ERR_INVALID_ARG, "seeds_on_device");
    T_FAILS(gd_sample(s, seeds, -1, 0, 0, 0, NULL, mb), GD_ERR_INVALID_ARG, "negative");
    seeds[2] = 500;
    T_FAILS(gd_sample(s, seeds, 4, 0, 0, 0, NULL, mb), GD_ERR_RANGE, "seed 500 at position 2");
    seeds[2] = seeds[0];
    T_FAILS(gd_sample(s, seeds, 4, 0, 0, 0, NULL, mb), GD_ERR_INVALID_ARG, "positions 0 and 2");
    T_FAILS(gd_minibatch_block(mb, 0, &b), GD_ERR_INVALID_ARG, "failed");
    make_seeds(state, g.n, 20, seeds);
    T_OK(gd_sample(s, seeds, 0, 0, 0, 0, NULL, mb));
    for (int l = 0; l < 3; l++) {
        T_OK(gd_minibatch_block(mb, l, &b));
        T_EQ_INT(b.num_dst, 0);
        T_EQ_INT(b.num_edges, 0);
    }
    T_OK(gd_sample(s, seeds, 16, 0, 0, 0, NULL, mb));
    T_FAILS(gd_minibatch_block(mb, 3, &b), GD_ERR_RANGE, "layer 3");
    T_OK(gd_sampler_check_errors(s));
    /* Samplers the build or the placement cannot serve. */
    o.backend = GD_SAMPLER_CUDA;
    {
        gd_sampler_t *sc = NULL;
        T_FAILS(gd_sampler_create(gg, fan, 3, &o, &sc), GD_ERR_INVALID_ARG, "not pinned");
    }
    gd_minibatch_destroy(mb);
    gd_minibatch_destroy(mb2);
    gd_sampler_destroy(s);
    gd_sampler_destroy(s2);
    gd_graph_destroy(gg);
    /* A decreasing indptr is refused. */
    {
        int64_t bad_ip[4] = {0, 2, 1, 3};
        int32_t bad_ix[3] = {0, 1, 2};
        T_FAILS(gd_graph_create(3, bad_ip, bad_ix, GD_DTYPE_INT32, NULL, &gg), GD_ERR_FORMAT,
                "node 1");
    }
    if (gd_device_count() == 0) {
        gd_graph_options go = GD_GRAPH_OPTIONS_INIT;
        go.indices_placement = GD_PLACE_GPU;
        T_FAILS(gd_graph_create(g.n, g.indptr, g.indices, g.dtype, &go, &gg), GD_ERR_NO_DEVICE,
                "GPU");
        go.indices_placement = GD_PLACE_PINNED;
        T_FAILS(gd_graph_create(g.n, g.indptr, g.indices, g.dtype, &go, &gg), GD_ERR_NO_DEVICE,
                "GPU");
    }
    free_graph(&g);
}

/* Every allocation of graph, sampler and minibatch creation fails once, cleanly. */
typedef struct {
    int64_t node, pos;
} node_pos;

static int cmp_node_pos(const void *a, const void *b) {
    const int64_t x = ((const node_pos *)a)->node, y = ((const node_pos *)b)->node;
    return (x > y) - (x < y);
}

/* The plan items [*at, ...) of minibatch h against its blocks; advances *at past them. */
static void check_plan_minibatch(const graph *g, const host_mb *h, const fanout_set *fs,
                                 int replace, const gd__read_plan *plan, int64_t *at,
                                 int64_t *edges) {
    const int64_t eb = (int64_t)gd_dtype_size(g->dtype);
    for (int hop = 0; hop < fs->L; hop++) {
        const gd_block *b = &h->b[fs->L - 1 - hop];
        const int32_t *bip = h->indptr[fs->L - 1 - hop], *bix = h->indices[fs->L - 1 - hop];
        const int fanout = fs->fanouts[hop];
        const int lanes = fanout < 0 || fanout > 16 ? 32 : fanout > 8 ? 16 : 8;
        node_pos *order = malloc(sizeof *order * (size_t)(b->num_dst + 1));
        T_ASSERT(order);
        for (int64_t i = 0; i < b->num_dst; i++) order[i] = (node_pos){h->nodes[i], i};
        qsort(order, (size_t)b->num_dst, sizeof *order, cmp_node_pos);
        T_ASSERT(*at + b->num_dst <= plan->num_items);
        for (int64_t r = 0; r < b->num_dst; r++) {
            const gd__read_item *it = &plan->items[*at + r];
            const int64_t i = order[r].pos, v = order[r].node;
            const int64_t start = g->indptr[v], deg = g->indptr[v + 1] - start;
            const int64_t cnt = bip[i + 1] - bip[i];
            const int32_t *took = bix + bip[i];
            T_EQ_INT(it->node, v);
            T_EQ_INT(it->start, start);
            T_EQ_INT(it->lanes, lanes);
            *edges += cnt;
            if (cnt == 0) {
                T_EQ_INT(it->kind, GD__READ_INDPTR);
                T_EQ_INT(it->len, 0);
                continue;
            }
            const int all = fanout < 0 || (!replace && cnt == deg);
            const int64_t per_pick = plan->whole_bytes_per_pick ? plan->whole_bytes_per_pick : 32;
            if (all || deg * eb <= per_pick * (cnt < lanes ? cnt : lanes)) {
                T_EQ_INT(it->kind, GD__READ_WHOLE);
                T_EQ_INT(it->len, all ? cnt : deg);
                if (all)
                    for (int64_t j = 0; j < cnt; j++)
                        T_EQ_INT(nbr(g, start + j), h->nodes[took[j]]);
                continue;
            }
            T_EQ_INT(it->kind, GD__READ_SCATTERED);
            T_EQ_INT(it->len, cnt);
            T_ASSERT(it->pos >= 0 && it->pos + cnt <= plan->num_positions);
            for (int64_t j = 0; j < cnt; j++) {
                const int64_t q = plan->positions[it->pos + j];
                T_ASSERT(q >= 0 && q < deg);
                T_EQ_INT(nbr(g, start + q), h->nodes[took[j]]);
            }
        }
        *at += b->num_dst;
        free(order);
    }
}

/* The read plan of the link ceiling against the sampler's own minibatches. */
static void check_read_plan(uint64_t *state) {
    for (int di = 0; di < 2; di++) {
        const gd_dtype dt = di ? GD_DTYPE_INT64 : GD_DTYPE_INT32;
        graph g = make_graph(state, 3000, 12, dt);
        gd_graph_t *gg = NULL;
        T_OK(gd_graph_create(g.n, g.indptr, g.indices, g.dtype, NULL, &gg));
        int64_t seeds[200];
        for (int fi = 0; fi < NUM_FANOUT_SETS; fi++)
            for (int replace = 0; replace < 2; replace++) {
                const fanout_set *fs = &fanout_sets[fi];
                gd_sampler_t *s = make_sampler(gg, fs, GD_SAMPLER_CPU, 200, replace,
                                               t_rand(state), 1 + (int)(t_rand(state) % 3));
                gd_minibatch_t *mb;
                T_OK(gd_minibatch_create(s, &mb));
                gd__read_plan plan;
                memset(&plan, 0, sizeof plan);
                /* The sampler's rule, or another (the benchmark's --link-whole). */
                plan.whole_bytes_per_pick = (int64_t)(t_rand(state) % 2) * 128;
                int64_t at = 0, edges = 0;
                for (int k = 0; k < 2; k++) {
                    const int64_t nb = k ? 1 + (int64_t)(t_rand(state) % 200) : 200;
                    const int64_t epoch = (int64_t)(t_rand(state) % 5),
                                  batch = (int64_t)(t_rand(state) % 1000);
                    make_seeds(state, g.n, nb, seeds);
                    T_OK(gd_sample(s, seeds, nb, 0, epoch, batch, NULL, mb));
                    host_mb h = to_host(mb);
                    T_OK(gd__read_plan_add(&plan, s, mb, epoch, batch));
                    check_plan_minibatch(&g, &h, fs, replace, &plan, &at, &edges);
                    host_mb_free(&h);
                }
                T_EQ_INT(at, plan.num_items);
                T_EQ_INT(edges, plan.edges);
                T_EQ_INT(plan.minibatches, 2);
                T_ASSERT(plan.list_lines <= plan.list_sectors);
                /* A minibatch of another sampler, and a graph the GPU cannot read, are refused. */
                gd_sampler_t *other = make_sampler(gg, fs, GD_SAMPLER_CPU, 200, replace, 1, 1);
                T_FAILS(gd__read_plan_add(&plan, other, mb, 0, 0), GD_ERR_INVALID_ARG,
                        "sampled by this CPU sampler");
                double secs;
                uint64_t sum;
#ifdef GD_WITH_CUDA
                T_FAILS(gd__read_plan_replay(&plan, gg, 1, 1, &secs, &sum), GD_ERR_INVALID_ARG,
                        "readable by the GPU");
#else
                T_FAILS(gd__read_plan_replay(&plan, gg, 1, 1, &secs, &sum), GD_ERR_NO_DEVICE,
                        "without CUDA");
#endif
                gd_sampler_destroy(other);
                gd__read_plan_free(&plan);
                gd_minibatch_destroy(mb);
                gd_sampler_destroy(s);
            }
        gd_graph_destroy(gg);
        free_graph(&g);
    }
}

static void check_faults(uint64_t *state) {
    graph g = make_graph(state, 400, 6, GD_DTYPE_INT64);
    int fan[2] = {10, 4};
    gd_sampler_options o = GD_SAMPLER_OPTIONS_INIT;
    o.max_batch = 32;
    o.threads = 2;
    gd_fault_set(GD_FAULT_ALLOC, 0);
    int64_t calls = 0;
    for (int64_t k = 0;; k++) {
        gd_fault_set(GD_FAULT_ALLOC, k);
        gd_graph_t *gg = NULL;
        gd_sampler_t *s = NULL;
        gd_minibatch_t *mb = NULL;
        gd_status st = gd_graph_create(g.n, g.indptr, g.indices, g.dtype, NULL, &gg);
        if (st == GD_OK) st = gd_sampler_create(gg, fan, 2, &o, &s);
        if (st == GD_OK) st = gd_minibatch_create(s, &mb);
        if (k == 0) {
            T_OK(st);
            calls = gd_fault_calls(GD_FAULT_ALLOC);
        } else {
            T_EQ_INT(st, GD_ERR_NO_MEMORY);
            T_ASSERT(strlen(gd_last_error()) > 0);
        }
        gd_minibatch_destroy(mb);
        gd_sampler_destroy(s);
        gd_graph_destroy(gg);
        if (k == calls) break;
    }
    gd_fault_set(GD_FAULT_ALLOC, 0);
    T_ASSERT(calls >= 5);
    free_graph(&g);
}

int main(void) {
    uint64_t state = t_seed();
    check_api_errors(&state);
    check_seed_batches(&state);
    check_uniformity(&state);
    check_cpu_sampler(&state, 0);
    check_read_plan(&state);
    check_faults(&state);
    t_check_no_leaks();
    printf("CPU sampler checks passed\n");
    return 0;
}
