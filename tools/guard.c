/*
 * guard.c -- the guard process of `sqllock run` (DESIGN X1: the command
 * never outlives its runner's hold).
 *
 * The runner holds the lease; the command must not run on without it.
 * The runner cannot see to that by itself: SIGKILL (the OOM killer,
 * kill -9, a crashed supervisor) ends it without a chance to act, and
 * SIGSTOP (or a frozen runner, a long pause) keeps it from acting while
 * its lease runs out. So the command is started, watched and ended by a
 * second process, the guard:
 *
 *   runner (sqllock run, threads, database)
 *     `- guard (this file: one thread, no database, its own group)
 *          `- the command (its own process group, as before)
 *               `- whatever the command starts
 *
 * The guard is forked at the start of `run`, before the database is
 * opened and before any thread exists, so that the copy may do anything
 * (a copy of a process with threads may only make async-signal-safe
 * calls until it executes a program) and holds nothing but what the
 * command must inherit too. It never executes another program: it waits
 * for the runner's CLI_GUARD_START, with the lease's name, owner and
 * token for the command's environment, then starts the command and
 * serves the runner (guard.h lists the messages). What makes it a guard:
 *
 *   - The pipe from the runner has no other writer, so its end of file
 *     means the runner is gone (whatever killed it). The guard then
 *     kills the command's group and every descendant with SIGKILL at
 *     once, reaps them, and exits.
 *   - It is a child subreaper (PR_SET_CHILD_SUBREAPER), set before the
 *     command starts: a process the command starts and leaves behind --
 *     a daemon that double-forks, a child in a session of its own
 *     (setsid) or a group of its own -- is re-parented to the guard
 *     instead of init, so it stays a descendant that /proc shows and the
 *     guard can kill and reap.
 *   - The command gets PR_SET_PDEATHSIG(SIGKILL) before it executes. It
 *     fires when the thread that forked it ends; the guard has only one
 *     thread, so that is when the guard dies (SIGKILL of the guard
 *     itself). The runner is a child subreaper too, so what the command
 *     started then comes to the runner, which kills it.
 *   - The runner tells it the lease's local deadline (DESIGN L6) after
 *     every renewal. If the deadline passes before a later one comes --
 *     the runner is stopped, paused or starved -- the guard stops the
 *     command itself, as after a loss: --signal, then SIGKILL after
 *     --kill-after. The runner, when it runs again, finds the lease lost
 *     (DESIGN X3) and exits 76.
 *   - The guard is in a process group of its own, so a signal to the
 *     runner's group (kill -9 -PGID) does not end both at once. It
 *     ignores the terminal's and the usual termination signals; the
 *     command gets the dispositions and mask `run` started with.
 *
 * When the command ends, the guard reports its status, then looks for
 * what it left running. Nothing of the job may run on once the lease is
 * given up, so what is left gets --signal, then SIGKILL after
 * --kill-after (at once when the lease was lost), and only when nothing
 * is left does the guard report CLI_GUARD_DONE and exit; the runner
 * releases the lease after that.
 *
 * What remains uncovered: a runner and its guard killed together (kill
 * -9 of both pids, `pkill -9 sqllock`) -- the command gets SIGKILL, but
 * what it started is re-parented to init; a process the job has someone
 * else start (systemd-run, at, ssh, a container runtime) is no
 * descendant; a descendant running as another user (sudo, set-user-ID)
 * cannot be signalled without privilege; one in uninterruptible sleep
 * dies when it wakes. Without Linux's prctl() the guard still kills the
 * command's group when the runner is gone, but an orphan escapes.
 *
 * Descendants are found by reading every /proc/PID/stat (not
 * /proc/PID/task/TID/children, which needs CONFIG_PROC_CHILDREN and
 * misses children of other threads); the kill is repeated until none is
 * left, as the list is only a snapshot.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "cli.h"
#include "guard.h"

extern char **environ;

/* The signals whose disposition the guard changes: the first eight are
 * ignored, SIGCHLD gets a handler. The command gets them back as they
 * were. */
static const int guard_sigs[] = {
    SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGTTIN, SIGTTOU, SIGTSTP,
    SIGCHLD
};
#define GUARD_NSIGS 9

