/*
 * test_status.c -- status names and sentences (DESIGN E1), the version
 * string, and sqllock_parse_duration().
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

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

static void test_status_parse_duration_valid(void **state)
{
    static const duration_case cases[] = {
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
        /* The edges of int64 milliseconds. */
        { "9223372036854775807ms", SQLLOCK_OK, INT64_MAX },
        { "9223372036854775s", SQLLOCK_OK, INT64_C(9223372036854775000) },
        { "106751991167d", SQLLOCK_OK, INT64_C(106751991167) * 86400000 },
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

static void test_status_parse_duration_invalid(void **state)
{
    static const char *const bad[] = {
        "", "-1", "+1", "1.5s", "1 s", "1x", "s", "ms", " 1", "1 ",
        "9999999999999d", "99999999999999999999",
        "9223372036854775808ms", "9223372036854776s", "106751991168d",
        "1h30m", "1ms2", "0x10", "1sec", "1e3", "-0", "1\n",
    };
    size_t i;
    (void)state;

    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t ms = -12345;
        int rc = sqllock_parse_duration(bad[i], &ms);
        if (rc != SQLLOCK_EINVAL)
            fail_msg("parse_duration(\"%s\") = %s, %lld; want SQLLOCK_EINVAL",
                     bad[i], sqllock_errname(rc), (long long)ms);
    }
    assert_int_equal(sqllock_parse_duration(NULL, NULL), SQLLOCK_EINVAL);
    {
        int64_t ms = 0;
        assert_int_equal(sqllock_parse_duration(NULL, &ms), SQLLOCK_EINVAL);
        /* E2: a NULL result pointer is bad input, not a crash. */
        assert_int_equal(sqllock_parse_duration("1s", NULL), SQLLOCK_EINVAL);
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
    };
    return cmocka_run_group_tests_name("status", tests, NULL, NULL);
}
