/*
 * Relational GAT ("R-GAT", rgat.c), the model of MLPerf's GNN benchmark (IGBH), over the typed
 * minibatches of a heterogeneous graph: per layer PyG's
 *     HeteroConv({relation: GATConv((-1, -1), F, heads=H, add_self_loops=False)}, aggr="sum"),
 * that is one bipartite GATConv per relation, whose outputs are summed per destination type.
 * It shares R-SAGE's config (gd__rsage_config: schema, per-type input widths, capacities per
 * layer and type) and its typed minibatch (gd__rsage_forward documents it), and adds the
 * attention heads and the attention dropout. It is built from the backend-agnostic ops of
 * nn/internal.h (the projections, biases, ReLU, dropout) and the bipartite attention ops of
 * gat.h, which run on the CPU reference or the CUDA kernels by the context's backend, as GAT's
 * do (gat_model.c).
 */
#ifndef GD_NN_RGAT_H
#define GD_NN_RGAT_H

#include "nn/gat.h"
#include "nn/rsage.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Heads a layer may have at most (as GAT). */
#define GD__RGAT_MAX_HEADS 64
/* The negative slope of the LeakyReLU on the attention scores (PyG's GATConv default). */
#define GD__RGAT_SLOPE 0.2
/*
 * Philox streams of the dropouts: type t's hidden output of layer l draws from stream
 * l * GD__RSAGE_MAX_TYPES + t (as R-SAGE), relation r's attention weights of layer l from
 * GD__RGAT_ATTN_STREAM + l * GD__RSAGE_MAX_RELATIONS + r, so that no two masks share a stream.
 */
#define GD__RGAT_ATTN_STREAM 1024u

/* Where one parameter tensor of a relation lives: rows from `row` of flat tensor `tensor`
 * (-1: the tensor is absent, a featureless side's projection). */
typedef struct {
    int tensor;
    int64_t row;
} gd__rgat_at;

/*
 * Layer l's parameters of relation r: W_src (in_src x H F), W_dst (in_dst x H F), att_src and
 * att_dst (H x F each, head k's vector in row k) and the bias (1 x H F in a hidden layer, whose
 * heads are concatenated; 1 x F in the last, whose heads are averaged). used is 0 for the
 * relations of the last layer whose destination is not the target type: they feed no logit, so
 * they have no parameters.
 */
typedef struct {
    int used;
    gd__rgat_at w_src, w_dst, att_src, att_dst, bias;
} gd__rgat_slot;

/* Views of one relation's parameters (or of their gradients); an absent W has 0 rows. */
typedef struct {
    gd__nn_tensor w_src, w_dst, att_src, att_dst, bias;
} gd__rgat_rel;

/*
 * The model. Layer l has H heads of F_l features (F_l = hidden_dim below the last layer,
 * num_classes in it); its input of type t is h^l_t (h^0_t = x_t, in_dim[t] wide; H hidden_dim
 * wide above). For each relation r from type s into type t, and each destination v of it:
 *     p_r = h^l_s W_src[r],   q_r = h^l_t[v] W_dst[r]                       (H x F_l each)
 *     e(u, v, k) = LeakyReLU(p_r[u, k] . att_src[r, k] + q_r[v, k] . att_dst[r, k], 0.2)
 *     alpha(u, v, k) = softmax of e over v's sampled in-neighbours u of relation r
 *     m_r[v, k] = sum_u alpha(u, v, k) p_r[u, k]          (attention dropout on alpha, training)
 * and, over the relations into t,
 *     z^l_t[v] = sum_r (concat_k m_r[v, k] + b[r])        for l < L - 1
 *     h^{l+1}_t = dropout(relu(z^l_t))
 *     logits[v] = sum_r (mean_k m_r[v, k] + b[r])         for l = L - 1, the target type
 * (PyG's GATConv with concat=True in hidden layers and concat=False in the last, as the GAT
 * kind and PyG's GAT examples stack it). A destination without edges of relation r gets m_r = 0
 * and so the bias alone from it, as PyG's scatter of no messages; there are no self loops (a
 * relation joins two node sets), so a node's own features reach its output only through the
 * attention scores (att_dst) and the relations that lead back to its type. A type that no
 * relation enters has h^{l+1}_t = 0, as in R-SAGE. A featureless type (in_dim 0) projects to 0
 * in layer 0: a relation from it adds its bias alone, a relation into it scores by its sources.
 */
