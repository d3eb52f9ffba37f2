/*
 * Fault injection over dataset directories: every allocation and every file read of
 * gd_dataset_open (both modes), and every allocation and file write of gd_dataset_save and of
 * an on-disk build, is made to fail in turn. Each must fail cleanly: an error with a message,
 * no leaked memory, and no partial output (the target absent, or an overwritten dataset still
 * intact, and no temporary directory left beside it).
 */
#include "io/dataset.h"
#include "test.h"

#include <sys/stat.h>

static const char *kind_name[] = {"alloc", "read", "write", "pin"};

static void live(int64_t *blocks, int64_t *bytes) {
    gd_alloc_stats(blocks, bytes);
}

static int exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

static void no_leftovers(const char *parent, const char *what, int64_t n) {
    char cmd[2200];
    snprintf(cmd, sizeof cmd, "ls -a '%s' | grep -q -e '\\.tmp\\.' -e '\\.old\\.'", parent);
    if (system(cmd) == 0)
        T_FAIL_("%s, fault %lld: a temporary file or directory was left in %s", what, (long long)n,
                parent);
}

/* A small random dataset with every array, built in memory. */
static gd_dataset_t *make(uint64_t *rng) {
    gd_dataset_t *ds;
    int64_t n = 40 + (int64_t)(t_rand(rng) % 60), e = 300, f = 24, c = 3;
    T_OK(gd__dataset_new("faulty", NULL, 0, &ds));
    int64_t s[2] = {n + 1, 0};
    int64_t *ptr;
    T_OK(gd__dataset_alloc(ds, GD_ARRAY_INDPTR, GD_DTYPE_INT64, 1, s, (void **)&ptr));
    for (int64_t v = 0; v <= n; v++) ptr[v] = v * e / n;
    s[0] = e;
    int32_t *idx;
    T_OK(gd__dataset_alloc(ds, GD_ARRAY_INDICES, GD_DTYPE_INT32, 1, s, (void **)&idx));
    for (int64_t i = 0; i < e; i++) idx[i] = (int32_t)(t_rand(rng) % (uint64_t)n);
    int64_t fs[2] = {n, f};
    uint16_t *x;
    T_OK(gd__dataset_alloc(ds, GD_ARRAY_FEATURES, GD_DTYPE_FLOAT16, 2, fs, (void **)&x));
    for (int64_t i = 0; i < n * f; i++) x[i] = gd_float_to_half((float)(t_rand(rng) % 100));
    s[0] = n;
    int64_t *y;
    T_OK(gd__dataset_alloc(ds, GD_ARRAY_LABELS, GD_DTYPE_INT64, 1, s, (void **)&y));
    for (int64_t i = 0; i < n; i++) y[i] = (int64_t)(t_rand(rng) % (uint64_t)c);
    y[0] = c - 1;
    /* The splits are disjoint sets of distinct node ids: three runs of 5 from a random start. */
    const int64_t start = (int64_t)(t_rand(rng) % (uint64_t)(n - 15));
    for (int id = GD_ARRAY_TRAIN_IDX; id <= GD_ARRAY_TEST_IDX; id++) {
        s[0] = 5;
        int64_t *k;
        T_OK(gd__dataset_alloc(ds, (gd_array_id)id, GD_DTYPE_INT64, 1, s, (void **)&k));
        for (int i = 0; i < 5; i++) k[i] = start + (id - GD_ARRAY_TRAIN_IDX) * 5 + i;
    }
    T_OK(gd__dataset_set_info(ds, "source", "test_fault_dataset"));
    T_OK(gd__dataset_finish(ds, 1));
    return ds;
}

/* An on-disk build of a small dataset; returns the first failing status. */
static gd_status build_on_disk(const char *dir) {
    gd_dataset_t *ds = NULL;
    gd_status st = gd__dataset_new(NULL, dir, 0, &ds);
    if (st != GD_OK) return st;
    int64_t s[2] = {2001, 0};
    int64_t *ptr = NULL;
    int32_t *idx = NULL;
    float *x = NULL;
    int64_t *y = NULL;
    st = gd__dataset_alloc(ds, GD_ARRAY_INDPTR, GD_DTYPE_INT64, 1, s, (void **)&ptr);
    if (st == GD_OK) {
        for (int v = 0; v <= 2000; v++) ptr[v] = v;
        s[0] = 2000;
        st = gd__dataset_alloc(ds, GD_ARRAY_INDICES, GD_DTYPE_INT32, 1, s, (void **)&idx);
    }
    if (st == GD_OK) {
        for (int i = 0; i < 2000; i++) idx[i] = (i * 7) % 2000;
        int64_t fs[2] = {2000, 4};
        st = gd__dataset_alloc(ds, GD_ARRAY_FEATURES, GD_DTYPE_FLOAT32, 2, fs, (void **)&x);
    }
    if (st == GD_OK) {
        for (int i = 0; i < 8000; i++) x[i] = (float)i;
        y = gd_malloc(2000 * sizeof *y);
        if (!y) st = GD_ERR_NO_MEMORY;
    }
    if (st == GD_OK) {
        for (int i = 0; i < 2000; i++) y[i] = i % 4;
        s[0] = 2000;
        st = gd__dataset_adopt(ds, GD_ARRAY_LABELS, GD_DTYPE_INT64, 1, s, y);
    }
    if (st == GD_OK) st = gd__dataset_set_info(ds, "k", "v");
    if (st == GD_OK) st = gd__dataset_finish(ds, 1);
    gd_dataset_close(ds);
    return st;
}

