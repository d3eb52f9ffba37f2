/*
 * The GAT model (src/nn/gat_model.h; issue 17, item 1) on the CPU backend over random chained
 * blocks (repeated sources, destinations without neighbours): every parameter's and every input
 * feature's gradient of the softmax cross-entropy against central finite differences in
 * float64, for 1, 2 and 3 layers and 1 to 3 heads, with feature and attention dropout on (a
 * fixed key makes the function deterministic; with more than one head the masks are keyed by
 * node ids, the attention's by each edge's two ids, as data-parallel training keys them); float32
 * against float64; evaluation mode
 * applies no dropout; blocks larger than the model was sized for are refused.
 */
#include "nn/gat_model.h"
#include "test_nn_util.h"

static gd__nn_ctx ctx;

static gd__gat_config config(const t_chain *c, int heads, int64_t in, int64_t hidden, int64_t classes,
                             double dropout, double attn, gd_dtype dtype) {
    gd__gat_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.num_layers = c->layers;
    cfg.in_dim = in;
    cfg.hidden_dim = hidden;
    cfg.num_classes = classes;
    cfg.dropout = dropout;
    cfg.dtype = dtype;
    cfg.heads = heads;
    cfg.attn_dropout = attn;
    for (int l = 0; l <= c->layers; l++) cfg.max_nodes[l] = c->nodes[l] + 2;
    for (int l = 0; l < c->layers; l++) cfg.max_edges[l] = c->blocks[l].num_edges + 3;
    return cfg;
}

typedef struct {
    gd__gat_model *m;
    t_chain *c;
    gd__nn_tensor *x, *loss, *dlogits;
    int64_t *labels;
    uint64_t seed;
    const int64_t *ids; /* the input nodes' global ids (NULL: positions key the dropout) */
} model_case;

static double model_loss(void *u) {
    model_case *k = u;
    gd__nn_tensor logits;
    T_OK(gd__gat_model_forward(k->m, k->c->blocks, k->x, k->ids, 1, k->seed, &logits));
    T_OK(gd__nn_softmax_xent(&ctx, &logits, k->labels, 1.0, k->loss, k->dlogits));
    return t_get(k->loss, 0);
}

