/*
 * gd_convert: turn an input graph (edge list, folder of .npy arrays, OGB raw layout, IGB; the
 * heterogeneous layouts in convert_hetero.c) into an in-memory dataset, ready for
 * gd_dataset_save, or (out_dir) into a dataset directory written as it is read. This file picks
 * the reader, reads .npy inputs,
 * and holds the steps every reader ends with: the CSC build (gd_csc_from_coo, which sorts,
 * deduplicates and optionally symmetrizes) and the conversion of features to the requested
 * dtype. Arrays are handed to the dataset builder (gd__dataset_adopt) without copies; the
 * builder's final check (gd__dataset_finish) validates the whole dataset once more.
 */
#include "io/ingest.h"
#include "io/npy.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static int is_file(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* ------------------------------------------------------------ shared last steps */

gd_status gd__convert_graph(const gd__convert_job *job, int64_t num_nodes, gd__i64vec *src,
                            gd__i64vec *dst) {
    gd_status st = GD_OK;
    const gd_convert_options *opt = job->opt;
    gd_csc_options co = GD_CSC_OPTIONS_INIT;
    int64_t *indptr = NULL, m = 0;
    void *idx = NULL;
    gd_dtype dt = GD_DTYPE_INVALID;
    co.symmetrize = opt->symmetrize;
    co.remove_self_loops = opt->remove_self_loops;
    co.progress = opt->progress;
    co.progress_user = opt->progress_user;
    st = gd_csc_from_coo(num_nodes, src->len, src->data, dst->data, &co, &indptr, &idx, &dt, &m);
    gd__i64vec_free(src);
    gd__i64vec_free(dst);
    if (st != GD_OK) return gd__error_context(st, "building the graph of '%s'", job->input);
    int64_t shape_p[1] = {num_nodes + 1}, shape_i[1] = {m};
    st = gd__dataset_adopt(job->ds, GD_ARRAY_INDPTR, GD_DTYPE_INT64, 1, shape_p, indptr);
    if (st != GD_OK) {
        gd_free(idx);
        return st;
    }
    return gd__dataset_adopt(job->ds, GD_ARRAY_INDICES, dt, 1, shape_i, idx);
}

static gd_dtype wanted_feature_dtype(const gd_convert_options *opt) {
    return opt->feature_dtype == GD_DTYPE_INVALID ? GD_DTYPE_FLOAT32 : opt->feature_dtype;
}

gd_status gd__convert_features(const gd__convert_job *job, float *data, int64_t rows, int64_t dim) {
    return gd__convert_features_to(job, GD_ARRAY_FEATURES, data, rows, dim);
}

gd_status gd__convert_features_to(const gd__convert_job *job, int id, float *data, int64_t rows,
                                  int64_t dim) {
    gd_dtype want = wanted_feature_dtype(job->opt);
    int64_t n = rows * dim, shape[2] = {rows, dim};
    if (want == GD_DTYPE_FLOAT16 || want == GD_DTYPE_BFLOAT16) {
        /* In place: element i (2 bytes at 2i) overwrites only floats already read. */
        uint16_t *h = (uint16_t *)data;
        if (want == GD_DTYPE_FLOAT16)
            for (int64_t i = 0; i < n; i++) h[i] = gd_float_to_half(data[i]);
        else
            for (int64_t i = 0; i < n; i++) h[i] = gd_float_to_bfloat16(data[i]);
        void *smaller = n > 0 ? gd_realloc(data, (size_t)n * 2) : NULL;
        if (smaller) data = smaller; /* shrinking is only an economy */
    }
    return gd__dataset_adopt(job->ds, id, want, 2, shape, data);
}

gd_status gd__convert_npy_features(const gd__convert_job *job, const char *path,
                                   int64_t num_nodes) {
    return gd__convert_npy_features_to(job, GD_ARRAY_FEATURES, path, num_nodes, "the graph");
}

