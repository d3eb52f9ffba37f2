/*
 * The data path without a model (datapath.h): creation places the graph and the features by the
 * plan (plan.h), builds the sampler, the gatherer and every buffer of the ring, so that a pass
 * allocates nothing; the stage functions fill a set for the pipeline's scheduler (pipeline.c).
 * All modes sample and gather exactly the same data for the same seed.
 */
#include "train/datapath.h"

#include "core/context.h"
#include "core/cuda.h"
#include "core/hostmem.h"
#include "core/peers.h"
#include "feature/disk_rows.h"
#include "core/hugepages.h"
#include "feature/host_gather.h"
#include "feature/internal.h" /* the gatherer's host_gather switch and probe */
#include "feature/widen.h"
#include "graph/internal.h"
#include "io/dataset.h"
#include "io/stripes.h"
#ifdef GD_WITH_CUDA
#include "feature/disk_tier.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------------- teardown */

void gd__datapath_set_free(gd__datapath *d, gd__batch_set *s) {
#ifdef GD_WITH_CUDA
    gd__cuda_host_free(s->label_stage);
    gd__cuda_host_free(s->blk_stage);
    gd__cuda_free(s->blk_dev);
#endif
    gd_minibatch_destroy(s->mb);
    if (d->nn) {
        gd__nn_tensor_free(d->nn, &s->x);
        if (s->labels) d->nn->be->release(d->nn, s->labels);
        if (s->x_half) d->nn->be->release(d->nn, s->x_half);
    }
    memset(s, 0, sizeof *s);
}

void gd__datapath_nn_release(gd__nn_ctx *nn) {
#ifdef GD_WITH_CUDA
    if (nn->be == &gd__nn_cuda_backend) gd__nn_cuda_ctx_destroy(nn);
#endif
    memset(nn, 0, sizeof *nn);
}

void gd__datapath_destroy(gd__datapath *d) {
    if (!d) return;
    if (d->pin_running) {
        /* A build that failed while the features were being registered: they finish first.
         * The thread's own outcome is not reported, so the build's error message stays. */
        (void)pthread_join(d->pin_thread, NULL);
        d->pin_running = 0;
    }
#ifdef GD_WITH_CUDA
    /* Nothing may still be running on the buffers about to be freed. */
    if (d->s_sample) (void)gd__cuda_stream_sync(d->s_sample);
    if (d->s_gather) (void)gd__cuda_stream_sync(d->s_gather);
#endif
    for (int i = 0; i < GD__PIPE_MAX_DEPTH; i++) gd__datapath_set_free(d, &d->sets[i]);
    if (d->peers) {
        /* Every rank stops reading the others' caches before any rank frees its own. */
        gd__peers_barrier(gd__context_comm(d->context));
        gd__peers_close(d->peers);
        gd_free(d->peers);
    }
    gd_gatherer_destroy(d->gatherer);
#ifdef GD_WITH_CUDA
    gd__disk_tier_close(d->disk);
#endif
    gd__disk_rows_close(d->disk_rows);
    gd_host_tensor_destroy(d->features); /* its registration goes back to the context */
    gd_minibatch_destroy(d->host_mb);
    gd_sampler_destroy(d->sampler);
    gd_graph_destroy(d->graph);
#ifdef GD_WITH_CUDA
    gd__cuda_free(d->d_order);
    gd__cuda_stream_destroy(d->s_sample);
    gd__cuda_stream_destroy(d->s_gather);
#endif
    for (int i = 0; i < 3; i++) gd_free(d->split[i]);
    gd_free(d->order);
    gd_free(d->host_trial);
    gd_free(d->out_degrees);
    gd__context_unref(d->context);
    gd_free(d);
}

/* ----------------------------------------------------------------- create */

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
    for (int64_t i = 0; i < v.shape[0]; i++) ids[i] = gd__int_at(v.data, v.dtype, i);
    *out = ids;
    *n = v.shape[0];
fail:
    return st;
}

/*
 * One buffer set's bytes: the minibatch buffer, the gathered rows as float32 (and as gathered,
 * 2 bytes each, from a half table), the labels.
 */
static int64_t set_bytes(int64_t minibatch_bytes, int64_t max_input_nodes, int64_t in_dim,
                         int half, int64_t batch) {
    return minibatch_bytes + max_input_nodes * in_dim * (half ? 6 : 4) +
           batch * (int64_t)sizeof(int64_t);
}

/*
 * The plan's input: the sizes of the dataset, the worst-case minibatch from a CPU sampler of
 * one thread over the borrowed host graph (cheap), the model's bytes from the client, and the
 * machine.
 */
static gd_status plan_input(gd__datapath *d, int have_gpu, gd__plan_input *in) {
    gd_status st = GD_OK;
    gd_sampler_t *s = NULL;
    gd_graph_info gi = GD_GRAPH_INFO_INIT;
    GD_CHECK(gd_graph_get_info(d->graph, &gi));
    gd_array_view fv;
    GD_CHECK(gd_dataset_array(d->ds, GD_ARRAY_FEATURES, &fv));
    memset(in, 0, sizeof *in);
    in->num_nodes = d->num_nodes;
    in->num_edges = gi.num_edges;
    in->row_bytes = d->in_dim * (int64_t)gd_dtype_size(fv.dtype);
    in->feature_dtype = fv.dtype;
    in->index_bytes = gi.num_nodes < (INT64_C(1) << 31) ? 4 : 8;
    in->mode = d->cfg.mode;
    in->gpu_cache_bytes = d->cfg.gpu_cache_bytes;
    in->graph_cache_bytes = d->cfg.graph_cache_bytes;
    /* auto too: its trial keeps a CPU way wherever the CPU's copy pays (papers on the H100). */
    in->host_rows_by_cpu = d->cfg.host_gather == GD__HOST_GATHER_CPU ||
                           d->cfg.host_gather == GD__HOST_GATHER_SPLIT ||
                           d->cfg.host_gather == GD__HOST_GATHER_AUTO;
    in->gpu_mem_budget = d->cfg.gpu_mem_budget;
    in->have_gpu = have_gpu;
#ifdef GD_WITH_CUDA
    in->cuda_built = 1;
#endif
    in->budget = d->budget;
    in->gpu_free = d->free0;
    in->memlock = gd__plan_memlock_limit();
    GD_CHECK(gd__host_mem_budget(d->cfg.host_mem_budget, &in->host_budget, &in->host_source));
    gd_sampler_options so = GD_SAMPLER_OPTIONS_INIT;
    so.max_batch = d->batch;
    so.threads = 1;
    GD_CHECK(gd_sampler_create(d->graph, d->cfg.fanouts, d->cfg.num_layers, &so, &s));
    gd_sampler_info si = GD_SAMPLER_INFO_INIT;
    GD_CHECK(gd_sampler_get_info(s, &si));
    const int64_t model = d->cfg.model_bytes ? d->cfg.model_bytes(d->cfg.model_user, gi.max_degree,
                                                                  si.max_input_nodes)
                                             : 0;
    /* A half table's GPU sets hold the rows twice: as gathered (2 bytes) and widened (4). */
    const int64_t set = set_bytes(si.minibatch_bytes, si.max_input_nodes, d->in_dim,
                                  gd__widen_dtype(fv.dtype) && have_gpu, d->batch);
    /* The host side, for the plan's host check; the GPU side only where a GPU mode can run. */
    in->host_model_bytes = model;
    in->host_batch_bytes = d->cfg.depth * set;
    /* The SSD tier reads the dataset's features.npy where it is a file (not built in memory). */
    in->features_file = d->ds->arrays[GD_ARRAY_FEATURES].store == GD__STORE_MAP_RO &&
                        d->ds->arrays[GD_ARRAY_FEATURES].path != NULL;
    in->max_input_rows = si.max_input_nodes;
    if (have_gpu && d->cfg.mode != GD__TRAIN_CPU)
        in->fixed_bytes =
            d->cfg.depth * set + 2 * si.minibatch_bytes + model + GD__PLAN_GPU_RESERVE;
fail:
    gd_sampler_destroy(s);
    return st;
}

/*
 * Run place(d, 0), which page-locks memory of the dataset in place; when that memory is
 * registered already outside d's context (by another context's trainer or loader: CUDA
 * registers a range once per process), run place(d, 1), which pins a copy instead. Inside the
 * context nothing is refused: its registry shares a registered range with every user.
 */
static gd_status in_place_or_copy(gd__datapath *d, gd_status (*place)(gd__datapath *, int)) {
    gd_status st = place(d, 0);
    if (st != GD_ERR_ALREADY_REGISTERED) return st;
    gd_clear_error();
    return place(d, 1);
}

/*
 * The zero-copy features: the dataset's table (or a copy of it) registered through the context;
 * flags GD_HOST_TENSOR_READ_ONLY for a table used in place that is mapped read-only.
 */
