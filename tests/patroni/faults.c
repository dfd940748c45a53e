/*
 * faults.c -- test_patroni's case: the clients of every kind contend
 * through both routes while the cluster goes through a switchover,
 * kill-postgres, isolate and heal, kill-patroni and start-node; then the
 * figures, the kill-patroni probe's finding, and the checks (the
 * history, the counters, the tokens, the run exit codes).
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
#include "patroni.h"

int g_passed;
pid_t g_pids[PT_MAXC + 2];
int g_npids;

static const char *const kind_names[K_N] = {
    "lease", "sem", "rw", "leader", "row", "cas", "guard", "probe"
};

static int (*const kind_main[K_N])(pt_client *, int) = {
    pt_lease_main, pt_sem_main, pt_rw_main, pt_leader_main, pt_row_main,
    pt_cas_main, pt_guard_main, pt_probe_main
};

/* The clients: kind, processes per route (the probe: one, hosts). */
static const struct { int kind, per_route; } g_plan[] = {
    { K_LEASE, 1 }, { K_SEM, 2 }, { K_RW, 1 }, { K_LEADER, 1 },
    { K_ROW, 1 }, { K_CAS, 1 }, { K_GUARD, 1 },
};

static void set_phase(int p)
{
    char path[1200];
    FILE *fp;

    ST(&g_sh->phase, p);
    snprintf(path, sizeof path, "%s/phase", g_dir);
    fp = fopen(path, "w");
    if (fp != NULL) {
        fprintf(fp, "%d\n", p);
        fclose(fp);
    }
}

static void fork_client(int i)
{
    pt_client *c = &g_sh->c[i];
    pid_t pid;

    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid < 0)
        fail_msg("fork: %s", strerror(errno));
    if (pid == 0) {
        int rc;

        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        alarm((unsigned)(600 * g_slow));
        while (!LD(&g_sh->go) && getppid() == g_parent)
            tu_sleep_ms(5);
        c->pid_ok = 1;
        rc = kind_main[c->kind](c, i);
        fflush(stdout);
        _exit(rc);
    }
    g_pids[g_npids++] = pid;
}

/* pgN of the leader as etcd has it: 0..2; fails the case without one. */
static int leader_node(void)
{
    char out[256];
    int rc = pt_script("leader", NULL, out, sizeof out, NULL);

    if (rc != 0 || strncmp(out, "pg", 2) != 0 || out[2] < '1' ||
        out[2] > '3')
        fail_msg("patroni.sh leader: status %d, '%s'", rc, out);
    return out[2] - '1';
}

/* A fault command, or a wait, that must succeed; its printed ms. */
static int64_t must(const char *cmd, const char *arg)
{
    char out[256];
    int64_t ms;
    int rc = pt_script(cmd, arg, out, sizeof out, &ms);

    if (rc != 0)
        fail_msg("patroni.sh %s %s %s failed (status %d) after %lld ms; "
                 "its logs: %s/pg*/patroni.log", cmd, g_dir,
                 arg != NULL ? arg : "", rc, (long long)ms, g_dir);
    return out[0] != '\0' ? atoll(out) : ms;
}

static void begin_fault(int p, int old)
{
    pt_phase *ph = &g_sh->ph[p];

    ph->old_port = g_node_port[old];
    ph->lease_max_before = LD(&g_sh->lease_max_acked);
    ph->t_fault_wall_ms = pt_wall_ms();
    ST(&ph->t_fault_us, tu_now_us());
    set_phase(p);
}

/* Until both routes had a grant on the new leader (or `ms` passed). */
static void wait_first(int p, int64_t ms)
{
    pt_phase *ph = &g_sh->ph[p];

    TU_WAIT_WHILE((LD(&ph->first_new_us[R_HAPROXY]) == 0 ||
                   LD(&ph->first_new_us[R_HOSTS]) == 0) &&
                  !LD(&g_sh->failed), tu_now_ms() + ms, 20);
}

