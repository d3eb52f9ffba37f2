/*
 * The train module's internals: the trainer, which runs the whole data path of docs/design.md
 * for every minibatch of an epoch (seeds -> sample -> gather -> forward, loss, backward, Adam)
 * and evaluates a split by sampled inference, in one of the modes of docs/train.md:
 *   cpu          the CPU sampler, the CPU gather and the CPU nn backend, one minibatch after
 *                another (the reference, and what runs without a GPU);
 *   all-gpu      graph and features in GPU memory: CUDA sampler, gpu gather, CUDA nn;
 *   zero-copy    graph indices in pinned host memory read by the CUDA sampler over UVA
 *                (indptr in GPU memory), features in pinned host memory read by the zero-copy
 *                gather kernel with a hot-row GPU cache, CUDA nn;
 *   cpu-centric  the CPU sampler and a CPU gather into pinned memory with one copy per
 *                minibatch (the usual DataLoader pipeline), CUDA nn;
 *   auto         one of these, picked from the memory each needs and what the machine has.
 * The GPU modes pipeline the stages: sampling, gathering and training each have a CUDA stream,
 * minibatches go through a ring of buffer sets, and the stages hand over with events. Every
 * buffer is allocated by gd__trainer_create, sized from the batch size and the fanouts, so an
 * epoch allocates nothing. All modes sample and gather exactly the same data for the same
 * seed, so their losses agree to float tolerance. docs/train.md describes it.
 */
#ifndef GD_TRAIN_INTERNAL_H
#define GD_TRAIN_INTERNAL_H

#include "core/internal.h"
#include "nn/model.h"
#include "train/checkpoint.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The epoch key of evaluation draws: far from any training epoch, one per split. */
#define GD__TRAIN_EVAL_EPOCH (INT64_C(1) << 48)

typedef enum {
    GD__TRAIN_CPU = 0,
    GD__TRAIN_ALL_GPU = 1,
    GD__TRAIN_ZERO_COPY = 2,
    GD__TRAIN_CPU_CENTRIC = 3,
    GD__TRAIN_AUTO = 4,
    GD__TRAIN_MODE_COUNT = 5
} gd__train_mode;

/* "cpu", "all-gpu", "zero-copy", "cpu-centric", "auto"; NULL outside the enum. */
const char *gd__train_mode_name(gd__train_mode mode);
gd_status gd__train_mode_parse(const char *name, gd__train_mode *out);

/*
 * Called from the epoch loop every report_every minibatches and at the end: done of total
 * minibatches issued, the loss of the latest minibatch known to have finished (NaN if none
 * yet; the GPU modes never wait for it). A non-zero return stops the epoch with
 * GD_ERR_INTERRUPTED after the minibatches in flight.
 */
typedef int (*gd__train_progress_fn)(void *user, int64_t done, int64_t total, double loss);

