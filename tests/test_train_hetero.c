/*
 * Training a relational model (R-SAGE, R-GCN, R-GAT) on heterogeneous datasets through the
 * public trainer: it learns (the valid accuracy far above chance, and above the MLP baseline's
 * on mag-tiny, where only papers have features and the graph carries the rest), runs are
 * reproducible, a saved model loads back to the same accuracy (and an R-GAT one only into a
 * trainer of its heads, an R-GCN one only into an R-GCN trainer), a run resumed from its
 * checkpoint trains as the uninterrupted one, and the combinations that are not built are
 * refused with messages that say what to do. On a GPU, every GPU mode (cpu-centric, all-gpu,
 * zero-copy) trains as cpu does up to float tolerance: R-SAGE on float32, float16 and bfloat16
 * tables, R-GCN and R-GAT on float32; auto picks all-gpu. So does zero-copy with its per-type
 * GPU caches holding part of every featured type's rows (mag-tiny, its bfloat16 version and
 * igbh-tiny, whose four types all have features), none (--gpu-cache 0), and with a GPU memory
 * budget that leaves the typed graph in pinned host memory (sampled over UVA), each plan saying
 * so. Exact inference on the GPU (all-gpu, zero-copy) equals sampled inference with every
 * neighbour there, for R-SAGE, R-GCN and R-GAT. Without a GPU those parts are skipped, the GPU
 * modes are refused naming --mode cpu and auto picks cpu.
 */
#include "test.h"

#include <graphdirect.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EPOCHS 3

typedef struct {
    int calls;
    double loss[8], valid[8];
} log_t;

static int on_epoch(void *user, const gd_epoch_stats *s) {
    log_t *g = user;
    if (g->calls < 8) {
        g->loss[g->calls] = s->loss;
        g->valid[g->calls] = s->valid_acc;
    }
    g->calls++;
    return 0;
}

static gd_dataset_t *make(const char *preset, uint64_t seed, gd_dtype dtype) {
    gd_generate_options go = GD_GENERATE_OPTIONS_INIT;
    go.preset = preset;
    go.seed = seed;
    go.feature_dtype = dtype;
    gd_dataset_t *ds = NULL;
    T_OK(gd_generate(&go, &ds));
    return ds;
}

static gd_train_options options(uint64_t seed, int mlp) {
    gd_train_options o = GD_TRAIN_OPTIONS_INIT;
    o.mode = "cpu";
    o.model = "rsage";
    o.batch_size = 256;
    o.hidden = 32;
    o.fanouts[0] = 6;
    o.fanouts[1] = 3;
    o.lr = 0.01;
    o.seed = seed;
    o.mlp = mlp;
    return o;
}

/* Train EPOCHS epochs (from a checkpoint dir when given); the log and the test accuracy. */
static double run(const gd_dataset_t *ds, const gd_train_options *o, int64_t epochs,
                  const char *ckdir, int resume, log_t *g, const char *save) {
    gd_trainer_t *t = NULL;
    T_OK(gd_trainer_create(ds, o, &t));
    gd_fit_options f = GD_FIT_OPTIONS_INIT;
    gd_fit_result r = GD_FIT_RESULT_INIT;
    f.epochs = epochs;
    f.on_epoch = on_epoch;
    f.on_epoch_user = g;
    f.checkpoint_dir = ckdir;
    f.resume = resume;
    f.keep_best = 0;
    T_OK(gd_trainer_fit(t, &f, &r));
    /* The MLP baseline's sampled inference is its exact one; R-SAGE, R-GAT have layer-wise ones. */
    if (o->mlp)
        T_ASSERT(r.test_exact == r.test_acc);
    else
        T_ASSERT(!isnan(r.test_exact));
    if (save) T_OK(gd_trainer_save(t, save));
    gd_trainer_info info = GD_TRAINER_INFO_INIT;
    T_OK(gd_trainer_get_info(t, &info));
    /* The MLP baseline is R-SAGE's whatever the model (R-GAT has no root term). */
    T_EQ_STR(info.model, o->mlp ? "rsage" : o->model);
    if (strcmp(o->mode, "auto") != 0) T_EQ_STR(info.mode, o->mode);
    gd_trainer_destroy(t);
    return r.test_acc;
}

