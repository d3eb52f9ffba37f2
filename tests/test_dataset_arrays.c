/*
 * gd_dataset_from_arrays (issue 18, item 3): a dataset from the caller's arrays.
 *   - COO edges, shuffled and repeated, give the CSC of the dataset they came from, bit for bit;
 *   - CSC borrowed is read in place (the same pointers), copied is a copy (the caller's later
 *     writes do not reach it);
 *   - a model trained on it gives the losses of the same model on the source dataset;
 *   - saved and reopened it is the same dataset;
 *   - bad input fails naming the array and the value: both graph forms or none, a negative id,
 *     an index out of range, a NaN feature, a label beyond num_classes, features without a width.
 */
#include "test.h"

typedef struct {
    int64_t n, e, dim;
    const int64_t *indptr;
    const void *indices;
    gd_dtype idx_dtype;
    const float *x;
    const int64_t *y;
    const int64_t *split[3];
    int64_t split_n[3];
} source;

static void view(const gd_dataset_t *ds, gd_array_id id, gd_array_view *v) {
    T_OK(gd_dataset_array(ds, id, v));
}

static source describe(const gd_dataset_t *ds) {
    source s;
    gd_array_view v;
    memset(&s, 0, sizeof s);
    s.n = gd_dataset_num_nodes(ds);
    s.e = gd_dataset_num_edges(ds);
    s.dim = gd_dataset_feature_dim(ds);
    view(ds, GD_ARRAY_INDPTR, &v);
    s.indptr = v.data;
    view(ds, GD_ARRAY_INDICES, &v);
    s.indices = v.data;
    s.idx_dtype = v.dtype;
    view(ds, GD_ARRAY_FEATURES, &v);
    T_ASSERT(v.dtype == GD_DTYPE_FLOAT32);
    s.x = v.data;
    view(ds, GD_ARRAY_LABELS, &v);
    T_ASSERT(v.dtype == GD_DTYPE_INT64);
    s.y = v.data;
    for (int i = 0; i < 3; i++) {
        view(ds, (gd_array_id)(GD_ARRAY_TRAIN_IDX + i), &v);
        T_ASSERT(v.dtype == GD_DTYPE_INT64);
        s.split[i] = v.data;
        s.split_n[i] = v.shape[0];
    }
    return s;
}

static int64_t index_at(const source *s, int64_t e) {
    return s->idx_dtype == GD_DTYPE_INT32 ? ((const int32_t *)s->indices)[e]
                                          : ((const int64_t *)s->indices)[e];
}

/* Two datasets hold the same arrays. */
static void same(const gd_dataset_t *a, const gd_dataset_t *b, const char *what) {
    T_EQ_INT(gd_dataset_num_nodes(a), gd_dataset_num_nodes(b));
    T_EQ_INT(gd_dataset_num_edges(a), gd_dataset_num_edges(b));
    T_EQ_INT(gd_dataset_num_classes(a), gd_dataset_num_classes(b));
    for (int id = 0; id < GD_ARRAY_COUNT; id++) {
        gd_array_view va, vb;
        view(a, (gd_array_id)id, &va);
        view(b, (gd_array_id)id, &vb);
        const size_t ba =
            (size_t)(va.shape[0] * (va.ndim == 2 ? va.shape[1] : 1)) * gd_dtype_size(va.dtype);
        const size_t bb =
            (size_t)(vb.shape[0] * (vb.ndim == 2 ? vb.shape[1] : 1)) * gd_dtype_size(vb.dtype);
        if (va.dtype != vb.dtype || ba != bb || (ba && memcmp(va.data, vb.data, ba) != 0))
            T_FAIL_("%s: array %s differs", what, gd_array_name((gd_array_id)id));
    }
}

static gd_dataset_arrays with_rest(const source *s) {
    gd_dataset_arrays a = GD_DATASET_ARRAYS_INIT;
    a.num_nodes = s->n;
    a.features = s->x;
    a.feature_dim = s->dim;
    a.labels = s->y;
    a.train_idx = s->split[0], a.num_train = s->split_n[0];
    a.valid_idx = s->split[1], a.num_valid = s->split_n[1];
    a.test_idx = s->split[2], a.num_test = s->split_n[2];
    return a;
}

