/*
 * stress.c -- test_reaper: many reapers beside many lock
 * users (P2).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "reaper.h"

/* ------------------------------------------------------------------ */
/* Many reapers beside many lock users (P2)                            */
/* ------------------------------------------------------------------ */

#define ST_WORKERS 8
#define ST_REAPERS 3
#define ST_NAMES 3
#define ST_RUN_MS 4000
/* On a slow machine (valgrind beside other work) ST_RUN_MS can end after
 * a handful of cycles: the workers then go on until the run has done
 * what it is there to test (st_enough()), for up to this much longer. */
#define ST_RUN_MORE_MS 120000

typedef struct st_shared {
    int64_t increments;        /* counter writes the fence let through */
    int64_t fenced_late;       /* writes fenced out after the holder's
                                  local deadline had passed: allowed */
    int64_t fenced_valid;      /* fenced out while the holder's lease was
                                  still valid: another owner got in
                                  during a valid lease (L1 broken) */
    int64_t cycles;            /* acquires of the shared names */
    int64_t renewals_valid;    /* renewals sent while valid */
    int64_t releases_valid;    /* releases sent while valid */
    int64_t releases_late;     /* releases sent after the local deadline */
    int64_t abandoned_shared;  /* leases on shared names left to expire */
    int64_t abandoned_unique;  /* leases on names nobody takes again */
    int64_t lost_valid;        /* renew/release of a valid lease: LOST,
                                  answered before the local deadline */
    int64_t lost_late;         /* LOST answered after it: allowed */
    int64_t token_errors;
    int64_t last_token[ST_NAMES];
    int64_t reaped[ST_REAPERS];
    int64_t passes[ST_REAPERS];
    int64_t errors[ST_REAPERS];
    int stop_reapers;
    int reapers_running;
    char why[ST_WORKERS + ST_REAPERS][256];
} st_shared;

/*
 * The names' counters, fenced by the lease's token (L5), so that the
 * counters stay exact whatever the timing: a holder first raises the
 * counter's fence to its token (refused if a newer holder already did),
 * then reads, then writes only where the fence is still its own. A write
 * from a holder that overran its lease -- a statement that waited longer
 * than the lease lasted, as SQLite's busy wait can under a sanitizer --
 * is refused instead of losing another holder's increment. A write
 * refused while the holder's lease was still valid by its own clock means
 * another owner got the name during a valid lease: that fails the test.
 */
typedef struct st_fenced_sql {
    const char *ddl;
    const char *insert;        /* 1 id */
    const char *take;          /* 1 token, 2 id, 3 token */
    const char *read;          /* 1 id -> value */
    const char *write;         /* 1 value, 2 id, 3 token */
    const char *del;           /* 1 id */
} st_fenced_sql;

static const st_fenced_sql *st_fenced_for(const char *driver)
{
    static const st_fenced_sql q = {
        "CREATE TABLE IF NOT EXISTS sqllock_test_fenced (id BIGINT PRIMARY "
        "KEY, value BIGINT NOT NULL, fence BIGINT NOT NULL)",
        "INSERT INTO sqllock_test_fenced (id, value, fence) VALUES (?, 0, 0)",
        "UPDATE sqllock_test_fenced SET fence = ? WHERE id = ? AND fence < ?",
        "SELECT value FROM sqllock_test_fenced WHERE id = ?",
        "UPDATE sqllock_test_fenced SET value = ? WHERE id = ? AND fence = ?",
        "DELETE FROM sqllock_test_fenced WHERE id = ?",
    };
    static const st_fenced_sql pg = {
        "CREATE TABLE IF NOT EXISTS sqllock_test_fenced (id BIGINT PRIMARY "
        "KEY, value BIGINT NOT NULL, fence BIGINT NOT NULL)",
        "INSERT INTO sqllock_test_fenced (id, value, fence) VALUES ($1, 0, 0)",
        "UPDATE sqllock_test_fenced SET fence = $1 WHERE id = $2 AND fence < $3",
        "SELECT value FROM sqllock_test_fenced WHERE id = $1",
        "UPDATE sqllock_test_fenced SET value = $1 WHERE id = $2 AND fence = $3",
        "DELETE FROM sqllock_test_fenced WHERE id = $1",
    };
    return strcmp(driver, "postgres") == 0 ? &pg : &q;
}

