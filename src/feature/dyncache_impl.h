/*
 * The rules of the dynamic cache (dyncache.h) as functions that compile for the CPU and for the
 * GPU alike: the CPU reference (dyncache.c) and the CUDA cache (dyncache_cuda.cu) run the same
 * code on the same state, so the GPU decides exactly what the reference decides (which rows
 * hit, which slot each miss takes, which row goes home), and a test compares them slot for
 * slot. The work splits the way a GPU wants it:
 *   - a hit touches only its own slot (its bit and its users): one thread per row, all at
 *     once (gd__dync_hit), since the rows of a minibatch are distinct;
 *   - a miss takes a free slot or evicts one under the policy's hand, which depends on every
 *     earlier decision: one thread, in the order of the misses (gd__dync_place), on the GPU
 *     while the host reads the same misses from disk, so that its time is hidden behind I/O.
 * The per-row slot lives either in slot_of (the CPU reference) or in a tier store's location
 * map (the GPU cache: the map that the gather reads), so the GPU keeps one int64 per row.
 */
#ifndef GD_FEATURE_DYNCACHE_IMPL_H
#define GD_FEATURE_DYNCACHE_IMPL_H

#include "core/philox.h"
#include "feature/dyncache.h"
#include "feature/tier.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How many random slots `random` tries before it scans for an evictable one. */
#define GD__DYNC_RANDOM_TRIES 64
/* Announcements of one row at most (a uint16 per row). */
#define GD__DYNC_MAX_PENDING 65535
/* The location of a row of the disk tier that has no slot (loc maps only). */
#define GD__DYNC_LOC_ABSENT gd__loc_make(GD__TIER_SSD, GD__LOC_SLOT_MASK)

/* The scalars of a cache: in host memory (CPU), in device memory (GPU). */
typedef struct {
    int64_t num_rows, num_slots;
    int32_t policy;
    uint64_t seed, draws;
    int64_t num_free;
    int64_t hand; /* clock (and random's fallback sweep): the next slot to look at */
    /* sieve: the cached slots, newest (head) to oldest (tail); its hand (-1: at the tail). */
    int64_t head, tail, sieve_hand;
    gd__dyncache_stats stats;
} gd__dync_scalars;

/* Where the state is: every pointer in the memory of the side that runs the functions. */
typedef struct {
    gd__dync_scalars *s;
    int64_t *slot_of;  /* per row: its slot, -1 (NULL when loc holds the slots) */
    int64_t *loc;      /* per row: a location map (tier SSD: slot, or GD__DYNC_LOC_ABSENT) */
    uint16_t *pending; /* per row: announcements not withdrawn (NULL: no window) */
    int64_t *row_of;   /* per slot: its row, -1 */
    uint8_t *state;    /* per slot: gd__slot_state */
    int32_t *users;    /* per slot: minibatches acquired and not released */
    uint8_t *bit;      /* per slot: clock's reference bit, sieve's visited bit */
    int64_t *free_slots;
    int64_t *prev, *next; /* sieve's queue */
} gd__dync;

GD_HOST_DEVICE int64_t gd__dync_slot(const gd__dync *c, int64_t row) {
    if (c->slot_of) return c->slot_of[row];
    const int64_t l = c->loc[row];
    return gd__loc_tier(l) == GD__TIER_SSD && gd__loc_slot(l) != GD__LOC_SLOT_MASK ? gd__loc_slot(l)
                                                                                   : -1;
}

GD_HOST_DEVICE void gd__dync_set_slot(gd__dync *c, int64_t row, int64_t k) {
    if (c->slot_of)
        c->slot_of[row] = k;
    else
        c->loc[row] = k >= 0 ? gd__loc_make(GD__TIER_SSD, k) : GD__DYNC_LOC_ABSENT;
}

/* A valid slot that no minibatch reads and no announced minibatch will read. */
GD_HOST_DEVICE int gd__dync_evictable(const gd__dync *c, int64_t k) {
    return c->state[k] == GD__SLOT_VALID && c->users[k] == 0 &&
           (!c->pending || c->pending[c->row_of[k]] == 0);
}

