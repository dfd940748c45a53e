/*
 * test_status.c -- status names and sentences (DESIGN E1), the version
 * string, and sqllock_parse_duration(); and the helpers added in 0.2.0
 * for tools and examples (sqllock_parse_duration_why(), sqllock_now_us(),
 * sqllock_lease_deadline_us(), sqllock_db_exec()).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "internal.h"
#include "sqllock.h"

typedef struct status_entry {
    int code;
    const char *name;
    const char *text;
} status_entry;

/* The same X-macro that makes the enum makes the expected table, so a
 * code added to the map is tested without touching this file. */
static const status_entry status_table[] = {
#define ENTRY_(name, code, text) { code, "SQLLOCK_" #name, text },
    SQLLOCK_STATUS_MAP(ENTRY_)
#undef ENTRY_
};
#define STATUS_COUNT (sizeof status_table / sizeof status_table[0])

/* E1: every code has its own sentence and name, from the one table. */
static void test_status_E1_every_code_named(void **state)
{
    size_t i, j;
    (void)state;

    for (i = 0; i < STATUS_COUNT; i++) {
        const char *text = sqllock_strerror(status_table[i].code);
        const char *name = sqllock_errname(status_table[i].code);
        assert_non_null(text);
        assert_non_null(name);
        assert_string_equal(text, status_table[i].text);
        assert_string_equal(name, status_table[i].name);
        assert_true(status_table[i].code < SQLLOCK_STATUS_END_);
        for (j = 0; j < i; j++) {
            /* Numbers are never reused. */
            assert_int_not_equal(status_table[i].code, status_table[j].code);
        }
    }
    assert_int_equal(SQLLOCK_OK, 0);
}

/* E1: a stray value still gets a text, never NULL. */
static void test_status_E1_unknown_code(void **state)
{
    static const int stray[] = { -1, 4, 9, SQLLOCK_STATUS_END_, 9999,
                                 INT_MIN, INT_MAX };
    size_t i, j;
    (void)state;

    for (i = 0; i < sizeof stray / sizeof stray[0]; i++) {
        int known = 0;
        for (j = 0; j < STATUS_COUNT; j++)
            if (status_table[j].code == stray[i])
                known = 1;
        if (known)
            continue;
        assert_non_null(sqllock_strerror(stray[i]));
        assert_true(strlen(sqllock_strerror(stray[i])) > 0);
        assert_non_null(sqllock_errname(stray[i]));
        assert_string_equal(sqllock_errname(stray[i]), "SQLLOCK_UNKNOWN");
    }
}

/* R3/O2: callers can ask whether trying the same operation again is safe;
 * every code of the table is classified, and only these are retryable. */
static void test_status_retryable_classifies_every_code(void **state)
{
    static const int yes[] = {
        SQLLOCK_BUSY, SQLLOCK_TIMEOUT, SQLLOCK_CONFLICT, SQLLOCK_EDBBUSY,
        SQLLOCK_ELOCKED, SQLLOCK_EDEADLOCK, SQLLOCK_ESERIALIZATION
    };
    int code, i;

    (void)state;
    for (code = -5; code < SQLLOCK_STATUS_END_ + 5; code++) {
        int expect = 0;
        for (i = 0; i < (int)(sizeof yes / sizeof yes[0]); i++)
            if (yes[i] == code)
                expect = 1;
        assert_int_equal(sqllock_retryable(code), expect);
    }
    assert_int_equal(sqllock_retryable(SQLLOCK_OK), 0);
    assert_int_equal(sqllock_retryable(SQLLOCK_LOST), 0);
    assert_int_equal(sqllock_retryable(SQLLOCK_ECONNECT), 0);
}

static void test_status_version_string(void **state)
{
    char want[64];
    (void)state;

    snprintf(want, sizeof want, "%d.%d.%d", SQLLOCK_VERSION_MAJOR,
             SQLLOCK_VERSION_MINOR, SQLLOCK_VERSION_PATCH);
    assert_non_null(sqllock_version_string());
    assert_string_equal(sqllock_version_string(), want);
}

typedef struct duration_case {
    const char *text;
    int status;
    int64_t ms;
} duration_case;

/* The grammar of sqllock.h: a bare whole number of seconds, or
 * components largest unit first, a fraction only in the last. */
