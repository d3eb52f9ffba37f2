/*
 * GraphSAGE on the CPU backend over random chained blocks (nodes without neighbours, repeated
 * sources): the forward pass against a plain re-implementation of PyG's SAGEConv stack, every
 * parameter's and every input feature's gradient against central finite differences in float64
 * (1, 2 and 3 layers, dropout on), float32 against float64, determinism, a few Adam steps that
 * must fit a small minibatch, the checks on blocks, and allocation faults at create. Through the
 * model interface (model.h): the same parameters, logits, gradients and layer outputs bit for
 * bit as the direct calls, the kind's names, the node capacities and the memory estimate.
 */
#include "test_nn_util.h"

#define F64 GD_DTYPE_FLOAT64
#define F32 GD_DTYPE_FLOAT32

static gd__nn_ctx ctx;

static gd__sage_config config(const t_chain *c, int64_t in, int64_t hidden, int64_t classes,
                              double dropout, gd_dtype dtype) {
    gd__sage_config cfg = {0};
    cfg.num_layers = c->layers;
    cfg.in_dim = in;
    cfg.hidden_dim = hidden;
    cfg.num_classes = classes;
    cfg.dropout = dropout;
    cfg.dtype = dtype;
    for (int l = 0; l <= c->layers; l++) cfg.max_nodes[l] = c->nodes[l] + 2; /* some slack */
    return cfg;
}

/* PyG's SAGEConv stack written out with loops, from the model's parameters and dropout key. */
static void reference_forward(const gd__sage *m, const t_chain *c, const gd__nn_tensor *x, int train,
                              uint64_t seed, double *logits) {
    const int L = c->layers;
    double *h = malloc(sizeof(double) * (size_t)(c->nodes[0] * m->dims[0]));
    T_ASSERT(h);
    for (int64_t i = 0; i < c->nodes[0] * m->dims[0]; i++) h[i] = t_get(x, i);
    for (int l = 0; l < L; l++) {
        const gd_block *b = &c->blocks[l];
        const int64_t din = m->dims[l], dout = m->dims[l + 1];
        gd__nn_tensor wl = gd__nn_param(&m->params, m->w_l[l]),
                      wr = gd__nn_param(&m->params, m->w_r[l]),
                      bias = gd__nn_param(&m->params, m->b[l]);
        double *z = malloc(sizeof(double) * (size_t)(b->num_dst * dout));
        double *agg = malloc(sizeof(double) * (size_t)din);
        T_ASSERT(z && agg);
        for (int64_t d = 0; d < b->num_dst; d++) {
            const int32_t deg = b->indptr[d + 1] - b->indptr[d];
            for (int64_t i = 0; i < din; i++) {
                double s = 0;
                for (int32_t e = b->indptr[d]; e < b->indptr[d + 1]; e++)
                    s += h[b->indices[e] * din + i];
                agg[i] = deg ? s / deg : 0;
            }
            for (int64_t j = 0; j < dout; j++) {
                double s = t_get(&bias, j);
                for (int64_t i = 0; i < din; i++)
                    s += agg[i] * t_get(&wl, i * dout + j) +
                         h[d * din + i] * t_get(&wr, i * dout + j);
                if (l < L - 1) {
                    s = s > 0 ? s : 0;
                    if (train && m->cfg.dropout > 0)
                        s = gd__nn_dropout_keep(seed, (uint32_t)l, (uint64_t)(d * dout + j),
                                                gd__nn_dropout_threshold(m->cfg.dropout))
                                ? s / (1 - m->cfg.dropout)
                                : 0;
                }
                z[d * dout + j] = s;
            }
        }
        free(h);
        free(agg);
        h = z;
    }
    memcpy(logits, h, sizeof(double) * (size_t)(c->nodes[L] * m->dims[L]));
    free(h);
}

typedef struct {
    gd__sage *m;
    t_chain *c;
    gd__nn_tensor *x, *loss, *dlogits;
    int64_t *labels;
    uint64_t seed;
} model_case;

