/*
 * sync.c -- test_failover a: clients through a failover
 * with a synchronous standby (L1, L5, L6, L10, E1).
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
/* a. Clients through a failover with a synchronous standby            */
/* ------------------------------------------------------------------ */

#define A_WORKERS 8
#define A_NAMES 3
#define A_LOG_MAX 30000
#define A_NST SQLLOCK_STATUS_END_

typedef struct a_hold {
    int valid, name, who;
    int64_t token;
    char owner[SQLLOCK_OWNER_LEN + 1];
    int64_t t_send, t_ack, t_end, t_deadline;   /* us, CLOCK_MONOTONIC */
    int rel_rc, rel2_rc;                          /* -1: not yet */
    int64_t t_rel_ret;
} a_hold;

typedef struct a_worker {
    int64_t by_status[A_NST];
    int64_t longest_ms;
    int64_t first_err_after_kill;   /* us, 0: none yet */
    int64_t resume_us;              /* first OK acquire after that */
    int err_status;
    char bad[400];
    char first_err[200];
} a_worker;

typedef struct a_shared {
    int stop, ready, failed, killing, checked;
    int64_t t_kill, t_promoted, t_checked;
    int holding[A_NAMES];           /* a client holds the name now */
    int64_t counter[A_NAMES], increments[A_NAMES], skipped;
    int nlog;
    a_worker w[A_WORKERS];
    a_hold log[A_LOG_MAX];
} a_shared;

static a_shared *g_a;
static int64_t g_a_ttl;
static tu_hist *g_a_hist;        /* what every worker did (tu_history.h) */

static void a_bad(a_worker *w, const char *fmt, ...)
{
    va_list ap;

    ADD(&g_a->failed, 1);
    if (w->bad[0] != '\0')
        return;
    va_start(ap, fmt);
    vsnprintf(w->bad, sizeof w->bad, fmt, ap);
    va_end(ap);
}

static const char *a_name(char *buf, size_t size, int i)
{
    snprintf(buf, size, "failover-a-%d", i);
    return buf;
}

/* One call's accounting: its status, its time within the bound. */
static void a_call(a_worker *w, int rc, int64_t t0_us, int64_t wait_ms,
                   const char *what, sqllock_db *db)
{
    int64_t took = (tu_now_us() - t0_us) / 1000;
    /* connect + statement per try, a wait, and slack. */
    int64_t bound = wait_ms + 2 * (2000 + 3000) * g_slow + 1000;

    w->by_status[rc >= 0 && rc < A_NST ? rc : 0]++;
    if (took > w->longest_ms)
        w->longest_ms = took;
    if (took > bound)
        a_bad(w, "%s took %lld ms (bound %lld ms): a call hung",
              what, (long long)took, (long long)bound);
    if (rc != SQLLOCK_OK && rc != SQLLOCK_BUSY && rc != SQLLOCK_TIMEOUT &&
        rc != SQLLOCK_LOST) {
        if (rc != SQLLOCK_ECONNECT)
            a_bad(w, "%s: %s, not a connection status: %s", what,
                  sqllock_errname(rc), sqllock_errmsg(db));
        if (LD(&g_a->killing) && LD(&g_a->t_kill) != 0 &&
            w->first_err_after_kill == 0) {
            w->first_err_after_kill = tu_now_us();
            w->err_status = rc;
            snprintf(w->first_err, sizeof w->first_err, "%s: %s", what,
                     sqllock_errmsg(db));
        }
    }
}

