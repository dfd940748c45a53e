/*
 * test_observe.c -- observers (issue 31): following lock names without
 * holding them, on every database. An observer in the test's thread, on a
 * handle of its own; the holders in another thread (the "actor", with
 * its own handle), in an election's candidates (threads of their own),
 * or in the `sqllock` tool's processes.
 *
 * Each case acts, then waits for the change it made, in order, and
 * counts them: every change kind seen (acquire, release, expiry -- a
 * short ttl, not renewed --, takeover after expiry, forced release),
 * each within the stated bound (the poll interval and a round trip,
 * measured on the monotonic clock from the end of the action, with an
 * allowance for a loaded machine), none missed, and none invented (the
 * observer stays quiet when nothing happens). The rules each checks are
 * the lease rows' (contract L1, L2, L5: the tokens are the holders'),
 * M1, M2 and M4 for the primitives' rows, C5 for the forced release,
 * and L9 for PostgreSQL's wake-up of an observer.
 *
 * The cases of `sqllock watch` are in observe/tool.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <pthread.h>
#include <stdatomic.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "observe/observe.h"

/* The observers' poll interval: the bound under test. */
#define INTERVAL_MS 200

const char *g_url;

/* What a change may take beyond the bound on a loaded machine. */
static int64_t allowance_ms(void)
{
    return tu_scaled_ms(1500);
}

/* The stated bound and the allowance: how long a case waits for a
 * change. */
static int64_t within_ms(void)
{
    return INTERVAL_MS + allowance_ms();
}

static const char *uniq(char *buf, size_t size, const char *tail)
{
    snprintf(buf, size, "obs-%ld-%s", (long)getpid(), tail);
    return buf;
}

/* A derived row's name as the observer reports it: "BASE [TAG]". */
static void shown(const char *raw, char *out, size_t size)
{
    const char *sep = strchr(raw, '\x1f');

    if (sep == NULL)
        snprintf(out, size, "%s", raw);
    else
        snprintf(out, size, "%.*s [%s]", (int)(sep - raw), raw, sep + 1);
}

/* ---- the actor: a thread that holds and lets go on command ------------ */

enum { ACT_ACQUIRE, ACT_RELEASE, ACT_FORCE, ACT_SEM_ACQUIRE, ACT_SEM_RELEASE,
       ACT_RW_ACQUIRE, ACT_RW_RELEASE, ACT_QUIT };

typedef struct actor {
    pthread_t th;
    sqllock_db *db;             /* the actor's own handle */
    int op;
    void *arg;                  /* a lease, a sqllock_sem, a sqllock_rw, a
                                   name */
    int rc;
    char msg[640];
    _Atomic int posted;
    _Atomic int done;
} actor;

static int act_once(actor *a)
{
    sqllock_force_options fo = SQLLOCK_FORCE_OPTIONS_INIT;

    switch (a->op) {
    case ACT_ACQUIRE:
        return sqllock_lease_try_acquire(a->arg);
    case ACT_RELEASE:
        return sqllock_lease_release(a->arg);
    case ACT_FORCE:
        fo.live = 1;
        fo.who = "test_observe";
        return sqllock_force_release(a->db, a->arg, &fo, NULL, NULL);
    case ACT_SEM_ACQUIRE:
        return sqllock_sem_try_acquire(a->arg);
    case ACT_SEM_RELEASE:
        return sqllock_sem_release(a->arg);
    case ACT_RW_ACQUIRE:
        return sqllock_rw_try_acquire(a->arg);
    case ACT_RW_RELEASE:
        return sqllock_rw_release(a->arg);
    }
    return SQLLOCK_EINVAL;
}

static void *actor_main(void *p)
{
    actor *a = p;
    int seen = 0;

    for (;;) {
        while (atomic_load(&a->posted) == seen)
            tu_sleep_ms(1);
        seen = atomic_load(&a->posted);
        if (a->op == ACT_QUIT)
            break;
        a->rc = act_once(a);
        snprintf(a->msg, sizeof a->msg, "%s", sqllock_errmsg(a->db));
        atomic_store(&a->done, seen);
    }
    return NULL;
}

