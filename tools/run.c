/*
 * run.c -- `sqllock run NAME --ttl DUR ... -- CMD ARGS...`: runs a command
 * while holding a lease, and keeps the lease alive while it runs.
 *
 * Three processes take part. The runner (this file) holds the lease; the
 * guard (guard.c), a small single-threaded process forked before
 * anything else happens, starts the command and sees to it that nothing
 * of it runs on once the runner is gone (DESIGN X1): the runner's end of
 * file on their pipe makes the guard kill the command's group and every
 * descendant, and it stops the command by itself when the lease's local
 * deadline passes while the runner is stopped and cannot tell it of a
 * renewal. guard.c explains how, and what it does not cover.
 *
 * The lease is renewed by the library's watchdog (sqllock_lease_watch(),
 * DESIGN L7): a renewer thread with its own connection -- or, behind a
 * pooler that gives each client connection a server connection of its
 * own (pooler=session, pooler=pgpool), by a thread of this file on the
 * run's own connection (share_renew()), so that a run holds one slot of
 * the pool, not two. The main thread
 * is a supervisor that never talks to the database while the command
 * runs, so a renewal that hangs cannot keep it from acting: it waits,
 * with pselect(), on the wake-up pipe, the pipe from the guard, and a
 * timeout. The wake-up pipe is written by the signal handlers (one byte:
 * the signal number) and by the watch callback (a zero byte). The
 * timeout is the lease's local deadline (DESIGN L6), so the supervisor
 * sees the lease lost when that deadline passes even if the renewer is
 * stuck and never calls back, and at most a quarter of the renewal
 * interval, so that it passes each new deadline on to the guard soon
 * after the renewal that set it.
 *
 * DESIGN X3: each time the supervisor wakes, it looks at the lease's
 * state before anything else -- before it reads what the guard reported
 * meanwhile -- so a runner that wakes from a pause past its deadline
 * treats the lease as lost even when the command has ended meanwhile.
 * DESIGN X2: the exit code is 76 whenever the lease was not held without
 * a break from the grant until the command and what it left running had
 * ended: a renewal found another owner, the deadline passed (also when
 * the guard reports that the command ended after it), or the release
 * found the lease taken over. Each such message says when the loss was
 * noticed.
 *
 * SIGCHLD, SIGINT, SIGTERM and SIGHUP are blocked except inside pselect(),
 * so their handlers run only there, on the main thread. They are blocked
 * before the watch starts the renewer thread, which inherits that mask.
 * INT, TERM and HUP are passed on to the command, through the guard; a
 * signal that was ignored when sqllock started (nohup) stays ignored, as
 * a shell does it.
 *
 * The command gets a process group of its own, and every signal sent to
 * it goes to that whole group, so that a shell script's children stop
 * with it when the lease is lost. The exception: when sqllock runs in the
 * foreground of its terminal, the command joins sqllock's group so that
 * it can use the terminal; the signals then go to the command alone, and
 * those the terminal sends reach the command directly (they are not
 * passed on twice).
 *
 * If the lease is lost, the command gets --signal (SIGTERM), then SIGKILL
 * after --kill-after (10 s) if it is still running, and the tool exits
 * 76. When the command has ended, whatever it left running gets --signal,
 * then SIGKILL after --kill-after -- at once when the lease was lost --
 * and the lease is given up only when nothing of the job is left.
 *
 * DESIGN X4, --hold-at-least DUR: when the command ends sooner than DUR
 * after the grant, the lease is not released but set to expire DUR after
 * the grant (one renewal with the time left as its ttl), and sqllock
 * exits. The runner then has nothing left to be killed in: the name stays
 * held until then whatever happens to it.
 *
 * The command's environment is sqllock's own with the lease's
 * SQLLOCK_NAME, SQLLOCK_OWNER and SQLLOCK_TOKEN, and without SQLLOCK_DB
 * and SQLLOCK_DB_FILE (DESIGN C4: the URL may hold a password), unless
 * --export-db asks for the database: the runner sends those variables to
 * the guard, which builds the environment. sqllock's own environment is
 * never changed: the renewer thread runs meanwhile, and libpq reads its
 * PG* variables on each connect.
 *
 * --leader (DESIGN M4): the lease is the leadership of the election NAME
 * (sqllock_leader_lease_new(): the row NAME 0x1f "leader", which every
 * sqllock_leader of that election campaigns for), and the runner waits
 * for it -- forever unless --wait or --skip says otherwise; a hand-over
 * wakes it at once -- then runs the command as for a lock: X1-X3 hold,
 * the command is stopped when the leadership is lost and the exit code
 * is then 76; SIGTERM or SIGINT reach the command, and when it has ended
 * the release hands the leadership over; a command that ends by itself
 * hands it over too, and its exit code is the tool's. The runner
 * campaigns once: after a loss it exits (76), and whoever started it
 * (a service manager) starts it again to campaign again.
 *
 * --quiet leaves out the message about a busy lock (errors are still
 * printed); that message names the holder and the time it has left, as
 * `list` shows them (never the owner id, which can release the lock).
 * --verbose prints a line for each event, each message with the time.
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

#include "cli.h"
#include "guard.h"

/* The longest the supervisor sleeps between looks at the lease, and
 * the longest piece of any of its waits: pselect() counts CLOCK_MONOTONIC
 * time, which stops while the host is suspended, so a wait reads the
 * deadline clock (cli_guard_now_us()) again at least this often, and a
 * deadline that passed during a suspend is acted on at most this long
 * after the resume (DESIGN T1; the library's waits are cut the same
 * way). */
#define RUN_MAX_NAP_MS 1000
/* A message buffer as long as the library's own messages. */
#define RUN_MSG_MAX 640
/* Bytes on the wake-up pipe: a signal number, with RUN_FROM_TTY when the
 * kernel sent it (a terminal's Ctrl-C or hangup); zero from the watch
 * callback. The signals handled are all below 0x80. */
#define RUN_WAKE_WATCH 0
#define RUN_FROM_TTY 0x80
/* A loss noticed longer than this after the lease's local deadline was
 * noticed late: sqllock was stopped, paused or starved meanwhile. */
#define RUN_LATE_US 100000

/* The signals the supervisor handles; the first three are passed on. */
static const int run_sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGCHLD };
#define RUN_NSIGS 4
#define RUN_NFORWARD 3

