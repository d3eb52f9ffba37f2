/*
 * Helpers shared by the benchmark drivers: error messages, the shared options, timing, list
 * parsing, parallel
 * fills and copies of large host buffers, PASS/MISS target lines and the atomic JSON writer.
 * See bench.h.
 */
#include "bench.h"
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void bench_error(const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "graphdirect bench: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void bench_gd_error(const char *what, gd_status st) {
    const char *msg = gd_last_error();
    bench_error("%s failed: %s%s%s", what, gd_status_string(st), msg[0] ? ": " : "", msg);
}

#ifdef GD_WITH_CUDA
void bench_cuda_error(const char *call, cudaError_t ce) {
    (void)cudaGetLastError();
    bench_error("%s failed: %s (%s)", call, cudaGetErrorString(ce), cudaGetErrorName(ce));
}

/*
 * Host-to-GPU DMA of 256 MiB from pinned memory on each device of devs (n of them, at most
 * BENCH_DMA_MAX_GPUS) at once, five times: GB/s in all. The calling thread's device is kept.
 */
typedef struct {
    int device;
    void *host, *dev;
    cudaStream_t s;
} dma_lane;

int bench_dma_gbs(const int *devs, int n, double *gbs) {
    int rc = -1, was = 0;
    const size_t bytes = (size_t)256 << 20;
    BENCH_CUDA(cudaGetDevice(&was));
    dma_lane lane[BENCH_DMA_MAX_GPUS];
    memset(lane, 0, sizeof lane);
    BENCH_REQUIRE(n >= 1 && n <= BENCH_DMA_MAX_GPUS, "DMA ceiling: %d GPUs (1..%d)", n,
                  BENCH_DMA_MAX_GPUS);
    for (int i = 0; i < n; i++) {
        lane[i].device = devs[i];
        BENCH_CUDA(cudaSetDevice(devs[i]));
        BENCH_CUDA(cudaMallocHost(&lane[i].host, bytes));
        memset(lane[i].host, 1, bytes);
        BENCH_CUDA(cudaMalloc(&lane[i].dev, bytes));
        BENCH_CUDA(cudaStreamCreateWithFlags(&lane[i].s, cudaStreamNonBlocking));
        BENCH_CUDA(
            cudaMemcpyAsync(lane[i].dev, lane[i].host, bytes, cudaMemcpyHostToDevice, lane[i].s));
        BENCH_CUDA(cudaStreamSynchronize(lane[i].s));
    }
    const int reps = 5;
    const double t0 = bench_now();
    for (int r = 0; r < reps; r++)
        for (int i = 0; i < n; i++)
            BENCH_CUDA(cudaMemcpyAsync(lane[i].dev, lane[i].host, bytes, cudaMemcpyHostToDevice,
                                       lane[i].s));
    for (int i = 0; i < n; i++) BENCH_CUDA(cudaStreamSynchronize(lane[i].s));
    *gbs = (double)bytes * reps * n / (bench_now() - t0) / 1e9;
    rc = 0;
fail:
    for (int i = 0; i < n; i++) {
        if (lane[i].s) (void)cudaStreamDestroy(lane[i].s);
        if (lane[i].dev) (void)cudaFree(lane[i].dev);
        if (lane[i].host) (void)cudaFreeHost(lane[i].host);
    }
    (void)cudaSetDevice(was);
    return rc;
}
#endif

void bench_options_init(bench_options *o) {
    memset(o, 0, sizeof *o);
    o->batch = 1024;
    o->hidden = 256;
    o->seed = 1;
    o->commit = GD_GIT_COMMIT;
}

