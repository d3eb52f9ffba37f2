/*
 * Converting heterogeneous inputs: small fake trees of OGB's heterogeneous raw layout
 * (ogbn-mag's: raw/num-node-dict.csv.gz, raw/relations/<s>___<r>___<d>/edge.csv.gz, per-type
 * features, labels and splits) and of IGBH's .npy tree (processed/<type>/node_feat.npy,
 * processed/<s>__<r>__<d>/edge_index.npy, node_label_19.npy), with fresh random sizes, ids,
 * repeats and self loops each run. Every array of the result (node types and offsets, edge
 * types and their order, the CSC lists with their edge types, the per-type features, the
 * labels and splits) is compared with what a deliberately simple reference (one sort of all
 * (destination, edge type, source) triples) makes of the same edges, with and without reverse
 * relations; the saved dataset must pass a full validation when opened. Then broken copies
 * must fail with a message naming the file: no num-node-dict, an edge id past its type's
 * count, a feature file of the wrong row count, a relation folder naming an unknown type.
 */
#include "test.h"

#include <stdarg.h>
#include <sys/stat.h>
#include <zlib.h>

#define MAXT 4
#define MAXR 8

typedef struct {
    const char *name;
    int64_t count;
    int64_t dim; /* 0: no features */
    float *feat;
} t_type;

typedef struct {
    int src, dst;
    const char *rel;
    int64_t e;
    int64_t *s, *d; /* local ids */
} t_rel;

typedef struct {
    int T, R, target;
    t_type type[MAXT]; /* in the order the dataset must have them */
    t_rel rel[MAXR];
    int64_t *labels;   /* count[target] entries, -1 = unlabelled */
    int64_t *split[3]; /* local ids */
    int64_t nsplit[3];
} t_graph;

static uint64_t rng;

static int64_t rnd(int64_t n) {
    return n > 0 ? (int64_t)(t_rand(&rng) % (uint64_t)n) : 0;
}

static void t_graph_free(t_graph *g) {
    for (int t = 0; t < g->T; t++) free(g->type[t].feat);
    for (int r = 0; r < g->R; r++) {
        free(g->rel[r].s);
        free(g->rel[r].d);
    }
    free(g->labels);
    for (int k = 0; k < 3; k++) free(g->split[k]);
    memset(g, 0, sizeof *g);
}

/* ---- text files through zlib */
typedef struct {
    char *p;
    size_t len, cap;
} t_text;

static void tx(t_text *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tx(t_text *b, const char *fmt, ...) {
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (b->p && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        b->cap = (b->cap + (size_t)n + 64) * 2;
        b->p = realloc(b->p, b->cap);
        if (!b->p) T_FAIL_("out of memory");
    }
}

static void write_gz(const char *path, t_text *b) {
    gzFile g = gzopen(path, "wb1");
    if (!g) T_FAIL_("cannot create %s", path);
    if (b->len && gzwrite(g, b->p, (unsigned)b->len) != (int)b->len)
        T_FAIL_("cannot write %s", path);
    gzclose(g);
    free(b->p);
    memset(b, 0, sizeof *b);
}

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...) {
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    if (system(cmd) != 0) T_FAIL_("command failed: %s", cmd);
}

/* ---- random graphs */

static void random_edges(t_graph *g, int r, int64_t max_e) {
    t_rel *e = &g->rel[r];
    const int64_t ns = g->type[e->src].count, nd = g->type[e->dst].count;
    e->e = 1 + rnd(max_e);
    e->s = malloc(sizeof(int64_t) * (size_t)e->e);
    e->d = malloc(sizeof(int64_t) * (size_t)e->e);
    for (int64_t i = 0; i < e->e; i++) {
        /* Repeats on purpose: a small id range now and then. */
        e->s[i] = rnd(rnd(4) == 0 && ns > 3 ? 3 : ns);
        e->d[i] = rnd(nd);
        if (e->src == e->dst && rnd(8) == 0) e->d[i] = e->s[i]; /* a self loop */
    }
}

