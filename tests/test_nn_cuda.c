/*
 * The nn ops on the CUDA backend against the CPU backend (exits 77 without a CUDA build or a
 * GPU). Every op, forward and backward, runs on both backends on fresh random inputs of random
 * shapes (one row, no rows, blocks without edges, nodes without neighbours), the GPU outputs
 * poisoned with NaN before the run so that an unwritten element shows. Integers (accuracy
 * counts) and the ops without sums (ReLU, dropout, the bias add) must be equal bit for bit;
 * dropout must drop exactly the CPU's elements. Sums get a stated tolerance: the GPU adds in
 * another order (cuBLAS's GEMM; the aggregation backward scatters with atomics, so it is not
 * even reproducible from run to run). Adam steps must match within 1e-6 relative, and the whole
 * GraphSAGE model (sage.c), forward and backward with dropout, on the same parameters and blocks
 * within 1e-4. Each op also runs at minibatch sizes on aligned tensors (its float4 kernels, the
 * bias gradient's row chunks) and one float off alignment (its one-float kernels). A label out
 * of range is recorded by the device and reported once.
 */
#include "test_nn_util.h"

#define F32 GD_DTYPE_FLOAT32

#ifdef GD_WITH_CUDA

static gd__nn_ctx cpu, gpu;

/* ------------------------------------------------------------ helpers */

/* A device copy of a host tensor. */
static gd__nn_tensor up(const gd__nn_tensor *h) {
    gd__nn_tensor d;
    T_OK(gd__nn_tensor_alloc(&gpu, h->dtype, h->rows, h->cols, &d));
    T_OK(gd__nn_from_host(&gpu, &d, h->data));
    return d;
}

/* A device tensor of rows x cols filled with NaN: the poison. */
static gd__nn_tensor poisoned(int64_t rows, int64_t cols) {
    gd__nn_tensor h = t_tensor(F32, rows, cols, NULL, 0);
    for (int64_t i = 0; i < rows * cols; i++) t_set(&h, i, NAN);
    gd__nn_tensor d = up(&h);
    t_tensor_free(&h);
    return d;
}

/* The host copy of a device tensor (a CPU tensor the caller frees). */
static gd__nn_tensor down(const gd__nn_tensor *d) {
    gd__nn_tensor h = t_tensor(F32, d->rows, d->cols, NULL, 0);
    T_OK(gd__nn_to_host(&gpu, d, h.data));
    return h;
}

/* Raw device memory with a copy of bytes of host memory (at least 16 bytes are allocated). */
static void *up_raw(const void *host, size_t bytes) {
    void *d = NULL;
    T_OK(gpu.be->alloc(&gpu, bytes, &d));
    if (bytes) T_OK(gpu.be->from_host(&gpu, d, host, bytes));
    return d;
}

static gd_block up_block(const gd_block *b) {
    gd_block d = *b;
    d.indptr = up_raw(b->indptr, sizeof(int32_t) * (size_t)(b->num_dst + 1));
    d.indices = up_raw(b->indices, sizeof(int32_t) * (size_t)b->num_edges);
    return d;
}

static void free_dev_block(gd_block *d) {
    gpu.be->release(&gpu, (void *)d->indptr);
    gpu.be->release(&gpu, (void *)d->indices);
}

static void dfree(gd__nn_tensor *d) {
    gd__nn_tensor_free(&gpu, d);
}

/*
 * The CPU result want against the device result got: |w - g| <= tol * max(1, |w|) (tol = 0:
 * equal bit for bit, NaN never passes). Returns the worst error, relative to that scale.
 */
static double compare(const char *what, const gd__nn_tensor *want, const gd__nn_tensor *got_dev,
                      double tol) {
    gd__nn_tensor got = down(got_dev);
    double worst = 0;
    T_EQ_INT(gd__nn_numel(want), gd__nn_numel(&got));
    for (int64_t i = 0; i < gd__nn_numel(want); i++) {
        const double w = t_get(want, i), g = t_get(&got, i);
        if (tol == 0) {
            const float wf = (float)w, gf = (float)g;
            if (memcmp(&wf, &gf, sizeof wf) != 0)
                T_FAIL_("%s (%lld x %lld): element %lld: CPU %.9g, CUDA %.9g (must be equal)", what,
                        (long long)want->rows, (long long)want->cols, (long long)i, w, g);
            continue;
        }
        const double e = fabs(w - g) / (fabs(w) > 1 ? fabs(w) : 1);
        if (!(e <= tol))
            T_FAIL_("%s (%lld x %lld): element %lld: CPU %.9g, CUDA %.9g (tolerance %g)", what,
                    (long long)want->rows, (long long)want->cols, (long long)i, w, g, tol);
        if (e > worst) worst = e;
    }
    t_tensor_free(&got);
    return worst;
}

/* A size in 0..max, with 0 and 1 drawn often. */
static int64_t t_size(uint64_t *state, int64_t max) {
    const uint64_t r = t_rand(state) % 8;
    if (r == 0) return 0;
    if (r == 1) return 1;
    return 1 + (int64_t)(t_rand(state) % (uint64_t)max);
}

/* ------------------------------------------------------------------ GEMM */