/* The loss of one training forward pass. */
static double model_loss(void *u) {
    model_case *k = u;
    gd__nn_tensor logits;
    T_OK(gd__sage_forward(k->m, k->c->blocks, k->x, NULL, 1, k->seed, &logits));
    T_OK(gd__nn_softmax_xent(&ctx, &logits, k->labels, 1.0, k->loss, k->dlogits));
    return t_get(k->loss, 0);
}

static void check_model(uint64_t *state, int layers) {
    t_chain c = t_make_chain(state, layers, 5);
    const int64_t in = 4, hidden = 5, classes = 3;
    gd__sage_config cfg = config(&c, in, hidden, classes, layers > 1 ? 0.3 : 0.0, F64);
    gd__sage *m;
    T_OK(gd__sage_create(&ctx, &cfg, t_rand(state), &m));
    gd__nn_tensor x = t_tensor(F64, c.nodes[0], in, state, 1);
    gd__nn_tensor loss = t_tensor(F64, 1, 1, NULL, 0), dlogits = t_tensor(F64, 5, classes, NULL, 0);
    gd__nn_tensor dx = t_tensor(F64, c.nodes[0], in, state, 1); /* garbage, overwritten */
    int64_t labels[5];
    for (int i = 0; i < 5; i++) labels[i] = (int64_t)(t_rand(state) % classes);
    labels[1] = -1;
    const uint64_t seed = t_rand(state);
    model_case k = {m, &c, &x, &loss, &dlogits, labels, seed};

    /* The forward pass is PyG's function. */
    gd__nn_tensor logits;
    double want[5 * 3];
    for (int train = 0; train < 2; train++) {
        T_OK(gd__sage_forward(m, c.blocks, &x, NULL, train, seed, &logits));
        T_EQ_INT(logits.rows, 5);
        T_EQ_INT(logits.cols, classes);
        reference_forward(m, &c, &x, train, seed, want);
        for (int64_t i = 0; i < 5 * classes; i++) T_NEAR(t_get(&logits, i), want[i], 1e-12);
    }

    /* Gradients of every parameter and input feature against finite differences. */
    model_loss(&k);
    T_OK(gd__nn_params_zero_grad(&ctx, &m->params));
    T_OK(gd__sage_backward(m, c.blocks, &dlogits, &dx));
    gd__nn_tensor grads = t_tensor(F64, 1, m->params.numel, NULL, 0);
    t_copy(&m->params.grads, &grads);
    char what[64];
    snprintf(what, sizeof what, "%d-layer GraphSAGE parameters", layers);
    {
        const double worst =
            t_fd_model(what, model_loss, &k, &m->params.params, &grads, &x, &dx, 1e-6);
        fprintf(stderr, "%s and input: %lld + %lld elements, worst relative error %.2e\n", what,
                (long long)m->params.numel, (long long)gd__nn_numel(&x), worst);
    }

    /* Backward adds to the gradients: twice gives double. */
    model_loss(&k);
    T_OK(gd__nn_params_zero_grad(&ctx, &m->params));
    T_OK(gd__sage_backward(m, c.blocks, &dlogits, NULL));
    T_OK(gd__sage_backward(m, c.blocks, &dlogits, NULL));
    for (int64_t i = 0; i < m->params.numel; i++)
        T_NEAR(t_get(&m->params.grads, i), 2 * t_get(&grads, i), 1e-12);

    /* float32 with the same parameters: logits and gradients close to float64's. */
    gd__sage_config cfg32 = cfg;
    cfg32.dtype = F32;
    gd__sage *m32;
    T_OK(gd__sage_create(&ctx, &cfg32, 1, &m32));
    t_copy(&m->params.params, &m32->params.params);
    gd__nn_tensor x32 = t_tensor(F32, c.nodes[0], in, NULL, 0), l32 = t_tensor(F32, 1, 1, NULL, 0),
                  dl32 = t_tensor(F32, 5, classes, NULL, 0);
    t_copy(&x, &x32);
    gd__nn_tensor logits32;
    T_OK(gd__sage_forward(m32, c.blocks, &x32, NULL, 1, seed, &logits32));
    T_OK(gd__nn_softmax_xent(&ctx, &logits32, labels, 1.0, &l32, &dl32));
    T_OK(gd__nn_params_zero_grad(&ctx, &m32->params));
    T_OK(gd__sage_backward(m32, c.blocks, &dl32, NULL));
    T_OK(gd__sage_forward(m, c.blocks, &x, NULL, 1, seed, &logits));
    for (int64_t i = 0; i < 5 * classes; i++) T_NEAR(t_get(&logits32, i), t_get(&logits, i), 1e-5);
    for (int64_t i = 0; i < m->params.numel; i++)
        T_NEAR(t_get(&m32->params.grads, i), t_get(&grads, i), 1e-5);

    gd__nn_tensor *all[] = {&x, &loss, &dlogits, &dx, &grads, &x32, &l32, &dl32};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) t_tensor_free(all[i]);
    gd__sage_destroy(m32);
    gd__sage_destroy(m);
    t_free_chain(&c);
}

