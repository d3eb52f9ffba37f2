/*
 * The CUDA backend of the nn module: the op table of internal.h in float32 on one GPU, every op
 * queued on the context's stream. GEMM is cuBLAS (row-major C = op(A) op(B) computed as the
 * column-major C^T = op(B)^T op(A)^T, full float32: the handle's math mode is set to
 * CUBLAS_DEFAULT_MATH, so no TF32). The other ops are kernels, written for the shapes of a
 * sampled minibatch (tens of thousands of rows of 100 to 256 columns), where every one of them
 * is bound by memory: the elementwise ops and the bias add move float4s when the tensor allows
 * (16-byte aligned, a multiple of four elements), else floats; the bias gradient sums columns
 * in double like the CPU, over row chunks spread across the GPU whose partial sums (in the
 * context's work buffer) are added in a fixed order, so it is reproducible; the mean aggregation
 * a warp per destination node, lanes across the feature columns (float4s when the width is a
 * multiple of four), reading the block's int32 CSC arrays on the device; its backward the same
 * walk scattering with atomicAdd (float4 atomics on Hopper), so its float32 sums are not
 * bit-reproducible from run to run; dropout through gd__nn_dropout_keep, the function the CPU
 * uses, so both drop the same elements; softmax cross-entropy a warp per row in double, the loss
 * reduced into the context's work buffer and written by the device; accuracy a device int64
 * counter; Adam one fused pass over the flat buffers, rounding as the CPU does. docs/nn.md
 * ("Speed") has the measurements behind these choices.
 *
 * A label out of range cannot be returned by an asynchronous op: the kernel records the first
 * one in the work buffer, treats that row as ignored, and gd__nn_check_errors reports it, as
 * the gather and the sampler report bad ids. Every CUDA call is checked, and the last error
 * after every launch; cuBLAS statuses are turned into messages.
 */
#include "core/cuda.h"
#include "core/dev_error.h"
#include "nn/internal.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#define BLOCK_THREADS 256
#define WARPS_PER_BLOCK (BLOCK_THREADS / 32)
#define FULL_MASK 0xffffffffu
#define MAX_GRID 65536

