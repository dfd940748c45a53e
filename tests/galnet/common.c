/*
 * common.c -- test_galnet's clusters (scripts/galera_net.sh), their
 * URLs, the clients' shared state, the contending client and its
 * history, the children, the checks every case makes, and the
 * teardowns (galnet.h).
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
#include "galnet.h"

/* Static, not malloc'd: forked children inherit no heap blocks. */
char g_work[1024], g_script[1024], g_dir[1024], g_mode[16];
int g_slow = 1;
int g_keep;
int g_case_done;
gn_shared *g_sh;
tu_hist *g_hist;
char g_names[NNAMES][96];
char g_stream_prefix[96];

static char g_prefix[256];           /* "mysql://user:pw@" */
static char g_host[NODES][64];       /* "10.213.7.1:3306" */
static char g_path[128];             /* "/sqllock_test" */
static char g_out[16384];            /* the last script's output */
static pid_t g_pids[MAXP];
static int g_npids;

static const char *const api_name[API_N] = {
    "acquire(wait)", "try_acquire", "release", "renew", "stream grant"
};

/* ------------------------------------------------------------------ */
/* The clusters                                                        */
/* ------------------------------------------------------------------ */

/*
 * Runs `galera_net.sh CMD DIR ARGS...` (the arguments end with NULL),
 * without a shell, its output in the work directory; prints that output
 * (stdout unless GN_QUIET, stderr always). Returns the exit status, -1
 * when it hung for 5 minutes (times the slowdown) and was killed; *ms
 * the time it took.
 */
int gn_script(int64_t *ms, int flags, const char *cmd, ...)
{
    const char *argv[16];
    char outp[1200], errp[1200], err[4096];
    int64_t t0 = tu_now_ms();
    va_list ap;
    int n = 0, code;
    pid_t pid;

    argv[n++] = access("/bin/bash", X_OK) == 0 ? "/bin/bash"
                                               : "/usr/bin/bash";
    argv[n++] = g_script;
    argv[n++] = cmd;
    argv[n++] = g_dir;
    va_start(ap, cmd);
    while (n < 15 && (argv[n] = va_arg(ap, const char *)) != NULL)
        n++;
    va_end(ap);
    argv[n] = NULL;
    snprintf(outp, sizeof outp, "%s/script.out", g_work);
    snprintf(errp, sizeof errp, "%s/script.err", g_work);
    fflush(stdout);
    fflush(stderr);
    pid = tu_spawn(argv, outp, errp, 1);
    code = tu_wait_for(pid, 300000 * (int64_t)g_slow);
    if (code == -1) {
        tu_kill_wait(pid);
        fprintf(stderr, "galnet: galera_net.sh %s hung: killed\n", cmd);
    }
    if (ms != NULL)
        *ms = tu_now_ms() - t0;
    tu_read_file(outp, g_out, sizeof g_out);
    tu_read_file(errp, err, sizeof err);
    if (!(flags & GN_QUIET) && g_out[0] != '\0')
        printf("%s", g_out);
    if (err[0] != '\0' && (code != 0 || !(flags & GN_QUIET)))
        fprintf(stderr, "%s", err);
    fflush(stdout);
    return code;
}

const char *gn_script_out(void)
{
    return g_out;
}

/* A URL whose host list is the nodes of `order` ("123", "23", "1"),
 * with `query` (NULL: none). */
void gn_url(char *out, size_t size, const char *order, const char *query)
{
    size_t n;
    const char *o;

    n = (size_t)snprintf(out, size, "%s", g_prefix);
    for (o = order; *o != '\0' && n < size; o++)
        n += (size_t)snprintf(out + n, size - n, "%s%s",
                              o == order ? "" : ",", g_host[*o - '1']);
    if (n < size)
        snprintf(out + n, size - n, "%s%s%s", g_path,
                 query != NULL ? "?" : "", query != NULL ? query : "");
}

