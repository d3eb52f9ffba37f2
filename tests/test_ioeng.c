/*
 * The SSD tier's host I/O engine (src/io/ioeng.h, issue 16 item 1), on both backends: batches of
 * random requests over two generated files (one with a data offset, neither a whole number of
 * blocks long) compared byte for byte with what was written, aligned and unaligned, rows striped
 * across the two files, queue depths 1 to 512 and several instances; O_DIRECT refused (the
 * page-cache fallback); the retry paths through the test hooks (short reads, EAGAIN and EINTR);
 * a file truncated after open and files that cannot be read (the error names the file and the
 * offset, the batch never reports success); every read and allocation failing in turn (fault
 * injection: a clean error and no leak); bad requests and options.
 */
#define _GNU_SOURCE
#include "io/ioeng.h"
#include "test.h"

#include <fcntl.h>
#include <sys/stat.h>

#define NFILES 2

static char dir[256];
static char paths[NFILES][300];
static const int64_t data_offsets[NFILES] = {0, 4096};
static int64_t sizes[NFILES];        /* bytes from the data offset on */
static unsigned char *data[NFILES];  /* what each file holds from its data offset on */
static int have_uring;

/* A name as a plain pointer, for T_FAILS (which tests its needle for NULL). */
static const char *str(const char *s) { return s; }

static void write_file(const char *path, const void *buf, int64_t bytes) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    T_ASSERT(fd >= 0);
    T_EQ_INT(write(fd, buf, (size_t)bytes), bytes);
    close(fd);
}

/* Two files of random bytes: a header of data_offsets[i] bytes, then sizes[i] bytes of data. */
static void make_files(uint64_t *rng) {
    for (int i = 0; i < NFILES; i++) {
        sizes[i] = (int64_t)(700 * 1024 + t_rand(rng) % (400 * 1024)) | 1;
        int64_t total = data_offsets[i] + sizes[i];
        unsigned char *all = malloc((size_t)total);
        T_ASSERT(all);
        for (int64_t b = 0; b < total; b++) all[b] = (unsigned char)t_rand(rng);
        snprintf(paths[i], sizeof paths[i], "%s/table%d.bin", dir, i);
        write_file(paths[i], all, total);
        data[i] = malloc((size_t)sizes[i]);
        T_ASSERT(data[i]);
        memcpy(data[i], all + data_offsets[i], (size_t)sizes[i]);
        free(all);
    }
}

static gd__ioeng *open_engine(gd__ioeng_backend backend, int depth, int instances, int faults) {
    gd__ioeng_file files[NFILES];
    for (int i = 0; i < NFILES; i++) files[i] = (gd__ioeng_file){paths[i], data_offsets[i]};
    gd__ioeng_options o = GD__IOENG_OPTIONS_INIT;
    o.backend = backend;
    o.queue_depth = depth;
    o.instances = instances;
    o.test_faults = faults;
    gd__ioeng *e = NULL;
    T_OK(gd__ioeng_open(files, NFILES, &o, &e));
    T_EQ_INT(gd__ioeng_backend_of(e), backend);
    for (int i = 0; i < NFILES; i++) T_EQ_INT(gd__ioeng_file_size(e, i), sizes[i]);
    return e;
}

/* A request of about `bytes` bytes: block-aligned (offset, length and destination) half the
 * time, anything otherwise; never past the file's end. */
static gd__ioeng_request random_request(uint64_t *rng, int64_t bytes, int64_t *dst_at) {
    gd__ioeng_request r = {.file = (int32_t)(t_rand(rng) % NFILES)};
    int64_t size = sizes[r.file];
    int aligned = t_rand(rng) % 2;
    r.length = 1 + (int64_t)(t_rand(rng) % (uint64_t)bytes);
    if (aligned) r.length = (r.length + 4095) / 4096 * 4096;
    if (r.length > size) r.length = size;
    r.offset = (int64_t)(t_rand(rng) % (uint64_t)(size - r.length + 1));
    if (aligned) r.offset -= r.offset % 4096;
    /* Now and then the request ends at the last byte of the file (not a block boundary). */
    if (t_rand(rng) % 8 == 0) r.offset = size - r.length;
    if (t_rand(rng) % 32 == 0) r.length = 0;
    *dst_at = aligned ? (*dst_at + 4095) / 4096 * 4096 : *dst_at + (int64_t)(t_rand(rng) % 61);
    return r;
}

