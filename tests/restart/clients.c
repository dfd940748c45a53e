/*
 * clients.c -- test_restart's clients across restarts (issue
 * 7, fault 3): their accounts, the holder, waiters, counters and reapers,
 * and the child processes that run them (restart.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "restart.h"
#include "tu_history.h"


/* ------------------------------------------------------------------ */
/* Clients across restarts (issue 7, fault 3)                          */
/* ------------------------------------------------------------------ */

/*
 * Real processes and threads use the server while it is restarted, each
 * with handles it opened itself after fork():
 *
 *   the holder     holds a lease under the watchdog (L7) across every
 *                  restart, and renews a second lease itself;
 *   two waiters    block in sqllock_lease_acquire() on the holder's name,
 *                  one with a long wait, one with short ones;
 *   the counters   3 processes x 2 threads take turns on one lease and
 *                  run a read-increment-write of a counter in shared
 *                  memory under it (the exclusion invariant);
 *   the reapers    a reaper thread (sqllock_reaper_start) and a thread
 *                  that runs sqllock_reap() and leaves expired leases
 *                  behind for them.
 *
 * The parent restarts the server several times while they run. Its
 * progress is one atomic word, the epoch: 2g while the server is up after
 * restart g (0 before the first), 2g - 1 while restart g runs. A call
 * that starts and ends in the same even epoch ran wholly while the server
 * was up: there a client may see SQLLOCK_ECONNECT only on its first call
 * after a restart (the connection the restart cut is found dead when it
 * is used) and never again, since that call dropped it and the next one
 * connects again (E1, docs/contract.md "Lost connections"); when that
 * first call is a release or a renewal, the library sends it again on a
 * fresh connection instead (C3, cl_note_across). During a
 * restart every call must end with ECONNECT or a status of its own kind,
 * never an unclear one, and within its bound.
 */

cl_shared *g_cl;
int g_slow = 1;
tu_hist *g_cl_hist;
char g_cl_hold[200], g_cl_manual[200], g_cl_counter[200],
    g_cl_orphan[200];

/* The counters' lease times grow less than the other bounds: a hold
 * lasts a fraction of a millisecond, and a crash that forgets a release
 * leaves the name busy for the whole ttl. */
static int64_t cl_counter_ms(int64_t ms)
{
    return g_slow > 1 ? 2 * ms : ms;
}

static void cl_bad(cl_client *c, const char *fmt, ...)
{
    va_list ap;

    CL_ADD(&g_cl->failed, 1);
    if (c->bad[0] != '\0')
        return;
    va_start(ap, fmt);
    vsnprintf(c->bad, sizeof c->bad, fmt, ap);
    va_end(ap);
}

static int cl_gen(int epoch)
{
    return (epoch + 1) / 2;
}

static sqllock_db *cl_open(cl_client *c)
{
    sqllock_options o = SQLLOCK_OPTIONS_INIT;
    sqllock_db *db = NULL;
    int rc;

    o.statement_timeout_ms = 10000;
    rc = sqllock_open(g_srv->url, &o, &db);
    if (rc != SQLLOCK_OK) {
        cl_bad(c, "open: %s: %s", sqllock_errname(rc), sqllock_errmsg(db));
        sqllock_close(db);
        return NULL;
    }
    return db;
}

static void cl_begin(cl_call *k, cl_client *c, const char *what)
{
    k->c = c;
    k->what = what;
    k->c3 = 0;
    k->epoch = CL_LD(&g_cl->epoch);
    k->t0 = tu_now_ms();
    k->econnect_before = c->econnect[cl_gen(k->epoch)];
    snprintf(c->in_call, sizeof c->in_call, "%s", what);
    CL_ST(&c->in_call_since, k->t0);
}

/* cl_begin for a release or a renewal: the calls that the library sends
 * again, once, on a fresh connection after a lost one (DESIGN C3). */
static void cl_begin_c3(cl_call *k, cl_client *c, const char *what)
{
    cl_begin(k, c, what);
    k->c3 = 1;
}

