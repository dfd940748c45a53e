/*
 * fuzz_duration.c -- libFuzzer target for sqllock_parse_duration()
 * (core/util.c), which reads every --ttl, --wait, --kill-after,
 * --renew-every and --older-than of the tool.
 *
 * The input is the text (cut at its first NUL). Besides "no crash, no
 * undefined behaviour" it checks the parser against a reference written
 * independently here with 128-bit arithmetic:
 *
 *   - it accepts exactly the texts of the form DIGITS [ms|s|m|h|d] whose
 *     value in milliseconds fits in int64 (so it never overflows and
 *     never wraps to a negative or small number), and gives exactly that
 *     value;
 *   - a value it returns reads back the same: "<ms>ms" and, where the
 *     value divides evenly, "<n>s", "<n>m", "<n>h", "<n>d" parse to it;
 *   - on failure it leaves *ms alone.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqllock.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                        \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "fuzz_duration: property failed: %s "          \
                    "(line %d)\n", #cond, __LINE__);                       \
            abort();                                                       \
        }                                                                  \
    } while (0)

/* The reference: 1 and *ms when the text is valid, else 0. */
static int reference(const char *s, int64_t *ms)
{
    unsigned __int128 v = 0, limit = (unsigned __int128)INT64_MAX;
    const char *p = s;
    int64_t scale;
    int big = 0;

    if (*p < '0' || *p > '9')
        return 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        v = v * 10 + (unsigned)(*p - '0');
        if (v > limit)
            big = 1;           /* stays big: later digits only grow it */
        if (big)
            v = limit + 1;
    }
    if (strcmp(p, "") == 0 || strcmp(p, "s") == 0)
        scale = 1000;
    else if (strcmp(p, "ms") == 0)
        scale = 1;
    else if (strcmp(p, "m") == 0)
        scale = 60000;
    else if (strcmp(p, "h") == 0)
        scale = 3600000;
    else if (strcmp(p, "d") == 0)
        scale = 86400000;
    else
        return 0;
    if (big || v * (unsigned __int128)scale > limit)
        return 0;
    *ms = (int64_t)(v * (unsigned __int128)scale);
    return 1;
}

static void check_reads_back(int64_t ms, int64_t unit, const char *suffix)
{
    char buf[48];
    int64_t back = -1;

    if (ms % unit != 0)
        return;
    snprintf(buf, sizeof buf, "%lld%s", (long long)(ms / unit), suffix);
    CHECK(sqllock_parse_duration(buf, &back) == SQLLOCK_OK);
    CHECK(back == ms);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text;
    int64_t ms = INT64_C(-7), want = 0;
    int rc, ok;

    if (size > 256)
        return 0;
    text = malloc(size + 1);
    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';

    rc = sqllock_parse_duration(text, &ms);
    ok = reference(text, &want);
    CHECK(rc == SQLLOCK_OK || rc == SQLLOCK_EINVAL);
    if (ok != (rc == SQLLOCK_OK)) {
        fprintf(stderr, "fuzz_duration: '%s': parser says %d, reference "
                "says %s\n", text, rc, ok ? "valid" : "invalid");
        abort();
    }
    if (rc == SQLLOCK_OK) {
        CHECK(ms == want);
        CHECK(ms >= 0);
        check_reads_back(ms, 1, "ms");
        check_reads_back(ms, 1000, "");
        check_reads_back(ms, 1000, "s");
        check_reads_back(ms, 60000, "m");
        check_reads_back(ms, 3600000, "h");
        check_reads_back(ms, 86400000, "d");
    } else {
        CHECK(ms == INT64_C(-7));
    }
    CHECK(sqllock_parse_duration(NULL, &ms) == SQLLOCK_EINVAL);
    CHECK(sqllock_parse_duration(text, NULL) == SQLLOCK_EINVAL);
    free(text);
    return 0;
}
