/*
 * The peer tier of the tier store (src/feature/tier.h; issue 14, the `partition` placement). CPU:
 * peer locations round-trip every peer and slots up to 2^48 - 1, and gd__tier_base_of picks each
 * tier's and each peer's array; the slot function gd__tier_cache_slots follows the rule of tier.h
 * and equals what gd__tier_cache_build gives the same rows; on random tables of fixed and of
 * variable rows, two or three stores over the same table, each caching the replicated rows and
 * its share of a random partition of the hot rows under a random budget, with their peers set to
 * the others' cache memory: every map sends a row to its own cache, else to the first peer that
 * caches it, else home (rows of peers stay home until the peer is installed), and locate, read
 * and a kernel-style gather through every store give exactly the table's rows; installing a peer
 * is checked (slot count, range, once) and allocation faults leak nothing. GPU (exits 77 without
 * one): the same with CUDA stores (on several GPUs where they have peer access), whose maps,
 * caches and reads equal the CPU stores'; the peer-access helpers; and a cache exported with
 * gd__cuda_ipc_handle is opened by a child process (this program run again) with
 * gd__cuda_ipc_open, installed as its store's peer and read back whole.
 */
#include "peer_util.h"
#include "tier_util.h"

#ifdef GD_WITH_CUDA
#include "core/cuda.h"
#include "instrument/tier_gather.h"

#include <sys/wait.h>
#endif

#define MAX_GPUS 3

/* ------------------------------------------------------------------ placements */

/* Per GPU, the rows it caches (replicated ones first, then its share) and its budget. */
typedef struct {
    int gpus;
    int64_t *rows[MAX_GPUS];
    int64_t count[MAX_GPUS], budget[MAX_GPUS];
} placement;

static placement make_placement(uint64_t *state, const table *t, int gpus) {
    placement p;
    memset(&p, 0, sizeof p);
    p.gpus = gpus;
    int64_t *perm = malloc(sizeof *perm * (size_t)(2 * t->rows + 1));
    T_ASSERT(perm);
    make_candidates(state, t->rows, perm);
    const int64_t hot = (int64_t)(t_rand(state) % (uint64_t)(t->rows + 1));
    const int64_t replicated = (int64_t)(t_rand(state) % (uint64_t)(hot / 3 + 1));
    for (int g = 0; g < gpus; g++) {
        p.rows[g] = malloc(sizeof(int64_t) * (size_t)(hot + 2));
        T_ASSERT(p.rows[g]);
        for (int64_t k = 0; k < replicated; k++) p.rows[g][p.count[g]++] = perm[k];
    }
    for (int64_t k = replicated; k < hot; k++) {
        const int g = (int)(t_rand(state) % (uint64_t)gpus);
        p.rows[g][p.count[g]++] = perm[k];
    }
    for (int g = 0; g < gpus; g++) {
        int64_t need = 0;
        for (int64_t k = 0; k < p.count[g]; k++) need += row_units(t, p.rows[g][k]);
        /* Now and then a repeated row, which the slot rule passes over. */
        if (p.count[g] > 0 && t_rand(state) % 3 == 0) {
            const int64_t again = p.rows[g][t_rand(state) % (uint64_t)p.count[g]];
            p.rows[g][p.count[g]++] = again;
        }
        const uint64_t k = t_rand(state) % 4;
        p.budget[g] = k == 0   ? 0
                      : k == 1 ? (int64_t)(t_rand(state) % (uint64_t)(need * t->unit_bytes + 1))
                               : (need + 1) * t->unit_bytes;
    }
    free(perm);
    return p;
}

static void free_placement(placement *p) {
    for (int g = 0; g < p->gpus; g++) free(p->rows[g]);
}

/* The lists store g passes: its own rows, and every GPU's as its peers (its own left empty). */
static void placed_lists(const placement *p, int g, gd__tier_cache_rows *own,
                         gd__tier_cache_rows *peers) {
    *own = (gd__tier_cache_rows){p->rows[g], p->count[g], p->budget[g]};
    for (int q = 0; q < p->gpus; q++)
        peers[q] = q == g ? (gd__tier_cache_rows){NULL, 0, 0}
                          : (gd__tier_cache_rows){p->rows[q], p->count[q], p->budget[q]};
}