static gd_status pin_features_as(gd__datapath *d, int copy, unsigned flags) {
    gd_status st = GD_OK;
    gd_array_view fv;
    GD_CHECK(gd_dataset_array(d->ds, GD_ARRAY_FEATURES, &fv));
    gd_host_tensor_destroy(d->features);
    d->features = NULL;
    if (copy) {
        GD_CHECK(gd_host_tensor_create(fv.shape[0], fv.shape[1], fv.dtype, 0, &d->features));
        memcpy(gd_host_tensor_data(d->features), fv.data,
               (size_t)(fv.shape[0] * gd_host_tensor_row_bytes(d->features)));
    } else {
        GD_CHECK(
            gd_host_tensor_adopt(fv.data, fv.shape[0], fv.shape[1], fv.dtype, flags, &d->features));
    }
    GD_CHECK(gd_host_tensor_register(d->features, d->context));
fail:
    return st;
}

static gd_status pin_features(gd__datapath *d, int copy) {
    return pin_features_as(d, copy, 0u);
}

/*
 * A table mapped read-only from the dataset's file is registered in place read-only: its pages
 * are the page cache's, so the processes of a multi-GPU run each register the same memory for
 * their GPU and none holds a copy. Where the GPU or the file system refuses (or another user
 * registered the range outside the context), a copy is pinned and the log says why.
 */
static gd_status pin_read_only(gd__datapath *d) {
    gd_status st = pin_features_as(d, 0, GD_HOST_TENSOR_READ_ONLY);
    if (st == GD_OK) {
        d->features_shared = 1;
        return GD_OK;
    }
    GD_INFO("zero-copy: the dataset's features cannot be registered in place (%s): pinning a "
            "copy",
            gd_last_error());
    gd_clear_error();
    return pin_features(d, 1);
}

/* The features as a host tensor, registered for the GPU when the mode reads them zero-copy. */
static gd_status place_features(gd__datapath *d) {
    gd_status st = GD_OK;
    gd_array_view fv;
    GD_CHECK(gd_dataset_array(d->ds, GD_ARRAY_FEATURES, &fv));
    /* Half tables are stored and gathered as they are and widened per minibatch (widen.h). */
    GD_REQUIRE(fv.dtype == GD_DTYPE_FLOAT32 || gd__widen_dtype(fv.dtype), GD_ERR_UNSUPPORTED,
               "trainer: dataset '%s' has %s features; training reads float32, float16 or "
               "bfloat16 features (regenerate or convert with --dtype)",
               gd_dataset_name(d->ds), gd_dtype_name(fv.dtype));
    const int ro = d->ds->arrays[GD_ARRAY_FEATURES].store == GD__STORE_MAP_RO;
    if (d->plan.features_on_disk) return GD_OK; /* read from the file (make_disk_source) */
    if (d->mode == GD__TRAIN_ZERO_COPY)
        /* Shared with the other trainers and loaders of the context over the same table. */
        GD_CHECK(ro ? pin_read_only(d) : in_place_or_copy(d, pin_features));
    else
        GD_CHECK(gd_host_tensor_adopt(fv.data, fv.shape[0], fv.shape[1], fv.dtype,
                                      ro ? GD_HOST_TENSOR_READ_ONLY : 0u, &d->features));
fail:
    return st;
}

/*
 * Registering the feature table (1.9 s of papers' 53 GiB on the H100) reads nothing the graph's
 * placement writes, and only the gatherer reads it: it runs on a thread of its own from when
 * the graph's lists are registered (the context's registry is locked while it registers, so
 * not earlier) until gd__datapath_place_features joins it. One GPU only: the ranks of a group
 * register in step with the others'.
 */
static void *pin_main(void *arg) {
    gd__datapath *d = arg;
    const double t0 = gd__now();
    d->pin_status = place_features(d);
    if (d->pin_status != GD_OK) snprintf(d->pin_error, sizeof d->pin_error, "%s", gd_last_error());
    gd_clear_error();
    d->pin_s = gd__now() - t0;
    return NULL;
}

static void start_pinning(gd__datapath *d) {
    if (d->pin_running || d->mode != GD__TRAIN_ZERO_COPY || d->plan.features_on_disk ||
        d->cfg.world > 1)
        return;
    /* Without a thread the features are registered in turn, as before. */
    d->pin_t0 = gd__now();
    d->pin_running = pthread_create(&d->pin_thread, NULL, pin_main, d) == 0;
}

static gd_status join_pinning(gd__datapath *d) {
    gd_status st = GD_OK;
    const int err = pthread_join(d->pin_thread, NULL);
    d->pin_running = 0;
    GD_REQUIRE(err == 0, GD_ERR_INTERNAL,
               "zero-copy: joining the thread that registers the features failed (error %d)",
               err);
    if (d->pin_status != GD_OK) return gd__error(d->pin_status, "%s", d->pin_error);
    GD_INFO("start-up: the features were registered beside the graph's placement in %.2f s",
            d->pin_s);
fail:
    return st;
}

#ifdef GD_WITH_CUDA
static gd_status used_gpu(const gd__datapath *d, int64_t *used) {
    gd_status st = GD_OK;
    int64_t f, total;
    GD_CHECK(gd__cuda_mem_info(gd_context_device(d->context), &f, &total));
    *used = d->free0 - f;
fail:
    return st;
}
#endif

/*
 * Reference rates of the start-up's long phases, measured on the H100 on papers (111M nodes,
 * 1.62G edges, 53 GiB of features; docs/train.md, "Start-up"; bench/results/2026-11-26-s7,
 * call 5, and the f85a381 runs): the progress line's estimates start from them, and are then
 * scaled by how long this build's phases took against their estimates.
 */
#define REF_PINNED_GBS 16.0    /* the graph's lists registered in place: 7.4 GB in 0.45 s */
#define REF_COPY_GBS 8.2       /* a host array copied into GPU memory: 57 GB in 6.95 s */
#define REF_REGISTER_GBS 22.0  /* the feature table registered (22-28 GB/s) */
#define REF_DEGREES_GPU 0.45e9 /* out-degree increments a second on the GPU: 1.62G in 3.63 s */
#define REF_LISTS 82e6         /* lists ranked, slotted and packed a second: 111M in 1.35 s */
#define REF_CACHE_GBS 20.0     /* the feature cache filled: 16 GiB in 0.79 s */

static double view_bytes(const gd_dataset_t *ds, gd_array_id id) {
    gd_array_view v;
    if (gd_dataset_array(ds, id, &v) != GD_OK) {
        gd_clear_error();
        return 0;
    }
    return (double)v.shape[0] * (double)(v.ndim == 2 ? v.shape[1] : 1) *
           (double)gd_dtype_size(v.dtype);
}

/* Each long phase's estimate at the reference rates, from the plan (0: the phase is skipped). */
static void startup_estimates(gd__datapath *d) {
    const double graph = view_bytes(d->ds, GD_ARRAY_INDPTR) + view_bytes(d->ds, GD_ARRAY_INDICES);
    const double table = view_bytes(d->ds, GD_ARRAY_FEATURES);
    memset(d->phase_est, 0, sizeof d->phase_est);
    d->phase_now = -1;
    if (d->cuda_sampler) {
        const int pinned = d->plan.indices == GD_PLACE_PINNED;
        d->phase_est[GD__STARTUP_GRAPH] = graph / 1e9 / (pinned ? REF_PINNED_GBS : REF_COPY_GBS);
        if (pinned && d->plan.graph_cache_bytes > 0) {
            d->phase_est[GD__STARTUP_DEGREES] = (double)gd_dataset_num_edges(d->ds) / REF_DEGREES_GPU;
            d->phase_est[GD__STARTUP_LISTS] = (double)d->num_nodes / REF_LISTS;
        }
    }
    if (d->mode == GD__TRAIN_ALL_GPU) {
        d->phase_est[GD__STARTUP_CACHES] = table / 1e9 / REF_COPY_GBS;
    } else if (d->mode == GD__TRAIN_ZERO_COPY && !d->plan.features_on_disk) {
        d->phase_est[GD__STARTUP_FEATURES] = table / 1e9 / REF_REGISTER_GBS;
        const double cache = d->plan.feature_cache_bytes > 0 ? (double)d->plan.feature_cache_bytes
                             : d->plan.budget > 0           ? (double)d->plan.budget
                                                            : 0;
        d->phase_est[GD__STARTUP_CACHES] = (cache < table ? cache : table) / 1e9 / REF_CACHE_GBS;
    }
}

/* The phase under way (if any) ended now: its estimate and its time correct the rest. */
static void startup_phase_end(gd__datapath *d, double now) {
    if (d->phase_now < 0) return;
    d->est_done += d->phase_est[d->phase_now];
    d->took_done += now - d->phase_t;
    d->phase_now = -1;
}

/*
 * Start-up: long phase `phase` begins; the caller's progress line says what it does and about
 * how long it and the rest of the start-up will take (est_s < 0: the phase's reference
 * estimate). A phase estimated at nothing is not announced.
 */
