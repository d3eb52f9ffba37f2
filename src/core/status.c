/*
 * Status codes, the thread-local last-error text, and the library version. Every failing
 * gd_ call leaves its message here; callers read it with gd_last_error().
 */
#include "internal.h"

#include <stdio.h>
#include <string.h>

#define GD_ERROR_TEXT_MAX 1024

static _Thread_local char last_error[GD_ERROR_TEXT_MAX];

const char *gd_version(void) {
#define GD_STR2_(x) #x
#define GD_STR_(x) GD_STR2_(x)
    return GD_STR_(GD_VERSION_MAJOR) "." GD_STR_(GD_VERSION_MINOR) "." GD_STR_(GD_VERSION_PATCH);
#undef GD_STR_
#undef GD_STR2_
}

unsigned gd_version_hex(void) { return GD_VERSION_HEX; }

const char *gd_status_string(gd_status status) {
    switch (status) {
#define GD_STATUS_CASE_(name, value, text)                                                \
    case name:                                                                            \
        return text;
        GD_STATUS_MAP(GD_STATUS_CASE_)
#undef GD_STATUS_CASE_
    }
    return "unknown status";
}

const char *gd_status_name(gd_status status) {
    switch (status) {
#define GD_STATUS_NAME_(name, value, text)                                                \
    case name:                                                                            \
        return #name;
        GD_STATUS_MAP(GD_STATUS_NAME_)
#undef GD_STATUS_NAME_
    }
    return NULL;
}

const char *gd_last_error(void) { return last_error; }

void gd_clear_error(void) { last_error[0] = '\0'; }

void gd__error_keep(gd__error_kept *k) {
    _Static_assert(sizeof k->text == GD_ERROR_TEXT_MAX, "gd__error_kept holds the whole text");
    memcpy(k->text, last_error, sizeof k->text);
}

void gd__error_put_back(const gd__error_kept *k) {
    memcpy(last_error, k->text, sizeof last_error);
}

gd_status gd__error(gd_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    GD_DEBUG("error (%s): %s", gd_status_string(status), last_error);
    return status;
}

gd_status gd__error_context(gd_status status, const char *fmt, ...) {
    char prefix[GD_ERROR_TEXT_MAX];
    char old[GD_ERROR_TEXT_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, last_error, sizeof old);
    /* Built piecewise: the message is cut at the buffer's end, never overflowed. */
    size_t n = strlen(prefix);
    if (n > sizeof last_error - 3) n = sizeof last_error - 3;
    memcpy(last_error, prefix, n);
    memcpy(last_error + n, ": ", 2);
    n += 2;
    size_t m = strnlen(old, sizeof last_error - 1 - n);
    memcpy(last_error + n, old, m);
    last_error[n + m] = '\0';
    return status;
}
