/*
 * test_schedule.c -- schedules and their slots (core/cron.c), the slots
 * of `sqllock run --once-per` and --once-per-cron, without a database:
 * sqllock_schedule_slot() and sqllock_schedule_count() on crafted times,
 * in UTC, in a zone with a fixed offset (India, +05:30), and in one with
 * daylight saving time (POSIX TZ strings, which need no zone files);
 * and the expressions sqllock_schedule_check() refuses, each with its
 * reason.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_util.h"

/* Unix ms of the UTC time y-m-d h:mi:s. */
static int64_t utc(int y, int m, int d, int h, int mi, int s)
{
    struct tm tm;

    memset(&tm, 0, sizeof tm);
    tm.tm_year = y - 1900;
    tm.tm_mon = m - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = s;
    return (int64_t)timegm(&tm) * 1000;
}

static void set_tz(const char *tz)
{
    setenv("TZ", tz, 1);
    tzset();
}

/* The slot of `at` is [start, end). */
static void expect_slot(const char *schedule, int64_t at, int64_t start,
                        int64_t end)
{
    int64_t s = -1, e = -1;
    int rc = sqllock_schedule_slot(schedule, at, &s, &e);

    if (rc != SQLLOCK_OK || s != start || e != end)
        fail_msg("'%s' (TZ %s) at %lld: %s, slot [%lld, %lld), want "
                 "[%lld, %lld)", schedule, getenv("TZ"), (long long)at,
                 sqllock_errname(rc), (long long)s, (long long)e,
                 (long long)start, (long long)end);
}

static void expect_count(const char *schedule, int64_t after, int64_t before,
                         int64_t max, int64_t want)
{
    int64_t n = -1;
    int rc = sqllock_schedule_count(schedule, after, before, max, &n);

    if (rc != SQLLOCK_OK || n != want)
        fail_msg("'%s' (TZ %s): count (%lld, %lld): %s, %lld, want %lld",
                 schedule, getenv("TZ"), (long long)after,
                 (long long)before, sqllock_errname(rc), (long long)n,
                 (long long)want);
}

/* Durations cut Unix time, whatever the zone. */
static void test_schedule_durations(void **state)
{
    int64_t t = utc(2024, 3, 10, 12, 7, 30) + 250;

    (void)state;
    set_tz("IST-5:30");
    expect_slot("1h", t, utc(2024, 3, 10, 12, 0, 0),
                utc(2024, 3, 10, 13, 0, 0));
    expect_slot("90s", 0, 0, 90000);
    expect_slot("90s", 89999, 0, 90000);
    expect_slot("90s", 90000, 90000, 180000);
    /* Before the epoch the slots go on: floor, not truncation. */
    expect_slot("1m", -1, -60000, 0);
    expect_slot("1d", t, utc(2024, 3, 10, 0, 0, 0),
                utc(2024, 3, 11, 0, 0, 0));
    /* Starts strictly between: 12:00 and 15:00 are not counted. */
    expect_count("1h", utc(2024, 3, 10, 12, 0, 0), utc(2024, 3, 10, 15, 0, 0),
                 100, 2);
    expect_count("1h", utc(2024, 3, 10, 12, 0, 0),
                 utc(2024, 3, 10, 15, 0, 0) + 1, 100, 3);
    expect_count("1h", utc(2024, 3, 10, 12, 0, 0), utc(2024, 3, 10, 13, 0, 0),
                 100, 0);
    expect_count("1s", 0, 1000000, 7, 7);
    expect_count("1h", 5, 5, 7, 0);
}

/* Cron expressions in UTC: steps, ranges, lists, day of week 0 and 7,
 * a rare date, the @ forms, and how day of month and day of week
 * combine (Vixie cron's rule). 2024-03-10 is a Sunday. */
