/*
 * The tier store's common part and its CPU implementation (tier.h). The common part creates a
 * store over a table, plans the GPU cache (which rows get which slots under the budget) and
 * keeps the host's record of what the cache holds; the implementations allocate, fill and
 * publish. The CPU implementation keeps every array in host memory: builds without CUDA use it,
 * and the tests compare the CUDA implementation (tier_cuda.cu) with it on random tables.
 */
#include "tier.h"

#include <string.h>

static const char *const tier_names[GD__TIER_COUNT] = {"pinned host", "gpu cache", "gpu", "ssd",
                                                       "peer gpu"};

static int variable_rows(const gd__row_shape *shape) {
    return shape->offsets || shape->d_offsets;
}

gd_status gd__tier_store_create(const gd__row_shape *shape, int device, int home, const void *base,
                                int64_t home_units, gd__tier_store **out) {
    gd_status st = GD_OK;
    gd__tier_store *s = NULL;
    const gd__tier_impl *impl = &gd__tier_cpu_impl;
    GD_REQUIRE(out && shape, GD_ERR_INVALID_ARG, "tier store: NULL %s", out ? "shape" : "output");
    *out = NULL;
    GD_REQUIRE(shape->rows >= 0 && shape->unit_bytes > 0 && home_units >= 0, GD_ERR_INVALID_ARG,
               "tier store: a table of %lld rows in %lld slots of %lld bytes: the counts must not "
               "be negative and a slot must have bytes",
               (long long)shape->rows, (long long)home_units, (long long)shape->unit_bytes);
    GD_REQUIRE(home == GD__TIER_HOST || home == GD__TIER_GPU, GD_ERR_INVALID_ARG,
               "tier store: tier %d cannot hold a whole table; use the host or the GPU tier", home);
    GD_REQUIRE(base || home_units == 0, GD_ERR_INVALID_ARG,
               "tier store: NULL base for a table of %lld slots", (long long)home_units);
    if (device >= 0) {
#ifdef GD_WITH_CUDA
        impl = &gd__tier_cuda_impl;
#else
        GD_REQUIRE(0, GD_ERR_NO_DEVICE,
                   "a tier store on GPU %d needs a GPU, but graphdirect was built without CUDA: "
                   "install the CUDA toolkit and rebuild, or keep the table in host memory",
                   device);
#endif
    }
    /* The implementation reads its own copy of the offsets in its loops and kernels. */
    GD_REQUIRE(!variable_rows(shape) || (device >= 0 ? shape->d_offsets : shape->offsets),
               GD_ERR_INVALID_ARG,
               "tier store: variable rows without the %s offsets its %s "
               "implementation reads",
               device >= 0 ? "device" : "host", impl->name);
    s = gd_calloc(1, sizeof *s);
    GD_REQUIRE(s, GD_ERR_NO_MEMORY, "tier store: out of memory for the handle");
    s->shape = *shape;
    s->device = device;
    s->impl = impl;
    s->home = home;
    s->tier[home] = (gd__tier){impl->table_ops,
                               tier_names[home],
                               home,
                               base,
                               home_units,
                               home_units * shape->unit_bytes,
                               s};
    *out = s;
    return GD_OK;
fail:
    return st;
}

static void cache_clear(gd__tier_store *s) {
    if (s->cache.mem || s->loc) s->impl->release(s);
    gd_free(s->cache.rows);
    gd_free(s->cache.slots);
    gd_free(s->cache.resident);
    gd_free(s->cache.peer_rows);
    gd_free(s->cache.peer_locs);
    gd_free(s->cache.in_gpu);
    memset(&s->cache, 0, sizeof s->cache);
    memset(&s->tier[GD__TIER_GPU_CACHE], 0, sizeof s->tier[GD__TIER_GPU_CACHE]);
    s->loc = NULL;
    s->cache.mem = NULL;
    s->map_bytes = 0;
}

void gd__tier_store_destroy(gd__tier_store *s) {
    if (!s) return;
    cache_clear(s);
    gd_free(s);
}

