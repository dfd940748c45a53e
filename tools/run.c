/*
 * run.c -- `sqllock run NAME --ttl DUR ... -- CMD ARGS...`: runs a command
 * while holding a lease, and keeps the lease alive while it runs.
 *
 * The parent is a small supervisor with no threads. It blocks SIGCHLD,
 * SIGINT, SIGTERM and SIGHUP, forks, and the child restores the signal mask
 * and executes the command. The parent then waits for those signals with
 * sigtimedwait(), waking at least at every renewal tick: it renews the
 * lease every ttl/3, passes the three terminating signals on to the child,
 * and reaps the child when SIGCHLD arrives. Because the signals stay
 * blocked and are taken synchronously, no signal handler and no global
 * state are needed.
 *
 * If a renewal reports the lease lost, or the lease's local remaining time
 * (DESIGN L6) runs out before a renewal succeeds, the command can no longer
 * be sure it is alone: it gets SIGTERM, SIGKILL ten seconds later if it is
 * still running, and the tool exits 76.
 *
 * Whether exec() worked is learned from a pipe whose write end is closed
 * on exec: EOF means the command runs; an errno written into it means the
 * exec failed (127 for "not found", 126 otherwise, as a shell reports).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* How long the child has to end after SIGTERM before it gets SIGKILL. */
#define RUN_KILL_GRACE_MS 10000
/* The longest the supervisor sleeps between looks at the child. */
#define RUN_MAX_NAP_MS 1000

/* The supervisor's state while the command runs. */
typedef struct run_state {
    sqllock_db *db;
    sqllock_lease *lease;
    const char *name;
    pid_t pid;
    int64_t interval_ms;   /* between renewals: ttl/3 */
    int64_t retry_ms;      /* after a renewal that failed for a transient
                              reason */
    int lost;              /* the lease is lost; the child is being ended */
    int64_t kill_at_ms;    /* when SIGKILL follows SIGTERM, once sent */
    int killed;            /* SIGKILL was sent */
} run_state;

static int64_t now_ms(void)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        return 0;
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The exit code that reports how the child ended, as a shell does. */
static int child_exit_code(int wstatus)
{
    if (WIFEXITED(wstatus))
        return WEXITSTATUS(wstatus);
    if (WIFSIGNALED(wstatus))
        return 128 + WTERMSIG(wstatus);
    return CLI_EXIT_DB;
}

/* Marks the lease lost and asks the child to stop. */
static void lose(run_state *st, const char *why)
{
    st->lost = 1;
    cli_error("run: lock '%s' lost: %s; stopping the command (SIGTERM)",
              st->name, why);
    if (kill(st->pid, SIGTERM) != 0 && errno != ESRCH)
        cli_error("run: cannot signal the command: %s", strerror(errno));
    st->kill_at_ms = now_ms() + RUN_KILL_GRACE_MS;
}

/* Renews the lease at its tick; returns the time of the next tick. */
static int64_t renew_tick(run_state *st)
{
    int rc = sqllock_lease_renew(st->lease);

    if (rc == SQLLOCK_OK)
        return now_ms() + st->interval_ms;
    if (rc == SQLLOCK_LOST || rc == SQLLOCK_ENOTHELD) {
        lose(st, sqllock_errmsg(st->db));
        return INT64_MAX;
    }
    /* A connection error or a busy database: the lease may still be
     * ours, so try again soon while its time lasts. */
    cli_db_error(st->db, rc, "run: renewing lock '%s' failed (will retry)",
                 st->name);
    return now_ms() + st->retry_ms;
}

/*
 * Supervises the running child until it ends; *wstatus gets its status.
 * Returns 0, or -1 when waiting for the child fails (which leaves nothing
 * sensible to do but report it).
 */
