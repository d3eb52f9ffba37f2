/*
 * `graphdirect bench disk`: the raw random-read ceiling of a disk, the number the SSD tier is
 * measured against (issue 16, docs/bench.md). Random reads of one size (4 KiB by default, a
 * list with --read-size) at uniformly drawn offsets aligned to the read size, through the SSD
 * tier's own I/O engine (src/io/ioeng.h) with O_DIRECT, at queue depths 1, 32, 128 and 512, on
 * each backend (io_uring and the pread threads): IOPS, GB/s, the mean latency by Little's law
 * (depth / IOPS) and the CPU cores the process used meanwhile.
 *
 * The file is --file PATH when it exists (read only, never written), else a file of --size bytes
 * of random data (8 GiB by default, made smaller when the disk lacks the space, and said so)
 * written first, at PATH or in --dir, and removed at the end. The reads' destinations are one
 * aligned host buffer of at most 256 MiB, reused round-robin: the data is not looked at.
 */
#include "bench.h"
#include "cli.h"
#include "io/ioeng.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define MAX_POINTS 16
#define DEST_BYTES ((int64_t)256 << 20)
#define WRITE_CHUNK ((size_t)8 << 20)
/* Free space left beside a generated file. */
#define SPARE_BYTES ((int64_t)1 << 30)

static const char cmd[] = "bench disk";

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

typedef struct {
    bench_options opt;
    const char *file, *dir;
    int64_t size;
    int64_t read_sizes[MAX_POINTS], depths[MAX_POINTS];
    int nread_sizes, ndepths;
    int backends[GD__IOENG_BACKEND_COUNT], nbackends;
    double seconds;
    int sizes_given, depths_given, seconds_given, size_given;
    int64_t rows;        /* --rows: row bytes of the rows section (0: none) */
    double rows_fraction; /* --rows-fraction */
} disk_bench;

/* The file under test. */
typedef struct {
    char path[4096];
    int64_t size;
    int generated;     /* written by this run (and removed at its end) */
    char reduced[4400];/* why the generated file is smaller than asked, or "" */
} disk_file;

static void help(void) {
    printf("usage: graphdirect bench disk [options]\n\n"
           "The raw random-read ceiling of a disk, through the SSD tier's I/O engine with\n"
           "O_DIRECT: IOPS and GB/s per queue depth and backend (io_uring, pread threads).\n\n"
           "options:\n"
           "  --file PATH        read PATH when it exists (never written); otherwise write it\n"
           "                     (--size bytes), measure and remove it\n"
           "  --dir DIR          where the generated file goes without --file (default: TMPDIR,\n"
           "                     else /var/tmp)\n"
           "  --size S           bytes of the generated file (default 8Gi; smaller, with a\n"
           "                     note, when the disk lacks the space)\n"
           "  --read-size LIST   bytes per read (default 4Ki; e.g. 512,4Ki,16Ki,64Ki)\n"
           "  --depths LIST      queue depths (default 1,32,128,512)\n"
           "  --backends LIST    io_uring and/or threads (default both; io_uring when built)\n"
           "  --seconds S        timed seconds per point (default 5)\n"
           "  --rows B           also read a random set of the file's B-byte rows two ways, a\n"
           "                     read per row (depth 128) and covering spans (the disk tier's\n"
           "                     host-buffer fill), over at most 512 MiB of rows\n"
           "  --rows-fraction F  the share of the rows in that set (default 0.2)\n"
           "  --quick            a smoke test: 64 MiB file, depths 1,32, 0.3 s a point\n"
           "  --seed N, --json FILE, --commit TEXT\n");
}

static int parse_backends(disk_bench *b, const char *arg) {
    static const char *const names[2] = {"io_uring", "threads"};
    static const int ids[2] = {GD__IOENG_URING, GD__IOENG_THREADS};
    int idx[2];
    int rc = bench_parse_names(cmd, "--backends", arg, names, 2, idx, &b->nbackends);
    for (int i = 0; i < b->nbackends; i++) b->backends[i] = ids[idx[i]];
    return rc;
}

