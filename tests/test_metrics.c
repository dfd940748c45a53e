/*
 * test_metrics.c -- the library's metrics and its log hook (issue 31),
 * checked against what the test did, on every driver:
 *
 *   - contention: 4 processes take one name 25 times each (a counter in a
 *     file, read and written + 1 under the lease, ends exact: L1), and
 *     each scrapes its handle; the sums are exact: 100 grants, 100
 *     releases, 100 holds, no lease held, every acquire call timed, and
 *     the pauses of the waits (wake-ups or polls) counted;
 *   - outcomes: granted, busy, timeout (its time in the histogram's
 *     upper buckets), error; releases; the leases held gauge;
 *   - a loss (L4, L7): a watched lease freed by an operator is found
 *     taken over by the watchdog -- one loss, cause taken_over, one hold,
 *     the release that follows counted as lost and not as a second loss;
 *     the log hook hears acquired, lost and release_lost with name and
 *     token;
 *   - kinds: a semaphore's permit, a shared and an exclusive hold, two
 *     names at once; row locks (granted, and NOWAIT refused: busy);
 *     compare-and-set writes (ok, conflict); the reaper's rows;
 *   - D1b: an uncontended acquire and a release are one round trip each on
 *     PostgreSQL (counted by operation);
 *   - the format: every family has TYPE and HELP, counters end in
 *     _total, names are Prometheus names, "# EOF" ends the text; the
 *     process's sums are at least the handle's; bad input is refused.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "internal.h"
#include "sqllock_driver.h"
#include "test_util.h"
#include "test_run.h"
#include "tu_env.h"
#include "tu_fixture.h"

static const char *g_url;

static void uname_(char *out, size_t size, const char *what)
{
    snprintf(out, size, "metrics-%s-%ld-%" PRId64, what, (long)getpid(),
             tu_now_us());
}

/* The value of the sample `series` ("name{labels}" exactly as written) in
 * an OpenMetrics text; -1 when it is not there. */
static double sample(const char *text, const char *series)
{
    size_t n = strlen(series);
    const char *p = text;

    while ((p = strstr(p, series)) != NULL) {
        if ((p == text || p[-1] == '\n') && p[n] == ' ')
            return strtod(p + n + 1, NULL);
        p += n;
    }
    return -1;
}

static double hsample(sqllock_db *db, const char *series)
{
    char *text = NULL;
    double v;

    EXPECT_RC(db, sqllock_metrics_text(db, &text), SQLLOCK_OK, "scrape");
    v = sample(text, series);
    sqllock_free(text);
    return v;
}

#define ACQ(kind, outcome) \
    "sqllock_acquires_total{kind=\"" kind "\",outcome=\"" outcome "\"}"

/* Checks the text's form: families declared before their samples, with
 * TYPE and HELP, counters' samples ending in _total, valid names, the
 * last line "# EOF". */
static void check_format(const char *text)
{
    char fam[128] = "", type[32] = "", line[1024];
    const char *p = text, *nl;
    int help = 0, eof = 0;

    while (*p != '\0') {
        size_t len, i;

        nl = strchr(p, '\n');
        assert_non_null(nl);
        len = (size_t)(nl - p);
        assert_true(len < sizeof line);
        memcpy(line, p, len);
        line[len] = '\0';
        p = nl + 1;
        assert_false(eof);                       /* nothing after # EOF */
        if (strcmp(line, "# EOF") == 0) {
            eof = 1;
            continue;
        }
        if (strncmp(line, "# TYPE ", 7) == 0) {
            assert_int_equal(sscanf(line + 7, "%127s %31s", fam, type), 2);
            for (i = 0; fam[i] != '\0'; i++)
                assert_true((fam[i] >= 'a' && fam[i] <= 'z') ||
                            fam[i] == '_' || fam[i] == ':' ||
                            (i > 0 && fam[i] >= '0' && fam[i] <= '9'));
            assert_true(strcmp(type, "counter") == 0 ||
                        strcmp(type, "gauge") == 0 ||
                        strcmp(type, "histogram") == 0);
            /* A counter family is named without _total (OpenMetrics). */
            assert_null(strstr(fam, "_total"));
            help = 0;
            continue;
        }
        if (strncmp(line, "# HELP ", 7) == 0) {
            assert_memory_equal(line + 7, fam, strlen(fam));
            help = 1;
            continue;
        }
        if (strncmp(line, "# UNIT ", 7) == 0)
            continue;
        /* A sample of the family declared last, with its HELP. */
        assert_true(fam[0] != '\0' && help);
        assert_memory_equal(line, fam, strlen(fam));
        if (strcmp(type, "counter") == 0)
            assert_memory_equal(line + strlen(fam), "_total", 6);
        assert_non_null(strchr(line, ' '));
    }
    assert_true(eof);
}

