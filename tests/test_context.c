/*
 * The context (gd_context_t): options checked; gd_context_default gives one context per device
 * while it is referenced; loaders, trainers, graphs and gatherers made on an explicit context
 * keep it alive however the destroys are ordered, and NULL means the default context of device
 * 0; with a GPU, zero-copy loaders of one context share one registration of the feature table,
 * a loader of a second context over the same table still works (it pins a copy: CUDA registers
 * a host range once per process), and a graph and a host tensor over the same memory register
 * it once, in their context's registry, until the last of them lets go.
 */
#include "test.h"

#include "core/comm.h"

#include <stdlib.h>
#include <string.h>

#ifdef GD_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

/* A CSC graph of n nodes: node v has v % 7 in-neighbours, (v * 31 + k * 17) % n. */
typedef struct {
    int64_t n, e;
    int64_t *indptr;
} csc;

static csc make_csc(int64_t n) {
    csc g = {n, 0, malloc(sizeof(int64_t) * (size_t)(n + 1))};
    T_ASSERT(g.indptr);
    g.indptr[0] = 0;
    for (int64_t v = 0; v < n; v++) g.indptr[v + 1] = g.indptr[v] + v % 7;
    g.e = g.indptr[n];
    return g;
}

static void fill_indices(const csc *g, int64_t *indices) {
    for (int64_t v = 0; v < g->n; v++)
        for (int64_t k = 0; k < v % 7; k++) indices[g->indptr[v] + k] = (v * 31 + k * 17) % g->n;
}

/* The registry of ctx holds `ranges` ranges of `bytes` bytes in all, for `users` users. */
static void expect_pins(const gd_context_t *ctx, int64_t ranges, int64_t bytes, int64_t users) {
    gd_context_info i = GD_CONTEXT_INFO_INIT;
    T_OK(gd_context_get_info(ctx, &i));
    T_EQ_INT(i.pinned_ranges, ranges);
    T_EQ_INT(i.pinned_bytes, bytes);
    T_EQ_INT(i.pinned_users, users);
}

/* One epoch of a loader: every batch fetched and released; the count. */
static int64_t drain(gd_loader_t *l, int64_t epoch) {
    int64_t n = 0;
    T_OK(gd_loader_start_epoch(l, epoch));
    for (;;) {
        gd_batch_t *b;
        T_OK(gd_loader_next(l, &b));
        if (!b) break;
        gd_batch_release(b);
        n++;
    }
    return n;
}

static void options_checked(void) {
    gd_context_t *c = (gd_context_t *)&c;
    gd_context_options o = GD_CONTEXT_OPTIONS_INIT;
    o.device = -1;
    T_FAILS(gd_context_create(&o, &c), GD_ERR_INVALID_ARG, "GPU -1");
    T_ASSERT(c == NULL);
    o = (gd_context_options)GD_CONTEXT_OPTIONS_INIT;
    o.size = 3;
    T_FAILS(gd_context_create(&o, &c), GD_ERR_INVALID_ARG, "GD_CONTEXT_OPTIONS_INIT");
    if (gd_device_count() > 0) {
        o = (gd_context_options)GD_CONTEXT_OPTIONS_INIT;
        o.device = gd_device_count();
        T_FAILS(gd_context_create(&o, &c), GD_ERR_RANGE, "does not exist");
    }
    T_OK(gd_context_create(NULL, &c));
    T_EQ_INT(gd_context_device(c), 0);
    T_EQ_INT(gd_context_device(NULL), -1);
    gd_context_destroy(c);
    gd_context_destroy(NULL);
}