/*
 * The slot rule of tier.h over a bitmap of the rows taken so far (clear at the start), one row
 * after another: slots[k] = the first slot of rows[k] if it is taken, -1 if not; *count and
 * *units = the rows taken and the slots they use. A row is taken when it is not empty, not taken
 * already, and fits the slots left. The callers have checked the rows' range. units[k], where
 * given, is rows[k]'s slot count (read in place of the offsets); first is the candidate to start
 * from, with *count and *units holding what the candidates before it took.
 */
static void assign_serial(const int64_t *offsets, const int64_t *rows, const int64_t *units_of,
                          int64_t first, int64_t n, int64_t slots_left, unsigned char *bits,
                          int64_t *slots, int64_t *count, int64_t *units) {
    int64_t taken = *count, used = *units;
    for (int64_t k = first; k < n; k++) {
        if (slots_left == 0) {
            /* Full: no row fits any more (every row takes a unit or more), so the rest of the
             * candidates (on papers, tens of millions of random reads of the offsets) are
             * skipped without a look. */
            for (; k < n; k++) slots[k] = -1;
            break;
        }
        const int64_t r = rows[k], u = units_of ? units_of[k] : gd__row_units(offsets, r);
        slots[k] = -1;
        if (u == 0 || u > slots_left || ((bits[r >> 3] >> (r & 7)) & 1)) continue;
        bits[r >> 3] |= (unsigned char)(1u << (r & 7));
        slots[k] = used;
        taken++;
        used += u;
        slots_left -= u;
    }
    *count = taken;
    *units = used;
}

void gd__tier_assign_serial(const int64_t *offsets, const int64_t *rows, int64_t n,
                            int64_t slots_left, unsigned char *bits, int64_t *slots,
                            int64_t *count, int64_t *units) {
    *count = *units = 0;
    assign_serial(offsets, rows, NULL, 0, n, slots_left, bits, slots, count, units);
}

/*
 * The same rule on every core. Until the first candidate that does not fit, every distinct row
 * is taken and its slot is the units of the candidates before it: a prefix sum. So the threads
 * read each candidate's units (the offsets' random reads, the slow part on papers' 57M cached
 * lists) into slots[], sum them by chunk, and the candidates before the first that overflows
 * get their slots and their bits in parallel; the rest (what fills the gaps) follows the serial
 * rule over the units already read. A row given twice among the first candidates (found by the
 * bits) sends the whole walk to the serial rule, which passes over the second one.
 */
#define ASSIGN_MAX_CHUNKS 64
#define ASSIGN_MIN_CHUNK ((int64_t)1 << 16)

