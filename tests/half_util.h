/*
 * What test_train_half (the cpu mode, in CI) and test_train_half_gpu (every GPU mode) share:
 * one generated dataset in float32, float16 and bfloat16 features (the same draws, rounded),
 * trained with the same seed and settings, and the bar: a half table's test accuracy
 * within 0.5 points of float32's, sampled and exact. The dataset is the tiny preset's shape at
 * 50K nodes, so that its 10K test nodes make 0.5 points a bar of 50 nodes, and a run takes
 * seconds on two cores. The seed is fixed: the bar is about the data, not about a lucky draw.
 */
#ifndef GD_TESTS_HALF_UTIL_H
#define GD_TESTS_HALF_UTIL_H

#include "test.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define HALF_SEED 11
#define HALF_NODES 50000
#define HALF_EPOCHS 3
#define HALF_BAR 0.005 /* the 0.5 points */

static const gd_dtype half_dtypes[3] = {GD_DTYPE_FLOAT32, GD_DTYPE_FLOAT16, GD_DTYPE_BFLOAT16};

/* The test dataset with features of dtype, in memory. */
static inline gd_dataset_t *half_dataset(gd_dtype dtype) {
    gd_generate_options go = GD_GENERATE_OPTIONS_INIT;
    go.preset = "tiny";
    go.num_nodes = HALF_NODES;
    go.seed = HALF_SEED;
    go.feature_dtype = dtype;
    gd_dataset_t *ds = NULL;
    T_OK(gd_generate(&go, &ds));
    return ds;
}

typedef struct {
    double sampled, exact, loss;
    int64_t cache_rows;
    char plan[512];
} half_result;

static inline int half_on_epoch(void *user, const gd_epoch_stats *s) {
    ((half_result *)user)->loss = s->loss;
    return 0;
}

/* Train on ds in mode (a GPU cache of cache_bytes in zero-copy, -1: the default). */
static inline half_result half_train(const gd_dataset_t *ds, const char *mode,
                                     int64_t cache_bytes) {
    half_result r;
    memset(&r, 0, sizeof r);
    gd_train_options o = GD_TRAIN_OPTIONS_INIT;
    o.mode = mode;
    o.num_layers = 2;
    o.fanouts[0] = 10;
    o.fanouts[1] = 5;
    o.batch_size = 512;
    o.hidden = 64;
    o.dropout = 0.3;
    o.lr = 0.01;
    o.seed = HALF_SEED;
    o.gpu_cache_bytes = cache_bytes;
    gd_trainer_t *t = NULL;
    T_OK(gd_trainer_create(ds, &o, &t));
    gd_fit_options fo = GD_FIT_OPTIONS_INIT;
    fo.epochs = HALF_EPOCHS;
    fo.validate = 0; /* the last epoch's model in every run: no best epoch picked apart */
    fo.keep_best = 0;
    fo.on_epoch = half_on_epoch;
    fo.on_epoch_user = &r;
    gd_fit_result fr = GD_FIT_RESULT_INIT;
    T_OK(gd_trainer_fit(t, &fo, &fr));
    r.sampled = fr.test_acc;
    r.exact = fr.test_exact;
    gd_trainer_info info = GD_TRAINER_INFO_INIT;
    T_OK(gd_trainer_get_info(t, &info));
    r.cache_rows = info.feature_cache_rows;
    snprintf(r.plan, sizeof r.plan, "%s", info.plan);
    gd_trainer_destroy(t);
    T_ASSERT(isfinite(r.loss) && r.sampled > 0.5 && r.exact > 0.5);
    return r;
}

/* Each dtype of half_dtypes trained in mode; the half ones within the bar of float32. */
static inline void half_compare(gd_dataset_t *const ds[3], const char *mode, int64_t cache_bytes,
                                half_result out[3]) {
    for (int i = 0; i < 3; i++) {
        out[i] = half_train(ds[i], mode, cache_bytes);
        fprintf(stderr, "%-12s %-9s loss %.4f test %.4f sampled, %.4f exact\n", mode,
                gd_dtype_name(half_dtypes[i]), out[i].loss, out[i].sampled, out[i].exact);
    }
    for (int i = 1; i < 3; i++) {
        T_NEAR(out[i].sampled, out[0].sampled, HALF_BAR);
        T_NEAR(out[i].exact, out[0].exact, HALF_BAR);
    }
}

#endif /* GD_TESTS_HALF_UTIL_H */
