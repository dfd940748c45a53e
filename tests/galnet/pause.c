/*
 * pause.c -- test_galnet b: a holder renews through node 1, node 1 is
 * paused (SIGSTOP) past its eviction while clients of nodes 2 and 3 try
 * for the name, then resumed (H3: nobody gets the name within the
 * holder's acknowledged ttl; H4: the holder's renewals after the resume
 * are not acknowledged once someone else got it; L6).
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
#include "galnet.h"

#define B_PROCS 3            /* the holder h (0), contenders c1, c2 */

static int64_t g_b_ttl;
static char g_b_url[B_PROCS][1024];

static const char *const b_api[] = {
    "acquire(wait)", "try_acquire", "release", "renew", "stream grant"
};

/* What the holder was told, one line per change. */
static void h_saw(int api, int rc, sqllock_db *db)
{
    const char *msg = rc == SQLLOCK_OK ? "" : sqllock_errmsg(db);
    const char *p = strstr(msg, "(mysql ");
    int code = p != NULL ? atoi(p + 7) : 0, n = g_sh->nhev;
    gn_hev *e;

    if (n > 0 && g_sh->hev[n - 1].api == api && g_sh->hev[n - 1].rc == rc &&
        g_sh->hev[n - 1].code == code) {
        g_sh->hev[n - 1].repeats++;
        return;
    }
    if (n == MAXHEV)
        return;
    e = &g_sh->hev[n];
    e->t_us = tu_now_us();
    e->api = api;
    e->rc = rc;
    e->code = code;
    e->repeats = 1;
    snprintf(e->msg, sizeof e->msg, "%s", msg);
    ST(&g_sh->nhev, n + 1);
}

/*
 * The holder: node 1 only, short timeouts (so that a renewal into the
 * paused node fails within seconds). Acquires, then every 300 ms writes
 * (while held) and renews; its section ends at its local deadline (L6)
 * when renewals fail, and starts again when one is acknowledged.
 */
static int b_holder(void *arg)
{
    gn_client *c = &g_sh->c[0];
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;
    sqllock_db *db;
    int64_t t0, seq, token, deadline = 0;
    int rc, in_section = 0;
    const char *name = g_names[0];

    (void)arg;
    db = gn_open(g_b_url[0], 1000 * (int64_t)g_slow,
                 1000 * (int64_t)g_slow, &rc);
    o.ttl_ms = g_b_ttl;
    if (db == NULL || sqllock_lease_new(db, name, &o, &l) != SQLLOCK_OK) {
        gn_bad(c, "open %s: %s", g_b_url[0], sqllock_errname(rc));
        sqllock_close(db);
        return 1;
    }
    c->node0 = gn_node_of(db);
    t0 = tu_now_us();
    seq = tu_hist_invoke(g_hist, "h", "acquire", name, 0, g_b_ttl);
    rc = sqllock_lease_try_acquire(l);
    token = sqllock_lease_token(l);
    tu_hist_complete(g_hist, "h", seq, tu_hist_outcome(rc), token);
    gn_note(c, API_TRY, rc, db, t0);
    h_saw(API_TRY, rc, db);
    if (rc != SQLLOCK_OK) {
        gn_bad(c, "the holder's acquire: %s (%s)", sqllock_errname(rc),
               sqllock_errmsg(db));
        goto out;
    }
    deadline = tu_now_us() + sqllock_lease_remaining_ms(l) * 1000;
    ST(&g_sh->h_last_ok_inv_us, t0);
    tu_hist_section(g_hist, "h", name, token, 0);
    in_section = 1;
    ST(&g_sh->h_granted, 1);
    while (!LD(&g_sh->stop) && sqllock_lease_count(l) > 0) {
        gn_write(c, "h", name, 0, l, 1000);
        tu_sleep_ms(300);
        if (in_section && !sqllock_lease_held(l)) {
            /* L6: it stopped acting as the holder at its deadline. */
            tu_hist_section_end_at(g_hist, "h", name, token, deadline);
            in_section = 0;
        }
        t0 = tu_now_us();
        seq = tu_hist_invoke(g_hist, "h", "renew", name, token, g_b_ttl);
        rc = sqllock_lease_renew(l);
        tu_hist_complete(g_hist, "h", seq, tu_hist_outcome(rc), token);
        gn_note(c, API_RENEW, rc, db, t0);
        h_saw(API_RENEW, rc, db);
        if (rc == SQLLOCK_OK) {
            deadline = tu_now_us() + sqllock_lease_remaining_ms(l) * 1000;
            ST(&g_sh->h_last_ok_inv_us, t0);
            if (!in_section) {
                tu_hist_section(g_hist, "h", name, token, 0);
                in_section = 1;
            }
        } else if (rc == SQLLOCK_ECONNECT && !LD(&g_sh->fault)) {
            gn_bad(c, "renewal: ECONNECT before the pause (%s)",
                   sqllock_errmsg(db));
        } else if (rc == SQLLOCK_LOST) {
            in_section = 0;          /* "lost" ends the hold */
        }
        /* The answer after the resume that settles it: OK or LOST. */
        if ((rc == SQLLOCK_OK || rc == SQLLOCK_LOST) &&
            LD(&g_sh->t_back_us) != 0 && t0 > LD(&g_sh->t_back_us) &&
            LD(&g_sh->h_final_us) == 0) {
            ST(&g_sh->h_final_rc, rc);
            ST(&g_sh->h_final_us, tu_now_us());
        }
    }
    if (in_section) {
        int64_t now = tu_now_us();
        tu_hist_section_end_at(g_hist, "h", name, token,
                               now < deadline ? now : deadline);
    }
    if (sqllock_lease_count(l) > 0)
        gn_release(c, "h", db, l, 2 * g_b_ttl, 0);
out:
    sqllock_lease_free(l);
    sqllock_close(db);
    return c->bad[0] != '\0';
}

