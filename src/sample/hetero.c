/*
 * The typed (heterogeneous) neighbour sampler on the CPU (docs/sampling.md, "Typed sampling").
 * A minibatch keeps one local id space per node type, seeds of the target type first, and one
 * block per (layer, edge type): a CSC from the destination type's local ids to the source
 * type's, so that each relation's block is an ordinary gd_block and the models run their ops
 * on it unchanged. Hop h (from the seeds outward) visits, for every edge type r in order, every
 * node of r's destination type known before the hop, in local order; it draws up to
 * fanouts[h][r] of the node's in-neighbours of type r (one contiguous run of its CSC list,
 * since the lists are sorted by edge type, found by two binary searches), with the draws of
 * the homogeneous sampler (gd__sample_positions: Floyd's algorithm, Philox keyed by seed,
 * epoch, minibatch, node and draw) and the hop word gd__typed_hop(h, r), so the edge type is
 * part of every key. A drawn node gets the next local id of its type at its first appearance,
 * in the order (edge type, destination, draw): the minibatch does not depend on the thread
 * count, which only parallelises the draws. With the CUDA backend (hetero_cuda.cu) the same
 * minibatch is computed on the GPU; this file checks the arguments and the seeds for both.
 */
#include "internal.h"

#include "io/dataset.h"
#include "sample/hetero.h"

#include <string.h>

gd_status gd_hetero_sampler_create(const gd_dataset_t *ds, const int *fanouts, int num_layers,
                                   const gd_sampler_options *options, gd_hetero_sampler_t **out) {
    return gd__hetero_sampler_create(ds, fanouts, num_layers, options, NULL, out);
}

