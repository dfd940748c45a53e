/*
 * test_stall.c -- a network that stalls (issue 7, fault 4): every client
 * goes through a loopback proxy (tu_proxy.h) that the test freezes. The
 * kernel keeps acknowledging the bytes, so only the library's own
 * client-side deadlines can end a wait.
 *
 *   L6  a watched holder cut off by the stall goes UNCERTAIN, then LOST
 *       by its local deadline, before the server lets a contender on a
 *       direct connection take the lease over;
 *   E1  every call (open, acquire, renew, release, reap, a row lock)
 *       returns within its bound -- connect_timeout_ms, or
 *       statement_timeout_ms -- with SQLLOCK_ECONNECT and a message that
 *       says the server did not answer; after the thaw the same handle
 *       connects again and works;
 *   R1, L9  waits the server bounds (a row-lock wait, a waiting acquire)
 *       are not cut by a shorter statement timeout;
 *   L1  an acquire whose answer was lost may have been granted: the name
 *       stays busy until its ttl (PostgreSQL, where the held-back
 *       statement reaches the server after the thaw);
 *   E2  a negative statement_timeout_ms is refused; an older options
 *       struct (version 1) is not read past its end.
 *
 * Runs once per postgres/mysql URL in SQLLOCK_TEST_URLS; SQLite has no
 * network to stall, so its URLs are passed over.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdatomic.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "tu_proxy.h"
#include "tu_history.h"

static const char *g_url;

/* How much longer than its bound a call may take: a loaded host, or
 * valgrind. */
#define SLACK_MS 1500

static void unique_name(char *buf, size_t size, const char *what)
{
    snprintf(buf, size, "stall-%s-%ld-%lld", what, (long)getpid(),
             (long long)tu_now_ms());
}

/* Opens `url` with the given bounds (0: default); fails the test if the
 * open fails. */
static sqllock_db *open_with(const char *url, int64_t statement_ms,
                             int64_t connect_ms)
{
    sqllock_options o = SQLLOCK_OPTIONS_INIT;
    sqllock_db *db = NULL;
    int rc;

    o.statement_timeout_ms = statement_ms;
    o.connect_timeout_ms = connect_ms;
    rc = sqllock_open(url, &o, &db);
    if (rc != SQLLOCK_OK)
        fail_msg("open %s: %s: %s", url, sqllock_errname(rc),
                 sqllock_errmsg(db));
    return db;
}

/* Starts a proxy to the test server; `purl` gets the URL through it. */
static void start_proxy(tu_proxy *p, char *purl, size_t size)
{
    if (tu_proxy_for_url(p, g_url, purl, size) != 0)
        fail_msg("cannot start the proxy to %s: %s", g_url, strerror(errno));
}

static sqllock_lease *new_lease(sqllock_db *db, const char *name,
                                int64_t ttl_ms, int64_t margin_ms)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;

    o.ttl_ms = ttl_ms;
    o.safety_margin_ms = margin_ms;
    EXPECT_RC(db, sqllock_lease_new(db, name, &o, &l), SQLLOCK_OK, "new");
    return l;
}

/* ------------------------------------------------------------------ */
/* L6: lost before the takeover                                        */
/* ------------------------------------------------------------------ */

/* What the watch callback saw, with the monotonic time of each change. */
typedef struct changes {
    _Atomic int64_t uncertain_at;   /* first UNCERTAIN, 0 if none */
    _Atomic int64_t lost_at;        /* LOST, 0 if none */
    _Atomic int64_t held_again_at;  /* HELD after UNCERTAIN: must not come */
    _Atomic int lost_status;
    _Atomic int order_bad;          /* LOST came without UNCERTAIN first */
} changes;

/* The L6 case's history (tu_history.h): the holder's and the
 * contender's operations, and the moment the callback told the holder. */
static tu_hist *g_hist;
static char g_hist_name[128];
static _Atomic int64_t g_hist_token;

