/*
 * clients.c -- test_patroni's lease-like clients: plain leases,
 * semaphore permits, shared and exclusive holds, and guarded writes.
 * Each records every acquire, renewal, release and write with its
 * outcome, and its sections, in the history (tu_history.h), which the
 * case judges at the end; each counts its statuses by phase and route
 * (common.c).
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
#include "patroni.h"

/* One hold as its client sees it. */
typedef struct hold {
    pt_client *c;
    sqllock_db *db;
    const char *name;           /* the history's name for it */
    sqllock_lease *l;           /* its lease (a permit's, a reader's...) */
    int64_t token, deadline_us;
    int shared;
} hold;

static sqllock_lease_options lease_opts(void)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;

    o.ttl_ms = g_ttl_ms;
    /* A release that meets the failover tries again on fresh connections
     * for this long (C3), not the default minute. */
    o.release_timeout_ms = 4000 * (int64_t)g_slow;
    return o;
}

static void atomic_max(int64_t *p, int64_t v)
{
    int64_t cur = LD(p);

    while (v > cur && !__atomic_compare_exchange_n(p, &cur, v, 0,
                                                   __ATOMIC_SEQ_CST,
                                                   __ATOMIC_SEQ_CST))
        ;
}

static void atomic_min(int64_t *p, int64_t v)
{
    int64_t cur = LD(p);

    while ((cur == 0 || v < cur) &&
           !__atomic_compare_exchange_n(p, &cur, v, 0, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST))
        ;
}

/* The largest token of N_LEASE acknowledged so far (the parent takes it
 * at each fault), and the smallest granted by an acquire invoked after
 * the fault of the phase now running (L5 across each fault). */
static void lease_tokens(int64_t t_inv, int64_t token)
{
    int p = LD(&g_sh->phase);

    atomic_max(&g_sh->lease_max_acked, token);
    if (p != PH_WARM && p != PH_AFTER && t_inv > LD(&g_sh->ph[p].t_fault_us))
        atomic_min(&g_sh->ph[p].lease_min_after, token);
}

/* After a grant: the hold's token and local deadline, the figure, S. */
static void hold_begin(hold *h, int64_t t_inv, const char *what)
{
    h->token = sqllock_lease_token(h->l);
    h->deadline_us = tu_now_us() + sqllock_lease_remaining_ms(h->l) * 1000;
    pt_granted(h->c, h->db, t_inv, what);
    tu_hist_section(g_hist, h->c->who, h->name, h->token, h->shared);
}

/* A read, a pause and a write of `counter` while the lease is held by
 * its local view (L6), recorded as a write of the hold. */
static void hold_write(hold *h, int64_t *counter, unsigned *seed)
{
    int64_t seq, v;

    if (!sqllock_lease_held(h->l))
        return;
    seq = tu_hist_invoke(g_hist, h->c->who, "write", h->name, h->token, 0);
    v = LD(counter);
    tu_sleep_us(1000 + (long)(rand_r(seed) % 3000));
    if (sqllock_lease_held(h->l)) {
        ST(counter, v + 1);
        tu_hist_complete(g_hist, h->c->who, seq, "ok", h->token);
    } else {
        tu_hist_complete(g_hist, h->c->who, seq, "fail", h->token);
    }
}

/* A renewal, recorded; the local deadline moves only on success. */
static int hold_renew(hold *h)
{
    int64_t t0 = tu_now_us(), seq;
    int rc;

    seq = tu_hist_invoke(g_hist, h->c->who, "renew", h->name, h->token,
                         g_ttl_ms);
    rc = sqllock_lease_renew(h->l);
    tu_hist_complete(g_hist, h->c->who, seq, tu_hist_outcome(rc), h->token);
    pt_count(h->c, h->db, rc, t0, "renew");
    if (rc == SQLLOCK_OK) {
        int64_t d = tu_now_us() + sqllock_lease_remaining_ms(h->l) * 1000;

        if (d > h->deadline_us)
            h->deadline_us = d;
    }
    return rc;
}

