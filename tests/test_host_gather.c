/*
 * Host rows of a zero-copy gather by CPU gather + one DMA, or split between that and zero-copy
 * loads (src/feature/host_gather.h, issue 16).
 * CPU: the names of the choice (split=F too) and their refusal, GD_HOST_SPLIT, the fixed-point
 * share; the CPU references of the GPU's host-row lists against the rule they state, on fresh
 * random location maps (host, cache, GPU and peer rows, ids out of range, duplicates) and
 * random shares; the whole flow run on the CPU (list, CPU gather into staging, each row placed
 * from its staging slot, the table or its cache slot) equals the direct gather bit for bit, for
 * the CPU way and for splits; the pieces of the per-thread copy (GD_HOST_COPY_PIECES) cover
 * every row once, each written when reported; auto's and split's rules; the gatherer, trainer and loader refuse
 * bad values. GPU (exits 77 without one):
 * zerocopy gatherers with host_gather over tables of several row widths and caches (none, a
 * third, every row), ids sorted or not, on the host or the device, with duplicates, outputs
 * poisoned and misaligned, rows wide enough that the staging fills in several chunks: the output
 * equals the CPU reference, the GPU's list and staging slots
 * equal gd__host_rows_list_cpu, the same gatherer switched to zero-copy loads and to splits
 * (CPU fractions 0, 1 and random) writes the same bytes with the list of
 * gd__host_rows_split_cpu, two gathers queued back to back on one stream both land (the staging
 * is not reused early), for the CPU way and for split, a bad device id is reported and not
 * listed, and the start-up probe measures the three ways and leaves the gatherer as it was;
 * all of it with the staged copies in 4 MiB chunks and in each thread's pieces.
 */
#include "feature/internal.h"
#include "test.h"

#define POISON 0xA5

/* ------------------------------------------------------------------ CPU checks */

static void check_names(void) {
    gd__host_gather h = GD__HOST_GATHER_CPU;
    double f = 7;
    T_OK(gd__host_gather_parse(NULL, &h, &f));
    T_EQ_INT(h, GD__HOST_GATHER_ZEROCOPY);
    T_ASSERT(f == -1);
    for (int i = 0; i < GD__HOST_GATHER_COUNT; i++) {
        T_OK(gd__host_gather_parse(gd__host_gather_name((gd__host_gather)i), &h, &f));
        T_EQ_INT(h, i);
        T_ASSERT(f == -1);
    }
    T_EQ_STR(gd__host_gather_name(GD__HOST_GATHER_ZEROCOPY), "zero-copy");
    T_EQ_STR(gd__host_gather_name(GD__HOST_GATHER_CPU), "cpu");
    T_EQ_STR(gd__host_gather_name(GD__HOST_GATHER_AUTO), "auto");
    T_EQ_STR(gd__host_gather_name(GD__HOST_GATHER_SPLIT), "split");
    T_ASSERT(gd__host_gather_name(GD__HOST_GATHER_COUNT) == NULL);
    T_FAILS(gd__host_gather_parse("zerocopy", &h, &f), GD_ERR_INVALID_ARG, "zero-copy");
    T_FAILS(gd__host_gather_parse("", &h, &f), GD_ERR_INVALID_ARG, "auto");
    /* split=F names the CPU's fraction; the fraction is optional to read. */
    T_OK(gd__host_gather_parse("split=0.6", &h, &f));
    T_EQ_INT(h, GD__HOST_GATHER_SPLIT);
    T_ASSERT(f == 0.6);
    T_OK(gd__host_gather_parse("split=0", &h, NULL));
    T_EQ_INT(h, GD__HOST_GATHER_SPLIT);
    T_OK(gd__host_gather_parse("split=1", &h, &f));
    T_ASSERT(f == 1);
    static const char *const bad[] = {"split=", "split=1.5", "split=-0.1", "split=0.5x",
                                      "split=nan", "split 0.5", "split=0.5=0.5"};
    for (int i = 0; i < (int)(sizeof bad / sizeof bad[0]); i++)
        T_FAILS(gd__host_gather_parse(bad[i], &h, &f), GD_ERR_INVALID_ARG, "split=F");
    /* GD_HOST_SPLIT: auto (the default) or a fraction. */
    T_OK(gd_param_set("GD_HOST_SPLIT", "")); /* the default, whatever the environment says */
    T_OK(gd__host_split_param(&f));
    T_ASSERT(f == -1);
    T_OK(gd_param_set("GD_HOST_SPLIT", "0.25"));
    T_OK(gd__host_split_param(&f));
    T_ASSERT(f == 0.25);
    T_OK(gd_param_set("GD_HOST_SPLIT", "most"));
    T_FAILS(gd__host_split_param(&f), GD_ERR_INVALID_ARG, "GD_HOST_SPLIT");
    T_OK(gd_param_set("GD_HOST_SPLIT", "auto"));
    T_OK(gd__host_split_param(&f));
    T_ASSERT(f == -1);
    T_OK(gd_param_set("GD_HOST_SPLIT", NULL));
}

