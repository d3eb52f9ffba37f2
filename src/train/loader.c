/*
 * The public minibatch loader, gd_loader (include/graphdirect.h): the data path (datapath.h) in
 * a pipeline of its two stages, sample and gather (pipeline.h), whose minibatches are handed to
 * the caller instead of a train stage: the caller is the last stage. Minibatch b uses set
 * b % depth, as in training. Every stream the caller reads a batch on is ordered after the
 * batch's gather (gd_batch_wait, gd_batch_export) and remembered, and at release the set is
 * fenced with one event on each of them (on the gather stream when there is none); sampling
 * into the set waits for every fence, in the same epoch or a later one. Sampling runs ahead into
 * every set the caller does not hold. The CPU mode samples and gathers each minibatch when it is
 * asked for.
 *
 * Held batches: when the set a minibatch needs is still held (a handle not released, or a tensor
 * taken from it alive), the held batch keeps the set's memory ("detached": it leaves the ring)
 * and a fresh set takes its place in the ring: the memory of a detached batch released since
 * (once the streams that read it are past their fences), else a new allocation, within the
 * loader's bound on the memory of detached sets (max_held_bytes). Only past that bound does
 * gd_loader_next fail, naming the batches that hold memory. Batch objects are kept until the
 * loader is freed, so a stale handle fails cleanly instead of reading another batch.
 *
 * Lifetimes: a batch is referenced by the caller (until gd_batch_release) and by each DLPack
 * tensor exported from it (until its deleter runs); the set is reused at zero. The loader is
 * referenced by its owner and by every live export, so memory behind an exported tensor stays
 * valid after gd_loader_destroy until the last deleter. Deleters may run on any thread (a
 * Python garbage collector): the counts are under the loader's mutex.
 */
#include "train/datapath.h"
#include "feature/host_gather.h"

#include "io/dataset.h"

#include "core/comm.h"
#include "core/context.h"
#include "core/cuda.h"
#include "core/hostmem.h"

#ifdef GD_HAVE_DLPACK
#include <dlpack/dlpack.h>
#endif

#include <pthread.h>
#include <stdio.h>
#include <string.h>

struct gd_batch {
    gd_loader_t *loader;
    int set;       /* the ring's set it was filled in */
    int64_t epoch; /* of the loader */
    int64_t index; /* in the epoch */
    int held;      /* handed out and not released */
    int refs;      /* held + live exports */
    /* GPU: the streams ordered after the batch (gd_batch_wait, exports), fenced at its release. */
    void *readers[GD__PIPE_MAX_FENCES];
    int num_readers;
    /*
     * Detached: the set's memory left the ring with the batch (own). Once refs is 0 the memory
     * is a spare, reused after fence[0..fenced) (recorded on its readers at the last release).
     */
    int detached;
    gd__batch_set own;
    void *fence[GD__PIPE_MAX_FENCES];
    int fenced;
    gd_batch_t *next; /* the loader's list of detached batches */
};

struct gd_loader {
    gd__datapath *d;
    gd__pipe *pipe;
    gd__nn_ctx nn; /* the backend whose memory holds the batches' rows and labels */
    pthread_mutex_t mu;
    int mu_made;
    /*
     * Serialises the calls that drive the pipeline (start_epoch, next, destroy): two threads
     * iterating one loader get the batches one after the other instead of corrupting its state.
     */
    pthread_mutex_t api;
    int api_made;
    int refs;   /* the owner (until destroy) + live exports */
    int closed; /* gd_loader_destroy was called */
    int split;  /* 0 train, 1 valid, 2 test */
    gd_loader_options o;
    gd__pass p; /* the epoch in progress */
    int started;
    int64_t next_b;
    int64_t epoch;
    gd_batch_t *cur[GD__PIPE_MAX_DEPTH]; /* the batch of each set of the ring */
    gd_batch_t *detached;                /* batches that took their set's memory out of the ring */
    int num_detached;
    int64_t set_bytes, held_max; /* one set's memory; the bound on the detached sets' */
};

/* The set a batch's fields live in: the ring's, or its own once detached. */
static const gd__batch_set *batch_set(const gd_batch_t *b) {
    return b->detached ? &b->own : &b->loader->d->sets[b->set];
}

/* Wait for a spare's fences: the streams that read it are past it (GPU). */
static gd_status spare_wait(gd_batch_t *b) {
    gd_status st = GD_OK;
#ifdef GD_WITH_CUDA
    for (int f = 0; f < b->fenced; f++) GD_CHECK(gd__cuda_event_sync(b->fence[f]));
#endif
    b->fenced = 0;
#ifdef GD_WITH_CUDA
fail:
#endif
    return st;
}