gd_status gd__convert_npy_features_to(const gd__convert_job *job, int id, const char *path,
                                      int64_t num_nodes, const char *whose) {
    gd_status st = GD_OK;
    gd__array a;
    memset(&a, 0, sizeof a);
    float *f32 = NULL;
    gd_npy_info info;
    const gd_dtype want = wanted_feature_dtype(job->opt);
    GD_CHECK(gd_npy_read_info(path, &info));
    if (info.dtype == want && info.ndim == 2 && info.shape[0] == num_nodes) {
        /* Already right: mapped, and linked into the output by gd_dataset_save (no copy). */
        GD_CHECK(gd__npy_map(path, &a));
        GD_CHECK(gd__dataset_set_info(job->ds, "features", "adopted as they are"));
        return gd__dataset_take(job->ds, id, &a);
    }
    GD_CHECK(gd__npy_load(path, &a));
    int64_t rows = a.shape[0], dim = a.ndim == 2 ? a.shape[1] : 1;
    GD_REQUIRE(rows == num_nodes, GD_ERR_FORMAT,
               "features '%s' have %lld rows but %s has %lld nodes: one row per node is "
               "needed",
               path, (long long)rows, whose, (long long)num_nodes);
    int64_t n = rows * dim, shape[2] = {rows, dim};
    if (a.dtype == want) {
        void *data = a.data;
        a.data = NULL;
        a.store = GD__STORE_NONE;
        return gd__dataset_adopt(job->ds, id, want, 2, shape, data);
    }
    switch (a.dtype) {
    case GD_DTYPE_FLOAT64: { /* narrow in place: float i (4 bytes at 4i) after double i read */
        const double *d = a.data;
        f32 = a.data;
        for (int64_t i = 0; i < n; i++) f32[i] = (float)d[i];
        a.data = NULL;
        a.store = GD__STORE_NONE;
        break;
    }
    case GD_DTYPE_FLOAT32:
        f32 = a.data;
        a.data = NULL;
        a.store = GD__STORE_NONE;
        break;
    case GD_DTYPE_FLOAT16:
    case GD_DTYPE_BFLOAT16: {
        GD_ALLOC(f32, (size_t)n * sizeof(float), "features widened to float32");
        const uint16_t *h = a.data;
        for (int64_t i = 0; i < n; i++)
            f32[i] =
                a.dtype == GD_DTYPE_FLOAT16 ? gd_half_to_float(h[i]) : gd_bfloat16_to_float(h[i]);
        gd__array_release(&a);
        break;
    }
    default:
        GD_REQUIRE(0, GD_ERR_UNSUPPORTED,
                   "features '%s' have dtype %s: use float32, float64, float16 or bfloat16", path,
                   gd_dtype_name(a.dtype));
    }
    return gd__convert_features_to(job, id, f32, rows, dim);
fail:
    gd_free(f32);
    gd__array_release(&a);
    return st;
}

/* Load a 1-D integer array (labels, split ids) as int32 or int64, widening smaller types. */
static gd_status load_int_npy(const char *path, const char *what, gd__array *a) {
    gd_status st = GD_OK;
    int64_t *wide = NULL;
    GD_CHECK(gd__npy_load(path, a));
    GD_REQUIRE(a->ndim <= 1 || a->shape[1] == 1, GD_ERR_FORMAT,
               "%s '%s' have shape (%lld, %lld): expected a 1-D array", what, path,
               (long long)a->shape[0], (long long)a->shape[1]);
    a->ndim = 1;
    a->shape[1] = 1;
    if (a->dtype == GD_DTYPE_INT32 || a->dtype == GD_DTYPE_INT64) return GD_OK;
    int64_t n = a->shape[0];
    GD_REQUIRE(a->dtype == GD_DTYPE_INT8 || a->dtype == GD_DTYPE_UINT8 ||
                   a->dtype == GD_DTYPE_INT16,
               GD_ERR_UNSUPPORTED, "%s '%s' have dtype %s: use an integer dtype (int64, int32)",
               what, path, gd_dtype_name(a->dtype));
    GD_ALLOC(wide, (size_t)n * sizeof(int64_t), what);
    for (int64_t i = 0; i < n; i++)
        wide[i] = a->dtype == GD_DTYPE_INT8    ? ((const int8_t *)a->data)[i]
                  : a->dtype == GD_DTYPE_UINT8 ? ((const uint8_t *)a->data)[i]
                                               : ((const int16_t *)a->data)[i];
    gd_free(a->data);
    a->data = wide;
    a->dtype = GD_DTYPE_INT64;
    return GD_OK;
fail:
    gd_free(wide);
    gd__array_release(a);
    return st;
}