gd_status gd__hetero_sampler_create(const gd_dataset_t *ds, const int *fanouts, int num_layers,
                                    const gd_sampler_options *options,
                                    const gd__hetero_graph_dev *mapped, gd_hetero_sampler_t **out) {
    gd_status st = GD_OK;
    gd_sampler_options o = GD_SAMPLER_OPTIONS_INIT;
    gd_hetero_sampler_t *s = NULL;
    GD_REQUIRE(ds && fanouts && out, GD_ERR_INVALID_ARG,
               "gd_hetero_sampler_create: ds, fanouts and out must not be NULL");
    *out = NULL;
    if (options)
        GD_CHECK(gd__options_in(&o, sizeof o, options, 1, "gd_hetero_sampler_create: options",
                                "GD_SAMPLER_OPTIONS_INIT"));
    GD_REQUIRE(gd_dataset_num_node_types(ds) > 0, GD_ERR_INVALID_ARG,
               "gd_hetero_sampler_create: dataset '%s' is homogeneous (no node types); use "
               "gd_sampler_create",
               gd_dataset_name(ds));
    GD_REQUIRE(o.backend == GD_SAMPLER_CPU || o.backend == GD_SAMPLER_CUDA, GD_ERR_INVALID_ARG,
               "gd_hetero_sampler_create: backend %d; use GD_SAMPLER_CPU or GD_SAMPLER_CUDA",
               (int)o.backend);
#ifndef GD_WITH_CUDA
    GD_REQUIRE(o.backend == GD_SAMPLER_CPU, GD_ERR_UNSUPPORTED,
               "gd_hetero_sampler_create: the CUDA typed sampler needs a GPU, and graphdirect was "
               "built without CUDA; use GD_SAMPLER_CPU or rebuild with the CUDA toolkit");
#endif
    GD_REQUIRE(o.bias_factor <= 1, GD_ERR_UNSUPPORTED,
               "gd_hetero_sampler_create: biased (locality-aware) draws are for homogeneous "
               "graphs");
    GD_REQUIRE(num_layers >= 1 && num_layers <= GD_SAMPLER_MAX_LAYERS, GD_ERR_INVALID_ARG,
               "gd_hetero_sampler_create: %d layers; use 1 to %d", num_layers,
               GD_SAMPLER_MAX_LAYERS);
    GD_REQUIRE(o.max_batch >= 0 && o.max_batch <= INT32_MAX, GD_ERR_INVALID_ARG,
               "gd_hetero_sampler_create: max_batch %lld", (long long)o.max_batch);
    s = gd_calloc(1, sizeof *s);
    GD_REQUIRE(s, GD_ERR_NO_MEMORY, "out of memory creating a typed sampler");
    s->ds = ds;
    s->backend = o.backend;
    s->device = -1;
    if (mapped) s->mapped = *mapped;
    s->num_layers = num_layers;
    s->T = gd_dataset_num_node_types(ds);
    s->R = gd_dataset_num_edge_types(ds);
    s->target = gd_dataset_target_type(ds);
    s->max_batch = o.max_batch ? o.max_batch : 1024;
    s->replace = o.replace;
    s->seed = o.seed;
    s->threads = o.threads > 0 ? o.threads : gd__num_threads();
    for (int r = 0; r < s->R; r++) {
        gd_edge_type_info ei = GD_EDGE_TYPE_INFO_INIT;
        GD_CHECK(gd_dataset_edge_type(ds, r, &ei));
        s->src[r] = ei.src_type;
        s->dst[r] = ei.dst_type;
    }
    for (int h = 0; h < num_layers; h++)
        for (int r = 0; r < s->R; r++) {
            const int f = fanouts[h * s->R + r];
            GD_REQUIRE(f >= -1 && f <= (1 << 20) && (f != -1 || !s->replace), GD_ERR_INVALID_ARG,
                       "gd_hetero_sampler_create: fanout %d for hop %d, edge type %d; use -1 "
                       "(all, without replacement), 0 (none) or a positive count",
                       f, h, r);
            s->fanouts[h][r] = f;
        }
    gd__typed_csc csc;
    GD_CHECK(gd__dataset_typed_csc(ds, &csc));
    s->indptr = csc.indptr;
    s->indices = csc.indices;
    s->is32 = csc.is32;
    s->offsets = csc.offsets;
    s->etype = csc.etype;

    /*
     * Capacities, the worst case of every hop: a destination of relation r adds at most
     * min(fanout, the relation's largest in-degree) sources, and a type never has more nodes
     * than it owns. The largest in-degree bounds -1 and a fanout above it.
     */
    const int64_t n = gd_dataset_num_nodes(ds);
    int64_t maxdeg = 0;
    for (int64_t u = 0; u < n; u++) {
        const int64_t d = s->indptr[u + 1] - s->indptr[u];
        if (d > maxdeg) maxdeg = d;
    }
    for (int t = 0; t < s->T; t++) {
        const int64_t own = s->offsets[t + 1] - s->offsets[t];
        s->max_nodes[0][t] = t == s->target ? gd__min64(s->max_batch, own) : 0;
    }
    int64_t all = 0, step_edges = 0;
    for (int h = 0; h < num_layers; h++) {
        for (int t = 0; t < s->T; t++) s->max_nodes[h + 1][t] = s->max_nodes[h][t];
        for (int r = 0; r < s->R; r++) {
            const int f = s->fanouts[h][r];
            const int64_t per = f < 0 ? maxdeg : s->replace ? f : gd__min64(f, maxdeg);
            int64_t e = 0;
            if (gd__mul_overflow_i64(s->max_nodes[h][s->dst[r]], per, &e)) e = INT64_MAX;
            if (!s->replace) e = gd__min64(e, gd_dataset_num_edges(ds));
            s->max_edges[h][r] = e;
            step_edges = e > step_edges ? e : step_edges;
            const int t = s->src[r];
            const int64_t own = s->offsets[t + 1] - s->offsets[t];
            s->max_nodes[h + 1][t] = gd__min64(own, s->max_nodes[h + 1][t] + e);
        }
    }
    for (int h = 0; h < num_layers; h++)
        for (int r = 0; r < s->R; r++)
            GD_REQUIRE(s->max_edges[h][r] <= INT32_MAX, GD_ERR_RANGE,
                       "gd_hetero_sampler_create: hop %d of edge type %d can draw %lld edges, "
                       "more than int32 local ids hold; lower max_batch or the fanouts",
                       h, r, (long long)s->max_edges[h][r]);
    for (int t = 0; t < s->T; t++) all += s->max_nodes[num_layers][t];
    GD_REQUIRE(all <= INT32_MAX, GD_ERR_RANGE,
               "gd_hetero_sampler_create: a minibatch can hold %lld nodes, more than int32 local "
               "ids hold; lower max_batch or the fanouts",
               (long long)all);
    s->table_cap = 16;
    while (s->table_cap < 2 * all) s->table_cap *= 2;
    int64_t most_dst = 1;
    for (int h = 0; h < num_layers; h++)
        for (int t = 0; t < s->T; t++)
            most_dst = s->max_nodes[h][t] > most_dst ? s->max_nodes[h][t] : most_dst;
    s->all_nodes = all;
    s->most_dst = most_dst;
    s->step_edges = step_edges;
    if (s->backend == GD_SAMPLER_CPU) {
        GD_ALLOC(s->keys, (size_t)s->table_cap * sizeof *s->keys, "the typed sampler's table");
        GD_ALLOC(s->vals, (size_t)s->table_cap * sizeof *s->vals, "the typed sampler's table");
        GD_ALLOC(s->used, (size_t)(all + 1) * sizeof *s->used, "the typed sampler's table");
        for (int64_t i = 0; i < s->table_cap; i++) s->keys[i] = -1;
        GD_ALLOC(s->draws, (size_t)(step_edges + 1) * sizeof *s->draws,
                 "the typed sampler's draws");
        GD_ALLOC(s->starts, (size_t)most_dst * sizeof *s->starts, "the typed sampler's draws");
        GD_ALLOC(s->degs, (size_t)(most_dst + 1) * sizeof *s->degs, "the typed sampler's draws");
    }
#ifdef GD_WITH_CUDA
    else {
        GD_ALLOC(s->sorted, (size_t)(s->max_batch + 1) * sizeof *s->sorted,
                 "the typed sampler's seed check");
        GD_CHECK(gd__hetero_cuda_init(s));
    }
#endif
    *out = s;
    return GD_OK;
fail:
    gd_hetero_sampler_destroy(s);
    return st;
}