static void random_features(t_type *t, int64_t dim) {
    t->dim = dim;
    t->feat = malloc(sizeof(float) * (size_t)(t->count * dim + 1));
    /* Multiples of 1/64: exact in float32 and in "%.9g". */
    for (int64_t i = 0; i < t->count * dim; i++) t->feat[i] = (float)(rnd(4001) - 2000) / 64.0f;
}

/* Labels of the target (some unlabelled) and three disjoint splits of its local ids. */
static void random_labels_splits(t_graph *g, int igb_split) {
    const int64_t k = g->type[g->target].count;
    g->labels = malloc(sizeof(int64_t) * (size_t)k);
    for (int64_t i = 0; i < k; i++) g->labels[i] = rnd(5) == 0 ? -1 : rnd(7);
    g->labels[0] = 6; /* the class count is then 7 */
    int64_t *perm = malloc(sizeof(int64_t) * (size_t)k);
    for (int64_t i = 0; i < k; i++) perm[i] = i;
    if (!igb_split)
        for (int64_t i = k - 1; i > 0; i--) {
            int64_t j = rnd(i + 1), x = perm[i];
            perm[i] = perm[j];
            perm[j] = x;
        }
    /* IGB's split is the first 60 %, the next 20 %, the rest; OGB's any disjoint sets. */
    int64_t c[4] = {0, k * 6 / 10, k * 8 / 10, k};
    if (!igb_split) {
        c[1] = rnd(k / 2 + 1);
        c[2] = c[1] + rnd(k - c[1] + 1);
        c[3] = c[2] + rnd(k - c[2] + 1);
    }
    for (int s = 0; s < 3; s++) {
        g->nsplit[s] = c[s + 1] - c[s];
        g->split[s] = malloc(sizeof(int64_t) * (size_t)(g->nsplit[s] + 1));
        memcpy(g->split[s], perm + c[s], sizeof(int64_t) * (size_t)g->nsplit[s]);
    }
    free(perm);
}

/* ---- the reference: edge types and CSC lists */

typedef struct {
    char name[80];
    int src, dst;
} t_etype;

typedef struct {
    int n_et;
    t_etype et[MAXR * 2];
    int64_t n, off[MAXT + 1];
    int64_t *indptr, m;
    int64_t *src; /* global */
    int *etype;
} t_expect;

static int find_et(t_expect *x, const char *name, int s, int d) {
    for (int i = 0; i < x->n_et; i++)
        if (x->et[i].src == s && x->et[i].dst == d && !strcmp(x->et[i].name, name)) return i;
    snprintf(x->et[x->n_et].name, sizeof x->et[0].name, "%s", name);
    x->et[x->n_et].src = s;
    x->et[x->n_et].dst = d;
    return x->n_et++;
}

static const t_graph *cmp_graph;
static int cmp_et(const void *a, const void *b) {
    const t_etype *x = a, *y = b;
    int c = strcmp(cmp_graph->type[x->src].name, cmp_graph->type[y->src].name);
    if (!c) c = strcmp(x->name, y->name);
    if (!c) c = strcmp(cmp_graph->type[x->dst].name, cmp_graph->type[y->dst].name);
    return c;
}

static int cmp_triple(const void *a, const void *b) {
    const int64_t *x = a, *y = b;
    for (int i = 0; i < 3; i++)
        if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
    return 0;
}

