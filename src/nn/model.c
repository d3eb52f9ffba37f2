/*
 * The model interface (model.h): the registry of kinds, the node capacities every kind shares,
 * and the handle that forwards each call to its kind's table. The handle keeps the config and
 * the nn context beside the kind's own state so that callers read the shape of any model the
 * same way.
 */
#include "nn/model.h"
#include "nn/gat_model.h"
#include "nn/rgat.h"
#include "nn/rsage.h"
#include "nn/sage.h"

#include <stdio.h>
#include <string.h>

/* Every kind, in the order of gd__model_kind. */
static const gd__model_i *const kinds[GD__MODEL_KIND_COUNT] = {
    &gd__sage_model, &gd__gat_model_i, &gd__rsage_model_i, &gd__rgat_model_i, &gd__rgcn_model_i};

struct gd__model {
    const gd__model_i *iface;
    void *context; /* the kind's state, made by iface->create */
    gd__model_config cfg;
    gd__nn_ctx ctx;
};

const gd__model_i *gd__model_kind_iface(gd__model_kind kind) {
    return (int)kind >= 0 && kind < GD__MODEL_KIND_COUNT ? kinds[kind] : NULL;
}

const char *gd__model_kind_name(gd__model_kind kind) {
    const gd__model_i *i = gd__model_kind_iface(kind);
    return i ? i->name : NULL;
}

const char *gd__model_kind_list(char *buf, size_t n) {
    size_t at = 0;
    if (n) buf[0] = '\0';
    for (int k = 0; k < GD__MODEL_KIND_COUNT && at < n; k++)
        at += (size_t)snprintf(buf + at, n - at, "%s%s", k ? ", " : "", kinds[k]->name);
    return buf;
}

gd_status gd__model_kind_parse(const char *name, gd__model_kind *out) {
    for (int k = 0; k < GD__MODEL_KIND_COUNT; k++)
        if (name && strcmp(name, kinds[k]->name) == 0) {
            *out = (gd__model_kind)k;
            return GD_OK;
        }
    char known[256];
    return gd__error(GD_ERR_INVALID_ARG, "unknown model kind '%s': this build knows %s",
                     name ? name : "(null)", gd__model_kind_list(known, sizeof known));
}

gd__model_config gd__model_config_make(gd__model_kind kind, int num_layers, int64_t in_dim,
                                       int64_t hidden_dim, int64_t num_classes, double dropout,
                                       gd_dtype dtype) {
    return (gd__model_config){.kind = kind,
                              .num_layers = num_layers,
                              .in_dim = in_dim,
                              .hidden_dim = hidden_dim,
                              .num_classes = num_classes,
                              .dropout = dropout,
                              .dtype = dtype};
}

void gd__model_node_capacity(const gd__model_shape *s, gd__model_config *cfg) {
    const int L = s->num_layers;
    int64_t nodes = s->batch;
    cfg->max_nodes[L] = nodes;
    for (int h = 0; h < L; h++) {
        const int64_t f = s->fanouts[h];
        const int64_t k = f < 0 ? s->max_degree : f < s->max_degree ? f : s->max_degree;
        int64_t next;
        if (gd__mul_overflow_i64(nodes, k + 1, &next)) next = INT64_MAX;
        nodes = next < s->num_nodes ? next : s->num_nodes;
        cfg->max_nodes[L - 1 - h] = nodes;
    }
    if (s->max_input_nodes < cfg->max_nodes[0]) cfg->max_nodes[0] = s->max_input_nodes;
}

void gd__model_capacity(const gd__model_shape *s, gd__model_config *cfg) {
    const gd__model_i *i = gd__model_kind_iface(cfg->kind);
    if (i)
        i->capacity(s, cfg);
    else
        gd__model_node_capacity(s, cfg);
}

int64_t gd__model_bytes(const gd__model_config *cfg) {
    const gd__model_i *i = gd__model_kind_iface(cfg->kind);
    return i ? i->bytes(cfg) : 0;
}

gd_status gd__model_create(const gd__nn_ctx *ctx, const gd__model_config *cfg, uint64_t init_seed,
                           gd__model **out) {
    gd_status st = GD_OK;
    gd__model *m = NULL;
    GD_REQUIRE(ctx && cfg && out, GD_ERR_INVALID_ARG, "model: ctx, config and out must be given");
    *out = NULL;
    const gd__model_i *iface = gd__model_kind_iface(cfg->kind);
    char known[256];
    GD_REQUIRE(iface, GD_ERR_INVALID_ARG,
               "model: kind %d is not a model kind (this build knows %s)", (int)cfg->kind,
               gd__model_kind_list(known, sizeof known));
    m = gd_calloc(1, sizeof *m);
    GD_REQUIRE(m, GD_ERR_NO_MEMORY, "out of memory allocating a %s model", iface->title);
    m->iface = iface;
    m->cfg = *cfg;
    m->ctx = *ctx;
    GD_CHECK(iface->create(ctx, cfg, init_seed, &m->context));
    *out = m;
    return GD_OK;
fail:
    gd__model_destroy(m);
    return st;
}

void gd__model_destroy(gd__model *m) {
    if (!m) return;
    if (m->context) m->iface->destroy(m->context);
    gd_free(m);
}

/* A relational kind asked to run on a homogeneous minibatch. */
static gd_status typed_only(const gd__model *m) {
    return gd__error(GD_ERR_INVALID_ARG,
                     "model %s (%s) trains on heterogeneous datasets (node and edge types; "
                     "docs/hetero.md): this minibatch is homogeneous; use --model sage or gat",
                     m->iface->name, m->iface->title);
}

