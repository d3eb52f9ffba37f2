/*
 * The GAT ops' bodies (gat.h), written once over an element type: gat_cpu.c includes this file
 * through each_dtype.h, as ops_cpu.c does its ops. Sums are carried in double. A destination's
 * edges are its block edges [indptr[d], indptr[d + 1]) and, when loops is set, its self loop
 * (alpha row E + d); the bipartite forms (R-GAT's relations) pass loops = 0.
 */

static void NN_S(gat_scores)(const NN_T *h, const NN_T *a_src, const NN_T *a_dst, int64_t num_src,
                             int64_t num_dst, int64_t H, int64_t F, NN_T *ssrc, NN_T *sdst) {
    for (int64_t v = 0; v < num_src; v++)
        for (int64_t k = 0; k < H; k++) {
            const NN_T *hv = h + v * H * F + k * F;
            double s = 0, t = 0;
            for (int64_t f = 0; f < F; f++) {
                s += (double)hv[f] * (double)a_src[k * F + f];
                if (v < num_dst) t += (double)hv[f] * (double)a_dst[k * F + f];
            }
            ssrc[v * H + k] = (NN_T)s;
            if (v < num_dst) sdst[v * H + k] = (NN_T)t;
        }
}

static void NN_S(gat_scores_backward)(const NN_T *h, const NN_T *a_src, const NN_T *a_dst,
                                      int64_t num_src, int64_t num_dst, int64_t H, int64_t F,
                                      const NN_T *dssrc, const NN_T *dsdst, NN_T *dh, NN_T *da_src,
                                      NN_T *da_dst) {
    for (int64_t k = 0; k < H; k++)
        for (int64_t f = 0; f < F; f++) {
            double gs = 0, gd = 0;
            for (int64_t v = 0; v < num_src; v++) {
                const double hv = (double)h[v * H * F + k * F + f];
                gs += (double)dssrc[v * H + k] * hv;
                if (v < num_dst) gd += (double)dsdst[v * H + k] * hv;
                double g = (double)dssrc[v * H + k] * (double)a_src[k * F + f];
                if (v < num_dst) g += (double)dsdst[v * H + k] * (double)a_dst[k * F + f];
                dh[v * H * F + k * F + f] += (NN_T)g;
            }
            da_src[k * F + f] += (NN_T)gs;
            da_dst[k * F + f] += (NN_T)gd;
        }
}

/* The pre-activation of edge e (source s) of destination d, head k, and its LeakyReLU. */
static double NN_S(gat_z)(const NN_T *ssrc, const NN_T *sdst, int64_t s, int64_t d, int64_t k,
                          int64_t H) {
    return (double)ssrc[s * H + k] + (double)sdst[d * H + k];
}

static double NN_S(gat_leaky)(double z, double slope) {
    return z > 0 ? z : slope * z;
}

/*
 * off: destination d's own source row is d + off (0 in a block; inference: the chunk's first).
 * Without loops a destination without edges gets no weights (it has none to normalise).
 */
static void NN_S(gat_softmax)(const gd_block *blk, int64_t off, int loops, const NN_T *ssrc,
                              const NN_T *sdst, double slope, int64_t H, NN_T *alpha) {
    const int64_t E = blk->num_edges;
    for (int64_t d = 0; d < blk->num_dst; d++)
        for (int64_t k = 0; k < H; k++) {
            const int32_t e0 = blk->indptr[d], e1 = blk->indptr[d + 1];
            if (!loops && e1 == e0) continue;
            /* The maximum first, so that the exponentials cannot overflow. */
            double m = loops ? NN_S(gat_leaky)(NN_S(gat_z)(ssrc, sdst, d + off, d, k, H), slope)
                             : -HUGE_VAL,
                   sum = 0;
            for (int32_t e = e0; e < e1; e++)
                m = fmax(m,
                         NN_S(gat_leaky)(NN_S(gat_z)(ssrc, sdst, blk->indices[e], d, k, H), slope));
            for (int32_t e = e0; e < e1; e++)
                sum += exp(
                    NN_S(gat_leaky)(NN_S(gat_z)(ssrc, sdst, blk->indices[e], d, k, H), slope) - m);
            const double self =
                loops ? exp(NN_S(gat_leaky)(NN_S(gat_z)(ssrc, sdst, d + off, d, k, H), slope) - m)
                      : 0.0;
            sum += self;
            for (int32_t e = e0; e < e1; e++)
                alpha[(int64_t)e * H + k] =
                    (NN_T)(exp(NN_S(gat_leaky)(NN_S(gat_z)(ssrc, sdst, blk->indices[e], d, k, H),
                                               slope) -
                               m) /
                           sum);
            if (loops) alpha[(E + d) * H + k] = (NN_T)(self / sum);
        }
}

