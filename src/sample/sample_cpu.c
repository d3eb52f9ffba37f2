/*
 * The CPU sampler: CPU threads draw the neighbours and relabel them, reading the graph from
 * host memory (through the map of a host graph's placed list cache, list_bases, when the tests
 * build one as the reference of a GPU's). It is the CPU-centric baseline of the benchmark, the
 * sampler of machines without a GPU, and the oracle the CUDA sampler is compared with bit for
 * bit. It follows the same contract (docs/sampling.md): the same draws, Floyd's algorithm in the
 * same order, and local ids given by first appearance. Each hop runs:
 *   count     each destination node's degree and number of neighbours -> block indptr;
 *   sample    per node, in parallel: read only the drawn entries of its list (biased sampling,
 *             sample_node_biased, reads the whole list: see gd__bias_draws);
 *   relabel   one pass over a hash map in first-appearance order (one thread, or a small
 *             hop), or, with several threads, the GPU's order-free method: every position
 *             (destination nodes, then edges) inserts its node id with an atomic minimum of
 *             the position, a position is a first appearance when it holds its node's
 *             minimum, and a prefix sum over those marks gives the local ids. Both give the
 *             same ids whatever the thread count.
 * The CPU backend table, whose GPU entries report a build without CUDA, lives here too.
 */
#include "internal.h"

#include <string.h>

/* Hops with fewer positions than this relabel on one thread. */
#define PARALLEL_RELABEL_MIN 65536

typedef struct {
    int64_t *starts, *degs; /* per destination node of the current hop */
    int64_t *edge_ids;      /* global ids of the sampled neighbours (positions first) */
    int64_t *keys;          /* relabelling table: node ids (-1 = empty) */
    int32_t *vals;          /* local id (one thread) or smallest position (several) */
    int32_t *slots;         /* table slot of every position */
    int32_t *scan;          /* first-appearance marks, then their prefix sum */
    int64_t *bias_codes;    /* biased sampling only: per edge, the draw's code, then position */
    int64_t *bias_pos;      /* ... and the list position of the sorted codes */
} cpu_scratch;

static inline int64_t index_at(const void *indices, int is32, int64_t p) {
    return is32 ? (int64_t)((const int32_t *)indices)[p] : ((const int64_t *)indices)[p];
}

void gd__sample_positions(uint64_t key, uint32_t hop, int replace, int64_t v, int64_t deg,
                          int64_t cnt, int64_t *out) {
    if (replace) {
        for (int64_t j = 0; j < cnt; j++)
            out[j] = (int64_t)gd__sample_draw(key, (uint64_t)v, hop, (uint32_t)j, (uint64_t)deg);
        return;
    }
    /* Floyd: for j = 0..cnt-1, draw t in [0, deg - cnt + j]; take t unless already taken, else
     * take deg - cnt + j. */
    for (int64_t j = 0; j < cnt; j++) {
        const int64_t upper = deg - cnt + j;
        const int64_t t =
            (int64_t)gd__sample_draw(key, (uint64_t)v, hop, (uint32_t)j, (uint64_t)upper + 1);
        int hit = 0;
        for (int64_t q = 0; q < j; q++) hit |= out[q] == t;
        out[j] = hit ? upper : t;
    }
}

