/*
 * The dynamic cache's CPU reference (src/feature/dyncache.h; issue 16, item 3):
 *   - the policies' orders on hand-worked cases: clock's second chance, SIEVE's hand (the
 *     example of the SIEVE paper's rule: a visited row survives, the hand stays), random's
 *     determinism per seed;
 *   - the rules: an announced (window) row is not evicted, a row in use is not evicted, a row
 *     being filled is hit, not loaded again, and a row with no slot to be had bypasses the cache;
 *   - random pipelines (every policy, window depths 0, 4 and 8, two minibatches in flight) with
 *     the invariants checked after every call against an independent model of what is in use and
 *     announced;
 *   - refusals change nothing, and every allocation of create fails cleanly.
 */
#include "test.h"

#include "feature/dyncache.h"

#include <stdio.h>
#include <string.h>

#define MAX_N 256

typedef struct {
    int64_t slots[MAX_N], nf, nb;
    gd__dyncache_fill fills[MAX_N];
} acq;

/* acquire, then mark the fills landed (unless keep_filling); returns the call's result. */
static gd_status get(gd__dyncache *c, const int64_t *rows, int64_t n, acq *a, int keep_filling) {
    gd_status st = gd__dyncache_acquire(c, rows, n, a->slots, a->fills, &a->nf, &a->nb);
    if (st == GD_OK && !keep_filling) T_OK(gd__dyncache_filled(c, a->fills, a->nf));
    return st;
}

static void names(void) {
    T_EQ_INT(gd__name_index(gd__evict_names, GD__EVICT_COUNT, "clock"), GD__EVICT_CLOCK);
    T_EQ_INT(gd__name_index(gd__evict_names, GD__EVICT_COUNT, "sieve"), GD__EVICT_SIEVE);
    T_EQ_INT(gd__name_index(gd__evict_names, GD__EVICT_COUNT, "random"), GD__EVICT_RANDOM);
    T_ASSERT(gd__name_index(gd__evict_names, GD__EVICT_COUNT, "lru") < 0);
}

/* clock: rows enter referenced; a full sweep clears them, the next evicts in slot order. */
static void clock_order(void) {
    gd__dyncache *c;
    acq a;
    const int64_t abc[3] = {10, 11, 12}, d = 13, e = 14;
    T_OK(gd__dyncache_create(100, 3, GD__EVICT_CLOCK, 1, &c));
    T_OK(get(c, abc, 3, &a, 0));
    T_EQ_INT(a.nf, 3);
    T_OK(gd__dyncache_release(c, a.slots, 3));
    const int64_t slot_a = gd__dyncache_slot_of(c, 10), slot_b = gd__dyncache_slot_of(c, 11);
    T_OK(get(c, &d, 1, &a, 0));
    T_EQ_INT(a.fills[0].slot, slot_a); /* every bit cleared, then A (slot 0) goes */
    T_EQ_INT(gd__dyncache_slot_of(c, 10), -1);
    T_OK(gd__dyncache_release(c, a.slots, 1));
    T_OK(get(c, &e, 1, &a, 0));
    T_EQ_INT(a.fills[0].slot, slot_b); /* the hand moved on: B */
    T_OK(gd__dyncache_release(c, a.slots, 1));
    const gd__dyncache_stats s = gd__dyncache_get_stats(c);
    T_EQ_INT(s.lookups, 5);
    T_EQ_INT(s.fills, 5);
    T_EQ_INT(s.evictions, 2);
    gd__dyncache_destroy(c);
}

/*
 * sieve: A, B, C in (C newest); A is hit; D evicts B (A was visited: cleared and passed over),
 * the hand stays at C, and E evicts C. A survives both.
 */
