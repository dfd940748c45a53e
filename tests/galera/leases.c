/*
 * leases.c -- test_galera a and b: exclusion across
 * nodes (L1, L5) and a node killed while clients hold leases through it
 * (E1, L1).
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
#include "galera.h"

/* ------------------------------------------------------------------ */
/* a. Exclusion across nodes                                           */
/* ------------------------------------------------------------------ */

#define A_PROCS 6

int64_t g_a_ms;   /* how long the clients contend */

static void a_child(int who)
{
    client *c = &g_sh->c[who];
    sqllock_db *db = NULL;
    int rc, use_try = who >= 3;
    int64_t t0;

    t0 = (int)tu_now_ms();
    rc = sqllock_open(g_url[who % NODES], NULL, &db);
    gl_count(c, API_OPEN, rc, t0);
    if (rc != SQLLOCK_OK) {
        gl_bad(c, "open: %s", sqllock_errmsg(db));
        sqllock_close(db);
        return;
    }
    c->node = gl_node_of(db);
    ADD(&g_sh->ready, 1);
    while (!LD(&g_sh->go) && !LD(&g_sh->stop))
        tu_sleep_ms(2);
    gl_contend(c, who, db, use_try, 10000, 500 + rand() % 1500, 0);
    sqllock_close(db);
}

void test_galera_a_L1_L5_exclusion_across_nodes(void **state)
{
    pid_t pids[A_PROCS];
    int64_t cert0, cert1, bf0, bf1, t, busy_cert = 0, holds = 0, rel_retry = 0;
    int i, n, failed, late = 0, per_node[NODES] = { 0 };

    (void)state;
    g_sh = tu_shared_map(sizeof *g_sh);
    gl_hist_open(__func__);
    for (i = 0; i < NNAMES; i++)
        snprintf(g_names[i], sizeof g_names[i], "galera-%ld-a-%d",
                 (long)getpid(), i);
    for (i = 0; i < A_PROCS; i++)
        pids[i] = gl_fork_child(a_child, i, 120 * (unsigned)g_slow);
    /* The parent's handles come after the forks. */
    cert0 = gl_wsrep_sum("WSREP_LOCAL_CERT_FAILURES");
    bf0 = gl_wsrep_sum("WSREP_LOCAL_BF_ABORTS");
    t = tu_now_ms();
    while (LD(&g_sh->ready) < A_PROCS && !LD(&g_sh->failed) &&
           tu_now_ms() - t < 30000 * g_slow)
        tu_sleep_ms(5);
    ST(&g_sh->go, 1);
    t = tu_now_ms();
    while (tu_now_ms() - t < g_a_ms && !LD(&g_sh->failed))
        tu_sleep_ms(20);
    ST(&g_sh->stop, 1);
    failed = tu_reap_children(pids, A_PROCS, 60000 * (int64_t)g_slow, NULL);
    cert1 = gl_wsrep_sum("WSREP_LOCAL_CERT_FAILURES");
    bf1 = gl_wsrep_sum("WSREP_LOCAL_BF_ABORTS");
    n = gl_check_holds(A_PROCS, "a");
    for (i = 0; i < A_PROCS; i++) {
        client *c = &g_sh->c[i];
        busy_cert += c->busy_cert;
        holds += c->holds;
        late += (int)c->late_holds;
        rel_retry += c->rel_retries;
        if (c->node >= 0 && c->node < NODES && c->holds > 0)
            per_node[c->node]++;
        if (c->calls[API_ACQ][SQLLOCK_EDEADLOCK] > 0 ||
            c->calls[API_TRY][SQLLOCK_EDEADLOCK] > 0)
            fail_msg("client %d: an acquire returned EDEADLOCK", i);
    }
    printf("  a: %d holds (%lld by the clients) in %lld ms by %d processes "
           "on 3 nodes (%d/%d/%d with holds); certification failures "
           "(wsrep_local_cert_failures) %lld, brute-force aborts %lld; "
           "try_acquire BUSY caused by a certification failure %lld; "
           "release retried after EDEADLOCK %lld; holds past the local "
           "deadline %d; double grants 0\n", n, (long long)holds,
           (long long)g_a_ms, A_PROCS, per_node[0], per_node[1], per_node[2],
           (long long)(cert1 - cert0), (long long)(bf1 - bf0),
           (long long)busy_cert, (long long)rel_retry, late);
    if (failed > 0 || LD(&g_sh->failed) > 0)
        fail_msg("%d child(ren) failed or hung, %d failure(s) recorded",
                 failed, LD(&g_sh->failed));
    for (i = 0; i < NODES; i++)
        if (per_node[i] == 0)
            fail_msg("no client on node %d got a lease", i + 1);
    assert_int_equal(late, 0);
    munmap(g_sh, sizeof *g_sh);
    g_sh = NULL;
}

