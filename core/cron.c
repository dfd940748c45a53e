/*
 * cron.c -- schedules (issue 31): the slots of `sqllock run --once-per`
 * and --once-per-cron, in which a job runs at most once across hosts
 * (core/slot.c keeps the record of the slots that ran).
 *
 * A schedule is a text of one of two forms:
 *
 *   - a duration, as sqllock_parse_duration() reads it ("1h", "90s"):
 *     the slots are [k * DUR, (k + 1) * DUR) of Unix time, k whole --
 *     UTC, whatever the host's time zone, so every host cuts them alike;
 *   - a cron expression of five fields, "minute hour day-of-month month
 *     day-of-week", separated by white space, each a list (a,b) of
 *     numbers, ranges (a-b), steps (asterisk/n, a-b/n) or an asterisk;
 *     day of week 0-7, both 0 and 7 Sunday; day of month and day of week
 *     combine as in Vixie cron (both restricted: either matches; one
 *     begins with an asterisk: both must); or one of @yearly (@annually),
 *     @monthly, @weekly, @daily (@midnight), @hourly. A slot runs from
 *     one minute whose local time matches to the next one. Names (jan,
 *     mon) and the N/S step are not read.
 *
 * Local time is the host's time zone (TZ honoured). A minute is matched
 * by the local time it shows, so when the clocks go forward the minutes
 * skipped never match, and when they go back a minute of the repeated
 * hour matches at each of its two times (they are two slots).
 *
 * The search walks real time (Unix seconds), not calendar fields: from
 * an instant it jumps over what cannot match -- the rest of a month, a
 * day, an hour, up to the next minute allowed -- by the local calendar,
 * and when the UTC offset changes on the way (a DST change) it shortens
 * the jump by the change, so that it never passes a matching minute; a
 * jump that falls short is only looked at again. A match is found in a
 * few dozen steps; the steps are bounded (CRON_STEPS_MAX) all the same.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

/* The fields of a cron expression, in their order. */
enum { F_MIN, F_HOUR, F_DOM, F_MON, F_DOW, F_N };
/* What can be wrong with a field. */
enum { E_SYNTAX, E_VALUE, E_RANGE, E_STEP, E_N };

/* The steps of one search; a match is a few dozen steps away (the rarest,
 * the 29th of February, about forty a year). */
#define CRON_STEPS_MAX 200000
/* How far a search looks for a match: the rarest date (February 29 on
 * the day of month alone) comes every 8 years at worst (2096, 2104). */
#define CRON_SPAN_S (INT64_C(10) * 366 * 86400)

typedef struct cron_expr {
    uint64_t bits[F_N];       /* bit v: value v is allowed */
    int dom_star;             /* the field begins with an asterisk */
    int dow_star;
} cron_expr;

static const struct cron_field {
    int lo, hi;
} cron_fields[F_N] = { { 0, 59 }, { 0, 23 }, { 1, 31 }, { 1, 12 },
                       { 0, 7 } };

/* The messages (static: sqllock_schedule_check() hands them out). */
#define CRON_MSGS(f, r)                                                      \
    { "the " f " field is not a list of numbers, ranges (a-b) and steps "    \
      "(*/n, a-b/n), or *",                                                  \
      "the " f " field has a number outside " r,                             \
      "the " f " field has a range that goes down (a-b needs a <= b)",       \
      "the " f " field has a step of 0, or one longer than the range " r }
static const char *const cron_msgs[F_N][E_N] = {
    CRON_MSGS("minute", "0-59"), CRON_MSGS("hour", "0-23"),
    CRON_MSGS("day-of-month", "1-31"), CRON_MSGS("month", "1-12"),
    CRON_MSGS("day-of-week", "0-7")
};

#define STR_(x) #x
#define STR(x) STR_(x)

/* Reads a decimal number of up to 3 digits at *p. */
static int read_num(const char **p, const char *end, int *v)
{
    int n = 0, digits = 0;

    while (*p < end && isdigit((unsigned char)**p) && digits < 4) {
        n = n * 10 + (**p - '0');
        (*p)++;
        digits++;
    }
    if (digits == 0 || digits > 3)
        return -1;
    *v = n;
    return 0;
}

