/*
 * The public trainer (gd_trainer_*, issue 12 item 6) on the `tiny` preset, through
 * include/graphdirect.h alone: create, fit with its callbacks, sampled and exact evaluation,
 * save and load, checkpoints and resume. The per-epoch callback sees every epoch in order and
 * can stop the run (normally, or at once); a run resumed from a checkpoint after any epoch
 * gives exactly the losses, accuracies and test result of the uninterrupted run (cpu mode: the
 * same operations in the same order); bad options are refused naming the field; an allocation
 * failure at any point of create and of a checkpointed fit fails cleanly; nothing leaks.
 *
 * Where a GPU is visible the same runs go through all-gpu and zero-copy, whose losses and
 * accuracies agree with the cpu mode's to float tolerance, and a cpu checkpoint resumes there.
 */
#include "test.h"

#include <sys/stat.h>

#define EPOCHS 4

typedef struct {
    int calls;
    int64_t epochs[16];
    double loss[16], train[16], valid[16];
    int stop_at; /* the epoch index whose callback returns `verdict` (-1: none) */
    int verdict;
    int64_t progress; /* progress calls */
} seen;

static int on_epoch(void *user, const gd_epoch_stats *s) {
    seen *v = user;
    T_EQ_INT(s->size, sizeof *s);
    T_ASSERT(v->calls < 16);
    v->epochs[v->calls] = s->epoch;
    v->loss[v->calls] = s->loss;
    v->train[v->calls] = s->train_acc;
    v->valid[v->calls] = s->valid_acc;
    v->calls++;
    T_ASSERT(s->batches >= 1 && isfinite(s->loss) && s->seconds > 0);
    T_ASSERT(s->best_epoch >= 0 && s->best_epoch <= s->epoch);
    return s->epoch == v->stop_at ? v->verdict : 0;
}

static int on_progress(void *user, int64_t epoch, int64_t done, int64_t total, double loss) {
    seen *v = user;
    T_ASSERT(epoch >= 0 && done >= 1 && done <= total);
    (void)loss;
    v->progress++;
    return 0;
}

static int stop_progress(void *user, int64_t epoch, int64_t done, int64_t total, double loss) {
    (void)user, (void)epoch, (void)done, (void)total, (void)loss;
    return 1;
}

static gd_train_options options(const char *mode, uint64_t seed) {
    gd_train_options o = GD_TRAIN_OPTIONS_INIT;
    o.mode = mode;
    o.fanouts[0] = 8;
    o.fanouts[1] = 4;
    o.batch_size = 512;
    o.hidden = 32;
    o.dropout = 0.3;
    o.lr = 0.01;
    o.weight_decay = 1e-4;
    o.seed = seed;
    o.threads = 2;
    return o;
}

/* A fit of `epochs` epochs with the callbacks recording into *v. */
static gd_fit_options fit_options(int64_t epochs, seen *v) {
    gd_fit_options f = GD_FIT_OPTIONS_INIT;
    f.epochs = epochs;
    f.on_epoch = on_epoch;
    f.on_epoch_user = v;
    f.progress = on_progress;
    f.progress_user = v;
    f.report_every = 1;
    memset(v, 0, sizeof *v);
    v->stop_at = -1;
    return f;
}