static void print_phase(int p, int old, int now_leader, int64_t script_ms,
                        const char *script_what)
{
    pt_phase *ph = &g_sh->ph[p];
    int r;

    printf("    %s: leader pg%d -> pg%d; %s %lld ms\n", pt_phase_name(p),
           old + 1, now_leader + 1, script_what, (long long)script_ms);
    for (r = 0; r < R_N; r++) {
        int64_t f = LD(&ph->first_new_us[r]);
        char label[64];

        if (f != 0)
            printf("      %-7s first grant on the new leader %lld ms after "
                   "the fault (%s)\n", pt_route_name(r),
                   (long long)((f - ph->t_fault_us) / 1000),
                   ph->first_new_what[r]);
        else
            printf("      %-7s no grant on the new leader yet\n",
                   pt_route_name(r));
        snprintf(label, sizeof label, "      %s statuses:", pt_route_name(r));
        tu_print_statuses(label, 26, ph->st[r], NST);
        if (ph->first_err_us[r] != 0)
            printf("        first error %lld ms after the fault: %.150s\n",
                   (long long)((ph->first_err_us[r] - ph->t_fault_us) / 1000),
                   ph->first_msg[r]);
    }
    fflush(stdout);
}

/* ------------------------------------------------------------------ */
/* The faults                                                          */
/* ------------------------------------------------------------------ */

static void fault_switchover(void)
{
    int64_t ms;
    int old;

    must("wait-sync", "60");
    old = leader_node();
    begin_fault(PH_SWITCHOVER, old);
    ms = must("switchover", NULL);
    wait_first(PH_SWITCHOVER, 30000 * (int64_t)g_slow);
    print_phase(PH_SWITCHOVER, old, leader_node(), ms,
                "switchover: a write through HAProxy after");
}

static void fault_kill_postgres(void)
{
    int64_t ms;
    int old;

    must("wait-sync", "60");
    old = leader_node();
    begin_fault(PH_KILL_PG, old);
    must("kill-postgres", NULL);
    ms = must("wait-leader", "60");
    wait_first(PH_KILL_PG, 30000 * (int64_t)g_slow);
    print_phase(PH_KILL_PG, old, leader_node(), ms,
                "wait-leader: a write through HAProxy after");
}

static void fault_isolate(void)
{
    int64_t ms, heal;
    int old;

    must("wait-sync", "60");
    old = leader_node();
    begin_fault(PH_ISOLATE, old);
    must("isolate", NULL);
    ms = must("wait-leader", "60");
    wait_first(PH_ISOLATE, 30000 * (int64_t)g_slow);
    heal = tu_now_ms();
    must("heal", NULL);
    printf("    heal took %lld ms\n", (long long)(tu_now_ms() - heal));
    print_phase(PH_ISOLATE, old, leader_node(), ms,
                "wait-leader: a write through HAProxy after");
}

/* The old primary's postmaster (node 0..2), or 0. */
static pid_t postmaster_of(int node)
{
    char path[1200], buf[64], cmd[2048];
    size_t n, i;
    pid_t pid;

    snprintf(path, sizeof path, "%s/pg%d/data/postmaster.pid", g_dir,
             node + 1);
    tu_read_file(path, buf, sizeof buf);
    pid = (pid_t)atol(buf);
    if (pid <= 0)
        return 0;
    /* Its command line names DIR (a pid reused by another process does
     * not). */
    snprintf(path, sizeof path, "/proc/%ld/cmdline", (long)pid);
    n = tu_read_file(path, cmd, sizeof cmd);
    for (i = 0; i < n; i++)
        if (cmd[i] == '\0')
            cmd[i] = ' ';
    return strstr(cmd, g_dir) != NULL ? pid : 0;
}

/*
 * Fences the old primary before its Patroni starts again: an immediate
 * shutdown (SIGQUIT to its postmaster), as a watchdog would have done.
 * Without it, Patroni 3.0.2 starting on a node whose postgres still runs
 * as a primary first rewrites postgresql.conf and reloads it --
 * synchronous_standby_names reset to '' -- and only about half a second
 * later demotes it: in between, every commit waiting there for the
 * standby that now follows the new leader, and every new one, is
 * acknowledged, then rewound away (seen here: leases, permits and guarded
 * writes acknowledged on the old primary while the new one granted the
 * same names; SQLLOCK_TEST_PATRONI_NO_FENCE=1 shows it).
 */