/* gd_context_default: the same context for a device while referenced; an explicit one differs. */
static void defaults_and_info(void) {
    gd_context_t *a = (gd_context_t *)&a, *b, *c;
    T_FAILS(gd_context_default(-1, &a), GD_ERR_INVALID_ARG, "GPU -1");
    T_ASSERT(a == NULL);
    T_FAILS(gd_context_default(0, NULL), GD_ERR_INVALID_ARG, "out");
    if (gd_device_count() > 0)
        T_FAILS(gd_context_default(gd_device_count(), &a), GD_ERR_RANGE, "does not exist");
    T_OK(gd_context_default(0, &a));
    T_OK(gd_context_default(0, &b));
    T_ASSERT(a == b);
    T_OK(gd_context_create(NULL, &c));
    T_ASSERT(c != a);
    gd_context_info i = GD_CONTEXT_INFO_INIT;
    T_OK(gd_context_get_info(a, &i));
    T_EQ_INT(i.device, 0);
    T_EQ_INT(i.is_default, 1);
    expect_pins(a, 0, 0, 0);
    T_OK(gd_context_get_info(c, &i));
    T_EQ_INT(i.is_default, 0);
    expect_pins(c, 0, 0, 0);
    i.size = 3;
    T_FAILS(gd_context_get_info(c, &i), GD_ERR_INVALID_ARG, "GD_CONTEXT_INFO_INIT");
    T_FAILS(gd_context_get_info(NULL, &i), GD_ERR_INVALID_ARG, "NULL");
    gd_context_destroy(a);
    gd_context_destroy(b);
    gd_context_destroy(c);
    t_check_no_leaks(); /* the default context went with its last reference */
}

/*
 * A graph and a gatherer made on an explicit context keep it after gd_context_destroy, and work
 * as those made with NULL (the default context of device 0). Without a GPU, registering a host
 * tensor fails on either and leaves the registries empty.
 */
static void objects_keep_their_context(void) {
    csc h = make_csc(500);
    gd_host_tensor_t *ix = NULL, *t = NULL;
    T_OK(gd_host_tensor_create(h.e, 1, GD_DTYPE_INT64, 0, &ix));
    fill_indices(&h, gd_host_tensor_data(ix));
    T_OK(gd_host_tensor_create(h.n, 3, GD_DTYPE_INT64, 0, &t));
    int64_t *rows = gd_host_tensor_data(t);
    for (int64_t i = 0; i < h.n * 3; i++) rows[i] = i * 7 + 1;
    int64_t ids[64], out[64 * 3], seeds[40];
    for (int i = 0; i < 64; i++) ids[i] = (i * 37) % h.n;
    for (int i = 0; i < 40; i++) seeds[i] = i * 11;
    int64_t inputs[2] = {0, 0};
    for (int explicit_ctx = 0; explicit_ctx < 2; explicit_ctx++) {
        gd_context_t *c = NULL;
        if (explicit_ctx) T_OK(gd_context_create(NULL, &c));
        gd_graph_options go = GD_GRAPH_OPTIONS_INIT;
        go.context = c;
        gd_graph_t *g = NULL;
        gd_gatherer_t *ga = NULL;
        T_OK(gd_graph_create(h.n, h.indptr, gd_host_tensor_data(ix), GD_DTYPE_INT64, &go, &g));
        T_OK(gd_gatherer_create(t, c, GD_GATHER_CPU, NULL, &ga));
        gd_context_destroy(c); /* the graph and the gatherer keep it */
        T_OK(gd_gather(ga, ids, 64, 0, out, NULL));
        for (int i = 0; i < 64; i++) T_EQ_INT(out[i * 3 + 2], (ids[i] * 3 + 2) * 7 + 1);
        const int fanouts[2] = {4, 3};
        gd_sampler_t *s = NULL;
        gd_minibatch_t *mb = NULL;
        T_OK(gd_sampler_create(g, fanouts, 2, NULL, &s));
        T_OK(gd_minibatch_create(s, &mb));
        T_OK(gd_sample(s, seeds, 40, 0, 0, 0, NULL, mb));
        const int64_t *in_ids;
        T_OK(gd_minibatch_input_nodes(mb, &in_ids, &inputs[explicit_ctx]));
        gd_minibatch_destroy(mb);
        gd_sampler_destroy(s);
        gd_gatherer_destroy(ga);
        gd_graph_destroy(g);
    }
    T_EQ_INT(inputs[0], inputs[1]);
    T_ASSERT(inputs[0] > 40);
    if (gd_device_count() == 0) {
        gd_context_t *c, *d;
        T_OK(gd_context_create(NULL, &c));
        T_OK(gd_context_default(0, &d));
        T_FAILS(gd_host_tensor_register(t, c), GD_ERR_NO_DEVICE, "");
        T_FAILS(gd_host_tensor_register(t, NULL), GD_ERR_NO_DEVICE, "");
        T_ASSERT(!gd_host_tensor_is_registered(t));
        expect_pins(c, 0, 0, 0);
        expect_pins(d, 0, 0, 0);
        gd_context_destroy(c);
        gd_context_destroy(d);
    }
    gd_host_tensor_destroy(t);
    gd_host_tensor_destroy(ix);
    free(h.indptr);
    t_check_no_leaks();
}

