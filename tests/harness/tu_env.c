/*
 * tu_env.c -- CI detection, skips that fail under CI, the slowdown
 * factor of timing tests (tu_env.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef RUNNING_ON_VALGRIND
#define RUNNING_ON_VALGRIND 0
#endif

#include "test_util.h"
#include "test_run.h"

int tu_skips;

int tu_ci(void)
{
    const char *ci = getenv("CI");

    return ci != NULL && *ci != '\0' && strcmp(ci, "0") != 0 &&
           strcasecmp(ci, "false") != 0;
}

void tu_cannot_run_(const char *file, int line, const char *fmt, ...)
{
    char why[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    tu_skips++;
    if (tu_ci()) {
        print_error("CANNOT RUN HERE, and under CI a test that does not run "
                    "fails: %s\n", why);
        _fail(file, line);
    }
    print_message("SKIPPED (cannot run here; under CI this fails): %s\n",
                  why);
    _skip(file, line);
    abort();                    /* _skip longjmps back to cmocka */
}

int tu_unit_cannot_run(const char *unit, const char *fmt, ...)
{
    char why[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    printf("%s: SKIPPED: %s\n", unit, why);
    if (tu_ci()) {
        printf("%s: under CI (CI=%s) a test that does not run fails\n",
               unit, getenv("CI"));
        return 1;
    }
    return TU_SKIPPED;
}

int tu_slowdown_tool(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return 4;
#else
#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
    return 4;
#endif
#endif
    return RUNNING_ON_VALGRIND ? 8 : 1;
#endif
}

int tu_slowdown(void)
{
    static int factor;
    double load[1], own = 1;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const char *env = getenv("SQLLOCK_TEST_SLOWDOWN");
    int by_load = 1;

    if (factor > 0)
        return factor;
    if (cores < 1)
        cores = 1;
    if (getloadavg(load, 1) == 1) {
        double per_core = floor(load[0] / (double)cores);
        by_load = per_core < 1 ? 1 : per_core > 4 ? 4 : (int)per_core;
    }
    if (env != NULL && *env != '\0') {
        own = strtod(env, NULL);
        if (!(own >= 1) || own > 100)
            own = 1;
    }
    factor = (int)ceil(tu_slowdown_tool() * by_load * own);
    if (factor < 1)
        factor = 1;
    fprintf(stderr, "slowdown factor %d (tool %d, load %d, "
            "SQLLOCK_TEST_SLOWDOWN %g)\n", factor, tu_slowdown_tool(),
            by_load, own);
    return factor;
}

int64_t tu_scaled_ms(int64_t ms)
{
    return ms * tu_slowdown();
}

int64_t tu_scaled_connect_ms(int64_t ms)
{
    int tool = tu_slowdown_tool(), rest = tu_slowdown() / tool;

    return ms * (rest < 1 ? 1 : rest) * (tool >= 8 ? 4 : 1);
}

void tu_too_slow(int *tries, int max, const char *fmt, ...)
{
    char why[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    (*tries)++;
    print_message("inconclusive (too slow, try %d of %d): %s\n", *tries, max,
                  why);
    if (*tries >= max)
        tu_cannot_run("too slow %d times in a row (slowdown factor %d): %s",
                      *tries, tu_slowdown(), why);
}
