/*
 * The dynamic cache's CPU reference (dyncache.h): slot states, users, window protection and the
 * three eviction policies. Every call checks its whole input before it changes anything, so a
 * refused call leaves the cache as it was.
 */
#include "feature/dyncache.h"

#include "core/philox.h"

#include <string.h>

const char *const gd__evict_names[GD__EVICT_COUNT] = {"clock", "sieve", "random"};

/* How many random slots `random` tries before it scans for an evictable one. */
#define RANDOM_TRIES 64
#define MAX_PENDING 65535

struct gd__dyncache {
    int64_t num_rows, num_slots;
    gd__evict_policy policy;
    uint64_t seed, draws;
    int64_t *slot_of;  /* per row: its slot, -1 */
    uint16_t *pending; /* per row: announcements not withdrawn */
    int64_t *row_of;   /* per slot: its row, -1 */
    uint8_t *state;    /* per slot: gd__slot_state */
    int32_t *users;    /* per slot: minibatches acquired and not released */
    uint8_t *bit;      /* per slot: clock's reference bit, sieve's visited bit */
    int64_t *free_slots, num_free;
    int64_t hand; /* clock (and random's fallback sweep): the next slot to look at */
    /* sieve: the cached slots, newest (head) to oldest (tail); its hand (-1: at the tail). */
    int64_t *prev, *next, head, tail, sieve_hand;
    gd__dyncache_stats stats;
};

void gd__dyncache_destroy(gd__dyncache *c) {
    if (!c) return;
    gd_free(c->slot_of);
    gd_free(c->pending);
    gd_free(c->row_of);
    gd_free(c->state);
    gd_free(c->users);
    gd_free(c->bit);
    gd_free(c->free_slots);
    gd_free(c->prev);
    gd_free(c->next);
    gd_free(c);
}

gd_status gd__dyncache_create(int64_t num_rows, int64_t num_slots, gd__evict_policy policy,
                              uint64_t seed, gd__dyncache **out) {
    gd_status st = GD_OK;
    gd__dyncache *c = NULL;
    *out = NULL;
    GD_REQUIRE(num_rows >= 0 && num_slots >= 0, GD_ERR_INVALID_ARG,
               "dynamic cache: %lld rows and %lld slots; use 0 or more of each",
               (long long)num_rows, (long long)num_slots);
    GD_REQUIRE((int)policy >= 0 && policy < GD__EVICT_COUNT, GD_ERR_INVALID_ARG,
               "dynamic cache: eviction policy %d; use clock, sieve or random", (int)policy);
    GD_ALLOC(c, sizeof *c, "the dynamic cache");
    memset(c, 0, sizeof *c);
    c->num_rows = num_rows;
    c->num_slots = num_slots;
    c->policy = policy;
    c->seed = seed;
    const size_t r = (size_t)(num_rows > 0 ? num_rows : 1), s = (size_t)(num_slots ? num_slots : 1);
    GD_ALLOC(c->slot_of, r * sizeof *c->slot_of, "the dynamic cache's row map");
    GD_ALLOC(c->pending, r * sizeof *c->pending, "the dynamic cache's window counts");
    GD_ALLOC(c->row_of, s * sizeof *c->row_of, "the dynamic cache's slot rows");
    GD_ALLOC(c->state, s, "the dynamic cache's slot states");
    GD_ALLOC(c->users, s * sizeof *c->users, "the dynamic cache's slot users");
    GD_ALLOC(c->bit, s, "the dynamic cache's policy bits");
    GD_ALLOC(c->free_slots, s * sizeof *c->free_slots, "the dynamic cache's free slots");
    GD_ALLOC(c->prev, s * sizeof *c->prev, "the dynamic cache's queue");
    GD_ALLOC(c->next, s * sizeof *c->next, "the dynamic cache's queue");
    for (int64_t i = 0; i < num_rows; i++) c->slot_of[i] = -1;
    memset(c->pending, 0, r * sizeof *c->pending);
    memset(c->state, GD__SLOT_FREE, s);
    memset(c->users, 0, s * sizeof *c->users);
    memset(c->bit, 0, s);
    for (int64_t k = 0; k < num_slots; k++) {
        c->row_of[k] = -1;
        c->prev[k] = c->next[k] = -1;
        c->free_slots[k] = num_slots - 1 - k; /* slot 0 first */
    }
    c->num_free = num_slots;
    c->head = c->tail = c->sieve_hand = -1;
    *out = c;
    return GD_OK;
fail:
    gd__dyncache_destroy(c);
    return st;
}