/* ------------------------------------------------------------------ */
/* b. A node killed while clients hold leases on it                    */
/* ------------------------------------------------------------------ */

#define B_PROCS 6
#define VICTIM 2            /* node 3 */

static void b_child(int who)
{
    client *c = &g_sh->c[who];
    sqllock_db *db = NULL;
    sqllock_lease *sticky = NULL;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    char name[128];
    int64_t t0 = tu_now_ms(), last_renew, call_us;
    int rc, i;

    rc = sqllock_open(g_child_url[who], NULL, &db);
    gl_count(c, API_OPEN, rc, t0);
    if (rc != SQLLOCK_OK) {
        gl_bad(c, "open: %s", sqllock_errmsg(db));
        sqllock_close(db);
        return;
    }
    c->node = gl_node_of(db);
    /* A lease held across the kill; its row must be on the survivors. */
    snprintf(name, sizeof name, "%s-sticky-%d", g_names[0], who);
    o.ttl_ms = 60000;
    if (sqllock_lease_new(db, name, &o, &sticky) != SQLLOCK_OK ||
        sqllock_lease_try_acquire(sticky) != SQLLOCK_OK) {
        gl_bad(c, "sticky lease: %s", sqllock_errmsg(db));
        sqllock_lease_free(sticky);
        sqllock_close(db);
        return;
    }
    snprintf(c->sticky_owner, sizeof c->sticky_owner, "%s",
             sqllock_lease_owner(sticky));
    c->sticky_token = sqllock_lease_token(sticky);
    ADD(&g_sh->ready, 1);
    while (!LD(&g_sh->go) && !LD(&g_sh->stop))
        tu_sleep_ms(2);
    /* Contend, and renew the sticky lease every few holds. */
    last_renew = tu_now_ms();
    for (i = 0; !LD(&g_sh->stop) && c->bad[0] == '\0'; i++) {
        /* One round: the renewal when it is due, then one hold of a
         * contended name, through a lease handle of its own. */
        sqllock_lease *l = NULL;
        sqllock_lease_options lo = SQLLOCK_LEASE_OPTIONS_INIT;
        int k = (who + i) % NNAMES;
        int64_t killed_at = LD(&g_sh->t_killed_ms);
        int probe = killed_at != 0 && c->resumed_ms == 0;

        /* The renewal of the sticky lease, every 300 ms; the first one
         * that begins once the victim is dead is the probe: when it
         * succeeds, the client works again (on a survivor) and still
         * holds the lease it was granted before the kill. */
        if (probe || tu_now_ms() - last_renew > 300) {
            int tries;
            for (tries = 0; tries < 200; tries++) {
                t0 = tu_now_ms();
                rc = sqllock_lease_renew(sticky);
                gl_count(c, API_RENEW, rc, t0);
                gl_after_kill(c, db, rc, t0);
                if (rc == SQLLOCK_OK)
                    break;
                if (rc != SQLLOCK_ECONNECT || !LD(&g_sh->killed)) {
                    gl_bad(c, "renew of the sticky lease: %s (%s)",
                        sqllock_errname(rc), sqllock_errmsg(db));
                    break;
                }
                tu_sleep_ms(20);
            }
            if (rc != SQLLOCK_OK && c->bad[0] == '\0')
                gl_bad(c, "the sticky lease could not be renewed after the "
                    "kill: %s (%s)", sqllock_errname(rc), sqllock_errmsg(db));
            if (probe && rc == SQLLOCK_OK) {
                c->resumed_ms = tu_now_ms();
                c->node_after = gl_node_of(db);
            }
            last_renew = tu_now_ms();
            if (c->bad[0] != '\0')
                break;
        }
        lo.ttl_ms = 6000;
        lo.backoff_min_ms = 2;
        lo.backoff_max_ms = 40;
        if (sqllock_lease_new(db, g_names[k], &lo, &l) != SQLLOCK_OK) {
            gl_bad(c, "lease_new: %s", sqllock_errmsg(db));
            break;
        }
        t0 = tu_now_ms();
        call_us = tu_now_us();
        rc = sqllock_lease_acquire(l, 20000);
        gl_count(c, API_ACQ, rc, t0);
        gl_after_kill(c, db, rc, t0);
        if (rc == SQLLOCK_OK) {
            gl_critical(c, who, k, l, 20000 + rand() % 30000, call_us);
            gl_release_hold(c, db, l, 0);
        } else if (!(rc == SQLLOCK_ECONNECT && LD(&g_sh->killed)) &&
                   rc != SQLLOCK_TIMEOUT) {
            gl_bad(c, "acquire of %s: %s (%s)", g_names[k],
                sqllock_errname(rc), sqllock_errmsg(db));
        }
        sqllock_lease_free(l);
    }
    if (c->bad[0] == '\0')
        gl_release_hold(c, db, sticky, 0);
    sqllock_lease_free(sticky);
    sqllock_close(db);
}