static void batch_free(gd_loader_t *l, gd_batch_t *b) {
    if (!b) return;
    if (b->detached) {
        if (spare_wait(b) != GD_OK) gd_clear_error();
        gd__datapath_set_free(l->d, &b->own);
    }
#ifdef GD_WITH_CUDA
    for (int f = 0; f < GD__PIPE_MAX_FENCES; f++) gd__cuda_event_destroy(b->fence[f]);
#endif
    gd_free(b);
}

static void loader_free(gd_loader_t *l) {
    gd__pipe_destroy(l->pipe);
    while (l->detached) {
        gd_batch_t *b = l->detached;
        l->detached = b->next;
        batch_free(l, b);
    }
    for (int i = 0; i < GD__PIPE_MAX_DEPTH; i++) batch_free(l, l->cur[i]);
    gd__datapath_destroy(l->d);
    if (l->nn.be) gd__datapath_nn_release(&l->nn);
    if (l->mu_made) pthread_mutex_destroy(&l->mu);
    if (l->api_made) pthread_mutex_destroy(&l->api);
    gd_free(l);
}

/* Drop one reference to the loader (under no lock); the last one frees it. */
static void loader_unref(gd_loader_t *l) {
    pthread_mutex_lock(&l->mu);
    const int last = --l->refs == 0;
    pthread_mutex_unlock(&l->mu);
    if (last) loader_free(l);
}

/*
 * The set of b is free again: fence it on every stream that read the batch (on the gather
 * stream when none did). Called with the mutex held, when the batch's last reference goes.
 */
static void set_free(gd_loader_t *l, gd_batch_t *b) {
    if (b->detached) {
#ifdef GD_WITH_CUDA
        /* A spare: fenced like a ring set, on its own events (made when it was detached). */
        b->fenced = 0;
        if (l->d->gpu) {
            void *last = l->d->s_gather;
            const int n = b->num_readers;
            for (int i = 0; i < (n > 0 ? n : 1); i++) {
                if (gd__cuda_event_record(b->fence[i], n > 0 ? b->readers[i] : last) != GD_OK) {
                    gd_clear_error(); /* the stream is gone: nothing of it is left to wait for */
                    continue;
                }
                b->fenced++;
            }
        }
#endif
    } else if (l->d->gpu && !l->closed) {
        gd__pipe_fence(l->pipe, b->set, b->readers, b->num_readers);
    }
    b->num_readers = 0;
}

/*
 * Order stream after batch b's work on the GPU and remember it as a reader of b, so that b's set
 * is not rewritten before what stream queued up to b's release. Called with the mutex held.
 */
static gd_status add_reader(gd_batch_t *b, void *stream) {
    gd_status st = GD_OK;
#ifdef GD_WITH_CUDA
    const gd_loader_t *l = b->loader;
    if (!l->d->gpu) return GD_OK;
    int known = 0;
    for (int i = 0; i < b->num_readers; i++) known |= b->readers[i] == stream;
    GD_REQUIRE(known || b->num_readers < GD__PIPE_MAX_FENCES, GD_ERR_UNSUPPORTED,
               "batch %lld is read on more than %d streams; read it on at most %d (order the "
               "others after one of them with an event)",
               (long long)b->index, GD__PIPE_MAX_FENCES, GD__PIPE_MAX_FENCES);
    /* The gather stage's end: the last data stage (the sample stage's results come before). */
    GD_CHECK(gd__cuda_stream_wait(stream, gd__pipe_stage_done(l->pipe, b->set, 1)));
    if (!known) b->readers[b->num_readers++] = stream;
fail:
#else
    (void)b;
    (void)stream;
#endif
    return st;
}

/* A set is free when no batch holds it (no handle, no export). */
static int set_busy(gd_loader_t *l, int set) {
    pthread_mutex_lock(&l->mu);
    const int busy = l->cur[set]->refs > 0;
    pthread_mutex_unlock(&l->mu);
    return busy;
}

/* Append batch x to the list of holders in buf, if it holds memory. */
static void add_holder(const gd_batch_t *x, char *buf, size_t cap, size_t *at) {
    if (x->refs == 0 || *at + 48 >= cap) return;
    *at += (size_t)snprintf(buf + *at, cap - *at, "%s%lld of epoch %lld%s", *at ? ", " : "",
                            (long long)x->index, (long long)x->epoch,
                            x->held ? "" : " by its tensors");
}

/* The batches holding memory, "3 of epoch 0, 4 of epoch 0 by its tensors" (mutex held). */
static void list_holders(const gd_loader_t *l, char *buf, size_t cap) {
    size_t at = 0;
    buf[0] = 0;
    for (const gd_batch_t *x = l->detached; x; x = x->next) add_holder(x, buf, cap, &at);
    for (int i = 0; i < l->d->depth; i++) add_holder(l->cur[i], buf, cap, &at);
}

/* b joins the list of detached batches (with the mutex held). */
static void push_detached(gd_loader_t *l, gd_batch_t *b) {
    b->next = l->detached;
    l->detached = b;
    l->num_detached++;
}

