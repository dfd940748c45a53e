/*
 * drivers/optimistic.c -- bench_drivers --optimistic: row locks (FOR
 * UPDATE), optimistic compare-and-set and the conditional UPDATE on an
 * application table bench_inv_<pid> that it creates, checks and drops;
 * fu_sql() gives the driver parts the FOR UPDATE statements on it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "drivers/drivers.h"

/* --optimistic: decrements of qty on the application table
 * bench_inv_<pid>(id, qty, version), through the library. */

/* INV_ROWS, the rows of the table, is in drivers.h: the usage says it. */
#define INV_QTY 1000000000000LL     /* never runs out */
#define CAS_MAX_ATTEMPTS 100000     /* a livelock guard, never reached */
#define OPT_POINTS 9

static const char *const inv_columns[1] = { "qty" };

/* The id of the next transaction: 1, or uniform in 1..nrows
 * (xorshift64*, one generator per client). */
static int64_t pick_id(worker *w)
{
    unsigned long long x = w->rng;

    if (w->nrows <= 1)
        return 1;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    w->rng = x;
    return 1 + (int64_t)((x * 0x2545F4914F6CDD1DULL >> 33) %
                         (unsigned long long)w->nrows);
}

/* Optimistic CAS: read qty and version, write qty - 1 if the version has
 * not moved (and qty >= 1); on SQLLOCK_CONFLICT read again, at once. One
 * completed decrement is one transaction; its latency includes the
 * retries. */
static int cas_tx(worker *w)
{
    sqllock_cell key = SQLLOCK_NUMBER(pick_id(w));
    sqllock_cell sub = { "qty", SQLLOCK_OP_SUB, NULL, 1 };
    sqllock_cell enough = { "qty", SQLLOCK_OP_GE, NULL, 1 };
    int64_t qty, version;
    int attempt, rc;

    for (attempt = 0; attempt < CAS_MAX_ATTEMPTS; attempt++) {
        rc = sqllock_table_get(w->db, &w->inv, &key, inv_columns, 1, &qty,
                               &version);
        if (rc == SQLLOCK_EDBBUSY) {
            w->busy++;
            continue;
        }
        if (rc != SQLLOCK_OK)
            return wfail(w, "sqllock_table_get(id %lld): %s: %s",
                         (long long)key.number, sqllock_errname(rc),
                         sqllock_errmsg(w->db));
        if (qty < 1)
            return wfail(w, "row %lld is sold out", (long long)key.number);
        rc = sqllock_table_cas(w->db, &w->inv, &key, version, &sub, 1,
                               &enough, 1, NULL);
        if (rc == SQLLOCK_OK)
            return 0;
        if (rc == SQLLOCK_EDBBUSY) {
            w->busy++;
            continue;
        }
        if (rc != SQLLOCK_CONFLICT)
            return wfail(w, "sqllock_table_cas(id %lld): %s: %s",
                         (long long)key.number, sqllock_errname(rc),
                         sqllock_errmsg(w->db));
        w->conflicts++;
    }
    return wfail(w, "row %lld: %d conflicts in a row", (long long)key.number,
                 CAS_MAX_ATTEMPTS);
}

/* FOR UPDATE: begin, lock the row (waiting), read qty and write qty - 1
 * on the transaction's connection, commit. A retryable status (SQLite's
 * write lock busy past the timeout, a lock wait timed out, a deadlock)
 * rolls back and starts again at once; it is counted with the busy
 * timeouts. One committed decrement is one transaction. */
