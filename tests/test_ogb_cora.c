/*
 * OGB raw layout on the real Cora graph (../shared/data/cora): convert with symmetrize and
 * compare every array with what an independent, deliberately simple reader (gzgets + strtol /
 * strtof, a sort of all edge pairs) makes of the same gz files. Then corrupted copies of the
 * folder (truncated gzip, a bad number, NaN, a label out of range, an edge id >= the node
 * count, a short row, a missing split file) must each be rejected with a message naming the
 * file and the line. Skipped (77) if the data is absent.
 */
#include "test.h"

#include <sys/stat.h>
#include <zlib.h>

#define CORA GD_SHARED_DATA "/cora"

/* ---- the independent reader: a whole gz file as text */
static char *gz_text(const char *path, size_t *len) {
    gzFile g = gzopen(path, "rb");
    if (!g) T_FAIL_("cannot open %s", path);
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap);
    int got;
    while ((got = gzread(g, buf + n, (unsigned)(cap - n - 1))) > 0) {
        n += (size_t)got;
        if (cap - n < 2) buf = realloc(buf, cap *= 2);
    }
    gzclose(g);
    buf[n] = '\0';
    if (len) *len = n;
    return buf;
}

/* Numbers of a text, one line after another, split at commas and newlines. */
static int64_t *ints_of(const char *text, int64_t *count) {
    int64_t cap = 1024, n = 0;
    int64_t *v = malloc(sizeof(int64_t) * (size_t)cap);
    const char *p = text;
    while (*p) {
        char *end;
        long long x = strtoll(p, &end, 10);
        if (end == p) T_FAIL_("reference reader: not a number at '%.10s'", p);
        if (n == cap) v = realloc(v, sizeof(int64_t) * (size_t)(cap *= 2));
        v[n++] = x;
        p = end;
        while (*p == ',' || *p == '\n' || *p == '\r') p++;
    }
    *count = n;
    return v;
}

static int cmp_pair(const void *a, const void *b) {
    const int64_t *x = a, *y = b;
    if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
    return (x[1] > y[1]) - (x[1] < y[1]);
}

static int64_t at(const gd_array_view *v, int64_t i) {
    return v->dtype == GD_DTYPE_INT32 ? ((const int32_t *)v->data)[i]
                                      : ((const int64_t *)v->data)[i];
}

/* ---- corrupted copies */
typedef struct {
    const char *rel;
    char *text;
    size_t len;
} cora_file;

static const char *const rels[] = {"raw/edge.csv.gz",           "raw/node-feat.csv.gz",
                                   "raw/node-label.csv.gz",     "raw/num-node-list.csv.gz",
                                   "raw/num-edge-list.csv.gz",  "split/random/train.csv.gz",
                                   "split/random/valid.csv.gz", "split/random/test.csv.gz"};
#define NFILES 8

static void write_gz(const char *path, const char *text, size_t len) {
    gzFile g = gzopen(path, "wb1");
    if (!g) T_FAIL_("cannot create %s", path);
    if (len && gzwrite(g, text, (unsigned)len) != (int)len) T_FAIL_("cannot write %s", path);
    gzclose(g);
}

/* Write the folder with file `which` replaced: its line `line` (1-based) becomes `repl`
 * (NULL: keep the text); truncate_to >= 0 cuts the compressed file to that many bytes. */
static void make_copy(const char *dir, const cora_file *files, int which, int64_t line,
                      const char *repl, long truncate_to) {
    char path[4200];
    snprintf(path, sizeof path, "rm -rf '%s' && mkdir -p '%s/raw' '%s/split/random'", dir, dir,
             dir);
    T_ASSERT(system(path) == 0);
    for (int i = 0; i < NFILES; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i].rel);
        if (i != which || !repl) {
            write_gz(path, files[i].text, files[i].len);
        } else {
            const char *p = files[i].text;
            for (int64_t l = 1; l < line; l++) p = strchr(p, '\n') + 1;
            const char *q = strchr(p, '\n');
            size_t head = (size_t)(p - files[i].text), rl = strlen(repl);
            size_t tail = files[i].len - (size_t)(q - files[i].text);
            char *t = malloc(head + rl + tail + 1);
            memcpy(t, files[i].text, head);
            memcpy(t + head, repl, rl);
            memcpy(t + head + rl, q, tail);
            write_gz(path, t, head + rl + tail);
            free(t);
        }
        if (i == which && truncate_to >= 0) T_ASSERT(truncate(path, truncate_to) == 0);
    }
}

