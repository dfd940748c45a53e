/*
 * guard.h -- what the groups of test_guard share: the application's own
 * connection (tests/guard/app.c), the fixture and the helpers
 * (guard/common.c), and the cases of each group, for main()
 * (tests/test_guard.c).
 *
 * Include after cmocka.h, test_util.h and test_run.h.
 */
#ifndef SQLLOCK_TEST_GUARD_H
#define SQLLOCK_TEST_GUARD_H

#include <stddef.h>
#include <stdint.h>

extern const char *g_url;  /* the URL the current group runs on */

/* The application's table: one row per case (or per round). */
#define GUARD_TABLE "sqllock_test_guard"

/* ------------------------------------------------------------------ */
/* The application's own connection (guard/app.c)                      */
/* ------------------------------------------------------------------ */

/*
 * A connection the application owns, used through its database's own
 * client library -- libpq, the MySQL C API (prepared statements),
 * sqlite3 -- with that library's placeholders ($n; ?; ?). It is opened
 * through a sqllock handle (so that the tests need no second URL parser)
 * and taken from it with sqllock_db_native(); the handle is used for
 * nothing else after. MySQL: the session is set back to what an
 * application's is by default -- REPEATABLE READ, the time zone given --
 * not sqllock's (READ COMMITTED, UTC).
 */
typedef struct app app;

/* What a statement of the application's gave. */
enum {
    APP_OK = 0,
    APP_SERIALIZATION,   /* PostgreSQL 40001, MySQL 1213 (deadlock) */
    APP_BUSY,            /* SQLite BUSY (a stale snapshot, a busy lock),
                            MySQL 1205 (lock wait timeout) */
    APP_ERROR            /* anything else: the test fails on it */
};

/* `tz`: the session's time zone ("+05:00"; PostgreSQL and MySQL), or
 * NULL. */
app *app_open(const char *url, const char *tz);
/* What app_open_with() may change in the application's session. */
enum {
    /* MySQL: the test connects itself with CLIENT_FOUND_ROWS (as Django's
     * backend does), so that an UPDATE counts the rows it matched and
     * INSERT ... ON DUPLICATE KEY UPDATE counts an unchanged row as 1.
     * Ignored elsewhere. */
    APP_FOUND_ROWS = 1,
    /* The session's isolation level (PostgreSQL and MySQL; SQLite has
     * none): READ COMMITTED, or REPEATABLE READ (MySQL's app_open()
     * default already). */
    APP_READ_COMMITTED = 2,
    APP_REPEATABLE_READ = 4
};
app *app_open_with(const char *url, const char *tz, unsigned flags);
/* 1 when the connection has CLIENT_FOUND_ROWS (MySQL). */
int app_found_rows(const app *a);
void app_close(app *a);
/* Closes every connection still open (a failed case's teardown). */
void app_close_all(void);
const char *app_driver(const app *a);
/* The connection itself (PGconn *, MYSQL *, sqlite3 *), for
 * sqllock_borrow() (test_borrow). */
void *app_native(app *a);
/* The placeholder style of the application's library, for
 * sqllock_guard_sql(). */
int app_style(const app *a);
/* Runs a statement without parameters (BEGIN, COMMIT, SET ...). */
int app_exec(app *a, const char *sql);
/* Runs `sql` with the integers ints[0..nints) bound in order, then the
 * lease's name and token when `name` is not NULL; *affected gets the
 * rows changed, *first (when not NULL) the first column of the first
 * row. */
int app_run(app *a, const char *sql, const int64_t *ints, int nints,
            const char *name, int64_t token, int64_t *affected,
            int64_t *first);
/* The last error's text. */
const char *app_error(const app *a);
/* The statement to begin a transaction at `iso`: 0 the database's
 * default (deferred on SQLite), 1 READ COMMITTED, 2 REPEATABLE READ,
 * 3 SERIALIZABLE (SQLite: BEGIN IMMEDIATE for 1-3). MySQL sets the
 * level for the next transaction with its own statement first. */
int app_begin(app *a, int iso);

/* Builds `head` with each '?' turned into the library's placeholder
 * (counted from 1), then " AND " and the guard, its placeholders
 * numbered on: out[size]. Fails the test on an error. */
void app_guarded_sql(app *a, sqllock_db *db, const char *head,
                     const char *name, int64_t token, char *out,
                     size_t size);

/* ------------------------------------------------------------------ */
/* Helpers (guard/common.c)                                            */
/* ------------------------------------------------------------------ */

int guard_group_setup(void **state);
/* After each case: closes the application's connections and the
 * handles of guard_open() that a failure left open. */
int guard_teardown(void **state);
sqllock_db *guard_open(void);
void guard_close(sqllock_db *db);
/* A fresh lock name with `what` in it. */
void guard_name(char *buf, size_t size, const char *what);
/* A new row of GUARD_TABLE (val 0, n 0); returns its id. */
int64_t guard_row(sqllock_db *db);
/* Reads val, n and fence of row `id` (through `db`). */
void guard_read(sqllock_db *db, int64_t id, int64_t *val, int64_t *n,
                int64_t *fence);
/* A lease handle on `name` with `ttl`, acquired (fails the test when
 * not granted within `wait_ms`). */
sqllock_lease *guard_acquire(sqllock_db *db, const char *name, int64_t ttl,
                             int64_t wait_ms);
/* Waits until *flag (shared) is at least `want`, for up to ms; fails the
 * test after that. */
void guard_wait_flag(int *flag, int want, int64_t ms);

/* guard/sql.c: the guard's text, styles and bad input */
void test_guard_G1_text_per_style(void **state);
void test_guard_G1_E2_bad_input(void **state);
/* guard/native.c: the guard on the application's own connection */
void test_guard_G1_native_held_and_refused(void **state);
void test_guard_G1_native_expired_at_check(void **state);
void test_guard_G1_native_takeover_waits_for_commit(void **state);
void test_guard_G1_native_session_time_zone(void **state);
/* guard/race.c: paused holders and the commit-time race */
void test_guard_G1_paused_holder_refused(void **state);
void test_guard_G1_commit_race(void **state);
/* guard/update.c: sqllock_table_guarded_update() */
void test_guard_G1_update_statuses(void **state);
void test_guard_G1_update_in_txn(void **state);
void test_guard_G1_L5_update_same_values_ok(void **state);
void test_guard_G1_update_delayed_past_expiry(void **state);

#endif /* SQLLOCK_TEST_GUARD_H */
