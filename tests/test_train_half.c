/*
 * Half-precision features end to end on the CPU (issue 16 item 6): the same generated data with
 * float32, float16 and bfloat16 features trains in the cpu mode to test accuracies within 0.5
 * points of each other, by sampled and by exact (layer-wise) inference; the plan names the
 * half dtype with the table's real bytes; the loader hands a half table's rows as float32, each
 * the exact widening of the stored value. The GPU modes: test_train_half_gpu.
 */
#include "half_util.h"

/* The loader's first minibatch of a half table: x is float32, row i = the widened row of id i. */
static void loader_widens(const gd_dataset_t *ds, gd_dtype dtype) {
    gd_loader_options o = GD_LOADER_OPTIONS_INIT;
    o.mode = "cpu";
    o.batch_size = 256;
    o.seed = HALF_SEED;
    gd_loader_t *l = NULL;
    gd_batch_t *b = NULL;
    T_OK(gd_loader_create(ds, &o, &l));
    T_OK(gd_loader_start_epoch(l, 0));
    T_OK(gd_loader_next(l, &b));
    gd_array_view x, ids, table;
    T_OK(gd_batch_array(b, GD_BATCH_FEATURES, 0, &x));
    T_OK(gd_batch_array(b, GD_BATCH_INPUT_NODES, 0, &ids));
    T_OK(gd_dataset_array(ds, GD_ARRAY_FEATURES, &table));
    T_EQ_INT(x.dtype, GD_DTYPE_FLOAT32);
    T_EQ_INT(table.dtype, dtype);
    const int64_t dim = table.shape[1];
    T_EQ_INT(x.shape[0], ids.shape[0]);
    T_EQ_INT(x.shape[1], dim);
    const float *xf = x.data;
    const int64_t *id = ids.data;
    const uint16_t *h = table.data;
    for (int64_t i = 0; i < ids.shape[0]; i++)
        for (int64_t j = 0; j < dim; j++) {
            const uint16_t v = h[id[i] * dim + j];
            const float want = dtype == GD_DTYPE_FLOAT16 ? gd_half_to_float(v)
                                                         : gd_bfloat16_to_float(v);
            if (memcmp(&want, &xf[i * dim + j], sizeof want) != 0)
                T_FAIL_("loader %s: row %lld (node %lld) column %lld: %.9g, want %.9g",
                        gd_dtype_name(dtype), (long long)i, (long long)id[i], (long long)j,
                        xf[i * dim + j], want);
        }
    gd_batch_release(b);
    gd_loader_destroy(l);
}

/* The plan names a half table's dtype and its real bytes (2 per value). */
static void plan_names_dtype(const gd_dataset_t *ds, gd_dtype dtype) {
    char text[4096], want[64];
    gd_train_options o = GD_TRAIN_OPTIONS_INIT;
    o.mode = "cpu";
    T_OK(gd_trainer_plan(ds, &o, text, sizeof text));
    snprintf(want, sizeof want, "features (%s)", gd_dtype_name(dtype));
    fprintf(stderr, "%s", text);
    if (!strstr(text, want)) T_FAIL_("the plan does not name \"%s\":\n%s", want, text);
    /* 50K rows of 32 two-byte values: 3.05 MiB (the float32 table would be 6.10 MiB). */
    if (!strstr(text, "3.05 MiB")) T_FAIL_("the plan does not show 3.05 MiB of features:\n%s", text);
}

int main(void) {
    gd_dataset_t *ds[3];
    for (int i = 0; i < 3; i++) ds[i] = half_dataset(half_dtypes[i]);
    for (int i = 1; i < 3; i++) {
        plan_names_dtype(ds[i], half_dtypes[i]);
        loader_widens(ds[i], half_dtypes[i]);
    }
    half_result r[3];
    half_compare(ds, "cpu", -1, r);
    for (int i = 0; i < 3; i++) gd_dataset_close(ds[i]);
    t_check_no_leaks();
    return 0;
}