static int a_worker_main(int who)
{
    a_worker *w = &g_a->w[who];
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l[A_NAMES] = { NULL };
    unsigned seed = (unsigned)getpid() * 7919u + (unsigned)who;
    sqllock_db *db = fo_open_url(g_url, 3000 * g_slow);
    char name[64], me[16];
    int i, iter = 0;
    int64_t seq;

    snprintf(me, sizeof me, "w%d", who);
    if (db == NULL) {
        a_bad(w, "open failed");
        return 1;
    }
    o.ttl_ms = g_a_ttl;
    for (i = 0; i < A_NAMES; i++)
        if (sqllock_lease_new(db, a_name(name, sizeof name, i), &o, &l[i])
            != SQLLOCK_OK) {
            a_bad(w, "lease_new: %s", sqllock_errmsg(db));
            goto out;
        }
    ADD(&g_a->ready, 1);
    while (!LD(&g_a->stop) && w->bad[0] == '\0') {
        int n = (int)(rand_r(&seed) % A_NAMES), rc, k;
        int64_t t0 = tu_now_us(), t_ack, deadline, t_end, v;
        a_hold *h;

        iter++;
        a_name(name, sizeof name, n);
        seq = tu_hist_invoke(g_a_hist, me, "acquire", name, 0, g_a_ttl);
        rc = sqllock_lease_acquire(l[n], 500);
        tu_hist_complete(g_a_hist, me, seq, tu_hist_outcome(rc),
                         sqllock_lease_token(l[n]));
        a_call(w, rc, t0, 500, "acquire", db);
        if (rc != SQLLOCK_OK) {
            if (rc != SQLLOCK_TIMEOUT && rc != SQLLOCK_BUSY)
                tu_sleep_ms(20 + rand_r(&seed) % 30);
            continue;
        }
        t_ack = tu_now_us();
        deadline = t_ack + sqllock_lease_remaining_ms(l[n]) * 1000;
        /* Resumed: the first grant after this client heard of the
         * failover, or, for a client that went through it inside one
         * acquire's wait (its retries reconnected by themselves), the
         * first grant after the failover command ended. */
        if (w->resume_us == 0 &&
            (w->first_err_after_kill != 0 ||
             (LD(&g_a->t_promoted) != 0 && t_ack > LD(&g_a->t_promoted))))
            w->resume_us = t_ack;
        k = ADD(&g_a->nlog, 1);
        if (k >= A_LOG_MAX) {
            a_bad(w, "the hold log is full");
            break;
        }
        h = &g_a->log[k];
        h->name = n;
        h->who = who;
        h->token = sqllock_lease_token(l[n]);
        snprintf(h->owner, sizeof h->owner, "%s", sqllock_lease_owner(l[n]));
        h->t_send = t0;
        h->t_ack = t_ack;
        h->t_deadline = deadline;
        h->rel_rc = h->rel2_rc = -1;
        ST(&h->valid, 1);
        ST(&g_a->holding[n], 1);
        tu_hist_section(g_a_hist, me, name, h->token, 0);
        /* The exclusion invariant: read, pause, write, while held (the
         * history's writes: each increment, accepted by L6's view). */
        if (sqllock_lease_held(l[n])) {
            seq = tu_hist_invoke(g_a_hist, me, "write", name, h->token, 0);
            v = g_a->counter[n];
            tu_sleep_us(2000 + (long)(rand_r(&seed) % 4000));
            if (sqllock_lease_held(l[n])) {
                g_a->counter[n] = v + 1;
                ADD(&g_a->increments[n], 1);
                tu_hist_complete(g_a_hist, me, seq, "ok", h->token);
            } else {
                ADD(&g_a->skipped, 1);
                tu_hist_complete(g_a_hist, me, seq, "fail", h->token);
            }
        }
        t0 = tu_now_us();
        seq = tu_hist_invoke(g_a_hist, me, "renew", name, h->token, g_a_ttl);
        rc = sqllock_lease_renew(l[n]);
        tu_hist_complete(g_a_hist, me, seq, tu_hist_outcome(rc), h->token);
        a_call(w, rc, t0, 0, "renew", db);
        if (rc == SQLLOCK_OK) {
            int64_t d = tu_now_us() + sqllock_lease_remaining_ms(l[n]) * 1000;
            /* The local deadline counts from the renewal's send. */
            if (d > deadline)
                deadline = d;
            h->t_deadline = deadline;
        } else if (rc == SQLLOCK_LOST) {
            a_bad(w, "L4: renewal of a lease acquired %lld ms earlier "
                  "says LOST", (long long)((tu_now_us() - t_ack) / 1000));
        }
        if (sqllock_lease_held(l[n])) {
            seq = tu_hist_invoke(g_a_hist, me, "write", name, h->token, 0);
            v = g_a->counter[n];
            tu_sleep_us(1000 + (long)(rand_r(&seed) % 2000));
            if (sqllock_lease_held(l[n])) {
                g_a->counter[n] = v + 1;
                ADD(&g_a->increments[n], 1);
                tu_hist_complete(g_a_hist, me, seq, "ok", h->token);
            } else {
                ADD(&g_a->skipped, 1);
                tu_hist_complete(g_a_hist, me, seq, "fail", h->token);
            }
        }
        /* From here on this client no longer acts as the holder (nor
         * after its local deadline, L6). */
        t_end = tu_now_us();
        h->t_end = t_end < deadline ? t_end : deadline;
        tu_hist_section_end_at(g_a_hist, me, name, h->token, h->t_end);
        ST(&g_a->holding[n], 0);
        /* A release sent during the failover waits until the parent has
         * looked at the new primary, so that (i) sees the row as the kill
         * left it. */
        while (LD(&g_a->killing) && !LD(&g_a->checked) &&
               tu_now_us() - t_end < 30000000LL * g_slow)
            tu_sleep_ms(5);
        t0 = tu_now_us();
        if (sqllock_lease_count(l[n]) > 0) {
            seq = tu_hist_invoke(g_a_hist, me, "release", name, h->token, 0);
            rc = sqllock_lease_release(l[n]);
            tu_hist_complete(g_a_hist, me, seq, tu_hist_outcome(rc),
                             h->token);
            a_call(w, rc, t0, 0, "release", db);
        } else {
            rc = SQLLOCK_LOST;
        }
        h->rel_rc = rc;
        h->t_rel_ret = tu_now_us();
        /* A release the kill cut off: again, on the new primary, after
         * the parent's look. */
        for (k = 0; rc != SQLLOCK_OK && rc != SQLLOCK_LOST &&
                    sqllock_lease_count(l[n]) > 0; k++) {
            while (!LD(&g_a->checked) && !LD(&g_a->stop))
                tu_sleep_ms(5);
            if (k > 400) {
                a_bad(w, "the release never reached the new primary");
                break;
            }
            tu_sleep_ms(20);
            t0 = tu_now_us();
            seq = tu_hist_invoke(g_a_hist, me, "release", name, h->token, 0);
            rc = sqllock_lease_release(l[n]);
            tu_hist_complete(g_a_hist, me, seq, tu_hist_outcome(rc),
                             h->token);
            a_call(w, rc, t0, 0, "release (again)", db);
            h->rel2_rc = rc;
        }
        if (sqllock_lease_count(l[n]) > 0) {
            sqllock_lease_free(l[n]);
            l[n] = NULL;
            if (sqllock_lease_new(db, a_name(name, sizeof name, n), &o, &l[n])
                != SQLLOCK_OK) {
                a_bad(w, "lease_new: %s", sqllock_errmsg(db));
                break;
            }
        }
    }
out:
    for (i = 0; i < A_NAMES; i++)
        sqllock_lease_free(l[i]);
    sqllock_close(db);
    return w->bad[0] != '\0';
}

