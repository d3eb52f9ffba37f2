/*
 * Half-precision features end to end in every GPU mode (issue 16 item 6): all-gpu, zero-copy
 * (with a feature cache smaller than the table, so that rows come from the cache and from
 * pinned host memory) and cpu-centric each train the same data with float32, float16 and
 * bfloat16 features to test accuracies within 0.5 points of float32's in the same mode,
 * sampled and exact (exact inference reads the widened copy of a half table); each half run
 * also lands near the cpu mode's run of the same table (the modes gather the same rows). At
 * the same cache budget, zero-copy caches twice the rows of a half table. Without a GPU the
 * test exits 77 (test_train_half runs the cpu mode in CI).
 */
#include "half_util.h"

int main(void) {
    if (gd_device_count() == 0) {
        fprintf(stderr, "skip: no GPU (test_train_half covers the cpu mode)\n");
        return GD_TEST_SKIP;
    }
    gd_dataset_t *ds[3];
    for (int i = 0; i < 3; i++) ds[i] = half_dataset(half_dtypes[i]);
    half_result cpu[3], r[3];
    half_compare(ds, "cpu", -1, cpu);

    half_compare(ds, "all-gpu", -1, r);
    /*
     * About a third of the float32 table, a whole number of float32 rows: a half table's cache
     * holds exactly twice its rows.
     */
    const int64_t row32 = gd_dataset_feature_dim(ds[0]) * 4;
    const int64_t cache = gd_dataset_num_nodes(ds[0]) / 3 * row32;
    half_compare(ds, "zero-copy", cache, r);
    T_ASSERT(r[0].cache_rows > 0 && r[0].cache_rows < gd_dataset_num_nodes(ds[0]));
    for (int i = 1; i < 3; i++) {
        T_EQ_INT(r[i].cache_rows, 2 * r[0].cache_rows);
        if (!strstr(r[i].plan, "feature rows")) T_FAIL_("zero-copy plan: %s", r[i].plan);
    }
    half_compare(ds, "cpu-centric", -1, r);
    /* The GPU nn backend sums in another order: the same tolerance as test_train_modes. */
    for (int i = 0; i < 3; i++) {
        T_NEAR(r[i].sampled, cpu[i].sampled, 0.01);
        T_NEAR(r[i].exact, cpu[i].exact, 0.01);
    }
    for (int i = 0; i < 3; i++) gd_dataset_close(ds[i]);
    t_check_no_leaks();
    return 0;
}
