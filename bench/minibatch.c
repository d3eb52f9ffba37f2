/*
 * Minibatches for the benchmarks: the input node ids that training asks the gatherer for,
 * sampled on the CPU ahead of the timed runs by the library's own sampler (src/sample/), so
 * the GPU cache is measured on the ids real training produces. On a power-law graph the
 * high-degree nodes turn up in most minibatches, which is what the GPU cache exploits.
 */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

void bench_batches_free(bench_batches *b) {
    free(b->ids);
    free(b->offsets);
    memset(b, 0, sizeof *b);
}

int bench_graph_of(gd_dataset_t *ds, bench_graph *g) {
    int rc = -1;
    gd_array_view ip, ix, tr;
    memset(g, 0, sizeof *g);
    BENCH_GD(gd_dataset_array(ds, GD_ARRAY_INDPTR, &ip), "reading indptr");
    BENCH_GD(gd_dataset_array(ds, GD_ARRAY_INDICES, &ix), "reading indices");
    g->num_nodes = gd_dataset_num_nodes(ds);
    g->indptr = ip.data;
    g->indices = ix.data;
    g->indices_dtype = ix.dtype;
    if (gd_dataset_array(ds, GD_ARRAY_TRAIN_IDX, &tr) == GD_OK && tr.shape[0] > 0) {
        g->train = tr.data;
        g->train_dtype = tr.dtype;
        g->train_count = tr.shape[0];
    }
    rc = 0;
fail:
    return rc;
}

int bench_sample_batches(const bench_graph *g, int count, int64_t batch_size,
                         const int *fanouts, int layers, uint64_t seed, int threads,
                         bench_batches *out) {
    int rc = -1;
    int64_t pool_n = 0, num_batches = 1, total = 0, cap = 0;
    int64_t *pool = NULL, *order = NULL;
    gd_graph_t *graph = NULL;
    gd_sampler_t *sampler = NULL;
    gd_minibatch_t *mb = NULL;
    gd_graph_options go = GD_GRAPH_OPTIONS_INIT;
    gd_sampler_options so = GD_SAMPLER_OPTIONS_INIT;
    memset(out, 0, sizeof *out);
    BENCH_REQUIRE(g->num_nodes > 0 && count > 0 && batch_size > 0,
                  "minibatches: nothing to sample (%lld nodes, %d minibatches of %lld seeds)",
                  (long long)g->num_nodes, count, (long long)batch_size);
    BENCH_REQUIRE(!g->train || (g->train_count > 0 && (g->train_dtype == GD_DTYPE_INT32 ||
                                                      g->train_dtype == GD_DTYPE_INT64)),
                  "minibatches: the training split must be a non-empty int32 or int64 array");
    pool_n = g->train ? g->train_count : g->num_nodes;
    pool = malloc((size_t)pool_n * sizeof *pool);
    order = malloc((size_t)pool_n * sizeof *order);
    BENCH_REQUIRE(pool && order, "minibatches: out of memory for %lld seeds", (long long)pool_n);
    for (int64_t i = 0; i < pool_n; i++)
        pool[i] = !g->train ? i
                  : g->train_dtype == GD_DTYPE_INT32 ? (int64_t)((const int32_t *)g->train)[i]
                                                     : ((const int64_t *)g->train)[i];
    if (batch_size > pool_n) batch_size = pool_n;
    BENCH_GD(gd_graph_create(g->num_nodes, g->indptr, g->indices, g->indices_dtype, &go, &graph),
             "wrapping the graph for the CPU sampler");
    so.max_batch = batch_size;
    so.seed = seed;
    so.threads = threads;
    BENCH_GD(gd_sampler_create(graph, fanouts, layers, &so, &sampler), "creating the sampler");
    BENCH_GD(gd_minibatch_create(sampler, &mb), "creating a minibatch buffer");
    out->offsets = malloc(((size_t)count + 1) * sizeof *out->offsets);
    BENCH_REQUIRE(out->offsets, "minibatches: out of memory");
    out->offsets[0] = 0;
    for (int b = 0, epoch = -1; b < count; b++) {
        const int64_t *ids = NULL;
        int64_t n = 0;
        /* Minibatch b is batch b % num_batches of epoch b / num_batches (full batches only). */
        if (epoch < 0 || b % num_batches == 0) {
            epoch = epoch < 0 ? 0 : epoch + 1;
            BENCH_GD(gd_seed_batches(pool, pool_n, batch_size, seed, epoch, 1, order,
                                     &num_batches),
                     "shuffling the seeds");
        }
        BENCH_GD(gd_sample(sampler, order + (int64_t)(b % num_batches) * batch_size, batch_size,
                           0, epoch, b % num_batches, NULL, mb),
                 "sampling a minibatch");
        BENCH_GD(gd_minibatch_input_nodes(mb, &ids, &n), "reading its input nodes");
        if (total + n > cap) {
            int64_t *grown;
            cap = 2 * (total + n);
            grown = realloc(out->ids, (size_t)cap * sizeof *grown);
            BENCH_REQUIRE(grown, "minibatches: out of memory for %lld ids", (long long)cap);
            out->ids = grown;
        }
        memcpy(out->ids + total, ids, (size_t)n * sizeof *ids);
        total += n;
        out->offsets[b + 1] = total;
        if (n > out->max_len) out->max_len = n;
    }
    out->count = count;
    rc = 0;
fail:
    if (rc != 0) bench_batches_free(out);
    gd_minibatch_destroy(mb);
    gd_sampler_destroy(sampler);
    gd_graph_destroy(graph);
    free(pool);
    free(order);
    return rc;
}
