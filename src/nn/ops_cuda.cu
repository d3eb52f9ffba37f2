/*
 * The CUDA backend of the nn module: the op table of internal.h in float32 on one GPU, every op
 * queued on the context's stream. GEMM is cuBLAS (row-major C = op(A) op(B) computed as the
 * column-major C^T = op(B)^T op(A)^T, full float32: the handle's math mode is set to
 * CUBLAS_DEFAULT_MATH, so no TF32). The other ops are kernels, written for the shapes of a
 * sampled minibatch (tens of thousands of rows of 100 to 256 columns), where every one of them
 * is bound by memory: the elementwise ops and the bias add move float4s when the tensor allows
 * (16-byte aligned, a multiple of four elements), else floats; the bias gradient sums columns
 * in double like the CPU, over row chunks spread across the GPU whose partial sums (in the
 * context's work buffer) are added in a fixed order, so it is reproducible; dropout through
 * gd__nn_dropout_keep, the function the CPU uses, so both drop the same elements; Adam one
 * fused pass over the flat buffers, rounding as the CPU does. The mean aggregation is in
 * agg_cuda.cu, softmax cross-entropy and accuracy in loss_cuda.cu (ops_cuda.cuh has what the
 * three share). docs/nn.md ("Speed") has the measurements behind these choices.
 *
 * A label out of range cannot be returned by an asynchronous op: the kernel records the first
 * one in the work buffer, treats that row as ignored, and gd__nn_check_errors reports it, as
 * the gather and the sampler report bad ids. Every CUDA call is checked, and the last error
 * after every launch; cuBLAS statuses are turned into messages.
 */
#include "nn/ops_cuda.cuh"

/* ------------------------------------------------------------------ kernels */

__global__ void scale_kernel(float *c, long long n, float beta) {
    FOR_EACH(i, n) c[i] = beta == 0.0f ? 0.0f : beta * c[i];
}

/*
 * Rows x cols, a warp per row at a time (threadIdx.y picks the row of the block), lanes across
 * the columns: no division per element, and each warp reads the bias row from cache.
 */
__global__ void add_bias_kernel(float *y, const float *__restrict__ b, long long rows, int cols) {
    for (long long i = (long long)blockIdx.x * blockDim.y + threadIdx.y; i < rows;
         i += (long long)gridDim.x * blockDim.y) {
        float *yi = y + i * cols;
        for (int j = threadIdx.x; j < cols; j += 32) yi[j] += b[j];
    }
}

__global__ void add_bias4_kernel(float4 *y, const float4 *__restrict__ b, long long rows,
                                 int cols4) {
    for (long long i = (long long)blockIdx.x * blockDim.y + threadIdx.y; i < rows;
         i += (long long)gridDim.x * blockDim.y) {
        float4 *yi = y + i * cols4;
        for (int j = threadIdx.x; j < cols4; j += 32) {
            float4 v = yi[j];
            const float4 c = b[j];
            v.x += c.x, v.y += c.y, v.z += c.z, v.w += c.w;
            yi[j] = v;
        }
    }
}

/* The column sums of dy into db, or into row chunks of partial sums (bias_grad_block). */
__global__ void bias_grad_kernel(const float *__restrict__ dy, float *db, double *part,
                                 long long rows, long long cols, long long chunk_rows,
                                 int accumulate) {
    bias_grad_block(dy, db, part, rows, cols, chunk_rows, accumulate, blockIdx.x, blockIdx.y);
}

__global__ void bias_grad_finish_kernel(const double *__restrict__ part, int chunks, float *db,
                                        long long cols, int accumulate) {
    FOR_EACH(j, cols) bias_grad_finish(part, chunks, db, cols, j, accumulate);
}