/*
 * b goes (back) to the spares with its memory: mem, unless it still holds its own (a spare whose
 * fences could not be waited for). With the mutex held.
 */
static void return_spare(gd_loader_t *l, gd_batch_t *b, const gd__batch_set *mem) {
    if (!b->detached) {
        b->own = *mem;
        b->detached = 1;
    }
    push_detached(l, b);
}

/*
 * Set k of the ring is held by its batch: that batch keeps the memory (detached) and the ring
 * gets a spare's memory, or a new set's within the bound. Called with the api lock held.
 */
static gd_status detach(gd_loader_t *l, int k, int64_t b) {
    gd_status st = GD_OK;
    gd__datapath *d = l->d;
    gd_batch_t *fresh = NULL, **pp;
    gd__batch_set mem;
    int made = 0;
    memset(&mem, 0, sizeof mem);
    pthread_mutex_lock(&l->mu);
    for (pp = &l->detached; *pp && (*pp)->refs > 0; pp = &(*pp)->next) {
    }
    if (*pp) {
        fresh = *pp;
        *pp = fresh->next;
        l->num_detached--;
    }
    const int64_t want = (int64_t)(l->num_detached + 1) * l->set_bytes;
    char holders[512];
    if (!fresh && want > l->held_max) list_holders(l, holders, sizeof holders);
    pthread_mutex_unlock(&l->mu);
    if (fresh) {
        /* A spare: its memory once the streams that read it are past it. */
        GD_CHECK(spare_wait(fresh));
        mem = fresh->own;
        fresh->detached = 0;
        memset(&fresh->own, 0, sizeof fresh->own);
    } else {
        GD_REQUIRE(want <= l->held_max, GD_ERR_INVALID_ARG,
                   "gd_loader_next: minibatch %lld needs buffer set %d of %d, which is still held "
                   "by batch %lld, and the batches holding memory (%s) keep %d more set(s): "
                   "another %.1f MiB would pass the loader's bound on held batches (%.1f MiB, "
                   "max_held_bytes); release one first (in PyTorch keep loss.item() or "
                   "t.detach().clone(), not a batch's tensors), or raise max_held_bytes",
                   (long long)b, k, d->depth, (long long)l->cur[k]->index, holders,
                   l->num_detached, l->set_bytes / 1048576.0, l->held_max / 1048576.0);
        GD_ALLOC(fresh, sizeof *fresh, "a loader batch");
        memset(fresh, 0, sizeof *fresh);
        fresh->loader = l;
        GD_CHECK(gd__datapath_set_alloc(d, &mem));
        made = 1;
    }
#ifdef GD_WITH_CUDA
    /* The held batch's fences, for when its memory becomes a spare. */
    gd_batch_t *old = l->cur[k];
    for (int f = 0; d->gpu && f < GD__PIPE_MAX_FENCES; f++)
        if (!old->fence[f]) GD_CHECK(gd__cuda_event_create(gd_context_device(d->context), 0,
                                                           &old->fence[f]));
#endif
    pthread_mutex_lock(&l->mu);
    gd_batch_t *held = l->cur[k];
    if (held->refs == 0) {
        /*
         * Released meanwhile, by a deleter on another thread: set_free fenced the ring's set,
         * which is free after all. What was taken for it becomes a spare (a new set, or a spare
         * whose fences were waited for: nothing to fence).
         */
        return_spare(l, fresh, &mem);
        pthread_mutex_unlock(&l->mu);
        return GD_OK;
    }
    held->own = d->sets[k];
    held->detached = 1;
    push_detached(l, held);
    d->sets[k] = mem;
    fresh->set = k;
    fresh->refs = fresh->held = fresh->num_readers = fresh->fenced = 0;
    fresh->next = NULL;
    l->cur[k] = fresh;
    pthread_mutex_unlock(&l->mu);
    GD_DEBUG("loader: minibatch %lld: batch %lld is still held; it keeps its memory and set %d "
             "takes %s (%d set(s) held outside the ring)",
             (long long)b, (long long)held->index, k, made ? "a new one" : "a released one's",
             l->num_detached);
    return GD_OK;
fail:
    if (made) gd__datapath_set_free(d, &mem);
    if (fresh) {
        pthread_mutex_lock(&l->mu);
        if (made)
            gd_free(fresh);
        else
            return_spare(l, fresh, &mem);
        pthread_mutex_unlock(&l->mu);
    }
    return st;
}

static int may_reuse(void *user, int set) {
    return !set_busy(user, set);
}

/* The pipeline of the data path's two stages; the caller fences the sets it read. */
static gd_status make_pipe(gd_loader_t *l) {
    gd__pipe_config pc;
    gd__datapath_pipe_config(l->d, &pc);
    pc.may_reuse = may_reuse;
    pc.may_reuse_user = l;
    return gd__pipe_create(&pc, &l->pipe);
}

