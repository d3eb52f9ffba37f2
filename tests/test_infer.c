/*
 * Layer-wise full-neighbour inference (src/train/infer.c).
 *
 * CPU, always: gd__sage_layer_forward equals gd__sage_forward in eval mode bit for bit; the
 * CPU inference equals a float64 reference written here straight from the CSC (logits within
 * 1e-4 relative, predictions equal except where the reference's top two logits are that close)
 * on random graphs with isolated nodes and hubs, int32 and int64 indices, 1 to 3 layers, a
 * hidden width above the kernel's 256-column pass; chunk capacities from 2 rows (every hub's
 * list split into pieces) to all of the graph give the same predictions, and split pieces the
 * same aggregate bits; the number of allocations does not depend on the chunk count; the
 * `tiny` preset; bad arguments and a corrupt graph get clear errors; every allocation of a
 * run fails in turn with a clean error and no leak; accuracy on a split.
 *
 * GPU, when there is one (otherwise skipped, and the program still exits 0 after the CPU
 * checks): the aggregation kernel equals its CPU reference bit for bit on fresh random inputs
 * (tables in GPU memory and in mapped pinned host memory, widths around the 32- and 256-column
 * steps, split windows), output poisoned with NaN; the CUDA inference equals the CPU inference
 * (logits within 1e-4 relative, predictions equal except near ties) with every table in GPU
 * memory, every table in pinned host memory, and mixes, at several chunk capacities; a
 * caller-registered feature tensor is used; every pinning of a run fails in turn cleanly.
 */
#include "io/dataset.h"
#include "sample_util.h"
#include "test_nn_util.h"
#include "train/infer.h"

#define F32 GD_DTYPE_FLOAT32
#define TOL 1e-4

/* ------------------------------------------------------------ fixtures */

typedef struct {
    gd_dataset_t *ds;
    int64_t n, e, in_dim, classes;
} fixture;

/*
 * A dataset over a random graph of sample_util.h (every 13th node isolated, three hubs with
 * n / 2 in-neighbours), random features, labels (some -1) and a test split.
 */
static fixture make_fixture(uint64_t *state, int64_t n, int avg, gd_dtype index_dtype,
                            int64_t in_dim, int64_t classes) {
    fixture f = {NULL, n, 0, in_dim, classes};
    graph g = make_graph(state, n, avg, index_dtype);
    int64_t sh[2] = {n + 1, 1};
    T_OK(gd__dataset_new("infer-test", NULL, 0, &f.ds));
    T_OK(gd__dataset_adopt(f.ds, GD_ARRAY_INDPTR, GD_DTYPE_INT64, 1, sh, g.indptr));
    sh[0] = g.e;
    T_OK(gd__dataset_adopt(f.ds, GD_ARRAY_INDICES, index_dtype, 1, sh, g.indices));
    f.e = g.e;
    float *x;
    int64_t fs[2] = {n, in_dim};
    T_OK(gd__dataset_alloc(f.ds, GD_ARRAY_FEATURES, F32, 2, fs, (void **)&x));
    for (int64_t i = 0; i < n * in_dim; i++) x[i] = (float)t_unif(state);
    int64_t *y, *test, ls[2] = {n, 1}, nt = 0;
    T_OK(gd__dataset_alloc(f.ds, GD_ARRAY_LABELS, GD_DTYPE_INT64, 1, ls, (void **)&y));
    for (int64_t v = 0; v < n; v++)
        y[v] = v % 7 == 3 ? -1 : (int64_t)(t_rand(state) % (uint64_t)classes);
    y[n - 1] = classes - 1; /* num_classes is derived from the largest label */
    int64_t ts[2] = {(n + 1) / 2, 1};
    T_OK(gd__dataset_alloc(f.ds, GD_ARRAY_TEST_IDX, GD_DTYPE_INT64, 1, ts, (void **)&test));
    for (int64_t v = 0; v < n; v += 2) test[nt++] = v;
    T_OK(gd__dataset_finish(f.ds, 1));
    T_EQ_INT(gd_dataset_num_classes(f.ds), classes);
    return f;
}

static void free_fixture(fixture *f) {
    gd_dataset_close(f->ds);
    f->ds = NULL;
}

/* A model of the default kind (through the model interface, as the trainer makes it). */
static gd__model *make_model(const gd__nn_ctx *ctx, int layers, int64_t in_dim, int64_t hidden,
                             int64_t classes, uint64_t seed) {
    /* The dropout is never applied: inference is eval mode. */
    gd__model_config c =
        gd__model_config_make(GD__MODEL_DEFAULT, layers, in_dim, hidden, classes, 0.5, F32);
    for (int l = 0; l <= layers; l++) c.max_nodes[l] = 256;
    gd__model *m = NULL;
    T_OK(gd__model_create(ctx, &c, seed, &m));
    return m;
}

/* The GraphSAGE inside a model of the default kind, for the references written against it. */
static gd__sage *sage_of(gd__model *m) {
    T_EQ_INT(gd__model_get_config(m)->kind, GD__MODEL_SAGE);
    return gd__model_context(m);
}

/* ------------------------------------------------------------ reference */

static int64_t idx_at(const gd_array_view *v, int64_t e) {
    return v->dtype == GD_DTYPE_INT32 ? ((const int32_t *)v->data)[e]
                                      : ((const int64_t *)v->data)[e];
}

