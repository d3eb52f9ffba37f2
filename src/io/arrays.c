/*
 * gd_dataset_from_arrays: a dataset from the caller's arrays (graphdirect.h says what they
 * are). The graph as CSC is borrowed or copied as given; as COO it is built into a CSC owned by
 * the dataset (gd_csc_from_coo). Features and labels are borrowed or copied, the splits copied;
 * then gd__dataset_finish checks everything as a dataset directory is checked.
 */
#include "dataset.h"

#include <string.h>

/* Array id of ds from data: borrowed, or copied into dataset memory. */
static gd_status put(gd_dataset_t *ds, gd_array_id id, gd_dtype dtype, int ndim,
                     const int64_t *shape, const void *data, int borrow) {
    gd_status st = GD_OK;
    if (borrow) return gd__dataset_borrow(ds, id, dtype, ndim, shape, data);
    void *p = NULL;
    GD_CHECK(gd__dataset_alloc(ds, id, dtype, ndim, shape, &p));
    const size_t bytes =
        (size_t)shape[0] * (size_t)(ndim == 2 ? shape[1] : 1) * gd_dtype_size(dtype);
    if (bytes) memcpy(p, data, bytes);
fail:
    return st;
}

/* The largest id of n int64 ids (-1 for none); a negative id fails, naming what and where. */
static gd_status max_id(const int64_t *ids, int64_t n, const char *what, int64_t *out) {
    gd_status st = GD_OK;
    int64_t mx = -1, bad = n;
#pragma omp parallel for schedule(static) reduction(max                                            \
                                                    : mx) reduction(min                            \
                                                                    : bad)                         \
    num_threads(gd__num_threads())
    for (int64_t i = 0; i < n; i++) {
        if (ids[i] < 0 && i < bad) bad = i;
        if (ids[i] > mx) mx = ids[i];
    }
    GD_REQUIRE(bad == n, GD_ERR_RANGE, "gd_dataset_from_arrays: %s[%lld] = %lld is negative", what,
               (long long)bad, bad < n ? (long long)ids[bad] : 0LL);
    *out = mx;
fail:
    return st;
}

static gd_status graph(gd_dataset_t *ds, const gd_dataset_arrays *a, int64_t n) {
    gd_status st = GD_OK;
    int64_t *indptr = NULL, m = 0;
    void *indices = NULL;
    gd_dtype dt = GD_DTYPE_INVALID;
    if (a->indptr) {
        const int64_t e = a->indptr[n], shape_p[2] = {n + 1, 1}, shape_i[2] = {e, 1};
        GD_REQUIRE(a->num_edges == 0 || a->num_edges == e, GD_ERR_INVALID_ARG,
                   "gd_dataset_from_arrays: num_edges is %lld but indptr[%lld] = %lld",
                   (long long)a->num_edges, (long long)n, (long long)e);
        GD_REQUIRE(e >= 0, GD_ERR_FORMAT, "gd_dataset_from_arrays: indptr[%lld] = %lld is negative",
                   (long long)n, (long long)e);
        GD_REQUIRE(a->indices_dtype == GD_DTYPE_INT32 || a->indices_dtype == GD_DTYPE_INT64,
                   GD_ERR_INVALID_ARG,
                   "gd_dataset_from_arrays: indices must be int32 or int64, not %s",
                   gd_dtype_name(a->indices_dtype));
        GD_CHECK(put(ds, GD_ARRAY_INDPTR, GD_DTYPE_INT64, 1, shape_p, a->indptr, a->borrow));
        GD_CHECK(put(ds, GD_ARRAY_INDICES, a->indices_dtype, 1, shape_i, a->indices, a->borrow));
        return GD_OK;
    }
    gd_csc_options co = GD_CSC_OPTIONS_INIT;
    co.symmetrize = a->symmetrize;
    GD_CHECK(gd_csc_from_coo(n, a->num_edges, a->src, a->dst, &co, &indptr, &indices, &dt, &m));
    {
        const int64_t shape_p[2] = {n + 1, 1}, shape_i[2] = {m, 1};
        int64_t *p = indptr;
        void *x = indices;
        indptr = NULL;
        indices = NULL;
        GD_CHECK(gd__dataset_adopt(ds, GD_ARRAY_INDPTR, GD_DTYPE_INT64, 1, shape_p, p));
        GD_CHECK(gd__dataset_adopt(ds, GD_ARRAY_INDICES, dt, 1, shape_i, x));
    }
fail:
    gd_free(indptr);
    gd_free(indices);
    return st;
}

