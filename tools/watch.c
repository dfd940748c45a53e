/*
 * watch.c -- `sqllock watch NAME... [--json] [--interval DUR] [--count N]
 * [--timeout DUR] [--initial]`: one line per change of the names' holds
 * (acquired, released, expired, taken over, freed by force), as the
 * library's observer sees them (sqllock_observer_*), until --count
 * changes, --timeout, SIGINT or SIGTERM.
 *
 * The observer does its work inside sqllock_observer_next(), which is
 * called here for a quarter of a second at most at a time, so that a
 * signal, which only sets a flag, ends the watch within that. A lost
 * connection does not end it: it says so once, and the observer tries
 * again at each interval, reporting what changed meanwhile when the
 * database answers again (late, as its lag says).
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

/* How long one call of sqllock_observer_next() may take before the
 * flags of SIGINT and SIGTERM and --timeout are looked at again. */
#define WATCH_SLICE_MS 250

static volatile sig_atomic_t watch_stop;

static void on_stop(int sig)
{
    (void)sig;
    watch_stop = 1;
}

/* A time by the database's clock (ms since the epoch) in the local time
 * zone, ISO 8601 with milliseconds: 2026-03-01T12:00:00.250+01:00. */
static void iso_time(int64_t ms, char *buf, size_t size)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    char date[40], zone[8];

    if (localtime_r(&t, &tm) == NULL ||
        strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm) == 0 ||
        strftime(zone, sizeof zone, "%z", &tm) != 5) {
        snprintf(buf, size, "%" PRId64, ms);
        return;
    }
    snprintf(buf, size, "%s.%03d%.3s:%s", date, (int)(ms % 1000), zone,
             zone + 3);
}

static void print_line(const sqllock_change *c)
{
    char when[64];

    iso_time(c->seen_at_ms, when, sizeof when);
    printf("%s ", when);
    cli_print_cell(c->name, 0);
    printf(" %s", sqllock_change_name(c->type));
    if (c->type != SQLLOCK_CHANGE_FREE)
        printf(" token=%" PRId64, c->token);
    if (c->type == SQLLOCK_CHANGE_TAKEN_OVER)
        printf(" old_token=%" PRId64, c->old_token);
    if (c->type != SQLLOCK_CHANGE_FREE) {
        fputs(" holder=", stdout);
        cli_print_cell(c->holder, 0);
    }
    putchar('\n');
}

static void print_json(const sqllock_change *c)
{
    char when[64];

    iso_time(c->seen_at_ms, when, sizeof when);
    fputs("{\"time\": ", stdout);
    cli_print_json_string(when);
    fputs(", \"name\": ", stdout);
    cli_print_json_string(c->name);
    fputs(", \"watched\": ", stdout);
    cli_print_json_string(c->watched);
    fputs(", \"change\": ", stdout);
    cli_print_json_string(sqllock_change_name(c->type));
    printf(", \"token\": %" PRId64 ", \"old_token\": %" PRId64
           ", \"holder\": ", c->token, c->old_token);
    cli_print_json_string(c->holder);
    printf(", \"expires_at_ms\": %" PRId64 ", \"seen_at_ms\": %" PRId64
           ", \"lag_ms\": %" PRId64 "}\n", c->expires_at_ms, c->seen_at_ms,
           c->lag_ms);
}

/* The options, checked: SQLLOCK_OBSERVER_INTERVAL_MIN_MS and more for
 * --interval, a positive --count, a --timeout of 0 or more. */
static int check_args(const char *interval, const char *count,
                      const char *timeout, int64_t *interval_ms,
                      int64_t *count_n, int64_t *timeout_ms)
{
    int rc = cli_parse_duration("watch", "interval", interval, interval_ms);

    if (rc == CLI_EXIT_OK && interval != NULL &&
        *interval_ms < SQLLOCK_OBSERVER_INTERVAL_MIN_MS) {
        cli_error("watch: --interval must be at least %dms, not '%s'",
                  SQLLOCK_OBSERVER_INTERVAL_MIN_MS, interval);
        rc = cli_usage();
    }
    if (rc == CLI_EXIT_OK && count != NULL)
        rc = cli_parse_int("watch", "count", count, 1, INT64_MAX, count_n);
    if (rc == CLI_EXIT_OK)
        rc = cli_parse_duration("watch", "timeout", timeout, timeout_ms);
    return rc;
}

