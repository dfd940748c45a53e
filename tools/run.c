/*
 * run.c -- `sqllock run NAME --ttl DUR ... -- CMD ARGS...`: runs a command
 * while holding a lease, and keeps the lease alive while it runs.
 *
 * The lease is renewed by the library's watchdog (sqllock_lease_watch(),
 * DESIGN L7): a renewer thread with its own connection. The main thread is
 * a supervisor that never talks to the database while the command runs, so
 * a renewal that hangs cannot keep it from acting: it waits, with
 * pselect(), on one pipe and a timeout. The pipe is written by the signal
 * handlers (one byte: the signal number) and by the watch callback (a zero
 * byte). The timeout is the lease's local deadline (DESIGN L6), so the
 * supervisor sees the lease lost when that deadline passes even if the
 * renewer is stuck and never calls back.
 *
 * SIGCHLD, SIGINT, SIGTERM and SIGHUP are blocked except inside pselect(),
 * so their handlers run only there, on the main thread. They are blocked
 * before the watch starts the renewer thread, which inherits that mask.
 * INT, TERM and HUP are passed on to the command; a signal that was
 * ignored when sqllock started (nohup) stays ignored, as a shell does it.
 *
 * The command gets a process group of its own, and every signal sqllock
 * sends goes to that whole group, so that a shell script's children stop
 * with it when the lease is lost. The exception: when sqllock runs in the
 * foreground of its terminal, the command stays in sqllock's group so that
 * it can use the terminal; the signals then go to the command alone, and
 * those the terminal sends reach the command directly (they are not
 * passed on twice).
 *
 * If the lease is lost (a renewal finds another owner, or its local
 * deadline passes before a renewal succeeds), the command gets --signal
 * (SIGTERM), then SIGKILL after --kill-after (10 s) if it is still
 * running, and the tool exits 76. When the command is gone, whatever is
 * left in its group gets SIGKILL too: nothing of the job may go on
 * working once the lock is someone else's.
 *
 * Whether exec() worked is learned from a pipe whose write end is closed
 * on exec: EOF means the command runs; an errno written into it means the
 * exec failed (127 for "not found", 126 otherwise, as a shell reports).
 *
 * The command's environment is sqllock's own with the lease's
 * SQLLOCK_NAME, SQLLOCK_OWNER and SQLLOCK_TOKEN, and without SQLLOCK_DB
 * and SQLLOCK_DB_FILE (DESIGN C4: the URL may hold a password), unless
 * --export-db asks for the database (build_env()). sqllock's own
 * environment is never changed: the renewer thread runs meanwhile, and
 * libpq reads its PG* variables on each connect.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/select.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "internal.h"

#ifndef NSIG
#define NSIG 65
#endif

/* The process's environment (POSIX asks the program to declare it). */
extern char **environ;

/* The longest the supervisor sleeps between looks at the child. */
#define RUN_MAX_NAP_MS 1000
/* Bytes on the wake-up pipe: a signal number, with RUN_FROM_TTY when the
 * kernel sent it (a terminal's Ctrl-C or hangup); zero from the watch
 * callback. The signals handled are all below 0x80. */
#define RUN_WAKE_WATCH 0
#define RUN_FROM_TTY 0x80

/* The signals the supervisor handles; the first three are passed on. */
static const int run_sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGCHLD };
#define RUN_NSIGS 4
#define RUN_NFORWARD 3

/* The supervisor's state while the command runs. */
typedef struct run_state {
    sqllock_db *db;
    sqllock_lease *lease;
    const char *name;
    pid_t pid;
    pid_t target;          /* what kill() gets: -pid for the command's own
                              group, or pid */
    int own_group;         /* the command has a process group of its own */
    int lost_signal;       /* --signal */
    int64_t interval_ms;   /* --renew-every, 0 for the default */
    int64_t kill_after_ms; /* --kill-after */
    int wake[2];           /* the wake-up pipe */
    char **env;            /* the command's environment (build_env()) */
    int env_own;           /* its first env_own entries are allocated */
    int lost;              /* the lease is lost; the child is being ended */
    int64_t kill_at_ms;    /* when SIGKILL follows the first signal */
    int killed;            /* SIGKILL was sent */
    /* What the watch callback last reported, for the main thread. */
    pthread_mutex_t mu;
    int note_pending;
    int note_state;
    int note_status;
    char note_msg[400];
} run_state;

