/*
 * Fault walks over the trainer, the loader and checkpoints (issue 13), through the public header
 * alone: every file write of a checkpointed epoch, every file read of resuming and of loading a
 * model, every allocation of a loader's create and epoch, and, where a GPU is visible, every
 * pin (page-locking host memory) of a zero-copy trainer and loader, is made to fail in turn.
 * Each must fail cleanly: an error with a message, no leaked memory, no temporary file left in
 * the checkpoint folder, and the checkpoints of the last good epoch still loadable (a failed
 * save never costs the run what it had). test_trainer_api walks the trainer's allocations.
 */
#include "test.h"

#include <dirent.h>
#include <sys/stat.h>

static void live(int64_t *blocks, int64_t *bytes) {
    gd_alloc_stats(blocks, bytes);
}

/* No temporary file of an interrupted save in dir. */
static void no_temporaries(const char *dir, const char *what, int64_t n) {
    DIR *d = opendir(dir);
    T_ASSERT(d != NULL);
    for (struct dirent *e; (e = readdir(d));)
        if (strstr(e->d_name, ".tmp."))
            T_FAIL_("%s, fault %lld: %s/%s was left", what, (long long)n, dir, e->d_name);
    closedir(d);
}

static void copy_file(const char *from, const char *to) {
    char cmd[9000];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", from, to);
    T_ASSERT(system(cmd) == 0);
}

static gd_train_options options(const char *mode, uint64_t seed) {
    gd_train_options o = GD_TRAIN_OPTIONS_INIT;
    o.mode = mode;
    o.fanouts[0] = 5;
    o.fanouts[1] = 3;
    o.batch_size = 1024;
    o.hidden = 16;
    o.seed = seed;
    o.threads = 2;
    return o;
}

/* A fit to `epochs` with checkpoints in dir, without the test at the end (a fault walk's
 * subject is the epoch and its checkpoints). */
static gd_fit_options fit_options(const char *dir, int64_t epochs) {
    gd_fit_options f = GD_FIT_OPTIONS_INIT;
    f.epochs = epochs;
    f.checkpoint_dir = dir;
    f.test = 0;
    f.exact_test = 0;
    return f;
}

/*
 * Writes: epoch 1 is trained and checkpointed without faults; then, for every write of a second
 * epoch's checkpoints, a trainer resumes from the first and fails at that write. The folder then
 * holds no temporary file and checkpoints a fresh trainer resumes from (epoch 1's, or epoch 2's
 * where checkpoint.gdc was replaced before the fault hit best.gdc). The folder is put back
 * before the next fault.
 */
static void checkpoint_writes(const gd_dataset_t *ds, const char *tmp, uint64_t seed) {
    char dir[4200], keep[4200], a[4300], b[4300];
    snprintf(dir, sizeof dir, "%s/ck-writes", tmp);
    snprintf(keep, sizeof keep, "%s/ck-writes-epoch1", tmp);
    const gd_train_options o = options("cpu", seed);
    gd_trainer_t *t = NULL;
    T_OK(gd_trainer_create(ds, &o, &t));
    gd_fit_options f = fit_options(dir, 1);
    T_OK(gd_trainer_fit(t, &f, NULL));
    gd_trainer_destroy(t);
    T_ASSERT(mkdir(keep, 0755) == 0);
    static const char *const files[] = {"checkpoint.gdc", "best.gdc"};
    for (int i = 0; i < 2; i++) {
        snprintf(a, sizeof a, "%s/%s", dir, files[i]);
        snprintf(b, sizeof b, "%s/%s", keep, files[i]);
        copy_file(a, b);
    }

    /* How many writes an epoch with its checkpoints makes. */
    T_OK(gd_trainer_create(ds, &o, &t));
    T_OK(gd_trainer_resume(t, dir));
    f = fit_options(dir, 2);
    f.resume = 0;
    gd_fault_set(GD_FAULT_WRITE, 0);
    T_OK(gd_trainer_fit(t, &f, NULL));
    const int64_t calls = gd_fault_calls(GD_FAULT_WRITE);
    gd_trainer_destroy(t);
    T_ASSERT(calls >= 2); /* at least the two files */

    int64_t blocks, bytes;
    for (int64_t n = 1; n <= calls; n++) {
        for (int i = 0; i < 2; i++) {
            snprintf(a, sizeof a, "%s/%s", keep, files[i]);
            snprintf(b, sizeof b, "%s/%s", dir, files[i]);
            copy_file(a, b);
        }
        live(&blocks, &bytes);
        T_OK(gd_trainer_create(ds, &o, &t));
        T_OK(gd_trainer_resume(t, dir));
        gd_clear_error();
        gd_fault_set(GD_FAULT_WRITE, n);
        const gd_status st = gd_trainer_fit(t, &f, NULL);
        gd_fault_set(GD_FAULT_WRITE, 0);
        if (st == GD_OK)
            T_FAIL_("fit with write fault %lld of %lld succeeded", (long long)n, (long long)calls);
        T_ASSERT(strlen(gd_last_error()) > 0);
        gd_trainer_destroy(t);
        t_same_live(blocks, bytes, "checkpoint write", n);
        no_temporaries(dir, "checkpoint write", n);

        gd_trainer_info info = GD_TRAINER_INFO_INIT;
        T_OK(gd_trainer_create(ds, &o, &t));
        T_OK(gd_trainer_resume(t, dir));
        T_OK(gd_trainer_get_info(t, &info));
        T_ASSERT(info.epochs_done == 1 || info.epochs_done == 2);
        snprintf(a, sizeof a, "%s/best.gdc", dir);
        T_OK(gd_trainer_load(t, a));
        gd_trainer_destroy(t);
    }
    fprintf(stderr, "checkpoint writes: %lld writes of an epoch each failed once\n",
            (long long)calls);
}