/* The sticky leases' rows, on a survivor. */
static void check_sticky(sqllock_db *db, int node)
{
    int j;

    for (j = 0; j < B_PROCS; j++) {
        char name[128];
        tu_row r;
        snprintf(name, sizeof name, "%s-sticky-%d", g_names[0], j);
        TU_ASSERT_RC(tu_find(db, name, &r), SQLLOCK_OK, db);
        if (r.found != 1 || strcmp(r.owner, g_sh->c[j].sticky_owner) != 0 ||
            r.token != g_sh->c[j].sticky_token)
            fail_msg("E1/L1: after the kill, node %d has %d row(s) of %s "
                     "(owner %s token %lld), want the one granted before it "
                     "through node %d (owner %s token %lld)", node + 1,
                     r.found, name, r.owner, (long long)r.token,
                     g_sh->c[j].node + 1, g_sh->c[j].sticky_owner,
                     (long long)g_sh->c[j].sticky_token);
    }
}

void test_galera_b_E1_L1_node_killed_while_holding(void **state)
{
    pid_t pids[B_PROCS];
    sqllock_db *probe = NULL, *s1, *s2, *v;
    sqllock_lease *marker = NULL;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    char marker_name[128];
    int64_t t, kill_ms, rejoin_ms, first_check_ms, worst = 0, surv_worst = 0,
        tok1, tok3;
    int i, rc, failed, n, on_victim = 0, heard = 0, worst_c = -1;
    tu_row r;

    (void)state;
    /* Does the driver take a URL with several hosts yet? */
    rc = sqllock_open(g_urls, NULL, &probe);
    if (rc != SQLLOCK_OK) {
        printf("  b: PENDING: the mysql driver does not take the multi-host "
               "URL yet (%s: %s); this case needs it\n",
               sqllock_errname(rc), sqllock_errmsg(probe));
        sqllock_close(probe);
        tu_cannot_run("b: the mysql driver does not open the multi-host "
                      "URL %s", g_urls);
    }
    sqllock_close(probe);

    g_sh = tu_shared_map(sizeof *g_sh);
    gl_hist_open(__func__);
    for (i = 0; i < NNAMES; i++)
        snprintf(g_names[i], sizeof g_names[i], "galera-%ld-b-%d",
                 (long)getpid(), i);
    /* 4 clients name the victim first (two orders of the survivors),
     * 2 name a survivor first. */
    for (i = 0; i < B_PROCS; i++) {
        if (i < 4)
            gl_multi_url(g_child_url[i], sizeof g_child_url[i], VICTIM,
                      i % 2 ? 1 : 0, i % 2 ? 0 : 1);
        else
            gl_multi_url(g_child_url[i], sizeof g_child_url[i], i - 4,
                      VICTIM, 5 - i);
        g_sh->c[i].victim_first = i < 4;
    }
    for (i = 0; i < B_PROCS; i++)
        pids[i] = gl_fork_child(b_child, i, 150 * (unsigned)g_slow);
    t = tu_now_ms();
    while (LD(&g_sh->ready) < B_PROCS && !LD(&g_sh->failed) &&
           tu_now_ms() - t < 30000 * g_slow)
        tu_sleep_ms(5);
    if (LD(&g_sh->ready) < B_PROCS) {
        ST(&g_sh->stop, 1);
        tu_reap_children(pids, B_PROCS, 30000, NULL);
        fail_msg("only %d of %d clients got ready", LD(&g_sh->ready),
                 B_PROCS);
    }
    for (i = 0; i < B_PROCS; i++)
        if (g_sh->c[i].victim_first && g_sh->c[i].node != VICTIM)
            fail_msg("client %d names node %d first but reached node %d",
                     i, VICTIM + 1, g_sh->c[i].node + 1);
    ST(&g_sh->go, 1);
    tu_sleep_ms(1500 * g_slow);

    /* The kill. */
    g_sh->t_kill_ms = tu_now_ms();
    ST(&g_sh->killed, 1);
    g_down = VICTIM;
    kill_ms = gl_script("kill-node", VICTIM);
    g_sh->t_killed_ms = tu_now_ms();

    /* The leases granted before it are on both survivors. */
    t = tu_now_ms();
    s1 = gl_open_checker(0);
    s2 = gl_open_checker(1);
    check_sticky(s1, 0);
    check_sticky(s2, 1);
    first_check_ms = tu_now_ms() - t;
    /* A lease granted while the victim is down, for the rejoin check. */
    snprintf(marker_name, sizeof marker_name, "%s-marker", g_names[0]);
    o.ttl_ms = 120000;
    TU_ASSERT_RC(sqllock_lease_new(s1, marker_name, &o, &marker), SQLLOCK_OK,
              s1);
    TU_ASSERT_RC(sqllock_lease_try_acquire(marker), SQLLOCK_OK, s1);

    /* Let the clients resume, and a grant whose answer the kill cut
     * expire (ttl 6 s). */
    while (tu_now_ms() - g_sh->t_killed_ms < (g_slow > 1 ? 12000 : 8000) &&
           !LD(&g_sh->failed))
        tu_sleep_ms(20);
    ST(&g_sh->stop, 1);
    failed = tu_reap_children(pids, B_PROCS, 60000 * (int64_t)g_slow, NULL);
    n = gl_check_holds(B_PROCS, "b");
    for (i = 0; i < B_PROCS; i++) {
        client *c = &g_sh->c[i];
        printf("    client %d: node %d first%s, %lld holds, longest call "
               "%lld ms (%s)", i, c->node + 1,
               c->victim_first ? " (victim first)" : "",
               (long long)c->holds, (long long)c->longest_ms,
               c->longest_what);
        if (c->econnect_ms != 0)
            printf("; ECONNECT %lld ms after the kill",
                   (long long)(c->econnect_ms - g_sh->t_kill_ms));
        if (c->lost_after_cut != 0)
            printf("; %lld release(s) retried after ECONNECT found the row "
                   "gone (the first one had committed)",
                   (long long)c->lost_after_cut);
        if (c->resumed_ms != 0)
            printf("; its first renewal begun after the kill succeeded, on "
                   "node %d, %lld ms after the kill", c->node_after + 1,
                   (long long)(c->resumed_ms - g_sh->t_kill_ms));
        printf("\n");
    }
    if (failed > 0 || LD(&g_sh->failed) > 0)
        fail_msg("%d child(ren) failed or hung, %d failure(s) recorded",
                 failed, LD(&g_sh->failed));
    for (i = 0; i < B_PROCS; i++) {
        client *c = &g_sh->c[i];
        if (c->node != VICTIM)
            continue;
        on_victim++;
        if (c->econnect_ms != 0)
            heard++;
        if (c->resumed_ms == 0)
            fail_msg("E1: client %d, on the killed node, did not renew its "
                     "lease after the kill", i);
        if (c->node_after == VICTIM || c->node_after < 0)
            fail_msg("E1: client %d resumed on node %d", i,
                     c->node_after + 1);
        if (c->resumed_ms - g_sh->t_kill_ms > worst) {
            worst = c->resumed_ms - g_sh->t_kill_ms;
            worst_c = i;
        }
    }
    assert_true(on_victim >= 4);
    for (i = 0; i < B_PROCS; i++) {
        client *c = &g_sh->c[i];
        if (c->resumed_ms == 0)
            fail_msg("client %d never renewed its lease after the kill", i);
        if (c->node != VICTIM && c->resumed_ms - g_sh->t_kill_ms > surv_worst)
            surv_worst = c->resumed_ms - g_sh->t_kill_ms;
    }
    for (i = 0; i < B_PROCS; i++)
        if (g_sh->c[i].node != VICTIM && g_sh->c[i].econnect_ms != 0)
            fail_msg("E1: client %d on surviving node %d heard ECONNECT: %s",
                     i, g_sh->c[i].node + 1, g_sh->c[i].first_econnect);

    /* The rejoin: the node comes back and sees what was granted while it
     * was down. */
    rejoin_ms = gl_script("start-node", VICTIM);
    g_down = -1;
    v = gl_open_checker(VICTIM);
    TU_ASSERT_RC(tu_find(v, marker_name, &r), SQLLOCK_OK, v);
    if (r.found != 1 || strcmp(r.owner, sqllock_lease_owner(marker)) != 0 ||
        r.token != sqllock_lease_token(marker))
        fail_msg("the rejoined node has %d row(s) of %s (owner %s), want the "
                 "lease granted while it was down", r.found, marker_name,
                 r.owner);
    tok1 = gl_sql_int(s1, "SELECT MAX(token) FROM sqllock_token");
    tok3 = gl_sql_int(v, "SELECT MAX(token) FROM sqllock_token");
    assert_int_equal(tok1, tok3);
    {
        sqllock_lease *again = NULL;
        TU_ASSERT_RC(sqllock_lease_new(v, marker_name, &o, &again), SQLLOCK_OK,
                  v);
        TU_ASSERT_RC(sqllock_lease_try_acquire(again), SQLLOCK_BUSY, v);
        sqllock_lease_free(again);
    }
    TU_ASSERT_RC(sqllock_lease_release(marker), SQLLOCK_OK, s1);
    sqllock_lease_free(marker);
    printf("  b: %d holds, double grants 0; kill-node took %lld ms; the "
           "survivors answered the parent's first check %lld ms after it; "
           "%d clients were on the killed node (%d heard ECONNECT, the "
           "others' next call simply connected again): each renewed its "
           "lease on a survivor, the slowest (client %d) %lld ms after the "
           "kill; the clients of the survivors within %lld ms; leases granted "
           "before the kill were on both survivors; start-node (rejoin) "
           "took %lld ms and the node saw the lease granted while it was "
           "down (max token %lld on both)\n", n, (long long)kill_ms,
           (long long)first_check_ms, on_victim, heard, worst_c,
           (long long)worst, (long long)surv_worst, (long long)rejoin_ms,
           (long long)tok1);
    sqllock_close(v);
    sqllock_close(s1);
    sqllock_close(s2);
    munmap(g_sh, sizeof *g_sh);
    g_sh = NULL;
}

/* Whatever happened in b, the cluster is whole again afterwards. */
int b_teardown(void **state)
{
    (void)state;
    if (g_sh != NULL) {
        ST(&g_sh->stop, 1);
        munmap(g_sh, sizeof *g_sh);
        g_sh = NULL;
    }
    if (g_down >= 0) {
        char buf[3000];
        snprintf(buf, sizeof buf, "bash '%s' start-node '%s' %d >&2",
                 g_script, g_dir, g_down + 1);
        if (system(buf) == 0)
            g_down = -1;
    }
    return 0;
}