/*
 * n random requests of up to max_bytes into a poisoned buffer, read with e; every request's
 * bytes must equal the file's and every byte between the destinations must keep the poison.
 */
static void check_batch(gd__ioeng *e, uint64_t *rng, int n, int64_t max_bytes) {
    gd__ioeng_request *reqs = calloc((size_t)n, sizeof *reqs);
    int64_t cap = ((int64_t)n * (max_bytes + 8192) + 8192 + 4095) / 4096 * 4096, at = 0;
    unsigned char *buf = aligned_alloc(4096, (size_t)cap);
    unsigned char *want = malloc((size_t)cap);
    T_ASSERT(reqs && buf && want);
    memset(buf, 0xA5, (size_t)cap);
    memset(want, 0xA5, (size_t)cap);
    int64_t bytes = 0;
    for (int i = 0; i < n; i++) {
        if (i + 1 < n && t_rand(rng) % 16 == 0) {
            /* A row striped across the files: its first part ends file 0, its second begins
             * file 1, and they land side by side. */
            int64_t a = 1 + (int64_t)(t_rand(rng) % 3000), b = 1 + (int64_t)(t_rand(rng) % 3000);
            reqs[i] = (gd__ioeng_request){0, sizes[0] - a, a, buf + at};
            reqs[i + 1] = (gd__ioeng_request){1, 0, b, buf + at + a};
            memcpy(want + at, data[0] + sizes[0] - a, (size_t)a);
            memcpy(want + at + a, data[1], (size_t)b);
            at += a + b;
            bytes += a + b;
            i++;
            continue;
        }
        reqs[i] = random_request(rng, max_bytes, &at);
        reqs[i].dst = buf + at;
        memcpy(want + at, data[reqs[i].file] + reqs[i].offset, (size_t)reqs[i].length);
        at += reqs[i].length;
        bytes += reqs[i].length;
        T_ASSERT(at + max_bytes + 8192 <= cap);
    }
    gd__ioeng_stats before = GD__IOENG_STATS_INIT, after = GD__IOENG_STATS_INIT;
    gd__ioeng_stats_get(e, &before);
    T_OK(gd__ioeng_read(e, reqs, n));
    gd__ioeng_stats_get(e, &after);
    for (int64_t b = 0; b < cap; b++)
        if (buf[b] != want[b])
            T_FAIL_("%s, depth batch of %d: byte %lld of the destination is 0x%02x, expected "
                    "0x%02x",
                    gd__ioeng_backend_name(gd__ioeng_backend_of(e)), n, (long long)b, buf[b],
                    want[b]);
    T_EQ_INT(after.requests - before.requests, n);
    T_EQ_INT(after.bytes_requested - before.bytes_requested, bytes);
    T_ASSERT(after.bytes_read - before.bytes_read >= bytes);
    T_EQ_INT(after.batches - before.batches, 1);
    free(reqs);
    free(buf);
    free(want);
}

static void test_random_batches(gd__ioeng_backend backend, uint64_t *rng) {
    static const int depths[] = {1, 2, 7, 32, 128, 512};
    for (size_t d = 0; d < sizeof depths / sizeof depths[0]; d++) {
        int instances = d % 2 ? 1 : 1 + (int)(t_rand(rng) % 3);
        if (backend == GD__IOENG_THREADS && depths[d] == 512) instances = 1;
        gd__ioeng *e = open_engine(backend, depths[d], instances, 0);
        check_batch(e, rng, 64 + (int)(t_rand(rng) % 200), 4096);
        check_batch(e, rng, 40, 200 * 1024); /* spans of several bounce slots */
        check_batch(e, rng, 1, 4096);
        T_OK(gd__ioeng_read(e, NULL, 0));
        gd__ioeng_stats s = GD__IOENG_STATS_INIT;
        gd__ioeng_stats_get(e, &s);
        T_EQ_INT(s.batches, 4);
        T_ASSERT(s.reads >= s.bounced);
        gd__ioeng_close(e);
    }
}

