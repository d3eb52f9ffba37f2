/*
 * `graphdirect bench startup`: the time from a dataset to the first trained minibatch, per
 * mode (issue 19, items 1 and 4, the part built so far). Measured in one run:
 *   - the registration rate (host memory page-locked and mapped for the GPU) of a buffer of
 *     --register-gib GiB, per thread count and chunk size: one thread is what start-up had,
 *     the best is the ceiling of a parallel registration;
 *   - the dataset: generated in memory (or opened from --dir), its open time;
 *   - per mode: the trainer's build (plan, registration or copy of the table, caches, graph)
 *     and its first minibatch. all-gpu copies the whole table into GPU memory, so its build
 *     time is the target for zero-copy, which only registers it (issue 19: 76.2 s vs 9.5 s on
 *     papers at 16 GiB on the H100 with one registering thread). zero-copy runs twice: with one
 *     registering thread (GD_PIN_THREADS=1, as before) and with the default (with --dir, whose
 *     table is the file's pages registered read-only, the default is one thread too since s9:
 *     the two runs then measure the same configuration twice).
 * With --dir (a dataset directory on disk) it adds, also without a GPU:
 *   - the ceilings of reading it: features.npy read sequentially from a dropped page cache by
 *     one thread and by several (GB/s);
 *   - the open: sizes only, with the .validated record, and with every value checked;
 * and, with a GPU, runs each trainer twice, from a cold page cache (the dataset's files dropped
 * before it is opened) and warm (opened again at once), each with its parts: open (and its
 * validation), the build's phases, the first minibatch. The cudaMemcpy of the whole table to GPU
 * memory is measured as a ceiling of all-gpu's build.
 */
#include "bench.h"
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_LIST 8

static const char cmd[] = "bench startup";

typedef struct {
    bench_options opt;
    const char *dir; /* a dataset directory (NULL: generate the preset in memory) */
    int64_t budget;  /* --gpu-mem-budget (0: what is free) */
    int64_t reg_gib; /* the registration buffer (0: no registration section) */
    int64_t pin_threads[MAX_LIST], chunk_mb[MAX_LIST];
    int num_threads, num_chunks;
    int64_t read_threads; /* --read-threads */
    double read_gbs;      /* the best file read ceiling measured (0: none) */
} startup_bench;

static void help(void) {
    printf("usage: graphdirect bench startup [options]\n\n"
           "The time from a dataset to the first trained minibatch, per mode: the trainer's\n"
           "build (plan, page-locking or copying the feature table, caches, graph) and its\n"
           "first minibatch; all-gpu's build (the table copied to GPU memory) is zero-copy's\n"
           "target. The registration rate of host memory per thread count and chunk size is\n"
           "measured in the same run (the ceiling of zero-copy's start-up).\n\n"
           "options:\n"
           "  --preset NAME        dataset generated in memory (default products; papers\n"
           "                       with --gpu-mem-budget 16G is issue 19's case)\n"
           "  --nodes N            nodes of the preset (default: the preset's)\n"
           "  --dir DIR            open this dataset directory instead of generating one:\n"
           "                       adds its read ceilings and open times, and runs each\n"
           "                       trainer from a cold page cache and a warm one\n"
           "  --read-threads N     threads of the parallel read ceiling (default 8)\n"
           "  --gpu-mem-budget S   GPU memory of the zero-copy trainers (e.g. 16G; default:\n"
           "                       free); all-gpu takes what the whole table needs\n"
           "  --register-gib N     the registration-rate buffer in GiB (default 4; 0: skip)\n"
           "  --pin-threads LIST   thread counts of the registration rate (default\n"
           "                       1,2,4,8,16, at most the cores)\n"
           "  --pin-chunk-mb LIST  chunk sizes of the registration rate (default 256,1024)\n"
           "  --batch B            seeds per minibatch (default 1024)\n"
           "  --threads N, --device D, --seed S, --quick, --json FILE, --commit C\n");
}