/* Hand a loaded 1-D integer array to the dataset. */
static gd_status adopt_int(const gd__convert_job *job, gd_array_id id, gd__array *a) {
    int64_t shape[1] = {a->shape[0]};
    void *data = a->data;
    gd_dtype dt = a->dtype;
    a->data = NULL;
    a->store = GD__STORE_NONE;
    return gd__dataset_adopt(job->ds, id, dt, 1, shape, data);
}

gd_status gd__convert_npy_labels(const gd__convert_job *job, const char *path, int64_t num_nodes) {
    gd_status st = GD_OK;
    gd__array a;
    memset(&a, 0, sizeof a);
    GD_CHECK(load_int_npy(path, "labels", &a));
    GD_REQUIRE(a.shape[0] == num_nodes, GD_ERR_FORMAT,
               "labels '%s' have %lld entries but the graph has %lld nodes: one label per node "
               "(-1 = unlabelled) is needed",
               path, (long long)a.shape[0], (long long)num_nodes);
    return adopt_int(job, GD_ARRAY_LABELS, &a);
fail:
    gd__array_release(&a);
    return st;
}

gd_status gd__number_labels_decode(const void *data, gd_dtype dtype, int64_t n, int64_t *y,
                                   const char *what) {
    gd_status st = GD_OK;
    const int floats = dtype == GD_DTYPE_FLOAT32 || dtype == GD_DTYPE_FLOAT64;
    GD_REQUIRE(floats || dtype == GD_DTYPE_INT64 || dtype == GD_DTYPE_INT32, GD_ERR_FORMAT,
               "%s are %s; expected floats or integers", what, gd_dtype_name(dtype));
    for (int64_t i = 0; i < n; i++) {
        const double v = dtype == GD_DTYPE_FLOAT32   ? ((const float *)data)[i]
                         : dtype == GD_DTYPE_FLOAT64 ? ((const double *)data)[i]
                                                     : (double)gd__int_at(data, dtype, i);
        GD_REQUIRE(isnan(v) || (v == floor(v) && v >= -1 && v < 1e15), GD_ERR_FORMAT,
                   "%s: element %lld is %g; a label is a whole number >= 0 (NaN or -1: "
                   "unlabelled)",
                   what, (long long)i, v);
        y[i] = isnan(v) ? -1 : (int64_t)v;
    }
fail:
    return st;
}

gd_status gd__convert_number_labels(const gd__convert_job *job, const void *data, gd_dtype dtype,
                                    int64_t n, const char *what) {
    gd_status st = GD_OK;
    int64_t *y = NULL;
    GD_ALLOC(y, (size_t)(n ? n : 1) * sizeof(int64_t), "the labels");
    GD_CHECK(gd__number_labels_decode(data, dtype, n, y, what));
    {
        const int64_t shape[1] = {n};
        int64_t *labels = y;
        y = NULL;
        GD_CHECK(gd__dataset_adopt(job->ds, GD_ARRAY_LABELS, GD_DTYPE_INT64, 1, shape, labels));
    }
fail:
    gd_free(y);
    return st;
}

/* ------------------------------------------------------------ .npy folders */

static gd_status require_int_ids(const gd__array *a, const char *path) {
    if (a->dtype == GD_DTYPE_INT32 || a->dtype == GD_DTYPE_INT64) return GD_OK;
    return gd__error(GD_ERR_UNSUPPORTED, "'%s' has dtype %s: node ids must be int32 or int64", path,
                     gd_dtype_name(a->dtype));
}

