/*
 * crash.c -- test_galnet c and d: all three nodes SIGKILLed in quick
 * succession while clients contend and grant themselves fresh names,
 * then the cluster recovered (`galera_net.sh recover`). c on --safe
 * settings (innodb_flush_log_at_trx_commit=1): nothing acknowledged is
 * forgotten (H3, L10). d on --jepsen settings (0): the driver refuses
 * the server unless the URL says innodb_flush=any, and with it the same
 * crash shows what the setting costs.
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

#define C_PROCS 6
#define STREAM_TTL_MS 240000

static const char *const c_order[NODES] = { "123", "231", "312" };
static gn_plan g_c_plan[C_PROCS];
static char g_c_url[C_PROCS][1024];

static int c_child(void *arg)
{
    int who = (int)(intptr_t)arg;

    return gn_client_main(who, &g_c_plan[who]);
}

typedef struct probe_result {
    int probed, kept, forgotten, other;
    int64_t ms;
    char first[3][400];
} probe_result;

/*
 * After the recovery, a new owner tries for every fresh name whose
 * grant was acknowledged before the kill: BUSY when the cluster kept the
 * grant; a grant when it forgot it (the history's H3 counts it). A
 * forgotten name is released again.
 */
static void probe(const char *url, int64_t t_kill_us, probe_result *r)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_db *db = NULL;
    int64_t t0 = tu_now_ms();
    int n = LD(&g_sh->nstream), j, rc = SQLLOCK_OK;

    memset(r, 0, sizeof *r);
    if (n > MAXSTREAM)
        n = MAXSTREAM;
    while (db == NULL && tu_now_ms() - t0 < 30000 * (int64_t)g_slow) {
        db = gn_open(url, 2000 * (int64_t)g_slow, 10000 * (int64_t)g_slow,
                     &rc);
        if (db == NULL)
            tu_sleep_ms(100);
    }
    if (db == NULL)
        fail_msg("the probe cannot connect after the recovery: %s",
                 sqllock_errname(rc));
    o.ttl_ms = 2000;
    for (j = 0; j < n; j++) {
        const gn_grant *g = &g_sh->stream[j];
        sqllock_lease *l = NULL;
        char name[160];
        int tries;

        if (g->ack_us >= t_kill_us)
            continue;
        snprintf(name, sizeof name, "%s%d-%lld", g_stream_prefix, g->who,
                 (long long)g->idx);
        if (sqllock_lease_new(db, name, &o, &l) != SQLLOCK_OK)
            fail_msg("lease_new %s: %s", name, sqllock_errmsg(db));
        for (tries = 0; tries < 5; tries++) {
            int64_t seq = tu_hist_invoke(g_hist, "probe", "acquire", name, 0,
                                         o.ttl_ms);
            rc = sqllock_lease_try_acquire(l);
            tu_hist_complete(g_hist, "probe", seq, tu_hist_outcome(rc),
                             sqllock_lease_token(l));
            if (rc != SQLLOCK_ECONNECT)
                break;
            tu_sleep_ms(100);
        }
        r->probed++;
        if (rc == SQLLOCK_BUSY) {
            r->kept++;
        } else if (rc == SQLLOCK_OK) {
            int64_t token = sqllock_lease_token(l), seq;

            if (r->forgotten < 3)
                snprintf(r->first[r->forgotten], sizeof r->first[0],
                         "%s (c%d's token %lld, acknowledged %lld ms before "
                         "the kill; now token %lld)", name, g->who,
                         (long long)g->token,
                         (long long)((t_kill_us - g->ack_us) / 1000),
                         (long long)token);
            r->forgotten++;
            seq = tu_hist_invoke(g_hist, "probe", "release", name, token, 0);
            rc = sqllock_lease_release(l);
            tu_hist_complete(g_hist, "probe", seq, tu_hist_outcome(rc),
                             token);
        } else {
            if (r->other++ == 0)
                printf("    probe of %s: %s (%s)\n", name,
                       sqllock_errname(rc), sqllock_errmsg(db));
        }
        sqllock_lease_free(l);
    }
    sqllock_close(db);
    r->ms = tu_now_ms() - t0;
}

/* Every client was granted something after the kill. */
static int all_regranted(int n)
{
    int i;

    for (i = 0; i < n; i++)
        if (LD(&g_sh->c[i].regrant_us) == 0)
            return 0;
    return 1;
}

static int all_granted(int n)
{
    int i;

    for (i = 0; i < n; i++)
        if (LD(&g_sh->c[i].grants) == 0)
            return 0;
    return 1;
}

