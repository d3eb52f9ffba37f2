/*
 * `graphdirect bench dyncache`: the hit rate of the SSD tier's dynamic cache for each eviction
 * policy and window depth, on the minibatches the library's sampler draws for training (issue
 * 16, item 8, the part that does not depend on the device). The cache is the CPU reference
 * (src/feature/dyncache.h), replayed as the pipeline drives it (gd_instrument_cache_sim): each
 * minibatch is announced when it enters the window, acquired in turn and released --in-flight
 * minibatches later. Hit rates depend on the ids and the rules only, so they are what the GPU
 * version must reach on the same minibatches. Also reported: the rows that bypassed the cache
 * (no slot could be had), the rows held by the window at most, the hit rate of the first
 * minibatches from a cold cache (GIDS's Figure 9 is bandwidth per iteration from cold), and the
 * target of issue 16: window depth 8 gives >= 1.5x the hit rate of no window, per policy.
 */
#include "bench.h"
#include "cli.h"
#include "instrument/cache_sim.h"

#include <stdlib.h>
#include <string.h>

#define MAX_WINDOWS 8
#define MAX_POLICIES 3
#define FIRST 20 /* cold-cache minibatches shown one by one */

static const char cmd[] = "bench dyncache";
static const char *const policy_names[MAX_POLICIES] = {"clock", "sieve", "random"};

typedef struct {
    bench_options opt;
    int layers, fanouts[GD_SAMPLER_MAX_LAYERS];
    int64_t batches, in_flight;
    double cache_frac;
    int64_t windows[MAX_WINDOWS];
    int num_windows, num_policies;
    const char *policies[MAX_POLICIES];
} dyn_bench;

static void help(void) {
    printf("usage: graphdirect bench dyncache [options]\n\n"
           "The hit rate of the SSD tier's dynamic cache (its CPU reference) for each eviction\n"
           "policy and window depth, replayed over the minibatches training draws.\n\n"
           "options:\n"
           "  --preset NAME      generated graph (default igb-medium: 10M nodes; the features\n"
           "                     are not generated)\n"
           "  --nodes N          nodes of the preset (default: the preset's)\n"
           "  --batch B          seeds per minibatch (default 1024)\n"
           "  --fanouts LIST     seeds first (default 15,10,5)\n"
           "  --batches N        minibatches replayed (default 200)\n"
           "  --cache F          cache slots as a fraction of the rows (default 0.2)\n"
           "  --windows LIST     window depths (default 0,4,8)\n"
           "  --policies LIST    from clock,sieve,random (default all three)\n"
           "  --in-flight N      minibatches acquired and not yet released (default 2)\n"
           "  --quick            a smoke test: preset tiny, 40 minibatches of 256 seeds\n"
           "  --threads N, --seed S, --json FILE, --commit C\n");
}

static int own_option(void *self, int c, const char *arg) {
    dyn_bench *b = self;
    int n;
    switch (c) {
    case 'f':
        return bench_parse_fanouts(arg, 0, 1 << 20, 1, &b->fanouts, &b->layers, NULL)
                   ? CLI_EXIT_USAGE
                   : 0;
    case 'n':
        if (bench_parse_list("--batches", arg, &b->batches, 1, &n) || b->batches < 1 ||
            b->batches > (1 << 20))
            return cli_usage_error(cmd, "--batches '%s' is not in 1..2^20", arg);
        return 0;
    case 'i':
        if (bench_parse_list("--in-flight", arg, &b->in_flight, 1, &n) || b->in_flight < 1 ||
            b->in_flight > 64)
            return cli_usage_error(cmd, "--in-flight '%s' is not in 1..64", arg);
        return 0;
    case 'c':
        if (cli_parse_double(arg, &b->cache_frac) || !(b->cache_frac >= 0 && b->cache_frac <= 1))
            return cli_usage_error(cmd, "--cache '%s' is not a fraction in [0, 1]", arg);
        return 0;
    case 'w':
        return bench_parse_windows(cmd, arg, 256, b->windows, MAX_WINDOWS, &b->num_windows);
    case 'p':
        return bench_parse_policies(cmd, arg, b->policies, &b->num_policies);
    default:
        return -1;
    }
}