/* The URLs of DIR/env. */
static void load_urls(void)
{
    static char env[8192];
    char path[1200], key[64], url[512];
    tu_url_parts p;
    int n;

    snprintf(path, sizeof path, "%s/env", g_dir);
    tu_read_file(path, env, sizeof env);
    for (n = 0; n < NODES; n++) {
        snprintf(key, sizeof key, "SQLLOCK_TEST_GALNET_URL%d", n + 1);
        if (!tu_get_var(env, key, url, sizeof url) ||
            tu_url_split(url, &p) != 0 ||
            p.path_at - p.host_at >= sizeof g_host[n])
            fail_msg("%s has no usable %s", path, key);
        snprintf(g_prefix, sizeof g_prefix, "%.*s", (int)p.host_at, url);
        snprintf(g_host[n], sizeof g_host[n], "%.*s",
                 (int)(p.path_at - p.host_at), url + p.host_at);
        snprintf(g_path, sizeof g_path, "%s", url + p.path_at);
    }
}

void gn_print_status(void)
{
    gn_script(NULL, 0, "status", NULL);
}

/* 1 when node `node` (1-based) says it is in the primary component, 0
 * when it says it is not, -1 when it does not answer. Asked with
 * wsrep_sync_wait 0: with --safe's 15, a node outside the primary
 * component answers even SHOW with error 1205. */
int gn_node_primary(int node)
{
    char n[4];
    const char *v;

    snprintf(n, sizeof n, "%d", node);
    if (gn_script(NULL, GN_QUIET, "sql", n, "SET SESSION wsrep_sync_wait "
                  "= 0; SHOW GLOBAL STATUS LIKE 'wsrep_cluster_status'",
                  NULL) != 0)
        return -1;
    v = strstr(gn_script_out(), "wsrep_cluster_status");
    if (v == NULL)
        return -1;
    v += strlen("wsrep_cluster_status");
    while (*v == '\t' || *v == ' ')
        v++;
    return strncmp(v, "Primary", 7) == 0;
}

/* Every link healed, every node running (resumed), Synced in a cluster
 * of 3: what each case starts from. */
static void healthy(void)
{
    char secs[16], n[4];
    int i;

    gn_script(NULL, GN_QUIET, "heal", NULL);
    for (i = 1; i <= NODES; i++) {
        snprintf(n, sizeof n, "%d", i);
        gn_script(NULL, GN_QUIET, "resume", n, NULL);
    }
    snprintf(secs, sizeof secs, "%d", 90 * g_slow);
    for (i = 1; i <= NODES; i++) {
        snprintf(n, sizeof n, "%d", i);
        if (gn_script(NULL, GN_QUIET, "wait", n, secs, "3", NULL) != 0) {
            gn_print_status();
            fail_msg("the cluster in %s is not whole before the case: "
                     "node %d is not Synced in a cluster of 3 within %s s "
                     "(an earlier case may have left it down)", g_dir, i,
                     secs);
        }
    }
}

/*
 * The cluster of `mode` ("safe", "jepsen"), started when it is not the
 * one running (which is stopped first), made whole when it is; then the
 * schema on it.
 */
void gn_cluster(const char *mode)
{
    char arg[32], url[1024];
    sqllock_db *db = NULL;
    int64_t ms;
    int rc;

    if (strcmp(g_mode, mode) == 0) {
        healthy();
        return;
    }
    if (g_mode[0] != '\0') {
        gn_script(&ms, GN_QUIET, "stop", NULL);
        printf("    the --%s cluster stopped in %lld ms\n", g_mode,
               (long long)ms);
        g_mode[0] = '\0';
    }
    snprintf(g_dir, sizeof g_dir, "%.900s/%s", g_work, mode);
    snprintf(g_mode, sizeof g_mode, "%s", mode);    /* stopped at the end */
    snprintf(arg, sizeof arg, "--%s", mode);
    rc = gn_script(&ms, GN_QUIET, "start", arg, NULL);
    if (rc != 0)
        fail_msg("galera_net.sh start %s %s failed (status %d); the "
                 "nodes' logs are %s/n*/server.log", g_dir, arg, rc, g_dir);
    load_urls();
    printf("    the --%s cluster started in %lld ms (%s)\n", mode,
           (long long)ms, g_dir);
    gn_url(url, sizeof url, "123",
           strcmp(mode, "jepsen") == 0 ? "innodb_flush=any" : NULL);
    rc = sqllock_open(url, NULL, &db);
    if (rc == SQLLOCK_OK)
        rc = sqllock_init(db);
    if (rc != SQLLOCK_OK) {
        char msg[600];
        snprintf(msg, sizeof msg, "%s", sqllock_errmsg(db));
        sqllock_close(db);
        fail_msg("sqllock_init on the --%s cluster (%s): %s: %s", mode,
                 url, sqllock_errname(rc), msg);
    }
    sqllock_close(db);
}

