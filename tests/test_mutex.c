/*
 * test_mutex.c -- mutual exclusion under real contention (DESIGN L1, L5,
 * E3): many processes, and many threads with a handle each, increment a
 * counter kept in the database inside the lock. Lost updates, an overlap
 * seen by a detector in shared memory, or a fencing token that does not
 * grow from holder to holder fail the test. Every contender also records
 * what it did in a history that the checker of tu_history.h judges (H1
 * to H6): the checker on the real contention of every driver.
 *
 * Runs once per URL in SQLLOCK_TEST_URLS (space-separated), or on a fresh
 * temporary SQLite file; SQLLOCK_TEST_REQUIRE as in test_conformance.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "tu_history.h"

#define PROCS 8
#define PROC_ITERS 200
#define THREADS 4
#define THREAD_ITERS 100
#define LEASE_TTL_MS 60000
#define WAIT_MS 240000
#define DBBUSY_RETRIES 50

static const char *g_url;

/* State shared by all contenders: MAP_SHARED for processes. Every field
 * is accessed with atomics, so the detector itself is race-free (and
 * TSan-clean) whatever the lock under test does. */
typedef struct shared {
    int holders;               /* contenders inside the lock now */
    int overlaps;              /* times an entry saw another holder */
    int64_t last_token;        /* the previous holder's fencing token */
    int token_errors;          /* times a token did not grow */
    int entries;               /* completed critical sections */
} shared;

typedef struct run_ctx {
    shared *sh;
    const tu_sql *sql;
    int64_t counter_id;
    char name[128];
    char why[256];             /* a contender's first failure */
    tu_hist *hist;             /* the history every contender writes */
} run_ctx;

/* Runs one counter statement, retrying while the database is busy. */
static int exec_retry(sqllock_db *db, const char *sql, sqllock_value *args,
                      int nargs, int *has_row, int64_t *first,
                      int64_t *affected)
{
    int rc = SQLLOCK_EDBBUSY, i;

    for (i = 0; i < DBBUSY_RETRIES && rc == SQLLOCK_EDBBUSY; i++) {
        rc = sqllock__exec_sql(db, sql, args, nargs, has_row, first,
                               affected);
        if (rc == SQLLOCK_EDBBUSY)
            tu_sleep_ms(10);
    }
    return rc;
}

/* The body of one contender (a process or a thread): its own handle,
 * `iters` times: acquire, check and bump the counter, release. Returns 0
 * or a non-zero failure code with the reason in why[]. */
static int contend(run_ctx *c, int iters, char *why, size_t why_size)
{
    sqllock_db *db = NULL;
    sqllock_lease *l = NULL;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    int i, rc, res = 0;
    unsigned seed = (unsigned)getpid() ^ (unsigned)(uintptr_t)why;

    char who[64];
    int64_t seq;

    why[0] = '\0';
    snprintf(who, sizeof who, "c%ld-%lx", (long)getpid(),
             (unsigned long)(uintptr_t)why);
    rc = sqllock_open(g_url, NULL, &db);
    if (rc != SQLLOCK_OK) {
        snprintf(why, why_size, "open: %s: %s", sqllock_errname(rc),
                 sqllock_errmsg(db));
        sqllock_close(db);
        return 2;
    }
    o.ttl_ms = LEASE_TTL_MS;
    o.backoff_min_ms = 1;
    o.backoff_max_ms = 20;
    rc = sqllock_lease_new(db, c->name, &o, &l);
    if (rc != SQLLOCK_OK) {
        snprintf(why, why_size, "lease_new: %s: %s", sqllock_errname(rc),
                 sqllock_errmsg(db));
        sqllock_close(db);
        return 3;
    }
    for (i = 0; i < iters && res == 0; i++) {
        sqllock_value args[2];
        int64_t value = -1, affected = 0, token, prev;
        int has_row = 0;

        seq = tu_hist_invoke(c->hist, who, "acquire", c->name, 0,
                             LEASE_TTL_MS);
        rc = sqllock_lease_acquire(l, WAIT_MS);
        tu_hist_complete(c->hist, who, seq, tu_hist_outcome(rc),
                         sqllock_lease_token(l));
        if (rc != SQLLOCK_OK) {
            snprintf(why, why_size, "acquire #%d: %s: %s", i,
                     sqllock_errname(rc), sqllock_errmsg(db));
            res = 4;
            break;
        }
        /* Inside: nobody else may be. */
        tu_hist_section(c->hist, who, c->name, sqllock_lease_token(l), 0);
        if (__atomic_add_fetch(&c->sh->holders, 1, __ATOMIC_SEQ_CST) != 1)
            __atomic_add_fetch(&c->sh->overlaps, 1, __ATOMIC_SEQ_CST);
        token = sqllock_lease_token(l);
        prev = __atomic_load_n(&c->sh->last_token, __ATOMIC_SEQ_CST);
        if (token <= prev)
            __atomic_add_fetch(&c->sh->token_errors, 1, __ATOMIC_SEQ_CST);
        __atomic_store_n(&c->sh->last_token, token, __ATOMIC_SEQ_CST);

        args[0] = sqllock__int(c->counter_id);
        rc = exec_retry(db, c->sql->counter_read, args, 1, &has_row, &value,
                        NULL);
        if (rc != SQLLOCK_OK || !has_row) {
            snprintf(why, why_size, "read counter: %s: %s",
                     sqllock_errname(rc), sqllock_errmsg(db));
            res = 5;
        }
        if (res == 0) {
            tu_sleep_us(100 + (long)(rand_r(&seed) % 400));
            args[0] = sqllock__int(value + 1);
            args[1] = sqllock__int(c->counter_id);
            seq = tu_hist_invoke(c->hist, who, "write", c->name, token, 0);
            rc = exec_retry(db, c->sql->counter_write, args, 2, NULL, NULL,
                            &affected);
            tu_hist_complete(c->hist, who, seq,
                             tu_hist_outcome(rc == SQLLOCK_OK && affected != 1
                                             ? SQLLOCK_CONFLICT : rc),
                             token);
            if (rc != SQLLOCK_OK || affected != 1) {
                snprintf(why, why_size, "write counter: %s (%lld rows): %s",
                         sqllock_errname(rc), (long long)affected,
                         sqllock_errmsg(db));
                res = 6;
            }
        }
        __atomic_add_fetch(&c->sh->entries, 1, __ATOMIC_SEQ_CST);
        __atomic_sub_fetch(&c->sh->holders, 1, __ATOMIC_SEQ_CST);
        tu_hist_section_end(c->hist, who, c->name, token);
        seq = tu_hist_invoke(c->hist, who, "release", c->name, token, 0);
        rc = sqllock_lease_release(l);
        tu_hist_complete(c->hist, who, seq, tu_hist_outcome(rc), token);
        if (rc != SQLLOCK_OK && res == 0) {
            snprintf(why, why_size, "release #%d: %s: %s", i,
                     sqllock_errname(rc), sqllock_errmsg(db));
            res = 7;
        }
    }
    sqllock_lease_free(l);
    sqllock_close(db);
    return res;
}

