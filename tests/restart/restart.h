/*
 * restart.h -- what the groups of test_restart share: the server under
 * test and its helpers (restart/common.c); the accounts, shared state and
 * child processes of the clients across restarts (restart/clients.c);
 * and the cases of each group, for main() (tests/test_restart.c).
 *
 * Include after cmocka.h, test_util.h, test_run.h and test_spawn.h.
 */
#ifndef SQLLOCK_TEST_RESTART_H
#define SQLLOCK_TEST_RESTART_H

#include <stdint.h>
#include <sys/types.h>

typedef struct server {
    const char *drv;           /* "postgres" or "mysql" */
    const char *url;
    const char *restart_cmd;   /* "restart-pg" or "restart-my" */
    const char *restart_arg;   /* a crash: "immediate" or "" (SIGKILL) */
    const char *graceful_arg;  /* a graceful restart: "fast" or "graceful" */
} server;

#define ASSERT_RC(expr, want, db)                                              \
    do {                                                                       \
        int rc_ = (expr);                                                      \
        if (rc_ != (want))                                                     \
            fail_msg("%s = %s, want %s (%s)", #expr, sqllock_errname(rc_),     \
                     sqllock_errname(want), sqllock_errmsg(db));               \
    } while (0)

/* The clients' history (tu_history.h): opened before the forks,
 * judged at the end of the run (restart/clients_run.c). */
extern struct tu_hist *g_cl_hist;

/* restart/common.c */
extern const server *g_srv;
extern const char *g_dir, *g_script;
extern int64_t g_max_token;    /* the largest token seen on g_srv */
sqllock_db *rs_open_db(void);
sqllock_lease *rs_new_lease(sqllock_db *db, const char *name);
const char *rs_lock_name(char *buf, size_t size, const char *tag);
void rs_saw_token(const sqllock_lease *l);
void rs_crash_and_restart(void);
void rs_expect_row(sqllock_db *db, const char *name,
                   const sqllock_lease *holder);
int group_setup(void **state);

/* restart/crash.c: L10 and L5 across a crash or a restart */
void test_restart_L10_granted_lease_survives_crash(void **state);
void test_restart_L10_async_release_never_two_holders(void **state);
void test_restart_L5_tokens_increase_across_restart(void **state);
void test_restart_L5_L10_fast_mode_beside_durable(void **state);

/* ------------------------------------------------------------------ */
/* Clients across restarts (restart/clients.c, restart/clients_run.c)  */
/* ------------------------------------------------------------------ */

#define CL_COUNTER_PROCS 3
#define CL_COUNTER_THREADS 2
#define CL_HOLDER 0
#define CL_WAIT_LONG 1
#define CL_WAIT_SHORT 2
#define CL_COUNTER0 3
#define CL_REAP (CL_COUNTER0 + CL_COUNTER_PROCS * CL_COUNTER_THREADS)
#define CL_CLIENTS (CL_REAP + 1)
#define CL_GEN_MAX 8               /* restarts + 1 */
#define CL_HOLDS_MAX 60000
#define CL_EVENTS_MAX 256
#define CL_NSTATUS SQLLOCK_STATUS_END_

#define CL_LD(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define CL_ST(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
#define CL_ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_SEQ_CST)
#define CL_MASK(s) (1u << (s))

typedef struct cl_hold {
    int64_t start_us, end_us, token;
    int who;
} cl_hold;

typedef struct cl_event {
    int64_t t_ms;
    int state, status;
    char msg[120];
} cl_event;

/* Two consecutive calls of a client that has not heard a restart: the
 * first ended before a moment when the server was known down, the second
 * after it, both with a status from a server (cl_end in clients.c). */
typedef struct cl_across {
    int64_t x_end, y_begin, y_end;     /* ms */
    int x_rc, y_rc;
    int y_c3;                          /* the second is a release or a
                                          renewal (cl_call.c3) */
    char x_what[40], y_what[40];
} cl_across;

