/*
 * The nn ops on the CPU backend: every op's gradient against central finite differences in
 * float64 (through a random projection of its output, so that one scalar covers every output
 * element), float32 against float64 on the same inputs, and the sanity checks that pin each op
 * to its definition: GEMM in every transpose against a plain triple loop (OpenBLAS and the
 * built-in loop), softmax cross-entropy against the direct formula, Adam's step against
 * torch.optim's formula, dropout's expectation and determinism, mean aggregation of a node
 * without neighbours = 0 (as PyG), and the checked front-ends' messages.
 */
#include "nn/gemm_cpu.h"
#include "test_nn_util.h"

#define F64 GD_DTYPE_FLOAT64
#define F32 GD_DTYPE_FLOAT32

static gd__nn_ctx ctx;

static double dot(const gd__nn_tensor *a, const gd__nn_tensor *b) {
    double s = 0;
    for (int64_t i = 0; i < gd__nn_numel(a); i++) s += t_get(a, i) * t_get(b, i);
    return s;
}

typedef double (*scalar_fn)(void *user);

/* Central differences of fn over every element of x against the analytic gradient g. */
static void fd_check(const char *what, scalar_fn fn, void *user, gd__nn_tensor *x,
                     const gd__nn_tensor *g, double tol) {
    const double h = 1e-6;
    double worst = 0;
    for (int64_t i = 0; i < gd__nn_numel(x); i++) {
        const double x0 = t_get(x, i);
        t_set(x, i, x0 + h);
        const double fp = fn(user);
        t_set(x, i, x0 - h);
        const double fm = fn(user);
        t_set(x, i, x0);
        const double num = (fp - fm) / (2 * h), err = t_grad_err(t_get(g, i), num);
        if (err > worst) worst = err;
        if (err > tol)
            T_FAIL_("%s: gradient element %lld: analytic %.10g, finite difference %.10g", what,
                    (long long)i, t_get(g, i), num);
    }
    fprintf(stderr, "%-34s %6lld elements, worst relative error %.2e\n", what,
            (long long)gd__nn_numel(x), worst);
}

/* a and b within tol relative to max(1, |a|). */
static void near_all(const char *what, const gd__nn_tensor *a, const gd__nn_tensor *b, double tol) {
    T_EQ_INT(gd__nn_numel(a), gd__nn_numel(b));
    for (int64_t i = 0; i < gd__nn_numel(a); i++) {
        const double x = t_get(a, i), y = t_get(b, i), s = fabs(x) > 1 ? fabs(x) : 1;
        if (!(fabs(x - y) <= tol * s))
            T_FAIL_("%s: element %lld: %.9g vs %.9g (tolerance %g)", what, (long long)i, x, y, tol);
    }
}

static gd__nn_tensor like(const gd__nn_tensor *t, gd_dtype dtype) {
    gd__nn_tensor c = t_tensor(dtype, t->rows, t->cols, NULL, 0);
    t_copy(t, &c);
    return c;
}

/* ------------------------------------------------------------------ GEMM */

static void naive_gemm(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha,
                       const gd__nn_tensor *a, const gd__nn_tensor *b, double beta,
                       const gd__nn_tensor *c0, double *out) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t p = 0; p < k; p++)
                s += t_get(a, ta ? p * m + i : i * k + p) * t_get(b, tb ? j * k + p : p * n + j);
            out[i * n + j] = alpha * s + (beta != 0 ? beta * t_get(c0, i * n + j) : 0);
        }
}

