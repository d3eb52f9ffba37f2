/*
 * Edge-list input: fresh random edge lists written with comments ('#', '%'), blank lines, tabs
 * and spaces, CRLF line ends, extra weight columns and a gzip variant, converted and compared
 * with the edges as generated; the buffer parser fed in random chunks must give the same result
 * as in one piece; relabelling maps ids in order of first appearance; malformed lines are
 * rejected with the file and line number. Also the .npy folder input (edge_index.npy or
 * src.npy + dst.npy with features, labels and splits).
 */
#include "io/ingest.h"
#include "test.h"

#include <unistd.h>
#include <zlib.h>

typedef struct {
    int64_t n, e;
    int64_t *src, *dst;
} edges;

static edges random_edges(uint64_t *rng, int64_t max_nodes) {
    edges g;
    g.n = 1 + (int64_t)(t_rand(rng) % (uint64_t)max_nodes);
    g.e = (int64_t)(t_rand(rng) % 3000);
    g.src = malloc(sizeof(int64_t) * (size_t)(g.e + 1));
    g.dst = malloc(sizeof(int64_t) * (size_t)(g.e + 1));
    for (int64_t i = 0; i < g.e; i++) {
        g.src[i] = (int64_t)(t_rand(rng) % (uint64_t)g.n);
        g.dst[i] = (int64_t)(t_rand(rng) % (uint64_t)g.n);
    }
    return g;
}

/* The text of an edge list in a random mix of the accepted styles; *lines gets, for each edge,
 * the line it is on. */
static char *edge_text(const edges *g, uint64_t *rng, size_t *len, int64_t *lines) {
    size_t cap = 256 + (size_t)g->e * 80, n = 0;
    char *t = malloc(cap);
    int64_t line = 0;
    int crlf = t_rand(rng) & 1;
    const char *nl = crlf ? "\r\n" : "\n";
    n += (size_t)snprintf(t + n, cap - n, "# Directed graph: random%s%% FromNodeId\tToNodeId%s",
                          nl, nl);
    line += 2;
    for (int64_t i = 0; i < g->e; i++) {
        uint64_t r = t_rand(rng);
        if (r % 17 == 0) n += (size_t)snprintf(t + n, cap - n, "%s", nl), line++;
        if (r % 23 == 0)
            n += (size_t)snprintf(t + n, cap - n, "  # comment %d%s", (int)i, nl), line++;
        const char *sep = (r >> 8) % 3 == 0 ? "\t" : (r >> 8) % 3 == 1 ? " " : " \t  ";
        const char *lead = (r >> 12) % 5 == 0 ? "  " : "";
        line++;
        lines[i] = line;
        if ((r >> 16) % 4 == 0)
            n += (size_t)snprintf(t + n, cap - n, "%s%lld%s%lld%s%.3f%s", lead,
                                  (long long)g->src[i], sep, (long long)g->dst[i], sep,
                                  (double)(r % 1000) / 7.0, nl);
        else
            n += (size_t)snprintf(t + n, cap - n, "%s%lld%s%lld%s%s", lead, (long long)g->src[i],
                                  sep, (long long)g->dst[i], (r >> 20) % 7 == 0 ? " " : "", nl);
    }
    if (t_rand(rng) & 1 && n >= strlen(nl)) n -= strlen(nl); /* no newline after the last line */
    *len = n;
    return t;
}

static void write_file(const char *path, const char *text, size_t len, int gz) {
    if (gz) {
        gzFile g = gzopen(path, "wb");
        T_ASSERT(g);
        if (len) T_EQ_INT(gzwrite(g, text, (unsigned)len), (int)len);
        gzclose(g);
    } else {
        FILE *f = fopen(path, "wb");
        T_ASSERT(f);
        if (len) T_EQ_INT(fwrite(text, 1, len, f), len);
        fclose(f);
    }
}

