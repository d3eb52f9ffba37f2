/*
 * What the trainer needs of the typed sampler (hetero.c) beyond the public API: the capacities
 * every buffer of a model over its minibatches is sized by.
 */
#ifndef GD_SAMPLE_HETERO_H
#define GD_SAMPLE_HETERO_H

#include "core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The most nodes of type t at layer l, into max_nodes[l * T + t] ((L + 1) * T entries; layer 0
 * the input nodes, layer L the seeds), and the most edges of edge type r's block in layer l,
 * into max_edges[l * R + r] (L * R entries), in training's layer order.
 */
gd_status gd__hetero_sampler_capacity(const gd_hetero_sampler_t *s, int64_t *max_nodes,
                                      int64_t *max_edges);

#ifdef __cplusplus
}
#endif

#endif
