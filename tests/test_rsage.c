/*
 * Relational GraphSAGE (src/nn/rsage.h) over typed minibatches sampled in the test from a
 * fresh random heterogeneous graph: three node types (paper, the target, with 5 features;
 * author with 3; institution with none, and no relation entering it) and four relations
 * (cites: paper -> paper, writes: author -> paper, written-by: paper -> author, affiliated:
 * institution -> author), nodes without neighbours, a relation sampled with fanout 0 in one
 * layer (destinations but no edges), blocks with more destinations than sources, and authors
 * among the seeds (rows of the last layer that no logit reads). For 1, 2 and 3 layers, on the
 * CPU backend:
 *   - the float64 forward equals PyG's to_hetero(SAGEConv, aggr="sum") written out with loops
 *     (within 1e-12, relative), in training (dropout keyed by node ids) and evaluation;
 *   - every parameter's and every input feature's gradient of a softmax cross-entropy against
 *     central finite differences in float64;
 *   - float32 against float64 (within 1e-4);
 * then, on a GPU (the CUDA part alone is skipped without a CUDA build or a GPU), the CUDA backend
 * against the CPU backend, forward and gradients, float32; and bad inputs and allocation faults.
 *
 * With the argument --rgcn (ctest's test_rgcn) the same checks run on R-GCN, the model with
 * root_per_type set (one root weight and bias per node type, rsage.h), against its own loop
 * reference; GD_RSAGE_DUMP then writes an R-GCN case for tests/py_rgcn_pyg.py.
 */
#include "nn/rsage.h"
#include "test_nn_util.h"

#define F64 GD_DTYPE_FLOAT64
#define F32 GD_DTYPE_FLOAT32

enum { T = 3, R = 4, MAXL = 3, BATCH = 6 };
static const int rel_src[R] = {0, 1, 0, 2};
static const int rel_dst[R] = {0, 0, 1, 1};
static const int64_t in_dims[T] = {5, 3, 0};
static const int64_t graph_nodes[T] = {40, 25, 3}; /* few institutions: more dst than src */

static gd__nn_ctx cpu;
/* 1: the checks run on R-GCN (--rgcn). */
static int rgcn;
static const char *kind(void) {
    return rgcn ? "R-GCN" : "R-SAGE";
}

/* ------------------------------------------------------------- graph and sampling */

/* Each relation as a CSC over its destination type's nodes, sources by their type's ids. */
typedef struct {
    int32_t *indptr[R];
    int64_t *indices[R];
} hgraph;

static hgraph make_graph(uint64_t *state) {
    hgraph g;
    for (int r = 0; r < R; r++) {
        const int64_t nd = graph_nodes[rel_dst[r]], ns = graph_nodes[rel_src[r]];
        g.indptr[r] = malloc(sizeof(int32_t) * (size_t)(nd + 1));
        g.indices[r] = malloc(sizeof(int64_t) * (size_t)(nd * 5 + 1));
        T_ASSERT(g.indptr[r] && g.indices[r]);
        g.indptr[r][0] = 0;
        for (int64_t v = 0; v < nd; v++) {
            int deg = (int)(t_rand(state) % 6);
            if (t_rand(state) % 4 == 0) deg = 0;
            for (int k = 0; k < deg; k++)
                g.indices[r][g.indptr[r][v] + k] = (int64_t)(t_rand(state) % (uint64_t)ns);
            g.indptr[r][v + 1] = g.indptr[r][v] + deg;
        }
    }
    return g;
}

static void free_graph(hgraph *g) {
    for (int r = 0; r < R; r++) {
        free(g->indptr[r]);
        free(g->indices[r]);
    }
}

/* A typed minibatch as the model takes it, with its nodes' global ids per type. */
typedef struct {
    int L;
    int64_t num_nodes[(MAXL + 1) * T];
    gd_block blocks[MAXL * R];
    int64_t *ids[T]; /* layer-0 nodes of each type (every layer's are a prefix) */
    int64_t labels[BATCH];
} hbatch;

/*
 * Sample L layers from BATCH paper seeds (and, half the time, two author seeds that no logit
 * reads): each destination takes up to fanout in-neighbours of each relation into its type,
 * distinct ones, and a new source node is appended after its type's nodes so far, so a layer's
 * nodes stay a prefix of the layer below's. Relation written-by has fanout 0 in layer 0.
 */
