/*
 * drivers/sqlite.c -- bench_drivers' SQLite part: the floor (two durable
 * write transactions), the library's SQL sent by hand as the driver
 * prepares and binds it, and the FOR UPDATE read and write of
 * --optimistic; and floor_setup(), which every run calls and which makes
 * the floor's rows on SQLite only. The statements of this program's own
 * are stated once, at the top.
 */
#include <stdio.h>
#include <string.h>

#include "drivers/drivers.h"

/* ------------------------------------------------------------------------ */
/* SQLite                                                                   */
/* ------------------------------------------------------------------------ */

#if defined(SQLLOCK_HAVE_SQLITE)
/* The SQLite floor, one row per client. */
static const char SQ_FLOOR_TABLE[] =
    "CREATE TABLE IF NOT EXISTS sqllock_bench_floor "
    "(id INTEGER PRIMARY KEY, v INTEGER NOT NULL)";
static const char SQ_FLOOR[] =
    "UPDATE sqllock_bench_floor SET v = v + 1 WHERE id = ?1";

static int sq_prepare(worker *w, sqlite3_stmt **st, const char *sql)
{
    /* As the driver prepares: once, persistent. */
    if (sqlite3_prepare_v3(w->native, sql, -1, SQLITE_PREPARE_PERSISTENT, st,
                           NULL) != SQLITE_OK)
        return wfail(w, "prepare '%.40s...': %s", sql,
                     sqlite3_errmsg(w->native));
    return 0;
}

static int sq_setup(worker *w)
{
    if (sq_prepare(w, &w->sq_floor, SQ_FLOOR) != 0 ||
        sq_prepare(w, &w->sq_acq, g_sql_acquire) != 0 ||
        sq_prepare(w, &w->sq_rel, g_sql_release) != 0)
        return -1;
    return 0;
}

static int sq_floor_pair(worker *w)
{
    int i, rc;

    for (i = 0; i < 2; i++) {
        sqlite3_reset(w->sq_floor);
        if (sqlite3_bind_int(w->sq_floor, 1, w->bc.index) != SQLITE_OK)
            return wfail(w, "bind: %s", sqlite3_errmsg(w->native));
        rc = sqlite3_step(w->sq_floor);
        if (rc != SQLITE_DONE)
            return wfail(w, "floor UPDATE: %s", sqlite3_errmsg(w->native));
        if (sqlite3_changes(w->native) != 1)
            return wfail(w, "floor UPDATE changed no row");
    }
    sqlite3_reset(w->sq_floor);
    return 0;
}

/* Binds as the driver binds: text with SQLITE_TRANSIENT, integers as
 * int64, after a reset and clear_bindings. */
static int sq_bind3(worker *w, sqlite3_stmt *st, int third_is_token)
{
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (sqlite3_bind_text(st, 1, w->name, -1, SQLITE_TRANSIENT) != SQLITE_OK ||
        sqlite3_bind_text(st, 2, w->owner, -1, SQLITE_TRANSIENT) != SQLITE_OK ||
        (third_is_token
         ? sqlite3_bind_int64(st, 3, w->token)
         : sqlite3_bind_text(st, 3, w->holder, -1, SQLITE_TRANSIENT))
        != SQLITE_OK)
        return wfail(w, "bind: %s", sqlite3_errmsg(w->native));
    return 0;
}

static int sq_hand_pair(worker *w)
{
    int rc;

    if (new_owner(w) != 0 || sq_bind3(w, w->sq_acq, 0) != 0)
        return -1;
    if (sqlite3_bind_int64(w->sq_acq, 4, w->ttl) != SQLITE_OK)
        return wfail(w, "bind: %s", sqlite3_errmsg(w->native));
    rc = sqlite3_step(w->sq_acq);
    if (rc != SQLITE_ROW) {
        sqlite3_reset(w->sq_acq);
        return rc == SQLITE_DONE
               ? wfail(w, "acquire by hand of '%s': busy", w->name)
               : wfail(w, "acquire: %s", sqlite3_errmsg(w->native));
    }
    w->token = sqlite3_column_int64(w->sq_acq, 0);
    rc = sqlite3_step(w->sq_acq);
    sqlite3_reset(w->sq_acq);
    if (rc != SQLITE_DONE)
        return wfail(w, "acquire: %s", sqlite3_errmsg(w->native));
    if (sq_bind3(w, w->sq_rel, 1) != 0)
        return -1;
    rc = sqlite3_step(w->sq_rel);
    if (rc != SQLITE_DONE) {
        sqlite3_reset(w->sq_rel);
        return wfail(w, "release: %s", sqlite3_errmsg(w->native));
    }
    if (sqlite3_changes(w->native) != 1)
        return wfail(w, "release by hand of '%s' deleted no row", w->name);
    sqlite3_reset(w->sq_rel);
    return 0;
}

/* FOR UPDATE: reads qty of w->fu_id into w->fu_qty, then writes
 * fu_qty - 1 there. */
