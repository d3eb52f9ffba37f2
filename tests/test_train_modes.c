/*
 * The trainer's modes against each other (issue 5 item 9): every mode samples the same
 * minibatches, gathers the same rows and trains from the same parameters with the same dropout
 * masks, so for one seed all modes give the same losses and accuracies up to float tolerance
 * (the CUDA nn backend sums in another order than the CPU one). Checked on a generated dataset
 * for all-gpu, zero-copy (without a cache, with a feature cache smaller than the table, with a
 * neighbour-list cache too, with an SM budget on the gather, with the rows outside the cache
 * gathered by CPU threads + one DMA, and with auto's probe choosing), cpu-centric, auto, and ring
 * depths 2 and 5; epochs of the GPU modes allocate no host memory; a checkpoint taken in one
 * GPU mode resumes in another with the losses of the uninterrupted run; a GPU memory budget
 * too small for all-gpu fails with a message naming the sizes.
 *
 * Without a GPU only the refusals run (a GPU mode fails naming --mode cpu, auto picks cpu and
 * says why), then the test exits 77.
 */
#include "test.h"

#include "feature/host_gather.h"
#include "train/internal.h"

#include <stdio.h>
#include <unistd.h>

#define EPOCHS 2

typedef struct {
    double loss[EPOCHS], acc[EPOCHS], valid[EPOCHS];
} curve;

static gd__train_config base_config(uint64_t seed) {
    gd__train_config c = GD__TRAIN_CONFIG_INIT;
    c.num_layers = 2;
    c.fanouts[0] = 8;
    c.fanouts[1] = 4;
    c.batch_size = 256;
    c.hidden_dim = 48;
    c.dropout = 0.3;
    c.lr = 0.01;
    c.seed = seed;
    return c;
}

static curve run(const gd_dataset_t *ds, const gd__train_config *cfg, const char *label) {
    gd__trainer *t = NULL;
    curve c;
    T_OK(gd__trainer_create(ds, cfg, &t));
    gd__trainer_info info;
    gd__trainer_get_info(t, &info);
    for (int e = 0; e < EPOCHS; e++) {
        gd__train_epoch_stats s;
        gd_fault_set(GD_FAULT_ALLOC, 0);
        T_OK(gd__trainer_epoch(t, e, &s));
        T_EQ_INT(gd_fault_calls(GD_FAULT_ALLOC), 0); /* an epoch allocates nothing */
        T_OK(gd__trainer_evaluate(t, GD_ARRAY_VALID_IDX, &c.valid[e], NULL));
        c.loss[e] = s.loss;
        c.acc[e] = s.train_acc;
        T_ASSERT(s.batches >= 1 && isfinite(s.loss));
        T_ASSERT(s.train_s > 0 && s.seconds > 0);
        if (info.mode != GD__TRAIN_CPU) T_ASSERT(s.gpu_mem_bytes > 0);
        fprintf(stderr,
                "%-26s epoch %d: loss %.6f train %.4f valid %.4f  %.3f s (sample %.3f gather "
                "%.3f train %.3f wait %.3f)\n",
                label, e + 1, s.loss, s.train_acc, c.valid[e], s.seconds, s.sample_s, s.gather_s,
                s.train_s, s.wait_s);
    }
    gd__trainer_destroy(t);
    return c;
}

/* The plan of a trainer of cfg contains needle (and is printed). */
static void plan_says(const gd_dataset_t *ds, const gd__train_config *cfg, const char *needle) {
    gd__trainer *t = NULL;
    gd__trainer_info info;
    T_OK(gd__trainer_create(ds, cfg, &t));
    gd__trainer_get_info(t, &info);
    fprintf(stderr, "plan: %s\n", info.plan);
    if (!strstr(info.plan, needle)) T_FAIL_("the plan does not say \"%s\"", needle);
    gd__trainer_destroy(t);
}

static void same_curve(const curve *a, const curve *b) {
    for (int e = 0; e < EPOCHS; e++) {
        T_NEAR(a->loss[e], b->loss[e], 2e-3 * a->loss[e] + 1e-5);
        T_NEAR(a->acc[e], b->acc[e], 0.01);
        T_NEAR(a->valid[e], b->valid[e], 0.01);
    }
}

