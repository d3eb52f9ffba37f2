/*
 * Integers into the JSON files the library writes (meta.json, a checkpoint's header, a striped
 * table's manifest): as raw numbers, every digit of an int64 kept (cJSON's numbers are doubles).
 */
#ifndef GD_CORE_JSON_H
#define GD_CORE_JSON_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* obj[key] = v; false when cJSON runs out of memory. */
static inline bool gd__json_add_int(cJSON *obj, const char *key, int64_t v) {
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)v);
    return cJSON_AddRawToObject(obj, key, num) != NULL;
}

/* v appended to the array arr; false (and nothing appended) when cJSON runs out of memory. */
static inline bool gd__json_push_int(cJSON *arr, int64_t v) {
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)v);
    cJSON *n = cJSON_CreateRaw(num);
    if (n && cJSON_AddItemToArray(arr, n)) return true;
    cJSON_Delete(n);
    return false;
}

#endif