static int supervise(run_state *st, const sigset_t *set, int *wstatus)
{
    int64_t next_renew = now_ms() + st->interval_ms;

    for (;;) {
        siginfo_t info;
        struct timespec ts;
        int64_t now, nap;
        pid_t r;
        int sig;

        r = waitpid(st->pid, wstatus, WNOHANG);
        if (r == st->pid)
            return 0;
        if (r < 0 && errno != EINTR) {
            cli_error("run: cannot wait for the command: %s",
                      strerror(errno));
            return -1;
        }
        now = now_ms();
        if (!st->lost && now >= next_renew) {
            next_renew = renew_tick(st);
            now = now_ms();
        }
        if (!st->lost && sqllock_lease_remaining_ms(st->lease) <= 0)
            lose(st, "its time ran out before a renewal succeeded");
        if (st->lost && !st->killed && now >= st->kill_at_ms) {
            cli_error("run: the command did not stop; sending SIGKILL");
            if (kill(st->pid, SIGKILL) != 0 && errno != ESRCH)
                cli_error("run: cannot signal the command: %s",
                          strerror(errno));
            st->killed = 1;
        }

        nap = RUN_MAX_NAP_MS;
        if (!st->lost) {
            int64_t left = sqllock_lease_remaining_ms(st->lease);

            if (next_renew - now < nap)
                nap = next_renew - now;
            if (left < nap)
                nap = left;
        } else if (!st->killed && st->kill_at_ms - now < nap) {
            nap = st->kill_at_ms - now;
        }
        if (nap < 1)
            nap = 1;
        ts.tv_sec = (time_t)(nap / 1000);
        ts.tv_nsec = (long)(nap % 1000) * 1000000L;
        sig = sigtimedwait(set, &info, &ts);
        if (sig < 0) {
            if (errno != EAGAIN && errno != EINTR) {
                cli_error("run: sigtimedwait: %s", strerror(errno));
                return -1;
            }
            continue;
        }
        if (sig == SIGCHLD)
            continue;
#ifdef SI_KERNEL
        /* A signal from the terminal (Ctrl-C, hangup) went to the whole
         * foreground process group, the child included: passing it on
         * would deliver it twice. */
        if (info.si_code == SI_KERNEL)
            continue;
#endif
        if (kill(st->pid, sig) != 0 && errno != ESRCH)
            cli_error("run: cannot pass signal %d on: %s", sig,
                      strerror(errno));
    }
}

/* In the child: restores the signal mask and executes the command. On
 * failure, writes errno to `errfd` and exits 127 or 126. Only
 * async-signal-safe calls are made here. The parent's database handle is
 * never touched: the exec (or _exit) ends this copy of it. */
static void child_exec(char **cmd, const sigset_t *oldmask, int errfd)
{
    int err;

    if (sigprocmask(SIG_SETMASK, oldmask, NULL) == 0)
        execvp(cmd[0], cmd);
    err = errno;
    while (write(errfd, &err, sizeof err) < 0 && errno == EINTR)
        ;
    _exit(err == ENOENT || err == ENOTDIR ? CLI_EXIT_NOTFOUND
                                          : CLI_EXIT_NOEXEC);
}

/* Reads the exec result from the pipe: 0 when the command runs, else the
 * errno of the failed exec. */
static int exec_result(int fd)
{
    int err = 0;
    ssize_t n;

    do
        n = read(fd, &err, sizeof err);
    while (n < 0 && errno == EINTR);
    return n == (ssize_t)sizeof err ? err : 0;
}

/* Puts the lease into the environment the child will inherit. */
static int export_lease(const sqllock_lease *lease)
{
    char token[32];

    snprintf(token, sizeof token, "%" PRId64, sqllock_lease_token(lease));
    if (setenv("SQLLOCK_NAME", sqllock_lease_name(lease), 1) != 0
        || setenv("SQLLOCK_OWNER", sqllock_lease_owner(lease), 1) != 0
        || setenv("SQLLOCK_TOKEN", token, 1) != 0) {
        cli_error("run: cannot set the environment: %s", strerror(errno));
        return CLI_EXIT_DB;
    }
    return CLI_EXIT_OK;
}

/* Releases the lease after a failure that kept the command from running
 * (or from being supervised), and returns `code`. */
static int give_back(run_state *st, int code)
{
    int rc = sqllock_lease_release(st->lease);

    if (rc != SQLLOCK_OK)
        cli_db_error(st->db, rc, "run: releasing lock '%s'", st->name);
    return code;
}

/* Starts the command, supervises it and returns the tool's exit code.
 * The lease is held on entry; on return it is released where it can be. */
