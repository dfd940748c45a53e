/*
 * galera.h -- what the groups of test_galera share: the cluster's URLs
 * and scripts, the shared state of the lease tests (a, b) and their
 * helpers (galera/common.c); and the cases of each group, for main()
 * (tests/test_galera.c).
 *
 * Include after cmocka.h, test_util.h, test_run.h and test_spawn.h.
 */
#ifndef SQLLOCK_TEST_GALERA_H
#define SQLLOCK_TEST_GALERA_H

#include <stdint.h>
#include <sys/types.h>

#define NODES 3
#define LD(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define ST(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
#define ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_SEQ_CST)
#define NSTATUS SQLLOCK_STATUS_END_

/* ------------------------------------------------------------------ */
/* Shared state of the lease tests (a, b)                              */
/* ------------------------------------------------------------------ */

#define MAXP 8
#define NNAMES 3
#define MAXIV 20000

enum { API_OPEN, API_ACQ, API_TRY, API_REL, API_RENEW, API_N };

typedef struct hold_iv {
    int name, who;
    int64_t token, call_us, t0_us, t1_us;  /* call_us: the acquire began */
} hold_iv;

typedef struct client {
    int node;                       /* the node it reached first */
    int victim_first;               /* b: its URL names the victim first */
    int64_t calls[API_N][NSTATUS];
    int64_t busy_cert;              /* try BUSY that came from certification */
    int64_t rel_retries;
    int64_t lost_after_cut;         /* b: LOST when a release was retried
                                       after the kill cut its answer */
    int64_t holds, late_holds;      /* late: past the local deadline */
    int64_t longest_ms;
    char longest_what[32];
    /* b */
    int64_t econnect_ms;            /* first ECONNECT after the kill */
    int64_t resumed_ms;             /* first success after it */
    int node_after;                 /* the node it reached after it */
    char first_econnect[200];
    char sticky_owner[SQLLOCK_OWNER_LEN + 1];
    int64_t sticky_token;
    char bad[400];
} client;

typedef struct shared {
    int ready, go, stop, failed, killed;
    int64_t t_kill_ms, t_killed_ms;
    int64_t counter[NNAMES];
    int niv;
    hold_iv iv[MAXIV];
    client c[MAXP];
} shared;

/* One line of statuses: "OK 120, ECONNECT 4, ...". */
#define print_statuses(label, by) tu_print_statuses((label), 16, (by), NSTATUS)

/* galera/common.c: the cluster */
extern char g_dir[1024], g_script[1024];
extern char g_url[NODES][512];       /* one node each */
extern char g_urls[1024];            /* all three */
extern int g_slow;
extern int g_down;                   /* a node this test killed, or -1 */
extern int64_t g_start_ms;
void gl_multi_url(char *out, size_t size, int a, int b, int c);
int gl_load_urls(void);
int64_t gl_script(const char *cmd, int node);
sqllock_db *gl_open_checker(int node);
int64_t gl_sql_int(sqllock_db *db, const char *sql);
int64_t gl_wsrep_sum(const char *var);
int gl_node_of(sqllock_db *db);
int group_setup(void **state);

/* galera/common.c: the lease tests' shared state and helpers */
extern shared *g_sh;
extern char g_names[NNAMES][96];
extern char g_child_url[MAXP][1024];
void gl_bad(client *c, const char *fmt, ...);
void gl_count(client *c, int api, int rc, int64_t t0_ms);
void gl_after_kill(client *c, sqllock_db *db, int rc, int64_t began_ms);
void gl_critical(client *c, int who, int k, sqllock_lease *l,
                 long sleep_us, int64_t call_us);
int gl_release_hold(client *c, sqllock_db *db, sqllock_lease *l,
                    int lost_ok);
/* The history of the lease tests' clients (tu_history.h), in g_dir:
 * opened before the forks, judged by gl_check_holds(). */
extern struct tu_hist *g_hist;
void gl_hist_open(const char *what);
void gl_contend(client *c, int who, sqllock_db *db, int use_try,
                int64_t ttl_ms, long sleep_us, int in_kill);
pid_t gl_fork_child(void (*fn)(int), int who, unsigned alarm_s);
int gl_check_holds(int nclients, const char *what);

/* galera/leases.c: a. exclusion across nodes, b. a node killed while
   clients hold leases */
extern int64_t g_a_ms;               /* how long a's clients contend */
void test_galera_a_L1_L5_exclusion_across_nodes(void **state);
void test_galera_b_E1_L1_node_killed_while_holding(void **state);
int b_teardown(void **state);

/* galera/rows.c: c. row locks on Galera */
void test_galera_c_R1_row_locks_are_node_local(void **state);

/* galera/records.c: d. record updates across nodes */
void test_galera_d_O1_record_updates_across_nodes(void **state);

/* galera/reaper.c: e. reapers on every node */
void test_galera_e_P1_P2_reapers_on_every_node(void **state);

#endif /* SQLLOCK_TEST_GALERA_H */