static void assign_slots(const int64_t *offsets, const int64_t *rows, int64_t n, int64_t slots_left,
                         unsigned char *bits, int64_t *slots, int64_t *count, int64_t *units) {
    int chunks = gd__num_threads();
    if (chunks > ASSIGN_MAX_CHUNKS) chunks = ASSIGN_MAX_CHUNKS;
    if (chunks > n / ASSIGN_MIN_CHUNK) chunks = (int)(n / ASSIGN_MIN_CHUNK);
    if (chunks < 2 || slots_left == 0) {
        gd__tier_assign_serial(offsets, rows, n, slots_left, bits, slots, count, units);
        return;
    }
    const int64_t per = (n + chunks - 1) / chunks;
    int64_t sum[ASSIGN_MAX_CHUNKS + 1], nonempty[ASSIGN_MAX_CHUNKS + 1];
    int dup = 0;
    /* Pass 1: each candidate's units into slots[], each chunk's total. */
#pragma omp parallel for schedule(static, 1) num_threads(chunks)
    for (int c = 0; c < chunks; c++) {
        const int64_t lo = c * per, hi = lo + per < n ? lo + per : n;
        int64_t s = 0, ne = 0;
        for (int64_t k = lo; k < hi; k++) {
            const int64_t u = gd__row_units(offsets, rows[k]);
            slots[k] = u;
            s += u;
            ne += u > 0;
        }
        sum[c + 1] = s;
        nonempty[c + 1] = ne;
    }
    /* The first candidate whose units overflow the slots: stop (n if all fit). */
    int64_t stop = n, before = 0, taken = 0;
    sum[0] = nonempty[0] = 0;
    int full = chunks; /* the chunk holding stop */
    for (int c = 0; c < chunks; c++) {
        if (sum[c] + sum[c + 1] > slots_left) {
            full = c;
            break;
        }
        sum[c + 1] += sum[c];
        nonempty[c + 1] += nonempty[c];
    }
    if (full < chunks) {
        const int64_t lo = full * per;
        int64_t s = sum[full], ne = nonempty[full], k = lo;
        for (; k < n && s + slots[k] <= slots_left; k++) {
            s += slots[k];
            ne += slots[k] > 0;
        }
        stop = k;
        before = s;
        taken = ne;
    } else {
        before = sum[chunks];
        taken = nonempty[chunks];
    }
    /* Pass 2: the candidates before stop take their slots and their bits. */
#pragma omp parallel for schedule(static, 1) num_threads(chunks) reduction(| : dup)
    for (int c = 0; c < chunks; c++) {
        const int64_t lo = c * per, hi = lo + per < stop ? lo + per : stop;
        int64_t at = c <= full ? sum[c] : 0; /* past full: no candidate */
        for (int64_t k = lo; k < hi; k++) {
            const int64_t r = rows[k], u = slots[k];
            if (u == 0) {
                slots[k] = -1;
                continue;
            }
            const unsigned char bit = (unsigned char)(1u << (r & 7));
            dup |= (__atomic_fetch_or(&bits[r >> 3], bit, __ATOMIC_RELAXED) & bit) != 0;
            slots[k] = at;
            at += u;
        }
    }
    if (dup) {
        /* A row given twice: undo the bits (the bitmap was clear) and walk serially. */
#pragma omp parallel for schedule(static) num_threads(chunks)
        for (int64_t k = 0; k < stop; k++)
            __atomic_and_fetch(&bits[rows[k] >> 3], (unsigned char)~(1u << (rows[k] & 7)),
                               __ATOMIC_RELAXED);
        gd__tier_assign_serial(offsets, rows, n, slots_left, bits, slots, count, units);
        return;
    }
    *count = taken;
    *units = before;
    if (stop < n)
        assign_serial(offsets, rows, slots, stop, n, slots_left - before, bits, slots, count,
                      units);
}

static gd_status check_rows(const gd__row_shape *shape, const int64_t *rows, int64_t n,
                            int64_t budget) {
    gd_status st = GD_OK;
    GD_REQUIRE(n >= 0 && budget >= 0 && (n == 0 || rows), GD_ERR_INVALID_ARG,
               "tier store: %lld candidates, budget %lld bytes: pass the rows to cache and a "
               "budget of 0 or more",
               (long long)n, (long long)budget);
    GD_REQUIRE(!variable_rows(shape) || shape->offsets, GD_ERR_INVALID_ARG,
               "tier store: planning a cache of variable rows needs their host offsets");
    int64_t bad = n; /* the first candidate out of range (n: none), found by every core */
    const int64_t limit = shape->rows;
#pragma omp parallel for schedule(static) reduction(min : bad) num_threads(gd__num_threads()) \
    if (n > 65536)
    for (int64_t k = 0; k < n; k++)
        if ((rows[k] < 0 || rows[k] >= limit) && k < bad) bad = k;
    GD_REQUIRE(bad == n, GD_ERR_RANGE,
               "tier store: candidate %lld is row %lld, outside the table's rows [0, %lld)",
               (long long)bad, bad < n ? (long long)rows[bad] : 0LL, (long long)limit);
fail:
    return st;
}

gd_status gd__tier_cache_slots(const gd__row_shape *shape, const int64_t *rows, int64_t n,
                               int64_t budget, int64_t *slots, int64_t *count, int64_t *units) {
    gd_status st = GD_OK;
    unsigned char *bits = NULL;
    GD_REQUIRE(shape && (slots || n == 0) && count && units, GD_ERR_INVALID_ARG,
               "tier cache slots: NULL shape or output");
    GD_REQUIRE(shape->rows >= 0 && shape->unit_bytes > 0, GD_ERR_INVALID_ARG,
               "tier cache slots: a table of %lld rows of %lld-byte slots", (long long)shape->rows,
               (long long)shape->unit_bytes);
    GD_CHECK(check_rows(shape, rows, n, budget));
    GD_ALLOC(bits, (size_t)((shape->rows + 7) / 8), "the slot assignment's record of its rows");
    memset(bits, 0, (size_t)((shape->rows + 7) / 8));
    assign_slots(shape->offsets, rows, n, budget / shape->unit_bytes, bits, slots, count, units);
fail:
    gd_free(bits);
    return st;
}