static hbatch sample(uint64_t *state, const hgraph *g, int L) {
    hbatch b;
    memset(&b, 0, sizeof b);
    b.L = L;
    int64_t *local[T], count[T] = {0};
    for (int t = 0; t < T; t++) {
        b.ids[t] = malloc(sizeof(int64_t) * (size_t)graph_nodes[t]);
        local[t] = malloc(sizeof(int64_t) * (size_t)graph_nodes[t]);
        T_ASSERT(b.ids[t] && local[t]);
        for (int64_t i = 0; i < graph_nodes[t]; i++) local[t][i] = -1;
    }
    const int seeds[T] = {BATCH, t_rand(state) % 2 ? 2 : 0, 0};
    for (int t = 0; t < T; t++)
        while (count[t] < seeds[t]) {
            const int64_t v = (int64_t)(t_rand(state) % (uint64_t)graph_nodes[t]);
            if (local[t][v] >= 0) continue;
            local[t][v] = count[t];
            b.ids[t][count[t]++] = v;
        }
    for (int t = 0; t < T; t++) b.num_nodes[L * T + t] = count[t];
    for (int i = 0; i < BATCH; i++) b.labels[i] = (int64_t)(t_rand(state) % 3);
    b.labels[1] = -1; /* an ignored row */
    for (int l = L - 1; l >= 0; l--) {
        for (int r = 0; r < R; r++) {
            const int s = rel_src[r], d = rel_dst[r];
            const int fanout = r == 2 && l == 0 && L > 1 ? 0 : 1 + (int)(t_rand(state) % 4);
            const int64_t nd = b.num_nodes[(l + 1) * T + d];
            int32_t *indptr = malloc(sizeof(int32_t) * (size_t)(nd + 1));
            int32_t *indices = malloc(sizeof(int32_t) * (size_t)(nd * fanout + 1));
            T_ASSERT(indptr && indices);
            indptr[0] = 0;
            for (int64_t i = 0; i < nd; i++) {
                const int64_t v = b.ids[d][i];
                const int32_t e0 = g->indptr[r][v], deg = g->indptr[r][v + 1] - e0;
                int32_t n = 0, taken[5];
                while (n < fanout && n < deg) {
                    const int32_t k = (int32_t)(t_rand(state) % (uint64_t)deg);
                    int seen = 0;
                    for (int32_t j = 0; j < n; j++) seen |= taken[j] == k;
                    if (seen) continue;
                    taken[n] = k;
                    const int64_t u = g->indices[r][e0 + k];
                    if (local[s][u] < 0) {
                        local[s][u] = count[s];
                        b.ids[s][count[s]++] = u;
                    }
                    indices[indptr[i] + n] = (int32_t)local[s][u];
                    n++;
                }
                indptr[i + 1] = indptr[i] + n;
            }
            gd_block *blk = &b.blocks[l * R + r];
            blk->num_dst = nd;
            blk->num_edges = indptr[nd];
            blk->indptr = indptr;
            blk->indices = indices;
        }
        for (int t = 0; t < T; t++) b.num_nodes[l * T + t] = count[t];
        for (int r = 0; r < R; r++) b.blocks[l * R + r].num_src = count[rel_src[r]];
    }
    for (int t = 0; t < T; t++) free(local[t]);
    return b;
}

static void free_batch(hbatch *b) {
    for (int i = 0; i < b->L * R; i++) t_block_free(&b->blocks[i]);
    for (int t = 0; t < T; t++) free(b->ids[t]);
}

/* Blocks with edges and more destinations than sources (the ops' prefix check works around). */
static int wide_blocks;

static gd__rsage_config config(const hbatch *b, int64_t hidden, double dropout, gd_dtype dtype) {
    gd__rsage_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.schema.num_types = T;
    cfg.schema.num_relations = R;
    for (int r = 0; r < R; r++) {
        cfg.schema.rel_src[r] = rel_src[r];
        cfg.schema.rel_dst[r] = rel_dst[r];
    }
    cfg.schema.target_type = 0;
    for (int t = 0; t < T; t++) cfg.in_dim[t] = in_dims[t];
    cfg.hidden_dim = hidden;
    cfg.num_classes = 3;
    cfg.num_layers = b->L;
    cfg.dropout = dropout;
    cfg.dtype = dtype;
    cfg.root_per_type = rgcn;
    for (int i = 0; i < (b->L + 1) * T; i++) cfg.max_nodes[i] = b->num_nodes[i] + 2;
    for (int i = 0; i < b->L * R; i++) cfg.max_edges[i] = b->blocks[i].num_edges + 3;
    return cfg;
}

/* ------------------------------------------------------------- the reference */

/*
 * PyG's to_hetero(SAGEConv, aggr="sum") stack written out with loops over the model's
 * parameters (gd__rsage_weights, read as doubles): per destination type the sum over its
 * relations of mean W_l + b + self W_root; ReLU and dropout (the model's keys) between layers.
 * logits gets the target's rows. R-GCN (rgcn): per type self W_root[t] + b[t]
 * (gd__rsage_root_weights), plus the sum over its relations of mean W_l, every type computed.
 */
