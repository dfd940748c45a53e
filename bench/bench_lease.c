/*
 * bench_lease.c -- uncontended acquire+release on SQLite, against a floor.
 *
 *   bench_lease [seconds] [dir]
 *
 * The floor is what any lock built on this database must at least pay for
 * an acquire and a release: two durable write transactions, here two bare
 * prepared UPDATEs of one row in autocommit, on the same file with the
 * pragmas sqllock sets (WAL, synchronous=FULL). The ratio says what the
 * library adds on top. Each figure is the median of 3 runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>
#include <sqllock.h>

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double floor_run(sqlite3 *db, double secs)
{
    sqlite3_stmt *st;
    double t0 = now_s(), t;
    long n = 0;

    sqlite3_prepare_v2(db, "UPDATE bench_floor SET v = v + 1 WHERE id = 1",
                       -1, &st, NULL);
    do {
        int i;
        for (i = 0; i < 2; i++) {
            if (sqlite3_step(st) != SQLITE_DONE) {
                fprintf(stderr, "floor: %s\n", sqlite3_errmsg(db));
                exit(1);
            }
            sqlite3_reset(st);
        }
        n++;
    } while ((t = now_s() - t0) < secs);
    sqlite3_finalize(st);
    return n / t;
}

static double lease_run(sqllock_db *db, double secs)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l;
    double t0 = now_s(), t;
    long n = 0;

    o.ttl_ms = 30000;
    if (sqllock_lease_new(db, "bench", &o, &l) != SQLLOCK_OK)
        exit(1);
    do {
        if (sqllock_lease_try_acquire(l) != SQLLOCK_OK ||
            sqllock_lease_release(l) != SQLLOCK_OK) {
            fprintf(stderr, "lease: %s\n", sqllock_errmsg(db));
            exit(1);
        }
        n++;
    } while ((t = now_s() - t0) < secs);
    sqllock_lease_free(l);
    return n / t;
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 3.0;
    const char *dir = argc > 2 ? argv[2] : "/tmp";
    char path[512], url[600];
    double fl[3], le[3];
    sqllock_db *db = NULL;
    sqlite3 *raw;
    int i;

    snprintf(path, sizeof path, "%s/sqllock-bench-%ld.db", dir, (long)getpid());
    snprintf(url, sizeof url, "sqlite://%s", path);
    if (sqllock_open(url, NULL, &db) != SQLLOCK_OK ||
        sqllock_init(db) != SQLLOCK_OK) {
        fprintf(stderr, "open: %s\n", sqllock_errmsg(db));
        return 1;
    }
    sqlite3_open(path, &raw);
    sqlite3_exec(raw, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                 "CREATE TABLE bench_floor(id INTEGER PRIMARY KEY, v INTEGER);"
                 "INSERT INTO bench_floor VALUES (1, 0);", NULL, NULL, NULL);
    for (i = 0; i < 3; i++) {
        fl[i] = floor_run(raw, secs);
        le[i] = lease_run(db, secs);
    }
    qsort(fl, 3, sizeof fl[0], cmp);
    qsort(le, 3, sizeof le[0], cmp);
    printf("SQLite %s, %s per run, median of 3\n", sqlite3_libversion(),
           argc > 1 ? argv[1] : "3");
    printf("%-38s %12s %8s\n", "scenario", "pairs/s", "ratio");
    printf("%-38s %12.0f %8.2f\n", "floor: 2 bare durable UPDATEs", fl[1], 1.0);
    printf("%-38s %12.0f %8.2f\n", "sqllock acquire+release (1 client)",
           le[1], le[1] / fl[1]);
    sqlite3_close(raw);
    sqllock_close(db);
    unlink(path);
    snprintf(url, sizeof url, "%s-wal", path);
    unlink(url);
    snprintf(url, sizeof url, "%s-shm", path);
    unlink(url);
    return 0;
}