static void test_status_parse_duration_valid(void **state)
{
    static const duration_case cases[] = {
        /* One component, whole. */
        { "500ms", SQLLOCK_OK, 500 },
        { "30s", SQLLOCK_OK, 30000 },
        { "5m", SQLLOCK_OK, 300000 },
        { "2h", SQLLOCK_OK, 7200000 },
        { "1d", SQLLOCK_OK, 86400000 },
        { "10", SQLLOCK_OK, 10000 },          /* a bare number is seconds */
        { "0", SQLLOCK_OK, 0 },
        { "0ms", SQLLOCK_OK, 0 },
        { "1ms", SQLLOCK_OK, 1 },
        { "007s", SQLLOCK_OK, 7000 },
        { "000", SQLLOCK_OK, 0 },
        /* Compound: largest unit first, each once, any subset. */
        { "1m30s", SQLLOCK_OK, 90000 },
        { "1h30m", SQLLOCK_OK, 5400000 },
        { "2d12h", SQLLOCK_OK, 216000000 },
        { "1s500ms", SQLLOCK_OK, 1500 },
        { "1d1h1m1s1ms", SQLLOCK_OK, 90061001 },
        { "1d1ms", SQLLOCK_OK, 86400001 },
        { "1h1s", SQLLOCK_OK, 3601000 },
        { "0h0m0s0ms", SQLLOCK_OK, 0 },
        { "0m90s", SQLLOCK_OK, 90000 },        /* no carry rule: a sum */
        { "1m120s", SQLLOCK_OK, 180000 },
        { "25h", SQLLOCK_OK, 90000000 },
        { "1s1000ms", SQLLOCK_OK, 2000 },
        { "01m05s", SQLLOCK_OK, 65000 },
        /* Fractions, in the last component only. */
        { "1.5s", SQLLOCK_OK, 1500 },
        { "0.25s", SQLLOCK_OK, 250 },
        { "1.5m", SQLLOCK_OK, 90000 },
        { "0.5h", SQLLOCK_OK, 1800000 },
        { "1.5d", SQLLOCK_OK, 129600000 },
        { "0.001s", SQLLOCK_OK, 1 },
        { "0.1s", SQLLOCK_OK, 100 },
        { "1.50s", SQLLOCK_OK, 1500 },         /* zeros that end it */
        { "2.000000000000000000000000s", SQLLOCK_OK, 2000 },
        { "1.0ms", SQLLOCK_OK, 1 },
        { "0.0ms", SQLLOCK_OK, 0 },
        { "1h0.5m", SQLLOCK_OK, 3630000 },
        { "1m30.25s", SQLLOCK_OK, 90250 },
        { "1d1h1m1.001s", SQLLOCK_OK, 90061001 },
        { "0.0001m", SQLLOCK_OK, 6 },
        { "0.00001h", SQLLOCK_OK, 36 },
        /* The finest fraction that is whole: 2^-10 days. */
        { "0.0009765625d", SQLLOCK_OK, 84375 },
        /* The edges of int64 milliseconds. */
        { "9223372036854775807ms", SQLLOCK_OK, INT64_MAX },
        { "9223372036854775s", SQLLOCK_OK, INT64_C(9223372036854775000) },
        { "9223372036854775", SQLLOCK_OK, INT64_C(9223372036854775000) },
        { "9223372036854775.807s", SQLLOCK_OK, INT64_MAX },
        { "106751991167d", SQLLOCK_OK, INT64_C(106751991167) * 86400000 },
        { "106751991167d7h12m55s807ms", SQLLOCK_OK, INT64_MAX },
        { "106751991167d7h12m55.807s", SQLLOCK_OK, INT64_MAX },
        { "9223372036854775806ms", SQLLOCK_OK, INT64_MAX - 1 },
        { "9223372036854775s807ms", SQLLOCK_OK, INT64_MAX },
    };
    size_t i;
    (void)state;

    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t ms = -12345;
        int rc = sqllock_parse_duration(cases[i].text, &ms);
        if (rc != cases[i].status || ms != cases[i].ms)
            fail_msg("parse_duration(\"%s\") = %s, %lld; want %s, %lld",
                     cases[i].text, sqllock_errname(rc), (long long)ms,
                     sqllock_errname(cases[i].status),
                     (long long)cases[i].ms);
    }
}

typedef struct bad_duration {
    const char *text;
    const char *why;           /* a word the reason must hold */
} bad_duration;

