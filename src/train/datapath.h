/*
 * The data path of docs/design.md without a model: the placement of the graph and the features
 * for a mode (from the plan, plan.h), the sampler, the gatherer, the splits and the labels, a
 * ring of minibatch buffer sets, and the stages that fill them (sample, gather) for the
 * pipeline (pipeline.h). The trainer adds its train stage to these stages; the loader hands the
 * filled sets to its caller. Neither knows how the other uses the data path.
 *
 * Stages per mode:
 *   cpu          sample (host), gather (host): the CPU sampler and gather, into host buffers
 *   all-gpu,     sample (sample stream, runs ahead), gather (gather stream, after the host has
 *   zero-copy    the minibatch's sizes): the CUDA sampler, the GPU gather, labels copied
 *   cpu-centric  sample (host: the CPU sampler), gather (gather stream, host clock: the CPU
 *                gather into pinned memory, one DMA, and the blocks and labels copied)
 */
#ifndef GD_TRAIN_DATAPATH_H
#define GD_TRAIN_DATAPATH_H

#include "feature/host_gather.h"
#include "nn/internal.h"
#include "train/internal.h"
#include "train/pipeline.h"
#include "train/plan.h"

#include <pthread.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One buffer set of the ring: a minibatch, as the stages leave it. */
typedef struct {
    gd_minibatch_t *mb;   /* CUDA sampler and cpu mode: the set's minibatch buffer */
    gd__nn_tensor x;      /* the gathered rows, on the nn backend's device */
    /* GPU modes (and cpu from disk) over a half table: the rows as gathered, before widening. */
    void *x_half;
    int64_t *labels;      /* the seeds' labels, nn backend memory (-1: unlabelled) */
    int64_t *label_stage; /* GPU modes: pinned staging of the labels */
    void *blk_dev;        /* cpu-centric: the blocks in GPU memory ... */
    void *blk_stage;      /* ... and their pinned staging */
    gd_block blocks[GD_SAMPLER_MAX_LAYERS];
    int64_t num_in;        /* input nodes of the minibatch in the set */
    const int64_t *in_ids; /* their global ids (in the minibatch buffer) */
    int64_t seeds;         /* its seeds (0: this rank has no share of the global minibatch) */
    int64_t labelled;      /* its seeds with a label */
    /* The input nodes' ids on the nn backend's device (the model's dropout keys). */
    const int64_t *node_ids;
} gd__batch_set;

/* What the data path is asked for. */
typedef struct {
    int num_layers;
    int fanouts[GD_SAMPLER_MAX_LAYERS]; /* as the sampler draws them (0 for the MLP baseline) */
    int64_t batch_size;
    uint64_t seed;
    int threads;
    gd__train_mode mode;
    int64_t gpu_cache_bytes, graph_cache_bytes, gpu_mem_budget;
    int64_t host_mem_budget; /* host memory the run may take (0: GD_HOST_MEM_MB or available) */
    const char *gather_sms;
    const char *placement; /* several ranks in zero-copy: replicate, partition, auto (NULL) */
    int locality;          /* locality-aware sampling: 0 off, a factor >= 2, GD__LOCALITY_AUTO */
    /* zero-copy: how the rows outside the GPU cache come (gd__host_gather; 0: zero-copy loads) */
    int host_gather;
    double host_split; /* split: the CPU's fraction of them from "split=F" (< 0: not given) */
    int depth;           /* buffer sets of the GPU modes (cpu: 1 unless sets_on_cpu) */
    int sets_on_cpu;     /* the cpu mode keeps `depth` sets too (the loader's caller holds them) */
    int labels_optional; /* the loader serves unlabelled data */
    /* --host-gather auto's trial times every pass (the loader: each is its caller's loop);
     * else training passes only. */
    int host_trial_every_pass;
    int rank, world;     /* data parallelism: this rank's share of each global minibatch */
    /* Seeds that replace split seeds_split's (the loader's input_nodes; NULL: none). */
    const int64_t *seeds;
    int64_t num_seeds;
    int seeds_split;
    /* GPU bytes of the model the client adds, for the plan (NULL: none). */
    int64_t (*model_bytes)(void *user, int64_t max_degree, int64_t max_input_nodes);
    void *model_user;
    gd_progress_fn startup_progress; /* the start-up's progress line (NULL: none) */
    void *startup_progress_user;
} gd__data_config;