/* Check a cuBLAS call inside a function with st and fail:, naming the call and the status. */
#define GD_CUBLAS_CHECK(call)                                                                      \
    do {                                                                                           \
        cublasStatus_t bs_ = (call);                                                               \
        if (bs_ != CUBLAS_STATUS_SUCCESS) {                                                        \
            st = gd__error(bs_ == CUBLAS_STATUS_ALLOC_FAILED ? GD_ERR_NO_MEMORY : GD_ERR_CUDA,     \
                           "%s failed: %s (%s)", #call, cublasGetStatusString(bs_),                \
                           cublasGetStatusName(bs_));                                              \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

/*
 * The context's device work buffer: the loss accumulators of softmax cross-entropy (zeroed by
 * each call) and the record of the first label out of range (kept until reported; its values
 * are the row, the label and the number of classes), then, at
 * WORK_HEAD_BYTES, the partial column sums of the bias gradient (WORK_PARTIALS doubles, written
 * before they are read by each call). Ops on one context run in stream order, so they never
 * use it at the same time.
 */
typedef struct {
    double loss_sum;
    unsigned long long count;
    gd__dev_error err;
} nn_work;
#define WORK_HEAD_BYTES 256
#define WORK_PARTIALS 65536
#define WORK_BYTES (WORK_HEAD_BYTES + WORK_PARTIALS * sizeof(double))
static_assert(sizeof(nn_work) <= WORK_HEAD_BYTES, "the work buffer's head outgrew its room");
/* The one kind of error the work buffer's record holds. */
#define ERR_LABEL_RANGE 1u

#define STREAM(ctx) ((cudaStream_t)(ctx)->stream)
#define BLAS(ctx) ((cublasHandle_t)(ctx)->blas)
#define WORK(ctx) ((nn_work *)(ctx)->work)
#define PARTIALS(ctx) ((double *)((char *)(ctx)->work + WORK_HEAD_BYTES))

/* Blocks for a grid-stride loop over n items, one per thread (n > 0). */
static unsigned grid_for(long long n, int per_block) {
    const long long b = (n + per_block - 1) / per_block;
    return (unsigned)(b < MAX_GRID ? b : MAX_GRID);
}

#define FOR_EACH(i, n)                                                                             \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                  \
         i += (long long)gridDim.x * blockDim.x)

/* The same with a warp per item (lanes threadIdx.x & 31 share it). */
#define FOR_EACH_WARP(i, n)                                                                        \
    for (long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; i < (n);           \
         i += ((long long)gridDim.x * blockDim.x) >> 5)

/* Whether p can be read and written as float4s (cudaMalloc'd buffers and their views can). */
static int aligned16(const void *p) {
    return ((uintptr_t)p & 15u) == 0;
}

/* A tensor of n elements at p moves as n / 4 float4s. */
static int vec4(const void *p, long long n) {
    return aligned16(p) && n % 4 == 0;
}

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

/*
 * Column sums over the rows [r0, r1) of chunk blockIdx.y: block (32, 32), threadIdx.x a
 * column, threadIdx.y strides over the chunk's rows; the 32 partial sums of a column (double,
 * as the CPU) are added in shared memory. With one chunk the sum goes to db (accumulate: db +=);
 * with several each chunk's sum goes to part[chunk][column] and bias_grad_finish_kernel adds
 * them in chunk order, so the result does not depend on scheduling.
 */
__global__ void bias_grad_kernel(const float *__restrict__ dy, float *db, double *part,
                                 long long rows, long long cols, long long chunk_rows,
                                 int accumulate) {
    __shared__ double sum[32][33];
    const long long j = (long long)blockIdx.x * 32 + threadIdx.x;
    const long long r0 = (long long)blockIdx.y * chunk_rows;
    const long long r1 = r0 + chunk_rows < rows ? r0 + chunk_rows : rows;
    double s = 0.0;
    if (j < cols)
        for (long long i = r0 + threadIdx.y; i < r1; i += 32) s += (double)dy[i * cols + j];
    sum[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && j < cols) {
        double t = 0.0;
        for (int k = 0; k < 32; k++) t += sum[k][threadIdx.x];
        if (part)
            part[(long long)blockIdx.y * cols + j] = t;
        else
            db[j] = (float)(accumulate ? (double)db[j] + t : t);
    }
}

__global__ void bias_grad_finish_kernel(const double *__restrict__ part, int chunks, float *db,
                                        long long cols, int accumulate) {
    FOR_EACH(j, cols) {
        double t = 0.0;
        for (int c = 0; c < chunks; c++) t += part[(long long)c * cols + j];
        db[j] = (float)(accumulate ? (double)db[j] + t : t);
    }
}

/* A warp per destination node; each lane owns columns lane, lane + 32, ... */
__global__ void mean_agg_kernel(const int *__restrict__ indptr, const int *__restrict__ indices,
                                long long nd, const float *__restrict__ x, float *__restrict__ out,
                                long long cols) {
    const int lane = threadIdx.x & 31;
    FOR_EACH_WARP(d, nd) {
        const int e0 = indptr[d], e1 = indptr[d + 1];
        /* The same order and rounding as the CPU: sum in edge order, then times (float)1/deg. */
        const float inv = e1 > e0 ? (float)(1.0 / (double)(e1 - e0)) : 0.0f;
        float *o = out + d * cols;
        for (long long j = lane; j < cols; j += 32) {
            float s = 0.0f;
#pragma unroll 4
            for (int e = e0; e < e1; e++) s += x[(long long)indices[e] * cols + j];
            o[j] = s * inv;
        }
    }
}

/*
 * The same with float4s (cols4 = cols / 4): a row of 100 floats is one load per lane for 25
 * lanes instead of four rounds of loads. Each of the four columns is still summed in edge
 * order, so the result equals mean_agg_kernel's (and the CPU's) bit for bit.
 */
__global__ void mean_agg4_kernel(const int *__restrict__ indptr, const int *__restrict__ indices,
                                 long long nd, const float4 *__restrict__ x,
                                 float4 *__restrict__ out, int cols4) {
    const int lane = threadIdx.x & 31;
    FOR_EACH_WARP(d, nd) {
        const int e0 = indptr[d], e1 = indptr[d + 1];
        const float inv = e1 > e0 ? (float)(1.0 / (double)(e1 - e0)) : 0.0f;
        float4 *o = out + d * cols4;
        for (int j = lane; j < cols4; j += 32) {
            float4 s = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll 4
            for (int e = e0; e < e1; e++) {
                const float4 v = x[(long long)indices[e] * cols4 + j];
                s.x += v.x, s.y += v.y, s.z += v.z, s.w += v.w;
            }
            o[j] = make_float4(s.x * inv, s.y * inv, s.z * inv, s.w * inv);
        }
    }
}

/* The scatter of the backward: destinations sharing a source add with atomics. */
__global__ void mean_agg_backward_kernel(const int *__restrict__ indptr,
                                         const int *__restrict__ indices, long long nd,
                                         const float *__restrict__ dout, float *dx,
                                         long long cols) {
    const int lane = threadIdx.x & 31;
    FOR_EACH_WARP(d, nd) {
        const int e0 = indptr[d], e1 = indptr[d + 1];
        if (e1 == e0) continue;
        const float inv = (float)(1.0 / (double)(e1 - e0));
        const float *g = dout + d * cols;
        for (long long j = lane; j < cols; j += 32) {
            const float v = g[j] * inv;
            for (int e = e0; e < e1; e++) atomicAdd(dx + (long long)indices[e] * cols + j, v);
        }
    }
}

/*
 * The same with float4s. Hopper (sm_90) adds a float4 in global memory with one atomic
 * instruction, a quarter of the atomic traffic; older GPUs add its four floats one by one.
 */
__device__ __forceinline__ void atomic_add4(float4 *p, float4 v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    atomicAdd(p, v);
#else
    float *f = (float *)p;
    atomicAdd(f, v.x);
    atomicAdd(f + 1, v.y);
    atomicAdd(f + 2, v.z);
    atomicAdd(f + 3, v.w);
#endif
}

__global__ void mean_agg_backward4_kernel(const int *__restrict__ indptr,
                                          const int *__restrict__ indices, long long nd,
                                          const float4 *__restrict__ dout, float4 *dx,
                                          int cols4) {
    const int lane = threadIdx.x & 31;
    FOR_EACH_WARP(d, nd) {
        const int e0 = indptr[d], e1 = indptr[d + 1];
        if (e1 == e0) continue;
        const float inv = (float)(1.0 / (double)(e1 - e0));
        const float4 *g = dout + d * cols4;
        for (int j = lane; j < cols4; j += 32) {
            const float4 a = g[j];
            const float4 v = make_float4(a.x * inv, a.y * inv, a.z * inv, a.w * inv);
            for (int e = e0; e < e1; e++) atomic_add4(dx + (long long)indices[e] * cols4 + j, v);
        }
    }
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
                               float scale, const float *x, float *y, long long n) {
    FOR_EACH(q, (n + 3) >> 2) {
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const long long i = 4 * q + k;
            if (i < n)
                y[i] =
                    gd__nn_dropout_keep(seed, stream, (uint64_t)i, threshold) ? x[i] * scale : 0.0f;
        }
    }
}

