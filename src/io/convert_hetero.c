/*
 * The heterogeneous inputs of gd_convert (docs/formats.md, "Converting heterogeneous graphs"):
 * OGB's heterogeneous raw layout (ogbn-mag) and IGBH's .npy tree. Both name node types and
 * relations by folder; both number nodes locally per type. The readers below gather each
 * relation's edges as local ids, learn every type's node count, and then share one builder:
 * node ids become global (type t owns [off[t], off[t + 1])), the relations become edge types in
 * a stable order, and one CSC over all nodes is built in which each node's in-neighbours are
 * sorted by (edge type, source) without repeats, as the dataset format requires
 * (dataset_check.c, check_hetero). Features stay per type; labels are one global array (-1
 * outside the target type); the splits are global ids of the target type.
 *
 * The OGB file names follow OGB's own reader (ogb/io/read_graph_raw.py,
 * read_csv_heterograph_raw, read_node_label_hetero and read_nodesplitidx_split_hetero):
 *   raw/num-node-dict.csv.gz           a header line of type names, then one line of counts
 *   raw/relations/<s>___<r>___<d>/     edge.csv.gz ("s,d" local ids per line) and
 *                                      num-edge-list.csv.gz (the count); edge_reltype.csv.gz,
 *                                      edge_year.csv.gz and others are ignored
 *   raw/node-feat/<type>/node-feat.csv.gz   one row of floats per node of that type; a type
 *                                      without it has no features (node_year.csv.gz ignored)
 *   raw/node-label/<type>/node-label.csv.gz the labels of the one labelled (target) type
 *   split/<name>/<type>/{train,valid,test}.csv.gz   local ids of the target type
 * OGB also ships raw/triplet-type-list.csv.gz, raw/nodetype-has-label.csv.gz and
 * split/<name>/nodetype-has-split.csv.gz; the folders say the same, so they are not read.
 * Node types keep the order of num-node-dict.csv.gz.
 *
 * The IGBH names follow IGB's loader (igb/dataloader.py, IGBHeteroDGLDataset):
 *   processed/<type>/node_feat.npy              (count x dim) features; its row count is the
 *                                               type's node count
 *   processed/<s>__<r>__<d>/edge_index.npy      (E, 2) int64, column 0 the local source ids
 *   processed/paper/node_label_19.npy           (or node_label_2K.npy) the target's labels
 * A type without node_feat.npy counts 1 + the largest id the relations give it. Node types are
 * sorted by name. IGB ships no split; like the homogeneous IGB reader (and IGB's loader), the
 * first 60 % of the target type's nodes train, the next 20 % validate, the rest test.
 *
 * Edge types are sorted by (source type, relation, destination type) names, OGB's own order
 * for its triplets, whatever order the file system lists the folders in. With symmetrize,
 * reverse edges are added as PyG's ToUndirected adds them (merge=True): a relation between
 * two types gets a reverse relation (dst, "rev_<rel>", src), one within a type takes its
 * reverse edges itself; the reverse relations are sorted with the others.
 */
#include "io/ingest.h"
#include "io/npy.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef char hx_name[GD__TYPE_NAME_MAX + 1];

/* One relation as read: its node types and its edges, local ids until hx_globalize. */
typedef struct {
    hx_name name;
    int src, dst;
    char *what; /* the file the edges came from, for messages */
    gd__i64vec s, d;
} hx_rel;

typedef struct {
    const gd__convert_job *job;
    const char *counts_from; /* where the counts come from, for messages */
    int T;
    hx_name type[GD_MAX_NODE_TYPES];
    int64_t count[GD_MAX_NODE_TYPES]; /* -1: not known yet (IGBH types without features) */
    int64_t off[GD_MAX_NODE_TYPES + 1];
    int R;
    hx_rel rel[GD_MAX_EDGE_TYPES];
    int target;
} hx_graph;

static void hx_free(hx_graph *g) {
    for (int r = 0; r < g->R; r++) {
        gd_free(g->rel[r].what);
        gd__i64vec_free(&g->rel[r].s);
        gd__i64vec_free(&g->rel[r].d);
    }
    g->R = 0;
}

static int hx_type_index(const hx_graph *g, const char *name) {
    for (int t = 0; t < g->T; t++)
        if (strcmp(g->type[t], name) == 0) return t;
    return -1;
}

/* The known type names as "a, b, c" (for messages). */
static const char *hx_type_list(const hx_graph *g, char *buf, size_t n) {
    size_t used = 0;
    buf[0] = '\0';
    for (int t = 0; t < g->T && used + 1 < n; t++)
        used += (size_t)snprintf(buf + used, n - used, "%s%s", t ? ", " : "", g->type[t]);
    return g->T ? buf : "none";
}

/* A path under a folder, built from parts; NULL when out of memory (checked by the caller). */
static char *hx_path(const char *a, const char *b, const char *c, const char *d) {
    char *p = gd__path_join(a, b), *q = NULL;
    if (p && c) {
        q = gd__path_join(p, c);
        gd_free(p);
        p = q;
    }
    if (p && d) {
        q = gd__path_join(p, d);
        gd_free(p);
        p = q;
    }
    return p;
}

/*
 * Split a relation folder's name "<src><sep><rel><sep><dst>" at the first and the last
 * separator (relation names such as written_by hold single underscores). 0 if the name does
 * not have that shape or a part is not a valid type name.
 */
static int hx_split_name(const char *name, const char *sep, hx_name src, hx_name rel, hx_name dst) {
    const size_t k = strlen(sep);
    const char *a = strstr(name, sep), *b = NULL;
    for (const char *p = a; p; p = strstr(p + 1, sep)) b = p;
    if (!a || b == a) return 0;
    const size_t ls = (size_t)(a - name), lr = (size_t)(b - a) - k, ld = strlen(b + k);
    if (ls == 0 || lr == 0 || ld == 0 || ls > GD__TYPE_NAME_MAX || lr > GD__TYPE_NAME_MAX ||
        ld > GD__TYPE_NAME_MAX)
        return 0;
    memcpy(src, name, ls);
    src[ls] = '\0';
    memcpy(rel, a + k, lr);
    rel[lr] = '\0';
    memcpy(dst, b + k, ld);
    dst[ld] = '\0';
    return gd__type_name_ok(src) && gd__type_name_ok(rel) && gd__type_name_ok(dst);
}