/* A loader outlives the context handle it was made with, and the other way round. */
static void lifetimes(const gd_dataset_t *ds, const char *mode) {
    for (int order = 0; order < 2; order++) {
        gd_context_t *c;
        T_OK(gd_context_create(NULL, &c));
        gd_loader_options o = GD_LOADER_OPTIONS_INIT;
        o.mode = mode;
        o.batch_size = 500;
        o.context = c;
        gd_loader_t *l;
        T_OK(gd_loader_create(ds, &o, &l));
        if (order == 0) gd_context_destroy(c); /* the loader keeps it */
        T_ASSERT(drain(l, 0) > 0);
        gd_loader_destroy(l);
        if (order == 1) gd_context_destroy(c);
    }
}

/* With a GPU: two zero-copy loaders on one context, and one on a second context. */
static void shared_registration(const gd_dataset_t *ds) {
    gd_context_t *c1, *c2;
    T_OK(gd_context_create(NULL, &c1));
    T_OK(gd_context_create(NULL, &c2));
    gd_loader_options o = GD_LOADER_OPTIONS_INIT;
    o.mode = "zero-copy";
    o.batch_size = 500;
    o.gpu_cache_bytes = 0;
    o.context = c1;
    gd_loader_t *a, *b, *x;
    T_OK(gd_loader_create(ds, &o, &a));
    o.split = GD_ARRAY_VALID_IDX;
    T_OK(gd_loader_create(ds, &o, &b)); /* the same registration */
    o.context = c2;
    T_OK(gd_loader_create(ds, &o, &x)); /* another context: a pinned copy */
    const int64_t na = drain(a, 0), nb = drain(b, 0), nx = drain(x, 0);
    T_ASSERT(na > 0 && nb > 0);
    T_EQ_INT(nx, nb);
    gd_loader_destroy(a);
    T_EQ_INT(drain(b, 1), nb); /* still registered: b holds it */
    gd_loader_destroy(b);
    gd_loader_destroy(x);
    gd_context_destroy(c1);
    gd_context_destroy(c2);
}

/*
 * The contexts of a group share one registry: loaders of two ranks over the same table use one
 * registration (two users), where separate contexts would pin a copy each.
 */
static void group_registry(const gd_dataset_t *ds) {
    gd_context_t *g[2];
    const int gpu0[2] = {0, 0};
    T_OK(gd__context_create_staged_group(2, gpu0, g));
    gd_loader_options o = GD_LOADER_OPTIONS_INIT;
    o.mode = "zero-copy";
    o.batch_size = 500;
    o.gpu_cache_bytes = 0;
    gd_loader_t *l[2];
    for (int r = 0; r < 2; r++) {
        o.context = g[r];
        T_OK(gd_loader_create(ds, &o, &l[r]));
    }
    gd_context_info i0 = GD_CONTEXT_INFO_INIT, i1 = GD_CONTEXT_INFO_INIT;
    T_OK(gd_context_get_info(g[0], &i0));
    T_OK(gd_context_get_info(g[1], &i1));
    T_ASSERT(i0.pinned_ranges > 0);
    T_EQ_INT(i1.pinned_ranges, i0.pinned_ranges);
    T_EQ_INT(i1.pinned_bytes, i0.pinned_bytes);
    T_EQ_INT(i0.pinned_users, 2 * i0.pinned_ranges);
    gd_loader_destroy(l[0]);
    expect_pins(g[1], i0.pinned_ranges, i0.pinned_bytes, i0.pinned_ranges);
    gd_loader_destroy(l[1]);
    expect_pins(g[0], 0, 0, 0);
    gd_context_destroy(g[0]);
    gd_context_destroy(g[1]);
}