/* Every row in range (and, with distinct, none twice); nothing is changed. */
static gd_status check_rows(const gd__dyncache *c, const int64_t *rows, int64_t n, int distinct,
                            const char *who) {
    gd_status st = GD_OK;
    int64_t *sorted = NULL;
    GD_REQUIRE(n >= 0 && (rows || n == 0), GD_ERR_INVALID_ARG, "dynamic cache %s: %lld rows at %p",
               who, (long long)n, (const void *)rows);
    for (int64_t i = 0; i < n; i++)
        GD_REQUIRE(rows[i] >= 0 && rows[i] < c->num_rows, GD_ERR_RANGE,
                   "dynamic cache %s: row %lld (position %lld) is outside [0, %lld)", who,
                   (long long)rows[i], (long long)i, (long long)c->num_rows);
    if (!distinct || n < 2) return GD_OK;
    GD_ALLOC(sorted, (size_t)n * sizeof *sorted, "the dynamic cache's duplicate check");
    memcpy(sorted, rows, (size_t)n * sizeof *sorted);
    gd__sort_i64(sorted, n);
    for (int64_t i = 1; i < n; i++)
        GD_REQUIRE(sorted[i] != sorted[i - 1], GD_ERR_INVALID_ARG,
                   "dynamic cache %s: row %lld is asked for twice; deduplicate the minibatch's "
                   "rows first",
                   who, (long long)sorted[i]);
fail:
    gd_free(sorted);
    return st;
}

gd_status gd__dyncache_announce(gd__dyncache *c, const int64_t *rows, int64_t n) {
    gd_status st = GD_OK;
    GD_CHECK(check_rows(c, rows, n, 1, "announce"));
    for (int64_t i = 0; i < n; i++)
        GD_REQUIRE(c->pending[rows[i]] < MAX_PENDING, GD_ERR_INVALID_ARG,
                   "dynamic cache announce: row %lld is announced by %d minibatches already; "
                   "withdraw those that were acquired",
                   (long long)rows[i], MAX_PENDING);
    for (int64_t i = 0; i < n; i++) c->pending[rows[i]]++;
fail:
    return st;
}

gd_status gd__dyncache_withdraw(gd__dyncache *c, const int64_t *rows, int64_t n) {
    gd_status st = GD_OK;
    GD_CHECK(check_rows(c, rows, n, 1, "withdraw"));
    for (int64_t i = 0; i < n; i++)
        GD_REQUIRE(c->pending[rows[i]] > 0, GD_ERR_INVALID_ARG,
                   "dynamic cache withdraw: row %lld has no announcement to withdraw",
                   (long long)rows[i]);
    for (int64_t i = 0; i < n; i++) c->pending[rows[i]]--;
fail:
    return st;
}

/* A valid slot that no minibatch reads and no announced minibatch will read. */
static int evictable(const gd__dyncache *c, int64_t k) {
    return c->state[k] == GD__SLOT_VALID && c->users[k] == 0 && c->pending[c->row_of[k]] == 0;
}

/* ---- sieve's queue */

static void queue_push_head(gd__dyncache *c, int64_t k) {
    c->prev[k] = -1;
    c->next[k] = c->head;
    if (c->head >= 0) c->prev[c->head] = k;
    c->head = k;
    if (c->tail < 0) c->tail = k;
}

static void queue_remove(gd__dyncache *c, int64_t k) {
    if (c->prev[k] >= 0)
        c->next[c->prev[k]] = c->next[k];
    else
        c->head = c->next[k];
    if (c->next[k] >= 0)
        c->prev[c->next[k]] = c->prev[k];
    else
        c->tail = c->prev[k];
    c->prev[k] = c->next[k] = -1;
}

/* ---- victims: a slot to evict, or -1 when none can be */

static int64_t clock_victim(gd__dyncache *c) {
    /* Two sweeps clear every reference bit of an evictable slot; a third finds nothing new. */
    for (int64_t step = 0; step < 2 * c->num_slots + 1; step++) {
        const int64_t k = c->hand;
        c->hand = (c->hand + 1) % c->num_slots;
        if (!evictable(c, k)) continue;
        if (!c->bit[k]) return k;
        c->bit[k] = 0;
    }
    return -1;
}