static void fence(int node)
{
    pid_t pid = postmaster_of(node);
    int64_t t = tu_now_ms();
    char path[64], st[512];

    if (pid <= 0) {
        printf("    fence: pg%d's postmaster does not run\n", node + 1);
        return;
    }
    if (kill(pid, SIGQUIT) != 0)
        fail_msg("fence: SIGQUIT to pg%d's postmaster %ld: %s", node + 1,
                 (long)pid, strerror(errno));
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    while (tu_now_ms() - t < 30000 * g_slow) {
        char *rp;

        /* Gone, or a zombie its new parent has yet to reap. */
        if (tu_read_file(path, st, sizeof st) == 0 ||
            ((rp = strrchr(st, ')')) != NULL && rp[1] == ' ' && rp[2] == 'Z'))
            break;
        tu_sleep_ms(20);
    }
    if (postmaster_of(node) == pid && tu_read_file(path, st, sizeof st) > 0 &&
        !(strrchr(st, ')') != NULL && strrchr(st, ')')[2] == 'Z'))
        fail_msg("fence: pg%d's postmaster %ld still runs %lld ms after "
                 "SIGQUIT", node + 1, (long)pid,
                 (long long)(tu_now_ms() - t));
    printf("    fenced the old primary pg%d (immediate shutdown, %lld ms) "
           "after %lld ms with two primaries\n", node + 1,
           (long long)(tu_now_ms() - t),
           (long long)((tu_now_us() - LD(&g_sh->hz_t_leader_us)) / 1000));
}

/* Two primaries for a while: the probe measures what a row lock and a
 * lease do on each. */
static void fault_kill_patroni(int *old_out, int *new_out)
{
    pt_phase *ph = &g_sh->ph[PH_KILL_PATRONI];
    int64_t ms, t, econn0, tries0, start_ms;
    int old, now_leader;
    char node[16];

    must("wait-sync", "60");
    old = leader_node();
    *old_out = old;
    pt_old_first_url(g_sh->hazard_url, sizeof g_sh->hazard_url, old);
    ST(&g_sh->hz_t_leader_us, 0);
    ST(&g_sh->hazard_on, 1);
    /* With one primary, the probe's second holder is kept out. */
    t = tu_now_ms();
    while (LD(&g_sh->hz_excluded) < 3 && !LD(&g_sh->failed) &&
           tu_now_ms() - t < 10000 * g_slow)
        tu_sleep_ms(20);
    printf("    kill-patroni probe, before the fault: %lld tries, %lld with "
           "the second holder kept out (one primary)\n",
           (long long)LD(&g_sh->hz_tries), (long long)LD(&g_sh->hz_excluded));
    begin_fault(PH_KILL_PATRONI, old);
    must("kill-patroni", NULL);
    ms = must("wait-leader", "60");
    ST(&g_sh->hz_t_leader_us, tu_now_us());
    now_leader = leader_node();
    *new_out = now_leader;
    /* Two primaries now: until the probe has tried both sides a few
     * times and a lease try on the old one has ended. */
    econn0 = LD(&g_sh->hz_lease_st[SQLLOCK_ECONNECT]);
    tries0 = LD(&g_sh->hz_tries);
    t = tu_now_ms();
    while ((LD(&g_sh->hz_lease_st[SQLLOCK_ECONNECT]) == econn0 ||
            LD(&g_sh->hz_tries) - tries0 < 10 ||
            LD(&ph->first_new_us[R_HAPROXY]) == 0) &&
           !LD(&g_sh->failed) && tu_now_ms() - t < 12000 * g_slow)
        tu_sleep_ms(20);
    snprintf(node, sizeof node, "pg%d", old + 1);
    if (getenv("SQLLOCK_TEST_PATRONI_NO_FENCE") == NULL ||
        strcmp(getenv("SQLLOCK_TEST_PATRONI_NO_FENCE"), "1") != 0)
        fence(old);
    else
        printf("    SQLLOCK_TEST_PATRONI_NO_FENCE=1: Patroni is started on "
               "the old primary while it runs\n");
    start_ms = tu_now_ms();
    must("start-node", node);
    start_ms = tu_now_ms() - start_ms;
    ST(&g_sh->hazard_on, 0);
    printf("    start-node %s took %lld ms\n", node, (long long)start_ms);
    wait_first(PH_KILL_PATRONI, 30000 * (int64_t)g_slow);
    print_phase(PH_KILL_PATRONI, old, now_leader, ms,
                "wait-leader: a write through HAProxy on another node after");
}

/* ------------------------------------------------------------------ */
/* Checks                                                              */
/* ------------------------------------------------------------------ */

/* Every client (the probe aside) acknowledged something in phase `p`;
 * the leader candidates count as one. */
