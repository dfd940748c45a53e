/*
 * test_pooler.c -- sqllock behind the connection poolers production
 * PostgreSQL runs behind (issue 14; DESIGN C1, C2, L9), on real ones:
 * PgBouncer in transaction and in session mode and pgpool-II in raw and
 * streaming-replication mode, which scripts/poolers.sh starts in front of
 * the test PostgreSQL (scripts/test.sh exports SQLLOCK_TEST_POOLERS_DIR
 * and SQLLOCK_TEST_POOLERS_SCRIPT; the URLs are in DIR/env).
 *
 * The contract and exclusion suites themselves (test_conformance,
 * test_mutex, test_rowlock, test_optimistic, test_wakeup) also run
 * through both PgBouncer modes (the pooled_* ctest entries); this file
 * holds what only poolers have:
 *
 *  a  `sqllock run` from 8 processes at once through each PgBouncer mode:
 *     a counter kept in a file by the command ends exact, no two
 *     commands overlap, tokens grow, every run exits 0 -- and again
 *     after PgBouncer restarts (the unnamed statements leave nothing
 *     behind on the server connections);
 *  b  wake-ups: through PgBouncer's transaction mode the waiter never
 *     sends a LISTEN that would hear nothing, and still gets the lock by
 *     polling; with listen_host it LISTENs past the pooler and a release
 *     wakes it at once; in session mode LISTEN works as on a direct
 *     connection;
 *  c  a transaction pooler the URL does not declare: every call either
 *     works or fails with SQLLOCK_EPROXY naming pooler=transaction, and
 *     never runs another client's statement;
 *  d  the connection budget: a session pool too small for `run` (its
 *     holder and its renewer) makes it fail before it takes the lease
 *     or starts the command, saying so;
 *  e  pgpool-II in raw mode opens a transaction around a new backend's
 *     first statement and aborts it when the client leaves: no call may
 *     report success for what was not committed (C2) -- every grant
 *     that succeeded has its row, every compare-and-set that succeeded
 *     counted; the others fail with SQLLOCK_EPROXY;
 *  f  pgpool-II in streaming-replication mode works with pooler=pgpool
 *     (no LISTEN through it, where a notification stalls the next
 *     statement): exclusion, exact counter, and a release wakes a waiter
 *     that LISTENs past it (listen_host);
 *  g  a transaction the application opened on the native handle: a
 *     lease call refuses to run inside it (C2), sending nothing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdatomic.h>
#include <pthread.h>
#include <sys/stat.h>
#include <cmocka.h>

#include <libpq-fe.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"

#ifndef SQLLOCK_CLI_PATH
#error "SQLLOCK_CLI_PATH must name the built sqllock tool"
#endif

#define ASSERT_RC(expr, want, db) EXPECT_RC((db), (expr), (want), #expr)

static char g_dir[1024], g_script[1024];
static char g_tx[1024], g_tx_poll[1024], g_undeclared[1024];
static char g_session[1024], g_tight[1024];
static char g_pgpool_raw[1024], g_pgpool_sr[1024], g_pgpool_sr_poll[1024];
static char g_direct[1024];
static int g_slow = 1;           /* tu_slowdown() */

/* ------------------------------------------------------------------ */

static sqllock_db *open_url(const char *url)
{
    sqllock_db *db = NULL;
    int rc = sqllock_open(url, NULL, &db);

    if (rc != SQLLOCK_OK)
        fail_msg("open %s: %s: %s", url, sqllock_errname(rc),
                 sqllock_errmsg(db));
    return db;
}

static sqllock_lease *new_lease(sqllock_db *db, const char *name,
                                int64_t ttl_ms, int64_t backoff_ms)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;

    o.ttl_ms = ttl_ms;
    if (backoff_ms > 0) {
        o.backoff_min_ms = backoff_ms;
        o.backoff_max_ms = backoff_ms;
    }
    EXPECT_RC(db, sqllock_lease_new(db, name, &o, &l), SQLLOCK_OK,
              "lease_new");
    return l;
}

/* Runs `poolers.sh CMD DIR`; fails the test when it fails. */
static void poolers(const char *cmd)
{
    char buf[3000];
    int rc;

    snprintf(buf, sizeof buf, "bash '%s' %s '%s' >&2", g_script, cmd, g_dir);
    fflush(stdout);
    rc = system(buf);
    if (rc != 0)
        fail_msg("%s failed (status %d)", buf, rc);
}

/* ------------------------------------------------------------------ */
/* a: `sqllock run` from 8 processes                                    */
/* ------------------------------------------------------------------ */

#define RUN_PROCS 8
#define RUN_ITERS 6

/* The command each run executes under the lock: it records an overlap
 * when another command is inside (mkdir is atomic), appends its token,
 * and increments the counter file with a read, a pause and a write. */
static const char RUN_BODY[] =
    "if ! mkdir \"$D/in\" 2>/dev/null; then echo x >> \"$D/overlaps\"; fi; "
    "echo \"$SQLLOCK_TOKEN\" >> \"$D/tokens\"; "
    "n=$(cat \"$D/count\"); sleep 0.01; echo $((n + 1)) > \"$D/count\"; "
    "rmdir \"$D/in\" 2>/dev/null; true";

/* 8 shell loops of RUN_ITERS `sqllock run`s each, at once, through `url`;
 * checks the exit codes, the counter, overlaps and token order. */
