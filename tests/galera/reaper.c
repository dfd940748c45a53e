/*
 * reaper.c -- test_galera e: a reaper on every node
 * at once over the same expired rows (P1, P2).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "galera.h"

/* ------------------------------------------------------------------ */
/* e. Reapers on every node at once (P1, P2)                           */
/* ------------------------------------------------------------------ */

#define E_ROWS 300

typedef struct e_shared {
    int go;
    int64_t deleted[NODES], passes[NODES], st[NODES][NSTATUS];
    char bad[NODES][300];
} e_shared;

static e_shared *g_e;

static void e_child(int who)
{
    sqllock_db *db = tu_child_open(g_url[who], "e");
    int idle = 0;

    if (db == NULL) {
        snprintf(g_e->bad[who], sizeof g_e->bad[who], "open failed");
        return;
    }
    while (!LD(&g_e->go))
        tu_sleep_ms(1);
    /* Small batches, so that the three reapers meet on the same rows. */
    while (idle < 3) {
        int64_t deleted = 0;
        int rc = sqllock_reap(db, 0, 10, &deleted);
        if (rc >= 0 && rc < NSTATUS)
            g_e->st[who][rc]++;
        g_e->passes[who]++;
        g_e->deleted[who] += deleted;
        if (rc != SQLLOCK_OK && !sqllock_retryable(rc)) {
            snprintf(g_e->bad[who], sizeof g_e->bad[who], "reap: %s (%s)",
                     sqllock_errname(rc), sqllock_errmsg(db));
            break;
        }
        idle = rc == SQLLOCK_OK && deleted == 0 ? idle + 1 : 0;
    }
    sqllock_close(db);
}

void test_galera_e_P1_P2_reapers_on_every_node(void **state)
{
    pid_t pids[NODES];
    int64_t st[NSTATUS], deleted = 0, passes = 0, left = -1, cert0, cert1,
        t0;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_db *db, *chk;
    char prefix[96], name[128];
    sqllock_value like;
    int i, s, failed = 0, has = 0;

    (void)state;
    g_e = tu_shared_map(sizeof *g_e);
    for (i = 0; i < NODES; i++) {
        fflush(stdout);
        pids[i] = fork();
        if (pids[i] == 0) {
            alarm(120 * (unsigned)g_slow);
            e_child(i);
            _exit(g_e->bad[i][0] != '\0');
        }
    }
    /* E_ROWS leases that expire at once, left behind unreleased. */
    db = tu_open_or_fail(g_url[0]);
    snprintf(prefix, sizeof prefix, "galera-%ld-e-", (long)getpid());
    o.ttl_ms = 1;
    for (i = 0; i < E_ROWS; i++) {
        sqllock_lease *l = NULL;
        snprintf(name, sizeof name, "%s%03d", prefix, i);
        TU_ASSERT_RC(sqllock_lease_new(db, name, &o, &l), SQLLOCK_OK, db);
        TU_ASSERT_RC(sqllock_lease_try_acquire(l), SQLLOCK_OK, db);
        sqllock_lease_free(l);
    }
    sqllock_close(db);
    cert0 = gl_wsrep_sum("WSREP_LOCAL_CERT_FAILURES");
    tu_sleep_ms(50);
    t0 = tu_now_ms();
    ST(&g_e->go, 1);
    for (i = 0; i < NODES; i++) {
        int code = tu_wait_for(pids[i], 120000 * (int64_t)g_slow);
        if (code != 0) {
            if (code == -1)
                tu_kill_wait(pids[i]);
            printf("    e: reaper on node %d: %s\n", i + 1, g_e->bad[i]);
            failed++;
        }
    }
    t0 = tu_now_ms() - t0;
    cert1 = gl_wsrep_sum("WSREP_LOCAL_CERT_FAILURES");
    memset(st, 0, sizeof st);
    for (i = 0; i < NODES; i++) {
        deleted += g_e->deleted[i];
        passes += g_e->passes[i];
        for (s = 0; s < NSTATUS; s++)
            st[s] += g_e->st[i][s];
    }
    printf("  e: statuses per call, all reapers:\n");
    print_statuses("reap", st);
    chk = gl_open_checker(1);
    snprintf(name, sizeof name, "%s%%", prefix);
    like = sqllock__text(name);
    TU_ASSERT_RC(sqllock__exec_sql(chk, "SELECT COUNT(*) FROM sqllock_lease "
                                "WHERE name LIKE ?", &like, 1, &has, &left,
                                NULL), SQLLOCK_OK, chk);
    sqllock_close(chk);
    printf("  e: 3 reapers (one per node, batches of 10) deleted %lld rows "
           "(%lld/%lld/%lld) of the %d expired ones in %lld passes, %lld ms; "
           "certification failures %lld; %lld left\n", (long long)deleted,
           (long long)g_e->deleted[0], (long long)g_e->deleted[1],
           (long long)g_e->deleted[2], E_ROWS, (long long)passes,
           (long long)t0, (long long)(cert1 - cert0), (long long)left);
    if (failed)
        fail_msg("%d reaper(s) failed", failed);
    assert_int_equal(left, 0);
    /* Each row is deleted once: the reapers' counts add up to at least
     * E_ROWS (other expired rows of earlier runs may go too), and a row
     * deleted on two nodes at once would be counted twice only if both
     * deletes had committed, which certification refuses. */
    assert_true(deleted >= E_ROWS);
    munmap(g_e, sizeof *g_e);
    g_e = NULL;
}