static const char *const gpu_modes[3] = {"cpu-centric", "all-gpu", "zero-copy"};

/*
 * A relational model trains on mag-tiny (o, EPOCHS epochs): it learns, beyond the MLP
 * baseline's test accuracy test_mlp (the papers' own features; 32 classes: chance 0.03); the
 * same seed trains the same model (equal losses and accuracies, bit for bit); and the model it
 * saves to path loads back into a new trainer with the same test accuracy. Its log goes to *l;
 * returns its test accuracy.
 */
static double learns(const gd_dataset_t *ds, const gd_train_options *o, const char *what,
                     const char *path, double test_mlp, log_t *l) {
    const double test = run(ds, o, EPOCHS, NULL, 0, l, path);
    fprintf(stderr, "mag-tiny: %s loss %.4f -> %.4f, valid %.4f, test %.4f; MLP test %.4f\n",
            what, l->loss[0], l->loss[EPOCHS - 1], l->valid[EPOCHS - 1], test, test_mlp);
    T_EQ_INT(l->calls, EPOCHS);
    T_ASSERT(l->loss[EPOCHS - 1] < l->loss[0]);
    T_ASSERT(l->valid[EPOCHS - 1] > 0.6);
    T_ASSERT(test > test_mlp + 0.03);
    log_t again = {0};
    run(ds, o, EPOCHS, NULL, 0, &again, NULL);
    for (int e = 0; e < EPOCHS; e++)
        T_ASSERT(l->loss[e] == again.loss[e] && l->valid[e] == again.valid[e]);
    gd_trainer_t *t = NULL;
    double acc = 0;
    T_OK(gd_trainer_create(ds, o, &t));
    T_OK(gd_trainer_load(t, path));
    T_OK(gd_trainer_evaluate(t, GD_ARRAY_TEST_IDX, 0, &acc, NULL));
    T_NEAR(acc, test, 1e-12);
    gd_trainer_destroy(t);
    return test;
}

/*
 * The GPU parts to run: GD_TEST_TRAIN_HETERO_GPU lists some of rsage, half, rgat, rgcn, exact,
 * caches, igbh (comma-separated; unset or empty: all). A sanitizer runs each part in its own
 * process, under its time limit (the whole test under racecheck takes more than 190 s).
 */
static int gpu_part(const char *name) { return t_env_lists("GD_TEST_TRAIN_HETERO_GPU", name); }

/*
 * A GPU mode trains as cpu did (its log and test accuracy given) up to float tolerance: the
 * same minibatches (the CUDA typed sampler's equal the CPU's, the gathers are exact), the GPU's
 * GEMMs summing in another order. The first epoch's loss within 2e-3 relative; later epochs
 * within `later` relative, where training amplifies the regrouping (igbh-tiny, below), and the
 * accuracies within `acc`.
 */
static void same_as_cpu_tol(const gd_dataset_t *ds, const gd_train_options *o, const log_t *cpu,
                            double cpu_test, const char *mode, const char *what, int epochs,
                            double later, double acc) {
    gd_train_options g = *o;
    g.mode = mode;
    log_t l = {0};
    const double test = run(ds, &g, epochs, NULL, 0, &l, NULL);
    for (int e = 0; e < epochs; e++) {
        fprintf(stderr, "%s, %s epoch %d: loss %.6f (cpu %.6f) valid %.4f (%.4f)\n", what, mode,
                e + 1, l.loss[e], cpu->loss[e], l.valid[e], cpu->valid[e]);
        T_NEAR(l.loss[e], cpu->loss[e], (e ? later : 2e-3) * cpu->loss[e] + 1e-5);
        T_NEAR(l.valid[e], cpu->valid[e], acc);
    }
    T_NEAR(test, cpu_test, acc);
}

static void same_as_cpu_n(const gd_dataset_t *ds, const gd_train_options *o, const log_t *cpu,
                          double cpu_test, const char *mode, const char *what, int epochs) {
    same_as_cpu_tol(ds, o, cpu, cpu_test, mode, what, epochs, 2e-3, 0.01);
}

static void same_as_cpu(const gd_dataset_t *ds, const gd_train_options *o, const log_t *cpu,
                        double cpu_test, const char *mode, const char *what) {
    same_as_cpu_n(ds, o, cpu, cpu_test, mode, what, EPOCHS);
}