/* The slot rule of tier.h, walked here independently: slots[k] or -1; returns the slots used. */
static int64_t rule_slots(const table *t, const int64_t *rows, int64_t n, int64_t budget,
                          int64_t *slots, int64_t *count) {
    unsigned char *taken = calloc((size_t)t->rows + 1, 1);
    int64_t left = budget / t->unit_bytes, used = 0;
    T_ASSERT(taken);
    *count = 0;
    for (int64_t k = 0; k < n; k++) {
        const int64_t r = rows[k], u = row_units(t, r);
        slots[k] = -1;
        if (u == 0 || u > left || taken[r]) continue;
        taken[r] = 1;
        slots[k] = used;
        used += u;
        left -= u;
        ++*count;
    }
    free(taken);
    return used;
}

/*
 * The map store g must end with: its own rows in its cache, then each row only peers cache at the
 * first peer caching it, the rest home. peer_units[q] = the slots of q's cache.
 */
static int64_t *expected_map(const table *t, const placement *p, int g, int64_t *peer_units) {
    int64_t *want = malloc(sizeof *want * (size_t)t->rows);
    unsigned char *set = calloc((size_t)t->rows + 1, 1);
    int64_t *slots = malloc(sizeof *slots * (size_t)(t->rows + 2)), count = 0;
    T_ASSERT(want && set && slots);
    for (int64_t r = 0; r < t->rows; r++) want[r] = gd__loc_make(GD__TIER_HOST, row_start(t, r));
    for (int pass = 0; pass <= p->gpus; pass++) {
        const int q = pass == 0 ? g : pass - 1;
        if (pass > 0 && q == g) continue;
        const int64_t units = rule_slots(t, p->rows[q], p->count[q], p->budget[q], slots, &count);
        if (pass > 0) peer_units[q] = units;
        for (int64_t k = 0; k < p->count[q]; k++) {
            const int64_t r = p->rows[q][k];
            if (slots[k] < 0 || set[r]) continue;
            set[r] = 1;
            want[r] = pass == 0 ? gd__loc_make(GD__TIER_GPU_CACHE, slots[k])
                                : gd__loc_make_peer(q, slots[k]);
        }
    }
    free(set);
    free(slots);
    return want;
}

/* ------------------------------------------------------------------ CPU checks */

static void check_encoding(uint64_t *state) {
    T_EQ_INT(GD__TIER_PEER, 4);
    for (int k = 0; k < 2000; k++) {
        const int peer = (int)(t_rand(state) % GD__TIER_MAX_PEERS);
        const int64_t slot = k == 0   ? 0
                             : k == 1 ? GD__LOC_PEER_SLOT_MASK
                                      : (int64_t)(t_rand(state) & (uint64_t)GD__LOC_PEER_SLOT_MASK);
        const int64_t loc = gd__loc_make_peer(peer, slot);
        T_ASSERT(loc >= 0);
        T_EQ_INT(gd__loc_tier(loc), GD__TIER_PEER);
        T_EQ_INT(gd__loc_peer(loc), peer);
        T_EQ_INT(gd__loc_peer_slot(loc), slot);
        T_EQ_INT(gd__loc_slot(loc), ((int64_t)peer << GD__LOC_PEER_SHIFT) | slot);
    }
    /* The kernels' view: each tier's array by its code, each peer's by its index. */
    static char arrays[GD__TIER_COUNT], peers[GD__TIER_MAX_PEERS];
    gd__tier_bases b;
    memset(&b, 0, sizeof b);
    for (int c = 0; c < GD__TIER_COUNT; c++) {
        b.base[c] = &arrays[c];
        b.units[c] = 10 + c;
    }
    for (int q = 0; q < GD__TIER_MAX_PEERS; q++) {
        b.peer_base[q] = &peers[q];
        b.peer_units[q] = 100 + q;
    }
    for (int k = 0; k < 1000; k++) {
        const int c = (int)(t_rand(state) % GD__TIER_COUNT);
        const int q = (int)(t_rand(state) % GD__TIER_MAX_PEERS);
        const int64_t slot = (int64_t)(t_rand(state) & (uint64_t)GD__LOC_PEER_SLOT_MASK);
        const int64_t loc = c == GD__TIER_PEER ? gd__loc_make_peer(q, slot) : gd__loc_make(c, slot);
        int64_t got = -1, units = -1;
        const void *base = gd__tier_base_of(b, loc, &got, &units);
        T_EQ_INT(got, slot);
        T_ASSERT(base == (c == GD__TIER_PEER ? (const void *)&peers[q] : (const void *)&arrays[c]));
        T_EQ_INT(units, c == GD__TIER_PEER ? 100 + q : 10 + c);
        T_ASSERT(gd__tier_base_of(b, loc, &got, NULL) == base);
    }
    /* A peer index past the last peer has no array. */
    int64_t slot = 0, units = -1;
    T_ASSERT(gd__tier_base_of(b, gd__loc_make_peer(GD__TIER_MAX_PEERS, 5), &slot, &units) == NULL);
    T_EQ_INT(units, 0);
    T_EQ_INT(slot, 5);
}