typedef struct {
    gd__model_kind model;               /* the kind of model (0: GD__MODEL_DEFAULT) */
    int num_layers;                     /* 1..GD_SAMPLER_MAX_LAYERS */
    int fanouts[GD_SAMPLER_MAX_LAYERS]; /* from the seeds outward, as gd_sampler_create */
    /*
     * 1: the baseline with the graph removed. Every hop is sampled with fanout 0, so each block
     * has no edges and its source nodes are its destination nodes (the seeds): the mean
     * aggregate is 0 and only the self path (h R + b) of every layer counts, which makes the
     * model an MLP of num_layers layers over each node's own features.
     */
    int mlp;
    int64_t batch_size;  /* seeds per training minibatch (and per evaluation minibatch) */
    int64_t hidden_dim;  /* width of the hidden layers (GAT: per head) */
    int heads;           /* GAT's attention heads (0: 1) */
    double attn_dropout; /* GAT's dropout on the attention weights */
    double dropout;      /* p in [0, 1) after every hidden layer, training only */
    double lr;           /* Adam learning rate */
    double weight_decay; /* Adam's L2 term (torch.optim.Adam), 0 = none */
    uint64_t seed;       /* parameters, shuffling, neighbour draws and dropout */
    int threads;         /* CPU threads of the sampler and the gather (0: GD_THREADS) */
    gd__train_mode mode; /* where the data path runs (default cpu) */
    int device;          /* the GPU of the GPU modes (without a context) */
    gd_context_t *context; /* NULL: the default context of device */
    /*
     * zero-copy: GPU memory for the hot feature rows (the highest out-degree first) and for
     * the hot neighbour lists of the sampler. -1 (auto): the graph cache takes a quarter of
     * what the GPU memory budget leaves after the fixed buffers (at most all of indices), and
     * then the feature cache what is left once everything else is allocated.
     */
    int64_t gpu_cache_bytes;
    int64_t graph_cache_bytes;
    /* GPU memory the trainer may use (0: what the GPU has free); checked, and reported. */
    int64_t gpu_mem_budget;
    int64_t host_mem_budget; /* host memory the run may take (0: GD_HOST_MEM_MB or available) */
    const char *gather_sms; /* SMs the gather kernel may use ("N", "N%"; NULL: GD_GATHER_SMS) */
    /*
     * Several ranks in zero-copy: where the hot feature rows live over the GPUs, "replicate",
     * "partition" or "auto" (NULL: auto; train/placement.h, docs/multi_gpu.md).
     */
    const char *placement;
    /* Locality-aware sampling in training passes: 0 off, a factor >= 2, -1 auto (locality.c). */
    int locality;
    /*
     * zero-copy: how the feature rows outside the GPU cache reach the GPU, a gd__host_gather
     * (feature/host_gather.h): zero-copy loads (0), CPU gather + one DMA, split between the
     * two, or auto (a probe); host_split the CPU's fraction that "split=F" gave (< 0: none).
     */
    int host_gather;
    double host_split;
    int depth;              /* GPU modes: buffer sets in the ring, >= 2 */
    const char *relation_fanouts; /* heterogeneous: per (hop, edge type); see gd_train_options */
    int64_t max_batches;    /* stop a training epoch after this many minibatches (0: all) */
    gd__train_progress_fn progress;
    void *progress_user;
    int64_t report_every; /* minibatches between progress calls (0: 20) */
    gd_progress_fn startup_progress; /* gd_train_options' */
    void *startup_progress_user;
} gd__train_config;
#define GD__TRAIN_CONFIG_INIT                                                                      \
    {.num_layers = 2,                                                                              \
     .fanouts = {10, 5},                                                                           \
     .batch_size = 1024,                                                                           \
     .hidden_dim = 128,                                                                            \
     .dropout = 0.5,                                                                               \
     .lr = 3e-3,                                                                                   \
     .mode = GD__TRAIN_CPU,                                                                        \
     .gpu_cache_bytes = -1,                                                                        \
     .graph_cache_bytes = -1,                                                                      \
     .host_split = -1,                                                                             \
     .depth = 3}

typedef struct {
    int64_t epoch;
    int64_t batches;
    double loss;      /* mean over the minibatches of their mean loss */
    double train_acc; /* correct / labelled seeds over the epoch's minibatches (train mode) */
    double seconds;   /* the whole epoch (training only, not evaluation) */
    /*
     * Its parts. cpu: the wall time of each stage (they run one after another). GPU modes: the
     * busy time of each stage's stream, from events (the stages overlap, so the parts add up
     * to more than the epoch); cpu-centric: the CPU stages by wall time. wait_s is the epoch
     * time the training stage was not busy: waiting for data, or for the host.
     */
    double sample_s, gather_s, train_s, wait_s;
    double allreduce_s;    /* several ranks: the all-reduce stage's busy time */
    double cpu_core_s;     /* CPU time of the process (user + system, all threads) */
    int64_t gpu_mem_bytes; /* GPU memory in use at the end (total - free; 0 without a GPU) */
    int64_t disk_rows_read, disk_bytes_read; /* features on disk: what the file gave */
    int64_t host_rows_copied, host_bytes_copied; /* host rows by CPU gather (cpu, split) */
} gd__train_epoch_stats;

