/*
 * The context (gd_context_t): options checked; loaders and trainers made on an explicit context
 * keep it alive however the destroys are ordered; with a GPU, zero-copy loaders of one context
 * share one registration of the feature table, and a loader of a second context over the same
 * table still works (it pins a copy: CUDA registers a host range once per process).
 */
#include "test.h"

#include <string.h>

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

int main(void) {
    const uint64_t seed = t_seed();
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
    }
    gd_dataset_close(ds);
    t_check_no_leaks();
    fprintf(stderr, "context: ok%s\n",
            gd_device_count() > 0 ? "" : " (no GPU: the GPU part did not run)");
    return 0;
}