/*
 * gd_context_share_registry: a table registered through a keeper context stays registered while
 * trainers-to-be come and go on other contexts (of this GPU here) that share its registry; a
 * context that holds a registration already is refused.
 */
static void share_registry(const gd_dataset_t *ds) {
    gd_context_t *keeper, *c;
    T_OK(gd_context_create(NULL, &keeper));
    gd_array_view fv;
    T_OK(gd_dataset_array(ds, GD_ARRAY_FEATURES, &fv));
    gd_host_tensor_t *kept;
    T_OK(gd_host_tensor_adopt(fv.data, fv.shape[0], fv.shape[1], fv.dtype, 0u, &kept));
    T_OK(gd_host_tensor_register(kept, keeper));
    const int64_t table = fv.shape[0] * fv.shape[1] * 4;
    gd_loader_options o = GD_LOADER_OPTIONS_INIT;
    o.mode = "zero-copy";
    o.batch_size = 500;
    o.gpu_cache_bytes = 0;
    for (int round = 0; round < 2; round++) {
        T_OK(gd_context_create(NULL, &c));
        T_OK(gd_context_share_registry(c, keeper));
        T_OK(gd_context_share_registry(c, keeper)); /* again: nothing to do */
        o.context = c;
        gd_loader_t *l;
        T_OK(gd_loader_create(ds, &o, &l));
        gd_context_info i = GD_CONTEXT_INFO_INIT;
        T_OK(gd_context_get_info(c, &i));
        /* The table is the keeper's registration, now with a second user. */
        T_ASSERT(i.pinned_ranges >= 1 && i.pinned_bytes >= table);
        T_ASSERT(drain(l, round) > 0);
        gd_loader_destroy(l);
        gd_context_destroy(c);
        expect_pins(keeper, 1, table, 1); /* held by the keeper alone again */
    }
    /* A context holding a registration cannot change registries. */
    T_OK(gd_context_create(NULL, &c));
    o.context = c;
    gd_loader_t *l;
    T_OK(gd_loader_create(ds, &o, &l));
    T_FAILS(gd_context_share_registry(c, keeper), GD_ERR_INVALID_ARG, "registered range");
    T_FAILS(gd_context_share_registry(NULL, keeper), GD_ERR_INVALID_ARG, "NULL");
    gd_loader_destroy(l);
    gd_context_destroy(c);
    gd_host_tensor_destroy(kept);
    expect_pins(keeper, 0, 0, 0);
    gd_context_destroy(keeper);
}

/*
 * A dataset opened from its directory is mapped read-only: zero-copy registers its features in
 * place (the file's pages, one copy for every process), which the plan says.
 */
static void read_only_in_place(const gd_dataset_t *ds) {
    char dir[4096], path[4200];
    t_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/tiny", dir);
    T_OK(gd_dataset_save(ds, path, 0));
    gd_dataset_t *disk = NULL;
    T_OK(gd_dataset_open(path, NULL, &disk));
    gd_train_options o = GD_TRAIN_OPTIONS_INIT;
    o.mode = "zero-copy";
    o.batch_size = 256;
    gd_trainer_t *t = NULL;
    T_OK(gd_trainer_create(disk, &o, &t));
    gd_trainer_info info = GD_TRAINER_INFO_INIT;
    T_OK(gd_trainer_get_info(t, &info));
    fprintf(stderr, "read-only dataset plan: %s\n", info.plan);
    T_ASSERT(strstr(info.plan, "pinned in place (the file's pages, shared)") != NULL);
    gd_trainer_destroy(t);
    gd_dataset_close(disk);
    t_rmtree(dir);
}

