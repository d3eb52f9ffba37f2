/*
 * The graph attention ops (issue 17, item 1: GAT with the semantics of PyG's GATConv), as CPU
 * references over float32 and float64: the float64 instance is the oracle of the
 * finite-difference checks (tests/test_gat_ops.c), the float32 one the CPU training path and,
 * once the CUDA kernels exist, their oracle. One layer of H heads of F features, on a sampled
 * block (CSC over the destinations; the destinations are the first num_dst sources):
 *
 *   h            = x W                                  (a GEMM, the caller's: num_src x H*F)
 *   ssrc[v, k]   = sum_f h[v, kF + f] a_src[k, f]      gd__gat_node_scores
 *   sdst[d, k]   = sum_f h[d, kF + f] a_dst[k, f]
 *   z(e, k)      = LeakyReLU(ssrc[src(e), k] + sdst[d, k], slope)  for the edges of d and its
 *                  self loop (PyG adds one per node; the block's own edges are kept as sampled)
 *   alpha(., k)  = softmax of z over each destination's edges       gd__gat_edge_softmax
 *   out[d, kF+f] = sum_e alpha(e, k) h[src(e), kF + f]            gd__gat_aggregate
 *   mean         = the heads averaged (the last layer)             gd__gat_head_mean
 *
 * alpha has num_edges + num_dst rows of H: edge e at row e, destination d's self loop at row
 * num_edges + d. Attention dropout is the nn module's dropout applied to alpha between the
 * softmax and the aggregation. Each op has its backward; backwards accumulate into the
 * gradients they produce (dh, dssrc, dsdst, da_src, da_dst) except dalpha, which they write.
 * Reductions are carried in double in both instances.
 */
#ifndef GD_NN_GAT_H
#define GD_NN_GAT_H

#include "nn/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

gd_status gd__gat_node_scores_cpu(const gd__nn_tensor *h, const gd__nn_tensor *a_src,
                                  const gd__nn_tensor *a_dst, int64_t num_dst, gd__nn_tensor *ssrc,
                                  gd__nn_tensor *sdst);
gd_status gd__gat_node_scores_backward_cpu(const gd__nn_tensor *h, const gd__nn_tensor *a_src,
                                           const gd__nn_tensor *a_dst, int64_t num_dst,
                                           const gd__nn_tensor *dssrc, const gd__nn_tensor *dsdst,
                                           gd__nn_tensor *dh, gd__nn_tensor *da_src,
                                           gd__nn_tensor *da_dst);

gd_status gd__gat_edge_softmax_cpu(const gd_block *blk, const gd__nn_tensor *ssrc,
                                   const gd__nn_tensor *sdst, double slope, gd__nn_tensor *alpha);
gd_status gd__gat_edge_softmax_backward_cpu(const gd_block *blk, const gd__nn_tensor *ssrc,
                                            const gd__nn_tensor *sdst, double slope,
                                            const gd__nn_tensor *alpha, const gd__nn_tensor *dalpha,
                                            gd__nn_tensor *dssrc, gd__nn_tensor *dsdst);

gd_status gd__gat_aggregate_cpu(const gd_block *blk, const gd__nn_tensor *alpha,
                                const gd__nn_tensor *h, gd__nn_tensor *out);
/*
 * The forward softmax and aggregation where destination d's own row (its self loop) is source
 * row d + self_offset instead of d: exact inference's chunks [lo, hi) over the whole projected
 * table (self_offset lo, the block's indices global ids). 0 is the block form above.
 */
gd_status gd__gat_edge_softmax_at_cpu(const gd_block *blk, int64_t self_offset,
                                      const gd__nn_tensor *ssrc, const gd__nn_tensor *sdst,
                                      double slope, gd__nn_tensor *alpha);
gd_status gd__gat_aggregate_at_cpu(const gd_block *blk, int64_t self_offset,
                                   const gd__nn_tensor *alpha, const gd__nn_tensor *h,
                                   gd__nn_tensor *out);
gd_status gd__gat_aggregate_backward_cpu(const gd_block *blk, const gd__nn_tensor *alpha,
                                         const gd__nn_tensor *h, const gd__nn_tensor *dout,
                                         gd__nn_tensor *dalpha, gd__nn_tensor *dh);