static void startup_say(gd__datapath *d, int phase, const char *doing, double est_s) {
    const double now = gd__now();
    startup_phase_end(d, now);
    if (est_s >= 0) d->phase_est[phase] = est_s;
    d->phase_now = phase;
    d->phase_t = now;
    if (!d->cfg.startup_progress || d->phase_est[phase] <= 0) return;
    double k = d->est_done > 0.05 ? d->took_done / d->est_done : 1;
    k = k < 0.25 ? 0.25 : k > 4 ? 4 : k;
    double left = 0;
    int count = 0, number = 0;
    for (int i = 0; i < GD__STARTUP_PHASES; i++) {
        if (d->phase_est[i] <= 0 && i != phase) continue;
        count++;
        if (i == phase) number = count;
        if (i >= phase) left += d->phase_est[i];
    }
    char line[400];
    snprintf(line, sizeof line, "start-up: %s: about %.1f s (%d of %d; about %.1f s to go)",
             doing, k * d->phase_est[phase], number, count, k * left);
    (void)d->cfg.startup_progress(d->cfg.startup_progress_user, line, (uint64_t)number,
                                  (uint64_t)count);
}

/* Start-up: the phase under way ended; its time goes to d->startup and the info log. */
static void startup_mark(gd__datapath *d, const char *what) {
    const double now = gd__now();
    startup_phase_end(d, now);
    const size_t used = strlen(d->startup);
    snprintf(d->startup + used, sizeof d->startup - used, "%s%s %.2f s", used ? ", " : "", what,
             now - d->startup_t);
    GD_INFO("start-up: %s took %.2f s", what, now - d->startup_t);
    d->startup_t = now;
}

/*
 * Each row's out-degree (how often uniform sampling reaches it), the score of the hot rows: the
 * neighbour-list cache's, the feature cache's and the disk tier's host buffer's. One pass over
 * the edges, made once per build and shared (d->out_degrees, freed when the features are
 * placed); *scores points into it. The graph counts them: on the GPU once it is placed where
 * GPU kernels read it (the CUDA sampler's modes), else on every core over the host view.
 */
static gd_status out_degree_scores(gd__datapath *d, const int64_t **scores) {
    gd_status st = GD_OK;
    *scores = NULL;
    if (!d->out_degrees) {
        const int on_gpu = d->graph->d_indices != NULL;
        GD_ALLOC(d->out_degrees, (size_t)d->num_nodes * sizeof(int64_t), "the hot rows' scores");
        /* A dataset directory's `.outdeg` record of these files (io/outdeg_cache.c), else a
         * count, recorded for the next build. */
        if (gd__outdeg_cache_load(d->ds, d->out_degrees)) {
            startup_mark(d, "out-degrees (its .outdeg record)");
        } else {
            st = gd__graph_out_degrees(d->graph, d->out_degrees);
            if (st != GD_OK) {
                gd_free(d->out_degrees);
                d->out_degrees = NULL;
                goto fail;
            }
            startup_mark(d, on_gpu ? "out-degrees (GPU)" : "out-degrees");
            if (gd__outdeg_cache_save(d->ds, d->out_degrees))
                startup_mark(d, "out-degrees recorded");
        }
    }
    *scores = d->out_degrees;
fail:
    return st;
}

#ifdef GD_WITH_CUDA
/* The rows of the k highest out-degrees, hottest first. */
static gd_status hottest_rows(gd__datapath *d, int64_t k, int64_t **out, int64_t *count) {
    gd_status st = GD_OK;
    const int64_t *scores = NULL;
    int64_t *rows = NULL;
    *out = NULL;
    *count = 0;
    if (k <= 0) return GD_OK;
    GD_CHECK(out_degree_scores(d, &scores));
    GD_ALLOC(rows, (size_t)k * sizeof(int64_t), "the hot rows");
    GD_CHECK(gd_hot_rows_select(scores, d->num_nodes, k, rows, count));
    *out = rows;
    rows = NULL;
fail:
    gd_free(rows);
    return st;
}

#endif

/*
 * The I/O engine's depth for the table's file: GD_DISK_DEPTH, or (auto) the depth probed on
 * the file at the row size (Little's law, gd__ioeng_probe_depth).
 */
static gd_status disk_depth(const char *path, int64_t offset, int64_t rb, gd__ioeng_options *io) {
    gd_status st = GD_OK;
    const char *text = NULL;
    GD_CHECK(gd_param_get("GD_DISK_DEPTH", &text));
    if (strcmp(text, "auto") == 0) {
        double rates[GD__IOENG_PROBE_DEPTHS];
        GD_CHECK(gd__ioeng_probe_depth(path, offset, rb, io, 0.6, 1, &io->queue_depth, rates));
        GD_INFO("features on disk: %d reads in flight (probed on '%s': %.0f / %.0f / %.0f / %.0f "
                "/ %.0f / %.0f reads/s at depths 1 / 4 / 16 / 64 / 256 / 1024)",
                io->queue_depth, path, rates[0], rates[1], rates[2], rates[3], rates[4], rates[5]);
        return GD_OK;
    }
    char *end = NULL;
    const long v = strtol(text, &end, 10);
    GD_REQUIRE(end != text && *end == '\0' && v >= 1 && v <= GD__IOENG_MAX_DEPTH,
               GD_ERR_INVALID_ARG, "GD_DISK_DEPTH=%s: give auto or a depth from 1 to %d", text,
               GD__IOENG_MAX_DEPTH);
    io->queue_depth = (int)v;
fail:
    return st;
}

/*
 * The features on disk (the SSD tier, docs/feature_store.md): on a GPU, the disk tier (the
 * plan's hottest rows in a pinned host buffer, a dynamic GPU cache in what the budget leaves,
 * misses read by the I/O engine); in cpu mode, the rows through a dynamic host cache of the
 * plan's rows. The eviction policy is GD_DISK_EVICT's.
 */
static gd_status make_disk_source(gd__datapath *d) {
    gd_status st = GD_OK;
    int64_t *hot = NULL; /* the host buffer's rows (GPU) */
    gd_npy_info info;
    const char *policy_name = NULL;
    const gd__array *fa = &d->ds->arrays[GD_ARRAY_FEATURES];
    const int64_t rb = d->in_dim * (int64_t)gd_dtype_size(d->feature_dtype);
    GD_REQUIRE(d->cfg.world <= 1, GD_ERR_UNSUPPORTED,
               "the features of '%s' exceed the host memory budget, and reading them from disk "
               "on several GPUs is not built yet: train on one GPU, or raise --host-mem-budget "
               "(GD_HOST_MEM_MB) so that the table is pinned",
               gd_dataset_name(d->ds));
    GD_REQUIRE(!d->cfg.locality, GD_ERR_UNSUPPORTED,
               "--locality: the features of '%s' are read from disk, where the GPU cache changes "
               "during the epoch; locality-aware sampling favours a fixed cache: leave it off",
               gd_dataset_name(d->ds));
    /* The table's files: features.npy, or the stripe files its manifest lists (the first one
     * probed for the depth: the disks are alike). */
    const gd__stripe_table *stripes = fa->stripes;
    if (stripes) {
        info.data_offset = stripes->files[0].data_offset;
    } else {
        GD_CHECK(gd_npy_read_info(fa->path, &info));
    }
    const char *probe_path = stripes ? stripes->files[0].path : fa->path;
    GD_CHECK(gd_param_get("GD_DISK_EVICT", &policy_name));
    const int policy = gd__name_index(gd__evict_names, GD__EVICT_COUNT, policy_name);
    GD_REQUIRE(policy >= 0, GD_ERR_INVALID_ARG,
               "GD_DISK_EVICT=%s: the eviction policy is clock, sieve or random", policy_name);
    gd__ioeng_options io = GD__IOENG_OPTIONS_INIT;
    GD_CHECK(disk_depth(probe_path, info.data_offset, rb, &io));
    const size_t used = strlen(d->plan.text);
    char a[32], b[32];
    if (!d->gpu) {
        gd__disk_rows_config c;
        memset(&c, 0, sizeof c);
        c.path = fa->path;
        c.data_offset = info.data_offset;
        if (stripes) {
            c.stripes = stripes->files;
            c.num_stripes = stripes->nfiles;
            c.stripe_rows = stripes->unit_rows;
        }
        c.rows = d->num_nodes;
        c.row_bytes = rb;
        c.cache_rows = d->plan.host_buffer_rows;
        c.policy = (gd__evict_policy)policy;
        c.io = io;
        GD_CHECK(gd__disk_rows_open(&c, &d->disk_rows));
        snprintf(d->plan.text + used, sizeof d->plan.text - used,
                 "; host cache of %lld rows (%s, %s), %d reads in flight", (long long)c.cache_rows,
                 gd__plan_gib(c.cache_rows * rb, a, sizeof a), policy_name, io.queue_depth);
        return GD_OK;
    }
#ifdef GD_WITH_CUDA
    {
        int64_t hot_count = 0, cache = d->plan.feature_cache_bytes, gpu_used;
        const int64_t table = d->num_nodes * rb, max_in = gd__max64(d->sinfo.max_input_nodes, 1);
        if (cache < 0) {
            /* What the budget leaves, less the location map and the tier's per-minibatch arrays. */
            GD_CHECK(used_gpu(d, &gpu_used));
            cache = d->budget - gpu_used - GD__PLAN_GPU_RESERVE - 8 * d->num_nodes - 16 * max_in;
            cache = cache < 0 ? 0 : gd__min64(cache, table + 40 * d->num_nodes);
        }
        GD_CHECK(hottest_rows(d, d->plan.host_buffer_rows, &hot, &hot_count));
        gd__disk_tier_config c;
        memset(&c, 0, sizeof c);
        c.path = fa->path;
        c.data_offset = info.data_offset;
        if (stripes) {
            c.stripes = stripes->files;
            c.num_stripes = stripes->nfiles;
            c.stripe_rows = stripes->unit_rows;
        }
        c.rows = d->num_nodes;
        c.row_bytes = rb;
        c.device = gd_context_device(d->context);
        c.host_rows = hot;
        c.host_count = hot_count;
        /* A slot holds its row and the cache's state of it (dyncache_impl.h: 38 bytes). */
        c.gpu_slots = gd__min64(cache / (rb + 40), d->num_nodes);
        c.policy = (gd__evict_policy)policy;
        c.seed = d->cfg.seed;
        c.max_rows = max_in;
        c.io = io;
        {
            int64_t w = 0;
            GD_CHECK(gd_param_get_int("GD_DISK_WINDOW", &w));
            GD_REQUIRE(w >= 0 && w <= GD__PIPE_MAX_DEPTH, GD_ERR_INVALID_ARG,
                       "GD_DISK_WINDOW=%lld: give 0 (off) to %d minibatches ahead", (long long)w,
                       GD__PIPE_MAX_DEPTH);
            /* Only depth - 1 minibatches are ever sampled ahead of the one being gathered. */
            d->window = (int)gd__min64(w, d->depth - 1);
            if (d->window < w)
                GD_INFO("GD_DISK_WINDOW=%lld: %d minibatches are sampled ahead at depth %d; "
                        "window %d",
                        (long long)w, d->depth - 1, d->depth, d->window);
            c.window = d->window > 0;
        }
        GD_CHECK(gd__disk_tier_open(&c, &d->disk));
        d->feature_cache_rows = c.gpu_slots;
        d->feature_cache_bytes = c.gpu_slots * rb;
        snprintf(d->plan.text + used, sizeof d->plan.text - used,
                 "; host buffer of %lld rows (%s), dynamic GPU cache of %lld rows (%s, %s, "
                 "window %d), %d reads in flight",
                 (long long)hot_count, gd__plan_gib(hot_count * rb, a, sizeof a),
                 (long long)c.gpu_slots, gd__plan_gib(c.gpu_slots * rb, b, sizeof b), policy_name,
                 d->window, io.queue_depth);
    }
#else
    (void)b;
    GD_REQUIRE(0, GD_ERR_NO_DEVICE, "the features on disk for a GPU need a CUDA build");
#endif
fail:
    gd_free(hot);
    return st;
}