static void reference(const gd__rsage *m, const hbatch *b, gd__nn_tensor *const x[T], int train,
                      uint64_t seed, double *logits) {
    const int L = b->L;
    double *h[T];
    for (int t = 0; t < T; t++) {
        const int64_t n = b->num_nodes[t] * in_dims[t];
        h[t] = malloc(sizeof(double) * (size_t)(n + 1));
        T_ASSERT(h[t]);
        for (int64_t i = 0; i < n; i++) h[t][i] = t_get(x[t], i);
    }
    for (int l = 0; l < L; l++) {
        const int64_t out = gd__rsage_dim(&m->cfg, l + 1, 0);
        double *z[T];
        for (int t = 0; t < T; t++) {
            const int64_t nd = b->num_nodes[(l + 1) * T + t];
            z[t] = calloc((size_t)(nd * out + 1), sizeof(double));
            T_ASSERT(z[t]);
            if (l == L - 1 && t != 0) continue;
            if (rgcn) {
                const int64_t wd = gd__rsage_dim(&m->cfg, l, t);
                gd__nn_tensor wr, bias;
                T_OK(gd__rsage_root_weights(m, l, t, 0, &wr, &bias));
                T_EQ_INT(wr.rows, wd);
                T_EQ_INT(bias.rows, 1);
                for (int64_t d = 0; d < nd; d++)
                    for (int64_t j = 0; j < out; j++) {
                        double acc = t_get(&bias, j);
                        for (int64_t i = 0; i < wd; i++)
                            acc += h[t][d * wd + i] * t_get(&wr, i * out + j);
                        z[t][d * out + j] = acc;
                    }
            }
            for (int r = 0; r < R; r++) {
                if (rel_dst[r] != t) continue;
                const int s = rel_src[r];
                const int64_t ws = gd__rsage_dim(&m->cfg, l, s), wd = gd__rsage_dim(&m->cfg, l, t);
                const gd_block *blk = &b->blocks[l * R + r];
                gd__nn_tensor wl, bias, wr;
                T_OK(gd__rsage_weights(m, l, r, 0, &wl, &bias, &wr));
                T_EQ_INT(wl.rows, ws);
                T_EQ_INT(wr.rows, rgcn ? 0 : wd);
                T_EQ_INT(bias.rows, rgcn ? 0 : 1);
                for (int64_t d = 0; d < nd; d++) {
                    const int32_t e0 = blk->indptr[d], e1 = blk->indptr[d + 1];
                    for (int64_t j = 0; j < out; j++) {
                        double acc = bias.rows ? t_get(&bias, j) : 0;
                        for (int64_t i = 0; i < ws; i++) {
                            double mean = 0;
                            for (int32_t e = e0; e < e1; e++)
                                mean += h[s][blk->indices[e] * ws + i];
                            if (e1 > e0) mean /= (double)(e1 - e0);
                            acc += mean * t_get(&wl, i * out + j);
                        }
                        for (int64_t i = 0; i < wr.rows; i++)
                            acc += h[t][d * wd + i] * t_get(&wr, i * out + j);
                        z[t][d * out + j] += acc;
                    }
                }
            }
            if (l < L - 1)
                for (int64_t d = 0; d < nd; d++)
                    for (int64_t j = 0; j < out; j++) {
                        double v = z[t][d * out + j];
                        v = v > 0 ? v : 0;
                        if (train && m->cfg.dropout > 0) {
                            const uint64_t key =
                                (uint64_t)b->ids[t][d] * (uint64_t)out + (uint64_t)j;
                            v = gd__nn_dropout_keep(seed, (uint32_t)(l * GD__RSAGE_MAX_TYPES + t),
                                                    key, gd__nn_dropout_threshold(m->cfg.dropout))
                                    ? v / (1 - m->cfg.dropout)
                                    : 0;
                        }
                        z[t][d * out + j] = v;
                    }
        }
        for (int t = 0; t < T; t++) {
            free(h[t]);
            h[t] = z[t];
        }
    }
    memcpy(logits, h[0], sizeof(double) * (size_t)(b->num_nodes[L * T] * 3));
    for (int t = 0; t < T; t++) free(h[t]);
}

/* ------------------------------------------------------------- the CPU checks */

typedef struct {
    gd__rsage *m;
    const hbatch *b;
    gd__nn_tensor *x[T];
    gd__nn_tensor loss, dlogits;
    uint64_t seed;
} model_case;

static const int64_t *const *id_ptrs(const hbatch *b) {
    return (const int64_t *const *)b->ids;
}

/* The loss of one training forward pass (and its logits' gradient, into dlogits). */
static double model_loss(void *u) {
    model_case *k = u;
    gd__nn_tensor logits;
    T_OK(gd__rsage_forward(k->m, k->b->blocks, k->b->num_nodes, (const gd__nn_tensor *const *)k->x,
                           id_ptrs(k->b), 1, k->seed, &logits));
    T_OK(gd__nn_softmax_xent(&cpu, &logits, k->b->labels, 1.0, &k->loss, &k->dlogits));
    return t_get(&k->loss, 0);
}

/* The input tensors of a batch: random rows for the typed features, NULL for institutions. */
static void make_inputs(uint64_t *state, const hbatch *b, gd_dtype dtype, gd__nn_tensor *store,
                        gd__nn_tensor *x[T]) {
    for (int t = 0; t < T; t++) {
        x[t] = NULL;
        if (in_dims[t] == 0) continue;
        store[t] = t_tensor(dtype, b->num_nodes[t], in_dims[t], state, 1);
        x[t] = &store[t];
    }
}

#ifdef GD_WITH_CUDA
static void check_cuda(uint64_t *state, const hbatch *b, const gd__rsage_config *cfg64,
                       gd__nn_tensor *const x64[T]);
#endif

