/*
 * The CUDA loss and metric ops of the nn backend: softmax cross-entropy (a warp per row in
 * double, the loss reduced into the context's work buffer and written by the device, a label
 * out of range recorded for gd__nn_check_errors) and accuracy (a device int64 counter). CUDA
 * only.
 */
#include "nn/ops_cuda.cuh"

#include <math.h>

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

gd_status gd__nn_cuda_softmax_xent(const gd__nn_ctx *ctx, const gd__nn_tensor *z,
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

gd_status gd__nn_cuda_accuracy(const gd__nn_ctx *ctx, const gd__nn_tensor *z, const int64_t *labels,
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
