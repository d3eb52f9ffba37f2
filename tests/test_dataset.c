/*
 * Dataset directories: random datasets built in memory and on disk, saved, reopened in both
 * modes and compared byte for byte; overwrite rules; and every reader check, by damaging a saved
 * dataset one way at a time (meta.json fields, .npy headers and data) and checking that opening
 * it fails with a message naming the file and the value.
 *
 * Two environment variables turn the program into the C half of tests/py_numpy_interop.py:
 * GD_WRITE_SAMPLE_DIR=<dir> writes sample datasets there (and prints checksums of their arrays),
 * GD_READ_SAMPLE_DIR=<dir> opens the dataset numpy wrote there and prints the same checksums.
 */
#include "io/dataset.h"
#include "io/meta.h"
#include "io/npy.h"
#include "test.h"

#include <sys/stat.h>

typedef struct {
    int64_t n, e, f, c;
    gd_dtype index_dtype, feature_dtype;
} spec;

/* A random valid dataset built through the builder API (in memory when out_dir is NULL). */
static gd_dataset_t *build(const spec *s, const char *out_dir, int overwrite, uint64_t *rng) {
    gd_dataset_t *ds = NULL;
    T_OK(gd__dataset_new("random", out_dir, overwrite, &ds));
    int64_t shape[2] = {s->n + 1, 0};
    int64_t *indptr;
    T_OK(gd__dataset_alloc(ds, GD_ARRAY_INDPTR, GD_DTYPE_INT64, 1, shape, (void **)&indptr));
    indptr[0] = 0;
    for (int64_t v = 0; v < s->n; v++) {
        int64_t left = s->e - indptr[v];
        int64_t deg = v == s->n - 1 ? left : (int64_t)(t_rand(rng) % (uint64_t)(left / 2 + 1));
        indptr[v + 1] = indptr[v] + deg;
    }
    shape[0] = s->e;
    void *indices;
    T_OK(gd__dataset_alloc(ds, GD_ARRAY_INDICES, s->index_dtype, 1, shape, &indices));
    for (int64_t i = 0; i < s->e; i++) {
        int64_t u = (int64_t)(t_rand(rng) % (uint64_t)s->n);
        if (s->index_dtype == GD_DTYPE_INT32)
            ((int32_t *)indices)[i] = (int32_t)u;
        else
            ((int64_t *)indices)[i] = u;
    }
    if (s->f > 0) {
        int64_t fs[2] = {s->n, s->f};
        void *x;
        T_OK(gd__dataset_alloc(ds, GD_ARRAY_FEATURES, s->feature_dtype, 2, fs, &x));
        for (int64_t i = 0; i < s->n * s->f; i++) {
            float v = (float)((int64_t)(t_rand(rng) % 2001) - 1000) / 64.0f;
            if (s->feature_dtype == GD_DTYPE_FLOAT32)
                ((float *)x)[i] = v;
            else if (s->feature_dtype == GD_DTYPE_FLOAT16)
                ((uint16_t *)x)[i] = gd_float_to_half(v);
            else
                ((uint16_t *)x)[i] = gd_float_to_bfloat16(v);
        }
    }
    if (s->c > 0) {
        int64_t ls[1] = {s->n};
        int64_t *y = gd_malloc((size_t)s->n * sizeof *y);
        T_ASSERT(y);
        for (int64_t i = 0; i < s->n; i++) y[i] = (int64_t)(t_rand(rng) % (uint64_t)(s->c + 1)) - 1;
        y[0] = s->c - 1;
        T_OK(gd__dataset_adopt(ds, GD_ARRAY_LABELS, GD_DTYPE_INT64, 1, ls, y));
        /* The splits are disjoint sets of node ids: consecutive runs of a random permutation. */
        int32_t *perm = malloc((size_t)s->n * sizeof *perm);
        T_ASSERT(perm);
        for (int64_t i = 0; i < s->n; i++) perm[i] = (int32_t)i;
        for (int64_t i = s->n - 1; i > 0; i--) {
            int64_t j = (int64_t)(t_rand(rng) % (uint64_t)(i + 1));
            int32_t t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        int64_t used = 0;
        for (int id = GD_ARRAY_TRAIN_IDX; id <= GD_ARRAY_TEST_IDX; id++) {
            int64_t k[1] = {(int64_t)(t_rand(rng) % (uint64_t)(s->n - used + 1))};
            int32_t *ids;
            T_OK(gd__dataset_alloc(ds, (gd_array_id)id, GD_DTYPE_INT32, 1, k, (void **)&ids));
            memcpy(ids, perm + used, (size_t)k[0] * sizeof *ids);
            used += k[0];
        }
        free(perm);
    }
    T_OK(gd__dataset_set_info(ds, "source", "test_dataset"));
    T_OK(gd__dataset_set_info(ds, "seed", "replayable"));
    T_OK(gd__dataset_finish(ds, 1));
    T_EQ_INT(gd_dataset_num_nodes(ds), s->n);
    T_EQ_INT(gd_dataset_num_edges(ds), s->e);
    T_EQ_INT(gd_dataset_feature_dim(ds), s->f);
    T_EQ_INT(gd_dataset_num_classes(ds), s->c);
    return ds;
}

static void same(const gd_dataset_t *a, const gd_dataset_t *b) {
    T_EQ_STR(gd_dataset_name(a), gd_dataset_name(b));
    T_EQ_INT(gd_dataset_num_nodes(a), gd_dataset_num_nodes(b));
    T_EQ_INT(gd_dataset_num_edges(a), gd_dataset_num_edges(b));
    T_EQ_INT(gd_dataset_feature_dim(a), gd_dataset_feature_dim(b));
    T_EQ_INT(gd_dataset_num_classes(a), gd_dataset_num_classes(b));
    T_EQ_INT(a->num_info, b->num_info);
    for (int i = 0; i < a->num_info; i++) {
        T_EQ_STR(a->info_key[i], b->info_key[i]);
        T_EQ_STR(a->info_value[i], b->info_value[i]);
    }
    for (int id = 0; id < GD_ARRAY_COUNT; id++) {
        gd_array_view va, vb;
        gd_status sa = gd_dataset_array(a, (gd_array_id)id, &va);
        gd_status sb = gd_dataset_array(b, (gd_array_id)id, &vb);
        T_EQ_INT(sa, sb);
        if (sa != GD_OK) {
            T_EQ_INT(sa, GD_ERR_NOT_FOUND);
            continue;
        }
        T_EQ_INT(va.dtype, vb.dtype);
        T_EQ_INT(va.ndim, vb.ndim);
        T_EQ_INT(va.shape[0], vb.shape[0]);
        T_EQ_INT(va.shape[1], vb.shape[1]);
        size_t bytes = (size_t)(va.shape[0] * va.shape[1]) * gd_dtype_size(va.dtype);
        if (bytes && memcmp(va.data, vb.data, bytes) != 0)
            T_FAIL_("array %s differs", gd_array_name((gd_array_id)id));
    }
}

static int exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* No "<name>.tmp.*" or ".old.*" directory left beside a target. */
static void no_leftovers(const char *parent) {
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "ls -a '%s' | grep -q -e '\\.tmp\\.' -e '\\.old\\.'", parent);
    if (system(cmd) == 0) T_FAIL_("a temporary directory was left in %s", parent);
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) T_FAIL_("cannot open %s", path);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

