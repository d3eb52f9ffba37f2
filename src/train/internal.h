/*
 * The train module's internals: the trainer, which runs the whole data path of docs/design.md
 * for every minibatch of an epoch (seeds -> sample -> gather -> forward, loss, backward, Adam)
 * and evaluates a split by sampled inference. This first trainer is the `cpu` mode: the CPU
 * sampler, the GD_GATHER_CPU gather and the CPU nn backend, one minibatch after another with
 * no pipelining. Every buffer is allocated by gd__trainer_create, sized from the batch size
 * and the fanouts (gd_sampler_get_info and the per-hop worst case), so an epoch allocates
 * nothing. The GPU modes (a CUDA sampler, a zero-copy gather, the CUDA nn backend, streams and
 * a ring of buffer sets) come next and will reuse this interface. docs/train.md describes it.
 */
#ifndef GD_TRAIN_INTERNAL_H
#define GD_TRAIN_INTERNAL_H

#include "core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
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
    int64_t hidden_dim;  /* width of the hidden layers */
    double dropout;      /* p in [0, 1) after every hidden layer, training only */
    double lr;           /* Adam learning rate */
    double weight_decay; /* Adam's L2 term (torch.optim.Adam), 0 = none */
    uint64_t seed;       /* parameters, shuffling, neighbour draws and dropout */
    int threads;         /* CPU threads of the sampler and the gather (0: GD_THREADS) */
} gd__train_config;
#define GD__TRAIN_CONFIG_INIT                                                                      \
    { 2, {10, 5}, 0, 1024, 128, 0.5, 3e-3, 0.0, 0, 0 }

typedef struct {
    int64_t epoch;
    int64_t batches;
    double loss;      /* mean over the minibatches of their mean loss */
    double train_acc; /* correct / labelled seeds over the epoch's minibatches (train mode) */
    double seconds;   /* the whole epoch (training only, not evaluation) */
    double sample_s, gather_s, nn_s; /* its parts */
} gd__train_epoch_stats;

typedef struct gd__trainer gd__trainer;

/*
 * A trainer of GraphSAGE (or the MLP baseline) on ds in cpu mode. ds needs float32 features,
 * labels, a non-empty train_idx; valid_idx and test_idx are optional. ds must outlive the
 * trainer. The parameters are initialised from cfg->seed.
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

/* What the trainer allocated, for reports. */
typedef struct {
    int64_t max_input_nodes; /* most input nodes of a minibatch */
    int64_t max_edges;       /* most edges of a minibatch, all layers */
    int64_t feature_bytes;   /* the gathered-feature buffer */
    int64_t num_params;      /* model parameters (the flat buffer, padding included) */
    int64_t train_nodes, valid_nodes, test_nodes;
} gd__trainer_info;
void gd__trainer_get_info(const gd__trainer *t, gd__trainer_info *info);

#ifdef __cplusplus
}
#endif

#endif /* GD_TRAIN_INTERNAL_H */
