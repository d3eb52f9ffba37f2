/*
 * The trainer's data path for heterogeneous graphs (docs/hetero.md): the typed sampler, a
 * gather of each node type's input rows from that type's own table, and a relational model
 * (R-SAGE or R-GAT: any kind with typed entries) through the model interface, so that the
 * public trainer (fit, evaluate, checkpoints, the best model, resume) runs it as it runs
 * GraphSAGE. trainer.c hands a heterogeneous dataset
 * here at create and calls this file for the epochs and the evaluations; parameters, Adam and
 * checkpoints stay in trainer.c, which reads them through the model.
 *
 * Four modes, one minibatch after another (auto picks one: gd__htrain_plan). cpu: the typed
 * sampler and the per-type gather on CPU threads, the model on the CPU backend. cpu-centric:
 * the same sampling and gather into pinned host buffers, copied to the GPU on the nn backend's
 * stream, the model on the CUDA backend. all-gpu and zero-copy (GPU-centric): the CUDA typed
 * sampler (which leaves each minibatch in GPU memory) and the per-type gather kernel
 * (feature/hetero_gather.h) reading every type's table from GPU memory (all-gpu: the graph and
 * the tables copied there at create) or from registered host memory over PCIe (zero-copy);
 * only the seeds' labels are copied. zero-copy splits the GPU memory it may use (the plan:
 * zero_copy_place) between the typed graph's arrays, which the sampler reads in GPU memory or,
 * those that do not fit, in pinned host memory over UVA, and a GPU cache per node type of that
 * type's hottest rows (a tier store per table), which the gather reads in the same launch as
 * the rows it reads over PCIe. The nn backend's stream is the only stream
 * of the trainer: every copy, gather, op and read-back is ordered on it, and the loss and the
 * correct count come back with one synchronisation per minibatch.
 */
#include "core/comm.h"
#include "core/context.h"
#include "core/cuda.h"
#include "feature/hetero_gather.h"
#include "feature/internal.h"
#include "io/dataset.h"
#include "nn/rsage.h"
#include "sample/hetero.h"
#include "train/datapath.h"
#include "train/internal.h"
#include "train/plan.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* Philox domain of the per-minibatch dropout keys, as trainer.c's ("trDK"). */
#define HT_RNG_DROPOUT 0x7472444bu

struct gd__htrain {
    const gd_dataset_t *ds;
    gd__train_config cfg;
    int T, R, L, target;
    gd__model_kind kind; /* the model's: cfg.model, or R-SAGE for the MLP baseline */
    gd_hetero_sampler_t *sampler;
    gd_hetero_minibatch_t *mb;
    gd__nn_ctx ctx;
    gd__model *model;
    gd__nn_adam_options adam;
    /* The gathered input rows of each type (float32, capacity rows x width), their ids. */
    gd__nn_tensor x[GD_MAX_NODE_TYPES];
    const gd__nn_tensor *xp[GD_MAX_NODE_TYPES];
    const int64_t *ids[GD_MAX_NODE_TYPES];
    gd_array_view feat[GD_MAX_NODE_TYPES]; /* data NULL: the type has no features */
    gd_block blocks[GD_SAMPLER_MAX_LAYERS * GD_MAX_EDGE_TYPES];
    int64_t num_nodes[(GD_SAMPLER_MAX_LAYERS + 1) * GD_MAX_NODE_TYPES];
    int64_t *labels; /* the seeds' labels (host; pinned with a GPU) */
    gd__nn_tensor loss, dlogits;
    int64_t correct;
    /*
     * The mode (auto resolved) and where everything lives, as gd__htrain_plan says. gpu: the
     * model on the GPU (every mode but cpu); x[t] and xp are then GPU tensors, the labels have
     * a GPU copy (d_labels) and d_correct receives the count. gpu_sampling: all-gpu or
     * zero-copy, whose minibatch arrays (blocks, ids) are the CUDA sampler's, in GPU memory.
     */
    gd__plan plan;
    gd__train_mode mode;
    int gpu, gpu_sampling, device;
    /*
     * cpu-centric: rows[t] the pinned host rows the CPU gathers into (cpu: the model's x[t]);
     * the blocks' arrays and the ids have GPU copies (dblocks, d_ids).
     */
    float *rows[GD_MAX_NODE_TYPES];
    gd_block dblocks[GD_SAMPLER_MAX_LAYERS * GD_MAX_EDGE_TYPES];
    int32_t *d_indptr[GD_SAMPLER_MAX_LAYERS * GD_MAX_EDGE_TYPES];
    int32_t *d_indices[GD_SAMPLER_MAX_LAYERS * GD_MAX_EDGE_TYPES];
    int64_t *d_ids[GD_MAX_NODE_TYPES];
    const int64_t *dids[GD_MAX_NODE_TYPES];
    int64_t *d_labels, *d_correct;
    /*
     * GPU-centric: where the gather kernel reads type t's rows (src[t]): all-gpu its copy in
     * GPU memory (d_table[t]), zero-copy the tier store store[t] over the table registered in
     * host memory (pinned[t], through the registry of context), with the type's hottest rows
     * (hot[t], the plan's, freed once cached) in its GPU cache. pinned_graph: the arrays of the
     * typed graph that zero-copy keeps in pinned host memory (indptr, indices, edge types; NULL:
     * copied to GPU memory by the sampler).
     */
    gd__hetero_rows src[GD_MAX_NODE_TYPES];
    void *d_table[GD_MAX_NODE_TYPES];
    gd_host_tensor_t *pinned[GD_MAX_NODE_TYPES];
    gd__tier_store *store[GD_MAX_NODE_TYPES];
    int64_t *hot[GD_MAX_NODE_TYPES];
    gd_host_tensor_t *pinned_graph[3];
    gd_context_t *context;
    /* The model's typed config, which its gd__model_config.typed points to for its lifetime. */
    gd__rsage_config rc;
    /* The splits and the shuffled order of an epoch. */
    gd_array_view split[3];
    int64_t *train_ids; /* train_idx as int64, what every epoch shuffles */
    int64_t *order;
    int64_t type_off[GD_MAX_NODE_TYPES + 1]; /* node type t owns ids [type_off[t], ...[t+1]) */
    gd_array_view label_view;
};

/* The dropout key of minibatch b of an epoch, as the homogeneous trainer draws it. */
static uint64_t dropout_seed(const gd__htrain *h, int64_t epoch, int64_t b) {
    gd_philox_ctr k = gd_philox(h->cfg.seed, (uint32_t)epoch, (uint32_t)((uint64_t)epoch >> 32),
                                (uint32_t)b, HT_RNG_DROPOUT);
    return ((uint64_t)k.v[1] << 32) | k.v[0];
}

/* Host memory the CPU fills for the model: pinned when a GPU copies it. */
static gd_status host_buf(gd__htrain *h, void **p, size_t bytes, const char *what) {
#ifdef GD_WITH_CUDA
    if (h->gpu)
        return gd__cuda_pinned_alloc(p, bytes ? bytes : 1, what,
                                     "lower the batch size or the fanouts, or train in mode cpu");
#endif
    *p = gd_malloc(bytes ? bytes : 1);
    return *p ? GD_OK : gd__error(GD_ERR_NO_MEMORY, "out of memory for %s", what);
}

static void host_free(gd__htrain *h, void *p) {
#ifdef GD_WITH_CUDA
    if (h->gpu) {
        gd__cuda_host_free(p);
        return;
    }
#endif
    gd_free(p);
}

/* nn backend memory (GPU memory for cpu-centric). */
static gd_status nn_buf(gd__htrain *h, void **p, size_t bytes) {
    return h->ctx.be->alloc(&h->ctx, bytes ? bytes : 1, p);
}

static void nn_free(gd__htrain *h, void *p) {
    if (p && h->ctx.be) h->ctx.be->release(&h->ctx, p);
}