static int own_option(void *self, int c, const char *arg) {
    startup_bench *b = self;
    int64_t v;
    switch (c) {
    case 'D':
        b->dir = arg;
        return 0;
    case 'B':
        if (cli_parse_i64(arg, &v) || v < 0)
            return cli_usage_error(cmd, "--gpu-mem-budget '%s' is not a size", arg);
        b->budget = v;
        return 0;
    case 'R':
        if (cli_parse_i64(arg, &v) || v < 0 || v > 4096)
            return cli_usage_error(cmd, "--register-gib '%s' is not in 0..4096", arg);
        b->reg_gib = v;
        return 0;
    case 'T':
        if (bench_parse_list("--pin-threads", arg, b->pin_threads, MAX_LIST, &b->num_threads))
            return CLI_EXIT_USAGE;
        for (int i = 0; i < b->num_threads; i++)
            if (b->pin_threads[i] > 1024)
                return cli_usage_error(cmd, "--pin-threads: %lld is above 1024",
                                       (long long)b->pin_threads[i]);
        return 0;
    case 'C':
        if (bench_parse_list("--pin-chunk-mb", arg, b->chunk_mb, MAX_LIST, &b->num_chunks))
            return CLI_EXIT_USAGE;
        return 0;
    case 'P':
        if (cli_parse_i64(arg, &v) || v < 1 || v > 256)
            return cli_usage_error(cmd, "--read-threads '%s' is not in 1..256", arg);
        b->read_threads = v;
        return 0;
    default:
        return -1;
    }
}

static int parse_options(startup_bench *b, int argc, char **argv) {
    static const struct option long_opts[] = {BENCH_LONG("preset", PRESET),
                                              BENCH_LONG("nodes", NODES),
                                              BENCH_LONG("batch", BATCH),
                                              {"dir", required_argument, 0, 'D'},
                                              {"gpu-mem-budget", required_argument, 0, 'B'},
                                              {"register-gib", required_argument, 0, 'R'},
                                              {"pin-threads", required_argument, 0, 'T'},
                                              {"pin-chunk-mb", required_argument, 0, 'C'},
                                              {"read-threads", required_argument, 0, 'P'},
                                              BENCH_FLAG("quick", QUICK),
                                              BENCH_LONG("threads", THREADS),
                                              BENCH_LONG_END};
    bench_options_init(&b->opt);
    b->opt.preset = "products";
    b->reg_gib = 4;
    b->read_threads = 8;
    const int64_t threads[] = {1, 2, 4, 8, 16}, chunks[] = {256, 1024};
    b->num_threads = 5;
    memcpy(b->pin_threads, threads, sizeof threads);
    b->num_chunks = 2;
    memcpy(b->chunk_mb, chunks, sizeof chunks);
    int rc = bench_parse_options(&b->opt, cmd, argc, argv, long_opts, help, own_option, b);
    if (rc < 0 && b->opt.quick) {
        b->opt.preset = "tiny";
        b->reg_gib = b->reg_gib ? 1 : 0;
        b->num_threads = 2;
        b->num_chunks = 1;
        b->chunk_mb[0] = 256;
    }
    return rc;
}

/* Set a parameter for the runs that follow (NULL: back to the environment or the default). */
static int set_param(const char *name, const char *value) {
    BENCH_GD(gd_param_set(name, value), name);
    return 0;
fail:
    return -1;
}

