/*
 * Locality-aware (biased) neighbour sampling, CPU side (docs/sampling.md, "Biased sampling"). A
 * neighbour whose bit is set in the sampler's bitmap is bias_factor times as likely to be drawn.
 *   - on fresh random graphs (isolated nodes, hubs, int32 and int64 indices) and fresh random
 *     bitmaps (sparse, dense, empty, full), with and without replacement, the CPU sampler with 1
 *     and 4 threads equals an independent naive statement of the biased draws bit for bit
 *     (check_cpu_sampler and reference_biased in sample_util.h, as test_sample runs them for the
 *     uniform draws), and every block keeps the invariants: real in-neighbours, no duplicates
 *     without replacement, a list no longer than the fanout taken whole in list order;
 *   - bias_factor 1 (and 0, the default) with a bitmap equals the uniform sampler exactly;
 *   - the draws follow the weights: chi-square over the first draw of a 200-neighbour node, over
 *     the ordered pairs of a 5-neighbour node (successive draws proportional to the weights of
 *     the neighbours not yet taken), with replacement, and a two-cell buffered-or-not test, each
 *     at a fixed seed (so it cannot flake) against a p = 1e-6 threshold; each also checks that
 *     the counts reject the factors one below and one above (the test would catch a wrong one);
 *   - the bitmap is copied at create time; argument errors, options of older callers and
 *     allocation faults fail cleanly, without leaks.
 * The CUDA sampler is compared with this one by test_sample_bias_cuda.
 */
#include "sample/read_plan.h"
#include "sample_util.h"

#include <stddef.h>

/* Factor 1 (or 0, the default) with a bitmap is the uniform sampler, draw for draw. */
static void check_factor_one(uint64_t *state) {
    graph g = make_graph(state, 3000, 12, GD_DTYPE_INT32);
    gd_graph_t *gg = NULL;
    T_OK(gd_graph_create(g.n, g.indptr, g.indices, g.dtype, NULL, &gg));
    uint8_t *bitmap = make_bitmap(state, g.n, 300);
    for (int fi = 0; fi < NUM_FANOUT_SETS; fi++)
        for (int replace = 0; replace < 2; replace++)
            for (int factor = 0; factor < 2; factor++) {
                const fanout_set *fs = &fanout_sets[fi];
                const uint64_t seed = t_rand(state);
                gd_sampler_t *u = make_sampler(gg, fs, GD_SAMPLER_CPU, 100, replace, seed, 2);
                gd_sampler_t *b =
                    make_biased(gg, fs, GD_SAMPLER_CPU, 100, replace, seed, 2, bitmap, factor);
                T_EQ_INT(b->bias_factor, 1);
                T_ASSERT(b->bias_bitmap == NULL);
                gd_minibatch_t *mu, *mbb;
                T_OK(gd_minibatch_create(u, &mu));
                T_OK(gd_minibatch_create(b, &mbb));
                int64_t seeds[100];
                make_seeds(state, g.n, 100, seeds);
                T_OK(gd_sample(u, seeds, 100, 0, 3, 17, NULL, mu));
                T_OK(gd_sample(b, seeds, 100, 0, 3, 17, NULL, mbb));
                host_mb x = to_host(mu), y = to_host(mbb);
                expect_equal(&x, &y, "uniform vs bias_factor <= 1");
                host_mb_free(&x);
                host_mb_free(&y);
                gd_minibatch_destroy(mu);
                gd_minibatch_destroy(mbb);
                gd_sampler_destroy(u);
                gd_sampler_destroy(b);
            }
    free(bitmap);
    gd_graph_destroy(gg);
    free_graph(&g);
}

/* ------------------------------------------------------------------ the distribution */

/* The chi-square quantile at upper tail p (z its normal quantile), by Wilson-Hilferty. */
static double chi2_threshold(double dof, double z) {
    const double a = 2.0 / (9.0 * dof);
    return dof * pow(1.0 - a + z * sqrt(a), 3.0);
}
#define Z_1E6 4.753 /* the normal quantile at 1 - 1e-6 */

static double chi2_of(const int64_t *count, const double *expect, int cells) {
    double chi2 = 0;
    for (int i = 0; i < cells; i++)
        chi2 += (count[i] - expect[i]) * (count[i] - expect[i]) / expect[i];
    return chi2;
}

