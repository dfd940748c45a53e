/*
 * run_hold.c -- `sqllock run`: giving the lease up. The release, tried
 * again through an outage (DESIGN C3, --release-timeout), after a failure
 * before the command ran, and after the job; --hold-at-least's window
 * (DESIGN X4); the busy message that names the holder. run.c says how the
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

#include "run_hold.h"
#include "run_watch.h"

/* Releases NAME's lease and those of --also (all of them, whatever each
 * finds); the status of the first that failed, else SQLLOCK_OK. */
static int release_all(run_state *st)
{
    sqllock_lease *all[SQLLOCK_LEASE_MANY_MAX];
    int i, n;

    /* A renewal on the run's own connection (run_share_renew()) that found
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
static int run_release_persisting(run_state *st)
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
    run_wall_time(until, sizeof until, end);
    if (!st->quiet)
        cli_db_error(st->db, rc, "run: cannot release %s now; trying again "
                     "until %s (%s)", st->what, until,
                     end < start + st->release_timeout_ms * 1000
                     ? "the lease's local deadline: it expires then"
                     : "--release-timeout");
    while (rc == SQLLOCK_ECONNECT && run_retry_pause(end, &pause)) {
        tries++;
        rc = release_all(st);
    }
    run_span(took, sizeof took, (cli_guard_now_us() - start) / 1000);
    if (rc == SQLLOCK_OK && !st->quiet)
        run_say(st, "released %s after %s, at try %d", st->what, took,
                tries + 1);
    return rc;
}

/* Releases the lease after a failure that kept the command from running
 * (or from being supervised), and returns `code`. */
int run_give_back(run_state *st, int code)
{
    int rc;

    run_share_stop(st);
    rc = release_all(st);

    if (rc != SQLLOCK_OK)
        cli_db_error(st->db, rc, "run: releasing %s", st->what);
    return code;
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
static int run_hold_until(run_state *st, int code, int64_t end_us)
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
        if (!run_retry_pause(until, &pause))
            break;
        sqllock_lease_free(held);
        held = NULL;
        sqllock_close(db);
        db = NULL;
    }
    run_wall_time(when, sizeof when, end_us);
    memset(&h, 0, sizeof h);
    h.name = st->name;
    if (rc == SQLLOCK_OK && sqllock_list(db, find_holder, &h) == 1
        && h.remaining_ms > (end_us - cli_guard_now_us()) / 1000 + 250) {
        /* MySQL's renewal never moves an expiry back, and the lease's
         * own ttl reached past the window: wait for its end here, and
         * release then. Should this process die meanwhile, the lease
         * expires at its ttl, which is later. */
        run_event(st, "holding %s until %s (%s after the grant, "
                  "--hold-at-least), then releasing it", st->what, when,
                  run_span(dur, sizeof dur, st->hold_ms));
        what = "releasing";
        if (hold_wait(st, end_us))
            rc = sqllock_lease_release(held);
        else
            run_event(st, "interrupted: %s is left to expire", st->what);
    } else if (rc == SQLLOCK_OK) {
        run_event(st, "%s stays held until %s (%s after the grant, "
                  "--hold-at-least), then expires", st->what, when,
                  run_span(dur, sizeof dur, st->hold_ms));
    }
    if (rc == SQLLOCK_LOST) {
        cli_db_error(db, rc, "run: %s %s found it lost", what,
                     st->what);
        run_say(st, "exit 76, not the command's %d: %s was not held for "
                "all of the command's run", code, st->what);
        code = CLI_EXIT_LOST;
        st->broken = 1;
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
int run_give_up(run_state *st, int code)
{
    char when[64], held[32];
    int rc;

    if (st->lost) {
        /* After a deadline that passed (not a LOST answer) the row may
         * still be ours: give it back. Release says LOST otherwise. The
         * run has failed either way. */
        rc = run_release_persisting(st);
        if (rc != SQLLOCK_OK && rc != SQLLOCK_LOST)
            cli_db_error(st->db, rc, "run: releasing %s", st->what);
        if (st->ended && WIFEXITED(st->wstatus) && !st->leftover)
            run_say(st, "exit 76, not the command's %d: %s was not "
                    "held for all of the command's run", code, st->what);
        else
            run_say(st, "the command was stopped because %s was lost",
                    st->what);
        st->broken = 1;
        return CLI_EXIT_LOST;
    }
    if (st->hold_ms > 0 && st->cmd > 0) {
        int64_t end = st->granted_us + st->hold_ms * 1000;

        if (end > cli_guard_now_us())
            return run_hold_until(st, code, end);
    }
    rc = run_release_persisting(st);
    run_wall_time(when, sizeof when, cli_guard_now_us());
    if (rc == SQLLOCK_OK) {
        run_event(st, "released %s (held %s)", st->what,
                  run_span(held, sizeof held,
                           (cli_guard_now_us() - st->granted_us) / 1000));
    } else if (rc == SQLLOCK_LOST) {
        /* When it was lost is unknown: perhaps while the command ran. */
        cli_db_error(st->db, rc, "run: releasing %s at %s found it "
                     "lost", st->what, when);
        run_say(st, "exit 76, not the command's %d: %s was not held for "
                "all of the command's run", code, st->what);
        code = CLI_EXIT_LOST;
        st->broken = 1;
    } else {
        cli_db_error(st->db, rc, "run: warning: cannot release %s "
                     "(it stays held until it expires)", st->what);
    }
    return code;
}

/* The message for a busy lock (unless --quiet): the library's, with the
 * holder and the time it has left, read the way `list` reads them. */
void run_busy_message(run_state *st)
{
    char msg[RUN_MSG_MAX], left[32];
    run_holder h;

    snprintf(msg, sizeof msg, "%s", sqllock_errmsg(st->db));
    memset(&h, 0, sizeof h);
    h.name = sqllock_lease_name(st->lease);   /* --leader: its row */
    if (st->rw != NULL || sqllock_list(st->db, find_holder, &h) != 1) {
        run_say(st, "not running '%s': %s", st->cmd0, msg);
        return;
    }
    if (h.remaining_ms >= 0)
        run_say(st, "not running '%s': %s: holder '%s', token %" PRId64 ", %s "
                "left", st->cmd0, msg, h.holder, h.token,
                run_span(left, sizeof left, h.remaining_ms));
    else
        run_say(st, "not running '%s': %s: holder '%s', token %" PRId64 ", "
                "expired %s ago", st->cmd0, msg, h.holder, h.token,
                run_span(left, sizeof left, -h.remaining_ms));
}