#ifdef GD_WITH_CUDA
/*
 * Host rows gathered per call of the host_gather probe (capped by the gatherer's max_ids: a
 * minibatch's input rows), and its timed calls each way. Calls of 65536 rows misjudged papers
 * on the H100: 12.8 GB/s zero-copy against 9.0 GB/s by the CPU, whose fixed cost per call (the
 * list's round trip) weighs on a small call, while the epoch's gather stage took 6.15 s
 * zero-copy against 4.43 s by the CPU. The probe now calls with what a minibatch reads (at
 * most 256 MiB of rows).
 */
#define HOST_PROBE_ROWS INT64_MAX
#define HOST_PROBE_REPS 3

/*
 * zero-copy with rows in host memory, --host-gather cpu, split or auto: set the way the
 * gatherer takes and say it in the plan. auto starts its trial (host_gather.h: the ways are
 * tried in the first training minibatches, host_trial_step); split takes its CPU fraction from
 * "split=F", else GD_HOST_SPLIT, else a start-up probe's two rates (both engines then finish
 * together).
 */
static gd_status choose_host_gather(gd__datapath *d) {
    gd_status st = GD_OK;
    const size_t used = strlen(d->plan.text);
    char probe[160] = "", how[128];
    gd__host_gather way = (gd__host_gather)d->cfg.host_gather;
    double f = d->cfg.host_split;
    const char *f_from = "--host-gather split=F";
    if (f < 0) {
        GD_CHECK(gd__host_split_param(&f));
        f_from = "GD_HOST_SPLIT";
    }
    if (way == GD__HOST_GATHER_AUTO) {
        /* Chosen in the epoch (host_gather.h, "auto's trial"); the first way is the CPU's. */
        int64_t runs = 0;
        GD_CHECK(gd_param_get_int("GD_HOST_TRIAL", &runs));
        GD_REQUIRE(runs >= GD__HOST_TRIAL_SETTLE + 2 && runs <= GD__HOST_TRIAL_MAX_RUNS,
                   GD_ERR_INVALID_ARG,
                   "GD_HOST_TRIAL=%lld: give the minibatches each way serves in auto's trial, "
                   "%d to %d",
                   (long long)runs, GD__HOST_TRIAL_SETTLE + 2, GD__HOST_TRIAL_MAX_RUNS);
        GD_ALLOC(d->host_trial, sizeof *d->host_trial, "auto's trial");
        gd__host_trial_init(d->host_trial, (int)runs);
        GD_CHECK(gd__gatherer_set_host_cpu(d->gatherer, 1));
        GD_INFO("zero-copy: host rows by auto: a trial of %d ways, %lld minibatches each, in "
                "the first training minibatches",
                GD__HOST_TRIAL_WAYS, (long long)runs);
        snprintf(d->plan.text + used, sizeof d->plan.text - used,
                 "; host rows by auto (a trial in the epoch, %lld minibatches a way)",
                 (long long)runs);
        return GD_OK;
    }
    if (way == GD__HOST_GATHER_SPLIT && f < 0) {
        gd__host_probe p;
        GD_CHECK(gd__gatherer_host_probe(d->gatherer, HOST_PROBE_ROWS, HOST_PROBE_REPS,
                                         d->cfg.seed, f, &p));
        if (f < 0) {
            f = p.rows > 0 ? p.split_f : 0.5;
            f_from = "cpu / (cpu + zero-copy)";
        }
        snprintf(probe, sizeof probe,
                 "; probe GB/s %.1f zero-copy, %.1f cpu, %.1f split %.2f, %lld rows probed",
                 p.zerocopy_gbs, p.cpu_gbs, p.split_gbs, p.split_f, (long long)p.rows);
        startup_mark(d, "host gather probe");
    }
    if (way == GD__HOST_GATHER_SPLIT) {
        GD_CHECK(gd__gatherer_set_host_split(d->gatherer, f));
        snprintf(how, sizeof how, "split, %.2f by CPU gather + DMA beside zero-copy loads (%s",
                 f, f_from);
    } else {
        GD_CHECK(gd__gatherer_set_host_cpu(d->gatherer, way == GD__HOST_GATHER_CPU));
        snprintf(how, sizeof how, "by %s (--host-gather cpu",
                 way == GD__HOST_GATHER_CPU ? "CPU gather + DMA" : "zero-copy loads");
    }
    GD_INFO("zero-copy: host rows %s%s)", how, probe);
    snprintf(d->plan.text + used, sizeof d->plan.text - used, "; host rows %s%s)", how, probe);
fail:
    return st;
}
#endif

/*
 * zero-copy with a table in anonymous memory (not a file's pages): how much of it 2 MiB pages
 * back (core/hugepages.h), in the plan, since zero-copy loads over a large table are bound by
 * address translation.
 */
static gd_status say_huge_pages(gd__datapath *d) {
    const size_t used = strlen(d->plan.text);
    const size_t bytes = (size_t)(d->num_nodes * gd_host_tensor_row_bytes(d->features));
    const int64_t huge = gd__huge_bytes(gd_host_tensor_data(d->features), bytes);
    const char *asked = NULL;
    char thp[32], a[32], b[32];
    gd_status st = gd_param_get("GD_HUGEPAGES", &asked);
    if (st != GD_OK) return st;
    gd__thp_mode(thp, sizeof thp);
    if (huge < 0) {
        snprintf(d->plan.text + used, sizeof d->plan.text - used, ", 2 MiB pages unknown");
        return GD_OK;
    }
    snprintf(d->plan.text + used, sizeof d->plan.text - used,
             ", 2 MiB pages on %s of %s (THP %s, GD_HUGEPAGES %s)",
             gd__plan_gib(huge, a, sizeof a), gd__plan_gib((int64_t)bytes, b, sizeof b), thp,
             asked);
    return GD_OK;
}