/* The largest CLI_GUARD_START payload: three variables and a URL that
 * fits in --db-file's limit. */
#define GUARD_PAYLOAD_MAX (CLI_DB_FILE_MAX + 4096)

/* The longest the guard sleeps between looks: pselect() counts
 * CLOCK_MONOTONIC time, which stops while the host is suspended, so the
 * guard reads the deadline clock again at least this often and stops
 * the job at most this long after a resume that found the lease's local
 * deadline passed (DESIGN T1). */
#define GUARD_MAX_NAP_US 1000000
/* How often the guard looks again while it kills, and while processes
 * the command left behind are still running. */
#define GUARD_KILL_ROUND_US 5000
#define GUARD_LEFTOVER_ROUND_US 50000

/* The variables the runner sets in the command's environment or takes
 * out of it (DESIGN C4: SQLLOCK_DB may hold a password): inherited
 * values of these are dropped. */
static const char *const guard_own_vars[] = {
    "SQLLOCK_NAME", "SQLLOCK_OWNER", "SQLLOCK_TOKEN", CLI_DB_ENV,
    CLI_DB_FILE_ENV, NULL
};

typedef struct guard {
    const cli_guard_cfg *cfg;
    int ctl;                   /* from the runner */
    int sts;                   /* to the runner */
    struct sigaction old[GUARD_NSIGS];
    sigset_t oldmask;          /* the mask `run` started with */
    sigset_t waitmask;         /* in pselect(): SIGCHLD unblocked */
    char *payload;             /* CLI_GUARD_START's variables */
    size_t payload_len;
    char **env;                /* the command's environment */
    pid_t self;
    pid_t cmd;                 /* the command until it is reaped, then 0 */
    pid_t target;              /* what kill() gets: -cmd or cmd */
    int runner_gone;           /* end of file from the runner */
    int lost;                  /* the lease is lost, or its deadline
                                  passed */
    int stopping;              /* --signal was sent */
    int killing;               /* SIGKILL to all that is left, each round */
    int64_t kill_at_us;        /* when SIGKILL follows --signal */
    int64_t deadline_us;       /* the lease's local deadline, 0 unknown */
} guard;

/* The clock of the lease's local deadline, the library's (CLOCK_BOOTTIME
 * where there is one, so that a suspended host's sleep counts). */
int64_t cli_guard_now_us(void)
{
    return sqllock_now_us();
}

/* Sends a message to the runner; a runner that is gone reads nothing
 * (SIGPIPE is ignored here), and that is all right. */
static void tell(guard *g, int op, int arg, int64_t value)
{
    cli_guard_send(g->sts, op, arg, value);
}

void cli_guard_send(int fd, int op, int arg, int64_t value)
{
    cli_guard_msg m;
    ssize_t n;

    if (fd < 0)
        return;
    m.op = op;
    m.arg = arg;
    m.value = value;
    do
        n = write(fd, &m, sizeof m);
    while (n < 0 && errno == EINTR);
}

/* Reads exactly `len` bytes; 0 on success, -1 at end of file or on an
 * error. */
