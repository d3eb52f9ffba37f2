/*
 * Relational GraphSAGE ("R-SAGE", rsage.c) over the typed minibatches of a heterogeneous graph:
 * the function of PyG's to_hetero(SAGEConv) with aggr="sum", that is a HeteroConv holding one
 * SAGEConv(aggr="mean", root_weight=True, bias=True) per relation whose outputs are summed per
 * destination node type. It is built only from the backend-agnostic ops of nn/internal.h, so
 * the CPU and the CUDA backends run it unchanged, as they run GraphSAGE (sage.c).
 *
 * It is an internal module that the nn tests call directly. The model interface (model.h) and
 * the trainer know only homogeneous minibatches (one block per layer, one input tensor); the
 * typed dataset and the typed sampler that will feed this model are being built separately
 * (docs/hetero.md), and the interface gains a typed forward when they land.
 */
#ifndef GD_NN_RSAGE_H
#define GD_NN_RSAGE_H

#include "nn/model.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GD__RSAGE_MAX_TYPES 16
#define GD__RSAGE_MAX_RELATIONS 32
#define GD__RSAGE_MAX_LAYERS GD__MODEL_MAX_LAYERS

/*
 * The schema: T node types (numbered 0..T-1) and R relations; relation r carries messages from
 * nodes of type rel_src[r] to nodes of type rel_dst[r] (a type may be both, and two relations
 * may join the same pair of types). The seeds, and so the logits, are of type target_type,
 * which must receive at least one relation (otherwise its logits would not depend on anything).
 */
typedef struct {
    int num_types;     /* T: 1..GD__RSAGE_MAX_TYPES */
    int num_relations; /* R: 1..GD__RSAGE_MAX_RELATIONS */
    int rel_src[GD__RSAGE_MAX_RELATIONS];
    int rel_dst[GD__RSAGE_MAX_RELATIONS];
    int target_type;
} gd__rsage_schema;

/*
 * The model's shape and capacities. Layer l's input width of type t is in_dim[t] for l = 0 and
 * hidden_dim above (the same for every type); the last layer gives num_classes logits. A type
 * with in_dim 0 has no features: its layer-0 input is empty, a relation from it contributes only
 * its bias in layer 0 (the mean of empty rows times an empty weight), a relation into it has no
 * root weight in layer 0, and its nodes get hidden rows from layer 1 on like every other type.
 *
 * Capacities, from which create sizes every buffer (forward and backward allocate nothing):
 * max_nodes[l * T + t] is the most nodes of type t at layer l (l = 0..L, layer 0 the input
 * nodes, layer L the seeds), max_edges[l * R + r] the most edges of relation r's block in layer
 * l. They are laid out as the minibatch's num_nodes and blocks arrays are (see forward).
 */
typedef struct {
    gd__rsage_schema schema;
    int64_t in_dim[GD__RSAGE_MAX_TYPES]; /* >= 0; 0 = the type has no features */
    int64_t hidden_dim;                  /* > 0 when num_layers > 1 */
    int64_t num_classes;                 /* > 0 */
    int num_layers;                      /* L: 1..GD__RSAGE_MAX_LAYERS */
    double dropout;                      /* p in [0, 1), after every hidden layer, training only */
    gd_dtype dtype;                      /* GD_DTYPE_FLOAT32 (training) or GD_DTYPE_FLOAT64 */
    int64_t max_nodes[(GD__RSAGE_MAX_LAYERS + 1) * GD__RSAGE_MAX_TYPES];
    int64_t max_edges[GD__RSAGE_MAX_LAYERS * GD__RSAGE_MAX_RELATIONS];
    /*
     * 0: R-SAGE (a root weight and a bias per relation). 1: R-GCN (PyG's RGCNConv, DGL's
     * RelGraphConv): a root weight and a bias per destination node type, the relations keeping
     * only their neighbour weights W_l[r]; see gd__rsage below. The model kind "rgcn" sets it.
     */
    int root_per_type;
} gd__rsage_config;

