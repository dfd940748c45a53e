/*
 * drivers/postgres.c -- bench_drivers' PostgreSQL part: the floor, the
 * library's SQL and the native lock sent by hand through libpq, the FOR
 * UPDATE read and write of --optimistic, and the WAL syncs of
 * --release-compare. The statements of this program's own are stated
 * once, at the top.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/drivers.h"

/* ------------------------------------------------------------------------ */
/* PostgreSQL                                                               */
/* ------------------------------------------------------------------------ */

#if defined(SQLLOCK_HAVE_POSTGRES)
/* SQL_LEASE_RELEASE without the asynchronous commit and the notify, for
 * --release-compare. */
static const char PG_RELEASE_PLAIN[] =
    "DELETE FROM sqllock_lease "
    "WHERE name = $1 AND owner = $2 AND token = $3";
/* PostgreSQL's own session lock, for the native lock scenario ($1 a
 * bigint key). */
static const char PG_NATIVE_LOCK[] = "SELECT pg_advisory_lock($1)";
static const char PG_NATIVE_UNLOCK[] = "SELECT pg_advisory_unlock($1)";

/* A URL with pooler=transaction (issue 14): the library sends unnamed
 * statements there, and so do the floor and the by-hand statements, each
 * Parse + Bind + Execute + Sync in one round trip; the session's native
 * lock cannot work through a transaction pooler and is left out. */
int g_pg_unnamed;

static const char PG_FLOOR[] = "SELECT 1";
static const char *const PG_FLOOR_P = PG_FLOOR;
static const char *const PG_RELEASE_PLAIN_P = PG_RELEASE_PLAIN;
static const char *const PG_NATIVE_LOCK_P = PG_NATIVE_LOCK;
static const char *const PG_NATIVE_UNLOCK_P = PG_NATIVE_UNLOCK;
static const struct { const char *name; const char *const *sql; } pg_stmts[] = {
    { "bench_floor", &PG_FLOOR_P },
    { "bench_acquire", &g_sql_acquire },
    { "bench_release", &g_sql_release },
    { "bench_release_plain", &PG_RELEASE_PLAIN_P },
    { "bench_native_lock", &PG_NATIVE_LOCK_P },
    { "bench_native_unlock", &PG_NATIVE_UNLOCK_P },
};

static PGresult *pg_run(worker *w, const char *stmt, int n,
                        const char *const *vals, ExecStatusType want)
{
    PGconn *pg = w->native;
    PGresult *r = NULL;
    size_t i;

    if (g_pg_unnamed) {
        for (i = 0; i < sizeof pg_stmts / sizeof pg_stmts[0]; i++)
            if (strcmp(pg_stmts[i].name, stmt) == 0)
                r = PQexecParams(pg, *pg_stmts[i].sql, n, NULL, vals, NULL,
                                 NULL, 0);
    } else {
        r = PQexecPrepared(pg, stmt, n, vals, NULL, NULL, 0);
    }

    if (r == NULL || PQresultStatus(r) != want) {
        wfail(w, "%s: %s", stmt, r != NULL ? PQresultErrorMessage(r)
                                           : PQerrorMessage(pg));
        PQclear(r);
        return NULL;
    }
    return r;
}

static int pg_prepare(worker *w, const char *stmt, const char *sql)
{
    PGresult *r = PQprepare(w->native, stmt, sql, 0, NULL);
    int ok = r != NULL && PQresultStatus(r) == PGRES_COMMAND_OK;

    if (!ok)
        wfail(w, "prepare %s: %s", stmt, r != NULL ? PQresultErrorMessage(r)
                                                   : PQerrorMessage(w->native));
    PQclear(r);
    return ok ? 0 : -1;
}

static int pg_setup(worker *w)
{
    if (g_pg_unnamed)
        return 0;
    if (pg_prepare(w, "bench_floor", "SELECT 1") != 0 ||
        pg_prepare(w, "bench_acquire", g_sql_acquire) != 0 ||
        pg_prepare(w, "bench_release", g_sql_release) != 0 ||
        pg_prepare(w, "bench_release_plain", PG_RELEASE_PLAIN) != 0 ||
        pg_prepare(w, "bench_native_lock", PG_NATIVE_LOCK) != 0 ||
        pg_prepare(w, "bench_native_unlock", PG_NATIVE_UNLOCK) != 0)
        return -1;
    return 0;
}