static void on_change(void *ctx, sqllock_lease *l, int state, int status,
                      const char *msg)
{
    changes *c = ctx;

    if (state == SQLLOCK_STATE_LOST)
        tu_hist_told_lost(g_hist, "holder", g_hist_name,
                          atomic_load(&g_hist_token));
    int64_t now = tu_now_ms();
    int64_t zero = 0;
    (void)l;
    (void)msg;

    if (state == SQLLOCK_STATE_UNCERTAIN)
        atomic_compare_exchange_strong(&c->uncertain_at, &zero, now);
    else if (state == SQLLOCK_STATE_HELD)
        atomic_store(&c->held_again_at, now);
    else if (state == SQLLOCK_STATE_LOST) {
        if (atomic_load(&c->uncertain_at) == 0)
            atomic_store(&c->order_bad, 1);
        atomic_store(&c->lost_status, status);
        atomic_store(&c->lost_at, now);
    }
}

/*
 * L6: the holder, and its renewer, reach the server through the proxy;
 * the proxy freezes just after the lease is taken. The renewer's
 * statement runs out of time (UNCERTAIN), its reconnects fail, and the
 * local deadline makes the lease LOST. A contender on a direct connection
 * tries all along; its first success must be SENT after the holder's own
 * view (sqllock_lease_state(), read in the same loop with the same clock)
 * already said LOST -- and after the callback said so too, since the
 * safety margin is longer than the statement and connect timeouts (the
 * header's rule for hearing LOST in time).
 */
