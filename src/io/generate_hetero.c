/*
 * Synthetic heterogeneous datasets (docs/formats.md, "Heterogeneous graphs"): presets shaped
 * like ogbn-mag (paper, author, institution, field of study; only papers have features) and
 * like IGBH (the same four kinds of node, 1024-dim features on every type), at a size for tests
 * and at sizes whose feature tables need the zero-copy tier.
 *
 * Every node has a community (its local index modulo the class count); the target type's
 * community is its label. Each node of type t draws, for every relation r into t, a heavy-tailed
 * number of in-neighbours of r's source type, each from the node's own community with
 * probability p_in (else from any community), skewed towards the low indices of the community
 * so that some nodes are far more popular than others, as in real graphs. Featured types get the
 * community's centroid plus noise. Reverse relations (rev_writes, ...) are drawn the same way,
 * independently of their forward relation: they are not its mirror image.
 *
 * Like the homogeneous generator, it builds straight into the dataset's files (or memory) with
 * no second copy: a first parallel pass draws every node's lists and counts them after removing
 * repeats, a prefix sum gives indptr, and a second pass draws the same lists again (the draws
 * are Philox keyed by seed, node, relation and draw, so both passes and any thread count agree)
 * and writes them, sorted by relation and then by source, with their edge types.
 */
#include "core/philox.h"
#include "io/dataset.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define HG_MAX_DEGREE 4096 /* the most in-neighbours of one relation a node draws */
#define HG_ALPHA 2.5       /* the Lomax shape of the per-relation in-degrees */
#define HG_BLOCK 65536     /* nodes per progress step */

typedef struct {
    const char *name;
    double count; /* nodes: a fraction of the preset's node count */
    int64_t dim;  /* feature width, 0 = no features */
} hg_type;

typedef struct {
    int src, dst;
    const char *name;
    double avg_degree; /* mean in-neighbours of this relation per destination node */
} hg_rel;

typedef struct {
    const char *name;
    int64_t num_nodes; /* all types together */
    int num_types, num_rels, target;
    hg_type types[4];
    hg_rel rels[8];
    int64_t classes;
    double p_in, noise, train, valid, test;
} hg_preset;

/*
 * The presets. mag-* takes ogbn-mag's types and relations (736K papers, 1.13M authors, 8.7K
 * institutions, 60K fields; 128-dim paper features) and its reverse relations as PyG's
 * ToUndirected adds them; igbh-* takes IGBH's (paper, author, institute, fos with 1024-dim
 * features each; cites, written_by, affiliated_to, topic and their reverses, 19 classes). The
 * type fractions follow the real datasets; igbh-tiny and mag-tiny are for tests, igbh-medium is
 * IGBH-medium's node count with 67 GB of float32 features: more than a GPU should hold at once.
 */
