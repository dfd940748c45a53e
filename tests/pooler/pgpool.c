/*
 * pooler/pgpool.c -- test_pooler through pgpool-II: raw mode reports no
 * success for what was not committed (e); streaming-replication mode with
 * pooler=pgpool (f).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdatomic.h>
#include <pthread.h>
#include <sys/stat.h>
#include <cmocka.h>

#include <libpq-fe.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "pooler/pooler.h"

/* ------------------------------------------------------------------ */
/* e, f: pgpool-II                                                      */
/* ------------------------------------------------------------------ */

#define POOL_TRIES 40

/* C2: pgpool-II in raw mode. Each try opens a new client connection (a
 * cron job's); a new backend's first statement runs inside a transaction
 * pgpool opened and aborts when the client leaves. Every grant reported
 * OK must have its row, with its owner and token, after the client has
 * gone; every compare-and-set reported OK must have counted. */
void test_pooler_e_C2_pgpool_raw_no_false_success(void **state)
{
    sqllock_db *direct = open_url(g_direct), *db;
    sqllock_lease *l;
    char name[128], key[128], owner[64], dir_out[1200], dir_err[1200];
    char buf[8192], val_owner[64], val_token[32];
    char *dir = tu_mkdtemp();
    const char *argv[9];
    int64_t token;
    int i, rc, code, ok = 0, eproxy = 0, cas_ok = 0, cas_eproxy = 0;
    int cli_ok = 0, cli_failed = 0;
    void *val = NULL;
    size_t len = 0;
    tu_row r;
    (void)state;

    assert_non_null(dir);
    snprintf(key, sizeof key, "pooler-pgpool-%ld", (long)getpid());
    for (i = 0; i < POOL_TRIES; i++) {
        tu_counter c;
        int step;

        snprintf(name, sizeof name, "pooler-pgpool-%ld-%d", (long)getpid(),
                 i);
        db = open_url(g_pgpool_raw);
        l = new_lease(db, name, 60000, 0);
        owner[0] = '\0';
        token = 0;
        /* Half the clients acquire first, half write first: each kind
         * of statement is some new backend's first. */
        for (step = 0; step < 2; step++) {
            if ((step == 0) == (i % 2 == 0)) {
                rc = sqllock_lease_try_acquire(l);
                if (rc == SQLLOCK_OK) {
                    ok++;
                    token = sqllock_lease_token(l);
                    snprintf(owner, sizeof owner, "%s",
                             sqllock_lease_owner(l));
                } else if (rc == SQLLOCK_EPROXY) {
                    eproxy++;
                } else {
                    fail_msg("acquire through pgpool raw: %s: %s",
                             sqllock_errname(rc), sqllock_errmsg(db));
                }
            } else {
                rc = sqllock_record_update(db, key, tu_counter_inc, &c, NULL,
                                           NULL);
                if (rc == SQLLOCK_OK)
                    cas_ok++;
                else if (rc == SQLLOCK_EPROXY)
                    cas_eproxy++;
                else
                    fail_msg("record update through pgpool raw: %s: %s",
                             sqllock_errname(rc), sqllock_errmsg(db));
            }
        }
        /* The lease is left held: the client goes, as a cron job's
         * `sqllock acquire` does. */
        sqllock_lease_free(l);
        sqllock_close(db);
        ASSERT_RC(tu_find(direct, name, &r), SQLLOCK_OK, direct);
        if (owner[0] != '\0' && (!r.found || strcmp(r.owner, owner) != 0 ||
                                 r.token != token))
            fail_msg("C2: try %d: the acquire reported OK (token %lld) but "
                     "the row is %s", i, (long long)token,
                     r.found ? "another's" : "not there");
        if (owner[0] == '\0' && r.found)
            fail_msg("C2: try %d: the acquire failed but its row is there",
                     i);
    }
    rc = sqllock_record_get(direct, key, &val, &len, NULL);
    if (cas_ok > 0) {
        EXPECT_RC(direct, rc, SQLLOCK_OK, "record_get");
        if (atoll(val) != cas_ok)
            fail_msg("C2: %d compare-and-set writes reported OK, the "
                     "counter is %s", cas_ok, (char *)val);
    }
    sqllock_free(val);
    /* The tool, as a cron job runs it: exit 0 and a token only for a
     * grant that is there. */
    snprintf(dir_out, sizeof dir_out, "%s/out", dir);
    snprintf(dir_err, sizeof dir_err, "%s/err", dir);
    for (i = 0; i < 12; i++) {
        snprintf(name, sizeof name, "pooler-pgpool-cli-%ld-%d",
                 (long)getpid(), i);
        argv[0] = SQLLOCK_CLI_PATH;
        argv[1] = "--db";
        argv[2] = g_pgpool_raw;
        argv[3] = "acquire";
        argv[4] = name;
        argv[5] = "--ttl";
        argv[6] = "60s";
        argv[7] = NULL;
        code = tu_wait_for(tu_spawn(argv, dir_out, dir_err, 1), 60000);
        ASSERT_RC(tu_find(direct, name, &r), SQLLOCK_OK, direct);
        if (code == 0) {
            tu_read_file(dir_out, buf, sizeof buf);
            if (!tu_get_var(buf, "SQLLOCK_OWNER", val_owner,
                            sizeof val_owner) ||
                !tu_get_var(buf, "SQLLOCK_TOKEN", val_token,
                            sizeof val_token))
                fail_msg("acquire printed no owner and token: %s", buf);
            if (!r.found || strcmp(r.owner, val_owner) != 0 ||
                r.token != atoll(val_token))
                fail_msg("C2: `sqllock acquire` exited 0 with token %s, but "
                         "the row is %s", val_token,
                         r.found ? "another's" : "not there");
            cli_ok++;
        } else {
            tu_read_file(dir_err, buf, sizeof buf);
            if (code != 69 || !tu_contains_ci(buf, "not committed"))
                fail_msg("`sqllock acquire` through pgpool raw: exit %d: %s",
                         code, buf);
            if (r.found)
                fail_msg("C2: `sqllock acquire` failed, but its row is "
                         "there");
            cli_failed++;
        }
    }
    unlink(dir_out);
    unlink(dir_err);
    tu_rmdir(dir);
    free(dir);
    printf("    e [pgpool-II raw] %d new clients: %d grants OK (each row "
           "there), %d EPROXY (none there); %d writes OK = the counter, %d "
           "EPROXY; `sqllock acquire`: %d exit 0 (row there), %d exit 69 "
           "(none)\n", POOL_TRIES, ok, eproxy, cas_ok, cas_eproxy, cli_ok,
           cli_failed);
    if (eproxy + cas_eproxy + cli_failed == 0)
        printf("    e: pgpool-II opened no transaction this time: every "
               "backend was a cached one\n");
    sqllock_close(direct);
}