static void check_model(uint64_t *state, const hgraph *g, int L) {
    hbatch b = sample(state, g, L);
    for (int i = 0; i < L * R; i++)
        wide_blocks += b.blocks[i].num_dst > b.blocks[i].num_src && b.blocks[i].num_edges > 0;
    gd__rsage_config cfg = config(&b, 4, L > 1 ? 0.3 : 0.0, F64);
    gd__rsage *m;
    T_OK(gd__rsage_create(&cpu, &cfg, t_rand(state), &m));
    gd__nn_tensor xs[T], dxs[T];
    gd__nn_tensor *x[T], *dx[T];
    make_inputs(state, &b, F64, xs, x);
    make_inputs(state, &b, F64, dxs, dx); /* garbage, overwritten */
    const int64_t nt = b.num_nodes[L * T];
    model_case k = {m,
                    &b,
                    {x[0], x[1], x[2]},
                    t_tensor(F64, 1, 1, NULL, 0),
                    t_tensor(F64, nt, 3, NULL, 0),
                    t_rand(state)};

    /* (1) The forward pass is the reference's function, training and evaluation. */
    gd__nn_tensor logits;
    double want[BATCH * 3];
    for (int train = 0; train < 2; train++) {
        T_OK(gd__rsage_forward(m, b.blocks, b.num_nodes, (const gd__nn_tensor *const *)x,
                               id_ptrs(&b), train, k.seed, &logits));
        T_EQ_INT(logits.rows, nt);
        T_EQ_INT(logits.cols, 3);
        reference(m, &b, x, train, k.seed, want);
        for (int64_t i = 0; i < nt * 3; i++)
            T_NEAR(t_get(&logits, i), want[i], 1e-12 * (1 + fabs(want[i])));
    }
    /* The last layer has parameters only for the relations into the target. */
    gd__nn_tensor w1, w2, w3;
    T_FAILS(gd__rsage_weights(m, L - 1, 2, 0, &w1, &w2, &w3), GD_ERR_INVALID_ARG,
            "has no parameters");
    T_OK(gd__rsage_weights(m, L - 1, 1, 0, &w1, &w2, &w3));
    if (rgcn) {
        /* R-GCN: the roots of every type below the last layer, the target's alone in it. */
        T_OK(gd__rsage_root_weights(m, L - 1, 0, 0, &w1, &w2));
        T_FAILS(gd__rsage_root_weights(m, L - 1, 1, 0, &w1, &w2), GD_ERR_INVALID_ARG,
                "type 1 has no parameters");
        if (L > 1) {
            /* Institutions, which no relation enters, have no features: their bias alone. */
            T_OK(gd__rsage_root_weights(m, 0, 2, 0, &w1, &w2));
            T_EQ_INT(w1.rows, 0);
            T_EQ_INT(w2.rows, 1);
        }
    } else {
        T_FAILS(gd__rsage_root_weights(m, 0, 0, 0, &w1, &w2), GD_ERR_INVALID_ARG,
                "roots per relation");
    }

    /* (2) Every parameter's and input feature's gradient against finite differences. */
    model_loss(&k);
    T_OK(gd__nn_params_zero_grad(&cpu, &m->params));
    T_OK(gd__rsage_backward(m, &k.dlogits, dx));
    gd__nn_tensor grads = t_tensor(F64, 1, m->params.numel, NULL, 0);
    t_copy(&m->params.grads, &grads);
    gd__nn_tensor *targets[3] = {&m->params.params, x[0], x[1]};
    const gd__nn_tensor *analytic[3] = {&grads, dx[0], dx[1]};
    const double h = 1e-6;
    double worst = 0;
    int64_t checked = 0;
    for (int w = 0; w < 3; w++)
        for (int64_t i = 0; i < gd__nn_numel(targets[w]); i++) {
            const double v = t_get(targets[w], i);
            t_set(targets[w], i, v + h);
            const double fp = model_loss(&k);
            t_set(targets[w], i, v - h);
            const double fm = model_loss(&k);
            t_set(targets[w], i, v);
            const double num = (fp - fm) / (2 * h), err = t_grad_err(t_get(analytic[w], i), num);
            if (err > worst) worst = err;
            checked++;
            if (err > 1e-6)
                T_FAIL_("%d layers: gradient of %s element %lld: analytic %.10g, finite "
                        "difference %.10g",
                        L,
                        w == 0   ? "parameter"
                        : w == 1 ? "paper input"
                                 : "author input",
                        (long long)i, t_get(analytic[w], i), num);
        }
    fprintf(stderr,
            "%s, %d layers: %lld gradients (parameters and inputs), worst relative "
            "error %.2e\n",
            kind(), L, (long long)checked, worst);

    /* Backward adds to the gradients: twice without dx gives double. */
    model_loss(&k);
    T_OK(gd__nn_params_zero_grad(&cpu, &m->params));
    T_OK(gd__rsage_backward(m, &k.dlogits, NULL));
    T_OK(gd__rsage_backward(m, &k.dlogits, NULL));
    for (int64_t i = 0; i < m->params.numel; i++)
        T_NEAR(t_get(&m->params.grads, i), 2 * t_get(&grads, i), 1e-12);

    /* (3) float32 with the same parameters and inputs: the logits within 1e-4. */
    gd__rsage_config cfg32 = cfg;
    cfg32.dtype = F32;
    gd__rsage *m32;
    T_OK(gd__rsage_create(&cpu, &cfg32, 1, &m32));
    t_copy(&m->params.params, &m32->params.params);
    gd__nn_tensor x32s[T];
    gd__nn_tensor *x32[T];
    make_inputs(state, &b, F32, x32s, x32);
    for (int t = 0; t < T; t++)
        if (x32[t]) t_copy(x[t], x32[t]);
    gd__nn_tensor l32;
    T_OK(gd__rsage_forward(m32, b.blocks, b.num_nodes, (const gd__nn_tensor *const *)x32,
                           id_ptrs(&b), 1, k.seed, &l32));
    T_OK(gd__rsage_forward(m, b.blocks, b.num_nodes, (const gd__nn_tensor *const *)x, id_ptrs(&b),
                           1, k.seed, &logits));
    for (int64_t i = 0; i < nt * 3; i++)
        T_NEAR(t_get(&l32, i), t_get(&logits, i), 1e-4 * (1 + fabs(t_get(&logits, i))));

#ifdef GD_WITH_CUDA
    check_cuda(state, &b, &cfg, x);
#endif
    for (int t = 0; t < T; t++)
        if (x[t]) {
            t_tensor_free(x[t]);
            t_tensor_free(dx[t]);
            t_tensor_free(x32[t]);
        }
    t_tensor_free(&grads);
    t_tensor_free(&k.loss);
    t_tensor_free(&k.dlogits);
    gd__rsage_destroy(m32);
    gd__rsage_destroy(m);
    free_batch(&b);
}

/* ------------------------------------------------------------- CUDA against the CPU */

#ifdef GD_WITH_CUDA
static int have_gpu;
static gd__nn_ctx gpu;

static void *up_raw(const void *host, size_t bytes) {
    void *d = NULL;
    T_OK(gpu.be->alloc(&gpu, bytes ? bytes : 16, &d));
    if (bytes) T_OK(gpu.be->from_host(&gpu, d, host, bytes));
    return d;
}

