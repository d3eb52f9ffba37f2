/*
 * The multi-GPU hot-row placement (src/train/placement.c), on fresh random inputs each run:
 * Zipf-like, uniform and stepped (tied) access probabilities, 1 to 16 GPUs, equal and unequal
 * capacities, random read costs with local <= peer <= host. Every placement is checked for its
 * invariants (capacities, no row twice on a GPU, homes and lists agree, the cost recomputed from
 * the copy counts), auto against replicate, partition and the cost model's optimum, and the
 * corner cases (one GPU, no capacity, fewer candidates than a cache holds, free or slow peers).
 * Sized candidates (neighbour lists, capacities in bytes): random sizes, ranked exactly, by a
 * rounded ratio or not at all; every GPU's sizes fit its capacity and match `used`, replicate is
 * the first-fit rule, partition holds each candidate at most once and leaves out none that would
 * still fit a GPU, auto is never above replicate or partition (and is the optimum on two GPUs of
 * equal capacities with equal sizes), and sizes of one unit place as rows do.
 */
#include "test.h"
#include "train/placement.h"

#define MAX_N 3000

static double urand(uint64_t *s) {
    return (double)(t_rand(s) >> 11) * 0x1.0p-53;
}

/* Probabilities hottest first, of one of three shapes, summing to a random mass <= 1. */
static void random_probs(uint64_t *s, int64_t n, int shape, double *p) {
    double exponent = 0.3 + 1.5 * urand(s), sum = 0;
    int64_t step = 1 + (int64_t)(t_rand(s) % 8), zero_from = n;
    if (t_rand(s) % 4 == 0) zero_from = (int64_t)(t_rand(s) % (uint64_t)(n + 1));
    for (int64_t i = 0; i < n; i++) {
        if (shape == 0)
            p[i] = pow((double)(i + 1), -exponent);
        else if (shape == 1)
            p[i] = 1.0;
        else
            p[i] = 1.0 / (double)(1 + i / step); /* groups of `step` tied rows */
        if (i >= zero_from) p[i] = 0;
        sum += p[i];
    }
    double mass = 0.5 + 0.5 * urand(s);
    for (int64_t i = 0; i < n; i++) p[i] = sum > 0 ? p[i] * (mass / sum) : 0;
}

static gd__placement_costs random_costs(uint64_t *s) {
    gd__placement_costs c;
    c.local = urand(s);
    c.peer = c.local + (t_rand(s) % 5 == 0 ? 0 : 5 * urand(s));
    c.host = c.peer + (t_rand(s) % 5 == 0 ? 0 : 20 * urand(s));
    return c;
}

/* Distinct row ids, so that a row listed twice or a made-up row shows: candidate i is row id[i]. */
static int64_t row_ids[MAX_N], cand_of[2 * MAX_N];
static void random_rows(uint64_t *s, int64_t n) {
    for (int64_t i = 0; i < 2 * n; i++) cand_of[i] = i;
    for (int64_t i = 2 * n - 1; i > 0; i--) {
        int64_t j = (int64_t)(t_rand(s) % (uint64_t)(i + 1)), t = cand_of[i];
        cand_of[i] = cand_of[j];
        cand_of[j] = t;
    }
    for (int64_t i = 0; i < n; i++) row_ids[i] = cand_of[i];
    for (int64_t i = 0; i < 2 * n; i++) cand_of[i] = -1;
    for (int64_t i = 0; i < n; i++) cand_of[row_ids[i]] = i;
}

static int64_t cap_of(const gd__placement_input *in, int g) {
    return in->capacity ? in->capacity[g] : in->rows_per_gpu;
}

static gd__placement place(const gd__placement_input *in, gd__placement_kind kind) {
    gd__placement pl;
    T_OK(gd__placement_compute(in, kind, &pl));
    T_EQ_INT(pl.kind, kind);
    return pl;
}