/* The retry paths: every read short, every read first refused with EAGAIN then EINTR. */
static void test_retries(gd__ioeng_backend backend, uint64_t *rng) {
    int hooks[] = {GD__IOENG_TEST_SHORT, GD__IOENG_TEST_EAGAIN,
                   GD__IOENG_TEST_SHORT | GD__IOENG_TEST_EAGAIN};
    for (int h = 0; h < 3; h++) {
        gd__ioeng *e = open_engine(backend, 16, 1, hooks[h]);
        check_batch(e, rng, 100, 64 * 1024);
        gd__ioeng_stats s = GD__IOENG_STATS_INIT;
        gd__ioeng_stats_get(e, &s);
        T_ASSERT(s.retries > 0);
        T_ASSERT(s.reads > s.retries);
        gd__ioeng_close(e);
    }
}

/* O_DIRECT refused at open (as tmpfs once did): the files are read through the page cache. */
static void test_no_direct(gd__ioeng_backend backend, uint64_t *rng) {
    gd__ioeng *e = open_engine(backend, 8, 1, GD__IOENG_TEST_NO_DIRECT);
    for (int i = 0; i < NFILES; i++) T_EQ_INT(gd__ioeng_file_direct(e, i), 0);
    check_batch(e, rng, 50, 10000);
    gd__ioeng_stats s = GD__IOENG_STATS_INIT;
    gd__ioeng_stats_get(e, &s);
    T_EQ_INT(s.bounced, 0);
    gd__ioeng_close(e);
    e = open_engine(backend, 8, 1, 0);
    for (int i = 0; i < NFILES; i++) T_ASSERT(gd__ioeng_file_block(e, i) >= 1);
    gd__ioeng_close(e);
}

/* A file truncated after open: the request past its new end fails naming the file and the
 * offset; a later batch within the file still reads. */
static void test_truncated(gd__ioeng_backend backend) {
    char path[320];
    snprintf(path, sizeof path, "%s/truncated.bin", dir);
    write_file(path, data[0], sizes[0]);
    gd__ioeng_file f = {path, 0};
    gd__ioeng_options o = GD__IOENG_OPTIONS_INIT;
    o.backend = backend;
    gd__ioeng *e = NULL;
    T_OK(gd__ioeng_open(&f, 1, &o, &e));
    T_EQ_INT(truncate(path, 300000), 0);
    unsigned char *buf = aligned_alloc(4096, 2 * 65536);
    T_ASSERT(buf);
    /* A good request beside a bad one: past the new end, then across it. */
    gd__ioeng_request reqs[2] = {{0, 0, 4096, buf}};
    const int64_t bad[2][2] = {{400000, 8192}, {299000, 2000}};
    for (int i = 0; i < 2; i++) {
        char offset[64];
        reqs[1] = (gd__ioeng_request){0, bad[i][0], bad[i][1], buf + 65536};
        snprintf(offset, sizeof offset, "offset %lld", (long long)bad[i][0]);
        T_FAILS(gd__ioeng_read(e, reqs, 2), GD_ERR_IO, str(path));
        T_ASSERT(strstr(gd_last_error(), offset));
        T_ASSERT(strstr(gd_last_error(), "truncated"));
    }
    T_OK(gd__ioeng_read(e, reqs, 1));
    T_ASSERT(memcmp(buf, data[0], 4096) == 0);
    gd__ioeng_close(e);
    free(buf);
}