int bench_option(bench_options *o, const char *cmd, int c, const char *arg) {
    int64_t v;
    switch (c) {
    case BENCH_OPT_PRESET:
        o->preset = arg;
        return 0;
    case BENCH_OPT_NODES:
        if (cli_parse_i64(arg, &v) || v < 2)
            return cli_usage_error(cmd, "--nodes '%s' is not a node count >= 2", arg);
        o->nodes = v;
        return 0;
    case BENCH_OPT_BATCH:
        if (cli_parse_i64(arg, &v) || v < 1 || v > (1 << 24))
            return cli_usage_error(cmd, "--batch '%s' is not a count in [1, 2^24]", arg);
        o->batch = v;
        return 0;
    case BENCH_OPT_HIDDEN:
        if (cli_parse_i64(arg, &v) || v < 1 || v > 65536)
            return cli_usage_error(cmd, "--hidden '%s' is not a width in [1, 65536]", arg);
        o->hidden = v;
        return 0;
    case BENCH_OPT_THREADS:
        if (cli_parse_i64(arg, &v) || v < 1 || v > 4096)
            return cli_usage_error(cmd, "--threads '%s' is not a count in [1, 4096]", arg);
        o->threads = (int)v;
        return 0;
    case BENCH_OPT_DEVICE:
        if (cli_parse_i64(arg, &v) || v < 0 || v > 1024)
            return cli_usage_error(cmd, "--device '%s' is not a GPU number", arg);
        o->device = (int)v;
        return 0;
    case BENCH_OPT_SEED:
        if (cli_parse_i64(arg, &v) || v < 0)
            return cli_usage_error(cmd, "--seed '%s' is not a non-negative integer", arg);
        o->seed = (uint64_t)v;
        return 0;
    case BENCH_OPT_QUICK:
        o->quick = 1;
        return 0;
    case BENCH_OPT_JSON:
        o->json_path = arg;
        return 0;
    case BENCH_OPT_COMMIT:
        o->commit = arg;
        o->commit_given = 1;
        return 0;
    default:
        /* getopt_long has already named the option it did not know. */
        return cli_usage_error(cmd, "unknown option");
    }
}

int bench_parse_options(bench_options *o, const char *cmd, int argc, char **argv,
                        const struct option *long_opts, void (*help)(void),
                        int (*own)(void *self, int c, const char *arg), void *self) {
    int c, rc;
    optind = 1; /* the CLI may have run getopt_long before */
    while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
        if (c == 'h') {
            help();
            return 0;
        }
        rc = own(self, c, optarg);
        if (rc < 0) rc = bench_option(o, cmd, c, optarg);
        if (rc != 0) return rc;
    }
    rc = bench_options_finish(o, cmd, argc, argv);
    return rc != 0 ? rc : -1;
}

int bench_options_finish(bench_options *o, const char *cmd, int argc, char **argv) {
    if (optind < argc) return cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
    if (!o->threads) o->threads = bench_cpus();
    return 0;
}

/*
 * The lists are parsed into a local copy first, so that a bad --fanouts leaves the defaults
 * (or an earlier --fanouts) as they were. Empty items and lists are refused rather than
 * skipped: "15,,5" is more likely a typo than two layers.
 */
int bench_parse_names(const char *cmd, const char *option, const char *arg,
                      const char *const *names, int count, int *out, int *n) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", arg);
    *n = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int k = 0;
        while (k < count && strcmp(t, names[k]) != 0) k++;
        if (k == count) return cli_usage_error(cmd, "%s: '%s' is not one of the choices", option, t);
        for (int i = 0; i < *n; i++)
            if (out[i] == k) return cli_usage_error(cmd, "%s names '%s' twice", option, t);
        out[(*n)++] = k;
    }
    return *n ? 0 : cli_usage_error(cmd, "%s '%s' names none", option, arg);
}

int bench_parse_fanouts(const char *text, int lo, int hi, int max_lists,
                        int (*fanouts)[GD_SAMPLER_MAX_LAYERS], int *layers, int *lists) {
    enum { MAX_LISTS = 16 };
    int f[MAX_LISTS][GD_SAMPLER_MAX_LAYERS], n[MAX_LISTS], count = 0;
    char item[64];
    const char *p = text;
    if (max_lists > MAX_LISTS) max_lists = MAX_LISTS;
    n[count++] = 0;
    for (;;) {
        const size_t len = strcspn(p, ",:");
        int64_t v = 0;
        if (len == 0) {
            bench_error("--fanouts '%s': an empty list or item (give e.g. 15,10,5)", text);
            return -1;
        }
        if (len < sizeof item) snprintf(item, sizeof item, "%.*s", (int)len, p);
        if (len >= sizeof item || cli_parse_i64(item, &v) || v < lo || v > hi) {
            if (lo < 0)
                bench_error("--fanouts: '%.*s' is not a fanout (-1 = every neighbour, or a count "
                            "up to %d)",
                            (int)len, p, hi);
            else
                bench_error("--fanouts: '%.*s' is not a neighbour count in [%d, %d]", (int)len, p,
                            lo, hi);
            return -1;
        }
        if (n[count - 1] == GD_SAMPLER_MAX_LAYERS) {
            bench_error("--fanouts '%s': a list has more than %d layers", text,
                        GD_SAMPLER_MAX_LAYERS);
            return -1;
        }
        f[count - 1][n[count - 1]++] = (int)v;
        p += len;
        if (*p == '\0') break;
        if (*p++ == ':') {
            if (count == max_lists && max_lists == 1) {
                bench_error("--fanouts '%s': one list only (no ':')", text);
                return -1;
            }
            if (count == max_lists) {
                bench_error("--fanouts '%s': at most %d lists", text, max_lists);
                return -1;
            }
            n[count++] = 0;
        }
    }
    for (int k = 0; k < count; k++) {
        memcpy(fanouts[k], f[k], sizeof f[k]);
        layers[k] = n[k];
    }
    if (lists) *lists = count;
    return 0;
}