static void check_gemm(uint64_t *state) {
    double worst = 0;
    for (int trial = 0; trial < 48; trial++) {
        const int ta = trial & 1, tb = (trial >> 1) & 1;
        const int64_t m = t_size(state, 300), n = t_size(state, 300), k = t_size(state, 300);
        const double alpha = 0.5 + t_unif(state), beta = trial % 3 == 0 ? 0.0 : t_unif(state);
        gd__nn_tensor a = ta ? t_tensor(F32, k, m, state, 1) : t_tensor(F32, m, k, state, 1);
        gd__nn_tensor b = tb ? t_tensor(F32, n, k, state, 1) : t_tensor(F32, k, n, state, 1);
        gd__nn_tensor c = t_tensor(F32, m, n, state, 1);
        gd__nn_tensor da = up(&a), db = up(&b), dc = up(&c);
        if (beta == 0) {
            /* beta = 0 must not read C: poison it on both sides. */
            dfree(&dc);
            dc = poisoned(m, n);
            for (int64_t i = 0; i < m * n; i++) t_set(&c, i, NAN);
        }
        T_OK(gd__nn_gemm(&cpu, ta, tb, alpha, &a, &b, beta, &c));
        T_OK(gd__nn_gemm(&gpu, ta, tb, alpha, &da, &db, beta, &dc));
        char what[96];
        snprintf(what, sizeof what, "gemm %c%c %lldx%lldx%lld beta %g", ta ? 'T' : 'N',
                 tb ? 'T' : 'N', (long long)m, (long long)n, (long long)k, beta);
        /* float32 sums of k products of values in [-1.5, 1.5) in different orders. */
        const double e = compare(what, &c, &dc, 3e-6 * (double)(k + 1));
        if (e > worst) worst = e;
        gd__nn_tensor *all[] = {&a, &b, &c};
        for (int i = 0; i < 3; i++) t_tensor_free(all[i]);
        dfree(&da);
        dfree(&db);
        dfree(&dc);
    }
    fprintf(stderr, "gemm: 48 random shapes, every transpose, worst error %.2e\n", worst);
}

/* -------------------------------------------- linear: bias add and bias gradient */

static void check_linear(uint64_t *state) {
    for (int trial = 0; trial < 24; trial++) {
        const int64_t n = t_size(state, 500), in = 1 + t_size(state, 100),
                      out = 1 + t_size(state, 100);
        const int acc = trial & 1, bias = trial % 3 != 0;
        gd__nn_tensor x = t_tensor(F32, n, in, state, 1), w = t_tensor(F32, in, out, state, 1),
                      b = t_tensor(F32, 1, out, state, 1), y = t_tensor(F32, n, out, state, 1),
                      dy = t_tensor(F32, n, out, state, 1), dx = t_tensor(F32, n, in, state, 1),
                      dw = t_tensor(F32, in, out, state, 1),
                      dbias = t_tensor(F32, 1, out, state, 1);
        gd__nn_tensor gx = up(&x), gw = up(&w), gb = up(&b), gdy = up(&dy);
        /* Accumulating outputs start from the same values, the others from poison. */
        gd__nn_tensor gy = acc ? up(&y) : poisoned(n, out), gdx = acc ? up(&dx) : poisoned(n, in),
                      gdw = acc ? up(&dw) : poisoned(in, out),
                      gdb = acc ? up(&dbias) : poisoned(1, out);
        T_OK(gd__nn_linear(&cpu, &x, &w, bias ? &b : NULL, &y, acc));
        T_OK(gd__nn_linear(&gpu, &gx, &gw, bias ? &gb : NULL, &gy, acc));
        T_OK(gd__nn_linear_backward(&cpu, &x, &w, &dy, &dx, acc, &dw, bias ? &dbias : NULL, acc));
        T_OK(
            gd__nn_linear_backward(&gpu, &gx, &gw, &gdy, &gdx, acc, &gdw, bias ? &gdb : NULL, acc));
        compare("linear y", &y, &gy, 3e-6 * (double)(in + 2));
        compare("linear dx", &dx, &gdx, 3e-6 * (double)(out + 2));
        compare("linear dW", &dw, &gdw, 3e-6 * (double)(n + 2));
        if (bias) /* both sum the column in double: only the final rounding may differ */
            compare("linear db", &dbias, &gdb, 1e-6);
        gd__nn_tensor *all[] = {&x, &w, &b, &y, &dy, &dx, &dw, &dbias};
        for (int i = 0; i < 8; i++) t_tensor_free(all[i]);
        gd__nn_tensor *dall[] = {&gx, &gw, &gb, &gdy, &gy, &gdx, &gdw, &gdb};
        for (int i = 0; i < 8; i++) dfree(dall[i]);
    }
    /* The bias add alone has no sum: equal bit for bit. */
    gd__nn_tensor y = t_tensor(F32, 37, 19, state, 1), b = t_tensor(F32, 1, 19, state, 1);
    gd__nn_tensor gy = up(&y), gb = up(&b);
    T_OK(cpu.be->add_bias(&cpu, &y, &b));
    T_OK(gpu.be->add_bias(&gpu, &gy, &gb));
    compare("bias add", &y, &gy, 0);
    t_tensor_free(&y);
    t_tensor_free(&b);
    dfree(&gy);
    dfree(&gb);
    fprintf(stderr, "linear: 24 random shapes, forward and backward, with and without bias, = "
                    "and +=\n");
}

