/*
 * run_slot.c -- `sqllock run NAME --once-per DUR` and --once-per-cron
 * 'EXPR' (issue 31): across hosts, the command runs at most once per
 * slot of the schedule. The schedule and the record of the slots that
 * ran are the library's (sqllock_schedule_slot(), sqllock_slot_claim(),
 * sqllock_slot_finish(): core/cron.c, core/slot.c).
 *
 * The slot is the one in which the run started, by this host's clock:
 * cron fires each host by its own clock at the slot's start, so two hosts
 * whose clocks differ by seconds agree on the slot, where the database's
 * clock would put a host whose clock runs ahead into the slot before. A
 * run that waits for the lock (--wait) into a later slot still counts
 * for the slot it started in. The hosts' clocks must agree to far less
 * than a slot's length.
 *
 * The order of a run: the lease on NAME is taken as always (run.c);
 * then run_slot_claim() reads NAME's slot record and writes "running"
 * for this slot with compare-and-set, unless the slot (or a later one)
 * has had its run; the command runs; run_slot_finish() notes how it
 * ended ("ok", "failed", "timeout" or "lost"), tried again through an
 * outage as the history is (run_persist()). A slot whose run failed is
 * not run again (at most once per slot) unless --retry-failed, which
 * runs it again in a later firing within the slot when its run failed,
 * timed out, lost the lock, or is still "running" (its runner is gone:
 * this run holds the lease). A run that finds the slot had its run does
 * not run the command and exits 0 (or --slot-done-exit CODE), saying so
 * unless --quiet. Not with --leader, --shared, --exclusive or
 * --permits: a slot is for the plain lease (with --also, --fair or
 * --hold-at-least, which it does not depend on).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "run_history.h"
#include "run_slot.h"

/* Wall-clock ms as local time, "2025-11-25T15:00:00+0100". */
static void wall_text(char *buf, size_t size, int64_t ms)
{
    time_t t = (time_t)(ms / 1000);
    char base[32], zone[8];
    struct tm tm;

    if (localtime_r(&t, &tm) == NULL) {
        snprintf(buf, size, "%" PRId64 " ms", ms);
        return;
    }
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    strftime(zone, sizeof zone, "%z", &tm);
    snprintf(buf, size, "%s%s", base, zone);
}

int run_slot_check(run_state *st, const run_slot_args *a,
                   const char *excluded)
{
    const char *text = a->once_per != NULL ? a->once_per : a->once_per_cron;
    const char *opt = a->once_per != NULL ? "once-per" : "once-per-cron";
    const char *why;
    int64_t ms = 0, code = 0;
    int rc;

    if (text == NULL) {
        if (!a->retry_failed && a->done_exit == NULL)
            return CLI_EXIT_OK;
        cli_error("run: --%s needs --once-per or --once-per-cron",
                  a->retry_failed ? "retry-failed" : "slot-done-exit");
        return cli_usage();
    }
    if (a->once_per != NULL && a->once_per_cron != NULL) {
        cli_error("run: --once-per and --once-per-cron exclude each other");
        return cli_usage();
    }
    if (excluded != NULL) {
        cli_error("run: --%s cannot be used with %s (a schedule slot is "
                  "for the plain lease, with or without --also)", opt,
                  excluded);
        return cli_usage();
    }
    if (a->once_per != NULL) {
        rc = cli_parse_duration("run", opt, text, &ms);
        if (rc != CLI_EXIT_OK)
            return rc;
        if (ms <= 0) {
            cli_error("run: --once-per must be longer than 0, not '%s'",
                      text);
            return cli_usage();
        }
    } else if (text[0] != '@' && strpbrk(text, " \t") == NULL) {
        cli_error("run: bad cron expression for --once-per-cron: '%s': it "
                  "has five fields, minute hour day-of-month month "
                  "day-of-week, in one argument ('0 3 * * *'); a duration "
                  "goes with --once-per", text);
        return cli_usage();
    }
    if (sqllock_schedule_check(text, &why) != SQLLOCK_OK) {
        cli_error("run: bad %s for --%s: '%s': %s", a->once_per != NULL
                  ? "duration" : "cron expression", opt, text, why);
        return cli_usage();
    }
    if (a->done_exit != NULL) {
        rc = cli_parse_int("run", "slot-done-exit", a->done_exit, 0, 255,
                           &code);
        if (rc != CLI_EXIT_OK)
            return rc;
    }
    /* The slot of the run's start, by this host's clock. */
    if (sqllock_schedule_slot(text, st->start_wall_ms, &st->slot_ms,
                              &st->slot_end_ms) != SQLLOCK_OK) {
        cli_error("run: no slot of --%s '%s' begins within 10 years of "
                  "now", opt, text);
        return cli_usage();
    }
    st->schedule = text;
    st->retry_failed = a->retry_failed;
    st->slot_done_exit = (int)code;
    return CLI_EXIT_OK;
}

/* The record found by the claim, copied. */
typedef struct slot_found {
    int have;
    sqllock_slot_info info;
    char who[SQLLOCK_HOLDER_MAX + 1];
    char state[32];
} slot_found;

static int found_cb(void *ctx, const sqllock_slot_info *info)
{
    slot_found *f = ctx;

    f->have = 1;
    f->info = *info;
    snprintf(f->who, sizeof f->who, "%s", info->who);
    snprintf(f->state, sizeof f->state, "%s", info->state);
    f->info.who = f->who;
    f->info.state = f->state;
    f->info.schedule = NULL;
    return 0;
}

