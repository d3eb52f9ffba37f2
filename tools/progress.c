/*
 * Progress display for long steps (generate, convert, CSC build). On a terminal the bar is
 * redrawn in place at most ten times a second; when stderr is a file or a pipe (CI logs), one
 * plain line is written when a stage starts, at each quarter and when it ends.
 */
#include "cli.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t got_sigint;

static void on_sigint(int sig) {
    (void)sig;
    got_sigint = 1;
}

int cli_interrupted(void) { return got_sigint != 0; }

double cli_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void cli_progress_init(cli_progress *p) {
    memset(p, 0, sizeof *p);
    p->tty = isatty(STDERR_FILENO);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
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