/* A third of every featured type's table plus the types' location maps (8 bytes a node). */
static int64_t third_of_tables(const gd_dataset_t *ds) {
    int64_t bytes = 0;
    for (int t = 0; t < gd_dataset_num_node_types(ds); t++) {
        gd_node_type_info ti = GD_NODE_TYPE_INFO_INIT;
        T_OK(gd_dataset_node_type(ds, t, &ti));
        if (ti.feature_dim == 0) continue;
        gd_array_view f;
        T_OK(gd_dataset_type_features(ds, t, &f));
        bytes += f.shape[0] * f.shape[1] * (int64_t)gd_dtype_size(f.dtype) / 3 + 8 * f.shape[0];
    }
    return bytes;
}

/* The plan of zero-copy under o: it names every piece of needles (NULL-terminated). */
static void zero_copy_plan_says(const gd_dataset_t *ds, const gd_train_options *o,
                                const char *const *needles) {
    gd_train_options z = *o;
    z.mode = "zero-copy";
    char plan[4096];
    T_OK(gd_trainer_plan(ds, &z, plan, sizeof plan));
    fprintf(stderr, "%s", plan);
    for (int i = 0; needles[i]; i++) {
        if (!strstr(plan, needles[i])) T_FAIL_("the plan does not say '%s'", needles[i]);
    }
    gd_trainer_t *t = NULL;
    gd_trainer_info info = GD_TRAINER_INFO_INIT;
    T_OK(gd_trainer_create(ds, &z, &t));
    T_OK(gd_trainer_get_info(t, &info));
    T_ASSERT(strstr(info.plan, "cached rows:"));
    gd_trainer_destroy(t);
}

/*
 * zero-copy's per-type caches and the graph's place against cpu's training (its log, test and
 * epochs given): caches of a third of every table (the graph in GPU memory), no caches, and
 * the same caches under a budget (the 768 MiB reserve plus twice the caches: pick's data half
 * is the caches alone) that leaves every array of the graph in pinned host memory.
 */
static void zero_copy_caches(const gd_dataset_t *ds, const gd_train_options *o, const log_t *cpu,
                             double cpu_test, int epochs, const char *what, double later,
                             double acc) {
    char name[128];
    gd_train_options part = *o, none = *o, pinned = *o;
    part.gpu_cache_bytes = third_of_tables(ds);
    none.gpu_cache_bytes = 0;
    pinned.gpu_cache_bytes = part.gpu_cache_bytes;
    pinned.gpu_mem_budget = (INT64_C(768) << 20) + 2 * part.gpu_cache_bytes;
    static const char *const part_says[] = {"feature cache: ", "the graph in GPU memory",
                                            "cached rows: ", NULL};
    static const char *const none_says[] = {"cached rows: none", NULL};
    static const char *const pinned_says[] = {"feature cache: ",
                                              "the graph in pinned host memory", NULL};
    zero_copy_plan_says(ds, &part, part_says);
    zero_copy_plan_says(ds, &none, none_says);
    zero_copy_plan_says(ds, &pinned, pinned_says);
    snprintf(name, sizeof name, "%s, caches of a third", what);
    same_as_cpu_tol(ds, &part, cpu, cpu_test, "zero-copy", name, epochs, later, acc);
    snprintf(name, sizeof name, "%s, no caches", what);
    same_as_cpu_tol(ds, &none, cpu, cpu_test, "zero-copy", name, epochs, later, acc);
    snprintf(name, sizeof name, "%s, caches, graph in pinned memory", what);
    same_as_cpu_tol(ds, &pinned, cpu, cpu_test, "zero-copy", name, epochs, later, acc);
}

/*
 * Exact (layer-wise) inference against sampled inference with every neighbour (fanout -1 for
 * every layer and relation) on the three splits: the same function of the same model (loaded
 * from path, or freshly initialised from o's seed without one), computed two ways. The CPU GEMM
 * may sum a row in another order for another number of rows, so at most a tie may flip.
 */