/* Room for one more relation, named from folder `folder`. */
static gd_status hx_add_rel(hx_graph *g, const char *folder, const char *rel, int src, int dst,
                            hx_rel **out) {
    if (g->R >= GD_MAX_EDGE_TYPES)
        return gd__error(GD_ERR_UNSUPPORTED,
                         "'%s': relation folder '%s' is one relation more than the %d a dataset "
                         "holds (with reverse relations counted)",
                         g->job->input, folder, GD_MAX_EDGE_TYPES);
    hx_rel *r = &g->rel[g->R++];
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", rel);
    r->src = src;
    r->dst = dst;
    *out = r;
    return GD_OK;
}

/*
 * Every count known (IGBH: a type without features counts 1 + its largest id), the offsets
 * laid out, and every relation's ids checked against its types' counts and made global.
 */
static gd_status hx_globalize(hx_graph *g) {
    gd_status st = GD_OK;
    for (int t = 0; t < g->T; t++) {
        if (g->count[t] >= 0) continue;
        int64_t mx = -1;
        for (int r = 0; r < g->R; r++) {
            const hx_rel *e = &g->rel[r];
            for (int side = 0; side < 2; side++) {
                if ((side ? e->dst : e->src) != t) continue;
                const gd__i64vec *v = side ? &e->d : &e->s;
                for (int64_t i = 0; i < v->len; i++)
                    if (v->data[i] > mx) mx = v->data[i];
            }
        }
        g->count[t] = mx + 1;
    }
    g->off[0] = 0;
    for (int t = 0; t < g->T; t++) {
        GD_REQUIRE(g->count[t] <= (INT64_C(1) << 40) - g->off[t], GD_ERR_RANGE,
                   "'%s': node type %s brings the node count past 2^40 (%lld + %lld)",
                   g->job->input, g->type[t], (long long)g->off[t], (long long)g->count[t]);
        g->off[t + 1] = g->off[t] + g->count[t];
    }
    for (int r = 0; r < g->R; r++) {
        hx_rel *e = &g->rel[r];
        for (int side = 0; side < 2; side++) {
            const int t = side ? e->dst : e->src;
            gd__i64vec *v = side ? &e->d : &e->s;
            const int64_t lim = g->count[t], base = g->off[t];
            for (int64_t i = 0; i < v->len; i++) {
                const int64_t x = v->data[i];
                GD_REQUIRE(x >= 0 && x < lim, GD_ERR_RANGE,
                           "%s: edge %lld (row %lld): %s id %lld is outside [0, %lld), the ids "
                           "of node type %s (%s); the relation folder names the wrong type, or "
                           "the file belongs to another graph",
                           e->what, (long long)i, (long long)i + 1, side ? "destination" : "source",
                           (long long)x, (long long)lim, g->type[t], g->counts_from);
                v->data[i] = x + base;
            }
        }
    }
fail:
    return st;
}

/* ------------------------------------------------------------ the typed CSC */

/* An edge type of the output: a relation as read, or the reverse of one. */
typedef struct {
    hx_name name;
    int src, dst;
} hx_etype;

static int hx_find_or_add(hx_etype *et, int *n, const char *name, int src, int dst) {
    for (int i = 0; i < *n; i++)
        if (et[i].src == src && et[i].dst == dst && strcmp(et[i].name, name) == 0) return i;
    if (*n >= GD_MAX_EDGE_TYPES) return -1;
    const size_t len = strnlen(name, GD__TYPE_NAME_MAX); /* callers pass type names */
    memcpy(et[*n].name, name, len);
    et[*n].name[len] = '\0';
    et[*n].src = src;
    et[*n].dst = dst;
    return (*n)++;
}

/* (source type, relation, destination type) by name: a < b. */
static int hx_etype_less(const hx_graph *g, const hx_etype *a, const hx_etype *b) {
    int c = strcmp(g->type[a->src], g->type[b->src]);
    if (c == 0) c = strcmp(a->name, b->name);
    if (c == 0) c = strcmp(g->type[a->dst], g->type[b->dst]);
    return c < 0;
}

/*
 * The schema, the node type offsets and the graph: every relation (and with symmetrize its
 * reverse) is one part of an output edge type; each edge becomes a key (edge type x n +
 * source) in its destination's list, each list is sorted and stripped of repeats, and the keys
 * are split into indices and edge types. Frees the relations' edges once they are in the keys.
 */
