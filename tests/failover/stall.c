/*
 * stall.c -- test_failover b: a stalled synchronous
 * standby; no false success (L6, L10).
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

/* ------------------------------------------------------------------ */
/* b. A stalled synchronous standby                                    */
/* ------------------------------------------------------------------ */

typedef struct b_shared {
    int phase, done;
    int w_state, w_status;          /* the watched lease's first change */
    int w_state1, w_status1;        /* ... as it was at the end of (1) */
    char w_msg[300];
    int rc[4];
    int held[4];
    int64_t token[4], took_ms[4], rem_before, rem_after;
    char owner[4][SQLLOCK_OWNER_LEN + 1];
    char msg[4][400];
} b_shared;

static b_shared *g_b;

static void b_wait_phase(int p)
{
    int64_t t = tu_now_ms();

    while (LD(&g_b->phase) < p && tu_now_ms() - t < 120000)
        tu_sleep_ms(5);
}

/* The statement timeout of the handle whose acquire (3) waits for the
 * paused standby until it runs out. Not scaled by the slowdown factor:
 * that acquire is the handle's only statement, it is meant to run out,
 * and the server it waits on is not slowed by the tools (valgrind, the
 * sanitizers) that slow the client. */
#define B_BOUND_MS 1500

#define B_RENEW 0
#define B_ACQ_CANCEL 1
#define B_ACQ_BOUND 2
#define B_RENEW_AFTER 3

/* The watched lease's callback (on the renewer thread): its first
 * change of state. */
static void b_on_watch(void *ctx, sqllock_lease *l, int state, int status,
                       const char *msg)
{
    (void)ctx;
    (void)l;
    if (LD(&g_b->w_state) == 0) {
        g_b->w_status = status;
        snprintf(g_b->w_msg, sizeof g_b->w_msg, "%s", msg ? msg : "");
        ST(&g_b->w_state, state);
    }
}

/* The child: a holder whose renewal, then a fresh acquire, wait for the
 * stalled standby and are canceled; then an acquire that the client's
 * own bound ends. */
