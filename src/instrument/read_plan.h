/*
 * The link ceiling of the UVA sampler (docs/sampling.md, "The link ceiling"). A read plan lists
 * the reads of the graph that the CUDA sampler makes for a set of minibatches: per frontier node
 * of every hop, its two indptr entries and either its whole list or the entries at its drawn
 * positions, by the sampler's own rule (gd__sample_reads_whole). A replay makes exactly those
 * reads, with the sampler's load shapes, in one kernel with no dependency between them: no
 * indptr round trip before a list, no hop waiting for the previous one, no relabelling, no
 * launches in between. Its time is what the link needs for the sampler's reads, so the sampled
 * edges divided by it bound the SEPS of any sampler that reads this way, and `graphdirect bench
 * sample` prints it next to the samplers (modes uva-link, uva-indices-link).
 *
 * The plan is built on the host from minibatches of the CPU sampler (which the CUDA sampler
 * equals bit for bit). Within a hop the nodes are ordered by id, as the sampler's address-order
 * schedule reads them, the best order a hop can have; hops and minibatches stay in sequence.
 * The replay sums a hash of every entry it reads (keyed by the node's place in the plan), and
 * gd__read_plan_checksum computes the same sum on the CPU, so a replay that skips or misplaces
 * a read fails the comparison.
 *
 * This header is the read plan's face for benchmark code outside the library's modules
 * (bench/bench_sample.c): plain types and the public header's handles only. The code lives in
 * src/sample/read_plan*, built into the gd_instrument static library, never into the installed
 * one; src/sample/read_plan.h adds what the replay kernel and the tests share with the sampler.
 */
#ifndef GD_INSTRUMENT_READ_PLAN_H
#define GD_INSTRUMENT_READ_PLAN_H

#include "graphdirect.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    GD__READ_INDPTR = 0,   /* a node without neighbours taken: its indptr entries only */
    GD__READ_WHOLE = 1,    /* len entries from start, with coalesced 16-byte loads */
    GD__READ_SCATTERED = 2 /* len entries at start + positions[pos ..] */
};

typedef struct {
    int64_t node;  /* whose indptr entries are read (when the replay reads indptr) */
    int64_t start; /* the list's offset in indices */
    int64_t pos;   /* GD__READ_SCATTERED: the first of its positions */
    int32_t len;   /* entries read */
    int16_t kind;  /* GD__READ_* */
    int16_t lanes; /* of the sampler's group for the node's hop (gd__sample_group_lanes) */
} gd__read_item;

typedef struct {
    gd__read_item *items;
    int64_t num_items, cap_items;
    int64_t *positions; /* list positions of the scattered reads */
    int64_t num_positions, cap_positions;
    int64_t num_nodes, num_edges; /* of the graph planned */
    int entry_bytes;              /* of its indices */
    /*
     * Set before the first gd__read_plan_add, for experiments: 0 plans the CUDA sampler's reads;
     * B > 0 reads a list whole when deg * entry size <= B * min(cnt, group lanes) (the
     * sampler's rule with B in place of GD__WHOLE_LIST_BYTES_PER_PICK, without its window), so
     * a replay shows what another rule would cost on the link before the sampler is changed.
     */
    int64_t whole_bytes_per_pick;
    int64_t minibatches, edges;   /* planned, and their sampled edges */
    /* What the reads touch: 32-byte sectors and 128-byte lines of indices (a sector or line
     * counted once per item that reads it), and the indptr loads. */
    int64_t list_sectors, list_lines, indptr_loads;
} gd__read_plan;

/*
 * Add the reads of mb to the plan: mb was sampled (and waited for) by s, a CPU sampler whose
 * graph is in host or pinned memory, as minibatch (epoch, batch) of s's seed.
 */
gd_status gd__read_plan_add(gd__read_plan *p, const gd_sampler_t *s, const gd_minibatch_t *mb,
                            int64_t epoch, int64_t batch);

void gd__read_plan_free(gd__read_plan *p);

/*
 * The replay's checksum computed on the CPU from g's host arrays (g holds the graph the plan was
 * built on; indptr entries are included when read_indptr is set).
 */
uint64_t gd__read_plan_checksum(const gd__read_plan *p, const gd_graph_t *g, int read_indptr);

/*
 * Replay the plan on g's GPU against g's arrays as placed (indices pinned or in GPU memory;
 * indptr read only with read_indptr, from where it lies): once untimed, then `repeats` timed
 * runs. *seconds gets the fastest run, *checksum the sum of the last. A build without CUDA
 * fails with GD_ERR_NO_DEVICE.
 */
gd_status gd__read_plan_replay(const gd__read_plan *p, const gd_graph_t *g, int read_indptr,
                               int repeats, double *seconds, uint64_t *checksum);

/*
 * Entries of g's GPU-readable indices (as GPU kernels address them) before their first
 * 128-byte boundary: where a probe of aligned 128-byte lines starts. 0 when the GPU cannot
 * read g's indices.
 */
int64_t gd__read_plan_line_skip(const gd_graph_t *g);

#ifdef __cplusplus
}
#endif

#endif /* GD_INSTRUMENT_READ_PLAN_H */
