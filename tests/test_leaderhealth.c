/*
 * test_leaderhealth.c -- a candidate's health for a readiness probe
 * (sqllock_leader_health(), issue 31) and a follower's "on new leader"
 * hook (on_observed), per driver.
 *
 *   M4, L6  the leader is healthy (SQLLOCK_OK) with the age of its last
 *           renewal below ttl - margin, that age drops at each renewal;
 *           a follower is not (SQLLOCK_BUSY, age -1); a leader whose
 *           database stops answering -- the test locks the leadership's
 *           row (the whole file on SQLite), so no renewal gets through
 *           -- turns SQLLOCK_TIMEOUT at its local deadline (never BUSY
 *           first: the probe sees the stall), no longer acts, and leads
 *           again once the database answers.
 *   M4      every follower hears of each new term through on_observed:
 *           after a leader process is SIGKILLed and another candidate
 *           takes over at the lease's expiry, and after a hand-over;
 *           the delay from the new leader's election to the follower's
 *           callback is printed and must stay within one pause of the
 *           campaign (min(250 ms, ttl/8)) plus a slack for round trips.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"

static const char *g_url;
static long g_seq;
/* The stall's handle, closed by the teardown when a case failed
 * holding it (its lock would stall the next case). */
static sqllock_db *g_stall;

/* The candidates' ttl is 1 s times tu_scaled_connect_ms()'s factor
 * (the load, valgrind), not the sanitizers': renewals are statements,
 * which they slow little, and every case lasts a few ttls. */

/* A round trip or two on a loaded host, beyond the campaign's pause. */
#define SLACK_MS 400

static void unique(char *buf, size_t size, const char *what)
{
    snprintf(buf, size, "lh-%s-%ld-%lld-%ld", what, (long)getpid(),
             (long long)tu_now_ms(), ++g_seq);
}

/* ---- what the in-process candidates' callbacks saw ---- */

#define MAX_SEEN 16

typedef struct seen {
    int64_t term, at_us;
} seen;

typedef struct cand {
    pthread_mutex_t mu;
    sqllock_leader *l;
    int nobs, nel;
    seen obs[MAX_SEEN];        /* on_observed: each new term */
    seen el[MAX_SEEN];         /* on_elected */
} cand;

static void on_elected(void *ctx, sqllock_leader *l, int64_t token)
{
    cand *c = ctx;

    (void)l;
    pthread_mutex_lock(&c->mu);
    if (c->nel < MAX_SEEN) {
        c->el[c->nel].term = token;
        c->el[c->nel].at_us = tu_now_us();
        c->nel++;
    }
    pthread_mutex_unlock(&c->mu);
}

static void on_observed(void *ctx, sqllock_leader *l, const char *holder,
                        int64_t token)
{
    cand *c = ctx;

    (void)l;
    (void)holder;
    pthread_mutex_lock(&c->mu);
    if (c->nobs < MAX_SEEN) {
        c->obs[c->nobs].term = token;
        c->obs[c->nobs].at_us = tu_now_us();
        c->nobs++;
    }
    pthread_mutex_unlock(&c->mu);
}

/* When `c` observed (or, for `elected`, was elected to) term `term`;
 * 0 when not yet. */
static int64_t when(cand *c, int64_t term, int elected)
{
    int64_t at = 0;
    int i, n;

    pthread_mutex_lock(&c->mu);
    n = elected ? c->nel : c->nobs;
    for (i = 0; i < n; i++)
        if ((elected ? c->el : c->obs)[i].term == term)
            at = (elected ? c->el : c->obs)[i].at_us;
    pthread_mutex_unlock(&c->mu);
    return at;
}

/* Waits up to `ms` until `c` observed term `term`; its time. */
static int64_t wait_observed(cand *c, int64_t term, int64_t ms,
                             const char *who)
{
    int64_t end = tu_now_ms() + ms, at;

    while ((at = when(c, term, 0)) == 0 && tu_now_ms() < end)
        tu_sleep_ms(1);
    if (at == 0)
        fail_msg("M4: %s did not observe term %lld within %lld ms", who,
                 (long long)term, (long long)ms);
    return at;
}

