/*
 * test_failover.c -- a PostgreSQL primary with a streaming standby, and a
 * failover while clients hold, wait and count (issue 8: DESIGN L1, L5, L6,
 * L10 across a promotion; E1 bounded calls).
 *
 * The pair is made by scripts/pgrepl.sh (its path in
 * $SQLLOCK_TEST_PGREPL_SCRIPT) in $SQLLOCK_TEST_PGREPL_DIR, afresh for
 * every scenario (`stop`, then `start DIR sync|async`). The clients use the
 * multi-host URL with target_session_attrs=read-write, through
 * sqllock_open(), so that after the failover they find the new primary by
 * themselves. Without the two variables the test says SKIPPED and exits
 * 77 (ctest: skipped; 1 under CI).
 *
 *   a. sync standby, 8 processes on 3 names through a failover: every
 *      lease acknowledged before the kill and not released is on the new
 *      primary with its owner and token (L10 with a synchronous standby);
 *      no two holders' intervals overlap and the counters end exact (L1,
 *      L6); tokens after the failover are above every token before (L5);
 *      every call is bounded and every client resumes (E1).
 *   b. a stalled synchronous standby: an acquire or a renewal whose
 *      commit waits for the standby must not report SQLLOCK_OK unless the
 *      standby has it. PostgreSQL answers a canceled wait (pg_cancel_backend,
 *      or any cancel request) with only a WARNING and success: that must
 *      still be a failure. Then a failover shows why: the row is not there.
 *   c. the hazard of an asynchronous standby, demonstrated: a lease the
 *      primary acknowledged is gone after a failover and a second owner
 *      gets it while the first still believes it holds. This test PASSES
 *      when the hazard is reproduced; it documents why sqllock needs a
 *      synchronous standby for failover safety.
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

/* Static, not malloc'd: forked children must inherit no heap blocks. */
static char g_dir[1024], g_script[1024];
static char g_url[512], g_url1[512], g_url2[512];
static int g_slow = 1;

#define LD(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define ST(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
#define ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_SEQ_CST)

/* Runs `pgrepl.sh CMD DIR [ARG]`; returns its exit status, *ms the time. */
static int repl(const char *cmd, const char *arg, int64_t *ms)
{
    int64_t t = tu_now_ms();
    int rc = tu_run_script(g_script, cmd, g_dir, arg);

    if (ms != NULL)
        *ms = tu_now_ms() - t;
    return rc;
}

/* A fresh pair in `mode`, its URLs read from DIR/env, and the schema. */
static void fresh_pair(const char *mode)
{
    char env[8192], path[1100];
    sqllock_db *db = NULL;
    int64_t ms;
    int rc;

    repl("stop", NULL, NULL);
    rc = repl("start", mode, &ms);
    if (rc != 0)
        fail_msg("pgrepl.sh start %s failed (status %d)", mode, rc);
    snprintf(path, sizeof path, "%s/env", g_dir);
    tu_read_file(path, env, sizeof env);
    if (!tu_get_var(env, "SQLLOCK_TEST_PGREPL_URL", g_url, sizeof g_url) ||
        !tu_get_var(env, "SQLLOCK_TEST_PGREPL_URL1", g_url1, sizeof g_url1) ||
        !tu_get_var(env, "SQLLOCK_TEST_PGREPL_URL2", g_url2, sizeof g_url2))
        fail_msg("%s has no SQLLOCK_TEST_PGREPL_URL*", path);
    rc = sqllock_open(g_url, NULL, &db);
    if (rc == SQLLOCK_OK)
        rc = sqllock_init(db);
    if (rc != SQLLOCK_OK)
        fail_msg("init on %s: %s: %s", g_url, sqllock_errname(rc),
                 sqllock_errmsg(db));
    sqllock_close(db);
    printf("    pair (%s) started in %lld ms\n", mode, (long long)ms);
}

