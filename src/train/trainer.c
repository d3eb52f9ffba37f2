/*
 * The trainer: the data path of docs/design.md (seeds -> sample -> gather -> train) in the modes
 * of src/train/internal.h. Creation places the graph and the features for the mode, builds the
 * sampler, the gatherer, the nn backend and the model, and allocates every buffer; an epoch then
 * allocates nothing.
 *
 * cpu mode runs one minibatch after another on the CPU. The GPU modes pipeline the stages over
 * a ring of `depth` buffer sets (a minibatch buffer, the gathered rows, the labels and, for
 * cpu-centric, a device copy of the blocks). Minibatch b uses set b % depth:
 *
 *   sample stream   wait(trained[set]) ; sample b              ; record sampled[set]
 *   gather stream   wait(sampled[set]) ; gather b, labels b    ; record gathered[set]
 *   train stream    wait(gathered[set]); forward, loss, backward, Adam ; record trained[set]
 *
 * The host issues sampling depth - 1 minibatches ahead of training. The only host waits are on
 * events of minibatches issued long before: the sizes of minibatch b (needed to launch the
 * gather and the GEMMs with the right shapes), which were sampled behind the training of
 * b - depth while b - depth + 1 ... b - 1 still queue on the GPU. Losses and correct counts are
 * copied into pinned arrays by the train stream and read at the end of the epoch; progress
 * reports read the latest finished one without waiting. The stage times come from timing events
 * on each stream, read once the set comes round again.
 *
 * cpu-centric runs the CPU sampler and the CPU gather (into pinned memory, one copy) on the host
 * thread while the GPU trains the previous minibatches: the usual DataLoader pipeline, the
 * baseline the GPU-centric modes are measured against.
 */
#include "train/pipeline.h"

#include "core/cuda.h"
#include "io/dataset.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* Philox domain of the per-minibatch dropout keys ("trDK"). */
#define GD__TRAIN_RNG_DROPOUT 0x7472444bu
/* GPU memory kept free beyond the estimate (cuBLAS workspaces, kernels' own buffers). */
#define GPU_RESERVE (INT64_C(768) << 20)

static const char *const mode_names[GD__TRAIN_MODE_COUNT] = {"cpu", "all-gpu", "zero-copy",
                                                             "cpu-centric", "auto"};

const char *gd__train_mode_name(gd__train_mode mode) {
    return (int)mode >= 0 && mode < GD__TRAIN_MODE_COUNT ? mode_names[mode] : NULL;
}

gd_status gd__train_mode_parse(const char *name, gd__train_mode *out) {
    for (int m = 0; m < GD__TRAIN_MODE_COUNT; m++)
        if (name && strcmp(name, mode_names[m]) == 0) {
            *out = (gd__train_mode)m;
            return GD_OK;
        }
    return gd__error(GD_ERR_INVALID_ARG,
                     "unknown training mode '%s': use cpu, all-gpu, zero-copy, cpu-centric or auto",
                     name ? name : "(null)");
}

static int64_t min64(int64_t a, int64_t b) {
    return a < b ? a : b;
}
static int64_t max64(int64_t a, int64_t b) {
    return a > b ? a : b;
}

static int64_t int_at(const gd_array_view *v, int64_t i) {
    return v->dtype == GD_DTYPE_INT32 ? (int64_t)((const int32_t *)v->data)[i]
                                      : ((const int64_t *)v->data)[i];
}