/* ------------------------------------------------------- mean aggregation */

static void check_mean_agg(uint64_t *state) {
    const int64_t widths[] = {1, 3, 32, 33, 100, 257};
    double worst_b = 0;
    for (int trial = 0; trial < 30; trial++) {
        const int64_t nd = trial < 2 ? trial : t_size(state, 2000);
        const int64_t ns = nd + (trial % 5 == 0 ? 0 : t_size(state, 3000));
        const int64_t f = widths[t_rand(state) % 6];
        const int max_deg = trial % 7 == 0 ? 0 : 1 + (int)(t_rand(state) % 40);
        gd_block blk = t_block(state, nd, ns, max_deg, 3);
        gd_block dblk = up_block(&blk);
        gd__nn_tensor x = t_tensor(F32, ns, f, state, 1), out = t_tensor(F32, nd, f, NULL, 0);
        gd__nn_tensor dout = t_tensor(F32, nd, f, state, 1), dx = t_tensor(F32, ns, f, state, 1);
        gd__nn_tensor gx = up(&x), gout = poisoned(nd, f), gdout = up(&dout), gdx = up(&dx);
        T_OK(gd__nn_mean_agg(&cpu, &blk, &x, &out));
        T_OK(gd__nn_mean_agg(&gpu, &dblk, &gx, &gout));
        /* The same float sums in the same (edge) order: 1e-6 allows a contracted product. */
        compare("mean aggregation", &out, &gout, 1e-6);
        T_OK(gd__nn_mean_agg_backward(&cpu, &blk, &dout, &dx));
        T_OK(gd__nn_mean_agg_backward(&gpu, &dblk, &gdout, &gdx));
        /* Atomics add a source's terms in any order: float32 rounding of up to ~40 terms. */
        const double e = compare("mean aggregation backward", &dx, &gdx, 1e-5);
        if (e > worst_b) worst_b = e;
        t_block_free(&blk);
        free_dev_block(&dblk);
        gd__nn_tensor *all[] = {&x, &out, &dout, &dx};
        for (int i = 0; i < 4; i++) t_tensor_free(all[i]);
        gd__nn_tensor *dall[] = {&gx, &gout, &gdout, &gdx};
        for (int i = 0; i < 4; i++) dfree(dall[i]);
    }
    fprintf(stderr,
            "mean aggregation: 30 random blocks (empty, one node, no edges, nodes without "
            "neighbours), backward worst error %.2e\n",
            worst_b);
}

/* ------------------------------------------------------ ReLU and dropout */

static void check_elementwise(uint64_t *state) {
    for (int trial = 0; trial < 12; trial++) {
        const int64_t r = t_size(state, 700), c = 1 + t_size(state, 300);
        gd__nn_tensor x = t_tensor(F32, r, c, state, 1), dy = t_tensor(F32, r, c, state, 1),
                      y = t_tensor(F32, r, c, NULL, 0), dx = t_tensor(F32, r, c, NULL, 0);
        gd__nn_tensor gx = up(&x), gdy = up(&dy), gy = poisoned(r, c), gdx = poisoned(r, c);
        T_OK(gd__nn_relu(&cpu, &x, &y));
        T_OK(gd__nn_relu(&gpu, &gx, &gy));
        compare("relu", &y, &gy, 0);
        T_OK(gd__nn_relu_backward(&cpu, &y, &dy, &dx));
        T_OK(gd__nn_relu_backward(&gpu, &gy, &gdy, &gdx));
        compare("relu backward", &dx, &gdx, 0);
        T_OK(gd__nn_relu_backward(&gpu, &gy, &gdy, &gdy)); /* in place */
        compare("relu backward in place", &dx, &gdy, 0);
        T_OK(gd__nn_relu(&gpu, &gx, &gx));
        compare("relu in place", &y, &gx, 0);

        /* Dropout: the same elements dropped, the same values, forward = backward, in place. */
        const double ps[] = {0.0, 0.1, 0.5, 0.9, 0.37};
        const double p = ps[trial % 5];
        const uint64_t seed = t_rand(state);
        const uint32_t stream = (uint32_t)t_rand(state);
        gd__nn_tensor gx2 = up(&x), gy2 = poisoned(r, c);
        T_OK(gd__nn_dropout(&cpu, p, seed, stream, NULL, &x, &y));
        T_OK(gd__nn_dropout(&gpu, p, seed, stream, NULL, &gx2, &gy2));
        compare("dropout", &y, &gy2, 0);
        T_OK(gd__nn_dropout_backward(&cpu, p, seed, stream, NULL, &dy, &dx));
        dfree(&gdx);
        gdx = poisoned(r, c);
        dfree(&gdy);
        gdy = up(&dy);
        T_OK(gd__nn_dropout_backward(&gpu, p, seed, stream, NULL, &gdy, &gdx));
        compare("dropout backward", &dx, &gdx, 0);
        T_OK(gd__nn_dropout(&gpu, p, seed, stream, NULL, &gx2, &gx2));
        compare("dropout in place", &y, &gx2, 0);
        gd__nn_tensor *all[] = {&x, &dy, &y, &dx};
        for (int i = 0; i < 4; i++) t_tensor_free(all[i]);
        gd__nn_tensor *dall[] = {&gx, &gdy, &gy, &gdx, &gx2, &gy2};
        for (int i = 0; i < 6; i++) dfree(dall[i]);
    }
    /* A mask over 2^20 + 3 ones (a partial group of four at the end): identical, bit for bit. */
    const int64_t n = (1 << 20) + 3;
    gd__nn_tensor ones = t_tensor(F32, 1, n, NULL, 0), a = t_tensor(F32, 1, n, NULL, 0);
    for (int64_t i = 0; i < n; i++) t_set(&ones, i, 1.0);
    gd__nn_tensor gones = up(&ones), ga = poisoned(1, n);
    const uint64_t seed = t_rand(state);
    T_OK(gd__nn_dropout(&cpu, 0.5, seed, 7, NULL, &ones, &a));
    T_OK(gd__nn_dropout(&gpu, 0.5, seed, 7, NULL, &gones, &ga));
    compare("dropout mask of 2^20 + 3", &a, &ga, 0);
    t_tensor_free(&ones);
    t_tensor_free(&a);
    dfree(&gones);
    dfree(&ga);
    fprintf(stderr, "relu and dropout: equal bit for bit (same dropout mask as the CPU)\n");
}