/* ------------------------------------------------------------------ */
/* The log hook                                                        */
/* ------------------------------------------------------------------ */

#define EVENTS_MAX 64

typedef struct seen_event {
    int type, level, status;
    int64_t token, value_ms;
    char name[160];
    char msg[200];
} seen_event;

static pthread_mutex_t ev_mu = PTHREAD_MUTEX_INITIALIZER;
static seen_event events[EVENTS_MAX];
static int nevents;

static void hook(void *ctx, const sqllock_event *ev)
{
    (void)ctx;
    pthread_mutex_lock(&ev_mu);
    if (nevents < EVENTS_MAX) {
        seen_event *e = &events[nevents++];

        e->type = ev->type;
        e->level = ev->level;
        e->status = ev->status;
        e->token = ev->token;
        e->value_ms = ev->value_ms;
        snprintf(e->name, sizeof e->name, "%s",
                 ev->name != NULL ? ev->name : "");
        snprintf(e->msg, sizeof e->msg, "%s", ev->msg);
    }
    pthread_mutex_unlock(&ev_mu);
}

/* The number of events of `type` for `name` (and token, unless 0). */
static int count_events(int type, const char *name, int64_t token)
{
    int i, n = 0;

    pthread_mutex_lock(&ev_mu);
    for (i = 0; i < nevents; i++)
        if (events[i].type == type && strcmp(events[i].name, name) == 0 &&
            (token == 0 || events[i].token == token))
            n++;
    pthread_mutex_unlock(&ev_mu);
    return n;
}

/* ------------------------------------------------------------------ */
/* Contention: the sums of 4 processes                                 */
/* ------------------------------------------------------------------ */

#define PROCS 4
#define ROUNDS 25

