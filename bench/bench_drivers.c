/*
 * bench_drivers.c -- uncontended lease acquire+release on every driver,
 * against a floor, the library's own SQL sent by hand, and the database's
 * own session lock.
 *
 *   bench_drivers [--seconds N] [--quick] [--reps N] [--clients 1,8]
 *                 [--csv FILE] [--results FILE] [--no-wakeup] [--fast]
 *                 [--release-compare | --optimistic]
 *                 [--only SCENARIO] [--smoke] URL...
 *
 *   e.g. bench_drivers --results results.csv sqlite:///tmp/bench.db \
 *            postgres://user:pw@127.0.0.1:5432/db mysql://user:pw@host/db
 *
 * For each URL and each client count it measures acquire+release PAIRS per
 * second, and the p50 and p99 latency of one pair, in four scenarios
 * (three on SQLite):
 *
 *   floor     what any client pays for two statements on this kind of
 *             connection: two prepared `SELECT 1` (PostgreSQL, MySQL), or,
 *             on SQLite, where a SELECT commits nothing, two bare durable
 *             write transactions (an UPDATE of one row, twice, with the
 *             pragmas sqllock sets: WAL, synchronous=FULL);
 *   by hand   the exact statements the library runs, read at run time
 *             from the registered driver's dialect (bench_util.c bu_sql(),
 *             never a copy), prepared once with the database's own client
 *             API and run with the same parameters (a fresh random owner
 *             per acquire, then the release);
 *   sqllock   sqllock_lease_try_acquire() + sqllock_lease_release();
 *   native lock  the database's own session lock, sent by hand on the same
 *             connection, prepared once: PostgreSQL `SELECT
 *             pg_advisory_lock($1)` + `SELECT pg_advisory_unlock($1)` on a
 *             bigint key per client, MySQL/MariaDB `SELECT GET_LOCK(?, 10)`
 *             + `SELECT RELEASE_LOCK(?)` on a name per client. The unlock
 *             (PostgreSQL) or both calls (MySQL) must return true/1, or the
 *             run aborts. SQLite has no such lock: no row there.
 *
 * Every client is a thread with one connection of its own: the library's
 * handle, whose native connection (sqllock_db_native()) also runs the
 * floor, the by-hand statements and the native lock, so all scenarios share
 * the session settings the driver made. Each client locks its own name (or
 * key): there is no contention between clients (on SQLite the clients
 * still share the file's one write lock). Each point runs for a fixed time,
 * repeated (3 times by default, the scenarios in a rotating order), and the
 * table shows the median of each figure.
 *
 * --optimistic measures row locks and the optimistic versioned updates
 * instead, on an application table bench_inv_<pid>(id, qty, version) that
 * it creates (1000 rows, qty 10^12) and drops: decrements of qty as
 *
 *   FOR UPDATE  sqllock_txn_begin() + sqllock_txn_lock_rows(WAIT) on the
 *             row, then on the transaction's own connection (prepared
 *             once, by hand) SELECT qty and UPDATE qty = read - 1,
 *             version + 1, then sqllock_txn_commit(); a retryable status
 *             rolls back and starts again at once;
 *   CAS       sqllock_table_get() + sqllock_table_cas(qty - 1 if qty >= 1),
 *             retried at once on SQLLOCK_CONFLICT; one completed decrement
 *             is one transaction, and the table shows the conflicts per
 *             transaction;
 *   UPDATE    sqllock_table_update(qty - 1 WHERE qty >= 1), one statement;
 *
 * on one hot row (every client on id 1) and on a random id in 1..1000 per
 * transaction, against the same floor.
 *
 * --release-compare answers one question on PostgreSQL instead: how fast
 * is a pair, by hand, when the release commits asynchronously (the
 * library's set_config('synchronous_commit', 'off', true)) and when it is a
 * plain DELETE; with the server's WAL syncs per pair from pg_stat_wal.
 *
 * Beside each row, "client CPU" is this process's user+system CPU time per
 * pair (all clients' threads, warm-up included): what the client side
 * costs. It depends less on the server than the rates do, but a busy
 * machine still inflates it (cache misses, a slower scheduler).
 *
 * --csv FILE writes this program's own columns (one header, one layout per
 * mode). --results FILE appends the rows to FILE in the common format of
 * bench/README.md (the header only when FILE is empty or new), suite
 *
 *   uncontended  the default run: scenarios `floor`, `by hand`, `sqllock`
 *             (`sqllock, no wake-up` with --no-wakeup), `native lock`;
 *             value = client CPU per pair;
 *   fast      the same with --fast: the library's leases in fast mode
 *             (SQLLOCK_LEASE_FAST, PostgreSQL only), scenario `sqllock,
 *             fast mode`, beside the durable by-hand SQL and the floor;
 *   rowlock, optimistic  --optimistic: the FOR UPDATE rows, and the CAS
 *             and conditional UPDATE rows, each suite with the floor's row;
 *             rows = 1 (the hot row) or 1000; value = conflicts per
 *             transaction (CAS) or client CPU per transaction;
 *   release   --release-compare; value = WAL syncs per pair;
 *
 * with ratio = ops_per_s / that of `vs`: the floor (release: the plain
 * DELETE), measured in the same run with the same clients.
 *
 * This is a measuring program, not a test. Any failed call aborts the run
 * with a message. The lock names are "sqllock-bench:<pid>:<client>"; the
 * rows they leave (MySQL's per-name token rows, SQLite's floor table) are
 * removed at the end.
 *
 * The parts are in bench/drivers/ (drivers.h says what they share): the
 * helpers in common.c, each database's SQL by hand in postgres.c,
 * mysql.c and sqlite.c, and the runs in lease.c (the default, --fast),
 * release.c (--release-compare) and optimistic.c (--optimistic). Here:
 * the options, and which run each URL gets.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/drivers.h"

/* ------------------------------------------------------------------------ */
/* main                                                                     */
/* ------------------------------------------------------------------------ */