/* The model on the whole graph in float64, from the CSC and the CPU model's parameters. */
static double *ref_logits(const gd__sage *m, const gd_dataset_t *ds) {
    gd_array_view ip, ix, fv;
    T_OK(gd_dataset_array(ds, GD_ARRAY_INDPTR, &ip));
    T_OK(gd_dataset_array(ds, GD_ARRAY_INDICES, &ix));
    T_OK(gd_dataset_array(ds, GD_ARRAY_FEATURES, &fv));
    const int64_t n = gd_dataset_num_nodes(ds), *indptr = ip.data;
    const int L = m->cfg.num_layers;
    int64_t w = 1;
    for (int l = 0; l <= L; l++) w = m->dims[l] > w ? m->dims[l] : w;
    double *h = malloc(sizeof(double) * (size_t)(n * w)), *z = malloc(sizeof(double) * (size_t)(n * w));
    double *a = malloc(sizeof(double) * (size_t)w);
    T_ASSERT(h && z && a);
    for (int64_t i = 0; i < n * m->dims[0]; i++) h[i] = ((const float *)fv.data)[i];
    for (int l = 0; l < L; l++) {
        const int64_t din = m->dims[l], dout = m->dims[l + 1];
        gd__nn_tensor wl = gd__nn_param(&m->params, m->w_l[l]);
        gd__nn_tensor wr = gd__nn_param(&m->params, m->w_r[l]);
        gd__nn_tensor b = gd__nn_param(&m->params, m->b[l]);
        for (int64_t v = 0; v < n; v++) {
            const int64_t deg = indptr[v + 1] - indptr[v];
            for (int64_t k = 0; k < din; k++) a[k] = 0;
            for (int64_t e = indptr[v]; e < indptr[v + 1]; e++)
                for (int64_t k = 0; k < din; k++) a[k] += h[idx_at(&ix, e) * din + k];
            for (int64_t k = 0; k < din; k++) a[k] = deg ? a[k] / (double)deg : 0.0;
            for (int64_t j = 0; j < dout; j++) {
                double s = t_get(&b, j);
                for (int64_t k = 0; k < din; k++)
                    s += a[k] * t_get(&wl, k * dout + j) + h[v * din + k] * t_get(&wr, k * dout + j);
                z[v * dout + j] = l < L - 1 && s < 0 ? 0.0 : s;
            }
        }
        double *t = h;
        h = z;
        z = t;
    }
    free(z);
    free(a);
    return h; /* n x classes */
}

/* The first maximal column of row v and its margin over the runner-up. */
static int64_t top(const double *row, int64_t cols, double *margin) {
    int64_t arg = 0;
    for (int64_t j = 1; j < cols; j++)
        if (row[j] > row[arg]) arg = j;
    double second = -INFINITY;
    for (int64_t j = 0; j < cols; j++)
        if (j != arg && row[j] > second) second = row[j];
    *margin = row[arg] - second;
    return arg;
}

/*
 * want (n x c, float64 or float32) against got (float32): logits within TOL relative to
 * max(1, |want|), predictions equal except where want's top two are within that tolerance.
 */
static void compare(const char *what, const double *want_d, const float *want_f, const float *got,
                    const int32_t *want_pred, const int32_t *got_pred, int64_t n, int64_t c) {
    double *row = malloc(sizeof(double) * (size_t)c);
    T_ASSERT(row);
    int64_t near_ties = 0;
    for (int64_t v = 0; v < n; v++) {
        double scale = 1.0;
        for (int64_t j = 0; j < c; j++) {
            row[j] = want_d ? want_d[v * c + j] : want_f[v * c + j];
            const double g = got[v * c + j];
            if (fabs(row[j]) > scale) scale = fabs(row[j]);
            if (!(fabs(g - row[j]) <= TOL * (fabs(row[j]) > 1 ? fabs(row[j]) : 1)))
                T_FAIL_("%s: node %lld logit %lld: %.9g, expected %.9g", what, (long long)v,
                        (long long)j, g, row[j]);
        }
        double margin;
        const int64_t arg = top(row, c, &margin);
        const int64_t want = want_pred ? want_pred[v] : arg;
        if (got_pred[v] != want) {
            if (margin > 2 * TOL * scale)
                T_FAIL_("%s: node %lld predicted %d, expected %lld (margin %g)", what,
                        (long long)v, got_pred[v], (long long)want, margin);
            near_ties++;
        }
    }
    if (near_ties) fprintf(stderr, "%s: %lld predictions differ at near ties\n", what, (long long)near_ties);
    free(row);
}

/* ------------------------------------------------------------ CPU checks */