/* ---------------------------------------- softmax cross-entropy and accuracy */

static void check_xent(uint64_t *state) {
    const int64_t classes[] = {1, 2, 7, 40, 1000};
    for (int trial = 0; trial < 20; trial++) {
        const int64_t r = t_size(state, 3000), c = classes[trial % 5];
        const double scale = trial % 2 ? 1.0 : 0.5 + 2 * fabs(t_unif(state));
        /* Coarse logits (multiples of 1/4) make ties for the accuracy's first maximum. */
        gd__nn_tensor z = t_tensor(F32, r, c, state, 4);
        if (trial % 3 == 0)
            for (int64_t i = 0; i < r * c; i++) t_set(&z, i, round(4 * t_get(&z, i)) / 4);
        int64_t *labels = malloc(sizeof(int64_t) * (size_t)(r + 1));
        T_ASSERT(labels);
        for (int64_t i = 0; i < r; i++)
            labels[i] = t_rand(state) % 5 == 0 ? -1 : (int64_t)(t_rand(state) % (uint64_t)c);
        int64_t *dlabels = up_raw(labels, sizeof(int64_t) * (size_t)r);
        gd__nn_tensor loss = t_tensor(F32, 1, 1, NULL, 0), dz = t_tensor(F32, r, c, NULL, 0);
        gd__nn_tensor gz = up(&z), gloss = poisoned(1, 1), gdz = poisoned(r, c);
        const int with_dz = trial % 4 != 1;
        T_OK(gd__nn_softmax_xent(&cpu, &z, labels, scale, &loss, with_dz ? &dz : NULL));
        T_OK(gd__nn_softmax_xent(&gpu, &gz, dlabels, scale, &gloss, with_dz ? &gdz : NULL));
        T_OK(gd__nn_check_errors(&gpu));
        /* Both in double, rounded to float once: a float ulp or two. */
        compare("softmax cross-entropy loss", &loss, &gloss, 1e-6);
        if (with_dz) compare("softmax cross-entropy dz", &dz, &gdz, 1e-6);

        int64_t want = -1, got = -1;
        int64_t *dcorrect = up_raw(&want, sizeof want);
        T_OK(gd__nn_accuracy(&cpu, &z, labels, &want));
        T_OK(gd__nn_accuracy(&gpu, &gz, dlabels, dcorrect));
        T_OK(gpu.be->to_host(&gpu, &got, dcorrect, sizeof got));
        T_EQ_INT(got, want);

        /* A label past the classes: recorded, reported once, that row left out. */
        if (r > 0) {
            const int64_t bad = (int64_t)(t_rand(state) % (uint64_t)r);
            labels[bad] = c + 3;
            T_OK(gpu.be->from_host(&gpu, dlabels, labels, sizeof(int64_t) * (size_t)r));
            dfree(&gdz);
            gdz = poisoned(r, c);
            T_OK(gd__nn_softmax_xent(&gpu, &gz, dlabels, scale, &gloss, &gdz));
            char text[96];
            const char *needle = text;
            snprintf(text, sizeof text, "label %lld of row %lld", (long long)(c + 3),
                     (long long)bad);
            T_FAILS(gd__nn_check_errors(&gpu), GD_ERR_RANGE, needle);
            T_OK(gd__nn_check_errors(&gpu));
            T_FAILS(gd__nn_softmax_xent(&cpu, &z, labels, scale, &loss, &dz), GD_ERR_RANGE, needle);
            labels[bad] = -1;
            T_OK(gd__nn_softmax_xent(&cpu, &z, labels, scale, &loss, &dz));
            compare("softmax cross-entropy loss, bad row left out", &loss, &gloss, 1e-6);
            compare("softmax cross-entropy dz, bad row left out", &dz, &gdz, 1e-6);
        }
        gpu.be->release(&gpu, dlabels);
        gpu.be->release(&gpu, dcorrect);
        free(labels);
        t_tensor_free(&z);
        t_tensor_free(&loss);
        t_tensor_free(&dz);
        dfree(&gz);
        dfree(&gloss);
        dfree(&gdz);
    }
    fprintf(stderr, "softmax cross-entropy and accuracy: 20 random cases, bad labels reported\n");
}