static int forupdate_tx(worker *w)
{
    sqllock_cell key = SQLLOCK_NUMBER(pick_id(w));
    sqllock_txn *txn = NULL;
    int attempt, rc;
    const char *what = "sqllock_txn_begin";

    for (attempt = 0; attempt < CAS_MAX_ATTEMPTS; attempt++) {
        what = "sqllock_txn_begin";
        rc = sqllock_txn_begin(w->db, NULL, &txn);
        if (rc == SQLLOCK_OK) {
            what = "sqllock_txn_lock_rows";
            rc = sqllock_txn_lock_rows(txn, &w->inv, &key, 1,
                                       SQLLOCK_LOCK_WAIT, NULL);
        }
        if (rc == SQLLOCK_OK) {
            /* The transaction's connection, as sqllock.h says to use it:
             * it need not be the one sqllock_db_native() gave before. */
            void *conn = sqllock_txn_native(txn);
            if (conn == NULL) {
                sqllock_txn_free(txn);
                return wfail(w, "sqllock_txn_native: %s",
                             sqllock_errmsg(w->db));
            }
            if (conn != w->native) {
                /* The old statements go first (on MySQL they are
                 * detached from the closed connection; closing frees
                 * them). */
                w->teardown(w);
                w->native = conn;
                w->fu_ready = 0;
                if (w->setup(w) != 0) {
                    sqllock_txn_free(txn);
                    return -1;
                }
            }
            w->fu_id = key.number;
            if (w->fu_rmw(w) != 0) {
                sqllock_txn_free(txn);
                return -1;
            }
            what = "sqllock_txn_commit";
            rc = sqllock_txn_commit(txn);
        }
        if (rc != SQLLOCK_OK && sqllock_retryable(rc)) {
            sqllock_txn_free(txn);
            txn = NULL;
            w->busy++;
            continue;
        }
        break;
    }
    if (rc != SQLLOCK_OK)
        wfail(w, "%s(id %lld): %s: %s", what, (long long)key.number,
              sqllock_errname(rc), sqllock_errmsg(w->db));
    sqllock_txn_free(txn);
    return rc == SQLLOCK_OK ? 0 : -1;
}

/* FOR UPDATE through the library alone, the write committed with it:
 * begin, lock the row (waiting; its BEGIN goes with it where the driver
 * can), read qty with sqllock_table_get() in the transaction, and write
 * qty - 1 with sqllock_txn_commit_exec() (the UPDATE and COMMIT in one
 * round trip where the driver can). Retried as forupdate_tx(). */
static int forupdate_commit_tx(worker *w)
{
    sqllock_cell key = SQLLOCK_NUMBER(pick_id(w));
    sqllock_txn *txn = NULL;
    int attempt, rc;
    const char *what = "sqllock_txn_begin";
    char read[160], write[200];
    int64_t qty = 0, version = 0, affected = 0;

    fu_sql(read, write, sizeof read,
           strcmp(sqllock_db_driver(w->db), "postgres") == 0);
    for (attempt = 0; attempt < CAS_MAX_ATTEMPTS; attempt++) {
        what = "sqllock_txn_begin";
        rc = sqllock_txn_begin(w->db, NULL, &txn);
        if (rc == SQLLOCK_OK) {
            what = "sqllock_txn_lock_rows";
            rc = sqllock_txn_lock_rows(txn, &w->inv, &key, 1,
                                       SQLLOCK_LOCK_WAIT, NULL);
        }
        if (rc == SQLLOCK_OK) {
            what = "sqllock_table_get";
            rc = sqllock_table_get(w->db, &w->inv, &key, inv_columns, 1,
                                   &qty, &version);
        }
        if (rc == SQLLOCK_OK) {
            sqllock_cell a[2];
            a[0] = (sqllock_cell)SQLLOCK_NUMBER(qty - 1);
            a[1] = key;
            what = "sqllock_txn_commit_exec";
            rc = sqllock_txn_commit_exec(txn, write, a, 2, &affected);
            if (rc == SQLLOCK_OK && affected != 1) {
                sqllock_txn_free(txn);
                return wfail(w, "row %lld: the UPDATE changed %lld rows",
                             (long long)key.number, (long long)affected);
            }
        }
        if (rc != SQLLOCK_OK && sqllock_retryable(rc)) {
            sqllock_txn_free(txn);
            txn = NULL;
            w->busy++;
            continue;
        }
        break;
    }
    if (rc != SQLLOCK_OK)
        wfail(w, "%s(id %lld): %s: %s", what, (long long)key.number,
              sqllock_errname(rc), sqllock_errmsg(w->db));
    sqllock_txn_free(txn);
    return rc == SQLLOCK_OK ? 0 : -1;
}

/* Conditional UPDATE: qty = qty - 1 WHERE qty >= 1, one statement.
 * Both scenarios retry SQLLOCK_EDBBUSY (SQLite's busy timeout, which its
 * unfair busy handler reaches under 8 writers) and count it. */