/* ---- sieve's queue */

GD_HOST_DEVICE void gd__dync_push_head(gd__dync *c, int64_t k) {
    gd__dync_scalars *s = c->s;
    c->prev[k] = -1;
    c->next[k] = s->head;
    if (s->head >= 0) c->prev[s->head] = k;
    s->head = k;
    if (s->tail < 0) s->tail = k;
}

GD_HOST_DEVICE void gd__dync_remove(gd__dync *c, int64_t k) {
    gd__dync_scalars *s = c->s;
    if (c->prev[k] >= 0)
        c->next[c->prev[k]] = c->next[k];
    else
        s->head = c->next[k];
    if (c->next[k] >= 0)
        c->prev[c->next[k]] = c->prev[k];
    else
        s->tail = c->prev[k];
    c->prev[k] = c->next[k] = -1;
}

/* ---- victims: a slot to evict, or -1 when none can be */

GD_HOST_DEVICE int64_t gd__dync_clock_victim(gd__dync *c) {
    gd__dync_scalars *s = c->s;
    /* Two sweeps clear every reference bit of an evictable slot; a third finds nothing new. */
    for (int64_t step = 0; step < 2 * s->num_slots + 1; step++) {
        const int64_t k = s->hand;
        s->hand = (s->hand + 1) % s->num_slots;
        if (!gd__dync_evictable(c, k)) continue;
        if (!c->bit[k]) return k;
        c->bit[k] = 0;
    }
    return -1;
}

/* SIEVE: from the hand (the tail when unset) towards the head, wrapping to the tail. */
GD_HOST_DEVICE int64_t gd__dync_sieve_victim(gd__dync *c) {
    gd__dync_scalars *s = c->s;
    int64_t k = s->sieve_hand >= 0 ? s->sieve_hand : s->tail;
    for (int64_t step = 0; k >= 0 && step < 2 * s->num_slots + 1; step++) {
        if (gd__dync_evictable(c, k)) {
            if (!c->bit[k]) {
                s->sieve_hand = c->prev[k]; /* the hand stays where it evicted (moved past it) */
                return k;
            }
            c->bit[k] = 0;
        }
        k = c->prev[k] >= 0 ? c->prev[k] : s->tail;
    }
    s->sieve_hand = k;
    return -1;
}

GD_HOST_DEVICE int64_t gd__dync_random_victim(gd__dync *c) {
    gd__dync_scalars *s = c->s;
    for (int t = 0; t < GD__DYNC_RANDOM_TRIES; t++) {
        const gd_philox_ctr r = gd_philox(s->seed, (uint32_t)s->draws, (uint32_t)(s->draws >> 32),
                                          0, 0x64796e63u /* "dync" */);
        s->draws++;
        const uint64_t x = ((uint64_t)r.v[1] << 32) | r.v[0];
        const int64_t k = (int64_t)(x % (uint64_t)s->num_slots);
        if (gd__dync_evictable(c, k)) return k;
    }
    /*
     * Few evictable slots: the next one after where the last such search stopped (a sweep that
     * does not start over, so that the searches of a crowded cache stay linear overall).
     */
    for (int64_t i = 0; i < s->num_slots; i++) {
        const int64_t k = s->hand;
        s->hand = (s->hand + 1) % s->num_slots;
        if (gd__dync_evictable(c, k)) return k;
    }
    return -1;
}

/* A slot for a new row: a free one, else a victim sent home; -1 when none can be had. */
GD_HOST_DEVICE int64_t gd__dync_take_slot(gd__dync *c) {
    gd__dync_scalars *s = c->s;
    if (s->num_free > 0) return c->free_slots[--s->num_free];
    if (s->num_slots == 0) return -1;
    int64_t k = -1;
    switch (s->policy) {
    case GD__EVICT_CLOCK:
        k = gd__dync_clock_victim(c);
        break;
    case GD__EVICT_SIEVE:
        k = gd__dync_sieve_victim(c);
        break;
    default:
        k = gd__dync_random_victim(c);
        break;
    }
    if (k < 0) return -1;
    gd__dync_set_slot(c, c->row_of[k], -1);
    c->row_of[k] = -1;
    c->state[k] = GD__SLOT_FREE;
    if (s->policy == GD__EVICT_SIEVE) gd__dync_remove(c, k);
    s->stats.evictions++;
    return k;
}

