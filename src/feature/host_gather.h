/*
 * How the host-resident rows of a zero-copy gather reach the GPU (issue 16; docs/feature_store.md,
 * "Host rows: zero-copy loads, CPU gather + DMA, or both"). A zero-copy gatherer reads the rows its GPU
 * cache does not hold straight from the pinned table, with the aligned gather kernel. Over a
 * table of tens of GiB those random reads are bound by the GPU's address translation (on the
 * lent H100 VM: 8.6 GB/s over a 28 GiB table, 47.8 GB/s over 1 GiB), while CPU threads copying
 * the same rows into pinned staging, then one DMA, reached 21.4 GB/s. So a zero-copy gatherer
 * created with the host_gather option can serve those rows the other way, the flow of the SSD
 * tier with host memory in place of the file:
 *   1. the GPU lists the positions whose row the location map puts in host memory (in the order
 *      the kernel reads them: sorted when the gatherer sorts its ids) and writes their rows to
 *      pinned memory, with each position's staging slot in GPU memory;
 *   2. the host waits for that list only, and CPU threads copy those rows from the table into
 *      pinned staging, slot after slot; copies move the staging to GPU memory, each 4 MiB
 *      chunk as soon as it is full, so that the DMA overlaps the CPU's copying;
 *   3. the gather kernel reads every other row where the map says, and a listed row from its
 *      staging slot.
 * The host never walks the minibatch's ids: it reads the GPU's list. The ids of a minibatch are
 * distinct (its input nodes), so the list has no duplicates to remove.
 *
 * "split" runs both engines at once, since neither alone fills the link (8.6 + 21.4 GB/s is far
 * below the 54 GB/s of a DMA): of the m host rows the GPU counts, the last s = share x m in list
 * order (the highest ids where the gatherer sorts) go to the CPU threads as above, and the first
 * m - s stay with zero-copy loads. The kernel runs twice: a first pass, queued right after the
 * list and before the host starts copying, writes every row but the staged ones (GPU cache,
 * peers and the zero-copy host rows), so its PCIe reads overlap the CPU's copying; the DMAs run
 * on a stream of their own, and a second pass, ordered after them by an event, writes the
 * staged rows from GPU memory. With the first m - s rows in list order, the zero-copy loads of
 * a sorted minibatch cover the low part of the table only, fewer pages for the GPU to
 * translate. The share comes from the start-up probe (cpu / (cpu + zero-copy) of the two
 * rates, so both engines finish together) unless "split=F" or GD_HOST_SPLIT names it.
 *
 * Every way writes the same bytes to the same output rows. This header is plain C: the CPU
 * reference of the list and the rules of auto's trial live in host_gather.c, the GPU side in
 * feature_cuda.cu.
 */
#ifndef GD_FEATURE_HOST_GATHER_H
#define GD_FEATURE_HOST_GATHER_H

#include "core/internal.h"
#include "core/philox.h" /* GD_HOST_DEVICE */

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    GD__HOST_GATHER_ZEROCOPY = 0, /* "zero-copy": the gather kernel reads the pinned table */
    GD__HOST_GATHER_CPU = 1,      /* "cpu": CPU threads into pinned staging, one DMA */
    GD__HOST_GATHER_AUTO = 2,     /* "auto": the fastest of a trial in the run (below) */
    GD__HOST_GATHER_SPLIT = 3,    /* "split": a share by the CPU, the rest zero-copy, at once */
    GD__HOST_GATHER_COUNT = 4
} gd__host_gather;

/* "zero-copy", "cpu", "auto", "split"; NULL outside the enum. */
const char *gd__host_gather_name(gd__host_gather h);
/*
 * name NULL: zero-copy; "split=F" (F in [0, 1], the CPU's fraction of the host rows): split with
 * *split = F; any other name of the enum: that choice with *split = -1 (split: from GD_HOST_SPLIT
 * or the probe). GD_ERR_INVALID_ARG naming the choices for anything else. split may be NULL.
 */
gd_status gd__host_gather_parse(const char *name, gd__host_gather *out, double *split);
/*
 * GD_HOST_SPLIT: *f = its fraction in [0, 1], or -1 for "auto" (the default: the probe's rates
 * decide). GD_ERR_INVALID_ARG for anything else.
 */
gd_status gd__host_split_param(double *f);

/*
 * The CPU's share of the host rows in fixed point, so that the GPU and its CPU reference cut a
 * list at the same row: share in [0, GD__HOST_SHARE_ONE], s = (m x share + ONE / 2) / ONE rows.
 */
#define GD__HOST_SHARE_BITS 16
#define GD__HOST_SHARE_ONE (1 << GD__HOST_SHARE_BITS)
/* The share of a fraction (clamped to [0, 1]; NaN: 0). */
int gd__host_share(double f);
/* How many of m listed host rows a share gives the CPU. */
GD_HOST_DEVICE int64_t gd__host_share_rows(int64_t m, int share) {
    return (m * (int64_t)share + GD__HOST_SHARE_ONE / 2) >> GD__HOST_SHARE_BITS;
}

