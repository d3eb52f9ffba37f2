/*
 * The graph attention ops (src/nn/gat.h; issue 17, item 1) on fresh random blocks: every
 * gradient of a whole GAT layer (node scores, edge softmax with its self loops, aggregation,
 * head mean) against central finite differences in float64, for h and both attention vectors;
 * the float32 instance against the float64 one; the softmax sums to one over each destination's
 * edges and its self loop, and a destination without sampled neighbours attends to itself
 * alone (out = its own h, as PyG's added self loop gives); bad shapes and edges are refused.
 */
#include "nn/gat.h"
#include "test.h"

#include <math.h>
#include <string.h>

#define S 14 /* sources */
#define D 6  /* destinations: the first D sources */
#define H 3
#define F 4
#define MAX_E 64

static int32_t indptr[D + 1], indices[MAX_E];
static gd_block blk;
static double hbuf[S * H * F], asrc[H * F], adst[H * F], w[D * F];

static double uniform(uint64_t *rng) {
    return (double)(t_rand(rng) >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* A random block: 0 to 7 sampled neighbours per destination (repeats allowed), the last
 * destination none. */
static void make_block(uint64_t *rng) {
    int32_t e = 0;
    indptr[0] = 0;
    for (int d = 0; d < D; d++) {
        const int k = d == D - 1 ? 0 : (int)(t_rand(rng) % 8);
        for (int i = 0; i < k; i++) indices[e++] = (int32_t)(t_rand(rng) % S);
        indptr[d + 1] = e;
    }
    blk.num_dst = D;
    blk.num_src = S;
    blk.num_edges = e;
    blk.indptr = indptr;
    blk.indices = indices;
}

static gd__nn_tensor t64(double *p, int64_t r, int64_t c) {
    return gd__nn_view(p, GD_DTYPE_FLOAT64, GD__NN_HOST, r, c);
}

/* The layer's loss sum(w * head_mean(aggregate(softmax(scores(h))))) in float64; alpha and the
 * output are left in the given buffers. */
static double layer(const double *h, const double *as, const double *ad, double *alpha,
                    double *out) {
    double ssrc[S * H], sdst[D * H], agg[D * H * F];
    gd__nn_tensor th = t64((double *)h, S, H * F), tas = t64((double *)as, H, F),
                  tad = t64((double *)ad, H, F), ts = t64(ssrc, S, H), td = t64(sdst, D, H),
                  ta = t64(alpha, blk.num_edges + D, H), tg = t64(agg, D, H * F),
                  to = t64(out, D, F);
    T_OK(gd__gat_node_scores_cpu(&th, &tas, &tad, D, &ts, &td));
    T_OK(gd__gat_edge_softmax_cpu(&blk, &ts, &td, 0.2, &ta));
    T_OK(gd__gat_aggregate_cpu(&blk, &ta, &th, &tg));
    T_OK(gd__gat_head_mean_cpu(&tg, H, &to));
    double loss = 0;
    for (int i = 0; i < D * F; i++) loss += w[i] * out[i];
    return loss;
}

static void gradients(double *dh, double *das, double *dad) {
    double ssrc[S * H], sdst[D * H], agg[D * H * F], alpha[(MAX_E + D) * H], out[D * F];
    double dagg[D * H * F], dalpha[(MAX_E + D) * H], dss[S * H], dsd[D * H];
    gd__nn_tensor th = t64(hbuf, S, H * F), tas = t64(asrc, H, F), tad = t64(adst, H, F),
                  ts = t64(ssrc, S, H), td = t64(sdst, D, H), ta = t64(alpha, blk.num_edges + D, H),
                  tg = t64(agg, D, H * F), to = t64(out, D, F), tw = t64(w, D, F),
                  tdg = t64(dagg, D, H * F), tda = t64(dalpha, blk.num_edges + D, H),
                  tdss = t64(dss, S, H), tdsd = t64(dsd, D, H), tdh = t64(dh, S, H * F),
                  tdas = t64(das, H, F), tdad = t64(dad, H, F);
    T_OK(gd__gat_node_scores_cpu(&th, &tas, &tad, D, &ts, &td));
    T_OK(gd__gat_edge_softmax_cpu(&blk, &ts, &td, 0.2, &ta));
    T_OK(gd__gat_aggregate_cpu(&blk, &ta, &th, &tg));
    T_OK(gd__gat_head_mean_cpu(&tg, H, &to));
    memset(dagg, 0, sizeof dagg);
    memset(dss, 0, sizeof dss);
    memset(dsd, 0, sizeof dsd);
    memset(dh, 0, sizeof(double) * S * H * F);
    memset(das, 0, sizeof(double) * H * F);
    memset(dad, 0, sizeof(double) * H * F);
    for (int i = 0; i < (MAX_E + D) * H; i++) dalpha[i] = NAN; /* every row must be written */
    T_OK(gd__gat_head_mean_backward_cpu(&tw, H, &tdg));
    T_OK(gd__gat_aggregate_backward_cpu(&blk, &ta, &th, &tdg, &tda, &tdh));
    for (int64_t i = 0; i < (blk.num_edges + D) * H; i++) T_ASSERT(!isnan(dalpha[i]));
    T_OK(gd__gat_edge_softmax_backward_cpu(&blk, &ts, &td, 0.2, &ta, &tda, &tdss, &tdsd));
    T_OK(gd__gat_node_scores_backward_cpu(&th, &tas, &tad, D, &tdss, &tdsd, &tdh, &tdas, &tdad));
}

/* Central differences of the loss in every element of p (n of them) against g. */
static void fd(const char *what, double *p, int n, const double *g) {
    double alpha[(MAX_E + D) * H], out[D * F];
    for (int i = 0; i < n; i++) {
        const double keep = p[i], eps = 1e-6;
        p[i] = keep + eps;
        const double up = layer(hbuf, asrc, adst, alpha, out);
        p[i] = keep - eps;
        const double down = layer(hbuf, asrc, adst, alpha, out);
        p[i] = keep;
        const double num = (up - down) / (2 * eps);
        if (fabs(num - g[i]) > 1e-6 * (1 + fabs(num)))
            T_FAIL_("%s[%d]: analytic %.10g, finite differences %.10g", what, i, g[i], num);
    }
}

static void round_trip(uint64_t *rng) {
    make_block(rng);
    for (int i = 0; i < S * H * F; i++) hbuf[i] = uniform(rng);
    for (int i = 0; i < H * F; i++) asrc[i] = uniform(rng), adst[i] = uniform(rng);
    for (int i = 0; i < D * F; i++) w[i] = uniform(rng);
    double alpha[(MAX_E + D) * H], out[D * F];
    layer(hbuf, asrc, adst, alpha, out);
    /* The softmax: each destination's edges and self loop sum to one, per head. */
    for (int d = 0; d < D; d++)
        for (int k = 0; k < H; k++) {
            double s = alpha[(blk.num_edges + d) * H + k];
            for (int32_t e = indptr[d]; e < indptr[d + 1]; e++) s += alpha[e * H + k];
            T_NEAR(s, 1.0, 1e-12);
        }
    /* No sampled neighbour: the self loop alone, out = the mean over heads of its own h. */
    for (int k = 0; k < H; k++) T_NEAR(alpha[(blk.num_edges + D - 1) * H + k], 1.0, 0);
    for (int f = 0; f < F; f++) {
        double m = 0;
        for (int k = 0; k < H; k++) m += hbuf[(D - 1) * H * F + k * F + f] / H;
        T_NEAR(out[(D - 1) * F + f], m, 1e-12);
    }
    double dh[S * H * F], das[H * F], dad[H * F];
    gradients(dh, das, dad);
    fd("dh", hbuf, S * H * F, dh);
    fd("da_src", asrc, H * F, das);
    fd("da_dst", adst, H * F, dad);

    /* float32 against float64, forward. */
    float h32[S * H * F], as32[H * F], ad32[H * F], ss32[S * H], sd32[D * H], al32[(MAX_E + D) * H],
        ag32[D * H * F], o32[D * F];
    for (int i = 0; i < S * H * F; i++) h32[i] = (float)hbuf[i];
    for (int i = 0; i < H * F; i++) as32[i] = (float)asrc[i], ad32[i] = (float)adst[i];
    gd__nn_tensor th = gd__nn_view(h32, GD_DTYPE_FLOAT32, GD__NN_HOST, S, H * F),
                  tas = gd__nn_view(as32, GD_DTYPE_FLOAT32, GD__NN_HOST, H, F),
                  tad = gd__nn_view(ad32, GD_DTYPE_FLOAT32, GD__NN_HOST, H, F),
                  ts = gd__nn_view(ss32, GD_DTYPE_FLOAT32, GD__NN_HOST, S, H),
                  td = gd__nn_view(sd32, GD_DTYPE_FLOAT32, GD__NN_HOST, D, H),
                  ta = gd__nn_view(al32, GD_DTYPE_FLOAT32, GD__NN_HOST, blk.num_edges + D, H),
                  tg = gd__nn_view(ag32, GD_DTYPE_FLOAT32, GD__NN_HOST, D, H * F),
                  to = gd__nn_view(o32, GD_DTYPE_FLOAT32, GD__NN_HOST, D, F);
    T_OK(gd__gat_node_scores_cpu(&th, &tas, &tad, D, &ts, &td));
    T_OK(gd__gat_edge_softmax_cpu(&blk, &ts, &td, 0.2, &ta));
    T_OK(gd__gat_aggregate_cpu(&blk, &ta, &th, &tg));
    T_OK(gd__gat_head_mean_cpu(&tg, H, &to));
    for (int i = 0; i < D * F; i++) T_NEAR(o32[i], out[i], 1e-5 * (1 + fabs(out[i])));

    /* Refusals: a mixed dtype, a wrong shape, an edge past the sources. */
    gd__nn_tensor t64h = t64(hbuf, S, H * F);
    T_FAILS(gd__gat_aggregate_cpu(&blk, &ta, &t64h, &tg), GD_ERR_INVALID_ARG, "float64");
    gd__nn_tensor bad = gd__nn_view(o32, GD_DTYPE_FLOAT32, GD__NN_HOST, D, F + 1);
    T_FAILS(gd__gat_head_mean_cpu(&tg, H, &bad), GD_ERR_INVALID_ARG, "expected");
    if (blk.num_edges > 0) {
        const int32_t keep = indices[0];
        indices[0] = S;
        T_FAILS(gd__gat_aggregate_cpu(&blk, &ta, &th, &tg), GD_ERR_RANGE, "source");
        indices[0] = keep;
    }
}

int main(void) {
    uint64_t rng = t_seed();
    for (int round = 0; round < 20; round++) round_trip(&rng);
    t_check_no_leaks();
    fprintf(stderr, "gat ops: ok\n");
    return 0;
}