/*
 * Expected cell counts for `trials` samples of node 0 of a star whose neighbour i (0-based) is
 * buffered when buf[i], at a factor: per neighbour for the first draw (pairs 0), or per ordered
 * pair (a, b), a != b, of the first two draws without replacement (pairs 1: cell a * deg + b).
 */
static void expected_counts(const int *buf, int deg, double factor, int pairs, double trials,
                            double *expect) {
    double W = 0;
    for (int a = 0; a < deg; a++) W += buf[a] ? factor : 1;
    for (int a = 0; a < deg; a++) {
        const double wa = buf[a] ? factor : 1;
        if (!pairs) {
            expect[a] = trials * wa / W;
            continue;
        }
        for (int b = 0; b < deg; b++) {
            const double wb = buf[b] ? factor : 1;
            expect[a * deg + b] = a == b ? 0 : trials * wa / W * wb / (W - wa);
        }
    }
}

static void check_distribution(void) {
    struct {
        int deg, fanout, replace, pairs, buffered, factor;
        int64_t trials;
    } cases[] = {
        {200, 10, 0, 0, 50, 4, 20000}, /* the first draw of ten, per neighbour */
        {5, 2, 0, 1, 2, 3, 20000},     /* ordered pairs: successive draws */
        {50, 10, 1, 0, 10, 5, 4000},   /* with replacement: every draw, per neighbour */
        {200, 10, 0, 0, 20, 2, 20000}, /* a small factor on a few buffered neighbours */
    };
    for (int c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++) {
        const int deg = cases[c].deg, factor = cases[c].factor;
        int64_t *indptr;
        int32_t *indices;
        indptr = calloc((size_t)deg + 2, sizeof(int64_t));
        indices = malloc(sizeof(int32_t) * (size_t)deg);
        T_ASSERT(indptr && indices);
        for (int64_t v = 1; v <= deg + 1; v++) indptr[v] = deg;
        for (int i = 0; i < deg; i++) indices[i] = i + 1;
        /* Every (deg / buffered)-th neighbour is buffered, spread over the list. */
        int *buf = calloc((size_t)deg, sizeof(int));
        uint8_t *bitmap = calloc((size_t)(deg + 1 + 7) / 8, 1);
        T_ASSERT(buf && bitmap);
        for (int k = 0; k < cases[c].buffered; k++) {
            const int i = k * deg / cases[c].buffered;
            buf[i] = 1;
            bitmap[(i + 1) / 8] |= (uint8_t)(1u << ((i + 1) % 8));
        }
        gd_graph_t *gg;
        T_OK(gd_graph_create(deg + 1, indptr, indices, GD_DTYPE_INT32, NULL, &gg));
        const fanout_set fs = {1, {cases[c].fanout}};
        gd_sampler_t *s = make_biased(gg, &fs, GD_SAMPLER_CPU, 1, cases[c].replace,
                                      0x5eed0000u + (uint64_t)c, 1, bitmap, factor);
        gd_minibatch_t *mb;
        T_OK(gd_minibatch_create(s, &mb));
        const int cells = cases[c].pairs ? deg * deg : deg;
        int64_t *count = calloc((size_t)cells, sizeof(int64_t)), two[2] = {0, 0};
        double *expect = calloc((size_t)cells, sizeof(double));
        T_ASSERT(count && expect);
        const int64_t seed0 = 0;
        int64_t draws = 0;
        for (int64_t t = 0; t < cases[c].trials; t++) {
            T_OK(gd_sample(s, &seed0, 1, 0, 0, t, NULL, mb));
            gd_block b;
            const int64_t *ids;
            int64_t nn;
            T_OK(gd_minibatch_block(mb, 0, &b));
            T_OK(gd_minibatch_input_nodes(mb, &ids, &nn));
            T_EQ_INT(b.num_edges, cases[c].fanout);
            const int64_t used = cases[c].replace ? b.num_edges : 1;
            if (cases[c].pairs) {
                count[(ids[b.indices[0]] - 1) * deg + ids[b.indices[1]] - 1]++;
            } else {
                for (int64_t e = 0; e < used; e++) count[ids[b.indices[e]] - 1]++;
            }
            for (int64_t e = 0; e < used; e++) two[!buf[ids[b.indices[e]] - 1]]++;
            draws += used;
        }
        /* The statistic, its threshold, and those the factors one below and above would give:
         * a correct test rejects them. */
        double chi2[3], two_chi2[3];
        int dof = 0;
        for (int d = 0; d < 3; d++) {
            const double f = factor - 1 + d;
            expected_counts(buf, deg, f, cases[c].pairs, (double)draws, expect);
            chi2[d] = 0;
            dof = 0;
            for (int i = 0; i < cells; i++) {
                if (expect[i] == 0) {
                    T_EQ_INT(count[i], 0);
                    continue;
                }
                chi2[d] += (count[i] - expect[i]) * (count[i] - expect[i]) / expect[i];
                dof++;
            }
            double pb = 0;
            for (int i = 0; i < deg; i++) pb += buf[i] ? f : 0;
            double W = 0;
            for (int i = 0; i < deg; i++) W += buf[i] ? f : 1;
            const double e2[2] = {(double)draws * pb / W, (double)draws * (1 - pb / W)};
            two_chi2[d] = chi2_of(two, e2, 2);
        }
        /* Without replacement the first draws of the pairs case are exact; the per-neighbour
         * counts of the first draw are multinomial: dof - 1 degrees of freedom either way. */
        const double thr = chi2_threshold(dof - 1, Z_1E6), thr2 = chi2_threshold(1, Z_1E6);
        fprintf(stderr,
                "bias: degree %d, %d buffered, factor %d, fanout %d%s%s: chi2 %.1f over %d cells "
                "(threshold %.1f; factor %d: %.1f, factor %d: %.1f), buffered share %.4f "
                "(chi2 %.2f, threshold %.1f; %.1f and %.1f)\n",
                deg, cases[c].buffered, factor, cases[c].fanout,
                cases[c].replace ? ", replace" : "", cases[c].pairs ? ", ordered pairs" : "",
                chi2[1], dof, thr, factor - 1, chi2[0], factor + 1, chi2[2],
                (double)two[0] / (double)draws, two_chi2[1], thr2, two_chi2[0], two_chi2[2]);
        if (!(chi2[1] < thr)) T_FAIL_("draws do not follow the weights: chi2 %.1f", chi2[1]);
        if (!(two_chi2[1] < thr2))
            T_FAIL_("buffered neighbours are not drawn at the factor's rate: chi2 %.2f",
                    two_chi2[1]);
        if (!(two_chi2[0] > thr2 && two_chi2[2] > thr2))
            T_FAIL_("the test cannot tell factor %d from %d or %d", factor, factor - 1, factor + 1);
        free(count);
        free(expect);
        free(buf);
        free(bitmap);
        gd_minibatch_destroy(mb);
        gd_sampler_destroy(s);
        gd_graph_destroy(gg);
        free(indptr);
        free(indices);
    }
}