/* A failure of a poll that a later one may not meet: the database going
 * away or staying busy for a while. */
static int passing(int rc)
{
    return rc == SQLLOCK_ECONNECT || rc == SQLLOCK_EDBBUSY ||
           rc == SQLLOCK_ECANCELED || sqllock_retryable(rc);
}

/* The watch itself, until --count, --timeout or a signal. */
static int watch_loop(sqllock_db *db, sqllock_observer *obs, int json,
                      int64_t count, int64_t timeout_ms)
{
    int64_t seen = 0, end = 0, left, slice;
    int failing = 0, rc;

    if (timeout_ms > 0)
        end = sqllock_now_us() / 1000 + timeout_ms;
    while (!watch_stop && (count == 0 || seen < count)) {
        sqllock_change c = SQLLOCK_CHANGE_INIT;

        slice = WATCH_SLICE_MS;
        if (end != 0) {
            left = end - sqllock_now_us() / 1000;
            if (left <= 0)
                break;
            if (left < slice)
                slice = left;
        }
        rc = sqllock_observer_next(obs, &c, slice);
        if (rc == SQLLOCK_TIMEOUT)
            continue;
        if (rc != SQLLOCK_OK && passing(rc)) {
            if (!failing)
                cli_error("watch: %s (trying again at every interval)",
                          sqllock_errmsg(db));
            failing = 1;
            continue;
        }
        if (rc != SQLLOCK_OK)
            return cli_db_error(db, rc, "watch");
        if (failing)
            cli_error("watch: the database answers again");
        failing = 0;
        if (json)
            print_json(&c);
        else
            print_line(&c);
        /* One line at a time, for a reader at the other end of a pipe. */
        if (fflush(stdout) != 0 || ferror(stdout)) {
            cli_error("watch: cannot write to stdout");
            return CLI_EXIT_DB;
        }
        seen++;
    }
    return CLI_EXIT_OK;
}

int cli_cmd_watch(const cli_ctx *ctx, int argc, char **argv)
{
    cli_ctx c = *ctx;
    int help = 0, json = 0, initial = 0, npos, rc;
    const char *interval = NULL, *count = NULL, *timeout = NULL;
    const cli_opt opts[] = {
        CLI_OPTS_DB(c), { "json", NULL, &json, 0 },
        { "interval", &interval, NULL, 0 }, { "count", &count, NULL, 0 },
        { "timeout", &timeout, NULL, 0 }, { "initial", NULL, &initial, 0 },
        { "help", NULL, &help, 0 }, { NULL, NULL, NULL, 0 }
    };
    static const char *names[SQLLOCK_OBSERVER_NAMES_MAX];
    sqllock_observer_options oo = SQLLOCK_OBSERVER_OPTIONS_INIT;
    int64_t interval_ms = 0, count_n = 0, timeout_ms = 0;
    sqllock_observer *obs = NULL;
    struct sigaction sa;
    sqllock_db *db;

    rc = cli_parse("watch", argc, argv, opts, names,
                   SQLLOCK_OBSERVER_NAMES_MAX, &npos, NULL);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (help)
        return cli_help();
    if (npos == 0) {
        cli_error("watch: missing NAME");
        return cli_usage();
    }
    rc = check_args(interval, count, timeout, &interval_ms, &count_n,
                    &timeout_ms);
    if (rc != CLI_EXIT_OK)
        return rc;
    rc = cli_open_db(&c, NULL, CLI_OPEN_READ, &db, NULL);
    if (rc != CLI_EXIT_OK)
        return rc;
    oo.interval_ms = interval_ms;
    oo.include_initial = initial;
    rc = sqllock_observer_new(db, names, npos, &oo, &obs);
    if (rc != SQLLOCK_OK) {
        rc = cli_db_error(db, rc, "watch");
        sqllock_close(db);
        return rc;
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    rc = watch_loop(db, obs, json, count_n, timeout_ms);
    sqllock_observer_free(obs);
    sqllock_close(db);
    return rc;
}