static void sieve_order(void) {
    gd__dyncache *c;
    acq a;
    const int64_t abc[3] = {1, 2, 3}, ra = 1, d = 4, e = 5;
    T_OK(gd__dyncache_create(10, 3, GD__EVICT_SIEVE, 1, &c));
    T_OK(get(c, abc, 3, &a, 0));
    T_OK(gd__dyncache_release(c, a.slots, 3));
    T_OK(get(c, &ra, 1, &a, 0));
    T_EQ_INT(a.nf, 0);
    T_OK(gd__dyncache_release(c, a.slots, 1));
    const int64_t slot_b = gd__dyncache_slot_of(c, 2), slot_c = gd__dyncache_slot_of(c, 3);
    T_OK(get(c, &d, 1, &a, 0));
    T_EQ_INT(a.fills[0].slot, slot_b);
    T_OK(gd__dyncache_release(c, a.slots, 1));
    T_OK(get(c, &e, 1, &a, 0));
    T_EQ_INT(a.fills[0].slot, slot_c);
    T_OK(gd__dyncache_release(c, a.slots, 1));
    T_ASSERT(gd__dyncache_slot_of(c, 1) >= 0 && gd__dyncache_slot_of(c, 2) < 0 &&
             gd__dyncache_slot_of(c, 3) < 0);
    gd__dyncache_destroy(c);
}

/* The rules, on two slots: window protection, users, filling hits, bypass. */
static void rules(gd__evict_policy policy) {
    gd__dyncache *c;
    acq a, b;
    const int64_t ra = 0, rb = 1, rc = 2, rd = 3;
    T_OK(gd__dyncache_create(8, 2, policy, 7, &c));
    const int64_t ab[2] = {ra, rb};
    T_OK(get(c, ab, 2, &a, 0));
    T_OK(gd__dyncache_release(c, a.slots, 2));
    /* Window: A is announced by a minibatch ahead, so C must take B's slot. */
    T_OK(gd__dyncache_announce(c, &ra, 1));
    T_ASSERT(gd__dyncache_protected(c, ra));
    const int64_t slot_a = gd__dyncache_slot_of(c, ra), slot_b = gd__dyncache_slot_of(c, rb);
    T_OK(get(c, &rc, 1, &a, 1)); /* C stays FILLING */
    T_EQ_INT(a.nf, 1);
    T_EQ_INT(a.fills[0].slot, slot_b);
    T_EQ_INT(gd__dyncache_slot_of(c, ra), slot_a);
    T_EQ_INT(gd__dyncache_state(c, slot_b), GD__SLOT_FILLING);
    /* C again while it is filling: a hit on the same slot, no second load. */
    T_OK(get(c, &rc, 1, &b, 1));
    T_EQ_INT(b.nf, 0);
    T_EQ_INT(b.slots[0], slot_b);
    T_EQ_INT(gd__dyncache_users(c, slot_b), 2);
    /* D: A is announced and C is filling and in use: D bypasses the cache. */
    T_OK(get(c, &rd, 1, &b, 0));
    T_EQ_INT(b.slots[0], -1);
    T_EQ_INT(b.nb, 1);
    T_OK(gd__dyncache_release(c, b.slots, 1)); /* -1 is skipped */
    /* Withdrawn, A may go, but C is still in use: D takes A's slot. */
    T_OK(gd__dyncache_withdraw(c, &ra, 1));
    T_OK(gd__dyncache_filled(c, a.fills, a.nf));
    T_OK(get(c, &rd, 1, &b, 0));
    T_EQ_INT(b.slots[0], slot_a);
    T_EQ_INT(gd__dyncache_slot_of(c, ra), -1);
    T_EQ_INT(gd__dyncache_slot_of(c, rc), slot_b);
    const gd__dyncache_stats s = gd__dyncache_get_stats(c);
    T_EQ_INT(s.bypasses, 1);
    T_EQ_INT(s.hits, 1);
    gd__dyncache_destroy(c);
}

/* Refused calls change nothing; every allocation of create (and of the duplicate check) fails
 * cleanly. */
