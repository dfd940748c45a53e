/*
 * test_patroni.c -- sqllock on a Patroni cluster through its faults
 * (issue 30 item 1): clients of every kind contend through HAProxy and
 * through a libpq-style host list while the cluster is switched over,
 * loses its leader's postmaster, has its leader cut off from etcd, and
 * has its leader's Patroni killed.
 *
 * The cluster is scripts/patroni.sh's (its path in
 * $SQLLOCK_TEST_PATRONI_SCRIPT, else the source tree's, compiled in):
 * etcd, three PostgreSQL 15 nodes under Patroni with synchronous_mode,
 * HAProxy routing to the leader; started once, in a fresh directory, by
 * the group setup, and stopped by its teardown. It needs root (the
 * script installs its packages and runs the servers as `postgres`):
 * without, or when the packages cannot be had, the test says SKIPPED and
 * exits 77 (1 under CI).
 *
 * The clients are forked processes, one or more per kind and route:
 * plain leases (acquire with a wait, a read-pause-write of a counter in
 * shared memory, renew, again, release), semaphore permits (N = 2),
 * shared and exclusive holds, leader candidates (a term is a section;
 * each action a write of the term), row locks (the counter row locked
 * FOR UPDATE and incremented by read and write inside the transaction),
 * versioned-record updates (sqllock_record_update()), guarded writes
 * (sqllock_table_guarded_update()), and a shell loop of `sqllock run`
 * per route whose command records its section and a write with
 * sqllock_test_history. Everything lease-like goes into one history
 * (tests/harness/tu_history.h), judged at the end: no acknowledged grant
 * lost (H3), no two owners (H1), tokens growing (H2), writes only for a
 * live hold (H5), final values that count every acknowledged write
 * (H6). Every call is bounded (E1), and every client resumes after each
 * fault.
 *
 * Figures, per fault and route: the ms from the fault to the first grant
 * on the new leader (a server on another port, or one whose postmaster
 * started after the fault), and the statuses seen.
 *
 * kill-patroni leaves two primaries until start-node: the old one
 * (HAProxy drops it; a host list that names it first still reaches it),
 * whose commits wait forever for a synchronous standby that now follows
 * the new leader. A lease granted there is never acknowledged (the
 * client's round-trip bound, statement_timeout_ms, ends it with
 * SQLLOCK_ECONNECT); a row lock needs no commit to be granted, so one
 * holder on each primary at once is possible: the probe measures it and
 * the test reports it as a documented hazard, not a failure. Before
 * start-node the test fences the old primary (an immediate shutdown, as
 * a watchdog would): Patroni 3.0.2 started on a node whose postgres
 * still runs as a primary reloads its configuration without
 * synchronous_standby_names about half a second before it demotes it,
 * and every commit waiting there is acknowledged in between -- leases,
 * permits, terms granted on a primary about to be rewound, while the new
 * one grants the same names. SQLLOCK_TEST_PATRONI_NO_FENCE=1 leaves the
 * old primary running, to show it (the history then fails).
 *
 * The case is in tests/patroni/ (common.c: the cluster and the
 * accounting; clients.c and others.c: the clients; faults.c: the
 * faults, the figures and the checks).
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
#include "patroni/patroni.h"

#ifndef SQLLOCK_PATRONI_SCRIPT
#error "SQLLOCK_PATRONI_SCRIPT must name scripts/patroni.sh"
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_patroni_faults_L1_L5_L10_G1_M1_M2_M4_X2),
    };
    const char *script = getenv("SQLLOCK_TEST_PATRONI_SCRIPT");
    int64_t t0 = tu_now_ms();
    int failed;

    if (script == NULL || *script == '\0')
        script = SQLLOCK_PATRONI_SCRIPT;
    if (strchr(script, '\'') || strlen(script) >= sizeof g_script)
        return tu_unit_cannot_run("patroni", "the script path '%s' is not "
                                  "usable", script);
    if (sqllock_driver_find("postgres") == NULL)
        return tu_unit_cannot_run("patroni", "this build has no postgres "
                                  "driver");
    if (geteuid() != 0)
        return tu_unit_cannot_run("patroni", "scripts/patroni.sh needs root "
                                  "(it installs patroni, etcd, haproxy and "
                                  "PostgreSQL 15, and runs them as the "
                                  "postgres user)");
    snprintf(g_script, sizeof g_script, "%s", script);
    g_slow = tu_slowdown();
    tu_case_filters();
    failed = cmocka_run_group_tests_name("patroni [postgres, 3 nodes, "
                                         "synchronous_mode]", tests,
                                         pt_group_setup, pt_group_teardown);
    printf("patroni: %lld ms in all\n", (long long)(tu_now_ms() - t0));
    return tu_unit_result("patroni", "postgres", failed);
}