void gd__htrain_destroy(gd__htrain *h) {
    if (!h) return;
    if (h->ctx.be) {
        (void)h->ctx.be->synchronize(&h->ctx);
        for (int t = 0; t < GD_MAX_NODE_TYPES; t++) {
            gd__nn_tensor_free(&h->ctx, &h->x[t]);
            nn_free(h, h->d_ids[t]);
        }
        for (int i = 0; i < GD_SAMPLER_MAX_LAYERS * GD_MAX_EDGE_TYPES; i++) {
            nn_free(h, h->d_indptr[i]);
            nn_free(h, h->d_indices[i]);
        }
        nn_free(h, h->d_labels);
        nn_free(h, h->d_correct);
#ifdef GD_WITH_CUDA
        for (int t = 0; t < GD_MAX_NODE_TYPES; t++) gd__cuda_free(h->d_table[t]);
#endif
        gd__nn_tensor_free(&h->ctx, &h->loss);
        gd__nn_tensor_free(&h->ctx, &h->dlogits);
    }
    gd__model_destroy(h->model);
    /* On the CPU the rows are the model's own input tensors, freed above. */
    for (int t = 0; t < GD_MAX_NODE_TYPES && h->gpu; t++) host_free(h, h->rows[t]);
    host_free(h, h->labels);
#ifdef GD_WITH_CUDA
    if (h->ctx.be == &gd__nn_cuda_backend) gd__nn_cuda_ctx_destroy(&h->ctx);
#endif
    /* The sampler (which waits for its stream) and the caches go before the memory they read,
     * and the registrations back to the context before the context reference does. */
    gd_hetero_minibatch_destroy(h->mb);
    gd_hetero_sampler_destroy(h->sampler);
    for (int t = 0; t < GD_MAX_NODE_TYPES; t++) {
        gd__tier_store_destroy(h->store[t]);
        gd_free(h->hot[t]);
        gd_host_tensor_destroy(h->pinned[t]);
    }
    for (int k = 0; k < 3; k++) gd_host_tensor_destroy(h->pinned_graph[k]);
    gd__context_unref(h->context);
    gd_free(h->order);
    gd_free(h->train_ids);
    gd_free(h);
}

/* The edge type a name of --relation-fanouts means: a relation name or "src:relation:dst". */
static gd_status find_edge_type(const gd_dataset_t *ds, const char *name, int *out) {
    gd_status st = GD_OK;
    const int R = gd_dataset_num_edge_types(ds);
    int found = -1, matches = 0;
    char known[1024] = "";
    size_t used = 0;
    for (int r = 0; r < R; r++) {
        gd_edge_type_info ei = GD_EDGE_TYPE_INFO_INIT;
        gd_node_type_info s = GD_NODE_TYPE_INFO_INIT, d = GD_NODE_TYPE_INFO_INIT;
        GD_CHECK(gd_dataset_edge_type(ds, r, &ei));
        GD_CHECK(gd_dataset_node_type(ds, ei.src_type, &s));
        GD_CHECK(gd_dataset_node_type(ds, ei.dst_type, &d));
        char full[3 * 72];
        snprintf(full, sizeof full, "%s:%s:%s", s.name, ei.name, d.name);
        if (used < sizeof known)
            used +=
                (size_t)snprintf(known + used, sizeof known - used, "%s%s", r ? ", " : "", full);
        if (strcmp(name, full) == 0) {
            *out = r;
            return GD_OK;
        }
        if (strcmp(name, ei.name) == 0) {
            found = r;
            matches++;
        }
    }
    GD_REQUIRE(matches == 1, GD_ERR_INVALID_ARG,
               "--relation-fanouts: %s edge type '%s' (the edge types: %s)%s",
               matches ? "more than one" : "no", name, known,
               matches ? "; name it as src:relation:dst" : "");
    *out = found;
fail:
    return st;
}

/*
 * The fanouts of every (hop, edge type): fanouts[h * R + r], from cfg->fanouts[h] unless the
 * relation_fanouts text names the edge type at that hop.
 */
static gd_status typed_fanouts(const gd_dataset_t *ds, const gd__train_config *cfg, int *fanouts) {
    gd_status st = GD_OK;
    const int R = gd_dataset_num_edge_types(ds), L = cfg->num_layers;
    for (int l = 0; l < L; l++)
        for (int r = 0; r < R; r++) fanouts[l * R + r] = cfg->mlp ? 0 : cfg->fanouts[l];
    if (!cfg->relation_fanouts || cfg->mlp) return GD_OK;
    const char *p = cfg->relation_fanouts;
    for (int h = 0; *p; h++) {
        GD_REQUIRE(h < L, GD_ERR_INVALID_ARG,
                   "--relation-fanouts '%s' names more hops than the %d layers",
                   cfg->relation_fanouts, L);
        const char *end = strchr(p, ';');
        if (!end) end = p + strlen(p);
        while (p < end) {
            const char *comma = memchr(p, ',', (size_t)(end - p)), *item_end = comma ? comma : end;
            const char *eq = memchr(p, '=', (size_t)(item_end - p));
            char name[3 * 72], *stop = NULL;
            GD_REQUIRE(eq && eq > p && (size_t)(eq - p) < sizeof name, GD_ERR_INVALID_ARG,
                       "--relation-fanouts: '%.*s' in '%s' is not EDGE=COUNT", (int)(item_end - p),
                       p, cfg->relation_fanouts);
            memcpy(name, p, (size_t)(eq - p));
            name[eq - p] = '\0';
            const long k = strtol(eq + 1, &stop, 10);
            GD_REQUIRE(stop == item_end && eq + 1 < item_end && k >= -1 && k <= (1 << 20),
                       GD_ERR_INVALID_ARG,
                       "--relation-fanouts: the count of '%s' in '%s' is not -1 (all), 0 (none) "
                       "or a count",
                       name, cfg->relation_fanouts);
            int r = -1;
            GD_CHECK(find_edge_type(ds, name, &r));
            fanouts[h * R + r] = (int)k;
            p = comma ? comma + 1 : end;
        }
        p = *end ? end + 1 : end;
    }
fail:
    return st;
}

/* The bytes of the graph's arrays (indptr, indices, edge types) and of every type's table. */
static gd_status data_bytes(const gd_dataset_t *ds, int64_t bytes[4]) {
    gd_status st = GD_OK;
    gd_array_view v;
    GD_CHECK(gd_dataset_array(ds, GD_ARRAY_INDPTR, &v));
    bytes[0] = v.shape[0] * 8;
    GD_CHECK(gd_dataset_array(ds, GD_ARRAY_INDICES, &v));
    bytes[1] = v.shape[0] * (int64_t)gd_dtype_size(v.dtype);
    GD_CHECK(gd_dataset_edge_types(ds, &v));
    bytes[2] = v.shape[0] * (int64_t)gd_dtype_size(v.dtype);
    bytes[3] = 0;
    for (int t = 0; t < gd_dataset_num_node_types(ds); t++) {
        gd_node_type_info ti = GD_NODE_TYPE_INFO_INIT;
        GD_CHECK(gd_dataset_node_type(ds, t, &ti));
        if (ti.feature_dim == 0) continue;
        GD_CHECK(gd_dataset_type_features(ds, t, &v));
        bytes[3] += v.shape[0] * v.shape[1] * (int64_t)gd_dtype_size(v.dtype);
    }
fail:
    return st;
}

/*
 * auto: all-gpu when the graph and the tables take at most half of what the GPU memory budget
 * leaves after the plan's reserve (the other half is for the model and the minibatch buffers,
 * whose sizes the sampler's capacities give only later); else zero-copy when what it keeps in
 * pinned host memory (the tables, and the graph when it does not fit that half) may be
 * page-locked; else cpu-centric. Without a GPU: cpu.
 */
