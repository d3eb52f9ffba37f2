/*
 * Locality-aware sampling in training (issue 14, item 5; src/train/locality.c). CPU: the option
 * is refused where no rows are in GPU memory (cpu mode), and out-of-range factors are refused.
 * GPU (exits 77 without one): zero-copy with a feature cache of a fifth of the table; the same
 * run with factor 1 (off) equals the default run exactly; factor 8 trains on different
 * minibatches (the losses differ) and still learns (test accuracy within 10 points of uniform
 * sampling's, and above chance by far); evaluation samples uniformly, so the trained model's
 * accuracy does not depend on the factor it was trained with once its parameters are fixed
 * (the same model evaluated by a uniform trainer gives the same accuracy); auto runs and adapts.
 */
#include "test.h"

#include "core/philox.h"
#include "train/datapath.h"

#include <stdio.h>

#define EPOCHS 3

typedef struct {
    double loss[EPOCHS], test;
} run_result;

static int on_epoch(void *user, const gd_epoch_stats *s) {
    run_result *r = user;
    if (s->epoch >= 0 && s->epoch < EPOCHS) r->loss[s->epoch] = s->loss;
    return 0;
}

static gd_train_options options(const char *mode, int locality, int64_t cache) {
    gd_train_options o = GD_TRAIN_OPTIONS_INIT;
    o.mode = mode;
    o.fanouts[0] = 8;
    o.fanouts[1] = 4;
    o.batch_size = 256;
    o.hidden = 32;
    o.lr = 0.01;
    o.seed = 11;
    o.threads = 1;
    o.locality = locality;
    o.gpu_cache_bytes = cache;
    return o;
}

static void train(const gd_dataset_t *ds, const gd_train_options *o, run_result *r,
                  const char *save) {
    gd_trainer_t *t = NULL;
    gd_fit_options f = GD_FIT_OPTIONS_INIT;
    gd_fit_result res = GD_FIT_RESULT_INIT;
    f.epochs = EPOCHS;
    f.on_epoch = on_epoch;
    f.on_epoch_user = r;
    f.exact_test = 0;
    T_OK(gd_trainer_create(ds, o, &t));
    T_OK(gd_trainer_fit(t, &f, &res));
    r->test = res.test_acc;
    if (save) T_OK(gd_trainer_save(t, save));
    gd_trainer_destroy(t);
}

static void refusals(const gd_dataset_t *ds) {
    gd_trainer_t *t = NULL;
    gd_train_options o = options("cpu", 4, -1);
    T_FAILS(gd_trainer_create(ds, &o, &t), GD_ERR_INVALID_ARG, "zero-copy");
    o.locality = -2;
    T_FAILS(gd_trainer_create(ds, &o, &t), GD_ERR_INVALID_ARG, "locality");
    o.locality = GD_SAMPLER_MAX_BIAS + 1;
    T_FAILS(gd_trainer_create(ds, &o, &t), GD_ERR_INVALID_ARG, "locality");
}

/*
 * The rule of --locality auto (gd__locality_next), on random times: a uniform epoch picks
 * clamp(round(2 gather / train), 1, 16); a biased epoch no faster than the fastest uniform one
 * settles on uniform sampling for good; a faster one keeps adapting.
 */
