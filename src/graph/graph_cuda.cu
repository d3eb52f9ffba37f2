/*
 * The graph's GPU copies (graph.c decides what goes where, this file makes the copies): indptr
 * and indices copied to GPU memory for a gpu placement, with int64 indices narrowed to int32 on
 * the host on the way when the node count allows it (half the bytes for every sampler read).
 * The hot neighbour-list cache is the tier store's (feature/tier.h). The copies are
 * synchronous: a graph is placed once, before any sampling. Every CUDA call is checked; what a
 * failed call allocated is freed when the graph is destroyed.
 */
#include "core/cuda.h"
#include "internal.h"

#include <cuda_runtime.h>

#include <stdint.h>

/* Host-side conversion chunk when narrowing int64 indices into GPU memory. */
#define CONVERT_CHUNK ((long long)1 << 24)

static gd_status check_device(int device, const char *what) {
    return gd__cuda_check_device(device, what, "use the CPU sampler");
}

static void cuda_graph_release(gd_graph_t *g) {
    int prev = -1;
    if (gd__cuda_enter_device(g->device, &prev) == GD_OK) {
        if (g->dev_indptr) (void)cudaFree(g->dev_indptr);
        if (g->dev_indices) (void)cudaFree(g->dev_indices);
        (void)cudaGetLastError();
        gd__cuda_leave_device(g->device, prev);
    }
    g->dev_indptr = g->dev_indices = NULL;
}

static gd_status cuda_graph_to_device(gd_graph_t *g, const int64_t *indptr, const void *indices,
                                      gd_dtype src_dtype) {
    gd_status st = GD_OK;
    int prev = -1;
    int32_t *conv = NULL;
    GD_CHECK(check_device(g->device, "placing a graph in GPU memory"));
    GD_CHECK(gd__cuda_enter_device(g->device, &prev));
    if (indptr) {
        const size_t bytes = (size_t)(g->num_nodes + 1) * sizeof(int64_t);
        GD_CUDA_CHECK(cudaMalloc(&g->dev_indptr, bytes));
        GD_CUDA_CHECK(cudaMemcpy(g->dev_indptr, indptr, bytes, cudaMemcpyHostToDevice));
        g->d_indptr = (const int64_t *)g->dev_indptr;
        g->device_bytes += (int64_t)bytes;
    }
    if (indices) {
        const size_t es = gd_dtype_size(g->indices_dtype);
        const size_t bytes = (size_t)g->num_edges * es;
        GD_CUDA_CHECK(cudaMalloc(&g->dev_indices, bytes ? bytes : 16));
        if (src_dtype == g->indices_dtype) {
            if (bytes)
                GD_CUDA_CHECK(cudaMemcpy(g->dev_indices, indices, bytes, cudaMemcpyHostToDevice));
        } else {
            /* int64 -> int32, converted on the host a chunk at a time. */
            const int64_t *src = (const int64_t *)indices;
            conv = (int32_t *)gd_malloc((size_t)CONVERT_CHUNK * sizeof(int32_t));
            GD_REQUIRE(conv, GD_ERR_NO_MEMORY,
                       "out of memory for the %lld-entry buffer that narrows the indices",
                       CONVERT_CHUNK);
            for (long long lo = 0; lo < g->num_edges; lo += CONVERT_CHUNK) {
                const long long n =
                    g->num_edges - lo < CONVERT_CHUNK ? g->num_edges - lo : CONVERT_CHUNK;
                for (long long i = 0; i < n; i++) conv[i] = (int32_t)src[lo + i];
                GD_CUDA_CHECK(cudaMemcpy((int32_t *)g->dev_indices + lo, conv,
                                         (size_t)n * sizeof(int32_t), cudaMemcpyHostToDevice));
            }
        }
        g->d_indices = g->dev_indices;
        g->device_bytes += (int64_t)bytes;
    }
    /* Copies from pageable memory may return before they land; samplers use other streams. */
    GD_CUDA_CHECK(cudaDeviceSynchronize());
    gd_free(conv);
    gd__cuda_leave_device(g->device, prev);
    return GD_OK;
fail:
    gd_free(conv);
    cuda_graph_release(g);
    g->d_indptr = NULL;
    g->d_indices = NULL;
    gd__cuda_leave_device(g->device, prev);
    return st;
}

extern "C" const gd__graph_backend gd__graph_cuda_backend = {
    cuda_graph_to_device,
    cuda_graph_release,
};