/* dz = alpha * (dalpha - sum alpha dalpha) * LeakyReLU'(z); into the scores of both ends. */
static void NN_S(gat_softmax_backward)(const gd_block *blk, int loops, const NN_T *ssrc,
                                       const NN_T *sdst, double slope, int64_t H,
                                       const NN_T *alpha, const NN_T *dalpha, NN_T *dssrc,
                                       NN_T *dsdst) {
    const int64_t E = blk->num_edges;
    for (int64_t d = 0; d < blk->num_dst; d++)
        for (int64_t k = 0; k < H; k++) {
            const int32_t e0 = blk->indptr[d], e1 = blk->indptr[d + 1];
            const int64_t self = (E + d) * H + k;
            double dot = loops ? (double)alpha[self] * (double)dalpha[self] : 0.0;
            for (int32_t e = e0; e < e1; e++)
                dot += (double)alpha[(int64_t)e * H + k] * (double)dalpha[(int64_t)e * H + k];
            for (int32_t e = e0; e < e1 + loops; e++) {
                /* e == e1 stands for the self loop. */
                const int64_t row = e < e1 ? (int64_t)e * H + k : self;
                const int64_t s = e < e1 ? blk->indices[e] : d;
                const double z = NN_S(gat_z)(ssrc, sdst, s, d, k, H);
                const double g =
                    (double)alpha[row] * ((double)dalpha[row] - dot) * (z > 0 ? 1.0 : slope);
                dssrc[s * H + k] += (NN_T)g;
                dsdst[d * H + k] += (NN_T)g;
            }
        }
}

/* accumulate: out += the sums (R-GAT's relations into one type share out), else out = them. */
static void NN_S(gat_aggregate)(const gd_block *blk, int64_t off, int loops, int accumulate,
                                const NN_T *alpha, const NN_T *h, int64_t H, int64_t F,
                                NN_T *out) {
    const int64_t E = blk->num_edges;
    for (int64_t d = 0; d < blk->num_dst; d++)
        for (int64_t k = 0; k < H; k++)
            for (int64_t f = 0; f < F; f++) {
                double s =
                    loops ? (double)alpha[(E + d) * H + k] *
                                (double)h[(d + off) * H * F + k * F + f]
                          : 0.0;
                for (int32_t e = blk->indptr[d]; e < blk->indptr[d + 1]; e++)
                    s += (double)alpha[(int64_t)e * H + k] *
                         (double)h[(int64_t)blk->indices[e] * H * F + k * F + f];
                NN_T *o = &out[d * H * F + k * F + f];
                *o = (NN_T)(accumulate ? (double)*o + s : s);
            }
}

static void NN_S(gat_aggregate_backward)(const gd_block *blk, int loops, const NN_T *alpha,
                                         const NN_T *h, int64_t H, int64_t F, const NN_T *dout,
                                         NN_T *dalpha, NN_T *dh) {
    const int64_t E = blk->num_edges;
    for (int64_t d = 0; d < blk->num_dst; d++)
        for (int64_t k = 0; k < H; k++) {
            const NN_T *g = dout + d * H * F + k * F;
            for (int32_t e = blk->indptr[d]; e < blk->indptr[d + 1] + loops; e++) {
                const int self = e == blk->indptr[d + 1];
                const int64_t row = self ? (E + d) * H + k : (int64_t)e * H + k;
                const int64_t s = self ? d : blk->indices[e];
                double dot = 0;
                for (int64_t f = 0; f < F; f++) {
                    dot += (double)g[f] * (double)h[s * H * F + k * F + f];
                    dh[s * H * F + k * F + f] += (NN_T)((double)alpha[row] * (double)g[f]);
                }
                dalpha[row] = (NN_T)dot;
            }
        }
}

static void NN_S(gat_head_mean)(const NN_T *x, int64_t rows, int64_t H, int64_t F, NN_T *out) {
    for (int64_t r = 0; r < rows; r++)
        for (int64_t f = 0; f < F; f++) {
            double s = 0;
            for (int64_t k = 0; k < H; k++) s += (double)x[r * H * F + k * F + f];
            out[r * F + f] = (NN_T)(s / (double)H);
        }
}

static void NN_S(gat_head_mean_backward)(const NN_T *dout, int64_t rows, int64_t H, int64_t F,
                                         NN_T *dx) {
    for (int64_t r = 0; r < rows; r++)
        for (int64_t k = 0; k < H; k++)
            for (int64_t f = 0; f < F; f++)
                dx[r * H * F + k * F + f] += (NN_T)((double)dout[r * F + f] / (double)H);
}