static int update_tx(worker *w)
{
    sqllock_cell key = SQLLOCK_NUMBER(pick_id(w));
    sqllock_cell sub = { "qty", SQLLOCK_OP_SUB, NULL, 1 };
    sqllock_cell enough = { "qty", SQLLOCK_OP_GE, NULL, 1 };
    int attempt, rc = SQLLOCK_EDBBUSY;

    for (attempt = 0; attempt < CAS_MAX_ATTEMPTS && rc == SQLLOCK_EDBBUSY;
         attempt++) {
        rc = sqllock_table_update(w->db, &w->inv, &key, &sub, 1, &enough, 1);
        if (rc == SQLLOCK_EDBBUSY)
            w->busy++;
    }
    if (rc != SQLLOCK_OK)
        return wfail(w, "sqllock_table_update(id %lld): %s: %s",
                     (long long)key.number, sqllock_errname(rc),
                     sqllock_errmsg(w->db));
    return 0;
}

/* Creates bench_inv_<pid> with INV_ROWS rows, on the handle's own
 * connection. */
static void inv_create(const bench_driver *bd, sqllock_db *db)
{
    size_t cap = 64 + (size_t)INV_ROWS * 48, len;
    char *sql = malloc(cap);
    int i;

    if (sql == NULL)
        bu_die("out of memory");
    snprintf(g_inv_table, sizeof g_inv_table, "bench_inv_%ld",
             (long)getpid());
    snprintf(sql, cap, "DROP TABLE IF EXISTS %s", g_inv_table);
    bd->exec(sqllock_db_native(db), sql);
    snprintf(sql, cap, "CREATE TABLE %s (id BIGINT PRIMARY KEY, "
             "qty BIGINT NOT NULL, version BIGINT NOT NULL)", g_inv_table);
    bd->exec(sqllock_db_native(db), sql);
    len = (size_t)snprintf(sql, cap, "INSERT INTO %s (id, qty, version) "
                           "VALUES ", g_inv_table);
    for (i = 1; i <= INV_ROWS; i++)
        len += (size_t)snprintf(sql + len, cap - len, "%s(%d, %lld, 1)",
                                i > 1 ? ", " : "", i, INV_QTY);
    bd->exec(sqllock_db_native(db), sql);
    free(sql);
}

/* Every write took 1 from qty and added 1 to version: checks that
 * qty + version is still INV_QTY + 1 on every row, then drops the table.
 * Returns the decrements counted on the rows. */
static long long inv_check_drop(const bench_driver *bd, sqllock_db *db)
{
    sqllock_table t = { g_inv_table, "id", "version" };
    long long total = 0;
    char sql[96];
    int i, rc;

    for (i = 1; i <= INV_ROWS; i++) {
        sqllock_cell key = SQLLOCK_NUMBER(i);
        int64_t qty, version;
        rc = sqllock_table_get(db, &t, &key, inv_columns, 1, &qty, &version);
        if (rc != SQLLOCK_OK)
            bu_die("reading back row %d: %s", i, sqllock_errmsg(db));
        if (qty + version != INV_QTY + 1)
            bu_die("row %d: qty %lld, version %lld: a decrement was lost or "
                "doubled", i, (long long)qty, (long long)version);
        total += (long long)(version - 1);
    }
    snprintf(sql, sizeof sql, "DROP TABLE %s", g_inv_table);
    bd->exec(sqllock_db_native(db), sql);
    g_inv_table[0] = '\0';
    return total;
}

static void opt_print_row(const row *r, const char *rows, double vs_floor,
                          int cas)
{
    printf("%-28s %6s %7d %9.0f %9.0f %9.0f", r->label, rows, r->clients,
           r->med.rate, r->med.p50, r->med.p99);
    if (vs_floor > 0)
        printf(" %9.2f", vs_floor);
    else
        printf(" %9s", "");
    if (cas)
        printf(" %12.3f", r->med.conflicts);
    else
        printf(" %12s", "");
    printf(" %11.1f\n", r->med.cpu_us);
}

static void opt_csv_row(const config *cfg, const char *driver,
                        const char *desc, const row *r, int rows,
                        double vs_floor, int cas)
{
    int i;

    if (cfg->csv == NULL)
        return;
    fprintf(cfg->csv, "%s,\"%s\",\"%s\",", driver, desc, r->label);
    if (rows > 0)
        fprintf(cfg->csv, "%d", rows);
    fprintf(cfg->csv, ",%d,%g,%d,%.1f,%.1f,%.1f,%.1f,%.1f,%.3f,",
            r->clients, cfg->secs, r->nreps, r->med.rate, r->med.p50,
            r->med.p99, r->med.max, r->med.cpu_us, vs_floor);
    if (cas)
        fprintf(cfg->csv, "%.4f", r->med.conflicts);
    for (i = 0; i < 3; i++) {
        fputc(',', cfg->csv);
        if (i < r->nreps)
            fprintf(cfg->csv, "%.1f", r->reps[i].rate);
    }
    fputc('\n', cfg->csv);
}