static int b_child(void)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *r = NULL, *a = NULL, *c = NULL, *w = NULL;
    sqllock_watch_options wo = SQLLOCK_WATCH_OPTIONS_INIT;
    sqllock_db *db = fo_open_url(g_url, 20000 * g_slow);
    sqllock_db *quick = fo_open_url(g_url, B_BOUND_MS);
    int64_t t0;
    int rc = 1;

    if (db == NULL || quick == NULL)
        goto out;
    o.ttl_ms = 20000 * g_slow;
    if (sqllock_lease_new(db, "failover-b-renew", &o, &r) != SQLLOCK_OK ||
        sqllock_lease_new(db, "failover-b-acquire", &o, &a) != SQLLOCK_OK ||
        sqllock_lease_new(quick, "failover-b-bounded", &o, &c) != SQLLOCK_OK ||
        sqllock_lease_new(db, "failover-b-watched", &o, &w) != SQLLOCK_OK)
        goto out;
    wo.interval_ms = 300;
    wo.retry_ms = 100;
    wo.callback = b_on_watch;
    if (sqllock_lease_try_acquire(r) != SQLLOCK_OK ||
        sqllock_watch_prepare(db) != SQLLOCK_OK ||
        sqllock_lease_try_acquire(w) != SQLLOCK_OK ||
        sqllock_lease_watch(w, &wo) != SQLLOCK_OK) {
        fprintf(stderr, "b: first acquires: %s\n", sqllock_errmsg(db));
        goto out;
    }
    snprintf(g_b->owner[B_RENEW], sizeof g_b->owner[0], "%s",
             sqllock_lease_owner(r));
    g_b->token[B_RENEW] = sqllock_lease_token(r);
    ST(&g_b->done, 1);
    b_wait_phase(1);                    /* the standby is paused */
    tu_sleep_ms(1000);                  /* the deadline moves visibly */
    g_b->rem_before = sqllock_lease_remaining_ms(r);
    t0 = tu_now_ms();
    g_b->rc[B_RENEW] = sqllock_lease_renew(r);
    g_b->took_ms[B_RENEW] = tu_now_ms() - t0;
    g_b->rem_after = sqllock_lease_remaining_ms(r);
    g_b->held[B_RENEW] = sqllock_lease_held(r);
    snprintf(g_b->msg[B_RENEW], sizeof g_b->msg[0], "%s", sqllock_errmsg(db));
    /* The watchdog's renewal was canceled in the same sweep. */
    for (t0 = tu_now_ms(); LD(&g_b->w_state) == 0 &&
                           tu_now_ms() - t0 < 10000 * g_slow;)
        tu_sleep_ms(5);
    g_b->w_state1 = LD(&g_b->w_state);
    g_b->w_status1 = g_b->w_status;
    ST(&g_b->done, 2);

    b_wait_phase(2);
    t0 = tu_now_ms();
    g_b->rc[B_ACQ_CANCEL] = sqllock_lease_try_acquire(a);
    g_b->took_ms[B_ACQ_CANCEL] = tu_now_ms() - t0;
    g_b->held[B_ACQ_CANCEL] = sqllock_lease_held(a);
    g_b->token[B_ACQ_CANCEL] = sqllock_lease_token(a);
    snprintf(g_b->owner[B_ACQ_CANCEL], sizeof g_b->owner[0], "%s",
             sqllock_lease_owner(a));
    snprintf(g_b->msg[B_ACQ_CANCEL], sizeof g_b->msg[0], "%s",
             sqllock_errmsg(db));
    ST(&g_b->done, 3);

    b_wait_phase(3);
    t0 = tu_now_ms();
    g_b->rc[B_ACQ_BOUND] = sqllock_lease_try_acquire(c);
    g_b->took_ms[B_ACQ_BOUND] = tu_now_ms() - t0;
    g_b->held[B_ACQ_BOUND] = sqllock_lease_held(c);
    snprintf(g_b->msg[B_ACQ_BOUND], sizeof g_b->msg[0], "%s",
             sqllock_errmsg(quick));
    ST(&g_b->done, 4);

    b_wait_phase(4);                    /* after the failover */
    t0 = tu_now_ms();
    g_b->rc[B_RENEW_AFTER] = sqllock_lease_renew(r);
    if (g_b->rc[B_RENEW_AFTER] == SQLLOCK_ECONNECT)
        g_b->rc[B_RENEW_AFTER] = sqllock_lease_renew(r);
    g_b->took_ms[B_RENEW_AFTER] = tu_now_ms() - t0;
    g_b->held[B_RENEW_AFTER] = sqllock_lease_held(r);
    g_b->held[B_ACQ_CANCEL] = sqllock_lease_held(a);
    snprintf(g_b->msg[B_RENEW_AFTER], sizeof g_b->msg[0], "%s",
             sqllock_errmsg(db));
    if (sqllock_lease_count(r) > 0)
        sqllock_lease_release(r);
    sqllock_lease_unwatch(w);
    ST(&g_b->done, 5);
    rc = 0;
out:
    sqllock_lease_free(r);
    sqllock_lease_free(a);
    sqllock_lease_free(c);
    sqllock_lease_free(w);
    sqllock_close(db);
    sqllock_close(quick);
    return rc;
}

static void b_wait_done(int d, pid_t pid)
{
    int64_t t = tu_now_ms();

    while (LD(&g_b->done) < d && tu_now_ms() - t < 60000 * g_slow) {
        if (tu_wait_for(pid, 0) != -1)
            fail_msg("the child ended early (step %d)", d);
        tu_sleep_ms(5);
    }
    if (LD(&g_b->done) < d) {
        tu_kill_wait(pid);
        fail_msg("the child did not finish step %d", d);
    }
}