/* The supervisor's state. */
typedef struct run_state {
    sqllock_db *db;
    sqllock_lease *lease;
    /* --shared / --exclusive: the shared/exclusive lock on NAME
     * (sqllock_rw); `lease` is then its hold's lease. */
    sqllock_rw *rw;
    const char *name;
    /* --also: the other names, taken with NAME all or none
     * (sqllock_lease_acquire_many()), watched, and given up with it. */
    sqllock_lease *also[SQLLOCK_LEASE_MANY_MAX - 1];
    const char *also_names[SQLLOCK_LEASE_MANY_MAX - 1];
    int nalso;
    /* --permits: the semaphore whose permit `lease` is (DESIGN M1). */
    sqllock_sem *sem;
    int permits;
    const char *lost_name;     /* the name found lost (name, or an
                                  --also name) */
    const char *cmd0;          /* the command's name, for messages */
    const cli_db *where;       /* the database's URL, and its source */
    const sqllock_options *dbo; /* the options it was opened with */
    int export_db;             /* --export-db */
    int lost_signal;           /* --signal */
    int64_t ttl_ms;            /* --ttl */
    int64_t interval_ms;       /* --renew-every, 0 for the default */
    int64_t every_ms;          /* the renewal interval in effect */
    int64_t hold_ms;           /* --hold-at-least, 0 for none */
    int64_t release_timeout_ms; /* --release-timeout */
    int verbose;               /* --verbose */
    int quiet;                 /* --quiet */
    int leader;                /* --leader: the lease is NAME's
                                  leadership */
    char what[300];            /* what the messages call what is held:
                                  "lock 'NAME'", "the leadership of
                                  'NAME'", ... (set in main) */
    int history;               /* note the run in the name's history */
    int64_t history_token;     /* the token it is noted under */
    int64_t history_start_ms;  /* its start, by this host's wall clock */
    char history_who[300];     /* the holder text */
    int own_group;             /* the command has a process group of its
                                  own */
    int wake[2];               /* the wake-up pipe */
    sigset_t waitmask;         /* the signal mask inside pselect() */
    pid_t guard;               /* the guard, until it is reaped */
    int ctl;                   /* the pipe to the guard, -1 when closed */
    int sts;                   /* the pipe from the guard */
    pid_t cmd;                 /* the command, once it runs */
    int64_t granted_us;        /* when the acquire returned */
    int64_t deadline_sent;     /* the last deadline the guard was told */
    int lost;                  /* the lease is lost */
    int64_t lost_us;           /* when that was noticed */
    int ended;                 /* the command has ended ... */
    int wstatus;               /* ... with this status */
    int leftover;              /* it left processes running */
    int guard_done;            /* the guard said CLI_GUARD_DONE */
    int guard_eof;             /* the pipe from the guard is at its end */
    /* One connection (share_renew()): the run renews on its own
     * handle, from a thread of its own, not through the library's
     * watchdog and its second connection. */
    int share;                 /* behind a session pooler */
    int share_on;              /* the thread runs, until joined */
    int share_stop;            /* told to stop; under mu */
    pthread_cond_t share_cv;   /* wakes it to stop; CLOCK_MONOTONIC */
    pthread_t sharer;
    /* What the watch callback last reported, for the main thread. */
    pthread_mutex_t mu;
    int note_pending;
    int note_state;
    int note_status;
    sqllock_lease *note_lease;
    char note_msg[400];
} run_state;

/* --release-timeout's default: how long a release that cannot reach the
 * database is tried again (release_persisting()). */
#define RUN_RELEASE_TIMEOUT_MS 60000

/* The write end of the wake-up pipe, for the signal handler, which gets
 * no context pointer. The file's one global; set before the handlers are
 * installed. */
static int run_wake_fd = -1;

/* The wall-clock time at the cli_guard_now_us() time `mono_us`, as
 * "2025-11-25T15:45:18.123+0100". */
static void wall_time(char *buf, size_t size, int64_t mono_us)
{
    struct timespec ts;
    struct tm tm;
    char base[32], zone[8];
    int64_t wall_us;
    time_t sec;

    clock_gettime(CLOCK_REALTIME, &ts);
    wall_us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000
              - (cli_guard_now_us() - mono_us);
    sec = (time_t)(wall_us / 1000000);
    if (localtime_r(&sec, &tm) == NULL) {
        snprintf(buf, size, "%" PRId64 ".%03d", (int64_t)sec,
                 (int)(wall_us % 1000000 / 1000));
        return;
    }
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    strftime(zone, sizeof zone, "%z", &tm);
    snprintf(buf, size, "%s.%03d%s", base, (int)(wall_us % 1000000 / 1000),
             zone);
}

/* A span of time: "0.4s", "29.8s", "4m05s", "2h10m"; tenths are cut, not
 * rounded (as `list` shows them). */
static const char *span(char *buf, size_t size, int64_t ms)
{
    if (ms < 0)
        ms = 0;
    if (ms < 60000)
        snprintf(buf, size, "%" PRId64 ".%" PRId64 "s", ms / 1000,
                 ms % 1000 / 100);
    else if (ms < 3600000)
        snprintf(buf, size, "%" PRId64 "m%02" PRId64 "s", ms / 60000,
                 ms % 60000 / 1000);
    else
        snprintf(buf, size, "%" PRId64 "h%02" PRId64 "m", ms / 3600000,
                 ms % 3600000 / 60000);
    return buf;
}

static void vsay(int verbose, const char *fmt, va_list ap)
{
    char when[64], msg[1200];

    vsnprintf(msg, sizeof msg, fmt, ap);
    if (verbose) {
        wall_time(when, sizeof when, cli_guard_now_us());
        fprintf(stderr, "sqllock: %s run: %s\n", when, msg);
    } else {
        fprintf(stderr, "sqllock: run: %s\n", msg);
    }
}

/* Prints "sqllock: run: <message>" to stderr; under --verbose with the
 * time after "sqllock: ". */