/* Paths that cannot be read: missing, a directory, and (not as root) a file without read
 * permission. */
static void test_unreadable(void) {
    char path[320];
    gd__ioeng *e = NULL;
    snprintf(path, sizeof path, "%s/missing.bin", dir);
    gd__ioeng_file f = {path, 0};
    T_FAILS(gd__ioeng_open(&f, 1, NULL, &e), GD_ERR_NOT_FOUND, str(path));
    T_ASSERT(e == NULL);
    f.path = dir;
    T_FAILS(gd__ioeng_open(&f, 1, NULL, &e), GD_ERR_IO, str(dir));
    gd__ioeng_file two[2] = {{paths[0], 0}, {paths[1], sizes[1] + data_offsets[1] + 1}};
    T_FAILS(gd__ioeng_open(two, 2, NULL, &e), GD_ERR_RANGE, str(paths[1]));
    if (geteuid() != 0) {
        snprintf(path, sizeof path, "%s/secret.bin", dir);
        write_file(path, data[0], 4096);
        T_EQ_INT(chmod(path, 0), 0);
        f.path = path;
        T_FAILS(gd__ioeng_open(&f, 1, NULL, &e), GD_ERR_IO, str(path));
        T_ASSERT(strstr(gd_last_error(), "ermission"));
    } else {
        fprintf(stderr, "root: the file without read permission is not tried\n");
    }
}

/* Bad options and requests fail before anything is read. */
static void test_bad_arguments(void) {
    gd__ioeng *e = NULL;
    gd__ioeng_file f = {paths[1], data_offsets[1]};
    gd__ioeng_options o = GD__IOENG_OPTIONS_INIT;
    o.queue_depth = 0;
    T_FAILS(gd__ioeng_open(&f, 1, &o, &e), GD_ERR_INVALID_ARG, "queue depth 0");
    o = (gd__ioeng_options)GD__IOENG_OPTIONS_INIT;
    o.instances = GD__IOENG_MAX_INSTANCES + 1;
    T_FAILS(gd__ioeng_open(&f, 1, &o, &e), GD_ERR_INVALID_ARG, "instances");
    T_FAILS(gd__ioeng_open(&f, 0, NULL, &e), GD_ERR_INVALID_ARG, "no files");
    if (!have_uring) {
        o = (gd__ioeng_options)GD__IOENG_OPTIONS_INIT;
        o.backend = GD__IOENG_URING;
        T_FAILS(gd__ioeng_open(&f, 1, &o, &e), GD_ERR_UNSUPPORTED, "io_uring");
    }
    T_OK(gd__ioeng_open(&f, 1, NULL, &e));
    unsigned char buf[64];
    gd__ioeng_request r = {0, sizes[1] - 10, 11, buf};
    T_FAILS(gd__ioeng_read(e, &r, 1), GD_ERR_RANGE, str(paths[1]));
    r = (gd__ioeng_request){1, 0, 8, buf};
    T_FAILS(gd__ioeng_read(e, &r, 1), GD_ERR_INVALID_ARG, "file 1");
    r = (gd__ioeng_request){0, -1, 8, buf};
    T_FAILS(gd__ioeng_read(e, &r, 1), GD_ERR_RANGE, "request 0");
    r = (gd__ioeng_request){0, 0, 8, NULL};
    T_FAILS(gd__ioeng_read(e, &r, 1), GD_ERR_INVALID_ARG, "destination");
    r = (gd__ioeng_request){0, 5, 8, buf};
    T_OK(gd__ioeng_submit(e, &r, 1));
    T_FAILS(gd__ioeng_submit(e, &r, 1), GD_ERR_INVALID_ARG, "waited");
    T_OK(gd__ioeng_wait(e));
    T_ASSERT(memcmp(buf, data[1] + 5, 8) == 0);
    gd__ioeng_close(e);
    gd__ioeng_close(NULL);
}