static void refusals_without_gpu(const gd_dataset_t *ds) {
    gd__train_config c = base_config(1);
    gd__trainer *t = NULL;
    for (int m = GD__TRAIN_ALL_GPU; m <= GD__TRAIN_CPU_CENTRIC; m++) {
        c.mode = (gd__train_mode)m;
        T_FAILS(gd__trainer_create(ds, &c, &t), GD_ERR_NO_DEVICE, "--mode cpu");
        T_ASSERT(t == NULL);
    }
    c.mode = GD__TRAIN_AUTO;
    T_OK(gd__trainer_create(ds, &c, &t));
    gd__trainer_info info;
    gd__trainer_get_info(t, &info);
    T_EQ_INT(info.mode, GD__TRAIN_CPU);
    T_ASSERT(strstr(info.plan, "auto picked cpu") != NULL);
    gd__trainer_destroy(t);
}

/* A checkpoint after epoch 1 in zero-copy resumed in all-gpu gives the epoch-2 loss. */
static void resume_across_modes(const gd_dataset_t *ds, uint64_t seed, const curve *ref) {
    char path[128];
    snprintf(path, sizeof path, "/tmp/gd-test-train-modes-%d.gdc", (int)getpid());
    gd__train_config c = base_config(seed);
    c.mode = GD__TRAIN_ZERO_COPY;
    gd__trainer *t = NULL;
    gd__train_epoch_stats s;
    T_OK(gd__trainer_create(ds, &c, &t));
    T_OK(gd__trainer_epoch(t, 0, &s));
    gd__checkpoint_meta m;
    gd__trainer_checkpoint_meta(t, &m);
    m.epochs_done = 1;
    T_OK(gd__trainer_save(t, path, &m, NULL, 1));
    gd__trainer_destroy(t);
    c.mode = GD__TRAIN_ALL_GPU;
    T_OK(gd__trainer_create(ds, &c, &t));
    gd__checkpoint_meta saved;
    T_OK(gd__trainer_resume(t, path, &saved));
    T_EQ_INT(saved.epochs_done, 1);
    T_OK(gd__trainer_epoch(t, saved.epochs_done, &s));
    fprintf(stderr, "resumed zero-copy -> all-gpu: epoch 2 loss %.6f (uninterrupted %.6f)\n",
            s.loss, ref->loss[1]);
    T_NEAR(s.loss, ref->loss[1], 2e-3 * ref->loss[1] + 1e-5);
    gd__trainer_destroy(t);
    unlink(path);
}

/* The SMs the zero-copy trainer of cfg gives its gather, read from its plan. */
static int gather_sms_of(const gd_dataset_t *ds, const gd__train_config *cfg) {
    gd__trainer *t = NULL;
    T_OK(gd__trainer_create(ds, cfg, &t));
    gd__trainer_info info;
    gd__trainer_get_info(t, &info);
    const char *at = strstr(info.plan, "gather on ");
    int sms = -1;
    T_ASSERT(at && sscanf(at, "gather on %d SMs", &sms) == 1);
    gd__trainer_destroy(t);
    return sms;
}

/*
 * Regression, "GD_GATHER_SMS read with getenv": with rows left in host memory the zero-copy
 * trainer gives the gather 10 % of the SMs unless the user chose a budget, and a budget set with
 * gd_param_set was not seen. Now "0" (every SM) set that way is obeyed.
 */
static void regress_gather_sms_param_set_ignored(const gd_dataset_t *ds, gd__train_config c) {
    gd_device_info di;
    T_OK(gd_device_info_get(c.device, &di));
    unsetenv("GD_GATHER_SMS");
    c.mode = GD__TRAIN_ZERO_COPY;
    c.gpu_cache_bytes = gd_dataset_num_nodes(ds) * gd_dataset_feature_dim(ds) * 4 / 3;
    c.gather_sms = NULL;
    const int fallback = gather_sms_of(ds, &c);
    T_ASSERT(fallback < di.multiprocessors);
    T_OK(gd_param_set("GD_GATHER_SMS", "0"));
    T_EQ_INT(gather_sms_of(ds, &c), di.multiprocessors);
    T_OK(gd_param_set("GD_GATHER_SMS", NULL));
    T_EQ_INT(gather_sms_of(ds, &c), fallback);
}

/* The start-up's progress lines (issue 19, item 1) of one trainer's build. */
typedef struct {
    int lines;
    uint64_t last, total;
    int bad;
} startup_seen;

