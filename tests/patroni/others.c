/*
 * others.c -- test_patroni's other clients: row locks (a counter
 * incremented inside the row-lock transaction), versioned-record
 * updates (CAS), leader candidates, the kill-patroni probe (a row lock
 * and a lease on each primary at once), and the `sqllock run` loops.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "patroni.h"

#ifndef SQLLOCK_CLI_PATH
#error "SQLLOCK_CLI_PATH must name the built sqllock tool"
#endif
#ifndef SQLLOCK_HISTORY_TOOL
#error "SQLLOCK_HISTORY_TOOL must name the built sqllock_test_history"
#endif

/* The server port of `db`'s connection (inside its transaction, if one
 * is open), or 0. */
static int server_port(sqllock_db *db)
{
    int64_t v = 0;
    int has = 0;

    if (sqllock_db_exec(db, "SELECT inet_server_port()", NULL, 0, &has, &v,
                        NULL) != SQLLOCK_OK || !has)
        return 0;
    return (int)v;
}

/* ------------------------------------------------------------------ */
/* Row locks (R1, R4)                                                   */
/* ------------------------------------------------------------------ */

/* BEGIN; SELECT id FROM patroni_rowcount WHERE id = 1 FOR UPDATE; read n;
 * a read-pause-write of a counter in shared memory (the section, from
 * the grant until the commit is sent: two at once is an overlap);
 * UPDATE ... SET n = <read + 1> and COMMIT in one round trip. The row's
 * final n must count every acknowledged commit and nothing beyond the
 * undecided ones. */
int pt_row_main(pt_client *c, int idx)
{
    sqllock_db *db = pt_open(pt_url(c->route));
    sqllock_txn_options to = SQLLOCK_TXN_OPTIONS_INIT;
    sqllock_table t = { T_ROW, "id", NULL };
    sqllock_cell key = SQLLOCK_NUMBER(1);
    unsigned seed = (unsigned)getpid() * 7919u + (unsigned)idx;

    if (db == NULL)
        return 0;
    to.lock_timeout_ms = 2000 * (int64_t)g_slow;
    while (pt_running()) {
        sqllock_txn *txn = NULL;
        sqllock_cell set[2];
        int64_t t0 = tu_now_us(), v = 0, sv, aff = 0;
        int rc, got = 0, has = 0, n;

        rc = sqllock_txn_begin(db, &to, &txn);
        if (rc == SQLLOCK_OK)
            rc = sqllock_txn_lock_rows(txn, &t, &key, 1, SQLLOCK_LOCK_WAIT,
                                       &got);
        pt_count(c, db, rc, t0, "lock_rows");
        if (rc != SQLLOCK_OK || got != 1) {
            sqllock_txn_free(txn);
            pt_pause_after(rc, &seed);
            continue;
        }
        n = ADD(&g_sh->row_inside, 1) + 1;
        ADD(&g_sh->row_sections, 1);
        if (n > 1) {
            int k = (int)ADD(&g_sh->row_overlaps, 1);
            int p = LD(&g_sh->phase);

            if (p == PH_KILL_PATRONI)
                ADD(&g_sh->row_overlaps_kp, 1);
            if (k < PT_ROW_OV_MAX) {
                g_sh->row_ov[k].t_us = tu_now_us();
                g_sh->row_ov[k].phase = p;
                g_sh->row_ov[k].route = c->route;
                g_sh->row_ov[k].port = server_port(db);
            }
        }
        rc = sqllock_db_exec(db, "SELECT n FROM " T_ROW " WHERE id = $1",
                             &key, 1, &has, &v, NULL);
        sv = LD(&g_sh->row_shm);
        tu_sleep_us(1000 + (long)(rand_r(&seed) % 3000));
        ST(&g_sh->row_shm, sv + 1);
        ADD(&g_sh->row_inside, -1);
        pt_count(c, db, rc, t0, "select");
        if (rc != SQLLOCK_OK || !has) {
            sqllock_txn_free(txn);
            pt_pause_after(rc, &seed);
            continue;
        }
        set[0] = (sqllock_cell)SQLLOCK_NUMBER(v + 1);
        set[1] = (sqllock_cell)SQLLOCK_NUMBER(1);
        t0 = tu_now_us();
        rc = sqllock_txn_commit_exec(txn, "UPDATE " T_ROW " SET n = $1 "
                                     "WHERE id = $2", set, 2, &aff);
        pt_count(c, db, rc, t0, "commit_exec");
        if (rc == SQLLOCK_OK) {
            ADD(&g_sh->row_acked, 1);
            if (aff != 1)
                pt_bad(c, "the row-lock transaction's UPDATE changed %lld "
                       "rows", (long long)aff);
            pt_granted(c, db, t0, "row");
        } else if (strcmp(tu_hist_outcome(rc), "info") == 0) {
            ADD(&g_sh->row_undecided, 1);
        }
        sqllock_txn_free(txn);
        pt_pause_after(rc, &seed);
        tu_sleep_ms(2 + (int64_t)(rand_r(&seed) % 8));
    }
    sqllock_close(db);
    return c->bad[0] != '\0';
}