/* Open the engine and read a small batch (one unaligned request, one aligned). */
/*
 * gd__ioeng_read_rows: increasing rows of one file (every row, dense, sparse, one, the last)
 * at row sizes from 1 byte to more than a span, each row equal to the file's and nothing
 * written between them; dense rows take fewer reads than rows; rows out of order, repeated or
 * out of range are refused before anything is read.
 */
static void check_rows(gd__ioeng *e, int file, int64_t rb, int64_t n, const int64_t *rows,
                       const char *what) {
    unsigned char *out = malloc((size_t)(n * rb + 64));
    T_ASSERT(out);
    memset(out, 0x5A, (size_t)(n * rb + 64));
    gd__ioeng_stats before = GD__IOENG_STATS_INIT, after = GD__IOENG_STATS_INIT;
    gd__ioeng_stats_get(e, &before);
    T_OK(gd__ioeng_read_rows(e, file, rows, n, rb, out));
    gd__ioeng_stats_get(e, &after);
    for (int64_t i = 0; i < n; i++)
        if (memcmp(out + i * rb, data[file] + rows[i] * rb, (size_t)rb) != 0)
            T_FAIL_("%s: file %d, %lld-byte row %lld (position %lld of %lld) differs from the "
                    "file",
                    what, file, (long long)rb, (long long)rows[i], (long long)i, (long long)n);
    for (int b = 0; b < 64; b++) T_EQ_INT(out[n * rb + b], 0x5A);
    /* One request per span: never more than the rows, fewer where they lie close together. */
    const int64_t reqs = after.requests - before.requests;
    T_ASSERT(reqs >= 1 && reqs <= n);
    if (n >= 100 && rows[n - 1] - rows[0] < 2 * n && rb <= 4096) T_ASSERT(reqs * 10 <= n);
    free(out);
}

static void test_rows(gd__ioeng_backend backend, uint64_t *rng, int faults) {
    static const int64_t widths[] = {1, 100, 256, 512, 4096, 5000, 300000};
    gd__ioeng *e = open_engine(backend, 1 + (int)(t_rand(rng) % 64), 1, faults);
    for (int file = 0; file < NFILES; file++)
        for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++) {
            const int64_t rb = widths[wi], have = sizes[file] / rb;
            int64_t *rows = malloc(sizeof *rows * (size_t)have);
            T_ASSERT(rows);
            for (int kind = 0; kind < 5; kind++) {
                /* every row, about half, about 1 in 50, one random row, the last row */
                const uint64_t keep = kind == 1 ? 2 : kind == 2 ? 50 : 1;
                int64_t n = 0;
                if (kind >= 3) {
                    rows[n++] = kind == 4 ? have - 1 : (int64_t)(t_rand(rng) % (uint64_t)have);
                } else {
                    for (int64_t r = 0; r < have; r++)
                        if (keep == 1 || t_rand(rng) % keep == 0) rows[n++] = r;
                    if (n == 0) rows[n++] = have - 1;
                }
                char what[96];
                snprintf(what, sizeof what, "%s, rows kind %d", gd__ioeng_backend_name(backend),
                         kind);
                check_rows(e, file, rb, n, rows, what);
            }
            free(rows);
        }
    if (faults == 0) {
        /* Refusals: out of order, repeated, out of range, a bad file; nothing is read. */
        const int64_t have = sizes[1] / 100;
        const int64_t bad[4][2] = {{5, 4}, {5, 5}, {0, have}, {-1, 3}};
        const char *why[4] = {"not above", "not above", "outside", "outside"};
        unsigned char out[200];
        gd__ioeng_stats before = GD__IOENG_STATS_INIT, after = GD__IOENG_STATS_INIT;
        gd__ioeng_stats_get(e, &before);
        for (int k = 0; k < 4; k++)
            T_FAILS(gd__ioeng_read_rows(e, 1, bad[k], 2, 100, out), GD_ERR_INVALID_ARG,
                    str(why[k]));
        T_FAILS(gd__ioeng_read_rows(e, NFILES, bad[0], 1, 100, out), GD_ERR_INVALID_ARG,
                "a file of it");
        T_FAILS(gd__ioeng_read_rows(e, 0, bad[0], 1, 0, out), GD_ERR_INVALID_ARG, "row bytes");
        gd__ioeng_stats_get(e, &after);
        T_EQ_INT(after.batches, before.batches);
        T_OK(gd__ioeng_read_rows(e, 0, NULL, 0, 100, NULL));
    }
    gd__ioeng_close(e);
}