static gd_status convert_npy(const gd__convert_job *job) {
    gd_status st = GD_OK;
    const gd_convert_options *opt = job->opt;
    static const char *const names[] = {"edge_index.npy", "src.npy",     "dst.npy",
                                        "features.npy",   "labels.npy",  "train_idx.npy",
                                        "valid_idx.npy",  "test_idx.npy"};
    enum { F_EI, F_SRC, F_DST, F_FEAT, F_LABEL, F_TRAIN, F_COUNT = 8 };
    char *path[F_COUNT] = {0};
    gd__array ea, eb, extra;
    memset(&ea, 0, sizeof ea);
    memset(&eb, 0, sizeof eb);
    memset(&extra, 0, sizeof extra);
    gd__i64vec src = {0}, dst = {0};
    for (int i = 0; i < F_COUNT; i++) {
        path[i] = gd__path_join(job->input, names[i]);
        GD_REQUIRE(path[i], GD_ERR_NO_MEMORY, "out of memory naming files of '%s'", job->input);
    }

    /* The edges: mapped, not loaded, then copied once into int64 arrays. */
    const char *what_s, *what_d;
    int64_t e, stride_s, stride_d;
    const gd__array *as, *ad;
    if (is_file(path[F_EI])) {
        GD_CHECK(gd__npy_map(path[F_EI], &ea));
        GD_CHECK(require_int_ids(&ea, path[F_EI]));
        GD_REQUIRE(ea.ndim == 2 && ea.shape[0] == 2, GD_ERR_FORMAT,
                   "'%s' has shape (%lld, %lld): expected (2, E), row 0 the sources and row 1 "
                   "the destinations (transpose an (E, 2) array first)",
                   path[F_EI], (long long)ea.shape[0], (long long)(ea.ndim == 2 ? ea.shape[1] : 1));
        e = ea.shape[1];
        as = ad = &ea;
        stride_s = 0;
        stride_d = e;
        what_s = what_d = path[F_EI];
    } else {
        GD_REQUIRE(is_file(path[F_SRC]) && is_file(path[F_DST]), GD_ERR_NOT_FOUND,
                   "'%s' has neither edge_index.npy nor src.npy + dst.npy", job->input);
        GD_CHECK(gd__npy_map(path[F_SRC], &ea));
        GD_CHECK(gd__npy_map(path[F_DST], &eb));
        GD_CHECK(require_int_ids(&ea, path[F_SRC]));
        GD_CHECK(require_int_ids(&eb, path[F_DST]));
        GD_REQUIRE(ea.ndim == 1 && eb.ndim == 1 && ea.shape[0] == eb.shape[0], GD_ERR_FORMAT,
                   "'%s' and '%s' must be 1-D arrays of the same length (they have %lld and "
                   "%lld elements)",
                   path[F_SRC], path[F_DST], (long long)ea.shape[0], (long long)eb.shape[0]);
        e = ea.shape[0];
        as = &ea;
        ad = &eb;
        stride_s = stride_d = 0;
        what_s = path[F_SRC];
        what_d = path[F_DST];
    }
    GD_CHECK(gd__i64vec_reserve(&src, e, "the edge sources"));
    GD_CHECK(gd__i64vec_reserve(&dst, e, "the edge destinations"));

    /* The node count: asked for, else one row of features or labels per node, else max id. */
    int64_t n = opt->num_nodes;
    gd_npy_info info;
    if (n == 0 && is_file(path[F_FEAT]) && gd_npy_read_info(path[F_FEAT], &info) == GD_OK)
        n = info.shape[0];
    if (n == 0 && is_file(path[F_LABEL]) && gd_npy_read_info(path[F_LABEL], &info) == GD_OK)
        n = info.shape[0];
    int64_t mx = -1;
    for (int64_t i = 0; i < e; i++) {
        int64_t s = gd__array_int(as, stride_s + i), d = gd__array_int(ad, stride_d + i);
        int bad_s = s < 0 || (n > 0 && s >= n), bad_d = d < 0 || (n > 0 && d >= n);
        if (GD_UNLIKELY(bad_s || bad_d)) {
            int64_t v = bad_s ? s : d;
            GD_REQUIRE(0, GD_ERR_RANGE, "%s: %s of edge %lld is %lld, outside [0, %lld): %s",
                       bad_s ? what_s : what_d, bad_s ? "source" : "destination", (long long)i,
                       (long long)v, (long long)n,
                       v < 0 ? "node ids must be >= 0"
                             : "the node count comes from --num-nodes, "
                               "features.npy or labels.npy");
        }
        src.data[i] = s;
        dst.data[i] = d;
        if (s > mx) mx = s;
        if (d > mx) mx = d;
    }
    src.len = dst.len = e;
    gd__array_release(&ea);
    gd__array_release(&eb);
    if (n == 0) n = mx + 1;

    GD_CHECK(gd__dataset_set_info(job->ds, "source", job->input));
    GD_CHECK(gd__dataset_set_info(job->ds, "input_format", ".npy folder"));
    GD_CHECK(gd__convert_graph(job, n, &src, &dst));
    if (is_file(path[F_FEAT]))
        GD_CHECK(gd__convert_npy_features(job, path[F_FEAT], n));
    else if (opt->features)
        GD_CHECK(gd__convert_npy_features(job, opt->features, n));
    if (is_file(path[F_LABEL]))
        GD_CHECK(gd__convert_npy_labels(job, path[F_LABEL], n));
    else if (opt->labels)
        GD_CHECK(gd__convert_npy_labels(job, opt->labels, n));
    for (int k = 0; k < 3; k++) {
        if (!is_file(path[F_TRAIN + k])) continue;
        GD_CHECK(load_int_npy(path[F_TRAIN + k], "split ids", &extra));
        GD_CHECK(adopt_int(job, (gd_array_id)(GD_ARRAY_TRAIN_IDX + k), &extra));
    }
fail:
    gd__array_release(&ea);
    gd__array_release(&eb);
    gd__array_release(&extra);
    gd__i64vec_free(&src);
    gd__i64vec_free(&dst);
    for (int i = 0; i < F_COUNT; i++) gd_free(path[i]);
    return st;
}