/* A few Adam steps on one minibatch must fit it: the loss falls and accuracy rises. */
static void check_training(uint64_t *state) {
    t_chain c = t_make_chain(state, 2, 24);
    const int64_t in = 8, classes = 4;
    gd__sage_config cfg = config(&c, in, 32, classes, 0.1, F32);
    gd__sage *m;
    T_OK(gd__sage_create(&ctx, &cfg, t_rand(state), &m));
    gd__nn_tensor x = t_tensor(F32, c.nodes[0], in, state, 1);
    gd__nn_tensor loss = t_tensor(F32, 1, 1, NULL, 0), dl = t_tensor(F32, 24, classes, NULL, 0);
    int64_t labels[24];
    for (int i = 0; i < 24; i++) labels[i] = (int64_t)(t_rand(state) % classes);
    gd__nn_adam_options o = GD__NN_ADAM_OPTIONS_INIT;
    o.lr = 0.01;
    o.weight_decay = 5e-4;
    double first = 0, last = 0;
    int64_t correct = 0;
    for (int step = 0; step < 200; step++) {
        gd__nn_tensor logits;
        T_OK(gd__sage_forward(m, c.blocks, &x, NULL, 1, (uint64_t)step, &logits));
        T_OK(gd__nn_softmax_xent(&ctx, &logits, labels, 1.0, &loss, &dl));
        T_OK(gd__nn_params_zero_grad(&ctx, &m->params));
        T_OK(gd__sage_backward(m, c.blocks, &dl, NULL));
        T_OK(gd__nn_params_adam(&ctx, &m->params, &o));
        if (step == 0) first = t_get(&loss, 0);
    }
    gd__nn_tensor logits, again;
    T_OK(gd__sage_forward(m, c.blocks, &x, NULL, 0, 0, &logits));
    T_OK(gd__nn_softmax_xent(&ctx, &logits, labels, 1.0, &loss, NULL));
    last = t_get(&loss, 0);
    T_OK(gd__nn_accuracy(&ctx, &logits, labels, &correct));
    fprintf(stderr, "training: loss %.4f -> %.4f, accuracy %lld / 24 after 200 Adam steps\n", first,
            last, (long long)correct);
    T_ASSERT(last < 0.5 * first);
    T_ASSERT(correct >= 20);

    /* The same inputs and key give the same logits, bit for bit. */
    float keep[24 * 4];
    T_OK(gd__sage_forward(m, c.blocks, &x, NULL, 1, 99, &logits));
    memcpy(keep, logits.data, sizeof keep);
    T_OK(gd__sage_forward(m, c.blocks, &x, NULL, 1, 99, &again));
    T_EQ_INT(memcmp(keep, again.data, sizeof keep), 0);

    gd__nn_tensor_free(&ctx, &x);
    gd__nn_tensor_free(&ctx, &loss);
    gd__nn_tensor_free(&ctx, &dl);
    gd__sage_destroy(m);
    t_free_chain(&c);
}