/* The same over float4s: float4 q is group q, its four draws one Philox evaluation. */
__global__ void dropout4_kernel(unsigned long long seed, unsigned stream, unsigned threshold,
                                float scale, const float4 *x, float4 *y, long long n4) {
    FOR_EACH(q, n4) {
        const uint64_t i = 4 * (uint64_t)q;
        const float4 v = x[q];
        y[q] = make_float4(gd__nn_dropout_keep(seed, stream, i, threshold) ? v.x * scale : 0.0f,
                           gd__nn_dropout_keep(seed, stream, i + 1, threshold) ? v.y * scale : 0.0f,
                           gd__nn_dropout_keep(seed, stream, i + 2, threshold) ? v.z * scale : 0.0f,
                           gd__nn_dropout_keep(seed, stream, i + 3, threshold) ? v.w * scale
                                                                               : 0.0f);
    }
}

/* The rows that count: labels in [0, cols). A label >= cols is recorded. */
__global__ void xent_count_kernel(const long long *__restrict__ labels, long long rows,
                                  long long cols, nn_work *w) {
    unsigned c = 0;
    FOR_EACH(i, rows) {
        const long long y = labels[i];
        if (y >= cols) gd__dev_error_record(&w->err, ERR_LABEL_RANGE, i, y, cols);
        c += y >= 0 && y < cols;
    }
    c = __reduce_add_sync(FULL_MASK, c);
    if ((threadIdx.x & 31) == 0 && c) atomicAdd(&w->count, (unsigned long long)c);
}