/* The data path's configuration from the loader's options, checked. */
static gd_status data_config(const gd_loader_options *o, gd__data_config *c) {
    gd_status st = GD_OK;
    memset(c, 0, sizeof *c);
    c->mode = GD__TRAIN_AUTO;
    GD_CHECK(gd__threads_check(o->threads, "loader"));
    if (o->mode) GD_CHECK(gd__train_mode_parse(o->mode, &c->mode));
    GD_REQUIRE(c->mode != GD__TRAIN_CPU_CENTRIC, GD_ERR_UNSUPPORTED,
               "loader: mode cpu-centric is a training baseline; use cpu, all-gpu, zero-copy or "
               "auto");
    GD_REQUIRE(o->num_layers >= 1 && o->num_layers <= GD_SAMPLER_MAX_LAYERS, GD_ERR_INVALID_ARG,
               "loader: %d layers; use 1 to %d", o->num_layers, GD_SAMPLER_MAX_LAYERS);
    for (int h = 0; h < o->num_layers; h++)
        GD_REQUIRE(o->fanouts[h] >= -1, GD_ERR_INVALID_ARG,
                   "loader: fanout %d of hop %d; use -1 (all neighbours) or a count >= 0",
                   o->fanouts[h], h);
    GD_REQUIRE(o->split >= GD_ARRAY_TRAIN_IDX && o->split <= GD_ARRAY_TEST_IDX,
               GD_ERR_INVALID_ARG, "loader: split %d is not train_idx, valid_idx or test_idx",
               (int)o->split);
    GD_REQUIRE(o->batch_size >= 1, GD_ERR_INVALID_ARG, "loader: batch size %lld; use >= 1",
               (long long)o->batch_size);
    GD_REQUIRE(o->depth >= 2 && o->depth <= GD__PIPE_MAX_DEPTH, GD_ERR_INVALID_ARG,
               "loader: a ring of %d buffer sets; use 2 to %d", o->depth, GD__PIPE_MAX_DEPTH);
    GD_REQUIRE(o->gpu_cache_bytes >= -1 && o->graph_cache_bytes >= -1 && o->gpu_mem_budget >= 0,
               GD_ERR_INVALID_ARG, "loader: a negative cache size or budget");
    GD_REQUIRE(o->world_size >= 0 && (o->world_size == 0 || (o->rank >= 0 && o->rank < o->world_size)),
               GD_ERR_INVALID_ARG,
               "loader: rank %d of world_size %d; use a rank in [0, world_size) (world_size 0: "
               "the context's)",
               o->rank, o->world_size);
    GD_REQUIRE(o->host_mem_budget >= 0, GD_ERR_INVALID_ARG, "loader: a negative host budget");
    GD_REQUIRE(o->max_held_bytes >= -1, GD_ERR_INVALID_ARG,
               "loader: max_held_bytes %lld; use -1 (no memory for held batches beyond the ring), "
               "0 (the default: a quarter of the free memory) or a size in bytes",
               (long long)o->max_held_bytes);
    GD_REQUIRE(!o->seeds || o->num_seeds > 0, GD_ERR_INVALID_ARG,
               "loader: seeds given with num_seeds %lld; give at least one",
               (long long)o->num_seeds);
    GD__DATA_OPTIONS_COPY(c, o);
    memcpy(c->fanouts, o->fanouts, sizeof c->fanouts);
    c->host_mem_budget = o->host_mem_budget;
    c->rank = o->rank;
    c->world = o->world_size;
    c->sets_on_cpu = 1;
    c->labels_optional = 1;
    c->host_trial_every_pass = 1;
    c->seeds = o->seeds;
    c->num_seeds = o->num_seeds;
    c->seeds_split = (int)(o->split - GD_ARRAY_TRAIN_IDX);
    {
        gd__host_gather h;
        GD_CHECK(gd__host_gather_parse(o->host_gather, &h, &c->host_split));
        c->host_gather = (int)h;
    }
fail:
    return st;
}

/*
 * The bound on the memory of held batches' sets outside the ring: max_held_bytes, or by
 * default a quarter of the memory free now (the GPU's in the GPU modes, the host's available
 * memory in cpu mode); -1: none (a held set fails the next minibatch that needs it).
 */
static gd_status held_bound(gd_loader_t *l) {
    gd_status st = GD_OK;
    l->set_bytes = gd__datapath_set_bytes(l->d);
    l->held_max = l->o.max_held_bytes;
    if (l->held_max < 0) l->held_max = 0;
    if (l->o.max_held_bytes == 0) {
        int64_t free_now = gd__host_mem_available();
#ifdef GD_WITH_CUDA
        int64_t total;
        if (l->d->gpu)
            GD_CHECK(gd__cuda_mem_info(gd_context_device(l->d->context), &free_now, &total));
#endif
        l->held_max = free_now / 4;
    }
#ifdef GD_WITH_CUDA
fail:
#endif
    return st;
}