static int all_ok_in(int p, char *who, size_t size)
{
    int i, leader = 0, nleader = 0;

    for (i = 0; i < g_sh->nclients; i++) {
        pt_client *c = &g_sh->c[i];

        if (c->kind == K_PROBE)
            continue;
        if (c->kind == K_LEADER) {
            nleader++;
            leader += LD(&c->ok_phase[p]) > 0;
            continue;
        }
        if (LD(&c->ok_phase[p]) == 0) {
            snprintf(who, size, "%s", c->who);
            return 0;
        }
    }
    if (nleader > 0 && leader == 0) {
        snprintf(who, size, "the leader candidates");
        return 0;
    }
    return 1;
}

/* Fails the case with the first client's own failure, if any. */
static void check_clients(const char *when)
{
    int k;

    for (k = 0; k < g_sh->nclients; k++)
        if (g_sh->c[k].bad[0] != '\0')
            fail_msg("%s: %s: %s (history: %s/history)", when,
                     g_sh->c[k].who, g_sh->c[k].bad, g_dir);
}

static int run_ok_in(int p)
{
    int64_t by[R_N][PH_N][5], first[R_N][PH_N], count;
    int bad;

    pt_run_read(by, first, &bad, &count);
    return by[R_HAPROXY][p][0] > 0 && by[R_HOSTS][p][0] > 0;
}

/* An integer from one statement through HAProxy, after the clients. */
static int64_t final_int(sqllock_db *db, const char *sql)
{
    int64_t v = 0;
    int has = 0;

    TU_ASSERT_RC(sqllock_db_exec(db, sql, NULL, 0, &has, &v, NULL),
                 SQLLOCK_OK, db);
    if (!has)
        fail_msg("%s returned no row", sql);
    return v;
}

static void report_clients(void)
{
    int i, p;

    printf("    clients (acknowledged grants or writes per phase: warm-up, "
           "switchover, kill-postgres, isolate, kill-patroni, after):\n");
    for (i = 0; i < g_sh->nclients; i++) {
        pt_client *c = &g_sh->c[i];

        if (c->kind == K_PROBE)
            continue;
        printf("      %-16s", c->who);
        for (p = 0; p < PH_N; p++)
            printf(" %5lld", (long long)c->ok_phase[p]);
        printf("; longest call %lld ms (%s)", (long long)c->longest_ms,
               c->longest_what[0] ? c->longest_what : "-");
        if (c->kind == K_LEADER)
            printf("; %lld terms, elected %lld, lost: timeout %lld, lost "
                   "%lld, handed over %lld%s%.120s", (long long)c->terms,
                   (long long)c->elected,
                   (long long)c->lost_by[SQLLOCK_TIMEOUT],
                   (long long)c->lost_by[SQLLOCK_LOST],
                   (long long)c->lost_by[SQLLOCK_OK],
                   c->leader_err[0] ? "; last error: " : "", c->leader_err);
        printf("\n");
    }
}

static void report_probe(int old, int now_leader)
{
    pt_phase *ph = &g_sh->ph[PH_KILL_PATRONI];
    int std_first = old < now_leader;
    int64_t fb = LD(&g_sh->hz_first_both_us);

    printf("    kill-patroni, two primaries (old pg%d, new pg%d):\n", old + 1,
           now_leader + 1);
    printf("      row lock of %s id 2, A on the hosts list with pg%d first "
           "(%s), B through HAProxy while A holds it: %lld tries: both "
           "granted %lld (%lld after the new leader took writes), B kept "
           "out %lld, A only %lld (B could not connect: HAProxy has no "
           "primary from the kill until the promotion), B only %lld, "
           "neither %lld\n", T_ROW,
           old + 1, g_sh->hazard_url[0] ? "the old primary while it is "
           "read-write" : "?", (long long)g_sh->hz_tries,
           (long long)g_sh->hz_both, (long long)g_sh->hz_both_after,
           (long long)g_sh->hz_excluded, (long long)g_sh->hz_a_only,
           (long long)g_sh->hz_b_only, (long long)g_sh->hz_none);
    if (fb != 0)
        printf("      TWO ROW-LOCK HOLDERS AT ONCE (documented hazard): "
               "first %lld ms after kill-patroni, A on port %d (pg%d), B on "
               "port %d (pg%d)\n", (long long)((fb - ph->t_fault_us) / 1000),
               g_sh->hz_port_a, pt_node_of_port(g_sh->hz_port_a) + 1,
               g_sh->hz_port_b, pt_node_of_port(g_sh->hz_port_b) + 1);
    else
        printf("      no two row-lock holders were seen at once\n");
    tu_print_statuses("      A's failures:", 26, g_sh->hz_a_st, NST);
    tu_print_statuses("      B's failures:", 26, g_sh->hz_b_st, NST);
    tu_print_statuses("      A's lease tries:", 26, g_sh->hz_lease_st, NST);
    printf("      the longest lease try took %lld ms (the round-trip bound "
           "is %lld ms, plus the handle's 100 ms lock timeout); acknowledged "
           "on the old primary after the new leader took writes: %lld\n",
           (long long)g_sh->hz_lease_longest_ms, (long long)g_stmt_ms,
           (long long)g_sh->hz_lease_ok_old_after);
    printf("      row-lock clients' sections at once: %lld during "
           "kill-patroni, %lld in all\n", (long long)g_sh->row_overlaps_kp,
           (long long)g_sh->row_overlaps);
    printf("      the plain hosts URL (pg1,pg2,pg3) lists the old leader "
           "pg%d %s the new one: its clients %s\n", old + 1,
           std_first ? "before" : "after",
           std_first ? "reconnect to the old primary until start-node "
                       "demotes it"
                     : "reconnect to the new primary");
}