double bench_cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int bench_cpus(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : (n > 4096 ? 4096 : (int)n);
}

const char *bench_utc_date(char *buf, size_t n) {
    time_t now = time(NULL);
    struct tm tm;
    if (!gmtime_r(&now, &tm) || !strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(buf, n, "unknown");
    return buf;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double bench_median(double *v, int n) {
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* "4096", "4K" (x1000), "4Ki" (x1024), "1.5Mi", with an optional trailing B: a count >= 1. */
static int parse_one(const char *text, int64_t *out) {
    return cli_parse_i64(text, out) == 0 && *out >= 1 ? 0 : -1;
}

int bench_parse_policies(const char *cmd, const char *arg, const char **out, int *count) {
    static const char *const names[3] = {"clock", "sieve", "random"};
    int idx[3];
    if (bench_parse_names(cmd, "--policies", arg, names, 3, idx, count)) return CLI_EXIT_USAGE;
    for (int i = 0; i < *count; i++) out[i] = names[idx[i]];
    return 0;
}

int bench_parse_windows(const char *cmd, const char *arg, int64_t most, int64_t *out, int max,
                        int *count) {
    char buf[256];
    *count = 0;
    if (snprintf(buf, sizeof buf, "%s", arg) >= (int)sizeof buf)
        return cli_usage_error(cmd, "--windows '%s' is too long", arg);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        int64_t v;
        if (*count == max || cli_parse_i64(tok, &v) || v < 0 || v > most)
            return cli_usage_error(cmd, "--windows '%s': give up to %d depths in 0..%lld", arg,
                                   max, (long long)most);
        out[(*count)++] = v;
    }
    if (*count == 0) return cli_usage_error(cmd, "--windows '%s' names no depth", arg);
    return 0;
}

int bench_parse_list(const char *option, const char *text, int64_t *out, int max, int *count) {
    char item[64];
    int n = 0;
    const char *p = text;
    *count = 0;
    if (!text || !*text) {
        bench_error("%s: empty list", option);
        return -1;
    }
    for (;;) {
        const char *comma = strchr(p, ',');
        const size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == 0 || len >= sizeof item) {
            bench_error("%s '%s': expected a comma-separated list of positive numbers such as "
                        "256,1028,4Ki",
                        option, text);
            return -1;
        }
        memcpy(item, p, len);
        item[len] = '\0';
        if (n == max) {
            bench_error("%s '%s': at most %d values", option, text, max);
            return -1;
        }
        if (parse_one(item, &out[n]) != 0) {
            bench_error("%s: '%s' is not a positive whole number (suffixes K, M, G = x1000; "
                        "Ki, Mi, Gi = x1024)",
                        option, item);
            return -1;
        }
        n++;
        if (!comma) break;
        p = comma + 1;
    }
    *count = n;
    return 0;
}

const char *bench_count_text(int64_t n, char *buf, size_t size) {
    if (n >= (1 << 20) && n % (1 << 20) == 0)
        snprintf(buf, size, "%lldMi", (long long)(n >> 20));
    else if (n >= 1024 && n % 1024 == 0)
        snprintf(buf, size, "%lldKi", (long long)(n >> 10));
    else
        snprintf(buf, size, "%lld", (long long)n);
    return buf;
}

/* A keyed bijection of [0, 2^(2 half)): four Feistel rounds. */
static uint64_t feistel(uint64_t x, int half, uint64_t key) {
    const uint64_t mask = (1ull << half) - 1;
    uint64_t l = x >> half, r = x & mask;
    for (uint64_t round = 0; round < 4; round++) {
        const uint64_t t = l ^ (bench_mix64(r ^ (key + round * 0x9e3779b97f4a7c15ull)) & mask);
        l = r;
        r = t;
    }
    return (l << half) | r;
}

void bench_random_ids(int64_t *ids, int64_t n, int64_t per_call, int64_t rows, uint64_t seed,
                      int threads) {
    const uint64_t key = bench_mix64(seed ^ 0x6a09e667f3bcc909ull);
    int half = 1;
    while ((1ull << (2 * half)) < (uint64_t)rows) half++;
    if (per_call < 1) per_call = 1;
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) if (n > (1 << 16))
#endif
    for (int64_t i = 0; i < n; i++) {
        /* Cycle-walking keeps the permutation inside [0, rows). */
        const uint64_t call_key = bench_mix64(key + (uint64_t)(i / per_call));
        uint64_t x = (uint64_t)((i % per_call) % rows);
        do x = feistel(x, half, call_key);
        while (x >= (uint64_t)rows);
        ids[i] = (int64_t)x;
    }
    (void)threads;
}