__global__ void relu_kernel(const float *x, float *y, long long n) {
    FOR_EACH(i, n) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

__device__ __forceinline__ float relu1(float v) {
    return v > 0.0f ? v : 0.0f;
}

/* n4 float4s; y may be x (each thread reads its float4 before writing it). */
__global__ void relu4_kernel(const float4 *x, float4 *y, long long n4) {
    FOR_EACH(i, n4) {
        const float4 v = x[i];
        y[i] = make_float4(relu1(v.x), relu1(v.y), relu1(v.z), relu1(v.w));
    }
}

__global__ void relu_backward_kernel(const float *y, const float *dy, float *dx, long long n) {
    FOR_EACH(i, n) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

__global__ void relu_backward4_kernel(const float4 *y, const float4 *dy, float4 *dx, long long n4) {
    FOR_EACH(i, n4) {
        const float4 a = y[i], g = dy[i];
        dx[i] = make_float4(a.x > 0.0f ? g.x : 0.0f, a.y > 0.0f ? g.y : 0.0f,
                            a.z > 0.0f ? g.z : 0.0f, a.w > 0.0f ? g.w : 0.0f);
    }
}

/*
 * A thread per group of 4 elements, which share one Philox counter (i / 4): the four calls of
 * gd__nn_dropout_keep inline to one Philox evaluation. Forward and backward are the same map.
 */
__global__ void dropout_kernel(unsigned long long seed, unsigned stream, unsigned threshold,
                               float scale, const long long *__restrict__ row_ids, long long cols,
                               const float *x, float *y, long long n) {
    FOR_EACH(q, (n + 3) >> 2) {
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const long long i = 4 * q + k;
            if (i < n) {
                const uint64_t key =
                    gd__nn_dropout_key((const int64_t *)row_ids, i / cols, cols, i % cols);
                y[i] = gd__nn_dropout_keep(seed, stream, key, threshold) ? x[i] * scale : 0.0f;
            }
        }
    }
}

/*
 * The same over float4s (cols a multiple of 4 when rows are keyed by id): float4 q is a group of
 * four keys sharing one Philox counter, so its four draws are one Philox evaluation.
 */
__global__ void dropout4_kernel(unsigned long long seed, unsigned stream, unsigned threshold,
                                float scale, const long long *__restrict__ row_ids, long long cols,
                                const float4 *x, float4 *y, long long n4) {
    FOR_EACH(q, n4) {
        const long long e = 4 * q;
        const uint64_t i = gd__nn_dropout_key((const int64_t *)row_ids, e / cols, cols, e % cols);
        const float4 v = x[q];
        y[q] = make_float4(gd__nn_dropout_keep(seed, stream, i, threshold) ? v.x * scale : 0.0f,
                           gd__nn_dropout_keep(seed, stream, i + 1, threshold) ? v.y * scale : 0.0f,
                           gd__nn_dropout_keep(seed, stream, i + 2, threshold) ? v.z * scale : 0.0f,
                           gd__nn_dropout_keep(seed, stream, i + 3, threshold) ? v.w * scale
                                                                               : 0.0f);
    }
}

/*
 * Adam and AdamW as torch.optim (and the CPU backend) define them, in double per element. The
 * operations are spelled out with round-to-nearest intrinsics in the CPU's order: a contracted
 * multiply-add rounds differently, and where m or v is a small difference of large terms that
 * one rounding shows as a relative error past 1e-6 in float. Written this way the step is the
 * CPU's bit for bit (sqrt and division are correctly rounded on both).
 */
__global__ void adam_kernel(float *p, const float *__restrict__ g, float *m, float *v, long long n,
                            double b1, double b2, double lr, double wd, double eps, double step,
                            double rbc2, int decoupled) {
    const double c1 = __dsub_rn(1.0, b1), c2 = __dsub_rn(1.0, b2);
    const double shrink = __dsub_rn(1.0, __dmul_rn(lr, wd));
    FOR_EACH(i, n) {
        double pi = (double)p[i], gi = (double)g[i];
        if (decoupled)
            pi = __dmul_rn(pi, shrink);
        else
            gi = __dadd_rn(gi, __dmul_rn(wd, pi));
        const double mi = __dadd_rn(__dmul_rn(b1, (double)m[i]), __dmul_rn(c1, gi));
        const double vi = __dadd_rn(__dmul_rn(b2, (double)v[i]), __dmul_rn(__dmul_rn(c2, gi), gi));
        m[i] = (float)mi;
        v[i] = (float)vi;
        const double den = __dadd_rn(__dmul_rn(__dsqrt_rn(vi), rbc2), eps);
        p[i] = (float)__dsub_rn(pi, __ddiv_rn(__dmul_rn(step, mi), den));
    }
}

/* ------------------------------------------------------------------ ops */

static int cuda_supports(gd_dtype dtype) {
    return dtype == GD_DTYPE_FLOAT32;
}

static gd_status cuda_alloc(const gd__nn_ctx *ctx, size_t bytes, void **out) {
    OP_ENTER();
    *out = NULL;
    {
        cudaError_t ce = cudaMalloc(out, bytes ? bytes : 16);
        if (ce != cudaSuccess) {
            size_t free_b = 0, total_b = 0;
            (void)cudaGetLastError();
            *out = NULL;
            (void)cudaMemGetInfo(&free_b, &total_b);
            (void)cudaGetLastError();
            GD_REQUIRE(0, ce == cudaErrorMemoryAllocation ? GD_ERR_NO_MEMORY : GD_ERR_CUDA,
                       "cudaMalloc of %zu bytes for an nn tensor on GPU %d failed: %s (%s); %zu "
                       "of %zu MiB free: lower the batch size or the fan-outs",
                       bytes, ctx->device, cudaGetErrorString(ce), cudaGetErrorName(ce),
                       free_b >> 20, total_b >> 20);
        }
    }
fail:
    OP_LEAVE();
}

/* cudaFree waits for the device, so no queued op can still use the memory. */
static void cuda_release(const gd__nn_ctx *ctx, void *ptr) {
    int prev = -1;
    if (gd__cuda_enter_device(ctx->device, &prev) != GD_OK) return;
    if (cudaFree(ptr) != cudaSuccess) (void)cudaGetLastError();
    gd__cuda_leave_device(ctx->device, prev);
}

static gd_status cuda_zero(const gd__nn_ctx *ctx, void *ptr, size_t bytes) {
    OP_ENTER();
    if (bytes) GD_CUDA_CHECK(cudaMemsetAsync(ptr, 0, bytes, STREAM(ctx)));
fail:
    OP_LEAVE();
}

/*
 * Copies with host memory are queued on the stream and then waited for, so that they are
 * ordered with the ops around them and the host buffer is free (or filled) on return.
 */
static gd_status copy_and_wait(const gd__nn_ctx *ctx, void *dst, const void *src, size_t bytes,
                               cudaMemcpyKind kind) {
    OP_ENTER();
    if (bytes) {
        GD_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, STREAM(ctx)));
        GD_CUDA_CHECK(cudaStreamSynchronize(STREAM(ctx)));
    }