/* ------------------------------------------------------------------ Adam */

static void check_adam(uint64_t *state) {
    for (int decoupled = 0; decoupled < 2; decoupled++) {
        gd__nn_params p = {0}, q = {0};
        p.dtype = q.dtype = F32;
        const int64_t shapes[][2] = {{300, 70}, {1, 70}, {70, 9}, {1, 9}};
        for (int i = 0; i < 4; i++) {
            T_OK(gd__nn_params_add(&p, shapes[i][0], shapes[i][1], shapes[i][0], NULL));
            T_OK(gd__nn_params_add(&q, shapes[i][0], shapes[i][1], shapes[i][0], NULL));
        }
        T_OK(gd__nn_params_alloc(&cpu, &p));
        T_OK(gd__nn_params_alloc(&gpu, &q));
        const uint64_t seed = t_rand(state);
        T_OK(gd__nn_params_init(&cpu, &p, seed));
        T_OK(gd__nn_params_init(&gpu, &q, seed));
        compare("initial parameters", &p.params, &q.params, 0);
        gd__nn_adam_options o = GD__NN_ADAM_OPTIONS_INIT;
        o.lr = 0.01;
        o.weight_decay = 0.05;
        o.decoupled = decoupled;
        double worst = 0;
        for (int step = 1; step <= 5; step++) {
            for (int64_t i = 0; i < p.numel; i++) t_set(&p.grads, i, t_unif(state));
            T_OK(gd__nn_from_host(&gpu, &q.grads, p.grads.data));
            T_OK(gd__nn_params_adam(&cpu, &p, &o));
            T_OK(gd__nn_params_adam(&gpu, &q, &o));
            /* Both step in double per element; only the roundings to float may differ. */
            gd__nn_tensor got = down(&q.params), gs = down(&q.state);
            const gd__nn_tensor *want[2] = {&p.params, &p.state}, *have[2] = {&got, &gs};
            for (int b = 0; b < 2; b++)
                for (int64_t i = 0; i < gd__nn_numel(want[b]); i++) {
                    const double w = t_get(want[b], i), g = t_get(have[b], i);
                    const double e = fabs(w - g) / (fabs(w) > 0 ? fabs(w) : 1);
                    if (!(e <= 1e-6))
                        T_FAIL_("adam%s step %d: %s element %lld: CPU %.9g, CUDA %.9g (1e-6 "
                                "relative)",
                                decoupled ? "W" : "", step, b ? "state" : "parameter", (long long)i,
                                w, g);
                    if (e > worst) worst = e;
                }
            t_tensor_free(&got);
            t_tensor_free(&gs);
        }
        fprintf(stderr, "adam%s: 5 steps over %lld parameters, worst relative error %.2e\n",
                decoupled ? "W" : "", (long long)p.numel, worst);
        gd__nn_params_free(&cpu, &p);
        gd__nn_params_free(&gpu, &q);
    }
}

/* ---------------------------------------- the wide and the narrow code paths */

/*
 * A device view of rows x cols floats that starts one float past a cudaMalloc'd base, so it is
 * not 16-byte aligned and the ops take their one-float paths; *base owns the memory. The
 * values are host's.
 */
static gd__nn_tensor shifted(const gd__nn_tensor *host, gd__nn_tensor *base) {
    T_OK(gd__nn_tensor_alloc(&gpu, F32, 1, gd__nn_numel(host) + 1, base));
    gd__nn_tensor v =
        gd__nn_view((float *)base->data + 1, F32, gpu.device, host->rows, host->cols);
    T_OK(gd__nn_from_host(&gpu, &v, host->data));
    return v;
}

/* The same filled with NaN: the poison, one float off alignment. */
static gd__nn_tensor shifted_poison(int64_t rows, int64_t cols, gd__nn_tensor *base) {
    gd__nn_tensor h = t_tensor(F32, rows, cols, NULL, 0);
    for (int64_t i = 0; i < rows * cols; i++) t_set(&h, i, NAN);
    gd__nn_tensor v = shifted(&h, base);
    t_tensor_free(&h);
    return v;
}

/*
 * The ops pick float4 kernels for aligned tensors whose size is a multiple of four and the
 * bias gradient splits tall tensors into row chunks; the other tests mostly draw small shapes.
 * Here each op runs at minibatch sizes (tens of thousands of rows, 100 to 256 columns) on
 * aligned tensors and on the same values one float off alignment, against the CPU.
 */