static void test_stall_L6_lost_before_takeover(void **state)
{
    const int64_t ttl = 6000, margin = 3000, stmt = 500, conn = 2000;
    sqllock_watch_options w = SQLLOCK_WATCH_OPTIONS_INIT;
    sqllock_db *hdb, *cdb;
    sqllock_lease *hl, *cl;
    tu_proxy px;
    changes ch;
    char purl[1024], name[128], hpath[1100], *hdir;
    int64_t t0, end, seen_lost = 0, takeover_sent = 0, sent, seq;
    int rc;
    (void)state;

    memset(&ch, 0, sizeof ch);
    unique_name(name, sizeof name, "L6");
    start_proxy(&px, purl, sizeof purl);
    hdb = open_with(purl, stmt, conn);
    cdb = open_with(g_url, 0, 0);
    EXPECT_RC(hdb, sqllock_watch_prepare(hdb), SQLLOCK_OK, "watch prepare");
    hl = new_lease(hdb, name, ttl, margin);
    cl = new_lease(cdb, name, ttl, 0);
    hdir = tu_mkdtemp();
    snprintf(hpath, sizeof hpath, "%s/history.txt", hdir);
    g_hist = tu_hist_open(hpath);
    assert_non_null(g_hist);
    snprintf(g_hist_name, sizeof g_hist_name, "%s", name);
    t0 = tu_now_ms();
    seq = tu_hist_invoke(g_hist, "holder", "acquire", name, 0, ttl);
    rc = sqllock_lease_try_acquire(hl);
    tu_hist_complete(g_hist, "holder", seq, tu_hist_outcome(rc),
                     sqllock_lease_token(hl));
    EXPECT_RC(hdb, rc, SQLLOCK_OK, "acquire");
    atomic_store(&g_hist_token, sqllock_lease_token(hl));
    tu_hist_section(g_hist, "holder", name, sqllock_lease_token(hl), 0);
    w.interval_ms = 500;
    w.callback = on_change;
    w.ctx = &ch;
    EXPECT_RC(hdb, sqllock_lease_watch(hl, &w), SQLLOCK_OK, "watch");
    tu_hist_watched(g_hist, "holder", name, sqllock_lease_token(hl));
    assert_int_equal(tu_proxy_freeze(&px), 0);

    end = t0 + ttl + 10000;
    while (tu_now_ms() < end) {
        if (seen_lost == 0 && sqllock_lease_state(hl) == SQLLOCK_STATE_LOST)
            seen_lost = tu_now_ms();
        sent = tu_now_ms();
        seq = tu_hist_invoke(g_hist, "contender", "acquire", name, 0, ttl);
        rc = sqllock_lease_try_acquire(cl);
        tu_hist_complete(g_hist, "contender", seq, tu_hist_outcome(rc),
                         sqllock_lease_token(cl));
        if (rc == SQLLOCK_OK) {
            takeover_sent = sent;
            tu_hist_section(g_hist, "contender", name,
                            sqllock_lease_token(cl), 0);
            break;
        }
        if (rc != SQLLOCK_BUSY)
            fail_msg("contender: %s: %s", sqllock_errname(rc),
                     sqllock_errmsg(cdb));
        tu_sleep_ms(10);
    }
    if (takeover_sent == 0)
        fail_msg("the contender never got the lease of the stalled holder");
    if (seen_lost == 0 || seen_lost >= takeover_sent)
        fail_msg("L6: the holder still believed it held the lease when the "
                 "contender's winning acquire was sent (%lld ms after the "
                 "acquire; the holder saw LOST at %lld ms)",
                 (long long)(takeover_sent - t0),
                 seen_lost ? (long long)(seen_lost - t0) : -1LL);
    /* The server's expiry, not the holder's deadline, let the contender
     * in: never before the ttl. */
    assert_true(takeover_sent - t0 >= ttl - 100);

    /* The callback: UNCERTAIN first, then LOST, never HELD again. */
    end = tu_now_ms() + conn + stmt + SLACK_MS;
    while (atomic_load(&ch.lost_at) == 0 && tu_now_ms() < end)
        tu_sleep_ms(10);
    if (atomic_load(&ch.uncertain_at) == 0)
        fail_msg("L7: the stalled renewals never made the lease UNCERTAIN");
    if (atomic_load(&ch.lost_at) == 0)
        fail_msg("L7: the callback never reported LOST");
    assert_int_equal(atomic_load(&ch.order_bad), 0);
    assert_int_equal(atomic_load(&ch.held_again_at), 0);
    assert_int_equal(atomic_load(&ch.lost_status), SQLLOCK_TIMEOUT);
    assert_true(atomic_load(&ch.uncertain_at) < atomic_load(&ch.lost_at));
    if (atomic_load(&ch.lost_at) >= takeover_sent)
        fail_msg("L7: the LOST callback came %lld ms after the acquire, "
                 "not before the takeover at %lld ms, although the safety "
                 "margin (%lld ms) exceeds both timeouts",
                 (long long)(atomic_load(&ch.lost_at) - t0),
                 (long long)(takeover_sent - t0), (long long)margin);

    /* After the thaw the holder hears that another owner took over. */
    assert_int_equal(tu_proxy_thaw(&px), 0);
    tu_hist_section_end(g_hist, "holder", name, sqllock_lease_token(hl));
    seq = tu_hist_invoke(g_hist, "holder", "release", name,
                         sqllock_lease_token(hl), 0);
    rc = sqllock_lease_release(hl);
    tu_hist_complete(g_hist, "holder", seq, tu_hist_outcome(rc),
                     sqllock_lease_token(hl));
    EXPECT_RC(hdb, rc, SQLLOCK_LOST, "stale release");
    tu_hist_section_end(g_hist, "contender", name, sqllock_lease_token(cl));
    seq = tu_hist_invoke(g_hist, "contender", "release", name,
                         sqllock_lease_token(cl), 0);
    rc = sqllock_lease_release(cl);
    tu_hist_complete(g_hist, "contender", seq, tu_hist_outcome(rc),
                     sqllock_lease_token(cl));
    EXPECT_RC(cdb, rc, SQLLOCK_OK, "release");
    /* The whole of it against the lease model: the holder's hold ends
     * where the callback told it (H1), the contender's grant came after
     * the holder's ttl (H3), the stale release said LOST (H4). */
    {
        tu_hist *h = g_hist;
        int bad;

        g_hist = NULL;
        tu_hist_close(h);
        bad = tu_hist_check(hpath, stdout, NULL);
        if (bad != 0)
            fail_msg("the history checker found %d violations in %s", bad,
                     hpath);
        tu_rmdir(hdir);
        free(hdir);
    }
    sqllock_lease_free(hl);
    sqllock_lease_free(cl);
    sqllock_close(hdb);
    sqllock_close(cdb);
    tu_proxy_stop(&px);
}