static const hg_preset hg_presets[] = {
    {"mag-tiny",
     20000,
     4,
     7,
     0,
     {{"paper", 0.38, 128}, {"author", 0.58, 0}, {"institution", 0.01, 0},
      {"field_of_study", 0.03, 0}},
     {{0, 0, "cites", 4.0},
      {1, 0, "writes", 3.0},
      {0, 1, "rev_writes", 2.0},
      {2, 1, "affiliated_with", 1.0},
      {1, 2, "rev_affiliated_with", 20.0},
      {3, 0, "has_topic", 3.0},
      {0, 3, "rev_has_topic", 12.0}},
     32,
     0.75,
     3.0,
     0.6,
     0.2,
     0.2},
    {"mag",
     1939743,
     4,
     7,
     0,
     {{"paper", 736389.0 / 1939743.0, 128}, {"author", 1134649.0 / 1939743.0, 0},
      {"institution", 8740.0 / 1939743.0, 0}, {"field_of_study", 59965.0 / 1939743.0, 0}},
     {{0, 0, "cites", 7.3},
      {1, 0, "writes", 9.8},
      {0, 1, "rev_writes", 6.4},
      {2, 1, "affiliated_with", 0.9},
      {1, 2, "rev_affiliated_with", 120.0},
      {3, 0, "has_topic", 9.5},
      {0, 3, "rev_has_topic", 117.0}},
     349,
     0.7,
     3.5,
     629571.0 / 736389.0,
     64879.0 / 736389.0,
     41939.0 / 736389.0},
    {"igbh-tiny",
     10000,
     4,
     7,
     0,
     {{"paper", 0.5, 1024}, {"author", 0.4, 1024}, {"institute", 0.02, 1024},
      {"fos", 0.08, 1024}},
     {{0, 0, "cites", 6.0},
      {1, 0, "written_by", 3.0},
      {0, 1, "rev_written_by", 3.0},
      {2, 1, "affiliated_to", 1.0},
      {1, 2, "rev_affiliated_to", 20.0},
      {3, 0, "topic", 4.0},
      {0, 3, "rev_topic", 25.0}},
     19,
     0.75,
     14.0,
     0.6,
     0.2,
     0.2},
    {"igbh-medium",
     16300000,
     4,
     7,
     0,
     {{"paper", 10000000.0 / 16300000.0, 1024}, {"author", 6000000.0 / 16300000.0, 1024},
      {"institute", 20000.0 / 16300000.0, 1024}, {"fos", 280000.0 / 16300000.0, 1024}},
     {{0, 0, "cites", 12.0},
      {1, 0, "written_by", 2.5},
      {0, 1, "rev_written_by", 4.2},
      {2, 1, "affiliated_to", 1.0},
      {1, 2, "rev_affiliated_to", 300.0},
      {3, 0, "topic", 4.0},
      {0, 3, "rev_topic", 140.0}},
     19,
     0.75,
     14.0,
     0.6,
     0.2,
     0.2},
};
#define HG_PRESETS ((int)(sizeof hg_presets / sizeof hg_presets[0]))

int gd__generate_is_hetero(const char *preset) {
    for (int i = 0; preset && i < HG_PRESETS; i++)
        if (strcmp(hg_presets[i].name, preset) == 0) return 1;
    return 0;
}

const char *gd__generate_hetero_names(void) { return "mag-tiny, mag, igbh-tiny, igbh-medium"; }

typedef struct {
    const hg_preset *p;
    uint64_t seed;
    int threads;
    gd_dtype dtype;
    int64_t off[GD_MAX_NODE_TYPES + 1];
    int64_t n;
    int64_t *indptr;
    void *indices;
    int wide;
    uint8_t *etype;
    float *centroids[GD_MAX_NODE_TYPES];
} hg_ctx;

/* Philox purposes of this generator (the last counter word), apart from the homogeneous one's. */
enum { HG_DEGREE = 0x48470001u, HG_SOURCE, HG_FEATURE, HG_CENTROID, HG_SPLIT };

static double unit(gd_philox_ctr r, int w) {
    return ((double)(r.v[w] >> 8) + 0.5) * (1.0 / 16777216.0); /* (0, 1) */
}

/* Node v's in-degree of relation r (before repeats are removed). */
static int64_t hg_degree(const hg_ctx *g, int64_t v, int r) {
    const double mean = g->p->rels[r].avg_degree;
    if (mean <= 0) return 0;
    const gd_philox_ctr x = gd_philox(g->seed, (uint32_t)v, (uint32_t)(v >> 32), (uint32_t)r,
                                      HG_DEGREE);
    /* Lomax(alpha, scale) has mean scale / (alpha - 1); rounding to the nearest keeps it. */
    const double lomax = mean * (HG_ALPHA - 1.0) * (pow(unit(x, 0), -1.0 / HG_ALPHA) - 1.0);
    const double d = floor(lomax + unit(x, 1));
    return d > HG_MAX_DEGREE ? HG_MAX_DEGREE : (int64_t)d;
}