/* ------------------------------------------------------------------ */
/* The case                                                            */
/* ------------------------------------------------------------------ */

/*
 * Clients of every kind, through HAProxy and through the hosts list,
 * contend while the cluster is switched over, has its leader's
 * postmaster killed, has its leader cut off from etcd and healed, and
 * has its leader's Patroni killed (two primaries until start-node). No
 * acknowledged grant is lost (H3), no two owners hold at once (H1, M1,
 * M2, M4), tokens grow across every fault (H2, L5), writes are accepted
 * only for live holds (H5, G1) and counted (H6); every client resumes.
 * A row lock on each primary at once during kill-patroni is the
 * documented hazard: reported, not failed.
 */
void test_patroni_faults_L1_L5_L10_G1_M1_M2_M4_X2(void **state)
{
    int64_t t_case = tu_now_ms(), t, guard_n, cas_n, row_n, run_count;
    int64_t run_by[R_N][PH_N][5], run_first[R_N][PH_N];
    char hp[1200], who[64], stop_path[1200];
    int i, k, r, n = 0, old = -1, now_leader = -1, bad_tokens, runs, bad;
    tu_hist_result hr;
    sqllock_db *db;
    FILE *fp;
    void *v = NULL;
    size_t vlen = 0;

    (void)state;
    if (g_cannot[0] != '\0')
        tu_cannot_run("%s", g_cannot);
    g_slow = tu_slowdown();
    g_ttl_ms = 6000 * (int64_t)g_slow;
    g_stmt_ms = 3000 * (int64_t)g_slow;
    snprintf(hp, sizeof hp, "%s/history", g_dir);
    g_hist = tu_hist_open(hp);
    if (g_hist == NULL)
        fail_msg("history %s: %s", hp, strerror(errno));
    tu_hist_capacity(g_hist, N_SEM, PT_SEM_PERMITS);
    g_sh = tu_shared_map(sizeof *g_sh);
    set_phase(PH_WARM);
    /* The clients first: the parent opens its handles after the forks. */
    for (i = 0; i < (int)(sizeof g_plan / sizeof *g_plan); i++)
        for (r = 0; r < R_N; r++)
            for (k = 0; k < g_plan[i].per_route; k++) {
                pt_client *c = &g_sh->c[n];

                c->kind = g_plan[i].kind;
                c->route = r;
                snprintf(c->who, sizeof c->who, "%s-%s-%d",
                         kind_names[c->kind], pt_route_name(r), k);
                n++;
            }
    g_sh->c[n].kind = K_PROBE;
    g_sh->c[n].route = R_HOSTS;
    snprintf(g_sh->c[n].who, sizeof g_sh->c[n].who, "probe");
    n++;
    g_sh->nclients = n;
    for (i = 0; i < n; i++)
        fork_client(i);
    for (r = 0; r < R_N; r++)
        g_pids[g_npids++] = pt_run_loop(r);
    g_sh->t0_us = tu_now_us();
    ST(&g_sh->go, 1);

    /* Under way: every client has had a grant. */
    t = tu_now_ms();
    while ((!all_ok_in(PH_WARM, who, sizeof who) || !run_ok_in(PH_WARM)) &&
           !LD(&g_sh->failed) && tu_now_ms() - t < 30000 * g_slow)
        tu_sleep_ms(50);
    check_clients("warm-up");
    if (!all_ok_in(PH_WARM, who, sizeof who) || !run_ok_in(PH_WARM))
        fail_msg("warm-up: %s (or a `sqllock run` loop) had no grant within "
                 "%lld ms", who, (long long)(tu_now_ms() - t));
    printf("    %d client processes and 2 `sqllock run` loops under way "
           "after %lld ms\n", n, (long long)(tu_now_ms() - t));

    fault_switchover();
    check_clients(pt_phase_name(LD(&g_sh->phase)));
    fault_kill_postgres();
    check_clients(pt_phase_name(LD(&g_sh->phase)));
    fault_isolate();
    check_clients(pt_phase_name(LD(&g_sh->phase)));
    fault_kill_patroni(&old, &now_leader);
    check_clients(pt_phase_name(LD(&g_sh->phase)));

    /* After the faults: every client acknowledged again. */
    must("wait-sync", "60");
    set_phase(PH_AFTER);
    t = tu_now_ms();
    while ((!all_ok_in(PH_AFTER, who, sizeof who) || !run_ok_in(PH_AFTER)) &&
           !LD(&g_sh->failed) && tu_now_ms() - t < 30000 * g_slow)
        tu_sleep_ms(50);
    check_clients("after the faults");
    if (!all_ok_in(PH_AFTER, who, sizeof who))
        fail_msg("E1: %s had no grant within %lld ms after the last fault",
                 who, (long long)(tu_now_ms() - t));
    if (!run_ok_in(PH_AFTER))
        fail_msg("E1: a `sqllock run` loop had no run exit 0 within %lld ms "
                 "after the last fault", (long long)(tu_now_ms() - t));

    /* Stop and reap. */
    ST(&g_sh->stop, 1);
    snprintf(stop_path, sizeof stop_path, "%s/stop", g_dir);
    fp = fopen(stop_path, "w");
    if (fp != NULL)
        fclose(fp);
    bad = tu_reap_children(g_pids, g_npids, 60000 * (int64_t)g_slow, NULL);
    g_npids = 0;

    report_clients();
    report_probe(old, now_leader);
    runs = pt_run_read(run_by, run_first, &bad_tokens, &run_count);
    for (r = 0; r < R_N; r++) {
        int p;

        printf("    `sqllock run` via %s, per phase (exit 0 / 76 lost / 69 "
               "database / 75 busy / other):", pt_route_name(r));
        for (p = 0; p < PH_N; p++)
            printf(" %lld/%lld/%lld/%lld/%lld",
                   (long long)run_by[r][p][0], (long long)run_by[r][p][1],
                   (long long)run_by[r][p][2], (long long)run_by[r][p][3],
                   (long long)run_by[r][p][4]);
        printf("\n      the first run that started after the fault and "
               "exited 0 ended (ms after the fault):");
        for (p = 1; p < PH_N - 1; p++)
            printf(" %s %lld", pt_phase_name(p), (long long)run_first[r][p]);
        printf("\n");
    }

    /* The final values, through HAProxy. */
    db = NULL;
    t = tu_now_ms();
    while (sqllock_open(g_haproxy, NULL, &db) != SQLLOCK_OK &&
           tu_now_ms() - t < 30000 * g_slow) {
        sqllock_close(db);
        db = NULL;
        tu_sleep_ms(100);
    }
    if (db == NULL)
        fail_msg("cannot open %s for the final values", "HAProxy");
    guard_n = final_int(db, "SELECT n FROM " T_GUARD " WHERE id = 1");
    row_n = final_int(db, "SELECT n FROM " T_ROW " WHERE id = 1");
    TU_ASSERT_RC(sqllock_record_get(db, N_CAS, &v, &vlen, NULL), SQLLOCK_OK,
                 db);
    cas_n = atoll((const char *)v);
    sqllock_free(v);
    sqllock_close(db);

    /* The history, with the final values (H6). */
    tu_hist_final(g_hist, N_LEASE, g_sh->lease_counter);
    tu_hist_final(g_hist, N_LEADER, g_sh->leader_counter);
    tu_hist_final(g_hist, N_GUARD, guard_n);
    tu_hist_final(g_hist, N_CAS, cas_n);
    tu_hist_final(g_hist, N_RUN, run_count);
    tu_hist_close(g_hist);
    g_hist = NULL;
    i = tu_hist_check(hp, stdout, &hr);

    printf("    row lock: %lld sections, counter %lld (acknowledged commits "
           "%lld, undecided %lld), shared-memory counter %lld\n",
           (long long)g_sh->row_sections, (long long)row_n,
           (long long)g_sh->row_acked, (long long)g_sh->row_undecided,
           (long long)g_sh->row_shm);
    printf("    CAS: record %lld (acknowledged %lld, undecided %lld); guard: "
           "row %lld; lease counter %lld; leader counter %lld; run counter "
           "%lld (%d runs)\n", (long long)cas_n, (long long)g_sh->cas_acked,
           (long long)g_sh->cas_undecided, (long long)guard_n,
           (long long)g_sh->lease_counter, (long long)g_sh->leader_counter,
           (long long)run_count, runs);
    printf("    leaders at once by their callbacks: %lld (a lost callback "
           "may come after the local deadline, sqllock.h; judged by "
           "sqllock_leader_is_leader() in the history)\n",
           (long long)g_sh->leader_cb_overlaps);
    for (k = PH_SWITCHOVER; k <= PH_KILL_PATRONI; k++)
        printf("    L5 across %s: largest token of %s acknowledged before "
               "%lld, smallest granted after %lld\n", pt_phase_name(k),
               N_LEASE, (long long)g_sh->ph[k].lease_max_before,
               (long long)g_sh->ph[k].lease_min_after);
    printf("    %lld ms in all (the cluster's start excluded)\n",
           (long long)(tu_now_ms() - t_case));

    /* Judgement. */
    check_clients("at the end");
    if (bad != 0)
        fail_msg("%d client process(es) hung or failed (history: %s)", bad,
                 hp);
    if (i != 0)
        fail_msg("the history checker found %d violation(s) in %s (kept)",
                 i, hp);
    for (k = PH_SWITCHOVER; k <= PH_KILL_PATRONI; k++)
        if (g_sh->ph[k].lease_min_after == 0 ||
            g_sh->ph[k].lease_min_after <= g_sh->ph[k].lease_max_before)
            fail_msg("L5 across %s: smallest token after %lld, largest "
                     "before %lld (history: %s)", pt_phase_name(k),
                     (long long)g_sh->ph[k].lease_min_after,
                     (long long)g_sh->ph[k].lease_max_before, hp);
    if (g_sh->row_overlaps > g_sh->row_overlaps_kp)
        fail_msg("R1: %lld row-lock sections overlapped outside "
                 "kill-patroni", (long long)(g_sh->row_overlaps -
                                             g_sh->row_overlaps_kp));
    if (row_n < g_sh->row_acked ||
        row_n > g_sh->row_acked + g_sh->row_undecided)
        fail_msg("R4: the row-lock counter is %lld after %lld acknowledged "
                 "and %lld undecided commits", (long long)row_n,
                 (long long)g_sh->row_acked, (long long)g_sh->row_undecided);
    if (g_sh->row_overlaps == 0 && g_sh->row_shm != g_sh->row_sections)
        fail_msg("R1: the shared-memory counter is %lld after %lld row-lock "
                 "sections", (long long)g_sh->row_shm,
                 (long long)g_sh->row_sections);
    if (cas_n < g_sh->cas_acked ||
        cas_n > g_sh->cas_acked + g_sh->cas_undecided)
        fail_msg("O2: the CAS record is %lld after %lld acknowledged and "
                 "%lld undecided updates", (long long)cas_n,
                 (long long)g_sh->cas_acked, (long long)g_sh->cas_undecided);
    if (bad_tokens != 0)
        fail_msg("L5: %d `sqllock run` tokens were not above the one before",
                 bad_tokens);
    for (r = 0; r < R_N; r++)
        for (k = 0; k < PH_N; k++)
            if (run_by[r][k][4] != 0)
                fail_msg("`sqllock run` via %s exited %lld time(s) with a "
                         "code other than 0, 69, 75, 76 in %s (see "
                         "%s/run-err-%s)", pt_route_name(r),
                         (long long)run_by[r][k][4], pt_phase_name(k), g_dir,
                         pt_route_name(r));
    munmap(g_sh, sizeof *g_sh);
    g_sh = NULL;
    g_passed = 1;
}