void bench_fill_pattern(void *p, size_t bytes, int threads) {
    uint32_t *w = p;
    const int64_t words = (int64_t)(bytes / 4);
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) if (words > (1 << 16))
#endif
    for (int64_t i = 0; i < words; i++) w[i] = (uint32_t)i * 0x9e3779b1u ^ (uint32_t)(i >> 32);
    for (size_t i = (size_t)words * 4; i < bytes; i++) ((unsigned char *)p)[i] = (unsigned char)i;
    (void)threads;
}

void bench_parallel_copy(void *dst, const void *src, size_t bytes, int threads) {
    if (threads < 1) threads = 1;
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static)
#endif
    for (int t = 0; t < threads; t++) {
        const size_t lo = bytes / (size_t)threads * (size_t)t;
        const size_t hi = t == threads - 1 ? bytes : bytes / (size_t)threads * (size_t)(t + 1);
        memcpy((char *)dst + lo, (const char *)src + lo, hi - lo);
    }
}

int bench_target(cJSON *targets, const char *name, double value, double threshold,
                 const char *unit) {
    const int met = value >= threshold;
    printf("  %s  %-46s %7.2f%s >= %.2f%s\n", met ? "PASS" : "MISS", name, value, unit, threshold,
           unit);
    if (targets) {
        cJSON *t = cJSON_CreateObject();
        if (t) {
            cJSON_AddStringToObject(t, "name", name);
            cJSON_AddNumberToObject(t, "value", value);
            cJSON_AddNumberToObject(t, "threshold", threshold);
            cJSON_AddBoolToObject(t, "pass", met);
            cJSON_AddItemToArray(targets, t);
        }
    }
    return met;
}

int bench_json_probe(const char *path) {
    char *tmp = malloc(strlen(path) + 32);
    int fd;
    if (!tmp) {
        bench_error("out of memory");
        return -1;
    }
    sprintf(tmp, "%s.tmp.%ld", path, (long)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        bench_error("--json %s: cannot create %s: %s (is the directory there and writable?)", path,
                    tmp, strerror(errno));
        free(tmp);
        return -1;
    }
    close(fd);
    unlink(tmp);
    free(tmp);
    return 0;
}