static void refusals(void) {
    gd__dyncache *c;
    acq a;
    T_FAILS(gd__dyncache_create(-1, 2, GD__EVICT_CLOCK, 0, &c), GD_ERR_INVALID_ARG, "rows");
    T_FAILS(gd__dyncache_create(4, 2, (gd__evict_policy)7, 0, &c), GD_ERR_INVALID_ARG, "policy");
    T_OK(gd__dyncache_create(4, 2, GD__EVICT_SIEVE, 0, &c));
    const int64_t bad[2] = {1, 4}, twice[3] = {1, 2, 1}, one = 1;
    T_FAILS(get(c, bad, 2, &a, 0), GD_ERR_RANGE, "outside [0, 4)");
    T_FAILS(get(c, twice, 3, &a, 0), GD_ERR_INVALID_ARG, "asked for twice");
    T_EQ_INT(gd__dyncache_slot_of(c, 1), -1); /* nothing was taken */
    T_EQ_INT(gd__dyncache_get_stats(c).lookups, 0);
    T_FAILS(gd__dyncache_withdraw(c, &one, 1), GD_ERR_INVALID_ARG, "no announcement");
    T_FAILS(gd__dyncache_announce(c, twice, 3), GD_ERR_INVALID_ARG, "twice");
    T_ASSERT(!gd__dyncache_protected(c, 1) && !gd__dyncache_protected(c, 2));
    T_OK(get(c, &one, 1, &a, 1));
    const gd__dyncache_fill wrong = {2, a.fills[0].slot};
    T_FAILS(gd__dyncache_filled(c, &wrong, 1), GD_ERR_INVALID_ARG, "not being filled");
    T_OK(gd__dyncache_filled(c, a.fills, 1));
    T_FAILS(gd__dyncache_filled(c, a.fills, 1), GD_ERR_INVALID_ARG, "not being filled");
    T_OK(gd__dyncache_release(c, a.slots, 1));
    T_FAILS(gd__dyncache_release(c, a.slots, 1), GD_ERR_INVALID_ARG, "not in use");
    gd__dyncache_destroy(c);
    for (int64_t k = 1;; k++) {
        gd_fault_set(GD_FAULT_ALLOC, k);
        gd_status st = gd__dyncache_create(100, 10, GD__EVICT_CLOCK, 0, &c);
        if (st == GD_OK) st = get(c, twice, 2, &a, 0); /* the duplicate check's copy */
        gd_fault_set(GD_FAULT_ALLOC, 0);
        gd__dyncache_destroy(c);
        t_check_no_leaks();
        if (st == GD_OK) break;
        T_EQ_INT(st, GD_ERR_NO_MEMORY);
        T_ASSERT(k < 20);
    }
    /* No slots: everything bypasses. */
    T_OK(gd__dyncache_create(4, 0, GD__EVICT_RANDOM, 0, &c));
    T_OK(get(c, bad, 1, &a, 0));
    T_EQ_INT(a.slots[0], -1);
    T_EQ_INT(a.nb, 1);
    gd__dyncache_destroy(c);
}

/* ------------------------------------------------------------ random pipelines */

#define ROWS 3000
#define SLOTS 250
#define BATCH 80
#define MINIBATCHES 400
#define IN_FLIGHT 2
#define MAX_WINDOW 8

/* A minibatch's distinct rows: skewed (a squared uniform), half of them near recent ones. */
static int64_t draw(uint64_t *rng, int64_t *rows, uint8_t *mark) {
    int64_t n = 0;
    while (n < BATCH) {
        const double u = (double)(t_rand(rng) >> 11) / 9007199254740992.0;
        const int64_t r = (int64_t)(u * u * ROWS);
        if (r >= ROWS || mark[r]) continue;
        mark[r] = 1;
        rows[n++] = r;
    }
    for (int64_t i = 0; i < n; i++) mark[rows[i]] = 0;
    return n;
}

/* Every slot's row maps back to it, and every cached row's slot holds it. */
static void consistent(const gd__dyncache *c) {
    int64_t cached = 0;
    for (int64_t k = 0; k < SLOTS; k++) {
        const int64_t r = gd__dyncache_row_of(c, k);
        if (r < 0) {
            T_EQ_INT(gd__dyncache_state(c, k), GD__SLOT_FREE);
            T_EQ_INT(gd__dyncache_users(c, k), 0);
            continue;
        }
        cached++;
        T_EQ_INT(gd__dyncache_slot_of(c, r), k);
        T_ASSERT(gd__dyncache_state(c, k) != GD__SLOT_FREE);
    }
    int64_t mapped = 0;
    for (int64_t r = 0; r < ROWS; r++) mapped += gd__dyncache_slot_of(c, r) >= 0;
    T_EQ_INT(mapped, cached);
}

/*
 * One pipeline: minibatch b is announced when it enters the window (W ahead), acquired (and
 * withdrawn) in turn, its fills land, and it is released IN_FLIGHT minibatches later. The
 * model (users per row, announcements per row) is kept here, apart from the cache's own.
 */