typedef struct fixture {
    const tu_sql *sql;
    int64_t counter_id;
} fixture;

/* Creates the counter table and a fresh row for this run. */
static void counter_setup(fixture *f, const char *tag)
{
    sqllock_db *db = NULL;
    sqllock_value v;
    int rc;

    rc = sqllock_open(g_url, NULL, &db);
    if (rc != SQLLOCK_OK) {
        char msg[700];
        snprintf(msg, sizeof msg, "%s", sqllock_errmsg(db));
        sqllock_close(db);
        fail_msg("open(%s): %s: %s", g_url, sqllock_errname(rc), msg);
    }
    assert_int_equal(sqllock_init(db), SQLLOCK_OK);
    f->sql = tu_sql_for(sqllock_db_driver(db));
    assert_non_null(f->sql);
    rc = sqllock__exec_sql(db, f->sql->counter_ddl, NULL, 0, NULL, NULL,
                           NULL);
    if (rc != SQLLOCK_OK)
        fail_msg("counter DDL: %s: %s", sqllock_errname(rc),
                 sqllock_errmsg(db));
    /* An id unique to this process and run. */
    f->counter_id = (int64_t)getpid() * 100 + (tag[0] == 'p' ? 1 : 2);
    v = sqllock__int(f->counter_id);
    (void)sqllock__exec_sql(db, f->sql->counter_delete, &v, 1, NULL, NULL,
                            NULL);
    rc = sqllock__exec_sql(db, f->sql->counter_insert, &v, 1, NULL, NULL,
                           NULL);
    if (rc != SQLLOCK_OK)
        fail_msg("counter insert: %s: %s", sqllock_errname(rc),
                 sqllock_errmsg(db));
    sqllock_close(db);
}

/* Reads the final counter and removes the row. */
static int64_t counter_finish(fixture *f)
{
    sqllock_db *db = NULL;
    sqllock_value v = sqllock__int(f->counter_id);
    int64_t value = -1;
    int has_row = 0;

    assert_int_equal(sqllock_open(g_url, NULL, &db), SQLLOCK_OK);
    assert_int_equal(sqllock__exec_sql(db, f->sql->counter_read, &v, 1,
                                       &has_row, &value, NULL),
                     SQLLOCK_OK);
    assert_true(has_row);
    (void)sqllock__exec_sql(db, f->sql->counter_delete, &v, 1, NULL, NULL,
                            NULL);
    sqllock_close(db);
    return value;
}

/* A history for one run, in a directory of its own. */
static tu_hist *history_open(char **dir)
{
    char path[1100];
    tu_hist *h;

    *dir = tu_mkdtemp();
    snprintf(path, sizeof path, "%s/history.txt", *dir);
    h = tu_hist_open(path);
    assert_non_null(h);
    return h;
}