static int own_option(void *self, int c, const char *arg) {
    disk_bench *b = self;
    int n;
    switch (c) {
    case 'f':
        b->file = arg;
        return 0;
    case 'd':
        b->dir = arg;
        return 0;
    case 'S':
        b->size_given = 1;
        return bench_parse_list("--size", arg, &b->size, 1, &n) ? CLI_EXIT_USAGE : 0;
    case 'r':
        b->sizes_given = 1;
        if (bench_parse_list("--read-size", arg, b->read_sizes, MAX_POINTS, &b->nread_sizes))
            return CLI_EXIT_USAGE;
        for (int i = 0; i < b->nread_sizes; i++)
            if (b->read_sizes[i] > GD__IOENG_BOUNCE_BYTES * 256)
                return cli_usage_error(cmd, "--read-size %lld is above 16 MiB",
                                       (long long)b->read_sizes[i]);
        return 0;
    case 'q':
        b->depths_given = 1;
        if (bench_parse_list("--depths", arg, b->depths, MAX_POINTS, &b->ndepths))
            return CLI_EXIT_USAGE;
        for (int i = 0; i < b->ndepths; i++)
            if (b->depths[i] > GD__IOENG_MAX_DEPTH)
                return cli_usage_error(cmd, "--depths: %lld is above %d",
                                       (long long)b->depths[i], GD__IOENG_MAX_DEPTH);
        return 0;
    case 'b':
        return parse_backends(b, arg);
    case 'R':
        if (bench_parse_list("--rows", arg, &b->rows, 1, &n) || b->rows < 1 ||
            b->rows > ((int64_t)1 << 24))
            return cli_usage_error(cmd, "--rows '%s' is not a row size of 1 B to 16 MiB", arg);
        return 0;
    case 'F':
        if (cli_parse_double(arg, &b->rows_fraction) ||
            !(b->rows_fraction > 0 && b->rows_fraction <= 1))
            return cli_usage_error(cmd, "--rows-fraction '%s' is not in (0, 1]", arg);
        return 0;
    case 's':
        b->seconds_given = 1;
        if (cli_parse_double(arg, &b->seconds) || !(b->seconds > 0 && b->seconds <= 3600))
            return cli_usage_error(cmd, "--seconds '%s' is not in (0, 3600]", arg);
        return 0;
    default:
        return -1;
    }
}

/* ------------------------------------------------------------ the file */

/* Shrink f->size to what the file system at dir can hold beside SPARE_BYTES, saying so. */
static int fit_free_space(const char *dir, disk_file *f) {
    struct statvfs vfs;
    BENCH_REQUIRE(statvfs(dir, &vfs) == 0, "cannot read the free space of '%s': %s", dir,
                  strerror(errno));
    int64_t avail = (int64_t)vfs.f_bavail * (int64_t)vfs.f_frsize;
    if (avail - SPARE_BYTES >= f->size) return 0;
    int64_t fit = (avail - SPARE_BYTES) / 2 / (1 << 20) * (1 << 20);
    BENCH_REQUIRE(fit >= (64 << 20),
                  "'%s' has %.2f GiB free: too little for a file of at least 64 MiB beside 1 "
                  "GiB to spare; free some space or name another place with --dir or --file",
                  dir, avail / 1073741824.0);
    snprintf(f->reduced, sizeof f->reduced,
             "%.2f GiB asked for, but '%s' has %.2f GiB free: %.2f GiB written instead",
             f->size / 1073741824.0, dir, avail / 1073741824.0, fit / 1073741824.0);
    fprintf(stderr, "disk: note: %s\n", f->reduced);
    f->size = fit;
    return 0;
fail:
    return -1;
}

/* Write f->size bytes of random data to f->path and flush them (sparse or repeated data would
 * let a disk or a file system answer without reading). */
