/*
 * The grouped GEMM of the nn module on the CPU backend (internal.h, "Grouped GEMM"), float32
 * and float64, on fresh random cases: gd__nn_gemm_grouped against the groups run one after
 * another in double (several groups summing into one output, row prefixes of it, transposes,
 * inner dimensions of 0, biases, more groups than one backend call takes), by the CPU's grouped
 * op and by the per-group path (GD_NN_GROUPED=0); gd__nn_linear_grouped and
 * gd__nn_linear_backward_grouped against gd__nn_linear and gd__nn_linear_backward called group
 * by group, on relational shapes (relations summing into their destination type, the input
 * gradients of a type summed over its relations). Refusals: overlapping outputs that are not
 * prefixes of one another, a later writer that overwrites, a scratch too small, overlapping db.
 */
#include "test_grouped_util.h"

static gd__nn_ctx cpu;

/* One random case through gd__nn_gemm_grouped (grouped: the plan's path) against the oracle. */
static void check_gemm_case(uint64_t *state, gd_dtype dtype, int grouped) {
    t_grouped s;
    const int count = 1 + (int)(t_rand(state) % T_GMAX);
    t_grouped_make(&s, state, dtype, count, 1 + (int)(t_rand(state) % T_DMAX), 40, 24, 30);
    gd__nn_tensor work[T_DMAX];
    double *want[T_DMAX];
    for (int d = 0; d < s.outs; d++) {
        work[d] = t_tensor(dtype, s.out[d].rows, s.out[d].cols, NULL, 0);
        t_copy(&s.out[d], &work[d]);
        want[d] = malloc(sizeof(double) * (size_t)gd__nn_numel(&s.out[d]));
        T_ASSERT(want[d]);
    }
    gd__nn_gemm_group g[T_GMAX];
    t_grouped_bind(&s, work, s.a, s.b, s.bias, g);
    gd__nn_grouped plan;
    T_OK(gd__nn_grouped_create(&cpu, dtype, gd__nn_gemm_grouped_scratch(count, g), &plan));
    plan.grouped = grouped;
    T_OK(gd__nn_gemm_grouped(&cpu, &plan, count, g));
    t_grouped_oracle(&s, want);
    const double tol = dtype == GD_DTYPE_FLOAT64 ? 1e-12 : 2e-5;
    for (int d = 0; d < s.outs; d++) {
        t_grouped_compare(grouped ? "grouped GEMM (CPU)" : "per-group GEMM (CPU)", want[d],
                          &work[d], tol);
        t_tensor_free(&work[d]);
        free(want[d]);
    }
    gd__nn_grouped_destroy(&cpu, &plan);
    t_grouped_free(&s);
}

/*
 * A relational layer's products: R relations, relation r from type src[r] (x: ns x win) into
 * type dst[r] (y: nd x wout, the first nd rows of its type's nodes); the grouped forward and
 * backward against gd__nn_linear / gd__nn_linear_backward per relation.
 */