static int parse_options(dyn_bench *b, int argc, char **argv) {
    static const struct option long_opts[] = {BENCH_LONG("preset", PRESET),
                                              BENCH_LONG("nodes", NODES),
                                              BENCH_LONG("batch", BATCH),
                                              {"fanouts", required_argument, 0, 'f'},
                                              {"batches", required_argument, 0, 'n'},
                                              {"cache", required_argument, 0, 'c'},
                                              {"windows", required_argument, 0, 'w'},
                                              {"policies", required_argument, 0, 'p'},
                                              {"in-flight", required_argument, 0, 'i'},
                                              BENCH_FLAG("quick", QUICK),
                                              BENCH_LONG("threads", THREADS),
                                              BENCH_LONG_END};
    bench_options_init(&b->opt);
    b->opt.preset = "igb-medium";
    b->batches = 200;
    b->in_flight = 2;
    b->cache_frac = 0.2;
    b->num_windows = 3;
    b->windows[0] = 0, b->windows[1] = 4, b->windows[2] = 8;
    b->num_policies = MAX_POLICIES;
    memcpy(b->policies, policy_names, sizeof b->policies);
    if (bench_parse_fanouts("15,10,5", 0, 1 << 20, 1, &b->fanouts, &b->layers, NULL))
        return CLI_EXIT_FAIL;
    int rc = bench_parse_options(&b->opt, cmd, argc, argv, long_opts, help, own_option, b);
    if (rc < 0 && b->opt.quick) {
        b->opt.preset = "tiny";
        b->opt.batch = 256;
        b->batches = 40;
    }
    return rc;
}

/* The graph of the preset (no features), as g, and the replayed minibatches' ids. */
static int sample(const dyn_bench *b, gd_dataset_t **ds, bench_graph *gp, bench_batches *mbs) {
    int rc = -1;
    bench_graph g;
    cli_progress prog;
    gd_generate_options go = GD_GENERATE_OPTIONS_INIT;
    go.preset = b->opt.preset;
    go.seed = b->opt.seed;
    go.num_nodes = b->opt.nodes;
    go.feature_dim = 1; /* only the graph is read */
    cli_progress_init(&prog);
    go.progress = cli_progress_cb;
    go.progress_user = &prog;
    fprintf(stderr, "dyncache: generating preset '%s' in memory\n", b->opt.preset);
    gd_status st = gd_generate(&go, ds);
    cli_progress_end(&prog);
    BENCH_GD(st, "generating the benchmark's graph");
    if (bench_graph_of(*ds, &g)) goto fail;
    *gp = g;
    const double t0 = bench_now();
    if (bench_sample_batches(&g, (int)b->batches, b->opt.batch, b->fanouts, b->layers, b->opt.seed,
                             b->opt.threads, mbs))
        goto fail;
    fprintf(stderr, "dyncache: %d minibatches of %lld seeds: %.0f rows each on average (%.1f s)\n",
            mbs->count, (long long)b->opt.batch,
            (double)mbs->offsets[mbs->count] / (mbs->count ? mbs->count : 1), bench_now() - t0);
    rc = 0;
fail:
    return rc;
}

/*
 * The hit rate over the second half of the minibatches (per[b] is minibatch b's over its rows):
 * the cache warmed up, which a static cache, filled before the first, never needs.
 */
static double second_half(const bench_batches *mbs, const double *per) {
    double hits = 0, rows = 0;
    for (int b = mbs->count / 2; b < mbs->count; b++) {
        const double n = (double)(mbs->offsets[b + 1] - mbs->offsets[b]);
        hits += per[b] * n;
        rows += n;
    }
    return rows > 0 ? hits / rows : 0;
}

/*
 * One policy at one window: print the row, record it; *hit gets the hit rate, *warm the hit
 * rate over the second half of the minibatches.
 */
static int replay(const dyn_bench *b, const bench_batches *mbs, int64_t rows, int64_t slots,
                  const char *policy, int window, double *per, cJSON *runs, double *hit,
                  double *warm) {
    int rc = -1;
    gd_instrument_cache_result r;
    const double t0 = bench_now();
    BENCH_GD(gd_instrument_cache_sim(mbs->ids, mbs->offsets, mbs->count, rows, slots, policy,
                                     window, (int)b->in_flight, b->opt.seed, per, &r),
             "replaying the minibatches through the cache");
    const double secs = bench_now() - t0, n = r.lookups ? (double)r.lookups : 1;
    *hit = (double)r.hits / n;
    *warm = second_half(mbs, per);
    const int first = mbs->count < FIRST ? mbs->count : FIRST;
    printf("%-7s %6d %8.4f %8.4f %8.4f %10.0f %12lld %7.2f   ", policy, window, *hit, *warm,
           (double)r.bypasses / n, (double)r.fills / mbs->count, (long long)r.protected_max, secs);
    for (int i = 0; i < first; i += 4) printf("%s%.2f", i ? " " : "", per[i]);
    printf("\n");
    cJSON *o = cJSON_CreateObject();
    BENCH_JSON(o);
    cJSON_AddItemToArray(runs, o);
    BENCH_JSON(cJSON_AddStringToObject(o, "policy", policy));
    BENCH_JSON(cJSON_AddNumberToObject(o, "window", window));
    BENCH_JSON(cJSON_AddNumberToObject(o, "hit_rate", *hit));
    BENCH_JSON(cJSON_AddNumberToObject(o, "hit_rate_second_half", *warm));
    BENCH_JSON(cJSON_AddNumberToObject(o, "bypass_rate", (double)r.bypasses / n));
    BENCH_JSON(cJSON_AddNumberToObject(o, "lookups", (double)r.lookups));
    BENCH_JSON(cJSON_AddNumberToObject(o, "fills", (double)r.fills));
    BENCH_JSON(cJSON_AddNumberToObject(o, "evictions", (double)r.evictions));
    BENCH_JSON(cJSON_AddNumberToObject(o, "window_rows_max", (double)r.protected_max));
    cJSON *cold = cJSON_AddArrayToObject(o, "first_minibatch_hit_rates");
    BENCH_JSON(cold);
    for (int i = 0; i < first; i++) {
        cJSON *v = cJSON_CreateNumber(per[i]);
        BENCH_JSON(v);
        cJSON_AddItemToArray(cold, v);
    }
    rc = 0;
fail:
    return rc;
}