sqllock_db *gn_open(const char *url, int64_t connect_ms, int64_t stmt_ms,
                    int *rc)
{
    sqllock_options o = SQLLOCK_OPTIONS_INIT;
    sqllock_db *db = NULL;

    o.connect_timeout_ms = connect_ms;
    o.statement_timeout_ms = stmt_ms;
    *rc = sqllock_open(url, &o, &db);
    if (*rc != SQLLOCK_OK) {
        sqllock_close(db);
        return NULL;
    }
    return db;
}

/* The node (1-based) a handle is connected to, from the node's name
 * (every node listens on port 3306 of its own address); 0 when the
 * question fails. */
int gn_node_of(sqllock_db *db)
{
    int64_t n = 0;
    int has = 0;

    if (sqllock__exec_sql(db, "SELECT CAST(SUBSTRING(@@wsrep_node_name, 2) "
                          "AS SIGNED)", NULL, 0, &has, &n, NULL) !=
        SQLLOCK_OK || !has)
        return 0;
    return (int)n;
}

/* ------------------------------------------------------------------ */
/* The clients                                                         */
/* ------------------------------------------------------------------ */

/* A case's shared state, names and history (opened before the forks,
 * so that every child appends to it). */
void gn_case_begin(const char *what)
{
    char path[1200];
    int k;

    g_case_done = 0;
    g_sh = tu_shared_map(sizeof *g_sh);
    if (g_sh == NULL)
        fail_msg("shared memory for the clients: %s", strerror(errno));
    for (k = 0; k < NNAMES; k++)
        snprintf(g_names[k], sizeof g_names[k], "galnet-%ld-%s-%d",
                 (long)getpid(), what, k);
    snprintf(g_stream_prefix, sizeof g_stream_prefix, "galnet-%ld-%s-s",
             (long)getpid(), what);
    snprintf(path, sizeof path, "%s/history-%s.txt", g_work, what);
    (void)unlink(path);
    g_hist = tu_hist_open(path);
    if (g_hist == NULL)
        fail_msg("history %s: %s", path, strerror(errno));
}

void gn_bad(gn_client *c, const char *fmt, ...)
{
    va_list ap;

    if (c->bad[0] != '\0')
        return;
    va_start(ap, fmt);
    vsnprintf(c->bad, sizeof c->bad, fmt, ap);
    va_end(ap);
    ADD(&g_sh->failed, 1);
}

/* The database's own error code in a message ("... (mysql 1180)"; the
 * last one named), or 0. */
static int db_code(const char *msg)
{
    const char *p = msg, *last = NULL;

    while ((p = strstr(p, "(mysql ")) != NULL) {
        last = p;
        p++;
    }
    return last != NULL ? atoi(last + strlen("(mysql ")) : 0;
}

/* Counts a call's answer: its status, the kinds of answers (status and
 * the database's code), the causes of ECONNECT, the first one once the
 * fault began, the longest call. */
