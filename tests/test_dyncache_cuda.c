/*
 * The dynamic cache on the GPU (src/feature/dyncache_gpu.h) against its CPU reference
 * (dyncache.h): random pipelines of fresh skewed minibatches (every policy, window depths 0 and
 * 4, two minibatches in flight, now and then a minibatch whose reads fail and are cancelled),
 * run through both; after every minibatch the slots of every row, the misses' order, the fills
 * and the bypasses are equal, and every few minibatches the whole state is (each row's slot,
 * each slot's row, state, users and policy bit, the window counts, the statistics). The GPU
 * cache keeps its slots in a location map (as the disk tier does) or in its own array; the
 * misses' list goes to device memory or to pinned host memory. Then its refusals: a row out of
 * range, a release of a slot not in use, a withdrawal without an announcement, each named by
 * check_errors. Without a GPU the test exits 77.
 */
#include "test.h"

#include "feature/dyncache.h"

#ifdef GD_WITH_CUDA
#include "feature/dyncache_gpu.h"
#include "feature/dyncache_impl.h"

#include <cuda_runtime_api.h>

#define ROWS 3000
#define SLOTS 250
#define BATCH 80
#define MINIBATCHES 240
#define IN_FLIGHT 2

static int64_t draw(uint64_t *rng, int64_t *rows, uint8_t *mark) {
    /* 0 rows now and then: the empty lookup. */
    const int64_t want = t_rand(rng) % 23 == 0 ? 0 : 1 + (int64_t)(t_rand(rng) % BATCH);
    int64_t n = 0;
    while (n < want) {
        const double u = (double)(t_rand(rng) >> 11) / 9007199254740992.0;
        const int64_t r = (int64_t)(u * u * ROWS);
        if (r >= ROWS || mark[r]) continue;
        mark[r] = 1;
        rows[n++] = r;
    }
    for (int64_t i = 0; i < n; i++) mark[rows[i]] = 0;
    return n;
}

/* The GPU's whole state equals the reference's. */
static void same_state(const gd__dyncache *ref, gd__dyncache_gpu *g, cudaStream_t s, int window,
                       int b) {
    gd__dyncache_gpu_snapshot snap;
    T_OK(gd__dyncache_gpu_snapshot_take(g, s, &snap));
    for (int64_t r = 0; r < ROWS; r++) {
        if (snap.slot_of[r] != gd__dyncache_slot_of(ref, r))
            T_FAIL_("minibatch %d: row %lld has slot %lld on the GPU, %lld in the reference", b,
                    (long long)r, (long long)snap.slot_of[r],
                    (long long)gd__dyncache_slot_of(ref, r));
        if (window) T_EQ_INT(snap.pending[r] > 0, gd__dyncache_protected(ref, r));
    }
    for (int64_t k = 0; k < SLOTS; k++) {
        T_EQ_INT(snap.row_of[k], gd__dyncache_row_of(ref, k));
        T_EQ_INT(snap.state[k], gd__dyncache_state(ref, k));
        T_EQ_INT(snap.users[k], gd__dyncache_users(ref, k));
        T_EQ_INT(snap.bit[k], gd__dyncache_bit(ref, k));
    }
    const gd__dyncache_stats rs = gd__dyncache_get_stats(ref);
    T_EQ_INT(snap.stats.lookups, rs.lookups);
    T_EQ_INT(snap.stats.hits, rs.hits);
    T_EQ_INT(snap.stats.fills, rs.fills);
    T_EQ_INT(snap.stats.evictions, rs.evictions);
    T_EQ_INT(snap.stats.bypasses, rs.bypasses);
    gd__dyncache_gpu_snapshot_free(&snap);
}

typedef struct {
    int64_t *rows, *slots, *miss_pos; /* device */
    int64_t *miss_rows, *num;         /* device, or pinned host */
    int pinned;
} dev_bufs;