static void spill(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) T_FAIL_("cannot create %s", path);
    fputs(text, f);
    fclose(f);
}

/* Replace the first occurrence of from by to in dir/meta.json. */
static void edit_meta(const char *dir, const char *from, const char *to) {
    char path[4200], out[1 << 16];
    snprintf(path, sizeof path, "%s/meta.json", dir);
    const char *text = slurp(path);
    const char *at = strstr(text, from);
    if (!at) T_FAIL_("meta.json of %s has no \"%s\"", dir, from);
    snprintf(out, sizeof out, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    spill(path, out);
}

/* Overwrite an array file of dir with new contents. */
static void put_npy(const char *dir, const char *file, gd_dtype dtype, int ndim,
                    const int64_t *shape, const void *data) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    T_OK(gd_npy_write(path, dtype, ndim, shape, data));
}

static void expect_open_fails(const char *dir, gd_status status, const char *needle,
                              const char *needle2) {
    for (int mode = 0; mode < 2; mode++) {
        gd_dataset_open_options o = GD_DATASET_OPEN_OPTIONS_INIT;
        o.mode = (gd_open_mode)mode;
        gd_dataset_t *ds = (gd_dataset_t *)1;
        gd_status st = gd_dataset_open(dir, &o, &ds);
        if (st != status)
            T_FAIL_("opening %s (mode %d) returned %s, expected %s (%s; wanted \"%s\")", dir, mode,
                    gd_status_string(st), gd_status_string(status), gd_last_error(), needle);
        if (!strstr(gd_last_error(), needle) || (needle2 && !strstr(gd_last_error(), needle2)))
            T_FAIL_("message \"%s\" does not mention \"%s\" / \"%s\"", gd_last_error(), needle,
                    needle2 ? needle2 : "");
        T_ASSERT(ds == NULL);
    }
}

/* ------------------------------------------------------------ numpy interop */

/* An exact position-weighted checksum of raw bytes, easy to compute with numpy too. */
static uint64_t checksum(const void *data, size_t bytes) {
    const unsigned char *b = data;
    uint64_t sum = 0;
    for (size_t i = 0; i < bytes; i++) sum += (uint64_t)b[i] * (uint64_t)(i % 251 + 1);
    return sum;
}

static void print_checksums(const char *label, const gd_dataset_t *ds) {
    printf("dataset %s %s %lld %lld %lld %lld\n", label, gd_dataset_name(ds),
           (long long)gd_dataset_num_nodes(ds), (long long)gd_dataset_num_edges(ds),
           (long long)gd_dataset_feature_dim(ds), (long long)gd_dataset_num_classes(ds));
    for (int id = 0; id < GD_ARRAY_COUNT; id++) {
        gd_array_view v;
        if (gd_dataset_array(ds, (gd_array_id)id, &v) != GD_OK) continue;
        size_t bytes = (size_t)(v.shape[0] * v.shape[1]) * gd_dtype_size(v.dtype);
        printf("array %s %s %s %lld %lld %llu\n", label, gd_array_name((gd_array_id)id),
               gd_dtype_name(v.dtype), (long long)v.shape[0],
               (long long)(v.ndim == 2 ? v.shape[1] : 0),
               (unsigned long long)checksum(v.data, bytes));
    }
}

