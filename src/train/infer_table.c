/*
 * Activation tables and staging buffers of the layer-wise inferences (infer_table.h).
 */
#include "train/infer_table.h"

#include "train/infer.h"

#include "core/context.h"
#include "feature/widen.h"
#ifdef GD_WITH_CUDA
#include "core/cuda.h"
#endif

#include <string.h>

/* Copies larger than this are split over the CPU threads. */
#define INFER_PAR_COPY_BYTES ((size_t)1 << 22)

void gd__infer_par_copy(void *dst, const void *src, size_t bytes, int threads) {
    if (bytes < INFER_PAR_COPY_BYTES || threads <= 1) {
        if (bytes) memcpy(dst, src, bytes);
        return;
    }
    const size_t slice = (bytes + (size_t)threads - 1) / (size_t)threads;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int k = 0; k < threads; k++) {
        const size_t a = (size_t)k * slice, b = a + slice < bytes ? a + slice : bytes;
        if (a < b) memcpy((char *)dst + a, (const char *)src + a, b - a);
    }
}

gd_status gd__infer_table_cpu(const gd__nn_ctx *ctx, int64_t rows, int64_t cols, const float *data,
                              gd__infer_table *t) {
    gd_status st = GD_OK;
    memset(t, 0, sizeof *t);
    t->rows = rows;
    t->cols = cols;
    t->direct = 1;
    if (!data) {
        GD_CHECK(gd__nn_tensor_alloc(ctx, GD_DTYPE_FLOAT32, rows, cols, &t->owned));
        data = t->owned.data;
    }
    t->host = t->dev = (float *)data;
fail:
    return st;
}

gd_status gd__infer_table_device(const gd__nn_ctx *ctx, int64_t rows, int64_t cols,
                                 const float *init, gd__infer_table *t) {
    gd_status st = GD_OK;
    memset(t, 0, sizeof *t);
    t->rows = rows;
    t->cols = cols;
    GD_CHECK(gd__nn_tensor_alloc(ctx, GD_DTYPE_FLOAT32, rows, cols, &t->owned));
    if (init) GD_CHECK(gd__nn_from_host(ctx, &t->owned, init));
    t->dev = t->owned.data;
    t->on_device = t->direct = 1;
fail:
    return st;
}

gd_status gd__infer_table_host(const gd__nn_ctx *ctx, int64_t rows, int64_t cols,
                               const float *adopt, gd_host_tensor_t *given, const char *what,
                               gd__infer_table *t) {
    gd_status st = GD_OK;
    memset(t, 0, sizeof *t);
    t->rows = rows;
    t->cols = cols;
    gd_host_tensor_t *h = given;
    gd_context_t *c = NULL;
    if (!h) {
        /* The default context of the model's GPU: its tables are nobody else's memory. */
        GD_CHECK(gd__context_default(ctx->device, &c));
        if (adopt) {
            st = gd_host_tensor_adopt((void *)adopt, rows, cols, GD_DTYPE_FLOAT32,
                                      GD_HOST_TENSOR_READ_ONLY, &t->pinned);
            if (st == GD_OK) st = gd_host_tensor_register(t->pinned, c);
            if (st == GD_ERR_ALREADY_REGISTERED) {
                /* Refused in place (a page shared with memory registered already outside the
                 * context): a pinned copy, as the data paths do. Any other failure (out of
                 * memory, a refused registration) is the caller's error. */
                GD_INFO("inference: %s cannot be registered in place (%s): pinning a copy", what,
                        gd_last_error());
                gd_clear_error();
                gd_host_tensor_destroy(t->pinned);
                t->pinned = NULL;
                st = gd_host_tensor_create(rows, cols, GD_DTYPE_FLOAT32, 0, &t->pinned);
                if (st == GD_OK)
                    memcpy(gd_host_tensor_data(t->pinned), adopt,
                           (size_t)(rows * cols) * sizeof(float));
                if (st == GD_OK) st = gd_host_tensor_register(t->pinned, c);
            }
        } else {
            st = gd_host_tensor_create(rows, cols, GD_DTYPE_FLOAT32, 0, &t->pinned);
            if (st == GD_OK) st = gd_host_tensor_register(t->pinned, c);
        }
        if (st != GD_OK) {
            gd__error_context(st,
                              "inference: pinning %s (%lld x %lld float32) for the GPU to read "
                              "(or raise the memory budget so that it fits in GPU memory)",
                              what, (long long)rows, (long long)cols);
            goto fail;
        }
        h = t->pinned;
    }
    t->host = h->data;
    t->dev = h->device_ptr;
fail:
    gd__context_unref(c); /* the tensor keeps its own reference */
    return st;
}

