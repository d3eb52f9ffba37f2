/*
 * Streams, events, asynchronous copies and device memory for the C side of the library (the
 * trainer's pipeline in src/train/ is C): thin wrappers over the CUDA runtime that check every
 * call and turn an error into a gd_status naming the call. Events are created with
 * cudaEventBlockingSync so that a host waiting for the GPU sleeps instead of spinning: the
 * zero-copy pipeline promises a small CPU cost, and a spinning wait would burn a core for the
 * whole epoch.
 */
#include "core/cuda.h"

extern "C" gd_status gd__cuda_stream_create(int device, void **stream) {
    gd_status st = GD_OK;
    int prev = -1;
    cudaStream_t s = NULL;
    *stream = NULL;
    GD_CHECK(gd__cuda_enter_device(device, &prev));
    GD_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    *stream = s;
fail:
    gd__cuda_leave_device(device, prev);
    return st;
}

extern "C" void gd__cuda_stream_destroy(void *stream) {
    if (!stream) return;
    if (cudaStreamSynchronize((cudaStream_t)stream) != cudaSuccess) (void)cudaGetLastError();
    if (cudaStreamDestroy((cudaStream_t)stream) != cudaSuccess) (void)cudaGetLastError();
}

extern "C" gd_status gd__cuda_stream_sync(void *stream) {
    gd_status st = GD_OK;
    GD_CUDA_CHECK(cudaStreamSynchronize((cudaStream_t)stream));
fail:
    return st;
}

extern "C" gd_status gd__cuda_event_create(int device, int timing, void **event) {
    gd_status st = GD_OK;
    int prev = -1;
    cudaEvent_t e = NULL;
    *event = NULL;
    GD_CHECK(gd__cuda_enter_device(device, &prev));
    GD_CUDA_CHECK(cudaEventCreateWithFlags(
        &e, cudaEventBlockingSync | (timing ? 0u : (unsigned)cudaEventDisableTiming)));
    *event = e;
fail:
    gd__cuda_leave_device(device, prev);
    return st;
}

extern "C" void gd__cuda_event_destroy(void *event) {
    if (!event) return;
    if (cudaEventSynchronize((cudaEvent_t)event) != cudaSuccess) (void)cudaGetLastError();
    if (cudaEventDestroy((cudaEvent_t)event) != cudaSuccess) (void)cudaGetLastError();
}

extern "C" gd_status gd__cuda_event_record(void *event, void *stream) {
    gd_status st = GD_OK;
    GD_CUDA_CHECK(cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream));
fail:
    return st;
}

extern "C" gd_status gd__cuda_stream_wait(void *stream, void *event) {
    gd_status st = GD_OK;
    GD_CUDA_CHECK(cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)event, 0));
fail:
    return st;
}

extern "C" gd_status gd__cuda_event_sync(void *event) {
    gd_status st = GD_OK;
    GD_CUDA_CHECK(cudaEventSynchronize((cudaEvent_t)event));
fail:
    return st;
}

extern "C" int gd__cuda_event_done(void *event) {
    cudaError_t ce = cudaEventQuery((cudaEvent_t)event);
    if (ce == cudaSuccess) return 1;
    if (ce == cudaErrorNotReady) {
        (void)cudaGetLastError();
        return 0;
    }
    (void)cudaGetLastError();
    gd__error(GD_ERR_CUDA, "cudaEventQuery failed: %s (%s)", cudaGetErrorString(ce),
              cudaGetErrorName(ce));
    return -1;
}

extern "C" gd_status gd__cuda_event_ms(void *start, void *end, float *ms) {
    gd_status st = GD_OK;
    *ms = 0;
    GD_CUDA_CHECK(cudaEventElapsedTime(ms, (cudaEvent_t)start, (cudaEvent_t)end));
fail:
    return st;
}

extern "C" gd_status gd__cuda_memcpy_async(void *dst, const void *src, size_t bytes,
                                           void *stream) {
    gd_status st = GD_OK;
    if (bytes == 0) return GD_OK;
    GD_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, (cudaStream_t)stream));
fail:
    return st;
}

extern "C" gd_status gd__cuda_memset_async(void *dst, int value, size_t bytes, void *stream) {
    gd_status st = GD_OK;
    if (bytes == 0) return GD_OK;
    GD_CUDA_CHECK(cudaMemsetAsync(dst, value, bytes, (cudaStream_t)stream));
fail:
    return st;
}

extern "C" gd_status gd__cuda_mem_info(int device, int64_t *free_bytes, int64_t *total_bytes) {
    gd_status st = GD_OK;
    int prev = -1;
    size_t f = 0, t = 0;
    GD_CHECK(gd__cuda_enter_device(device, &prev));
    GD_CUDA_CHECK(cudaMemGetInfo(&f, &t));
    *free_bytes = (int64_t)f;
    *total_bytes = (int64_t)t;
fail:
    gd__cuda_leave_device(device, prev);
    return st;
}

extern "C" gd_status gd__cuda_malloc(int device, void **p, size_t bytes, const char *what) {
    gd_status st = GD_OK;
    int prev = -1;
    cudaError_t ce;
    *p = NULL;
    GD_CHECK(gd__cuda_enter_device(device, &prev));
    GD_REQUIRE(!gd__fault_hit(GD_FAULT_ALLOC), GD_ERR_NO_MEMORY,
               "cudaMalloc of %zu bytes for %s failed: injected fault", bytes, what);
    ce = cudaMalloc(p, bytes ? bytes : 16);
    if (ce != cudaSuccess) {
        (void)cudaGetLastError();
        *p = NULL;
        st = gd__error(ce == cudaErrorMemoryAllocation ? GD_ERR_NO_MEMORY : GD_ERR_CUDA,
                       "cudaMalloc of %zu bytes for %s on GPU %d failed: %s; lower the batch "
                       "size, the caches or --gpu-mem-budget, or use a mode that keeps less in "
                       "GPU memory (zero-copy)",
                       bytes, what, device, cudaGetErrorString(ce));
    }
fail:
    gd__cuda_leave_device(device, prev);
    return st;
}

extern "C" void gd__cuda_free(void *p) {
    if (p && cudaFree(p) != cudaSuccess) (void)cudaGetLastError();
}

extern "C" void gd__cuda_host_free(void *p) {
    if (p && cudaFreeHost(p) != cudaSuccess) (void)cudaGetLastError();
}
