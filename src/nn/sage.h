/*
 * GraphSAGE with the mean aggregator (sage.c): the first kind of the model interface
 * (model.h), and the default one. Everything outside src/nn/ reaches it through that interface;
 * the functions here are its implementation, and the nn tests call them directly.
 */
#ifndef GD_NN_SAGE_H
#define GD_NN_SAGE_H

#include "nn/model.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GD__SAGE_MAX_LAYERS GD__MODEL_MAX_LAYERS

/* GraphSAGE reads the common config and nothing more (its kind field is not read). */
typedef gd__model_config gd__sage_config;

/* GraphSAGE's table of the model interface (registered in model.c). */
extern const gd__model_i gd__sage_model;

/*
 * GraphSAGE with the mean aggregator, the function of PyG's SAGEConv stacked as in its
 * BasicGNN: for layer l with block B_l and input h_l (rows = B_l's source nodes)
 *     z_l = mean_{B_l}(h_l) W_l + h_l[:num_dst] R_l + b_l
 *     h_{l+1} = dropout(relu(z_l))  for l < L - 1;  logits = z_{L-1}.
 */
typedef struct {
    gd__sage_config cfg;
    gd__nn_ctx ctx;
    int64_t dims[GD__SAGE_MAX_LAYERS + 1]; /* in_dim, hidden..., num_classes */
    gd__nn_params params;
    int w_l[GD__SAGE_MAX_LAYERS], w_r[GD__SAGE_MAX_LAYERS], b[GD__SAGE_MAX_LAYERS];
    /* Saved by the forward pass for the backward pass. */
    gd__nn_tensor agg[GD__SAGE_MAX_LAYERS]; /* mean_{B_l}(h_l): max_nodes[l+1] x dims[l] */
    gd__nn_tensor out[GD__SAGE_MAX_LAYERS]; /* z_l, or h_{l+1} after ReLU and dropout */
    gd__nn_tensor dh[2];                    /* ping-pong gradients of the activations */
    gd__nn_tensor dagg;                     /* gradient of an aggregate */
    /* The last forward pass: its blocks' sizes, whether dropout ran and with which key. */
    int64_t rows[GD__SAGE_MAX_LAYERS + 1];
    int train;
    uint64_t dropout_seed;
    const int64_t *node_ids; /* the dropout's row keys (NULL: positions) */
    const gd__nn_tensor *input;
} gd__sage;

gd_status gd__sage_create(const gd__nn_ctx *ctx, const gd__sage_config *cfg, uint64_t init_seed,
                          gd__sage **out);
void gd__sage_destroy(gd__sage *m);
/* As gd__model_forward (model.h); the dropout of layer l draws from Philox stream l. */
gd_status gd__sage_forward(gd__sage *m, const gd_block *blocks, const gd__nn_tensor *x,
                           const int64_t *node_ids, int train, uint64_t dropout_seed,
                           gd__nn_tensor *logits);
/* As gd__model_backward (model.h): the gradients are added to m->params.grads. */
gd_status gd__sage_backward(gd__sage *m, const gd_block *blocks, const gd__nn_tensor *dlogits,
                            gd__nn_tensor *dx);
/*
 * One layer l of the model in evaluation mode (no dropout) into caller-provided buffers, for
 * layer-wise inference: agg = mean_blk(x) (blk->num_dst x dims[l]), then
 * out = agg W_l + x[:num_dst] R_l + b_l (blk->num_dst x dims[l+1]), then ReLU in place when
 * relu is set (every layer but the last). The same ops in the same order as gd__sage_forward,
 * so it gives exactly that layer's output. blk's arrays and the buffers live on m's device;
 * the model's saved activations are not touched.
 */
gd_status gd__sage_layer_forward(gd__sage *m, int l, const gd_block *blk, const gd__nn_tensor *x,
                                 gd__nn_tensor *agg, gd__nn_tensor *out, int relu);
/*
 * The dense half of gd__sage_layer_forward for an aggregate computed elsewhere (inference
 * aggregates over the whole graph with its own kernel): out = agg W_l + self R_l + b_l, then
 * ReLU in place when relu is set. agg and self are n x dims[l], out n x dims[l+1] and must
 * not alias them.
 */
gd_status gd__sage_layer_combine(gd__sage *m, int l, const gd__nn_tensor *agg,
                                 const gd__nn_tensor *self, gd__nn_tensor *out, int relu);

#ifdef __cplusplus
}
#endif

#endif /* GD_NN_SAGE_H */