static void expect_build(const t_graph *g, int sym, int no_loops, t_expect *x) {
    memset(x, 0, sizeof *x);
    x->off[0] = 0;
    for (int t = 0; t < g->T; t++) x->off[t + 1] = x->off[t] + g->type[t].count;
    x->n = x->off[g->T];
    /* The edge types, sorted by (source type, relation, destination type) names. */
    t_expect tmp = *x;
    for (int r = 0; r < g->R; r++) {
        const t_rel *e = &g->rel[r];
        find_et(&tmp, e->rel, e->src, e->dst);
        if (sym && e->src != e->dst) {
            char rev[80];
            snprintf(rev, sizeof rev, "rev_%s", e->rel);
            find_et(&tmp, rev, e->dst, e->src);
        }
    }
    cmp_graph = g;
    qsort(tmp.et, (size_t)tmp.n_et, sizeof tmp.et[0], cmp_et);
    x->n_et = tmp.n_et;
    memcpy(x->et, tmp.et, sizeof tmp.et);
    /* Every (dst, edge type, src) triple, sorted, repeats dropped. */
    int64_t cap = 0;
    for (int r = 0; r < g->R; r++) cap += 2 * g->rel[r].e;
    int64_t *tri = malloc(sizeof(int64_t) * 3 * (size_t)(cap + 1)), k = 0;
    for (int r = 0; r < g->R; r++) {
        const t_rel *e = &g->rel[r];
        for (int dir = 0; dir < (sym ? 2 : 1); dir++) {
            char name[80];
            int s = e->src, d = e->dst;
            snprintf(name, sizeof name, "%s", e->rel);
            if (dir && s != d) {
                snprintf(name, sizeof name, "rev_%s", e->rel);
                s = e->dst;
                d = e->src;
            }
            const int et = find_et(x, name, s, d);
            T_ASSERT(et < tmp.n_et);
            for (int64_t i = 0; i < e->e; i++) {
                int64_t u = x->off[e->src] + e->s[i], v = x->off[e->dst] + e->d[i];
                if (dir) {
                    int64_t w = u;
                    u = v;
                    v = w;
                }
                if (no_loops && u == v) continue;
                tri[3 * k] = v;
                tri[3 * k + 1] = et;
                tri[3 * k + 2] = u;
                k++;
            }
        }
    }
    qsort(tri, (size_t)k, 3 * sizeof(int64_t), cmp_triple);
    x->indptr = calloc((size_t)x->n + 1, sizeof(int64_t));
    x->src = malloc(sizeof(int64_t) * (size_t)(k + 1));
    x->etype = malloc(sizeof(int) * (size_t)(k + 1));
    for (int64_t i = 0; i < k; i++) {
        if (i > 0 && !cmp_triple(tri + 3 * i, tri + 3 * (i - 1))) continue;
        x->src[x->m] = tri[3 * i + 2];
        x->etype[x->m] = (int)tri[3 * i + 1];
        x->m++;
        x->indptr[tri[3 * i] + 1]++;
    }
    for (int64_t v = 0; v < x->n; v++) x->indptr[v + 1] += x->indptr[v];
    free(tri);
}

static void expect_free(t_expect *x) {
    free(x->indptr);
    free(x->src);
    free(x->etype);
}

static int64_t iat(const gd_array_view *v, int64_t i) {
    switch (v->dtype) {
    case GD_DTYPE_INT32:
        return ((const int32_t *)v->data)[i];
    case GD_DTYPE_INT64:
        return ((const int64_t *)v->data)[i];
    case GD_DTYPE_UINT8:
        return ((const uint8_t *)v->data)[i];
    case GD_DTYPE_INT8:
        return ((const int8_t *)v->data)[i];
    case GD_DTYPE_INT16:
        return ((const int16_t *)v->data)[i];
    default:
        T_FAIL_("unexpected dtype %d", (int)v->dtype);
    }
    return 0;
}

