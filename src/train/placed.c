/*
 * The feature cache of a rank placed over the GPUs of its group (issue 14, items 4-5): the
 * zero-copy trainer of each rank reaches this with its cache budget and the rows' scores; every
 * rank computes the same placement (train/placement.h) from what all ranks agree on (their
 * capacities, the read costs measured here, the scores of the same dataset), builds its cache
 * with its own rows, and maps the others' caches to read theirs over NVLink (core/peers.h).
 * The neighbour-list cache of the graph follows in the same call, with the same kind and costs:
 * the lists are sized candidates (bytes), ranked and weighed as the one-GPU list cache ranks
 * them (graph/internal.h), the graph rebuilds its cache from its share (gd__graph_cache_place)
 * and reads the others' lists from their memory; the graph keeps the mappings and, at exit,
 * waits for every rank before it frees the cache they read.
 *
 * The read costs are seconds per byte of three copies of the same size, timed on each rank and
 * averaged over the ranks: from the rank's pinned feature table to its GPU (C_host), from the
 * next rank's GPU to its own (C_peer), and within its GPU (C_local). A copy streams, a gather
 * reads scattered rows; the ratios, which are all the model uses, are close for rows of hundreds
 * of bytes (the issue measured 395 vs 370 GB/s peer, 55 vs 52 GB/s host on the lent H200s).
 */
#include "train/datapath.h"

#include "core/cuda.h"
#include "core/peers.h"
#include "feature/placed.h"
#include "graph/internal.h"
#include "train/placement.h"

#include <stdio.h>
#include <string.h>

#define PROBE_BYTES (INT64_C(64) << 20)
#define PROBE_RUNS 3

/* The kind asked for (NULL: auto). */
static gd_status kind_of(const char *name, gd__placement_kind *kind) {
    *kind = GD__PLACEMENT_AUTO;
    if (!name) return GD_OK;
    const int i = gd__name_index(gd__placement_names, 3, name);
    if (i < 0)
        return gd__error(GD_ERR_INVALID_ARG,
                         "trainer: placement '%s' is none of replicate, partition, auto", name);
    *kind = (gd__placement_kind)i;
    return GD_OK;
}

#ifdef GD_WITH_CUDA
/* Seconds per byte of the fastest of PROBE_RUNS copies of bytes from src to dst on stream. */
static gd_status time_copy(void *dst, const void *src, int64_t bytes, void *stream, void *ev[2],
                           double *per_byte) {
    gd_status st = GD_OK;
    float best = 0;
    for (int k = 0; k < PROBE_RUNS; k++) {
        float ms = 0;
        GD_CHECK(gd__cuda_event_record(ev[0], stream));
        GD_CHECK(gd__cuda_memcpy_async(dst, src, (size_t)bytes, stream));
        GD_CHECK(gd__cuda_event_record(ev[1], stream));
        GD_CHECK(gd__cuda_event_sync(ev[1]));
        GD_CHECK(gd__cuda_event_ms(ev[0], ev[1], &ms));
        if (k == 0 || ms < best) best = ms;
    }
    *per_byte = (best > 0 ? best : 1e-6f) * 1e-3 / (double)bytes;
fail:
    return st;
}

/* This rank's three costs; collective (the probe buffers are shared to time the peer read). */
static gd_status measure(gd__datapath *d, gd__comm *c, double costs[3]) {
    gd_status st = GD_OK, local = GD_OK;
    const int device = gd_context_device(d->context);
    const int64_t table = d->num_nodes * gd_host_tensor_row_bytes(d->features);
    const int64_t bytes = gd__max64(gd__min64(PROBE_BYTES, table), 4096);
    void *probe = NULL, *stream = NULL, *ev[2] = {NULL, NULL};
    gd__peer_view view;
    memset(&view, 0, sizeof view);
    local = gd__cuda_malloc(device, &probe, (size_t)(2 * bytes), "the read-cost probe");
    GD_CHECK(gd__peers_agree(c, local, "to allocate its read-cost probe"));
    GD_CHECK(gd__peers_share(c, device, probe, bytes, &view));
    const int next = (view.rank + 1) % view.world;
    local = gd__cuda_stream_create(device, &stream);
    if (local == GD_OK) local = gd__cuda_event_create(device, 1, &ev[0]);
    if (local == GD_OK) local = gd__cuda_event_create(device, 1, &ev[1]);
    /* The table's first bytes (zeros past a small table's end are read from the probe). */
    if (local == GD_OK)
        local = time_copy(probe, gd_host_tensor_data(d->features), gd__min64(bytes, table),
                          stream, ev, &costs[2]);
    if (local == GD_OK)
        local = time_copy((char *)probe + bytes, view.ptr[next], bytes, stream, ev, &costs[1]);
    if (local == GD_OK) local = time_copy((char *)probe + bytes, probe, bytes, stream, ev, &costs[0]);
    /* A collective: no rank frees its probe while another still reads it. */
    st = gd__peers_agree(c, local, "to time its reads");
fail:
    gd__peers_close(&view);
    gd__cuda_event_destroy(ev[0]);
    gd__cuda_event_destroy(ev[1]);
    gd__cuda_stream_destroy(stream);
    gd__cuda_free(probe);
    return st;
}
#endif