/* The converted dataset holds exactly the distinct (src, dst) pairs of g. */
static void check_graph(gd_dataset_t *ds, const edges *g, int64_t n) {
    T_EQ_INT(gd_dataset_num_nodes(ds), n);
    gd_array_view ip, ix;
    T_OK(gd_dataset_array(ds, GD_ARRAY_INDPTR, &ip));
    T_OK(gd_dataset_array(ds, GD_ARRAY_INDICES, &ix));
    const int64_t *indptr = ip.data;
    char *seen = calloc((size_t)(n * n), 1);
    int64_t distinct = 0;
    for (int64_t i = 0; i < g->e; i++) {
        char *c = &seen[g->dst[i] * n + g->src[i]];
        if (!*c) *c = 1, distinct++;
    }
    T_EQ_INT(gd_dataset_num_edges(ds), distinct);
    for (int64_t v = 0; v < n; v++)
        for (int64_t j = indptr[v]; j < indptr[v + 1]; j++) {
            int64_t u = ix.dtype == GD_DTYPE_INT32 ? ((int32_t *)ix.data)[j]
                                                   : ((int64_t *)ix.data)[j];
            T_ASSERT(seen[v * n + u] == 1);
            seen[v * n + u] = 2;
            if (j > indptr[v]) T_ASSERT(u > (ix.dtype == GD_DTYPE_INT32
                                                 ? ((int32_t *)ix.data)[j - 1]
                                                 : ((int64_t *)ix.data)[j - 1]));
        }
    free(seen);
}

/* Parsing in random pieces, carrying the unfinished line, equals parsing in one piece. */
static void check_chunked(const char *text, size_t len, const edges *g, uint64_t *rng) {
    gd__edgelist el;
    memset(&el, 0, sizeof el);
    el.what = "chunks";
    char *buf = malloc(len + 1);
    size_t have = 0, fed = 0;
    while (1) {
        size_t take = (size_t)(t_rand(rng) % 200);
        if (take > len - fed) take = len - fed;
        memcpy(buf + have, text + fed, take);
        have += take;
        fed += take;
        int final = fed == len;
        size_t used = 0;
        T_OK(gd__edgelist_parse(&el, buf, have, final, &used));
        if (final) {
            T_EQ_INT(used, have);
            break;
        }
        memmove(buf, buf + used, have - used);
        have -= used;
    }
    T_EQ_INT(el.src.len, g->e);
    for (int64_t i = 0; i < g->e; i++) {
        T_EQ_INT(el.src.data[i], g->src[i]);
        T_EQ_INT(el.dst.data[i], g->dst[i]);
    }
    gd__edgelist_free(&el);
    free(buf);
}

static void expect_bad_line(const char *dir, const char *text, gd_status status, int line,
                            const char *needle) {
    char path[400], want[500];
    snprintf(path, sizeof path, "%s/bad.txt", dir);
    write_file(path, text, strlen(text), 0);
    snprintf(want, sizeof want, "%s:%d:", path, line);
    gd_dataset_t *ds = NULL;
    gd_convert_options o = GD_CONVERT_OPTIONS_INIT;
    o.num_nodes = 100;
    gd_status s = gd_convert(path, &o, &ds);
    if (s != status || !strstr(gd_last_error(), want) || !strstr(gd_last_error(), needle))
        T_FAIL_("'%s': got %s \"%s\", expected %s mentioning \"%s\" and \"%s\"", text,
                gd_status_string(s), gd_last_error(), gd_status_string(status), want, needle);
    T_ASSERT(ds == NULL);
    printf("rejected as expected: %s\n", gd_last_error());
}