static void pick(int64_t graph, int64_t tables, int have_gpu, int64_t budget, gd__plan *p) {
    char a[32], b[32], c[32];
    const int64_t half = gd__max64(0, budget - GD__PLAN_GPU_RESERVE) / 2;
    const int64_t pinned = tables + (graph > half ? graph : 0);
    gd__plan_gib(graph, a, sizeof a);
    gd__plan_gib(tables, b, sizeof b);
    gd__plan_gib(budget, c, sizeof c);
    if (!have_gpu) {
        p->mode = GD__TRAIN_CPU;
#ifdef GD_WITH_CUDA
        snprintf(p->text, sizeof p->text, "auto picked cpu: no GPU is visible");
#else
        snprintf(p->text, sizeof p->text, "auto picked cpu: graphdirect was built without CUDA");
#endif
    } else if (graph + tables <= half) {
        p->mode = GD__TRAIN_ALL_GPU;
        snprintf(p->text, sizeof p->text,
                 "auto picked all-gpu: graph %s + features %s fit in half of the GPU memory "
                 "budget of %s (after the reserve)",
                 a, b, c);
    } else if (pinned <= gd__plan_memlock_limit()) {
        p->mode = GD__TRAIN_ZERO_COPY;
        snprintf(p->text, sizeof p->text,
                 "auto picked zero-copy: graph %s + features %s exceed half of the GPU memory "
                 "budget of %s (after the reserve)",
                 a, b, c);
    } else {
        p->mode = GD__TRAIN_CPU_CENTRIC;
        gd__plan_gib(pinned, a, sizeof a);
        snprintf(p->text, sizeof p->text,
                 "auto picked cpu-centric: the data exceeds half of the GPU memory budget of %s "
                 "and %s cannot be page-locked (ulimit -l)",
                 c, a);
    }
}

/*
 * zero-copy's GPU memory (gd__plan_hetero_zero_copy): the half of the budget (after the
 * reserve) that pick grants the data holds the arrays of the typed graph that fit, in the order
 * of their reads per byte (indptr: two a destination and relation; edge types: each relation's
 * binary searches; indices: the drawn entries), and the per-type GPU caches the rest.
 * --gpu-cache SIZE (cfg->gpu_cache_bytes >= 0) gives the caches, rows and location maps
 * together, that many bytes first, and the graph what is left. An array that does not fit
 * stays in pinned host memory, read by the CUDA typed sampler over UVA as the homogeneous
 * sampler reads pinned lists. The caches' budget is split
 * over the types by gd__hot_rows_split: every type's rows ranked together by out-degree (how
 * often uniform sampling reaches a node, the homogeneous cache's score; node types own
 * disjoint id ranges of one CSC, so one pass scores them all), since a cached row saves its
 * reads times its bytes for its bytes of cache, whatever the width. lists (optional) get each
 * type's cached rows (local to the type, hottest first).
 */
static gd_status zero_copy_place(const gd_dataset_t *ds, const gd__train_config *cfg,
                                 const int64_t bytes[4], int64_t budget, gd__plan *p,
                                 int64_t **lists) {
    gd_status st = GD_OK;
    const int T = gd_dataset_num_node_types(ds);
    int64_t *scores = NULL, rows[GD_MAX_NODE_TYPES] = {0}, rb[GD_MAX_NODE_TYPES] = {0};
    int64_t maps[GD_MAX_NODE_TYPES] = {0}, cache = 0;
    const int64_t *typed[GD_MAX_NODE_TYPES] = {NULL};
    gd__plan_hetero_zero_copy(bytes, budget, cfg->gpu_cache_bytes, p->hgraph_gpu, &cache);
    if (cache <= 0 || bytes[3] == 0) return GD_OK;
    gd__typed_csc csc;
    gd_array_view off;
    GD_CHECK(gd__dataset_typed_csc(ds, &csc));
    GD_CHECK(gd_dataset_node_type_offsets(ds, &off));
    const int64_t N = gd_dataset_num_nodes(ds);
    GD_ALLOC(scores, (size_t)(N > 0 ? N : 1) * sizeof *scores, "the hot rows' scores");
    GD_CHECK(gd_csc_degree_scores(N, csc.indptr, csc.indices,
                                  csc.is32 ? GD_DTYPE_INT32 : GD_DTYPE_INT64, GD_DEGREE_OUT,
                                  scores));
    for (int t = 0; t < T; t++) {
        gd_node_type_info ti = GD_NODE_TYPE_INFO_INIT;
        gd_array_view f;
        typed[t] = scores + csc.offsets[t];
        GD_CHECK(gd_dataset_node_type(ds, t, &ti));
        if (ti.feature_dim == 0) continue;
        GD_CHECK(gd_dataset_type_features(ds, t, &f));
        rows[t] = f.shape[0];
        rb[t] = f.shape[1] * (int64_t)gd_dtype_size(f.dtype);
        maps[t] = rows[t] * (int64_t)sizeof(int64_t); /* the tier store's location map */
    }
    GD_CHECK(gd__hot_rows_split(T, typed, rows, rb, maps, cache, lists, p->hcached));
    for (int t = 0; t < T; t++)
        if (p->hcached[t] > 0) p->hcache_bytes += p->hcached[t] * rb[t] + maps[t];
fail:
    gd_free(scores);
    return st;
}

/* zero-copy's rows and text: where each graph array is, each type's cache. */
static gd_status zero_copy_describe(const gd_dataset_t *ds, gd__plan *p) {
    gd_status st = GD_OK;
    static const char *const arrays[3] = {"indptr", "indices", "edge types"};
    char line[64], b[32];
    int64_t maps = 0;
    size_t used = strlen(p->text);
    const int on_gpu = p->hgraph_gpu[0] + p->hgraph_gpu[1] + p->hgraph_gpu[2];
    if (on_gpu == 3 || on_gpu == 0)
        used += (size_t)snprintf(p->text + used, sizeof p->text - used, "; the graph in %s",
                                 on_gpu ? "GPU memory" : "pinned host memory (over UVA)");
    else
        for (int k = 0; k < 3 && used < sizeof p->text; k++)
            used += (size_t)snprintf(p->text + used, sizeof p->text - used, "%s%s %s",
                                     k ? ", " : "; ", arrays[k],
                                     p->hgraph_gpu[k] ? "in GPU memory" : "pinned");
    if (used < sizeof p->text)
        used += (size_t)snprintf(p->text + used, sizeof p->text - used, "; cached rows:%s",
                                 p->hcache_bytes ? "" : " none");
    for (int t = 0; t < gd_dataset_num_node_types(ds); t++) {
        gd_node_type_info ti = GD_NODE_TYPE_INFO_INIT;
        gd_array_view f;
        GD_CHECK(gd_dataset_node_type(ds, t, &ti));
        if (ti.feature_dim == 0) continue;
        GD_CHECK(gd_dataset_type_features(ds, t, &f));
        const int64_t k = p->hcached[t], bytes = k * f.shape[1] * (int64_t)gd_dtype_size(f.dtype);
        if (k == 0) continue;
        maps += f.shape[0] * (int64_t)sizeof(int64_t);
        snprintf(line, sizeof line, "feature cache: %s (%lld of %lld rows)", ti.name,
                 (long long)k, (long long)f.shape[0]);
        gd__plan_add_row(p, line, "gpu cache", bytes);
        if (used < sizeof p->text)
            used += (size_t)snprintf(p->text + used, sizeof p->text - used, " %s %lld/%lld (%s)",
                                     ti.name, (long long)k, (long long)f.shape[0],
                                     gd__plan_bytes(bytes, b, sizeof b));
    }
    if (maps > 0) gd__plan_add_row(p, "feature cache location maps", "gpu", maps);
fail:
    return st;
}