static void check_gemm(uint64_t *state) {
    const int64_t sizes[][3] = {{1, 1, 1},      {3, 5, 0},     {7, 1, 9},    {17, 33, 65},
                                {70, 300, 130}, {129, 257, 3}, {2, 600, 200}};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (int f64 = 0; f64 < 2; f64++)
                    for (int impl = 0; impl < 2; impl++) {
                        const int64_t m = sizes[si][0], n = sizes[si][1], k = sizes[si][2];
                        const gd_dtype dt = f64 ? F64 : F32;
                        gd__nn_tensor a =
                            ta ? t_tensor(dt, k, m, state, 1) : t_tensor(dt, m, k, state, 1);
                        gd__nn_tensor b =
                            tb ? t_tensor(dt, n, k, state, 1) : t_tensor(dt, k, n, state, 1);
                        gd__nn_tensor c = t_tensor(dt, m, n, state, 1);
                        double *want = malloc(sizeof *want * (size_t)(m * n));
                        T_ASSERT(want);
                        const double beta = (si + (size_t)ta) % 2 ? 0.5 : 0.0;
                        naive_gemm(ta, tb, m, n, k, 0.75, &a, &b, beta, &c, want);
                        if (beta == 0) /* poison: beta = 0 must not read C */
                            for (int64_t i = 0; i < m * n; i++) t_set(&c, i, NAN);
                        if (impl == 0) {
                            T_OK(gd__nn_gemm(&ctx, ta, tb, 0.75, &a, &b, beta, &c));
                        } else if (f64) {
                            gd__nn_gemm_ref_f64(ta, tb, m, n, k, 0.75, a.data, b.data, beta, c.data,
                                                4);
                        } else {
                            gd__nn_gemm_ref_f32(ta, tb, m, n, k, 0.75f, a.data, b.data, (float)beta,
                                                c.data, 4);
                        }
                        const double tol = (f64 ? 1e-13 : 3e-6) * (double)(k + 1);
                        for (int64_t i = 0; i < m * n; i++)
                            if (!(fabs(t_get(&c, i) - want[i]) <= tol))
                                T_FAIL_("gemm %s %c%c %lldx%lldx%lld (%s): C[%lld] = %.9g, want "
                                        "%.9g",
                                        f64 ? "f64" : "f32", ta ? 'T' : 'N', tb ? 'T' : 'N',
                                        (long long)m, (long long)n, (long long)k,
                                        impl ? "built-in"
                                             : (gd__nn_have_cblas() ? "cblas" : "built-in"),
                                        (long long)i, t_get(&c, i), want[i]);
                        free(want);
                        t_tensor_free(&a);
                        t_tensor_free(&b);
                        t_tensor_free(&c);
                    }
    fprintf(stderr,
            "gemm: every transpose, both types, %s and the built-in loop agree with a "
            "triple loop\n",
            gd__nn_have_cblas() ? "OpenBLAS" : "(no OpenBLAS in this build)");
}

/* ---------------------------------------------------------------- linear */

typedef struct {
    gd__nn_tensor x, w, b, y, r;
} linear_case;

static double linear_fn(void *u) {
    linear_case *c = u;
    T_OK(gd__nn_linear(&ctx, &c->x, &c->w, &c->b, &c->y, 0));
    return dot(&c->r, &c->y);
}

