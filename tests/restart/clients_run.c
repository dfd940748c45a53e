/*
 * clients_run.c -- test_restart: the run of the clients across
 * restarts and crashes, its checks, and the two cases (E1, L1, L5, L7,
 * L10, P1).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "restart.h"
#include "tu_history.h"

static int cl_hold_cmp(const void *a, const void *b)
{
    const cl_hold *x = a, *y = b;
    return x->start_us < y->start_us ? -1 : x->start_us > y->start_us;
}

/* The restart, as a status: a failure must not leave children behind. */
static int cl_restart(const char *mode)
{
    return tu_run_script(g_script, g_srv->restart_cmd, g_dir, mode);
}
/* What the clients were doing when a child hung: the calls they are
 * in. */
static void cl_on_hang(void)
{
    int j;

    for (j = 0; j < CL_CLIENTS; j++) {
        int64_t since = CL_LD(&g_cl->c[j].in_call_since);
        if (since != 0)
            printf("    client %d (%s) has been in %s for %lld ms\n",
                   j, g_cl->c[j].role, g_cl->c[j].in_call,
                   (long long)(tu_now_ms() - since));
    }
}

/* Waits up to `ms` for every child; kills the ones still running then.
 * Returns the number that hung or failed, naming the calls they hung in. */
static int cl_reap_children(pid_t *pids, int n, int64_t ms)
{
    return tu_reap_children(pids, n, ms, cl_on_hang);
}
/* Prints a client's statuses: "OK 120, ECONNECT 4, ...". */
static void cl_print_statuses(const char *label, const int64_t *by_status)
{
    tu_print_statuses(label, 26, by_status, CL_NSTATUS);
}
/* Whether `c`, which heard no ECONNECT from restart g, passed it rightly:
 * its first call after the cut was a release or a renewal that the
 * library sent again on a fresh connection (C3). Its two calls across
 * the cut (cl_note_across in clients.c) must lie on either side of the
 * last moment the restart's server was known down. */
static int cl_resent(const cl_shared *sh, const cl_client *c, int g)
{
    const cl_across *a = &c->across[g];
    int64_t down = sh->server_down[g];

    return a->y_c3 && down != 0 && a->x_end < down && a->y_end > down;
}

/* Says in `buf` how `c` passed restart g without hearing it: its two
 * calls across the cut, or why there are none. */
static void cl_across_text(char *buf, size_t size, const cl_shared *sh,
                           const cl_client *c, int g)
{
    const cl_across *a = &c->across[g];
    int64_t down = sh->server_down[g];

    if (down == 0)
        snprintf(buf, size, "no moment is known when the server was down");
    else if (a->y_end == 0 || a->x_end >= down || a->y_end <= down)
        snprintf(buf, size, "no two calls of it ended on either side of "
                 "the last moment the server was known down (%lld ms "
                 "into the restart)", (long long)(down - sh->down_ms[g]));
    else
        snprintf(buf, size, "its last call before the cut, %s (%s), ended "
                 "%lld ms before the last moment the server was known "
                 "down (%lld ms into the restart); its next call, %s, "
                 "began %lld ms from that moment and ended %lld ms after "
                 "it with %s%s", a->x_what, sqllock_errname(a->x_rc),
                 (long long)(down - a->x_end),
                 (long long)(down - sh->down_ms[g]), a->y_what,
                 (long long)(a->y_begin - down),
                 (long long)(a->y_end - down), sqllock_errname(a->y_rc),
                 a->y_c3 ? ", sent again on a fresh connection (C3)"
                 : ": it reached the new server and hid the cut");
}

/* Under way in up period g (0: before the first restart): every client
 * but the long waiter has made a call wholly while the server was up,
 * the long waiter is in its wait, and the counter's lease has been
 * granted. */
static int cl_under_way(cl_shared *sh, int g)
{
    int j;

    for (j = 0; j < CL_CLIENTS; j++)
        if (j != CL_WAIT_LONG && CL_LD(&sh->c[j].up_calls[g]) == 0)
            return 0;
    return CL_LD(&sh->c[CL_WAIT_LONG].in_call_since) != 0 &&
           CL_LD(&sh->gen_tok_max[g]) != 0;
}