/* The index of the first of the n sorted values at or above x (here always equal to x). */
static int64_t lower_bound(const int64_t *sorted, int64_t n, int64_t x) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (sorted[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/*
 * The cnt neighbours of node v with biased draws (gd__bias_draws; the list is not taken whole):
 * one pass over the list counts its buffered entries; the draws give codes[j] (class and rank in
 * the class) in draw order and out[0..cnt) the same codes sorted; a second pass, in which the
 * ranks of each class grow, finds the list position of every sorted code (pos); then each draw
 * looks its code up among the sorted ones and reads its entry. Biased sampling reads the whole
 * list, O(degree) per node, where uniform draws read O(fanout) entries.
 */
static void sample_node_biased(const void *indices, int is32, const gd_sampler_t *s, uint64_t key,
                               uint32_t hop, int64_t v, int64_t start, int64_t deg, int64_t cnt,
                               int64_t *out, int64_t *codes, int64_t *pos) {
    const uint8_t *bitmap = s->bias_bitmap;
    int64_t c = 0;
    for (int64_t p = 0; p < deg; p++) c += gd__bias_bit(bitmap, index_at(indices, is32, start + p));
    gd__bias_draws(key, hop, s->replace, s->bias_factor, v, deg, c, cnt, codes, out);
    /* The sorted codes: the buffered ones in [0, nb), the others in [nb, cnt). */
    int64_t nb = 0;
    while (nb < cnt && out[nb] < GD__BIAS_OTHER) nb++;
    int64_t qb = 0, qo = nb, rb = 0, ro = GD__BIAS_OTHER;
    for (int64_t p = 0; p < deg && (qb < nb || qo < cnt); p++) {
        if (gd__bias_bit(bitmap, index_at(indices, is32, start + p))) {
            for (; qb < nb && out[qb] == rb; qb++) pos[qb] = p;
            rb++;
        } else {
            for (; qo < cnt && out[qo] == ro; qo++) pos[qo] = p;
            ro++;
        }
    }
    for (int64_t j = 0; j < cnt; j++) codes[j] = pos[lower_bound(out, cnt, codes[j])];
    for (int64_t j = 0; j < cnt; j++) out[j] = index_at(indices, is32, start + codes[j]);
}

/*
 * The neighbours of one destination node v (degree deg, list at start) into out[0..cnt): all of
 * them in list order when the list is taken whole, else the entries at the positions of
 * gd__sample_positions (or of the biased draws, with codes and pos their scratch), in draw
 * order. The positions are kept in out until the reads replace them.
 */
static void sample_node(const void *indices, int is32, const gd_sampler_t *s, uint64_t key,
                        uint32_t hop, int fanout, int64_t v, int64_t start, int64_t deg,
                        int64_t cnt, int64_t *out, int64_t *codes, int64_t *pos) {
    const int replace = s->replace;
    if (cnt == 0) return;
    if (gd__sample_takes_all(deg, cnt, fanout, replace)) {
        for (int64_t j = 0; j < cnt; j++) out[j] = index_at(indices, is32, start + j);
        return;
    }
    if (s->bias_factor > 1) {
        sample_node_biased(indices, is32, s, key, hop, v, start, deg, cnt, out, codes, pos);
        return;
    }
    gd__sample_positions(key, hop, replace, v, deg, cnt, out);
    for (int64_t j = 0; j < cnt; j++) out[j] = index_at(indices, is32, start + out[j]);
}

static inline int64_t probe(const int64_t *keys, uint64_t mask, int64_t key) {
    uint64_t h = gd__sample_hash((uint64_t)key) & mask;
    while (keys[h] != -1 && keys[h] != key) h = (h + 1) & mask;
    return (int64_t)h;
}

static inline int64_t insert_atomic(int64_t *keys, uint64_t mask, int64_t key) {
    uint64_t h = gd__sample_hash((uint64_t)key) & mask;
    for (;;) {
        int64_t cur = __atomic_load_n(&keys[h], __ATOMIC_RELAXED);
        if (cur == key) return (int64_t)h;
        if (cur == -1) {
            if (__atomic_compare_exchange_n(&keys[h], &cur, key, 0, __ATOMIC_RELAXED,
                                            __ATOMIC_RELAXED) ||
                cur == key)
                return (int64_t)h;
        }
        h = (h + 1) & mask;
    }
}

static inline void atomic_min32(int32_t *p, int32_t v) {
    int32_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v < cur &&
           !__atomic_compare_exchange_n(p, &cur, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

static gd_status duplicate_seed(const int64_t *nodes, int64_t first, int64_t again) {
    return gd__error(GD_ERR_INVALID_ARG,
                     "gd_sample: node id %lld appears twice among the seeds of one minibatch "
                     "(positions %lld and %lld): seeds must be distinct node ids. If they come "
                     "from a dataset split, that split holds the node twice: run `graphdirect info "
                     "--validate` on the dataset and deduplicate the split",
                     (long long)nodes[again], (long long)first, (long long)again);
}

/* Relabel on one thread: a hash map from node id to local id, filled in scan order. */
static gd_status relabel_serial(cpu_scratch *c, uint64_t mask, int64_t *nodes, int64_t nf,
                                int64_t ne, int32_t *indices, int64_t *num_src) {
    int64_t u = 0;
    for (uint64_t i = 0; i <= mask; i++) c->keys[i] = -1;
    for (int64_t p = 0; p < nf; p++) {
        const int64_t slot = probe(c->keys, mask, nodes[p]);
        if (c->keys[slot] == nodes[p]) return duplicate_seed(nodes, c->vals[slot], p);
        c->keys[slot] = nodes[p];
        c->vals[slot] = (int32_t)u++;
    }
    for (int64_t j = 0; j < ne; j++) {
        const int64_t key = c->edge_ids[j];
        const int64_t slot = probe(c->keys, mask, key);
        if (c->keys[slot] != key) {
            c->keys[slot] = key;
            c->vals[slot] = (int32_t)u;
            nodes[u++] = key;
        }
        indices[j] = c->vals[slot];
    }
    *num_src = u;
    return GD_OK;
}

/* Relabel with several threads by smallest positions (see the top of the file). */
static gd_status relabel_parallel(cpu_scratch *c, uint64_t mask, int64_t *nodes, int64_t nf,
                                  int64_t ne, int32_t *indices, int64_t *num_src, int threads) {
    const int64_t P = nf + ne;
    int64_t dup = INT64_MAX;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i <= (int64_t)mask; i++) {
        c->keys[i] = -1;
        c->vals[i] = INT32_MAX;
    }
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t p = 0; p < P; p++) {
        const int64_t key = p < nf ? nodes[p] : c->edge_ids[p - nf];
        const int64_t slot = insert_atomic(c->keys, mask, key);
        atomic_min32(&c->vals[slot], (int32_t)p);
        c->slots[p] = (int32_t)slot;
    }
#pragma omp parallel for num_threads(threads) schedule(static) reduction(min : dup)
    for (int64_t p = 0; p < P; p++) {
        const int first = c->vals[c->slots[p]] == p;
        c->scan[p] = first;
        if (!first && p < nf && p < dup) dup = p;
    }
    if (dup != INT64_MAX) return duplicate_seed(nodes, c->vals[c->slots[dup]], dup);
    const int64_t u = gd__exclusive_scan_i32(c->scan, P, threads);
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t j = 0; j < ne; j++) {
        const int32_t first = c->vals[c->slots[nf + j]];
        indices[j] = c->scan[first];
        if (first == nf + j) nodes[c->scan[nf + j]] = c->edge_ids[j];
    }
    *num_src = u;
    return GD_OK;
}

/*
 * Where the CPU sampler reads the lists: the host indices, each list at indptr[v] (a location of
 * the host tier); or, for a host graph whose list cache was placed over several stores
 * (gd__graph_cache_place: the CPU reference of a placed GPU cache), each list where the store's
 * map says, in its cache, a peer's cache or home, through gd__tier_base_of as the kernels read.
 */
static gd__tier_bases list_bases(const gd_graph_t *g, const int64_t **map) {
    gd__tier_bases b;
    *map = NULL;
    if (g->store && g->store->device < 0 && g->store->loc) {
        *map = g->store->loc;
        return gd__tier_store_bases(g->store);
    }
    memset(&b, 0, sizeof b);
    b.base[GD__TIER_HOST] = g->h_indices;
    b.units[GD__TIER_HOST] = g->num_edges;
    return b;
}

static gd_status cpu_sample(gd_sampler_t *s, const int64_t *seeds, int64_t n, int seeds_on_device,
                            uint64_t key, void *stream, gd_minibatch_t *mb) {
    gd_status st = GD_OK;
    cpu_scratch *c = s->cpu;
    const gd_graph_t *g = s->graph;
    const int64_t *indptr = g->h_indptr, *map;
    const gd__tier_bases tiers = list_bases(g, &map);
    const int is32 = g->indices_dtype == GD_DTYPE_INT32;
    const int threads = s->threads;
    if (n > 0) memcpy(mb->nodes, seeds, (size_t)n * sizeof(int64_t));
    memset(mb->sizes, 0, sizeof mb->sizes);
    mb->sizes[0] = n;
    for (int h = 0; h < s->num_layers; h++) {
        const int64_t nf = mb->sizes[h];
        const int fanout = s->fanouts[h];
        int32_t *bptr = mb->indptr[h];
        const int par = threads > 1 && nf >= 256 ? threads : 1;
#pragma omp parallel for num_threads(par) schedule(static)
        for (int64_t i = 0; i < nf; i++) {
            const int64_t v = mb->nodes[i];
            c->starts[i] = map ? map[v] : gd__loc_make(GD__TIER_HOST, indptr[v]);
            c->degs[i] = indptr[v + 1] - indptr[v];
            bptr[i + 1] = (int32_t)gd__sample_count(c->degs[i], fanout, s->replace);
        }
        bptr[0] = 0;
        for (int64_t i = 0; i < nf; i++) bptr[i + 1] += bptr[i];
        const int64_t ne = bptr[nf];
#pragma omp parallel for num_threads(par) schedule(dynamic, 64)
        for (int64_t i = 0; i < nf; i++) {
            const int64_t off = bptr[i];
            const int biased = s->bias_factor > 1;
            int64_t start = 0;
            const void *list = gd__tier_base_of(tiers, c->starts[i], &start, NULL);
            sample_node(list, is32, s, key, (uint32_t)h, fanout, mb->nodes[i], start, c->degs[i],
                        bptr[i + 1] - off, c->edge_ids + off, biased ? c->bias_codes + off : NULL,
                        biased ? c->bias_pos + off : NULL);
        }
        int64_t cap = 64;
        while (cap < 2 * (nf + ne)) cap <<= 1;
        if (cap > s->table_cap[h]) cap = s->table_cap[h];
        int64_t num_src = 0;
        if (threads > 1 && nf + ne >= PARALLEL_RELABEL_MIN)
            GD_CHECK(relabel_parallel(c, (uint64_t)cap - 1, mb->nodes, nf, ne, mb->indices[h],
                                      &num_src, threads));
        else
            GD_CHECK(
                relabel_serial(c, (uint64_t)cap - 1, mb->nodes, nf, ne, mb->indices[h], &num_src));
        mb->sizes[h + 1] = num_src;
        mb->sizes[GD__SIZES_EDGES + h] = ne;
    }
    return GD_OK;
fail:
    return st;
}

/* ---- the CPU backend */

static gd_status no_device(const char *what) {
    return gd__no_device(what, "use the CPU sampler with host placement");
}

static void cpu_sampler_release(gd_sampler_t *s) {
    cpu_scratch *c = s->cpu;
    if (!c) return;
    gd_free(c->starts);
    gd_free(c->degs);
    gd_free(c->edge_ids);
    gd_free(c->keys);
    gd_free(c->vals);
    gd_free(c->slots);
    gd_free(c->scan);
    gd_free(c->bias_codes);
    gd_free(c->bias_pos);
    gd_free(c);
    s->cpu = NULL;
}

/* The biased draws' scratch, once a factor above 1 asks for it (kept when the bias goes off). */
static gd_status cpu_bias_update(gd_sampler_t *s) {
    gd_status st = GD_OK;
    cpu_scratch *c = s->cpu;
    const size_t e = (size_t)s->max_edges_all;
    if (s->bias_factor <= 1 || c->bias_codes) return GD_OK;
    GD_ALLOC(c->bias_codes, e * sizeof(int64_t), "the biased sampler's draw codes");
    GD_ALLOC(c->bias_pos, e * sizeof(int64_t), "the biased sampler's list positions");
    s->scratch_bytes += (int64_t)(e * 16);
fail:
    return st;
}

static gd_status cpu_sampler_init(gd_sampler_t *s) {
    gd_status st = GD_OK;
    cpu_scratch *c = NULL;
    if (s->backend != GD_SAMPLER_CPU) return no_device("the CUDA sampler");
    c = gd_calloc(1, sizeof *c);
    GD_REQUIRE(c, GD_ERR_NO_MEMORY, "gd_sampler_create: out of memory for the CPU scratch");
    s->cpu = c;
    const size_t d = (size_t)s->max_dst_all, e = (size_t)s->max_edges_all, t = (size_t)s->max_table,
                 p = (size_t)s->max_pos_all;
    GD_ALLOC(c->starts, d * sizeof(int64_t), "the sampler's list starts");
    GD_ALLOC(c->degs, d * sizeof(int64_t), "the sampler's degrees");
    GD_ALLOC(c->edge_ids, e * sizeof(int64_t), "the sampler's neighbour ids");
    GD_ALLOC(c->keys, t * sizeof(int64_t), "the sampler's relabelling table");
    GD_ALLOC(c->vals, t * sizeof(int32_t), "the sampler's relabelling table");
    GD_ALLOC(c->slots, p * sizeof(int32_t), "the sampler's table slots");
    GD_ALLOC(c->scan, (p + 1) * sizeof(int32_t), "the sampler's prefix sums");
    s->scratch_bytes = (int64_t)(d * 16 + e * 8 + t * 12 + p * 8 + 4);
    GD_CHECK(cpu_bias_update(s));
    return GD_OK;
fail:
    cpu_sampler_release(s);
    return st;
}

static gd_status cpu_minibatch_init(const gd_sampler_t *s, gd_minibatch_t *mb) {
    gd_status st = GD_OK;
    GD_ALLOC(mb->base, s->minibatch_bytes, "a minibatch buffer");
    return GD_OK;
fail:
    return st;
}

static void cpu_minibatch_release(gd_minibatch_t *mb) {
    gd_free(mb->base);
    mb->base = NULL;
}

static gd_status cpu_minibatch_wait(gd_minibatch_t *mb) { return GD_OK; }

static gd_status cpu_check_errors(gd_sampler_t *s) { return GD_OK; }

const gd__sample_backend gd__sample_cpu_backend = {
    "cpu",
    cpu_sampler_init,
    cpu_sampler_release,
    cpu_minibatch_init,
    cpu_minibatch_release,
    cpu_sample,
    cpu_minibatch_wait,
    cpu_check_errors,
    cpu_bias_update,
};