static int write_file(disk_file *f, uint64_t seed) {
    int rc = -1;
    unsigned char *chunk = malloc(WRITE_CHUNK);
    int fd = open(f->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    BENCH_REQUIRE(chunk, "out of memory allocating %zu bytes", WRITE_CHUNK);
    BENCH_REQUIRE(fd >= 0, "cannot create '%s': %s", f->path, strerror(errno));
    f->generated = 1;
    const double t0 = bench_now();
    for (int64_t at = 0; at < f->size; at += (int64_t)WRITE_CHUNK) {
        BENCH_REQUIRE(!cli_interrupted(), "interrupted while writing '%s'", f->path);
        uint64_t *w = (uint64_t *)chunk;
        for (size_t i = 0; i < WRITE_CHUNK / 8; i++) w[i] = bench_mix64(seed ^ (uint64_t)at ^ i);
        size_t n = (size_t)min64((int64_t)WRITE_CHUNK, f->size - at);
        BENCH_REQUIRE(cli_write_all(fd, chunk, n) == 0, "cannot write '%s' at byte %lld: %s",
                      f->path, (long long)at, strerror(errno));
    }
    BENCH_REQUIRE(fsync(fd) == 0, "cannot flush '%s': %s", f->path, strerror(errno));
    /* Its pages leave the page cache, so that even a buffered fallback starts cold. */
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    const double s = bench_now() - t0;
    fprintf(stderr, "disk: wrote %.2f GiB in %.1f s (%.2f GB/s)\n", f->size / 1073741824.0, s,
            f->size / s / 1e9);
    rc = 0;
fail:
    if (fd >= 0) close(fd);
    free(chunk);
    return rc;
}

/* The file under test: --file when it exists, else one written now. */
static int prepare_file(const disk_bench *b, disk_file *f) {
    struct stat sb;
    f->size = b->size;
    if (b->file && stat(b->file, &sb) == 0) {
        snprintf(f->path, sizeof f->path, "%s", b->file);
        if (S_ISREG(sb.st_mode)) f->size = (int64_t)sb.st_size;
        if (S_ISBLK(sb.st_mode)) f->size = -1; /* the engine reads the device's size */
        fprintf(stderr, "disk: reading '%s' (not written)\n", f->path);
        return 0;
    }
    char dir[3072];
    if (b->file) {
        snprintf(f->path, sizeof f->path, "%s", b->file);
        snprintf(dir, sizeof dir, "%s", b->file);
        char *slash = strrchr(dir, '/');
        if (!slash) snprintf(dir, sizeof dir, ".");
        else if (slash == dir) dir[1] = '\0';
        else *slash = '\0';
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s", b->dir ? b->dir : tmp && *tmp ? tmp : "/var/tmp");
        snprintf(f->path, sizeof f->path, "%s/graphdirect-disk.%ld.bin", dir, (long)getpid());
    }
    if (fit_free_space(dir, f)) return -1;
    fprintf(stderr, "disk: writing %.2f GiB of random data to '%s'\n", f->size / 1073741824.0,
            f->path);
    return write_file(f, b->opt.seed);
}

/* ------------------------------------------------------------ measuring */

typedef struct {
    int backend;
    int64_t read_bytes, depth, reads, bytes, bounced;
    double seconds, cpu_s;
} disk_point;

/* The next batch: n reads of p->read_bytes at random offsets aligned to the read size (or to
 * the block, for a read size that is not a multiple of it). */
static void draw_batch(gd__ioeng_request *reqs, int64_t n, const disk_point *p, int64_t size,
                       int64_t align, unsigned char *dst, int64_t slots, uint64_t *counter,
                       uint64_t seed) {
    int64_t places = (size - p->read_bytes) / align + 1;
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = bench_mix64(seed ^ bench_mix64((*counter)++));
        reqs[i] = (gd__ioeng_request){0, bench_below(r, places) * align, p->read_bytes,
                                      dst + (i % slots) * p->read_bytes};
    }
}

/* Measure one point with engine e: one warm-up batch, then batches until b->seconds pass. */
static int measure(const disk_bench *b, gd__ioeng *e, disk_point *p, unsigned char *dst) {
    int rc = -1;
    int64_t n = max64(64, 8 * p->depth);
    int64_t slots = min64(n, DEST_BYTES / p->read_bytes);
    int64_t size = gd__ioeng_file_size(e, 0), block = gd__ioeng_file_block(e, 0);
    int64_t align = p->read_bytes % block == 0 ? p->read_bytes : block;
    uint64_t counter = 0;
    gd__ioeng_request *reqs = calloc((size_t)n, sizeof *reqs);
    BENCH_REQUIRE(reqs, "out of memory allocating %lld requests", (long long)n);
    BENCH_REQUIRE(size >= p->read_bytes, "the file (%lld bytes) is smaller than one read",
                  (long long)size);
    draw_batch(reqs, n, p, size, align, dst, slots, &counter, b->opt.seed);
    BENCH_GD(gd__ioeng_read(e, reqs, n), "the warm-up reads");
    gd__ioeng_stats_reset(e);
    const double t0 = bench_now(), c0 = bench_cpu_seconds();
    do {
        BENCH_REQUIRE(!cli_interrupted(), "interrupted");
        draw_batch(reqs, n, p, size, align, dst, slots, &counter, b->opt.seed);
        BENCH_GD(gd__ioeng_read(e, reqs, n), "reading the disk");
    } while (bench_now() - t0 < b->seconds);
    p->seconds = bench_now() - t0;
    p->cpu_s = bench_cpu_seconds() - c0;
    gd__ioeng_stats s = GD__IOENG_STATS_INIT;
    gd__ioeng_stats_get(e, &s);
    p->reads = s.requests;
    p->bytes = s.bytes_requested;
    p->bounced = s.bounced;
    rc = 0;
fail:
    free(reqs);
    return rc;
}