/* ------------------------------------------------------------ IGB */

/*
 * The homogeneous IGB layout (igb-tiny .. igb-full, as IGB's download scripts leave it):
 * processed/paper/node_feat.npy (N x 1024 float32), processed/paper/node_label_19.npy (or
 * node_label_2K.npy; --labels picks another file), processed/paper__cites__paper/edge_index.npy
 * of shape (E, 2). IGB ships no split: IGB's own loader trains on the first 60 % of the nodes,
 * validates on the next 20 % and tests on the rest, and so does this.
 */
static gd_status convert_igb(const gd__convert_job *job) {
    gd_status st = GD_OK;
    const gd_convert_options *opt = job->opt;
    enum { P_EDGES, P_FEAT, P_L19, P_L2K, P_COUNT };
    static const char *const rel[P_COUNT] = {
        "processed/paper__cites__paper/edge_index.npy", "processed/paper/node_feat.npy",
        "processed/paper/node_label_19.npy", "processed/paper/node_label_2K.npy"};
    char *path[P_COUNT] = {0};
    gd__array ea, la;
    memset(&ea, 0, sizeof ea);
    memset(&la, 0, sizeof la);
    gd__i64vec src = {0}, dst = {0};
    int64_t *ids = NULL;
    for (int i = 0; i < P_COUNT; i++) {
        path[i] = gd__path_join(job->input, rel[i]);
        GD_REQUIRE(path[i], GD_ERR_NO_MEMORY, "out of memory naming files of '%s'", job->input);
    }
    GD_REQUIRE(is_file(path[P_EDGES]), GD_ERR_NOT_FOUND, "'%s' is not an IGB folder: %s is missing",
               job->input, path[P_EDGES]);
    GD_CHECK(gd__npy_map(path[P_EDGES], &ea));
    GD_CHECK(require_int_ids(&ea, path[P_EDGES]));
    GD_REQUIRE(ea.ndim == 2 && ea.shape[1] == 2, GD_ERR_FORMAT,
               "'%s' has shape (%lld, %lld): IGB's edge_index is (E, 2), a row per edge",
               path[P_EDGES], (long long)ea.shape[0], (long long)(ea.ndim == 2 ? ea.shape[1] : 1));
    const int64_t e = ea.shape[0];
    int64_t n = opt->num_nodes;
    gd_npy_info info;
    if (n == 0 && is_file(path[P_FEAT]) && gd_npy_read_info(path[P_FEAT], &info) == GD_OK)
        n = info.shape[0];
    GD_CHECK(gd__i64vec_reserve(&src, e, "the edge sources"));
    GD_CHECK(gd__i64vec_reserve(&dst, e, "the edge destinations"));
    int64_t mx = -1;
    for (int64_t i = 0; i < e; i++) {
        src.data[i] = gd__array_int(&ea, 2 * i);
        dst.data[i] = gd__array_int(&ea, 2 * i + 1);
        if (src.data[i] > mx) mx = src.data[i];
        if (dst.data[i] > mx) mx = dst.data[i];
    }
    src.len = dst.len = e;
    gd__array_release(&ea);
    if (n == 0) n = mx + 1;
    GD_CHECK(gd__dataset_set_info(job->ds, "source", job->input));
    GD_CHECK(gd__dataset_set_info(job->ds, "input_format", "IGB (homogeneous)"));
    GD_CHECK(gd__convert_graph(job, n, &src, &dst));
    if (is_file(path[P_FEAT])) GD_CHECK(gd__convert_npy_features(job, path[P_FEAT], n));
    const char *lp = opt->labels            ? opt->labels
                     : is_file(path[P_L19]) ? path[P_L19]
                     : is_file(path[P_L2K]) ? path[P_L2K]
                                            : NULL;
    if (lp) {
        /* IGB stores labels as floats: whole numbers (NaN: unlabelled), or integers. */
        GD_CHECK(gd__npy_map(lp, &la));
        GD_REQUIRE(la.shape[0] == n && (la.ndim == 1 || la.shape[1] == 1), GD_ERR_FORMAT,
                   "labels '%s' have %lld entries but the graph has %lld nodes", lp,
                   (long long)la.shape[0], (long long)n);
        char what[4200];
        snprintf(what, sizeof what, "labels '%s'", lp);
        GD_CHECK(gd__convert_number_labels(job, la.data, la.dtype, n, what));
        gd__array_release(&la);
    }
    /* IGB's split: the first 60 % train, the next 20 % valid, the rest test. */
    const int64_t cut[4] = {0, n * 6 / 10, n * 8 / 10, n};
    for (int k = 0; k < 3; k++) {
        const int64_t count = cut[k + 1] - cut[k], shape[1] = {count};
        GD_ALLOC(ids, (size_t)(count ? count : 1) * sizeof(int64_t), "a split");
        for (int64_t i = 0; i < count; i++) ids[i] = cut[k] + i;
        int64_t *data = ids;
        ids = NULL;
        GD_CHECK(gd__dataset_adopt(job->ds, (gd_array_id)(GD_ARRAY_TRAIN_IDX + k), GD_DTYPE_INT64,
                                   1, shape, data));
    }
    GD_CHECK(gd__dataset_set_info(job->ds, "split",
                                  "IGB's: nodes 0-60 % train, 60-80 % valid, "
                                  "80-100 % test"));
fail:
    gd__array_release(&ea);
    gd__array_release(&la);
    gd__i64vec_free(&src);
    gd__i64vec_free(&dst);
    gd_free(ids);
    for (int i = 0; i < P_COUNT; i++) gd_free(path[i]);
    return st;
}

