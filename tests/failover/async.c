/*
 * async.c -- test_failover c: the asynchronous standby's
 * hazard, demonstrated.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "failover.h"
#include "tu_history.h"

/* ------------------------------------------------------------------ */
/* c. The asynchronous standby's hazard                                */
/* ------------------------------------------------------------------ */

typedef struct c_shared {
    int phase, done, rc;
    int64_t token, remaining_at_grant, remaining_now, took_ms;
    int held_now;
    char msg[300];
} c_shared;

static c_shared *g_c;
static tu_hist *g_c_hist;        /* both owners' operations */
static char g_c_hist_path[1100];

static int c_child(void)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;
    sqllock_db *db = fo_open_url(g_url, 2000 * g_slow);
    int64_t t, t0, seq;
    int rc = 1;

    if (db == NULL)
        return 1;
    o.ttl_ms = 30000 * g_slow;
    if (sqllock_lease_new(db, "failover-c-hazard", &o, &l) != SQLLOCK_OK)
        goto out;
    ST(&g_c->done, 1);
    for (t = tu_now_ms(); LD(&g_c->phase) < 1 && tu_now_ms() - t < 60000;)
        tu_sleep_ms(5);
    t0 = tu_now_ms();
    seq = tu_hist_invoke(g_c_hist, "first", "acquire", "failover-c-hazard",
                         0, o.ttl_ms);
    g_c->rc = sqllock_lease_try_acquire(l);
    g_c->took_ms = tu_now_ms() - t0;
    g_c->token = sqllock_lease_token(l);
    tu_hist_complete(g_c_hist, "first", seq, tu_hist_outcome(g_c->rc),
                     g_c->token);
    if (g_c->rc == SQLLOCK_OK)
        tu_hist_section(g_c_hist, "first", "failover-c-hazard", g_c->token,
                        0);
    g_c->remaining_at_grant = sqllock_lease_remaining_ms(l);
    snprintf(g_c->msg, sizeof g_c->msg, "%s", sqllock_errmsg(db));
    ST(&g_c->done, 2);
    for (t = tu_now_ms(); LD(&g_c->phase) < 2 && tu_now_ms() - t < 60000;)
        tu_sleep_ms(5);
    g_c->held_now = sqllock_lease_held(l);
    g_c->remaining_now = sqllock_lease_remaining_ms(l);
    if (g_c->rc == SQLLOCK_OK)
        tu_hist_section_end(g_c_hist, "first", "failover-c-hazard",
                            g_c->token);
    ST(&g_c->done, 3);
    rc = 0;
out:
    sqllock_lease_free(l);
    sqllock_close(db);
    return rc;
}

/* 1 once the child's acquire is answered (done 2), or, with a
 * synchronous standby, once the primary shows it waiting for that
 * standby: its INSERT committed locally, in the SyncRep wait that the
 * paused walreceiver never ends. The failover then cuts it off, as a
 * crash of the primary would; the client's own statement timeout is
 * left to end it only if that wait is never seen. */
static int c_acquire_sent(sqllock_db *primary)
{
    int64_t n = 0;
    int has = 0;

    if (LD(&g_c->done) >= 2)
        return 1;
    if (primary == NULL ||
        sqllock__exec_sql(primary, "SELECT count(*) FROM "
                          "pg_catalog.pg_stat_activity WHERE wait_event = "
                          "'SyncRep' AND query LIKE "
                          "'INSERT INTO sqllock_lease%' AND pid <> "
                          "pg_catalog.pg_backend_pid()", NULL, 0, &has, &n,
                          NULL) != SQLLOCK_OK)
        return 0;
    return n > 0;
}

/* One run of the recipe: pause the standby's walreceiver, a child
 * acquires, failover, the parent acquires the same name on the new
 * primary. Returns the parent's status; *token_b its token. */