void gd_hetero_sampler_destroy(gd_hetero_sampler_t *s) {
    if (!s) return;
#ifdef GD_WITH_CUDA
    gd__hetero_cuda_release(s);
#endif
    gd_free(s->sorted);
    gd_free(s->keys);
    gd_free(s->vals);
    gd_free(s->used);
    gd_free(s->draws);
    gd_free(s->starts);
    gd_free(s->degs);
    gd_free(s);
}

gd_status gd_hetero_minibatch_create(const gd_hetero_sampler_t *s, gd_hetero_minibatch_t **out) {
    gd_status st = GD_OK;
    gd_hetero_minibatch_t *mb = NULL;
    GD_REQUIRE(s && out, GD_ERR_INVALID_ARG,
               "gd_hetero_minibatch_create: s and out must not be NULL");
    mb = gd_calloc(1, sizeof *mb);
    GD_REQUIRE(mb, GD_ERR_NO_MEMORY, "out of memory creating a typed minibatch");
    mb->sampler = s;
    mb->num_layers = s->num_layers;
    mb->T = s->T;
    mb->R = s->R;
    const int L = s->num_layers;
#ifdef GD_WITH_CUDA
    if (s->backend == GD_SAMPLER_CUDA) {
        GD_CHECK(gd__hetero_cuda_minibatch_init(s, mb));
        *out = mb;
        return GD_OK;
    }
#endif
    for (int t = 0; t < s->T; t++)
        GD_ALLOC(mb->nodes[t], (size_t)(s->max_nodes[L][t] + 1) * sizeof(int64_t),
                 "a typed minibatch's nodes");
    for (int h = 0; h < L; h++)
        for (int r = 0; r < s->R; r++) {
            GD_ALLOC(mb->indptr[h][r], (size_t)(s->max_nodes[h][s->dst[r]] + 1) * sizeof(int32_t),
                     "a typed minibatch's blocks");
            GD_ALLOC(mb->indices[h][r], (size_t)(s->max_edges[h][r] + 1) * sizeof(int32_t),
                     "a typed minibatch's blocks");
        }
    *out = mb;
    return GD_OK;
fail:
    gd_hetero_minibatch_destroy(mb);
    return st;
}