/* The write end of the wake-up pipe, for the signal handler, which gets
 * no context pointer. The file's one global; set before the handlers are
 * installed. */
static int run_wake_fd = -1;

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

/* Writes one byte to the wake-up pipe; a full pipe already wakes. */
static void wake_write(int fd, unsigned char b)
{
    ssize_t n;

    do
        n = write(fd, &b, 1);
    while (n < 0 && errno == EINTR);
}

/* The handler of the four signals: runs only inside pselect() on the main
 * thread (they are blocked everywhere else) and only writes a byte. */
static void on_signal(int sig, siginfo_t *info, void *uctx)
{
    int saved = errno;
    unsigned char b = (unsigned char)sig;

    (void)uctx;
#ifdef SI_KERNEL
    if (info != NULL && info->si_code == SI_KERNEL)
        b |= RUN_FROM_TTY;
#else
    (void)info;
#endif
    wake_write(run_wake_fd, b);
    errno = saved;
}

/* The watch callback, on the renewer thread: leaves the news for the main
 * thread and wakes it. Calls nothing of the library. */
static void on_watch(void *ctx, sqllock_lease *lease, int state, int status,
                     const char *msg)
{
    run_state *st = ctx;

    (void)lease;
    pthread_mutex_lock(&st->mu);
    st->note_pending = 1;
    st->note_state = state;
    st->note_status = status;
    snprintf(st->note_msg, sizeof st->note_msg, "%s", msg ? msg : "");
    pthread_mutex_unlock(&st->mu);
    wake_write(st->wake[1], RUN_WAKE_WATCH);
}

/* Sends `sig` to the command (its group, or itself). */
static void send_sig(run_state *st, int sig)
{
    char buf[32];

    if (kill(st->target, sig) != 0 && errno != ESRCH)
        cli_error("run: cannot send %s to the command: %s",
                  cli_signame(sig, buf, sizeof buf), strerror(errno));
}

/* Marks the lease lost and starts ending the command. */
static void lose(run_state *st, const char *why)
{
    char buf[32];

    st->lost = 1;
    cli_error("run: lock '%s' lost: %s; stopping the command (%s)",
              st->name, why, cli_signame(st->lost_signal, buf, sizeof buf));
    send_sig(st, st->lost_signal);
    if (st->lost_signal == SIGKILL) {
        st->killed = 1;
    } else if (st->kill_after_ms == 0) {
        send_sig(st, SIGKILL);
        st->killed = 1;
    } else {
        int64_t now = now_ms();

        /* --kill-after may be as long as 106751991167d: saturate rather
         * than overflow. */
        st->kill_at_ms = st->kill_after_ms > INT64_MAX - now
                             ? INT64_MAX : now + st->kill_after_ms;
    }
}

/* Acts on what the watch callback reported. */
static void take_note(run_state *st)
{
    int pending, state, status;
    char msg[sizeof st->note_msg];

    pthread_mutex_lock(&st->mu);
    pending = st->note_pending;
    state = st->note_state;
    status = st->note_status;
    memcpy(msg, st->note_msg, sizeof msg);
    st->note_pending = 0;
    pthread_mutex_unlock(&st->mu);
    if (!pending || st->lost)
        return;
    if (state == SQLLOCK_STATE_LOST)
        lose(st, msg);
    else if (state == SQLLOCK_STATE_UNCERTAIN)
        cli_error("run: renewing lock '%s' failed (%s; will retry while its "
                  "time lasts): %s", st->name, sqllock_errname(status), msg);
    else if (state == SQLLOCK_STATE_HELD)
        cli_error("run: renewing lock '%s' works again", st->name);
}

/* Reads everything on the wake-up pipe and acts on it: passes signals on
 * to the command, and takes the watch callback's news. */
static void drain(run_state *st)
{
    unsigned char buf[64];
    ssize_t n, i;

    while ((n = read(st->wake[0], buf, sizeof buf)) > 0
           || (n < 0 && errno == EINTR)) {
        for (i = 0; i < n; i++) {
            int sig = buf[i] & ~RUN_FROM_TTY;

            if (buf[i] == RUN_WAKE_WATCH) {
                take_note(st);
                continue;
            }
            if (sig == SIGCHLD)
                continue;
            /* In sqllock's own group, a signal from the terminal went to
             * the whole foreground group, the command included: passing it
             * on would deliver it twice. */
            if ((buf[i] & RUN_FROM_TTY) && !st->own_group)
                continue;
            send_sig(st, sig);
        }
    }
}