/* ------------------------------------------------------------------ */
/* E1: every call has a bound                                          */
/* ------------------------------------------------------------------ */

/* Fails unless the call took no longer than `bound` + SLACK_MS (and, when
 * `at_least` > 0, at least that long: it really waited) and returned
 * SQLLOCK_ECONNECT with a message that says why. */
static void expect_bounded(sqllock_db *db, const char *what, int rc,
                           int64_t took, int64_t at_least, int64_t bound,
                           const char *words)
{
    if (rc != SQLLOCK_ECONNECT)
        fail_msg("%s through a frozen network: %s, want SQLLOCK_ECONNECT "
                 "(%s)", what, sqllock_errname(rc), sqllock_errmsg(db));
    if (took > bound + SLACK_MS)
        fail_msg("%s through a frozen network took %lld ms; its bound is "
                 "%lld ms", what, (long long)took, (long long)bound);
    if (took < at_least)
        fail_msg("%s gave up after %lld ms, before its bound of %lld ms",
                 what, (long long)took, (long long)at_least);
    expect_msg_any(db, what, words);
}

#define TIMED(took, call)                                                   \
    do {                                                                    \
        int64_t t_ = tu_now_ms();                                           \
        rc = (call);                                                        \
        (took) = tu_now_ms() - t_;                                          \
    } while (0)

/* Thaws, connects the handle again (a listing is one statement), and
 * freezes: the next call meets the stall on an open connection. This is
 * set-up, not a bound under test: a connect that a loaded machine (a
 * SCRAM handshake under valgrind) makes outlast the handle's connect
 * timeout is tried again, for a while. */
static void refreeze(tu_proxy *px, sqllock_db *db)
{
    int64_t end;
    tu_row row;
    int rc;

    assert_int_equal(tu_proxy_thaw(px), 0);
    end = tu_now_ms() + tu_scaled_ms(10000);
    while ((rc = tu_find(db, "none", &row)) == SQLLOCK_ECONNECT &&
           tu_now_ms() < end)
        tu_sleep_ms(50);
    EXPECT_RC(db, rc, SQLLOCK_OK, "list after thaw");
    assert_int_equal(tu_proxy_freeze(px), 0);
}

/*
 * E1: sqllock_open through a network that stalls returns within its
 * connect timeout with SQLLOCK_ECONNECT; after the thaw it works.
 */
static void test_stall_E1_open_is_bounded(void **state)
{
    const int64_t conn = 1000;
    sqllock_options o = SQLLOCK_OPTIONS_INIT;
    sqllock_db *db = NULL;
    tu_proxy px;
    char purl[1024];
    int64_t took;
    int rc;
    (void)state;

    start_proxy(&px, purl, sizeof purl);
    assert_int_equal(tu_proxy_freeze(&px), 0);
    o.connect_timeout_ms = conn;
    TIMED(took, sqllock_open(purl, &o, &db));
    expect_bounded(db, "open", rc, took, conn - 100, conn,
                   "connect|handshake|timeout|within");
    sqllock_close(db);
    /* After the thaw it opens. */
    assert_int_equal(tu_proxy_thaw(&px), 0);
    db = open_with(purl, 0, 5000);
    sqllock_close(db);
    tu_proxy_stop(&px);
}

