/*
 * The placement of the hot rows over the GPUs of one host (placement.h). Every placement is first
 * a holder mask per candidate (one bit per GPU); one pass then turns the masks into the GPUs'
 * row lists, the candidates' homes and the model's expected cost, so the three placements differ
 * only in how they set the bits.
 *
 * The cost model. Each GPU makes the same share 1/G of the accesses, and an access reads
 * candidate r with probability p(r) whichever GPU makes it. An access of GPU g costs C_local when
 * g caches the row, C_peer when another GPU does, C_host otherwise (also for every row outside
 * the candidates). The expected cost of one access is therefore
 *     E = (1/G) * sum_g sum_r p(r) * cost(g, r) + (1 - sum_r p(r)) * C_host,
 * which depends only on each row's number of copies c(r): a row with c >= 1 copies contributes
 * p(r) * (c * C_local + (G - c) * C_peer) / G, a row with none p(r) * C_host. Sized candidates
 * (neighbour lists) follow the same model, p(r) then being the list's share of the read cost;
 * only the capacities count their sizes.
 */
#include "train/placement.h"

#include <math.h>
#include <string.h>

const char *const gd__placement_names[3] = {"replicate", "partition", "auto"};

/*
 * alpha, from the cost model. auto swaps one replica for one new row on the same GPU g, so every
 * capacity stays as it was:
 * - dropping g's replica of row d (another GPU still holds d) turns g's accesses to d from local
 *   into peer reads: E rises by p(d) * (C_peer - C_local) / G;
 * - caching the new row n (no GPU held it) on g turns g's accesses to n from host into local
 *   reads and the other G - 1 GPUs' from host into peer reads: E falls by
 *   p(n) * ((C_host - C_local) + (G - 1) * (C_host - C_peer)) / G.
 * The swap lowers E exactly when p(n) * (G * (C_host - C_peer) + (C_peer - C_local)) >
 * p(d) * (C_peer - C_local), that is when p(n) > alpha * p(d) with
 *     alpha = (C_peer - C_local) / (G * (C_host - C_peer) + (C_peer - C_local)),
 * which lies in [0, 1]. Free peers (C_peer = C_local) give alpha = 0: any row read at all is
 * worth a slot, and auto becomes partition. Peers as slow as the host (C_peer = C_host) give
 * alpha = 1: a colder row never beats a replica, and auto stays replicate. When all three costs
 * are equal no placement is better than another; alpha = 1 keeps the replicas, which need no
 * peer traffic.
 */
double gd__placement_alpha(const gd__placement_costs *c, int num_gpus) {
    double extra = c->peer - c->local;
    double first = (double)num_gpus * (c->host - c->peer) + extra;
    return first > 0 ? extra / first : 1.0;
}

gd_status gd__placement_probs(const double *score, int64_t n, double total, double *prob) {
    gd_status st = GD_OK;
    double sum = 0;
    for (int64_t i = 0; i < n; i++) {
        GD_REQUIRE(isfinite(score[i]) && score[i] >= 0, GD_ERR_INVALID_ARG,
                   "placement: candidate %lld has score %g; scores must be finite and >= 0",
                   (long long)i, score[i]);
        GD_REQUIRE(i == 0 || score[i] <= score[i - 1], GD_ERR_INVALID_ARG,
                   "placement: candidate %lld has score %g above candidate %lld's %g; candidates "
                   "must come hottest first",
                   (long long)i, score[i], (long long)(i - 1), score[i - 1]);
        sum += score[i];
    }
    if (total <= 0) total = sum;
    GD_REQUIRE(isfinite(total) && total >= sum * (1 - 1e-12), GD_ERR_INVALID_ARG,
               "placement: total score %g is below the candidates' sum %g; pass the score of every "
               "row, or 0 to take the candidates' sum",
               total, sum);
    /* Dividing by one positive number keeps the order, so the probabilities stay hottest first. */
    for (int64_t i = 0; i < n; i++) prob[i] = total > 0 ? score[i] / total : 0.0;
fail:
    return st;
}

static int64_t capacity_of(const gd__placement_input *in, int g) {
    return in->capacity ? in->capacity[g] : in->rows_per_gpu;
}