/* Every array of ds against the reference. */
static void check_dataset(const gd_dataset_t *ds, const t_graph *g, const t_expect *x) {
    gd_array_view v;
    T_EQ_INT(gd_dataset_num_node_types(ds), g->T);
    T_EQ_INT(gd_dataset_num_edge_types(ds), x->n_et);
    T_EQ_INT(gd_dataset_target_type(ds), g->target);
    T_EQ_INT(gd_dataset_num_nodes(ds), x->n);
    T_EQ_INT(gd_dataset_num_edges(ds), x->m);
    T_EQ_INT(gd_dataset_num_classes(ds), 7);
    T_OK(gd_dataset_node_type_offsets(ds, &v));
    for (int t = 0; t <= g->T; t++) T_EQ_INT(iat(&v, t), x->off[t]);
    for (int t = 0; t < g->T; t++) {
        gd_node_type_info info = GD_NODE_TYPE_INFO_INIT;
        T_OK(gd_dataset_node_type(ds, t, &info));
        T_EQ_STR(info.name, g->type[t].name);
        T_EQ_INT(info.offset, x->off[t]);
        T_EQ_INT(info.count, g->type[t].count);
        T_EQ_INT(info.feature_dim, g->type[t].dim);
        if (g->type[t].dim == 0) {
            T_FAILS(gd_dataset_type_features(ds, t, &v), GD_ERR_NOT_FOUND, "no features");
            continue;
        }
        T_OK(gd_dataset_type_features(ds, t, &v));
        T_EQ_INT(v.dtype, GD_DTYPE_FLOAT32);
        T_EQ_INT(v.shape[0], g->type[t].count);
        T_EQ_INT(v.shape[1], g->type[t].dim);
        for (int64_t i = 0; i < g->type[t].count * g->type[t].dim; i++)
            if (((const float *)v.data)[i] != g->type[t].feat[i])
                T_FAIL_("features of %s, element %lld: %g != %g", g->type[t].name, (long long)i,
                        (double)((const float *)v.data)[i], (double)g->type[t].feat[i]);
    }
    for (int r = 0; r < x->n_et; r++) {
        gd_edge_type_info info = GD_EDGE_TYPE_INFO_INIT;
        T_OK(gd_dataset_edge_type(ds, r, &info));
        T_EQ_STR(info.name, x->et[r].name);
        T_EQ_INT(info.src_type, x->et[r].src);
        T_EQ_INT(info.dst_type, x->et[r].dst);
    }
    T_OK(gd_dataset_array(ds, GD_ARRAY_INDPTR, &v));
    for (int64_t i = 0; i <= x->n; i++) T_EQ_INT(iat(&v, i), x->indptr[i]);
    T_OK(gd_dataset_array(ds, GD_ARRAY_INDICES, &v));
    T_EQ_INT(v.dtype, GD_DTYPE_INT32);
    for (int64_t i = 0; i < x->m; i++) T_EQ_INT(iat(&v, i), x->src[i]);
    T_OK(gd_dataset_edge_types(ds, &v));
    T_ASSERT(v.dtype == GD_DTYPE_UINT8 || v.dtype == GD_DTYPE_INT8 || v.dtype == GD_DTYPE_INT16);
    for (int64_t i = 0; i < x->m; i++) T_EQ_INT(iat(&v, i), x->etype[i]);
    T_OK(gd_dataset_array(ds, GD_ARRAY_LABELS, &v));
    const int64_t lo = x->off[g->target], hi = x->off[g->target + 1];
    for (int64_t i = 0; i < x->n; i++)
        T_EQ_INT(iat(&v, i), i >= lo && i < hi ? g->labels[i - lo] : -1);
    for (int k = 0; k < 3; k++) {
        T_OK(gd_dataset_array(ds, (gd_array_id)(GD_ARRAY_TRAIN_IDX + k), &v));
        T_EQ_INT(v.shape[0], g->nsplit[k]);
        for (int64_t i = 0; i < g->nsplit[k]; i++) T_EQ_INT(iat(&v, i), lo + g->split[k][i]);
    }
}

