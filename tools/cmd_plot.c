/*
 * `graphdirect plot`: PNG charts, drawn by gnuplot, of the files the other commands write. A
 * training metrics file (JSON lines, tools/metrics_log.c) gives the loss per epoch and per step,
 * the train and valid accuracy per epoch and the epoch time split into its parts; several runs,
 * in one file or in several, are overlaid. A benchmark result (the JSON of `graphdirect bench`)
 * gives its main number per mode and configuration as bars, or, for `bench gather`, as lines
 * over the swept row width. The kind of each file is read from its content, never its name.
 *
 * The chart is a gnuplot script and tab-separated data in a temporary directory; gnuplot draws
 * into a temporary file beside the output, which is renamed into place only once gnuplot has
 * succeeded and the file is a PNG, so a failure never leaves a half-written picture. Every input
 * is read and checked, and the script written, before gnuplot is looked for, so a malformed file
 * is reported (file and line) on any machine. docs/plot.md describes the record formats and the
 * charts.
 */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <spawn.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define PREFIX "graphdirect plot: "

static void help(void) {
    printf("usage: graphdirect plot FILE... -o OUT.png [--what loss|acc|time|auto] [--title T]\n"
           "                        [--metric FIELD] [--logy] [--size WxH]\n\n"
           "Draw a PNG chart with gnuplot from training metrics (the JSON-lines file of\n"
           "`graphdirect train --metrics`) or from benchmark results (the JSON of `graphdirect\n"
           "bench ... --json`). The kind of each file is read from its content. Several files\n"
           "of the same kind are overlaid, each run labelled by its dataset and mode (or its\n"
           "file name). OUT is replaced only when the chart was drawn.\n\n"
           "  -o, --output OUT   the PNG to write (required)\n"
           "  --what W           training metrics: loss (per epoch, and per step when the file\n"
           "                     has step records), acc (train and valid accuracy per epoch),\n"
           "                     time (each epoch's time stacked by part: sample, gather,\n"
           "                     train, waiting), auto (loss and accuracy side by side; the\n"
           "                     default). Benchmarks: auto (the main number per mode, or per\n"
           "                     row width for bench gather), time (bench epoch: each\n"
           "                     result's epoch time stacked by part)\n"
           "  --title T          the chart's title\n"
           "  --metric FIELD     benchmarks: the result field to draw (default: gbps for\n"
           "                     gather, seps for sample, epoch_s for epoch)\n"
           "  --logy             a logarithmic y axis for the loss and for benchmark bars and\n"
           "                     lines (the bench gather lines switch to it by themselves when\n"
           "                     their values span more than 30x)\n"
           "  --size WxH         picture size in pixels (default 1000x600, taller for several\n"
           "                     time panels)\n"
           "  -h, --help         this text\n\n"
           "Needs gnuplot (Debian package gnuplot-nox). Record formats: docs/plot.md.\n");
}

/* ------------------------------------------------------------------------------------------ */
/* What the files hold                                                                         */

enum { PART_SAMPLE, PART_GATHER, PART_TRAIN, PART_WAIT, NUM_PARTS };
static const char *const part_keys[NUM_PARTS] = {"sample_s", "gather_s", "train_s", "wait_s"};
static const char *const part_titles[NUM_PARTS] = {"sample", "gather", "train", "waiting"};

/* One colour per series, in order; parts of a stacked bar use their own fixed colours. */
static const char *const colours[] = {"1f77b4", "d62728", "2ca02c", "ff7f0e",
                                      "9467bd", "8c564b", "e377c2", "17becf"};
#define NUM_COLOURS ((int)(sizeof colours / sizeof colours[0]))
static const char *const part_colours[NUM_PARTS] = {"4c72b0", "dd8452", "55a868", "c44e52"};

/* Absent and null fields are NaN: "not measured". */
typedef struct {
    double epoch, loss, train_acc, valid_acc, epoch_s, minibatches;
    double parts[NUM_PARTS];
} epoch_rec;

typedef struct {
    double epoch, step, loss;
} step_rec;

/* A training run: what follows one "run" record (or a file's records before any). */
typedef struct {
    char *label;
    const char *path;
    epoch_rec *epochs;
    int n_epochs, cap_epochs;
    step_rec *steps;
    int n_steps, cap_steps;
    double test_acc;
} run_t;

/* A benchmark result: the whole JSON document and its array of results. */
typedef struct {
    const char *path;
    cJSON *doc;
    const char *benchmark;
    const char *array_name;
    cJSON *items;
} bench_t;

/* One bar of a stacked chart: a label, the parts and the wall-clock total. */
typedef struct {
    char *label;
    double total;
    double parts[NUM_PARTS];
} stack_row;

typedef struct {
    const char *out, *what, *title, *metric;
    int width, height, size_given, logy;
    run_t *runs;
    int n_runs, cap_runs;
    bench_t *benches;
    int n_benches;
    char *dir; /* the temporary directory, NULL until made */
    FILE *gp;  /* the script being written */
    int n_data;
} plot_ctx;

static char *str_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *str_printf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return NULL;
    char *s = malloc((size_t)n + 1);
    if (!s) return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

static int oom(void) {
    fprintf(stderr, PREFIX "out of memory\n");
    return -1;
}

static int grow(void **p, int *cap, int n, size_t size) {
    if (n < *cap) return 0;
    int ncap = *cap ? *cap * 2 : 16;
    void *q = realloc(*p, (size_t)ncap * size);
    if (!q) return oom();
    *p = q;
    *cap = ncap;
    return 0;
}

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s && s[1] ? s + 1 : path;
}

/* A file as a legend names it: its base name without .json or .jsonl. */
static char *file_label(const char *path) {
    const char *b = base_name(path);
    size_t n = strlen(b);
    if (n > 6 && !strcmp(b + n - 6, ".jsonl"))
        n -= 6;
    else if (n > 5 && !strcmp(b + n - 5, ".json"))
        n -= 5;
    char *s = malloc(n + 1);
    if (!s) return NULL;
    memcpy(s, b, n);
    s[n] = '\0';
    return s;
}

/* The whole file, NUL-terminated; a file with a NUL byte inside is not text and is refused. */
static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t len = 0, cap = 0;
    if (!f) {
        fprintf(stderr, PREFIX "cannot open %s: %s\n", path, strerror(errno));
        return NULL;
    }
    for (;;) {
        if (cap - len < 65536 + 1) {
            size_t ncap = cap ? cap * 2 : 65536 * 2;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                oom();
                goto fail;
            }
            buf = nb;
            cap = ncap;
        }
        size_t got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0) break;
    }
    if (ferror(f)) {
        fprintf(stderr, PREFIX "cannot read %s: %s\n", path, strerror(errno));
        goto fail;
    }
    fclose(f);
    buf[len] = '\0';
    if (strlen(buf) != len) {
        fprintf(stderr, PREFIX "%s: a NUL byte at offset %zu: not a JSON text file\n", path,
                strlen(buf));
        free(buf);
        return NULL;
    }
    return buf;
fail:
    fclose(f);
    free(buf);
    return NULL;
}

/* Line and column (from 1) of position pos in text. */
static void line_col(const char *text, const char *pos, int *line, int *col) {
    int l = 1;
    const char *start = text;
    for (const char *p = text; p < pos && *p; p++)
        if (*p == '\n') l++, start = p + 1;
    *line = l;
    *col = (int)(pos - start) + 1;
}

static int is_blank(const char *s) {
    while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n') s++;
    return *s == '\0';
}

/*
 * A number field of a metrics record: absent or null give NaN unless the field is required;
 * anything else that is not a number is an error naming the file, line and field.
 */
static int get_number(const cJSON *o, const char *key, int required, double *out, const char *path,
                      int line, const char *type) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    *out = NAN;
    if (cJSON_IsNumber(it)) {
        *out = it->valuedouble;
        return 0;
    }
    if (it && !cJSON_IsNull(it)) {
        fprintf(stderr, PREFIX "%s:%d: \"%s\" of this %s record is not a number\n", path, line, key,
                type);
        return -1;
    }
    if (required) {
        fprintf(stderr, PREFIX "%s:%d: this %s record has no number \"%s\"\n", path, line, type,
                key);
        return -1;
    }
    return 0;
}