static void check_linear(uint64_t *state) {
    const int64_t n = 7, in = 5, out = 4;
    linear_case c = {t_tensor(F64, n, in, state, 1), t_tensor(F64, in, out, state, 1),
                     t_tensor(F64, 1, out, state, 1), t_tensor(F64, n, out, NULL, 0),
                     t_tensor(F64, n, out, state, 1)};
    gd__nn_tensor dx = t_tensor(F64, n, in, NULL, 0), dw = t_tensor(F64, in, out, NULL, 0),
                  db = t_tensor(F64, 1, out, NULL, 0);
    T_OK(gd__nn_linear_backward(&ctx, &c.x, &c.w, &c.r, &dx, 0, &dw, &db, 0));
    fd_check("linear dx", linear_fn, &c, &c.x, &dx, 1e-8);
    fd_check("linear dW", linear_fn, &c, &c.w, &dw, 1e-8);
    fd_check("linear db", linear_fn, &c, &c.b, &db, 1e-8);

    /* Accumulating adds to what is there. */
    gd__nn_tensor dx2 = t_tensor(F64, n, in, state, 1), dw2 = t_tensor(F64, in, out, state, 1),
                  db2 = t_tensor(F64, 1, out, state, 1);
    gd__nn_tensor dx0 = like(&dx2, F64), dw0 = like(&dw2, F64), db0 = like(&db2, F64);
    T_OK(gd__nn_linear_backward(&ctx, &c.x, &c.w, &c.r, &dx2, 1, &dw2, &db2, 1));
    for (int64_t i = 0; i < n * in; i++)
        T_NEAR(t_get(&dx2, i), t_get(&dx0, i) + t_get(&dx, i), 1e-12);
    for (int64_t i = 0; i < in * out; i++)
        T_NEAR(t_get(&dw2, i), t_get(&dw0, i) + t_get(&dw, i), 1e-12);
    for (int64_t i = 0; i < out; i++) T_NEAR(t_get(&db2, i), t_get(&db0, i) + t_get(&db, i), 1e-12);
    T_OK(gd__nn_linear(&ctx, &c.x, &c.w, &c.b, &c.y, 0));
    gd__nn_tensor y2 = like(&c.y, F64);
    T_OK(gd__nn_linear(&ctx, &c.x, &c.w, NULL, &y2, 1)); /* y2 = y + x W */
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < out; j++)
            T_NEAR(t_get(&y2, i * out + j), 2 * t_get(&c.y, i * out + j) - t_get(&c.b, j), 1e-12);

    /* float32 against float64. */
    gd__nn_tensor x32 = like(&c.x, F32), w32 = like(&c.w, F32), b32 = like(&c.b, F32),
                  r32 = like(&c.r, F32), y32 = t_tensor(F32, n, out, NULL, 0),
                  dx32 = t_tensor(F32, n, in, NULL, 0), dw32 = t_tensor(F32, in, out, NULL, 0),
                  db32 = t_tensor(F32, 1, out, NULL, 0);
    T_OK(gd__nn_linear(&ctx, &x32, &w32, &b32, &y32, 0));
    T_OK(gd__nn_linear_backward(&ctx, &x32, &w32, &r32, &dx32, 0, &dw32, &db32, 0));
    near_all("linear y f32", &y32, &c.y, 1e-5);
    near_all("linear dx f32", &dx32, &dx, 1e-5);
    near_all("linear dW f32", &dw32, &dw, 1e-5);
    near_all("linear db f32", &db32, &db, 1e-5);

    /* Wrong shapes, dtypes and devices are named. */
    gd__nn_tensor bad = gd__nn_rows(&c.y, n - 1);
    T_FAILS(gd__nn_linear(&ctx, &c.x, &c.w, &c.b, &bad, 0), GD_ERR_INVALID_ARG,
            "y is 6 x 4, expected 7 x 4");
    T_FAILS(gd__nn_linear(&ctx, &c.x, &w32, &c.b, &c.y, 0), GD_ERR_INVALID_ARG,
            "W is float32, expected float64");
    gd__nn_tensor on_gpu = c.w;
    on_gpu.device = 0;
    T_FAILS(gd__nn_linear(&ctx, &c.x, &on_gpu, &c.b, &c.y, 0), GD_ERR_INVALID_ARG,
            "W is in cuda:0 memory but the op runs on host");
    T_FAILS(gd__nn_gemm(&ctx, GD__NN_N, GD__NN_N, 1, &c.x, &c.x, 0, &c.y), GD_ERR_INVALID_ARG,
            "op(A) is 7 x 5, op(B) 7 x 5");

    gd__nn_tensor *all[] = {&c.x, &c.w, &c.b, &c.y, &c.r,  &dx,   &dw,  &db,
                            &dx2, &dw2, &db2, &dx0, &dw0,  &db0,  &y2,  &x32,
                            &w32, &b32, &r32, &y32, &dx32, &dw32, &db32};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) t_tensor_free(all[i]);
}

/* ------------------------------------------------------- mean aggregation */

typedef struct {
    gd_block blk;
    gd__nn_tensor x, out, r;
} agg_case;

static double agg_fn(void *u) {
    agg_case *c = u;
    T_OK(gd__nn_mean_agg(&ctx, &c->blk, &c->x, &c->out));
    return dot(&c->r, &c->out);
}

