/*
 * The record of a full validation (.validated, issue 19 item 2): the first open of a dataset
 * directory checks every value and records the files; the next opens find the files unchanged
 * and check the sizes only; a file changed in place (same size, a corrupt index) makes the
 * record stale and is caught; validate_graph 2 always checks; a garbage record is ignored.
 */
#include "test.h"

#include <sys/stat.h>

static int checked_before; /* the info log said the record was used */

static void sink(gd_log_level level, const char *message, void *user) {
    (void)level;
    (void)user;
    if (strstr(message, "checked before")) checked_before = 1;
}

static gd_status open_ds(const char *dir, int validate, gd_dataset_t **ds) {
    gd_dataset_open_options oo = GD_DATASET_OPEN_OPTIONS_INIT;
    oo.validate_graph = validate;
    checked_before = 0;
    *ds = NULL;
    return gd_dataset_open(dir, &oo, ds);
}

static void write_at(const char *path, long offset, const void *data, size_t n) {
    FILE *f = fopen(path, "r+b");
    T_ASSERT(f != NULL);
    T_ASSERT(fseek(f, offset, SEEK_SET) == 0);
    T_ASSERT(fwrite(data, 1, n, f) == n);
    T_ASSERT(fclose(f) == 0);
}

int main(void) {
    const uint64_t seed = t_seed();
    char tmp[512], dir[600], rec[700], idx[700];
    t_tmpdir(tmp, sizeof tmp);
    snprintf(dir, sizeof dir, "%s/ds", tmp);
    snprintf(rec, sizeof rec, "%s/.validated", dir);
    snprintf(idx, sizeof idx, "%s/indices.npy", dir);
    gd_generate_options go = GD_GENERATE_OPTIONS_INIT;
    go.preset = "tiny";
    go.seed = seed % 1000;
    go.out_dir = dir;
    gd_dataset_t *ds = NULL;
    T_OK(gd_generate(&go, &ds));
    gd_dataset_close(ds);
    T_OK(gd_param_set("GD_LOG_LEVEL", "info"));
    gd_log_set(sink, NULL);

    /* First open: every value checked, the record written. */
    struct stat sb;
    T_OK(open_ds(dir, 1, &ds));
    T_ASSERT(!checked_before);
    T_ASSERT(stat(rec, &sb) == 0);
    const int64_t e = gd_dataset_num_edges(ds), n = gd_dataset_num_nodes(ds);
    gd_array_view v;
    T_OK(gd_dataset_array(ds, GD_ARRAY_INDICES, &v));
    const size_t es = gd_dtype_size(v.dtype);
    gd_dataset_close(ds);

    /* Second open: the record matches, the sizes only are checked. */
    T_OK(open_ds(dir, 1, &ds));
    T_ASSERT(checked_before);
    gd_dataset_close(ds);
    /* validate_graph 2 checks every value anyway; 0 never uses or writes the record. */
    T_OK(open_ds(dir, 2, &ds));
    T_ASSERT(!checked_before);
    gd_dataset_close(ds);

    /* An index changed in place, same size: the record is stale and the bad index is found. */
    struct stat isb;
    T_ASSERT(stat(idx, &isb) == 0);
    const long at = (long)isb.st_size - (long)((e / 2 + 1) * (int64_t)es);
    unsigned char keep[8], bad[8];
    FILE *f = fopen(idx, "rb");
    T_ASSERT(f && fseek(f, at, SEEK_SET) == 0 && fread(keep, 1, es, f) == es);
    fclose(f);
    const int64_t big = n + 7;
    memcpy(bad, &big, es); /* little endian: the low bytes of n + 7 */
    write_at(idx, at, bad, es);
    T_FAILS(open_ds(dir, 1, &ds), GD_ERR_RANGE, "outside [0,");
    T_ASSERT(!checked_before);
    fprintf(stderr, "changed in place: %s\n", gd_last_error());
    /* Restored: checked again (its times moved), then recorded again. */
    write_at(idx, at, keep, es);
    T_OK(open_ds(dir, 1, &ds));
    T_ASSERT(!checked_before);
    gd_dataset_close(ds);
    T_OK(open_ds(dir, 1, &ds));
    T_ASSERT(checked_before);
    gd_dataset_close(ds);

    /* A garbage record is no record. */
    f = fopen(rec, "w");
    T_ASSERT(f && fputs("graphdirect validated 1\nmeta.json 1 2 3 4 5\n", f) >= 0);
    fclose(f);
    T_OK(open_ds(dir, 1, &ds));
    T_ASSERT(!checked_before);
    gd_dataset_close(ds);

    gd_log_set(NULL, NULL);
    T_OK(gd_param_set("GD_LOG_LEVEL", NULL));
    t_rmtree(tmp);
    t_check_no_leaks();
    fprintf(stderr, "validation record: ok\n");
    return 0;
}
