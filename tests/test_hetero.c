/*
 * Heterogeneous datasets and typed sampling: the generated presets, their directory round trip
 * and validation (every kind of bad array or meta.json names its problem), and the typed
 * sampler's minibatches checked against the graph itself: every drawn edge exists with its
 * type, every destination gets min(fanout, its run) distinct neighbours, local ids follow the
 * rules, and the result does not depend on the thread count.
 */
#include "test.h"

#include <graphdirect.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static gd_dataset_t *make(const char *preset, uint64_t seed, int threads, const char *dir) {
    gd_generate_options go = GD_GENERATE_OPTIONS_INIT;
    go.preset = preset;
    go.seed = seed;
    go.threads = threads;
    go.out_dir = dir;
    go.overwrite = 1;
    gd_dataset_t *ds = NULL;
    T_OK(gd_generate(&go, &ds));
    return ds;
}

static int64_t view_bytes(const gd_array_view *v) {
    return v->shape[0] * (v->ndim == 2 ? v->shape[1] : 1) * (int64_t)gd_dtype_size(v->dtype);
}

/* Two datasets hold the same arrays, byte for byte. */
static void same_data(const gd_dataset_t *a, const gd_dataset_t *b) {
    T_EQ_INT(gd_dataset_num_node_types(a), gd_dataset_num_node_types(b));
    T_EQ_INT(gd_dataset_num_edge_types(a), gd_dataset_num_edge_types(b));
    T_EQ_INT(gd_dataset_target_type(a), gd_dataset_target_type(b));
    for (int id = 0; id < GD_ARRAY_COUNT; id++) {
        gd_array_view x, y;
        const gd_status sa = gd_dataset_array(a, (gd_array_id)id, &x);
        T_EQ_INT(sa, gd_dataset_array(b, (gd_array_id)id, &y));
        if (sa != GD_OK) continue;
        T_EQ_INT(view_bytes(&x), view_bytes(&y));
        T_ASSERT(memcmp(x.data, y.data, (size_t)view_bytes(&x)) == 0);
    }
    gd_array_view x, y;
    T_OK(gd_dataset_edge_types(a, &x));
    T_OK(gd_dataset_edge_types(b, &y));
    T_ASSERT(view_bytes(&x) == view_bytes(&y) && memcmp(x.data, y.data, (size_t)view_bytes(&x)) == 0);
    for (int t = 0; t < gd_dataset_num_node_types(a); t++) {
        const gd_status sa = gd_dataset_type_features(a, t, &x);
        T_EQ_INT(sa, gd_dataset_type_features(b, t, &y));
        if (sa != GD_OK) continue;
        T_ASSERT(view_bytes(&x) == view_bytes(&y) &&
                 memcmp(x.data, y.data, (size_t)view_bytes(&x)) == 0);
    }
}

static void presets(uint64_t seed, const char *tmp) {
    static const char *const names[] = {"mag-tiny", "igbh-tiny"};
    for (int p = 0; p < 2; p++) {
        gd_dataset_t *one = make(names[p], seed, 1, NULL), *two = make(names[p], seed, 2, NULL);
        same_data(one, two); /* the thread count changes nothing */
        T_ASSERT(gd_dataset_num_node_types(one) == 4 && gd_dataset_num_edge_types(one) == 7);
        T_EQ_INT(gd_dataset_feature_dim(one), 0);
        int64_t covered = 0;
        for (int t = 0; t < 4; t++) {
            gd_node_type_info ti = GD_NODE_TYPE_INFO_INIT;
            T_OK(gd_dataset_node_type(one, t, &ti));
            T_EQ_INT(ti.offset, covered);
            covered += ti.count;
            gd_array_view f;
            const gd_status st = gd_dataset_type_features(one, t, &f);
            if (ti.feature_dim == 0) {
                T_EQ_INT(st, GD_ERR_NOT_FOUND);
            } else {
                T_OK(st);
                T_ASSERT(f.shape[0] == ti.count && f.shape[1] == ti.feature_dim);
            }
        }
        T_EQ_INT(covered, gd_dataset_num_nodes(one));
        /* Saved and opened again with every value checked: the same arrays. */
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/%s", tmp, names[p]);
        T_OK(gd_dataset_save(one, dir, 1));
        gd_dataset_open_options oo = GD_DATASET_OPEN_OPTIONS_INIT;
        oo.validate_graph = 2;
        gd_dataset_t *back = NULL;
        T_OK(gd_dataset_open(dir, &oo, &back));
        same_data(one, back);
        /* Written straight to disk by the generator: the same again. */
        snprintf(dir, sizeof dir, "%s/%s-direct", tmp, names[p]);
        gd_dataset_t *direct = make(names[p], seed, 2, dir);
        same_data(one, direct);
        gd_dataset_close(direct);
        gd_dataset_close(back);
        gd_dataset_close(one);
        gd_dataset_close(two);
    }
    gd_node_type_info ti = GD_NODE_TYPE_INFO_INIT;
    gd_dataset_t *homo = t_tiny_dataset(seed);
    T_EQ_INT(gd_dataset_num_node_types(homo), 0);
    T_EQ_INT(gd_dataset_target_type(homo), -1);
    T_FAILS(gd_dataset_node_type(homo, 0, &ti), GD_ERR_NOT_FOUND, "homogeneous");
    gd_dataset_close(homo);
}