static gd_status hx_build(hx_graph *g) {
    gd_status st = GD_OK;
    const gd__convert_job *job = g->job;
    const gd_convert_options *opt = job->opt;
    hx_etype et[GD_MAX_EDGE_TYPES];
    int n_et = 0, part_of[GD_MAX_EDGE_TYPES][2], rank[GD_MAX_EDGE_TYPES];
    int order[GD_MAX_EDGE_TYPES];
    int64_t *indptr = NULL, *keys = NULL, *pos = NULL, *offs = NULL;
    void *indices = NULL, *etypes = NULL;
    const int64_t n = g->off[g->T];

    for (int r = 0; r < g->R; r++) {
        const hx_rel *e = &g->rel[r];
        part_of[r][0] = hx_find_or_add(et, &n_et, e->name, e->src, e->dst);
        part_of[r][1] = -1;
        if (opt->symmetrize && part_of[r][0] >= 0) {
            if (e->src == e->dst) {
                part_of[r][1] = part_of[r][0];
            } else {
                char rev[GD__TYPE_NAME_MAX + 8]; /* the check below keeps it a type name */
                GD_REQUIRE(strlen(e->name) + 4 <= GD__TYPE_NAME_MAX, GD_ERR_FORMAT,
                           "%s: relation '%s' is too long to name its reverse rev_%s (at most "
                           "%d characters)",
                           e->what, e->name, e->name, GD__TYPE_NAME_MAX);
                snprintf(rev, sizeof rev, "rev_%s", e->name);
                part_of[r][1] = hx_find_or_add(et, &n_et, rev, e->dst, e->src);
            }
        }
        GD_REQUIRE(
            part_of[r][0] >= 0 && (!opt->symmetrize || part_of[r][1] >= 0), GD_ERR_UNSUPPORTED,
            "'%s': %d relations%s make more than the %d edge types a dataset holds", job->input,
            g->R, opt->symmetrize ? " and their reverses" : "", GD_MAX_EDGE_TYPES);
    }
    GD_REQUIRE(n_et >= 1, GD_ERR_FORMAT,
               "'%s' has no relation: a heterogeneous graph needs at least one edge type",
               job->input);
    /* The stable order: an insertion sort of at most GD_MAX_EDGE_TYPES names. */
    for (int i = 0; i < n_et; i++) {
        int j = i;
        while (j > 0 && hx_etype_less(g, &et[i], &et[order[j - 1]])) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    for (int i = 0; i < n_et; i++) rank[order[i]] = i;

    gd__schema sc;
    memset(&sc, 0, sizeof sc);
    sc.num_node_types = g->T;
    sc.num_edge_types = n_et;
    sc.target_type = g->target;
    for (int t = 0; t < g->T; t++)
        snprintf(sc.node_type[t], sizeof sc.node_type[t], "%s", g->type[t]);
    for (int i = 0; i < n_et; i++) {
        const hx_etype *x = &et[order[i]];
        snprintf(sc.edge_type[i], sizeof sc.edge_type[i], "%s", x->name);
        sc.edge_src[i] = x->src;
        sc.edge_dst[i] = x->dst;
    }
    GD_CHECK(gd__dataset_set_schema(job->ds, &sc));
    {
        const int64_t shape[1] = {g->T + 1};
        GD_ALLOC(offs, (size_t)(g->T + 1) * sizeof *offs, "the node type offsets");
        memcpy(offs, g->off, (size_t)(g->T + 1) * sizeof *offs);
        int64_t *data = offs;
        offs = NULL;
        GD_CHECK(
            gd__dataset_adopt(job->ds, GD__ARRAY_NODE_TYPE_OFFSET, GD_DTYPE_INT64, 1, shape, data));
    }

    /* The keys hold edge type x n + source: n_et x n must fit (n <= 2^40, n_et <= 32). */
    GD_REQUIRE(n <= INT64_MAX / (n_et + 1), GD_ERR_RANGE, "'%s': %lld nodes are too many",
               job->input, (long long)n);
    GD_CHECK(gd__progress(opt->progress, opt->progress_user, "convert: graph", 0, 4));
    GD_ALLOC(indptr, (size_t)(n + 1) * sizeof *indptr, "the graph's indptr");
    memset(indptr, 0, (size_t)(n + 1) * sizeof *indptr);
    for (int r = 0; r < g->R; r++) {
        const hx_rel *e = &g->rel[r];
        for (int dir = 0; dir < 2; dir++) {
            if (part_of[r][dir] < 0) continue;
            const int64_t *dv = dir ? e->s.data : e->d.data, *sv = dir ? e->d.data : e->s.data;
            for (int64_t i = 0; i < e->s.len; i++)
                if (!opt->remove_self_loops || sv[i] != dv[i]) indptr[dv[i] + 1]++;
        }
    }
    for (int64_t v = 0; v < n; v++) indptr[v + 1] += indptr[v];
    const int64_t total = indptr[n];
    GD_ALLOC(keys, (size_t)(total ? total : 1) * sizeof *keys, "the graph's edges");
    GD_ALLOC(pos, (size_t)(n ? n : 1) * sizeof *pos, "the graph's fill cursors");
    memcpy(pos, indptr, (size_t)n * sizeof *pos);
    for (int r = 0; r < g->R; r++) {
        hx_rel *e = &g->rel[r];
        for (int dir = 0; dir < 2; dir++) {
            if (part_of[r][dir] < 0) continue;
            const int64_t *dv = dir ? e->s.data : e->d.data, *sv = dir ? e->d.data : e->s.data;
            const int64_t base = (int64_t)rank[part_of[r][dir]] * n;
            for (int64_t i = 0; i < e->s.len; i++)
                if (!opt->remove_self_loops || sv[i] != dv[i]) keys[pos[dv[i]]++] = base + sv[i];
        }
        gd__i64vec_free(&e->s);
        gd__i64vec_free(&e->d);
    }
    GD_CHECK(gd__progress(opt->progress, opt->progress_user, "convert: graph", 1, 4));

    /* Each list sorted by (edge type, source), repeats dropped; pos[v] becomes its length. */
#pragma omp parallel for schedule(dynamic, 4096) num_threads(gd__num_threads())
    for (int64_t v = 0; v < n; v++) {
        int64_t *a = keys + indptr[v];
        const int64_t len = indptr[v + 1] - indptr[v];
        gd__sort_i64(a, len);
        int64_t u = 0;
        for (int64_t j = 0; j < len; j++)
            if (u == 0 || a[j] != a[u - 1]) a[u++] = a[j];
        pos[v] = u;
    }
    int64_t m = 0;
    for (int64_t v = 0; v < n; v++) {
        const int64_t from = indptr[v];
        indptr[v] = m;
        memmove(keys + m, keys + from, (size_t)pos[v] * sizeof *keys);
        m += pos[v];
    }
    indptr[n] = m;
    gd_free(pos);
    pos = NULL;
    GD_CHECK(gd__progress(opt->progress, opt->progress_user, "convert: graph", 2, 4));

    /* The keys split: int32 indices where the node count allows, uint8 edge types (<= 32). */
    const int wide = n > INT32_MAX, narrow_types = n_et <= 255;
    const gd_dtype idt = wide ? GD_DTYPE_INT64 : GD_DTYPE_INT32;
    const gd_dtype edt = narrow_types ? GD_DTYPE_UINT8 : GD_DTYPE_INT16;
    GD_ALLOC(indices, (size_t)(m ? m : 1) * gd_dtype_size(idt), "the graph's indices");
    GD_ALLOC(etypes, (size_t)(m ? m : 1) * gd_dtype_size(edt), "the graph's edge types");
#pragma omp parallel for schedule(static) num_threads(gd__num_threads())
    for (int64_t i = 0; i < m; i++) {
        const int64_t k = keys[i], r = k / n, s = k - r * n;
        if (wide)
            ((int64_t *)indices)[i] = s;
        else
            ((int32_t *)indices)[i] = (int32_t)s;
        if (narrow_types)
            ((uint8_t *)etypes)[i] = (uint8_t)r;
        else
            ((int16_t *)etypes)[i] = (int16_t)r;
    }
    gd_free(keys);
    keys = NULL;
    {
        const int64_t shape_p[1] = {n + 1}, shape_e[1] = {m};
        int64_t *p = indptr;
        void *ix = indices, *ty = etypes;
        indptr = NULL;
        indices = etypes = NULL;
        st = gd__dataset_adopt(job->ds, GD_ARRAY_INDPTR, GD_DTYPE_INT64, 1, shape_p, p);
        if (st != GD_OK) {
            gd_free(ix);
            gd_free(ty);
            goto fail;
        }
        st = gd__dataset_adopt(job->ds, GD_ARRAY_INDICES, idt, 1, shape_e, ix);
        if (st != GD_OK) {
            gd_free(ty);
            goto fail;
        }
        GD_CHECK(gd__dataset_adopt(job->ds, GD__ARRAY_EDGE_TYPE, edt, 1, shape_e, ty));
    }
    GD_CHECK(gd__progress(opt->progress, opt->progress_user, "convert: graph", 4, 4));
    GD_CHECK(gd__dataset_set_info(job->ds, "edge_type_order",
                                  "sorted by (source type, relation, destination type) names"));
    if (opt->symmetrize)
        GD_CHECK(gd__dataset_set_info(job->ds, "reverse_relations",
                                      "as PyG's ToUndirected: rev_<rel> between two types, "
                                      "merged within one"));
fail:
    gd_free(offs);
    gd_free(indptr);
    gd_free(keys);
    gd_free(pos);
    gd_free(indices);
    gd_free(etypes);
    return st;
}

/* Global labels: -1 everywhere but the target type, whose `count` labels are y. Takes y. */
static gd_status hx_adopt_labels(hx_graph *g, int64_t *y) {
    gd_status st = GD_OK;
    int64_t *all = NULL;
    const int64_t n = g->off[g->T], lo = g->off[g->target], k = g->count[g->target];
    GD_ALLOC(all, (size_t)(n ? n : 1) * sizeof *all, "the labels");
    for (int64_t v = 0; v < n; v++) all[v] = -1;
    memcpy(all + lo, y, (size_t)k * sizeof *all);
    {
        const int64_t shape[1] = {n};
        int64_t *data = all;
        all = NULL;
        GD_CHECK(gd__dataset_adopt(g->job->ds, GD_ARRAY_LABELS, GD_DTYPE_INT64, 1, shape, data));
    }
fail:
    gd_free(all);
    gd_free(y);
    return st;
}

/* Split k (0 train, 1 valid, 2 test) of `count` ids, made global; takes ids. */
static gd_status hx_adopt_split(hx_graph *g, int k, int64_t *ids, int64_t count) {
    const int64_t shape[1] = {count}, base = g->off[g->target];
    for (int64_t i = 0; i < count; i++) ids[i] += base;
    return gd__dataset_adopt(g->job->ds, GD_ARRAY_TRAIN_IDX + k, GD_DTYPE_INT64, 1, shape, ids);
}

/* ------------------------------------------------------------ OGB (ogbn-mag) */

/* raw/num-node-dict.csv.gz: a line of type names, a line of counts, nothing else. */
typedef struct {
    hx_graph *g;
    const char *what;
    int64_t line;
    int rows;
} hx_dict;

static gd_status hx_dict_line(void *state, const char *p, const char *end) {
    gd_status st = GD_OK;
    hx_dict *h = state;
    hx_graph *g = h->g;
    char q[64];
    if (end > p && end[-1] == '\r') end--;
    const char *b = p;
    while (b < end && (*b == ' ' || *b == '\t')) b++;
    if (b == end) return GD_OK;
    GD_REQUIRE(h->rows < 2, GD_ERR_UNSUPPORTED,
               "%s:%lld: a third line; graphdirect converts one graph, whose %s holds a line "
               "of node type names and one line of counts",
               h->what, (long long)h->line, h->what);
    int col = 0;
    for (const char *f = p; f <= end; col++) {
        const char *fe = memchr(f, ',', (size_t)(end - f));
        if (!fe) fe = end;
        const char *a = f, *z = fe;
        while (a < z && (*a == ' ' || *a == '\t')) a++;
        while (z > a && (z[-1] == ' ' || z[-1] == '\t')) z--;
        if (z - a >= 2 && *a == '"' && z[-1] == '"') a++, z--;
        if (h->rows == 0) {
            GD_REQUIRE(col < GD_MAX_NODE_TYPES, GD_ERR_UNSUPPORTED,
                       "%s:%lld: more than %d node types; a dataset holds at most %d", h->what,
                       (long long)h->line, GD_MAX_NODE_TYPES, GD_MAX_NODE_TYPES);
            const size_t len = (size_t)(z - a);
            hx_name name = "";
            if (len <= GD__TYPE_NAME_MAX) {
                memcpy(name, a, len);
                name[len] = '\0';
            }
            GD_REQUIRE(len <= GD__TYPE_NAME_MAX && gd__type_name_ok(name), GD_ERR_FORMAT,
                       "%s:%lld: node type '%s' (column %d) is not a name of 1 to %d letters, "
                       "digits, '_' or '-'",
                       h->what, (long long)h->line, gd__quote(a, len, q, sizeof q), col + 1,
                       GD__TYPE_NAME_MAX);
            GD_REQUIRE(hx_type_index(g, name) < 0, GD_ERR_FORMAT,
                       "%s:%lld: node type '%s' is listed twice", h->what, (long long)h->line,
                       name);
            snprintf(g->type[g->T], sizeof g->type[g->T], "%s", name);
            g->count[g->T++] = 0;
        } else {
            int64_t v = 0;
            const char *stop = NULL;
            GD_REQUIRE(col < g->T, GD_ERR_FORMAT,
                       "%s:%lld: more counts than the %d node types of line 1", h->what,
                       (long long)h->line, g->T);
            GD_REQUIRE(gd__scan_i64(a, z, &v, &stop) == 0 && stop == z && v >= 0, GD_ERR_FORMAT,
                       "%s:%lld: the count of node type %s is '%s', not a whole number >= 0",
                       h->what, (long long)h->line, g->type[col],
                       gd__quote(a, (size_t)(z - a), q, sizeof q));
            g->count[col] = v;
        }
        f = fe + 1;
    }
    GD_REQUIRE(h->rows == 0 || col == g->T, GD_ERR_FORMAT,
               "%s:%lld: %d counts for the %d node types of line 1", h->what, (long long)h->line,
               col, g->T);
    h->rows++;
fail:
    return st;
}

static gd_status hx_dict_chunk(void *state, const char *buf, size_t len, int final,
                               size_t *consumed) {
    hx_dict *h = state;
    return gd__split_lines(buf, len, final, consumed, &h->line, hx_dict_line, h);
}

/* One relation folder: edge.csv.gz (and num-edge-list.csv.gz when present). */
static gd_status ogb_relation(hx_graph *g, const char *rel_root, const char *folder) {
    gd_status st = GD_OK;
    const gd__convert_job *job = g->job;
    char *count_path = NULL, known[600];
    int64_t expect = -1;
    gd__csv c;
    memset(&c, 0, sizeof c);
    hx_name s, r, d;
    GD_REQUIRE(hx_split_name(folder, "___", s, r, d), GD_ERR_FORMAT,
               "%s/%s: a relation folder is named <source type>___<relation>___<destination "
               "type>, each part 1 to %d letters, digits, '_' or '-'",
               rel_root, folder, GD__TYPE_NAME_MAX);
    const int ts = hx_type_index(g, s), td = hx_type_index(g, d);
    GD_REQUIRE(ts >= 0 && td >= 0, GD_ERR_FORMAT,
               "%s/%s names node type '%s', which %s does not list (it has: %s); rename the "
               "folder or add the type",
               rel_root, folder, ts < 0 ? s : d, g->counts_from,
               hx_type_list(g, known, sizeof known));
    hx_rel *e = NULL;
    GD_CHECK(hx_add_rel(g, folder, r, ts, td, &e));
    e->what = hx_path(rel_root, folder, "edge.csv.gz", NULL);
    count_path = hx_path(rel_root, folder, "num-edge-list.csv.gz", NULL);
    GD_REQUIRE(e->what && count_path, GD_ERR_NO_MEMORY, "out of memory naming files of '%s'",
               rel_root);
    GD_REQUIRE(gd__is_file(e->what), GD_ERR_NOT_FOUND,
               "%s is missing: every relation folder holds its edges in edge.csv.gz", e->what);
    if (gd__is_file(count_path)) GD_CHECK(gd__ogb_read_count(job, count_path, &expect));
    c.kind = GD__CSV_INT;
    c.split2 = 1;
    c.ncols = 2;
    if (expect > 0) {
        GD_CHECK(gd__i64vec_reserve(&c.ints, expect, "the edge sources"));
        GD_CHECK(gd__i64vec_reserve(&c.ints2, expect, "the edge destinations"));
    }
    GD_CHECK(gd__ogb_read_csv(job, e->what, &c, "convert: edges"));
    GD_REQUIRE(expect < 0 || c.rows == expect, GD_ERR_FORMAT,
               "%s has %lld edges but %s says %lld: one of them is truncated or corrupt", e->what,
               (long long)c.rows, count_path, (long long)expect);
    e->s = c.ints;
    e->d = c.ints2;
    memset(&c.ints, 0, sizeof c.ints);
    memset(&c.ints2, 0, sizeof c.ints2);
fail:
    gd__csv_free(&c);
    gd_free(count_path);
    return st;
}

/*
 * The target type: the labelled one (raw/node-label/<type>/node-label.csv.gz); among several,
 * the one the split has; without labels, the type the split has; else the first type.
 */
static gd_status ogb_target(hx_graph *g, const char *raw, const char *split_dir) {
    gd_status st = GD_OK;
    char **names = NULL, *root = NULL, *path = NULL, list[600] = "";
    int count = 0, labelled = 0, split_types = 0, pick = -1, pick_split = -1;
    size_t used = 0;
    root = gd__path_join(raw, "node-label");
    GD_REQUIRE(root, GD_ERR_NO_MEMORY, "out of memory naming files of '%s'", raw);
    GD_CHECK(gd__subdirs(root, &names, &count));
    for (int i = 0; i < count; i++) {
        gd_free(path);
        path = hx_path(root, names[i], "node-label.csv.gz", NULL);
        GD_REQUIRE(path, GD_ERR_NO_MEMORY, "out of memory naming files of '%s'", raw);
        if (!gd__is_file(path)) continue;
        const int t = hx_type_index(g, names[i]);
        GD_REQUIRE(t >= 0, GD_ERR_FORMAT,
                   "%s labels node type '%s', which %s does not list (it has: %s)", path, names[i],
                   g->counts_from, hx_type_list(g, list, sizeof list));
        labelled++;
        if (used + 1 < sizeof list)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "",
                                     names[i]);
        if (pick < 0) pick = t;
        if (split_dir) {
            gd_free(path);
            path = hx_path(split_dir, names[i], "train.csv.gz", NULL);
            GD_REQUIRE(path, GD_ERR_NO_MEMORY, "out of memory naming files of '%s'", raw);
            if (gd__is_file(path)) pick_split = t, split_types++;
        }
    }
    if (labelled > 1) {
        GD_REQUIRE(split_types == 1, GD_ERR_UNSUPPORTED,
                   "%s labels several node types (%s) and %s; a dataset has one target type: "
                   "keep the labels of one type",
                   root, list,
                   split_dir ? "the split has none or several of them" : "there is no split");
        pick = pick_split;
    }
    if (pick < 0 && split_dir) {
        for (int t = 0; t < g->T; t++) {
            gd_free(path);
            path = hx_path(split_dir, g->type[t], "train.csv.gz", NULL);
            GD_REQUIRE(path, GD_ERR_NO_MEMORY, "out of memory naming files of '%s'", raw);
            if (gd__is_file(path) && pick < 0) pick = t;
        }
    }
    g->target = pick >= 0 ? pick : 0;
fail:
    gd__free_names(names, count);
    gd_free(root);
    gd_free(path);
    return st;
}