static void check_mean_agg(uint64_t *state) {
    const int64_t nd = 9, ns = 20, f = 3;
    agg_case c;
    c.blk = t_block(state, nd, ns, 5, 3);
    /* Make sure of a node without neighbours: destination 2. */
    int32_t *indptr = (int32_t *)c.blk.indptr, *indices = (int32_t *)c.blk.indices;
    const int32_t gone = indptr[3] - indptr[2];
    for (int32_t e = indptr[3]; e < indptr[nd]; e++) indices[e - gone] = indices[e];
    for (int64_t d = 3; d <= nd; d++) indptr[d] -= gone;
    c.blk.num_edges = indptr[nd];
    c.x = t_tensor(F64, ns, f, state, 1);
    c.out = t_tensor(F64, nd, f, state, 1); /* garbage that must be overwritten */
    c.r = t_tensor(F64, nd, f, state, 1);
    T_OK(gd__nn_mean_agg(&ctx, &c.blk, &c.x, &c.out));
    for (int64_t d = 0; d < nd; d++)
        for (int64_t j = 0; j < f; j++) {
            double s = 0;
            const int32_t deg = indptr[d + 1] - indptr[d];
            for (int32_t e = indptr[d]; e < indptr[d + 1]; e++)
                s += t_get(&c.x, indices[e] * f + j);
            T_NEAR(t_get(&c.out, d * f + j), deg ? s / deg : 0.0, 1e-12);
        }
    for (int64_t j = 0; j < f; j++) T_EQ_INT(t_get(&c.out, 2 * f + j) == 0.0, 1);

    gd__nn_tensor dx = t_tensor(F64, ns, f, NULL, 0);
    T_OK(gd__nn_mean_agg_backward(&ctx, &c.blk, &c.r, &dx));
    fd_check("mean aggregation dx", agg_fn, &c, &c.x, &dx, 1e-8);

    gd__nn_tensor x32 = like(&c.x, F32), r32 = like(&c.r, F32), o32 = t_tensor(F32, nd, f, NULL, 0),
                  dx32 = t_tensor(F32, ns, f, NULL, 0);
    T_OK(gd__nn_mean_agg(&ctx, &c.blk, &c.x, &c.out)); /* the finite differences left it off */
    T_OK(gd__nn_mean_agg(&ctx, &c.blk, &x32, &o32));
    T_OK(gd__nn_mean_agg_backward(&ctx, &c.blk, &r32, &dx32));
    near_all("mean aggregation f32", &o32, &c.out, 1e-6);
    near_all("mean aggregation dx f32", &dx32, &dx, 1e-6);

    gd_block bad = c.blk;
    bad.num_dst = ns + 1;
    T_FAILS(gd__nn_mean_agg(&ctx, &bad, &c.x, &c.out), GD_ERR_INVALID_ARG, "prefix");
    gd__nn_tensor short_x = gd__nn_rows(&c.x, ns - 1);
    T_FAILS(gd__nn_mean_agg(&ctx, &c.blk, &short_x, &c.out), GD_ERR_INVALID_ARG,
            "x has 19 rows but the block 20 source nodes");

    t_block_free(&c.blk);
    gd__nn_tensor *all[] = {&c.x, &c.out, &c.r, &dx, &x32, &r32, &o32, &dx32};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) t_tensor_free(all[i]);
}

/* ------------------------------------------------------------------ ReLU */

typedef struct {
    gd__nn_tensor x, y, r;
} unary_case;

static double relu_fn(void *u) {
    unary_case *c = u;
    T_OK(gd__nn_relu(&ctx, &c->x, &c->y));
    return dot(&c->r, &c->y);
}

static void check_relu(uint64_t *state) {
    unary_case c = {t_tensor(F64, 6, 7, state, 1), t_tensor(F64, 6, 7, NULL, 0),
                    t_tensor(F64, 6, 7, state, 1)};
    /* Keep away from the kink, where finite differences do not apply. */
    for (int64_t i = 0; i < 42; i++)
        if (fabs(t_get(&c.x, i)) < 0.05) t_set(&c.x, i, t_get(&c.x, i) < 0 ? -0.5 : 0.5);
    gd__nn_tensor dx = t_tensor(F64, 6, 7, NULL, 0);
    T_OK(gd__nn_relu(&ctx, &c.x, &c.y));
    for (int64_t i = 0; i < 42; i++) T_EQ_INT(t_get(&c.y, i) == fmax(t_get(&c.x, i), 0.0), 1);
    T_OK(gd__nn_relu_backward(&ctx, &c.y, &c.r, &dx));
    fd_check("relu dx", relu_fn, &c, &c.x, &dx, 1e-8);
    /* In place, both ways. */
    T_OK(gd__nn_relu(&ctx, &c.x, &c.y));
    gd__nn_tensor z = like(&c.x, F64), g = like(&c.r, F64);
    T_OK(gd__nn_relu(&ctx, &z, &z));
    T_OK(gd__nn_relu_backward(&ctx, &z, &g, &g));
    near_all("relu in place", &z, &c.y, 0);
    near_all("relu backward in place", &g, &dx, 0);
    gd__nn_tensor *all[] = {&c.x, &c.y, &c.r, &dx, &z, &g};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) t_tensor_free(all[i]);
}

