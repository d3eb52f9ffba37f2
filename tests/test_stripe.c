/*
 * Striped feature tables (gd_dataset_stripe, io/stripes.h; issue 16 item 1): a dataset's table
 * rewritten over three directories reads back bit for bit (mapped and loaded), trains the same
 * in memory and from disk (cpu: bit for bit; GPU: the loaders' rows bit for bit), can be striped
 * again and back to one file. Every write and allocation fault, and an interruption, leaves the
 * dataset as it was with no file left; refusals, a damaged manifest, a short, missing or
 * mismatched stripe file and a file changed in place are named.
 */
#include "loader_util.h"
#include "test.h"

#include "io/dataset.h"
#include "io/stripes.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef GD_WITH_CUDA
#include <cuda_runtime.h>
#endif

#define NODES 40000
#define DIM 24
#define EPOCHS 2

static int exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* Entries of dir other than . and .. (and, with npy_only, only those ending in .npy). */
static int count_files(const char *dir, int npy_only) {
    DIR *d = opendir(dir);
    T_ASSERT(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        const size_t l = strlen(e->d_name);
        if (!npy_only || (l > 4 && !strcmp(e->d_name + l - 4, ".npy"))) n++;
    }
    closedir(d);
    return n;
}

static void make(const char *dir) {
    gd_generate_options go = GD_GENERATE_OPTIONS_INIT;
    go.preset = "tiny";
    go.num_nodes = NODES;
    go.feature_dim = DIM;
    go.seed = 5;
    go.out_dir = dir;
    go.overwrite = 1;
    gd_dataset_t *ds = NULL;
    T_OK(gd_generate(&go, &ds));
    gd_dataset_close(ds);
}

static gd_dataset_t *open_ds(const char *dir, gd_open_mode mode) {
    gd_dataset_open_options oo = GD_DATASET_OPEN_OPTIONS_INIT;
    oo.mode = mode;
    gd_dataset_t *ds = NULL;
    T_OK(gd_dataset_open(dir, &oo, &ds));
    return ds;
}

/* The features of dir (mapped and loaded) equal ref's, bit for bit. */
static void same_features(const char *dir, const gd_dataset_t *ref, int striped_files) {
    gd_array_view want;
    T_OK(gd_dataset_array(ref, GD_ARRAY_FEATURES, &want));
    for (int mode = 0; mode < 2; mode++) {
        gd_dataset_t *ds = open_ds(dir, mode ? GD_OPEN_LOAD : GD_OPEN_MMAP);
        gd_array_view got;
        T_OK(gd_dataset_array(ds, GD_ARRAY_FEATURES, &got));
        T_EQ_INT(got.shape[0], want.shape[0]);
        T_EQ_INT(got.shape[1], want.shape[1]);
        T_ASSERT(memcmp(got.data, want.data, (size_t)(NODES * DIM) * sizeof(float)) == 0);
        const gd__stripe_table *t = ds->arrays[GD_ARRAY_FEATURES].stripes;
        T_EQ_INT(mode == 0 && t ? t->nfiles : 0, mode == 0 ? striped_files : 0);
        /* The public view: the files (none once loaded), and the unit when striped. */
        const char *files[4] = {NULL, NULL, NULL, NULL};
        int64_t unit = -1;
        const int nf = gd_dataset_feature_files(ds, files, 4, &unit);
        T_EQ_INT(nf, mode ? 0 : (striped_files ? striped_files : 1));
        T_EQ_INT(unit, mode == 0 && striped_files > 1 ? t->unit_rows : 0);
        for (int f = 0; f < nf; f++)
            T_ASSERT(files[f] && (striped_files ? !strcmp(files[f], t->path[f])
                                                : strstr(files[f], "features.npy") != NULL));
        gd_dataset_close(ds);
    }
}

