/*
 * The model interface: what the trainer, checkpoints, exact inference and the benchmarks know
 * of a model. A model kind (GraphSAGE today; GAT and relational models later) is a table of
 * functions in the style of ggml's backend buffers: sizing from the shape of the minibatches
 * (capacity) and an estimate of its memory (bytes) before anything is allocated, then create,
 * forward over the blocks of a minibatch, backward, and its flat parameter buffers, which the
 * optimizer steps, the all-reduce of data parallelism sums and the checkpoints save. Callers
 * name a kind only by its gd__model_kind or its name ("sage"), never its functions, so a new
 * kind is a new table registered in model.c and nothing else changes.
 *
 * The config carries what every kind has: the layers, the widths, the dropout, the element type
 * and the per-layer node capacities that size every buffer (an epoch allocates nothing). What
 * only one kind needs (e.g. attention heads) becomes a field here when that kind arrives; kinds
 * that do not use a field ignore it.
 */
#ifndef GD_NN_MODEL_H
#define GD_NN_MODEL_H

#include "nn/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Layers a model may have at most. */
#define GD__MODEL_MAX_LAYERS 8

/* The kinds of model. The first is the default: zeroed configs and old checkpoints mean it. */
typedef enum {
    GD__MODEL_SAGE = 0,
    GD__MODEL_GAT = 1,
    GD__MODEL_RSAGE = 2, /* relational GraphSAGE over typed minibatches (rsage.h) */
    GD__MODEL_RGAT = 3,  /* relational GAT over typed minibatches (rgat.h) */
    GD__MODEL_RGCN = 4,  /* relational GCN: R-SAGE with a root per node type (rsage.h) */
    GD__MODEL_KIND_COUNT = 5
} gd__model_kind;
#define GD__MODEL_DEFAULT GD__MODEL_SAGE

typedef struct {
    gd__model_kind kind;
    int num_layers;      /* 1..GD__MODEL_MAX_LAYERS */
    int64_t in_dim;      /* feature width */
    int64_t hidden_dim;  /* width of every hidden layer */
    int64_t num_classes; /* width of the logits */
    double dropout;      /* p in [0, 1), between layers, training only */
    gd_dtype dtype;      /* GD_DTYPE_FLOAT32 (training) or GD_DTYPE_FLOAT64 (checks) */
    /*
     * Capacity: max_nodes[l] is the most source nodes layer l can have (l = 0 is the input
     * layer, so max_nodes[0] is the most input nodes), and max_nodes[num_layers] the most
     * destination nodes of the last layer (the batch size). Every buffer is sized from these.
     */
    int64_t max_nodes[GD__MODEL_MAX_LAYERS + 1];
    /* GAT and R-GAT: attention heads (0 means 1), the dropout on the attention weights, and
     * (GAT) the most sampled edges of block l (set by the kind's capacity). Other kinds ignore
     * them. */
    int heads;
    double attn_dropout;
    int64_t max_edges[GD__MODEL_MAX_LAYERS];
    /*
     * Relational kinds (R-SAGE, R-GCN, R-GAT): their whole config, a gd__rsage_config (schema,
     * per-type widths, capacities per layer and type), read at create; the fields above then
     * only name the layers, hidden width, classes, dropout and dtype (and R-GAT's heads and
     * attention dropout). NULL for the other kinds.
     */
    const void *typed;
} gd__model_config;

/* The shape of the minibatches a model will see, from which gd__model_capacity sizes it. */
typedef struct {
    int num_layers;
    const int *fanouts;      /* as the sampler has them: hop 0 (the seeds' hop) first, -1 = all */
    int64_t batch;           /* seeds per minibatch */
    int64_t max_degree;      /* the graph's largest in-degree */
    int64_t num_nodes;       /* the graph's nodes */
    int64_t max_input_nodes; /* the sampler's bound on the input nodes of a minibatch */
} gd__model_shape;

typedef struct gd__model gd__model;

/*
 * A kind's functions. context is what create made. Every entry is required except
 * layer_combine, which only kinds with a layer-wise exact inference have, the attn_* and
 * typed_* entries of attention and relational kinds, and forward/backward, which relational
 * kinds leave NULL (gd__model_forward then refuses, naming the kind).
 */