static int64_t size_of(const gd__placement_input *in, int64_t i) {
    return in->size ? in->size[i] : 1;
}

static gd_status check_input(const gd__placement_input *in, gd__placement_kind kind) {
    gd_status st = GD_OK;
    const gd__placement_costs *c = &in->costs;
    GD_REQUIRE(kind >= GD__PLACEMENT_REPLICATE && kind <= GD__PLACEMENT_AUTO, GD_ERR_INVALID_ARG,
               "placement: kind %d is none of replicate, partition, auto", (int)kind);
    GD_REQUIRE(in->num_gpus >= 1 && in->num_gpus <= GD__PLACEMENT_MAX_GPUS, GD_ERR_INVALID_ARG,
               "placement: %d GPUs; the placement spreads rows over 1 to %d GPUs (one NVLink "
               "clique)",
               in->num_gpus, GD__PLACEMENT_MAX_GPUS);
    GD_REQUIRE(in->num_candidates >= 0 && (in->num_candidates == 0 || in->prob), GD_ERR_INVALID_ARG,
               "placement: %lld candidates%s", (long long)in->num_candidates,
               in->num_candidates < 0 ? "; the count must be >= 0" : " without probabilities");
    for (int g = 0; g < in->num_gpus; g++)
        GD_REQUIRE(capacity_of(in, g) >= 0, GD_ERR_INVALID_ARG,
                   "placement: GPU %d has a cache capacity of %lld rows; it must be >= 0", g,
                   (long long)capacity_of(in, g));
    GD_REQUIRE(isfinite(c->host) && c->local >= 0 && c->local <= c->peer && c->peer <= c->host,
               GD_ERR_INVALID_ARG,
               "placement: read costs local %g, peer %g, host %g are not 0 <= local <= peer <= "
               "host; a machine whose peers are no faster than its host link passes peer = host",
               c->local, c->peer, c->host);
    double sum = 0;
    for (int64_t i = 0; i < in->num_candidates; i++) {
        double p = in->prob[i];
        GD_REQUIRE(isfinite(p) && p >= 0, GD_ERR_INVALID_ARG,
                   "placement: candidate %lld has probability %g; it must be finite and >= 0",
                   (long long)i, p);
        GD_REQUIRE(in->size || i == 0 || p <= in->prob[i - 1], GD_ERR_INVALID_ARG,
                   "placement: candidate %lld has probability %g above candidate %lld's %g; "
                   "candidates must come hottest first",
                   (long long)i, p, (long long)(i - 1), in->prob[i - 1]);
        GD_REQUIRE(!in->size || in->size[i] >= 1, GD_ERR_INVALID_ARG,
                   "placement: candidate %lld has size %lld; a sized candidate takes at least 1 "
                   "unit (leave empty lists out)",
                   (long long)i, (long long)(in->size ? in->size[i] : 1));
        sum += p;
    }
    GD_REQUIRE(sum <= 1 + 1e-9, GD_ERR_INVALID_ARG,
               "placement: the candidates' probabilities sum to %.9g, above 1; normalise the "
               "scores by the total of all rows (gd__placement_probs)",
               sum);
fail:
    return st;
}

/* The GPU in `allowed` (a holder mask) with the least accumulated probability; ties: the lowest. */
static int least_loaded(const double *mass, uint32_t allowed) {
    int best = -1;
    for (uint32_t m = allowed; m; m &= m - 1) {
        int g = __builtin_ctz(m);
        if (best < 0 || mass[g] < mass[best]) best = g;
    }
    return best;
}

/*
 * The replicate rule over the candidates [0, r), then the partition rule over [r, N): r = N is
 * replicate, r = 0 partition, and in between the shape in which auto ends. The replicate rule:
 * each GPU takes the candidates in order while they fit its capacity (rows: the hottest
 * capacity[g]; a sized one that does not fit is passed over, so smaller ones behind it still fill
 * the space, as the tier store's slot rule does). The partition rule: each later candidate goes
 * once to the GPU with room for it whose rows held by it alone add up to the least probability,
 * so that every GPU serves about the same share of the peer reads; one that fits no GPU is
 * passed over. holders starts all zero.
 */