/* The dataset is as it was: features.npy, no manifest, nothing left in the targets. */
static void untouched(const char *dir, char targets[3][4300], const gd_dataset_t *ref,
                      const char *what, int64_t n) {
    char path[4400];
    snprintf(path, sizeof path, "%s/features.npy", dir);
    if (!exists(path)) T_FAIL_("%s %lld: features.npy is gone", what, (long long)n);
    snprintf(path, sizeof path, "%s/features.stripes", dir);
    if (exists(path)) T_FAIL_("%s %lld: a manifest was left", what, (long long)n);
    for (int k = 1; k < 3; k++)
        if (count_files(targets[k], 0) != 0)
            T_FAIL_("%s %lld: a file was left in %s", what, (long long)n, targets[k]);
    same_features(dir, ref, 0);
}

/* dir generated again and striped over the three targets, emptied first. */
static void fresh_striped(const char *dir, char targets[3][4300], const char *const *tv,
                          const gd_stripe_options *so) {
    t_rmtree(dir);
    make(dir);
    for (int k = 1; k < 3; k++) {
        t_rmtree(targets[k]);
        T_ASSERT(mkdir(targets[k], 0755) == 0);
    }
    T_OK(gd_dataset_stripe(dir, tv, 3, so));
}

static int stop_at_3(void *user, const char *stage, uint64_t done, uint64_t total) {
    (void)user, (void)stage, (void)total;
    return done >= 3;
}

typedef struct {
    double loss[EPOCHS];
    int64_t disk_rows;
    char plan[2048];
} run_result;

static int on_epoch(void *user, const gd_epoch_stats *s) {
    run_result *r = user;
    if (s->epoch >= 0 && s->epoch < EPOCHS) r->loss[s->epoch] = s->loss;
    r->disk_rows += s->disk_rows_read;
    return 0;
}

static run_result train(const gd_dataset_t *ds, int64_t host_budget) {
    gd_train_options o = GD_TRAIN_OPTIONS_INIT;
    o.mode = "cpu";
    o.num_layers = 2;
    o.fanouts[0] = 4;
    o.fanouts[1] = 4;
    o.batch_size = 128;
    o.hidden = 32;
    o.dropout = 0;
    o.seed = 9;
    o.host_mem_budget = host_budget;
    run_result r;
    memset(&r, 0, sizeof r);
    gd_trainer_t *t = NULL;
    T_OK(gd_trainer_create(ds, &o, &t));
    gd_fit_options fo = GD_FIT_OPTIONS_INIT;
    fo.epochs = EPOCHS;
    fo.validate = 0;
    fo.keep_best = 0;
    fo.test = 0;
    fo.exact_test = 0;
    fo.on_epoch = on_epoch;
    fo.on_epoch_user = &r;
    gd_fit_result fr = GD_FIT_RESULT_INIT;
    T_OK(gd_trainer_fit(t, &fo, &fr));
    gd_trainer_info info = GD_TRAINER_INFO_INIT;
    T_OK(gd_trainer_get_info(t, &info));
    snprintf(r.plan, sizeof r.plan, "%s", info.plan);
    gd_trainer_destroy(t);
    return r;
}

#ifdef GD_WITH_CUDA
/* zero-copy loaders on the striped dataset (in memory: the files mapped side by side and
 * registered; from disk: the tier reading the stripe files) give ref's rows, bit for bit. */
static void gpu_loaders(const gd_dataset_t *striped, const gd_dataset_t *ref) {
    const int64_t table = (int64_t)NODES * DIM * 4;
    for (int disk = 0; disk < 2; disk++) {
        gd_loader_options o = GD_LOADER_OPTIONS_INIT;
        o.mode = "zero-copy";
        o.fanouts[0] = 4;
        o.fanouts[1] = 4;
        o.batch_size = 128;
        o.seed = 3;
        gd_loader_t *a = NULL, *b = NULL;
        T_OK(gd_loader_create(ref, &o, &a));
        if (disk) {
            o.host_mem_budget = table * 3 / 4;
            o.gpu_cache_bytes = table / 8;
        }
        T_OK(gd_loader_create(striped, &o, &b));
        gd_loader_info li = GD_LOADER_INFO_INIT;
        T_OK(gd_loader_get_info(b, &li));
        T_EQ_INT(strstr(li.plan, "features on disk") != NULL, disk);
        cudaStream_t stream;
        CU(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        int64_t rows = 0;
        const int64_t batches = t_loaders_same_rows(
            a, b, 2, DIM, stream, disk ? "zero-copy from disk" : "zero-copy in memory", &rows);
        CU(cudaStreamDestroy(stream));
        fprintf(stderr, "zero-copy %s: the striped table's rows = the file's, %lld minibatches\n",
                disk ? "from disk" : "in memory", (long long)batches);
        gd_loader_destroy(b);
        gd_loader_destroy(a);
    }
}
#endif

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    T_ASSERT(f);
    fputs(text, f);
    fclose(f);
}