/* ----------------------------------------------------------------- validation */

/* Overwrite `n` bytes at element `index` of the .npy file dir/file. */
static void poke(const char *dir, const char *file, int64_t index, const void *bytes, size_t n) {
    char path[4300];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    gd_npy_info info;
    T_OK(gd_npy_read_info(path, &info));
    FILE *f = fopen(path, "r+b");
    T_ASSERT(f);
    T_ASSERT(fseek(f, (long)(info.data_offset + index * (int64_t)gd_dtype_size(info.dtype)),
                   SEEK_SET) == 0);
    T_ASSERT(fwrite(bytes, 1, n, f) == n);
    fclose(f);
}

static void expect_open_fails(const char *dir, gd_status status, const char *needle) {
    gd_dataset_open_options oo = GD_DATASET_OPEN_OPTIONS_INIT;
    oo.validate_graph = 2;
    gd_dataset_t *ds = NULL;
    T_FAILS(gd_dataset_open(dir, &oo, &ds), status, needle);
    T_ASSERT(ds == NULL);
}

/* Replace the first occurrence of `from` in dir/meta.json by `to`. */
static void edit_meta(const char *dir, const char *from, const char *to) {
    char path[4300], *text = NULL;
    snprintf(path, sizeof path, "%s/meta.json", dir);
    FILE *f = fopen(path, "rb");
    T_ASSERT(f);
    T_ASSERT(fseek(f, 0, SEEK_END) == 0);
    const long n = ftell(f);
    T_ASSERT(n > 0 && fseek(f, 0, SEEK_SET) == 0);
    text = calloc((size_t)n + 1, 1);
    T_ASSERT(text && fread(text, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    char *at = strstr(text, from);
    T_ASSERT(at);
    f = fopen(path, "wb");
    T_ASSERT(f);
    fwrite(text, 1, (size_t)(at - text), f);
    fputs(to, f);
    fputs(at + strlen(from), f);
    fclose(f);
    free(text);
}

/* A fresh copy of the mag-tiny dataset at tmp/bad, for one corruption. */
static void fresh(const gd_dataset_t *good, const char *tmp, char *dir, size_t n) {
    snprintf(dir, n, "%s/bad", tmp);
    T_OK(gd_dataset_save(good, dir, 1));
}

static void validation(uint64_t seed, const char *tmp) {
    gd_dataset_t *good = make("mag-tiny", seed, 0, NULL);
    char dir[4200];
    gd_array_view ip, ix, et, off, tr;
    T_OK(gd_dataset_array(good, GD_ARRAY_INDPTR, &ip));
    T_OK(gd_dataset_array(good, GD_ARRAY_INDICES, &ix));
    T_OK(gd_dataset_edge_types(good, &et));
    T_OK(gd_dataset_node_type_offsets(good, &off));
    T_OK(gd_dataset_array(good, GD_ARRAY_TRAIN_IDX, &tr));
    const int64_t *indptr = ip.data, *offs = off.data;
    const uint8_t *types = et.data;
    T_EQ_INT(et.dtype, GD_DTYPE_UINT8);
    /* A paper (type 0) with at least two runs, the first its cites run (edge type 0). */
    int64_t v = -1;
    for (int64_t u = 0; u < offs[1] && v < 0; u++) {
        const int64_t a = indptr[u], b = indptr[u + 1];
        if (b - a >= 2 && types[a] == 0 && types[b - 1] != 0) v = u;
    }
    T_ASSERT(v >= 0);
    const int64_t a = indptr[v];

    fresh(good, tmp, dir, sizeof dir);
    const uint8_t big = 9;
    poke(dir, "edge_type.npy", a, &big, 1);
    expect_open_fails(dir, GD_ERR_RANGE, "outside [0, 7)");

    /* The first and last edges of v's list swapped, each keeping its type: unsorted. */
    fresh(good, tmp, dir, sizeof dir);
    const int64_t z = indptr[v + 1] - 1;
    const int32_t *idx = ix.data;
    poke(dir, "edge_type.npy", a, &types[z], 1);
    poke(dir, "edge_type.npy", z, &types[a], 1);
    poke(dir, "indices.npy", a, &idx[z], sizeof idx[z]);
    poke(dir, "indices.npy", z, &idx[a], sizeof idx[a]);
    expect_open_fails(dir, GD_ERR_FORMAT, "sorted by edge type");

    /* A cites edge (paper -> paper) whose source is made an author. */
    fresh(good, tmp, dir, sizeof dir);
    const int32_t author = (int32_t)offs[1];
    poke(dir, "indices.npy", a, &author, sizeof author);
    expect_open_fails(dir, GD_ERR_FORMAT, "nodes are of types author and paper");

    /* The type offsets must cover the nodes. */
    fresh(good, tmp, dir, sizeof dir);
    const int64_t short_end = offs[4] - 1;
    poke(dir, "node_type_offset.npy", 4, &short_end, sizeof short_end);
    expect_open_fails(dir, GD_ERR_FORMAT, "node_type_offset.npy");

    /* A training node that is not a paper. */
    fresh(good, tmp, dir, sizeof dir);
    poke(dir, "train_idx.npy", 0, &offs[2], sizeof offs[2]);
    expect_open_fails(dir, GD_ERR_RANGE, "not of the target type paper");

    /* A NaN in the paper features. */
    fresh(good, tmp, dir, sizeof dir);
    const float nan = 0.0f / 0.0f;
    poke(dir, "features_paper.npy", 77, &nan, sizeof nan);
    expect_open_fails(dir, GD_ERR_FORMAT, "features_paper.npy: element (0, 77)");

    /* meta.json: an edge type naming a node type that does not exist, a repeated node type,
     * a name that is not a plain word, a missing array, an unknown target. */
    fresh(good, tmp, dir, sizeof dir);
    edit_meta(dir, "[\"paper\", \"cites\", \"paper\"]", "[\"paper\", \"cites\", \"venue\"]");
    expect_open_fails(dir, GD_ERR_FORMAT, "not one of 'hetero.node_types'");
    fresh(good, tmp, dir, sizeof dir);
    edit_meta(dir, "\"institution\", \"field", "\"author\", \"field");
    expect_open_fails(dir, GD_ERR_FORMAT, "both named \"author\"");
    fresh(good, tmp, dir, sizeof dir);
    edit_meta(dir, "\"node_types\":\t[\"paper\"", "\"node_types\":\t[\"pa/per\"");
    expect_open_fails(dir, GD_ERR_FORMAT, "letters, digits");
    fresh(good, tmp, dir, sizeof dir);
    edit_meta(dir, "\"target_type\":\t\"paper\"", "\"target_type\":\t\"venue\"");
    expect_open_fails(dir, GD_ERR_FORMAT, "hetero.target_type");
    fresh(good, tmp, dir, sizeof dir);
    edit_meta(dir, "\"edge_type\":", "\"edge_types_x\":");
    expect_open_fails(dir, GD_ERR_FORMAT, "unknown entry \"edge_types_x\"");
    /* The types' arrays without the types. */
    fresh(good, tmp, dir, sizeof dir);
    edit_meta(dir, "\"hetero\":", "\"hetero_off\":");
    expect_open_fails(dir, GD_ERR_FORMAT, "need its 'hetero' field");
    gd_dataset_close(good);
}

/* ------------------------------------------------------------------- sampling */

/* Whether node u is one of v's in-neighbours of edge type r, at a position not yet taken. */
static int take_edge(const int64_t *indptr, const int32_t *indices, const uint8_t *types,
                     int64_t v, int64_t u, int r, uint8_t *taken) {
    for (int64_t i = indptr[v]; i < indptr[v + 1]; i++)
        if (indices[i] == u && types[i] == r && !taken[i]) return taken[i] = 1;
    return 0;
}

/* One minibatch against the graph. */
static void check_minibatch(const gd_dataset_t *ds, const gd_hetero_minibatch_t *mb,
                            const int *fanouts, int L, const int64_t *seeds, int64_t n,
                            uint8_t *taken) {
    const int T = gd_dataset_num_node_types(ds), R = gd_dataset_num_edge_types(ds);
    gd_array_view ip, ix, et, off;
    T_OK(gd_dataset_array(ds, GD_ARRAY_INDPTR, &ip));
    T_OK(gd_dataset_array(ds, GD_ARRAY_INDICES, &ix));
    T_OK(gd_dataset_edge_types(ds, &et));
    T_OK(gd_dataset_node_type_offsets(ds, &off));
    const int64_t *indptr = ip.data, *offs = off.data;
    const int32_t *indices = ix.data;
    const uint8_t *types = et.data;
    const int target = gd_dataset_target_type(ds);
    /* The seeds first, in order, and nothing else at the top layer. */
    const int64_t *ids;
    int64_t cnt, prev[GD_MAX_NODE_TYPES];
    for (int t = 0; t < T; t++) {
        T_OK(gd_hetero_minibatch_nodes(mb, L, t, &ids, &cnt));
        T_EQ_INT(cnt, t == target ? n : 0);
        for (int64_t i = 0; t == target && i < n; i++) T_EQ_INT(ids[i], seeds[i]);
        prev[t] = cnt;
    }
    for (int l = L - 1; l >= 0; l--) {
        for (int t = 0; t < T; t++) {
            T_OK(gd_hetero_minibatch_nodes(mb, l, t, &ids, &cnt));
            T_ASSERT(cnt >= prev[t]); /* the layer above is a prefix */
            for (int64_t i = 0; i < cnt; i++) {
                T_ASSERT(ids[i] >= offs[t] && ids[i] < offs[t + 1]);
                for (int64_t j = 0; j < i && j < 64; j++) T_ASSERT(ids[j] != ids[i]);
            }
        }
        const int h = L - 1 - l;
        for (int r = 0; r < R; r++) {
            gd_edge_type_info ei = GD_EDGE_TYPE_INFO_INIT;
            T_OK(gd_dataset_edge_type(ds, r, &ei));
            gd_block b;
            T_OK(gd_hetero_minibatch_block(mb, l, r, &b));
            const int64_t *dst_ids, *src_ids;
            int64_t nd, ns;
            T_OK(gd_hetero_minibatch_nodes(mb, l + 1, ei.dst_type, &dst_ids, &nd));
            T_OK(gd_hetero_minibatch_nodes(mb, l, ei.src_type, &src_ids, &ns));
            T_EQ_INT(b.num_dst, nd);
            T_EQ_INT(b.num_src, ns);
            T_EQ_INT(b.indptr[0], 0);
            T_EQ_INT(b.indptr[nd], b.num_edges);
            const int f = fanouts[h * R + r];
            for (int64_t d = 0; d < nd; d++) {
                const int64_t v = dst_ids[d];
                int64_t run = 0;
                for (int64_t i = indptr[v]; i < indptr[v + 1]; i++) run += types[i] == r;
                const int64_t want = f < 0 ? run : f < run ? f : run;
                T_EQ_INT(b.indptr[d + 1] - b.indptr[d], want);
                for (int32_t e = b.indptr[d]; e < b.indptr[d + 1]; e++) {
                    T_ASSERT(b.indices[e] >= 0 && b.indices[e] < ns);
                    /* Each drawn edge exists, with this type, once per list position. */
                    T_ASSERT(take_edge(indptr, indices, types, v, src_ids[b.indices[e]], r, taken));
                }
                for (int64_t i = indptr[v]; i < indptr[v + 1]; i++) taken[i] = 0;
            }
        }
        for (int t = 0; t < T; t++) {
            T_OK(gd_hetero_minibatch_nodes(mb, l, t, &ids, &cnt));
            prev[t] = cnt;
        }
    }
}

/* The arrays of two minibatches are equal. */
static void same_minibatch(const gd_hetero_minibatch_t *a, const gd_hetero_minibatch_t *b, int L,
                           int T, int R) {
    for (int l = 0; l <= L; l++)
        for (int t = 0; t < T; t++) {
            const int64_t *x, *y;
            int64_t nx, ny;
            T_OK(gd_hetero_minibatch_nodes(a, l, t, &x, &nx));
            T_OK(gd_hetero_minibatch_nodes(b, l, t, &y, &ny));
            T_EQ_INT(nx, ny);
            T_ASSERT(memcmp(x, y, (size_t)nx * sizeof *x) == 0);
        }
    for (int l = 0; l < L; l++)
        for (int r = 0; r < R; r++) {
            gd_block x, y;
            T_OK(gd_hetero_minibatch_block(a, l, r, &x));
            T_OK(gd_hetero_minibatch_block(b, l, r, &y));
            T_ASSERT(x.num_dst == y.num_dst && x.num_src == y.num_src && x.num_edges == y.num_edges);
            T_ASSERT(memcmp(x.indptr, y.indptr, (size_t)(x.num_dst + 1) * sizeof(int32_t)) == 0);
            T_ASSERT(memcmp(x.indices, y.indices, (size_t)x.num_edges * sizeof(int32_t)) == 0);
        }
}

static void sampling(uint64_t seed) {
    gd_dataset_t *ds = make("mag-tiny", seed, 0, NULL);
    const int L = 2, R = gd_dataset_num_edge_types(ds), T = gd_dataset_num_node_types(ds);
    uint64_t rng = seed;
    int fanouts[2 * GD_MAX_EDGE_TYPES];
    for (int i = 0; i < L * R; i++) fanouts[i] = (int)(t_rand(&rng) % 7) - 1; /* -1 .. 5 */
    fanouts[1] = 0;                                                            /* none */
    gd_array_view tr, ip;
    T_OK(gd_dataset_array(ds, GD_ARRAY_TRAIN_IDX, &tr));
    T_OK(gd_dataset_array(ds, GD_ARRAY_INDPTR, &ip));
    uint8_t *taken = calloc((size_t)gd_dataset_num_edges(ds) + 1, 1);
    T_ASSERT(taken);
    gd_sampler_options so = GD_SAMPLER_OPTIONS_INIT;
    so.max_batch = 64;
    so.seed = seed;
    gd_hetero_sampler_t *s1 = NULL, *s4 = NULL;
    gd_hetero_minibatch_t *m1 = NULL, *m4 = NULL, *other = NULL;
    so.threads = 1;
    T_OK(gd_hetero_sampler_create(ds, fanouts, L, &so, &s1));
    so.threads = 4;
    T_OK(gd_hetero_sampler_create(ds, fanouts, L, &so, &s4));
    T_OK(gd_hetero_minibatch_create(s1, &m1));
    T_OK(gd_hetero_minibatch_create(s4, &m4));
    T_OK(gd_hetero_minibatch_create(s1, &other));
    const int64_t *train = tr.data;
    int64_t order[4096];
    const int64_t nt = tr.shape[0] < 4096 ? tr.shape[0] : 4096;
    int64_t batches = 0;
    T_OK(gd_seed_batches(train, nt, 64, seed, 0, 0, order, &batches));
    for (int64_t b = 0; b < 6 && b < batches; b++) {
        const int64_t n = b * 64 + 64 <= nt ? 64 : nt - b * 64;
        T_OK(gd_hetero_sample(s1, order + b * 64, n, 0, b, m1));
        T_OK(gd_hetero_sample(s4, order + b * 64, n, 0, b, m4));
        check_minibatch(ds, m1, fanouts, L, order + b * 64, n, taken);
        same_minibatch(m1, m4, L, T, R); /* the thread count changes nothing */
        /* Sampling the same batch again, after another one, gives it again. */
        T_OK(gd_hetero_sample(s1, order, 32, 3, 9, other));
        T_OK(gd_hetero_sample(s1, order + b * 64, n, 0, b, other));
        same_minibatch(m1, other, L, T, R);
    }
    /*
     * Another epoch draws other neighbours somewhere: in some block of some layer (the first
     * layer's blocks alone were the same for one seed in 300, its lists mostly within their
     * fanouts, so taken whole).
     */
    T_OK(gd_hetero_sample(s1, order, 64, 1, 0, other));
    T_OK(gd_hetero_sample(s1, order, 64, 0, 0, m1));
    int64_t differs = 0;
    for (int l = 0; l < L; l++)
        for (int r = 0; r < R; r++) {
            gd_block x, y;
            T_OK(gd_hetero_minibatch_block(m1, l, r, &x));
            T_OK(gd_hetero_minibatch_block(other, l, r, &y));
            differs += x.num_edges != y.num_edges ||
                       memcmp(x.indices, y.indices, (size_t)x.num_edges * sizeof(int32_t)) != 0;
        }
    T_ASSERT(differs > 0);

    gd_block blk;
    T_FAILS(gd_hetero_minibatch_block(m1, 0, R, &blk), GD_ERR_RANGE, "edge type");
    /* Bad seeds: of another type, repeated, too many; a failed call leaves nothing to read. */
    const int64_t author = gd_dataset_num_nodes(ds) - 1, twice[2] = {train[0], train[0]};
    T_FAILS(gd_hetero_sample(s1, &author, 1, 0, 0, m1), GD_ERR_RANGE, "not of the target type");
    T_FAILS(gd_hetero_sample(s1, twice, 2, 0, 0, m1), GD_ERR_INVALID_ARG, "repeats");
    T_FAILS(gd_hetero_sample(s1, train, 65, 0, 0, m1), GD_ERR_INVALID_ARG, "max_batch");
    T_FAILS(gd_hetero_sample(s1, train, 1, 0, 0, m4), GD_ERR_INVALID_ARG, "another sampler");
    T_FAILS(gd_hetero_minibatch_block(m1, 0, 0, &blk), GD_ERR_INVALID_ARG, "nothing was sampled");
    /* A homogeneous dataset, a bad fanout. */
    gd_dataset_t *homo = t_tiny_dataset(seed);
    gd_hetero_sampler_t *bad = NULL;
    T_FAILS(gd_hetero_sampler_create(homo, fanouts, L, &so, &bad), GD_ERR_INVALID_ARG,
            "homogeneous");
    fanouts[3] = -2;
    T_FAILS(gd_hetero_sampler_create(ds, fanouts, L, &so, &bad), GD_ERR_INVALID_ARG, "fanout -2");
    gd_dataset_close(homo);
    gd_hetero_minibatch_destroy(m1);
    gd_hetero_minibatch_destroy(m4);
    gd_hetero_minibatch_destroy(other);
    gd_hetero_sampler_destroy(s1);
    gd_hetero_sampler_destroy(s4);
    free(taken);
    gd_dataset_close(ds);
}

int main(void) {
    const uint64_t seed = t_seed() % 100000;
    char tmp[4096];
    t_tmpdir(tmp, sizeof tmp);
    presets(seed, tmp);
    validation(seed, tmp);
    sampling(seed);
    t_rmtree(tmp);
    t_check_no_leaks();
    fprintf(stderr, "test_hetero: ok\n");
    return 0;
}
