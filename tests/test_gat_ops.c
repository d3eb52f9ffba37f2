/*
 * The graph attention ops (src/nn/gat.h; issue 17, item 1) on fresh random blocks: every
 * gradient of a whole GAT layer (node scores, edge softmax with its self loops, aggregation,
 * head mean) against central finite differences in float64, for h and both attention vectors;
 * the float32 instance against the float64 one; the softmax sums to one over each destination's
 * edges and its self loop, and a destination without sampled neighbours attends to itself
 * alone (out = its own h, as PyG's added self loop gives); bad shapes and edges are refused.
 * The bipartite forms (R-GAT's relations) likewise: a block with more destinations than
 * sources, each side scored from its own projection, no self loops (a destination without
 * edges sums to 0, and the accumulating aggregate leaves it as it was), the gradients of both
 * sides' projections and both attention vectors against finite differences, float32 against
 * float64, the edge keys of two node sets, and refusals.
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

/* ------------------------------------------------- bipartite relations */

#define BS 5 /* sources */
#define BD 9 /* destinations, a node set of their own: more than the sources */

static int32_t bindptr[BD + 1], bindices[MAX_E];
static gd_block bblk;
static double bsrc[BS * H * F], bdst[BD * H * F], bw[BD * F], bprior[BD * H * F];

/* A random bipartite block: 0 to 5 edges per destination, the first destination none. */
static void make_bipartite(uint64_t *rng) {
    int32_t e = 0;
    bindptr[0] = 0;
    for (int d = 0; d < BD; d++) {
        const int k = d == 0 ? 0 : (int)(t_rand(rng) % 6);
        for (int i = 0; i < k; i++) bindices[e++] = (int32_t)(t_rand(rng) % BS);
        bindptr[d + 1] = e;
    }
    bblk.num_dst = BD;
    bblk.num_src = BS;
    bblk.num_edges = e;
    bblk.indptr = bindptr;
    bblk.indices = bindices;
}

/*
 * sum(w * head_mean(prior + aggregate(softmax(scores)))) in float64: the sources scored with
 * a_src, the destinations (their own rows) with a_dst, the sums added to a copy of prior.
 */
static double bip_layer(const double *hs, const double *hd, const double *as, const double *ad,
                        double *alpha, double *agg) {
    double ss[BS * H], sd[BD * H], none[H], out[BD * F];
    gd__nn_tensor ths = t64((double *)hs, BS, H * F), thd = t64((double *)hd, BD, H * F),
                  tas = t64((double *)as, H, F), tad = t64((double *)ad, H, F),
                  tss = t64(ss, BS, H), tsd = t64(sd, BD, H), tn = t64(none, 0, H),
                  ta = t64(alpha, bblk.num_edges, H), tg = t64(agg, BD, H * F),
                  to = t64(out, BD, F);
    T_OK(gd__gat_node_scores_cpu(&ths, &tas, &tad, 0, &tss, &tn));
    T_OK(gd__gat_node_scores_cpu(&thd, &tad, &tas, 0, &tsd, &tn));
    T_OK(gd__gat_bip_softmax_cpu(&bblk, &tss, &tsd, 0.2, &ta));
    memcpy(agg, bprior, sizeof bprior);
    T_OK(gd__gat_bip_aggregate_cpu(&bblk, &ta, &ths, 1, &tg));
    T_OK(gd__gat_head_mean_cpu(&tg, H, &to));
    double loss = 0;
    for (int i = 0; i < BD * F; i++) loss += bw[i] * out[i];
    return loss;
}