void gn_note(gn_client *c, int api, int rc, sqllock_db *db, int64_t t0_us)
{
    int64_t now = tu_now_us(), d = (now - t0_us) / 1000;
    const char *msg = sqllock_errmsg(db);
    int code = rc == SQLLOCK_OK ? 0 : db_code(msg), i;

    if (rc >= 0 && rc < NST)
        c->calls[api][rc]++;
    if (d > c->longest_ms) {
        c->longest_ms = d;
        snprintf(c->longest_what, sizeof c->longest_what, "%s %s",
                 api_name[api], sqllock_errname(rc) + 8);
    }
    if (rc == SQLLOCK_OK || ((rc == SQLLOCK_BUSY || rc == SQLLOCK_TIMEOUT) &&
                             code == 0))
        return;
    for (i = 0; i < c->nseen; i++)
        if (c->seen[i].api == api && c->seen[i].rc == rc &&
            c->seen[i].code == code)
            break;
    if (i == c->nseen && c->nseen < MAXSEEN) {
        c->nseen++;
        c->seen[i].api = api;
        c->seen[i].rc = rc;
        c->seen[i].code = code;
        snprintf(c->seen[i].msg, sizeof c->seen[i].msg, "%s", msg);
    }
    if (i < c->nseen)
        c->seen[i].n++;
    if (rc != SQLLOCK_ECONNECT)
        return;
    if (code == 1047)
        c->ec_1047++;
    else if (code == 1180)
        c->ec_1180++;
    else if (tu_contains_ci(msg, "not ready"))
        c->ec_notready++;
    else
        c->ec_other++;
    if (LD(&g_sh->fault) && c->first_ec_us == 0) {
        c->first_ec_us = now;
        c->first_ec_api = api;
        c->first_ec_code = code;
    }
}

/* One read-pause-write of the name's counter in shared memory while
 * `l` is held by L6's view, which is asked again before the write
 * lands; recorded as a write (ok: it landed). Returns 1 when it did. */
int gn_write(gn_client *c, const char *me, const char *name, int k,
             sqllock_lease *l, long sleep_us)
{
    int64_t token = sqllock_lease_token(l), seq, v;

    if (!sqllock_lease_held(l))
        return 0;
    seq = tu_hist_invoke(g_hist, me, "write", name, token, 0);
    v = g_sh->counter[k];
    tu_sleep_us(sleep_us);
    if (sqllock_lease_held(l)) {
        g_sh->counter[k] = v + 1;
        ADD(&g_sh->writes[k], 1);
        tu_hist_complete(g_hist, me, seq, "ok", token);
        c->writes++;
        return 1;
    }
    tu_hist_complete(g_hist, me, seq, "fail", token);
    c->skipped++;
    return 0;
}

/* Releases until the database answers OK or LOST. A lost connection
 * (the library has sent it again itself, C3) or a rolled-back statement
 * leaves the hold, and it is tried again, for `give_up_ms` at most:
 * the lease then ends by itself (the caller makes a new handle). */
void gn_release(gn_client *c, const char *me, sqllock_db *db,
                sqllock_lease *l, int64_t give_up_ms, int hazard)
{
    int64_t end = tu_now_ms() + give_up_ms;
    const char *name = sqllock_lease_name(l);

    while (sqllock_lease_count(l) > 0) {
        int64_t token = sqllock_lease_token(l), t0 = tu_now_us(), seq;
        int rc;

        seq = tu_hist_invoke(g_hist, me, "release", name, token, 0);
        rc = sqllock_lease_release(l);
        tu_hist_complete(g_hist, me, seq, tu_hist_outcome(rc), token);
        gn_note(c, API_REL, rc, db, t0);
        if (rc == SQLLOCK_OK || rc == SQLLOCK_LOST) {
            if (rc == SQLLOCK_LOST)
                c->rel_lost++;
            /* Answered once the fault was in place (it may have been
             * sent before, and met it), before the next grant. */
            if (LD(&g_sh->fault) && c->c3_release_us == 0 &&
                c->regrant_us == 0 && LD(&g_sh->t_fault_done_us) != 0 &&
                tu_now_us() > LD(&g_sh->t_fault_done_us))
                c->c3_release_us = tu_now_us();
            return;
        }
        if (rc == SQLLOCK_ECONNECT && !LD(&g_sh->fault) && !hazard) {
            gn_bad(c, "release of %s: ECONNECT before any fault (%s)", name,
                   sqllock_errmsg(db));
            return;
        }
        if (rc != SQLLOCK_ECONNECT && rc != SQLLOCK_EDEADLOCK &&
            rc != SQLLOCK_ELOCKED && rc != SQLLOCK_ESERIALIZATION) {
            gn_bad(c, "release of %s: %s (%s)", name, sqllock_errname(rc),
                   sqllock_errmsg(db));
            return;
        }
        if (tu_now_ms() > end || LD(&g_sh->stop))
            return;
        c->rel_retries++;
        tu_sleep_ms(20 + rand() % 30);
    }
}