/* Convert, compare, save, reopen with a full validation, compare again. */
static void convert_and_check(const char *input, const char *layout, gd_input_format fmt,
                              const t_graph *g, int sym, int no_loops, const char *tmp) {
    gd_convert_options o = GD_CONVERT_OPTIONS_INIT;
    o.format = fmt;
    o.symmetrize = sym;
    o.remove_self_loops = no_loops;
    gd_dataset_t *ds = NULL, *back = NULL;
    t_expect x;
    expect_build(g, sym, no_loops, &x);
    T_OK(gd_convert(input, &o, &ds));
    check_dataset(ds, g, &x);
    char out[8192];
    snprintf(out, sizeof out, "%s/out", tmp);
    T_OK(gd_dataset_save(ds, out, 1));
    gd_dataset_close(ds);
    gd_dataset_open_options oo = GD_DATASET_OPEN_OPTIONS_INIT;
    oo.validate_graph = 2;
    T_OK(gd_dataset_open(out, &oo, &back));
    check_dataset(back, g, &x);
    gd_dataset_close(back);
    printf("%s (symmetrize %d, no self loops %d): %lld nodes of %d types, %lld edges of %d "
           "types\n",
           layout, sym, no_loops, (long long)x.n, g->T, (long long)x.m, x.n_et);
    expect_free(&x);
    t_rmtree(out);
    t_check_no_leaks();
}

static void expect_error(const char *input, gd_input_format fmt, gd_status status,
                         const char *needle1, const char *needle2) {
    gd_convert_options o = GD_CONVERT_OPTIONS_INIT;
    o.format = fmt;
    t_convert_rejected(input, &o, status, needle1, needle2);
}

/* ---- OGB's heterogeneous layout */

static const char *const ogb_types[MAXT] = {"paper", "author", "institution", "field_of_study"};

static void ogb_random(t_graph *g) {
    memset(g, 0, sizeof *g);
    /* The types in a random order: the dataset keeps num-node-dict's. */
    int perm[MAXT] = {0, 1, 2, 3};
    for (int i = MAXT - 1; i > 0; i--) {
        int j = (int)rnd(i + 1), x = perm[i];
        perm[i] = perm[j];
        perm[j] = x;
    }
    g->T = MAXT;
    int where[MAXT];
    for (int t = 0; t < MAXT; t++) {
        g->type[t].name = ogb_types[perm[t]];
        g->type[t].count = 1 + rnd(40);
        where[perm[t]] = t;
    }
    /* ogbn-mag's relations. */
    static const struct {
        int s, d;
        const char *rel;
    } rels[4] = {{1, 2, "affiliated_with"}, {1, 0, "writes"}, {0, 0, "cites"}, {0, 3, "has_topic"}};
    for (int r = 0; r < 4; r++) {
        g->rel[r].src = where[rels[r].s];
        g->rel[r].dst = where[rels[r].d];
        g->rel[r].rel = rels[r].rel;
    }
    g->R = 4;
    for (int r = 0; r < g->R; r++) random_edges(g, r, 120);
    /* Features for paper (always) and maybe for another type. */
    random_features(&g->type[where[0]], 1 + rnd(6));
    if (rnd(2)) random_features(&g->type[where[1 + rnd(3)]], 1 + rnd(4));
    g->target = where[0];
    random_labels_splits(g, 0);
}

