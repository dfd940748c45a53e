/*
 * run.c -- the main() of the tests that run once per database
 * (test_run.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fnmatch.h>

#include "test_util.h"
#include "test_run.h"

char tu_missing_driver[64];
const char *tu_url;

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

    /* cmocka's filters take one pattern each: a list (tu_case_selected()
     * takes them) would select nothing, or skip nothing, silently. */
    if ((only != NULL && strchr(only, ' ') != NULL) ||
        (skip != NULL && strchr(skip, ' ') != NULL)) {
        fprintf(stderr, "SQLLOCK_TEST_CASES and SQLLOCK_TEST_SKIP_CASES take "
                "one pattern each in this test\n");
        exit(2);
    }

    if (only != NULL && *only != '\0')
        cmocka_set_test_filter(only);
    if (skip != NULL && *skip != '\0')
        cmocka_set_skip_filter(skip);
}

/* The cases that do not apply to a driver or kind of URL (tu_not_on). */
typedef struct tu_na {
    const char *on, *pattern, *why;
} tu_na;
static tu_na tu_nas[32];
static int tu_n_na;

void tu_not_on(const char *on, const char *pattern, const char *why)
{
    if (tu_n_na < (int)(sizeof tu_nas / sizeof tu_nas[0]))
        tu_nas[tu_n_na++] = (tu_na){ on, pattern, why };
    else
        fprintf(stderr, "tu_not_on: too many entries; %s stays in\n",
                pattern);
}

/* The reason case `name` does not apply on `url` (driver `drv`), or
 * NULL when it does. */
static const char *tu_not_applicable(const char *url, const char *drv,
                                     const char *name)
{
    int i;

    for (i = 0; i < tu_n_na; i++) {
        int match = strcmp(tu_nas[i].on, "pooled") == 0
                        ? tu_url_pooled(url)
                        : drv != NULL && strcmp(tu_nas[i].on, drv) == 0;
        if (match && fnmatch(tu_nas[i].pattern, name, 0) == 0)
            return tu_nas[i].why;
    }
    return NULL;
}

/* 1 when one of the space-separated patterns of `list` ('*' and '?', as
 * cmocka's filters take) matches `name`. */
static int tu_any_match(const char *list, const char *name)
{
    char pat[256];
    size_t n;

    while (*list != '\0') {
        while (*list == ' ')
            list++;
        n = strcspn(list, " ");
        if (n > 0 && n < sizeof pat) {
            memcpy(pat, list, n);
            pat[n] = '\0';
            if (fnmatch(pat, name, 0) == 0)
                return 1;
        }
        list += n;
    }
    return 0;
}

/* 1 when SQLLOCK_TEST_CASES and SQLLOCK_TEST_SKIP_CASES select `name`:
 * each a pattern or a space-separated list of them. */
int tu_case_selected(const char *name)
{
    const char *only = getenv("SQLLOCK_TEST_CASES");
    const char *skip = getenv("SQLLOCK_TEST_SKIP_CASES");

    if (only != NULL && *only != '\0' && !tu_any_match(only, name))
        return 0;
    if (skip != NULL && *skip != '\0' && tu_any_match(skip, name))
        return 0;
    return 1;
}

/* Copies into sel[] the cases of tests[] that this run selects and that
 * apply on `url`; returns how many. */
static size_t tu_select(const char *url, const char *drv, const char *group,
                        const struct CMUnitTest *tests, size_t ntests,
                        struct CMUnitTest *sel)
{
    size_t k, nsel = 0;

    for (k = 0; k < ntests; k++) {
        const char *why = tu_not_applicable(url, drv, tests[k].name);
        if (!tu_case_selected(tests[k].name))
            continue;
        if (why != NULL) {
            printf("%s: %s does not apply here: %s\n", group,
                   tests[k].name, why);
            continue;
        }
        sel[nsel++] = tests[k];
    }
    return nsel;
}

int tu_status_merge(int a, int b)
{
    if ((a != 0 && a != TU_SKIPPED) || (b != 0 && b != TU_SKIPPED))
        return 1;
    return a == TU_SKIPPED || b == TU_SKIPPED ? TU_SKIPPED : 0;
}