static void check_linear_case(uint64_t *state, gd_dtype dtype) {
    enum { T = 3, R = 7 };
    const double tol = dtype == GD_DTYPE_FLOAT64 ? 1e-12 : 2e-5;
    int64_t nodes[T], width[T];
    const int64_t wout = 1 + (int64_t)(t_rand(state) % 20);
    for (int t = 0; t < T; t++) {
        nodes[t] = (int64_t)(t_rand(state) % 50);
        width[t] = 1 + (int64_t)(t_rand(state) % 16);
    }
    gd__nn_tensor y[2][T], dx[2][T];
    for (int t = 0; t < T; t++) {
        y[0][t] = t_tensor(dtype, nodes[t], wout, state, 1.0);
        y[1][t] = t_tensor(dtype, nodes[t], wout, NULL, 0);
        t_copy(&y[0][t], &y[1][t]);
        dx[0][t] = t_tensor(dtype, nodes[t], width[t], state, 1.0);
        dx[1][t] = t_tensor(dtype, nodes[t], width[t], NULL, 0);
        t_copy(&dx[0][t], &dx[1][t]);
    }
    gd__nn_tensor x[R], w[R], b[R], dy[R], dw[2][R], db[2][R];
    gd__nn_linear_group fg[R];
    gd__nn_linear_grad_group bg[R];
    int seen[T] = {0}, seen_dx[T] = {0};
    int64_t scratch = 0;
    for (int r = 0; r < R; r++) {
        const int src = (int)(t_rand(state) % T), dst = (int)(t_rand(state) % T);
        const int64_t nd = nodes[dst] ? (int64_t)(t_rand(state) % (uint64_t)(nodes[dst] + 1)) : 0;
        /* The input rows: the source type's (a mean over them), as many as the destinations. */
        x[r] = t_tensor(dtype, nd, width[src], state, 1.0);
        w[r] = t_tensor(dtype, width[src], wout, state, 1.0);
        b[r] = t_tensor(dtype, 1, wout, state, 1.0);
        dy[r] = t_tensor(dtype, nd, wout, state, 1.0);
        for (int v = 0; v < 2; v++) {
            dw[v][r] = t_tensor(dtype, width[src], wout, NULL, 0);
            db[v][r] = t_tensor(dtype, 1, wout, NULL, 0);
        }
        t_copy(&w[r], &dw[0][r]);
        t_copy(&w[r], &dw[1][r]);
        /* Forward: the first relation into a type overwrites (or not), the later accumulate. */
        const int acc = seen[dst] && nd > 0 ? 1 : (int)(t_rand(state) % 2);
        if (nd > 0) seen[dst] = 1;
        const int has_bias = (int)(t_rand(state) % 3 != 0);
        gd__nn_linear_group f = {x[r], w[r], b[r], gd__nn_rows(&y[1][dst], nd), has_bias, acc};
        fg[r] = f;
        gd__nn_tensor yr = gd__nn_rows(&y[0][dst], nd);
        T_OK(gd__nn_linear(&cpu, &x[r], &w[r], has_bias ? &b[r] : NULL, &yr, acc));
        scratch += gd__nn_scratch_elems(nd, wout);
        /* Backward: dx of the source type's first nd rows, summed over its relations. */
        const int want_dx = (int)(t_rand(state) % 4 != 0) && nd <= nodes[src];
        const int acc_dx = seen_dx[src] && want_dx && nd > 0 ? 1 : (int)(t_rand(state) % 2);
        if (want_dx && nd > 0) seen_dx[src] = 1;
        const int acc_dw = (int)(t_rand(state) % 2);
        gd__nn_tensor dxv[2];
        for (int v = 0; v < 2; v++)
            dxv[v] = want_dx ? gd__nn_rows(&dx[v][src], nd) : gd__nn_view(NULL, dtype, -1, 0, 0);
        gd__nn_linear_grad_group q = {x[r],     w[r],    dy[r],  dxv[1],   dw[1][r],
                                      db[1][r], want_dx, acc_dx, has_bias, acc_dw};
        bg[r] = q;
        T_OK(gd__nn_linear_backward(&cpu, &x[r], &w[r], &dy[r], want_dx ? &dxv[0] : NULL, acc_dx,
                                    &dw[0][r], has_bias ? &db[0][r] : NULL, acc_dw));
        scratch += gd__nn_scratch_elems(nd, width[src]);
    }
    gd__nn_grouped plan;
    T_OK(gd__nn_grouped_create(&cpu, dtype, scratch, &plan));
    T_OK(gd__nn_linear_grouped(&cpu, &plan, R, fg));
    T_OK(gd__nn_linear_backward_grouped(&cpu, &plan, R, bg));
    for (int t = 0; t < T; t++) {
        for (int64_t i = 0; i < gd__nn_numel(&y[0][t]); i++)
            T_NEAR(t_get(&y[1][t], i), t_get(&y[0][t], i),
                   tol * fmax(1.0, fabs(t_get(&y[0][t], i))));
        for (int64_t i = 0; i < gd__nn_numel(&dx[0][t]); i++)
            T_NEAR(t_get(&dx[1][t], i), t_get(&dx[0][t], i),
                   tol * fmax(1.0, fabs(t_get(&dx[0][t], i))));
    }
    for (int r = 0; r < R; r++) {
        if (!bg[r].has_db) t_copy(&db[0][r], &db[1][r]); /* untouched on both sides */
        for (int64_t i = 0; i < gd__nn_numel(&dw[0][r]); i++)
            T_NEAR(t_get(&dw[1][r], i), t_get(&dw[0][r], i),
                   tol * fmax(1.0, fabs(t_get(&dw[0][r], i))));
        for (int64_t i = 0; i < gd__nn_numel(&db[0][r]); i++)
            T_NEAR(t_get(&db[1][r], i), t_get(&db[0][r], i),
                   tol * fmax(1.0, fabs(t_get(&db[0][r], i))));
    }
    gd__nn_grouped_destroy(&cpu, &plan);
    for (int t = 0; t < T; t++)
        for (int v = 0; v < 2; v++) {
            t_tensor_free(&y[v][t]);
            t_tensor_free(&dx[v][t]);
        }
    for (int r = 0; r < R; r++) {
        gd__nn_tensor *all[] = {&x[r],     &w[r],     &b[r],     &dy[r],
                                &dw[0][r], &dw[1][r], &db[0][r], &db[1][r]};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) t_tensor_free(all[i]);
    }
}

