/*
 * conformance.h -- what the groups of test_conformance share: the group
 * fixture and the helpers for handles, lock names, leases and lease rows
 * (conformance/common.c); and the cases of each group, for main()
 * (tests/test_conformance.c).
 *
 * Include after cmocka.h, test_util.h and test_run.h.
 */
#ifndef SQLLOCK_TEST_CONFORMANCE_H
#define SQLLOCK_TEST_CONFORMANCE_H

#include <stdint.h>

typedef struct fixture {
    sqllock_db *db;            /* the group's own handle, initialised */
    const tu_sql *sql;
    char name[300];            /* scratch for lock names */
} fixture;

#define ASSERT_RC(expr, want, db)                                              \
    do {                                                                       \
        int rc_ = (expr);                                                      \
        if (rc_ != (want))                                                     \
            fail_msg("%s = %s, want %s (%s)", #expr, sqllock_errname(rc_),     \
                     sqllock_errname(want), sqllock_errmsg(db));               \
    } while (0)


/* conformance/common.c */
extern const char *g_url;  /* the URL the current group runs on */
sqllock_db *cf_open_db(void);
const char *cf_lock_name(fixture *f, const char *test, const char *tag);
sqllock_lease *cf_new_lease(sqllock_db *db, const char *name,
                            int64_t ttl_ms);
void cf_delete_row(fixture *f, sqllock_db *db, const char *name);
void cf_expect_row(sqllock_db *db, const char *name, const char *owner,
                   int64_t token);
void cf_expect_no_row(sqllock_db *db, const char *name);
int cf_group_setup(void **state);
int cf_group_teardown(void **state);

/* conformance/schema.c: init and the schema (S1, S2) */
void test_conformance_S1_init_idempotent(void **state);
void test_conformance_S2_row_and_record_tables(void **state);
void test_conformance_S1_enoschema_before_init(void **state);

/* conformance/lease.c: acquire, takeover, release, renew, tokens (L1-L5,
   L7) */
void test_conformance_L1_exclusive_acquire(void **state);
void test_conformance_L2_takeover_only_after_expiry(void **state);
void test_conformance_L3_owner_checked_release(void **state);
void test_conformance_L4_release_after_loss_reports_lost(void **state);
void test_conformance_L7_renew_extends(void **state);
void test_conformance_L4_renew_after_loss_reports_lost(void **state);
void test_conformance_L5_token_increases(void **state);
void test_conformance_L5_token_increases_after_row_deleted(void **state);
void test_conformance_L5_token_increases_across_acquire_paths(void **state);
void test_conformance_S1_acquire_without_routine(void **state);
void test_conformance_S2_refused_routines_tried_once(void **state);
int cf_restore_routines(void **state);

/* conformance/hold.c: re-entry (L8), time left (L6), owner ids (L3),
   waiting (L9) */
void test_conformance_L8_reentrancy_counts(void **state);
void test_conformance_L8_reentry_after_loss_reports_lost(void **state);
void test_conformance_L6_remaining_conservative(void **state);
void test_conformance_L3_owner_ids_unique(void **state);
void test_conformance_L9_wait_succeeds_when_released(void **state);
void test_conformance_L9_wait_times_out(void **state);

/* conformance/list.c: sqllock_list, attach (L3), names (D3) */
void test_conformance_list_shows_row(void **state);
void test_conformance_list_expired_row_negative(void **state);
void test_conformance_D1_derived_rows_range(void **state);
void test_conformance_lookup_one_row(void **state);
void test_conformance_C5_force_release(void **state);
void test_conformance_L7_renew_with_another_ttl(void **state);
void test_conformance_L3_attach_renew_release(void **state);
void test_conformance_D3_names_round_trip(void **state);
#endif /* SQLLOCK_TEST_CONFORMANCE_H */