/*
 * The static cache at the same size: the slots rows of highest out-degree, fixed for the
 * epoch, which is what zero-copy caches when the table is in host memory (the trainer ranks
 * by out-degree, how often uniform sampling reaches a row). No fills, evictions or window:
 * its hit rate is the share of the minibatches' rows in that set. *hit gets it.
 */
static int static_row(const bench_graph *g, const bench_batches *mbs, int64_t slots, double *per,
                      cJSON *root, double *hit) {
    int rc = -1;
    const int64_t rows = g->num_nodes;
    int64_t *scores = malloc(sizeof *scores * (size_t)(rows ? rows : 1));
    int64_t *hot = malloc(sizeof *hot * (size_t)(slots ? slots : 1)), count = 0, hits = 0;
    unsigned char *cached = calloc((size_t)(rows ? rows : 1), 1);
    const double t0 = bench_now();
    BENCH_REQUIRE(scores && hot && cached, "out of memory for the static cache of %lld rows",
                  (long long)rows);
    BENCH_GD(
        gd_csc_degree_scores(rows, g->indptr, g->indices, g->indices_dtype, GD_DEGREE_OUT, scores),
        "counting out-degrees");
    BENCH_GD(gd_hot_rows_select(scores, rows, slots, hot, &count), "ranking the rows");
    for (int64_t i = 0; i < count; i++) cached[hot[i]] = 1;
    for (int b = 0; b < mbs->count; b++) {
        int64_t h = 0;
        const int64_t lo = mbs->offsets[b], hi = mbs->offsets[b + 1];
        for (int64_t i = lo; i < hi; i++) h += cached[mbs->ids[i]];
        hits += h;
        per[b] = hi > lo ? (double)h / (double)(hi - lo) : 0;
    }
    const int64_t n = mbs->offsets[mbs->count];
    *hit = n ? (double)hits / (double)n : 0;
    printf("%-7s %6s %8.4f %8.4f %8.4f %10.0f %12s %7.2f   ", "static", "-", *hit,
           second_half(mbs, per), 0.0, 0.0, "-", bench_now() - t0);
    for (int i = 0; i < mbs->count && i < FIRST; i += 4) printf("%s%.2f", i ? " " : "", per[i]);
    printf("\n");
    BENCH_JSON(cJSON_AddNumberToObject(root, "hit_rate_static_out_degree", *hit));
    rc = 0;
fail:
    free(cached);
    free(hot);
    free(scores);
    return rc;
}