/* The gatherer of the mode; zero-copy sizes its cache from what the budget leaves. */
static gd_status make_gatherer(gd__datapath *d) {
    gd_status st = GD_OK;
    int placed = 0;
    if (d->plan.features_on_disk) return make_disk_source(d);
    gd_gatherer_options go = GD_GATHERER_OPTIONS_INIT;
    go.threads = d->cfg.threads;
    go.max_ids = gd__max64(d->sinfo.max_input_nodes, 1);
    go.sm_budget = d->cfg.gather_sms;
    const gd_gather_mode gm = d->mode == GD__TRAIN_ALL_GPU       ? GD_GATHER_GPU
                              : d->mode == GD__TRAIN_CPU_CENTRIC ? GD_GATHER_CPU_DMA
                              : d->mode == GD__TRAIN_ZERO_COPY   ? GD_GATHER_ZEROCOPY
                                                                 : GD_GATHER_CPU;
#ifdef GD_WITH_CUDA
    if (gm == GD_GATHER_ZEROCOPY) {
        int64_t cache = d->plan.feature_cache_bytes, used;
        const int64_t rb = gd_host_tensor_row_bytes(d->features), table = d->num_nodes * rb;
        /* The CPU gather of host rows stages max_ids rows (and lists them) in GPU memory too. */
        const int64_t host_stage =
            d->cfg.host_gather != GD__HOST_GATHER_ZEROCOPY ? go.max_ids * (rb + 24) : 0;
        if (cache < 0) {
            /* What is left of the budget, less the location map and the gather's buffers. */
            GD_CHECK(used_gpu(d, &used));
            cache = d->budget - used - GD__PLAN_GPU_RESERVE - 8 * d->num_nodes - 64 * go.max_ids -
                    host_stage;
            cache = cache < 0 ? 0 : gd__min64(cache, table);
        }
        go.host_gather = host_stage > 0 && cache < table;
        /*
         * Rows left in host memory make the gather PCIe-bound, and then a gather spread over
         * every SM only holds SMs the training kernels need: on papers with a 16 GiB budget the
         * training step went from 1.5 ms to 7.3 ms beside it. 10 % of the SMs (a green
         * context) still saturate what the link delivers and the step stays near 2 ms
         * (docs/train.md). Unless the caller or GD_GATHER_SMS says otherwise.
         */
        if (!go.sm_budget && cache < table && !gd__param_given("GD_GATHER_SMS"))
            go.sm_budget = "10%";
        if (cache > 0) {
            const int64_t *scores = NULL;
            GD_CHECK(out_degree_scores(d, &scores));
            GD_CHECK(gd__datapath_place_cache(d, &go, cache, scores, &placed));
            go.cache_bytes = cache;
            go.cache_scores = scores;
        }
    }
#endif
    if (!placed) GD_CHECK(gd_gatherer_create(d->features, d->context, gm, &go, &d->gatherer));
    gd_gatherer_info gi = GD_GATHERER_INFO_INIT;
    GD_CHECK(gd_gatherer_get_info(d->gatherer, &gi));
    d->feature_cache_rows = gi.cached_rows;
    d->feature_cache_bytes = gi.cache_bytes;
    if (d->mode == GD__TRAIN_ZERO_COPY) {
        const size_t used = strlen(d->plan.text);
        char a[32], b[32];
        gd_array_view fv;
        GD_CHECK(gd_dataset_array(d->ds, GD_ARRAY_FEATURES, &fv));
        /* What this process holds in host memory of the table: nothing, or a pinned copy. */
        const int copied = gd_host_tensor_data(d->features) != fv.data;
        snprintf(d->plan.text + used, sizeof d->plan.text - used,
                 "; GPU caches: neighbour lists %s, feature rows %s (%lld rows); gather on %d "
                 "SMs%s; host features %s",
                 gd__plan_gib(d->graph_cache_bytes, a, sizeof a),
                 gd__plan_gib(gi.cache_bytes, b, sizeof b), (long long)gi.cached_rows, gi.sms,
                 gi.green_context ? " (green context)" : "",
                 copied ? "pinned as a copy"
                 : d->features_shared ? "pinned in place (the file's pages, shared)"
                                      : "pinned in place");
        if (!d->features_shared) GD_CHECK(say_huge_pages(d));
    }
#ifdef GD_WITH_CUDA
    if (go.host_gather) GD_CHECK(choose_host_gather(d));
#endif
fail:
    return st;
}

/* The graph where the plan says the CUDA sampler reads it; pinned lists are a copy with copy. */
static gd_status place_graph_as(gd__datapath *d, int copy) {
    gd_status st = GD_OK;
    gd_graph_options o = GD_GRAPH_OPTIONS_INIT;
    o.context = d->context;
    o.indptr_placement = d->plan.indptr;
    o.indices_placement = d->plan.indices;
    o.copy_host = copy;
    const int64_t cache = d->plan.indices == GD_PLACE_PINNED ? d->plan.graph_cache_bytes : 0;
    gd_graph_destroy(d->graph);
    d->graph = NULL;
    /* The graph without its list cache first: placed, its indices are what the GPU counts the
     * out-degrees over, by which the cache is then ranked. */
    startup_say(d, GD__STARTUP_GRAPH,
                d->plan.indices == GD_PLACE_PINNED ? "registering the graph's lists in place"
                                                   : "copying the graph to GPU memory",
                -1);
    GD_CHECK(gd_graph_create_from_dataset(d->ds, &o, &d->graph));
    startup_mark(d, "graph placed");
    start_pinning(d);
    if (cache > 0) {
        const int64_t *scores = NULL;
        gd_array_view ip;
        GD_CHECK(gd_dataset_array(d->ds, GD_ARRAY_INDPTR, &ip));
        if (!d->out_degrees)
            startup_say(d, GD__STARTUP_DEGREES,
                        gd__outdeg_cache_matches(d->ds) ? "reading the out-degrees (.outdeg)"
                        : d->graph->d_indices           ? "counting out-degrees on the GPU"
                                                        : "counting out-degrees on the CPU",
                        -1);
        GD_CHECK(out_degree_scores(d, &scores));
        startup_say(d, GD__STARTUP_LISTS, "ranking and packing the neighbour-list cache", -1);
        GD_CHECK(gd__graph_build_cache(d->graph, ip.data, cache, scores));
        startup_mark(d, "list cache");
    }
    gd_graph_info gi = GD_GRAPH_INFO_INIT;
    GD_CHECK(gd_graph_get_info(d->graph, &gi));
    d->graph_cache_bytes = gi.cache_bytes;
fail:
    return st;
}

/* The graph, its lists pinned in place where another context has not registered them. */
static gd_status place_graph(gd__datapath *d) {
    return in_place_or_copy(d, place_graph_as);
}

gd_status gd__datapath_set_alloc(gd__datapath *d, gd__batch_set *s) {
    gd_status st = GD_OK;
    memset(s, 0, sizeof *s);
    GD_CHECK(gd__nn_tensor_alloc(d->nn, GD_DTYPE_FLOAT32, d->sinfo.max_input_nodes, d->in_dim,
                                 &s->x));
    GD_CHECK(d->nn->be->alloc(d->nn, (size_t)d->batch * sizeof(int64_t), (void **)&s->labels));
    if ((d->gpu || d->plan.features_on_disk) && gd__widen_dtype(d->feature_dtype))
        GD_CHECK(d->nn->be->alloc(d->nn, (size_t)(d->sinfo.max_input_nodes * d->in_dim) * 2,
                                  &s->x_half));
    if (d->mode != GD__TRAIN_CPU_CENTRIC) GD_CHECK(gd_minibatch_create(d->sampler, &s->mb));
#ifdef GD_WITH_CUDA
    if (d->gpu)
        GD_CHECK(gd__cuda_pinned_alloc((void **)&s->label_stage,
                                       (size_t)d->batch * sizeof(int64_t), "labels",
                                       "lower the batch size"));
    if (d->mode == GD__TRAIN_CPU_CENTRIC) {
        GD_CHECK(gd__cuda_pinned_alloc(&s->blk_stage, d->blk_bytes, "minibatch blocks",
                                       "lower the batch size"));
        GD_CHECK(gd__cuda_malloc(gd_context_device(d->context), &s->blk_dev, d->blk_bytes,
                                 "minibatch blocks"));
    }
#endif
    return GD_OK;
fail:
    gd__datapath_set_free(d, s);
    return st;
}

int64_t gd__datapath_set_bytes(const gd__datapath *d) {
    return set_bytes(d->sinfo.minibatch_bytes, d->sinfo.max_input_nodes, d->in_dim,
                     (d->gpu || d->plan.features_on_disk) && gd__widen_dtype(d->feature_dtype),
                     d->batch);
}

/* The buffer sets of the ring. */
static gd_status make_sets(gd__datapath *d) {
    gd_status st = GD_OK;
    for (int i = 0; i < d->depth; i++) GD_CHECK(gd__datapath_set_alloc(d, &d->sets[i]));
fail:
    return st;
}

gd_status gd__datapath_machine(gd__train_mode mode, int device, int64_t gpu_mem_budget,
                               int *have_gpu, int64_t *free0, int64_t *budget) {
    gd_status st = GD_OK;
    *have_gpu = 0;
    if (mode == GD__TRAIN_CPU) return GD_OK;
#ifdef GD_WITH_CUDA
    if (mode != GD__TRAIN_AUTO || gd__cuda_device_count() > 0) {
        char what[64];
        int64_t total;
        snprintf(what, sizeof what, "--mode %s", gd__train_mode_name(mode));
        GD_CHECK(gd__cuda_check_device(device, what, "use --mode cpu"));
        GD_CHECK(gd__cuda_mem_info(device, free0, &total));
        *budget = gpu_mem_budget > 0 ? gd__min64(gpu_mem_budget, *free0) : *free0;
        *have_gpu = 1;
    }
#else
    (void)device;
    (void)gpu_mem_budget;
    (void)free0;
    (void)budget;
    GD_REQUIRE(mode == GD__TRAIN_AUTO, GD_ERR_NO_DEVICE,
               "--mode %s needs a GPU, but graphdirect was built without CUDA: install the "
               "CUDA toolkit and rebuild, or use --mode cpu",
               gd__train_mode_name(mode));
#endif
fail:
    return st;
}