static run_t *new_run(plot_ctx *c, const char *path, char *label) {
    if (!label || grow((void **)&c->runs, &c->cap_runs, c->n_runs, sizeof *c->runs)) {
        if (!label) oom();
        free(label);
        return NULL;
    }
    run_t *r = &c->runs[c->n_runs++];
    memset(r, 0, sizeof *r);
    r->label = label;
    r->path = path;
    r->test_acc = NAN;
    return r;
}

/* "products zero-copy" from the run record's dataset, mode and model; its own "label" wins. */
static char *run_label(const cJSON *o, const char *path) {
    const cJSON *label = cJSON_GetObjectItemCaseSensitive(o, "label");
    if (cJSON_IsString(label) && label->valuestring[0]) return strdup(label->valuestring);
    static const char *const keys[] = {"dataset", "mode", "model"};
    size_t n = 1;
    for (int k = 0; k < 3; k++) {
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, keys[k]);
        if (cJSON_IsString(it)) n += strlen(it->valuestring) + 1;
    }
    char *s = malloc(n);
    if (!s) return NULL;
    s[0] = '\0';
    for (int k = 0; k < 3; k++) {
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, keys[k]);
        if (!cJSON_IsString(it) || !it->valuestring[0]) continue;
        if (s[0]) strcat(s, " ");
        strcat(s, it->valuestring);
    }
    if (!s[0]) {
        free(s);
        return file_label(path);
    }
    return s;
}

/*
 * A record of an epoch already finished in this run starts another run: files appended to one
 * another without "run" records still draw as separate runs instead of a zigzag.
 */
static int epoch_goes_back(const run_t *r, double epoch) {
    return r->n_epochs > 0 && epoch <= r->epochs[r->n_epochs - 1].epoch;
}

static int metrics_record(plot_ctx *c, const char *path, int line, const cJSON *o, run_t **cur) {
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(o, "type");
    if (!cJSON_IsObject(o) || !cJSON_IsString(type)) {
        fprintf(stderr,
                PREFIX "%s:%d: a metrics line must be a JSON object with a string \"type\" "
                       "(run, step, epoch or test)\n",
                path, line);
        return -1;
    }
    const char *t = type->valuestring;
    if (!strcmp(t, "run")) {
        *cur = new_run(c, path, run_label(o, path));
        return *cur ? 0 : -1;
    }
    /* Unknown record types are skipped, so that a newer trainer's files stay readable. */
    if (strcmp(t, "step") && strcmp(t, "epoch") && strcmp(t, "test")) return 0;
    if (!*cur && !(*cur = new_run(c, path, file_label(path)))) return -1;
    run_t *r = *cur;
    if (!strcmp(t, "step")) {
        step_rec s;
        if (get_number(o, "epoch", 1, &s.epoch, path, line, t) ||
            get_number(o, "step", 1, &s.step, path, line, t) ||
            get_number(o, "loss", 0, &s.loss, path, line, t))
            return -1;
        if (epoch_goes_back(r, s.epoch) && !(r = *cur = new_run(c, path, strdup(r->label))))
            return -1;
        if (grow((void **)&r->steps, &r->cap_steps, r->n_steps, sizeof s)) return -1;
        r->steps[r->n_steps++] = s;
    } else if (!strcmp(t, "epoch")) {
        epoch_rec e;
        if (get_number(o, "epoch", 1, &e.epoch, path, line, t) ||
            get_number(o, "loss", 0, &e.loss, path, line, t) ||
            get_number(o, "train_acc", 0, &e.train_acc, path, line, t) ||
            get_number(o, "valid_acc", 0, &e.valid_acc, path, line, t) ||
            get_number(o, "epoch_s", 0, &e.epoch_s, path, line, t) ||
            get_number(o, "minibatches", 0, &e.minibatches, path, line, t))
            return -1;
        for (int k = 0; k < NUM_PARTS; k++)
            if (get_number(o, part_keys[k], 0, &e.parts[k], path, line, t)) return -1;
        if (epoch_goes_back(r, e.epoch) && !(r = *cur = new_run(c, path, strdup(r->label))))
            return -1;
        if (grow((void **)&r->epochs, &r->cap_epochs, r->n_epochs, sizeof e)) return -1;
        r->epochs[r->n_epochs++] = e;
    } else {
        /* The exact accuracy (all neighbours) when the trainer computed it, else the sampled. */
        double sampled, exact;
        if (get_number(o, "test_acc", 0, &sampled, path, line, t) ||
            get_number(o, "test_acc_full", 0, &exact, path, line, t))
            return -1;
        r->test_acc = isfinite(exact) ? exact : sampled;
    }
    return 0;
}

/*
 * JSON lines: each non-blank line one object. An unparsable last line without its newline is
 * what a run killed while writing leaves behind: it is skipped with a note, not an error.
 */
static int parse_metrics(plot_ctx *c, const char *path, char *text) {
    run_t *cur = NULL;
    int line = 0;
    char *p = text;
    while (*p) {
        char *nl = strchr(p, '\n');
        char *end = nl ? nl : p + strlen(p);
        line++;
        *end = '\0';
        if (!is_blank(p)) {
            const char *err = NULL;
            cJSON *o = cJSON_ParseWithOpts(p, &err, 1);
            if (!o) {
                if (!nl) {
                    fprintf(stderr,
                            PREFIX "note: %s:%d: skipping the incomplete last line (the run "
                                   "was probably stopped while writing it)\n",
                            path, line);
                    break;
                }
                fprintf(stderr,
                        PREFIX "%s:%d: not valid JSON near column %d (a metrics file holds one "
                               "JSON object per line)\n",
                        path, line, err ? (int)(err - p) + 1 : 1);
                return -1;
            }
            int rc = metrics_record(c, path, line, o, &cur);
            cJSON_Delete(o);
            if (rc) return -1;
        }
        if (!nl) break;
        p = nl + 1;
    }
    return 0;
}

static int parse_bench(plot_ctx *c, const char *path, cJSON *doc) {
    static const char *const arrays[] = {"results", "runs", "sweep"};
    bench_t *b = &c->benches[c->n_benches];
    memset(b, 0, sizeof *b);
    b->path = path;
    b->benchmark = cJSON_GetObjectItemCaseSensitive(doc, "benchmark")->valuestring;
    for (int k = 0; k < 3 && !b->items; k++) {
        cJSON *a = cJSON_GetObjectItemCaseSensitive(doc, arrays[k]);
        if (cJSON_IsArray(a)) b->items = a, b->array_name = arrays[k];
    }
    if (!b->items || cJSON_GetArraySize(b->items) == 0) {
        fprintf(stderr,
                PREFIX "%s: a bench \"%s\" result without a non-empty results array (\"results\", "
                       "\"runs\" or \"sweep\"); nothing to plot\n",
                path, b->benchmark);
        cJSON_Delete(doc);
        return -1;
    }
    int i = 0;
    for (const cJSON *it = b->items->child; it; it = it->next, i++) {
        if (!cJSON_IsObject(it)) {
            fprintf(stderr, PREFIX "%s: \"%s\"[%d] is not an object\n", path, b->array_name, i);
            cJSON_Delete(doc);
            return -1;
        }
    }
    b->doc = doc;
    c->n_benches++;
    return 0;
}

/*
 * Read one input and tell its kind from the content: a JSON document with a "benchmark" string
 * is a bench result; JSON lines whose records carry a "type" are training metrics. A file that
 * is neither parses as one document (then the error is at its line) or its first line parses
 * alone (then it is JSON lines, checked line by line).
 */