static void ogb_write(const char *dir, const t_graph *g) {
    char path[16384];
    t_text b = {0};
    sh("rm -rf '%s' && mkdir -p '%s/raw/relations' '%s/split/time'", dir, dir, dir);
    for (int t = 0; t < g->T; t++) tx(&b, "%s%s", t ? "," : "", g->type[t].name);
    tx(&b, "\n");
    for (int t = 0; t < g->T; t++) tx(&b, "%s%lld", t ? "," : "", (long long)g->type[t].count);
    tx(&b, "\n");
    snprintf(path, sizeof path, "%s/raw/num-node-dict.csv.gz", dir);
    write_gz(path, &b);
    /* Files OGB ships that the folders make redundant, and extra per-edge files. */
    for (int r = 0; r < g->R; r++)
        tx(&b, "%s,%s,%s\n", g->type[g->rel[r].src].name, g->rel[r].rel,
           g->type[g->rel[r].dst].name);
    snprintf(path, sizeof path, "%s/raw/triplet-type-list.csv.gz", dir);
    write_gz(path, &b);
    for (int r = 0; r < g->R; r++) {
        const t_rel *e = &g->rel[r];
        char rd[8192];
        snprintf(rd, sizeof rd, "%s/raw/relations/%s___%s___%s", dir, g->type[e->src].name, e->rel,
                 g->type[e->dst].name);
        sh("mkdir -p '%s'", rd);
        for (int64_t i = 0; i < e->e; i++)
            tx(&b, "%lld,%lld\n", (long long)e->s[i], (long long)e->d[i]);
        snprintf(path, sizeof path, "%s/edge.csv.gz", rd);
        write_gz(path, &b);
        tx(&b, "%lld\n", (long long)e->e);
        snprintf(path, sizeof path, "%s/num-edge-list.csv.gz", rd);
        write_gz(path, &b);
        for (int64_t i = 0; i < e->e; i++) tx(&b, "%d\n", r);
        snprintf(path, sizeof path, "%s/edge_reltype.csv.gz", rd);
        write_gz(path, &b);
    }
    for (int t = 0; t < g->T; t++) {
        const t_type *ty = &g->type[t];
        if (!ty->dim) continue;
        sh("mkdir -p '%s/raw/node-feat/%s'", dir, ty->name);
        for (int64_t i = 0; i < ty->count; i++)
            for (int64_t j = 0; j < ty->dim; j++)
                tx(&b, "%.9g%s", (double)ty->feat[i * ty->dim + j], j + 1 < ty->dim ? "," : "\n");
        snprintf(path, sizeof path, "%s/raw/node-feat/%s/node-feat.csv.gz", dir, ty->name);
        write_gz(path, &b);
        for (int64_t i = 0; i < ty->count; i++) tx(&b, "%lld\n", (long long)(2000 + rnd(20)));
        snprintf(path, sizeof path, "%s/raw/node-feat/%s/node_year.csv.gz", dir, ty->name);
        write_gz(path, &b);
    }
    const t_type *tt = &g->type[g->target];
    sh("mkdir -p '%s/raw/node-label/%s' '%s/split/time/%s'", dir, tt->name, dir, tt->name);
    for (int64_t i = 0; i < tt->count; i++) {
        if (g->labels[i] >= 0)
            tx(&b, "%lld\n", (long long)g->labels[i]);
        else
            tx(&b, "%s\n", rnd(2) ? "nan" : "");
    }
    snprintf(path, sizeof path, "%s/raw/node-label/%s/node-label.csv.gz", dir, tt->name);
    write_gz(path, &b);
    static const char *const split_file[3] = {"train", "valid", "test"};
    for (int k = 0; k < 3; k++) {
        for (int64_t i = 0; i < g->nsplit[k]; i++) tx(&b, "%lld\n", (long long)g->split[k][i]);
        snprintf(path, sizeof path, "%s/split/time/%s/%s.csv.gz", dir, tt->name, split_file[k]);
        write_gz(path, &b);
    }
}

