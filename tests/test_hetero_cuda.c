/*
 * The CUDA typed sampler (src/sample/hetero_cuda.cu) against the CPU one (exits 77 without a GPU,
 * after checking how creation is refused where there is none). On the generated mag-tiny and
 * igbh-tiny datasets, with random fanouts per (hop, edge type), -1 (all) and 0 (none) among
 * them, with and without replacement, over several epochs of random seed batches (an empty one
 * included), the CUDA minibatch must equal the CPU one byte for byte: every node type's ids at
 * every layer, every block's sizes, indptr and indices. Two GPU minibatches take turns and are
 * poisoned before they are sampled into again, so an element the GPU leaves unwritten shows.
 * Bad seeds (another type, repeated, too many), a minibatch of another sampler and options the
 * typed sampler refuses fail with their messages, and the sampler still works after them. The
 * graph's arrays are read from GPU memory (copied) or, in random combinations, from pinned host
 * memory over UVA (gd__hetero_sampler_create's mapped pointers, as heterogeneous zero-copy
 * training uses them): the minibatches are the same either way.
 */
#include "test.h"

#include <graphdirect.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static gd_dataset_t *make(const char *preset, uint64_t seed) {
    gd_generate_options go = GD_GENERATE_OPTIONS_INIT;
    go.preset = preset;
    go.seed = seed;
    gd_dataset_t *ds = NULL;
    T_OK(gd_generate(&go, &ds));
    return ds;
}

/* Fanouts of hop-major (hop, edge type) pairs: -1 (all), 0 (none) and counts, -1 only without
 * replacement (the sampler refuses it with). */
static void random_fanouts(uint64_t *rng, int L, int R, int replace, int *fanouts) {
    static const int choices[] = {-1, 0, 1, 2, 3, 5, 8, 20};
    for (int i = 0; i < L * R; i++) {
        fanouts[i] = choices[t_rand(rng) % 8];
        if (replace && fanouts[i] < 0) fanouts[i] = 4;
    }
    fanouts[t_rand(rng) % (uint64_t)(L * R)] = 0;
}

#ifdef GD_WITH_CUDA
#include "feature/internal.h"
#include "io/dataset.h"
#include "sample/hetero.h"

#include <cuda_runtime_api.h>

/* The GPU arrays of one minibatch (from its last gd_hetero_sample), for poisoning. */
typedef struct {
    void *ptr[(GD_SAMPLER_MAX_LAYERS + 1) * GD_MAX_NODE_TYPES +
              2 * GD_SAMPLER_MAX_LAYERS * GD_MAX_EDGE_TYPES];
    size_t bytes[(GD_SAMPLER_MAX_LAYERS + 1) * GD_MAX_NODE_TYPES +
                 2 * GD_SAMPLER_MAX_LAYERS * GD_MAX_EDGE_TYPES];
    int n;
} arrays;

/* Every array of a sampled GPU minibatch, at its capacity (from the sampler's capacities). */
static void collect(const gd_hetero_minibatch_t *mb, const int64_t *max_nodes,
                    const int64_t *max_edges, const int *dst_type, int L, int T, int R, arrays *a) {
    a->n = 0;
    for (int t = 0; t < T; t++) {
        const int64_t *ids;
        int64_t n;
        T_OK(gd_hetero_minibatch_nodes(mb, 0, t, &ids, &n));
        a->ptr[a->n] = (void *)ids;
        a->bytes[a->n++] = (size_t)max_nodes[t] * sizeof(int64_t);
    }
    for (int l = 0; l < L; l++)
        for (int r = 0; r < R; r++) {
            gd_block b;
            T_OK(gd_hetero_minibatch_block(mb, l, r, &b));
            a->ptr[a->n] = (void *)b.indptr;
            a->bytes[a->n++] = (size_t)(max_nodes[(l + 1) * T + dst_type[r]] + 1) * sizeof(int32_t);
            a->ptr[a->n] = (void *)b.indices;
            a->bytes[a->n++] = (size_t)max_edges[l * R + r] * sizeof(int32_t);
        }
}

static void poison(const arrays *a) {
    for (int i = 0; i < a->n; i++)
        if (a->bytes[i]) CU(cudaMemset(a->ptr[i], 0xa5, a->bytes[i]));
    CU(cudaDeviceSynchronize());
}

/* A GPU array of n elements of `size` bytes, on the host (the caller frees it). */
static void *to_host(const void *dev, int64_t n, size_t size) {
    void *h = malloc((size_t)n * size + 1);
    T_ASSERT(h);
    if (n > 0) CU(cudaMemcpy(h, dev, (size_t)n * size, cudaMemcpyDeviceToHost));
    return h;
}