/* The costs every rank uses: each rank's measurement, averaged in rank order. */
static gd_status agreed_costs(gd__datapath *d, gd__comm *c, gd__placement_costs *out) {
    gd_status st = GD_OK;
    double mine[3] = {0, 0, 0}, sum[3] = {0, 0, 0};
#ifdef GD_WITH_CUDA
    GD_CHECK(measure(d, c, mine));
#else
    (void)d;
#endif
    memcpy(sum, mine, sizeof sum);
    GD_CHECK(gd__comm_sum_host(c, sum, 3));
    const double w = gd__comm_world(c);
    out->local = sum[0] / w;
    /* Copies that beat each other by noise must not break the model's order. */
    out->peer = sum[1] / w > out->local ? sum[1] / w : out->local;
    out->host = sum[2] / w > out->peer ? sum[2] / w : out->peer;
fail:
    return st;
}

/* The candidates (hottest first, as many as the GPUs hold in all) and their probabilities. */
static gd_status candidates(const gd__datapath *d, const int64_t *scores, int64_t want,
                            int64_t **rows, double **prob, int64_t *n) {
    gd_status st = GD_OK;
    double *score = NULL, total = 0;
    GD_ALLOC(*rows, (size_t)gd__max64(want, 1) * sizeof(int64_t), "the placement's candidates");
    GD_ALLOC(*prob, (size_t)gd__max64(want, 1) * sizeof(double), "the candidates' probabilities");
    GD_CHECK(gd_hot_rows_select(scores, d->num_nodes, want, *rows, n));
    GD_ALLOC(score, (size_t)gd__max64(*n, 1) * sizeof(double), "the candidates' scores");
    for (int64_t i = 0; i < d->num_nodes; i++) total += (double)scores[i];
    for (int64_t i = 0; i < *n; i++) score[i] = (double)scores[(*rows)[i]];
    GD_CHECK(gd__placement_probs(score, *n, total, *prob));
fail:
    gd_free(score);
    return st;
}

/* The placement's lists as the tier store takes them: this GPU's rows, and each peer's. */
static void cache_lists(const gd__placement *p, int64_t row_bytes, const int64_t *cap, int rank,
                        gd__gather_placed *gp, gd__tier_cache_rows *peers) {
    for (int g = 0; g < p->num_gpus; g++) {
        gd__tier_cache_rows r = {p->rows + p->offset[g], p->offset[g + 1] - p->offset[g],
                                 cap[g] * row_bytes};
        peers[g] = g == rank ? (gd__tier_cache_rows){NULL, 0, 0} : r;
        if (g == rank) gp->own = r;
    }
    gp->peers = peers;
    gp->num_peers = p->num_gpus;
}

/* Share the caches and install each peer this rank reads. */
static gd_status install_peers(gd__datapath *d, gd__comm *c) {
    gd_status st = GD_OK, local = GD_OK;
    int64_t units = 0;
    const void *mem = gd__gatherer_cache_mem(d->gatherer, &units);
    GD_ALLOC(d->peers, sizeof *d->peers, "the peers' cache mappings");
    memset(d->peers, 0, sizeof *d->peers);
    GD_CHECK(gd__peers_share(c, gd_context_device(d->context), mem, units, d->peers));
    for (int q = 0; q < d->peers->world && local == GD_OK; q++) {
        const int64_t need = gd__gatherer_peer_units(d->gatherer, q);
        if (q == d->peers->rank || need == 0) continue;
        if (d->peers->units[q] != need || !d->peers->ptr[q])
            local = gd__error(GD_ERR_INTERNAL,
                              "rank %d expected a cache of %lld slots from rank %d, which has "
                              "%lld: the ranks computed different placements",
                              d->peers->rank, (long long)need, q, (long long)d->peers->units[q]);
        else
            local = gd__gatherer_set_peer(d->gatherer, q, d->peers->ptr[q], need);
    }
    /* Every rank must have its peers before any gathers from them. */
    GD_CHECK(gd__peers_agree(c, local, "to install its peers' caches"));
fail:
    return st;
}