static void bip_gradients(double *dhs, double *dhd, double *das, double *dad) {
    double alpha[MAX_E * H], agg[BD * H * F], ss[BS * H], sd[BD * H], none[H];
    double dagg[BD * H * F], dalpha[MAX_E * H], dss[BS * H], dsd[BD * H];
    bip_layer(bsrc, bdst, asrc, adst, alpha, agg);
    gd__nn_tensor ths = t64(bsrc, BS, H * F), thd = t64(bdst, BD, H * F), tas = t64(asrc, H, F),
                  tad = t64(adst, H, F), tss = t64(ss, BS, H), tsd = t64(sd, BD, H),
                  tn = t64(none, 0, H), ta = t64(alpha, bblk.num_edges, H), tw = t64(bw, BD, F),
                  tdg = t64(dagg, BD, H * F), tda = t64(dalpha, bblk.num_edges, H),
                  tdss = t64(dss, BS, H), tdsd = t64(dsd, BD, H), tdhs = t64(dhs, BS, H * F),
                  tdhd = t64(dhd, BD, H * F), tdas = t64(das, H, F), tdad = t64(dad, H, F);
    T_OK(gd__gat_node_scores_cpu(&ths, &tas, &tad, 0, &tss, &tn));
    T_OK(gd__gat_node_scores_cpu(&thd, &tad, &tas, 0, &tsd, &tn));
    memset(dagg, 0, sizeof dagg);
    memset(dss, 0, sizeof dss);
    memset(dsd, 0, sizeof dsd);
    memset(dhs, 0, sizeof(double) * BS * H * F);
    memset(dhd, 0, sizeof(double) * BD * H * F);
    memset(das, 0, sizeof(double) * H * F);
    memset(dad, 0, sizeof(double) * H * F);
    for (int i = 0; i < MAX_E * H; i++) dalpha[i] = NAN; /* every row must be written */
    T_OK(gd__gat_head_mean_backward_cpu(&tw, H, &tdg));
    T_OK(gd__gat_bip_aggregate_backward_cpu(&bblk, &ta, &ths, &tdg, &tda, &tdhs));
    for (int64_t i = 0; i < bblk.num_edges * H; i++) T_ASSERT(!isnan(dalpha[i]));
    T_OK(gd__gat_bip_softmax_backward_cpu(&bblk, &tss, &tsd, 0.2, &ta, &tda, &tdss, &tdsd));
    T_OK(gd__gat_node_scores_backward_cpu(&ths, &tas, &tad, 0, &tdss, &tn, &tdhs, &tdas, &tdad));
    T_OK(gd__gat_node_scores_backward_cpu(&thd, &tad, &tas, 0, &tdsd, &tn, &tdhd, &tdad, &tdas));
}

static void bip_fd(const char *what, double *p, int n, const double *g) {
    double alpha[MAX_E * H], agg[BD * H * F];
    for (int i = 0; i < n; i++) {
        const double keep = p[i], eps = 1e-6;
        p[i] = keep + eps;
        const double up = bip_layer(bsrc, bdst, asrc, adst, alpha, agg);
        p[i] = keep - eps;
        const double down = bip_layer(bsrc, bdst, asrc, adst, alpha, agg);
        p[i] = keep;
        const double num = (up - down) / (2 * eps);
        if (fabs(num - g[i]) > 1e-6 * (1 + fabs(num)))
            T_FAIL_("bipartite %s[%d]: analytic %.10g, finite differences %.10g", what, i, g[i],
                    num);
    }
}