static void exact_is_sampled(const gd_dataset_t *ds, const gd_train_options *o, const char *path,
                             const char *what) {
    gd_train_options all = *o;
    for (int l = 0; l < all.num_layers && l < GD_SAMPLER_MAX_LAYERS; l++) all.fanouts[l] = -1;
    all.batch_size = 64;
    gd_trainer_t *t = NULL;
    T_OK(gd_trainer_create(ds, &all, &t));
    if (path) T_OK(gd_trainer_load(t, path));
    for (int s = GD_ARRAY_TRAIN_IDX; s <= GD_ARRAY_TEST_IDX; s++) {
        double sampled = 0, exact = 0;
        int64_t n = 0, n2 = 0;
        T_OK(gd_trainer_evaluate(t, (gd_array_id)s, 0, &sampled, &n));
        T_OK(gd_trainer_evaluate(t, (gd_array_id)s, 1, &exact, &n2));
        fprintf(stderr,
                "%s, %d layer(s), %d head(s), split %d: sampled with every neighbour %.6f, exact "
                "%.6f (%lld nodes)\n",
                what, all.num_layers, all.heads > 0 ? all.heads : 1, s, sampled, exact,
                (long long)n);
        T_EQ_INT(n, n2);
        T_NEAR(exact, sampled, 1.0 / (double)n + 1e-12);
    }
    gd_trainer_destroy(t);
}