/* The first grant invoked once the fault was in place: when it came,
 * and through which node. */
static void granted(gn_client *c, sqllock_db *db, int64_t inv_us)
{
    c->grants++;
    if (!LD(&g_sh->fault) || c->regrant_us != 0 ||
        inv_us <= LD(&g_sh->t_fault_done_us) ||
        LD(&g_sh->t_fault_done_us) == 0)
        return;
    c->regrant_inv_us = inv_us;
    c->regrant_us = tu_now_us();
    c->regrant_node = gn_node_of(db);
}

/* c, d: one fresh name, granted once and kept (the probe after the
 * recovery asks whether the cluster still knows it). */
static void stream_grant(gn_client *c, int who, const char *me,
                         sqllock_db *db, const gn_plan *p)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;
    char name[160];
    int64_t t0, seq, idx = c->streams++;
    int rc, j;

    if (LD(&g_sh->nstream) >= MAXSTREAM)
        return;
    snprintf(name, sizeof name, "%s%d-%lld", g_stream_prefix, who,
             (long long)idx);
    o.ttl_ms = p->stream_ttl_ms;
    if (sqllock_lease_new(db, name, &o, &l) != SQLLOCK_OK) {
        gn_bad(c, "lease_new %s: %s", name, sqllock_errmsg(db));
        return;
    }
    t0 = tu_now_us();
    seq = tu_hist_invoke(g_hist, me, "acquire", name, 0, p->stream_ttl_ms);
    rc = sqllock_lease_try_acquire(l);
    tu_hist_complete(g_hist, me, seq, tu_hist_outcome(rc),
                     sqllock_lease_token(l));
    gn_note(c, API_STREAM, rc, db, t0);
    if (rc == SQLLOCK_OK) {
        granted(c, db, t0);
        j = ADD(&g_sh->nstream, 1);
        if (j < MAXSTREAM) {
            g_sh->stream[j].who = who;
            g_sh->stream[j].idx = idx;
            g_sh->stream[j].token = sqllock_lease_token(l);
            g_sh->stream[j].inv_us = t0;
            g_sh->stream[j].ack_us = tu_now_us();
        }
    } else if (rc == SQLLOCK_ECONNECT && LD(&g_sh->fault)) {
        tu_sleep_ms(20 + rand() % 30);
    } else if (!p->hazard) {
        gn_bad(c, "try_acquire of the fresh name %s: %s (%s)", name,
               sqllock_errname(rc), sqllock_errmsg(db));
    }
    sqllock_lease_free(l);           /* held: the row stays */
}

/*
 * One contending client, until told to stop: takes the names in turn
 * (acquire with a wait, or try), runs a read-pause-write of the name's
 * counter under the hold, releases; with a stream ttl, grants itself a
 * fresh name after each round. Every call is in the history.
 */