/* The fixed-point share, the same cut on both sides of a split. */
static void check_share(uint64_t *state) {
    T_EQ_INT(gd__host_share(0), 0);
    T_EQ_INT(gd__host_share(-3), 0);
    T_EQ_INT(gd__host_share(NAN), 0);
    T_EQ_INT(gd__host_share(1), GD__HOST_SHARE_ONE);
    T_EQ_INT(gd__host_share(2), GD__HOST_SHARE_ONE);
    T_EQ_INT(gd__host_share(0.5), GD__HOST_SHARE_ONE / 2);
    for (int i = 0; i < 1000; i++) {
        const int64_t m = (int64_t)(t_rand(state) % ((uint64_t)1 << 31));
        const double f = (double)(t_rand(state) % 1001) / 1000;
        const int64_t s = gd__host_share_rows(m, gd__host_share(f));
        T_ASSERT(s >= 0 && s <= m);
        /* Within a row and the share's rounding of the exact cut. */
        T_ASSERT(fabs((double)s - f * (double)m) <= 1 + (double)m / GD__HOST_SHARE_ONE);
        T_EQ_INT(gd__host_share_rows(m, GD__HOST_SHARE_ONE), m);
        T_EQ_INT(gd__host_share_rows(m, 0), 0);
    }
}

/* A random location map: host rows at their own slot, cached, GPU-resident and peer rows. */
static void random_map(int64_t *loc, int64_t rows, int host_percent, uint64_t *state) {
    for (int64_t r = 0; r < rows; r++) {
        const uint64_t x = t_rand(state);
        if ((int)(x % 100) < host_percent) {
            loc[r] = gd__loc_make(GD__TIER_HOST, r);
            continue;
        }
        switch ((x >> 8) % 3) {
        case 0: loc[r] = gd__loc_make(GD__TIER_GPU_CACHE, (int64_t)(x >> 16) % rows); break;
        case 1: loc[r] = gd__loc_make(GD__TIER_GPU, r); break;
        default: loc[r] = gd__loc_make_peer((int)((x >> 16) % 4), (int64_t)(x >> 24) % rows);
        }
    }
}

/* The list's rule, checked as stated in host_gather.h (with and without a map). */
static void check_list_reference(uint64_t *state) {
    for (int round = 0; round < 200; round++) {
        const int64_t rows = 1 + (int64_t)(t_rand(state) % 500);
        const int64_t n = (int64_t)(t_rand(state) % 700);
        const int with_map = round % 4 != 0;
        int64_t *loc = malloc(sizeof *loc * (size_t)rows), *ids = malloc(8 * (size_t)(n + 1));
        int64_t *slot = malloc(8 * (size_t)(n + 1)), *list = malloc(8 * (size_t)(n + 1));
        T_ASSERT(loc && ids && slot && list);
        random_map(loc, rows, (int)(t_rand(state) % 101), state);
        for (int64_t r = 0; r < n; r++) {
            const uint64_t x = t_rand(state);
            ids[r] = x % 20 == 0 ? (x % 40 == 0 ? -1 : rows) /* out of range */
                     : r > 0 && x % 7 == 0 ? ids[(x >> 8) % (uint64_t)r] /* a duplicate */
                                           : (int64_t)((x >> 8) % (uint64_t)rows);
        }
        const int64_t *map = with_map ? loc : NULL;
        memset(slot, 0x5a, 8 * (size_t)(n + 1));
        const int64_t m = gd__host_rows_list_cpu(map, rows, ids, n, slot, list);
        int64_t next = 0;
        for (int64_t r = 0; r < n; r++) {
            const int in = ids[r] >= 0 && ids[r] < rows;
            const int host = in && (!map || gd__loc_tier(map[ids[r]]) == GD__TIER_HOST);
            if (!host) {
                T_EQ_INT(slot[r], -1);
                continue;
            }
            T_EQ_INT(slot[r], next);
            T_EQ_INT(list[next], ids[r]);
            next++;
        }
        T_EQ_INT(m, next);
        /* Counting alone gives the same number. */
        T_EQ_INT(gd__host_rows_list_cpu(map, rows, ids, n, NULL, NULL), m);
        /* A split stages the last s host positions, in order, and no others. */
        const int share = (int)(t_rand(state) % (GD__HOST_SHARE_ONE + 1));
        int64_t *list2 = malloc(8 * (size_t)(n + 1));
        T_ASSERT(list2);
        memset(slot, 0x5a, 8 * (size_t)(n + 1));
        const int64_t s = gd__host_rows_split_cpu(map, rows, ids, n, share, slot, list2);
        T_EQ_INT(s, gd__host_share_rows(m, share));
        int64_t rank = 0, staged = 0;
        for (int64_t r = 0; r < n; r++) {
            const int in = ids[r] >= 0 && ids[r] < rows;
            const int host = in && (!map || gd__loc_tier(map[ids[r]]) == GD__TIER_HOST);
            if (host && rank >= m - s) {
                T_EQ_INT(slot[r], staged);
                T_EQ_INT(list2[staged], ids[r]);
                T_EQ_INT(list[rank], ids[r]); /* the tail of the whole list */
                staged++;
            } else {
                T_EQ_INT(slot[r], -1);
            }
            rank += host;
        }
        T_EQ_INT(staged, s);
        T_EQ_INT(gd__host_rows_split_cpu(map, rows, ids, n, share, NULL, NULL), s);
        free(list2);
        free(loc);
        free(ids);
        free(slot);
        free(list);
    }
}

