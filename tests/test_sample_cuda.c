/*
 * Neighbour sampler, GPU side (exits 77 without a GPU, after the CPU checks of placed list
 * caches). A graph's hot-list cache placed over 2 and 3 stores that read each other's lists
 * (train/placed.c's steps: gd__graph_list_candidates, gd__placement_compute,
 * gd__graph_cache_place, gd__graph_set_peer) samples exactly as the plain graph: CPU stores read
 * by the CPU sampler everywhere, CUDA stores (pinned graphs on the GPUs, sharing one where there
 * is one) read by the CUDA sampler on a GPU. The CUDA sampler with the graph in GPU
 * memory, in pinned host memory read over UVA, and split between the two (int32 and int64 indices,
 * narrowed or not), from host and from device seeds, two buffers queued back to back on a
 * non-blocking stream, outputs poisoned first, is compared bit for bit with the CPU sampler on
 * random graphs with isolated nodes and hubs, and its blocks checked against the graph. Samplers
 * take turns at the three read schedules (frontier order, address order by placement, address
 * order at every hop), which must all give the same minibatch. Pinned graphs with a hot
 * neighbour-list GPU cache of every size, from none to more than the graph, must too. Seed errors
 * found on the device are reported by gd_sampler_check_errors, and pinning and allocation faults
 * over creation fail cleanly. The link ceiling's replay of a read plan (sample/read_plan.h) sums
 * exactly the entries the CPU reference sums, on every placement, and a changed plan changes
 * the sum.
 */
#include "sample/read_plan.h"
#include "peer_util.h"
#include "sample_util.h"
#include "train/placement.h"

#ifdef GD_WITH_CUDA
#include "core/cuda.h"
#endif

#ifdef GD_WITH_CUDA
/* ------------------------------------------------------------------ GPU checks */

/* The read schedules (GD__SORT_*), taken in turn by the samplers made by the checks. */
static const int sort_modes[3] = {GD__SORT_AUTO, GD__SORT_NEVER, GD__SORT_ALWAYS};
static int sort_turn;

static int next_sort_mode(gd_sampler_t *s) {
    s->sort_reads = sort_modes[sort_turn++ % 3];
    return s->sort_reads;
}

static const char *sort_mode_name(int mode) {
    return mode == GD__SORT_NEVER ? "frontier order" : mode == GD__SORT_ALWAYS ? "sorted" : "auto";
}

static void check_gpu_sampler(uint64_t *state, cudaStream_t stream) {
    const gd_placement places[4][2] = {{GD_PLACE_GPU, GD_PLACE_GPU},
                                       {GD_PLACE_PINNED, GD_PLACE_PINNED},
                                       {GD_PLACE_GPU, GD_PLACE_PINNED},
                                       {GD_PLACE_PINNED, GD_PLACE_GPU}};
    for (int gi = 0; gi < 4; gi++) {
        const gd_dtype dt = gi % 2 ? GD_DTYPE_INT64 : GD_DTYPE_INT32;
        const int64_t n = gi < 2 ? 4000 : 40000;
        graph g = make_graph(state, n, gi < 2 ? 12 : 20, dt);
        gd_graph_t *host_graph;
        T_OK(gd_graph_create(g.n, g.indptr, g.indices, g.dtype, NULL, &host_graph));
        for (int pi = 0; pi < 4; pi++) {
            gd_graph_options go = GD_GRAPH_OPTIONS_INIT;
            go.indptr_placement = places[pi][0];
            go.indices_placement = places[pi][1];
            go.copy_host = (int)(t_rand(state) % 2);
            go.narrow_indices = (int)(t_rand(state) % 2);
            gd_graph_t *dg;
            T_OK(gd_graph_create(g.n, g.indptr, g.indices, g.dtype, &go, &dg));
            gd_graph_info info = GD_GRAPH_INFO_INIT;
            T_OK(gd_graph_get_info(dg, &info));
            if (dt == GD_DTYPE_INT64 && go.narrow_indices &&
                (places[pi][1] == GD_PLACE_GPU || go.copy_host))
                T_ASSERT(info.indices_dtype == GD_DTYPE_INT32);
            for (int fi = 0; fi < NUM_FANOUT_SETS; fi++) {
                const fanout_set *fs = &fanout_sets[fi];
                if (n > 4000 && fi != 0 && fi != 3) continue;
                for (int replace = 0; replace < 2; replace++) {
                    const uint64_t seed = t_rand(state);
                    const int64_t max_batch = n > 4000 ? 1024 : 300;
                    gd_sampler_t *sc =
                        make_sampler(host_graph, fs, GD_SAMPLER_CPU, max_batch, replace, seed, 2);
                    gd_sampler_t *sg =
                        make_sampler(dg, fs, GD_SAMPLER_CUDA, max_batch, replace, seed, 0);
                    const int sort_mode = next_sort_mode(sg);
                    gd_minibatch_t *mc, *mg[2];
                    T_OK(gd_minibatch_create(sc, &mc));
                    T_OK(gd_minibatch_create(sg, &mg[0]));
                    T_OK(gd_minibatch_create(sg, &mg[1]));
                    T_EQ_INT(gd_minibatch_on_device(mg[0]), 1);
                    int64_t *seeds[2], *d_seeds;
                    seeds[0] = malloc(sizeof(int64_t) * (size_t)max_batch);
                    seeds[1] = malloc(sizeof(int64_t) * (size_t)max_batch);
                    CU(cudaMalloc((void **)&d_seeds, sizeof(int64_t) * (size_t)max_batch));
                    const int64_t counts[4] = {max_batch, 0, 1,
                                               1 + (int64_t)(t_rand(state) % (uint64_t)max_batch)};
                    for (int k = 0; k < 4; k += 2) {
                        /* Two minibatches queued back to back into two buffers, poisoned first: one
                         * from host seeds, one from device seeds. */
                        int64_t nb[2] = {counts[k], counts[k + 1]}, batch[2];
                        const int64_t epoch = (int64_t)(t_rand(state) % 4);
                        for (int q = 0; q < 2; q++) {
                            make_seeds(state, g.n, nb[q], seeds[q]);
                            batch[q] = (int64_t)(t_rand(state) % 100000);
                            CU(cudaMemsetAsync(mg[q]->base, 0xA5, sg->minibatch_bytes, stream));
                        }
                        T_OK(gd_sample(sg, seeds[0], nb[0], 0, epoch, batch[0], stream, mg[0]));
                        if (nb[1] > 0)
                            CU(cudaMemcpyAsync(d_seeds, seeds[1], sizeof(int64_t) * (size_t)nb[1],
                                               cudaMemcpyHostToDevice, stream));
                        T_OK(gd_sample(sg, d_seeds, nb[1], 1, epoch, batch[1], stream, mg[1]));
                        for (int q = 0; q < 2; q++) {
                            T_OK(gd_sample(sc, seeds[q], nb[q], 0, epoch, batch[q], NULL, mc));
                            host_mb want = to_host(mc), got = to_host(mg[q]);
                            char what[192];
                            snprintf(
                                what, sizeof what,
                                "CPU vs CUDA (indptr %s, indices %s %s, fanouts set %d, "
                                "replace %d, %lld seeds, %s seeds, reads %s)",
                                gd_placement_name(places[pi][0]), gd_placement_name(places[pi][1]),
                                gd_dtype_name(info.indices_dtype), fi, replace, (long long)nb[q],
                                q ? "device" : "host", sort_mode_name(sort_mode));
                            expect_equal(&want, &got, what);
                            check_invariants(&g, &got, fs->fanouts, replace, seeds[q], nb[q]);
                            host_mb_free(&want);
                            host_mb_free(&got);
                        }
                        T_OK(gd_sampler_check_errors(sg));
                    }
                    CU(cudaFree(d_seeds));
                    free(seeds[0]);
                    free(seeds[1]);
                    gd_minibatch_destroy(mc);
                    gd_minibatch_destroy(mg[0]);
                    gd_minibatch_destroy(mg[1]);
                    gd_sampler_destroy(sc);
                    gd_sampler_destroy(sg);
                }
            }
            gd_graph_destroy(dg);
        }
        gd_graph_destroy(host_graph);
        free_graph(&g);
    }
}