static int read_full(int fd, void *buf, size_t len)
{
    char *p = buf;

    while (len > 0) {
        ssize_t n = read(fd, p, len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static void on_chld(int sig)
{
    /* Only to make pselect() return. */
    (void)sig;
}

/* Saves the dispositions and mask the guard started with (those `run`
 * started with), ignores the signals that must not end the guard, and
 * blocks SIGCHLD except inside pselect(). */
static int take_signals(guard *g)
{
    struct sigaction ign, chld;
    sigset_t set;
    int i;

    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    memset(&chld, 0, sizeof chld);
    chld.sa_handler = on_chld;
    chld.sa_flags = SA_NOCLDSTOP | SA_RESTART;
    sigemptyset(&chld.sa_mask);
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    if (sigprocmask(SIG_BLOCK, &set, &g->oldmask) != 0)
        return -1;
    g->waitmask = g->oldmask;
    sigdelset(&g->waitmask, SIGCHLD);
    for (i = 0; i < GUARD_NSIGS; i++) {
        if (sigaction(guard_sigs[i], NULL, &g->old[i]) != 0)
            return -1;
        if (sigaction(guard_sigs[i], guard_sigs[i] == SIGCHLD ? &chld : &ign,
                      NULL) != 0)
            return -1;
    }
    return 0;
}

/* Builds the command's environment: the guard's own (the runner's, which
 * the runner never changes) without guard_own_vars, with the payload's
 * variables. The strings stay in the environment and the payload. */
static int build_env(guard *g)
{
    size_t count = 0, nvars = 0, i, k, off;
    char **env;
    int n = 0;

    while (environ != NULL && environ[count] != NULL)
        count++;
    for (off = 0; off < g->payload_len; off += strlen(g->payload + off) + 1)
        nvars++;
    env = malloc((count + nvars + 1) * sizeof *env);
    if (env == NULL)
        return -1;
    for (off = 0; off < g->payload_len; off += strlen(g->payload + off) + 1)
        env[n++] = g->payload + off;
    for (i = 0; i < count; i++) {
        for (k = 0; guard_own_vars[k] != NULL; k++) {
            size_t len = strlen(guard_own_vars[k]);

            if (strncmp(environ[i], guard_own_vars[k], len) == 0 &&
                environ[i][len] == '=')
                break;
        }
        if (guard_own_vars[k] == NULL)
            env[n++] = environ[i];
    }
    env[n] = NULL;
    g->env = env;
    return 0;
}

/* In the command's process, before it executes: dies with the guard,
 * joins its process group, gets back the dispositions and mask `run`
 * started with, and executes. On failure, writes errno to `errfd` and
 * exits 127 or 126, as a shell does. */
static void exec_command(guard *g, pid_t join, int errfd)
{
    int i, err;

#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
#endif
    /* The guard died between the fork and the prctl(). */
    if (getppid() != g->self)
        _exit(CLI_EXIT_NOEXEC);
    setpgid(0, join);
    for (i = 0; i < GUARD_NSIGS; i++)
        sigaction(guard_sigs[i], &g->old[i], NULL);
    environ = g->env;
    if (sigprocmask(SIG_SETMASK, &g->oldmask, NULL) == 0)
        execvp(g->cfg->cmd[0], g->cfg->cmd);
    err = errno;
    while (write(errfd, &err, sizeof err) < 0 && errno == EINTR)
        ;
    _exit(err == ENOENT || err == ENOTDIR ? CLI_EXIT_NOTFOUND
                                          : CLI_EXIT_NOEXEC);
}

/* Starts the command in process group `join` (0: its own). Returns 0
 * when it runs, else the errno of the failed fork or exec (the failed
 * child is reaped). */
static int start_command(guard *g, pid_t join)
{
    int fds[2], err = 0, st;
    ssize_t n;
    pid_t pid;

    if (pipe(fds) != 0)
        return errno;
    if (fcntl(fds[1], F_SETFD, FD_CLOEXEC) != 0) {
        err = errno;
        close(fds[0]);
        close(fds[1]);
        return err;
    }
    pid = fork();
    if (pid < 0) {
        err = errno;
        close(fds[0]);
        close(fds[1]);
        return err;
    }
    if (pid == 0) {
        close(fds[0]);
        exec_command(g, join, fds[1]);
    }
    /* Also here, so that the group exists before the first kill(); an
     * error only means the child did it first and has executed. */
    setpgid(pid, join != 0 ? join : pid);
    close(fds[1]);
    do
        n = read(fds[0], &err, sizeof err);
    while (n < 0 && errno == EINTR);
    close(fds[0]);
    if (n != (ssize_t)sizeof err)
        err = 0;
    if (err != 0) {
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        return err;
    }
    g->cmd = pid;
    g->target = join != 0 ? pid : -pid;
    return 0;
}

/* SIGKILL to the command's group (while the command is not reaped, so
 * that its pid cannot have been reused) and to every descendant. */
static void kill_round(guard *g)
{
    if (g->cmd > 0)
        kill(g->target, SIGKILL);
    cli_guard_signal_tree(g->self, SIGKILL);
}

/* The lease is lost (or its deadline passed, or the runner says so):
 * --signal to the command, SIGKILL after --kill-after; once the command
 * is gone, SIGKILL at once to what it left. */
static void stop_job(guard *g)
{
    int64_t now = cli_guard_now_us(), after = g->cfg->kill_after_ms;

    g->lost = 1;
    if (g->cmd == 0 || g->cfg->lost_signal == SIGKILL) {
        g->killing = 1;
        return;
    }
    if (g->stopping)
        return;
    g->stopping = 1;
    kill(g->target, g->cfg->lost_signal);
    if (after == 0) {
        g->killing = 1;
        return;
    }
    /* --kill-after may be as long as 106751991167d: saturate. */
    g->kill_at_us = after > (INT64_MAX - now) / 1000 ? INT64_MAX
                                                     : now + after * 1000;
}

/* Reaps what has ended. When it is the command: reports it, and starts
 * stopping whatever it left running. */
static void reap(guard *g)
{
    pid_t r;
    int st;

    while ((r = waitpid(-1, &st, WNOHANG)) > 0) {
        int left;

        if (r != g->cmd)
            continue;
        g->cmd = 0;
        tell(g, CLI_GUARD_EXITED, st, cli_guard_now_us());
        left = cli_guard_signal_tree(g->self, 0);
        if (left == 0)
            continue;
        if (g->lost || g->killing || g->cfg->lost_signal == SIGKILL
            || g->cfg->kill_after_ms == 0) {
            g->killing = 1;
            continue;
        }
        tell(g, CLI_GUARD_LEFTOVER, left, 0);
        cli_guard_signal_tree(g->self, g->cfg->lost_signal);
        g->stopping = 1;
        g->kill_at_us = cli_guard_now_us()
                        + (g->cfg->kill_after_ms > INT64_MAX / 2000
                           ? INT64_MAX / 2 : g->cfg->kill_after_ms * 1000);
    }
}

/* Acts on one message from the runner. */
static void take_msg(guard *g, const cli_guard_msg *m)
{
    switch (m->op) {
    case CLI_GUARD_DEADLINE:
        g->deadline_us = m->value;
        break;
    case CLI_GUARD_SIGNAL:
        if (g->cmd > 0)
            kill(g->target, m->arg);
        else
            cli_guard_signal_tree(g->self, m->arg);
        break;
    case CLI_GUARD_LOST:
        stop_job(g);
        break;
    default:
        break;
    }
}

/* Serves the runner while the command and what it started run. Returns
 * when nothing of them is left. */
static void serve(guard *g)
{
    for (;;) {
        struct timespec ts;
        fd_set rd;
        int64_t now, wait_us = GUARD_MAX_NAP_US;
        int n;

        reap(g);
        now = cli_guard_now_us();
        if (!g->lost && g->deadline_us != 0 && now >= g->deadline_us) {
            /* The runner did not renew the deadline in time: it is
             * stopped, paused or starved, and the lease runs out. */
            tell(g, CLI_GUARD_EXPIRED, 0, now);
            stop_job(g);
        }
        if (g->stopping && !g->killing && now >= g->kill_at_us) {
            g->killing = 1;
            tell(g, CLI_GUARD_KILLED, 0, now);
        }
        if (g->killing)
            kill_round(g);
        if (g->cmd == 0) {
            reap(g);
            if (cli_guard_signal_tree(g->self, 0) == 0) {
                /* Zombies of descendants that died with their parents
                 * were re-parented here. */
                while (waitpid(-1, NULL, WNOHANG) > 0)
                    ;
                return;
            }
            wait_us = g->killing ? GUARD_KILL_ROUND_US
                                 : GUARD_LEFTOVER_ROUND_US;
        } else if (g->killing) {
            wait_us = GUARD_KILL_ROUND_US;
        }
        if (g->stopping && !g->killing && g->kill_at_us - now < wait_us)
            wait_us = g->kill_at_us - now;
        if (!g->lost && g->deadline_us != 0
            && g->deadline_us - now < wait_us)
            wait_us = g->deadline_us - now;
        if (wait_us < 1000)
            wait_us = 1000;
        ts.tv_sec = (time_t)(wait_us / 1000000);
        ts.tv_nsec = (long)(wait_us % 1000000) * 1000;
        FD_ZERO(&rd);
        if (!g->runner_gone)
            FD_SET(g->ctl, &rd);
        n = pselect(g->runner_gone ? 0 : g->ctl + 1, &rd, NULL, NULL, &ts,
                    &g->waitmask);
        if (n > 0 && FD_ISSET(g->ctl, &rd)) {
            cli_guard_msg m;
            ssize_t r = read(g->ctl, &m, sizeof m);

            if (r == (ssize_t)sizeof m) {
                take_msg(g, &m);
            } else if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) {
                /* The runner is gone, and its lease with it: nothing of
                 * the job may run on. */
                g->runner_gone = 1;
                g->lost = 1;
                g->killing = 1;
            }
        }
    }
}

/* The guard's life; never returns. */
static void guard_main(const cli_guard_cfg *cfg, int ctl, int sts)
{
    cli_guard_msg m;
    guard g;
    int err;

    memset(&g, 0, sizeof g);
    g.cfg = cfg;
    g.ctl = ctl;
    g.sts = sts;
    g.self = getpid();
    /* The copies of --db's value are the runner's business. */
    cli_free_secrets();
    setpgid(0, 0);
#ifdef __linux__
    prctl(PR_SET_NAME, "sqllock-guard", 0, 0, 0);
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
#endif
    if (take_signals(&g) != 0)
        _exit(CLI_EXIT_DB);
    /* Nothing to start until the runner holds the lease; the end of file
     * comes instead when it does not get it, or is gone. The lease's
     * first deadline comes before the start, so that it is known before
     * the command runs. */
    do {
        if (read_full(ctl, &m, sizeof m) != 0)
            _exit(0);
        if (m.op == CLI_GUARD_DEADLINE)
            g.deadline_us = m.value;
    } while (m.op == CLI_GUARD_DEADLINE);
    if (m.op != CLI_GUARD_START || m.value < 0
        || m.value > GUARD_PAYLOAD_MAX)
        _exit(0);
    g.payload_len = (size_t)m.value;
    g.payload = malloc(g.payload_len + 1);
    if (g.payload == NULL || read_full(ctl, g.payload, g.payload_len) != 0) {
        free(g.payload);
        _exit(0);
    }
    g.payload[g.payload_len] = '\0';
    if (build_env(&g) != 0)
        err = ENOMEM;
    else
        err = start_command(&g, (pid_t)m.arg);
    if (err != 0) {
        tell(&g, CLI_GUARD_EXECFAIL, err, 0);
    } else {
        tell(&g, CLI_GUARD_STARTED, (int32_t)g.cmd, 0);
        serve(&g);
        tell(&g, CLI_GUARD_DONE, 0, cli_guard_now_us());
    }
    /* The payload may hold the database's URL (--export-db). */
    cli_wipe(g.payload, g.payload_len);
    free(g.payload);
    free(g.env);
    _exit(0);
}

pid_t cli_guard_start(const cli_guard_cfg *cfg, int *ctl, int *sts)
{
    int c[2], s[2], i, err;
    pid_t pid;

    if (pipe(c) != 0)
        return -1;
    if (pipe(s) != 0) {
        err = errno;
        close(c[0]);
        close(c[1]);
        errno = err;
        return -1;
    }
    /* No other thread runs yet: no exec can slip in before these. */
    for (i = 0; i < 2; i++) {
        fcntl(c[i], F_SETFD, FD_CLOEXEC);
        fcntl(s[i], F_SETFD, FD_CLOEXEC);
    }
    /* What stdio holds would be written twice otherwise. */
    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        err = errno;
        close(c[0]);
        close(c[1]);
        close(s[0]);
        close(s[1]);
        errno = err;
        return -1;
    }
    if (pid == 0) {
        close(c[1]);
        close(s[0]);
        guard_main(cfg, c[0], s[1]);
    }
    close(c[0]);
    close(s[1]);
    *ctl = c[1];
    *sts = s[0];
    return pid;
}