/* gd__sage_layer_forward, layer by layer, equals gd__sage_forward in eval mode bit for bit. */
static void check_layer_forward(uint64_t *state) {
    gd__nn_ctx cpu = gd__nn_cpu_ctx();
    for (int L = 1; L <= 3; L++) {
        gd__model *model = make_model(&cpu, L, 9, 13, 4, t_rand(state));
        gd__sage *m = sage_of(model);
        gd_block blocks[3];
        int64_t nodes[4];
        nodes[L] = 1 + (int64_t)(t_rand(state) % 10);
        for (int l = L - 1; l >= 0; l--) nodes[l] = nodes[l + 1] + (int64_t)(t_rand(state) % 30);
        for (int l = 0; l < L; l++) blocks[l] = t_block(state, nodes[l + 1], nodes[l], 6, 4);
        gd__nn_tensor x = t_tensor(F32, nodes[0], 9, state, 1.0), logits;
        T_OK(gd__sage_forward(m, blocks, &x, NULL, 0, 0, &logits));
        gd__nn_tensor h = x, agg, out;
        for (int l = 0; l < L; l++) {
            agg = t_tensor(F32, nodes[l + 1], m->dims[l], NULL, 0);
            out = t_tensor(F32, nodes[l + 1], m->dims[l + 1], NULL, 0);
            T_OK(gd__sage_layer_forward(m, l, &blocks[l], &h, &agg, &out, l < L - 1));
            t_tensor_free(&agg);
            if (l > 0) t_tensor_free(&h);
            h = out;
        }
        T_EQ_INT(h.rows, logits.rows);
        T_ASSERT(memcmp(h.data, logits.data, sizeof(float) * (size_t)gd__nn_numel(&h)) == 0);
        /* Shapes that do not fit are refused with the layer named. */
        agg = t_tensor(F32, nodes[1], m->dims[0], NULL, 0);
        out = t_tensor(F32, nodes[1] + 1, m->dims[1], NULL, 0);
        T_FAILS(gd__sage_layer_forward(m, 0, &blocks[0], &x, &agg, &out, 1), GD_ERR_INVALID_ARG,
                "layer 0");
        T_FAILS(gd__sage_layer_forward(m, L, &blocks[0], &x, &agg, &out, 1), GD_ERR_INVALID_ARG,
                "layer");
        t_tensor_free(&agg);
        t_tensor_free(&out);
        t_tensor_free(&h);
        t_tensor_free(&x);
        for (int l = 0; l < L; l++) t_block_free(&blocks[l]);
        gd__model_destroy(model);
    }
}

/* The aggregation in pieces (any split of the edge window) gives the unsplit bits. */
static void check_agg_pieces(uint64_t *state) {
    for (int wide = 0; wide < 2; wide++) {
        const int64_t rows = 50, cols = 1 + (int64_t)(t_rand(state) % 40), nd = 4;
        float *table = malloc(sizeof(float) * (size_t)(rows * cols));
        float *a = malloc(sizeof(float) * (size_t)(nd * cols)), *b = malloc(sizeof(float) * (size_t)(nd * cols));
        int64_t indptr[5] = {100, 100, 180, 181, 260}; /* global edge ids of a slice */
        int64_t idx64[160];
        int32_t idx32[160];
        T_ASSERT(table && a && b);
        for (int64_t i = 0; i < rows * cols; i++) table[i] = (float)t_unif(state);
        for (int i = 0; i < 160; i++) idx32[i] = (int32_t)(idx64[i] = (int64_t)(t_rand(state) % rows));
        const void *idx = wide ? (const void *)idx64 : (const void *)idx32;
        const size_t isz = wide ? 8 : 4;
        const gd_dtype dt = wide ? GD_DTYPE_INT64 : GD_DTYPE_INT32;
        gd__infer_agg_cpu(table, cols, indptr, idx, dt, nd, 100, 260, 1, 1, a, 2);
        /* A node of the slice, its list split in windows of w edges. */
        for (int64_t d = 0; d < nd; d++) {
            const int64_t e0 = indptr[d], e1 = indptr[d + 1];
            const int64_t w = 1 + (int64_t)(t_rand(state) % 9);
            for (int64_t i = 0; i < cols; i++) b[d * cols + i] = NAN;
            int64_t p = 0;
            for (int64_t wb = e0; wb < e1 || (wb == e0 && p == 0); wb += w, p++) {
                const int64_t we = wb + w < e1 ? wb + w : e1;
                gd__infer_agg_cpu(table, cols, indptr + d,
                                  (const char *)idx + (size_t)(wb - 100) * isz, dt, 1, wb, we,
                                  wb == e0, we == e1, b + d * cols, 1);
            }
            T_ASSERT(memcmp(a + d * cols, b + d * cols, sizeof(float) * (size_t)cols) == 0);
        }
        /* The mean of node 0 (no in-edges) is 0; of node 2 (one edge) that row exactly. */
        for (int64_t i = 0; i < cols; i++) {
            T_ASSERT(a[i] == 0.0f);
            T_ASSERT(a[2 * cols + i] == table[idx32[80] * cols + i]);
        }
        free(table);
        free(a);
        free(b);
    }
}

static int32_t *new_pred(int64_t n) {
    int32_t *p = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
    T_ASSERT(p);
    for (int64_t i = 0; i < n; i++) p[i] = -7; /* poison */
    return p;
}

static float *new_logits(int64_t n, int64_t c) {
    float *p = malloc(sizeof(float) * (size_t)(n * c > 0 ? n * c : 1));
    T_ASSERT(p);
    for (int64_t i = 0; i < n * c; i++) p[i] = NAN;
    return p;
}

/* Allocation calls of one CPU inference at a chunk capacity. */
static int64_t alloc_calls(gd__model *m, const fixture *f, int64_t cap) {
    gd__infer_options o = GD__INFER_OPTIONS_INIT;
    o.max_chunk_rows = cap;
    int32_t *pred = new_pred(f->n);
    gd_fault_set(GD_FAULT_ALLOC, 0);
    T_OK(gd__model_infer(m, f->ds, &o, pred, NULL, NULL));
    const int64_t calls = gd_fault_calls(GD_FAULT_ALLOC);
    free(pred);
    return calls;
}

