/*
 * records.c -- test_galera d: record updates from
 * all three nodes (O1).
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
/* d. Optimistic updates across nodes                                  */
/* ------------------------------------------------------------------ */

#define D_PROCS 3
#define D_UPDATES 30

typedef struct d_shared {
    int64_t ok[D_PROCS], attempts[D_PROCS], st[D_PROCS][NSTATUS];
    int64_t cas_ok[D_PROCS], cas_st[D_PROCS][NSTATUS],
        get_st[D_PROCS][NSTATUS];
    char bad[D_PROCS][300];
} d_shared;

static d_shared *g_d;
static char g_d_key[96];

static void d_child(int who)
{
    sqllock_db *db = tu_child_open(g_url[who], "d");
    sqllock_retry_options ro = SQLLOCK_RETRY_OPTIONS_INIT;
    tu_counter ctx;
    int i, done = 0, tries = 0;

    if (db == NULL) {
        snprintf(g_d->bad[who], sizeof g_d->bad[who], "open failed");
        return;
    }
    ro.max_attempts = 50;
    while (done < D_UPDATES && tries < D_UPDATES * 20) {
        int attempts = 0, rc;
        tries++;
        rc = sqllock_record_update(db, g_d_key, tu_counter_inc, &ctx, &ro,
                                   &attempts);
        g_d->attempts[who] += attempts;
        if (rc >= 0 && rc < NSTATUS)
            g_d->st[who][rc]++;
        if (rc == SQLLOCK_OK) {
            g_d->ok[who]++;
            done++;
        } else if (!sqllock_retryable(rc)) {
            snprintf(g_d->bad[who], sizeof g_d->bad[who], "update: %s (%s)",
                     sqllock_errname(rc), sqllock_errmsg(db));
            break;
        }
    }
    /* The same by hand: get, then compare-and-set, counting what each
     * call returns. */
    for (i = 0, tries = 0; i < D_UPDATES && tries < D_UPDATES * 40 &&
                           g_d->bad[who][0] == '\0'; tries++) {
        void *val = NULL;
        size_t len = 0;
        int64_t ver = 0;
        const void *out;
        size_t out_len;
        int rc = sqllock_record_get(db, g_d_key, &val, &len, &ver);
        if (rc >= 0 && rc < NSTATUS)
            g_d->get_st[who][rc]++;
        if (rc != SQLLOCK_OK) {
            sqllock_free(val);
            if (!sqllock_retryable(rc))
                snprintf(g_d->bad[who], sizeof g_d->bad[who], "get: %s (%s)",
                         sqllock_errname(rc), sqllock_errmsg(db));
            continue;
        }
        tu_counter_inc(&ctx, val, len, &out, &out_len);
        sqllock_free(val);
        rc = sqllock_record_cas(db, g_d_key, ver, out, out_len, NULL);
        if (rc >= 0 && rc < NSTATUS)
            g_d->cas_st[who][rc]++;
        if (rc == SQLLOCK_OK) {
            g_d->cas_ok[who]++;
            i++;
        } else if (!sqllock_retryable(rc)) {
            snprintf(g_d->bad[who], sizeof g_d->bad[who], "cas: %s (%s)",
                     sqllock_errname(rc), sqllock_errmsg(db));
        } else {
            tu_sleep_us(rand() % 2000);
        }
    }
    sqllock_close(db);
}

static pid_t d_fork(int who)
{
    pid_t pid;

    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        alarm(120 * (unsigned)g_slow);
        srand((unsigned)getpid());
        d_child(who);
        _exit(g_d->bad[who][0] != '\0');
    }
    return pid;
}

void test_galera_d_O1_record_updates_across_nodes(void **state)
{
    pid_t pids[D_PROCS];
    int64_t ok = 0, att = 0, st[NSTATUS], cas[NSTATUS], get[NSTATUS],
        cas_ok = 0, cert0, cert1, t0;
    sqllock_db *db;
    void *val = NULL;
    size_t len = 0;
    int64_t ver = 0;
    int i, s, failed = 0;

    (void)state;
    g_d = tu_shared_map(sizeof *g_d);
    snprintf(g_d_key, sizeof g_d_key, "galera-%ld-d", (long)getpid());
    t0 = tu_now_ms();
    for (i = 0; i < D_PROCS; i++)
        pids[i] = d_fork(i);
    cert0 = gl_wsrep_sum("WSREP_LOCAL_CERT_FAILURES");
    for (i = 0; i < D_PROCS; i++) {
        int code = tu_wait_for(pids[i], 120000 * (int64_t)g_slow);
        if (code != 0) {
            if (code == -1)
                tu_kill_wait(pids[i]);
            printf("    d: child %d: %s\n", i, g_d->bad[i]);
            failed++;
        }
    }
    cert1 = gl_wsrep_sum("WSREP_LOCAL_CERT_FAILURES");
    memset(st, 0, sizeof st);
    memset(cas, 0, sizeof cas);
    memset(get, 0, sizeof get);
    for (i = 0; i < D_PROCS; i++) {
        ok += g_d->ok[i];
        cas_ok += g_d->cas_ok[i];
        att += g_d->attempts[i];
        for (s = 0; s < NSTATUS; s++) {
            st[s] += g_d->st[i][s];
            cas[s] += g_d->cas_st[i][s];
            get[s] += g_d->get_st[i][s];
        }
    }
    printf("  d: statuses per call, all clients:\n");
    print_statuses("record_update", st);
    print_statuses("record_get", get);
    print_statuses("record_cas", cas);
    ok += cas_ok;
    if (failed)
        fail_msg("%d update client(s) failed", failed);
    db = gl_open_checker(2);
    TU_ASSERT_RC(sqllock_record_get(db, g_d_key, &val, &len, &ver), SQLLOCK_OK,
              db);
    printf("  d: %lld increments from 3 nodes (%lld by record_update in %lld "
           "attempts, %lld by get + cas) in %lld ms, certification failures "
           "%lld; the record reads %s (version %lld)\n", (long long)ok,
           (long long)(ok - cas_ok), (long long)att, (long long)cas_ok,
           (long long)(tu_now_ms() - t0), (long long)(cert1 - cert0), (char *)val,
           (long long)ver);
    if (atoll(val) != ok || ver != ok)
        fail_msg("O1: %lld successful increments, the record reads %s "
                 "(version %lld): an update was lost", (long long)ok,
                 (char *)val, (long long)ver);
    sqllock_free(val);
    TU_ASSERT_RC(sqllock_record_delete(db, g_d_key, ver), SQLLOCK_OK, db);
    sqllock_close(db);
    munmap(g_d, sizeof *g_d);
    g_d = NULL;
}