void gd_hetero_minibatch_destroy(gd_hetero_minibatch_t *mb) {
    if (!mb) return;
#ifdef GD_WITH_CUDA
    if (mb->d_base) {
        /* The arrays point into the one device allocation, which this frees. */
        gd__hetero_cuda_minibatch_release(mb);
        gd_free(mb);
        return;
    }
#endif
    for (int t = 0; t < GD_MAX_NODE_TYPES; t++) gd_free(mb->nodes[t]);
    for (int h = 0; h < GD_SAMPLER_MAX_LAYERS; h++)
        for (int r = 0; r < GD_MAX_EDGE_TYPES; r++) {
            gd_free(mb->indptr[h][r]);
            gd_free(mb->indices[h][r]);
        }
    gd_free(mb);
}

/* The local id of global node u of type t, given at its first appearance. */
static int32_t relabel(gd_hetero_sampler_t *s, gd_hetero_minibatch_t *mb, int t, int64_t u,
                       int64_t *count, int64_t *used, int64_t *nused) {
    const uint64_t mask = (uint64_t)s->table_cap - 1;
    uint64_t h = gd__sample_hash((uint64_t)u) & mask;
    while (s->keys[h] != -1 && s->keys[h] != u) h = (h + 1) & mask;
    if (s->keys[h] == u) return s->vals[h];
    s->keys[h] = u;
    s->vals[h] = (int32_t)count[t];
    used[(*nused)++] = (int64_t)h;
    mb->nodes[t][count[t]] = u;
    return (int32_t)count[t]++;
}

#ifdef GD_WITH_CUDA
/*
 * The CUDA sampler's seed check, on the host as the CPU sampler's: every seed of the target
 * type ([lo, hi)), and none repeated (found in a sorted copy; the message names the later
 * position of the smallest repeated node).
 */
static gd_status check_seeds(gd_hetero_sampler_t *s, const int64_t *seeds, int64_t n, int64_t lo,
                             int64_t hi) {
    gd_status st = GD_OK;
    for (int64_t i = 0; i < n; i++)
        GD_REQUIRE(seeds[i] >= lo && seeds[i] < hi, GD_ERR_RANGE,
                   "gd_hetero_sample: seed %lld is node %lld, not of the target type %d (ids "
                   "[%lld, %lld))",
                   (long long)i, (long long)seeds[i], s->target, (long long)lo, (long long)hi);
    if (n > 0) memcpy(s->sorted, seeds, (size_t)n * sizeof *seeds);
    gd__sort_i64(s->sorted, n);
    for (int64_t i = 1; i < n; i++) {
        if (s->sorted[i] != s->sorted[i - 1]) continue;
        int64_t seen = 0, at = 0;
        for (at = 0; at < n && seen < 2; at++) seen += seeds[at] == s->sorted[i];
        GD_REQUIRE(0, GD_ERR_INVALID_ARG,
                   "gd_hetero_sample: seed %lld (node %lld) repeats an earlier seed",
                   (long long)(at - 1), (long long)s->sorted[i]);
    }
fail:
    return st;
}
#endif