/*
 * The two ways the CUDA sampler reads a list (WHOLE_LIST_BYTES_PER_PICK in sample_cuda.cu): whole,
 * with 16-byte coalesced loads into shared memory, when it spans at most 32 bytes per neighbour
 * taken (degree <= 8 x count with int32 indices, 4 x count with int64, and at most 32 lanes' worth
 * when the count exceeds the group), else entry by entry. Every node's degree is chosen around
 * those limits for the fanouts used (f - 1, f, f + 1, 4f +- 1, 8f +- 1, and the 128 / 256 window
 * limits of fanout 40 on 32 lanes), the first and the last node have lists read whole at the two
 * ends of the array, and the pinned array is adopted in place at an address that is not 16-byte
 * aligned, so the loads that would cross the array's ends fall back to single entries. All nodes
 * are seeds; the result must equal the CPU sampler and the independent reference bit for bit.
 */
static const int64_t threshold_degrees[] = {
    20,  0,   1,   2,   3,   4,   5,   6,   8,   9,   10,  11,  12,  13,  16,  19,  21, 23,
    24,  25,  32,  35,  36,  37,  39,  40,  41,  47,  48,  49,  71,  72,  73,  95,  96, 97,
    127, 128, 129, 159, 160, 161, 191, 192, 193, 255, 256, 257, 319, 320, 321, 400,
};

static graph make_threshold_graph(uint64_t *state, gd_dtype dtype, int64_t **buf_out) {
    const int64_t nd = (int64_t)(sizeof threshold_degrees / sizeof threshold_degrees[0]);
    const int64_t n = 12 * nd + 1; /* n - 1 is a multiple of nd: the last node has degree 20 */
    const size_t es = gd_dtype_size(dtype);
    graph g = {n, 0, NULL, NULL, dtype};
    g.indptr = gd_malloc(sizeof(int64_t) * (size_t)(n + 1));
    T_ASSERT(g.indptr);
    g.indptr[0] = 0;
    for (int64_t v = 0; v < n; v++) g.indptr[v + 1] = g.indptr[v] + threshold_degrees[v % nd];
    g.e = g.indptr[n];
    /* One entry of room in front: the list array starts 4 or 8 bytes past a 16-byte boundary. */
    unsigned char *buf = gd_malloc(es * (size_t)(g.e + 2));
    T_ASSERT(buf);
    T_ASSERT(((uintptr_t)buf & 15) == 0);
    g.indices = buf + es;
    /* Each list is a random set of distinct nodes in increasing order (selection sampling), as in
     * every graph the library builds: check_invariants finds a neighbour by binary search and
     * counts a repeated neighbour as a sampling error, so random unsorted lists with repeats
     * would fail it whatever the sampler does. */
    for (int64_t v = 0; v < n; v++) {
        int64_t k = g.indptr[v], need = g.indptr[v + 1] - k;
        for (int64_t u = 0; u < n && need > 0; u++) {
            if (t_rand(state) % (uint64_t)(n - u) >= (uint64_t)need) continue;
            if (dtype == GD_DTYPE_INT32)
                ((int32_t *)g.indices)[k] = (int32_t)u;
            else
                ((int64_t *)g.indices)[k] = u;
            k++;
            need--;
        }
        T_EQ_INT(need, 0);
    }
    *buf_out = (int64_t *)buf;
    return g;
}