/* The CPU tensor t as float32 on the GPU. */
static gd__nn_tensor up(const gd__nn_tensor *t) {
    gd__nn_tensor h = t_tensor(F32, t->rows, t->cols, NULL, 0), d;
    t_copy(t, &h);
    T_OK(gd__nn_tensor_alloc(&gpu, F32, t->rows, t->cols, &d));
    T_OK(gd__nn_from_host(&gpu, &d, h.data));
    t_tensor_free(&h);
    return d;
}

/* want (CPU) against got (GPU): |w - g| <= tol * (1 + |w|) everywhere. */
static void near_dev(const char *what, const gd__nn_tensor *want, const gd__nn_tensor *got_dev,
                     double tol) {
    gd__nn_tensor got = t_tensor(F32, got_dev->rows, got_dev->cols, NULL, 0);
    T_EQ_INT(got_dev->rows, want->rows);
    T_EQ_INT(got_dev->cols, want->cols);
    T_OK(gd__nn_to_host(&gpu, got_dev, got.data));
    for (int64_t i = 0; i < gd__nn_numel(want); i++) {
        const double w = t_get(want, i), g = t_get(&got, i);
        if (!(fabs(w - g) <= tol * (1 + fabs(w))))
            T_FAIL_("%s element %lld: CPU %.9g, CUDA %.9g", what, (long long)i, w, g);
    }
    t_tensor_free(&got);
}

/*
 * (4) The same float32 model on both backends (the same seed gives the same parameters), the
 * same minibatch and dropout key: logits, parameter gradients and input gradients close.
 */
static void check_cuda(uint64_t *state, const hbatch *b, const gd__rsage_config *cfg64,
                       gd__nn_tensor *const x64[T]) {
    if (!have_gpu) return;
    const int L = b->L;
    gd__rsage_config cfg = *cfg64;
    cfg.dtype = F32;
    const uint64_t init = t_rand(state), key = t_rand(state);
    gd__rsage *mc, *mg;
    T_OK(gd__rsage_create(&cpu, &cfg, init, &mc));
    T_OK(gd__rsage_create(&gpu, &cfg, init, &mg));
    gd__nn_tensor xc[T], dxc[T], xg[T], dxg[T];
    gd__nn_tensor *pxc[T], *pdxc[T], *pxg[T], *pdxg[T];
    int64_t *ids[T];
    gd_block blocks[MAXL * R];
    for (int t = 0; t < T; t++) {
        pxc[t] = pdxc[t] = pxg[t] = pdxg[t] = NULL;
        ids[t] = up_raw(b->ids[t], sizeof(int64_t) * (size_t)b->num_nodes[t]);
        if (!x64[t]) continue;
        xc[t] = t_tensor(F32, x64[t]->rows, x64[t]->cols, NULL, 0);
        t_copy(x64[t], &xc[t]);
        dxc[t] = t_tensor(F32, x64[t]->rows, x64[t]->cols, NULL, 0);
        xg[t] = up(&xc[t]);
        T_OK(gd__nn_tensor_alloc(&gpu, F32, x64[t]->rows, x64[t]->cols, &dxg[t]));
        pxc[t] = &xc[t], pdxc[t] = &dxc[t], pxg[t] = &xg[t], pdxg[t] = &dxg[t];
    }
    for (int i = 0; i < L * R; i++) {
        blocks[i] = b->blocks[i];
        blocks[i].indptr =
            up_raw(b->blocks[i].indptr, sizeof(int32_t) * (size_t)(b->blocks[i].num_dst + 1));
        blocks[i].indices =
            up_raw(b->blocks[i].indices, sizeof(int32_t) * (size_t)b->blocks[i].num_edges);
    }
    const int64_t nt = b->num_nodes[L * T];
    gd__nn_tensor lc, lg, loss = t_tensor(F32, 1, 1, NULL, 0), dl = t_tensor(F32, nt, 3, NULL, 0);
    T_OK(gd__rsage_forward(mc, b->blocks, b->num_nodes, (const gd__nn_tensor *const *)pxc,
                           id_ptrs(b), 1, key, &lc));
    T_OK(gd__rsage_forward(mg, blocks, b->num_nodes, (const gd__nn_tensor *const *)pxg,
                           (const int64_t *const *)ids, 1, key, &lg));
    near_dev("CUDA logits", &lc, &lg, 1e-4);
    T_OK(gd__nn_softmax_xent(&cpu, &lc, b->labels, 1.0, &loss, &dl));
    gd__nn_tensor dlg = up(&dl);
    T_OK(gd__nn_params_zero_grad(&cpu, &mc->params));
    T_OK(gd__nn_params_zero_grad(&gpu, &mg->params));
    T_OK(gd__rsage_backward(mc, &dl, pdxc));
    T_OK(gd__rsage_backward(mg, &dlg, pdxg));
    T_OK(gd__nn_check_errors(&gpu));
    near_dev("CUDA parameters", &mc->params.params, &mg->params.params, 0);
    near_dev("CUDA gradients", &mc->params.grads, &mg->params.grads, 1e-4);
    for (int t = 0; t < T; t++)
        if (pdxc[t]) near_dev("CUDA input gradients", &dxc[t], &dxg[t], 1e-4);
    fprintf(stderr, "%s, %d layers: CUDA equals CPU (logits, %lld gradients, inputs)\n", kind(), L,
            (long long)mc->params.numel);

    gd__nn_tensor_free(&gpu, &dlg);
    for (int i = 0; i < L * R; i++) {
        gpu.be->release(&gpu, (void *)blocks[i].indptr);
        gpu.be->release(&gpu, (void *)blocks[i].indices);
    }
    for (int t = 0; t < T; t++) {
        gpu.be->release(&gpu, ids[t]);
        if (!pxc[t]) continue;
        t_tensor_free(&xc[t]);
        t_tensor_free(&dxc[t]);
        gd__nn_tensor_free(&gpu, &xg[t]);
        gd__nn_tensor_free(&gpu, &dxg[t]);
    }
    t_tensor_free(&loss);
    t_tensor_free(&dl);
    gd__rsage_destroy(mc);
    gd__rsage_destroy(mg);
}
#endif

