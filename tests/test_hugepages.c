/*
 * Huge pages for the large tables the library allocates (src/core/hugepages.h, issue 16). CPU
 * only: a table of 2 MiB or more is 2 MiB-aligned, whole 2 MiB pages long, zero-filled and
 * writable, advised MADV_HUGEPAGE (or MADV_NOHUGEPAGE under GD_HUGEPAGES=0, never the other);
 * a small one is a page-rounded mapping with no advice; an injected allocation fault is a clean
 * GD_ERR_NO_MEMORY naming the table; what /proc says about the pages is within the mapping's
 * size; and the tables that use it (host tensors, the in-memory generator's arrays, arrays a
 * dataset loads into memory) come 2 MiB-aligned, while a dataset mapped from its files keeps
 * the file's mapping. Whether the kernel actually backs a table with huge pages depends on its
 * THP setting, so the test prints that and does not assert it.
 */
#include "core/hugepages.h"
#include "test.h"

#define MIB ((size_t)1 << 20)

static int aligned_2m(const void *p) { return ((uintptr_t)p & (GD__HUGE_PAGE_BYTES - 1)) == 0; }

static void check_map(void) {
    void *p = NULL;
    size_t len = 0;
    int advice = 7;
    char thp[32];
    /* A big table: aligned, whole huge pages, zero-filled, advised. */
    T_OK(gd__table_map(3 * MIB + 5, "a test table", &p, &len, &advice));
    T_ASSERT(aligned_2m(p));
    T_EQ_INT((int64_t)len, (int64_t)(4 * MIB));
    T_ASSERT(advice == 1 || advice == 0); /* 0: a kernel without THP refuses the advice */
    const unsigned char *b = p;
    for (size_t i = 0; i < len; i += 4096) T_EQ_INT(b[i], 0);
    memset(p, 0x5a, len);
    const int64_t huge = gd__huge_bytes(p, len);
    T_ASSERT(huge <= (int64_t)len);
    fprintf(stderr, "THP %s: advice %d, %lld of %zu bytes on huge pages\n",
            gd__thp_mode(thp, sizeof thp), advice, (long long)huge, len);
    T_ASSERT(!strcmp(thp, "always") || !strcmp(thp, "madvise") || !strcmp(thp, "never") ||
             !strcmp(thp, "unknown"));
    gd__table_unmap(p, len);
    /* A small one: a page-rounded mapping, no advice. */
    T_OK(gd__table_map(100, "a small table", &p, &len, &advice));
    T_EQ_INT(advice, 0);
    T_ASSERT(len >= 100 && len < GD__HUGE_PAGE_BYTES);
    memset(p, 1, 100);
    gd__table_unmap(p, len);
    /* GD_HUGEPAGES=0: 4 KiB pages asked for, never huge ones. */
    T_OK(gd_param_set("GD_HUGEPAGES", "0"));
    T_OK(gd__table_map(5 * MIB, "a table without huge pages", &p, &len, &advice));
    T_ASSERT(advice == -1 || advice == 0);
    T_ASSERT(aligned_2m(p));
    gd__table_unmap(p, len);
    T_OK(gd_param_set("GD_HUGEPAGES", NULL));
    /* An injected allocation fault names the table. */
    gd_fault_set(GD_FAULT_ALLOC, 1);
    p = (void *)1;
    T_FAILS(gd__table_map(8 * MIB, "the fault table", &p, &len, &advice), GD_ERR_NO_MEMORY,
            "the fault table");
    T_ASSERT(p == NULL && len == 0);
    gd_fault_set(GD_FAULT_ALLOC, 0);
}

static void check_users(uint64_t seed) {
    /* A host tensor of 4 MiB + a row. */
    gd_host_tensor_t *t = NULL;
    T_OK(gd_host_tensor_create(4097, 256, GD_DTYPE_FLOAT32, 0, &t));
    T_ASSERT(aligned_2m(gd_host_tensor_data(t)));
    memset(gd_host_tensor_data(t), 3, 4097 * 1024);
    gd_host_tensor_destroy(t);

    /* The in-memory generator's features of 3 MiB. */
    gd_generate_options go = GD_GENERATE_OPTIONS_INIT;
    go.preset = "tiny";
    go.seed = seed % 1000;
    go.num_nodes = 3072;
    go.feature_dim = 256;
    gd_dataset_t *ds = NULL;
    T_OK(gd_generate(&go, &ds));
    gd_array_view fv;
    T_OK(gd_dataset_array(ds, GD_ARRAY_FEATURES, &fv));
    T_ASSERT(aligned_2m(fv.data));
    /* Saved, then opened mapped (the file's pages, left alone) and loaded (a table of ours). */
    char dir[4096];
    t_tmpdir(dir, sizeof dir);
    char path[4200];
    snprintf(path, sizeof path, "%s/ds", dir);
    T_OK(gd_dataset_save(ds, path, 0));
    gd_dataset_open_options oo = GD_DATASET_OPEN_OPTIONS_INIT;
    gd_dataset_t *mapped = NULL, *loaded = NULL;
    T_OK(gd_dataset_open(path, &oo, &mapped));
    oo.mode = GD_OPEN_LOAD;
    T_OK(gd_dataset_open(path, &oo, &loaded));
    gd_array_view mv, lv;
    T_OK(gd_dataset_array(mapped, GD_ARRAY_FEATURES, &mv));
    T_OK(gd_dataset_array(loaded, GD_ARRAY_FEATURES, &lv));
    T_ASSERT(aligned_2m(lv.data));
    T_ASSERT(((uintptr_t)mv.data & 4095) == 0); /* the .npy's data at its 4 KiB offset */
    const size_t bytes = (size_t)(fv.shape[0] * fv.shape[1]) * 4;
    T_ASSERT(memcmp(fv.data, lv.data, bytes) == 0 && memcmp(fv.data, mv.data, bytes) == 0);
    gd_dataset_close(mapped);
    gd_dataset_close(loaded);
    gd_dataset_close(ds);
    t_rmtree(dir);
}

int main(void) {
    const uint64_t seed = t_seed();
    check_map();
    check_users(seed);
    t_check_no_leaks();
    fprintf(stderr, "huge page checks passed\n");
    return 0;
}
