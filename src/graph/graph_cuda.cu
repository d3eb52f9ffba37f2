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

/*
 * Out-degrees on the GPU: one histogram increment per edge, the indices read where GPU kernels
 * read them (pinned over PCIe, or GPU memory). On papers (1.6G edges, 111M nodes) the CPU pass
 * was 4.8 s on 16 cores, memory-bound random atomics; a GPU reads the 6.5 GB of int32 indices
 * at link speed and does its atomics in its own memory. The counters are 32-bit while the edges
 * fit (half the GPU memory: 444 MB on papers), and are widened to int64 a chunk at a time on
 * their way to the host. A bad index is recorded (the lowest position, atomicMin) and reported
 * as the CPU pass reports it.
 */
#define DEGREE_BLOCK 256
#define DEGREE_WIDEN_CHUNK ((int64_t)1 << 24)

template <typename I, typename C>
__global__ void out_degree_kernel(const I *indices, int64_t edges, int64_t n, C *counts,
                                  unsigned long long *bad) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < edges; e += stride) {
        const int64_t u = (int64_t)indices[e];
        if (u < 0 || u >= n) {
            atomicMin(bad, (unsigned long long)e);
            continue;
        }
        atomicAdd(&counts[u], (C)1);
    }
}

template <typename C>
__global__ void widen_kernel(const C *counts, int64_t n, int64_t *out) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = (int64_t)counts[i];
}

/* Enough blocks to fill the GPU a few times over; the loops stride over the rest. */
static unsigned grid_of(int64_t n) {
    const int64_t blocks = (n + DEGREE_BLOCK - 1) / DEGREE_BLOCK;
    return (unsigned)(blocks < 1 ? 1 : blocks > 65536 ? 65536 : blocks);
}

template <typename C>
static gd_status count_degrees(const gd_graph_t *g, C *counts, unsigned long long *bad) {
    gd_status st = GD_OK;
    const int64_t n = g->num_nodes, edges = g->num_edges;
    GD_CUDA_CHECK(cudaMemset(counts, 0, (size_t)(n > 0 ? n : 1) * sizeof(C)));
    if (edges == 0) return GD_OK;
    if (g->indices_dtype == GD_DTYPE_INT32)
        out_degree_kernel<int32_t, C><<<grid_of(edges), DEGREE_BLOCK>>>(
            (const int32_t *)g->d_indices, edges, n, counts, bad);
    else
        out_degree_kernel<int64_t, C><<<grid_of(edges), DEGREE_BLOCK>>>(
            (const int64_t *)g->d_indices, edges, n, counts, bad);
    GD_CUDA_CHECK_LAUNCH();
fail:
    return st;
}

template <typename C>
static gd_status widen_to_host(const C *counts, int64_t n, int64_t *chunk, int64_t *scores) {
    gd_status st = GD_OK;
    for (int64_t lo = 0; lo < n; lo += DEGREE_WIDEN_CHUNK) {
        const int64_t m = n - lo < DEGREE_WIDEN_CHUNK ? n - lo : DEGREE_WIDEN_CHUNK;
        widen_kernel<C><<<grid_of(m), DEGREE_BLOCK>>>(counts + lo, m, chunk);
        GD_CUDA_CHECK_LAUNCH();
        GD_CUDA_CHECK(cudaMemcpy(scores + lo, chunk, (size_t)m * sizeof(int64_t),
                                 cudaMemcpyDeviceToHost));
    }
fail:
    return st;
}

static gd_status cuda_graph_out_degrees(const gd_graph_t *g, int64_t *scores) {
    gd_status st = GD_OK;
    const int64_t n = g->num_nodes, edges = g->num_edges;
    const int wide = edges > (int64_t)UINT32_MAX;
    const size_t counter = wide ? sizeof(unsigned long long) : sizeof(uint32_t);
    const int64_t chunk_n = n < DEGREE_WIDEN_CHUNK ? (n > 0 ? n : 1) : DEGREE_WIDEN_CHUNK;
    void *counts = NULL;
    int64_t *chunk = NULL;
    unsigned long long *d_bad = NULL, bad = ~0ull;
    int prev = -1;
    GD_REQUIRE(g->d_indices || edges == 0, GD_ERR_INTERNAL,
               "out-degrees on the GPU: the graph's indices are not GPU-readable");
    GD_CHECK(check_device(g->device, "counting the out-degrees on the GPU"));
    GD_CHECK(gd__cuda_enter_device(g->device, &prev));
    GD_CUDA_CHECK(cudaMalloc(&counts, (size_t)(n > 0 ? n : 1) * counter));
    GD_CUDA_CHECK(cudaMalloc((void **)&chunk, (size_t)chunk_n * sizeof(int64_t)));
    GD_CUDA_CHECK(cudaMalloc((void **)&d_bad, sizeof *d_bad));
    GD_CUDA_CHECK(cudaMemcpy(d_bad, &bad, sizeof bad, cudaMemcpyHostToDevice));
    if (wide)
        GD_CHECK(count_degrees(g, (unsigned long long *)counts, d_bad));
    else
        GD_CHECK(count_degrees(g, (uint32_t *)counts, d_bad));
    GD_CUDA_CHECK(cudaMemcpy(&bad, d_bad, sizeof bad, cudaMemcpyDeviceToHost));
    if (bad != ~0ull) {
        /* The offending value, read back from where the kernel read it. */
        int64_t u = 0;
        if (g->indices_dtype == GD_DTYPE_INT32) {
            int32_t v = 0;
            GD_CUDA_CHECK(cudaMemcpy(&v, (const int32_t *)g->d_indices + bad, sizeof v,
                                     cudaMemcpyDefault));
            u = v;
        } else {
            GD_CUDA_CHECK(cudaMemcpy(&u, (const int64_t *)g->d_indices + bad, sizeof u,
                                     cudaMemcpyDefault));
        }
        GD_REQUIRE(0, GD_ERR_RANGE,
                   "gd_csc_degree_scores: indices[%lld] = %lld is outside [0, %lld): the graph "
                   "is corrupt",
                   (long long)bad, (long long)u, (long long)n);
    }
    if (wide)
        GD_CHECK(widen_to_host((const unsigned long long *)counts, n, chunk, scores));
    else
        GD_CHECK(widen_to_host((const uint32_t *)counts, n, chunk, scores));
fail:
    if (counts) (void)cudaFree(counts);
    if (chunk) (void)cudaFree(chunk);
    if (d_bad) (void)cudaFree(d_bad);
    if (st != GD_OK) (void)cudaGetLastError();
    gd__cuda_leave_device(g->device, prev);
    return st;
}

extern "C" const gd__graph_backend gd__graph_cuda_backend = {
    cuda_graph_to_device,
    cuda_graph_release,
    cuda_graph_out_degrees,
};