static void layout(const gd__placement_input *in, int64_t r, uint32_t *holders) {
    double mass[GD__PLACEMENT_MAX_GPUS] = {0};
    int64_t room[GD__PLACEMENT_MAX_GPUS];
    uint32_t open = 0;
    for (int g = 0; g < in->num_gpus; g++) {
        room[g] = capacity_of(in, g);
        for (int64_t i = 0; i < r && room[g] > 0; i++) {
            if (size_of(in, i) > room[g]) continue;
            holders[i] |= 1u << g;
            room[g] -= size_of(in, i);
        }
        if (room[g] > 0) open |= 1u << g;
    }
    for (int64_t i = 0; i < r; i++)
        if (__builtin_popcount(holders[i]) == 1) mass[__builtin_ctz(holders[i])] += in->prob[i];
    for (int64_t i = r; i < in->num_candidates && open; i++) {
        const int64_t u = size_of(in, i);
        uint32_t fits = 0;
        for (uint32_t m = open; m; m &= m - 1)
            if (room[__builtin_ctz(m)] >= u) fits |= m & -m;
        if (!fits) continue;
        const int g = least_loaded(mass, fits);
        holders[i] = 1u << g;
        mass[g] += in->prob[i];
        room[g] -= u;
        if (room[g] == 0) open &= ~(1u << g);
    }
}

/*
 * auto: Algorithm 1 of the placement paper. Start from replicate; `next` walks the uncached
 * candidates hottest first and `drop` the replicated ones coldest first (a row keeps its last
 * copy). While p(next) > alpha * p(drop), one GPU holding `drop` gives that replica up for
 * `next`: the holder with the least accumulated probability, where a GPU's accumulated
 * probability is that of the rows only it holds (the peer reads it serves), so the partitioned
 * part stays balanced. When `drop` has two holders left, the one that keeps it alone gains
 * p(drop), at least p(next), so the lighter holder keeps it and the other takes `next`. Each step
 * moves one of the two pointers, so the walk is O(N) steps of O(G).
 *
 * Why the first refused swap ends it: both pointers only move towards colder rows on the `next`
 * side and hotter rows on the `drop` side, so p(next) falls and p(drop) rises. With equal
 * capacities the result is the model's optimum: a first copy of r saves p(r) * A / G and each
 * further copy p(r) * B / G (A = G * (C_host - C_peer) + B >= B = C_peer - C_local), any copy
 * counts of at most G each that fill the slots can be laid out on the GPUs, and the walk ends
 * holding the largest savings. With any capacities it is never worse than replicate (every swap
 * lowers E) nor than partition (each replica kept saves at least p(drop) * B / G, at least what
 * the first copy of a row that partition holds and auto does not would save).
 */
static void place_auto(const gd__placement_input *in, double alpha, uint32_t *holders) {
    const double *p = in->prob;
    double mass[GD__PLACEMENT_MAX_GPUS] = {0};
    int64_t top = 0;
    layout(in, in->num_candidates, holders);
    for (int g = 0; g < in->num_gpus; g++)
        if (capacity_of(in, g) > top) top = capacity_of(in, g);
    if (top > in->num_candidates) top = in->num_candidates;
    for (int64_t i = 0; i < top; i++)
        if (__builtin_popcount(holders[i]) == 1) mass[__builtin_ctz(holders[i])] += p[i];
    int64_t drop = top - 1;
    for (int64_t next = top; next < in->num_candidates; next++) {
        while (drop >= 0 && __builtin_popcount(holders[drop]) < 2) drop--;
        if (drop < 0 || !(p[next] > alpha * p[drop])) break;
        int g = least_loaded(mass, holders[drop]);
        /* The last copy stays with the lighter of two holders: p(drop) >= p(next). */
        if (__builtin_popcount(holders[drop]) == 2) g = __builtin_ctz(holders[drop] & ~(1u << g));
        holders[drop] &= ~(1u << g);
        if (__builtin_popcount(holders[drop]) == 1) mass[__builtin_ctz(holders[drop])] += p[drop];
        holders[next] = 1u << g;
        mass[g] += p[next];
    }
}