gd_status gd_dataset_from_arrays(const gd_dataset_arrays *arrays, gd_dataset_t **out) {
    gd_status st = GD_OK;
    gd_dataset_arrays a = GD_DATASET_ARRAYS_INIT;
    gd_dataset_t *ds = NULL;
    GD_REQUIRE(out, GD_ERR_INVALID_ARG, "gd_dataset_from_arrays: out is NULL");
    *out = NULL;
    GD_REQUIRE(arrays, GD_ERR_INVALID_ARG, "gd_dataset_from_arrays: arrays is NULL");
    GD_CHECK(gd__options_in(&a, sizeof a, arrays, 0, "gd_dataset_from_arrays: arrays",
                            "GD_DATASET_ARRAYS_INIT"));
    const int csc = a.indptr || a.indices, coo = a.src || a.dst;
    GD_REQUIRE(csc != coo, GD_ERR_INVALID_ARG, "gd_dataset_from_arrays: give the graph %s",
               csc ? "once: as CSC (indptr, indices) or as COO (src, dst), not both"
                   : "as CSC (indptr, indices) or as COO edges (src, dst)");
    GD_REQUIRE(!csc || (a.indptr && (a.indices || (a.num_edges == 0))), GD_ERR_INVALID_ARG,
               "gd_dataset_from_arrays: CSC needs both indptr and indices");
    GD_REQUIRE(!coo || ((a.src && a.dst) || a.num_edges == 0), GD_ERR_INVALID_ARG,
               "gd_dataset_from_arrays: COO needs both src and dst");
    GD_REQUIRE(a.num_nodes >= 0 && a.num_edges >= 0 && a.feature_dim >= 0 && a.num_classes >= 0 &&
                   a.num_train >= 0 && a.num_valid >= 0 && a.num_test >= 0,
               GD_ERR_INVALID_ARG, "gd_dataset_from_arrays: a count is negative");
    GD_REQUIRE(!a.features || a.feature_dim > 0, GD_ERR_INVALID_ARG,
               "gd_dataset_from_arrays: features without a feature_dim");
    int64_t n = a.num_nodes;
    if (n == 0) {
        GD_REQUIRE(coo, GD_ERR_INVALID_ARG,
                   "gd_dataset_from_arrays: num_nodes is needed with a CSC graph");
        const int64_t *lists[5] = {a.src, a.dst, a.train_idx, a.valid_idx, a.test_idx};
        const int64_t counts[5] = {a.num_edges, a.num_edges, a.num_train, a.num_valid, a.num_test};
        const char *names[5] = {"src", "dst", "train_idx", "valid_idx", "test_idx"};
        for (int i = 0; i < 5; i++) {
            int64_t mx = -1;
            if (lists[i]) GD_CHECK(max_id(lists[i], counts[i], names[i], &mx));
            if (mx + 1 > n) n = mx + 1;
        }
        GD_REQUIRE(n > 0, GD_ERR_INVALID_ARG,
                   "gd_dataset_from_arrays: no edge and no node id, so no node: give num_nodes");
    }
    GD_CHECK(gd__dataset_new(a.name ? a.name : "arrays", NULL, 0, &ds));
    GD_CHECK(graph(ds, &a, n));
    if (a.features) {
        GD_REQUIRE(a.feature_dtype == GD_DTYPE_FLOAT32 || a.feature_dtype == GD_DTYPE_FLOAT16 ||
                       a.feature_dtype == GD_DTYPE_BFLOAT16,
                   GD_ERR_INVALID_ARG,
                   "gd_dataset_from_arrays: features must be float32, float16 or bfloat16, not %s",
                   gd_dtype_name(a.feature_dtype));
        const int64_t shape[2] = {n, a.feature_dim};
        GD_CHECK(put(ds, GD_ARRAY_FEATURES, a.feature_dtype, 2, shape, a.features, a.borrow));
    }
    if (a.labels) {
        const int64_t shape[2] = {n, 1};
        GD_CHECK(put(ds, GD_ARRAY_LABELS, GD_DTYPE_INT64, 1, shape, a.labels, a.borrow));
    }
    {
        const int64_t *split[3] = {a.train_idx, a.valid_idx, a.test_idx};
        const int64_t count[3] = {a.num_train, a.num_valid, a.num_test};
        for (int i = 0; i < 3; i++) {
            if (!split[i]) continue;
            const int64_t shape[2] = {count[i], 1};
            GD_CHECK(put(ds, (gd_array_id)(GD_ARRAY_TRAIN_IDX + i), GD_DTYPE_INT64, 1, shape,
                         split[i], 0));
        }
    }
    ds->num_classes = a.num_classes;
    GD_CHECK(gd__dataset_set_info(ds, "source", a.borrow ? "arrays (borrowed)" : "arrays"));
    GD_CHECK(gd__dataset_finish(ds, a.validate));
    *out = ds;
    return GD_OK;
fail:
    gd_dataset_close(ds);
    return st;
}