static void check_cpu_infer(uint64_t *state, int L, gd_dtype index_dtype, int64_t hidden) {
    gd__nn_ctx cpu = gd__nn_cpu_ctx();
    fixture f = make_fixture(state, 300 + (int64_t)(t_rand(state) % 300), 6, index_dtype, 11, 5);
    gd__model *m = make_model(&cpu, L, f.in_dim, hidden, f.classes, t_rand(state));
    double *ref = ref_logits(sage_of(m), f.ds);
    int32_t *base_pred = new_pred(f.n);
    float *base = new_logits(f.n, f.classes);
    gd__infer_stats stats;
    T_OK(gd__model_infer(m, f.ds, NULL, base_pred, base, &stats));
    T_EQ_INT(stats.chunks, 1);
    T_EQ_INT(stats.bytes_read_host, 0);
    compare("cpu inference vs reference", ref, NULL, base, NULL, base_pred, f.n, f.classes);

    /* Every capacity gives the same predictions; small ones split the hubs' lists. */
    const int64_t caps[] = {2, 3, 7, 40, 301, f.n + f.e};
    for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
        gd__infer_options o = GD__INFER_OPTIONS_INIT;
        o.max_chunk_rows = caps[c];
        o.threads = 1 + (int)(c & 1);
        int32_t *pred = new_pred(f.n), *again = new_pred(f.n);
        float *z = new_logits(f.n, f.classes);
        T_OK(gd__model_infer(m, f.ds, &o, pred, z, &stats));
        T_EQ_INT(stats.chunk_rows, caps[c]);
        if (caps[c] <= 40) T_ASSERT(stats.pieces > stats.chunks); /* hubs have n / 2 edges */
        compare("cpu inference by chunks", NULL, base, z, base_pred, pred, f.n, f.classes);
        /* Without logits, the same predictions (the run is deterministic). */
        T_OK(gd__model_infer(m, f.ds, &o, again, NULL, NULL));
        T_ASSERT(memcmp(pred, again, sizeof(int32_t) * (size_t)f.n) == 0);
        free(pred);
        free(again);
        free(z);
    }
    /* Everything is allocated before the loops: the count does not follow the chunks. */
    T_EQ_INT(alloc_calls(m, &f, 2), alloc_calls(m, &f, f.n + f.e));

    /* Accuracy on the test split, counted here from the labels. */
    gd_array_view y;
    T_OK(gd_dataset_array(f.ds, GD_ARRAY_LABELS, &y));
    int64_t correct = 0, labelled = 0, count;
    for (int64_t v = 0; v < f.n; v += 2) {
        const int64_t lab = ((const int64_t *)y.data)[v];
        if (lab < 0) continue;
        labelled++;
        correct += base_pred[v] == lab;
    }
    double acc;
    T_OK(gd__infer_accuracy(f.ds, GD_ARRAY_TEST_IDX, base_pred, &acc, &count));
    T_EQ_INT(count, labelled);
    T_NEAR(acc, (double)correct / (double)labelled, 1e-12);
    T_OK(gd__infer_accuracy(f.ds, GD_ARRAY_VALID_IDX, base_pred, &acc, &count));
    T_ASSERT(isnan(acc));
    T_EQ_INT(count, 0);

    free(ref);
    free(base_pred);
    free(base);
    gd__model_destroy(m);
    free_fixture(&f);
}

/* The tiny preset: default chunks against small ones and the reference. */
static void check_tiny(uint64_t *state) {
    gd_generate_options g = GD_GENERATE_OPTIONS_INIT;
    g.preset = "tiny";
    g.seed = t_rand(state);
    gd_dataset_t *ds = NULL;
    T_OK(gd_generate(&g, &ds));
    gd__nn_ctx cpu = gd__nn_cpu_ctx();
    const int64_t n = gd_dataset_num_nodes(ds), c = gd_dataset_num_classes(ds);
    gd__model *m = make_model(&cpu, 2, gd_dataset_feature_dim(ds), 16, c, t_rand(state));
    double *ref = ref_logits(sage_of(m), ds);
    int32_t *p1 = new_pred(n), *p2 = new_pred(n);
    float *z1 = new_logits(n, c), *z2 = new_logits(n, c);
    gd__infer_options o = GD__INFER_OPTIONS_INIT;
    T_OK(gd__model_infer(m, ds, &o, p1, z1, NULL));
    compare("tiny: cpu inference vs reference", ref, NULL, z1, NULL, p1, n, c);
    o.max_chunk_rows = 1000;
    gd__infer_stats stats;
    T_OK(gd__model_infer(m, ds, &o, p2, z2, &stats));
    T_ASSERT(stats.chunks > 100);
    compare("tiny: 1000-row chunks", NULL, z1, z2, p1, p2, n, c);
    double acc;
    T_OK(gd__infer_accuracy(ds, GD_ARRAY_TEST_IDX, p1, &acc, NULL));
    T_ASSERT(acc >= 0 && acc <= 1);
    free(ref);
    free(p1);
    free(p2);
    free(z1);
    free(z2);
    gd__model_destroy(m);
    gd_dataset_close(ds);
}

static int stop_after_two(void *user, const char *stage, uint64_t done, uint64_t total) {
    (void)stage;
    (void)total;
    *(int *)user += 1;
    return done >= 2;
}