static void test_status_parse_duration_invalid(void **state)
{
    static const bad_duration bad[] = {
        /* Not a duration at all. */
        { "", "empty" }, { "-1", "numbers" }, { "+1", "numbers" },
        { "-0", "numbers" }, { "1 s", "numbers" }, { "1x", "unknown unit" },
        { "s", "numbers" }, { "ms", "numbers" }, { " 1", "numbers" },
        { "1 ", "numbers" }, { "1\n", "numbers" }, { "0x10", "unknown unit" },
        { "1sec", "unknown unit" }, { "1e3", "unknown unit" },
        { "1S", "unknown unit" }, { "1M", "unknown unit" },
        { "1H", "unknown unit" }, { "1us", "unknown unit" },
        { "1w", "unknown unit" }, { "1y", "unknown unit" },
        { "1mss", "unknown unit" }, { "1hm", "unknown unit" },
        { "1h,30m", "numbers" }, { "1h 30m", "numbers" },
        { "1h_30m", "numbers" }, { "5s%00", "numbers" },
        { "1,5s", "numbers" }, { "inf", "numbers" }, { "nan", "numbers" },
        { "1h-30m", "numbers" }, { "1h+30m", "numbers" },
        /* Units out of order, or repeated. */
        { "30s1m", "largest first" }, { "30m1h", "largest first" },
        { "1m1m", "largest first" }, { "1h1h", "largest first" },
        { "1s1m", "largest first" }, { "500ms1s", "largest first" },
        { "1ms1ms", "largest first" }, { "1h1d", "largest first" },
        { "1d2h1d", "largest first" },
        /* A number without a unit after a component. */
        { "1m30", "stand alone" }, { "1ms2", "stand alone" },
        { "1h0", "stand alone" },
        /* Fractions: only the last, with digits on both sides, a unit. */
        { "1.5h30m", "last number" }, { "0.5m1s", "last number" },
        { "1.5", "unit" }, { "0.5", "unit" }, { ".5s", "both sides" },
        { "1.s", "both sides" }, { "1.", "both sides" }, { ".", "both sides" },
        { "1..5s", "both sides" }, { "1.5.5s", "one '.'" },
        { "1.5s ", "numbers" },
        /* Finer than a millisecond: no rounding. */
        { "1.5ms", "whole number of milliseconds" },
        { "0.0001s", "whole number of milliseconds" },
        { "0.0005s", "whole number of milliseconds" },
        { "1.0001s", "whole number of milliseconds" },
        { "0.1ms", "whole number of milliseconds" },
        { "0.00001m", "whole number of milliseconds" },
        { "0.000000000001d", "whole number of milliseconds" },
        { "0.00048828125d", "whole number of milliseconds" },  /* 2^-11 */
        { "1m0.0001s", "whole number of milliseconds" },
        /* Too long for int64 milliseconds, in every way it can add up. */
        { "9999999999999d", "longer" }, { "99999999999999999999", "longer" },
        { "9223372036854775808ms", "longer" },
        { "9223372036854776s", "longer" }, { "106751991168d", "longer" },
        { "9223372036854776", "longer" },
        { "106751991167d7h12m55s808ms", "longer" },
        { "106751991167d7h12m55.808s", "longer" },
        { "106751991167d7h12m56s", "longer" },
        { "106751991167d8h", "longer" },
        { "9223372036854775s808ms", "longer" },
        { "9223372036854775.808s", "longer" },
        { "106751991167.5d", "longer" },
        { "99999999999999999999999999999999ms", "longer" },
        { "153722867280912931m", "longer" },
    };
    size_t i;
    (void)state;

    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t ms = -12345;
        const char *why = NULL;
        int rc = sqllock_parse_duration(bad[i].text, &ms);
        if (rc != SQLLOCK_EINVAL || ms != -12345)
            fail_msg("parse_duration(\"%s\") = %s, %lld; want SQLLOCK_EINVAL "
                     "and *ms untouched", bad[i].text, sqllock_errname(rc),
                     (long long)ms);
        /* The tool's message says why (core/internal.h). */
        rc = sqllock__parse_duration(bad[i].text, &ms, &why);
        assert_int_equal(rc, SQLLOCK_EINVAL);
        if (why == NULL || strstr(why, bad[i].why) == NULL)
            fail_msg("parse_duration(\"%s\"): the reason \"%s\" does not "
                     "say \"%s\"", bad[i].text, why ? why : "(none)",
                     bad[i].why);
    }
    assert_int_equal(sqllock_parse_duration(NULL, NULL), SQLLOCK_EINVAL);
    {
        int64_t ms = 0;
        const char *why = "unset";
        assert_int_equal(sqllock_parse_duration(NULL, &ms), SQLLOCK_EINVAL);
        /* E2: a NULL result pointer is bad input, not a crash. */
        assert_int_equal(sqllock_parse_duration("1s", NULL), SQLLOCK_EINVAL);
        /* A good text has no reason; a NULL `why` is allowed. */
        assert_int_equal(sqllock__parse_duration("1m30s", &ms, &why),
                         SQLLOCK_OK);
        assert_null(why);
        assert_int_equal(ms, 90000);
        assert_int_equal(sqllock__parse_duration("1x", &ms, NULL),
                         SQLLOCK_EINVAL);
    }
}