/* Parses field `f`, text s[0..len), into e. */
static int parse_field(const char *s, size_t len, int f, cron_expr *e,
                       const char **why)
{
    const struct cron_field *cf = &cron_fields[f];
    const char *p = s, *end = s + len;

    if (f == F_DOM)
        e->dom_star = *s == '*';
    if (f == F_DOW)
        e->dow_star = *s == '*';
    for (;;) {
        int a, b, step = 1, v, many = 1;

        if (p < end && *p == '*') {
            p++;
            a = cf->lo;
            b = f == F_DOW ? 6 : cf->hi;
        } else {
            if (read_num(&p, end, &a) != 0)
                goto syntax;
            b = a;
            many = p < end && *p == '-';
            if (many) {
                p++;
                if (read_num(&p, end, &b) != 0)
                    goto syntax;
            }
            if (a < cf->lo || a > cf->hi || b < cf->lo || b > cf->hi) {
                *why = cron_msgs[f][E_VALUE];
                return SQLLOCK_EINVAL;
            }
            if (b < a) {
                *why = cron_msgs[f][E_RANGE];
                return SQLLOCK_EINVAL;
            }
        }
        if (p < end && *p == '/') {
            p++;
            /* A step needs a range: "5/10" is refused, as Vixie cron
             * refuses it. */
            if (!many || read_num(&p, end, &step) != 0)
                goto syntax;
            if (step < 1 || step > cf->hi - cf->lo + 1) {
                *why = cron_msgs[f][E_STEP];
                return SQLLOCK_EINVAL;
            }
        }
        for (v = a; v <= b; v += step)
            e->bits[f] |= UINT64_C(1) << (f == F_DOW && v == 7 ? 0 : v);
        if (p == end)
            return SQLLOCK_OK;
        if (*p != ',')
            goto syntax;
        p++;
    }
syntax:
    *why = cron_msgs[f][E_SYNTAX];
    return SQLLOCK_EINVAL;
}

/* The days of month m (1-12) in the longest year. */
static int mdays_max(int m)
{
    static const int d[12] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30,
                               31 };
    return d[m - 1];
}

static int leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int mdays(int64_t y, int m)
{
    return m == 2 ? (leap(y) ? 29 : 28) : mdays_max(m);
}

/* The @ forms and the expressions they stand for. */
static const char *const cron_macros[][2] = {
    { "@yearly", "0 0 1 1 *" }, { "@annually", "0 0 1 1 *" },
    { "@monthly", "0 0 1 * *" }, { "@weekly", "0 0 * * 0" },
    { "@daily", "0 0 * * *" }, { "@midnight", "0 0 * * *" },
    { "@hourly", "0 * * * *" }, { NULL, NULL }
};

/* Parses a cron expression. */
static int cron_parse(const char *text, cron_expr *e, const char **why)
{
    const char *p = text;
    int f, m, d;

    memset(e, 0, sizeof *e);
    if (*p == '@') {
        int i;

        for (i = 0; cron_macros[i][0] != NULL; i++)
            if (strcmp(text, cron_macros[i][0]) == 0)
                return cron_parse(cron_macros[i][1], e, why);
        *why = "not a schedule: the @ forms are @yearly, @annually, "
               "@monthly, @weekly, @daily, @midnight and @hourly";
        return SQLLOCK_EINVAL;
    }
    for (f = 0; f < F_N; f++) {
        const char *start, *q;
        int rc;

        while (*p == ' ' || *p == '\t')
            p++;
        start = p;
        while (*p != '\0' && *p != ' ' && *p != '\t')
            p++;
        if (p == start)
            break;
        for (q = start; q < p; q++)
            if (isalpha((unsigned char)*q)) {
                *why = "names of months and days (jan, mon) are not read in "
                       "a cron expression: give their numbers";
                return SQLLOCK_EINVAL;
            }
        rc = parse_field(start, (size_t)(p - start), f, e, why);
        if (rc != SQLLOCK_OK)
            return rc;
    }
    while (*p == ' ' || *p == '\t')
        p++;
    if (f < F_N || *p != '\0') {
        *why = "a cron expression has five fields (minute hour day-of-month "
               "month day-of-week) separated by spaces";
        return SQLLOCK_EINVAL;
    }
    /* Both fields must match when one begins with an asterisk: then a day
     * of the month that no month given has never comes. */
    if (e->dom_star || e->dow_star) {
        for (m = 1; m <= 12; m++)
            for (d = 1; d <= mdays_max(m); d++)
                if ((e->bits[F_MON] >> m & 1) && (e->bits[F_DOM] >> d & 1))
                    return SQLLOCK_OK;
        *why = "the days of the month given never come in the months given";
        return SQLLOCK_EINVAL;
    }
    return SQLLOCK_OK;
}