/* The plan; in zero-copy lists (optional) get each type's rows to cache, hottest first. */
static gd_status plan_full(const gd_dataset_t *ds, const gd__train_config *cfg, gd__plan *out,
                           int64_t **lists) {
    gd_status st = GD_OK;
    static const char *const names[4] = {"indptr", "indices", "edge types",
                                          "features (per node type)"};
    static const char *const doing[GD__TRAIN_MODE_COUNT] = {
        [GD__TRAIN_CPU] = "typed sampling, per-type gather and the model on the CPU",
        [GD__TRAIN_CPU_CENTRIC] = "typed sampling and per-type gather on the CPU, the model on "
                                  "the GPU",
        [GD__TRAIN_ALL_GPU] = "the graph and every type's features in GPU memory; typed "
                              "sampling, per-type gather and the model on the GPU",
        [GD__TRAIN_ZERO_COPY] = "every type's features in pinned host memory, read over PCIe "
                                "by the GPU's per-type gather but for each type's hottest rows "
                                "(GPU caches); sampling and the model on the GPU"};
    int64_t bytes[4], free0 = 0, budget = 0;
    int have_gpu = 0;
    memset(out, 0, sizeof *out);
    GD_CHECK(data_bytes(ds, bytes));
    const int device = cfg->context ? gd_context_device(cfg->context) : cfg->device;
    GD_CHECK(gd__datapath_machine(cfg->mode, device, cfg->gpu_mem_budget, &have_gpu, &free0,
                                  &budget));
    if (cfg->mode == GD__TRAIN_AUTO)
        pick(bytes[0] + bytes[1] + bytes[2], bytes[3], have_gpu, budget, out);
    else {
        out->mode = cfg->mode;
        snprintf(out->text, sizeof out->text, "mode %s (as asked)",
                 gd__train_mode_name(cfg->mode));
    }
    const size_t used = strlen(out->text);
    snprintf(out->text + used, sizeof out->text - used,
             "; heterogeneous dataset (%d node types, %d edge types): %s",
             gd_dataset_num_node_types(ds), gd_dataset_num_edge_types(ds), doing[out->mode]);
    out->budget = budget;
    out->gpu_free = free0;
    const int zc = out->mode == GD__TRAIN_ZERO_COPY;
    if (zc) GD_CHECK(zero_copy_place(ds, cfg, bytes, budget, out, lists));
    for (int i = 0; i < 3; i++)
        out->hgraph_gpu[i] |= out->mode == GD__TRAIN_ALL_GPU;
    const char *features = out->mode == GD__TRAIN_ALL_GPU ? "gpu"
                           : zc                           ? "pinned host"
                                                          : "host";
    for (int i = 0; i < 4; i++)
        gd__plan_add_row(out, names[i],
                         i == 3             ? features
                         : out->hgraph_gpu[i] ? "gpu"
                         : zc               ? "pinned host"
                                            : "host",
                         bytes[i]);
    if (zc) GD_CHECK(zero_copy_describe(ds, out));
fail:
    return st;
}

gd_status gd__htrain_plan(const gd_dataset_t *ds, const gd__train_config *cfg, gd__plan *out) {
    return plan_full(ds, cfg, out, NULL);
}

#ifdef GD_WITH_CUDA
/*
 * zero-copy: an array of the dataset (a type's table, an array of the typed graph) registered
 * for the GPU through the trainer's context, in place (read-only for an array mapped read-only
 * from its file, so that the page cache's copy is the one pinned). Where that is refused (a
 * read-only registration the GPU or the file system does not allow, a range registered outside
 * the context, a page shared with an array registered already), a pinned copy instead, as the
 * homogeneous data path does.
 */
static gd_status pin_array(gd__htrain *h, int slot, const void *data, int64_t rows, int64_t cols,
                           gd_dtype dtype, const char *what, gd_host_tensor_t **out) {
    gd_status st = GD_OK;
    const int ro = h->ds->arrays[slot].store == GD__STORE_MAP_RO;
    st = gd_host_tensor_adopt((void *)data, rows, cols, dtype, ro ? GD_HOST_TENSOR_READ_ONLY : 0u,
                              out);
    if (st == GD_OK) st = gd_host_tensor_register(*out, h->context);
    if (st == GD_OK || !(ro || st == GD_ERR_ALREADY_REGISTERED)) return st;
    GD_INFO("zero-copy: %s cannot be registered in place (%s): pinning a copy", what,
            gd_last_error());
    gd_clear_error();
    gd_host_tensor_destroy(*out);
    *out = NULL;
    GD_CHECK(gd_host_tensor_create(rows, cols, dtype, 0, out));
    memcpy(gd_host_tensor_data(*out), data, (size_t)(rows * gd_host_tensor_row_bytes(*out)));
    GD_CHECK(gd_host_tensor_register(*out, h->context));
fail:
    return st;
}

/*
 * zero-copy: the arrays of the typed graph that the plan keeps in pinned host memory, registered
 * (pin_array), and their device addresses for the CUDA typed sampler, which copies the others.
 */
static gd_status pin_graph(gd__htrain *h, gd__hetero_graph_dev *mapped) {
    gd_status st = GD_OK;
    static const char *const what[3] = {"the graph's indptr", "the graph's indices",
                                        "the graph's edge types"};
    const int slots[3] = {GD_ARRAY_INDPTR, GD_ARRAY_INDICES, GD__ARRAY_EDGE_TYPE};
    const void **dev[3] = {&mapped->indptr, &mapped->indices, &mapped->etype};
    gd__typed_csc csc;
    memset(mapped, 0, sizeof *mapped);
    GD_CHECK(gd__dataset_typed_csc(h->ds, &csc));
    const int64_t n = gd_dataset_num_nodes(h->ds), m = gd_dataset_num_edges(h->ds);
    const void *data[3] = {csc.indptr, csc.indices, csc.etype.data};
    const int64_t count[3] = {n + 1, m, m};
    const gd_dtype dtype[3] = {GD_DTYPE_INT64, csc.is32 ? GD_DTYPE_INT32 : GD_DTYPE_INT64,
                               csc.etype.dtype};
    for (int k = 0; k < 3; k++) {
        if (h->plan.hgraph_gpu[k] || count[k] == 0) continue;
        GD_CHECK(pin_array(h, slots[k], data[k], count[k], 1, dtype[k], what[k],
                           &h->pinned_graph[k]));
        *dev[k] = h->pinned_graph[k]->device_ptr;
    }
fail:
    return st;
}

/*
 * zero-copy: type t's table registered (pin_array) in a tier store on the trainer's GPU, whose
 * GPU cache holds the rows the plan chose (the store fills it from the registered table and
 * publishes the rows' locations, finished before it returns).
 */
static gd_status cache_table(gd__htrain *h, int t) {
    gd_status st = GD_OK;
    const gd_array_view *f = &h->feat[t];
    char what[96];
    snprintf(what, sizeof what, "the features of node type %d", t);
    GD_CHECK(pin_array(h, GD__ARRAY_TYPE_FEATURES + t, f->data, f->shape[0], f->shape[1],
                       f->dtype, what, &h->pinned[t]));
    const int64_t rb = gd_host_tensor_row_bytes(h->pinned[t]), k = h->plan.hcached[t];
    const gd__row_shape shape = {f->shape[0], rb, NULL, NULL};
    GD_CHECK(gd__tier_store_create(&shape, h->device, GD__TIER_HOST, h->pinned[t]->device_ptr,
                                   f->shape[0], &h->store[t]));
    if (k > 0) {
        st = gd__tier_cache_build(h->store[t], h->hot[t], k, k * rb);
        if (st != GD_OK) {
            gd__error_context(st,
                              "building the GPU cache of %lld rows of node type %d (%.1f MiB "
                              "and a %.1f MiB location map): lower --gpu-cache or "
                              "--gpu-mem-budget to fit free GPU memory",
                              (long long)k, t, (double)(k * rb) / 1048576.0,
                              (double)(f->shape[0] * 8) / 1048576.0);
            goto fail;
        }
        GD_REQUIRE(h->store[t]->cache.count == k, GD_ERR_INTERNAL,
                   "zero-copy: the cache of node type %d holds %lld rows, the plan %lld", t,
                   (long long)h->store[t]->cache.count, (long long)k);
    }
    h->src[t] = gd__hetero_rows_store(h->store[t]);
fail:
    gd_free(h->hot[t]);
    h->hot[t] = NULL;
    return st;
}

/*
 * GPU-centric: where the gather kernel reads every featured type's rows. all-gpu copies the
 * table into GPU memory once; zero-copy registers it in a tier store with the type's GPU cache
 * (cache_table) and reads it where it is. The copies are queued on the nn stream, which the
 * gathers run on too, and waited for here: a copy from pageable memory may return before its
 * data has landed.
 */