static int pg_floor_pair(worker *w)
{
    int i;

    for (i = 0; i < 2; i++) {
        PGresult *r = pg_run(w, "bench_floor", 0, NULL, PGRES_TUPLES_OK);
        if (r == NULL)
            return -1;
        if (PQntuples(r) != 1) {
            PQclear(r);
            return wfail(w, "SELECT 1 returned no row");
        }
        PQclear(r);
    }
    return 0;
}

static int pg_hand_pair_with(worker *w, const char *release)
{
    char ttl[24], token[24];
    const char *vals[4];
    PGresult *r;

    if (new_owner(w) != 0)
        return -1;
    snprintf(ttl, sizeof ttl, "%lld", w->ttl);
    vals[0] = w->name;
    vals[1] = w->owner;
    vals[2] = w->holder;
    vals[3] = ttl;
    r = pg_run(w, "bench_acquire", 4, vals, PGRES_TUPLES_OK);
    if (r == NULL)
        return -1;
    if (PQntuples(r) != 1) {
        PQclear(r);
        return wfail(w, "acquire by hand of '%s' returned no token (busy)",
                     w->name);
    }
    w->token = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    snprintf(token, sizeof token, "%lld", w->token);
    vals[2] = token;
    /* The library's release also notifies (a channel of the same shape
     * as the core's); the plain DELETE does not. */
    vals[3] = "sqllock_0123456789abcdef";
    if (strcmp(release, "bench_release") == 0)
        r = pg_run(w, release, 4, vals, PGRES_TUPLES_OK);
    else
        r = pg_run(w, release, 3, vals, PGRES_COMMAND_OK);
    if (r == NULL)
        return -1;
    if (strcmp(PQcmdTuples(r), "1") != 0) {
        PQclear(r);
        return wfail(w, "release by hand of '%s' deleted no row", w->name);
    }
    PQclear(r);
    return 0;
}

int pg_hand_pair(worker *w)
{
    return pg_hand_pair_with(w, "bench_release");
}

int pg_hand_pair_plain(worker *w)
{
    return pg_hand_pair_with(w, "bench_release_plain");
}

/* The native lock: pg_advisory_lock() returns void, so its check is the
 * one row every successful call returns; pg_advisory_unlock() must return
 * true (false: this session did not hold the key). */
static int pg_native_pair(worker *w)
{
    const char *vals[1] = { w->native_key };
    PGresult *r = pg_run(w, "bench_native_lock", 1, vals, PGRES_TUPLES_OK);

    if (r == NULL)
        return -1;
    if (PQntuples(r) != 1 || PQnfields(r) != 1) {
        wfail(w, "pg_advisory_lock(%s) returned %d rows of %d columns",
              w->native_key, PQntuples(r), PQnfields(r));
        PQclear(r);
        return -1;
    }
    PQclear(r);
    r = pg_run(w, "bench_native_unlock", 1, vals, PGRES_TUPLES_OK);
    if (r == NULL)
        return -1;
    if (PQntuples(r) != 1 || PQgetisnull(r, 0, 0) ||
        strcmp(PQgetvalue(r, 0, 0), "t") != 0) {
        wfail(w, "pg_advisory_unlock(%s) returned %s, not true",
              w->native_key, PQntuples(r) != 1 ? "no row"
              : PQgetisnull(r, 0, 0) ? "NULL" : PQgetvalue(r, 0, 0));
        PQclear(r);
        return -1;
    }
    PQclear(r);
    return 0;
}

/* FOR UPDATE: reads qty of w->fu_id into w->fu_qty, then writes
 * fu_qty - 1 there. */