gd_status gd_loader_create(const gd_dataset_t *ds, const gd_loader_options *options,
                           gd_loader_t **out) {
    gd_status st = GD_OK;
    gd_loader_t *l = NULL;
    gd_context_t *ctx = NULL;
    gd_loader_options o = GD_LOADER_OPTIONS_INIT;
    gd__data_config c;
    GD_REQUIRE(out, GD_ERR_INVALID_ARG, "gd_loader_create: out is NULL");
    *out = NULL;
    GD_REQUIRE(ds, GD_ERR_INVALID_ARG, "gd_loader_create: dataset is NULL");
    if (options)
        GD_CHECK(gd__options_in(&o, sizeof o, options, 0, "gd_loader_create: options",
                                "GD_LOADER_OPTIONS_INIT"));
    GD_CHECK(data_config(&o, &c));
    GD_REQUIRE(gd_dataset_num_node_types(ds) == 0, GD_ERR_UNSUPPORTED,
               "loader: dataset '%s' is heterogeneous; the loader takes homogeneous datasets in "
               "this version (train it with the trainer's model rsage; gd_hetero_sampler_create "
               "samples it)",
               gd_dataset_name(ds));
    GD_REQUIRE(gd_dataset_feature_dim(ds) > 0, GD_ERR_INVALID_ARG,
               "loader: dataset '%s' has no node features", gd_dataset_name(ds));
    GD_CHECK(gd__context_acquire(o.context, &o.device, &ctx));
    if (c.world == 0) {
        /* The context's place among the ranks (0 of 1 without a communicator). */
        c.rank = gd__comm_rank(gd__context_comm(ctx));
        c.world = gd__comm_world(gd__context_comm(ctx));
    }
    GD_ALLOC(l, sizeof *l, "the loader");
    memset(l, 0, sizeof *l);
    GD_REQUIRE(pthread_mutex_init(&l->mu, NULL) == 0, GD_ERR_INTERNAL,
               "loader: cannot create a mutex");
    l->mu_made = 1;
    GD_REQUIRE(pthread_mutex_init(&l->api, NULL) == 0, GD_ERR_INTERNAL,
               "loader: cannot create a mutex");
    l->api_made = 1;
    l->refs = 1;
    l->o = o;
    l->split = (int)(o.split - GD_ARRAY_TRAIN_IDX);
    GD_CHECK(gd__datapath_create(ds, &c, ctx, &l->nn, &l->d));
    GD_REQUIRE(l->d->mode != GD__TRAIN_CPU_CENTRIC, GD_ERR_UNSUPPORTED,
               "loader: %s; a loader needs cpu, all-gpu or zero-copy (raise `ulimit -l` for "
               "zero-copy, or ask for mode cpu)",
               l->d->plan.text);
    GD_REQUIRE(l->d->split_n[l->split] > 0, GD_ERR_INVALID_ARG,
               "loader: dataset '%s' has no %s nodes", gd_dataset_name(ds), gd_array_name(o.split));
    GD_CHECK(gd__datapath_place_features(l->d));
    for (int i = 0; i < l->d->depth; i++) {
        GD_ALLOC(l->cur[i], sizeof *l->cur[i], "a loader batch");
        memset(l->cur[i], 0, sizeof *l->cur[i]);
        l->cur[i]->loader = l;
        l->cur[i]->set = i;
    }
    GD_CHECK(held_bound(l));
    /* Last: a pipeline's teardown clears the error of a failure after it. */
    GD_CHECK(make_pipe(l));
    GD_INFO("loader: %s; %d layers, batch %lld, %lld input nodes and %lld edges at most per "
            "minibatch",
            l->d->plan.text, o.num_layers, (long long)l->d->batch,
            (long long)l->d->sinfo.max_input_nodes, (long long)l->d->sinfo.max_edges);
    gd__context_unref(ctx);
    /* The loader does not draw what the caller does not ask for: no lookahead past an epoch. */
    *out = l;
    return GD_OK;
fail:
    gd__context_unref(ctx);
    if (l) loader_free(l);
    return st;
}

/* Wait for everything queued (GPU), so that no set is in use by the loader's own streams. */
static void loader_drain(gd_loader_t *l) {
    gd__error_kept kept;
    gd__error_keep(&kept);
    if (l->started) (void)gd__pipe_finish(l->pipe, GD_OK);
    l->started = 0;
    gd__error_put_back(&kept);
}

/* The caller's handle on b goes (mutex held); its set is free once nothing else holds it. */
static void unhold(gd_loader_t *l, gd_batch_t *b) {
    if (!b || !b->held) return;
    b->held = 0;
    if (--b->refs == 0) set_free(l, b);
}