gd_status gd_hetero_sample(gd_hetero_sampler_t *s, const int64_t *seeds, int64_t n, int64_t epoch,
                           int64_t batch, gd_hetero_minibatch_t *mb) {
    gd_status st = GD_OK;
    int64_t nused = 0;
    int64_t *used = s ? s->used : NULL;
    GD_REQUIRE(s && mb && (seeds || n == 0), GD_ERR_INVALID_ARG,
               "gd_hetero_sample: s, seeds and mb must not be NULL");
    GD_REQUIRE(mb->sampler == s, GD_ERR_INVALID_ARG,
               "gd_hetero_sample: the minibatch was made for another sampler");
    GD_REQUIRE(n >= 0 && n <= s->max_batch, GD_ERR_INVALID_ARG,
               "gd_hetero_sample: %lld seeds; the sampler takes at most %lld (max_batch)",
               (long long)n, (long long)s->max_batch);
    mb->sampled = 0;
    const int L = s->num_layers, T = s->T, R = s->R;
    const int64_t lo = s->offsets[s->target], hi = s->offsets[s->target + 1];
#ifdef GD_WITH_CUDA
    if (s->backend == GD_SAMPLER_CUDA) {
        GD_CHECK(check_seeds(s, seeds, n, lo, hi));
        GD_CHECK(gd__hetero_cuda_sample(s, seeds, n, gd__sample_key(s->seed, epoch, batch), mb));
        mb->sampled = 1;
        return GD_OK;
    }
#endif
    int64_t count[GD_MAX_NODE_TYPES] = {0};
    for (int64_t i = 0; i < n; i++) {
        GD_REQUIRE(seeds[i] >= lo && seeds[i] < hi, GD_ERR_RANGE,
                   "gd_hetero_sample: seed %lld is node %lld, not of the target type %d (ids "
                   "[%lld, %lld))",
                   (long long)i, (long long)seeds[i], s->target, (long long)lo, (long long)hi);
        const int64_t before = count[s->target];
        relabel(s, mb, s->target, seeds[i], count, used, &nused);
        GD_REQUIRE(count[s->target] > before, GD_ERR_INVALID_ARG,
                   "gd_hetero_sample: seed %lld (node %lld) repeats an earlier seed", (long long)i,
                   (long long)seeds[i]);
    }
    const uint64_t key = gd__sample_key(s->seed, epoch, batch);
    for (int t = 0; t < T; t++) mb->count[0][t] = count[t];
    for (int h = 0; h < L; h++) {
        for (int r = 0; r < R; r++) {
            const int f = s->fanouts[h][r], dt = s->dst[r], su = s->src[r];
            const int64_t nd = mb->count[h][dt];
            const int64_t *dst_nodes = mb->nodes[dt];
            int32_t *ip = mb->indptr[h][r];
            /* Each destination's run of type r, and how many of it are drawn. */
#pragma omp parallel for num_threads(s->threads) schedule(static) if (nd > 4096)
            for (int64_t d = 0; d < nd; d++) {
                const int64_t v = dst_nodes[d];
                const int64_t a = gd__edge_type_lower(s->etype.data, s->etype.dtype, s->indptr[v],
                                                      s->indptr[v + 1], r);
                const int64_t b =
                    gd__edge_type_lower(s->etype.data, s->etype.dtype, a, s->indptr[v + 1], r + 1);
                s->starts[d] = a;
                s->degs[d] = f == 0 ? 0 : gd__sample_count(b - a, f, s->replace);
            }
            int64_t e = 0;
            for (int64_t d = 0; d < nd; d++) {
                ip[d] = (int32_t)e;
                const int64_t c = s->degs[d];
                s->degs[d] = e;
                e += c;
            }
            ip[nd] = (int32_t)e;
            GD_REQUIRE(e <= s->max_edges[h][r], GD_ERR_INTERNAL,
                       "typed sampler: hop %d of edge type %d drew %lld edges, above its "
                       "capacity %lld",
                       h, r, (long long)e, (long long)s->max_edges[h][r]);
            const uint32_t hop = gd__typed_hop(h, r);
#pragma omp parallel for num_threads(s->threads) schedule(dynamic, 64) if (e > 4096)
            for (int64_t d = 0; d < nd; d++) {
                const int64_t v = dst_nodes[d], a = s->starts[d];
                const int64_t at = s->degs[d], cnt = ip[d + 1] - ip[d];
                const int64_t b =
                    gd__edge_type_lower(s->etype.data, s->etype.dtype, a, s->indptr[v + 1], r + 1);
                int64_t *out = s->draws + at;
                if (cnt == 0) continue;
                if (gd__sample_takes_all(b - a, cnt, f, s->replace))
                    for (int64_t j = 0; j < cnt; j++) out[j] = a + j;
                else {
                    gd__sample_positions(key, hop, s->replace, v, b - a, cnt, out);
                    for (int64_t j = 0; j < cnt; j++) out[j] += a;
                }
                for (int64_t j = 0; j < cnt; j++)
                    out[j] = s->is32 ? ((const int32_t *)s->indices)[out[j]]
                                     : ((const int64_t *)s->indices)[out[j]];
            }
            int32_t *ix = mb->indices[h][r];
            for (int64_t i = 0; i < e; i++)
                ix[i] = relabel(s, mb, su, s->draws[i], count, used, &nused);
            mb->edges[h][r] = e;
        }
        for (int t = 0; t < T; t++) mb->count[h + 1][t] = count[t];
    }
    mb->sampled = 1;
fail:
    /* The table goes back to empty for the next minibatch: only the slots used are cleared. */
    for (int64_t i = 0; i < nused; i++) s->keys[used[i]] = -1;
    return st;
}