static sqllock_db *open_url(const char *url, int64_t stmt_ms)
{
    sqllock_options o = SQLLOCK_OPTIONS_INIT;
    sqllock_db *db = NULL;
    int rc, i;

    o.connect_timeout_ms = 2000 * g_slow;
    o.statement_timeout_ms = stmt_ms;
    rc = sqllock_open(url, &o, &db);
    for (i = 0; i < 100 && rc == SQLLOCK_ECONNECT; i++) {
        sqllock_close(db);
        db = NULL;
        tu_sleep_ms(50);
        rc = sqllock_open(url, &o, &db);
    }
    if (rc != SQLLOCK_OK) {
        fprintf(stderr, "open %s: %s: %s\n", url, sqllock_errname(rc),
                sqllock_errmsg(db));
        sqllock_close(db);
        return NULL;
    }
    return db;
}

static void reap_or_kill(pid_t pid, int64_t ms, const char *who)
{
    int code = tu_wait_for(pid, ms);

    if (code == -1) {
        tu_kill_wait(pid);
        fail_msg("%s did not finish within %lld ms: killed", who,
                 (long long)ms);
    }
    if (code != 0)
        fail_msg("%s ended with %s %d", who, code >= 1000 ? "signal"
                 : "status", code >= 1000 ? code - 1000 : code);
}

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
    sqllock_db *db = open_url(g_url, 3000 * g_slow);
    char name[64];
    int i, iter = 0;

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
        rc = sqllock_lease_acquire(l[n], 500);
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
        /* The exclusion invariant: read, pause, write, while held. */
        if (sqllock_lease_held(l[n])) {
            v = g_a->counter[n];
            tu_sleep_us(2000 + (long)(rand_r(&seed) % 4000));
            if (sqllock_lease_held(l[n])) {
                g_a->counter[n] = v + 1;
                ADD(&g_a->increments[n], 1);
            } else {
                ADD(&g_a->skipped, 1);
            }
        }
        t0 = tu_now_us();
        rc = sqllock_lease_renew(l[n]);
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
            v = g_a->counter[n];
            tu_sleep_us(1000 + (long)(rand_r(&seed) % 2000));
            if (sqllock_lease_held(l[n])) {
                g_a->counter[n] = v + 1;
                ADD(&g_a->increments[n], 1);
            } else {
                ADD(&g_a->skipped, 1);
            }
        }
        /* From here on this client no longer acts as the holder. */
        t_end = tu_now_us();
        h->t_end = t_end < deadline ? t_end : deadline;
        ST(&g_a->holding[n], 0);
        /* A release sent during the failover waits until the parent has
         * looked at the new primary, so that (i) sees the row as the kill
         * left it. */
        while (LD(&g_a->killing) && !LD(&g_a->checked) &&
               tu_now_us() - t_end < 30000000LL * g_slow)
            tu_sleep_ms(5);
        t0 = tu_now_us();
        if (sqllock_lease_count(l[n]) > 0) {
            rc = sqllock_lease_release(l[n]);
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
            rc = sqllock_lease_release(l[n]);
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
static void test_failover_sync_L1_L5_L6_L10_E1_clients_through_failover(
    void **state)
{
    pid_t pids[A_WORKERS];
    a_shared *sh;
    a_rows rows;
    sqllock_db *db2;
    int64_t t, fo_ms, before_max = 0, after_min = INT64_MAX;
    int64_t resume[A_WORKERS];
    int i, j, n, rc, nresume = 0, acked_before = 0, held_at_kill = 0,
        found = 0, window_released = 0, double_grants = 0, after_n = 0,
        inconclusive = 0, per_name_back = 0, rel_after_ok = 0,
        rel_after_lost = 0, heard = 0;
    int64_t total_incr = 0;

    (void)state;
    fresh_pair("sync");
    g_a_ttl = 6000 * g_slow;
    sh = g_a = tu_shared_map(sizeof *sh);
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
    tu_sleep_ms(2500 * g_slow);
    /* The kill comes while at least two names are held, so that (i) has
     * leases to look for. */
    t = tu_now_ms();
    while (LD(&sh->holding[0]) + LD(&sh->holding[1]) +
           LD(&sh->holding[2]) < 2 && tu_now_ms() - t < 5000 * g_slow)
        tu_sleep_us(200);

    ST(&sh->killing, 1);
    ST(&sh->t_kill, tu_now_us());
    rc = repl("failover", NULL, &fo_ms);
    ST(&sh->t_promoted, tu_now_us());
    if (rc != 0) {
        ST(&sh->stop, 1);
        ST(&sh->checked, 1);
        for (i = 0; i < A_WORKERS; i++)
            tu_kill_wait(pids[i]);
        fail_msg("pgrepl.sh failover failed (status %d)", rc);
    }

    /* (i) right away, on the new primary's own URL. */
    db2 = open_url(g_url2, 3000 * g_slow);
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

    tu_sleep_ms(3000 * g_slow);
    ST(&sh->stop, 1);
    for (i = 0; i < A_WORKERS; i++) {
        char who[32];
        snprintf(who, sizeof who, "worker %d", i);
        reap_or_kill(pids[i], 30000 * g_slow, who);
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
    if (heard == 0)
        fail_msg("E1: no client heard of the failover");
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
    sqllock_db *db = open_url(g_url, 20000 * g_slow);
    sqllock_db *quick = open_url(g_url, 1500 * g_slow);
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

/* Cancels the statements that wait for the synchronous standby, as an
 * administrator's pg_cancel_backend() (or any cancel request) would: those
 * whose text is LIKE `like`, once `want` of them wait (the watchdog's
 * retries wait too). Returns the number canceled. */
static int b_cancel_syncrep_waiter(sqllock_db *db, const char *like,
                                   int want)
{
    sqllock_value v[2];
    int64_t t = tu_now_ms(), n = 0;
    int has = 0, rc;

    v[0] = sqllock__text(like);
    v[1] = sqllock__int(want);
    while (tu_now_ms() - t < 10000 * g_slow) {
        /* All those whose statement is like `like`, once `want` of
         * them are waiting. */
        rc = sqllock__exec_sql(db, "WITH w AS (SELECT pid FROM "
                               "pg_catalog.pg_stat_activity WHERE "
                               "wait_event = 'SyncRep' AND query LIKE $1 "
                               "AND pid <> pg_catalog.pg_backend_pid()) "
                               "SELECT count(pg_catalog.pg_cancel_backend"
                               "(pid)) FROM w WHERE (SELECT count(*) FROM w) "
                               ">= $2", v, 2, &has, &n, NULL);
        if (rc != SQLLOCK_OK)
            fail_msg("pg_cancel_backend: %s: %s", sqllock_errname(rc),
                     sqllock_errmsg(db));
        if (n > 0)
            return (int)n;
        tu_sleep_ms(20);
    }
    return 0;
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
static void test_failover_sync_L6_L10_stalled_standby_no_false_success(
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
    fresh_pair("sync");
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
    db = open_url(g_url1, 5000);
    if (db == NULL)
        fail_msg("cannot open the primary");
    if (repl("pause-standby", NULL, NULL) != 0)
        fail_msg("pause-standby failed");

    ST(&sh->phase, 1);
    /* The child's renewal and its watchdog's. */
    n = b_cancel_syncrep_waiter(db, "%UPDATE sqllock_lease%", 2);
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
    n = b_cancel_syncrep_waiter(db, "INSERT INTO sqllock_lease%", 1);
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
           "%s\n", (long long)(1500 * g_slow),
           sqllock_errname(sh->rc[B_ACQ_BOUND]),
           (long long)sh->took_ms[B_ACQ_BOUND], sh->held[B_ACQ_BOUND],
           sh->msg[B_ACQ_BOUND]);
    sqllock_close(db);

    if (repl("failover", NULL, &fo_ms) != 0) {
        tu_kill_wait(pid);
        fail_msg("failover failed");
    }
    db2 = open_url(g_url2, 5000);
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
    reap_or_kill(pid, 10000, "the child");
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
    assert_true(sh->took_ms[B_ACQ_BOUND] < 1500 * g_slow + 3000);
    assert_int_equal(row.found, 0);
    assert_int_equal(rc, SQLLOCK_OK);
    assert_int_equal(sh->rc[B_RENEW_AFTER], SQLLOCK_OK);
    munmap(sh, sizeof *sh);
    g_b = NULL;
}

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

static int c_child(void)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;
    sqllock_db *db = open_url(g_url, 2000 * g_slow);
    int64_t t, t0;
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
    g_c->rc = sqllock_lease_try_acquire(l);
    g_c->took_ms = tu_now_ms() - t0;
    g_c->token = sqllock_lease_token(l);
    g_c->remaining_at_grant = sqllock_lease_remaining_ms(l);
    snprintf(g_c->msg, sizeof g_c->msg, "%s", sqllock_errmsg(db));
    ST(&g_c->done, 2);
    for (t = tu_now_ms(); LD(&g_c->phase) < 2 && tu_now_ms() - t < 60000;)
        tu_sleep_ms(5);
    g_c->held_now = sqllock_lease_held(l);
    g_c->remaining_now = sqllock_lease_remaining_ms(l);
    ST(&g_c->done, 3);
    rc = 0;
out:
    sqllock_lease_free(l);
    sqllock_close(db);
    return rc;
}

/* One run of the recipe: pause the standby's walreceiver, a child
 * acquires, failover, the parent acquires the same name on the new
 * primary. Returns the parent's status; *token_b its token. */
static int c_recipe(const char *mode, int64_t *token_b, int64_t *fo_ms)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *b = NULL;
    sqllock_db *db;
    pid_t pid;
    int64_t t;
    int rc;

    fresh_pair(mode);
    g_c = tu_shared_map(sizeof *g_c);
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
    if (repl("pause-standby", NULL, NULL) != 0) {
        tu_kill_wait(pid);
        fail_msg("pause-standby failed");
    }
    ST(&g_c->phase, 1);
    for (t = tu_now_ms(); LD(&g_c->done) < 2 && tu_now_ms() - t < 30000;)
        tu_sleep_ms(5);
    if (repl("failover", NULL, fo_ms) != 0) {
        tu_kill_wait(pid);
        fail_msg("failover failed");
    }
    db = open_url(g_url, 3000);
    if (db == NULL) {
        tu_kill_wait(pid);
        fail_msg("cannot open the new primary");
    }
    o.ttl_ms = 5000;
    assert_int_equal(sqllock_lease_new(db, "failover-c-hazard", &o, &b),
                     SQLLOCK_OK);
    rc = sqllock_lease_try_acquire(b);
    *token_b = sqllock_lease_token(b);
    ST(&g_c->phase, 2);
    for (t = tu_now_ms(); LD(&g_c->done) < 3 && tu_now_ms() - t < 30000;)
        tu_sleep_ms(5);
    reap_or_kill(pid, 10000, "the first owner");
    if (rc == SQLLOCK_OK)
        sqllock_lease_release(b);
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
 * with a SYNCHRONOUS standby: the first acquire is never acknowledged, so
 * the second grant is safe.
 */
static void test_failover_async_hazard_demonstrated(void **state)
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
    munmap(g_c, sizeof *g_c);
    g_c = NULL;
}

static int group_teardown(void **state)
{
    (void)state;
    repl("stop", NULL, NULL);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_failover_sync_L1_L5_L6_L10_E1_clients_through_failover),
        cmocka_unit_test(
            test_failover_sync_L6_L10_stalled_standby_no_false_success),
        cmocka_unit_test(test_failover_async_hazard_demonstrated),
    };
    const char *dir = getenv("SQLLOCK_TEST_PGREPL_DIR");
    const char *script = getenv("SQLLOCK_TEST_PGREPL_SCRIPT");
    int failed;

    if (dir == NULL || *dir == '\0' || script == NULL || *script == '\0' ||
        strchr(dir, '\'') || strchr(script, '\'') ||
        strlen(dir) >= sizeof g_dir || strlen(script) >= sizeof g_script ||
        sqllock_driver_find("postgres") == NULL)
        return tu_unit_cannot_run("failover", "SQLLOCK_TEST_PGREPL_DIR and "
                                  "SQLLOCK_TEST_PGREPL_SCRIPT "
                                  "(scripts/pgrepl.sh) must name a directory "
                                  "for a throwaway PostgreSQL primary and "
                                  "standby, and the postgres driver must be "
                                  "built");
    snprintf(g_dir, sizeof g_dir, "%s", dir);
    snprintf(g_script, sizeof g_script, "%s", script);
    g_slow = tu_slowdown();
    failed = cmocka_run_group_tests_name("failover [postgres primary + "
                                         "standby]", tests, NULL,
                                         group_teardown);
    return tu_unit_result("failover", "postgres", failed);
}
