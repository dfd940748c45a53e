/*
 * pooler/bouncer.c -- test_pooler through PgBouncer: `sqllock run` from 8
 * processes (a), a transaction pooler the URL does not declare (c), one
 * server connection per run (d), and the application's own transaction
 * (g).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdatomic.h>
#include <pthread.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>

#include <libpq-fe.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "pooler/pooler.h"
#include "tu_history.h"

/* ------------------------------------------------------------------ */
/* a: `sqllock run` from 8 processes                                    */
/* ------------------------------------------------------------------ */

#define RUN_PROCS 8
#define RUN_ITERS 6

/* The command each run executes under the lock: it records an overlap
 * when another command is inside (mkdir is atomic), appends its token,
 * and increments the counter file with a read, a pause and a write --
 * its section and the write in the history too (tu_history.h, through
 * the tool $H), which the checker judges with the counter's end. */
static const char RUN_BODY[] =
    "c=run$$; \"$H\" note \"$D/history\" $c S \"$SQLLOCK_NAME\" "
    "\"$SQLLOCK_TOKEN\"; "
    "if ! mkdir \"$D/in\" 2>/dev/null; then echo x >> \"$D/overlaps\"; fi; "
    "echo \"$SQLLOCK_TOKEN\" >> \"$D/tokens\"; "
    "s=$(\"$H\" invoke \"$D/history\" $c write \"$SQLLOCK_NAME\" "
    "\"$SQLLOCK_TOKEN\" 0); "
    "n=$(cat \"$D/count\"); sleep 0.01; echo $((n + 1)) > \"$D/count\"; "
    "\"$H\" complete \"$D/history\" $c \"$s\" ok \"$SQLLOCK_TOKEN\"; "
    "rmdir \"$D/in\" 2>/dev/null; "
    "\"$H\" note \"$D/history\" $c E \"$SQLLOCK_NAME\" \"$SQLLOCK_TOKEN\"; "
    "true";

/* 8 shell loops of RUN_ITERS `sqllock run`s each, at once, through `url`;
 * checks the exit codes, the counter, overlaps and token order. */