/* The whole cycle in one mode; returns the run's losses in *v and its result. */
static void cycle(const gd_dataset_t *ds, const char *mode, uint64_t seed, const char *dir, seen *v,
                  gd_fit_result *r) {
    gd_trainer_t *t = NULL;
    gd_train_options o = options(mode, seed);
    T_OK(gd_trainer_create(ds, &o, &t));
    gd_trainer_info info = GD_TRAINER_INFO_INIT;
    T_OK(gd_trainer_get_info(t, &info));
    T_EQ_STR(info.mode, mode);
    T_EQ_STR(info.model, "sage");
    T_ASSERT(info.num_params > 0 && info.train_nodes > 0 && info.epochs_done == 0);
    T_EQ_INT(info.on_device, strcmp(mode, "cpu") != 0);

    gd_fit_options f = fit_options(EPOCHS, v);
    *r = (gd_fit_result)GD_FIT_RESULT_INIT;
    T_OK(gd_trainer_fit(t, &f, r));
    T_EQ_INT(v->calls, EPOCHS);
    double best = -1;
    for (int e = 0; e < EPOCHS; e++) {
        T_EQ_INT(v->epochs[e], e);
        fprintf(stderr, "%-9s epoch %d: loss %.6f train %.4f valid %.4f\n", mode, e + 1, v->loss[e],
                v->train[e], v->valid[e]);
        if (v->valid[e] > best) best = v->valid[e];
    }
    T_ASSERT(v->loss[EPOCHS - 1] < v->loss[0]);
    T_ASSERT(v->progress >= EPOCHS);
    T_EQ_INT(r->start_epoch, 0);
    T_EQ_INT(r->epochs_done, EPOCHS);
    T_EQ_INT(r->stopped, 0);
    T_NEAR(r->best_valid, best, 0);
    T_NEAR(v->valid[r->best_epoch], best, 0);
    T_ASSERT(r->test_count > 0 && r->test_acc > 0.3 && r->test_acc <= 1);
    T_ASSERT(r->test_exact > 0.3 && r->test_exact <= 1);
    fprintf(stderr, "%-9s best epoch %lld: test %.4f sampled, %.4f exact\n", mode,
            (long long)r->best_epoch + 1, r->test_acc, r->test_exact);

    /* The trainer holds the best model: evaluation gives the fit's answers, again and again. */
    double acc, exact, again;
    int64_t count;
    T_OK(gd_trainer_evaluate(t, GD_ARRAY_TEST_IDX, 0, &acc, &count));
    T_NEAR(acc, r->test_acc, 0);
    T_EQ_INT(count, r->test_count);
    T_OK(gd_trainer_evaluate(t, GD_ARRAY_TEST_IDX, 1, &exact, &count));
    T_NEAR(exact, r->test_exact, 0);
    gd_fault_set(GD_FAULT_ALLOC, 0);
    T_OK(gd_trainer_evaluate(t, GD_ARRAY_VALID_IDX, 1, &again, NULL));
    T_EQ_INT(gd_fault_calls(GD_FAULT_ALLOC), 0); /* the kept predictions */
    T_ASSERT(again > 0.3);

    /* A saved model loads into a fresh trainer and answers the same. */
    char path[4200];
    snprintf(path, sizeof path, "%s/model-%s.gdc", dir, mode);
    T_OK(gd_trainer_save(t, path));
    gd_trainer_destroy(t);
    gd_checkpoint_info ci = GD_CHECKPOINT_INFO_INIT;
    T_OK(gd_checkpoint_read_info(path, &ci));
    T_EQ_STR(ci.model, "sage");
    T_EQ_INT(ci.hidden, 32);
    T_EQ_INT(ci.num_layers, 2);
    T_EQ_INT(ci.epochs_done, EPOCHS);
    T_EQ_INT(ci.has_state, 0);
    T_OK(gd_trainer_create(ds, &o, &t));
    T_OK(gd_trainer_load(t, path));
    T_OK(gd_trainer_evaluate(t, GD_ARRAY_TEST_IDX, 1, &again, NULL));
    T_NEAR(again, exact, 0);
    T_OK(gd_trainer_evaluate(t, GD_ARRAY_TEST_IDX, 0, &again, NULL));
    T_NEAR(again, acc, 0);
    gd_trainer_destroy(t);
}