/* Raises *p to v if v is larger (several clients write it). */
static void cl_raise(int64_t *p, int64_t v)
{
    int64_t cur = CL_LD(p);

    while (cur < v &&
           !__atomic_compare_exchange_n(p, &cur, v, 0, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST))
        ;
}

/*
 * A restart that a client did not hear (E1, C3). Every restart cuts every
 * connection, and the first call that uses a cut one reports
 * SQLLOCK_ECONNECT -- except a release or a renewal, which the library
 * sends again, once, on a fresh connection (C3): when the server is back
 * by then, that succeeds and the client never hears the cut. That is
 * right, and the only way a client may pass a restart unheard; an
 * acquire, a wait or a reap that reached the new server without a word
 * hid the cut. Which call was the first after the cut is told by a
 * moment when restart g's server was known down:
 *
 *   - A call that begins with no connection (the client's call before it
 *     heard ECONNECT from restart g, and the library drops a lost
 *     connection) must connect. If it ends with ECONNECT too, no server
 *     took connections when it began: not the old one, whose shutdown
 *     had cut that client already, nor the new one, not up yet (if the
 *     new one were up then, it would be up at the connect). cl_end keeps
 *     the latest such start, server_down[g].
 *   - So a call that ended before server_down[g] with a status from a
 *     server reached the old one. A call that ended after it with such a
 *     status reached the new one: by server_down[g] the old server had
 *     been cutting its connections for at least the 20 ms pause after
 *     that client's ECONNECT (cl_pause_after), and answers no more.
 *
 * So when a client that has not heard restart g makes a call Y that
 * reaches a server after server_down[g], and its call before, X, reached
 * one before it, X ran on the old connection, and Y was the first call
 * after the cut and connected again inside the call. cl_end writes the
 * two down (across[g]); cl_run judges them against server_down[g] as it
 * stands at the end (cl_resent there): if Y is a release or a renewal,
 * the library sent it again and the restart passed rightly; any other Y
 * hid the cut, and the check fails, naming both calls.
 *
 * The times of a call are taken before and after it, so an end may come
 * late: a call that answered before server_down[g] may be timed after
 * it. The moment kept grows to the last known start of a failed connect
 * of the restart, close to the server's return, and that is the moment
 * that judges: a call timed late past it would have waited out most of
 * the restart between its answer and its clock. While the restart runs,
 * an earlier moment may mark a pair that the last one does not, so a
 * later pair replaces it. A release or renewal so marked is the client's
 * resumption after the restart (resumed[g]), taken back if an ECONNECT
 * from the same restart follows.
 */
static void cl_note_across(const cl_call *k, int rc, int64_t end, int g)
{
    cl_client *c = k->c;
    cl_across *a;
    int64_t down;

    if (g == 0 || c->econnect[g] > 0 || !c->last_reached)
        return;
    down = CL_LD(&g_cl->server_down[g]);
    if (down == 0 || c->last_end >= down || end <= down)
        return;
    a = &c->across[g];
    a->x_end = c->last_end;
    a->x_rc = c->last_rc;
    snprintf(a->x_what, sizeof a->x_what, "%s", c->last_what);
    a->y_begin = k->t0;
    a->y_end = end;
    a->y_rc = rc;
    a->y_c3 = k->c3;
    snprintf(a->y_what, sizeof a->y_what, "%s", k->what);
    if (k->c3 && !c->resumed[g]) {
        c->resumed[g] = 1;
        c->resumed_c3[g] = 1;
        c->resume_at[g] = end;
    }
}

/*
 * Accounts for one call that returned `rc`: `ok` is the mask of the
 * statuses a call of its kind may return once it reached the server;
 * ECONNECT is judged by the epoch (see above); anything else is an
 * unclear status. A call that reached the server after the client heard
 * ECONNECT from restart g, and before the next restart, shows that the
 * client connected again (its resume time). Every call must end within
 * its wait and a few seconds.
 */
