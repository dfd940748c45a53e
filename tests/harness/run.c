/*
 * run.c -- the main() of the tests that run once per database
 * (test_run.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"

char tu_missing_driver[64];

void tu_required_drivers_present(void **state)
{
    (void)state;
    if (tu_missing_driver[0] != '\0')
        fail_msg("SQLLOCK_TEST_REQUIRE names driver \"%s\" but "
                 "SQLLOCK_TEST_URLS has no URL for it: a required driver "
                 "that is not tested fails the run", tu_missing_driver);
}

void tu_case_filters(void)
{
    const char *only = getenv("SQLLOCK_TEST_CASES");
    const char *skip = getenv("SQLLOCK_TEST_SKIP_CASES");

    if (only != NULL && *only != '\0')
        cmocka_set_test_filter(only);
    if (skip != NULL && *skip != '\0')
        cmocka_set_skip_filter(skip);
}

int tu_run_per_url(const char *unit, const char **url,
                          const struct CMUnitTest *tests, size_t ntests,
                          CMFixtureFunction setup, CMFixtureFunction teardown,
                          const char *skip_sqlite_why)
{
    const struct CMUnitTest require[] = {
        cmocka_unit_test(tu_required_drivers_present),
    };
    char group[300];
    tu_urls urls;
    int i, failed = 0;

    if (tu_urls_load(&urls) != 0) {
        fprintf(stderr, "%s: cannot make a temporary database or a unit's "
                "own database\n", unit);
        return 1;
    }
    tu_check_required(&urls, tu_missing_driver, sizeof tu_missing_driver);
    snprintf(group, sizeof group, "%s: required drivers", unit);
    failed += _cmocka_run_group_tests(group, require, 1, NULL, NULL);
    if (failed == 0 && urls.n == 0) {
        /* SQLLOCK_TEST_DRIVER names a driver with no URL here, and it is
         * not required: ctest shows the entry as skipped. */
        printf("%s: SKIPPED: no %s URL in SQLLOCK_TEST_URLS\n", unit,
               getenv("SQLLOCK_TEST_DRIVER"));
        tu_urls_free(&urls);
        return TU_SKIPPED;
    }
    tu_case_filters();
    for (i = 0; i < urls.n; i++) {
        const char *drv = tu_url_driver(urls.url[i]);
        char *shown;
        int n;

        if (skip_sqlite_why != NULL && drv != NULL &&
            strcmp(drv, "sqlite") == 0) {
            printf("%s: not on %s: %s\n", unit, urls.url[i], skip_sqlite_why);
            continue;
        }
        shown = sqllock__url_redact(urls.url[i]);
        *url = urls.url[i];
        snprintf(group, sizeof group, "%s [%s] %s", unit,
                 drv ? drv : "unknown", shown ? shown : "");
        free(shown);
        n = _cmocka_run_group_tests(group, tests, ntests, setup, teardown);
        if (n == 0)
            tu_report_driver(unit, drv);
        failed += n;
    }
    tu_urls_free(&urls);
    return failed == 0 ? 0 : 1;
}

sqllock_db *tu_child_open(const char *url, const char *what)
{
    sqllock_db *db = NULL;
    int rc = sqllock_open(url, NULL, &db);

    if (rc != SQLLOCK_OK) {
        fprintf(stderr, "%s: open: %s: %s\n", what, sqllock_errname(rc),
                sqllock_errmsg(db));
        sqllock_close(db);
        return NULL;
    }
    return db;
}

int tu_init_schema(const char *url)
{
    sqllock_db *db = NULL;
    int rc = sqllock_open(url, NULL, &db);

    if (rc == SQLLOCK_OK)
        rc = sqllock_init(db);
    if (rc != SQLLOCK_OK)
        fprintf(stderr, "setup %s: %s\n", url, sqllock_errmsg(db));
    sqllock_close(db);
    return rc == SQLLOCK_OK ? 0 : -1;
}

void *tu_shared_map(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(p != MAP_FAILED);
    memset(p, 0, size);
    return p;
}

int64_t tu_pg_wal_syncs(sqllock_db *db)
{
    int64_t n = -1;
    int has = 0;

    EXPECT_RC(db, sqllock__exec_sql(db, "SELECT pg_stat_force_next_flush()",
                                    NULL, 0, NULL, NULL, NULL),
              SQLLOCK_OK, "pg_stat_force_next_flush");
    EXPECT_RC(db, sqllock__exec_sql(db, "SELECT wal_sync FROM pg_stat_wal",
                                    NULL, 0, &has, &n, NULL),
              SQLLOCK_OK, "pg_stat_wal");
    assert_int_equal(has, 1);
    return n;
}

void expect_msg_any(const sqllock_db *db, const char *what,
                           const char *any)
{
    const char *msg = sqllock_errmsg(db);
    const char *p = any;
    char buf[300];

    assert_non_null(msg);
    while (*p != '\0') {
        size_t n = strcspn(p, "|");
        snprintf(buf, sizeof buf, "%.*s", (int)n, p);
        if (tu_contains_ci(msg, buf))
            return;
        p += n;
        if (*p == '|')
            p++;
    }
    fail_msg("%s: message \"%s\" mentions none of \"%s\"", what, msg, any);
}

int tu_run_on_driver(const char *unit, const char *driver,
                                   const char **url,
                                   const struct CMUnitTest *tests,
                                   size_t ntests, CMFixtureFunction setup)
{
    char group[300];
    tu_urls urls;
    int i, failed = 0;

    if (tu_urls_load(&urls) != 0)
        return 1;
    tu_case_filters();
    for (i = 0; i < urls.n; i++) {
        const char *drv = tu_url_driver(urls.url[i]);
        if (drv != NULL && strcmp(drv, driver) == 0) {
            *url = urls.url[i];
            snprintf(group, sizeof group, "%s [%s]", unit, driver);
            failed += _cmocka_run_group_tests(group, tests, ntests, setup,
                                              NULL);
        }
    }
    tu_urls_free(&urls);
    return failed != 0;
}
