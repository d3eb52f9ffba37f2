/*
 * Checkpoint and resume (issue 5 item 7): a run interrupted after epoch k and resumed from its
 * checkpoint gives, epoch for epoch, exactly the losses and accuracies of the uninterrupted run
 * (cpu mode: the same operations in the same order, so equality is bit for bit). The
 * checkpoint holds the parameters, Adam's moments and step count, and the epochs done; the
 * randomness is keyed by (seed, epoch, minibatch), so nothing else is needed. Also: a model
 * file without the optimizer cannot be resumed from, a run with other settings is refused
 * naming the setting, a corrupt or truncated checkpoint is refused, and a failed save leaves
 * the previous checkpoint intact.
 */
#include "test.h"

#include "train/internal.h"

#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#define EPOCHS 4

static gd__train_config config(uint64_t seed) {
    gd__train_config c = GD__TRAIN_CONFIG_INIT;
    c.batch_size = 512;
    c.hidden_dim = 32;
    c.dropout = 0.4;
    c.lr = 0.01;
    c.weight_decay = 1e-4;
    c.seed = seed;
    return c;
}

static void save(gd__trainer *t, const char *path, int64_t done, int with_state) {
    gd__checkpoint_meta m;
    gd__trainer_checkpoint_meta(t, &m);
    m.epochs_done = done;
    T_OK(gd__trainer_save(t, path, &m, NULL, with_state));
}

int main(void) {
    const uint64_t seed = t_seed();
    char path[128], model[128];
    snprintf(path, sizeof path, "/tmp/gd-test-resume-%d.gdc", (int)getpid());
    snprintf(model, sizeof model, "/tmp/gd-test-resume-%d-model.gdc", (int)getpid());
    gd_generate_options go = GD_GENERATE_OPTIONS_INIT;
    go.preset = "tiny";
    go.seed = seed % 1000;
    gd_dataset_t *ds;
    T_OK(gd_generate(&go, &ds));
    gd__train_config c = config(seed);

    /* The uninterrupted run. */
    double loss[EPOCHS], acc[EPOCHS], valid[EPOCHS];
    gd__trainer *t;
    T_OK(gd__trainer_create(ds, &c, &t));
    for (int e = 0; e < EPOCHS; e++) {
        gd__train_epoch_stats s;
        T_OK(gd__trainer_epoch(t, e, &s));
        T_OK(gd__trainer_evaluate(t, GD_ARRAY_VALID_IDX, &valid[e], NULL));
        loss[e] = s.loss;
        acc[e] = s.train_acc;
    }
    gd__trainer_destroy(t);

    /* Interrupted after every k, resumed in a fresh trainer. */
    for (int k = 1; k < EPOCHS; k++) {
        T_OK(gd__trainer_create(ds, &c, &t));
        for (int e = 0; e < k; e++) {
            gd__train_epoch_stats s;
            T_OK(gd__trainer_epoch(t, e, &s));
        }
        save(t, path, k, 1);
        save(t, model, k, 0);
        gd__trainer_destroy(t);

        T_OK(gd__trainer_create(ds, &c, &t));
        gd__checkpoint_meta m;
        T_FAILS(gd__trainer_resume(t, model, &m), GD_ERR_INVALID_ARG, "optimizer");
        T_OK(gd__trainer_resume(t, path, &m));
        T_EQ_INT(m.epochs_done, k);
        for (int e = k; e < EPOCHS; e++) {
            gd__train_epoch_stats s;
            double v;
            T_OK(gd__trainer_epoch(t, e, &s));
            T_OK(gd__trainer_evaluate(t, GD_ARRAY_VALID_IDX, &v, NULL));
            fprintf(stderr, "resumed after %d: epoch %d loss %.9f (uninterrupted %.9f)\n", k, e + 1,
                    s.loss, loss[e]);
            T_ASSERT(s.loss == loss[e]);
            T_ASSERT(s.train_acc == acc[e]);
            T_ASSERT(v == valid[e]);
        }
        gd__trainer_destroy(t);
    }

    /* Other settings are refused, naming the setting. */
    gd__train_config other = c;
    other.lr = 0.02;
    T_OK(gd__trainer_create(ds, &other, &t));
    gd__checkpoint_meta m;
    T_FAILS(gd__trainer_resume(t, path, &m), GD_ERR_INVALID_ARG, "lr");
    gd__trainer_destroy(t);
    other = c;
    other.hidden_dim = 16;
    T_OK(gd__trainer_create(ds, &other, &t));
    T_FAILS(gd__trainer_resume(t, path, &m), GD_ERR_INVALID_ARG, "hidden");
    gd__trainer_destroy(t);

    /* A corrupt checkpoint is refused; a failed save keeps the previous one. */
    struct stat sb;
    T_ASSERT(stat(path, &sb) == 0);
    FILE *f = fopen(path, "r+b");
    T_ASSERT(f != NULL);
    T_ASSERT(fseek(f, sb.st_size / 2, SEEK_SET) == 0);
    int ch = fgetc(f);
    T_ASSERT(fseek(f, sb.st_size / 2, SEEK_SET) == 0);
    fputc(ch ^ 0x5a, f);
    fclose(f);
    T_OK(gd__trainer_create(ds, &c, &t));
    const char *where = path;
    T_FAILS(gd__trainer_resume(t, path, &m), GD_ERR_FORMAT, where);
    save(t, path, 0, 1);
    gd_fault_set(GD_FAULT_WRITE, 1);
    gd__trainer_checkpoint_meta(t, &m);
    gd_status st = gd__trainer_save(t, path, &m, NULL, 1);
    gd_fault_set(GD_FAULT_WRITE, 0);
    T_EQ_INT(st, GD_ERR_IO);
    T_OK(gd__trainer_resume(t, path, &m)); /* the earlier save is intact */
    gd__trainer_destroy(t);

    unlink(path);
    unlink(model);
    gd_dataset_close(ds);
    t_check_no_leaks();
    fprintf(stderr, "train resume: ok\n");
    return 0;
}