static void ogb_errors(const char *dir, const t_graph *g) {
    char path[16384];
    t_text b = {0};
    const t_rel *e = &g->rel[1];
    const t_type *tt = &g->type[g->target];

    /* No num-node-dict.csv.gz. */
    ogb_write(dir, g);
    snprintf(path, sizeof path, "%s/raw/num-node-dict.csv.gz", dir);
    T_ASSERT(unlink(path) == 0);
    expect_error(dir, GD_INPUT_OGB_HETERO, GD_ERR_NOT_FOUND, "num-node-dict.csv.gz", "missing");

    /* A destination id equal to its type's count, in the last row. */
    ogb_write(dir, g);
    for (int64_t i = 0; i < e->e; i++)
        tx(&b, "%lld,%lld\n", (long long)e->s[i],
           (long long)(i + 1 < e->e ? e->d[i] : g->type[e->dst].count));
    snprintf(path, sizeof path, "%s/raw/relations/%s___%s___%s/edge.csv.gz", dir,
             g->type[e->src].name, e->rel, g->type[e->dst].name);
    write_gz(path, &b);
    expect_error(dir, GD_INPUT_AUTO, GD_ERR_RANGE, "edge.csv.gz", "destination id");

    /* One feature row too many. */
    ogb_write(dir, g);
    for (int64_t i = 0; i <= tt->count; i++)
        for (int64_t j = 0; j < tt->dim; j++) tx(&b, "%d%s", 1, j + 1 < tt->dim ? "," : "\n");
    snprintf(path, sizeof path, "%s/raw/node-feat/%s/node-feat.csv.gz", dir, tt->name);
    write_gz(path, &b);
    expect_error(dir, GD_INPUT_AUTO, GD_ERR_FORMAT, "node-feat.csv.gz", "rows");

    /* A relation folder naming a type num-node-dict does not list. */
    ogb_write(dir, g);
    sh("mkdir -p '%s/raw/relations/paper___cites___venue'", dir);
    tx(&b, "0,0\n");
    snprintf(path, sizeof path, "%s/raw/relations/paper___cites___venue/edge.csv.gz", dir);
    write_gz(path, &b);
    expect_error(dir, GD_INPUT_AUTO, GD_ERR_FORMAT, "venue", "num-node-dict.csv.gz");

    /* Labels of a second type, and the split of neither: no single target. */
    ogb_write(dir, g);
    const int other = (g->target + 1) % g->T;
    sh("mkdir -p '%s/raw/node-label/%s' && rm -rf '%s/split'", dir, g->type[other].name, dir);
    for (int64_t i = 0; i < g->type[other].count; i++) tx(&b, "0\n");
    snprintf(path, sizeof path, "%s/raw/node-label/%s/node-label.csv.gz", dir, g->type[other].name);
    write_gz(path, &b);
    expect_error(dir, GD_INPUT_AUTO, GD_ERR_UNSUPPORTED, "several node types", NULL);
}

/* ---- IGBH's .npy tree */

static void igbh_random(t_graph *g) {
    memset(g, 0, sizeof *g);
    /* Sorted by name, as the dataset orders them. */
    static const char *const names[MAXT] = {"author", "fos", "institute", "paper"};
    g->T = MAXT;
    for (int t = 0; t < MAXT; t++) {
        g->type[t].name = names[t];
        g->type[t].count = 1 + rnd(40);
    }
    static const struct {
        int s, d;
        const char *rel;
    } rels[4] = {{3, 3, "cites"}, {3, 0, "written_by"}, {0, 2, "affiliated_to"}, {3, 1, "topic"}};
    g->R = 4;
    for (int r = 0; r < g->R; r++) {
        g->rel[r].src = rels[r].s;
        g->rel[r].dst = rels[r].d;
        g->rel[r].rel = rels[r].rel;
        random_edges(g, r, 150);
    }
    /* Every type but institute has features; institute counts 1 + its largest id. */
    random_features(&g->type[0], 1 + rnd(5));
    random_features(&g->type[1], 1 + rnd(5));
    random_features(&g->type[3], 1 + rnd(8));
    int64_t mx = -1;
    for (int64_t i = 0; i < g->rel[2].e; i++)
        if (g->rel[2].d[i] > mx) mx = g->rel[2].d[i];
    g->type[2].count = mx + 1;
    g->target = 3;
    random_labels_splits(g, 1);
}

