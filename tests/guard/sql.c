/*
 * sql.c -- the guard's text in each placeholder style, and bad input
 * (DESIGN G1, E2).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "guard/guard.h"

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    const char *p = hay;

    while ((p = strstr(p, needle)) != NULL) {
        n++;
        p += strlen(needle);
    }
    return n;
}

static void text_of(sqllock_db *db, int style, int first, char *buf,
                    size_t size)
{
    size_t len = 0;

    EXPECT_RC(db, sqllock_guard_sql(db, "a-name", 7, style, first, buf, size,
                                    &len),
              SQLLOCK_OK, "guard text");
    assert_int_equal(len, strlen(buf));
    assert_true(len < SQLLOCK_GUARD_SQL_MAX);
}

/* G1: the text in each style: two placeholders, name then token, in the
 * client library's spelling; the server's clock at the time of the check
 * and a lock held to the commit, in the dialect's words. */
void test_guard_G1_text_per_style(void **state)
{
    sqllock_db *db = guard_open();
    const char *drv = sqllock_db_driver(db);
    char q[SQLLOCK_GUARD_SQL_MAX], d[SQLLOCK_GUARD_SQL_MAX];
    char f[SQLLOCK_GUARD_SQL_MAX], pf[SQLLOCK_GUARD_SQL_MAX];
    char nm[SQLLOCK_GUARD_SQL_MAX], nu[SQLLOCK_GUARD_SQL_MAX];
    const char *p;
    (void)state;

    text_of(db, SQLLOCK_PARAM_QMARK, 0, q, sizeof q);
    text_of(db, SQLLOCK_PARAM_DOLLAR, 3, d, sizeof d);
    text_of(db, SQLLOCK_PARAM_FORMAT, 0, f, sizeof f);
    text_of(db, SQLLOCK_PARAM_PYFORMAT, 0, pf, sizeof pf);
    text_of(db, SQLLOCK_PARAM_NAMED, 0, nm, sizeof nm);
    text_of(db, SQLLOCK_PARAM_NUMERIC, 2, nu, sizeof nu);
    printf("# %s guard: %s\n", drv, q);

    assert_int_equal(count_of(q, "?"), 2);
    assert_int_equal(count_of(d, "$"), 2);
    assert_true(strstr(d, "$3") != NULL && strstr(d, "$4") != NULL);
    assert_true(strstr(d, "$3") < strstr(d, "$4"));
    /* FORMAT: exactly the two %s, every other '%' doubled. */
    assert_int_equal(count_of(f, "%s"), 2);
    for (p = f; (p = strchr(p, '%')) != NULL; p += 2)
        assert_true(p[1] == 's' || p[1] == '%');
    assert_true(strstr(pf, "%(sqllock_name)s") <
                strstr(pf, "%(sqllock_token)s"));
    assert_non_null(strstr(pf, "%(sqllock_name)s"));
    assert_true(strstr(nm, ":sqllock_name") != NULL &&
                strstr(nm, ":sqllock_name") < strstr(nm, ":sqllock_token"));
    assert_true(strstr(nu, ":2") != NULL && strstr(nu, ":2") < strstr(nu, ":3"));
    assert_int_equal(count_of(nu, ":"), 2);
    assert_int_equal(count_of(nm, ":"), 2);

    /* The dialect's words: the time of the check, a lock to the commit. */
    if (strcmp(drv, "postgres") == 0) {
        assert_non_null(strstr(q, "clock_timestamp()"));
        assert_non_null(strstr(q, "FOR SHARE"));
        assert_null(strstr(q, "now()"));
        assert_null(strstr(q, "KEY SHARE"));
    } else if (strcmp(drv, "mysql") == 0) {
        assert_non_null(strstr(q, "UTC_TIMESTAMP(6)"));
        assert_non_null(strstr(q, "LOCK IN SHARE MODE"));
    } else {
        assert_non_null(strstr(q, "julianday('now')"));
    }
    assert_non_null(strstr(q, "sqllock_lease"));
    guard_close(db);
}

/* E2: every bad argument has its status and a message that names it;
 * nothing is written into the buffer then. */
