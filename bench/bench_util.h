/*
 * bench_util.h -- what every program of bench/ shares: errors, clocks,
 * percentiles and medians, owner ids, the measured point (N client threads
 * for a fixed time), the common results CSV of bench/README.md, argument
 * parsing, the library's own SQL read from the driver's dialect, and the
 * smoke mode that ctest runs (bench/CMakeLists.txt).
 *
 * Prefix bu_. Not part of the library: the programs link it with the
 * static library, and may use its internal headers.
 */
#ifndef SQLLOCK_BENCH_UTIL_H
#define SQLLOCK_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <sqllock.h>
#include <sqllock_driver.h>

/* ------------------------------------------------------------------------ */
/* Errors                                                                   */
/* ------------------------------------------------------------------------ */

/* Names the program in every message, and the note bu_die() adds after
 * its own (what a stopped run may leave behind; NULL for none). */
void bu_init(const char *prog, const char *abort_note);
const char *bu_prog(void);
/* One more thing bu_die() calls before it exits (e.g. to name a table
 * left behind); NULL to clear. */
void bu_on_die(void (*fn)(void));
/* Prints "prog: message", the note, and exits with status 1. */
void bu_die(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));

/* ------------------------------------------------------------------------ */
/* Clocks                                                                   */
/* ------------------------------------------------------------------------ */

/* CLOCK_MONOTONIC in seconds, nanoseconds and milliseconds. */
double bu_now_s(void);
int64_t bu_now_ns(void);
int64_t bu_now_ms(void);
/* Sleeps, resuming after a signal. */
void bu_sleep_ns(int64_t ns);
void bu_sleep_ms(long ms);
/* User + system CPU time of the whole process so far, in microseconds. */
double bu_cpu_us(void);

/* ------------------------------------------------------------------------ */
/* Figures                                                                  */
/* ------------------------------------------------------------------------ */

int bu_cmp_double(const void *a, const void *b);
/* The nearest-rank percentile (p in 0..1) of n sorted values; 0 when
 * n is 0. */
double bu_percentile(const double *sorted, size_t n, double p);
/* The median of n values (at most BU_MAX_MEDIAN; `v` is not changed). */
#define BU_MAX_MEDIAN 64
double bu_median(const double *v, int n);

/* A growing array of latencies. */
typedef struct bu_lat {
    double *v;
    size_t n, cap;
} bu_lat;
/* 0, or -1 when out of memory. */
int bu_lat_push(bu_lat *l, double x);
void bu_lat_free(bu_lat *l);

/* A fresh owner id, made as the library makes it (core/lease.c
 * new_owner(): 16 bytes from getrandom(), in lower-case hex) into
 * out[SQLLOCK_OWNER_LEN + 1]. 0, or -1 with errno. */
int bu_new_owner(char *out);

/* ------------------------------------------------------------------------ */
/* A measured point: N client threads, each its own pair function          */
/* ------------------------------------------------------------------------ */

/*
 * A program's client embeds bu_client as its FIRST member, so that the
 * pair function may cast the bu_client * it gets back to its own type.
 * bu_point_run() starts one thread per client, which runs `warmup`
 * pairs, waits at a barrier for the others, then runs pairs until `secs`
 * have passed since the barrier (or `stop` is set by `during`), timing
 * each. A pair function returns 0, or -1 after bu_fail() said why; any
 * failure aborts the program with that message.
 */
typedef struct bu_client bu_client;
typedef int (*bu_pair_fn)(bu_client *c);
struct bu_client {
    int index;
    char err[600];
    /* Filled by bu_point_run(). */
    bu_lat lat;                      /* pair latencies, microseconds */
    double end;
    int failed;
    /* Private to bu_point_run(). */
    const void *run_;
};

typedef struct bu_run {
    bu_pair_fn pair;
    double secs;
    int warmup;                      /* pairs before the clock starts */
    /* Called in each client's thread after its warm-up (to zero its own
     * counters), or NULL. */
    void (*after_warmup)(bu_client *c);
    /* When not NULL, the main thread calls it once the clients measure,
     * and the run ends when it returns (or at `secs`). */
    void (*during)(void *ctx);
    void *ctx;
} bu_run;

typedef struct bu_point {
    double rate;                     /* pairs per second */
    double p50, p99, max;            /* microseconds */
    double secs;                     /* the measured window */
    double cpu_us;                   /* process CPU per pair, warm-up too */
    long pairs;
} bu_point;

/* Runs one point on clients cs[0..n-1] (n at most BU_MAX_CLIENTS). */
#define BU_MAX_CLIENTS 64
void bu_point_run(bu_client *const *cs, int n, const bu_run *run,
                  bu_point *out);
