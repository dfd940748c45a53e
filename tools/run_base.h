/*
 * run_base.h -- the ground floor of `sqllock run` (tools/run*.c): the
 * runner's state, which every part reads and writes, and what every
 * part uses (run_base.c): its messages, its writes to the wake-up pipe
 * and to the guard, the pause between tries through an outage. The
 * parts, from the top: run.c (options, the order of a run),
 * run_metrics.c (--metrics-file), run_super.c (the command's
 * supervision), run_hold.c (giving the lease up), run_watch.c (the lease
 * while the command runs), run_slot.c (--once-per's schedule slot),
 * run_history.c (the run in its name's history); each calls only those
 * below it.
 */
#ifndef SQLLOCK_RUN_BASE_H
#define SQLLOCK_RUN_BASE_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

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

/* The supervisor's state. */
typedef struct run_state {
    sqllock_db *db;
    sqllock_db *own_db;        /* opened for the writes after the job once
                                  --hold-at-least closed db (run_persist()) */
    int own_ok;                /* and its open succeeded */
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
    /* --max-runtime: the command is stopped when it has run this long
     * (as after a loss: --signal, SIGKILL after --kill-after). */
    int64_t runtime_ms;        /* 0 for none */
    const char *runtime_text;  /* as given */
    int64_t runtime_end_us;    /* when it runs out, once the command is
                                  started (cli_guard_now_us()) */
    int timed_out;             /* it ran out before the command ended */
    int broken;                /* DESIGN X2: the lease was not held from
                                  the grant until the command ended (the
                                  exit code is 76) */
    /* --once-per, --once-per-cron (run_slot.c): the schedule slot this
     * run claimed in NAME's slot record. */
    const char *schedule;      /* NULL for none */
    int retry_failed;          /* --retry-failed */
    int64_t slot_ms;           /* the slot of the run's start */
    int64_t slot_end_ms;       /* and the next slot's start */
    int slot_claimed;          /* the record says "running" for it */
    int64_t slot_token;        /* under this token */
    int slot_done_exit;        /* --slot-done-exit: the exit code when
                                  the slot had its run (default 0) */
    char slot_who[300];        /* who runs it, in the record */
    /* For --metrics-file (run_metrics.c). */
    int64_t start_wall_ms;     /* when sqllock run started (wall clock) */
    int64_t start_us;          /* and by cli_guard_now_us() */
    int64_t cmd_start_us;      /* when the command started, 0 if never */
    int64_t cmd_end_us;        /* when it ended */
    int outcome;               /* RUN_OUTCOME_* */
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
    /* One connection (run_share_renew()): the run renews on its own
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

/* How a run ended, for --metrics-file (the label outcome=...). */
enum {
    RUN_OUTCOME_ERROR,         /* it failed before, or instead of, the
                                  command (usage, database, exec) */
    RUN_OUTCOME_RAN,           /* the command ran, and the lease held */
    RUN_OUTCOME_BUSY,          /* the lock was held elsewhere */
    RUN_OUTCOME_SKIPPED_SLOT,  /* --once-per: the slot had its run */
    RUN_OUTCOME_LOST,          /* the lease was lost (exit 76) */
    RUN_OUTCOME_TIMEOUT,       /* --max-runtime ran out */
    RUN_OUTCOME_N
};

/* --release-timeout's default: how long a release that cannot reach the
 * database is tried again (run_release_persisting()). */
#define RUN_RELEASE_TIMEOUT_MS 60000

void run_wall_time(char *buf, size_t size, int64_t mono_us);
const char *run_span(char *buf, size_t size, int64_t ms);
void run_say(const run_state *st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void run_log_event(void *ctx, const sqllock_event *ev);
void run_event(const run_state *st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void run_wake_write(int fd, unsigned char b);
void run_to_guard(run_state *st, int op, int arg, int64_t value);
int run_retry_pause(int64_t end_us, int64_t *pause_ms);

#endif
