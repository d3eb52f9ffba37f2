/*
 * The pipeline's one scheduler (pipeline.h): the ring of buffer sets, the events between the
 * stages and the order in which stages are issued. It knows nothing of what the stages do; the
 * data path (datapath.c) gives it sample and gather stages, the trainer adds its train stage,
 * and the loader's caller is the last "stage" of a loader, fencing the sets it read.
 *
 * The host's only waits are the ones a stage asks for (host_waits: the sizes of a minibatch,
 * sampled depth - 1 minibatches earlier) and, for a host stage 0, the set's free fences. Stage
 * times come from the start and end events of each GPU stage, read once the set comes round
 * again (by then the events have completed: the set's stage 0 waited for them) or at the end of
 * the pass.
 */
#include "train/pipeline.h"

#include "core/cuda.h"

#include <string.h>

typedef struct {
    void *start[GD__PIPE_MAX_STAGES], *end[GD__PIPE_MAX_STAGES]; /* GPU stages' events */
    int timed[GD__PIPE_MAX_STAGES]; /* stage k was recorded and its time not yet counted */
    void *fence[GD__PIPE_MAX_FENCES];
    int fenced;    /* client fences recorded and not yet waited for */
    int last_ends; /* the last stage's end is recorded and not yet waited for (trainer) */
    int64_t last_b; /* the minibatch whose last stage was issued in the set (-1: none) */
} pipe_set;

struct gd__pipe {
    gd__pipe_config cfg;
    int gpu; /* some stage runs on a stream: events exist */
    pipe_set sets[GD__PIPE_MAX_DEPTH];
    gd__pass *pass;
    int64_t ahead_next; /* the next minibatch whose stage 0 is to be issued */
};

static double *stage_time(gd__pipe *pp, int k) {
    return &pp->pass->stage_s[k];
}

void gd__pipe_destroy(gd__pipe *pp) {
    if (!pp) return;
#ifdef GD_WITH_CUDA
    /* Destroyed after a failure too: the failure's message outlives the syncs' own. */
    gd__error_kept kept;
    gd__error_keep(&kept);
    for (int k = 0; k < pp->cfg.num_stages; k++)
        if (pp->cfg.stages[k].stream) (void)gd__cuda_stream_sync(pp->cfg.stages[k].stream);
    gd__error_put_back(&kept);
    for (int i = 0; i < GD__PIPE_MAX_DEPTH; i++) {
        pipe_set *s = &pp->sets[i];
        for (int k = 0; k < GD__PIPE_MAX_STAGES; k++) {
            gd__cuda_event_destroy(s->start[k]);
            gd__cuda_event_destroy(s->end[k]);
        }
        for (int f = 0; f < GD__PIPE_MAX_FENCES; f++) gd__cuda_event_destroy(s->fence[f]);
    }
#endif
    gd_free(pp);
}

gd_status gd__pipe_create(const gd__pipe_config *cfg, gd__pipe **out) {
    gd_status st = GD_OK;
    gd__pipe *pp = NULL;
    *out = NULL;
    GD_REQUIRE(cfg->depth >= 1 && cfg->depth <= GD__PIPE_MAX_DEPTH && cfg->num_stages >= 1 &&
                   cfg->num_stages <= GD__PIPE_MAX_STAGES,
               GD_ERR_INTERNAL, "pipeline: depth %d, %d stages", cfg->depth, cfg->num_stages);
    for (int k = 1; k < cfg->num_stages; k++)
        GD_REQUIRE(!cfg->stages[k].ahead, GD_ERR_INTERNAL,
                   "pipeline: only stage 0 may run ahead (stage %d '%s')", k,
                   cfg->stages[k].name);
    GD_ALLOC(pp, sizeof *pp, "the pipeline");
    memset(pp, 0, sizeof *pp);
    pp->cfg = *cfg;
    for (int k = 0; k < cfg->num_stages; k++) pp->gpu |= cfg->stages[k].stream != NULL;
    for (int i = 0; i < cfg->depth; i++) pp->sets[i].last_b = -1;
#ifdef GD_WITH_CUDA
    for (int i = 0; pp->gpu && i < cfg->depth; i++) {
        pipe_set *s = &pp->sets[i];
        for (int k = 0; k < cfg->num_stages; k++) {
            if (!cfg->stages[k].stream) continue;
            GD_CHECK(gd__cuda_event_create(cfg->device, 1, &s->start[k]));
            GD_CHECK(gd__cuda_event_create(cfg->device, 1, &s->end[k]));
        }
        for (int f = 0; !cfg->last_stage_frees && f < GD__PIPE_MAX_FENCES; f++)
            GD_CHECK(gd__cuda_event_create(cfg->device, 0, &s->fence[f]));
    }
#else
    GD_REQUIRE(!pp->gpu, GD_ERR_NO_DEVICE, "pipeline: a GPU stage in a build without CUDA");
#endif
    *out = pp;
    return GD_OK;
fail:
    gd__pipe_destroy(pp);
    return st;
}

