/*
 * Locality-aware (biased) neighbour sampling, GPU side (exits 77 without a GPU). The CUDA
 * sampler's biased path (bias_sample_kernel: one warp per node, two passes over the list) must
 * equal the CPU sampler's biased draws bit for bit: on fresh random graphs with isolated nodes and
 * hubs (lists of many 32-entry chunks) and node counts that are not multiples of 8, int32 and
 * int64 indices, fresh random bitmaps (empty, full, sparse, dense) and factors, with and without
 * replacement, fanouts from 0 to all and past a warp, from host and device seeds, with the graph
 * in GPU memory, pinned, split both ways, and pinned with a hot neighbour-list GPU cache, under
 * the three read schedules in turn, outputs poisoned first. Every minibatch also keeps the block
 * invariants (real in-neighbours, no duplicates without replacement, short lists taken whole).
 */
#include "sample_util.h"

#ifdef GD_WITH_CUDA
static const int sort_modes[3] = {GD__SORT_AUTO, GD__SORT_NEVER, GD__SORT_ALWAYS};

/* One placement of the graph: indptr, indices, and a list cache of a third of indices or none. */
typedef struct {
    gd_placement indptr, indices;
    int cache;
} placement;

static const placement places[] = {
    {GD_PLACE_GPU, GD_PLACE_GPU, 0},       {GD_PLACE_PINNED, GD_PLACE_PINNED, 0},
    {GD_PLACE_GPU, GD_PLACE_PINNED, 0},    {GD_PLACE_PINNED, GD_PLACE_GPU, 0},
    {GD_PLACE_PINNED, GD_PLACE_PINNED, 1},
};
#define NUM_PLACES ((int)(sizeof places / sizeof places[0]))

/* Samples from host and from device seeds into poisoned buffers, compared with the CPU. */
static void compare(uint64_t *state, const graph *g, gd_sampler_t *sc, gd_sampler_t *sg,
                    const fanout_set *fs, int replace, int64_t max_batch, cudaStream_t stream,
                    const char *what) {
    gd_minibatch_t *mc, *mg;
    T_OK(gd_minibatch_create(sc, &mc));
    T_OK(gd_minibatch_create(sg, &mg));
    int64_t *seeds = malloc(sizeof(int64_t) * (size_t)max_batch), *d_seeds;
    T_ASSERT(seeds);
    CU(cudaMalloc((void **)&d_seeds, sizeof(int64_t) * (size_t)max_batch));
    const int64_t counts[2] = {max_batch, 1 + (int64_t)(t_rand(state) % (uint64_t)max_batch)};
    for (int q = 0; q < 2; q++) {
        const int64_t nb = counts[q], epoch = (int64_t)(t_rand(state) % 4),
                      batch = (int64_t)(t_rand(state) % 100000);
        make_seeds(state, g->n, nb, seeds);
        CU(cudaMemsetAsync(mg->base, 0xA5, sg->minibatch_bytes, stream));
        if (q == 0) {
            T_OK(gd_sample(sg, seeds, nb, 0, epoch, batch, stream, mg));
        } else {
            CU(cudaMemcpyAsync(d_seeds, seeds, sizeof(int64_t) * (size_t)nb, cudaMemcpyHostToDevice,
                               stream));
            T_OK(gd_sample(sg, d_seeds, nb, 1, epoch, batch, stream, mg));
        }
        T_OK(gd_sample(sc, seeds, nb, 0, epoch, batch, NULL, mc));
        host_mb want = to_host(mc), got = to_host(mg);
        char w[320];
        snprintf(w, sizeof w, "%s, %lld %s seeds", what, (long long)nb, q ? "device" : "host");
        expect_equal(&want, &got, w);
        check_invariants(g, &got, fs->fanouts, replace, seeds, nb);
        host_mb_free(&want);
        host_mb_free(&got);
    }
    T_OK(gd_sampler_check_errors(sg));
    CU(cudaFree(d_seeds));
    free(seeds);
    gd_minibatch_destroy(mc);
    gd_minibatch_destroy(mg);
}