/*
 * E1: with the network stalled, each call on an open connection returns
 * within statement_timeout_ms with SQLLOCK_ECONNECT ("did not answer"),
 * the connection dropped; the next call while still stalled fails within
 * the connect timeout; after the thaw the same handle works again. A
 * renewal and a release are sent once more on a fresh connection after
 * the lost one (DESIGN C3), so theirs is the statement timeout plus the
 * connect timeout of the retry, which the stall makes fail too. (A
 * release keeps trying for the lease's release_timeout_ms, here 2 s: the
 * first retry's connect outlasts it. Its bound is the statement timeout,
 * plus the release timeout, plus the connect in progress then.)
 */
static void test_stall_E1_calls_are_bounded(void **state)
{
    const int64_t stmt = 1000, conn = 3000;
    const char *said = "did not answer within";
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_db *db;
    sqllock_lease *held = NULL, *other;
    sqllock_txn *txn = NULL;
    tu_proxy px;
    char purl[1024], name[128], name2[128];
    const char *names[1];
    int64_t took, deleted = 0;
    int rc;
    (void)state;

    unique_name(name, sizeof name, "E1-held");
    unique_name(name2, sizeof name2, "E1-other");
    start_proxy(&px, purl, sizeof purl);
    db = open_with(purl, stmt, conn);
    o.ttl_ms = 60000;
    o.release_timeout_ms = 2000;
    EXPECT_RC(db, sqllock_lease_new(db, name, &o, &held), SQLLOCK_OK, "new");
    other = new_lease(db, name2, 2000, 0);
    EXPECT_RC(db, sqllock_lease_try_acquire(held), SQLLOCK_OK, "acquire");

    assert_int_equal(tu_proxy_freeze(&px), 0);
    TIMED(took, sqllock_lease_renew(held));
    expect_bounded(db, "renew", rc, took, stmt + conn - 100, stmt + conn,
                   said);
    expect_msg_any(db, "renew", "sent again on a fresh connection");
    /* The connection is gone; while stalled, connecting again is bounded
     * by the connect timeout. */
    TIMED(took, sqllock_lease_renew(held));
    expect_bounded(db, "renew (reconnect)", rc, took, 0, conn,
                   "connect|handshake|timeout|within");
    assert_int_equal(sqllock_lease_count(held), 1);

    refreeze(&px, db);
    TIMED(took, sqllock_lease_try_acquire(other));
    expect_bounded(db, "try_acquire", rc, took, stmt - 100, stmt, said);
    assert_int_equal(sqllock_lease_count(other), 0);

    refreeze(&px, db);
    TIMED(took, sqllock_reap(db, 3600000, 10, &deleted));
    expect_bounded(db, "reap", rc, took, stmt - 100, stmt, said);

    refreeze(&px, db);
    names[0] = name2;
    EXPECT_RC(db, sqllock_txn_begin(db, NULL, &txn), SQLLOCK_OK, "begin");
    TIMED(took, sqllock_txn_lock(txn, names, 1, SQLLOCK_LOCK_WAIT, NULL));
    expect_bounded(db, "txn lock", rc, took, stmt - 100, stmt, said);
    sqllock_txn_free(txn);

    refreeze(&px, db);
    TIMED(took, sqllock_lease_release(held));
    expect_bounded(db, "release", rc, took, stmt + conn - 100, stmt + conn,
                   said);
    expect_msg_any(db, "release", "sent again 1 time on fresh connections");
    /* The answer never came: the handle keeps its hold. */
    assert_int_equal(sqllock_lease_count(held), 1);

    /* After the thaw the same handle connects again and works. The
     * release held back in the proxy may reach the server on its old
     * connection after the thaw: then the row is gone already (LOST). */
    assert_int_equal(tu_proxy_thaw(&px), 0);
    rc = sqllock_lease_release(held);
    if (rc != SQLLOCK_OK && rc != SQLLOCK_LOST)
        fail_msg("release after the thaw: %s: %s", sqllock_errname(rc),
                 sqllock_errmsg(db));
    assert_int_equal(sqllock_lease_count(held), 0);
    EXPECT_RC(db, sqllock_lease_acquire(held, 10000), SQLLOCK_OK,
              "acquire after the thaw");
    EXPECT_RC(db, sqllock_lease_release(held), SQLLOCK_OK, "release");
    sqllock_lease_free(held);
    sqllock_lease_free(other);
    sqllock_close(db);
    tu_proxy_stop(&px);
}