/* The registration rate of a buffer of b->reg_gib GiB per chunk size and thread count. */
static int registration(const startup_bench *b, cJSON *root, cJSON *targets) {
    int rc = -1;
    const size_t bytes = (size_t)b->reg_gib << 30;
    const int cores = bench_cpus();
    unsigned char *buf =
        mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    gd_context_t *ctx = NULL;
    double best = 0, one = 0;
    cJSON *rows = cJSON_AddArrayToObject(root, "registration");
    BENCH_JSON(rows);
    BENCH_REQUIRE(buf != MAP_FAILED, "cannot map %lld GiB for the registration rate",
                  (long long)b->reg_gib);
    bench_fill_pattern(buf, bytes, b->opt.threads); /* resident, as a loaded table is */
    BENCH_GD(gd_context_default(b->opt.device, &ctx), "the GPU's context");
    printf("registration of %lld GiB of anonymous host memory (resident), GB/s:\n",
           (long long)b->reg_gib);
    printf("%-10s", "chunk MiB");
    for (int i = 0; i < b->num_threads; i++)
        if (b->pin_threads[i] <= cores) printf(" %6lld thr", (long long)b->pin_threads[i]);
    printf("\n");
    for (int c = 0; c < b->num_chunks; c++) {
        char text[32];
        snprintf(text, sizeof text, "%lld", (long long)b->chunk_mb[c]);
        if (set_param("GD_PIN_CHUNK_MB", text)) goto fail;
        printf("%-10lld", (long long)b->chunk_mb[c]);
        for (int i = 0; i < b->num_threads; i++) {
            if (b->pin_threads[i] > cores) continue;
            gd_host_tensor_t *t = NULL;
            snprintf(text, sizeof text, "%lld", (long long)b->pin_threads[i]);
            if (set_param("GD_PIN_THREADS", text)) goto fail;
            BENCH_GD(
                gd_host_tensor_adopt(buf, (int64_t)(bytes / 4096), 1024, GD_DTYPE_FLOAT32, 0, &t),
                "wrapping the buffer");
            const double t0 = bench_now();
            const gd_status st = gd_host_tensor_register(t, ctx);
            const double s = bench_now() - t0;
            const double t1 = bench_now();
            if (st == GD_OK) (void)gd_host_tensor_unregister(t);
            const double un = bench_now() - t1;
            gd_host_tensor_destroy(t);
            BENCH_GD(st, "registering the buffer");
            const double gbs = (double)bytes / s / 1e9;
            printf(" %10.2f", gbs);
            fflush(stdout);
            if (gbs > best) best = gbs;
            if (b->pin_threads[i] == 1 && gbs > one) one = gbs;
            cJSON *j = cJSON_CreateObject();
            BENCH_JSON(j);
            cJSON_AddItemToArray(rows, j);
            BENCH_JSON(cJSON_AddNumberToObject(j, "chunk_mb", (double)b->chunk_mb[c]));
            BENCH_JSON(cJSON_AddNumberToObject(j, "threads", (double)b->pin_threads[i]));
            BENCH_JSON(cJSON_AddNumberToObject(j, "seconds", s));
            BENCH_JSON(cJSON_AddNumberToObject(j, "unregister_seconds", un));
            BENCH_JSON(cJSON_AddNumberToObject(j, "gbs", gbs));
        }
        printf("\n");
    }
    if (one > 0) {
        printf("best %.2f GB/s = %.2fx one thread\n", best, best / one);
        bench_target(targets, "registration: best thread count / one thread (>= 2)", best / one,
                     2.0, "x");
    }
    rc = 0;
fail:
    (void)gd_param_set("GD_PIN_CHUNK_MB", NULL);
    (void)gd_param_set("GD_PIN_THREADS", NULL);
    gd_context_destroy(ctx);
    if (buf != MAP_FAILED) munmap(buf, bytes);
    return rc;
}

/* ---------------------------------------------------------------- a dataset on disk */

/*
 * Drop the page cache of every regular file of dir (written back first). Pages that a process
 * maps stay in memory, so the dataset must be closed: the runs open it after the drop.
 */
static void drop_file_cache(const char *path) {
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    (void)fdatasync(fd);
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
}

static void drop_dir_cache(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char path[4096];
        struct stat sb;
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path) continue;
        if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
        drop_file_cache(path);
    }
    if (d) closedir(d);
    /* A striped table's files may lie in other directories (graphdirect stripe). */
    gd_dataset_open_options oo = GD_DATASET_OPEN_OPTIONS_INIT;
    oo.validate_graph = 0;
    gd_dataset_t *ds = NULL;
    if (gd_dataset_open(dir, &oo, &ds) != GD_OK) {
        gd_clear_error();
        return;
    }
    const char *files[64];
    char *copy[64];
    const int n = gd_dataset_feature_files(ds, files, 64, NULL);
    for (int i = 0; i < n && i < 64; i++) copy[i] = n > 1 ? strdup(files[i]) : NULL;
    gd_dataset_close(ds); /* mapped pages stay cached: drop after the close */
    for (int i = 0; i < n && i < 64; i++) {
        if (copy[i]) drop_file_cache(copy[i]);
        free(copy[i]);
    }
}

/*
 * The file read ceiling: path read whole from a dropped page cache by `threads` threads, each
 * a contiguous slice in 64 MiB reads (buffered, as the mapped dataset is read). GB/s.
 */