static void start(cand *c, const char *url, const char *name, int64_t ttl,
                  const char *holder)
{
    sqllock_leader_options o = SQLLOCK_LEADER_OPTIONS_INIT;
    char why[640];
    int rc;

    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    o.ttl_ms = ttl;
    o.holder = holder;
    o.on_elected = on_elected;
    o.on_observed = on_observed;
    o.ctx = c;
    rc = sqllock_leader_start(url, name, &o, &c->l, why, sizeof why);
    if (rc != SQLLOCK_OK)
        fail_msg("sqllock_leader_start: %s: %s", sqllock_errname(rc), why);
}

static void stop(cand *c)
{
    sqllock_leader_stop(c->l);
    c->l = NULL;
    pthread_mutex_destroy(&c->mu);
}

/* Waits up to `ms` for health `want`; returns the age it gave. */
static int64_t wait_health(sqllock_leader *l, int want, int64_t ms,
                           const char *what)
{
    int64_t end = tu_now_ms() + ms, age = -2;
    int rc;

    while ((rc = sqllock_leader_health(l, &age)) != want &&
           tu_now_ms() < end)
        tu_sleep_ms(2);
    if (rc != want)
        fail_msg("%s: health %s, want %s", what, sqllock_errname(rc),
                 sqllock_errname(want));
    return age;
}

static void expect_follower(sqllock_leader *l, const char *who)
{
    int64_t age = 0;
    int rc = sqllock_leader_health(l, &age);

    if (rc != SQLLOCK_BUSY || age != -1)
        fail_msg("%s, a follower: health %s age %lld, want SQLLOCK_BUSY -1",
                 who, sqllock_errname(rc), (long long)age);
}

/* ---- the leader process ---- */

typedef struct proc {
    char name[96];
    int64_t ttl;
    int64_t term;              /* set once elected */
} proc;

static int leader_proc(void *arg, int i)
{
    proc *p = arg;
    sqllock_leader_options o = SQLLOCK_LEADER_OPTIONS_INIT;
    sqllock_leader *l = NULL;
    char why[640];

    (void)i;
    o.ttl_ms = p->ttl;
    o.holder = "lh-proc";
    if (sqllock_leader_start(g_url, p->name, &o, &l, why, sizeof why) !=
        SQLLOCK_OK) {
        fprintf(stderr, "leader process: %s\n", why);
        return 3;
    }
    while (!sqllock_leader_is_leader(l))
        tu_sleep_ms(2);
    __atomic_store_n(&p->term, sqllock_leader_token(l), __ATOMIC_SEQ_CST);
    for (;;)
        tu_sleep_ms(1000);     /* until SIGKILLed: a crash */
}

/*
 * M4 (on_observed, the follower's "on new leader" hook) and the health
 * of leaders and followers: a leader process is SIGKILLed; one of two
 * candidates here takes over at the lease's expiry and the other hears
 * of it; then the new leader resigns, and the one it hands over to is
 * heard of by the one that resigned.
 */