/* 4 processes x 20 holds of one name through `url`, each on a new
 * connection, with a counter read, paused and written under the lease:
 * returns the counter (it must be 80); fails on any error or overlap. */
static int64_t pgpool_contention(const char *url, const char *name)
{
    und_shared *sh = tu_shared_map(sizeof *sh);
    pid_t pids[4];
    int64_t n;
    int i, st;

    for (i = 0; i < 4; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            sqllock_db *db = NULL;
            sqllock_lease *l = NULL;
            sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
            sqllock_options dbo = SQLLOCK_OPTIONS_INIT;
            int k, rc;

            o.ttl_ms = 30000;
            o.backoff_max_ms = 100;
            /* The stall this guards against lasts the whole statement
             * timeout: keep it short, so that it fails the test fast. */
            dbo.statement_timeout_ms = 5000 * g_slow;
            for (k = 0; k < 20; k++) {
                rc = sqllock_open(url, &dbo, &db);
                if (rc == SQLLOCK_OK)
                    rc = sqllock_lease_new(db, name, &o, &l);
                if (rc == SQLLOCK_OK)
                    rc = sqllock_lease_acquire(l, 60000);
                if (rc == SQLLOCK_OK) {
                    int64_t v;
                    if (atomic_fetch_add(&sh->holders, 1) != 0)
                        atomic_fetch_add(&sh->overlaps, 1);
                    v = sh->counter;
                    tu_sleep_us(1000);
                    sh->counter = v + 1;
                    atomic_fetch_sub(&sh->holders, 1);
                    rc = sqllock_lease_release(l);
                }
                if (rc == SQLLOCK_OK)
                    atomic_fetch_add(&sh->ok, 1);
                else {
                    atomic_fetch_add(&sh->other, 1);
                    snprintf(sh->other_msg, sizeof sh->other_msg, "%s: %s",
                             sqllock_errname(rc), sqllock_errmsg(db));
                }
                sqllock_lease_free(l);
                sqllock_close(db);
                l = NULL;
                db = NULL;
            }
            _exit(0);
        }
    }
    for (i = 0; i < 4; i++)
        assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
    if (atomic_load(&sh->other) != 0)
        fail_msg("through pgpool-II streaming mode: %s", sh->other_msg);
    assert_int_equal(atomic_load(&sh->overlaps), 0);
    n = sh->counter;
    munmap(sh, sizeof *sh);
    assert_int_equal(n, 80);
    return n;
}

/* pgpool-II in streaming-replication mode (here one primary), with
 * pooler=pgpool: 4 processes contend with an exact counter, waking each
 * other through a LISTEN past pgpool (listen_host) or by polling; a
 * release wakes a waiter at once through listen_host. (Without
 * pooler=pgpool a waiter LISTENs through pgpool, and the statement after
 * a wake-up stalled for the whole statement timeout in 2 of 3 such runs
 * on pgpool-II 4.3.) */
void test_pooler_f_L9_pgpool_streaming_mode(void **state)
{
    char name[128];
    int64_t t, t0;
    (void)state;

    snprintf(name, sizeof name, "pooler-sr-%ld", (long)getpid());
    t0 = tu_now_ms();
    pgpool_contention(g_pgpool_sr, name);
    printf("    f [pgpool-II streaming, listen_host] 4 x 20 holds, counter "
           "80, %lld ms\n", (long long)(tu_now_ms() - t0));
    t0 = tu_now_ms();
    pgpool_contention(g_pgpool_sr_poll, name);
    printf("    f [pgpool-II streaming, polling] 4 x 20 holds, counter 80, "
           "%lld ms\n", (long long)(tu_now_ms() - t0));
    snprintf(name, sizeof name, "pooler-sr-wake-%ld", (long)getpid());
    t = handoff_ms(g_direct, g_pgpool_sr, name, 20000 * (int64_t)g_slow,
                   1);
    printf("    f [pgpool-II streaming, listen_host] a waiter woken %lld ms "
           "after the release (backoff %d s)\n", (long long)t, 20 * g_slow);
    if (t > 1500 * g_slow)
        fail_msg("L9 through pgpool-II with listen_host: the waiter took "
                 "%lld ms", (long long)t);
}