static int on_startup(void *user, const char *stage, uint64_t done, uint64_t total) {
    startup_seen *s = user;
    double phase = -1, left = -1;
    /* "start-up: <what>: about X s (i of n; about Y s to go)", phases numbered in order */
    const char *about = strstr(stage, ": about "), *to_go = strstr(stage, "; about ");
    const int parsed = about && to_go && sscanf(about, ": about %lf s", &phase) == 1 &&
                       sscanf(to_go, "; about %lf s to go)", &left) == 1;
    if (strncmp(stage, "start-up: ", 10) != 0 || !parsed || phase < 0 || left < phase - 0.05 ||
        done != s->last + 1 || (s->total && total != s->total) || done > total)
        s->bad++;
    fprintf(stderr, "  %s\n", stage);
    s->lines++;
    s->last = done;
    s->total = total;
    return 0;
}

static void startup_progress_lines(const gd_dataset_t *ds, gd__train_config c) {
    const gd__train_mode modes[2] = {GD__TRAIN_ZERO_COPY, GD__TRAIN_ALL_GPU};
    for (int m = 0; m < 2; m++) {
        startup_seen seen = {0, 0, 0, 0};
        c.mode = modes[m];
        c.gpu_cache_bytes = gd_dataset_num_nodes(ds) * gd_dataset_feature_dim(ds) * 4 / 3;
        c.graph_cache_bytes = gd_dataset_num_edges(ds);
        c.startup_progress = on_startup;
        c.startup_progress_user = &seen;
        gd__trainer *t = NULL;
        T_OK(gd__trainer_create(ds, &c, &t));
        gd__trainer_destroy(t);
        /* zero-copy: graph, out-degrees, list cache, features, feature cache; all-gpu: graph,
         * the table's copy. */
        T_EQ_INT(seen.bad, 0);
        T_ASSERT(seen.lines >= (m == 0 ? 4 : 2));
        T_EQ_U64(seen.last, seen.total);
    }
}

