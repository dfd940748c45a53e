/*
 * pooler.h -- what the groups of test_pooler share: the poolers' URLs and
 * helpers (pooler/common.c), and the cases of each group, for main()
 * (tests/test_pooler.c): PgBouncer (pooler/bouncer.c: a, c, d, g),
 * wake-ups (pooler/wakeup.c: b) and pgpool-II (pooler/pgpool.c: e, f).
 *
 * Include after cmocka.h, test_util.h, test_run.h and test_spawn.h.
 */
#ifndef SQLLOCK_TEST_POOLER_H
#define SQLLOCK_TEST_POOLER_H

#include <stdatomic.h>
#include <stdint.h>

#ifndef SQLLOCK_CLI_PATH
#error "SQLLOCK_CLI_PATH must name the built sqllock tool"
#endif

#define ASSERT_RC(expr, want, db) EXPECT_RC((db), (expr), (want), #expr)

/* pooler/common.c */
extern char g_dir[1024], g_script[1024];
extern char g_tx[1024], g_tx_poll[1024], g_undeclared[1024];
extern char g_session[1024], g_tight[1024], g_pair[1024];
extern char g_pgpool_raw[1024], g_pgpool_sr[1024], g_pgpool_sr_poll[1024];
extern char g_direct[1024];
extern int g_slow;               /* tu_slowdown() */
sqllock_db *open_url(const char *url);
sqllock_lease *new_lease(sqllock_db *db, const char *name, int64_t ttl_ms,
                         int64_t backoff_ms);
void poolers(const char *cmd);
int load_urls(void);

/* What the processes of c and f count in shared memory. */
typedef struct und_shared {
    _Atomic int ok, busy, eproxy, other;
    _Atomic int holders, overlaps;
    int64_t counter;               /* read, paused, written under the lock */
    _Atomic int named;             /* EPROXY messages naming the remedy */
    char other_msg[600];
} und_shared;

/* pooler/wakeup.c */
int64_t handoff_ms(const char *url, const char *wurl, const char *name,
                   int64_t backoff_ms, int listening);

/* The cases, by group. */
void test_pooler_a_C1_run_transaction_mode(void **state);
void test_pooler_a_C1_run_session_mode(void **state);
void test_pooler_a_C3_run_through_pgbouncer_restart(void **state);
void test_pooler_b_L9_wakeups(void **state);
void test_pooler_c_C1_undeclared_transaction_pooler(void **state);
void test_pooler_d_run_holds_one_server_connection(void **state);
void test_pooler_e_C2_pgpool_raw_no_false_success(void **state);
void test_pooler_f_L9_pgpool_streaming_mode(void **state);
void test_pooler_g_C2_native_transaction_refused(void **state);
void test_pooler_h_D5_repeatable_read_default_behind_transaction_pooler(
    void **state);

#endif