/*
 * Supervises the running child until it ends; *wstatus gets its status.
 * `waitmask` is the signal mask while waiting (the four signals unblocked).
 * Returns 0, or -1 when waiting for the child fails (which leaves nothing
 * sensible to do but report it).
 */
static int supervise(run_state *st, const sigset_t *waitmask, int *wstatus)
{
    for (;;) {
        struct timespec ts;
        fd_set rd;
        int64_t now, nap;
        pid_t r;

        r = waitpid(st->pid, wstatus, WNOHANG);
        if (r == st->pid)
            return 0;
        if (r < 0 && errno != EINTR) {
            cli_error("run: cannot wait for the command: %s",
                      strerror(errno));
            return -1;
        }
        /* The lease's own state, as well as the callback: a renewal that
         * hangs never calls back, but its deadline passes all the same. */
        if (!st->lost
            && sqllock_lease_state(st->lease) == SQLLOCK_STATE_LOST)
            lose(st, "its local deadline passed before a renewal "
                 "succeeded");
        now = now_ms();
        if (st->lost && !st->killed && now >= st->kill_at_ms) {
            cli_error("run: the command did not stop; sending SIGKILL");
            send_sig(st, SIGKILL);
            st->killed = 1;
        }

        nap = RUN_MAX_NAP_MS;
        if (!st->lost) {
            /* Wake just after the local deadline, should no renewal move
             * it meanwhile. */
            int64_t left = sqllock_lease_remaining_ms(st->lease) + 1;

            if (left < nap)
                nap = left;
        } else if (!st->killed && st->kill_at_ms - now < nap) {
            nap = st->kill_at_ms - now;
        }
        if (nap < 1)
            nap = 1;
        ts.tv_sec = (time_t)(nap / 1000);
        ts.tv_nsec = (long)(nap % 1000) * 1000000L;
        FD_ZERO(&rd);
        FD_SET(st->wake[0], &rd);
        if (pselect(st->wake[0] + 1, &rd, NULL, NULL, &ts, waitmask) < 0
            && errno != EINTR) {
            cli_error("run: pselect: %s", strerror(errno));
            return -1;
        }
        drain(st);
    }
}

/* In the child: restores the signal dispositions and mask sqllock started
 * with, takes its own process group when asked, and executes the command
 * with the environment `env`. On failure, writes errno to `errfd` and
 * exits 127 or 126. Only async-signal-safe calls are made here (setting
 * `environ` is a store). The parent's database handle is never touched:
 * the exec (or _exit) ends this copy of it. */