static void expect_rejected(const char *dir, gd_status status, const char *needle1,
                            const char *needle2) {
    gd_convert_options o = GD_CONVERT_OPTIONS_INIT;
    o.symmetrize = 1;
    t_convert_rejected(dir, &o, status, needle1, needle2);
}

int main(void) {
    struct stat sb;
    if (stat(CORA "/raw/edge.csv.gz", &sb) != 0) {
        printf("skip: %s not found\n", CORA);
        return GD_TEST_SKIP;
    }
    uint64_t rng = t_seed();
    T_OK(gd_param_set("GD_THREADS", (t_rand(&rng) & 1) ? "1" : "2"));

    gd_convert_options o = GD_CONVERT_OPTIONS_INIT;
    o.symmetrize = 1;
    gd_dataset_t *ds = NULL;
    T_OK(gd_convert(CORA, &o, &ds));
    T_EQ_STR(gd_dataset_name(ds), "cora");
    T_EQ_INT(gd_dataset_num_nodes(ds), 2708);
    T_EQ_INT(gd_dataset_feature_dim(ds), 1433);
    T_EQ_INT(gd_dataset_num_classes(ds), 7);

    /* the graph, against all (src, dst) and (dst, src) pairs sorted by (dst, src), deduped */
    char *text = gz_text(CORA "/raw/edge.csv.gz", NULL);
    int64_t ne2;
    int64_t *e = ints_of(text, &ne2);
    free(text);
    int64_t ne = ne2 / 2;
    T_EQ_INT(ne, 5429);
    int64_t *pairs = malloc(sizeof(int64_t) * 4 * (size_t)ne);
    for (int64_t i = 0; i < ne; i++) {
        pairs[4 * i] = e[2 * i + 1], pairs[4 * i + 1] = e[2 * i];     /* (dst, src) */
        pairs[4 * i + 2] = e[2 * i], pairs[4 * i + 3] = e[2 * i + 1]; /* reverse */
    }
    qsort(pairs, (size_t)(2 * ne), 2 * sizeof(int64_t), cmp_pair);
    int64_t m = 0;
    for (int64_t i = 0; i < 2 * ne; i++) {
        if (i > 0 && !cmp_pair(&pairs[2 * i], &pairs[2 * i - 2])) continue;
        pairs[2 * m] = pairs[2 * i], pairs[2 * m + 1] = pairs[2 * i + 1], m++;
    }
    printf("cora: %lld directed edges, %lld after symmetrize + dedupe\n", (long long)ne,
           (long long)m);
    T_EQ_INT(gd_dataset_num_edges(ds), m);
    T_EQ_INT(m, 10556);
    gd_array_view ip, ix;
    T_OK(gd_dataset_array(ds, GD_ARRAY_INDPTR, &ip));
    T_OK(gd_dataset_array(ds, GD_ARRAY_INDICES, &ix));
    T_EQ_INT(ix.dtype, GD_DTYPE_INT32);
    for (int64_t i = 0; i < m; i++) {
        int64_t v = pairs[2 * i];
        T_ASSERT(at(&ip, v) <= i && i < at(&ip, v + 1));
        if (at(&ix, i) != pairs[2 * i + 1]) T_EQ_INT(at(&ix, i), pairs[2 * i + 1]);
    }
    free(pairs);
    free(e);

    /* features: every value, parsed by strtof */
    gd_array_view fv;
    T_OK(gd_dataset_array(ds, GD_ARRAY_FEATURES, &fv));
    T_EQ_INT(fv.dtype, GD_DTYPE_FLOAT32);
    T_EQ_INT(fv.shape[0], 2708);
    T_EQ_INT(fv.shape[1], 1433);
    text = gz_text(CORA "/raw/node-feat.csv.gz", NULL);
    const char *p = text;
    double row0_sum = 0;
    for (int64_t i = 0; i < 2708 * 1433; i++) {
        char *end;
        float x = strtof(p, &end);
        T_ASSERT(end != p);
        if (((const float *)fv.data)[i] != x) T_NEAR(((const float *)fv.data)[i], x, 0);
        if (i < 1433) row0_sum += x;
        p = end;
        while (*p == ',' || *p == '\n') p++;
    }
    T_ASSERT(*p == '\0');
    printf("cora: features row 0 has %g ones\n", row0_sum);
    free(text);

    /* labels and splits */
    gd_array_view lv;
    T_OK(gd_dataset_array(ds, GD_ARRAY_LABELS, &lv));
    text = gz_text(CORA "/raw/node-label.csv.gz", NULL);
    int64_t nl;
    int64_t *labels = ints_of(text, &nl);
    free(text);
    T_EQ_INT(nl, 2708);
    T_EQ_INT(lv.shape[0], 2708);
    for (int64_t i = 0; i < nl; i++) T_EQ_INT(at(&lv, i), labels[i]);
    free(labels);
    const char *split_files[3] = {CORA "/split/random/train.csv.gz",
                                  CORA "/split/random/valid.csv.gz",
                                  CORA "/split/random/test.csv.gz"};
    const int64_t split_sizes[3] = {1624, 542, 542};
    for (int k = 0; k < 3; k++) {
        gd_array_view sv;
        T_OK(gd_dataset_array(ds, (gd_array_id)(GD_ARRAY_TRAIN_IDX + k), &sv));
        text = gz_text(split_files[k], NULL);
        int64_t ns;
        int64_t *ids = ints_of(text, &ns);
        free(text);
        T_EQ_INT(sv.shape[0], split_sizes[k]);
        T_EQ_INT(ns, split_sizes[k]);
        for (int64_t i = 0; i < ns; i++) T_EQ_INT(at(&sv, i), ids[i]);
        free(ids);
    }
    gd_array_view fv32 = fv;
    float *f32 = malloc(sizeof(float) * 2708 * 1433);
    memcpy(f32, fv32.data, sizeof(float) * 2708 * 1433);
    gd_dataset_close(ds);

    /* without symmetrize: the directed graph; with bfloat16 and float16 features */
    gd_dtype dts[2] = {GD_DTYPE_BFLOAT16, GD_DTYPE_FLOAT16};
    for (int k = 0; k < 2; k++) {
        gd_convert_options o2 = GD_CONVERT_OPTIONS_INIT;
        o2.feature_dtype = dts[k];
        o2.split = "random";
        T_OK(gd_convert(CORA "/", &o2, &ds));
        T_EQ_INT(gd_dataset_num_edges(ds), 5429);
        T_OK(gd_dataset_array(ds, GD_ARRAY_FEATURES, &fv));
        T_EQ_INT(fv.dtype, dts[k]);
        for (int64_t i = 0; i < 2708 * 1433; i += 97) {
            uint16_t want = k == 0 ? gd_float_to_bfloat16(f32[i]) : gd_float_to_half(f32[i]);
            T_EQ_INT(((const uint16_t *)fv.data)[i], want);
        }
        gd_dataset_close(ds);
    }
    free(f32);
    o.split = "fixed";
    T_FAILS(gd_convert(CORA, &o, &ds), GD_ERR_NOT_FOUND, "split 'fixed' not found");
    o.split = NULL;
    o.num_nodes = 3000;
    T_FAILS(gd_convert(CORA, &o, &ds), GD_ERR_INVALID_ARG, "num-node-list.csv.gz");
    o.num_nodes = 0;
    t_check_no_leaks();

    /* every failing file read is a clean error without leaks */
    gd_fault_set(GD_FAULT_READ, 0);
    T_OK(gd_convert(CORA, &o, &ds));
    gd_dataset_close(ds);
    int64_t reads = gd_fault_calls(GD_FAULT_READ);
    T_ASSERT(reads >= 8);
    for (int64_t k = 1; k <= reads; k++) {
        gd_fault_set(GD_FAULT_READ, k);
        gd_status s = gd_convert(CORA, &o, &ds);
        gd_fault_set(GD_FAULT_READ, 0);
        if (s != GD_ERR_IO)
            T_FAIL_("read fault %lld: %s: %s", (long long)k, gd_status_string(s), gd_last_error());
        T_ASSERT(strstr(gd_last_error(), "injected fault"));
        t_check_no_leaks();
    }

    /* corrupted copies */
    cora_file files[NFILES];
    for (int i = 0; i < NFILES; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", CORA, rels[i]);
        files[i].rel = rels[i];
        files[i].text = gz_text(path, &files[i].len);
    }
    char tmp[256], dir[300], want[64];
    t_tmpdir(tmp, sizeof tmp);
    snprintf(dir, sizeof dir, "%s/cora", tmp);

    make_copy(dir, files, -1, 0, NULL, -1); /* an intact copy converts */
    T_OK(gd_convert(dir, &o, &ds));
    T_EQ_INT(gd_dataset_num_edges(ds), 10556);
    gd_dataset_close(ds);

    struct stat gz;
    char epath[400];
    snprintf(epath, sizeof epath, "%s/raw/node-feat.csv.gz", dir);
    T_ASSERT(stat(epath, &gz) == 0);
    make_copy(dir, files, 1, 0, NULL, (long)gz.st_size / 2); /* truncated gzip */
    expect_rejected(dir, GD_ERR_FORMAT, "node-feat.csv.gz", "truncated");
    make_copy(dir, files, 0, 0, NULL, 40);
    expect_rejected(dir, GD_ERR_FORMAT, "edge.csv.gz", "truncated");

    int64_t line = 2 + (int64_t)(t_rand(&rng) % 2000);
    snprintf(want, sizeof want, "node-feat.csv.gz:%lld:", (long long)line);
    char row[8192];
    snprintf(row, sizeof row, "0,1,0x,1");
    for (int i = 4; i < 1433; i++) strcat(row, ",0");
    make_copy(dir, files, 1, line, row, -1); /* a bad number */
    expect_rejected(dir, GD_ERR_FORMAT, want, "'0x'");
    snprintf(row, sizeof row, "0,nan");
    for (int i = 2; i < 1433; i++) strcat(row, ",0");
    make_copy(dir, files, 1, line, row, -1); /* NaN */
    expect_rejected(dir, GD_ERR_FORMAT, want, "NaN");
    snprintf(row, sizeof row, "0,1");
    make_copy(dir, files, 1, line, row, -1); /* a short row */
    expect_rejected(dir, GD_ERR_FORMAT, want, "2 columns, expected 1433");

    snprintf(want, sizeof want, "node-label.csv.gz:%lld:", (long long)line);
    make_copy(dir, files, 2, line, "-5", -1); /* a label out of range */
    expect_rejected(dir, GD_ERR_RANGE, want, "label -5 is out of range");
    make_copy(dir, files, 2, line, "seven", -1);
    expect_rejected(dir, GD_ERR_FORMAT, want, "'seven'");

    line = 1 + (int64_t)(t_rand(&rng) % 5429);
    snprintf(want, sizeof want, "edge.csv.gz:%lld:", (long long)line);
    make_copy(dir, files, 0, line, "17,2708", -1); /* an edge id >= the node count */
    expect_rejected(dir, GD_ERR_RANGE, want, "node id 2708 is outside [0, 2708)");
    make_copy(dir, files, 0, line, "17,-3", -1);
    expect_rejected(dir, GD_ERR_RANGE, want, "-3 is negative");
    make_copy(dir, files, 0, line, "17 3", -1);
    expect_rejected(dir, GD_ERR_FORMAT, want, "1 columns, expected 2");

    make_copy(dir, files, 4, 1, "5430", -1); /* counts that disagree */
    expect_rejected(dir, GD_ERR_FORMAT, "edge.csv.gz has 5429 edges", "says 5430");
    snprintf(want, sizeof want, "test.csv.gz:%d:", 3);
    make_copy(dir, files, 7, 3, "99999", -1); /* a split id out of range */
    expect_rejected(dir, GD_ERR_RANGE, want, "99999 is outside [0, 2708)");
    /* Issue 13, item 3 (regress_duplicate_id_in_split_passes_validate): a node id twice in a
     * split, or in two splits, was converted; training then failed at a later epoch. */
    char first[16], dup[128];
    snprintf(first, sizeof first, "%.*s", (int)strcspn(files[5].text, "\n"), files[5].text);
    make_copy(dir, files, 5, 3, first, -1);
    snprintf(dup, sizeof dup, "train_idx.npy: node id %s appears at positions 0 and 2", first);
    expect_rejected(dir, GD_ERR_FORMAT, dup, "deduplicate the train split");
    make_copy(dir, files, 7, 3, first, -1);
    snprintf(dup, sizeof dup, "test_idx.npy: node id %s at position 2 is also in the train split",
             first);
    expect_rejected(dir, GD_ERR_FORMAT, dup, "disjoint");
    make_copy(dir, files, -1, 0, NULL, -1);
    snprintf(epath, sizeof epath, "%s/split/random/valid.csv.gz", dir);
    T_ASSERT(unlink(epath) == 0); /* a missing split file */
    expect_rejected(dir, GD_ERR_NOT_FOUND, "valid.csv.gz is missing", NULL);

    t_rmtree(tmp);
    for (int i = 0; i < NFILES; i++) free(files[i].text);
    T_OK(gd_param_set("GD_THREADS", NULL));
    t_check_no_leaks();
    printf("ogb cora ok\n");
    return 0;
}