static double pipeline(gd__evict_policy policy, int window, uint64_t seed) {
    static int64_t rows[MINIBATCHES][BATCH], slots[MINIBATCHES][BATCH];
    static int32_t users[ROWS], pending[ROWS];
    static uint8_t mark[ROWS];
    int64_t n[MINIBATCHES], before[BATCH];
    gd__dyncache *c;
    acq a;
    uint64_t rng = seed;
    memset(users, 0, sizeof users);
    memset(pending, 0, sizeof pending);
    for (int b = 0; b < MINIBATCHES; b++) n[b] = draw(&rng, rows[b], mark);
    T_OK(gd__dyncache_create(ROWS, SLOTS, policy, seed, &c));
    for (int b = 0; b < window && b < MINIBATCHES; b++) {
        T_OK(gd__dyncache_announce(c, rows[b], n[b]));
        for (int64_t i = 0; i < n[b]; i++) pending[rows[b][i]]++;
    }
    for (int b = 0; b < MINIBATCHES; b++) {
        if (window > 0) {
            if (b + window < MINIBATCHES) {
                T_OK(gd__dyncache_announce(c, rows[b + window], n[b + window]));
                for (int64_t i = 0; i < n[b + window]; i++) pending[rows[b + window][i]]++;
            }
            T_OK(gd__dyncache_withdraw(c, rows[b], n[b]));
            for (int64_t i = 0; i < n[b]; i++) pending[rows[b][i]]--;
        }
        /* Rows in use or announced keep their slots through the acquire. */
        static int64_t slot_before[ROWS];
        for (int64_t r = 0; r < ROWS; r++) slot_before[r] = gd__dyncache_slot_of(c, r);
        for (int64_t i = 0; i < n[b]; i++) before[i] = slot_before[rows[b][i]];
        T_OK(get(c, rows[b], n[b], &a, 0));
        int64_t hits = 0;
        for (int64_t i = 0; i < n[b]; i++) {
            const int64_t s = a.slots[i];
            slots[b][i] = s;
            if (s >= 0) {
                T_EQ_INT(gd__dyncache_row_of(c, s), rows[b][i]);
                hits += before[i] >= 0;
                if (before[i] >= 0) T_EQ_INT(s, before[i]); /* a hit stays put */
                users[rows[b][i]]++;
            } else {
                T_EQ_INT(before[i], -1); /* a cached row is never bypassed */
            }
        }
        T_EQ_INT(hits + a.nf + a.nb, n[b]);
        for (int64_t f = 0; f < a.nf; f++) T_EQ_INT(slot_before[a.fills[f].row], -1);
        for (int64_t r = 0; r < ROWS; r++)
            if (slot_before[r] >= 0 && (users[r] > 0 || pending[r] > 0))
                T_EQ_INT(gd__dyncache_slot_of(c, r), slot_before[r]);
        consistent(c);
        if (b >= IN_FLIGHT) {
            const int o = b - IN_FLIGHT;
            T_OK(gd__dyncache_release(c, slots[o], n[o]));
            for (int64_t i = 0; i < n[o]; i++)
                if (slots[o][i] >= 0) users[rows[o][i]]--;
        }
    }
    const gd__dyncache_stats s = gd__dyncache_get_stats(c);
    T_EQ_INT(s.lookups, s.hits + s.fills + s.bypasses);
    gd__dyncache_destroy(c);
    return (double)s.hits / (double)s.lookups;
}

int main(void) {
    const uint64_t seed = t_seed();
    names();
    clock_order();
    sieve_order();
    for (int p = 0; p < GD__EVICT_COUNT; p++) rules((gd__evict_policy)p);
    refusals();
    for (int p = 0; p < GD__EVICT_COUNT; p++) {
        const int windows[3] = {0, 4, MAX_WINDOW};
        for (int w = 0; w < 3; w++) {
            const double hit = pipeline((gd__evict_policy)p, windows[w], seed + (uint64_t)p);
            fprintf(stderr, "%-6s window %d: hit rate %.3f\n", gd__evict_names[p], windows[w], hit);
        }
    }
    /* random: the same seed, the same choices. */
    T_NEAR(pipeline(GD__EVICT_RANDOM, 4, seed), pipeline(GD__EVICT_RANDOM, 4, seed), 0);
    t_check_no_leaks();
    printf("dynamic cache: ok\n");
    return 0;
}