fail:
    OP_LEAVE();
}

static gd_status cuda_to_host(const gd__nn_ctx *ctx, void *dst, const void *src, size_t bytes) {
    return copy_and_wait(ctx, dst, src, bytes, cudaMemcpyDeviceToHost);
}

static gd_status cuda_from_host(const gd__nn_ctx *ctx, void *dst, const void *src, size_t bytes) {
    return copy_and_wait(ctx, dst, src, bytes, cudaMemcpyHostToDevice);
}

static gd_status cuda_synchronize(const gd__nn_ctx *ctx) {
    OP_ENTER();
    GD_CUDA_CHECK(cudaStreamSynchronize(STREAM(ctx)));
fail:
    OP_LEAVE();
}

static gd_status cuda_check_errors(const gd__nn_ctx *ctx) {
    gd__dev_error e;
    OP_ENTER();
    GD_CHECK(gd__dev_error_take(ctx->device, NULL, ctx->stream, &WORK(ctx)->err, &e));
    if (e.flag) {
        GD_REQUIRE(0, GD_ERR_RANGE,
                   "softmax cross-entropy: label %lld of row %lld (labels on GPU %d) is not below "
                   "the %lld classes; that row was left out of the loss and its gradient is 0: "
                   "labels must be class numbers, or negative to ignore a row",
                   e.v[1], e.v[0], ctx->device, e.v[2]);
    }
fail:
    OP_LEAVE();
}

