/*
 * The trainer's private structures, shared by trainer.c (creation, placements, the pipeline,
 * epochs, checkpoints) and loader.c (the public gd_loader_* / gd_batch_* over the same data
 * path without the model): the ring of buffer sets, the trainer itself and a pass over a split,
 * and the pipeline stages both drive. docs/train.md describes them.
 */
#ifndef GD_TRAIN_PIPELINE_H
#define GD_TRAIN_PIPELINE_H

#include "train/internal.h"

/* The epoch key of evaluation draws: far from any training epoch, one per split. */
#define GD__TRAIN_EVAL_EPOCH (INT64_C(1) << 48)
/* Buffer sets in a ring at most. */
#define GD__TRAIN_MAX_DEPTH 8

enum { EV_S0, EV_S1, EV_G0, EV_G1, EV_T0, EV_T1, EV_COUNT };
enum { ST_SAMPLE, ST_GATHER, ST_TRAIN, ST_COUNT };

/* One buffer set of the ring. */
typedef struct {
    gd_minibatch_t *mb;   /* CUDA sampler: the device minibatch */
    gd__nn_tensor x;      /* the gathered rows, on the nn backend's device */
    int64_t *labels;      /* the seeds' labels, nn backend memory */
    int64_t *label_stage; /* GPU modes: pinned staging of the labels */
    void *blk_dev;        /* cpu-centric: the blocks in GPU memory ... */
    void *blk_stage;      /* ... and their pinned staging */
    void *ev[EV_COUNT];   /* GPU modes: timing events around each stage */
    int timed[ST_COUNT];  /* a stage was recorded and not yet counted */
    gd_block blocks[GD_SAMPLER_MAX_LAYERS];
    int64_t num_in;        /* input nodes of the minibatch in the set */
    const int64_t *in_ids; /* their global ids (in the minibatch buffer) */
    int64_t seeds;         /* its seeds */
} train_set;

struct gd__trainer {
    gd__train_config cfg;
    gd__train_mode mode;
    char plan[512];
    const gd_dataset_t *ds;
    int64_t num_nodes, in_dim, num_classes, batch;
    gd__nn_ctx ctx;
    int gpu;          /* a GPU mode: the nn runs on cfg.device */
    int cuda_sampler; /* all-gpu, zero-copy */
    gd_graph_t *graph;
    gd_sampler_t *sampler;
    gd_sampler_info sinfo;
    gd_minibatch_t *host_mb;    /* cpu-centric: the CPU sampler's output */
    gd_host_tensor_t *features; /* adopted from the dataset, or an owned copy */
    gd_gatherer_t *gatherer;
    gd__model *model;
    gd__nn_adam_options adam;
    int depth;
    train_set sets[GD__TRAIN_MAX_DEPTH];
    size_t blk_bytes;          /* cpu-centric: bytes of a blocks copy */
    void *s_sample, *s_gather; /* GPU modes; training runs on ctx.stream */
    int64_t *d_order;          /* CUDA sampler: the epoch's seed order in GPU memory */
    gd__nn_tensor loss;        /* 1 x 1 */
    int64_t *d_correct;        /* nn backend memory: one count */
    gd__nn_tensor dlogits;     /* batch x classes */
    float *loss_log;           /* per minibatch of a pass (pinned in GPU modes) */
    int64_t *correct_log;
    int64_t log_cap;
    gd_array_view label_view;
    int64_t *split[3]; /* train, valid, test node ids as int64 (NULL: absent) */
    int64_t split_n[3];
    int64_t *order; /* the ids of a pass in the order they are used */
    int64_t gpu_bytes;
    int64_t feature_cache_rows, feature_cache_bytes, graph_cache_bytes;
};

/* A pass over ids: a training epoch (train = 1) or an evaluation. */
typedef struct {
    const int64_t *ids; /* host: the ids in the order they are used */
    int64_t n, batches;
    int64_t epoch;
    int train;
    double stage_ms[ST_COUNT]; /* GPU stage busy times */
    double sample_s, gather_s; /* host stage times (cpu, cpu-centric) */
    double train_s;            /* host train time (cpu) */
    int64_t labelled;
} pass;

/* Prepare p for a pass over ids[0..n) (train: with backward and Adam steps). */
gd_status gd__train_start_pass(gd__trainer *t, const int64_t *ids, int64_t n, int64_t epoch,
                               int train, pass *p);
/* cpu: sample and gather minibatch b into set s on the host. */
gd_status gd__train_cpu_stage(gd__trainer *t, pass *p, int64_t b, train_set *s);
#ifdef GD_WITH_CUDA
/* CUDA sampler: queue the sampling of minibatch b behind the set's EV_T1 (its last user). */
gd_status gd__train_issue_sample(gd__trainer *t, pass *p, int64_t b);
/* Wait for minibatch b's sizes, queue its gather and labels; EV_G1 marks them done. */
gd_status gd__train_issue_gather(gd__trainer *t, pass *p, int64_t b);
#endif

#endif /* GD_TRAIN_PIPELINE_H */