/* gd__tier_cache_slots against the rule, and against what a built cache gives the same rows. */
static void check_slots(uint64_t *state) {
    for (int round = 0; round < 40; round++) {
        table t = make_table(state, round % 2);
        const gd__row_shape shape = shape_of(&t);
        int64_t *cand = malloc(sizeof *cand * (size_t)(2 * t.rows + 1));
        int64_t *want = malloc(sizeof *want * (size_t)(2 * t.rows + 1));
        int64_t *got = malloc(sizeof *got * (size_t)(2 * t.rows + 1));
        T_ASSERT(cand && want && got);
        const int64_t n = make_candidates(state, t.rows, cand);
        const int64_t total = t.units * t.unit_bytes;
        const int64_t budget =
            round % 3 == 0 ? 2 * total + 1 : (int64_t)(t_rand(state) % (uint64_t)(total + 1));
        int64_t count = -1, units = -1, want_count = 0;
        const int64_t want_units = rule_slots(&t, cand, n, budget, want, &want_count);
        T_OK(gd__tier_cache_slots(&shape, cand, n, budget, got, &count, &units));
        T_EQ_INT(count, want_count);
        T_EQ_INT(units, want_units);
        for (int64_t k = 0; k < n; k++) T_EQ_INT(got[k], want[k]);
        gd__tier_store *s = NULL;
        T_OK(gd__tier_store_create(&shape, -1, GD__TIER_HOST, t.data, t.units, &s));
        T_OK(gd__tier_cache_build(s, cand, n, budget));
        T_EQ_INT(s->cache.count, count);
        for (int64_t k = 0, j = 0; k < n; k++) {
            if (got[k] < 0) continue;
            T_EQ_INT(s->cache.rows[j], cand[k]);
            T_EQ_INT(s->cache.slots[j++], got[k]);
        }
        gd__tier_store_destroy(s);
        if (round == 1) {
            gd__row_shape bad = shape;
            int64_t outside = t.rows;
            T_FAILS(gd__tier_cache_slots(&shape, &outside, 1, budget, got, &count, &units),
                    GD_ERR_RANGE, "outside");
            T_FAILS(gd__tier_cache_slots(&shape, cand, n, -1, got, &count, &units),
                    GD_ERR_INVALID_ARG, "budget");
            bad.d_offsets = bad.offsets;
            bad.offsets = NULL;
            T_FAILS(gd__tier_cache_slots(&bad, cand, n, budget, got, &count, &units),
                    GD_ERR_INVALID_ARG, "host offsets");
        }
        free(cand);
        free(want);
        free(got);
        free_table(&t);
    }
}

/*
 * Every row of the table through store s: the map (when there is one), the cache tier's locate
 * and read, and a kernel-style read (gd__tier_base_of on the store's bases, within the bounds of
 * the array) give the table's row. Host memory: the CPU implementation.
 */
static void check_rows_cpu(const table *t, const gd__tier_store *s, const int64_t *want) {
    const int64_t ub = t->unit_bytes, n = t->rows + 1;
    const gd__tier *tier = &s->tier[s->loc ? GD__TIER_GPU_CACHE : s->home];
    const gd__tier_bases b = gd__tier_store_bases(s);
    int64_t *ids = malloc(sizeof *ids * (size_t)n), *slots = malloc(sizeof *slots * (size_t)n);
    int64_t *locs = malloc(sizeof *locs * (size_t)n), total = 0;
    T_ASSERT(ids && slots && locs && tier->ops);
    for (int64_t i = 0; i < n; i++) {
        ids[i] = i < t->rows ? t->rows - 1 - i : -1;
        slots[i] = total;
        total += i < t->rows ? row_units(t, ids[i]) : 1;
    }
    unsigned char *out = malloc((size_t)(total * ub) + 1);
    T_ASSERT(out);
    memset(out, POISON, (size_t)(total * ub));
    T_OK(tier->ops->locate(tier, ids, n, locs, NULL));
    T_OK(tier->ops->read(tier, ids, slots, n, out, NULL));
    T_EQ_INT(locs[n - 1], GD__LOC_NONE);
    for (int64_t b2 = 0; b2 < ub; b2++) T_EQ_INT(out[slots[n - 1] * ub + b2], POISON);
    for (int64_t i = 0; i + 1 < n; i++) {
        const int64_t r = ids[i], u = row_units(t, r);
        T_EQ_INT(locs[i], want[r]);
        if (s->loc) T_EQ_INT(s->loc[r], want[r]);
        const size_t len = (size_t)(u * ub);
        T_ASSERT(memcmp(out + slots[i] * ub, t->data + row_start(t, r) * ub, len) == 0);
        int64_t slot = -1, units = -1;
        const unsigned char *base = gd__tier_base_of(b, want[r], &slot, &units);
        T_ASSERT(base != NULL || u == 0);
        T_ASSERT(slot >= 0 && slot + u <= units);
        if (u) T_ASSERT(memcmp(base + slot * ub, t->data + row_start(t, r) * ub, len) == 0);
    }
    free(out);
    free(ids);
    free(slots);
    free(locs);
}