/* ------------------------------------------------------------------ API */

static void check_api(uint64_t *state) {
    graph g = make_graph(state, 500, 8, GD_DTYPE_INT32);
    gd_graph_t *gg = NULL;
    T_OK(gd_graph_create(g.n, g.indptr, g.indices, g.dtype, NULL, &gg));
    uint8_t *bitmap = make_bitmap(state, g.n, 400);
    int fan[2] = {5, 3};
    gd_sampler_t *s = NULL;
    gd_sampler_options o = GD_SAMPLER_OPTIONS_INIT;
    T_ASSERT(o.bias_bitmap == NULL && o.bias_factor == 0);
    o.max_batch = 16;
    o.bias_factor = -1;
    T_FAILS(gd_sampler_create(gg, fan, 2, &o, &s), GD_ERR_INVALID_ARG, "bias_factor -1");
    o.bias_factor = GD_SAMPLER_MAX_BIAS + 1;
    T_FAILS(gd_sampler_create(gg, fan, 2, &o, &s), GD_ERR_INVALID_ARG, "bias_factor");
    o.bias_factor = 2;
    T_FAILS(gd_sampler_create(gg, fan, 2, &o, &s), GD_ERR_INVALID_ARG, "bias_bitmap");
    T_ASSERT(s == NULL);
    /* A caller built before the fields existed gets uniform sampling. */
    o.bias_bitmap = bitmap;
    o.size = offsetof(gd_sampler_options, bias_bitmap);
    T_OK(gd_sampler_create(gg, fan, 2, &o, &s));
    T_EQ_INT(s->bias_factor, 1);
    gd_sampler_destroy(s);
    o.size = sizeof o;
    o.bias_factor = GD_SAMPLER_MAX_BIAS;
    T_OK(gd_sampler_create(gg, fan, 2, &o, &s));
    T_EQ_INT(s->bias_factor, GD_SAMPLER_MAX_BIAS);
    gd_sampler_destroy(s);
    /* The bitmap is copied: changing the caller's after create changes nothing. */
    o.bias_factor = 8;
    gd_sampler_t *s2 = NULL;
    T_OK(gd_sampler_create(gg, fan, 2, &o, &s));
    uint8_t *changed = malloc((size_t)(g.n + 7) / 8);
    T_ASSERT(changed);
    for (int64_t i = 0; i < (g.n + 7) / 8; i++) changed[i] = (uint8_t)~bitmap[i];
    o.bias_bitmap = changed;
    T_OK(gd_sampler_create(gg, fan, 2, &o, &s2));
    for (int64_t i = 0; i < (g.n + 7) / 8; i++) bitmap[i] = changed[i];
    gd_minibatch_t *m, *m2;
    T_OK(gd_minibatch_create(s, &m));
    T_OK(gd_minibatch_create(s2, &m2));
    int64_t seeds[16];
    make_seeds(state, g.n, 16, seeds);
    T_OK(gd_sample(s, seeds, 16, 0, 0, 0, NULL, m));
    T_OK(gd_sample(s2, seeds, 16, 0, 0, 0, NULL, m2));
    host_mb a = to_host(m), b = to_host(m2);
    for (int i = 0; i < (g.n + 7) / 8; i++) bitmap[i] = (uint8_t)~changed[i];
    host_mb r = reference_biased(&g, fan, 2, 0, bitmap, 8, 0, 0, 0, seeds, 16);
    expect_equal(&r, &a, "a sampler keeps the bitmap it was created with");
    host_mb_free(&r);
    r = reference_biased(&g, fan, 2, 0, changed, 8, 0, 0, 0, seeds, 16);
    expect_equal(&r, &b, "a second sampler with another bitmap");
    host_mb_free(&r);
    host_mb_free(&a);
    host_mb_free(&b);
    /* The link ceiling's read plan follows the uniform draws only. */
    gd__read_plan plan;
    memset(&plan, 0, sizeof plan);
    T_FAILS(gd__read_plan_add(&plan, s, m, 0, 0), GD_ERR_INVALID_ARG, "biased");
    gd__read_plan_free(&plan);
    gd_minibatch_destroy(m);
    gd_minibatch_destroy(m2);
    gd_sampler_destroy(s);
    gd_sampler_destroy(s2);
    free(changed);
    free(bitmap);
    gd_graph_destroy(gg);
    free_graph(&g);
}