static void say(const run_state *st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void say(const run_state *st, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsay(st->verbose, fmt, ap);
    va_end(ap);
}

/* The same, only under --verbose: one line per event. */
static void event(const run_state *st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void event(const run_state *st, const char *fmt, ...)
{
    va_list ap;

    if (!st->verbose)
        return;
    va_start(ap, fmt);
    vsay(1, fmt, ap);
    va_end(ap);
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

    pthread_mutex_lock(&st->mu);
    st->note_pending = 1;
    st->note_lease = lease;
    st->note_state = state;
    st->note_status = status;
    snprintf(st->note_msg, sizeof st->note_msg, "%s", msg ? msg : "");
    pthread_mutex_unlock(&st->mu);
    wake_write(st->wake[1], RUN_WAKE_WATCH);
}

/*
 * One server connection per run (issue 27): behind a pooler that gives
 * each client connection a server connection for the client's whole
 * session (pooler=session, pooler=pgpool; cli_db_session_pooler()), the
 * library's watchdog would renew on a connection of its own, a second
 * slot of the pool, and a pool with fewer than two free slots per
 * concurrent run left every run holding one slot while its renewer
 * waited for another. There the run renews on its own connection, from
 * this thread: the main thread does not use the handle from the start of
 * this thread until it has joined it (the handle passes between them
 * there), and stays the supervisor that never waits on the database.
 *
 * The renewals are the watchdog's (DESIGN L7): every interval after the
 * grant; after a failure again every quarter of it, the lease UNCERTAIN,
 * until its local deadline; LOST when one finds another owner. A lease
 * whose deadline has passed is never renewed again (a renewal would make
 * it held again; the supervisor has acted on the loss). The news reaches
 * the supervisor as the watchdog's does, through on_watch(). A renewal in
 * flight when the job ends is waited for before the release uses the
 * connection: it is bounded by the statement timeout.
 */
static void *share_renew(void *arg)
{
    run_state *st = arg;
    sqllock_lease *all[SQLLOCK_LEASE_MANY_MAX];
    int bad[SQLLOCK_LEASE_MANY_MAX], gone[SQLLOCK_LEASE_MANY_MAX];
    int64_t retry = st->every_ms / 4 > 10 ? st->every_ms / 4 : 10;
    int64_t next = st->granted_us + st->every_ms * 1000;
    int n = 0, left, i;

    all[n++] = st->lease;
    for (i = 0; i < st->nalso; i++)
        all[n++] = st->also[i];
    memset(bad, 0, sizeof bad);
    memset(gone, 0, sizeof gone);
    left = n;
    pthread_mutex_lock(&st->mu);
    while (!st->share_stop && left > 0) {
        int64_t now = sqllock_now_us(), nap;
        int failed = 0;

        if (now < next) {
            struct timespec ts;

            /* In pieces: the condition variable counts CLOCK_MONOTONIC,
             * which stops while the host is suspended (DESIGN T1). */
            nap = (next - now) / 1000 + 1;
            if (nap > RUN_MAX_NAP_MS)
                nap = RUN_MAX_NAP_MS;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            ts.tv_sec += (time_t)(nap / 1000);
            ts.tv_nsec += (long)(nap % 1000) * 1000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&st->share_cv, &st->mu, &ts);
            continue;
        }
        pthread_mutex_unlock(&st->mu);
        for (i = 0; i < n; i++) {
            int rc;

            if (gone[i])
                continue;
            if (sqllock_lease_state(all[i]) == SQLLOCK_STATE_LOST) {
                gone[i] = 1;
                left--;
                on_watch(st, all[i], SQLLOCK_STATE_LOST, SQLLOCK_TIMEOUT,
                         "its local deadline passed before a renewal "
                         "succeeded");
                continue;
            }
            rc = sqllock_lease_renew(all[i]);
            if (rc == SQLLOCK_OK) {
                if (bad[i])
                    on_watch(st, all[i], SQLLOCK_STATE_HELD, rc, NULL);
                bad[i] = 0;
            } else if (rc == SQLLOCK_LOST || rc == SQLLOCK_ENOTHELD) {
                gone[i] = 1;
                left--;
                on_watch(st, all[i], SQLLOCK_STATE_LOST, SQLLOCK_LOST,
                         sqllock_errmsg(st->db));
            } else {
                if (!bad[i])
                    on_watch(st, all[i], SQLLOCK_STATE_UNCERTAIN, rc,
                             sqllock_errmsg(st->db));
                bad[i] = 1;
                failed = 1;
            }
        }
        next = sqllock_now_us() + (failed ? retry : st->every_ms) * 1000;
        pthread_mutex_lock(&st->mu);
    }
    pthread_mutex_unlock(&st->mu);
    return NULL;
}

/* Starts share_renew(). The thread inherits the main thread's mask, with
 * the four signals blocked (take_signals()). 0, or -1 with errno. */
static int share_start(run_state *st)
{
    pthread_condattr_t ca;
    int err;

    if (pthread_condattr_init(&ca) != 0)
        return -1;
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    err = pthread_cond_init(&st->share_cv, &ca);
    pthread_condattr_destroy(&ca);
    if (err != 0) {
        errno = err;
        return -1;
    }
    st->share_stop = 0;
    err = pthread_create(&st->sharer, NULL, share_renew, st);
    if (err != 0) {
        pthread_cond_destroy(&st->share_cv);
        errno = err;
        return -1;
    }
    st->share_on = 1;
    return 0;
}

/* Stops share_renew() and joins it: the handle is the main thread's
 * again. Harmless when it does not run. */
static void share_stop(run_state *st)
{
    if (!st->share_on)
        return;
    pthread_mutex_lock(&st->mu);
    st->share_stop = 1;
    pthread_cond_signal(&st->share_cv);
    pthread_mutex_unlock(&st->mu);
    pthread_join(st->sharer, NULL);
    pthread_cond_destroy(&st->share_cv);
    st->share_on = 0;
}

/* Sends a message to the guard. The pipe does not block: a guard that
 * has stopped reading (it is stopped itself) costs a message, never the
 * supervisor. */
static void to_guard(run_state *st, int op, int arg, int64_t value)
{
    cli_guard_msg m;
    ssize_t n;

    if (st->ctl < 0)
        return;
    m.op = op;
    m.arg = arg;
    m.value = value;
    do
        n = write(st->ctl, &m, sizeof m);
    while (n < 0 && errno == EINTR);
}

/* Marks the lease lost, says when and why, and has the guard stop the
 * command. */
static void lose(run_state *st, const char *why)
{
    char when[64], since[32], sig[32];
    char also[300];
    const char *name = st->what;

    if (st->lost_name != NULL && st->lost_name != st->name) {
        snprintf(also, sizeof also, "lock '%s'", st->lost_name);
        name = also;
    }

    st->lost = 1;
    st->lost_us = cli_guard_now_us();
    wall_time(when, sizeof when, st->lost_us);
    span(since, sizeof since, (st->lost_us - st->granted_us) / 1000);
    if (st->ended && !st->leftover)
        say(st, "%s lost (noticed at %s, %s after the grant): %s; "
            "the command had already ended", name, when, since, why);
    else if (st->ended)
        say(st, "%s lost (noticed at %s, %s after the grant): %s; "
            "killing what the command left running", name, when, since,
            why);
    else
        say(st, "%s lost (noticed at %s, %s after the grant): %s; "
            "stopping the command (%s)", name, when, since, why,
            cli_signame(st->lost_signal, sig, sizeof sig));
    to_guard(st, CLI_GUARD_LOST, 0, 0);
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
    if (st->note_lease != NULL && state == SQLLOCK_STATE_LOST &&
        st->lost_name == NULL)
        st->lost_name = st->note_lease == st->lease
                            ? st->name : sqllock_lease_name(st->note_lease);
    memcpy(msg, st->note_msg, sizeof msg);
    st->note_pending = 0;
    pthread_mutex_unlock(&st->mu);
    if (!pending || st->lost)
        return;
    if (state == SQLLOCK_STATE_LOST)
        lose(st, msg);
    else if (state == SQLLOCK_STATE_UNCERTAIN)
        say(st, "renewing %s failed (%s; will retry while its time "
            "lasts): %s", st->what, sqllock_errname(status), msg);
    else if (state == SQLLOCK_STATE_HELD)
        say(st, "%s renewed late: renewing it works again",
            st->what);
}

/* The earliest local deadline of the leases (NAME's and --also's): the
 * job is covered only while every one is held. 0 when one is unknown. */
static int64_t run_deadline_us(const run_state *st)
{
    int64_t d = sqllock_lease_deadline_us(st->lease), e;
    int i;

    for (i = 0; i < st->nalso && d != 0; i++) {
        e = sqllock_lease_deadline_us(st->also[i]);
        if (e == 0 || e < d)
            d = e;
    }
    return d;
}

/* 1 when any of the leases is LOST; notes its name for the message. */
static int any_lost(run_state *st)
{
    int i;

    if (sqllock_lease_state(st->lease) == SQLLOCK_STATE_LOST)
        return 1;
    for (i = 0; i < st->nalso; i++)
        if (sqllock_lease_state(st->also[i]) == SQLLOCK_STATE_LOST) {
            if (st->lost_name == NULL)
                st->lost_name = st->also_names[i];
            return 1;
        }
    return 0;
}

/* Releases NAME's lease and those of --also (all of them, whatever each
 * finds); the status of the first that failed, else SQLLOCK_OK. */
static int release_all(run_state *st)
{
    sqllock_lease *all[SQLLOCK_LEASE_MANY_MAX];
    int i, n;

    /* A renewal on the run's own connection (share_renew()) that found
     * NAME's lease taken has forgotten it: nothing of it to give back. */
    if (sqllock_lease_count(st->lease) == 0 && st->nalso == 0)
        return SQLLOCK_LOST;
    if (st->rw != NULL)
        return sqllock_rw_release(st->rw);
    /* A permit: released through its semaphore, whose messages name it
     * (a lease that renewal found lost is not held any more). */
    if (st->sem != NULL && sqllock_sem_permit(st->sem) >= 0)
        return sqllock_sem_release(st->sem);
    if (st->nalso == 0)
        return sqllock_lease_release(st->lease);
    /* Those still held: a release tried again after a lost connection
     * (release_persisting) has already given some back. */
    n = 0;
    if (sqllock_lease_count(st->lease) > 0)
        all[n++] = st->lease;
    for (i = 0; i < st->nalso; i++)
        if (sqllock_lease_count(st->also[i]) > 0)
            all[n++] = st->also[i];
    if (n == 0)
        return SQLLOCK_OK;
    return sqllock_lease_release_many(st->db, all, n);
}

/* The pause before the next try of a statement that could not reach the
 * database (DESIGN C3): *pause_ms / 2 plus up to as much again, doubled
 * each time up to 500 ms (a server back is found within half a second),
 * never past `end_us`. Returns 0 when `end_us` has
 * passed: no more tries. */
static int retry_pause(int64_t end_us, int64_t *pause_ms)
{
    int64_t left_ms = (end_us - cli_guard_now_us()) / 1000, ms;

    if (left_ms <= 0)
        return 0;
    ms = *pause_ms / 2 + (int64_t)(random() % (*pause_ms / 2 + 1));
    if (ms > left_ms)
        ms = left_ms;
    {
        struct timespec ts = { (time_t)(ms / 1000),
                               (long)(ms % 1000) * 1000000L };

        nanosleep(&ts, NULL);    /* a signal only cuts it short */
    }
    *pause_ms = *pause_ms * 2 < 500 ? *pause_ms * 2 : 500;
    return 1;
}

/*
 * DESIGN C3 in the runner: a release that cannot reach the database (a
 * restart, a failover, a pooler restart: seconds) is tried again on
 * fresh connections until it is answered, --release-timeout has passed,
 * or the lease's local deadline has -- it then expires by itself.
 * Releases name owner and token: trying again changes nothing a lost
 * one did. Says once that it is trying again (unless --quiet), and how
 * it ended. The library's own retrying is set to one try at once
 * (release_timeout_ms 1, cli_cmd_run()), so that these messages come.
 */
static int release_persisting(run_state *st)
{
    char until[64], took[32];
    int64_t start = cli_guard_now_us(), end, left, pause = 100;
    int rc = release_all(st), tries = 0;

    if (rc != SQLLOCK_ECONNECT)
        return rc;
    end = start + st->release_timeout_ms * 1000;
    left = sqllock_lease_remaining_ms(st->lease);
    if (left >= 0 && start + left * 1000 < end)
        end = start + left * 1000;
    wall_time(until, sizeof until, end);
    if (!st->quiet)
        cli_db_error(st->db, rc, "run: cannot release %s now; trying again "
                     "until %s (%s)", st->what, until,
                     end < start + st->release_timeout_ms * 1000
                     ? "the lease's local deadline: it expires then"
                     : "--release-timeout");
    while (rc == SQLLOCK_ECONNECT && retry_pause(end, &pause)) {
        tries++;
        rc = release_all(st);
    }
    span(took, sizeof took, (cli_guard_now_us() - start) / 1000);
    if (rc == SQLLOCK_OK && !st->quiet)
        say(st, "released %s after %s, at try %d", st->what, took,
            tries + 1);
    return rc;
}

/* DESIGN X3: the lease's own state, before anything else, each time the
 * supervisor wakes. A renewal that hangs never calls back, but its
 * deadline passes all the same; and a runner that was stopped past its
 * deadline finds out here, whatever happened meanwhile. */
static void check_lease(run_state *st)
{
    char why[300], late[32];
    int64_t now, deadline;

    if (st->lost || !any_lost(st))
        return;
    now = cli_guard_now_us();
    deadline = run_deadline_us(st);
    if (deadline == 0 || now < deadline) {
        /* The renewer found the lease taken; its note says more. */
        take_note(st);
        if (st->lost)
            return;
        snprintf(why, sizeof why, "a renewal found it taken over by "
                 "another owner, or removed");
    } else if (now - deadline > RUN_LATE_US) {
        snprintf(why, sizeof why, "its local deadline passed %s before "
                 "sqllock could act (it was stopped, paused or starved)",
                 span(late, sizeof late, (now - deadline) / 1000));
    } else {
        snprintf(why, sizeof why, "its local deadline passed before a "
                 "renewal succeeded");
    }
    lose(st, why);
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
            to_guard(st, CLI_GUARD_SIGNAL, sig, 0);
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
        event(st, "the command %s", how_ended(how, sizeof how, m->arg));
        /* The guard saw it end after the deadline, which this supervisor
         * has not noticed yet (it was stopped just before it read this). */
        deadline = run_deadline_us(st);
        if (!st->lost && deadline != 0 && m->value >= deadline)
            lose(st, "its local deadline passed before the command ended");
        break;
    case CLI_GUARD_LEFTOVER:
        st->leftover = 1;
        say(st, "the command left %d process%s running; stopping %s (%s, "
            "SIGKILL after --kill-after) before the lock is given up",
            (int)m->arg, m->arg == 1 ? "" : "es", m->arg == 1 ? "it" : "them",
            cli_signame(st->lost_signal, sig, sizeof sig));
        break;
    case CLI_GUARD_EXPIRED:
        /* Said only when this supervisor noticed the loss late: the
         * guard acted at the deadline while it could not. */
        if (st->lost && st->lost_us - m->value > RUN_LATE_US) {
            wall_time(when, sizeof when, m->value);
            say(st, "the guard had stopped the command at %s, when the "
                "lease's local deadline passed", when);
        }
        break;
    case CLI_GUARD_KILLED:
        if (st->ended)
            say(st, "what the command left running did not stop; sending "
                "SIGKILL");
        else
            say(st, "the command did not stop; sending SIGKILL");
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

/* Tells the guard the lease's local deadline when a renewal moved it. */
static void push_deadline(run_state *st)
{
    int64_t d;

    if (st->lost)
        return;
    d = run_deadline_us(st);
    if (d != 0 && d != st->deadline_sent) {
        to_guard(st, CLI_GUARD_DEADLINE, 0, d);
        st->deadline_sent = d;
    }
}

/*
 * Supervises the job until the guard reports that nothing of it runs any
 * more, or is gone. Returns 0, or -1 when waiting fails (which leaves
 * nothing sensible to do but report it).
 */
static int supervise(run_state *st)
{
    check_lease(st);
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
            say(st, "pselect: %s", strerror(errno));
            return -1;
        }
        check_lease(st);
        drain(st);
        read_guard(st);
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

/* Releases the lease after a failure that kept the command from running
 * (or from being supervised), and returns `code`. */
static int give_back(run_state *st, int code)
{
    int rc;

    share_stop(st);
    rc = release_all(st);

    if (rc != SQLLOCK_OK)
        cli_db_error(st->db, rc, "run: releasing %s", st->what);
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
            fds[0] = fds[1] = -1;
            return -1;
        }
    }
    return 0;
}