static void check_errors(uint64_t *state) {
    gd__nn_ctx cpu = gd__nn_cpu_ctx();
    fixture f = make_fixture(state, 200, 4, GD_DTYPE_INT32, 6, 3);
    gd__model *m = make_model(&cpu, 2, 6, 8, 3, 1);
    int32_t *pred = new_pred(f.n);
    gd__infer_options o = GD__INFER_OPTIONS_INIT;
    T_FAILS(gd__model_infer(NULL, f.ds, NULL, pred, NULL, NULL), GD_ERR_INVALID_ARG, "model");
    T_FAILS(gd__model_infer(m, f.ds, NULL, NULL, NULL, NULL), GD_ERR_INVALID_ARG, "prediction");
    o.max_chunk_rows = 1;
    T_FAILS(gd__model_infer(m, f.ds, &o, pred, NULL, NULL), GD_ERR_INVALID_ARG, "at least 2");
    o.max_chunk_rows = 0;
    o.threads = -1;
    T_FAILS(gd__model_infer(m, f.ds, &o, pred, NULL, NULL), GD_ERR_INVALID_ARG, "negative");
    o.threads = 0;

    /* A model of another input width. */
    gd__model *m7 = make_model(&cpu, 2, 7, 8, 3, 1);
    T_FAILS(gd__model_infer(m7, f.ds, NULL, pred, NULL, NULL), GD_ERR_INVALID_ARG, "features");
    gd__model_destroy(m7);
    /* A float64 model. */
    gd__model_config c64 = *gd__model_get_config(m);
    c64.dtype = GD_DTYPE_FLOAT64;
    gd__model *m64 = NULL;
    T_OK(gd__model_create(&cpu, &c64, 1, &m64));
    T_FAILS(gd__model_infer(m64, f.ds, NULL, pred, NULL, NULL), GD_ERR_UNSUPPORTED, "float32");
    gd__model_destroy(m64);

    /* The progress callback sees every chunk and can stop the run. */
    int calls = 0;
    o.max_chunk_rows = 10;
    o.progress = stop_after_two;
    o.progress_user = &calls;
    T_FAILS(gd__model_infer(m, f.ds, &o, pred, NULL, NULL), GD_ERR_INTERRUPTED, "inference");
    T_EQ_INT(calls, 2);
    o = (gd__infer_options)GD__INFER_OPTIONS_INIT;

    /* Accuracy: not a split; a split id out of range. */
    double acc;
    T_FAILS(gd__infer_accuracy(f.ds, GD_ARRAY_LABELS, pred, &acc, NULL), GD_ERR_INVALID_ARG,
            "not a split");
    gd_array_view tv;
    T_OK(gd_dataset_array(f.ds, GD_ARRAY_TEST_IDX, &tv));
    ((int64_t *)tv.data)[3] = f.n + 4;
    T_FAILS(gd__infer_accuracy(f.ds, GD_ARRAY_TEST_IDX, pred, &acc, NULL), GD_ERR_RANGE,
            "test_idx[3]");
    ((int64_t *)tv.data)[3] = 6;

    /* A corrupt graph is refused before anything reads it. */
    gd_array_view iv;
    T_OK(gd_dataset_array(f.ds, GD_ARRAY_INDICES, &iv));
    T_ASSERT(iv.shape[0] > 10);
    const int32_t saved = ((int32_t *)iv.data)[10];
    ((int32_t *)iv.data)[10] = (int32_t)f.n + 3;
    T_FAILS(gd__model_infer(m, f.ds, NULL, pred, NULL, NULL), GD_ERR_FORMAT, "indices[10]");
    ((int32_t *)iv.data)[10] = saved;
    T_OK(gd__model_infer(m, f.ds, NULL, pred, NULL, NULL));

    free(pred);
    gd__model_destroy(m);
    free_fixture(&f);
}

/* Every allocation of a run fails in turn: a clean error, nothing leaked, then success. */
static void check_faults_cpu(uint64_t *state) {
    gd__nn_ctx cpu = gd__nn_cpu_ctx();
    fixture f = make_fixture(state, 150, 4, GD_DTYPE_INT64, 5, 4);
    gd__model *m = make_model(&cpu, 3, 5, 6, 4, 2);
    int32_t *pred = new_pred(f.n);
    gd__infer_options o = GD__INFER_OPTIONS_INIT;
    o.max_chunk_rows = 9;
    int64_t blocks0, bytes0, blocks, bytes;
    gd_alloc_stats(&blocks0, &bytes0);
    gd_fault_set(GD_FAULT_ALLOC, 0);
    T_OK(gd__model_infer(m, f.ds, &o, pred, NULL, NULL));
    const int64_t calls = gd_fault_calls(GD_FAULT_ALLOC);
    T_ASSERT(calls >= 3); /* two hidden tables and the chunk buffers */
    for (int64_t k = 1; k <= calls; k++) {
        gd_fault_set(GD_FAULT_ALLOC, k);
        T_FAILS(gd__model_infer(m, f.ds, &o, pred, NULL, NULL), GD_ERR_NO_MEMORY, "out of memory");
        gd_fault_set(GD_FAULT_ALLOC, 0);
        gd_alloc_stats(&blocks, &bytes);
        T_EQ_INT(blocks, blocks0);
        T_EQ_INT(bytes, bytes0);
    }
    T_OK(gd__model_infer(m, f.ds, &o, pred, NULL, NULL));
    free(pred);
    gd__model_destroy(m);
    free_fixture(&f);
}

/* ------------------------------------------------------------ GPU checks */

#ifdef GD_WITH_CUDA
#include "feature/internal.h"
#include "core/cuda.h"