/* A contender on nodes 2 and 3: acquire (short waits), three writes
 * over about 150 ms, release, again. */
static int b_contender(void *arg)
{
    int who = (int)(intptr_t)arg;
    gn_client *c = &g_sh->c[who];
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;
    sqllock_db *db;
    const char *name = g_names[0];
    char me[8];
    int rc, w;

    snprintf(me, sizeof me, "c%d", who);
    db = gn_open(g_b_url[who], 2000 * (int64_t)g_slow,
                 10000 * (int64_t)g_slow, &rc);
    o.ttl_ms = g_b_ttl;
    o.backoff_min_ms = 5;
    o.backoff_max_ms = 50;
    if (db == NULL || sqllock_lease_new(db, name, &o, &l) != SQLLOCK_OK) {
        gn_bad(c, "open %s: %s", g_b_url[who], sqllock_errname(rc));
        sqllock_close(db);
        return 1;
    }
    c->node0 = gn_node_of(db);
    ADD(&g_sh->ready, 1);
    while (!LD(&g_sh->go) && !LD(&g_sh->stop))
        tu_sleep_ms(2);
    while (!LD(&g_sh->stop) && c->bad[0] == '\0') {
        int64_t t0 = tu_now_us(), seq, token, deadline, now;

        seq = tu_hist_invoke(g_hist, me, "acquire", name, 0, g_b_ttl);
        rc = sqllock_lease_acquire(l, 500);
        token = sqllock_lease_token(l);
        tu_hist_complete(g_hist, me, seq, tu_hist_outcome(rc), token);
        gn_note(c, API_ACQ, rc, db, t0);
        if (rc == SQLLOCK_TIMEOUT || rc == SQLLOCK_BUSY)
            continue;
        if (rc != SQLLOCK_OK) {
            if (rc == SQLLOCK_ECONNECT && LD(&g_sh->fault)) {
                tu_sleep_ms(50);
                continue;
            }
            gn_bad(c, "acquire: %s (%s)", sqllock_errname(rc),
                   sqllock_errmsg(db));
            break;
        }
        c->grants++;
        now = tu_now_us();
        if (LD(&g_sh->fault) && LD(&g_sh->b_first_grant_us) == 0) {
            ST(&g_sh->b_first_who, who);
            ST(&g_sh->b_first_grant_us, now);
        }
        deadline = now + sqllock_lease_remaining_ms(l) * 1000;
        tu_hist_section(g_hist, me, name, token, 0);
        for (w = 0; w < 3; w++) {
            gn_write(c, me, name, 0, l, 1000);
            tu_sleep_ms(50);
        }
        now = tu_now_us();
        tu_hist_section_end_at(g_hist, me, name, token,
                               now < deadline ? now : deadline);
        gn_release(c, me, db, l, 2 * g_b_ttl, 0);
        if (sqllock_lease_count(l) > 0) {
            sqllock_lease_free(l);
            l = NULL;
            if (sqllock_lease_new(db, name, &o, &l) != SQLLOCK_OK)
                gn_bad(c, "lease_new: %s", sqllock_errmsg(db));
        }
        tu_sleep_ms(20);
    }
    sqllock_lease_free(l);
    sqllock_close(db);
    return c->bad[0] != '\0';
}