/* Blocks the four signals and installs their handler (for INT, TERM and
 * HUP only when they were not ignored at start); *waitmask gets the mask
 * to wait with. */
static int take_signals(sigset_t *waitmask)
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

/* Closes the pipe to the guard -- which, should the guard still run,
 * tells it to kill what is left of the job -- and reaps it. Returns its
 * wait status. */
static int end_guard(run_state *st)
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
static int start_and_supervise(run_state *st)
{
    sqllock_watch_options wo = SQLLOCK_WATCH_OPTIONS_INIT;
    cli_guard_msg m;
    char how[64];
    int rc, ws, i;

    if (wake_pipe(st->wake) != 0) {
        say(st, "pipe: %s", strerror(errno));
        return give_back(st, CLI_EXIT_DB);
    }
    run_wake_fd = st->wake[1];
    if (take_signals(&st->waitmask) != 0) {
        say(st, "cannot set up signals: %s", strerror(errno));
        return give_back(st, CLI_EXIT_DB);
    }
    /* The renewer thread already runs (prepare_renewer()), or the run
     * renews on its own connection (share_renew()). */
    wo.interval_ms = st->interval_ms;
    wo.callback = on_watch;
    wo.ctx = st;
    /* share_renew() starts after send_start(), which reads the lease's
     * owner and token: a renewal that finds the lease taken forgets
     * them. */
    rc = st->share ? SQLLOCK_OK : sqllock_lease_watch(st->lease, &wo);
    for (i = 0; !st->share && rc == SQLLOCK_OK && i < st->nalso; i++)
        rc = sqllock_lease_watch(st->also[i], &wo);
    if (rc != SQLLOCK_OK) {
        rc = cli_db_error(st->db, rc, "run: cannot renew %s",
                          st->what);
        return give_back(st, rc == CLI_EXIT_USAGE ? CLI_EXIT_DB : rc);
    }
    st->own_group = !terminal_foreground();
    /* The guard knows the deadline before the command starts: should
     * this process be stopped right after, the guard still acts. */
    push_deadline(st);
    if (send_start(st) != 0) {
        say(st, "cannot start the command: %s", strerror(errno));
        return give_back(st, CLI_EXIT_DB);
    }
    if (st->share && share_start(st) != 0) {
        /* The command starts, and is stopped at once. */
        say(st, "cannot start the renewer thread: %s", strerror(errno));
        lose(st, "it cannot be renewed");
    }
    /* The first answer: the command runs, or could not be executed. */
    while ((rc = (int)read(st->sts, &m, sizeof m)) < 0 && errno == EINTR)
        ;
    if (rc != (int)sizeof m
        || (m.op != CLI_GUARD_STARTED && m.op != CLI_GUARD_EXECFAIL)) {
        ws = end_guard(st);
        say(st, "the guard process ended before the command started (%s)",
            how_ended(how, sizeof how, ws));
        return give_back(st, CLI_EXIT_DB);
    }
    if (m.op == CLI_GUARD_EXECFAIL) {
        end_guard(st);
        say(st, "cannot execute '%s': %s", st->cmd0, strerror(m.arg));
        return give_back(st, m.arg == ENOENT || m.arg == ENOTDIR
                                 ? CLI_EXIT_NOTFOUND : CLI_EXIT_NOEXEC);
    }
    st->cmd = (pid_t)m.arg;
    event(st, "started the command '%s' (pid %ld)", st->cmd0,
          (long)st->cmd);
    fcntl(st->ctl, F_SETFL, O_NONBLOCK);
    fcntl(st->sts, F_SETFL, O_NONBLOCK);
    if (supervise(st) != 0) {
        end_guard(st);
        return CLI_EXIT_DB;
    }
    if (!st->guard_done) {
        ws = end_guard(st);
        kill_orphans();
        say(st, "the guard process ended unexpectedly (it %s); the command "
            "was killed with it", how_ended(how, sizeof how, ws));
        return CLI_EXIT_DB;
    }
    end_guard(st);
    return st->ended ? child_exit_code(st->wstatus) : CLI_EXIT_DB;
}