static void check_wide_paths(uint64_t *state) {
    /* Bias gradient: one chunk, many chunks, chunks capped by the partials' room, = and +=. */
    const int64_t shapes[][2] = {{72735, 256}, {9143, 256}, {1024, 47}, {600, 100},
                                 {100000, 1},  {3, 70000},  {511, 3},   {0, 64}};
    for (int i = 0; i < 8; i++) {
        const int64_t r = shapes[i][0], c = shapes[i][1];
        const int acc = i & 1;
        gd__nn_tensor dy = t_tensor(F32, r, c, state, 1), db = t_tensor(F32, 1, c, state, 1);
        gd__nn_tensor gdy = up(&dy), gdb = acc ? up(&db) : poisoned(1, c);
        T_OK(cpu.be->bias_grad(&cpu, &dy, &db, acc));
        T_OK(gpu.be->bias_grad(&gpu, &gdy, &gdb, acc));
        char what[96];
        snprintf(what, sizeof what, "bias gradient %lld x %lld%s", (long long)r, (long long)c,
                 acc ? " (+=)" : "");
        compare(what, &db, &gdb, 1e-6);
        t_tensor_free(&dy);
        t_tensor_free(&db);
        dfree(&gdy);
        dfree(&gdb);
    }

    /* Bias add, ReLU, dropout and their backwards: bit for bit on both paths, in place too. */
    const int64_t r = 3001, c = 256;
    gd__nn_tensor x = t_tensor(F32, r, c, state, 1), dy = t_tensor(F32, r, c, state, 1),
                  b = t_tensor(F32, 1, c, state, 1), y = t_tensor(F32, r, c, NULL, 0),
                  dx = t_tensor(F32, r, c, NULL, 0);
    const uint64_t seed = t_rand(state);
    for (int shift = 0; shift < 2; shift++) {
        gd__nn_tensor bx, by, bdy, bdx;
        gd__nn_tensor gx = shift ? shifted(&x, &bx) : up(&x);
        gd__nn_tensor gdy = shift ? shifted(&dy, &bdy) : up(&dy);
        gd__nn_tensor gy = shift ? shifted_poison(r, c, &by) : poisoned(r, c);
        gd__nn_tensor gdx = shift ? shifted_poison(r, c, &bdx) : poisoned(r, c);
        gd__nn_tensor gb = up(&b);
        const char *how = shift ? " (unaligned)" : " (aligned)";
        char what[64];

        t_copy(&x, &y);
        T_OK(cpu.be->add_bias(&cpu, &y, &b));
        T_OK(gd__nn_from_host(&gpu, &gy, x.data));
        T_OK(gpu.be->add_bias(&gpu, &gy, &gb));
        snprintf(what, sizeof what, "bias add%s", how);
        compare(what, &y, &gy, 0);

        T_OK(gd__nn_relu(&cpu, &x, &y));
        T_OK(gd__nn_relu(&gpu, &gx, &gy));
        snprintf(what, sizeof what, "relu%s", how);
        compare(what, &y, &gy, 0);
        T_OK(gd__nn_relu_backward(&cpu, &y, &dy, &dx));
        T_OK(gd__nn_relu_backward(&gpu, &gy, &gdy, &gdx));
        snprintf(what, sizeof what, "relu backward%s", how);
        compare(what, &dx, &gdx, 0);

        T_OK(gd__nn_dropout(&cpu, 0.5, seed, 3, NULL, &x, &y));
        T_OK(gd__nn_dropout(&gpu, 0.5, seed, 3, NULL, &gx, &gy));
        snprintf(what, sizeof what, "dropout%s", how);
        compare(what, &y, &gy, 0);
        T_OK(gd__nn_dropout_backward(&cpu, 0.5, seed, 3, NULL, &dy, &dx));
        T_OK(gd__nn_dropout_backward(&gpu, 0.5, seed, 3, NULL, &gdy, &gdx));
        snprintf(what, sizeof what, "dropout backward%s", how);
        compare(what, &dx, &gdx, 0);
        T_OK(gd__nn_dropout(&gpu, 0.5, seed, 3, NULL, &gx, &gx));
        snprintf(what, sizeof what, "dropout in place%s", how);
        compare(what, &y, &gx, 0);
        T_OK(gd__nn_relu(&gpu, &gx, &gx));
        T_OK(gd__nn_relu(&cpu, &y, &y));
        snprintf(what, sizeof what, "relu in place%s", how);
        compare(what, &y, &gx, 0);

        if (shift) {
            dfree(&bx);
            dfree(&by);
            dfree(&bdy);
            dfree(&bdx);
        } else {
            gd__nn_tensor *dall[] = {&gx, &gy, &gdy, &gdx};
            for (int i = 0; i < 4; i++) dfree(dall[i]);
        }
        dfree(&gb);
    }
    gd__nn_tensor *all[] = {&x, &dy, &b, &y, &dx};
    for (int i = 0; i < 5; i++) t_tensor_free(all[i]);

    /* Mean aggregation and its backward at a minibatch's widths, on both paths. */
    const int64_t widths[] = {100, 256, 47};
    double worst = 0;
    for (int w = 0; w < 3; w++) {
        const int64_t f = widths[w], nd = 4000, ns = 30000;
        gd_block blk = t_block(state, nd, ns, 15, 8);
        gd_block dblk = up_block(&blk);
        gd__nn_tensor hx = t_tensor(F32, ns, f, state, 1), out = t_tensor(F32, nd, f, NULL, 0);
        gd__nn_tensor dout = t_tensor(F32, nd, f, state, 1), hdx = t_tensor(F32, ns, f, state, 1);
        T_OK(gd__nn_mean_agg(&cpu, &blk, &hx, &out));
        gd__nn_tensor want_dx = t_tensor(F32, ns, f, NULL, 0);
        t_copy(&hdx, &want_dx);
        T_OK(gd__nn_mean_agg_backward(&cpu, &blk, &dout, &want_dx));
        for (int shift = 0; shift < 2; shift++) {
            gd__nn_tensor bx, bo, bd, bdx;
            gd__nn_tensor gx = shift ? shifted(&hx, &bx) : up(&hx);
            gd__nn_tensor gout = shift ? shifted_poison(nd, f, &bo) : poisoned(nd, f);
            gd__nn_tensor gdout = shift ? shifted(&dout, &bd) : up(&dout);
            gd__nn_tensor gdx = shift ? shifted(&hdx, &bdx) : up(&hdx);
            char what[96];
            T_OK(gd__nn_mean_agg(&gpu, &dblk, &gx, &gout));
            snprintf(what, sizeof what, "mean aggregation, %lld columns%s", (long long)f,
                     shift ? " (unaligned)" : "");
            compare(what, &out, &gout, 1e-6);
            T_OK(gd__nn_mean_agg_backward(&gpu, &dblk, &gdout, &gdx));
            snprintf(what, sizeof what, "mean aggregation backward, %lld columns%s",
                     (long long)f, shift ? " (unaligned)" : "");
            const double e = compare(what, &want_dx, &gdx, 1e-5);
            if (e > worst) worst = e;
            if (shift) {
                dfree(&bx);
                dfree(&bo);
                dfree(&bd);
                dfree(&bdx);
            } else {
                gd__nn_tensor *dall[] = {&gx, &gout, &gdout, &gdx};
                for (int i = 0; i < 4; i++) dfree(dall[i]);
            }
        }
        t_block_free(&blk);
        free_dev_block(&dblk);
        gd__nn_tensor *hall[] = {&hx, &out, &dout, &hdx, &want_dx};
        for (int i = 0; i < 5; i++) t_tensor_free(hall[i]);
    }
    fprintf(stderr,
            "wide and narrow paths: bias gradient in row chunks, bias add, relu, dropout and "
            "the mean aggregation at minibatch sizes, aligned and unaligned (aggregation "
            "backward worst error %.2e)\n",
            worst);
}

