/*
 * test_hostile.c -- hostile input through the API and the CLI (issue 7):
 * every bad input gets a specific status (or exit code and message), and
 * nothing changes in the database; every input that is valid, however
 * strange (SQL metacharacters, LIKE wildcards, quotes, backslashes,
 * trailing spaces, case variants, 4-byte UTF-8), round-trips byte for
 * byte and is never interpreted (DESIGN E1, E2, D3, L10).
 *
 * Two tables drive it, run on every URL in SQLLOCK_TEST_URLS:
 *   - api_cases: a call (lease new/acquire/try/renew/release, a row-lock
 *     transaction, versioned records, application-table and fenced
 *     updates, open with a URL), its input, the status it must return;
 *   - cli_cases: the built `sqllock` tool's arguments, its exit code and
 *     a word its stderr must say (and, for secrets, one it must not).
 * Around every case the rows this process owns in the library's tables
 * (names and keys with the prefix "ho<pid>-": lease, record, row, and on
 * MySQL the per-name token rows), the schema's meta rows, the token
 * counter where it is this process's own (the SQLite file), and a table
 * of the test's own are read before and after and must be identical. A
 * victim lease, record and row, held or kept by another handle, stay in
 * that snapshot throughout, so an injection that deleted or changed
 * anything beyond the case's own row would show.
 *
 * test_badinput.c covers, on lease_new/attach, bad names (NULL, empty,
 * 256 and 10000 bytes, each kind of invalid UTF-8, control characters),
 * bad lease options, negative waits, bad owners and tokens, NULL handles,
 * and the generic bad URLs (empty, no scheme, unknown scheme, sqlite
 * paths). This file does not repeat those; it adds the other entry
 * points (row-lock transactions, records, application tables), 1 MB
 * names, huge and overflowing times, URL injection per driver, and the
 * CLI, and it checks the database after each case.
 *
 * On PostgreSQL, one more case shows the durability pin: with a URL that
 * turns synchronous_commit off for the session (options=-c ...), durable
 * grants and renewals still wait for the WAL flush (L10), counted in
 * pg_stat_wal as test_fast.c does.
 *
 * Policies the tables pin down:
 *   - Invalid UTF-8 in a lock name or record key is SQLLOCK_EINVAL on
 *     every driver (the core checks before any SQL). A text value for an
 *     application's table is the application's data: PostgreSQL refuses
 *     bytes invalid in its encoding (EINVAL), SQLite and MySQL compare
 *     the bytes (NOTFOUND here); a value the database refuses for its
 *     column type or range is EINVAL, not EDB.
 *   - A URL parameter a driver does not know is SQLLOCK_EURL with a
 *     message naming it (MySQL: init_command, local_infile, ...; libpq:
 *     "invalid connection option"). Percent-encoded text is one value,
 *     never split into parameters.
 *   - PostgreSQL options= is the user's own session configuration and is
 *     allowed (search_path, default_transaction_isolation, ...), except
 *     that it cannot make durable grants and renewals asynchronous; a
 *     read-only default makes them SQLLOCK_EPERM.
 *
 * Lock names carry the pid, so runs on a shared server do not meet.
 *
 * The cases are in tests/hostile/, by group (api.c, durable.c, cli.c),
 * with what they share in hostile/common.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "hostile/hostile.h"

#ifndef SQLLOCK_CLI_PATH
#error "SQLLOCK_CLI_PATH must name the built sqllock tool"
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hostile_api_table),
        cmocka_unit_test(test_hostile_embedded_nul_ends_the_name),
        cmocka_unit_test(test_hostile_L10_options_cannot_make_grants_async),
        cmocka_unit_test(test_hostile_cli_table),
        cmocka_unit_test(test_hostile_cli_names_round_trip),
    };
    return TU_RUN_PER_URL("hostile", &g_url, tests, ho_setup, ho_teardown);
}
