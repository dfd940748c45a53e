/*
 * guard.h -- the guard process of `sqllock run` (guard.c): the small,
 * single-threaded process that starts the command and makes sure that
 * nothing of it runs on once the runner is gone (DESIGN X1). Not
 * installed; nothing here is part of the library's API.
 *
 * The runner and its guard talk through two pipes in fixed-size
 * messages (cli_guard_msg): one runner -> guard (whose end of file means
 * that the runner is gone), one guard -> runner.
 */
#ifndef SQLLOCK_GUARD_H
#define SQLLOCK_GUARD_H

#include <stdint.h>
#include <sys/types.h>

/* One message. 16 bytes, written with one write(): a pipe write of at
 * most PIPE_BUF bytes is never split or interleaved. */
typedef struct cli_guard_msg {
    int32_t op;
    int32_t arg;
    int64_t value;
} cli_guard_msg;

/* Runner -> guard. */
/* Start the command. arg: the process group the command joins (0: one
 * of its own); value: the bytes that follow the message, the variables
 * to set in the command's environment as "NAME=VALUE\0" strings. */
#define CLI_GUARD_START 1
/* value: the lease's local deadline (DESIGN L6), in microseconds of
 * CLOCK_MONOTONIC. When it passes before a later one arrives, the guard
 * stops the command as CLI_GUARD_LOST does. The first one comes before
 * CLI_GUARD_START. */
#define CLI_GUARD_DEADLINE 2
/* arg: a signal to pass on to the command. */
#define CLI_GUARD_SIGNAL 3
/* The lease is lost: stop the command (--signal, SIGKILL after
 * --kill-after) and, once it is gone, kill what it left running. */
#define CLI_GUARD_LOST 4

/* Guard -> runner. */
#define CLI_GUARD_STARTED 11   /* arg: the command's pid */
#define CLI_GUARD_EXECFAIL 12  /* arg: the errno of the failed exec */
#define CLI_GUARD_EXITED 13    /* arg: the command's wait status; value:
                                  when it was reaped (CLOCK_MONOTONIC us) */
#define CLI_GUARD_LEFTOVER 14  /* arg: how many processes the command left
                                  running; they get --signal now */
#define CLI_GUARD_EXPIRED 15   /* value: when the guard found the deadline
                                  passed and began to stop the command */
#define CLI_GUARD_KILLED 16    /* what still ran after --kill-after got
                                  SIGKILL */
#define CLI_GUARD_DONE 17      /* nothing of the job runs any more; the
                                  guard exits */

/* What the guard needs to know from the start: it is forked before the
 * lock is taken, so these come from the parsed arguments. */
typedef struct cli_guard_cfg {
    char **cmd;                /* the command and its arguments */
    int lost_signal;           /* --signal */
    int64_t kill_after_ms;     /* --kill-after */
} cli_guard_cfg;

/*
 * Forks the guard. Call it while the process has no other thread and no
 * database connection: the guard is a copy of this process that never
 * executes another program, and holds only what the caller inherited
 * (which the command must inherit too) and its two pipes. In the
 * caller, returns the guard's pid, with *ctl the write end of the pipe
 * to the guard and *sts the read end of the one from it (both close on
 * exec); -1 with errno set when the pipes or the fork fail. The guard
 * itself never returns from this call.
 */
pid_t cli_guard_start(const cli_guard_cfg *cfg, int *ctl, int *sts);

/* Sends `sig` to every descendant of the process `root` (not to root
 * itself), as /proc shows them now; returns how many it found. */
int cli_guard_signal_tree(pid_t root, int sig);

/* The current time of CLOCK_MONOTONIC in microseconds, the clock of the
 * library's local deadlines. */
int64_t cli_guard_now_us(void);
/* Writes one message to the pipe `fd` (nothing when fd < 0), again after
 * EINTR; a whole message is one write, never split. A pipe whose reader
 * is gone or stopped costs the message, never the writer. */
void cli_guard_send(int fd, int op, int arg, int64_t value);

#endif /* SQLLOCK_GUARD_H */