/* One client thread's account; written by that thread only. */
typedef struct cl_client {
    const char *role;
    int64_t calls, by_status[CL_NSTATUS];
    int64_t up_calls[CL_GEN_MAX];      /* calls wholly inside up period g */
    int64_t econnect[CL_GEN_MAX];      /* ECONNECTs that came during restart
                                          g or in the up period after it */
    int resumed[CL_GEN_MAX];           /* after its ECONNECT from restart
                                          g, a call reached the server (or
                                          its first call after the cut was
                                          a release or renewal sent again:
                                          across[g]) */
    int64_t resume_at[CL_GEN_MAX];     /* when that call ended (ms) */
    int64_t longest_ms;
    char longest_what[40];
    int64_t in_call_since;             /* ms; 0 outside a call */
    char in_call[40];
    char first_econnect[200];
    char bad[400];
    /* Its last call: when it ended (ms), its status, whether that status
     * came from a server (one of the call's own statuses, not ECONNECT),
     * and what it was. */
    int64_t last_end;
    int last_rc, last_reached;
    char last_what[40];
    cl_across across[CL_GEN_MAX];      /* while it has not heard restart
                                          g: its two calls across a moment
                                          the server was down (cl_end) */
    int resumed_c3[CL_GEN_MAX];        /* resumed[g] came from across[g]'s
                                          second call, a release or a
                                          renewal */
} cl_client;

typedef struct cl_shared {
    int epoch, stop, ready, failed;
    int64_t down_ms[CL_GEN_MAX], up_ms[CL_GEN_MAX];
    int64_t server_down[CL_GEN_MAX];   /* the last known moment of
                                          restart g when no server took
                                          connections (ms; 0: none known
                                          yet; cl_note_across) */
    /* (c) the counter */
    int counter_owner, overlaps, token_back;
    int64_t counter, increments, skipped, last_token;
    int64_t gen_tok_min[CL_GEN_MAX], gen_tok_max[CL_GEN_MAX];
    int nholds;
    cl_hold holds[CL_HOLDS_MAX];
    /* (a) the watched lease and (b) its waiters */
    int hold_owner, hold_releasing, hold_grants;
    int64_t hold_token, hold_last_token, hold_tokens[4];
    int w_notheld, w_nev;
    cl_event w_ev[CL_EVENTS_MAX];
    int w_nev_at[CL_GEN_MAX + 1];      /* w_nev when restart g began (g =
                                          the restarts + 1: at the stop) */
    char w_bad[300];
    /* (d) the reapers */
    int r_resumed[CL_GEN_MAX];
    int64_t r_resume_ms[CL_GEN_MAX];
    int64_t r_passes, r_errors, r_reaped, r_err_status[CL_NSTATUS];
    int64_t r_oneshot_reaped, r_orphans, r_stop_ms, r_left;
    cl_client c[CL_CLIENTS];
} cl_shared;

typedef struct cl_call {
    cl_client *c;
    const char *what;
    int epoch;
    int64_t t0;
    int64_t econnect_before;   /* the client's ECONNECTs in this call's
                                  generation when it began */
    int c3;                    /* a release or a renewal: after a lost
                                  connection the library sends it again,
                                  once, on a fresh one (DESIGN C3) */
} cl_call;


typedef enum cl_role { CL_R_HOLDER, CL_R_WAITERS, CL_R_COUNTER, CL_R_REAPER }
    cl_role;

/* restart/clients.c */
extern cl_shared *g_cl;
extern int g_slow;
extern char g_cl_hold[200], g_cl_manual[200], g_cl_counter[200],
    g_cl_orphan[200];
pid_t cl_fork(cl_role role, int first, unsigned alarm_s);

/* restart/clients_run.c: clients across restarts and crashes */
void test_restart_E1_L1_L5_L7_P1_clients_across_restart(void **state);
void test_restart_E1_L1_L5_L10_clients_across_crash(void **state);

#endif /* SQLLOCK_TEST_RESTART_H */