/* The kernel against its CPU reference, bit for bit, on a table in GPU or mapped host memory. */
static void check_agg_kernel(uint64_t *state, gd__nn_ctx *gpu) {
    const int64_t widths[] = {1, 31, 32, 33, 100, 256, 257, 600};
    for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++)
        for (int wide = 0; wide < 2; wide++)
            for (int mapped = 0; mapped < 2; mapped++) {
                const int64_t cols = widths[wi], rows = 1 + (int64_t)(t_rand(state) % 300);
                const int64_t nd = 1 + (int64_t)(t_rand(state) % 120);
                const size_t isz = wide ? 8 : 4;
                const gd_dtype dt = wide ? GD_DTYPE_INT64 : GD_DTYPE_INT32;
                /* A slice of a larger graph: global edge ids start at base. */
                const int64_t base = (int64_t)(t_rand(state) % 1000);
                int64_t *indptr = malloc(sizeof(int64_t) * (size_t)(nd + 1));
                T_ASSERT(indptr);
                indptr[0] = base;
                for (int64_t d = 0; d < nd; d++) {
                    int64_t deg = (int64_t)(t_rand(state) % 12);
                    if (d % 5 == 1) deg = 0;
                    if (d == 0 && nd > 3) deg = 70; /* a hub: more than two index loads */
                    indptr[d + 1] = indptr[d] + deg;
                }
                const int64_t ne = indptr[nd] - base;
                /* A window: all edges, or a part of them (first / last flags as the driver). */
                int64_t wb = base, we = base + ne;
                int first = 1, last = 1;
                if (t_rand(state) % 2 && ne > 2) {
                    wb = base + (int64_t)(t_rand(state) % (uint64_t)ne);
                    we = wb + (int64_t)(t_rand(state) % (uint64_t)(base + ne - wb + 1));
                    first = wb == base;
                    last = we == base + ne;
                }
                char *idx = malloc(isz * (size_t)(ne + 1));
                float *agg0 = malloc(sizeof(float) * (size_t)(nd * cols));
                float *want = malloc(sizeof(float) * (size_t)(nd * cols));
                float *got = malloc(sizeof(float) * (size_t)(nd * cols));
                T_ASSERT(idx && agg0 && want && got);
                for (int64_t e = 0; e < ne; e++) {
                    const int64_t r = (int64_t)(t_rand(state) % (uint64_t)rows);
                    if (wide) ((int64_t *)idx)[e] = r;
                    else ((int32_t *)idx)[e] = (int32_t)r;
                }
                for (int64_t i = 0; i < nd * cols; i++)
                    agg0[i] = first ? NAN : (float)t_unif(state); /* poison, or a partial sum */
                gd_host_tensor_t *ht = NULL;
                T_OK(gd_host_tensor_create(rows, cols, F32, 0, &ht));
                float *tab = gd_host_tensor_data(ht);
                for (int64_t i = 0; i < rows * cols; i++) tab[i] = (float)t_unif(state);
                const float *dtab;
                void *dtab_owned = NULL;
                if (mapped) {
                    gd_context_t *c; /* the default context of the model's GPU */
                    T_OK(gd_context_default(gpu->device, &c));
                    T_OK(gd_host_tensor_register(ht, c));
                    gd_context_destroy(c); /* the tensor keeps its own reference */
                    dtab = ht->device_ptr;
                } else {
                    CU(cudaMalloc(&dtab_owned, sizeof(float) * (size_t)(rows * cols)));
                    CU(cudaMemcpy(dtab_owned, tab, sizeof(float) * (size_t)(rows * cols),
                                  cudaMemcpyHostToDevice));
                    dtab = dtab_owned;
                }
                void *dptr, *didx, *dagg;
                CU(cudaMalloc(&dptr, sizeof(int64_t) * (size_t)(nd + 1)));
                CU(cudaMalloc(&didx, isz * (size_t)(we - wb + 1)));
                CU(cudaMalloc(&dagg, sizeof(float) * (size_t)(nd * cols)));
                CU(cudaMemcpy(dptr, indptr, sizeof(int64_t) * (size_t)(nd + 1), cudaMemcpyHostToDevice));
                CU(cudaMemcpy(didx, idx + (size_t)(wb - base) * isz, isz * (size_t)(we - wb),
                              cudaMemcpyHostToDevice));
                CU(cudaMemcpy(dagg, agg0, sizeof(float) * (size_t)(nd * cols), cudaMemcpyHostToDevice));
                /*
                 * Regression, "test_infer failed 7 of 8 copies run at once on the H100": a
                 * copy from pageable memory may return before its data lands, and the kernel
                 * runs on the nn context's non-blocking stream, which does not wait for the
                 * legacy stream the copies went on. Wait for the device before the launch.
                 */
                CU(cudaDeviceSynchronize());
                memcpy(want, agg0, sizeof(float) * (size_t)(nd * cols));
                gd__infer_agg_cpu(tab, cols, indptr, idx + (size_t)(wb - base) * isz, dt, nd, wb, we,
                                  first, last, want, 2);
                T_OK(gd__infer_cuda_agg(gpu->stream, dtab, cols, dptr, didx, dt, nd, wb, we, first,
                                        last, dagg));
                T_OK(gd__cuda_stream_sync(gpu->stream));
                CU(cudaMemcpy(got, dagg, sizeof(float) * (size_t)(nd * cols), cudaMemcpyDeviceToHost));
                for (int64_t i = 0; i < nd * cols; i++)
                    if (memcmp(&want[i], &got[i], sizeof(float)) != 0 &&
                        !(isnan(want[i]) && isnan(got[i])))
                        T_FAIL_("aggregation kernel (cols %lld, %s, %s, window [%lld, %lld) of "
                                "[%lld, %lld), first %d last %d): element %lld = %.9g, CPU %.9g",
                                (long long)cols, wide ? "int64" : "int32",
                                mapped ? "mapped host table" : "device table", (long long)wb,
                                (long long)we, (long long)base, (long long)(base + ne), first,
                                last, (long long)i, got[i], want[i]);
                CU(cudaFree(dptr));
                CU(cudaFree(didx));
                CU(cudaFree(dagg));
                if (dtab_owned) CU(cudaFree(dtab_owned));
                gd_host_tensor_destroy(ht);
                free(indptr);
                free(idx);
                free(agg0);
                free(want);
                free(got);
            }
}