static int pg_fu_rmw(worker *w)
{
    char read[160], write[160], id[24], qty[24];
    const char *vals[2];
    PGresult *r;

    if (!w->fu_ready) {
        fu_sql(read, write, sizeof read, 1);
        if (pg_prepare(w, "bench_fu_read", read) != 0 ||
            pg_prepare(w, "bench_fu_write", write) != 0)
            return -1;
        w->fu_ready = 1;
    }
    snprintf(id, sizeof id, "%lld", w->fu_id);
    vals[0] = id;
    r = pg_run(w, "bench_fu_read", 1, vals, PGRES_TUPLES_OK);
    if (r == NULL)
        return -1;
    if (PQntuples(r) != 1) {
        PQclear(r);
        return wfail(w, "row %lld: no such row", w->fu_id);
    }
    w->fu_qty = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    snprintf(qty, sizeof qty, "%lld", w->fu_qty - 1);
    vals[0] = qty;
    vals[1] = id;
    r = pg_run(w, "bench_fu_write", 2, vals, PGRES_COMMAND_OK);
    if (r == NULL)
        return -1;
    PQclear(r);
    return 0;
}

static void pg_teardown(worker *w)
{
    /* Prepared statements end with the session. */
}

static void pg_describe(worker *w, char *buf, size_t n)
{
    const char *v = PQparameterStatus(w->native, "server_version");
    const char *host = PQhost(w->native);
    size_t len = v != NULL ? strcspn(v, " ") : 0;

    snprintf(buf, n, "PostgreSQL %.*s, %s:%s%s", (int)len,
             v != NULL ? v : "?",
             host != NULL && host[0] != '\0' ? host : "local socket",
             PQport(w->native), g_pg_unnamed ? ", unnamed statements" : "");
}

/* Deletes what the bench may have left; returns the rows deleted. */
static long pg_cleanup(worker *w, const char *pattern)
{
    const char *vals[1] = { pattern };
    PGresult *r = PQexecParams(w->native, "DELETE FROM sqllock_lease WHERE "
                               "name LIKE $1", 1, NULL, vals, NULL, NULL, 0);
    long n;

    if (r == NULL || PQresultStatus(r) != PGRES_COMMAND_OK)
        bu_die("cleanup: %s", r != NULL ? PQresultErrorMessage(r)
                                     : PQerrorMessage(w->native));
    n = strtol(PQcmdTuples(r), NULL, 10);
    PQclear(r);
    return n;
}

/* Runs one statement without parameters (the --optimistic table's DDL). */
static void pg_exec_sql(void *native, const char *sql)
{
    PGresult *r = PQexec(native, sql);

    if (r == NULL || PQresultStatus(r) != PGRES_COMMAND_OK)
        bu_die("%.60s...: %s", sql, r != NULL ? PQresultErrorMessage(r)
                                           : PQerrorMessage(native));
    PQclear(r);
}

/* The server's WAL syncs so far. Every client first reports its pending
 * statistics (they are otherwise sent at most once a second). */
long long pg_wal_syncs(worker *ws, int n)
{
    PGresult *r;
    long long syncs;
    int i;

    for (i = 0; i < n; i++) {
        r = PQexec(ws[i].native, "SELECT pg_stat_force_next_flush()");
        if (r == NULL || PQresultStatus(r) != PGRES_TUPLES_OK)
            bu_die("pg_stat_force_next_flush: %s",
                r != NULL ? PQresultErrorMessage(r)
                          : PQerrorMessage(ws[i].native));
        PQclear(r);
    }
    r = PQexec(ws[0].native, "SELECT wal_sync FROM pg_stat_wal");
    if (r == NULL || PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
        bu_die("reading pg_stat_wal: %s", r != NULL ? PQresultErrorMessage(r)
                                                 : PQerrorMessage(ws[0].native));
    syncs = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return syncs;
}

const bench_driver postgres_part = {
    .name = "postgres", .floor_label = "floor: SELECT 1 x2",
    .setup = pg_setup, .floor_pair = pg_floor_pair,
    .hand_pair = pg_hand_pair, .teardown = pg_teardown,
    .describe = pg_describe, .cleanup = pg_cleanup,
    .uses = {
        { SQLLOCK_SQL_LEASE_ACQUIRE, "1234", &g_sql_acquire },
        { SQLLOCK_SQL_LEASE_RELEASE, "1234", &g_sql_release },
        { 0, NULL, NULL } },
    .exec = pg_exec_sql, .fu_rmw = pg_fu_rmw,
    .native_pair = pg_native_pair,
    .native_label = "native lock: pg_advisory_lock",
    .native_note = "native lock: SELECT pg_advisory_lock($1) + SELECT "
        "pg_advisory_unlock($1), prepared,\n  a bigint key per client, "
        "on the same connection",
};
#endif
