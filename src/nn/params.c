/*
 * The flat parameter buffers of a model: one buffer of parameters, one of gradients with the
 * same layout, one of Adam state (m then v). A model adds its tensors to the layout, allocates
 * once, and takes views; the trainer zeroes, all-reduces and steps each buffer with one call.
 */
#include "nn/internal.h"

#include <math.h>
#include <string.h>

#define GD__NN_RNG_INIT 0x6e6e494eu /* "nnIN" */

gd_status gd__nn_params_add(gd__nn_params *p, int64_t rows, int64_t cols, int64_t fan_in,
                            int *index) {
    gd_status st = GD_OK;
    int64_t n, end;
    GD_REQUIRE(p && p->params.data == NULL, GD_ERR_INVALID_ARG,
               "parameters: add a tensor before allocating the buffers");
    GD_REQUIRE(p->count < GD__NN_MAX_PARAMS, GD_ERR_RANGE, "parameters: more than %d tensors",
               GD__NN_MAX_PARAMS);
    GD_REQUIRE(rows > 0 && cols > 0 && fan_in > 0, GD_ERR_INVALID_ARG,
               "parameters: tensor %d of %lld x %lld (fan-in %lld)", p->count, (long long)rows,
               (long long)cols, (long long)fan_in);
    const int64_t start =
        (p->numel + GD__NN_PARAM_ALIGN - 1) / GD__NN_PARAM_ALIGN * GD__NN_PARAM_ALIGN;
    GD_REQUIRE(!gd__mul_overflow_i64(rows, cols, &n) && !gd__add_overflow_i64(start, n, &end),
               GD_ERR_OVERFLOW, "parameters: %lld x %lld overflows", (long long)rows,
               (long long)cols);
    p->rows[p->count] = rows;
    p->cols[p->count] = cols;
    p->fan_in[p->count] = fan_in;
    p->offset[p->count] = start;
    p->numel = end;
    if (index) *index = p->count;
    p->count++;
fail:
    return st;
}

gd_status gd__nn_params_alloc(const gd__nn_ctx *ctx, gd__nn_params *p) {
    gd_status st = GD_OK;
    /* Round the end up too, so that a vectorised step over the whole buffer stays inside. */
    const int64_t n = (p->numel + GD__NN_PARAM_ALIGN - 1) / GD__NN_PARAM_ALIGN * GD__NN_PARAM_ALIGN;
    GD_REQUIRE(p->count > 0, GD_ERR_INVALID_ARG, "parameters: no tensors");
    p->numel = n;
    GD_CHECK(gd__nn_tensor_alloc(ctx, p->dtype, 1, n, &p->params));
    GD_CHECK(gd__nn_tensor_alloc(ctx, p->dtype, 1, n, &p->grads));
    GD_CHECK(gd__nn_tensor_alloc(ctx, p->dtype, 1, 2 * n, &p->state));
    GD_CHECK(gd__nn_zero(ctx, &p->params));
    GD_CHECK(gd__nn_zero(ctx, &p->grads));
    GD_CHECK(gd__nn_zero(ctx, &p->state));
    p->step = 0;
    return GD_OK;
fail:
    gd__nn_params_free(ctx, p);
    return st;
}

void gd__nn_params_free(const gd__nn_ctx *ctx, gd__nn_params *p) {
    gd__nn_tensor_free(ctx, &p->params);
    gd__nn_tensor_free(ctx, &p->grads);
    gd__nn_tensor_free(ctx, &p->state);
}

static gd__nn_tensor view_at(const gd__nn_params *p, const gd__nn_tensor *buf, int i) {
    char *base = buf->data;
    return gd__nn_view(base + (size_t)p->offset[i] * gd_dtype_size(p->dtype), p->dtype, buf->device,
                       p->rows[i], p->cols[i]);
}

gd__nn_tensor gd__nn_param(const gd__nn_params *p, int i) {
    return view_at(p, &p->params, i);
}
gd__nn_tensor gd__nn_grad(const gd__nn_params *p, int i) {
    return view_at(p, &p->grads, i);
}

gd_status gd__nn_params_init(const gd__nn_ctx *ctx, gd__nn_params *p, uint64_t seed) {
    gd_status st = GD_OK;
    void *host = NULL;
    const size_t es = gd_dtype_size(p->dtype);
    GD_REQUIRE(p->params.data, GD_ERR_INVALID_ARG, "parameters: not allocated");
    GD_ALLOC(host, (size_t)p->numel * es, "initial parameters");
    memset(host, 0, (size_t)p->numel * es);
    for (int i = 0; i < p->count; i++) {
        const double bound = 1.0 / sqrt((double)p->fan_in[i]);
        const int64_t n = p->rows[i] * p->cols[i];
        for (int64_t j = 0; j < n; j++) {
            gd_philox_ctr r = gd_philox(seed, (uint32_t)j, (uint32_t)((uint64_t)j >> 32),
                                        (uint32_t)i, GD__NN_RNG_INIT);
            const double u = bound * (2.0 * gd_philox_uniform_double(r.v[0], r.v[1]) - 1.0);
            const int64_t at = p->offset[i] + j;
            if (p->dtype == GD_DTYPE_FLOAT64)
                ((double *)host)[at] = u;
            else
                ((float *)host)[at] = (float)u;
        }
    }
    GD_CHECK(gd__nn_from_host(ctx, &p->params, host));
    GD_CHECK(gd__nn_zero(ctx, &p->state));
    p->step = 0;
fail:
    gd_free(host);
    return st;
}

gd_status gd__nn_params_zero_grad(const gd__nn_ctx *ctx, gd__nn_params *p) {
    return gd__nn_zero(ctx, &p->grads);
}

gd_status gd__nn_params_adam(const gd__nn_ctx *ctx, gd__nn_params *p,
                             const gd__nn_adam_options *o) {
    gd_status st = GD_OK;
    GD_REQUIRE(p && p->params.data, GD_ERR_INVALID_ARG, "adam: parameters not allocated");
    GD_REQUIRE(o && o->lr >= 0 && o->beta1 >= 0 && o->beta1 < 1 && o->beta2 >= 0 && o->beta2 < 1 &&
                   o->eps >= 0 && o->weight_decay >= 0,
               GD_ERR_INVALID_ARG,
               "adam: options lr %g, betas (%g, %g), eps %g, weight decay %g (need lr, eps, "
               "weight decay >= 0 and betas in [0, 1))",
               o ? o->lr : 0.0, o ? o->beta1 : 0.0, o ? o->beta2 : 0.0, o ? o->eps : 0.0,
               o ? o->weight_decay : 0.0);
    p->step++;
    const double bc1 = 1.0 - pow(o->beta1, (double)p->step);
    const double bc2 = 1.0 - pow(o->beta2, (double)p->step);
    const int64_t n = p->numel;
    char *s = p->state.data;
    gd__nn_tensor m = gd__nn_view(s, p->dtype, p->state.device, 1, n);
    gd__nn_tensor v =
        gd__nn_view(s + (size_t)n * gd_dtype_size(p->dtype), p->dtype, p->state.device, 1, n);
    GD_CHECK(ctx->be->adam(ctx, o, bc1, bc2, &p->params, &p->grads, &m, &v));
fail:
    return st;
}