/*
 * The flow on the CPU: list the host rows, gather them into staging with CPU threads, then place
 * every row from its staging slot or its cache slot. It must equal the direct gather exactly.
 */
static void check_flow_cpu(uint64_t *state) {
    static const int64_t widths[] = {2, 12, 256, 400, 1028};
    for (int wi = 0; wi < (int)(sizeof widths / sizeof widths[0]); wi++) {
        const int64_t w = widths[wi], rows = 5000, n = 4000;
        unsigned char *table = malloc((size_t)(rows * w)), *cache = malloc((size_t)(rows * w));
        unsigned char *staging = malloc((size_t)(n * w)), *out = malloc((size_t)(n * w));
        unsigned char *want = malloc((size_t)(n * w));
        int64_t *loc = malloc(8 * (size_t)rows), *ids = malloc(8 * (size_t)n);
        int64_t *slot = malloc(8 * (size_t)n), *list = malloc(8 * (size_t)n);
        T_ASSERT(table && cache && staging && out && want && loc && ids && slot && list);
        t_fill_random(table, (size_t)(rows * w), state);
        /* A third of the rows cached, each in a slot of its own (slot k holds row cached[k]). */
        int64_t cached = 0;
        for (int64_t r = 0; r < rows; r++) {
            if (t_rand(state) % 3 == 0) {
                memcpy(cache + cached * w, table + r * w, (size_t)w);
                loc[r] = gd__loc_make(GD__TIER_GPU_CACHE, cached++);
            } else {
                loc[r] = gd__loc_make(GD__TIER_HOST, r);
            }
        }
        for (int64_t i = 0; i < n; i++) ids[i] = (int64_t)(t_rand(state) % (uint64_t)rows);
        gd__gather_rows_cpu(table, w, ids, n, want, 1);
        memset(out, POISON, (size_t)(n * w));
        const int64_t m = gd__host_rows_list_cpu(loc, rows, ids, n, slot, list);
        T_ASSERT(m > 0 && m < n);
        gd__gather_rows_cpu(table, w, list, m, staging, 4);
        for (int64_t i = 0; i < n; i++) {
            const unsigned char *src = slot[i] >= 0
                                           ? staging + slot[i] * w
                                           : cache + gd__loc_slot(loc[ids[i]]) * w;
            memcpy(out + i * w, src, (size_t)w);
        }
        T_ASSERT(memcmp(out, want, (size_t)(n * w)) == 0);
        /*
         * Splits: the first pass places every unstaged row (a host row from the table, as the
         * zero-copy loads read it, a cached one from its slot), the second the staged rows.
         */
        const int shares[] = {0, GD__HOST_SHARE_ONE, (int)(t_rand(state) % GD__HOST_SHARE_ONE)};
        for (int k = 0; k < 3; k++) {
            memset(out, POISON, (size_t)(n * w));
            memset(staging, POISON, (size_t)(n * w));
            const int64_t s = gd__host_rows_split_cpu(loc, rows, ids, n, shares[k], slot, list);
            gd__gather_rows_cpu(table, w, list, s, staging, 3);
            for (int pass = 0; pass < 2; pass++)
                for (int64_t i = 0; i < n; i++) {
                    if ((slot[i] >= 0) != (pass == 1)) continue;
                    const int64_t l = loc[ids[i]];
                    const unsigned char *src =
                        slot[i] >= 0                          ? staging + slot[i] * w
                        : gd__loc_tier(l) == GD__TIER_HOST ? table + gd__loc_slot(l) * w
                                                              : cache + gd__loc_slot(l) * w;
                    memcpy(out + i * w, src, (size_t)w);
                }
            T_ASSERT(memcmp(out, want, (size_t)(n * w)) == 0);
        }
        free(table);
        free(cache);
        free(staging);
        free(out);
        free(want);
        free(loc);
        free(ids);
        free(slot);
        free(list);
    }
}

/*
 * gd__gather_rows_cpu_chunks (the copy of cpu and split): every row copied as
 * gd__gather_rows_cpu does, each chunk of the grid reported once, whole, and written when
 * reported; more chunks than one parallel region takes, pieces longer than chunks, one thread.
 */
typedef struct {
    unsigned char *seen; /* per row: times reported */
    const unsigned char *out, *want;
    int64_t rb, chunk, n, bad;
} chunk_log;

static void chunk_done(void *user, int64_t lo, int64_t k) {
    chunk_log *l = user;
    const int64_t whole = l->chunk < l->n - lo ? l->chunk : l->n - lo;
    if (lo % l->chunk != 0 || k != whole) __atomic_add_fetch(&l->bad, 1, __ATOMIC_RELAXED);
    if (memcmp(l->out + lo * l->rb, l->want + lo * l->rb, (size_t)(k * l->rb)) != 0)
        __atomic_add_fetch(&l->bad, 1, __ATOMIC_RELAXED);
    for (int64_t i = lo; i < lo + k; i++) l->seen[i]++; /* chunks are disjoint */
}

