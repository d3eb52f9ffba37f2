/*
 * The relational models' exact (layer-wise) inference (src/train/hetero_infer.c), R-GAT's,
 * R-SAGE's and R-GCN's, against the model's own forward over typed minibatches sampled with every
 * neighbour (fanout -1 for every layer and relation), logit by logit: on a generated mag-tiny (four
 * node types, featureless ones among them, seven relations, nodes without neighbours of some
 * relations) for 1 and 2 layers and (R-GAT) 1 to 3 heads, every target node's exact logits equal
 * its sampled ones within 1e-5 (relative above 1), and its predicted class is the argmax of its
 * sampled logits wherever the top two are more than that apart. Both run on the CPU backend in
 * evaluation (dropout configured but off), from the same freshly initialised parameters; the
 * tables are float32 and bfloat16 (both widened as the gather does). Chunks of 100 nodes give
 * the default chunks' logits within 1e-5.
 *
 * On a GPU (skipped without one), the same model created on the GPU (the same parameters:
 * Philox) infers exactly on the GPU as the CPU run did, logits within 1e-4 (relative above 1),
 * on float32, float16 and bfloat16 tables: with every table in GPU memory (the default budget),
 * and with a budget of the scratch alone, which leaves every table in pinned host memory read
 * zero-copy, in chunks of 100 nodes.
 */
#include "io/dataset.h"
#include "nn/model.h"
#include "nn/rgat.h"
#include "sample/hetero.h"
#include "train/internal.h"
#include "test.h"

#define BATCH 512
#define HIDDEN 8
#define TOL 1e-5
#define GPU_TOL 1e-4

static int have_gpu;
#ifdef GD_WITH_CUDA
static gd__nn_ctx gpu;
#endif

/* The dataset's schema, input widths and the sampler's capacities, as the trainer builds them. */
static gd__rsage_config config(const gd_dataset_t *ds, const gd_hetero_sampler_t *s, int L) {
    gd__rsage_config rc;
    memset(&rc, 0, sizeof rc);
    rc.schema.num_types = gd_dataset_num_node_types(ds);
    rc.schema.num_relations = gd_dataset_num_edge_types(ds);
    rc.schema.target_type = gd_dataset_target_type(ds);
    for (int r = 0; r < rc.schema.num_relations; r++) {
        gd_edge_type_info ei = GD_EDGE_TYPE_INFO_INIT;
        T_OK(gd_dataset_edge_type(ds, r, &ei));
        rc.schema.rel_src[r] = ei.src_type;
        rc.schema.rel_dst[r] = ei.dst_type;
    }
    for (int t = 0; t < rc.schema.num_types; t++) {
        gd_node_type_info ti = GD_NODE_TYPE_INFO_INIT;
        T_OK(gd_dataset_node_type(ds, t, &ti));
        rc.in_dim[t] = ti.feature_dim;
    }
    rc.hidden_dim = HIDDEN;
    rc.num_classes = gd_dataset_num_classes(ds);
    rc.num_layers = L;
    rc.dropout = 0.5;
    rc.dtype = GD_DTYPE_FLOAT32;
    T_OK(gd__hetero_sampler_capacity(s, rc.max_nodes, rc.max_edges));
    return rc;
}

/* Type t's input rows of a minibatch (its layer-0 nodes), widened to float32. */
static float *gather(const gd_dataset_t *ds, int t, const int64_t *ids, int64_t n, int64_t dim,
                     int64_t off) {
    float *x = malloc((size_t)(n > 0 ? n : 1) * (size_t)(dim > 0 ? dim : 1) * sizeof *x);
    T_ASSERT(x);
    if (dim == 0) return x;
    gd_array_view f;
    T_OK(gd_dataset_type_features(ds, t, &f));
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < dim; j++)
            x[i * dim + j] = gd__feature_at(f.data, f.dtype, (ids[i] - off) * dim + j);
    return x;
}

/*
 * The sampled forward of one batch of seeds with every neighbour, compared with the exact
 * logits (n_target x C) and predictions; returns the seeds whose top two were too close to
 * compare the class.
 */