static void run_contention(const char *url, const char *label)
{
    char *dir = tu_mkdtemp(), path[1400], loop[4096], name[64];
    char buf[65536], out[1400], err[1400];
    pid_t pids[RUN_PROCS];
    const char *argv[5];
    int64_t t0 = tu_now_ms(), prev = 0, tok;
    int i, code, count, runs = 0, bad = 0;
    char *p;
    FILE *fp;

    assert_non_null(dir);
    snprintf(name, sizeof name, "pooler-run-%ld-%s", (long)getpid(), label);
    snprintf(path, sizeof path, "%s/count", dir);
    fp = fopen(path, "w");
    assert_non_null(fp);
    fputs("0\n", fp);
    fclose(fp);
    /* Each loop records the exit code of every run. */
    snprintf(loop, sizeof loop,
             "export D='%s'; for i in $(seq %d); do "
             "SQLLOCK_DB=\"$U\" '%s' run '%s' --ttl 20s --wait 60s -- "
             "sh -c '%s'; echo $? >> \"$D/rc\"; done",
             dir, RUN_ITERS, SQLLOCK_CLI_PATH, name, RUN_BODY);
    setenv("U", url, 1);
    argv[0] = "/bin/sh";
    argv[1] = "-c";
    argv[2] = loop;
    argv[3] = NULL;
    for (i = 0; i < RUN_PROCS; i++) {
        snprintf(out, sizeof out, "%s/out%d", dir, i);
        snprintf(err, sizeof err, "%s/err%d", dir, i);
        pids[i] = tu_spawn(argv, out, err, 1);
    }
    for (i = 0; i < RUN_PROCS; i++) {
        code = tu_wait_for(pids[i], 240000);
        if (code != 0) {
            snprintf(err, sizeof err, "%s/err%d", dir, i);
            tu_read_file(err, buf, sizeof buf);
            if (code < 0)
                tu_kill_wait(pids[i]);
            fail_msg("%s: loop %d ended %d: %s", label, i, code, buf);
        }
    }
    unsetenv("U");
    snprintf(path, sizeof path, "%s/rc", dir);
    tu_read_file(path, buf, sizeof buf);
    for (p = buf; *p != '\0'; p = strchr(p, '\n') + 1) {
        if (atoi(p) != 0)
            bad++;
        runs++;
        if (strchr(p, '\n') == NULL)
            break;
    }
    if (bad != 0) {
        snprintf(err, sizeof err, "%s/err0", dir);
        tu_read_file(err, buf, sizeof buf);
        fail_msg("%s: %d of %d runs did not exit 0 (loop 0 said: %s)", label,
                 bad, runs, buf);
    }
    assert_int_equal(runs, RUN_PROCS * RUN_ITERS);
    snprintf(path, sizeof path, "%s/count", dir);
    tu_read_file(path, buf, sizeof buf);
    count = atoi(buf);
    snprintf(path, sizeof path, "%s/overlaps", dir);
    if (tu_read_file(path, buf, sizeof buf) != 0)
        fail_msg("%s: commands overlapped: %s", label, buf);
    if (count != RUN_PROCS * RUN_ITERS)
        fail_msg("%s: the counter is %d after %d runs: lost updates", label,
                 count, RUN_PROCS * RUN_ITERS);
    /* L5: each command's token is above the one before it. */
    snprintf(path, sizeof path, "%s/tokens", dir);
    tu_read_file(path, buf, sizeof buf);
    for (p = buf; *p != '\0';) {
        tok = strtoll(p, &p, 10);
        if (tok <= prev)
            fail_msg("%s: token %lld after %lld", label, (long long)tok,
                     (long long)prev);
        prev = tok;
        while (*p == '\n')
            p++;
    }
    printf("    a [%s] %d x %d `sqllock run`: counter %d, 0 overlaps, "
           "tokens grow, %lld ms\n", label, RUN_PROCS, RUN_ITERS, count,
           (long long)(tu_now_ms() - t0));
    for (i = 0; i < RUN_PROCS; i++) {
        snprintf(path, sizeof path, "%s/out%d", dir, i);
        unlink(path);
        snprintf(path, sizeof path, "%s/err%d", dir, i);
        unlink(path);
    }
    tu_rmdir(dir);
    free(dir);
}

/* C1: `run` through PgBouncer in transaction mode, then PgBouncer is
 * restarted (every client and server connection closed), and again: with
 * named prepared statements every command but the first failed after a
 * restart with 42P05 ("prepared statement sqllock_0 already exists"). An
 * open handle hears the restart once (ECONNECT) and then works. */
static void test_pooler_a_C1_run_transaction_mode(void **state)
{
    sqllock_db *db;
    sqllock_lease *l;
    int rc;
    (void)state;

    run_contention(g_tx, "transaction");
    db = open_url(g_tx);
    l = new_lease(db, "pooler-restart", 30000, 0);
    EXPECT_RC(db, sqllock_lease_acquire(l, 5000), SQLLOCK_OK, "acquire");
    poolers("restart-pgbouncer");
    rc = sqllock_lease_renew(l);
    if (rc != SQLLOCK_OK && rc != SQLLOCK_ECONNECT)
        fail_msg("renew after a PgBouncer restart: %s: %s",
                 sqllock_errname(rc), sqllock_errmsg(db));
    EXPECT_RC(db, sqllock_lease_renew(l), SQLLOCK_OK, "renew again");
    EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
    sqllock_lease_free(l);
    sqllock_close(db);
    run_contention(g_tx, "transaction, after a PgBouncer restart");
}