/* --------------------------------------------------------------- dropout */

typedef struct {
    gd__nn_tensor x, y, r;
    double p;
    uint64_t seed;
} dropout_case;

static double dropout_fn(void *u) {
    dropout_case *c = u;
    T_OK(gd__nn_dropout(&ctx, c->p, c->seed, 3, NULL, &c->x, &c->y));
    return dot(&c->r, &c->y);
}

static void check_dropout(uint64_t *state) {
    dropout_case c = {t_tensor(F64, 9, 8, state, 1), t_tensor(F64, 9, 8, NULL, 0),
                      t_tensor(F64, 9, 8, state, 1), 0.4, t_rand(state)};
    gd__nn_tensor dx = t_tensor(F64, 9, 8, NULL, 0);
    T_OK(gd__nn_dropout_backward(&ctx, c.p, c.seed, 3, NULL, &c.r, &dx));
    fd_check("dropout dx", dropout_fn, &c, &c.x, &dx, 1e-8);

    /* Expectation and drop rate on a large tensor of ones; determinism for a key. */
    const int64_t n = 1 << 20;
    const double ps[] = {0.0, 0.1, 0.5, 0.9};
    gd__nn_tensor ones = t_tensor(F32, 1, n, NULL, 0), a = t_tensor(F32, 1, n, NULL, 0),
                  b = t_tensor(F32, 1, n, NULL, 0);
    for (int64_t i = 0; i < n; i++) t_set(&ones, i, 1.0);
    for (int k = 0; k < 4; k++) {
        const double p = ps[k];
        const uint64_t seed = t_rand(state);
        T_OK(gd__nn_dropout(&ctx, p, seed, 1, NULL, &ones, &a));
        double sum = 0;
        int64_t kept = 0;
        for (int64_t i = 0; i < n; i++) {
            sum += t_get(&a, i);
            kept += t_get(&a, i) != 0;
            if (t_get(&a, i) != 0) T_NEAR(t_get(&a, i), 1.0 / (1.0 - p), 1e-6);
        }
        const double sd = sqrt(p * (1 - p) / (double)n);
        T_NEAR((double)kept / (double)n, 1.0 - p, 6 * sd + 1e-12);
        T_NEAR(sum / (double)n, 1.0, 6 * sd / (1 - p) + 1e-6);
        /* The same key gives the same mask; in place gives the same result. */
        T_OK(gd__nn_dropout(&ctx, p, seed, 1, NULL, &ones, &b));
        T_EQ_INT(memcmp(a.data, b.data, sizeof(float) * (size_t)n), 0);
        for (int64_t i = 0; i < n; i++) t_set(&b, i, 1.0);
        T_OK(gd__nn_dropout(&ctx, p, seed, 1, NULL, &b, &b));
        T_EQ_INT(memcmp(a.data, b.data, sizeof(float) * (size_t)n), 0);
        if (p == 0) continue;
        /* Another stream or seed gives an independent mask: agreement ~ p^2 + (1-p)^2. */
        for (int other = 0; other < 2; other++) {
            T_OK(gd__nn_dropout(&ctx, p, other ? seed + 1 : seed, other ? 1 : 2, NULL, &ones, &b));
            int64_t same = 0;
            for (int64_t i = 0; i < n; i++) same += (t_get(&a, i) != 0) == (t_get(&b, i) != 0);
            const double q = p * p + (1 - p) * (1 - p);
            T_NEAR((double)same / (double)n, q, 6 * sqrt(q * (1 - q) / (double)n));
        }
        /* float64 drops the same elements as float32. */
        gd__nn_tensor d64 = t_tensor(F64, 1, 4096, NULL, 0);
        gd__nn_tensor o64 = t_tensor(F64, 1, 4096, NULL, 0);
        for (int64_t i = 0; i < 4096; i++) t_set(&d64, i, 1.0);
        T_OK(gd__nn_dropout(&ctx, p, seed, 1, NULL, &d64, &o64));
        for (int64_t i = 0; i < 4096; i++) T_EQ_INT(t_get(&o64, i) != 0, t_get(&a, i) != 0);
        t_tensor_free(&d64);
        t_tensor_free(&o64);
    }
    T_FAILS(gd__nn_dropout(&ctx, 1.0, 1, 0, NULL, &ones, &a), GD_ERR_INVALID_ARG, "p = 1");
    T_FAILS(gd__nn_dropout(&ctx, -0.1, 1, 0, NULL, &ones, &a), GD_ERR_INVALID_ARG, "not in [0, 1)");
    gd__nn_tensor *all[] = {&c.x, &c.y, &c.r, &dx, &ones, &a, &b};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) t_tensor_free(all[i]);
}