static int add_point(cJSON *points, const disk_point *p) {
    cJSON *o = cJSON_CreateObject();
    BENCH_JSON(o && cJSON_AddItemToArray(points, o));
    double iops = (double)p->reads / p->seconds;
    BENCH_JSON(cJSON_AddStringToObject(o, "backend", gd__ioeng_backend_name(p->backend)));
    BENCH_JSON(cJSON_AddNumberToObject(o, "read_bytes", (double)p->read_bytes));
    BENCH_JSON(cJSON_AddNumberToObject(o, "depth", (double)p->depth));
    BENCH_JSON(cJSON_AddNumberToObject(o, "reads", (double)p->reads));
    BENCH_JSON(cJSON_AddNumberToObject(o, "seconds", p->seconds));
    BENCH_JSON(cJSON_AddNumberToObject(o, "iops", iops));
    BENCH_JSON(cJSON_AddNumberToObject(o, "gbps", (double)p->bytes / p->seconds / 1e9));
    BENCH_JSON(cJSON_AddNumberToObject(o, "latency_us", (double)p->depth / iops * 1e6));
    BENCH_JSON(cJSON_AddNumberToObject(o, "cpu_cores", p->cpu_s / p->seconds));
    BENCH_JSON(cJSON_AddNumberToObject(o, "bounced", (double)p->bounced));
    return 0;
fail:
    return -1;
}

/*
 * Every point of one backend: an engine per depth. 1 when the backend is not available (its
 * reason printed, nothing measured), 0 when measured, -1 on failure.
 */
static int run_backend(const disk_bench *b, const disk_file *f, int backend, cJSON *root,
                       cJSON *points, unsigned char *dst) {
    int rc = -1;
    gd__ioeng *e = NULL;
    for (int d = 0; d < b->ndepths; d++) {
        gd__ioeng_file file = {f->path, 0};
        gd__ioeng_options o = GD__IOENG_OPTIONS_INIT;
        o.backend = (gd__ioeng_backend)backend;
        o.queue_depth = (int)b->depths[d];
        gd_status st = gd__ioeng_open(&file, 1, &o, &e);
        if (st == GD_ERR_UNSUPPORTED) {
            fprintf(stderr, "disk: backend %s skipped: %s\n", gd__ioeng_backend_name(backend),
                    gd_last_error());
            return 1;
        }
        BENCH_GD(st, "opening the disk's file");
        if (!cJSON_GetObjectItem(root, "direct")) {
            BENCH_JSON(cJSON_AddBoolToObject(root, "direct", gd__ioeng_file_direct(e, 0)));
            BENCH_JSON(cJSON_AddNumberToObject(root, "logical_block", gd__ioeng_file_block(e, 0)));
            BENCH_JSON(cJSON_AddNumberToObject(root, "file_bytes", gd__ioeng_file_size(e, 0)));
            printf("file %s: %.2f GiB%s, %s, logical block %lld B\n", f->path,
                   gd__ioeng_file_size(e, 0) / 1073741824.0, f->generated ? " (generated)" : "",
                   gd__ioeng_file_direct(e, 0) ? "O_DIRECT" : "page cache (O_DIRECT refused)",
                   (long long)gd__ioeng_file_block(e, 0));
            printf("\n%-9s %8s %6s %10s %8s %11s %10s\n", "backend", "read", "depth", "IOPS",
                   "GB/s", "latency us", "cpu cores");
        }
        for (int r = 0; r < b->nread_sizes; r++) {
            disk_point p = {backend, b->read_sizes[r], b->depths[d], 0, 0, 0, 0, 0};
            if (measure(b, e, &p, dst)) goto fail;
            char rb[32];
            double iops = (double)p.reads / p.seconds;
            printf("%-9s %8s %6lld %10.0f %8.3f %11.1f %10.2f\n", gd__ioeng_backend_name(backend),
                   bench_count_text(p.read_bytes, rb, sizeof rb), (long long)p.depth, iops,
                   (double)p.bytes / p.seconds / 1e9, (double)p.depth / iops * 1e6,
                   p.cpu_s / p.seconds);
            fflush(stdout);
            if (add_point(points, &p)) goto fail;
        }
        gd__ioeng_close(e);
        e = NULL;
    }
    rc = 0;
fail:
    gd__ioeng_close(e);
    return rc;
}