static void cl_end(cl_call *k, int rc, unsigned ok, int64_t wait_ms,
                   sqllock_db *db)
{
    cl_client *c = k->c;
    int64_t end = tu_now_ms(), took = end - k->t0;
    int epoch = CL_LD(&g_cl->epoch), g = cl_gen(k->epoch);
    int up = k->epoch == epoch && k->epoch % 2 == 0;

    CL_ST(&c->in_call_since, 0);
    c->calls++;
    c->by_status[rc >= 0 && rc < CL_NSTATUS ? rc : 0]++;
    if (took > c->longest_ms) {
        c->longest_ms = took;
        snprintf(c->longest_what, sizeof c->longest_what, "%s", k->what);
    }
    /* The handles' bounds are 10 s per statement and per connect; a
     * restart takes about a second, so 5 s past the wait is a hang. */
    if (took > wait_ms + 5000 * g_slow)
        cl_bad(c, "%s took %lld ms (wait %lld ms): a call hung in the "
               "restart", k->what, (long long)took, (long long)wait_ms);
    if (rc == SQLLOCK_ECONNECT) {
        /* Began with no connection during restart g, and could not
         * connect: a moment when the server was down (cl_note_across). */
        if (k->epoch % 2 == 1 && c->last_rc == SQLLOCK_ECONNECT &&
            k->econnect_before > 0)
            cl_raise(&g_cl->server_down[g], k->t0);
        /* A release or renewal taken for the resumption after this
         * restart was not the first call after the cut: this one is. */
        if (c->resumed_c3[cl_gen(epoch)]) {
            c->resumed_c3[cl_gen(epoch)] = 0;
            c->resumed[cl_gen(epoch)] = 0;
        }
        c->econnect[cl_gen(epoch)]++;
        if (c->first_econnect[0] == '\0')
            snprintf(c->first_econnect, sizeof c->first_econnect, "%s: %s",
                     k->what, sqllock_errmsg(db));
        if (up && g == 0)
            cl_bad(c, "%s: ECONNECT before any restart: %s", k->what,
                   sqllock_errmsg(db));
        else if (up && c->up_calls[g] > 0)
            cl_bad(c, "%s: ECONNECT again after restart %d, with the "
                   "server up and its call before already made (it did "
                   "not reconnect on its next call): %s", k->what, g,
                   sqllock_errmsg(db));
    } else if (ok & CL_MASK(rc)) {
        cl_note_across(k, rc, end, cl_gen(epoch));
        if (g > 0 && cl_gen(epoch) == g && !c->resumed[g] &&
            k->econnect_before > 0) {
            c->resumed[g] = 1;
            c->resume_at[g] = end;
        }
    } else {
        cl_bad(c, "%s: unexpected status %s%s: %s", k->what,
               sqllock_errname(rc), up ? " with the server up"
               : " during a restart", sqllock_errmsg(db));
    }
    if (up)
        c->up_calls[g]++;
    c->last_end = end;
    c->last_rc = rc;
    c->last_reached = rc != SQLLOCK_ECONNECT && (ok & CL_MASK(rc)) != 0;
    snprintf(c->last_what, sizeof c->last_what, "%s", k->what);
}

/* After ECONNECT a client pauses a little, as an application would,
 * rather than spin on connects to a server that is down. */
static void cl_pause_after(int rc)
{
    if (rc == SQLLOCK_ECONNECT)
        tu_sleep_ms(20);
}

static void cl_ready(void)
{
    CL_ADD(&g_cl->ready, 1);
}

/* (a) The watchdog's callback: a log of the lease's changes (only the
 * renewer thread writes it; the parent reads it after the end). */
static void cl_on_watch(void *ctx, sqllock_lease *l, int state, int status,
                        const char *msg)
{
    cl_shared *sh = ctx;
    int i = sh->w_nev;

    (void)l;
    if (state == SQLLOCK_STATE_LOST)
        tu_hist_told_lost(g_cl_hist, "holder", g_cl_hold, sh->hold_token);
    if (i < CL_EVENTS_MAX) {
        sh->w_ev[i].t_ms = tu_now_ms();
        sh->w_ev[i].state = state;
        sh->w_ev[i].status = status;
        snprintf(sh->w_ev[i].msg, sizeof sh->w_ev[i].msg, "%s",
                 msg != NULL ? msg : "");
        CL_ST(&sh->w_nev, i + 1);
    }
    if (state != SQLLOCK_STATE_HELD && status != SQLLOCK_ECONNECT &&
        sh->w_bad[0] == '\0')
        snprintf(sh->w_bad, sizeof sh->w_bad, "%s (%s): %s",
                 sqllock_lease_state_name(state), sqllock_errname(status),
                 msg != NULL ? msg : "");
}