static gd_status place_tables(gd__htrain *h) {
    gd_status st = GD_OK;
    for (int t = 0; t < h->T; t++) {
        const gd_array_view *f = &h->feat[t];
        if (!f->data || f->shape[0] == 0) continue;
        const size_t bytes = (size_t)(f->shape[0] * f->shape[1]) * gd_dtype_size(f->dtype);
        if (h->mode == GD__TRAIN_ALL_GPU) {
            GD_CHECK(gd__cuda_malloc(h->device, &h->d_table[t], bytes,
                                     "a node type's feature table (all-gpu)"));
            GD_CHECK(gd__cuda_memcpy_async(h->d_table[t], f->data, bytes, h->ctx.stream));
            h->src[t] = gd__hetero_rows_table(h->d_table[t]);
        } else {
            GD_CHECK(cache_table(h, t));
        }
    }
    GD_CHECK(h->ctx.be->synchronize(&h->ctx));
fail:
    return st;
}
#endif

/*
 * The typed sampler and its minibatch: the CUDA one (GPU-centric modes) on the trainer's GPU,
 * which its create takes as the current device, reading the arrays of the graph that mapped
 * names in place.
 */
static gd_status make_sampler(gd__htrain *h, const int *fanouts, const gd_sampler_options *so,
                              const gd__hetero_graph_dev *mapped) {
    gd_status st = GD_OK;
#ifdef GD_WITH_CUDA
    int prev = -1;
    if (so->backend == GD_SAMPLER_CUDA) {
        GD_CHECK(gd__cuda_enter_device(h->device, &prev));
        st = gd__hetero_sampler_create(h->ds, fanouts, h->L, so, mapped, &h->sampler);
        if (st == GD_OK) st = gd_hetero_minibatch_create(h->sampler, &h->mb);
        gd__cuda_leave_device(h->device, prev);
        return st;
    }
#endif
    (void)mapped;
    GD_CHECK(gd_hetero_sampler_create(h->ds, fanouts, h->L, so, &h->sampler));
    GD_CHECK(gd_hetero_minibatch_create(h->sampler, &h->mb));
fail:
    return st;
}

gd_status gd__htrain_create(const gd_dataset_t *ds, const gd__train_config *cfg, gd__htrain **out) {
    gd_status st = GD_OK;
    gd__htrain *h = NULL;
    *out = NULL;
    GD_REQUIRE(gd__model_kind_typed(cfg->model), GD_ERR_INVALID_ARG,
               "trainer: dataset '%s' is heterogeneous (%d node types, %d edge types); train "
               "it with a relational model: --model rsage, --model rgcn or --model rgat",
               gd_dataset_name(ds), gd_dataset_num_node_types(ds), gd_dataset_num_edge_types(ds));
    GD_REQUIRE(cfg->context == NULL || gd__comm_world(gd__context_comm(cfg->context)) <= 1,
               GD_ERR_UNSUPPORTED,
               "trainer: heterogeneous datasets train on one rank in this version");
    GD_REQUIRE(cfg->locality == 0, GD_ERR_UNSUPPORTED,
               "trainer: locality-aware sampling (--locality) is for homogeneous datasets");
    GD_ALLOC(h, sizeof *h, "the heterogeneous trainer");
    memset(h, 0, sizeof *h);
    h->ds = ds;
    h->cfg = *cfg;
    h->T = gd_dataset_num_node_types(ds);
    h->R = gd_dataset_num_edge_types(ds);
    h->L = cfg->num_layers;
    h->target = gd_dataset_target_type(ds);
    /* The mode (auto's pick) and the machine; a GPU mode without a GPU fails here. */
    GD_CHECK(plan_full(ds, cfg, &h->plan, h->hot));
    h->mode = h->plan.mode;
    h->gpu = h->mode != GD__TRAIN_CPU;
    h->gpu_sampling = h->mode == GD__TRAIN_ALL_GPU || h->mode == GD__TRAIN_ZERO_COPY;
    h->device = cfg->context ? gd_context_device(cfg->context) : cfg->device;
    if (h->gpu) {
#ifdef GD_WITH_CUDA
        GD_CHECK(gd__nn_cuda_ctx_create(h->device, &h->ctx));
#else
        GD_REQUIRE(0, GD_ERR_INTERNAL, "trainer: a GPU mode planned in a build without CUDA");
#endif
    } else {
        h->ctx = (gd__nn_ctx){&gd__nn_cpu_backend, GD__NN_HOST, NULL, NULL, NULL};
    }
    const int T = h->T, R = h->R, L = h->L;
    /*
     * The MLP baseline is R-SAGE with nothing sampled: an MLP over the seeds' own rows (their
     * root weights). R-GAT has no such term (no self loops between node sets), so with nothing
     * sampled it would see no features at all; its baseline is R-SAGE's.
     */
    h->kind = cfg->mlp ? GD__MODEL_RSAGE : cfg->model;

    /*
     * The sampler: each hop's fanout for every edge type. The MLP baseline samples nothing
     * (fanout 0): every relation's mean is then 0 and the model sees only the seeds' own rows.
     */
    int fanouts[GD_SAMPLER_MAX_LAYERS * GD_MAX_EDGE_TYPES];
    GD_CHECK(typed_fanouts(ds, cfg, fanouts));
    gd_sampler_options so = GD_SAMPLER_OPTIONS_INIT;
    so.max_batch = cfg->batch_size;
    so.seed = cfg->seed;
    so.threads = cfg->threads;
    so.backend = h->gpu_sampling ? GD_SAMPLER_CUDA : GD_SAMPLER_CPU;
    gd__hetero_graph_dev mapped;
    memset(&mapped, 0, sizeof mapped);
#ifdef GD_WITH_CUDA
    /* zero-copy reads the tables, and the graph's arrays the plan keeps there, in host memory
     * registered through the trainer's context. */
    if (h->mode == GD__TRAIN_ZERO_COPY) {
        GD_CHECK(gd__context_acquire(h->cfg.context, &h->device, &h->context));
        GD_CHECK(pin_graph(h, &mapped));
    }
#endif
    GD_CHECK(make_sampler(h, fanouts, &so, &mapped));

    /* The model, sized from the sampler's capacities. */
    gd__rsage_config rc;
    memset(&rc, 0, sizeof rc);
    memset(&h->rc, 0, sizeof h->rc);
    rc.schema.num_types = T;
    rc.schema.num_relations = R;
    rc.schema.target_type = h->target;
    for (int r = 0; r < R; r++) {
        gd_edge_type_info ei = GD_EDGE_TYPE_INFO_INIT;
        GD_CHECK(gd_dataset_edge_type(ds, r, &ei));
        rc.schema.rel_src[r] = ei.src_type;
        rc.schema.rel_dst[r] = ei.dst_type;
    }
    for (int t = 0; t < T; t++) {
        gd_node_type_info ti = GD_NODE_TYPE_INFO_INIT;
        GD_CHECK(gd_dataset_node_type(ds, t, &ti));
        rc.in_dim[t] = ti.feature_dim;
        if (ti.feature_dim == 0) continue;
        GD_CHECK(gd_dataset_type_features(ds, t, &h->feat[t]));
        const gd_dtype d = h->feat[t].dtype;
        GD_REQUIRE(d == GD_DTYPE_FLOAT32 || d == GD_DTYPE_FLOAT16 || d == GD_DTYPE_BFLOAT16,
                   GD_ERR_UNSUPPORTED,
                   "trainer: node type %d (%s) of dataset '%s' has %s features; training reads "
                   "float32, float16 or bfloat16 features (regenerate or convert with --dtype)",
                   t, ti.name, gd_dataset_name(ds), gd_dtype_name(d));
    }
    int64_t widths = 0;
    for (int t = 0; t < T; t++) widths += rc.in_dim[t];
    GD_REQUIRE(widths > 0, GD_ERR_INVALID_ARG,
               "trainer: no node type of dataset '%s' has features; give at least one type a "
               "feature table",
               gd_dataset_name(ds));
    rc.hidden_dim = cfg->hidden_dim;
    rc.num_classes = gd_dataset_num_classes(ds);
    rc.num_layers = L;
    rc.dropout = cfg->dropout;
    rc.dtype = GD_DTYPE_FLOAT32;
    /* The typed kinds share this config; attention kinds read heads and attn_dropout too. */
    GD_CHECK(gd__hetero_sampler_capacity(h->sampler, rc.max_nodes, rc.max_edges));
    gd__model_config mc = gd__model_config_make(h->kind, L, 0, cfg->hidden_dim, rc.num_classes,
                                                cfg->dropout, GD_DTYPE_FLOAT32);
    h->rc = rc;
    mc.typed = &h->rc;
    mc.heads = cfg->heads;
    mc.attn_dropout = cfg->attn_dropout;
    GD_CHECK(gd__model_create(&h->ctx, &mc, cfg->seed, &h->model));
    h->adam = (gd__nn_adam_options)GD__NN_ADAM_OPTIONS_INIT;
    h->adam.lr = cfg->lr;
    h->adam.weight_decay = cfg->weight_decay;

    /*
     * Buffers, each at its most: every type's input rows (the model's tensors; in cpu-centric
     * also the pinned rows the CPU gathers into, and copies of the ids and blocks), the seeds'
     * labels and the logits' gradient.
     */
    const int copies = h->mode == GD__TRAIN_CPU_CENTRIC;
    for (int t = 0; t < T; t++) {
        const int64_t cap = rc.max_nodes[t] > 0 ? rc.max_nodes[t] : 1;
        if (rc.in_dim[t] > 0) {
            GD_CHECK(gd__nn_tensor_alloc(&h->ctx, GD_DTYPE_FLOAT32, cap, rc.in_dim[t], &h->x[t]));
            if (copies)
                GD_CHECK(host_buf(h, (void **)&h->rows[t],
                                  (size_t)(cap * rc.in_dim[t]) * sizeof(float),
                                  "a node type's gathered rows"));
            else if (!h->gpu)
                h->rows[t] = h->x[t].data;
        }
        if (copies) GD_CHECK(nn_buf(h, (void **)&h->d_ids[t], (size_t)cap * sizeof(int64_t)));
    }
    if (copies)
        for (int l = 0; l < L; l++)
            for (int r = 0; r < R; r++) {
                const int64_t nd = rc.max_nodes[(l + 1) * T + rc.schema.rel_dst[r]];
                GD_CHECK(nn_buf(h, (void **)&h->d_indptr[l * R + r],
                                (size_t)(nd + 1) * sizeof(int32_t)));
                GD_CHECK(nn_buf(h, (void **)&h->d_indices[l * R + r],
                                (size_t)rc.max_edges[l * R + r] * sizeof(int32_t)));
            }
    if (h->gpu) {
        GD_CHECK(nn_buf(h, (void **)&h->d_labels, (size_t)cfg->batch_size * sizeof(int64_t)));
        GD_CHECK(nn_buf(h, (void **)&h->d_correct, sizeof(int64_t)));
    }
    GD_CHECK(host_buf(h, (void **)&h->labels, (size_t)cfg->batch_size * sizeof *h->labels,
                      "the seeds' labels"));
    GD_CHECK(gd__nn_tensor_alloc(&h->ctx, GD_DTYPE_FLOAT32, 1, 1, &h->loss));
    GD_CHECK(gd__nn_tensor_alloc(&h->ctx, GD_DTYPE_FLOAT32, cfg->batch_size, rc.num_classes,
                                 &h->dlogits));
#ifdef GD_WITH_CUDA
    if (h->gpu_sampling) GD_CHECK(place_tables(h));
#endif
    GD_CHECK(gd_dataset_array(ds, GD_ARRAY_LABELS, &h->label_view));
    int64_t most = 1;
    for (int s = 0; s < 3; s++) {
        if (gd_dataset_array(ds, (gd_array_id)(GD_ARRAY_TRAIN_IDX + s), &h->split[s]) != GD_OK)
            memset(&h->split[s], 0, sizeof h->split[s]);
        else if (h->split[s].shape[0] > most)
            most = h->split[s].shape[0];
    }
    GD_REQUIRE(h->split[0].data && h->split[0].shape[0] > 0, GD_ERR_INVALID_ARG,
               "trainer: dataset '%s' has no training nodes (train_idx is absent or empty)",
               gd_dataset_name(ds));
    GD_ALLOC(h->order, (size_t)most * sizeof *h->order, "the epoch's order");
    GD_ALLOC(h->train_ids, (size_t)h->split[0].shape[0] * sizeof *h->train_ids,
             "the training nodes");
    for (int64_t i = 0; i < h->split[0].shape[0]; i++)
        h->train_ids[i] = gd__int_at(h->split[0].data, h->split[0].dtype, i);
    gd_array_view off;
    GD_CHECK(gd_dataset_node_type_offsets(ds, &off));
    memcpy(h->type_off, off.data, (size_t)(T + 1) * sizeof(int64_t));
    GD_INFO("trainer: %s; %s of %d layers, %lld parameters", h->plan.text,
            gd__model_iface(h->model)->title, L, (long long)gd__model_num_params(h->model));
    *out = h;
    return GD_OK;
fail:
    gd__htrain_destroy(h);
    return st;
}