/* Draw j of node v (community c) for relation r: a node id of r's source type. */
static int64_t hg_source(const hg_ctx *g, int64_t v, int64_t c, int r, int64_t j) {
    const int s = g->p->rels[r].src;
    const int64_t count = g->off[s + 1] - g->off[s], C = g->p->classes;
    const gd_philox_ctr x = gd_philox(g->seed, (uint32_t)v, (uint32_t)(v >> 32),
                                      (uint32_t)(r | (j << 8)), HG_SOURCE);
    /* The popularity skew: rank = floor(m u^2) favours the low ranks of a community. */
    const double u = unit(x, 1);
    if (unit(x, 0) < g->p->p_in && count > c % C) {
        const int64_t cc = c % C, members = (count - 1 - cc) / C + 1;
        int64_t k = (int64_t)((double)members * u * u);
        if (k >= members) k = members - 1;
        return g->off[s] + cc + k * C;
    }
    int64_t k = (int64_t)((double)count * u * u);
    if (k >= count) k = count - 1;
    return g->off[s] + k;
}

/*
 * Node v's in-neighbours, relation by relation, each relation's sorted without repeats (buf:
 * HG_MAX_DEGREE entries of scratch); written with their edge types from list position `at`
 * unless it is negative. Returns the count.
 */
static int64_t hg_lists(const hg_ctx *g, int64_t v, int64_t *buf, int64_t at) {
    const int t = gd__node_type_of(g->off, g->p->num_types, v);
    const int64_t c = v - g->off[t];
    int64_t total = 0;
    for (int r = 0; r < g->p->num_rels; r++) {
        if (g->p->rels[r].dst != t || g->off[g->p->rels[r].src + 1] == g->off[g->p->rels[r].src])
            continue;
        const int64_t d = hg_degree(g, v, r);
        for (int64_t j = 0; j < d; j++) buf[j] = hg_source(g, v, c, r, j);
        gd__sort_i64(buf, d);
        int64_t u = 0;
        for (int64_t j = 0; j < d; j++)
            if (u == 0 || buf[j] != buf[u - 1]) buf[u++] = buf[j];
        if (at >= 0) {
            for (int64_t j = 0; j < u; j++) {
                const int64_t p = at + total + j;
                if (g->wide)
                    ((int64_t *)g->indices)[p] = buf[j];
                else
                    ((int32_t *)g->indices)[p] = (int32_t)buf[j];
                g->etype[p] = (uint8_t)r;
            }
        }
        total += u;
    }
    return total;
}

static gd_status hg_graph(hg_ctx *g, gd_dataset_t *ds, gd_progress_fn progress, void *user) {
    gd_status st = GD_OK;
    const int64_t n = g->n;
    int64_t shape[2] = {n + 1, 1};
    void *ptr = NULL;
    int failed = 0;
    GD_CHECK(gd__dataset_alloc(ds, GD_ARRAY_INDPTR, GD_DTYPE_INT64, 1, shape, &ptr));
    g->indptr = ptr;
    for (int pass = 0; pass < 2; pass++) {
        const char *stage = pass ? "generate: edges" : "generate: degrees";
        for (int64_t b0 = 0; b0 < n; b0 += HG_BLOCK) {
            GD_CHECK(gd__progress(progress, user, stage, (uint64_t)b0, (uint64_t)n));
            const int64_t b1 = b0 + HG_BLOCK < n ? b0 + HG_BLOCK : n;
#pragma omp parallel num_threads(g->threads)
            {
                int64_t *buf = gd_malloc(HG_MAX_DEGREE * sizeof *buf);
                if (!buf) {
#pragma omp atomic write
                    failed = 1;
                }
#pragma omp for schedule(dynamic, 256)
                for (int64_t v = b0; v < b1; v++) {
                    if (!buf) continue;
                    if (pass == 0)
                        g->indptr[v + 1] = hg_lists(g, v, buf, -1);
                    else
                        hg_lists(g, v, buf, g->indptr[v]);
                }
                gd_free(buf);
            }
            GD_REQUIRE(!failed, GD_ERR_NO_MEMORY, "generate: out of memory for the edge lists");
        }
        GD_CHECK(gd__progress(progress, user, stage, (uint64_t)n, (uint64_t)n));
        if (pass == 0) {
            g->indptr[0] = 0;
            for (int64_t v = 0; v < n; v++) g->indptr[v + 1] += g->indptr[v];
            const int64_t e = g->indptr[n];
            g->wide = n > INT32_MAX;
            shape[0] = e;
            GD_CHECK(gd__dataset_alloc(ds, GD_ARRAY_INDICES,
                                       g->wide ? GD_DTYPE_INT64 : GD_DTYPE_INT32, 1, shape, &ptr));
            g->indices = ptr;
            GD_CHECK(gd__dataset_alloc(ds, GD__ARRAY_EDGE_TYPE, GD_DTYPE_UINT8, 1, shape, &ptr));
            g->etype = ptr;
        }
    }
fail:
    return st;
}