static int file_read(const char *path, int threads, double *gbs, int64_t *bytes) {
    int rc = -1, fd = -1, bad = 0;
    struct stat sb;
    const size_t chunk = (size_t)64 << 20;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    BENCH_REQUIRE(fd >= 0 && fstat(fd, &sb) == 0, "cannot read '%s': %s", path, strerror(errno));
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    const int64_t size = (int64_t)sb.st_size;
    const double t0 = bench_now();
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) reduction(| : bad)
#endif
    for (int t = 0; t < threads; t++) {
        char *buf = malloc(chunk);
        const int64_t lo = size / threads * t, hi = t == threads - 1 ? size : size / threads * (t + 1);
        for (int64_t at = lo; buf && at < hi;) {
            const size_t want = (size_t)(hi - at) < chunk ? (size_t)(hi - at) : chunk;
            const ssize_t got = pread(fd, buf, want, (off_t)at);
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) {
                bad = 1;
                break;
            }
            at += got;
        }
        if (!buf) bad = 1;
        free(buf);
    }
    const double s = bench_now() - t0;
    BENCH_REQUIRE(!bad, "reading '%s' failed", path);
    *gbs = s > 0 ? (double)size / s / 1e9 : 0;
    *bytes = size;
    rc = 0;
fail:
    if (fd >= 0) close(fd);
    return rc;
}

/*
 * What reading the directory costs, with or without a GPU: the read ceilings of its largest
 * file (features.npy, else indices.npy) from a cold page cache, and the open with each level of
 * validation (every value checked writes the .validated record; the open after it uses it).
 */
static int dir_ceilings(startup_bench *b, cJSON *root) {
    int rc = -1;
    gd_dataset_t *ds = NULL;
    char path[4096];
    struct stat sb;
    cJSON *reads = cJSON_AddArrayToObject(root, "file_read");
    cJSON *opens = cJSON_AddObjectToObject(root, "open");
    BENCH_JSON(reads && opens);
    snprintf(path, sizeof path, "%s/features.npy", b->dir);
    if (stat(path, &sb) != 0) snprintf(path, sizeof path, "%s/indices.npy", b->dir);
    const int cores = bench_cpus();
    const int64_t counts[2] = {1, b->read_threads < cores ? b->read_threads : cores};
    for (int i = 0; i < (counts[1] > 1 ? 2 : 1); i++) {
        double gbs;
        int64_t bytes;
        if (file_read(path, (int)counts[i], &gbs, &bytes)) goto fail;
        if (gbs > b->read_gbs) b->read_gbs = gbs;
        printf("file read ceiling: %s (%.2f GB) from a cold page cache, %lld thread%s: %.2f "
               "GB/s\n",
               path, (double)bytes / 1e9, (long long)counts[i], counts[i] > 1 ? "s" : "", gbs);
        cJSON *j = cJSON_CreateObject();
        BENCH_JSON(j);
        cJSON_AddItemToArray(reads, j);
        BENCH_JSON(cJSON_AddStringToObject(j, "file", path));
        BENCH_JSON(cJSON_AddNumberToObject(j, "bytes", (double)bytes));
        BENCH_JSON(cJSON_AddNumberToObject(j, "threads", (double)counts[i]));
        BENCH_JSON(cJSON_AddNumberToObject(j, "gbs", gbs));
    }
    static const struct {
        int level;
        const char *key, *text;
    } levels[3] = {{2, "full_validation_seconds", "every value checked (writes .validated)"},
                   {1, "validated_record_seconds", "the .validated record (the default)"},
                   {0, "sizes_only_seconds", "sizes only"}};
    for (int i = 0; i < 3; i++) {
        gd_dataset_open_options oo = GD_DATASET_OPEN_OPTIONS_INIT;
        oo.validate_graph = levels[i].level;
        const double t0 = bench_now();
        BENCH_GD(gd_dataset_open(b->dir, &oo, &ds), "opening the dataset");
        const double s = bench_now() - t0;
        gd_dataset_close(ds);
        ds = NULL;
        printf("open of %s, %s: %.3f s\n", b->dir, levels[i].text, s);
        BENCH_JSON(cJSON_AddNumberToObject(opens, levels[i].key, s));
    }
    rc = 0;
fail:
    gd_dataset_close(ds);
    return rc;
}