static void auto_rule(uint64_t seed) {
    gd__locality_auto s = {1, 0, 0};
    T_EQ_INT(gd__locality_next(&s, 0.06, 0.06, 0.14), 2); /* the H100 products run's epoch 1 */
    T_EQ_INT(gd__locality_next(&s, 0.06, 0.04, 0.20), 1); /* slower than 0.14 s: settled */
    T_ASSERT(s.settled);
    T_EQ_INT(gd__locality_next(&s, 1.0, 0.01, 0.01), 1); /* stays uniform */
    gd__locality_auto q = {1, 0, 0};
    T_EQ_INT(gd__locality_next(&q, 0.0, 1.0, 1.0), 1); /* gather-light: uniform, not settled */
    T_EQ_INT(gd__locality_next(&q, 3.0, 1.0, 0.9), 6); /* the fastest uniform epoch: 0.9 s */
    T_EQ_INT(gd__locality_next(&q, 2.0, 1.0, 0.8), 4); /* biased and faster: adapts */
    T_EQ_INT(gd__locality_next(&q, 100.0, 1.0, 0.7), 16);
    T_EQ_INT(gd__locality_next(&q, 1.0, 0.0, 0.6), 1); /* no train time: uniform */
    T_ASSERT(!q.settled);
    gd_philox_ctr k = gd_philox(seed, 0, 0, 0, 0);
    uint64_t x = ((uint64_t)k.v[1] << 32) | k.v[0];
    for (int i = 0; i < 1000; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        const double g = (double)(x >> 40) / (1 << 20);
        const double t = (double)((x >> 16) & 0xffffff) / (1 << 20);
        const double e = 0.1 + (double)(x & 0xffff) / 65536.0;
        gd__locality_auto before = q;
        const int f = gd__locality_next(&q, g, t, e);
        T_ASSERT(f >= 1 && f <= 16 && f == q.factor);
        if (before.settled) T_EQ_INT(f, 1);
        if (before.factor > 1 && before.best_uniform_s > 0 && e >= before.best_uniform_s)
            T_ASSERT(q.settled && f == 1);
        if (before.factor == 1)
            T_ASSERT(q.best_uniform_s <= e &&
                     (before.best_uniform_s <= 0 || q.best_uniform_s <= before.best_uniform_s));
    }
}

int main(void) {
    const uint64_t seed = t_seed();
    auto_rule(seed);
    gd_dataset_t *ds = t_tiny_dataset(5);
    refusals(ds);
    if (gd_device_count() == 0) {
        fprintf(stderr, "no GPU: the zero-copy runs are skipped\n");
        gd_dataset_close(ds);
        return GD_TEST_SKIP;
    }
    char dir[4096], path[4200];
    t_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/biased.gdc", dir);
    const int64_t cache = gd_dataset_num_nodes(ds) * gd_dataset_feature_dim(ds) * 4 / 5;
    run_result base = {0}, off = {0}, biased = {0}, automatic = {0};
    gd_train_options o = options("zero-copy", 0, cache);
    train(ds, &o, &base, NULL);
    o.locality = 1;
    train(ds, &o, &off, NULL);
    for (int e = 0; e < EPOCHS; e++) T_NEAR(off.loss[e], base.loss[e], 1e-6 * base.loss[e]);
    o.locality = 8;
    train(ds, &o, &biased, path);
    int differ = 0;
    for (int e = 0; e < EPOCHS; e++) differ |= biased.loss[e] != base.loss[e];
    T_ASSERT(differ);
    fprintf(stderr, "test accuracy: uniform %.4f, locality 8 %.4f\n", base.test, biased.test);
    T_ASSERT(biased.test > base.test - 0.10 && biased.test > 0.5);
    /* The biased model evaluated by a uniform trainer: the same accuracy (evaluation is uniform). */
    gd_trainer_t *t = NULL;
    double acc_uniform = 0, acc_biased = 0;
    o.locality = 0;
    T_OK(gd_trainer_create(ds, &o, &t));
    T_OK(gd_trainer_load(t, path));
    T_OK(gd_trainer_evaluate(t, GD_ARRAY_TEST_IDX, 0, &acc_uniform, NULL));
    gd_trainer_destroy(t);
    o.locality = 8;
    T_OK(gd_trainer_create(ds, &o, &t));
    T_OK(gd_trainer_load(t, path));
    T_OK(gd_trainer_evaluate(t, GD_ARRAY_TEST_IDX, 0, &acc_biased, NULL));
    gd_trainer_destroy(t);
    T_NEAR(acc_biased, acc_uniform, 1e-9);
    o.locality = -1;
    train(ds, &o, &automatic, NULL);
    T_ASSERT(automatic.test > 0.5);
    gd_dataset_close(ds);
    t_rmtree(dir);
    printf("locality-aware sampling: ok\n");
    return 0;
}