/* Reads: every read of resuming from a checkpoint folder and of loading a model file fails
 * once; the trainer is left as it was (it still resumes and loads afterwards). */
static void checkpoint_reads(const gd_dataset_t *ds, const char *tmp, uint64_t seed) {
    char dir[4200], model[4300];
    snprintf(dir, sizeof dir, "%s/ck-writes", tmp); /* written by checkpoint_writes */
    snprintf(model, sizeof model, "%s/best.gdc", dir);
    const gd_train_options o = options("cpu", seed);
    gd_trainer_t *t = NULL;
    T_OK(gd_trainer_create(ds, &o, &t));
    for (int which = 0; which < 2; which++) {
        const char *what = which ? "load" : "resume";
        gd_fault_set(GD_FAULT_READ, 0);
        T_OK(which ? gd_trainer_load(t, model) : gd_trainer_resume(t, dir));
        const int64_t calls = gd_fault_calls(GD_FAULT_READ);
        T_ASSERT(calls >= 1);
        int64_t blocks, bytes;
        live(&blocks, &bytes);
        for (int64_t n = 1; n <= calls; n++) {
            gd_clear_error();
            gd_fault_set(GD_FAULT_READ, n);
            const gd_status st = which ? gd_trainer_load(t, model) : gd_trainer_resume(t, dir);
            gd_fault_set(GD_FAULT_READ, 0);
            if (st == GD_OK)
                T_FAIL_("%s with read fault %lld of %lld succeeded", what, (long long)n,
                        (long long)calls);
            T_ASSERT(strlen(gd_last_error()) > 0);
            t_same_live(blocks, bytes, what, n);
        }
        T_OK(which ? gd_trainer_load(t, model) : gd_trainer_resume(t, dir));
        fprintf(stderr, "checkpoint reads: %lld reads of %s each failed once\n", (long long)calls,
                what);
    }
    gd_trainer_destroy(t);
}

/* One epoch of a loader: every batch fetched and released. */
static gd_status loader_epoch(gd_loader_t *l, int64_t epoch) {
    gd_status st = gd_loader_start_epoch(l, epoch);
    for (gd_batch_t *b = NULL; st == GD_OK;) {
        st = gd_loader_next(l, &b);
        if (st != GD_OK || !b) break;
        gd_batch_release(b);
    }
    return st;
}

/*
 * Every fault of `kind` in a loader's create and in its first epoch fails once, cleanly (the
 * loader of a failed epoch still runs the next one).
 */