/* Store g of a placement, built and checked before its peers are installed. */
static gd__tier_store *build_placed(const table *t, const placement *p, int g, int device,
                                    const void *base, const int64_t *d_offsets) {
    gd__row_shape shape = shape_of(t);
    gd__tier_cache_rows own, peers[MAX_GPUS];
    gd__tier_store *s = NULL;
    shape.d_offsets = d_offsets;
    placed_lists(p, g, &own, peers);
    T_OK(gd__tier_store_create(&shape, device, GD__TIER_HOST, base, t->units, &s));
    T_OK(gd__tier_cache_build_placed(s, &own, peers, p->gpus));
    T_EQ_INT(s->cache.num_peers, p->gpus);
    return s;
}

/* The host record of store g: own rows as the rule has them, the rows read from each peer. */
static void check_record(const table *t, const placement *p, int g, const gd__tier_store *s,
                         const int64_t *want, const int64_t *peer_units) {
    int64_t per_peer[MAX_GPUS] = {0}, own = 0;
    for (int64_t r = 0; r < t->rows; r++) {
        const int tier = gd__loc_tier(want[r]);
        T_EQ_INT(gd__tier_cache_holds(s, r), tier == GD__TIER_GPU_CACHE);
        if (tier == GD__TIER_PEER) per_peer[gd__loc_peer(want[r])]++;
        own += tier == GD__TIER_GPU_CACHE;
    }
    T_EQ_INT(s->cache.count, own);
    for (int q = 0; q < p->gpus; q++) {
        T_EQ_INT(s->cache.peer[q].count, per_peer[q]);
        if (q != g) T_EQ_INT(s->cache.peer[q].units, peer_units[q]);
        for (int64_t k = 0; k < s->cache.peer[q].count; k++) {
            const int64_t i = s->cache.peer[q].first + k;
            T_EQ_INT(s->cache.peer_locs[i], want[s->cache.peer_rows[i]]);
        }
    }
}

/* Install the peers of every store: the other stores' cache memory. */
static void install_peers(gd__tier_store **s, int gpus) {
    for (int g = 0; g < gpus; g++)
        for (int q = 0; q < gpus; q++)
            if (q != g) T_OK(gd__tier_store_set_peer(s[g], q, s[q]->cache.mem, s[q]->cache.units));
}

static void check_placed_cpu(uint64_t *state) {
    for (int round = 0; round < 60; round++) {
        table t = make_table(state, round % 2);
        const int gpus = 2 + (round / 2) % 2;
        placement p = make_placement(state, &t, gpus);
        gd__tier_store *s[MAX_GPUS];
        int64_t *want[MAX_GPUS], peer_units[MAX_GPUS][MAX_GPUS];
        for (int g = 0; g < gpus; g++) {
            want[g] = expected_map(&t, &p, g, peer_units[g]);
            s[g] = build_placed(&t, &p, g, -1, t.data, NULL);
            check_record(&t, &p, g, s[g], want[g], peer_units[g]);
            /* Until its peer is installed, a row only a peer caches is read from home. */
            int64_t *home_first = malloc(sizeof(int64_t) * (size_t)t.rows);
            T_ASSERT(home_first);
            for (int64_t r = 0; r < t.rows; r++)
                home_first[r] = gd__loc_tier(want[g][r]) == GD__TIER_PEER
                                    ? gd__loc_make(GD__TIER_HOST, row_start(&t, r))
                                    : want[g][r];
            check_rows_cpu(&t, s[g], home_first);
            free(home_first);
        }
        if (round == 0) {
            const int64_t u = s[0]->cache.peer[1].units;
            T_FAILS(gd__tier_store_set_peer(s[0], 1, s[1]->cache.mem, u + 1), GD_ERR_INVALID_ARG,
                    "placement");
            T_FAILS(gd__tier_store_set_peer(s[0], gpus, s[1]->cache.mem, u), GD_ERR_INVALID_ARG,
                    "not one of");
        }
        install_peers(s, gpus);
        for (int g = 0; g < gpus; g++) {
            const gd__tier_bases b = gd__tier_store_bases(s[g]);
            for (int q = 0; q < gpus; q++) {
                if (q == g || s[q]->cache.units == 0) continue;
                T_ASSERT(b.peer_base[q] == s[q]->cache.mem);
                T_EQ_INT(b.peer_units[q], s[q]->cache.units);
            }
            check_rows_cpu(&t, s[g], want[g]);
        }
        if (s[1]->cache.units > 0)
            T_FAILS(gd__tier_store_set_peer(s[0], 1, s[1]->cache.mem, s[1]->cache.units),
                    GD_ERR_INTERNAL, "once");
        T_FAILS(gd__tier_cache_build_placed(s[0], NULL, NULL, 0), GD_ERR_INTERNAL, "once");
        for (int g = 0; g < gpus; g++) {
            gd__tier_store_destroy(s[g]);
            free(want[g]);
        }
        free_placement(&p);
        free_table(&t);
    }
}