/* One line of the plan: the placement, its model and what this rank holds. */
static void note(gd__datapath *d, const gd__placement *p, int rank, const char *why) {
    const size_t used = strlen(d->plan.text);
    const int64_t own = p->offset[rank + 1] - p->offset[rank];
    int64_t only = 0;
    for (int64_t i = 0; i < p->num_candidates; i++) only += p->home[i] == rank;
    snprintf(d->plan.text + used, sizeof d->plan.text - used,
             "; feature cache placement %s over %d GPUs (alpha %.3f%s): this GPU caches %lld "
             "rows (%lld its share alone), expects %.0f%% of reads local, %.0f%% from peers",
             gd__placement_names[p->kind], p->num_gpus, p->alpha, why, (long long)own,
             (long long)only, 100 * p->local_prob[rank], 100 * p->peer_prob[rank]);
}

/* ---- the neighbour-list cache */

/* Share the graph's list cache and install each peer's that it reads (install_peers' steps). */
static gd_status share_lists(gd__datapath *d, gd__comm *c) {
    gd_status st = GD_OK, local = GD_OK;
    gd_graph_t *g = d->graph;
    gd__peer_view *view = NULL;
    int64_t units = 0;
    const void *mem = gd__graph_cache_mem(g, &units);
    GD_ALLOC(view, sizeof *view, "the peers' list cache mappings");
    memset(view, 0, sizeof *view);
    st = gd__peers_share(c, gd_context_device(d->context), mem, units, view);
    /* Kept also after a failure: the graph closes what was mapped, after every rank stopped. */
    gd__graph_keep_peers(g, view);
    GD_CHECK(st);
    for (int q = 0; q < view->world && local == GD_OK; q++) {
        const int64_t need = gd__graph_peer_units(g, q);
        if (q == view->rank || need == 0) continue;
        if (view->units[q] != need || !view->ptr[q])
            local = gd__error(GD_ERR_INTERNAL,
                              "rank %d expected a neighbour-list cache of %lld entries from rank "
                              "%d, which has %lld: the ranks computed different placements",
                              view->rank, (long long)need, q, (long long)view->units[q]);
        else
            local = gd__graph_set_peer(g, q, view->ptr[q], need);
    }
    /* Every rank must have its peers before any samples from them. */
    GD_CHECK(gd__peers_agree(c, local, "to install its peers' neighbour-list caches"));
fail:
    return st;
}

/* The plan's line for the lists: what this rank holds and the model's share of its reads. */
static void note_lists(gd__datapath *d, const gd__placement *p, int rank) {
    const size_t used = strlen(d->plan.text);
    int64_t only = 0;
    for (int64_t i = 0; i < p->num_candidates; i++) only += p->home[i] == rank;
    snprintf(d->plan.text + used, sizeof d->plan.text - used,
             "; neighbour-list cache placement %s: this GPU caches %lld lists (%lld alone), "
             "expects %.0f%% of list reads local, %.0f%% from peers",
             gd__placement_names[p->kind], (long long)(p->offset[rank + 1] - p->offset[rank]),
             (long long)only, 100 * p->local_prob[rank], 100 * p->peer_prob[rank]);
}

/*
 * Place the graph's list cache over the group like the feature cache (collective): the ranks'
 * budgets in whole entries (0 where the lists are not pinned: such a rank reads them all from
 * GPU memory and caches none), the lists as sized candidates up to twice the total, the same
 * kind and costs. Nothing changes where no rank has a list cache.
 */
static gd_status place_lists(gd__datapath *d, gd__comm *c, gd__placement_kind kind,
                             const gd__placement_costs *costs, const int64_t *outdeg) {
    gd_status st = GD_OK, local = GD_OK;
    gd_graph_t *g = d->graph;
    const int world = gd__comm_world(c), rank = gd__comm_rank(c);
    const int64_t es = (int64_t)gd_dtype_size(g->indices_dtype);
    const int can = g->store && g->indices_place == GD_PLACE_PINNED;
    int64_t mine = can ? g->cache_budget / es * es : 0, *cap = NULL, *rows = NULL, *size = NULL;
    int64_t total = 0, n = 0;
    double *prob = NULL;
    gd__placement p;
    gd__tier_cache_rows lists[GD__PLACEMENT_MAX_GPUS];
    gd_array_view ip;
    memset(&p, 0, sizeof p);
    GD_CHECK(gd_dataset_array(d->ds, GD_ARRAY_INDPTR, &ip));
    GD_ALLOC(cap, sizeof(int64_t) * (size_t)world, "the ranks' list cache capacities");
    GD_CHECK(gd__comm_allgather_host(c, &mine, cap, (int64_t)sizeof mine));
    for (int q = 0; q < world; q++) total += cap[q];
    if (total == 0) goto fail;
    const size_t nn = (size_t)gd__max64(d->num_nodes, 1);
    GD_ALLOC(rows, nn * sizeof(int64_t), "the list cache's candidates");
    GD_ALLOC(size, nn * sizeof(int64_t), "the candidates' sizes");
    GD_ALLOC(prob, nn * sizeof(double), "the candidates' shares of the reads");
    GD_CHECK(gd__graph_list_candidates(g, ip.data, outdeg, 2 * total, rows, prob, size, &n));
    const gd__placement_input in = {.num_candidates = n,
                                    .prob = prob,
                                    .rows = rows,
                                    .size = size,
                                    .num_gpus = world,
                                    .capacity = cap,
                                    .costs = *costs};
    GD_CHECK(gd__placement_compute(&in, kind, &p));
    for (int q = 0; q < world; q++)
        lists[q] =
            (gd__tier_cache_rows){p.rows + p.offset[q], p.offset[q + 1] - p.offset[q], cap[q]};
    const gd__tier_cache_rows own = lists[rank];
    lists[rank] = (gd__tier_cache_rows){NULL, 0, 0};
    if (can) local = gd__graph_cache_place(g, ip.data, &own, lists, world);
    GD_CHECK(gd__peers_agree(c, local, "to build its placed neighbour-list cache"));
    GD_CHECK(share_lists(d, c));
    d->graph_cache_bytes = g->cache_bytes;
    note_lists(d, &p, rank);
fail:
    gd__placement_free(&p);
    gd_free(cap);
    gd_free(rows);
    gd_free(size);
    gd_free(prob);
    return st;
}