/* Bytes of one chunk row in setup_gpu's accounting (see infer.c). */
static int64_t unit_bytes(const gd__model *m, size_t isz) {
    int64_t in_max = 1, out_max = 1;
    for (int l = 0; l < gd__model_get_config(m)->num_layers; l++) {
        if (gd__model_dim(m, l) > in_max) in_max = gd__model_dim(m, l);
        if (gd__model_dim(m, l + 1) > out_max) out_max = gd__model_dim(m, l + 1);
    }
    return (int64_t)(8 + isz) + 4 * (2 * in_max + out_max);
}

static void check_gpu_infer(uint64_t *state, gd__nn_ctx *gpu, int L, gd_dtype index_dtype,
                            int64_t hidden) {
    gd__nn_ctx cpu = gd__nn_cpu_ctx();
    fixture f = make_fixture(state, 200 + (int64_t)(t_rand(state) % 200), 4, index_dtype, 13, 6);
    const uint64_t seed = t_rand(state);
    gd__model *mc = make_model(&cpu, L, f.in_dim, hidden, f.classes, seed);
    gd__model *mg = make_model(gpu, L, f.in_dim, hidden, f.classes, seed);
    int32_t *want_pred = new_pred(f.n);
    float *want = new_logits(f.n, f.classes);
    T_OK(gd__model_infer(mc, f.ds, NULL, want_pred, want, NULL));

    const int64_t unit = unit_bytes(mg, gd_dtype_size(index_dtype));
    const int64_t table_bytes = f.n * hidden * 4, feat_bytes = f.n * f.in_dim * 4;
    const int hidden_tables = L - 1 < 2 ? L - 1 : 2;
    /* Placements: all in GPU memory; all in host memory; hidden on the GPU, features not. */
    const int64_t caps[] = {0, 2, 7, 64};
    for (int place = 0; place < 3; place++)
        for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
            gd__infer_options o = GD__INFER_OPTIONS_INIT;
            o.max_chunk_rows = caps[c];
            const int64_t reserve = (caps[c] ? caps[c] : (f.n + f.e < 65536 ? f.n + f.e : 65536)) * unit;
            if (place == 1) o.memory_budget = reserve;
            if (place == 2) o.memory_budget = reserve + hidden_tables * table_bytes + feat_bytes - 1;
            int32_t *pred = new_pred(f.n);
            float *z = new_logits(f.n, f.classes);
            gd__infer_stats stats;
            char what[128];
            snprintf(what, sizeof what, "gpu inference, %d layers, placement %d, %lld rows", L,
                     place, (long long)caps[c]);
            T_OK(gd__model_infer(mg, f.ds, &o, pred, z, &stats));
            T_EQ_INT(stats.features_on_device, place == 0);
            T_EQ_INT(stats.hidden_on_device, place == 1 ? 0 : hidden_tables);
            T_ASSERT(place == 0 ? stats.bytes_read_host == 0 : stats.bytes_read_host > 0);
            if (caps[c] && caps[c] <= 64) T_ASSERT(stats.pieces > stats.chunks);
            compare(what, NULL, want, z, want_pred, pred, f.n, f.classes);
            free(pred);
            free(z);
        }

    /* Features given as a registered host tensor (the trainer's zero-copy table). */
    {
        gd_array_view fv;
        T_OK(gd_dataset_array(f.ds, GD_ARRAY_FEATURES, &fv));
        gd_host_tensor_t *ft = NULL;
        T_OK(gd_host_tensor_adopt(fv.data, f.n, f.in_dim, F32, GD_HOST_TENSOR_READ_ONLY, &ft));
        {
            gd_context_t *c; /* the default context of the model's GPU */
            T_OK(gd_context_default(gpu->device, &c));
            T_OK(gd_host_tensor_register(ft, c));
            gd_context_destroy(c); /* the tensor keeps its own reference */
        }
        gd__infer_options o = GD__INFER_OPTIONS_INIT;
        o.max_chunk_rows = 50;
        o.memory_budget = 50 * unit;
        o.features = ft;
        int32_t *pred = new_pred(f.n);
        float *z = new_logits(f.n, f.classes);
        gd__infer_stats stats;
        T_OK(gd__model_infer(mg, f.ds, &o, pred, z, &stats));
        T_EQ_INT(stats.features_on_device, 0);
        compare("gpu inference, the caller's feature tensor", NULL, want, z, want_pred, pred, f.n,
                f.classes);
        free(z);
        T_ASSERT(gd_host_tensor_is_registered(ft)); /* still the caller's */
        /* A budget below one chunk is refused with the fix named. */
        o.memory_budget = 10;
        T_FAILS(gd__model_infer(mg, f.ds, &o, pred, NULL, NULL), GD_ERR_NO_MEMORY, "raise the budget");
        gd_host_tensor_destroy(ft);
        free(pred);
    }
    free(want_pred);
    free(want);
    gd__model_destroy(mc);
    gd__model_destroy(mg);
    free_fixture(&f);
}