static actor *actor_start(void)
{
    actor *a = calloc(1, sizeof *a);

    assert_non_null(a);
    a->db = tu_open_or_fail(g_url);
    assert_int_equal(pthread_create(&a->th, NULL, actor_main, a), 0);
    return a;
}

/* Runs `op` on the actor's thread and waits for it; fails the test
 * unless it returned SQLLOCK_OK. Returns when it ended (tu_now_ms()). */
static int64_t act(actor *a, int op, void *arg)
{
    int n = atomic_load(&a->posted) + 1;
    int64_t end = tu_now_ms() + tu_scaled_ms(30000);

    a->op = op;
    a->arg = arg;
    atomic_store(&a->posted, n);
    TU_WAIT_WHILE(atomic_load(&a->done) != n, end, 1);
    if (atomic_load(&a->done) != n)
        fail_msg("the actor did not finish its step in time");
    if (a->rc != SQLLOCK_OK)
        fail_msg("actor step %d: %s (%s)", op, sqllock_errname(a->rc),
                 a->msg);
    return tu_now_ms();
}

static void actor_stop(actor *a)
{
    a->op = ACT_QUIT;
    atomic_fetch_add(&a->posted, 1);
    pthread_join(a->th, NULL);
    sqllock_close(a->db);
    free(a);
}

/* A lease on the actor's handle (made here, used on its thread only). */
static sqllock_lease *actor_lease(actor *a, const char *name, int64_t ttl_ms,
                                  const char *holder)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;

    o.ttl_ms = ttl_ms;
    o.holder = holder;
    EXPECT_RC(a->db, sqllock_lease_new(a->db, name, &o, &l), SQLLOCK_OK,
              "lease_new");
    return l;
}

/* ---- the observer's side ---------------------------------------------- */

static sqllock_observer *observer(sqllock_db *db, const char *const *names,
                                  int n, int64_t interval_ms, int initial)
{
    sqllock_observer_options oo = SQLLOCK_OBSERVER_OPTIONS_INIT;
    sqllock_observer *o = NULL;

    oo.interval_ms = interval_ms;
    oo.include_initial = initial;
    EXPECT_RC(db, sqllock_observer_new(db, names, n, &oo, &o), SQLLOCK_OK,
              "observer_new");
    return o;
}

/* The next change must be `type` of row `name` with `token` (-1: any)
 * and `old_token`, within `ms`; checks its lag against the bound too.
 * *out (may be NULL) gets it (its texts borrowed from the observer). */
static void expect_change(sqllock_observer *o, sqllock_db *db, int type,
                          const char *name, int64_t token, int64_t old_token,
                          int64_t ms, sqllock_change *out)
{
    sqllock_change c = SQLLOCK_CHANGE_INIT;
    int rc = sqllock_observer_next(o, &c, ms);

    if (rc != SQLLOCK_OK)
        fail_msg("waiting %lld ms for '%s' %s: %s (%s)", (long long)ms, name,
                 sqllock_change_name(type), sqllock_errname(rc),
                 sqllock_errmsg(db));
    if (c.type != type || strcmp(c.name, name) != 0 ||
        (token >= 0 && c.token != token) || c.old_token != old_token)
        fail_msg("got '%s' %s token %lld old %lld; want '%s' %s token %lld "
                 "old %lld", c.name, sqllock_change_name(c.type),
                 (long long)c.token, (long long)c.old_token, name,
                 sqllock_change_name(type), (long long)token,
                 (long long)old_token);
    if (c.seen_at_ms <= 0 || c.lag_ms < 0 || c.lag_ms > within_ms())
        fail_msg("'%s' %s: seen at %lld with a lag of %lld ms (bound %d ms "
                 "and an allowance of %lld)", name, sqllock_change_name(type),
                 (long long)c.seen_at_ms, (long long)c.lag_ms, INTERVAL_MS,
                 (long long)allowance_ms());
    if (out != NULL)
        *out = c;
}

