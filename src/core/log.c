/*
 * Levelled logging that the host program can capture with gd_log_set(). The threshold starts
 * from the GD_LOG_LEVEL parameter the first time anything asks for it; GD_LOG() checks the level
 * before formatting, so disabled messages cost one comparison.
 */
#include "internal.h"
#include "params.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

gd_log_level gd__log_threshold = GD_LOG_WARN;

static gd_log_fn log_fn;
static void *log_user;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t log_once = PTHREAD_ONCE_INIT;

static const char *level_names[] = {"none", "error", "warn", "info", "debug", "trace"};

gd_status gd_log_level_parse(const char *text, gd_log_level *out) {
    if (!text || !out) return gd__error(GD_ERR_INVALID_ARG, "gd_log_level_parse: NULL argument");
    if (text[0] >= '0' && text[0] <= '5' && text[1] == '\0') {
        *out = (gd_log_level)(text[0] - '0');
        return GD_OK;
    }
    for (int i = 0; i < 6; i++) {
        if (strcasecmp(text, level_names[i]) == 0) {
            *out = (gd_log_level)i;
            return GD_OK;
        }
    }
    return gd__error(GD_ERR_INVALID_ARG,
                     "log level '%s' is not one of none, error, warn, info, debug, trace or 0-5",
                     text);
}

static void log_init(void) {
    const char *value = NULL;
    gd_log_level level;
    if (gd_param_get("GD_LOG_LEVEL", &value) == GD_OK && value &&
        gd_log_level_parse(value, &level) == GD_OK)
        gd__log_threshold = level;
}

void gd__log_init(void) { pthread_once(&log_once, log_init); }

/* Read GD_LOG_LEVEL when the library is loaded, so GD_LOG() can test the threshold directly. */
__attribute__((constructor)) static void log_init_at_load(void) { gd__log_init(); }

void gd_log_set(gd_log_fn fn, void *user) {
    pthread_mutex_lock(&log_lock);
    log_fn = fn;
    log_user = user;
    pthread_mutex_unlock(&log_lock);
}

gd_log_level gd_log_level_get(void) {
    gd__log_init();
    return gd__log_threshold;
}

void gd_log_level_set(gd_log_level level) {
    gd__log_init();
    if (level > GD_LOG_TRACE) level = GD_LOG_TRACE;
    gd__log_threshold = level;
}

void gd__log_write(gd_log_level level, const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&log_lock);
    if (log_fn)
        log_fn(level, msg, log_user);
    else
        fprintf(stderr, "graphdirect %s: %s\n", level_names[level <= 5 ? level : 5], msg);
    pthread_mutex_unlock(&log_lock);
}