void gn_contend(gn_client *c, int who, sqllock_db *db, const gn_plan *p)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l[NNAMES];
    char me[16];
    int k, i;

    snprintf(me, sizeof me, "c%d", who);
    o.ttl_ms = p->ttl_ms;
    o.backoff_min_ms = 2;
    o.backoff_max_ms = 40;
    for (k = 0; k < NNAMES; k++) {
        l[k] = NULL;
        if (sqllock_lease_new(db, g_names[k], &o, &l[k]) != SQLLOCK_OK)
            gn_bad(c, "lease_new: %s", sqllock_errmsg(db));
    }
    for (i = 0; !LD(&g_sh->stop) && c->bad[0] == '\0'; i++) {
        int64_t t0 = tu_now_us(), seq, deadline;
        int rc;

        k = (who + i) % NNAMES;
        seq = tu_hist_invoke(g_hist, me, "acquire", g_names[k], 0,
                             p->ttl_ms);
        rc = c->use_try ? sqllock_lease_try_acquire(l[k])
                        : sqllock_lease_acquire(l[k], p->wait_ms);
        tu_hist_complete(g_hist, me, seq, tu_hist_outcome(rc),
                         sqllock_lease_token(l[k]));
        gn_note(c, c->use_try ? API_TRY : API_ACQ, rc, db, t0);
        if (rc == SQLLOCK_OK) {
            int64_t token = sqllock_lease_token(l[k]), left, t_s, end;

            left = sqllock_lease_remaining_ms(l[k]);
            deadline = tu_now_us() + left * 1000;
            granted(c, db, t0);
            /* The holder acts only while L6's view says it holds: a
             * grant whose answer came after its local deadline (a slow
             * reconnect inside the acquire) is no hold. */
            if (left > 0) {
                tu_hist_section(g_hist, me, g_names[k], token, 0);
                t_s = tu_hist_now_us();
                gn_write(c, me, g_names[k], k, l[k], 5000 + rand() % 15000);
                end = tu_now_us();
                if (end > deadline)
                    end = deadline;
                tu_hist_section_end_at(g_hist, me, g_names[k], token,
                                       end > t_s ? end : t_s);
            }
            gn_release(c, me, db, l[k], 2 * p->ttl_ms, p->hazard);
            if (sqllock_lease_count(l[k]) > 0) {
                /* Given up: the lease ends by itself; a fresh handle. */
                sqllock_lease_free(l[k]);
                l[k] = NULL;
                if (sqllock_lease_new(db, g_names[k], &o, &l[k]) !=
                    SQLLOCK_OK)
                    gn_bad(c, "lease_new: %s", sqllock_errmsg(db));
            }
        } else if (rc == SQLLOCK_BUSY) {
            tu_sleep_us(500 + rand() % 3000);
        } else if (rc == SQLLOCK_TIMEOUT) {
            /* The name is held (or was granted to an answer that the
             * fault cut): the next one. */
        } else if (rc == SQLLOCK_ECONNECT && LD(&g_sh->fault)) {
            tu_sleep_ms(20 + rand() % 30);
        } else {
            gn_bad(c, "%s of %s: %s (%s)", c->use_try ? "try_acquire"
                   : "acquire", g_names[k], sqllock_errname(rc),
                   sqllock_errmsg(db));
        }
        if (p->stream_ttl_ms > 0 && c->bad[0] == '\0' && !LD(&g_sh->stop))
            stream_grant(c, who, me, db, p);
        /* A pause between rounds: some hundred commits a second in all,
         * which a node that rejoins (IST, then its queue) can catch up
         * with on a busy 2-core machine. */
        tu_sleep_ms(p->think_ms / 2 + rand() % (p->think_ms + 1));
    }
    for (k = 0; k < NNAMES; k++)
        sqllock_lease_free(l[k]);
}

/* A contending child: opens its URL (a host list), notes the node it
 * reached, waits for the start, contends. */
int gn_client_main(int who, const gn_plan *p)
{
    gn_client *c = &g_sh->c[who];
    sqllock_db *db = NULL;
    int rc = SQLLOCK_OK, tries;

    for (tries = 0; tries < 20 && db == NULL; tries++) {
        db = gn_open(p->url, 2000 * (int64_t)g_slow, 10000 * (int64_t)g_slow,
                     &rc);
        if (db == NULL)
            tu_sleep_ms(200);
    }
    if (db == NULL) {
        gn_bad(c, "open %s: %s", p->url, sqllock_errname(rc));
        return 1;
    }
    c->node0 = gn_node_of(db);
    ADD(&g_sh->ready, 1);
    while (!LD(&g_sh->go) && !LD(&g_sh->stop))
        tu_sleep_ms(2);
    gn_contend(c, who, db, p);
    sqllock_close(db);
    return c->bad[0] != '\0';
}

/* ------------------------------------------------------------------ */
/* Children                                                            */
/* ------------------------------------------------------------------ */

pid_t gn_fork(int (*fn)(void *), void *arg)
{
    pid_t pid = tu_fork_child(fn, arg, (unsigned)(300 * g_slow));

    if (pid < 0)
        fail_msg("fork: %s", strerror(errno));
    if (g_npids < MAXP)
        g_pids[g_npids++] = pid;
    return pid;
}

/* Waits for every child forked (killing those still running after
 * `ms`); the number that hung or failed. */
int gn_reap(int64_t ms)
{
    int n = tu_reap_children(g_pids, g_npids, ms, NULL);

    g_npids = 0;
    return n;
}

