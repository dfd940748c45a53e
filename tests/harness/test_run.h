/*
 * test_run.h -- the main() of the tests that run once per database.
 *
 * Include after cmocka.h and test_util.h. TU_RUN_PER_URL() first checks
 * that every driver SQLLOCK_TEST_REQUIRE names has a URL (a required
 * driver that is not tested fails the run), then runs the group of tests
 * once per URL in SQLLOCK_TEST_URLS, setting the test file's URL variable
 * before each (TU_RUN_PER_URL_NO_SQLITE leaves SQLite out, saying why),
 * and reports every driver whose group passed with no case skipped
 * (scripts/test.sh's check_report fails a ctest entry that did not report
 * each of its drivers). SQLLOCK_TEST_DRIVER and SQLLOCK_TEST_DB_PER_UNIT
 * (test_util.h) choose one driver's URLs and the unit's own databases;
 * with no URL left for that driver it returns TU_SKIPPED (or fails, when
 * the driver is required or under CI).
 *
 * The code is in run.c of the harness library (sqllock_test_harness).
 */
#ifndef SQLLOCK_TEST_RUN_H
#define SQLLOCK_TEST_RUN_H

#include <sys/mman.h>

/* The exit status of a run that did not test everything here -- a
 * driver with no URL, a case that could not run (tu_cannot_run) -- where
 * that is allowed: never under CI (ctest's SKIP_RETURN_CODE,
 * tests/CMakeLists.txt). */
#define TU_SKIPPED 77

/* The first driver SQLLOCK_TEST_REQUIRE names that has no URL, or "". */
extern char tu_missing_driver[64];

void tu_required_drivers_present(void **state);

/* SQLLOCK_TEST_CASES and SQLLOCK_TEST_SKIP_CASES: a cmocka pattern ('*'
 * and '?') of the test functions to run, and of those to skip, in the
 * groups that follow (ctest runs a unit's timing-critical cases as an
 * entry of their own, alone: tests/CMakeLists.txt). */
void tu_case_filters(void);

/* Leaves the cases whose names match `pattern` (cmocka's '*' and '?')
 * out of the groups that run on driver `on` ("sqlite", "postgres",
 * "mysql"), or on URLs through a connection pooler ("pooled"), saying
 * `why`: for a case that does not apply there by design (SQLite has no
 * hosts, no server connection to kill). Call before TU_RUN_PER_URL. A
 * case that applies but cannot run in this environment calls
 * tu_cannot_run() instead (tu_env.h), which fails under CI. */
void tu_not_on(const char *on, const char *pattern, const char *why);

/* Two exit statuses as one: a failure wins, then TU_SKIPPED, then 0
 * (never `|`: 77 | 1 is 77). */
int tu_status_merge(int a, int b);

/* 1 when SQLLOCK_TEST_CASES / SQLLOCK_TEST_SKIP_CASES select case `name`. */
int tu_case_selected(const char *name);

/* A unit's group has run on `driver` with `failed` failures: returns the
 * exit status -- 1 after a failure; TU_SKIPPED when a case could not run
 * here (tu_cannot_run; never under CI, where that fails); else 0, after
 * reporting the driver as tested (tu_report_driver). It counts the skips
 * since its last call. For the main()s of units that do not use
 * TU_RUN_PER_URL. */
int tu_unit_result(const char *unit, const char *driver, int failed);

/* Runs the group once per URL (see the top of this file). Only the cases
 * SQLLOCK_TEST_CASES and SQLLOCK_TEST_SKIP_CASES select and tu_not_on()
 * leaves in run; a URL on which that leaves none fails (a ctest entry
 * that runs nothing for its driver is never a pass). A driver whose
 * group passed with no case skipped is reported (tu_report_driver).
 * Returns the exit status: 1 after a failure; TU_SKIPPED when nothing
 * ran or a case could not run here (under CI both fail instead); 0. */
int tu_run_per_url(const char *unit, const char **url,
                          const struct CMUnitTest *tests, size_t ntests,
                          CMFixtureFunction setup, CMFixtureFunction teardown,
                          const char *skip_sqlite_why);

/* Opens a handle in a forked child, its SQLite busy timeout scaled by
 * tu_slowdown(); on failure prints why and returns NULL (a child reports
 * through its exit status, not through cmocka). */
sqllock_db *tu_child_open(const char *url, const char *what);

/* Opens `url` and creates the schema there (idempotent): for a group
 * setup. 0, or -1 after printing why. */
int tu_init_schema(const char *url);

/* tu_init_schema(), then `ddl` (a CREATE TABLE IF NOT EXISTS of the
 * test's own table, e.g. TU_FENCED_DDL) on a handle of its own: for a
 * group setup. 0, or -1 after printing why ("setup: <message>"). */
int tu_init_schema_ddl(const char *url, const char *ddl);

/* The URL of the group running now: tu_run_per_url() and
 * tu_run_on_driver() set it (with the test file's own URL variable)
 * before each group, for the shared group setups below. */
extern const char *tu_url;

/* Group setups for TU_RUN_PER_URL and TU_RUN_ON_DRIVER, for the units
 * whose setup is only that: tu_group_schema() creates the schema on
 * tu_url (tu_init_schema), tu_group_fenced() the schema and the fenced
 * table (tu_init_schema_ddl with TU_FENCED_DDL). 0, or -1 after printing
 * why. */
int tu_group_schema(void **state);
int tu_group_fenced(void **state);

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
 * database has (LISTEN, fast mode): "<unit> [<driver>]" per URL, with
 * the cases selected as TU_RUN_PER_URL selects them. Returns 1 when a
 * test failed, TU_SKIPPED when one could not run here, else 0: merge it
 * with TU_RUN_PER_URL's status through tu_status_merge(). The driver's
 * presence is checked by TU_RUN_PER_URL, which the test file runs
 * first. */
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