static void bipartite_round(uint64_t *rng) {
    make_bipartite(rng);
    for (int i = 0; i < BS * H * F; i++) bsrc[i] = uniform(rng);
    for (int i = 0; i < BD * H * F; i++) bdst[i] = uniform(rng), bprior[i] = uniform(rng);
    for (int i = 0; i < H * F; i++) asrc[i] = uniform(rng), adst[i] = uniform(rng);
    for (int i = 0; i < BD * F; i++) bw[i] = uniform(rng);
    double alpha[MAX_E * H], agg[BD * H * F];
    bip_layer(bsrc, bdst, asrc, adst, alpha, agg);
    /* Each destination's edges sum to one; one without edges keeps its prior sum (adds 0). */
    for (int d = 0; d < BD; d++)
        for (int k = 0; k < H; k++) {
            double s = 0;
            for (int32_t e = bindptr[d]; e < bindptr[d + 1]; e++) s += alpha[e * H + k];
            T_NEAR(s, bindptr[d + 1] > bindptr[d] ? 1.0 : 0.0, 1e-12);
        }
    for (int i = 0; i < H * F; i++) T_NEAR(agg[i], bprior[i], 0);
    double dhs[BS * H * F], dhd[BD * H * F], das[H * F], dad[H * F];
    bip_gradients(dhs, dhd, das, dad);
    bip_fd("dh_src", bsrc, BS * H * F, dhs);
    bip_fd("dh_dst", bdst, BD * H * F, dhd);
    bip_fd("da_src", asrc, H * F, das);
    bip_fd("da_dst", adst, H * F, dad);

    /* float32 against float64: the weights and the written (not accumulated) sums. */
    float s32[BS * H * F], ss32[BS * H], sd32[BD * H], al32[MAX_E * H], ag32[BD * H * F];
    double ss64[BS * H], sd64[BD * H];
    for (int i = 0; i < BS * H; i++) ss64[i] = uniform(rng), ss32[i] = (float)ss64[i];
    for (int i = 0; i < BD * H; i++) sd64[i] = uniform(rng), sd32[i] = (float)sd64[i];
    for (int i = 0; i < BS * H * F; i++) s32[i] = (float)bsrc[i];
    gd__nn_tensor tss = t64(ss64, BS, H), tsd = t64(sd64, BD, H),
                  ta = t64(alpha, bblk.num_edges, H), ths = t64(bsrc, BS, H * F),
                  tg = t64(agg, BD, H * F);
    gd__nn_tensor fss = gd__nn_view(ss32, GD_DTYPE_FLOAT32, GD__NN_HOST, BS, H),
                  fsd = gd__nn_view(sd32, GD_DTYPE_FLOAT32, GD__NN_HOST, BD, H),
                  fa = gd__nn_view(al32, GD_DTYPE_FLOAT32, GD__NN_HOST, bblk.num_edges, H),
                  fh = gd__nn_view(s32, GD_DTYPE_FLOAT32, GD__NN_HOST, BS, H * F),
                  fg = gd__nn_view(ag32, GD_DTYPE_FLOAT32, GD__NN_HOST, BD, H * F);
    T_OK(gd__gat_bip_softmax_cpu(&bblk, &tss, &tsd, 0.2, &ta));
    T_OK(gd__gat_bip_aggregate_cpu(&bblk, &ta, &ths, 0, &tg));
    T_OK(gd__gat_bip_softmax_cpu(&bblk, &fss, &fsd, 0.2, &fa));
    for (int i = 0; i < BD * H * F; i++) ag32[i] = NAN; /* written, not accumulated */
    T_OK(gd__gat_bip_aggregate_cpu(&bblk, &fa, &fh, 0, &fg));
    for (int64_t i = 0; i < bblk.num_edges * H; i++) T_NEAR(al32[i], alpha[i], 1e-6);
    for (int i = 0; i < BD * H * F; i++) T_NEAR(ag32[i], agg[i], 1e-5 * (1 + fabs(agg[i])));
    for (int i = 0; i < H * F; i++) T_NEAR(agg[i], 0.0, 0); /* destination 0: no edges */

    /* The keys: each edge by its two ends' ids (here sources 100.., destinations 500..). */
    int64_t sid[BS], did[BD], keys[MAX_E];
    for (int i = 0; i < BS; i++) sid[i] = 100 + i;
    for (int i = 0; i < BD; i++) did[i] = 500 + 3 * i;
    T_OK(gd__gat_bip_edge_keys_cpu(&bblk, sid, did, keys));
    for (int d = 0; d < BD; d++)
        for (int32_t e = bindptr[d]; e < bindptr[d + 1]; e++)
            T_EQ_INT(keys[e], gd__gat_edge_key(did[d], sid[bindices[e]]));

    /* Refusals: alpha with self-loop rows, an edge past the sources, a short sdst. */
    gd__nn_tensor loops = t64(alpha, bblk.num_edges + BD, H);
    if (bblk.num_edges + BD <= MAX_E)
        T_FAILS(gd__gat_bip_softmax_cpu(&bblk, &tss, &tsd, 0.2, &loops), GD_ERR_INVALID_ARG,
                "alpha is");
    gd__nn_tensor short_sd = t64(sd64, BD - 1, H);
    T_FAILS(gd__gat_bip_softmax_cpu(&bblk, &tss, &short_sd, 0.2, &ta), GD_ERR_INVALID_ARG,
            "sdst is");
    if (bblk.num_edges > 0) {
        const int32_t keep = bindices[0];
        bindices[0] = BS;
        T_FAILS(gd__gat_bip_aggregate_cpu(&bblk, &ta, &ths, 0, &tg), GD_ERR_RANGE, "source");
        T_FAILS(gd__gat_bip_edge_keys_cpu(&bblk, sid, did, keys), GD_ERR_RANGE, "source");
        bindices[0] = keep;
    }
}

int main(void) {
    uint64_t rng = t_seed();
    for (int round = 0; round < 20; round++) round_trip(&rng);
    for (int round = 0; round < 20; round++) bipartite_round(&rng);
    t_check_no_leaks();
    fprintf(stderr, "gat ops: ok\n");
    return 0;
}