/* A failed case's children: told to stop, then killed and reaped. */
void gn_stop_children(void)
{
    int i;

    if (g_sh != NULL)
        ST(&g_sh->stop, 1);
    for (i = 0; i < g_npids; i++) {
        if (g_pids[i] > 0 && waitpid(g_pids[i], NULL, WNOHANG) == 0) {
            kill(g_pids[i], SIGKILL);
            (void)waitpid(g_pids[i], NULL, 0);
        }
    }
    g_npids = 0;
}

/* Sleeps until `until_ms` (tu_now_ms()), or until a client failed. */
void gn_wait_until(int64_t until_ms)
{
    TU_WAIT_WHILE(!LD(&g_sh->failed), until_ms, 20);
}

/* ------------------------------------------------------------------ */
/* The checks                                                          */
/* ------------------------------------------------------------------ */

/* The history against the lease model (tu_history.h), with the
 * contended names' final values; its report on stdout. With `enforce`,
 * a violation fails the case (naming the history, which is kept). */
int gn_check_history(int enforce, tu_hist_result *r)
{
    char path[1200];
    int k, bad;

    for (k = 0; k < NNAMES; k++)
        tu_hist_final(g_hist, g_names[k], g_sh->counter[k]);
    snprintf(path, sizeof path, "%s", tu_hist_path(g_hist));
    tu_hist_close(g_hist);
    g_hist = NULL;
    bad = tu_hist_check(path, stdout, r);
    if (bad != 0 && enforce) {
        g_keep = 1;
        fail_msg("the history checker found %d violation(s) in %s (kept; "
                 "the report is above)", bad, path);
    }
    return bad;
}

/* Each name's counter against its acknowledged writes: a lower counter
 * means two holders overlapped and one's update was lost. */
void gn_check_counters(int enforce)
{
    int k;

    printf("    counters (value / acknowledged writes):");
    for (k = 0; k < NNAMES; k++)
        printf(" %lld/%lld", (long long)g_sh->counter[k],
               (long long)g_sh->writes[k]);
    printf("\n");
    for (k = 0; k < NNAMES && enforce; k++)
        if (g_sh->counter[k] != g_sh->writes[k]) {
            g_keep = 1;
            fail_msg("L1: the counter of %s is %lld after %lld acknowledged "
                     "writes (an update lost: two holders at once); the "
                     "history is kept in %s", g_names[k],
                     (long long)g_sh->counter[k],
                     (long long)g_sh->writes[k], g_work);
        }
}

void gn_print_clients(int n)
{
    int64_t e1047 = 0, e1180 = 0, enr = 0, eoth = 0;
    int i;

    for (i = 0; i < n; i++) {
        e1047 += g_sh->c[i].ec_1047;
        e1180 += g_sh->c[i].ec_1180;
        enr += g_sh->c[i].ec_notready;
        eoth += g_sh->c[i].ec_other;
    }
    printf("    SQLLOCK_ECONNECT in all: %lld from error 1047 (node not "
           "ready), %lld from 1180 (commit cut off from the primary "
           "component), %lld from a connect refused as not ready, %lld "
           "other (lost connections, refused connects)\n",
           (long long)e1047, (long long)e1180, (long long)enr,
           (long long)eoth);
    for (i = 0; i < n; i++) {
        gn_client *c = &g_sh->c[i];
        int64_t t0 = LD(&g_sh->t_fault_done_us);

        printf("    c%d (node %d first, reached %d): %lld grants, %lld "
               "writes; ECONNECT 1047 %lld, 1180 %lld, not ready %lld, "
               "other %lld", i, c->first, c->node0, (long long)c->grants,
               (long long)c->writes, (long long)c->ec_1047,
               (long long)c->ec_1180, (long long)c->ec_notready,
               (long long)c->ec_other);
        if (c->first_ec_us != 0 && t0 != 0)
            printf("; first ECONNECT %+lld ms (%s, code %d)",
                   (long long)((c->first_ec_us - t0) / 1000),
                   api_name[c->first_ec_api], c->first_ec_code);
        if (c->regrant_us != 0 && t0 != 0)
            printf("; next grant %+lld ms through node %d",
                   (long long)((c->regrant_us - t0) / 1000),
                   c->regrant_node);
        printf("; longest call %lld ms (%s)\n", (long long)c->longest_ms,
               c->longest_what);
        if (c->bad[0] != '\0')
            printf("      c%d FAILED: %s\n", i, c->bad);
    }
}