static double cpu_seconds(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
           (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

static const char *gib(int64_t bytes, char *buf, size_t n) {
    snprintf(buf, n, "%.2f GiB", (double)bytes / (double)(INT64_C(1) << 30));
    return buf;
}

/* --------------------------------------------------------------- teardown */

static void features_release(gd__trainer *t);

static void free_nn(gd__trainer *t, void *p) {
    if (p) t->ctx.be->release(&t->ctx, p);
}

static void destroy_set(gd__trainer *t, train_set *s) {
#ifdef GD_WITH_CUDA
    for (int e = 0; e < EV_COUNT; e++) gd__cuda_event_destroy(s->ev[e]);
    gd__cuda_host_free(s->label_stage);
    gd__cuda_host_free(s->blk_stage);
    gd__cuda_free(s->blk_dev);
#endif
    gd_minibatch_destroy(s->mb);
    gd__nn_tensor_free(&t->ctx, &s->x);
    free_nn(t, s->labels);
    memset(s, 0, sizeof *s);
}

void gd__trainer_destroy(gd__trainer *t) {
    if (!t) return;
#ifdef GD_WITH_CUDA
    /* Nothing may still be running on the buffers about to be freed. */
    if (t->s_sample) (void)gd__cuda_stream_sync(t->s_sample);
    if (t->s_gather) (void)gd__cuda_stream_sync(t->s_gather);
#endif
    if (t->ctx.be) (void)t->ctx.be->synchronize(&t->ctx);
    gd__model_destroy(t->model);
    for (int i = 0; i < GD__TRAIN_MAX_DEPTH; i++) destroy_set(t, &t->sets[i]);
    if (t->ctx.be) {
        gd__nn_tensor_free(&t->ctx, &t->loss);
        gd__nn_tensor_free(&t->ctx, &t->dlogits);
        free_nn(t, t->d_correct);
    }
    gd_gatherer_destroy(t->gatherer);
    features_release(t);
    gd_minibatch_destroy(t->host_mb);
    gd_sampler_destroy(t->sampler);
    gd_graph_destroy(t->graph);
#ifdef GD_WITH_CUDA
    gd__cuda_free(t->d_order);
    gd__cuda_stream_destroy(t->s_sample);
    gd__cuda_stream_destroy(t->s_gather);
    if (t->gpu) {
        gd__cuda_host_free(t->loss_log);
        gd__cuda_host_free(t->correct_log);
        t->loss_log = NULL;
        t->correct_log = NULL;
    }
    if (t->ctx.be == &gd__nn_cuda_backend) gd__nn_cuda_ctx_destroy(&t->ctx);
#endif
    gd_free(t->loss_log);
    gd_free(t->correct_log);
    for (int i = 0; i < 3; i++) gd_free(t->split[i]);
    gd_free(t->order);
    gd_free(t);
}

/* ----------------------------------------------------------------- create */

static gd_status check_config(const gd_dataset_t *ds, const gd__train_config *c) {
    gd_status st = GD_OK;
    GD_REQUIRE(ds && c, GD_ERR_INVALID_ARG, "gd__trainer_create: NULL dataset or config");
    GD_REQUIRE(c->num_layers >= 1 && c->num_layers <= GD_SAMPLER_MAX_LAYERS &&
                   c->num_layers <= GD__MODEL_MAX_LAYERS,
               GD_ERR_INVALID_ARG, "trainer: %d layers; use 1 to %d", c->num_layers,
               GD_SAMPLER_MAX_LAYERS);
    for (int h = 0; h < c->num_layers; h++)
        GD_REQUIRE(c->fanouts[h] >= -1, GD_ERR_INVALID_ARG,
                   "trainer: fanout %d of hop %d; use -1 (all neighbours) or a count >= 0",
                   c->fanouts[h], h);
    GD_REQUIRE(c->batch_size >= 1, GD_ERR_INVALID_ARG, "trainer: batch size %lld; use >= 1",
               (long long)c->batch_size);
    GD_REQUIRE(c->hidden_dim >= 1, GD_ERR_INVALID_ARG, "trainer: hidden size %lld; use >= 1",
               (long long)c->hidden_dim);
    GD_REQUIRE(c->dropout >= 0 && c->dropout < 1, GD_ERR_INVALID_ARG,
               "trainer: dropout %g; use a probability in [0, 1)", c->dropout);
    GD_REQUIRE(c->lr > 0 && isfinite(c->lr), GD_ERR_INVALID_ARG,
               "trainer: learning rate %g; use a positive number", c->lr);
    GD_REQUIRE(c->weight_decay >= 0 && isfinite(c->weight_decay), GD_ERR_INVALID_ARG,
               "trainer: weight decay %g; use a number >= 0", c->weight_decay);
    GD_REQUIRE((int)c->mode >= 0 && c->mode < GD__TRAIN_MODE_COUNT, GD_ERR_INVALID_ARG,
               "trainer: mode %d is not a mode", (int)c->mode);
    GD_REQUIRE(gd__model_kind_iface(c->model), GD_ERR_INVALID_ARG,
               "trainer: model kind %d is not a model kind", (int)c->model);
    GD_REQUIRE(c->depth >= 2 && c->depth <= GD__TRAIN_MAX_DEPTH, GD_ERR_INVALID_ARG,
               "trainer: a ring of %d buffer sets; use 2 to %d", c->depth, GD__TRAIN_MAX_DEPTH);
    GD_REQUIRE(c->gpu_cache_bytes >= -1 && c->graph_cache_bytes >= -1 && c->gpu_mem_budget >= 0 &&
                   c->max_batches >= 0 && c->report_every >= 0,
               GD_ERR_INVALID_ARG, "trainer: a negative cache size, budget or count");
    GD_REQUIRE(gd_dataset_feature_dim(ds) > 0, GD_ERR_INVALID_ARG,
               "trainer: dataset '%s' has no node features", gd_dataset_name(ds));
    GD_REQUIRE(c->loader || gd_dataset_num_classes(ds) >= 2, GD_ERR_INVALID_ARG,
               "trainer: dataset '%s' has %lld classes; training needs labels of >= 2 classes",
               gd_dataset_name(ds), (long long)gd_dataset_num_classes(ds));
fail:
    return st;
}

/* An int64 copy of split id (NULL and 0 if the dataset has none). */
static gd_status load_split(const gd_dataset_t *ds, gd_array_id id, int64_t **out, int64_t *n) {
    gd_status st = GD_OK;
    gd_array_view v;
    *out = NULL;
    *n = 0;
    st = gd_dataset_array(ds, id, &v);
    if (st == GD_ERR_NOT_FOUND) {
        gd_clear_error();
        return GD_OK;
    }
    GD_CHECK(st);
    int64_t *ids = NULL;
    GD_ALLOC(ids, (size_t)v.shape[0] * sizeof(int64_t), gd_array_name(id));
    for (int64_t i = 0; i < v.shape[0]; i++) ids[i] = int_at(&v, i);
    *out = ids;
    *n = v.shape[0];
fail:
    return st;
}

/* The fanouts the sampler uses: all 0 for the MLP baseline. */
static void sampler_fanouts(const gd__train_config *c, int *fanouts) {
    for (int h = 0; h < c->num_layers; h++) fanouts[h] = c->mlp ? 0 : c->fanouts[h];
}

/* The model's config: its shape from the trainer's, its capacities for the sampler's blocks. */
static void model_config(const gd__trainer *t, int64_t max_degree, int64_t max_input,
                         gd__model_config *mc) {
    int fanouts[GD_SAMPLER_MAX_LAYERS];
    sampler_fanouts(&t->cfg, fanouts);
    *mc = gd__model_config_make(t->cfg.model, t->cfg.num_layers, t->in_dim, t->cfg.hidden_dim,
                                t->num_classes, t->cfg.dropout, GD_DTYPE_FLOAT32);
    const gd__model_shape shape = {.num_layers = t->cfg.num_layers,
                                   .fanouts = fanouts,
                                   .batch = t->batch,
                                   .max_degree = max_degree,
                                   .num_nodes = t->num_nodes,
                                   .max_input_nodes = max_input};
    gd__model_capacity(&shape, mc);
}

/* The memory each placement needs, for auto and for the budget checks. */
typedef struct {
    int64_t graph_bytes;   /* indptr + indices as the GPU would hold them */
    int64_t indptr_bytes;  /* indptr alone */
    int64_t feature_bytes; /* the feature table */
    int64_t fixed_bytes;   /* ring, sampler scratch, model: what every GPU mode needs */
} mem_need;

static gd_status estimate(gd__trainer *t, const gd_sampler_info *si, const gd__model_config *mc,
                          int depth, mem_need *m) {
    gd_status st = GD_OK;
    gd_graph_info gi = GD_GRAPH_INFO_INIT;
    GD_CHECK(gd_graph_get_info(t->graph, &gi));
    const int64_t n = t->num_nodes, idx = gi.num_nodes < (INT64_C(1) << 31) ? 4 : 8;
    m->indptr_bytes = 8 * (n + 1);
    m->graph_bytes = m->indptr_bytes + idx * gi.num_edges;
    m->feature_bytes = n * t->in_dim * 4;
    m->fixed_bytes =
        depth * (si->minibatch_bytes + si->max_input_nodes * t->in_dim * 4 + t->batch * 8) +
        2 * si->minibatch_bytes + gd__model_bytes(mc) + GPU_RESERVE;
fail:
    return st;
}

/*
 * The memory each placement needs, estimated before anything is placed: the worst-case
 * minibatch comes from a CPU sampler of one thread over the borrowed host graph (cheap), the
 * rest from the shapes.
 */
static gd_status needs(gd__trainer *t, mem_need *m) {
    gd_status st = GD_OK;
    gd_sampler_t *s = NULL;
    int fanouts[GD_SAMPLER_MAX_LAYERS];
    sampler_fanouts(&t->cfg, fanouts);
    gd_sampler_options so = GD_SAMPLER_OPTIONS_INIT;
    so.max_batch = t->batch;
    so.threads = 1;
    GD_CHECK(gd_sampler_create(t->graph, fanouts, t->cfg.num_layers, &so, &s));
    gd_sampler_info si = GD_SAMPLER_INFO_INIT;
    GD_CHECK(gd_sampler_get_info(s, &si));
    gd_graph_info gi = GD_GRAPH_INFO_INIT;
    GD_CHECK(gd_graph_get_info(t->graph, &gi));
    gd__model_config mc;
    model_config(t, gi.max_degree, si.max_input_nodes, &mc);
    GD_CHECK(estimate(t, &si, &mc, t->cfg.depth, m));
fail:
    gd_sampler_destroy(s);
    return st;
}

/* Host memory that may be page-locked (RLIMIT_MEMLOCK; INT64_MAX = unlimited). */
static int64_t memlock_limit(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return INT64_MAX;
    return (int64_t)rl.rlim_cur;
}

/*
 * auto: all-gpu when graph, features and the fixed buffers fit in the budget; else zero-copy
 * when the features and the graph's indices may be page-locked; else cpu-centric. Without a
 * GPU: cpu. The reason goes to t->plan; the estimate, when one was made, to *m (*have = 1).
 */
static gd_status pick_mode(gd__trainer *t, int64_t budget, mem_need *m, int *have) {
    gd_status st = GD_OK;
    char a[32], b[32], c[32], d[32];
#ifdef GD_WITH_CUDA
    const int have_gpu = gd__cuda_device_count() > 0;
#else
    const int have_gpu = 0;
#endif
    if (!have_gpu) {
        t->mode = GD__TRAIN_CPU;
        snprintf(t->plan, sizeof t->plan,
                 "auto picked cpu: %s, so sampling, gathering and training run on the CPU",
#ifdef GD_WITH_CUDA
                 "no GPU is visible"
#else
                 "graphdirect was built without CUDA"
#endif
        );
        return GD_OK;
    }
    GD_CHECK(needs(t, m));
    *have = 1;
    const int64_t all = m->graph_bytes + m->feature_bytes + m->fixed_bytes;
    const int64_t pin = m->feature_bytes + (m->graph_bytes - m->indptr_bytes);
    if (all <= budget) {
        t->mode = GD__TRAIN_ALL_GPU;
        snprintf(t->plan, sizeof t->plan,
                 "auto picked all-gpu: graph %s + features %s + buffers %s fit in the GPU memory "
                 "budget of %s",
                 gib(m->graph_bytes, a, sizeof a), gib(m->feature_bytes, b, sizeof b),
                 gib(m->fixed_bytes, c, sizeof c), gib(budget, d, sizeof d));
    } else if (pin <= memlock_limit() && m->indptr_bytes + m->fixed_bytes <= budget) {
        t->mode = GD__TRAIN_ZERO_COPY;
        snprintf(t->plan, sizeof t->plan,
                 "auto picked zero-copy: graph %s + features %s + buffers %s exceed the GPU "
                 "memory budget of %s, so features and neighbour lists stay in pinned host "
                 "memory and the GPU caches the hottest feature rows in what is left",
                 gib(m->graph_bytes, a, sizeof a), gib(m->feature_bytes, b, sizeof b),
                 gib(m->fixed_bytes, c, sizeof c), gib(budget, d, sizeof d));
    } else {
        t->mode = GD__TRAIN_CPU_CENTRIC;
        snprintf(t->plan, sizeof t->plan,
                 "auto picked cpu-centric: the data does not fit in the GPU memory budget of %s "
                 "and %s of host memory cannot be page-locked (ulimit -l); raise the limit "
                 "(`ulimit -l unlimited`) for zero-copy",
                 gib(budget, d, sizeof d), gib(pin, a, sizeof a));
    }
fail:
    return st;
}

/*
 * Registered feature tables shared by the trainers and loaders of this process: CUDA pins a
 * range of host memory once, so a second zero-copy trainer or loader over the same dataset (a
 * training loader beside a validation one) shares the first one's registered tensor. Keyed by
 * the table's address and device; the last user destroys it.
 */
#define PIN_SLOTS 16
static struct {
    const void *data;
    int device;
    int refs;
    gd_host_tensor_t *tensor;
} pin_table[PIN_SLOTS];
static pthread_mutex_t pin_mu = PTHREAD_MUTEX_INITIALIZER;

/* The registered tensor of data on device, shared, or NULL (then *slot is a free slot, or -1). */
static gd_host_tensor_t *pin_lookup(const void *data, int device, int *slot) {
    *slot = -1;
    for (int i = 0; i < PIN_SLOTS; i++) {
        if (pin_table[i].refs > 0 && pin_table[i].data == data && pin_table[i].device == device) {
            pin_table[i].refs++;
            *slot = i;
            return pin_table[i].tensor;
        }
        if (pin_table[i].refs == 0 && *slot < 0) *slot = i;
    }
    return NULL;
}

/* Give back t: a shared registered table loses a user, any other tensor is destroyed. */
static void features_release(gd__trainer *t) {
    if (!t->features) return;
    pthread_mutex_lock(&pin_mu);
    for (int i = 0; i < PIN_SLOTS; i++)
        if (pin_table[i].refs > 0 && pin_table[i].tensor == t->features) {
            if (--pin_table[i].refs == 0) gd_host_tensor_destroy(pin_table[i].tensor);
            pthread_mutex_unlock(&pin_mu);
            t->features = NULL;
            return;
        }
    pthread_mutex_unlock(&pin_mu);
    gd_host_tensor_destroy(t->features);
    t->features = NULL;
}

/* The features as a host tensor, registered for the GPU when the mode reads them zero-copy. */
static gd_status place_features(gd__trainer *t) {
    gd_status st = GD_OK;
    gd_array_view fv;
    int locked = 0;
    GD_CHECK(gd_dataset_array(t->ds, GD_ARRAY_FEATURES, &fv));
    GD_REQUIRE(fv.dtype == GD_DTYPE_FLOAT32, GD_ERR_UNSUPPORTED,
               "trainer: dataset '%s' has %s features; training reads float32 features "
               "(regenerate or convert with float32)",
               gd_dataset_name(t->ds), gd_dtype_name(fv.dtype));
    /* Page-locking a read-only file mapping is not portable: zero-copy pins a copy of it. */
    const int ro = t->ds->arrays[GD_ARRAY_FEATURES].store == GD__STORE_MAP_RO;
    if (t->mode == GD__TRAIN_ZERO_COPY && ro) {
        GD_CHECK(gd_host_tensor_create(fv.shape[0], fv.shape[1], fv.dtype, 0, &t->features));
        memcpy(gd_host_tensor_data(t->features), fv.data,
               (size_t)(fv.shape[0] * gd_host_tensor_row_bytes(t->features)));
        GD_CHECK(gd_host_tensor_register(t->features, t->cfg.device));
    } else if (t->mode == GD__TRAIN_ZERO_COPY) {
        int slot;
        pthread_mutex_lock(&pin_mu);
        locked = 1;
        t->features = pin_lookup(fv.data, t->cfg.device, &slot);
        if (!t->features) {
            GD_REQUIRE(slot >= 0, GD_ERR_UNSUPPORTED,
                       "trainer: more than %d zero-copy feature tables registered at once",
                       PIN_SLOTS);
            gd_host_tensor_t *ht = NULL;
            GD_CHECK(gd_host_tensor_adopt(fv.data, fv.shape[0], fv.shape[1], fv.dtype, 0u, &ht));
            st = gd_host_tensor_register(ht, t->cfg.device);
            if (st != GD_OK) {
                gd_host_tensor_destroy(ht);
                goto fail;
            }
            pin_table[slot].data = fv.data;
            pin_table[slot].device = t->cfg.device;
            pin_table[slot].refs = 1;
            pin_table[slot].tensor = ht;
            t->features = ht;
        }
        pthread_mutex_unlock(&pin_mu);
        locked = 0;
    } else {
        GD_CHECK(gd_host_tensor_adopt(fv.data, fv.shape[0], fv.shape[1], fv.dtype,
                                      ro ? GD_HOST_TENSOR_READ_ONLY : 0u, &t->features));
    }
fail:
    if (locked) pthread_mutex_unlock(&pin_mu);
    return st;
}

#ifdef GD_WITH_CUDA
static gd_status used_gpu(const gd__trainer *t, int64_t free0, int64_t *used) {
    gd_status st = GD_OK;
    int64_t f, total;
    GD_CHECK(gd__cuda_mem_info(t->cfg.device, &f, &total));
    *used = free0 - f;
fail:
    return st;
}
#endif

/* The gatherer of the mode; zero-copy sizes its cache from what the budget leaves. */
static gd_status make_gatherer(gd__trainer *t, int64_t budget, int64_t free0) {
    gd_status st = GD_OK;
    int64_t *scores = NULL;
    gd_gatherer_options go = GD_GATHERER_OPTIONS_INIT;
    go.threads = t->cfg.threads;
    go.max_ids = max64(t->sinfo.max_input_nodes, 1);
    go.sm_budget = t->cfg.gather_sms;
    gd_gather_mode gm = GD_GATHER_CPU;
    switch (t->mode) {
    case GD__TRAIN_ALL_GPU:
        gm = GD_GATHER_GPU;
        break;
    case GD__TRAIN_CPU_CENTRIC:
        gm = GD_GATHER_CPU_DMA;
        break;
    case GD__TRAIN_ZERO_COPY:
        gm = GD_GATHER_ZEROCOPY;
        break;
    default:
        break;
    }
#ifdef GD_WITH_CUDA
    if (gm == GD_GATHER_ZEROCOPY) {
        int64_t cache = t->cfg.gpu_cache_bytes, used;
        const int64_t table = t->num_nodes * gd_host_tensor_row_bytes(t->features);
        if (cache < 0) {
            /* What is left of the budget, less the location map and the gather's buffers. */
            GD_CHECK(used_gpu(t, free0, &used));
            cache = budget - used - GPU_RESERVE - 8 * t->num_nodes - 64 * go.max_ids;
            cache = cache < 0 ? 0 : min64(cache, table);
        }
        /*
         * Rows left in host memory make the gather PCIe-bound, and then a gather spread over
         * every SM only holds SMs the training kernels need: on papers with a 16 GiB budget the
         * training step went from 1.5 ms to 7.3 ms beside it. 10 % of the SMs (a green
         * context) still saturate what the link delivers and the step stays near 2 ms
         * (docs/train.md). Unless the caller or GD_GATHER_SMS says otherwise.
         */
        if (!go.sm_budget && cache < table && !getenv("GD_GATHER_SMS")) go.sm_budget = "10%";
        if (cache > 0) {
            gd_array_view ip, ix;
            GD_CHECK(gd_dataset_array(t->ds, GD_ARRAY_INDPTR, &ip));
            GD_CHECK(gd_dataset_array(t->ds, GD_ARRAY_INDICES, &ix));
            GD_ALLOC(scores, (size_t)t->num_nodes * sizeof(int64_t), "the feature cache scores");
            GD_CHECK(gd_csc_degree_scores(t->num_nodes, ip.data, ix.data, ix.dtype, GD_DEGREE_OUT,
                                          scores));
            go.cache_bytes = cache;
            go.cache_scores = scores;
        }
    }
#else
    (void)budget;
    (void)free0;
#endif
    GD_CHECK(gd_gatherer_create(t->features, t->cfg.device, gm, &go, &t->gatherer));
    gd_gatherer_info gi = GD_GATHERER_INFO_INIT;
    GD_CHECK(gd_gatherer_get_info(t->gatherer, &gi));
    t->feature_cache_rows = gi.cached_rows;
    t->feature_cache_bytes = gi.cache_bytes;
    if (t->mode == GD__TRAIN_ZERO_COPY) {
        const size_t used = strlen(t->plan);
        char a[32], b[32];
        snprintf(t->plan + used, sizeof t->plan - used,
                 "; GPU caches: neighbour lists %s, feature rows %s (%lld rows); gather on %d "
                 "SMs%s",
                 gib(t->graph_cache_bytes, a, sizeof a), gib(gi.cache_bytes, b, sizeof b),
                 (long long)gi.cached_rows, gi.sms, gi.green_context ? " (green context)" : "");
    }
fail:
    gd_free(scores);
    return st;
}

/* The graph where the mode's sampler reads it; known: auto's estimate (NULL: none made). */
static gd_status place_graph(gd__trainer *t, int64_t budget, const mem_need *known) {
    gd_status st = GD_OK;
    gd_graph_options o = GD_GRAPH_OPTIONS_INIT;
    o.device = t->cfg.device;
    if (t->mode == GD__TRAIN_ALL_GPU) {
        o.indptr_placement = GD_PLACE_GPU;
        o.indices_placement = GD_PLACE_GPU;
    } else if (t->mode == GD__TRAIN_ZERO_COPY) {
        /* indptr is 8 bytes a node and read for every frontier node: it goes to the GPU. */
        o.indptr_placement = GD_PLACE_GPU;
        o.indices_placement = GD_PLACE_PINNED;
        o.copy_host = 0;
        o.gpu_cache_bytes = t->cfg.graph_cache_bytes;
        if (o.gpu_cache_bytes < 0) {
            /*
             * auto: a quarter of what the budget leaves after the fixed buffers, indptr and
             * the two location maps (lists and feature rows) goes to the hottest neighbour
             * lists (the rest to the feature rows); at most the whole of indices.
             */
            mem_need m;
            if (known)
                m = *known;
            else
                GD_CHECK(needs(t, &m));
            const int64_t left = budget - m.fixed_bytes - m.indptr_bytes - 16 * t->num_nodes;
            o.gpu_cache_bytes = left > 0 ? left / 4 : 0;
            if (o.gpu_cache_bytes > m.graph_bytes - m.indptr_bytes)
                o.gpu_cache_bytes = m.graph_bytes - m.indptr_bytes;
        }
    }
    gd_graph_destroy(t->graph);
    t->graph = NULL;
    st = gd_graph_create_from_dataset(t->ds, &o, &t->graph);
    if (st == GD_ERR_PIN && !o.copy_host && strstr(gd_last_error(), "already registered")) {
        /* Another trainer or loader has these lists page-locked in place: pin a copy. */
        gd_clear_error();
        o.copy_host = 1;
        st = gd_graph_create_from_dataset(t->ds, &o, &t->graph);
    }
    GD_CHECK(st);
    gd_graph_info gi = GD_GRAPH_INFO_INIT;
    GD_CHECK(gd_graph_get_info(t->graph, &gi));
    t->graph_cache_bytes = gi.cache_bytes;
fail:
    return st;
}

static gd_status alloc_nn(gd__trainer *t, size_t bytes, void **p) {
    return t->ctx.be->alloc(&t->ctx, bytes, p);
}

/* The buffer sets of the ring and the per-pass logs. */
static gd_status make_sets(gd__trainer *t) {
    gd_status st = GD_OK;
    for (int i = 0; i < t->depth; i++) {
        train_set *s = &t->sets[i];
        GD_CHECK(gd__nn_tensor_alloc(&t->ctx, GD_DTYPE_FLOAT32, t->sinfo.max_input_nodes, t->in_dim,
                                     &s->x));
        GD_CHECK(alloc_nn(t, (size_t)t->batch * sizeof(int64_t), (void **)&s->labels));
        if (t->cuda_sampler || t->cfg.loader || t->mode == GD__TRAIN_CPU)
            GD_CHECK(gd_minibatch_create(t->sampler, &s->mb));
#ifdef GD_WITH_CUDA
        if (t->gpu) {
            GD_CHECK(gd__cuda_pinned_alloc((void **)&s->label_stage,
                                           (size_t)t->batch * sizeof(int64_t), "labels",
                                           "lower the batch size"));
            for (int e = 0; e < EV_COUNT; e++)
                GD_CHECK(gd__cuda_event_create(t->cfg.device, 1, &s->ev[e]));
        }
        if (t->mode == GD__TRAIN_CPU_CENTRIC) {
            GD_CHECK(gd__cuda_pinned_alloc(&s->blk_stage, t->blk_bytes, "minibatch blocks",
                                           "lower the batch size"));
            GD_CHECK(gd__cuda_malloc(t->cfg.device, &s->blk_dev, t->blk_bytes, "minibatch blocks"));
        }
#endif
    }
    int64_t most = 1;
    for (int i = 0; i < 3; i++) most = max64(most, (t->split_n[i] + t->batch - 1) / t->batch);
    t->log_cap = most;
#ifdef GD_WITH_CUDA
    if (t->gpu) {
        GD_CHECK(gd__cuda_pinned_alloc((void **)&t->loss_log, (size_t)most * sizeof(float),
                                       "the loss log", "lower the number of minibatches"));
        GD_CHECK(gd__cuda_pinned_alloc((void **)&t->correct_log, (size_t)most * sizeof(int64_t),
                                       "the accuracy log", "lower the number of minibatches"));
        return GD_OK;
    }
#endif
    GD_ALLOC(t->loss_log, (size_t)most * sizeof(float), "the loss log");
    GD_ALLOC(t->correct_log, (size_t)most * sizeof(int64_t), "the accuracy log");
fail:
    return st;
}

gd_status gd__trainer_create(const gd_dataset_t *ds, const gd__train_config *cfg,
                             gd__trainer **out) {
    gd_status st = GD_OK;
    gd__trainer *t = NULL;
    char a[32], b[32];
    int64_t free0 = 0, total = 0, budget = 0;
    mem_need need; /* auto's estimate, reused for the list cache */
    int have_need = 0;
    GD_REQUIRE(out, GD_ERR_INVALID_ARG, "gd__trainer_create: out is NULL");
    *out = NULL;
    GD_CHECK(check_config(ds, cfg));
    GD_ALLOC(t, sizeof *t, "the trainer");
    memset(t, 0, sizeof *t);
    t->cfg = *cfg;
    t->ds = ds;
    t->mode = cfg->mode;
    t->num_nodes = gd_dataset_num_nodes(ds);
    t->in_dim = gd_dataset_feature_dim(ds);
    t->num_classes = gd_dataset_num_classes(ds);
    t->batch = min64(cfg->batch_size, t->num_nodes);
    const int L = cfg->num_layers;

    /* The splits and the labels. */
    for (int i = 0; i < 3; i++)
        GD_CHECK(
            load_split(ds, (gd_array_id)(GD_ARRAY_TRAIN_IDX + i), &t->split[i], &t->split_n[i]));
    GD_REQUIRE(cfg->loader || t->split_n[0] > 0, GD_ERR_INVALID_ARG,
               "trainer: dataset '%s' has no training nodes (train_idx is absent or empty)",
               gd_dataset_name(ds));
    int64_t most = max64(t->split_n[0], max64(t->split_n[1], t->split_n[2]));
    GD_ALLOC(t->order, (size_t)most * sizeof(int64_t), "the epoch order");
    st = gd_dataset_array(ds, GD_ARRAY_LABELS, &t->label_view);
    if (st == GD_ERR_NOT_FOUND && cfg->loader) {
        /* A loader serves unlabelled data too: its batches then have no labels. */
        gd_clear_error();
        st = GD_OK;
        t->label_view.data = NULL;
    }
    GD_CHECK(st);

    /* A host view of the graph (borrowed, nothing copied): auto's estimate, cpu modes' sampler. */
    GD_CHECK(gd_graph_create_from_dataset(ds, NULL, &t->graph));

    /* The GPU and its budget. */
    if (t->mode != GD__TRAIN_CPU) {
#ifdef GD_WITH_CUDA
        if (t->mode != GD__TRAIN_AUTO || gd__cuda_device_count() > 0) {
            char what[64];
            snprintf(what, sizeof what, "--mode %s", mode_names[t->mode]);
            GD_CHECK(gd__cuda_check_device(cfg->device, what, "use --mode cpu"));
            GD_CHECK(gd__cuda_mem_info(cfg->device, &free0, &total));
            budget = cfg->gpu_mem_budget > 0 ? min64(cfg->gpu_mem_budget, free0) : free0;
        }
#else
        GD_REQUIRE(t->mode == GD__TRAIN_AUTO, GD_ERR_NO_DEVICE,
                   "--mode %s needs a GPU, but graphdirect was built without CUDA: install the "
                   "CUDA toolkit and rebuild, or use --mode cpu",
                   mode_names[t->mode]);
#endif
    }
    (void)total;
    if (t->mode == GD__TRAIN_AUTO)
        GD_CHECK(pick_mode(t, budget, &need, &have_need));
    else
        snprintf(t->plan, sizeof t->plan, "mode %s (as asked)", mode_names[t->mode]);
    t->gpu = t->mode != GD__TRAIN_CPU;
    t->cuda_sampler = t->mode == GD__TRAIN_ALL_GPU || t->mode == GD__TRAIN_ZERO_COPY;
    t->depth = t->gpu || cfg->loader ? cfg->depth : 1;

    /* The nn backend. */
#ifdef GD_WITH_CUDA
    if (t->gpu)
        GD_CHECK(gd__nn_cuda_ctx_create(cfg->device, &t->ctx));
    else
#endif
        t->ctx = gd__nn_cpu_ctx();

    /* all-gpu: refuse early, with the numbers, when the data cannot fit the budget. */
    if (t->mode == GD__TRAIN_ALL_GPU && cfg->gpu_mem_budget > 0) {
        gd_array_view fv;
        GD_CHECK(gd_dataset_array(ds, GD_ARRAY_FEATURES, &fv));
        gd_graph_info gi = GD_GRAPH_INFO_INIT;
        GD_CHECK(gd_graph_get_info(t->graph, &gi));
        const int64_t data = 8 * (t->num_nodes + 1) + 4 * gi.num_edges +
                             t->num_nodes * t->in_dim * (int64_t)gd_dtype_size(fv.dtype);
        GD_REQUIRE(data <= budget, GD_ERR_NO_MEMORY,
                   "--mode all-gpu: the graph and the features take %s, more than the GPU memory "
                   "budget of %s; use --mode zero-copy (or auto)",
                   gib(data, a, sizeof a), gib(budget, b, sizeof b));
    }

    /* The graph where the sampler reads it, the sampler and the minibatch buffers. */
    if (t->cuda_sampler) GD_CHECK(place_graph(t, budget, have_need ? &need : NULL));
    int fanouts[GD_SAMPLER_MAX_LAYERS];
    sampler_fanouts(cfg, fanouts);
    gd_sampler_options so = GD_SAMPLER_OPTIONS_INIT;
    so.backend = t->cuda_sampler ? GD_SAMPLER_CUDA : GD_SAMPLER_CPU;
    so.max_batch = t->batch;
    so.seed = cfg->seed;
    so.threads = cfg->threads;
    GD_CHECK(gd_sampler_create(t->graph, fanouts, L, &so, &t->sampler));
    t->sinfo = (gd_sampler_info)GD_SAMPLER_INFO_INIT;
    GD_CHECK(gd_sampler_get_info(t->sampler, &t->sinfo));
    if (t->mode == GD__TRAIN_CPU_CENTRIC) GD_CHECK(gd_minibatch_create(t->sampler, &t->host_mb));
    t->blk_bytes = (size_t)t->sinfo.minibatch_bytes;

    /* The model (a loader has none: its caller trains). */
    if (!cfg->loader) {
        gd_graph_info gi = GD_GRAPH_INFO_INIT;
        GD_CHECK(gd_graph_get_info(t->graph, &gi));
        gd__model_config mc;
        model_config(t, gi.max_degree, t->sinfo.max_input_nodes, &mc);
        GD_CHECK(gd__model_create(&t->ctx, &mc, cfg->seed, &t->model));
        t->adam = (gd__nn_adam_options)GD__NN_ADAM_OPTIONS_INIT;
        t->adam.lr = cfg->lr;
        t->adam.weight_decay = cfg->weight_decay;
    }

    /* The ring, the streams and the small buffers. */
    GD_CHECK(make_sets(t));
    if (!cfg->loader) {
        GD_CHECK(gd__nn_tensor_alloc(&t->ctx, GD_DTYPE_FLOAT32, 1, 1, &t->loss));
        GD_CHECK(alloc_nn(t, sizeof(int64_t), (void **)&t->d_correct));
        GD_CHECK(
            gd__nn_tensor_alloc(&t->ctx, GD_DTYPE_FLOAT32, t->batch, t->num_classes, &t->dlogits));
    }
#ifdef GD_WITH_CUDA
    if (t->gpu) {
        GD_CHECK(gd__cuda_stream_create(cfg->device, &t->s_sample));
        GD_CHECK(gd__cuda_stream_create(cfg->device, &t->s_gather));
    }
    if (t->cuda_sampler)
        GD_CHECK(gd__cuda_malloc(cfg->device, (void **)&t->d_order, (size_t)most * sizeof(int64_t),
                                 "the epoch's seed order"));
#endif

    /* The features and the gatherer last: zero-copy's cache takes what is left. */
    GD_CHECK(place_features(t));
    GD_CHECK(make_gatherer(t, budget, free0));
#ifdef GD_WITH_CUDA
    if (t->gpu) {
        GD_CHECK(used_gpu(t, free0, &t->gpu_bytes));
        GD_REQUIRE(cfg->gpu_mem_budget == 0 || t->gpu_bytes <= cfg->gpu_mem_budget,
                   GD_ERR_NO_MEMORY,
                   "--mode %s took %s of GPU memory, more than the budget of %s: lower "
                   "--gpu-cache or --graph-cache, the batch size or the ring depth",
                   mode_names[t->mode], gib(t->gpu_bytes, a, sizeof a),
                   gib(cfg->gpu_mem_budget, b, sizeof b));
    }
#endif
    GD_INFO("trainer: %s; %d layers, batch %lld, %lld input nodes and %lld edges at most per "
            "minibatch, %lld parameters",
            t->plan, L, (long long)t->batch, (long long)t->sinfo.max_input_nodes,
            (long long)t->sinfo.max_edges, (long long)gd__model_num_params(t->model));
    *out = t;
    return GD_OK;
fail:
    gd__trainer_destroy(t);
    return st;
}

void gd__trainer_get_info(const gd__trainer *t, gd__trainer_info *info) {
    memset(info, 0, sizeof *info);
    info->mode = t->mode;
    snprintf(info->plan, sizeof info->plan, "%s", t->plan);
    info->max_input_nodes = t->sinfo.max_input_nodes;
    info->max_edges = t->sinfo.max_edges;
    info->feature_bytes = (int64_t)(gd__nn_numel(&t->sets[0].x) * (int64_t)sizeof(float));
    info->num_params = gd__model_num_params(t->model);
    info->train_nodes = t->split_n[0];
    info->valid_nodes = t->split_n[1];
    info->test_nodes = t->split_n[2];
    info->gpu_bytes = t->gpu_bytes;
    info->feature_cache_rows = t->feature_cache_rows;
    info->feature_cache_bytes = t->feature_cache_bytes;
    info->graph_cache_bytes = t->graph_cache_bytes;
}

gd__model *gd__trainer_model(gd__trainer *t) {
    return t->model;
}

const gd__nn_ctx *gd__trainer_nn_ctx(const gd__trainer *t) {
    return &t->ctx;
}

/* ------------------------------------------------------------ one pass */

static uint64_t dropout_seed(const gd__trainer *t, int64_t epoch, int64_t b) {
    gd_philox_ctr k = gd_philox(t->cfg.seed, (uint32_t)epoch, (uint32_t)((uint64_t)epoch >> 32),
                                (uint32_t)b, GD__TRAIN_RNG_DROPOUT);
    return ((uint64_t)k.v[1] << 32) | k.v[0];
}

/* Write the labels of minibatch b's seeds to dst; count the labelled ones. */
static void stage_labels(const gd__trainer *t, pass *p, int64_t b, int64_t *dst) {
    const int64_t lo = b * t->batch, cnt = min64(t->batch, p->n - lo);
    if (!t->label_view.data) {
        for (int64_t i = 0; i < cnt; i++) dst[i] = -1;
        return;
    }
    for (int64_t i = 0; i < cnt; i++) {
        dst[i] = int_at(&t->label_view, p->ids[lo + i]);
        p->labelled += dst[i] >= 0;
    }
}

/*
 * The nn stage of minibatch b on the set's data: forward (with dropout when training), the
 * correct count, and for training the loss, backward and an Adam step. The loss and the count
 * go to the logs at b.
 */
static gd_status nn_step(gd__trainer *t, pass *p, train_set *s, int64_t b) {
    gd_status st = GD_OK;
    gd__nn_tensor x = gd__nn_rows(&s->x, s->num_in), logits;
    gd_block *blocks = s->blocks;
    GD_CHECK(
        gd__model_forward(t->model, blocks, &x, p->train, dropout_seed(t, p->epoch, b), &logits));
    GD_CHECK(gd__nn_accuracy(&t->ctx, &logits, s->labels, t->d_correct));
    if (p->train) {
        gd__nn_tensor dl = gd__nn_rows(&t->dlogits, s->seeds);
        GD_CHECK(gd__nn_softmax_xent(&t->ctx, &logits, s->labels, 1.0, &t->loss, &dl));
        gd__nn_params *params = gd__model_params(t->model);
        GD_CHECK(gd__nn_params_zero_grad(&t->ctx, params));
        GD_CHECK(gd__model_backward(t->model, blocks, &dl, NULL));
        GD_CHECK(gd__nn_params_adam(&t->ctx, params, &t->adam));
    }
#ifdef GD_WITH_CUDA
    if (t->gpu) {
        if (p->train)
            GD_CHECK(
                gd__cuda_memcpy_async(&t->loss_log[b], t->loss.data, sizeof(float), t->ctx.stream));
        GD_CHECK(gd__cuda_memcpy_async(&t->correct_log[b], t->d_correct, sizeof(int64_t),
                                       t->ctx.stream));
        return GD_OK;
    }
#endif
    if (p->train) t->loss_log[b] = *(const float *)t->loss.data;
    t->correct_log[b] = *t->d_correct;
fail:
    return st;
}

/* cpu: sample and gather minibatch b into set s on the host (its own minibatch buffer). */
gd_status gd__train_cpu_stage(gd__trainer *t, pass *p, int64_t b, train_set *s) {
    gd_status st = GD_OK;
    const int64_t lo = b * t->batch, cnt = min64(t->batch, p->n - lo);
    const double t0 = gd__now();
    GD_CHECK(gd_sample(t->sampler, p->ids + lo, cnt, 0, p->epoch, b, NULL, s->mb));
    for (int l = 0; l < t->cfg.num_layers; l++)
        GD_CHECK(gd_minibatch_block(s->mb, l, &s->blocks[l]));
    GD_CHECK(gd_minibatch_input_nodes(s->mb, &s->in_ids, &s->num_in));
    s->seeds = cnt;
    const double t1 = gd__now();
    GD_CHECK(gd_gather(t->gatherer, s->in_ids, s->num_in, 0, s->x.data, NULL));
    stage_labels(t, p, b, s->labels);
    p->sample_s += t1 - t0;
    p->gather_s += gd__now() - t1;
fail:
    return st;
}

/* cpu mode: sample, gather and train minibatch b, one after another. */
static gd_status cpu_batch(gd__trainer *t, pass *p, int64_t b) {
    gd_status st = GD_OK;
    GD_CHECK(gd__train_cpu_stage(t, p, b, &t->sets[0]));
    const double t2 = gd__now();
    GD_CHECK(nn_step(t, p, &t->sets[0], b));
    p->train_s += gd__now() - t2;
fail:
    return st;
}

#ifdef GD_WITH_CUDA
/* Count the stage times of the set's previous minibatch (its events have completed). */
static gd_status count_stage(pass *p, train_set *s, int stage) {
    gd_status st = GD_OK;
    if (!s->timed[stage]) return GD_OK;
    float ms;
    GD_CHECK(gd__cuda_event_ms(s->ev[2 * stage], s->ev[2 * stage + 1], &ms));
    p->stage_ms[stage] += ms;
    s->timed[stage] = 0;
fail:
    return st;
}

/* CUDA sampler: queue the sampling of minibatch b behind the training of the set's last one. */
gd_status gd__train_issue_sample(gd__trainer *t, pass *p, int64_t b) {
    gd_status st = GD_OK;
    train_set *s = &t->sets[b % t->depth];
    const int64_t lo = b * t->batch, cnt = min64(t->batch, p->n - lo);
    GD_CHECK(count_stage(p, s, ST_SAMPLE));
    if (b >= t->depth) GD_CHECK(gd__cuda_stream_wait(t->s_sample, s->ev[EV_T1]));
    GD_CHECK(gd__cuda_event_record(s->ev[EV_S0], t->s_sample));
    GD_CHECK(gd_sample(t->sampler, t->d_order + lo, cnt, 1, p->epoch, b, t->s_sample, s->mb));
    GD_CHECK(gd__cuda_event_record(s->ev[EV_S1], t->s_sample));
    s->timed[ST_SAMPLE] = 1;
    s->seeds = cnt;
fail:
    return st;
}

/* CUDA sampler: once minibatch b is sampled, queue its gather and its labels. */
gd_status gd__train_issue_gather(gd__trainer *t, pass *p, int64_t b) {
    gd_status st = GD_OK;
    train_set *s = &t->sets[b % t->depth];
    const int64_t *ids;
    /* The one host wait of a minibatch: its sizes, sampled depth - 1 minibatches ago. */
    GD_CHECK(gd__cuda_event_sync(s->ev[EV_S1]));
    for (int l = 0; l < t->cfg.num_layers; l++)
        GD_CHECK(gd_minibatch_block(s->mb, l, &s->blocks[l]));
    GD_CHECK(gd_minibatch_input_nodes(s->mb, &ids, &s->num_in));
    s->in_ids = ids;
    /* Sampling b waited for the training of the set's previous minibatch: its events are done. */
    GD_CHECK(count_stage(p, s, ST_GATHER));
    GD_CHECK(count_stage(p, s, ST_TRAIN));
    stage_labels(t, p, b, s->label_stage);
    GD_CHECK(gd__cuda_stream_wait(t->s_gather, s->ev[EV_S1]));
    GD_CHECK(gd__cuda_event_record(s->ev[EV_G0], t->s_gather));
    GD_CHECK(gd_gather(t->gatherer, ids, s->num_in, 1, s->x.data, t->s_gather));
    GD_CHECK(gd__cuda_memcpy_async(s->labels, s->label_stage, (size_t)s->seeds * sizeof(int64_t),
                                   t->s_gather));
    GD_CHECK(gd__cuda_event_record(s->ev[EV_G1], t->s_gather));
    s->timed[ST_GATHER] = 1;
fail:
    return st;
}

/*
 * cpu-centric: sample minibatch b and gather its rows on the CPU (the gatherer copies them
 * into the set's rows with one DMA), and copy the blocks and the labels, all on the gather
 * stream; the GPU meanwhile trains the minibatches before.
 */
static gd_status cpu_centric_stage(gd__trainer *t, pass *p, int64_t b) {
    gd_status st = GD_OK;
    train_set *s = &t->sets[b % t->depth];
    const int64_t lo = b * t->batch, cnt = min64(t->batch, p->n - lo);
    const int64_t *ids;
    double t0 = gd__now();
    GD_CHECK(gd_sample(t->sampler, p->ids + lo, cnt, 0, p->epoch, b, NULL, t->host_mb));
    double t1 = gd__now();
    /* The set's last minibatch must have trained before its buffers are rewritten. */
    if (b >= t->depth) {
        GD_CHECK(gd__cuda_event_sync(s->ev[EV_T1]));
        GD_CHECK(count_stage(p, s, ST_TRAIN));
    }
    s->seeds = cnt;
    /* Pack the blocks into the pinned staging; the device copy has the same layout. */
    size_t off = 0;
    for (int l = 0; l < t->cfg.num_layers; l++) {
        gd_block hb;
        GD_CHECK(gd_minibatch_block(t->host_mb, l, &hb));
        const size_t ip = (size_t)(hb.num_dst + 1) * sizeof(int32_t);
        const size_t ix = (size_t)hb.num_edges * sizeof(int32_t);
        GD_REQUIRE(off + ip + ix <= t->blk_bytes, GD_ERR_INTERNAL,
                   "trainer: the blocks of minibatch %lld do not fit their staging buffer",
                   (long long)b);
        char *stage = (char *)s->blk_stage + off, *dev = (char *)s->blk_dev + off;
        memcpy(stage, hb.indptr, ip);
        memcpy(stage + ip, hb.indices, ix);
        s->blocks[l] = hb;
        s->blocks[l].indptr = (const int32_t *)dev;
        s->blocks[l].indices = (const int32_t *)(dev + ip);
        off += (ip + ix + 15) & ~(size_t)15;
    }
    GD_CHECK(gd_minibatch_input_nodes(t->host_mb, &ids, &s->num_in));
    stage_labels(t, p, b, s->label_stage);
    GD_CHECK(gd_gather(t->gatherer, ids, s->num_in, 0, s->x.data, t->s_gather));
    GD_CHECK(gd__cuda_memcpy_async(s->blk_dev, s->blk_stage, off, t->s_gather));
    GD_CHECK(gd__cuda_memcpy_async(s->labels, s->label_stage, (size_t)cnt * sizeof(int64_t),
                                   t->s_gather));
    GD_CHECK(gd__cuda_event_record(s->ev[EV_G1], t->s_gather));
    p->sample_s += t1 - t0;
    p->gather_s += gd__now() - t1;
fail:
    return st;
}

/* Queue the nn stage of minibatch b behind its gather. */
static gd_status issue_train(gd__trainer *t, pass *p, int64_t b) {
    gd_status st = GD_OK;
    train_set *s = &t->sets[b % t->depth];
    GD_CHECK(gd__cuda_stream_wait(t->ctx.stream, s->ev[EV_G1]));
    GD_CHECK(gd__cuda_event_record(s->ev[EV_T0], t->ctx.stream));
    GD_CHECK(nn_step(t, p, s, b));
    GD_CHECK(gd__cuda_event_record(s->ev[EV_T1], t->ctx.stream));
    s->timed[ST_TRAIN] = 1;
fail:
    return st;
}

/* The loss of the latest minibatch before `issued` that has finished, without waiting. */
static double latest_loss(gd__trainer *t, int64_t issued) {
    for (int64_t b = issued - 1; b >= 0 && b >= issued - t->depth; b--) {
        int done = gd__cuda_event_done(t->sets[b % t->depth].ev[EV_T1]);
        if (done < 0) gd_clear_error();
        if (done > 0) return t->loss_log[b];
    }
    return NAN;
}
#endif

/* Report progress every report_every minibatches; a non-zero answer interrupts. */
static gd_status report(gd__trainer *t, pass *p, int64_t done) {
    const int64_t every = t->cfg.report_every > 0 ? t->cfg.report_every : 20;
    if (!t->cfg.progress || !p->train || (done % every != 0 && done != p->batches)) return GD_OK;
    double loss = NAN;
#ifdef GD_WITH_CUDA
    if (t->gpu)
        loss = latest_loss(t, done);
    else
#endif
        loss = t->loss_log[done - 1];
    if (t->cfg.progress(t->cfg.progress_user, done, p->batches, loss))
        return gd__error(GD_ERR_INTERRUPTED, "training interrupted at minibatch %lld of %lld",
                         (long long)done, (long long)p->batches);
    return GD_OK;
}

/* cpu mode: every minibatch of p, one after another. */
static gd_status run_cpu_pass(gd__trainer *t, pass *p) {
    gd_status st = GD_OK;
    for (int64_t b = 0; b < p->batches; b++) {
        GD_CHECK(cpu_batch(t, p, b));
        GD_CHECK(report(t, p, b + 1));
    }
fail:
    return st;
}

#ifdef GD_WITH_CUDA
/* GPU modes: every minibatch of p through the ring, then wait for the last and count times. */
static gd_status run_gpu_pass(gd__trainer *t, pass *p) {
    gd_status st = GD_OK, st2;
    const int D = t->depth;
    for (int i = 0; i < D; i++)
        for (int k = 0; k < ST_COUNT; k++) t->sets[i].timed[k] = 0;
    if (t->cuda_sampler) {
        /* The seed order goes to the GPU once; the sampler reads its slices there. */
        GD_CHECK(
            gd__cuda_memcpy_async(t->d_order, p->ids, (size_t)p->n * sizeof(int64_t), t->s_sample));
        for (int64_t b = 0; b < D - 1 && b < p->batches; b++)
            GD_CHECK(gd__train_issue_sample(t, p, b));
    }
    for (int64_t b = 0; b < p->batches; b++) {
        if (t->cuda_sampler) {
            if (b + D - 1 < p->batches) GD_CHECK(gd__train_issue_sample(t, p, b + D - 1));
            GD_CHECK(gd__train_issue_gather(t, p, b));
        } else {
            GD_CHECK(cpu_centric_stage(t, p, b));
        }
        GD_CHECK(issue_train(t, p, b));
        GD_CHECK(report(t, p, b + 1));
    }
fail:
    /* Whatever happened, wait for the work in flight before the buffers are touched again. */
    if ((st2 = gd__cuda_stream_sync(t->s_sample)) != GD_OK && st == GD_OK) st = st2;
    if ((st2 = gd__cuda_stream_sync(t->s_gather)) != GD_OK && st == GD_OK) st = st2;
    if ((st2 = gd__cuda_stream_sync(t->ctx.stream)) != GD_OK && st == GD_OK) st = st2;
    for (int i = 0; i < D && st == GD_OK; i++)
        for (int k = 0; k < ST_COUNT && st == GD_OK; k++) st = count_stage(p, &t->sets[i], k);
    if (st == GD_OK && t->cuda_sampler) st = gd_sampler_check_errors(t->sampler);
    if (st == GD_OK) st = gd_gatherer_check_errors(t->gatherer);
    if (st == GD_OK) st = gd__nn_check_errors(&t->ctx);
    return st;
}
#endif

static gd_status run_pass(gd__trainer *t, pass *p) {
#ifdef GD_WITH_CUDA
    if (t->gpu) return run_gpu_pass(t, p);
#endif
    return run_cpu_pass(t, p);
}

gd_status gd__train_start_pass(gd__trainer *t, const int64_t *ids, int64_t n, int64_t epoch,
                               int train, pass *p) {
    memset(p, 0, sizeof *p);
    p->ids = ids;
    p->n = n;
    p->epoch = epoch;
    p->train = train;
    p->batches = (n + t->batch - 1) / t->batch;
    if (train && t->cfg.max_batches > 0) p->batches = min64(p->batches, t->cfg.max_batches);
    if (p->batches > t->log_cap)
        return gd__error(GD_ERR_INTERNAL, "trainer: %lld minibatches, the logs hold %lld",
                         (long long)p->batches, (long long)t->log_cap);
    return GD_OK;
}

gd_status gd__trainer_epoch(gd__trainer *t, int64_t epoch, gd__train_epoch_stats *stats) {
    gd_status st = GD_OK;
    GD_REQUIRE(t && stats, GD_ERR_INVALID_ARG, "gd__trainer_epoch: NULL trainer or stats");
    GD_REQUIRE(epoch >= 0 && epoch < GD__TRAIN_EVAL_EPOCH, GD_ERR_INVALID_ARG,
               "gd__trainer_epoch: epoch %lld out of range", (long long)epoch);
    memset(stats, 0, sizeof *stats);
    stats->epoch = epoch;
    const double start = gd__now(), cpu0 = cpu_seconds();
    const int64_t n = t->split_n[0];
    int64_t num_batches, correct = 0;
    pass p;
    GD_CHECK(
        gd_seed_batches(t->split[0], n, t->batch, t->cfg.seed, epoch, 0, t->order, &num_batches));
    GD_CHECK(gd__train_start_pass(t, t->order, n, epoch, 1, &p));
    GD_CHECK(run_pass(t, &p));
    double loss_sum = 0;
    for (int64_t b = 0; b < p.batches; b++) {
        GD_REQUIRE(isfinite(t->loss_log[b]), GD_ERR_RANGE,
                   "trainer: the loss of epoch %lld, minibatch %lld is %g; lower the learning "
                   "rate (now %g)",
                   (long long)epoch, (long long)b, (double)t->loss_log[b], t->cfg.lr);
        loss_sum += t->loss_log[b];
        correct += t->correct_log[b];
    }
    stats->batches = p.batches;
    stats->loss = p.batches ? loss_sum / (double)p.batches : NAN;
    stats->train_acc = p.labelled ? (double)correct / (double)p.labelled : NAN;
    stats->seconds = gd__now() - start;
    stats->cpu_core_s = cpu_seconds() - cpu0;
    if (t->mode == GD__TRAIN_CPU) {
        stats->sample_s = p.sample_s;
        stats->gather_s = p.gather_s;
        stats->train_s = p.train_s;
    } else {
        stats->sample_s = t->cuda_sampler ? p.stage_ms[ST_SAMPLE] / 1e3 : p.sample_s;
        stats->gather_s = t->cuda_sampler ? p.stage_ms[ST_GATHER] / 1e3 : p.gather_s;
        stats->train_s = p.stage_ms[ST_TRAIN] / 1e3;
        stats->wait_s = stats->seconds > stats->train_s ? stats->seconds - stats->train_s : 0;
#ifdef GD_WITH_CUDA
        int64_t f, total;
        GD_CHECK(gd__cuda_mem_info(t->cfg.device, &f, &total));
        stats->gpu_mem_bytes = total - f;
#endif
    }
fail:
    return st;
}

gd_status gd__trainer_evaluate(gd__trainer *t, gd_array_id split, double *accuracy,
                               int64_t *count) {
    gd_status st = GD_OK;
    GD_REQUIRE(t && accuracy, GD_ERR_INVALID_ARG, "gd__trainer_evaluate: NULL argument");
    GD_REQUIRE(split >= GD_ARRAY_TRAIN_IDX && split <= GD_ARRAY_TEST_IDX, GD_ERR_INVALID_ARG,
               "gd__trainer_evaluate: %s is not a split (train_idx, valid_idx or test_idx)",
               gd_array_name(split));
    const int s = (int)(split - GD_ARRAY_TRAIN_IDX);
    pass p;
    int64_t correct = 0;
    GD_CHECK(gd__train_start_pass(t, t->split[s], t->split_n[s], GD__TRAIN_EVAL_EPOCH + s, 0, &p));
    if (p.n > 0) GD_CHECK(run_pass(t, &p));
    for (int64_t b = 0; b < p.batches; b++) correct += t->correct_log[b];
    *accuracy = p.labelled ? (double)correct / (double)p.labelled : NAN;
    if (count) *count = p.labelled;
fail:
    return st;
}

gd_status gd__trainer_params_get(gd__trainer *t, void *params, void *state) {
    gd_status st = GD_OK;
    GD_REQUIRE(t && params, GD_ERR_INVALID_ARG, "gd__trainer_params_get: NULL argument");
    const gd__nn_params *p = gd__model_params(t->model);
    GD_CHECK(gd__nn_to_host(&t->ctx, &p->params, params));
    if (state) GD_CHECK(gd__nn_to_host(&t->ctx, &p->state, state));
fail:
    return st;
}

gd_status gd__trainer_params_set(gd__trainer *t, const void *params, const void *state,
                                 int64_t adam_step) {
    gd_status st = GD_OK;
    GD_REQUIRE(t && params, GD_ERR_INVALID_ARG, "gd__trainer_params_set: NULL argument");
    GD_REQUIRE(adam_step >= 0, GD_ERR_INVALID_ARG, "gd__trainer_params_set: step %lld",
               (long long)adam_step);
    gd__nn_params *p = gd__model_params(t->model);
    GD_CHECK(gd__nn_from_host(&t->ctx, &p->params, params));
    if (state) {
        GD_CHECK(gd__nn_from_host(&t->ctx, &p->state, state));
        p->step = adam_step;
    }
fail:
    return st;
}

/* ------------------------------------------------------------ checkpoints */

void gd__trainer_checkpoint_meta(const gd__trainer *t, gd__checkpoint_meta *m) {
    gd__checkpoint_meta_init(m);
    snprintf(m->model, sizeof m->model, "%s", gd__model_iface(t->model)->name);
    m->num_layers = t->cfg.num_layers;
    m->in_dim = t->in_dim;
    m->hidden_dim = t->cfg.hidden_dim;
    m->num_classes = t->num_classes;
    sampler_fanouts(&t->cfg, m->fanouts);
    m->seed = t->cfg.seed;
    m->adam_step = gd__model_params(t->model)->step;
    snprintf(m->dataset, sizeof m->dataset, "%s nodes=%lld edges=%lld features=%lld classes=%lld",
             gd_dataset_name(t->ds), (long long)t->num_nodes,
             (long long)gd_dataset_num_edges(t->ds), (long long)t->in_dim,
             (long long)t->num_classes);
    /* The mode is left out on purpose: every mode samples and trains the same way. */
    snprintf(m->config, sizeof m->config,
             "batch=%lld dropout=%g lr=%g weight_decay=%g mlp=%d max_batches=%lld",
             (long long)t->cfg.batch_size, t->cfg.dropout, t->cfg.lr, t->cfg.weight_decay,
             t->cfg.mlp, (long long)t->cfg.max_batches);
}

gd_status gd__trainer_save(gd__trainer *t, const char *path, const gd__checkpoint_meta *meta,
                           const void *params, int with_state) {
    gd_status st = GD_OK;
    void *host = NULL, *state = NULL;
    GD_REQUIRE(t && path && meta, GD_ERR_INVALID_ARG, "gd__trainer_save: NULL argument");
    const size_t bytes = (size_t)gd__model_num_params(t->model) * sizeof(float);
    if (!params || with_state) {
        GD_ALLOC(host, bytes, "a copy of the parameters");
        if (with_state) GD_ALLOC(state, 2 * bytes, "a copy of the optimizer state");
        GD_CHECK(gd__trainer_params_get(t, host, state));
    }
    GD_CHECK(
        gd__checkpoint_save(path, meta, gd__model_params(t->model), params ? params : host, state));
fail:
    gd_free(host);
    gd_free(state);
    return st;
}

gd_status gd__trainer_resume(gd__trainer *t, const char *path, gd__checkpoint_meta *saved) {
    gd_status st = GD_OK;
    void *params = NULL, *state = NULL;
    int has_state = 0;
    gd__checkpoint_meta run;
    GD_REQUIRE(t && path && saved, GD_ERR_INVALID_ARG, "gd__trainer_resume: NULL argument");
    const size_t bytes = (size_t)gd__model_num_params(t->model) * sizeof(float);
    GD_ALLOC(params, bytes, "the checkpoint's parameters");
    GD_ALLOC(state, 2 * bytes, "the checkpoint's optimizer state");
    GD_CHECK(gd__checkpoint_peek(path, saved, NULL, &has_state));
    gd__trainer_checkpoint_meta(t, &run);
    GD_CHECK(gd__checkpoint_check_resume(path, saved, &run));
    GD_REQUIRE(has_state, GD_ERR_INVALID_ARG,
               "'%s' holds a model without the optimizer state (a best-model file); resume from "
               "the checkpoint file instead",
               path);
    GD_CHECK(
        gd__checkpoint_load(path, gd__model_params(t->model), saved, params, state, &has_state));
    GD_CHECK(gd__trainer_params_set(t, params, state, saved->adam_step));
fail:
    gd_free(params);
    gd_free(state);
    return st;
}

gd_host_tensor_t *gd__trainer_registered_features(gd__trainer *t) {
    return t && t->features && gd_host_tensor_is_registered(t->features) ? t->features : NULL;
}

void gd__trainer_set_max_batches(gd__trainer *t, int64_t max_batches) {
    if (t && max_batches >= 0) t->cfg.max_batches = max_batches;
}