/* The device's free memory and the budget of cfg on it; *have_gpu: a GPU mode can run. */
static gd_status machine(gd__datapath *d, int device, int *have_gpu) {
    return gd__datapath_machine(d->cfg.mode, device, d->cfg.gpu_mem_budget, have_gpu, &d->free0,
                                &d->budget);
}

/* The plan of d (its dataset, config and borrowed host graph) on device. */
static gd_status make_plan(gd__datapath *d, int device) {
    gd_status st = GD_OK;
    int have_gpu;
    gd__plan_input in;
    GD_CHECK(machine(d, device, &have_gpu));
    GD_CHECK(plan_input(d, have_gpu, &in));
    GD_CHECK(gd__plan_make(&in, &d->plan));
fail:
    return st;
}

/* The device and its budget; the plan; the client's nn backend. */
static gd_status resolve(gd__datapath *d, gd__nn_ctx *nn) {
    gd_status st = GD_OK;
    GD_CHECK(make_plan(d, gd_context_device(d->context)));
    d->mode = d->plan.mode;
    d->gpu = d->mode != GD__TRAIN_CPU;
    d->cuda_sampler = d->mode == GD__TRAIN_ALL_GPU || d->mode == GD__TRAIN_ZERO_COPY;
    d->depth = d->gpu || d->cfg.sets_on_cpu ? d->cfg.depth : 1;
    *nn = gd__nn_cpu_ctx();
#ifdef GD_WITH_CUDA
    if (d->gpu) GD_CHECK(gd__nn_cuda_ctx_create(gd_context_device(d->context), nn));
#endif
    d->nn = nn;
fail:
    return st;
}

gd_status gd__datapath_plan(const gd_dataset_t *ds, const gd__data_config *cfg, int device,
                            gd__plan *out) {
    gd_status st = GD_OK;
    gd__datapath d;
    memset(&d, 0, sizeof d);
    d.cfg = *cfg;
    d.ds = ds;
    d.num_nodes = gd_dataset_num_nodes(ds);
    d.in_dim = gd_dataset_feature_dim(ds);
    d.batch = gd__min64(cfg->batch_size, d.num_nodes);
    GD_CHECK(gd_graph_create_from_dataset(ds, NULL, &d.graph));
    GD_CHECK(make_plan(&d, device));
    *out = d.plan;
fail:
    gd_graph_destroy(d.graph);
    return st;
}

gd_status gd__datapath_create(const gd_dataset_t *ds, const gd__data_config *cfg,
                              gd_context_t *context, gd__nn_ctx *nn, gd__datapath **out) {
    gd_status st = GD_OK;
    gd__datapath *d = NULL;
    unsigned char *seen = NULL; /* the loader's seeds, checked distinct */
    *out = NULL;
    GD_ALLOC(d, sizeof *d, "the data path");
    memset(d, 0, sizeof *d);
    d->startup_t = gd__now();
    d->cfg = *cfg;
    d->ds = ds;
    for (int i = 0; i < GD__PIPE_MAX_DEPTH; i++) d->sampled[i] = d->announced[i] = -1;
    d->context = gd__context_ref(context);
    d->num_nodes = gd_dataset_num_nodes(ds);
    d->in_dim = gd_dataset_feature_dim(ds);
    d->num_classes = gd_dataset_num_classes(ds);
    d->batch = gd__min64(cfg->batch_size, d->num_nodes);
    gd_array_view fv;
    GD_CHECK(gd_dataset_array(ds, GD_ARRAY_FEATURES, &fv));
    d->feature_dtype = fv.dtype;

    /* The splits and the labels. */
    for (int i = 0; i < 3; i++)
        GD_CHECK(
            load_split(ds, (gd_array_id)(GD_ARRAY_TRAIN_IDX + i), &d->split[i], &d->split_n[i]));
    if (cfg->seeds) {
        /* The caller's seeds in place of a split (checked: every one a node). */
        const int k = cfg->seeds_split;
        gd_free(d->split[k]);
        d->split[k] = NULL;
        d->split_n[k] = 0;
        GD_REQUIRE(cfg->num_seeds > 0, GD_ERR_INVALID_ARG, "loader: no seeds given (num_seeds %lld)",
                   (long long)cfg->num_seeds);
        GD_ALLOC(seen, (size_t)(d->num_nodes + 7) / 8, "the seeds' check");
        memset(seen, 0, (size_t)(d->num_nodes + 7) / 8);
        for (int64_t i = 0; i < cfg->num_seeds; i++) {
            const int64_t v = cfg->seeds[i];
            GD_REQUIRE(v >= 0 && v < d->num_nodes, GD_ERR_RANGE,
                       "loader: seed %lld (position %lld) is not a node of dataset '%s' (0 to "
                       "%lld)",
                       (long long)v, (long long)i, gd_dataset_name(ds),
                       (long long)d->num_nodes - 1);
            GD_REQUIRE(!((seen[v >> 3] >> (v & 7)) & 1), GD_ERR_INVALID_ARG,
                       "loader: seed %lld is given twice (the second time at position %lld): a "
                       "minibatch's seeds must be distinct nodes",
                       (long long)v, (long long)i);
            seen[v >> 3] |= (unsigned char)(1u << (v & 7));
        }
        gd_free(seen);
        seen = NULL;
        GD_ALLOC(d->split[k], (size_t)cfg->num_seeds * sizeof(int64_t), "the loader's seeds");
        memcpy(d->split[k], cfg->seeds, (size_t)cfg->num_seeds * sizeof(int64_t));
        d->split_n[k] = cfg->num_seeds;
    }
    const int64_t most = gd__max64(d->split_n[0], gd__max64(d->split_n[1], d->split_n[2]));
    GD_ALLOC(d->order, (size_t)most * sizeof(int64_t), "the epoch order");
    st = gd_dataset_array(ds, GD_ARRAY_LABELS, &d->label_view);
    if (st == GD_ERR_NOT_FOUND && cfg->labels_optional) {
        /* A loader serves unlabelled data too: its batches then have no labels. */
        gd_clear_error();
        st = GD_OK;
        d->label_view.data = NULL;
    }
    GD_CHECK(st);
    startup_mark(d, "splits");

    /* A host view of the graph (borrowed, nothing copied): the plan's estimate, cpu modes. */
    GD_CHECK(gd_graph_create_from_dataset(ds, NULL, &d->graph));
    GD_CHECK(resolve(d, nn));
    gd_graph_info gi = GD_GRAPH_INFO_INIT;
    GD_CHECK(gd_graph_get_info(d->graph, &gi));
    d->max_degree = gi.max_degree;
    startup_mark(d, "plan");
    startup_estimates(d);

    /* The graph where the sampler reads it, the sampler and the minibatch buffers. */
    if (d->cuda_sampler) GD_CHECK(place_graph(d)); /* marks its phases */
    gd_sampler_options so = GD_SAMPLER_OPTIONS_INIT;
    so.backend = d->cuda_sampler ? GD_SAMPLER_CUDA : GD_SAMPLER_CPU;
    so.max_batch = d->batch;
    so.seed = cfg->seed;
    so.threads = cfg->threads;
    GD_CHECK(gd_sampler_create(d->graph, cfg->fanouts, cfg->num_layers, &so, &d->sampler));
    d->sinfo = (gd_sampler_info)GD_SAMPLER_INFO_INIT;
    GD_CHECK(gd_sampler_get_info(d->sampler, &d->sinfo));
    if (d->mode == GD__TRAIN_CPU_CENTRIC) GD_CHECK(gd_minibatch_create(d->sampler, &d->host_mb));
    d->blk_bytes = (size_t)d->sinfo.minibatch_bytes;
    GD_CHECK(make_sets(d));
#ifdef GD_WITH_CUDA
    const int device = gd_context_device(d->context);
    if (d->gpu) {
        GD_CHECK(gd__cuda_stream_create(device, &d->s_sample));
        GD_CHECK(gd__cuda_stream_create(device, &d->s_gather));
    }
    if (d->cuda_sampler)
        GD_CHECK(gd__cuda_malloc(device, (void **)&d->d_order, (size_t)most * sizeof(int64_t),
                                 "the epoch's seed order"));
#endif
    startup_mark(d, "sampler and buffers");
    *out = d;
    return GD_OK;
fail:
    gd_free(seen);
    gd__datapath_destroy(d);
    return st;
}