#ifdef GD_WITH_CUDA
/* The ceiling of all-gpu's build: one cudaMemcpy of the whole table, from where it lives. */
static int copy_ceiling(const startup_bench *b, const gd_dataset_t *ds, cJSON *root) {
    int rc = -1;
    void *d = NULL;
    gd_array_view v;
    BENCH_GD(gd_dataset_array(ds, GD_ARRAY_FEATURES, &v), "the feature table");
    const size_t bytes = (size_t)v.shape[0] * (size_t)v.shape[1] * gd_dtype_size(v.dtype);
    BENCH_CUDA(cudaSetDevice(b->opt.device));
    if (cudaMalloc(&d, bytes) != cudaSuccess) {
        (void)cudaGetLastError();
        printf("cudaMemcpy ceiling: skipped (%.2f GB of GPU memory is not free)\n",
               (double)bytes / 1e9);
        return 0;
    }
    const double t0 = bench_now();
    BENCH_CUDA(cudaMemcpy(d, v.data, bytes, cudaMemcpyHostToDevice));
    const double s = bench_now() - t0;
    printf("cudaMemcpy of the table to GPU memory (pageable host memory, as the dataset holds "
           "it): %.2f GB in %.2f s, %.2f GB/s\n",
           (double)bytes / 1e9, s, (double)bytes / s / 1e9);
    BENCH_JSON(cJSON_AddNumberToObject(root, "table_copy_seconds", s));
    BENCH_JSON(cJSON_AddNumberToObject(root, "table_copy_gbs", (double)bytes / s / 1e9));
    rc = 0;
fail:
    if (d) (void)cudaFree(d);
    return rc;
}
#endif

typedef struct {
    const char *label, *mode, *pin_threads; /* pin_threads NULL: the default */
} startup_run;

typedef struct {
    double create_s, first_s;
    int64_t read_bytes; /* from storage, open to first minibatch (-1: unknown) */
} startup_time;

/*
 * Bytes this process has had read from storage for it (/proc/self/io read_bytes: page-cache
 * misses, its faults and readahead included); -1 where the kernel does not say.
 */
static int64_t storage_read_bytes(void) {
    FILE *f = fopen("/proc/self/io", "r");
    char line[128];
    long long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "read_bytes: %lld", &v) == 1) break;
    if (f) fclose(f);
    return (int64_t)v;
}

/* Build a trainer of run r, then train its first minibatch. */
static int run_one(const startup_bench *b, const gd_dataset_t *ds, const startup_run *r,
                   const char *cache, double open_s, int64_t read0, cJSON *runs,
                   startup_time *out) {
    int rc = -1;
    gd_trainer_t *t = NULL;
    gd_train_options o = GD_TRAIN_OPTIONS_INIT;
    gd_epoch_stats st;
    if (set_param("GD_PIN_THREADS", r->pin_threads)) goto fail;
    o.mode = r->mode;
    o.batch_size = b->opt.batch;
    o.seed = b->opt.seed;
    o.threads = b->opt.threads;
    o.device = b->opt.device;
    /* all-gpu is the reference: the whole table in GPU memory, whatever the budget. */
    o.gpu_mem_budget = strcmp(r->mode, "all-gpu") ? b->budget : 0;
    double t0 = bench_now();
    BENCH_GD(gd_trainer_create(ds, &o, &t), r->label);
    out->create_s = bench_now() - t0;
    gd_trainer_info info = GD_TRAINER_INFO_INIT;
    BENCH_GD(gd_trainer_get_info(t, &info), r->label);
    t0 = bench_now();
    BENCH_GD(bench_one_epoch(t, 0, 1, &st), "the first minibatch");
    out->first_s = bench_now() - t0;
    out->create_s += open_s; /* from a directory, the open is part of the start */
    {
        const int64_t r1 = storage_read_bytes();
        out->read_bytes = read0 >= 0 && r1 >= 0 ? r1 - read0 : -1;
    }
    char label[96];
    snprintf(label, sizeof label, "%s%s%s%s", r->label, cache ? " (" : "", cache ? cache : "",
             cache ? ")" : "");
    printf("%-30s %9.2f %9.3f %9.2f   %s\n%30s build: %s\n", label, out->create_s, out->first_s,
           out->create_s + out->first_s, info.plan, "", info.startup);
    if (cache) printf("%30s open (with its validation record): %.2f s\n", "", open_s);
    if (cache && out->read_bytes >= 0 && strcmp(cache, "cold") == 0) {
        printf("%30s read from storage, open to first minibatch: %.2f GB", "",
               (double)out->read_bytes / 1e9);
        if (b->read_gbs > 0)
            printf(" (at the file read ceiling %.2f GB/s: >= %.2f s)", b->read_gbs,
                   (double)out->read_bytes / 1e9 / b->read_gbs);
        printf("\n");
    }
    fflush(stdout);
    cJSON *j = cJSON_CreateObject();
    BENCH_JSON(j);
    cJSON_AddItemToArray(runs, j);
    BENCH_JSON(cJSON_AddStringToObject(j, "run", r->label));
    BENCH_JSON(cJSON_AddStringToObject(j, "mode", r->mode));
    BENCH_JSON(cJSON_AddNumberToObject(j, "create_seconds", out->create_s));
    BENCH_JSON(cJSON_AddNumberToObject(j, "first_minibatch_seconds", out->first_s));
    BENCH_JSON(cJSON_AddStringToObject(j, "plan", info.plan));
    BENCH_JSON(cJSON_AddStringToObject(j, "build_phases", info.startup));
    if (cache) {
        BENCH_JSON(cJSON_AddStringToObject(j, "page_cache", cache));
        BENCH_JSON(cJSON_AddNumberToObject(j, "open_seconds", open_s));
        if (out->read_bytes >= 0)
            BENCH_JSON(cJSON_AddNumberToObject(j, "storage_read_bytes", (double)out->read_bytes));
    }
    rc = 0;
fail:
    gd_trainer_destroy(t);
    (void)gd_param_set("GD_PIN_THREADS", NULL);
    return rc;
}

