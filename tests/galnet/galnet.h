/*
 * galnet.h -- what the cases of test_galnet share: the clusters that
 * scripts/galera_net.sh starts in network namespaces, their URLs, the
 * clients' shared state and history, the contending client, the
 * children and the teardowns (galnet/common.c); and the cases, for
 * main() (tests/test_galnet.c).
 *
 * Include after cmocka.h, test_util.h, test_run.h and test_spawn.h.
 */
#ifndef SQLLOCK_TEST_GALNET_H
#define SQLLOCK_TEST_GALNET_H

#include <stdint.h>
#include <sys/types.h>

#include "tu_history.h"

#define NODES 3
#define NNAMES 3             /* the contended names */
#define MAXP 8               /* clients */
#define MAXSTREAM 12000      /* c, d: fresh names granted once each */
#define MAXSEEN 24           /* distinct statuses a client keeps */
#define MAXHEV 48            /* b: what the holder saw */
#define NST SQLLOCK_STATUS_END_
#define LD(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define ST(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
#define ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_SEQ_CST)

enum { API_ACQ, API_TRY, API_REL, API_RENEW, API_STREAM, API_N };

/* One kind of answer a client got: the call, the status, the
 * database's own error code, how often, and the first message. */
typedef struct gn_seen {
    int api, rc, code;
    int64_t n;
    char msg[200];
} gn_seen;

typedef struct gn_client {
    int first;                 /* the node its URL lists first, 1-based */
    int node0;                 /* the node it reached first */
    int use_try;
    int64_t calls[API_N][NST];
    int nseen;
    gn_seen seen[MAXSEEN];
    int64_t ec_1047, ec_1180, ec_notready, ec_other; /* ECONNECT, by cause */
    int64_t first_ec_us;       /* the first ECONNECT once the fault began */
    int first_ec_api, first_ec_code;
    int64_t c3_release_us;     /* a release answered OK or LOST once the
                                  fault was in place, before the regrant:
                                  sent again elsewhere (C3) */
    int64_t regrant_inv_us, regrant_us; /* the first grant invoked once
                                           the fault was in place */
    int regrant_node;          /* the node it came through, 0: unknown */
    int64_t grants, writes, skipped, rel_lost, rel_retries, streams;
    int64_t longest_ms;
    char longest_what[48];
    char bad[400];
} gn_client;

/* c, d: a fresh name granted once (stream grant), not released. */
typedef struct gn_grant {
    int who;
    int64_t idx, token, inv_us, ack_us;
} gn_grant;

/* b: one change in what the holder was told. */
typedef struct gn_hev {
    int64_t t_us;
    int api, rc, code, repeats;
    char msg[200];
} gn_hev;

typedef struct gn_shared {
    int ready, go, stop, failed, fault;
    int64_t t_fault_us;        /* the fault's command began */
    int64_t t_fault_done_us;   /* it was in place */
    int64_t t_back_us;         /* heal began (a), resume (b), recovered (c) */
    int64_t counter[NNAMES], writes[NNAMES];
    gn_client c[MAXP];
    /* b */
    int h_granted, h_final_rc, nhev;
    int64_t h_last_ok_inv_us, h_final_us;
    int64_t b_first_grant_us;  /* a contender's first grant in the pause */
    int b_first_who;
    gn_hev hev[MAXHEV];
    /* c, d */
    int nstream;
    gn_grant stream[MAXSTREAM];
} gn_shared;

/* What a contending client does (gn_contend). */
typedef struct gn_plan {
    int64_t ttl_ms;            /* the contended names' ttl */
    int64_t wait_ms;           /* acquire's wait (a try when use_try) */
    int64_t stream_ttl_ms;     /* c, d: a fresh name after each round */
    int hazard;                /* d: what a forgotten grant causes is not
                                  a client's failure */
    int think_ms;              /* the pause between rounds, about */
    const char *url;
} gn_plan;

/* galnet/common.c: the clusters */
extern char g_work[1024], g_script[1024], g_dir[1024], g_mode[16];
extern int g_slow;
extern int g_keep;                 /* keep the work directory */
extern int g_case_done;            /* the case ran to its end */
#define GN_QUIET 1
int gn_script(int64_t *ms, int flags, const char *cmd, ...);
const char *gn_script_out(void);
void gn_url(char *out, size_t size, const char *order, const char *query);
void gn_cluster(const char *mode);
void gn_print_status(void);
int gn_node_primary(int node);
sqllock_db *gn_open(const char *url, int64_t connect_ms, int64_t stmt_ms,
                    int *rc);
int gn_node_of(sqllock_db *db);

/* galnet/common.c: the clients and their history */
extern gn_shared *g_sh;
extern tu_hist *g_hist;
extern char g_names[NNAMES][96];
extern char g_stream_prefix[96];
void gn_case_begin(const char *what);
void gn_bad(gn_client *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void gn_note(gn_client *c, int api, int rc, sqllock_db *db, int64_t t0_us);
int gn_write(gn_client *c, const char *me, const char *name, int k,
             sqllock_lease *l, long sleep_us);
void gn_release(gn_client *c, const char *me, sqllock_db *db,
                sqllock_lease *l, int64_t give_up_ms, int hazard);
void gn_contend(gn_client *c, int who, sqllock_db *db, const gn_plan *p);
int gn_client_main(int who, const gn_plan *p);
pid_t gn_fork(int (*fn)(void *), void *arg);
int gn_reap(int64_t ms);
void gn_stop_children(void);
void gn_wait_until(int64_t until_ms);
int gn_check_history(int enforce, tu_hist_result *r);
void gn_print_clients(int n);
void gn_print_seen(int n);
void gn_check_counters(int enforce);
int gn_case_teardown(void **state);
int gn_group_teardown(void **state);

/* galnet/partition.c: a. node 1 cut off from nodes 2 and 3 */
void test_galnet_a_L1_L5_E1_partition_minority_node(void **state);
/* galnet/pause.c: b. the holder's node paused past its eviction */
void test_galnet_b_H3_H4_L6_paused_holder_node(void **state);
/* galnet/crash.c: c. all three nodes killed, then recovered; d. the same
   with innodb_flush_log_at_trx_commit=0 (the hazard) */
void test_galnet_c_H3_L10_whole_cluster_crash(void **state);
void test_galnet_d_L10_flush_0_refused_and_hazard(void **state);

#endif /* SQLLOCK_TEST_GALNET_H */