static void test_pooler_a_C1_run_session_mode(void **state)
{
    (void)state;
    run_contention(g_session, "session");
}

/* ------------------------------------------------------------------ */
/* b: wake-ups                                                          */
/* ------------------------------------------------------------------ */

typedef struct waiter {
    char url[1024];
    char name[128];
    int64_t backoff_ms;
    _Atomic int rc;
    _Atomic int64_t got_at;
    _Atomic int done;
} waiter;

static void *waiter_main(void *p)
{
    waiter *w = p;
    sqllock_db *db = NULL;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;
    int rc;

    rc = sqllock_open(w->url, NULL, &db);
    if (rc == SQLLOCK_OK) {
        o.ttl_ms = 10000;
        o.backoff_min_ms = w->backoff_ms;
        o.backoff_max_ms = w->backoff_ms;
        rc = sqllock_lease_new(db, w->name, &o, &l);
    }
    if (rc == SQLLOCK_OK)
        rc = sqllock_lease_acquire(l, 60000 * (int64_t)g_slow);
    atomic_store(&w->got_at, tu_now_ms());
    if (rc == SQLLOCK_OK)
        rc = sqllock_lease_release(l);
    atomic_store(&w->rc, rc);
    atomic_store(&w->done, 1);
    sqllock_lease_free(l);
    sqllock_close(db);
    return NULL;
}

/* The waiter of handoff_ms() asleep between its tries, as the library
 * reports it (sqllock__on_backoff): -1 until it sleeps, then 1 when it
 * sleeps LISTENing for a notification, 0 when it sleeps to poll again. */
static char g_asleep_name[128];
static atomic_int g_asleep = -1;

static void on_backoff(const char *name, int64_t sleep_ms, int listening)
{
    (void)sleep_ms;
    if (strcmp(name, g_asleep_name) == 0)
        atomic_store(&g_asleep, listening);
}

/* Holds `name` through `url`, starts a waiter through `wurl` with a
 * backoff of `backoff_ms`, releases once it is asleep in its backoff --
 * LISTENing when `listening`, polling otherwise (a waiter asleep the
 * other way fails the test) -- and returns how long after the release
 * the waiter had the lock. */
static int64_t handoff_ms(const char *url, const char *wurl, const char *name,
                          int64_t backoff_ms, int listening)
{
    sqllock_db *db = open_url(url);
    /* Longer than the wait below for the waiter to fall asleep, whatever
     * the slowdown. */
    sqllock_lease *l = new_lease(db, name, 30000 * (int64_t)g_slow, 0);
    waiter *w = calloc(1, sizeof *w);
    pthread_t th;
    int64_t released, took, deadline;
    int asleep;

    assert_non_null(w);
    snprintf(g_asleep_name, sizeof g_asleep_name, "%s", name);
    atomic_store(&g_asleep, -1);
    atomic_store(&sqllock__on_backoff, on_backoff);
    snprintf(w->url, sizeof w->url, "%s", wurl);
    snprintf(w->name, sizeof w->name, "%s", name);
    w->backoff_ms = backoff_ms;
    EXPECT_RC(db, sqllock_lease_acquire(l, 5000), SQLLOCK_OK, "acquire");
    assert_int_equal(pthread_create(&th, NULL, waiter_main, w), 0);
    /* The waiter's first try fails; it LISTENs (where it can), tries
     * again and sleeps for its backoff: release only then, so that only
     * a wake-up (or, polling, its next try) can give it the lock. */
    deadline = tu_now_ms() + 20000 * (int64_t)g_slow;
    while ((asleep = atomic_load(&g_asleep)) < 0 && !atomic_load(&w->done) &&
           tu_now_ms() < deadline)
        tu_sleep_ms(2);
    if (asleep != listening && atomic_load(&w->done))
        fail_msg("the waiter through %s ended with %s before it slept "
                 "between tries", wurl, sqllock_errname(atomic_load(&w->rc)));
    if (asleep != listening)
        fail_msg("the waiter through %s %s, want it asleep %s",
                 wurl, asleep < 0 ? "never went to sleep between tries"
                 : asleep ? "sleeps LISTENing" : "sleeps polling",
                 listening ? "LISTENing" : "polling");
    released = tu_now_ms();
    EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
    pthread_join(th, NULL);
    if (atomic_load(&w->rc) != SQLLOCK_OK)
        fail_msg("the waiter ended with %s", sqllock_errname(atomic_load(
                 &w->rc)));
    took = atomic_load(&w->got_at) - released;
    free(w);
    sqllock_lease_free(l);
    sqllock_close(db);
    return took;
}