/* Argument errors, and allocation faults at every step of a placed build: a clean error. */
static void check_placed_errors(uint64_t *state) {
    table t = make_table(state, 1);
    placement p = make_placement(state, &t, 2);
    const gd__row_shape shape = shape_of(&t);
    gd__tier_cache_rows own, peers[MAX_GPUS], bad;
    gd__tier_store *s = NULL;
    int64_t outside = t.rows;
    placed_lists(&p, 0, &own, peers);
    T_OK(gd__tier_store_create(&shape, -1, GD__TIER_HOST, t.data, t.units, &s));
    T_FAILS(gd__tier_cache_build_placed(s, &own, peers, GD__TIER_MAX_PEERS + 1), GD_ERR_INVALID_ARG,
            "peers");
    T_FAILS(gd__tier_cache_build_placed(s, NULL, peers, 2), GD_ERR_INVALID_ARG, "own");
    bad = (gd__tier_cache_rows){&outside, 1, 1 << 20};
    T_FAILS(gd__tier_cache_build_placed(s, &own, &bad, 1), GD_ERR_RANGE, "peer 0");
    T_OK(gd__tier_cache_build_placed(s, &own, peers, 2));
    gd__tier_store_destroy(s);
    for (int k = 1; k < 40; k++) {
        int64_t blocks, bytes;
        gd_alloc_stats(&blocks, &bytes);
        gd_fault_set(GD_FAULT_ALLOC, k);
        gd_status st = gd__tier_store_create(&shape, -1, GD__TIER_HOST, t.data, t.units, &s);
        if (st == GD_OK) {
            st = gd__tier_cache_build_placed(s, &own, peers, 2);
            gd__tier_store_destroy(s);
        }
        gd_fault_set(GD_FAULT_ALLOC, 0);
        T_ASSERT(st == GD_OK || st == GD_ERR_NO_MEMORY);
        t_same_live(blocks, bytes, "a placed build", k);
    }
    free_placement(&p);
    free_table(&t);
}

/* ------------------------------------------------------------------ GPU checks */

#ifdef GD_WITH_CUDA

