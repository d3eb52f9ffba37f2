/*
 * The SSD tier's dynamic cache run over recorded minibatches (`graphdirect bench cache`, issue
 * 16 item 8): the CPU reference (src/feature/dyncache.h) replays the pipeline as training drives
 * it, so the hit rates of each eviction policy and window depth are the ones the GPU version must
 * reach on the same ids. Part of gd_instrument, like tier_gather.h.
 */
#ifndef GD_INSTRUMENT_CACHE_SIM_H
#define GD_INSTRUMENT_CACHE_SIM_H

#include "graphdirect.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int64_t lookups, hits, fills, evictions, bypasses;
    int64_t protected_max; /* the most rows held by the window at once */
} gd_instrument_cache_result;

/*
 * Replay count minibatches (minibatch b's distinct ids are ids[offsets[b] .. offsets[b + 1]))
 * through a cache of slots rows over [0, num_rows) evicting by policy ("clock", "sieve",
 * "random"): minibatch b is announced when it enters the window (window minibatches ahead; 0:
 * no window), acquired in turn (its fills land at once) and released in_flight minibatches
 * later, as the pipeline's ring of buffer sets does. per_batch_hit (optional, room for count)
 * gets each minibatch's hit rate. GD_ERR_INVALID_ARG for an unknown policy or a minibatch with
 * a repeated id.
 */
gd_status gd_instrument_cache_sim(const int64_t *ids, const int64_t *offsets, int count,
                                  int64_t num_rows, int64_t slots, const char *policy, int window,
                                  int in_flight, uint64_t seed, double *per_batch_hit,
                                  gd_instrument_cache_result *out);

#ifdef __cplusplus
}
#endif

#endif /* GD_INSTRUMENT_CACHE_SIM_H */