/* Seen within the bound of the action that ended at `done_ms`. */
static void expect_in_bound(int64_t done_ms, const char *what)
{
    int64_t took = tu_now_ms() - done_ms;

    if (took > within_ms())
        fail_msg("%s: seen %lld ms after it happened (bound %d ms and an "
                 "allowance of %lld)", what, (long long)took, INTERVAL_MS,
                 (long long)allowance_ms());
}

/* Nothing happens for `ms`: the observer invents no change. */
static void expect_quiet(sqllock_observer *o, sqllock_db *db, int64_t ms)
{
    sqllock_change c = SQLLOCK_CHANGE_INIT;
    int rc = sqllock_observer_next(o, &c, ms);

    if (rc == SQLLOCK_OK)
        fail_msg("a change nobody made: '%s' %s token %lld", c.name,
                 sqllock_change_name(c.type), (long long)c.token);
    EXPECT_RC(db, rc, SQLLOCK_TIMEOUT, "observer_next while nothing happens");
}

/* ---- the cases ---------------------------------------------------------- */

/*
 * L1, L2, L5, C5: one name through every change a lease row has, each
 * seen once, in order, within the bound: FREE at the start, ACQUIRED by
 * A, RELEASED, ACQUIRED by B with a short ttl and no renewal, EXPIRED
 * once its ttl passed by the database's clock (not before), TAKEN_OVER by
 * C (old token B's), FORCE_RELEASED by an operator; then nothing more.
 */
static void test_observe_L1_L2_every_change_in_order(void **state)
{
    char name[96];
    const char *names[1];
    sqllock_db *db = tu_open_or_fail(g_url);
    actor *a = actor_start();
    sqllock_lease *la, *lb, *lc;
    sqllock_observer *o;
    sqllock_change c;
    int64_t ttl = tu_scaled_ms(600), t0, done;
    (void)state;

    names[0] = uniq(name, sizeof name, "life");
    o = observer(db, names, 1, INTERVAL_MS, 1);
    expect_change(o, db, SQLLOCK_CHANGE_FREE, name, 0, 0, 0, &c);
    assert_string_equal(c.watched, name);

    la = actor_lease(a, name, 30000, "holder-A");
    done = act(a, ACT_ACQUIRE, la);
    expect_change(o, db, SQLLOCK_CHANGE_ACQUIRED, name,
                  sqllock_lease_token(la), 0, within_ms(), &c);
    expect_in_bound(done, "acquired");
    assert_string_equal(c.holder, "holder-A");
    assert_true(c.expires_at_ms > c.seen_at_ms);

    done = act(a, ACT_RELEASE, la);
    expect_change(o, db, SQLLOCK_CHANGE_RELEASED, name, c.token, 0,
                  within_ms(), NULL);
    expect_in_bound(done, "released");

    lb = actor_lease(a, name, ttl, "holder-B");
    t0 = tu_now_ms();
    act(a, ACT_ACQUIRE, lb);
    expect_change(o, db, SQLLOCK_CHANGE_ACQUIRED, name,
                  sqllock_lease_token(lb), 0, within_ms(), NULL);
    expect_change(o, db, SQLLOCK_CHANGE_EXPIRED, name,
                  sqllock_lease_token(lb), 0, ttl + within_ms(), &c);
    /* L2: not before the ttl had passed by the database's clock, which
     * on this host is the test's; and within the bound after it. */
    if (tu_now_ms() - t0 < ttl - 5)
        fail_msg("EXPIRED %lld ms after the acquire began, before its ttl "
                 "of %lld ms", (long long)(tu_now_ms() - t0),
                 (long long)ttl);
    assert_true(c.seen_at_ms >= c.expires_at_ms);
    /* The expiry came after t0 + ttl (the grant came after t0). */
    expect_in_bound(t0 + ttl, "expired");

    lc = actor_lease(a, name, 30000, "holder-C");
    done = act(a, ACT_ACQUIRE, lc);
    expect_change(o, db, SQLLOCK_CHANGE_TAKEN_OVER, name,
                  sqllock_lease_token(lc), sqllock_lease_token(lb),
                  within_ms(), &c);
    expect_in_bound(done, "taken over");
    assert_string_equal(c.holder, "holder-C");
    /* L5: the takeover's token is larger. */
    assert_true(sqllock_lease_token(lc) > sqllock_lease_token(lb));

    done = act(a, ACT_FORCE, name);
    expect_change(o, db, SQLLOCK_CHANGE_FORCE_RELEASED, name,
                  sqllock_lease_token(lc), 0, within_ms(), NULL);
    expect_in_bound(done, "force released");

    expect_quiet(o, db, 2 * INTERVAL_MS);
    sqllock_observer_free(o);
    /* B's and C's holds ended in the database; their handles only
     * think they hold. */
    sqllock_lease_free(la);
    sqllock_lease_free(lb);
    sqllock_lease_free(lc);
    actor_stop(a);
    sqllock_close(db);
}

