/*
 * The disk tier on the GPU (src/feature/disk_tier.h): a table written to a file with a 4 KiB
 * header, fresh random bytes each run, rows of 512, 4096 and 100 bytes (the last read through
 * the engine's bounce buffer and copied byte-wise); a pinned host buffer of a random tenth of
 * the rows; a small dynamic GPU cache so that rows are evicted and, for the largest
 * minibatches, bypass it. Every gather of fresh skewed distinct ids (output poisoned first)
 * equals the file's rows; the counts add up (host rows + cache lookups = rows; hits + fills +
 * bypasses = lookups; the misses' bytes read, and no more for aligned rows) and the cache's
 * decisions equal the CPU reference's (dyncache.h) fed the same disk rows. A failed read
 * (GD_FAULT_READ) fails the gather naming the file, and the next gather of the same rows is
 * right; an id out of range is named by check_errors; a truncated file is refused at open.
 * The same over the table striped across 2 and 3 files (gd__stripes), a stripe file too short
 * refused naming it. Without a GPU the test exits 77.
 */
#include "test.h"

#ifdef GD_WITH_CUDA
#include "feature/disk_tier.h"
#include "feature/dyncache.h"
#include "stripe_util.h"

#include <cuda_runtime_api.h>
#include <fcntl.h>

#define ROWS 5000
#define MAX_N 600
#define SLOTS 450
#define HEADER 4096

static unsigned char *table;
static char path[4200], dir[4096];
/* The table striped over files (stripe_util.h; geo.nfiles 0: the one file). */
static stripe_set striped;

/* The table written again as stripe files (headers of 1 KiB x (k + 1)); config() reads them. */
static void write_stripes(int64_t rb, int nfiles, int64_t unit_rows) {
    stripe_write(&striped, dir, table, ROWS, rb, nfiles, unit_rows, 1024);
}

static void write_table(uint64_t *rng, int64_t rb) {
    gd_free(table);
    table = gd_malloc((size_t)(ROWS * rb));
    T_ASSERT(table);
    for (int64_t i = 0; i < ROWS * rb; i++) table[i] = (unsigned char)t_rand(rng);
    FILE *f = fopen(path, "wb");
    T_ASSERT(f);
    static unsigned char header[HEADER];
    memset(header, 'h', sizeof header);
    T_ASSERT(fwrite(header, 1, HEADER, f) == HEADER);
    T_ASSERT(fwrite(table, 1, (size_t)(ROWS * rb), f) == (size_t)(ROWS * rb));
    T_ASSERT(fclose(f) == 0);
}

static int64_t draw(uint64_t *rng, int64_t *ids, uint8_t *mark) {
    const int64_t want = 1 + (int64_t)(t_rand(rng) % MAX_N);
    int64_t n = 0;
    while (n < want) {
        const double u = (double)(t_rand(rng) >> 11) / 9007199254740992.0;
        const int64_t r = (int64_t)(u * u * u * ROWS);
        if (r >= ROWS || mark[r]) continue;
        mark[r] = 1;
        ids[n++] = r;
    }
    for (int64_t i = 0; i < n; i++) mark[ids[i]] = 0;
    return n;
}

static gd__disk_tier_config config(int64_t rb, const int64_t *host_rows, int64_t host_count,
                                   gd__evict_policy p) {
    gd__disk_tier_config c;
    memset(&c, 0, sizeof c);
    c.path = path;
    c.data_offset = HEADER;
    c.rows = ROWS;
    c.row_bytes = rb;
    c.device = 0;
    c.host_rows = host_rows;
    c.host_count = host_count;
    c.gpu_slots = SLOTS;
    c.policy = p;
    c.seed = 11;
    c.max_rows = MAX_N;
    c.io = (gd__ioeng_options)GD__IOENG_OPTIONS_INIT;
    if (striped.geo.nfiles > 0) {
        c.path = NULL;
        c.stripes = striped.files;
        c.num_stripes = striped.geo.nfiles;
        c.stripe_rows = striped.geo.unit_rows;
    }
    return c;
}

static void check_out(const int64_t *ids, int64_t n, const unsigned char *out, int64_t rb,
                      const char *what) {
    for (int64_t i = 0; i < n; i++)
        if (memcmp(out + i * rb, table + ids[i] * rb, (size_t)rb) != 0)
            T_FAIL_("%s: row %lld (position %lld of %lld, %lld bytes) differs from the file", what,
                    (long long)ids[i], (long long)i, (long long)n, (long long)rb);
}