/*
 * b. (L6, L10 with a synchronous standby) The standby's walreceiver is
 * paused, so every durable commit waits for it. (1) A renewal that is
 * canceled while it waits, (2) an acquire canceled the same way: both
 * must fail (SQLLOCK_ECANCELED: the commit happened on the primary only),
 * the renewal must not move the local deadline, the acquire must not be
 * held. (3) An acquire whose wait the client's own statement timeout
 * ends: SQLLOCK_ECONNECT (outcome unknown), not held. Then the failover:
 * the canceled acquire's row is not on the new primary, and another
 * client gets the name; the held lease (granted before the pause) is
 * there and renews.
 */
void test_failover_sync_L6_L10_stalled_standby_no_false_success(
    void **state)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *other = NULL;
    sqllock_db *db, *db2;
    b_shared *sh;
    tu_row row;
    pid_t pid;
    int64_t fo_ms;
    int n, rc, failures = 0;

    (void)state;
    fo_fresh_pair("sync");
    sh = g_b = tu_shared_map(sizeof *sh);
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid == 0) {
        alarm((unsigned)(120 * g_slow));
        _exit(b_child());
    }
    if (pid < 0)
        fail_msg("fork: %s", strerror(errno));
    b_wait_done(1, pid);
    db = fo_open_url(g_url1, 5000);
    if (db == NULL)
        fail_msg("cannot open the primary");
    if (fo_repl("pause-standby", NULL, NULL) != 0)
        fail_msg("pause-standby failed");

    ST(&sh->phase, 1);
    /* The child's renewal and its watchdog's. */
    n = fo_end_syncrep_waits(db, 0, "%UPDATE sqllock_lease%", 2);
    b_wait_done(2, pid);
    printf("    (1) renewal waiting for the paused standby, %d canceled: "
           "%s after %lld ms; remaining %lld ms before, %lld after: %s\n",
           n, sqllock_errname(sh->rc[B_RENEW]),
           (long long)sh->took_ms[B_RENEW], (long long)sh->rem_before,
           (long long)sh->rem_after, sh->msg[B_RENEW]);

    printf("    (1w) the watchdog's renewal, canceled the same way: the "
           "watched lease went %s (%s): %s\n",
           sh->w_state1 ? sqllock_lease_state_name(sh->w_state1)
                        : "nowhere (no callback: still held)",
           sqllock_errname(sh->w_status1), sh->w_msg);

    ST(&sh->phase, 2);
    n = fo_end_syncrep_waits(db, 0, "INSERT INTO sqllock_lease%", 1);
    b_wait_done(3, pid);
    printf("    (2) acquire waiting for the paused standby, %d canceled: %s "
           "after %lld ms, held %d: %s\n", n,
           sqllock_errname(sh->rc[B_ACQ_CANCEL]),
           (long long)sh->took_ms[B_ACQ_CANCEL], sh->held[B_ACQ_CANCEL],
           sh->msg[B_ACQ_CANCEL]);

    ST(&sh->phase, 3);
    b_wait_done(4, pid);
    printf("    (3) acquire waiting for the paused standby until the "
           "client's %lld ms statement timeout: %s after %lld ms, held %d: "
           "%s\n", (long long)B_BOUND_MS,
           sqllock_errname(sh->rc[B_ACQ_BOUND]),
           (long long)sh->took_ms[B_ACQ_BOUND], sh->held[B_ACQ_BOUND],
           sh->msg[B_ACQ_BOUND]);
    sqllock_close(db);

    if (fo_repl("failover", NULL, &fo_ms) != 0) {
        tu_kill_wait(pid);
        fail_msg("failover failed");
    }
    db2 = fo_open_url(g_url2, 5000);
    if (db2 == NULL) {
        tu_kill_wait(pid);
        fail_msg("cannot open the new primary");
    }
    assert_int_equal(tu_find(db2, "failover-b-acquire", &row), SQLLOCK_OK);
    printf("    failover in %lld ms; on the new primary the canceled "
           "acquire's row is %s\n", (long long)fo_ms,
           row.found ? "there" : "absent (it was committed on the old "
           "primary only)");
    o.ttl_ms = 5000;
    assert_int_equal(sqllock_lease_new(db2, "failover-b-acquire", &o, &other),
                     SQLLOCK_OK);
    rc = sqllock_lease_try_acquire(other);
    printf("    another client's acquire of that name on the new primary: "
           "%s (token %lld)\n", sqllock_errname(rc),
           (long long)sqllock_lease_token(other));
    ST(&sh->phase, 4);
    b_wait_done(5, pid);
    fo_reap_or_kill(pid, 10000, "the child");
    printf("    (4) the lease held since before the pause, renewed on the "
           "new primary: %s, held %d: %s; the canceled acquire's handle "
           "holds: %d\n", sqllock_errname(sh->rc[B_RENEW_AFTER]),
           sh->held[B_RENEW_AFTER], sh->msg[B_RENEW_AFTER],
           sh->held[B_ACQ_CANCEL]);
    if (rc == SQLLOCK_OK)
        sqllock_lease_release(other);
    sqllock_lease_free(other);
    sqllock_close(db2);

    /* The verdicts, all reported before the first failure. */
    if (sh->rc[B_RENEW] == SQLLOCK_OK) {
        printf("    FAIL (1): a renewal whose commit never reached the "
               "synchronous standby reported SQLLOCK_OK\n");
        failures++;
    }
    if (sh->rem_after > sh->rem_before) {
        printf("    FAIL (1): that renewal moved the local deadline "
               "(%lld -> %lld ms)\n", (long long)sh->rem_before,
               (long long)sh->rem_after);
        failures++;
    }
    if (sh->w_state1 != SQLLOCK_STATE_UNCERTAIN) {
        printf("    FAIL (1w): the watched lease went %s (%s), want "
               "uncertain\n", sh->w_state1
                   ? sqllock_lease_state_name(sh->w_state1)
                   : "nowhere (its canceled renewal counted as done)",
               sqllock_errname(sh->w_status1));
        failures++;
    }
    if (sh->rc[B_ACQ_CANCEL] == SQLLOCK_OK || sh->held[B_ACQ_CANCEL]) {
        printf("    FAIL (2): an acquire whose commit never reached the "
               "synchronous standby reported %s, held %d\n",
               sqllock_errname(sh->rc[B_ACQ_CANCEL]), sh->held[B_ACQ_CANCEL]);
        failures++;
    }
    if (sh->rc[B_ACQ_BOUND] == SQLLOCK_OK || sh->held[B_ACQ_BOUND]) {
        printf("    FAIL (3): the bounded acquire reported %s, held %d\n",
               sqllock_errname(sh->rc[B_ACQ_BOUND]), sh->held[B_ACQ_BOUND]);
        failures++;
    }
    if (failures > 0)
        fail_msg("%d false success(es) with a stalled synchronous standby",
                 failures);
    assert_int_equal(sh->rc[B_RENEW], SQLLOCK_ECANCELED);
    assert_int_equal(sh->rc[B_ACQ_CANCEL], SQLLOCK_ECANCELED);
    assert_int_equal(sh->w_status1, SQLLOCK_ECANCELED);
    assert_int_equal(sh->rc[B_ACQ_BOUND], SQLLOCK_ECONNECT);
    /* Within its bound: the same limit as when the timeout itself grew
     * with the factor. */
    assert_true(sh->took_ms[B_ACQ_BOUND] < B_BOUND_MS * g_slow + 3000);
    assert_int_equal(row.found, 0);
    assert_int_equal(rc, SQLLOCK_OK);
    assert_int_equal(sh->rc[B_RENEW_AFTER], SQLLOCK_OK);
    munmap(sh, sizeof *sh);
    g_b = NULL;
}