__device__ __forceinline__ double warp_sum(double v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL_MASK, v, o);
    return v;
}

__device__ __forceinline__ double warp_max(double v) {
    for (int o = 16; o > 0; o >>= 1) v = fmax(v, __shfl_xor_sync(FULL_MASK, v, o));
    return v;
}

/* A warp per row: log-sum-exp in double, the row's loss added to w->loss_sum, and dz. */
__global__ void xent_kernel(const float *__restrict__ z, const long long *__restrict__ labels,
                            long long rows, long long cols, double scale, float *dz, nn_work *w) {
    const int lane = threadIdx.x & 31;
    const unsigned long long count = w->count;
    const double inv = count > 0 ? 1.0 / (double)count : 0.0;
    FOR_EACH_WARP(i, rows) {
        const float *zi = z + i * cols;
        float *gi = dz ? dz + i * cols : NULL;
        const long long y = labels[i];
        if (y < 0 || y >= cols) {
            if (gi)
                for (long long j = lane; j < cols; j += 32) gi[j] = 0.0f;
            continue;
        }
        double mx = -INFINITY;
        for (long long j = lane; j < cols; j += 32) mx = fmax(mx, (double)zi[j]);
        mx = warp_max(mx);
        double s = 0.0;
        for (long long j = lane; j < cols; j += 32) s += exp((double)zi[j] - mx);
        s = warp_sum(s);
        const double lse = mx + log(s);
        if (lane == 0) atomicAdd(&w->loss_sum, lse - (double)zi[y]);
        if (gi)
            for (long long j = lane; j < cols; j += 32)
                gi[j] = (float)(scale * inv * (exp((double)zi[j] - lse) - (double)(j == y)));
    }
}

__global__ void xent_finish_kernel(const nn_work *w, float *loss) {
    *loss = (float)(w->count > 0 ? w->loss_sum / (double)w->count : 0.0);
}