/*
 * The crash: clients contend (and grant themselves fresh names) for
 * about 3 s; the three nodes are killed at once; the cluster is
 * recovered; the probe asks for every fresh name; the clients go on for
 * about 3 s more. `query` is added to every URL; `enforce`: a violation
 * fails the case (c), or is the hazard shown (d).
 */
static void crash(const char *what, const char *query, int enforce)
{
    int64_t t, t_kill_us, kill_ms, rec_ms, first = 0,
            ttl = 10000 * (int64_t)g_slow;
    probe_result pr;
    tu_hist_result hr;
    char url[1024];
    int i, failed, bad, first_who = -1;

    gn_case_begin(what);
    for (i = 0; i < C_PROCS; i++) {
        gn_client *c = &g_sh->c[i];

        c->first = i / 2 + 1;
        c->use_try = i % 2;
        gn_url(g_c_url[i], sizeof g_c_url[i], c_order[i / 2], query);
        g_c_plan[i].ttl_ms = ttl;
        g_c_plan[i].wait_ms = 1000;
        g_c_plan[i].stream_ttl_ms = STREAM_TTL_MS;
        g_c_plan[i].think_ms = 60;
        g_c_plan[i].hazard = !enforce;
        g_c_plan[i].url = g_c_url[i];
        gn_fork(c_child, (void *)(intptr_t)i);
    }
    t = tu_now_ms();
    TU_WAIT_WHILE(LD(&g_sh->ready) < C_PROCS && !LD(&g_sh->failed),
                  t + 30000 * (int64_t)g_slow, 5);
    if (LD(&g_sh->ready) < C_PROCS) {
        gn_print_clients(C_PROCS);
        fail_msg("only %d of %d clients connected", LD(&g_sh->ready),
                 C_PROCS);
    }
    ST(&g_sh->go, 1);
    t = tu_now_ms();
    gn_wait_until(t + 3000);
    TU_WAIT_WHILE(!all_granted(C_PROCS) && !LD(&g_sh->failed),
                  t + 15000 * (int64_t)g_slow, 10);
    if (LD(&g_sh->failed) || !all_granted(C_PROCS)) {
        gn_print_clients(C_PROCS);
        fail_msg("before the kill: a client failed, or not every one was "
                 "granted a name");
    }

    ST(&g_sh->fault, 1);
    t_kill_us = tu_now_us();
    ST(&g_sh->t_fault_us, t_kill_us);
    if (gn_script(&kill_ms, 0, "kill", "1", "2", "3", NULL) != 0)
        fail_msg("galera_net.sh kill %s 1 2 3 failed", g_dir);
    ST(&g_sh->t_fault_done_us, tu_now_us());
    if (gn_script(&rec_ms, 0, "recover", NULL) != 0) {
        gn_print_status();
        fail_msg("galera_net.sh recover %s failed; the nodes' logs are "
                 "%s/n*/server.log and recover.log", g_dir, g_dir);
    }
    ST(&g_sh->t_back_us, tu_now_us());
    gn_url(url, sizeof url, "123", query);
    probe(url, LD(&g_sh->t_fault_done_us), &pr);
    /* About 3 s more, until every client has been granted something
     * again. */
    t = tu_now_ms();
    gn_wait_until(t + 3000);
    TU_WAIT_WHILE(!all_regranted(C_PROCS) && !LD(&g_sh->failed),
                  t + 30000 * (int64_t)g_slow, 20);
    ST(&g_sh->stop, 1);
    failed = gn_reap(60000 * (int64_t)g_slow + 2 * ttl);

    for (i = 0; i < C_PROCS; i++) {
        gn_client *c = &g_sh->c[i];
        if (c->regrant_us != 0 && (first == 0 || c->regrant_us < first)) {
            first = c->regrant_us;
            first_who = i;
        }
    }
    printf("  %s: kill %lld ms, recover %lld ms; first grant after the "
           "kill: %s%lld ms (c%d)\n", what, (long long)kill_ms,
           (long long)rec_ms, first != 0 ? "" : "none, ",
           (long long)(first != 0 ? (first - LD(&g_sh->t_fault_done_us))
                       / 1000 : 0), first_who);
    printf("    fresh names: %d acknowledged in all; the probe tried the "
           "%d acknowledged before the kill in %lld ms: %d kept, %d "
           "forgotten (granted again), %d other\n", LD(&g_sh->nstream),
           pr.probed, (long long)pr.ms, pr.kept, pr.forgotten, pr.other);
    for (i = 0; i < pr.forgotten && i < 3; i++)
        printf("      forgotten: %s\n", pr.first[i]);
    gn_print_seen(C_PROCS);
    gn_print_clients(C_PROCS);
    bad = gn_check_history(enforce, &hr);
    gn_check_counters(enforce);
    if (!enforce) {
        if (bad < 0)
            fail_msg("the history %s/history-%s.txt could not be read",
                     g_work, what);
        if (hr.broken[TU_H3] > 0)
            printf("    %s: H3 %d = acknowledged grants forgotten by the "
                   "crash with innodb_flush_log_at_trx_commit=0 (%d of the "
                   "fresh names probed; other rules: H1 %d, H2 %d, H4 %d, "
                   "H5 %d, H6 %d)\n", what, hr.broken[TU_H3], pr.forgotten,
                   hr.broken[TU_H1], hr.broken[TU_H2], hr.broken[TU_H4],
                   hr.broken[TU_H5], hr.broken[TU_H6]);
        else
            printf("    %s: the loss was not reproduced in this run (H3 0: "
                   "no acknowledged grant forgotten; %d fresh names "
                   "probed)\n", what, pr.probed);
    }
    if (failed > 0 || LD(&g_sh->failed) > 0)
        fail_msg("%d client(s) failed or hung, %d failure(s) recorded (see "
                 "above); the history is kept in %s", failed,
                 LD(&g_sh->failed), g_work);
    if (enforce) {
        if (pr.other > 0 || pr.probed == 0)
            fail_msg("the probe after the recovery: %d fresh names tried, "
                     "%d answered neither BUSY nor OK", pr.probed, pr.other);
        if (pr.forgotten > 0)
            fail_msg("H3/L10: %d acknowledged grant(s) forgotten by the "
                     "crash (e.g. %s)", pr.forgotten, pr.first[0]);
        for (i = 0; i < C_PROCS; i++)
            if (g_sh->c[i].regrant_us == 0)
                fail_msg("E1: c%d was granted nothing after the recovery",
                         i);
    }
}