static void child_exec(char **cmd, char **env, int own_group,
                       const struct sigaction *old, const sigset_t *oldmask,
                       int errfd)
{
    int i, err;

    for (i = 0; i < RUN_NSIGS; i++)
        sigaction(run_sigs[i], &old[i], NULL);
    if (own_group)
        setpgid(0, 0);
    environ = env;
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

/* The variables sqllock sets in the command's environment or takes out
 * of it; any inherited value of these is dropped. */
static const char *const run_own_vars[] = {
    "SQLLOCK_NAME", "SQLLOCK_OWNER", "SQLLOCK_TOKEN", CLI_DB_ENV,
    CLI_DB_FILE_ENV, NULL
};

/* Appends "name=value" to env[*n] in a new allocation; -1 without
 * memory. */
static int env_add(char **env, int *n, const char *name, const char *value)
{
    size_t nl = strlen(name), vl = strlen(value);
    char *e = malloc(nl + vl + 2);

    if (e == NULL)
        return -1;
    memcpy(e, name, nl);
    e[nl] = '=';
    memcpy(e + nl + 1, value, vl + 1);
    env[(*n)++] = e;
    return 0;
}

/* Frees what build_env() made; the entry that may hold the URL is wiped
 * first. */
static void free_env(char **env, int nown)
{
    int i;

    if (env == NULL)
        return;
    for (i = 0; i < nown; i++) {
        sqllock__wipe(env[i], strlen(env[i]));
        free(env[i]);
    }
    free(env);
}

/*
 * Builds the command's environment into st->env: sqllock's own, without
 * the variables of run_own_vars, with SQLLOCK_NAME, SQLLOCK_OWNER and
 * SQLLOCK_TOKEN of the lease. With --export-db, the command also gets
 * the database sqllock used, in the form sqllock got it: SQLLOCK_DB=URL
 * for --db or $SQLLOCK_DB, SQLLOCK_DB_FILE=PATH for --db-file or
 * $SQLLOCK_DB_FILE, neither for the built-in default, so that a
 * `sqllock` the command runs finds the same database. It is built before
 * fork(): the child of a process with threads may only make
 * async-signal-safe calls, so it only points `environ` at it.
 */
static int build_env(run_state *st, const cli_db *db, int export_db)
{
    char token[32];
    char **env;
    size_t count = 0, i, k;
    int n = 0, rc = 0;

    while (environ != NULL && environ[count] != NULL)
        count++;
    env = malloc((count + 8) * sizeof *env);
    if (env == NULL)
        return -1;
    snprintf(token, sizeof token, "%" PRId64,
             sqllock_lease_token(st->lease));
    rc |= env_add(env, &n, "SQLLOCK_NAME", sqllock_lease_name(st->lease));
    rc |= env_add(env, &n, "SQLLOCK_OWNER", sqllock_lease_owner(st->lease));
    rc |= env_add(env, &n, "SQLLOCK_TOKEN", token);
    if (export_db && rc == 0) {
        if (db->source == CLI_DB_OPTION || db->source == CLI_DB_VAR)
            rc |= env_add(env, &n, CLI_DB_ENV, db->url);
        else if (db->source == CLI_DB_FILE_OPTION ||
                 db->source == CLI_DB_FILE_VAR)
            rc |= env_add(env, &n, CLI_DB_FILE_ENV, db->file);
    }
    st->env = env;
    st->env_own = n;
    if (rc != 0)
        return -1;
    for (i = 0; i < count; i++) {
        for (k = 0; run_own_vars[k] != NULL; k++) {
            size_t len = strlen(run_own_vars[k]);

            if (strncmp(environ[i], run_own_vars[k], len) == 0 &&
                environ[i][len] == '=')
                break;
        }
        if (run_own_vars[k] == NULL)
            env[n++] = environ[i];
    }
    env[n] = NULL;
    return 0;
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

/* 1 when sqllock runs in the foreground process group of its controlling
 * terminal (an interactive shell's foreground job). */
static int terminal_foreground(void)
{
    int fd = open("/dev/tty", O_RDWR | O_NOCTTY);
    int fg;

    if (fd < 0)
        return 0;
    fg = tcgetpgrp(fd) == getpgrp();
    close(fd);
    return fg;
}

/* Makes the wake-up pipe: both ends close on exec, the read end does not
 * block, and neither does the write end (a full pipe wakes already). */
static int wake_pipe(int fds[2])
{
    int i;

    if (pipe(fds) != 0)
        return -1;
    for (i = 0; i < 2; i++) {
        if (fcntl(fds[i], F_SETFD, FD_CLOEXEC) != 0
            || fcntl(fds[i], F_SETFL, O_NONBLOCK) != 0) {
            close(fds[0]);
            close(fds[1]);
            return -1;
        }
    }
    return 0;
}

/* Blocks the four signals and installs their handler (for INT, TERM and
 * HUP only when they were not ignored at start); old[] and *oldmask get
 * what was there before. */
static int take_signals(struct sigaction old[RUN_NSIGS], sigset_t *oldmask,
                        sigset_t *waitmask)
{
    struct sigaction sa;
    sigset_t set;
    int i;

    sigemptyset(&set);
    for (i = 0; i < RUN_NSIGS; i++)
        sigaddset(&set, run_sigs[i]);
    if (sigprocmask(SIG_BLOCK, &set, oldmask) != 0)
        return -1;
    *waitmask = *oldmask;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_NOCLDSTOP;
    sigfillset(&sa.sa_mask);
    for (i = 0; i < RUN_NSIGS; i++) {
        if (sigaction(run_sigs[i], NULL, &old[i]) != 0)
            return -1;
        /* A handler also replaces an inherited SIG_IGN for SIGCHLD,
         * which would make the kernel reap the child itself. */
        if (i < RUN_NFORWARD && old[i].sa_handler == SIG_IGN)
            continue;
        if (sigaction(run_sigs[i], &sa, NULL) != 0)
            return -1;
        sigdelset(waitmask, run_sigs[i]);
    }
    return 0;
}

/* Starts the watchdog's renewer (its thread and connection) before the
 * acquire, so that its connect does not spend the lease's ttl. The thread
 * starts with the four signals blocked, as in take_signals(), so that
 * they reach only the main thread's pselect(). */
static int prepare_renewer(sqllock_db *db)
{
    sigset_t set, prev;
    int i, rc;

    sigemptyset(&set);
    for (i = 0; i < RUN_NSIGS; i++)
        sigaddset(&set, run_sigs[i]);
    pthread_sigmask(SIG_BLOCK, &set, &prev);
    rc = sqllock_watch_prepare(db);
    pthread_sigmask(SIG_SETMASK, &prev, NULL);
    return rc;
}

/* Starts the command and supervises it. Returns the command's exit code,
 * or the tool's own code when it could not run or be supervised. */
static int start_and_supervise(run_state *st, char **cmd)
{
    struct sigaction old[RUN_NSIGS];
    sigset_t oldmask, waitmask;
    sqllock_watch_options wo = SQLLOCK_WATCH_OPTIONS_INIT;
    int fds[2], err, wstatus = 0, rc;

    if (wake_pipe(st->wake) != 0) {
        cli_error("run: pipe: %s", strerror(errno));
        return give_back(st, CLI_EXIT_DB);
    }
    run_wake_fd = st->wake[1];
    if (take_signals(old, &oldmask, &waitmask) != 0) {
        cli_error("run: cannot set up signals: %s", strerror(errno));
        return give_back(st, CLI_EXIT_DB);
    }
    /* The renewer thread already runs (prepare_renewer()). */
    wo.interval_ms = st->interval_ms;
    wo.callback = on_watch;
    wo.ctx = st;
    rc = sqllock_lease_watch(st->lease, &wo);
    if (rc != SQLLOCK_OK) {
        rc = cli_db_error(st->db, rc, "run: cannot renew lock '%s'",
                          st->name);
        return give_back(st, rc == CLI_EXIT_USAGE ? CLI_EXIT_DB : rc);
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
    st->own_group = !terminal_foreground();
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
        child_exec(cmd, st->env, st->own_group, old, &oldmask, fds[1]);
    }
    /* Also here, so that the group exists before the first kill(); an
     * error only means the child did it first and has executed. */
    if (st->own_group)
        setpgid(st->pid, st->pid);
    st->target = st->own_group ? -st->pid : st->pid;
    close(fds[1]);
    err = exec_result(fds[0]);
    close(fds[0]);
    if (err != 0) {
        while (waitpid(st->pid, &wstatus, 0) < 0 && errno == EINTR)
            ;
        cli_error("run: cannot execute '%s': %s", cmd[0], strerror(err));
        return err == ENOENT || err == ENOTDIR ? CLI_EXIT_NOTFOUND
                                               : CLI_EXIT_NOEXEC;
    }
    if (supervise(st, &waitmask, &wstatus) != 0)
        return give_back(st, CLI_EXIT_DB);
    if (st->lost && st->own_group)
        send_sig(st, SIGKILL);
    return child_exit_code(wstatus);
}

/* Runs the command while the lease is held, and releases the lease after
 * it. Returns the tool's exit code. */
static int run_held(run_state *st, char **cmd, const cli_db *db,
                    int export_db)
{
    int code, rc;

    if (build_env(st, db, export_db) != 0) {
        cli_error("run: cannot make the command's environment: %s",
                  strerror(ENOMEM));
        free_env(st->env, st->env_own);
        st->env = NULL;
        return give_back(st, CLI_EXIT_DB);
    }
    if (pthread_mutex_init(&st->mu, NULL) != 0) {
        cli_error("run: cannot make a mutex");
        free_env(st->env, st->env_own);
        return give_back(st, CLI_EXIT_DB);
    }
    st->wake[0] = st->wake[1] = -1;
    code = start_and_supervise(st, cmd);
    if (st->pid <= 0 || sqllock_lease_count(st->lease) == 0) {
        /* It never ran, and the lease was given back already. */
    } else if (st->lost) {
        /* After a deadline that passed (not a LOST answer) the row may
         * still be ours: give it back. Release says LOST otherwise. The
         * run has failed either way. */
        rc = sqllock_lease_release(st->lease);
        if (rc != SQLLOCK_OK && rc != SQLLOCK_LOST)
            cli_db_error(st->db, rc, "run: releasing lock '%s'", st->name);
        cli_error("run: the command was stopped because lock '%s' was lost",
                  st->name);
        code = CLI_EXIT_LOST;
    } else {
        rc = sqllock_lease_release(st->lease);
        if (rc == SQLLOCK_LOST)
            cli_db_error(st->db, rc, "run: warning: the command finished, "
                         "but releasing lock '%s' found it lost", st->name);
        else if (rc != SQLLOCK_OK)
            cli_db_error(st->db, rc, "run: warning: cannot release lock "
                         "'%s' (it stays held until it expires)", st->name);
    }
    /* The renewer is stopped by now (release and free unwatch), so the
     * callback can no longer write to the pipe. */
    sqllock_lease_unwatch(st->lease);
    if (st->wake[0] >= 0) {
        close(st->wake[0]);
        close(st->wake[1]);
    }
    pthread_mutex_destroy(&st->mu);
    free_env(st->env, st->env_own);
    return code;
}

int cli_cmd_run(const cli_ctx *ctx, int argc, char **argv)
{
    cli_ctx c = *ctx;
    cli_lease_args la = { NULL, NULL, NULL, 0, 0 };
    cli_run_args ra;
    const char *name = NULL;
    int help = 0, export_db = 0, npos, rest, rc;
    sqllock_options dbo = SQLLOCK_OPTIONS_INIT;
    sqllock_lease_options lo = SQLLOCK_LEASE_OPTIONS_INIT;
    run_state st;
    cli_db where;
    int64_t every;

    memset(&ra, 0, sizeof ra);
    {
        const cli_opt opts[] = {
            CLI_OPTS_DB(c), { "ttl", &la.ttl, NULL, 0 },
            { "wait", &la.wait, NULL, 0 }, { "skip", NULL, &ra.skip, 0 },
            { "holder", &la.holder, NULL, 0 },
            { "busy-exit", &ra.busy_exit, NULL, 0 },
            { "signal", &ra.signal, NULL, 0 },
            { "kill-after", &ra.kill_after, NULL, 0 },
            { "renew-every", &ra.renew_every, NULL, 0 },
            { "export-db", NULL, &export_db, 0 },
            { "help", NULL, &help, 0 }, { NULL, NULL, NULL, 0 }
        };

        rc = cli_parse("run", argc, argv, opts, &name, 1, &npos, &rest);
    }
    if (rc != CLI_EXIT_OK)
        return rc;
    if (help)
        return cli_help();
    if (npos != 1 || rest >= argc) {
        cli_error("run: needs NAME and a command after '--'");
        return cli_usage();
    }
    rc = cli_lease_args_check("run", &la);
    if (rc == CLI_EXIT_OK)
        rc = cli_run_args_check(&ra, &la);
    if (rc != CLI_EXIT_OK)
        return rc;

    memset(&st, 0, sizeof st);
    st.name = name;
    st.lost_signal = ra.lost_signal;
    st.kill_after_ms = ra.kill_after_ms;
    st.interval_ms = ra.renew_every_ms;
    every = ra.renew_every_ms ? ra.renew_every_ms : la.ttl_ms / 3;
    /* A renewal must not sit in the database's busy wait for longer than
     * a renewal interval, or the lease could run out meanwhile. The
     * renewer's connection takes this from the handle. */
    dbo.busy_timeout_ms = every < 5000 ? (every > 0 ? every : 1) : 5000;
    rc = cli_open_db(&c, &dbo, 1, &st.db, &where);
    if (rc != CLI_EXIT_OK) {
        cli_db_free(&where);
        return rc;
    }
    lo.ttl_ms = la.ttl_ms;
    lo.holder = la.holder;
    rc = sqllock_lease_new(st.db, name, &lo, &st.lease);
    if (rc == SQLLOCK_OK)
        rc = prepare_renewer(st.db);
    if (rc == SQLLOCK_OK)
        rc = sqllock_lease_acquire(st.lease, ra.skip ? 0 : la.wait_ms);
    if (rc == SQLLOCK_BUSY || rc == SQLLOCK_TIMEOUT) {
        cli_db_error(st.db, rc, "run: not running '%s'", argv[rest]);
        rc = (int)ra.busy_exit_code;
    } else if (rc != SQLLOCK_OK) {
        rc = cli_db_error(st.db, rc, "run");
    } else {
        rc = run_held(&st, argv + rest, &where, export_db);
    }
    sqllock_lease_free(st.lease);
    sqllock_close(st.db);
    cli_db_free(&where);
    return rc;
}