static void check_errors(uint64_t *state) {
    t_chain c = t_make_chain(state, 3, 4);
    gd__sage_config cfg = config(&c, 3, 4, 2, 0.5, F32);
    gd__sage *m = NULL;
    gd__sage_config bad = cfg;
    bad.num_layers = 0;
    T_FAILS(gd__sage_create(&ctx, &bad, 1, &m), GD_ERR_INVALID_ARG, "0 layers");
    bad = cfg;
    bad.dropout = 1.0;
    T_FAILS(gd__sage_create(&ctx, &bad, 1, &m), GD_ERR_INVALID_ARG, "dropout 1");
    bad = cfg;
    bad.max_nodes[3] = 0;
    T_FAILS(gd__sage_create(&ctx, &bad, 1, &m), GD_ERR_INVALID_ARG, "max_nodes[3] = 0");
    bad = cfg;
    bad.dtype = GD_DTYPE_FLOAT16;
    T_FAILS(gd__sage_create(&ctx, &bad, 1, &m), GD_ERR_UNSUPPORTED, "float16");

    T_OK(gd__sage_create(&ctx, &cfg, 1, &m));
    gd__nn_tensor x = t_tensor(F32, c.nodes[0], 3, state, 1), logits;
    gd__nn_tensor dl = t_tensor(F32, 4, 2, NULL, 0);
    T_FAILS(gd__sage_backward(m, c.blocks, &dl, NULL), GD_ERR_INVALID_ARG, "no forward pass");
    gd_block saved = c.blocks[1];
    c.blocks[1].num_src--;
    T_FAILS(gd__sage_forward(m, c.blocks, &x, NULL, 1, 0, &logits), GD_ERR_INVALID_ARG,
            "must be the same nodes");
    c.blocks[1] = saved;
    gd__nn_tensor narrow = t_tensor(F32, c.nodes[0], 2, NULL, 0);
    T_FAILS(gd__sage_forward(m, c.blocks, &narrow, NULL, 1, 0, &logits), GD_ERR_INVALID_ARG,
            "expected at least");
    T_OK(gd__sage_forward(m, c.blocks, &x, NULL, 1, 0, &logits));
    gd__nn_tensor dl_bad = t_tensor(F32, 3, 2, NULL, 0);
    T_FAILS(gd__sage_backward(m, c.blocks, &dl_bad, NULL), GD_ERR_INVALID_ARG, "dlogits is 3 x 2");
    T_OK(gd__sage_backward(m, c.blocks, &dl, NULL));
    gd__sage_destroy(m);

    /* Sized too small for the blocks. */
    bad = cfg;
    bad.max_nodes[0] = c.nodes[0] - 1;
    T_OK(gd__sage_create(&ctx, &bad, 1, &m));
    T_FAILS(gd__sage_forward(m, c.blocks, &x, NULL, 1, 0, &logits), GD_ERR_RANGE,
            "more than the model was sized for");
    gd__sage_destroy(m);

    /* Every allocation of create, failed in turn: a clean error and nothing left behind. */
    gd_fault_set(GD_FAULT_ALLOC, 0);
    T_OK(gd__sage_create(&ctx, &cfg, 1, &m));
    const int64_t calls = gd_fault_calls(GD_FAULT_ALLOC);
    gd__sage_destroy(m);
    T_ASSERT(calls > 5);
    for (int64_t k = 1; k <= calls; k++) {
        gd_fault_set(GD_FAULT_ALLOC, k);
        m = (gd__sage *)&ctx; /* must be reset */
        T_FAILS(gd__sage_create(&ctx, &cfg, 1, &m), GD_ERR_NO_MEMORY, "");
        T_ASSERT(m == NULL);
    }
    gd_fault_set(GD_FAULT_ALLOC, 0);
    gd__nn_tensor *all[] = {&x, &dl, &narrow, &dl_bad};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) t_tensor_free(all[i]);
    t_free_chain(&c);
    t_check_no_leaks();
}

/* Two tensors of the same shape hold the same bits. */
static void same_bits(const gd__nn_tensor *a, const gd__nn_tensor *b) {
    T_EQ_INT(a->rows, b->rows);
    T_EQ_INT(a->cols, b->cols);
    T_EQ_INT(memcmp(a->data, b->data, (size_t)gd__nn_numel(a) * gd_dtype_size(a->dtype)), 0);
}