/* The per-epoch callback stops the run: > 0 normally (tested), < 0 at once. */
static void stopping(const gd_dataset_t *ds, uint64_t seed) {
    gd_trainer_t *t = NULL;
    gd_train_options o = options("cpu", seed);
    seen v;
    gd_fit_result r = GD_FIT_RESULT_INIT;
    T_OK(gd_trainer_create(ds, &o, &t));
    gd_fit_options f = fit_options(10, &v);
    v.stop_at = 1;
    v.verdict = 1;
    T_OK(gd_trainer_fit(t, &f, &r));
    T_EQ_INT(v.calls, 2);
    T_EQ_INT(r.epochs_done, 2);
    T_EQ_INT(r.stopped, 1);
    T_ASSERT(r.test_acc > 0 && r.test_exact > 0);
    /* The next fit goes on from epoch 2; a negative answer stops it at once. */
    f = fit_options(10, &v);
    v.stop_at = 3;
    v.verdict = -1;
    T_FAILS(gd_trainer_fit(t, &f, &r), GD_ERR_INTERRUPTED, "on_epoch");
    T_EQ_INT(v.calls, 2);
    T_EQ_INT(v.epochs[0], 2);
    T_EQ_INT(r.epochs_done, 4);
    T_ASSERT(isnan(r.test_acc));
    /* So does the progress callback, in the middle of an epoch. */
    f = fit_options(10, &v);
    f.progress = stop_progress;
    T_FAILS(gd_trainer_fit(t, &f, &r), GD_ERR_INTERRUPTED, "interrupted");
    T_EQ_INT(v.calls, 0);
    gd_trainer_info info = GD_TRAINER_INFO_INIT;
    T_OK(gd_trainer_get_info(t, &info));
    T_EQ_INT(info.epochs_done, 4);
    gd_trainer_destroy(t);
}

/*
 * Interrupted after every k (with a checkpoint every `every` epochs) and resumed in a fresh
 * trainer of `mode`: the epochs that follow are the uninterrupted run's (ref, in cpu mode), bit
 * for bit when mode is cpu.
 */
static void resuming(const gd_dataset_t *ds, const char *mode, uint64_t seed, const char *tmp,
                     const seen *ref, const gd_fit_result *ref_r, int every) {
    const int exact = strcmp(mode, "cpu") == 0;
    for (int k = every; k < EPOCHS; k++) {
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/ck-%s-%d-%d", tmp, mode, every, k);
        gd_trainer_t *t = NULL;
        gd_train_options o = options("cpu", seed);
        seen v;
        gd_fit_result r = GD_FIT_RESULT_INIT;
        T_OK(gd_trainer_create(ds, &o, &t));
        gd_fit_options f = fit_options(EPOCHS, &v);
        f.checkpoint_dir = dir;
        f.checkpoint_every = every;
        v.stop_at = k - 1;
        v.verdict = -1;
        T_FAILS(gd_trainer_fit(t, &f, &r), GD_ERR_INTERRUPTED, "on_epoch");
        gd_trainer_destroy(t);

        o = options(mode, seed);
        T_OK(gd_trainer_create(ds, &o, &t));
        f = fit_options(EPOCHS, &v);
        f.checkpoint_dir = dir;
        f.resume = 1;
        T_OK(gd_trainer_fit(t, &f, &r));
        const int start = (k / every) * every; /* the last checkpoint written */
        T_EQ_INT(r.start_epoch, start);
        T_EQ_INT(v.calls, EPOCHS - start);
        for (int i = 0; i < v.calls; i++) {
            const int e = start + i;
            fprintf(stderr,
                    "%s resumed after %d (every %d): epoch %d loss %.9f (uninterrupted "
                    "%.9f)\n",
                    mode, start, every, e + 1, v.loss[i], ref->loss[e]);
            if (exact) {
                T_ASSERT(v.loss[i] == ref->loss[e]);
                T_ASSERT(v.train[i] == ref->train[e]);
                T_ASSERT(v.valid[i] == ref->valid[e]);
            } else {
                T_NEAR(v.loss[i], ref->loss[e], 2e-3 * ref->loss[e] + 1e-5);
                T_NEAR(v.valid[i], ref->valid[e], 0.01);
            }
        }
        if (exact) {
            T_EQ_INT(r.best_epoch, ref_r->best_epoch);
            T_ASSERT(r.test_acc == ref_r->test_acc && r.test_exact == ref_r->test_exact);
        }
        gd_trainer_destroy(t);
    }
}