/* Writes the reason into c->err (trailing newlines cut); returns -1. */
int bu_fail(bu_client *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The median of each figure over reps points (the percentiles: the
 * median of each run's); pairs is the sum. */
void bu_point_median(const bu_point *reps, int n, bu_point *out);

/* ------------------------------------------------------------------------ */
/* The common results CSV (bench/README.md)                                 */
/* ------------------------------------------------------------------------ */

/* One row. Numbers that are NAN or infinite are written as empty fields,
 * and so are NULL texts; rows < 0 is empty. */
typedef struct bu_result {
    const char *suite, *driver, *scenario;
    int clients;
    long rows;
    double ops_per_s, p50_us, p99_us, ratio;
    const char *vs;
    double value;
    const char *unit;
} bu_result;

/* Opens FILE to append, writing the header when it is empty or new. */
FILE *bu_results_open(const char *path);
/* Appends one row and flushes; does nothing when f is NULL. */
void bu_results_put(FILE *f, const bu_result *r);
/* A text field, quoted as RFC 4180 says when it holds a comma, a space,
 * a quote or a line break (quotes doubled); nothing for NULL. */
void bu_csv_text(FILE *f, const char *s);
/* A figure with '.' as the decimal point whatever the locale; nothing
 * when it is not finite. */
void bu_csv_num(FILE *f, double v, int decimals);

/* ------------------------------------------------------------------------ */
/* Arguments                                                                */
/* ------------------------------------------------------------------------ */

/* A whole number in [lo, hi], or bu_die() naming `what`. */
long bu_parse_long(const char *s, long lo, long hi, const char *what);
/* A number of seconds in (0, hi]. */
double bu_parse_secs(const char *s, double hi, const char *what);
/* A comma-separated list of whole numbers in [lo, hi], at most max;
 * returns how many. */
int bu_parse_list(const char *list, long *out, int max, long lo, long hi,
                  const char *what);

/*
 * The arguments every program takes, parsed by bu_args_take():
 *   --seconds N   secs (a number above 0)     --quick   secs = 2
 *   --reps N      reps, 1..max_reps           --results FILE
 *   --smoke       smoke = 1 (the program sets its smoke sizes, and takes
 *                 the URLs from bu_smoke_urls() when none is given)
 *   anything that does not start with '-': a URL, at most BU_MAX_URLS.
 * The program sets the defaults before it parses.
 */
#define BU_MAX_URLS 16
typedef struct bu_args {
    double secs;
    int reps, max_reps;
    const char *results;
    int smoke;
    char *urls[BU_MAX_URLS];
    int nurls;
} bu_args;
/* 1 when argv[*i] is one of the above (*i then at its last word), 0 when
 * it is not (the program's own, or unknown), -1 when it lacks its value
 * or there are too many URLs. */
int bu_args_take(bu_args *a, int argc, char **argv, int *i);
/* After the parse: with --smoke, BU_SMOKE_SECS a point and one run, and,
 * when `db_urls` and no URL was given, the tests' URLs (bu_smoke_urls()). */
void bu_args_finish(bu_args *a, int db_urls);
/* --clients LIST: up to 8 client counts of 1..BU_MAX_CLIENTS into
 * clients[8]; the largest into *max. Returns how many. */
int bu_parse_clients(const char *list, int clients[8], int *max);

/* ------------------------------------------------------------------------ */
/* Databases                                                                */
/* ------------------------------------------------------------------------ */

/* sqllock_open(), or bu_die() with the reason. */
sqllock_db *bu_open(const char *url);

/*
 * The text of statement `id` of the driver `driver` ("postgres", "mysql",
 * "sqlite"), read from the dialect the registered driver declares, so
 * that what a bench sends "by hand" is the library's own SQL and cannot
 * drift from it. `args` is the placeholder order the bench binds in (as
 * sqllock_sql.args: "1234", "312"); when the driver's differs, or the
 * driver has no such statement, bu_die() says so: the bench's binding
 * must follow the driver's.
 */
const char *bu_sql(const char *driver, sqllock_sql_id id, const char *args);

/* ------------------------------------------------------------------------ */
/* Smoke mode                                                               */
/* ------------------------------------------------------------------------ */

/*
 * `--smoke` (each program's own flag) runs every scenario once, for a
 * fraction of a second and on small sizes: seconds in all, so that ctest
 * can run it on every driver and a bench that no longer runs, or whose
 * SQL check fails, fails the build. Its URLs are given the way the test
 * entries get theirs (tests/CMakeLists.txt):
 *
 *   SQLLOCK_TEST_URLS          space-separated URLs; unset: a temporary
 *                              SQLite file
 *   SQLLOCK_TEST_DRIVER=D      only D's URLs
 *   SQLLOCK_TEST_DB_PER_UNIT=TAG
 *                              a database of the program's own on each
 *                              server, TAG_bench_<prog>_DB (u_... for 1),
 *                              made when missing; a SQLite file F.db
 *                              becomes F-TAG-bench_<prog>.db
 *   SQLLOCK_TEST_REQUIRE       drivers that must have a URL
 *
 * bu_smoke_urls() fills urls[] (at most max) and returns how many. With
 * none (SQLLOCK_TEST_DRIVER names a driver without a URL) it exits 77,
 * which ctest reports as skipped, unless SQLLOCK_TEST_REQUIRE names the
 * driver: then it fails.
 */
#define BU_SMOKE_SECS 0.2
int bu_smoke_urls(char **urls, int max);
/* Frees the URLs bu_smoke_urls() gave and removes what it made (a
 * temporary directory). */
void bu_smoke_done(void);

#endif