/* Days from 1970-01-01 to the civil date y-m-d (proleptic Gregorian). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    int64_t era, yoe, doy, doe;

    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = y - era * 400;
    doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* The local time of Unix time t, and the UTC offset then (local minus
 * UTC, seconds). -1 when t cannot be converted. */
static int local_at(int64_t t, struct tm *tm, int64_t *off)
{
    time_t tt = (time_t)t;

    if ((int64_t)tt != t || localtime_r(&tt, tm) == NULL)
        return -1;
    *off = (days_from_civil((int64_t)tm->tm_year + 1900, tm->tm_mon + 1,
                            tm->tm_mday) * 86400 +
            tm->tm_hour * 3600 + tm->tm_min * 60 + tm->tm_sec) - t;
    return 0;
}

static int day_ok(const cron_expr *e, const struct tm *tm)
{
    int dom = (int)(e->bits[F_DOM] >> tm->tm_mday & 1);
    int dow = (int)(e->bits[F_DOW] >> tm->tm_wday & 1);

    return e->dom_star || e->dow_star ? dom && dow : dom || dow;
}

/* How far from the local minute `tm` the search must go to reach a time
 * that may match: forward (dir 1) to the first minute of what comes
 * next, or backward (dir -1) to the last minute of what came before; 0
 * when `tm` matches. */
static int64_t cron_jump(const cron_expr *e, const struct tm *tm, int dir)
{
    int64_t sod = tm->tm_hour * 3600 + tm->tm_min * 60;
    int m;

    if (!(e->bits[F_MON] >> (tm->tm_mon + 1) & 1))
        return dir > 0 ? (int64_t)(mdays((int64_t)tm->tm_year + 1900,
                                         tm->tm_mon + 1) - tm->tm_mday + 1)
                             * 86400 - sod
                       : (int64_t)(tm->tm_mday - 1) * 86400 + sod + 60;
    if (!day_ok(e, tm))
        return dir > 0 ? 86400 - sod : sod + 60;
    if (!(e->bits[F_HOUR] >> tm->tm_hour & 1))
        return dir > 0 ? 3600 - tm->tm_min * 60 : tm->tm_min * 60 + 60;
    if (e->bits[F_MIN] >> tm->tm_min & 1)
        return 0;
    for (m = tm->tm_min + dir; m >= 0 && m <= 59; m += dir)
        if (e->bits[F_MIN] >> m & 1)
            return (int64_t)(m - tm->tm_min) * 60 * dir;
    return dir > 0 ? 3600 - tm->tm_min * 60 : tm->tm_min * 60 + 60;
}

/* The first matching minute after t (dir 1), or the last one at or
 * before t (dir -1), no further than CRON_SPAN_S away: SQLLOCK_OK with
 * *out, or SQLLOCK_NOTFOUND. */
static int cron_find(const cron_expr *e, int64_t t, int dir, int64_t *out)
{
    int64_t i = dir > 0 ? t + 1 : t, off, off2, step;
    struct tm tm, tm2;
    int n;

    for (n = 0; n < CRON_STEPS_MAX; n++) {
        if ((dir > 0 ? i - t : t - i) > CRON_SPAN_S || local_at(i, &tm, &off))
            return SQLLOCK_NOTFOUND;
        if (tm.tm_sec != 0) {
            /* To the local minute's start: the next one, or this one. */
            i += dir > 0 ? 60 - tm.tm_sec : -tm.tm_sec;
            continue;
        }
        step = cron_jump(e, &tm, dir);
        if (step == 0) {
            *out = i;
            return SQLLOCK_OK;
        }
        /* Clocks that go forward on the way would carry the jump past
         * the local time it aims at: shorten it by the change. */
        if (local_at(i + dir * step, &tm2, &off2) == 0 &&
            (dir > 0 ? off2 - off : off - off2) > 0)
            step -= dir > 0 ? off2 - off : off - off2;
        if (step < 60)
            step = 60;
        i += dir * step;
    }
    return SQLLOCK_NOTFOUND;
}