/* Capacities, lists against masks and homes, the expected cost from the copy counts. */
static void check_invariants(const gd__placement_input *in, const gd__placement *pl) {
    static int64_t seen_on[MAX_N];
    const int64_t n = in->num_candidates;
    const int G = in->num_gpus;
    for (int64_t i = 0; i < n; i++) seen_on[i] = 0;
    for (int g = 0; g < G; g++) {
        int64_t count = pl->offset[g + 1] - pl->offset[g];
        T_ASSERT(count >= 0 && count <= cap_of(in, g));
        for (int64_t k = pl->offset[g]; k < pl->offset[g + 1]; k++) {
            int64_t row = pl->rows[k];
            T_ASSERT(row >= 0 && row < 2 * n);
            int64_t i = cand_of[row];
            T_ASSERT(i >= 0);                 /* among the candidates */
            T_ASSERT(!(seen_on[i] >> g & 1)); /* not twice on one GPU */
            seen_on[i] |= INT64_C(1) << g;
        }
    }
    double cost = 0, rest = 1;
    for (int64_t i = 0; i < n; i++) {
        uint32_t m = pl->holders[i];
        T_EQ_INT(m, seen_on[i]);
        int c = __builtin_popcount(m);
        T_EQ_INT(pl->home[i], c == 0   ? GD__PLACEMENT_HOST
                              : c == 1 ? __builtin_ctz(m)
                                       : GD__PLACEMENT_SEVERAL);
        if (c > 0) {
            cost += in->prob[i] * (c * in->costs.local + (G - c) * in->costs.peer) / G;
            rest -= in->prob[i];
        }
    }
    cost += rest * in->costs.host;
    T_NEAR(pl->cost, cost, 1e-9 * (1 + in->costs.host));
    for (int g = 0; g < G; g++) T_ASSERT(pl->local_prob[g] >= 0 && pl->peer_prob[g] >= -1e-12);
}

static void check_replicate(const gd__placement_input *in, const gd__placement *pl) {
    for (int64_t i = 0; i < in->num_candidates; i++)
        for (int g = 0; g < in->num_gpus; g++) T_EQ_INT(pl->holders[i] >> g & 1, i < cap_of(in, g));
}

static void check_partition(const gd__placement_input *in, const gd__placement *pl) {
    int64_t slots = 0;
    for (int g = 0; g < in->num_gpus; g++) slots += cap_of(in, g);
    for (int64_t i = 0; i < in->num_candidates; i++)
        T_EQ_INT(__builtin_popcount(pl->holders[i]), i < slots ? 1 : 0);
}