static void test_leaderhealth_M4_followers_observe_each_new_leader(
    void **state)
{
    proc *p = tu_shared_map(sizeof *p);
    int64_t ttl = tu_scaled_connect_ms(1000), pause_ms, bound, end, t_e;
    int64_t t_o, age;
    int64_t d_takeover, d_handover, term;
    static cand b, c;
    cand *x, *y;
    pid_t pid;
    (void)state;

    unique(p->name, sizeof p->name, "obs");
    p->ttl = ttl;
    pid = tu_fork(leader_proc, p);
    end = tu_now_ms() + tu_scaled_ms(10000);
    TU_WAIT_WHILE(__atomic_load_n(&p->term, __ATOMIC_SEQ_CST) == 0, end, 2);
    term = __atomic_load_n(&p->term, __ATOMIC_SEQ_CST);
    if (term == 0)
        fail_msg("the leader process was not elected");
    start(&b, g_url, p->name, ttl, "lh-b");
    start(&c, g_url, p->name, ttl, "lh-c");
    wait_observed(&b, term, tu_scaled_ms(10000), "candidate b");
    wait_observed(&c, term, tu_scaled_ms(10000), "candidate c");
    expect_follower(b.l, "candidate b");
    expect_follower(c.l, "candidate c");

    /* A crash: b or c takes over at the expiry; the other hears it. */
    pause_ms = ttl / 8 < 250 ? ttl / 8 : 250;
    bound = pause_ms + tu_scaled_ms(SLACK_MS);
    kill(pid, SIGKILL);
    assert_int_equal(tu_wait(pid), 1000 + SIGKILL);
    end = tu_now_ms() + ttl + tu_scaled_ms(10000);
    TU_WAIT_WHILE(!sqllock_leader_is_leader(b.l) &&
                  !sqllock_leader_is_leader(c.l), end, 1);
    x = sqllock_leader_is_leader(b.l) ? &b : &c;
    y = x == &b ? &c : &b;
    term = sqllock_leader_token(x->l);
    if (term == 0)
        fail_msg("M4: no candidate took over after the leader was killed");
    end = tu_now_ms() + tu_scaled_ms(5000);
    TU_WAIT_WHILE((t_e = when(x, term, 1)) == 0, end, 1);
    t_o = wait_observed(y, term, tu_scaled_ms(10000), "the follower");
    d_takeover = (t_o - t_e) / 1000;
    age = wait_health(x->l, SQLLOCK_OK, tu_scaled_ms(1000), "new leader");
    if (age < 0 || age >= ttl - ttl / 10)
        fail_msg("L6: the leader's last renewal is %lld ms old (ttl %lld "
                 "ms)", (long long)age, (long long)ttl);
    expect_follower(y->l, "the follower");

    /* A hand-over: x resigns; the one that resigned hears of y. */
    assert_int_equal(sqllock_leader_resign(x->l), SQLLOCK_OK);
    expect_follower(x->l, "the resigned leader");
    end = tu_now_ms() + tu_scaled_ms(5000);
    TU_WAIT_WHILE(!sqllock_leader_is_leader(y->l), end, 1);
    term = sqllock_leader_token(y->l);
    if (term == 0)
        fail_msg("M4: no leader after the hand-over");
    end = tu_now_ms() + tu_scaled_ms(5000);
    TU_WAIT_WHILE((t_e = when(y, term, 1)) == 0, end, 1);
    t_o = wait_observed(x, term, tu_scaled_ms(10000), "the resigned leader");
    d_handover = (t_o - t_e) / 1000;
    wait_health(y->l, SQLLOCK_OK, tu_scaled_ms(1000), "hand-over's leader");
    printf("# %s: a follower heard of the new leader %lld ms after its "
           "election (takeover after a crash), %lld ms (hand-over); "
           "bound %lld ms (campaign pause %lld ms, ttl %lld ms)\n",
           tu_url_driver(g_url), (long long)d_takeover,
           (long long)d_handover, (long long)bound, (long long)pause_ms,
           (long long)ttl);
    if (d_takeover > bound || d_handover > bound)
        fail_msg("M4: a follower heard of a new leader %lld / %lld ms after "
                 "its election, more than %lld ms", (long long)d_takeover,
                 (long long)d_handover, (long long)bound);
    stop(&b);
    stop(&c);
    munmap(p, sizeof *p);
}

/*
 * L6: healthy while renewed (the age drops at each renewal and stays
 * below ttl - margin); stalled -- SQLLOCK_TIMEOUT, not acting -- once
 * the database stops answering its renewals and the local deadline
 * passes; healthy again after. And a NULL candidate is EINVAL.
 */