/* SIEVE: from the hand (the tail when unset) towards the head, wrapping to the tail. */
static int64_t sieve_victim(gd__dyncache *c) {
    int64_t k = c->sieve_hand >= 0 ? c->sieve_hand : c->tail;
    for (int64_t step = 0; k >= 0 && step < 2 * c->num_slots + 1; step++) {
        if (evictable(c, k)) {
            if (!c->bit[k]) {
                c->sieve_hand = c->prev[k]; /* the hand stays where it evicted (moved past it) */
                return k;
            }
            c->bit[k] = 0;
        }
        k = c->prev[k] >= 0 ? c->prev[k] : c->tail;
    }
    c->sieve_hand = k;
    return -1;
}

static int64_t random_victim(gd__dyncache *c) {
    for (int t = 0; t < RANDOM_TRIES; t++) {
        const gd_philox_ctr r = gd_philox(c->seed, (uint32_t)c->draws, (uint32_t)(c->draws >> 32),
                                          0, 0x64796e63u /* "dync" */);
        c->draws++;
        const uint64_t x = ((uint64_t)r.v[1] << 32) | r.v[0];
        const int64_t k = (int64_t)(x % (uint64_t)c->num_slots);
        if (evictable(c, k)) return k;
    }
    /*
     * Few evictable slots: the next one after where the last such search stopped (a sweep that
     * does not start over, so that the searches of a crowded cache stay linear overall).
     */
    for (int64_t i = 0; i < c->num_slots; i++) {
        const int64_t k = c->hand;
        c->hand = (c->hand + 1) % c->num_slots;
        if (evictable(c, k)) return k;
    }
    return -1;
}

/* A slot for a new row: a free one, else a victim sent home; -1 when none can be had. */
static int64_t take_slot(gd__dyncache *c) {
    if (c->num_free > 0) return c->free_slots[--c->num_free];
    if (c->num_slots == 0) return -1;
    int64_t k = -1;
    switch (c->policy) {
    case GD__EVICT_CLOCK:
        k = clock_victim(c);
        break;
    case GD__EVICT_SIEVE:
        k = sieve_victim(c);
        break;
    default:
        k = random_victim(c);
        break;
    }
    if (k < 0) return -1;
    c->slot_of[c->row_of[k]] = -1;
    c->row_of[k] = -1;
    c->state[k] = GD__SLOT_FREE;
    if (c->policy == GD__EVICT_SIEVE) queue_remove(c, k);
    c->stats.evictions++;
    return k;
}

gd_status gd__dyncache_acquire(gd__dyncache *c, const int64_t *rows, int64_t n, int64_t *slots,
                               gd__dyncache_fill *fills, int64_t *num_fills, int64_t *bypasses) {
    gd_status st = GD_OK;
    GD_REQUIRE(c && slots && fills && num_fills && bypasses, GD_ERR_INVALID_ARG,
               "dynamic cache acquire: NULL argument");
    *num_fills = *bypasses = 0;
    GD_CHECK(check_rows(c, rows, n, 1, "acquire"));
    /*
     * Hits first, so that they are in use before any miss looks for a victim: a minibatch
     * never evicts a row it is about to read (the GPU version looks up every row, then places
     * the misses, the same way).
     */
    for (int64_t i = 0; i < n; i++) {
        const int64_t k = c->slot_of[rows[i]];
        c->stats.lookups++;
        slots[i] = k;
        if (k < 0) continue;
        c->stats.hits++;
        c->bit[k] = 1; /* referenced (clock), visited (sieve) */
        c->users[k]++;
    }
    /* Within one call no slot becomes evictable again: after the first miss without a slot,
     * the rest bypass without another search. */
    int exhausted = 0;
    for (int64_t i = 0; i < n; i++) {
        if (slots[i] >= 0) continue;
        const int64_t row = rows[i], k = exhausted ? -1 : take_slot(c);
        exhausted = k < 0;
        if (k < 0) {
            (*bypasses)++;
            c->stats.bypasses++;
            continue;
        }
        c->slot_of[row] = k;
        c->row_of[k] = row;
        c->state[k] = GD__SLOT_FILLING;
        if (c->policy == GD__EVICT_SIEVE) queue_push_head(c, k);
        /* A new row is referenced under clock (its first use), unvisited under sieve. */
        c->bit[k] = c->policy != GD__EVICT_SIEVE;
        c->users[k]++;
        slots[i] = k;
        fills[(*num_fills)++] = (gd__dyncache_fill){row, k};
        c->stats.fills++;
    }
fail:
    return st;
}