static void bad_options(const gd_dataset_t *ds, const char *tmp) {
    gd_trainer_t *t = (gd_trainer_t *)&t;
    gd_train_options o = options("zerocopy", 1);
    T_FAILS(gd_trainer_create(ds, &o, &t), GD_ERR_INVALID_ARG, "unknown training mode 'zerocopy'");
    T_ASSERT(t == NULL);
    o = options("cpu", 1);
    o.model = "gcn";
    T_FAILS(gd_trainer_create(ds, &o, &t), GD_ERR_INVALID_ARG, "sage, gat");
    /* A relational kind on a homogeneous dataset: refused with the way out. */
    o.model = "rgcn";
    T_FAILS(gd_trainer_create(ds, &o, &t), GD_ERR_INVALID_ARG, "use --model sage or gat");
    o = options("cpu", 1);
    o.num_layers = 0;
    T_FAILS(gd_trainer_create(ds, &o, &t), GD_ERR_INVALID_ARG, "layers");
    o = options("cpu", 1);
    o.dropout = 1;
    T_FAILS(gd_trainer_create(ds, &o, &t), GD_ERR_INVALID_ARG, "dropout");
    o = options("cpu", 1);
    o.lr = -1;
    T_FAILS(gd_trainer_create(ds, &o, &t), GD_ERR_INVALID_ARG, "learning rate");
    o = options("cpu", 1);
    o.fanouts[1] = -2;
    T_FAILS(gd_trainer_create(ds, &o, &t), GD_ERR_INVALID_ARG, "fanout");
    o = options("cpu", 1);
    o.size = 1;
    T_FAILS(gd_trainer_create(ds, &o, &t), GD_ERR_INVALID_ARG, "GD_TRAIN_OPTIONS_INIT");
    T_FAILS(gd_trainer_create(NULL, NULL, &t), GD_ERR_INVALID_ARG, "dataset");
    T_FAILS(gd_train_mode_check("fast"), GD_ERR_INVALID_ARG, "cpu, all-gpu, zero-copy");
    T_OK(gd_train_mode_check("cpu-centric"));
    gd_model_info mi = GD_MODEL_INFO_INIT;
    T_OK(gd_model_get_info(NULL, &mi));
    T_EQ_STR(mi.name, "sage");
    T_EQ_STR(mi.title, "GraphSAGE");
    T_EQ_INT(mi.exact_inference, 1);
    T_FAILS(gd_model_get_info("gcn", &mi), GD_ERR_INVALID_ARG, "sage");
    /* GAT is a kind, with a layer-wise exact inference (attention passes). */
    T_OK(gd_model_get_info("gat", &mi));
    T_EQ_STR(mi.name, "gat");
    T_EQ_INT(mi.exact_inference, 1);
    /* The relational kinds too (their fit's exact test and eval run: test_train_hetero). */
    T_OK(gd_model_get_info("rsage", &mi));
    T_EQ_INT(mi.exact_inference, 1);
    T_OK(gd_model_get_info("rgat", &mi));
    T_EQ_INT(mi.exact_inference, 1);
    T_OK(gd_model_get_info("rgcn", &mi));
    T_EQ_STR(mi.title, "R-GCN");
    T_EQ_INT(mi.exact_inference, 1);
    /* GAT trains through the same trainer; its fit has the sampled and the exact test. */
    {
        gd_train_options g = options("cpu", 1);
        g.model = "gat";
        g.heads = 2;
        g.hidden = 8;
        gd_trainer_t *gt = NULL;
        T_OK(gd_trainer_create(ds, &g, &gt));
        gd_fit_options gf = GD_FIT_OPTIONS_INIT;
        gf.epochs = 3;
        gd_fit_result gr = GD_FIT_RESULT_INIT;
        T_OK(gd_trainer_fit(gt, &gf, &gr));
        T_ASSERT(gr.test_exact > 0.3 && gr.test_acc > 0.3);
        gd_trainer_info gi = GD_TRAINER_INFO_INIT;
        T_OK(gd_trainer_get_info(gt, &gi));
        T_EQ_STR(gi.model, "gat");
        fprintf(stderr, "gat through the trainer: test %.4f sampled, %.4f exact\n", gr.test_acc,
                gr.test_exact);
        /* Its file records the heads; a trainer of another head count is refused. */
        char gpath[4200];
        snprintf(gpath, sizeof gpath, "%s/gat.gdc", tmp);
        T_OK(gd_trainer_save(gt, gpath));
        gd_checkpoint_info ci = GD_CHECKPOINT_INFO_INIT;
        T_OK(gd_checkpoint_read_info(gpath, &ci));
        T_EQ_STR(ci.model, "gat");
        T_EQ_INT(ci.heads, 2);
        gd_trainer_destroy(gt);
        g.heads = 1;
        T_OK(gd_trainer_create(ds, &g, &gt));
        T_FAILS(gd_trainer_load(gt, gpath), GD_ERR_INVALID_ARG, "attention heads");
        gd_trainer_destroy(gt);
        g.heads = 65;
        T_FAILS(gd_trainer_create(ds, &g, &gt), GD_ERR_INVALID_ARG, "heads");
    }

    o = options("cpu", 1);
    T_OK(gd_trainer_create(ds, &o, &t));
    gd_fit_options f = GD_FIT_OPTIONS_INIT;
    f.epochs = -1;
    T_FAILS(gd_trainer_fit(t, &f, NULL), GD_ERR_INVALID_ARG, "epochs");
    f = (gd_fit_options)GD_FIT_OPTIONS_INIT;
    f.resume = 1;
    T_FAILS(gd_trainer_fit(t, &f, NULL), GD_ERR_INVALID_ARG, "checkpoint_dir");
    f = (gd_fit_options)GD_FIT_OPTIONS_INIT;
    f.checkpoint_every = 0;
    T_FAILS(gd_trainer_fit(t, &f, NULL), GD_ERR_INVALID_ARG, "checkpoint");
    f = (gd_fit_options)GD_FIT_OPTIONS_INIT;
    f.size = 3;
    T_FAILS(gd_trainer_fit(t, &f, NULL), GD_ERR_INVALID_ARG, "GD_FIT_OPTIONS_INIT");
    gd_fit_result r = GD_FIT_RESULT_INIT;
    r.size = 1;
    T_FAILS(gd_trainer_fit(t, NULL, &r), GD_ERR_INVALID_ARG, "GD_FIT_RESULT_INIT");
    char file[4200];
    snprintf(file, sizeof file, "%s/a-file", tmp);
    FILE *fp = fopen(file, "w");
    T_ASSERT(fp != NULL);
    fclose(fp);
    f = (gd_fit_options)GD_FIT_OPTIONS_INIT;
    f.checkpoint_dir = file;
    T_FAILS(gd_trainer_fit(t, &f, NULL), GD_ERR_INVALID_ARG, "not a directory");
    T_FAILS(gd_trainer_resume(t, tmp), GD_ERR_NOT_FOUND, "checkpoint.gdc");
    const char *where = file;
    T_FAILS(gd_trainer_load(t, file), GD_ERR_FORMAT, where);
    double acc;
    T_FAILS(gd_trainer_evaluate(t, GD_ARRAY_FEATURES, 0, &acc, NULL), GD_ERR_INVALID_ARG, "split");
    gd_trainer_info info = GD_TRAINER_INFO_INIT;
    info.size = 1;
    T_FAILS(gd_trainer_get_info(t, &info), GD_ERR_INVALID_ARG, "GD_TRAINER_INFO_INIT");

    /* A model of another shape is refused naming it, and a checkpoint of other settings too. */
    char model[4200], dir[4200];
    snprintf(model, sizeof model, "%s/other.gdc", tmp);
    snprintf(dir, sizeof dir, "%s/ck-other", tmp);
    gd_trainer_t *other = NULL;
    gd_train_options oo = options("cpu", 1);
    oo.hidden = 16;
    T_OK(gd_trainer_create(ds, &oo, &other));
    T_OK(gd_trainer_save(other, model));
    f = (gd_fit_options)GD_FIT_OPTIONS_INIT;
    f.checkpoint_dir = dir;
    f.test = f.exact_test = 0;
    T_OK(gd_trainer_fit(other, &f, NULL));
    gd_trainer_destroy(other);
    T_FAILS(gd_trainer_load(t, model), GD_ERR_INVALID_ARG, "hidden 16");
    T_FAILS(gd_trainer_resume(t, dir), GD_ERR_INVALID_ARG, "hidden");
    gd_trainer_destroy(t);
}