static void gathers(uint64_t *rng, int64_t rb, gd__evict_policy p, int stripes) {
    write_table(rng, rb);
    striped.geo = (gd__stripes){0, 0};
    if (stripes > 0) write_stripes(rb, stripes, 1 + (int64_t)(t_rand(rng) % 40));
    static uint8_t mark[ROWS], in_host[ROWS];
    int64_t host_rows[ROWS / 10];
    memset(in_host, 0, sizeof in_host);
    int64_t H = 0;
    while (H < ROWS / 10) {
        const int64_t r = (int64_t)(t_rand(rng) % ROWS);
        if (in_host[r]) continue;
        in_host[r] = 1;
        host_rows[H++] = r;
    }
    gd__disk_tier *t;
    const gd__disk_tier_config c = config(rb, host_rows, H, p);
    T_OK(gd__disk_tier_open(&c, &t));
    gd__dyncache *ref;
    T_OK(gd__dyncache_create(ROWS, SLOTS, p, 11, &ref));
    cudaStream_t s;
    CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    int64_t *d_ids;
    unsigned char *d_out, *out = gd_malloc((size_t)(MAX_N * rb));
    T_ASSERT(out);
    CU(cudaMalloc((void **)&d_ids, MAX_N * sizeof(int64_t)));
    CU(cudaMalloc((void **)&d_out, (size_t)(MAX_N * rb)));
    int64_t ids[MAX_N], disk[MAX_N], slots[MAX_N], total = 0, host_total = 0;
    gd__dyncache_fill fills[MAX_N];
    for (int round = 0; round < 40; round++) {
        const int64_t n = draw(rng, ids, mark);
        CU(cudaMemcpyAsync(d_ids, ids, (size_t)n * sizeof(int64_t), cudaMemcpyHostToDevice, s));
        CU(cudaMemsetAsync(d_out, 0xee, (size_t)(n * rb), s));
        T_OK(gd__disk_tier_gather(t, d_ids, n, d_out, s));
        CU(cudaMemcpyAsync(out, d_out, (size_t)(n * rb), cudaMemcpyDeviceToHost, s));
        CU(cudaStreamSynchronize(s));
        check_out(ids, n, out, rb, "gather");
        /* The reference, fed the disk rows in the same order, released at once. */
        int64_t nd = 0, nf = 0, nb = 0;
        for (int64_t i = 0; i < n; i++)
            if (!in_host[ids[i]]) disk[nd++] = ids[i];
        T_OK(gd__dyncache_acquire(ref, disk, nd, slots, fills, &nf, &nb));
        T_OK(gd__dyncache_filled(ref, fills, nf));
        T_OK(gd__dyncache_release(ref, slots, nd));
        total += n;
        host_total += n - nd;
    }
    T_OK(gd__disk_tier_check_errors(t, s));
    gd__disk_tier_stats st;
    T_OK(gd__disk_tier_get_stats(t, s, &st));
    const gd__dyncache_stats rs = gd__dyncache_get_stats(ref);
    T_EQ_INT(st.rows, total);
    T_EQ_INT(st.host_rows, host_total);
    T_EQ_INT(st.cache.lookups, total - host_total);
    T_EQ_INT(st.cache.hits + st.cache.fills + st.cache.bypasses, st.cache.lookups);
    T_EQ_INT(st.cache.hits, rs.hits);
    T_EQ_INT(st.cache.fills, rs.fills);
    T_EQ_INT(st.cache.evictions, rs.evictions);
    T_EQ_INT(st.cache.bypasses, rs.bypasses);
    T_ASSERT(st.cache.evictions > 0);
    T_EQ_INT(st.bytes_useful, (st.cache.fills + st.cache.bypasses) * rb);
    /* Every byte the gathers read is a wanted one for rows of whole blocks (the host buffer's
     * fill at open is not counted). */
    if (rb % 512 == 0)
        T_EQ_INT(st.bytes_read, st.bytes_useful);
    else
        T_ASSERT(st.bytes_read >= st.bytes_useful);
    fprintf(stderr,
            "%4lld-byte rows, %-6s, %d stripe files: %lld rows, %lld from the host buffer, cache "
            "hit rate %.3f, %lld evictions, %lld bypasses, %.2f bytes read per useful byte\n",
            (long long)rb, gd__evict_names[p], striped.geo.nfiles, (long long)st.rows,
            (long long)st.host_rows,
            (double)st.cache.hits / (double)(st.cache.lookups ? st.cache.lookups : 1),
            (long long)st.cache.evictions, (long long)st.cache.bypasses,
            (double)st.bytes_read / (double)(st.bytes_useful ? st.bytes_useful : 1));

    /* A failed read: the gather fails naming the file; the same rows gathered again are right. */
    if (p == GD__EVICT_CLOCK && (rb == 512 || stripes > 0)) {
        int64_t n = 0;
        for (int64_t r = ROWS - 1; r >= 0 && n < 64; r--) /* cold rows: misses to read */
            if (!in_host[r]) ids[n++] = r;
        CU(cudaMemcpyAsync(d_ids, ids, (size_t)n * sizeof(int64_t), cudaMemcpyHostToDevice, s));
        gd_fault_set(GD_FAULT_READ, 2);
        T_FAILS(gd__disk_tier_gather(t, d_ids, n, d_out, s), GD_ERR_IO,
                stripes > 0 ? "stripe" : "table.bin");
        gd_fault_set(GD_FAULT_READ, 0);
        CU(cudaMemsetAsync(d_out, 0xee, (size_t)(n * rb), s));
        T_OK(gd__disk_tier_gather(t, d_ids, n, d_out, s));
        CU(cudaMemcpyAsync(out, d_out, (size_t)(n * rb), cudaMemcpyDeviceToHost, s));
        CU(cudaStreamSynchronize(s));
        check_out(ids, n, out, rb, "gather after a failed read");
        T_OK(gd__disk_tier_check_errors(t, s));
        /* An id out of range: recorded, named, and the tier stays usable. */
        const int64_t far[2] = {ROWS + 3, 1};
        CU(cudaMemcpyAsync(d_ids, far, sizeof far, cudaMemcpyHostToDevice, s));
        T_OK(gd__disk_tier_gather(t, d_ids, 2, d_out, s));
        T_FAILS(gd__disk_tier_check_errors(t, s), GD_ERR_RANGE, "outside");
        T_FAILS(gd__disk_tier_gather(t, d_ids, MAX_N + 1, d_out, s), GD_ERR_INVALID_ARG, "at most");
    }
    CU(cudaFree(d_ids));
    CU(cudaFree(d_out));
    CU(cudaStreamDestroy(s));
    gd_free(out);
    gd__dyncache_destroy(ref);
    gd__disk_tier_close(t);
}