static int a_hold_cmp(const void *x, const void *y)
{
    const a_hold *a = x, *b = y;

    if (a->name != b->name)
        return a->name - b->name;
    return a->t_ack < b->t_ack ? -1 : a->t_ack > b->t_ack;
}

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return a < b ? -1 : a > b;
}

/* Every client's calls came back OK at least `n` times. */
static int a_all_ok(a_shared *sh, int64_t n)
{
    int i;

    for (i = 0; i < A_WORKERS; i++)
        if (LD(&sh->w[i].by_status[SQLLOCK_OK]) < n)
            return 0;
    return 1;
}

/* Every client was granted a lease after the failover (its resume). */
static int a_all_resumed(a_shared *sh)
{
    int i;

    for (i = 0; i < A_WORKERS; i++)
        if (LD(&sh->w[i].resume_us) == 0)
            return 0;
    return 1;
}

typedef struct a_rows {
    int n;
    char name[16][64];
    char owner[16][SQLLOCK_OWNER_LEN + 1];
    int64_t token[16], remaining[16];
} a_rows;

static int a_rows_cb(void *ctx, const sqllock_lease_info *info)
{
    a_rows *r = ctx;

    if (r->n < 16) {
        snprintf(r->name[r->n], sizeof r->name[0], "%s", info->name);
        snprintf(r->owner[r->n], sizeof r->owner[0], "%s", info->owner);
        r->token[r->n] = info->token;
        r->remaining[r->n] = info->remaining_ms;
        r->n++;
    }
    return 0;
}

