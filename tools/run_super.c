/*
 * run_super.c -- `sqllock run`: the supervision of the command. Signals
 * and the wake-up pipe, the guard process's pipes (starting the command,
 * its news, the lease's deadline), the supervisor's loop, and the end of
 * the guard and of what the command left (DESIGN X1-X3). run.c says how
 * the parts fit.
 *
 * --max-runtime DUR: the command is stopped when it has run DUR, as
 * after a loss (--signal, SIGKILL after --kill-after), whatever the
 * lease does; the exit code is then CLI_EXIT_TIMEOUT (124), unless the
 * lease was lost too (76, X2). DUR is counted from the command's start
 * on the clock of the lease's deadlines (cli_guard_now_us(), which
 * counts a suspended host's sleep: a suspend never lets the command run
 * longer, DESIGN T1), and the guard is told the earlier of the two
 * deadlines, so that the command is stopped at its time even while this
 * process is stopped. The lease's ttl is no limit on the command: the
 * lease is renewed for as long as the command runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/select.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "run_super.h"
#include "run_hold.h"
#include "run_watch.h"

/* The signals the supervisor handles; the first three are passed on. */
static const int run_sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGCHLD };
#define RUN_NSIGS 4
#define RUN_NFORWARD 3

/* The write end of the wake-up pipe, for the signal handler, which gets
 * no context pointer. The file's one global; set before the handlers are
 * installed. */
static int run_wake_fd = -1;

/* The exit code that reports how the child ended, as a shell does. */
static int child_exit_code(int wstatus)
{
    if (WIFEXITED(wstatus))
        return WEXITSTATUS(wstatus);
    if (WIFSIGNALED(wstatus))
        return 128 + WTERMSIG(wstatus);
    return CLI_EXIT_DB;
}

/* "exited with status 3", "was killed by SIGTERM". */
static const char *how_ended(char *buf, size_t size, int wstatus)
{
    char sig[32];

    if (WIFSIGNALED(wstatus))
        snprintf(buf, size, "was killed by %s",
                 cli_signame(WTERMSIG(wstatus), sig, sizeof sig));
    else
        snprintf(buf, size, "exited with status %d",
                 child_exit_code(wstatus));
    return buf;
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
    run_wake_write(run_wake_fd, b);
    errno = saved;
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
                run_take_note(st);
                continue;
            }
            if (sig == SIGCHLD)
                continue;
            /* In sqllock's own group, a signal from the terminal went to
             * the whole foreground group, the command included: passing it
             * on would deliver it twice. */
            if ((buf[i] & RUN_FROM_TTY) && !st->own_group)
                continue;
            run_to_guard(st, CLI_GUARD_SIGNAL, sig, 0);
        }
    }
}

/* Acts on one message from the guard. */
static void guard_said(run_state *st, const cli_guard_msg *m)
{
    char when[64], how[64], sig[32];
    int64_t deadline;

    switch (m->op) {
    case CLI_GUARD_EXITED:
        st->ended = 1;
        st->wstatus = m->arg;
        st->cmd_end_us = m->value;
        run_event(st, "the command %s", how_ended(how, sizeof how, m->arg));
        /* It ran past --max-runtime: the guard stopped it while this
         * supervisor could not, or it ended just after its time. */
        if (!st->timed_out && st->runtime_end_us != 0 &&
            m->value >= st->runtime_end_us) {
            st->timed_out = 1;
            run_say(st, "the command ran longer than --max-runtime %s",
                    st->runtime_text);
        }
        /* The guard saw it end after the deadline, which this supervisor
         * has not noticed yet (it was stopped just before it read this). */
        deadline = run_deadline_us(st);
        if (!st->lost && deadline != 0 && m->value >= deadline)
            run_lose(st, "its local deadline passed before the command ended");
        break;
    case CLI_GUARD_LEFTOVER:
        st->leftover = 1;
        run_say(st, "the command left %d process%s running; stopping %s (%s, "
                "SIGKILL after --kill-after) before the lock is given up",
                (int)m->arg, m->arg == 1 ? "" : "es",
                m->arg == 1 ? "it" : "them",
                cli_signame(st->lost_signal, sig, sizeof sig));
        break;
    case CLI_GUARD_EXPIRED:
        /* Said only when this supervisor noticed the loss late: the
         * guard acted at the deadline while it could not. */
        if (st->lost && st->lost_us - m->value > RUN_LATE_US) {
            run_wall_time(when, sizeof when, m->value);
            run_say(st, "the guard had stopped the command at %s, when the "
                    "lease's local deadline passed", when);
        }
        break;
    case CLI_GUARD_KILLED:
        if (st->ended)
            run_say(st, "what the command left running did not stop; sending "
                    "SIGKILL");
        else
            run_say(st, "the command did not stop; sending SIGKILL");
        break;
    case CLI_GUARD_DONE:
        st->guard_done = 1;
        break;
    default:
        break;
    }
}