static void check_chunks(uint64_t *state) {
    for (int trial = 0; trial < 16; trial++) {
        const int64_t rows = 1 + (int64_t)(t_rand(state) % 5000);
        const int64_t rb = 4 * (1 + (int64_t)(t_rand(state) % 300));
        const int64_t n = (int64_t)(t_rand(state) % (trial < 6 ? 40 : 9000));
        /* trials 12-15: chunks of 1-3 rows, so that n spans more than 256 chunks */
        const int64_t chunk = 1 + (int64_t)(t_rand(state) % (trial >= 12 ? 3 : 900));
        const int64_t piece = 1 + (int64_t)(t_rand(state) % (trial % 3 == 0 ? 2000 : 300));
        const int threads = 1 + (int)(t_rand(state) % 8);
        unsigned char *src = malloc((size_t)(rows * rb)), *out = malloc((size_t)(n * rb) + 1),
                      *want = malloc((size_t)(n * rb) + 1), *seen = calloc((size_t)n + 1, 1);
        int64_t *ids = malloc((size_t)(n + 1) * 8);
        T_ASSERT(src && out && want && seen && ids);
        for (int64_t i = 0; i < rows * rb; i++) src[i] = (unsigned char)t_rand(state);
        for (int64_t i = 0; i < n; i++) ids[i] = (int64_t)(t_rand(state) % (uint64_t)rows);
        memset(out, POISON, (size_t)(n * rb) + 1);
        gd__gather_rows_cpu(src, rb, ids, n, want, 1);
        chunk_log l = {seen, out, want, rb, chunk, n, 0};
        gd__gather_rows_cpu_chunks(src, rb, ids, n, out, threads, piece, chunk, chunk_done, &l);
        T_EQ_INT(l.bad, 0);
        T_ASSERT(n == 0 || memcmp(out, want, (size_t)(n * rb)) == 0);
        for (int64_t i = 0; i < n; i++) T_EQ_INT(seen[i], 1);
        T_EQ_INT(out[n * rb], POISON);
        free(src), free(out), free(want), free(seen), free(ids);
    }
}

/* split's CPU fraction from the probe's two rates: both engines finish together. */
static void check_split_fraction(void) {
    const double f = gd__host_split_fraction(8.6, 21.4);
    T_ASSERT(fabs(f - 21.4 / 30.0) < 1e-12);
    T_ASSERT(fabs(f / 21.4 - (1 - f) / 8.6) < 1e-12);
    T_ASSERT(gd__host_split_fraction(0, 21.4) == 0.5);
    T_ASSERT(gd__host_split_fraction(8.6, NAN) == 0.5);
}

static void check_refusals(uint64_t seed) {
    gd_host_tensor_t *t = NULL;
    gd_gatherer_t *g = NULL;
    T_OK(gd_host_tensor_create(10, 4, GD_DTYPE_FLOAT32, 0, &t));
    gd_gatherer_options o = GD_GATHERER_OPTIONS_INIT;
    o.host_gather = 2;
    T_FAILS(gd_gatherer_create(t, NULL, GD_GATHER_CPU, &o, &g), GD_ERR_INVALID_ARG, "host_gather");
    o.host_gather = 1;
    T_FAILS(gd_gatherer_create(t, NULL, GD_GATHER_CPU, &o, &g), GD_ERR_INVALID_ARG, "zerocopy");
    T_ASSERT(g == NULL);
    o.host_gather = 0;
    T_OK(gd_gatherer_create(t, NULL, GD_GATHER_CPU, &o, &g));
    T_FAILS(gd__gatherer_set_host_cpu(g, 1), GD_ERR_INVALID_ARG, "host_gather = 1");
    T_FAILS(gd__gatherer_set_host_split(g, 0.5), GD_ERR_INVALID_ARG, "host_gather = 1");
    T_OK(gd__gatherer_set_host_cpu(g, 0));
    gd_gatherer_destroy(g);
    gd_host_tensor_destroy(t);

    gd_dataset_t *ds = t_tiny_dataset(seed);
    gd_train_options to = GD_TRAIN_OPTIONS_INIT;
    char plan[1024];
    to.mode = "cpu";
    to.host_gather = "fast";
    T_FAILS(gd_trainer_plan(ds, &to, plan, sizeof plan), GD_ERR_INVALID_ARG, "zero-copy");
    gd_trainer_t *tr = NULL;
    T_FAILS(gd_trainer_create(ds, &to, &tr), GD_ERR_INVALID_ARG, "cpu");
    T_ASSERT(tr == NULL);
    to.host_gather = "split=2";
    T_FAILS(gd_trainer_create(ds, &to, &tr), GD_ERR_INVALID_ARG, "split=F");
    T_ASSERT(tr == NULL);
    to.host_gather = "split=0.3";
    T_OK(gd_trainer_create(ds, &to, &tr));
    gd_trainer_destroy(tr);
    tr = NULL;
    /* Modes without host rows read by the GPU take the option and ignore it. */
    to.host_gather = "cpu";
    T_OK(gd_trainer_create(ds, &to, &tr));
    gd_trainer_destroy(tr);
    gd_loader_options lo = GD_LOADER_OPTIONS_INIT;
    gd_loader_t *l = NULL;
    lo.mode = "cpu";
    lo.host_gather = "dma";
    T_FAILS(gd_loader_create(ds, &lo, &l), GD_ERR_INVALID_ARG, "auto");
    T_ASSERT(l == NULL);
    gd_dataset_close(ds);
}