static int child(const char *name, const char *dir, int i)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;
    sqllock_db *db = NULL;
    char path[512], *text = NULL;
    FILE *f;
    int r, v;

    if (sqllock_open(g_url, NULL, &db) != SQLLOCK_OK)
        return 10;
    o.ttl_ms = tu_scaled_ms(30000);
    o.backoff_max_ms = 50;
    if (sqllock_lease_new(db, name, &o, &l) != SQLLOCK_OK)
        return 11;
    snprintf(path, sizeof path, "%s/counter", dir);
    for (r = 0; r < ROUNDS; r++) {
        if (sqllock_lease_acquire(l, tu_scaled_ms(60000)) != SQLLOCK_OK)
            return 12;
        /* L1: read, pause, write + 1 under the lease. */
        f = fopen(path, "r");
        if (f == NULL || fscanf(f, "%d", &v) != 1)
            return 13;
        fclose(f);
        tu_sleep_ms(1);
        f = fopen(path, "w");
        if (f == NULL)
            return 14;
        fprintf(f, "%d\n", v + 1);
        fclose(f);
        if (sqllock_lease_release(l) != SQLLOCK_OK)
            return 15;
    }
    if (sqllock_metrics_text(db, &text) != SQLLOCK_OK)
        return 16;
    snprintf(path, sizeof path, "%s/metrics.%d", dir, i);
    f = fopen(path, "w");
    if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0)
        return 17;
    sqllock_free(text);
    sqllock_lease_free(l);
    sqllock_close(db);
    return 0;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf;
    long n;

    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void test_metrics_L1_contention_sums_exact(void **state)
{
    char name[128], path[512], *dir = tu_mkdtemp();
    double granted = 0, released = 0, holds = 0, held = 0, calls = 0;
    double pauses = 0, busy = 0;
    sqllock_db *db = tu_open_or_fail(g_url);
    sqllock_lease *l = NULL;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    pid_t pids[PROCS];
    FILE *f;
    int i, st, v = -1;

    (void)state;
    uname_(name, sizeof name, "contend");
    snprintf(path, sizeof path, "%s/counter", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("0\n", f);
    fclose(f);
    /* The parent holds the name as the children start, so that their
     * first acquires wait (pauses to count). */
    o.ttl_ms = tu_scaled_ms(30000);
    EXPECT_RC(db, sqllock_lease_new(db, name, &o, &l), SQLLOCK_OK, "new");
    EXPECT_RC(db, sqllock_lease_try_acquire(l), SQLLOCK_OK, "parent holds");
    for (i = 0; i < PROCS; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0)
            _exit(child(name, dir, i));
    }
    tu_sleep_ms(tu_scaled_ms(300));
    EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "parent releases");
    for (i = 0; i < PROCS; i++) {
        assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            fail_msg("child %d: status %d", i, st);
    }
    f = fopen(path, "r");
    assert_non_null(f);
    assert_int_equal(fscanf(f, "%d", &v), 1);
    fclose(f);
    assert_int_equal(v, PROCS * ROUNDS);           /* L1: exact */
    for (i = 0; i < PROCS; i++) {
        char *text;

        snprintf(path, sizeof path, "%s/metrics.%d", dir, i);
        text = slurp(path);
        check_format(text);
        granted += sample(text, ACQ("lease", "granted"));
        busy += sample(text, ACQ("lease", "busy"));
        released += sample(text,
                           "sqllock_releases_total{outcome=\"released\"}");
        holds += sample(text, "sqllock_hold_seconds_count");
        held += sample(text, "sqllock_leases_held");
        calls += sample(text, "sqllock_acquire_wait_seconds_count");
        pauses += sample(text, "sqllock_wait_wakeups_total") +
                  sample(text, "sqllock_wait_polls_total");
        free(text);
    }
    print_message("    %s: %d processes x %d: granted %.0f, released %.0f, "
                  "holds %.0f, pauses %.0f\n", sqllock_db_driver(db), PROCS,
                  ROUNDS, granted, released, holds, pauses);
    assert_true(granted == PROCS * ROUNDS);
    assert_true(busy == 0);
    assert_true(released == PROCS * ROUNDS);
    assert_true(holds == PROCS * ROUNDS);
    assert_true(held == 0);
    assert_true(calls == PROCS * ROUNDS);
    assert_true(pauses >= 1);
    sqllock_lease_free(l);
    sqllock_close(db);
    tu_rmdir(dir);
    free(dir);
}

/* ------------------------------------------------------------------ */
/* Outcomes, the gauge, the histogram                                  */
/* ------------------------------------------------------------------ */