/* ------------------------------------------------------------ the entry point */

/* The dataset name from the input path: its last component without ".gz" and one extension. */
static char *name_from_path(const char *input, int is_directory) {
    size_t n = strlen(input);
    while (n > 1 && input[n - 1] == '/') n--;
    size_t b = n;
    while (b > 0 && input[b - 1] != '/') b--;
    char *name = gd_malloc(n - b + 1);
    if (!name) return NULL;
    memcpy(name, input + b, n - b);
    name[n - b] = '\0';
    if (!is_directory) {
        size_t len = strlen(name);
        if (len > 3 && strcmp(name + len - 3, ".gz") == 0) name[len -= 3] = '\0';
        char *dot = strrchr(name, '.');
        if (dot && dot != name) *dot = '\0';
    }
    return name;
}

gd_status gd_convert(const char *input, const gd_convert_options *options, gd_dataset_t **out) {
    gd_status st = GD_OK;
    gd_convert_options opt = GD_CONVERT_OPTIONS_INIT;
    gd_dataset_t *ds = NULL;
    char *name = NULL, *probe = NULL;
    GD_REQUIRE(input && out, GD_ERR_INVALID_ARG, "gd_convert: input and out must not be NULL");
    *out = NULL;
    if (options)
        GD_CHECK(gd__options_in(&opt, sizeof opt, options, 0, "gd_convert: options",
                                "GD_CONVERT_OPTIONS_INIT"));
    GD_REQUIRE(opt.num_nodes >= 0, GD_ERR_INVALID_ARG, "gd_convert: num_nodes = %lld is negative",
               (long long)opt.num_nodes);
    GD_REQUIRE(opt.feature_dtype == GD_DTYPE_INVALID || opt.feature_dtype == GD_DTYPE_FLOAT32 ||
                   opt.feature_dtype == GD_DTYPE_FLOAT16 || opt.feature_dtype == GD_DTYPE_BFLOAT16,
               GD_ERR_INVALID_ARG,
               "gd_convert: feature dtype %s is not supported: use float32, float16 or bfloat16",
               gd_dtype_name(opt.feature_dtype));

    struct stat sb;
    GD_REQUIRE(stat(input, &sb) == 0, errno == ENOENT ? GD_ERR_NOT_FOUND : GD_ERR_IO,
               "cannot convert '%s': %s", input,
               errno == ENOENT ? "it does not exist" : strerror(errno));
    int is_directory = S_ISDIR(sb.st_mode);
    gd_input_format fmt = opt.format;
    if (fmt == GD_INPUT_AUTO) {
        if (!is_directory) {
            fmt = GD_INPUT_EDGELIST;
        } else if (gd__is_igbh(input)) {
            /* Before IGB's probe: an IGBH tree also has paper__cites__paper. */
            fmt = GD_INPUT_IGBH;
        } else {
            enum { PROBES = 6 };
            static const char *const probes[PROBES] = {
                "raw/edge.csv.gz", "raw/data.npz", "raw/num-node-dict.csv.gz",
                "edge_index.npy",  "src.npy",      "processed/paper__cites__paper/edge_index.npy"};
            static const gd_input_format probed[PROBES] = {GD_INPUT_OGB,        GD_INPUT_OGB,
                                                           GD_INPUT_OGB_HETERO, GD_INPUT_NPY,
                                                           GD_INPUT_NPY,        GD_INPUT_IGB};
            for (int i = 0; i < PROBES && fmt == GD_INPUT_AUTO; i++) {
                probe = gd__path_join(input, probes[i]);
                GD_REQUIRE(probe, GD_ERR_NO_MEMORY, "out of memory naming files of '%s'", input);
                if (is_file(probe)) fmt = probed[i];
                gd_free(probe);
                probe = NULL;
            }
            GD_REQUIRE(fmt != GD_INPUT_AUTO, GD_ERR_UNSUPPORTED,
                       "cannot tell the format of folder '%s': it has neither raw/edge.csv.gz "
                       "or raw/data.npz (OGB raw layouts), raw/num-node-dict.csv.gz (OGB "
                       "heterogeneous), edge_index.npy or src.npy (.npy folder), nor "
                       "processed/<src>__<rel>__<dst>/edge_index.npy (IGB, IGBH)",
                       input);
        }
    }
    if (fmt == GD_INPUT_OGB && is_directory) {
        /* A heterogeneous OGB folder has no homogeneous reading: --format ogb takes it too. */
        char *edges = gd__path_join(input, "raw/edge.csv.gz");
        char *npz = gd__path_join(input, "raw/data.npz");
        probe = gd__path_join(input, "raw/num-node-dict.csv.gz");
        const int named = edges && npz && probe;
        if (named && !is_file(edges) && !is_file(npz) && is_file(probe)) fmt = GD_INPUT_OGB_HETERO;
        gd_free(edges);
        gd_free(npz);
        gd_free(probe);
        probe = NULL;
        GD_REQUIRE(named, GD_ERR_NO_MEMORY, "out of memory naming files of '%s'", input);
    }
    GD_REQUIRE(fmt == GD_INPUT_EDGELIST || fmt == GD_INPUT_NPY || fmt == GD_INPUT_OGB ||
                   fmt == GD_INPUT_IGB || fmt == GD_INPUT_OGB_HETERO || fmt == GD_INPUT_IGBH,
               GD_ERR_INVALID_ARG, "gd_convert: unknown input format %d", (int)fmt);
    GD_REQUIRE((fmt == GD_INPUT_EDGELIST) == !is_directory, GD_ERR_INVALID_ARG,
               "'%s' is %s, but the %s format reads %s", input,
               is_directory ? "a folder" : "a file",
               fmt == GD_INPUT_EDGELIST     ? "edge list"
               : fmt == GD_INPUT_NPY        ? ".npy"
               : fmt == GD_INPUT_IGB        ? "IGB"
               : fmt == GD_INPUT_IGBH       ? "IGBH"
               : fmt == GD_INPUT_OGB_HETERO ? "OGB heterogeneous"
                                            : "OGB",
               is_directory ? "a file" : "a folder");
    const int hetero = fmt == GD_INPUT_OGB_HETERO || fmt == GD_INPUT_IGBH;
    GD_REQUIRE(!hetero || (opt.num_nodes == 0 && !opt.relabel && !opt.features), GD_ERR_INVALID_ARG,
               "'%s' is a heterogeneous graph, whose node counts come per type from its files: "
               "%s applies to homogeneous inputs only; leave it out",
               input,
               opt.num_nodes ? "num_nodes (--num-nodes)"
               : opt.relabel ? "relabel (--relabel)"
                             : "features (--features)");

    if (!opt.name) {
        name = name_from_path(input, is_directory);
        GD_REQUIRE(name, GD_ERR_NO_MEMORY, "out of memory naming the dataset");
    }
    /* With out_dir the arrays go to "<out_dir>.tmp.<pid>" as they are made (an on-disk build). */
    GD_CHECK(gd__dataset_new(opt.name ? opt.name : name, opt.out_dir, opt.overwrite, &ds));
    gd__convert_job job = {&opt, input, ds};
    double t0 = gd__now();
    if (fmt == GD_INPUT_EDGELIST)
        GD_CHECK(gd__convert_edgelist(&job));
    else if (fmt == GD_INPUT_NPY)
        GD_CHECK(convert_npy(&job));
    else if (fmt == GD_INPUT_IGB)
        GD_CHECK(convert_igb(&job));
    else if (fmt == GD_INPUT_IGBH)
        GD_CHECK(gd__convert_igbh(&job));
    else if (fmt == GD_INPUT_OGB_HETERO)
        GD_CHECK(gd__convert_ogb_hetero(&job));
    else
        GD_CHECK(gd__convert_ogb(&job));
    if (opt.symmetrize) GD_CHECK(gd__dataset_set_info(ds, "symmetrized", "yes"));
    if (opt.remove_self_loops) GD_CHECK(gd__dataset_set_info(ds, "self_loops", "removed"));
    GD_CHECK(gd__dataset_finish(ds, 1));
    GD_INFO("converted '%s': %lld nodes, %lld edges in %.2f s", input, (long long)ds->num_nodes,
            (long long)ds->num_edges, gd__now() - t0);
    gd_free(name);
    *out = ds;
    return GD_OK;
fail:
    gd_free(name);
    gd_free(probe);
    gd_dataset_close(ds);
    return st;
}