static int c_recipe(const char *mode, int64_t *token_b, int64_t *fo_ms)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *b = NULL;
    sqllock_db *db, *primary;
    pid_t pid;
    int64_t t, seq;
    int rc;

    fo_fresh_pair(mode);
    g_c = tu_shared_map(sizeof *g_c);
    snprintf(g_c_hist_path, sizeof g_c_hist_path, "%s/history-c-%s.txt",
             g_dir, mode);
    (void)unlink(g_c_hist_path);
    g_c_hist = tu_hist_open(g_c_hist_path);
    if (g_c_hist == NULL)
        fail_msg("history %s: %s", g_c_hist_path, strerror(errno));
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid == 0) {
        alarm((unsigned)(90 * g_slow));
        _exit(c_child());
    }
    if (pid < 0)
        fail_msg("fork: %s", strerror(errno));
    for (t = tu_now_ms(); LD(&g_c->done) < 1 && tu_now_ms() - t < 30000;)
        tu_sleep_ms(5);
    primary = fo_open_url(g_url1, 5000);
    if (fo_repl("pause-standby", NULL, NULL) != 0) {
        sqllock_close(primary);
        tu_kill_wait(pid);
        fail_msg("pause-standby failed");
    }
    ST(&g_c->phase, 1);
    for (t = tu_now_ms(); !c_acquire_sent(primary) &&
                          tu_now_ms() - t < 30000;)
        tu_sleep_ms(5);
    sqllock_close(primary);
    if (fo_repl("failover", NULL, fo_ms) != 0) {
        tu_kill_wait(pid);
        fail_msg("failover failed");
    }
    /* The first owner has its answer before the second one asks. */
    for (t = tu_now_ms(); LD(&g_c->done) < 2 && tu_now_ms() - t < 30000;)
        tu_sleep_ms(5);
    db = fo_open_url(g_url, 3000);
    if (db == NULL) {
        tu_kill_wait(pid);
        fail_msg("cannot open the new primary");
    }
    o.ttl_ms = 5000;
    assert_int_equal(sqllock_lease_new(db, "failover-c-hazard", &o, &b),
                     SQLLOCK_OK);
    seq = tu_hist_invoke(g_c_hist, "second", "acquire", "failover-c-hazard",
                         0, o.ttl_ms);
    rc = sqllock_lease_try_acquire(b);
    *token_b = sqllock_lease_token(b);
    tu_hist_complete(g_c_hist, "second", seq, tu_hist_outcome(rc), *token_b);
    if (rc == SQLLOCK_OK)
        tu_hist_section(g_c_hist, "second", "failover-c-hazard", *token_b,
                        0);
    ST(&g_c->phase, 2);
    for (t = tu_now_ms(); LD(&g_c->done) < 3 && tu_now_ms() - t < 30000;)
        tu_sleep_ms(5);
    fo_reap_or_kill(pid, 10000, "the first owner");
    if (rc == SQLLOCK_OK) {
        tu_hist_section_end(g_c_hist, "second", "failover-c-hazard",
                            *token_b);
        seq = tu_hist_invoke(g_c_hist, "second", "release",
                             "failover-c-hazard", *token_b, 0);
        tu_hist_complete(g_c_hist, "second", seq,
                         tu_hist_outcome(sqllock_lease_release(b)),
                         *token_b);
    }
    tu_hist_close(g_c_hist);
    g_c_hist = NULL;
    sqllock_lease_free(b);
    sqllock_close(db);
    return rc;
}

/*
 * c. HAZARD DEMONSTRATED (this test passes when the hazard happens): with
 * an ASYNCHRONOUS standby, a lease the primary acknowledged can be lost
 * by a failover -- the standby never received it -- and a second owner is
 * granted the same name while the first still believes it holds it by
 * its local deadline (L6 cannot help: nothing told the first owner). Its
 * token may even come out lower (L5 broken too). Then the same recipe
 * with a SYNCHRONOUS standby: the first acquire waits for the standby
 * until the failover cuts it off, is never acknowledged, and so the
 * second grant is safe.
 */
void test_failover_async_hazard_demonstrated(void **state)
{
    int64_t tb = 0, fo_ms = 0;
    int rc;

    (void)state;
    rc = c_recipe("async", &tb, &fo_ms);
    printf("    async: first owner's acquire with the walreceiver paused: "
           "%s in %lld ms (token %lld, local deadline %lld ms ahead); "
           "failover %lld ms; second owner on the new primary: %s (token "
           "%lld); the first still believes it holds: %d (%lld ms left)\n",
           sqllock_errname(g_c->rc), (long long)g_c->took_ms,
           (long long)g_c->token, (long long)g_c->remaining_at_grant,
           (long long)fo_ms, sqllock_errname(rc), (long long)tb,
           g_c->held_now, (long long)g_c->remaining_now);
    if (g_c->rc != SQLLOCK_OK)
        fail_msg("async: the first acquire was not acknowledged (%s: %s)",
                 sqllock_errname(g_c->rc), g_c->msg);
    if (rc != SQLLOCK_OK || !g_c->held_now)
        fail_msg("async: the hazard was NOT reproduced (second owner %s, "
                 "first holds %d): did the WAL reach the standby?",
                 sqllock_errname(rc), g_c->held_now);
    /* The history checker finds it too: the acknowledged grant
     * forgotten (H3) and the two owners (H1). */
    {
        tu_hist_result hr;

        tu_hist_check(g_c_hist_path, stdout, &hr);
        if (hr.broken[TU_H3] == 0 || hr.broken[TU_H1] == 0)
            fail_msg("the history checker missed the async hazard in %s "
                     "(H1 %d, H3 %d)", g_c_hist_path, hr.broken[TU_H1],
                     hr.broken[TU_H3]);
    }
    printf("    HAZARD REPRODUCED (async standby): two owners of "
           "failover-c-hazard at once; tokens %lld then %lld%s\n",
           (long long)g_c->token, (long long)tb,
           tb <= g_c->token ? " -- the token went BACK (L5 broken too)"
                            : "");
    munmap(g_c, sizeof *g_c);

    rc = c_recipe("sync", &tb, &fo_ms);
    printf("    sync: first owner's acquire with the walreceiver paused: "
           "%s in %lld ms (%s); failover %lld ms; second owner: %s (token "
           "%lld); the first holds: %d\n", sqllock_errname(g_c->rc),
           (long long)g_c->took_ms, g_c->msg, (long long)fo_ms,
           sqllock_errname(rc), (long long)tb, g_c->held_now);
    if (g_c->rc == SQLLOCK_OK)
        fail_msg("sync: an acquire the standby never received was "
                 "acknowledged");
    if (g_c->held_now)
        fail_msg("sync: the first owner believes it holds");
    assert_int_equal(rc, SQLLOCK_OK);
    if (tu_hist_check(g_c_hist_path, stdout, NULL) != 0)
        fail_msg("sync: the history checker found violations in %s",
                 g_c_hist_path);
    munmap(g_c, sizeof *g_c);
    g_c = NULL;
}
