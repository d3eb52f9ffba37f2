/*
 * Where the hot rows live on a host with several GPUs (issue 14, item 4): a pure function of the
 * candidate rows' access probabilities, each GPU's cache capacity and the read costs of the
 * machine (a row from the GPU's own memory, from a peer GPU over NVLink, from pinned host memory
 * over PCIe). It computes one of three placements: `replicate` (every GPU caches the same hottest
 * rows), `partition` (the hottest rows split across the GPUs, each row once) and `auto` (the
 * cost-model algorithm of "Rethinking Graph Data Placement for GNN Training on Multiple GPUs",
 * its Algorithm 1: partly replicated, partly partitioned). The plan turns the result into its rows
 * ("gpu cache (replicated)", "gpu cache (partition of rank g)", "peer gpu"); nothing here touches
 * a GPU, so tests check it on any machine.
 *
 * The candidates are fixed-size rows (feature rows: capacities in rows) or weighted items of
 * their own sizes (neighbour lists: sizes and capacities in bytes). A list cannot be split over
 * two GPUs, so sized candidates are placed whole: each GPU takes them in the order given while
 * they fit (one that does not fit is passed over, as the tier store's slot rule does).
 */
#ifndef GD_TRAIN_PLACEMENT_H
#define GD_TRAIN_PLACEMENT_H

#include "core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One bit per GPU in a row's holder mask; NVLink cliques on one host have at most 16 GPUs. */
#define GD__PLACEMENT_MAX_GPUS 16

/* A candidate's home: cached on no GPU, or on several; otherwise the one GPU (>= 0) holding it. */
#define GD__PLACEMENT_HOST (-2)
#define GD__PLACEMENT_SEVERAL (-1)

typedef enum {
    GD__PLACEMENT_REPLICATE = 0,
    GD__PLACEMENT_PARTITION = 1,
    GD__PLACEMENT_AUTO = 2,
} gd__placement_kind;

/* "replicate", "partition", "auto", indexed by gd__placement_kind (gd__name_index reads them). */
extern const char *const gd__placement_names[3];

/*
 * Read cost of one row, in any unit (relative numbers do; the machine measures them at
 * start-up). The model needs 0 <= local <= peer <= host: a machine whose peers are no faster
 * than its host link passes peer = host, and auto then replicates.
 */
typedef struct {
    double local, peer, host;
} gd__placement_costs;

typedef struct {
    /*
     * The candidate rows, hottest first: prob[i] is the probability that one access (one row a
     * minibatch gathers) reads candidate i; non-increasing, >= 0, summing to at most 1 (the rest
     * is the rows outside the candidates, always read from the host). rows[i] is its row id
     * (distinct ids); NULL means candidate i is row i.
     */
    int64_t num_candidates;
    const double *prob;
    const int64_t *rows;
    /*
     * Sized candidates (NULL: every candidate is one unit, a row): size[i] >= 1 is candidate i's
     * size in the unit of the capacities (bytes for neighbour lists), and prob[i] its share of
     * the read cost. They come best first by prob[i] / size[i] as the caller ranks them; the
     * order is not checked (a ranking by a rounded ratio, as the one-GPU list cache's, is fine),
     * since the placements' guarantees below hold for any order.
     */
    const int64_t *size;
    /* The GPUs (1..GD__PLACEMENT_MAX_GPUS) and their cache capacities in rows (or size units). */
    int num_gpus;
    const int64_t *capacity; /* capacity[g] per GPU; NULL: every GPU holds rows_per_gpu */
    int64_t rows_per_gpu;
    gd__placement_costs costs;
} gd__placement_input;

typedef struct {
    gd__placement_kind kind;
    int num_gpus;
    int64_t num_candidates;
    /* Per GPU g, the row ids it caches: rows[offset[g] .. offset[g + 1]), hottest first. */
    int64_t *rows;
    int64_t offset[GD__PLACEMENT_MAX_GPUS + 1];
    /* Per candidate i: GD__PLACEMENT_HOST, GD__PLACEMENT_SEVERAL or the one GPU holding it. */
    int32_t *home;
    /* Per candidate i: the GPUs holding it, one bit each (a GPU lacking it reads a holder's). */
    uint32_t *holders;
    /* Per GPU g: the probability an access of g finds its row in g's cache, in a peer's cache. */
    double local_prob[GD__PLACEMENT_MAX_GPUS], peer_prob[GD__PLACEMENT_MAX_GPUS];
    /* Per GPU g: the capacity its rows take (rows, or the sum of their sizes). */
    int64_t used[GD__PLACEMENT_MAX_GPUS];
    /* auto's swap threshold (see gd__placement_alpha), and the model's expected read cost of one
     * access, averaged over the GPUs (each GPU makes the same share of the accesses). */
    double alpha;
    double cost;
} gd__placement;

/*
 * Compute a placement into *out (which the caller frees with gd__placement_free, also after a
 * failure). Inputs outside the model (a probability that rises, costs out of order, more than
 * GD__PLACEMENT_MAX_GPUS GPUs, a negative capacity, a size below 1) fail with GD_ERR_INVALID_ARG
 * naming the value. Every GPU's rows fit its capacity and a GPU holds a candidate at most once;
 * partition holds every candidate at most once; auto's expected cost is at most replicate's and
 * partition's. Time O((N + sum of capacities) * G) for rows, O(N * G) for sized candidates; no
 * sort.
 */
gd_status gd__placement_compute(const gd__placement_input *in, gd__placement_kind kind,
                                gd__placement *out);
void gd__placement_free(gd__placement *p);

/*
 * auto's threshold: a replica of candidate d is swapped for the next new candidate n exactly when
 * prob[n] > alpha * prob[d], which is exactly when the swap lowers the model's expected cost.
 */
double gd__placement_alpha(const gd__placement_costs *c, int num_gpus);

/*
 * Access probabilities from scores (access counts of a pre-sampling run, or in-degrees), hottest
 * first: prob[i] = score[i] / total. total is the score of every row, candidates or not, so the
 * probabilities sum to the candidates' share; total <= 0 takes the candidates' sum. Scores must be
 * finite, >= 0 and non-increasing; all zero gives all-zero probabilities.
 */
gd_status gd__placement_probs(const double *score, int64_t n, double total, double *prob);

#ifdef __cplusplus
}
#endif

#endif