static void test_metrics_outcomes_and_gauge(void **state)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_db *a = tu_open_or_fail(g_url), *b = tu_open_or_fail(g_url);
    sqllock_lease *la = NULL, *lb = NULL;
    char name[128];
    int64_t t0;

    (void)state;
    uname_(name, sizeof name, "outcomes");
    o.ttl_ms = tu_scaled_ms(30000);
    EXPECT_RC(a, sqllock_lease_new(a, name, &o, &la), SQLLOCK_OK, "new a");
    EXPECT_RC(b, sqllock_lease_new(b, name, &o, &lb), SQLLOCK_OK, "new b");
    assert_true(hsample(a, "sqllock_leases_held") == 0);
    EXPECT_RC(a, sqllock_lease_try_acquire(la), SQLLOCK_OK, "a");
    assert_true(hsample(a, ACQ("lease", "granted")) == 1);
    assert_true(hsample(a, "sqllock_leases_held") == 1);
    /* L8: a reentrant acquire is a granted call, not a second hold. */
    EXPECT_RC(a, sqllock_lease_try_acquire(la), SQLLOCK_OK, "a again");
    assert_true(hsample(a, ACQ("lease", "granted")) == 2);
    assert_true(hsample(a, "sqllock_leases_held") == 1);
    EXPECT_RC(b, sqllock_lease_try_acquire(lb), SQLLOCK_BUSY, "b busy");
    t0 = tu_now_us();
    EXPECT_RC(b, sqllock_lease_acquire(lb, 150), SQLLOCK_TIMEOUT, "b waits");
    assert_true(tu_now_us() - t0 >= 148000);      /* ms deadlines */
    assert_true(hsample(b, ACQ("lease", "busy")) == 1);
    assert_true(hsample(b, ACQ("lease", "timeout")) == 1);
    assert_true(hsample(b, ACQ("lease", "granted")) == 0);
    assert_true(hsample(b, "sqllock_acquire_wait_seconds_count") == 2);
    /* The timed-out call took >= 150 ms: above the 0.1 s bucket. */
    assert_true(hsample(b, "sqllock_acquire_wait_seconds_bucket{le=\"0.1\"}")
                <= 1);
    assert_true(hsample(b, "sqllock_acquire_wait_seconds_bucket{le=\"+Inf\"}")
                == 2);
    assert_true(hsample(b, "sqllock_wait_wakeups_total") +
                hsample(b, "sqllock_wait_polls_total") >= 1);
    /* An error outcome: a negative wait. */
    EXPECT_RC(b, sqllock_lease_acquire(lb, -1), SQLLOCK_EINVAL, "bad wait");
    assert_true(hsample(b, ACQ("lease", "error")) == 1);
    /* Counted down, then released. */
    EXPECT_RC(a, sqllock_lease_release(la), SQLLOCK_OK, "a count down");
    assert_true(hsample(a, "sqllock_releases_total{outcome=\"released\"}")
                == 0);
    EXPECT_RC(a, sqllock_lease_release(la), SQLLOCK_OK, "a releases");
    assert_true(hsample(a, "sqllock_releases_total{outcome=\"released\"}")
                == 1);
    assert_true(hsample(a, "sqllock_hold_seconds_count") == 1);
    assert_true(hsample(a, "sqllock_leases_held") == 0);
    /* A handle's counts are its own; the process's are the sums. */
    assert_true(hsample(NULL, ACQ("lease", "granted")) >=
                hsample(a, ACQ("lease", "granted")) +
                hsample(b, ACQ("lease", "granted")));
    sqllock_lease_free(la);
    sqllock_lease_free(lb);
    sqllock_close(a);
    sqllock_close(b);
}

/* ------------------------------------------------------------------ */
/* A loss, and the log hook                                            */
/* ------------------------------------------------------------------ */