void gd__pipe_start(gd__pipe *pp, gd__pass *p) {
    pp->pass = p;
    pp->ahead_next = 0;
    for (int i = 0; i < pp->cfg.depth; i++) pp->sets[i].last_b = -1;
}

#ifdef GD_WITH_CUDA
/* Add stage k's time in set s, once its events have completed (they have, or are about to). */
static gd_status count_stage(gd__pipe *pp, pipe_set *s, int k) {
    gd_status st = GD_OK;
    float ms;
    if (!s->timed[k]) return GD_OK;
    GD_CHECK(gd__cuda_event_sync(s->end[k]));
    GD_CHECK(gd__cuda_event_ms(s->start[k], s->end[k], &ms));
    *stage_time(pp, k) += ms / 1e3;
    s->timed[k] = 0;
fail:
    return st;
}
#endif

/* Stage 0 of the set's next minibatch waits for the set to be free: its fences. */
static gd_status wait_free(gd__pipe *pp, pipe_set *s, void *stream) {
    gd_status st = GD_OK;
#ifdef GD_WITH_CUDA
    const int last = pp->cfg.num_stages - 1;
    void *ev[GD__PIPE_MAX_FENCES + 1];
    int n = 0;
    if (s->last_ends) ev[n++] = s->end[last];
    for (int f = 0; f < s->fenced; f++) ev[n++] = s->fence[f];
    for (int i = 0; i < n; i++)
        GD_CHECK(stream ? gd__cuda_stream_wait(stream, ev[i]) : gd__cuda_event_sync(ev[i]));
    s->last_ends = 0;
    s->fenced = 0;
fail:
#else
    (void)pp;
    (void)s;
    (void)stream;
#endif
    return st;
}

/* Issue stage k of minibatch b. */
static gd_status issue_stage(gd__pipe *pp, int k, int64_t b) {
    gd_status st = GD_OK;
    const int set = (int)(b % pp->cfg.depth);
    pipe_set *s = &pp->sets[set];
    const gd__stage *g = &pp->cfg.stages[k];
    if (k == 0) GD_CHECK(wait_free(pp, s, g->stream));
#ifdef GD_WITH_CUDA
    const gd__stage *prev = k > 0 ? &pp->cfg.stages[k - 1] : NULL;
    if (prev && prev->stream) {
        /* The previous stage's results: on the GPU, and on the host when the stage needs them. */
        if (g->host_waits || !g->stream) GD_CHECK(gd__cuda_event_sync(s->end[k - 1]));
        if (g->stream && g->stream != prev->stream)
            GD_CHECK(gd__cuda_stream_wait(g->stream, s->end[k - 1]));
    }
    if (g->stream) {
        GD_CHECK(count_stage(pp, s, k));
        GD_CHECK(gd__cuda_event_record(s->start[k], g->stream));
    }
#endif
    const double t0 = gd__now();
    GD_CHECK(g->run(g->user, pp->pass, b, set, g->stream));
    if (!g->stream || g->host_clock) *stage_time(pp, k) += gd__now() - t0;
#ifdef GD_WITH_CUDA
    if (g->stream) {
        GD_CHECK(gd__cuda_event_record(s->end[k], g->stream));
        s->timed[k] = !g->host_clock;
    }
#endif
    if (k == pp->cfg.num_stages - 1) {
        s->last_b = b;
        s->last_ends = pp->cfg.last_stage_frees && g->stream != NULL;
    }
fail:
    return st;
}