/* ------------------------------------------------------------- bad inputs */

static void check_errors(uint64_t *state, const hgraph *g) {
    hbatch b = sample(state, g, 2);
    const gd__rsage_config cfg = config(&b, 4, 0.5, F32);
    gd__rsage_config bad;
    gd__rsage *m = NULL;
    gd__nn_tensor logits, xs[T];
    gd__nn_tensor *x[T];
    make_inputs(state, &b, F32, xs, x);
    const gd__nn_tensor *const *cx = (const gd__nn_tensor *const *)x;

    /* The config: a relation id out of range, a schema without messages for the target ... */
    bad = cfg;
    bad.schema.rel_src[1] = 3;
    T_FAILS(gd__rsage_create(&cpu, &bad, 1, &m), GD_ERR_INVALID_ARG,
            "relation 1 goes from node type 3 to node type 0, but the schema has types 0 to 2");
    T_ASSERT(m == NULL);
    bad = cfg;
    bad.schema.rel_dst[3] = -1;
    T_FAILS(gd__rsage_create(&cpu, &bad, 1, &m), GD_ERR_INVALID_ARG, "relation 3");
    bad = cfg;
    bad.schema.target_type = 2;
    T_FAILS(gd__rsage_create(&cpu, &bad, 1, &m), GD_ERR_INVALID_ARG,
            "no relation enters the target type 2");
    bad = cfg;
    bad.schema.num_types = GD__RSAGE_MAX_TYPES + 1;
    T_FAILS(gd__rsage_create(&cpu, &bad, 1, &m), GD_ERR_INVALID_ARG, "17 node types");
    bad = cfg;
    bad.schema.num_relations = 0;
    T_FAILS(gd__rsage_create(&cpu, &bad, 1, &m), GD_ERR_INVALID_ARG, "0 relations");
    bad = cfg;
    bad.in_dim[1] = -2;
    T_FAILS(gd__rsage_create(&cpu, &bad, 1, &m), GD_ERR_INVALID_ARG, "input width -2");
    bad = cfg;
    bad.dropout = 1.0;
    T_FAILS(gd__rsage_create(&cpu, &bad, 1, &m), GD_ERR_INVALID_ARG, "dropout 1");
    bad = cfg;
    bad.dtype = GD_DTYPE_FLOAT16;
    T_FAILS(gd__rsage_create(&cpu, &bad, 1, &m), GD_ERR_UNSUPPORTED, "float16");
    bad.dtype = F32;
    bad.num_layers = 0;
    T_EQ_INT(gd__rsage_bytes(&bad), 0);

    /* ... and the minibatch: backward first, mismatched sizes, capacities, x's shape. */
    T_OK(gd__rsage_create(&cpu, &cfg, 1, &m));
    T_ASSERT(gd__rsage_bytes(&cfg) >= 4 * 4 * m->params.numel);
    const int64_t nt = b.num_nodes[2 * T];
    gd__nn_tensor dl = t_tensor(F32, nt, 3, NULL, 0), dl_bad = t_tensor(F32, nt + 1, 3, NULL, 0);
    T_FAILS(gd__rsage_backward(m, &dl, NULL), GD_ERR_INVALID_ARG, "no forward pass");
    char msg_buf[256];
    const char *msg = msg_buf;
    gd_block saved = b.blocks[1 * R + 1];
    b.blocks[1 * R + 1].num_src--;
    snprintf(msg_buf, sizeof msg_buf,
             "layer 1, relation 1 (type 1 -> 0): the block has %lld sources and %lld "
             "destinations, but there are %lld nodes of type 1 at layer 1",
             (long long)saved.num_src - 1, (long long)saved.num_dst,
             (long long)b.num_nodes[1 * T + 1]);
    T_FAILS(gd__rsage_forward(m, b.blocks, b.num_nodes, cx, NULL, 1, 0, &logits),
            GD_ERR_INVALID_ARG, msg);
    b.blocks[1 * R + 1] = saved;
    saved = b.blocks[0];
    b.blocks[0].num_dst++;
    T_FAILS(gd__rsage_forward(m, b.blocks, b.num_nodes, cx, NULL, 1, 0, &logits),
            GD_ERR_INVALID_ARG, "layer 0, relation 0 (type 0 -> 0)");
    b.blocks[0] = saved;
    /* A layer with more nodes of a type than the layer below: not a prefix. */
    int64_t nn[(MAXL + 1) * T];
    memcpy(nn, b.num_nodes, sizeof nn);
    nn[0] = nn[1 * T] - 1;
    T_FAILS(gd__rsage_forward(m, b.blocks, nn, cx, NULL, 1, 0, &logits), GD_ERR_INVALID_ARG,
            "a prefix of the layer below's");
    nn[0] = b.num_nodes[0];
    nn[1 * T + 2] = -1;
    T_FAILS(gd__rsage_forward(m, b.blocks, nn, cx, NULL, 1, 0, &logits), GD_ERR_INVALID_ARG,
            "-1 nodes of type 2");
    gd__nn_tensor narrow = t_tensor(F32, b.num_nodes[0], 4, NULL, 0);
    const gd__nn_tensor *wrong[T] = {&narrow, x[1], NULL};
    T_FAILS(gd__rsage_forward(m, b.blocks, b.num_nodes, wrong, NULL, 1, 0, &logits),
            GD_ERR_INVALID_ARG, "x[0] is");
    wrong[0] = x[0];
    wrong[2] = &narrow;
    T_FAILS(gd__rsage_forward(m, b.blocks, b.num_nodes, wrong, NULL, 1, 0, &logits),
            GD_ERR_INVALID_ARG, "node type 2 has no features, but x[2] has 4 columns");
    wrong[1] = NULL;
    T_FAILS(gd__rsage_forward(m, b.blocks, b.num_nodes, wrong, NULL, 1, 0, &logits),
            GD_ERR_INVALID_ARG, "x[1] is 0 x 0");
    T_FAILS(gd__rsage_forward(m, NULL, b.num_nodes, cx, NULL, 1, 0, &logits), GD_ERR_INVALID_ARG,
            "must be given");
    /* A failed forward leaves nothing to go back through. */
    T_FAILS(gd__rsage_backward(m, &dl, NULL), GD_ERR_INVALID_ARG, "no forward pass");
    T_OK(gd__rsage_forward(m, b.blocks, b.num_nodes, cx, NULL, 1, 0, &logits));
    T_FAILS(gd__rsage_backward(m, &dl_bad, NULL), GD_ERR_INVALID_ARG, "dlogits is");
    gd__nn_tensor dx_bad = t_tensor(F32, b.num_nodes[1] + 1, in_dims[1], NULL, 0);
    gd__nn_tensor *dxs[T] = {NULL, &dx_bad, NULL};
    T_FAILS(gd__rsage_backward(m, &dl, dxs), GD_ERR_INVALID_ARG, "dx[1] is");
    T_OK(gd__rsage_backward(m, &dl, NULL));
    gd__rsage_destroy(m);

    /* Sized too small: nodes of one type at one layer, or edges of one relation. */
    bad = cfg;
    bad.max_nodes[1 * T + 1] = b.num_nodes[1 * T + 1] - 1;
    if (bad.max_nodes[1 * T + 1] >= 0) {
        T_OK(gd__rsage_create(&cpu, &bad, 1, &m));
        snprintf(msg_buf, sizeof msg_buf,
                 "layer 1 has %lld nodes of type 1, more than the model was sized for (%lld)",
                 (long long)b.num_nodes[1 * T + 1], (long long)bad.max_nodes[1 * T + 1]);
        T_FAILS(gd__rsage_forward(m, b.blocks, b.num_nodes, cx, NULL, 1, 0, &logits), GD_ERR_RANGE,
                msg);
        gd__rsage_destroy(m);
    }
    bad = cfg;
    bad.max_edges[0] = b.blocks[0].num_edges - 1;
    if (bad.max_edges[0] >= 0) {
        T_OK(gd__rsage_create(&cpu, &bad, 1, &m));
        T_FAILS(gd__rsage_forward(m, b.blocks, b.num_nodes, cx, NULL, 1, 0, &logits), GD_ERR_RANGE,
                "layer 0, relation 0 has");
        gd__rsage_destroy(m);
    }

    /* Every allocation of create, failed in turn: a clean error and nothing left behind. */
    gd_fault_set(GD_FAULT_ALLOC, 0);
    T_OK(gd__rsage_create(&cpu, &cfg, 1, &m));
    const int64_t calls = gd_fault_calls(GD_FAULT_ALLOC);
    gd__rsage_destroy(m);
    T_ASSERT(calls > 5);
    for (int64_t k = 1; k <= calls; k++) {
        gd_fault_set(GD_FAULT_ALLOC, k);
        m = (gd__rsage *)&cpu; /* must be reset */
        T_FAILS(gd__rsage_create(&cpu, &cfg, 1, &m), GD_ERR_NO_MEMORY, "");
        T_ASSERT(m == NULL);
    }
    gd_fault_set(GD_FAULT_ALLOC, 0);

    gd__nn_tensor *all[] = {&dl, &dl_bad, &narrow, &dx_bad, x[0], x[1]};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) t_tensor_free(all[i]);
    free_batch(&b);
}