static int64_t compare_batch(const gd_dataset_t *ds, gd__model *model, const gd__rsage_config *rc,
                             gd_hetero_sampler_t *s, gd_hetero_minibatch_t *mb,
                             const int64_t *seeds, int64_t n, const float *exact,
                             const int32_t *pred) {
    const int T = rc->schema.num_types, R = rc->schema.num_relations, L = rc->num_layers;
    const int target = rc->schema.target_type;
    const int64_t C = rc->num_classes;
    gd_array_view offv;
    T_OK(gd_dataset_node_type_offsets(ds, &offv));
    const int64_t *off = offv.data;
    gd_block blocks[GD__RSAGE_MAX_LAYERS * GD__RSAGE_MAX_RELATIONS];
    int64_t num_nodes[(GD__RSAGE_MAX_LAYERS + 1) * GD__RSAGE_MAX_TYPES];
    gd__nn_tensor xs[GD__RSAGE_MAX_TYPES];
    const gd__nn_tensor *x[GD__RSAGE_MAX_TYPES];
    const int64_t *ids[GD__RSAGE_MAX_TYPES];
    float *rows[GD__RSAGE_MAX_TYPES];
    T_OK(gd_hetero_sample(s, seeds, n, 0, 0, mb));
    for (int l = 0; l < L; l++)
        for (int r = 0; r < R; r++) T_OK(gd_hetero_minibatch_block(mb, l, r, &blocks[l * R + r]));
    for (int l = 0; l <= L; l++)
        for (int t = 0; t < T; t++) {
            const int64_t *lids;
            T_OK(gd_hetero_minibatch_nodes(mb, l, t, &lids, &num_nodes[l * T + t]));
            if (l == 0) ids[t] = lids;
        }
    for (int t = 0; t < T; t++) {
        rows[t] = gather(ds, t, ids[t], num_nodes[t], rc->in_dim[t], off[t]);
        xs[t] = gd__nn_view(rows[t], GD_DTYPE_FLOAT32, GD__NN_HOST, num_nodes[t], rc->in_dim[t]);
        x[t] = rc->in_dim[t] > 0 ? &xs[t] : NULL;
    }
    gd__nn_tensor logits;
    T_OK(gd__model_typed_forward(model, blocks, num_nodes, x, ids, 0, 7, &logits));
    T_EQ_INT(logits.rows, n);
    const float *z = logits.data;
    int64_t close = 0;
    for (int64_t i = 0; i < n; i++) {
        const int64_t v = seeds[i] - off[target];
        int64_t best = 0, second = -1;
        for (int64_t c = 0; c < C; c++) {
            const double want = z[i * C + c], got = exact[v * C + c];
            if (fabs(got - want) > TOL * (fabs(want) > 1 ? fabs(want) : 1))
                T_FAIL_("node %lld class %lld: exact logit %.9g, sampled %.9g", (long long)seeds[i],
                        (long long)c, got, want);
            if (c > 0 && z[i * C + c] > z[i * C + best]) {
                second = best;
                best = c;
            } else if (c > 0 && (second < 0 || z[i * C + c] > z[i * C + second])) {
                second = c;
            }
        }
        if (second >= 0 && z[i * C + best] - z[i * C + second] <= 2 * TOL)
            close++;
        else
            T_EQ_INT(pred[v], best);
    }
    for (int t = 0; t < T; t++) free(rows[t]);
    return close;
}

/* got against want (n x C logits), within tol (relative above 1); the classes where not tied. */
static void same_logits(const float *got, const int32_t *gp, const float *want, const int32_t *wp,
                        int64_t n, int64_t C, double tol, const char *what) {
    for (int64_t i = 0; i < n; i++) {
        int64_t best = 0, second = -1;
        for (int64_t c = 0; c < C; c++) {
            const double w = want[i * C + c], g = got[i * C + c];
            if (!(fabs(g - w) <= tol * (fabs(w) > 1 ? fabs(w) : 1)))
                T_FAIL_("%s: node %lld class %lld: logit %.9g, expected %.9g", what, (long long)i,
                        (long long)c, g, w);
            if (c > 0 && want[i * C + c] > want[i * C + best]) {
                second = best;
                best = c;
            } else if (c > 0 && (second < 0 || want[i * C + c] > want[i * C + second])) {
                second = c;
            }
        }
        if (second < 0 || want[i * C + best] - want[i * C + second] > 2 * tol) {
            T_EQ_INT(wp[i], best);
            T_EQ_INT(gp[i], best);
        }
    }
}