static int read_input(plot_ctx *c, const char *path) {
    char *text = read_text(path);
    const char *err = NULL;
    int rc = -1, line, col;
    if (!text) return -1;
    if (is_blank(text)) {
        fprintf(stderr, PREFIX "%s: the file is empty\n", path);
        goto done;
    }
    cJSON *doc = cJSON_ParseWithOpts(text, &err, 1);
    if (doc) {
        if (cJSON_IsObject(doc) &&
            cJSON_IsString(cJSON_GetObjectItemCaseSensitive(doc, "benchmark"))) {
            rc = parse_bench(c, path, doc);
            goto done;
        }
        int metrics =
            cJSON_IsObject(doc) && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(doc, "type"));
        cJSON_Delete(doc);
        if (!metrics) {
            fprintf(stderr,
                    PREFIX "%s: neither a benchmark result (a JSON object with a \"benchmark\") "
                           "nor training metrics (JSON lines with a \"type\")\n",
                    path);
            goto done;
        }
        rc = parse_metrics(c, path, text);
        goto done;
    }
    const char *bad = err ? err : text;
    /* Does the first non-blank line stand alone as a JSON object? Then this is JSON lines. */
    char *p = text;
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
    char *nl = strchr(p, '\n');
    if (nl) {
        *nl = '\0';
        cJSON *first = cJSON_ParseWithOpts(p, NULL, 1);
        *nl = '\n';
        if (cJSON_IsObject(first)) {
            cJSON_Delete(first);
            rc = parse_metrics(c, path, text);
            goto done;
        }
        cJSON_Delete(first);
    }
    line_col(text, bad, &line, &col);
    /* An error on the last line is most often a file cut short (a run killed while writing). */
    const char *after = strchr(bad, '\n');
    fprintf(stderr, PREFIX "%s:%d: not valid JSON near column %d%s\n", path, line, col,
            !after || is_blank(after) ? " (the last line: was the file cut short?)" : "");
done:
    free(text);
    return rc;
}