/* ------------------------------------------------------------- GraphSAGE */

typedef struct {
    int layers;
    gd_block blocks[GD__SAGE_MAX_LAYERS], dblocks[GD__SAGE_MAX_LAYERS];
    int64_t nodes[GD__SAGE_MAX_LAYERS + 1];
} chain;

static chain make_chain(uint64_t *state, int layers, int64_t batch, int fanout) {
    chain c;
    c.layers = layers;
    c.nodes[layers] = batch;
    for (int l = layers - 1; l >= 0; l--) {
        c.nodes[l] = c.nodes[l + 1] + (int64_t)(t_rand(state) % (uint64_t)(fanout * batch + 1));
        c.blocks[l] = t_block(state, c.nodes[l + 1], c.nodes[l], fanout, 6);
        c.dblocks[l] = up_block(&c.blocks[l]);
    }
    return c;
}

static void free_chain(chain *c) {
    for (int l = 0; l < c->layers; l++) {
        t_block_free(&c->blocks[l]);
        free_dev_block(&c->dblocks[l]);
    }
}

/*
 * Hidden elements where one backend's ReLU passed and the other's did not: a pre-activation
 * within rounding of 0. There the gradients differ by a whole dh element, as a finite
 * difference across the kink would, so such a draw is not a fair comparison.
 */
static int64_t kink_crossings(const gd__sage *mc, const gd__sage *mg, const chain *c) {
    int64_t crossings = 0;
    for (int l = 0; l + 1 < c->layers; l++) {
        gd__nn_tensor hg = gd__nn_rows(&mg->out[l], c->nodes[l + 1]);
        gd__nn_tensor h = down(&hg);
        for (int64_t i = 0; i < gd__nn_numel(&h); i++)
            crossings += (t_get(&mc->out[l], i) > 0) != (t_get(&h, i) > 0);
        t_tensor_free(&h);
    }
    return crossings;
}