/*
 * --rows: a random set of the file's rows (each row kept with probability rows_fraction, over
 * the first rows that hold at most 512 MiB of the set), read with one request a row (batches of
 * 65536 at depth 128, as the disk tier filled its host buffer before s10) and with
 * gd__ioeng_read_rows' covering spans (as it fills it now); both copies compared byte for
 * byte. Prints and records the time and the rows' GB/s each way.
 */
static int rows_section(const disk_bench *b, const disk_file *f, cJSON *root) {
    int rc = -1;
    gd__ioeng *e = NULL;
    int64_t *rows = NULL;
    unsigned char *per = NULL, *span = NULL;
    gd__ioeng_request *reqs = NULL;
    const int64_t rb = b->rows, B = 65536;
    gd__ioeng_file file = {f->path, 0};
    gd__ioeng_options o = GD__IOENG_OPTIONS_INIT;
    gd_status st = GD_ERR_UNSUPPORTED;
    /* The first backend asked for that this build and kernel run. */
    for (int k = 0; k < b->nbackends && st == GD_ERR_UNSUPPORTED; k++) {
        o.backend = (gd__ioeng_backend)b->backends[k];
        st = gd__ioeng_open(&file, 1, &o, &e);
    }
    BENCH_GD(st, "opening the disk's file");
    const int64_t all = gd__ioeng_file_size(e, 0) / rb;
    int64_t domain = (int64_t)((double)((int64_t)512 << 20) / ((double)rb * b->rows_fraction));
    if (domain > all) domain = all;
    BENCH_REQUIRE(domain > 0, "--rows %lld: the file holds no such row", (long long)rb);
    rows = malloc(sizeof *rows * (size_t)domain);
    BENCH_REQUIRE(rows, "out of memory for %lld row ids", (long long)domain);
    int64_t n = 0;
    uint64_t x = b->opt.seed * 0x9E3779B97F4A7C15ull + 1;
    for (int64_t r = 0; r < domain; r++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        if ((double)(x >> 11) * 0x1.0p-53 < b->rows_fraction) rows[n++] = r;
    }
    BENCH_REQUIRE(n > 0, "--rows: the set is empty; raise --rows-fraction");
    per = aligned_alloc(4096, (size_t)((n * rb + 4095) / 4096 * 4096));
    span = aligned_alloc(4096, (size_t)((n * rb + 4095) / 4096 * 4096));
    reqs = malloc(sizeof *reqs * (size_t)(n < B ? n : B));
    BENCH_REQUIRE(per && span && reqs, "out of memory for %lld rows", (long long)n);
    double t0 = bench_now();
    for (int64_t lo = 0; lo < n; lo += B) {
        const int64_t k = n - lo < B ? n - lo : B;
        for (int64_t i = 0; i < k; i++)
            reqs[i] = (gd__ioeng_request){0, rows[lo + i] * rb, rb, per + (lo + i) * rb};
        BENCH_GD(gd__ioeng_read(e, reqs, k), "reading the rows one by one");
    }
    const double t_per = bench_now() - t0;
    gd__ioeng_stats_reset(e);
    t0 = bench_now();
    BENCH_GD(gd__ioeng_read_rows(e, 0, rows, n, rb, span), "reading the rows as spans");
    const double t_span = bench_now() - t0;
    gd__ioeng_stats io = GD__IOENG_STATS_INIT;
    gd__ioeng_stats_get(e, &io);
    BENCH_REQUIRE(memcmp(per, span, (size_t)(n * rb)) == 0,
                  "the rows read as spans differ from the rows read one by one");
    const double gb = (double)(n * rb) / 1e9;
    printf("\nrows (%s): %lld random %lld-byte rows (%.2f of the first %lld rows, %.2f GB): a "
           "read a row %.2f s (%.3f GB/s of rows), covering spans %.2f s (%.3f GB/s; %lld "
           "reads, %.2f GB read): %.1fx\n",
           gd__ioeng_backend_name(gd__ioeng_backend_of(e)), (long long)n, (long long)rb,
           b->rows_fraction, (long long)domain, gb, t_per,
           gb / t_per, t_span, gb / t_span, (long long)io.requests, (double)io.bytes_read / 1e9,
           t_per / t_span);
    cJSON *j = cJSON_AddObjectToObject(root, "rows");
    BENCH_JSON(j);
    BENCH_JSON(cJSON_AddNumberToObject(j, "row_bytes", (double)rb));
    BENCH_JSON(cJSON_AddNumberToObject(j, "rows", (double)n));
    BENCH_JSON(cJSON_AddNumberToObject(j, "domain_rows", (double)domain));
    BENCH_JSON(cJSON_AddNumberToObject(j, "per_row_seconds", t_per));
    BENCH_JSON(cJSON_AddNumberToObject(j, "spans_seconds", t_span));
    BENCH_JSON(cJSON_AddNumberToObject(j, "spans_reads", (double)io.requests));
    BENCH_JSON(cJSON_AddNumberToObject(j, "spans_bytes_read", (double)io.bytes_read));
    rc = 0;
fail:
    gd__ioeng_close(e);
    free(rows);
    free(per);
    free(span);
    free(reqs);
    return rc;
}