/*
 * Several names with one observer, and one statement per poll for all of
 * them: the holds of two of three names are each seen, a name that only
 * begins with a watched one is not, and while nothing happens the
 * observer sends about one statement per interval (one per name would be
 * three).
 */
static void test_observe_several_names_one_statement(void **state)
{
    char n0[96], n1[96], n2[96], other[120], first[128];
    const char *names[3];
    sqllock_db *db = tu_open_or_fail(g_url);
    actor *a = actor_start();
    sqllock_lease *l0, *l2, *lx;
    sqllock_observer *o;
    sqllock_change c1 = SQLLOCK_CHANGE_INIT, c2 = SQLLOCK_CHANGE_INIT;
    uint64_t sent;
    int64_t done, quiet = 4 * INTERVAL_MS, tok2;
    (void)state;

    names[0] = uniq(n0, sizeof n0, "m-a");
    names[1] = uniq(n1, sizeof n1, "m-b");
    names[2] = uniq(n2, sizeof n2, "m-c");
    snprintf(other, sizeof other, "%s-x", n0);
    o = observer(db, names, 3, INTERVAL_MS, 0);
    l0 = actor_lease(a, n0, 30000, "h0");
    l2 = actor_lease(a, n2, 30000, "h2");
    lx = actor_lease(a, other, 30000, "hx");
    act(a, ACT_ACQUIRE, l0);
    act(a, ACT_ACQUIRE, lx);
    done = act(a, ACT_ACQUIRE, l2);
    /* The two grants, each once, in either order (one poll may see
     * both). */
    EXPECT_RC(db, sqllock_observer_next(o, &c1, within_ms()), SQLLOCK_OK,
              "next");
    /* Its texts are borrowed until the next call. */
    snprintf(first, sizeof first, "%s", c1.name);
    EXPECT_RC(db, sqllock_observer_next(o, &c2, within_ms()), SQLLOCK_OK,
              "next");
    expect_in_bound(done, "two acquires");
    assert_int_equal(c1.type, SQLLOCK_CHANGE_ACQUIRED);
    assert_int_equal(c2.type, SQLLOCK_CHANGE_ACQUIRED);
    if (strcmp(first, n0) == 0) {
        assert_int_equal(c1.token, sqllock_lease_token(l0));
        assert_string_equal(c2.name, n2);
        assert_int_equal(c2.token, sqllock_lease_token(l2));
    } else {
        assert_string_equal(first, n2);
        assert_int_equal(c1.token, sqllock_lease_token(l2));
        assert_string_equal(c2.name, n0);
        assert_int_equal(c2.token, sqllock_lease_token(l0));
    }
    sent = atomic_load(&sqllock__statements_sent);
    expect_quiet(o, db, quiet);
    sent = atomic_load(&sqllock__statements_sent) - sent;
    if (sent < 1 || sent > (uint64_t)(quiet / INTERVAL_MS + 2))
        fail_msg("%llu statements in %lld ms of polls every %d ms for 3 "
                 "names: not one per poll", (unsigned long long)sent,
                 (long long)quiet, INTERVAL_MS);

    tok2 = sqllock_lease_token(l2);
    done = act(a, ACT_RELEASE, l2);
    expect_change(o, db, SQLLOCK_CHANGE_RELEASED, n2, tok2, 0, within_ms(),
                  NULL);
    expect_in_bound(done, "release of the third name");
    act(a, ACT_RELEASE, lx);
    done = act(a, ACT_RELEASE, l0);
    expect_change(o, db, SQLLOCK_CHANGE_RELEASED, n0, -1, 0, within_ms(),
                  NULL);
    expect_in_bound(done, "release of the first name");
    expect_quiet(o, db, 2 * INTERVAL_MS);
    sqllock_observer_free(o);
    sqllock_lease_free(l0);
    sqllock_lease_free(l2);
    sqllock_lease_free(lx);
    actor_stop(a);
    sqllock_close(db);
}

