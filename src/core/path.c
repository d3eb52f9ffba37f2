/*
 * Path names for the modules that write files and directories (datasets, checkpoints): joining,
 * the directory that holds a path, and the temporary names beside a target that atomic writes
 * go through. Every result is a gd_malloc'd string (NULL when out of memory), so that the
 * callers' fault-injection walks count these allocations like any other.
 */
#include "internal.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* A gd_malloc'd copy of the first n bytes of s, NUL-terminated. */
static char *copy_prefix(const char *s, size_t n) {
    char *p = gd_malloc(n + 1);
    if (!p) return NULL;
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *gd__path_join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    bool slash = a > 0 && dir[a - 1] != '/';
    char *p = gd_malloc(a + b + 2);
    if (!p) return NULL;
    memcpy(p, dir, a);
    if (slash) p[a++] = '/';
    memcpy(p + a, name, b + 1);
    return p;
}

char *gd__path_dir(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return gd__strdup(".");
    if (slash == path) return gd__strdup("/");
    return copy_prefix(path, (size_t)(slash - path));
}

char *gd__path_trim(const char *path) {
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;
    return copy_prefix(path, n);
}

char *gd__path_sibling(const char *path, const char *tag) {
    char suffix[48];
    snprintf(suffix, sizeof suffix, ".%s.%ld", tag, (long)getpid());
    size_t a = strlen(path), b = strlen(suffix);
    char *p = gd_malloc(a + b + 1);
    if (!p) return NULL;
    memcpy(p, path, a);
    memcpy(p + a, suffix, b + 1);
    return p;
}
