/*
 * The CPU ops, written once over an element type: ops_cpu.c includes this file twice, with
 * NN_T = float and NN_S(x) = x##_f32, then NN_T = double and NN_S(x) = x##_f64. The float64
 * instance serves the finite-difference gradient checks; the float32 one is the CPU training
 * path and the oracle of the CUDA tests. Reductions over a row (softmax, bias gradients) are
 * accumulated in double in both instances so that the float32 results are as accurate as their
 * inputs allow. Inputs have been checked by ops.c.
 */

static void NN_S(add_bias)(NN_T *y, const NN_T *b, int64_t rows, int64_t cols, int threads) {
#pragma omp parallel for schedule(static) num_threads(threads) if (rows * cols > 65536)
    for (int64_t i = 0; i < rows; i++) {
        NN_T *yi = y + i * cols;
        for (int64_t j = 0; j < cols; j++) yi[j] += b[j];
    }
}

static void NN_S(bias_grad)(const NN_T *dy, NN_T *db, int64_t rows, int64_t cols, int accumulate) {
    for (int64_t j = 0; j < cols; j++) {
        double s = 0.0;
        for (int64_t i = 0; i < rows; i++) s += (double)dy[i * cols + j];
        db[j] = (NN_T)(accumulate ? (double)db[j] + s : s);
    }
}

static void NN_S(mean_agg)(const gd_block *blk, const NN_T *x, NN_T *out, int64_t cols,
                           int threads) {
    const int64_t nd = blk->num_dst;
#pragma omp parallel for schedule(dynamic, 64) num_threads(threads) if (nd * cols > 65536)
    for (int64_t d = 0; d < nd; d++) {
        NN_T *o = out + d * cols;
        const int32_t e0 = blk->indptr[d], e1 = blk->indptr[d + 1];
        for (int64_t j = 0; j < cols; j++) o[j] = 0;
        if (e1 == e0) continue; /* no neighbours: 0, as PyG's scatter mean */
        for (int32_t e = e0; e < e1; e++) {
            const NN_T *xs = x + (int64_t)blk->indices[e] * cols;
            for (int64_t j = 0; j < cols; j++) o[j] += xs[j];
        }
        const NN_T inv = (NN_T)(1.0 / (double)(e1 - e0));
        for (int64_t j = 0; j < cols; j++) o[j] *= inv;
    }
}

/*
 * A scatter: edges of different destinations may share a source, so this runs on one thread
 * (the CUDA backend uses atomics or a transposed block). It is the oracle more than a hot path.
 */
static void NN_S(mean_agg_backward)(const gd_block *blk, const NN_T *dout, NN_T *dx, int64_t cols) {
    for (int64_t d = 0; d < blk->num_dst; d++) {
        const int32_t e0 = blk->indptr[d], e1 = blk->indptr[d + 1];
        if (e1 == e0) continue;
        const NN_T inv = (NN_T)(1.0 / (double)(e1 - e0));
        const NN_T *g = dout + d * cols;
        for (int32_t e = e0; e < e1; e++) {
            NN_T *t = dx + (int64_t)blk->indices[e] * cols;
            for (int64_t j = 0; j < cols; j++) t[j] += g[j] * inv;
        }
    }
}

static void NN_S(relu)(const NN_T *x, NN_T *y, int64_t n, int threads) {
#pragma omp parallel for schedule(static) num_threads(threads) if (n > 262144)
    for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0 ? x[i] : (NN_T)0;
}

static void NN_S(relu_backward)(const NN_T *y, const NN_T *dy, NN_T *dx, int64_t n, int threads) {
#pragma omp parallel for schedule(static) num_threads(threads) if (n > 262144)
    for (int64_t i = 0; i < n; i++) dx[i] = y[i] > 0 ? dy[i] : (NN_T)0;
}

/* Forward and backward are the same map: keep and scale, or zero. */
static void NN_S(dropout)(double p, uint64_t seed, uint32_t stream, const int64_t *row_ids,
                          const NN_T *x, NN_T *y, int64_t rows, int64_t cols, int threads) {
    const uint32_t thr = gd__nn_dropout_threshold(p);
    const NN_T scale = (NN_T)(1.0 / (1.0 - p));
#pragma omp parallel for schedule(static) num_threads(threads) if (rows * cols > 65536)
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            const int64_t i = r * cols + c;
            const uint64_t key = gd__nn_dropout_key(row_ids, r, cols, c);
            y[i] = gd__nn_dropout_keep(seed, stream, key, thr) ? x[i] * scale : (NN_T)0;
        }
}

/* The caller has checked the labels. Row sums in double; the loss is written as NN_T. */
static void NN_S(softmax_xent)(const NN_T *z, const int64_t *labels, int64_t rows, int64_t cols,
                               double scale, NN_T *loss, NN_T *dz) {
    int64_t count = 0;
    for (int64_t i = 0; i < rows; i++) count += labels[i] >= 0;
    double total = 0.0;
    const double inv = count > 0 ? 1.0 / (double)count : 0.0;
    for (int64_t i = 0; i < rows; i++) {
        const NN_T *zi = z + i * cols;
        NN_T *gi = dz ? dz + i * cols : NULL;
        if (labels[i] < 0) {
            if (gi)
                for (int64_t j = 0; j < cols; j++) gi[j] = 0;
            continue;
        }
        double mx = (double)zi[0];
        for (int64_t j = 1; j < cols; j++)
            if ((double)zi[j] > mx) mx = (double)zi[j];
        double s = 0.0;
        for (int64_t j = 0; j < cols; j++) s += exp((double)zi[j] - mx);
        const double lse = mx + log(s);
        total += lse - (double)zi[labels[i]];
        if (gi) {
            for (int64_t j = 0; j < cols; j++)
                gi[j] = (NN_T)(scale * inv * (exp((double)zi[j] - lse) - (j == labels[i])));
        }
    }
    *loss = (NN_T)(total * inv);
}

static int64_t NN_S(accuracy)(const NN_T *z, const int64_t *labels, int64_t rows, int64_t cols) {
    int64_t correct = 0;
    for (int64_t i = 0; i < rows; i++) {
        if (labels[i] < 0) continue;
        const NN_T *zi = z + i * cols;
        int64_t arg = 0;
        for (int64_t j = 1; j < cols; j++)
            if (zi[j] > zi[arg]) arg = j;
        correct += arg == labels[i];
    }
    return correct;
}

/* Adam and AdamW as torch.optim defines them (maximize = amsgrad = False). */
static void NN_S(adam)(const gd__nn_adam_options *o, double bc1, double bc2, NN_T *p, const NN_T *g,
                       NN_T *m, NN_T *v, int64_t n, int threads) {
    const double b1 = o->beta1, b2 = o->beta2, lr = o->lr, wd = o->weight_decay, eps = o->eps;
    const double step = lr / bc1, rbc2 = 1.0 / sqrt(bc2);
    const int decoupled = o->decoupled;
#pragma omp parallel for schedule(static) num_threads(threads) if (n > 65536)
    for (int64_t i = 0; i < n; i++) {
        double pi = (double)p[i], gi = (double)g[i];
        if (decoupled)
            pi *= 1.0 - lr * wd;
        else
            gi += wd * pi;
        const double mi = b1 * (double)m[i] + (1.0 - b1) * gi;
        const double vi = b2 * (double)v[i] + (1.0 - b2) * gi * gi;
        m[i] = (NN_T)mi;
        v[i] = (NN_T)vi;
        p[i] = (NN_T)(pi - step * mi / (sqrt(vi) * rbc2 + eps));
    }
}
