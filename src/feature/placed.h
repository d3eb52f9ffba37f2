/*
 * A gatherer whose GPU cache holds the rows a placement gives its GPU (issue 14): the rows every
 * GPU of the host caches (replicated) and this GPU's share of the partitioned ones, with the rows
 * its peers cache read from their memory over NVLink. The trainer of a rank computes the
 * placement (train/placement.h), creates the gatherer with it, shares the cache memory with the
 * other ranks (core/peers.h) and installs theirs here, before the first gather. Internal: the
 * public gatherer keeps its hot-row cache.
 */
#ifndef GD_FEATURE_PLACED_H
#define GD_FEATURE_PLACED_H

#include "core/internal.h"
#include "tier.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The rows this GPU caches and, per peer index, the rows the peer caches (tier.h's rules). */
typedef struct {
    gd__tier_cache_rows own;
    const gd__tier_cache_rows *peers;
    int num_peers; /* <= GD__TIER_MAX_PEERS */
} gd__gather_placed;

/*
 * A zerocopy gatherer of t (registered for the context's GPU) whose cache is built from placed
 * by gd__tier_cache_build_placed; options as gd_gatherer_create's, with cache_bytes 0 (the
 * placement gives the budget). Rows only peers cache stay in host memory until
 * gd__gatherer_set_peer installs the peer.
 */
gd_status gd__gatherer_create_placed(gd_host_tensor_t *t, gd_context_t *context,
                                     const gd_gatherer_options *options,
                                     const gd__gather_placed *placed, gd_gatherer_t **out);

/* Slot 0 of g's cache in its GPU's memory (NULL: it caches nothing), and its slots. */
const void *gd__gatherer_cache_mem(const gd_gatherer_t *g, int64_t *units);

/* 1 if row id is in g's cache or in a peer cache g reads (installed or not), else 0. */
int gd__gatherer_in_gpu_memory(const gd_gatherer_t *g, int64_t id);

/* The slots peer q's cache has under the placement (0: g reads nothing from it). */
int64_t gd__gatherer_peer_units(const gd_gatherer_t *g, int peer);

/*
 * Install peer q's cache (base as g's GPU addresses it); the gathers that follow read q's rows
 * there. Before the first gather, once per peer that g reads (gd__tier_store_set_peer).
 */
gd_status gd__gatherer_set_peer(gd_gatherer_t *g, int peer, const void *base, int64_t units);

#ifdef __cplusplus
}
#endif

#endif /* GD_FEATURE_PLACED_H */