gd__model *gd__htrain_model(gd__htrain *h) {
    return h->model;
}
const gd__nn_ctx *gd__htrain_ctx(const gd__htrain *h) {
    return &h->ctx;
}

/*
 * cpu-centric: the minibatch the CPU made (blocks, ids, gathered rows) copied to the GPU on the
 * nn backend's stream, which then runs the model; *blocks and *ids are set to the GPU copies.
 * The host buffers may be refilled once the loss has been read back (gd__htrain_loss), which
 * waits for the stream.
 */
static gd_status copy_minibatch(gd__htrain *h, const gd_block **blocks,
                                const int64_t *const **ids) {
    gd_status st = GD_OK;
#ifdef GD_WITH_CUDA
    void *stream = h->ctx.stream;
    for (int i = 0; i < h->L * h->R; i++) {
        const gd_block *b = &h->blocks[i];
        GD_CHECK(gd__cuda_memcpy_async(h->d_indptr[i], b->indptr,
                                       (size_t)(b->num_dst + 1) * sizeof(int32_t), stream));
        if (b->num_edges > 0)
            GD_CHECK(gd__cuda_memcpy_async(h->d_indices[i], b->indices,
                                           (size_t)b->num_edges * sizeof(int32_t), stream));
        h->dblocks[i] = *b;
        h->dblocks[i].indptr = h->d_indptr[i];
        h->dblocks[i].indices = h->d_indices[i];
    }
    for (int t = 0; t < h->T; t++) {
        const int64_t rows = h->num_nodes[t];
        if (rows > 0)
            GD_CHECK(gd__cuda_memcpy_async(h->d_ids[t], h->ids[t], (size_t)rows * sizeof(int64_t),
                                           stream));
        h->dids[t] = h->d_ids[t];
        if (h->xp[t] && rows > 0)
            GD_CHECK(gd__cuda_memcpy_async(h->x[t].data, h->rows[t],
                                           (size_t)(rows * h->x[t].cols) * sizeof(float), stream));
    }
    *blocks = h->dblocks;
    *ids = h->dids;
#else
    (void)h;
    (void)blocks;
    (void)ids;
    GD_REQUIRE(0, GD_ERR_INTERNAL, "trainer: a GPU path in a build without CUDA");
#endif
fail:
    return st;
}

/*
 * The model on the GPU: what it reads there. cpu-centric copies the whole minibatch
 * (copy_minibatch); the GPU-centric modes have it there already, from the CUDA sampler and the
 * gather, and copy the seeds' labels alone. *labels and *correct are set to the GPU buffers.
 */
static gd_status to_device(gd__htrain *h, int64_t n, const gd_block **blocks,
                           const int64_t *const **ids, const int64_t **labels, int64_t **correct) {
    gd_status st = GD_OK;
    if (!h->gpu_sampling) GD_CHECK(copy_minibatch(h, blocks, ids));
#ifdef GD_WITH_CUDA
    if (n > 0)
        GD_CHECK(gd__cuda_memcpy_async(h->d_labels, h->labels, (size_t)n * sizeof(int64_t),
                                       h->ctx.stream));
#endif
    (void)n;
    *labels = h->d_labels;
    *correct = h->d_correct;
fail:
    return st;
}

