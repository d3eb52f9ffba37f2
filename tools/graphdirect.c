/*
 * The `graphdirect` command: subcommand dispatch, top-level help, and the small helpers every
 * subcommand shares (number parsing, size formatting, error printing).
 */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} commands[] = {
    {"generate", cmd_generate, "make a synthetic dataset (power-law graph, planted classes)"},
    {"convert", cmd_convert, "turn an edge list, .npy arrays or an OGB raw folder into a dataset"},
    {"stripe", cmd_stripe, "spread a dataset's feature table over several disks (SSD tier)"},
    {"info", cmd_info, "show a dataset's sizes, degrees and memory per placement; or the build"},
    {"train", cmd_train, "train a GNN (or an MLP baseline): cpu, all-gpu, zero-copy, cpu-centric"},
    {"eval", cmd_eval, "exact accuracy of a saved model (layer-wise full-neighbour inference)"},
    {"bench", cmd_bench, "measure the data path against its ceiling (gather, sample, epoch, step)"},
    {"plot", cmd_plot, "draw training metrics or benchmark results as a PNG (gnuplot)"},
};
#define NUM_COMMANDS ((int)(sizeof commands / sizeof commands[0]))

static void usage(FILE *out) {
    fprintf(out,
            "graphdirect %s: GPU-centric data access for training GNNs on large graphs\n\n"
            "usage: graphdirect <command> [options]   (graphdirect <command> --help)\n\n"
            "commands:\n",
            gd_version());
    for (int i = 0; i < NUM_COMMANDS; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out,
            "\nenvironment: GD_LOG_LEVEL, GD_THREADS, ... (`graphdirect info --params` lists them)\n"
            "\nexamples:\n"
            "  graphdirect generate --preset small --out data/small\n"
            "  graphdirect convert ../shared/data/cora --symmetrize --out data/cora\n"
            "  graphdirect info data/cora\n"
            "  graphdirect train data/cora --mode cpu --epochs 10 --fanouts 10,5\n"
            "  graphdirect bench gather --json gather.json\n"
            "  graphdirect plot gather.json -o gather.png\n");
}

int cli_fail(const char *what, gd_status st) {
    const char *msg = gd_last_error();
    fprintf(stderr, "graphdirect: %s failed: %s%s%s\n", what, gd_status_string(st),
            msg[0] ? ": " : "", msg);
    return st == GD_ERR_INTERRUPTED ? cli_interrupted_exit() : CLI_EXIT_FAIL;
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "graphdirect %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(see graphdirect %s --help)\n", cmd);
    return CLI_EXIT_USAGE;
}

/*
 * A number with an optional K/M/G/T suffix (powers of 1000 for counts, 1024 for "Ki"...) and
 * an optional trailing B ("4096B", "4KiB").
 */
static int parse_scaled(const char *text, double *out) {
    if (!text || !*text) return -1;
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || !isfinite(v)) return -1;
    double scale = 1;
    if ((*end == 'B' || *end == 'b') && end[1] == '\0') {
        end++; /* "4096B" */
    } else if (*end) {
        int binary = end[1] == 'i' || end[1] == 'I';
        double base = binary ? 1024 : 1000;
        switch (*end) {
        case 'k': case 'K': scale = base; break;
        case 'm': case 'M': scale = base * base; break;
        case 'g': case 'G': scale = base * base * base; break;
        case 't': case 'T': scale = base * base * base * base; break;
        default: return -1;
        }
        end += binary ? 2 : 1;
        if (*end == 'B' || *end == 'b') end++;
        if (*end) return -1;
    }
    *out = v * scale;
    return 0;
}

int cli_parse_i64(const char *text, int64_t *out) {
    double v;
    if (parse_scaled(text, &v) != 0 || v < -9.2e18 || v > 9.2e18 || v != floor(v)) return -1;
    *out = (int64_t)v;
    return 0;
}

int cli_parse_double(const char *text, double *out) { return parse_scaled(text, out); }

int cli_host_gather_ok(const char *text) {
    static const char *const ways[] = {"zero-copy", "cpu", "split", "auto"};
    for (size_t i = 0; i < sizeof ways / sizeof ways[0]; i++)
        if (strcmp(text, ways[i]) == 0) return 1;
    char *end = NULL;
    if (strncmp(text, "split=", 6) != 0 || !text[6]) return 0;
    const double f = strtod(text + 6, &end);
    return !*end && f >= 0 && f <= 1;
}

const char *cli_bytes(double bytes, char *buf, size_t n) {
    const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    while (bytes >= 1024 && u < 5) bytes /= 1024, u++;
    snprintf(buf, n, u ? "%.2f %s" : "%.0f %s", bytes, units[u]);
    return buf;
}

const char *cli_count(double count, char *buf, size_t n) {
    const char *units[] = {"", "K", "M", "G", "T"};
    int u = 0;
    while (count >= 1000 && u < 4) count /= 1000, u++;
    snprintf(buf, n, u ? "%.2f%s" : "%.0f%s", count, units[u]);
    return buf;
}

/*
 * The exit status of a command that returned rc, once its output is flushed: a write error on
 * stdout (a full disk, a closed pipe, /dev/full) fails the command with a message instead of
 * exiting 0 with the output lost.
 */
static int finish(int rc) {
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "graphdirect: writing the output failed: %s; check the disk or the pipe "
                        "that stdout goes to\n",
                strerror(errno ? errno : EIO));
        return rc ? rc : 1;
    }
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return finish(0);
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        printf("graphdirect %s (%s)\n", gd_version(), gd_has_cuda() ? "CUDA" : "CPU only");
        return finish(0);
    }
    /* Every command may write or read a mapped file; one that opens a dataset names it. */
    cli_guard_mapped(NULL);
    for (int i = 0; i < NUM_COMMANDS; i++)
        if (!strcmp(cmd, commands[i].name)) return finish(commands[i].run(argc - 1, argv + 1));
    fprintf(stderr, "graphdirect: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return CLI_EXIT_USAGE;
}