/* fills[0..n) are slots being filled with their rows (nothing is changed otherwise). */
static gd_status check_fills(const gd__dyncache *c, const gd__dyncache_fill *fills, int64_t n,
                             const char *who) {
    gd_status st = GD_OK;
    GD_REQUIRE(c && (fills || n == 0) && n >= 0, GD_ERR_INVALID_ARG,
               "dynamic cache %s: NULL argument or %lld fills", who, (long long)n);
    for (int64_t i = 0; i < n; i++) {
        const int64_t k = fills[i].slot;
        GD_REQUIRE(k >= 0 && k < c->num_slots && c->state[k] == GD__SLOT_FILLING &&
                       c->row_of[k] == fills[i].row,
                   GD_ERR_INVALID_ARG,
                   "dynamic cache %s: slot %lld is not being filled with row %lld", who,
                   (long long)k, (long long)fills[i].row);
    }
fail:
    return st;
}

gd_status gd__dyncache_filled(gd__dyncache *c, const gd__dyncache_fill *fills, int64_t n) {
    gd_status st = GD_OK;
    GD_CHECK(check_fills(c, fills, n, "filled"));
    for (int64_t i = 0; i < n; i++) c->state[fills[i].slot] = GD__SLOT_VALID;
fail:
    return st;
}

gd_status gd__dyncache_cancel(gd__dyncache *c, const gd__dyncache_fill *fills, int64_t n) {
    gd_status st = GD_OK;
    GD_CHECK(check_fills(c, fills, n, "cancel"));
    for (int64_t i = 0; i < n; i++) {
        const int64_t k = fills[i].slot;
        c->slot_of[fills[i].row] = -1;
        c->row_of[k] = -1;
        c->state[k] = GD__SLOT_FREE;
        c->users[k] = 0; /* any later hit on it came while it was filling: it fails too */
        if (c->policy == GD__EVICT_SIEVE) queue_remove(c, k);
        c->free_slots[c->num_free++] = k;
    }
fail:
    return st;
}

gd_status gd__dyncache_release(gd__dyncache *c, const int64_t *slots, int64_t n) {
    gd_status st = GD_OK;
    GD_REQUIRE(c && (slots || n == 0) && n >= 0, GD_ERR_INVALID_ARG,
               "dynamic cache release: NULL argument or %lld slots", (long long)n);
    for (int64_t i = 0; i < n; i++)
        GD_REQUIRE(slots[i] < c->num_slots && (slots[i] < 0 || c->users[slots[i]] > 0),
                   GD_ERR_INVALID_ARG,
                   "dynamic cache release: slot %lld (position %lld) is not in use",
                   (long long)slots[i], (long long)i);
    for (int64_t i = 0; i < n; i++)
        if (slots[i] >= 0) c->users[slots[i]]--;
fail:
    return st;
}

int64_t gd__dyncache_slot_of(const gd__dyncache *c, int64_t row) {
    return row >= 0 && row < c->num_rows ? c->slot_of[row] : -1;
}

int64_t gd__dyncache_row_of(const gd__dyncache *c, int64_t slot) {
    return slot >= 0 && slot < c->num_slots ? c->row_of[slot] : -1;
}

gd__slot_state gd__dyncache_state(const gd__dyncache *c, int64_t slot) {
    return slot >= 0 && slot < c->num_slots ? (gd__slot_state)c->state[slot] : GD__SLOT_FREE;
}

int32_t gd__dyncache_users(const gd__dyncache *c, int64_t slot) {
    return slot >= 0 && slot < c->num_slots ? c->users[slot] : 0;
}

int gd__dyncache_protected(const gd__dyncache *c, int64_t row) {
    return row >= 0 && row < c->num_rows && c->pending[row] > 0;
}

gd__dyncache_stats gd__dyncache_get_stats(const gd__dyncache *c) {
    return c->stats;
}