/* ---------------------------------------------- softmax cross-entropy */

typedef struct {
    gd__nn_tensor z, loss;
    int64_t *labels;
} xent_case;

static double xent_fn(void *u) {
    xent_case *c = u;
    T_OK(gd__nn_softmax_xent(&ctx, &c->z, c->labels, 1.0, &c->loss, NULL));
    return t_get(&c->loss, 0);
}

/* The direct formula: -log(exp(z_y) / sum_j exp(z_j)), averaged over labelled rows. */
static double xent_direct(const gd__nn_tensor *z, const int64_t *labels) {
    double total = 0;
    int64_t count = 0;
    for (int64_t i = 0; i < z->rows; i++) {
        if (labels[i] < 0) continue;
        double s = 0;
        for (int64_t j = 0; j < z->cols; j++) s += exp(t_get(z, i * z->cols + j));
        total += -log(exp(t_get(z, i * z->cols + labels[i])) / s);
        count++;
    }
    return count ? total / (double)count : 0.0;
}

static void check_softmax_xent(uint64_t *state) {
    const int64_t n = 8, k = 5;
    int64_t labels[8];
    for (int i = 0; i < n; i++) labels[i] = (int64_t)(t_rand(state) % k);
    labels[3] = -1; /* ignored */
    xent_case c = {t_tensor(F64, n, k, state, 3), t_tensor(F64, 1, 1, NULL, 0), labels};
    gd__nn_tensor dz = t_tensor(F64, n, k, state, 1); /* garbage, overwritten */
    T_OK(gd__nn_softmax_xent(&ctx, &c.z, labels, 1.0, &c.loss, &dz));
    T_NEAR(t_get(&c.loss, 0), xent_direct(&c.z, labels), 1e-12);
    for (int64_t j = 0; j < k; j++) T_EQ_INT(t_get(&dz, 3 * k + j) == 0.0, 1);
    fd_check("softmax cross-entropy dz", xent_fn, &c, &c.z, &dz, 1e-8);

    /* scale multiplies the gradient only. */
    T_OK(gd__nn_softmax_xent(&ctx, &c.z, labels, 1.0, &c.loss, NULL));
    gd__nn_tensor dz2 = t_tensor(F64, n, k, NULL, 0), loss2 = t_tensor(F64, 1, 1, NULL, 0);
    T_OK(gd__nn_softmax_xent(&ctx, &c.z, labels, 2.5, &loss2, &dz2));
    T_NEAR(t_get(&loss2, 0), t_get(&c.loss, 0), 0);
    for (int64_t i = 0; i < n * k; i++) T_NEAR(t_get(&dz2, i), 2.5 * t_get(&dz, i), 1e-15);

    /* float32, with logits large enough to overflow a naive exp. */
    gd__nn_tensor z32 = like(&c.z, F32), dz32 = t_tensor(F32, n, k, NULL, 0),
                  l32 = t_tensor(F32, 1, 1, NULL, 0);
    T_OK(gd__nn_softmax_xent(&ctx, &z32, labels, 1.0, &l32, &dz32));
    T_NEAR(t_get(&l32, 0), t_get(&c.loss, 0), 1e-5);
    near_all("softmax cross-entropy dz f32", &dz32, &dz, 1e-6);
    for (int64_t i = 0; i < n * k; i++) t_set(&z32, i, t_get(&c.z, i) + 1000.0);
    T_OK(gd__nn_softmax_xent(&ctx, &z32, labels, 1.0, &l32, &dz32));
    T_NEAR(t_get(&l32, 0), t_get(&c.loss, 0), 1e-3); /* float32 keeps ~4 digits past 1000 */
    T_ASSERT(isfinite(t_get(&l32, 0)));

    /* Accuracy: the first maximal logit against the label, ignored rows not counted. */
    int64_t correct = -1, want = 0;
    for (int64_t i = 0; i < n; i++) {
        if (labels[i] < 0) continue;
        int64_t arg = 0;
        for (int64_t j = 1; j < k; j++)
            if (t_get(&c.z, i * k + j) > t_get(&c.z, i * k + arg)) arg = j;
        want += arg == labels[i];
    }
    T_OK(gd__nn_accuracy(&ctx, &c.z, labels, &correct));
    T_EQ_INT(correct, want);
    for (int64_t i = 0; i < n; i++) t_set(&c.z, i * k + (labels[i] < 0 ? 0 : labels[i]), 50.0);
    T_OK(gd__nn_accuracy(&ctx, &c.z, labels, &correct));
    T_EQ_INT(correct, n - 1);

    /* Every row ignored: loss and gradient 0. A label past the classes is named. */
    int64_t none[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
    T_OK(gd__nn_softmax_xent(&ctx, &c.z, none, 1.0, &c.loss, &dz));
    T_NEAR(t_get(&c.loss, 0), 0.0, 0);
    for (int64_t i = 0; i < n * k; i++) T_NEAR(t_get(&dz, i), 0.0, 0);
    labels[6] = k;
    T_FAILS(gd__nn_softmax_xent(&ctx, &c.z, labels, 1.0, &c.loss, &dz), GD_ERR_RANGE,
            "label 5 of row 6");
    gd__nn_tensor *all[] = {&c.z, &c.loss, &dz, &dz2, &loss2, &z32, &dz32, &l32};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) t_tensor_free(all[i]);
}

