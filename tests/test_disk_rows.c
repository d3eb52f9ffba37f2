/*
 * Feature rows read from disk through the host dynamic cache (src/feature/disk_rows.h; issue
 * 16, the SSD tier's CPU path). A table of random rows sits in a file after a 4 KiB header;
 * gathers of random distinct rows, repeated so that the cache hits, evicts and bypasses, must
 * give exactly the table's rows, for unaligned (400 B), 512 B and 4 KiB rows, caches of none,
 * a tenth and all of the rows, every eviction policy and both I/O backends. A read that fails
 * (GD_FAULT_READ) fails the gather with GD_ERR_IO and leaves no slot holding what it read: the
 * same gather afterwards gives the right rows. Bad ids, a short file and every allocation of
 * open are refused cleanly. The same, striped over 2 to 4 files (gd__stripes): the rows, a
 * failed read, a stripe file too short.
 */
#include "test.h"

#include "feature/disk_rows.h"
#include "stripe_util.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define HEADER 4096
#define ROWS 600
#define MAX_IDS 256

static char dir[4096], path[4200];
static unsigned char *table;
/* The table striped over files (stripe_util.h; geo.nfiles 0: the one file). */
static stripe_set striped;

static void write_table(uint64_t *rng, int64_t row_bytes) {
    const int64_t bytes = ROWS * row_bytes;
    gd_free(table);
    table = gd_malloc((size_t)bytes);
    T_ASSERT(table);
    for (int64_t i = 0; i < bytes; i++) table[i] = (unsigned char)(t_rand(rng) >> 56);
    FILE *f = fopen(path, "wb");
    T_ASSERT(f);
    unsigned char head[HEADER];
    memset(head, 0x5a, sizeof head);
    T_ASSERT(fwrite(head, 1, HEADER, f) == HEADER);
    T_ASSERT(fwrite(table, 1, (size_t)bytes, f) == (size_t)bytes);
    T_ASSERT(fclose(f) == 0);
}

/* The table written again as stripe files (headers of 512 B x (k + 1)); config() reads them. */
static void write_stripes(int64_t row_bytes, int nfiles, int64_t unit_rows) {
    stripe_write(&striped, dir, table, ROWS, row_bytes, nfiles, unit_rows, 512);
}

static gd__disk_rows_config config(int64_t row_bytes, int64_t cache, gd__evict_policy p,
                                   gd__ioeng_backend backend) {
    gd__disk_rows_config c = {.path = path,
                              .data_offset = HEADER,
                              .rows = ROWS,
                              .row_bytes = row_bytes,
                              .cache_rows = cache,
                              .policy = p,
                              .io = GD__IOENG_OPTIONS_INIT};
    if (striped.geo.nfiles > 0) {
        c.path = NULL;
        c.stripes = striped.files;
        c.num_stripes = striped.geo.nfiles;
        c.stripe_rows = striped.geo.unit_rows;
    }
    c.io.backend = backend;
    c.io.queue_depth = 16;
    return c;
}

/* The layout itself: every row in exactly one place, each file's rows counted right. */
static void check_layout(uint64_t *rng) {
    /* By hand: 3 files, units of 2 rows. */
    const gd__stripes h = {3, 2};
    const int64_t want[9][2] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}, {2, 0}, {2, 1}, {0, 2}, {0, 3}, {1, 2}};
    for (int64_t r = 0; r < 9; r++) {
        int file;
        int64_t local;
        gd__stripes_locate(&h, r, &file, &local);
        T_EQ_INT(file, want[r][0]);
        T_EQ_INT(local, want[r][1]);
    }
    T_EQ_INT(gd__stripes_file_rows(&h, 9, 0), 4);
    T_EQ_INT(gd__stripes_file_rows(&h, 9, 1), 3);
    T_EQ_INT(gd__stripes_file_rows(&h, 9, 2), 2);
    for (int rep = 0; rep < 200; rep++) {
        const gd__stripes g = {1 + (int)(t_rand(rng) % 5), 1 + (int64_t)(t_rand(rng) % 9)};
        const int64_t rows = (int64_t)(t_rand(rng) % 300);
        int64_t count[5] = {0};
        uint8_t *seen = calloc((size_t)(rows + 1) * 5, 1);
        T_ASSERT(seen);
        for (int64_t r = 0; r < rows; r++) {
            int file;
            int64_t local;
            gd__stripes_locate(&g, r, &file, &local);
            T_ASSERT(file >= 0 && file < g.nfiles && local >= 0 && local < rows);
            T_ASSERT(!seen[local * 5 + file]);
            seen[local * 5 + file] = 1;
            count[file]++;
        }
        for (int k = 0; k < g.nfiles; k++) {
            T_EQ_INT(gd__stripes_file_rows(&g, rows, k), count[k]);
            for (int64_t l = 0; l < count[k]; l++) T_ASSERT(seen[l * 5 + k]); /* back to back */
        }
        free(seen);
    }
}