static void igbh_write(const char *dir, const t_graph *g) {
    char path[16384];
    sh("rm -rf '%s' && mkdir -p '%s/processed'", dir, dir);
    for (int t = 0; t < g->T; t++) {
        const t_type *ty = &g->type[t];
        if (!ty->dim) continue;
        sh("mkdir -p '%s/processed/%s'", dir, ty->name);
        snprintf(path, sizeof path, "%s/processed/%s/node_feat.npy", dir, ty->name);
        const int64_t shape[2] = {ty->count, ty->dim};
        T_OK(gd_npy_write(path, GD_DTYPE_FLOAT32, 2, shape, ty->feat));
    }
    for (int r = 0; r < g->R; r++) {
        const t_rel *e = &g->rel[r];
        snprintf(path, sizeof path, "%s/processed/%s__%s__%s", dir, g->type[e->src].name, e->rel,
                 g->type[e->dst].name);
        sh("mkdir -p '%s'", path);
        strcat(path, "/edge_index.npy");
        int64_t *ei = malloc(sizeof(int64_t) * 2 * (size_t)e->e);
        for (int64_t i = 0; i < e->e; i++) {
            ei[2 * i] = e->s[i];
            ei[2 * i + 1] = e->d[i];
        }
        const int64_t shape[2] = {e->e, 2};
        T_OK(gd_npy_write(path, GD_DTYPE_INT64, 2, shape, ei));
        free(ei);
    }
    /* Labels as IGB stores them: float32, NaN for unlabelled. */
    const t_type *tt = &g->type[g->target];
    float *y = malloc(sizeof(float) * (size_t)tt->count);
    for (int64_t i = 0; i < tt->count; i++) y[i] = g->labels[i] < 0 ? NAN : (float)g->labels[i];
    snprintf(path, sizeof path, "%s/processed/%s/node_label_19.npy", dir, tt->name);
    const int64_t shape[1] = {tt->count};
    T_OK(gd_npy_write(path, GD_DTYPE_FLOAT32, 1, shape, y));
    free(y);
}

static void igbh_checks(const char *dir, const t_graph *g) {
    /* GD_INPUT_IGB keeps reading paper__cites__paper alone, as a homogeneous graph. */
    gd_convert_options o = GD_CONVERT_OPTIONS_INIT;
    o.format = GD_INPUT_IGB;
    gd_dataset_t *ds = NULL;
    T_OK(gd_convert(dir, &o, &ds));
    T_EQ_INT(gd_dataset_num_node_types(ds), 0);
    T_EQ_INT(gd_dataset_num_nodes(ds), g->type[3].count);
    T_EQ_INT(gd_dataset_feature_dim(ds), g->type[3].dim);
    gd_dataset_close(ds);
    t_check_no_leaks();

    /* A source id past the count of its featured type. */
    char path[16384];
    const t_rel *e = &g->rel[1];
    snprintf(path, sizeof path, "%s/processed/paper__written_by__author/edge_index.npy", dir);
    int64_t *ei = malloc(sizeof(int64_t) * 2 * (size_t)e->e);
    for (int64_t i = 0; i < e->e; i++) {
        ei[2 * i] = e->s[i];
        ei[2 * i + 1] = e->d[i];
    }
    ei[2 * (e->e - 1)] = g->type[3].count;
    const int64_t shape[2] = {e->e, 2};
    T_OK(gd_npy_write(path, GD_DTYPE_INT64, 2, shape, ei));
    free(ei);
    expect_error(dir, GD_INPUT_AUTO, GD_ERR_RANGE, "edge_index.npy", "source id");
}

int main(void) {
    uint64_t seed = t_seed();
    rng = seed;
    T_OK(gd_param_set("GD_THREADS", (t_rand(&rng) & 1) ? "1" : "2"));
    char tmp[4096], dir[4200];
    t_tmpdir(tmp, sizeof tmp);
    snprintf(dir, sizeof dir, "%s/in", tmp);
    t_graph g;

    ogb_random(&g);
    ogb_write(dir, &g);
    convert_and_check(dir, "OGB", GD_INPUT_AUTO, &g, 0, 0, tmp);
    convert_and_check(dir, "OGB", GD_INPUT_OGB, &g, 1, (int)rnd(2), tmp);
    convert_and_check(dir, "OGB", GD_INPUT_OGB_HETERO, &g, 0, 1, tmp);
    ogb_errors(dir, &g);
    t_graph_free(&g);

    igbh_random(&g);
    igbh_write(dir, &g);
    convert_and_check(dir, "IGBH", GD_INPUT_AUTO, &g, 0, 0, tmp);
    convert_and_check(dir, "IGBH", GD_INPUT_IGBH, &g, 1, (int)rnd(2), tmp);
    igbh_checks(dir, &g);
    t_graph_free(&g);

    t_rmtree(tmp);
    t_check_no_leaks();
    printf("ok\n");
    return 0;
}
