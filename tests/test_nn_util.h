/*
 * Helpers shared by the nn tests: random tensors and blocks on the CPU backend, element access
 * as double whatever the dtype, and the finite-difference comparison they all use.
 */
#ifndef GD_TEST_NN_UTIL_H
#define GD_TEST_NN_UTIL_H

#include "nn/sage.h"
#include "test.h"

/* A uniform double in [-1, 1). */
static inline double t_unif(uint64_t *state) {
    return (double)(t_rand(state) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

static inline double t_get(const gd__nn_tensor *t, int64_t i) {
    return t->dtype == GD_DTYPE_FLOAT64 ? ((double *)t->data)[i] : ((float *)t->data)[i];
}

static inline void t_set(gd__nn_tensor *t, int64_t i, double v) {
    if (t->dtype == GD_DTYPE_FLOAT64)
        ((double *)t->data)[i] = v;
    else
        ((float *)t->data)[i] = (float)v;
}

/* A host tensor of the CPU backend, filled with uniform values in [-scale, scale). */
static inline gd__nn_tensor t_tensor(gd_dtype dtype, int64_t rows, int64_t cols, uint64_t *state,
                                     double scale) {
    gd__nn_ctx ctx = gd__nn_cpu_ctx();
    gd__nn_tensor t;
    T_OK(gd__nn_tensor_alloc(&ctx, dtype, rows, cols, &t));
    for (int64_t i = 0; i < rows * cols; i++) t_set(&t, i, state ? scale * t_unif(state) : 0.0);
    return t;
}

static inline void t_tensor_free(gd__nn_tensor *t) {
    gd__nn_ctx ctx = gd__nn_cpu_ctx();
    gd__nn_tensor_free(&ctx, t);
}

/* A copy of host tensor h in the memory of ctx's backend (a tensor of that backend). */
static inline gd__nn_tensor t_up(const gd__nn_ctx *ctx, const gd__nn_tensor *h) {
    gd__nn_tensor d;
    T_OK(gd__nn_tensor_alloc(ctx, h->dtype, h->rows, h->cols, &d));
    T_OK(gd__nn_from_host(ctx, &d, h->data));
    return d;
}

/* A host copy (a CPU tensor of its dtype) of d, a tensor of ctx's backend. */
static inline gd__nn_tensor t_down(const gd__nn_ctx *ctx, const gd__nn_tensor *d) {
    gd__nn_tensor h = t_tensor(d->dtype, d->rows, d->cols, NULL, 0);
    T_OK(gd__nn_to_host(ctx, d, h.data));
    return h;
}

/* Copy a's values into b (any dtypes, same element count). */
static inline void t_copy(const gd__nn_tensor *a, gd__nn_tensor *b) {
    for (int64_t i = 0; i < gd__nn_numel(a); i++) t_set(b, i, t_get(a, i));
}

/*
 * A random block: num_dst destinations over num_src sources, each destination with 0..max_deg
 * in-neighbours (about one in `zero_every` has none), sources drawn with repeats allowed (a
 * sampler with replacement makes them). The arrays come from malloc; t_block_free releases them.
 */
static inline gd_block t_block(uint64_t *state, int64_t num_dst, int64_t num_src, int max_deg,
                               int zero_every) {
    gd_block b;
    int32_t *indptr = malloc(sizeof *indptr * (size_t)(num_dst + 1));
    int32_t *indices = malloc(sizeof *indices * (size_t)(num_dst * max_deg + 1));
    T_ASSERT(indptr && indices);
    indptr[0] = 0;
    for (int64_t d = 0; d < num_dst; d++) {
        int deg = (int)(t_rand(state) % (uint64_t)(max_deg + 1));
        if (zero_every > 0 && t_rand(state) % (uint64_t)zero_every == 0) deg = 0;
        for (int k = 0; k < deg; k++)
            indices[indptr[d] + k] = (int32_t)(t_rand(state) % (uint64_t)num_src);
        indptr[d + 1] = indptr[d] + deg;
    }
    b.num_dst = num_dst;
    b.num_src = num_src;
    b.num_edges = indptr[num_dst];
    b.indptr = indptr;
    b.indices = indices;
    return b;
}

static inline void t_block_free(gd_block *b) {
    free((void *)b->indptr);
    free((void *)b->indices);
}

/*
 * The finite-difference comparison: analytic a against numeric n, relative to their size with
 * a floor of 1 so that tiny gradients are compared absolutely. Returns the error.
 */
static inline double t_grad_err(double a, double n) {
    double s = fabs(a) + fabs(n);
    return fabs(a - n) / (s > 1.0 ? s : 1.0);
}

/*
 * A model's gradients against central finite differences (h = 1e-6): every element of the flat
 * parameters (analytic: grads) and of the input x (analytic: dx) is moved up and down, the
 * scalar loss(user) evaluated each time, and the relative error must stay below tol. what
 * names the model in a failure. Returns the worst error.
 */
static inline double t_fd_model(const char *what, double (*loss)(void *), void *user,
                                gd__nn_tensor *params, const gd__nn_tensor *grads,
                                gd__nn_tensor *x, const gd__nn_tensor *dx, double tol) {
    const double h = 1e-6;
    double worst = 0;
    gd__nn_tensor *targets[2] = {params, x};
    const gd__nn_tensor *analytic[2] = {grads, dx};
    for (int t = 0; t < 2; t++)
        for (int64_t i = 0; i < gd__nn_numel(targets[t]); i++) {
            const double v = t_get(targets[t], i);
            t_set(targets[t], i, v + h);
            const double fp = loss(user);
            t_set(targets[t], i, v - h);
            const double fm = loss(user);
            t_set(targets[t], i, v);
            const double num = (fp - fm) / (2 * h), err = t_grad_err(t_get(analytic[t], i), num);
            if (err > worst) worst = err;
            if (err > tol)
                T_FAIL_("%s: gradient of %s element %lld: analytic %.10g, finite difference %.10g",
                        what, t ? "input" : "parameter", (long long)i, t_get(analytic[t], i), num);
        }
    return worst;
}

/*
 * Random blocks chained as a model's layers see them: `batch` destinations in the last layer,
 * each layer's sources 1 to 6 more than its destinations (which are the next layer's sources),
 * up to 4 neighbours each (t_block).
 */
typedef struct {
    int layers;
    gd_block blocks[GD__MODEL_MAX_LAYERS];
    int64_t nodes[GD__MODEL_MAX_LAYERS + 1]; /* source nodes of each layer, then the batch */
} t_chain;

static inline t_chain t_make_chain(uint64_t *state, int layers, int64_t batch) {
    t_chain c;
    c.layers = layers;
    c.nodes[layers] = batch;
    for (int l = layers - 1; l >= 0; l--) {
        c.nodes[l] = c.nodes[l + 1] + 1 + (int64_t)(t_rand(state) % 6);
        c.blocks[l] = t_block(state, c.nodes[l + 1], c.nodes[l], 4, 4);
    }
    return c;
}

static inline void t_free_chain(t_chain *c) {
    for (int l = 0; l < c->layers; l++) t_block_free(&c->blocks[l]);
}

#endif