static int open_dataset(const startup_bench *b, gd_dataset_t **ds, cJSON *root) {
    int rc = -1;
    const double t0 = bench_now();
    if (b->dir) {
        gd_dataset_open_options oo = GD_DATASET_OPEN_OPTIONS_INIT;
        BENCH_GD(gd_dataset_open(b->dir, &oo, ds), "opening the dataset");
        printf("dataset %s: opened in %.2f s\n", b->dir, bench_now() - t0);
        BENCH_JSON(cJSON_AddNumberToObject(root, "open_seconds", bench_now() - t0));
    } else {
        gd_generate_options go = GD_GENERATE_OPTIONS_INIT;
        go.preset = b->opt.preset;
        go.seed = b->opt.seed;
        go.num_nodes = b->opt.nodes;
        fprintf(stderr, "startup: generating preset '%s' in memory\n", b->opt.preset);
        BENCH_GD(gd_generate(&go, ds), "generating the dataset");
        printf("preset %s: generated in memory in %.1f s (not part of start-up)\n", b->opt.preset,
               bench_now() - t0);
    }
    gd_array_view v;
    BENCH_GD(gd_dataset_array(*ds, GD_ARRAY_FEATURES, &v), "the feature table");
    const double gib =
        (double)v.shape[0] * (double)v.shape[1] * (double)gd_dtype_size(v.dtype) / 1073741824.0;
    printf("%lld nodes, %lld edges, %lld features per node (%.2f GiB of features)\n",
           (long long)gd_dataset_num_nodes(*ds), (long long)gd_dataset_num_edges(*ds),
           (long long)gd_dataset_feature_dim(*ds), gib);
    BENCH_JSON(cJSON_AddNumberToObject(root, "feature_gib", gib));
    rc = 0;
fail:
    return rc;
}