static void check_gpu_list_reads(uint64_t *state, cudaStream_t stream) {
    static const fanout_set sets[] = {
        {2, {5, 40}}, {2, {12, -1}}, {2, {24, 9}}, {2, {40, 3}}, {1, {-1}},
    };
    for (int di = 0; di < 2; di++) {
        const gd_dtype dt = di ? GD_DTYPE_INT64 : GD_DTYPE_INT32;
        int64_t *buf;
        graph g = make_threshold_graph(state, dt, &buf);
        gd_graph_t *host_graph;
        T_OK(gd_graph_create(g.n, g.indptr, g.indices, g.dtype, NULL, &host_graph));
        int64_t *seeds = malloc(sizeof(int64_t) * (size_t)g.n);
        T_ASSERT(seeds);
        for (int pi = 0; pi < 3; pi++) {
            /* 0: GPU memory (16-byte aligned); 1: pinned in place, not 16-byte aligned at either
             * end; 2: pinned library copy, int64 narrowed. */
            gd_graph_options go = GD_GRAPH_OPTIONS_INIT;
            go.indptr_placement = GD_PLACE_GPU;
            go.indices_placement = pi == 0 ? GD_PLACE_GPU : GD_PLACE_PINNED;
            go.copy_host = pi == 2;
            go.narrow_indices = pi == 2;
            gd_graph_t *dg;
            T_OK(gd_graph_create(g.n, g.indptr, g.indices, g.dtype, &go, &dg));
            if (pi == 1) T_ASSERT((((uintptr_t)dg->d_indices) & 15) != 0);
            for (size_t fi = 0; fi < sizeof sets / sizeof sets[0]; fi++)
                for (int replace = 0; replace < 2; replace++) {
                    const uint64_t seed = t_rand(state);
                    const int64_t epoch = (int64_t)(t_rand(state) % 3),
                                  batch = (int64_t)(t_rand(state) % 1000);
                    gd_sampler_t *sc =
                        make_sampler(host_graph, &sets[fi], GD_SAMPLER_CPU, g.n, replace, seed, 1);
                    gd_sampler_t *sg =
                        make_sampler(dg, &sets[fi], GD_SAMPLER_CUDA, g.n, replace, seed, 0);
                    const int sort_mode = next_sort_mode(sg);
                    gd_minibatch_t *mc, *mg;
                    T_OK(gd_minibatch_create(sc, &mc));
                    T_OK(gd_minibatch_create(sg, &mg));
                    make_seeds(state, g.n, g.n, seeds);
                    CU(cudaMemsetAsync(mg->base, 0xA5, sg->minibatch_bytes, stream));
                    T_OK(gd_sample(sg, seeds, g.n, 0, epoch, batch, stream, mg));
                    T_OK(gd_sample(sc, seeds, g.n, 0, epoch, batch, NULL, mc));
                    host_mb want = to_host(mc), got = to_host(mg);
                    host_mb ref = reference(&g, sets[fi].fanouts, sets[fi].L, replace, seed, epoch,
                                            batch, seeds, g.n);
                    char what[192];
                    snprintf(what, sizeof what,
                             "list reads: CPU vs CUDA (indices %s %s%s, fanouts set %d, "
                             "replace %d, reads %s)",
                             pi ? "pinned" : "gpu", gd_dtype_name(dg->indices_dtype),
                             pi == 1 ? " unaligned" : "", (int)fi, replace,
                             sort_mode_name(sort_mode));
                    expect_equal(&want, &got, what);
                    expect_equal(&ref, &got, what);
                    check_invariants(&g, &got, sets[fi].fanouts, replace, seeds, g.n);
                    T_OK(gd_sampler_check_errors(sg));
                    host_mb_free(&want);
                    host_mb_free(&got);
                    host_mb_free(&ref);
                    gd_minibatch_destroy(mc);
                    gd_minibatch_destroy(mg);
                    gd_sampler_destroy(sc);
                    gd_sampler_destroy(sg);
                }
            gd_graph_destroy(dg);
        }
        free(seeds);
        gd_graph_destroy(host_graph);
        gd_free(g.indptr);
        gd_free(buf);
    }
}

/*
 * The hot neighbour-list GPU cache (gpu_cache_bytes): pinned indices, budgets from none, through
 * less than the smallest list and parts of the graph, to more than the whole graph, on random
 * graphs and on the list-read threshold graph (int32 and int64 indices, narrowed or not, adopted
 * in place unaligned or copied). The location map and the cache are read back and checked against
 * the graph (a cached list holds exact copies, every other node points at its indptr offset, the
 * cached lists do not overlap and fit the budget, a budget above the graph caches every list), and
 * every minibatch, under each read schedule, must equal the CPU sampler (and, on the threshold
 * graph, the independent reference) bit for bit. A cache with indices not pinned, or a negative
 * budget, is refused.
 */