/* The history's side of the calls (tu_history.h): a try_acquire,
 * acquire or release of `l` by `who`, recorded around the call; a grant
 * opens the holder's section, a release closes it first. */
static int cl_hist_try(sqllock_lease *l, const char *who, int64_t ttl_ms)
{
    int64_t seq = tu_hist_invoke(g_cl_hist, who, "acquire",
                                 sqllock_lease_name(l), 0, ttl_ms);
    int rc = sqllock_lease_try_acquire(l);

    tu_hist_complete(g_cl_hist, who, seq, tu_hist_outcome(rc),
                     sqllock_lease_token(l));
    if (rc == SQLLOCK_OK)
        tu_hist_section(g_cl_hist, who, sqllock_lease_name(l),
                        sqllock_lease_token(l), 0);
    return rc;
}

static int cl_hist_acquire(sqllock_lease *l, const char *who, int64_t ttl_ms,
                           int64_t wait_ms)
{
    int64_t seq = tu_hist_invoke(g_cl_hist, who, "acquire",
                                 sqllock_lease_name(l), 0, ttl_ms);
    int rc = sqllock_lease_acquire(l, wait_ms);

    tu_hist_complete(g_cl_hist, who, seq, tu_hist_outcome(rc),
                     sqllock_lease_token(l));
    if (rc == SQLLOCK_OK)
        tu_hist_section(g_cl_hist, who, sqllock_lease_name(l),
                        sqllock_lease_token(l), 0);
    return rc;
}

static int cl_hist_release(sqllock_lease *l, const char *who)
{
    int64_t token = sqllock_lease_token(l), seq;
    int rc;

    tu_hist_section_end(g_cl_hist, who, sqllock_lease_name(l), token);
    seq = tu_hist_invoke(g_cl_hist, who, "release", sqllock_lease_name(l),
                         token, 0);
    rc = sqllock_lease_release(l);
    tu_hist_complete(g_cl_hist, who, seq, tu_hist_outcome(rc), token);
    return rc;
}

/* (a) The holder: a watched lease held across every restart (renewed by
 * the watchdog's own connection), and a second lease it renews itself
 * every 100 ms. At the end its release must be OK: no other owner held
 * the lease at any moment since the acquire (L4). */