typedef struct gd__trainer gd__trainer;

/*
 * A trainer of a model of kind cfg->model (or the MLP baseline) on ds in cfg->mode. ds needs
 * float32 features, labels, a non-empty train_idx; valid_idx and test_idx are optional. ds
 * must outlive the trainer. The parameters are initialised from cfg->seed.
 */
gd_status gd__trainer_create(const gd_dataset_t *ds, const gd__train_config *cfg,
                             gd__trainer **out);
void gd__trainer_destroy(gd__trainer *t);

/*
 * One epoch over train_idx, shuffled by (seed, epoch), in minibatches of batch_size (the short
 * last batch included): sample, gather, forward with dropout, softmax cross-entropy, backward,
 * one Adam step each.
 */
gd_status gd__trainer_epoch(gd__trainer *t, int64_t epoch, gd__train_epoch_stats *stats);

/*
 * Accuracy on split (GD_ARRAY_TRAIN_IDX, GD_ARRAY_VALID_IDX or GD_ARRAY_TEST_IDX) by sampled
 * inference: minibatches of the split's nodes in order, neighbours drawn with the training
 * fanouts under a fixed key of the split (the same draws at every call), no dropout.
 * *accuracy is correct / labelled nodes, or NaN for a split that is absent or has no labelled
 * node; *count (optional) gets the labelled nodes.
 */
gd_status gd__trainer_evaluate(gd__trainer *t, gd_array_id split, double *accuracy, int64_t *count);

/*
 * The model (its parameters, gradients and Adam state on the trainer's nn backend), for
 * checkpoints and evaluation; and that backend's context.
 */
gd__model *gd__trainer_model(gd__trainer *t);
const gd__nn_ctx *gd__trainer_nn_ctx(const gd__trainer *t);
/*
 * Copy the parameters (params.numel float32) and, when state is non-NULL, Adam's state
 * (2 * numel: m then v) to host memory; and back, with the number of Adam steps taken. These
 * wait for the device: call them between epochs (best model, checkpoints).
 */
gd_status gd__trainer_params_get(gd__trainer *t, void *params, void *state);
gd_status gd__trainer_params_set(gd__trainer *t, const void *params, const void *state,
                                 int64_t adam_step);

/*
 * Checkpoints (src/train/checkpoint.c holds the format). The meta of this trainer: the model,
 * the fanouts, the seed, the dataset and the training settings that must match on resume (the
 * mode is not among them: every mode trains the same way); epochs_done and best_* are the
 * caller's. Randomness is keyed by (seed, epoch, minibatch), so (seed, epochs_done) is the
 * whole RNG state.
 */
void gd__trainer_checkpoint_meta(const gd__trainer *t, gd__checkpoint_meta *meta);
/*
 * Save meta and the parameters to path atomically: the model's own (params NULL) or a host
 * copy (e.g. the best model so far), with Adam's state when with_state (a checkpoint to resume
 * from) or without (a model file for `graphdirect eval`).
 */
gd_status gd__trainer_save(gd__trainer *t, const char *path, const gd__checkpoint_meta *meta,
                           const void *params, int with_state);
/*
 * Load a checkpoint saved by a run of the same settings (checked, with a message naming what
 * differs) into the model and the optimizer; *saved gets its meta, whose epochs_done is the
 * epoch to go on with. The epochs that follow give the losses the uninterrupted run gives.
 */
gd_status gd__trainer_resume(gd__trainer *t, const char *path, gd__checkpoint_meta *saved);

/*
 * This trainer's rank among the ranks training together (0 alone). Rank 0 writes the run's
 * files (checkpoints, the best model); the others read a checkpoint to resume from.
 */
