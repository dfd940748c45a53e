/*
 * run_history.c -- `sqllock run`: the run in its name's history (ops.c
 * keeps it): "running" at the start, the outcome at the end, tried again
 * through an outage as the release is (DESIGN C3), as every write after
 * the job is (run_persist(): the slot record's too, run_slot.c). run.c
 * says how the parts fit.
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

/*
 * Runs `write` on the run's own handle, or, once --hold-at-least has
 * closed that, on one opened for it; with `persist`, tried again (DESIGN
 * C3), as the release is, while the database cannot be reached, for up
 * to --release-timeout: a restart must not lose what the job's end has
 * to note. The writes so tried read, change and compare, so sending one
 * again after a lost answer writes the same thing. Says once (unless
 * --quiet) that it is trying again to `what` ("note the run of lock 'x'
 * in its history"), and that it did; a failure is the caller's to tell.
 * Returns write's last status; the handle it ran on keeps the message
 * until the next write (a failed open's, when none could be opened).
 */
int run_persist(run_state *st, int persist, const char *what,
                int (*write)(sqllock_db *db, void *ctx), void *ctx)
{
    int64_t until = cli_guard_now_us() + st->release_timeout_ms * 1000;
    int64_t pause = 100;
    sqllock_db *db = st->db != NULL ? st->db
                     : st->own_ok ? st->own_db : NULL;
    int rc = SQLLOCK_ECONNECT, said = 0;

    for (;;) {
        if (db == NULL) {
            /* The handle of a failed open keeps its message. */
            sqllock_close(st->own_db);
            st->own_db = NULL;
            rc = sqllock_open(st->where->url, st->dbo, &st->own_db);
            st->own_ok = rc == SQLLOCK_OK;
            if (st->own_ok)
                db = st->own_db;
        }
        if (db != NULL)
            rc = write(db, ctx);
        if (rc != SQLLOCK_ECONNECT || !persist)
            break;
        if (!said && !st->quiet)
            run_say(st, "cannot %s now; trying again for up to %s "
                    "(--release-timeout)", what,
                    run_span((char[32]){ 0 }, 32, st->release_timeout_ms));
        said = 1;
        if (!run_retry_pause(until, &pause))
            break;
    }
    if (rc == SQLLOCK_OK && said && !st->quiet)
        run_say(st, "could %s after all", what);
    return rc;
}

/* The handle run_persist() ran on last, for its message. */
static sqllock_db *persist_db(const run_state *st)
{
    return st->db != NULL ? st->db : st->own_db;
}

typedef struct note_ctx {
    const run_state *st;
    int64_t end_ms;
    int code;
    const char *status;
} note_ctx;

static int note_write(sqllock_db *db, void *ctx)
{
    const note_ctx *n = ctx;

    return sqllock_history_note(db, n->st->name, n->st->history_token,
                                n->st->history_who, n->st->history_start_ms,
                                n->end_ms, n->code, n->status);
}

/* Notes the run in the name's history (ops.c): "running" at the start,
 * the outcome and the exit code at the end, tried again through an
 * outage (run_persist()). A history that cannot be written is a
 * warning, never the job's outcome. */
void run_note_history(run_state *st, int64_t end_ms, int code,
                      const char *status)
{
    note_ctx n = { st, end_ms, code, status };
    char what[400];
    int rc;

    if (!st->history)
        return;
    snprintf(what, sizeof what, "note the run of %s in its history",
             st->what);
    rc = run_persist(st, end_ms != 0, what, note_write, &n);
    if (rc != SQLLOCK_OK && !st->quiet)
        cli_db_error(persist_db(st), rc, "run: warning: the run of %s is "
                     "not in its history", st->what);
}