/* The exact inference of the model's kind. */
static gd_status exact(const gd_dataset_t *ds, gd__model *m, gd__model_kind kind,
                       const gd__hinfer_options *o, int32_t *pred, float *logits) {
    return kind == GD__MODEL_RGAT ? gd__htrain_exact_rgat(ds, m, o, pred, logits)
                                  : gd__htrain_exact_rsage(ds, m, o, pred, logits);
}

#ifdef GD_WITH_CUDA
/*
 * The GPU's exact inference of the model of mc (created on the GPU from seed) against the CPU's
 * logits and predictions: every table in GPU memory, then every table pinned.
 */
static void check_gpu(const gd_dataset_t *ds, const gd__model_config *mc, uint64_t seed,
                      const float *want, const int32_t *wpred, int64_t nt, const char *what) {
    const int64_t C = mc->num_classes;
    gd__model *model = NULL;
    T_OK(gd__model_create(&gpu, mc, seed, &model));
    float *got = malloc((size_t)(nt * C) * sizeof *got);
    int32_t *pred = malloc((size_t)nt * sizeof *pred);
    T_ASSERT(got && pred);
    gd__hinfer_stats stats;
    gd__hinfer_options o;
    memset(&o, 0, sizeof o);
    o.stats = &stats;
    for (int pass = 0; pass < 2; pass++) {
        for (int64_t i = 0; i < nt * C; i++) got[i] = NAN; /* poisoned */
        for (int64_t i = 0; i < nt; i++) pred[i] = -1;
        if (pass == 1) {
            /* The scratch alone: no table fits, every one is read from pinned host memory. */
            o.chunk_rows = 100;
            T_OK(exact(ds, model, mc->kind, &o, pred, got)); /* the scratch of these chunks */
            o.memory_budget = stats.scratch_bytes;
            for (int64_t i = 0; i < nt * C; i++) got[i] = NAN;
        }
        T_OK(exact(ds, model, mc->kind, &o, pred, got));
        fprintf(stderr,
                "  GPU %s: %lld nodes a chunk, %d tables in GPU memory, %d pinned, %lld bytes\n",
                what, (long long)stats.chunk_rows, stats.tables_on_device, stats.tables_pinned,
                (long long)stats.device_bytes);
        if (pass == 0) {
            T_EQ_INT(stats.tables_pinned, 0);
        } else {
            T_EQ_INT(stats.tables_on_device, 0);
            T_ASSERT(stats.tables_pinned > 0);
            T_EQ_INT(stats.chunk_rows, 100);
        }
        same_logits(got, pred, want, wpred, nt, C, GPU_TOL, what);
    }
    free(got);
    free(pred);
    gd__model_destroy(model);
}
#endif

/*
 * A model of the kind with L layers and H heads on ds: exact against sampled for every target
 * node; exact in chunks of 100 nodes against the default chunks; on a GPU against the CPU.
 */