int bench_startup(int argc, char **argv) {
    startup_bench b;
    memset(&b, 0, sizeof b);
    int rc = parse_options(&b, argc, argv);
    if (rc >= 0) return rc;
    rc = CLI_EXIT_FAIL;
    const double t_start = bench_now();
    gd_dataset_t *ds = NULL;
    cJSON *root = NULL, *runs = NULL, *targets = NULL;
    if (b.opt.json_path && bench_json_probe(b.opt.json_path)) return CLI_EXIT_FAIL;
    const int gpu = gd_device_count() > 0;
    if (bench_json_header(&root, "startup", &b.opt, gpu)) goto fail;
    targets = cJSON_AddArrayToObject(root, "targets");
    runs = cJSON_AddArrayToObject(root, "results");
    BENCH_JSON(targets && runs);
    if (b.dir && dir_ceilings(&b, root)) goto fail;
    if (!gpu) {
        printf("no GPU: no trainer to time (start-up here is registering host memory with a GPU "
               "or copying the table to it)\n");
    } else {
        if (b.reg_gib > 0 && registration(&b, root, targets)) goto fail;
        if (open_dataset(&b, &ds, root)) goto fail;
#ifdef GD_WITH_CUDA
        if (copy_ceiling(&b, ds, root)) goto fail;
#endif
        const startup_run r[3] = {{"all-gpu (table copied)", "all-gpu", NULL},
                                  {"zero-copy, 1 pinning thread", "zero-copy", "1"},
                                  {"zero-copy", "zero-copy", NULL}};
        startup_time tm[3], warm[3];
        printf("\n%-30s %9s %9s %9s   %s\n", "run", b.dir ? "open+build" : "build s",
               "first mb", "total s", "plan");
        if (b.dir) {
            /*
             * From the directory: each run opens the dataset itself, first from a dropped page
             * cache (what a fresh machine or a dataset larger than memory gives), then warm.
             */
            gd_dataset_close(ds);
            ds = NULL;
            /*
             * Without an .outdeg record (a cache, docs/formats.md): the first zero-copy run
             * counts the out-degrees and records them, the later ones read the record; each
             * run's phases say which.
             */
            {
                char rec[4200];
                snprintf(rec, sizeof rec, "%s/.outdeg", b.dir);
                if (unlink(rec) == 0) printf("removed %s: the first zero-copy run counts\n", rec);
            }
            for (int i = 0; i < 3; i++)
                for (int w = 0; w < 2; w++) {
                    if (!w) drop_dir_cache(b.dir);
                    gd_dataset_open_options oo = GD_DATASET_OPEN_OPTIONS_INIT;
                    const int64_t read0 = storage_read_bytes();
                    const double t0 = bench_now();
                    BENCH_GD(gd_dataset_open(b.dir, &oo, &ds), "opening the dataset");
                    const double open_s = bench_now() - t0;
                    if (run_one(&b, ds, &r[i], w ? "warm" : "cold", open_s, read0, runs,
                                w ? &warm[i] : &tm[i]))
                        goto fail;
                    gd_dataset_close(ds);
                    ds = NULL;
                }
            printf("warm page cache: all-gpu %.2f s, zero-copy %.2f s to the first minibatch\n",
                   warm[0].create_s + warm[0].first_s, warm[2].create_s + warm[2].first_s);
        } else {
            for (int i = 0; i < 3; i++)
                if (run_one(&b, ds, &r[i], NULL, 0, -1, runs, &tm[i])) goto fail;
        }
        const double ag = tm[0].create_s + tm[0].first_s, zc1 = tm[1].create_s + tm[1].first_s,
                     zc = tm[2].create_s + tm[2].first_s;
        printf("zero-copy to the first minibatch%s: %.2f s (one pinning thread %.2f s); all-gpu "
               "%.2f s\n",
               b.dir ? " from a cold page cache" : "", zc, zc1, ag);
        bench_target(targets, "all-gpu / zero-copy time to the first minibatch (>= 1)",
                     zc > 0 ? ag / zc : 0, 1.0, "x");
        if (b.dir && b.read_gbs > 0 && tm[0].read_bytes > 0 && tm[2].read_bytes > 0) {
            /*
             * From a cold page cache each mode's start is bounded by what it reads before its
             * first minibatch at the file read ceiling: the most the ratio above can reach is
             * the ratio of those floors.
             */
            const double fa = (double)tm[0].read_bytes / 1e9 / b.read_gbs,
                         fz = (double)tm[2].read_bytes / 1e9 / b.read_gbs;
            printf("cold page cache, storage floors at %.2f GB/s: all-gpu read %.2f GB (>= %.2f s, "
                   "took %.2fx that), zero-copy %.2f GB (>= %.2f s, took %.2fx); the ratio's "
                   "ceiling (all-gpu floor / zero-copy floor) is %.3fx\n",
                   b.read_gbs, (double)tm[0].read_bytes / 1e9, fa, ag / fa,
                   (double)tm[2].read_bytes / 1e9, fz, zc / fz, fa / fz);
            BENCH_JSON(cJSON_AddNumberToObject(root, "cold_floor_ratio_ceiling", fa / fz));
        }
    }
    if (bench_run_done(&b.opt, root, "startup", t_start)) goto fail;
    rc = 0;
fail:
    cJSON_Delete(root);
    gd_dataset_close(ds);
    return bench_exit_status(rc);
}