/* The client stops acting as the holder: now, or at its local deadline
 * if that passed first (L6). */
static void hold_end(hold *h)
{
    int64_t now = tu_now_us();

    tu_hist_section_end_at(g_hist, h->c->who, h->name, h->token,
                           now < h->deadline_us ? now : h->deadline_us);
}

/* A release through `rel` (the kind's own), recorded. */
static int hold_release(hold *h, int (*rel)(void *), void *obj)
{
    int64_t t0 = tu_now_us(), seq;
    int rc;

    seq = tu_hist_invoke(g_hist, h->c->who, "release", h->name, h->token, 0);
    rc = rel(obj);
    tu_hist_complete(g_hist, h->c->who, seq, tu_hist_outcome(rc), h->token);
    pt_count(h->c, h->db, rc, t0, "release");
    return rc;
}

static int rel_lease(void *l) { return sqllock_lease_release(l); }
static int rel_sem(void *s) { return sqllock_sem_release(s); }
static int rel_rw(void *r) { return sqllock_rw_release(r); }

/* ------------------------------------------------------------------ */
/* Plain leases                                                        */
/* ------------------------------------------------------------------ */

/* Acquire (waiting up to a second), read-pause-write, renew,
 * read-pause-write, release: sync.c's client of test_failover. */
int pt_lease_main(pt_client *c, int idx)
{
    sqllock_lease_options o = lease_opts();
    sqllock_db *db = pt_open(pt_url(c->route));
    sqllock_lease *l = NULL;
    unsigned seed = (unsigned)getpid() * 7919u + (unsigned)idx;
    hold h;

    if (db == NULL)
        return 0;
    if (sqllock_lease_new(db, N_LEASE, &o, &l) != SQLLOCK_OK) {
        pt_bad(c, "lease_new: %s", sqllock_errmsg(db));
        sqllock_close(db);
        return 1;
    }
    memset(&h, 0, sizeof h);
    h.c = c;
    h.db = db;
    h.name = N_LEASE;
    while (pt_running()) {
        int64_t t0 = tu_now_us(), seq;
        int rc;

        seq = tu_hist_invoke(g_hist, c->who, "acquire", N_LEASE, 0, g_ttl_ms);
        rc = sqllock_lease_acquire(l, 1000);
        tu_hist_complete(g_hist, c->who, seq, tu_hist_outcome(rc),
                         sqllock_lease_token(l));
        pt_count(c, db, rc, t0, "acquire");
        if (rc != SQLLOCK_OK) {
            pt_pause_after(rc, &seed);
            continue;
        }
        h.l = l;
        lease_tokens(t0, sqllock_lease_token(l));
        hold_begin(&h, t0, "lease");
        hold_write(&h, &g_sh->lease_counter, &seed);
        hold_renew(&h);
        hold_write(&h, &g_sh->lease_counter, &seed);
        hold_end(&h);
        if (sqllock_lease_count(l) > 0)
            hold_release(&h, rel_lease, l);
        if (sqllock_lease_count(l) > 0) {
            /* Not released (the failover cut it twice): it expires. */
            sqllock_lease_free(l);
            l = NULL;
            if (sqllock_lease_new(db, N_LEASE, &o, &l) != SQLLOCK_OK) {
                pt_bad(c, "lease_new: %s", sqllock_errmsg(db));
                break;
            }
        }
        tu_sleep_ms(2 + (int64_t)(rand_r(&seed) % 8));
    }
    sqllock_lease_free(l);
    sqllock_close(db);
    return c->bad[0] != '\0';
}

/* ------------------------------------------------------------------ */
/* Semaphore permits (M1)                                               */
/* ------------------------------------------------------------------ */

