/*
 * The public sampler API: check the arguments once, size every buffer for the worst case (from the
 * batch size, the fanouts, the largest degree and the node and edge counts), hand the work to the
 * backend, and present the result as DGL-style blocks. Also the epoch iterator that shuffles the
 * training nodes into seed batches. The sampler sits first on the data path: its input node ids are
 * what the feature store gathers.
 */
#include "internal.h"

#include <string.h>

#define DEFAULT_MAX_BATCH 1024
/* Positions (destination nodes + edges of a hop) and local ids are int32, with room to spare for
 * the "no position yet" marker of the relabelling tables. */
#define MAX_POSITIONS ((int64_t)0x7f000000)
#define ALIGN 256

const gd__sample_backend *gd__sample_backend_for(gd_sampler_backend backend) {
#ifdef GD_WITH_CUDA
    if (backend == GD_SAMPLER_CUDA) return &gd__sample_cuda_backend;
#endif
    (void)backend;
    return &gd__sample_cpu_backend;
}

static int64_t pow2_at_least(int64_t x) {
    int64_t p = 64;
    while (p < x) p <<= 1;
    return p;
}

static size_t align_up(size_t x) {
    return (x + ALIGN - 1) / ALIGN * ALIGN;
}

/*
 * The worst case of every hop. A node of hop h gets at most k neighbours: the fanout, capped by the
 * largest degree (the largest degree itself for -1); without replacement the edges of a hop also
 * number at most the graph's edges, since its destination nodes are distinct. The frontier of the
 * next hop is at most this hop's nodes plus its edges, and at most every node (plus the seeds, in
 * case a device seed is not a node: such a seed still takes a slot).
 */
static gd_status plan_sizes(gd_sampler_t *s) {
    gd_status st = GD_OK;
    const gd_graph_t *g = s->graph;
    const int L = s->num_layers;
    s->max_dst[0] = gd__min64(s->max_batch, g->num_nodes);
    const int64_t node_cap = g->num_nodes + s->max_dst[0];
    s->max_dst_all = s->max_edges_all = s->max_pos_all = s->max_table = 0;
    for (int h = 0; h < L; h++) {
        const int f = s->fanouts[h];
        int64_t k;
        if (f < 0)
            k = g->max_degree;
        else if (s->replace)
            k = g->max_degree > 0 ? f : 0;
        else
            k = gd__min64(f, g->max_degree);
        int64_t e;
        if (gd__mul_overflow_i64(s->max_dst[h], k, &e)) e = INT64_MAX;
        if (!s->replace || f < 0) e = gd__min64(e, g->num_edges);
        int64_t pos;
        if (gd__add_overflow_i64(s->max_dst[h], e, &pos)) pos = INT64_MAX;
        GD_REQUIRE(pos <= MAX_POSITIONS, GD_ERR_RANGE,
                   "gd_sampler_create: hop %d can have %lld nodes and %lld edges "
                   "(batch %lld, "
                   "fanout %d, max degree %lld), more than the %lld that int32 "
                   "local ids allow: "
                   "use a smaller max_batch or fanout",
                   h, (long long)s->max_dst[h], (long long)e, (long long)s->max_batch, f,
                   (long long)g->max_degree, (long long)MAX_POSITIONS);
        s->max_edges[h] = e;
        s->max_dst[h + 1] = gd__min64(pos, node_cap);
        s->table_cap[h] = pow2_at_least(2 * gd__min64(pos, node_cap));
        if (s->max_dst[h] > s->max_dst_all) s->max_dst_all = s->max_dst[h];
        if (e > s->max_edges_all) s->max_edges_all = e;
        if (pos > s->max_pos_all) s->max_pos_all = pos;
        if (s->table_cap[h] > s->max_table) s->max_table = s->table_cap[h];
    }
    /* One allocation per minibatch: the input nodes, then each hop's indptr and indices. */
    size_t off = 0;
    s->off_nodes = off;
    off = align_up(off + (size_t)s->max_dst[L] * sizeof(int64_t));
    for (int h = 0; h < L; h++) {
        s->off_indptr[h] = off;
        off = align_up(off + (size_t)(s->max_dst[h] + 1) * sizeof(int32_t));
        s->off_indices[h] = off;
        off = align_up(off + (size_t)(s->max_edges[h] ? s->max_edges[h] : 1) * sizeof(int32_t));
    }
    s->minibatch_bytes = off;
    return GD_OK;
fail:
    return st;
}

