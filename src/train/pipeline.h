/*
 * The pipeline: a ring of `depth` buffer sets that minibatches flow through, a list of stages,
 * the events between them, and ONE scheduler that the trainer and the loader both drive
 * (docs/design.md, "Pipeline"). Minibatch b uses set b % depth. A stage is a function that
 * fills or consumes a set's buffers; it runs on its own CUDA stream (GPU stages) or on the host
 * thread (host stages). The scheduler orders the stages with events:
 *
 *   stage 0 of b    waits for the set's free fences (the previous minibatch of the set is done)
 *   stage k of b    waits for the end of stage k - 1 of b (on the GPU; on the host as well when
 *                   the stage needs the host to see the previous stage's results, e.g. sizes)
 *   every stage     records its start and end events (the stage's busy time)
 *
 * The set's free fences are the end event of the last stage (the trainer), or events that the
 * client records on the streams that read the set's minibatch (the loader: gd_batch_wait and
 * gd_batch_export streams, at release). A stage flagged `ahead` is issued up to depth - 1
 * minibatches ahead of the others, into sets the client allows (the loader keeps sets that the
 * caller still holds). A new stage (a disk fetch between sample and gather, a gradient
 * all-reduce after backward) is a new entry of the list: the scheduler does not change.
 */
#ifndef GD_TRAIN_PIPELINE_H
#define GD_TRAIN_PIPELINE_H

#include "core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Buffer sets in a ring at most. */
#define GD__PIPE_MAX_DEPTH 8
/* Stages at most. */
#define GD__PIPE_MAX_STAGES 6
/* Free fences of a set at most: streams a loader batch may be read on, each fenced. */
#define GD__PIPE_MAX_FENCES 4

/*
 * A pass over seeds: a training epoch, an evaluation, or a loader epoch. With several ranks
 * (data parallelism), minibatch b of the pass is this rank's share of global minibatch b: the
 * global minibatch is the seeds [b * global, (b + 1) * global) of ids, as one rank of batch
 * `global` would take them, and rank r takes its seeds [r * batch, (r + 1) * batch), fewer or
 * none at the end. Its draws are keyed by b, so they do not depend on the number of ranks.
 */
typedef struct {
    const int64_t *ids; /* host: the seeds in the order they are used */
    int64_t n;          /* seeds */
    int64_t batch;      /* seeds per minibatch of this rank (the last one may be short) */
    int64_t global;     /* seeds per global minibatch: batch * world */
    int rank, world;    /* this rank among world (0 of 1: alone) */
    int64_t batches;    /* minibatches of the pass (the same on every rank) */
    int64_t epoch;
    int train;                          /* training (backward, optimizer) or not */
    double stage_s[GD__PIPE_MAX_STAGES]; /* busy seconds of each stage (events or host clock) */
    int64_t labelled;                   /* seeds with a label, over the minibatches issued */
} gd__pass;

/* The seeds of global minibatch b of p: p->ids + *lo, *count of them. */
static inline void gd__pass_global_slice(const gd__pass *p, int64_t b, int64_t *lo,
                                         int64_t *count) {
    *lo = b * p->global;
    *count = p->n - *lo < p->global ? p->n - *lo : p->global;
}

/* This rank's seeds of minibatch b of p: p->ids + *lo, *count of them (possibly none). */
static inline void gd__pass_slice(const gd__pass *p, int64_t b, int64_t *lo, int64_t *count) {
    int64_t glo, gcount;
    gd__pass_global_slice(p, b, &glo, &gcount);
    const int64_t start = (int64_t)p->rank * p->batch < gcount ? (int64_t)p->rank * p->batch
                                                                : gcount;
    *lo = glo + start;
    *count = gcount - start < p->batch ? gcount - start : p->batch;
}

/*
 * A stage: run queues (GPU stage: on stream) or does (host stage) its work for minibatch b of
 * the pass in set `set`.
 */
typedef gd_status (*gd__stage_fn)(void *user, gd__pass *p, int64_t b, int set, void *stream);

typedef struct {
    const char *name;
    gd__stage_fn run;
    void *user;
    void *stream;   /* the stage's CUDA stream; NULL: a host stage (returns when done) */
    int host_waits; /* the host waits for the end of the previous stage first (e.g. its sizes) */
    int host_clock; /* the stage's time is the host's wall time of run (the CPU does its work) */
    int ahead;      /* stage 0 only: issued up to depth - 1 minibatches ahead */
} gd__stage;

/* May the pipeline reuse `set` now? (A loader set held by its caller may not.) */
typedef int (*gd__set_free_fn)(void *user, int set);

typedef struct {
    int device;      /* the GPU of the events (GPU stages) */
    int depth;       /* buffer sets, 1..GD__PIPE_MAX_DEPTH */
    int num_stages;  /* 1..GD__PIPE_MAX_STAGES */
    gd__stage stages[GD__PIPE_MAX_STAGES];
    /* 1: the end of the last stage frees the set (trainer); 0: the client calls gd__pipe_fence. */
    int last_stage_frees;
    gd__set_free_fn may_reuse; /* NULL: every set may always be reused */
    void *may_reuse_user;
} gd__pipe_config;

typedef struct gd__pipe gd__pipe;

gd_status gd__pipe_create(const gd__pipe_config *cfg, gd__pipe **out);
/* Waits for the work in flight on the stages' streams first. */
void gd__pipe_destroy(gd__pipe *p);

/* Start pass p (the pipeline keeps the pointer until gd__pipe_finish). */
void gd__pipe_start(gd__pipe *pp, gd__pass *p);
/*
 * Issue every stage of minibatch b (the next one in order), and the ahead stage of the
 * minibatches after it where the ring allows. GPU stages are queued, host stages done.
 */
gd_status gd__pipe_issue(gd__pipe *pp, int64_t b);
/*
 * The pass is over (or failed with st): wait for the work in flight, add up the stage times,
 * and return st, or the first error met while waiting.
 */
gd_status gd__pipe_finish(gd__pipe *pp, gd_status st);

/* The end event of stage k in set `set` (recorded at its last issue), for readers to wait on. */
void *gd__pipe_stage_done(const gd__pipe *pp, int set, int k);
/*
 * The client's free fences of `set`: one event recorded on each of streams[0..n) (none: on the
 * last stage's stream), which stage 0 of the set's next minibatch waits for, in this pass or a
 * later one. Errors recording on a stream that is gone are cleared: nothing waits on it then.
 */
void gd__pipe_fence(gd__pipe *pp, int set, void *const *streams, int n);
/* 1 if the last stage of minibatch b of the pass has finished, 0 if not (or not known). */
int gd__pipe_done(const gd__pipe *pp, int64_t b);

#ifdef __cplusplus
}
#endif

#endif /* GD_TRAIN_PIPELINE_H */