/*
 * Copy the options that every client of the data path names alike (the public loader and
 * train options, the trainer's config) from src to dst, a gd__data_config or the trainer's
 * config. The clients' structs differ and the public ones cannot embed a shared one, so this
 * one list of fields is a macro; each client adds the fields it names or derives otherwise.
 */
#define GD__DATA_OPTIONS_COPY(dst, src)                                                            \
    do {                                                                                           \
        (dst)->num_layers = (src)->num_layers;                                                     \
        (dst)->batch_size = (src)->batch_size;                                                     \
        (dst)->seed = (src)->seed;                                                                 \
        (dst)->threads = (src)->threads;                                                           \
        (dst)->depth = (src)->depth;                                                               \
        (dst)->gpu_cache_bytes = (src)->gpu_cache_bytes;                                           \
        (dst)->graph_cache_bytes = (src)->graph_cache_bytes;                                       \
        (dst)->gpu_mem_budget = (src)->gpu_mem_budget;                                             \
        (dst)->gather_sms = (src)->gather_sms;                                                     \
    } while (0)

/* --locality auto's state (gd__locality_next). */
typedef struct {
    int factor;            /* the factor of the epoch that runs next (1: uniform) */
    int settled;           /* 1: a biased epoch was no faster: uniform for the rest of the run */
    double best_uniform_s; /* the fastest uniform epoch so far (0: none yet) */
} gd__locality_auto;

/* The long phases of a build that the start-up's progress line names (datapath.c). */
enum {
    GD__STARTUP_GRAPH,
    GD__STARTUP_DEGREES,
    GD__STARTUP_LISTS,
    GD__STARTUP_FEATURES,
    GD__STARTUP_CACHES,
    GD__STARTUP_PHASES
};

typedef struct {
    gd__data_config cfg;
    gd__plan plan;
    char startup[256]; /* where the build's time went: "graph 1.20 s, features 0.31 s, ..." */
    int64_t *out_degrees; /* during the build: every node's out-degree (the caches' scores) */
    double startup_t;  /* when the phase under way began */
    /*
     * The start-up's progress line (startup_say): each long phase's estimate in seconds at
     * reference rates, which of them have begun, and the estimates and the time of those done
     * (the correction for this machine).
     */
    double phase_est[GD__STARTUP_PHASES];
    int phase_now; /* the phase under way (-1: none yet) */
    double est_done, took_done, phase_t;
    double pin_t0; /* when the registering thread started */
    gd_context_t *context;
    gd__train_mode mode;
    const gd_dataset_t *ds;
    int64_t num_nodes, in_dim, num_classes, batch;
    int gpu;          /* a GPU mode: the data lands in cfg device memory */
    int cuda_sampler; /* all-gpu, zero-copy */
    int depth;
    gd__nn_ctx *nn; /* the client's nn backend: where x and labels live */
    gd_graph_t *graph;
    gd_sampler_t *sampler;
    gd_sampler_info sinfo;
    int64_t max_degree;
    gd_minibatch_t *host_mb;    /* cpu-centric: the CPU sampler's output */
    /* Adopted from the dataset, or (zero-copy) it or a copy registered through the context. */
    gd_host_tensor_t *features;
    gd_dtype feature_dtype; /* the table's: float32, or float16 / bfloat16 widened for x */
    gd_gatherer_t *gatherer;
    gd__batch_set sets[GD__PIPE_MAX_DEPTH];
    size_t blk_bytes;          /* cpu-centric: bytes of a blocks copy */
    void *s_sample, *s_gather; /* GPU modes */
    int64_t *d_order;          /* CUDA sampler: the pass's seed order in GPU memory */
    gd_array_view label_view;
    int64_t *split[3]; /* train, valid, test node ids as int64 (NULL: absent) */
    int64_t split_n[3];
    int64_t *order; /* the ids of a pass in the order they are used */
    int64_t gpu_bytes, free0, budget;
    int64_t feature_cache_rows, feature_cache_bytes, graph_cache_bytes;
    /* Several ranks: the other ranks' feature caches this rank reads (NULL: none). */
    struct gd__peer_view_s *peers;
    /* zero-copy: the features are the dataset file's pages, registered in place read-only. */
    int features_shared;
    /*
     * zero-copy on one GPU: the features are registered by a thread of their own from the
     * moment the graph is placed, beside the out-degrees, the list cache and the model
     * (issue 19); gd__datapath_place_features joins it before the gatherer, the first reader
     * of d->features, and gd__datapath_destroy before anything is freed. pin_status and
     * pin_error carry its result across threads (the error text is thread-local).
     */
    pthread_t pin_thread;
    int pin_running;
    gd_status pin_status;
    double pin_s; /* the thread's own time */
    char pin_error[512];
    /*
     * The features on disk (plan.features_on_disk): the GPU's disk tier (zero-copy), or the
     * CPU's rows through a host cache (cpu mode); d->features is then NULL.
     */
    struct gd__disk_tier *disk;
    struct gd__disk_rows *disk_rows;
    /*
     * Window buffering of the disk tier's GPU cache (GD_DISK_WINDOW): minibatches sampled
     * ahead announce their rows. Per set: the minibatch sampled into it and the one whose
     * rows it announced (-1: none), within the current pass.
     */
    int window;
    int64_t sampled[GD__PIPE_MAX_DEPTH], announced[GD__PIPE_MAX_DEPTH];
    /* --host-gather auto: the in-epoch trial of the host rows' way (NULL: none). */
    gd__host_trial *host_trial;
    int locality_factor;             /* training passes' bias factor (1: uniform; locality.c) */
    gd__locality_auto locality_auto; /* --locality auto's state (locality.c) */
} gd__datapath;