static sqllock_leader *candidate(const char *name, const char *holder)
{
    sqllock_leader_options lo = SQLLOCK_LEADER_OPTIONS_INIT;
    sqllock_leader *l = NULL;
    char why[640];
    int rc;

    lo.ttl_ms = tu_scaled_ms(4000);
    lo.holder = holder;
    rc = sqllock_leader_start(g_url, name, &lo, &l, why, sizeof why);
    if (rc != SQLLOCK_OK)
        fail_msg("leader_start: %s: %s", sqllock_errname(rc), why);
    return l;
}

static void wait_leader(sqllock_leader *l)
{
    int64_t end = tu_now_ms() + tu_scaled_ms(15000);

    TU_WAIT_WHILE(!sqllock_leader_is_leader(l), end, 2);
    assert_true(sqllock_leader_is_leader(l));
}

/*
 * M4: a follower learns of each new leader. Observing the election NAME
 * reports its leader's row, "NAME [leader]": the first leader's term
 * (ACQUIRED), its hand-over (RELEASED), the next leader's term (ACQUIRED,
 * a larger token), its end; never the election's kind marker (N1).
 */
static void test_observe_M4_each_new_leader(void **state)
{
    char name[96], row[120];
    const char *names[1];
    sqllock_db *db = tu_open_or_fail(g_url);
    sqllock_leader *c1, *c2;
    sqllock_observer *o;
    sqllock_change c;
    int64_t t1, t2, done;
    (void)state;

    names[0] = uniq(name, sizeof name, "elect");
    snprintf(row, sizeof row, "%s [leader]", name);
    o = observer(db, names, 1, INTERVAL_MS, 0);
    c1 = candidate(name, "cand-1");
    wait_leader(c1);
    done = tu_now_ms();
    t1 = sqllock_leader_token(c1);
    expect_change(o, db, SQLLOCK_CHANGE_ACQUIRED, row, t1, 0,
                  within_ms() + tu_scaled_ms(1000), &c);
    expect_in_bound(done - tu_scaled_ms(1000), "the first leader");
    assert_string_equal(c.holder, "cand-1");
    assert_string_equal(c.watched, name);
    c2 = candidate(name, "cand-2");
    tu_sleep_ms(2 * INTERVAL_MS);
    assert_false(sqllock_leader_is_leader(c2));
    /* The hand-over: cand-2 is woken at once and elected. */
    sqllock_leader_stop(c1);
    wait_leader(c2);
    done = tu_now_ms();
    t2 = sqllock_leader_token(c2);
    assert_true(t2 > t1);
    expect_change(o, db, SQLLOCK_CHANGE_RELEASED, row, t1, 0, within_ms(),
                  NULL);
    expect_change(o, db, SQLLOCK_CHANGE_ACQUIRED, row, t2, 0, within_ms(),
                  &c);
    expect_in_bound(done, "the next leader");
    assert_string_equal(c.holder, "cand-2");
    sqllock_leader_stop(c2);
    done = tu_now_ms();
    expect_change(o, db, SQLLOCK_CHANGE_RELEASED, row, t2, 0, within_ms(),
                  NULL);
    expect_in_bound(done, "the last leader's end");
    expect_quiet(o, db, 2 * INTERVAL_MS);
    sqllock_observer_free(o);
    sqllock_close(db);
}