/*
 * Type t's input rows on the GPU (GPU-centric): from its placed table (zero-copy: its GPU cache
 * and pinned host memory), on the nn stream.
 */
static gd_status gather_gpu(gd__htrain *h, int t) {
#ifdef GD_WITH_CUDA
    const gd_array_view *f = &h->feat[t];
    return gd__hetero_gather_cuda(h->device, &h->src[t], f->dtype, f->shape[1],
                                  h->type_off[t], h->ids[t], h->num_nodes[t], h->x[t].data,
                                  h->ctx.stream);
#else
    (void)h;
    (void)t;
    return gd__error(GD_ERR_INTERNAL, "trainer: a GPU path in a build without CUDA");
#endif
}

/*
 * Each featured type's input rows into the model's input tensors: on the CPU into rows[t]
 * (cpu: the tensors themselves; cpu-centric: pinned buffers copied later), or queued on the
 * GPU (GPU-centric), where the model reads them.
 */
static gd_status gather(gd__htrain *h) {
    gd_status st = GD_OK;
    for (int t = 0; t < h->T; t++) {
        const gd_array_view *f = &h->feat[t];
        h->xp[t] = NULL;
        if (!f->data) continue;
        if (h->gpu_sampling)
            GD_CHECK(gather_gpu(h, t));
        else {
            const gd__hetero_rows table = gd__hetero_rows_table(f->data);
            gd__hetero_gather_cpu(&table, f->dtype, f->shape[1], h->type_off[t], h->ids[t],
                                  h->num_nodes[t], h->rows[t], gd__num_threads());
        }
        h->xp[t] = &h->x[t];
    }
fail:
    return st;
}

/*
 * The CUDA sampler writes the minibatch on its own stream and returns once it is written (it
 * waits for that stream), so the nn stream's gathers and ops queued afterwards read it
 * complete; and the minibatch is rewritten only by the next load, after the previous one's
 * loss was read back (gd__htrain_loss waits for the nn stream). In the GPU-centric modes the
 * gather is queued, not run, by the time gather() returns: its time counts in the train
 * stage's.
 */
gd_status gd__htrain_load(gd__htrain *h, const int64_t *seeds, int64_t n, int64_t epoch,
                          int64_t b, double *times, gd__htrain_batch *out) {
    gd_status st = GD_OK;
    const int T = h->T, R = h->R, L = h->L;
    double t0 = gd__now();
    GD_CHECK(gd_hetero_sample(h->sampler, seeds, n, epoch, b, h->mb));
    for (int l = 0; l < L; l++)
        for (int r = 0; r < R; r++)
            GD_CHECK(gd_hetero_minibatch_block(h->mb, l, r, &h->blocks[l * R + r]));
    for (int l = 0; l <= L; l++)
        for (int t = 0; t < T; t++) {
            const int64_t *ids;
            GD_CHECK(gd_hetero_minibatch_nodes(h->mb, l, t, &ids, &h->num_nodes[l * T + t]));
            if (l == 0) h->ids[t] = ids;
        }
    double t1 = gd__now();
    if (times) times[0] += t1 - t0;
    GD_CHECK(gather(h));
    for (int64_t i = 0; i < n; i++)
        h->labels[i] = gd__int_at(h->label_view.data, h->label_view.dtype, seeds[i]);
    if (times) times[1] += gd__now() - t1;
    out->n = n;
    out->blocks = h->blocks;
    out->ids = h->ids;
    out->labels = h->labels;
    out->correct = &h->correct;
    if (h->gpu) GD_CHECK(to_device(h, n, &out->blocks, &out->ids, &out->labels, &out->correct));
    out->num_nodes = h->num_nodes;
    out->x = h->xp;
    out->host_blocks = h->blocks;
    out->host_ids = h->ids;
    out->host_labels = h->labels;
fail:
    return st;
}

gd_status gd__htrain_step(gd__htrain *h, const gd__htrain_batch *mb, gd__hstep_what what,
                          uint64_t dropout_seed, int count) {
    gd_status st = GD_OK;
    const int train = what == GD__HSTEP_TRAIN;
    gd__nn_tensor logits;
    GD_CHECK(gd__model_typed_forward(h->model, mb->blocks, mb->num_nodes, mb->x, mb->ids, train,
                                     dropout_seed, &logits));
    if (count) GD_CHECK(gd__nn_accuracy(&h->ctx, &logits, mb->labels, mb->correct));
    /* Evaluation computes no loss: its seeds may be unlabelled (-1), which the loss refuses. */
    if (what != GD__HSTEP_FORWARD) {
        gd__nn_tensor dl = gd__nn_rows(&h->dlogits, mb->n);
        GD_CHECK(gd__nn_softmax_xent(&h->ctx, &logits, mb->labels, 1.0, &h->loss, &dl));
    }
    if (train) {
        gd__nn_params *params = gd__model_params(h->model);
        gd__nn_tensor dl = gd__nn_rows(&h->dlogits, mb->n);
        GD_CHECK(gd__nn_params_zero_grad(&h->ctx, params));
        GD_CHECK(gd__model_typed_backward(h->model, &dl, NULL));
        GD_CHECK(gd__nn_params_adam(&h->ctx, params, &h->adam));
    }
fail:
    return st;
}

gd_status gd__htrain_loss(gd__htrain *h, float *loss) {
    return gd__nn_to_host(&h->ctx, &h->loss, loss); /* waits for the stream */
}

/*
 * One minibatch: load it (sample, gather each type's rows), forward and count the right
 * predictions; for training also the loss, backward and an Adam step. *loss gets the
 * minibatch's mean loss (training), correct and labelled its counts.
 */
static gd_status one_batch(gd__htrain *h, const int64_t *seeds, int64_t n, int64_t epoch, int64_t b,
                           int train, double *loss, int64_t *correct, int64_t *labelled,
                           double *times) {
    gd_status st = GD_OK;
    gd__htrain_batch mb;
    GD_CHECK(gd__htrain_load(h, seeds, n, epoch, b, times, &mb));
    const double t2 = gd__now();
    int64_t lab = 0;
    for (int64_t i = 0; i < n; i++) lab += h->labels[i] >= 0;
    GD_CHECK(gd__htrain_step(h, &mb, train ? GD__HSTEP_TRAIN : GD__HSTEP_FORWARD,
                             dropout_seed(h, epoch, b), 1));
    float loss_host = 0;
    GD_CHECK(gd__htrain_loss(h, &loss_host));
    if (h->gpu) {
        GD_CHECK(h->ctx.be->to_host(&h->ctx, &h->correct, h->d_correct, sizeof h->correct));
        GD_CHECK(gd__nn_check_errors(&h->ctx));
    }
    if (train) *loss = loss_host;
    *correct = h->correct;
    *labelled = lab;
    times[2] += gd__now() - t2;
fail:
    return st;
}

gd_status gd__htrain_epoch(gd__htrain *h, int64_t epoch, gd__train_epoch_stats *stats) {
    gd_status st = GD_OK;
    const double start = gd__now(), cpu0 = gd__cpu_seconds();
    const int64_t n = h->split[0].shape[0], B = h->cfg.batch_size;
    int64_t batches = 0, correct = 0, labelled = 0;
    double loss_sum = 0, times[3] = {0, 0, 0};
    memset(stats, 0, sizeof *stats);
    stats->epoch = epoch;
    GD_CHECK(gd_seed_batches(h->train_ids, n, B, h->cfg.seed, epoch, 0, h->order, &batches));
    if (h->cfg.max_batches > 0 && batches > h->cfg.max_batches) batches = h->cfg.max_batches;
    for (int64_t b = 0; b < batches; b++) {
        const int64_t k = b * B + B <= n ? B : n - b * B;
        double loss = 0;
        int64_t c = 0, l = 0;
        GD_CHECK(one_batch(h, h->order + b * B, k, epoch, b, 1, &loss, &c, &l, times));
        GD_REQUIRE(isfinite(loss), GD_ERR_RANGE,
                   "trainer: the loss of epoch %lld, minibatch %lld is %g; lower the learning "
                   "rate (now %g)",
                   (long long)epoch, (long long)b, loss, h->cfg.lr);
        loss_sum += loss;
        correct += c;
        labelled += l;
        if (h->cfg.progress &&
            ((b + 1) % (h->cfg.report_every > 0 ? h->cfg.report_every : 20) == 0 ||
             b + 1 == batches))
            GD_REQUIRE(h->cfg.progress(h->cfg.progress_user, b + 1, batches, loss) == 0,
                       GD_ERR_INTERRUPTED, "training stopped by the progress callback");
    }
    stats->batches = batches;
    stats->loss = batches ? loss_sum / (double)batches : NAN;
    stats->train_acc = labelled ? (double)correct / (double)labelled : NAN;
    stats->sample_s = times[0];
    stats->gather_s = times[1];
    stats->train_s = times[2];
    stats->seconds = gd__now() - start;
    stats->cpu_core_s = gd__cpu_seconds() - cpu0;
fail:
    return st;
}