/* The interface's forward, backward and layer equal the direct GraphSAGE calls bit for bit. */
static void check_interface_calls(uint64_t *state, int layers) {
    t_chain c = t_make_chain(state, layers, 5);
    const int64_t in = 6, classes = 3;
    gd__sage_config cfg = config(&c, in, 7, classes, 0.4, F64);
    cfg.kind = GD__MODEL_SAGE;
    const uint64_t seed = t_rand(state), key = t_rand(state);
    gd__sage *direct;
    gd__model *model;
    T_OK(gd__sage_create(&ctx, &cfg, seed, &direct));
    T_OK(gd__model_create(&ctx, &cfg, seed, &model));
    gd__nn_params *p = gd__model_params(model);
    T_EQ_INT(gd__model_num_params(model), direct->params.numel);
    same_bits(&p->params, &direct->params.params);
    T_ASSERT(gd__model_get_config(model)->num_layers == layers);
    for (int l = 0; l <= layers; l++) T_EQ_INT(gd__model_dim(model, l), direct->dims[l]);

    gd__nn_tensor x = t_tensor(F64, c.nodes[0], in, state, 1), la, lb;
    gd__nn_tensor dl = t_tensor(F64, c.nodes[layers], classes, state, 1);
    gd__nn_tensor dxa = t_tensor(F64, c.nodes[0], in, NULL, 0);
    gd__nn_tensor dxb = t_tensor(F64, c.nodes[0], in, NULL, 0);
    T_OK(gd__sage_forward(direct, c.blocks, &x, NULL, 1, key, &la));
    T_OK(gd__model_forward(model, c.blocks, &x, NULL, 1, key, &lb));
    same_bits(&la, &lb);
    T_OK(gd__nn_params_zero_grad(&ctx, &direct->params));
    T_OK(gd__nn_params_zero_grad(&ctx, p));
    T_OK(gd__sage_backward(direct, c.blocks, &dl, &dxa));
    T_OK(gd__model_backward(model, c.blocks, &dl, &dxb));
    same_bits(&direct->params.grads, &p->grads);
    same_bits(&dxa, &dxb);

    /* The dense half of layer 0, as exact inference calls it. */
    T_ASSERT(gd__model_has_layer_combine(model));
    const int64_t nd = c.nodes[1];
    gd__nn_tensor agg = t_tensor(F64, nd, in, state, 1), self = gd__nn_rows(&x, nd);
    gd__nn_tensor oa = t_tensor(F64, nd, gd__model_dim(model, 1), NULL, 0);
    gd__nn_tensor ob = t_tensor(F64, nd, gd__model_dim(model, 1), NULL, 0);
    T_OK(gd__sage_layer_combine(direct, 0, &agg, &self, &oa, layers > 1));
    T_OK(gd__model_layer_combine(model, 0, &agg, &self, &ob, layers > 1));
    same_bits(&oa, &ob);
    /* The kind's own errors come through. */
    T_FAILS(gd__model_backward(model, NULL, &dl, NULL), GD_ERR_INVALID_ARG, "blocks is NULL");
    T_FAILS(gd__model_forward(NULL, c.blocks, &x, NULL, 1, key, &lb), GD_ERR_INVALID_ARG, "NULL");

    gd__nn_tensor *all[] = {&x, &dl, &dxa, &dxb, &agg, &oa, &ob};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) t_tensor_free(all[i]);
    gd__model_destroy(model);
    gd__sage_destroy(direct);
    t_free_chain(&c);
}