static int cl_holder(void)
{
    cl_client *c = &g_cl->c[CL_HOLDER];
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_watch_options w = SQLLOCK_WATCH_OPTIONS_INIT;
    sqllock_lease *h = NULL, *m = NULL;
    sqllock_db *db = cl_open(c);
    cl_call k;
    int64_t seq;
    int rc;

    if (db == NULL)
        return 1;
    o.ttl_ms = 15000 * g_slow;
    w.interval_ms = 500;
    w.retry_ms = 50;
    w.callback = cl_on_watch;
    w.ctx = g_cl;
    if (sqllock_lease_new(db, g_cl_hold, &o, &h) != SQLLOCK_OK ||
        sqllock_lease_new(db, g_cl_manual, &o, &m) != SQLLOCK_OK ||
        sqllock_watch_prepare(db) != SQLLOCK_OK ||
        cl_hist_try(h, "holder", o.ttl_ms) != SQLLOCK_OK ||
        cl_hist_try(m, "holder", o.ttl_ms) != SQLLOCK_OK ||
        sqllock_lease_watch(h, &w) != SQLLOCK_OK) {
        cl_bad(c, "holder: setting up: %s", sqllock_errmsg(db));
        goto out;
    }
    tu_hist_watched(g_cl_hist, "holder", g_cl_hold, sqllock_lease_token(h));
    g_cl->hold_token = g_cl->hold_last_token = sqllock_lease_token(h);
    g_cl->hold_tokens[0] = g_cl->hold_token;
    g_cl->hold_grants = 1;
    CL_ST(&g_cl->hold_owner, CL_HOLDER + 1);
    cl_ready();
    while (!CL_LD(&g_cl->stop)) {
        if (!sqllock_lease_held(h))
            CL_ADD(&g_cl->w_notheld, 1);
        cl_begin_c3(&k, c, "renew");
        seq = tu_hist_invoke(g_cl_hist, "holder", "renew", g_cl_manual,
                             sqllock_lease_token(m), o.ttl_ms);
        rc = sqllock_lease_renew(m);
        tu_hist_complete(g_cl_hist, "holder", seq, tu_hist_outcome(rc),
                         sqllock_lease_token(m));
        cl_end(&k, rc, CL_MASK(SQLLOCK_OK), 0, db);
        cl_pause_after(rc);
        tu_sleep_ms(100);
    }
    if (sqllock_lease_state(h) != SQLLOCK_STATE_HELD)
        cl_bad(c, "L7: the watched lease is %s at the end, want held",
               sqllock_lease_state_name(sqllock_lease_state(h)));
    CL_ST(&g_cl->hold_releasing, 1);
    CL_ST(&g_cl->hold_owner, 0);
    cl_begin_c3(&k, c, "release (watched)");
    rc = cl_hist_release(h, "holder");
    cl_end(&k, rc, CL_MASK(SQLLOCK_OK), 0, db);
    cl_begin_c3(&k, c, "release");
    rc = cl_hist_release(m, "holder");
    cl_end(&k, rc, CL_MASK(SQLLOCK_OK), 0, db);
out:
    sqllock_lease_free(h);
    sqllock_lease_free(m);
    sqllock_close(db);
    return c->bad[0] != '\0';
}

/* (b) A waiter on the holder's name: the long one waits up to 60 s per
 * call, the short one 300 ms. Neither may get the lease before the
 * holder lets it go; one of them gets it then, with a larger token. */
static void *cl_waiter(void *arg)
{
    int idx = (int)(intptr_t)arg;
    cl_client *c = &g_cl->c[idx];
    int64_t wait = idx == CL_WAIT_LONG ? 60000 : 300, stopped = 0;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;
    sqllock_db *db = cl_open(c);
    unsigned ok = CL_MASK(SQLLOCK_OK);
    cl_call k;
    char me[16];
    int rc;

    snprintf(me, sizeof me, "waiter%d", idx);
    if (db == NULL)
        return NULL;
    if (idx == CL_WAIT_SHORT)
        ok |= CL_MASK(SQLLOCK_TIMEOUT);
    o.ttl_ms = 15000 * g_slow;
    if (sqllock_lease_new(db, g_cl_hold, &o, &l) != SQLLOCK_OK) {
        cl_bad(c, "waiter: %s", sqllock_errmsg(db));
        goto out;
    }
    cl_ready();
    for (;;) {
        if (CL_LD(&g_cl->stop)) {
            if (idx == CL_WAIT_SHORT)
                break;
            if (stopped == 0)
                stopped = tu_now_ms();
            else if (tu_now_ms() - stopped > 30000 * g_slow) {
                cl_bad(c, "L9: the long waiter did not get the lease within "
                       "30 s of its release");
                break;
            }
        }
        cl_begin(&k, c, "acquire (wait)");
        rc = cl_hist_acquire(l, me, o.ttl_ms, wait);
        cl_end(&k, rc, ok, wait, db);
        cl_pause_after(rc);
        if (rc != SQLLOCK_OK)
            continue;
        if (!CL_LD(&g_cl->hold_releasing))
            cl_bad(c, "L1: granted the lease while the holder still held "
                   "it (two owners)");
        else if (!__atomic_compare_exchange_n(&g_cl->hold_owner,
                                              &(int){ 0 }, idx + 1, 0,
                                              __ATOMIC_SEQ_CST,
                                              __ATOMIC_SEQ_CST))
            cl_bad(c, "L1: granted the lease while client %d held it",
                   CL_LD(&g_cl->hold_owner) - 1);
        else {
            if (sqllock_lease_token(l) <= g_cl->hold_last_token)
                cl_bad(c, "L5: token %lld after %lld",
                       (long long)sqllock_lease_token(l),
                       (long long)g_cl->hold_last_token);
            g_cl->hold_last_token = sqllock_lease_token(l);
            if (g_cl->hold_grants < 4)
                g_cl->hold_tokens[g_cl->hold_grants++] =
                    sqllock_lease_token(l);
            CL_ST(&g_cl->hold_owner, 0);
        }
        cl_begin_c3(&k, c, "release");
        rc = cl_hist_release(l, me);
        cl_end(&k, rc, CL_MASK(SQLLOCK_OK), 0, db);
        break;
    }
out:
    sqllock_lease_free(l);
    sqllock_close(db);
    return NULL;
}