/* The shapes have been checked by ops.c; cuBLAS takes int dimensions. */
static gd_status cuda_gemm(const gd__nn_ctx *ctx, gd__nn_trans ta, gd__nn_trans tb, double alpha,
                           const gd__nn_tensor *a, const gd__nn_tensor *b, double beta,
                           gd__nn_tensor *c) {
    const long long m = c->rows, n = c->cols, k = ta ? a->rows : a->cols;
    const float al = (float)alpha, be = (float)beta;
    OP_ENTER();
    GD_REQUIRE(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX, GD_ERR_UNSUPPORTED,
               "gemm: %lld x %lld x %lld is past cuBLAS's int dimensions", m, n, k);
    if (m == 0 || n == 0) {
        /* Nothing to write. */
    } else if (k == 0) {
        /* No products: C = beta C (cuBLAS would want leading dimensions of at least 1). */
        scale_kernel<<<grid_for(m * n, BLOCK_THREADS), BLOCK_THREADS, 0, STREAM(ctx)>>>(
            (float *)c->data, m * n, be);
        GD_CUDA_CHECK_LAUNCH();
    } else {
        /*
         * Row-major X is column-major X^T. C^T (n x m, ld n) = op(B)^T (n x k) op(A)^T (k x m):
         * B untransposed is column-major op(B)^T with ld n, transposed it is op(B) with ld k; A
         * likewise with ld k or m.
         */
        GD_CUBLAS_CHECK(
            cublasSgemm(BLAS(ctx), tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                        (int)n, (int)m, (int)k, &al, (const float *)b->data, (int)(tb ? k : n),
                        (const float *)a->data, (int)(ta ? m : k), &be, (float *)c->data, (int)n));
    }
fail:
    OP_LEAVE();
}

/* Blocks of (32, 8) threads, a warp per row: enough rows per block to fill the GPU. */
#define ROW_WARPS 8

static gd_status cuda_add_bias(const gd__nn_ctx *ctx, gd__nn_tensor *y, const gd__nn_tensor *b) {
    const long long rows = y->rows, cols = y->cols;
    OP_ENTER();
    GD_REQUIRE(cols <= INT_MAX, GD_ERR_UNSUPPORTED, "bias add: %lld columns", cols);
    if (rows > 0 && cols > 0) {
        const dim3 block(32, ROW_WARPS);
        if (vec4(y->data, cols) && vec4(b->data, cols))
            add_bias4_kernel<<<grid_for(rows, ROW_WARPS), block, 0, STREAM(ctx)>>>(
                (float4 *)y->data, (const float4 *)b->data, rows, (int)(cols / 4));
        else
            add_bias_kernel<<<grid_for(rows, ROW_WARPS), block, 0, STREAM(ctx)>>>(
                (float *)y->data, (const float *)b->data, rows, (int)cols);
        GD_CUDA_CHECK_LAUNCH();
    }
fail:
    OP_LEAVE();
}

static gd_status cuda_bias_grad(const gd__nn_ctx *ctx, const gd__nn_tensor *dy, gd__nn_tensor *db,
                                int accumulate) {
    const long long rows = dy->rows, cols = dy->cols;
    const long long col_blocks = (cols + 31) / 32;
    OP_ENTER();
    GD_REQUIRE(col_blocks <= INT_MAX, GD_ERR_UNSUPPORTED, "bias gradient: %lld columns", cols);
    if (col_blocks > 0) {
        const long long chunks = bias_chunks(rows, cols, WORK_PARTIALS);
        const long long chunk_rows = (rows + chunks - 1) / chunks;
        double *part = chunks > 1 ? PARTIALS(ctx) : NULL;
        bias_grad_kernel<<<dim3((unsigned)col_blocks, (unsigned)chunks), dim3(32, 32), 0,
                           STREAM(ctx)>>>((const float *)dy->data, (float *)db->data, part, rows,
                                          cols, chunk_rows > 0 ? chunk_rows : 1, accumulate);
        GD_CUDA_CHECK_LAUNCH();
        if (part) {
            bias_grad_finish_kernel<<<grid_for(cols, BLOCK_THREADS), BLOCK_THREADS, 0,
                                      STREAM(ctx)>>>(part, (int)chunks, (float *)db->data, cols,
                                                     accumulate);
            GD_CUDA_CHECK_LAUNCH();
        }
    }
fail:
    OP_LEAVE();
}