void test_galnet_c_H3_L10_whole_cluster_crash(void **state)
{
    (void)state;
    gn_cluster("safe");
    crash("c", NULL, 1);
    g_case_done = 1;
}

/* The refusal: a server whose innodb_flush_log_at_trx_commit is 0 is
 * SQLLOCK_EUNSUPPORTED, saying why and what accepts it, through one host
 * or a list; with innodb_flush=any it connects. */
static void refusal(void)
{
    static const char *const orders[] = { "1", "123" };
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;
    sqllock_db *db = NULL;
    char url[1024];
    size_t k;
    int rc;

    for (k = 0; k < sizeof orders / sizeof orders[0]; k++) {
        gn_url(url, sizeof url, orders[k], NULL);
        db = NULL;
        rc = sqllock_open(url, NULL, &db);
        printf("    %s: %s: %s\n", url, sqllock_errname(rc),
               sqllock_errmsg(db));
        if (rc != SQLLOCK_EUNSUPPORTED ||
            !tu_contains_ci(sqllock_errmsg(db),
                            "innodb_flush_log_at_trx_commit") ||
            !tu_contains_ci(sqllock_errmsg(db), "innodb_flush=any")) {
            char msg[600];
            snprintf(msg, sizeof msg, "%s", sqllock_errmsg(db));
            sqllock_close(db);
            fail_msg("L10: %s, a server with innodb_flush_log_at_trx_commit "
                     "0, opened with %s, want SQLLOCK_EUNSUPPORTED naming "
                     "innodb_flush_log_at_trx_commit and innodb_flush=any "
                     "(message: %s)", url, sqllock_errname(rc), msg);
        }
        sqllock_close(db);
    }
    gn_url(url, sizeof url, "123", "innodb_flush=any");
    db = NULL;
    rc = sqllock_open(url, NULL, &db);
    o.ttl_ms = 5000;
    if (rc == SQLLOCK_OK)
        rc = sqllock_lease_new(db, "galnet-d-refusal", &o, &l);
    if (rc == SQLLOCK_OK)
        rc = sqllock_lease_try_acquire(l);
    if (rc == SQLLOCK_OK)
        rc = sqllock_lease_release(l);
    if (rc != SQLLOCK_OK) {
        char msg[600];
        snprintf(msg, sizeof msg, "%s", sqllock_errmsg(db));
        sqllock_lease_free(l);
        sqllock_close(db);
        fail_msg("with innodb_flush=any (%s): %s: %s", url,
                 sqllock_errname(rc), msg);
    }
    printf("    with innodb_flush=any: connected, granted and released\n");
    sqllock_lease_free(l);
    sqllock_close(db);
}

void test_galnet_d_L10_flush_0_refused_and_hazard(void **state)
{
    (void)state;
    gn_cluster("jepsen");
    refusal();
    crash("d", "innodb_flush=any", 0);
    g_case_done = 1;
}