/*
 * The taken candidates (slots[i] >= 0) in candidate order into rows and their slots into
 * out_slots, by chunks on every core (papers: 111M candidates); returns how many.
 */
static int64_t compact_taken(const int64_t *cand, const int64_t *slots, int64_t n, int64_t *rows,
                             int64_t *out_slots) {
    int chunks = gd__num_threads();
    if (chunks > ASSIGN_MAX_CHUNKS) chunks = ASSIGN_MAX_CHUNKS;
    if (chunks > n / ASSIGN_MIN_CHUNK) chunks = (int)(n / ASSIGN_MIN_CHUNK);
    if (chunks < 1) chunks = 1;
    const int64_t per = (n + chunks - 1) / chunks;
    int64_t first[ASSIGN_MAX_CHUNKS + 1];
    first[0] = 0;
#pragma omp parallel num_threads(chunks)
    {
#pragma omp for schedule(static, 1)
        for (int c = 0; c < chunks; c++) {
            const int64_t lo = c * per, hi = lo + per < n ? lo + per : n;
            int64_t m = 0;
            for (int64_t i = lo; i < hi; i++) m += slots[i] >= 0;
            first[c + 1] = m;
        }
#pragma omp single
        for (int c = 0; c < chunks; c++) first[c + 1] += first[c];
#pragma omp for schedule(static, 1)
        for (int c = 0; c < chunks; c++) {
            const int64_t lo = c * per, hi = lo + per < n ? lo + per : n;
            int64_t at = first[c];
            for (int64_t i = lo; i < hi; i++) {
                if (slots[i] < 0) continue;
                rows[at] = cand[i];
                out_slots[at++] = slots[i];
            }
        }
    }
    return first[chunks];
}

/* The local part of a cache: which candidates get slots under the budget, recorded on the host. */
static gd_status plan_local(gd__tier_store *s, const int64_t *cand, int64_t n, int64_t budget) {
    gd_status st = GD_OK;
    gd__tier_cache *c = &s->cache;
    const size_t bitmap = (size_t)((s->shape.rows + 7) / 8);
    int64_t *slots = NULL, count = 0, units = 0, k = 0;
    GD_CHECK(check_rows(&s->shape, cand, n, budget));
    c->budget = budget;
    GD_ALLOC(c->resident, bitmap, "the GPU cache's record of its rows");
    memset(c->resident, 0, bitmap);
    GD_ALLOC(slots, (size_t)n * sizeof(int64_t), "the GPU cache's slot assignment");
    assign_slots(s->shape.offsets, cand, n, budget / s->shape.unit_bytes, c->resident, slots,
                 &count, &units);
    GD_ALLOC(c->rows, (size_t)count * sizeof(int64_t), "the GPU cache's rows");
    GD_ALLOC(c->slots, (size_t)count * sizeof(int64_t), "the GPU cache's slots");
    k = compact_taken(cand, slots, n, c->rows, c->slots);
    GD_REQUIRE(k == count, GD_ERR_INTERNAL, "tier store: %lld rows slotted, %lld counted",
               (long long)k, (long long)count);
    c->count = count;
    c->units = units;
fail:
    gd_free(slots);
    return st;
}

/*
 * The peers' part of a placed cache. Peer q's slots are what its own build gives its rows (the
 * same rule on the same rows and budget, so no slot list crosses between GPUs); this store reads
 * from q the rows q caches and it does not, each row from the first peer that holds it.
 */