#ifdef GD_WITH_CUDA
/* The input nodes of one minibatch of g's sampler (CUDA over a placed graph, else the CPU). */
static int64_t sample_inputs(gd_graph_t *g, int cuda, int64_t *ids, int64_t cap) {
    const int fanouts[2] = {5, 3};
    int64_t seeds[100], n = 0;
    for (int i = 0; i < 100; i++) seeds[i] = i * 29;
    gd_sampler_options so = GD_SAMPLER_OPTIONS_INIT;
    so.backend = cuda ? GD_SAMPLER_CUDA : GD_SAMPLER_CPU;
    so.seed = 5;
    gd_sampler_t *s = NULL;
    gd_minibatch_t *mb = NULL;
    T_OK(gd_sampler_create(g, fanouts, 2, &so, &s));
    T_OK(gd_minibatch_create(s, &mb));
    T_OK(gd_sample(s, seeds, 100, 0, 1, 2, NULL, mb));
    const int64_t *in;
    T_OK(gd_minibatch_input_nodes(mb, &in, &n));
    T_ASSERT(n <= cap);
    T_ASSERT(cudaMemcpy(ids, in, (size_t)n * sizeof(int64_t), cudaMemcpyDefault) == cudaSuccess);
    T_OK(gd_sampler_check_errors(s));
    gd_minibatch_destroy(mb);
    gd_sampler_destroy(s);
    return n;
}

/*
 * With a GPU: a graph whose indices are pinned in place and a zero-copy gatherer over a host
 * tensor of the same memory register it once in their context (both orders), the registration
 * lives until the last of them lets go, a second context cannot pin that memory in place
 * (GD_ERR_ALREADY_REGISTERED) but can pin a copy, and NULL registers in the default context of
 * device 0.
 */
