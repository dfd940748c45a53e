/*
 * test_txnfail.c -- a row-lock transaction after one of its statements
 * failed in a way that ended the database's transaction (DESIGN R7): a
 * deadlock the database broke, a lost connection, a row-lock call that
 * failed. That call returns the failure's status, and the transaction
 * is failed ("poisoned"): every later call in it -- record and table
 * calls on the handle, lock calls, sqllock_txn_native(), the commit, a
 * new begin -- is refused with SQLLOCK_EMISUSE, with a message that
 * names the failure's status and says the transaction was rolled back
 * (sqllock_db_exec(), the application's own statement, as well);
 * nothing more reaches the database, so nothing commits on its own
 * outside the transaction; only a rollback (or sqllock_txn_free()) ends
 * it, and the handle works again after. sqllock_record_update() does
 * not retry a deadlock inside a transaction. A conflict (a stale
 * compare-and-set) does not fail the transaction.
 *
 * The failures are real: a deadlock between this process and a forked
 * child, each with a handle of its own (on PostgreSQL and MySQL); a
 * connection killed from a second handle (pg_terminate_backend(),
 * KILL); a NOWAIT that finds the row (on SQLite: the database) locked by
 * a second handle. SQLite has no row locks and no server connection, so
 * a deadlock and a lost connection cannot happen there: those tests
 * check on SQLite what it can (the same transaction without the failure
 * commits both writes) and say so.
 *
 * Runs once per URL in SQLLOCK_TEST_URLS (space-separated), or on a
 * fresh temporary SQLite file; SQLLOCK_TEST_REQUIRE as in
 * test_conformance. Lock names and record keys carry the pid. Forked
 * children never use cmocka: they report through their exit status.
 *
 * The cases are in tests/txnfail/, by group (deadlock.c, killed.c,
 * lockcall.c), with what they share in txnfail/common.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <signal.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "txnfail/txnfail.h"

/* ------------------------------------------------------------------ */

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_txnfail_R7_deadlock_poisons_txn,
                                  tf_test_teardown),
        cmocka_unit_test_teardown(test_txnfail_R7_update_does_not_retry_deadlock,
                                  tf_test_teardown),
        cmocka_unit_test_teardown(test_txnfail_R7_lost_connection_poisons_txn,
                                  tf_test_teardown),
        cmocka_unit_test_teardown(test_txnfail_R7_lost_connection_in_lock_call,
                                  tf_test_teardown),
        cmocka_unit_test_teardown(test_txnfail_R7_failed_lock_call_poisons_txn,
                                  tf_test_teardown),
        cmocka_unit_test_teardown(test_txnfail_R8_no_lease_statement_in_txn,
                                  tf_test_teardown),
    };
    return TU_RUN_PER_URL("txnfail", &g_url, tests, tf_group_setup,
                          tf_group_teardown);
}
