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

#ifdef __cplusplus
}
#endif

#endif /* GD_INSTRUMENT_STEP_H */