int gd__trainer_rank(const gd__trainer *t);
/* --locality auto: the next training epoch's factor from this one's gather, train and epoch
 * times (0: not adapted; gd__locality_next). */
int gd__trainer_locality_adapt(gd__trainer *t, double gather_s, double train_s, double epoch_s);

/* Change cfg.max_batches (0: every minibatch), e.g. for a short warm-up epoch in a benchmark. */
void gd__trainer_set_max_batches(gd__trainer *t, int64_t max_batches);

/* The feature table if the trainer registered it for its GPU (zero-copy), else NULL. */
gd_host_tensor_t *gd__trainer_registered_features(gd__trainer *t);

/* What the trainer allocated, for reports. */
typedef struct {
    gd__train_mode mode;     /* the mode it runs in (auto resolved) */
    char plan[512];          /* where everything lives and, for auto, why */
    int64_t max_input_nodes; /* most input nodes of a minibatch */
    int64_t max_edges;       /* most edges of a minibatch, all layers */
    int64_t feature_bytes;   /* the gathered-feature buffer (one per buffer set) */
    int64_t num_params;      /* model parameters (the flat buffer, padding included) */
    int64_t train_nodes, valid_nodes, test_nodes;
    int64_t gpu_bytes;       /* GPU memory the trainer took at create */
    int64_t feature_cache_rows, feature_cache_bytes;
    int64_t graph_cache_bytes;
    char startup[256]; /* where the build's time went, phase by phase */
} gd__trainer_info;
void gd__trainer_get_info(const gd__trainer *t, gd__trainer_info *info);

/*
 * The data path of heterogeneous datasets (hetero.c): gd__trainer_create hands such a dataset
 * to gd__htrain_create and the trainer's epochs, evaluations, info and checkpoint meta to the
 * functions below; the model (an R-SAGE through the model interface) and its nn context are the
 * trainer's for parameters, Adam state and checkpoints, as with a homogeneous dataset.
 */
typedef struct gd__htrain gd__htrain;
/* CPU time of the process so far (user + system, all threads), for the epochs' stats. */
double gd__cpu_seconds(void);
gd_status gd__htrain_create(const gd_dataset_t *ds, const gd__train_config *cfg, gd__htrain **out);
void gd__htrain_destroy(gd__htrain *h);
gd__model *gd__htrain_model(gd__htrain *h);
const gd__nn_ctx *gd__htrain_ctx(const gd__htrain *h);
gd_status gd__htrain_epoch(gd__htrain *h, int64_t epoch, gd__train_epoch_stats *stats);
/*
 * A minibatch loaded by gd__htrain_load: sampled, each featured type's rows gathered from its
 * table and the seeds' labels read, in the model's memory (their GPU copies in cpu-centric),
 * beside the host arrays the sampler and the gather wrote. Valid until the next load. The
 * benchmark of the training step (src/instrument/step.c) times gd__htrain_step on it.
 */
typedef struct {
    int64_t n;                     /* seeds */
    const gd_block *blocks;        /* L x R blocks, layer-major (arrays on the model's device) */
    const int64_t *num_nodes;      /* nodes of type t at layer l: [l * T + t], (L + 1) x T */
    const gd__nn_tensor *const *x; /* per type: its input rows; NULL for a featureless type */
    const int64_t *const *ids;     /* per type: the input nodes' global ids (model's device) */
    const int64_t *labels;         /* the n seeds' labels (model's device) */
    int64_t *correct;              /* the counter of right predictions (model's device) */
    /* The blocks, ids and labels in host memory (modes cpu and cpu-centric; in the GPU-centric
     * modes the blocks and ids are the CUDA sampler's, in GPU memory, and these are too). */
    const gd_block *host_blocks;
    const int64_t *const *host_ids;
    const int64_t *host_labels;
} gd__htrain_batch;
/* Sample the n seeds as minibatch b of epoch, gather and copy; times[0..1] (if non-NULL) gain
 * the sampling and the gather's seconds. */