int bench_json_write(const char *path, const cJSON *root) {
    char *text = NULL, *tmp = NULL;
    int fd = -1, rc = -1;
    size_t len, done = 0;
    text = cJSON_Print(root);
    BENCH_REQUIRE(text, "out of memory formatting the JSON record for %s", path);
    len = strlen(text);
    tmp = malloc(strlen(path) + 32);
    BENCH_REQUIRE(tmp, "out of memory");
    sprintf(tmp, "%s.tmp.%ld", path, (long)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    BENCH_REQUIRE(fd >= 0, "cannot create %s: %s (is the directory there and writable?)", tmp,
                  strerror(errno));
    while (done < len) {
        ssize_t w = write(fd, text + done, len - done);
        if (w < 0 && errno == EINTR) continue;
        BENCH_REQUIRE(w > 0, "writing %s failed: %s", tmp, strerror(errno));
        done += (size_t)w;
    }
    BENCH_REQUIRE(write(fd, "\n", 1) == 1, "writing %s failed: %s", tmp, strerror(errno));
    BENCH_REQUIRE(fsync(fd) == 0, "flushing %s failed: %s", tmp, strerror(errno));
    BENCH_REQUIRE(close(fd) == 0, "closing %s failed: %s", tmp, strerror(errno));
    fd = -1;
    BENCH_REQUIRE(rename(tmp, path) == 0, "renaming %s to %s failed: %s", tmp, path,
                  strerror(errno));
    rc = 0;
fail:
    if (fd >= 0) close(fd);
    if (rc != 0 && tmp) unlink(tmp);
    free(tmp);
    cJSON_free(text);
    return rc;
}

int bench_json_header(cJSON **root, const char *benchmark, const bench_options *o, int gpu) {
    const int device = o->device;
    char date[64], host[256];
    cJSON *dev;
    *root = cJSON_CreateObject();
    BENCH_REQUIRE(*root, "out of memory building the JSON record");
    BENCH_JSON(cJSON_AddStringToObject(*root, "benchmark", benchmark));
    BENCH_JSON(cJSON_AddStringToObject(*root, "version", gd_version()));
    BENCH_JSON(cJSON_AddStringToObject(*root, "commit", o->commit));
    BENCH_JSON(cJSON_AddStringToObject(*root, "commit_from",
                                       o->commit_given ? "--commit" : "build configuration"));
    BENCH_JSON(cJSON_AddStringToObject(*root, "date", bench_utc_date(date, sizeof date)));
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "unknown");
    host[sizeof host - 1] = '\0';
    BENCH_JSON(cJSON_AddStringToObject(*root, "host", host));
    BENCH_JSON(cJSON_AddNumberToObject(*root, "cpus", bench_cpus()));
    BENCH_JSON(cJSON_AddBoolToObject(*root, "cuda_build", gd_has_cuda()));
    if (gpu) {
        gd_device_info info;
        BENCH_GD(gd_device_info_get(device, &info), "reading the GPU's properties");
        BENCH_JSON(dev = cJSON_AddObjectToObject(*root, "device"));
        BENCH_JSON(cJSON_AddNumberToObject(dev, "index", device));
        BENCH_JSON(cJSON_AddStringToObject(dev, "name", info.name));
        BENCH_JSON(
            cJSON_AddNumberToObject(dev, "compute_capability", info.major + info.minor / 10.0));
        BENCH_JSON(cJSON_AddNumberToObject(dev, "sms", info.multiprocessors));
        BENCH_JSON(cJSON_AddNumberToObject(dev, "memory_bytes", (double)info.total_memory));
        BENCH_JSON(cJSON_AddNumberToObject(dev, "pci_bus", info.pci_bus));
        fprintf(stderr, "GPU %d: %s, %d SMs\n", device, info.name, info.multiprocessors);
    } else {
        BENCH_JSON(cJSON_AddNullToObject(*root, "device"));
    }
    return 0;
fail:
    return -1;
}

int bench_run_done(const bench_options *o, cJSON *root, const char *name, double t_start) {
    printf("\nbench %s: done in %.1f s\n", name, bench_now() - t_start);
    BENCH_JSON(cJSON_AddNumberToObject(root, "seconds", bench_now() - t_start));
    if (o->json_path) {
        if (bench_json_write(o->json_path, root) != 0) goto fail;
        printf("results written to %s\n", o->json_path);
    }
    return 0;
fail:
    return -1;
}

int bench_exit_status(int rc) {
    if (rc != 0 && cli_interrupted()) {
        fprintf(stderr, "graphdirect bench: interrupted\n");
        return CLI_EXIT_INTERRUPTED;
    }
    return rc;
}

/* The stats of the last epoch of a fit (its on_epoch callback). */
static int keep_stats(void *user, const gd_epoch_stats *s) {
    *(gd_epoch_stats *)user = *s;
    return 0;
}

gd_status bench_one_epoch(gd_trainer_t *t, int64_t epoch, int64_t max_batches,
                          gd_epoch_stats *out) {
    gd_fit_options fo = GD_FIT_OPTIONS_INIT;
    fo.epochs = epoch + 1;
    fo.max_batches = max_batches;
    fo.validate = fo.keep_best = fo.test = fo.exact_test = 0;
    fo.on_epoch = keep_stats;
    fo.on_epoch_user = out;
    return gd_trainer_fit(t, &fo, NULL);
}
