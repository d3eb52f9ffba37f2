/*
 * Minibatches for the benchmarks: the input node ids that training would ask the gatherer for,
 * drawn on the CPU ahead of the timed runs. Seeds come from the training split; each hop lets
 * every node found by the previous hop draw `fanout` in-neighbours uniformly with replacement
 * (the CSC list of a node is its in-neighbours), and the ids are deduplicated keeping the first
 * occurrence, which is the order a sampler's relabelling produces. On a power-law graph the
 * high-degree nodes turn up in most minibatches, which is what the GPU cache exploits.
 *
 * This is a model of the sampler, not the sampler (src/sample/): it serves the benchmarks
 * until that lands and keeps them independent of it. Minibatches are drawn in parallel, one
 * per thread at a time, each from its own random stream keyed by (seed, minibatch), so the
 * result does not depend on the thread count.
 */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

static int64_t node_at(const void *array, gd_dtype dtype, int64_t i) {
    return dtype == GD_DTYPE_INT32 ? (int64_t)((const int32_t *)array)[i]
                                   : ((const int64_t *)array)[i];
}

/* One minibatch into list (capacity cap); returns its length. seen is zeroed on return. */
static int64_t sample_one(const bench_graph *g, int64_t batch_size, const int *fanouts,
                          int layers, uint64_t key, uint8_t *seen, int64_t *list, int64_t cap) {
    uint64_t ctr = 0;
    int64_t len = 0;
#define TAKE(v)                                                                           \
    do {                                                                                  \
        const int64_t v_ = (v);                                                           \
        if (!(seen[v_ >> 3] & (1u << (v_ & 7))) && len < cap) {                           \
            seen[v_ >> 3] |= (uint8_t)(1u << (v_ & 7));                                   \
            list[len++] = v_;                                                             \
        }                                                                                 \
    } while (0)
    for (int64_t s = 0; s < batch_size; s++) {
        const uint64_t r = bench_mix64(key + ctr++);
        if (g->train)
            TAKE(node_at(g->train, g->train_dtype, bench_below(r, g->train_count)));
        else
            TAKE(bench_below(r, g->num_nodes));
    }
    int64_t lo = 0;
    for (int l = 0; l < layers; l++) {
        const int64_t hi = len;
        for (int64_t i = lo; i < hi; i++) {
            const int64_t v = list[i];
            const int64_t start = g->indptr[v], deg = g->indptr[v + 1] - start;
            if (deg <= 0) continue;
            for (int k = 0; k < fanouts[l]; k++) {
                const int64_t e = start + bench_below(bench_mix64(key + ctr++), deg);
                TAKE(node_at(g->indices, g->indices_dtype, e));
            }
        }
        lo = hi;
    }
#undef TAKE
    for (int64_t i = 0; i < len; i++) seen[list[i] >> 3] = 0;
    return len;
}

void bench_batches_free(bench_batches *b) {
    free(b->ids);
    free(b->offsets);
    memset(b, 0, sizeof *b);
}

int bench_sample_batches(const bench_graph *g, int count, int64_t batch_size,
                         const int *fanouts, int layers, uint64_t seed, int threads,
                         bench_batches *out) {
    int rc = -1, failed = 0;
    int64_t cap = batch_size, total = 0;
    int64_t **lists = NULL, *lens = NULL;
    memset(out, 0, sizeof *out);
    BENCH_REQUIRE(g->num_nodes > 0 && count > 0 && batch_size > 0,
                  "minibatches: nothing to sample (%lld nodes, %d minibatches of %lld seeds)",
                  (long long)g->num_nodes, count, (long long)batch_size);
    BENCH_REQUIRE(g->indices_dtype == GD_DTYPE_INT32 || g->indices_dtype == GD_DTYPE_INT64,
                  "minibatches: CSC indices must be int32 or int64, not %s",
                  gd_dtype_name(g->indices_dtype));
    BENCH_REQUIRE(!g->train || (g->train_count > 0 && (g->train_dtype == GD_DTYPE_INT32 ||
                                                      g->train_dtype == GD_DTYPE_INT64)),
                  "minibatches: the training split must be a non-empty int32 or int64 array");
    for (int l = 0; l < layers && cap < g->num_nodes; l++) cap += cap * fanouts[l];
    if (cap > g->num_nodes) cap = g->num_nodes;
    lists = calloc((size_t)count, sizeof *lists);
    lens = calloc((size_t)count, sizeof *lens);
    BENCH_REQUIRE(lists && lens, "minibatches: out of memory");
    if (threads < 1) threads = 1;
    if (threads > count) threads = count;

#ifdef _OPENMP
#pragma omp parallel num_threads(threads) reduction(| : failed)
#endif
    {
        uint8_t *seen = calloc((size_t)(g->num_nodes + 7) / 8, 1);
        int64_t *list = malloc((size_t)cap * sizeof *list);
        if (!seen || !list) failed = 1;
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
        for (int b = 0; b < count; b++) {
            if (!seen || !list) continue;
            const uint64_t key = bench_mix64(seed * 0x100000001b3ull + (uint64_t)b);
            const int64_t len =
                sample_one(g, batch_size, fanouts, layers, key, seen, list, cap);
            lists[b] = malloc((size_t)(len ? len : 1) * sizeof(int64_t));
            if (!lists[b]) {
                failed = 1;
                continue;
            }
            memcpy(lists[b], list, (size_t)len * sizeof(int64_t));
            lens[b] = len;
        }
        free(seen);
        free(list);
    }
    BENCH_REQUIRE(!failed, "minibatches: out of memory (%lld nodes, up to %lld ids each)",
                  (long long)g->num_nodes, (long long)cap);

    out->offsets = malloc(((size_t)count + 1) * sizeof *out->offsets);
    BENCH_REQUIRE(out->offsets, "minibatches: out of memory");
    out->offsets[0] = 0;
    for (int b = 0; b < count; b++) {
        total += lens[b];
        out->offsets[b + 1] = total;
        if (lens[b] > out->max_len) out->max_len = lens[b];
    }
    out->ids = malloc((size_t)(total ? total : 1) * sizeof *out->ids);
    BENCH_REQUIRE(out->ids, "minibatches: out of memory for %lld ids", (long long)total);
    for (int b = 0; b < count; b++)
        memcpy(out->ids + out->offsets[b], lists[b], (size_t)lens[b] * sizeof(int64_t));
    out->count = count;
    rc = 0;
fail:
    if (rc != 0) bench_batches_free(out);
    if (lists)
        for (int b = 0; b < count; b++) free(lists[b]);
    free(lists);
    free(lens);
    return rc;
}