/* (c) The exclusion invariant: a read-increment-write of a counter in
 * shared memory under the lease, with the holder's interval recorded and
 * its token compared with the last one granted on the name. */
static void *cl_counter(void *arg)
{
    int idx = (int)(intptr_t)arg;
    cl_client *c = &g_cl->c[idx];
    const int64_t wait = cl_counter_ms(700);
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;
    sqllock_db *db = cl_open(c);
    unsigned seed = (unsigned)getpid() * 31u + (unsigned)idx;
    cl_call k;
    char me[16];
    int rc;

    snprintf(me, sizeof me, "counter%d", idx);
    if (db == NULL)
        return NULL;
    o.ttl_ms = cl_counter_ms(1500);
    if (sqllock_lease_new(db, g_cl_counter, &o, &l) != SQLLOCK_OK) {
        cl_bad(c, "counter: %s", sqllock_errmsg(db));
        goto out;
    }
    cl_ready();
    while (!CL_LD(&g_cl->stop) && c->bad[0] == '\0') {
        int expected = 0, wrote = 0, n;
        int64_t t0, token;

        cl_begin(&k, c, "acquire (wait)");
        rc = cl_hist_acquire(l, me, o.ttl_ms, wait);
        cl_end(&k, rc, CL_MASK(SQLLOCK_OK) | CL_MASK(SQLLOCK_TIMEOUT), wait,
               db);
        cl_pause_after(rc);
        if (rc != SQLLOCK_OK)
            continue;
        if (__atomic_compare_exchange_n(&g_cl->counter_owner, &expected,
                                        idx + 1, 0, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST)) {
            int g = cl_gen(CL_LD(&g_cl->epoch));
            int64_t v;

            t0 = tu_now_us();
            token = sqllock_lease_token(l);
            if (token <= g_cl->last_token) {
                g_cl->token_back++;
                cl_bad(c, "L5: token %lld granted after %lld",
                       (long long)token, (long long)g_cl->last_token);
            }
            g_cl->last_token = token;
            if (g_cl->gen_tok_min[g] == 0)
                g_cl->gen_tok_min[g] = token;
            g_cl->gen_tok_max[g] = token;
            if (sqllock_lease_held(l)) {
                int64_t seq = tu_hist_invoke(g_cl_hist, me, "write",
                                             g_cl_counter, token, 0);

                v = g_cl->counter;
                tu_sleep_us((long)(rand_r(&seed) % 300));
                g_cl->counter = v + 1;
                g_cl->increments++;
                wrote = 1;
                tu_hist_complete(g_cl_hist, me, seq, "ok", token);
            } else {
                g_cl->skipped++;
            }
            n = CL_ADD(&g_cl->nholds, 1);
            if (n < CL_HOLDS_MAX) {
                g_cl->holds[n].start_us = t0;
                g_cl->holds[n].end_us = tu_now_us();
                g_cl->holds[n].token = token;
                g_cl->holds[n].who = idx;
            }
            CL_ST(&g_cl->counter_owner, 0);
            tu_hist_section_end(g_cl_hist, me, g_cl_counter, token);
        } else {
            CL_ADD(&g_cl->overlaps, 1);
            cl_bad(c, "L1: granted the counter's lease while client %d "
                   "held it (two owners)", expected - 1);
        }
        /* A release whose answer the restart cut off keeps the hold in
         * the handle: it is sent again (its effect may have happened, so
         * LOST is a possible answer then). */
        for (n = 0;; n++) {
            unsigned okr = CL_MASK(SQLLOCK_OK);
            if (n > 0 || !wrote)
                okr |= CL_MASK(SQLLOCK_LOST);
            cl_begin_c3(&k, c, n == 0 ? "release" : "release (again)");
            rc = cl_hist_release(l, me);
            cl_end(&k, rc, okr, 0, db);
            if (rc != SQLLOCK_ECONNECT)
                break;
            cl_pause_after(rc);
            if (tu_now_ms() - k.t0 > 30000 * g_slow) {
                cl_bad(c, "the release did not reach the server in 30 s");
                goto out;
            }
        }
        tu_sleep_us((long)(rand_r(&seed) % 1000));
    }
out:
    sqllock_lease_free(l);
    sqllock_close(db);
    return NULL;
}

