/*
 * The read plan of the link ceiling, built on the host, and the CPU reference of its replay's
 * checksum (read_plan.h; the replay itself is read_plan_cuda.cu).
 */
#include "read_plan.h"

#include <stdlib.h>
#include <string.h>

/* Grow *arr (elem bytes each, *cap of them) to hold at least need. */
static gd_status grow(void **arr, int64_t *cap, int64_t need, size_t elem, const char *what) {
    gd_status st = GD_OK;
    int64_t n = *cap ? *cap : 4096, bytes;
    void *p;
    if (need <= *cap) return GD_OK;
    while (n < need) n *= 2;
    GD_REQUIRE(!gd__mul_overflow_i64(n, (int64_t)elem, &bytes), GD_ERR_OVERFLOW,
               "the read plan's %s overflow", what);
    p = gd_realloc(*arr, (size_t)bytes);
    GD_REQUIRE(p, GD_ERR_NO_MEMORY, "out of memory growing the read plan's %s to %lld bytes", what,
               (long long)bytes);
    *arr = p;
    *cap = n;
    return GD_OK;
fail:
    return st;
}

static int cmp_i64(const void *a, const void *b) {
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Distinct `unit`-byte blocks of indices that hold the n entries at start + pos[0 .. n). */
static int64_t scattered_blocks(const int64_t *pos, int64_t n, int64_t start, int entry_bytes,
                                int64_t unit, int64_t *scratch) {
    int64_t d = 0;
    for (int64_t j = 0; j < n; j++) scratch[j] = (start + pos[j]) * entry_bytes / unit;
    qsort(scratch, (size_t)n, sizeof *scratch, cmp_i64);
    for (int64_t j = 0; j < n; j++) d += j == 0 || scratch[j] != scratch[j - 1];
    return d;
}

/* `unit`-byte blocks of indices that the 16-byte pieces of a whole read of [lo, hi) bytes cover. */
static int64_t whole_blocks(int64_t lo, int64_t hi, int64_t unit) {
    if (hi <= lo) return 0;
    lo &= ~(int64_t)15;
    return (hi - 1) / unit - lo / unit + 1;
}

/* A frontier node and its position, sorted by node id (the sampler's address-order schedule). */
typedef struct {
    int64_t node, pos;
} node_pos;

static int cmp_node(const void *a, const void *b) {
    const int64_t x = ((const node_pos *)a)->node, y = ((const node_pos *)b)->node;
    return (x > y) - (x < y);
}

gd_status gd__read_plan_add(gd__read_plan *p, const gd_sampler_t *s, const gd_minibatch_t *mb,
                            int64_t epoch, int64_t batch) {
    gd_status st = GD_OK;
    const gd_graph_t *g = s->graph;
    node_pos *order = NULL;
    int64_t *scratch = NULL, scratch_cap = 0;
    GD_REQUIRE(s->backend == GD_SAMPLER_CPU && mb->backend == GD_SAMPLER_CPU && mb->sampled &&
                   !mb->pending && mb->sampler == s,
               GD_ERR_INVALID_ARG,
               "gd__read_plan_add: the minibatch must be one sampled by this CPU sampler");
    GD_REQUIRE(g->h_indptr && g->h_indices, GD_ERR_INVALID_ARG,
               "gd__read_plan_add: the graph's arrays must be in host or pinned memory");
    GD_REQUIRE(s->bias_factor == 1, GD_ERR_INVALID_ARG,
               "gd__read_plan_add: the plan follows the uniform draws; this sampler's are biased "
               "(bias_factor %d), which read every list whole",
               s->bias_factor);
    if (p->minibatches == 0 && p->num_items == 0) {
        p->num_nodes = g->num_nodes;
        p->num_edges = g->num_edges;
        p->entry_bytes = (int)gd_dtype_size(g->indices_dtype);
    }
    GD_REQUIRE(p->num_nodes == g->num_nodes && p->num_edges == g->num_edges, GD_ERR_INVALID_ARG,
               "gd__read_plan_add: a plan covers one graph");
    {
        const uint64_t key = gd__sample_key(s->seed, epoch, batch);
        const int eb = p->entry_bytes;
        int64_t most = 1;
        for (int h = 0; h < s->num_layers; h++)
            if (mb->sizes[h] > most) most = mb->sizes[h];
        GD_ALLOC(order, (size_t)most * sizeof *order, "the read plan's node order");
        for (int h = 0; h < s->num_layers; h++) {
            const int64_t nf = mb->sizes[h];
            const int32_t *bip = mb->indptr[h];
            const int fanout = s->fanouts[h];
            GD_CHECK(grow((void **)&p->items, &p->cap_items, p->num_items + nf, sizeof *p->items,
                          "items"));
            for (int64_t i = 0; i < nf; i++) {
                order[i].node = mb->nodes[i];
                order[i].pos = i;
            }
            qsort(order, (size_t)nf, sizeof *order, cmp_node);
            for (int64_t r = 0; r < nf; r++) {
                const int64_t i = order[r].pos, v = order[r].node;
                const int64_t start = g->h_indptr[v], deg = g->h_indptr[v + 1] - start;
                const int64_t cnt = bip[i + 1] - bip[i];
                gd__read_item *it = &p->items[p->num_items++];
                memset(it, 0, sizeof *it);
                it->node = v;
                it->start = start;
                it->lanes = (int16_t)gd__sample_group_lanes(fanout);
                p->edges += cnt;
                if (cnt == 0) {
                    it->kind = GD__READ_INDPTR;
                    continue;
                }
                const int64_t g_lanes = gd__sample_group_lanes(fanout);
                const int whole =
                    p->whole_bytes_per_pick > 0
                        ? gd__sample_takes_all(deg, cnt, fanout, s->replace) ||
                              deg * eb <= p->whole_bytes_per_pick * (cnt < g_lanes ? cnt : g_lanes)
                        : gd__sample_reads_whole(deg, cnt, fanout, s->replace, eb);
                if (whole) {
                    const int64_t len =
                        gd__sample_takes_all(deg, cnt, fanout, s->replace) ? cnt : deg;
                    it->kind = GD__READ_WHOLE;
                    it->len = (int32_t)len;
                    p->list_sectors += whole_blocks(start * eb, (start + len) * eb, 32);
                    p->list_lines += whole_blocks(start * eb, (start + len) * eb, 128);
                    continue;
                }
                GD_CHECK(grow((void **)&p->positions, &p->cap_positions, p->num_positions + cnt,
                              sizeof *p->positions, "positions"));
                it->kind = GD__READ_SCATTERED;
                it->len = (int32_t)cnt;
                it->pos = p->num_positions;
                gd__sample_positions(key, (uint32_t)h, s->replace, v, deg, cnt,
                                     p->positions + p->num_positions);
                GD_CHECK(grow((void **)&scratch, &scratch_cap, cnt, sizeof *scratch,
                              "scratch"));
                p->list_sectors += scattered_blocks(p->positions + p->num_positions, cnt, start,
                                                    eb, 32, scratch);
                p->list_lines += scattered_blocks(p->positions + p->num_positions, cnt, start, eb,
                                                  128, scratch);
                p->num_positions += cnt;
            }
        }
        p->minibatches++;
    }
fail:
    gd_free(order);
    gd_free(scratch);
    return st;
}

void gd__read_plan_free(gd__read_plan *p) {
    if (!p) return;
    gd_free(p->items);
    gd_free(p->positions);
    memset(p, 0, sizeof *p);
}

int64_t gd__read_plan_line_skip(const gd_graph_t *g) {
    if (!g || !g->d_indices) return 0;
    const int64_t eb = (int64_t)gd_dtype_size(g->indices_dtype);
    return (int64_t)((128 - ((uintptr_t)g->d_indices & 127)) & 127) / eb;
}

static inline uint64_t entry_at(const void *indices, int entry_bytes, int64_t p) {
    return entry_bytes == 4 ? (uint64_t)(int64_t)((const int32_t *)indices)[p]
                            : (uint64_t)((const int64_t *)indices)[p];
}

uint64_t gd__read_plan_checksum(const gd__read_plan *p, const gd_graph_t *g, int read_indptr) {
    uint64_t sum = 0;
    for (int64_t i = 0; i < p->num_items; i++) {
        const gd__read_item *it = &p->items[i];
        if (read_indptr)
            sum += gd__read_plan_mix((uint64_t)g->h_indptr[it->node], (uint64_t)i) +
                   gd__read_plan_mix((uint64_t)g->h_indptr[it->node + 1], (uint64_t)i);
        for (int64_t k = 0; k < it->len; k++) {
            const int64_t at =
                it->start + (it->kind == GD__READ_SCATTERED ? p->positions[it->pos + k] : k);
            sum += gd__read_plan_mix(entry_at(g->h_indices, p->entry_bytes, at), (uint64_t)i);
        }
    }
    return sum;
}

#ifndef GD_WITH_CUDA
gd_status gd__read_plan_replay(const gd__read_plan *p, const gd_graph_t *g, int read_indptr,
                               int repeats, double *seconds, uint64_t *checksum) {
    (void)p, (void)g, (void)read_indptr, (void)repeats, (void)seconds, (void)checksum;
    return gd__error(GD_ERR_NO_DEVICE, "replaying a read plan needs a GPU, and this graphdirect "
                                       "was built without CUDA");
}
#endif