/*
 * The CPU reference of step 1: for r in [0, n), stage_slot[r] = j if ids[r] is a row of the
 * table ([0, table_rows)) whose location loc[ids[r]] is in the host tier (loc NULL: every row
 * is), j counting those positions in order from 0, else -1; rows[j] = ids[r]. Returns their
 * number m. stage_slot and rows may be NULL (count only).
 */
int64_t gd__host_rows_list_cpu(const int64_t *loc, int64_t table_rows, const int64_t *ids,
                               int64_t n, int64_t *stage_slot, int64_t *rows);
/*
 * The CPU reference of split's list: the m host positions as above, ranked j = 0..m-1 in order;
 * with s = gd__host_share_rows(m, share), the last s of them are staged, stage_slot[r] =
 * j - (m - s), rows[j - (m - s)] = ids[r]; every other position gets -1 (the first m - s host
 * rows are read zero-copy). Returns s. share GD__HOST_SHARE_ONE is gd__host_rows_list_cpu.
 */
int64_t gd__host_rows_split_cpu(const int64_t *loc, int64_t table_rows, const int64_t *ids,
                                int64_t n, int share, int64_t *stage_slot, int64_t *rows);

/*
 * split's CPU fraction from the two rates, so that both engines finish together: cpu / (cpu +
 * zero-copy); 0.5 when either is unknown (<= 0; then there were no host rows to probe).
 */
double gd__host_split_fraction(double zerocopy_rate, double cpu_rate);

/*
 * auto's trial: the way is chosen in the epoch itself, where the start-up probe's isolated calls
 * misjudged papers on the H100 (it took split at 0.41, 2.8x the all-gpu epoch, where split at
 * 0.95 ran 1.9x: the epoch's sampling and training share the link and the GPU with the
 * gather). During the first training minibatches (every minibatch of a loader) each candidate
 * way serves `runs` gathers in turn, CPU fractions 1 (cpu), 0.95, 0.9, 0.8, 0.6, 0.4, 0.2 and 0
 * (zero-copy loads); the first GD__HOST_TRIAL_SETTLE of them are not timed (the pipeline still
 * holds minibatches of the way before), and the time from each later gather to the next is
 * that way's period. The way of the shortest median period is kept from then on. The
 * minibatches are the same every way; only their pace differs.
 */
#define GD__HOST_TRIAL_WAYS 8
#define GD__HOST_TRIAL_SETTLE 4
#define GD__HOST_TRIAL_MAX_RUNS 1000
extern const double gd__host_trial_fractions[GD__HOST_TRIAL_WAYS];
typedef struct {
    int runs;    /* gathers each way serves, > GD__HOST_TRIAL_SETTLE + 1 */
    int way;     /* the candidate in use; GD__HOST_TRIAL_WAYS once decided */
    int n;       /* gathers the candidate has served */
    int ns;      /* periods timed for it */
    int best;    /* the kept candidate, once decided (-1 before) */
    double last; /* when the previous gather began (< 0: none yet) */
    int gap;     /* a pause since (a pass ended): the next period is not timed */
    double period[GD__HOST_TRIAL_WAYS];      /* median periods, seconds */
    double samples[GD__HOST_TRIAL_MAX_RUNS]; /* the candidate's periods so far */
} gd__host_trial;
/* A trial of `runs` gathers a way (clamped to [SETTLE + 2, MAX_RUNS]). */
void gd__host_trial_init(gd__host_trial *t, int runs);
/*
 * A gather begins at time now (seconds, increasing): the CPU fraction to set before it when the
 * way changes (at the first call, at each change of candidate and at the decision), else -1.
 */
double gd__host_trial_step(gd__host_trial *t, double now);
/* The gathers stopped for a while (a pass ended): the period across the pause is not timed. */
static inline void gd__host_trial_pause(gd__host_trial *t) {
    t->gap = 1;
}
/* Whether the trial has decided (t->best is the kept candidate). */
static inline int gd__host_trial_done(const gd__host_trial *t) {
    return t->way >= GD__HOST_TRIAL_WAYS;
}

/* The rates the start-up probe of a gatherer measured (gd__gatherer_host_probe). */
typedef struct {
    int64_t rows;        /* host rows gathered per call */
    int64_t row_bytes;
    double zerocopy_gbs; /* GB/s (1e9 bytes) of host rows, zero-copy loads */
    double cpu_gbs;      /* and CPU gather + DMA */
    double split_gbs;    /* and split, with the CPU fraction split_f */
    double split_f;
} gd__host_probe;

#ifdef __cplusplus
}
#endif

#endif /* GD_FEATURE_HOST_GATHER_H */