/* How the run recorded in `f` went: "exit 0", "failed, exit 3", ... */
static void how_it_went(char *buf, size_t size, const slot_found *f)
{
    const char *s = f->state;

    if (strcmp(s, "running") == 0)
        snprintf(buf, size, "it did not end: its runner died or lost the "
                 "lock");
    else if (strcmp(s, "ok") == 0)
        snprintf(buf, size, "exit %d", f->info.exit_code);
    else
        snprintf(buf, size, "%s, exit %d", strcmp(s, "timeout") == 0
                 ? "timed out" : s, f->info.exit_code);
}

/*
 * Claims this run's slot in NAME's slot record (sqllock_slot_claim()),
 * holding NAME's lease. Returns -1 when the command is to run (the
 * record says "running" for it), else the exit code (the lease still
 * held: the caller gives it back): --slot-done-exit when the slot, or a
 * later one, had its run, or another run claimed it meanwhile; an error's
 * code when the record could not be read or written -- the command does
 * not run then, since once per slot could not be made sure.
 */
int run_slot_claim(run_state *st)
{
    sqllock_slot_options so = SQLLOCK_SLOT_OPTIONS_INIT;
    char me[300], who[300], when[64], was[64], how[300];
    slot_found f;
    int rc;

    if (st->schedule == NULL)
        return -1;
    if (st->slot_who[0] == '\0') {
        /* user@host, unless --holder names the run. */
        cli_who_am_i(st->db, me, sizeof me, who, sizeof who);
        snprintf(st->slot_who, sizeof st->slot_who, "%s", me);
    }
    st->slot_token = sqllock_lease_token(st->lease);
    so.schedule = st->schedule;
    so.slot_ms = st->slot_ms;
    so.token = st->slot_token;
    so.who = st->slot_who;
    so.retry_failed = st->retry_failed;
    memset(&f, 0, sizeof f);
    rc = sqllock_slot_claim(st->db, st->name, &so, found_cb, &f);
    wall_text(when, sizeof when, st->slot_ms);
    if (f.have)
        how_it_went(how, sizeof how, &f);
    if (rc == SQLLOCK_OK) {
        st->slot_claimed = 1;
        if (f.have && f.info.slot_ms == st->slot_ms)
            run_say(st, "%s: running the slot starting %s again "
                    "(--retry-failed; its run on %s: %s)", st->name, when,
                    f.who, how);
        else
            run_event(st, "%s: this run has the slot starting %s "
                      "(schedule %s)", st->name, when, st->schedule);
        return -1;
    }
    if (rc == SQLLOCK_BUSY || rc == SQLLOCK_CONFLICT) {
        st->outcome = RUN_OUTCOME_SKIPPED_SLOT;
        if (st->quiet)
            return st->slot_done_exit;
        if (!f.have) {
            run_say(st, "%s: not running '%s': %s", st->name, st->cmd0,
                    sqllock_errmsg(st->db));
        } else if (rc == SQLLOCK_CONFLICT) {
            run_say(st, "%s: another run (on %s) took the slot starting %s "
                    "meanwhile; not running '%s'", st->name, f.who, when,
                    st->cmd0);
        } else if (f.info.slot_ms > st->slot_ms) {
            wall_text(was, sizeof was, f.info.slot_ms);
            run_say(st, "%s: already ran in a later slot, starting %s (on "
                    "%s, %s), than this run's, starting %s", st->name, was,
                    f.who, how, when);
        } else {
            run_say(st, "%s: already ran in the slot starting %s (on %s, "
                    "%s)%s", st->name, when, f.who, how,
                    strcmp(f.state, "ok") != 0
                    ? "; --retry-failed runs it again" : "");
        }
        return st->slot_done_exit;
    }
    cli_db_error(st->db, rc, "run: cannot claim the slot starting %s in the "
                 "slot record of '%s', so '%s' does not run", when, st->name,
                 st->cmd0);
    return rc == SQLLOCK_EINVAL ? CLI_EXIT_DB : cli_exit_code(rc);
}

typedef struct finish_ctx {
    const run_state *st;
    const char *state;
    int code;
} finish_ctx;

static int finish_write(sqllock_db *db, void *ctx)
{
    const finish_ctx *f = ctx;

    return sqllock_slot_finish(db, f->st->name, f->st->slot_token,
                               f->state, f->code, 0);
}

/* Notes the end of the run in the slot record: `state` ("ok", "failed",
 * "timeout", "lost") and the tool's exit code, tried again through an
 * outage (run_persist()). A record that cannot be written is a warning:
 * the slot stays "running", and a later run in it runs only with
 * --retry-failed. */
void run_slot_finish(run_state *st, int code, const char *state)
{
    finish_ctx f = { st, state, code };
    char what[400];
    int rc;

    if (!st->slot_claimed)
        return;
    snprintf(what, sizeof what, "note the end of the run in the slot "
             "record of '%s'", st->name);
    rc = run_persist(st, 1, what, finish_write, &f);
    if (rc != SQLLOCK_OK)
        cli_db_error(st->db != NULL ? st->db : st->own_db, rc, "run: "
                     "warning: the end of the run is not in the slot record "
                     "of '%s'%s", st->name, rc == SQLLOCK_CONFLICT ? ""
                     : " (it stays 'running': a later run in the slot runs "
                       "only with --retry-failed)");
}