/* The best GB/s per read size over every point: the ceiling the SSD tier is held to. */
static int add_ceilings(cJSON *root, cJSON *points) {
    cJSON *ceil = cJSON_AddArrayToObject(root, "ceiling");
    BENCH_JSON(ceil);
    printf("\nceiling (best of every depth and backend):\n");
    cJSON *p;
    cJSON_ArrayForEach(p, points) {
        double rb = cJSON_GetObjectItem(p, "read_bytes")->valuedouble;
        cJSON *best = p, *q;
        cJSON_ArrayForEach(q, points) {
            if (cJSON_GetObjectItem(q, "read_bytes")->valuedouble == rb &&
                cJSON_GetObjectItem(q, "gbps")->valuedouble >
                    cJSON_GetObjectItem(best, "gbps")->valuedouble)
                best = q;
        }
        int seen = 0;
        cJSON_ArrayForEach(q, ceil) seen |= cJSON_GetObjectItem(q, "read_bytes")->valuedouble == rb;
        if (seen) continue;
        cJSON *dup = cJSON_Duplicate(best, 1);
        BENCH_JSON(dup && cJSON_AddItemToArray(ceil, dup));
        char t[32];
        printf("  %s reads: %.0f IOPS, %.3f GB/s (%s, depth %.0f)\n",
               bench_count_text((int64_t)rb, t, sizeof t),
               cJSON_GetObjectItem(best, "iops")->valuedouble,
               cJSON_GetObjectItem(best, "gbps")->valuedouble,
               cJSON_GetObjectItem(best, "backend")->valuestring,
               cJSON_GetObjectItem(best, "depth")->valuedouble);
    }
    return 0;
fail:
    return -1;
}

static void defaults(disk_bench *b) {
    if (!b->size_given) b->size = b->opt.quick ? (int64_t)64 << 20 : (int64_t)8 << 30;
    if (!b->sizes_given) b->read_sizes[b->nread_sizes++] = 4096;
    if (!b->depths_given) {
        static const int64_t quick[] = {1, 32}, full[] = {1, 32, 128, 512};
        b->ndepths = b->opt.quick ? 2 : 4;
        memcpy(b->depths, b->opt.quick ? quick : full, (size_t)b->ndepths * sizeof(int64_t));
    }
    if (!b->seconds_given) b->seconds = b->opt.quick ? 0.3 : 5.0;
    if (!(b->rows_fraction > 0)) b->rows_fraction = 0.2;
    if (!b->nbackends) {
        b->backends[b->nbackends++] = GD__IOENG_URING;
        b->backends[b->nbackends++] = GD__IOENG_THREADS;
    }
}