static void loader_walk(const gd_dataset_t *ds, const char *mode, gd_fault_kind kind,
                        const char *what) {
    gd_loader_options o = GD_LOADER_OPTIONS_INIT;
    o.mode = mode;
    o.fanouts[0] = 5;
    o.fanouts[1] = 3;
    o.batch_size = 512;
    o.threads = 2;
    gd_loader_t *l = NULL;
    gd_fault_set(kind, 0);
    T_OK(gd_loader_create(ds, &o, &l));
    const int64_t creates = gd_fault_calls(kind);
    gd_fault_set(kind, 0);
    T_OK(loader_epoch(l, 0));
    const int64_t epochs = gd_fault_calls(kind);
    gd_loader_destroy(l);
    int64_t blocks, bytes;
    live(&blocks, &bytes);
    for (int64_t n = 1; n <= creates; n++) {
        gd_clear_error();
        gd_fault_set(kind, n);
        l = (gd_loader_t *)1;
        const gd_status st = gd_loader_create(ds, &o, &l);
        gd_fault_set(kind, 0);
        if (st == GD_OK)
            T_FAIL_("%s loader create with fault %lld of %lld succeeded", mode, (long long)n,
                    (long long)creates);
        T_ASSERT(l == NULL && strlen(gd_last_error()) > 0);
        t_same_live(blocks, bytes, what, n);
    }
    for (int64_t n = 1; n <= epochs; n++) {
        T_OK(gd_loader_create(ds, &o, &l));
        gd_fault_set(kind, n);
        const gd_status st = loader_epoch(l, 0);
        gd_fault_set(kind, 0);
        if (st == GD_OK)
            T_FAIL_("%s loader epoch with fault %lld of %lld succeeded", mode, (long long)n,
                    (long long)epochs);
        T_OK(loader_epoch(l, 1));
        gd_loader_destroy(l);
        t_same_live(blocks, bytes, what, n);
    }
    fprintf(stderr, "%s: %lld faults of create and %lld of an epoch each failed once\n", what,
            (long long)creates, (long long)epochs);
}

/* Every pin of a zero-copy trainer's create fails once, cleanly (GPU only). */
static void trainer_pins(const gd_dataset_t *ds, uint64_t seed) {
    const gd_train_options o = options("zero-copy", seed);
    gd_trainer_t *t = NULL;
    gd_fault_set(GD_FAULT_PIN, 0);
    T_OK(gd_trainer_create(ds, &o, &t));
    const int64_t calls = gd_fault_calls(GD_FAULT_PIN);
    gd_trainer_destroy(t);
    T_ASSERT(calls >= 1); /* the features at least */
    int64_t blocks, bytes;
    live(&blocks, &bytes);
    for (int64_t n = 1; n <= calls; n++) {
        gd_clear_error();
        gd_fault_set(GD_FAULT_PIN, n);
        t = (gd_trainer_t *)1;
        const gd_status st = gd_trainer_create(ds, &o, &t);
        gd_fault_set(GD_FAULT_PIN, 0);
        if (st == GD_OK)
            T_FAIL_("zero-copy trainer create with pin fault %lld of %lld succeeded", (long long)n,
                    (long long)calls);
        T_ASSERT(t == NULL && strlen(gd_last_error()) > 0);
        t_same_live(blocks, bytes, "trainer pin", n);
    }
    /* Nothing stays registered behind a failure: a fresh trainer trains. */
    T_OK(gd_trainer_create(ds, &o, &t));
    gd_fit_options f = fit_options(NULL, 1);
    T_OK(gd_trainer_fit(t, &f, NULL));
    gd_trainer_destroy(t);
    fprintf(stderr, "trainer pins: %lld pins of a zero-copy create each failed once\n",
            (long long)calls);
}

int main(void) {
    const uint64_t seed = t_seed();
    char tmp[4096];
    t_tmpdir(tmp, sizeof tmp);
    gd_dataset_t *ds = t_tiny_dataset(seed);

    checkpoint_writes(ds, tmp, seed);
    checkpoint_reads(ds, tmp, seed);
    loader_walk(ds, "cpu", GD_FAULT_ALLOC, "cpu loader allocations");

    int rc = 0;
    if (gd_device_count() > 0) {
        loader_walk(ds, "zero-copy", GD_FAULT_ALLOC, "zero-copy loader allocations");
        loader_walk(ds, "zero-copy", GD_FAULT_PIN, "zero-copy loader pins");
        trainer_pins(ds, seed);
    } else {
        fprintf(stderr, "no GPU visible: the zero-copy walks are skipped\n");
        rc = GD_TEST_SKIP;
    }
    gd_dataset_close(ds);
    t_rmtree(tmp);
    t_check_no_leaks();
    return rc;
}