static void usage(void)
{
    fprintf(stderr,
        "usage: bench_drivers [--seconds N] [--quick] [--reps N] "
        "[--clients 1,8]\n"
        "                     [--csv FILE] [--results FILE] [--no-wakeup] "
        "[--fast]\n"
        "                     [--release-compare | --optimistic] "
        "[--only SCENARIO]\n"
        "                     [--smoke] URL...\n"
        "  --seconds N        length of each run (default 5)\n"
        "  --smoke            the default scenarios, --optimistic and (on "
        "PostgreSQL)\n"
        "                     --release-compare, each point once for 0.2 s "
        "with 1 and 2\n"
        "                     clients: a check that the program runs and that "
        "its SQL is\n"
        "                     the driver's (ctest's bench_smoke_drivers_*); "
        "the URLs default\n"
        "                     to the tests' (bench_util.h)\n"
        "  --quick            runs of 2 s\n"
        "  --reps N           repetitions of each run; the median is shown "
        "(default 3)\n"
        "  --clients LIST     client counts, each its own thread and "
        "connection (default 1,8)\n"
        "  --csv FILE         also write the rows as CSV, in this program's "
        "own columns\n"
        "  --results FILE     also append the rows to FILE in the common "
        "results format of\n"
        "                     bench/README.md (suite uncontended; rowlock "
        "and optimistic with\n"
        "                     --optimistic; release with "
        "--release-compare)\n"
        "  --release-compare  PostgreSQL only: async release commit vs plain "
        "DELETE, by hand\n"
        "  --optimistic       FOR UPDATE row locks, optimistic CAS and "
        "conditional UPDATE on an\n"
        "                     application table (hot row and %d rows) "
        "instead of the lease\n"
        "                     scenarios\n"
        "  --only SCENARIO    floor, hand, lib or native: run one scenario "
        "(to diagnose)\n"
        "  --no-wakeup        the library's leases with SQLLOCK_LEASE_NO_WAKEUP "
        "(no NOTIFY\n"
        "                     on PostgreSQL releases)\n"
        "  --fast             the library's leases in fast mode "
        "(SQLLOCK_LEASE_FAST,\n"
        "                     PostgreSQL only); results under suite "
        "\"fast\"\n"
        "Scenarios of the default run: the floor (two trivial statements), "
        "the library's\n"
        "lock SQL by hand, sqllock, and the native lock (pg_advisory_lock / "
        "GET_LOCK on the\n"
        "same connection; none on SQLite).\n"
        "URLs: sqlite:///path.db postgres://... mysql://...\n", INV_ROWS);
    exit(2);
}

static void parse_clients(config *cfg, const char *list)
{
    cfg->nclients = bu_parse_clients(list, cfg->clients, &cfg->max_clients);
}

/* bu_die()'s last word while --optimistic's table exists. */
static void inv_note(void)
{
    if (g_inv_table[0] != '\0')
        fprintf(stderr, "bench_drivers: table %s may be left behind: drop "
                "it by hand\n", g_inv_table);
}

/* --smoke: --optimistic, then the default scenarios, and on PostgreSQL
 * --release-compare, each point once for BU_SMOKE_SECS. --optimistic
 * first, as it runs on its own: after the default run it once found the
 * SQL that run had loaded, and passed while alone it failed. */
static void smoke_url(config *cfg, const char *url)
{
    cfg->optimistic = 1;
    bench_optimistic(cfg, url);
    cfg->optimistic = 0;
    bench_url(cfg, url);
    if (strncmp(url, "postgres", 8) == 0) {
        cfg->release_compare = 1;
        release_compare(cfg, url);
        cfg->release_compare = 0;
    }
}