void gd_loader_destroy(gd_loader_t *l) {
    if (!l) return;
    pthread_mutex_lock(&l->api);
    loader_drain(l);
    pthread_mutex_unlock(&l->api);
    pthread_mutex_lock(&l->mu);
    l->closed = 1;
    for (gd_batch_t *b = l->detached; b; b = b->next) unhold(l, b);
    for (int i = 0; i < l->d->depth; i++) unhold(l, l->cur[i]);
    pthread_mutex_unlock(&l->mu);
    loader_unref(l);
}

/* Minibatches of an epoch: the short last one is dropped with drop_last. */
static int64_t epoch_batches(const gd_loader_t *l) {
    const int64_t n = l->d->split_n[l->split];
    const int64_t bs = l->d->batch * (l->d->cfg.world > 1 ? l->d->cfg.world : 1);
    return l->o.drop_last ? n / bs : (n + bs - 1) / bs;
}

gd_status gd_loader_get_info(const gd_loader_t *l, gd_loader_info *info) {
    gd_status st = GD_OK;
    gd_loader_info i;
    GD_REQUIRE(l && info, GD_ERR_INVALID_ARG, "gd_loader_get_info: NULL argument");
    memset(&i, 0, sizeof i);
    i.size = sizeof i;
    i.mode = gd__train_mode_name(l->d->mode);
    i.on_device = l->d->gpu;
    i.device = l->d->gpu ? l->o.device : 0;
    i.num_seeds = l->d->split_n[l->split];
    i.batches_per_epoch = epoch_batches(l);
    i.feature_dim = l->d->in_dim;
    i.max_input_nodes = l->d->sinfo.max_input_nodes;
    snprintf(i.plan, sizeof i.plan, "%s", l->d->plan.text);
    i.set_bytes = l->set_bytes;
    i.max_held_bytes = l->held_max;
    pthread_mutex_lock((pthread_mutex_t *)&l->mu);
    i.sets_outside = l->num_detached;
    pthread_mutex_unlock((pthread_mutex_t *)&l->mu);
    GD_CHECK(gd__info_out(info, &i, sizeof i, "gd_loader_get_info: info", "GD_LOADER_INFO_INIT"));
fail:
    return st;
}

static gd_status start_epoch(gd_loader_t *l, int64_t epoch) {
    gd_status st = GD_OK;
    GD_REQUIRE(epoch >= 0 && epoch < GD__TRAIN_EVAL_EPOCH, GD_ERR_INVALID_ARG,
               "gd_loader_start_epoch: epoch %lld is out of range; use 0 to %lld",
               (long long)epoch, (long long)GD__TRAIN_EVAL_EPOCH - 1);
    gd__datapath *d = l->d;
    /* The dataset is mapped: a file changed in place under it is caught here, with its name. */
    GD_CHECK(gd__dataset_check_unchanged(d->ds));
    /* Batches of the last epoch still held keep their sets (detached when the ring needs them). */
    loader_drain(l);
    const int64_t n = d->split_n[l->split];
    int64_t nb;
    if (l->o.shuffle) {
        GD_CHECK(gd_seed_batches(d->split[l->split], n, d->batch, l->o.seed, epoch,
                                 l->o.drop_last, d->order, &nb));
    } else {
        memcpy(d->order, d->split[l->split], (size_t)n * sizeof(int64_t));
    }
    GD_CHECK(gd__datapath_start_pass(d, d->order, n, epoch, 0, &l->p));
    l->p.batches = epoch_batches(l);
    l->next_b = 0;
    l->epoch = epoch;
    gd__pipe_start(l->pipe, &l->p);
    l->started = 1;
fail:
    return st;
}

static gd_status next_batch(gd_loader_t *l, gd_batch_t **out) {
    gd_status st = GD_OK;
    GD_REQUIRE(l->started, GD_ERR_INVALID_ARG,
               "gd_loader_next: no epoch started (gd_loader_start_epoch)");
    const int64_t b = l->next_b;
    if (b >= l->p.batches) return GD_OK;
    const int k = (int)(b % l->d->depth);
    if (set_busy(l, k)) GD_CHECK(detach(l, k, b));
    GD_CHECK(gd__pipe_issue(l->pipe, b));
    pthread_mutex_lock(&l->mu);
    gd_batch_t *bt = l->cur[k];
    bt->epoch = l->epoch;
    bt->index = b;
    bt->held = 1;
    bt->refs = 1;
    bt->num_readers = 0;
    pthread_mutex_unlock(&l->mu);
    l->next_b = b + 1;
    *out = bt;
fail:
    return st;
}

gd_status gd_loader_start_epoch(gd_loader_t *l, int64_t epoch) {
    gd_status st = GD_OK;
    GD_REQUIRE(l && !l->closed, GD_ERR_INVALID_ARG, "gd_loader_start_epoch: no loader");
    pthread_mutex_lock(&l->api);
    st = start_epoch(l, epoch);
    pthread_mutex_unlock(&l->api);
fail:
    return st;
}

