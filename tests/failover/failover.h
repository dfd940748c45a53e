/*
 * failover.h -- what the groups of test_failover share: the pair's
 * directory, script and URLs, and the helpers that drive pgrepl.sh, open
 * handles and reap children (failover/common.c); and the cases of each
 * group, for main() (tests/test_failover.c).
 *
 * Include after cmocka.h, test_util.h, test_run.h and test_spawn.h.
 */
#ifndef SQLLOCK_TEST_FAILOVER_H
#define SQLLOCK_TEST_FAILOVER_H

#include <stdint.h>
#include <sys/types.h>

#define LD(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define ST(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
#define ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_SEQ_CST)

/* failover/common.c. Static storage, not malloc'd: forked children must
   inherit no heap blocks. */
extern char g_dir[1024], g_script[1024];
extern char g_url[512], g_url1[512], g_url2[512];
extern int g_slow;
int fo_repl(const char *cmd, const char *arg, int64_t *ms);
void fo_fresh_pair(const char *mode);
sqllock_db *fo_open_url(const char *url, int64_t stmt_ms);
void fo_reap_or_kill(pid_t pid, int64_t ms, const char *who);
/* pg_cancel_backend() (terminate 0) or pg_terminate_backend() on the
 * statements LIKE `like` that wait for the synchronous standby, once
 * `want` of them wait; the number signalled. */
int fo_end_syncrep_waits(sqllock_db *db, int terminate, const char *like,
                         int want);
int group_teardown(void **state);

/* failover/sync.c: a. clients through a failover with a synchronous
   standby */
void test_failover_sync_L1_L5_L6_L10_E1_clients_through_failover(
    void **state);

/* failover/stall.c: b. a stalled synchronous standby */
void test_failover_sync_L6_L10_stalled_standby_no_false_success(
    void **state);

/* failover/async.c: c. the asynchronous standby's hazard */
void test_failover_async_hazard_demonstrated(void **state);

/* failover/txn.c: d. a row-lock transaction's commit and a stalled
   standby */
void test_failover_sync_C2_txn_commit_wait_ended_no_false_success(
    void **state);

#endif /* SQLLOCK_TEST_FAILOVER_H */
