/*
 * The dynamic cache of the SSD tier (issue 16, item 3; docs/feature_store.md, "The dynamic
 * cache"): a fixed number of slots, filled and evicted during the epoch, over a table of rows
 * that live elsewhere (on disk, read by the I/O engine). This is the CPU reference: it decides,
 * for each minibatch, which rows hit, which are filled into which slot and which slot's row goes
 * back home, under the rules that the GPU implementation must keep:
 *   - a slot has a state: FREE, FILLING (a read into it is in flight) or VALID;
 *   - a row is in at most one slot, and a row that is FILLING or VALID is never loaded again
 *     (its next lookups hit, and wait for the fill's event when it is still FILLING);
 *   - a slot in use (read by a minibatch acquired and not yet released) is never evicted;
 *   - window buffering: the rows of the minibatches sampled ahead (announced, not yet acquired)
 *     are protected: a cached row with a pending announcement is never evicted;
 *   - when no slot can be had (every one in use, protected or filling), the row bypasses the
 *     cache: it is read straight into the minibatch, never into a slot that someone reads.
 * The eviction policy is chosen by name: `clock` (second chance: a reference bit per slot, a
 * hand sweeping the slots), `sieve` (SIEVE, NSDI'24: a FIFO of the cached rows, newest first; a
 * visited bit; a hand that moves from the oldest towards the newest, clearing visited bits and
 * evicting the first unvisited row, and stays where it evicted) and `random` (uniform among the
 * evictable slots, the baseline GIDS compares window buffering with). Nothing here reads rows or
 * touches a GPU: the caller moves the bytes; tests check the rules on any machine.
 */
#ifndef GD_FEATURE_DYNCACHE_H
#define GD_FEATURE_DYNCACHE_H

#include "core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    GD__EVICT_CLOCK = 0,
    GD__EVICT_SIEVE = 1,
    GD__EVICT_RANDOM = 2,
    GD__EVICT_COUNT = 3
} gd__evict_policy;

/* "clock", "sieve", "random", indexed by gd__evict_policy (gd__name_index reads them). */
extern const char *const gd__evict_names[GD__EVICT_COUNT];

typedef enum { GD__SLOT_FREE = 0, GD__SLOT_FILLING = 1, GD__SLOT_VALID = 2 } gd__slot_state;

/* A row to read into a slot (acquire's fills). */
typedef struct {
    int64_t row, slot;
} gd__dyncache_fill;

typedef struct {
    int64_t lookups;   /* rows asked for by acquire */
    int64_t hits;      /* of them, found in a slot (VALID or FILLING) */
    int64_t fills;     /* rows given a slot to be read into */
    int64_t evictions; /* fills that sent a valid row back home first */
    int64_t bypasses;  /* rows read past the cache: no slot could be had */
} gd__dyncache_stats;

typedef struct gd__dyncache gd__dyncache;

/*
 * A cache of num_slots slots over rows [0, num_rows), every slot FREE. seed drives `random`
 * (the same seed, the same choices).
 */
gd_status gd__dyncache_create(int64_t num_rows, int64_t num_slots, gd__evict_policy policy,
                              uint64_t seed, gd__dyncache **out);
void gd__dyncache_destroy(gd__dyncache *c);

/*
 * Window buffering: a minibatch sampled ahead announces its distinct rows (their eviction is
 * held off until it withdraws them, which it does when it is acquired or dropped). A row may be
 * announced by up to 65535 minibatches at once.
 */
gd_status gd__dyncache_announce(gd__dyncache *c, const int64_t *rows, int64_t n);
gd_status gd__dyncache_withdraw(gd__dyncache *c, const int64_t *rows, int64_t n);

/*
 * A minibatch about to read its n distinct rows: slots[i] is rows[i]'s slot, or -1 where it
 * bypasses the cache. Every row given a slot (a hit or a fill) is in use until released. The
 * rows to read are appended to fills (room for n; *num_fills of them), and *bypasses counts the
 * rows without a slot. A fill's slot is FILLING until gd__dyncache_filled. Rows out of range or
 * repeated within the call are refused (GD_ERR_RANGE, GD_ERR_INVALID_ARG) before any change.
 */
gd_status gd__dyncache_acquire(gd__dyncache *c, const int64_t *rows, int64_t n, int64_t *slots,
                               gd__dyncache_fill *fills, int64_t *num_fills, int64_t *bypasses);
/*
 * The reads of fills failed: their slots go back to FREE (their rows uncached, their users
 * released), so that no minibatch ever reads what a failed read left in them. A minibatch that
 * hit one of them while it was filling must fail as well (the run stops on a failed read).
 */
gd_status gd__dyncache_cancel(gd__dyncache *c, const gd__dyncache_fill *fills, int64_t n);
/* The reads of fills landed: their slots become VALID. */
gd_status gd__dyncache_filled(gd__dyncache *c, const gd__dyncache_fill *fills, int64_t n);
/* The minibatch that acquired slots (as acquire gave them; -1 is skipped) is done reading. */
gd_status gd__dyncache_release(gd__dyncache *c, const int64_t *slots, int64_t n);

/* The slot of row (-1: not cached), the row in slot (-1: none), the slot's state and users. */
int64_t gd__dyncache_slot_of(const gd__dyncache *c, int64_t row);
int64_t gd__dyncache_row_of(const gd__dyncache *c, int64_t slot);
gd__slot_state gd__dyncache_state(const gd__dyncache *c, int64_t slot);
int32_t gd__dyncache_users(const gd__dyncache *c, int64_t slot);
/* The slot's policy bit: clock's reference bit, sieve's visited bit (0 outside the slots). */
int gd__dyncache_bit(const gd__dyncache *c, int64_t slot);
/* Whether row has a pending announcement (window buffering holds it). */
int gd__dyncache_protected(const gd__dyncache *c, int64_t row);
gd__dyncache_stats gd__dyncache_get_stats(const gd__dyncache *c);

#ifdef __cplusplus
}
#endif

#endif /* GD_FEATURE_DYNCACHE_H */
