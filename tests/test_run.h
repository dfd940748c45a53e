/*
 * test_run.h -- the main() of the tests that run once per database.
 *
 * Include after cmocka.h and test_util.h. TU_RUN_PER_URL() first checks
 * that every driver SQLLOCK_TEST_REQUIRE names has a URL (a required
 * driver that is not tested fails the run), then runs the group of tests
 * once per URL in SQLLOCK_TEST_URLS, setting the test file's URL variable
 * before each (TU_RUN_PER_URL_NO_SQLITE leaves SQLite out, saying why),
 * and reports every driver whose group passed (test.sh reads
 * those reports to print `drivers tested: ...`). SQLLOCK_TEST_DRIVER and
 * SQLLOCK_TEST_DB_PER_UNIT (test_util.h) choose one driver's URLs and the
 * unit's own databases; with no URL left for that driver it returns
 * TU_SKIPPED (or fails, when the driver is required).
 */
#ifndef SQLLOCK_TEST_RUN_H
#define SQLLOCK_TEST_RUN_H

#include <sys/mman.h>

static char tu_missing_driver[64];

/* The exit status of a run that tested nothing because SQLLOCK_TEST_DRIVER
 * names a driver that has no URL and is not required (ctest's
 * SKIP_RETURN_CODE, tests/CMakeLists.txt). */
#define TU_SKIPPED 77

static inline void tu_required_drivers_present(void **state)
{
    (void)state;
    if (tu_missing_driver[0] != '\0')
        fail_msg("SQLLOCK_TEST_REQUIRE names driver \"%s\" but "
                 "SQLLOCK_TEST_URLS has no URL for it: a required driver "
                 "that is not tested fails the run", tu_missing_driver);
}

/* SQLLOCK_TEST_CASES and SQLLOCK_TEST_SKIP_CASES: a cmocka pattern ('*'
 * and '?') of the test functions to run, and of those to skip, in the
 * groups that follow (ctest runs a unit's timing-critical cases as an
 * entry of their own, alone: tests/CMakeLists.txt). */
static inline void tu_case_filters(void)
{
    const char *only = getenv("SQLLOCK_TEST_CASES");
    const char *skip = getenv("SQLLOCK_TEST_SKIP_CASES");

    if (only != NULL && *only != '\0')
        cmocka_set_test_filter(only);
    if (skip != NULL && *skip != '\0')
        cmocka_set_skip_filter(skip);
}

static inline int tu_run_per_url(const char *unit, const char **url,
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

/* Opens a handle in a forked child; on failure prints why and returns
 * NULL (a child reports through its exit status, not through cmocka). */
static inline sqllock_db *tu_child_open(const char *url, const char *what)
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

/* Opens `url` and creates the schema there (idempotent): for a group
 * setup. 0, or -1 after printing why. */
static inline int tu_init_schema(const char *url)
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

/* Zeroed memory shared with forked children. */
static inline void *tu_shared_map(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(p != MAP_FAILED);
    memset(p, 0, size);
    return p;
}

/* Fails unless `rc` is `want`, naming the call and the handle's message. */
#define EXPECT_RC(db, rc, want, what)                                        \
    do {                                                                     \
        int rc_ = (rc);                                                      \
        if (rc_ != (want))                                                   \
            fail_msg("%s: got %s, want %s (message: %s)", (what),            \
                     sqllock_errname(rc_), sqllock_errname(want),            \
                     sqllock_errmsg(db));                                    \
    } while (0)

/* PostgreSQL: the server's count of WAL syncs (fsync/fdatasync of the
 * WAL), after making `db`'s session publish its own counts (test_fast,
 * test_hostile count a durable commit's flushes with it). */
static inline int64_t tu_pg_wal_syncs(sqllock_db *db)
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

/* The message on `db` mentions at least one of the "|"-separated words
 * in `any`, ignoring case. */
static inline void expect_msg_any(const sqllock_db *db, const char *what,
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

#define TU_RUN_PER_URL(unit, url, tests, setup, teardown)                    \
    tu_run_per_url((unit), (url), (tests), sizeof(tests) / sizeof((tests)[0]), \
                   (setup), (teardown), NULL)

/* Runs a group on the URLs of one driver only, for what only that
 * database has (LISTEN, fast mode): "<unit> [<driver>]" per URL. Returns
 * non-zero when a test failed. The driver's presence is checked by
 * TU_RUN_PER_URL, which the test file runs first. */
static inline int tu_run_on_driver(const char *unit, const char *driver,
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

#define TU_RUN_ON_DRIVER(unit, driver, url, tests, setup)                     \
    tu_run_on_driver((unit), (driver), (url), (tests),                         \
                     sizeof(tests) / sizeof((tests)[0]), (setup))

/* The same, skipping SQLite URLs and saying why. */
#define TU_RUN_PER_URL_NO_SQLITE(unit, url, tests, setup, teardown, why)     \
    tu_run_per_url((unit), (url), (tests), sizeof(tests) / sizeof((tests)[0]), \
                   (setup), (teardown), (why))

#endif /* SQLLOCK_TEST_RUN_H */