int main(void) {
    const uint64_t seed = t_seed() % 100000;
    char tmp[4096], ck[4200], ck2[4200], model[4200];
    t_tmpdir(tmp, sizeof tmp);
    gd_dataset_t *mag = make("mag-tiny", seed, GD_DTYPE_FLOAT32);
    const gd_train_options o = options(seed, 0), mlp = options(seed, 1);

    /* R-SAGE learns, reproducibly, and its saved model loads back. */
    log_t a = {0}, m = {0};
    snprintf(model, sizeof model, "%s/model.gdc", tmp);
    const double test_mlp = run(mag, &mlp, EPOCHS, NULL, 0, &m, NULL);
    const double test = learns(mag, &o, "R-SAGE", model, test_mlp, &a);
    gd_trainer_t *t = NULL;

    /* Exact inference of the trained model is its sampled inference with every neighbour. */
    exact_is_sampled(mag, &o, model, "R-SAGE");

    /* A run stopped after epoch 1 and resumed trains as the uninterrupted one. */
    log_t r1 = {0}, r2 = {0};
    snprintf(ck, sizeof ck, "%s/ck", tmp);
    run(mag, &o, 1, ck, 0, &r1, NULL);
    run(mag, &o, EPOCHS, ck, 1, &r2, NULL);
    T_EQ_INT(r2.calls, EPOCHS - 1);
    for (int e = 1; e < EPOCHS; e++) T_NEAR(r2.loss[e - 1], a.loss[e], 1e-6 * a.loss[e]);
    /* ... and a checkpoint of another model is refused. */
    snprintf(ck2, sizeof ck2, "%s/ck2", tmp);
    gd_train_options wide = o;
    wide.hidden = 48;
    log_t w = {0};
    run(mag, &wide, 1, ck2, 0, &w, NULL);
    T_OK(gd_trainer_create(mag, &o, &t));
    T_FAILS(gd_trainer_resume(t, ck2), GD_ERR_INVALID_ARG, "hidden_dim 48");
    gd_trainer_destroy(t);

    /*
     * R-GAT (MLPerf's model): it learns, above the same baseline, reproducibly; a saved model
     * loads back to its accuracy, into a trainer of its heads only.
     */
    gd_train_options ro = o;
    ro.model = "rgat";
    ro.heads = 2;
    ro.hidden = 16;
    ro.attn_dropout = 0.1;
    log_t ga = {0};
    char rmodel[4200];
    snprintf(rmodel, sizeof rmodel, "%s/rgat.gdc", tmp);
    const double test_rgat = learns(mag, &ro, "R-GAT", rmodel, test_mlp, &ga);
    /*
     * R-GAT's exact inference is its sampled one with every neighbour: the trained model (2
     * heads, 2 layers), a fresh one, and ones trained an epoch of 1 head and 2 layers, 1 head
     * and 1 layer, 3 heads and 1 layer (a last layer that averages its heads over the features).
     */
    exact_is_sampled(mag, &ro, rmodel, "R-GAT");
    exact_is_sampled(mag, &ro, NULL, "R-GAT (fresh)");
    static const int shapes[3][2] = {{1, 2}, {1, 1}, {3, 1}};
    char smodel[4200];
    snprintf(smodel, sizeof smodel, "%s/rgat-shape.gdc", tmp);
    for (int i = 0; i < 3; i++) {
        gd_train_options shape = ro;
        shape.heads = shapes[i][0];
        shape.num_layers = shapes[i][1];
        log_t once = {0};
        run(mag, &shape, 1, NULL, 0, &once, smodel);
        exact_is_sampled(mag, &shape, smodel, "R-GAT");
    }
    gd_train_options ro4 = ro;
    ro4.heads = 4;
    T_OK(gd_trainer_create(mag, &ro4, &t));
    T_FAILS(gd_trainer_load(t, rmodel), GD_ERR_INVALID_ARG, "2 attention heads");
    gd_trainer_destroy(t);
    gd_train_options rmlp = ro;
    rmlp.mlp = 1;
    log_t gm = {0};
    run(mag, &rmlp, 1, NULL, 0, &gm, NULL);

    /*
     * R-GCN (a root and bias per node type): it learns, above the same baseline, reproducibly;
     * a saved model loads back to its accuracy; its exact inference is its sampled one with
     * every neighbour (trained and fresh); R-SAGE's model and checkpoint are refused by it.
     */
    gd_train_options go = o;
    go.model = "rgcn";
    log_t ca = {0};
    char cmodel[4200], ck3[4200];
    snprintf(cmodel, sizeof cmodel, "%s/rgcn.gdc", tmp);
    const double test_rgcn = learns(mag, &go, "R-GCN", cmodel, test_mlp, &ca);
    /* Another model than R-SAGE's: a different loss from the first epoch on. */
    T_ASSERT(ca.loss[0] != a.loss[0]);
    T_OK(gd_trainer_create(mag, &go, &t));
    T_FAILS(gd_trainer_load(t, model), GD_ERR_INVALID_ARG, "holds a rsage model");
    T_FAILS(gd_trainer_resume(t, ck), GD_ERR_INVALID_ARG, "'rsage' model");
    gd_trainer_destroy(t);
    T_OK(gd_trainer_create(mag, &o, &t));
    T_FAILS(gd_trainer_load(t, cmodel), GD_ERR_INVALID_ARG, "holds a rgcn model");
    gd_trainer_destroy(t);
    exact_is_sampled(mag, &go, cmodel, "R-GCN");
    exact_is_sampled(mag, &go, NULL, "R-GCN (fresh)");
    /* A run resumed from its epoch-1 checkpoint trains as the uninterrupted one. */
    log_t c1 = {0}, c2 = {0};
    snprintf(ck3, sizeof ck3, "%s/ck3", tmp);
    run(mag, &go, 1, ck3, 0, &c1, NULL);
    run(mag, &go, EPOCHS, ck3, 1, &c2, NULL);
    for (int e = 1; e < EPOCHS; e++) T_NEAR(c2.loss[e - 1], ca.loss[e], 1e-6 * ca.loss[e]);

    /* IGBH's shape: every type has 1024-dim features. */
    gd_dataset_t *igbh = make("igbh-tiny", seed, GD_DTYPE_FLOAT32);
    log_t g = {0};
    const double test_igbh = run(igbh, &o, 2, NULL, 0, &g, NULL);
    fprintf(stderr, "igbh-tiny: loss %.4f -> %.4f, test %.4f\n", g.loss[0], g.loss[1], test_igbh);
    T_ASSERT(g.loss[1] < g.loss[0] && test_igbh > 0.3);

    /*
     * Fanouts per (hop, edge type): every edge type at 0 on both hops samples what the MLP
     * baseline samples, so it trains the same model, loss for loss.
     */
    gd_train_options none = o;
    none.relation_fanouts = "paper:cites:paper=0,writes=0,rev_writes=0,affiliated_with=0,"
                            "rev_affiliated_with=0,has_topic=0,rev_has_topic=0;cites=0,writes=0,"
                            "rev_writes=0,affiliated_with=0,rev_affiliated_with=0,has_topic=0,"
                            "rev_has_topic=0";
    log_t z = {0};
    run(mag, &none, EPOCHS, NULL, 0, &z, NULL);
    for (int e = 0; e < EPOCHS; e++) T_ASSERT(z.loss[e] == m.loss[e]);
    /* One relation cut at the first hop changes the training. */
    gd_train_options cut = o;
    cut.relation_fanouts = "writes=0";
    log_t c = {0};
    run(mag, &cut, 1, NULL, 0, &c, NULL);
    T_ASSERT(c.loss[0] != a.loss[0]);
    static const char *const bad_specs[][2] = {
        {"venue=3", "no edge type 'venue'"},
        {"cites=x", "is not -1"},
        {"cites", "is not EDGE=COUNT"},
        {"cites=1;cites=1;cites=1", "more hops than the 2 layers"},
        {"cites=-2", "is not -1"},
    };
    for (int i = 0; i < 5; i++) {
        gd_train_options b2 = o;
        b2.relation_fanouts = bad_specs[i][0];
        T_FAILS(gd_trainer_create(mag, &b2, &t), GD_ERR_INVALID_ARG, bad_specs[i][1]);
    }

    /*
     * The GPU modes against cpu: R-SAGE on mag-tiny in every one, on its float16 and bfloat16
     * versions in the GPU-centric ones (the gather kernel widens in registers), R-GAT in the
     * GPU-centric ones; auto picks all-gpu for so small a dataset. Skipped without a GPU, where
     * each GPU mode is refused with the way out and auto picks cpu.
     */
    gd_trainer_info info = GD_TRAINER_INFO_INIT;
    gd_train_options au = o;
    au.mode = "auto";
    if (gd_device_count() > 0) {
        for (int i = 0; i < 3 && gpu_part("rsage"); i++)
            same_as_cpu(mag, &o, &a, test, gpu_modes[i], "R-SAGE");
        static const gd_dtype halves[2] = {GD_DTYPE_FLOAT16, GD_DTYPE_BFLOAT16};
        for (int d = 0; d < 2 && gpu_part("half"); d++) {
            gd_dataset_t *half = make("mag-tiny", seed, halves[d]);
            log_t hl = {0};
            const double test_half = run(half, &o, EPOCHS, NULL, 0, &hl, NULL);
            for (int i = 1; i < 3; i++)
                same_as_cpu(half, &o, &hl, test_half, gpu_modes[i], gd_dtype_name(halves[d]));
            if (halves[d] == GD_DTYPE_BFLOAT16)
                zero_copy_caches(half, &o, &hl, test_half, EPOCHS, "R-SAGE, bfloat16", 2e-3, 0.01);
            gd_dataset_close(half);
        }
        /*
         * R-GAT's softmax over each relation's edges amplifies the GEMMs' regrouping more than
         * R-SAGE's means: in one of 8 concurrent copies on the H100 (seeds differ per process),
         * epoch 2's loss moved by 3.1e-3 relative (all-gpu), epoch 1's by 1.6e-4; in 2 of 16
         * copies in s9, epoch 3's valid accuracy by 0.012 and 0.014 (its loss by 1.4e-3 and
         * 3.9e-3). Its first epoch's loss is held to 2e-3, later ones to 1e-2, the accuracies
         * to 0.02, as igbh-tiny's below.
         */
        for (int i = 1; i < 3 && gpu_part("rgat"); i++)
            same_as_cpu_tol(mag, &ro, &ga, test_rgat, gpu_modes[i], "R-GAT", EPOCHS, 1e-2, 0.02);
        /* R-GCN runs R-SAGE's ops: every mode, and exact inference on the GPU. */
        for (int i = 0; i < 3 && gpu_part("rgcn"); i++) {
            same_as_cpu(mag, &go, &ca, test_rgcn, gpu_modes[i], "R-GCN");
            gd_train_options gm2 = go;
            gm2.mode = gpu_modes[i];
            char what[64];
            snprintf(what, sizeof what, "R-GCN, %s", gpu_modes[i]);
            if (i > 0) exact_is_sampled(mag, &gm2, cmodel, what);
        }
        /*
         * Exact inference on the GPU (the model stays there) is sampled inference with every
         * neighbour there too, in all-gpu and in zero-copy, whose registered tables it reads.
         */
        for (int i = 1; i < 3 && gpu_part("exact"); i++) {
            gd_train_options so = o, sro = ro;
            so.mode = sro.mode = gpu_modes[i];
            char what[64];
            snprintf(what, sizeof what, "R-SAGE, %s", gpu_modes[i]);
            exact_is_sampled(mag, &so, model, what);
            snprintf(what, sizeof what, "R-GAT, %s", gpu_modes[i]);
            exact_is_sampled(mag, &sro, rmodel, what);
        }
        if (gpu_part("caches")) {
            zero_copy_caches(mag, &o, &a, test, EPOCHS, "R-SAGE", 2e-3, 0.01);
            zero_copy_caches(mag, &ro, &ga, test_rgat, EPOCHS, "R-GAT", 1e-2, 0.01);
        }
        /*
         * igbh-tiny's 1024-dim features start its loss at 27: on the H100 the GEMMs' regrouping
         * moved epoch 1's loss by 5e-6 relative and epoch 2's by 3.4e-3 (validation by 0.007);
         * in one of 16 concurrent copies in s9, epoch 1's by 8.4e-4 and epoch 2's by 2.5e-2
         * (26.80 -> 13.66 against 26.82 -> 14.00; validation by 0.001). Its first epoch is held
         * to 2e-3 like the others, the second to 5e-2 and accuracies to 0.02; a row gathered
         * from the wrong tier moves the first epoch by far more.
         */
        if (gpu_part("igbh")) zero_copy_caches(igbh, &o, &g, test_igbh, 2, "igbh-tiny", 5e-2, 0.02);
        T_OK(gd_trainer_create(mag, &au, &t));
        T_OK(gd_trainer_get_info(t, &info));
        T_EQ_STR(info.mode, "all-gpu");
        T_ASSERT(strstr(info.plan, "auto picked all-gpu"));
        gd_trainer_destroy(t);
    } else {
        fprintf(stderr, "no GPU: the GPU modes' cases are skipped\n");
        for (int i = 0; i < 3; i++) {
            gd_train_options g2 = o;
            g2.mode = gpu_modes[i];
            T_FAILS(gd_trainer_create(mag, &g2, &t), GD_ERR_NO_DEVICE, "use --mode cpu");
            g2.model = "rgat";
            T_FAILS(gd_trainer_create(mag, &g2, &t), GD_ERR_NO_DEVICE, "use --mode cpu");
        }
        T_OK(gd_trainer_create(mag, &au, &t));
        T_OK(gd_trainer_get_info(t, &info));
        T_EQ_STR(info.mode, "cpu");
        T_ASSERT(strstr(info.plan, "auto picked cpu"));
        gd_trainer_destroy(t);
    }

    /* What is not built, or not meant, is refused with the way out. */
    gd_train_options bad = o;
    bad.model = "sage";
    T_FAILS(gd_trainer_create(mag, &bad, &t), GD_ERR_INVALID_ARG,
            "--model rsage, --model rgcn or --model rgat");
    bad.model = "gat";
    T_FAILS(gd_trainer_create(mag, &bad, &t), GD_ERR_INVALID_ARG, "--model rgat");
    gd_dataset_t *homo = t_tiny_dataset(seed);
    T_FAILS(gd_trainer_create(homo, &o, &t), GD_ERR_INVALID_ARG, "heterogeneous datasets");
    gd_loader_options lo = GD_LOADER_OPTIONS_INIT;
    lo.mode = "cpu";
    gd_loader_t *loader = NULL;
    T_FAILS(gd_loader_create(mag, &lo, &loader), GD_ERR_UNSUPPORTED, "is heterogeneous");
    T_FAILS(gd_trainer_create(homo, &ro, &t), GD_ERR_INVALID_ARG, "use --model gat");
    char plan[2048];
    T_OK(gd_trainer_plan(mag, &o, plan, sizeof plan));
    T_ASSERT(strstr(plan, "heterogeneous") && strstr(plan, "features (per node type)"));
    T_OK(gd_trainer_plan(mag, &au, plan, sizeof plan));
    T_ASSERT(strstr(plan, gd_device_count() > 0 ? "auto picked all-gpu" : "auto picked cpu"));

    gd_dataset_close(homo);
    gd_dataset_close(igbh);
    gd_dataset_close(mag);
    t_rmtree(tmp);
    t_check_no_leaks();
    fprintf(stderr, "test_train_hetero: ok\n");
    return 0;
}