/* n distinct random rows. */
static int64_t draw(uint64_t *rng, int64_t *ids) {
    static uint8_t seen[ROWS];
    memset(seen, 0, sizeof seen);
    const int64_t n = 1 + (int64_t)(t_rand(rng) % MAX_IDS);
    for (int64_t i = 0; i < n;) {
        const int64_t r = (int64_t)(t_rand(rng) % ROWS) / (1 + (int64_t)(t_rand(rng) % 3));
        if (seen[r]) continue;
        seen[r] = 1;
        ids[i++] = r;
    }
    return n;
}

static void check_rows(const int64_t *ids, int64_t n, const unsigned char *out, int64_t rb) {
    for (int64_t i = 0; i < n; i++)
        T_ASSERT(memcmp(out + i * rb, table + ids[i] * rb, (size_t)rb) == 0);
}

static void gathers(uint64_t *rng, int64_t rb, int64_t cache, gd__evict_policy p,
                    gd__ioeng_backend backend) {
    gd__disk_rows *d;
    const gd__disk_rows_config c = config(rb, cache, p, backend);
    T_OK(gd__disk_rows_open(&c, &d));
    unsigned char *out = gd_malloc((size_t)(MAX_IDS * rb));
    T_ASSERT(out);
    int64_t ids[MAX_IDS], total = 0;
    for (int round = 0; round < 30; round++) {
        const int64_t n = draw(rng, ids);
        memset(out, 0xee, (size_t)(n * rb)); /* poisoned: every row must be written */
        T_OK(gd__disk_rows_gather(d, ids, n, out));
        check_rows(ids, n, out, rb);
        total += n;
    }
    const gd__disk_rows_stats s = gd__disk_rows_get_stats(d);
    T_EQ_INT(s.rows, total);
    T_EQ_INT(s.hits + s.fills + s.bypasses, total);
    if (cache == 0) T_EQ_INT(s.bypasses, total);
    if (cache == ROWS) T_EQ_INT(s.bypasses, 0);
    if (cache > 0) T_ASSERT(s.hits > 0);
    T_ASSERT(s.bytes_read >= (s.fills + s.bypasses) * rb);
    gd_free(out);
    gd__disk_rows_close(d);
}

/*
 * The fault_at-th read fails: the gather of ids fails naming `needle` (the file); the same
 * gather again, into poisoned output, gives the table's rows.
 */
static void failed_read_then_right(gd__disk_rows *d, const int64_t *ids, int64_t n,
                                   unsigned char *out, int64_t rb, int64_t fault_at,
                                   const char *needle) {
    gd_fault_set(GD_FAULT_READ, fault_at);
    T_FAILS(gd__disk_rows_gather(d, ids, n, out), GD_ERR_IO, needle);
    gd_fault_set(GD_FAULT_READ, 0);
    memset(out, 0xee, (size_t)(n * rb));
    T_OK(gd__disk_rows_gather(d, ids, n, out));
    check_rows(ids, n, out, rb);
}