static void check_model(uint64_t *state, int layers, int heads) {
    const int64_t batch = 5, in = 4, hidden = 3, classes = 3;
    t_chain c = t_make_chain(state, layers, batch);
    gd__gat_config cfg =
        config(&c, heads, in, hidden, classes, layers > 1 ? 0.3 : 0.0, 0.25, GD_DTYPE_FLOAT64);
    gd__gat_model *m;
    T_OK(gd__gat_model_create(&ctx, &cfg, t_rand(state), &m));
    gd__nn_tensor x = t_tensor(GD_DTYPE_FLOAT64, c.nodes[0], in, state, 1);
    gd__nn_tensor loss = t_tensor(GD_DTYPE_FLOAT64, 1, 1, NULL, 0),
                  dlogits = t_tensor(GD_DTYPE_FLOAT64, batch, classes, NULL, 0);
    gd__nn_tensor dx = t_tensor(GD_DTYPE_FLOAT64, c.nodes[0], in, state, 1);
    int64_t labels[5];
    for (int i = 0; i < batch; i++) labels[i] = (int64_t)(t_rand(state) % classes);
    labels[1] = -1;
    int64_t ids[256];
    T_ASSERT(c.nodes[0] <= 256);
    for (int64_t i = 0; i < c.nodes[0]; i++) ids[i] = 1000003 * (i + 1) + (int64_t)(t_rand(state) % 1000);
    model_case k = {m, &c, &x, &loss, &dlogits, labels, t_rand(state), heads > 1 ? ids : NULL};

    model_loss(&k);
    T_OK(gd__nn_params_zero_grad(&ctx, &m->params));
    T_OK(gd__gat_model_backward(m, c.blocks, &dlogits, &dx));
    gd__nn_tensor grads = t_tensor(GD_DTYPE_FLOAT64, 1, m->params.numel, NULL, 0);
    t_copy(&m->params.grads, &grads);
    const double h = 1e-6;
    double worst = 0;
    gd__nn_tensor *targets[2] = {&m->params.params, &x};
    const gd__nn_tensor *analytic[2] = {&grads, &dx};
    for (int t = 0; t < 2; t++)
        for (int64_t i = 0; i < gd__nn_numel(targets[t]); i++) {
            const double v = t_get(targets[t], i);
            t_set(targets[t], i, v + h);
            const double fp = model_loss(&k);
            t_set(targets[t], i, v - h);
            const double fm = model_loss(&k);
            t_set(targets[t], i, v);
            const double num = (fp - fm) / (2 * h), err = t_grad_err(t_get(analytic[t], i), num);
            if (err > worst) worst = err;
            if (err > 1e-6)
                T_FAIL_("%d layers, %d heads: gradient of %s element %lld: analytic %.10g, "
                        "finite difference %.10g",
                        layers, heads, t ? "input" : "parameter", (long long)i,
                        t_get(analytic[t], i), num);
        }
    fprintf(stderr,
            "GAT, %d layers, %d heads: %lld parameters + %lld inputs, worst relative "
            "error %.2e\n",
            layers, heads, (long long)m->params.numel, (long long)gd__nn_numel(&x), worst);

    /* Evaluation applies no dropout: the same logits for any key. */
    gd__nn_tensor l1, l2;
    double first[5 * 3];
    T_OK(gd__gat_model_forward(m, c.blocks, &x, NULL, 0, 1, &l1));
    for (int64_t i = 0; i < batch * classes; i++) first[i] = t_get(&l1, i);
    T_OK(gd__gat_model_forward(m, c.blocks, &x, NULL, 0, 999, &l2));
    for (int64_t i = 0; i < batch * classes; i++) T_NEAR(t_get(&l2, i), first[i], 0);

    /* float32 against float64, evaluation mode, same parameters. */
    gd__gat_config c32 = cfg;
    c32.dtype = GD_DTYPE_FLOAT32;
    gd__gat_model *m32;
    T_OK(gd__gat_model_create(&ctx, &c32, 1, &m32));
    for (int64_t i = 0; i < m->params.numel; i++)
        t_set(&m32->params.params, i, t_get(&m->params.params, i));
    gd__nn_tensor x32 = t_tensor(GD_DTYPE_FLOAT32, c.nodes[0], in, NULL, 0);
    for (int64_t i = 0; i < gd__nn_numel(&x); i++) t_set(&x32, i, t_get(&x, i));
    T_OK(gd__gat_model_forward(m32, c.blocks, &x32, NULL, 0, 1, &l2));
    for (int64_t i = 0; i < batch * classes; i++)
        T_NEAR(t_get(&l2, i), first[i], 1e-5 * (1 + fabs(first[i])));

    /* A block with more edges than the model was sized for. */
    gd__gat_config small = cfg;
    small.max_edges[0] = c.blocks[0].num_edges - 1;
    gd__gat_model *ms;
    if (c.blocks[0].num_edges > 0) {
        T_OK(gd__gat_model_create(&ctx, &small, 1, &ms));
        T_FAILS(gd__gat_model_forward(ms, c.blocks, &x, NULL, 0, 1, &l1), GD_ERR_RANGE, "edges");
        gd__gat_model_destroy(ms);
    }
    gd__gat_model_destroy(m32);
    gd__gat_model_destroy(m);
    t_tensor_free(&x32);
    t_tensor_free(&grads);
    t_tensor_free(&x);
    t_tensor_free(&dx);
    t_tensor_free(&loss);
    t_tensor_free(&dlogits);
    t_free_chain(&c);
}

int main(void) {
    uint64_t state = t_seed();
    ctx = gd__nn_cpu_ctx();
    for (int layers = 1; layers <= 3; layers++)
        for (int heads = 1; heads <= 3; heads++) check_model(&state, layers, heads);
    t_check_no_leaks();
    fprintf(stderr, "GAT model: ok\n");
    return 0;
}