/* ------------------------------------------------------------------ */
/* Waits the server bounds are not cut                                 */
/* ------------------------------------------------------------------ */

/*
 * R1: a row-lock wait longer than the statement timeout is not cut: it
 * ends when the transaction's lock timeout passes (SQLLOCK_ELOCKED), not
 * at the statement timeout (SQLLOCK_ECONNECT).
 */
static void test_stall_R1_lock_wait_is_not_cut(void **state)
{
    const int64_t stmt = 1000, lock_wait = 3000;
    sqllock_txn_options to = SQLLOCK_TXN_OPTIONS_INIT;
    sqllock_db *blocker, *db;
    sqllock_txn *bt = NULL, *t = NULL;
    tu_proxy px;
    char purl[1024], name[128];
    const char *names[1];
    int64_t took;
    int rc;
    (void)state;

    unique_name(name, sizeof name, "R1");
    names[0] = name;
    start_proxy(&px, purl, sizeof purl);
    blocker = open_with(g_url, 0, 0);
    db = open_with(purl, stmt, 0);
    EXPECT_RC(blocker, sqllock_txn_begin(blocker, NULL, &bt), SQLLOCK_OK,
              "begin");
    EXPECT_RC(blocker, sqllock_txn_lock(bt, names, 1, SQLLOCK_LOCK_WAIT,
                                        NULL), SQLLOCK_OK, "blocker lock");
    to.lock_timeout_ms = lock_wait;
    EXPECT_RC(db, sqllock_txn_begin(db, &to, &t), SQLLOCK_OK, "begin");
    TIMED(took, sqllock_txn_lock(t, names, 1, SQLLOCK_LOCK_WAIT, NULL));
    if (rc != SQLLOCK_ELOCKED)
        fail_msg("R1: a %lld ms lock wait with a %lld ms statement timeout "
                 "ended with %s after %lld ms (%s), want SQLLOCK_ELOCKED",
                 (long long)lock_wait, (long long)stmt, sqllock_errname(rc),
                 (long long)took, sqllock_errmsg(db));
    assert_true(took >= lock_wait - 100);
    /* The server ended the wait (ELOCKED, above), not the client's bound
     * of lock_wait + stmt (that is ECONNECT); what comes on top is this
     * process's scheduling, which a loaded machine stretches. */
    if (took > lock_wait + stmt + tu_scaled_ms(SLACK_MS))
        fail_msg("R1: the lock wait took %lld ms (lock timeout %lld ms, "
                 "statement timeout %lld ms, slack %lld ms scaled to the "
                 "load)", (long long)took, (long long)lock_wait,
                 (long long)stmt, (long long)tu_scaled_ms(SLACK_MS));
    sqllock_txn_free(t);
    /* The handle works on afterwards, its bound grown for lock waits. */
    t = NULL;
    EXPECT_RC(db, sqllock_txn_begin(db, &to, &t), SQLLOCK_OK, "begin again");
    EXPECT_RC(db, sqllock_txn_lock(t, names, 1, SQLLOCK_LOCK_NOWAIT, NULL),
              SQLLOCK_ELOCKED, "nowait");
    sqllock_txn_free(t);
    sqllock_txn_free(bt);
    sqllock_close(db);
    sqllock_close(blocker);
    tu_proxy_stop(&px);
}

/*
 * L9: a waiting acquire longer than the statement timeout is not cut
 * (on PostgreSQL it LISTENs between polls, a wait timed by its own
 * deadline): SQLLOCK_TIMEOUT when the wait is over.
 */