static void test_metrics_L4_L7_loss_counted_once_and_logged(void **state)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_watch_options w = SQLLOCK_WATCH_OPTIONS_INIT;
    sqllock_force_options f = SQLLOCK_FORCE_OPTIONS_INIT;
    sqllock_db *a = tu_open_or_fail(g_url), *op = tu_open_or_fail(g_url);
    sqllock_lease *l = NULL;
    char name[128];
    int64_t token, until;

    (void)state;
    nevents = 0;
    assert_null(sqllock_log_set(hook, NULL, SQLLOCK_LOG_DEBUG));
    uname_(name, sizeof name, "loss");
    o.ttl_ms = tu_scaled_ms(3000);
    EXPECT_RC(a, sqllock_lease_new(a, name, &o, &l), SQLLOCK_OK, "new");
    EXPECT_RC(a, sqllock_lease_try_acquire(l), SQLLOCK_OK, "acquire");
    token = sqllock_lease_token(l);
    assert_int_equal(count_events(SQLLOCK_EVENT_ACQUIRED, name, token), 1);
    w.interval_ms = tu_scaled_ms(3000) / 10;
    EXPECT_RC(a, sqllock_lease_watch(l, &w), SQLLOCK_OK, "watch");
    /* An operator frees it while it is live (C5); the watchdog's next
     * renewal finds it gone: LOST. */
    f.live = 1;
    EXPECT_RC(op, sqllock_force_release(op, name, &f, NULL, NULL),
              SQLLOCK_OK, "force");
    until = tu_now_ms() + tu_scaled_ms(10000);
    while (sqllock_lease_state(l) != SQLLOCK_STATE_LOST &&
           tu_now_ms() < until)
        tu_sleep_ms(10);
    assert_int_equal(sqllock_lease_state(l), SQLLOCK_STATE_LOST);
    assert_true(hsample(a, "sqllock_losses_total{cause=\"taken_over\"}")
                == 1);
    assert_true(hsample(a, "sqllock_renewals_total{result=\"failed\"}")
                >= 1);
    assert_true(hsample(a, "sqllock_leases_held") == 0);
    /* The hook hears of it on the renewer's thread, after the state
     * changed: wait for it. */
    until = tu_now_ms() + tu_scaled_ms(10000);
    while (count_events(SQLLOCK_EVENT_LOST, name, token) == 0 &&
           tu_now_ms() < until)
        tu_sleep_ms(5);
    assert_int_equal(count_events(SQLLOCK_EVENT_LOST, name, token), 1);
    /* The release hears LOST (L4): counted as such, not as a second
     * loss or hold. */
    EXPECT_RC(a, sqllock_lease_release(l), SQLLOCK_LOST, "release");
    assert_true(hsample(a, "sqllock_releases_total{outcome=\"lost\"}") == 1);
    assert_true(hsample(a, "sqllock_losses_total{cause=\"taken_over\"}")
                == 1);
    assert_true(hsample(a, "sqllock_hold_seconds_count") == 1);
    assert_int_equal(count_events(SQLLOCK_EVENT_RELEASE_LOST, name, token),
                     1);
    /* A released lease: its event, with the hold's time. */
    EXPECT_RC(a, sqllock_lease_try_acquire(l), SQLLOCK_OK, "again");
    token = sqllock_lease_token(l);
    EXPECT_RC(a, sqllock_lease_release(l), SQLLOCK_OK, "release again");
    assert_int_equal(count_events(SQLLOCK_EVENT_RELEASED, name, token), 1);
    /* Above the hook's level: nothing. */
    assert_true(sqllock_log_set(hook, NULL, SQLLOCK_LOG_ERROR) == hook);
    EXPECT_RC(a, sqllock_lease_try_acquire(l), SQLLOCK_OK, "third");
    assert_int_equal(count_events(SQLLOCK_EVENT_ACQUIRED, name,
                                  sqllock_lease_token(l)), 0);
    EXPECT_RC(a, sqllock_lease_release(l), SQLLOCK_OK, "third release");
    /* A refusal: a driver that cannot borrow (registered here, a copy of
     * this handle's own without adopt()) refuses sqllock_borrow(). */
    {
        static const char *const schemes[] = { "nobor", NULL };
        static sqllock_driver copy;
        sqllock_db *bad = NULL;
        int i, refused = 0;

        assert_true(sqllock_log_set(hook, NULL, SQLLOCK_LOG_ERROR) == hook);
        copy = *sqllock_driver_find(sqllock_db_driver(a));
        copy.name = "nobor";
        copy.schemes = schemes;
        copy.adopt = NULL;
        EXPECT_RC(a, sqllock_driver_register(&copy), SQLLOCK_OK, "register");
        assert_int_equal(sqllock_borrow("nobor", &copy, NULL, &bad),
                         SQLLOCK_EUNSUPPORTED);
        sqllock_close(bad);
        pthread_mutex_lock(&ev_mu);
        for (i = 0; i < nevents; i++)
            if (events[i].type == SQLLOCK_EVENT_REFUSED &&
                events[i].status == SQLLOCK_EUNSUPPORTED &&
                strstr(events[i].msg, "cannot use an application's") != NULL)
                refused++;
        pthread_mutex_unlock(&ev_mu);
        assert_int_equal(refused, 1);
    }
    assert_true(sqllock_log_set(NULL, NULL, 0) == hook);
    assert_string_equal(sqllock_event_name(SQLLOCK_EVENT_LOST), "lost");
    assert_string_equal(sqllock_event_name(99), "unknown");
    sqllock_lease_free(l);
    sqllock_close(a);
    sqllock_close(op);
}

/* ------------------------------------------------------------------ */
/* Kinds, row locks, compare-and-set, the reaper                       */
/* ------------------------------------------------------------------ */