static void graph_and_gatherer_share(void) {
    csc h = make_csc(3000);
    const int64_t bytes = h.e * (int64_t)sizeof(int64_t);
    gd_host_tensor_t *t = NULL;
    T_OK(gd_host_tensor_create(h.e, 1, GD_DTYPE_INT64, 0, &t));
    int64_t *indices = gd_host_tensor_data(t);
    fill_indices(&h, indices);
    gd_graph_t *host = NULL;
    T_OK(gd_graph_create(h.n, h.indptr, indices, GD_DTYPE_INT64, NULL, &host));
    int64_t want[4096], got[4096], ids[256], *d_out = NULL;
    const int64_t nwant = sample_inputs(host, 0, want, 4096);
    for (int i = 0; i < 256; i++) ids[i] = (i * 131) % h.e;
    T_ASSERT(cudaMalloc((void **)&d_out, sizeof ids) == cudaSuccess);
    gd_context_t *c, *c2;
    T_OK(gd_context_create(NULL, &c));
    T_OK(gd_context_create(NULL, &c2));
    for (int order = 0; order < 2; order++) {
        gd_graph_options go = GD_GRAPH_OPTIONS_INIT;
        go.context = c;
        go.indptr_placement = GD_PLACE_GPU;
        go.indices_placement = GD_PLACE_PINNED;
        go.copy_host = 0;
        gd_graph_t *g = NULL, *g2 = NULL;
        if (order == 0) T_OK(gd_host_tensor_register(t, c));
        T_OK(gd_graph_create(h.n, h.indptr, indices, GD_DTYPE_INT64, &go, &g));
        if (order == 1) T_OK(gd_host_tensor_register(t, c));
        expect_pins(c, 1, bytes, 2); /* registered once, used twice */
        gd_graph_info gi = GD_GRAPH_INFO_INIT;
        T_OK(gd_graph_get_info(g, &gi));
        T_EQ_INT(gi.pinned_bytes, bytes);

        /* The gatherer reads the shared registration. */
        gd_gatherer_options o = GD_GATHERER_OPTIONS_INIT;
        o.max_ids = 256;
        gd_gatherer_t *ga = NULL;
        T_OK(gd_gatherer_create(t, c, GD_GATHER_ZEROCOPY, &o, &ga));
        T_ASSERT(cudaMemset(d_out, 0xA5, sizeof ids) == cudaSuccess);
        T_OK(gd_gather(ga, ids, 256, 0, d_out, NULL));
        T_OK(gd_gatherer_check_errors(ga));
        T_ASSERT(cudaMemcpy(got, d_out, sizeof ids, cudaMemcpyDeviceToHost) == cudaSuccess);
        for (int i = 0; i < 256; i++) T_EQ_INT(got[i], indices[ids[i]]);
        gd_gatherer_destroy(ga);

        /* Another context: CUDA registers a range once per process; a copy is pinned. */
        go.context = c2;
        T_FAILS(gd_graph_create(h.n, h.indptr, indices, GD_DTYPE_INT64, &go, &g2),
                GD_ERR_ALREADY_REGISTERED, "already registered");
        T_ASSERT(g2 == NULL);
        expect_pins(c2, 0, 0, 0);
        go.copy_host = 1;
        T_OK(gd_graph_create(h.n, h.indptr, indices, GD_DTYPE_INT64, &go, &g2));
        T_OK(gd_graph_get_info(g2, &gi));
        expect_pins(c2, 1, gi.pinned_bytes, 1);
        T_EQ_INT(sample_inputs(g2, 1, got, 4096), nwant);
        T_ASSERT(memcmp(got, want, (size_t)nwant * sizeof(int64_t)) == 0);
        gd_graph_destroy(g2);
        expect_pins(c2, 0, 0, 0);

        /* The tensor lets go first: the graph keeps the memory registered and samples it. */
        T_OK(gd_host_tensor_unregister(t));
        T_ASSERT(!gd_host_tensor_is_registered(t));
        expect_pins(c, 1, bytes, 1);
        T_EQ_INT(sample_inputs(g, 1, got, 4096), nwant);
        T_ASSERT(memcmp(got, want, (size_t)nwant * sizeof(int64_t)) == 0);
        gd_graph_destroy(g);
        expect_pins(c, 0, 0, 0);
    }
    /* NULL: the default context of device 0, not an explicit one. */
    gd_context_t *d;
    T_OK(gd_context_default(0, &d));
    T_OK(gd_host_tensor_register(t, NULL));
    expect_pins(d, 1, bytes, 1);
    expect_pins(c, 0, 0, 0);
    T_OK(gd_host_tensor_register(t, c)); /* registered already: a no-op */
    expect_pins(c, 0, 0, 0);
    gd_host_tensor_destroy(t); /* gives the registration back */
    expect_pins(d, 0, 0, 0);
    gd_context_destroy(d);
    gd_context_destroy(c);
    gd_context_destroy(c2);
    gd_graph_destroy(host);
    T_ASSERT(cudaFree(d_out) == cudaSuccess);
    free(h.indptr);
}
#endif

int main(void) {
    const uint64_t seed = t_seed();
    /* Before the dataset, so that their leak checks see only their own allocations. */
    defaults_and_info();
    objects_keep_their_context();
    gd_generate_options go = GD_GENERATE_OPTIONS_INIT;
    go.preset = "tiny";
    go.seed = seed % 1000;
    gd_dataset_t *ds;
    T_OK(gd_generate(&go, &ds));
    options_checked();
    lifetimes(ds, "cpu");
    if (gd_device_count() > 0) {
        lifetimes(ds, "zero-copy");
        shared_registration(ds);
        group_registry(ds);
        share_registry(ds);
        read_only_in_place(ds);
#ifdef GD_WITH_CUDA
        graph_and_gatherer_share();
#endif
    }
    gd_dataset_close(ds);
    t_check_no_leaks();
    fprintf(stderr, "context: ok%s\n",
            gd_device_count() > 0 ? "" : " (no GPU: the GPU part did not run)");
    return 0;
}
