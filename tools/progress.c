/*
 * Progress display for long steps (generate, convert, CSC build). On a terminal the bar is
 * redrawn in place at most ten times a second; when stderr is a file or a pipe (CI logs), one
 * plain line is written when a stage starts, at each quarter and when it ends. The signals
 * that stop a command cleanly (SIGINT, SIGTERM, SIGHUP) are caught here, since the progress
 * report is where the library asks whether to stop, and so is SIGBUS, which a mapped file can
 * raise.
 */
#include "cli.h"
#include "launch.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The signal that asked to stop (SIGINT, SIGTERM or SIGHUP), or 0. */
static volatile sig_atomic_t got_signal;

static void on_stop_signal(int sig) { got_signal = sig; }

int cli_interrupted(void) { return got_signal != 0; }

/* sig_atomic_t is int with glibc, so the flag is the int a communicator watches. */
volatile const int *cli_interrupt_flag(void) { return &got_signal; }

int cli_interrupted_exit(void) { return 128 + (got_signal ? (int)got_signal : SIGINT); }

/*
 * Ctrl-C, a scheduler's SIGTERM and a closed terminal's SIGHUP all ask the operation to stop
 * at its next progress report, so that it removes its temporary files and exits (128 + the
 * signal). SA_RESETHAND: a second signal of the same kind stops the process at once, should a
 * step not report progress soon; what it leaves is swept by the next run (a pid that is gone).
 */
void cli_catch_stop_signals(void) {
    static const int signals[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sa.sa_flags = SA_RESETHAND | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
        sigaction(signals[i], &sa, NULL);
}

/* What the SIGBUS handler says: the dataset in use, when a command named one. */
static char mapped_what[512];

int cli_write_all(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n > 0) {
        const ssize_t put = write(fd, p, n);
        if (put < 0 && errno == EINTR) continue;
        if (put <= 0) return -1;
        p += put;
        n -= (size_t)put;
    }
    return 0;
}

/* write(2) all of text to stderr, from a signal handler (no stdio there). */
static void say(const char *text) { (void)cli_write_all(STDERR_FILENO, text, strlen(text)); }

/*
 * SIGBUS is what a process gets when it touches a page of a mapped file that is no longer
 * there (the file was truncated or rewritten in place), or that a full disk could not supply.
 * The process cannot go on; it says which files were mapped and exits 1 instead of dying with
 * 135 and no word. Only async-signal-safe calls here.
 */
static void on_sigbus(int sig) {
    (void)sig;
    say("\ngraphdirect: fatal: a memory-mapped file could not be read or written (SIGBUS): ");
    if (mapped_what[0]) {
        say("dataset '");
        say(mapped_what);
        say("' may have been truncated or changed in place while in use (do not change a "
            "dataset while a command reads it: write new files and rename them); restore it or "
            "re-create it and run again (train --resume continues from the last "
            "checkpoint)\n");
    } else {
        say("a file was truncated while in use, or the disk is full\n");
    }
    _exit(1);
}

void cli_guard_mapped(const char *dataset_dir) {
    snprintf(mapped_what, sizeof mapped_what, "%s", dataset_dir ? dataset_dir : "");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigbus;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
}

double cli_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void cli_progress_init(cli_progress *p) {
    memset(p, 0, sizeof *p);
    p->tty = isatty(STDERR_FILENO);
    cli_catch_stop_signals();
}

static void format_eta(double seconds, char *buf, size_t n) {
    if (seconds < 0 || seconds > 1e7)
        snprintf(buf, n, "--");
    else if (seconds < 60)
        snprintf(buf, n, "%.0fs", seconds);
    else if (seconds < 3600)
        snprintf(buf, n, "%dm%02ds", (int)seconds / 60, (int)seconds % 60);
    else
        snprintf(buf, n, "%dh%02dm", (int)seconds / 3600, ((int)seconds % 3600) / 60);
}

static void draw(cli_progress *p, double now, int final) {
    double elapsed = now - p->stage_start;
    double rate = elapsed > 0 ? (double)p->last_done / elapsed : 0;
    char rate_text[32], eta[32];
    cli_count(rate, rate_text, sizeof rate_text);
    if (p->last_total > 0) {
        double frac = (double)p->last_done / (double)p->last_total;
        if (frac > 1) frac = 1;
        format_eta(final ? elapsed : (rate > 0 ? (double)(p->last_total - p->last_done) / rate : -1),
                   eta, sizeof eta);
        if (p->tty) {
            char bar[31];
            int fill = (int)(frac * 30);
            for (int i = 0; i < 30; i++) bar[i] = i < fill ? '#' : '.';
            bar[30] = '\0';
            fprintf(stderr, "\r  %-26s [%s] %3.0f%%  %s/s  %s %s\033[K", p->stage, bar,
                    100 * frac, rate_text, final ? "took" : "ETA", eta);
        } else {
            fprintf(stderr, "  %s: %3.0f%% (%llu/%llu, %s/s, %s %s)\n", p->stage, 100 * frac,
                    (unsigned long long)p->last_done, (unsigned long long)p->last_total,
                    rate_text, final ? "took" : "ETA", eta);
        }
    } else {
        format_eta(elapsed, eta, sizeof eta);
        if (p->tty)
            fprintf(stderr, "\r  %-26s %llu  %s/s  %s\033[K", p->stage,
                    (unsigned long long)p->last_done, rate_text, eta);
        else
            fprintf(stderr, "  %s: %llu (%s/s, %s)\n", p->stage,
                    (unsigned long long)p->last_done, rate_text, eta);
    }
    p->drawn = 1;
}

void cli_progress_end(cli_progress *p) {
    if (p->stage[0] && p->drawn) {
        draw(p, cli_now(), 1);
        if (p->tty) fputc('\n', stderr);
    }
    p->stage[0] = '\0';
    p->drawn = 0;
}

int cli_progress_cb(void *user, const char *stage, uint64_t done, uint64_t total) {
    cli_progress *p = user;
    double now = cli_now();
    if (cli_quiet()) return cli_interrupted(); /* a rank other than 0 of several GPUs */
    if (strncmp(p->stage, stage, sizeof p->stage - 1) != 0) {
        cli_progress_end(p);
        snprintf(p->stage, sizeof p->stage, "%s", stage);
        p->stage_start = now;
        p->last_draw = 0;
        p->last_quarter = -1;
    }
    p->last_done = done;
    p->last_total = total;
    if (p->tty) {
        if (now - p->last_draw >= 0.1) {
            draw(p, now, 0);
            p->last_draw = now;
        }
    } else {
        int quarter = total > 0 ? (int)(4 * (double)done / (double)total) : -1;
        if (total > 0 && quarter != p->last_quarter && quarter < 4) {
            draw(p, now, 0);
            p->last_quarter = quarter;
        }
    }
    return cli_interrupted();
}