static void check_gpu_biased(uint64_t *state, cudaStream_t stream) {
    int turn = 0;
    for (int gi = 0; gi < 4; gi++) {
        const gd_dtype dt = gi % 2 ? GD_DTYPE_INT64 : GD_DTYPE_INT32;
        const int64_t n = gi < 2 ? 4001 : 30001;
        graph g = make_graph(state, n, gi < 2 ? 12 : 20, dt);
        gd_graph_t *host_graph;
        T_OK(gd_graph_create(g.n, g.indptr, g.indices, g.dtype, NULL, &host_graph));
        for (int pi = 0; pi < NUM_PLACES; pi++) {
            gd_graph_options go = GD_GRAPH_OPTIONS_INIT;
            go.indptr_placement = places[pi].indptr;
            go.indices_placement = places[pi].indices;
            go.copy_host = (int)(t_rand(state) % 2);
            go.narrow_indices = (int)(t_rand(state) % 2);
            if (places[pi].cache) go.gpu_cache_bytes = g.e * (int64_t)gd_dtype_size(dt) / 3;
            gd_graph_t *dg;
            T_OK(gd_graph_create(g.n, g.indptr, g.indices, g.dtype, &go, &dg));
            for (int fi = 0; fi < NUM_FANOUT_SETS; fi++) {
                const fanout_set *fs = &fanout_sets[fi];
                if (n > 4001 && fi != 0 && fi != 3) continue;
                for (int replace = 0; replace < 2; replace++) {
                    const int dens = bias_densities[t_rand(state) % 5];
                    const int factor = bias_factors[t_rand(state) % 4];
                    uint8_t *bitmap = make_bitmap(state, g.n, dens);
                    const uint64_t seed = t_rand(state);
                    const int64_t max_batch = n > 4001 ? 1024 : 300;
                    gd_sampler_t *sc = make_biased(host_graph, fs, GD_SAMPLER_CPU, max_batch,
                                                   replace, seed, 2, bitmap, factor);
                    gd_sampler_t *sg = make_biased(dg, fs, GD_SAMPLER_CUDA, max_batch, replace,
                                                   seed, 0, bitmap, factor);
                    sg->sort_reads = sort_modes[turn++ % 3];
                    char what[256];
                    snprintf(what, sizeof what,
                             "biased CPU vs CUDA (indptr %s, indices %s%s, %s, fanouts set %d, "
                             "replace %d, factor %d, density %d/1000, reads %d)",
                             gd_placement_name(places[pi].indptr),
                             gd_placement_name(places[pi].indices),
                             places[pi].cache ? " with a list cache" : "", gd_dtype_name(dt), fi,
                             replace, factor, dens, sg->sort_reads);
                    compare(state, &g, sc, sg, fs, replace, max_batch, stream, what);
                    gd_sampler_destroy(sc);
                    gd_sampler_destroy(sg);
                    free(bitmap);
                }
            }
            gd_graph_destroy(dg);
        }
        gd_graph_destroy(host_graph);
        free_graph(&g);
    }
}
#endif

int main(void) {
#ifdef GD_WITH_CUDA
    if (gd_device_count() == 0) {
        fprintf(stderr, "no GPU: the biased CUDA sampler checks are skipped\n");
        return GD_TEST_SKIP;
    }
    uint64_t state = t_seed();
    cudaStream_t stream;
    CU(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    check_gpu_biased(&state, stream);
    CU(cudaStreamDestroy(stream));
    t_check_no_leaks();
    printf("the biased CUDA sampler equals the biased CPU sampler\n");
    return 0;
#else
    fprintf(stderr, "built without CUDA: the biased CUDA sampler checks are skipped\n");
    return GD_TEST_SKIP;
#endif
}