static int sq_fu_rmw(worker *w)
{
    char read[160], write[160];
    int rc;

    if (!w->fu_ready) {
        fu_sql(read, write, sizeof read, 0);
        if (sq_prepare(w, &w->sq_fu_read, read) != 0 ||
            sq_prepare(w, &w->sq_fu_write, write) != 0)
            return -1;
        w->fu_ready = 1;
    }
    sqlite3_reset(w->sq_fu_read);
    if (sqlite3_bind_int64(w->sq_fu_read, 1, w->fu_id) != SQLITE_OK)
        return wfail(w, "bind: %s", sqlite3_errmsg(w->native));
    rc = sqlite3_step(w->sq_fu_read);
    if (rc != SQLITE_ROW) {
        sqlite3_reset(w->sq_fu_read);
        return rc == SQLITE_DONE ? wfail(w, "row %lld: no such row", w->fu_id)
               : wfail(w, "SELECT qty: %s", sqlite3_errmsg(w->native));
    }
    w->fu_qty = sqlite3_column_int64(w->sq_fu_read, 0);
    sqlite3_reset(w->sq_fu_read);
    sqlite3_reset(w->sq_fu_write);
    if (sqlite3_bind_int64(w->sq_fu_write, 1, w->fu_qty - 1) != SQLITE_OK ||
        sqlite3_bind_int64(w->sq_fu_write, 2, w->fu_id) != SQLITE_OK)
        return wfail(w, "bind: %s", sqlite3_errmsg(w->native));
    rc = sqlite3_step(w->sq_fu_write);
    sqlite3_reset(w->sq_fu_write);
    if (rc != SQLITE_DONE)
        return wfail(w, "UPDATE qty: %s", sqlite3_errmsg(w->native));
    if (sqlite3_changes(w->native) != 1)
        return wfail(w, "row %lld: UPDATE matched no row", w->fu_id);
    return 0;
}

static void sq_teardown(worker *w)
{
    sqlite3_finalize(w->sq_floor);
    sqlite3_finalize(w->sq_acq);
    sqlite3_finalize(w->sq_rel);
    sqlite3_finalize(w->sq_fu_read);
    sqlite3_finalize(w->sq_fu_write);
    w->sq_floor = w->sq_acq = w->sq_rel = NULL;
    w->sq_fu_read = w->sq_fu_write = NULL;
}

static void sq_describe(worker *w, char *buf, size_t n)
{
    const char *path = sqlite3_db_filename(w->native, "main");

    snprintf(buf, n, "SQLite %s, %s", sqlite3_libversion(),
             path != NULL ? path : "?");
}

static void sq_exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;

    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        bu_die("%s: %s", sql, msg != NULL ? msg : sqlite3_errmsg(db));
}

static long sq_cleanup(worker *w, const char *pattern)
{
    sqlite3_stmt *st = NULL;
    long n;

    if (sqlite3_prepare_v2(w->native, "DELETE FROM sqllock_lease WHERE name "
                           "LIKE ?1", -1, &st, NULL) != SQLITE_OK ||
        sqlite3_bind_text(st, 1, pattern, -1, SQLITE_TRANSIENT) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_DONE)
        bu_die("cleanup: %s", sqlite3_errmsg(w->native));
    n = sqlite3_changes(w->native);
    sqlite3_finalize(st);
    sq_exec(w->native, "DROP TABLE IF EXISTS sqllock_bench_floor");
    return n;
}

static void sq_exec_sql(void *native, const char *sql)
{
    sq_exec(native, sql);
}

const bench_driver sqlite_part = {
    .name = "sqlite", .floor_label = "floor: durable UPDATE x2",
    .floor_note = "floor on SQLite: two bare durable write transactions "
        "(an UPDATE of one row, twice,\n  WAL, synchronous=FULL, as "
        "sqllock sets them); a SELECT would cost SQLite no commit",
    .setup = sq_setup, .floor_pair = sq_floor_pair,
    .hand_pair = sq_hand_pair, .teardown = sq_teardown,
    .describe = sq_describe, .cleanup = sq_cleanup,
    .uses = {
        { SQLLOCK_SQL_LEASE_ACQUIRE, "1234", &g_sql_acquire },
        { SQLLOCK_SQL_LEASE_RELEASE, "123", &g_sql_release },
        { 0, NULL, NULL } },
    .exec = sq_exec_sql, .fu_rmw = sq_fu_rmw,
    .native_note = "native lock: none on SQLite, which has no named "
        "session lock (its only lock is the\n  file's write lock, which "
        "the floor already pays)",
};
#endif

/* The floor's own rows, where it needs some (SQLite: one per client). */
void floor_setup(const config *cfg, const bench_driver *bd,
                 sqllock_db *db)
{
#if defined(SQLLOCK_HAVE_SQLITE)
    if (strcmp(bd->name, "sqlite") == 0) {
        char sql[128];
        int i;
        sq_exec(sqllock_db_native(db), SQ_FLOOR_TABLE);
        for (i = 0; i < cfg->max_clients; i++) {
            snprintf(sql, sizeof sql, "INSERT OR IGNORE INTO "
                     "sqllock_bench_floor VALUES (%d, 0)", i);
            sq_exec(sqllock_db_native(db), sql);
        }
    }
#else
    (void)cfg;
    (void)bd;
    (void)db;
#endif
}