void gd__minibatch_carve(const gd_sampler_t *s, gd_minibatch_t *mb) {
    unsigned char *b = mb->base;
    mb->nodes = (int64_t *)(b + s->off_nodes);
    for (int h = 0; h < s->num_layers; h++) {
        mb->indptr[h] = (int32_t *)(b + s->off_indptr[h]);
        mb->indices[h] = (int32_t *)(b + s->off_indices[h]);
    }
}

gd_status gd_sampler_create(gd_graph_t *g, const int *fanouts, int num_layers,
                            const gd_sampler_options *options, gd_sampler_t **out) {
    gd_status st = GD_OK;
    gd_sampler_t *s = NULL;
    gd_sampler_options o = GD_SAMPLER_OPTIONS_INIT;
    GD_REQUIRE(out, GD_ERR_INVALID_ARG, "gd_sampler_create: NULL output handle");
    *out = NULL;
    GD_REQUIRE(g, GD_ERR_INVALID_ARG, "gd_sampler_create: NULL graph");
    GD_REQUIRE(num_layers >= 1 && num_layers <= GD_SAMPLER_MAX_LAYERS, GD_ERR_INVALID_ARG,
               "gd_sampler_create: %d layers: use 1 to %d", num_layers, GD_SAMPLER_MAX_LAYERS);
    GD_REQUIRE(fanouts, GD_ERR_INVALID_ARG, "gd_sampler_create: NULL fanouts");
    for (int h = 0; h < num_layers; h++)
        GD_REQUIRE(fanouts[h] >= -1, GD_ERR_INVALID_ARG,
                   "gd_sampler_create: fanout %d of hop %d: use -1 (all "
                   "neighbours) or a count",
                   fanouts[h], h);
    if (options)
        GD_CHECK(gd__options_in(&o, sizeof o, options, 0, "gd_sampler_create: options",
                                "GD_SAMPLER_OPTIONS_INIT"));
    GD_REQUIRE(o.backend == GD_SAMPLER_CPU || o.backend == GD_SAMPLER_CUDA, GD_ERR_INVALID_ARG,
               "gd_sampler_create: backend %d is not a gd_sampler_backend", (int)o.backend);
    GD_REQUIRE(o.max_batch >= 0, GD_ERR_INVALID_ARG, "gd_sampler_create: max_batch %lld < 0",
               (long long)o.max_batch);
    GD_CHECK(gd__threads_check(o.threads, "gd_sampler_create"));
    GD_REQUIRE(o.sort_reads == GD_SAMPLE_READS_AUTO || o.sort_reads == GD_SAMPLE_READS_FRONTIER ||
                   o.sort_reads == GD_SAMPLE_READS_SORTED,
               GD_ERR_INVALID_ARG,
               "gd_sampler_create: sort_reads %d is not a gd_sample_reads (0 auto, -1 frontier "
               "order, 1 sorted)",
               o.sort_reads);
    GD_REQUIRE(o.bias_factor >= 0 && o.bias_factor <= GD_SAMPLER_MAX_BIAS, GD_ERR_INVALID_ARG,
               "gd_sampler_create: bias_factor %d: use 1 (uniform sampling; 0 means 1) to %d",
               o.bias_factor, GD_SAMPLER_MAX_BIAS);
    GD_REQUIRE(o.bias_factor <= 1 || o.bias_bitmap, GD_ERR_INVALID_ARG,
               "gd_sampler_create: bias_factor %d needs bias_bitmap, one bit per node of the "
               "nodes to favour (the rows the GPU's feature cache holds)",
               o.bias_factor);
    if (o.backend == GD_SAMPLER_CPU)
        GD_REQUIRE(g->h_indptr && g->h_indices, GD_ERR_INVALID_ARG,
                   "the CPU sampler reads the graph from host memory, but its %s "
                   "placed in GPU "
                   "memory only: place it host or pinned",
                   g->h_indptr ? "indices are" : "indptr is");
    else
        GD_REQUIRE(g->d_indptr && g->d_indices, GD_ERR_INVALID_ARG,
                   "the CUDA sampler reads the graph from the GPU, but its %s in "
                   "host memory "
                   "that is not pinned: place it gpu or pinned",
                   g->d_indptr ? "indices are" : "indptr is");

    s = gd_calloc(1, sizeof *s);
    GD_REQUIRE(s, GD_ERR_NO_MEMORY, "gd_sampler_create: out of memory for the handle");
    s->graph = g;
    s->backend = o.backend;
    s->num_layers = num_layers;
    memcpy(s->fanouts, fanouts, sizeof(int) * (size_t)num_layers);
    s->max_batch = o.max_batch ? o.max_batch : DEFAULT_MAX_BATCH;
    s->replace = o.replace != 0;
    s->seed = o.seed;
    s->threads = o.threads ? o.threads : gd__num_threads();
    s->sort_reads = o.sort_reads;
    s->bias_factor = o.bias_factor > 1 ? o.bias_factor : 1;
    if (s->bias_factor > 1) {
        /* A copy, so that the caller may reuse its bitmap (the CUDA backend copies it again,
         * to GPU memory). */
        const size_t bytes = (size_t)(g->num_nodes + 7) / 8;
        GD_ALLOC(s->bias_bitmap, bytes, "the sampler's bitmap of buffered nodes");
        if (bytes) memcpy(s->bias_bitmap, o.bias_bitmap, bytes);
    }
    GD_CHECK(plan_sizes(s));
    GD_CHECK(gd__sample_backend_for(s->backend)->sampler_init(s));
    GD_DEBUG("sampler %s: %d hops, batch %lld, %lld input nodes at most, %zu "
             "bytes per "
             "minibatch, %lld bytes of scratch",
             gd__sample_backend_for(s->backend)->name, num_layers, (long long)s->max_batch,
             (long long)s->max_dst[num_layers], s->minibatch_bytes, (long long)s->scratch_bytes);
    *out = s;
    return GD_OK;
fail:
    if (s) gd_free(s->bias_bitmap);
    gd_free(s);
    return st;
}