typedef struct {
    const char *name;        /* "sage": checkpoints, options, gd__model_kind_parse */
    const char *label;       /* "graphsage": the model of metrics records */
    const char *title;       /* "GraphSAGE": the kind in text for people */
    const char *description; /* "GraphSAGE (mean)": the kind and its variant */
    /* Fill cfg->max_nodes for minibatches of shape s (the other fields of cfg are set). */
    void (*capacity)(const gd__model_shape *s, gd__model_config *cfg);
    /* Device bytes a model of cfg takes: parameters, gradients, Adam state, activations. */
    int64_t (*bytes)(const gd__model_config *cfg);
    gd_status (*create)(const gd__nn_ctx *ctx, const gd__model_config *cfg, uint64_t init_seed,
                        void **context);
    void (*destroy)(void *context);
    gd_status (*forward)(void *context, const gd_block *blocks, const gd__nn_tensor *x,
                         const int64_t *node_ids, int train, uint64_t dropout_seed,
                         gd__nn_tensor *logits);
    gd_status (*backward)(void *context, const gd_block *blocks, const gd__nn_tensor *dlogits,
                          gd__nn_tensor *dx);
    gd__nn_params *(*params)(void *context);
    /* Run the ops with be from now on (the same device and stream). */
    void (*set_backend)(void *context, const gd__nn_backend *be);
    gd_status (*layer_combine)(void *context, int l, const gd__nn_tensor *agg,
                               const gd__nn_tensor *self, gd__nn_tensor *out, int relu);
    /*
     * Exact inference of attention layers (GAT; NULL for other kinds), two passes a layer over
     * the whole graph (train/infer.c). attn_dims: layer l's input and output widths, the width
     * of its projection and its heads. attn_project: for rows h of layer l's input, p = h W_l
     * and every row's source and destination scores (ssrc, sdst: rows x heads). attn_combine:
     * for a chunk of destinations whose block indexes the whole projected table (indices are
     * rows of p and ssrc; destination d's own row, its self loop, is d + self_offset; sdst holds
     * the chunk's rows), layer l's output: the attention-weighted sums, bias, and ReLU (inner
     * layers) or the heads' mean (the last). alpha ((edges + destinations) x heads) and agg
     * (destinations x projection width) are scratch.
     */
    /*
     * Relational kinds (NULL for the others): forward and backward over a typed minibatch, as
     * gd__rsage_forward / gd__rsage_backward define them (per-(layer, relation) blocks, per-
     * (layer, type) counts, one input tensor and id array per type).
     */
    gd_status (*typed_forward)(void *context, const gd_block *blocks, const int64_t *num_nodes,
                               const gd__nn_tensor *const *x, const int64_t *const *node_ids,
                               int train, uint64_t dropout_seed, gd__nn_tensor *logits);
    gd_status (*typed_backward)(void *context, const gd__nn_tensor *dlogits,
                                gd__nn_tensor *const *dx);
    void (*attn_dims)(void *context, int l, int64_t *in_cols, int64_t *out_cols,
                      int64_t *proj_cols, int64_t *heads);
    gd_status (*attn_project)(void *context, int l, const gd__nn_tensor *h, gd__nn_tensor *p,
                              gd__nn_tensor *ssrc, gd__nn_tensor *sdst);
    gd_status (*attn_combine)(void *context, int l, const gd_block *blk, int64_t self_offset,
                              const gd__nn_tensor *p, const gd__nn_tensor *ssrc,
                              const gd__nn_tensor *sdst, gd__nn_tensor *alpha, gd__nn_tensor *agg,
                              gd__nn_tensor *out);
} gd__model_i;

/*
 * Forward and backward of a relational kind over a typed minibatch (the typed_* entries);
 * GD_ERR_INVALID_ARG naming the kind for a homogeneous one.
 */
gd_status gd__model_typed_forward(gd__model *m, const gd_block *blocks, const int64_t *num_nodes,
                                  const gd__nn_tensor *const *x, const int64_t *const *node_ids,
                                  int train, uint64_t dropout_seed, gd__nn_tensor *logits);
gd_status gd__model_typed_backward(gd__model *m, const gd__nn_tensor *dlogits,
                                   gd__nn_tensor *const *dx);
/* The kind runs on typed minibatches (heterogeneous datasets). */
int gd__model_kind_typed(gd__model_kind kind);

/* The kind has an exact layer-wise inference (a mean combine or attention passes). */
int gd__model_i_exact(const gd__model_i *i);

/* The kind's table; NULL outside the enum. */
const gd__model_i *gd__model_kind_iface(gd__model_kind kind);
/* "sage", ...; NULL outside the enum. */
const char *gd__model_kind_name(gd__model_kind kind);
/* The kind named name; GD_ERR_INVALID_ARG naming the known kinds otherwise. */
gd_status gd__model_kind_parse(const char *name, gd__model_kind *out);
/* The known kinds' names, comma-separated, into buf (n bytes), for messages; returns buf. */
const char *gd__model_kind_list(char *buf, size_t n);

/*
 * A config of kind for the common fields given, its capacities zero: call gd__model_capacity
 * (or set max_nodes) before gd__model_create.
 */
gd__model_config gd__model_config_make(gd__model_kind kind, int num_layers, int64_t in_dim,
                                       int64_t hidden_dim, int64_t num_classes, double dropout,
                                       gd_dtype dtype);