/* One model comparison on a fresh draw; returns 0, or 1 when the draw sat on a ReLU kink. */
static int check_model(uint64_t *state, int layers, int64_t batch) {
    chain c = make_chain(state, layers, batch, 10);
    const int64_t in = 1 + (int64_t)(t_rand(state) % 100), hidden = 64, classes = 7;
    gd__sage_config cfg = {0};
    cfg.num_layers = layers;
    cfg.in_dim = in;
    cfg.hidden_dim = hidden;
    cfg.num_classes = classes;
    cfg.dropout = 0.3;
    cfg.dtype = F32;
    for (int l = 0; l <= layers; l++) cfg.max_nodes[l] = c.nodes[l] + 5;
    gd__sage *mc, *mg;
    const uint64_t init = t_rand(state), seed = t_rand(state);
    T_OK(gd__sage_create(&cpu, &cfg, init, &mc));
    T_OK(gd__sage_create(&gpu, &cfg, init, &mg));
    compare("model parameters", &mc->params.params, &mg->params.params, 0);

    gd__nn_tensor x = t_tensor(F32, c.nodes[0], in, state, 1);
    int64_t *labels = malloc(sizeof(int64_t) * (size_t)batch);
    T_ASSERT(labels);
    for (int64_t i = 0; i < batch; i++)
        labels[i] = i % 4 == 3 ? -1 : (int64_t)(t_rand(state) % (uint64_t)classes);
    int64_t *dlabels = up_raw(labels, sizeof(int64_t) * (size_t)batch);
    gd__nn_tensor gx = up(&x);
    gd__nn_tensor loss = t_tensor(F32, 1, 1, NULL, 0), dl = t_tensor(F32, batch, classes, NULL, 0);
    gd__nn_tensor dx = t_tensor(F32, c.nodes[0], in, NULL, 0);
    gd__nn_tensor gloss = poisoned(1, 1), gdl = poisoned(batch, classes),
                  gdx = poisoned(c.nodes[0], in);

    for (int train = 0; train < 2; train++) {
        gd__nn_tensor lc, lg;
        T_OK(gd__sage_forward(mc, c.blocks, &x, NULL, train, seed, &lc));
        T_OK(gd__sage_forward(mg, c.dblocks, &gx, NULL, train, seed, &lg));
        /* float32 GEMMs in other orders through up to three layers. */
        compare(train ? "GraphSAGE logits (train)" : "GraphSAGE logits (eval)", &lc, &lg, 1e-4);
        T_OK(gd__nn_softmax_xent(&cpu, &lc, labels, 1.0, &loss, &dl));
        T_OK(gd__nn_softmax_xent(&gpu, &lg, dlabels, 1.0, &gloss, &gdl));
        compare("GraphSAGE loss", &loss, &gloss, 1e-4);
    }
    const int64_t crossings = kink_crossings(mc, mg, &c);
    if (crossings > 0) {
        fprintf(stderr,
                "GraphSAGE %d layers, batch %lld: %lld hidden pre-activations within rounding of "
                "0 (ReLU decided differently); drawing again\n",
                layers, (long long)batch, (long long)crossings);
    } else {
        T_OK(gd__nn_params_zero_grad(&cpu, &mc->params));
        T_OK(gd__nn_params_zero_grad(&gpu, &mg->params));
        T_OK(gd__sage_backward(mc, c.blocks, &dl, &dx));
        /* The GPU backward from the GPU's own dlogits, as a trainer would run it. */
        T_OK(gd__sage_backward(mg, c.dblocks, &gdl, &gdx));
        T_OK(gd__nn_check_errors(&gpu));
        const double eg =
            compare("GraphSAGE parameter gradients", &mc->params.grads, &mg->params.grads, 1e-4);
        const double ex = compare("GraphSAGE input gradient", &dx, &gdx, 1e-4);
        fprintf(stderr,
                "GraphSAGE %d layers, batch %lld, %lld input nodes, in %lld: logits, loss, "
                "gradients match (worst %.2e parameters, %.2e input)\n",
                layers, (long long)batch, (long long)c.nodes[0], (long long)in, eg, ex);
    }

    free(labels);
    gpu.be->release(&gpu, dlabels);
    gd__nn_tensor *all[] = {&x, &loss, &dl, &dx};
    for (int i = 0; i < 4; i++) t_tensor_free(all[i]);
    gd__nn_tensor *dall[] = {&gx, &gloss, &gdl, &gdx};
    for (int i = 0; i < 4; i++) dfree(dall[i]);
    gd__sage_destroy(mc);
    gd__sage_destroy(mg);
    free_chain(&c);
    return crossings > 0;
}

static void check_errors(void) {
    gd__nn_tensor t;
    T_FAILS(gd__nn_tensor_alloc(&gpu, GD_DTYPE_FLOAT64, 2, 2, &t), GD_ERR_UNSUPPORTED,
            "the cuda backend has no float64 ops");
    gd__nn_tensor h = t_tensor(F32, 2, 2, NULL, 0), d = poisoned(2, 2);
    T_FAILS(gd__nn_relu(&gpu, &h, &d), GD_ERR_INVALID_ARG, "x is in host memory but the op runs");
    t_tensor_free(&h);
    dfree(&d);
}

int main(void) {
    if (gd_device_count() == 0) {
        fprintf(stderr, "no GPU: the CUDA nn backend checks are skipped\n");
        return GD_TEST_SKIP;
    }
    uint64_t state = t_seed();
    cpu = gd__nn_cpu_ctx();
    T_OK(gd__nn_cuda_ctx_create(0, &gpu));
    check_gemm(&state);
    check_linear(&state);
    check_mean_agg(&state);
    check_elementwise(&state);
    check_wide_paths(&state);
    check_xent(&state);
    check_adam(&state);
    const int64_t batches[] = {1, 17, 200};
    for (int layers = 1; layers <= 3; layers++)
        for (int b = 0; b < 3; b++) {
            int tries = 0;
            while (check_model(&state, layers, batches[b])) T_ASSERT(++tries < 5);
        }
    check_errors();
    T_OK(gd__nn_check_errors(&gpu));
    gd__nn_cuda_ctx_destroy(&gpu);
    t_check_no_leaks();
    return 0;
}

#else

int main(void) {
    fprintf(stderr, "built without CUDA: the CUDA nn backend checks are skipped\n");
    return GD_TEST_SKIP;
}

#endif