static int write_samples(const char *dir, uint64_t *rng) {
    const struct {
        const char *sub;
        gd_dtype feat, index;
    } kinds[] = {{"f32", GD_DTYPE_FLOAT32, GD_DTYPE_INT32},
                 {"f16", GD_DTYPE_FLOAT16, GD_DTYPE_INT32},
                 {"bf16", GD_DTYPE_BFLOAT16, GD_DTYPE_INT64}};
    for (int k = 0; k < 3; k++) {
        spec s = {300, 3000, 16, 5, kinds[k].index, kinds[k].feat};
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", dir, kinds[k].sub);
        gd_dataset_t *ds = build(&s, NULL, 0, rng);
        T_OK(gd_dataset_save(ds, path, 1));
        print_checksums(kinds[k].sub, ds);
        gd_dataset_close(ds);
    }
    return 0;
}

static int read_sample(const char *dir) {
    for (int mode = 0; mode < 2; mode++) {
        gd_dataset_open_options o = GD_DATASET_OPEN_OPTIONS_INIT;
        o.mode = (gd_open_mode)mode;
        gd_dataset_t *ds = NULL;
        gd_status st = gd_dataset_open(dir, &o, &ds);
        if (st != GD_OK) {
            fprintf(stderr, "gd_dataset_open(%s): %s: %s\n", dir, gd_status_string(st),
                    gd_last_error());
            return 1;
        }
        print_checksums(mode == GD_OPEN_MMAP ? "mmap" : "load", ds);
        gd_dataset_close(ds);
    }
    return 0;
}

/* ------------------------------------------------------------ damage */