static void check_faults(uint64_t *state) {
    graph g = make_graph(state, 400, 6, GD_DTYPE_INT64);
    uint8_t *bitmap = make_bitmap(state, g.n, 300);
    int fan[2] = {10, 4};
    gd_sampler_options o = GD_SAMPLER_OPTIONS_INIT;
    o.max_batch = 32;
    o.threads = 2;
    o.bias_bitmap = bitmap;
    o.bias_factor = 5;
    gd_graph_t *gg = NULL;
    T_OK(gd_graph_create(g.n, g.indptr, g.indices, g.dtype, NULL, &gg));
    int64_t calls = 0;
    for (int64_t k = 0;; k++) {
        gd_fault_set(GD_FAULT_ALLOC, k);
        gd_sampler_t *s = NULL;
        gd_status st = gd_sampler_create(gg, fan, 2, &o, &s);
        if (k == 0) {
            T_OK(st);
            calls = gd_fault_calls(GD_FAULT_ALLOC);
        } else {
            T_EQ_INT(st, GD_ERR_NO_MEMORY);
            T_ASSERT(s == NULL && strlen(gd_last_error()) > 0);
        }
        gd_sampler_destroy(s);
        if (k == calls) break;
    }
    gd_fault_set(GD_FAULT_ALLOC, 0);
    T_ASSERT(calls >= 3);
    gd_graph_destroy(gg);
    free(bitmap);
    free_graph(&g);
}

int main(void) {
    uint64_t state = t_seed();
    check_api(&state);
    check_factor_one(&state);
    check_distribution();
    check_cpu_sampler(&state, 1);
    check_faults(&state);
    t_check_no_leaks();
    printf("biased sampling checks passed\n");
    return 0;
}
