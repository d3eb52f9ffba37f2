/*
 * The dynamic cache's CPU reference (dyncache.h): slot states, users, window protection and the
 * three eviction policies. Every call checks its whole input before it changes anything, so a
 * refused call leaves the cache as it was.
 */
#include "feature/dyncache.h"

#include "feature/dyncache_impl.h"

#include <string.h>

const char *const gd__evict_names[GD__EVICT_COUNT] = {"clock", "sieve", "random"};

struct gd__dyncache {
    gd__dync_scalars sc;
    gd__dync c; /* the arrays, and c.s = &sc */
};

void gd__dyncache_destroy(gd__dyncache *c) {
    if (!c) return;
    gd_free(c->c.slot_of);
    gd_free(c->c.pending);
    gd_free(c->c.row_of);
    gd_free(c->c.state);
    gd_free(c->c.users);
    gd_free(c->c.bit);
    gd_free(c->c.free_slots);
    gd_free(c->c.prev);
    gd_free(c->c.next);
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
    gd__dync *a = &c->c;
    a->s = &c->sc;
    c->sc.num_rows = num_rows;
    c->sc.num_slots = num_slots;
    c->sc.policy = (int32_t)policy;
    c->sc.seed = seed;
    const size_t r = (size_t)(num_rows > 0 ? num_rows : 1), s = (size_t)(num_slots ? num_slots : 1);
    GD_ALLOC(a->slot_of, r * sizeof *a->slot_of, "the dynamic cache's row map");
    GD_ALLOC(a->pending, r * sizeof *a->pending, "the dynamic cache's window counts");
    GD_ALLOC(a->row_of, s * sizeof *a->row_of, "the dynamic cache's slot rows");
    GD_ALLOC(a->state, s, "the dynamic cache's slot states");
    GD_ALLOC(a->users, s * sizeof *a->users, "the dynamic cache's slot users");
    GD_ALLOC(a->bit, s, "the dynamic cache's policy bits");
    GD_ALLOC(a->free_slots, s * sizeof *a->free_slots, "the dynamic cache's free slots");
    GD_ALLOC(a->prev, s * sizeof *a->prev, "the dynamic cache's queue");
    GD_ALLOC(a->next, s * sizeof *a->next, "the dynamic cache's queue");
    gd__dync_init_arrays(a);
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
        GD_REQUIRE(rows[i] >= 0 && rows[i] < c->sc.num_rows, GD_ERR_RANGE,
                   "dynamic cache %s: row %lld (position %lld) is outside [0, %lld)", who,
                   (long long)rows[i], (long long)i, (long long)c->sc.num_rows);
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
        GD_REQUIRE(c->c.pending[rows[i]] < GD__DYNC_MAX_PENDING, GD_ERR_INVALID_ARG,
                   "dynamic cache announce: row %lld is announced by %d minibatches already; "
                   "withdraw those that were acquired",
                   (long long)rows[i], GD__DYNC_MAX_PENDING);
    for (int64_t i = 0; i < n; i++) c->c.pending[rows[i]]++;
fail:
    return st;
}

gd_status gd__dyncache_withdraw(gd__dyncache *c, const int64_t *rows, int64_t n) {
    gd_status st = GD_OK;
    GD_CHECK(check_rows(c, rows, n, 1, "withdraw"));
    for (int64_t i = 0; i < n; i++)
        GD_REQUIRE(c->c.pending[rows[i]] > 0, GD_ERR_INVALID_ARG,
                   "dynamic cache withdraw: row %lld has no announcement to withdraw",
                   (long long)rows[i]);
    for (int64_t i = 0; i < n; i++) c->c.pending[rows[i]]--;
fail:
    return st;
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
     * never evicts a row it is about to read (the GPU looks up every row, then places the
     * misses, the same way).
     */
    for (int64_t i = 0; i < n; i++) {
        slots[i] = gd__dync_hit(&c->c, rows[i]);
        c->sc.stats.lookups++;
        c->sc.stats.hits += slots[i] >= 0;
    }
    int exhausted = 0;
    for (int64_t i = 0; i < n; i++) {
        if (slots[i] >= 0) continue;
        slots[i] = gd__dync_place(&c->c, rows[i], &exhausted);
        if (slots[i] < 0)
            (*bypasses)++;
        else
            fills[(*num_fills)++] = (gd__dyncache_fill){rows[i], slots[i]};
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
        GD_REQUIRE(k >= 0 && k < c->sc.num_slots && c->c.state[k] == GD__SLOT_FILLING &&
                       c->c.row_of[k] == fills[i].row,
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
    for (int64_t i = 0; i < n; i++) c->c.state[fills[i].slot] = GD__SLOT_VALID;
fail:
    return st;
}

gd_status gd__dyncache_cancel(gd__dyncache *c, const gd__dyncache_fill *fills, int64_t n) {
    gd_status st = GD_OK;
    GD_CHECK(check_fills(c, fills, n, "cancel"));
    for (int64_t i = 0; i < n; i++) gd__dync_cancel(&c->c, fills[i].row, fills[i].slot);
fail:
    return st;
}

gd_status gd__dyncache_release(gd__dyncache *c, const int64_t *slots, int64_t n) {
    gd_status st = GD_OK;
    GD_REQUIRE(c && (slots || n == 0) && n >= 0, GD_ERR_INVALID_ARG,
               "dynamic cache release: NULL argument or %lld slots", (long long)n);
    for (int64_t i = 0; i < n; i++)
        GD_REQUIRE(slots[i] < c->sc.num_slots && (slots[i] < 0 || c->c.users[slots[i]] > 0),
                   GD_ERR_INVALID_ARG,
                   "dynamic cache release: slot %lld (position %lld) is not in use",
                   (long long)slots[i], (long long)i);
    for (int64_t i = 0; i < n; i++)
        if (slots[i] >= 0) c->c.users[slots[i]]--;
fail:
    return st;
}

int64_t gd__dyncache_slot_of(const gd__dyncache *c, int64_t row) {
    return row >= 0 && row < c->sc.num_rows ? c->c.slot_of[row] : -1;
}

int64_t gd__dyncache_row_of(const gd__dyncache *c, int64_t slot) {
    return slot >= 0 && slot < c->sc.num_slots ? c->c.row_of[slot] : -1;
}

gd__slot_state gd__dyncache_state(const gd__dyncache *c, int64_t slot) {
    return slot >= 0 && slot < c->sc.num_slots ? (gd__slot_state)c->c.state[slot] : GD__SLOT_FREE;
}

int32_t gd__dyncache_users(const gd__dyncache *c, int64_t slot) {
    return slot >= 0 && slot < c->sc.num_slots ? c->c.users[slot] : 0;
}

int gd__dyncache_bit(const gd__dyncache *c, int64_t slot) {
    return slot >= 0 && slot < c->sc.num_slots ? c->c.bit[slot] : 0;
}

int gd__dyncache_protected(const gd__dyncache *c, int64_t row) {
    return row >= 0 && row < c->sc.num_rows && c->c.pending[row] > 0;
}

gd__dyncache_stats gd__dyncache_get_stats(const gd__dyncache *c) {
    return c->sc.stats;
}