static gd_status plan_peers(gd__tier_store *s, const gd__tier_cache_rows *peers, int num_peers) {
    gd_status st = GD_OK;
    gd__tier_cache *c = &s->cache;
    const size_t bitmap = (size_t)((s->shape.rows + 7) / 8);
    int64_t total = 0, most = 0, m = 0, *slots = NULL;
    unsigned char *seen = NULL, *taken = NULL;
    for (int q = 0; q < num_peers; q++) {
        st = check_rows(&s->shape, peers[q].rows, peers[q].count, peers[q].budget);
        if (st != GD_OK) {
            gd__error_context(st, "the rows of peer %d", q);
            goto fail;
        }
        total += peers[q].count;
        most = peers[q].count > most ? peers[q].count : most;
    }
    GD_ALLOC(seen, bitmap, "the rows read from peers");
    memcpy(seen, c->resident, bitmap);
    GD_ALLOC(taken, bitmap, "a peer's record of its rows");
    GD_ALLOC(slots, (size_t)most * sizeof(int64_t), "a peer's slot assignment");
    GD_ALLOC(c->peer_rows, (size_t)total * sizeof(int64_t), "the rows read from peers");
    GD_ALLOC(c->peer_locs, (size_t)total * sizeof(int64_t), "the peer locations");
    c->num_peers = num_peers;
    for (int q = 0; q < num_peers; q++) {
        const gd__tier_cache_rows *p = &peers[q];
        int64_t count = 0, units = 0;
        memset(taken, 0, bitmap);
        assign_slots(s->shape.offsets, p->rows, p->count, p->budget / s->shape.unit_bytes, taken,
                     slots, &count, &units);
        GD_REQUIRE(units - 1 <= GD__LOC_PEER_SLOT_MASK, GD_ERR_RANGE,
                   "tier store: peer %d's cache of %lld slots exceeds the 2^48 slots of a peer "
                   "location",
                   q, (long long)units);
        c->peer[q] = (gd__tier_peer){NULL, units, m, 0};
        for (int64_t k = 0; k < p->count; k++) {
            const int64_t r = p->rows[k];
            if (slots[k] < 0 || ((seen[r >> 3] >> (r & 7)) & 1)) continue;
            seen[r >> 3] |= (unsigned char)(1u << (r & 7));
            c->peer_rows[m] = r;
            c->peer_locs[m++] = gd__loc_make_peer(q, slots[k]);
        }
        c->peer[q].count = m - c->peer[q].first;
    }
    c->peer_count = m;
    c->in_gpu = seen;
    seen = NULL;
fail:
    gd_free(seen);
    gd_free(taken);
    gd_free(slots);
    return st;
}

/* Allocate the map and the slots, fill them and publish the local rows (peers: on install). */
static gd_status cache_publish(gd__tier_store *s) {
    gd_status st = GD_OK;
    const gd__tier_cache *c = &s->cache;
    s->map_bytes = s->shape.rows * (int64_t)sizeof(int64_t);
    GD_CHECK(s->impl->cache_fill(s));
    s->tier[GD__TIER_GPU_CACHE] = (gd__tier){s->impl->cache_ops,
                                             tier_names[GD__TIER_GPU_CACHE],
                                             GD__TIER_GPU_CACHE,
                                             c->mem,
                                             c->units,
                                             c->units * s->shape.unit_bytes,
                                             s};
    GD_DEBUG("tier store: GPU cache of %lld rows, %lld slots (%lld of %lld budget bytes), "
             "over the %s tier, %lld rows from %d peers",
             (long long)c->count, (long long)c->units, (long long)(c->units * s->shape.unit_bytes),
             (long long)c->budget, tier_names[s->home], (long long)c->peer_count, c->num_peers);
fail:
    return st;
}