/* Reads what the guard has reported. */
static void read_guard(run_state *st)
{
    cli_guard_msg m;
    ssize_t n;

    while (!st->guard_eof) {
        n = read(st->sts, &m, sizeof m);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return;
        if (n != (ssize_t)sizeof m) {
            /* End of file: the guard has exited (or died). Writes of
             * one message are never split. */
            st->guard_eof = 1;
            return;
        }
        guard_said(st, &m);
    }
}

/* Tells the guard the lease's local deadline when a renewal moved it,
 * or --max-runtime's end when that comes first. */
static void push_deadline(run_state *st)
{
    int64_t d;

    if (st->lost || st->timed_out)
        return;
    d = run_deadline_us(st);
    if (st->runtime_end_us != 0 && (d == 0 || st->runtime_end_us < d))
        d = st->runtime_end_us;
    if (d != 0 && d != st->deadline_sent) {
        run_to_guard(st, CLI_GUARD_DEADLINE, 0, d);
        st->deadline_sent = d;
    }
}

/* --max-runtime: when the command has run its time, has the guard stop
 * it as after a loss. After the guard's news, so that a command that
 * ended in time is not taken for one that did not. */
static void check_runtime(run_state *st)
{
    char sig[32];

    if (st->runtime_end_us == 0 || st->timed_out || st->ended || st->lost ||
        cli_guard_now_us() < st->runtime_end_us)
        return;
    st->timed_out = 1;
    run_say(st, "the command ran longer than --max-runtime %s; stopping it "
            "(%s, SIGKILL after --kill-after)", st->runtime_text,
            cli_signame(st->lost_signal, sig, sizeof sig));
    run_to_guard(st, CLI_GUARD_LOST, 0, 0);
}

/*
 * Supervises the job until the guard reports that nothing of it runs any
 * more, or is gone. Returns 0, or -1 when waiting fails (which leaves
 * nothing sensible to do but report it).
 */
static int supervise(run_state *st)
{
    run_check_lease(st);
    for (;;) {
        struct timespec ts;
        fd_set rd;
        int64_t nap;
        int maxfd;

        if (st->guard_done || st->guard_eof)
            return 0;
        push_deadline(st);
        nap = RUN_MAX_NAP_MS;
        if (!st->lost) {
            /* Wake just after the local deadline, should no renewal move
             * it meanwhile, and soon after each renewal, to pass its
             * deadline on to the guard well before the old one. */
            int64_t left = sqllock_lease_remaining_ms(st->lease) + 1;
            int64_t quarter = st->every_ms / 4;

            if (left < nap)
                nap = left;
            if (quarter < nap)
                nap = quarter;
        }
        if (st->runtime_end_us != 0 && !st->timed_out && !st->ended) {
            int64_t left = (st->runtime_end_us - cli_guard_now_us()) / 1000
                           + 1;

            if (left < nap)
                nap = left;
        }
        if (nap < 1)
            nap = 1;
        ts.tv_sec = (time_t)(nap / 1000);
        ts.tv_nsec = (long)(nap % 1000) * 1000000L;
        FD_ZERO(&rd);
        FD_SET(st->wake[0], &rd);
        FD_SET(st->sts, &rd);
        maxfd = st->wake[0] > st->sts ? st->wake[0] : st->sts;
        if (pselect(maxfd + 1, &rd, NULL, NULL, &ts, &st->waitmask) < 0
            && errno != EINTR) {
            run_say(st, "pselect: %s", strerror(errno));
            return -1;
        }
        run_check_lease(st);
        drain(st);
        read_guard(st);
        check_runtime(st);
    }
}