/* Back after restart g: what the checks below ask of every restart has
 * happened -- every client but the long waiter reached the server again,
 * a reaper pass succeeded, the counter's lease was granted, and the
 * watched lease went UNCERTAIN and is HELD again. */
static int cl_back(cl_shared *sh, int g)
{
    int j, i, n, uncertain = 0, last = -1;

    for (j = 0; j < CL_CLIENTS; j++)
        if (j != CL_WAIT_LONG && !CL_LD(&sh->c[j].resumed[g]))
            return 0;
    if (!CL_LD(&sh->r_resumed[g]) || CL_LD(&sh->gen_tok_min[g]) == 0)
        return 0;
    n = CL_LD(&sh->w_nev);
    for (i = sh->w_nev_at[g]; i < n && i < CL_EVENTS_MAX; i++) {
        if (sh->w_ev[i].state == SQLLOCK_STATE_UNCERTAIN)
            uncertain = 1;
        last = sh->w_ev[i].state;
    }
    return uncertain && last == SQLLOCK_STATE_HELD;
}

/* Waits (polling) until `done` holds for g, a failure is recorded or
 * `ms` have passed; returns the time it took. */
static int64_t cl_wait(int (*done)(cl_shared *, int), int g, int64_t ms)
{
    int64_t t = tu_now_ms();

    while (!done(g_cl, g) && !CL_LD(&g_cl->failed) && tu_now_ms() - t < ms)
        tu_sleep_ms(5);
    return tu_now_ms() - t;
}

/* Runs the clients across `restarts` restarts with `mode`. The first
 * comes once they are all under way; each of the others, and the end,
 * once the clients are back after the one before (cl_back: what the
 * checks below then look for). Those waits end at the latest after the
 * times this test used to sleep instead: 600 ms (2 s under a slowdown)
 * before the first restart, and `up_ms` (times 2 under a sanitizer, 8
 * under valgrind) after each. A run that is not back by then goes on
 * as it did, and the checks fail it; nor can the whole run outlast the
 * long waiter's 60 s wait, which would fail it for another reason. */