static void test_metrics_kinds_rows_cas_reap(void **state)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_txn_options to = SQLLOCK_TXN_OPTIONS_INIT;
    sqllock_db *a = tu_open_or_fail(g_url), *b = tu_open_or_fail(g_url);
    sqllock_sem *sem = NULL;
    sqllock_rw *rd = NULL, *wr = NULL;
    sqllock_lease *m[2] = { NULL, NULL }, *x = NULL;
    sqllock_txn *ta = NULL, *tb = NULL;
    char n1[128], n2[128], n3[128], n4[128], n5[128], key[128];
    const char *rows[1];
    int64_t ver = 0, reaped = 0, until;
    int got = 0, rc;

    (void)state;
    uname_(n1, sizeof n1, "sem");
    uname_(n2, sizeof n2, "rw");
    uname_(n3, sizeof n3, "many-a");
    uname_(n4, sizeof n4, "many-b");
    uname_(n5, sizeof n5, "expire");
    o.ttl_ms = tu_scaled_ms(30000);
    EXPECT_RC(a, sqllock_sem_new(a, n1, 2, &o, &sem), SQLLOCK_OK, "sem");
    EXPECT_RC(a, sqllock_sem_acquire(sem, 0), SQLLOCK_OK, "permit");
    assert_true(hsample(a, ACQ("semaphore", "granted")) == 1);
    EXPECT_RC(a, sqllock_sem_release(sem), SQLLOCK_OK, "permit back");
    EXPECT_RC(a, sqllock_rw_new(a, n2, 1, &o, &rd), SQLLOCK_OK, "reader");
    EXPECT_RC(b, sqllock_rw_new(b, n2, 0, &o, &wr), SQLLOCK_OK, "writer");
    EXPECT_RC(a, sqllock_rw_try_acquire(rd), SQLLOCK_OK, "shared");
    EXPECT_RC(b, sqllock_rw_try_acquire(wr), SQLLOCK_BUSY, "exclusive busy");
    assert_true(hsample(a, ACQ("shared", "granted")) == 1);
    assert_true(hsample(b, ACQ("exclusive", "busy")) == 1);
    EXPECT_RC(a, sqllock_rw_release(rd), SQLLOCK_OK, "shared release");
    EXPECT_RC(b, sqllock_rw_acquire(wr, tu_scaled_ms(10000)), SQLLOCK_OK,
              "exclusive");
    assert_true(hsample(b, ACQ("exclusive", "granted")) == 1);
    EXPECT_RC(b, sqllock_rw_release(wr), SQLLOCK_OK, "exclusive release");
    EXPECT_RC(a, sqllock_lease_new(a, n3, &o, &m[0]), SQLLOCK_OK, "m0");
    EXPECT_RC(a, sqllock_lease_new(a, n4, &o, &m[1]), SQLLOCK_OK, "m1");
    EXPECT_RC(a, sqllock_lease_acquire_many(a, m, 2, 0), SQLLOCK_OK, "many");
    assert_true(hsample(a, ACQ("many", "granted")) == 1);
    assert_true(hsample(a, "sqllock_leases_held") == 2);
    EXPECT_RC(a, sqllock_lease_release_many(a, m, 2), SQLLOCK_OK, "many rel");
    assert_true(hsample(a, "sqllock_leases_held") == 0);

    /* Row locks (R1): granted; NOWAIT on a locked row refused. SQLite's
     * transaction takes the whole database (R5): the second BEGIN
     * IMMEDIATE is refused the same way. */
    rows[0] = n1;
    to.lock_timeout_ms = 200;
    EXPECT_RC(a, sqllock_txn_begin(a, &to, &ta), SQLLOCK_OK, "begin a");
    EXPECT_RC(a, sqllock_txn_lock(ta, rows, 1, SQLLOCK_LOCK_WAIT, &got),
              SQLLOCK_OK, "lock a");
    assert_true(hsample(a, "sqllock_row_locks_total{outcome=\"granted\"}")
                == 1);
    rc = sqllock_txn_begin(b, &to, &tb);
    if (rc == SQLLOCK_OK) {
        rc = sqllock_txn_lock(tb, rows, 1, SQLLOCK_LOCK_NOWAIT, &got);
        assert_int_equal(rc, SQLLOCK_ELOCKED);
        assert_true(hsample(b, "sqllock_row_locks_total{outcome=\"busy\"}")
                    == 1);
        sqllock_txn_rollback(tb);
        sqllock_txn_free(tb);
    } else {
        assert_int_equal(rc, SQLLOCK_ELOCKED);   /* SQLite: at BEGIN */
    }
    EXPECT_RC(a, sqllock_txn_commit(ta), SQLLOCK_OK, "commit a");
    sqllock_txn_free(ta);

    /* Compare-and-set (O1): one write, one conflict. */
    uname_(key, sizeof key, "rec");
    EXPECT_RC(a, sqllock_record_create(a, key, "1", 1), SQLLOCK_OK,
              "create");
    ver = 1;                                    /* a new record's version */
    EXPECT_RC(a, sqllock_record_cas(a, key, ver, "2", 1, NULL), SQLLOCK_OK,
              "cas");
    EXPECT_RC(a, sqllock_record_cas(a, key, ver, "3", 1, NULL),
              SQLLOCK_CONFLICT, "stale cas");
    assert_true(hsample(a, "sqllock_cas_total{outcome=\"ok\"}") == 1);
    assert_true(hsample(a, "sqllock_cas_total{outcome=\"conflict\"}") == 1);

    /* The reaper (P1): an expired row deleted and counted. */
    o.ttl_ms = 300;
    EXPECT_RC(a, sqllock_lease_new(a, n5, &o, &x), SQLLOCK_OK, "short");
    EXPECT_RC(a, sqllock_lease_try_acquire(x), SQLLOCK_OK, "short acquire");
    until = tu_now_ms() + tu_scaled_ms(10000);
    do {
        tu_sleep_ms(200);
        EXPECT_RC(b, sqllock_reap(b, 0, 1000, &reaped), SQLLOCK_OK, "reap");
    } while (reaped == 0 && tu_now_ms() < until);
    assert_true(reaped >= 1);
    assert_true(hsample(b, "sqllock_reaped_rows_total") >= (double)reaped);
    assert_true(hsample(b, "sqllock_reaper_sweeps_total") >= 1);
    assert_true(hsample(b, "sqllock_statements_total{operation=\"reap\"}")
                >= 1);
    sqllock_lease_free(x);
    sqllock_lease_free(m[0]);
    sqllock_lease_free(m[1]);
    sqllock_sem_free(sem);
    sqllock_rw_free(rd);
    sqllock_rw_free(wr);
    sqllock_close(a);
    sqllock_close(b);
}