int main(void) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        fprintf(stderr, "no GPU: skipped\n");
        return GD_TEST_SKIP;
    }
    uint64_t rng = t_seed();
    t_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/table.bin", dir);
    const int64_t sizes[3] = {512, 4096, 100};
    for (int k = 0; k < 3; k++)
        for (int p = 0; p < GD__EVICT_COUNT; p++) gathers(&rng, sizes[k], (gd__evict_policy)p, 0);
    /* Striped over 2 and 3 files in random units: the same rows, the host buffer file by file. */
    for (int k = 0; k < 3; k++) gathers(&rng, sizes[k], GD__EVICT_CLOCK, 2 + k % 2);
    /* A stripe file shorter than its share of the table. */
    write_table(&rng, 512);
    write_stripes(512, 2, 16);
    T_ASSERT(truncate(striped.path[1], 2048 + 100 * 512) == 0);
    {
        const gd__disk_tier_config cs = config(512, NULL, 0, GD__EVICT_CLOCK);
        gd__disk_tier *ts = NULL;
        T_FAILS(gd__disk_tier_open(&cs, &ts), GD_ERR_FORMAT, "stripe1.bin");
    }
    striped.geo = (gd__stripes){0, 0};
    /* A file shorter than the table it should hold. */
    write_table(&rng, 512);
    gd__disk_tier_config c = config(512, NULL, 0, GD__EVICT_CLOCK);
    c.rows = ROWS + 1;
    gd__disk_tier *t = NULL;
    T_FAILS(gd__disk_tier_open(&c, &t), GD_ERR_FORMAT, "truncated");
    gd_free(table);
    table = NULL;
    t_rmtree(dir);
    t_check_no_leaks();
    fprintf(stderr, "disk tier: ok\n");
    return 0;
}
#else
int main(void) {
    fprintf(stderr, "built without CUDA: skipped\n");
    return GD_TEST_SKIP;
}
#endif