static char *read_text(const char *path) {
    FILE *f = fopen(path, "r");
    T_ASSERT(f);
    char *buf = calloc(1, 65536);
    T_ASSERT(buf);
    (void)!fread(buf, 1, 65535, f);
    fclose(f);
    return buf;
}

/* Open dir with the manifest replaced by text: fails with status naming needle; restored. */
static void bad_manifest(const char *dir, const char *text, gd_status status, const char *needle) {
    char path[4400];
    snprintf(path, sizeof path, "%s/features.stripes", dir);
    char *good = read_text(path);
    write_text(path, text);
    gd_dataset_open_options oo = GD_DATASET_OPEN_OPTIONS_INIT;
    gd_dataset_t *ds = NULL;
    T_FAILS(gd_dataset_open(dir, &oo, &ds), status, needle);
    write_text(path, good);
    free(good);
}

int main(void) {
    (void)t_seed();
    char root[4096], dir[4200], refdir[4200], targets[3][4300];
    t_tmpdir(root, sizeof root);
    snprintf(dir, sizeof dir, "%s/ds", root);
    snprintf(refdir, sizeof refdir, "%s/ref", root);
    make(dir);
    make(refdir);
    gd_dataset_t *ref = open_ds(refdir, GD_OPEN_MMAP);
    /* Target 0 is the dataset directory itself (its file named relative to it). */
    snprintf(targets[0], sizeof targets[0], "%s", dir);
    for (int k = 1; k < 3; k++) {
        snprintf(targets[k], sizeof targets[k], "%s/disk%d", root, k);
        T_ASSERT(mkdir(targets[k], 0755) == 0);
    }
    const char *tv[3] = {targets[0], targets[1], targets[2]};
    gd_stripe_options so = GD_STRIPE_OPTIONS_INIT;
    so.unit_bytes = 4096; /* 96-byte rows: units of 128 rows (12 KiB, whole pages) */
    T_EQ_INT(gd__stripes_unit_rows(NODES, DIM * 4, 4096), 128);
    T_EQ_INT(gd__stripes_unit_rows(NODES, 4096, 0), 16384);
    T_EQ_INT(gd__stripes_unit_rows((int64_t)1 << 40, 256, 0) * GD__STRIPES_MAX_UNITS >=
                 ((int64_t)1 << 40),
             1);

    /* Refusals, each naming the problem; nothing changes. */
    T_FAILS(gd_dataset_stripe(dir, NULL, 0, &so), GD_ERR_INVALID_ARG, "1 to 64");
    T_FAILS(gd_dataset_stripe(dir, tv, 65, &so), GD_ERR_INVALID_ARG, "1 to 64");
    {
        const char *missing[2] = {targets[1], "/nonexistent/graphdirect-disk"};
        T_FAILS(gd_dataset_stripe(dir, missing, 2, &so), GD_ERR_NOT_FOUND, "graphdirect-disk");
        const char *twice[2] = {targets[1], targets[1]};
        T_FAILS(gd_dataset_stripe(dir, twice, 2, &so), GD_ERR_INVALID_ARG, "given twice");
        gd_stripe_options neg = so;
        neg.unit_bytes = -1;
        T_FAILS(gd_dataset_stripe(dir, tv, 3, &neg), GD_ERR_INVALID_ARG, "unit_bytes");
        T_FAILS(gd_dataset_stripe("/nonexistent/graphdirect-ds", tv, 3, &so), GD_ERR_NOT_FOUND,
                "graphdirect-ds");
    }
    {
        /* A heterogeneous dataset: refused, named. */
        char het[4300];
        snprintf(het, sizeof het, "%s/het", root);
        gd_generate_options go = GD_GENERATE_OPTIONS_INIT;
        go.preset = "mag-tiny";
        go.out_dir = het;
        gd_dataset_t *h = NULL;
        T_OK(gd_generate(&go, &h));
        gd_dataset_close(h);
        const char *one[1] = {targets[1]};
        T_FAILS(gd_dataset_stripe(het, one, 1, &so), GD_ERR_UNSUPPORTED, "heterogeneous");
        t_rmtree(het);
    }
    untouched(dir, targets, ref, "refusals", 0);

    /* An interruption, then every write and allocation fault: the dataset as it was. */
    {
        gd_stripe_options stop = so;
        stop.progress = stop_at_3;
        T_FAILS(gd_dataset_stripe(dir, tv, 3, &stop), GD_ERR_INTERRUPTED, "as it was");
        untouched(dir, targets, ref, "interrupted", 0);
    }
    const gd_fault_kind kinds[2] = {GD_FAULT_WRITE, GD_FAULT_ALLOC};
    /* GD_TEST_STRIPE_FAULTS=0 skips the walks (a sanitizer's run: 400 stripes, host code only)
     * and stripes once. */
    const char *walk = getenv("GD_TEST_STRIPE_FAULTS");
    if (walk && !strcmp(walk, "0")) T_OK(gd_dataset_stripe(dir, tv, 3, &so));
    for (int ki = 0; ki < 2 && !(walk && !strcmp(walk, "0")); ki++) {
        int64_t n = 1;
        for (;; n++) {
            gd_fault_set(kinds[ki], n);
            const gd_status st = gd_dataset_stripe(dir, tv, 3, &so);
            gd_fault_set(kinds[ki], 0);
            if (st == GD_OK) break;
            T_ASSERT(gd_last_error()[0] != '\0');
            untouched(dir, targets, ref, ki ? "alloc fault" : "write fault", n);
            T_ASSERT(n < 500);
        }
        fprintf(stderr, "%s faults: %lld calls, each failed cleanly\n", ki ? "alloc" : "write",
                (long long)n - 1);
        if (ki == 0) { /* striped at the last n: undo by striping back to one file */
            const char *one[1] = {dir};
            T_OK(gd_dataset_stripe(dir, one, 1, &so));
            T_EQ_INT(count_files(targets[1], 0) + count_files(targets[2], 0), 0);
            t_rmtree(dir); /* the plain layout again, for the next walk */
            make(dir);
        }
    }

    /* Striped (by the last fault walk's success): the layout, the files, the same features. */
    {
        char path[4400];
        snprintf(path, sizeof path, "%s/features.npy", dir);
        T_ASSERT(!exists(path));
        snprintf(path, sizeof path, "%s/features.stripes", dir);
        T_ASSERT(exists(path));
        T_EQ_INT(count_files(targets[1], 1), 1);
        T_EQ_INT(count_files(targets[2], 1), 1);
        char *m = read_text(path);
        T_ASSERT(strstr(m, "\"unit_rows\":\t128") != NULL);
        T_ASSERT(strstr(m, targets[1]) != NULL); /* elsewhere: absolute */
        free(m);
        same_features(dir, ref, 3);
    }

    /* Training: cpu in memory and from disk (3/4 of the table) equal the plain file's. */
    {
        gd_dataset_t *ds = open_ds(dir, GD_OPEN_MMAP);
        const int64_t table = (int64_t)NODES * DIM * 4;
        for (int disk = 0; disk < 2; disk++) {
            const run_result a = train(ref, disk ? table * 3 / 4 : 0);
            const run_result b = train(ds, disk ? table * 3 / 4 : 0);
            T_EQ_INT(strstr(b.plan, "features on disk") != NULL, disk);
            T_EQ_INT(b.disk_rows > 0, disk);
            for (int e = 0; e < EPOCHS; e++) T_NEAR(b.loss[e], a.loss[e], 0);
            fprintf(stderr, "cpu %s: striped losses %.9f %.9f = the file's\n",
                    disk ? "from disk" : "in memory", b.loss[0], b.loss[1]);
        }
#ifdef GD_WITH_CUDA
        if (gd_device_count() > 0)
            gpu_loaders(ds, ref);
        else
            fprintf(stderr, "no GPU: the zero-copy part is skipped\n");
#endif
        /* A stripe file changed in place while the dataset is open is found and named. */
        const gd__stripe_table *t = ds->arrays[GD_ARRAY_FEATURES].stripes;
        T_ASSERT(t && t->nfiles == 3);
        int fd = open(t->path[2], O_WRONLY | O_APPEND);
        T_ASSERT(fd >= 0);
        T_ASSERT(write(fd, "x", 1) == 1);
        close(fd);
        T_FAILS(gd__dataset_check_unchanged(ds), GD_ERR_IO, "disk2");
        gd_dataset_close(ds);
    }
    /* Stripe the dataset again from a fresh copy, then damage it one way at a time. */
    fresh_striped(dir, targets, tv, &so);
    same_features(dir, ref, 3);
    bad_manifest(dir, "{ not json", GD_ERR_FORMAT, "features.stripes: not a JSON object");
    bad_manifest(dir, "{\"format\": \"graphdirect-stripes\", \"version\": 9}", GD_ERR_FORMAT,
                 "'version'");
    {
        char path[4400];
        snprintf(path, sizeof path, "%s/features.stripes", dir);
        char *m = read_text(path), *u = strstr(m, "\"unit_rows\":\t128");
        T_ASSERT(u);
        char *edited = malloc(strlen(m) + 8);
        T_ASSERT(edited);
        snprintf(edited, strlen(m) + 8, "%.*s\"unit_rows\":\t256%s", (int)(u - m), m,
                 u + strlen("\"unit_rows\":\t128"));
        bad_manifest(dir, edited, GD_ERR_FORMAT, "the files disagree");
        free(edited);
        free(m);
    }
    {
        /* A missing stripe file: named, with the fix. */
        gd_dataset_t *ds = open_ds(dir, GD_OPEN_MMAP);
        char moved[4500], path[4400];
        snprintf(path, sizeof path, "%s", ds->arrays[GD_ARRAY_FEATURES].stripes->path[1]);
        gd_dataset_close(ds);
        snprintf(moved, sizeof moved, "%s.away", path);
        T_ASSERT(rename(path, moved) == 0);
        gd_dataset_open_options oo = GD_DATASET_OPEN_OPTIONS_INIT;
        T_FAILS(gd_dataset_open(dir, &oo, &ds), GD_ERR_NOT_FOUND, "stripe file 1 of 3");
        T_ASSERT(rename(moved, path) == 0);
        /* Truncated: named as the share its header promises. */
        T_ASSERT(truncate(path, 4096 + 96 * 10) == 0);
        T_FAILS(gd_dataset_open(dir, &oo, &ds), GD_ERR_FORMAT, "disk1");
    }
    /* Striped again (over two, then back to one file): the old files go, the rows stay. */
    fresh_striped(dir, targets, tv, &so);
    const char *two[2] = {targets[2], targets[1]};
    T_OK(gd_dataset_stripe(dir, two, 2, NULL));
    same_features(dir, ref, 2);
    T_EQ_INT(count_files(targets[1], 1) + count_files(targets[2], 1), 2);
    T_EQ_INT(count_files(dir, 1), 6); /* indptr, indices, labels and the splits */
    const char *one[1] = {targets[1]};
    T_OK(gd_dataset_stripe(dir, one, 1, NULL));
    same_features(dir, ref, 1);
    T_EQ_INT(count_files(targets[1], 1), 1);
    T_EQ_INT(count_files(targets[2], 0), 0);

    gd_dataset_close(ref);
    t_rmtree(root);
    t_check_no_leaks();
    fprintf(stderr, "striped features: ok\n");
    return 0;
}