/* L9 + C1 through PgBouncer: the three cases, each asserted. */
static void test_pooler_b_L9_wakeups(void **state)
{
    sqllock_db *db;
    char name[128], channel[SQLLOCK__CHANNEL_MAX];
    int64_t t;
    (void)state;

    /* Transaction mode without listen_host: no LISTEN is ever sent on
     * the pooled connection (it would hear nothing); the waiter polls. */
    db = open_url(g_tx_poll);
    snprintf(name, sizeof name, "pooler-wake-poll-%ld", (long)getpid());
    sqllock__wake_channel(name, channel);
    assert_int_equal(sqllock__listen(db, channel, 1), SQLLOCK_EUNSUPPORTED);
    sqllock_close(db);
    t = handoff_ms(g_direct, g_tx_poll, name, 300, 0);
    printf("    b [transaction, polling] the waiter (backoff 300 ms) had "
           "the lock %lld ms after the release\n", (long long)t);
    if (t > 2000 * g_slow)
        fail_msg("a polling waiter took %lld ms (backoff 300 ms)",
                 (long long)t);

    /* Transaction mode with listen_host: the waiter LISTENs past the
     * pooler; with a backoff of 20 s (times the slowdown, so that it
     * stays far above the bound below) only a notification can wake it
     * in time. */
    snprintf(name, sizeof name, "pooler-wake-listen-%ld", (long)getpid());
    t = handoff_ms(g_direct, g_tx, name, 20000 * (int64_t)g_slow, 1);
    printf("    b [transaction, listen_host] woken %lld ms after the "
           "release (backoff %d s)\n", (long long)t, 20 * g_slow);
    if (t > 1500 * g_slow)
        fail_msg("L9: through PgBouncer with listen_host a release took "
                 "%lld ms to wake the waiter (backoff %d s): no NOTIFY "
                 "reached it", (long long)t, 20 * g_slow);

    /* Session mode: LISTEN on the pooled session itself. */
    snprintf(name, sizeof name, "pooler-wake-session-%ld", (long)getpid());
    t = handoff_ms(g_direct, g_session, name, 20000 * (int64_t)g_slow,
                   1);
    printf("    b [session] woken %lld ms after the release (backoff "
           "%d s)\n", (long long)t, 20 * g_slow);
    if (t > 1500 * g_slow)
        fail_msg("L9: through PgBouncer in session mode a release took "
                 "%lld ms to wake the waiter (backoff %d s)", (long long)t,
                 20 * g_slow);
}

/* ------------------------------------------------------------------ */
/* c: a transaction pooler the URL does not declare                     */
/* ------------------------------------------------------------------ */

#define UND_PROCS 8
#define UND_ITERS 30

typedef struct und_shared {
    _Atomic int ok, busy, eproxy, other;
    _Atomic int holders, overlaps;
    int64_t counter;               /* read, paused, written under the lock */
    _Atomic int named;             /* EPROXY messages naming the remedy */
    char other_msg[600];
} und_shared;

static int undeclared_child(und_shared *sh, int k)
{
    sqllock_db *db = NULL;
    sqllock_lease *l = NULL;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    int i, rc;

    o.ttl_ms = 30000;
    for (i = 0; i < UND_ITERS; i++) {
        if (db == NULL) {
            rc = sqllock_open(g_undeclared, NULL, &db);
            if (rc == SQLLOCK_OK)
                rc = sqllock_lease_new(db, "pooler-undeclared", &o, &l);
            if (rc != SQLLOCK_OK) {
                atomic_fetch_add(&sh->other, 1);
                snprintf(sh->other_msg, sizeof sh->other_msg, "open: %s",
                         sqllock_errmsg(db));
                return 1;
            }
        }
        rc = sqllock_lease_try_acquire(l);
        if (rc == SQLLOCK_OK) {
            int64_t v;
            if (atomic_fetch_add(&sh->holders, 1) != 0)
                atomic_fetch_add(&sh->overlaps, 1);
            v = sh->counter;
            tu_sleep_us(500);
            sh->counter = v + 1;
            atomic_fetch_sub(&sh->holders, 1);
            atomic_fetch_add(&sh->ok, 1);
            rc = sqllock_lease_release(l);
            if (rc != SQLLOCK_OK && rc != SQLLOCK_EPROXY) {
                atomic_fetch_add(&sh->other, 1);
                snprintf(sh->other_msg, sizeof sh->other_msg, "release: "
                         "%s: %s", sqllock_errname(rc), sqllock_errmsg(db));
            }
        } else if (rc == SQLLOCK_BUSY) {
            atomic_fetch_add(&sh->busy, 1);
        } else if (rc == SQLLOCK_EPROXY) {
            atomic_fetch_add(&sh->eproxy, 1);
            if (strstr(sqllock_errmsg(db), "pooler=transaction") != NULL)
                atomic_fetch_add(&sh->named, 1);
        } else {
            atomic_fetch_add(&sh->other, 1);
            snprintf(sh->other_msg, sizeof sh->other_msg, "%d: %s: %s", k,
                     sqllock_errname(rc), sqllock_errmsg(db));
        }
        /* A lease whose release failed stays held until its ttl: drop
         * the handle and start afresh, as an application would. */
        if (sqllock_lease_count(l) > 0 || rc == SQLLOCK_EPROXY) {
            sqllock_lease_free(l);
            sqllock_close(db);
            l = NULL;
            db = NULL;
            if (rc == SQLLOCK_OK) {
                /* Its row stays for 30 s: clear it through a direct
                 * connection, as an operator would. */
                sqllock_db *d = open_url(g_direct);
                sqllock_value arg = sqllock__text("pooler-undeclared");
                sqllock__exec_sql(d, "DELETE FROM sqllock_lease WHERE "
                                  "name = $1", &arg, 1, NULL, NULL, NULL);
                sqllock_close(d);
            }
        }
        tu_sleep_us(200);
    }
    sqllock_lease_free(l);
    sqllock_close(db);
    return 0;
}