static void damage_tests(const char *root, uint64_t *rng) {
    spec s = {200 + (int64_t)(t_rand(rng) % 300), 1500, 12, 6, GD_DTYPE_INT32, GD_DTYPE_FLOAT32};
    gd_dataset_t *good = build(&s, NULL, 0, rng);
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/damaged", root);
    char num[64];
    const int64_t n = s.n;

#define FRESH() T_OK(gd_dataset_save(good, dir, 1))

    /* meta.json fields */
    FRESH();
    edit_meta(dir, "\"graphdirect-dataset\"", "\"something-else\"");
    expect_open_fails(dir, GD_ERR_FORMAT, "meta.json", "'format'");
    FRESH();
    edit_meta(dir, "\"version\":\t1", "\"version\":\t2");
    expect_open_fails(dir, GD_ERR_UNSUPPORTED, "meta.json", "'version' is 2");
    snprintf(num, sizeof num, "\"num_nodes\":\t%lld", (long long)n);
    FRESH();
    edit_meta(dir, num, "\"num_nodes\":\t-5");
    expect_open_fails(dir, GD_ERR_RANGE, "meta.json", "'num_nodes' is -5");
    FRESH();
    edit_meta(dir, num, "\"num_nodes\":\t2.5");
    expect_open_fails(dir, GD_ERR_RANGE, "meta.json", "'num_nodes' is 2.5");
    FRESH();
    edit_meta(dir, num, "\"num_nodes\":\t1e17");
    expect_open_fails(dir, GD_ERR_RANGE, "meta.json", "'num_nodes'");
    FRESH();
    edit_meta(dir, num, "\"num_nodes\":\t\"12\"");
    expect_open_fails(dir, GD_ERR_FORMAT, "meta.json", "'num_nodes' is not a number");
    FRESH();
    edit_meta(dir, num, "\"num_nodes\":\t7");
    expect_open_fails(dir, GD_ERR_FORMAT, "meta.json", "arrays.indptr.shape");
    FRESH();
    edit_meta(dir, "\"dtype\":\t\"float32\"", "\"dtype\":\t\"complex64\"");
    expect_open_fails(dir, GD_ERR_FORMAT, "meta.json", "complex64");
    FRESH();
    edit_meta(dir, "\"dtype\":\t\"float32\"", "\"dtype\":\t\"int32\"");
    expect_open_fails(dir, GD_ERR_FORMAT, "arrays.features.dtype", "float32, float16");
    FRESH();
    edit_meta(dir, "\"file\":\t\"labels.npy\"", "\"file\":\t\"../labels.npy\"");
    expect_open_fails(dir, GD_ERR_FORMAT, "arrays.labels.file", "../labels.npy");
    FRESH();
    edit_meta(dir, "\"file\":\t\"labels.npy\"", "\"file\":\t\"sub/labels.npy\"");
    expect_open_fails(dir, GD_ERR_FORMAT, "arrays.labels.file", "sub/labels.npy");
    FRESH();
    edit_meta(dir, "\"file\":\t\"labels.npy\"", "\"file\":\t\"indices.npy\"");
    expect_open_fails(dir, GD_ERR_FORMAT, "meta.json", "both use");
    snprintf(num, sizeof num, "[%lld, 12]", (long long)n);
    FRESH();
    edit_meta(dir, num, "[5, 12]");
    expect_open_fails(dir, GD_ERR_FORMAT, "arrays.features.shape", "[5, 12]");
    FRESH();
    edit_meta(dir, "\"graph\":\t\"csc\"", "\"graph\":\t\"csr\"");
    expect_open_fails(dir, GD_ERR_UNSUPPORTED, "meta.json", "'graph'");
    FRESH();
    edit_meta(dir, "\"format\"", "\"version\":\t1, \"format\"");
    expect_open_fails(dir, GD_ERR_FORMAT, "meta.json", "twice");
    FRESH();
    edit_meta(dir, "\"indptr\":", "\"weights\": {}, \"indptr\":");
    expect_open_fails(dir, GD_ERR_FORMAT, "meta.json", "weights");
    FRESH();
    edit_meta(dir, "{", "{{");
    expect_open_fails(dir, GD_ERR_FORMAT, "meta.json", "not valid JSON");

    /* .npy files that disagree with meta.json or hold bad values */
    int64_t *ptr = malloc((size_t)(n + 1) * sizeof *ptr);
    int32_t *idx = malloc(1501 * sizeof *idx);
    int64_t *lab = malloc((size_t)n * sizeof *lab);
    float *feat = malloc((size_t)(n * 12) * sizeof *feat);
    gd_array_view v;
    T_OK(gd_dataset_array(good, GD_ARRAY_INDPTR, &v));
    memcpy(ptr, v.data, (size_t)(n + 1) * sizeof *ptr);
    T_OK(gd_dataset_array(good, GD_ARRAY_INDICES, &v));
    memcpy(idx, v.data, 1500 * sizeof *idx);
    idx[1500] = 0;
    T_OK(gd_dataset_array(good, GD_ARRAY_LABELS, &v));
    memcpy(lab, v.data, (size_t)n * sizeof *lab);
    T_OK(gd_dataset_array(good, GD_ARRAY_FEATURES, &v));
    memcpy(feat, v.data, (size_t)(n * 12) * sizeof *feat);

    int64_t sh[2] = {1501, 0};
    FRESH();
    put_npy(dir, "indices.npy", GD_DTYPE_INT32, 1, sh, idx);
    expect_open_fails(dir, GD_ERR_FORMAT, "indices.npy: shape is (1501,)", "arrays.indices");
    sh[0] = n;
    FRESH();
    put_npy(dir, "labels.npy", GD_DTYPE_INT32, 1, sh, idx);
    expect_open_fails(dir, GD_ERR_FORMAT, "labels.npy: dtype is int32", "int64");

    int64_t bad = (int64_t)(t_rand(rng) % 1500);
    int32_t saved = idx[bad];
    idx[bad] = (int32_t)(n + 7);
    sh[0] = 1500;
    FRESH();
    put_npy(dir, "indices.npy", GD_DTYPE_INT32, 1, sh, idx);
    char needle[160];
    snprintf(needle, sizeof needle, "indices.npy: element %lld is %lld, outside [0, %lld)",
             (long long)bad, (long long)(n + 7), (long long)n);
    expect_open_fails(dir, GD_ERR_RANGE, needle, NULL);
    /* Without graph validation the indices are not scanned. */
    gd_dataset_open_options quick = GD_DATASET_OPEN_OPTIONS_INIT;
    quick.validate_graph = 0;
    gd_dataset_t *q = NULL;
    T_OK(gd_dataset_open(dir, &quick, &q));
    gd_dataset_close(q);
    idx[bad] = -1;
    put_npy(dir, "indices.npy", GD_DTYPE_INT32, 1, sh, idx);
    expect_open_fails(dir, GD_ERR_RANGE, "is -1, outside", NULL);
    idx[bad] = saved;

    int64_t lb = (int64_t)(t_rand(rng) % (uint64_t)n);
    int64_t old_label = lab[lb];
    lab[lb] = 6;
    sh[0] = n;
    FRESH();
    put_npy(dir, "labels.npy", GD_DTYPE_INT64, 1, sh, lab);
    snprintf(needle, sizeof needle, "labels.npy: element %lld is 6, outside [-1, 6)",
             (long long)lb);
    expect_open_fails(dir, GD_ERR_RANGE, needle, NULL);
    lab[lb] = -2;
    put_npy(dir, "labels.npy", GD_DTYPE_INT64, 1, sh, lab);
    expect_open_fails(dir, GD_ERR_RANGE, "labels.npy", "is -2");
    lab[lb] = old_label;

    int64_t fb = (int64_t)(t_rand(rng) % (uint64_t)(n * 12));
    feat[fb] = NAN;
    int64_t fsh[2] = {n, 12};
    FRESH();
    put_npy(dir, "features.npy", GD_DTYPE_FLOAT32, 2, fsh, feat);
    snprintf(needle, sizeof needle, "features.npy: element (%lld, %lld) is nan",
             (long long)(fb / 12), (long long)(fb % 12));
    expect_open_fails(dir, GD_ERR_FORMAT, needle, NULL);
    feat[fb] = -INFINITY;
    put_npy(dir, "features.npy", GD_DTYPE_FLOAT32, 2, fsh, feat);
    expect_open_fails(dir, GD_ERR_FORMAT, "features.npy", "-inf");

    /* A split id outside [0, num_nodes), and a split of the wrong dtype. */
    int32_t split[3] = {0, (int32_t)n, 1};
    int64_t one[1] = {3};
    T_OK(gd_dataset_array(good, GD_ARRAY_VALID_IDX, &v));
    char from[200];
    snprintf(from, sizeof from, "\"file\":\t\"valid_idx.npy\",\n\t\t\t\"dtype\":\t\"int32\",\n"
             "\t\t\t\"shape\":\t[%lld]", (long long)v.shape[0]);
    FRESH();
    put_npy(dir, "valid_idx.npy", GD_DTYPE_INT32, 1, one, split);
    edit_meta(dir, from, "\"file\":\t\"valid_idx.npy\",\"dtype\":\"int32\",\"shape\":[3]");
    snprintf(needle, sizeof needle, "valid_idx.npy: element 1 is %lld, outside [0, %lld)",
             (long long)n, (long long)n);
    expect_open_fails(dir, GD_ERR_RANGE, needle, NULL);
    FRESH();
    int64_t *wide = malloc((size_t)(v.shape[0] + 1) * sizeof *wide);
    for (int64_t i = 0; i < v.shape[0]; i++) wide[i] = ((const int32_t *)v.data)[i];
    put_npy(dir, "valid_idx.npy", GD_DTYPE_INT64, 1, v.shape, wide);
    free(wide);
    expect_open_fails(dir, GD_ERR_FORMAT, "valid_idx.npy: dtype is int64", NULL);

    /* indptr not starting at 0, not monotone, not ending at num_edges */
    sh[0] = n + 1;
    int64_t keep = ptr[1];
    ptr[1] = ptr[2] + 1;
    FRESH();
    put_npy(dir, "indptr.npy", GD_DTYPE_INT64, 1, sh, ptr);
    expect_open_fails(dir, GD_ERR_FORMAT, "indptr.npy: element 2 is", "non-decreasing");
    ptr[1] = keep;
    ptr[n] = 1499;
    put_npy(dir, "indptr.npy", GD_DTYPE_INT64, 1, sh, ptr);
    expect_open_fails(dir, GD_ERR_FORMAT, "indptr.npy", "num_edges");
    ptr[n] = 1500;

    /* damaged .npy files inside the dataset */
    char path[4300];
    FRESH();
    snprintf(path, sizeof path, "%s/features.npy", dir);
    T_EQ_INT(truncate(path, 4096 + 100), 0);
    expect_open_fails(dir, GD_ERR_FORMAT, "features.npy", "truncated");
    FRESH();
    snprintf(path, sizeof path, "%s/indptr.npy", dir);
    FILE *f = fopen(path, "r+b");
    T_ASSERT(f);
    fputc('Z', f);
    fclose(f);
    expect_open_fails(dir, GD_ERR_FORMAT, "indptr.npy", "magic");
    FRESH();
    snprintf(path, sizeof path, "%s/labels.npy", dir);
    T_EQ_INT(unlink(path), 0);
    expect_open_fails(dir, GD_ERR_NOT_FOUND, "labels.npy", NULL);
    FRESH();
    snprintf(path, sizeof path, "%s/meta.json", dir);
    T_EQ_INT(unlink(path), 0);
    expect_open_fails(dir, GD_ERR_NOT_FOUND, "meta.json", NULL);
    t_rmtree(dir);

    /* A header whose shape overflows 64 bits (2^62 x 16 floats). */
    FRESH();
    {
        unsigned char h[128];
        const char *dict = "{'descr': '<f4', 'fortran_order': False, "
                           "'shape': (4611686018427387904, 16), }";
        memset(h, ' ', sizeof h);
        memcpy(h, "\x93NUMPY\x01\x00\x76\x00", 10);
        memcpy(h + 10, dict, strlen(dict));
        h[127] = '\n';
        snprintf(path, sizeof path, "%s/features.npy", dir);
        f = fopen(path, "wb");
        T_ASSERT(f);
        fwrite(h, 1, sizeof h, f);
        fclose(f);
        expect_open_fails(dir, GD_ERR_OVERFLOW, "features.npy", "overflows");
    }
#undef FRESH
    t_rmtree(dir);
    free(ptr);
    free(idx);
    free(lab);
    free(feat);
    gd_dataset_close(good);
}