/* Every whole number of milliseconds, written in each way the grammar
 * allows, reads back as itself: "<n>ms", the compound form with every
 * unit, the compound form with the milliseconds as a fraction of the
 * seconds, and each unit alone with a decimal fraction where the value
 * has one that ends. */
static void format_compound(int64_t ms, int frac_seconds, char *buf,
                            size_t size)
{
    static const int64_t unit_ms[] = { 86400000, 3600000, 60000, 1000 };
    static const char *const unit_name[] = { "d", "h", "m", "s" };
    size_t o = 0;
    int i;

    buf[0] = '\0';
    for (i = 0; i < 4; i++) {
        int64_t n = ms / unit_ms[i];

        ms %= unit_ms[i];
        if (n == 0 && !(i == 3 && o == 0))
            continue;
        if (i == 3 && frac_seconds && ms != 0) {
            o += (size_t)snprintf(buf + o, size - o, "%lld.%03llds",
                                  (long long)n, (long long)ms);
            return;
        }
        o += (size_t)snprintf(buf + o, size - o, "%lld%s", (long long)n,
                              unit_name[i]);
    }
    if (ms != 0)
        snprintf(buf + o, size - o, "%lldms", (long long)ms);
}

static void expect_reads_back(const char *text, int64_t ms)
{
    int64_t back = -1;
    int rc = sqllock_parse_duration(text, &back);

    if (rc != SQLLOCK_OK || back != ms)
        fail_msg("parse_duration(\"%s\") = %s, %lld; want %lld", text,
                 sqllock_errname(rc), (long long)back, (long long)ms);
}

static void test_status_parse_duration_reads_back(void **state)
{
    static const int64_t values[] = {
        0, 1, 7, 250, 999, 1000, 1001, 1500, 59999, 60000, 90000, 90250,
        3599999, 3600000, 5400000, 86399999, 86400000, 90061001,
        216000000, INT64_C(31536000000), INT64_C(1234567890123),
        INT64_MAX / 86400000 * 86400000, INT64_MAX - 1, INT64_MAX,
    };
    static const int64_t unit_ms[] = { 86400000, 3600000, 60000, 1000 };
    static const char *const unit_name[] = { "d", "h", "m", "s" };
    char buf[96];
    size_t i;
    int u;
    (void)state;

    for (i = 0; i < sizeof values / sizeof values[0]; i++) {
        int64_t v = values[i];

        snprintf(buf, sizeof buf, "%lldms", (long long)v);
        expect_reads_back(buf, v);
        format_compound(v, 0, buf, sizeof buf);
        expect_reads_back(buf, v);
        format_compound(v, 1, buf, sizeof buf);
        expect_reads_back(buf, v);
        /* One unit with a fraction: at most 10 decimals, where exact. */
        for (u = 0; u < 4; u++) {
            int64_t whole = v / unit_ms[u], rest = v % unit_ms[u];
            char digits[16];
            int k;

            for (k = 0; k < 10 && rest != 0; k++) {
                /* rest / unit as a decimal: one digit at a time. */
                rest *= 10;
                digits[k] = (char)('0' + rest / unit_ms[u]);
                rest %= unit_ms[u];
            }
            if (rest != 0)
                continue;      /* no decimal that ends within 10 digits */
            digits[k] = '\0';
            if (k == 0)
                snprintf(buf, sizeof buf, "%lld%s", (long long)whole,
                         unit_name[u]);
            else
                snprintf(buf, sizeof buf, "%lld.%s%s", (long long)whole,
                         digits, unit_name[u]);
            expect_reads_back(buf, v);
        }
    }
}

/* sqllock_parse_duration_why() (added in 0.2.0): the answers of
 * sqllock_parse_duration(), and a reason exactly when it refuses. */