/* A failed read leaves no slot behind; the next gathers are right. Bad input is refused. */
static void failures(uint64_t *rng) {
    const int64_t rb = 512;
    write_table(rng, rb);
    gd__disk_rows *d;
    const gd__disk_rows_config c = config(rb, ROWS / 4, GD__EVICT_SIEVE, GD__IOENG_THREADS);
    T_OK(gd__disk_rows_open(&c, &d));
    unsigned char out[MAX_IDS * 512];
    int64_t ids[MAX_IDS];
    const int64_t n = 32; /* rows not cached yet: 32 reads, the second of which fails */
    for (int64_t i = 0; i < n; i++) ids[i] = (int64_t)(t_rand(rng) % (ROWS / n)) * n + i;
    failed_read_then_right(d, ids, n, out, rb, 2, "features.bin");
    const int64_t twice[2] = {3, 3}, far = ROWS;
    T_FAILS(gd__disk_rows_gather(d, twice, 2, out), GD_ERR_INVALID_ARG, "twice");
    T_FAILS(gd__disk_rows_gather(d, &far, 1, out), GD_ERR_RANGE, "outside");
    gd__disk_rows_close(d);
    /* A file shorter than the table it should hold. */
    gd__disk_rows_config big = c;
    big.rows = ROWS + 1;
    T_FAILS(gd__disk_rows_open(&big, &d), GD_ERR_FORMAT, "truncated");
    /* Striped: a failed read and the rows after it, a stripe file too short (named). */
    write_stripes(rb, 3, 5);
    const gd__disk_rows_config cs = config(rb, ROWS / 4, GD__EVICT_CLOCK, GD__IOENG_THREADS);
    T_OK(gd__disk_rows_open(&cs, &d));
    failed_read_then_right(d, ids, n, out, rb, 3, "stripe");
    gd__disk_rows_close(d);
    T_ASSERT(truncate(striped.path[1], 1024 + 10 * rb) == 0);
    T_FAILS(gd__disk_rows_open(&cs, &d), GD_ERR_FORMAT, "stripe1.bin");
    gd__disk_rows_config bad = cs;
    bad.stripe_rows = 0;
    T_FAILS(gd__disk_rows_open(&bad, &d), GD_ERR_INVALID_ARG, "stripes");
    striped.geo = (gd__stripes){0, 0};
    int64_t blocks, bytes;
    gd_alloc_stats(&blocks, &bytes);
    for (int64_t k = 1;; k++) {
        gd_fault_set(GD_FAULT_ALLOC, k);
        const gd_status st = gd__disk_rows_open(&c, &d);
        gd_fault_set(GD_FAULT_ALLOC, 0);
        gd__disk_rows_close(d);
        t_same_live(blocks, bytes, "opening rows on disk", k);
        if (st == GD_OK) break;
        T_EQ_INT(st, GD_ERR_NO_MEMORY);
        T_ASSERT(k < 1000); /* the engine's threads and buffers, the cache's arrays */
    }
}

int main(void) {
    const uint64_t seed = t_seed();
    uint64_t rng = seed;
    t_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/features.bin", dir);
    const int64_t widths[3] = {400, 512, 4096};
    const gd__ioeng_backend backends[2] = {GD__IOENG_THREADS, GD__IOENG_AUTO};
    check_layout(&rng);
    for (int w = 0; w < 3; w++) {
        write_table(&rng, widths[w]);
        const int64_t caches[3] = {0, ROWS / 10, ROWS};
        for (int c = 0; c < 3; c++)
            for (int p = 0; p < GD__EVICT_COUNT; p++)
                for (int b = 0; b < 2; b++)
                    gathers(&rng, widths[w], caches[c], (gd__evict_policy)p, backends[b]);
        /* The same table striped over 2, 3 and 4 files in units of 1, 7 and 64 rows. */
        const int nf[3] = {2, 3, 4};
        const int64_t units[3] = {1, 7, 64};
        for (int k = 0; k < 3; k++) {
            write_stripes(widths[w], nf[k], units[k]);
            for (int c = 0; c < 3; c++)
                gathers(&rng, widths[w], caches[c], (gd__evict_policy)(c % GD__EVICT_COUNT),
                        backends[k % 2]);
        }
        striped.geo = (gd__stripes){0, 0};
    }
    failures(&rng);
    gd_free(table);
    t_check_no_leaks();
    t_rmtree(dir);
    printf("rows on disk: ok\n");
    return 0;
}