static void test_leaderhealth_L6_stalled_leader_times_out(void **state)
{
    int64_t ttl = tu_scaled_connect_ms(1000), valid = ttl - ttl / 10;
    int64_t age, prev = -1;
    int64_t end, t_stall, t_seen, max_age = 0;
    char name[96], row[SQLLOCK__DERIVED_MAX + 1];
    const char *drv = tu_url_driver(g_url);
    static cand a;
    sqllock_value arg;
    sqllock_db *db;
    int rc, drops = 0;
    (void)state;

    age = 5;
    assert_int_equal(sqllock_leader_health(NULL, &age), SQLLOCK_EINVAL);
    assert_int_equal(age, -1);
    unique(name, sizeof name, "stall");
    start(&a, g_url, name, ttl, "lh-a");
    wait_health(a.l, SQLLOCK_OK, tu_scaled_ms(10000), "the only candidate");
    assert_int_equal(sqllock_leader_health(a.l, NULL), SQLLOCK_OK);
    /* Renewed every ttl/3: over a ttl the age drops at least twice. */
    end = tu_now_ms() + ttl;
    while (tu_now_ms() < end) {
        rc = sqllock_leader_health(a.l, &age);
        if (rc != SQLLOCK_OK)
            fail_msg("L7: a renewed leader's health turned %s",
                     sqllock_errname(rc));
        if (age > max_age)
            max_age = age;
        if (prev >= 0 && age < prev)
            drops++;
        prev = age;
        tu_sleep_ms(5);
    }
    if (max_age >= valid || drops < 2)
        fail_msg("L6/L7: over a ttl the last renewal's age reached %lld ms "
                 "(valid %lld) and dropped %d times", (long long)max_age,
                 (long long)valid, drops);

    /* The stall: the leadership's row locked (SQLite: the file). */
    db = g_stall = tu_open_or_fail(g_url);
    EXPECT_RC(db, sqllock__derived_name(db, row, name, "leader",
                                        "election name"), SQLLOCK_OK, "row");
    EXPECT_RC(db, sqllock__begin(db, "locking the row"), SQLLOCK_OK, "begin");
    if (strcmp(drv, "sqlite") != 0) {
        arg = sqllock__text(row);
        EXPECT_RC(db, sqllock__exec_sql(db, strcmp(drv, "postgres") == 0
                                        ? "SELECT 1 FROM sqllock_lease WHERE "
                                          "name = $1 FOR UPDATE"
                                        : "SELECT 1 FROM sqllock_lease WHERE "
                                          "name = ? FOR UPDATE",
                                        &arg, 1, NULL, NULL, NULL),
                  SQLLOCK_OK, "lock the row");
    }
    t_stall = tu_now_ms();
    end = t_stall + ttl + tu_scaled_ms(3000);
    while ((rc = sqllock_leader_health(a.l, &age)) == SQLLOCK_OK &&
           tu_now_ms() < end)
        tu_sleep_ms(1);
    t_seen = tu_now_ms();
    printf("# %s: health %s %lld ms after the stall, last renewal %lld ms "
           "old (ttl %lld ms)\n", drv, sqllock_errname(rc),
           (long long)(t_seen - t_stall), (long long)age, (long long)ttl);
    if (rc != SQLLOCK_TIMEOUT)
        fail_msg("L6: a stalled leader's health is %s, want SQLLOCK_TIMEOUT",
                 sqllock_errname(rc));
    if (age < valid || age > valid + tu_scaled_ms(SLACK_MS))
        fail_msg("L6: stalled with its last renewal %lld ms old, want just "
                 "past %lld", (long long)age, (long long)valid);
    if (sqllock_leader_is_leader(a.l))
        fail_msg("L6: a stalled leader still acts");
    /* It stays unhealthy while the database does not answer. */
    tu_sleep_ms(100);
    rc = sqllock_leader_health(a.l, &age);
    if (rc == SQLLOCK_OK)
        fail_msg("L6: healthy again while its row is still locked");
    sqllock__rollback(db);
    sqllock_close(db);
    g_stall = NULL;
    wait_health(a.l, SQLLOCK_OK, tu_scaled_ms(15000),
                "the candidate after the stall");
    stop(&a);
}

static int teardown(void **state)
{
    sqllock_close(g_stall);
    g_stall = NULL;
    return tu_end_children(state);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_leaderhealth_L6_stalled_leader_times_out),
        cmocka_unit_test(
            test_leaderhealth_M4_followers_observe_each_new_leader),
    };

    return TU_RUN_PER_URL("leaderhealth", &g_url, tests, tu_group_schema,
                          teardown);
}