gd_status gd__htrain_evaluate(gd__htrain *h, gd_array_id split, double *accuracy, int64_t *count) {
    gd_status st = GD_OK;
    const int s = (int)(split - GD_ARRAY_TRAIN_IDX);
    const gd_array_view *v = &h->split[s];
    const int64_t n = v->data ? v->shape[0] : 0, B = h->cfg.batch_size;
    int64_t correct = 0, labelled = 0;
    double times[3] = {0, 0, 0}, loss = 0;
    for (int64_t i = 0; i < n; i++) h->order[i] = gd__int_at(v->data, v->dtype, i);
    for (int64_t b = 0; b * B < n; b++) {
        const int64_t k = b * B + B <= n ? B : n - b * B;
        int64_t c = 0, l = 0;
        GD_CHECK(one_batch(h, h->order + b * B, k, GD__TRAIN_EVAL_EPOCH + s, b, 0, &loss, &c, &l,
                           times));
        correct += c;
        labelled += l;
    }
    *accuracy = labelled ? (double)correct / (double)labelled : NAN;
    if (count) *count = labelled;
fail:
    return st;
}

void gd__htrain_info(const gd__htrain *h, gd__trainer_info *info) {
    memset(info, 0, sizeof *info);
    info->mode = h->mode;
    snprintf(info->plan, sizeof info->plan, "%s", h->plan.text);
    info->num_params = gd__model_num_params(h->model);
    for (int t = 0; t < h->T; t++) {
        info->max_input_nodes += h->x[t].rows;
        info->feature_bytes += gd__nn_numel(&h->x[t]) * (int64_t)sizeof(float);
    }
    for (int s = 0; s < 3; s++) {
        const int64_t n = h->split[s].data ? h->split[s].shape[0] : 0;
        if (s == 0) info->train_nodes = n;
        if (s == 1) info->valid_nodes = n;
        if (s == 2) info->test_nodes = n;
    }
}

void gd__htrain_checkpoint_meta(const gd__htrain *h, gd__checkpoint_meta *m) {
    gd__checkpoint_meta_init(m);
    snprintf(m->model, sizeof m->model, "%s", gd__model_iface(h->model)->name);
    m->num_layers = h->L;
    /* The input width of every type together (each one's is in the config's widths). */
    m->in_dim = 0;
    for (int t = 0; t < h->T; t++) m->in_dim += h->feat[t].data ? h->feat[t].shape[1] : 0;
    m->hidden_dim = h->cfg.hidden_dim;
    /* Heads are R-GAT's; a kind without attention has one, as the homogeneous trainer writes. */
    m->heads = h->kind == GD__MODEL_RGAT && h->cfg.heads > 0 ? h->cfg.heads : 1;
    m->num_classes = gd_dataset_num_classes(h->ds);
    for (int l = 0; l < h->L; l++) m->fanouts[l] = h->cfg.fanouts[l];
    m->seed = h->cfg.seed;
    m->adam_step = gd__model_params(h->model)->step;
    char widths[256] = "";
    size_t used = 0;
    for (int t = 0; t < h->T && used < sizeof widths; t++) {
        gd_node_type_info ti = GD_NODE_TYPE_INFO_INIT;
        if (gd_dataset_node_type(h->ds, t, &ti) != GD_OK) break;
        used += (size_t)snprintf(widths + used, sizeof widths - used, "%s%s:%lld", t ? "," : "",
                                 ti.name, (long long)ti.feature_dim);
    }
    snprintf(m->dataset, sizeof m->dataset,
             "%s nodes=%lld edges=%lld types=%d relations=%d classes=%lld", gd_dataset_name(h->ds),
             (long long)gd_dataset_num_nodes(h->ds), (long long)gd_dataset_num_edges(h->ds), h->T,
             h->R, (long long)gd_dataset_num_classes(h->ds));
    char attn[48] = "";
    if (h->kind == GD__MODEL_RGAT && h->cfg.attn_dropout > 0)
        snprintf(attn, sizeof attn, " attn_dropout=%g", h->cfg.attn_dropout);
    snprintf(m->config, sizeof m->config,
             "batch=%lld dropout=%g lr=%g weight_decay=%g max_batches=%lld widths=%s "
             "relation_fanouts=%.400s%s",
             (long long)h->cfg.batch_size, h->cfg.dropout, h->cfg.lr, h->cfg.weight_decay,
             (long long)h->cfg.max_batches, widths,
             h->cfg.relation_fanouts ? h->cfg.relation_fanouts : "-", attn);
}

void gd__htrain_set_max_batches(gd__htrain *h, int64_t max_batches) {
    if (max_batches >= 0) h->cfg.max_batches = max_batches;
}

gd_status gd__htrain_exact(gd__htrain *h, gd_array_id split, double *accuracy, int64_t *count) {
    gd_status st = GD_OK;
    int32_t *pred = NULL;
    GD_REQUIRE(gd__htrain_has_exact(h), GD_ERR_UNSUPPORTED,
               "exact (layer-wise) inference of %s is not built yet; evaluate with sampled "
               "neighbours (exact = 0)",
               gd__model_iface(h->model)->title);
    gd_node_type_info ti = GD_NODE_TYPE_INFO_INIT;
    GD_CHECK(gd_dataset_node_type(h->ds, h->target, &ti));
    GD_ALLOC(pred, (size_t)(ti.count > 0 ? ti.count : 1) * sizeof *pred,
             "the exact predictions of the target type");
    /*
     * The layer-wise passes run on the model's backend. On a GPU they get half of the memory
     * free now, at most the trainer's budget, and read the tables zero-copy mode registered.
     */
    gd__hinfer_options io;
    memset(&io, 0, sizeof io);
    if (h->gpu) {
        gd_device_info info;
        GD_CHECK(gd_device_info_get(h->ctx.device, &info));
        io.memory_budget = info.free_memory / 2;
        if (h->plan.budget > 0) io.memory_budget = gd__min64(io.memory_budget, h->plan.budget);
        for (int t = 0; t < h->T; t++) io.features[t] = h->pinned[t];
    }
    if (h->kind == GD__MODEL_RGAT)
        GD_CHECK(gd__htrain_exact_rgat(h->ds, h->model, &io, pred, NULL));
    else
        GD_CHECK(gd__htrain_exact_rsage(h->ds, h->model, &io, pred, NULL));
    const gd_array_view *v = &h->split[split - GD_ARRAY_TRAIN_IDX];
    int64_t correct = 0, labelled = 0;
    for (int64_t i = 0; v->data && i < v->shape[0]; i++) {
        const int64_t id = gd__int_at(v->data, v->dtype, i),
                      label = gd__int_at(h->label_view.data, h->label_view.dtype, id);
        if (label < 0) continue;
        labelled++;
        correct += pred[id - ti.offset] == label;
    }
    *accuracy = labelled ? (double)correct / (double)labelled : NAN;
    if (count) *count = labelled;
fail:
    gd_free(pred);
    return st;
}

int gd__htrain_has_exact(const gd__htrain *h) {
    return h->kind == GD__MODEL_RSAGE || h->kind == GD__MODEL_RGCN || h->kind == GD__MODEL_RGAT;
}
