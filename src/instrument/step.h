/*
 * One training step of the default model timed on the CUDA nn backend, for `graphdirect bench
 * step` (bench/bench_step.c, docs/nn.md "Speed"). The model and its op table are internals of
 * the nn module, so the benchmark reaches them through this header: plain types and the public
 * header's only. The code (step.c) builds into the gd_instrument static library beside the read
 * plan, never into the installed library.
 *
 * A step object owns an nn context (its own stream, on which the caller also samples and
 * gathers), the model sized as the trainer sizes it, the input rows, the labels and the timing
 * events. A step is forward with dropout, softmax cross-entropy, zeroing the gradients, backward
 * and the Adam step, bracketed by two CUDA events and waited for. With timed_ops, every op of
 * the step is also bracketed by its own events and its time added to a total per kind of op.
 * Only one step object may time its ops at a time per thread. Without CUDA every entry fails
 * with GD_ERR_NO_DEVICE.
 *
 * A typed step object (gd_instrument_tstep) times the relational models (R-SAGE, R-GAT) on a
 * heterogeneous dataset the same way, through the heterogeneous trainer's own data path
 * (src/train/hetero.c): the typed sampler and the per-type gather on the CPU, the minibatch
 * copied to the GPU, then the step between two events on the nn context's stream. With device
 * -1 the model runs on the CPU backend instead and the host clock times it (a test of the
 * benchmark and of its dump on machines without a GPU, not a measurement); that part builds
 * without CUDA too.
 */
#ifndef GD_INSTRUMENT_STEP_H
#define GD_INSTRUMENT_STEP_H

#include "graphdirect.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gd_instrument_step gd_instrument_step;

/* The shape of the model and of the minibatches it is sized for, and its training settings. */
typedef struct {
    int num_layers;
    const int *fanouts;      /* as the sampler has them: the seeds' hop first, -1 = all */
    int64_t batch;           /* seeds per minibatch */
    int64_t in_dim;          /* feature width */
    int64_t hidden;          /* width of every hidden layer */
    int64_t num_classes;     /* width of the logits */
    double dropout;          /* between layers */
    double lr;               /* Adam's learning rate */
    uint64_t seed;           /* the parameters' initialisation and every step's dropout key */
    int64_t max_degree;      /* the graph's largest in-degree */
    int64_t num_nodes;       /* the graph's nodes */
    int64_t max_input_nodes; /* the sampler's bound on a minibatch's input nodes */
    int breakdown;           /* 1: create the events that timed_ops steps use */
    const char *model;       /* the model's kind (NULL: the default, GraphSAGE) */
    int heads;               /* gat: attention heads (0: 1) */
    double attn_dropout;     /* gat: dropout on the attention weights */
} gd_instrument_step_config;

/* "GraphSAGE": the default model's kind, as text for people. */
const char *gd_instrument_step_model_title(void);

/* The nn context on GPU device (its stream and cuBLAS handle); the model comes later. */
gd_status gd_instrument_step_create(int device, gd_instrument_step **out);
void gd_instrument_step_destroy(gd_instrument_step *s);

/* The context's stream (a cudaStream_t): sample, gather and upload on it. */
void *gd_instrument_step_stream(const gd_instrument_step *s);

/* The model of the default kind for c, its parameters initialised from c->seed, with every
 * buffer of a step: the input rows (max_input_nodes x in_dim), the loss, the logit gradient
 * and the labels (batch), and the events. */
gd_status gd_instrument_step_model(gd_instrument_step *s, const gd_instrument_step_config *c);

/* Parameters of the model (its flat buffer, padding included). */
int64_t gd_instrument_step_num_params(const gd_instrument_step *s);

/* The device buffer of the input rows (float32, in_dim a row), which the gather writes. */
void *gd_instrument_step_input(gd_instrument_step *s);

/* Copy the n labels of the minibatch's seeds to the device; waits for the stream. */
gd_status gd_instrument_step_labels(gd_instrument_step *s, const int64_t *labels, int64_t n);

/*
 * One step over blocks (input layer first, on the device) and the first num_in input rows, its
 * dropout keyed by the seed and step, the global minibatch number. Waits for it; *ms gets its
 * time between the events, *loss the mean loss. timed_ops also times every op (see above).
 */
gd_status gd_instrument_step_run(gd_instrument_step *s, const gd_block *blocks, int64_t num_in,
                                 int64_t step, int timed_ops, float *ms, float *loss);

/* Wait for the stream and report an error a device op recorded (a label out of range). */
gd_status gd_instrument_step_check_errors(gd_instrument_step *s);

/* The kinds of op that timed_ops steps tell apart, and the name of kind k ("adam"). */
int gd_instrument_step_op_kinds(void);
const char *gd_instrument_step_op_name(int kind);
/* The milliseconds and calls of kind k over every timed_ops step so far. */
void gd_instrument_step_op_total(const gd_instrument_step *s, int kind, double *ms,
                                 int64_t *calls);

