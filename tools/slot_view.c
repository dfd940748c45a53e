/*
 * slot_view.c -- NAME's schedule slot record (`run --once-per`,
 * core/slot.c) as `sqllock history NAME` shows it, after the runs: the
 * last slot that had a run, how that run went, and the slots in which
 * nothing ran ("missed"): between the last two slots recorded (the
 * record keeps the one before), and from the last one to now (the
 * current slot is not counted: it may still get its run). The slots
 * are counted by the schedule the last run noted, at most
 * CLI_SLOT_COUNT_MAX ("N+" beyond).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"

#define CLI_SLOT_COUNT_MAX 100000

/* Copies the record into the view (sqllock_slot_read()'s callback). */
static int copy_cb(void *ctx, const sqllock_slot_info *info)
{
    cli_slot_view *v = ctx;

    v->found = 1;
    v->info = *info;
    snprintf(v->schedule, sizeof v->schedule, "%s", info->schedule);
    snprintf(v->state, sizeof v->state, "%s", info->state);
    snprintf(v->who, sizeof v->who, "%s", info->who);
    v->info.schedule = v->schedule;
    v->info.state = v->state;
    v->info.who = v->who;
    return 0;
}

int cli_slot_load(sqllock_db *db, const char *name, cli_slot_view *v)
{
    int rc;

    memset(v, 0, sizeof *v);
    rc = sqllock_slot_read(db, name, copy_cb, v);
    if (rc == SQLLOCK_NOTFOUND)
        return SQLLOCK_OK;
    if (rc != SQLLOCK_OK)
        cli_db_error(db, rc, "history: warning: the schedule slot record "
                     "of '%s' is not shown", name);
    return rc;
}

/* "2025-11-25T15:00:00.000Z", or "-" for 0. */
static void utc_text(char *buf, size_t size, int64_t ms)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;

    if (ms <= 0 || gmtime_r(&t, &tm) == NULL) {
        snprintf(buf, size, "-");
        return;
    }
    snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
             tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
             tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

/* The slots of `schedule` that began after `after` and before `before`:
 * the count, or -1 when it cannot be counted. */
static int64_t missed(const char *schedule, int64_t after, int64_t before)
{
    int64_t n = 0;

    if (after <= 0 ||
        sqllock_schedule_count(schedule, after, before, CLI_SLOT_COUNT_MAX,
                               &n) != SQLLOCK_OK)
        return -1;
    return n;
}

static void count_text(char *buf, size_t size, int64_t n)
{
    if (n < 0)
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, "%" PRId64 "%s", n,
                 n >= CLI_SLOT_COUNT_MAX ? "+" : "");
}

int cli_slot_print(const cli_slot_view *v, int json, int first)
{
    const sqllock_slot_info *r = &v->info;
    char slot[40], start[40], end[40], before_s[32], since_s[32];
    int64_t before, since, now_slot = 0;
    struct timespec ts;

    if (!v->found)
        return first;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (sqllock_schedule_slot(v->schedule, (int64_t)ts.tv_sec * 1000 +
                              ts.tv_nsec / 1000000, &now_slot, NULL) !=
        SQLLOCK_OK)
        now_slot = 0;
    before = missed(v->schedule, r->prev_slot_ms, r->slot_ms);
    since = now_slot > 0 ? missed(v->schedule, r->slot_ms, now_slot) : -1;
    if (json) {
        /* A last element of its own kind: the array's runs stay as they
         * were, and readers that pick kinds skip it. */
        printf("%s  {\"kind\": \"slot\", \"token\": %" PRId64 ", "
               "\"start_ms\": %" PRId64 ", \"end_ms\": %" PRId64 ", "
               "\"exit\": %d, \"status\": ", first ? "" : ",\n", r->token,
               r->start_ms, r->end_ms, r->exit_code);
        cli_print_json_string(v->state);
        fputs(", \"who\": ", stdout);
        cli_print_json_string(v->who);
        fputs(", \"schedule\": ", stdout);
        cli_print_json_string(v->schedule);
        printf(", \"slot_start_ms\": %" PRId64 ", \"prev_slot_start_ms\": %"
               PRId64 ", ", r->slot_ms, r->prev_slot_ms);
        if (before < 0)
            fputs("\"missed_before\": null, ", stdout);
        else
            printf("\"missed_before\": %" PRId64 ", ", before);
        if (since < 0)
            fputs("\"missed_since\": null}", stdout);
        else
            printf("\"missed_since\": %" PRId64 "}", since);
        return 0;
    }
    utc_text(slot, sizeof slot, r->slot_ms);
    utc_text(start, sizeof start, r->start_ms);
    utc_text(end, sizeof end, r->end_ms);
    count_text(before_s, sizeof before_s, before);
    count_text(since_s, sizeof since_s, since);
    fputs("\nSLOT (schedule ", stdout);
    cli_print_cell(v->schedule, 0);
    printf(", at most one run per slot)\n"
           "  last slot run  %s, run %s to %s\n"
           "  its state      %s", slot, start, r->end_ms > 0 ? end : "-",
           v->state);
    if (strcmp(v->state, "running") != 0)
        printf(", exit %d", r->exit_code);
    printf(", token %" PRId64 ", by ", r->token);
    cli_print_cell(v->who, 0);
    /* The slots in which nothing ran. */
    printf("\n  slots missed   %s since it (the current one not counted)",
           since_s);
    if (r->prev_slot_ms > 0)
        printf(", %s between it and the slot run before\n", before_s);
    else
        puts("; no slot run before it");
    return 0;
}