/*
 * Issue 13, item 3: a split that held one node id twice passed validation; training then failed
 * at a seed-dependent epoch, and a resume failed again at the same minibatch. Validation now
 * refuses a repeated id, in one split or across two, naming the file, the id and both positions;
 * an open without validation still opens such a dataset.
 */
/* Save a 500-node dataset without edges whose splits are train, valid and test, unchecked. */
static void save_splits(const char *dir, const int32_t *train, const int32_t *valid,
                        const int32_t *test) {
    gd_dataset_t *ds = NULL;
    T_OK(gd__dataset_new("dup_split", NULL, 0, &ds));
    int64_t sh[1] = {501};
    int64_t *indptr;
    void *p;
    T_OK(gd__dataset_alloc(ds, GD_ARRAY_INDPTR, GD_DTYPE_INT64, 1, sh, (void **)&indptr));
    memset(indptr, 0, 501 * sizeof *indptr);
    sh[0] = 0;
    T_OK(gd__dataset_alloc(ds, GD_ARRAY_INDICES, GD_DTYPE_INT32, 1, sh, &p));
    const int32_t *split[3] = {train, valid, test};
    const int64_t len[3] = {300, 50, 50};
    for (int k = 0; k < 3; k++) {
        sh[0] = len[k];
        T_OK(gd__dataset_alloc(ds, (gd_array_id)(GD_ARRAY_TRAIN_IDX + k), GD_DTYPE_INT32, 1, sh,
                               &p));
        memcpy(p, split[k], (size_t)len[k] * sizeof *split[k]);
    }
    T_OK(gd__dataset_finish(ds, 0));
    T_OK(gd_dataset_save(ds, dir, 1));
    gd_dataset_close(ds);
}