/*
 * Regression, "train --checkpoint DIR without --resume silently replaces an earlier run; two
 * runs on one DIR clobber each other's best.gdc": a second run on a directory holding a run is
 * refused naming it (epochs, best valid accuracy) and the ways out, leaving its files intact;
 * overwrite starts again; while one trainer holds a directory, another is refused at once
 * naming the process; the trainer that wrote or resumed a run goes on with it.
 */
static void checkpoint_dir_not_replaced_nor_shared(const gd_dataset_t *ds, const char *tmp) {
    char dir[4200], ck[4300], busy[64];
    snprintf(dir, sizeof dir, "%s/ck-owned", tmp);
    snprintf(ck, sizeof ck, "%s/checkpoint.gdc", dir);
    snprintf(busy, sizeof busy, "in use by process %ld", (long)getpid());
    const char *pid = busy;
    gd_train_options o = options("cpu", 5);
    gd_fit_options f = GD_FIT_OPTIONS_INIT;
    f.checkpoint_dir = dir;
    f.test = f.exact_test = 0;
    gd_checkpoint_info ci = GD_CHECKPOINT_INFO_INIT;
    gd_trainer_t *a = NULL, *b = NULL;

    /* Two sequential runs: the second is refused, and the first run's files are untouched. */
    T_OK(gd_trainer_create(ds, &o, &a));
    T_OK(gd_trainer_fit(a, &f, NULL));
    gd_trainer_destroy(a);
    T_OK(gd_checkpoint_read_info(ck, &ci));
    const int64_t crc_epochs = ci.epochs_done;
    const double best = ci.best_valid;
    T_EQ_INT(crc_epochs, 1);
    T_OK(gd_trainer_create(ds, &o, &b));
    T_FAILS(gd_trainer_fit(b, &f, NULL), GD_ERR_INVALID_ARG, "already holds a run");
    T_ASSERT(strstr(gd_last_error(), "checkpoint.gdc: 1 epochs done, best valid accuracy") &&
             strstr(gd_last_error(), "--resume") && strstr(gd_last_error(), "--overwrite"));
    T_OK(gd_checkpoint_read_info(ck, &ci));
    T_EQ_INT(ci.epochs_done, 1);
    T_ASSERT(ci.best_valid == best);
    f.resume = f.overwrite = 1;
    T_FAILS(gd_trainer_fit(b, &f, NULL), GD_ERR_INVALID_ARG, "choose one");

    /* overwrite starts again; the same trainer then goes on with its own run. */
    f.resume = 0;
    f.epochs = 2;
    T_OK(gd_trainer_fit(b, &f, NULL));
    f.overwrite = 0;
    f.epochs = 3;
    T_OK(gd_trainer_fit(b, &f, NULL));
    T_OK(gd_checkpoint_read_info(ck, &ci));
    T_EQ_INT(ci.epochs_done, 3);

    /* Two runs at once: b holds the directory, so a is refused at once, resuming or not. */
    T_OK(gd_trainer_create(ds, &o, &a));
    f.resume = 1;
    T_FAILS(gd_trainer_fit(a, &f, NULL), GD_ERR_INVALID_ARG, pid);
    T_FAILS(gd_trainer_resume(a, dir), GD_ERR_INVALID_ARG, pid);
    f.resume = 0;
    f.overwrite = 1;
    T_FAILS(gd_trainer_fit(a, &f, NULL), GD_ERR_INVALID_ARG, pid);
    T_OK(gd_checkpoint_read_info(ck, &ci));
    T_EQ_INT(ci.epochs_done, 3);
    /* Once b is gone its lock is too: a resumes the run. */
    gd_trainer_destroy(b);
    f.overwrite = 0;
    f.resume = 1;
    f.epochs = 4;
    gd_fit_result r = GD_FIT_RESULT_INIT;
    T_OK(gd_trainer_fit(a, &f, &r));
    T_EQ_INT(r.start_epoch, 3);
    gd_trainer_destroy(a);
}