int pt_sem_main(pt_client *c, int idx)
{
    sqllock_lease_options o = lease_opts();
    sqllock_db *db = pt_open(pt_url(c->route));
    sqllock_sem *s = NULL;
    unsigned seed = (unsigned)getpid() * 7919u + (unsigned)idx;
    hold h;

    if (db == NULL)
        return 0;
    if (sqllock_sem_new(db, N_SEM, PT_SEM_PERMITS, &o, &s) != SQLLOCK_OK) {
        pt_bad(c, "sem_new: %s", sqllock_errmsg(db));
        sqllock_close(db);
        return 1;
    }
    memset(&h, 0, sizeof h);
    h.c = c;
    h.db = db;
    h.name = N_SEM;
    while (pt_running()) {
        int64_t t0 = tu_now_us(), seq;
        int rc;

        seq = tu_hist_invoke(g_hist, c->who, "acquire", N_SEM, 0, g_ttl_ms);
        rc = sqllock_sem_acquire(s, 1000);
        tu_hist_complete(g_hist, c->who, seq, tu_hist_outcome(rc),
                         sqllock_lease_token(sqllock_sem_lease(s)));
        pt_count(c, db, rc, t0, "sem_acquire");
        if (rc != SQLLOCK_OK) {
            pt_pause_after(rc, &seed);
            continue;
        }
        h.l = sqllock_sem_lease(s);
        hold_begin(&h, t0, "sem");
        tu_sleep_us(2000 + (long)(rand_r(&seed) % 6000));
        hold_renew(&h);
        tu_sleep_us(1000 + (long)(rand_r(&seed) % 3000));
        hold_end(&h);
        if (sqllock_sem_permit(s) >= 0)
            hold_release(&h, rel_sem, s);
        if (sqllock_sem_permit(s) >= 0) {
            sqllock_sem_free(s);
            s = NULL;
            if (sqllock_sem_new(db, N_SEM, PT_SEM_PERMITS, &o, &s) !=
                SQLLOCK_OK) {
                pt_bad(c, "sem_new: %s", sqllock_errmsg(db));
                break;
            }
        }
        tu_sleep_ms(2 + (int64_t)(rand_r(&seed) % 8));
    }
    sqllock_sem_free(s);
    sqllock_close(db);
    return c->bad[0] != '\0';
}

/* ------------------------------------------------------------------ */
/* Shared and exclusive holds (M2)                                      */
/* ------------------------------------------------------------------ */

int pt_rw_main(pt_client *c, int idx)
{
    sqllock_lease_options o = lease_opts();
    sqllock_db *db = pt_open(pt_url(c->route));
    sqllock_rw *rw[2] = { NULL, NULL };          /* shared, exclusive */
    unsigned seed = (unsigned)getpid() * 7919u + (unsigned)idx;
    int k;
    hold h;

    if (db == NULL)
        return 0;
    for (k = 0; k < 2; k++)
        if (sqllock_rw_new(db, N_RW, k == 0, &o, &rw[k]) != SQLLOCK_OK) {
            pt_bad(c, "rw_new: %s", sqllock_errmsg(db));
            sqllock_rw_free(rw[0]);
            sqllock_close(db);
            return 1;
        }
    memset(&h, 0, sizeof h);
    h.c = c;
    h.db = db;
    h.name = N_RW;
    while (pt_running()) {
        int excl = rand_r(&seed) % 3 == 0;
        sqllock_rw *r = rw[excl];
        int64_t t0 = tu_now_us(), seq;
        int rc;

        seq = tu_hist_invoke(g_hist, c->who, excl ? "acquire" : "share", N_RW,
                             0, g_ttl_ms);
        rc = sqllock_rw_acquire(r, 1000);
        tu_hist_complete(g_hist, c->who, seq, tu_hist_outcome(rc),
                         sqllock_lease_token(sqllock_rw_lease(r)));
        pt_count(c, db, rc, t0, excl ? "rw_acquire(x)" : "rw_acquire(s)");
        if (rc != SQLLOCK_OK) {
            pt_pause_after(rc, &seed);
            continue;
        }
        h.l = sqllock_rw_lease(r);
        h.shared = !excl;
        hold_begin(&h, t0, excl ? "rw(x)" : "rw(s)");
        tu_sleep_us(2000 + (long)(rand_r(&seed) % 6000));
        hold_renew(&h);
        tu_sleep_us(1000 + (long)(rand_r(&seed) % 3000));
        hold_end(&h);
        if (sqllock_lease_count(h.l) > 0)
            hold_release(&h, rel_rw, r);
        if (sqllock_lease_count(sqllock_rw_lease(r)) > 0) {
            sqllock_rw_free(r);
            rw[excl] = NULL;
            if (sqllock_rw_new(db, N_RW, !excl, &o, &rw[excl]) !=
                SQLLOCK_OK) {
                pt_bad(c, "rw_new: %s", sqllock_errmsg(db));
                break;
            }
        }
        tu_sleep_ms(2 + (int64_t)(rand_r(&seed) % 8));
    }
    sqllock_rw_free(rw[0]);
    sqllock_rw_free(rw[1]);
    sqllock_close(db);
    return c->bad[0] != '\0';
}