/*
 * Place the graph of ds for cfg on the context's device and build every buffer. The mode is
 * resolved first (auto: the plan), then *nn is set to the nn backend of that mode (CUDA on the
 * context's GPU for the GPU modes, else the CPU): the client's backend, whose memory holds the
 * sets' rows and labels. The client keeps *nn alive until after gd__datapath_destroy, then
 * releases it with gd__datapath_nn_release.
 */
gd_status gd__datapath_create(const gd_dataset_t *ds, const gd__data_config *cfg,
                              gd_context_t *context, gd__nn_ctx *nn, gd__datapath **out);
void gd__datapath_nn_release(gd__nn_ctx *nn);
/*
 * The features and the gatherer, last: zero-copy's feature cache takes what the GPU memory
 * budget leaves once the client has allocated its own buffers (the model), so the client calls
 * this after them. Before it, the data stages cannot run.
 */
/* gd__data_config.locality: the factor adapted after each epoch (locality.c). */
#define GD__LOCALITY_AUTO (-1)

/*
 * Locality-aware sampling (locality.c). _init, once the gatherer exists: the bitmap of the rows
 * in GPU memory to the sampler (an error outside zero-copy with a cache). _pass, at the start of
 * every pass: the bias on for training passes, off for evaluation. _adapt, after a training
 * epoch: auto's next factor from that epoch's gather and train times (returned; 0 when the
 * factor is not adapted).
 */
gd_status gd__datapath_locality_init(gd__datapath *d);
gd_status gd__datapath_locality_pass(gd__datapath *d, int train);
int gd__datapath_locality_adapt(gd__datapath *d, double gather_s, double train_s, double epoch_s);
/*
 * The rule of --locality auto, pure: given the factor the epoch just ran with (s->factor) and
 * its times, the factor of the next epoch (also left in s->factor). A uniform epoch sets the
 * factor to clamp(round(2 * gather_s / train_s), 1, 16) and records its time; a biased epoch
 * that was no faster than the fastest uniform one makes sampling uniform for the rest of the
 * run (s->settled): the bias only exists to save time, and the biased draws cost more than the
 * uniform ones (measured on the H100: products, an eighth of the rows cached, the sample stage
 * 0.19 s against 0.04 s an epoch, for a gather that did not shrink).
 */
