/*
 * Training with the features on disk (issue 16, items 1-4; the SSD tier): a dataset generated
 * into a directory (its features.npy is the file) trains with a host memory budget below the
 * table's size, and nothing else changed. The plan says the features stay on disk, with the host
 * cache (cpu) or the host buffer and the dynamic GPU cache (zero-copy); the losses of every
 * epoch and the test accuracies equal those of the same run with the table in memory, since
 * the rows gathered are the same bytes: bit for bit in cpu mode, within float tolerance on a GPU
 * (its atomics). float32 and bfloat16 tables, each eviction policy in cpu mode. Refusals:
 * locality-aware sampling over a cache that changes. Without a GPU the cpu part runs and the
 * GPU part is skipped (the test passes: cpu is a full path of its own).
 */
#include "test.h"

#include <stdio.h>
#include <string.h>

#define NODES 20000
#define NODES_HALF 60000 /* the half table needs more rows to outweigh the float32 buffers */
#define DIM 512
#define EPOCHS 2

typedef struct {
    double loss[EPOCHS];
    double sampled, exact;
    char plan[1024];
} run_result;

static int on_epoch(void *user, const gd_epoch_stats *s) {
    run_result *r = user;
    if (s->epoch >= 0 && s->epoch < EPOCHS) r->loss[s->epoch] = s->loss;
    return 0;
}

static gd_dataset_t *make_dataset(const char *dir, int64_t nodes, gd_dtype dtype) {
    gd_generate_options go = GD_GENERATE_OPTIONS_INIT;
    go.preset = "tiny";
    go.num_nodes = nodes;
    go.feature_dim = DIM;
    go.feature_dtype = dtype;
    go.seed = 5;
    go.out_dir = dir;
    go.overwrite = 1;
    gd_dataset_t *ds = NULL;
    T_OK(gd_generate(&go, &ds));
    gd_dataset_close(ds);
    gd_dataset_open_options oo = GD_DATASET_OPEN_OPTIONS_INIT;
    T_OK(gd_dataset_open(dir, &oo, &ds));
    return ds;
}

static gd_train_options options(const char *mode, int64_t host_budget) {
    gd_train_options o = GD_TRAIN_OPTIONS_INIT;
    o.mode = mode;
    o.num_layers = 2;
    o.fanouts[0] = 4;
    o.fanouts[1] = 4;
    o.batch_size = 128;
    o.hidden = 32;
    o.dropout = 0;
    o.lr = 0.01;
    o.seed = 9;
    o.host_mem_budget = host_budget;
    return o;
}

static run_result train(const gd_dataset_t *ds, const gd_train_options *o) {
    run_result r;
    memset(&r, 0, sizeof r);
    gd_trainer_t *t = NULL;
    T_OK(gd_trainer_create(ds, o, &t));
    gd_fit_options fo = GD_FIT_OPTIONS_INIT;
    fo.epochs = EPOCHS;
    fo.validate = 0;
    fo.keep_best = 0;
    fo.on_epoch = on_epoch;
    fo.on_epoch_user = &r;
    gd_fit_result fr = GD_FIT_RESULT_INIT;
    T_OK(gd_trainer_fit(t, &fo, &fr));
    r.sampled = fr.test_acc;
    r.exact = fr.test_exact;
    gd_trainer_info info = GD_TRAINER_INFO_INIT;
    T_OK(gd_trainer_get_info(t, &info));
    snprintf(r.plan, sizeof r.plan, "%s", info.plan);
    gd_trainer_destroy(t);
    return r;
}

/* In memory, then with a host budget of half the table: same losses, the plan says disk. */
static void compare(const gd_dataset_t *ds, const char *mode, int64_t table_bytes, double tol,
                    const char *what) {
    const gd_train_options mem = options(mode, 0);
    const gd_train_options disk = options(mode, table_bytes * 3 / 4);
    const run_result a = train(ds, &mem), b = train(ds, &disk);
    if (strstr(a.plan, "features on disk"))
        T_FAIL_("%s in memory: the plan says disk:\n%s", what, a.plan);
    if (!strstr(b.plan, "features on disk"))
        T_FAIL_("%s under a budget of 3/4 of the table: the plan does not say disk:\n%s", what,
                b.plan);
    for (int e = 0; e < EPOCHS; e++) {
        fprintf(stderr, "%-28s epoch %d: loss %.9f in memory, %.9f from disk\n", what, e,
                a.loss[e], b.loss[e]);
        T_NEAR(b.loss[e], a.loss[e], tol);
    }
    T_NEAR(b.sampled, a.sampled, tol);
    T_NEAR(b.exact, a.exact, tol);
    T_ASSERT(a.exact > 0.5);
    fprintf(stderr, "%s: test %.4f sampled, %.4f exact; plan from disk: %s\n", what, b.sampled,
            b.exact, b.plan);
}

int main(void) {
    (void)t_seed();
    char dir[4096], d32[4200], d16[4200];
    t_tmpdir(dir, sizeof dir);
    snprintf(d32, sizeof d32, "%s/f32", dir);
    snprintf(d16, sizeof d16, "%s/bf16", dir);
    gd_dataset_t *ds32 = make_dataset(d32, NODES, GD_DTYPE_FLOAT32);
    gd_dataset_t *ds16 = make_dataset(d16, NODES_HALF, GD_DTYPE_BFLOAT16);
    const int64_t t32 = (int64_t)NODES * DIM * 4, t16 = (int64_t)NODES_HALF * DIM * 2;

    /* cpu: the rows through the host cache, bit for bit the rows in memory; every policy. */
    const char *const policies[3] = {"clock", "sieve", "random"};
    for (int p = 0; p < 3; p++) {
        char what[64];
        T_OK(gd_param_set("GD_DISK_EVICT", policies[p]));
        snprintf(what, sizeof what, "cpu float32 (%s)", policies[p]);
        compare(ds32, "cpu", t32, 0, what);
    }
    T_OK(gd_param_set("GD_DISK_EVICT", "lru"));
    {
        const gd_train_options o = options("cpu", t32 * 3 / 4);
        gd_trainer_t *t = NULL;
        T_FAILS(gd_trainer_create(ds32, &o, &t), GD_ERR_INVALID_ARG, "clock, sieve or random");
    }
    T_OK(gd_param_set("GD_DISK_EVICT", NULL));
    compare(ds16, "cpu", t16, 0, "cpu bfloat16");

    if (gd_device_count() > 0) {
        /* zero-copy: host buffer + dynamic GPU cache + the file, against the pinned table. */
        compare(ds32, "zero-copy", t32, 1e-3, "zero-copy float32");
        compare(ds16, "zero-copy", t16, 1e-3, "zero-copy bfloat16");
        gd_train_options o = options("zero-copy", t32 * 3 / 4);
        o.locality = 4;
        gd_trainer_t *t = NULL;
        T_FAILS(gd_trainer_create(ds32, &o, &t), GD_ERR_UNSUPPORTED, "locality");
    } else {
        fprintf(stderr, "no GPU: the zero-copy part is skipped\n");
    }
    gd_dataset_close(ds32);
    gd_dataset_close(ds16);
    t_rmtree(dir);
    t_check_no_leaks();
    fprintf(stderr, "training from disk: ok\n");
    return 0;
}
