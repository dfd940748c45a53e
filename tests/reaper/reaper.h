/*
 * reaper.h -- what the groups of test_reaper share: the group fixture,
 * the snapshot of the lease table, and the helpers for lock names,
 * leases, snapshots and the reaper thread (reaper/common.c); and the
 * cases of each group, for main() (tests/test_reaper.c).
 *
 * Include after cmocka.h, test_util.h and test_run.h.
 */
#ifndef SQLLOCK_TEST_REAPER_H
#define SQLLOCK_TEST_REAPER_H

#include <stdint.h>

typedef struct fixture {
    sqllock_db *db;            /* the group's own handle, initialised */
    const tu_sql *sql;
    const char *driver;
} fixture;

#define ASSERT_RC(expr, want, db) EXPECT_RC((db), (expr), (want), #expr)

/* The whole lease table at one moment. */
typedef struct snap_row {
    char name[SQLLOCK_NAME_MAX + 1];
    int64_t token;
    int64_t expires_at_ms;
    int64_t remaining_ms;
} snap_row;

typedef struct snap {
    snap_row *rows;
    int n;
    int cap;
} snap;


/* reaper/common.c */
extern const char *g_url;  /* the URL the current group runs on */
void rp_name_of(char *buf, size_t size, const char *test, const char *tag,
                int i);
sqllock_lease *rp_new_lease(sqllock_db *db, const char *name,
                            int64_t ttl_ms);
int64_t rp_leave_expiring(sqllock_db *db, const char *name);
void rp_snap_take(sqllock_db *db, snap *s);
void rp_snap_free(snap *s);
const snap_row *rp_snap_find(const snap *s, const char *name);
int64_t rp_others_gone(const snap *before, const snap *after,
                       const char *prefix);
int rp_count_prefix(const snap *s, const char *prefix);
void rp_wait_expired_for(sqllock_db *db, const char *name, int64_t ms);
int64_t rp_row_count_sql(sqllock_db *db, const char *sql, const char *arg);
void rp_stats_get(sqllock_reaper *r, sqllock_reaper_stats *st);
void rp_wait_passes(sqllock_reaper *r, int64_t passes, int64_t ms,
                    sqllock_reaper_stats *st);
void rp_stop_reaper(sqllock_reaper *r);
int rp_stop_leftover(void **state);
sqllock_reaper *rp_start_reaper(const char *url, int64_t interval_ms,
                                int64_t grace_ms, int batch);
int rp_group_setup(void **state);
int rp_group_teardown(void **state);

/* reaper/pass.c: one pass (P1), L4, L5 */
void test_reaper_P1_deletes_only_expired(void **state);
void test_reaper_P1_grace(void **state);
void test_reaper_P1_batches(void **state);
void test_reaper_P1_renewed_not_reaped(void **state);
void test_reaper_P1_renewals_beside_thread(void **state);
void test_reaper_L4_reaped_lease_is_lost(void **state);
void test_reaper_L5_tokens_after_reap(void **state);

/* reaper/thread.c: the thread (P1, P3), E2 */
void test_reaper_P1_thread_reaps(void **state);
void test_reaper_P1_errors_counted_not_fatal(void **state);
void test_reaper_P3_stop_promptly(void **state);
void test_reaper_P3_start_stop_loop(void **state);
void test_reaper_E2_bad_input(void **state);

/* reaper/stress.c: many reapers beside many lock users (P2) */
void test_reaper_P2_many_reapers_beside_users(void **state);
#endif /* SQLLOCK_TEST_REAPER_H */
