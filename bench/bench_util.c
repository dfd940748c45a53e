/*
 * bench_util.c -- the helpers every program of bench/ shares (see
 * bench_util.h).
 */
#include "bench_util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"                /* sqllock__sql_of, sqllock__exec_sql */

#if defined(SQLLOCK_HAVE_MYSQL)
#include <mysql.h>
#endif

/* ------------------------------------------------------------------------ */
/* Errors                                                                   */
/* ------------------------------------------------------------------------ */

static const char *g_prog = "bench";
static const char *g_abort_note;
static void (*g_on_die)(void);

void bu_init(const char *prog, const char *abort_note)
{
    g_prog = prog;
    g_abort_note = abort_note;
}

const char *bu_prog(void)
{
    return g_prog;
}

void bu_on_die(void (*fn)(void))
{
    g_on_die = fn;
}

void bu_die(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fprintf(stderr, "%s: ", g_prog);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    if (g_abort_note != NULL)
        fprintf(stderr, "%s: %s\n", g_prog, g_abort_note);
    if (g_on_die != NULL)
        g_on_die();
    exit(1);
}

/* ------------------------------------------------------------------------ */
/* Clocks                                                                   */
/* ------------------------------------------------------------------------ */

double bu_now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int64_t bu_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t bu_now_ms(void)
{
    return bu_now_ns() / 1000000;
}

