/*
 * The grouped GEMM and bias gradient of the CUDA backend against the CPU backend (exits 77
 * without a CUDA build or a GPU), on fresh random cases (test_grouped_util.h): several groups
 * summing into one output and into row prefixes of it (the scratch and the epilogue), the first
 * writer's rows poisoned with NaN when it overwrites, transposes, inner dimensions of 0, biases,
 * more groups than one call takes. The same calls again and calls with other pointers past the
 * plan's ring of pointer sets (the reuse of an uploaded set, and of a slot). The grouped linear
 * backward at minibatch sizes (the bias gradients' row chunks) and the per-group path of
 * GD_NN_GROUPED=0. Float32 sums in another order: within 2e-5 of the CPU relative to max(1, the
 * tensor's largest |x|).
 */
#include "test_grouped_util.h"

#define F32 GD_DTYPE_FLOAT32

#ifdef GD_WITH_CUDA

static gd__nn_ctx cpu, gpu;

static gd__nn_tensor up(const gd__nn_tensor *h) {
    return t_up(&gpu, h);
}

/*
 * The device result against the CPU's (host tensors): |w - g| <= 2e-5 * max(1, max |w|) over
 * the tensor, the norm-wise bound that float32 products in another order keep. An element-wise
 * bound does not hold where a long sum cancels: a dW of 5000 rows (entries near 23) had an
 * element of 0.806 off by 3.8e-5 on the H100, float32 rounding of its 5000 terms.
 */
static void compare(const char *what, const gd__nn_tensor *want, const gd__nn_tensor *got_dev) {
    gd__nn_tensor got = t_down(&gpu, got_dev);
    const int64_t n = gd__nn_numel(want);
    double scale = 1;
    for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(t_get(want, i)));
    for (int64_t i = 0; i < n; i++) {
        const double w = t_get(want, i), g = t_get(&got, i);
        if (!(fabs(w - g) <= 2e-5 * scale))
            T_FAIL_("%s (%lld x %lld): element %lld: want %.12g, got %.12g (tolerance 2e-5 x "
                    "%.4g)",
                    what, (long long)want->rows, (long long)want->cols, (long long)i, w, g, scale);
    }
    t_tensor_free(&got);
}

/*
 * One random case on both backends; `repeat` more calls of the same groups (on fresh copies of
 * the outputs), with calls of other pointer sets in between, so that a set is found again and
 * the plan's ring of slots goes round.
 */
static void check_gemm_case(uint64_t *state, int grouped, int repeat) {
    t_grouped s;
    const int count = 1 + (int)(t_rand(state) % T_GMAX);
    t_grouped_make(&s, state, F32, count, 1 + (int)(t_rand(state) % T_DMAX), 300, 70, 90);
    gd__nn_tensor hout[T_DMAX], dout[T_DMAX], da[T_GMAX], db[T_GMAX], dbias[T_GMAX];
    for (int j = 0; j < count; j++) {
        da[j] = up(&s.a[j]);
        db[j] = up(&s.b[j]);
        dbias[j] = up(&s.bias[j]);
    }
    gd__nn_gemm_group hg[T_GMAX], dg[T_GMAX];
    for (int d = 0; d < s.outs; d++) {
        hout[d] = t_tensor(F32, s.out[d].rows, s.out[d].cols, NULL, 0);
        t_copy(&s.out[d], &hout[d]);
        dout[d] = up(&s.out[d]);
    }
    t_grouped_bind(&s, hout, s.a, s.b, s.bias, hg);
    t_grouped_bind(&s, dout, da, db, dbias, dg);
    const int64_t need = gd__nn_gemm_grouped_scratch(count, hg);
    gd__nn_grouped hplan, dplan;
    T_OK(gd__nn_grouped_create(&cpu, F32, need, &hplan));
    T_OK(gd__nn_grouped_create(&gpu, F32, need, &dplan));
    dplan.grouped &= grouped;
    T_OK(gd__nn_gemm_grouped(&cpu, &hplan, count, hg));
    for (int r = 0; r <= repeat; r++) {
        if (r > 0) {
            /* Other pointer sets in between (the first q groups), then fresh outputs. */
            if (r % 2) T_OK(gd__nn_gemm_grouped(&gpu, &dplan, 1 + r % count, dg));
            for (int d = 0; d < s.outs; d++) T_OK(gd__nn_from_host(&gpu, &dout[d], s.out[d].data));
        }
        T_OK(gd__nn_gemm_grouped(&gpu, &dplan, count, dg));
        for (int d = 0; d < s.outs; d++)
            compare(grouped ? "grouped GEMM (CUDA)" : "per-group GEMM (CUDA)", &hout[d], &dout[d]);
    }
    gd__nn_grouped_destroy(&cpu, &hplan);
    gd__nn_grouped_destroy(&gpu, &dplan);
    for (int d = 0; d < s.outs; d++) {
        t_tensor_free(&hout[d]);
        gd__nn_tensor_free(&gpu, &dout[d]);
    }
    for (int j = 0; j < count; j++) {
        gd__nn_tensor_free(&gpu, &da[j]);
        gd__nn_tensor_free(&gpu, &db[j]);
        gd__nn_tensor_free(&gpu, &dbias[j]);
    }
    t_grouped_free(&s);
}

/*
 * The grouped linear backward of R relations at minibatch sizes (thousands of rows, so the
 * bias gradients run in row chunks), dx summed per source type, on both backends.
 */
