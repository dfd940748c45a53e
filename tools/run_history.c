/*
 * run_history.c -- `sqllock run`: the run in its name's history (ops.c
 * keeps it): "running" at the start, the outcome at the end, tried again
 * through an outage as the release is (DESIGN C3). run.c says how the
 * parts fit.
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

#include "run_history.h"

/* The wall clock, ms since the epoch, for the history. */
int64_t run_history_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Notes the run in the name's history (ops.c): "running" at the start,
 * the outcome and the exit code at the end. On the run's own handle, or,
 * once --hold-at-least has closed that, on one opened for it. A history
 * that cannot be written is a warning, never the job's outcome. */
void run_note_history(run_state *st, int64_t end_ms, int code,
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
            rc = sqllock_history_note(db, st->name, st->history_token,
                                  st->history_who, st->history_start_ms,
                                  end_ms, code, status);
        if (rc != SQLLOCK_ECONNECT || end_ms == 0)
            break;
        if (!said && !st->quiet)
            run_say(st, "cannot note the run of %s in its history now; "
                    "trying again for up to %s (--release-timeout)", st->what,
                    run_span((char[32]){ 0 }, 32, st->release_timeout_ms));
        said = 1;
        if (!run_retry_pause(until, &pause))
            break;
    }
    if (rc != SQLLOCK_OK && !st->quiet) {
        cli_db_error(db != NULL ? db : own, rc, "run: warning: the run of "
                     "%s is not in its history", st->what);
    } else if (said && !st->quiet) {
        run_say(st, "the run of %s is in its history", st->what);
    }
    sqllock_close(own);
}