/* Every kind of answer the clients got, summed over them. */
void gn_print_seen(int n)
{
    gn_seen all[MAXSEEN * 2];
    int64_t by[NST];
    int na = 0, i, j, a;

    for (a = 0; a < API_N; a++) {
        int any = 0;

        memset(by, 0, sizeof by);
        for (i = 0; i < n; i++)
            for (j = 0; j < NST; j++) {
                by[j] += g_sh->c[i].calls[a][j];
                any |= g_sh->c[i].calls[a][j] != 0;
            }
        if (any)
            tu_print_statuses(api_name[a], 14, by, NST);
    }
    for (i = 0; i < n; i++)
        for (j = 0; j < g_sh->c[i].nseen; j++) {
            const gn_seen *s = &g_sh->c[i].seen[j];
            int k;

            for (k = 0; k < na; k++)
                if (all[k].api == s->api && all[k].rc == s->rc &&
                    all[k].code == s->code)
                    break;
            if (k == na) {
                if (na == MAXSEEN * 2)
                    continue;
                all[na++] = *s;
            } else {
                all[k].n += s->n;
            }
        }
    for (i = 0; i < na; i++)
        printf("      %s %s, database code %d: %lld x, e.g. \"%.150s\"\n",
               api_name[all[i].api], sqllock_errname(all[i].rc),
               all[i].code, (long long)all[i].n, all[i].msg);
}

/* ------------------------------------------------------------------ */
/* Teardowns                                                           */
/* ------------------------------------------------------------------ */

/* After each case: its children gone, its history closed (kept when
 * the case did not finish), its shared memory unmapped. */
int gn_case_teardown(void **state)
{
    (void)state;
    gn_stop_children();
    if (g_hist != NULL) {
        printf("    the history is kept: %s\n", tu_hist_path(g_hist));
        tu_hist_close(g_hist);
        g_hist = NULL;
    }
    if (!g_case_done)
        g_keep = 1;
    if (g_sh != NULL) {
        munmap(g_sh, sizeof *g_sh);
        g_sh = NULL;
    }
    return 0;
}

/* After the group: the cluster stopped (also after a failure), nothing
 * of it left; the work directory removed unless it is to be kept. */
int gn_group_teardown(void **state)
{
    int64_t ms;
    char cmd[1200];
    static const char *const modes[] = { "safe", "jepsen" };
    size_t m;

    (void)state;
    gn_stop_children();
    for (m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        struct stat st;

        snprintf(g_dir, sizeof g_dir, "%.900s/%s", g_work, modes[m]);
        if (stat(g_dir, &st) != 0)
            continue;
        if (gn_script(&ms, GN_QUIET, "stop", NULL) != 0)
            printf("galnet: galera_net.sh stop %s FAILED: look for its "
                   "namespaces (ip netns list) and nodes\n", g_dir);
        else
            printf("galnet: the --%s cluster stopped in %lld ms\n",
                   modes[m], (long long)ms);
    }
    g_mode[0] = '\0';
    if (getenv("SQLLOCK_TEST_GALNET_WORK") != NULL) {
        printf("galnet: the work directory is kept: %s\n", g_work);
    } else if (g_keep) {
        /* The histories and the nodes' logs; not their data (some
         * hundred MB). */
        snprintf(cmd, sizeof cmd, "rm -rf '%s'/*/n[123]/data", g_work);
        if (strchr(g_work, '\'') != NULL || system(cmd) != 0)
            printf("galnet: could not remove the nodes' data in %s\n",
                   g_work);
        printf("galnet: the work directory (histories, the nodes' logs) is "
               "kept: %s\n", g_work);
    } else if (strchr(g_work, '\'') == NULL &&
               strncmp(g_work, "/", 1) == 0 && strlen(g_work) > 8) {
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_work);
        if (system(cmd) != 0)
            printf("galnet: could not remove %s\n", g_work);
    }
    return 0;
}