/* The GPU minibatch g equals the CPU minibatch c, byte for byte. */
static void same_as_cpu(const gd_hetero_minibatch_t *c, const gd_hetero_minibatch_t *g, int L,
                        int T, int R) {
    T_EQ_INT(gd_hetero_minibatch_on_device(c), 0);
    T_EQ_INT(gd_hetero_minibatch_on_device(g), 1);
    for (int l = 0; l <= L; l++)
        for (int t = 0; t < T; t++) {
            const int64_t *x, *y;
            int64_t nx, ny;
            T_OK(gd_hetero_minibatch_nodes(c, l, t, &x, &nx));
            T_OK(gd_hetero_minibatch_nodes(g, l, t, &y, &ny));
            T_EQ_INT(nx, ny);
            int64_t *h = to_host(y, ny, sizeof *y);
            for (int64_t i = 0; i < nx; i++)
                if (x[i] != h[i])
                    T_FAIL_("layer %d, node type %d, local id %lld: CPU node %lld, CUDA %lld", l, t,
                            (long long)i, (long long)x[i], (long long)h[i]);
            free(h);
        }
    for (int l = 0; l < L; l++)
        for (int r = 0; r < R; r++) {
            gd_block x, y;
            T_OK(gd_hetero_minibatch_block(c, l, r, &x));
            T_OK(gd_hetero_minibatch_block(g, l, r, &y));
            T_EQ_INT(x.num_dst, y.num_dst);
            T_EQ_INT(x.num_src, y.num_src);
            T_EQ_INT(x.num_edges, y.num_edges);
            int32_t *ip = to_host(y.indptr, y.num_dst + 1, sizeof(int32_t));
            int32_t *ix = to_host(y.indices, y.num_edges, sizeof(int32_t));
            for (int64_t d = 0; d <= x.num_dst; d++)
                if (x.indptr[d] != ip[d])
                    T_FAIL_("layer %d, edge type %d: indptr[%lld] CPU %d, CUDA %d", l, r,
                            (long long)d, x.indptr[d], ip[d]);
            for (int64_t e = 0; e < x.num_edges; e++)
                if (x.indices[e] != ix[e])
                    T_FAIL_("layer %d, edge type %d: indices[%lld] CPU %d, CUDA %d", l, r,
                            (long long)e, x.indices[e], ix[e]);
            free(ip);
            free(ix);
        }
}

/*
 * The arrays of ds's graph chosen by mask (bit 0 indptr, 1 indices, 2 edge types) copied into
 * registered host tensors (pinned[k]; NULL for the others), and their device addresses.
 */
static void pin_graph(const gd_dataset_t *ds, int mask, gd_host_tensor_t **pinned,
                      gd__hetero_graph_dev *mapped) {
    gd__typed_csc csc;
    T_OK(gd__dataset_typed_csc(ds, &csc));
    const int64_t n = gd_dataset_num_nodes(ds), m = gd_dataset_num_edges(ds);
    const void *data[3] = {csc.indptr, csc.indices, csc.etype.data};
    const int64_t count[3] = {n + 1, m, m};
    const gd_dtype dtype[3] = {GD_DTYPE_INT64, csc.is32 ? GD_DTYPE_INT32 : GD_DTYPE_INT64,
                               csc.etype.dtype};
    const void **dev[3] = {&mapped->indptr, &mapped->indices, &mapped->etype};
    memset(mapped, 0, sizeof *mapped);
    for (int k = 0; k < 3; k++) {
        pinned[k] = NULL;
        if (!(mask >> k & 1)) continue;
        T_OK(gd_host_tensor_create(count[k], 1, dtype[k], 0, &pinned[k]));
        memcpy(gd_host_tensor_data(pinned[k]), data[k],
               (size_t)count[k] * gd_dtype_size(dtype[k]));
        T_OK(gd_host_tensor_register(pinned[k], NULL));
        *dev[k] = pinned[k]->device_ptr;
    }
}

