/*
 * partition.c -- test_galnet a: node 1 cut off from nodes 2 and 3
 * while clients of all three contend (L1, L5, E1; the history's H1-H6).
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

#define A_PROCS 6

/* Two clients list each node first: c0, c1 node 1; c2, c3 node 2; c4,
 * c5 node 3. Even ones acquire with a wait, odd ones try. */
static const char *const a_order[NODES] = { "123", "231", "312" };
static gn_plan g_a_plan[A_PROCS];
static char g_a_url[A_PROCS][1024];

static int a_child(void *arg)
{
    int who = (int)(intptr_t)arg;

    return gn_client_main(who, &g_a_plan[who]);
}

/* Every client has had a grant (so that all contend at the cut). */
static int all_granted(int n)
{
    int i;

    for (i = 0; i < n; i++)
        if (LD(&g_sh->c[i].grants) == 0)
            return 0;
    return 1;
}

void test_galnet_a_L1_L5_E1_partition_minority_node(void **state)
{
    int64_t t, t_part, t_np = 0, t_heal, heal_ms, synced_ms, first = 0,
            ttl = 10000 * (int64_t)g_slow;
    int i, failed, first_who = -1, np;

    (void)state;
    gn_cluster("safe");
    gn_case_begin("a");
    for (i = 0; i < A_PROCS; i++) {
        gn_client *c = &g_sh->c[i];

        c->first = i / 2 + 1;
        c->use_try = i % 2;
        gn_url(g_a_url[i], sizeof g_a_url[i], a_order[i / 2], NULL);
        g_a_plan[i].ttl_ms = ttl;
        g_a_plan[i].wait_ms = 1000;
        g_a_plan[i].think_ms = 40;
        g_a_plan[i].url = g_a_url[i];
        gn_fork(a_child, (void *)(intptr_t)i);
    }
    t = tu_now_ms();
    TU_WAIT_WHILE(LD(&g_sh->ready) < A_PROCS && !LD(&g_sh->failed),
                  t + 30000 * (int64_t)g_slow, 5);
    if (LD(&g_sh->ready) < A_PROCS) {
        gn_print_clients(A_PROCS);
        fail_msg("only %d of %d clients connected", LD(&g_sh->ready),
                 A_PROCS);
    }
    ST(&g_sh->go, 1);
    /* About 2 s of contention, until every client has had a grant. */
    t = tu_now_ms();
    gn_wait_until(t + 2000);
    TU_WAIT_WHILE(!all_granted(A_PROCS) && !LD(&g_sh->failed),
                  t + 15000 * (int64_t)g_slow, 10);
    if (LD(&g_sh->failed) || !all_granted(A_PROCS)) {
        gn_print_clients(A_PROCS);
        fail_msg("before the partition: a client failed, or not every one "
                 "was granted a name within %lld ms",
                 (long long)(tu_now_ms() - t));
    }

    /* The cut: node 1 alone. */
    ST(&g_sh->fault, 1);
    ST(&g_sh->t_fault_us, tu_now_us());
    if (gn_script(NULL, 0, "partition", "1|23", NULL) != 0)
        fail_msg("galera_net.sh partition %s '1|23' failed", g_dir);
    ST(&g_sh->t_fault_done_us, tu_now_us());
    t_part = tu_now_ms();
    /* Until node 1 says it is out of the primary component. */
    while (tu_now_ms() - t_part < 20000 * (int64_t)g_slow) {
        np = gn_node_primary(1);
        if (np == 0) {
            t_np = tu_now_ms();
            break;
        }
        tu_sleep_ms(100);
    }
    if (t_np == 0)
        printf("    node 1 did not say non-Primary within %lld ms\n",
               (long long)(tu_now_ms() - t_part));
    else
        printf("    node 1 non-Primary %lld ms after the cut\n",
               (long long)(t_np - t_part));
    gn_wait_until(t_part + 8000);
    t_heal = tu_now_ms();
    ST(&g_sh->t_back_us, tu_now_us());
    if (gn_script(&heal_ms, 0, "heal", NULL) != 0)
        fail_msg("galera_net.sh heal %s failed", g_dir);
    {
        char secs[16];
        snprintf(secs, sizeof secs, "%d", 90 * g_slow);
        if (gn_script(&synced_ms, GN_QUIET, "wait", "1", secs, "3", NULL)
            != 0) {
            gn_print_status();
            fail_msg("node 1 did not rejoin (Synced in a cluster of 3) "
                     "within %s s of the heal", secs);
        }
    }
    printf("    node 1 Synced in a cluster of 3 again %lld ms after the "
           "heal\n", (long long)(tu_now_ms() - t_heal));
    gn_wait_until(tu_now_ms() + 4000);
    ST(&g_sh->stop, 1);
    failed = gn_reap(60000 * (int64_t)g_slow + 2 * ttl);

    printf("  a: %lld ms of partition (cut at +0)\n",
           (long long)(t_heal - t_part));
    gn_print_seen(A_PROCS);
    gn_print_clients(A_PROCS);
    for (i = 0; i < 2; i++) {
        gn_client *c = &g_sh->c[i];
        if (c->regrant_us != 0 && c->regrant_node >= 2 &&
            c->regrant_us < LD(&g_sh->t_back_us) &&
            (first == 0 || c->regrant_us < first)) {
            first = c->regrant_us;
            first_who = i;
        }
    }
    if (first_who >= 0)
        printf("    first grant through nodes 2/3 to a client that lists "
               "node 1 first: c%d, %lld ms after the cut\n", first_who,
               (long long)((first - LD(&g_sh->t_fault_done_us)) / 1000));
    gn_check_history(1, NULL);
    gn_check_counters(1);
    if (failed > 0 || LD(&g_sh->failed) > 0)
        fail_msg("%d client(s) failed or hung, %d failure(s) recorded (see "
                 "above); the history is kept in %s", failed,
                 LD(&g_sh->failed), g_work);
    /* E1 for the clients of the cut node: told (ECONNECT), and served by
     * the majority while node 1 was out. A client whose first call to
     * meet the cut was a release hears nothing: the library sent it
     * again on a fresh connection (C3), which went to node 2. */
    {
        char why[1200] = "";
        size_t n = 0;

        for (i = 0; i < 2; i++) {
            gn_client *c = &g_sh->c[i];
            int j, saw1205 = 0;

            for (j = 0; j < c->nseen; j++)
                saw1205 |= c->seen[j].code == 1205;
            if (c->regrant_us == 0 || c->regrant_us >= LD(&g_sh->t_back_us)
                || c->regrant_node < 2)
                n += (size_t)snprintf(why + n, sizeof why - n,
                    "%sc%d (node 1 first) was granted nothing through nodes "
                    "2/3 while node 1 was cut off (%lld ms): its first grant "
                    "after the cut %s %lld ms, through node %d%s",
                    n > 0 ? "; " : "", i, (long long)(t_heal - t_part),
                    c->regrant_us == 0 ? "never came:" : "came at +",
                    (long long)(c->regrant_us == 0 ? 0
                                : (c->regrant_us -
                                   LD(&g_sh->t_fault_done_us)) / 1000),
                    c->regrant_node,
                    saw1205 ? " (node 1 answered it error 1205: with "
                    "wsrep_sync_wait=15 a node outside the primary "
                    "component fails even SHOW with 1205, which is not "
                    "ECONNECT, so the host list stays on node 1)" : "");
            else if (c->first_ec_us == 0 && c->c3_release_us == 0)
                n += (size_t)snprintf(why + n, sizeof why - n,
                    "%sc%d (node 1 first) was never told SQLLOCK_ECONNECT "
                    "after the cut, and no release of it was sent again "
                    "elsewhere", n > 0 ? "; " : "", i);
            else if (c->first_ec_us == 0)
                printf("    c%d heard no ECONNECT: its release that met the "
                       "cut was sent again on a fresh connection (C3), "
                       "answered at %+lld ms\n", i,
                       (long long)((c->c3_release_us -
                                    LD(&g_sh->t_fault_done_us)) / 1000));
            if (n >= sizeof why)
                n = sizeof why - 1;
        }
        if (n > 0) {
            g_keep = 1;
            fail_msg("E1: %s; what they were told is above; the history is "
                     "kept in %s", why, g_work);
        }
    }
    g_case_done = 1;
}