/* A warp per row: the first maximal logit (ties to the lower column), counted per warp. */
__global__ void accuracy_kernel(const float *__restrict__ z, const long long *__restrict__ labels,
                                long long rows, long long cols, unsigned long long *correct) {
    const int lane = threadIdx.x & 31;
    unsigned long long mine = 0;
    FOR_EACH_WARP(i, rows) {
        const long long y = labels[i];
        if (y < 0) continue;
        const float *zi = z + i * cols;
        long long arg = -1;
        float best = 0.0f;
        for (long long j = lane; j < cols; j += 32)
            if (arg < 0 || zi[j] > best) best = zi[j], arg = j;
        for (int o = 16; o > 0; o >>= 1) {
            const float ob = __shfl_xor_sync(FULL_MASK, best, o);
            const long long oa = __shfl_xor_sync(FULL_MASK, arg, o);
            if (oa >= 0 && (arg < 0 || ob > best || (ob == best && oa < arg))) best = ob, arg = oa;
        }
        mine += lane == 0 && arg == y;
    }
    if (mine) atomicAdd(correct, mine);
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

/*
 * Every op makes the context's device current for its calls and restores the caller's:
 * OP_ENTER at the start, OP_LEAVE on both paths (after fail:).
 */
#define OP_ENTER()                                                                                 \
    gd_status st = GD_OK;                                                                          \
    int prev_ = -1;                                                                                \
    GD_CHECK(gd__cuda_enter_device(ctx->device, &prev_))
#define OP_LEAVE()                                                                                 \
    gd__cuda_leave_device(ctx->device, prev_);                                                     \
    return st

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

/*
 * Rows per chunk of the bias gradient: chunks of at least BIAS_CHUNK_ROWS rows, at most
 * BIAS_BLOCKS blocks in all (a few per SM of a large GPU), and partial sums that fit the work
 * buffer. One chunk sums straight into db.
 */
#define BIAS_CHUNK_ROWS 512
#define BIAS_BLOCKS 512

static gd_status cuda_bias_grad(const gd__nn_ctx *ctx, const gd__nn_tensor *dy, gd__nn_tensor *db,
                                int accumulate) {
    const long long rows = dy->rows, cols = dy->cols;
    const long long col_blocks = (cols + 31) / 32;
    OP_ENTER();
    GD_REQUIRE(col_blocks <= INT_MAX, GD_ERR_UNSUPPORTED, "bias gradient: %lld columns", cols);
    if (col_blocks > 0) {
        long long chunks = (rows + BIAS_CHUNK_ROWS - 1) / BIAS_CHUNK_ROWS;
        if (chunks > BIAS_BLOCKS / col_blocks) chunks = BIAS_BLOCKS / col_blocks;
        if (chunks > WORK_PARTIALS / cols) chunks = WORK_PARTIALS / cols;
        if (chunks < 1) chunks = 1;
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

/* The mean aggregation kernels and their float4 versions, forward and backward. */
typedef void (*agg_kernel_fn)(const int *, const int *, long long, const float *, float *,
                              long long);
typedef void (*agg4_kernel_fn)(const int *, const int *, long long, const float4 *, float4 *, int);

/*
 * Launch an aggregation of in into out over blk's destination nodes, a warp per node: the
 * float4 kernel where both tensors allow it, else the scalar one. The caller's device is set.
 */
static gd_status launch_agg(const gd__nn_ctx *ctx, const gd_block *blk, agg4_kernel_fn k4,
                            agg_kernel_fn k, const void *in, void *out, long long cols) {
    gd_status st = GD_OK;
    const unsigned grid = grid_for(blk->num_dst, WARPS_PER_BLOCK);
    if (vec4(in, cols) && vec4(out, cols) && cols / 4 <= INT_MAX)
        k4<<<grid, BLOCK_THREADS, 0, STREAM(ctx)>>>(blk->indptr, blk->indices, blk->num_dst,
                                                    (const float4 *)in, (float4 *)out,
                                                    (int)(cols / 4));
    else
        k<<<grid, BLOCK_THREADS, 0, STREAM(ctx)>>>(blk->indptr, blk->indices, blk->num_dst,
                                                   (const float *)in, (float *)out, cols);
    GD_CUDA_CHECK_LAUNCH();
fail:
    return st;
}

static gd_status cuda_mean_agg(const gd__nn_ctx *ctx, const gd_block *blk, const gd__nn_tensor *x,
                               gd__nn_tensor *out) {
    OP_ENTER();
    if (blk->num_dst > 0 && x->cols > 0)
        GD_CHECK(launch_agg(ctx, blk, mean_agg4_kernel, mean_agg_kernel, x->data, out->data,
                            x->cols));
fail:
    OP_LEAVE();
}

static gd_status cuda_mean_agg_backward(const gd__nn_ctx *ctx, const gd_block *blk,
                                        const gd__nn_tensor *dout, gd__nn_tensor *dx) {
    OP_ENTER();
    if (blk->num_edges > 0 && dout->cols > 0)
        GD_CHECK(launch_agg(ctx, blk, mean_agg_backward4_kernel, mean_agg_backward_kernel,
                            dout->data, dx->data, dout->cols));
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
                              const gd__nn_tensor *x, gd__nn_tensor *y) {
    const long long n = gd__nn_numel(x);
    const unsigned threshold = gd__nn_dropout_threshold(p);
    const float scale = (float)(1.0 / (1.0 - p));
    OP_ENTER();
    if (n > 0) {
        if (vec4(x->data, n) && aligned16(y->data))
            dropout4_kernel<<<grid_for(n / 4, BLOCK_THREADS), BLOCK_THREADS, 0, STREAM(ctx)>>>(
                (unsigned long long)seed, stream, threshold, scale, (const float4 *)x->data,
                (float4 *)y->data, n / 4);
        else
            dropout_kernel<<<grid_for((n + 3) / 4, BLOCK_THREADS), BLOCK_THREADS, 0,
                             STREAM(ctx)>>>((unsigned long long)seed, stream, threshold, scale,
                                            (const float *)x->data, (float *)y->data, n);
        GD_CUDA_CHECK_LAUNCH();
    }
fail:
    OP_LEAVE();
}

static gd_status cuda_softmax_xent(const gd__nn_ctx *ctx, const gd__nn_tensor *z,
                                   const int64_t *labels, double scale, gd__nn_tensor *loss,
                                   gd__nn_tensor *dz) {
    nn_work *w = WORK(ctx);
    const long long rows = z->rows;
    OP_ENTER();
    /* Zero the sum and the count (the error record stays until it is reported). */
    GD_CUDA_CHECK(cudaMemsetAsync(w, 0, offsetof(nn_work, err), STREAM(ctx)));
    if (rows > 0) {
        xent_count_kernel<<<grid_for(rows, BLOCK_THREADS), BLOCK_THREADS, 0, STREAM(ctx)>>>(
            (const long long *)labels, rows, z->cols, w);
        GD_CUDA_CHECK_LAUNCH();
        xent_kernel<<<grid_for(rows, WARPS_PER_BLOCK), BLOCK_THREADS, 0, STREAM(ctx)>>>(
            (const float *)z->data, (const long long *)labels, rows, z->cols, scale,
            dz ? (float *)dz->data : NULL, w);
        GD_CUDA_CHECK_LAUNCH();
    }
    xent_finish_kernel<<<1, 1, 0, STREAM(ctx)>>>(w, (float *)loss->data);
    GD_CUDA_CHECK_LAUNCH();
fail:
    OP_LEAVE();
}

static gd_status cuda_accuracy(const gd__nn_ctx *ctx, const gd__nn_tensor *z, const int64_t *labels,
                               int64_t *correct) {
    OP_ENTER();
    GD_CUDA_CHECK(cudaMemsetAsync(correct, 0, sizeof *correct, STREAM(ctx)));
    if (z->rows > 0) {
        accuracy_kernel<<<grid_for(z->rows, WARPS_PER_BLOCK), BLOCK_THREADS, 0, STREAM(ctx)>>>(
            (const float *)z->data, (const long long *)labels, z->rows, z->cols,
            (unsigned long long *)correct);
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
    cuda_mean_agg,
    cuda_mean_agg_backward,
    cuda_relu,
    cuda_relu_backward,
    cuda_dropout,
    cuda_dropout,
    cuda_softmax_xent,
    cuda_accuracy,
    cuda_adam,
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