/* Drop runs with nothing in them and make the labels of those left unique. */
static int tidy_runs(plot_ctx *c) {
    int n = 0;
    for (int i = 0; i < c->n_runs; i++) {
        run_t *r = &c->runs[i];
        if (r->n_epochs || r->n_steps) {
            c->runs[n++] = *r;
        } else {
            free(r->label);
            free(r->epochs);
            free(r->steps);
        }
    }
    c->n_runs = n;
    /* Candidates in turn: the label, then with the file name (which tells files apart), then
       numbered (which tells runs of one file apart). */
    for (int i = 1; i < n; i++) {
        char *base = c->runs[i].label, *file = file_label(c->runs[i].path), *cand = NULL;
        if (!file) return oom();
        for (int k = 0;; k++) {
            free(cand);
            if (k == 0)
                cand = strdup(base);
            else if (k == 1)
                cand = strstr(base, file) ? NULL : str_printf("%s (%s)", base, file);
            else
                cand = str_printf("%s #%d", base, k);
            if (k == 1 && !cand) continue;
            if (!cand) {
                free(file);
                return oom();
            }
            int clash = 0;
            for (int j = 0; j < i && !clash; j++) clash = !strcmp(cand, c->runs[j].label);
            if (!clash) break;
        }
        free(file);
        free(base);
        c->runs[i].label = cand;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Writing the script and its data                                                             */

/* A gnuplot single-quoted string: ' doubled; control characters become spaces. */
static void gp_str(FILE *f, const char *s) {
    putc('\'', f);
    for (; *s; s++) {
        if (*s == '\'')
            fputs("''", f);
        else
            putc((unsigned char)*s < 32 ? ' ' : *s, f);
    }
    putc('\'', f);
}

/* A string field of a tab-separated data file: no tabs, newlines or double quotes. */
static void tsv_str(FILE *f, const char *s) {
    if (*s == '#') putc(' ', f); /* a leading '#' would make the line a comment */
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        putc(ch < 32 ? ' ' : ch == '"' ? '\'' : ch, f);
    }
}

static void tsv_num(FILE *f, double v) {
    if (isfinite(v))
        fprintf(f, "\t%.9g", v);
    else
        fputs("\tNaN", f);
}

/* Open a new data file in the temporary directory; its path goes to *path (caller frees). */
static FILE *data_open(plot_ctx *c, char **path) {
    *path = str_printf("%s/data%d.tsv", c->dir, c->n_data++);
    if (!*path) {
        oom();
        return NULL;
    }
    FILE *f = fopen(*path, "w");
    if (!f) fprintf(stderr, PREFIX "cannot create %s: %s\n", *path, strerror(errno));
    return f;
}

static int data_close(FILE *f, const char *path) {
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, PREFIX "writing %s failed: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

static void gp_colour(FILE *gp, int i) {
    fprintf(gp, " lc rgb '#%s'", colours[i % NUM_COLOURS]);
}

/* The terminal: pngcairo (antialiased) when this gnuplot has it, else the libgd png. */
static void gp_preamble(plot_ctx *c, const char *tmp_out) {
    FILE *gp = c->gp;
    fprintf(gp,
            "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
            "    set terminal pngcairo size %d,%d noenhanced font 'sans,10'\n"
            "} else {\n"
            "    set terminal png size %d,%d noenhanced\n"
            "}\n",
            c->width, c->height, c->width, c->height);
    fputs("set output ", gp);
    gp_str(gp, tmp_out);
    fputs("\nset datafile separator '\\t'\nset datafile missing 'NaN'\n"
          "set grid\nset key box opaque\n",
          gp);
}

static void gp_title(FILE *gp, const char *title) {
    fputs("set title ", gp);
    gp_str(gp, title);
    putc('\n', gp);
}

/* Multiplot with rows x cols panels; the overall title is --title when there is one. */
static void gp_multiplot(plot_ctx *c, int rows, int cols) {
    fprintf(c->gp, "set multiplot layout %d,%d", rows, cols);
    if (c->title) {
        fputs(" title ", c->gp);
        gp_str(c->gp, c->title);
    }
    putc('\n', c->gp);
}

/* 1 when some epoch of r has a finite value in the double field at offset. */
static int epochs_have(const run_t *r, size_t offset) {
    for (int i = 0; i < r->n_epochs; i++) {
        double v;
        memcpy(&v, (const char *)&r->epochs[i] + offset, sizeof v);
        if (isfinite(v)) return 1;
    }
    return 0;
}
#define EPOCH_HAS(r, field) epochs_have((r), offsetof(epoch_rec, field))
#define EPOCH_HAS_PART(r, k)                                                                       \
    epochs_have((r), offsetof(epoch_rec, parts) + (size_t)(k) * sizeof(double))

/*
 * Where a step sits on the epoch axis: epoch e spans (e-1, e], so step s of an epoch of m
 * minibatches is at e - 1 + s/m. m comes from that epoch's record, else from any epoch record
 * of the run, else from the largest step seen in that epoch (a run stopped before its first
 * epoch record).
 */
static double step_x(const run_t *r, const step_rec *s) {
    double m = NAN, any = NAN, seen = 0;
    for (int i = 0; i < r->n_epochs; i++) {
        double mb = r->epochs[i].minibatches;
        if (!(mb > 0)) continue;
        if (r->epochs[i].epoch == s->epoch) m = mb;
        if (!(any >= mb)) any = mb;
    }
    if (!(m > 0)) m = any;
    if (!(m > 0)) {
        for (int i = 0; i < r->n_steps; i++)
            if (r->steps[i].epoch == s->epoch && r->steps[i].step > seen) seen = r->steps[i].step;
        m = seen > 0 ? seen : 1;
    }
    return s->epoch - 1 + s->step / m;
}

/* Write each run's epochs and steps as data files: epoch loss train_acc valid_acc / x loss. */
static int write_run_data(plot_ctx *c, char **epoch_paths, char **step_paths) {
    for (int i = 0; i < c->n_runs; i++) {
        const run_t *r = &c->runs[i];
        FILE *f = data_open(c, &epoch_paths[i]);
        if (!f) return -1;
        for (int k = 0; k < r->n_epochs; k++) {
            const epoch_rec *e = &r->epochs[k];
            fprintf(f, "%.9g", e->epoch);
            tsv_num(f, e->loss);
            tsv_num(f, e->train_acc);
            tsv_num(f, e->valid_acc);
            putc('\n', f);
        }
        if (data_close(f, epoch_paths[i])) return -1;
        if (!(f = data_open(c, &step_paths[i]))) return -1;
        for (int k = 0; k < r->n_steps; k++) {
            fprintf(f, "%.9g", step_x(r, &r->steps[k]));
            tsv_num(f, r->steps[k].loss);
            putc('\n', f);
        }
        if (data_close(f, step_paths[i])) return -1;
    }
    return 0;
}

static int run_has_step_loss(const run_t *r) {
    for (int k = 0; k < r->n_steps; k++)
        if (isfinite(r->steps[k].loss)) return 1;
    return 0;
}

static void plot_sep(FILE *gp, int *first) {
    fputs(*first ? "plot " : ", \\\n     ", gp);
    *first = 0;
}

static void gp_loss_panel(plot_ctx *c, char **epoch_paths, char **step_paths, int single) {
    FILE *gp = c->gp;
    gp_title(gp, single && c->title ? c->title : "training loss");
    fputs("set xlabel 'epoch'\nset ylabel 'loss (softmax cross-entropy)'\n"
          "set xrange [0:*]\nset yrange [*:*]\n",
          gp);
    fprintf(gp, "set key %s\n", c->n_runs > 2 ? "below horizontal nobox height 1.5" : "top right");
    if (c->logy) fputs("set logscale y\n", gp);
    int first = 1;
    for (int i = 0; i < c->n_runs; i++) {
        const run_t *r = &c->runs[i];
        int has_epoch = EPOCH_HAS(r, loss), has_step = run_has_step_loss(r);
        /* Steps thin and half transparent, epochs bold: the noise and the trend. */
        if (has_step) {
            plot_sep(gp, &first);
            gp_str(gp, step_paths[i]);
            fprintf(gp, " using 1:2 with lines lw 1 lc rgb '#80%s'", colours[i % NUM_COLOURS]);
            if (has_epoch) {
                fputs(" notitle", gp);
            } else {
                fputs(" title ", gp);
                gp_str(gp, r->label);
            }
        }
        if (has_epoch) {
            plot_sep(gp, &first);
            gp_str(gp, epoch_paths[i]);
            fputs(" using 1:2 with linespoints lw 2 pt 7 ps 0.8", gp);
            gp_colour(gp, i);
            fputs(" title ", gp);
            gp_str(gp, r->label);
        }
    }
    fputs(c->logy ? "\nunset logscale y\n" : "\n", gp);
}

static void gp_acc_panel(plot_ctx *c, char **epoch_paths, int single) {
    FILE *gp = c->gp;
    gp_title(gp, single && c->title ? c->title : "accuracy");
    /* Two lines a run: past two runs the key goes under the panel, off the curves. */
    fprintf(gp,
            "set xlabel 'epoch'\nset ylabel 'accuracy'\nset xrange [0:*]\nset yrange [*:*]\n"
            "set key %s\n",
            c->n_runs > 2 ? "below horizontal nobox height 1.5" : "bottom right");
    int first = 1;
    for (int i = 0; i < c->n_runs; i++) {
        const run_t *r = &c->runs[i];
        if (EPOCH_HAS(r, valid_acc)) {
            plot_sep(gp, &first);
            gp_str(gp, epoch_paths[i]);
            fputs(" using 1:4 with linespoints lw 2 pt 7 ps 0.8", gp);
            gp_colour(gp, i);
            char *t = isfinite(r->test_acc)
                          ? str_printf("%s valid (test %.4f)", r->label, r->test_acc)
                          : str_printf("%s valid", r->label);
            fputs(" title ", gp);
            gp_str(gp, t ? t : r->label);
            free(t);
        }
        if (EPOCH_HAS(r, train_acc)) {
            plot_sep(gp, &first);
            gp_str(gp, epoch_paths[i]);
            fputs(" using 1:3 with linespoints lw 1.5 dt 2 pt 6 ps 0.8", gp);
            gp_colour(gp, i);
            char *t = str_printf("%s train", r->label);
            fputs(" title ", gp);
            gp_str(gp, t ? t : r->label);
            free(t);
        }
    }
    fputs("\n", gp);
}

/*
 * A stacked bar per row: the parts present in any row, "other" for what the parts leave of the
 * total, and the total itself as a mark. In a pipelined mode the stages overlap, so the stack
 * can stand above the mark: the mark is the wall-clock time.
 */
static int gp_stack_panel(plot_ctx *c, const char *title, const char *xlabel, const stack_row *rows,
                          int n) {
    FILE *gp = c->gp;
    int has[NUM_PARTS] = {0}, any_part = 0, has_total = 0, has_other = 0;
    for (int i = 0; i < n; i++) {
        double sum = 0;
        for (int k = 0; k < NUM_PARTS; k++)
            if (isfinite(rows[i].parts[k])) {
                sum += rows[i].parts[k];
                any_part = 1;
                has[k] |= rows[i].parts[k] > 0; /* a part that is always 0 gets no legend */
            }
        if (isfinite(rows[i].total)) {
            has_total = 1;
            if (rows[i].total - sum > 1e-3 * rows[i].total) has_other = 1;
        }
    }
    if (!any_part) has_other = has_total; /* no breakdown: the bar is the total */
    char *path = NULL;
    FILE *f = data_open(c, &path);
    if (!f) {
        free(path);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        double sum = 0;
        tsv_str(f, rows[i].label);
        for (int k = 0; k < NUM_PARTS; k++) {
            double v = isfinite(rows[i].parts[k]) ? rows[i].parts[k] : 0;
            sum += v;
            tsv_num(f, v);
        }
        tsv_num(f, isfinite(rows[i].total) && rows[i].total > sum ? rows[i].total - sum : 0);
        tsv_num(f, rows[i].total);
        putc('\n', f);
    }
    if (data_close(f, path)) {
        free(path);
        return -1;
    }
    gp_title(gp, title);
    fputs("set style data histograms\nset style histogram rowstacked\n"
          "set style fill solid 0.85 border -1\nset boxwidth 0.7\nset xrange [*:*]\n"
          "set yrange [0:*]\nset ylabel 'seconds'\nset key outside right top\n",
          gp);
    fputs("set xlabel ", gp);
    gp_str(gp, xlabel);
    /* Long labels or many bars: slant the labels, and with very many label only some. */
    size_t longest = 0;
    for (int i = 0; i < n; i++)
        if (strlen(rows[i].label) > longest) longest = strlen(rows[i].label);
    int every = n > 40 ? (n + 39) / 40 : 1;
    fprintf(gp, "\nset xtics %s\n", longest * (size_t)n > 80 ? "rotate by -30" : "norotate");
    int first = 1;
    for (int k = 0; k <= NUM_PARTS; k++) {
        if (k < NUM_PARTS ? !has[k] : !has_other) continue;
        /* The bar labels come with the first column drawn, once. */
        int label_it = first;
        plot_sep(gp, &first);
        gp_str(gp, path);
        fprintf(gp, " using %d", k + 2);
        if (label_it) fprintf(gp, ":xtic(int($0)%%%d == 0 ? stringcolumn(1) : '')", every);
        fputs(" title ", gp);
        gp_str(gp, k < NUM_PARTS ? part_titles[k] : any_part ? "other" : "epoch time");
        fprintf(gp, " lc rgb '#%s'", k < NUM_PARTS ? part_colours[k] : "a0a0a0");
    }
    if (any_part && has_total) {
        plot_sep(gp, &first);
        gp_str(gp, path);
        fprintf(gp,
                " using 0:%d with points pt 9 ps 1.6 lc rgb '#000000' title "
                "'wall-clock total'",
                NUM_PARTS + 3);
    }
    fputs("\n", gp);
    /* Later panels of a multiplot must not inherit the histogram style. */
    fputs("set style data linespoints\nset xtics norotate\nunset boxwidth\n", gp);
    free(path);
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Training metrics                                                                            */

static int run_has_time(const run_t *r) {
    if (EPOCH_HAS(r, epoch_s)) return 1;
    for (int k = 0; k < NUM_PARTS; k++)
        if (EPOCH_HAS_PART(r, k)) return 1;
    return 0;
}

static int runs_have(const plot_ctx *c, int what) {
    for (int i = 0; i < c->n_runs; i++) {
        const run_t *r = &c->runs[i];
        if (what == 'l' && (EPOCH_HAS(r, loss) || run_has_step_loss(r))) return 1;
        if (what == 'a' && (EPOCH_HAS(r, valid_acc) || EPOCH_HAS(r, train_acc))) return 1;
        if (what == 't' && run_has_time(r)) return 1;
    }
    return 0;
}

static int nothing_to_plot(char *const *files, int nfiles, const char *what) {
    fprintf(stderr, PREFIX "nothing to plot: no record in");
    for (int i = 0; i < nfiles; i++) fprintf(stderr, "%s %s", i ? "," : "", files[i]);
    fprintf(stderr, " has %s\n", what);
    return -1;
}

/* Panels of a grid for n charts: a column of up to 3, then two columns. */
static void grid(int n, int *rows, int *cols) {
    *cols = n <= 3 ? 1 : 2;
    *rows = (n + *cols - 1) / *cols;
}

static int plot_metrics(plot_ctx *c, const char *tmp_out, char *const *files, int nfiles) {
    char **epoch_paths = calloc((size_t)c->n_runs + 1, sizeof(char *));
    char **step_paths = calloc((size_t)c->n_runs + 1, sizeof(char *));
    stack_row *rows = NULL;
    int rc = -1;
    if (!epoch_paths || !step_paths) {
        oom();
        goto done;
    }
    if (c->n_runs == 0) {
        nothing_to_plot(files, nfiles, "a step or an epoch");
        goto done;
    }
    int has_loss = runs_have(c, 'l'), has_acc = runs_have(c, 'a'), has_time = runs_have(c, 't');
    const char *what = c->what;
    if (!strcmp(what, "loss") && !has_loss) {
        nothing_to_plot(files, nfiles, "a loss");
        goto done;
    }
    if (!strcmp(what, "acc") && !has_acc) {
        nothing_to_plot(files, nfiles, "a train_acc or valid_acc");
        goto done;
    }
    if (!strcmp(what, "time") && !has_time) {
        nothing_to_plot(files, nfiles,
                        "an epoch_s or a part (sample_s, gather_s, train_s, wait_s)");
        goto done;
    }
    if (!strcmp(what, "auto") && !has_loss && !has_acc) {
        nothing_to_plot(files, nfiles,
                        has_time ? "a loss, train_acc or valid_acc (there are epoch times: "
                                   "--what time draws them)"
                                 : "a loss, train_acc or valid_acc");
        goto done;
    }

    if (!strcmp(what, "time")) {
        int n = 0, r_rows, r_cols;
        /* A panel per run that has epoch times (the others are left out). */
        for (int i = 0; i < c->n_runs; i++) n += run_has_time(&c->runs[i]);
        grid(n, &r_rows, &r_cols);
        if (!c->size_given) {
            c->width = r_cols > 1 ? 1400 : 1000;
            c->height = r_rows > 1 ? 340 * r_rows : 600;
        }
        gp_preamble(c, tmp_out);
        if (n > 1) gp_multiplot(c, r_rows, r_cols);
        for (int i = 0; i < c->n_runs; i++) {
            const run_t *r = &c->runs[i];
            if (!run_has_time(r)) continue;
            free(rows);
            if (!(rows = calloc((size_t)r->n_epochs, sizeof *rows))) {
                oom();
                goto done;
            }
            for (int k = 0; k < r->n_epochs; k++) {
                rows[k].label = str_printf("%g", r->epochs[k].epoch);
                if (!rows[k].label) {
                    for (int j = 0; j < k; j++) free(rows[j].label);
                    oom();
                    goto done;
                }
                rows[k].total = r->epochs[k].epoch_s;
                memcpy(rows[k].parts, r->epochs[k].parts, sizeof rows[k].parts);
            }
            char *title =
                n == 1 && c->title ? strdup(c->title) : str_printf("epoch time: %s", r->label);
            int prc = title ? gp_stack_panel(c, title, "epoch", rows, r->n_epochs) : oom();
            free(title);
            for (int k = 0; k < r->n_epochs; k++) free(rows[k].label);
            if (prc) goto done;
        }
        if (n > 1) fputs("unset multiplot\n", c->gp);
        rc = 0;
        goto done;
    }

    if (write_run_data(c, epoch_paths, step_paths)) goto done;
    int show_loss = !strcmp(what, "loss") || (!strcmp(what, "auto") && has_loss);
    int show_acc = !strcmp(what, "acc") || (!strcmp(what, "auto") && has_acc);
    int both = show_loss && show_acc;
    if (!c->size_given && both) c->width = 1400, c->height = 560;
    gp_preamble(c, tmp_out);
    if (both) gp_multiplot(c, 1, 2);
    if (show_loss) gp_loss_panel(c, epoch_paths, step_paths, !both);
    if (show_acc) gp_acc_panel(c, epoch_paths, !both);
    if (both) fputs("unset multiplot\n", c->gp);
    rc = 0;
done:
    for (int i = 0; i < c->n_runs; i++) {
        if (epoch_paths) free(epoch_paths[i]);
        if (step_paths) free(step_paths[i]);
    }
    free(epoch_paths);
    free(step_paths);
    free(rows);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Benchmark results                                                                           */

/* One result drawn: its bar (category, series) or its point on a sweep (panel, series, x). */
typedef struct {
    char *category, *series;
    double panel, x, y;
    const cJSON *item;
    int file;
} result_t;

typedef struct {
    result_t *res;
    int n, cap;
    char **cats, **sers; /* distinct categories and series, in order of appearance */
    int n_cats, cap_cats, n_sers, cap_sers;
} results;

static void results_free(results *r) {
    for (int i = 0; i < r->n; i++) free(r->res[i].category), free(r->res[i].series);
    free(r->res);
    free(r->cats);
    free(r->sers);
}

static const char *default_metric(const char *benchmark) {
    if (!strcmp(benchmark, "gather")) return "gbps";
    if (!strcmp(benchmark, "sample")) return "seps";
    if (!strcmp(benchmark, "epoch")) return "epoch_s";
    return NULL;
}

static const char *metric_axis(const char *metric, double *scale) {
    *scale = 1;
    if (!strcmp(metric, "gbps")) return "GB/s";
    if (!strcmp(metric, "seps")) return *scale = 1e-6, "million sampled edges per second";
    if (!strcmp(metric, "epoch_s")) return "seconds per epoch";
    if (!strcmp(metric, "seconds")) return "seconds";
    if (!strcmp(metric, "ratio_to_ceiling")) return "ratio to the ceiling";
    return metric;
}

static double item_number(const cJSON *it, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(it, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static const char *item_string(const cJSON *it, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(it, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/*
 * Whether a string field of a result names part of its configuration ("products", "15,10,5"):
 * a short identifier. Descriptions (bench epoch's "plan", a note) are not, nor is the mode.
 */
static int is_config_field(const cJSON *f) {
    if (!cJSON_IsString(f) || !strcmp(f->string, "mode") || !f->valuestring[0]) return 0;
    if (strlen(f->valuestring) > 32) return 0;
    for (const char *p = f->valuestring; *p; p++)
        if (*p == ' ' || *p == '\t' || *p == '\n') return 0;
    return 1;
}

/* The configuration fields of a result, in order, joined by spaces: its bar cluster. */
static char *item_category(const cJSON *it) {
    size_t n = 1;
    for (const cJSON *f = it->child; f; f = f->next)
        if (is_config_field(f)) n += strlen(f->valuestring) + 1;
    char *s = malloc(n);
    if (!s) return NULL;
    s[0] = '\0';
    for (const cJSON *f = it->child; f; f = f->next) {
        if (!is_config_field(f)) continue;
        if (s[0]) strcat(s, " ");
        strcat(s, f->valuestring);
    }
    return s;
}

/* Index of s in list, appending it when absent; -1 when out of memory. */
static int intern(char ***list, int *n, int *cap, char *s) {
    for (int i = 0; i < *n; i++)
        if (!strcmp((*list)[i], s)) return i;
    if (grow((void **)list, cap, *n, sizeof **list)) return -1;
    (*list)[*n] = s;
    return (*n)++;
}

static int same_panel(double a, double b) {
    return a == b || (isnan(a) && isnan(b));
}

/*
 * Every result that has the field drawn (stacked: the epoch time or one of its parts). A
 * result's category is its string fields but the mode ("products 15,10,5"), its series the
 * mode, with the file name when several files are overlaid. Results told apart by mode alone
 * make the modes the categories and the files the series. *sweep stays 1 when every result of
 * bench gather has a row width to draw it over.
 */
static int collect_results(const plot_ctx *c, const char *metric, double scale, int stacked,
                           results *R, int *sweep) {
    const char *benchmark = c->benches[0].benchmark;
    *sweep = !stacked && !strcmp(benchmark, "gather");
    for (int b = 0; b < c->n_benches; b++) {
        for (const cJSON *it = c->benches[b].items->child; it; it = it->next) {
            double y = item_number(it, metric);
            int parts = 0;
            for (int k = 0; k < NUM_PARTS; k++) parts += isfinite(item_number(it, part_keys[k]));
            if (!isfinite(y) && !(stacked && parts)) continue;
            if (grow((void **)&R->res, &R->cap, R->n, sizeof *R->res)) return -1;
            result_t *r = &R->res[R->n++];
            memset(r, 0, sizeof *r);
            r->item = it;
            r->file = b;
            r->y = y * scale;
            r->x = item_number(it, "row_bytes");
            r->panel = item_number(it, "ids_requested");
            if (!isfinite(r->panel)) r->panel = item_number(it, "ids");
            if (!isfinite(r->x)) *sweep = 0;
            const char *mode = item_string(it, "mode");
            char *file = file_label(c->benches[b].path);
            r->category = item_category(it);
            r->series = !file ? NULL
                        : c->n_benches > 1
                            ? str_printf("%s%s(%s)", mode ? mode : "", mode ? " " : "", file)
                            : strdup(mode ? mode : metric);
            free(file);
            if (!r->category || !r->series) return oom();
        }
    }
    int no_category = 1;
    for (int i = 0; i < R->n; i++) no_category &= R->res[i].category[0] == '\0';
    if (no_category && !*sweep) {
        for (int i = 0; i < R->n; i++) {
            result_t *r = &R->res[i];
            const char *mode = item_string(r->item, "mode");
            free(r->category);
            free(r->series);
            r->category = strdup(mode ? mode : "result");
            r->series = c->n_benches > 1 ? file_label(c->benches[r->file].path) : strdup(metric);
            if (!r->category || !r->series) return oom();
        }
    }
    for (int i = 0; i < R->n; i++)
        if (intern(&R->cats, &R->n_cats, &R->cap_cats, R->res[i].category) < 0 ||
            intern(&R->sers, &R->n_sers, &R->cap_sers, R->res[i].series) < 0)
            return -1;
    return 0;
}

static int no_results(const plot_ctx *c, const char *metric, int stacked) {
    const cJSON *first = c->benches[0].items->child;
    fprintf(stderr, PREFIX "no result in %s%s has a number \"%s\"; ", c->benches[0].path,
            c->n_benches > 1 ? " (or the other files)" : "", metric);
    if (stacked) {
        fprintf(stderr, "--what time needs epoch_s or its parts (sample_s, gather_s, train_s, "
                        "wait_s)\n");
    } else {
        fprintf(stderr, "the numeric fields of its first result:");
        for (const cJSON *f = first->child; f; f = f->next)
            if (cJSON_IsNumber(f)) fprintf(stderr, " %s", f->string);
        fprintf(stderr, " (choose one with --metric)\n");
    }
    return -1;
}

static int draw_stacked(plot_ctx *c, const results *R, const char *metric, const char *title,
                        const char *tmp_out) {
    stack_row *rows = calloc((size_t)R->n, sizeof *rows);
    int rc = -1;
    if (!rows) return oom();
    for (int i = 0; i < R->n; i++) {
        const char *cat = R->res[i].category, *ser = R->res[i].series;
        if (!strcmp(ser, metric)) ser = "";
        rows[i].label = str_printf("%s%s%s", cat, cat[0] && ser[0] ? " " : "", ser);
        if (!rows[i].label) {
            oom();
            goto done;
        }
        rows[i].total = item_number(R->res[i].item, "epoch_s");
        for (int k = 0; k < NUM_PARTS; k++)
            rows[i].parts[k] = item_number(R->res[i].item, part_keys[k]);
    }
    gp_preamble(c, tmp_out);
    rc = gp_stack_panel(c, title, "", rows, R->n);
done:
    for (int i = 0; i < R->n; i++) free(rows[i].label);
    free(rows);
    return rc;
}

/* Lines over the row width, a line per series, a panel per ids-per-call; the ceiling dashed. */
static int draw_sweep(plot_ctx *c, const results *R, const char *metric, const char *axis,
                      const char *title, const char *tmp_out) {
    double *panels = NULL;
    char *path = NULL;
    int n_panels = 0, rc = -1;
    FILE *gp = c->gp;
    for (int i = 0; i < R->n; i++) {
        int found = 0;
        for (int p = 0; p < n_panels; p++) found |= same_panel(panels[p], R->res[i].panel);
        if (found) continue;
        double *np = realloc(panels, (size_t)(n_panels + 1) * sizeof *panels);
        if (!np) {
            oom();
            goto done;
        }
        panels = np;
        panels[n_panels++] = R->res[i].panel;
    }
    int p_cols = n_panels <= 3 ? n_panels : 3, p_rows = (n_panels + 2) / 3;
    if (!c->size_given) {
        c->width = p_cols > 1 ? 560 * p_cols : 1000;
        c->height = 640 * p_rows;
    }
    /* Rates that span orders of magnitude (GPU-resident next to zero-copy) need a log axis. */
    double lo = INFINITY, hi = 0;
    for (int i = 0; i < R->n; i++)
        if (R->res[i].y > 0) lo = fmin(lo, R->res[i].y), hi = fmax(hi, R->res[i].y);
    int logy = c->logy || (hi > 0 && hi > 30 * lo);
    gp_preamble(c, tmp_out);
    fputs("set logscale x 2\nset format x '%.0f'\nset xlabel 'row bytes'\n"
          "set key below horizontal nobox height 1.5\n",
          gp);
    fputs(logy ? "set logscale y\nset yrange [*:*]\nset ylabel " : "set yrange [0:*]\nset ylabel ",
          gp);
    gp_str(gp, axis);
    putc('\n', gp);
    if (n_panels > 1) {
        fprintf(gp, "set multiplot layout %d,%d title ", p_rows, p_cols);
        gp_str(gp, title);
        putc('\n', gp);
    }
    for (int p = 0; p < n_panels; p++) {
        char *pt = n_panels == 1         ? strdup(title)
                   : isfinite(panels[p]) ? str_printf("%.0f ids per call", panels[p])
                                         : strdup("");
        if (!pt) {
            oom();
            goto done;
        }
        gp_title(gp, pt);
        free(pt);
        int first = 1;
        for (int s = 0; s < R->n_sers; s++) {
            /* This series' points of this panel, by increasing row width. */
            int count = 0;
            for (int i = 0; i < R->n; i++)
                count +=
                    !strcmp(R->res[i].series, R->sers[s]) && same_panel(R->res[i].panel, panels[p]);
            if (!count) continue;
            free(path);
            FILE *f = data_open(c, &path);
            if (!f) goto done;
            for (double last = -INFINITY;;) {
                double next = INFINITY;
                for (int i = 0; i < R->n; i++)
                    if (!strcmp(R->res[i].series, R->sers[s]) &&
                        same_panel(R->res[i].panel, panels[p]) && R->res[i].x > last &&
                        R->res[i].x < next)
                        next = R->res[i].x;
                if (!isfinite(next)) break;
                for (int i = 0; i < R->n; i++)
                    if (!strcmp(R->res[i].series, R->sers[s]) &&
                        same_panel(R->res[i].panel, panels[p]) && R->res[i].x == next) {
                        fprintf(f, "%.9g", next);
                        tsv_num(f, R->res[i].y);
                        putc('\n', f);
                    }
                last = next;
            }
            if (data_close(f, path)) goto done;
            plot_sep(gp, &first);
            gp_str(gp, path);
            fputs(" using 1:2 with linespoints lw 2 pt 7 ps 0.8", gp);
            gp_colour(gp, s);
            fputs(" title ", gp);
            gp_str(gp, R->sers[s]);
        }
        /* The ceiling each file measured, when the field drawn is the rate in GB/s. */
        for (int b = 0; b < c->n_benches && !strcmp(metric, "gbps"); b++) {
            const cJSON *ceil = cJSON_GetObjectItemCaseSensitive(c->benches[b].doc, "ceiling");
            double g = item_number(ceil, "gbps");
            if (!isfinite(g)) continue;
            char *file = file_label(c->benches[b].path);
            /* Short, so that the key fits under the panel; its kind is in the chart title. */
            char *t = !file ? NULL
                            : str_printf("ceiling %.1f GB/s%s%s%s", g, c->n_benches > 1 ? " (" : "",
                                         c->n_benches > 1 ? file : "", c->n_benches > 1 ? ")" : "");
            free(file);
            if (!t) {
                oom();
                goto done;
            }
            plot_sep(gp, &first);
            fprintf(gp, "%.9g with lines dt 2 lw 1.5 lc rgb '#%s' title ", g,
                    b ? colours[(R->n_sers + b) % NUM_COLOURS] : "000000");
            gp_str(gp, t);
            free(t);
        }
        fputs("\n", gp);
    }
    if (n_panels > 1) fputs("unset multiplot\n", gp);
    rc = 0;
done:
    free(panels);
    free(path);
    return rc;
}

/* Bars: a cluster per configuration, a bar per mode (or per file). */
static int draw_bars(plot_ctx *c, const results *R, const char *metric, const char *axis,
                     const char *title, const char *tmp_out) {
    const int nc = R->n_cats, ns = R->n_sers;
    double *m = malloc((size_t)nc * (size_t)ns * sizeof *m);
    char *path = NULL;
    int rc = -1;
    FILE *gp = c->gp, *f = NULL;
    if (!m) return oom();
    for (int i = 0; i < nc * ns; i++) m[i] = NAN;
    for (int i = 0; i < R->n; i++) {
        int ci = 0, si = 0;
        while (strcmp(R->cats[ci], R->res[i].category)) ci++;
        while (strcmp(R->sers[si], R->res[i].series)) si++;
        double *cell = &m[(size_t)ci * (size_t)ns + (size_t)si];
        if (isfinite(*cell))
            fprintf(stderr, PREFIX "note: several results for '%s' / '%s'; drawing the last\n",
                    R->res[i].category, R->res[i].series);
        *cell = R->res[i].y;
    }
    if (!(f = data_open(c, &path))) goto done;
    size_t longest = 0;
    for (int ci = 0; ci < nc; ci++) {
        tsv_str(f, R->cats[ci]);
        if (strlen(R->cats[ci]) > longest) longest = strlen(R->cats[ci]);
        for (int si = 0; si < ns; si++) tsv_num(f, m[(size_t)ci * (size_t)ns + (size_t)si]);
        putc('\n', f);
    }
    if (data_close(f, path)) goto done;
    if (!c->size_given && nc * ns > 24) c->width = 1400;
    gp_preamble(c, tmp_out);
    gp_title(gp, title);
    fputs("set style data histograms\nset style histogram clustered gap 1\n"
          "set style fill solid 0.85 border -1\nset key top left\n",
          gp);
    fputs(c->logy ? "set logscale y\nset yrange [*:*]\nset ylabel "
                  : "set yrange [0:*]\nset ylabel ",
          gp);
    gp_str(gp, axis);
    fprintf(gp, "\nset xtics %s\n", longest * (size_t)nc > 90 ? "rotate by -25" : "norotate");
    if (ns == 1 && !strcmp(R->sers[0], metric)) fputs("unset key\n", gp);
    int first = 1;
    for (int si = 0; si < ns; si++) {
        int any = 0;
        for (int ci = 0; ci < nc; ci++) any |= isfinite(m[(size_t)ci * (size_t)ns + (size_t)si]);
        if (!any) continue;
        int label_it = first;
        plot_sep(gp, &first);
        gp_str(gp, path);
        fprintf(gp, " using %d%s", si + 2, label_it ? ":xtic(1)" : "");
        gp_colour(gp, si);
        if (ns == 1 && !strcmp(R->sers[0], metric)) {
            fputs(" notitle", gp); /* one series: the key is left out below */
        } else {
            fputs(" title ", gp);
            gp_str(gp, R->sers[si]);
        }
    }
    fputs("\n", gp);
    rc = 0;
done:
    free(m);
    free(path);
    return rc;
}

/* Returns 0, -1 (failure, reported) or -2 (usage error, reported). */
static int plot_bench(plot_ctx *c, const char *tmp_out) {
    const char *benchmark = c->benches[0].benchmark;
    results R;
    char *title = NULL;
    int sweep, rc = -1;
    double scale;
    memset(&R, 0, sizeof R);
    for (int b = 1; b < c->n_benches; b++) {
        if (strcmp(c->benches[b].benchmark, benchmark)) {
            fprintf(stderr,
                    PREFIX "%s is a bench %s result and %s a bench %s result: plot them "
                           "separately\n",
                    c->benches[0].path, benchmark, c->benches[b].path, c->benches[b].benchmark);
            return -2;
        }
    }
    if (!strcmp(c->what, "loss") || !strcmp(c->what, "acc")) {
        fprintf(stderr,
                PREFIX "--what %s is for training metrics; %s is a bench %s result (use auto, or "
                       "time for bench epoch)\n",
                c->what, c->benches[0].path, benchmark);
        return -2;
    }
    const int stacked = !strcmp(c->what, "time");
    const char *metric = stacked ? "epoch_s" : c->metric ? c->metric : default_metric(benchmark);
    if (!metric) {
        fprintf(stderr,
                PREFIX "%s: no default field to draw for a bench %s result; name one with "
                       "--metric\n",
                c->benches[0].path, benchmark);
        return -2;
    }
    const char *axis = metric_axis(metric, &scale);
    if (collect_results(c, metric, scale, stacked, &R, &sweep)) goto done;
    if (R.n == 0) {
        no_results(c, metric, stacked);
        goto done;
    }
    /* The title: --title, or the benchmark, with the device and commit of a single file. */
    const char *what_drawn = stacked ? "epoch time by part" : axis;
    if (c->title) {
        title = strdup(c->title);
    } else if (c->n_benches == 1) {
        const cJSON *doc = c->benches[0].doc;
        const char *commit = item_string(doc, "commit");
        const char *device = item_string(cJSON_GetObjectItemCaseSensitive(doc, "device"), "name");
        const char *ceiling = item_string(cJSON_GetObjectItemCaseSensitive(doc, "ceiling"), "kind");
        int show_ceiling = sweep && ceiling && !strcmp(metric, "gbps");
        const char *preset = item_string(cJSON_GetObjectItemCaseSensitive(doc, "config"), "preset");
        title = str_printf("bench %s%s%s: %s%s%s%s%s%s%s", benchmark, preset ? " " : "",
                           preset ? preset : "", what_drawn,
                           show_ceiling ? " (dashed: the ceiling, " : "",
                           show_ceiling ? ceiling : "", show_ceiling ? ")" : "", device ? ", " : "",
                           device ? device : "", commit ? ", commit " : "");
        if (title && commit) {
            /* A configure-time commit is the whole hash: 12 digits tell it apart. */
            char *t = str_printf("%s%.12s", title, commit);
            free(title);
            title = t;
        }
    } else {
        title = str_printf("bench %s: %s", benchmark, what_drawn);
    }
    if (!title) {
        oom();
        goto done;
    }
    if (stacked)
        rc = draw_stacked(c, &R, metric, title, tmp_out);
    else if (sweep)
        rc = draw_sweep(c, &R, metric, axis, title, tmp_out);
    else
        rc = draw_bars(c, &R, metric, axis, title, tmp_out);
done:
    free(title);
    results_free(&R);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Running gnuplot                                                                             */

/* The first executable `name` on PATH, or NULL. */
static char *find_in_path(const char *name) {
    const char *path = getenv("PATH");
    if (!path) path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path;;) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        char *cand = len ? str_printf("%.*s/%s", (int)len, p, name) : str_printf("./%s", name);
        struct stat st;
        if (cand && stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0)
            return cand;
        free(cand);
        if (!colon) return NULL;
        p = colon + 1;
    }
}

/* Print a file's lines to stderr, each after prefix; up to max_lines of them. */
static void print_log(const char *path, const char *prefix, int max_lines) {
    FILE *f = fopen(path, "r");
    char line[1024];
    int n = 0;
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        if (is_blank(line)) continue;
        if (n++ == max_lines) {
            fprintf(stderr, "%s...\n", prefix);
            break;
        }
        fprintf(stderr, "%s%s%s", prefix, line, strchr(line, '\n') ? "" : "\n");
    }
    fclose(f);
}

static int run_gnuplot(const char *gnuplot, const char *script, const char *log) {
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int status, err;
    char arg0[] = "gnuplot";
    char *args[] = {arg0, (char *)script, NULL};
    if (posix_spawn_file_actions_init(&fa)) return oom();
    err = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (!err)
        err = posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (!err) err = posix_spawn_file_actions_adddup2(&fa, 1, 2);
    if (!err) err = posix_spawn(&pid, gnuplot, &fa, NULL, args, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (err) {
        fprintf(stderr, PREFIX "cannot run %s: %s\n", gnuplot, strerror(err));
        return -1;
    }
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, PREFIX "waiting for gnuplot failed: %s\n", strerror(errno));
            return -1;
        }
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        print_log(log, "gnuplot: ", 20); /* its warnings, if any */
        return 0;
    }
    if (WIFEXITED(status))
        fprintf(stderr, PREFIX "gnuplot failed (exit status %d):\n", WEXITSTATUS(status));
    else
        fprintf(stderr, PREFIX "gnuplot was killed by signal %d\n",
                WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    print_log(log, "  ", 40);
    return -1;
}

/* 1 when path starts with the PNG signature. */
static int is_png(const char *path) {
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    unsigned char buf[8];
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t got = fread(buf, 1, sizeof buf, f);
    fclose(f);
    return got == sizeof buf && !memcmp(buf, sig, sizeof sig);
}

/* Remove the temporary directory and what this command wrote in it. */
static void remove_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char *p = str_printf("%s/%s", dir, e->d_name);
            if (p) unlink(p);
            free(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

static int parse_size(const char *text, int *w, int *h) {
    char *end;
    long a = strtol(text, &end, 10);
    if (end == text || (*end != 'x' && *end != 'X')) return -1;
    const char *q = end + 1;
    long b = strtol(q, &end, 10);
    if (end == q || *end || a < 100 || a > 10000 || b < 100 || b > 10000) return -1;
    *w = (int)a;
    *h = (int)b;
    return 0;
}

int cmd_plot(int argc, char **argv) {
    static const struct option long_opts[] = {
        {"output", required_argument, 0, 'o'}, {"what", required_argument, 0, 'w'},
        {"title", required_argument, 0, 't'},  {"metric", required_argument, 0, 'm'},
        {"size", required_argument, 0, 's'},   {"logy", no_argument, 0, 'l'},
        {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
    plot_ctx c;
    char *gnuplot = NULL, *tmp_out = NULL, *script = NULL, *log = NULL;
    int rc = CLI_EXIT_FAIL, n_metrics_files = 0, opt;
    struct stat st;
    memset(&c, 0, sizeof c);
    c.what = "auto";
    c.width = 1000;
    c.height = 600;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "ho:", long_opts, NULL)) != -1) {
        switch (opt) {
        case 'o':
            c.out = optarg;
            break;
        case 'w':
            if (strcmp(optarg, "loss") && strcmp(optarg, "acc") && strcmp(optarg, "time") &&
                strcmp(optarg, "auto"))
                return cli_usage_error("plot", "--what '%s' is not loss, acc, time or auto",
                                       optarg);
            c.what = optarg;
            break;
        case 't':
            c.title = optarg;
            break;
        case 'm':
            if (!*optarg) return cli_usage_error("plot", "--metric needs a field name");
            c.metric = optarg;
            break;
        case 's':
            if (parse_size(optarg, &c.width, &c.height))
                return cli_usage_error("plot",
                                       "--size '%s' is not WIDTHxHEIGHT in pixels, each "
                                       "100..10000 (e.g. 1200x700)",
                                       optarg);
            c.size_given = 1;
            break;
        case 'l':
            c.logy = 1;
            break;
        case 'h':
            help();
            return 0;
        default:
            return cli_usage_error("plot", "unknown option");
        }
    }
    if (optind >= argc)
        return cli_usage_error("plot", "no input file: give one or more metrics or bench JSON "
                                       "files");
    if (!c.out || !*c.out)
        return cli_usage_error("plot", "no output: name the PNG to write with -o OUT.png");
    if (stat(c.out, &st) == 0 && S_ISDIR(st.st_mode))
        return cli_usage_error("plot", "-o %s is a directory; name the PNG file to write", c.out);
    const int nfiles = argc - optind;
    char *const *files = argv + optind;

    /* Read and check every input before anything else. */
    if (!(c.benches = calloc((size_t)nfiles, sizeof *c.benches))) {
        oom();
        goto done;
    }
    for (int i = 0; i < nfiles; i++) {
        int before = c.n_benches;
        if (read_input(&c, files[i])) goto done;
        n_metrics_files += c.n_benches == before;
    }
    if (n_metrics_files && c.n_benches) {
        const char *m = NULL, *b = c.benches[0].path;
        for (int i = 0; i < nfiles && !m; i++) {
            int is_bench = 0;
            for (int k = 0; k < c.n_benches; k++) is_bench |= c.benches[k].path == files[i];
            if (!is_bench) m = files[i];
        }
        rc = cli_usage_error("plot",
                             "%s holds training metrics and %s a benchmark result: plot them "
                             "separately",
                             m, b);
        goto done;
    }
    if (n_metrics_files && c.metric) {
        rc = cli_usage_error("plot",
                             "--metric is for benchmark results; %s holds training "
                             "metrics",
                             files[0]);
        goto done;
    }
    if (tidy_runs(&c)) goto done;

    /* gnuplot draws into a temporary file beside OUT, renamed over OUT when it is complete. */
    if (!(tmp_out = str_printf("%s.tmp.XXXXXX", c.out))) {
        oom();
        goto done;
    }
    int fd = mkstemp(tmp_out);
    if (fd < 0) {
        fprintf(stderr,
                PREFIX "cannot create %s: %s (is the directory of the output there and "
                       "writable?)\n",
                tmp_out, strerror(errno));
        free(tmp_out);
        tmp_out = NULL;
        goto done;
    }
    /* mkstemp makes the file private; the picture gets the mode a new file would get. */
    mode_t mask = umask(0);
    umask(mask);
    if (fchmod(fd, 0666 & ~mask) != 0)
        fprintf(stderr, PREFIX "note: cannot set the mode of %s: %s\n", tmp_out, strerror(errno));
    close(fd);
    const char *tmpdir = getenv("TMPDIR");
    if (!(c.dir = str_printf("%s/graphdirect-plot.XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp"))) {
        oom();
        goto done;
    }
    if (!mkdtemp(c.dir)) {
        fprintf(stderr, PREFIX "cannot create the temporary directory %s: %s\n", c.dir,
                strerror(errno));
        free(c.dir);
        c.dir = NULL;
        goto done;
    }
    if (!(script = str_printf("%s/plot.gp", c.dir)) ||
        !(log = str_printf("%s/gnuplot.log", c.dir))) {
        oom();
        goto done;
    }
    if (!(c.gp = fopen(script, "w"))) {
        fprintf(stderr, PREFIX "cannot create %s: %s\n", script, strerror(errno));
        goto done;
    }
    int prc = c.n_benches ? plot_bench(&c, tmp_out) : plot_metrics(&c, tmp_out, files, nfiles);
    int bad = ferror(c.gp);
    if ((fclose(c.gp) != 0 || bad) && !prc) {
        fprintf(stderr, PREFIX "writing %s failed: %s\n", script, strerror(errno));
        prc = -1;
    }
    c.gp = NULL;
    if (prc) {
        if (prc == -2) rc = CLI_EXIT_USAGE, fprintf(stderr, "(see graphdirect plot --help)\n");
        goto done;
    }
    /* Only now, with every input checked and the chart written out, is gnuplot needed. */
    gnuplot = find_in_path("gnuplot");
    if (!gnuplot) {
        fprintf(stderr, PREFIX "gnuplot is not installed; run `sudo apt-get install gnuplot-nox` "
                               "(or scripts/install-deps.sh as root)\n");
        goto done;
    }
    if (run_gnuplot(gnuplot, script, log)) goto done;
    if (stat(tmp_out, &st) != 0 || !is_png(tmp_out)) {
        fprintf(stderr, PREFIX "gnuplot finished but wrote no PNG (into %s)\n", tmp_out);
        goto done;
    }
    if (rename(tmp_out, c.out) != 0) {
        fprintf(stderr, PREFIX "renaming %s to %s failed: %s\n", tmp_out, c.out, strerror(errno));
        goto done;
    }
    free(tmp_out);
    tmp_out = NULL;
    printf("wrote %s (%dx%d)\n", c.out, c.width, c.height);
    rc = 0;
done:
    if (c.gp) fclose(c.gp);
    if (tmp_out) unlink(tmp_out);
    if (c.dir) remove_dir(c.dir);
    for (int i = 0; i < c.n_runs; i++) {
        free(c.runs[i].label);
        free(c.runs[i].epochs);
        free(c.runs[i].steps);
    }
    for (int i = 0; i < c.n_benches; i++) cJSON_Delete(c.benches[i].doc);
    free(c.runs);
    free(c.benches);
    free(c.dir);
    free(gnuplot);
    free(tmp_out);
    free(script);
    free(log);
    return rc;
}