/* The CUDA store's record, map, cache and reads of every row equal the CPU store's. */
static void compare_store(const table *t, const gd__tier_store *cpu, const gd__tier_store *gpu) {
    const int64_t ub = t->unit_bytes, n = t->rows;
    T_EQ_INT(gpu->cache.count, cpu->cache.count);
    T_EQ_INT(gpu->cache.units, cpu->cache.units);
    T_EQ_INT(gpu->cache.peer_count, cpu->cache.peer_count);
    for (int64_t k = 0; k < cpu->cache.count; k++)
        T_EQ_INT(gpu->cache.slots[k], cpu->cache.slots[k]);
    for (int64_t k = 0; k < cpu->cache.peer_count; k++)
        T_EQ_INT(gpu->cache.peer_locs[k], cpu->cache.peer_locs[k]);
    T_ASSERT((gpu->loc == NULL) == (cpu->loc == NULL));
    if (!cpu->loc) return;
    int64_t *map = to_host(gpu->loc, (size_t)gpu->map_bytes);
    for (int64_t r = 0; r < n; r++) T_EQ_INT(map[r], cpu->loc[r]);
    free(map);
    const size_t cache_bytes = (size_t)(cpu->cache.units * ub);
    unsigned char *mem = to_host(gpu->cache.mem, cache_bytes);
    T_ASSERT(memcmp(mem, cpu->cache.mem, cache_bytes) == 0);
    free(mem);
    /* Every row, read through the cache tier from wherever the map says. */
    int64_t *ids = malloc(sizeof *ids * (size_t)(n + 1)),
            *slots = malloc(sizeof *slots * (size_t)(n + 1));
    int64_t total = 0;
    T_ASSERT(ids && slots);
    for (int64_t i = 0; i < n; i++) {
        ids[i] = i;
        slots[i] = total;
        total += row_units(t, i);
    }
    const size_t out_bytes = (size_t)(total * ub);
    unsigned char *want = malloc(out_bytes + 1), *d_out = NULL;
    T_ASSERT(want);
    memset(want, POISON, out_bytes);
    const gd__tier *tc = &cpu->tier[GD__TIER_GPU_CACHE], *tg = &gpu->tier[GD__TIER_GPU_CACHE];
    T_OK(tc->ops->read(tc, ids, slots, n, want, NULL));
    CU(cudaSetDevice(gpu->device));
    int64_t *d_ids = to_device(ids, sizeof *ids * (size_t)n);
    int64_t *d_slots = to_device(slots, sizeof *slots * (size_t)n);
    CU(cudaMalloc((void **)&d_out, out_bytes + 16));
    CU(cudaMemset(d_out, POISON, out_bytes + 16));
    T_OK(tg->ops->read(tg, d_ids, d_slots, n, d_out, NULL));
    CU(cudaDeviceSynchronize());
    unsigned char *out = to_host(d_out, out_bytes);
    for (size_t b = 0; b < out_bytes; b++)
        if (out[b] != want[b])
            T_FAIL_("placed read: byte %zu is 0x%02x, expected 0x%02x", b, out[b], want[b]);
    T_ASSERT(memcmp(want, t->data, out_bytes) == 0);
    free(out);
    free(want);
    free(ids);
    free(slots);
    CU(cudaFree(d_ids));
    CU(cudaFree(d_slots));
    CU(cudaFree(d_out));
}

/*
 * One placement served by CPU stores and by CUDA stores: on GPU g % devices when the GPUs have
 * peer access (enabled here), else all on GPU 0, whose "peers" are then other allocations of
 * the same GPU. The table is in pinned host memory that every GPU maps.
 */
static void compare_placed(uint64_t *state, int variable, int gpus, int devices) {
    table t = make_table(state, variable);
    placement p = make_placement(state, &t, gpus);
    const size_t bytes = (size_t)(t.units * t.unit_bytes);
    void *pinned = NULL, *base = NULL, *d_offsets[MAX_GPUS] = {NULL};
    gd__tier_store *cpu[MAX_GPUS], *gpu[MAX_GPUS];
    CU(cudaHostAlloc(&pinned, bytes ? bytes : 16, cudaHostAllocMapped | cudaHostAllocPortable));
    if (bytes) memcpy(pinned, t.data, bytes);
    CU(cudaHostGetDevicePointer(&base, pinned, 0));
    for (int g = 0; g < gpus; g++) {
        const int dev = g % devices;
        cpu[g] = build_placed(&t, &p, g, -1, t.data, NULL);
        CU(cudaSetDevice(dev));
        if (variable) d_offsets[g] = to_device(t.offsets, sizeof(int64_t) * (size_t)(t.rows + 1));
        gpu[g] = build_placed(&t, &p, g, dev, base, d_offsets[g]);
        compare_store(&t, cpu[g], gpu[g]);
    }
    install_peers(cpu, gpus);
    install_peers(gpu, gpus);
    for (int g = 0; g < gpus; g++) compare_store(&t, cpu[g], gpu[g]);
    for (int g = 0; g < gpus; g++) {
        gd__tier_store_destroy(cpu[g]);
        gd__tier_store_destroy(gpu[g]);
        CU(cudaSetDevice(g % devices));
        if (d_offsets[g]) CU(cudaFree(d_offsets[g]));
    }
    CU(cudaSetDevice(0));
    CU(cudaFreeHost(pinned));
    free_placement(&p);
    free_table(&t);
}

static void check_peer_access(void) {
    const int n = gd_device_count();
    int yes = 0;
    T_OK(gd__cuda_can_access_peer(0, 0, &yes));
    T_EQ_INT(yes, 1);
    T_OK(gd__cuda_enable_peer_access(0, 0));
    T_FAILS(gd__cuda_can_access_peer(0, n, &yes), GD_ERR_RANGE, "does not exist");
    T_FAILS(gd__cuda_enable_peer_access(n, 0), GD_ERR_RANGE, "does not exist");
    if (n < 2) return;
    int raw = 0;
    CU(cudaDeviceCanAccessPeer(&raw, 0, 1));
    T_OK(gd__cuda_can_access_peer(0, 1, &yes));
    T_EQ_INT(yes, raw != 0);
    if (yes) {
        /* Enabling twice is no error: the access asked for holds. */
        T_OK(gd__cuda_enable_peer_access(0, 1));
        T_OK(gd__cuda_enable_peer_access(0, 1));
    } else {
        T_FAILS(gd__cuda_enable_peer_access(0, 1), GD_ERR_CUDA, "no peer access");
    }
}