gd_status gd__gat_head_mean_cpu(const gd__nn_tensor *x, int64_t heads, gd__nn_tensor *out);
gd_status gd__gat_head_mean_backward_cpu(const gd__nn_tensor *dout, int64_t heads,
                                         gd__nn_tensor *dx);

/*
 * The attention dropout's row keys: the dropout of alpha keyed by position would depend on how
 * the minibatch was cut (data-parallel ranks hold other rows), so each row is keyed by its edge:
 * keys[e] = gd__gat_edge_key(node_ids[d], node_ids[indices[e]]) for the block's edges, and
 * keys[E + d] = gd__gat_edge_key(node_ids[d], node_ids[d]) for the self loops. node_ids: the
 * block's sources' global ids; keys: E + num_dst int64, in the op's memory (host or the GPU).
 */
GD_HOST_DEVICE int64_t gd__gat_edge_key(int64_t dst, int64_t src) {
    uint64_t z = (uint64_t)dst * 0x9E3779B97F4A7C15ull ^ ((uint64_t)src + 0x632BE59BD9B4E019ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (int64_t)((z ^ (z >> 31)) >> 1);
}
gd_status gd__gat_edge_keys_cpu(const gd_block *blk, const int64_t *node_ids, int64_t *keys);

/*
 * Bipartite relations (R-GAT, rgat.h): PyG's GATConv given a (source, destination) pair of
 * inputs and add_self_loops=False, one relation of a heterogeneous layer. The destinations are
 * a node set of their own (not a prefix of the sources; there may be more of them than
 * sources), with scores of their own: ssrc (num_src x H) from the sources' projection and sdst
 * (num_dst x H) from the destinations' (each from gd__gat_node_scores with num_dst 0, the
 * destination scores by passing a_dst as its a_src). There is no self loop: alpha has
 * num_edges rows of H, the softmax runs over a destination's block edges alone, and a
 * destination without edges has no weights and a zero sum (PyG's scatter of no messages).
 *
 *   alpha(e, k) = softmax over d's edges of LeakyReLU(ssrc[src(e), k] + sdst[d, k], slope)
 *   out[d, kF + f] (+)= sum_e alpha(e, k) h[src(e), kF + f]      (h: the sources' projection)
 *
 * bip_aggregate writes out, or adds to it with accumulate (the relations into one node type
 * share their sum). The backwards accumulate into dh, dssrc and dsdst and write dalpha, as the
 * block forms do. bip_edge_keys: keys[e] = gd__gat_edge_key(dst_ids[d], src_ids[indices[e]]),
 * the ids of the two node sets (global ids, distinct across node types), E int64.
 */
gd_status gd__gat_bip_softmax_cpu(const gd_block *blk, const gd__nn_tensor *ssrc,
                                  const gd__nn_tensor *sdst, double slope, gd__nn_tensor *alpha);
gd_status gd__gat_bip_softmax_backward_cpu(const gd_block *blk, const gd__nn_tensor *ssrc,
                                           const gd__nn_tensor *sdst, double slope,
                                           const gd__nn_tensor *alpha, const gd__nn_tensor *dalpha,
                                           gd__nn_tensor *dssrc, gd__nn_tensor *dsdst);
gd_status gd__gat_bip_aggregate_cpu(const gd_block *blk, const gd__nn_tensor *alpha,
                                    const gd__nn_tensor *h, int accumulate, gd__nn_tensor *out);
gd_status gd__gat_bip_aggregate_backward_cpu(const gd_block *blk, const gd__nn_tensor *alpha,
                                             const gd__nn_tensor *h, const gd__nn_tensor *dout,
                                             gd__nn_tensor *dalpha, gd__nn_tensor *dh);
gd_status gd__gat_bip_edge_keys_cpu(const gd_block *blk, const int64_t *src_ids,
                                    const int64_t *dst_ids, int64_t *keys);

/*
 * The argument checks of each op, shared by the CPU entry points and the CUDA ones: one float
 * dtype, every tensor on `device` (GD__NN_HOST: host memory), the shapes above, and, for a
 * block in host memory, its edges within the sources.
 */
gd_status gd__gat_node_scores_check(int device, const gd__nn_tensor *h, const gd__nn_tensor *a_src,
                                    const gd__nn_tensor *a_dst, int64_t num_dst,
                                    gd__nn_tensor *ssrc, gd__nn_tensor *sdst);
gd_status gd__gat_node_scores_backward_check(int device, const gd__nn_tensor *h,
                                             const gd__nn_tensor *a_src, const gd__nn_tensor *a_dst,
                                             int64_t num_dst, const gd__nn_tensor *dssrc,
                                             const gd__nn_tensor *dsdst, gd__nn_tensor *dh,
                                             gd__nn_tensor *da_src, gd__nn_tensor *da_dst);
gd_status gd__gat_edge_softmax_check(int device, const gd_block *blk, int64_t self_offset,
                                     const gd__nn_tensor *ssrc, const gd__nn_tensor *sdst,
                                     double slope, gd__nn_tensor *alpha);
gd_status gd__gat_edge_softmax_backward_check(int device, const gd_block *blk,
                                              const gd__nn_tensor *ssrc, const gd__nn_tensor *sdst,
                                              double slope, const gd__nn_tensor *alpha,
                                              const gd__nn_tensor *dalpha, gd__nn_tensor *dssrc,
                                              gd__nn_tensor *dsdst);
gd_status gd__gat_aggregate_check(int device, const gd_block *blk, int64_t self_offset,
                                  const gd__nn_tensor *alpha, const gd__nn_tensor *h,
                                  gd__nn_tensor *out);
gd_status gd__gat_aggregate_backward_check(int device, const gd_block *blk,
                                           const gd__nn_tensor *alpha, const gd__nn_tensor *h,
                                           const gd__nn_tensor *dout, gd__nn_tensor *dalpha,
                                           gd__nn_tensor *dh);
gd_status gd__gat_bip_softmax_check(int device, const gd_block *blk, const gd__nn_tensor *ssrc,
                                    const gd__nn_tensor *sdst, double slope, gd__nn_tensor *alpha);
gd_status gd__gat_bip_softmax_backward_check(int device, const gd_block *blk,
                                             const gd__nn_tensor *ssrc, const gd__nn_tensor *sdst,
                                             double slope, const gd__nn_tensor *alpha,
                                             const gd__nn_tensor *dalpha, gd__nn_tensor *dssrc,
                                             gd__nn_tensor *dsdst);
gd_status gd__gat_bip_aggregate_check(int device, const gd_block *blk, const gd__nn_tensor *alpha,
                                      const gd__nn_tensor *h, gd__nn_tensor *out);
gd_status gd__gat_bip_aggregate_backward_check(int device, const gd_block *blk,
                                               const gd__nn_tensor *alpha, const gd__nn_tensor *h,
                                               const gd__nn_tensor *dout, gd__nn_tensor *dalpha,
                                               gd__nn_tensor *dh);
gd_status gd__gat_head_mean_check(int device, const gd__nn_tensor *x, int64_t heads,
                                  gd__nn_tensor *out);
gd_status gd__gat_head_mean_backward_check(int device, const gd__nn_tensor *dout, int64_t heads,
                                           gd__nn_tensor *dx);

#ifdef GD_WITH_CUDA
/*
 * The same ops on a GPU, float32, queued on the CUDA nn context's stream (ctx from
 * gd__nn_cuda_ctx_create; every tensor and the block's arrays in its device's memory). The
 * backwards scatter with atomic adds, so their sums are not bit-reproducible; the forwards sum
 * in the CPU's order. tests/test_gat_cuda.c compares them with the CPU reference.
 */
gd_status gd__gat_node_scores_cuda(const gd__nn_ctx *ctx, const gd__nn_tensor *h,
                                   const gd__nn_tensor *a_src, const gd__nn_tensor *a_dst,
                                   int64_t num_dst, gd__nn_tensor *ssrc, gd__nn_tensor *sdst);
gd_status gd__gat_node_scores_backward_cuda(const gd__nn_ctx *ctx, const gd__nn_tensor *h,
                                            const gd__nn_tensor *a_src, const gd__nn_tensor *a_dst,
                                            int64_t num_dst, const gd__nn_tensor *dssrc,
                                            const gd__nn_tensor *dsdst, gd__nn_tensor *dh,
                                            gd__nn_tensor *da_src, gd__nn_tensor *da_dst);
gd_status gd__gat_edge_softmax_cuda(const gd__nn_ctx *ctx, const gd_block *blk,
                                    const gd__nn_tensor *ssrc, const gd__nn_tensor *sdst,
                                    double slope, gd__nn_tensor *alpha);
gd_status gd__gat_edge_softmax_backward_cuda(const gd__nn_ctx *ctx, const gd_block *blk,
                                             const gd__nn_tensor *ssrc, const gd__nn_tensor *sdst,
                                             double slope, const gd__nn_tensor *alpha,
                                             const gd__nn_tensor *dalpha, gd__nn_tensor *dssrc,
                                             gd__nn_tensor *dsdst);
gd_status gd__gat_aggregate_cuda(const gd__nn_ctx *ctx, const gd_block *blk,
                                 const gd__nn_tensor *alpha, const gd__nn_tensor *h,
                                 gd__nn_tensor *out);
gd_status gd__gat_edge_softmax_at_cuda(const gd__nn_ctx *ctx, const gd_block *blk,
                                       int64_t self_offset, const gd__nn_tensor *ssrc,
                                       const gd__nn_tensor *sdst, double slope,
                                       gd__nn_tensor *alpha);
gd_status gd__gat_aggregate_at_cuda(const gd__nn_ctx *ctx, const gd_block *blk, int64_t self_offset,
                                    const gd__nn_tensor *alpha, const gd__nn_tensor *h,
                                    gd__nn_tensor *out);
gd_status gd__gat_aggregate_backward_cuda(const gd__nn_ctx *ctx, const gd_block *blk,
                                          const gd__nn_tensor *alpha, const gd__nn_tensor *h,
                                          const gd__nn_tensor *dout, gd__nn_tensor *dalpha,
                                          gd__nn_tensor *dh);
gd_status gd__gat_head_mean_cuda(const gd__nn_ctx *ctx, const gd__nn_tensor *x, int64_t heads,
                                 gd__nn_tensor *out);
gd_status gd__gat_edge_keys_cuda(const gd__nn_ctx *ctx, const gd_block *blk,
                                 const int64_t *node_ids, int64_t *keys);
gd_status gd__gat_head_mean_backward_cuda(const gd__nn_ctx *ctx, const gd__nn_tensor *dout,
                                          int64_t heads, gd__nn_tensor *dx);
gd_status gd__gat_bip_softmax_cuda(const gd__nn_ctx *ctx, const gd_block *blk,
                                   const gd__nn_tensor *ssrc, const gd__nn_tensor *sdst,
                                   double slope, gd__nn_tensor *alpha);
gd_status gd__gat_bip_softmax_backward_cuda(const gd__nn_ctx *ctx, const gd_block *blk,
                                            const gd__nn_tensor *ssrc, const gd__nn_tensor *sdst,
                                            double slope, const gd__nn_tensor *alpha,
                                            const gd__nn_tensor *dalpha, gd__nn_tensor *dssrc,
                                            gd__nn_tensor *dsdst);
gd_status gd__gat_bip_aggregate_cuda(const gd__nn_ctx *ctx, const gd_block *blk,
                                     const gd__nn_tensor *alpha, const gd__nn_tensor *h,
                                     int accumulate, gd__nn_tensor *out);
gd_status gd__gat_bip_aggregate_backward_cuda(const gd__nn_ctx *ctx, const gd_block *blk,
                                              const gd__nn_tensor *alpha, const gd__nn_tensor *h,
                                              const gd__nn_tensor *dout, gd__nn_tensor *dalpha,
                                              gd__nn_tensor *dh);
gd_status gd__gat_bip_edge_keys_cuda(const gd__nn_ctx *ctx, const gd_block *blk,
                                     const int64_t *src_ids, const int64_t *dst_ids,
                                     int64_t *keys);
#endif

/*
 * An op of this family on ctx's backend: GAT_OP(edge_softmax, ctx, args...) calls the _cpu entry
 * (without ctx) for the CPU backend and the _cuda one (with ctx) otherwise. The GAT and R-GAT
 * models dispatch through it.
 */
#ifdef GD_WITH_CUDA
#define GAT_OP(name, ctx, ...)                                                                     \
    ((ctx)->be == &gd__nn_cpu_backend ? gd__gat_##name##_cpu(__VA_ARGS__)                          \
                                      : gd__gat_##name##_cuda(ctx, __VA_ARGS__))
#else
#define GAT_OP(name, ctx, ...) gd__gat_##name##_cpu(__VA_ARGS__)
#endif

#ifdef __cplusplus
}
#endif

#endif /* GD_NN_GAT_H */