/*
 * Issue 13, item 3: a split that held one node id twice passed validation; training then failed
 * at a seed-dependent epoch, and a resume failed again at the same minibatch. Validation now
 * refuses a repeated id, in one split or across two, naming the file, the id and both positions;
 * an open without validation still opens such a dataset.
 */
static void regress_duplicate_id_in_split_passes_validate(const char *root, uint64_t *rng) {
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/dup_split", root);
    int32_t train[300], valid[50], test[50];
    for (int32_t i = 0; i < 300; i++) train[i] = i;
    for (int32_t i = 0; i < 50; i++) valid[i] = 300 + i, test[i] = 350 + i;
    const int64_t pos = 150 + (int64_t)(t_rand(rng) % 150), id = (int64_t)(t_rand(rng) % 150);
    train[pos] = (int32_t)id;
    save_splits(dir, train, valid, test);
    char needle[160];
    snprintf(needle, sizeof needle,
             "train_idx.npy: node id %lld appears at positions %lld and %lld", (long long)id,
             (long long)id, (long long)pos);
    expect_open_fails(dir, GD_ERR_FORMAT, needle, "deduplicate the train split");
    gd_dataset_open_options quick = GD_DATASET_OPEN_OPTIONS_INIT;
    quick.validate_graph = 0;
    gd_dataset_t *q = NULL;
    T_OK(gd_dataset_open(dir, &quick, &q));
    gd_dataset_close(q);

    /* The same node in two splits is refused too, naming both. */
    train[pos] = (int32_t)pos;
    test[7] = 42;
    save_splits(dir, train, valid, test);
    expect_open_fails(dir, GD_ERR_FORMAT,
                      "test_idx.npy: node id 42 at position 7 is also in the train split "
                      "(train_idx.npy, position 42)",
                      "disjoint");
    test[7] = 357;
    save_splits(dir, train, valid, test);
    T_OK(gd_dataset_open(dir, NULL, &q));
    gd_dataset_close(q);

    /* A failed allocation of the check's bitmap is a clean error, not a pass. */
    T_OK(gd_dataset_open(dir, &quick, &q));
    gd_fault_set(GD_FAULT_ALLOC, 1);
    T_FAILS(gd__dataset_check(q, 1), GD_ERR_NO_MEMORY, "split check");
    gd_fault_set(GD_FAULT_ALLOC, 0);
    gd_dataset_close(q);
    t_rmtree(dir);
}

/*
 * A 200-node dataset in memory without edges: 4 features a node, labels (NULL: node % 3), and
 * train_idx / test_idx of ntrain / ntest ids; finished with validation, the status returned.
 */
#define NONSENSE_NODES 200
static gd_status labelled_dataset(const int64_t *labels, const int32_t *train, int64_t ntrain,
                                  const int32_t *test, int64_t ntest, gd_dataset_t **out) {
    gd_dataset_t *ds = NULL;
    void *p;
    T_OK(gd__dataset_new("nonsense", NULL, 0, &ds));
    int64_t sh[2] = {NONSENSE_NODES + 1, 4};
    T_OK(gd__dataset_alloc(ds, GD_ARRAY_INDPTR, GD_DTYPE_INT64, 1, sh, &p));
    memset(p, 0, (NONSENSE_NODES + 1) * sizeof(int64_t));
    sh[0] = 0;
    T_OK(gd__dataset_alloc(ds, GD_ARRAY_INDICES, GD_DTYPE_INT32, 1, sh, &p));
    sh[0] = NONSENSE_NODES;
    T_OK(gd__dataset_alloc(ds, GD_ARRAY_FEATURES, GD_DTYPE_FLOAT32, 2, sh, &p));
    for (int i = 0; i < NONSENSE_NODES * 4; i++) ((float *)p)[i] = (float)(i % 7);
    T_OK(gd__dataset_alloc(ds, GD_ARRAY_LABELS, GD_DTYPE_INT64, 1, sh, &p));
    for (int i = 0; i < NONSENSE_NODES; i++) ((int64_t *)p)[i] = labels ? labels[i] : i % 3;
    sh[0] = ntrain;
    T_OK(gd__dataset_alloc(ds, GD_ARRAY_TRAIN_IDX, GD_DTYPE_INT32, 1, sh, &p));
    memcpy(p, train, (size_t)ntrain * sizeof *train);
    sh[0] = ntest;
    T_OK(gd__dataset_alloc(ds, GD_ARRAY_TEST_IDX, GD_DTYPE_INT32, 1, sh, &p));
    memcpy(p, test, (size_t)ntest * sizeof *test);
    const gd_status st = gd__dataset_finish(ds, 1);
    if (st != GD_OK) {
        gd_dataset_close(ds);
        ds = NULL;
    }
    *out = ds;
    return st;
}

/*
 * Issue 13, item 10, "silently accepted nonsense": a dataset whose training labels are all -1
 * trained nothing and exited 0; a test split equal to the train split was accepted; one label
 * of 10^9 made a dataset of 10^9 classes. Now the trainer refuses the first, validation the
 * other two (the split overlap check of item 3 covers the equal splits), each with the fix.
 */
