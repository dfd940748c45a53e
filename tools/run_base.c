/*
 * run_base.c -- what every part of `sqllock run` uses (run_base.h): the
 * messages ("sqllock: run: ...", with the time under --verbose), the
 * writes to the wake-up pipe and to the guard, and the pause between
 * tries while the database cannot be reached (DESIGN C3).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/select.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "run_base.h"

/* The wall-clock time at the cli_guard_now_us() time `mono_us`, as
 * "2025-11-25T15:45:18.123+0100". */
void run_wall_time(char *buf, size_t size, int64_t mono_us)
{
    struct timespec ts;
    struct tm tm;
    char base[32], zone[8];
    int64_t wall_us;
    time_t sec;

    clock_gettime(CLOCK_REALTIME, &ts);
    wall_us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000
              - (cli_guard_now_us() - mono_us);
    sec = (time_t)(wall_us / 1000000);
    if (localtime_r(&sec, &tm) == NULL) {
        snprintf(buf, size, "%" PRId64 ".%03d", (int64_t)sec,
                 (int)(wall_us % 1000000 / 1000));
        return;
    }
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    strftime(zone, sizeof zone, "%z", &tm);
    snprintf(buf, size, "%s.%03d%s", base, (int)(wall_us % 1000000 / 1000),
             zone);
}

/* A span of time: "0.4s", "29.8s", "4m05s", "2h10m"; tenths are cut, not
 * rounded (as `list` shows them). */
const char *run_span(char *buf, size_t size, int64_t ms)
{
    cli_format_span(buf, size, ms);
    return buf;
}

static void vsay(int verbose, const char *fmt, va_list ap)
{
    char when[64], msg[1200];

    vsnprintf(msg, sizeof msg, fmt, ap);
    if (verbose) {
        run_wall_time(when, sizeof when, cli_guard_now_us());
        fprintf(stderr, "sqllock: %s run: %s\n", when, msg);
    } else {
        fprintf(stderr, "sqllock: run: %s\n", msg);
    }
}

/* Prints "sqllock: run: <message>" to stderr; under --verbose with the
 * time after "sqllock: ". */
void run_say(const run_state *st, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsay(st->verbose, fmt, ap);
    va_end(ap);
}

/* The same, only under --verbose: one line per event. */
void run_event(const run_state *st, const char *fmt, ...)
{
    va_list ap;

    if (!st->verbose)
        return;
    va_start(ap, fmt);
    vsay(1, fmt, ap);
    va_end(ap);
}

/* The library's log hook under --verbose (sqllock_log_set()): the events
 * the runner does not report itself -- a connection made again after a
 * loss, a pooler or setting refused -- as lines of their own. Acquired,
 * renewed late, uncertain, lost and released are the runner's own
 * lines (with its own words), so they are not printed twice. Called on
 * whichever thread the event happened (the renewer's): one fprintf. */
void run_log_event(void *ctx, const sqllock_event *ev)
{
    char when[64];

    (void)ctx;
    if (ev->type != SQLLOCK_EVENT_RECONNECTED &&
        ev->type != SQLLOCK_EVENT_REFUSED)
        return;
    run_wall_time(when, sizeof when, cli_guard_now_us());
    fprintf(stderr, "sqllock: %s run: %s: %s\n", when,
            sqllock_event_name(ev->type), ev->msg);
}

/* Writes one byte to the wake-up pipe; a full pipe already wakes. */
void run_wake_write(int fd, unsigned char b)
{
    ssize_t n;

    do
        n = write(fd, &b, 1);
    while (n < 0 && errno == EINTR);
}

/* Sends a message to the guard. The pipe does not block: a guard that
 * has stopped reading (it is stopped itself) costs a message, never the
 * supervisor. */
void run_to_guard(run_state *st, int op, int arg, int64_t value)
{
    cli_guard_send(st->ctl, op, arg, value);
}

/* The pause before the next try of a statement that could not reach the
 * database (DESIGN C3): *pause_ms / 2 plus up to as much again, doubled
 * each time up to 500 ms (a server back is found within half a second),
 * never past `end_us`. Returns 0 when `end_us` has
 * passed: no more tries. */
int run_retry_pause(int64_t end_us, int64_t *pause_ms)
{
    int64_t left_ms = (end_us - cli_guard_now_us()) / 1000, ms;

    if (left_ms <= 0)
        return 0;
    ms = *pause_ms / 2 + (int64_t)(random() % (*pause_ms / 2 + 1));
    if (ms > left_ms)
        ms = left_ms;
    {
        struct timespec ts = { (time_t)(ms / 1000),
                               (long)(ms % 1000) * 1000000L };

        nanosleep(&ts, NULL);    /* a signal only cuts it short */
    }
    *pause_ms = *pause_ms * 2 < 500 ? *pause_ms * 2 : 500;
    return 1;
}