/* Every allocation of create and of a checkpointed epoch fails once, cleanly. */
static void faults(const gd_dataset_t *ds, const char *tmp) {
    gd_train_options o = options("cpu", 2);
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/ck-faults", tmp);
    gd_fit_options f = GD_FIT_OPTIONS_INIT;
    f.checkpoint_dir = dir;
    /* Every fit below starts a new run in the same directory. */
    f.overwrite = 1;
    gd_trainer_t *t = NULL;
    gd_fault_set(GD_FAULT_ALLOC, 0);
    T_OK(gd_trainer_create(ds, &o, &t));
    const int64_t creates = gd_fault_calls(GD_FAULT_ALLOC);
    gd_fault_set(GD_FAULT_ALLOC, 0);
    T_OK(gd_trainer_fit(t, &f, NULL));
    const int64_t fits = gd_fault_calls(GD_FAULT_ALLOC);
    gd_trainer_destroy(t);
    T_ASSERT(creates > 0 && fits > 0);
    for (int64_t n = 1; n <= creates; n++) {
        gd_fault_set(GD_FAULT_ALLOC, n);
        T_FAILS(gd_trainer_create(ds, &o, &t), GD_ERR_NO_MEMORY, "");
        T_ASSERT(t == NULL);
    }
    for (int64_t n = 1; n <= fits; n++) {
        gd_fault_set(GD_FAULT_ALLOC, 0);
        T_OK(gd_trainer_create(ds, &o, &t));
        gd_fault_set(GD_FAULT_ALLOC, n);
        T_FAILS(gd_trainer_fit(t, &f, NULL), GD_ERR_NO_MEMORY, "");
        gd_fault_set(GD_FAULT_ALLOC, 0);
        gd_trainer_destroy(t);
    }
    fprintf(stderr, "faults: %lld allocations of create and %lld of a fit each failed once\n",
            (long long)creates, (long long)fits);
}