/* ------------------------------------------------------------------ GPU checks */

#ifdef GD_WITH_CUDA
/* Distinct ids in random order, with one duplicate pair when dup is set; n <= rows. */
static void make_ids(int64_t rows, int64_t n, int dup, uint64_t *state, int64_t *ids) {
    unsigned char *taken = calloc((size_t)rows, 1);
    T_ASSERT(taken);
    for (int64_t i = 0; i < n;) {
        const int64_t r = (int64_t)(t_rand(state) % (uint64_t)rows);
        if (taken[r]) continue;
        taken[r] = 1;
        ids[i++] = r;
    }
    if (dup && n >= 2) ids[n - 1] = ids[0];
    free(taken);
}

static int cmp_i64(const void *a, const void *b) {
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/*
 * The host-row list of g's last call against the CPU reference over the ids it read, with the
 * CPU's share of the host rows (GD__HOST_SHARE_ONE: the CPU way).
 */
static void check_list(gd_gatherer_t *g, int64_t rows, const int64_t *ids, int64_t n, int sorted,
                       int share) {
    const int64_t *list = NULL, *d_slot = NULL;
    int64_t m = -2;
    T_OK(gd__gatherer_host_list(g, &list, &d_slot, &m));
    int64_t *order = malloc(8 * (size_t)n), *loc = malloc(8 * (size_t)rows);
    int64_t *want_slot = malloc(8 * (size_t)n), *want_list = malloc(8 * (size_t)n);
    int64_t *got_slot = malloc(8 * (size_t)n);
    T_ASSERT(order && loc && want_slot && want_list && got_slot);
    memcpy(order, ids, 8 * (size_t)n);
    if (sorted) qsort(order, (size_t)n, 8, cmp_i64);
    for (int64_t r = 0; r < rows; r++)
        loc[r] = gd__gatherer_in_gpu_memory(g, r) ? gd__loc_make(GD__TIER_GPU_CACHE, 0)
                                                  : gd__loc_make(GD__TIER_HOST, r);
    const int64_t want =
        gd__host_rows_split_cpu(loc, rows, order, n, share, want_slot, want_list);
    T_EQ_INT(m, want);
    T_ASSERT(m == 0 || memcmp(list, want_list, 8 * (size_t)m) == 0);
    CU(cudaMemcpy(got_slot, d_slot, 8 * (size_t)n, cudaMemcpyDeviceToHost));
    T_ASSERT(memcmp(got_slot, want_slot, 8 * (size_t)n) == 0);
    free(order);
    free(loc);
    free(want_slot);
    free(want_list);
    free(got_slot);
}

/* Gather ids into d_buf + off (poisoned first) and compare with want; the bytes come back. */
static void gather_equal(gd_gatherer_t *g, const int64_t *ids, const int64_t *d_ids, int64_t n,
                         int on_device, unsigned char *d_buf, size_t off, int64_t w,
                         cudaStream_t stream, const unsigned char *want, unsigned char *host,
                         const char *what) {
    const size_t bytes = (size_t)(n * w);
    CU(cudaMemset(d_buf, POISON, bytes + off + 64));
    CU(cudaDeviceSynchronize()); /* the legacy-stream poison lands first */
    T_OK(gd_gather(g, on_device ? d_ids : ids, n, on_device, d_buf + off, stream));
    CU(cudaStreamSynchronize(stream));
    T_OK(gd_gatherer_check_errors(g));
    CU(cudaMemcpy(host, d_buf, bytes + off + 64, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < off; i++)
        if (host[i] != POISON) T_FAIL_("%s: byte %zu before the output was written", what, i);
    if (memcmp(host + off, want, bytes) != 0) {
        for (int64_t i = 0; i < n; i++)
            if (memcmp(host + off + i * w, want + i * w, (size_t)w) != 0)
                T_FAIL_("%s: row %lld (id %lld) differs from the CPU reference", what,
                        (long long)i, (long long)ids[i]);
    }
    for (size_t i = 0; i < 64; i++)
        if (host[off + bytes + i] != POISON) T_FAIL_("%s: byte %zu past the output", what, i);
}

static void check_gpu(uint64_t *state, uint64_t seed) {
    /* 4100-byte rows fill the staging in three chunks (HOST_CHUNK_BYTES, feature_cuda.cu). */
    static const int64_t widths[] = {4, 12, 256, 400, 2, 1028, 4100};
    const int64_t cap = 2500;
    cudaStream_t stream;
    CU(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    int64_t *ids = malloc(8 * (size_t)cap), *ids2 = malloc(8 * (size_t)cap), *d_ids = NULL,
            *d_ids2 = NULL;
    const size_t buf = (size_t)(cap * 4100) + 256;
    unsigned char *d_buf = NULL, *d_buf2 = NULL, *host = malloc(buf), *want = malloc(buf),
                  *want2 = malloc(buf), *first = malloc(buf);
    T_ASSERT(ids && ids2 && host && want && want2 && first);
    CU(cudaMalloc((void **)&d_ids, 8 * (size_t)cap));
    CU(cudaMalloc((void **)&d_ids2, 8 * (size_t)cap));
    CU(cudaMalloc((void **)&d_buf, buf));
    CU(cudaMalloc((void **)&d_buf2, buf));
    for (int wi = 0; wi < (int)(sizeof widths / sizeof widths[0]); wi++) {
        const int64_t w = widths[wi], rows = 3000;
        /* GD_TEST_HOST_GATHER_WIDTHS=4,256 runs those widths only (a sanitizer's run in parts). */
        char wname[24];
        snprintf(wname, sizeof wname, "%lld", (long long)w);
        if (!t_env_lists("GD_TEST_HOST_GATHER_WIDTHS", wname)) continue;
        const gd_dtype dt = w % 4 == 0 ? GD_DTYPE_FLOAT32 : GD_DTYPE_BFLOAT16;
        const int64_t cols = w / (int64_t)gd_dtype_size(dt);
        gd_host_tensor_t *t = NULL;
        T_OK(gd_host_tensor_create(rows, cols, dt, 0, &t));
        const unsigned char *table = gd_host_tensor_data(t);
        t_fill_random(gd_host_tensor_data(t), (size_t)(rows * w), state);
        T_OK(gd_host_tensor_register(t, NULL));
        int64_t *scores = malloc(8 * (size_t)rows);
        T_ASSERT(scores);
        for (int64_t r = 0; r < rows; r++) scores[r] = (int64_t)(t_rand(state) % 50);
        const int64_t budgets[] = {0, rows * w / 3, rows * w};
        for (int bi = 0; bi < 3; bi++) {
            for (int sorted = 0; sorted < 2; sorted++) {
                gd_gatherer_options o = GD_GATHERER_OPTIONS_INIT;
                o.max_ids = cap;
                o.sort_ids = sorted ? 1 : -1;
                o.cache_bytes = budgets[bi];
                o.cache_scores = budgets[bi] ? scores : NULL;
                o.host_gather = 1;
                o.threads = 3;
                gd_gatherer_t *g = NULL;
                T_OK(gd_gatherer_create(t, NULL, GD_GATHER_ZEROCOPY, &o, &g));
                char what[128];
                for (int v = 0; v < 6; v++) {
                    const int64_t n = v == 0 ? 1 : v == 1 ? cap
                                                          : 1 + (int64_t)(t_rand(state) % cap);
                    const int on_device = v % 2, dup = v >= 4;
                    const size_t off = (size_t)(v % 3) * gd_dtype_size(dt);
                    snprintf(what, sizeof what,
                             "width %lld, cache %lld B, %s, %lld %s ids%s, output +%zu",
                             (long long)w, (long long)budgets[bi], sorted ? "sorted" : "unsorted",
                             (long long)n, on_device ? "device" : "host",
                             dup ? " (a duplicate)" : "", off);
                    make_ids(rows, n, dup, state, ids);
                    CU(cudaMemcpy(d_ids, ids, 8 * (size_t)n, cudaMemcpyHostToDevice));
                    CU(cudaDeviceSynchronize()); /* legacy-stream copies land first */
                    gd__gather_rows_cpu(table, w, ids, n, want, 1);
                    T_OK(gd__gatherer_set_host_cpu(g, 1));
                    gather_equal(g, ids, d_ids, n, on_device, d_buf, off, w,
                                 v >= 3 ? stream : NULL, want, host, what);
                    memcpy(first, host, (size_t)(n * w) + off);
                    check_list(g, rows, ids, n, sorted, GD__HOST_SHARE_ONE);
                    /* The other way writes the same bytes. */
                    T_OK(gd__gatherer_set_host_cpu(g, 0));
                    gather_equal(g, ids, d_ids, n, on_device, d_buf, off, w, stream, want, host,
                                 what);
                    T_ASSERT(memcmp(first, host, (size_t)(n * w) + off) == 0);
                    const int64_t *l = NULL, *s = NULL;
                    int64_t m = 0;
                    T_OK(gd__gatherer_host_list(g, &l, &s, &m));
                    T_EQ_INT(m, -1); /* the zero-copy call listed nothing */
                    /* Splits write the same bytes, and list the CPU's share of the rows. */
                    const double fs[] = {0, 1, (double)(t_rand(state) % 1001) / 1000};
                    for (int k = 0; k < 3; k++) {
                        T_OK(gd__gatherer_set_host_split(g, fs[k]));
                        T_EQ_INT(g->host_cpu, 0);
                        gather_equal(g, ids, d_ids, n, on_device, d_buf, off, w, stream, want,
                                     host, what);
                        T_ASSERT(memcmp(first, host, (size_t)(n * w) + off) == 0);
                        check_list(g, rows, ids, n, sorted, gd__host_share(fs[k]));
                    }
                    T_OK(gd__gatherer_set_host_cpu(g, 0));
                    T_EQ_INT(g->host_split, 0);
                }
                /*
                 * Two calls queued back to back: the second's CPU copy waits for the first's
                 * DMA out of the staging, and both outputs are right; for split too, where the
                 * second call's DMA (on the copy stream) must not overwrite the GPU staging
                 * before the first call's second pass has read it.
                 */
                for (int way = 0; way < 2; way++) {
                    if (way == 0) T_OK(gd__gatherer_set_host_cpu(g, 1));
                    else T_OK(gd__gatherer_set_host_split(g, 0.5));
                    make_ids(rows, cap, 0, state, ids);
                    make_ids(rows, cap, 0, state, ids2);
                    CU(cudaMemcpy(d_ids, ids, 8 * (size_t)cap, cudaMemcpyHostToDevice));
                    CU(cudaMemcpy(d_ids2, ids2, 8 * (size_t)cap, cudaMemcpyHostToDevice));
                    gd__gather_rows_cpu(table, w, ids, cap, want, 1);
                    gd__gather_rows_cpu(table, w, ids2, cap, want2, 1);
                    CU(cudaMemset(d_buf, POISON, (size_t)(cap * w)));
                    CU(cudaMemset(d_buf2, POISON, (size_t)(cap * w)));
                    CU(cudaDeviceSynchronize()); /* legacy-stream copies land first */
                    T_OK(gd_gather(g, d_ids, cap, 1, d_buf, stream));
                    T_OK(gd_gather(g, d_ids2, cap, 1, d_buf2, stream));
                    CU(cudaStreamSynchronize(stream));
                    CU(cudaMemcpy(host, d_buf, (size_t)(cap * w), cudaMemcpyDeviceToHost));
                    T_ASSERT(memcmp(host, want, (size_t)(cap * w)) == 0);
                    CU(cudaMemcpy(host, d_buf2, (size_t)(cap * w), cudaMemcpyDeviceToHost));
                    T_ASSERT(memcmp(host, want2, (size_t)(cap * w)) == 0);
                }
                /* A bad device id is reported, and not listed for the CPU, either way. */
                for (int way = 0; way < 2; way++) {
                    if (way == 0) T_OK(gd__gatherer_set_host_cpu(g, 1));
                    else T_OK(gd__gatherer_set_host_split(g, 0.5));
                    make_ids(rows, 100, 0, state, ids);
                    ids[50] = rows;
                    CU(cudaMemcpy(d_ids, ids, 8 * 100, cudaMemcpyHostToDevice));
                    CU(cudaDeviceSynchronize()); /* legacy-stream copies land first */
                    T_OK(gd_gather(g, d_ids, 100, 1, d_buf, stream));
                    T_FAILS(gd_gatherer_check_errors(g), GD_ERR_RANGE, "outside");
                    check_list(g, rows, ids, 100, sorted,
                               way == 0 ? GD__HOST_SHARE_ONE : gd__host_share(0.5));
                }
                T_OK(gd__gatherer_set_host_cpu(g, 1));
                /* The probe measures the three ways (none without host rows), with the split
                 * given or its own, and changes nothing. */
                gd__host_probe p;
                const int64_t host_rows = rows - (budgets[bi] ? budgets[bi] / w : 0);
                /* 1200 of 2000 host rows takes the probe's shuffle, 700 of 3000 its draws. */
                const int64_t k = bi == 1 ? 1200 : 700;
                for (int way = 0; way < 3; way++) {
                    if (way < 2) T_OK(gd__gatherer_set_host_cpu(g, way));
                    else T_OK(gd__gatherer_set_host_split(g, 0.25));
                    const double given = way == 1 ? 0.75 : -1;
                    T_OK(gd__gatherer_host_probe(g, k, 2, seed, given, &p));
                    T_EQ_INT(g->host_cpu, way == 1);
                    T_EQ_INT(g->host_split, way == 2);
                    if (way == 2) T_EQ_INT(g->host_share, gd__host_share(0.25));
                    T_EQ_INT(p.rows, host_rows < k ? host_rows : k);
                    T_EQ_INT(p.row_bytes, w);
                    T_ASSERT(p.rows == 0 ? p.zerocopy_gbs == 0 && p.cpu_gbs == 0 &&
                                               p.split_gbs == 0
                                         : p.zerocopy_gbs > 0 && p.cpu_gbs > 0 &&
                                               p.split_gbs > 0);
                    if (p.rows > 0 && given >= 0) T_ASSERT(p.split_f == given);
                    if (p.rows > 0 && given < 0)
                        T_ASSERT(p.split_f == gd__host_split_fraction(p.zerocopy_gbs, p.cpu_gbs));
                }
                fprintf(stderr,
                        "%s: probe %.2f GB/s zero-copy, %.2f GB/s cpu, %.2f GB/s split %.2f over "
                        "%lld rows\n",
                        what, p.zerocopy_gbs, p.cpu_gbs, p.split_gbs, p.split_f,
                        (long long)p.rows);
                gd_gatherer_destroy(g);
            }
        }
        free(scores);
        gd_host_tensor_destroy(t);
    }
    CU(cudaFree(d_ids));
    CU(cudaFree(d_ids2));
    CU(cudaFree(d_buf));
    CU(cudaFree(d_buf2));
    CU(cudaStreamDestroy(stream));
    free(ids);
    free(ids2);
    free(host);
    free(want);
    free(want2);
    free(first);
}
#endif

/*
 * auto's trial on a made-up clock: each way's gathers take its own period, except the first
 * SETTLE after a change of way (the pipeline's leftovers, made slow here); pauses between passes.
 * The ways come in order, each for `runs` gathers, and the one of the shortest period is kept.
 */
static void check_trial(uint64_t *state) {
    for (int rep = 0; rep < 20; rep++) {
        const int runs = GD__HOST_TRIAL_SETTLE + 2 + (int)(t_rand(state) % 10);
        double period[GD__HOST_TRIAL_WAYS];
        int best = 0;
        for (int w = 0; w < GD__HOST_TRIAL_WAYS; w++) {
            period[w] = 1e-3 * (1 + (double)(t_rand(state) % 1000));
            if (period[w] < period[best]) best = w;
        }
        gd__host_trial t;
        gd__host_trial_init(&t, runs);
        T_EQ_INT(t.runs, runs);
        double now = 100, f = -1;
        int way = -1, since = 0, changes = 0, calls = 0;
        while (!gd__host_trial_done(&t)) {
            T_ASSERT(calls < 2 * GD__HOST_TRIAL_WAYS * runs);
            /* Pauses anywhere but before a way's first timed period (a way left with none
             * would lose by rule, and the test would not know the best). */
            if (calls > 0 && t_rand(state) % 7 == 0 &&
                (t.n <= GD__HOST_TRIAL_SETTLE || t.ns >= 1)) {
                gd__host_trial_pause(&t);
                now += 1000; /* a pass ended: an evaluation, say */
            }
            const double set = gd__host_trial_step(&t, now);
            calls++;
            if (set >= 0) {
                changes++;
                if (!gd__host_trial_done(&t)) {
                    way++;
                    T_ASSERT(set == gd__host_trial_fractions[way]);
                    since = 0;
                }
                f = set;
            } else {
                T_ASSERT(calls > 1);
            }
            /* Leftovers of the way before: the first gathers after a change are very slow. */
            now += since < GD__HOST_TRIAL_SETTLE ? 50.0 : period[way];
            since++;
        }
        T_EQ_INT(way, GD__HOST_TRIAL_WAYS - 1);
        T_EQ_INT(changes, GD__HOST_TRIAL_WAYS + 1);
        T_EQ_INT(calls, GD__HOST_TRIAL_WAYS * runs + 1);
        T_EQ_INT(t.best, best);
        T_ASSERT(f == gd__host_trial_fractions[best]);
        for (int k = 0; k < 5; k++) T_ASSERT(gd__host_trial_step(&t, now += 1) == -1);
    }
    /* First call: the CPU way; runs clamped. */
    gd__host_trial t;
    gd__host_trial_init(&t, 0);
    T_EQ_INT(t.runs, GD__HOST_TRIAL_SETTLE + 2);
    T_ASSERT(gd__host_trial_step(&t, 0) == 1.0);
    gd__host_trial_init(&t, 1 << 30);
    T_EQ_INT(t.runs, GD__HOST_TRIAL_MAX_RUNS);
}

int main(void) {
    const uint64_t seed = t_seed();
    uint64_t state = seed;
    check_names();
    check_share(&state);
    check_list_reference(&state);
    check_flow_cpu(&state);
    check_split_fraction();
    check_trial(&state);
    check_chunks(&state);
    check_refusals(seed);
    t_check_no_leaks();
    fprintf(stderr, "CPU checks passed\n");
    if (gd_device_count() == 0) {
        fprintf(stderr, "skip: no GPU (the CPU checks passed)\n");
        return GD_TEST_SKIP;
    }
#ifdef GD_WITH_CUDA
    /*
     * The staged copies both ways: 4 MiB chunks ("chunks"), and each thread's pieces ("pieces",
     * GD_HOST_COPY_PIECES); GD_TEST_HOST_GATHER_WAYS=chunks or =pieces runs one (a sanitizer's
     * run in two processes: the kernels are the same).
     */
    static const char *const ways[2] = {"chunks", "pieces"};
    for (int pieces = 0; pieces < 2; pieces++) {
        if (!t_env_lists("GD_TEST_HOST_GATHER_WAYS", ways[pieces])) continue;
        T_OK(gd_param_set("GD_HOST_COPY_PIECES", pieces ? "1" : "0"));
        check_gpu(&state, seed);
    }
    T_OK(gd_param_set("GD_HOST_COPY_PIECES", NULL));
    t_check_no_leaks();
    fprintf(stderr, "GPU checks passed\n");
#endif
    return 0;
}