static void test_schedule_cron_utc(void **state)
{
    int64_t t = utc(2024, 3, 10, 12, 7, 30);

    (void)state;
    set_tz("UTC");
    expect_slot("*/5 * * * *", t, utc(2024, 3, 10, 12, 5, 0),
                utc(2024, 3, 10, 12, 10, 0));
    /* A slot starts on its minute: `at` on it is in it. */
    expect_slot("*/5 * * * *", utc(2024, 3, 10, 12, 5, 0),
                utc(2024, 3, 10, 12, 5, 0), utc(2024, 3, 10, 12, 10, 0));
    expect_slot("*/5 * * * *", utc(2024, 3, 10, 12, 5, 0) - 1,
                utc(2024, 3, 10, 12, 0, 0), utc(2024, 3, 10, 12, 5, 0));
    expect_slot("0 3 * * *", utc(2024, 3, 10, 2, 59, 59),
                utc(2024, 3, 9, 3, 0, 0), utc(2024, 3, 10, 3, 0, 0));
    expect_slot("@daily", t, utc(2024, 3, 10, 0, 0, 0),
                utc(2024, 3, 11, 0, 0, 0));
    expect_slot("@hourly", t, utc(2024, 3, 10, 12, 0, 0),
                utc(2024, 3, 10, 13, 0, 0));
    expect_slot("@yearly", t, utc(2024, 1, 1, 0, 0, 0),
                utc(2025, 1, 1, 0, 0, 0));
    expect_slot("@monthly", t, utc(2024, 3, 1, 0, 0, 0),
                utc(2024, 4, 1, 0, 0, 0));
    /* Weekdays at noon: from Sunday back to Friday, on to Monday. */
    expect_slot("0 12 * * 1-5", t, utc(2024, 3, 8, 12, 0, 0),
                utc(2024, 3, 11, 12, 0, 0));
    /* 7 is Sunday too, and @weekly is Sunday midnight. */
    expect_slot("0 0 * * 7", t, utc(2024, 3, 10, 0, 0, 0),
                utc(2024, 3, 17, 0, 0, 0));
    expect_slot("@weekly", t, utc(2024, 3, 10, 0, 0, 0),
                utc(2024, 3, 17, 0, 0, 0));
    /* Office hours, every quarter hour; a list of minutes. */
    expect_slot("*/15 9-17 * * *", utc(2024, 3, 10, 18, 30, 0),
                utc(2024, 3, 10, 17, 45, 0), utc(2024, 3, 11, 9, 0, 0));
    expect_slot("5,35 */2 * * *", t, utc(2024, 3, 10, 12, 5, 0),
                utc(2024, 3, 10, 12, 35, 0));
    expect_slot("5,35 */2 * * *", utc(2024, 3, 10, 13, 0, 0),
                utc(2024, 3, 10, 12, 35, 0), utc(2024, 3, 10, 14, 5, 0));
    expect_slot("10-40/10 * * * *", t, utc(2024, 3, 10, 11, 40, 0),
                utc(2024, 3, 10, 12, 10, 0));
    /* February 29: the slot runs four years (2024 to 2028). */
    expect_slot("0 0 29 2 *", utc(2025, 6, 1, 0, 0, 0),
                utc(2024, 2, 29, 0, 0, 0), utc(2028, 2, 29, 0, 0, 0));
    /* Both restricted: the 1st or the 15th, or any Friday (2024-03-08,
     * 2024-03-15 is both). */
    expect_slot("30 4 1,15 * 5", t, utc(2024, 3, 8, 4, 30, 0),
                utc(2024, 3, 15, 4, 30, 0));
    expect_slot("30 4 1,15 * 5", utc(2024, 3, 2, 0, 0, 0),
                utc(2024, 3, 1, 4, 30, 0), utc(2024, 3, 8, 4, 30, 0));
    /* Day of week beginning with *: both must match -- the 1st of a
     * month that is a Sunday, Tuesday, Thursday or Saturday (2024-02-01
     * was a Thursday, 2024-03-01 a Friday, 2024-04-01 a Monday,
     * 2024-05-01 a Wednesday, 2024-06-01 a Saturday). */
    expect_slot("0 0 1 * */2", t, utc(2024, 2, 1, 0, 0, 0),
                utc(2024, 6, 1, 0, 0, 0));
    /* Every minute of an hour: 11 starts between 12:00 and 13:00 for
     * every five minutes, 59 for every minute; a bound stops the walk. */
    expect_count("*/5 * * * *", utc(2024, 3, 10, 12, 0, 0),
                 utc(2024, 3, 10, 13, 0, 0), 1000, 11);
    expect_count("* * * * *", utc(2024, 3, 10, 12, 0, 0),
                 utc(2024, 3, 10, 13, 0, 0), 1000, 59);
    expect_count("* * * * *", utc(2024, 3, 10, 12, 0, 0),
                 utc(2025, 3, 10, 13, 0, 0), 500, 500);
    expect_count("0 0 29 2 *", utc(2024, 2, 29, 0, 0, 0),
                 utc(2036, 3, 1, 0, 0, 0), 1000, 3);
    /* A second after a start that is not a whole minute's. */
    expect_count("@hourly", utc(2024, 3, 10, 12, 0, 0) + 1,
                 utc(2024, 3, 10, 14, 0, 0), 10, 1);
}