gd_status gd__hetero_sampler_capacity(const gd_hetero_sampler_t *s, int64_t *max_nodes,
                                      int64_t *max_edges) {
    gd_status st = GD_OK;
    GD_REQUIRE(s && max_nodes && max_edges, GD_ERR_INVALID_ARG,
               "gd__hetero_sampler_capacity: NULL argument");
    const int L = s->num_layers;
    for (int l = 0; l <= L; l++)
        for (int t = 0; t < s->T; t++) max_nodes[l * s->T + t] = s->max_nodes[L - l][t];
    for (int l = 0; l < L; l++)
        for (int r = 0; r < s->R; r++) max_edges[l * s->R + r] = s->max_edges[L - 1 - l][r];
fail:
    return st;
}

int gd_hetero_minibatch_on_device(const gd_hetero_minibatch_t *mb) {
    return mb && mb->d_base ? 1 : 0;
}

/* Layer l of training (0 = input) is hop num_layers - 1 - l. */
gd_status gd_hetero_minibatch_block(const gd_hetero_minibatch_t *mb, int layer, int edge_type,
                                    gd_block *out) {
    gd_status st = GD_OK;
    GD_REQUIRE(mb && out, GD_ERR_INVALID_ARG,
               "gd_hetero_minibatch_block: mb and out must not be NULL");
    GD_REQUIRE(mb->sampled, GD_ERR_INVALID_ARG,
               "gd_hetero_minibatch_block: nothing was sampled into the minibatch");
    GD_REQUIRE(layer >= 0 && layer < mb->num_layers && edge_type >= 0 && edge_type < mb->R,
               GD_ERR_RANGE,
               "gd_hetero_minibatch_block: layer %d, edge type %d of a minibatch of %d layers and "
               "%d edge types",
               layer, edge_type, mb->num_layers, mb->R);
    const gd_hetero_sampler_t *s = mb->sampler;
    const int h = mb->num_layers - 1 - layer;
    out->num_dst = mb->count[h][s->dst[edge_type]];
    out->num_src = mb->count[h + 1][s->src[edge_type]];
    out->num_edges = mb->edges[h][edge_type];
    out->indptr = mb->indptr[h][edge_type];
    out->indices = mb->indices[h][edge_type];
fail:
    return st;
}

gd_status gd_hetero_minibatch_nodes(const gd_hetero_minibatch_t *mb, int layer, int node_type,
                                    const int64_t **ids, int64_t *n) {
    gd_status st = GD_OK;
    GD_REQUIRE(mb && ids && n, GD_ERR_INVALID_ARG,
               "gd_hetero_minibatch_nodes: mb, ids and n must not be NULL");
    GD_REQUIRE(mb->sampled, GD_ERR_INVALID_ARG,
               "gd_hetero_minibatch_nodes: nothing was sampled into the minibatch");
    GD_REQUIRE(layer >= 0 && layer <= mb->num_layers && node_type >= 0 && node_type < mb->T,
               GD_ERR_RANGE,
               "gd_hetero_minibatch_nodes: layer %d, node type %d of a minibatch of %d layers and "
               "%d node types",
               layer, node_type, mb->num_layers, mb->T);
    *ids = mb->nodes[node_type];
    *n = mb->count[mb->num_layers - layer][node_type];
fail:
    return st;
}