gd_status gd__datapath_place_cache(gd__datapath *d, const gd_gatherer_options *go,
                                   int64_t cache, const int64_t *scores, int *placed) {
    gd_status st = GD_OK;
    gd__comm *c = gd__context_comm(d->context);
    gd__placement_kind kind;
    gd__placement p;
    int64_t *cap = NULL, *rows = NULL, n = 0, total = 0;
    double *prob = NULL;
    gd__tier_cache_rows peers[GD__PLACEMENT_MAX_GPUS];
    gd__placement_input in;
    char why[256] = "";
    memset(&p, 0, sizeof p);
    *placed = 0;
    GD_CHECK(kind_of(d->cfg.placement, &kind));
    const int world = gd__comm_world(c), rank = gd__comm_rank(c);
    if (world < 2 || !gd__comm_on_device(c) || kind == GD__PLACEMENT_REPLICATE) return GD_OK;
    int all = 0;
    if (world > GD__TIER_MAX_PEERS)
        snprintf(why, sizeof why, "%d ranks, more than the %d peers a cache reads", world,
                 GD__TIER_MAX_PEERS);
    else
        GD_CHECK(gd__peers_access(c, gd_context_device(d->context), &all, why, sizeof why));
    GD_REQUIRE(all || kind == GD__PLACEMENT_AUTO, GD_ERR_UNSUPPORTED,
               "placement partition: %s; use --placement replicate (or auto)", why);
    if (!all) {
        const size_t used = strlen(d->plan.text);
        snprintf(d->plan.text + used, sizeof d->plan.text - used,
                 "; feature and neighbour-list cache placement auto: replicate (%s)", why);
        return GD_OK;
    }
    const int64_t row_bytes = gd_host_tensor_row_bytes(d->features);
    int64_t mine = row_bytes ? gd__min64(cache / row_bytes, d->num_nodes) : 0;
    GD_ALLOC(cap, sizeof(int64_t) * (size_t)world, "the ranks' cache capacities");
    GD_CHECK(gd__comm_allgather_host(c, &mine, cap, (int64_t)sizeof mine));
    for (int g = 0; g < world; g++) total += cap[g];
    memset(&in, 0, sizeof in);
    GD_CHECK(agreed_costs(d, c, &in.costs));
    GD_CHECK(candidates(d, scores, gd__min64(total, d->num_nodes), &rows, &prob, &n));
    in.num_candidates = n;
    in.prob = prob;
    in.rows = rows;
    in.num_gpus = world;
    in.capacity = cap;
    GD_CHECK(gd__placement_compute(&in, kind, &p));
    gd__gather_placed gp;
    cache_lists(&p, row_bytes, cap, rank, &gp, peers);
    GD_CHECK(gd__gatherer_create_placed(d->features, d->context, go, &gp, &d->gatherer));
    GD_CHECK(install_peers(d, c));
    snprintf(why, sizeof why, ", C_peer/C_host %.2f", in.costs.peer / in.costs.host);
    note(d, &p, rank, why);
    GD_CHECK(place_lists(d, c, kind, &in.costs, scores));
    GD_INFO("rank %d: %s", rank, d->plan.text);
    *placed = 1;
fail:
    gd__placement_free(&p);
    gd_free(cap);
    gd_free(rows);
    gd_free(prob);
    return st;
}