/* ------------------------------------------------------------------ */
/* Guarded writes (G1)                                                  */
/* ------------------------------------------------------------------ */

/* Acquire, one guarded increment of the application's row (a write of
 * the hold: H5 judges that it was accepted only while the hold could be
 * live, H6 the row's final value), release. */
int pt_guard_main(pt_client *c, int idx)
{
    sqllock_lease_options o = lease_opts();
    sqllock_db *db = pt_open(pt_url(c->route));
    sqllock_lease *l = NULL;
    sqllock_table t = { T_GUARD, "id", NULL };
    sqllock_cell key = SQLLOCK_NUMBER(1);
    sqllock_cell add = { "n", SQLLOCK_OP_ADD, NULL, 1 };
    unsigned seed = (unsigned)getpid() * 7919u + (unsigned)idx;
    hold h;

    if (db == NULL)
        return 0;
    if (sqllock_lease_new(db, N_GUARD, &o, &l) != SQLLOCK_OK) {
        pt_bad(c, "lease_new: %s", sqllock_errmsg(db));
        sqllock_close(db);
        return 1;
    }
    memset(&h, 0, sizeof h);
    h.c = c;
    h.db = db;
    h.name = N_GUARD;
    while (pt_running()) {
        int64_t t0 = tu_now_us(), seq;
        int rc;

        seq = tu_hist_invoke(g_hist, c->who, "acquire", N_GUARD, 0, g_ttl_ms);
        rc = sqllock_lease_acquire(l, 1000);
        tu_hist_complete(g_hist, c->who, seq, tu_hist_outcome(rc),
                         sqllock_lease_token(l));
        pt_count(c, db, rc, t0, "acquire");
        if (rc != SQLLOCK_OK) {
            pt_pause_after(rc, &seed);
            continue;
        }
        h.l = l;
        hold_begin(&h, t0, "guard");
        t0 = tu_now_us();
        seq = tu_hist_invoke(g_hist, c->who, "write", N_GUARD, h.token, 0);
        rc = sqllock_table_guarded_update(db, l, &t, &key, NULL, &add, 1,
                                          NULL, 0);
        tu_hist_complete(g_hist, c->who, seq, tu_hist_outcome(rc), h.token);
        pt_count(c, db, rc, t0, "guarded_update");
        hold_end(&h);
        if (sqllock_lease_count(l) > 0)
            hold_release(&h, rel_lease, l);
        if (sqllock_lease_count(l) > 0) {
            sqllock_lease_free(l);
            l = NULL;
            if (sqllock_lease_new(db, N_GUARD, &o, &l) != SQLLOCK_OK) {
                pt_bad(c, "lease_new: %s", sqllock_errmsg(db));
                break;
            }
        }
        pt_pause_after(rc, &seed);
        tu_sleep_ms(2 + (int64_t)(rand_r(&seed) % 8));
    }
    sqllock_lease_free(l);
    sqllock_close(db);
    return c->bad[0] != '\0';
}