static void test_stall_L9_acquire_wait_is_not_cut(void **state)
{
    const int64_t stmt = 1000, wait = 3000;
    sqllock_db *holder, *db;
    sqllock_lease *hl, *l;
    tu_proxy px;
    char purl[1024], name[128];
    int64_t took;
    int rc;
    (void)state;

    unique_name(name, sizeof name, "L9");
    start_proxy(&px, purl, sizeof purl);
    holder = open_with(g_url, 0, 0);
    db = open_with(purl, stmt, 0);
    hl = new_lease(holder, name, 60000, 0);
    l = new_lease(db, name, 60000, 0);
    EXPECT_RC(holder, sqllock_lease_try_acquire(hl), SQLLOCK_OK, "acquire");
    TIMED(took, sqllock_lease_acquire(l, wait));
    if (rc != SQLLOCK_TIMEOUT)
        fail_msg("L9: a %lld ms wait with a %lld ms statement timeout ended "
                 "with %s after %lld ms (%s), want SQLLOCK_TIMEOUT",
                 (long long)wait, (long long)stmt, sqllock_errname(rc),
                 (long long)took, sqllock_errmsg(db));
    assert_true(took >= wait - 100);
    if (took > wait + stmt + tu_scaled_ms(SLACK_MS))
        fail_msg("L9: the wait took %lld ms (wait %lld ms, statement "
                 "timeout %lld ms, slack %lld ms scaled to the load)",
                 (long long)took, (long long)wait, (long long)stmt,
                 (long long)tu_scaled_ms(SLACK_MS));
    EXPECT_RC(holder, sqllock_lease_release(hl), SQLLOCK_OK, "release");
    sqllock_lease_free(hl);
    sqllock_lease_free(l);
    sqllock_close(db);
    sqllock_close(holder);
    tu_proxy_stop(&px);
}

/* ------------------------------------------------------------------ */
/* L1: an acquire whose answer was lost                                */
/* ------------------------------------------------------------------ */

/*
 * L1/L6: an acquire sent into the stall gives up (SQLLOCK_ECONNECT) and
 * the handle does not hold; yet the statement may still reach the server
 * and be granted, to an owner no one holds. On PostgreSQL the whole
 * statement is one message that the proxy hands on at the thaw, before
 * the client's goodbye, so it is granted: the name is then busy for its
 * ttl by the server's clock, and free after it -- never two holders, and
 * never stuck. (On MySQL the held-back message is START TRANSACTION, so
 * nothing is granted there; the test checks only what holds for both.)
 */
static void test_stall_L1_lost_answer_acquire(void **state)
{
    const int64_t stmt = 1000, ttl = 3000;
    sqllock_db *db, *other;
    sqllock_lease *l, *probe;
    tu_proxy px;
    tu_row row;
    char purl[1024], name[128];
    int64_t took, end, t_sent;
    int rc, is_pg = strcmp(tu_url_driver(g_url), "postgres") == 0;
    (void)state;

    unique_name(name, sizeof name, "L1");
    start_proxy(&px, purl, sizeof purl);
    db = open_with(purl, stmt, 0);
    other = open_with(g_url, 0, 0);
    l = new_lease(db, name, ttl, 0);
    probe = new_lease(other, name, ttl, 0);
    /* Once through, so that the acquire is prepared on the connection
     * and the stalled call is its one round trip, not the prepare. */
    EXPECT_RC(db, sqllock_lease_try_acquire(l), SQLLOCK_OK, "acquire");
    EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
    refreeze(&px, db);
    t_sent = tu_now_ms();
    TIMED(took, sqllock_lease_try_acquire(l));
    expect_bounded(db, "acquire", rc, took, stmt - 100, stmt,
                   "did not answer within");
    assert_int_equal(sqllock_lease_count(l), 0);
    assert_int_equal(sqllock_lease_held(l), 0);
    assert_int_equal(tu_proxy_thaw(&px), 0);
    if (is_pg) {
        /* The held-back acquire reaches the server now. */
        end = tu_now_ms() + 5000;
        do {
            EXPECT_RC(other, tu_find(other, name, &row), SQLLOCK_OK, "list");
            if (!row.found)
                tu_sleep_ms(20);
        } while (!row.found && tu_now_ms() < end);
        if (!row.found)
            fail_msg("L1: the held-back acquire never reached the server");
        EXPECT_RC(other, sqllock_lease_try_acquire(probe), SQLLOCK_BUSY,
                  "the name is busy until the ttl");
    }
    /* Free after the ttl, by the server's clock, whatever happened. */
    end = tu_now_ms() + ttl + 10000;
    do {
        rc = sqllock_lease_try_acquire(probe);
        if (rc == SQLLOCK_BUSY)
            tu_sleep_ms(50);
    } while (rc == SQLLOCK_BUSY && tu_now_ms() < end);
    EXPECT_RC(other, rc, SQLLOCK_OK, "acquire after the ttl");
    if (is_pg)
        assert_true(tu_now_ms() - t_sent >= ttl - 100);
    EXPECT_RC(other, sqllock_lease_release(probe), SQLLOCK_OK, "release");
    sqllock_lease_free(l);
    sqllock_lease_free(probe);
    sqllock_close(other);
    sqllock_close(db);
    tu_proxy_stop(&px);
}