/* What the busy message says of the holder (find_holder()). */
typedef struct run_holder {
    const char *name;
    char holder[SQLLOCK_HOLDER_MAX + 1];
    int64_t token;
    int64_t remaining_ms;
} run_holder;

/* The sqllock_list() callback: copies the row of the lock, then stops.
 * The holder text is shown as it is only when it is valid UTF-8 without
 * control characters (what sqllock writes); otherwise every byte that
 * is not printable ASCII shows as '?', so that a row written by someone
 * else cannot move the terminal's cursor. */
static int find_holder(void *ctx, const sqllock_lease_info *info)
{
    run_holder *h = ctx;
    const char *s = info->holder != NULL ? info->holder : "";
    size_t i, len = strlen(s);
    int ok;

    if (strcmp(info->name, h->name) != 0)
        return 0;
    if (len > SQLLOCK_HOLDER_MAX)
        len = SQLLOCK_HOLDER_MAX;
    ok = cli_text_ok(s, len);
    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];

        h->holder[i] = ok || (c >= 0x20 && c < 0x7F) ? (char)c : '?';
    }
    h->holder[len] = '\0';
    h->token = info->token;
    h->remaining_ms = info->remaining_ms;
    return 1;
}

/* Waits until `end_us` for --hold-at-least. Returns 1 then, or 0 early
 * when INT, TERM or HUP comes: the lease is then left to expire. */
static int hold_wait(run_state *st, int64_t end_us)
{
    for (;;) {
        unsigned char buf[64];
        struct timespec ts;
        fd_set rd;
        int64_t left = end_us - cli_guard_now_us();
        ssize_t n, i;

        if (left <= 0)
            return 1;
        if (left > RUN_MAX_NAP_MS * 1000)
            left = RUN_MAX_NAP_MS * 1000;
        ts.tv_sec = (time_t)(left / 1000000);
        ts.tv_nsec = (long)(left % 1000000) * 1000;
        FD_ZERO(&rd);
        FD_SET(st->wake[0], &rd);
        if (pselect(st->wake[0] + 1, &rd, NULL, NULL, &ts, &st->waitmask) < 0
            && errno != EINTR)
            return 1;
        while ((n = read(st->wake[0], buf, sizeof buf)) > 0
               || (n < 0 && errno == EINTR))
            for (i = 0; i < n; i++)
                if (buf[i] != RUN_WAKE_WATCH
                    && (buf[i] & ~RUN_FROM_TTY) != SIGCHLD)
                    return 0;
    }
}

/*
 * --hold-at-least: the command has ended before `end_us`, and the lease
 * was held all along. Sets the lease to expire at `end_us` and leaves it,
 * so that the name stays held until then whatever becomes of this
 * process. Returns `code`, or CLI_EXIT_LOST when the lease turns out to
 * be lost.
 */
