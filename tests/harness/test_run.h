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

/* The exit status of a run that tested nothing because SQLLOCK_TEST_DRIVER
 * names a driver that has no URL and is not required (ctest's
 * SKIP_RETURN_CODE, tests/CMakeLists.txt). */
#define TU_SKIPPED 77

/* The first driver SQLLOCK_TEST_REQUIRE names that has no URL, or "". */
extern char tu_missing_driver[64];

void tu_required_drivers_present(void **state);

/* SQLLOCK_TEST_CASES and SQLLOCK_TEST_SKIP_CASES: a cmocka pattern ('*'
 * and '?') of the test functions to run, and of those to skip, in the
 * groups that follow (ctest runs a unit's timing-critical cases as an
 * entry of their own, alone: tests/CMakeLists.txt). */
void tu_case_filters(void);

int tu_run_per_url(const char *unit, const char **url,
                          const struct CMUnitTest *tests, size_t ntests,
                          CMFixtureFunction setup, CMFixtureFunction teardown,
                          const char *skip_sqlite_why);

/* Opens a handle in a forked child; on failure prints why and returns
 * NULL (a child reports through its exit status, not through cmocka). */
sqllock_db *tu_child_open(const char *url, const char *what);

/* Opens `url` and creates the schema there (idempotent): for a group
 * setup. 0, or -1 after printing why. */
int tu_init_schema(const char *url);

/* Zeroed memory shared with forked children. */
void *tu_shared_map(size_t size);

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
int64_t tu_pg_wal_syncs(sqllock_db *db);

/* The message on `db` mentions at least one of the "|"-separated words
 * in `any`, ignoring case. */
void expect_msg_any(const sqllock_db *db, const char *what,
                           const char *any);

#define TU_RUN_PER_URL(unit, url, tests, setup, teardown)                    \
    tu_run_per_url((unit), (url), (tests), sizeof(tests) / sizeof((tests)[0]), \
                   (setup), (teardown), NULL)

/* Runs a group on the URLs of one driver only, for what only that
 * database has (LISTEN, fast mode): "<unit> [<driver>]" per URL. Returns
 * non-zero when a test failed. The driver's presence is checked by
 * TU_RUN_PER_URL, which the test file runs first. */
int tu_run_on_driver(const char *unit, const char *driver,
                                   const char **url,
                                   const struct CMUnitTest *tests,
                                   size_t ntests, CMFixtureFunction setup);

#define TU_RUN_ON_DRIVER(unit, driver, url, tests, setup)                     \
    tu_run_on_driver((unit), (driver), (url), (tests),                         \
                     sizeof(tests) / sizeof((tests)[0]), (setup))

/* The same, skipping SQLite URLs and saying why. */
#define TU_RUN_PER_URL_NO_SQLITE(unit, url, tests, setup, teardown, why)     \
    tu_run_per_url((unit), (url), (tests), sizeof(tests) / sizeof((tests)[0]), \
                   (setup), (teardown), (why))

#endif /* SQLLOCK_TEST_RUN_H */