gd_status gd__convert_ogb_hetero(const gd__convert_job *job) {
    gd_status st = GD_OK;
    const gd_convert_options *opt = job->opt;
    hx_graph g;
    memset(&g, 0, sizeof g);
    g.job = job;
    char *raw = NULL, *dict = NULL, *rel_root = NULL, *split_root = NULL, *split_dir = NULL;
    char *path = NULL, why[700];
    char **folders = NULL;
    int nfolders = 0;
    float *feat = NULL;
    int64_t *ids = NULL;
    gd__csv c;
    memset(&c, 0, sizeof c);
    GD_REQUIRE(!opt->labels, GD_ERR_INVALID_ARG,
               "'%s' is an OGB heterogeneous folder, whose labels are "
               "raw/node-label/<type>/node-label.csv.gz: leave out --labels",
               job->input);
    raw = gd__path_join(job->input, "raw");
    dict = gd__path_join(job->input, "raw/num-node-dict.csv.gz");
    rel_root = gd__path_join(job->input, "raw/relations");
    split_root = gd__path_join(job->input, "split");
    GD_REQUIRE(raw && dict && rel_root && split_root, GD_ERR_NO_MEMORY,
               "out of memory naming files of '%s'", job->input);
    GD_REQUIRE(gd__is_file(dict), GD_ERR_NOT_FOUND,
               "'%s' is not an OGB heterogeneous raw folder: %s is missing (it lists the node "
               "types and their counts)",
               job->input, dict);
    g.counts_from = dict;
    {
        hx_dict h = {&g, dict, 0, 0};
        GD_CHECK(gd__read_text(dict, hx_dict_chunk, &h, opt->progress, opt->progress_user,
                               "convert: counts"));
        GD_REQUIRE(h.rows == 2, GD_ERR_FORMAT,
                   "%s has %d non-empty lines; it must hold a line of node type names and a "
                   "line of their counts",
                   dict, h.rows);
    }

    /* The relations, in name order. */
    GD_CHECK(gd__subdirs(rel_root, &folders, &nfolders));
    GD_REQUIRE(nfolders > 0, GD_ERR_NOT_FOUND,
               "%s has no relation folders (<source type>___<relation>___<destination type>/"
               "edge.csv.gz)",
               rel_root);
    for (int i = 0; i < nfolders; i++) GD_CHECK(ogb_relation(&g, rel_root, folders[i]));
    GD_CHECK(hx_globalize(&g));

    GD_CHECK(gd__ogb_choose_split(split_root, opt->split, &split_dir));
    GD_CHECK(ogb_target(&g, raw, split_dir));
    GD_CHECK(gd__dataset_set_info(job->ds, "source", job->input));
    GD_CHECK(gd__dataset_set_info(job->ds, "input_format", "OGB heterogeneous raw layout"));
    GD_CHECK(gd__dataset_set_info(job->ds, "node_type_order", "as raw/num-node-dict.csv.gz"));
    GD_CHECK(hx_build(&g));

    /* Features per type, where the type has them. */
    for (int t = 0; t < g.T; t++) {
        gd_free(path);
        path = hx_path(raw, "node-feat", g.type[t], "node-feat.csv.gz");
        GD_REQUIRE(path, GD_ERR_NO_MEMORY, "out of memory naming files of '%s'", job->input);
        if (!gd__is_file(path)) continue;
        memset(&c, 0, sizeof c);
        c.kind = GD__CSV_FLOAT;
        c.reserve_rows = g.count[t];
        GD_CHECK(gd__ogb_read_csv(job, path, &c, "convert: features"));
        GD_REQUIRE(c.rows == g.count[t], GD_ERR_FORMAT,
                   "%s has %lld rows, expected one per %s node (%lld, from %s): the file is "
                   "truncated or belongs to another graph",
                   path, (long long)c.rows, g.type[t], (long long)g.count[t], dict);
        if (c.rows == 0) {
            gd__csv_free(&c);
            continue;
        }
        feat = c.floats.data;
        const int64_t dim = c.ncols;
        c.floats.data = NULL;
        gd__csv_free(&c);
        float *data = feat;
        feat = NULL;
        GD_CHECK(gd__convert_features_to(job, GD__ARRAY_TYPE_FEATURES + t, data, g.count[t], dim));
    }

    /* The target type's labels. */
    const int tt = g.target;
    gd_free(path);
    path = hx_path(raw, "node-label", g.type[tt], "node-label.csv.gz");
    GD_REQUIRE(path, GD_ERR_NO_MEMORY, "out of memory naming files of '%s'", job->input);
    if (gd__is_file(path)) {
        memset(&c, 0, sizeof c);
        c.kind = GD__CSV_LABEL;
        c.ncols = 1;
        c.reserve_rows = g.count[tt];
        GD_CHECK(gd__ogb_read_csv(job, path, &c, "convert: labels"));
        GD_REQUIRE(c.rows == g.count[tt], GD_ERR_FORMAT,
                   "%s has %lld rows, expected one label per %s node (%lld, from %s): the file "
                   "is truncated or belongs to another graph",
                   path, (long long)c.rows, g.type[tt], (long long)g.count[tt], dict);
        int64_t *y = c.ints.data;
        c.ints.data = NULL;
        gd__csv_free(&c);
        GD_CHECK(hx_adopt_labels(&g, y));
    }

    /* The split: local ids of the target type. */
    if (split_dir) {
        static const char *const file[3] = {"train.csv.gz", "valid.csv.gz", "test.csv.gz"};
        snprintf(why, sizeof why, "the %s nodes, %s", g.type[tt], dict);
        GD_CHECK(gd__dataset_set_info(job->ds, "split", split_dir));
        for (int k = 0; k < 3; k++) {
            gd_free(path);
            path = hx_path(split_dir, g.type[tt], file[k], NULL);
            GD_REQUIRE(path, GD_ERR_NO_MEMORY, "out of memory naming a split file");
            GD_REQUIRE(gd__is_file(path), GD_ERR_NOT_FOUND,
                       "%s is missing: the split of the target type %s holds train.csv.gz, "
                       "valid.csv.gz and test.csv.gz",
                       path, g.type[tt]);
            memset(&c, 0, sizeof c);
            c.kind = GD__CSV_INT;
            c.ncols = 1;
            c.limit = g.count[tt];
            c.limit_why = why;
            GD_CHECK(gd__ogb_read_csv(job, path, &c, "convert: split"));
            if (c.rows == 0) GD_CHECK(gd__i64vec_reserve(&c.ints, 1, "a split"));
            const int64_t rows = c.rows;
            ids = c.ints.data;
            c.ints.data = NULL;
            gd__csv_free(&c);
            int64_t *data = ids;
            ids = NULL;
            GD_CHECK(hx_adopt_split(&g, k, data, rows));
        }
    }
fail:
    hx_free(&g);
    gd__csv_free(&c);
    gd__free_names(folders, nfolders);
    gd_free(raw);
    gd_free(dict);
    gd_free(rel_root);
    gd_free(split_root);
    gd_free(split_dir);
    gd_free(path);
    gd_free(feat);
    gd_free(ids);
    return st;
}

