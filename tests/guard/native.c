/*
 * native.c -- the guard in the application's own statements, on its own
 * connection, through libpq, the MySQL C API and sqlite3 (DESIGN G1).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <signal.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "guard/guard.h"

#define SET_VAL "UPDATE " GUARD_TABLE " SET val = ?, n = n + 1 WHERE id = ?"

/* One guarded write of val on row id, in autocommit; returns the rows
 * it changed (fails the test on an error). */
static int64_t guarded_set(app *a, sqllock_db *db, int64_t id, int64_t val,
                           const char *name, int64_t token)
{
    char sql[1024];
    int64_t ints[2] = { val, id }, affected = -1;

    app_guarded_sql(a, db, SET_VAL, name, token, sql, sizeof sql);
    if (app_run(a, sql, ints, 2, name, token, &affected, NULL) != APP_OK)
        fail_msg("guarded write: %s", app_error(a));
    return affected;
}

/* G1: while the lease is held with that token, the guarded write applies,
 * at every isolation level; with another token, another name, or after
 * the release it changes nothing. The guard in a DELETE and in a SELECT
 * too. */
void test_guard_G1_native_held_and_refused(void **state)
{
    sqllock_db *db = guard_open();
    app *a = app_open(g_url, NULL);
    int64_t id = guard_row(db), token, val, n, affected, first;
    sqllock_lease *l;
    char name[96], sql[1024];
    int iso;
    (void)state;

    guard_name(name, sizeof name, "held");
    l = guard_acquire(db, name, 30000, 0);
    token = sqllock_lease_token(l);
    assert_int_equal(guarded_set(a, db, id, 1, name, token), 1);
    for (iso = 0; iso <= 3; iso++) {
        if (app_begin(a, iso) != APP_OK)
            fail_msg("begin: %s", app_error(a));
        assert_int_equal(guarded_set(a, db, id, 10 + iso, name, token), 1);
        if (app_exec(a, "COMMIT") != APP_OK)
            fail_msg("commit at level %d: %s", iso, app_error(a));
    }
    assert_int_equal(guarded_set(a, db, id, 99, name, token + 1), 0);
    assert_int_equal(guarded_set(a, db, id, 99, "guard-no-such-name", token),
                     0);
    guard_read(db, id, &val, &n, NULL);
    assert_int_equal(val, 13);
    assert_int_equal(n, 5);

    /* As a condition of a SELECT: 1 while held. */
    app_guarded_sql(a, db, "SELECT CASE WHEN 1 = 1", name, token, sql,
                    sizeof sql);
    strcat(sql, " THEN 1 ELSE 0 END");
    if (strcmp(app_driver(a), "mysql") == 0)
        strcat(sql, " FROM DUAL");
    first = -1;
    if (app_run(a, sql, NULL, 0, name, token, NULL, &first) != APP_OK)
        fail_msg("guarded select: %s", app_error(a));
    assert_int_equal(first, 1);

    EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
    assert_int_equal(guarded_set(a, db, id, 99, name, token), 0);
    if (app_run(a, sql, NULL, 0, name, token, NULL, &first) != APP_OK)
        fail_msg("guarded select: %s", app_error(a));
    assert_int_equal(first, 0);
    /* A DELETE after the release deletes nothing. */
    app_guarded_sql(a, db, "DELETE FROM " GUARD_TABLE " WHERE id = ?", name,
                    token, sql, sizeof sql);
    if (app_run(a, sql, &id, 1, name, token, &affected, NULL) != APP_OK)
        fail_msg("guarded delete: %s", app_error(a));
    assert_int_equal(affected, 0);
    guard_read(db, id, &val, &n, NULL);
    assert_int_equal(val, 13);
    sqllock_lease_free(l);
    app_close(a);
    guard_close(db);
}

/*
 * G1: expiry is judged at the time of the check, not at the start of the
 * transaction. In one transaction that began while the lease was live,
 * the first guarded write applies; after the lease has expired by the
 * server's clock -- nobody took it over, the row still carries the
 * token -- the second changes nothing. (PostgreSQL's now() is the
 * transaction's start: a guard on it would let the second write in.)
 */