static void check_cache_layout(const graph *g, gd_graph_t *dg, int64_t budget) {
    gd_graph_info info = GD_GRAPH_INFO_INIT;
    T_OK(gd_graph_get_info(dg, &info));
    const size_t es = gd_dtype_size(info.indices_dtype);
    T_ASSERT(info.cache_bytes <= budget);
    T_EQ_INT(info.cache_bytes, info.cache_edges * (int64_t)es);
    int64_t nonempty = 0;
    for (int64_t v = 0; v < g->n; v++) nonempty += g->indptr[v + 1] > g->indptr[v];
    if (budget >= g->e * (int64_t)es) {
        T_EQ_INT(info.cache_edges, g->e);
        T_EQ_INT(info.cache_nodes, nonempty);
    }
    if (budget < (int64_t)es) T_EQ_INT(info.cache_nodes, 0);
    T_ASSERT(dg->d_indptr != NULL && dg->d_indptr != (const int64_t *)dg->h_indptr);
    if (info.cache_nodes == 0) {
        T_ASSERT(dg->d_loc == NULL);
        for (int64_t v = 0; v < g->n; v++) T_EQ_INT(gd_graph_is_cached(dg, v), 0);
        return;
    }
    int64_t *loc = malloc(sizeof(int64_t) * (size_t)g->n);
    unsigned char *cache = malloc(es * (size_t)info.cache_edges);
    unsigned char *used = calloc((size_t)info.cache_edges, 1);
    T_ASSERT(loc && cache && used);
    CU(cudaMemcpy(loc, dg->d_loc, sizeof(int64_t) * (size_t)g->n, cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(cache, dg->d_cache, es * (size_t)info.cache_edges, cudaMemcpyDeviceToHost));
    int64_t nodes = 0, edges = 0;
    for (int64_t v = 0; v < g->n; v++) {
        const int64_t d = g->indptr[v + 1] - g->indptr[v];
        if (d == 0) continue;
        /* The public view of the cache agrees with the location map the sampler reads. */
        T_EQ_INT(gd_graph_is_cached(dg, v), (loc[v] >> GD__LOC_TIER_SHIFT) != 0);
        if ((loc[v] >> GD__LOC_TIER_SHIFT) == 0) {
            T_EQ_INT(loc[v], g->indptr[v]);
            continue;
        }
        T_EQ_INT(loc[v] >> GD__LOC_TIER_SHIFT, 1);
        const int64_t off = loc[v] & GD__LOC_OFFSET_MASK;
        T_ASSERT(off >= 0 && off + d <= info.cache_edges);
        for (int64_t k = 0; k < d; k++) {
            T_EQ_INT(used[off + k], 0);
            used[off + k] = 1;
            const int64_t got =
                es == 4 ? ((const int32_t *)cache)[off + k] : ((const int64_t *)cache)[off + k];
            T_EQ_INT(got, nbr(g, g->indptr[v] + k));
        }
        nodes++;
        edges += d;
    }
    T_EQ_INT(nodes, info.cache_nodes);
    T_EQ_INT(edges, info.cache_edges);
    free(loc);
    free(cache);
    free(used);
}

static void check_gpu_cache(uint64_t *state, cudaStream_t stream) {
    static const fanout_set sets[] = {
        {3, {15, 10, 5}}, {2, {5, 40}}, {2, {-1, 3}}, {2, {24, 9}}, {3, {2, 0, 3}},
    };
    for (int gi = 0; gi < 4; gi++) {
        const gd_dtype dt = gi % 2 ? GD_DTYPE_INT64 : GD_DTYPE_INT32;
        const int threshold = gi >= 2;
        int64_t *buf = NULL;
        graph g =
            threshold ? make_threshold_graph(state, dt, &buf) : make_graph(state, 6000, 12, dt);
        gd_graph_t *host_graph;
        T_OK(gd_graph_create(g.n, g.indptr, g.indices, g.dtype, NULL, &host_graph));
        const int64_t max_batch = threshold ? g.n : 700;
        int64_t *seeds = malloc(sizeof(int64_t) * (size_t)max_batch);
        T_ASSERT(seeds);
        const int64_t whole = g.e * (int64_t)gd_dtype_size(dt);
        const int64_t budgets[7] = {0, 3, 4 * 20, whole / 20, whole / 3, whole - 8, 2 * whole};
        for (int bi = 0; bi < 7; bi++) {
            gd_graph_options go = GD_GRAPH_OPTIONS_INIT;
            go.indptr_placement = bi % 3 == 0   ? GD_PLACE_GPU
                                  : bi % 3 == 1 ? GD_PLACE_PINNED
                                                : GD_PLACE_HOST;
            go.indices_placement = GD_PLACE_PINNED;
            go.copy_host = (int)(t_rand(state) % 2);
            go.narrow_indices = (int)(t_rand(state) % 2);
            go.gpu_cache_bytes = budgets[bi];
            gd_graph_t *dg;
            T_OK(gd_graph_create(g.n, g.indptr, g.indices, g.dtype, &go, &dg));
            gd_graph_info info = GD_GRAPH_INFO_INIT;
            T_OK(gd_graph_get_info(dg, &info));
            if (budgets[bi] > 0)
                check_cache_layout(&g, dg, budgets[bi]);
            else
                T_EQ_INT(info.cache_nodes, 0);
            for (size_t fi = 0; fi < sizeof sets / sizeof sets[0]; fi++)
                for (int replace = 0; replace < 2; replace++) {
                    const uint64_t seed = t_rand(state);
                    const int64_t epoch = (int64_t)(t_rand(state) % 3),
                                  batch = (int64_t)(t_rand(state) % 1000);
                    const int64_t nb = threshold ? g.n : 1 + (int64_t)(t_rand(state) % 700);
                    gd_sampler_t *sc = make_sampler(host_graph, &sets[fi], GD_SAMPLER_CPU,
                                                    max_batch, replace, seed, 1);
                    gd_sampler_t *sg =
                        make_sampler(dg, &sets[fi], GD_SAMPLER_CUDA, max_batch, replace, seed, 0);
                    const int sort_mode = next_sort_mode(sg);
                    gd_minibatch_t *mc, *mg;
                    T_OK(gd_minibatch_create(sc, &mc));
                    T_OK(gd_minibatch_create(sg, &mg));
                    make_seeds(state, g.n, nb, seeds);
                    CU(cudaMemsetAsync(mg->base, 0xA5, sg->minibatch_bytes, stream));
                    T_OK(gd_sample(sg, seeds, nb, 0, epoch, batch, stream, mg));
                    T_OK(gd_sample(sc, seeds, nb, 0, epoch, batch, NULL, mc));
                    host_mb want = to_host(mc), got = to_host(mg);
                    char what[224];
                    snprintf(
                        what, sizeof what,
                        "GPU cache: CPU vs CUDA (%s graph, indptr %s, indices pinned %s, "
                        "budget %lld of %lld bytes, %lld lists cached, fanouts set %d, "
                        "replace %d, reads %s)",
                        threshold ? "threshold" : "random", gd_placement_name(go.indptr_placement),
                        gd_dtype_name(info.indices_dtype), (long long)budgets[bi], (long long)whole,
                        (long long)info.cache_nodes, (int)fi, replace, sort_mode_name(sort_mode));
                    expect_equal(&want, &got, what);
                    if (threshold) {
                        host_mb ref = reference(&g, sets[fi].fanouts, sets[fi].L, replace, seed,
                                                epoch, batch, seeds, nb);
                        expect_equal(&ref, &got, what);
                        host_mb_free(&ref);
                    }
                    check_invariants(&g, &got, sets[fi].fanouts, replace, seeds, nb);
                    T_OK(gd_sampler_check_errors(sg));
                    host_mb_free(&want);
                    host_mb_free(&got);
                    gd_minibatch_destroy(mc);
                    gd_minibatch_destroy(mg);
                    gd_sampler_destroy(sc);
                    gd_sampler_destroy(sg);
                }
            gd_graph_destroy(dg);
        }
        {
            gd_graph_options go = GD_GRAPH_OPTIONS_INIT;
            gd_graph_t *bad = NULL;
            go.indptr_placement = GD_PLACE_GPU;
            go.indices_placement = GD_PLACE_GPU;
            go.gpu_cache_bytes = 1024;
            T_EQ_INT(gd_graph_create(g.n, g.indptr, g.indices, g.dtype, &go, &bad),
                     GD_ERR_INVALID_ARG);
            T_ASSERT(bad == NULL);
            go.indices_placement = GD_PLACE_PINNED;
            go.gpu_cache_bytes = -1;
            T_EQ_INT(gd_graph_create(g.n, g.indptr, g.indices, g.dtype, &go, &bad),
                     GD_ERR_INVALID_ARG);
        }
        free(seeds);
        gd_graph_destroy(host_graph);
        if (threshold) {
            gd_free(g.indptr);
            gd_free(buf);
        } else {
            free_graph(&g);
        }
    }
}

/*
 * Seeds on the device are checked by the kernels and reported by gd_sampler_check_errors, with the
 * seeds read in frontier order and sorted (a bad seed sorts after every good one, and the error
 * names its position in the minibatch, not in the schedule).
 */
static void check_gpu_seed_errors(uint64_t *state, cudaStream_t stream) {
    graph g = make_graph(state, 1000, 8, GD_DTYPE_INT32);
    gd_graph_options go = GD_GRAPH_OPTIONS_INIT;
    go.indptr_placement = GD_PLACE_PINNED;
    go.indices_placement = GD_PLACE_PINNED;
    gd_graph_t *dg;
    T_OK(gd_graph_create(g.n, g.indptr, g.indices, g.dtype, &go, &dg));
    fanout_set fs = {2, {5, 5}};
    gd_sampler_t *s = make_sampler(dg, &fs, GD_SAMPLER_CUDA, 64, 0, t_rand(state), 0);
    gd_minibatch_t *mb;
    T_OK(gd_minibatch_create(s, &mb));
    int64_t seeds[64], *d_seeds;
    CU(cudaMalloc((void **)&d_seeds, sizeof seeds));
    char needle_buf[64];
    const char *needle = needle_buf;
    snprintf(needle_buf, sizeof needle_buf, "seed %lld at position 9", (long long)(g.n + 7));
    for (int pass = 0; pass < 2; pass++) {
        s->sort_reads = pass ? GD__SORT_ALWAYS : GD__SORT_NEVER;
        make_seeds(state, g.n, 64, seeds);
        seeds[9] = seeds[3];
        CU(cudaMemcpy(d_seeds, seeds, sizeof seeds, cudaMemcpyHostToDevice));
        CU(cudaDeviceSynchronize()); /* a pageable copy may return before it lands */
        T_OK(gd_sample(s, d_seeds, 64, 1, 0, 0, stream, mb));
        T_FAILS(gd_sampler_check_errors(s), GD_ERR_INVALID_ARG, "positions 3 and 9");
        T_OK(gd_sampler_check_errors(s));
        seeds[9] = g.n + 7;
        CU(cudaMemcpy(d_seeds, seeds, sizeof seeds, cudaMemcpyHostToDevice));
        CU(cudaDeviceSynchronize()); /* a pageable copy may return before it lands */
        T_OK(gd_sample(s, d_seeds, 64, 1, 0, 0, stream, mb));
        T_FAILS(gd_sampler_check_errors(s), GD_ERR_RANGE, needle);
    }
    /* Host seeds are checked before anything is queued. */
    T_FAILS(gd_sample(s, seeds, 64, 0, 0, 0, stream, mb), GD_ERR_RANGE, needle);
    make_seeds(state, g.n, 64, seeds);
    T_OK(gd_sample(s, seeds, 64, 0, 0, 0, stream, mb));
    T_OK(gd_sampler_check_errors(s));
    gd_block b;
    T_OK(gd_minibatch_block(mb, 1, &b));
    T_EQ_INT(b.num_dst, 64);
    /* The CPU sampler cannot read a graph that lives in GPU memory only. */
    gd_graph_options gpu_only = GD_GRAPH_OPTIONS_INIT;
    gpu_only.indptr_placement = GD_PLACE_GPU;
    gpu_only.indices_placement = GD_PLACE_GPU;
    gd_graph_t *gg;
    T_OK(gd_graph_create(g.n, g.indptr, g.indices, g.dtype, &gpu_only, &gg));
    gd_sampler_options o = GD_SAMPLER_OPTIONS_INIT;
    gd_sampler_t *bad = NULL;
    T_FAILS(gd_sampler_create(gg, fs.fanouts, 2, &o, &bad), GD_ERR_INVALID_ARG, "host or pinned");
    gd_graph_destroy(gg);
    CU(cudaFree(d_seeds));
    gd_minibatch_destroy(mb);
    gd_sampler_destroy(s);
    gd_graph_destroy(dg);
    free_graph(&g);
}

/* The replay of read plans against the CPU reference of its checksum. */
static void check_read_plan_replay(uint64_t *state) {
    const gd_placement places[4][2] = {{GD_PLACE_PINNED, GD_PLACE_PINNED},
                                       {GD_PLACE_GPU, GD_PLACE_PINNED},
                                       {GD_PLACE_GPU, GD_PLACE_GPU},
                                       {GD_PLACE_PINNED, GD_PLACE_GPU}};
    static const fanout_set sets[] = {{3, {15, 10, 5}}, {2, {40, 2}}, {2, {-1, 3}}};
    for (int gi = 0; gi < 3; gi++) {
        int64_t *buf = NULL;
        /* 2: lists of every length around the whole-list threshold, the array not 16-byte
         * aligned at either end (pinned in place). */
        graph g = gi < 2 ? make_graph(state, 20000, 16, gi ? GD_DTYPE_INT64 : GD_DTYPE_INT32)
                         : make_threshold_graph(state, GD_DTYPE_INT32, &buf);
        gd_graph_t *hg;
        T_OK(gd_graph_create(g.n, g.indptr, g.indices, g.dtype, NULL, &hg));
        int64_t *seeds = malloc(sizeof(int64_t) * 256);
        T_ASSERT(seeds);
        for (int fi = 0; fi < 3; fi++)
            for (int replace = 0; replace < 2; replace++) {
                gd_sampler_t *s = make_sampler(hg, &sets[fi], GD_SAMPLER_CPU, 256, replace,
                                               t_rand(state), 2);
                gd_minibatch_t *mb;
                T_OK(gd_minibatch_create(s, &mb));
                gd__read_plan plan;
                memset(&plan, 0, sizeof plan);
                for (int k = 0; k < 3; k++) {
                    const int64_t nb = 1 + (int64_t)(t_rand(state) % (g.n < 256 ? g.n : 256));
                    make_seeds(state, g.n, nb, seeds);
                    T_OK(gd_sample(s, seeds, nb, 0, 1, k, NULL, mb));
                    T_OK(gd__read_plan_add(&plan, s, mb, 1, k));
                }
                const uint64_t sums[2] = {gd__read_plan_checksum(&plan, hg, 0),
                                          gd__read_plan_checksum(&plan, hg, 1)};
                T_ASSERT(sums[0] != sums[1]);
                for (int pi = 0; pi < 4; pi++) {
                    gd_graph_options go = GD_GRAPH_OPTIONS_INIT;
                    go.indptr_placement = places[pi][0];
                    go.indices_placement = places[pi][1];
                    go.narrow_indices = 0; /* the plan's reads are of the host graph's width */
                    gd_graph_t *dg;
                    T_OK(gd_graph_create(g.n, g.indptr, g.indices, g.dtype, &go, &dg));
                    for (int ri = 0; ri < 2; ri++) {
                        double secs = 0;
                        uint64_t sum = 0;
                        T_OK(gd__read_plan_replay(&plan, dg, ri, 2, &secs, &sum));
                        if (sum != sums[ri])
                            T_FAIL_("replay on placement %d (indptr read: %d), fanouts %d, "
                                    "replace %d: sum %llx, CPU %llx",
                                    pi, ri, fi, replace, (unsigned long long)sum,
                                    (unsigned long long)sums[ri]);
                        T_ASSERT(secs > 0);
                    }
                    gd_graph_destroy(dg);
                }
                /* Two items swapped: each is mixed with the other's key, so the sum changes,
                 * on the GPU as on the CPU. */
                int64_t a = -1, b = -1;
                for (int64_t i = 0; i < plan.num_items && b < 0; i++)
                    if (plan.items[i].len > 0 && plan.items[i].lanes == plan.items[0].lanes) {
                        if (a < 0)
                            a = i;
                        else if (plan.items[i].start != plan.items[a].start)
                            b = i;
                    }
                if (b >= 0) {
                    const gd__read_item t = plan.items[a];
                    plan.items[a] = plan.items[b];
                    plan.items[b] = t;
                    const uint64_t changed = gd__read_plan_checksum(&plan, hg, 0);
                    T_ASSERT(changed != sums[0]);
                    gd_graph_options go = GD_GRAPH_OPTIONS_INIT;
                    go.indptr_placement = GD_PLACE_GPU;
                    go.indices_placement = GD_PLACE_PINNED;
                    gd_graph_t *dg;
                    T_OK(gd_graph_create(g.n, g.indptr, g.indices, g.dtype, &go, &dg));
                    double secs;
                    uint64_t sum;
                    T_OK(gd__read_plan_replay(&plan, dg, 0, 1, &secs, &sum));
                    T_EQ_U64(sum, changed);
                    gd_graph_destroy(dg);
                }
                gd__read_plan_free(&plan);
                gd_minibatch_destroy(mb);
                gd_sampler_destroy(s);
            }
        /* A plan made for another graph is refused. */
        {
            graph o = make_graph(state, 500, 4, g.dtype);
            gd_graph_t *og;
            gd_graph_options go = GD_GRAPH_OPTIONS_INIT;
            go.indptr_placement = GD_PLACE_GPU;
            go.indices_placement = GD_PLACE_GPU;
            T_OK(gd_graph_create(o.n, o.indptr, o.indices, o.dtype, &go, &og));
            gd_sampler_t *s = make_sampler(hg, &sets[0], GD_SAMPLER_CPU, 256, 0, 5, 1);
            gd_minibatch_t *mb;
            T_OK(gd_minibatch_create(s, &mb));
            gd__read_plan plan;
            memset(&plan, 0, sizeof plan);
            make_seeds(state, g.n, 16, seeds);
            T_OK(gd_sample(s, seeds, 16, 0, 0, 0, NULL, mb));
            T_OK(gd__read_plan_add(&plan, s, mb, 0, 0));
            double secs;
            uint64_t sum;
            T_FAILS(gd__read_plan_replay(&plan, og, 0, 1, &secs, &sum), GD_ERR_INVALID_ARG,
                    "another graph");
            gd__read_plan_free(&plan);
            gd_minibatch_destroy(mb);
            gd_sampler_destroy(s);
            gd_graph_destroy(og);
            free_graph(&o);
        }
        free(seeds);
        gd_graph_destroy(hg);
        if (buf) {
            gd_free(g.indptr);
            gd_free(buf);
        } else {
            free_graph(&g);
        }
    }
}

/* Pinning and allocation faults over pinned placement, CUDA sampler and minibatch creation. */
static void check_gpu_faults(uint64_t *state) {
    graph g = make_graph(state, 300, 6, GD_DTYPE_INT64);
    int fan[2] = {10, 4};
    gd_sampler_options o = GD_SAMPLER_OPTIONS_INIT;
    o.backend = GD_SAMPLER_CUDA;
    o.max_batch = 32;
    gd_graph_options go = GD_GRAPH_OPTIONS_INIT;
    go.indptr_placement = GD_PLACE_GPU;
    go.indices_placement = GD_PLACE_PINNED;
    go.copy_host = 1;
    for (int kind = 0; kind < 2; kind++) {
        const gd_fault_kind fk = kind ? GD_FAULT_PIN : GD_FAULT_ALLOC;
        int64_t calls = 0;
        for (int64_t k = 0;; k++) {
            gd_fault_set(fk, k);
            gd_graph_t *gg = NULL;
            gd_sampler_t *s = NULL;
            gd_minibatch_t *mb = NULL;
            gd_status st = gd_graph_create(g.n, g.indptr, g.indices, g.dtype, &go, &gg);
            if (st == GD_OK) st = gd_sampler_create(gg, fan, 2, &o, &s);
            if (st == GD_OK) st = gd_minibatch_create(s, &mb);
            if (k == 0) {
                T_OK(st);
                calls = gd_fault_calls(fk);
            } else {
                T_ASSERT(st == (kind ? GD_ERR_PIN : GD_ERR_NO_MEMORY));
            }
            gd_minibatch_destroy(mb);
            gd_sampler_destroy(s);
            gd_graph_destroy(gg);
            if (k == calls) break;
        }
        gd_fault_set(fk, 0);
        T_ASSERT(calls >= 2);
    }
    free_graph(&g);
}
#endif

/* ------------------------------------------- a list cache placed over several stores (CPU, GPU) */

#define PLACED_MAX 3

static double unit_rand(uint64_t *s) {
    return (double)(t_rand(s) >> 11) * 0x1.0p-53;
}

/* Per graph g: the tier a list v should be read from, as tier.h's placed build promises. */
static int expected_tier(const gd__placement *p, const int64_t *cand_of, int g, int64_t v,
                         int *peer) {
    const int64_t i = cand_of[v];
    *peer = -1;
    if (i < 0 || p->holders[i] == 0) return GD__TIER_HOST;
    if (p->holders[i] >> g & 1) return GD__TIER_GPU_CACHE;
    *peer = __builtin_ctz(p->holders[i]); /* the first peer that holds it */
    return GD__TIER_PEER;
}

/* Graph g's map agrees with the placement; returns the lists it reads from peers. */
static int64_t check_placed_map(const graph *gr, gd_graph_t *dg, const gd__placement *p,
                                const int64_t *cand_of, int g, int cuda) {
    const int64_t *map = NULL;
    int64_t *copy = NULL, from_peers = 0;
    if (dg->store && dg->store->loc) {
        map = dg->store->loc;
#ifdef GD_WITH_CUDA
        if (cuda) {
            copy = malloc(sizeof(int64_t) * (size_t)gr->n);
            T_ASSERT(copy);
            CU(cudaMemcpy(copy, map, sizeof(int64_t) * (size_t)gr->n, cudaMemcpyDeviceToHost));
            map = copy;
        }
#endif
    }
    T_ASSERT(cuda || !map || dg->store->device < 0);
    for (int64_t v = 0; v < gr->n; v++) {
        if (gr->indptr[v + 1] == gr->indptr[v]) continue;
        int peer;
        const int tier = expected_tier(p, cand_of, g, v, &peer);
        const int64_t loc = map ? map[v] : gd__loc_make(GD__TIER_HOST, gr->indptr[v]);
        T_EQ_INT(gd__loc_tier(loc), tier);
        T_EQ_INT(gd_graph_is_cached(dg, v), tier == GD__TIER_GPU_CACHE);
        if (tier == GD__TIER_HOST) T_EQ_INT(loc, gr->indptr[v]);
        if (tier == GD__TIER_PEER) T_EQ_INT(gd__loc_peer(loc), peer);
        from_peers += tier == GD__TIER_PEER;
    }
    free(copy);
    return from_peers;
}

/*
 * Poison, in graph g's own copy of the lists, every list that a cache (its own or a peer's)
 * serves, so that a sampler reading one at home instead draws ids out of range.
 */
static void poison_cached(const graph *gr, gd_graph_t *dg, const gd__placement *p,
                          const int64_t *cand_of, int g) {
    const int is32 = dg->indices_dtype == GD_DTYPE_INT32;
    for (int64_t v = 0; v < gr->n; v++) {
        int peer;
        if (expected_tier(p, cand_of, g, v, &peer) == GD__TIER_HOST) continue;
        for (int64_t k = gr->indptr[v]; k < gr->indptr[v + 1]; k++) {
            if (is32)
                ((int32_t *)dg->h_indices)[k] = (int32_t)(gr->n + 7);
            else
                ((int64_t *)dg->h_indices)[k] = gr->n + 7;
        }
    }
}

/*
 * G graphs over gr's lists, each over its own copy of them: host graphs (CPU stores) over
 * copies[g], or pinned graphs (a library copy) on the contexts' GPUs.
 */
static void make_placed_graphs(const graph *gr, int G, int cuda, gd_context_t **ctx,
                               uint64_t *state, void **copies, gd_graph_t **out) {
    const size_t bytes = gd_dtype_size(gr->dtype) * (size_t)gr->e;
    for (int g = 0; g < G; g++) {
        gd_graph_options go = GD_GRAPH_OPTIONS_INIT;
        copies[g] = NULL;
        if (!cuda) {
            copies[g] = malloc(bytes + 1);
            T_ASSERT(copies[g]);
            memcpy(copies[g], gr->indices, bytes);
        } else {
            go.context = ctx[g];
            go.indptr_placement = GD_PLACE_GPU;
            go.indices_placement = GD_PLACE_PINNED;
            go.copy_host = 1;
            /* Now and then a one-GPU cache first, which the placed one replaces. */
            go.gpu_cache_bytes = t_rand(state) % 2 ? 0 : (int64_t)(t_rand(state) % 20000);
        }
        T_OK(gd_graph_create(gr->n, gr->indptr, copies[g] ? copies[g] : gr->indices, gr->dtype, &go,
                             &out[g]));
    }
}

/*
 * One random placement of gr's lists over G graphs (the ranks' candidates, weights and sizes from
 * gd__graph_list_candidates, the placement of the given kind), each graph built with its share
 * (gd__graph_cache_place) and the others installed as its peers (gd__graph_set_peer); *p is the
 * placement, cand_of[v] the candidate of list v (-1: none). Returns the lists read from peers.
 */
static int64_t place_graphs(uint64_t *state, const graph *gr, gd_graph_t **dg, int G,
                            gd__placement_kind kind, int cuda, gd__placement *p, int64_t *cand_of) {
    const int64_t n = gr->n;
    const int64_t es = (int64_t)gd_dtype_size(dg[0]->indices_dtype);
    int64_t *outdeg = malloc(sizeof(int64_t) * (size_t)n),
            *rows = malloc(sizeof(int64_t) * (size_t)n);
    int64_t *size = malloc(sizeof(int64_t) * (size_t)n), cap[PLACED_MAX], total = 0, count = 0;
    double *prob = malloc(sizeof(double) * (size_t)n);
    T_ASSERT(outdeg && rows && size && prob);
    T_OK(gd_csc_degree_scores(n, gr->indptr, gr->indices, gr->dtype, GD_DEGREE_OUT, outdeg));
    /* Caches of a few lists up to more than the graph, in whole entries, now and then none. */
    const int64_t all = gr->e * es, each = (int64_t)(t_rand(state) % (uint64_t)(all / 2 + 1));
    for (int g = 0; g < G; g++) {
        cap[g] = t_rand(state) % 4 == 0 ? (int64_t)(t_rand(state) % (uint64_t)(all + 1)) : each;
        cap[g] = cap[g] / es * es;
        total += cap[g];
    }
    T_OK(gd__graph_list_candidates(dg[0], gr->indptr, outdeg, 2 * total, rows, prob, size, &count));
    gd__placement_input in = {.num_candidates = count, .prob = prob, .rows = rows, .size = size};
    in.num_gpus = G;
    in.capacity = cap;
    in.costs = (gd__placement_costs){0.1, 0.2 + unit_rand(state), 2 + unit_rand(state)};
    T_OK(gd__placement_compute(&in, kind, p));
    for (int64_t v = 0; v < n; v++) cand_of[v] = -1;
    for (int64_t i = 0; i < count; i++) cand_of[rows[i]] = i;
    for (int g = 0; g < G; g++) {
        gd__tier_cache_rows lists[PLACED_MAX];
        for (int q = 0; q < G; q++)
            lists[q] = (gd__tier_cache_rows){p->rows + p->offset[q],
                                             p->offset[q + 1] - p->offset[q], cap[q]};
        const gd__tier_cache_rows own = lists[g];
        lists[g] = (gd__tier_cache_rows){NULL, 0, 0};
        T_OK(gd__graph_cache_place(dg[g], gr->indptr, &own, lists, G));
        gd_graph_info info = GD_GRAPH_INFO_INIT;
        T_OK(gd_graph_get_info(dg[g], &info));
        T_EQ_INT(info.cache_bytes, p->used[g]);
        T_EQ_INT(info.cache_nodes, p->offset[g + 1] - p->offset[g]);
    }
    for (int g = 0; g < G; g++)
        for (int q = 0; q < G; q++) {
            const int64_t need = gd__graph_peer_units(dg[g], q);
            int64_t units = 0;
            const void *mem = gd__graph_cache_mem(dg[q], &units);
            if (q == g || need == 0) continue;
            T_EQ_INT(units, need);
            T_OK(gd__graph_set_peer(dg[g], q, mem, need));
        }
    int64_t from_peers = 0;
    for (int g = 0; g < G; g++) {
        from_peers += check_placed_map(gr, dg[g], p, cand_of, g, cuda);
        poison_cached(gr, dg[g], p, cand_of, g);
    }
    free(outdeg);
    free(rows);
    free(size);
    free(prob);
    return from_peers;
}

/* Every placed graph's sampler draws exactly what the CPU sampler over the plain graph draws. */
static void sample_placed(uint64_t *state, const graph *gr, gd_graph_t *plain, gd_graph_t **dg,
                          int G, int cuda, const char *what) {
    static const fanout_set sets[] = {{3, {15, 10, 5}}, {2, {-1, 3}}, {2, {24, 9}}};
    const int64_t max_batch = 256;
    int64_t *seeds = malloc(sizeof(int64_t) * (size_t)max_batch);
    T_ASSERT(seeds);
    for (int fi = 0; fi < 3; fi++) {
        const int replace = (int)(t_rand(state) % 2);
        const uint64_t seed = t_rand(state);
        gd_sampler_t *ref =
            make_sampler(plain, &sets[fi], GD_SAMPLER_CPU, max_batch, replace, seed, 1);
        gd_minibatch_t *mr;
        T_OK(gd_minibatch_create(ref, &mr));
        for (int g = 0; g < G; g++) {
            gd_sampler_t *s =
                make_sampler(dg[g], &sets[fi], cuda ? GD_SAMPLER_CUDA : GD_SAMPLER_CPU, max_batch,
                             replace, seed, 1 + g % 2);
            gd_minibatch_t *mb;
            T_OK(gd_minibatch_create(s, &mb));
            for (int b = 0; b < 3; b++) {
                const int64_t nb = 1 + (int64_t)(t_rand(state) % (uint64_t)max_batch);
                const int64_t epoch = (int64_t)(t_rand(state) % 4), batch = b;
                make_seeds(state, gr->n, nb, seeds);
                T_OK(gd_sample(ref, seeds, nb, 0, epoch, batch, NULL, mr));
                T_OK(gd_sample(s, seeds, nb, 0, epoch, batch, NULL, mb));
                host_mb want = to_host(mr), got = to_host(mb);
                char text[160];
                snprintf(text, sizeof text, "%s: graph %d of %d, fanouts %d, replace %d", what, g,
                         G, fi, replace);
                expect_equal(&want, &got, text);
                host_mb_free(&want);
                host_mb_free(&got);
            }
            T_OK(gd_sampler_check_errors(s));
            gd_minibatch_destroy(mb);
            gd_sampler_destroy(s);
        }
        gd_minibatch_destroy(mr);
        gd_sampler_destroy(ref);
    }
    free(seeds);
}

/*
 * Lists placed over 2 and 3 stores under replicate, partition and auto: host graphs whose CPU
 * stores the CPU sampler reads through their maps, or (cuda) pinned graphs with CUDA stores on
 * `devices` GPUs (round robin: several may share one) read by the CUDA sampler. Every map sends a
 * list to its own cache, else to the first peer caching it, else home; each graph's own copy of
 * the lists that caches serve is then poisoned, and every sampler must still draw exactly what
 * the unplaced CPU sampler draws. partition must read some lists from peers.
 */
static void check_placed_lists(uint64_t *state, int cuda, int devices) {
    gd_context_t *ctx[PLACED_MAX] = {NULL};
    int64_t peer_reads = 0;
    for (int g = 0; cuda && g < PLACED_MAX; g++) {
        gd_context_options co = GD_CONTEXT_OPTIONS_INIT;
        co.device = g % devices;
        T_OK(gd_context_create(&co, &ctx[g]));
    }
    for (int round = 0; round < 12; round++) {
        const gd_dtype dt = round % 2 ? GD_DTYPE_INT64 : GD_DTYPE_INT32;
        const int64_t n = 500 + (int64_t)(t_rand(state) % 3000);
        graph gr = make_graph(state, n, 4 + (int)(t_rand(state) % 10), dt);
        const int G = 2 + (round / 2) % 2;
        const gd__placement_kind kind = (gd__placement_kind)(round % 3);
        gd_graph_t *plain, *dg[PLACED_MAX];
        void *copies[PLACED_MAX];
        gd__placement p;
        int64_t *cand_of = malloc(sizeof(int64_t) * (size_t)n);
        T_ASSERT(cand_of);
        T_OK(gd_graph_create(gr.n, gr.indptr, gr.indices, gr.dtype, NULL, &plain));
        make_placed_graphs(&gr, G, cuda, ctx, state, copies, dg);
        const int64_t from_peers = place_graphs(state, &gr, dg, G, kind, cuda, &p, cand_of);
        if (kind == GD__PLACEMENT_PARTITION) peer_reads += from_peers;
        char what[96];
        snprintf(what, sizeof what, "%s lists placed %s over %d stores", cuda ? "CUDA" : "CPU",
                 gd__placement_names[kind], G);
        sample_placed(state, &gr, plain, dg, G, cuda, what);
        gd__placement_free(&p);
        for (int g = 0; g < G; g++) {
            gd_graph_destroy(dg[g]);
            free(copies[g]);
        }
        gd_graph_destroy(plain);
        free(cand_of);
        free_graph(&gr);
    }
    T_ASSERT(peer_reads > 0);
    for (int g = 0; g < PLACED_MAX; g++) gd_context_destroy(ctx[g]);
    fprintf(stderr, "%s: lists placed over several stores sample as the plain graph\n",
            cuda ? "CUDA" : "CPU");
}

int main(void) {
    uint64_t state = t_seed();
    check_placed_lists(&state, 0, 1);
#ifdef GD_WITH_CUDA
    if (gd_device_count() == 0) {
        fprintf(stderr, "no GPU: the CUDA sampler checks are skipped\n");
        return GD_TEST_SKIP;
    }
    check_placed_lists(&state, 1, t_peer_devices(PLACED_MAX));
    cudaStream_t stream;
    CU(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    check_gpu_sampler(&state, stream);
    check_gpu_list_reads(&state, stream);
    check_gpu_cache(&state, stream);
    check_gpu_seed_errors(&state, stream);
    check_gpu_faults(&state);
    check_read_plan_replay(&state);
    CU(cudaStreamDestroy(stream));
    t_check_no_leaks();
    printf("the CUDA sampler (GPU, UVA and mixed placements) equals the CPU "
           "sampler\n");
    return 0;
#else
    fprintf(stderr, "built without CUDA: the CUDA sampler checks are skipped\n");
    return GD_TEST_SKIP;
#endif
}