typedef struct {
    gd__rsage_config cfg;
    int heads;
    double attn_dropout;
    gd__nn_ctx ctx;
    int has_in[GD__RSAGE_MAX_TYPES]; /* some relation enters the type */
    gd__nn_params params;
    gd__rgat_slot slot[GD__RSAGE_MAX_LAYERS][GD__RSAGE_MAX_RELATIONS];
    /*
     * Saved by the forward pass for the backward pass (empty tensors where nothing is kept):
     * each type's output (z^l_t, then h^{l+1}_t in place; the logits in the last layer), the
     * last layer's sum of the heads before their mean, and per relation its projections, scores
     * and attention weights (before and after the attention dropout).
     */
    gd__nn_tensor out[GD__RSAGE_MAX_LAYERS][GD__RSAGE_MAX_TYPES];
    gd__nn_tensor sum;
    gd__nn_tensor ps[GD__RSAGE_MAX_LAYERS][GD__RSAGE_MAX_RELATIONS];
    gd__nn_tensor pd[GD__RSAGE_MAX_LAYERS][GD__RSAGE_MAX_RELATIONS];
    gd__nn_tensor ss[GD__RSAGE_MAX_LAYERS][GD__RSAGE_MAX_RELATIONS];
    gd__nn_tensor sd[GD__RSAGE_MAX_LAYERS][GD__RSAGE_MAX_RELATIONS];
    gd__nn_tensor alpha[GD__RSAGE_MAX_LAYERS][GD__RSAGE_MAX_RELATIONS];
    gd__nn_tensor alphad[GD__RSAGE_MAX_LAYERS][GD__RSAGE_MAX_RELATIONS];
    /* Backward scratch, each sized for the largest relation or type that uses it. */
    gd__nn_tensor dh[2][GD__RSAGE_MAX_TYPES]; /* ping-pong gradients of the hidden inputs */
    gd__nn_tensor dss, dsd, dalpha, dsum;
    /* Each relation's projection gradients, kept for the layer's grouped backward GEMM. */
    gd__nn_tensor dps[GD__RSAGE_MAX_RELATIONS], dpd[GD__RSAGE_MAX_RELATIONS];
    gd__nn_grouped gemm; /* a layer's projections of every relation as one grouped GEMM */
    /* The attention dropout's key of each edge (gd__gat_bip_edge_keys), with node ids. */
    int64_t *keys;
    /* The last forward pass: its minibatch, inputs, and whether dropout ran with which key. */
    int have_forward;
    gd_block blocks[GD__RSAGE_MAX_LAYERS * GD__RSAGE_MAX_RELATIONS];
    int64_t num_nodes[(GD__RSAGE_MAX_LAYERS + 1) * GD__RSAGE_MAX_TYPES];
    gd__nn_tensor input[GD__RSAGE_MAX_TYPES]; /* views of x, num_nodes[t] rows */
    const int64_t *node_ids[GD__RSAGE_MAX_TYPES];
    int train;
    uint64_t dropout_seed;
} gd__rgat;

/*
 * R-GAT as a kind of the model interface (rgat_model.c), "rgat": its config's `typed` is the
 * gd__rsage_config, and its heads and attn_dropout fields are the model's. The homogeneous
 * forward and backward refuse to run; the trainer's heterogeneous path calls the typed ones.
 */
extern const gd__model_i gd__rgat_model_i;

/*
 * A model of cfg with heads (1..GD__RGAT_MAX_HEADS; 0 means 1) and attention dropout
 * attn_dropout ([0, 1)) on ctx's backend, every buffer allocated for cfg's capacities. The
 * parameters live in one flat buffer (nn/params.c), uniform in +-1/sqrt(fan_in) from init_seed
 * (Philox: the same values on every backend): W_src and the bias with the source width as
 * fan-in (1 for a featureless source), W_dst with the destination's, att_src and att_dst with F.
 */
gd_status gd__rgat_create(const gd__nn_ctx *ctx, const gd__rsage_config *cfg, int heads,
                          double attn_dropout, uint64_t init_seed, gd__rgat **out);
void gd__rgat_destroy(gd__rgat *m);

/*
 * Forward over a typed minibatch, with the arguments and checks of gd__rsage_forward. The
 * attention dropout of relation r (training, attn_dropout > 0) is keyed by its edges' two
 * global node ids (gd__gat_edge_key(dst id, src id), ids from node_ids of the two types), so an
 * edge keeps its mask in any subset of the minibatch; by edge position without node ids.
 */
gd_status gd__rgat_forward(gd__rgat *m, const gd_block *blocks, const int64_t *num_nodes,
                           const gd__nn_tensor *const *x, const int64_t *const *node_ids, int train,
                           uint64_t dropout_seed, gd__nn_tensor *logits);
/* Backward of the last forward, as gd__rsage_backward: gradients added, dx[t] overwritten. */
gd_status gd__rgat_backward(gd__rgat *m, const gd__nn_tensor *dlogits, gd__nn_tensor *const *dx);

gd__nn_params *gd__rgat_params(gd__rgat *m);
/* Layer l's input width of type t (l = 0: in_dim[t]; H hidden_dim above; l = L: classes). */
int64_t gd__rgat_dim(const gd__rgat *m, int l, int t);
/* Views of layer l's parameters of relation r (grads: of their gradients); GD_ERR_INVALID_ARG
 * for a relation without parameters. */
gd_status gd__rgat_weights(const gd__rgat *m, int l, int r, int grads, gd__rgat_rel *w);
/* An estimate of the device bytes of a model of cfg and heads: parameters, gradients, Adam
 * state, activations and scratch (0 for a config that create would refuse). */
int64_t gd__rgat_bytes(const gd__rsage_config *cfg, int heads, double attn_dropout);

#ifdef __cplusplus
}
#endif

#endif /* GD_NN_RGAT_H */