static void check_refusals(uint64_t *state) {
    const gd_dtype f = GD_DTYPE_FLOAT32;
    gd__nn_tensor c = t_tensor(f, 8, 4, NULL, 0), a = t_tensor(f, 8, 3, state, 1.0);
    gd__nn_tensor b = t_tensor(f, 3, 4, state, 1.0), a2 = t_tensor(f, 4, 3, state, 1.0);
    gd__nn_tensor db = t_tensor(f, 1, 4, NULL, 0);
    gd__nn_grouped plan, small;
    T_OK(gd__nn_grouped_create(&cpu, f, 64, &plan));
    T_OK(gd__nn_grouped_create(&cpu, f, 0, &small));
    /* Rows 4..7 overlap rows 0..7 without starting at the same element. */
    gd__nn_gemm_group g[2] = {{GD__NN_N, GD__NN_N, a, b, c, db, 0, 0},
                              {GD__NN_N, GD__NN_N, a2, b, gd__nn_row_range(&c, 4, 8), db, 0, 1}};
    T_FAILS(gd__nn_gemm_grouped(&cpu, &plan, 2, g), GD_ERR_INVALID_ARG, "row prefix");
    /* A later writer of an output that overwrites it. */
    g[1].a = a;
    g[1].c = c;
    g[1].accumulate = 0;
    T_FAILS(gd__nn_gemm_grouped(&cpu, &plan, 2, g), GD_ERR_INVALID_ARG, "overwrites");
    /* Summing into one output needs scratch. */
    g[1].accumulate = 1;
    T_FAILS(gd__nn_gemm_grouped(&cpu, &small, 2, g), GD_ERR_RANGE, "scratch");
    T_EQ_INT(gd__nn_gemm_grouped_scratch(2, g), gd__nn_scratch_elems(8, 4));
    T_OK(gd__nn_gemm_grouped(&cpu, &plan, 2, g));
    /* C aliasing an input, a bias of the wrong width, overlapping bias gradients. */
    g[0].a = c;
    g[0].b = t_tensor(f, 4, 4, NULL, 0);
    T_FAILS(gd__nn_gemm_grouped(&cpu, &plan, 1, g), GD_ERR_INVALID_ARG, "aliases");
    t_tensor_free(&g[0].b);
    g[0].a = a;
    g[0].b = b;
    g[0].has_bias = 1;
    g[0].bias = gd__nn_rows(&b, 1);
    g[0].bias.cols = 3;
    T_FAILS(gd__nn_gemm_grouped(&cpu, &plan, 1, g), GD_ERR_INVALID_ARG, "bias");
    gd__nn_bias_grad_group bgs[2] = {{c, db, 0}, {c, db, 1}};
    T_FAILS(gd__nn_bias_grad_grouped(&cpu, 2, bgs), GD_ERR_INVALID_ARG, "overlapping db");
    gd__nn_grouped_destroy(&cpu, &plan);
    gd__nn_grouped_destroy(&cpu, &small);
    gd__nn_tensor *all[] = {&c, &a, &b, &a2, &db};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) t_tensor_free(all[i]);
}

int main(void) {
    /*
     * Plans made grouped whatever the default (GD_NN_GROUPED=0 makes them per group, with no
     * scratch): each case then sets the path it checks.
     */
    T_ASSERT(setenv("GD_NN_GROUPED", "1", 1) == 0);
    uint64_t state = t_seed();
    cpu = gd__nn_cpu_ctx();
    for (int i = 0; i < 40; i++) {
        const gd_dtype dtype = i % 2 ? GD_DTYPE_FLOAT64 : GD_DTYPE_FLOAT32;
        check_gemm_case(&state, dtype, 1);
        check_gemm_case(&state, dtype, 0);
        check_linear_case(&state, dtype);
    }
    check_refusals(&state);
    t_check_no_leaks();
    return 0;
}