gd_status gd__datapath_place_features(gd__datapath *d) {
    gd_status st = GD_OK;
    /* Since the data path's build: the trainer's model, optimiser and communicator. */
    if (gd__now() - d->startup_t >= 0.01) startup_mark(d, "model and ranks");
    d->startup_t = gd__now();
    if (d->pin_running) {
        /* The wait for the registration beside the graph's: what its estimate leaves. */
        const double wait = d->phase_est[GD__STARTUP_FEATURES] - (gd__now() - d->pin_t0);
        startup_say(d, GD__STARTUP_FEATURES, "registering the feature table (beside the graph)",
                    wait > 0.05 ? wait : 0.05);
        GD_CHECK(join_pinning(d));
    } else {
        startup_say(d, GD__STARTUP_FEATURES, "registering the feature table", -1);
        GD_CHECK(place_features(d));
    }
    startup_mark(d, d->mode == GD__TRAIN_ZERO_COPY && !d->plan.features_on_disk
                        ? "features registered"
                        : "features");
    startup_say(d, GD__STARTUP_CACHES,
                d->mode == GD__TRAIN_ALL_GPU ? "copying the feature table to GPU memory"
                                             : "filling the feature cache",
                -1);
    GD_CHECK(make_gatherer(d));
    startup_mark(d, d->mode == GD__TRAIN_ALL_GPU ? "features copied to the GPU"
                    : d->plan.features_on_disk   ? "disk tier"
                                                 : "gatherer and caches");
    gd_free(d->out_degrees); /* the caches are built */
    d->out_degrees = NULL;
    GD_CHECK(gd__datapath_locality_init(d));
fail:
    return st;
}

/* ---------------------------------------------------------------- stages */

/* Write the labels of minibatch b's seeds to dst; count the labelled ones (pass and set). */
static void stage_labels(const gd__datapath *d, gd__pass *p, int64_t b, gd__batch_set *s,
                         int64_t *dst) {
    int64_t lo, cnt;
    gd__pass_slice(p, b, &lo, &cnt);
    s->labelled = 0;
    if (!d->label_view.data) {
        for (int64_t i = 0; i < cnt; i++) dst[i] = -1;
        return;
    }
    for (int64_t i = 0; i < cnt; i++) {
        dst[i] = gd__int_at(d->label_view.data, d->label_view.dtype, p->ids[lo + i]);
        s->labelled += dst[i] >= 0;
    }
    p->labelled += s->labelled;
}

int64_t gd__datapath_global_labelled(const gd__datapath *d, const gd__pass *p, int64_t b) {
    int64_t lo, cnt, labelled = 0;
    gd__pass_global_slice(p, b, &lo, &cnt);
    if (!d->label_view.data) return 0;
    for (int64_t i = 0; i < cnt; i++) labelled += gd__int_at(d->label_view.data, d->label_view.dtype, p->ids[lo + i]) >= 0;
    return labelled;
}

/* A rank without a share of minibatch b: an empty set, which the later stages pass over. */
static void empty_set(gd__batch_set *s) {
    memset(s->blocks, 0, sizeof s->blocks);
    s->seeds = 0;
    s->num_in = 0;
    s->labelled = 0;
}

/* The set's blocks and input nodes: views of its sampled minibatch buffer. */
static gd_status set_views(const gd__datapath *d, gd__batch_set *s) {
    gd_status st = GD_OK;
    for (int l = 0; l < d->cfg.num_layers; l++)
        GD_CHECK(gd_minibatch_block(s->mb, l, &s->blocks[l]));
    GD_CHECK(gd_minibatch_input_nodes(s->mb, &s->in_ids, &s->num_in));
    s->node_ids = s->in_ids;
fail:
    return st;
}

/* cpu: sample minibatch b into the set's own minibatch buffer, on the host. */
static gd_status cpu_sample(void *user, gd__pass *p, int64_t b, int set, void *stream) {
    gd_status st = GD_OK;
    gd__datapath *d = user;
    gd__batch_set *s = &d->sets[set];
    int64_t lo, cnt;
    gd__pass_slice(p, b, &lo, &cnt);
    if (cnt == 0) {
        empty_set(s);
        return GD_OK;
    }
    GD_CHECK(gd_sample(d->sampler, p->ids + lo, cnt, 0, p->epoch, b, NULL, s->mb));
    GD_CHECK(set_views(d, s));
    s->seeds = cnt;
fail:
    (void)stream;
    return st;
}

/*
 * Gather the rows of ids into the set's x. A half table's rows are widened to float32: in the
 * "cpu" gather itself, or (GPU modes) gathered into the set's half staging and widened there by
 * a kernel on the same stream, so the event that ends the stage covers both.
 */
static gd_status gather_rows(gd__datapath *d, gd__batch_set *s, const int64_t *ids,
                             int ids_on_device, void *stream) {
    gd_status st = GD_OK;
    const int half = gd__widen_dtype(d->feature_dtype);
    if (d->disk_rows) {
        /* cpu mode from disk: the rows (half ones widened after) into the set. */
        GD_CHECK(gd__disk_rows_gather(d->disk_rows, ids, s->num_in, half ? s->x_half : s->x.data));
        if (half) gd__widen_cpu(s->x_half, d->feature_dtype, s->num_in * d->in_dim, s->x.data);
    } else if (!half) {
#ifdef GD_WITH_CUDA
        if (d->disk)
            GD_CHECK(gd__disk_tier_gather(d->disk, ids, s->num_in, s->x.data, stream));
        else
#endif
            GD_CHECK(gd_gather(d->gatherer, ids, s->num_in, ids_on_device, s->x.data, stream));
    } else if (!d->gpu) {
        GD_CHECK(gd__gather_widen(d->gatherer, ids, s->num_in, s->x.data));
    } else {
#ifdef GD_WITH_CUDA
        if (d->disk)
            GD_CHECK(gd__disk_tier_gather(d->disk, ids, s->num_in, s->x_half, stream));
        else
            GD_CHECK(gd_gather(d->gatherer, ids, s->num_in, ids_on_device, s->x_half, stream));
        GD_CHECK(gd__widen_cuda(gd_context_device(d->context), s->x_half, d->feature_dtype,
                                s->num_in * d->in_dim, s->x.data, stream));
#endif
    }
fail:
    return st;
}

/* cpu: gather the rows and the labels of the set's minibatch, on the host. */
static gd_status cpu_gather(void *user, gd__pass *p, int64_t b, int set, void *stream) {
    gd_status st = GD_OK;
    gd__datapath *d = user;
    gd__batch_set *s = &d->sets[set];
    if (s->seeds == 0) return GD_OK;
    GD_CHECK(gather_rows(d, s, s->in_ids, 0, NULL));
    stage_labels(d, p, b, s, s->labels);
fail:
    (void)stream;
    return st;
}

#ifdef GD_WITH_CUDA
/* CUDA sampler: queue the sampling of minibatch b on the sample stream. */
static gd_status cuda_sample(void *user, gd__pass *p, int64_t b, int set, void *stream) {
    gd_status st = GD_OK;
    gd__datapath *d = user;
    gd__batch_set *s = &d->sets[set];
    int64_t lo, cnt;
    gd__pass_slice(p, b, &lo, &cnt);
    if (cnt == 0) {
        empty_set(s);
        return GD_OK;
    }
    GD_CHECK(gd_sample(d->sampler, d->d_order + lo, cnt, 1, p->epoch, b, stream, s->mb));
    s->seeds = cnt;
    d->sampled[set] = b;
fail:
    return st;
}

/*
 * Window buffering (GD_DISK_WINDOW), before minibatch b's gather from the disk tier: b
 * withdraws its announcement, and the minibatches b + 1 .. b + window already sampled announce
 * their rows (the host waits for their sizes, as it does for b's), so that the GPU cache keeps
 * the rows they will read. All on the gather stream, in the order the gathers run.
 */
static gd_status window_step(gd__datapath *d, int64_t b, int set, void *stream) {
    gd_status st = GD_OK;
    gd__batch_set *s = &d->sets[set];
    if (d->announced[set] == b) {
        GD_CHECK(gd__disk_tier_withdraw(d->disk, s->in_ids, s->num_in, stream));
        d->announced[set] = -1;
    }
    for (int64_t m = b + 1; m <= b + d->window; m++) {
        const int ms = (int)(m % d->depth);
        gd__batch_set *sm = &d->sets[ms];
        if (d->sampled[ms] != m || d->announced[ms] == m || sm->seeds == 0) continue;
        GD_CHECK(set_views(d, sm));
        GD_CHECK(gd__disk_tier_announce(d->disk, sm->in_ids, sm->num_in, stream));
        d->announced[ms] = m;
    }
fail:
    return st;
}

/* A new pass: what the last one announced and never gathered is withdrawn. */
static gd_status window_reset(gd__datapath *d) {
    gd_status st = GD_OK;
    for (int i = 0; i < GD__PIPE_MAX_DEPTH; i++) {
        if (d->window > 0 && d->announced[i] >= 0)
            GD_CHECK(
                gd__disk_tier_withdraw(d->disk, d->sets[i].in_ids, d->sets[i].num_in, d->s_gather));
        d->announced[i] = d->sampled[i] = -1;
    }
fail:
    return st;
}

/*
 * --host-gather auto: before a gather of the trial, the way it takes (host_gather.h); once the
 * trial decides, the kept way for the rest of the run, in the log and the plan.
 */
