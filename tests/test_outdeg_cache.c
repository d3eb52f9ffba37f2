/*
 * The out-degree record of a dataset directory (src/io/outdeg_cache.c): on fresh random graphs
 * saved to a directory and opened (mapped), a saved record loads back to the degrees counted
 * from indices; it is not loaded (and the caller counts again) after indices.npy is rewritten
 * with the same bytes (its times move), when the record is truncated, when its header was
 * written for another graph, when it holds a negative degree, with GD_DEGREE_CACHE=0, nor for a
 * dataset in memory; a read-only directory gets no record and no error. On a GPU (exits 77
 * without one, after the CPU checks): a zero-copy trainer with a feature cache (ranked by the
 * degrees) counts and records them in its first build and reads the record in its second, and
 * both train the same losses.
 */
#include "graph/internal.h"
#include "io/dataset.h"
#include "test.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static gd_dataset_t *generate(int64_t nodes, int64_t dim, uint64_t seed) {
    gd_generate_options go = GD_GENERATE_OPTIONS_INIT;
    go.preset = "tiny";
    go.num_nodes = nodes;
    go.feature_dim = dim;
    go.seed = seed;
    gd_dataset_t *ds = NULL;
    T_OK(gd_generate(&go, &ds));
    return ds;
}

static gd_dataset_t *open_dir(const char *dir) {
    gd_dataset_open_options o = GD_DATASET_OPEN_OPTIONS_INIT;
    gd_dataset_t *ds = NULL;
    T_OK(gd_dataset_open(dir, &o, &ds));
    return ds;
}

/* The degrees counted from the dataset's indices. */
static int64_t *count(const gd_dataset_t *ds) {
    gd_array_view ix;
    T_OK(gd_dataset_array(ds, GD_ARRAY_INDICES, &ix));
    int64_t *deg = calloc((size_t)ds->num_nodes + 1, 8);
    T_ASSERT(deg);
    T_OK(gd__csc_out_degrees(ds->num_nodes, ix.shape[0], ix.data, ix.dtype, deg));
    return deg;
}

static int loads_equal(const gd_dataset_t *ds, const int64_t *want) {
    int64_t *got = malloc((size_t)ds->num_nodes * 8 + 8);
    T_ASSERT(got);
    const int ok = gd__outdeg_cache_load(ds, got);
    if (ok) T_ASSERT(memcmp(got, want, (size_t)ds->num_nodes * 8) == 0);
    free(got);
    return ok;
}

static void rewrite_same(const char *path) {
    size_t n = 0;
    unsigned char *b = t_slurp(path, &n);
    usleep(20000); /* a new modification time, whatever the file system's granularity */
    FILE *f = fopen(path, "r+b");
    T_ASSERT(f && fwrite(b, 1, n, f) == n);
    fclose(f);
    free(b);
}

static void check_record(const char *tmp, uint64_t *state) {
    for (int trial = 0; trial < 3; trial++) {
        char dir[4200], rec[4300], ix[4300];
        snprintf(dir, sizeof dir, "%s/ds%d", tmp, trial);
        snprintf(rec, sizeof rec, "%s/.outdeg", dir);
        gd_dataset_t *mem = generate(500 + (int64_t)(t_rand(state) % 3000), 8, t_rand(state));
        /* In memory: no record. */
        int64_t *d0 = count(mem);
        T_EQ_INT(gd__outdeg_cache_save(mem, d0), 0);
        T_EQ_INT(gd__outdeg_cache_load(mem, d0), 0);
        free(d0);
        T_OK(gd_dataset_save(mem, dir, 0));
        gd_dataset_close(mem);

        gd_dataset_t *ds = open_dir(dir);
        int64_t *deg = count(ds);
        T_EQ_INT(loads_equal(ds, deg), 0); /* none yet */
        T_EQ_INT(gd__outdeg_cache_save(ds, deg), 1);
        T_EQ_INT(gd__outdeg_cache_matches(ds), 1);
        T_EQ_INT(loads_equal(ds, deg), 1);
        /* Off: neither read nor written. */
        T_OK(gd_param_set("GD_DEGREE_CACHE", "0"));
        T_EQ_INT(loads_equal(ds, deg), 0);
        T_EQ_INT(gd__outdeg_cache_save(ds, deg), 0);
        T_OK(gd_param_set("GD_DEGREE_CACHE", NULL));
        /* A negative degree: a damaged record, not loaded. */
        struct stat sb;
        T_ASSERT(stat(rec, &sb) == 0);
        {
            const int fd = open(rec, O_WRONLY);
            const int32_t bad = -5;
            T_ASSERT(fd >= 0);
            T_ASSERT(pwrite(fd, &bad, 4, sb.st_size - 4) == 4);
            close(fd);
        }
        T_EQ_INT(loads_equal(ds, deg), 0);
        T_EQ_INT(gd__outdeg_cache_save(ds, deg), 1);
        /* Truncated: not loaded. */
        T_ASSERT(truncate(rec, sb.st_size - 4) == 0);
        T_EQ_INT(gd__outdeg_cache_matches(ds), 0);
        T_EQ_INT(loads_equal(ds, deg), 0);
        T_EQ_INT(gd__outdeg_cache_save(ds, deg), 1);
        T_EQ_INT(loads_equal(ds, deg), 1);
        /* indices.npy rewritten with its own bytes: its times moved, the record is stale. */
        gd_dataset_close(ds);
        snprintf(ix, sizeof ix, "%s/indices.npy", dir);
        rewrite_same(ix);
        ds = open_dir(dir);
        T_EQ_INT(loads_equal(ds, deg), 0);
        T_EQ_INT(gd__outdeg_cache_save(ds, deg), 1);
        T_EQ_INT(loads_equal(ds, deg), 1);
        /* Another graph's record in this directory: its header differs, not loaded. */
        if (trial > 0) {
            char other[4300], cmd[9000];
            snprintf(other, sizeof other, "%s/outdeg%d", tmp, trial - 1);
            snprintf(cmd, sizeof cmd, "cp '%s' '%s'", other, rec);
            T_ASSERT(system(cmd) == 0);
            T_EQ_INT(loads_equal(ds, deg), 0);
        }
        /* A read-only directory: no record, no error (this graph's record kept for the next
         * trial's "another graph"). */
        T_EQ_INT(gd__outdeg_cache_save(ds, deg), 1);
        {
            char keep[4300];
            snprintf(keep, sizeof keep, "%s/outdeg%d", tmp, trial);
            T_ASSERT(rename(rec, keep) == 0);
        }
        T_ASSERT(chmod(dir, 0555) == 0);
        if (geteuid() != 0) T_EQ_INT(gd__outdeg_cache_save(ds, deg), 0);
        T_ASSERT(chmod(dir, 0755) == 0);
        free(deg);
        gd_dataset_close(ds);
    }
}