/* A fixed offset: India, UTC+05:30. Local midnight is 18:30 UTC. */
static void test_schedule_cron_offset(void **state)
{
    (void)state;
    set_tz("IST-5:30");
    expect_slot("0 0 * * *", utc(2024, 3, 10, 0, 0, 0),
                utc(2024, 3, 9, 18, 30, 0), utc(2024, 3, 10, 18, 30, 0));
    expect_slot("0 * * * *", utc(2024, 3, 10, 0, 10, 0),
                utc(2024, 3, 9, 23, 30, 0), utc(2024, 3, 10, 0, 30, 0));
    /* 09:00 local on weekdays: Monday 2024-03-11 09:00 IST is 03:30
     * UTC; the Friday before, 2024-03-08. */
    expect_slot("0 9 * * 1-5", utc(2024, 3, 10, 12, 0, 0),
                utc(2024, 3, 8, 3, 30, 0), utc(2024, 3, 11, 3, 30, 0));
    /* The 1st of the month by local time: 2024-03-31 18:30 UTC is April
     * 1st 00:00 in India. */
    expect_slot("@monthly", utc(2024, 3, 31, 19, 0, 0),
                utc(2024, 3, 31, 18, 30, 0), utc(2024, 4, 30, 18, 30, 0));
}

/* Daylight saving time, US Eastern (POSIX rule): on 2024-03-10 the
 * clocks go from 02:00 EST to 03:00 EDT, on 2024-11-03 from 02:00 EDT
 * back to 01:00 EST. A skipped minute never matches; a minute of the
 * repeated hour matches at both of its times. */
static void test_schedule_cron_dst(void **state)
{
    (void)state;
    set_tz("EST5EDT,M3.2.0,M11.1.0");
    /* 02:30 does not exist on March 10: from 08:00 EDT back to March 9
     * 02:30 EST (07:30 UTC), on to March 11 02:30 EDT (06:30 UTC). */
    expect_slot("30 2 * * *", utc(2024, 3, 10, 12, 0, 0),
                utc(2024, 3, 9, 7, 30, 0), utc(2024, 3, 11, 6, 30, 0));
    /* Hourly across the gap: 01:00 EST (06:00 UTC) is followed by 03:00
     * EDT (07:00 UTC), one real hour later. */
    expect_slot("0 * * * *", utc(2024, 3, 10, 6, 30, 0),
                utc(2024, 3, 10, 6, 0, 0), utc(2024, 3, 10, 7, 0, 0));
    expect_count("0 * * * *", utc(2024, 3, 10, 5, 0, 0),
                 utc(2024, 3, 10, 8, 0, 0), 10, 2);
    /* 01:30 twice on November 3: 05:30 UTC (EDT), then 06:30 UTC (EST). */
    expect_slot("30 1 * * *", utc(2024, 11, 3, 6, 0, 0),
                utc(2024, 11, 3, 5, 30, 0), utc(2024, 11, 3, 6, 30, 0));
    expect_slot("30 1 * * *", utc(2024, 11, 3, 6, 45, 0),
                utc(2024, 11, 3, 6, 30, 0), utc(2024, 11, 4, 6, 30, 0));
    expect_slot("30 1 * * *", utc(2024, 11, 3, 5, 0, 0),
                utc(2024, 11, 2, 5, 30, 0), utc(2024, 11, 3, 5, 30, 0));
    /* Local midnight moves from 05:00 UTC (EST) to 04:00 UTC (EDT). */
    expect_slot("@daily", utc(2024, 3, 10, 12, 0, 0),
                utc(2024, 3, 10, 5, 0, 0), utc(2024, 3, 11, 4, 0, 0));
    expect_slot("@daily", utc(2024, 11, 3, 12, 0, 0),
                utc(2024, 11, 3, 4, 0, 0), utc(2024, 11, 4, 5, 0, 0));
}