/* Rows of 300 bytes of file 1 that the fault walk reads with gd__ioeng_read_rows as well:
 * spread so that they take several spans (the gaps pass GD__IOENG_ROWS_GAP_BYTES). */
#define FAULT_ROWS 40
static int64_t fault_rows[FAULT_ROWS];

static gd_status open_and_read(gd__ioeng_backend backend, unsigned char *buf) {
    gd__ioeng_file files[NFILES];
    for (int i = 0; i < NFILES; i++) files[i] = (gd__ioeng_file){paths[i], data_offsets[i]};
    gd__ioeng_options o = GD__IOENG_OPTIONS_INIT;
    o.backend = backend;
    o.queue_depth = 1;
    gd__ioeng *e = NULL;
    gd_status st = gd__ioeng_open(files, NFILES, &o, &e);
    if (st != GD_OK) return st;
    gd__ioeng_request reqs[2] = {{0, 1000, 70000, buf}, {1, 8192, 8192, buf + 73728}};
    st = gd__ioeng_read(e, reqs, 2);
    if (st == GD_OK) st = gd__ioeng_read_rows(e, 1, fault_rows, FAULT_ROWS, 300, buf + 90000);
    gd__ioeng_close(e);
    return st;
}

/* Every read, then every allocation, failing in turn: a clean error, nothing leaked. */
static void test_faults(gd__ioeng_backend backend) {
    for (int i = 0; i < FAULT_ROWS; i++) fault_rows[i] = i < 30 ? 3 * i : 100 + 200 * (i - 30);
    T_ASSERT(fault_rows[FAULT_ROWS - 1] * 300 + 300 <= sizes[1]);
    unsigned char *buf = aligned_alloc(4096, 2 * 73728);
    T_ASSERT(buf);
    for (int kind = GD_FAULT_ALLOC; kind <= GD_FAULT_READ; kind++) {
        gd_fault_set(kind, 0);
        T_OK(open_and_read(backend, buf));
        int64_t calls = gd_fault_calls(kind);
        T_ASSERT(calls > 0);
        for (int64_t n = 1; n <= calls; n++) {
            int64_t blocks, bytes;
            gd_alloc_stats(&blocks, &bytes);
            gd_fault_set(kind, n);
            gd_status st = open_and_read(backend, buf);
            gd_fault_set(kind, 0);
            if (st == GD_OK) T_FAIL_("fault %d of %lld (kind %d) was not reported", (int)n,
                                     (long long)calls, kind);
            T_EQ_INT(st, kind == GD_FAULT_READ ? GD_ERR_IO : GD_ERR_NO_MEMORY);
            if (kind == GD_FAULT_READ) T_ASSERT(strstr(gd_last_error(), "injected fault"));
            t_same_live(blocks, bytes, "ioeng fault walk", n);
        }
    }
    T_OK(open_and_read(backend, buf));
    T_ASSERT(memcmp(buf, data[0] + 1000, 70000) == 0);
    T_ASSERT(memcmp(buf + 73728, data[1] + 8192, 8192) == 0);
    for (int i = 0; i < FAULT_ROWS; i++)
        T_ASSERT(memcmp(buf + 90000 + i * 300, data[1] + fault_rows[i] * 300, 300) == 0);
    free(buf);
}

/*
 * The queue depth of Little's law: the rule on hand-made rates (the smallest depth within 5 %
 * of the best; a plateau; a rate that falls at depth), and the probe on a real file with each
 * backend: a probed depth, a rate for each depth it read at, and its refusals.
 */