typedef struct {
    int calls;
    double loss[4];
    int64_t host_rows[4];
} log_t;

static int on_epoch(void *user, const gd_epoch_stats *s) {
    log_t *l = user;
    if (l->calls < 4) {
        l->loss[l->calls] = s->loss;
        l->host_rows[l->calls] = s->host_rows_copied;
    }
    l->calls++;
    return 0;
}

/*
 * zero-copy with a feature cache of a third of the table, ranked by the out-degrees, and the
 * rows it does not hold copied by CPU threads (--host-gather cpu), which counts them: the same
 * minibatches over the same cached rows copy the same rows, so equal counts say the two builds
 * ranked alike. The losses are compared within float tolerance: GPU training adds in no fixed
 * order (test_train_modes).
 */
static void train_zero_copy(const char *dir, log_t *l, char *startup, size_t n) {
    gd_dataset_t *ds = open_dir(dir);
    gd_train_options o = GD_TRAIN_OPTIONS_INIT;
    o.mode = "zero-copy";
    o.num_layers = 2;
    o.fanouts[0] = 4;
    o.fanouts[1] = 4;
    o.batch_size = 128;
    o.hidden = 16;
    o.seed = 7;
    o.host_gather = "cpu";
    gd_array_view fv;
    T_OK(gd_dataset_array(ds, GD_ARRAY_FEATURES, &fv));
    o.gpu_cache_bytes = fv.shape[0] * fv.shape[1] * 4 / 3;
    gd_trainer_t *t = NULL;
    T_OK(gd_trainer_create(ds, &o, &t));
    gd_trainer_info info = GD_TRAINER_INFO_INIT;
    T_OK(gd_trainer_get_info(t, &info));
    snprintf(startup, n, "%s", info.startup);
    gd_fit_options f = GD_FIT_OPTIONS_INIT;
    gd_fit_result r = GD_FIT_RESULT_INIT;
    f.epochs = 2;
    f.on_epoch = on_epoch;
    f.on_epoch_user = l;
    f.keep_best = 0;
    T_OK(gd_trainer_fit(t, &f, &r));
    gd_trainer_destroy(t);
    gd_dataset_close(ds);
}

static void check_trainer(const char *tmp, uint64_t *state) {
    char dir[4200], s1[256], s2[256];
    snprintf(dir, sizeof dir, "%s/train", tmp);
    gd_dataset_t *mem = generate(20000, 256, t_rand(state));
    T_OK(gd_dataset_save(mem, dir, 0));
    gd_dataset_close(mem);
    log_t a = {0}, b = {0};
    train_zero_copy(dir, &a, s1, sizeof s1);
    train_zero_copy(dir, &b, s2, sizeof s2);
    fprintf(stderr, "first build: %s\nsecond build: %s\n", s1, s2);
    T_ASSERT(strstr(s1, "out-degrees recorded"));
    T_ASSERT(strstr(s2, "out-degrees (its .outdeg record)"));
    T_EQ_INT(a.calls, 2);
    T_EQ_INT(b.calls, 2);
    for (int e = 0; e < 2; e++) {
        fprintf(stderr, "epoch %d: loss %.6f / %.6f, host rows copied %lld / %lld\n", e + 1,
                a.loss[e], b.loss[e], (long long)a.host_rows[e], (long long)b.host_rows[e]);
        T_ASSERT(a.host_rows[e] > 0);
        T_EQ_INT(a.host_rows[e], b.host_rows[e]);
        T_NEAR(a.loss[e], b.loss[e], 2e-3 * a.loss[e] + 1e-5);
    }
}

int main(void) {
    uint64_t state = t_seed();
    char tmp[4096];
    t_tmpdir(tmp, sizeof tmp);
    check_record(tmp, &state);
    fprintf(stderr, "CPU checks passed\n");
    if (gd_device_count() == 0) {
        t_rmtree(tmp);
        fprintf(stderr, "skip: no GPU (the CPU checks passed)\n");
        return GD_TEST_SKIP;
    }
    check_trainer(tmp, &state);
    t_rmtree(tmp);
    t_check_no_leaks();
    return 0;
}