/* What sqllock_schedule_check() refuses, and why. */
static void test_schedule_bad_input(void **state)
{
    static const struct {
        const char *text;
        const char *why;       /* a part of the reason */
    } bad[] = {
        { "", "empty" },
        { "0", "longer than 0" },
        { "1x", "unit" },
        { "* * * *", "five fields" },
        { "* * * * * *", "five fields" },
        { "60 * * * *", "minute field has a number outside 0-59" },
        { "* 24 * * *", "hour field has a number outside 0-23" },
        { "* * 0 * *", "day-of-month field has a number outside 1-31" },
        { "* * 32 * *", "day-of-month field" },
        { "* * * 13 *", "month field has a number outside 1-12" },
        { "* * * * 8", "day-of-week field has a number outside 0-7" },
        { "5-1 * * * *", "goes down" },
        { "*/0 * * * *", "step of 0" },
        { "*/61 * * * *", "step" },
        { "5/10 * * * *", "not a list" },
        { "1,,2 * * * *", "not a list" },
        { "1- * * * *", "not a list" },
        { "-1 * * * *", "not a list" },
        { "1000 * * * *", "not a list" },
        { "jan * * * *", "names of months and days" },
        { "0 0 * * mon", "names of months and days" },
        { "0 0 30 2 *", "never come" },
        { "0 0 31 4,6,9,11 *", "never come" },
        { "@reboot", "@ forms" },
    };
    char longest[SQLLOCK_SCHEDULE_MAX + 8];
    const char *why;
    int64_t s, e, n;
    size_t i;

    (void)state;
    set_tz("UTC");
    for (i = 0; i < sizeof bad / sizeof *bad; i++) {
        why = NULL;
        if (sqllock_schedule_check(bad[i].text, &why) != SQLLOCK_EINVAL ||
            why == NULL || strstr(why, bad[i].why) == NULL)
            fail_msg("'%s': %s, want EINVAL saying '%s'", bad[i].text,
                     why != NULL ? why : "(no reason)", bad[i].why);
        assert_int_equal(sqllock_schedule_slot(bad[i].text, 0, &s, &e),
                         SQLLOCK_EINVAL);
        assert_int_equal(sqllock_schedule_count(bad[i].text, 0, 1, 1, &n),
                         SQLLOCK_EINVAL);
    }
    assert_int_equal(sqllock_schedule_check(NULL, &why), SQLLOCK_EINVAL);
    memset(longest, '1', sizeof longest - 1);
    longest[sizeof longest - 1] = '\0';
    assert_int_equal(sqllock_schedule_check(longest, &why), SQLLOCK_EINVAL);
    assert_non_null(strstr(why, "longer than"));
    assert_int_equal(sqllock_schedule_count("1h", 0, 1, -1, &n),
                     SQLLOCK_EINVAL);
    /* What it takes: white space of any kind between fields, and why is
     * NULL then. */
    assert_int_equal(sqllock_schedule_check(" 0\t3  * * 1-5 ", &why),
                     SQLLOCK_OK);
    assert_null(why);
    assert_int_equal(sqllock_schedule_check("0 0 29 2 *", NULL), SQLLOCK_OK);
    assert_int_equal(sqllock_schedule_check("1m30s", NULL), SQLLOCK_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schedule_durations),
        cmocka_unit_test(test_schedule_cron_utc),
        cmocka_unit_test(test_schedule_cron_offset),
        cmocka_unit_test(test_schedule_cron_dst),
        cmocka_unit_test(test_schedule_bad_input),
    };

    return cmocka_run_group_tests_name("schedule", tests, NULL, NULL);
}
