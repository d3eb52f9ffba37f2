/*
 * What test_train_disk and test_stripe share: two loaders over the same seeds, compared
 * minibatch by minibatch, every row of features bit for bit (float32 tables).
 */
#ifndef GD_TESTS_LOADER_UTIL_H
#define GD_TESTS_LOADER_UTIL_H

#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef GD_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

/* A batch's features on the host (waited for on stream; copied from the GPU when there). */
static inline float *t_batch_x(gd_batch_t *b, int64_t *n, void *stream) {
    gd_batch_info bi = GD_BATCH_INFO_INIT;
    gd_array_view v;
    T_OK(gd_batch_get_info(b, &bi));
    T_OK(gd_batch_wait(b, stream));
    T_OK(gd_batch_array(b, GD_BATCH_FEATURES, 0, &v));
    const size_t bytes = (size_t)(v.shape[0] * v.shape[1]) * sizeof(float);
    float *x = malloc(bytes ? bytes : 1);
    T_ASSERT(x != NULL);
    *n = v.shape[0];
    if (!bi.on_device) {
        memcpy(x, v.data, bytes);
        return x;
    }
#ifdef GD_WITH_CUDA
    CU(cudaMemcpyAsync(x, v.data, bytes, cudaMemcpyDeviceToHost, (cudaStream_t)stream));
    CU(cudaStreamSynchronize((cudaStream_t)stream));
#endif
    return x;
}

/*
 * Epochs 0 .. epochs - 1 of loaders a and b: the same number of minibatches, each with the same
 * rows of dim float32 features, bit for bit (a failure names what, the epoch and the
 * minibatch). Returns the minibatches; *rows gets the rows compared.
 */
static inline int64_t t_loaders_same_rows(gd_loader_t *a, gd_loader_t *b, int epochs, int64_t dim,
                                          void *stream, const char *what, int64_t *rows) {
    int64_t batches = 0;
    *rows = 0;
    for (int e = 0; e < epochs; e++) {
        T_OK(gd_loader_start_epoch(a, e));
        T_OK(gd_loader_start_epoch(b, e));
        for (;;) {
            gd_batch_t *x = NULL, *y = NULL;
            T_OK(gd_loader_next(a, &x));
            T_OK(gd_loader_next(b, &y));
            T_EQ_INT(x == NULL, y == NULL);
            if (!x) break;
            int64_t nx, ny;
            float *fx = t_batch_x(x, &nx, stream), *fy = t_batch_x(y, &ny, stream);
            T_EQ_INT(nx, ny);
            if (memcmp(fx, fy, (size_t)(nx * dim) * sizeof(float)) != 0)
                T_FAIL_("%s: epoch %d, minibatch %lld: the rows differ", what, e,
                        (long long)batches);
            free(fx);
            free(fy);
            gd_batch_release(x);
            gd_batch_release(y);
            batches++;
            *rows += nx;
        }
    }
    return batches;
}

#endif