/* ------------------------------------------------------------------ */
/* D1b: round trips, counted by operation                              */
/* ------------------------------------------------------------------ */

static void test_metrics_D1b_round_trips_by_operation(void **state)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_db *a = tu_open_or_fail(g_url);
    sqllock_lease *l = NULL, *warm = NULL;
    char name[128], wname[128];
    double acq0, rel0, acq1, rel1;

    (void)state;
    uname_(name, sizeof name, "trips");
    uname_(wname, sizeof wname, "warm");
    o.ttl_ms = tu_scaled_ms(30000);
    /* A first acquire and release prepare the statements (a prepare is
     * not counted, but a first call may look its connection over). */
    EXPECT_RC(a, sqllock_lease_new(a, wname, &o, &warm), SQLLOCK_OK, "warm");
    EXPECT_RC(a, sqllock_lease_try_acquire(warm), SQLLOCK_OK, "warm acq");
    EXPECT_RC(a, sqllock_lease_release(warm), SQLLOCK_OK, "warm rel");
    EXPECT_RC(a, sqllock_lease_new(a, name, &o, &l), SQLLOCK_OK, "new");
    acq0 = hsample(a, "sqllock_round_trips_total{operation=\"acquire\"}");
    rel0 = hsample(a, "sqllock_round_trips_total{operation=\"release\"}");
    EXPECT_RC(a, sqllock_lease_try_acquire(l), SQLLOCK_OK, "acquire");
    acq1 = hsample(a, "sqllock_round_trips_total{operation=\"acquire\"}");
    EXPECT_RC(a, sqllock_lease_release(l), SQLLOCK_OK, "release");
    rel1 = hsample(a, "sqllock_round_trips_total{operation=\"release\"}");
    print_message("    %s: an uncontended acquire %.0f round trip(s), a "
                  "release %.0f\n", sqllock_db_driver(a), acq1 - acq0,
                  rel1 - rel0);
    assert_true(acq1 - acq0 >= 1);
    assert_true(rel1 - rel0 >= 1);
    if (strcmp(sqllock_db_driver(a), "postgres") == 0) {
        assert_true(acq1 - acq0 == 1);
        assert_true(rel1 - rel0 == 1);
    }
    sqllock_lease_free(l);
    sqllock_lease_free(warm);
    sqllock_close(a);
}

