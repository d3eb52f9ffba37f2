/*
 * Environment parameters: lookup in the registry of params.h, with overrides set by the program
 * taking precedence over the environment, which takes precedence over the default.
 */
#include "params.h"
#include "internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *name;
    const char *default_value;
    const char *help;
} param_def;

static const param_def params[] = {
#define GD_PARAM_DEF_(name, def, help) {#name, def, help},
    GD_PARAM_MAP(GD_PARAM_DEF_)
#undef GD_PARAM_DEF_
};

#define NUM_PARAMS ((int)(sizeof params / sizeof params[0]))

/*
 * Overrides are kept in fixed buffers so nothing is allocated or leaked; a value handed out by
 * gd_param_get stays valid until the next gd_param_set of the same parameter.
 */
#define PARAM_VALUE_MAX 256
static char override_text[NUM_PARAMS][PARAM_VALUE_MAX];
static bool override_set[NUM_PARAMS];
static pthread_mutex_t params_lock = PTHREAD_MUTEX_INITIALIZER;

static int find_param(const char *name) {
    for (int i = 0; i < NUM_PARAMS; i++)
        if (strcmp(params[i].name, name) == 0) return i;
    return -1;
}

int gd_param_count(void) { return NUM_PARAMS; }

gd_status gd_param_describe(int index, const char **name, const char **default_value,
                            const char **help) {
    if (index < 0 || index >= NUM_PARAMS)
        return gd__error(GD_ERR_RANGE, "parameter index %d is outside [0, %d)", index,
                         NUM_PARAMS);
    if (name) *name = params[index].name;
    if (default_value) *default_value = params[index].default_value;
    if (help) *help = params[index].help;
    return GD_OK;
}

gd_status gd_param_get(const char *name, const char **value) {
    if (!name || !value) return gd__error(GD_ERR_INVALID_ARG, "gd_param_get: NULL argument");
    int i = find_param(name);
    if (i < 0)
        return gd__error(GD_ERR_NOT_FOUND,
                         "unknown parameter '%s' (run `graphdirect info --params` for the list)",
                         name);
    pthread_mutex_lock(&params_lock);
    const char *v = override_set[i] ? override_text[i] : NULL;
    pthread_mutex_unlock(&params_lock);
    if (!v) v = getenv(name);
    if (!v || !*v) v = params[i].default_value;
    *value = v;
    return GD_OK;
}

int gd__param_given(const char *name) {
    const int i = find_param(name);
    if (i < 0) return 0;
    pthread_mutex_lock(&params_lock);
    const bool set = override_set[i];
    pthread_mutex_unlock(&params_lock);
    const char *env = getenv(name);
    return set || (env && *env);
}

gd_status gd_param_get_int(const char *name, int64_t *value) {
    const char *text;
    gd_status st = gd_param_get(name, &text);
    if (st != GD_OK) return st;
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end != '\0')
        return gd__error(GD_ERR_INVALID_ARG, "parameter %s='%s' is not an integer", name, text);
    *value = v;
    return GD_OK;
}

gd_status gd_param_set(const char *name, const char *value) {
    if (!name) return gd__error(GD_ERR_INVALID_ARG, "gd_param_set: NULL name");
    int i = find_param(name);
    if (i < 0) return gd__error(GD_ERR_NOT_FOUND, "unknown parameter '%s'", name);
    if (value && strlen(value) >= PARAM_VALUE_MAX)
        return gd__error(GD_ERR_INVALID_ARG, "value for %s is longer than %d characters", name,
                         PARAM_VALUE_MAX - 1);
    pthread_mutex_lock(&params_lock);
    override_set[i] = value != NULL;
    if (value) strcpy(override_text[i], value);
    pthread_mutex_unlock(&params_lock);
    if (strcmp(name, "GD_LOG_LEVEL") == 0 && value) {
        gd_log_level level;
        if (gd_log_level_parse(value, &level) == GD_OK) gd_log_level_set(level);
    }
    return GD_OK;
}