void gd__infer_table_release(const gd__nn_ctx *ctx, gd__infer_table *t) {
    gd__nn_tensor_free(ctx, &t->owned);
    gd_host_tensor_destroy(t->pinned);
    memset(t, 0, sizeof *t);
}

gd_status gd__infer_table_rows(const gd__nn_ctx *ctx, const gd__infer_table *t, int64_t lo,
                               int64_t k, void *scratch, gd__nn_tensor *out) {
    gd_status st = GD_OK;
    if (t->direct) {
        *out = gd__nn_view(t->dev + lo * t->cols, GD_DTYPE_FLOAT32, ctx->device, k, t->cols);
        return GD_OK;
    }
    *out = gd__nn_view(scratch, GD_DTYPE_FLOAT32, ctx->device, k, t->cols);
#ifdef GD_WITH_CUDA
    GD_CHECK(gd__cuda_memcpy_async(scratch, t->host + lo * t->cols,
                                   (size_t)(k * t->cols) * sizeof(float), ctx->stream));
#else
    GD_REQUIRE(0, GD_ERR_INTERNAL, "inference: a pinned table in a build without CUDA");
#endif
fail:
    return st;
}

gd__nn_tensor gd__infer_table_out(const gd__nn_ctx *ctx, const gd__infer_table *t, int64_t lo,
                                  int64_t k, void *scratch) {
    return gd__nn_view(t->direct ? t->dev + lo * t->cols : (float *)scratch, GD_DTYPE_FLOAT32,
                       ctx->device, k, t->cols);
}

gd_status gd__infer_table_commit(const gd__nn_ctx *ctx, const gd__infer_table *t, int64_t lo,
                                 const gd__nn_tensor *out) {
    gd_status st = GD_OK;
    if (t->direct) return GD_OK;
#ifdef GD_WITH_CUDA
    GD_CHECK(gd__cuda_memcpy_async(t->host + lo * t->cols, out->data,
                                   (size_t)(out->rows * t->cols) * sizeof(float), ctx->stream));
#else
    (void)ctx;
    (void)lo;
    (void)out;
    GD_REQUIRE(0, GD_ERR_INTERNAL, "inference: a pinned table in a build without CUDA");
#endif
fail:
    return st;
}

gd_status gd__infer_take_logits(const gd__nn_ctx *ctx, const gd__nn_tensor *z, float *staging,
                                int32_t *pred, float *logits, int threads) {
    gd_status st = GD_OK;
    const size_t bytes = (size_t)(z->rows * z->cols) * sizeof(float);
    const float *rows = z->data;
    if (ctx->device != GD__NN_HOST) {
#ifdef GD_WITH_CUDA
        GD_CHECK(gd__cuda_memcpy_async(staging, z->data, bytes, ctx->stream));
        GD_CHECK(gd__cuda_stream_sync(ctx->stream));
        rows = staging;
#else
        (void)staging;
        GD_REQUIRE(0, GD_ERR_NO_DEVICE, "inference: the model is on a GPU in a build without CUDA");
#endif
    }
    gd__infer_argmax(rows, z->rows, z->cols, pred, threads);
    if (logits) gd__infer_par_copy(logits, rows, bytes, threads);
fail:
    return st;
}