void test_guard_G1_native_expired_at_check(void **state)
{
    const int64_t ttl = tu_scaled_ms(400);
    sqllock_db *db = guard_open();
    app *a = app_open(g_url, NULL);
    int64_t id, token, val, n, t0, affected;
    sqllock_lease *l;
    tu_row row;
    char name[96];
    int iso, tries = 0;
    (void)state;

    for (iso = 0; iso <= 2; iso++) {
        id = guard_row(db);
        guard_name(name, sizeof name, "expired");
        t0 = tu_now_ms();
        l = guard_acquire(db, name, ttl, 0);
        token = sqllock_lease_token(l);
        if (app_begin(a, iso) != APP_OK)
            fail_msg("begin: %s", app_error(a));
        affected = guarded_set(a, db, id, 1, name, token);
        if (tu_now_ms() - t0 >= ttl) {
            app_exec(a, "ROLLBACK");
            sqllock_lease_free(l);
            tu_too_slow(&tries, 3, "the first write came after the ttl");
            iso--;
            continue;
        }
        assert_int_equal(affected, 1);
        sqllock__sleep_ms(t0 + ttl + tu_scaled_ms(150) - tu_now_ms());
        assert_int_equal(guarded_set(a, db, id, 2, name, token), 0);
        if (app_exec(a, "COMMIT") != APP_OK)
            fail_msg("commit: %s", app_error(a));
        guard_read(db, id, &val, &n, NULL);
        assert_int_equal(val, 1);
        assert_int_equal(n, 1);
        /* Nobody took it over: the row still names this hold. */
        memset(&row, 0, sizeof row);
        EXPECT_RC(db, tu_find(db, name, &row), SQLLOCK_OK, "list");
        assert_int_equal(row.found, 1);
        assert_int_equal(row.token, token);
        assert_true(row.remaining_ms < 0);
        EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
        sqllock_lease_free(l);
    }
    app_close(a);
    guard_close(db);
}

typedef struct waits_shared {
    int go;                    /* 1: A's write is made, B may start */
    int64_t not_before;        /* B tries from then on (the expiry) */
    int step;                  /* 1: B is trying; 2: B was granted */
    int rc;
    int64_t try_ms, grant_ms;  /* tu_now_ms() */
    int64_t val_seen, token;
} waits_shared;

static void taker(waits_shared *sh, const char *name, int64_t id)
{
    sqllock_db *db;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;
    static const sqllock_table reader = { GUARD_TABLE, "id", "id" };
    static const char *const cols[] = { "val" };
    sqllock_cell key = SQLLOCK_NUMBER(id);

    while (__atomic_load_n(&sh->go, __ATOMIC_SEQ_CST) == 0)
        tu_sleep_ms(1);
    db = tu_child_open(g_url, "taker");
    o.ttl_ms = 30000;
    o.backoff_min_ms = 1;
    o.backoff_max_ms = 10;
    if (db == NULL || sqllock_lease_new(db, name, &o, &l) != SQLLOCK_OK)
        _exit(2);
    while (tu_now_ms() < sh->not_before)
        tu_sleep_ms(1);
    sh->try_ms = tu_now_ms();
    __atomic_store_n(&sh->step, 1, __ATOMIC_SEQ_CST);
    sh->rc = sqllock_lease_acquire(l, tu_scaled_ms(20000));
    sh->grant_ms = tu_now_ms();
    sh->token = sqllock_lease_token(l);
    if (sh->rc == SQLLOCK_OK &&
        sqllock_table_get(db, &reader, &key, cols, 1, &sh->val_seen,
                          NULL) != SQLLOCK_OK)
        sh->rc = -1;
    __atomic_store_n(&sh->step, 2, __ATOMIC_SEQ_CST);
    if (sh->rc == SQLLOCK_OK)
        sqllock_lease_release(l);
    sqllock_lease_free(l);
    guard_close(db);
    _exit(0);
}

/*
 * G1, the commit-time argument: a transaction made a guarded write while
 * the lease was live and has not committed; the lease expires; another
 * process tries to take it over. The takeover waits for the commit (the
 * guard holds the lease row; on SQLite the write holds the database), and
 * then finds the guarded write committed. The holder's own renewal is
 * LOST afterwards.
 */
