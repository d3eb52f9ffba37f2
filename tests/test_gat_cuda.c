/*
 * The graph attention ops on a GPU (src/nn/gat_cuda.cu) against the CPU reference (gat.h), in
 * float32, on fresh random blocks (up to 2000 sources, repeated neighbours, destinations with
 * none, heads of 16 and of 40 features: more than a warp's lanes): a whole layer forward (node
 * scores, edge softmax, aggregation, head mean) and backward, GPU outputs poisoned with NaN
 * first so an unwritten element shows; forwards within 1e-5, backwards (atomic adds in any
 * order) within 1e-4, relative. Then a float64 tensor is refused on the GPU. The forms exact
 * inference uses (the destinations' own rows at an offset into the sources: softmax_at,
 * aggregate_at) within 1e-5, and the attention dropout's edge keys, equal. The bipartite forms
 * of R-GAT's relations (more destinations than sources at times, no self loops, destinations
 * without edges, the aggregate added to a prior sum): softmax, aggregate and their backwards
 * within 1e-5 / 1e-4, and the keys of two node sets, equal. Without a GPU the test exits 77.
 */
#include "test.h"

#ifdef GD_WITH_CUDA
#include "nn/gat.h"

#include <cuda_runtime_api.h>
#include <math.h>

/* The layer's buffers, forward then backward. */
enum {
    B_H,
    B_AS,
    B_AD,
    B_SS,
    B_SD,
    B_AL,
    B_AG,
    B_OUT,
    B_DOUT,
    B_DAG,
    B_DAL,
    B_DSS,
    B_DSD,
    B_DH,
    B_DAS,
    B_DAD,
    FIELDS
};
typedef struct {
    float *f[FIELDS];
} layer_bufs;

static int64_t S, D, E, H, F;
static int32_t *ip, *ix;

