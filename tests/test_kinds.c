/*
 * test_kinds.c -- one name, one meaning (contract N1, issue 26 item 7),
 * and acquire refused on a primitive's row (issue 26 item 8b), on every
 * database:
 *
 *   - a plain lease and a shared or exclusive hold of the same name, in
 *     both orders: the second is refused with SQLLOCK_EKIND, its message
 *     naming the kind in use; the marker stays after the holds are gone;
 *   - the same for a semaphore and for an election (sqllock_leader_start()
 *     and sqllock_leader_lease_new()), and between the primitives;
 *   - a fair lease and a plain one on a name are still one lock;
 *   - a multi-name acquire with a marked name: EKIND, nothing taken;
 *   - a waiting plain acquire on a marked name: EKIND at once, not a
 *     TIMEOUT, and EKIND soon when the marker comes while it waits (plain,
 *     fair and multi-name waits);
 *   - the reaper leaves a marker; nobody can attach to one;
 *   - 8b: acquire on the lease of a shared/exclusive hold, of a permit or
 *     of a fair queue row is SQLLOCK_EMISUSE, while renew, release and
 *     the accessors keep working;
 *   - a race: processes take fresh names at random as plain leases, shared
 *     or exclusive holds, logging their hold intervals; no plain or
 *     exclusive hold may overlap any other hold of the name.
 *
 * Runs once per URL in SQLLOCK_TEST_URLS (SQLLOCK_TEST_REQUIRE as in
 * test_conformance). Forked children never use cmocka: they report
 * through shared memory and their exit status. The cases are in
 * tests/kinds/, by group (pairs.c, waits.c, marker.c, race.c), with what
 * they share in kinds/common.c.
 */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "tu_fixture.h"
#include "kinds/kinds.h"

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kinds_N1_plain_then_shared_exclusive),
        cmocka_unit_test(test_kinds_N1_shared_exclusive_then_plain),
        cmocka_unit_test(test_kinds_N1_plain_vs_semaphore),
        cmocka_unit_test(test_kinds_N1_plain_vs_leader),
        cmocka_unit_test(test_kinds_N1_rw_vs_sem_vs_leader),
        cmocka_unit_test(test_kinds_N1_fair_and_plain_one_lock),
        cmocka_unit_test(test_kinds_N1_acquire_many_marked_name),
        cmocka_unit_test(test_kinds_N1_waiting_plain_gets_ekind),
        cmocka_unit_test(test_kinds_N1_reaper_leaves_marker),
        cmocka_unit_test(test_kinds_N1_marker_cannot_be_attached),
        cmocka_unit_test(test_kinds_E2_derived_lease_refuses_acquire),
        cmocka_unit_test(test_kinds_N1_race_plain_and_rw_never_overlap),
    };

    return TU_RUN_PER_URL("kinds", &g_url, tests, tu_group_schema,
                          tu_end_children);
}