/* (d) Leaves expired leases behind (a 200 ms lease freed unreleased)
 * and runs one-shot reaps, every 50 ms. */
static void *cl_orphans(void *arg)
{
    cl_client *c = &g_cl->c[CL_REAP];
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_db *db = cl_open(c);
    char name[260];
    cl_call k;
    int rc, i;

    (void)arg;
    if (db == NULL)
        return NULL;
    o.ttl_ms = 200;
    cl_ready();
    for (i = 0; !CL_LD(&g_cl->stop); i++) {
        sqllock_lease *l = NULL;
        int64_t n = 0;

        snprintf(name, sizeof name, "%s%d", g_cl_orphan, i);
        if (sqllock_lease_new(db, name, &o, &l) != SQLLOCK_OK) {
            cl_bad(c, "orphan: %s", sqllock_errmsg(db));
            break;
        }
        cl_begin(&k, c, "acquire (orphan)");
        rc = sqllock_lease_try_acquire(l);
        cl_end(&k, rc, CL_MASK(SQLLOCK_OK), 0, db);
        if (rc == SQLLOCK_OK)
            g_cl->r_orphans++;
        sqllock_lease_free(l);
        cl_pause_after(rc);
        cl_begin(&k, c, "reap");
        rc = sqllock_reap(db, 0, 100, &n);
        cl_end(&k, rc, CL_MASK(SQLLOCK_OK), 0, db);
        if (rc == SQLLOCK_OK)
            g_cl->r_oneshot_reaped += n;
        cl_pause_after(rc);
        tu_sleep_ms(50);
    }
    sqllock_close(db);
    return NULL;
}

static int cl_orphan_row(void *ctx, const sqllock_lease_info *info)
{
    if (strncmp(info->name, g_cl_orphan, strlen(g_cl_orphan)) == 0)
        (*(int64_t *)ctx)++;
    return 0;
}

/* (d) The reaper thread, watched through its counters: after each
 * restart a pass must succeed again; its failed passes must say
 * ECONNECT; it must stop promptly (P3); and no expired orphan may be
 * left once it and a last one-shot pass have run. */