gd_status gd__infer_widen(const gd_array_view *fv, int threads, gd_host_tensor_t **out) {
    gd_status st = GD_OK;
    const int64_t rows = fv->shape[0], cols = fv->shape[1];
    st = gd_host_tensor_create(rows, cols, GD_DTYPE_FLOAT32, 0, out);
    if (st != GD_OK) {
        gd__error_context(st, "inference: the float32 copy of the %s features",
                          gd_dtype_name(fv->dtype));
        goto fail;
    }
    float *w = gd_host_tensor_data(*out);
    const uint16_t *src = fv->data;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t r = 0; r < rows; r++) gd__widen_cpu(src + r * cols, fv->dtype, cols, w + r * cols);
fail:
    return st;
}

/* ------------------------------------------------------------- staging */

gd_status gd__infer_stage_create(const gd__nn_ctx *ctx, size_t bytes, const char *what,
                                 const char *instead, gd__infer_stage *s) {
    gd_status st = GD_OK;
    memset(s, 0, sizeof *s);
    s->bytes = bytes > 0 ? bytes : 1;
    s->gpu = ctx->device != GD__NN_HOST;
    if (!s->gpu) {
        (void)instead;
        GD_ALLOC(s->host, s->bytes, what);
        s->dev = s->host;
        return GD_OK;
    }
#ifdef GD_WITH_CUDA
    GD_CHECK(gd__cuda_pinned_alloc(&s->host, s->bytes, what, instead));
    GD_CHECK(ctx->be->alloc(ctx, s->bytes, &s->dev));
    GD_CHECK(gd__cuda_event_create(ctx->device, 0, &s->event));
#else
    GD_REQUIRE(0, GD_ERR_NO_DEVICE, "inference: the model is on a GPU in a build without CUDA");
#endif
fail:
    return st;
}

gd_status gd__infer_stage_wait(const gd__infer_stage *s) {
#ifdef GD_WITH_CUDA
    if (s->gpu) return gd__cuda_event_sync(s->event);
#endif
    (void)s;
    return GD_OK;
}

gd_status gd__infer_stage_send(const gd__nn_ctx *ctx, const gd__infer_stage *s, size_t offset,
                               size_t bytes) {
#ifdef GD_WITH_CUDA
    if (s->gpu && bytes)
        return gd__cuda_memcpy_async((char *)s->dev + offset, (const char *)s->host + offset,
                                     bytes, ctx->stream);
#endif
    (void)ctx;
    (void)s;
    (void)offset;
    (void)bytes;
    return GD_OK;
}

gd_status gd__infer_stage_sent(const gd__nn_ctx *ctx, const gd__infer_stage *s) {
#ifdef GD_WITH_CUDA
    if (s->gpu) return gd__cuda_event_record(s->event, ctx->stream);
#endif
    (void)ctx;
    (void)s;
    return GD_OK;
}

void gd__infer_stage_release(const gd__nn_ctx *ctx, gd__infer_stage *s) {
    if (!s->gpu) {
        gd_free(s->host);
    } else {
#ifdef GD_WITH_CUDA
        if (s->dev) ctx->be->release(ctx, s->dev);
        if (s->host) gd__cuda_host_free(s->host);
        if (s->event) gd__cuda_event_destroy(s->event);
#endif
    }
    (void)ctx;
    memset(s, 0, sizeof *s);
}

size_t gd__infer_block_bytes(int64_t max_dst, int64_t max_edges) {
    return (size_t)(max_dst + 1 + max_edges) * sizeof(int32_t);
}

gd_status gd__infer_stage_block(const gd__nn_ctx *ctx, const gd__infer_stage *s, int64_t max_dst,
                                int64_t num_dst, int64_t num_src, int64_t num_edges, gd_block *b) {
    gd_status st = GD_OK;
    const size_t ix = (size_t)(max_dst + 1) * sizeof(int32_t);
    GD_CHECK(gd__infer_stage_send(ctx, s, 0, (size_t)(num_dst + 1) * sizeof(int32_t)));
    GD_CHECK(gd__infer_stage_send(ctx, s, ix, (size_t)num_edges * sizeof(int32_t)));
    GD_CHECK(gd__infer_stage_sent(ctx, s));
    b->num_dst = num_dst;
    b->num_src = num_src;
    b->num_edges = num_edges;
    b->indptr = s->dev;
    b->indices = (const int32_t *)((const char *)s->dev + ix);
fail:
    return st;
}