static gd_status cuda_relu(const gd__nn_ctx *ctx, const gd__nn_tensor *x, gd__nn_tensor *y) {
    const long long n = gd__nn_numel(x);
    OP_ENTER();
    if (n > 0) {
        if (vec4(x->data, n) && aligned16(y->data))
            relu4_kernel<<<grid_for(n / 4, BLOCK_THREADS), BLOCK_THREADS, 0, STREAM(ctx)>>>(
                (const float4 *)x->data, (float4 *)y->data, n / 4);
        else
            relu_kernel<<<grid_for(n, BLOCK_THREADS), BLOCK_THREADS, 0, STREAM(ctx)>>>(
                (const float *)x->data, (float *)y->data, n);
        GD_CUDA_CHECK_LAUNCH();
    }
fail:
    OP_LEAVE();
}

static gd_status cuda_relu_backward(const gd__nn_ctx *ctx, const gd__nn_tensor *y,
                                    const gd__nn_tensor *dy, gd__nn_tensor *dx) {
    const long long n = gd__nn_numel(y);
    OP_ENTER();
    if (n > 0) {
        if (vec4(y->data, n) && aligned16(dy->data) && aligned16(dx->data))
            relu_backward4_kernel<<<grid_for(n / 4, BLOCK_THREADS), BLOCK_THREADS, 0,
                                    STREAM(ctx)>>>((const float4 *)y->data,
                                                   (const float4 *)dy->data, (float4 *)dx->data,
                                                   n / 4);
        else
            relu_backward_kernel<<<grid_for(n, BLOCK_THREADS), BLOCK_THREADS, 0, STREAM(ctx)>>>(
                (const float *)y->data, (const float *)dy->data, (float *)dx->data, n);
        GD_CUDA_CHECK_LAUNCH();
    }
fail:
    OP_LEAVE();
}

static gd_status cuda_dropout(const gd__nn_ctx *ctx, double p, uint64_t seed, uint32_t stream,
                              const int64_t *row_ids, const gd__nn_tensor *x, gd__nn_tensor *y) {
    const long long n = gd__nn_numel(x), cols = x->cols;
    const unsigned threshold = gd__nn_dropout_threshold(p);
    const float scale = (float)(1.0 / (1.0 - p));
    const long long *ids = (const long long *)row_ids;
    OP_ENTER();
    if (n > 0) {
        if (vec4(x->data, n) && aligned16(y->data) && (!row_ids || cols % 4 == 0))
            dropout4_kernel<<<grid_for(n / 4, BLOCK_THREADS), BLOCK_THREADS, 0, STREAM(ctx)>>>(
                (unsigned long long)seed, stream, threshold, scale, ids, cols,
                (const float4 *)x->data, (float4 *)y->data, n / 4);
        else
            dropout_kernel<<<grid_for((n + 3) / 4, BLOCK_THREADS), BLOCK_THREADS, 0,
                             STREAM(ctx)>>>((unsigned long long)seed, stream, threshold, scale,
                                            ids, cols, (const float *)x->data, (float *)y->data,
                                            n);
        GD_CUDA_CHECK_LAUNCH();
    }
fail:
    OP_LEAVE();
}

static gd_status cuda_adam(const gd__nn_ctx *ctx, const gd__nn_adam_options *o, double bc1,
                           double bc2, gd__nn_tensor *p, const gd__nn_tensor *g, gd__nn_tensor *m,
                           gd__nn_tensor *v) {
    const long long n = gd__nn_numel(p);
    OP_ENTER();
    if (n > 0) {
        adam_kernel<<<grid_for(n, BLOCK_THREADS), BLOCK_THREADS, 0, STREAM(ctx)>>>(
            (float *)p->data, (const float *)g->data, (float *)m->data, (float *)v->data, n,
            o->beta1, o->beta2, o->lr, o->weight_decay, o->eps, o->lr / bc1, 1.0 / sqrt(bc2),
            o->decoupled);
        GD_CUDA_CHECK_LAUNCH();
    }
fail:
    OP_LEAVE();
}