/* ------------------------------------------------------------- the PyG comparison's input */

static void dump_list(FILE *f, const char *name, const gd__nn_tensor *t, const char *end) {
    fprintf(f, "\"%s\": [", name);
    for (int64_t i = 0; t && i < gd__nn_numel(t); i++)
        fprintf(f, "%s%.17g", i ? ", " : "", t_get(t, i));
    fprintf(f, "]%s", end);
}

/*
 * With GD_RSAGE_DUMP=path, the test writes one float64 case there as JSON instead of running
 * its checks: the schema, a 2-layer minibatch, the inputs, every relation's parameters (R-GCN:
 * W_l alone, and every type's root and bias) and the evaluation-mode logits.
 * tests/py_rsage_pyg.py feeds it to PyG's SAGEConv and HeteroConv, tests/py_rgcn_pyg.py (with
 * --rgcn) to PyG's RGCNConv.
 */
static void dump_case(uint64_t *state, const hgraph *g, const char *path) {
    hbatch b = sample(state, g, 2);
    gd__rsage_config cfg = config(&b, 4, 0.0, F64);
    gd__rsage *m;
    T_OK(gd__rsage_create(&cpu, &cfg, t_rand(state), &m));
    gd__nn_tensor xs[T], logits;
    gd__nn_tensor *x[T];
    make_inputs(state, &b, F64, xs, x);
    T_OK(gd__rsage_forward(m, b.blocks, b.num_nodes, (const gd__nn_tensor *const *)x, NULL, 0, 0,
                           &logits));
    FILE *f = fopen(path, "w");
    if (!f) T_FAIL_("cannot write %s", path);
    fprintf(f,
            "{\"model\": \"%s\", \"T\": %d, \"R\": %d, \"L\": %d, \"target\": 0, "
            "\"hidden\": 4, \"classes\": 3,\n",
            rgcn ? "rgcn" : "rsage", T, R, b.L);
    fprintf(f, "\"rel_src\": [%d, %d, %d, %d], \"rel_dst\": [%d, %d, %d, %d],\n", rel_src[0],
            rel_src[1], rel_src[2], rel_src[3], rel_dst[0], rel_dst[1], rel_dst[2], rel_dst[3]);
    fprintf(f, "\"in_dim\": [%lld, %lld, %lld],\n\"num_nodes\": [", (long long)in_dims[0],
            (long long)in_dims[1], (long long)in_dims[2]);
    for (int i = 0; i < (b.L + 1) * T; i++)
        fprintf(f, "%s%lld", i ? ", " : "", (long long)b.num_nodes[i]);
    fprintf(f, "],\n\"blocks\": [\n");
    for (int i = 0; i < b.L * R; i++) {
        const gd_block *blk = &b.blocks[i];
        fprintf(f, "{\"num_src\": %lld, \"indptr\": [", (long long)blk->num_src);
        for (int64_t d = 0; d <= blk->num_dst; d++)
            fprintf(f, "%s%d", d ? ", " : "", blk->indptr[d]);
        fprintf(f, "], \"indices\": [");
        for (int64_t e = 0; e < blk->num_edges; e++)
            fprintf(f, "%s%d", e ? ", " : "", blk->indices[e]);
        fprintf(f, "]}%s\n", i + 1 < b.L * R ? "," : "");
    }
    fprintf(f, "],\n\"x\": [\n");
    for (int t = 0; t < T; t++) {
        fprintf(f, "{");
        dump_list(f, "v", x[t], t + 1 < T ? "},\n" : "}\n");
    }
    fprintf(f, "],\n\"params\": [\n");
    for (int l = 0; l < b.L; l++)
        for (int r = 0; r < R; r++) {
            const char *sep = l * R + r + 1 < b.L * R ? ",\n" : "\n";
            gd__nn_tensor wl, bias, wr;
            if (!m->slot[l][r].used) {
                fprintf(f, "null%s", sep);
                continue;
            }
            T_OK(gd__rsage_weights(m, l, r, 0, &wl, &bias, &wr));
            fprintf(f, "{");
            dump_list(f, "w_l", &wl, ", ");
            dump_list(f, "b", &bias, ", ");
            dump_list(f, "w_root", &wr, "}");
            fprintf(f, "%s", sep);
        }
    fprintf(f, "],\n");
    /* R-GCN: each (layer, type)'s root and bias (null where the last layer has none). */
    fprintf(f, "\"roots\": [\n");
    for (int l = 0; rgcn && l < b.L; l++)
        for (int t = 0; t < T; t++) {
            const char *sep = l * T + t + 1 < b.L * T ? ",\n" : "\n";
            gd__nn_tensor wr, bias;
            if (!m->root[l][t].used) {
                fprintf(f, "null%s", sep);
                continue;
            }
            T_OK(gd__rsage_root_weights(m, l, t, 0, &wr, &bias));
            fprintf(f, "{");
            dump_list(f, "w_root", &wr, ", ");
            dump_list(f, "b", &bias, "}");
            fprintf(f, "%s", sep);
        }
    fprintf(f, "],\n");
    dump_list(f, "logits", &logits, "}\n");
    T_ASSERT(fclose(f) == 0);
    for (int t = 0; t < T; t++)
        if (x[t]) t_tensor_free(x[t]);
    gd__rsage_destroy(m);
    free_batch(&b);
}

