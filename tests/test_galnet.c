/*
 * test_galnet.c -- sqllock on a 3-node MariaDB Galera cluster whose
 * nodes live in network namespaces, through partitions, a paused node
 * and a crash of every node (issue 30 item 2).
 *
 * The test starts its own clusters with scripts/galera_net.sh (its path
 * in $SQLLOCK_TEST_GALNET_SCRIPT, else the source tree's), in a work
 * directory ($SQLLOCK_TEST_GALNET_WORK, else a fresh one under $TMPDIR)
 * and always stops them, also after a failure (the group teardown).
 * Every client records every call in a history (tests/harness/
 * tu_history.h), which the checker judges at the end of each case; a
 * failure names what broke and keeps the work directory (histories,
 * the nodes' logs). It needs root and working `ip netns`: elsewhere it
 * says SKIPPED and exits 77, and under CI it fails instead.
 *
 *   a. L1, L5, E1 (H1-H6): --safe settings; six clients (two list node 1
 *      first in their host list, two node 2, two node 3) contend for
 *      three names with acquire (a wait) or try, a read-pause-write of a
 *      counter under each hold; node 1 is cut off from nodes 2 and 3
 *      for 8 s ('1|23'), then healed. The history is clean, the counters
 *      exact; the clients of node 1 are told SQLLOCK_ECONNECT (or their
 *      release is sent again elsewhere, C3) and are granted names through
 *      nodes 2/3 while node 1 is out. Printed: how soon, and every kind
 *      of answer the clients got (ECONNECT from 1047 and from 1180).
 *   b. H3, H4, L6: a holder on node 1 alone renews every 300 ms; node 1
 *      is paused (SIGSTOP) past its eviction while clients of nodes 2/3
 *      try for the name, until one gets it; node 1 resumes. Nobody got
 *      the name within the holder's acknowledged ttl, and the holder's
 *      renewal after the resume says LOST. Printed: what the holder was
 *      told.
 *   c. H3, L10: --safe; clients contend and grant themselves fresh names
 *      (one each round, kept); all three nodes are SIGKILLed at once and
 *      the cluster recovered; a probe tries for every fresh name
 *      acknowledged before the kill: the cluster must remember each
 *      (BUSY), and the history is clean.
 *   d. L10: --jepsen (innodb_flush_log_at_trx_commit=0): a plain URL is
 *      refused (SQLLOCK_EUNSUPPORTED naming the setting and
 *      innodb_flush=any), innodb_flush=any connects; then c's crash with
 *      it, whose history's H3 count is the grants the crash forgot. A
 *      demonstration: it passes when the loss does not show in a run.
 *
 * The cases are in tests/galnet/ (partition.c: a; pause.c: b; crash.c:
 * c, d), with what they share in galnet/common.c.
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
#include "galnet/galnet.h"

#ifndef SQLLOCK_GALNET_SCRIPT_PATH
#define SQLLOCK_GALNET_SCRIPT_PATH "scripts/galera_net.sh"
#endif

/* Whether this machine can run the clusters: why not in why[]. */
static int can_run(char *why, size_t size)
{
    char cmd[200];
    int rc;

    if (geteuid() != 0) {
        snprintf(why, size, "needs root (network namespaces)");
        return 0;
    }
    if (sqllock_driver_find("mysql") == NULL) {
        snprintf(why, size, "this build has no mysql driver");
        return 0;
    }
    if (access(g_script, R_OK) != 0) {
        snprintf(why, size, "no script %.200s (SQLLOCK_TEST_GALNET_SCRIPT)",
                 g_script);
        return 0;
    }
    if (system("command -v mariadbd >/dev/null 2>&1 && "
               "command -v rsync >/dev/null 2>&1 && "
               "command -v tc >/dev/null 2>&1 && "
               "test -f /usr/lib/galera/libgalera_smm.so") != 0) {
        snprintf(why, size, "needs mariadbd, galera-4 "
                 "(/usr/lib/galera/libgalera_smm.so), rsync and tc");
        return 0;
    }
    /* `ip netns` usable: a namespace can be made and removed. */
    snprintf(cmd, sizeof cmd, "ip netns add sqlgal-probe-%ld 2>/dev/null && "
             "ip netns del sqlgal-probe-%ld", (long)getpid(),
             (long)getpid());
    rc = system(cmd);
    if (rc != 0) {
        snprintf(why, size, "`ip netns add` does not work here (status %d)",
                 rc);
        return 0;
    }
    return 1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(
            test_galnet_a_L1_L5_E1_partition_minority_node,
            gn_case_teardown),
        cmocka_unit_test_teardown(
            test_galnet_b_H3_H4_L6_paused_holder_node, gn_case_teardown),
        cmocka_unit_test_teardown(
            test_galnet_c_H3_L10_whole_cluster_crash, gn_case_teardown),
        cmocka_unit_test_teardown(
            test_galnet_d_L10_flush_0_refused_and_hazard, gn_case_teardown),
    };
    const char *scr = getenv("SQLLOCK_TEST_GALNET_SCRIPT");
    const char *work = getenv("SQLLOCK_TEST_GALNET_WORK");
    char why[300];
    int64_t t0 = tu_now_ms();
    int failed;

    snprintf(g_script, sizeof g_script, "%s", scr != NULL && *scr != '\0'
             ? scr : SQLLOCK_GALNET_SCRIPT_PATH);
    if (!can_run(why, sizeof why))
        return tu_unit_cannot_run("galnet", "%s", why);
    if (work != NULL && *work != '\0') {
        if (mkdir(work, 0755) != 0 && errno != EEXIST) {
            printf("galnet: FAILED: cannot make %s: %s\n", work,
                   strerror(errno));
            return 1;
        }
        snprintf(g_work, sizeof g_work, "%s", work);
    } else {
        char *d = tu_mkdtemp();

        if (d == NULL) {
            printf("galnet: FAILED: no temporary directory: %s\n",
                   strerror(errno));
            return 1;
        }
        snprintf(g_work, sizeof g_work, "%s", d);
        free(d);
    }
    /* The nodes run as the mysql user: their directories are below. */
    if (chmod(g_work, 0755) != 0 || strchr(g_work, '\'') != NULL) {
        printf("galnet: FAILED: the work directory %s: %s\n", g_work,
               strchr(g_work, '\'') != NULL ? "a quote in its name"
                                            : strerror(errno));
        return 1;
    }
    g_slow = tu_slowdown();
    printf("galnet: script %s, work directory %s, slowdown %d\n", g_script,
           g_work, g_slow);
    tu_case_filters();            /* SQLLOCK_TEST_CASES picks cases */
    failed = cmocka_run_group_tests_name("galnet [mysql, Galera in network "
                                         "namespaces]", tests, NULL,
                                         gn_group_teardown);
    printf("galnet: %lld ms in all\n", (long long)(tu_now_ms() - t0));
    return tu_unit_result("galnet", "mysql", failed);
}
