/*
 * GAT (issue 17, item 1): PyG's GATConv stacked as in its BasicGNN, on the ops of gat.h. For
 * layer l with block B_l, input h_l (rows = B_l's sources), H heads of F_l features:
 *     p_l = h_l W_l                                   (num_src x H F_l)
 *     alpha_l = softmax over each destination's edges and self loop of
 *               LeakyReLU(p_l[src] a_src + p_l[dst] a_dst, 0.2), per head
 *     z_l = concat_heads(sum alpha_l p_l[src]) + b_l                 for l < L - 1
 *     h_{l+1} = dropout(relu(z_l))
 *     logits = mean_heads(sum alpha_{L-1} p_{L-1}[src]) + b_{L-1}
 * with attention dropout on alpha in training (PyG's `dropout` argument of GATConv). Hidden
 * layers have F_l = hidden_dim features per head (so h_{l+1} is H x hidden_dim wide, as
 * GATConv(hidden, heads=H) gives), the last F = num_classes. The parameters live in one flat
 * buffer: W, a_src, a_dst, b for each layer. Every buffer is sized at create from the node and
 * edge capacities; forward and backward allocate nothing. The ops run on the CPU reference or
 * the GPU kernels of gat.h by the context's backend. It is the kind "gat" of the model
 * interface (model.h); it has no layer-wise exact inference yet.
 */
#ifndef GD_NN_GAT_MODEL_H
#define GD_NN_GAT_MODEL_H

#include "nn/gat.h"
#include "nn/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* GAT reads the common config and its heads, attention dropout and edge capacities. */
typedef gd__model_config gd__gat_config;

/* GAT's table of the model interface (registered in model.c). */
extern const gd__model_i gd__gat_model_i;

typedef struct {
    gd__gat_config cfg;
    gd__nn_ctx ctx;
    int64_t in[GD__MODEL_MAX_LAYERS], f[GD__MODEL_MAX_LAYERS], out[GD__MODEL_MAX_LAYERS];
    gd__nn_params params;
    int w[GD__MODEL_MAX_LAYERS], asrc[GD__MODEL_MAX_LAYERS], adst[GD__MODEL_MAX_LAYERS],
        b[GD__MODEL_MAX_LAYERS];
    /* Saved by the forward pass for the backward pass, per layer. */
    gd__nn_tensor p[GD__MODEL_MAX_LAYERS]; /* h_l W_l */
    gd__nn_tensor ssrc[GD__MODEL_MAX_LAYERS], sdst[GD__MODEL_MAX_LAYERS];
    gd__nn_tensor alpha[GD__MODEL_MAX_LAYERS];  /* the softmax */
    gd__nn_tensor alphad[GD__MODEL_MAX_LAYERS]; /* after attention dropout (training) */
    /* The aggregate, heads concatenated; in hidden layers then z_l = agg + b and h_{l+1} =
     * dropout(relu(z_l)), in place. */
    gd__nn_tensor agg[GD__MODEL_MAX_LAYERS];
    gd__nn_tensor z[GD__MODEL_MAX_LAYERS]; /* the last layer's logits (the others: none) */
    /* Backward scratch, sized for the largest layer. */
    gd__nn_tensor dp, dagg, dalpha, dss, dsd, dh[2];
    /* The attention dropout's key of each edge row (gd__gat_edge_keys), when node ids are given. */
    int64_t *keys;
    /* The last forward pass. */
    int64_t rows[GD__MODEL_MAX_LAYERS + 1];
    int train;
    uint64_t dropout_seed;
    const int64_t *node_ids;
    const gd__nn_tensor *input;
} gd__gat_model;

gd_status gd__gat_model_create(const gd__nn_ctx *ctx, const gd__gat_config *cfg, uint64_t init_seed,
                               gd__gat_model **out);
void gd__gat_model_destroy(gd__gat_model *m);
/* As gd__model_forward (model.h); layer l's feature dropout draws from Philox stream l, its
 * attention dropout from stream 64 + l (keyed by position). */
gd_status gd__gat_model_forward(gd__gat_model *m, const gd_block *blocks, const gd__nn_tensor *x,
                                const int64_t *node_ids, int train, uint64_t dropout_seed,
                                gd__nn_tensor *logits);
/* As gd__model_backward: gradients added to m->params.grads; dx (optional) overwritten. */
gd_status gd__gat_model_backward(gd__gat_model *m, const gd_block *blocks,
                                 const gd__nn_tensor *dlogits, gd__nn_tensor *dx);

#ifdef __cplusplus
}
#endif

#endif /* GD_NN_GAT_MODEL_H */