static void compare(const char *preset, uint64_t seed, uint64_t *rng) {
    gd_dataset_t *ds = make(preset, seed);
    const int T = gd_dataset_num_node_types(ds), R = gd_dataset_num_edge_types(ds);
    int dst_type[GD_MAX_EDGE_TYPES];
    for (int r = 0; r < R; r++) {
        gd_edge_type_info ei = GD_EDGE_TYPE_INFO_INIT;
        T_OK(gd_dataset_edge_type(ds, r, &ei));
        dst_type[r] = ei.dst_type;
    }
    gd_array_view tr;
    T_OK(gd_dataset_array(ds, GD_ARRAY_TRAIN_IDX, &tr));
    const int64_t nt = tr.shape[0];
    int64_t *order = malloc((size_t)nt * sizeof *order + 1);
    T_ASSERT(order);
    int64_t checked = 0, edges = 0;
    for (int trial = 0; trial < 9; trial++) {
        const int L = 1 + (int)(t_rand(rng) % 3), replace = trial % 3 == 2;
        /* The first trials copy the graph, the next read all of it in place, the rest a part. */
        const int mask = trial < 3 ? 0 : trial < 6 ? 7 : 1 + (int)(t_rand(rng) % 6);
        gd_host_tensor_t *pinned[3];
        gd__hetero_graph_dev mapped;
        int fanouts[GD_SAMPLER_MAX_LAYERS * GD_MAX_EDGE_TYPES];
        random_fanouts(rng, L, R, replace, fanouts);
        const int64_t batch = 1 + (int64_t)(t_rand(rng) % 96);
        gd_sampler_options so = GD_SAMPLER_OPTIONS_INIT;
        so.max_batch = batch;
        so.replace = replace;
        so.seed = t_rand(rng);
        so.threads = 2;
        gd_hetero_sampler_t *sc = NULL, *sg = NULL;
        T_OK(gd_hetero_sampler_create(ds, fanouts, L, &so, &sc));
        so.backend = GD_SAMPLER_CUDA;
        pin_graph(ds, mask, pinned, &mapped);
        T_OK(gd__hetero_sampler_create(ds, fanouts, L, &so, &mapped, &sg));
        int64_t max_nodes[(GD_SAMPLER_MAX_LAYERS + 1) * GD_MAX_NODE_TYPES];
        int64_t max_edges[GD_SAMPLER_MAX_LAYERS * GD_MAX_EDGE_TYPES];
        T_OK(gd__hetero_sampler_capacity(sg, max_nodes, max_edges));
        gd_hetero_minibatch_t *mc = NULL, *mg[2] = {NULL, NULL};
        arrays used[2];
        int sampled[2] = {0, 0};
        T_OK(gd_hetero_minibatch_create(sc, &mc));
        T_OK(gd_hetero_minibatch_create(sg, &mg[0]));
        T_OK(gd_hetero_minibatch_create(sg, &mg[1]));
        gd_block blk;
        T_FAILS(gd_hetero_minibatch_block(mg[0], 0, 0, &blk), GD_ERR_INVALID_ARG,
                "nothing was sampled");
        for (int64_t epoch = 0; epoch < 3; epoch++) {
            int64_t nb = 0;
            T_OK(gd_seed_batches(tr.data, nt, batch, so.seed, epoch, 0, order, &nb));
            for (int64_t b = 0; b < nb && b < 4; b++) {
                const int64_t n = b * batch + batch <= nt ? batch : nt - b * batch;
                const int k = (int)(b % 2);
                if (sampled[k]) poison(&used[k]);
                T_OK(gd_hetero_sample(sc, order + b * batch, n, epoch, b, mc));
                T_OK(gd_hetero_sample(sg, order + b * batch, n, epoch, b, mg[k]));
                same_as_cpu(mc, mg[k], L, T, R);
                collect(mg[k], max_nodes, max_edges, dst_type, L, T, R, &used[k]);
                sampled[k] = 1;
                for (int l = 0; l < L; l++)
                    for (int r = 0; r < R; r++) {
                        T_OK(gd_hetero_minibatch_block(mc, l, r, &blk));
                        edges += blk.num_edges;
                    }
                checked++;
            }
        }
        /* No seeds at all: only empty blocks. */
        poison(&used[0]);
        T_OK(gd_hetero_sample(sc, order, 0, 5, 0, mc));
        T_OK(gd_hetero_sample(sg, order, 0, 5, 0, mg[0]));
        same_as_cpu(mc, mg[0], L, T, R);

        /* Bad seeds fail on the host, as on the CPU, and leave the sampler usable. */
        const int64_t other = gd_dataset_num_nodes(ds) - 1;
        const int64_t twice[3] = {order[0], order[1 % nt], order[0]};
        T_FAILS(gd_hetero_sample(sg, &other, 1, 0, 0, mg[1]), GD_ERR_RANGE,
                "not of the target type");
        T_FAILS(gd_hetero_minibatch_block(mg[1], 0, 0, &blk), GD_ERR_INVALID_ARG,
                "nothing was sampled");
        if (batch >= 3 && nt >= 2) {
            T_FAILS(gd_hetero_sample(sg, twice, 3, 0, 0, mg[1]), GD_ERR_INVALID_ARG,
                    "seed 2 (node");
        }
        if (nt > batch)
            T_FAILS(gd_hetero_sample(sg, order, batch + 1, 0, 0, mg[1]), GD_ERR_INVALID_ARG,
                    "max_batch");
        T_FAILS(gd_hetero_sample(sg, order, 1, 0, 0, mc), GD_ERR_INVALID_ARG, "another sampler");
        T_FAILS(gd_hetero_sample(sc, order, 1, 0, 0, mg[0]), GD_ERR_INVALID_ARG, "another sampler");
        const int64_t n1 = batch < nt ? batch : nt;
        T_OK(gd_hetero_sample(sc, order, n1, 7, 3, mc));
        T_OK(gd_hetero_sample(sg, order, n1, 7, 3, mg[1]));
        same_as_cpu(mc, mg[1], L, T, R);

        gd_hetero_minibatch_destroy(mc);
        gd_hetero_minibatch_destroy(mg[0]);
        gd_hetero_minibatch_destroy(mg[1]);
        gd_hetero_sampler_destroy(sc);
        gd_hetero_sampler_destroy(sg);
        for (int k = 0; k < 3; k++) gd_host_tensor_destroy(pinned[k]);
    }
    T_ASSERT(checked > 0 && edges > 0);
    fprintf(stderr, "%s: %lld minibatches (%lld edges) equal on the CPU and the GPU\n", preset,
            (long long)checked, (long long)edges);
    free(order);
    gd_dataset_close(ds);
}