gd_status gd__tier_cache_build_placed(gd__tier_store *s, const gd__tier_cache_rows *own,
                                      const gd__tier_cache_rows *peers, int num_peers) {
    gd_status st = GD_OK;
    /* A second build is refused before anything is touched: the first cache stays usable. */
    if (s->cache.resident || s->loc || s->cache.num_peers)
        return gd__error(GD_ERR_INTERNAL, "tier store: its cache is built once");
    GD_REQUIRE(own && num_peers >= 0 && num_peers <= GD__TIER_MAX_PEERS &&
                   (peers || num_peers == 0),
               GD_ERR_INVALID_ARG,
               "tier store: a placed cache takes its own rows and 0 to %d peers, not %d%s",
               GD__TIER_MAX_PEERS, num_peers, own ? "" : " (own rows NULL)");
    GD_CHECK(plan_local(s, own->rows, own->count, own->budget));
    if (num_peers > 0) GD_CHECK(plan_peers(s, peers, num_peers));
    if (s->cache.count == 0 && s->cache.peer_count == 0) {
        /* Nothing to map: the store reads every row at home, and its peers may still install
         * (empty) caches, so their slot counts stay. */
        gd__tier_peer keep[GD__TIER_MAX_PEERS];
        memcpy(keep, s->cache.peer, sizeof keep);
        cache_clear(s);
        memcpy(s->cache.peer, keep, sizeof keep);
        s->cache.num_peers = num_peers;
        return GD_OK;
    }
    GD_CHECK(cache_publish(s));
    return GD_OK;
fail:
    cache_clear(s);
    return st;
}

/* The hottest rows that fit: a placement of one GPU, without peers. */
gd_status gd__tier_cache_build(gd__tier_store *s, const int64_t *candidates, int64_t n,
                               int64_t budget) {
    const gd__tier_cache_rows own = {candidates, n, budget};
    return gd__tier_cache_build_placed(s, &own, NULL, 0);
}

gd_status gd__tier_store_set_peer(gd__tier_store *s, int peer, const void *base, int64_t units) {
    gd_status st = GD_OK;
    gd__tier_peer *p = NULL;
    GD_REQUIRE(s && peer >= 0 && peer < s->cache.num_peers, GD_ERR_INVALID_ARG,
               "tier store: peer %d is not one of the %d peers of its placed cache", peer,
               s ? s->cache.num_peers : 0);
    p = &s->cache.peer[peer];
    GD_REQUIRE(units == p->units, GD_ERR_INVALID_ARG,
               "tier store: peer %d's cache has %lld slots, but its placement gives it %lld: "
               "every GPU must build its cache from the same placement and budgets",
               peer, (long long)units, (long long)p->units);
    GD_REQUIRE(base || units == 0, GD_ERR_INVALID_ARG,
               "tier store: NULL base for peer %d's cache of %lld slots", peer, (long long)units);
    GD_REQUIRE(!p->base, GD_ERR_INTERNAL, "tier store: peer %d is installed once", peer);
    /* The base first, then the map: a reader that finds a peer location finds its base. A
     * failed publish keeps the base, since some rows may already point at it. */
    p->base = base;
    if (p->count > 0)
        GD_CHECK(s->impl->publish(s, s->cache.peer_rows + p->first, s->cache.peer_locs + p->first,
                                  p->count));
fail:
    return st;
}

int gd__tier_cache_holds(const gd__tier_store *s, int64_t r) {
    if (!s || !s->cache.resident || r < 0 || r >= s->shape.rows) return 0;
    return (s->cache.resident[r >> 3] >> (r & 7)) & 1;
}

gd_status gd__tier_map_update(gd__tier_store *s, const int64_t *rows, const int64_t *locs,
                              int64_t n, void *stream) {
    if (!s->loc)
        return gd__error(GD_ERR_INTERNAL, "tier store: a map update before the map exists");
    if (n <= 0) return GD_OK;
    return s->impl->map_update(s, rows, locs, n, stream);
}

gd__tier_bases gd__tier_store_bases(const gd__tier_store *s) {
    gd__tier_bases b;
    memset(&b, 0, sizeof b);
    if (!s) return b;
    for (int c = 0; c < GD__TIER_COUNT; c++) {
        if (!s->tier[c].ops) continue;
        b.base[c] = s->tier[c].base;
        b.units[c] = s->tier[c].units;
    }
    for (int q = 0; q < s->cache.num_peers; q++) {
        if (!s->cache.peer[q].base) continue;
        b.peer_base[q] = s->cache.peer[q].base;
        b.peer_units[q] = s->cache.peer[q].units;
    }
    b.home = s->home;
    return b;
}

/* ------------------------------------------------------- the CPU implementation */