void bu_sleep_ns(int64_t ns)
{
    struct timespec ts;

    if (ns <= 0)
        return;
    ts.tv_sec = (time_t)(ns / 1000000000);
    ts.tv_nsec = (long)(ns % 1000000000);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

void bu_sleep_ms(long ms)
{
    bu_sleep_ns((int64_t)ms * 1000000);
}

double bu_cpu_us(void)
{
    struct rusage ru;

    if (getrusage(RUSAGE_SELF, &ru) != 0)
        bu_die("getrusage: %s", strerror(errno));
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* ------------------------------------------------------------------------ */
/* Figures                                                                  */
/* ------------------------------------------------------------------------ */

int bu_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

double bu_percentile(const double *v, size_t n, double p)
{
    size_t k = (size_t)(p * (double)n + 0.999999);

    if (n == 0)
        return 0;
    if (k < 1)
        k = 1;
    if (k > n)
        k = n;
    return v[k - 1];
}

double bu_median(const double *in, int n)
{
    double v[BU_MAX_MEDIAN];
    int i;

    if (n <= 0)
        return 0;
    if (n > BU_MAX_MEDIAN)
        bu_die("bu_median: %d values, at most %d", n, BU_MAX_MEDIAN);
    for (i = 0; i < n; i++)
        v[i] = in[i];
    qsort(v, (size_t)n, sizeof *v, bu_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int bu_lat_push(bu_lat *l, double x)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 65536;
        double *p = realloc(l->v, cap * sizeof *p);
        if (p == NULL)
            return -1;
        l->v = p;
        l->cap = cap;
    }
    l->v[l->n++] = x;
    return 0;
}

void bu_lat_free(bu_lat *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
}

int bu_new_owner(char *out)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char raw[SQLLOCK_OWNER_LEN / 2];
    size_t got = 0;
    int i;

    while (got < sizeof raw) {
        ssize_t n = getrandom(raw + got, sizeof raw - got, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        got += (size_t)n;
    }
    for (i = 0; i < (int)sizeof raw; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[SQLLOCK_OWNER_LEN] = '\0';
    return 0;
}

/* ------------------------------------------------------------------------ */
/* A measured point                                                         */
/* ------------------------------------------------------------------------ */

/* What the threads of one point share. */
typedef struct point_ctl {
    const bu_run *run;
    double start;                    /* written before the barrier */
    int stop;                        /* under mu: `during` returned */
    pthread_mutex_t mu;
    pthread_barrier_t barrier;
} point_ctl;

int bu_fail(bu_client *c, const char *fmt, ...)
{
    va_list ap;
    size_t n;

    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    n = strlen(c->err);
    while (n > 0 && (c->err[n - 1] == '\n' || c->err[n - 1] == '\r'))
        c->err[--n] = '\0';
    return -1;
}

static int point_stopped(point_ctl *pc)
{
    int s;

    pthread_mutex_lock(&pc->mu);
    s = pc->stop;
    pthread_mutex_unlock(&pc->mu);
    return s;
}

static void *client_main(void *arg)
{
    bu_client *c = arg;
    point_ctl *pc = (point_ctl *)c->run_;
    const bu_run *run = pc->run;
    double t0, t1, end;
    int i, rc;

#if defined(SQLLOCK_HAVE_MYSQL)
    mysql_thread_init();
#endif
    for (i = 0; i < run->warmup && !c->failed; i++)
        if (run->pair(c) != 0)
            c->failed = 1;
    rc = pthread_barrier_wait(&pc->barrier);
    if (rc != 0 && rc != PTHREAD_BARRIER_SERIAL_THREAD) {
        c->failed = 1;
        bu_fail(c, "pthread_barrier_wait: %s", strerror(rc));
    }
    if (run->after_warmup != NULL)
        run->after_warmup(c);
    end = pc->start + run->secs;
    while (!c->failed && (t0 = bu_now_s()) < end &&
           (run->during == NULL || !point_stopped(pc))) {
        if (run->pair(c) != 0) {
            c->failed = 1;
            break;
        }
        t1 = bu_now_s();
        if (bu_lat_push(&c->lat, (t1 - t0) * 1e6) != 0) {
            c->failed = 1;
            bu_fail(c, "out of memory");
        }
    }
    c->end = bu_now_s();
#if defined(SQLLOCK_HAVE_MYSQL)
    mysql_thread_end();
#endif
    return NULL;
}

void bu_point_run(bu_client *const *cs, int n, const bu_run *run,
                  bu_point *out)
{
    pthread_t tids[BU_MAX_CLIENTS];
    point_ctl pc;
    double last = 0, *all, cpu0 = bu_cpu_us();
    size_t total = 0, k;
    int i, rc;

    if (n < 1 || n > BU_MAX_CLIENTS)
        bu_die("bu_point_run: %d clients, 1 to %d", n, BU_MAX_CLIENTS);
    memset(&pc, 0, sizeof pc);
    pc.run = run;
    pthread_mutex_init(&pc.mu, NULL);
    rc = pthread_barrier_init(&pc.barrier, NULL, (unsigned)n + 1);
    if (rc != 0)
        bu_die("pthread_barrier_init: %s", strerror(rc));
    for (i = 0; i < n; i++) {
        cs[i]->run_ = &pc;
        cs[i]->lat.n = 0;
        cs[i]->failed = 0;
        cs[i]->err[0] = '\0';
        rc = pthread_create(&tids[i], NULL, client_main, cs[i]);
        if (rc != 0)
            bu_die("pthread_create: %s", strerror(rc));
    }
    /* Every client has warmed up and waits; the clock starts now. */
    pc.start = bu_now_s();
    rc = pthread_barrier_wait(&pc.barrier);
    if (rc != 0 && rc != PTHREAD_BARRIER_SERIAL_THREAD)
        bu_die("pthread_barrier_wait: %s", strerror(rc));
    if (run->during != NULL) {
        run->during(run->ctx);
        pthread_mutex_lock(&pc.mu);
        pc.stop = 1;
        pthread_mutex_unlock(&pc.mu);
    }
    for (i = 0; i < n; i++) {
        rc = pthread_join(tids[i], NULL);
        if (rc != 0)
            bu_die("pthread_join: %s", strerror(rc));
    }
    pthread_barrier_destroy(&pc.barrier);
    pthread_mutex_destroy(&pc.mu);
    out->cpu_us = bu_cpu_us() - cpu0;
    for (i = 0; i < n; i++) {
        cs[i]->run_ = NULL;
        if (cs[i]->failed)
            bu_die("client %d: %s", i, cs[i]->err);
        total += cs[i]->lat.n;
        if (cs[i]->end > last)
            last = cs[i]->end;
    }
    all = malloc((total ? total : 1) * sizeof *all);
    if (all == NULL)
        bu_die("out of memory");
    for (i = 0, k = 0; i < n; i++) {
        if (cs[i]->lat.n == 0)
            continue;            /* its array may not exist yet */
        memcpy(all + k, cs[i]->lat.v, cs[i]->lat.n * sizeof *all);
        k += cs[i]->lat.n;
    }
    qsort(all, total, sizeof *all, bu_cmp_double);
    out->pairs = (long)total;
    /* The warm-up pairs ran inside the measured CPU time too. */
    out->cpu_us /= (double)(total + (size_t)n * (size_t)run->warmup);
    out->secs = last - pc.start;
    out->rate = out->secs > 0 ? (double)total / out->secs : 0;
    out->p50 = bu_percentile(all, total, 0.50);
    out->p99 = bu_percentile(all, total, 0.99);
    out->max = total > 0 ? all[total - 1] : 0;
    free(all);
}

void bu_point_median(const bu_point *reps, int n, bu_point *out)
{
    double v[BU_MAX_MEDIAN] = { 0 };
    int i;

    if (n < 1 || n > BU_MAX_MEDIAN)
        bu_die("bu_point_median: %d points, 1 to %d", n, BU_MAX_MEDIAN);

#define MED_(field)                                                          \
    do {                                                                     \
        for (i = 0; i < n; i++)                                              \
            v[i] = reps[i].field;                                            \
        out->field = bu_median(v, n);                                        \
    } while (0)
    MED_(rate);
    MED_(p50);
    MED_(p99);
    MED_(max);
    MED_(secs);
    MED_(cpu_us);
#undef MED_
    out->pairs = 0;
    for (i = 0; i < n; i++)
        out->pairs += reps[i].pairs;
}

/* ------------------------------------------------------------------------ */
/* The results CSV                                                          */
/* ------------------------------------------------------------------------ */

static const char RES_HEADER[] =
    "suite,driver,scenario,clients,rows,ops_per_s,p50_us,p99_us,ratio,vs,"
    "value,unit\n";

FILE *bu_results_open(const char *path)
{
    FILE *f = fopen(path, "a");
    struct stat st;

    if (f == NULL)
        bu_die("cannot append to %s: %s", path, strerror(errno));
    if (fstat(fileno(f), &st) != 0)
        bu_die("%s: %s", path, strerror(errno));
    if (st.st_size == 0)
        fputs(RES_HEADER, f);
    return f;
}

void bu_csv_text(FILE *f, const char *s)
{
    if (s == NULL)
        return;
    if (strpbrk(s, ", \"\r\n") == NULL) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s != '\0'; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* This program never calls setlocale(), but a library might: the decimal
 * point is made '.' whatever the locale. */
void bu_csv_num(FILE *f, double v, int decimals)
{
    char buf[64], *p;

    if (!isfinite(v))
        return;
    snprintf(buf, sizeof buf, "%.*f", decimals, v);
    for (p = buf; *p != '\0'; p++)
        if (*p == ',')
            *p = '.';
    fputs(buf, f);
}

void bu_results_put(FILE *f, const bu_result *r)
{
    if (f == NULL)
        return;
    bu_csv_text(f, r->suite);
    fputc(',', f);
    bu_csv_text(f, r->driver);
    fputc(',', f);
    bu_csv_text(f, r->scenario);
    fprintf(f, ",%d,", r->clients);
    if (r->rows >= 0)
        fprintf(f, "%ld", r->rows);
    fputc(',', f);
    bu_csv_num(f, r->ops_per_s, 1);
    fputc(',', f);
    bu_csv_num(f, r->p50_us, 1);
    fputc(',', f);
    bu_csv_num(f, r->p99_us, 1);
    fputc(',', f);
    bu_csv_num(f, r->ratio, 3);
    fputc(',', f);
    bu_csv_text(f, r->vs);
    fputc(',', f);
    bu_csv_num(f, r->value, 3);
    fputc(',', f);
    bu_csv_text(f, r->unit);
    fputc('\n', f);
    if (fflush(f) != 0)
        bu_die("writing the results: %s", strerror(errno));
}

/* ------------------------------------------------------------------------ */
/* Arguments                                                                */
/* ------------------------------------------------------------------------ */

long bu_parse_long(const char *s, long lo, long hi, const char *what)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
        bu_die("%s: '%s' is not a whole number from %ld to %ld", what, s, lo,
               hi);
    return v;
}

double bu_parse_secs(const char *s, double hi, const char *what)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !(v > 0) || v > hi)
        bu_die("%s: '%s' is not a number of seconds above 0, at most %g",
               what, s, hi);
    return v;
}

int bu_parse_list(const char *list, long *out, int max, long lo, long hi,
                  const char *what)
{
    char buf[256], *tok, *save = NULL;
    int n = 0;

    if (strlen(list) >= sizeof buf)
        bu_die("%s: the list is too long", what);
    strcpy(buf, list);
    for (tok = strtok_r(buf, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        if (n == max)
            bu_die("%s: at most %d values", what, max);
        out[n++] = bu_parse_long(tok, lo, hi, what);
    }
    if (n == 0)
        bu_die("%s: an empty list", what);
    return n;
}

int bu_args_take(bu_args *a, int argc, char **argv, int *i)
{
    const char *w = argv[*i];
    int has_value = *i + 1 < argc;

    if (strcmp(w, "--quick") == 0) {
        a->secs = 2;
    } else if (strcmp(w, "--smoke") == 0) {
        a->smoke = 1;
    } else if (strcmp(w, "--seconds") == 0) {
        if (!has_value)
            return -1;
        a->secs = bu_parse_secs(argv[++*i], 86400, "--seconds");
    } else if (strcmp(w, "--reps") == 0) {
        if (!has_value)
            return -1;
        a->reps = (int)bu_parse_long(argv[++*i], 1, a->max_reps, "--reps");
    } else if (strcmp(w, "--results") == 0) {
        if (!has_value)
            return -1;
        a->results = argv[++*i];
    } else if (w[0] != '-') {
        if (a->nurls == BU_MAX_URLS)
            return -1;
        a->urls[a->nurls++] = argv[*i];
    } else {
        return 0;
    }
    return 1;
}

void bu_args_finish(bu_args *a, int db_urls)
{
    if (!a->smoke)
        return;
    a->secs = BU_SMOKE_SECS;
    a->reps = 1;
    if (db_urls && a->nurls == 0)
        a->nurls = bu_smoke_urls(a->urls, BU_MAX_URLS);
}

int bu_parse_clients(const char *list, int clients[8], int *max)
{
    long v[8];
    int i, n = bu_parse_list(list, v, 8, 1, BU_MAX_CLIENTS, "--clients");

    *max = 0;
    for (i = 0; i < n; i++) {
        clients[i] = (int)v[i];
        if (clients[i] > *max)
            *max = clients[i];
    }
    return n;
}

/* ------------------------------------------------------------------------ */
/* Databases                                                                */
/* ------------------------------------------------------------------------ */

sqllock_db *bu_open(const char *url)
{
    sqllock_db *db = NULL;
    int rc = sqllock_open(url, NULL, &db);

    if (rc != SQLLOCK_OK)
        bu_die("cannot open %s: %s: %s", url, sqllock_errname(rc),
               sqllock_errmsg(db));
    return db;
}

const char *bu_sql(const char *driver, sqllock_sql_id id, const char *args)
{
    const sqllock_driver *drv = sqllock_driver_find(driver);
    const sqllock_sql *sql;

    if (drv == NULL || drv->dialect == NULL)
        bu_die("no registered driver '%s'", driver);
    sql = sqllock__sql_of(drv, id);
    if (sql == NULL || sql->text == NULL)
        bu_die("the %s driver has no statement %d to send by hand", driver,
               (int)id);
    if (args != NULL && (sql->args == NULL || strcmp(sql->args, args) != 0))
        bu_die("the %s driver's statement %d binds its placeholders in the "
               "order \"%s\"; the bench binds them as \"%s\": make the bench "
               "bind as the driver does", driver, (int)id,
               sql->args != NULL ? sql->args : "(all, in order)", args);
    return sql->text;
}

/* ------------------------------------------------------------------------ */
/* Smoke mode                                                               */
/* ------------------------------------------------------------------------ */

static char g_smoke_dir[256];
/* What bu_smoke_urls() handed out, for bu_smoke_done() to free. */
static char *g_smoke_urls[BU_MAX_URLS];
static int g_smoke_n;

/* The driver of a URL's scheme, or NULL. */
static const char *url_driver(const char *url)
{
    static const struct { const char *scheme, *driver; } map[] = {
        { "sqlite", "sqlite" },     { "postgres", "postgres" },
        { "postgresql", "postgres" }, { "mysql", "mysql" },
        { "mariadb", "mysql" },
    };
    size_t n = strcspn(url, ":"), i;

    for (i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strlen(map[i].scheme) == n &&
            strncasecmp(url, map[i].scheme, n) == 0)
            return map[i].driver;
    return NULL;
}

/* SQLLOCK_TEST_DB_PER_UNIT: NULL when off, "" for 1, else the tag. */
static const char *db_tag(void)
{
    const char *t = getenv("SQLLOCK_TEST_DB_PER_UNIT");
    size_t i;

    if (t == NULL || *t == '\0' || strcmp(t, "0") == 0)
        return NULL;
    if (strcmp(t, "1") == 0)
        return "";
    for (i = 0; t[i] != '\0'; i++)
        if (!isalnum((unsigned char)t[i]) || i >= 16)
            bu_die("SQLLOCK_TEST_DB_PER_UNIT=%s: a tag is 1 to 16 letters "
                   "or digits", t);
    return t;
}

/* The URL of the program's own database (as tests/test_util.h names a
 * unit's: TAG_UNIT_DB, or F-TAG-UNIT.db), the unit being bench_<prog>. */
static char *url_own(const char *url, const char *tag)
{
    const char *drv = url_driver(url), *unit = bu_prog();
    size_t end = strcspn(url, "?");
    char out[4200], unit_buf[40];
    int n;

    if (strncmp(unit, "bench_", 6) != 0) {
        snprintf(unit_buf, sizeof unit_buf, "bench_%s", unit);
        unit = unit_buf;
    }
    if (drv != NULL && strcmp(drv, "sqlite") == 0) {
        const char *dot = NULL, *p;
        for (p = url; p < url + end; p++) {
            if (*p == '/' || *p == ':')
                dot = NULL;
            else if (*p == '.')
                dot = p;
        }
        if (dot == NULL)
            dot = url + end;
        n = snprintf(out, sizeof out, "%.*s%s%s-%s%s", (int)(dot - url), url,
                     *tag ? "-" : "", tag, unit, dot);
    } else {
        const char *a = strstr(url, "://");
        const char *db = a != NULL ? strchr(a + 3, '/') : NULL;
        if (db == NULL || db >= url + end || db + 1 == url + end)
            bu_die("SQLLOCK_TEST_DB_PER_UNIT: %s names no database", url);
        db++;
        if ((size_t)(url + end - db) + strlen(tag) + strlen(unit) + 3 > 63)
            bu_die("SQLLOCK_TEST_DB_PER_UNIT: the database name made from "
                   "%s is longer than 63 bytes", url);
        n = snprintf(out, sizeof out, "%.*s%s_%s_%s", (int)(db - url), url,
                     *tag ? tag : "u", unit, db);
    }
    if (n < 0 || (size_t)n >= sizeof out)
        bu_die("the URL is too long");
    return strdup(out);
}

/* Creates the database of `own` when missing, through `base` (whose
 * database exists). */
static void db_create(const char *base, const char *own)
{
    const char *drv = url_driver(base);
    const char *a = strstr(own, "://");
    const char *p = a != NULL ? strchr(a + 3, '/') : NULL;
    sqllock_db *db = bu_open(base);
    char name[80], sql[200];
    int64_t n = 0;
    int has = 0, rc;

    snprintf(name, sizeof name, "%.*s", p != NULL ? (int)strcspn(p + 1, "?")
             : 0, p != NULL ? p + 1 : "");
    if (strcmp(drv, "mysql") == 0) {
        snprintf(sql, sizeof sql, "CREATE DATABASE IF NOT EXISTS `%s`", name);
        rc = sqllock__exec_sql(db, sql, NULL, 0, NULL, NULL, NULL);
    } else {
        sqllock_value arg = sqllock__text(name);
        rc = sqllock__exec_sql(db, "SELECT count(*) FROM "
                               "pg_catalog.pg_database WHERE datname = $1",
                               &arg, 1, &has, &n, NULL);
        if (rc == SQLLOCK_OK && n == 0) {
            snprintf(sql, sizeof sql, "CREATE DATABASE \"%s\"", name);
            rc = sqllock__exec_sql(db, sql, NULL, 0, NULL, NULL, NULL);
            /* Another run may have made it meanwhile. */
            if (rc != SQLLOCK_OK)
                rc = sqllock__exec_sql(db, "SELECT count(*) FROM "
                                       "pg_catalog.pg_database WHERE "
                                       "datname = $1", &arg, 1, &has, &n,
                                       NULL) == SQLLOCK_OK && n > 0
                     ? SQLLOCK_OK : rc;
        }
    }
    if (rc != SQLLOCK_OK)
        bu_die("cannot create database %s: %s: %s", name, sqllock_errname(rc),
               sqllock_errmsg(db));
    sqllock_close(db);
}

/* 1 when SQLLOCK_TEST_REQUIRE (comma-separated) names `driver`. */
static int required(const char *driver)
{
    const char *r = getenv("SQLLOCK_TEST_REQUIRE");
    size_t len = strlen(driver);

    while (r != NULL && *r != '\0') {
        size_t n = strcspn(r, ",");
        if (n == len && strncmp(r, driver, n) == 0)
            return 1;
        r += n;
        if (*r == ',')
            r++;
    }
    return 0;
}

int bu_smoke_urls(char **urls, int max)
{
    const char *env = getenv("SQLLOCK_TEST_URLS");
    const char *only = getenv("SQLLOCK_TEST_DRIVER");
    const char *tag = db_tag();
    int n = 0, i;

    if (only != NULL && *only == '\0')
        only = NULL;
    while (env != NULL && *env != '\0' && n < max) {
        size_t len;
        char *url;
        const char *d;
        env += strspn(env, " \t\n");
        len = strcspn(env, " \t\n");
        if (len == 0)
            break;
        url = strndup(env, len);
        env += len;
        if (url == NULL)
            bu_die("out of memory");
        d = url_driver(url);
        if (only != NULL && (d == NULL || strcmp(d, only) != 0)) {
            free(url);
            continue;
        }
        urls[n++] = url;
    }
    if (n == 0 && (env == NULL || *env == '\0') &&
        (only == NULL || strcmp(only, "sqlite") == 0) &&
        getenv("SQLLOCK_TEST_URLS") == NULL) {
        char buf[300];
        snprintf(g_smoke_dir, sizeof g_smoke_dir, "%s/sqllock-%s.XXXXXX",
                 getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp",
                 bu_prog());
        if (mkdtemp(g_smoke_dir) == NULL)
            bu_die("mkdtemp: %s", strerror(errno));
        snprintf(buf, sizeof buf, "sqlite://%s/bench.db", g_smoke_dir);
        urls[n++] = strdup(buf);
        tag = NULL;                  /* a fresh file of its own already */
    }
    if (n == 0) {
        const char *d = only != NULL ? only : "any driver";
        if (only != NULL && required(only))
            bu_die("--smoke: SQLLOCK_TEST_URLS has no URL for %s, which "
                   "SQLLOCK_TEST_REQUIRE requires", d);
        printf("%s --smoke: SKIPPED: no %s URL in SQLLOCK_TEST_URLS\n",
               bu_prog(), d);
        exit(77);
    }
    if (n > BU_MAX_URLS)
        n = BU_MAX_URLS;
    for (i = 0; tag != NULL && i < n; i++) {
        char *own = url_own(urls[i], tag);
        const char *d = url_driver(urls[i]);
        if (own == NULL)
            bu_die("out of memory");
        if (d != NULL && strcmp(d, "sqlite") != 0)
            db_create(urls[i], own);
        free(urls[i]);
        urls[i] = own;
    }
    for (i = 0; i < n; i++)
        g_smoke_urls[i] = urls[i];
    g_smoke_n = n;
    return n;
}

/* The smoke run reached its end on these URLs: "ENTRY DRIVER" for each
 * into SQLLOCK_TEST_REPORT, as the test binaries write it
 * (tests/harness), so that scripts/test.sh's check_report sees that this
 * ctest entry ran its driver (a bench that stopped with bu_die() never
 * gets here). */
static void smoke_report(void)
{
    const char *path = getenv("SQLLOCK_TEST_REPORT");
    const char *entry = getenv("SQLLOCK_TEST_UNIT");
    FILE *fp;
    int i;

    if (path == NULL || *path == '\0' || entry == NULL || *entry == '\0' ||
        g_smoke_n == 0)
        return;
    fp = fopen(path, "a");
    if (fp == NULL)
        return;
    for (i = 0; i < g_smoke_n; i++) {
        const char *d = url_driver(g_smoke_urls[i]);
        if (d != NULL)
            fprintf(fp, "%s %s\n", entry, d);
    }
    fclose(fp);
}

void bu_smoke_done(void)
{
    char cmd[300];
    int i;

    smoke_report();
    for (i = 0; i < g_smoke_n; i++)
        free(g_smoke_urls[i]);
    g_smoke_n = 0;
    if (g_smoke_dir[0] == '\0')
        return;
    /* The directory holds the SQLite file and its -wal and -shm. */
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_smoke_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "%s: could not remove %s\n", bu_prog(), g_smoke_dir);
    g_smoke_dir[0] = '\0';
}