int main(int argc, char **argv) {
    rgcn = argc > 1 && strcmp(argv[1], "--rgcn") == 0;
    uint64_t state = t_seed();
    cpu = gd__nn_cpu_ctx();
#ifdef GD_WITH_CUDA
    have_gpu = gd_device_count() > 0;
    if (have_gpu)
        T_OK(gd__nn_cuda_ctx_create(0, &gpu));
    else
        fprintf(stderr, "no GPU: the CUDA part is skipped, the CPU part runs\n");
#else
    fprintf(stderr, "built without CUDA: the CUDA part is skipped, the CPU part runs\n");
#endif
    hgraph g = make_graph(&state);
    const char *dump = getenv("GD_RSAGE_DUMP");
    if (dump) {
        dump_case(&state, &g, dump);
        free_graph(&g);
#ifdef GD_WITH_CUDA
        if (have_gpu) gd__nn_cuda_ctx_destroy(&gpu);
#endif
        t_check_no_leaks();
        return 0;
    }
    for (int round = 0; round < 3; round++)
        for (int L = 1; L <= MAXL; L++) check_model(&state, &g, L);
    fprintf(stderr, "blocks with edges and more destinations than sources: %d\n", wide_blocks);
    T_ASSERT(wide_blocks > 0);
    check_errors(&state, &g);
    free_graph(&g);
#ifdef GD_WITH_CUDA
    if (have_gpu) gd__nn_cuda_ctx_destroy(&gpu);
#endif
    t_check_no_leaks();
    fprintf(stderr, "%s: ok\n", kind());
    return 0;
}