static int cmp_desc(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

/*
 * The model's optimum for equal capacities K, computed another way: a first copy of row r saves
 * p(r) * A / G, each further copy p(r) * B / G, and the best placement takes the G * K largest
 * savings (A >= B, so a row's first copy is never passed over for another's extra one at a loss).
 */
static double optimum_cost(const gd__placement_input *in) {
    static double saving[MAX_N * GD__PLACEMENT_MAX_GPUS];
    const int G = in->num_gpus;
    const gd__placement_costs *c = &in->costs;
    double a = G * (c->host - c->peer) + (c->peer - c->local), b = c->peer - c->local;
    int64_t m = 0;
    for (int64_t i = 0; i < in->num_candidates; i++) {
        saving[m++] = in->prob[i] * a;
        for (int g = 1; g < G; g++) saving[m++] = in->prob[i] * b;
    }
    qsort(saving, (size_t)m, sizeof(double), cmp_desc);
    int64_t take = in->rows_per_gpu * G < m ? in->rows_per_gpu * G : m;
    double saved = 0;
    for (int64_t k = 0; k < take; k++) saved += saving[k];
    return c->host - saved / G;
}

static void same_masks(const gd__placement *x, const gd__placement *y) {
    T_EQ_INT(x->num_candidates, y->num_candidates);
    for (int64_t i = 0; i < x->num_candidates; i++) T_EQ_U64(x->holders[i], y->holders[i]);
}

/* Random candidates (in the static prob and row_ids) on 1 to 16 GPUs; the caller sets the rest. */
static gd__placement_input random_input(uint64_t *s) {
    static double prob[MAX_N];
    int64_t n = 1 + (int64_t)(t_rand(s) % MAX_N);
    random_probs(s, n, (int)(t_rand(s) % 3), prob);
    random_rows(s, n);
    gd__placement_input in = {.num_candidates = n, .prob = prob, .rows = row_ids};
    in.num_gpus = 1 + (int)(t_rand(s) % GD__PLACEMENT_MAX_GPUS);
    return in;
}

/*
 * Random budgets for in (of `total` units of candidates): a per-GPU capacity up to 1.25 x total
 * (a third of the time divided by the GPUs), unequal capacities below it in caps when asked,
 * and random costs.
 */
static void random_budgets(uint64_t *s, gd__placement_input *in, int64_t total, int unequal,
                           int64_t *caps) {
    in->rows_per_gpu = (int64_t)(t_rand(s) % (uint64_t)(total + total / 4 + 1));
    if (t_rand(s) % 3 == 0) in->rows_per_gpu /= in->num_gpus;
    if (unequal) {
        for (int g = 0; g < in->num_gpus; g++)
            caps[g] = (int64_t)(t_rand(s) % (uint64_t)(in->rows_per_gpu + 1));
        in->capacity = caps;
    }
    in->costs = random_costs(s);
}

/* One random case: the three placements, their invariants, and auto's cost against the others. */
static void random_case(uint64_t *s, int unequal) {
    static int64_t caps[GD__PLACEMENT_MAX_GPUS];
    gd__placement_input in = random_input(s);
    random_budgets(s, &in, in.num_candidates, unequal, caps);
    gd__placement rep = place(&in, GD__PLACEMENT_REPLICATE);
    gd__placement part = place(&in, GD__PLACEMENT_PARTITION);
    gd__placement aut = place(&in, GD__PLACEMENT_AUTO);
    check_invariants(&in, &rep);
    check_invariants(&in, &part);
    check_invariants(&in, &aut);
    check_replicate(&in, &rep);
    check_partition(&in, &part);
    double best = rep.cost < part.cost ? rep.cost : part.cost;
    if (!(aut.cost <= best + 1e-12))
        T_FAIL_("auto %.17g above min(replicate %.17g, partition %.17g): n %lld, G %d, K %lld, "
                "costs %g %g %g",
                aut.cost, rep.cost, part.cost, (long long)in.num_candidates, in.num_gpus,
                (long long)in.rows_per_gpu, in.costs.local, in.costs.peer, in.costs.host);
    if (!unequal) T_NEAR(aut.cost, optimum_cost(&in), 1e-9 * (1 + in.costs.host));
    gd__placement_free(&rep);
    gd__placement_free(&part);
    gd__placement_free(&aut);
}

/* Peers as slow as the host: auto is replicate. Free peers: auto is partition (same rows). */
static void extreme_costs(uint64_t *s) {
    gd__placement_input in = random_input(s);
    const int64_t n = in.num_candidates;
    const double *prob = in.prob;
    in.rows_per_gpu = (int64_t)(t_rand(s) % (uint64_t)(n + 1)) / in.num_gpus;
    double local = urand(s), far = local + 0.01 + 10 * urand(s);
    in.costs = (gd__placement_costs){local, far, far};
    gd__placement rep = place(&in, GD__PLACEMENT_REPLICATE);
    gd__placement aut = place(&in, GD__PLACEMENT_AUTO);
    T_NEAR(aut.alpha, 1.0, 0);
    same_masks(&aut, &rep);
    T_NEAR(aut.cost, rep.cost, 0);
    gd__placement_free(&rep);
    gd__placement_free(&aut);

    in.costs = (gd__placement_costs){local, local, far};
    gd__placement part = place(&in, GD__PLACEMENT_PARTITION);
    aut = place(&in, GD__PLACEMENT_AUTO);
    T_NEAR(aut.alpha, 0.0, 0);
    T_NEAR(aut.cost, part.cost, 1e-12);
    /* Every row read at all is worth a slot: the same rows are cached, each once where it can. */
    for (int64_t i = 0; i < n; i++)
        if (prob[i] > 0) T_EQ_INT(aut.holders[i] != 0, part.holders[i] != 0);
    gd__placement_free(&part);
    gd__placement_free(&aut);
}

/* One GPU, no capacity, fewer candidates than a cache holds, ties. */
static void edge_cases(uint64_t *s) {
    static double prob[64];
    random_probs(s, 64, 0, prob);
    random_rows(s, 64);
    gd__placement_input in = {.num_candidates = 64, .prob = prob, .rows = row_ids, .num_gpus = 1};
    in.rows_per_gpu = 20;
    in.costs = random_costs(s);
    gd__placement x[3];
    for (int k = 0; k < 3; k++) x[k] = place(&in, (gd__placement_kind)k);
    for (int k = 1; k < 3; k++) {
        same_masks(&x[0], &x[k]);
        T_NEAR(x[0].cost, x[k].cost, 0);
    }
    for (int k = 0; k < 3; k++) gd__placement_free(&x[k]);

    in.num_gpus = 4;
    in.rows_per_gpu = 0;
    for (int k = 0; k < 3; k++) {
        x[k] = place(&in, (gd__placement_kind)k);
        T_EQ_INT(x[k].offset[4], 0);
        T_NEAR(x[k].cost, in.costs.host, 1e-12);
        for (int64_t i = 0; i < 64; i++) T_EQ_INT(x[k].home[i], GD__PLACEMENT_HOST);
        gd__placement_free(&x[k]);
    }

    /* Fewer candidates than one cache: replicate (and auto) hold them all on every GPU. */
    in.rows_per_gpu = 100;
    in.costs = (gd__placement_costs){0, 1, 5};
    for (int k = 0; k < 3; k++) x[k] = place(&in, (gd__placement_kind)k);
    same_masks(&x[0], &x[2]);
    for (int64_t i = 0; i < 64; i++) {
        T_EQ_INT(x[0].home[i], GD__PLACEMENT_SEVERAL);
        T_EQ_INT(x[0].holders[i], 0xf);
        T_ASSERT(x[1].home[i] >= 0);
    }
    for (int k = 0; k < 3; k++) gd__placement_free(&x[k]);

    /* All tied: a colder row never beats a replica unless alpha < 1. */
    for (int64_t i = 0; i < 64; i++) prob[i] = 1.0 / 64;
    in.rows_per_gpu = 8;
    in.costs = (gd__placement_costs){0, 3, 3};
    x[0] = place(&in, GD__PLACEMENT_AUTO);
    T_EQ_INT(x[0].offset[4], 32);
    for (int64_t i = 0; i < 8; i++) T_EQ_INT(x[0].holders[i], 0xf);
    gd__placement_free(&x[0]);
    in.costs = (gd__placement_costs){0, 1, 3};
    x[0] = place(&in, GD__PLACEMENT_AUTO);
    for (int64_t i = 0; i < 32; i++) T_ASSERT(x[0].home[i] >= 0);
    gd__placement_free(&x[0]);
}

/* A case worked by hand: G = 2, K = 2, costs 0 / 1 / 10, so alpha = 1 / 19. */
static void worked_example(void) {
    double prob[4] = {0.4, 0.3, 0.2, 0.1};
    gd__placement_input in = {.num_candidates = 4, .prob = prob, .num_gpus = 2};
    in.rows_per_gpu = 2;
    in.costs = (gd__placement_costs){0, 1, 10};
    gd__placement rep = place(&in, GD__PLACEMENT_REPLICATE);
    gd__placement aut = place(&in, GD__PLACEMENT_AUTO);
    T_NEAR(aut.alpha, 1.0 / 19, 1e-15);
    T_NEAR(rep.cost, 3.0, 1e-12); /* rows 2 and 3 from the host */
    T_NEAR(aut.cost, 0.5, 1e-12); /* every row once: half the accesses read a peer */
    /* Row 1 stays on GPU 0, GPU 1 takes row 2; then the lighter GPU 1 keeps row 0. */
    int64_t want[4] = {1, 3, 0, 2};
    for (int k = 0; k < 4; k++) T_EQ_INT(aut.rows[k], want[k]);
    T_NEAR(aut.local_prob[0], 0.4, 1e-12);
    T_NEAR(aut.local_prob[1], 0.6, 1e-12);
    gd__placement_free(&rep);
    gd__placement_free(&aut);
}

static void bad_inputs(void) {
    double prob[3] = {0.5, 0.2, 0.1}, rising[3] = {0.2, 0.5, 0.1}, big[2] = {0.8, 0.7};
    int64_t caps[2] = {3, -1};
    gd__placement pl;
    gd__placement_input in = {.num_candidates = 3, .prob = prob, .num_gpus = 2};
    in.rows_per_gpu = 2;
    in.costs = (gd__placement_costs){0, 1, 5};
    in.num_gpus = 17;
    T_FAILS(gd__placement_compute(&in, GD__PLACEMENT_AUTO, &pl), GD_ERR_INVALID_ARG, "17 GPUs");
    gd__placement_free(&pl);
    in.num_gpus = 2;
    in.capacity = caps;
    T_FAILS(gd__placement_compute(&in, GD__PLACEMENT_AUTO, &pl), GD_ERR_INVALID_ARG, "GPU 1");
    in.capacity = NULL;
    in.costs = (gd__placement_costs){0, 6, 5};
    T_FAILS(gd__placement_compute(&in, GD__PLACEMENT_AUTO, &pl), GD_ERR_INVALID_ARG, "peer = host");
    in.costs = (gd__placement_costs){0, 1, 5};
    in.prob = rising;
    T_FAILS(gd__placement_compute(&in, GD__PLACEMENT_PARTITION, &pl), GD_ERR_INVALID_ARG,
            "hottest first");
    in.prob = big;
    in.num_candidates = 2;
    T_FAILS(gd__placement_compute(&in, GD__PLACEMENT_PARTITION, &pl), GD_ERR_INVALID_ARG,
            "above 1");
    T_FAILS(gd__placement_compute(&in, (gd__placement_kind)3, &pl), GD_ERR_INVALID_ARG, "kind 3");
    gd__placement_free(&pl);

    /* Scores: normalised by the total of all rows, or by their own sum. */
    double score[3] = {6, 3, 1}, p[3];
    T_OK(gd__placement_probs(score, 3, 20, p));
    T_NEAR(p[0], 0.3, 1e-15);
    T_NEAR(p[2], 0.05, 1e-15);
    T_OK(gd__placement_probs(score, 3, 0, p));
    T_NEAR(p[0] + p[1] + p[2], 1.0, 1e-15);
    T_FAILS(gd__placement_probs(score, 3, 5, p), GD_ERR_INVALID_ARG, "below the candidates' sum");
    T_FAILS(gd__placement_probs(rising, 3, 0, p), GD_ERR_INVALID_ARG, "hottest first");
    T_EQ_INT(gd__name_index(gd__placement_names, 3, "partition"), GD__PLACEMENT_PARTITION);
}

/* Every allocation of a placement (of rows, then of sized candidates) fails cleanly, with
 * nothing left allocated. */
static void fault_walk(void) {
    double prob[4] = {0.4, 0.3, 0.2, 0.1};
    int64_t size[4] = {3, 1, 2, 1};
    gd__placement_input in = {.num_candidates = 4, .prob = prob, .num_gpus = 3};
    in.rows_per_gpu = 2;
    in.costs = (gd__placement_costs){0, 1, 10};
    for (int sized = 0; sized < 2; sized++) {
        in.size = sized ? size : NULL;
        for (int64_t k = 1;; k++) {
            gd__placement pl;
            gd_fault_set(GD_FAULT_ALLOC, k);
            gd_status st = gd__placement_compute(&in, GD__PLACEMENT_AUTO, &pl);
            gd_fault_set(GD_FAULT_ALLOC, 0);
            gd__placement_free(&pl);
            t_check_no_leaks();
            if (st == GD_OK) break;
            T_EQ_INT(st, GD_ERR_NO_MEMORY);
            T_ASSERT(k < 10);
        }
    }
}

/* ------------------------------------------------------------ sized candidates */

static int64_t sizes[MAX_N];
static double sized_prob[MAX_N];

/* The units candidate i takes (1 without sizes). */
static int64_t units_of(const gd__placement_input *in, int64_t i) {
    return in->size ? in->size[i] : 1;
}

typedef struct {
    double key;
    int64_t size;
    double prob;
} sized_item;

static int better_first(const void *a, const void *b) {
    const sized_item *x = a, *y = b;
    return (x->key < y->key) - (x->key > y->key);
}

/*
 * Random sized candidates (in sized_prob, sizes and row_ids) on 1 to 16 GPUs: sizes all one
 * value, small, or mostly small with a few of thousands of units; ranked best first by
 * prob / size exactly, by the ratio rounded to a few levels (as the list cache's integer scores
 * round it), or in a random order.
 */
static gd__placement_input random_sized(uint64_t *s) {
    static double p[MAX_N];
    static sized_item items[MAX_N];
    const int64_t n = 1 + (int64_t)(t_rand(s) % MAX_N);
    const int shape = (int)(t_rand(s) % 3), order = (int)(t_rand(s) % 3);
    const int64_t same = 1 + (int64_t)(t_rand(s) % 8);
    random_probs(s, n, (int)(t_rand(s) % 3), p);
    for (int64_t i = 0; i < n; i++) {
        int64_t z = shape == 0   ? same
                    : shape == 1 ? 1 + (int64_t)(t_rand(s) % 16)
                                 : 1 + (int64_t)(t_rand(s) % 4);
        if (shape == 2 && t_rand(s) % 50 == 0) z = 1 + (int64_t)(t_rand(s) % 4096);
        const double ratio = p[i] / (double)z;
        const double key = order == 0 ? ratio : order == 1 ? floor(ratio * 64 * n) : urand(s);
        items[i] = (sized_item){key, z, p[i]};
    }
    qsort(items, (size_t)n, sizeof *items, better_first);
    for (int64_t i = 0; i < n; i++) {
        sizes[i] = items[i].size;
        sized_prob[i] = items[i].prob;
    }
    random_rows(s, n);
    gd__placement_input in = {.num_candidates = n, .prob = sized_prob, .rows = row_ids};
    in.size = sizes;
    in.num_gpus = 1 + (int)(t_rand(s) % GD__PLACEMENT_MAX_GPUS);
    return in;
}

/* Each GPU's units equal `used` and fit its capacity; room[g] = the units it has left. */
static void check_sizes(const gd__placement_input *in, const gd__placement *pl, int64_t *room) {
    for (int g = 0; g < in->num_gpus; g++) {
        int64_t units = 0;
        for (int64_t k = pl->offset[g]; k < pl->offset[g + 1]; k++)
            units += units_of(in, cand_of[pl->rows[k]]);
        T_EQ_INT(pl->used[g], units);
        T_ASSERT(units <= cap_of(in, g));
        room[g] = cap_of(in, g) - units;
    }
}

/* replicate: GPU g holds what first fit, in the candidates' order, gives it. */
static void check_replicate_sized(const gd__placement_input *in, const gd__placement *pl) {
    for (int g = 0; g < in->num_gpus; g++) {
        int64_t room = cap_of(in, g);
        for (int64_t i = 0; i < in->num_candidates; i++) {
            const int take = units_of(in, i) <= room;
            if (take) room -= units_of(in, i);
            T_EQ_INT(pl->holders[i] >> g & 1, take);
        }
    }
}

/* partition: each candidate at most once, and none left out that would still fit a GPU. */
static void check_partition_sized(const gd__placement_input *in, const gd__placement *pl,
                                  const int64_t *room) {
    for (int64_t i = 0; i < in->num_candidates; i++) {
        T_ASSERT(__builtin_popcount(pl->holders[i]) <= 1);
        if (pl->holders[i]) continue;
        for (int g = 0; g < in->num_gpus; g++) T_ASSERT(units_of(in, i) > room[g]);
    }
}

static void sized_case(uint64_t *s) {
    static int64_t caps[GD__PLACEMENT_MAX_GPUS];
    int64_t room[GD__PLACEMENT_MAX_GPUS];
    gd__placement_input in = random_sized(s);
    int64_t total = 0;
    for (int64_t i = 0; i < in.num_candidates; i++) total += sizes[i];
    random_budgets(s, &in, total, t_rand(s) % 4 == 3, caps);
    gd__placement rep = place(&in, GD__PLACEMENT_REPLICATE);
    gd__placement part = place(&in, GD__PLACEMENT_PARTITION);
    gd__placement aut = place(&in, GD__PLACEMENT_AUTO);
    const gd__placement *all[3] = {&rep, &part, &aut};
    for (int k = 0; k < 3; k++) {
        check_invariants(&in, all[k]);
        check_sizes(&in, all[k], room);
        if (k == 1) check_partition_sized(&in, &part, room);
    }
    check_replicate_sized(&in, &rep);
    const double best = rep.cost < part.cost ? rep.cost : part.cost;
    if (!(aut.cost <= best + 1e-12))
        T_FAIL_("sized auto %.17g above min(replicate %.17g, partition %.17g): n %lld, G %d, "
                "K %lld",
                aut.cost, rep.cost, part.cost, (long long)in.num_candidates, in.num_gpus,
                (long long)in.rows_per_gpu);
    gd__placement_free(&rep);
    gd__placement_free(&part);
    gd__placement_free(&aut);
}

/*
 * Two GPUs of equal capacity and candidates of one size that divides it: whole candidates fill
 * the caches as divisible ones would, and sized auto finds the model's optimum (a replicated
 * prefix, then each candidate once). Sizes of one unit place as rows do under replicate and
 * partition.
 */
static void sized_against_rows(uint64_t *s) {
    static int64_t ones[MAX_N];
    gd__placement_input rows = random_input(s);
    const int64_t n = rows.num_candidates, z = 1 + (int64_t)(t_rand(s) % 5);
    rows.num_gpus = 2;
    rows.rows_per_gpu = (int64_t)(t_rand(s) % (uint64_t)(n + 1));
    rows.costs = random_costs(s);
    for (int64_t i = 0; i < n; i++) sizes[i] = z;
    gd__placement_input sized = rows;
    sized.size = sizes;
    sized.rows_per_gpu = rows.rows_per_gpu * z;
    gd__placement aut = place(&sized, GD__PLACEMENT_AUTO);
    check_invariants(&sized, &aut);
    T_NEAR(aut.cost, optimum_cost(&rows), 1e-9 * (1 + rows.costs.host));
    gd__placement_free(&aut);

    rows.num_gpus = 1 + (int)(t_rand(s) % GD__PLACEMENT_MAX_GPUS);
    for (int64_t i = 0; i < n; i++) ones[i] = 1;
    sized = rows;
    sized.size = ones;
    for (int k = 0; k < 2; k++) {
        gd__placement a = place(&rows, (gd__placement_kind)k);
        gd__placement b = place(&sized, (gd__placement_kind)k);
        same_masks(&a, &b);
        for (int g = 0; g < rows.num_gpus; g++) T_EQ_INT(a.used[g], a.offset[g + 1] - a.offset[g]);
        gd__placement_free(&a);
        gd__placement_free(&b);
    }
}

/*
 * Worked by hand: G = 2 of 6 units each, costs 0 / 1 / 2 (A = 3, B = 1, alpha 1/3), six lists of
 * 2 units. Replicate holds lists 0-2 twice (E = 0.28 * 2 = 0.56), partition all six once
 * (0.96 / 2 + 0.04 * 2 = 0.56). The model rates the prefix r = 1 best (savings 1.6 + 3 * 0.5 =
 * 3.1 against 2.88 for r = 3), so list 0 is held twice and lists 1-4 once, balanced by their
 * probabilities: E = 0.5 / 2 + 0.1 * 2 = 0.45. Then first fit: a list of 4 units that no longer
 * fits is passed over, and a smaller one behind it still fills the space.
 */
static void sized_worked_example(void) {
    double prob[6] = {0.4, 0.2, 0.12, 0.1, 0.08, 0.06};
    int64_t size[6] = {2, 2, 2, 2, 2, 2};
    gd__placement_input in = {.num_candidates = 6, .prob = prob, .size = size, .num_gpus = 2};
    in.rows_per_gpu = 6;
    in.costs = (gd__placement_costs){0, 1, 2};
    gd__placement rep = place(&in, GD__PLACEMENT_REPLICATE);
    gd__placement part = place(&in, GD__PLACEMENT_PARTITION);
    gd__placement aut = place(&in, GD__PLACEMENT_AUTO);
    T_NEAR(rep.cost, 0.56, 1e-12);
    T_NEAR(part.cost, 0.56, 1e-12);
    T_NEAR(aut.cost, 0.45, 1e-12);
    const uint32_t want[6] = {3, 1, 2, 2, 1, 0};
    for (int i = 0; i < 6; i++) T_EQ_INT(aut.holders[i], want[i]);
    T_EQ_INT(aut.used[0], 6);
    T_EQ_INT(aut.used[1], 6);
    gd__placement_free(&rep);
    gd__placement_free(&part);
    gd__placement_free(&aut);

    double p2[3] = {0.5, 0.2, 0.1};
    int64_t s2[3] = {2, 4, 2};
    in = (gd__placement_input){.num_candidates = 3, .prob = p2, .size = s2, .num_gpus = 2};
    in.rows_per_gpu = 5;
    in.costs = (gd__placement_costs){0, 1, 2};
    rep = place(&in, GD__PLACEMENT_REPLICATE);
    T_EQ_INT(rep.holders[0], 3);
    T_EQ_INT(rep.holders[1], 0);
    T_EQ_INT(rep.holders[2], 3);
    T_EQ_INT(rep.used[0], 4);
    gd__placement_free(&rep);

    /* Sizes need not follow the probabilities' order, but a size below 1 is refused. */
    s2[1] = 0;
    T_FAILS(gd__placement_compute(&in, GD__PLACEMENT_AUTO, &aut), GD_ERR_INVALID_ARG, "size 0");
    gd__placement_free(&aut);
}

int main(void) {
    uint64_t s = t_seed();
    worked_example();
    bad_inputs();
    fault_walk();
    edge_cases(&s);
    for (int r = 0; r < 200; r++) random_case(&s, r % 4 == 3);
    for (int r = 0; r < 50; r++) extreme_costs(&s);
    sized_worked_example();
    for (int r = 0; r < 200; r++) sized_case(&s);
    for (int r = 0; r < 50; r++) sized_against_rows(&s);
    t_check_no_leaks();
    return 0;
}