typedef struct st_ctx {
    st_shared *sh;
    const tu_sql *sql;
    const st_fenced_sql *fsql;
    int64_t counter_id;        /* name k's counter is counter_id + k */
    char prefix[100];
} st_ctx;

static void st_note(st_ctx *c, int slot, const char *fmt, ...)
{
    va_list ap;

    if (c->sh->why[slot][0] != '\0')
        return;
    va_start(ap, fmt);
    vsnprintf(c->sh->why[slot], sizeof c->sh->why[slot], fmt, ap);
    va_end(ap);
}

static int st_exec(sqllock_db *db, const char *sql, sqllock_value *args,
                   int nargs, int *has_row, int64_t *first, int64_t *affected)
{
    int rc = SQLLOCK_EDBBUSY, i;

    for (i = 0; i < 50 && rc == SQLLOCK_EDBBUSY; i++) {
        rc = sqllock__exec_sql(db, sql, args, nargs, has_row, first,
                               affected);
        if (rc == SQLLOCK_EDBBUSY)
            tu_sleep_ms(10);
    }
    return rc;
}


static void atomic_max(int64_t *p, int64_t v)
{
    int64_t cur = __atomic_load_n(p, __ATOMIC_SEQ_CST);

    while (cur < v && !__atomic_compare_exchange_n(p, &cur, v, 0,
                                                   __ATOMIC_SEQ_CST,
                                                   __ATOMIC_SEQ_CST))
        ;
}

#define ST_ADD(c, field)                                                       \
    __atomic_add_fetch(&(c)->sh->field, 1, __ATOMIC_SEQ_CST)

/* A fenced statement was refused: a newer holder of the name has begun.
 * Fine if this holder's lease had run out by its own clock meanwhile;
 * L1 broken if it had not. */
static void st_fenced_out(st_ctx *c, int w, const sqllock_lease *l,
                          const char *name, const char *step)
{
    if (sqllock_lease_remaining_ms(l) > 0) {
        ST_ADD(c, fenced_valid);
        st_note(c, w, "worker %d: L1: %s of %s refused by a newer token "
                "while lease %lld was still valid", w, step, name,
                (long long)sqllock_lease_token(l));
    } else {
        ST_ADD(c, fenced_late);
    }
}

/*
 * A LOST answer to a renewal or release sent when the lease had `left`
 * ms to go by the local clock (looked at `t0`). If the answer came back
 * before that deadline, the statement ran while the lease was valid by
 * the server's clock too: a valid lease was taken away (P1/P2 broken).
 * If it came back later, the process may have been starved between its
 * look and its send (TSan, valgrind, a loaded machine): the statement
 * reached the server after the lease ran out, and the holder was told,
 * as L6 asks -- counted apart, not a failure.
 */
static int st_lost_while_valid(st_ctx *c, int64_t t0, int64_t left)
{
    if (tu_now_ms() - t0 < left) {
        ST_ADD(c, lost_valid);
        return 1;
    }
    ST_ADD(c, lost_late);
    return 0;
}

/* A lock user: until the run's end, takes one of the shared names with a
 * short lease, bumps the counter under it, sometimes renews, and either
 * releases or abandons it; now and then also abandons a lease on a name
 * of its own. Returns 0, or a failure code with the reason noted. */
#define ST_GET(c, field) __atomic_load_n(&(c)->sh->field, __ATOMIC_SEQ_CST)

/* Whether the run has done what the test judges: a few cycles per
 * worker, leases abandoned on shared and on unique names, renewals. */
static int st_enough(st_ctx *c)
{
    return ST_GET(c, cycles) >= 2 * ST_WORKERS &&
           ST_GET(c, abandoned_unique) > 0 &&
           ST_GET(c, abandoned_shared) > 0 && ST_GET(c, renewals_valid) > 0;
}