gd_status gd__htrain_load(gd__htrain *h, const int64_t *seeds, int64_t n, int64_t epoch,
                          int64_t b, double *times, gd__htrain_batch *out);
/* What gd__htrain_step runs: the forward alone (evaluation), the forward and the loss without
 * dropout (the benchmark's check against PyG), or a training step. */
typedef enum { GD__HSTEP_FORWARD, GD__HSTEP_LOSS, GD__HSTEP_TRAIN } gd__hstep_what;
/*
 * The model over a loaded minibatch, queued on the nn context (nothing waits): the forward
 * (with dropout keyed by dropout_seed in a training step), with count the right predictions
 * into mb->correct; the loss, and in a training step the backward and an Adam step.
 */
gd_status gd__htrain_step(gd__htrain *h, const gd__htrain_batch *mb, gd__hstep_what what,
                          uint64_t dropout_seed, int count);
/* The mean loss of the last step that had one; waits for the nn context's stream. */
gd_status gd__htrain_loss(gd__htrain *h, float *loss);
gd_status gd__htrain_evaluate(gd__htrain *h, gd_array_id split, double *accuracy, int64_t *count);
void gd__htrain_info(const gd__htrain *h, gd__trainer_info *info);
void gd__htrain_checkpoint_meta(const gd__htrain *h, gd__checkpoint_meta *meta);
void gd__htrain_set_max_batches(gd__htrain *h, int64_t max_batches);
/*
 * Exact (layer-wise, every neighbour) accuracy of the split (hetero_infer.c computes the target
 * type's predictions); GD_ERR_UNSUPPORTED for a kind without it (gd__htrain_has_exact).
 */
gd_status gd__htrain_exact(gd__htrain *h, gd_array_id split, double *accuracy, int64_t *count);
int gd__htrain_has_exact(const gd__htrain *h);
/* What an exact inference of the relational models placed where (hetero_infer.c). */
typedef struct {
    int64_t chunk_rows;   /* destination nodes per chunk */
    int64_t device_bytes;  /* GPU memory it allocated for tables and scratch (GPU) */
    int64_t scratch_bytes; /* of which the scratch, placed before any table (GPU) */
    int tables_on_device; /* feature and hidden tables in GPU memory */
    int tables_pinned;    /* tables read from pinned host memory (GPU) */
} gd__hinfer_stats;

typedef struct {
    /* GPU memory the inference may allocate (0: half of what is free at the call). */
    int64_t memory_budget;
    int64_t chunk_rows; /* destination nodes per chunk (0: 4096 on the CPU, up to 16384 on a GPU) */
    int threads;        /* CPU threads of the host-side work (0: GD_THREADS) */
    /* Float32 tables of the node types already registered for the model's GPU (the trainer's
     * zero-copy ones), read in place instead of registered again; NULL entries: none. */
    gd_host_tensor_t *features[GD_MAX_NODE_TYPES];
    gd__hinfer_stats *stats; /* optional */
} gd__hinfer_options;

/*
 * The target type's predicted classes of every node by exact inference (pred: n_target), and
 * its logits (n_target x classes, host memory) where logits is not NULL, computed on the
 * model's backend (the CPU, or its GPU with tables placed by o's memory budget). o NULL:
 * defaults. tests/test_rgat_exact.c compares them with the sampled forward and the GPU's with
 * the CPU's.
 */
gd_status gd__htrain_exact_rsage(const gd_dataset_t *ds, gd__model *model,
                                 const gd__hinfer_options *o, int32_t *pred, float *logits);
gd_status gd__htrain_exact_rgat(const gd_dataset_t *ds, gd__model *model,
                                const gd__hinfer_options *o, int32_t *pred, float *logits);
/* The trainer's heterogeneous path, if it has one (NULL for a homogeneous dataset). */
gd__htrain *gd__trainer_hetero(gd__trainer *t);

#ifdef __cplusplus
}
#endif

#endif /* GD_TRAIN_INTERNAL_H */