int tu_run_per_url(const char *unit, const char **url,
                          const struct CMUnitTest *tests, size_t ntests,
                          CMFixtureFunction setup, CMFixtureFunction teardown,
                          const char *skip_sqlite_why)
{
    const struct CMUnitTest require[] = {
        cmocka_unit_test(tu_required_drivers_present),
    };
    const char *only = getenv("SQLLOCK_TEST_DRIVER");
    struct CMUnitTest *sel;
    char group[300];
    tu_urls urls;
    int i, failed = 0, ran = 0, partial = 0;

    if (only != NULL && *only == '\0')
        only = NULL;
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
         * not required: ctest shows the entry as skipped (under CI it
         * fails: there every driver is tested). */
        tu_urls_free(&urls);
        return tu_unit_cannot_run(unit, "no %s URL in SQLLOCK_TEST_URLS",
                                  only != NULL ? only : "");
    }
    sel = calloc(ntests > 0 ? ntests : 1, sizeof *sel);
    if (sel == NULL) {
        tu_urls_free(&urls);
        return 1;
    }
    for (i = 0; i < urls.n; i++) {
        const char *drv = tu_url_driver(urls.url[i]);
        size_t nsel;
        char *shown;
        int n, skips;

        if (skip_sqlite_why != NULL && drv != NULL &&
            strcmp(drv, "sqlite") == 0) {
            printf("%s: not on %s: %s\n", unit, urls.url[i], skip_sqlite_why);
            continue;
        }
        shown = sqllock__url_redact(urls.url[i]);
        snprintf(group, sizeof group, "%s [%s] %s", unit,
                 drv ? drv : "unknown", shown ? shown : "");
        free(shown);
        /* The cases this run selects and that apply here: the others are
         * left out, saying why, rather than skipped (a skip fails CI). */
        nsel = tu_select(urls.url[i], drv, group, tests, ntests, sel);
        if (nsel == 0) {
            /* A ctest entry that runs nothing for its driver is a broken
             * table or filter, never a pass. */
            printf("%s: FAILED: no case of %s ran here (SQLLOCK_TEST_CASES"
                   "=%s, SQLLOCK_TEST_SKIP_CASES=%s)\n", group, unit,
                   getenv("SQLLOCK_TEST_CASES") ? getenv("SQLLOCK_TEST_CASES")
                                                : "",
                   getenv("SQLLOCK_TEST_SKIP_CASES")
                       ? getenv("SQLLOCK_TEST_SKIP_CASES") : "");
            failed++;
            continue;
        }
        *url = tu_url = urls.url[i];
        skips = tu_skips;
        n = _cmocka_run_group_tests(group, sel, nsel, setup, teardown);
        skips = tu_skips - skips;
        ran++;
        if (n == 0 && skips == 0)
            tu_report_driver(unit, drv);
        else if (n == 0) {
            printf("%s: %d of %zu cases could not run here: not reported "
                   "as tested\n", group, skips, nsel);
            partial++;
        }
        failed += n;
    }
    free(sel);
    tu_urls_free(&urls);
    if (failed != 0)
        return 1;
    if (ran == 0)
        return tu_unit_cannot_run(unit, "no URL here that it runs on");
    return partial != 0 ? TU_SKIPPED : 0;
}

int tu_unit_result(const char *unit, const char *driver, int failed)
{
    if (failed != 0)
        return 1;
    if (tu_skips != 0) {
        printf("%s: %d case(s) could not run here: %s is not reported as "
               "tested\n", unit, tu_skips, driver);
        tu_skips = 0;
        return TU_SKIPPED;
    }
    tu_report_driver(unit, driver);
    return 0;
}

sqllock_db *tu_child_open(const char *url, const char *what)
{
    sqllock_options o = SQLLOCK_OPTIONS_INIT;
    sqllock_db *db = NULL;
    int rc;

    /* The library's 5 s SQLite busy timeout, times the slowdown: 8
     * processes under valgrind on 2 busy cores took turns at the file so
     * slowly that one waited out 5 s (valgrind/test_optimistic_sqlite's
     * O2 counter), and what these children check is exclusion, not the
     * busy timeout. */
    o.busy_timeout_ms = 5000 * (int64_t)tu_slowdown();
    rc = sqllock_open(url, &o, &db);

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

int tu_init_schema_ddl(const char *url, const char *ddl)
{
    sqllock_db *db = NULL;
    int rc;

    if (tu_init_schema(url) != 0)
        return -1;
    rc = sqllock_open(url, NULL, &db);
    if (rc == SQLLOCK_OK)
        rc = sqllock__exec_sql(db, ddl, NULL, 0, NULL, NULL, NULL);
    if (rc != SQLLOCK_OK)
        fprintf(stderr, "setup: %s\n", sqllock_errmsg(db));
    sqllock_close(db);
    return rc == SQLLOCK_OK ? 0 : -1;
}

int tu_group_schema(void **state)
{
    (void)state;
    return tu_init_schema(tu_url);
}

int tu_group_fenced(void **state)
{
    (void)state;
    return tu_init_schema_ddl(tu_url, TU_FENCED_DDL);
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
    struct CMUnitTest *sel;
    char group[300];
    tu_urls urls;
    int i, failed = 0, skips = tu_skips;

    if (tu_urls_load(&urls) != 0)
        return 1;
    sel = calloc(ntests > 0 ? ntests : 1, sizeof *sel);
    if (sel == NULL) {
        tu_urls_free(&urls);
        return 1;
    }
    for (i = 0; i < urls.n; i++) {
        const char *drv = tu_url_driver(urls.url[i]);
        size_t nsel;
        if (drv == NULL || strcmp(drv, driver) != 0)
            continue;
        *url = tu_url = urls.url[i];
        snprintf(group, sizeof group, "%s [%s]", unit, driver);
        nsel = tu_select(urls.url[i], drv, group, tests, ntests, sel);
        if (nsel > 0)
            failed += _cmocka_run_group_tests(group, sel, nsel, setup, NULL);
    }
    free(sel);
    tu_urls_free(&urls);
    if (failed != 0)
        return 1;
    return tu_skips != skips ? TU_SKIPPED : 0;
}
