/*
 * patroni.h -- what the parts of test_patroni share: the cluster's
 * directory, script and URLs, the shared memory its client processes
 * report through, the clients of each kind (patroni/clients.c,
 * patroni/others.c) and the fault sequence (patroni/faults.c).
 *
 * Include after cmocka.h, test_util.h, test_run.h and test_spawn.h.
 */
#ifndef SQLLOCK_TEST_PATRONI_H
#define SQLLOCK_TEST_PATRONI_H

#include <stdint.h>
#include <sys/types.h>

#include "tu_history.h"

#define LD(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define ST(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
#define ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_SEQ_CST)
#define NST SQLLOCK_STATUS_END_

/* The two routes to the leader. */
enum { R_HAPROXY, R_HOSTS, R_N };

/* The phases: before the faults, one per fault, and after them. */
enum { PH_WARM, PH_SWITCHOVER, PH_KILL_PG, PH_ISOLATE, PH_KILL_PATRONI,
       PH_AFTER, PH_N };

/* The kinds of client (`sqllock run` is a shell loop, not one of these). */
enum { K_LEASE, K_SEM, K_RW, K_LEADER, K_ROW, K_CAS, K_GUARD, K_PROBE,
       K_N };

#define PT_MAXC 24
#define PT_SEM_PERMITS 2
#define PT_ROW_OV_MAX 16

/* The lock names (and the names the history judges them by). */
#define N_LEASE "patroni-lease"
#define N_SEM "patroni-sem"
#define N_RW "patroni-rw"
#define N_LEADER "patroni-leader"
#define N_GUARD "patroni-guard"
#define N_CAS "patroni-cas"
#define N_RUN "patroni-run"
#define N_PROBE_LEASE "patroni-probe-lease"
/* The application's tables: a counter row (id 1) that the row-lock
 * clients increment inside their transaction, and the row (id 2) the
 * kill-patroni probe locks on both primaries; the guarded counter. */
#define T_ROW "patroni_rowcount"
#define T_GUARD "patroni_guarded"

typedef struct pt_client {
    int kind, route, pid_ok;
    char who[32];
    int64_t ok;                         /* acknowledged grants or writes */
    int64_t ok_phase[PH_N];
    int64_t st[NST];                    /* every status, whole run */
    int64_t longest_ms;
    char longest_what[24];
    char bad[400];                      /* why it failed the test */
    /* leader candidates */
    int64_t elected, lost_by[NST], terms;
    char leader_err[200];
} pt_client;

typedef struct pt_phase {
    int64_t t_fault_us;                 /* CLOCK_MONOTONIC */
    int64_t t_fault_wall_ms;            /* CLOCK_REALTIME, for the server */
    int old_port;                       /* the leader's port before */
    int64_t first_new_us[R_N];          /* first grant on the new leader */
    char first_new_what[R_N][16];
    int64_t first_err_us[R_N];
    int64_t st[R_N][NST];
    char first_msg[R_N][160];
    int64_t lease_max_before, lease_min_after;   /* tokens of N_LEASE */
} pt_phase;

typedef struct pt_row_ov {
    int64_t t_us;
    int phase, route, port;
} pt_row_ov;

typedef struct pt_shared {
    int go, stop, failed, phase, nclients;
    int64_t t0_us;
    pt_phase ph[PH_N];
    pt_client c[PT_MAXC];
    /* lease: the counter its holders read, pause and write */
    int64_t lease_counter, lease_max_acked;
    /* leader: the counter its leaders write, the largest term seen,
     * terms that did not grow, and leaders at once by their callbacks */
    int64_t leader_counter, leader_max_token, leader_back;
    int leader_cb_inside;
    int64_t leader_cb_overlaps;
    /* row locks: sections (lock granted .. commit sent) at once */
    int row_inside;
    int64_t row_sections, row_shm, row_acked, row_undecided;
    int64_t row_overlaps, row_overlaps_kp;
    pt_row_ov row_ov[PT_ROW_OV_MAX];
    /* CAS */
    int64_t cas_acked, cas_undecided;
    /* the kill-patroni probe: a row lock on each primary at once */
    int hazard_on;
    char hazard_url[1024];              /* the old leader first */
    int64_t hz_t_leader_us;             /* the new leader took a write */
    int64_t hz_tries, hz_both, hz_both_after, hz_excluded, hz_a_only,
        hz_b_only, hz_none;
    int64_t hz_first_both_us;
    int hz_port_a, hz_port_b;
    int64_t hz_a_st[NST], hz_b_st[NST], hz_lease_st[NST];
    int64_t hz_lease_longest_ms, hz_lease_ok_old_after;
} pt_shared;

/* patroni/common.c. Static storage, not malloc'd: forked children must
 * inherit no heap blocks of the parent's. */
extern char g_dir[1024], g_script[1024];
extern char g_haproxy[512], g_hosts[512], g_node[3][512];
extern int g_node_port[3];
extern int g_slow;
extern pid_t g_parent;
extern pt_shared *g_sh;
extern tu_hist *g_hist;
extern int64_t g_ttl_ms, g_stmt_ms;
extern char g_cannot[300];

const char *pt_route_name(int route);
const char *pt_url(int route);
const char *pt_phase_name(int phase);
int pt_script(const char *cmd, const char *arg, char *out, size_t size,
              int64_t *ms);
int pt_load_env(void);
int pt_port_of(const char *url);
int pt_node_of_port(int port);
void pt_old_first_url(char *out, size_t size, int node);
int64_t pt_wall_ms(void);
sqllock_db *pt_open(const char *url);
int pt_running(void);
void pt_bad(pt_client *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void pt_count(pt_client *c, sqllock_db *db, int rc, int64_t t0_us,
              const char *what);
void pt_granted(pt_client *c, sqllock_db *db, int64_t t_inv_us,
                const char *what);
void pt_pause_after(int rc, unsigned *seed);
int pt_group_setup(void **state);
int pt_group_teardown(void **state);

/* patroni/clients.c: the lease-like clients */
int pt_lease_main(pt_client *c, int idx);
int pt_sem_main(pt_client *c, int idx);
int pt_rw_main(pt_client *c, int idx);
int pt_guard_main(pt_client *c, int idx);

/* patroni/others.c: row locks, CAS, leader candidates, the probe, and
 * the `sqllock run` loops */
int pt_row_main(pt_client *c, int idx);
int pt_cas_main(pt_client *c, int idx);
int pt_leader_main(pt_client *c, int idx);
int pt_probe_main(pt_client *c, int idx);
pid_t pt_run_loop(int route);
int pt_run_read(int64_t by[R_N][PH_N][5], int64_t first[R_N][PH_N],
                int *bad_tokens, int64_t *count);

/* patroni/faults.c: the case */
extern int g_passed;
extern pid_t g_pids[PT_MAXC + 2];
extern int g_npids;
void test_patroni_faults_L1_L5_L10_G1_M1_M2_M4_X2(void **state);

#endif /* SQLLOCK_TEST_PATRONI_H */
