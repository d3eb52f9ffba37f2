/*
 * Shared pieces of the `graphdirect` command: the subcommand entry points, the progress bar,
 * size formatting and error printing. The tool uses the public API of the library (linked
 * statically, so that the benchmarks in bench/ can also call the CUDA runtime).
 */
#ifndef GD_TOOLS_CLI_H
#define GD_TOOLS_CLI_H

#include "graphdirect.h"

#include <cjson/cJSON.h>
#include <stdint.h>

/* Exit codes: 0 success, 1 failure (message printed), 2 bad usage, 128 + the signal when
   stopped by SIGINT (130), SIGTERM (143) or SIGHUP (129). */
#define CLI_EXIT_FAIL 1
#define CLI_EXIT_USAGE 2
#define CLI_EXIT_INTERRUPTED 130

int cmd_generate(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_stripe(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_plot(int argc, char **argv);

/* Print "graphdirect: <what>: <status>: <gd_last_error()>" and return the exit code. */
int cli_fail(const char *what, gd_status st);
/* Print a usage error and a hint to --help; returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parse integers and sizes strictly ("12", "4K", "2.5M", "1G"): 0 on success. */
int cli_parse_i64(const char *text, int64_t *out);
int cli_parse_double(const char *text, double *out);
/*
 * 1 if text is a --host-gather value: zero-copy, cpu, split, auto, or split=F with F a
 * fraction in [0, 1] (the library checks again; this names the mistake at the command line).
 */
int cli_host_gather_ok(const char *text);

/* "1.23 GiB", "512 B" into buf. */
const char *cli_bytes(double bytes, char *buf, size_t n);
/* "61.9M", "2.4K" into buf. */
const char *cli_count(double count, char *buf, size_t n);

/*
 * The progress display: a bar redrawn in place on a terminal (rate and ETA), plain lines at
 * each quarter otherwise. SIGINT (Ctrl-C), SIGTERM and SIGHUP make the callback ask the
 * library to stop, so the operation cleans up its temporary files before the tool exits; a
 * second signal of the same kind stops the process at once.
 */
typedef struct {
    int tty;
    char stage[64];
    double stage_start;
    double last_draw;
    int last_quarter;
    uint64_t last_done, last_total;
    int drawn;
} cli_progress;

void cli_progress_init(cli_progress *p);
int cli_progress_cb(void *user, const char *stage, uint64_t done, uint64_t total);
/* Finish the line of the current stage, if one is drawn. */
void cli_progress_end(cli_progress *p);
/* Catch SIGINT, SIGTERM and SIGHUP: each sets the flag cli_interrupted() reads (the progress
   display does this; a command without one calls it itself). */
void cli_catch_stop_signals(void);
/* 1 once SIGINT, SIGTERM or SIGHUP has been received. */
int cli_interrupted(void);
/* The flag behind cli_interrupted(), for a communicator's abort flag (gd_context_options). */
volatile const int *cli_interrupt_flag(void);
/* The exit code of a command stopped by that signal: 128 + its number (130 for SIGINT). */
int cli_interrupted_exit(void);
/*
 * Turn SIGBUS, which touching a mapped file that was truncated (or a full disk) raises, into a
 * message naming dataset_dir (NULL: none) and exit 1. Called once a command maps a dataset.
 */
void cli_guard_mapped(const char *dataset_dir);
double cli_now(void);
/* write(2) all of buf to fd, again after a signal; async-signal-safe. 0, or -1 (errno set). */
int cli_write_all(int fd, const void *buf, size_t n);

/*
 * The JSON-lines metrics file (tools/metrics_log.c; record format in docs/plot.md): one JSON
 * object per line, "type" first ("run", "step", "epoch", "test"), each line flushed as it is
 * written so that a crash loses at most the line being written and `graphdirect plot` can read
 * the file while the run goes on. Numbers that are not finite (a NaN accuracy) are written as
 * null, which the reader takes as "not measured".
 */
typedef struct cli_metrics cli_metrics;
/* Open path: created, truncated, or appended to (append: a resumed run keeps the earlier
   records); a file that is not a metrics file (not starting with a record) is refused and left
   intact. On failure a message naming the path and the reason is printed and -1 returned. */
int cli_metrics_open(const char *path, int append, cli_metrics **out);
/* Write obj as one unformatted line and flush it; takes ownership of obj (cJSON_Delete), which
   may be NULL (a builder that ran out of memory: reported as such). Returns 0, or -1 with a
   message on stderr (disk full...); after a failure the file is incomplete and later writes
   return -1 at once without a message. */
int cli_metrics_write(cli_metrics *m, cJSON *obj);
/* Close the file (NULL is allowed). */
void cli_metrics_close(cli_metrics *m);
/* A new record whose first field is "type": type; NULL when out of memory. */
cJSON *cli_metrics_record(const char *type);
/* Add "time": the current UTC time as ISO 8601 ("2026-11-22T10:04:05Z"); 0 or -1. */
int cli_metrics_add_time(cJSON *obj);

#endif