static void run_contention(const char *url, const char *label, int iters)
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
             "export D='%s' H='%s'; for i in $(seq %d); do "
             "SQLLOCK_DB=\"$U\" '%s' run '%s' --ttl 20s --wait 60s -- "
             "sh -c '%s'; echo $? >> \"$D/rc\"; done",
             dir, SQLLOCK_HISTORY_TOOL, iters, SQLLOCK_CLI_PATH, name,
             RUN_BODY);
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
    assert_int_equal(runs, RUN_PROCS * iters);
    snprintf(path, sizeof path, "%s/count", dir);
    tu_read_file(path, buf, sizeof buf);
    count = atoi(buf);
    snprintf(path, sizeof path, "%s/overlaps", dir);
    if (tu_read_file(path, buf, sizeof buf) != 0)
        fail_msg("%s: commands overlapped: %s", label, buf);
    if (count != RUN_PROCS * iters)
        fail_msg("%s: the counter is %d after %d runs: lost updates", label,
                 count, RUN_PROCS * iters);
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
    /* The commands' history against the lease model (H1, H6). */
    {
        tu_hist *h;

        snprintf(path, sizeof path, "%s/history", dir);
        h = tu_hist_open(path);
        assert_non_null(h);
        tu_hist_final(h, name, count);
        tu_hist_close(h);
        if (tu_hist_check(path, stdout, NULL) != 0)
            fail_msg("%s: the history checker found violations in %s "
                     "(kept)", label, path);
        unlink(path);
    }
    printf("    a [%s] %d x %d `sqllock run`: counter %d, 0 overlaps, "
           "tokens grow, %lld ms\n", label, RUN_PROCS, iters, count,
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
void test_pooler_a_C1_run_transaction_mode(void **state)
{
    sqllock_db *db;
    sqllock_lease *l;
    int rc;
    (void)state;

    run_contention(g_tx, "transaction", RUN_ITERS);
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
    run_contention(g_tx, "transaction, after a PgBouncer restart",
                   RUN_ITERS);
}

void test_pooler_a_C1_run_session_mode(void **state)
{
    (void)state;
    run_contention(g_session, "session", RUN_ITERS);
}

/*
 * C3 through a PgBouncer restart of 2 s (issue 27 item 1), in `mode`
 * (tx or session): `sqllock run` through it, its command ending while
 * PgBouncer is down. The release and the history record are tried again
 * until it is back: another client gets the lock through it within a
 * second of its return (ttl 30 s), the run exits with the command's 3,
 * and the history has the run.
 */
static void run_through_bouncer_restart(const char *url, const char *mode)
{
    char *dir = tu_mkdtemp(), started[1400], go[1400], down[1400];
    char back[1400], out[1400], err[1400], script[6000], cmd[6000];
    char name[96], buf[16384];
    const char *argv[12];
    sqllock_db *db = NULL;
    sqllock_lease *l;
    int64_t t_back, t_free, end, bound = tu_scaled_ms(1000);
    pid_t pid;
    int code, rc, i;

    assert_non_null(dir);
    snprintf(name, sizeof name, "pooler-outage-%ld-%s", (long)getpid(),
             mode);
    snprintf(started, sizeof started, "%s/started", dir);
    snprintf(go, sizeof go, "%s/go", dir);
    snprintf(down, sizeof down, "%s/down", dir);
    snprintf(back, sizeof back, "%s/back", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(err, sizeof err, "%s/err", dir);
    snprintf(script, sizeof script, "touch '%s'; while [ ! -e '%s' ]; do "
             "sleep 0.02; done; exit 3", started, go);
    setenv("SQLLOCK_DB", url, 1);
    argv[0] = SQLLOCK_CLI_PATH;
    argv[1] = "run";
    argv[2] = name;
    argv[3] = "--ttl";
    argv[4] = "30s";
    argv[5] = "--";
    argv[6] = "sh";
    argv[7] = "-c";
    argv[8] = script;
    argv[9] = NULL;
    pid = tu_spawn(argv, out, err, 1);
    unsetenv("SQLLOCK_DB");
    end = tu_now_ms() + tu_scaled_ms(20000);
    while (access(started, F_OK) != 0 && tu_now_ms() < end &&
           tu_wait_for(pid, 0) < 0)
        tu_sleep_ms(10);
    if (access(started, F_OK) != 0) {
        tu_read_file(err, buf, sizeof buf);
        fail_msg("[%s] the command did not start: %s", mode, buf);
    }
    snprintf(cmd, sizeof cmd, "(SQLLOCK_SERVERS_DOWN_FILE='%s' bash '%s' "
             "restart-pgbouncer '%s' %s 2 >&2; touch '%s') &", down,
             g_script, g_dir, mode, back);
    fflush(stdout);
    if (system(cmd) != 0)
        fail_msg("%s failed", cmd);
    end = tu_now_ms() + 30000;
    while (access(down, F_OK) != 0 && tu_now_ms() < end)
        tu_sleep_ms(10);
    assert_int_equal(access(down, F_OK), 0);
    close(open(go, O_WRONLY | O_CREAT, 0600));
    end = tu_now_ms() + 60000;
    while (access(back, F_OK) != 0 && tu_now_ms() < end)
        tu_sleep_ms(10);
    assert_int_equal(access(back, F_OK), 0);
    t_back = tu_now_ms();
    rc = sqllock_open(url, NULL, &db);
    for (i = 0; i < 100 && rc == SQLLOCK_ECONNECT; i++) {
        sqllock_close(db);
        tu_sleep_ms(20);
        rc = sqllock_open(url, NULL, &db);
    }
    EXPECT_RC(db, rc, SQLLOCK_OK, "open after the restart");
    l = new_lease(db, name, 5000, 50);
    EXPECT_RC(db, sqllock_lease_acquire(l, 15000), SQLLOCK_OK,
              "acquire after the restart");
    t_free = tu_now_ms() - t_back;
    EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
    sqllock_lease_free(l);
    sqllock_close(db);
    code = tu_wait_for(pid, 90000);
    if (code < 0)
        tu_kill_wait(pid);
    tu_read_file(err, buf, sizeof buf);
    printf("    [%s] PgBouncer down 2 s: the lock was free %lld ms after "
           "it was back; run said: %s", mode, (long long)t_free, buf);
    if (code != 3)
        fail_msg("[%s] run exited %d, want the command's 3: %s", mode, code,
                 buf);
    if (t_free > bound)
        fail_msg("[%s] the lock was free only %lld ms after PgBouncer was "
                 "back (bound %lld ms, ttl 30 s)", mode, (long long)t_free,
                 (long long)bound);
    /* The history, through the pooler too. */
    setenv("SQLLOCK_DB", url, 1);
    argv[1] = "history";
    argv[2] = name;
    argv[3] = "--json";
    argv[4] = NULL;
    pid = tu_spawn(argv, out, err, 1);
    unsetenv("SQLLOCK_DB");
    code = tu_wait_for(pid, 30000);
    tu_read_file(out, buf, sizeof buf);
    if (code != 0 || strstr(buf, "\"exit\": 3") == NULL)
        fail_msg("[%s] history exited %d without the run's outcome: %s",
                 mode, code, buf);
    unlink(started);
    unlink(go);
    unlink(down);
    unlink(back);
    unlink(out);
    unlink(err);
    tu_rmdir(dir);
    free(dir);
}

void test_pooler_a_C3_run_through_pgbouncer_restart(void **state)
{
    (void)state;
    run_through_bouncer_restart(g_tx, "tx");
    run_through_bouncer_restart(g_session, "session");
}

/* ------------------------------------------------------------------ */
/* c: a transaction pooler the URL does not declare                     */
/* ------------------------------------------------------------------ */

#define UND_PROCS 8
#define UND_ITERS 30

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
void test_pooler_c_C1_undeclared_transaction_pooler(void **state)
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

/* Runs `sqllock [--db url] run ARGS...` (NULL-terminated, at most 12),
 * its output in dir/out and dir/err; returns its pid. */
static pid_t spawn_run(const char *dir, const char *url, const char *tag,
                       const char *const *args)
{
    const char *argv[20];
    char out[1400], err[1400];
    int n = 0;

    snprintf(out, sizeof out, "%s/out-%s", dir, tag);
    snprintf(err, sizeof err, "%s/err-%s", dir, tag);
    argv[n++] = SQLLOCK_CLI_PATH;
    argv[n++] = "--db";
    argv[n++] = url;
    argv[n++] = "run";
    while (*args != NULL && n < 19)
        argv[n++] = *args++;
    argv[n] = NULL;
    return tu_spawn(argv, out, err, 1);
}

/* What `spawn_run(dir, ..., tag, ...)` printed on stderr, in buf. */
static const char *run_said(const char *dir, const char *tag, char *buf,
                            size_t size)
{
    char err[1400];

    snprintf(err, sizeof err, "%s/err-%s", dir, tag);
    buf[0] = '\0';
    tu_read_file(err, buf, size);
    return buf;
}

/* Waits up to timeout_ms for the run `tag` (killed after that), and puts
 * what it printed on stderr in buf: its exit code, or -1. */
static int run_ended(const char *dir, const char *tag, pid_t pid,
                     int64_t timeout_ms, char *buf, size_t size)
{
    int code = tu_wait_for(pid, timeout_ms);

    if (code < 0)
        tu_kill_wait(pid);
    run_said(dir, tag, buf, size);
    return code;
}

/*
 * Issue 27 item 2: through a session pooler (pooler=session) `sqllock run`
 * holds one server connection, not two: it renews its lease on its own
 * connection (tools/run.c share_renew()), and a connect for which the
 * pool has no slot yet is tried again within --wait. Before, each run
 * held its connection while its renewer waited for a second one: through
 * a session pool of 1 every run exited 69; of 2, with 8 runs at once, 2
 * of 24 ran. The library's own watchdog still connects on its own
 * (sqllock_watch_prepare() fails through a pool of one, saying so).
 *
 *  1  a run through a pool of 1 whose command outlives the ttl: the
 *     renewals go through the one connection, exit 0, the lease is
 *     released (DESIGN L7); the same through pgpool-II (pooler=pgpool,
 *     whose clients each hold a pgpool child);
 *  2  the same, and an operator frees the lock by force meanwhile: the
 *     next renewal finds it taken, the command is stopped, exit 76
 *     (DESIGN X2);
 *  3  8 processes x 3 runs at once through a pool of 2 with --wait: all
 *     24 exit 0, the counter is exact, no overlap, tokens grow (a);
 *  4  the pool's one slot held by another client for longer than the
 *     connect timeout (10 s): a run with --wait waits for it and runs
 *     once it is free; one without --wait exits 69 and names the pool.
 */
void test_pooler_d_run_holds_one_server_connection(void **state)
{
    sqllock_options opts = SQLLOCK_OPTIONS_INIT;
    sqllock_db *db = NULL, *hog;
    char *dir = tu_mkdtemp(), marker[1200], cmd[1400], name[96];
    char names[2][96], markers[2][1200], cmds[2][2500], buf[8192];
    int64_t t0, hold_ms;
    pid_t pid, waiter, quick, pids[2];
    tu_row r;
    int code, rc, i;
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

    /* 1: a 3 s ttl, a command of 4 s: renewed on the run's connection;
     * through pgpool-II (pooler=pgpool) too, at the same time. */
    for (i = 0; i < 2; i++) {
        const char *url = i == 0 ? g_tight : g_pgpool_sr;

        snprintf(names[i], sizeof names[i], "pooler-one-%ld-%d",
                 (long)getpid(), i);
        snprintf(markers[i], sizeof markers[i], "%s/ran%d", dir, i);
        snprintf(cmds[i], sizeof cmds[i], "sleep 4; touch '%s'",
                 markers[i]);
        {
            const char *a[] = { names[i], "--ttl", "3s", "--verbose", "--",
                                "sh", "-c", cmds[i], NULL };

            pids[i] = spawn_run(dir, url, i == 0 ? "one" : "pgpool", a);
        }
    }
    t0 = tu_now_ms();
    for (i = 0; i < 2; i++) {
        const char *what = i == 0 ? "PgBouncer session pool of 1"
                                  : "pgpool-II, pooler=pgpool";

        code = run_ended(dir, i == 0 ? "one" : "pgpool", pids[i], 60000,
                         buf, sizeof buf);
        printf("    d1 [%s] `sqllock run --ttl 3s` of a 4 s command: exit "
               "%d after %lld ms\n", what, code,
               (long long)(tu_now_ms() - t0));
        if (code != 0)
            fail_msg("[%s] run exited %d: %s", what, code, buf);
        if (access(markers[i], F_OK) != 0)
            fail_msg("[%s] the command did not run to its end: %s", what,
                     buf);
        db = open_url(g_direct);
        ASSERT_RC(tu_find(db, names[i], &r), SQLLOCK_OK, db);
        if (r.found)
            fail_msg("[%s] the lease is still there after the run: %s",
                     what, buf);
        sqllock_close(db);
        unlink(markers[i]);
    }

    /* 2: taken away by force while the command runs. */
    snprintf(marker, sizeof marker, "%s/ran", dir);
    snprintf(name, sizeof name, "pooler-one-lost-%ld", (long)getpid());
    snprintf(cmd, sizeof cmd, "touch '%s'; sleep 30", marker);
    {
        const char *a[] = { name, "--ttl", "3s", "--", "sh", "-c", cmd,
                            NULL };

        pid = spawn_run(dir, g_tight, "lost", a);
    }
    t0 = tu_now_ms() + tu_scaled_ms(20000);
    while (access(marker, F_OK) != 0 && tu_now_ms() < t0 &&
           tu_wait_for(pid, 0) < 0)
        tu_sleep_ms(10);
    if (access(marker, F_OK) != 0)
        fail_msg("the command did not start: %s",
                 run_said(dir, "lost", buf, sizeof buf));
    {
        const char *argv[] = { SQLLOCK_CLI_PATH, "--db", g_direct,
                               "release", name, "--force", "--force",
                               NULL };
        char o[1400], e[1400];

        snprintf(o, sizeof o, "%s/out-force", dir);
        snprintf(e, sizeof e, "%s/err-force", dir);
        code = tu_wait_for(tu_spawn(argv, o, e, 1), 30000);
        if (code != 0) {
            tu_read_file(e, buf, sizeof buf);
            fail_msg("release --force --force exited %d: %s", code, buf);
        }
    }
    t0 = tu_now_ms();
    code = run_ended(dir, "lost", pid, 30000, buf, sizeof buf);
    t0 = tu_now_ms() - t0;
    printf("    d2 [session pool of 1] lock freed by force: run exit %d "
           "%lld ms later: %s", code, (long long)t0, buf);
    if (code != 76)
        fail_msg("run exited %d, want 76 (X2): %s", code, buf);
    if (!tu_contains_ci(buf, "lost"))
        fail_msg("run does not say the lock was lost: %s", buf);
    unlink(marker);

    /* 3: 8 x 3 runs through a pool of two. */
    run_contention(g_pair, "session pool of 2", 3);

    /* 4: the one slot held for longer than the connect timeout. */
    snprintf(name, sizeof name, "pooler-slot-%ld", (long)getpid());
    hog = open_url(g_tight);
    {
        const char *a[] = { name, "--ttl", "5s", "--wait", "60s",
                            "--verbose", "--", "true", NULL };
        const char *b[] = { name, "--ttl", "5s", "--", "true", NULL };

        waiter = spawn_run(dir, g_tight, "waiter", a);
        quick = spawn_run(dir, g_tight, "quick", b);
    }
    t0 = tu_now_ms();
    code = run_ended(dir, "quick", quick, tu_scaled_ms(40000), buf,
                     sizeof buf);
    hold_ms = tu_now_ms() - t0;
    printf("    d4 [session pool of 1, its slot taken] run without --wait: "
           "exit %d after %lld ms: %s", code, (long long)hold_ms, buf);
    if (code != 69 || !tu_contains_ci(buf, "pool"))
        fail_msg("run without --wait exited %d, want 69 naming the pool: "
                 "%s", code, buf);
    if (tu_wait_for(waiter, 0) >= 0)
        fail_msg("run --wait ended while the slot was taken: %s",
                 run_said(dir, "waiter", buf, sizeof buf));
    sqllock_close(hog);
    t0 = tu_now_ms();
    code = run_ended(dir, "waiter", waiter, 60000, buf, sizeof buf);
    t0 = tu_now_ms() - t0;
    printf("    d4 run --wait 60s: exit %d, %lld ms after the slot was "
           "freed (held %lld ms)\n", code, (long long)t0,
           (long long)hold_ms);
    if (code != 0)
        fail_msg("run --wait exited %d: %s", code, buf);
    if (!tu_contains_ci(buf, "connected after"))
        fail_msg("run --verbose does not say it waited for a connection: "
                 "%s", buf);
    tu_rmdir(dir);
    free(dir);
}

/* ------------------------------------------------------------------ */
/* g: the application's own transaction                                 */
/* ------------------------------------------------------------------ */

/* C2: BEGIN on the native handle, then a lease call: it must not run
 * inside that transaction (the grant would commit only if the
 * application commits). It is refused with SQLLOCK_EMISUSE and sends
 * nothing; after the application's ROLLBACK it works. */
void test_pooler_g_C2_native_transaction_refused(void **state)
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


/* `url` with its database (the path) replaced by `db`. */
static void url_db(char *out, size_t size, const char *url, const char *db)
{
    const char *a = strstr(url, "://");
    const char *slash = a != NULL ? strchr(a + 3, '/') : NULL;
    const char *query;

    assert_non_null(slash);
    query = slash + 1 + strcspn(slash + 1, "?");
    snprintf(out, size, "%.*s/%s%s", (int)(slash - url), url, db, query);
}

/*
 * h. DESIGN D5 behind a transaction pooler: the database's sessions
 * default to REPEATABLE READ (ALTER DATABASE ... SET
 * default_transaction_isolation), which no session setting of ours may
 * change there (C1). The lease statements check the level in themselves
 * and fail closed; the driver then sends each statement that commits on
 * its own inside BEGIN ISOLATION LEVEL READ COMMITTED ... COMMIT, in the
 * same round trip. Through PgBouncer in transaction mode a lease, a
 * renewal, a release, several names at once and a shared/exclusive pair
 * all work, and a reader is kept out while the writer holds (M2).
 */
void test_pooler_h_D5_repeatable_read_default_behind_transaction_pooler(
    void **state)
{
    sqllock_db *direct = open_url(g_direct), *db, *db2;
    sqllock_lease *l, *m[2];
    sqllock_rw *w = NULL, *r = NULL;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    char dbname[80], sql[200], url[1200], durl[1200], name[96], n2[96];
    tu_row row;
    (void)state;

    snprintf(dbname, sizeof dbname, "rr%ld_sqllock_test", (long)getpid());
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS \"%s\"", dbname);
    ASSERT_RC(sqllock_db_exec(direct, sql, NULL, 0, NULL, NULL, NULL),
              SQLLOCK_OK, direct);
    snprintf(sql, sizeof sql, "CREATE DATABASE \"%s\"", dbname);
    ASSERT_RC(sqllock_db_exec(direct, sql, NULL, 0, NULL, NULL, NULL),
              SQLLOCK_OK, direct);
    snprintf(sql, sizeof sql, "ALTER DATABASE \"%s\" SET "
             "default_transaction_isolation = 'repeatable read'", dbname);
    ASSERT_RC(sqllock_db_exec(direct, sql, NULL, 0, NULL, NULL, NULL),
              SQLLOCK_OK, direct);
    url_db(durl, sizeof durl, g_direct, dbname);
    assert_int_equal(tu_init_schema(durl), 0);
    url_db(url, sizeof url, g_tx_poll, dbname);
    db = open_url(url);
    db2 = open_url(url);

    snprintf(name, sizeof name, "pooler-rr-%ld", (long)getpid());
    snprintf(n2, sizeof n2, "pooler-rr-%ld-b", (long)getpid());
    l = new_lease(db, name, 30000, 0);
    EXPECT_RC(db, sqllock_lease_try_acquire(l), SQLLOCK_OK,
              "a grant on a database that defaults to repeatable read");
    EXPECT_RC(db, sqllock_lease_renew(l), SQLLOCK_OK, "renew");
    ASSERT_RC(tu_find(db2, name, &row), SQLLOCK_OK, db2);
    assert_int_equal(row.found, 1);
    EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
    m[0] = new_lease(db, name, 30000, 0);
    m[1] = new_lease(db, n2, 30000, 0);
    EXPECT_RC(db, sqllock_lease_acquire_many(db, m, 2, 0), SQLLOCK_OK,
              "two names at once");
    EXPECT_RC(db, sqllock_lease_release_many(db, m, 2), SQLLOCK_OK,
              "release both");
    o.ttl_ms = 30000;
    EXPECT_RC(db, sqllock_rw_new(db, name, 0, &o, &w), SQLLOCK_OK, "rw w");
    EXPECT_RC(db2, sqllock_rw_new(db2, name, 1, &o, &r), SQLLOCK_OK, "rw r");
    EXPECT_RC(db, sqllock_rw_try_acquire(w), SQLLOCK_OK, "writer");
    EXPECT_RC(db2, sqllock_rw_try_acquire(r), SQLLOCK_BUSY,
              "a reader while the writer holds");
    EXPECT_RC(db, sqllock_rw_release(w), SQLLOCK_OK, "writer release");
    EXPECT_RC(db2, sqllock_rw_try_acquire(r), SQLLOCK_OK, "reader after");
    EXPECT_RC(db, sqllock_rw_try_acquire(w), SQLLOCK_BUSY,
              "a writer while the reader holds");
    EXPECT_RC(db2, sqllock_rw_release(r), SQLLOCK_OK, "reader release");
    sqllock_rw_free(w);
    sqllock_rw_free(r);
    sqllock_lease_free(m[0]);
    sqllock_lease_free(m[1]);
    sqllock_lease_free(l);
    sqllock_close(db);
    sqllock_close(db2);
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS \"%s\" WITH (FORCE)",
             dbname);
    ASSERT_RC(sqllock_db_exec(direct, sql, NULL, 0, NULL, NULL, NULL),
              SQLLOCK_OK, direct);
    sqllock_close(direct);
}
