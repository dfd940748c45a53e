/*
 * test_pooler.c -- sqllock behind the connection poolers production
 * PostgreSQL runs behind (issue 14; DESIGN C1, C2, L9), on real ones:
 * PgBouncer in transaction and in session mode and pgpool-II in raw and
 * streaming-replication mode, which scripts/poolers.sh starts in front of
 * the test PostgreSQL (scripts/test.sh exports SQLLOCK_TEST_POOLERS_DIR
 * and SQLLOCK_TEST_POOLERS_SCRIPT; the URLs are in DIR/env).
 *
 * The contract and exclusion suites themselves (test_conformance,
 * test_mutex, test_rowlock, test_optimistic, test_wakeup) also run
 * through both PgBouncer modes (the pooled_* ctest entries); this file
 * holds what only poolers have:
 *
 *  a  `sqllock run` from 8 processes at once through each PgBouncer mode:
 *     a counter kept in a file by the command ends exact, no two
 *     commands overlap, tokens grow, every run exits 0 -- and again
 *     after PgBouncer restarts (the unnamed statements leave nothing
 *     behind on the server connections);
 *  b  wake-ups: through PgBouncer's transaction mode the waiter never
 *     sends a LISTEN that would hear nothing, and still gets the lock by
 *     polling; with listen_host it LISTENs past the pooler and a release
 *     wakes it at once; in session mode LISTEN works as on a direct
 *     connection;
 *  c  a transaction pooler the URL does not declare: every call either
 *     works or fails with SQLLOCK_EPROXY naming pooler=transaction, and
 *     never runs another client's statement;
 *  d  the connection budget: through a session pool `run` holds one
 *     server connection (it renews on it): it runs through a pool of
 *     one, 8 x 3 runs through a pool of two all run with --wait, and a
 *     run waits for a slot within --wait; the library's own watchdog
 *     (a connection of its own) fails before the acquire, saying so;
 *  e  pgpool-II in raw mode opens a transaction around a new backend's
 *     first statement and aborts it when the client leaves: no call may
 *     report success for what was not committed (C2) -- every grant
 *     that succeeded has its row, every compare-and-set that succeeded
 *     counted; the others fail with SQLLOCK_EPROXY;
 *  f  pgpool-II in streaming-replication mode works with pooler=pgpool
 *     (no LISTEN through it, where a notification stalls the next
 *     statement): exclusion, exact counter, and a release wakes a waiter
 *     that LISTENs past it (listen_host);
 *  g  a transaction the application opened on the native handle: a
 *     lease call refuses to run inside it (C2), sending nothing.
 *
 * The cases are in tests/pooler/, by pooler (bouncer.c: a, c, d, g;
 * wakeup.c: b; pgpool.c: e, f), with what they share in
 * pooler/common.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdatomic.h>
#include <pthread.h>
#include <sys/stat.h>
#include <cmocka.h>

#include <libpq-fe.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "pooler/pooler.h"

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pooler_a_C1_run_transaction_mode),
        cmocka_unit_test(test_pooler_a_C1_run_session_mode),
        cmocka_unit_test(test_pooler_a_C3_run_through_pgbouncer_restart),
        cmocka_unit_test(test_pooler_b_L9_wakeups),
        cmocka_unit_test(test_pooler_c_C1_undeclared_transaction_pooler),
        cmocka_unit_test(test_pooler_d_run_holds_one_server_connection),
        cmocka_unit_test(test_pooler_e_C2_pgpool_raw_no_false_success),
        cmocka_unit_test(test_pooler_f_L9_pgpool_streaming_mode),
        cmocka_unit_test(test_pooler_g_C2_native_transaction_refused),
        cmocka_unit_test(
            test_pooler_h_D5_repeatable_read_default_behind_transaction_pooler),
    };
    const char *dir = getenv("SQLLOCK_TEST_POOLERS_DIR");
    const char *scr = getenv("SQLLOCK_TEST_POOLERS_SCRIPT");

    if (dir == NULL || *dir == '\0' || scr == NULL || *scr == '\0' ||
        strchr(dir, '\'') || strchr(scr, '\''))
        return tu_unit_cannot_run("pooler", "SQLLOCK_TEST_POOLERS_DIR and "
                                  "SQLLOCK_TEST_POOLERS_SCRIPT name no poolers "
                                  "(scripts/poolers.sh start DIR SERVERS_DIR "
                                  "starts them)");
    snprintf(g_dir, sizeof g_dir, "%s", dir);
    snprintf(g_script, sizeof g_script, "%s", scr);
    if (load_urls() != 0)
        return 1;
    if (sqllock_driver_find("postgres") == NULL) {
        printf("pooler: FAILED: this build has no postgres driver\n");
        return 1;
    }
    g_slow = tu_slowdown();
    tu_case_filters();            /* SQLLOCK_TEST_SKIP_CASES (valgrind) */
    if (tu_init_schema(g_direct) != 0)
        return 1;
    return tu_unit_result("pooler", "postgres",
                          cmocka_run_group_tests_name("pooler", tests, NULL,
                                                      NULL));
}