static int st_worker(st_ctx *c, int w, int64_t end_ms)
{
    sqllock_db *db = tu_child_open(g_url, "reaper worker");
    unsigned seed = (unsigned)getpid() * 2654435761u;
    int iter = 0;

    if (db == NULL)
        return 2;
    while (tu_now_ms() < end_ms ||
           (!st_enough(c) && tu_now_ms() < end_ms + ST_RUN_MORE_MS)) {
        sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
        sqllock_lease *l = NULL;
        sqllock_value args[3];
        char name[200];
        int k = (int)(rand_r(&seed) % ST_NAMES), rc = SQLLOCK_OK, has_row = 0;
        int64_t token, value = -1, affected = 0, t0, left;
        int gone = 0;

        /* The margin is half the ttl: the client's view ends 150-250 ms
         * before the server's, so a slow machine (valgrind) does not
         * send a "valid" renewal that arrives after the expiry. */
        o.ttl_ms = 300 + rand_r(&seed) % 201;
        o.safety_margin_ms = o.ttl_ms / 2;
        o.backoff_min_ms = 1;
        o.backoff_max_ms = 20;
        snprintf(name, sizeof name, "%sshared-%d", c->prefix, k);
        rc = sqllock_lease_new(db, name, &o, &l);
        if (rc == SQLLOCK_OK)
            rc = sqllock_lease_acquire(l, 60000);
        if (rc != SQLLOCK_OK) {
            st_note(c, w, "worker %d: acquire %s: %s: %s", w, name,
                    sqllock_errname(rc), sqllock_errmsg(db));
            sqllock_lease_free(l);
            sqllock_close(db);
            return 3;
        }
        ST_ADD(c, cycles);
        token = sqllock_lease_token(l);
        if (sqllock_lease_remaining_ms(l) > 0) {
            int64_t prev = __atomic_load_n(&c->sh->last_token[k],
                                           __ATOMIC_SEQ_CST);
            atomic_max(&c->sh->last_token[k], token);
            /* Judged only if the lease was still ours after the look:
             * otherwise a later holder may rightly have stored more. */
            if (token <= prev && sqllock_lease_remaining_ms(l) > 0) {
                ST_ADD(c, token_errors);
                st_note(c, w, "worker %d: L5: token %lld on %s after %lld",
                        w, (long long)token, name, (long long)prev);
            }
        }
        /* Fence, read, maybe renew, write the name's counter (see
         * st_fenced_sql): each step only while the lease is valid by the
         * local clock. */
        if (sqllock_lease_remaining_ms(l) > 0) {
            args[0] = sqllock__int(token);
            args[1] = sqllock__int(c->counter_id + k);
            args[2] = sqllock__int(token);
            rc = st_exec(db, c->fsql->take, args, 3, NULL, NULL, &affected);
            if (rc != SQLLOCK_OK) {
                st_note(c, w, "worker %d: fence counter: %s: %s", w,
                        sqllock_errname(rc), sqllock_errmsg(db));
                sqllock_lease_free(l);
                sqllock_close(db);
                return 4;
            }
            if (affected != 1)
                st_fenced_out(c, w, l, name, "fence");
            args[0] = sqllock__int(c->counter_id + k);
            if (affected == 1)
                rc = st_exec(db, c->fsql->read, args, 1, &has_row, &value,
                             NULL);
            if (rc != SQLLOCK_OK || (affected == 1 && !has_row)) {
                st_note(c, w, "worker %d: read counter: %s: %s", w,
                        sqllock_errname(rc), sqllock_errmsg(db));
                sqllock_lease_free(l);
                sqllock_close(db);
                return 4;
            }
        }
        if (value >= 0 && rand_r(&seed) % 2 == 0) {
            tu_sleep_us((long)(rand_r(&seed) % 3000));
            t0 = tu_now_ms();
            if ((left = sqllock_lease_remaining_ms(l)) > 0) {
                ST_ADD(c, renewals_valid);
                rc = sqllock_lease_renew(l);
                if (rc == SQLLOCK_LOST) {
                    gone = 1;
                    if (st_lost_while_valid(c, t0, left))
                        st_note(c, w, "worker %d: renewal of a valid lease "
                                "on %s: LOST: %s", w, name,
                                sqllock_errmsg(db));
                } else if (rc != SQLLOCK_OK) {
                    st_note(c, w, "worker %d: renew %s: %s: %s", w, name,
                            sqllock_errname(rc), sqllock_errmsg(db));
                    sqllock_lease_free(l);
                    sqllock_close(db);
                    return 5;
                }
            }
        }
        if (value >= 0 && sqllock_lease_remaining_ms(l) > 0) {
            args[0] = sqllock__int(value + 1);
            args[1] = sqllock__int(c->counter_id + k);
            args[2] = sqllock__int(token);
            rc = st_exec(db, c->fsql->write, args, 3, NULL, NULL, &affected);
            if (rc != SQLLOCK_OK) {
                st_note(c, w, "worker %d: write counter: %s: %s", w,
                        sqllock_errname(rc), sqllock_errmsg(db));
                sqllock_lease_free(l);
                sqllock_close(db);
                return 6;
            }
            if (affected == 1)
                ST_ADD(c, increments);
            else
                st_fenced_out(c, w, l, name, "write");
        }
        t0 = tu_now_ms();
        if (gone) {
            /* LOST above ended the hold: nothing to release. */
        } else if (rand_r(&seed) % 8 == 0) {
            /* Left to expire: a reaper or the next holder removes it. */
            ST_ADD(c, abandoned_shared);
        } else if ((left = sqllock_lease_remaining_ms(l)) > 0) {
            ST_ADD(c, releases_valid);
            rc = sqllock_lease_release(l);
            if (rc == SQLLOCK_LOST) {
                if (st_lost_while_valid(c, t0, left))
                    st_note(c, w, "worker %d: release of a valid lease on "
                            "%s: LOST: %s", w, name, sqllock_errmsg(db));
            } else if (rc != SQLLOCK_OK) {
                st_note(c, w, "worker %d: release %s: %s: %s", w, name,
                        sqllock_errname(rc), sqllock_errmsg(db));
                sqllock_lease_free(l);
                sqllock_close(db);
                return 7;
            }
        } else {
            /* Too slow: either answer is right now. */
            ST_ADD(c, releases_late);
            rc = sqllock_lease_release(l);
            if (rc != SQLLOCK_OK && rc != SQLLOCK_LOST) {
                st_note(c, w, "worker %d: late release %s: %s: %s", w, name,
                        sqllock_errname(rc), sqllock_errmsg(db));
                sqllock_lease_free(l);
                sqllock_close(db);
                return 8;
            }
        }
        sqllock_lease_free(l);
        l = NULL;

        if (rand_r(&seed) % 4 == 0) {
            /* A name nobody takes again: only a reaper removes it. */
            snprintf(name, sizeof name, "%sown-%d-%d", c->prefix, w, iter);
            o.ttl_ms = 100 + rand_r(&seed) % 200;
            o.safety_margin_ms = 0;
            rc = sqllock_lease_new(db, name, &o, &l);
            if (rc == SQLLOCK_OK)
                rc = sqllock_lease_try_acquire(l);
            if (rc != SQLLOCK_OK) {
                st_note(c, w, "worker %d: acquire %s: %s: %s", w, name,
                        sqllock_errname(rc), sqllock_errmsg(db));
                sqllock_lease_free(l);
                sqllock_close(db);
                return 9;
            }
            ST_ADD(c, abandoned_unique);
            sqllock_lease_free(l);
        }
        iter++;
    }
    sqllock_close(db);
    return 0;
}