extern "C" const gd__nn_backend gd__nn_cuda_backend = {
    "cuda",
    cuda_supports,
    cuda_alloc,
    cuda_release,
    cuda_zero,
    cuda_to_host,
    cuda_from_host,
    cuda_synchronize,
    cuda_check_errors,
    cuda_gemm,
    cuda_add_bias,
    cuda_bias_grad,
    gd__nn_cuda_mean_agg,
    gd__nn_cuda_mean_agg_backward,
    cuda_relu,
    cuda_relu_backward,
    cuda_dropout,
    cuda_dropout,
    gd__nn_cuda_softmax_xent,
    gd__nn_cuda_accuracy,
    cuda_adam,
    gd__nn_cuda_grouped_init,
    gd__nn_cuda_grouped_release,
    gd__nn_cuda_gemm_grouped,
    gd__nn_cuda_bias_grad_grouped,
};

/* ------------------------------------------------------------------ context */

extern "C" void gd__nn_cuda_ctx_destroy(gd__nn_ctx *ctx) {
    int prev = -1;
    if (!ctx || ctx->be != &gd__nn_cuda_backend) return;
    /* Best effort: a failed release cannot be acted on, so errors are dropped. */
    if (gd__cuda_enter_device(ctx->device, &prev) == GD_OK) {
        if (ctx->stream) (void)cudaStreamSynchronize(STREAM(ctx));
        if (ctx->work) (void)cudaFree(ctx->work);
        if (ctx->blas) (void)cublasDestroy(BLAS(ctx));
        if (ctx->stream) (void)cudaStreamDestroy(STREAM(ctx));
        (void)cudaGetLastError();
        gd__cuda_leave_device(ctx->device, prev);
    }
    ctx->stream = ctx->blas = ctx->work = NULL;
    ctx->be = NULL;
}

extern "C" gd_status gd__nn_cuda_ctx_create(int device, gd__nn_ctx *out) {
    gd_status st = GD_OK;
    int prev = -1, entered = 0, least = 0, greatest = 0;
    cudaStream_t stream = NULL;
    cublasHandle_t blas = NULL;
    gd__nn_ctx c = {&gd__nn_cuda_backend, device, NULL, NULL, NULL};
    GD_REQUIRE(out, GD_ERR_INVALID_ARG, "nn CUDA context: out is NULL");
    GD_CHECK(gd__cuda_check_device(device, "the CUDA nn backend", "train on the CPU backend"));
    GD_CHECK(gd__cuda_enter_device(device, &prev));
    entered = 1;
    /*
     * The highest stream priority: in the training pipeline the sampler's and the gather's
     * kernels run beside training, and the block scheduler then hands freed SMs to the
     * training kernels first, so the data path fills the gaps instead of slowing the step.
     */
    GD_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    GD_CUDA_CHECK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, greatest));
    c.stream = stream;
    GD_CUBLAS_CHECK(cublasCreate(&blas));
    c.blas = blas;
    GD_CUBLAS_CHECK(cublasSetStream(blas, stream));
    /*
     * Full float32 products, as the CPU backend and PyTorch's default (matmul TF32 off):
     * CUBLAS_DEFAULT_MATH never rounds inputs to TF32 (only CUBLAS_TF32_TENSOR_OP_MATH would).
     */
    GD_CUBLAS_CHECK(cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH));
    GD_CUDA_CHECK(cudaMalloc(&c.work, WORK_BYTES));
    /* On the context's stream and waited for: a legacy-stream memset is not ordered with it. */
    GD_CUDA_CHECK(cudaMemsetAsync(c.work, 0, sizeof(nn_work), stream));
    GD_CUDA_CHECK(cudaStreamSynchronize(stream));
    gd__cuda_leave_device(device, prev);
    *out = c;
    return GD_OK;
fail:
    if (entered) gd__cuda_leave_device(device, prev);
    gd__nn_cuda_ctx_destroy(&c);
    return st;
}
