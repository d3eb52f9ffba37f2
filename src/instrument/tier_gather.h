/*
 * The gather bandwidth of each tier the zero-copy gather reads (`graphdirect bench scale`, issue
 * 14): random rows cached in the GPU's own memory, cached by a peer GPU and read over NVLink
 * (peer access, as the `partition` placement reads them), and in pinned host memory. The same
 * kernel and launch as training's gathers, through placed caches that hold the whole table on
 * one GPU. Part of gd_instrument, like comm.h.
 */
#ifndef GD_INSTRUMENT_TIER_GATHER_H
#define GD_INSTRUMENT_TIER_GATHER_H

#include "graphdirect.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    double local_gbs, peer_gbs, host_gbs; /* useful bytes (ids x row bytes) per second */
} gd_instrument_tier_gbs;

/*
 * Gather n random rows (of a table of rows x row_bytes, random content) on GPU device, iters
 * timed times after a warm-up, from each tier; the peer is GPU peer (peer == device: the GPU's
 * own memory through the peer path). GD_ERR_CUDA naming both GPUs without peer access.
 */
gd_status gd_instrument_tier_gather(int device, int peer, int64_t rows, int64_t row_bytes,
                                    int64_t n, int iters, gd_instrument_tier_gbs *out);

#ifdef __cplusplus
}
#endif

#endif /* GD_INSTRUMENT_TIER_GATHER_H */