static int cl_reaper(void)
{
    sqllock_reaper_options ro = SQLLOCK_REAPER_OPTIONS_INIT;
    sqllock_options dbo = SQLLOCK_OPTIONS_INIT;
    cl_client *c = &g_cl->c[CL_REAP];
    sqllock_reaper *r = NULL;
    sqllock_reaper_stats st;
    int64_t errors = 0, base = -1, t, n = 0;
    int seen_epoch = 0, epoch, g, rc;
    pthread_t th;
    sqllock_db *db;
    char why[300];

    dbo.statement_timeout_ms = 10000;
    ro.interval_ms = 50;
    ro.batch = 100;
    ro.db_options = &dbo;
    rc = sqllock_reaper_start(g_srv->url, &ro, &r, why, sizeof why);
    if (rc != SQLLOCK_OK) {
        cl_bad(c, "reaper_start: %s: %s", sqllock_errname(rc), why);
        return 1;
    }
    if (pthread_create(&th, NULL, cl_orphans, NULL) != 0) {
        cl_bad(c, "cannot start a thread");
        sqllock_reaper_stop(r);
        return 1;
    }
    while (!CL_LD(&g_cl->stop)) {
        sqllock_reaper_stats_get(r, &st);
        if (st.errors > errors) {
            g_cl->r_err_status[st.last_status >= 0 &&
                               st.last_status < CL_NSTATUS
                                   ? st.last_status : 0]++;
            if (st.last_status != SQLLOCK_ECONNECT &&
                st.last_status != SQLLOCK_OK)
                cl_bad(c, "P1: a reaper pass failed with %s: %s",
                       sqllock_errname(st.last_status), st.last_error);
            errors = st.errors;
        }
        epoch = CL_LD(&g_cl->epoch);
        if (epoch != seen_epoch) {
            seen_epoch = epoch;
            base = epoch % 2 == 0 ? st.passes : -1;
        }
        g = cl_gen(epoch);
        if (base >= 0 && st.passes > base &&
            st.last_status == SQLLOCK_OK && !g_cl->r_resumed[g]) {
            g_cl->r_resumed[g] = 1;
            g_cl->r_resume_ms[g] = tu_now_ms() - g_cl->up_ms[g];
        }
        tu_sleep_ms(10);
    }
    pthread_join(th, NULL);
    sqllock_reaper_stats_get(r, &st);
    g_cl->r_passes = st.passes;
    g_cl->r_errors = st.errors;
    g_cl->r_reaped = st.reaped;
    t = tu_now_ms();
    sqllock_reaper_stop(r);
    g_cl->r_stop_ms = tu_now_ms() - t;
    /* The last orphans expire; one pass deletes them all. */
    tu_sleep_ms(300);
    db = cl_open(c);
    if (db == NULL)
        return 1;
    rc = sqllock_reap(db, 0, 1000, &n);
    if (rc == SQLLOCK_OK)
        g_cl->r_oneshot_reaped += n;
    n = 0;
    if (rc == SQLLOCK_OK)
        rc = sqllock_list(db, cl_orphan_row, &n);
    if (rc != SQLLOCK_OK)
        cl_bad(c, "the last reap: %s: %s", sqllock_errname(rc),
               sqllock_errmsg(db));
    g_cl->r_left = n;
    sqllock_close(db);
    return 0;
}

/* Runs `fn` on `n` threads from `first` on, and joins them. */
static int cl_threads(void *(*fn)(void *), int first, int n)
{
    pthread_t th[CL_COUNTER_THREADS > 2 ? CL_COUNTER_THREADS : 2];
    int i, started = 0;

    for (i = 0; i < n; i++) {
        if (pthread_create(&th[i], NULL, fn, (void *)(intptr_t)(first + i))
            != 0) {
            cl_bad(&g_cl->c[first + i], "cannot start a thread");
            break;
        }
        started++;
    }
    for (i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    for (i = 0; i < n; i++)
        if (g_cl->c[first + i].bad[0] != '\0')
            return 1;
    return 0;
}


/* A child process: its own handles, opened here, after fork(). The alarm
 * ends a child that hangs even if the parent is gone. */
static void cl_child(cl_role role, int first, unsigned alarm_s)
{
    int rc = 1;

    alarm(alarm_s);
    switch (role) {
    case CL_R_HOLDER:
        rc = cl_holder();
        break;
    case CL_R_WAITERS:
        rc = cl_threads(cl_waiter, CL_WAIT_LONG, 2);
        break;
    case CL_R_COUNTER:
        rc = cl_threads(cl_counter, first, CL_COUNTER_THREADS);
        break;
    case CL_R_REAPER:
        rc = cl_reaper();
        break;
    }
    fflush(stderr);
    _exit(rc);
}

pid_t cl_fork(cl_role role, int first, unsigned alarm_s)
{
    pid_t pid;

    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid == 0)
        cl_child(role, first, alarm_s);
    if (pid < 0) {
        printf("    fork: %s\n", strerror(errno));
        CL_ADD(&g_cl->failed, 1);
    }
    return pid;
}