/* ------------------------------------------------------------ IGBH */

static int igbh_relation_folder(const char *processed, const char *name) {
    hx_name s, r, d;
    if (!hx_split_name(name, "__", s, r, d)) return 0;
    char *p = hx_path(processed, name, "edge_index.npy", NULL);
    const int ok = p && gd__is_file(p);
    gd_free(p);
    return ok;
}

int gd__is_igbh(const char *input) {
    char *processed = gd__path_join(input, "processed"), **names = NULL;
    int count = 0, relations = 0;
    if (processed && gd__subdirs(processed, &names, &count) == GD_OK)
        for (int i = 0; i < count; i++) relations += igbh_relation_folder(processed, names[i]);
    gd__free_names(names, count);
    gd_free(processed);
    return relations >= 2;
}

/* Add a type name unless known; the type's count is not known yet. */
static gd_status igbh_type(hx_graph *g, const char *name, const char *where) {
    if (hx_type_index(g, name) >= 0) return GD_OK;
    if (g->T >= GD_MAX_NODE_TYPES)
        return gd__error(GD_ERR_UNSUPPORTED,
                         "%s: node type '%s' is one more than the %d a dataset holds", where, name,
                         GD_MAX_NODE_TYPES);
    snprintf(g->type[g->T], sizeof g->type[g->T], "%s", name);
    g->count[g->T++] = -1;
    return GD_OK;
}