static int run_held(run_state *st, char **cmd)
{
    sigset_t set, oldmask;
    struct sigaction dfl;
    int fds[2], err, wstatus = 0, code, rc;

    rc = export_lease(st->lease);
    if (rc != CLI_EXIT_OK)
        return give_back(st, rc);
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    /* An inherited SIG_IGN for SIGCHLD would make the kernel reap the
     * child itself, and waitpid() would never see its status. */
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    if (sigaction(SIGCHLD, &dfl, NULL) != 0
        || sigprocmask(SIG_BLOCK, &set, &oldmask) != 0) {
        cli_error("run: cannot set up signals: %s", strerror(errno));
        return give_back(st, CLI_EXIT_DB);
    }
    if (pipe(fds) != 0) {
        cli_error("run: pipe: %s", strerror(errno));
        return give_back(st, CLI_EXIT_DB);
    }
    if (fcntl(fds[1], F_SETFD, FD_CLOEXEC) != 0) {
        cli_error("run: fcntl: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return give_back(st, CLI_EXIT_DB);
    }
    fflush(NULL);
    st->pid = fork();
    if (st->pid < 0) {
        cli_error("run: fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return give_back(st, CLI_EXIT_DB);
    }
    if (st->pid == 0) {
        close(fds[0]);
        child_exec(cmd, &oldmask, fds[1]);
    }
    close(fds[1]);
    err = exec_result(fds[0]);
    close(fds[0]);
    if (err != 0) {
        while (waitpid(st->pid, &wstatus, 0) < 0 && errno == EINTR)
            ;
        cli_error("run: cannot execute '%s': %s", cmd[0], strerror(err));
        code = err == ENOENT || err == ENOTDIR ? CLI_EXIT_NOTFOUND
                                               : CLI_EXIT_NOEXEC;
    } else if (supervise(st, &set, &wstatus) != 0) {
        return give_back(st, CLI_EXIT_DB);
    } else {
        code = child_exit_code(wstatus);
    }

    if (st->lost) {
        /* After a timeout (not a LOST answer) the row may still be ours:
         * give it back, but the run has failed either way. */
        if (sqllock_lease_held(st->lease)
            && sqllock_lease_release(st->lease) != SQLLOCK_OK
            && sqllock_errcode(st->db) != SQLLOCK_LOST)
            cli_db_error(st->db, sqllock_errcode(st->db),
                         "run: releasing lock '%s'", st->name);
        cli_error("run: the command was stopped because lock '%s' was lost",
                  st->name);
        return CLI_EXIT_LOST;
    }
    rc = sqllock_lease_release(st->lease);
    if (rc == SQLLOCK_LOST)
        cli_db_error(st->db, rc, "run: warning: the command finished, but "
                     "releasing lock '%s' found it lost", st->name);
    else if (rc != SQLLOCK_OK)
        cli_db_error(st->db, rc, "run: warning: cannot release lock '%s' "
                     "(it stays held until it expires)", st->name);
    return code;
}

int cli_cmd_run(const cli_ctx *ctx, int argc, char **argv)
{
    cli_ctx c = *ctx;
    cli_lease_args la = { NULL, NULL, NULL, 0, 0 };
    const char *name = NULL, *busy_text = NULL;
    int help = 0, npos, rest, rc;
    const cli_opt opts[] = {
        { "db", &c.db_opt, NULL }, { "ttl", &la.ttl, NULL },
        { "wait", &la.wait, NULL }, { "holder", &la.holder, NULL },
        { "busy-exit", &busy_text, NULL }, { "help", NULL, &help },
        { NULL, NULL, NULL }
    };
    sqllock_options dbo = SQLLOCK_OPTIONS_INIT;
    sqllock_lease_options lo = SQLLOCK_LEASE_OPTIONS_INIT;
    run_state st;
    int64_t busy_exit = CLI_EXIT_BUSY;

    rc = cli_parse("run", argc, argv, opts, &name, 1, &npos, &rest);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (help)
        return cli_help();
    if (npos != 1 || rest >= argc) {
        cli_error("run: needs NAME and a command after '--'");
        return cli_usage();
    }
    rc = cli_lease_args_check("run", &la);
    if (rc == CLI_EXIT_OK && busy_text != NULL)
        rc = cli_parse_int("run", "busy-exit", busy_text, 0, 255,
                           &busy_exit);
    if (rc != CLI_EXIT_OK)
        return rc;

    memset(&st, 0, sizeof st);
    st.name = name;
    st.interval_ms = la.ttl_ms / 3 > 0 ? la.ttl_ms / 3 : 1;
    st.retry_ms = st.interval_ms / 4 > 10 ? st.interval_ms / 4 : 10;
    if (st.retry_ms > RUN_MAX_NAP_MS)
        st.retry_ms = RUN_MAX_NAP_MS;
    /* A renewal must not sit in the database's busy wait for longer than
     * a renewal interval, or the lease could run out meanwhile. */
    dbo.busy_timeout_ms = st.interval_ms < 5000 ? st.interval_ms : 5000;
    rc = cli_open_db(&c, &dbo, 1, &st.db);
    if (rc != CLI_EXIT_OK)
        return rc;
    lo.ttl_ms = la.ttl_ms;
    lo.holder = la.holder;
    rc = sqllock_lease_new(st.db, name, &lo, &st.lease);
    if (rc == SQLLOCK_OK)
        rc = sqllock_lease_acquire(st.lease, la.wait_ms);
    if (rc == SQLLOCK_BUSY || rc == SQLLOCK_TIMEOUT) {
        cli_db_error(st.db, rc, "run: not running '%s'", argv[rest]);
        rc = (int)busy_exit;
    } else if (rc != SQLLOCK_OK) {
        rc = cli_db_error(st.db, rc, "run");
    } else {
        rc = run_held(&st, argv + rest);
    }
    sqllock_lease_free(st.lease);
    sqllock_close(st.db);
    return rc;
}
