/*
 * drivers.h -- what the parts of bench_drivers share: the client (one
 * thread, one connection, bench/bench_drivers.c says what it measures),
 * the driver part that sends the library's SQL by hand through each
 * database's client library, the rows of a table and the run's
 * configuration. The helpers are in drivers/common.c, the driver parts
 * in drivers/postgres.c, mysql.c and sqlite.c, and the runs main()
 * chooses from in drivers/lease.c (the default, --fast),
 * drivers/release.c (--release-compare) and drivers/optimistic.c
 * (--optimistic).
 */
#ifndef SQLLOCK_BENCH_DRIVERS_H
#define SQLLOCK_BENCH_DRIVERS_H

#include <stddef.h>
#include <stdio.h>

#include <sqllock.h>
#include <sqllock_driver.h>

#include "bench_util.h"

#if defined(SQLLOCK_HAVE_SQLITE)
#include <sqlite3.h>
#endif
#if defined(SQLLOCK_HAVE_POSTGRES)
#include <libpq-fe.h>
#endif
#if defined(SQLLOCK_HAVE_MYSQL)
#include <mysql.h>

/* MariaDB Connector/C and libmysqlclient before 8.0 spell the flag type
 * my_bool; MySQL 8.0's client uses bool (as drivers/mysql/mysql.c). */
#if defined(MARIADB_PACKAGE_VERSION) || !defined(LIBMYSQL_VERSION_ID) || \
    LIBMYSQL_VERSION_ID < 80000
typedef my_bool bench_flag;
#else
#include <stdbool.h>
typedef bool bench_flag;
#endif
#endif

/* The library's statements that the by-hand scenario sends, read from the
 * driver's dialect by load_sql() (drivers/common.c). */
extern const char *g_sql_acquire;     /* 1 name, 2 owner, 3 holder, 4 ttl */
extern const char *g_sql_release;     /* 1 name, 2 owner, 3 token [, 4] */
extern const char *g_sql_token_next;  /* MySQL: 1 name */
extern const char *g_sql_set_token;   /* MySQL: 3 token, 1 name, 2 owner */

/* ------------------------------------------------------------------------ */
/* Clients                                                                  */
/* ------------------------------------------------------------------------ */

/* --optimistic: the application table (bench_inv_<pid>) while it exists. */
extern char g_inv_table[64];       /* drivers/common.c */

#define TTL_MS 30000
#define WARMUP_PAIRS 10
#define MAX_CLIENTS 64

typedef struct worker worker;
typedef int (*pair_fn)(worker *w);

struct worker {
    bu_client bc;                    /* first: bu_point_run()'s part */
    sqllock_db *db;
    sqllock_lease *lease;
    void *native;                    /* the handle's own connection */
    char name[96];
    char holder[64];
    char owner[SQLLOCK_OWNER_LEN + 1];
    long long token;
    long long ttl;
    char native_key[24];             /* PostgreSQL's advisory key, as text */
    /* --optimistic: the application table, how many of its rows the
     * transactions pick from (1: all on id 1), the generator that picks
     * them, and the conflicts and busy timeouts met in the measured part
     * of a run. */
    sqllock_table inv;
    int nrows;
    unsigned long long rng;
    long conflicts;
    long busy;
    /* --optimistic FOR UPDATE: reads qty of row fu_id and writes fu_qty
     * there, by hand on the transaction's connection (the driver part's
     * *_fu_rmw(), its statements prepared on first use). */
    int (*fu_rmw)(worker *w);
    long long fu_id, fu_qty;
    int fu_ready;
    /* The driver part's set-up, run again when the library has opened
     * the handle's connection anew (a row-lock transaction whose lock
     * wait is longer than the connection was opened for, core/db.c
     * grow_lock_wait()): the statements prepared by hand went with the
     * old session. */
    int (*setup)(worker *w);
    void (*teardown)(worker *w);
    /* The pair function of the point that runs. */
    pair_fn pair;
#if defined(SQLLOCK_HAVE_MYSQL)
    MYSQL_STMT *my_floor, *my_acq, *my_tok, *my_set, *my_rel;
    MYSQL_STMT *my_fu_read, *my_fu_write;
    MYSQL_STMT *my_nlock, *my_nunlock;
    MYSQL_BIND my_floor_res[1], my_acq_p[4], my_tok_p[1], my_set_p[3],
               my_rel_p[3], my_fu_read_p[1], my_fu_read_res[1],
               my_fu_write_p[2], my_native_p[1], my_native_res[1];
    long long my_floor_val;
    long long my_native_val;         /* GET_LOCK's or RELEASE_LOCK's result */
    bench_flag my_native_null;
    unsigned long name_len, owner_len, holder_len;
#endif
#if defined(SQLLOCK_HAVE_SQLITE)
    sqlite3_stmt *sq_floor, *sq_acq, *sq_rel;
    sqlite3_stmt *sq_fu_read, *sq_fu_write;
#endif
};