void test_guard_G1_native_takeover_waits_for_commit(void **state)
{
    const int64_t ttl = tu_scaled_ms(400), hold = tu_scaled_ms(600);
    waits_shared *sh = tu_shared_map(sizeof *sh);
    sqllock_db *db = guard_open();
    int64_t id = guard_row(db), token, t0, commit_ms;
    sqllock_lease *l;
    char name[96];
    app *a;
    pid_t pid;
    (void)state;

    guard_name(name, sizeof name, "waits");
    /* The child must not inherit open connections (SQLite's locks are
     * the process's): it starts first, and waits for its turn. */
    guard_close(db);
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        taker(sh, name, id);
    db = guard_open();
    a = app_open(g_url, NULL);
    t0 = tu_now_ms();
    l = guard_acquire(db, name, ttl, 0);
    token = sqllock_lease_token(l);
    if (app_begin(a, 0) != APP_OK)
        fail_msg("begin: %s", app_error(a));
    assert_int_equal(guarded_set(a, db, id, 7, name, token), 1);
    sh->not_before = t0 + ttl + tu_scaled_ms(20);
    __atomic_store_n(&sh->go, 1, __ATOMIC_SEQ_CST);
    guard_wait_flag(&sh->step, 1, tu_scaled_ms(20000));
    tu_sleep_ms(hold);
    if (__atomic_load_n(&sh->step, __ATOMIC_SEQ_CST) >= 2)
        fail_msg("G1: the takeover did not wait for the guarded transaction "
                 "(%s after %lld ms)", sqllock_errname(sh->rc),
                 (long long)(sh->grant_ms - sh->try_ms));
    /* The takeover can end as soon as the server has committed, which
     * may be before this process hears of it (MySQL's acquire is one
     * round trip): its grant is compared with the time the COMMIT was
     * sent, which it cannot precede if it waited. */
    commit_ms = tu_now_ms();
    if (app_exec(a, "COMMIT") != APP_OK)
        fail_msg("commit: %s", app_error(a));
    assert_int_equal(tu_wait(pid), 0);
    if (sh->rc != SQLLOCK_OK)
        fail_msg("the takeover after the commit: %s", sqllock_errname(sh->rc));
    assert_true(sh->token > token);
    if (sh->grant_ms < commit_ms - 1)
        fail_msg("G1: the takeover was granted %lld ms before the guarded "
                 "transaction's COMMIT was sent",
                 (long long)(commit_ms - sh->grant_ms));
    /* It found the guarded write, committed before its grant. */
    assert_int_equal(sh->val_seen, 7);
    EXPECT_RC(db, sqllock_lease_renew(l), SQLLOCK_LOST, "renew after");
    sqllock_lease_free(l);
    app_close(a);
    guard_close(db);
    munmap(sh, sizeof *sh);
}

/*
 * G1 on MySQL/MariaDB: the application's session may have any time zone
 * (sqllock's own sessions run in UTC, in which acquire judges expiry;
 * PostgreSQL compares timestamptz, whatever the session's zone, and is
 * checked the same way).
 * The guard judges it the same way: held, it applies; expired by the
 * server's clock, it does not -- in a session east and west of UTC.
 */
void test_guard_G1_native_session_time_zone(void **state)
{
    static const char *const zones[] = { "+05:00", "-07:00" };
    const int64_t ttl = tu_scaled_ms(400);
    sqllock_db *db = guard_open();
    int64_t id, token, t0;
    sqllock_lease *l;
    char name[96];
    int z, tries = 0;
    (void)state;

    for (z = 0; z < 2; z++) {
        app *a = app_open(g_url, zones[z]);
        id = guard_row(db);
        guard_name(name, sizeof name, "zone");
        t0 = tu_now_ms();
        l = guard_acquire(db, name, ttl, 0);
        token = sqllock_lease_token(l);
        if (guarded_set(a, db, id, 1, name, token) != 1) {
            if (tu_now_ms() - t0 >= ttl) {
                tu_too_slow(&tries, 3, "the write came after the ttl");
                z--;
                app_close(a);
                sqllock_lease_free(l);
                continue;
            }
            fail_msg("G1: a guarded write in a session at %s was refused "
                     "while the lease was held", zones[z]);
        }
        sqllock__sleep_ms(t0 + ttl + tu_scaled_ms(150) - tu_now_ms());
        if (guarded_set(a, db, id, 2, name, token) != 0)
            fail_msg("G1: a guarded write in a session at %s applied after "
                     "the lease expired", zones[z]);
        sqllock_lease_free(l);
        app_close(a);
    }
    guard_close(db);
}