/* ---- the relational models: a typed step */

typedef struct gd_instrument_tstep gd_instrument_tstep;

typedef struct {
    const char *model;            /* "rsage" or "rgat" */
    int num_layers;
    const int *fanouts;           /* per hop, for every edge type: the seeds' hop first */
    const char *relation_fanouts; /* NULL, or per (hop, edge type) as train --relation-fanouts */
    int64_t batch;                /* seeds per minibatch */
    int64_t hidden;               /* hidden width (R-GAT: per head) */
    double dropout, lr;
    int heads;                    /* rgat: attention heads (0: 1) */
    double attn_dropout;          /* rgat: dropout on the attention weights */
    uint64_t seed;                /* parameters, draws and every step's dropout key */
    int device;                   /* the GPU, or -1: the CPU backend, timed by the host clock */
} gd_instrument_tstep_config;

/* The trainer's data path and model for ds (heterogeneous) as c says, parameters initialised. */
gd_status gd_instrument_tstep_create(const gd_dataset_t *ds, const gd_instrument_tstep_config *c,
                                     gd_instrument_tstep **out);
void gd_instrument_tstep_destroy(gd_instrument_tstep *s);
/* "R-SAGE", "R-GAT": the model's kind, as text for people. */
const char *gd_instrument_tstep_title(const gd_instrument_tstep *s);
int64_t gd_instrument_tstep_num_params(const gd_instrument_tstep *s);

/*
 * Minibatch `batch` of `epoch` (the n seeds: global ids of the target type) sampled, gathered
 * and copied to the model's device, untimed and waited for; then one training step, its dropout
 * keyed by the seed and step (the global minibatch number), between the clock's two marks. *ms
 * gets its time, *loss the mean loss.
 */
gd_status gd_instrument_tstep_run(gd_instrument_tstep *s, const int64_t *seeds, int64_t n,
                                  int64_t epoch, int64_t batch, int64_t step, float *ms,
                                  float *loss);
/* The same minibatch's mean loss of an evaluation forward (no dropout), nothing trained: the
 * number bench/pyg_step.py compares PyG's with on the same parameters. */
gd_status gd_instrument_tstep_eval_loss(gd_instrument_tstep *s, const int64_t *seeds, int64_t n,
                                        int64_t epoch, int64_t batch, float *loss);
/* Report an error a device op recorded (a label out of range); waits for the stream. */
gd_status gd_instrument_tstep_check_errors(gd_instrument_tstep *s);

/* The last minibatch, in host memory: the block of layer l (input layer first) and edge type r
 * (local ids of its two node types), the global ids of the nodes of type t at layer l (local
 * order; a layer's nodes are a prefix of the layer below's), the n seeds' labels. */
gd_status gd_instrument_tstep_block(const gd_instrument_tstep *s, int l, int r, gd_block *out);
gd_status gd_instrument_tstep_nodes(const gd_instrument_tstep *s, int l, int t,
                                    const int64_t **ids, int64_t *n);
const int64_t *gd_instrument_tstep_labels(const gd_instrument_tstep *s, int64_t *n);

/* The flat parameter buffer (num_params floats) copied to host; waits for the stream. */
gd_status gd_instrument_tstep_params(gd_instrument_tstep *s, float *host);
/* One parameter tensor of a relation: a name ("w_l", "att_src" ...), and its rows x cols
 * (row-major) at an element offset of the flat buffer. */
typedef struct {
    const char *name;
    int64_t offset, rows, cols;
} gd_instrument_weight;
#define GD_INSTRUMENT_MAX_WEIGHTS 5
/*
 * The parameters of layer l's edge type r into w (at most GD_INSTRUMENT_MAX_WEIGHTS); returns
 * how many (0: the relation has none, as relations into other types than the target in the
 * last layer). R-SAGE: w_l (source width x out), b (1 x out), w_root (destination width x
 * out; R-GCN: b and w_root of 0 rows, its per-type roots are not listed); R-GAT: w_src, w_dst
 * (width x heads F), att_src, att_dst (heads x F), bias (1 x out). A featureless side's matrix has
 * 0 rows.
 */
int gd_instrument_tstep_weights(const gd_instrument_tstep *s, int l, int r,
                                gd_instrument_weight *w);
/*
 * R-GCN's per-type root of layer l's node type t into w (at most GD_INSTRUMENT_MAX_WEIGHTS):
 * w_root (the type's width x out; 0 rows for a featureless type) and b (1 x out); returns how
 * many (0: the type has none, as the last layer's other types than the target, or the model
 * is not R-GCN).
 */
int gd_instrument_tstep_type_weights(const gd_instrument_tstep *s, int l, int t,
                                     gd_instrument_weight *w);

#ifdef __cplusplus
}
#endif

#endif /* GD_INSTRUMENT_STEP_H */