/*
 * a. (L1, L5, L6, L10, E1) 8 processes loop over 3 names: acquire (with
 * a wait), a read-pause-write of a shared counter, renew, another
 * read-pause-write, release; the primary is crashed and the synchronous
 * standby promoted while they run.
 */
void test_failover_sync_L1_L5_L6_L10_E1_clients_through_failover(
    void **state)
{
    pid_t pids[A_WORKERS];
    a_shared *sh;
    a_rows rows;
    sqllock_db *db2, *probe;
    sqllock_lease *probe_l = NULL;
    sqllock_lease_options probe_o = SQLLOCK_LEASE_OPTIONS_INIT;
    int64_t t, fo_ms, before_max = 0, after_min = INT64_MAX;
    int64_t resume[A_WORKERS];
    int i, j, n, rc, nresume = 0, acked_before = 0, held_at_kill = 0,
        found = 0, window_released = 0, double_grants = 0, after_n = 0,
        inconclusive = 0, per_name_back = 0, rel_after_ok = 0,
        rel_after_lost = 0, heard = 0, probe_rc;
    int64_t total_incr = 0;

    (void)state;
    fo_fresh_pair("sync");
    g_a_ttl = 6000 * g_slow;
    sh = g_a = tu_shared_map(sizeof *sh);
    {
        char hp[1100];

        snprintf(hp, sizeof hp, "%s/history-a.txt", g_dir);
        (void)unlink(hp);
        g_a_hist = tu_hist_open(hp);
        if (g_a_hist == NULL)
            fail_msg("history %s: %s", hp, strerror(errno));
    }
    /* The children first: the parent opens its handles after the fork. */
    for (i = 0; i < A_WORKERS; i++) {
        fflush(stdout);
        fflush(stderr);
        pids[i] = fork();
        if (pids[i] == 0) {
            alarm((unsigned)(90 * g_slow));
            _exit(a_worker_main(i));
        }
        if (pids[i] < 0)
            fail_msg("fork: %s", strerror(errno));
    }
    t = tu_now_ms();
    while (LD(&sh->ready) < A_WORKERS && !LD(&sh->failed) &&
           tu_now_ms() - t < 30000 * g_slow)
        tu_sleep_ms(5);
    /* Under way: every client has been through one whole hold (its
     * acquire, renewal and release came back OK), so that all eight
     * contend when the primary goes. */
    t = tu_now_ms();
    while (!a_all_ok(sh, 3) && !LD(&sh->failed) &&
           tu_now_ms() - t < 10000 * g_slow)
        tu_sleep_ms(5);
    /* E1's probe: a handle connected to the primary before the kill,
     * whose next lease call meets the cut connection. */
    probe_o.ttl_ms = g_a_ttl;
    probe = fo_open_url(g_url, 3000 * g_slow);
    if (probe == NULL ||
        sqllock_lease_new(probe, "failover-probe", &probe_o, &probe_l) !=
            SQLLOCK_OK ||
        sqllock_lease_try_acquire(probe_l) != SQLLOCK_OK ||
        sqllock_lease_release(probe_l) != SQLLOCK_OK) {
        ST(&sh->stop, 1);
        for (i = 0; i < A_WORKERS; i++)
            tu_kill_wait(pids[i]);
        fail_msg("the probe handle: %s", sqllock_errmsg(probe));
    }

    /* The kill comes while at least two names are held, so that (i) has
     * leases to look for: right after this wait, with nothing between
     * (the probe above is set up first; holds last a few ms, and CI saw
     * none left at the kill when the probe's round trips came between,
     * under ASan at a load of 8). */
    t = tu_now_ms();
    while (LD(&sh->holding[0]) + LD(&sh->holding[1]) +
           LD(&sh->holding[2]) < 2 && tu_now_ms() - t < 5000 * g_slow)
        tu_sleep_us(200);

    ST(&sh->killing, 1);
    ST(&sh->t_kill, tu_now_us());
    rc = fo_repl("failover", NULL, &fo_ms);
    ST(&sh->t_promoted, tu_now_us());
    if (rc != 0) {
        ST(&sh->stop, 1);
        ST(&sh->checked, 1);
        for (i = 0; i < A_WORKERS; i++)
            tu_kill_wait(pids[i]);
        fail_msg("pgrepl.sh failover failed (status %d)", rc);
    }

    /* E1: an acquire on the connection the failover cut says so, and is
     * not sent again on a new one (the workers above may all have met
     * the cut inside an acquire's wait, whose retries reconnect by
     * themselves, and then heard nothing: that cannot be relied on). */
    probe_rc = sqllock_lease_try_acquire(probe_l);
    if (probe_rc != SQLLOCK_ECONNECT) {
        ST(&sh->stop, 1);
        for (i = 0; i < A_WORKERS; i++)
            tu_kill_wait(pids[i]);
        fail_msg("E1: an acquire on the connection the failover cut "
                 "returned %s, not SQLLOCK_ECONNECT (%s)",
                 sqllock_errname(probe_rc), sqllock_errmsg(probe));
    }
    sqllock_lease_free(probe_l);
    sqllock_close(probe);

    /* (i) right away, on the new primary's own URL. */
    db2 = fo_open_url(g_url2, 3000 * g_slow);
    memset(&rows, 0, sizeof rows);
    rc = db2 != NULL ? sqllock_list(db2, a_rows_cb, &rows) : SQLLOCK_ECONNECT;
    ST(&sh->t_checked, tu_now_us());
    ST(&sh->checked, 1);
    if (rc != SQLLOCK_OK) {
        ST(&sh->stop, 1);
        fail_msg("listing the new primary: %s: %s", sqllock_errname(rc),
                 sqllock_errmsg(db2));
    }
    sqllock_close(db2);

    /* Until every client has been granted a lease again after the
     * failover (E1, checked below), or a failure ends it. */
    t = tu_now_ms();
    while (!a_all_resumed(sh) && !LD(&sh->failed) &&
           tu_now_ms() - t < 10000 * g_slow)
        tu_sleep_ms(5);
    printf("    every client acquired again within %lld ms of the look at "
           "the new primary\n", (long long)(tu_now_ms() - t));
    ST(&sh->stop, 1);
    for (i = 0; i < A_WORKERS; i++) {
        char who[32];
        snprintf(who, sizeof who, "worker %d", i);
        fo_reap_or_kill(pids[i], 30000 * g_slow, who);
    }

    for (i = 0; i < A_WORKERS; i++) {
        a_worker *w = &sh->w[i];
        printf("    worker %d: OK %lld BUSY %lld TIMEOUT %lld ECONNECT %lld "
               "LOST %lld other %lld; longest call %lld ms; first error "
               "after the kill: %.140s\n", i,
               (long long)w->by_status[SQLLOCK_OK],
               (long long)w->by_status[SQLLOCK_BUSY],
               (long long)w->by_status[SQLLOCK_TIMEOUT],
               (long long)w->by_status[SQLLOCK_ECONNECT],
               (long long)w->by_status[SQLLOCK_LOST],
               (long long)(w->by_status[SQLLOCK_EDB] +
                           w->by_status[SQLLOCK_ECANCELED] +
                           w->by_status[SQLLOCK_EPERM]),
               (long long)w->longest_ms, w->first_err);
        if (w->bad[0] != '\0')
            fail_msg("worker %d: %s", i, w->bad);
    }
    if (LD(&sh->failed))
        fail_msg("%d failure(s) recorded", LD(&sh->failed));
    /* The whole history against the lease model (tu_history.h): the
     * checks below, and H3 -- no acknowledged grant or renewal forgotten
     * by the failover -- on every hold, not only those held at the kill. */
    {
        char hp[1100], nm[64];
        tu_hist_result hr;
        int bad;

        for (i = 0; i < A_NAMES; i++)
            tu_hist_final(g_a_hist, a_name(nm, sizeof nm, i),
                          sh->counter[i]);
        snprintf(hp, sizeof hp, "%s", tu_hist_path(g_a_hist));
        tu_hist_close(g_a_hist);
        g_a_hist = NULL;
        bad = tu_hist_check(hp, stdout, &hr);
        if (bad != 0)
            fail_msg("the history checker found %d violations in %s", bad,
                     hp);
    }

    n = sh->nlog < A_LOG_MAX ? sh->nlog : A_LOG_MAX;
    /* (i) every lease acknowledged before the kill and not released
     * before it is on the new primary with its owner and token. */
    for (i = 0; i < n; i++) {
        a_hold *h = &sh->log[i];
        char nm[64];
        int hit = 0;

        if (!h->valid || h->t_ack >= sh->t_kill)
            continue;
        acked_before++;
        if (h->rel_rc == SQLLOCK_OK && h->t_rel_ret < sh->t_kill)
            continue;
        if (h->rel_rc == SQLLOCK_OK && h->t_rel_ret < sh->t_checked) {
            /* Released (asynchronously, L10) while the kill was under
             * way: the row may or may not have reached the standby. */
            window_released++;
            continue;
        }
        held_at_kill++;
        a_name(nm, sizeof nm, h->name);
        for (j = 0; j < rows.n; j++)
            if (strcmp(rows.name[j], nm) == 0 &&
                strcmp(rows.owner[j], h->owner) == 0 &&
                rows.token[j] == h->token && rows.remaining[j] > 0)
                hit = 1;
        if (hit) {
            found++;
            if (h->rel2_rc == SQLLOCK_OK)
                rel_after_ok++;
            else if (h->rel2_rc == SQLLOCK_LOST)
                rel_after_lost++;
        } else if (sh->t_checked >= h->t_send + (g_a_ttl - 200) * 1000) {
            inconclusive++;
        } else {
            fail_msg("L10: lease %s (owner %s, token %lld), acknowledged "
                     "%lld ms before the kill and not released, is not on "
                     "the new primary", nm, h->owner, (long long)h->token,
                     (long long)((sh->t_kill - h->t_ack) / 1000));
        }
    }
    if (inconclusive > 0)
        fail_msg("INCONCLUSIVE: %d lease(s) held at the kill could have "
                 "expired before the new primary was looked at (%lld ms "
                 "after the kill, ttl %lld ms)", inconclusive,
                 (long long)((sh->t_checked - sh->t_kill) / 1000),
                 (long long)g_a_ttl);

    /* (ii) no overlap per name, (iii) tokens up per name in grant order. */
    qsort(sh->log, (size_t)n, sizeof sh->log[0], a_hold_cmp);
    for (i = 1; i < n; i++) {
        a_hold *p = &sh->log[i - 1], *h = &sh->log[i];
        if (!p->valid || !h->valid || p->name != h->name)
            continue;
        if (h->t_ack < p->t_end) {
            double_grants++;
            printf("    OVERLAP on name %d: worker %d (token %lld) from "
                   "%lld us, while worker %d (token %lld) held until %lld "
                   "us\n", h->name, h->who, (long long)h->token,
                   (long long)(h->t_ack - sh->t_kill), p->who,
                   (long long)p->token, (long long)(p->t_end - sh->t_kill));
        }
        if (h->token <= p->token)
            per_name_back++;
    }
    for (i = 0; i < n; i++) {
        a_hold *h = &sh->log[i];
        a_worker *w = &sh->w[h->who];
        if (!h->valid)
            continue;
        if (h->t_ack < sh->t_kill && h->token > before_max)
            before_max = h->token;
        if ((w->first_err_after_kill != 0 &&
             h->t_send > w->first_err_after_kill) ||
            h->t_ack > sh->t_promoted) {
            after_n++;
            if (h->token < after_min)
                after_min = h->token;
        }
    }
    for (i = 0; i < A_NAMES; i++)
        total_incr += sh->increments[i];
    for (i = 0; i < A_WORKERS; i++) {
        a_worker *w = &sh->w[i];
        if (w->first_err_after_kill != 0)
            heard++;
        if (w->resume_us == 0)
            fail_msg("E1: worker %d never acquired again after the "
                     "failover", i);
        resume[nresume++] = (w->resume_us - sh->t_kill) / 1000;
    }
    qsort(resume, (size_t)nresume, sizeof resume[0], cmp_i64);
    printf("    failover command: %lld ms; new primary looked at %lld ms "
           "after the kill; %d of %d clients heard SQLLOCK_ECONNECT (one "
           "whose retries inside an acquire's wait reconnected by "
           "themselves hears nothing)\n",
           (long long)fo_ms,
           (long long)((sh->t_checked - sh->t_kill) / 1000), heard,
           A_WORKERS);
    printf("    holds: %d in all; %d acknowledged before the kill, %d of them "
           "still held then, %d found on the new primary with owner and "
           "token (%d released on it afterwards OK, %d LOST), %d released "
           "during the kill (not checked); double grants: %d\n", n,
           acked_before, held_at_kill, found, rel_after_ok, rel_after_lost,
           window_released, double_grants);
    printf("    tokens: largest acknowledged before the kill %lld, smallest "
           "after the failover %lld (%d grants after); per-name order "
           "violations %d\n", (long long)before_max, (long long)after_min,
           after_n, per_name_back);
    printf("    counters:");
    for (i = 0; i < A_NAMES; i++)
        printf(" %lld/%lld", (long long)sh->counter[i],
               (long long)sh->increments[i]);
    printf(" (%lld increments, %lld skipped as no longer held)\n",
           (long long)total_incr, (long long)sh->skipped);
    printf("    resume after the kill (ms):");
    for (i = 0; i < nresume; i++)
        printf(" %lld", (long long)resume[i]);
    printf("; min %lld, median %lld, max %lld\n", (long long)resume[0],
           (long long)resume[nresume / 2], (long long)resume[nresume - 1]);

    if (double_grants > 0)
        fail_msg("L1/L6: %d overlapping holds", double_grants);
    for (i = 0; i < A_NAMES; i++)
        if (sh->counter[i] != sh->increments[i])
            fail_msg("L1: counter %d is %lld after %lld increments", i,
                     (long long)sh->counter[i],
                     (long long)sh->increments[i]);
    if (per_name_back > 0)
        fail_msg("L5: %d grants of a name had a token not above the one "
                 "before", per_name_back);
    if (held_at_kill == 0)
        fail_msg("no lease was held at the kill: (i) checked nothing");
    if (after_n == 0 || acked_before == 0)
        fail_msg("no grants before the kill (%d) or after the failover (%d)",
                 acked_before, after_n);
    if (after_min <= before_max)
        fail_msg("L5: token %lld after the failover is not above %lld, "
                 "acknowledged before it", (long long)after_min,
                 (long long)before_max);
    munmap(sh, sizeof *sh);
    g_a = NULL;
}