static int cmp_type(const void *a, const void *b) {
    return strcmp(a, b);
}

/* edge_index.npy of one relation: (E, 2), column 0 the sources. */
static gd_status igbh_relation(hx_graph *g, const char *processed, const char *folder) {
    gd_status st = GD_OK;
    gd__array a;
    memset(&a, 0, sizeof a);
    hx_name s, r, d;
    hx_split_name(folder, "__", s, r, d);
    hx_rel *e = NULL;
    GD_CHECK(hx_add_rel(g, folder, r, hx_type_index(g, s), hx_type_index(g, d), &e));
    e->what = hx_path(processed, folder, "edge_index.npy", NULL);
    GD_REQUIRE(e->what, GD_ERR_NO_MEMORY, "out of memory naming files of '%s'", processed);
    GD_CHECK(gd__npy_map(e->what, &a));
    GD_REQUIRE(a.dtype == GD_DTYPE_INT32 || a.dtype == GD_DTYPE_INT64, GD_ERR_UNSUPPORTED,
               "'%s' has dtype %s: node ids must be int32 or int64", e->what,
               gd_dtype_name(a.dtype));
    GD_REQUIRE(a.ndim == 2 && a.shape[1] == 2, GD_ERR_FORMAT,
               "'%s' has shape (%lld, %lld): IGB's edge_index is (E, 2), a row per edge "
               "(transpose a (2, E) array first)",
               e->what, (long long)a.shape[0], (long long)(a.ndim == 2 ? a.shape[1] : 1));
    const int64_t n = a.shape[0];
    GD_CHECK(gd__i64vec_reserve(&e->s, n, "the edge sources"));
    GD_CHECK(gd__i64vec_reserve(&e->d, n, "the edge destinations"));
    for (int64_t i = 0; i < n; i++) {
        e->s.data[i] = gd__array_int(&a, 2 * i);
        e->d.data[i] = gd__array_int(&a, 2 * i + 1);
    }
    e->s.len = e->d.len = n;
fail:
    gd__array_release(&a);
    return st;
}