gd_status gd__sampler_set_bias(gd_sampler_t *s, const uint8_t *bitmap, int factor) {
    gd_status st = GD_OK;
    const size_t bytes = (size_t)(s->graph->num_nodes + 7) / 8;
    GD_REQUIRE(factor >= 0 && factor <= GD_SAMPLER_MAX_BIAS, GD_ERR_INVALID_ARG,
               "sampler bias: factor %d: use 1 (uniform sampling; 0 means 1) to %d", factor,
               GD_SAMPLER_MAX_BIAS);
    GD_REQUIRE(factor <= 1 || bitmap || s->bias_bitmap, GD_ERR_INVALID_ARG,
               "sampler bias: factor %d needs a bitmap of the buffered nodes", factor);
    if (bitmap) {
        if (!s->bias_bitmap) GD_ALLOC(s->bias_bitmap, bytes ? bytes : 1, "the sampler's bitmap");
        if (bytes) memcpy(s->bias_bitmap, bitmap, bytes);
    }
    s->bias_factor = factor > 1 ? factor : 1;
    GD_CHECK(gd__sample_backend_for(s->backend)->bias_update(s));
fail:
    return st;
}

void gd_sampler_destroy(gd_sampler_t *s) {
    if (!s) return;
    gd__sample_backend_for(s->backend)->sampler_release(s);
    gd_free(s->bias_bitmap);
    gd_free(s);
}