gd_status gd__pipe_issue(gd__pipe *pp, int64_t b) {
    gd_status st = GD_OK;
    const gd__pass *p = pp->pass;
    const int D = pp->cfg.depth;
    GD_REQUIRE(p && b >= 0 && b < p->batches, GD_ERR_INTERNAL, "pipeline: minibatch %lld of %lld",
               (long long)b, (long long)(p ? p->batches : 0));
    int first = 0;
    if (pp->cfg.stages[0].ahead) {
        if (pp->ahead_next <= b) {
            GD_CHECK(issue_stage(pp, 0, b));
            pp->ahead_next = b + 1;
        }
        /* Run ahead into the sets the ring and the client allow. */
        while (pp->ahead_next < p->batches && pp->ahead_next < b + D &&
               (!pp->cfg.may_reuse ||
                pp->cfg.may_reuse(pp->cfg.may_reuse_user, (int)(pp->ahead_next % D)))) {
            GD_CHECK(issue_stage(pp, 0, pp->ahead_next));
            pp->ahead_next++;
        }
        first = 1;
    }
    for (int k = first; k < pp->cfg.num_stages; k++) GD_CHECK(issue_stage(pp, k, b));
fail:
    return st;
}

gd_status gd__pipe_finish(gd__pipe *pp, gd_status st) {
#ifdef GD_WITH_CUDA
    gd_status st2;
    /* Whatever happened, wait for the work in flight before the buffers are touched again. */
    for (int k = 0; k < pp->cfg.num_stages; k++)
        if (pp->cfg.stages[k].stream &&
            (st2 = gd__cuda_stream_sync(pp->cfg.stages[k].stream)) != GD_OK && st == GD_OK)
            st = st2;
    for (int i = 0; i < pp->cfg.depth; i++)
        for (int k = 0; k < pp->cfg.num_stages; k++) {
            if (st == GD_OK) st = count_stage(pp, &pp->sets[i], k);
            pp->sets[i].timed[k] = 0;
        }
#endif
    pp->pass = NULL;
    return st;
}

void *gd__pipe_stage_done(const gd__pipe *pp, int set, int k) {
    return pp->sets[set].end[k];
}

void gd__pipe_fence(gd__pipe *pp, int set, void *const *streams, int n) {
#ifdef GD_WITH_CUDA
    pipe_set *s = &pp->sets[set];
    void *last = pp->cfg.stages[pp->cfg.num_stages - 1].stream;
    s->fenced = 0;
    if (!pp->gpu) return;
    for (int i = 0; i < (n > 0 ? n : 1) && i < GD__PIPE_MAX_FENCES; i++) {
        if (gd__cuda_event_record(s->fence[i], n > 0 ? streams[i] : last) != GD_OK) {
            gd_clear_error(); /* the stream is gone with its context: nothing reuses the set */
            continue;
        }
        s->fenced++;
    }
#else
    (void)pp;
    (void)set;
    (void)streams;
    (void)n;
#endif
}

int gd__pipe_done(const gd__pipe *pp, int64_t b) {
    const pipe_set *s = &pp->sets[b % pp->cfg.depth];
    if (s->last_b != b) return 0;
#ifdef GD_WITH_CUDA
    const int last = pp->cfg.num_stages - 1;
    if (pp->cfg.stages[last].stream) {
        const int done = gd__cuda_event_done(s->end[last]);
        if (done < 0) gd_clear_error();
        return done > 0;
    }
#endif
    return 1;
}
