/*
 * The replay of a read plan (read_plan.h): the CUDA sampler's reads of the graph for a set of
 * minibatches, with its load shapes (the list reads of list_read.cuh, its group widths), all in
 * flight together. The items are split by the width of the sampler's group for their hop
 * (8, 16 or 32 lanes), keeping their order, and each part is one launch of replay_kernel<G>
 * on a stream of its own, the three forked from and joined to one stream, so that no launch's
 * tail idles the link; nothing else runs between them.
 */
#include "core/cuda.h"
#include "list_read.cuh"
#include "read_plan.h"

#include <cuda_runtime.h>
#include <string.h>

#define BLOCK 256

/*
 * A group of G lanes per item: lane 0 reads the node's indptr entries (when indptr is given),
 * then the group reads the list whole or the lanes read one drawn entry each, as the sample
 * kernel does; every entry read adds gd__read_plan_mix(entry, key) to the sum, the key being the
 * item's index in the plan (plan_index[t]).
 */
template <int G, typename IdxT>
__global__ void __launch_bounds__(BLOCK)
    replay_kernel(const gd__read_item *__restrict__ items, long long n,
                  const long long *__restrict__ plan_index,
                  const long long *__restrict__ positions, const IdxT *__restrict__ indices,
                  long long num_edges, const long long *__restrict__ indptr, int vec,
                  unsigned long long *sum) {
    const int lane = (int)(threadIdx.x % G);
    const long long groups = (long long)gridDim.x * (BLOCK / G);
    unsigned long long acc = 0;
    for (long long t = (long long)blockIdx.x * (BLOCK / G) + threadIdx.x / G; t < n; t += groups) {
        const gd__read_item it = items[t];
        const unsigned long long key = (unsigned long long)plan_index[t];
        if (indptr && lane == 0) {
            long long a, b;
            gd__read_indptr(indptr, it.node, vec, &a, &b);
            acc += gd__read_plan_mix((unsigned long long)a, key) +
                   gd__read_plan_mix((unsigned long long)b, key);
        }
        if (it.kind == GD__READ_WHOLE) {
            gd__read_list<G>(indices, num_edges, it.start, (long long)it.len, lane,
                             [&acc, key](long long, IdxT e) {
                                 acc += gd__read_plan_mix((unsigned long long)(long long)e, key);
                             });
        } else if (it.kind == GD__READ_SCATTERED) {
            for (int j = lane; j < it.len; j += G)
                acc += gd__read_plan_mix(
                    (unsigned long long)(long long)__ldg(indices + it.start + positions[it.pos + j]),
                    key);
        }
    }
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(sum, acc);
}

template <int G>
static void launch(unsigned grid, cudaStream_t stream, int is32, const gd__read_item *items,
                   long long n, const long long *plan_index, const long long *positions,
                   const gd_graph_t *g, const long long *indptr, int vec,
                   unsigned long long *sum) {
    if (is32)
        replay_kernel<G, int><<<grid, BLOCK, 0, stream>>>(
            items, n, plan_index, positions, (const int *)g->d_indices, g->num_edges, indptr,
            vec, sum);
    else
        replay_kernel<G, long long><<<grid, BLOCK, 0, stream>>>(
            items, n, plan_index, positions, (const long long *)g->d_indices, g->num_edges,
            indptr, vec, sum);
}

static const int widths[3] = {8, 16, 32};

/* The index in widths of a group width. */
static int width_index(int lanes) {
    return lanes == 8 ? 0 : lanes == 16 ? 1 : 2;
}