/* ------------------------------------------------------------------ */
/* Versioned records (O1, O2)                                           */
/* ------------------------------------------------------------------ */

/* sqllock_record_update() increments a counter record; each call is a
 * write of N_CAS in the history (token 0: no lease), and the record's
 * final value must count every acknowledged one (H6). */
int pt_cas_main(pt_client *c, int idx)
{
    sqllock_db *db = pt_open(pt_url(c->route));
    sqllock_retry_options ro = SQLLOCK_RETRY_OPTIONS_INIT;
    unsigned seed = (unsigned)getpid() * 7919u + (unsigned)idx;
    tu_counter ctr;

    if (db == NULL)
        return 0;
    ro.max_attempts = 64;
    while (pt_running()) {
        int64_t t0 = tu_now_us(), seq;
        int rc, attempts = 0;

        seq = tu_hist_invoke(g_hist, c->who, "write", N_CAS, 0, 0);
        rc = sqllock_record_update(db, N_CAS, tu_counter_inc, &ctr, &ro,
                                   &attempts);
        tu_hist_complete(g_hist, c->who, seq, tu_hist_outcome(rc), 0);
        pt_count(c, db, rc, t0, "record_update");
        if (rc == SQLLOCK_OK) {
            ADD(&g_sh->cas_acked, 1);
            pt_granted(c, db, t0, "cas");
        } else if (strcmp(tu_hist_outcome(rc), "info") == 0) {
            ADD(&g_sh->cas_undecided, 1);
        }
        pt_pause_after(rc, &seed);
        tu_sleep_ms(3 + (int64_t)(rand_r(&seed) % 10));
    }
    sqllock_close(db);
    return c->bad[0] != '\0';
}

/* ------------------------------------------------------------------ */
/* Leader candidates (M4)                                               */
/* ------------------------------------------------------------------ */

static void on_elected(void *ctx, sqllock_leader *l, int64_t token)
{
    pt_client *c = ctx;

    (void)l;
    (void)token;
    c->elected++;
    if (ADD(&g_sh->leader_cb_inside, 1) + 1 > 1)
        ADD(&g_sh->leader_cb_overlaps, 1);
}

static void on_lost(void *ctx, sqllock_leader *l, int64_t token, int status,
                    const char *msg)
{
    pt_client *c = ctx;

    (void)l;
    (void)token;
    (void)msg;
    c->lost_by[status >= 0 && status < NST ? status : SQLLOCK_EDB]++;
    ADD(&g_sh->leader_cb_inside, -1);
}

/* A candidate; its main thread acts as the leader while
 * sqllock_leader_is_leader() says so (L6: it is 0 past the local
 * deadline): each term is a section of N_LEADER, each action a
 * read-pause-write of a counter recorded as a write of the term. Terms
 * must grow (L5). */