gd_status gd_sampler_get_info(const gd_sampler_t *s, gd_sampler_info *info) {
    if (!s || !info) return gd__error(GD_ERR_INVALID_ARG, "gd_sampler_get_info: NULL argument");
    gd_sampler_info i = GD_SAMPLER_INFO_INIT;
    i.num_layers = s->num_layers;
    i.max_input_nodes = s->max_dst[s->num_layers];
    for (int h = 0; h < s->num_layers; h++) i.max_edges += s->max_edges[h];
    i.minibatch_bytes = (int64_t)s->minibatch_bytes;
    i.scratch_bytes = s->scratch_bytes;
    return gd__info_out(info, &i, sizeof i, "gd_sampler_get_info: info", "GD_SAMPLER_INFO_INIT");
}

gd_status gd_minibatch_create(const gd_sampler_t *s, gd_minibatch_t **out) {
    gd_status st = GD_OK;
    gd_minibatch_t *mb = NULL;
    GD_REQUIRE(out, GD_ERR_INVALID_ARG, "gd_minibatch_create: NULL output handle");
    *out = NULL;
    GD_REQUIRE(s, GD_ERR_INVALID_ARG, "gd_minibatch_create: NULL sampler");
    mb = gd_calloc(1, sizeof *mb);
    GD_REQUIRE(mb, GD_ERR_NO_MEMORY, "gd_minibatch_create: out of memory for the handle");
    mb->sampler = s;
    mb->backend = s->backend;
    mb->device = s->graph->device;
    mb->num_layers = s->num_layers;
    GD_CHECK(gd__sample_backend_for(s->backend)->minibatch_init(s, mb));
    gd__minibatch_carve(s, mb);
    *out = mb;
    return GD_OK;
fail:
    gd_free(mb);
    return st;
}

void gd_minibatch_destroy(gd_minibatch_t *mb) {
    if (!mb) return;
    gd__sample_backend_for(mb->backend)->minibatch_release(mb);
    gd_free(mb);
}

gd_status gd_sample(gd_sampler_t *s, const int64_t *seeds, int64_t n, int seeds_on_device,
                    int64_t epoch, int64_t batch, void *stream, gd_minibatch_t *mb) {
    gd_status st = GD_OK;
    GD_REQUIRE(s && mb, GD_ERR_INVALID_ARG, "gd_sample: NULL %s", s ? "minibatch" : "sampler");
    GD_REQUIRE(mb->sampler == s, GD_ERR_INVALID_ARG,
               "gd_sample: the minibatch buffer was made for another sampler: "
               "create it with "
               "gd_minibatch_create(this sampler)");
    GD_REQUIRE(n >= 0, GD_ERR_INVALID_ARG, "gd_sample: negative seed count %lld", (long long)n);
    GD_REQUIRE(n <= s->max_dst[0], GD_ERR_RANGE,
               "gd_sample: %lld seeds exceed the sampler's max_batch of %lld%s", (long long)n,
               (long long)s->max_batch,
               s->max_dst[0] < s->max_batch ? " (capped by the node count)"
                                            : ": create it with a larger max_batch");
    GD_REQUIRE(n == 0 || seeds, GD_ERR_INVALID_ARG, "gd_sample: NULL seeds for %lld seeds",
               (long long)n);
    GD_REQUIRE(!seeds_on_device || s->backend == GD_SAMPLER_CUDA, GD_ERR_INVALID_ARG,
               "gd_sample: the CPU sampler reads seeds from host memory: pass "
               "seeds_on_device = 0");
    if (!seeds_on_device) {
        const int64_t nodes = s->graph->num_nodes;
        for (int64_t i = 0; i < n; i++)
            GD_REQUIRE(seeds[i] >= 0 && seeds[i] < nodes, GD_ERR_RANGE,
                       "gd_sample: seed %lld at position %lld is not a node of the graph "
                       "[0, %lld)",
                       (long long)seeds[i], (long long)i, (long long)nodes);
    }
    mb->sampled = 0;
    GD_CHECK(gd__sample_backend_for(s->backend)
                 ->sample(s, seeds, n, seeds_on_device, gd__sample_key(s->seed, epoch, batch),
                          stream, mb));
    mb->sampled = 1;
    return GD_OK;
fail:
    return st;
}

gd_status gd_sampler_check_errors(gd_sampler_t *s) {
    if (!s) return gd__error(GD_ERR_INVALID_ARG, "gd_sampler_check_errors: NULL sampler");
    return gd__sample_backend_for(s->backend)->check_errors(s);
}