/* ------------------------------------------------------------------ */
/* The format, the process's text, bad input                           */
/* ------------------------------------------------------------------ */

static void test_metrics_format_and_bad_input(void **state)
{
    sqllock_db *a = tu_open_or_fail(g_url);
    char *text = NULL;
    FILE *f;

    (void)state;
    EXPECT_RC(a, sqllock_metrics_text(a, &text), SQLLOCK_OK, "handle");
    check_format(text);
    sqllock_free(text);
    EXPECT_RC(a, sqllock_metrics_text(NULL, &text), SQLLOCK_OK, "process");
    check_format(text);
    assert_non_null(strstr(text, "# TYPE sqllock_leader gauge\n"));
    sqllock_free(text);
    assert_int_equal(sqllock_metrics_text(a, NULL), SQLLOCK_EINVAL);
    assert_int_equal(sqllock_metrics_text(NULL, NULL), SQLLOCK_EINVAL);
    assert_int_equal(sqllock_metrics_write(a, NULL), SQLLOCK_EINVAL);
    assert_int_equal(sqllock_metrics_write(NULL, NULL), SQLLOCK_EINVAL);
    f = tmpfile();
    assert_non_null(f);
    EXPECT_RC(a, sqllock_metrics_write(a, f), SQLLOCK_OK, "write");
    assert_true(ftell(f) > 100);
    fclose(f);
    /* A write that fails says so. */
    f = fopen("/dev/full", "w");
    if (f != NULL) {
        setvbuf(f, NULL, _IONBF, 0);
        assert_int_equal(sqllock_metrics_write(a, f), SQLLOCK_ESYS);
        fclose(f);
    }
    sqllock_close(a);
}

/* ------------------------------------------------------------------ */
/* M4: the leader gauge                                                */
/* ------------------------------------------------------------------ */

static void test_metrics_M4_leader_gauge(void **state)
{
    sqllock_leader_options lo = SQLLOCK_LEADER_OPTIONS_INIT;
    sqllock_leader *L = NULL;
    char name[128], series[200], why[256];
    double granted0;
    int64_t until;

    (void)state;
    uname_(name, sizeof name, "leader");
    snprintf(series, sizeof series, "sqllock_leader{name=\"%s\"}", name);
    granted0 = hsample(NULL, ACQ("leader", "granted"));
    lo.ttl_ms = tu_scaled_ms(5000);
    EXPECT_RC(NULL, sqllock_leader_start(g_url, name, &lo, &L, why,
                                         sizeof why), SQLLOCK_OK, why);
    until = tu_now_ms() + tu_scaled_ms(10000);
    while (!sqllock_leader_is_leader(L) && tu_now_ms() < until)
        tu_sleep_ms(10);
    assert_true(sqllock_leader_is_leader(L));
    /* Alerting on sum(sqllock_leader{name}) > 1 needs this line. */
    assert_true(hsample(NULL, series) == 1);
    assert_true(hsample(NULL, ACQ("leader", "granted")) == granted0 + 1);
    sqllock_leader_stop(L);
    assert_true(hsample(NULL, series) == -1);      /* gone with it */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metrics_outcomes_and_gauge),
        cmocka_unit_test(test_metrics_L4_L7_loss_counted_once_and_logged),
        cmocka_unit_test(test_metrics_kinds_rows_cas_reap),
        cmocka_unit_test(test_metrics_D1b_round_trips_by_operation),
        cmocka_unit_test(test_metrics_format_and_bad_input),
        cmocka_unit_test(test_metrics_M4_leader_gauge),
        cmocka_unit_test(test_metrics_L1_contention_sums_exact),
    };

    return TU_RUN_PER_URL("metrics", &g_url, tests, tu_group_schema, NULL);
}