/* ------------------------------------------------------------------ Adam */

static void check_adam(uint64_t *state) {
    for (int f64 = 0; f64 < 2; f64++)
        for (int decoupled = 0; decoupled < 2; decoupled++) {
            const gd_dtype dt = f64 ? F64 : F32;
            gd__nn_params p = {0};
            p.dtype = dt;
            int i0, i1;
            T_OK(gd__nn_params_add(&p, 3, 5, 3, &i0));
            T_OK(gd__nn_params_add(&p, 1, 7, 3, &i1));
            T_EQ_INT(p.offset[i1], GD__NN_PARAM_ALIGN); /* each tensor on its own boundary */
            T_OK(gd__nn_params_alloc(&ctx, &p));
            T_EQ_INT(p.numel % GD__NN_PARAM_ALIGN, 0);
            T_OK(gd__nn_params_init(&ctx, &p, t_rand(state)));
            gd__nn_tensor w = gd__nn_param(&p, i0), b = gd__nn_param(&p, i1);
            for (int64_t i = 0; i < 15; i++) T_ASSERT(fabs(t_get(&w, i)) <= 1 / sqrt(3.0));
            for (int64_t i = 0; i < 7; i++) T_ASSERT(fabs(t_get(&b, i)) <= 1 / sqrt(3.0));

            gd__nn_adam_options o = GD__NN_ADAM_OPTIONS_INIT;
            o.lr = 0.01;
            o.weight_decay = 0.05;
            o.decoupled = decoupled;
            const int64_t n = p.numel;
            double *rp = malloc(sizeof(double) * (size_t)n), *rm = calloc((size_t)n, 8),
                   *rv = calloc((size_t)n, 8);
            T_ASSERT(rp && rm && rv);
            for (int64_t i = 0; i < n; i++) rp[i] = t_get(&p.params, i);
            /* Five steps against torch.optim.Adam / AdamW, written out per element. */
            for (int t = 1; t <= 5; t++) {
                T_OK(gd__nn_params_zero_grad(&ctx, &p));
                gd__nn_tensor gw = gd__nn_grad(&p, i0), gb = gd__nn_grad(&p, i1);
                for (int64_t i = 0; i < 15; i++) t_set(&gw, i, t_unif(state));
                for (int64_t i = 0; i < 7; i++) t_set(&gb, i, t_unif(state));
                for (int64_t i = 0; i < n; i++) {
                    double g = t_get(&p.grads, i), q = rp[i];
                    if (decoupled)
                        q *= 1 - o.lr * o.weight_decay;
                    else
                        g += o.weight_decay * q;
                    rm[i] = o.beta1 * rm[i] + (1 - o.beta1) * g;
                    rv[i] = o.beta2 * rv[i] + (1 - o.beta2) * g * g;
                    const double mh = rm[i] / (1 - pow(o.beta1, t)),
                                 vh = rv[i] / (1 - pow(o.beta2, t));
                    rp[i] = q - o.lr * mh / (sqrt(vh) + o.eps);
                }
                T_OK(gd__nn_params_adam(&ctx, &p, &o));
                T_EQ_INT(p.step, t);
                for (int64_t i = 0; i < n; i++)
                    if (!(fabs(t_get(&p.params, i) - rp[i]) <= (f64 ? 1e-13 : 1e-6)))
                        T_FAIL_("adam %s%s step %d: param %lld = %.10g, formula %.10g",
                                f64 ? "f64" : "f32", decoupled ? "W" : "", t, (long long)i,
                                t_get(&p.params, i), rp[i]);
            }
            /* Padding between and after tensors stays 0. */
            for (int64_t i = 15; i < GD__NN_PARAM_ALIGN; i++) T_EQ_INT(t_get(&p.params, i) == 0, 1);
            free(rp);
            free(rm);
            free(rv);
            gd__nn_params_free(&ctx, &p);
        }
    gd__nn_params p = {0};
    p.dtype = F32;
    T_OK(gd__nn_params_add(&p, 2, 2, 2, NULL));
    T_OK(gd__nn_params_alloc(&ctx, &p));
    gd__nn_adam_options o = GD__NN_ADAM_OPTIONS_INIT;
    o.beta2 = 1.0;
    T_FAILS(gd__nn_params_adam(&ctx, &p, &o), GD_ERR_INVALID_ARG, "betas (0.9, 1)");
    T_FAILS(gd__nn_params_add(&p, 2, 2, 2, NULL), GD_ERR_INVALID_ARG, "before allocating");
    gd__nn_params_free(&ctx, &p);
    fprintf(stderr, "adam: five steps of Adam and AdamW equal torch.optim's formula\n");
}