int gd_minibatch_num_layers(const gd_minibatch_t *mb) {
    return mb ? mb->num_layers : 0;
}

int gd_minibatch_on_device(const gd_minibatch_t *mb) {
    return mb && mb->backend == GD_SAMPLER_CUDA;
}

static gd_status minibatch_ready(gd_minibatch_t *mb, const char *fn) {
    if (!mb->sampled)
        return gd__error(GD_ERR_INVALID_ARG,
                         "%s: nothing was sampled into this minibatch buffer (or the last "
                         "gd_sample into it failed)",
                         fn);
    if (mb->pending) return gd__sample_backend_for(mb->backend)->minibatch_wait(mb);
    return GD_OK;
}

gd_status gd_minibatch_block(gd_minibatch_t *mb, int layer, gd_block *out) {
    gd_status st = GD_OK;
    GD_REQUIRE(mb && out, GD_ERR_INVALID_ARG, "gd_minibatch_block: NULL argument");
    GD_REQUIRE(layer >= 0 && layer < mb->num_layers, GD_ERR_RANGE,
               "gd_minibatch_block: layer %d of a %d-layer minibatch", layer, mb->num_layers);
    GD_CHECK(minibatch_ready(mb, "gd_minibatch_block"));
    {
        const int h = mb->num_layers - 1 - layer;
        out->num_dst = mb->sizes[h];
        out->num_src = mb->sizes[h + 1];
        out->num_edges = mb->sizes[GD__SIZES_EDGES + h];
        out->indptr = mb->indptr[h];
        out->indices = mb->indices[h];
    }
    return GD_OK;
fail:
    return st;
}

gd_status gd_minibatch_input_nodes(gd_minibatch_t *mb, const int64_t **ids, int64_t *n) {
    gd_status st = GD_OK;
    GD_REQUIRE(mb && ids && n, GD_ERR_INVALID_ARG, "gd_minibatch_input_nodes: NULL argument");
    GD_CHECK(minibatch_ready(mb, "gd_minibatch_input_nodes"));
    *ids = mb->nodes;
    *n = mb->sizes[mb->num_layers];
    return GD_OK;
fail:
    return st;
}

/* ---- epoch iteration */

gd_status gd_seed_batches(const int64_t *ids, int64_t n, int64_t batch_size, uint64_t seed,
                          int64_t epoch, int drop_last, int64_t *order, int64_t *num_batches) {
    gd_status st = GD_OK;
    GD_REQUIRE(num_batches, GD_ERR_INVALID_ARG, "gd_seed_batches: NULL num_batches");
    GD_REQUIRE(n >= 0, GD_ERR_INVALID_ARG, "gd_seed_batches: negative id count %lld", (long long)n);
    GD_REQUIRE(batch_size > 0, GD_ERR_INVALID_ARG, "gd_seed_batches: batch_size %lld <= 0",
               (long long)batch_size);
    GD_REQUIRE(n == 0 || (ids && order), GD_ERR_INVALID_ARG, "gd_seed_batches: NULL %s",
               ids ? "order" : "ids");
    if (n > 0) memmove(order, ids, (size_t)n * sizeof *order);
    {
        /* Fisher-Yates from the last position down, each swap drawn from its own counter. */
        const uint64_t e = (uint64_t)epoch;
        const gd_philox_ctr k =
            gd_philox(seed, (uint32_t)e, (uint32_t)(e >> 32), 0, GD__RNG_SHUFFLE);
        const uint64_t key = ((uint64_t)k.v[1] << 32) | k.v[0];
        for (int64_t i = n - 1; i > 0; i--) {
            const gd_philox_ctr r =
                gd_philox(key, (uint32_t)i, (uint32_t)((uint64_t)i >> 32), 0, 0);
            const int64_t j = (int64_t)gd_philox_below(r.v[0], r.v[1], (uint64_t)i + 1);
            const int64_t t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
    }
    *num_batches = drop_last ? n / batch_size : (n + batch_size - 1) / batch_size;
    return GD_OK;
fail:
    return st;
}