/* The floor, FOR UPDATE, CAS and conditional UPDATE, each on one hot row
 * and on INV_ROWS rows, at every client count: one table. */
void bench_optimistic(const config *cfg, const char *url)
{
    /* The points of one client count, in table order; kind 0 floor,
     * 1 CAS, 2 UPDATE, 3 FOR UPDATE, 4 FOR UPDATE committed with the
     * write. */
    static const struct { int kind, nrows; } pts[OPT_POINTS] = {
        { 0, 0 }, { 3, 1 }, { 4, 1 }, { 1, 1 }, { 2, 1 },
        { 3, INV_ROWS }, { 4, INV_ROWS }, { 1, INV_ROWS }, { 2, INV_ROWS },
    };
    const bench_driver *bd;
    worker *ws;
    sqllock_db *db;
    char desc[200], pattern[64], rows_txt[16];
    row rows[8][OPT_POINTS];
    int c, s, rep, rc, i;
    long long counted;
    long busy = 0;

    db = bu_open(url);
    rc = sqllock_init(db);
    if (rc != SQLLOCK_OK)
        bu_die("sqllock_init on %s: %s", url, sqllock_errmsg(db));
    bd = find_driver(sqllock_db_driver(db));
    if (bd == NULL)
        bu_die("%s: the bench has no '%s' part", url, sqllock_db_driver(db));
    load_sql(bd);
    floor_setup(cfg, bd, db);
    inv_create(bd, db);
    ws = calloc((size_t)cfg->max_clients, sizeof *ws);
    if (ws == NULL)
        bu_die("out of memory");
    for (c = 0; c < cfg->nclients; c++) {
        pair_fn fns[5];
        int n = cfg->clients[c];

        fns[0] = bd->floor_pair;
        fns[1] = cas_tx;
        fns[2] = update_tx;
        fns[3] = forupdate_tx;
        fns[4] = forupdate_commit_tx;
        open_workers(bd, url, ws, n);
        for (i = 0; i < n; i++) {
            ws[i].fu_rmw = bd->fu_rmw;
            ws[i].inv.table = g_inv_table;
            ws[i].inv.key_column = "id";
            ws[i].inv.version_column = "version";
            ws[i].rng = (0x9E3779B97F4A7C15ULL * (unsigned long long)
                         (i + 1)) ^ ((unsigned long long)getpid() << 20) ^ 1;
        }
        if (c == 0)
            bd->describe(&ws[0], desc, sizeof desc);
        for (s = 0; s < OPT_POINTS; s++) {
            static const char *const labels[5] = {
                NULL, "CAS get+cas (retried)", "conditional UPDATE",
                "FOR UPDATE lock+read+write",
                "FOR UPDATE, commit_exec" };
            rows[c][s].label = pts[s].kind == 0 ? bd->floor_label
                                                : labels[pts[s].kind];
            rows[c][s].clients = n;
            rows[c][s].nreps = cfg->reps;
            memset(rows[c][s].wal, 0, sizeof rows[c][s].wal);
            memset(rows[c][s].reps, 0, sizeof rows[c][s].reps);
        }
        for (rep = 0; rep < cfg->reps; rep++) {
            for (s = 0; s < OPT_POINTS; s++) {
                /* A rotating order, so no scenario always runs first. */
                int k = (s + rep) % OPT_POINTS;
                for (i = 0; i < n; i++)
                    ws[i].nrows = pts[k].nrows;
                run_point(ws, n, fns[pts[k].kind], cfg->secs,
                          &rows[c][k].reps[rep]);
                busy += rows[c][k].reps[rep].busy;
                fprintf(stderr, "  %s %d clients, %4d rows, run %d: %-26s "
                        "%8.0f tx/s (%ld tx, %.3f conflicts/tx, slowest "
                        "%.0f ms)\n", bd->name, n, pts[k].nrows, rep + 1,
                        rows[c][k].label, rows[c][k].reps[rep].rate,
                        rows[c][k].reps[rep].pairs,
                        rows[c][k].reps[rep].conflicts,
                        rows[c][k].reps[rep].max / 1000);
            }
        }
        for (s = 0; s < OPT_POINTS; s++)
            finish_row(&rows[c][s]);
        if (c == cfg->nclients - 1) {
            snprintf(pattern, sizeof pattern, "sqllock-bench:%ld:%%",
                     (long)getpid());
            bd->cleanup(&ws[0], pattern);
        }
        close_workers(bd, ws, n);
    }
    free(ws);
    counted = inv_check_drop(bd, db);
    sqllock_close(db);

    printf("\n%s row locks and optimistic updates (%s), %g s x %d, "
           "median\n", bd->name, desc, cfg->secs, cfg->reps);
    printf("%-28s %6s %7s %9s %9s %9s %9s %12s %11s\n", "scenario", "rows",
           "clients", "tx/s", "p50 us", "p99 us", "vs floor", "conflicts/tx",
           "client CPU");
    for (c = 0; c < cfg->nclients; c++) {
        double fl = rows[c][0].med.rate;
        for (s = 0; s < OPT_POINTS; s++) {
            const row *r = &rows[c][s];
            int cas = pts[s].kind == 1;
            if (pts[s].kind == 0)
                snprintf(rows_txt, sizeof rows_txt, "-");
            else if (pts[s].nrows == 1)
                snprintf(rows_txt, sizeof rows_txt, "1 hot");
            else
                snprintf(rows_txt, sizeof rows_txt, "%d", pts[s].nrows);
            opt_print_row(r, rows_txt, s == 0 ? 0 : r->med.rate / fl, cas);
            opt_csv_row(cfg, bd->name, desc, r, pts[s].nrows,
                        r->med.rate / fl, cas);
            /* The floor goes to both suites, so that each has its own. */
            if (pts[s].kind == 0) {
                res_put(cfg, "rowlock", bd->name, "floor", r, 0, NULL, 0,
                        r->med.cpu_us, "us CPU/tx");
                res_put(cfg, "optimistic", bd->name, "floor", r, 0, NULL, 0,
                        r->med.cpu_us, "us CPU/tx");
            } else {
                res_put(cfg, pts[s].kind >= 3 ? "rowlock" : "optimistic",
                        bd->name, r->label, r, pts[s].nrows, "floor", fl,
                        cas ? r->med.conflicts : r->med.cpu_us,
                        cas ? "conflicts/tx" : "us CPU/tx");
            }
        }
    }
    printf("  tx: one completed decrement of qty in "
           "bench_inv_<pid>(id, qty, version);\n"
           "  FOR UPDATE = sqllock_txn_begin() + sqllock_txn_lock_rows(WAIT) "
           "+ SELECT qty and\n"
           "  UPDATE qty on its connection, by hand + sqllock_txn_commit();\n"
           "  FOR UPDATE, commit_exec = sqllock_txn_begin() + "
           "sqllock_txn_lock_rows(WAIT) +\n"
           "  sqllock_table_get(qty) + sqllock_txn_commit_exec(UPDATE qty);\n"
           "  CAS = sqllock_table_get() + sqllock_table_cas(qty - 1 if "
           "qty >= 1), retried at once on\n"
           "  SQLLOCK_CONFLICT (no backoff), latency including the retries; "
           "UPDATE = one\n"
           "  sqllock_table_update(qty - 1 WHERE qty >= 1). Floor tx = one "
           "pair of the floor's\n"
           "  two statements, as in the lease tables. \"1 hot\": every "
           "client on id 1; %d: a\n"
           "  random id per tx.\n", INV_ROWS);
    printf("  conflicts/tx: SQLLOCK_CONFLICT results per completed "
           "decrement\n");
    printf("  check: qty + version unchanged on all %d rows (%lld "
           "decrements, warm-ups included)\n", INV_ROWS, counted);
    if (busy > 0)
        printf("  retryable statuses met and retried %ld times in all runs "
               "(SQLLOCK_EDBBUSY: the busy\n  timeout ran out; FOR UPDATE "
               "also ELOCKED, EDEADLOCK, ESERIALIZATION)\n", busy);
    if (bd->floor_note != NULL)
        printf("  %s\n", bd->floor_note);
    fflush(stdout);
}