static int hold_until(run_state *st, int code, int64_t end_us)
{
    char owner[SQLLOCK_OWNER_LEN + 1], when[64], dur[32];
    sqllock_lease_options lo = SQLLOCK_LEASE_OPTIONS_INIT;
    int64_t token = sqllock_lease_token(st->lease), left_ms;
    sqllock_lease *held = NULL;
    sqllock_db *db = NULL;
    const char *what = "keeping";
    int64_t until, pause = 100;
    run_holder h;
    int rc, said = 0;

    snprintf(owner, sizeof owner, "%s", sqllock_lease_owner(st->lease));
    /* The renewer must have stopped, not only have been told to stop: a
     * renewal already sent (unwatch does not wait for it) would set the
     * expiry back to now + ttl after the one below. Closing the handle
     * joins the renewer's thread. Neither call releases the lease. */
    sqllock_lease_free(st->lease);
    st->lease = NULL;
    sqllock_close(st->db);
    st->db = NULL;
    /* One renewal with the time left as its ttl: the row expires then,
     * by the server's clock. While the database cannot be reached it is
     * tried again (DESIGN C3), until the window's end (the lease's own
     * ttl then keeps the name a while longer, as it would) or
     * --release-timeout. */
    until = cli_guard_now_us() + st->release_timeout_ms * 1000;
    if (until > end_us)
        until = end_us;
    for (;;) {
        rc = sqllock_open(st->where->url, st->dbo, &db);
        left_ms = (end_us - cli_guard_now_us() + 999) / 1000;
        lo.ttl_ms = left_ms > 0 ? left_ms : 1;
        lo.release_timeout_ms = 1;
        if (rc == SQLLOCK_OK)
            rc = sqllock_lease_attach(db, st->name, owner, token, &lo,
                                      &held);
        if (rc == SQLLOCK_OK)
            rc = sqllock_lease_renew(held);
        if (rc != SQLLOCK_ECONNECT)
            break;
        if (!said && !st->quiet)
            cli_db_error(db, rc, "run: cannot set %s to expire at the end "
                         "of --hold-at-least now; trying again", st->what);
        said = 1;
        if (!retry_pause(until, &pause))
            break;
        sqllock_lease_free(held);
        held = NULL;
        sqllock_close(db);
        db = NULL;
    }
    wall_time(when, sizeof when, end_us);
    memset(&h, 0, sizeof h);
    h.name = st->name;
    if (rc == SQLLOCK_OK && sqllock_list(db, find_holder, &h) == 1
        && h.remaining_ms > (end_us - cli_guard_now_us()) / 1000 + 250) {
        /* MySQL's renewal never moves an expiry back, and the lease's
         * own ttl reached past the window: wait for its end here, and
         * release then. Should this process die meanwhile, the lease
         * expires at its ttl, which is later. */
        event(st, "holding %s until %s (%s after the grant, "
              "--hold-at-least), then releasing it", st->what, when,
              span(dur, sizeof dur, st->hold_ms));
        what = "releasing";
        if (hold_wait(st, end_us))
            rc = sqllock_lease_release(held);
        else
            event(st, "interrupted: %s is left to expire", st->what);
    } else if (rc == SQLLOCK_OK) {
        event(st, "%s stays held until %s (%s after the grant, "
              "--hold-at-least), then expires", st->what, when,
              span(dur, sizeof dur, st->hold_ms));
    }
    if (rc == SQLLOCK_LOST) {
        cli_db_error(db, rc, "run: %s %s found it lost", what,
                     st->what);
        say(st, "exit 76, not the command's %d: %s was not held for "
            "all of the command's run", code, st->what);
        code = CLI_EXIT_LOST;
    } else if (rc != SQLLOCK_OK) {
        cli_db_error(db, rc, "run: warning: cannot keep %s until %s "
                     "(--hold-at-least); it expires at its ttl instead",
                     st->what, when);
    }
    sqllock_lease_free(held);
    sqllock_close(db);
    return code;
}

/* After the job: gives the lease up, or keeps it (--hold-at-least), and
 * returns the tool's exit code: `code`, the command's, unless the lease
 * was lost (DESIGN X2). */
static int give_up(run_state *st, int code)
{
    char when[64], held[32];
    int rc;

    if (st->lost) {
        /* After a deadline that passed (not a LOST answer) the row may
         * still be ours: give it back. Release says LOST otherwise. The
         * run has failed either way. */
        rc = release_persisting(st);
        if (rc != SQLLOCK_OK && rc != SQLLOCK_LOST)
            cli_db_error(st->db, rc, "run: releasing %s", st->what);
        if (st->ended && WIFEXITED(st->wstatus) && !st->leftover)
            say(st, "exit 76, not the command's %d: %s was not "
                "held for all of the command's run", code, st->what);
        else
            say(st, "the command was stopped because %s was lost",
                st->what);
        return CLI_EXIT_LOST;
    }
    if (st->hold_ms > 0 && st->cmd > 0) {
        int64_t end = st->granted_us + st->hold_ms * 1000;

        if (end > cli_guard_now_us())
            return hold_until(st, code, end);
    }
    rc = release_persisting(st);
    wall_time(when, sizeof when, cli_guard_now_us());
    if (rc == SQLLOCK_OK) {
        event(st, "released %s (held %s)", st->what,
              span(held, sizeof held,
                   (cli_guard_now_us() - st->granted_us) / 1000));
    } else if (rc == SQLLOCK_LOST) {
        /* When it was lost is unknown: perhaps while the command ran. */
        cli_db_error(st->db, rc, "run: releasing %s at %s found it "
                     "lost", st->what, when);
        say(st, "exit 76, not the command's %d: %s was not held for "
            "all of the command's run", code, st->what);
        code = CLI_EXIT_LOST;
    } else {
        cli_db_error(st->db, rc, "run: warning: cannot release %s "
                     "(it stays held until it expires)", st->what);
    }
    return code;
}

/* Runs the command while the lease is held, and gives the lease up
 * after it. Returns the tool's exit code. */
/* The wall clock, ms since the epoch, for the history. */
static int64_t history_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Notes the run in the name's history (ops.c): "running" at the start,
 * the outcome and the exit code at the end. On the run's own handle, or,
 * once --hold-at-least has closed that, on one opened for it. A history
 * that cannot be written is a warning, never the job's outcome. */
static void note_history(run_state *st, int64_t end_ms, int code,
                         const char *status)
{
    sqllock_db *db = st->db, *own = NULL;
    int64_t until = cli_guard_now_us() + st->release_timeout_ms * 1000;
    int64_t pause = 100;
    int rc, said = 0;

    if (!st->history)
        return;
    /* The outcome is tried again, as the release is (DESIGN C3), while
     * the database cannot be reached: a restart must not lose the run's
     * record. A record update reads, changes and compares: sending it
     * again after a lost answer writes the same entry. */
    for (;;) {
        if (db == NULL) {
            /* The handle of a failed open keeps its message. */
            sqllock_close(own);
            own = NULL;
            rc = sqllock_open(st->where->url, st->dbo, &own);
            if (rc == SQLLOCK_OK)
                db = own;
        }
        if (db != NULL)
            rc = cli_history_note(db, st->name, st->history_token,
                                  st->history_who, st->history_start_ms,
                                  end_ms, code, status);
        if (rc != SQLLOCK_ECONNECT || end_ms == 0)
            break;
        if (!said && !st->quiet)
            say(st, "cannot note the run of %s in its history now; "
                "trying again for up to %s (--release-timeout)", st->what,
                span((char[32]){ 0 }, 32, st->release_timeout_ms));
        said = 1;
        if (!retry_pause(until, &pause))
            break;
    }
    if (rc != SQLLOCK_OK && !st->quiet) {
        cli_db_error(db != NULL ? db : own, rc, "run: warning: the run of "
                     "%s is not in its history", st->what);
    } else if (said && !st->quiet) {
        say(st, "the run of %s is in its history", st->what);
    }
    sqllock_close(own);
}

static int run_held(run_state *st)
{
    char ttl[32], every[32];
    int code, i;

    if (st->leader)
        event(st, "elected leader of '%s' (the token below is the term)",
              st->name);
    if (st->sem != NULL)
        event(st, "acquired permit %d of %d of semaphore '%s'",
              sqllock_sem_permit(st->sem), st->permits, st->name);
    event(st, "acquired %s: token %" PRId64 ", ttl %s, renewed "
          "every %s", st->what, sqllock_lease_token(st->lease),
          span(ttl, sizeof ttl, st->ttl_ms),
          span(every, sizeof every, st->every_ms));
    if (pthread_mutex_init(&st->mu, NULL) != 0) {
        say(st, "cannot make a mutex");
        return give_back(st, CLI_EXIT_DB);
    }
    st->history_token = sqllock_lease_token(st->lease);
    st->history_start_ms = history_now_ms();
    note_history(st, 0, 0, "running");
    code = start_and_supervise(st);
    /* The handle is the main thread's again, and what its renewer said
     * last, should it have said it after the supervisor's last look, is
     * taken. */
    if (st->share) {
        share_stop(st);
        take_note(st);
    }
    if (st->cmd > 0 && (sqllock_lease_count(st->lease) > 0 || st->lost))
        code = give_up(st, code);
    note_history(st, history_now_ms(), code,
                 code == CLI_EXIT_OK ? "ok"
                 : code == CLI_EXIT_LOST ? "lost" : "failed");
    /* The renewer is stopped by now (release and free unwatch, and
     * hold_until() closes the handle), so the callback can no longer
     * write to the pipe. */
    if (st->lease != NULL)
        sqllock_lease_unwatch(st->lease);
    for (i = 0; i < st->nalso; i++)
        sqllock_lease_unwatch(st->also[i]);
    if (st->wake[0] >= 0) {
        close(st->wake[0]);
        close(st->wake[1]);
    }
    pthread_mutex_destroy(&st->mu);
    return code;
}