static void test_depth(gd__ioeng_backend backend) {
    const int depths[6] = {1, 4, 16, 64, 256, 1024};
    const double rising[6] = {10, 35, 90, 96, 99, 100}, falling[6] = {10, 50, 80, 60, 40, 30},
                 flat[6] = {100, 100, 100, 100, 100, 100};
    T_EQ_INT(gd__ioeng_pick_depth(depths, rising, 6), 64);
    T_EQ_INT(gd__ioeng_pick_depth(depths, falling, 6), 16);
    T_EQ_INT(gd__ioeng_pick_depth(depths, flat, 6), 1);
    T_EQ_INT(gd__ioeng_pick_depth(depths, rising, 1), 1);
    gd__ioeng_options o = GD__IOENG_OPTIONS_INIT;
    o.backend = backend;
    o.instances = 2; /* the thread backend then stops before 2 x 1024 threads */
    int depth = 0;
    double rates[GD__IOENG_PROBE_DEPTHS];
    T_OK(gd__ioeng_probe_depth(paths[1], data_offsets[1], 4096, &o, 0.05, 7, &depth, rates));
    int probed = 0, found = 0;
    for (int k = 0; k < GD__IOENG_PROBE_DEPTHS; k++) {
        if (rates[k] <= 0) continue;
        probed++;
        found |= depths[k] == depth;
    }
    T_ASSERT(probed >= 1 && found);
    /* The thread backend stops where it would need more than its threads. */
    if (backend == GD__IOENG_THREADS) T_EQ_INT(rates[GD__IOENG_PROBE_DEPTHS - 1] > 0, 0);
    fprintf(stderr, "  depth probe (%s): depth %d of %d probed\n", gd__ioeng_backend_name(backend),
            depth, probed);
    T_FAILS(gd__ioeng_probe_depth(paths[1], data_offsets[1], 0, &o, 0.05, 7, &depth, NULL),
            GD_ERR_INVALID_ARG, "size");
    T_FAILS(gd__ioeng_probe_depth(paths[1], data_offsets[1], sizes[1] + 4096, &o, 0.05, 7, &depth,
                                  NULL),
            GD_ERR_INVALID_ARG, "too few");
}

int main(void) {
    uint64_t rng = t_seed();
    t_tmpdir(dir, sizeof dir);
    make_files(&rng);
    gd__ioeng_file f = {paths[0], 0};
    gd__ioeng_options o = GD__IOENG_OPTIONS_INIT;
    o.backend = GD__IOENG_URING;
    gd__ioeng *e = NULL;
    gd_status st = gd__ioeng_open(&f, 1, &o, &e);
    have_uring = st == GD_OK;
    if (!have_uring)
        fprintf(stderr, "io_uring backend unavailable, testing the pread threads only: %s\n",
                gd_last_error());
    gd__ioeng_close(e);
    for (int b = GD__IOENG_URING; b <= GD__IOENG_THREADS; b++) {
        if (b == GD__IOENG_URING && !have_uring) continue;
        fprintf(stderr, "backend %s\n", gd__ioeng_backend_name(b));
        test_random_batches(b, &rng);
        test_retries(b, &rng);
        test_rows(b, &rng, 0);
        test_rows(b, &rng, GD__IOENG_TEST_SHORT | GD__IOENG_TEST_EAGAIN);
        test_rows(b, &rng, GD__IOENG_TEST_NO_DIRECT);
        test_no_direct(b, &rng);
        test_truncated(b);
        test_faults(b);
        test_depth(b);
    }
    test_unreadable();
    test_bad_arguments();
    for (int i = 0; i < NFILES; i++) free(data[i]);
    t_rmtree(dir);
    t_check_no_leaks();
    printf("test_ioeng: ok (%s)\n", have_uring ? "io_uring and threads" : "threads only");
    return 0;
}