/*
 * The lookup of one row of a minibatch: its slot (a hit, now in use and referenced), or -1 (a
 * miss). Touches only the row's own slot, so the rows of a minibatch look up concurrently; the
 * caller counts lookups and hits.
 */
GD_HOST_DEVICE int64_t gd__dync_hit(gd__dync *c, int64_t row) {
    const int64_t k = gd__dync_slot(c, row);
    if (k < 0) return -1;
    c->bit[k] = 1; /* referenced (clock), visited (sieve) */
#ifdef __CUDA_ARCH__
    atomicAdd((int *)&c->users[k], 1);
#else
    c->users[k]++;
#endif
    return k;
}

/*
 * A slot for a missed row, after every row of its minibatch has looked up: the slot it is
 * filled into (FILLING, in use), or -1 when it bypasses the cache. *exhausted is set at the
 * first miss without a slot: within one minibatch no slot becomes evictable again, so the
 * misses after it bypass without another search. One caller at a time, in the misses' order.
 */
GD_HOST_DEVICE int64_t gd__dync_place(gd__dync *c, int64_t row, int *exhausted) {
    gd__dync_scalars *s = c->s;
    const int64_t k = *exhausted ? -1 : gd__dync_take_slot(c);
    *exhausted = k < 0;
    if (k < 0) {
        s->stats.bypasses++;
        return -1;
    }
    gd__dync_set_slot(c, row, k);
    c->row_of[k] = row;
    c->state[k] = GD__SLOT_FILLING;
    if (s->policy == GD__EVICT_SIEVE) gd__dync_push_head(c, k);
    /* A new row is referenced under clock (its first use), unvisited under sieve. */
    c->bit[k] = s->policy != GD__EVICT_SIEVE;
    c->users[k]++;
    s->stats.fills++;
    return k;
}

/* The read into slot k (filling row) failed: the slot goes back to FREE, uncached. */
GD_HOST_DEVICE void gd__dync_cancel(gd__dync *c, int64_t row, int64_t k) {
    gd__dync_scalars *s = c->s;
    gd__dync_set_slot(c, row, -1);
    c->row_of[k] = -1;
    c->state[k] = GD__SLOT_FREE;
    c->users[k] = 0; /* any later hit on it came while it was filling: it fails too */
    if (s->policy == GD__EVICT_SIEVE) gd__dync_remove(c, k);
    c->free_slots[s->num_free++] = k;
}

/*
 * Every row uncached and unannounced, every slot FREE and in the free list (slot 0 taken
 * first), the hands unset. Host memory only (the GPU cache sets the same values by kernels).
 */
static inline void gd__dync_init_arrays(gd__dync *c) {
    gd__dync_scalars *s = c->s;
    for (int64_t i = 0; i < s->num_rows; i++) gd__dync_set_slot(c, i, -1);
    if (c->pending)
        for (int64_t i = 0; i < s->num_rows; i++) c->pending[i] = 0;
    for (int64_t k = 0; k < s->num_slots; k++) {
        c->row_of[k] = -1;
        c->state[k] = GD__SLOT_FREE;
        c->users[k] = 0;
        c->bit[k] = 0;
        c->prev[k] = c->next[k] = -1;
        c->free_slots[k] = s->num_slots - 1 - k;
    }
    s->num_free = s->num_slots;
    s->hand = 0;
    s->head = s->tail = s->sieve_hand = -1;
}

#ifdef __cplusplus
}
#endif

#endif /* GD_FEATURE_DYNCACHE_IMPL_H */