/* A reaper process: a reaper thread every 10 ms until told to stop. */
static int st_reaper(st_ctx *c, int i)
{
    sqllock_reaper_options o = SQLLOCK_REAPER_OPTIONS_INIT;
    sqllock_reaper_stats st;
    sqllock_reaper *rp = NULL;
    char why[256];
    int rc;

    o.interval_ms = 10;
    o.batch = 1 + i * 2;           /* 1, 3, 5: small, to make many batches */
    rc = sqllock_reaper_start(g_url, &o, &rp, why, sizeof why);
    if (rc != SQLLOCK_OK) {
        st_note(c, ST_WORKERS + i, "reaper %d: start: %s: %s", i,
                sqllock_errname(rc), why);
        return 2;
    }
    __atomic_add_fetch(&c->sh->reapers_running, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&c->sh->stop_reapers, __ATOMIC_SEQ_CST))
        tu_sleep_ms(5);
    /* The counters move at the end of a pass: let the pass in progress,
     * which may have deleted the last rows, finish and one more run. */
    sqllock_reaper_stats_get(rp, &st);
    {
        int64_t want = st.passes + 2, give_up = tu_now_ms() + 30000;
        while (st.passes < want && tu_now_ms() < give_up) {
            tu_sleep_ms(5);
            sqllock_reaper_stats_get(rp, &st);
        }
    }
    sqllock_reaper_stop(rp);
    c->sh->reaped[i] = st.reaped;
    c->sh->passes[i] = st.passes;
    c->sh->errors[i] = st.errors;
    if (st.errors != 0)
        st_note(c, ST_WORKERS + i, "reaper %d: %lld of %lld passes failed, "
                "the last with %s: %s", i, (long long)st.errors,
                (long long)st.passes, sqllock_errname(st.last_status),
                st.last_error);
    return 0;
}