/*
 * Where layer l's parameters of relation r live: rows [a_row, a_row + in_src + 1) of parameter
 * tensor a_tensor hold W_l[r] (in_src x out) followed by the bias b[r] (one row), and rows
 * [r_row, r_row + in_dst) of tensor r_tensor hold W_root[r] (in_dst x out; r_tensor is -1 when
 * the destination type's input width is 0). used is 0 for the relations of the last layer whose
 * destination is not the target type: they feed no logit, so they have no parameters.
 */
typedef struct {
    int used;
    int a_tensor, r_tensor;
    int64_t a_row, r_row;
} gd__rsage_slot;

/*
 * The model. R-SAGE (root_per_type 0): for layer l (inputs h^l_t, one tensor per type t, h^0_t =
 * x_t) and each type t that receives a relation, z^l_t = sum over r with rel_dst[r] = t of mean_{u
 * in N_r(v)} h^l_{rel_src[r]}(u) W_l[r] + b[r] + h^l_t(v) W_root[r] h^{l+1}_t =
 * dropout(relu(z^l_t))  for l < L - 1;  logits = z^{L-1}_target, with a zero mean for a node
 * without neighbours of relation r (as PyG's scatter mean). A type that no relation enters has
 * h^{l+1}_t = 0 (PyG's HeteroConv gives it no output at all; zeros are what a layer that reads it
 * then sees). The last layer computes the target type only.
 *
 * R-GCN (root_per_type 1): one root weight and one bias per destination type instead,
 *     z^l_t = h^l_t(v) W_root_l[t] + b_l[t] + sum over r with rel_dst[r] = t of
 *                 mean_{u in N_r(v)} h^l_{rel_src[r]}(u) W_l[r],
 * computed for every type (the root and bias give a node an output whether or not a relation
 * enters its type), the target alone in the last layer. A relation from a featureless type
 * adds nothing in layer 0 (an empty mean times an empty weight); a featureless type's layer-0
 * output is its bias and its relations. PyG's RGCNConv shares one root over all nodes because
 * its node features have one width; with a width per type, one root per type is the natural
 * form (and with equal widths and one type, the same function).
 */
typedef struct {
    gd__rsage_config cfg;
    gd__nn_ctx ctx;
    int has_in[GD__RSAGE_MAX_TYPES]; /* the type has an output: some relation enters it
                                      * (R-SAGE); every type (R-GCN) */
    gd__nn_params params;
    gd__rsage_slot slot[GD__RSAGE_MAX_LAYERS][GD__RSAGE_MAX_RELATIONS];
    /*
     * R-GCN: layer l's root of type t, rows [a_row, a_row + in_t + 1) of a_tensor holding
     * W_root_l[t] (in_t x out) then b_l[t]. The relations' slots then hold W_l[r] alone (a_tensor
     * -1 for a featureless source in layer 0) and r_tensor -1.
     */
    gd__rsage_slot root[GD__RSAGE_MAX_LAYERS][GD__RSAGE_MAX_TYPES];
    /* Saved by the forward pass for the backward pass (empty tensors where nothing is kept). */
    gd__nn_tensor out[GD__RSAGE_MAX_LAYERS][GD__RSAGE_MAX_TYPES];     /* z^l_t, then h^{l+1}_t */
    gd__nn_tensor agg[GD__RSAGE_MAX_LAYERS][GD__RSAGE_MAX_RELATIONS]; /* the means of relation r */
    gd__nn_tensor dh[2][GD__RSAGE_MAX_TYPES];    /* ping-pong gradients of the hidden inputs */
    gd__nn_tensor dagg[GD__RSAGE_MAX_RELATIONS]; /* gradient of each relation's mean */
    gd__nn_grouped gemm; /* a layer's products of every relation as one grouped GEMM */
    /* The last forward pass: its minibatch, inputs, and whether dropout ran with which key. */
    int have_forward;
    gd_block blocks[GD__RSAGE_MAX_LAYERS * GD__RSAGE_MAX_RELATIONS];
    int64_t num_nodes[(GD__RSAGE_MAX_LAYERS + 1) * GD__RSAGE_MAX_TYPES];
    gd__nn_tensor input[GD__RSAGE_MAX_TYPES]; /* views of x, num_nodes[t] rows */
    const int64_t *node_ids[GD__RSAGE_MAX_TYPES];
    int train;
    uint64_t dropout_seed;
} gd__rsage;