/*
 * M1, M2: a semaphore's permit and a shared/exclusive lock's reader are
 * reported as their rows, "NAME [pK]" and "NAME [r...]", taken and let
 * go; the names' kind markers never are.
 */
static void test_observe_M1_M2_primitive_rows(void **state)
{
    char sname[96], rname[96], prow[128], rrow[128];
    const char *names[2];
    sqllock_lease_options lo = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_db *db = tu_open_or_fail(g_url);
    actor *a = actor_start();
    sqllock_sem *sem = NULL;
    sqllock_rw *rw = NULL;
    sqllock_observer *o;
    int64_t ptok, rtok, done;
    (void)state;

    names[0] = uniq(sname, sizeof sname, "sem");
    names[1] = uniq(rname, sizeof rname, "rw");
    o = observer(db, names, 2, INTERVAL_MS, 1);
    expect_change(o, db, SQLLOCK_CHANGE_FREE, sname, 0, 0, 0, NULL);
    expect_change(o, db, SQLLOCK_CHANGE_FREE, rname, 0, 0, 0, NULL);
    lo.ttl_ms = 30000;
    EXPECT_RC(a->db, sqllock_sem_new(a->db, sname, 2, &lo, &sem), SQLLOCK_OK,
              "sem_new");
    EXPECT_RC(a->db, sqllock_rw_new(a->db, rname, 1, &lo, &rw), SQLLOCK_OK,
              "rw_new");
    done = act(a, ACT_SEM_ACQUIRE, sem);
    shown(sqllock_lease_name(sqllock_sem_lease(sem)), prow, sizeof prow);
    ptok = sqllock_lease_token(sqllock_sem_lease(sem));
    expect_change(o, db, SQLLOCK_CHANGE_ACQUIRED, prow, ptok, 0, within_ms(),
                  NULL);
    expect_in_bound(done, "a permit");
    done = act(a, ACT_RW_ACQUIRE, rw);
    shown(sqllock_lease_name(sqllock_rw_lease(rw)), rrow, sizeof rrow);
    rtok = sqllock_lease_token(sqllock_rw_lease(rw));
    assert_non_null(strstr(rrow, " [r"));
    expect_change(o, db, SQLLOCK_CHANGE_ACQUIRED, rrow, rtok, 0, within_ms(),
                  NULL);
    expect_in_bound(done, "a reader");
    done = act(a, ACT_SEM_RELEASE, sem);
    expect_change(o, db, SQLLOCK_CHANGE_RELEASED, prow, ptok, 0, within_ms(),
                  NULL);
    expect_in_bound(done, "the permit's release");
    done = act(a, ACT_RW_RELEASE, rw);
    expect_change(o, db, SQLLOCK_CHANGE_RELEASED, rrow, rtok, 0, within_ms(),
                  NULL);
    expect_in_bound(done, "the reader's release");
    expect_quiet(o, db, 2 * INTERVAL_MS);
    sqllock_observer_free(o);
    sqllock_sem_free(sem);
    sqllock_rw_free(rw);
    actor_stop(a);
    sqllock_close(db);
}

/*
 * L9 (PostgreSQL): with a poll interval of 20 s, a release -- of a plain
 * lease, and of a semaphore's permit, whose channel the observer LISTENs
 * on once it has seen the row -- is reported at once: it could only be
 * the release's NOTIFY, as no poll is due before the interval.
 */