/* Judges the run's history, with the counter's final value; removes it
 * when it is clean, else keeps it and names it. */
static void history_judge(tu_hist *h, char *dir, const char *name,
                          int64_t value)
{
    char path[1100];
    tu_hist_result r;
    int bad;

    tu_hist_final(h, name, value);
    snprintf(path, sizeof path, "%s", tu_hist_path(h));
    tu_hist_close(h);
    bad = tu_hist_check(path, stdout, &r);
    if (bad != 0)
        fail_msg("the history checker found %d violations in %s (kept)",
                 bad, path);
    tu_rmdir(dir);
    free(dir);
}

static void check_shared(const shared *sh, int want)
{
    if (sh->overlaps != 0)
        fail_msg("L1 broken: %d critical sections overlapped", sh->overlaps);
    if (sh->token_errors != 0)
        fail_msg("L5 broken: %d holders got a token not above the previous "
                 "holder's", sh->token_errors);
    assert_int_equal(sh->holders, 0);
    assert_int_equal(sh->entries, want);
}

/* L1/L5: 8 processes x 200 iterations on one name. Each child opens its
 * own handle after fork(). */
static void test_mutex_L1_processes(void **state)
{
    fixture f;
    shared *sh;
    run_ctx c;
    pid_t pids[PROCS];
    int i, failed = 0;
    int64_t value;
    char *hdir;
    (void)state;

    counter_setup(&f, "proc");
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(sh != MAP_FAILED);
    memset(sh, 0, sizeof *sh);
    memset(&c, 0, sizeof c);
    c.sh = sh;
    c.sql = f.sql;
    c.counter_id = f.counter_id;
    snprintf(c.name, sizeof c.name, "mutex-%ld-procs", (long)getpid());
    c.hist = history_open(&hdir);

    fflush(stdout);
    fflush(stderr);
    for (i = 0; i < PROCS; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            /* The child: no cmocka here, only an exit status. */
            int res = contend(&c, PROC_ITERS, c.why, sizeof c.why);
            if (res != 0)
                fprintf(stderr, "mutex child %d: %s\n", i, c.why);
            munmap(sh, sizeof *sh);
            _exit(res);
        }
    }
    for (i = 0; i < PROCS; i++) {
        int st = 0;
        pid_t r;
        do {
            r = waitpid(pids[i], &st, 0);
        } while (r < 0 && errno == EINTR);
        assert_int_equal(r, pids[i]);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "mutex child %d: %s %d\n", i,
                    WIFEXITED(st) ? "exit" : "signal",
                    WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
            failed++;
        }
    }
    value = counter_finish(&f);
    history_judge(c.hist, hdir, c.name, value);
    {
        shared copy = *sh;
        munmap(sh, sizeof *sh);
        assert_int_equal(failed, 0);
        check_shared(&copy, PROCS * PROC_ITERS);
    }
    if (value != PROCS * PROC_ITERS)
        fail_msg("L1 broken: counter is %lld, want %d (lost updates)",
                 (long long)value, PROCS * PROC_ITERS);
}

typedef struct thread_arg {
    run_ctx *c;
    int res;
    char why[256];
} thread_arg;

static void *thread_main(void *p)
{
    thread_arg *t = p;
    t->res = contend(t->c, THREAD_ITERS, t->why, sizeof t->why);
    return NULL;
}

/* L1/E3: 4 threads x 100 iterations, each thread with its own handle. */
static void test_mutex_L1_threads(void **state)
{
    fixture f;
    shared sh;
    run_ctx c;
    pthread_t th[THREADS];
    thread_arg args[THREADS];
    int i, failed = 0;
    int64_t value;
    char *hdir;
    (void)state;

    counter_setup(&f, "thread");
    memset(&sh, 0, sizeof sh);
    memset(&c, 0, sizeof c);
    c.sh = &sh;
    c.sql = f.sql;
    c.counter_id = f.counter_id;
    snprintf(c.name, sizeof c.name, "mutex-%ld-threads", (long)getpid());
    c.hist = history_open(&hdir);
    for (i = 0; i < THREADS; i++) {
        memset(&args[i], 0, sizeof args[i]);
        args[i].c = &c;
        assert_int_equal(pthread_create(&th[i], NULL, thread_main, &args[i]),
                         0);
    }
    for (i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        if (args[i].res != 0) {
            fprintf(stderr, "mutex thread %d: %s\n", i, args[i].why);
            failed++;
        }
    }
    value = counter_finish(&f);
    history_judge(c.hist, hdir, c.name, value);
    assert_int_equal(failed, 0);
    check_shared(&sh, THREADS * THREAD_ITERS);
    if (value != THREADS * THREAD_ITERS)
        fail_msg("L1 broken: counter is %lld, want %d (lost updates)",
                 (long long)value, THREADS * THREAD_ITERS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mutex_L1_processes),
        cmocka_unit_test(test_mutex_L1_threads),
    };
    return TU_RUN_PER_URL("mutex", &g_url, tests, NULL, NULL);
}