/* The kinds' names, the node capacities, the memory estimate and faults at create. */
static void check_interface(uint64_t *state) {
    for (int layers = 1; layers <= 3; layers++) check_interface_calls(state, layers);

    gd__model_kind k = GD__MODEL_KIND_COUNT;
    T_OK(gd__model_kind_parse("sage", &k));
    T_EQ_INT(k, GD__MODEL_SAGE);
    T_EQ_INT(GD__MODEL_DEFAULT, GD__MODEL_SAGE);
    T_EQ_STR(gd__model_kind_name(GD__MODEL_SAGE), "sage");
    T_ASSERT(gd__model_kind_name(GD__MODEL_KIND_COUNT) == NULL);
    T_FAILS(gd__model_kind_parse("gcn", &k), GD_ERR_INVALID_ARG,
            "'gcn': this build knows sage, gat");
    T_OK(gd__model_kind_parse("gat", &k));
    T_EQ_INT(k, GD__MODEL_GAT);
    T_FAILS(gd__model_kind_parse(NULL, &k), GD_ERR_INVALID_ARG, "(null)");
    const gd__model_i *i = gd__model_kind_iface(GD__MODEL_SAGE);
    T_EQ_STR(i->label, "graphsage");
    T_EQ_STR(i->title, "GraphSAGE");
    T_EQ_STR(i->description, "GraphSAGE (mean)");

    /*
     * Capacities: each hop multiplies by 1 + fanout (the largest degree for -1 or a larger
     * fanout), capped by the node count; the input layer by the sampler's bound; an overflow
     * saturates to the node count.
     */
    int fanouts[3] = {4, -1, 100};
    gd__model_shape shape = {.num_layers = 3,
                             .fanouts = fanouts,
                             .batch = 10,
                             .max_degree = 20,
                             .num_nodes = 100000,
                             .max_input_nodes = 5000};
    gd__model_config cfg = gd__model_config_make(GD__MODEL_DEFAULT, 3, 16, 8, 4, 0.5, F32);
    gd__model_capacity(&shape, &cfg);
    T_EQ_INT(cfg.max_nodes[3], 10);
    T_EQ_INT(cfg.max_nodes[2], 50);
    T_EQ_INT(cfg.max_nodes[1], 50 * 21);
    T_EQ_INT(cfg.max_nodes[0], 5000); /* 1050 * 21 = 22050, the sampler's bound is lower */
    shape.num_nodes = 600;
    gd__model_capacity(&shape, &cfg);
    T_EQ_INT(cfg.max_nodes[1], 600);
    T_EQ_INT(cfg.max_nodes[0], 600);
    shape.batch = INT64_MAX / 2, shape.num_nodes = INT64_MAX, shape.max_input_nodes = INT64_MAX;
    gd__model_capacity(&shape, &cfg);
    T_EQ_INT(cfg.max_nodes[2], INT64_MAX); /* saturated, not wrapped */

    /* The estimate covers at least four float32 copies of the parameters, and grows with them. */
    shape = (gd__model_shape){3, fanouts, 10, 20, 100000, 5000};
    gd__model_capacity(&shape, &cfg);
    const int64_t small = gd__model_bytes(&cfg);
    gd__model *m;
    T_OK(gd__model_create(&ctx, &cfg, 1, &m));
    T_ASSERT(small >= 4 * 4 * gd__model_num_params(m));
    gd__model_destroy(m);
    cfg.hidden_dim = 64;
    T_ASSERT(gd__model_bytes(&cfg) > small);

    /* A kind outside the enum is refused; every allocation of create fails cleanly. */
    cfg.kind = GD__MODEL_KIND_COUNT;
    m = (gd__model *)&ctx;
    T_FAILS(gd__model_create(&ctx, &cfg, 1, &m), GD_ERR_INVALID_ARG, "not a model kind");
    T_ASSERT(m == NULL);
    cfg.kind = GD__MODEL_DEFAULT;
    gd_fault_set(GD_FAULT_ALLOC, 0);
    T_OK(gd__model_create(&ctx, &cfg, 1, &m));
    const int64_t calls = gd_fault_calls(GD_FAULT_ALLOC);
    gd__model_destroy(m);
    for (int64_t k2 = 1; k2 <= calls; k2++) {
        gd_fault_set(GD_FAULT_ALLOC, k2);
        m = (gd__model *)&ctx; /* must be reset */
        T_FAILS(gd__model_create(&ctx, &cfg, 1, &m), GD_ERR_NO_MEMORY, "");
        T_ASSERT(m == NULL);
    }
    gd_fault_set(GD_FAULT_ALLOC, 0);
    t_check_no_leaks();
}

int main(void) {
    uint64_t state = t_seed();
    ctx = gd__nn_cpu_ctx();
    for (int layers = 1; layers <= 3; layers++) check_model(&state, layers);
    check_training(&state);
    check_errors(&state);
    check_interface(&state);
    t_check_no_leaks();
    return 0;
}