gd_status gd__model_forward(gd__model *m, const gd_block *blocks, const gd__nn_tensor *x,
                            const int64_t *node_ids, int train, uint64_t dropout_seed,
                            gd__nn_tensor *logits) {
    if (!m) return gd__error(GD_ERR_INVALID_ARG, "model forward: the model is NULL");
    if (!m->iface->forward) return typed_only(m);
    return m->iface->forward(m->context, blocks, x, node_ids, train, dropout_seed, logits);
}

gd_status gd__model_backward(gd__model *m, const gd_block *blocks, const gd__nn_tensor *dlogits,
                             gd__nn_tensor *dx) {
    if (!m) return gd__error(GD_ERR_INVALID_ARG, "model backward: the model is NULL");
    if (!m->iface->backward) return typed_only(m);
    return m->iface->backward(m->context, blocks, dlogits, dx);
}

gd_status gd__model_typed_forward(gd__model *m, const gd_block *blocks, const int64_t *num_nodes,
                                  const gd__nn_tensor *const *x, const int64_t *const *node_ids,
                                  int train, uint64_t dropout_seed, gd__nn_tensor *logits) {
    if (!m) return gd__error(GD_ERR_INVALID_ARG, "model forward: the model is NULL");
    if (!m->iface->typed_forward)
        return gd__error(GD_ERR_INVALID_ARG,
                         "model %s runs on homogeneous minibatches, not typed ones; a "
                         "heterogeneous dataset needs a relational model (rsage, rgcn, rgat)",
                         m->iface->name);
    return m->iface->typed_forward(m->context, blocks, num_nodes, x, node_ids, train, dropout_seed,
                                   logits);
}

gd_status gd__model_typed_backward(gd__model *m, const gd__nn_tensor *dlogits,
                                   gd__nn_tensor *const *dx) {
    if (!m) return gd__error(GD_ERR_INVALID_ARG, "model backward: the model is NULL");
    if (!m->iface->typed_backward)
        return gd__error(GD_ERR_INVALID_ARG,
                         "model %s runs on homogeneous minibatches, not typed ones",
                         m->iface->name);
    return m->iface->typed_backward(m->context, dlogits, dx);
}

int gd__model_kind_typed(gd__model_kind kind) {
    const gd__model_i *i = gd__model_kind_iface(kind);
    return i && i->typed_forward != NULL;
}

gd__nn_params *gd__model_params(gd__model *m) {
    return m->iface->params(m->context);
}

void gd__model_set_backend(gd__model *m, const gd__nn_backend *be) {
    m->ctx.be = be;
    m->iface->set_backend(m->context, be);
}

int64_t gd__model_num_params(const gd__model *m) {
    return m ? m->iface->params(m->context)->numel : 0;
}

const gd__model_config *gd__model_get_config(const gd__model *m) {
    return &m->cfg;
}

const gd__nn_ctx *gd__model_ctx(const gd__model *m) {
    return &m->ctx;
}

const gd__model_i *gd__model_iface(const gd__model *m) {
    return m->iface;
}

void *gd__model_context(gd__model *m) {
    return m->context;
}

int64_t gd__model_dim(const gd__model *m, int l) {
    return l == 0 ? m->cfg.in_dim : l == m->cfg.num_layers ? m->cfg.num_classes : m->cfg.hidden_dim;
}

int gd__model_i_exact(const gd__model_i *i) {
    return i && (i->layer_combine != NULL || i->attn_combine != NULL);
}

int gd__model_has_attention(const gd__model *m) {
    return m && m->iface->attn_combine != NULL;
}

void gd__model_attn_dims(const gd__model *m, int l, int64_t *in_cols, int64_t *out_cols,
                         int64_t *proj_cols, int64_t *heads) {
    m->iface->attn_dims(m->context, l, in_cols, out_cols, proj_cols, heads);
}

gd_status gd__model_attn_project(gd__model *m, int l, const gd__nn_tensor *h, gd__nn_tensor *p,
                                 gd__nn_tensor *ssrc, gd__nn_tensor *sdst) {
    if (!gd__model_has_attention(m))
        return gd__error(GD_ERR_UNSUPPORTED, "model: a %s model has no attention layers",
                         m ? m->iface->title : "(null)");
    return m->iface->attn_project(m->context, l, h, p, ssrc, sdst);
}

gd_status gd__model_attn_combine(gd__model *m, int l, const gd_block *blk, int64_t self_offset,
                                 const gd__nn_tensor *p, const gd__nn_tensor *ssrc,
                                 const gd__nn_tensor *sdst, gd__nn_tensor *alpha,
                                 gd__nn_tensor *agg, gd__nn_tensor *out) {
    if (!gd__model_has_attention(m))
        return gd__error(GD_ERR_UNSUPPORTED, "model: a %s model has no attention layers",
                         m ? m->iface->title : "(null)");
    return m->iface->attn_combine(m->context, l, blk, self_offset, p, ssrc, sdst, alpha, agg, out);
}

int gd__model_has_layer_combine(const gd__model *m) {
    return m && m->iface->layer_combine != NULL;
}

gd_status gd__model_layer_combine(gd__model *m, int l, const gd__nn_tensor *agg,
                                  const gd__nn_tensor *self, gd__nn_tensor *out, int relu) {
    if (!gd__model_has_layer_combine(m))
        return gd__error(GD_ERR_UNSUPPORTED,
                         "model: a %s model has no layer-wise form (mean aggregate and self row) "
                         "for exact inference",
                         m ? m->iface->title : "(null)");
    return m->iface->layer_combine(m->context, l, agg, self, out, relu);
}