/* ---- CUDA IPC: a child process opens this process's cache */

/*
 * The table and the rows of the exporting GPU's cache, both from seed, so that the child
 * rebuilds exactly what the parent built. The table is copied to pinned host memory.
 */
static table ipc_table(uint64_t seed, int64_t **rows, int64_t *n, void **pinned, void **base) {
    uint64_t state = seed;
    table t = make_table(&state, (int)(seed & 1));
    const size_t bytes = (size_t)(t.units * t.unit_bytes);
    *rows = malloc(sizeof **rows * (size_t)(2 * t.rows + 1));
    T_ASSERT(*rows);
    *n = make_candidates(&state, t.rows, *rows);
    CU(cudaHostAlloc(pinned, bytes ? bytes : 16, cudaHostAllocMapped));
    if (bytes) memcpy(*pinned, t.data, bytes);
    CU(cudaHostGetDevicePointer(base, *pinned, 0));
    return t;
}

/* The child: open the parent's cache as peer 0 of a store that caches nothing, read every row. */
static int ipc_child(const char *seed_text, const char *hex) {
    const uint64_t seed = strtoull(seed_text, NULL, 10);
    unsigned char handle[GD__CUDA_IPC_HANDLE_BYTES];
    int64_t *rows = NULL, n = 0, units = 0;
    void *pinned = NULL, *base = NULL, *peer = NULL, *d_offsets = NULL;
    for (int i = 0; i < GD__CUDA_IPC_HANDLE_BYTES; i++) {
        unsigned v = 0;
        T_ASSERT(sscanf(hex + 2 * i, "%2x", &v) == 1);
        handle[i] = (unsigned char)v;
    }
    table t = ipc_table(seed, &rows, &n, &pinned, &base);
    if (t.offsets) d_offsets = to_device(t.offsets, sizeof(int64_t) * (size_t)(t.rows + 1));
    gd__row_shape shape = shape_of(&t);
    shape.d_offsets = d_offsets;
    const int64_t budget = 2 * t.units * t.unit_bytes;
    gd__tier_cache_rows own = {NULL, 0, 0}, peers[1] = {{rows, n, budget}};
    gd__tier_store *s = NULL;
    T_OK(gd__tier_store_create(&shape, 0, GD__TIER_HOST, base, t.units, &s));
    T_OK(gd__tier_cache_build_placed(s, &own, peers, 1));
    units = s->cache.peer[0].units;
    T_OK(gd__cuda_ipc_open(0, 0, handle, &peer));
    T_OK(gd__tier_store_set_peer(s, 0, peer, units));
    gd__tier_store *cpu = NULL;
    gd__row_shape cpu_shape = shape_of(&t);
    T_OK(gd__tier_store_create(&cpu_shape, -1, GD__TIER_HOST, t.data, t.units, &cpu));
    T_OK(gd__tier_cache_build(cpu, rows, n, budget));
    /* A CPU store holding what the parent's cache holds reads every row like the child's. */
    gd__tier_store *cpu_peer = NULL;
    T_OK(gd__tier_store_create(&cpu_shape, -1, GD__TIER_HOST, t.data, t.units, &cpu_peer));
    T_OK(gd__tier_cache_build_placed(cpu_peer, &own, peers, 1));
    T_OK(gd__tier_store_set_peer(cpu_peer, 0, cpu->cache.mem, cpu->cache.units));
    if (cpu_peer->loc) compare_store(&t, cpu_peer, s);
    gd__tier_store_destroy(s);
    gd__tier_store_destroy(cpu_peer);
    gd__tier_store_destroy(cpu);
    T_OK(gd__cuda_ipc_close(0, peer));
    if (d_offsets) CU(cudaFree(d_offsets));
    CU(cudaFreeHost(pinned));
    free(rows);
    free_table(&t);
    printf("child: read %lld rows from the parent's cache of %lld slots\n", (long long)t.rows,
           (long long)units);
    return 0;
}