int main(void) {
    const uint64_t seed = t_seed();
    char tmp[4096];
    t_tmpdir(tmp, sizeof tmp);
    gd_dataset_t *ds = t_tiny_dataset(seed);

    seen ref;
    gd_fit_result ref_r;
    cycle(ds, "cpu", seed, tmp, &ref, &ref_r);
    stopping(ds, seed);
    resuming(ds, "cpu", seed, tmp, &ref, &ref_r, 1);
    resuming(ds, "cpu", seed, tmp, &ref, &ref_r, 2);
    bad_options(ds, tmp);
    checkpoint_dir_not_replaced_nor_shared(ds, tmp);
    faults(ds, tmp);

    if (gd_device_count() > 0) {
        static const char *const modes[] = {"all-gpu", "zero-copy"};
        for (int m = 0; m < 2; m++) {
            seen v;
            gd_fit_result r;
            /* The plan shows exact inference's placement on the GPU. */
            char text[2048];
            gd_train_options po = options(modes[m], seed);
            T_OK(gd_trainer_plan(ds, &po, text, sizeof text));
            T_ASSERT(strstr(text, "exact inference: hidden 1") &&
                     strstr(text, "exact inference: features") &&
                     strstr(text, "exact inference: chunks"));
            cycle(ds, modes[m], seed, tmp, &v, &r);
            for (int e = 0; e < EPOCHS; e++) {
                T_NEAR(v.loss[e], ref.loss[e], 2e-3 * ref.loss[e] + 1e-5);
                T_NEAR(v.train[e], ref.train[e], 0.01);
                T_NEAR(v.valid[e], ref.valid[e], 0.01);
            }
            T_NEAR(r.test_exact, ref_r.test_exact, 0.01);
            resuming(ds, modes[m], seed, tmp, &ref, &ref_r, 1);
        }
    } else {
        fprintf(stderr, "no GPU visible: the all-gpu and zero-copy runs are skipped\n");
    }

    gd_dataset_close(ds);
    t_rmtree(tmp);
    t_check_no_leaks();
    fprintf(stderr, "trainer api: ok\n");
    return 0;
}