gd_status gd__convert_igbh(const gd__convert_job *job) {
    gd_status st = GD_OK;
    const gd_convert_options *opt = job->opt;
    hx_graph g;
    memset(&g, 0, sizeof g);
    g.job = job;
    g.counts_from = "the rows of its node_feat.npy";
    char *processed = NULL, *path = NULL, *label_path = NULL, **names = NULL;
    int count = 0, labelled = -1;
    int64_t *y = NULL, *ids = NULL;
    gd__array la;
    memset(&la, 0, sizeof la);
    processed = gd__path_join(job->input, "processed");
    GD_REQUIRE(processed, GD_ERR_NO_MEMORY, "out of memory naming files of '%s'", job->input);
    GD_CHECK(gd__subdirs(processed, &names, &count));

    /* The types: every folder without "__" that holds arrays, every end of a relation. */
    for (int i = 0; i < count; i++) {
        if (strstr(names[i], "__")) {
            hx_name s, r, d;
            if (!igbh_relation_folder(processed, names[i])) continue;
            hx_split_name(names[i], "__", s, r, d);
            GD_CHECK(igbh_type(&g, s, processed));
            GD_CHECK(igbh_type(&g, d, processed));
            continue;
        }
        gd_free(path);
        path = hx_path(processed, names[i], "node_feat.npy", NULL);
        GD_REQUIRE(path, GD_ERR_NO_MEMORY, "out of memory naming files of '%s'", job->input);
        if (gd__is_file(path) && gd__type_name_ok(names[i]))
            GD_CHECK(igbh_type(&g, names[i], path));
    }
    GD_REQUIRE(g.T > 0, GD_ERR_NOT_FOUND,
               "'%s' is not an IGBH folder: %s holds no <src>__<rel>__<dst>/edge_index.npy",
               job->input, processed);
    qsort(g.type, (size_t)g.T, sizeof g.type[0], cmp_type);

    /* Counts from the feature tables; the labels' type. */
    for (int t = 0; t < g.T; t++) {
        gd_npy_info info;
        gd_free(path);
        path = hx_path(processed, g.type[t], "node_feat.npy", NULL);
        GD_REQUIRE(path, GD_ERR_NO_MEMORY, "out of memory naming files of '%s'", job->input);
        if (gd__is_file(path)) {
            GD_CHECK(gd_npy_read_info(path, &info));
            GD_REQUIRE(info.ndim == 2, GD_ERR_FORMAT,
                       "'%s' has %d dimensions: a feature table is (nodes, dim)", path, info.ndim);
            g.count[t] = info.shape[0];
        }
        for (int f = 0; f < 2; f++) {
            gd_free(path);
            path =
                hx_path(processed, g.type[t], f ? "node_label_2K.npy" : "node_label_19.npy", NULL);
            GD_REQUIRE(path, GD_ERR_NO_MEMORY, "out of memory naming files of '%s'", job->input);
            if (!gd__is_file(path)) continue;
            GD_REQUIRE(labelled < 0 || labelled == t, GD_ERR_UNSUPPORTED,
                       "'%s' labels node types %s and %s; a dataset has one target type: keep "
                       "the labels of one",
                       processed, g.type[labelled], g.type[t]);
            labelled = t;
            if (!label_path) {
                label_path = path;
                path = NULL;
            }
        }
    }
    const int paper = hx_type_index(&g, "paper");
    g.target = labelled >= 0 ? labelled : paper >= 0 ? paper : 0;
    if (opt->labels) {
        GD_REQUIRE(labelled >= 0 || paper >= 0, GD_ERR_INVALID_ARG,
                   "--labels %s: '%s' has no labelled type and no type 'paper' for the labels",
                   opt->labels, job->input);
        gd_free(label_path);
        label_path = gd__strdup(opt->labels);
        GD_REQUIRE(label_path, GD_ERR_NO_MEMORY, "out of memory naming the labels");
    }

    for (int i = 0; i < count; i++)
        if (strstr(names[i], "__") && igbh_relation_folder(processed, names[i]))
            GD_CHECK(igbh_relation(&g, processed, names[i]));
    GD_CHECK(hx_globalize(&g));
    GD_CHECK(gd__dataset_set_info(job->ds, "source", job->input));
    GD_CHECK(gd__dataset_set_info(job->ds, "input_format", "IGBH (heterogeneous IGB)"));
    GD_CHECK(gd__dataset_set_info(job->ds, "node_type_order", "sorted by name"));
    GD_CHECK(hx_build(&g));

    for (int t = 0; t < g.T; t++) {
        char whose[GD__TYPE_NAME_MAX + 16];
        gd_free(path);
        path = hx_path(processed, g.type[t], "node_feat.npy", NULL);
        GD_REQUIRE(path, GD_ERR_NO_MEMORY, "out of memory naming files of '%s'", job->input);
        if (!gd__is_file(path) || g.count[t] == 0) continue;
        snprintf(whose, sizeof whose, "node type %s", g.type[t]);
        GD_CHECK(
            gd__convert_npy_features_to(job, GD__ARRAY_TYPE_FEATURES + t, path, g.count[t], whose));
    }
    const int tt = g.target;
    const int64_t k = g.count[tt];
    if (label_path) {
        /* IGB stores labels as floats: whole numbers (NaN: unlabelled), or integers. */
        char what[4200];
        GD_CHECK(gd__npy_map(label_path, &la));
        GD_REQUIRE(la.shape[0] == k && (la.ndim == 1 || la.shape[1] == 1), GD_ERR_FORMAT,
                   "labels '%s' have %lld entries but node type %s has %lld nodes", label_path,
                   (long long)la.shape[0], g.type[tt], (long long)k);
        snprintf(what, sizeof what, "labels '%s'", label_path);
        GD_ALLOC(y, (size_t)(k ? k : 1) * sizeof *y, "the labels");
        GD_CHECK(gd__number_labels_decode(la.data, la.dtype, k, y, what));
        gd__array_release(&la);
        int64_t *data = y;
        y = NULL;
        GD_CHECK(hx_adopt_labels(&g, data));
    }
    /* IGB's split of the target type: the first 60 % train, the next 20 % valid, the rest test. */
    const int64_t cut[4] = {0, k * 6 / 10, k * 8 / 10, k};
    for (int s = 0; s < 3; s++) {
        const int64_t c = cut[s + 1] - cut[s];
        GD_ALLOC(ids, (size_t)(c ? c : 1) * sizeof *ids, "a split");
        for (int64_t i = 0; i < c; i++) ids[i] = cut[s] + i;
        int64_t *data = ids;
        ids = NULL;
        GD_CHECK(hx_adopt_split(&g, s, data, c));
    }
    GD_CHECK(gd__dataset_set_info(job->ds, "split",
                                  "IGB's: the target type's nodes 0-60 % train, 60-80 % valid, "
                                  "80-100 % test"));
fail:
    hx_free(&g);
    gd__array_release(&la);
    gd__free_names(names, count);
    gd_free(processed);
    gd_free(path);
    gd_free(label_path);
    gd_free(y);
    gd_free(ids);
    return st;
}