static void write_npy_i64(const char *dir, const char *name, int ndim, int64_t d0, int64_t d1,
                          const int64_t *data) {
    char path[400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int64_t shape[2] = {d0, d1};
    T_OK(gd_npy_write(path, GD_DTYPE_INT64, ndim, shape, data));
}

static void check_npy_folder(uint64_t *rng, const char *tmp) {
    char dir[400], cmd[900];
    snprintf(dir, sizeof dir, "%s/npyin", tmp);
    for (int variant = 0; variant < 2; variant++) {
        snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
        T_ASSERT(system(cmd) == 0);
        edges g = random_edges(rng, 60);
        int64_t *ei = malloc(sizeof(int64_t) * (size_t)(2 * g.e + 1));
        memcpy(ei, g.src, sizeof(int64_t) * (size_t)g.e);
        memcpy(ei + g.e, g.dst, sizeof(int64_t) * (size_t)g.e);
        if (variant == 0) {
            write_npy_i64(dir, "edge_index.npy", 2, 2, g.e, ei);
        } else {
            write_npy_i64(dir, "src.npy", 1, g.e, 1, g.src);
            write_npy_i64(dir, "dst.npy", 1, g.e, 1, g.dst);
        }
        /* features, labels and a split fix the node count at g.n */
        int64_t dim = 3, shape[2] = {g.n, dim};
        float *feat = malloc(sizeof(float) * (size_t)(g.n * dim));
        int64_t *lab = malloc(sizeof(int64_t) * (size_t)g.n), train[3] = {0, g.n - 1, g.n / 2};
        /* A split holds distinct ids (validation refuses repeats): fewer for 1 or 2 nodes. */
        const int64_t ntrain = g.n < 3 ? g.n : 3;
        for (int64_t i = 0; i < g.n * dim; i++) feat[i] = (float)(t_rand(rng) % 1000) / 8.0f;
        for (int64_t i = 0; i < g.n; i++) lab[i] = (int64_t)(t_rand(rng) % 5) - 1;
        snprintf(cmd, sizeof cmd, "%s/features.npy", dir);
        T_OK(gd_npy_write(cmd, GD_DTYPE_FLOAT32, 2, shape, feat));
        write_npy_i64(dir, "labels.npy", 1, g.n, 1, lab);
        write_npy_i64(dir, "train_idx.npy", 1, ntrain, 1, train);
        gd_dataset_t *ds = NULL;
        gd_convert_options o = GD_CONVERT_OPTIONS_INIT;
        o.feature_dtype = variant ? GD_DTYPE_BFLOAT16 : GD_DTYPE_FLOAT32;
        T_OK(gd_convert(dir, &o, &ds));
        check_graph(ds, &g, g.n);
        gd_array_view fv, lv, tv;
        T_OK(gd_dataset_array(ds, GD_ARRAY_FEATURES, &fv));
        T_OK(gd_dataset_array(ds, GD_ARRAY_LABELS, &lv));
        T_OK(gd_dataset_array(ds, GD_ARRAY_TRAIN_IDX, &tv));
        T_FAILS(gd_dataset_array(ds, GD_ARRAY_TEST_IDX, &tv), GD_ERR_NOT_FOUND, "test_idx");
        T_OK(gd_dataset_array(ds, GD_ARRAY_TRAIN_IDX, &tv));
        for (int64_t i = 0; i < g.n * dim; i++) {
            if (variant) T_EQ_INT(((uint16_t *)fv.data)[i], gd_float_to_bfloat16(feat[i]));
            else T_NEAR(((float *)fv.data)[i], feat[i], 0);
        }
        for (int64_t i = 0; i < g.n; i++) T_EQ_INT(((int64_t *)lv.data)[i], lab[i]);
        T_EQ_INT(tv.shape[0], ntrain);
        for (int i = 0; i < ntrain; i++) T_EQ_INT(((int64_t *)tv.data)[i], train[i]);
        gd_dataset_close(ds);

        /* an id out of range, named with its file and position */
        if (g.e > 0) {
            int64_t pos = (int64_t)(t_rand(rng) % (uint64_t)g.e);
            ei[g.e + pos] = g.n;
            g.dst[pos] = g.n;
            if (variant == 0) write_npy_i64(dir, "edge_index.npy", 2, 2, g.e, ei);
            else write_npy_i64(dir, "dst.npy", 1, g.e, 1, g.dst);
            char want[160];
            snprintf(want, sizeof want, "destination of edge %lld is %lld, outside [0, %lld)",
                     (long long)pos, (long long)g.n, (long long)g.n);
            gd_status s = gd_convert(dir, &o, &ds);
            if (s != GD_ERR_RANGE || !strstr(gd_last_error(), want) ||
                !strstr(gd_last_error(), variant ? "dst.npy" : "edge_index.npy"))
                T_FAIL_("got %s: %s", gd_status_string(s), gd_last_error());
        }
        free(ei);
        free(feat);
        free(lab);
        free(g.src);
        free(g.dst);
        t_check_no_leaks();
    }
    /* (E, 2) is refused with a hint */
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
    T_ASSERT(system(cmd) == 0);
    int64_t e3[6] = {0, 1, 1, 2, 2, 0};
    write_npy_i64(dir, "edge_index.npy", 2, 3, 2, e3);
    gd_dataset_t *ds = NULL;
    T_FAILS(gd_convert(dir, NULL, &ds), GD_ERR_FORMAT, "transpose");
    /* an empty folder is not a known format */
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
    T_ASSERT(system(cmd) == 0);
    T_FAILS(gd_convert(dir, NULL, &ds), GD_ERR_UNSUPPORTED, "cannot tell the format");
}

int main(void) {
    uint64_t rng = t_seed();
    char tmp[256], path[400];
    t_tmpdir(tmp, sizeof tmp);

    for (int round = 0; round < 8; round++) {
        T_OK(gd_param_set("GD_THREADS", round & 1 ? "1" : "2"));
        edges g = random_edges(&rng, round < 4 ? 50 : 400);
        int64_t *lines = malloc(sizeof(int64_t) * (size_t)(g.e + 1));
        size_t len;
        char *text = edge_text(&g, &rng, &len, lines);
        int gz = round % 3 == 2;
        snprintf(path, sizeof path, "%s/graph%d.txt%s", tmp, round, gz ? ".gz" : "");
        write_file(path, text, len, gz);
        check_chunked(text, len, &g, &rng);

        gd_dataset_t *ds = NULL;
        gd_convert_options o = GD_CONVERT_OPTIONS_INIT;
        o.num_nodes = g.n;
        T_OK(gd_convert(path, &o, &ds));
        snprintf(path, sizeof path, "graph%d", round);
        T_EQ_STR(gd_dataset_name(ds), path);
        check_graph(ds, &g, g.n);
        gd_dataset_close(ds);

        /*
         * The same written straight to a directory (out_dir, issue 19): the dataset returned is
         * the finished one, read from its files; an open of the directory gives the same graph;
         * an existing directory is refused before anything is read, unless replaced.
         */
        {
            char out[400], input[400];
            snprintf(input, sizeof input, "%s/graph%d.txt%s", tmp, round, gz ? ".gz" : "");
            snprintf(out, sizeof out, "%s/out%d", tmp, round);
            o.out_dir = out;
            T_OK(gd_convert(input, &o, &ds));
            check_graph(ds, &g, g.n);
            gd_dataset_close(ds);
            T_OK(gd_dataset_open(out, NULL, &ds));
            check_graph(ds, &g, g.n);
            gd_dataset_close(ds);
            T_FAILS(gd_convert(input, &o, &ds), GD_ERR_INVALID_ARG, "already exists");
            o.overwrite = 1;
            T_OK(gd_convert(input, &o, &ds));
            check_graph(ds, &g, g.n);
            gd_dataset_close(ds);
            o.out_dir = NULL;
            o.overwrite = 0;
        }

        /* an id beyond the node count asked for is named with its line */
        if (g.e > 0) {
            int64_t i = (int64_t)(t_rand(&rng) % (uint64_t)g.e), keep = g.src[i];
            g.src[i] = g.n + 5;
            free(text);
            text = edge_text(&g, &rng, &len, lines);
            snprintf(path, sizeof path, "%s/graph%d.txt%s", tmp, round, gz ? ".gz" : "");
            write_file(path, text, len, gz);
            char wbuf[500];
            const char *want = wbuf; /* a pointer: T_FAILS tests it for NULL */
            snprintf(wbuf, sizeof wbuf, "%s:%lld: source id %lld is outside [0, %lld)", path,
                     (long long)lines[i], (long long)(g.n + 5), (long long)g.n);
            T_FAILS(gd_convert(path, &o, &ds), GD_ERR_RANGE, want);
            /* written to a directory, the failure leaves neither it nor its temporary copy */
            char out[400], probe[420];
            snprintf(out, sizeof out, "%s/failed%d", tmp, round);
            o.out_dir = out;
            T_FAILS(gd_convert(path, &o, &ds), GD_ERR_RANGE, want);
            o.out_dir = NULL;
            T_ASSERT(access(out, F_OK) != 0);
            snprintf(probe, sizeof probe, "%s.tmp.%ld", out, (long)getpid());
            T_ASSERT(access(probe, F_OK) != 0);
            /* without a node count, it is max id + 1 */
            o.num_nodes = 0;
            T_OK(gd_convert(path, &o, &ds));
            check_graph(ds, &g, g.n + 6);
            gd_dataset_close(ds);
            g.src[i] = keep;
        }
        free(lines);
        free(text);
        free(g.src);
        free(g.dst);
        t_check_no_leaks();
    }
    T_OK(gd_param_set("GD_THREADS", NULL));

    /* relabelling: ids in order of first appearance, negative and huge ids included */
    const char *rel = "# ids are labels, not positions\n"
                      "9000000000000 -7\n-7 42\r\n42 9000000000000 1.5\n\n5 5\n-7 42\n";
    snprintf(path, sizeof path, "%s/rel.txt", tmp);
    write_file(path, rel, strlen(rel), 0);
    gd_dataset_t *ds = NULL;
    gd_convert_options o = GD_CONVERT_OPTIONS_INIT;
    o.relabel = 1;
    T_OK(gd_convert(path, &o, &ds));
    /* 9e12 -> 0, -7 -> 1, 42 -> 2, 5 -> 3: edges 0->1, 1->2, 2->0, 3->3 */
    edges want = {4, 4, (int64_t[]){0, 1, 2, 3}, (int64_t[]){1, 2, 0, 3}};
    check_graph(ds, &want, 4);
    gd_dataset_close(ds);
    o.num_nodes = 3;
    T_FAILS(gd_convert(path, &o, &ds), GD_ERR_RANGE, "4 distinct node ids");
    o.num_nodes = 10;
    o.symmetrize = 1;
    o.remove_self_loops = 1;
    T_OK(gd_convert(path, &o, &ds));
    edges sym = {10, 6, (int64_t[]){0, 1, 1, 2, 2, 0}, (int64_t[]){1, 0, 2, 1, 0, 2}};
    check_graph(ds, &sym, 10);
    gd_dataset_close(ds);

    /*
     * Issue 13, item 10, "silently accepted nonsense": one edge id of ~2^31 in a two-line edge
     * list made a 17 GB dataset, and an empty edge list a dataset of 0 nodes. Both are refused
     * unless the node count is given (or, for sparse ids, the ids are relabelled).
     */
    snprintf(path, sizeof path, "%s/stray.txt", tmp);
    const char *stray = "0 1\n2147483648 1\n", *sparse = "0 1\n16777215 1\n";
    write_file(path, stray, strlen(stray), 0);
    gd_convert_options so = GD_CONVERT_OPTIONS_INIT;
    T_FAILS(gd_convert(path, &so, &ds), GD_ERR_RANGE,
            "the largest node id is 2147483648, so the graph would have 2147483649 nodes");
    T_ASSERT(strstr(gd_last_error(), "--relabel") && strstr(gd_last_error(), "--num-nodes"));
    so.relabel = 1;
    T_OK(gd_convert(path, &so, &ds));
    T_EQ_INT(gd_dataset_num_nodes(ds), 3);
    gd_dataset_close(ds);
    /* Sparse ids below 2^24 nodes are a graph with isolated nodes, as before. */
    write_file(path, sparse, strlen(sparse), 0);
    so = (gd_convert_options)GD_CONVERT_OPTIONS_INIT;
    T_OK(gd_convert(path, &so, &ds));
    T_EQ_INT(gd_dataset_num_nodes(ds), 1 << 24);
    gd_dataset_close(ds);
    snprintf(path, sizeof path, "%s/empty.txt", tmp);
    for (int k = 0; k < 2; k++) {
        const char *empty = k ? "# a comment and nothing else\n" : "";
        write_file(path, empty, strlen(empty), 0);
        so = (gd_convert_options)GD_CONVERT_OPTIONS_INIT;
        so.relabel = k;
        T_FAILS(gd_convert(path, &so, &ds), GD_ERR_INVALID_ARG,
                "holds no edge, so the graph would have no node");
        so.num_nodes = 5;
        T_OK(gd_convert(path, &so, &ds));
        T_EQ_INT(gd_dataset_num_nodes(ds), 5);
        T_EQ_INT(gd_dataset_num_edges(ds), 0);
        gd_dataset_close(ds);
    }
    t_check_no_leaks();

    /* malformed lines, each named with file and line */
    expect_bad_line(tmp, "1 2\n3\n", GD_ERR_FORMAT, 2, "has no destination id");
    expect_bad_line(tmp, "# c\n1 2\n\n1 x\n", GD_ERR_FORMAT, 4,
                    "destination id 'x' is not an integer");
    expect_bad_line(tmp, "1 2\r\n2,3\r\n", GD_ERR_FORMAT, 2, "'2,3' is not an integer");
    expect_bad_line(tmp, "1 2\n-4 3\n", GD_ERR_RANGE, 2, "source id -4 is negative");
    expect_bad_line(tmp, "1 99999999999999999999\n", GD_ERR_RANGE, 1, "does not fit in 64 bits");
    expect_bad_line(tmp, "1 2\n5 100\n", GD_ERR_RANGE, 2, "destination id 100 is outside [0, 100)");
    expect_bad_line(tmp, "1 2\n1.5 3\n", GD_ERR_FORMAT, 2, "'1.5' is not an integer");
    t_check_no_leaks();

    /* an allocation failure anywhere in a conversion is a clean error */
    snprintf(path, sizeof path, "%s/small.txt", tmp);
    write_file(path, "0 1\n1 2\n2 0\n2 1\n", 16, 0);
    gd_convert_options o2 = GD_CONVERT_OPTIONS_INIT;
    gd_fault_set(GD_FAULT_ALLOC, 0);
    T_OK(gd_convert(path, &o2, &ds));
    gd_dataset_close(ds);
    int64_t allocs = gd_fault_calls(GD_FAULT_ALLOC);
    for (int64_t k = 1; k <= allocs; k++) {
        gd_fault_set(GD_FAULT_ALLOC, k);
        gd_status s = gd_convert(path, &o2, &ds);
        gd_fault_set(GD_FAULT_ALLOC, 0);
        if (s == GD_OK) gd_dataset_close(ds); /* only a shrinking realloc may fail harmlessly */
        else T_EQ_INT(s, GD_ERR_NO_MEMORY);
        t_check_no_leaks();
    }
    T_FAILS(gd_convert("/no/such/file.txt", NULL, &ds), GD_ERR_NOT_FOUND, "/no/such/file.txt");

    check_npy_folder(&rng, tmp);
    t_rmtree(tmp);
    t_check_no_leaks();
    printf("edgelist ok\n");
    return 0;
}
