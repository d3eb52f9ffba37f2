/*
 * Random grouped GEMMs for test_grouped (CPU) and test_grouped_cuda: a few output buffers and
 * up to T_GMAX groups that write row prefixes of them (several groups summing into one buffer,
 * the later ones accumulating), with random transposes, inner dimensions (0 included) and
 * biases; and the oracle, the groups run one after another in double.
 */
#ifndef GD_TEST_GROUPED_UTIL_H
#define GD_TEST_GROUPED_UTIL_H

#include "test_nn_util.h"

#define T_GMAX 80 /* more than GD__NN_GROUP_MAX: the front-end's cut is tested too */
#define T_DMAX 6

typedef struct {
    gd_dtype dtype;
    int count, outs;
    gd__nn_tensor out[T_DMAX]; /* the outputs' contents before the call (host) */
    gd__nn_tensor a[T_GMAX], b[T_GMAX], bias[T_GMAX];
    int ta[T_GMAX], tb[T_GMAX], dst[T_GMAX], has_bias[T_GMAX], accumulate[T_GMAX];
    int64_t rows[T_GMAX];
} t_grouped;

/*
 * A random case: outs buffers of up to max_rows rows (widths 1..max_cols), count groups. The
 * first writer of a buffer overwrites or accumulates at random (its rows are poisoned with NaN
 * when it overwrites, so a read of them shows), the later ones accumulate.
 */
static inline void t_grouped_make(t_grouped *s, uint64_t *state, gd_dtype dtype, int count,
                                  int outs, int64_t max_rows, int64_t max_cols, int64_t max_k) {
    memset(s, 0, sizeof *s);
    s->dtype = dtype;
    s->count = count;
    s->outs = outs;
    int64_t cap[T_DMAX];
    int first[T_DMAX];
    for (int d = 0; d < outs; d++) {
        cap[d] = 1 + (int64_t)(t_rand(state) % (uint64_t)max_rows);
        s->out[d] =
            t_tensor(dtype, cap[d], 1 + (int64_t)(t_rand(state) % (uint64_t)max_cols), state, 1.0);
        first[d] = -1;
    }
    for (int j = 0; j < count; j++) {
        const int d = (int)(t_rand(state) % (uint64_t)outs);
        const int64_t m =
            t_rand(state) % 5 == 0 ? 0 : 1 + (int64_t)(t_rand(state) % (uint64_t)cap[d]);
        const int64_t n = s->out[d].cols;
        const int64_t k =
            t_rand(state) % 9 == 0 ? 0 : 1 + (int64_t)(t_rand(state) % (uint64_t)max_k);
        s->dst[j] = d;
        s->rows[j] = m;
        s->ta[j] = (int)(t_rand(state) % 2);
        s->tb[j] = (int)(t_rand(state) % 2);
        s->a[j] = s->ta[j] ? t_tensor(dtype, k, m, state, 1.0) : t_tensor(dtype, m, k, state, 1.0);
        s->b[j] = s->tb[j] ? t_tensor(dtype, n, k, state, 1.0) : t_tensor(dtype, k, n, state, 1.0);
        s->has_bias[j] = (int)(t_rand(state) % 2);
        s->bias[j] = t_tensor(dtype, 1, n, state, 1.0);
        if (m == 0) {
            s->accumulate[j] = (int)(t_rand(state) % 2);
            continue;
        }
        if (first[d] < 0) {
            first[d] = j;
            s->accumulate[j] = (int)(t_rand(state) % 2);
            if (!s->accumulate[j])
                for (int64_t i = 0; i < m * n; i++) t_set(&s->out[d], i, NAN);
        } else {
            s->accumulate[j] = 1;
        }
    }
}

static inline void t_grouped_free(t_grouped *s) {
    for (int d = 0; d < s->outs; d++) t_tensor_free(&s->out[d]);
    for (int j = 0; j < s->count; j++) {
        t_tensor_free(&s->a[j]);
        t_tensor_free(&s->b[j]);
        t_tensor_free(&s->bias[j]);
    }
}

/* The groups over tensors that hold the case's inputs and outputs (on any device). */
static inline void t_grouped_bind(const t_grouped *s, const gd__nn_tensor *out,
                                  const gd__nn_tensor *a, const gd__nn_tensor *b,
                                  const gd__nn_tensor *bias, gd__nn_gemm_group *g) {
    for (int j = 0; j < s->count; j++) {
        gd__nn_gemm_group x = {s->ta[j] ? GD__NN_T : GD__NN_N,
                               s->tb[j] ? GD__NN_T : GD__NN_N,
                               a[j],
                               b[j],
                               gd__nn_rows(&out[s->dst[j]], s->rows[j]),
                               bias[j],
                               s->has_bias[j],
                               s->accumulate[j]};
        g[j] = x;
    }
}

/* The oracle: out (host copies of the case's outputs, in double) after the groups in order. */
static inline void t_grouped_oracle(const t_grouped *s, double **out) {
    for (int d = 0; d < s->outs; d++)
        for (int64_t i = 0; i < gd__nn_numel(&s->out[d]); i++) out[d][i] = t_get(&s->out[d], i);
    for (int j = 0; j < s->count; j++) {
        const int64_t m = s->rows[j], n = s->out[s->dst[j]].cols;
        const int64_t k = s->ta[j] ? s->a[j].rows : s->a[j].cols;
        double *c = out[s->dst[j]];
        for (int64_t r = 0; r < m; r++)
            for (int64_t q = 0; q < n; q++) {
                double acc = s->accumulate[j] ? c[r * n + q] : 0.0;
                for (int64_t p = 0; p < k; p++) {
                    const double av = t_get(&s->a[j], s->ta[j] ? p * m + r : r * k + p);
                    const double bv = t_get(&s->b[j], s->tb[j] ? q * k + p : p * n + q);
                    acc += av * bv;
                }
                if (s->has_bias[j]) acc += t_get(&s->bias[j], q);
                c[r * n + q] = acc;
            }
    }
}

/* got (a host tensor) against the oracle's values: |w - g| <= tol * max(1, |w|). */
static inline double t_grouped_compare(const char *what, const double *want,
                                       const gd__nn_tensor *got, double tol) {
    double worst = 0;
    for (int64_t i = 0; i < gd__nn_numel(got); i++) {
        const double w = want[i], g = t_get(got, i);
        const double e = fabs(w - g) / (fabs(w) > 1 ? fabs(w) : 1);
        if (!(e <= tol))
            T_FAIL_("%s (%lld x %lld): element %lld: want %.12g, got %.12g (tolerance %g)", what,
                    (long long)got->rows, (long long)got->cols, (long long)i, w, g, tol);
        if (e > worst) worst = e;
    }
    return worst;
}

#endif