/* C1: through PgBouncer's transaction mode without pooler= the named
 * statements of a connection end up on server connections that do not
 * have them. Each name carries 64 random bits, so a statement never runs
 * another client's statement of the same name: every call works or
 * fails with SQLLOCK_EPROXY, whose message names the remedy. */
static void test_pooler_c_C1_undeclared_transaction_pooler(void **state)
{
    und_shared *sh = tu_shared_map(sizeof *sh);
    pid_t pids[UND_PROCS];
    int i, st;
    (void)state;

    for (i = 0; i < UND_PROCS; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0)
            _exit(undeclared_child(sh, i));
    }
    for (i = 0; i < UND_PROCS; i++) {
        assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
    }
    printf("    c [undeclared] %d x %d tries: %d OK, %d BUSY, %d EPROXY "
           "(%d naming pooler=transaction), %d other\n", UND_PROCS,
           UND_ITERS, atomic_load(&sh->ok), atomic_load(&sh->busy),
           atomic_load(&sh->eproxy), atomic_load(&sh->named),
           atomic_load(&sh->other));
    if (atomic_load(&sh->other) != 0)
        fail_msg("a call failed otherwise than with SQLLOCK_EPROXY: %s",
                 sh->other_msg);
    assert_int_equal(atomic_load(&sh->overlaps), 0);
    assert_int_equal(sh->counter, atomic_load(&sh->ok));
    assert_int_equal(atomic_load(&sh->named), atomic_load(&sh->eproxy));
    munmap(sh, sizeof *sh);
}

/* ------------------------------------------------------------------ */
/* d: the connection budget                                             */
/* ------------------------------------------------------------------ */

/* Through a session pool of one server connection, `sqllock run` needs
 * two (its connection and its renewer's): it must fail before it takes
 * the lease or runs the command, and say why, instead of losing the
 * lease later while the renewer waits in the pooler's queue. The API the
 * same: sqllock_watch_prepare() fails within the connect timeout. */