int main(int argc, char **argv)
{
    config cfg;
    bu_args args = { 5, 3, MAX_REPS, NULL, 0, { NULL }, 0 };
    int i, took;

    memset(&cfg, 0, sizeof cfg);
    bu_init("bench_drivers", "run aborted (lease rows left behind expire "
            "after 30 s)");
    bu_on_die(inv_note);
    parse_clients(&cfg, "1,8");
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((took = bu_args_take(&args, argc, argv, &i)) != 0) {
            if (took < 0)
                usage();
        } else if (strcmp(a, "--clients") == 0 && i + 1 < argc) {
            parse_clients(&cfg, argv[++i]);
        } else if (strcmp(a, "--csv") == 0 && i + 1 < argc) {
            cfg.csv_path = argv[++i];
        } else if (strcmp(a, "--only") == 0 && i + 1 < argc) {
            /* For diagnosis: one scenario only; the ratios are then
             * meaningless. */
            const char *v = argv[++i];
            cfg.only = strcmp(v, "floor") == 0 ? SC_FLOOR + 1
                       : strcmp(v, "hand") == 0 ? SC_HAND + 1
                       : strcmp(v, "lib") == 0 ? SC_LIB + 1
                       : strcmp(v, "native") == 0 ? SC_NATIVE + 1 : -1;
            if (cfg.only < 0)
                usage();
        } else if (strcmp(a, "--release-compare") == 0) {
            cfg.release_compare = 1;
        } else if (strcmp(a, "--no-wakeup") == 0) {
            g_lease_flags |= SQLLOCK_LEASE_NO_WAKEUP;
        } else if (strcmp(a, "--fast") == 0) {
            g_lease_flags |= SQLLOCK_LEASE_FAST;
        } else if (strcmp(a, "--optimistic") == 0) {
            cfg.optimistic = 1;
        } else {
            usage();
        }
    }
    if (args.smoke) {
        parse_clients(&cfg, "1,2");
        if (cfg.optimistic || cfg.release_compare || cfg.only)
            usage();
    }
    bu_args_finish(&args, 1);
    cfg.secs = args.secs;
    cfg.reps = args.reps;
    cfg.results_path = args.results;
    if (args.nurls == 0 || (cfg.optimistic && (cfg.release_compare || cfg.only)))
        usage();
#if defined(SQLLOCK_HAVE_MYSQL)
    if (mysql_library_init(0, NULL, NULL) != 0)
        bu_die("mysql_library_init failed");
#endif
    if (cfg.csv_path != NULL) {
        cfg.csv = fopen(cfg.csv_path, "w");
        if (cfg.csv == NULL)
            bu_die("cannot write %s: %s", cfg.csv_path, strerror(errno));
    }
    if (cfg.results_path != NULL)
        cfg.results = bu_results_open(cfg.results_path);
    if (cfg.csv != NULL && cfg.optimistic)
        fprintf(cfg.csv, "driver,server,scenario,rows,clients,seconds,reps,"
                "tx_per_s,p50_us,p99_us,max_us,client_cpu_us_per_tx,vs_floor,"
                "conflicts_per_tx,run1_tx_per_s,run2_tx_per_s,"
                "run3_tx_per_s\n");
    else if (cfg.csv != NULL) {
        fprintf(cfg.csv, "driver,server,scenario,clients,seconds,reps,"
                "pairs_per_s,p50_us,p99_us,max_us,client_cpu_us_per_pair,vs_floor,vs_by_hand,"
                "wal_syncs_per_pair,run1_pairs_per_s,run2_pairs_per_s,"
                "run3_pairs_per_s\n");
    }
    printf("bench_drivers: sqllock %s, %g s per run, %d runs, clients",
           sqllock_version_string(), cfg.secs, cfg.reps);
    for (i = 0; i < cfg.nclients; i++)
        printf("%s%d", i ? "," : " ", cfg.clients[i]);
    printf("\n");
    fflush(stdout);
    for (i = 0; i < args.nurls; i++) {
        if (args.smoke)
            smoke_url(&cfg, args.urls[i]);
        else if (cfg.release_compare)
            release_compare(&cfg, args.urls[i]);
        else if (cfg.optimistic)
            bench_optimistic(&cfg, args.urls[i]);
        else
            bench_url(&cfg, args.urls[i]);
    }
    if (cfg.csv != NULL && (ferror(cfg.csv) | fclose(cfg.csv)) != 0)
        bu_die("writing %s failed", cfg.csv_path);
    if (cfg.results != NULL &&
        (ferror(cfg.results) | fclose(cfg.results)) != 0)
        bu_die("writing %s failed", cfg.results_path);
#if defined(SQLLOCK_HAVE_MYSQL)
    mysql_library_end();
#endif
    bu_smoke_done();
    return 0;
}