static void test_observe_L9_pg_release_heard_at_once(void **state)
{
    char name[96], sname[96], prow[128];
    const char *names[2];
    sqllock_lease_options lo = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_db *db = tu_open_or_fail(g_url);
    actor *a = actor_start();
    sqllock_lease *l;
    sqllock_sem *sem = NULL;
    sqllock_observer *o;
    int64_t made, done;
    (void)state;

    names[0] = uniq(name, sizeof name, "heard");
    names[1] = uniq(sname, sizeof sname, "heard-sem");
    l = actor_lease(a, name, 30000, "h");
    lo.ttl_ms = 30000;
    EXPECT_RC(a->db, sqllock_sem_new(a->db, sname, 1, &lo, &sem), SQLLOCK_OK,
              "sem_new");
    act(a, ACT_ACQUIRE, l);
    act(a, ACT_SEM_ACQUIRE, sem);
    shown(sqllock_lease_name(sqllock_sem_lease(sem)), prow, sizeof prow);
    made = tu_now_ms();
    o = observer(db, names, 2, 20000, 1);
    expect_change(o, db, SQLLOCK_CHANGE_HELD, name, sqllock_lease_token(l), 0,
                  0, NULL);
    expect_change(o, db, SQLLOCK_CHANGE_HELD, prow, -1, 0, 0, NULL);
    /* The permit's channel was new: one poll at once after its LISTEN,
     * then none for 20 s. */
    expect_quiet(o, db, 300);
    done = act(a, ACT_RELEASE, l);
    expect_change(o, db, SQLLOCK_CHANGE_RELEASED, name, -1, 0,
                  tu_scaled_ms(3000), NULL);
    if (tu_now_ms() - done > tu_scaled_ms(3000) ||
        tu_now_ms() - made >= 20000)
        fail_msg("L9: the release was seen %lld ms after it: not woken",
                 (long long)(tu_now_ms() - done));
    done = act(a, ACT_SEM_RELEASE, sem);
    expect_change(o, db, SQLLOCK_CHANGE_RELEASED, prow, -1, 0,
                  tu_scaled_ms(3000), NULL);
    if (tu_now_ms() - made >= 20000)
        fail_msg("L9: the permit's release was seen only at a poll");
    sqllock_observer_free(o);
    sqllock_lease_free(l);
    sqllock_sem_free(sem);
    actor_stop(a);
    sqllock_close(db);
}