/* ---- schedules --------------------------------------------------------- */

/* A cron expression (an @ form, or white space inside), not a duration. */
static int is_cron(const char *s)
{
    return s[0] == '@' || strpbrk(s, " \t") != NULL;
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;

    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* Reads a schedule: *dur_ms > 0 for a duration, else *e. */
static int schedule_read(const char *s, int64_t *dur_ms, cron_expr *e,
                         const char **why)
{
    int rc;

    *dur_ms = 0;
    if (s == NULL || s[0] == '\0') {
        *why = "the schedule is empty";
        return SQLLOCK_EINVAL;
    }
    if (strlen(s) > SQLLOCK_SCHEDULE_MAX) {
        *why = "the schedule is longer than " STR(SQLLOCK_SCHEDULE_MAX)
               " bytes";
        return SQLLOCK_EINVAL;
    }
    if (is_cron(s))
        return cron_parse(s, e, why);
    rc = sqllock__parse_duration(s, dur_ms, why);
    if (rc == SQLLOCK_OK && *dur_ms <= 0) {
        *why = "a schedule of 0 has no slots: the duration must be longer "
               "than 0";
        rc = SQLLOCK_EINVAL;
    }
    return rc;
}

int sqllock_schedule_check(const char *schedule, const char **why)
{
    const char *w = NULL;
    int64_t dur;
    cron_expr e;
    int rc = schedule_read(schedule, &dur, &e, &w);

    if (why != NULL)
        *why = rc == SQLLOCK_OK ? NULL : w;
    return rc;
}

int sqllock_schedule_slot(const char *schedule, int64_t at_ms,
                          int64_t *start_ms, int64_t *end_ms)
{
    const char *why;
    int64_t dur, s, e2, t;
    cron_expr e;
    int rc;

    if (start_ms != NULL)
        *start_ms = 0;
    if (end_ms != NULL)
        *end_ms = 0;
    if ((rc = schedule_read(schedule, &dur, &e, &why)) != SQLLOCK_OK)
        return rc;
    if (dur > 0) {
        s = floor_div(at_ms, dur) * dur;
        e2 = s > INT64_MAX - dur ? INT64_MAX : s + dur;
    } else {
        tzset();
        t = floor_div(at_ms, 1000);
        if (cron_find(&e, t, -1, &s) != SQLLOCK_OK ||
            cron_find(&e, t, 1, &e2) != SQLLOCK_OK)
            return SQLLOCK_NOTFOUND;
        s *= 1000;
        e2 *= 1000;
    }
    if (start_ms != NULL)
        *start_ms = s;
    if (end_ms != NULL)
        *end_ms = e2;
    return SQLLOCK_OK;
}

int sqllock_schedule_count(const char *schedule, int64_t after_ms,
                           int64_t before_ms, int64_t max, int64_t *count)
{
    const char *why;
    int64_t dur, n = 0, t, next;
    cron_expr e;
    int rc;

    if (count != NULL)
        *count = 0;
    if (count == NULL || max < 0)
        return SQLLOCK_EINVAL;
    if ((rc = schedule_read(schedule, &dur, &e, &why)) != SQLLOCK_OK)
        return rc;
    if (before_ms <= after_ms)
        return SQLLOCK_OK;
    if (dur > 0) {
        /* The starts k * dur with after < k * dur < before. */
        int64_t first = floor_div(after_ms, dur) + 1;
        int64_t last = -floor_div(-before_ms, dur) - 1;

        n = last >= first ? last - first + 1 : 0;
        *count = n < max ? n : max;
        return SQLLOCK_OK;
    }
    tzset();
    t = floor_div(after_ms, 1000);
    /* A start in the same second as `after` but later than it (a slot
     * starts on a whole second) is not counted. */
    while (n < max && cron_find(&e, t, 1, &next) == SQLLOCK_OK &&
           next * 1000 < before_ms) {
        n++;
        t = next;
    }
    *count = n;
    return SQLLOCK_OK;
}