static void check_linear_backward(uint64_t *state) {
    enum { T = 3, R = 6 };
    int64_t nodes[T], width[T];
    const int64_t wout = 1 + (int64_t)(t_rand(state) % 130);
    for (int t = 0; t < T; t++) {
        nodes[t] = 1 + (int64_t)(t_rand(state) % 5000);
        width[t] = 1 + (int64_t)(t_rand(state) % 130);
    }
    gd__nn_tensor hdx[T], ddx[T];
    for (int t = 0; t < T; t++) {
        hdx[t] = t_tensor(F32, nodes[t], width[t], state, 1.0);
        ddx[t] = up(&hdx[t]);
    }
    gd__nn_tensor hx[R], hw[R], hdy[R], hdw[R], hdb[R], dx_[R], dw_[R], ddy[R], ddw[R], ddb[R];
    gd__nn_linear_grad_group hg[R], dg[R];
    int seen[T] = {0};
    int64_t scratch = 0;
    for (int r = 0; r < R; r++) {
        const int src = (int)(t_rand(state) % T);
        const int64_t nd = (int64_t)(t_rand(state) % (uint64_t)(nodes[src] + 1));
        hx[r] = t_tensor(F32, nd, width[src], state, 1.0);
        hw[r] = t_tensor(F32, width[src], wout, state, 1.0);
        hdy[r] = t_tensor(F32, nd, wout, state, 1.0);
        hdw[r] = t_tensor(F32, width[src], wout, state, 1.0);
        hdb[r] = t_tensor(F32, 1, wout, state, 1.0);
        dx_[r] = up(&hx[r]);
        dw_[r] = up(&hw[r]);
        ddy[r] = up(&hdy[r]);
        ddw[r] = up(&hdw[r]);
        ddb[r] = up(&hdb[r]);
        const int acc_dx = seen[src] && nd > 0 ? 1 : (int)(t_rand(state) % 2);
        if (nd > 0) seen[src] = 1;
        const int acc_dw = (int)(t_rand(state) % 2);
        gd__nn_linear_grad_group h = {
            hx[r], hw[r], hdy[r], gd__nn_rows(&hdx[src], nd), hdw[r], hdb[r], 1, acc_dx, 1, acc_dw};
        gd__nn_linear_grad_group d = {dx_[r], dw_[r], ddy[r], gd__nn_rows(&ddx[src], nd),
                                      ddw[r], ddb[r], 1,      acc_dx,
                                      1,      acc_dw};
        hg[r] = h;
        dg[r] = d;
        scratch += gd__nn_scratch_elems(nd, width[src]);
    }
    gd__nn_grouped hplan, dplan;
    T_OK(gd__nn_grouped_create(&cpu, F32, scratch, &hplan));
    T_OK(gd__nn_grouped_create(&gpu, F32, scratch, &dplan));
    T_OK(gd__nn_linear_backward_grouped(&cpu, &hplan, R, hg));
    T_OK(gd__nn_linear_backward_grouped(&gpu, &dplan, R, dg));
    for (int t = 0; t < T; t++) compare("grouped linear backward dx", &hdx[t], &ddx[t]);
    for (int r = 0; r < R; r++) {
        compare("grouped linear backward dW", &hdw[r], &ddw[r]);
        compare("grouped linear backward db", &hdb[r], &ddb[r]);
    }
    gd__nn_grouped_destroy(&cpu, &hplan);
    gd__nn_grouped_destroy(&gpu, &dplan);
    for (int t = 0; t < T; t++) {
        t_tensor_free(&hdx[t]);
        gd__nn_tensor_free(&gpu, &ddx[t]);
    }
    for (int r = 0; r < R; r++) {
        gd__nn_tensor *h[] = {&hx[r], &hw[r], &hdy[r], &hdw[r], &hdb[r]};
        gd__nn_tensor *d[] = {&dx_[r], &dw_[r], &ddy[r], &ddw[r], &ddb[r]};
        for (size_t i = 0; i < sizeof h / sizeof h[0]; i++) {
            t_tensor_free(h[i]);
            gd__nn_tensor_free(&gpu, d[i]);
        }
    }
}

int main(void) {
    if (gd_device_count() == 0) {
        fprintf(stderr, "no GPU: the grouped GEMM's CUDA checks are skipped\n");
        return GD_TEST_SKIP;
    }
    /* Plans made grouped whatever the default (GD_NN_GROUPED=0): each case picks its path. */
    T_ASSERT(setenv("GD_NN_GROUPED", "1", 1) == 0);
    uint64_t state = t_seed();
    cpu = gd__nn_cpu_ctx();
    T_OK(gd__nn_cuda_ctx_create(0, &gpu));
    for (int i = 0; i < 12; i++) {
        check_gemm_case(&state, 1, i % 4 == 0 ? 40 : 1);
        check_gemm_case(&state, 0, 0);
    }
    for (int i = 0; i < 6; i++) check_linear_backward(&state);
    T_OK(gd__nn_check_errors(&gpu));
    gd__nn_cuda_ctx_destroy(&gpu);
    t_check_no_leaks();
    return 0;
}

#else

int main(void) {
    fprintf(stderr, "built without CUDA: the grouped GEMM's CUDA checks are skipped\n");
    return GD_TEST_SKIP;
}

#endif