/* The model's expected cost of one access under the holder masks (see the top of the file). */
static double expected_cost(const gd__placement_input *in, const uint32_t *holders) {
    const gd__placement_costs *c = &in->costs;
    const int G = in->num_gpus;
    double cost = 0, cached = 0;
    for (int64_t i = 0; i < in->num_candidates; i++) {
        const int k = __builtin_popcount(holders[i]);
        if (k == 0) continue;
        cached += in->prob[i];
        cost += in->prob[i] * (k * c->local + (G - k) * c->peer);
    }
    return cost / G + (1 - cached) * c->host;
}

/* How many GPUs hold the first `units` units of the candidates whole (capacity >= units). */
static int gpus_holding(const gd__placement_input *in, int64_t units) {
    int k = 0;
    for (int g = 0; g < in->num_gpus; g++) k += capacity_of(in, g) >= units;
    return k;
}

/*
 * The replicated prefix r of auto for sized candidates, by the model with the sizes taken as
 * divisible: GPU g holds min(S(r), K_g) units of the prefix [0, r) (S: the prefix's units, K_g:
 * g's capacity), so candidate i < r has c_i = #{g : K_g >= S(i + 1)} copies and saves
 * p(i) * (A + (c_i - 1) * B) / G against the host (A and B as for place_auto); the units left
 * over, T - sum_g min(S(r), K_g) of the total capacity T, hold the next candidates [r, m) once,
 * each saving p(i) * A / G. r runs from the longest prefix that one GPU holds down to 0; since
 * S(r) plus the units left over never shrinks as r falls, m only grows, and one pass of O(N * G)
 * rates every r. The best r keeps Algorithm 1's stopping rule per unit: the last candidate taken
 * once is worth about alpha times the coldest replica per unit. Ties keep the longer prefix.
 */
static int64_t model_prefix(const gd__placement_input *in, double a, double b) {
    const int64_t n = in->num_candidates;
    int64_t most = 0, total = 0, r = 0, sr = 0;
    double q = 0; /* the prefix's savings (times G) */
    for (int g = 0; g < in->num_gpus; g++) {
        most = capacity_of(in, g) > most ? capacity_of(in, g) : most;
        total += capacity_of(in, g);
    }
    for (; r < n && sr + size_of(in, r) <= most; r++) {
        sr += size_of(in, r);
        q += in->prob[r] * (a + (gpus_holding(in, sr) - 1) * b);
    }
    int64_t m = r, sm = sr, best_r = r;
    double seg = 0, best = -1; /* seg: the probability of [r, m) */
    for (;; r--) {
        int64_t used = 0;
        for (int g = 0; g < in->num_gpus; g++)
            used += sr < capacity_of(in, g) ? sr : capacity_of(in, g);
        for (; m < n && sm - sr + size_of(in, m) <= total - used; m++) {
            seg += in->prob[m];
            sm += size_of(in, m);
        }
        if (q + a * seg > best) {
            best = q + a * seg;
            best_r = r;
        }
        if (r == 0) break;
        /* Candidate r - 1 leaves the prefix for the once-held part. */
        q -= in->prob[r - 1] * (a + (gpus_holding(in, sr) - 1) * b);
        sr -= size_of(in, r - 1);
        seg += in->prob[r - 1];
    }
    return best_r;
}

/*
 * auto for sized candidates (neighbour lists). place_auto swaps one replica for one new row of
 * the same size; lists differ in size, so here the state that walk ends in, a replicated prefix
 * and then each candidate once, is searched for directly: the prefix r from model_prefix, laid
 * out whole by layout(r). Whole lists fill the caches less tightly than the divisible model
 * assumes, so the result is whichever of layout(r), replicate and partition has the least
 * expected cost (ties keep layout(r)): never worse than either. scratch: N masks.
 */