static void cl_run(const char *mode, int restarts, int64_t up_ms,
                   const char *label)
{
    unsigned alarm_s;
    pid_t pids[2 + CL_COUNTER_PROCS + 1];
    int npids = 0, i, g, j, failed_restart = 0, hung;
    int64_t all[CL_NSTATUS], t, sum, took;
    char why[400];
    cl_shared *sh;

    g_slow = tu_slowdown();
    up_ms *= g_slow > 4 ? 8 : g_slow > 1 ? 2 : 1;
    if (restarts > CL_GEN_MAX - 1)
        restarts = CL_GEN_MAX - 1;
    alarm_s = (unsigned)(120 * g_slow + restarts * 70);
    sh = g_cl = tu_shared_map(sizeof *sh);
    snprintf(g_cl_hold, sizeof g_cl_hold, "restart-%ld-%s-hold",
             (long)getpid(), label);
    snprintf(g_cl_manual, sizeof g_cl_manual, "restart-%ld-%s-manual",
             (long)getpid(), label);
    snprintf(g_cl_counter, sizeof g_cl_counter, "restart-%ld-%s-counter",
             (long)getpid(), label);
    snprintf(g_cl_orphan, sizeof g_cl_orphan, "restart-%ld-%s-orphan-",
             (long)getpid(), label);
    {
        char hp[1200];

        snprintf(hp, sizeof hp, "%s/history-%s.txt", g_dir, label);
        (void)unlink(hp);
        g_cl_hist = tu_hist_open(hp);
        if (g_cl_hist == NULL)
            fail_msg("history %s: %s", hp, strerror(errno));
    }
    sh->c[CL_HOLDER].role = "holder (renew)";
    sh->c[CL_WAIT_LONG].role = "waiter (60 s waits)";
    sh->c[CL_WAIT_SHORT].role = "waiter (300 ms waits)";
    for (i = CL_COUNTER0; i < CL_REAP; i++)
        sh->c[i].role = "counter";
    sh->c[CL_REAP].role = "orphans + sqllock_reap";

    /* The holder first, so that the waiters find its lease held. */
    pids[npids++] = cl_fork(CL_R_HOLDER, 0, alarm_s);
    t = tu_now_ms();
    while (CL_LD(&sh->ready) < 1 && !CL_LD(&sh->failed) &&
           tu_now_ms() - t < 60000 * g_slow)
        tu_sleep_ms(5);
    if (CL_LD(&sh->ready) >= 1) {
        pids[npids++] = cl_fork(CL_R_WAITERS, 0, alarm_s);
        for (i = 0; i < CL_COUNTER_PROCS; i++)
            pids[npids++] = cl_fork(CL_R_COUNTER,
                                    CL_COUNTER0 + i * CL_COUNTER_THREADS,
                                    alarm_s);
        pids[npids++] = cl_fork(CL_R_REAPER, 0, alarm_s);
        while (CL_LD(&sh->ready) < CL_CLIENTS && !CL_LD(&sh->failed) &&
               tu_now_ms() - t < 60000 * g_slow)
            tu_sleep_ms(5);
    }
    if (CL_LD(&sh->ready) == CL_CLIENTS && !CL_LD(&sh->failed)) {
        took = cl_wait(cl_under_way, 0, g_slow > 1 ? 2000 : 600);
        printf("    the clients were %sunder way %lld ms after they were "
               "ready\n", cl_under_way(sh, 0) ? "" : "NOT all ",
               (long long)took);
        for (g = 1; g <= restarts && !CL_LD(&sh->failed); g++) {
            int rc;
            sh->w_nev_at[g] = CL_LD(&sh->w_nev);
            sh->down_ms[g] = tu_now_ms();
            CL_ST(&sh->epoch, 2 * g - 1);
            rc = cl_restart(mode);
            sh->up_ms[g] = tu_now_ms();
            CL_ST(&sh->epoch, 2 * g);
            if (rc != 0) {
                printf("    restart %d (%s %s) failed: status %d\n", g,
                       g_srv->restart_cmd, mode, rc);
                failed_restart = 1;
                break;
            }
            took = cl_wait(cl_back, g, up_ms);
            printf("    restart %d: the clients were %sback %lld ms after "
                   "it\n", g, cl_back(sh, g) ? "" : "NOT all ",
                   (long long)took);
        }
        restarts = g - 1;
    } else {
        restarts = 0;
    }
    sh->w_nev_at[restarts + 1] = CL_LD(&sh->w_nev);
    t = tu_now_ms();
    CL_ST(&sh->stop, 1);
    hung = cl_reap_children(pids, npids, 60000 * (int64_t)g_slow);
    printf("    the clients ended %lld ms after the stop\n",
           (long long)(tu_now_ms() - t));

    /* What each client said, and the first thing that went wrong. */
    memset(all, 0, sizeof all);
    for (j = 0; j < CL_CLIENTS; j++) {
        char label2[64];
        for (i = 0; i < CL_NSTATUS; i++)
            all[i] += sh->c[j].by_status[i];
        snprintf(label2, sizeof label2, "%d %s:", j, sh->c[j].role);
        cl_print_statuses(label2, sh->c[j].by_status);
        if (sh->c[j].bad[0] != '\0')
            printf("    client %d (%s) FAILED: %s\n", j, sh->c[j].role,
                   sh->c[j].bad);
    }
    cl_print_statuses("all clients:", all);
    for (g = 1; g <= restarts; g++)
        printf("    restart %d: from %lld to %lld ms; the server known down "
               "at %lld ms\n", g,
               (long long)(sh->down_ms[g] - sh->down_ms[1]),
               (long long)(sh->up_ms[g] - sh->down_ms[1]),
               sh->server_down[g] != 0
                   ? (long long)(sh->server_down[g] - sh->down_ms[1]) : -1LL);
    for (i = 0; i < sh->w_nev && i < CL_EVENTS_MAX; i++)
        printf("    watched lease at %lld ms: %s (%s) %s\n",
               (long long)(sh->w_ev[i].t_ms - sh->down_ms[1]),
               sqllock_lease_state_name(sh->w_ev[i].state),
               sqllock_errname(sh->w_ev[i].status), sh->w_ev[i].msg);
    printf("    the holder saw its watched lease not held %d time(s)\n",
           sh->w_notheld);
    for (j = 0; j < CL_CLIENTS; j++)
        if (sh->c[j].first_econnect[0] != '\0')
            printf("    %d's first ECONNECT: %.150s\n", j,
                   sh->c[j].first_econnect);
    for (j = 0; j < CL_CLIENTS; j++)
        for (g = 1; g <= restarts; g++)
            if (j != CL_WAIT_LONG && sh->c[j].econnect[g] == 0) {
                cl_across_text(why, sizeof why, sh, &sh->c[j], g);
                printf("    client %d (%s) did not hear restart %d: %s\n",
                       j, sh->c[j].role, g, why);
            }
    if (failed_restart)
        fail_msg("the restart command failed");
    if (CL_LD(&sh->ready) != CL_CLIENTS)
        fail_msg("only %d of %d clients got ready", CL_LD(&sh->ready),
                 CL_CLIENTS);
    if (hung > 0 || CL_LD(&sh->failed) > 0)
        fail_msg("%d child process(es) hung or failed, %d failure(s) "
                 "recorded (see above)", hung, CL_LD(&sh->failed));

    /* Per restart: how long it took, and when each kind of client worked
     * again after it. */
    for (g = 1; g <= restarts; g++) {
        int64_t worst = INT64_MIN, w_first = -1, w_held = -1;
        int worst_c = -1, n_unc = 0, last_state = -1;

        for (j = 0; j < CL_CLIENTS; j++) {
            if (j == CL_WAIT_LONG)
                continue;    /* it may wait through a restart in one call */
            /* The restart cut every client's connection: the first call
             * on it, or any call while the server was down, said so --
             * unless that first call was a release or a renewal, which
             * the library sent again on a fresh connection (C3), as the
             * client's calls around the cut show (cl_resent). */
            if (sh->c[j].econnect[g] == 0 && !cl_resent(sh, &sh->c[j], g)) {
                cl_across_text(why, sizeof why, sh, &sh->c[j], g);
                fail_msg("E1: client %d (%s) never heard ECONNECT from "
                         "restart %d, which cut its connection: %s", j,
                         sh->c[j].role, g, why);
            }
            if (!sh->c[j].resumed[g])
                fail_msg("E1: client %d (%s) did not reach the server again "
                         "after restart %d, before the next one", j,
                         sh->c[j].role, g);
            if (sh->c[j].resume_at[g] - sh->up_ms[g] > worst) {
                worst = sh->c[j].resume_at[g] - sh->up_ms[g];
                worst_c = j;
            }
        }
        /* The watched lease's changes between this restart's start and
         * the next one's (or the stop), told apart by their number, not
         * their time: the change that let the next restart begin
         * (cl_back) may fall in the same millisecond as its start. */
        for (i = sh->w_nev_at[g];
             i < sh->w_nev_at[g + 1] && i < CL_EVENTS_MAX; i++) {
            const cl_event *e = &sh->w_ev[i];
            if (e->state == SQLLOCK_STATE_UNCERTAIN) {
                n_unc++;
                if (w_first < 0)
                    w_first = e->t_ms - sh->down_ms[g];
            }
            if (e->state == SQLLOCK_STATE_HELD)
                w_held = e->t_ms - sh->up_ms[g];
            last_state = e->state;
        }
        if (n_unc == 0)
            fail_msg("L7: restart %d: the watched lease never went "
                     "UNCERTAIN, though the renewer's connection was cut",
                     g);
        if (last_state != SQLLOCK_STATE_HELD)
            fail_msg("L7: restart %d: the watched lease did not come back "
                     "to HELD (last change: %s)", g,
                     sqllock_lease_state_name(last_state));
        if (!sh->r_resumed[g])
            fail_msg("P1: restart %d: no reaper pass succeeded after it", g);
        if (sh->gen_tok_min[g] == 0)
            fail_msg("restart %d: the counter's lease was never granted "
                     "after it", g);
        if (sh->gen_tok_min[g] <= sh->gen_tok_max[g - 1])
            fail_msg("L5: restart %d: token %lld after it, %lld before", g,
                     (long long)sh->gen_tok_min[g],
                     (long long)sh->gen_tok_max[g - 1]);
        printf("    restart %d: %s %s took %lld ms; after it (times from "
               "the command's end; negative: the server was up before the "
               "command saw it) every client reached the server again "
               "within %lld ms (slowest: %s); watched lease UNCERTAIN %lld "
               "ms after the stop began (%d time(s)), HELD again at %lld "
               "ms; reaper passed at %lld ms; counter tokens %lld..%lld "
               "before, %lld..%lld after\n", g,
               g_srv->restart_cmd, mode,
               (long long)(sh->up_ms[g] - sh->down_ms[g]), (long long)worst,
               worst_c >= 0 ? sh->c[worst_c].role : "-", (long long)w_first,
               n_unc, (long long)w_held, (long long)sh->r_resume_ms[g],
               (long long)sh->gen_tok_min[g - 1],
               (long long)sh->gen_tok_max[g - 1],
               (long long)sh->gen_tok_min[g], (long long)sh->gen_tok_max[g]);
    }
    if (restarts < 1)
        fail_msg("no restart was done");

    /* (a) and (b): the watched lease was never lost, and passed on with a
     * larger token only after its holder let it go. */
    if (sh->w_bad[0] != '\0')
        fail_msg("L7: the watched lease changed for an unclear reason: %s",
                 sh->w_bad);
    for (i = 0; i < sh->w_nev && i < CL_EVENTS_MAX; i++)
        if (sh->w_ev[i].state == SQLLOCK_STATE_LOST)
            fail_msg("L7: the watched lease was LOST (%s)",
                     sqllock_errname(sh->w_ev[i].status));
    if (sh->w_notheld > 0)
        fail_msg("L6: the holder saw its watched lease not held %d "
                 "time(s)", sh->w_notheld);
    if (sh->hold_grants < 2)
        fail_msg("L9: no waiter got the lease after the holder released it");
    for (i = 1; i < sh->hold_grants; i++)
        if (sh->hold_tokens[i] <= sh->hold_tokens[i - 1])
            fail_msg("L5: the held lease's tokens went %lld then %lld",
                     (long long)sh->hold_tokens[i - 1],
                     (long long)sh->hold_tokens[i]);

    /* (c) exclusion: no overlap, tokens up, the counter exact. */
    if (sh->overlaps > 0 || sh->token_back > 0)
        fail_msg("L1/L5: %d overlapping grants, %d tokens that did not "
                 "increase", sh->overlaps, sh->token_back);
    if (sh->counter != sh->increments)
        fail_msg("L1: the counter is %lld after %lld increments",
                 (long long)sh->counter, (long long)sh->increments);
    j = sh->nholds < CL_HOLDS_MAX ? sh->nholds : CL_HOLDS_MAX;
    qsort(sh->holds, (size_t)j, sizeof sh->holds[0], cl_hold_cmp);
    for (i = 1; i < j; i++)
        if (sh->holds[i].start_us < sh->holds[i - 1].end_us)
            fail_msg("L1: holds overlap: client %d (token %lld) from %lld "
                     "us, while client %d (token %lld) held until %lld us",
                     sh->holds[i].who, (long long)sh->holds[i].token,
                     (long long)sh->holds[i].start_us, sh->holds[i - 1].who,
                     (long long)sh->holds[i - 1].token,
                     (long long)sh->holds[i - 1].end_us);
    for (i = 1; i < j; i++)
        if (sh->holds[i].token <= sh->holds[i - 1].token)
            fail_msg("L5: token %lld held after token %lld",
                     (long long)sh->holds[i].token,
                     (long long)sh->holds[i - 1].token);

    /* The whole history against the lease model (tu_history.h): H3
     * above all -- no acknowledged grant or renewal forgotten by a
     * restart. */
    {
        char hp[1200];
        int bad;

        tu_hist_final(g_cl_hist, g_cl_counter, sh->counter);
        snprintf(hp, sizeof hp, "%s", tu_hist_path(g_cl_hist));
        tu_hist_close(g_cl_hist);
        g_cl_hist = NULL;
        bad = tu_hist_check(hp, stdout, NULL);
        if (bad != 0)
            fail_msg("the history checker found %d violations in %s", bad,
                     hp);
    }

    /* (d) the reapers. */
    if (sh->r_errors < restarts)
        fail_msg("P1: the reaper counted %lld failed passes over %d "
                 "restarts: each restart cut its connection",
                 (long long)sh->r_errors, restarts);
    if (sh->r_stop_ms > 2000 * g_slow)
        fail_msg("P3: the reaper took %lld ms to stop",
                 (long long)sh->r_stop_ms);
    if (sh->r_left != 0)
        fail_msg("P1: %lld expired orphans were left after the last pass",
                 (long long)sh->r_left);
    for (i = 0, sum = 0; i < CL_NSTATUS; i++)
        sum += sh->r_err_status[i];

    printf("    %d restarts (%s): counter %lld = %lld increments in %d holds "
           "(%lld skipped as no longer held), no overlap; held lease tokens "
           "%lld -> %lld; reaper %lld passes, %lld failed (ECONNECT seen %lld "
           "of %lld), %lld + %lld rows reaped of %lld orphans, stopped in "
           "%lld ms\n", restarts, mode, (long long)sh->counter,
           (long long)sh->increments, sh->nholds, (long long)sh->skipped,
           (long long)sh->hold_tokens[0],
           (long long)sh->hold_tokens[sh->hold_grants - 1],
           (long long)sh->r_passes, (long long)sh->r_errors,
           (long long)sh->r_err_status[SQLLOCK_ECONNECT], (long long)sum,
           (long long)sh->r_reaped, (long long)sh->r_oneshot_reaped,
           (long long)sh->r_orphans, (long long)sh->r_stop_ms);
    for (j = 0; j < CL_CLIENTS; j++)
        printf("    %-26s longest call %lld ms (%s)\n", sh->c[j].role,
               (long long)sh->c[j].longest_ms, sh->c[j].longest_what);
    munmap(sh, sizeof *sh);
    g_cl = NULL;
}

