/*
 * Exact evaluation by layer-wise full-neighbour inference.
 *
 * Training evaluates with sampled neighbours; this computes what the model gives with every
 * in-neighbour of every node, layer by layer over all nodes, as DGL's and PyG's `inference`:
 * h_0 = the features; for each layer l and each chunk [lo, hi) of destination nodes,
 * h_{l+1}[lo:hi) = layer_l(mean of h_l over each node's in-neighbours, h_l[lo:hi)), ReLU between
 * layers; after the last layer the argmax of each node's logits is its prediction.
 *
 * The aggregation reads each neighbour row of h_l where it lives (GPU memory, or pinned host
 * memory read zero-copy by the GPU; host memory on the CPU backend) by global id, so neighbour
 * rows are never copied into a buffer; the dense half of each layer is gd__model_layer_combine
 * over the chunk. Chunks are cut by rows: a chunk of destination nodes [lo, hi) counts hi - lo
 * self rows plus indptr[hi] - indptr[lo] neighbour rows and holds at most max_chunk_rows of
 * them, so a hub never overflows a chunk's buffers; a node whose in-degree alone exceeds the
 * capacity is a chunk of its own whose neighbour list is aggregated in pieces (partial sums
 * carried in the aggregate buffer, in edge order, so the result does not depend on the split).
 * Every buffer is allocated before the layer loop.
 */
#ifndef GD_TRAIN_INFER_H
#define GD_TRAIN_INFER_H

#include "core/internal.h"
#include "nn/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    /*
     * Most rows (self rows + neighbour rows) per chunk, at least 2. 0: chosen from the memory
     * budget on a GPU (up to 2^24), 2^20 on the CPU.
     */
    int64_t max_chunk_rows;
    /*
     * GPU: bytes of device memory the inference may allocate for its tables and chunk buffers
     * (the model's parameters are not counted). 0: half of the free memory at the call. The
     * hidden activations, then the features, are kept in GPU memory while they fit after the
     * chunk buffers; what does not fit stays in pinned host memory that the GPU reads directly.
     */
    int64_t memory_budget;
    int threads; /* CPU threads for host-side work (0: GD_THREADS) */
    /*
     * GPU, optional: the dataset's features as a host tensor already registered for the
     * model's device (e.g. the trainer's zero-copy table), used when the features stay in host
     * memory instead of registering them again (CUDA refuses to register memory twice). NULL:
     * the features are adopted from the dataset and registered here when needed.
     */
    gd_host_tensor_t *features;
    /* Progress: stage "inference", done/total in chunks over all layers; non-zero stops. */
    gd_progress_fn progress;
    void *progress_user;
} gd__infer_options;
#define GD__INFER_OPTIONS_INIT                                                                     \
    { 0, 0, 0, NULL, NULL, NULL }

typedef struct {
    double seconds;          /* the whole call, setup included */
    int64_t chunk_rows;      /* the capacity used (rows per chunk) */
    int64_t chunks;          /* chunks per layer */
    int64_t pieces;          /* aggregation passes per layer (more than chunks if a hub split) */
    int64_t bytes_read;      /* bytes of h_l rows read, neighbour and self rows, all layers */
    int64_t bytes_read_host; /* of which from host memory by the GPU (zero-copy or copies) */
    int64_t device_bytes;    /* device memory the inference allocated (GPU) */
    int features_on_device;  /* 1 if the features were copied into GPU memory */
    int hidden_on_device;    /* hidden tables in GPU memory (of min(L - 1, 2)) */
} gd__infer_stats;

/*
 * The GPU bytes an attention model's inference takes before its chunks: the projection of every
 * node (proj_cols wide, the widest layer's) and its source and destination scores (heads each).
 * The trainer's plan reserves the same.
 */
int64_t gd__infer_attention_bytes(int64_t num_nodes, int64_t proj_cols, int64_t heads);

/*
 * Predictions (the first maximal logit of each node, int32) for every node of ds (pred:
 * num_nodes entries, host memory), computed with the model m on its context's device (CPU or
 * CUDA, float32); m's kind must have a layer-wise form (gd__model_has_layer_combine, or
 * attention passes: gd__model_has_attention), else GD_ERR_UNSUPPORTED. ds needs float32
 * features of the model's input width and the CSC (indptr int64, indices int32 or int64:
 * in-neighbours); the graph is validated first. logits, if
 * non-NULL, receives the last layer's output (num_nodes x classes float32, host memory). stats
 * is optional. o NULL: defaults.
 */
gd_status gd__model_infer(gd__model *m, const gd_dataset_t *ds, const gd__infer_options *o,
                          int32_t *pred, float *logits, gd__infer_stats *stats);

/*
 * Accuracy of pred (num_nodes entries) on a split (GD_ARRAY_TRAIN_IDX, GD_ARRAY_VALID_IDX or
 * GD_ARRAY_TEST_IDX): correct / labelled nodes of the split (label >= 0), NaN if none or if
 * the split is absent. count (optional) gets the labelled nodes.
 */
gd_status gd__infer_accuracy(const gd_dataset_t *ds, gd_array_id split, const int32_t *pred,
                             double *acc, int64_t *count);

/*
 * The aggregation step, exposed for the kernel test. For destination d in [0, num_dst), whose
 * in-edges are the global edge ids [indptr[d], indptr[d+1]), add table rows indices[e -
 * e_begin] (global row ids, cols floats each) for the edges e in [e_begin, e_end) in edge
 * order to agg[d] (num_dst x cols): first = 1 starts from 0, otherwise from agg[d]; last = 1
 * then multiplies by (float)(1 / degree) (0 for a node without in-edges), as the nn mean
 * aggregation does. The CPU version is the reference of the CUDA one.
 */
void gd__infer_agg_cpu(const float *table, int64_t cols, const int64_t *indptr,
                       const void *indices, gd_dtype index_dtype, int64_t num_dst, int64_t e_begin,
                       int64_t e_end, int first, int last, float *agg, int threads);
/* The last layer's predictions: pred[i] = first maximal column of row i of logits. */
void gd__infer_argmax(const float *logits, int64_t rows, int64_t cols, int32_t *pred,
                      int threads);

#ifdef GD_WITH_CUDA
/*
 * The CUDA side (infer_cuda.cu). The aggregation as gd__infer_agg_cpu, queued on stream: table
 * is a device address (GPU memory or mapped pinned host memory); indptr and indices are in
 * device memory. A warp per destination node, lanes across 256 columns at a time, so each
 * column is summed in the CPU's order and the result equals the CPU's.
 */
gd_status gd__infer_cuda_agg(void *stream, const float *table, int64_t cols,
                             const int64_t *indptr, const void *indices, gd_dtype index_dtype,
                             int64_t num_dst, int64_t e_begin, int64_t e_end, int first, int last,
                             float *agg);
#endif

#ifdef __cplusplus
}
#endif

#endif /* GD_TRAIN_INFER_H */