static void test_status_parse_duration_why(void **state)
{
    static const char *const texts[] = {
        "30s", "1m30s", "90", "1.5s", "2d12h", "", "1.5", "30m1h", "1m1m",
        "1.5ms", "-1s", "1x", ".5s", "1.5h30m", "106751991167d7h12m55.807s",
        "106751991167d7h12m55.808s",
    };
    size_t i;
    int64_t ms = -7;
    const char *why = "unset";
    (void)state;

    for (i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        int64_t a = -7, b = -7;
        int rc = sqllock_parse_duration(texts[i], &a);

        why = "unset";
        assert_int_equal(sqllock_parse_duration_why(texts[i], &b, &why), rc);
        assert_true(a == b);
        if (rc == SQLLOCK_OK && why != NULL)
            fail_msg("\"%s\": parsed, but why = \"%s\"", texts[i], why);
        if (rc != SQLLOCK_OK && (why == NULL || why[0] == '\0'))
            fail_msg("\"%s\": refused without a reason", texts[i]);
    }
    why = "unset";
    assert_int_equal(sqllock_parse_duration_why(NULL, &ms, &why),
                     SQLLOCK_EINVAL);
    assert_non_null(why);
    assert_true(ms == -7);
    assert_int_equal(sqllock_parse_duration_why("1s", NULL, NULL),
                     SQLLOCK_EINVAL);
    assert_int_equal(sqllock_parse_duration_why("1s500ms", &ms, NULL),
                     SQLLOCK_OK);
    assert_true(ms == 1500);
}

/* sqllock_now_us() (added in 0.2.0): the clock of local deadlines never
 * goes back and counts a sleep; sqllock_lease_deadline_us(NULL) is 0. */
static void test_status_now_us(void **state)
{
    struct timespec ts = { 0, 20 * 1000 * 1000 };
    int64_t t0, t1, t2;
    (void)state;

    t0 = sqllock_now_us();
    t1 = sqllock_now_us();
    assert_true(t0 > 0 && t1 >= t0);
    while (nanosleep(&ts, &ts) != 0)
        ;
    t2 = sqllock_now_us();
    if (t2 - t1 < 20000)
        fail_msg("a 20 ms sleep took %lld us by sqllock_now_us()",
                 (long long)(t2 - t1));
    assert_true(sqllock_lease_deadline_us(NULL) == 0);
}

/* sqllock_db_exec() and sqllock_lease_deadline_us() (added in 0.2.0) on
 * a temporary SQLite file: statements of one's own with number and text
 * arguments, the first column, the affected rows, inside a row-lock
 * transaction; a lease's deadline lies within its ttl of the grant and is
 * 0 once released; bad arguments. (test_cli, in tests/cli/tool.c, runs
 * the demo, which uses sqllock_db_exec(), on every database; `sqllock
 * run` keeps its guard on the lease's deadline.) */