static void place_auto_sized(const gd__placement_input *in, uint32_t *holders, uint32_t *scratch) {
    const gd__placement_costs *c = &in->costs;
    const double b = c->peer - c->local, a = in->num_gpus * (c->host - c->peer) + b;
    const int64_t n = in->num_candidates, r = model_prefix(in, a, b), other[2] = {n, 0};
    layout(in, r, holders);
    double best = expected_cost(in, holders);
    for (int k = 0; k < 2; k++) {
        if (other[k] == r) continue;
        memset(scratch, 0, (size_t)n * sizeof(uint32_t));
        layout(in, other[k], scratch);
        const double cost = expected_cost(in, scratch);
        if (cost < best) {
            best = cost;
            memcpy(holders, scratch, (size_t)n * sizeof(uint32_t));
        }
    }
}

/* The GPUs' row lists, the homes, the hit probabilities and the expected cost, from the masks. */
static gd_status finish(const gd__placement_input *in, gd__placement *out) {
    gd_status st = GD_OK;
    const int G = in->num_gpus;
    const int64_t n = in->num_candidates;
    int64_t count[GD__PLACEMENT_MAX_GPUS] = {0}, cursor[GD__PLACEMENT_MAX_GPUS];
    double cached = 0;
    for (int64_t i = 0; i < n; i++) {
        uint32_t m = out->holders[i];
        out->home[i] = m == 0          ? GD__PLACEMENT_HOST
                       : (m & (m - 1)) ? GD__PLACEMENT_SEVERAL
                                       : __builtin_ctz(m);
        if (m) cached += in->prob[i];
        for (; m; m &= m - 1) {
            count[__builtin_ctz(m)]++;
            out->used[__builtin_ctz(m)] += size_of(in, i);
            out->local_prob[__builtin_ctz(m)] += in->prob[i];
        }
    }
    out->offset[0] = 0;
    for (int g = 0; g < G; g++) {
        cursor[g] = out->offset[g];
        out->offset[g + 1] = out->offset[g] + count[g];
    }
    GD_ALLOC(out->rows, (size_t)out->offset[G] * sizeof(int64_t), "the placement's row lists");
    for (int64_t i = 0; i < n; i++)
        for (uint32_t m = out->holders[i]; m; m &= m - 1)
            out->rows[cursor[__builtin_ctz(m)]++] = in->rows ? in->rows[i] : i;
    /* Every access that no cache serves, candidate or not, reads the host. */
    double cost = 0;
    for (int g = 0; g < G; g++) {
        out->peer_prob[g] = cached - out->local_prob[g];
        cost += out->local_prob[g] * in->costs.local + out->peer_prob[g] * in->costs.peer;
    }
    out->cost = cost / G + (1 - cached) * in->costs.host;
fail:
    return st;
}

gd_status gd__placement_compute(const gd__placement_input *in, gd__placement_kind kind,
                                gd__placement *out) {
    gd_status st = GD_OK;
    uint32_t *scratch = NULL;
    memset(out, 0, sizeof *out);
    GD_CHECK(check_input(in, kind));
    out->kind = kind;
    out->num_gpus = in->num_gpus;
    out->num_candidates = in->num_candidates;
    out->alpha = gd__placement_alpha(&in->costs, in->num_gpus);
    size_t n = (size_t)in->num_candidates;
    GD_ALLOC(out->holders, n * sizeof(uint32_t), "the placement's holder masks");
    GD_ALLOC(out->home, n * sizeof(int32_t), "the placement's homes");
    memset(out->holders, 0, n * sizeof(uint32_t));
    if (kind == GD__PLACEMENT_REPLICATE) {
        layout(in, in->num_candidates, out->holders);
    } else if (kind == GD__PLACEMENT_PARTITION) {
        layout(in, 0, out->holders);
    } else if (in->size) {
        GD_ALLOC(scratch, n * sizeof(uint32_t), "the placement's trial masks");
        place_auto_sized(in, out->holders, scratch);
    } else {
        place_auto(in, out->alpha, out->holders);
    }
    GD_CHECK(finish(in, out));
fail:
    gd_free(scratch);
    return st;
}

void gd__placement_free(gd__placement *p) {
    if (!p) return;
    gd_free(p->rows);
    gd_free(p->holders);
    gd_free(p->home);
    p->rows = NULL;
    p->holders = NULL;
    p->home = NULL;
}