int pt_leader_main(pt_client *c, int idx)
{
    sqllock_options dbo = SQLLOCK_OPTIONS_INIT;
    sqllock_leader_options o = SQLLOCK_LEADER_OPTIONS_INIT;
    sqllock_leader *L = NULL;
    unsigned seed = (unsigned)getpid() * 7919u + (unsigned)idx;
    int64_t cur = 0, dl = 0;
    int in = 0, rc;
    char why[300];

    dbo.connect_timeout_ms = 2000 * (int64_t)g_slow;
    dbo.statement_timeout_ms = g_stmt_ms;
    /* Not scaled by the load: terms short enough to end in the longer
     * outages even on a loaded machine, so that leadership changes hands
     * (is_leader() judges by the local deadline whatever the load). */
    o.ttl_ms = 6000 * (int64_t)tu_slowdown_tool();
    o.db_options = &dbo;
    o.holder = c->who;
    o.on_elected = on_elected;
    o.on_lost = on_lost;
    o.ctx = c;
    while (pt_running()) {
        int64_t t0 = tu_now_us();

        rc = sqllock_leader_start(pt_url(c->route), N_LEADER, &o, &L, why,
                                  sizeof why);
        pt_count(c, NULL, rc, t0, "leader_start");
        if (rc == SQLLOCK_OK)
            break;
        pt_pause_after(rc, &seed);
    }
    while (L != NULL && pt_running()) {
        int64_t now = tu_now_us();

        if (sqllock_leader_is_leader(L)) {
            int64_t tok = sqllock_leader_token(L), seq, v;
            int64_t rem = sqllock_leader_remaining_ms(L);

            if (!in || tok != cur) {
                if (in)
                    tu_hist_section_end_at(g_hist, c->who, N_LEADER, cur,
                                           now < dl ? now : dl);
                in = 1;
                cur = tok;
                tu_hist_section(g_hist, c->who, N_LEADER, tok, 0);
                c->terms++;
                if (tok <= LD(&g_sh->leader_max_token)) {
                    ADD(&g_sh->leader_back, 1);
                    pt_bad(c, "L5: term %lld began after term %lld",
                           (long long)tok,
                           (long long)LD(&g_sh->leader_max_token));
                }
                {
                    int64_t m = LD(&g_sh->leader_max_token);
                    while (tok > m &&
                           !__atomic_compare_exchange_n(
                               &g_sh->leader_max_token, &m, tok, 0,
                               __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
                        ;
                }
                pt_granted(c, NULL, now, "leader");
            }
            dl = now + rem * 1000;
            seq = tu_hist_invoke(g_hist, c->who, "write", N_LEADER, tok, 0);
            v = LD(&g_sh->leader_counter);
            tu_sleep_us(1000 + (long)(rand_r(&seed) % 2000));
            if (sqllock_leader_is_leader(L) &&
                sqllock_leader_token(L) == tok) {
                ST(&g_sh->leader_counter, v + 1);
                c->ok_phase[LD(&g_sh->phase)]++;
                tu_hist_complete(g_hist, c->who, seq, "ok", tok);
            } else {
                tu_hist_complete(g_hist, c->who, seq, "fail", tok);
            }
        } else if (in) {
            tu_hist_section_end_at(g_hist, c->who, N_LEADER, cur,
                                   now < dl ? now : dl);
            in = 0;
        }
        tu_sleep_ms(5);
    }
    if (in) {
        int64_t now = tu_now_us();
        tu_hist_section_end_at(g_hist, c->who, N_LEADER, cur,
                               now < dl ? now : dl);
    }
    if (L != NULL) {
        sqllock_leader_error(L, c->leader_err, sizeof c->leader_err);
        sqllock_leader_stop(L);
    }
    return c->bad[0] != '\0';
}

/* ------------------------------------------------------------------ */
/* The kill-patroni probe                                               */
/* ------------------------------------------------------------------ */

static sqllock_db *open_once(const char *url, int64_t *st)
{
    sqllock_options o = SQLLOCK_OPTIONS_INIT;
    sqllock_db *db = NULL;
    int rc;

    o.connect_timeout_ms = 2000 * (int64_t)g_slow;
    o.statement_timeout_ms = g_stmt_ms;
    rc = sqllock_open(url, &o, &db);
    if (rc == SQLLOCK_OK)
        return db;
    st[rc >= 0 && rc < NST ? rc : SQLLOCK_EDB]++;
    sqllock_close(db);
    return NULL;
}

/* One NOWAIT row lock of patroni_rowcount id 2 in a new transaction. */
static int lock_once(sqllock_db *db, sqllock_txn **txn)
{
    sqllock_table t = { T_ROW, "id", NULL };
    sqllock_cell key = SQLLOCK_NUMBER(2);
    sqllock_txn_options to = SQLLOCK_TXN_OPTIONS_INIT;
    int rc, got = 0;

    /* NOWAIT needs no lock timeout; a short one keeps the handle's
     * round-trip bound (statement_timeout_ms plus the longest lock
     * timeout it used, sqllock.h) close to statement_timeout_ms for the
     * lease tries on the same handle. */
    to.lock_timeout_ms = 100;
    *txn = NULL;
    rc = sqllock_txn_begin(db, &to, txn);
    if (rc == SQLLOCK_OK)
        rc = sqllock_txn_lock_rows(*txn, &t, &key, 1, SQLLOCK_LOCK_NOWAIT,
                                   &got);
    return rc == SQLLOCK_OK && got != 1 ? SQLLOCK_NOTFOUND : rc;
}

/* While the parent says so (from just before kill-patroni until
 * start-node has made the old primary a replica): A, on the hosts list
 * with the old leader first, takes a row lock; B, through HAProxy, tries
 * the same row while A holds it. Both granted is two holders at once.
 * Every second A also tries a lease, recorded in the history: on the
 * old primary, once the standby it waits for follows someone else, its
 * commit never returns and the client's round-trip bound must end it
 * (SQLLOCK_ECONNECT), never an acknowledged grant. */
int pt_probe_main(pt_client *c, int idx)
{
    sqllock_lease_options lo = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_db *a = NULL, *b = NULL;
    sqllock_lease *la = NULL;
    int64_t next_lease = 0;

    (void)idx;
    lo.ttl_ms = g_ttl_ms;
    lo.release_timeout_ms = 1;
    while (pt_running()) {
        sqllock_txn *ta = NULL, *tb = NULL;
        int ra, rb;

        if (!LD(&g_sh->hazard_on)) {
            sqllock_lease_free(la);
            la = NULL;
            sqllock_close(a);
            sqllock_close(b);
            a = b = NULL;
            tu_sleep_ms(20);
            continue;
        }
        if (a == NULL && (a = open_once(g_sh->hazard_url, g_sh->hz_a_st)) &&
            sqllock_lease_new(a, N_PROBE_LEASE, &lo, &la) != SQLLOCK_OK)
            pt_bad(c, "lease_new: %s", sqllock_errmsg(a));
        if (b == NULL)
            b = open_once(g_haproxy, g_sh->hz_b_st);
        if (a == NULL || b == NULL) {
            tu_sleep_ms(50);
            continue;
        }
        ADD(&g_sh->hz_tries, 1);
        ra = lock_once(a, &ta);
        rb = ra == SQLLOCK_OK ? lock_once(b, &tb) : SQLLOCK_EMISUSE;
        if (ra != SQLLOCK_OK)
            ADD(&g_sh->hz_a_st[ra >= 0 && ra < NST ? ra : SQLLOCK_EDB], 1);
        if (rb != SQLLOCK_OK && rb != SQLLOCK_EMISUSE)
            ADD(&g_sh->hz_b_st[rb >= 0 && rb < NST ? rb : SQLLOCK_EDB], 1);
        if (ra == SQLLOCK_OK && rb == SQLLOCK_OK) {
            int64_t now = tu_now_us(), zero = 0;
            int64_t tl = LD(&g_sh->hz_t_leader_us);

            ADD(&g_sh->hz_both, 1);
            if (tl != 0 && now > tl)
                ADD(&g_sh->hz_both_after, 1);
            if (__atomic_compare_exchange_n(&g_sh->hz_first_both_us, &zero,
                                            now, 0, __ATOMIC_SEQ_CST,
                                            __ATOMIC_SEQ_CST)) {
                g_sh->hz_port_a = server_port(a);
                g_sh->hz_port_b = server_port(b);
            }
        } else if (ra == SQLLOCK_OK && rb == SQLLOCK_ELOCKED) {
            ADD(&g_sh->hz_excluded, 1);
        } else if (ra == SQLLOCK_OK) {
            ADD(&g_sh->hz_a_only, 1);
        } else if (rb == SQLLOCK_OK) {
            ADD(&g_sh->hz_b_only, 1);
        } else {
            ADD(&g_sh->hz_none, 1);
        }
        sqllock_txn_free(tb);
        sqllock_txn_free(ta);
        if (la != NULL && tu_now_ms() >= next_lease) {
            int64_t t0 = tu_now_us(), seq, took;
            int rc;

            seq = tu_hist_invoke(g_hist, c->who, "acquire", N_PROBE_LEASE, 0,
                                 g_ttl_ms);
            rc = sqllock_lease_try_acquire(la);
            tu_hist_complete(g_hist, c->who, seq, tu_hist_outcome(rc),
                             sqllock_lease_token(la));
            ADD(&g_sh->hz_lease_st[rc >= 0 && rc < NST ? rc : SQLLOCK_EDB],
                1);
            took = (tu_now_us() - t0) / 1000;
            if (took > g_sh->hz_lease_longest_ms)
                g_sh->hz_lease_longest_ms = took;
            if (rc == SQLLOCK_OK) {
                int64_t tok = sqllock_lease_token(la);
                int64_t tl = LD(&g_sh->hz_t_leader_us);

                /* Granted by the old primary after the new leader took
                 * writes: an acknowledged grant that cannot last. */
                if (tl != 0 && t0 > tl &&
                    server_port(a) == g_sh->ph[PH_KILL_PATRONI].old_port) {
                    ADD(&g_sh->hz_lease_ok_old_after, 1);
                    pt_bad(c, "a lease on the old primary was acknowledged "
                           "after the new leader took writes (token %lld)",
                           (long long)tok);
                }

                tu_hist_section(g_hist, c->who, N_PROBE_LEASE, tok, 0);
                tu_hist_section_end(g_hist, c->who, N_PROBE_LEASE, tok);
                seq = tu_hist_invoke(g_hist, c->who, "release", N_PROBE_LEASE,
                                     tok, 0);
                rc = sqllock_lease_release(la);
                tu_hist_complete(g_hist, c->who, seq, tu_hist_outcome(rc),
                                 tok);
            }
            if (sqllock_lease_count(la) > 0) {
                sqllock_lease_free(la);
                la = NULL;
                if (sqllock_lease_new(a, N_PROBE_LEASE, &lo, &la) !=
                    SQLLOCK_OK)
                    pt_bad(c, "lease_new: %s", sqllock_errmsg(a));
            }
            next_lease = tu_now_ms() + 1000;
        }
        tu_sleep_ms(50);
    }
    sqllock_lease_free(la);
    sqllock_close(a);
    sqllock_close(b);
    return c->bad[0] != '\0';
}

/* ------------------------------------------------------------------ */
/* `sqllock run` (X2)                                                    */
/* ------------------------------------------------------------------ */

/* The command each run executes: its section, its token, and a
 * read-pause-write of a counter file recorded as a write (tu_history.h,
 * through the tool $H; tests/pooler/bouncer.c's RUN_BODY). Told of a
 * loss (SIGTERM from the runner), it records N. */
static const char RUN_BODY[] =
    "c=run-$R-$$; "
    "trap \"\\\"$H\\\" note \\\"$D/history\\\" $c N \\\"$SQLLOCK_NAME\\\" "
    "\\\"$SQLLOCK_TOKEN\\\"; exit 143\" TERM; "
    "\"$H\" note \"$D/history\" $c S \"$SQLLOCK_NAME\" \"$SQLLOCK_TOKEN\"; "
    "echo \"$SQLLOCK_TOKEN\" >> \"$D/run-tokens\"; "
    "s=$(\"$H\" invoke \"$D/history\" $c write \"$SQLLOCK_NAME\" "
    "\"$SQLLOCK_TOKEN\" 0); "
    "n=$(cat \"$D/run-count\" 2>/dev/null || echo 0); sleep 0.01; "
    "echo $((n + 1)) > \"$D/run-count\"; "
    "\"$H\" complete \"$D/history\" $c \"$s\" ok \"$SQLLOCK_TOKEN\"; "
    "\"$H\" note \"$D/history\" $c E \"$SQLLOCK_NAME\" \"$SQLLOCK_TOKEN\"; "
    "true";

/* A shell loop of `sqllock run N_RUN --ttl 20s --wait 60s` through
 * `route`, until DIR/stop exists or this process is gone; each run's
 * phase, exit code, start and end (ms since the epoch) go to
 * DIR/run-rc-ROUTE. The URL goes in a file of mode 600
 * ($SQLLOCK_DB_FILE), so that no password is in any environment. */
pid_t pt_run_loop(int route)
{
    char loop[8192], path[1200], out[1200], err[1200];
    const char *argv[4];
    FILE *fp;
    int fd;

    snprintf(path, sizeof path, "%s/url-%s", g_dir, pt_route_name(route));
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    fp = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (fp == NULL)
        fail_msg("%s: %s", path, strerror(errno));
    fprintf(fp, "%s\n", pt_url(route));
    fclose(fp);
    snprintf(loop, sizeof loop,
             "export D='%s' H='%s' R='%s'; P=%ld; "
             "while [ ! -e \"$D/stop\" ] && kill -0 $P 2>/dev/null; do "
             "ph=$(cat \"$D/phase\" 2>/dev/null || echo 0); "
             "s=$(date +%%s%%3N); "
             "SQLLOCK_DB_FILE='%s' '%s' run '%s' --ttl 20s --wait 60s -- "
             "sh -c '%s'; rc=$?; "
             "echo \"$ph $rc $s $(date +%%s%%3N)\" >> \"$D/run-rc-$R\"; "
             "sleep 0.1; done",
             g_dir, SQLLOCK_HISTORY_TOOL, pt_route_name(route),
             (long)getpid(), path, SQLLOCK_CLI_PATH, N_RUN, RUN_BODY);
    argv[0] = "/bin/sh";
    argv[1] = "-c";
    argv[2] = loop;
    argv[3] = NULL;
    snprintf(out, sizeof out, "%s/run-out-%s", g_dir, pt_route_name(route));
    snprintf(err, sizeof err, "%s/run-err-%s", g_dir, pt_route_name(route));
    return tu_spawn(argv, out, err, 1);
}

/* Reads DIR/run-rc-*: by[route][phase][k], k 0: exit 0, 1: 76 (lost), 2:
 * 69 (database), 3: 75 (busy), 4: any other; first[route][phase] the ms
 * from the phase's fault to the end of its first run that started after
 * it and exited 0. Checks DIR/run-tokens (each run's token above the one
 * before: L5). Returns the runs in all; *bad_tokens the tokens out of
 * order. */
int pt_run_read(int64_t by[R_N][PH_N][5], int64_t first[R_N][PH_N],
                int *bad_tokens, int64_t *count)
{
    static char buf[1 << 20];
    char path[1200], *p, *end;
    int route, runs = 0;
    int64_t prev = 0, tok;

    memset(by, 0, sizeof(int64_t) * R_N * PH_N * 5);
    memset(first, 0, sizeof(int64_t) * R_N * PH_N);
    for (route = 0; route < R_N; route++) {
        snprintf(path, sizeof path, "%s/run-rc-%s", g_dir,
                 pt_route_name(route));
        tu_read_file(path, buf, sizeof buf);
        for (p = buf; *p != '\0'; p = end) {
            long long ph = 0, rc = 0, s = 0, e = 0;
            int k, i;

            end = strchr(p, '\n');
            end = end != NULL ? end + 1 : p + strlen(p);
            if (sscanf(p, "%lld %lld %lld %lld", &ph, &rc, &s, &e) != 4 ||
                ph < 0 || ph >= PH_N)
                continue;
            k = rc == 0 ? 0 : rc == 76 ? 1 : rc == 69 ? 2 : rc == 75 ? 3 : 4;
            by[route][ph][k]++;
            runs++;
            if (rc != 0)
                continue;
            for (i = 1; i < PH_N - 1; i++) {
                int64_t f = g_sh->ph[i].t_fault_wall_ms;
                if (f != 0 && s >= f && first[route][i] == 0 &&
                    (i + 1 >= PH_N - 1 || g_sh->ph[i + 1].t_fault_wall_ms == 0
                     || s < g_sh->ph[i + 1].t_fault_wall_ms))
                    first[route][i] = e - f;
            }
        }
    }
    *bad_tokens = 0;
    snprintf(path, sizeof path, "%s/run-tokens", g_dir);
    tu_read_file(path, buf, sizeof buf);
    for (p = buf; *p != '\0';) {
        tok = strtoll(p, &end, 10);
        if (end == p)
            break;
        if (tok <= prev)
            (*bad_tokens)++;
        prev = tok;
        p = end;
        while (*p == '\n')
            p++;
    }
    snprintf(path, sizeof path, "%s/run-count", g_dir);
    tu_read_file(path, buf, sizeof buf);
    *count = atoll(buf);
    return runs;
}