/*
 * A model of cfg on ctx's backend, every buffer allocated for cfg's capacities. The parameters
 * live in one flat buffer (nn/params.c), initialised from init_seed with GraphSAGE's scheme
 * (uniform in +-1/sqrt(fan_in), Philox: the same values on every backend): W_l[r] and b[r] with
 * the source type's width as fan-in (1 for a featureless source, whose bias is then the whole
 * relation), W_root[r] with the destination type's.
 */
/*
 * R-SAGE as a kind of the model interface (rsage_model.c), "rsage": its config's `typed` is the
 * gd__rsage_config. The interface's homogeneous forward and backward refuse to run (a
 * homogeneous minibatch has no types); the trainer's heterogeneous path calls gd__rsage_forward
 * and gd__rsage_backward on gd__model_context. Parameters, Adam and checkpoints go through the
 * interface as for every kind.
 */
extern const gd__model_i gd__rsage_model_i;
/* R-GCN as a kind, "rgcn": R-SAGE's kind with root_per_type set on a copy of the config. */
extern const gd__model_i gd__rgcn_model_i;

gd_status gd__rsage_create(const gd__nn_ctx *ctx, const gd__rsage_config *cfg, uint64_t init_seed,
                           gd__rsage **out);
void gd__rsage_destroy(gd__rsage *m);

/*
 * Forward over a typed minibatch of L layers (T types, R relations):
 *   num_nodes  (L + 1) * T counts (host memory): num_nodes[l * T + t] nodes of type t at layer
 *              l. A layer's nodes of each type are a prefix of that type's nodes at the layer
 *              below (num_nodes[(l+1) * T + t] <= num_nodes[l * T + t]), as in DGL's blocks.
 *   blocks     L * R blocks (the structs in host memory, their arrays on the model's device):
 *              blocks[l * R + r] is relation r in layer l, a CSC whose num_dst destinations are
 *              the first num_nodes[(l+1) * T + rel_dst[r]] nodes of type rel_dst[r] at layer l,
 *              and whose indices are rows of type rel_src[r] at layer l (num_src =
 *              num_nodes[l * T + rel_src[r]]). The counts are checked (GD_ERR_INVALID_ARG
 *              naming the layer, the relation and the numbers; GD_ERR_RANGE past the
 *              capacities); the indices are trusted, as GraphSAGE trusts its sampler's.
 *   x          T tensors (x[t] may be NULL for a type of in_dim 0): at least num_nodes[t] rows
 *              of in_dim[t], on the model's device, unchanged until backward.
 *   node_ids   NULL, or T pointers (each may be NULL): the global ids of type t's input nodes
 *              on the model's device. Dropout of type t in layer l draws from Philox stream
 *              l * GD__RSAGE_MAX_TYPES + t keyed by (id, column), so a node keeps its mask in any
 *              subset of the minibatch; with NULL by row position.
 * *logits is set to a view of the model's output (num_nodes[L * T + target] x num_classes),
 * valid until the next forward. The blocks' arrays must also stay until backward.
 */
gd_status gd__rsage_forward(gd__rsage *m, const gd_block *blocks, const int64_t *num_nodes,
                            const gd__nn_tensor *const *x, const int64_t *const *node_ids,
                            int train, uint64_t dropout_seed, gd__nn_tensor *logits);
/*
 * Backward of the last forward given dlogits (the logits' shape): the gradients are added to
 * the params' grads (gd__nn_params_zero_grad first to overwrite them). dx, if non-NULL, holds T
 * pointers; a non-NULL dx[t] of a type with features receives the gradient of its input rows
 * (num_nodes[t] x in_dim[t], overwritten).
 */
gd_status gd__rsage_backward(gd__rsage *m, const gd__nn_tensor *dlogits, gd__nn_tensor *const *dx);

/* The flat parameter, gradient and Adam-state buffers (owned by the model). */
gd__nn_params *gd__rsage_params(gd__rsage *m);
/*
 * The checks every typed kind (R-SAGE, R-GAT) makes of this config at create and of a typed
 * minibatch at forward (counts against the schema and the capacities, as gd__rsage_forward
 * documents); kind ("R-SAGE", "R-GAT") opens the messages.
 */