/* The tiny preset: GPU against CPU with every table in GPU memory, then in host memory. */
static void check_gpu_tiny(uint64_t *state, gd__nn_ctx *gpu) {
    gd_generate_options g = GD_GENERATE_OPTIONS_INIT;
    g.preset = "tiny";
    g.seed = t_rand(state);
    gd_dataset_t *ds = NULL;
    T_OK(gd_generate(&g, &ds));
    gd__nn_ctx cpu = gd__nn_cpu_ctx();
    const int64_t n = gd_dataset_num_nodes(ds), c = gd_dataset_num_classes(ds);
    const uint64_t seed = t_rand(state);
    gd__model *mc = make_model(&cpu, 3, gd_dataset_feature_dim(ds), 64, c, seed);
    gd__model *mg = make_model(gpu, 3, gd_dataset_feature_dim(ds), 64, c, seed);
    int32_t *p1 = new_pred(n), *p2 = new_pred(n);
    float *z1 = new_logits(n, c), *z2 = new_logits(n, c);
    T_OK(gd__model_infer(mc, ds, NULL, p1, z1, NULL));
    for (int host = 0; host < 2; host++) {
        gd__infer_options o = GD__INFER_OPTIONS_INIT;
        gd__infer_stats stats;
        if (host) {
            o.max_chunk_rows = 5000;
            o.memory_budget = 5000 * unit_bytes(mg, gd_dtype_size(GD_DTYPE_INT32));
        }
        T_OK(gd__model_infer(mg, ds, &o, p2, z2, &stats));
        T_EQ_INT(stats.features_on_device, !host);
        T_EQ_INT(stats.hidden_on_device, host ? 0 : 2);
        compare(host ? "tiny: gpu inference from host memory" : "tiny: gpu inference", NULL, z1,
                z2, p1, p2, n, c);
        fprintf(stderr, "tiny, 3 layers, hidden 64, %s: %.3f s, %lld chunks per layer\n",
                host ? "tables in pinned host memory" : "tables in GPU memory", stats.seconds,
                (long long)stats.chunks);
    }
    free(p1);
    free(p2);
    free(z1);
    free(z2);
    gd__model_destroy(mc);
    gd__model_destroy(mg);
    gd_dataset_close(ds);
}

/* Every pinning of a run with host tables fails in turn: a clean error, no leak. */
static void check_faults_gpu(uint64_t *state, gd__nn_ctx *gpu) {
    fixture f = make_fixture(state, 120, 4, GD_DTYPE_INT32, 5, 3);
    gd__model *m = make_model(gpu, 3, 5, 6, 3, 3);
    int32_t *pred = new_pred(f.n);
    gd__infer_options o = GD__INFER_OPTIONS_INIT;
    o.max_chunk_rows = 16;
    o.memory_budget = 16 * unit_bytes(m, 4);
    int64_t blocks0, bytes0, blocks, bytes;
    gd_alloc_stats(&blocks0, &bytes0);
    T_OK(gd_param_set("GD_PIN_CHUNK_MB", "1"));
    for (int kind = 0; kind < 2; kind++) {
        const gd_fault_kind fk = kind ? GD_FAULT_PIN : GD_FAULT_ALLOC;
        gd_fault_set(fk, 0);
        T_OK(gd__model_infer(m, f.ds, &o, pred, NULL, NULL));
        const int64_t calls = gd_fault_calls(fk);
        if (kind) T_ASSERT(calls >= 4); /* features, two hidden tables, the stagings */
        for (int64_t k = 1; k <= calls; k++) {
            gd_fault_set(fk, k);
            gd_status st = gd__model_infer(m, f.ds, &o, pred, NULL, NULL);
            gd_fault_set(fk, 0);
            if (st != (kind ? GD_ERR_PIN : GD_ERR_NO_MEMORY))
                T_FAIL_("fault %d of kind %d: %s: %s", (int)k, kind, gd_status_string(st),
                        gd_last_error());
            gd_alloc_stats(&blocks, &bytes);
            T_EQ_INT(blocks, blocks0);
            T_EQ_INT(bytes, bytes0);
        }
    }
    T_OK(gd_param_set("GD_PIN_CHUNK_MB", NULL));
    T_OK(gd__model_infer(m, f.ds, &o, pred, NULL, NULL));
    free(pred);
    gd__model_destroy(m);
    free_fixture(&f);
}
#endif

int main(void) {
    uint64_t state = t_seed();
    check_layer_forward(&state);
    check_agg_pieces(&state);
    for (int L = 1; L <= 3; L++) {
        check_cpu_infer(&state, L, GD_DTYPE_INT32, 16);
        check_cpu_infer(&state, L, GD_DTYPE_INT64, L == 2 ? 300 : 8);
    }
    check_tiny(&state);
    check_errors(&state);
    check_faults_cpu(&state);
    t_check_no_leaks();
    fprintf(stderr, "CPU checks passed\n");
#ifdef GD_WITH_CUDA
    if (gd_device_count() == 0) {
        fprintf(stderr, "no GPU: the GPU inference checks are skipped\n");
        return 0;
    }
    gd__nn_ctx gpu;
    T_OK(gd__nn_cuda_ctx_create(0, &gpu));
    check_agg_kernel(&state, &gpu);
    for (int L = 1; L <= 3; L++) {
        check_gpu_infer(&state, &gpu, L, GD_DTYPE_INT32, 16);
        check_gpu_infer(&state, &gpu, L, GD_DTYPE_INT64, L == 3 ? 300 : 24);
    }
    check_gpu_tiny(&state, &gpu);
    check_faults_gpu(&state, &gpu);
    gd__nn_cuda_ctx_destroy(&gpu);
    t_check_no_leaks();
    printf("GPU inference equals the CPU inference\n");
#else
    fprintf(stderr, "built without CUDA: the GPU inference checks are skipped\n");
#endif
    return 0;
}