/* Writes all of buf; 0, or -1 with errno. */
static int write_full(int fd, const void *buf, size_t len)
{
    const char *p = buf;

    while (len > 0) {
        ssize_t n = write(fd, p, len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Appends "name=value\0" to buf[*len..cap); -1 when it does not fit. */
static int var_add(char *buf, size_t cap, size_t *len, const char *name,
                   const char *value)
{
    size_t nl = strlen(name), vl = strlen(value);

    if (*len + nl + vl + 2 > cap)
        return -1;
    memcpy(buf + *len, name, nl);
    buf[*len + nl] = '=';
    memcpy(buf + *len + nl + 1, value, vl + 1);
    *len += nl + vl + 2;
    return 0;
}

/*
 * Tells the guard to start the command (CLI_GUARD_START), with the
 * variables its environment gets: SQLLOCK_NAME, SQLLOCK_OWNER and
 * SQLLOCK_TOKEN of the lease, and with --export-db the database sqllock
 * used, in the form sqllock got it: SQLLOCK_DB=URL for --db or
 * $SQLLOCK_DB, SQLLOCK_DB_FILE=PATH for --db-file or $SQLLOCK_DB_FILE,
 * neither for the built-in default, so that a `sqllock` the command runs
 * finds the same database. Returns 0, or -1 with errno.
 */
static int send_start(run_state *st)
{
    const cli_db *db = st->where;
    char token[32], *buf;
    size_t cap, len = 0;
    cli_guard_msg m;
    int rc = 0, err;

    cap = 200 + 2 * strlen(st->name)
          + (db->url != NULL ? strlen(db->url) : 0)
          + (db->file != NULL ? strlen(db->file) : 0);
    buf = malloc(cap);
    if (buf == NULL)
        return -1;
    snprintf(token, sizeof token, "%" PRId64,
             sqllock_lease_token(st->lease));
    rc |= var_add(buf, cap, &len, "SQLLOCK_NAME", st->name);
    if (st->sem != NULL) {
        /* --permits: which permit, 0..N-1 (SQLLOCK_TOKEN is its lease's). */
        char permit[16];

        snprintf(permit, sizeof permit, "%d", sqllock_sem_permit(st->sem));
        rc |= var_add(buf, cap, &len, "SQLLOCK_PERMIT", permit);
    }
    rc |= var_add(buf, cap, &len, "SQLLOCK_OWNER",
                  sqllock_lease_owner(st->lease));
    rc |= var_add(buf, cap, &len, "SQLLOCK_TOKEN", token);
    if (st->nalso > 0 && rc == 0) {
        /* Several locks: SQLLOCK_NAMES, the names one per line (a name
         * has no control characters), NAME first, then --also's in their
         * order; SQLLOCK_TOKENS, their tokens in the same order,
         * separated by spaces. */
        char *names, *tokens;
        size_t nl = strlen(st->name) + 1, tl = 0;
        int i;

        for (i = 0; i < st->nalso; i++)
            nl += strlen(st->also_names[i]) + 1;
        names = malloc(nl);
        tokens = malloc(21 * (size_t)(st->nalso + 1));
        if (names == NULL || tokens == NULL)
            rc = -1;
        else {
            strcpy(names, st->name);
            tl = (size_t)sprintf(tokens, "%s", token);
            for (i = 0; i < st->nalso; i++) {
                strcat(names, "\n");
                strcat(names, st->also_names[i]);
                tl += (size_t)sprintf(tokens + tl, " %" PRId64,
                                      sqllock_lease_token(st->also[i]));
            }
            cap += nl + tl + 64;
            {
                char *bigger = realloc(buf, cap);
                if (bigger == NULL)
                    rc = -1;
                else
                    buf = bigger;
            }
            if (rc == 0) {
                rc |= var_add(buf, cap, &len, "SQLLOCK_NAMES", names);
                rc |= var_add(buf, cap, &len, "SQLLOCK_TOKENS", tokens);
            }
        }
        free(names);
        free(tokens);
    }
    if (st->export_db && rc == 0) {
        if (db->source == CLI_DB_OPTION || db->source == CLI_DB_VAR)
            rc |= var_add(buf, cap, &len, CLI_DB_ENV, db->url);
        else if (db->source == CLI_DB_FILE_OPTION ||
                 db->source == CLI_DB_FILE_VAR)
            rc |= var_add(buf, cap, &len, CLI_DB_FILE_ENV, db->file);
    }
    m.op = CLI_GUARD_START;
    m.arg = st->own_group ? 0 : (int32_t)getpgrp();
    m.value = (int64_t)len;
    if (rc != 0) {
        errno = ENOMEM;
    } else if (write_full(st->ctl, &m, sizeof m) != 0
               || write_full(st->ctl, buf, len) != 0) {
        rc = -1;
    }
    err = errno;
    /* The URL (--export-db) may hold a password. */
    cli_wipe(buf, cap);
    free(buf);
    errno = err;
    return rc != 0 ? -1 : 0;
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
            fds[0] = fds[1] = -1;
            return -1;
        }
    }
    return 0;
}

/* Blocks the four signals and installs their handler (for INT, TERM and
 * HUP only when they were not ignored at start); *waitmask gets the mask
 * to wait with. */
static int run_take_signals(sigset_t *waitmask)
{
    struct sigaction sa, old;
    sigset_t set;
    int i;

    sigemptyset(&set);
    for (i = 0; i < RUN_NSIGS; i++)
        sigaddset(&set, run_sigs[i]);
    if (sigprocmask(SIG_BLOCK, &set, waitmask) != 0)
        return -1;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_NOCLDSTOP;
    sigfillset(&sa.sa_mask);
    for (i = 0; i < RUN_NSIGS; i++) {
        if (sigaction(run_sigs[i], NULL, &old) != 0)
            return -1;
        /* A handler also replaces an inherited SIG_IGN for SIGCHLD. */
        if (i < RUN_NFORWARD && old.sa_handler == SIG_IGN)
            continue;
        if (sigaction(run_sigs[i], &sa, NULL) != 0)
            return -1;
        sigdelset(waitmask, run_sigs[i]);
    }
    return 0;
}

/* Starts the watchdog's renewer (its thread and connection) before the
 * acquire, so that its connect does not spend the lease's ttl. The thread
 * starts with the four signals blocked, as in run_take_signals(), so that
 * they reach only the main thread's pselect(). */
int run_prepare_renewer(sqllock_db *db)
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

/* Closes the pipe to the guard -- which, should the guard still run,
 * tells it to kill what is left of the job -- and reaps it. Returns its
 * wait status. */
int run_end_guard(run_state *st)
{
    int ws = 0;

    if (st->ctl >= 0) {
        close(st->ctl);
        st->ctl = -1;
    }
    if (st->guard > 0) {
        while (waitpid(st->guard, &ws, 0) < 0 && errno == EINTR)
            ;
        st->guard = 0;
    }
    return ws;
}

/* After the guard died without saying that the job is over: the command
 * got SIGKILL with it (PR_SET_PDEATHSIG), and what the command started
 * came to this process, a child subreaper too. Kills and reaps it all. */
static void kill_orphans(void)
{
    struct timespec ts = { 0, 5000000 };

    for (;;) {
        int live = cli_guard_signal_tree(getpid(), SIGKILL);
        pid_t r;

        while ((r = waitpid(-1, NULL, WNOHANG)) > 0)
            ;
        if (live == 0 && r < 0)
            return;
        nanosleep(&ts, NULL);
    }
}

/* Starts the command through the guard and supervises it. Returns the
 * command's exit code, or the tool's own code when it could not run or
 * be supervised. */
int run_start_and_supervise(run_state *st)
{
    sqllock_watch_options wo = SQLLOCK_WATCH_OPTIONS_INIT;
    cli_guard_msg m;
    char how[64];
    int rc, ws, i;

    if (wake_pipe(st->wake) != 0) {
        run_say(st, "pipe: %s", strerror(errno));
        return run_give_back(st, CLI_EXIT_DB);
    }
    run_wake_fd = st->wake[1];
    if (run_take_signals(&st->waitmask) != 0) {
        run_say(st, "cannot set up signals: %s", strerror(errno));
        return run_give_back(st, CLI_EXIT_DB);
    }
    /* The renewer thread already runs (run_prepare_renewer()), or the run
     * renews on its own connection (run_share_renew()). */
    wo.interval_ms = st->interval_ms;
    wo.callback = run_on_watch;
    wo.ctx = st;
    /* run_share_renew() starts after send_start(), which reads the lease's
     * owner and token: a renewal that finds the lease taken forgets
     * them. */
    rc = st->share ? SQLLOCK_OK : sqllock_lease_watch(st->lease, &wo);
    for (i = 0; !st->share && rc == SQLLOCK_OK && i < st->nalso; i++)
        rc = sqllock_lease_watch(st->also[i], &wo);
    if (rc != SQLLOCK_OK) {
        rc = cli_db_error(st->db, rc, "run: cannot renew %s",
                          st->what);
        return run_give_back(st, rc == CLI_EXIT_USAGE ? CLI_EXIT_DB : rc);
    }
    st->own_group = !terminal_foreground();
    /* The command's start, for --max-runtime and its duration: taken
     * before it is asked for, so that neither the runtime limit nor the
     * duration misses the time the guard's answer takes to come back. */
    st->cmd_start_us = cli_guard_now_us();
    if (st->runtime_ms > 0)
        st->runtime_end_us = st->cmd_start_us + st->runtime_ms * 1000;
    /* The guard knows the deadline before the command starts: should
     * this process be stopped right after, the guard still acts. */
    push_deadline(st);
    if (send_start(st) != 0) {
        st->cmd_start_us = 0;
        run_say(st, "cannot start the command: %s", strerror(errno));
        return run_give_back(st, CLI_EXIT_DB);
    }
    if (st->share && run_share_start(st) != 0) {
        /* The command starts, and is stopped at once. */
        run_say(st, "cannot start the renewer thread: %s", strerror(errno));
        run_lose(st, "it cannot be renewed");
    }
    /* The first answer: the command runs, or could not be executed. */
    while ((rc = (int)read(st->sts, &m, sizeof m)) < 0 && errno == EINTR)
        ;
    if (rc != (int)sizeof m
        || (m.op != CLI_GUARD_STARTED && m.op != CLI_GUARD_EXECFAIL)) {
        st->cmd_start_us = 0;
        ws = run_end_guard(st);
        run_say(st, "the guard process ended before the command started (%s)",
                how_ended(how, sizeof how, ws));
        return run_give_back(st, CLI_EXIT_DB);
    }
    if (m.op == CLI_GUARD_EXECFAIL) {
        st->cmd_start_us = 0;               /* it never ran */
        run_end_guard(st);
        run_say(st, "cannot execute '%s': %s", st->cmd0, strerror(m.arg));
        return run_give_back(st, m.arg == ENOENT || m.arg == ENOTDIR
                                 ? CLI_EXIT_NOTFOUND : CLI_EXIT_NOEXEC);
    }
    st->cmd = (pid_t)m.arg;
    run_event(st, "started the command '%s' (pid %ld)", st->cmd0,
              (long)st->cmd);
    fcntl(st->ctl, F_SETFL, O_NONBLOCK);
    fcntl(st->sts, F_SETFL, O_NONBLOCK);
    if (supervise(st) != 0) {
        run_end_guard(st);
        return CLI_EXIT_DB;
    }
    if (!st->guard_done) {
        ws = run_end_guard(st);
        kill_orphans();
        run_say(st, "the guard process ended unexpectedly (it %s); the "
                "command was killed with it", how_ended(how, sizeof how, ws));
        return CLI_EXIT_DB;
    }
    run_end_guard(st);
    return st->ended ? child_exit_code(st->wstatus) : CLI_EXIT_DB;
}