static void test_status_db_exec_and_deadline(void **state)
{
    static const sqllock_table tbl = { "t_exec", "id", "version" };
    char dir[] = "/tmp/sqllock-status-XXXXXX", url[160], path[128];
    sqllock_cell args[2] = { SQLLOCK_NUMBER(7), SQLLOCK_TEXT("seven") };
    sqllock_cell key = SQLLOCK_NUMBER(7);
    sqllock_lease_options lo = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *lease = NULL;
    sqllock_txn *txn = NULL;
    sqllock_db *db = NULL;
    int64_t first = -1, affected = -1, before, deadline;
    int has_row = -1;
    (void)state;

    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/exec.db", dir);
    snprintf(url, sizeof url, "sqlite://%s", path);
    assert_int_equal(sqllock_open(url, NULL, &db), SQLLOCK_OK);
    assert_int_equal(sqllock_init(db), SQLLOCK_OK);
    assert_int_equal(sqllock_db_exec(db, "CREATE TABLE t_exec(id BIGINT "
                                     "PRIMARY KEY, name TEXT, version "
                                     "BIGINT NOT NULL DEFAULT 1)", NULL, 0,
                                     &has_row, &first, NULL), SQLLOCK_OK);
    assert_int_equal(has_row, 0);
    assert_true(first == 0);
    assert_int_equal(sqllock_db_exec(db, "INSERT INTO t_exec(id, name) "
                                     "VALUES (?, ?)", args, 2, NULL, NULL,
                                     &affected), SQLLOCK_OK);
    assert_true(affected == 1);
    assert_int_equal(sqllock_db_exec(db, "SELECT id FROM t_exec WHERE name "
                                     "= ?", &args[1], 1, &has_row, &first,
                                     NULL), SQLLOCK_OK);
    assert_int_equal(has_row, 1);
    assert_true(first == 7);
    /* Inside a row-lock transaction, on the same connection: a rollback
     * takes the statement back. */
    assert_int_equal(sqllock_txn_begin(db, NULL, &txn), SQLLOCK_OK);
    assert_int_equal(sqllock_txn_lock_rows(txn, &tbl, &key, 1,
                                           SQLLOCK_LOCK_WAIT, NULL),
                     SQLLOCK_OK);
    assert_int_equal(sqllock_db_exec(db, "DELETE FROM t_exec", NULL, 0,
                                     NULL, NULL, &affected), SQLLOCK_OK);
    assert_true(affected == 1);
    assert_int_equal(sqllock_txn_rollback(txn), SQLLOCK_OK);
    sqllock_txn_free(txn);
    assert_int_equal(sqllock_db_exec(db, "SELECT COUNT(*) FROM t_exec",
                                     NULL, 0, NULL, &first, NULL),
                     SQLLOCK_OK);
    assert_true(first == 1);
    /* More arguments than fit on the stack of sqllock_db_exec(). */
    {
        sqllock_cell many[20];
        char sql[128] = "SELECT ?";
        int i;

        for (i = 0; i < 20; i++) {
            many[i] = args[0];
            many[i].number = i + 1;
            if (i > 0)
                strcat(sql, " + ?");
        }
        assert_int_equal(sqllock_db_exec(db, sql, many, 20, &has_row, &first,
                                         NULL), SQLLOCK_OK);
        assert_true(has_row == 1 && first == 210);
    }
    /* Errors: the database's, and bad arguments. */
    assert_int_equal(sqllock_db_exec(db, "SELECT nosuch FROM t_exec", NULL,
                                     0, NULL, NULL, NULL), SQLLOCK_EDB);
    assert_non_null(strstr(sqllock_errmsg(db), "nosuch"));
    assert_int_equal(sqllock_db_exec(NULL, "SELECT 1", NULL, 0, NULL, NULL,
                                     NULL), SQLLOCK_EINVAL);
    assert_int_equal(sqllock_db_exec(db, NULL, NULL, 0, NULL, NULL, NULL),
                     SQLLOCK_EINVAL);
    assert_int_equal(sqllock_db_exec(db, "SELECT ?", NULL, 1, NULL, NULL,
                                     NULL), SQLLOCK_EINVAL);
    assert_int_equal(sqllock_db_exec(db, "SELECT 1", args, -1, NULL, NULL,
                                     NULL), SQLLOCK_EINVAL);

    /* The lease's local deadline. */
    lo.ttl_ms = 30000;
    assert_int_equal(sqllock_lease_new(db, "status-deadline", &lo, &lease),
                     SQLLOCK_OK);
    assert_true(sqllock_lease_deadline_us(lease) == 0);
    before = sqllock_now_us();
    assert_int_equal(sqllock_lease_try_acquire(lease), SQLLOCK_OK);
    deadline = sqllock_lease_deadline_us(lease);
    if (deadline <= before || deadline > sqllock_now_us() + 30000 * 1000)
        fail_msg("deadline %lld us, the grant at %lld us, ttl 30 s",
                 (long long)deadline, (long long)before);
    assert_int_equal(sqllock_lease_release(lease), SQLLOCK_OK);
    assert_true(sqllock_lease_deadline_us(lease) == 0);
    sqllock_lease_free(lease);
    sqllock_close(db);
    {
        static const char *const suffixes[] = { "", "-wal", "-shm",
                                                "-journal" };
        char f[160];
        size_t i;

        for (i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
            snprintf(f, sizeof f, "%s%s", path, suffixes[i]);
            unlink(f);
        }
        assert_int_equal(rmdir(dir), 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_E1_every_code_named),
        cmocka_unit_test(test_status_E1_unknown_code),
        cmocka_unit_test(test_status_retryable_classifies_every_code),
        cmocka_unit_test(test_status_version_string),
        cmocka_unit_test(test_status_parse_duration_valid),
        cmocka_unit_test(test_status_parse_duration_invalid),
        cmocka_unit_test(test_status_parse_duration_reads_back),
        cmocka_unit_test(test_status_parse_duration_why),
        cmocka_unit_test(test_status_now_us),
        cmocka_unit_test(test_status_db_exec_and_deadline),
    };
    return cmocka_run_group_tests_name("status", tests, NULL, NULL);
}
