/*
 * The parts of `graphdirect plot` (tools/cmd_plot.c), shared by its files: what the inputs hold
 * once read (training runs and benchmark results), the command's state, and the helpers each
 * part calls in another. plot_read.c reads and checks the inputs, plot_draw.c writes the gnuplot
 * script and its data for training metrics (and the helpers every chart uses), plot_bench.c the
 * charts of benchmark results, and cmd_plot.c parses the command line and runs gnuplot. These
 * are the tool's own names (plot_*), not part of the library's API.
 */
#ifndef GD_TOOLS_PLOT_H
#define GD_TOOLS_PLOT_H

#include "cli.h"

#include <stddef.h>
#include <stdio.h>

#define PREFIX "graphdirect plot: "

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

/* Small helpers (plot_read.c): a malloc'd printf, the out-of-memory message (returns -1), and
   growing an array by doubling (0, or -1 with the message). */
char *plot_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int plot_oom(void);
int plot_grow(void **p, int *cap, int n, size_t size);
/* A file as a legend names it: its base name without .json or .jsonl (caller frees). */
char *plot_file_label(const char *path);
/* 1 when s holds only spaces, tabs and line ends. */
int plot_is_blank(const char *s);

/* Read one input into c, telling its kind from the content: 0, or -1 with the message printed. */
int plot_read_input(plot_ctx *c, const char *path);
/* Drop runs with nothing in them and make the labels of those left unique. */
int plot_tidy_runs(plot_ctx *c);

/* Writing the script and its data (plot_draw.c). */
void plot_gp_str(FILE *f, const char *s);
void plot_tsv_str(FILE *f, const char *s);
void plot_tsv_num(FILE *f, double v);
FILE *plot_data_open(plot_ctx *c, char **path);
int plot_data_close(FILE *f, const char *path);
void plot_gp_colour(FILE *gp, int i);
void plot_gp_preamble(plot_ctx *c, const char *tmp_out);
void plot_gp_title(FILE *gp, const char *title);
/* "plot " before the first curve of a plot command, the continuation before each later one. */
void plot_sep(FILE *gp, int *first);
int plot_stack_panel(plot_ctx *c, const char *title, const char *xlabel, const stack_row *rows,
                     int n);

/* The charts; each returns 0, -1 (failure, reported) or -2 (usage error, reported). */
int plot_metrics(plot_ctx *c, const char *tmp_out, char *const *files, int nfiles);
int plot_bench(plot_ctx *c, const char *tmp_out);

#endif