/* The message for a busy lock (unless --quiet): the library's, with the
 * holder and the time it has left, read the way `list` reads them. */
static void busy_message(run_state *st)
{
    char msg[RUN_MSG_MAX], left[32];
    run_holder h;

    snprintf(msg, sizeof msg, "%s", sqllock_errmsg(st->db));
    memset(&h, 0, sizeof h);
    h.name = sqllock_lease_name(st->lease);   /* --leader: its row */
    if (st->rw != NULL || sqllock_list(st->db, find_holder, &h) != 1) {
        say(st, "not running '%s': %s", st->cmd0, msg);
        return;
    }
    if (h.remaining_ms >= 0)
        say(st, "not running '%s': %s: holder '%s', token %" PRId64 ", %s "
            "left", st->cmd0, msg, h.holder, h.token,
            span(left, sizeof left, h.remaining_ms));
    else
        say(st, "not running '%s': %s: holder '%s', token %" PRId64 ", "
            "expired %s ago", st->cmd0, msg, h.holder, h.token,
            span(left, sizeof left, -h.remaining_ms));
}

int cli_cmd_run(const cli_ctx *ctx, int argc, char **argv)
{
    cli_ctx c = *ctx;
    cli_lease_args la = { NULL, NULL, NULL, 0, 0 };
    cli_list also = { NULL, 0, 0 };
    cli_run_args ra;
    cli_guard_cfg gcfg;
    const char *name = NULL, *permits = NULL, *release_timeout = NULL;
    int help = 0, export_db = 0, shared = 0, exclusive = 0, leader = 0;
    int fair = 0, npos, rest, rc, i;
    int64_t npermits = 0, release_timeout_ms = RUN_RELEASE_TIMEOUT_MS;
    sqllock_options dbo = SQLLOCK_OPTIONS_INIT;
    sqllock_lease_options lo = SQLLOCK_LEASE_OPTIONS_INIT;
    run_state st;
    cli_db where;
    char wait[32];
    int64_t open_start, open_ms;

    memset(&ra, 0, sizeof ra);
    memset(&where, 0, sizeof where);
    memset(&st, 0, sizeof st);
    also.v = st.also_names;
    also.max = SQLLOCK_LEASE_MANY_MAX - 1;
    {
        const cli_opt opts[] = {
            CLI_OPTS_DB(c), { "ttl", &la.ttl, NULL, 0 },
            { "wait", &la.wait, NULL, 0 }, { "skip", NULL, &ra.skip, 0 },
            { "holder", &la.holder, NULL, 0 },
            { "busy-exit", &ra.busy_exit, NULL, 0 },
            { "signal", &ra.signal, NULL, 0 },
            { "kill-after", &ra.kill_after, NULL, 0 },
            { "renew-every", &ra.renew_every, NULL, 0 },
            { "hold-at-least", &ra.hold_at_least, NULL, 0 },
            { "release-timeout", &release_timeout, NULL, 0 },
            { "quiet", NULL, &ra.quiet, 0 },
            { "verbose", NULL, &ra.verbose, 0 },
            { "no-history", NULL, &ra.no_history, 0 },
            { "export-db", NULL, &export_db, 0 },
            { "leader", NULL, &leader, 0 },
            { "fair", NULL, &fair, 0 },
            { "also", (const char **)(void *)&also, NULL, CLI_OPT_LIST },
            { "shared", NULL, &shared, 0 },
            { "exclusive", NULL, &exclusive, 0 },
            { "permits", &permits, NULL, 0 },
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
    if (rc == CLI_EXIT_OK)
        rc = cli_parse_duration("run", "release-timeout", release_timeout,
                                &release_timeout_ms);
    if (rc == CLI_EXIT_OK && release_timeout_ms <= 0) {
        cli_error("run: --release-timeout must be longer than 0");
        rc = cli_usage();
    }
    st.nalso = also.n;
    if (rc == CLI_EXIT_OK && st.nalso > 0 && ra.hold_ms > 0) {
        cli_error("run: --hold-at-least cannot be used with --also");
        rc = cli_usage();
    }
    if (rc == CLI_EXIT_OK && shared && exclusive) {
        cli_error("run: --shared and --exclusive exclude each other");
        rc = cli_usage();
    }
    if (rc == CLI_EXIT_OK && (shared || exclusive) &&
        (st.nalso > 0 || ra.hold_ms > 0)) {
        cli_error("run: --%s cannot be used with --also or --hold-at-least",
                  shared ? "shared" : "exclusive");
        rc = cli_usage();
    }
    if (rc == CLI_EXIT_OK && leader && (shared || exclusive)) {
        cli_error("run: --leader cannot be used with --shared or "
                  "--exclusive");
        rc = cli_usage();
    }
    if (rc == CLI_EXIT_OK && leader && (st.nalso > 0 || ra.hold_ms > 0)) {
        cli_error("run: --leader cannot be used with --also or "
                  "--hold-at-least");
        rc = cli_usage();
    }
    if (rc == CLI_EXIT_OK && fair && (shared || exclusive || leader)) {
        cli_error("run: --fair cannot be used with --%s",
                  shared ? "shared" : exclusive ? "exclusive" : "leader");
        rc = cli_usage();
    }
    /* Fair waiting (DESIGN M3) is for one name. */
    if (rc == CLI_EXIT_OK && st.nalso > 0 && fair) {
        cli_error("run: --fair cannot be used with --also");
        rc = cli_usage();
    }
    if (rc == CLI_EXIT_OK && permits != NULL &&
        (shared || exclusive || leader || fair)) {
        cli_error("run: --permits cannot be used with --%s",
                  shared ? "shared" : exclusive ? "exclusive"
                  : leader ? "leader" : "fair");
        rc = cli_usage();
    }
    if (rc == CLI_EXIT_OK && permits != NULL) {
        /* --permits N: a permit of semaphore NAME (DESIGN M1). */
        rc = cli_parse_int("run", "permits", permits, 1,
                           SQLLOCK_SEM_PERMITS_MAX, &npermits);
        if (rc == CLI_EXIT_OK && (st.nalso > 0 || ra.hold_ms > 0)) {
            cli_error("run: --permits cannot be used with %s",
                      st.nalso > 0 ? "--also" : "--hold-at-least");
            rc = cli_usage();
        }
    }
    if (rc != CLI_EXIT_OK)
        return rc;
    /* A candidate waits for the leadership until it gets it. */
    if (leader && la.wait == NULL && !ra.skip)
        la.wait_ms = SQLLOCK_WAIT_FOREVER;

    st.name = name;
    st.leader = leader;
    snprintf(st.what, sizeof st.what,
             leader ? "the leadership of '%s'"
             : npermits > 0 ? "a permit of semaphore '%s'"
             : shared ? "shared lock '%s'"
             : exclusive ? "exclusive lock '%s'" : "lock '%s'", name);
    st.permits = (int)npermits;
    st.cmd0 = argv[rest];
    st.where = &where;
    st.dbo = &dbo;
    st.export_db = export_db;
    st.lost_signal = ra.lost_signal;
    st.ttl_ms = la.ttl_ms;
    st.interval_ms = ra.renew_every_ms;
    st.every_ms = ra.renew_every_ms ? ra.renew_every_ms : la.ttl_ms / 3;
    st.hold_ms = ra.hold_ms;
    st.release_timeout_ms = release_timeout_ms;
    st.verbose = ra.verbose;
    st.quiet = ra.quiet;
    /* NAME's history is of its exclusive runs (and plain ones) only:
     * many shared runs hold at once, and an election is not a lock. */
    st.history = !ra.no_history && !shared && !leader;
    if (la.holder != NULL) {
        snprintf(st.history_who, sizeof st.history_who, "%s", la.holder);
    } else {
        char host[256];

        if (gethostname(host, sizeof host) != 0)
            snprintf(host, sizeof host, "?");
        host[sizeof host - 1] = '\0';
        snprintf(st.history_who, sizeof st.history_who, "%s:%ld", host,
                 (long)getpid());
    }
    st.wake[0] = st.wake[1] = -1;
    st.ctl = st.sts = -1;
    tzset();
    /* The guard first: before the database is opened and before any
     * thread starts (guard.c). */
    gcfg.cmd = argv + rest;
    gcfg.lost_signal = ra.lost_signal;
    gcfg.kill_after_ms = ra.kill_after_ms;
    st.guard = cli_guard_start(&gcfg, &st.ctl, &st.sts);
    if (st.guard < 0) {
        cli_error("run: cannot start the guard process: %s",
                  strerror(errno));
        return CLI_EXIT_DB;
    }
#ifdef __linux__
    /* Should the guard die, what the command started comes here. */
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
#endif
    /* A guard that is gone must not kill this process through a write
     * to its pipe. The command gets back the disposition sqllock started
     * with (the guard was forked before this). */
    signal(SIGPIPE, SIG_IGN);
    /* A renewal must not sit in the database's busy wait for longer than
     * a renewal interval, or the lease could run out meanwhile. The
     * renewer's connection takes this from the handle. */
    dbo.busy_timeout_ms = st.every_ms < 5000
                              ? (st.every_ms > 0 ? st.every_ms : 1) : 5000;
    /* Behind a session pooler the run holds one server connection, not
     * two (share_renew()), and one it cannot get yet it waits for as it
     * waits for the lock (--wait). */
    rc = cli_db_url(&c, &where);
    if (rc != CLI_EXIT_OK) {
        end_guard(&st);
        close(st.sts);
        cli_db_free(&where);
        return rc;
    }
    st.share = cli_db_session_pooler(where.url);
    cli_db_free(&where);
    open_start = cli_guard_now_us();
    rc = cli_open_db_within(&c, &dbo, 1, st.share && !ra.skip ? la.wait_ms
                                                              : 0,
                            &st.db, &where);
    if (rc != CLI_EXIT_OK) {
        end_guard(&st);
        close(st.sts);
        cli_db_free(&where);
        return rc;
    }
    lo.ttl_ms = la.ttl_ms;
    lo.holder = la.holder;
    lo.flags = fair ? SQLLOCK_LEASE_FAIR : 0;
    /* One retry at once in the library; release_persisting() does the
     * rest, with the run's messages. */
    lo.release_timeout_ms = 1;
    if (shared || exclusive) {
        rc = sqllock_rw_new(st.db, name, shared, &lo, &st.rw);
        st.lease = sqllock_rw_lease(st.rw);
    } else if (leader) {
        rc = sqllock_leader_lease_new(st.db, name, &lo, &st.lease);
    } else if (st.permits > 0) {
        rc = sqllock_sem_new(st.db, name, st.permits, &lo, &st.sem);
    } else {
        rc = sqllock_lease_new(st.db, name, &lo, &st.lease);
    }
    for (i = 0; rc == SQLLOCK_OK && i < st.nalso; i++)
        rc = sqllock_lease_new(st.db, st.also_names[i], &lo, &st.also[i]);
    if (rc == SQLLOCK_OK && !st.share)
        rc = prepare_renewer(st.db);
    /* The wait for a pool's slot came out of --wait. */
    open_ms = (cli_guard_now_us() - open_start) / 1000;
    if (st.share && open_ms >= 1000)
        event(&st, "connected after %s (waiting for the pooler's server "
              "connection, or for the server)",
              span(wait, sizeof wait, open_ms));
    if (st.share && la.wait_ms > 0 && la.wait_ms != SQLLOCK_WAIT_FOREVER) {
        la.wait_ms -= open_ms;
        if (la.wait_ms < 0)
            la.wait_ms = 0;
    }
    if (rc == SQLLOCK_OK && leader && !ra.skip &&
        la.wait_ms == SQLLOCK_WAIT_FOREVER)
        event(&st, "campaigning for the leadership of '%s'", name);
    else if (rc == SQLLOCK_OK && !ra.skip && la.wait_ms > 0)
        event(&st, "acquiring %s, waiting up to %s while it is busy",
              st.what, span(wait, sizeof wait, la.wait_ms));
    if (rc == SQLLOCK_OK && st.nalso > 0) {
        sqllock_lease *all[SQLLOCK_LEASE_MANY_MAX];

        all[0] = st.lease;
        for (i = 0; i < st.nalso; i++)
            all[i + 1] = st.also[i];
        rc = sqllock_lease_acquire_many(st.db, all, st.nalso + 1,
                                        ra.skip ? 0 : la.wait_ms);
    } else if (rc == SQLLOCK_OK && st.rw != NULL) {
        rc = sqllock_rw_acquire(st.rw, ra.skip ? 0 : la.wait_ms);
    } else if (rc == SQLLOCK_OK && st.sem != NULL) {
        rc = sqllock_sem_acquire(st.sem, ra.skip ? 0 : la.wait_ms);
        st.lease = sqllock_sem_lease(st.sem);
    } else if (rc == SQLLOCK_OK) {
        rc = sqllock_lease_acquire(st.lease, ra.skip ? 0 : la.wait_ms);
    }
    st.granted_us = cli_guard_now_us();
    if ((rc == SQLLOCK_BUSY || rc == SQLLOCK_TIMEOUT) && st.nalso > 0) {
        /* The library's message names the lock found held. */
        if (!ra.quiet)
            cli_error("run: %s", sqllock_errmsg(st.db));
        rc = (int)ra.busy_exit_code;
    } else if ((rc == SQLLOCK_BUSY || rc == SQLLOCK_TIMEOUT) &&
               st.sem != NULL) {
        if (!ra.quiet)
            say(&st, "not running '%s': %s", st.cmd0, sqllock_errmsg(st.db));
        rc = (int)ra.busy_exit_code;
    } else if (rc == SQLLOCK_BUSY || rc == SQLLOCK_TIMEOUT) {
        if (!ra.quiet)
            busy_message(&st);
        rc = (int)ra.busy_exit_code;
    } else if (rc != SQLLOCK_OK) {
        rc = cli_db_error(st.db, rc, "run");
    } else {
        rc = run_held(&st);
    }
    /* The guard has exited after the job, or exits now: it never got
     * CLI_GUARD_START. */
    end_guard(&st);
    if (st.sts >= 0)
        close(st.sts);
    if (st.rw != NULL)
        sqllock_rw_free(st.rw);
    else if (st.sem != NULL)
        sqllock_sem_free(st.sem);   /* and its permit's lease, its own */
    else
        sqllock_lease_free(st.lease);
    for (i = 0; i < st.nalso; i++)
        sqllock_lease_free(st.also[i]);
    sqllock_close(st.db);
    cli_db_free(&where);
    return rc;
}
