/*
 * kinds.h -- what the groups of test_kinds share (kinds/common.c), and
 * the cases of each group, for main() (tests/test_kinds.c).
 *
 * Include after cmocka.h, test_util.h and test_run.h.
 */
#ifndef SQLLOCK_TEST_KINDS_H
#define SQLLOCK_TEST_KINDS_H

#include <stddef.h>

extern const char *g_url;  /* the URL the current group runs on */

/* A lock name unique to this process and call: "knd-PID-N-what". */
void kn_name(char *out, size_t size, const char *what);
/* Handles with a 30 s ttl and a 5..50 ms backoff, made or the test
 * fails. */
sqllock_lease *kn_lease(sqllock_db *db, const char *name, unsigned flags);
sqllock_rw *kn_rw(sqllock_db *db, const char *name, int shared);
sqllock_sem *kn_sem(sqllock_db *db, const char *name, int permits);
sqllock_lease *kn_leader_lease(sqllock_db *db, const char *name);
/* The row of `name` is the kind marker with `owner`, far from expiry by
 * the server's clock (more than 900 years left). */
void kn_expect_marker(sqllock_db *db, const char *name, const char *owner);

/* pairs.c */
void test_kinds_N1_plain_then_shared_exclusive(void **state);
void test_kinds_N1_shared_exclusive_then_plain(void **state);
void test_kinds_N1_plain_vs_semaphore(void **state);
void test_kinds_N1_plain_vs_leader(void **state);
void test_kinds_N1_rw_vs_sem_vs_leader(void **state);
void test_kinds_N1_fair_and_plain_one_lock(void **state);
void test_kinds_N1_acquire_many_marked_name(void **state);
/* waits.c */
void test_kinds_N1_waiting_plain_gets_ekind(void **state);
/* marker.c */
void test_kinds_N1_reaper_leaves_marker(void **state);
void test_kinds_N1_marker_cannot_be_attached(void **state);
void test_kinds_E2_derived_lease_refuses_acquire(void **state);
/* race.c */
void test_kinds_N1_race_plain_and_rw_never_overlap(void **state);

#endif /* SQLLOCK_TEST_KINDS_H */