/*
 * Where row r is as tier t serves it: the GPU cache answers from the map (the home tier while
 * it holds nothing), a table tier holds every row at its home slot.
 */
static int64_t cpu_locate_row(const gd__tier *t, int64_t r) {
    const gd__tier_store *s = t->store;
    if (r < 0 || r >= s->shape.rows) return GD__LOC_NONE;
    if (t->code == GD__TIER_GPU_CACHE && s->loc) return s->loc[r];
    const int code = t->code == GD__TIER_GPU_CACHE ? s->home : t->code;
    return gd__loc_make(code, gd__row_start(s->shape.offsets, r));
}

static gd_status cpu_locate(const gd__tier *t, const int64_t *rows, int64_t n, int64_t *locs,
                            void *stream) {
    for (int64_t i = 0; i < n; i++) locs[i] = cpu_locate_row(t, rows[i]);
    return GD_OK;
}

static gd_status cpu_read(const gd__tier *t, const int64_t *rows, const int64_t *dst_slots,
                          int64_t n, void *dst, void *stream) {
    const gd__tier_store *s = t->store;
    const size_t ub = (size_t)s->shape.unit_bytes;
    if (!dst_slots && s->shape.offsets)
        return gd__error(GD_ERR_INVALID_ARG,
                         "tier read: variable rows need their destination slots");
    const gd__tier_bases b = gd__tier_store_bases(s);
    for (int64_t i = 0; i < n; i++) {
        const int64_t loc = cpu_locate_row(t, rows[i]);
        if (loc == GD__LOC_NONE) continue;
        int64_t slot = 0;
        const unsigned char *src = gd__tier_base_of(b, loc, &slot, NULL);
        const int64_t to = dst_slots ? dst_slots[i] : i;
        memcpy((unsigned char *)dst + (size_t)to * ub, src + (size_t)slot * ub,
               (size_t)gd__row_units(s->shape.offsets, rows[i]) * ub);
    }
    return GD_OK;
}

static gd_status cpu_map_update(gd__tier_store *s, const int64_t *rows, const int64_t *locs,
                                int64_t n, void *stream) {
    for (int64_t i = 0; i < n; i++)
        if (rows[i] >= 0 && rows[i] < s->shape.rows) s->loc[rows[i]] = locs[i];
    return GD_OK;
}

static gd_status cpu_publish(gd__tier_store *s, const int64_t *rows, const int64_t *locs,
                             int64_t n) {
    return cpu_map_update(s, rows, locs, n, NULL);
}

static gd_status cpu_cache_fill(gd__tier_store *s) {
    gd_status st = GD_OK;
    const gd__tier_cache *c = &s->cache;
    const int64_t rows = s->shape.rows;
    int64_t *locs = NULL;
    GD_ALLOC(s->loc, (size_t)rows * sizeof(int64_t), "the location map");
    for (int64_t r = 0; r < rows; r++)
        s->loc[r] = gd__loc_make(s->home, gd__row_start(s->shape.offsets, r));
    GD_ALLOC(s->cache.mem, (size_t)(c->units * s->shape.unit_bytes), "the cache's slots");
    GD_CHECK(s->tier[s->home].ops->read(&s->tier[s->home], c->rows, c->slots, c->count,
                                        s->cache.mem, NULL));
    GD_ALLOC(locs, (size_t)c->count * sizeof(int64_t), "the cached rows' locations");
    for (int64_t k = 0; k < c->count; k++) locs[k] = gd__loc_make(GD__TIER_GPU_CACHE, c->slots[k]);
    GD_CHECK(cpu_map_update(s, c->rows, locs, c->count, NULL));
fail:
    gd_free(locs);
    return st;
}

static void cpu_release(gd__tier_store *s) {
    gd_free(s->loc);
    gd_free(s->cache.mem);
    s->loc = NULL;
    s->cache.mem = NULL;
}

static const gd__tier_ops cpu_ops = {cpu_locate, cpu_read};

const gd__tier_impl gd__tier_cpu_impl = {
    "cpu", &cpu_ops, &cpu_ops, cpu_cache_fill, cpu_map_update, cpu_publish, cpu_release,
};