static void check(const gd_dataset_t *ds, gd__model_kind kind, int L, int H, uint64_t seed) {
    const int R = gd_dataset_num_edge_types(ds);
    int fanouts[GD_SAMPLER_MAX_LAYERS * GD_MAX_EDGE_TYPES];
    for (int i = 0; i < L * R; i++) fanouts[i] = -1;
    gd_sampler_options so = GD_SAMPLER_OPTIONS_INIT;
    so.max_batch = BATCH;
    so.seed = seed;
    gd_hetero_sampler_t *s = NULL;
    gd_hetero_minibatch_t *mb = NULL;
    T_OK(gd_hetero_sampler_create(ds, fanouts, L, &so, &s));
    T_OK(gd_hetero_minibatch_create(s, &mb));
    gd__rsage_config rc = config(ds, s, L);
    gd__model_config mc =
        gd__model_config_make(kind, L, 0, HIDDEN, rc.num_classes, 0.5, GD_DTYPE_FLOAT32);
    mc.typed = &rc;
    if (kind == GD__MODEL_RGAT) {
        mc.heads = H;
        mc.attn_dropout = 0.3;
    }
    const gd__nn_ctx cpu = {&gd__nn_cpu_backend, GD__NN_HOST, NULL, NULL, NULL};
    gd__model *model = NULL;
    T_OK(gd__model_create(&cpu, &mc, seed, &model));

    gd_node_type_info ti = GD_NODE_TYPE_INFO_INIT;
    T_OK(gd_dataset_node_type(ds, rc.schema.target_type, &ti));
    const int64_t nt = ti.count, C = rc.num_classes;
    float *logits = malloc((size_t)(nt * C) * sizeof *logits);
    int32_t *pred = malloc((size_t)nt * sizeof *pred);
    int64_t *seeds = malloc((size_t)nt * sizeof *seeds);
    T_ASSERT(logits && pred && seeds);
    for (int64_t i = 0; i < nt * C; i++) logits[i] = NAN; /* poisoned: every row must be written */
    T_OK(exact(ds, model, kind, NULL, pred, logits));
    for (int64_t i = 0; i < nt; i++) seeds[i] = ti.offset + i;
    int64_t close = 0;
    for (int64_t lo = 0; lo < nt; lo += BATCH)
        close += compare_batch(ds, model, &rc, s, mb, seeds + lo, nt - lo < BATCH ? nt - lo : BATCH,
                               logits, pred);
    const char *name = kind == GD__MODEL_RGAT   ? "R-GAT"
                       : kind == GD__MODEL_RGCN ? "R-GCN"
                                                : "R-SAGE";
    fprintf(stderr,
            "%s, %d layer(s), %d head(s): %lld target nodes' logits equal (%lld near ties)\n", name,
            L, H, (long long)nt, (long long)close);
    /* Chunks of 100 nodes: more blocks than the two staging buffers, the same logits. */
    float *small = malloc((size_t)(nt * C) * sizeof *small);
    int32_t *spred = malloc((size_t)nt * sizeof *spred);
    T_ASSERT(small && spred);
    for (int64_t i = 0; i < nt * C; i++) small[i] = NAN;
    gd__hinfer_options o;
    memset(&o, 0, sizeof o);
    o.chunk_rows = 100;
    T_OK(exact(ds, model, kind, &o, spred, small));
    same_logits(small, spred, logits, pred, nt, C, TOL, "chunks of 100");
    free(small);
    free(spred);
#ifdef GD_WITH_CUDA
    if (have_gpu) {
        char what[64];
        snprintf(what, sizeof what, "%s, %d layer(s), %d head(s)", name, L, H);
        check_gpu(ds, &mc, seed, logits, pred, nt, what);
    }
#endif
    free(logits);
    free(pred);
    free(seeds);
    gd__model_destroy(model);
    gd_hetero_minibatch_destroy(mb);
    gd_hetero_sampler_destroy(s);
}

int main(void) {
    const uint64_t seed = t_seed() % 100000;
    static const gd_dtype dtypes[3] = {GD_DTYPE_FLOAT32, GD_DTYPE_BFLOAT16, GD_DTYPE_FLOAT16};
    static const int shapes[4][2] = {{2, 2}, {1, 1}, {2, 1}, {1, 3}};
#ifdef GD_WITH_CUDA
    have_gpu = gd_device_count() > 0;
    if (have_gpu) T_OK(gd__nn_cuda_ctx_create(0, &gpu));
#endif
    if (!have_gpu) fprintf(stderr, "no GPU: the GPU parts are skipped\n");
    for (int d = 0; d < 3; d++) {
        gd_generate_options go = GD_GENERATE_OPTIONS_INIT;
        go.preset = "mag-tiny";
        go.seed = seed;
        go.feature_dtype = dtypes[d];
        gd_dataset_t *ds = NULL;
        T_OK(gd_generate(&go, &ds));
        fprintf(stderr, "mag-tiny, %s features:\n", gd_dtype_name(dtypes[d]));
        for (int i = 0; i < 4; i++)
            if (d == 0 || i == 0)
                check(ds, GD__MODEL_RGAT, shapes[i][0], shapes[i][1], seed + (uint64_t)i);
        check(ds, GD__MODEL_RSAGE, 2, 1, seed + 7);
        if (d == 0) check(ds, GD__MODEL_RSAGE, 1, 1, seed + 8);
        check(ds, GD__MODEL_RGCN, 2, 1, seed + 9);
        if (d == 0) check(ds, GD__MODEL_RGCN, 1, 1, seed + 10);
        gd_dataset_close(ds);
    }
#ifdef GD_WITH_CUDA
    if (have_gpu) gd__nn_cuda_ctx_destroy(&gpu);
#endif
    t_check_no_leaks();
    fprintf(stderr, "test_rgat_exact: ok\n");
    return 0;
}