static gd_status host_trial_step(gd__datapath *d) {
    gd_status st = GD_OK;
    gd__host_trial *t = d->host_trial;
    const double f = gd__host_trial_step(t, gd__now());
    if (f < 0) return GD_OK;
    if (f >= 1 || f <= 0)
        GD_CHECK(gd__gatherer_set_host_cpu(d->gatherer, f >= 1));
    else
        GD_CHECK(gd__gatherer_set_host_split(d->gatherer, f));
    if (gd__host_trial_done(t)) {
        char way[32];
        const size_t used = strlen(d->plan.text);
        if (f >= 1)
            snprintf(way, sizeof way, "cpu");
        else if (f <= 0)
            snprintf(way, sizeof way, "zero-copy");
        else
            snprintf(way, sizeof way, "split=%.2f", f);
        GD_INFO("zero-copy: auto keeps host rows by %s; median ms a minibatch: cpu %.3f, split "
                "0.95 %.3f, 0.9 %.3f, 0.8 %.3f, 0.6 %.3f, 0.4 %.3f, 0.2 %.3f, zero-copy %.3f",
                way, 1e3 * t->period[0], 1e3 * t->period[1], 1e3 * t->period[2], 1e3 * t->period[3],
                1e3 * t->period[4], 1e3 * t->period[5], 1e3 * t->period[6], 1e3 * t->period[7]);
        snprintf(d->plan.text + used, sizeof d->plan.text - used, "; auto kept %s", way);
    }
fail:
    return st;
}

/* CUDA sampler: minibatch b is sampled (the host has waited): queue its gather and labels. */
static gd_status cuda_gather(void *user, gd__pass *p, int64_t b, int set, void *stream) {
    gd_status st = GD_OK;
    gd__datapath *d = user;
    gd__batch_set *s = &d->sets[set];
    if (s->seeds == 0) return GD_OK;
    GD_CHECK(set_views(d, s));
    if (d->disk && d->window > 0) GD_CHECK(window_step(d, b, set, stream));
    if (d->host_trial && !gd__host_trial_done(d->host_trial) &&
        (p->train || d->cfg.host_trial_every_pass))
        GD_CHECK(host_trial_step(d));
    stage_labels(d, p, b, s, s->label_stage);
    GD_CHECK(gather_rows(d, s, s->in_ids, 1, stream));
    GD_CHECK(gd__cuda_memcpy_async(s->labels, s->label_stage, (size_t)s->seeds * sizeof(int64_t),
                                   stream));
fail:
    return st;
}

/* cpu-centric: the CPU sampler draws minibatch b into the one host minibatch buffer. */
static gd_status host_sample(void *user, gd__pass *p, int64_t b, int set, void *stream) {
    gd__datapath *d = user;
    int64_t lo, cnt;
    gd__pass_slice(p, b, &lo, &cnt);
    (void)stream;
    if (cnt == 0) {
        empty_set(&d->sets[set]);
        return GD_OK;
    }
    d->sets[set].seeds = cnt;
    return gd_sample(d->sampler, p->ids + lo, cnt, 0, p->epoch, b, NULL, d->host_mb);
}

/*
 * cpu-centric: gather minibatch b's rows on the CPU (the gatherer copies them into the set's
 * rows with one DMA), and copy the blocks and the labels, all on the gather stream.
 */
static gd_status host_gather(void *user, gd__pass *p, int64_t b, int set, void *stream) {
    gd_status st = GD_OK;
    gd__datapath *d = user;
    gd__batch_set *s = &d->sets[set];
    const int64_t *ids;
    if (s->seeds == 0) return GD_OK;
    /* Pack the blocks and the ids into the pinned staging; the device copy has the same layout. */
    size_t off = 0;
    for (int l = 0; l < d->cfg.num_layers; l++) {
        gd_block hb;
        GD_CHECK(gd_minibatch_block(d->host_mb, l, &hb));
        const size_t ip = (size_t)(hb.num_dst + 1) * sizeof(int32_t);
        const size_t ix = (size_t)hb.num_edges * sizeof(int32_t);
        GD_REQUIRE(off + ip + ix <= d->blk_bytes, GD_ERR_INTERNAL,
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
    GD_CHECK(gd_minibatch_input_nodes(d->host_mb, &ids, &s->num_in));
    const size_t id_bytes = (size_t)s->num_in * sizeof(int64_t);
    GD_REQUIRE(off + id_bytes <= d->blk_bytes, GD_ERR_INTERNAL,
               "trainer: the input ids of minibatch %lld do not fit their staging buffer",
               (long long)b);
    memcpy((char *)s->blk_stage + off, ids, id_bytes);
    s->node_ids = (const int64_t *)((char *)s->blk_dev + off);
    off += id_bytes;
    stage_labels(d, p, b, s, s->label_stage);
    GD_CHECK(gather_rows(d, s, ids, 0, stream));
    GD_CHECK(gd__cuda_memcpy_async(s->blk_dev, s->blk_stage, off, stream));
    GD_CHECK(gd__cuda_memcpy_async(s->labels, s->label_stage, (size_t)s->seeds * sizeof(int64_t),
                                   stream));
fail:
    return st;
}
#endif

static int data_stages(gd__datapath *d, gd__stage *out) {
    memset(out, 0, 2 * sizeof *out);
    out[0].name = "sample";
    out[1].name = "gather";
    out[0].user = out[1].user = d;
    out[0].run = cpu_sample;
    out[1].run = cpu_gather;
#ifdef GD_WITH_CUDA
    if (d->cuda_sampler) {
        out[0].run = cuda_sample;
        out[0].stream = d->s_sample;
        out[0].ahead = 1;
        out[1].run = cuda_gather;
        out[1].stream = d->s_gather;
        out[1].host_waits = 1; /* the sizes of the minibatch */
    } else if (d->mode == GD__TRAIN_CPU_CENTRIC) {
        out[0].run = host_sample;
        out[1].run = host_gather;
        out[1].stream = d->s_gather;
        out[1].host_clock = 1;
    }
#endif
    return 2;
}

void gd__datapath_pipe_config(gd__datapath *d, gd__pipe_config *pc) {
    memset(pc, 0, sizeof *pc);
    pc->device = gd_context_device(d->context);
    pc->depth = d->depth;
    pc->num_stages = data_stages(d, pc->stages);
}

gd_status gd__datapath_start_pass(gd__datapath *d, const int64_t *ids, int64_t n, int64_t epoch,
                                  int train, gd__pass *p) {
    gd_status st = GD_OK;
    GD_CHECK(gd__datapath_locality_pass(d, train));
#ifdef GD_WITH_CUDA
    if (d->disk) GD_CHECK(window_reset(d));
#endif
    /* The time between passes is not a minibatch's: auto's trial does not count it. */
    if (d->host_trial) gd__host_trial_pause(d->host_trial);
    memset(p, 0, sizeof *p);
    p->ids = ids;
    p->n = n;
    p->batch = d->batch;
    p->rank = d->cfg.rank;
    p->world = d->cfg.world > 1 ? d->cfg.world : 1;
    p->global = d->batch * p->world;
    p->epoch = epoch;
    p->train = train;
    p->batches = (n + p->global - 1) / p->global;
#ifdef GD_WITH_CUDA
    /* The seed order goes to the GPU once; the sampler reads its slices there. */
    if (d->cuda_sampler && n > 0)
        GD_CHECK(gd__cuda_memcpy_async(d->d_order, ids, (size_t)n * sizeof(int64_t), d->s_sample));
#endif
fail:
    return st;
}

gd_status gd__datapath_check_errors(gd__datapath *d) {
    gd_status st = GD_OK;
    if (d->cuda_sampler) GD_CHECK(gd_sampler_check_errors(d->sampler));
#ifdef GD_WITH_CUDA
    if (d->disk) return gd__disk_tier_check_errors(d->disk, d->s_gather);
#endif
    if (d->gatherer) GD_CHECK(gd_gatherer_check_errors(d->gatherer));
fail:
    return st;
}

gd_status gd__datapath_disk_read(gd__datapath *d, int64_t *rows, int64_t *bytes) {
    gd_status st = GD_OK;
    *rows = *bytes = 0;
    if (d->disk_rows) {
        const gd__disk_rows_stats s = gd__disk_rows_get_stats(d->disk_rows);
        *rows = s.rows - s.hits;
        *bytes = s.bytes_read;
    }
#ifdef GD_WITH_CUDA
    if (d->disk) {
        gd__disk_tier_stats s;
        GD_CHECK(gd__disk_tier_get_stats(d->disk, d->s_gather, &s));
        *rows = s.cache.lookups - s.cache.hits;
        *bytes = s.bytes_read;
    }
fail:
#endif
    return st;
}

void gd__datapath_host_copied(const gd__datapath *d, int64_t *rows, int64_t *bytes) {
    *rows = d->gatherer ? d->gatherer->host_rows_copied : 0;
    *bytes = *rows * (d->gatherer ? d->gatherer->tensor->row_bytes : 0);
}

int64_t gd__datapath_max_batches(const gd__datapath *d) {
    int64_t most = 1;
    for (int i = 0; i < 3; i++) most = gd__max64(most, (d->split_n[i] + d->batch - 1) / d->batch);
    return most;
}