static void regress_silently_accepted_nonsense(void) {
    int32_t train[100], test[100];
    int64_t labels[NONSENSE_NODES];
    for (int32_t i = 0; i < 100; i++) train[i] = i, test[i] = 100 + i;
    gd_dataset_t *ds = NULL;
    gd_trainer_t *t = NULL;
    gd_train_options o = GD_TRAIN_OPTIONS_INIT;
    o.mode = "cpu";
    o.hidden = 8;
    o.batch_size = 64;

    /* All training labels -1 (the test nodes keep theirs). */
    for (int i = 0; i < NONSENSE_NODES; i++) labels[i] = i < 100 ? -1 : i % 3;
    T_OK(labelled_dataset(labels, train, 100, test, 100, &ds));
    T_FAILS(gd_trainer_create(ds, &o, &t), GD_ERR_INVALID_ARG,
            "has no labelled training node: the labels of all 100 nodes of train_idx are -1");
    T_ASSERT(t == NULL);
    gd_dataset_close(ds);
    /* One labelled training node is enough to train. */
    labels[37] = 1;
    T_OK(labelled_dataset(labels, train, 100, test, 100, &ds));
    T_OK(gd_trainer_create(ds, &o, &t));
    gd_trainer_destroy(t);
    gd_dataset_close(ds);

    /* The test split equal to the train split. */
    T_FAILS(labelled_dataset(NULL, train, 100, train, 100, &ds), GD_ERR_FORMAT,
            "test_idx.npy: node id 0 at position 0 is also in the train split");
    T_ASSERT(ds == NULL);

    /* One label of 10^9: 10^9 + 1 classes for 200 labelled nodes. */
    for (int i = 0; i < NONSENSE_NODES; i++) labels[i] = i % 3;
    labels[123] = 1000000000;
    T_FAILS(labelled_dataset(labels, train, 100, test, 100, &ds), GD_ERR_RANGE,
            "num_classes is 1000000001 (the largest label + 1) but only 200 nodes are labelled");
    T_ASSERT(strstr(gd_last_error(), "renumber"));
    /* Many classes are fine below 2^20. */
    labels[123] = (1 << 20) - 1;
    T_OK(labelled_dataset(labels, train, 100, test, 100, &ds));
    T_EQ_INT(gd_dataset_num_classes(ds), 1 << 20);
    gd_dataset_close(ds);
}