/* Four standard normals from one Philox block (Box-Muller). */
static void hg_normals(gd_philox_ctr r, float out[4]) {
    for (int p = 0; p < 2; p++) {
        const float u1 = ((float)(r.v[2 * p] >> 8) + 1.0f) * (1.0f / 16777216.0f);
        const float u2 = (float)(r.v[2 * p + 1] >> 8) * (1.0f / 16777216.0f);
        const float rad = sqrtf(-2.0f * logf(u1)), th = 6.28318530718f * u2;
        out[2 * p] = rad * cosf(th);
        out[2 * p + 1] = rad * sinf(th);
    }
}

static void hg_store(void *row, gd_dtype dtype, int64_t k, float x) {
    if (dtype == GD_DTYPE_FLOAT16)
        ((uint16_t *)row)[k] = gd_float_to_half(x);
    else if (dtype == GD_DTYPE_BFLOAT16)
        ((uint16_t *)row)[k] = gd_float_to_bfloat16(x);
    else
        ((float *)row)[k] = x;
}

/* The feature table of every type that has one: the community's centroid plus noise. */
static gd_status hg_features(hg_ctx *g, gd_dataset_t *ds, gd_progress_fn progress, void *user) {
    gd_status st = GD_OK;
    const int64_t C = g->p->classes;
    const size_t esize = gd_dtype_size(g->dtype);
    for (int t = 0; t < g->p->num_types; t++) {
        const int64_t dim = g->p->types[t].dim, rows = g->off[t + 1] - g->off[t];
        if (dim == 0) continue;
        int64_t shape[2] = {rows, dim};
        void *ptr = NULL;
        GD_CHECK(gd__dataset_alloc(ds, GD__ARRAY_TYPE_FEATURES + t, g->dtype, 2, shape, &ptr));
        GD_ALLOC(g->centroids[t], (size_t)(C * dim) * sizeof(float), "generate: centroids");
        for (int64_t k = 0; k < C; k++)
            for (int64_t j = 0; j < dim; j += 4) {
                float z[4];
                hg_normals(gd_philox(g->seed, (uint32_t)k, (uint32_t)j, (uint32_t)t, HG_CENTROID),
                           z);
                for (int q = 0; q < 4 && j + q < dim; q++) g->centroids[t][k * dim + j + q] = z[q];
            }
        const float noise = (float)g->p->noise;
        const float *mu = g->centroids[t];
        char *base = ptr;
        for (int64_t b0 = 0; b0 < rows; b0 += HG_BLOCK) {
            GD_CHECK(gd__progress(progress, user, "generate: features", (uint64_t)b0,
                                  (uint64_t)rows));
            const int64_t b1 = b0 + HG_BLOCK < rows ? b0 + HG_BLOCK : rows;
#pragma omp parallel for num_threads(g->threads) schedule(static)
            for (int64_t i = b0; i < b1; i++) {
                const int64_t v = g->off[t] + i, c = i % C;
                char *row = base + (size_t)i * (size_t)dim * esize;
                for (int64_t j = 0; j < dim; j += 4) {
                    float z[4];
                    hg_normals(gd_philox(g->seed, (uint32_t)v, (uint32_t)(v >> 32), (uint32_t)j,
                                         HG_FEATURE),
                               z);
                    for (int q = 0; q < 4 && j + q < dim; q++)
                        hg_store(row, g->dtype, j + q, mu[c * dim + j + q] + noise * z[q]);
                }
            }
        }
        GD_CHECK(gd__progress(progress, user, "generate: features", (uint64_t)rows,
                              (uint64_t)rows));
        gd_free(g->centroids[t]);
        g->centroids[t] = NULL;
    }
fail:
    return st;
}