static void check_faults(void) {
    gd__nn_tensor t;
    gd_fault_set(GD_FAULT_ALLOC, 1);
    T_FAILS(gd__nn_tensor_alloc(&ctx, F32, 3, 3, &t), GD_ERR_NO_MEMORY, "nn tensor");
    gd_fault_set(GD_FAULT_ALLOC, 0);
    T_FAILS(gd__nn_tensor_alloc(&ctx, F32, INT64_MAX / 2, 3, &t), GD_ERR_OVERFLOW, "overflows");
    T_FAILS(gd__nn_tensor_alloc(&ctx, GD_DTYPE_FLOAT16, 3, 3, &t), GD_ERR_UNSUPPORTED,
            "no float16 ops");
    for (int64_t k = 1; k <= 3; k++) {
        gd__nn_params p = {0};
        p.dtype = F32;
        T_OK(gd__nn_params_add(&p, 2, 2, 2, NULL));
        gd_fault_set(GD_FAULT_ALLOC, k);
        T_FAILS(gd__nn_params_alloc(&ctx, &p), GD_ERR_NO_MEMORY, "");
        gd_fault_set(GD_FAULT_ALLOC, 0);
        T_ASSERT(!p.params.data && !p.grads.data && !p.state.data);
        t_check_no_leaks();
    }
}

int main(void) {
    uint64_t state = t_seed();
    ctx = gd__nn_cpu_ctx();
    check_gemm(&state);
    check_linear(&state);
    check_mean_agg(&state);
    check_relu(&state);
    check_dropout(&state);
    check_softmax_xent(&state);
    check_adam(&state);
    check_faults();
    t_check_no_leaks();
    return 0;
}