/*
 * The node capacities of minibatches of shape s: a hop of d destination nodes and fanout k has
 * at most d (1 + k) source nodes (k capped by the largest in-degree, -1 meaning it), and at
 * most all the nodes; the input layer also by the sampler's own bound. Sets cfg->max_nodes
 * through the kind (a kind with more buffers, e.g. per edge, sizes those too).
 */
void gd__model_capacity(const gd__model_shape *s, gd__model_config *cfg);
/* The kind-independent node bound of gd__model_capacity, for kinds' capacity entries. */
void gd__model_node_capacity(const gd__model_shape *s, gd__model_config *cfg);
/* An estimate of the device bytes a model of cfg takes (0 for an unknown kind). */
int64_t gd__model_bytes(const gd__model_config *cfg);

/*
 * A model of cfg->kind on ctx's backend, its parameters initialised from init_seed (Philox:
 * the same values on every backend), every buffer allocated for cfg's capacities.
 */
gd_status gd__model_create(const gd__nn_ctx *ctx, const gd__model_config *cfg, uint64_t init_seed,
                           gd__model **out);
void gd__model_destroy(gd__model *m);

/*
 * Forward over blocks[0..num_layers) (input layer first; the arrays on the model's device) with
 * x the rows of the input nodes (at least blocks[0].num_src rows of in_dim). train = 1 applies
 * dropout keyed by dropout_seed and, per element, by its node's global id (node_ids: the input
 * nodes' ids on the model's device, whose prefixes are every layer's rows; NULL: by position),
 * so that a node gets the same mask in any subset of the minibatch (data-parallel ranks).
 * *logits is set to a view of the model's output:
 * blocks[L-1].num_dst x num_classes, valid until the next forward. x must stay unchanged until
 * backward.
 */
gd_status gd__model_forward(gd__model *m, const gd_block *blocks, const gd__nn_tensor *x,
                            const int64_t *node_ids, int train, uint64_t dropout_seed,
                            gd__nn_tensor *logits);
/*
 * Backward of the last forward given dlogits (the logits' shape): gradients are added to the
 * params' grads (gd__nn_params_zero_grad first to overwrite them). dx, if non-NULL, receives
 * the gradient of the input rows (blocks[0].num_src x in_dim, overwritten).
 */
gd_status gd__model_backward(gd__model *m, const gd_block *blocks, const gd__nn_tensor *dlogits,
                             gd__nn_tensor *dx);
/* The flat parameter, gradient and Adam-state buffers (owned by the model). */
gd__nn_params *gd__model_params(gd__model *m);
/*
 * Run the model's ops with the op table be from now on: the same device, stream and handles,
 * e.g. a copy of the backend whose entries time each op (bench step --breakdown).
 */
void gd__model_set_backend(gd__model *m, const gd__nn_backend *be);
/* Parameters of the flat buffer (padding included); 0 for NULL. */
int64_t gd__model_num_params(const gd__model *m);

const gd__model_config *gd__model_get_config(const gd__model *m);
const gd__nn_ctx *gd__model_ctx(const gd__model *m);
const gd__model_i *gd__model_iface(const gd__model *m);
/* The kind's own state (what its create made), for tests that look inside one kind. */
void *gd__model_context(gd__model *m);
/* The width of layer l's input (l = 0: in_dim), or of the logits (l = num_layers). */
int64_t gd__model_dim(const gd__model *m, int l);

/*
 * Layer-wise exact inference (train/infer.c) of a model whose layer l is a function of the mean
 * of each node's in-neighbour rows (agg) and of its own row (self): out = layer_l(agg, self),
 * then ReLU in place when relu is set. agg and self are n x dim(l), out n x dim(l + 1) and must
 * not alias them. A kind without that form fails with GD_ERR_UNSUPPORTED;
 * gd__model_has_layer_combine tells before any work.
 */
int gd__model_has_layer_combine(const gd__model *m);
gd_status gd__model_layer_combine(gd__model *m, int l, const gd__nn_tensor *agg,
                                  const gd__nn_tensor *self, gd__nn_tensor *out, int relu);
/* The attention passes of gd__model_i (attn_*); gd__model_has_attention tells they exist. */
int gd__model_has_attention(const gd__model *m);
void gd__model_attn_dims(const gd__model *m, int l, int64_t *in_cols, int64_t *out_cols,
                         int64_t *proj_cols, int64_t *heads);
gd_status gd__model_attn_project(gd__model *m, int l, const gd__nn_tensor *h, gd__nn_tensor *p,
                                 gd__nn_tensor *ssrc, gd__nn_tensor *sdst);
gd_status gd__model_attn_combine(gd__model *m, int l, const gd_block *blk, int64_t self_offset,
                                 const gd__nn_tensor *p, const gd__nn_tensor *ssrc,
                                 const gd__nn_tensor *sdst, gd__nn_tensor *alpha,
                                 gd__nn_tensor *agg, gd__nn_tensor *out);

#ifdef __cplusplus
}
#endif

#endif /* GD_NN_MODEL_H */