extern "C" gd_status gd__read_plan_replay(const gd__read_plan *p, const gd_graph_t *g,
                                          int read_indptr, int repeats, double *seconds,
                                          uint64_t *checksum) {
    gd_status st = GD_OK;
    int prev = -1, entered = 0, blocks_per_sm = 0, vec = 0;
    gd__read_item *h_items = NULL, *d_items = NULL;
    long long *h_index = NULL, *d_index = NULL, *d_pos = NULL;
    unsigned long long *d_sum = NULL;
    cudaEvent_t ev[2] = {0, 0}, joined[3] = {0, 0, 0};
    cudaStream_t stream = 0, side[3] = {0, 0, 0};
    long long count[3] = {0, 0, 0}, offset[3];
    const long long n = p->num_items;
    const long long *const indptr = read_indptr ? (const long long *)g->d_indptr : NULL;
    const int is32 = g->indices_dtype == GD_DTYPE_INT32;
    float best = -1;
    GD_REQUIRE(g->d_indices && (!read_indptr || g->d_indptr) && !g->d_cache, GD_ERR_INVALID_ARG,
               "gd__read_plan_replay: the graph's arrays must be readable by the GPU (pinned or "
               "GPU memory), without a list cache");
    GD_REQUIRE(g->num_nodes == p->num_nodes && g->num_edges == p->num_edges &&
                   (int)gd_dtype_size(g->indices_dtype) == p->entry_bytes,
               GD_ERR_INVALID_ARG, "gd__read_plan_replay: the plan was made for another graph");
    GD_REQUIRE(repeats >= 1, GD_ERR_INVALID_ARG, "gd__read_plan_replay: repeats must be >= 1");
    GD_CHECK(gd__cuda_enter_device(g->device, &prev));
    entered = 1;
    /* Split the items by group width, keeping their order. */
    for (long long i = 0; i < n; i++) count[width_index(p->items[i].lanes)]++;
    offset[0] = 0;
    offset[1] = count[0];
    offset[2] = count[0] + count[1];
    h_items = (gd__read_item *)gd_malloc((size_t)(n ? n : 1) * sizeof *h_items);
    h_index = (long long *)gd_malloc((size_t)(n ? n : 1) * sizeof *h_index);
    GD_REQUIRE(h_items && h_index, GD_ERR_NO_MEMORY, "out of memory for the replay's %lld items",
               n);
    {
        long long at[3] = {offset[0], offset[1], offset[2]};
        for (long long i = 0; i < n; i++) {
            const int w = width_index(p->items[i].lanes);
            h_items[at[w]] = p->items[i];
            h_index[at[w]++] = i;
        }
    }
    GD_CUDA_CHECK(cudaMalloc((void **)&d_items, (size_t)(n ? n : 1) * sizeof *d_items));
    GD_CUDA_CHECK(cudaMalloc((void **)&d_index, (size_t)(n ? n : 1) * sizeof *d_index));
    GD_CUDA_CHECK(cudaMalloc((void **)&d_pos, (size_t)(p->num_positions ? p->num_positions : 1) *
                                                  sizeof *d_pos));
    GD_CUDA_CHECK(cudaMalloc((void **)&d_sum, sizeof *d_sum));
    GD_CUDA_CHECK(
        cudaMemcpy(d_items, h_items, (size_t)n * sizeof *d_items, cudaMemcpyHostToDevice));
    GD_CUDA_CHECK(
        cudaMemcpy(d_index, h_index, (size_t)n * sizeof *d_index, cudaMemcpyHostToDevice));
    if (p->num_positions)
        GD_CUDA_CHECK(cudaMemcpy(d_pos, p->positions, (size_t)p->num_positions * sizeof *d_pos,
                                 cudaMemcpyHostToDevice));
    /* The copies (legacy stream, pageable memory) land before the replay's streams read them. */
    GD_CUDA_CHECK(cudaDeviceSynchronize());
    GD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    GD_CUDA_CHECK(cudaEventCreate(&ev[0]));
    GD_CUDA_CHECK(cudaEventCreate(&ev[1]));
    for (int w = 0; w < 3; w++) {
        GD_CUDA_CHECK(cudaStreamCreateWithFlags(&side[w], cudaStreamNonBlocking));
        GD_CUDA_CHECK(cudaEventCreateWithFlags(&joined[w], cudaEventDisableTiming));
    }
    {
        int sms = 0;
        GD_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, g->device));
        GD_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &blocks_per_sm, replay_kernel<8, int>, BLOCK, 0));
        blocks_per_sm = sms * (blocks_per_sm > 0 ? blocks_per_sm : 1);
    }
    /* 16-byte loads of indptr need its address 16-byte aligned. */
    vec = ((uintptr_t)g->d_indptr & 15) == 0;
    for (int r = 0; r <= repeats; r++) {
        float ms = 0;
        GD_CUDA_CHECK(cudaMemsetAsync(d_sum, 0, sizeof *d_sum, stream));
        GD_CUDA_CHECK(cudaEventRecord(ev[0], stream));
        for (int w = 0; w < 3; w++) {
            if (!count[w]) continue;
            const long long groups_needed = count[w] * widths[w];
            long long grid = (groups_needed + BLOCK - 1) / BLOCK;
            if (grid > blocks_per_sm) grid = blocks_per_sm;
            const gd__read_item *it = d_items + offset[w];
            const long long *ix = d_index + offset[w];
            GD_CUDA_CHECK(cudaStreamWaitEvent(side[w], ev[0], 0));
            if (w == 0)
                launch<8>((unsigned)grid, side[w], is32, it, count[w], ix, d_pos, g, indptr, vec,
                          d_sum);
            else if (w == 1)
                launch<16>((unsigned)grid, side[w], is32, it, count[w], ix, d_pos, g, indptr, vec,
                           d_sum);
            else
                launch<32>((unsigned)grid, side[w], is32, it, count[w], ix, d_pos, g, indptr, vec,
                           d_sum);
            GD_CUDA_CHECK_LAUNCH();
            GD_CUDA_CHECK(cudaEventRecord(joined[w], side[w]));
            GD_CUDA_CHECK(cudaStreamWaitEvent(stream, joined[w], 0));
        }
        GD_CUDA_CHECK(cudaEventRecord(ev[1], stream));
        GD_CUDA_CHECK(cudaEventSynchronize(ev[1]));
        GD_CUDA_CHECK(cudaEventElapsedTime(&ms, ev[0], ev[1]));
        if (r > 0 && (best < 0 || ms < best)) best = ms;
    }
    {
        unsigned long long sum = 0;
        GD_CUDA_CHECK(cudaMemcpy(&sum, d_sum, sizeof sum, cudaMemcpyDeviceToHost));
        *checksum = sum;
    }
    *seconds = best / 1e3;
fail:
    if (ev[0]) (void)cudaEventDestroy(ev[0]);
    if (ev[1]) (void)cudaEventDestroy(ev[1]);
    for (int w = 0; w < 3; w++) {
        if (joined[w]) (void)cudaEventDestroy(joined[w]);
        if (side[w]) (void)cudaStreamDestroy(side[w]);
    }
    if (stream) (void)cudaStreamDestroy(stream);
    if (d_items) (void)cudaFree(d_items);
    if (d_index) (void)cudaFree(d_index);
    if (d_pos) (void)cudaFree(d_pos);
    if (d_sum) (void)cudaFree(d_sum);
    gd_free(h_items);
    gd_free(h_index);
    if (entered) gd__cuda_leave_device(g->device, prev);
    return st;
}