static void check_ipc(const char *self, uint64_t *state) {
    char hex[2 * GD__CUDA_IPC_HANDLE_BYTES + 1], seed_text[32];
    unsigned char handle[GD__CUDA_IPC_HANDLE_BYTES];
    char host[64];
    for (int round = 0; round < 4; round++) {
        /* A seed whose table has at least one non-empty row, so the parent's cache exists. */
        uint64_t seed = 0;
        int64_t *rows = NULL, n = 0;
        void *pinned = NULL, *base = NULL;
        table t;
        for (;;) {
            seed = t_rand(state) % 1000000000u;
            t = ipc_table(seed, &rows, &n, &pinned, &base);
            if (t.units > 0) break;
            CU(cudaFreeHost(pinned));
            free(rows);
            free_table(&t);
        }
        void *d_offsets =
            t.offsets ? to_device(t.offsets, sizeof(int64_t) * (size_t)(t.rows + 1)) : NULL;
        gd__row_shape dshape = shape_of(&t);
        dshape.d_offsets = d_offsets;
        gd__tier_store *s = NULL;
        T_OK(gd__tier_store_create(&dshape, 0, GD__TIER_HOST, base, t.units, &s));
        T_OK(gd__tier_cache_build(s, rows, n, 2 * t.units * t.unit_bytes));
        T_ASSERT(s->cache.mem != NULL);
        T_OK(gd__cuda_ipc_handle(0, s->cache.mem, handle));
        for (int i = 0; i < GD__CUDA_IPC_HANDLE_BYTES; i++) sprintf(hex + 2 * i, "%02x", handle[i]);
        snprintf(seed_text, sizeof seed_text, "%llu", (unsigned long long)seed);
        fflush(NULL);
        const pid_t pid = fork();
        T_ASSERT(pid >= 0);
        if (pid == 0) {
            execl(self, self, "--ipc-child", seed_text, hex, (char *)NULL);
            _exit(127);
        }
        int status = 0;
        T_ASSERT(waitpid(pid, &status, 0) == pid);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            T_FAIL_("the IPC child (seed %s) failed: status 0x%x", seed_text, status);
        gd__tier_store_destroy(s);
        if (d_offsets) CU(cudaFree(d_offsets));
        CU(cudaFreeHost(pinned));
        free(rows);
        free_table(&t);
    }
    T_FAILS(gd__cuda_ipc_handle(0, NULL, handle), GD_ERR_INVALID_ARG, "NULL");
    T_FAILS(gd__cuda_ipc_handle(0, host, handle), GD_ERR_INVALID_ARG, "cudaMalloc");
    T_OK(gd__cuda_ipc_close(0, NULL));
}

static void check_gpu(const char *self, uint64_t *state) {
    check_peer_access();
    const int devices = t_peer_devices(MAX_GPUS);
    fprintf(stderr, "placed CUDA stores on %d GPU(s)\n", devices);
    for (int round = 0; round < 24; round++)
        compare_placed(state, round % 2, 2 + (round / 2) % 2, devices);
    check_ipc(self, state);
}
#endif

int main(int argc, char **argv) {
#ifdef GD_WITH_CUDA
    if (argc == 4 && strcmp(argv[1], "--ipc-child") == 0) return ipc_child(argv[2], argv[3]);
#endif
    (void)argc;
    uint64_t state = t_seed();
    check_encoding(&state);
    check_slots(&state);
    check_placed_cpu(&state);
    check_placed_errors(&state);
    fprintf(stderr, "CPU checks passed\n");
#ifdef GD_WITH_CUDA
    if (gd_device_count() == 0) {
        fprintf(stderr, "no GPU: the CUDA peer tier checks are skipped\n");
        return GD_TEST_SKIP;
    }
    check_gpu(argv[0], &state);
    /*
     * bench scale's per-tier gather (own cache, a peer's cache, host) on random rows of random
     * widths, every tier's rows checked against the table; GPU 1 is the peer where there is one.
     */
    for (int k = 0; k < 3; k++) {
        const int64_t widths[3] = {512, 4, 1000};
        gd_instrument_tier_gbs t;
        const int64_t rows = 1000 + (int64_t)(t_rand(&state) % 5000);
        T_OK(gd_instrument_tier_gather(0, gd_device_count() > 1 ? 1 : 0, rows, widths[k],
                                       1 + (int64_t)(t_rand(&state) % 9000), 2, &t));
        T_ASSERT(t.local_gbs > 0 && t.peer_gbs > 0 && t.host_gbs > 0);
    }
    printf("the CUDA peer tier equals the CPU one, and a child process reads a cache over IPC\n");
    return 0;
#else
    (void)argv;
    fprintf(stderr, "built without CUDA: the CUDA peer tier checks are skipped\n");
    return GD_TEST_SKIP;
#endif
}