int gd__locality_next(gd__locality_auto *s, double gather_s, double train_s, double epoch_s);

/*
 * Several ranks in zero-copy (placed.c): create d->gatherer with its cache of cache bytes placed
 * over the group's GPUs by cfg.placement, from the rows' scores, and map the peers' caches.
 * Collective. *placed = 0 (nothing created) when one GPU's hot-row cache serves: one rank,
 * replicate, or auto where the GPUs cannot read each other's memory (the plan says why).
 */
gd_status gd__datapath_place_cache(gd__datapath *d, const gd_gatherer_options *go, int64_t cache,
                                   const int64_t *scores, int *placed);
gd_status gd__datapath_place_features(gd__datapath *d);
/*
 * The machine a mode runs on: *have_gpu = 1 with the GPU's free memory (*free0) and the budget
 * the data may use (min(gpu_mem_budget, free), or free for 0) unless mode is cpu, or auto
 * without a GPU. A GPU mode asked by name without a GPU, or in a build without CUDA, fails
 * with GD_ERR_NO_DEVICE naming --mode cpu. Shared by both data paths (heterogeneous: hetero.c).
 */
gd_status gd__datapath_machine(gd__train_mode mode, int device, int64_t gpu_mem_budget,
                               int *have_gpu, int64_t *free0, int64_t *budget);
/*
 * The plan a data path of cfg over ds would follow on GPU `device` now (its free memory, the
 * locked-memory limit), without placing anything: what auto picks, and why.
 */
gd_status gd__datapath_plan(const gd_dataset_t *ds, const gd__data_config *cfg, int device,
                            gd__plan *out);
/* Waits for the data stages' streams; the client's nn backend is the client's to destroy. */
void gd__datapath_destroy(gd__datapath *d);

/*
 * One buffer set's memory for d (as the ring's sets), and its release. A client that lets a
 * caller keep a set's memory (the loader's held batches) swaps a fresh set into the ring with
 * these; gd__datapath_set_bytes is about what one set takes (GPU memory in the GPU modes).
 */
gd_status gd__datapath_set_alloc(gd__datapath *d, gd__batch_set *s);
void gd__datapath_set_free(gd__datapath *d, gd__batch_set *s);
int64_t gd__datapath_set_bytes(const gd__datapath *d);

/*
 * A pipeline config of the data stages (sample, gather) over d's ring on its device; the client
 * adds its own stages and its rules for freeing sets.
 */
void gd__datapath_pipe_config(gd__datapath *d, gd__pipe_config *pc);
/*
 * Prepare pass p over ids[0..n) (which stay alive during the pass) in minibatches of the
 * batch size; the seed order goes to the GPU for the CUDA sampler.
 */
gd_status gd__datapath_start_pass(gd__datapath *d, const int64_t *ids, int64_t n, int64_t epoch,
                                  int train, gd__pass *p);
/* Errors the data stages' kernels recorded during the pass (waits for them). */
gd_status gd__datapath_check_errors(gd__datapath *d);
/* Features on disk: the rows read from the file so far, and the bytes it gave (0 otherwise). */
gd_status gd__datapath_disk_read(gd__datapath *d, int64_t *rows, int64_t *bytes);
/*
 * zero-copy with --host-gather cpu or split: the host rows CPU threads copied into pinned
 * staging so far (the gatherer's probe included), and their bytes (0 otherwise).
 */
void gd__datapath_host_copied(const gd__datapath *d, int64_t *rows, int64_t *bytes);
/* Minibatches of a pass over the largest split (the size of per-pass logs). */
int64_t gd__datapath_max_batches(const gd__datapath *d);
/* The labelled seeds of global minibatch b of p (every rank's share), from host memory. */
int64_t gd__datapath_global_labelled(const gd__datapath *d, const gd__pass *p, int64_t b);

#ifdef __cplusplus
}
#endif

#endif /* GD_TRAIN_DATAPATH_H */