/* The reason of a failed pair, into the client's bu_client; -1 (as
 * bench_util's bu_fail(), which also checks the format). */
#define wfail(w, ...) bu_fail(&(w)->bc, __VA_ARGS__)

/* ------------------------------------------------------------------------ */
/* Drivers                                                                  */
/* ------------------------------------------------------------------------ */

/* One statement of the library sent by hand: its dialect entry, the
 * placeholder order this program binds it in (sqllock_sql.args), and
 * where bench_url() puts its text. */
typedef struct sql_use {
    sqllock_sql_id id;
    const char *args;
    const char **text;
} sql_use;

typedef struct bench_driver {
    const char *name;                /* as sqllock_db_driver() says */
    const char *floor_label;
    const char *floor_note;
    int (*setup)(worker *w);
    int (*floor_pair)(worker *w);
    int (*hand_pair)(worker *w);
    void (*teardown)(worker *w);
    void (*describe)(worker *w, char *buf, size_t n);
    long (*cleanup)(worker *w, const char *pattern);
    sql_use uses[4];
    void (*exec)(void *native, const char *sql);
    int (*fu_rmw)(worker *w);
    /* The database's own session lock, or NULL (then native_note says
     * why there is none). */
    int (*native_pair)(worker *w);
    const char *native_label;
    const char *native_note;
} bench_driver;

/* The driver parts, one a file; find_driver() picks one by name. */
#if defined(SQLLOCK_HAVE_POSTGRES)
extern const bench_driver postgres_part;
/* A URL with pooler=transaction: unnamed statements (bench_url() sets
 * it). */
extern int g_pg_unnamed;
/* --release-compare's by-hand pairs, and the server's WAL syncs. */
int pg_hand_pair(worker *w);
int pg_hand_pair_plain(worker *w);
long long pg_wal_syncs(worker *ws, int n);
#endif
#if defined(SQLLOCK_HAVE_MYSQL)
extern const bench_driver mysql_part;
#endif
#if defined(SQLLOCK_HAVE_SQLITE)
extern const bench_driver sqlite_part;
#endif

/* ------------------------------------------------------------------------ */
/* Runs                                                                     */
/* ------------------------------------------------------------------------ */

typedef struct result {
    double rate, p50, p99, max;
    double cpu_us;                   /* this process's CPU per pair */
    double conflicts;                /* --optimistic: conflicts per pair */
    long busy;                       /* --optimistic: SQLLOCK_EDBBUSY */
    long pairs;
} result;

#define MAX_REPS 15

/* One row of a table: every repetition, and the medians. */
typedef struct row {
    const char *label;
    int clients;
    int nreps;
    result reps[MAX_REPS];
    result med;
    double wal_per_pair;             /* --release-compare only */
    double wal[MAX_REPS];
} row;

typedef struct config {
    double secs;
    int reps;
    int clients[8];
    int nclients;
    int max_clients;
    const char *csv_path;
    FILE *csv;
    int release_compare;
    int optimistic;
    int only;                        /* 0 all, else 1 + scenario index */
    const char *results_path;        /* --results: the common CSV */
    FILE *results;
} config;

/* Lease flags for the library's scenario (--no-wakeup, --fast). */
extern unsigned g_lease_flags;       /* drivers/common.c */

/* The scenarios of the default run, in table order; the native lock only
 * where the database has one. */
enum { SC_FLOOR, SC_HAND, SC_LIB, SC_NATIVE, SC_COUNT };

/* --optimistic's application table has INV_ROWS rows (the usage says
 * so too). */
#define INV_ROWS 1000

/* drivers/common.c */
int new_owner(worker *w);
int lib_pair(worker *w);
const bench_driver *find_driver(const char *name);
void load_sql(const bench_driver *bd);
void run_point(worker *ws, int n, pair_fn fn, double secs, result *out);
void finish_row(row *r);
void open_workers(const bench_driver *bd, const char *url, worker *ws,
                  int n);
void close_workers(const bench_driver *bd, worker *ws, int n);
void res_put(const config *cfg, const char *suite, const char *driver,
             const char *scenario, const row *r, int rows,
             const char *vs, double vs_rate, double value,
             const char *unit);
void csv_row(const config *cfg, const char *driver, const char *desc,
             const row *r, double vs_floor, double vs_hand);

/* drivers/sqlite.c, with or without SQLite */
void floor_setup(const config *cfg, const bench_driver *bd, sqllock_db *db);

/* drivers/common.c: the FOR UPDATE statements of --optimistic */
void fu_sql(char *read, char *write, size_t n, int dollar);

/* The runs: the lease scenarios (drivers/lease.c), the release commit
 * (drivers/release.c), row locks and optimistic updates
 * (drivers/optimistic.c). */
void bench_url(const config *cfg, const char *url);
void release_compare(const config *cfg, const char *url);
void bench_optimistic(const config *cfg, const char *url);

#endif