int bench_dyncache(int argc, char **argv) {
    dyn_bench b;
    memset(&b, 0, sizeof b);
    int rc = parse_options(&b, argc, argv);
    if (rc >= 0) return rc;
    rc = CLI_EXIT_FAIL;
    const double t_start = bench_now();
    gd_dataset_t *ds = NULL;
    bench_batches mbs = {0};
    bench_graph g;
    cJSON *root = NULL, *runs = NULL, *targets = NULL;
    double *per = NULL, hit0[MAX_POLICIES] = {0}, best = 0, hit_static = 0;
    const char *best_name = NULL;
    int best_window = 0;
    if (b.opt.json_path && bench_json_probe(b.opt.json_path)) return CLI_EXIT_FAIL;
    if (bench_json_header(&root, "dyncache", &b.opt, 0)) goto fail;
    if (sample(&b, &ds, &g, &mbs)) goto fail;
    const int64_t rows = gd_dataset_num_nodes(ds);
    const int64_t slots = (int64_t)(b.cache_frac * (double)rows);
    per = malloc(sizeof *per * (size_t)(mbs.count ? mbs.count : 1));
    BENCH_REQUIRE(per, "out of memory for %d hit rates", mbs.count);
    BENCH_JSON(cJSON_AddStringToObject(root, "preset", b.opt.preset));
    BENCH_JSON(cJSON_AddNumberToObject(root, "rows", (double)rows));
    BENCH_JSON(cJSON_AddNumberToObject(root, "slots", (double)slots));
    BENCH_JSON(cJSON_AddNumberToObject(root, "batch", (double)b.opt.batch));
    BENCH_JSON(cJSON_AddNumberToObject(root, "minibatches", mbs.count));
    BENCH_JSON(cJSON_AddNumberToObject(root, "in_flight", (double)b.in_flight));
    BENCH_JSON(cJSON_AddNumberToObject(root, "rows_per_minibatch",
                                       (double)mbs.offsets[mbs.count] / mbs.count));
    runs = cJSON_AddArrayToObject(root, "results");
    targets = cJSON_AddArrayToObject(root, "targets");
    BENCH_JSON(runs && targets);
    printf("%lld rows, cache of %lld slots (%.3g of the rows), %d minibatches of %.0f rows on "
           "average, %lld in flight\n\n",
           (long long)rows, (long long)slots, b.cache_frac, mbs.count,
           (double)mbs.offsets[mbs.count] / mbs.count, (long long)b.in_flight);
    printf("%-7s %6s %8s %8s %8s %10s %12s %7s   %s\n", "policy", "window", "hit", "2nd-half",
           "bypass", "fills/mb", "window_rows", "secs", "cold hit rate, minibatches 1, 5, 9, ...");
    /*
     * The ceiling: a slot for every row, so nothing is ever evicted. No window or policy hits
     * more than that on these minibatches (the rows they use again), so it bounds what window
     * buffering can add: (no eviction) / (no window) is the largest window gain possible here.
     */
    double hit_all = 0, warm_all = 0;
    {
        cJSON *ceiling = cJSON_CreateArray();
        BENCH_JSON(ceiling);
        if (replay(&b, &mbs, rows, rows, "clock", 0, per, ceiling, &hit_all, &warm_all)) {
            cJSON_Delete(ceiling);
            goto fail;
        }
        cJSON_Delete(ceiling);
        printf("  (the row above is the ceiling: a slot for every row, nothing evicted)\n");
        BENCH_JSON(cJSON_AddNumberToObject(root, "hit_rate_no_eviction", hit_all));
        BENCH_JSON(cJSON_AddNumberToObject(root, "hit_rate_no_eviction_second_half", warm_all));
    }
    for (int p = 0; p < b.num_policies; p++) {
        for (int w = 0; w < b.num_windows; w++) {
            double hit, warm;
            if (replay(&b, &mbs, rows, slots, b.policies[p], (int)b.windows[w], per, runs, &hit,
                       &warm))
                goto fail;
            if (b.windows[w] == 0) hit0[p] = hit;
            if (!best_name || warm > best) {
                best = warm;
                best_name = b.policies[p];
                best_window = (int)b.windows[w];
            }
            if (b.windows[w] == 8 && hit0[p] > 0) {
                char what[96];
                snprintf(what, sizeof what, "%s: hit rate at window 8 / no window (>= 1.5)",
                         b.policies[p]);
                bench_target(targets, what, hit / hit0[p], 1.5, "x");
                printf("  %s: the most a window can give here (no eviction / no window) is "
                       "%.2fx; window 8 takes %.0f%% of that gain\n",
                       b.policies[p], hit_all / hit0[p],
                       hit_all > hit0[p] ? 100 * (hit - hit0[p]) / (hit_all - hit0[p]) : 100.0);
            }
        }
    }
    if (static_row(&g, &mbs, slots, per, root, &hit_static)) goto fail;
    if (best_name && best > 0) {
        /* Over the second half: the dynamic caches warmed up, the static one never needs to. */
        const double st_warm = second_half(&mbs, per);
        printf("  (the row above is the static cache: the same slots holding the rows of highest "
               "out-degree,\n   fixed, as zero-copy caches a table in host memory); over the "
               "second half, static / best\n   dynamic (%s, window %d) = %.2fx\n",
               best_name, best_window, st_warm / best);
        BENCH_JSON(
            cJSON_AddNumberToObject(root, "static_over_best_dynamic_second_half", st_warm / best));
    }
    if (bench_run_done(&b.opt, root, "dyncache", t_start)) goto fail;
    rc = 0;
fail:
    free(per);
    bench_batches_free(&mbs);
    cJSON_Delete(root);
    gd_dataset_close(ds);
    return bench_exit_status(rc);
}