static void test_pooler_d_run_needs_two_server_connections(void **state)
{
    sqllock_options opts = SQLLOCK_OPTIONS_INIT;
    sqllock_db *db = NULL;
    char *dir = tu_mkdtemp(), marker[1200], out[1200], err[1200];
    char buf[8192], cmd[1400];
    const char *argv[12];
    int64_t t0;
    tu_row r;
    int code, rc;
    (void)state;

    assert_non_null(dir);
    opts.connect_timeout_ms = 1000 * g_slow;
    rc = sqllock_open(g_tight, &opts, &db);
    EXPECT_RC(db, rc, SQLLOCK_OK, "open through a pool of one");
    t0 = tu_now_ms();
    rc = sqllock_watch_prepare(db);
    t0 = tu_now_ms() - t0;
    EXPECT_RC(db, rc, SQLLOCK_ECONNECT, "watch_prepare, pool exhausted");
    expect_msg_any(db, "watch_prepare", "pool");
    printf("    d [session pool of 1] sqllock_watch_prepare: %s after "
           "%lld ms\n", sqllock_errname(rc), (long long)t0);
    if (t0 > 3000 * g_slow)
        fail_msg("the renewer's connect took %lld ms to fail (connect "
                 "timeout %lld ms)", (long long)t0,
                 (long long)opts.connect_timeout_ms);
    sqllock_close(db);

    snprintf(marker, sizeof marker, "%s/ran", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(err, sizeof err, "%s/err", dir);
    snprintf(cmd, sizeof cmd, "touch '%s'", marker);
    argv[0] = SQLLOCK_CLI_PATH;
    argv[1] = "--db";
    argv[2] = g_tight;
    argv[3] = "run";
    argv[4] = "pooler-budget";
    argv[5] = "--ttl";
    argv[6] = "3s";
    argv[7] = "--";
    argv[8] = "sh";
    argv[9] = "-c";
    argv[10] = cmd;
    argv[11] = NULL;
    t0 = tu_now_ms();
    code = tu_wait_for(tu_spawn(argv, out, err, 1), 60000);
    t0 = tu_now_ms() - t0;
    tu_read_file(err, buf, sizeof buf);
    printf("    d [session pool of 1] `sqllock run`: exit %d after %lld "
           "ms: %s", code, (long long)t0, buf);
    assert_int_equal(code, 69);
    if (!tu_contains_ci(buf, "pool"))
        fail_msg("the message does not name the pool: %s", buf);
    if (access(marker, F_OK) == 0)
        fail_msg("the command ran although the renewer had no connection");
    /* No lease was taken. */
    db = open_url(g_direct);
    ASSERT_RC(tu_find(db, "pooler-budget", &r), SQLLOCK_OK, db);
    assert_int_equal(r.found, 0);
    sqllock_close(db);
    unlink(marker);
    unlink(out);
    unlink(err);
    tu_rmdir(dir);
    free(dir);
}

/* ------------------------------------------------------------------ */
/* e, f: pgpool-II                                                      */
/* ------------------------------------------------------------------ */

#define POOL_TRIES 40

typedef struct cas_ctx {
    char buf[32];
} cas_ctx;

static int add_one(void *ctx, const void *old, size_t old_len,
                   const void **out, size_t *out_len)
{
    cas_ctx *c = ctx;
    char tmp[32];
    long long v = 0;

    if (old != NULL && old_len > 0 && old_len < sizeof tmp) {
        memcpy(tmp, old, old_len);
        tmp[old_len] = '\0';
        v = atoll(tmp);
    }
    snprintf(c->buf, sizeof c->buf, "%lld", v + 1);
    *out = c->buf;
    *out_len = strlen(c->buf);
    return SQLLOCK_OK;
}

/* C2: pgpool-II in raw mode. Each try opens a new client connection (a
 * cron job's); a new backend's first statement runs inside a transaction
 * pgpool opened and aborts when the client leaves. Every grant reported
 * OK must have its row, with its owner and token, after the client has
 * gone; every compare-and-set reported OK must have counted. */
static void test_pooler_e_C2_pgpool_raw_no_false_success(void **state)
{
    sqllock_db *direct = open_url(g_direct), *db;
    sqllock_lease *l;
    char name[128], key[128], owner[64], dir_out[1200], dir_err[1200];
    char buf[8192], val_owner[64], val_token[32];
    char *dir = tu_mkdtemp();
    const char *argv[9];
    int64_t token;
    int i, rc, code, ok = 0, eproxy = 0, cas_ok = 0, cas_eproxy = 0;
    int cli_ok = 0, cli_failed = 0;
    void *val = NULL;
    size_t len = 0;
    tu_row r;
    (void)state;

    assert_non_null(dir);
    snprintf(key, sizeof key, "pooler-pgpool-%ld", (long)getpid());
    for (i = 0; i < POOL_TRIES; i++) {
        cas_ctx c;
        int step;

        snprintf(name, sizeof name, "pooler-pgpool-%ld-%d", (long)getpid(),
                 i);
        db = open_url(g_pgpool_raw);
        l = new_lease(db, name, 60000, 0);
        owner[0] = '\0';
        token = 0;
        /* Half the clients acquire first, half write first: each kind
         * of statement is some new backend's first. */
        for (step = 0; step < 2; step++) {
            if ((step == 0) == (i % 2 == 0)) {
                rc = sqllock_lease_try_acquire(l);
                if (rc == SQLLOCK_OK) {
                    ok++;
                    token = sqllock_lease_token(l);
                    snprintf(owner, sizeof owner, "%s",
                             sqllock_lease_owner(l));
                } else if (rc == SQLLOCK_EPROXY) {
                    eproxy++;
                } else {
                    fail_msg("acquire through pgpool raw: %s: %s",
                             sqllock_errname(rc), sqllock_errmsg(db));
                }
            } else {
                rc = sqllock_record_update(db, key, add_one, &c, NULL, NULL);
                if (rc == SQLLOCK_OK)
                    cas_ok++;
                else if (rc == SQLLOCK_EPROXY)
                    cas_eproxy++;
                else
                    fail_msg("record update through pgpool raw: %s: %s",
                             sqllock_errname(rc), sqllock_errmsg(db));
            }
        }
        /* The lease is left held: the client goes, as a cron job's
         * `sqllock acquire` does. */
        sqllock_lease_free(l);
        sqllock_close(db);
        ASSERT_RC(tu_find(direct, name, &r), SQLLOCK_OK, direct);
        if (owner[0] != '\0' && (!r.found || strcmp(r.owner, owner) != 0 ||
                                 r.token != token))
            fail_msg("C2: try %d: the acquire reported OK (token %lld) but "
                     "the row is %s", i, (long long)token,
                     r.found ? "another's" : "not there");
        if (owner[0] == '\0' && r.found)
            fail_msg("C2: try %d: the acquire failed but its row is there",
                     i);
    }
    rc = sqllock_record_get(direct, key, &val, &len, NULL);
    if (cas_ok > 0) {
        EXPECT_RC(direct, rc, SQLLOCK_OK, "record_get");
        if (atoll(val) != cas_ok)
            fail_msg("C2: %d compare-and-set writes reported OK, the "
                     "counter is %s", cas_ok, (char *)val);
    }
    sqllock_free(val);
    /* The tool, as a cron job runs it: exit 0 and a token only for a
     * grant that is there. */
    snprintf(dir_out, sizeof dir_out, "%s/out", dir);
    snprintf(dir_err, sizeof dir_err, "%s/err", dir);
    for (i = 0; i < 12; i++) {
        snprintf(name, sizeof name, "pooler-pgpool-cli-%ld-%d",
                 (long)getpid(), i);
        argv[0] = SQLLOCK_CLI_PATH;
        argv[1] = "--db";
        argv[2] = g_pgpool_raw;
        argv[3] = "acquire";
        argv[4] = name;
        argv[5] = "--ttl";
        argv[6] = "60s";
        argv[7] = NULL;
        code = tu_wait_for(tu_spawn(argv, dir_out, dir_err, 1), 60000);
        ASSERT_RC(tu_find(direct, name, &r), SQLLOCK_OK, direct);
        if (code == 0) {
            tu_read_file(dir_out, buf, sizeof buf);
            if (!tu_get_var(buf, "SQLLOCK_OWNER", val_owner,
                            sizeof val_owner) ||
                !tu_get_var(buf, "SQLLOCK_TOKEN", val_token,
                            sizeof val_token))
                fail_msg("acquire printed no owner and token: %s", buf);
            if (!r.found || strcmp(r.owner, val_owner) != 0 ||
                r.token != atoll(val_token))
                fail_msg("C2: `sqllock acquire` exited 0 with token %s, but "
                         "the row is %s", val_token,
                         r.found ? "another's" : "not there");
            cli_ok++;
        } else {
            tu_read_file(dir_err, buf, sizeof buf);
            if (code != 69 || !tu_contains_ci(buf, "not committed"))
                fail_msg("`sqllock acquire` through pgpool raw: exit %d: %s",
                         code, buf);
            if (r.found)
                fail_msg("C2: `sqllock acquire` failed, but its row is "
                         "there");
            cli_failed++;
        }
    }
    unlink(dir_out);
    unlink(dir_err);
    tu_rmdir(dir);
    free(dir);
    printf("    e [pgpool-II raw] %d new clients: %d grants OK (each row "
           "there), %d EPROXY (none there); %d writes OK = the counter, %d "
           "EPROXY; `sqllock acquire`: %d exit 0 (row there), %d exit 69 "
           "(none)\n", POOL_TRIES, ok, eproxy, cas_ok, cas_eproxy, cli_ok,
           cli_failed);
    if (eproxy + cas_eproxy + cli_failed == 0)
        printf("    e: pgpool-II opened no transaction this time: every "
               "backend was a cached one\n");
    sqllock_close(direct);
}

/* 4 processes x 20 holds of one name through `url`, each on a new
 * connection, with a counter read, paused and written under the lease:
 * returns the counter (it must be 80); fails on any error or overlap. */
static int64_t pgpool_contention(const char *url, const char *name)
{
    und_shared *sh = tu_shared_map(sizeof *sh);
    pid_t pids[4];
    int64_t n;
    int i, st;

    for (i = 0; i < 4; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            sqllock_db *db = NULL;
            sqllock_lease *l = NULL;
            sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
            sqllock_options dbo = SQLLOCK_OPTIONS_INIT;
            int k, rc;

            o.ttl_ms = 30000;
            o.backoff_max_ms = 100;
            /* The stall this guards against lasts the whole statement
             * timeout: keep it short, so that it fails the test fast. */
            dbo.statement_timeout_ms = 5000 * g_slow;
            for (k = 0; k < 20; k++) {
                rc = sqllock_open(url, &dbo, &db);
                if (rc == SQLLOCK_OK)
                    rc = sqllock_lease_new(db, name, &o, &l);
                if (rc == SQLLOCK_OK)
                    rc = sqllock_lease_acquire(l, 60000);
                if (rc == SQLLOCK_OK) {
                    int64_t v;
                    if (atomic_fetch_add(&sh->holders, 1) != 0)
                        atomic_fetch_add(&sh->overlaps, 1);
                    v = sh->counter;
                    tu_sleep_us(1000);
                    sh->counter = v + 1;
                    atomic_fetch_sub(&sh->holders, 1);
                    rc = sqllock_lease_release(l);
                }
                if (rc == SQLLOCK_OK)
                    atomic_fetch_add(&sh->ok, 1);
                else {
                    atomic_fetch_add(&sh->other, 1);
                    snprintf(sh->other_msg, sizeof sh->other_msg, "%s: %s",
                             sqllock_errname(rc), sqllock_errmsg(db));
                }
                sqllock_lease_free(l);
                sqllock_close(db);
                l = NULL;
                db = NULL;
            }
            _exit(0);
        }
    }
    for (i = 0; i < 4; i++)
        assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
    if (atomic_load(&sh->other) != 0)
        fail_msg("through pgpool-II streaming mode: %s", sh->other_msg);
    assert_int_equal(atomic_load(&sh->overlaps), 0);
    n = sh->counter;
    munmap(sh, sizeof *sh);
    assert_int_equal(n, 80);
    return n;
}