static float uni(uint64_t *rng) {
    return (float)((double)(t_rand(rng) >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static gd__nn_tensor t(float *p, int device, int64_t r, int64_t c) {
    return gd__nn_view(p, GD_DTYPE_FLOAT32, device, r, c);
}

/* One forward and backward of the layer on ctx (CPU: the *_cpu entries). */
static void run(const gd__nn_ctx *ctx, const gd_block *blk, layer_bufs *b) {
    const int dev = ctx ? ctx->device : GD__NN_HOST;
    gd__nn_tensor h = t(b->f[B_H], dev, S, H * F), as = t(b->f[B_AS], dev, H, F),
                  ad = t(b->f[B_AD], dev, H, F), ss = t(b->f[B_SS], dev, S, H),
                  sd = t(b->f[B_SD], dev, D, H), al = t(b->f[B_AL], dev, E + D, H),
                  ag = t(b->f[B_AG], dev, D, H * F), out = t(b->f[B_OUT], dev, D, F),
                  dout = t(b->f[B_DOUT], dev, D, F), dag = t(b->f[B_DAG], dev, D, H * F),
                  dal = t(b->f[B_DAL], dev, E + D, H), dss = t(b->f[B_DSS], dev, S, H),
                  dsd = t(b->f[B_DSD], dev, D, H), dh = t(b->f[B_DH], dev, S, H * F),
                  das = t(b->f[B_DAS], dev, H, F), dad = t(b->f[B_DAD], dev, H, F);
    if (!ctx) {
        T_OK(gd__gat_node_scores_cpu(&h, &as, &ad, D, &ss, &sd));
        T_OK(gd__gat_edge_softmax_cpu(blk, &ss, &sd, 0.2, &al));
        T_OK(gd__gat_aggregate_cpu(blk, &al, &h, &ag));
        T_OK(gd__gat_head_mean_cpu(&ag, H, &out));
        T_OK(gd__gat_head_mean_backward_cpu(&dout, H, &dag));
        T_OK(gd__gat_aggregate_backward_cpu(blk, &al, &h, &dag, &dal, &dh));
        T_OK(gd__gat_edge_softmax_backward_cpu(blk, &ss, &sd, 0.2, &al, &dal, &dss, &dsd));
        T_OK(gd__gat_node_scores_backward_cpu(&h, &as, &ad, D, &dss, &dsd, &dh, &das, &dad));
        return;
    }
    T_OK(gd__gat_node_scores_cuda(ctx, &h, &as, &ad, D, &ss, &sd));
    T_OK(gd__gat_edge_softmax_cuda(ctx, blk, &ss, &sd, 0.2, &al));
    T_OK(gd__gat_aggregate_cuda(ctx, blk, &al, &h, &ag));
    T_OK(gd__gat_head_mean_cuda(ctx, &ag, H, &out));
    T_OK(gd__gat_head_mean_backward_cuda(ctx, &dout, H, &dag));
    T_OK(gd__gat_aggregate_backward_cuda(ctx, blk, &al, &h, &dag, &dal, &dh));
    T_OK(gd__gat_edge_softmax_backward_cuda(ctx, blk, &ss, &sd, 0.2, &al, &dal, &dss, &dsd));
    T_OK(gd__gat_node_scores_backward_cuda(ctx, &h, &as, &ad, D, &dss, &dsd, &dh, &das, &dad));
}

static int64_t sizes[FIELDS];

static void set_sizes(void) {
    const int64_t s[FIELDS] = {S * H * F, H * F,     H * F, S * H,     D * H,       (E + D) * H,
                               D * H * F, D * F,     D * F, D * H * F, (E + D) * H, S * H,
                               D * H,     S * H * F, H * F, H * F};
    memcpy(sizes, s, sizeof s);
}

static float **field(layer_bufs *b, int i) {
    return &b->f[i];
}

static void compare(const char *what, const float *cpu, const float *gpu, int64_t n, double tol) {
    for (int64_t i = 0; i < n; i++)
        if (!(fabs((double)cpu[i] - (double)gpu[i]) <= tol * (1.0 + fabs((double)cpu[i]))))
            T_FAIL_("%s[%lld] (S %lld, D %lld, E %lld, H %lld, F %lld): CPU %.9g, GPU %.9g", what,
                    (long long)i, (long long)S, (long long)D, (long long)E, (long long)H,
                    (long long)F, cpu[i], gpu[i]);
}

static void one(const gd__nn_ctx *ctx, uint64_t *rng, int64_t heads, int64_t feats) {
    S = 1 + (int64_t)(t_rand(rng) % 2000);
    D = 1 + (int64_t)(t_rand(rng) % (uint64_t)(S < 500 ? S : 500));
    H = heads;
    F = feats;
    ip = malloc((size_t)(D + 1) * sizeof *ip);
    ix = malloc((size_t)(D * 16 + 1) * sizeof *ix);
    T_ASSERT(ip && ix);
    E = 0;
    ip[0] = 0;
    for (int64_t d = 0; d < D; d++) {
        const int64_t k = t_rand(rng) % 5 == 0 ? 0 : (int64_t)(t_rand(rng) % 16);
        for (int64_t i = 0; i < k; i++) ix[E++] = (int32_t)(t_rand(rng) % (uint64_t)S);
        ip[d + 1] = (int32_t)E;
    }
    set_sizes();
    layer_bufs cpu, gpu, back;
    for (int i = 0; i < FIELDS; i++) {
        *field(&cpu, i) = calloc((size_t)(sizes[i] ? sizes[i] : 1), sizeof(float));
        *field(&back, i) = calloc((size_t)(sizes[i] ? sizes[i] : 1), sizeof(float));
        T_ASSERT(*field(&cpu, i) && *field(&back, i));
        CU(cudaMalloc((void **)field(&gpu, i), (size_t)(sizes[i] ? sizes[i] : 1) * sizeof(float)));
        /* NaN everywhere: outputs must be written; the accumulated gradients start at 0. */
        CU(cudaMemset(*field(&gpu, i), 0xff, (size_t)(sizes[i] ? sizes[i] : 1) * sizeof(float)));
    }
    /* Inputs: h, a_src, a_dst, dout; accumulated outputs zero: dag dss dsd dh das dad. */
    const int inputs[4] = {B_H, B_AS, B_AD, B_DOUT},
              zeroed[6] = {B_DAG, B_DSS, B_DSD, B_DH, B_DAS, B_DAD};
    for (int q = 0; q < 4; q++) {
        float *p = *field(&cpu, inputs[q]);
        for (int64_t i = 0; i < sizes[inputs[q]]; i++) p[i] = uni(rng);
        CU(cudaMemcpy(*field(&gpu, inputs[q]), p, (size_t)sizes[inputs[q]] * sizeof(float),
                      cudaMemcpyHostToDevice));
    }
    for (int q = 0; q < 6; q++)
        CU(cudaMemset(*field(&gpu, zeroed[q]), 0, (size_t)sizes[zeroed[q]] * sizeof(float)));
    int32_t *dip, *dix;
    CU(cudaMalloc((void **)&dip, (size_t)(D + 1) * sizeof *dip));
    CU(cudaMalloc((void **)&dix, (size_t)(E ? E : 1) * sizeof *dix));
    CU(cudaMemcpy(dip, ip, (size_t)(D + 1) * sizeof *dip, cudaMemcpyHostToDevice));
    if (E) CU(cudaMemcpy(dix, ix, (size_t)E * sizeof *dix, cudaMemcpyHostToDevice));
    gd_block hb = {D, S, E, ip, ix}, db = {D, S, E, dip, dix};
    run(NULL, &hb, &cpu);
    /* The poison, zeroes and inputs went in on the legacy stream; ctx's ops run on its own
     * non-blocking stream, so they start only after all of it has landed. */
    CU(cudaDeviceSynchronize());
    run(ctx, &db, &gpu);
    T_OK(ctx->be->synchronize(ctx));
    for (int i = 0; i < FIELDS; i++)
        CU(cudaMemcpy(*field(&back, i), *field(&gpu, i), (size_t)sizes[i] * sizeof(float),
                      cudaMemcpyDeviceToHost));
    static const char *const names[FIELDS] = {
        "h",    "a_src", "a_dst",  "ssrc",  "sdst",  "alpha", "agg",    "out",
        "dout", "dagg",  "dalpha", "dssrc", "dsdst", "dh",    "da_src", "da_dst"};
    for (int i = 0; i < FIELDS; i++)
        compare(names[i], *field(&cpu, i), *field(&back, i), sizes[i], i <= B_DOUT ? 1e-5 : 1e-4);
    /* float64 is the CPU's alone. */
    double d64[4];
    gd__nn_tensor x64 = gd__nn_view(d64, GD_DTYPE_FLOAT64, ctx->device, 1, 4),
                  o64 = gd__nn_view(d64, GD_DTYPE_FLOAT64, ctx->device, 1, 2);
    T_FAILS(gd__gat_head_mean_cuda(ctx, &x64, 2, &o64), GD_ERR_UNSUPPORTED, "float32");
    for (int i = 0; i < FIELDS; i++) {
        free(*field(&cpu, i));
        free(*field(&back, i));
        CU(cudaFree(*field(&gpu, i)));
    }
    CU(cudaFree(dip));
    CU(cudaFree(dix));
    free(ip);
    free(ix);
}

/* A device copy of n bytes at src. */
static void *dev_copy(const void *src, size_t n) {
    void *d = NULL;
    CU(cudaMalloc(&d, n ? n : 1));
    if (n) CU(cudaMemcpy(d, src, n, cudaMemcpyHostToDevice));
    return d;
}

/*
 * softmax_at and aggregate_at with the destinations' own rows at a random offset, and the edge
 * keys of the block from random node ids: GPU against CPU.
 */
static void offsets_and_keys(const gd__nn_ctx *ctx, uint64_t *rng, int64_t heads, int64_t feats) {
    const int64_t ns = 1 + (int64_t)(t_rand(rng) % 3000);
    const int64_t nd = 1 + (int64_t)(t_rand(rng) % (uint64_t)(ns < 400 ? ns : 400));
    const int64_t off = (int64_t)(t_rand(rng) % (uint64_t)(ns - nd + 1)), hf = heads * feats;
    int32_t *hip = malloc((size_t)(nd + 1) * 4), *hix = malloc((size_t)(nd * 12 + 1) * 4);
    T_ASSERT(hip && hix);
    int64_t ne = 0;
    hip[0] = 0;
    for (int64_t d = 0; d < nd; d++) {
        const int64_t k = (int64_t)(t_rand(rng) % 12);
        for (int64_t i = 0; i < k; i++) hix[ne++] = (int32_t)(t_rand(rng) % (uint64_t)ns);
        hip[d + 1] = (int32_t)ne;
    }
    float *ss = malloc((size_t)(ns * heads) * 4), *sd = malloc((size_t)(nd * heads) * 4),
          *h = malloc((size_t)(ns * hf) * 4);
    int64_t *ids = malloc((size_t)ns * 8);
    T_ASSERT(ss && sd && h && ids);
    for (int64_t i = 0; i < ns * heads; i++) ss[i] = uni(rng);
    for (int64_t i = 0; i < nd * heads; i++) sd[i] = uni(rng);
    for (int64_t i = 0; i < ns * hf; i++) h[i] = uni(rng);
    for (int64_t i = 0; i < ns; i++) ids[i] = (int64_t)(t_rand(rng) >> 2);
    const size_t nal = (size_t)((ne + nd) * heads), nout = (size_t)(nd * hf);
    float *al = malloc(nal * 4), *out = malloc(nout * 4), *gal = malloc(nal * 4),
          *gout = malloc(nout * 4);
    int64_t *keys = malloc((size_t)(ne + nd) * 8), *gkeys = malloc((size_t)(ne + nd) * 8);
    T_ASSERT(al && out && gal && gout && keys && gkeys);
    const gd_block hb = {nd, ns, ne, hip, hix};
    gd__nn_tensor tss = t(ss, GD__NN_HOST, ns, heads), tsd = t(sd, GD__NN_HOST, nd, heads),
                  th = t(h, GD__NN_HOST, ns, hf), tal = t(al, GD__NN_HOST, ne + nd, heads),
                  tout = t(out, GD__NN_HOST, nd, hf);
    T_OK(gd__gat_edge_softmax_at_cpu(&hb, off, &tss, &tsd, 0.2, &tal));
    T_OK(gd__gat_aggregate_at_cpu(&hb, off, &tal, &th, &tout));
    T_OK(gd__gat_edge_keys_cpu(&hb, ids, keys));
    /* An offset that puts a destination's own row past the sources is refused. */
    T_FAILS(gd__gat_edge_softmax_at_cpu(&hb, ns - nd + 1, &tss, &tsd, 0.2, &tal),
            GD_ERR_INVALID_ARG, "own rows");

    int32_t *dip = dev_copy(hip, (size_t)(nd + 1) * 4), *dix = dev_copy(hix, (size_t)ne * 4);
    float *dss = dev_copy(ss, (size_t)(ns * heads) * 4),
          *dsd = dev_copy(sd, (size_t)(nd * heads) * 4), *dh = dev_copy(h, (size_t)(ns * hf) * 4),
          *dal = NULL, *dout = NULL;
    int64_t *dids = dev_copy(ids, (size_t)ns * 8), *dkeys = NULL;
    CU(cudaMalloc((void **)&dal, nal * 4));
    CU(cudaMalloc((void **)&dout, nout * 4));
    CU(cudaMalloc((void **)&dkeys, (size_t)(ne + nd) * 8));
    CU(cudaMemset(dal, 0xff, nal * 4)); /* NaN: every element must be written */
    CU(cudaMemset(dout, 0xff, nout * 4));
    const gd_block db = {nd, ns, ne, dip, dix};
    gd__nn_tensor gss = t(dss, ctx->device, ns, heads), gsd = t(dsd, ctx->device, nd, heads),
                  gh = t(dh, ctx->device, ns, hf), gtal = t(dal, ctx->device, ne + nd, heads),
                  gtout = t(dout, ctx->device, nd, hf);
    CU(cudaDeviceSynchronize()); /* the poison and inputs (legacy stream) before ctx's ops */
    T_OK(gd__gat_edge_softmax_at_cuda(ctx, &db, off, &gss, &gsd, 0.2, &gtal));
    T_OK(gd__gat_aggregate_at_cuda(ctx, &db, off, &gtal, &gh, &gtout));
    T_OK(gd__gat_edge_keys_cuda(ctx, &db, dids, dkeys));
    T_OK(ctx->be->synchronize(ctx));
    CU(cudaMemcpy(gal, dal, nal * 4, cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(gout, dout, nout * 4, cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(gkeys, dkeys, (size_t)(ne + nd) * 8, cudaMemcpyDeviceToHost));
    compare("alpha at an offset", al, gal, (int64_t)nal, 1e-5);
    compare("aggregate at an offset", out, gout, (int64_t)nout, 1e-5);
    T_ASSERT(memcmp(keys, gkeys, (size_t)(ne + nd) * 8) == 0);
    void *const dev[] = {dip, dix, dss, dsd, dh, dal, dout, dids, dkeys};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) CU(cudaFree(dev[i]));
    void *const host[] = {hip, hix, ss, sd, h, ids, al, out, gal, gout, keys, gkeys};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) free(host[i]);
}

/* The bipartite forms: GPU against CPU, forward and backward, and the keys. */
static void bipartite(const gd__nn_ctx *ctx, uint64_t *rng, int64_t heads, int64_t feats) {
    const int64_t ns = 1 + (int64_t)(t_rand(rng) % 1500), nd = 1 + (int64_t)(t_rand(rng) % 600);
    const int64_t hf = heads * feats;
    int32_t *hip = malloc((size_t)(nd + 1) * 4), *hix = malloc((size_t)(nd * 12 + 1) * 4);
    T_ASSERT(hip && hix);
    int64_t ne = 0;
    hip[0] = 0;
    for (int64_t d = 0; d < nd; d++) {
        const int64_t k = t_rand(rng) % 4 == 0 ? 0 : (int64_t)(t_rand(rng) % 12);
        for (int64_t i = 0; i < k; i++) hix[ne++] = (int32_t)(t_rand(rng) % (uint64_t)ns);
        hip[d + 1] = (int32_t)ne;
    }
    /* Host arrays: inputs (ss sd h prior dout ids), CPU outputs, and the GPU's copies back. */
    enum { SS, SD, HH, OUT, DOUT, AL, DAL, DH, DSS, DSD, N };
    const int64_t n[N] = {ns * heads, nd * heads, ns * hf, nd * hf,    nd * hf,
                          ne * heads, ne * heads, ns * hf, ns * heads, nd * heads};
    float *c[N], *g[N], *d[N];
    for (int i = 0; i < N; i++) {
        c[i] = calloc((size_t)(n[i] ? n[i] : 1), 4);
        g[i] = calloc((size_t)(n[i] ? n[i] : 1), 4);
        T_ASSERT(c[i] && g[i]);
        if (i <= DOUT)
            for (int64_t j = 0; j < n[i]; j++) c[i][j] = uni(rng);
        d[i] = dev_copy(c[i], (size_t)n[i] * 4);
    }
    /* NaN in what must be written: the weights and their gradients. */
    /* (With no edges, dev_copy's buffers are 1 byte: nothing to poison; s9 caught the 4-byte
       memset of one.) */
    if (ne) {
        CU(cudaMemset(d[AL], 0xff, (size_t)n[AL] * 4));
        CU(cudaMemset(d[DAL], 0xff, (size_t)n[DAL] * 4));
    }
    int64_t *sid = malloc((size_t)ns * 8), *did = malloc((size_t)nd * 8);
    int64_t *keys = malloc((size_t)(ne + 1) * 8), *gkeys = malloc((size_t)(ne + 1) * 8);
    T_ASSERT(sid && did && keys && gkeys);
    for (int64_t i = 0; i < ns; i++) sid[i] = (int64_t)(t_rand(rng) >> 2);
    for (int64_t i = 0; i < nd; i++) did[i] = (int64_t)(t_rand(rng) >> 2);
    int32_t *dip = dev_copy(hip, (size_t)(nd + 1) * 4), *dix = dev_copy(hix, (size_t)ne * 4);
    int64_t *dsid = dev_copy(sid, (size_t)ns * 8), *ddid = dev_copy(did, (size_t)nd * 8);
    int64_t *dkeys = dev_copy(keys, (size_t)ne * 8);
    const gd_block hb = {nd, ns, ne, hip, hix}, db = {nd, ns, ne, dip, dix};
    CU(cudaDeviceSynchronize()); /* the poison and inputs (legacy stream) before ctx's ops */
    for (int side = 0; side < 2; side++) {
        const int dev = side ? ctx->device : GD__NN_HOST;
        float **p = side ? d : c;
        gd__nn_tensor ss = t(p[SS], dev, ns, heads), sd = t(p[SD], dev, nd, heads),
                      h = t(p[HH], dev, ns, hf), out = t(p[OUT], dev, nd, hf),
                      dout = t(p[DOUT], dev, nd, hf), al = t(p[AL], dev, ne, heads),
                      dal = t(p[DAL], dev, ne, heads), dh = t(p[DH], dev, ns, hf),
                      dss = t(p[DSS], dev, ns, heads), dsd = t(p[DSD], dev, nd, heads);
        if (!side) {
            T_OK(gd__gat_bip_softmax_cpu(&hb, &ss, &sd, 0.2, &al));
            T_OK(gd__gat_bip_aggregate_cpu(&hb, &al, &h, 1, &out));
            T_OK(gd__gat_bip_aggregate_backward_cpu(&hb, &al, &h, &dout, &dal, &dh));
            T_OK(gd__gat_bip_softmax_backward_cpu(&hb, &ss, &sd, 0.2, &al, &dal, &dss, &dsd));
            T_OK(gd__gat_bip_edge_keys_cpu(&hb, sid, did, keys));
        } else {
            T_OK(gd__gat_bip_softmax_cuda(ctx, &db, &ss, &sd, 0.2, &al));
            T_OK(gd__gat_bip_aggregate_cuda(ctx, &db, &al, &h, 1, &out));
            T_OK(gd__gat_bip_aggregate_backward_cuda(ctx, &db, &al, &h, &dout, &dal, &dh));
            T_OK(gd__gat_bip_softmax_backward_cuda(ctx, &db, &ss, &sd, 0.2, &al, &dal, &dss, &dsd));
            T_OK(gd__gat_bip_edge_keys_cuda(ctx, &db, dsid, ddid, dkeys));
        }
    }
    T_OK(ctx->be->synchronize(ctx));
    for (int i = 0; i < N; i++)
        if (n[i]) CU(cudaMemcpy(g[i], d[i], (size_t)n[i] * 4, cudaMemcpyDeviceToHost));
    if (ne) CU(cudaMemcpy(gkeys, dkeys, (size_t)ne * 8, cudaMemcpyDeviceToHost));
    static const char *const names[N] = {"ssrc",
                                         "sdst",
                                         "h",
                                         "bipartite out",
                                         "dout",
                                         "bipartite alpha",
                                         "bipartite dalpha",
                                         "bipartite dh",
                                         "bipartite dssrc",
                                         "bipartite dsdst"};
    for (int i = OUT; i < N; i++) compare(names[i], c[i], g[i], n[i], i <= AL ? 1e-5 : 1e-4);
    T_ASSERT(ne == 0 || memcmp(keys, gkeys, (size_t)ne * 8) == 0);
    for (int i = 0; i < N; i++) {
        free(c[i]);
        free(g[i]);
        CU(cudaFree(d[i]));
    }
    void *const dev[] = {dip, dix, dsid, ddid, dkeys};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) CU(cudaFree(dev[i]));
    void *const host[] = {hip, hix, sid, did, keys, gkeys};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) free(host[i]);
}

int main(void) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        fprintf(stderr, "no GPU: skipped\n");
        return GD_TEST_SKIP;
    }
    uint64_t rng = t_seed();
    gd__nn_ctx ctx;
    T_OK(gd__nn_cuda_ctx_create(0, &ctx));
    for (int round = 0; round < 12; round++) one(&ctx, &rng, 1 + round % 4, round % 2 ? 40 : 16);
    for (int round = 0; round < 8; round++)
        offsets_and_keys(&ctx, &rng, 1 + round % 3, round % 2 ? 40 : 8);
    for (int round = 0; round < 8; round++)
        bipartite(&ctx, &rng, 1 + round % 4, round % 2 ? 40 : 8);
    gd__nn_cuda_ctx_destroy(&ctx);
    t_check_no_leaks();
    fprintf(stderr, "gat ops on the GPU: ok\n");
    return 0;
}
#else
int main(void) {
    fprintf(stderr, "built without CUDA: skipped\n");
    return GD_TEST_SKIP;
}
#endif