static int keep_loss(void *user, const gd_epoch_stats *s) {
    *(double *)user = s->loss;
    return 0;
}

static double one_epoch_loss(const gd_dataset_t *ds) {
    gd_train_options o = GD_TRAIN_OPTIONS_INIT;
    o.mode = "cpu";
    o.num_layers = 2;
    o.fanouts[0] = 5;
    o.fanouts[1] = 5;
    o.hidden = 16;
    o.seed = 3;
    gd_trainer_t *t = NULL;
    T_OK(gd_trainer_create(ds, &o, &t));
    gd_fit_options fo = GD_FIT_OPTIONS_INIT;
    fo.epochs = 1;
    fo.validate = fo.keep_best = fo.test = fo.exact_test = 0;
    double loss = NAN;
    fo.on_epoch = keep_loss;
    fo.on_epoch_user = &loss;
    T_OK(gd_trainer_fit(t, &fo, NULL));
    gd_trainer_destroy(t);
    T_ASSERT(isfinite(loss));
    return loss;
}

int main(void) {
    const uint64_t seed = t_seed();
    uint64_t rng = seed;
    gd_dataset_t *ref = t_tiny_dataset(seed);
    const source s = describe(ref);

    /* COO: every edge u -> v of the CSC (u in v's list), shuffled, some repeated, some ids
     * past the graph's nodes left out so that num_nodes is inferred from the splits too. */
    const int64_t extra = s.e / 4 + 1, m = s.e + extra;
    int64_t *src = malloc((size_t)m * sizeof *src), *dst = malloc((size_t)m * sizeof *dst);
    T_ASSERT(src && dst);
    for (int64_t v = 0; v < s.n; v++)
        for (int64_t e = s.indptr[v]; e < s.indptr[v + 1]; e++)
            src[e] = index_at(&s, e), dst[e] = v;
    for (int64_t k = 0; k < extra; k++) {
        const int64_t e = (int64_t)(t_rand(&rng) % (uint64_t)s.e);
        src[s.e + k] = src[e], dst[s.e + k] = dst[e];
    }
    for (int64_t i = m - 1; i > 0; i--) {
        const int64_t j = (int64_t)(t_rand(&rng) % (uint64_t)(i + 1));
        int64_t t = src[i];
        src[i] = src[j], src[j] = t;
        t = dst[i];
        dst[i] = dst[j], dst[j] = t;
    }
    gd_dataset_arrays a = with_rest(&s);
    a.src = src, a.dst = dst, a.num_edges = m;
    gd_dataset_t *coo = NULL;
    T_OK(gd_dataset_from_arrays(&a, &coo));
    same(ref, coo, "COO edges, shuffled and repeated");
    fprintf(stderr, "COO: %lld edges given (%lld repeated, shuffled) give the CSC of %lld edges\n",
            (long long)m, (long long)extra, (long long)s.e);
    /* num_nodes inferred: the largest id of the edges and the splits, + 1. */
    a.num_nodes = 0;
    gd_dataset_t *inferred = NULL;
    T_OK(gd_dataset_from_arrays(&a, &inferred));
    T_ASSERT(gd_dataset_num_nodes(inferred) <= s.n && gd_dataset_num_nodes(inferred) > 0);
    gd_dataset_close(inferred);

    /* CSC borrowed: the caller's memory, read in place. */
    gd_dataset_arrays b = with_rest(&s);
    b.indptr = s.indptr, b.indices = s.indices, b.indices_dtype = s.idx_dtype;
    b.borrow = 1;
    gd_dataset_t *borrowed = NULL;
    T_OK(gd_dataset_from_arrays(&b, &borrowed));
    same(ref, borrowed, "CSC borrowed");
    gd_array_view v;
    view(borrowed, GD_ARRAY_FEATURES, &v);
    T_ASSERT(v.data == (const void *)s.x);
    view(borrowed, GD_ARRAY_INDICES, &v);
    T_ASSERT(v.data == s.indices);

    /* CSC copied: the caller's later writes do not reach it. */
    const size_t xbytes = (size_t)(s.n * s.dim) * sizeof(float);
    float *x = malloc(xbytes);
    T_ASSERT(x);
    memcpy(x, s.x, xbytes);
    b.borrow = 0;
    b.features = x;
    gd_dataset_t *copied = NULL;
    T_OK(gd_dataset_from_arrays(&b, &copied));
    x[0] += 1.0f;
    view(copied, GD_ARRAY_FEATURES, &v);
    T_ASSERT(v.data != (const void *)x);
    same(ref, copied, "CSC copied, the caller's array changed afterwards");

    /* The same model on the same data: the same loss. */
    const double l0 = one_epoch_loss(ref), l1 = one_epoch_loss(coo);
    fprintf(stderr, "one epoch: loss %.9f on the source, %.9f on the arrays\n", l0, l1);
    T_NEAR(l1, l0, 0);

    /* Saved and reopened: the same dataset. */
    char dir[512], path[600];
    t_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/ds", dir);
    T_OK(gd_dataset_save(borrowed, path, 0));
    gd_dataset_open_options oo = GD_DATASET_OPEN_OPTIONS_INIT;
    gd_dataset_t *back = NULL;
    T_OK(gd_dataset_open(path, &oo, &back));
    same(ref, back, "saved and reopened");
    gd_dataset_close(back);
    t_rmtree(dir);

    /* Bad input: a clear error each, nothing left behind. */
    gd_dataset_t *bad = NULL;
    gd_dataset_arrays e = b;
    e.src = src, e.dst = dst, e.num_edges = m;
    T_FAILS(gd_dataset_from_arrays(&e, &bad), GD_ERR_INVALID_ARG, "not both");
    e = with_rest(&s);
    T_FAILS(gd_dataset_from_arrays(&e, &bad), GD_ERR_INVALID_ARG, "as CSC");
    e = a;
    e.num_nodes = 0;
    src[m / 2] = -5;
    T_FAILS(gd_dataset_from_arrays(&e, &bad), GD_ERR_RANGE, "is negative");
    src[m / 2] = src[0];
    e = b;
    e.feature_dim = 0;
    T_FAILS(gd_dataset_from_arrays(&e, &bad), GD_ERR_INVALID_ARG, "feature_dim");
    x[0] = s.x[0];
    x[(s.n / 2) * s.dim + 1] = NAN;
    T_ASSERT(gd_dataset_from_arrays(&b, &bad) != GD_OK);
    fprintf(stderr, "a NaN feature: %s\n", gd_last_error());
    T_ASSERT(strstr(gd_last_error(), "NaN") || strstr(gd_last_error(), "nan"));
    x[(s.n / 2) * s.dim + 1] = 0;
    e = b;
    e.num_classes = 1;
    T_ASSERT(gd_dataset_from_arrays(&e, &bad) != GD_OK);
    fprintf(stderr, "a label beyond num_classes: %s\n", gd_last_error());
    if (s.idx_dtype == GD_DTYPE_INT32) {
        int32_t *ix = malloc((size_t)s.e * sizeof *ix);
        T_ASSERT(ix);
        memcpy(ix, s.indices, (size_t)s.e * sizeof *ix);
        ix[s.e / 3] = (int32_t)s.n;
        e = b;
        e.indices = ix;
        T_ASSERT(gd_dataset_from_arrays(&e, &bad) != GD_OK);
        fprintf(stderr, "an index out of range: %s\n", gd_last_error());
        free(ix);
    }
    T_ASSERT(bad == NULL);

    gd_dataset_close(coo);
    gd_dataset_close(borrowed);
    gd_dataset_close(copied);
    gd_dataset_close(ref);
    free(src);
    free(dst);
    free(x);
    t_check_no_leaks();
    fprintf(stderr, "dataset from arrays: ok\n");
    return 0;
}