static int st_wait(pid_t pid, const char *what, int i)
{
    int status = 0;
    pid_t r;

    do
        r = waitpid(pid, &status, 0);
    while (r < 0 && errno == EINTR);
    if (r != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "%s %d: %s %d\n", what, i,
                r == pid && WIFEXITED(status) ? "exit" : "signal/wait",
                r == pid && WIFEXITED(status) ? WEXITSTATUS(status)
                                               : WTERMSIG(status));
        return 1;
    }
    return 0;
}

/* P2 (with P1, L1, L4, L5): 8 processes take, renew, release and abandon
 * short leases (ttl 300-500 ms) on 3 names and on names of their own,
 * while 3 reaper threads in 3 other processes reap every 10 ms. No valid
 * lease disappears (no renewal or release sent within the local deadline
 * reports LOST), each name's counter, bumped under its lock, ends
 * exact, tokens grow on every name, no reaper pass fails, the reapers
 * together deleted at least the leases abandoned on names nobody takes
 * again (only a reaper can remove those; the others may also go to a
 * takeover, so more is not exact), and at the end no row of the run is
 * left. */
void test_reaper_P2_many_reapers_beside_users(void **state)
{
    fixture *f = *state;
    st_shared *sh = tu_shared_map(sizeof *sh);
    pid_t workers[ST_WORKERS], reapers[ST_REAPERS];
    sqllock_value v;
    st_ctx c;
    int64_t end, reaped = 0, value = -1, give_up;
    int i, failed = 0, left = -1, has_row = 0;
    snap s;

    memset(&c, 0, sizeof c);
    c.sh = sh;
    c.sql = f->sql;
    c.fsql = st_fenced_for(f->driver);
    c.counter_id = (int64_t)getpid() * 100 + 77;
    snprintf(c.prefix, sizeof c.prefix, "reap-%ld-p2-", (long)getpid());
    ASSERT_RC(sqllock__exec_sql(f->db, c.fsql->ddl, NULL, 0, NULL,
                                NULL, NULL), SQLLOCK_OK, f->db);
    for (i = 0; i < ST_NAMES; i++) {
        v = sqllock__int(c.counter_id + i);
        (void)sqllock__exec_sql(f->db, c.fsql->del, &v, 1, NULL, NULL, NULL);
        ASSERT_RC(sqllock__exec_sql(f->db, c.fsql->insert, &v, 1,
                                    NULL, NULL, NULL), SQLLOCK_OK, f->db);
    }

    /* The children must not inherit an open handle (valgrind would count
     * its memory as theirs, and SQLite forbids using a connection across
     * fork()): the group's handle is closed, and opened again after. */
    sqllock_close(f->db);
    f->db = NULL;
    fflush(stdout);
    fflush(stderr);
    for (i = 0; i < ST_REAPERS; i++) {
        reapers[i] = fork();
        assert_true(reapers[i] >= 0);
        if (reapers[i] == 0)
            _exit(st_reaper(&c, i));
    }
    give_up = tu_now_ms() + 30000;
    while (__atomic_load_n(&sh->reapers_running, __ATOMIC_SEQ_CST) <
           ST_REAPERS && tu_now_ms() < give_up)
        tu_sleep_ms(5);
    end = tu_now_ms() + ST_RUN_MS;
    for (i = 0; i < ST_WORKERS; i++) {
        workers[i] = fork();
        assert_true(workers[i] >= 0);
        if (workers[i] == 0)
            _exit(st_worker(&c, i, end));
    }
    for (i = 0; i < ST_WORKERS; i++)
        failed += st_wait(workers[i], "reaper test worker", i);
    ASSERT_RC(sqllock_open(g_url, NULL, &f->db), SQLLOCK_OK, f->db);

    /* Every abandoned lease expires within 500 ms; the reapers must then
     * remove all of them. */
    give_up = tu_now_ms() + 30000;
    for (;;) {
        rp_snap_take(f->db, &s);
        left = rp_count_prefix(&s, c.prefix);
        rp_snap_free(&s);
        if (left == 0 || tu_now_ms() > give_up)
            break;
        tu_sleep_ms(20);
    }
    __atomic_store_n(&sh->stop_reapers, 1, __ATOMIC_SEQ_CST);
    for (i = 0; i < ST_REAPERS; i++)
        failed += st_wait(reapers[i], "reaper test reaper", i);

    value = 0;
    for (i = 0; i < ST_NAMES; i++) {
        int64_t one = -1;

        v = sqllock__int(c.counter_id + i);
        assert_int_equal(sqllock__exec_sql(f->db, c.fsql->read, &v,
                                           1, &has_row, &one, NULL),
                         SQLLOCK_OK);
        assert_true(has_row);
        value += one;
        (void)sqllock__exec_sql(f->db, c.fsql->del, &v, 1, NULL, NULL, NULL);
    }
    for (i = 0; i < ST_REAPERS; i++)
        reaped += sh->reaped[i];
    printf("P2 on %s: %lld cycles, %lld increments (%lld fenced out after "
           "their lease ran out), %lld renewals and %lld "
           "releases while valid, %lld late releases, %lld LOST answered "
           "after the local deadline, %lld + %lld abandoned, reaped %lld in %lld + %lld + %lld passes\n", f->driver,
           (long long)sh->cycles, (long long)sh->increments,
           (long long)sh->fenced_late,
           (long long)sh->renewals_valid, (long long)sh->releases_valid,
           (long long)sh->releases_late, (long long)sh->lost_late,
           (long long)sh->abandoned_shared,
           (long long)sh->abandoned_unique, (long long)reaped,
           (long long)sh->passes[0], (long long)sh->passes[1],
           (long long)sh->passes[2]);
    for (i = 0; i < ST_WORKERS + ST_REAPERS; i++)
        if (sh->why[i][0] != '\0')
            fprintf(stderr, "  %s\n", sh->why[i]);
    {
        st_shared copy = *sh;
        munmap(sh, sizeof *sh);
        if (failed != 0)
            fail_msg("%d processes failed (reasons above)", failed);
        if (copy.lost_valid != 0)
            fail_msg("P1/P2 broken: %lld renewals or releases of leases "
                     "still valid by the local clock reported LOST before "
                     "the local deadline",
                     (long long)copy.lost_valid);
        if (copy.fenced_valid != 0)
            fail_msg("L1 broken: %lld counter steps were fenced out by a "
                     "newer token while the holder's lease was still valid",
                     (long long)copy.fenced_valid);
        if (copy.token_errors != 0)
            fail_msg("L5 broken: %lld tokens were not above the name's "
                     "previous one", (long long)copy.token_errors);
        if (value != copy.increments)
            fail_msg("L1 broken: the names' counters add up to %lld after "
                     "%lld increments under the locks", (long long)value,
                     (long long)copy.increments);
        for (i = 0; i < ST_REAPERS; i++)
            if (copy.errors[i] != 0)
                fail_msg("P2: reaper %d had %lld failed passes (above)", i,
                         (long long)copy.errors[i]);
        if (left != 0)
            fail_msg("P1: %d rows of the run were still there 30 s after "
                     "the last lease was taken", left);
        if (reaped < copy.abandoned_unique)
            fail_msg("the reapers counted %lld rows, fewer than the %lld "
                     "leases abandoned on names nobody took again",
                     (long long)reaped, (long long)copy.abandoned_unique);
        if (copy.cycles < ST_WORKERS || copy.abandoned_unique == 0 ||
            copy.abandoned_shared == 0 || copy.renewals_valid == 0)
            fail_msg("the run was too short to test anything: %lld cycles",
                     (long long)copy.cycles);
    }
}