static void print_holder(int64_t t_pause_us)
{
    int i;

    printf("    what the holder (node 1 only) was told, from the pause:\n");
    for (i = 0; i < LD(&g_sh->nhev); i++) {
        const gn_hev *e = &g_sh->hev[i];

        printf("      %+7lld ms  %-13s %-9s x%-3d %.160s\n",
               (long long)((e->t_us - t_pause_us) / 1000), b_api[e->api],
               sqllock_errname(e->rc) + 8, e->repeats, e->msg);
    }
}

void test_galnet_b_H3_H4_L6_paused_holder_node(void **state)
{
    int64_t t, t_pause, t_resume, pause_min = 6000, ms;
    int failed, i;
    char secs[16];

    (void)state;
    gn_cluster("safe");
    gn_case_begin("b");
    g_b_ttl = 3000 * (int64_t)g_slow;
    gn_url(g_b_url[0], sizeof g_b_url[0], "1", NULL);
    gn_url(g_b_url[1], sizeof g_b_url[1], "23", NULL);
    gn_url(g_b_url[2], sizeof g_b_url[2], "32", NULL);
    for (i = 0; i < B_PROCS; i++)
        g_sh->c[i].first = i == 0 ? 1 : i + 1;
    gn_fork(b_holder, NULL);
    for (i = 1; i < B_PROCS; i++)
        gn_fork(b_contender, (void *)(intptr_t)i);
    t = tu_now_ms();
    TU_WAIT_WHILE((!LD(&g_sh->h_granted) || LD(&g_sh->ready) < B_PROCS - 1)
                  && !LD(&g_sh->failed), t + 30000 * (int64_t)g_slow, 5);
    if (!LD(&g_sh->h_granted) || LD(&g_sh->ready) < B_PROCS - 1) {
        gn_print_clients(B_PROCS);
        fail_msg("the holder was not granted the name, or a contender "
                 "did not connect, within 30 s");
    }
    /* The contenders try while the holder renews: BUSY (H3 from the
     * start). */
    ST(&g_sh->go, 1);
    gn_wait_until(tu_now_ms() + 1500);
    if (LD(&g_sh->b_first_grant_us) != 0 || LD(&g_sh->failed))
        fail_msg("before the pause: a contender got the name, or a client "
                 "failed (see the history)");

    ST(&g_sh->fault, 1);
    ST(&g_sh->t_fault_us, tu_now_us());
    if (gn_script(NULL, 0, "pause", "1", NULL) != 0)
        fail_msg("galera_net.sh pause %s 1 failed", g_dir);
    ST(&g_sh->t_fault_done_us, tu_now_us());
    t_pause = tu_now_ms();
    /* Paused past the eviction, until a contender has the name (its
     * ttl ran out on nodes 2 and 3). */
    TU_WAIT_WHILE((LD(&g_sh->b_first_grant_us) == 0 ||
                   tu_now_ms() - t_pause < pause_min) && !LD(&g_sh->failed),
                  t_pause + g_b_ttl + 30000 * (int64_t)g_slow, 20);
    t_resume = tu_now_ms();
    ST(&g_sh->t_back_us, tu_now_us());
    if (gn_script(NULL, 0, "resume", "1", NULL) != 0)
        fail_msg("galera_net.sh resume %s 1 failed", g_dir);
    snprintf(secs, sizeof secs, "%d", 90 * g_slow);
    if (gn_script(&ms, GN_QUIET, "wait", "1", secs, "3", NULL) != 0) {
        gn_print_status();
        fail_msg("node 1 did not rejoin (Synced in a cluster of 3) within "
                 "%s s of its resume", secs);
    }
    printf("    node 1 Synced in a cluster of 3 again %lld ms after the "
           "resume\n", (long long)(tu_now_ms() - t_resume));
    /* The holder's settling answer through node 1. */
    t = tu_now_ms();
    TU_WAIT_WHILE(LD(&g_sh->h_final_us) == 0 && !LD(&g_sh->failed),
                  t + 20000 * (int64_t)g_slow, 20);
    gn_wait_until(tu_now_ms() + 500);
    ST(&g_sh->stop, 1);
    failed = gn_reap(60000 * (int64_t)g_slow);

    printf("  b: node 1 paused for %lld ms (ttl %lld ms)\n",
           (long long)(t_resume - t_pause), (long long)g_b_ttl);
    print_holder(LD(&g_sh->t_fault_done_us));
    if (LD(&g_sh->b_first_grant_us) != 0)
        printf("    first contender grant: c%d at %+lld ms; the holder's "
               "last acknowledged renewal was invoked at %+lld ms (+ ttl "
               "= %+lld ms)\n", LD(&g_sh->b_first_who),
               (long long)((LD(&g_sh->b_first_grant_us) -
                            LD(&g_sh->t_fault_done_us)) / 1000),
               (long long)((LD(&g_sh->h_last_ok_inv_us) -
                            LD(&g_sh->t_fault_done_us)) / 1000),
               (long long)((LD(&g_sh->h_last_ok_inv_us) + g_b_ttl * 1000 -
                            LD(&g_sh->t_fault_done_us)) / 1000));
    if (LD(&g_sh->h_final_us) != 0)
        printf("    the holder's first settled renewal after the resume: "
               "%s at %+lld ms\n", sqllock_errname(LD(&g_sh->h_final_rc)),
               (long long)((LD(&g_sh->h_final_us) -
                            LD(&g_sh->t_fault_done_us)) / 1000));
    gn_print_seen(B_PROCS);
    gn_print_clients(B_PROCS);
    gn_check_history(1, NULL);
    gn_check_counters(1);
    if (failed > 0 || LD(&g_sh->failed) > 0)
        fail_msg("%d client(s) failed or hung, %d failure(s) recorded (see "
                 "above); the history is kept in %s", failed,
                 LD(&g_sh->failed), g_work);
    if (LD(&g_sh->b_first_grant_us) == 0) {
        g_keep = 1;
        fail_msg("no contender on nodes 2/3 was granted the name while node "
                 "1 was paused (%lld ms, ttl %lld ms): the majority did not "
                 "go on without it", (long long)(t_resume - t_pause),
                 (long long)g_b_ttl);
    }
    if (LD(&g_sh->h_final_us) == 0) {
        g_keep = 1;
        fail_msg("the holder got neither OK nor LOST from a renewal through "
                 "node 1 within 20 s of node 1's rejoining (what it was "
                 "told is above)");
    }
    if (LD(&g_sh->h_final_rc) != SQLLOCK_LOST) {
        g_keep = 1;
        fail_msg("H4/L4: after a contender was granted the name, the "
                 "holder's renewal through node 1 answered %s, not LOST",
                 sqllock_errname(LD(&g_sh->h_final_rc)));
    }
    g_case_done = 1;
}