/* pgpool-II in streaming-replication mode (here one primary), with
 * pooler=pgpool: 4 processes contend with an exact counter, waking each
 * other through a LISTEN past pgpool (listen_host) or by polling; a
 * release wakes a waiter at once through listen_host. (Without
 * pooler=pgpool a waiter LISTENs through pgpool, and the statement after
 * a wake-up stalled for the whole statement timeout in 2 of 3 such runs
 * on pgpool-II 4.3.) */
static void test_pooler_f_L9_pgpool_streaming_mode(void **state)
{
    char name[128];
    int64_t t, t0;
    (void)state;

    snprintf(name, sizeof name, "pooler-sr-%ld", (long)getpid());
    t0 = tu_now_ms();
    pgpool_contention(g_pgpool_sr, name);
    printf("    f [pgpool-II streaming, listen_host] 4 x 20 holds, counter "
           "80, %lld ms\n", (long long)(tu_now_ms() - t0));
    t0 = tu_now_ms();
    pgpool_contention(g_pgpool_sr_poll, name);
    printf("    f [pgpool-II streaming, polling] 4 x 20 holds, counter 80, "
           "%lld ms\n", (long long)(tu_now_ms() - t0));
    snprintf(name, sizeof name, "pooler-sr-wake-%ld", (long)getpid());
    t = handoff_ms(g_direct, g_pgpool_sr, name, 20000 * (int64_t)g_slow,
                   1);
    printf("    f [pgpool-II streaming, listen_host] a waiter woken %lld ms "
           "after the release (backoff %d s)\n", (long long)t, 20 * g_slow);
    if (t > 1500 * g_slow)
        fail_msg("L9 through pgpool-II with listen_host: the waiter took "
                 "%lld ms", (long long)t);
}

/* ------------------------------------------------------------------ */
/* g: the application's own transaction                                 */
/* ------------------------------------------------------------------ */

/* C2: BEGIN on the native handle, then a lease call: it must not run
 * inside that transaction (the grant would commit only if the
 * application commits). It is refused with SQLLOCK_EMISUSE and sends
 * nothing; after the application's ROLLBACK it works. */