gd_status gd__rsage_check_config(const gd__rsage_config *cfg, const char *kind);
gd_status gd__rsage_check_batch(const gd__rsage_config *cfg, const gd_block *blocks,
                                const int64_t *num_nodes, const char *kind);
/* Layer l's input width of type t (l = 0: in_dim[t]; l = L: num_classes). */
int64_t gd__rsage_dim(const gd__rsage_config *cfg, int l, int t);
/*
 * Views of layer l's parameters of relation r in the parameter buffer, or with grads set in the
 * gradient buffer: W_l (in_src x out), b (1 x out), W_root (in_dst x out; 0 rows when in_dst is
 * 0). GD_ERR_INVALID_ARG for a relation without parameters (see gd__rsage_slot). In an R-GCN
 * model b and W_root have 0 rows (gd__rsage_root_weights gives the per-type ones).
 */
gd_status gd__rsage_weights(const gd__rsage *m, int l, int r, int grads, gd__nn_tensor *w_l,
                            gd__nn_tensor *b, gd__nn_tensor *w_root);
/*
 * R-GCN: views of layer l's root weight W_root_l[t] (in_t x out; 0 rows for a featureless type)
 * and bias b_l[t] (1 x out), parameters or (grads set) their gradients. GD_ERR_INVALID_ARG for
 * an R-SAGE model or a type without parameters in that layer (the last computes the target).
 */
gd_status gd__rsage_root_weights(const gd__rsage *m, int l, int t, int grads, gd__nn_tensor *w_root,
                                 gd__nn_tensor *b);
/*
 * A relation's block as the mean ops take it. Their front-ends check the invariant of a
 * homogeneous block, that the destinations are a prefix of the sources (num_dst <= num_src); a
 * relation joins two node sets, and may have more destinations than sources. Such a block goes
 * to the ops with num_src raised to num_dst and the source rows viewed as that many: the
 * backends touch only the rows that the indices name, all below the real num_src. The caller
 * handles a block without edges itself (its sources may not exist at all). The forward and
 * backward, and the exact inference (train/hetero_infer.c), take their blocks through it.
 */
void gd__rsage_bipartite(const gd_block *b, const gd__nn_tensor *rows_src, gd_block *ob,
                         gd__nn_tensor *orows);
/*
 * Buffer helpers of the typed kinds (R-SAGE, R-GAT): a tensor of rows x cols, or a NULL view of
 * no rows when it would be empty; and *a = max(*a, rows * cols), GD_ERR_OVERFLOW naming `what`.
 */
gd_status gd__typed_alloc_nonempty(const gd__nn_ctx *ctx, gd_dtype dtype, int64_t rows,
                                   int64_t cols, gd__nn_tensor *out);
gd_status gd__typed_grow(int64_t *a, int64_t rows, int64_t cols, const char *what);
/*
 * The typed kinds' forward inputs: x[t] (NULL, or 0 columns, for a featureless type; else at
 * least num_nodes[t] rows of in_dim[t] in the model's dtype) checked and viewed as input[t]
 * (num_nodes[t] rows), node_ids[t] (NULL: none) into ids[t]. GD_ERR_INVALID_ARG naming `what`.
 */
gd_status gd__typed_bind_inputs(const gd__rsage_config *cfg, const gd__nn_ctx *ctx,
                                const int64_t *num_nodes, const gd__nn_tensor *const *x,
                                const int64_t *const *node_ids, gd__nn_tensor *input,
                                const int64_t **ids, const char *what);
/*
 * The typed kinds' backward arguments against the last forward's counts: dlogits the target
 * type's logits' shape, each dx[t] (when given, for a featured type) its input rows' shape.
 * GD_ERR_INVALID_ARG naming `what` and both shapes.
 */
gd_status gd__typed_check_backward(const gd__rsage_config *cfg, const int64_t *num_nodes,
                                   const gd__nn_tensor *dlogits, gd__nn_tensor *const *dx,
                                   const char *what);
/* An estimate of the device bytes a model of cfg takes: parameters, gradients, Adam state and
 * activations (0 for a config that create would refuse). */
int64_t gd__rsage_bytes(const gd__rsage_config *cfg);

#ifdef __cplusplus
}
#endif

#endif /* GD_NN_RSAGE_H */