gd_status gd_loader_next(gd_loader_t *l, gd_batch_t **out) {
    gd_status st = GD_OK;
    GD_REQUIRE(out, GD_ERR_INVALID_ARG, "gd_loader_next: out is NULL");
    *out = NULL;
    GD_REQUIRE(l && !l->closed, GD_ERR_INVALID_ARG, "gd_loader_next: the loader is closed");
    pthread_mutex_lock(&l->api);
    st = next_batch(l, out);
    pthread_mutex_unlock(&l->api);
fail:
    return st;
}

void gd_batch_release(gd_batch_t *b) {
    if (!b) return;
    gd_loader_t *l = b->loader;
    pthread_mutex_lock(&l->mu);
    unhold(l, b);
    pthread_mutex_unlock(&l->mu);
}

static gd_status batch_check(const gd_batch_t *b, const char *what) {
    if (!b) return gd__error(GD_ERR_INVALID_ARG, "%s: batch is NULL", what);
    if (!b->held || b->loader->closed)
        return gd__error(GD_ERR_INVALID_ARG,
                         "%s: the batch was released or its loader destroyed; use a batch only "
                         "between gd_loader_next and gd_batch_release",
                         what);
    return GD_OK;
}

gd_status gd_batch_wait(gd_batch_t *b, void *stream) {
    gd_status st = GD_OK;
    GD_CHECK(batch_check(b, "gd_batch_wait"));
    gd_loader_t *l = b->loader;
    pthread_mutex_lock(&l->mu);
    st = add_reader(b, stream);
    pthread_mutex_unlock(&l->mu);
fail:
    return st;
}

gd_status gd_batch_get_info(const gd_batch_t *b, gd_batch_info *info) {
    gd_status st = GD_OK;
    gd_batch_info i;
    GD_CHECK(batch_check(b, "gd_batch_get_info"));
    GD_REQUIRE(info, GD_ERR_INVALID_ARG, "gd_batch_get_info: info is NULL");
    const gd__datapath *d = b->loader->d;
    const gd__batch_set *s = batch_set(b);
    memset(&i, 0, sizeof i);
    i.size = sizeof i;
    i.index = b->index;
    i.num_seeds = s->seeds;
    i.num_input = s->num_in;
    i.num_layers = d->cfg.num_layers;
    i.on_device = d->gpu;
    i.device = d->gpu ? b->loader->o.device : 0;
    GD_CHECK(gd__info_out(info, &i, sizeof i, "gd_batch_get_info: info", "GD_BATCH_INFO_INIT"));
fail:
    return st;
}

gd_status gd_batch_block(const gd_batch_t *b, int layer, gd_block *out) {
    gd_status st = GD_OK;
    GD_CHECK(batch_check(b, "gd_batch_block"));
    const gd__datapath *d = b->loader->d;
    GD_REQUIRE(out && layer >= 0 && layer < d->cfg.num_layers, GD_ERR_INVALID_ARG,
               "gd_batch_block: layer %d of %d", layer, d->cfg.num_layers);
    *out = batch_set(b)->blocks[layer];
fail:
    return st;
}

gd_status gd_batch_array(const gd_batch_t *b, gd_batch_field field, int layer, gd_array_view *out) {
    gd_status st = GD_OK;
    GD_CHECK(batch_check(b, "gd_batch_array"));
    GD_REQUIRE(out, GD_ERR_INVALID_ARG, "gd_batch_array: out is NULL");
    const gd__datapath *d = b->loader->d;
    const gd__batch_set *s = batch_set(b);
    memset(out, 0, sizeof *out);
    out->ndim = 1;
    switch (field) {
    case GD_BATCH_INPUT_NODES:
        out->dtype = GD_DTYPE_INT64;
        out->shape[0] = s->num_in;
        out->data = (void *)s->in_ids;
        break;
    case GD_BATCH_FEATURES:
        out->dtype = GD_DTYPE_FLOAT32;
        out->ndim = 2;
        out->shape[0] = s->num_in;
        out->shape[1] = d->in_dim;
        out->data = s->x.data;
        break;
    case GD_BATCH_LABELS:
        GD_REQUIRE(d->label_view.data, GD_ERR_NOT_FOUND,
                   "gd_batch_array: dataset '%s' has no labels", gd_dataset_name(d->ds));
        out->dtype = GD_DTYPE_INT64;
        out->shape[0] = s->seeds;
        out->data = s->labels;
        break;
    case GD_BATCH_INDPTR:
    case GD_BATCH_INDICES: {
        GD_REQUIRE(layer >= 0 && layer < d->cfg.num_layers, GD_ERR_INVALID_ARG,
                   "gd_batch_array: layer %d of %d", layer, d->cfg.num_layers);
        const gd_block *blk = &s->blocks[layer];
        out->dtype = GD_DTYPE_INT32;
        out->shape[0] = field == GD_BATCH_INDPTR ? blk->num_dst + 1 : blk->num_edges;
        out->data = (void *)(field == GD_BATCH_INDPTR ? blk->indptr : blk->indices);
        break;
    }
    default:
        GD_REQUIRE(0, GD_ERR_INVALID_ARG, "gd_batch_array: field %d is not a batch field",
                   (int)field);
    }
fail:
    return st;
}