static void test_pooler_g_C2_native_transaction_refused(void **state)
{
    const char *urls[] = { g_direct, g_tx, g_session };
    int u;
    (void)state;

    for (u = 0; u < 3; u++) {
        sqllock_db *db = open_url(urls[u]), *direct = open_url(g_direct);
        sqllock_lease *l;
        PGconn *pg;
        PGresult *res;
        char name[128];
        tu_row r;

        snprintf(name, sizeof name, "pooler-native-%ld-%d", (long)getpid(),
                 u);
        l = new_lease(db, name, 30000, 0);
        /* A statement first, so that the connection exists. */
        EXPECT_RC(db, sqllock_lease_try_acquire(l), SQLLOCK_OK, "acquire");
        EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
        pg = sqllock_db_native(db);
        assert_non_null(pg);
        res = PQexec(pg, "BEGIN");
        assert_int_equal(PQresultStatus(res), PGRES_COMMAND_OK);
        PQclear(res);
        EXPECT_RC(db, sqllock_lease_try_acquire(l), SQLLOCK_EMISUSE,
                  "acquire inside the application's transaction");
        expect_msg_any(db, "EMISUSE", "did not begin");
        ASSERT_RC(tu_find(direct, name, &r), SQLLOCK_OK, direct);
        assert_int_equal(r.found, 0);
        res = PQexec(pg, "ROLLBACK");
        assert_int_equal(PQresultStatus(res), PGRES_COMMAND_OK);
        PQclear(res);
        EXPECT_RC(db, sqllock_lease_try_acquire(l), SQLLOCK_OK,
                  "acquire after the rollback");
        EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
        sqllock_lease_free(l);
        sqllock_close(direct);
        sqllock_close(db);
    }
}

/* ------------------------------------------------------------------ */

static int load_urls(void)
{
    static char envfile[16384];
    struct { const char *key; char *dst; } v[] = {
        { "SQLLOCK_TEST_PGBOUNCER_TX_URL", g_tx },
        { "SQLLOCK_TEST_PGBOUNCER_TX_POLL_URL", g_tx_poll },
        { "SQLLOCK_TEST_PGBOUNCER_UNDECLARED_URL", g_undeclared },
        { "SQLLOCK_TEST_PGBOUNCER_SESSION_URL", g_session },
        { "SQLLOCK_TEST_PGBOUNCER_TIGHT_URL", g_tight },
        { "SQLLOCK_TEST_PGPOOL_RAW_URL", g_pgpool_raw },
        { "SQLLOCK_TEST_PGPOOL_SR_URL", g_pgpool_sr },
        { "SQLLOCK_TEST_PGPOOL_SR_POLL_URL", g_pgpool_sr_poll },
    };
    char path[1200];
    const char *pg = getenv("SQLLOCK_TEST_PG_URL");
    size_t i;

    snprintf(path, sizeof path, "%s/env", g_dir);
    tu_read_file(path, envfile, sizeof envfile);
    for (i = 0; i < sizeof v / sizeof v[0]; i++)
        if (!tu_get_var(envfile, v[i].key, v[i].dst, 1024)) {
            printf("pooler: no %s in %s\n", v[i].key, path);
            return -1;
        }
    if (pg == NULL || *pg == '\0') {
        printf("pooler: SQLLOCK_TEST_PG_URL names no PostgreSQL to compare "
               "with\n");
        return -1;
    }
    snprintf(g_direct, sizeof g_direct, "%s", pg);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pooler_a_C1_run_transaction_mode),
        cmocka_unit_test(test_pooler_a_C1_run_session_mode),
        cmocka_unit_test(test_pooler_b_L9_wakeups),
        cmocka_unit_test(test_pooler_c_C1_undeclared_transaction_pooler),
        cmocka_unit_test(test_pooler_d_run_needs_two_server_connections),
        cmocka_unit_test(test_pooler_e_C2_pgpool_raw_no_false_success),
        cmocka_unit_test(test_pooler_f_L9_pgpool_streaming_mode),
        cmocka_unit_test(test_pooler_g_C2_native_transaction_refused),
    };
    const char *dir = getenv("SQLLOCK_TEST_POOLERS_DIR");
    const char *scr = getenv("SQLLOCK_TEST_POOLERS_SCRIPT");

    if (dir == NULL || *dir == '\0' || scr == NULL || *scr == '\0' ||
        strchr(dir, '\'') || strchr(scr, '\''))
        return tu_unit_cannot_run("pooler", "SQLLOCK_TEST_POOLERS_DIR and "
                                  "SQLLOCK_TEST_POOLERS_SCRIPT name no poolers "
                                  "(scripts/poolers.sh start DIR SERVERS_DIR "
                                  "starts them)");
    snprintf(g_dir, sizeof g_dir, "%s", dir);
    snprintf(g_script, sizeof g_script, "%s", scr);
    if (load_urls() != 0)
        return 1;
    if (sqllock_driver_find("postgres") == NULL) {
        printf("pooler: FAILED: this build has no postgres driver\n");
        return 1;
    }
    g_slow = tu_slowdown();
    if (tu_init_schema(g_direct) != 0)
        return 1;
    return tu_unit_result("pooler", "postgres",
                          cmocka_run_group_tests_name("pooler", tests, NULL,
                                                      NULL));
}