int main(void) {
    uint64_t rng = t_seed();
    char root[1024], src[1100], out[1100];
    t_tmpdir(root, sizeof root);
    snprintf(src, sizeof src, "%s/src", root);
    snprintf(out, sizeof out, "%s/out", root);
    gd_dataset_t *ds = make(&rng);
    T_OK(gd_dataset_save(ds, src, 0));
    int64_t blocks, bytes;
    live(&blocks, &bytes);

    /* Opening: every allocation and every read, in both modes. */
    int64_t total_open = 0;
    for (int mode = 0; mode < 2; mode++) {
        for (int kind = GD_FAULT_ALLOC; kind <= GD_FAULT_READ; kind++) {
            gd_dataset_open_options o = GD_DATASET_OPEN_OPTIONS_INIT;
            o.mode = (gd_open_mode)mode;
            /* Every value checked on every open (the first one records the check, and a
             * record would let the later ones skip what the walk counts). */
            o.validate_graph = 2;
            gd_dataset_t *d = NULL;
            gd_fault_set((gd_fault_kind)kind, 0);
            T_OK(gd_dataset_open(src, &o, &d));
            gd_dataset_close(d);
            int64_t calls = gd_fault_calls((gd_fault_kind)kind);
            T_ASSERT(calls > 0);
            for (int64_t n = 1; n <= calls; n++) {
                gd_fault_set((gd_fault_kind)kind, n);
                gd_clear_error();
                d = (gd_dataset_t *)1;
                gd_status st = gd_dataset_open(src, &o, &d);
                gd_fault_set((gd_fault_kind)kind, 0);
                if (st == GD_OK)
                    T_FAIL_("open (mode %d) with %s fault %lld of %lld succeeded", mode,
                            kind_name[kind], (long long)n, (long long)calls);
                T_ASSERT(d == NULL);
                T_ASSERT(strlen(gd_last_error()) > 0);
                t_same_live(blocks, bytes, "open", n);
            }
            total_open += calls;
        }
    }

    /* Saving to a new directory: every allocation and every write. */
    int64_t total_save = 0;
    for (int kind = GD_FAULT_ALLOC; kind <= GD_FAULT_WRITE; kind += 2) {
        gd_fault_set((gd_fault_kind)kind, 0);
        T_OK(gd_dataset_save(ds, out, 0));
        int64_t calls = gd_fault_calls((gd_fault_kind)kind);
        t_rmtree(out);
        T_ASSERT(calls > 0);
        for (int64_t n = 1; n <= calls; n++) {
            gd_fault_set((gd_fault_kind)kind, n);
            gd_clear_error();
            gd_status st = gd_dataset_save(ds, out, 0);
            gd_fault_set((gd_fault_kind)kind, 0);
            if (st == GD_OK)
                T_FAIL_("save with %s fault %lld of %lld succeeded", kind_name[kind], (long long)n,
                        (long long)calls);
            T_ASSERT(strlen(gd_last_error()) > 0);
            if (exists(out))
                T_FAIL_("save with %s fault %lld left %s", kind_name[kind], (long long)n, out);
            no_leftovers(root, "save", n);
            t_same_live(blocks, bytes, "save", n);
        }
        total_save += calls;

        /* Overwriting an existing dataset: a failure leaves the old one intact. */
        gd_fault_set((gd_fault_kind)kind, 0);
        T_OK(gd_dataset_save(ds, src, 1));
        calls = gd_fault_calls((gd_fault_kind)kind);
        for (int64_t n = 1; n <= calls; n++) {
            gd_fault_set((gd_fault_kind)kind, n);
            gd_status st = gd_dataset_save(ds, src, 1);
            gd_fault_set((gd_fault_kind)kind, 0);
            T_ASSERT(st != GD_OK);
            no_leftovers(root, "overwrite", n);
            t_same_live(blocks, bytes, "overwrite", n);
            gd_dataset_t *d = NULL;
            T_OK(gd_dataset_open(src, NULL, &d));
            T_EQ_INT(gd_dataset_num_nodes(d), gd_dataset_num_nodes(ds));
            gd_dataset_close(d);
        }
        total_save += calls;
    }

    /* An on-disk build: every allocation, write and read. */
    int64_t total_build = 0;
    for (int kind = GD_FAULT_ALLOC; kind <= GD_FAULT_WRITE; kind++) {
        gd_fault_set((gd_fault_kind)kind, 0);
        T_OK(build_on_disk(out));
        int64_t calls = gd_fault_calls((gd_fault_kind)kind);
        t_rmtree(out);
        for (int64_t n = 1; n <= calls; n++) {
            gd_fault_set((gd_fault_kind)kind, n);
            gd_status st = build_on_disk(out);
            gd_fault_set((gd_fault_kind)kind, 0);
            if (st == GD_OK)
                T_FAIL_("on-disk build with %s fault %lld of %lld succeeded", kind_name[kind],
                        (long long)n, (long long)calls);
            if (exists(out))
                T_FAIL_("build with %s fault %lld left %s", kind_name[kind], (long long)n, out);
            no_leftovers(root, "build", n);
            t_same_live(blocks, bytes, "build", n);
        }
        total_build += calls;
    }

    gd_dataset_close(ds);
    t_rmtree(root);
    t_check_no_leaks();
    printf("test_fault_dataset: ok (%lld open, %lld save, %lld build fault points)\n",
           (long long)total_open, (long long)total_save, (long long)total_build);
    return 0;
}