int main(void) {
    const uint64_t seed = t_seed();
    gd_generate_options go = GD_GENERATE_OPTIONS_INIT;
    go.preset = "tiny";
    go.seed = seed % 1000;
    gd_dataset_t *ds;
    T_OK(gd_generate(&go, &ds));
    if (gd_device_count() == 0) {
        refusals_without_gpu(ds);
        gd_dataset_close(ds);
        t_check_no_leaks();
        fprintf(stderr, "skip: no GPU (the refusals passed)\n");
        return GD_TEST_SKIP;
    }

    gd__train_config c = base_config(seed);
    startup_progress_lines(ds, c);
    const curve ref = run(ds, &c, "cpu");
    T_ASSERT(ref.loss[1] < ref.loss[0]);

    c.mode = GD__TRAIN_ALL_GPU;
    curve got = run(ds, &c, "all-gpu");
    same_curve(&ref, &got);

    c.mode = GD__TRAIN_ZERO_COPY;
    c.gpu_cache_bytes = 0;
    c.graph_cache_bytes = 0;
    got = run(ds, &c, "zero-copy, no cache");
    same_curve(&ref, &got);

    /* A feature cache of a third of the table and a neighbour-list cache: both tiers read. */
    const int64_t table = gd_dataset_num_nodes(ds) * gd_dataset_feature_dim(ds) * 4;
    c.gpu_cache_bytes = table / 3;
    c.graph_cache_bytes = gd_dataset_num_edges(ds);
    c.gather_sms = "8";
    got = run(ds, &c, "zero-copy, caches, 8 SMs");
    same_curve(&ref, &got);
    /* The rows outside the cache by CPU gather + DMA (issue 16), then as auto's probe picks. */
    c.host_gather = GD__HOST_GATHER_CPU;
    got = run(ds, &c, "zero-copy, host rows by cpu");
    same_curve(&ref, &got);
    plan_says(ds, &c, "host rows by CPU gather + DMA (--host-gather cpu)");
    /*
     * auto: its trial in the epoch, 6 minibatches a way (GD_HOST_TRIAL), changes the way
     * mid-epoch eight times and then keeps one; the losses stay mode cpu's, and the plan says
     * which it kept once it has.
     */
    c.host_gather = GD__HOST_GATHER_AUTO;
    T_OK(gd_param_set("GD_HOST_TRIAL", "6"));
    got = run(ds, &c, "zero-copy, host gather auto");
    same_curve(&ref, &got);
    plan_says(ds, &c, "host rows by auto (a trial in the epoch, 6 minibatches a way)");
    {
        gd__trainer *t = NULL;
        gd__trainer_info info;
        T_OK(gd__trainer_create(ds, &c, &t));
        int kept = 0;
        for (int e = 0; e < 8 && !kept; e++) {
            gd__train_epoch_stats s;
            T_OK(gd__trainer_epoch(t, e, &s));
            gd__trainer_get_info(t, &info);
            kept = strstr(info.plan, "; auto kept ") != NULL;
        }
        fprintf(stderr, "plan after auto's trial: %s\n", info.plan);
        T_ASSERT(kept);
        gd__trainer_destroy(t);
    }
    T_OK(gd_param_set("GD_HOST_TRIAL", "5"));
    {
        gd__trainer *t = NULL;
        T_FAILS(gd__trainer_create(ds, &c, &t), GD_ERR_INVALID_ARG, "GD_HOST_TRIAL=5");
    }
    T_OK(gd_param_set("GD_HOST_TRIAL", NULL));
    /* Split between the CPU and zero-copy loads at once: a fraction given, then probed. */
    c.host_gather = GD__HOST_GATHER_SPLIT;
    c.host_split = 0.4;
    got = run(ds, &c, "zero-copy, host rows split 0.4");
    same_curve(&ref, &got);
    plan_says(ds, &c, "host rows split, 0.40 by CPU gather + DMA beside zero-copy loads "
                      "(--host-gather split=F)");
    c.host_split = -1;
    got = run(ds, &c, "zero-copy, host rows split, probed");
    same_curve(&ref, &got);
    plan_says(ds, &c, "(cpu / (cpu + zero-copy); probe GB/s");
    c.gpu_cache_bytes = 0; /* no cache: every row comes from host memory */
    c.host_gather = GD__HOST_GATHER_CPU;
    got = run(ds, &c, "zero-copy, no cache, cpu rows");
    same_curve(&ref, &got);
    c.host_gather = GD__HOST_GATHER_ZEROCOPY;
    c.gpu_cache_bytes = -1;
    c.graph_cache_bytes = -1;
    c.gather_sms = NULL;

    c.mode = GD__TRAIN_CPU_CENTRIC;
    got = run(ds, &c, "cpu-centric");
    same_curve(&ref, &got);

    c.mode = GD__TRAIN_AUTO;
    got = run(ds, &c, "auto");
    same_curve(&ref, &got);

    c.mode = GD__TRAIN_ZERO_COPY;
    c.depth = 2;
    got = run(ds, &c, "zero-copy, depth 2");
    same_curve(&ref, &got);
    c.mode = GD__TRAIN_CPU_CENTRIC;
    c.depth = 5;
    got = run(ds, &c, "cpu-centric, depth 5");
    same_curve(&ref, &got);
    c.depth = 3;

    resume_across_modes(ds, seed, &ref);
    regress_gather_sms_param_set_ignored(ds, base_config(seed));

    /* A budget too small for the data: all-gpu refuses, naming the sizes and zero-copy. */
    c.mode = GD__TRAIN_ALL_GPU;
    c.gpu_mem_budget = 1 << 20;
    gd__trainer *t = NULL;
    T_FAILS(gd__trainer_create(ds, &c, &t), GD_ERR_NO_MEMORY, "zero-copy");
    T_ASSERT(t == NULL);
    /* auto under the same budget does not pick all-gpu. */
    c.mode = GD__TRAIN_AUTO;
    c.gpu_mem_budget = table / 2;
    gd_status st = gd__trainer_create(ds, &c, &t);
    if (st == GD_OK) {
        gd__trainer_info info;
        gd__trainer_get_info(t, &info);
        fprintf(stderr, "auto under a %lld-byte budget: %s\n", (long long)c.gpu_mem_budget,
                info.plan);
        T_ASSERT(info.mode != GD__TRAIN_ALL_GPU);
        gd__trainer_destroy(t);
    } else {
        /* The fixed buffers alone may exceed so small a budget: then the message says so. */
        T_EQ_INT(st, GD_ERR_NO_MEMORY);
        fprintf(stderr, "auto under a %lld-byte budget refused: %s\n", (long long)c.gpu_mem_budget,
                gd_last_error());
    }

    gd_dataset_close(ds);
    t_check_no_leaks();
    fprintf(stderr, "train modes: ok\n");
    return 0;
}