/* ------------------------------------------------------------------ */
/* E2: the option itself                                               */
/* ------------------------------------------------------------------ */

/*
 * E2: a negative statement_timeout_ms is SQLLOCK_EINVAL with a message
 * naming it; a version-1 options struct (from a caller built before the
 * field existed) is not read past its end, so whatever lies there is
 * ignored.
 */
static void test_stall_E2_bad_statement_timeout(void **state)
{
    sqllock_options o = SQLLOCK_OPTIONS_INIT;
    sqllock_db *db = NULL;
    (void)state;

    assert_int_equal(SQLLOCK_OPTIONS_VERSION, 2);
    o.statement_timeout_ms = -1;
    EXPECT_RC(db, sqllock_open(g_url, &o, &db), SQLLOCK_EINVAL, "negative");
    expect_msg_any(db, "negative statement timeout", "statement_timeout_ms");
    sqllock_close(db);
    db = NULL;
    o.statement_timeout_ms = INT64_MAX;
    EXPECT_RC(db, sqllock_open(g_url, &o, &db), SQLLOCK_EINVAL, "huge");
    expect_msg_any(db, "huge statement timeout", "statement_timeout_ms");
    sqllock_close(db);
    db = NULL;
    /* A version-1 caller: the field is not part of its struct. */
    o.struct_version = 1;
    o.statement_timeout_ms = -1;
    EXPECT_RC(db, sqllock_open(g_url, &o, &db), SQLLOCK_OK, "version 1");
    sqllock_close(db);
}

/* Creates the schema once per database (idempotent). */
static int group_setup(void **state)
{
    (void)state;
    return tu_init_schema(g_url);
}

/* A test that failed midway leaves its proxy running: stop it. */
static int teardown(void **state)
{
    (void)state;
    tu_proxy_stop_all();
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_stall_E2_bad_statement_timeout,
                                  teardown),
        cmocka_unit_test_teardown(test_stall_E1_open_is_bounded, teardown),
        cmocka_unit_test_teardown(test_stall_E1_calls_are_bounded, teardown),
        cmocka_unit_test_teardown(test_stall_R1_lock_wait_is_not_cut,
                                  teardown),
        cmocka_unit_test_teardown(test_stall_L9_acquire_wait_is_not_cut,
                                  teardown),
        cmocka_unit_test_teardown(test_stall_L1_lost_answer_acquire,
                                  teardown),
        cmocka_unit_test_teardown(test_stall_L6_lost_before_takeover,
                                  teardown),
    };
    return TU_RUN_PER_URL_NO_SQLITE("stall", &g_url, tests, group_setup, NULL,
                                    "SQLite has no network to stall; its "
                                    "waits are bounded by busy_timeout_ms "
                                    "(test_badinput, test_watchdog)");
}