static int add_parameters(const disk_bench *b, const disk_file *f, cJSON *root) {
    cJSON *par = cJSON_AddObjectToObject(root, "parameters");
    BENCH_JSON(par);
    BENCH_JSON(cJSON_AddStringToObject(par, "file", f->path));
    BENCH_JSON(cJSON_AddBoolToObject(par, "generated", f->generated));
    BENCH_JSON(cJSON_AddNumberToObject(par, "size_asked", (double)b->size));
    if (f->reduced[0]) BENCH_JSON(cJSON_AddStringToObject(par, "size_reduced", f->reduced));
    else BENCH_JSON(cJSON_AddNullToObject(par, "size_reduced"));
    BENCH_JSON(cJSON_AddNumberToObject(par, "seconds_per_point", b->seconds));
    cJSON *rs = cJSON_AddArrayToObject(par, "read_sizes");
    cJSON *ds = cJSON_AddArrayToObject(par, "depths");
    BENCH_JSON(rs && ds);
    for (int i = 0; i < b->nread_sizes; i++)
        BENCH_JSON(cJSON_AddItemToArray(rs, cJSON_CreateNumber((double)b->read_sizes[i])));
    for (int i = 0; i < b->ndepths; i++)
        BENCH_JSON(cJSON_AddItemToArray(ds, cJSON_CreateNumber((double)b->depths[i])));
    return 0;
fail:
    return -1;
}

int bench_disk(int argc, char **argv) {
    static const struct option long_opts[] = {
        {"file", required_argument, 0, 'f'},      {"dir", required_argument, 0, 'd'},
        {"size", required_argument, 0, 'S'},      {"read-size", required_argument, 0, 'r'},
        {"depths", required_argument, 0, 'q'},    {"backends", required_argument, 0, 'b'},
        {"seconds", required_argument, 0, 's'},   {"rows", required_argument, 0, 'R'},
        {"rows-fraction", required_argument, 0, 'F'}, BENCH_FLAG("quick", QUICK),
        BENCH_LONG_END};
    disk_bench b;
    memset(&b, 0, sizeof b);
    bench_options_init(&b.opt);
    int rc = bench_parse_options(&b.opt, cmd, argc, argv, long_opts, help, own_option, &b);
    if (rc >= 0) return rc;
    rc = CLI_EXIT_FAIL;
    defaults(&b);
    disk_file f;
    memset(&f, 0, sizeof f);
    cJSON *root = NULL;
    unsigned char *dst = NULL;
    const double t_start = bench_now();
    int measured = 0;
    cli_catch_stop_signals();
    if (b.opt.json_path && bench_json_probe(b.opt.json_path)) goto fail;
    if (bench_json_header(&root, "disk", &b.opt, 0)) goto fail;
    if (prepare_file(&b, &f)) goto fail;
    int64_t largest = 0;
    for (int i = 0; i < b.nread_sizes; i++) largest = max64(largest, b.read_sizes[i]);
    dst = aligned_alloc(4096, (size_t)((DEST_BYTES + largest + 4095) / 4096 * 4096));
    BENCH_REQUIRE(dst, "out of memory allocating the reads' destination");
    cJSON *points = cJSON_AddArrayToObject(root, "points");
    BENCH_JSON(points);
    for (int k = 0; k < b.nbackends; k++) {
        int r = run_backend(&b, &f, b.backends[k], root, points, dst);
        if (r < 0) goto fail;
        measured += r == 0;
    }
    BENCH_REQUIRE(measured > 0, "no backend could be measured");
    if (b.rows > 0 && rows_section(&b, &f, root)) goto fail;
    if (add_ceilings(root, points) || add_parameters(&b, &f, root)) goto fail;
    rc = bench_run_done(&b.opt, root, "disk", t_start);
fail:
    if (f.generated && unlink(f.path) != 0)
        fprintf(stderr, "disk: could not remove '%s': %s\n", f.path, strerror(errno));
    free(dst);
    cJSON_Delete(root);
    return bench_exit_status(rc);
}