int main(void) {
    uint64_t rng = t_seed();
    const char *w = getenv("GD_WRITE_SAMPLE_DIR");
    if (w) return write_samples(w, &rng);
    const char *r = getenv("GD_READ_SAMPLE_DIR");
    if (r) return read_sample(r);

    char root[1024], dir[1200], dir2[1200], path[4300];
    t_tmpdir(root, sizeof root);
    snprintf(dir, sizeof dir, "%s/ds", root);
    snprintf(dir2, sizeof dir2, "%s/built", root);

    T_EQ_STR(gd_array_name(GD_ARRAY_TRAIN_IDX), "train_idx");
    T_EQ_STR(gd_array_name((gd_array_id)99), "invalid");

    /* In memory -> save -> open in both modes, for every feature and index dtype. */
    const gd_dtype feats[] = {GD_DTYPE_FLOAT32, GD_DTYPE_FLOAT16, GD_DTYPE_BFLOAT16};
    for (int k = 0; k < 6; k++) {
        spec s = {1 + (int64_t)(t_rand(&rng) % 2000), (int64_t)(t_rand(&rng) % 20000),
                  (int64_t)(t_rand(&rng) % 40), (int64_t)(t_rand(&rng) % 10),
                  k % 2 ? GD_DTYPE_INT64 : GD_DTYPE_INT32, feats[k % 3]};
        gd_dataset_t *mem = build(&s, NULL, 0, &rng);
        T_OK(gd_dataset_save(mem, dir, k > 0));
        no_leftovers(root);
        for (int mode = 0; mode < 2; mode++) {
            gd_dataset_open_options o = GD_DATASET_OPEN_OPTIONS_INIT;
            o.mode = (gd_open_mode)mode;
            gd_dataset_t *ds = NULL;
            T_OK(gd_dataset_open(dir, &o, &ds));
            same(mem, ds);
            T_EQ_INT(ds->arrays[GD_ARRAY_INDPTR].store,
                     mode == GD_OPEN_MMAP ? GD__STORE_MAP_RO : GD__STORE_HEAP);
            gd_dataset_close(ds);
        }
        /* Large arrays' data starts at a 4 KiB boundary; small ones at 64 bytes. */
        for (int id = 0; id < GD_ARRAY_COUNT; id++) {
            if (mem->arrays[id].store == GD__STORE_NONE) continue;
            gd_npy_info info;
            snprintf(path, sizeof path, "%s/%s", dir, gd__meta_default_file((gd_array_id)id));
            T_OK(gd_npy_read_info(path, &info));
            T_EQ_INT(info.data_offset % (info.data_bytes >= 4096 ? 4096 : 64), 0);
        }
        gd_dataset_close(mem);
    }

    /* On-disk build: nothing under the final name until finish; then it opens the same. */
    {
        spec s = {1000, 9000, 24, 4, GD_DTYPE_INT32, GD_DTYPE_BFLOAT16};
        gd_dataset_t *b = build(&s, dir2, 0, &rng);
        T_ASSERT(exists(dir2));
        no_leftovers(root);
        /* Finished, it reads its published files read-only, as an opened dataset does. */
        T_EQ_INT(b->arrays[GD_ARRAY_INDICES].store, GD__STORE_MAP_RO);
        gd_dataset_t *o = NULL;
        T_OK(gd_dataset_open(dir2, NULL, &o));
        same(b, o);
        gd_dataset_close(o);
        gd_dataset_close(b);
        T_ASSERT(exists(dir2));

        /* An unfinished build leaves nothing behind when closed. */
        gd_dataset_t *u = NULL;
        char dir3[1300];
        snprintf(dir3, sizeof dir3, "%s/unfinished/", root);
        T_OK(gd__dataset_new(NULL, dir3, 0, &u));
        T_EQ_STR(gd_dataset_name(u), "unfinished");
        int64_t sh[1] = {5000};
        void *p;
        T_OK(gd__dataset_alloc(u, GD_ARRAY_INDPTR, GD_DTYPE_INT64, 1, sh, &p));
        snprintf(path, sizeof path, "%s/unfinished", root);
        T_ASSERT(!exists(path));
        /* A failing finish (indptr is all zeros but not num_nodes + 1 long ...) keeps it
         * unpublished too. */
        T_FAILS(gd__dataset_finish(u, 1), GD_ERR_INVALID_ARG, "indices");
        gd_dataset_close(u);
        T_ASSERT(!exists(path));
        no_leftovers(root);
    }

    /* Overwrite rules. */
    {
        spec s = {50, 200, 3, 2, GD_DTYPE_INT32, GD_DTYPE_FLOAT32};
        gd_dataset_t *m = build(&s, NULL, 0, &rng);
        T_FAILS(gd_dataset_save(m, dir, 0), GD_ERR_INVALID_ARG, "already exists");
        T_FAILS(gd__dataset_new("x", dir, 0, &(gd_dataset_t *){NULL}), GD_ERR_INVALID_ARG,
                "already exists");
        T_OK(gd_dataset_save(m, dir, 1));
        gd_dataset_t *o = NULL;
        T_OK(gd_dataset_open(dir, NULL, &o));
        same(m, o);
        /* Saving over the directory a dataset is mapped from keeps the mapping valid. */
        T_OK(gd_dataset_save(o, dir, 1));
        same(m, o);
        gd_dataset_close(o);
        char other[1300];
        snprintf(other, sizeof other, "%s/precious", root);
        T_EQ_INT(mkdir(other, 0755), 0);
        snprintf(path, sizeof path, "%s/keep.txt", other);
        spill(path, "keep me");
        T_FAILS(gd_dataset_save(m, other, 1), GD_ERR_INVALID_ARG, "not a graphdirect dataset");
        T_ASSERT(exists(path));
        snprintf(path, sizeof path, "%s/no/such/parent", root);
        T_FAILS(gd_dataset_save(m, path, 0), GD_ERR_NOT_FOUND, "parent directory");
        T_FAILS(gd_dataset_array(m, (gd_array_id)42, &(gd_array_view){0}), GD_ERR_INVALID_ARG,
                "42");
        gd_dataset_close(m);
        no_leftovers(root);
    }

    /* A dataset without features, labels or splits. */
    {
        spec s = {30, 0, 0, 0, GD_DTYPE_INT64, GD_DTYPE_FLOAT32};
        gd_dataset_t *m = build(&s, NULL, 0, &rng);
        gd_array_view v;
        T_FAILS(gd_dataset_array(m, GD_ARRAY_FEATURES, &v), GD_ERR_NOT_FOUND, "features");
        T_OK(gd_dataset_save(m, dir, 1));
        gd_dataset_t *o = NULL;
        T_OK(gd_dataset_open(dir, NULL, &o));
        same(m, o);
        gd_dataset_close(o);
        gd_dataset_close(m);
    }

    /* Large enough for the parallel scans: the lowest bad position is reported, every time. */
    {
        spec s = {5000, 400000, 0, 0, GD_DTYPE_INT64, GD_DTYPE_FLOAT32};
        gd_dataset_t *m = build(&s, NULL, 0, &rng);
        int64_t *ix = m->arrays[GD_ARRAY_INDICES].data;
        int64_t p1 = 1000 + (int64_t)(t_rand(&rng) % 300000), p2 = p1 + 1 + 50000;
        ix[p2] = -3;
        ix[p1] = 5000;
        char needle[128];
        snprintf(needle, sizeof needle, "indices.npy: element %lld is 5000, outside [0, 5000)",
                 (long long)p1);
        const char *want = needle;
        for (int rep = 0; rep < 3; rep++) T_FAILS(gd__dataset_check(m, 1), GD_ERR_RANGE, want);
        T_OK(gd__dataset_check(m, 0));
        gd_dataset_close(m);
    }

    damage_tests(root, &rng);
    regress_duplicate_id_in_split_passes_validate(root, &rng);
    regress_silently_accepted_nonsense();

    t_rmtree(root);
    t_check_no_leaks();
    printf("test_dataset: ok\n");
    return 0;
}