/* Labels (the target type's communities, -1 elsewhere) and the target type's splits. */
static gd_status hg_labels_splits(hg_ctx *g, gd_dataset_t *ds) {
    gd_status st = GD_OK;
    const int tt = g->p->target;
    const int64_t lo = g->off[tt], hi = g->off[tt + 1], C = g->p->classes;
    int64_t shape[2] = {g->n, 1};
    void *ptr = NULL;
    int64_t *ids[3] = {NULL, NULL, NULL}, cnt[3] = {0, 0, 0};
    GD_CHECK(gd__dataset_alloc(ds, GD_ARRAY_LABELS, GD_DTYPE_INT64, 1, shape, &ptr));
    int64_t *labels = ptr;
    for (int64_t v = 0; v < g->n; v++) labels[v] = v >= lo && v < hi ? (v - lo) % C : -1;
    for (int k = 0; k < 3; k++)
        GD_ALLOC(ids[k], (size_t)(hi - lo + 1) * sizeof(int64_t), "generate: splits");
    const double cut[2] = {g->p->train, g->p->train + g->p->valid};
    const double end = g->p->train + g->p->valid + g->p->test;
    for (int64_t v = lo; v < hi; v++) {
        const double u = unit(gd_philox(g->seed, (uint32_t)v, (uint32_t)(v >> 32), 0, HG_SPLIT), 0);
        const int k = u < cut[0] ? 0 : u < cut[1] ? 1 : u < end ? 2 : -1;
        if (k >= 0) ids[k][cnt[k]++] = v;
    }
    for (int k = 0; k < 3; k++) {
        shape[0] = cnt[k];
        GD_CHECK(gd__dataset_alloc(ds, GD_ARRAY_TRAIN_IDX + k, GD_DTYPE_INT64, 1, shape, &ptr));
        memcpy(ptr, ids[k], (size_t)cnt[k] * sizeof(int64_t));
    }
fail:
    for (int k = 0; k < 3; k++) gd_free(ids[k]);
    return st;
}