/* Options the CUDA typed sampler refuses, as the CPU one does. */
static void refusals(uint64_t seed) {
    gd_dataset_t *ds = make("mag-tiny", seed);
    const int R = gd_dataset_num_edge_types(ds);
    int fanouts[GD_MAX_EDGE_TYPES];
    for (int r = 0; r < R; r++) fanouts[r] = 3;
    gd_sampler_options so = GD_SAMPLER_OPTIONS_INIT;
    so.backend = GD_SAMPLER_CUDA;
    gd_hetero_sampler_t *s = NULL;
    uint8_t bitmap[1] = {0};
    so.bias_factor = 4;
    so.bias_bitmap = bitmap;
    T_FAILS(gd_hetero_sampler_create(ds, fanouts, 1, &so, &s), GD_ERR_UNSUPPORTED, "biased");
    T_ASSERT(s == NULL);
    so.bias_factor = 0;
    so.replace = 1;
    fanouts[0] = -1;
    T_FAILS(gd_hetero_sampler_create(ds, fanouts, 1, &so, &s), GD_ERR_INVALID_ARG, "fanout -1");
    so.replace = 0;
    fanouts[0] = 3;
    so.backend = (gd_sampler_backend)7;
    T_FAILS(gd_hetero_sampler_create(ds, fanouts, 1, &so, &s), GD_ERR_INVALID_ARG, "backend 7");
    T_ASSERT(s == NULL);
    gd_dataset_close(ds);
}
#endif

int main(void) {
    const uint64_t seed = t_seed() % 100000;
    uint64_t rng = seed;
    gd_dataset_t *ds = make("mag-tiny", seed);
    int fanouts[2 * GD_MAX_EDGE_TYPES];
    random_fanouts(&rng, 2, gd_dataset_num_edge_types(ds), 0, fanouts);
    gd_sampler_options so = GD_SAMPLER_OPTIONS_INIT;
    so.backend = GD_SAMPLER_CUDA;
    gd_hetero_sampler_t *s = NULL;
#ifdef GD_WITH_CUDA
    if (gd_device_count() == 0) {
        T_FAILS(gd_hetero_sampler_create(ds, fanouts, 2, &so, &s), GD_ERR_NO_DEVICE, "GPU");
        T_ASSERT(s == NULL);
        gd_dataset_close(ds);
        t_check_no_leaks();
        fprintf(stderr, "no GPU: the CUDA typed sampler checks are skipped\n");
        return GD_TEST_SKIP;
    }
    gd_dataset_close(ds);
    refusals(seed);
    compare("mag-tiny", seed, &rng);
    compare("igbh-tiny", seed, &rng);
    t_check_no_leaks();
    printf("the CUDA typed sampler equals the CPU typed sampler\n");
    return 0;
#else
    T_FAILS(gd_hetero_sampler_create(ds, fanouts, 2, &so, &s), GD_ERR_UNSUPPORTED,
            "built without CUDA");
    T_ASSERT(s == NULL);
    gd_dataset_close(ds);
    t_check_no_leaks();
    fprintf(stderr, "built without CUDA: the CUDA typed sampler checks are skipped\n");
    return GD_TEST_SKIP;
#endif
}