#ifdef GD_HAVE_DLPACK
/* One exported tensor: the DLPack struct, its shape, and the batch it keeps alive. */
typedef struct {
    DLManagedTensor m;
    int64_t shape[2];
    gd_batch_t *batch;
} export_ctx;

static void export_deleter(DLManagedTensor *m) {
    export_ctx *x = m->manager_ctx;
    gd_batch_t *b = x->batch;
    gd_loader_t *l = b->loader;
    pthread_mutex_lock(&l->mu);
    if (--b->refs == 0) set_free(l, b);
    pthread_mutex_unlock(&l->mu);
    gd_free(x);
    loader_unref(l);
}
#endif

gd_status gd_batch_export(gd_batch_t *b, gd_batch_field field, int layer, void *stream,
                          struct DLManagedTensor **out) {
    gd_status st = GD_OK;
#ifdef GD_HAVE_DLPACK
    gd_array_view v;
    export_ctx *x = NULL;
#endif
    GD_REQUIRE(out, GD_ERR_INVALID_ARG, "gd_batch_export: out is NULL");
    *out = NULL;
#ifdef GD_HAVE_DLPACK
    GD_CHECK(gd_batch_array(b, field, layer, &v));
    gd_loader_t *l = b->loader;
    const int gpu = l->d->gpu;
    GD_ALLOC(x, sizeof *x, "a DLPack tensor");
    memset(x, 0, sizeof *x);
    x->batch = b;
    x->shape[0] = v.shape[0];
    x->shape[1] = v.shape[1];
    DLTensor *d = &x->m.dl_tensor;
    static char empty_marker;
    d->data = v.data ? v.data : (void *)&empty_marker;
    d->device.device_type = gpu ? kDLCUDA : kDLCPU;
    d->device.device_id = gpu ? l->o.device : 0;
    d->ndim = v.ndim;
    d->dtype.code = v.dtype == GD_DTYPE_FLOAT32 ? kDLFloat : kDLInt;
    d->dtype.bits = (uint8_t)(8 * gd_dtype_size(v.dtype));
    d->dtype.lanes = 1;
    d->shape = x->shape;
    d->strides = NULL;
    d->byte_offset = 0;
    x->m.manager_ctx = x;
    x->m.deleter = export_deleter;
    /* The consumer's stream waits for the batch on the GPU, and fences its set. */
    pthread_mutex_lock(&l->mu);
    st = add_reader(b, stream);
    if (st == GD_OK) {
        b->refs++;
        l->refs++;
    }
    pthread_mutex_unlock(&l->mu);
    GD_CHECK(st);
    *out = (struct DLManagedTensor *)&x->m;
    return GD_OK;
fail:
    gd_free(x);
    return st;
#else
    (void)b;
    (void)field;
    (void)layer;
    (void)stream;
    GD_REQUIRE(0, GD_ERR_UNSUPPORTED,
               "gd_batch_export: graphdirect was built without the DLPack header; install "
               "libdlpack-dev (scripts/install-deps.sh) and rebuild, or read the fields with "
               "gd_batch_array");
fail:
    return st;
#endif
}

gd_status gd_batch_export_all(gd_batch_t *b, void *stream, struct DLManagedTensor **out, int n) {
    gd_status st = GD_OK;
    int done = 0;
    GD_CHECK(batch_check(b, "gd_batch_export_all"));
    const int L = b->loader->d->cfg.num_layers;
    GD_REQUIRE(out && n >= 3 + 2 * L, GD_ERR_INVALID_ARG,
               "gd_batch_export_all: room for %d tensors, the batch has %d (3 + 2 x %d layers)", n,
               3 + 2 * L, L);
    for (int i = 0; i < 3 + 2 * L; i++) {
        const gd_batch_field f =
            i < 3 ? (gd_batch_field)i : ((i - 3) % 2 ? GD_BATCH_INDICES : GD_BATCH_INDPTR);
        out[i] = NULL;
        if (f == GD_BATCH_LABELS && !b->loader->d->label_view.data) continue;
        GD_CHECK(gd_batch_export(b, f, i < 3 ? 0 : (i - 3) / 2, stream, &out[i]));
        done = i + 1;
    }
    return GD_OK;
fail:
#ifdef GD_HAVE_DLPACK
    for (int i = 0; out && i < done; i++)
        if (out[i]) out[i]->deleter(out[i]);
#else
    (void)done;
#endif
    return st;
}