gd_status gd__generate_hetero(const gd_generate_options *o, gd_dataset_t **out) {
    gd_status st = GD_OK;
    gd_dataset_t *ds = NULL;
    hg_ctx g;
    memset(&g, 0, sizeof g);
    for (int i = 0; i < HG_PRESETS; i++)
        if (strcmp(hg_presets[i].name, o->preset) == 0) g.p = &hg_presets[i];
    GD_REQUIRE(g.p, GD_ERR_INVALID_ARG, "generate: '%s' is not a heterogeneous preset (%s)",
               o->preset, gd__generate_hetero_names());
    GD_REQUIRE(o->avg_degree == 0 && o->feature_dim == 0, GD_ERR_INVALID_ARG,
               "generate: preset %s sets a degree and a width per node and edge type; "
               "--avg-degree and --feature-dim apply to the homogeneous presets only",
               o->preset);
    GD_REQUIRE(o->num_nodes >= 0 && o->num_classes >= 0, GD_ERR_INVALID_ARG,
               "generate: negative node or class count");
    const hg_preset *p = g.p;
    g.seed = o->seed;
    g.threads = o->threads > 0 ? o->threads : gd__num_threads();
    g.dtype = o->feature_dtype == GD_DTYPE_INVALID ? GD_DTYPE_FLOAT32 : o->feature_dtype;
    GD_REQUIRE(g.dtype == GD_DTYPE_FLOAT32 || g.dtype == GD_DTYPE_FLOAT16 ||
                   g.dtype == GD_DTYPE_BFLOAT16,
               GD_ERR_INVALID_ARG, "generate: feature dtype %s; use float32, float16 or bfloat16",
               gd_dtype_name(g.dtype));
    const int64_t total = o->num_nodes > 0 ? o->num_nodes : p->num_nodes;
    hg_preset scaled = *p;
    if (o->num_classes > 0) scaled.classes = o->num_classes;
    g.p = &scaled;
    /* Each type's share of the nodes, every type at least one node. */
    for (int t = 0; t < p->num_types; t++) {
        int64_t c = (int64_t)llround(p->types[t].count * (double)total);
        g.off[t + 1] = g.off[t] + (c < 1 ? 1 : c);
    }
    g.n = g.off[p->num_types];
    GD_REQUIRE(g.n <= (INT64_C(1) << 40), GD_ERR_RANGE, "generate: %lld nodes are too many",
               (long long)g.n);
    if (!o->out_dir) {
        double edges = 0, bytes = 0;
        for (int r = 0; r < p->num_rels; r++) {
            const int d = p->rels[r].dst;
            edges += p->rels[r].avg_degree * (double)(g.off[d + 1] - g.off[d]);
        }
        for (int t = 0; t < p->num_types; t++)
            bytes += (double)(g.off[t + 1] - g.off[t]) * (double)p->types[t].dim *
                     (double)gd_dtype_size(g.dtype);
        GD_CHECK(gd__dataset_memory_check(g.n, (int64_t)edges, 0, 0, (int64_t)bytes,
                                          "generate: the dataset in memory"));
    }
    char name[64];
    snprintf(name, sizeof name, "synthetic-%s", p->name);
    GD_CHECK(gd__dataset_new(name, o->out_dir, o->overwrite, &ds));
    gd__schema sc;
    memset(&sc, 0, sizeof sc);
    sc.num_node_types = p->num_types;
    sc.target_type = p->target;
    for (int t = 0; t < p->num_types; t++)
        snprintf(sc.node_type[t], sizeof sc.node_type[t], "%s", p->types[t].name);
    for (int r = 0; r < p->num_rels; r++) {
        snprintf(sc.edge_type[r], sizeof sc.edge_type[r], "%s", p->rels[r].name);
        sc.edge_src[r] = p->rels[r].src;
        sc.edge_dst[r] = p->rels[r].dst;
    }
    sc.num_edge_types = p->num_rels;
    GD_CHECK(gd__dataset_set_schema(ds, &sc));
    int64_t shape[2] = {p->num_types + 1, 1};
    void *ptr = NULL;
    GD_CHECK(gd__dataset_alloc(ds, GD__ARRAY_NODE_TYPE_OFFSET, GD_DTYPE_INT64, 1, shape, &ptr));
    memcpy(ptr, g.off, (size_t)(p->num_types + 1) * sizeof(int64_t));

    GD_CHECK(hg_graph(&g, ds, o->progress, o->progress_user));
    GD_CHECK(hg_features(&g, ds, o->progress, o->progress_user));
    GD_CHECK(hg_labels_splits(&g, ds));
    ds->num_classes = scaled.classes;
    GD_CHECK(gd__dataset_set_infof(ds, "generator", "graphdirect synthetic heterogeneous v1"));
    GD_CHECK(gd__dataset_set_infof(ds, "preset", "%s", p->name));
    GD_CHECK(gd__dataset_set_infof(ds, "seed", "%llu", (unsigned long long)g.seed));
    GD_CHECK(gd__dataset_set_infof(ds, "degree_law", "lomax alpha=%.2f per relation, max %d", HG_ALPHA,
                     HG_MAX_DEGREE));
    GD_CHECK(gd__dataset_set_infof(ds, "source_pick", "p_in=%.2f rank=floor(m*u^2) in the community",
                     scaled.p_in));
    GD_CHECK(gd__dataset_set_infof(ds, "features", "centroid N(0,1) + %.4g * N(0,1)", scaled.noise));
    GD_CHECK(gd__progress(o->progress, o->progress_user, "generate: finish", 0, 1));
    GD_CHECK(gd__dataset_finish(ds, g.indptr[g.n] <= ((int64_t)1 << 24)));
    if (out)
        *out = ds;
    else
        gd_dataset_close(ds);
    return GD_OK;
fail:
    for (int t = 0; t < GD_MAX_NODE_TYPES; t++) gd_free(g.centroids[t]);
    gd_dataset_close(ds);
    return st;
}