static void pipeline(gd__evict_policy policy, int window, int use_loc, int pinned, uint64_t seed) {
    static int64_t rows[MINIBATCHES][BATCH], slots[MINIBATCHES][BATCH];
    static uint8_t mark[ROWS];
    int64_t n[MINIBATCHES];
    int64_t gslots[BATCH], miss_rows[BATCH], num = 0;
    gd__dyncache_fill fills[BATCH];
    uint64_t rng = seed;
    for (int b = 0; b < MINIBATCHES; b++) n[b] = draw(&rng, rows[b], mark);

    gd__dyncache *ref;
    T_OK(gd__dyncache_create(ROWS, SLOTS, policy, seed, &ref));
    cudaStream_t s;
    CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    int64_t *d_loc = NULL, *d_rows, *d_slots, *d_miss_pos, *m_rows, *m_num;
    if (use_loc) {
        static int64_t absent[ROWS];
        for (int64_t r = 0; r < ROWS; r++) absent[r] = GD__DYNC_LOC_ABSENT;
        CU(cudaMalloc((void **)&d_loc, sizeof absent));
        CU(cudaMemcpy(d_loc, absent, sizeof absent, cudaMemcpyHostToDevice));
    }
    CU(cudaMalloc((void **)&d_rows, sizeof rows));
    CU(cudaMalloc((void **)&d_slots, sizeof slots));
    CU(cudaMalloc((void **)&d_miss_pos, BATCH * sizeof(int64_t)));
    if (pinned) {
        CU(cudaHostAlloc((void **)&m_rows, BATCH * sizeof(int64_t), cudaHostAllocMapped));
        CU(cudaHostAlloc((void **)&m_num, sizeof(int64_t), cudaHostAllocMapped));
    } else {
        CU(cudaMalloc((void **)&m_rows, BATCH * sizeof(int64_t)));
        CU(cudaMalloc((void **)&m_num, sizeof(int64_t)));
    }
    CU(cudaMemcpy(d_rows, rows, sizeof rows, cudaMemcpyHostToDevice));
    gd__dyncache_gpu_config cfg = {0,          ROWS, SLOTS, policy, seed, use_loc ? d_loc : NULL,
                                   window > 0, BATCH};
    gd__dyncache_gpu *g;
    T_OK(gd__dyncache_gpu_create(&cfg, &g));

#define DROWS(b) (d_rows + (int64_t)(b)*BATCH)
#define DSLOTS(b) (d_slots + (int64_t)(b)*BATCH)
    for (int b = 0; b < window && b < MINIBATCHES; b++) {
        T_OK(gd__dyncache_announce(ref, rows[b], n[b]));
        T_OK(gd__dyncache_gpu_announce(g, DROWS(b), n[b], s));
    }
    for (int b = 0; b < MINIBATCHES; b++) {
        if (window > 0) {
            if (b + window < MINIBATCHES) {
                T_OK(gd__dyncache_announce(ref, rows[b + window], n[b + window]));
                T_OK(gd__dyncache_gpu_announce(g, DROWS(b + window), n[b + window], s));
            }
            T_OK(gd__dyncache_withdraw(ref, rows[b], n[b]));
            T_OK(gd__dyncache_gpu_withdraw(g, DROWS(b), n[b], s));
        }
        int64_t nf = 0, nb = 0;
        T_OK(gd__dyncache_acquire(ref, rows[b], n[b], slots[b], fills, &nf, &nb));
        /* The GPU: lookup, then the misses' list is read (as the host's reads would), place. */
        CU(cudaMemsetAsync(DSLOTS(b), 0xff, BATCH * sizeof(int64_t), s));
        T_OK(gd__dyncache_gpu_lookup(g, DROWS(b), n[b], DSLOTS(b), d_miss_pos, m_rows, m_num, s));
        T_OK(gd__dyncache_gpu_place(g, DROWS(b), DSLOTS(b), d_miss_pos, m_num, s));
        CU(cudaMemcpyAsync(gslots, DSLOTS(b), BATCH * sizeof(int64_t), cudaMemcpyDeviceToHost, s));
        CU(cudaMemcpyAsync(&num, m_num, sizeof num, cudaMemcpyDefault, s));
        CU(cudaMemcpyAsync(miss_rows, m_rows, BATCH * sizeof(int64_t), cudaMemcpyDefault, s));
        CU(cudaStreamSynchronize(s));
        for (int64_t i = 0; i < n[b]; i++)
            if (gslots[i] != slots[b][i])
                T_FAIL_("%s, window %d, minibatch %d: row %lld (position %lld) got slot %lld on "
                        "the GPU, %lld in the reference",
                        gd__evict_names[policy], window, b, (long long)rows[b][i], (long long)i,
                        (long long)gslots[i], (long long)slots[b][i]);
        /* The misses in order: the fills, then the bypasses, interleaved as the rows come. */
        T_EQ_INT(num, nf + nb);
        int64_t f = 0;
        for (int64_t j = 0; j < num; j++) {
            int64_t i = -1;
            for (int64_t q = 0; q < n[b]; q++)
                if (rows[b][q] == miss_rows[j]) i = q;
            T_ASSERT(i >= 0);
            if (slots[b][i] >= 0) {
                T_EQ_INT(fills[f].row, miss_rows[j]);
                T_EQ_INT(fills[f].slot, slots[b][i]);
                f++;
            }
        }
        T_EQ_INT(f, nf);
        /* Now and then the reads fail: the fills are cancelled (and not released later). */
        if (b % 17 == 5 && nf > 0) {
            T_OK(gd__dyncache_cancel(ref, fills, nf));
            T_OK(gd__dyncache_gpu_cancel(g, DROWS(b), DSLOTS(b), d_miss_pos, m_num, s));
            for (int64_t q = 0; q < nf; q++)
                for (int64_t i = 0; i < n[b]; i++)
                    if (slots[b][i] == fills[q].slot && rows[b][i] == fills[q].row)
                        slots[b][i] = -1;
            CU(cudaMemcpyAsync(DSLOTS(b), slots[b], BATCH * sizeof(int64_t), cudaMemcpyHostToDevice,
                               s));
        } else {
            T_OK(gd__dyncache_filled(ref, fills, nf));
            T_OK(gd__dyncache_gpu_filled(g, DSLOTS(b), d_miss_pos, m_num, s));
        }
        if (b >= IN_FLIGHT) {
            const int o = b - IN_FLIGHT;
            T_OK(gd__dyncache_release(ref, slots[o], n[o]));
            T_OK(gd__dyncache_gpu_release(g, DSLOTS(o), n[o], s));
        }
        if (b % 7 == 0 || b == MINIBATCHES - 1) same_state(ref, g, s, window, b);
    }
    T_OK(gd__dyncache_gpu_check_errors(g, s));
    same_state(ref, g, s, window, MINIBATCHES);
    const gd__dyncache_stats rs = gd__dyncache_get_stats(ref);
    fprintf(stderr, "%-6s window %d (%s, misses to %s): hit rate %.3f, equal to the reference\n",
            gd__evict_names[policy], window, use_loc ? "location map" : "own slots",
            pinned ? "pinned memory" : "device memory", (double)rs.hits / (double)rs.lookups);

    /* Refusals, named by check_errors. */
    int64_t bad[2] = {ROWS + 5, -1};
    CU(cudaMemcpy(DROWS(0), bad, sizeof bad, cudaMemcpyHostToDevice));
    CU(cudaDeviceSynchronize()); /* a pageable copy may return before it lands */
    T_OK(gd__dyncache_gpu_lookup(g, DROWS(0), 1, DSLOTS(0), d_miss_pos, m_rows, m_num, s));
    T_FAILS(gd__dyncache_gpu_check_errors(g, s), GD_ERR_RANGE, "outside [0, 3000)");
    int64_t free_slot = -1;
    for (int64_t k = 0; k < SLOTS && free_slot < 0; k++)
        if (gd__dyncache_users(ref, k) == 0) free_slot = k;
    T_ASSERT(free_slot >= 0);
    CU(cudaMemcpy(DSLOTS(0), &free_slot, sizeof free_slot, cudaMemcpyHostToDevice));
    CU(cudaDeviceSynchronize()); /* a pageable copy may return before it lands */
    T_OK(gd__dyncache_gpu_release(g, DSLOTS(0), 1, s));
    T_FAILS(gd__dyncache_gpu_check_errors(g, s), GD_ERR_INTERNAL, "not in use");
    if (window) {
        int64_t r = 7;
        while (gd__dyncache_protected(ref, r)) r++;
        CU(cudaMemcpy(DROWS(0), &r, sizeof r, cudaMemcpyHostToDevice));
        CU(cudaDeviceSynchronize()); /* a pageable copy may return before it lands */
        T_OK(gd__dyncache_gpu_withdraw(g, DROWS(0), 1, s));
        T_FAILS(gd__dyncache_gpu_check_errors(g, s), GD_ERR_INVALID_ARG, "no announcement");
    } else {
        T_FAILS(gd__dyncache_gpu_announce(g, DROWS(0), 1, s), GD_ERR_INVALID_ARG, "window");
    }
    T_OK(gd__dyncache_gpu_check_errors(g, s));

    gd__dyncache_gpu_destroy(g);
    gd__dyncache_destroy(ref);
    if (pinned) {
        CU(cudaFreeHost(m_rows));
        CU(cudaFreeHost(m_num));
    } else {
        CU(cudaFree(m_rows));
        CU(cudaFree(m_num));
    }
    CU(cudaFree(d_miss_pos));
    CU(cudaFree(d_slots));
    CU(cudaFree(d_rows));
    if (d_loc) CU(cudaFree(d_loc));
    CU(cudaStreamDestroy(s));
#undef DROWS
#undef DSLOTS
}

int main(void) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        fprintf(stderr, "no GPU: skipped\n");
        return GD_TEST_SKIP;
    }
    const uint64_t seed = t_seed();
    int k = 0;
    for (int p = 0; p < GD__EVICT_COUNT; p++)
        for (int w = 0; w < 2; w++, k++)
            pipeline((gd__evict_policy)p, w ? 4 : 0, k % 2, (k / 2) % 2, seed + (uint64_t)k);
    t_check_no_leaks();
    fprintf(stderr, "dynamic GPU cache: ok\n");
    return 0;
}
#else
int main(void) {
    fprintf(stderr, "built without CUDA: skipped\n");
    return GD_TEST_SKIP;
}
#endif