/*
 * Issue 7, fault 3 (E1, L1, L4, L5, L7, L9, P1, P3): the server is
 * restarted gracefully (PostgreSQL `pg_ctl restart -m fast`, MariaDB
 * SIGTERM) several times while clients hold, wait, count and reap.
 * Every client sees ECONNECT (and the watched lease UNCERTAIN) during an
 * outage, and only then; its next call reconnects; the watched lease
 * comes back to HELD and is never lost; no lease has two owners at any
 * instant, the counter ends exact, tokens keep increasing across the
 * restarts; the reaper resumes and stops promptly; nothing hangs.
 */
void test_restart_E1_L1_L5_L7_P1_clients_across_restart(void **state)
{
    (void)state;
    cl_run(g_srv->graceful_arg, tu_slowdown() > 1 ? 2 : 4, 1200,
           "graceful");
}

/* The same across crashes (PostgreSQL immediate stop, mariadbd SIGKILL),
 * fewer of them: a crash may forget a release (L10), which only keeps a
 * counter's lease busy until its ttl. */
void test_restart_E1_L1_L5_L10_clients_across_crash(void **state)
{
    (void)state;
    cl_run(g_srv->restart_arg[0] ? g_srv->restart_arg : "kill",
           tu_slowdown() > 4 ? 1 : 2, 2000, "crash");
}