/* E2: bad input gets SQLLOCK_EINVAL with a message, and nothing made. */
static void test_observe_E2_bad_input(void **state)
{
    char big[SQLLOCK_NAME_MAX + 2], name[96];
    const char *one[1], *two[2], *bad[1];
    sqllock_observer_options oo = SQLLOCK_OBSERVER_OPTIONS_INIT;
    sqllock_db *db = tu_open_or_fail(g_url);
    sqllock_observer *o = (sqllock_observer *)db;
    sqllock_change c = SQLLOCK_CHANGE_INIT;
    sqllock_txn *txn = NULL;
    int i;
    (void)state;

    one[0] = uniq(name, sizeof name, "bad");
    assert_int_equal(sqllock_observer_new(NULL, one, 1, NULL, &o),
                     SQLLOCK_EINVAL);
    assert_null(o);
    EXPECT_RC(db, sqllock_observer_new(db, one, 1, NULL, NULL),
              SQLLOCK_EINVAL, "NULL out");
    EXPECT_RC(db, sqllock_observer_new(db, NULL, 1, NULL, &o),
              SQLLOCK_EINVAL, "NULL names");
    expect_msg_any(db, "NULL names", "NULL");
    EXPECT_RC(db, sqllock_observer_new(db, one, 0, NULL, &o),
              SQLLOCK_EINVAL, "n 0");
    EXPECT_RC(db, sqllock_observer_new(db, one, -1, NULL, &o),
              SQLLOCK_EINVAL, "n -1");
    EXPECT_RC(db, sqllock_observer_new(db, one,
                                       SQLLOCK_OBSERVER_NAMES_MAX + 1, NULL,
                                       &o),
              SQLLOCK_EINVAL, "too many names");
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    for (i = 0; i < 4; i++) {
        static const char *const says[] = { "NULL", "empty", "limit",
                                            "control" };
        const char *const names[] = { NULL, "", big, "tab\there" };

        bad[0] = names[i];
        EXPECT_RC(db, sqllock_observer_new(db, bad, 1, NULL, &o),
                  SQLLOCK_EINVAL, says[i]);
        expect_msg_any(db, says[i], says[i]);
    }
    two[0] = two[1] = name;
    EXPECT_RC(db, sqllock_observer_new(db, two, 2, NULL, &o),
              SQLLOCK_EINVAL, "a name twice");
    expect_msg_any(db, "a name twice", "twice");
    oo.interval_ms = -1;
    EXPECT_RC(db, sqllock_observer_new(db, one, 1, &oo, &o), SQLLOCK_EINVAL,
              "interval -1");
    expect_msg_any(db, "interval -1", "interval");
    oo.interval_ms = SQLLOCK_OBSERVER_INTERVAL_MIN_MS - 1;
    EXPECT_RC(db, sqllock_observer_new(db, one, 1, &oo, &o), SQLLOCK_EINVAL,
              "interval below the minimum");
    oo.interval_ms = 100;
    oo.struct_version = 0;
    EXPECT_RC(db, sqllock_observer_new(db, one, 1, &oo, &o), SQLLOCK_EINVAL,
              "no struct_version");
    assert_null(o);
    /* R8: not inside a row-lock transaction on the handle. */
    EXPECT_RC(db, sqllock_txn_begin(db, NULL, &txn), SQLLOCK_OK, "begin");
    EXPECT_RC(db, sqllock_observer_new(db, one, 1, NULL, &o),
              SQLLOCK_EMISUSE, "inside a row-lock transaction");
    assert_null(o);
    sqllock_txn_free(txn);

    /* Zero is the default interval; then next()'s own checks. */
    oo.struct_version = SQLLOCK_OBSERVER_OPTIONS_VERSION;
    oo.interval_ms = 0;
    EXPECT_RC(db, sqllock_observer_new(db, one, 1, &oo, &o), SQLLOCK_OK,
              "interval 0: the default");
    assert_int_equal(sqllock_observer_next(NULL, &c, 0), SQLLOCK_EINVAL);
    EXPECT_RC(db, sqllock_observer_next(o, NULL, 0), SQLLOCK_EINVAL,
              "NULL change");
    c.struct_version = 0;
    EXPECT_RC(db, sqllock_observer_next(o, &c, 0), SQLLOCK_EINVAL,
              "a change without struct_version");
    c.struct_version = SQLLOCK_CHANGE_VERSION;
    EXPECT_RC(db, sqllock_observer_next(o, &c, -1), SQLLOCK_EINVAL,
              "a negative timeout");
    EXPECT_RC(db, sqllock_observer_next(o, &c, 0), SQLLOCK_TIMEOUT,
              "nothing yet");
    sqllock_observer_free(o);
    sqllock_observer_free(NULL);
    assert_string_equal(sqllock_change_name(SQLLOCK_CHANGE_TAKEN_OVER),
                        "taken_over");
    assert_string_equal(sqllock_change_name(0), "unknown");
    assert_string_equal(sqllock_change_name(99), "unknown");
    sqllock_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_observe_E2_bad_input),
        cmocka_unit_test(test_observe_L1_L2_every_change_in_order),
        cmocka_unit_test(test_observe_several_names_one_statement),
        cmocka_unit_test(test_observe_M4_each_new_leader),
        cmocka_unit_test(test_observe_M1_M2_primitive_rows),
        cmocka_unit_test_setup_teardown(test_observe_tool_watch_json_count,
                                        tool_setup, tool_teardown),
        cmocka_unit_test_setup_teardown(test_observe_tool_watch_exits,
                                        tool_setup, tool_teardown),
    };
    const struct CMUnitTest pg_tests[] = {
        cmocka_unit_test(test_observe_L9_pg_release_heard_at_once),
    };
    int rc;

    /* Through a transaction pooler (tests/pooled.sh) no LISTEN is kept:
     * an observer polls there, as on the other databases. */
    tu_not_on("pooled", "test_observe_L9_*",
              "no LISTEN through a pooler: the observer polls");
    rc = TU_RUN_PER_URL("observe", &g_url, tests, tu_group_schema, NULL);
    rc = tu_status_merge(rc, TU_RUN_ON_DRIVER("observe listener", "postgres",
                                              &g_url, pg_tests,
                                              tu_group_schema));
    return rc;
}