void test_guard_G1_E2_bad_input(void **state)
{
    sqllock_db *db = guard_open();
    char buf[SQLLOCK_GUARD_SQL_MAX], long_name[SQLLOCK_NAME_MAX + 2];
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;
    static const sqllock_table t = { GUARD_TABLE, "id", NULL };
    sqllock_cell key = SQLLOCK_NUMBER(1);
    sqllock_cell set = { "val", SQLLOCK_OP_SET, NULL, 1 };
    size_t len = 99, need;
    char name[96];
    int rc;
    (void)state;

    memset(long_name, 'x', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    assert_int_equal(sqllock_guard_sql(NULL, "n", 1, SQLLOCK_PARAM_QMARK, 1,
                                       buf, sizeof buf, &len),
                     SQLLOCK_EINVAL);
    assert_int_equal(len, 0);
#define BAD(nm, tok, style, first, b, size, want, words)                      \
    do {                                                                     \
        strcpy(buf, "untouched");                                            \
        EXPECT_RC(db, sqllock_guard_sql(db, (nm), (tok), (style), (first),   \
                                        (b), (size), &len),                  \
                  (want), #nm " " #tok " " #style " " #first " " #size);     \
        expect_msg_any(db, #nm " " #tok " " #style, (words));                \
        if ((b) != NULL && (size) >= sizeof "untouched")                     \
            assert_string_equal(buf, "untouched");                          \
    } while (0)
    BAD(NULL, 1, SQLLOCK_PARAM_QMARK, 1, buf, sizeof buf, SQLLOCK_EINVAL,
        "NULL");
    BAD("", 1, SQLLOCK_PARAM_QMARK, 1, buf, sizeof buf, SQLLOCK_EINVAL,
        "empty");
    BAD(long_name, 1, SQLLOCK_PARAM_QMARK, 1, buf, sizeof buf,
        SQLLOCK_EINVAL, "long|limit");
    BAD("bad\xff", 1, SQLLOCK_PARAM_QMARK, 1, buf, sizeof buf,
        SQLLOCK_EINVAL, "UTF-8");
    BAD("n", 0, SQLLOCK_PARAM_QMARK, 1, buf, sizeof buf, SQLLOCK_EINVAL,
        "fast mode|token");
    BAD("n", -5, SQLLOCK_PARAM_QMARK, 1, buf, sizeof buf, SQLLOCK_EINVAL,
        "positive");
    BAD("n", 1, -1, 1, buf, sizeof buf, SQLLOCK_EINVAL, "placeholder style");
    BAD("n", 1, SQLLOCK_PARAM_NUMERIC + 1, 1, buf, sizeof buf,
        SQLLOCK_EINVAL, "placeholder style");
    BAD("n", 1, SQLLOCK_PARAM_DOLLAR, 0, buf, sizeof buf, SQLLOCK_EINVAL,
        "first");
    BAD("n", 1, SQLLOCK_PARAM_NUMERIC, 65535, buf, sizeof buf,
        SQLLOCK_EINVAL, "first");
    BAD("n", 1, SQLLOCK_PARAM_QMARK, 1, NULL, sizeof buf, SQLLOCK_EINVAL,
        "buffer");
    /* Too small: the length it needs is still reported. */
    EXPECT_RC(db, sqllock_guard_sql(db, "n", 1, SQLLOCK_PARAM_QMARK, 1, buf,
                                    sizeof buf, &need),
              SQLLOCK_OK, "the length");
    assert_true(need > 20);
    BAD("n", 1, SQLLOCK_PARAM_QMARK, 1, buf, need, SQLLOCK_EINVAL,
        "buffer holds");
    assert_int_equal(len, need);
    BAD("n", 1, SQLLOCK_PARAM_QMARK, 1, buf, 0, SQLLOCK_EINVAL,
        "buffer holds");
    EXPECT_RC(db, sqllock_guard_sql(db, "n", 1, SQLLOCK_PARAM_QMARK, 1, buf,
                                    need + 1, NULL),
              SQLLOCK_OK, "exactly the length and its NUL");
    /* `first` is not read by the styles that do not number. */
    EXPECT_RC(db, sqllock_guard_sql(db, "n", 1, SQLLOCK_PARAM_FORMAT, -3, buf,
                                    sizeof buf, NULL),
              SQLLOCK_OK, "FORMAT ignores first");
#undef BAD

    /* The guarded update: a lease that is not held; no lease. */
    guard_name(name, sizeof name, "badinput");
    o.ttl_ms = 30000;
    EXPECT_RC(db, sqllock_lease_new(db, name, &o, &l), SQLLOCK_OK, "new");
    EXPECT_RC(db, sqllock_table_guarded_update(db, l, &t, &key, NULL, &set, 1,
                                               NULL, 0),
              SQLLOCK_ENOTHELD, "guarded update, not held");
    EXPECT_RC(db, sqllock_table_guarded_update(db, NULL, &t, &key, NULL, &set,
                                               1, NULL, 0),
              SQLLOCK_EINVAL, "guarded update, NULL lease");
    assert_int_equal(sqllock_table_guarded_update(NULL, l, &t, &key, NULL,
                                                  &set, 1, NULL, 0),
                     SQLLOCK_EINVAL);
    EXPECT_RC(db, sqllock_lease_try_acquire(l), SQLLOCK_OK, "acquire");
    EXPECT_RC(db, sqllock_table_guarded_update(db, l, &t, &key, "fen ce",
                                               &set, 1, NULL, 0),
              SQLLOCK_EINVAL, "a bad fence column");
    EXPECT_RC(db, sqllock_table_guarded_update(db, l, &t, &key, NULL, NULL, 0,
                                               NULL, 0),
              SQLLOCK_EINVAL, "nothing to set");
    EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
    sqllock_lease_free(l);
    l = NULL;

    /* Fast mode has no token, so it cannot guard (PostgreSQL; the other
     * databases refuse the fast lease itself). */
    o.flags = SQLLOCK_LEASE_FAST;
    rc = sqllock_lease_new(db, name, &o, &l);
    if (strcmp(sqllock_db_driver(db), "postgres") == 0) {
        EXPECT_RC(db, rc, SQLLOCK_OK, "a fast lease");
        EXPECT_RC(db, sqllock_lease_try_acquire(l), SQLLOCK_OK, "fast acquire");
        assert_int_equal(sqllock_lease_token(l), 0);
        EXPECT_RC(db, sqllock_guard_sql(db, name, sqllock_lease_token(l),
                                        SQLLOCK_PARAM_DOLLAR, 1, buf,
                                        sizeof buf, NULL),
                  SQLLOCK_EINVAL, "the guard of a fast lease");
        expect_msg_any(db, "fast lease", "fast mode");
        EXPECT_RC(db, sqllock_table_guarded_update(db, l, &t, &key, NULL,
                                                   &set, 1, NULL, 0),
                  SQLLOCK_EINVAL, "guarded update with a fast lease");
        expect_msg_any(db, "fast lease update", "fast mode");
        EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
    } else {
        EXPECT_RC(db, rc, SQLLOCK_EUNSUPPORTED, "a fast lease");
    }
    sqllock_lease_free(l);
    guard_close(db);
}
