/*
 * ops.c -- the operator's view (issue 15 item 7): `sqllock show NAME`,
 * `sqllock history NAME`, `sqllock release NAME --force`, what a release
 * that freed nothing found instead, and the run history that `run`
 * keeps. A name is checked as `acquire` checks it before anything is
 * read (issue 27).
 *
 * The history of a lock name is one of the library's versioned records
 * (DESIGN O1), keyed "sqllock:history:NAME", whose value is up to
 * SQLLOCK_HISTORY_MAX lines, newest first, one per run of `sqllock run` and
 * one per forced release:
 *
 *     kind TAB token TAB start_ms TAB end_ms TAB exit TAB status TAB who
 *
 * with kind "run" or "force", times in ms since the epoch by the clock of
 * the host that wrote the line (not the database's: these are notes for
 * people, not lock decisions, DESIGN L2), end 0 while the run goes on,
 * and `who` the holder text (host:pid) of the run, or user@host of the
 * operator who forced the release. It is written with the library's
 * compare-and-set retry helper, so concurrent writers lose no line. A
 * record rather than a table of its own: no schema change, no migration,
 * and the run-time grants of DESIGN S2 already cover it; each name's
 * history is bounded, so nothing grows without end but the number of
 * names, and `sqllock history NAME --clear` removes one.
 *
 * A forced release frees a lease by its owner and token, read from the
 * lease table just before (sqllock_lease_attach() and
 * sqllock_lease_release()): if the holder renewed meanwhile it is still
 * freed, if someone else took the name over meanwhile nothing is touched.
 * Its holder hears LOST at its next renewal (L4), and a write it fences
 * with its token is refused by storage that checks tokens (L5).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"


/* ------------------------------------------------------------------ */
/* The lease of one name                                               */
/* ------------------------------------------------------------------ */

typedef struct one_lease {
    int found;
    char row[SQLLOCK_NAME_MAX + 1];     /* its name in the table */
    char owner[SQLLOCK_OWNER_LEN + 1];
    char holder[SQLLOCK_HOLDER_MAX + 1];
    int64_t token, acquired_at_ms, expires_at_ms, remaining_ms;
} one_lease;

static int find_cb(void *ctx, const sqllock_lease_info *info)
{
    one_lease *o = ctx;

    o->found = 1;
    snprintf(o->row, sizeof o->row, "%s", info->name);
    snprintf(o->owner, sizeof o->owner, "%s", info->owner);
    snprintf(o->holder, sizeof o->holder, "%s", info->holder);
    o->token = info->token;
    o->acquired_at_ms = info->acquired_at_ms;
    o->expires_at_ms = info->expires_at_ms;
    o->remaining_ms = info->remaining_ms;
    return 0;
}

/*
 * The row `typed` names, in one round trip (sqllock_lease_lookup()): its
 * own lease row; or, when there is none and `typed` reads "BASE [TAG]"
 * as `list` shows the row a shared/exclusive lock, a semaphore, a fair
 * queue or an election keeps under BASE, that row (issue 27 item 4).
 * `row` gets the name of the row found (`typed` when none is there),
 * `base` the name whose history it belongs to (BASE for a derived row).
 */
static int find_row(sqllock_db *db, const char *typed, one_lease *o,
                    char *row, char *base)
{
    const char *sep;
    int rc;

    memset(o, 0, sizeof *o);
    rc = sqllock_lease_lookup(db, typed, find_cb, o);
    if (rc == SQLLOCK_NOTFOUND)
        rc = SQLLOCK_OK;
    snprintf(row, SQLLOCK_NAME_MAX + 1, "%s", o->found ? o->row : typed);
    sep = o->found ? strchr(o->row, '\x1f') : NULL;
    snprintf(base, SQLLOCK_NAME_MAX + 1, "%.*s",
             (int)(sep != NULL ? (size_t)(sep - o->row) : strlen(row)), row);
    return rc;
}

/* Reads the lease row of exactly `name`. */
static int find_lease(sqllock_db *db, const char *name, one_lease *o)
{
    char row[SQLLOCK_NAME_MAX + 1], base[SQLLOCK_NAME_MAX + 1];

    return find_row(db, name, o, row, base);
}

/* The checks `acquire` makes of a lock name (sqllock_lease_new():
 * empty, longer than SQLLOCK_NAME_MAX bytes, not valid UTF-8, control
 * characters), with its message and exit code, for the commands that
 * only read or free a name's row. Returns CLI_EXIT_OK, or the exit code
 * after printing why. */
static int check_name(sqllock_db *db, const char *cmd, const char *name)
{
    sqllock_lease_options lo = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *lease = NULL;
    int rc;

    lo.ttl_ms = 60000;
    rc = sqllock_lease_new(db, name, &lo, &lease);
    sqllock_lease_free(lease);
    return rc == SQLLOCK_OK ? CLI_EXIT_OK : cli_db_error(db, rc, "%s", cmd);
}

/* An ISO 8601 UTC time with milliseconds. */
static void format_time(char *buf, size_t size, int64_t ms)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;

    if (ms <= 0 || gmtime_r(&t, &tm) == NULL) {
        snprintf(buf, size, "-");
        return;
    }
    snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
             tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
             tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

/* ------------------------------------------------------------------ */
/* sqllock show NAME                                                   */
/* ------------------------------------------------------------------ */

int cli_cmd_show(const cli_ctx *ctx, int argc, char **argv)
{
    cli_ctx c = *ctx;
    int help = 0, json = 0, npos, rc;
    const char *name = NULL;
    const cli_opt opts[] = {
        CLI_OPTS_DB(c), { "json", NULL, &json, 0 },
        { "help", NULL, &help, 0 }, { NULL, NULL, NULL, 0 }
    };
    char acquired[80], expires[80], left[64];
    char row[SQLLOCK_NAME_MAX + 1], base[SQLLOCK_NAME_MAX + 1];
    sqllock_db *db;
    one_lease o;

    rc = cli_parse("show", argc, argv, opts, &name, 1, &npos, NULL);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (help)
        return cli_help();
    if (npos != 1) {
        cli_error("show: needs NAME");
        return cli_usage();
    }
    rc = cli_open_db(&c, NULL, CLI_OPEN_READ, &db, NULL);
    if (rc != CLI_EXIT_OK)
        return rc;
    rc = check_name(db, "show", name);
    if (rc != CLI_EXIT_OK) {
        sqllock_close(db);
        return rc;
    }
    rc = find_row(db, name, &o, row, base);
    if (rc != SQLLOCK_OK) {
        rc = cli_db_error(db, rc, "show");
        sqllock_close(db);
        return rc;
    }
    sqllock_close(db);
    format_time(acquired, sizeof acquired, o.acquired_at_ms);
    format_time(expires, sizeof expires, o.expires_at_ms);
    cli_format_left(left, sizeof left, o.remaining_ms);
    if (json) {
        fputs("{\"name\": ", stdout);
        cli_print_json_string(name);
        if (!o.found) {
            puts(", \"held\": false}");
        } else {
            printf(", \"held\": %s, \"owner\": ",
                   o.remaining_ms > 0 ? "true" : "false");
            cli_print_json_string(o.owner);
            printf(", \"token\": %" PRId64 ", \"holder\": ", o.token);
            cli_print_json_string(o.holder);
            printf(", \"acquired_at_ms\": %" PRId64 ", \"expires_at_ms\": %"
                   PRId64 ", \"remaining_ms\": %" PRId64, o.acquired_at_ms,
                   o.expires_at_ms, o.remaining_ms);
            /* N1: the row marks the name's kind. */
            if (sqllock_kind_marker(o.owner) != NULL) {
                fputs(", \"kind\": ", stdout);
                cli_print_json_string(sqllock_kind_marker(o.owner));
            }
            puts("}");
        }
    } else if (!o.found) {
        fputs("name:     ", stdout);
        cli_print_cell(name, 0);
        puts("\nstate:    free (no lease row)");
    } else if (sqllock_kind_marker(o.owner) != NULL) {
        /* N1: not a lease but the name's kind, for good. */
        fputs("name:     ", stdout);
        cli_print_cell(name, 0);
        printf("\nstate:    a %s (its kind marker: a plain lease on the name "
               "is refused, and so is any other kind)\nowner:    %s\n"
               "token:    %" PRId64 "\nacquired: %s\nexpires:  never\n",
               sqllock_kind_marker(o.owner), o.owner, o.token, acquired);
    } else {
        fputs("name:     ", stdout);
        cli_print_cell(name, 0);
        printf("\nstate:    %s\nholder:   ", o.remaining_ms > 0 ? "held"
               : "free (the lease expired; the next acquire takes it "
                 "over, or the reaper removes it)");
        cli_print_cell(o.holder, 0);
        printf("\nowner:    %s\ntoken:    %" PRId64 "\nacquired: %s\n"
               "expires:  %s\nleft:     %s (by the database's clock)\n",
               o.owner, o.token, acquired, expires, left);
    }
    return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_DB;
}

/* ------------------------------------------------------------------ */
/* sqllock history NAME                                                */
/* ------------------------------------------------------------------ */

/* Splits a history line in place into its 7 fields; 0, or -1. */
static int split_line(char *line, char **f)
{
    int i;

    for (i = 0; i < 7; i++) {
        f[i] = line;
        line = strchr(line, i < 6 ? '\t' : '\0');
        if (line == NULL)
            return i == 6 ? 0 : -1;
        if (i < 6)
            *line++ = '\0';
    }
    return 0;
}

int cli_cmd_history(const cli_ctx *ctx, int argc, char **argv)
{
    cli_ctx c = *ctx;
    int help = 0, json = 0, clear = 0, clear_all = 0, npos, rc, first = 1;
    const char *name = NULL;
    const cli_opt opts[] = {
        CLI_OPTS_DB(c), { "json", NULL, &json, 0 },
        { "clear", NULL, &clear, 0 }, { "clear-all", NULL, &clear_all, 0 },
        { "help", NULL, &help, 0 }, { NULL, NULL, NULL, 0 }
    };
    char key[SQLLOCK_NAME_MAX + 1];
    void *value = NULL;
    size_t len = 0;
    int64_t version = 0;
    sqllock_db *db;
    char *p, *nl;
    cli_slot_view slot;

    rc = cli_parse("history", argc, argv, opts, &name, 1, &npos, NULL);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (help)
        return cli_help();
    if (npos != 1) {
        cli_error("history: needs NAME");
        return cli_usage();
    }
    rc = cli_open_db(&c, NULL, CLI_OPEN_READ, &db, NULL);
    if (rc != CLI_EXIT_OK)
        return rc;
    rc = check_name(db, "history", name);
    if (rc != CLI_EXIT_OK) {
        sqllock_close(db);
        return rc;
    }
    if (clear || clear_all) {
        /* DESIGN C5: the forced releases stay (unless --clear-all), and
         * the clearing is itself a line of the audit, with who did it. */
        char me[300], who[300];

        cli_who_am_i(db, me, sizeof me, who, sizeof who);
        rc = sqllock_history_clear(db, name, clear_all, who);
        if (rc != SQLLOCK_OK) {
            rc = cli_audit_refused(db, rc, "history --clear");
            sqllock_close(db);
            return rc;
        }
        sqllock_close(db);
        printf("history of ");
        cli_print_cell(name, 0);
        puts(clear_all ? ": cleared, forced releases too (the clearing is "
                         "noted in it)"
                       : ": runs cleared (forced releases kept; the "
                         "clearing is noted in it)");
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_DB;
    }
    sqllock_history_key(name, key, sizeof key);
    rc = sqllock_record_get(db, key, &value, &len, &version);
    if (rc != SQLLOCK_OK && rc != SQLLOCK_NOTFOUND) {
        rc = cli_db_error(db, rc, "history");
        sqllock_free(value);
        sqllock_close(db);
        return rc;
    }
    /* The schedule slot record (`run --once-per`), shown after the runs. */
    cli_slot_load(db, name, &slot);
    sqllock_close(db);
    if (json)
        puts("[");
    else
        printf("%-5s  %-24s  %-24s  %9s  %4s  %-8s  %s\n", "KIND",
               "START (host clock)", "END", "DURATION", "EXIT", "STATUS",
               "WHO");
    for (p = value; p != NULL && p < (char *)value + len; p = nl + 1) {
        char *f[7], start[80], end[80], dur[32];
        int64_t s, e;

        nl = memchr(p, '\n', (size_t)((char *)value + len - p));
        if (nl == NULL)
            break;
        *nl = '\0';
        if (split_line(p, f) != 0)
            continue;
        s = strtoll(f[2], NULL, 10);
        e = strtoll(f[3], NULL, 10);
        format_time(start, sizeof start, s);
        format_time(end, sizeof end, e);
        if (e > 0 && e >= s)
            snprintf(dur, sizeof dur, "%.1fs", (double)(e - s) / 1000.0);
        else
            snprintf(dur, sizeof dur, "-");
        if (json) {
            printf("%s  {\"kind\": ", first ? "" : ",\n");
            cli_print_json_string(f[0]);
            printf(", \"token\": %s, \"start_ms\": %" PRId64 ", \"end_ms\": %"
                   PRId64 ", \"exit\": %d, \"status\": ", f[1], s, e,
                   atoi(f[4]));
            cli_print_json_string(f[5]);
            fputs(", \"who\": ", stdout);
            cli_print_json_string(f[6]);
            putchar('}');
        } else {
            printf("%-5s  %-24s  %-24s  %9s  %4s  %-8s  ", f[0], start,
                   e > 0 ? end : "-", dur,
                   strcmp(f[5], "running") == 0 || strcmp(f[0], "run") != 0
                   ? "-" : f[4], f[5]);
            cli_print_cell(f[6], 0);
            putchar('\n');
        }
        first = 0;
    }
    first = cli_slot_print(&slot, json, first);
    if (json)
        puts(first ? "]" : "\n]");
    sqllock_free(value);
    return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_DB;
}

/* ------------------------------------------------------------------ */
/* sqllock release NAME --owner ID --token N, when it freed nothing     */
/* ------------------------------------------------------------------ */

/*
 * The library says LOST whenever no row of that owner and token was
 * there to delete. What the row is now tells the cases apart: a live
 * lease granted after token N (tokens only grow, L5) took N's place --
 * N was lost (L4); a live lease of token N or below, whose owner or
 * token is not the one given, was never N's: it is held by someone
 * else, untouched, and the release was refused, as a busy lock is.
 */
int cli_release_lost(sqllock_db *db, const char *name, const char *owner,
                     int64_t token)
{
    char msg[1024], left[64];
    one_lease o;
    int rc;

    snprintf(msg, sizeof msg, "%s", sqllock_errmsg(db));
    rc = find_lease(db, name, &o);
    if (rc != SQLLOCK_OK || !o.found || o.remaining_ms <= 0 ||
        (strcmp(o.owner, owner) == 0 && o.token == token)) {
        fprintf(stderr, "sqllock: release: %s\n", msg);
        return CLI_EXIT_LOST;
    }
    if (sqllock_kind_marker(o.owner) != NULL) {
        fprintf(stderr, "sqllock: release: '%s' is not a lease but the row "
                "that marks the name as a %s (contract N1); nothing was "
                "released\n", name, sqllock_kind_marker(o.owner));
        return CLI_EXIT_KIND;
    }
    cli_format_left(left, sizeof left, o.remaining_ms);
    if (o.token > token) {
        fprintf(stderr, "sqllock: release: lock '%s' had already been "
                "lost: it was taken over, and is held now by '%s' (token %"
                PRId64 ", %s left by the database's clock), which was left "
                "untouched\n", name, o.holder, o.token, left);
        return CLI_EXIT_LOST;
    }
    fprintf(stderr, "sqllock: release: lock '%s' is held by another owner: "
            "'%s' (token %" PRId64 ", %s left by the database's clock); "
            "nothing was released: %s\n", name, o.holder, o.token, left,
            o.token == token ? "--owner is not its owner"
                             : "--token is not its token");
    return CLI_EXIT_BUSY;
}

/* ------------------------------------------------------------------ */
/* sqllock release NAME --force                                        */
/* ------------------------------------------------------------------ */

int cli_force_release(const cli_ctx *ctx, const char *name, int force)
{
    cli_ctx c = *ctx;
    char who[300], me[300], left[64];
    sqllock_force_options fo = SQLLOCK_FORCE_OPTIONS_INIT;
    sqllock_db *db;
    one_lease o;
    int rc, users;

    rc = cli_open_db(&c, NULL, 0, &db, NULL);
    if (rc != CLI_EXIT_OK)
        return rc;
    rc = check_name(db, "release", name);
    if (rc != CLI_EXIT_OK) {
        sqllock_close(db);
        return rc;
    }
    /* DESIGN C5: the lease row (by its owner and token, read just before)
     * is deleted and the audit line written in one transaction, or
     * neither (sqllock_force_release()): a role that may delete leases
     * but not write the record frees nothing. A live lease's holder may
     * be alive and working, and nothing here can tell (its renewals and
     * its process are elsewhere): freed only with --force twice. */
    cli_who_am_i(db, me, sizeof me, who, sizeof who);
    fo.live = force >= 2;
    fo.who = who;
    memset(&o, 0, sizeof o);
    rc = sqllock_force_release(db, name, &fo, find_cb, &o);
    users = strcmp(sqllock_db_driver(db), "sqlite") != 0;
    cli_format_left(left, sizeof left, o.remaining_ms);
    if (rc == SQLLOCK_NOTFOUND) {
        sqllock_close(db);
        fputs("no lease on ", stdout);
        cli_print_cell(name, 0);
        puts(": nothing to release");
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_DB;
    }
    if (rc == SQLLOCK_EKIND) {
        /* N1: a kind marker is no lease. Freeing it would let a plain
         * lease in while the name's readers, permits or leader hold it;
         * it has no owner id that could be attached to, either. */
        fputs("sqllock: release --force: '", stderr);
        fputs(name, stderr);
        fprintf(stderr, "' is not a lease but the row that marks the name "
                "as a %s (contract N1: one name, one meaning); it is never "
                "freed: a plain lease on it could then overlap the %s's "
                "holds. Use another name for a plain lease\n",
                sqllock_kind_marker(o.owner), sqllock_kind_marker(o.owner));
        sqllock_close(db);
        return CLI_EXIT_KIND;
    }
    if (rc == SQLLOCK_BUSY) {
        fputs("sqllock: release --force: lock '", stderr);
        fputs(name, stderr);
        fprintf(stderr, "' is held by '%s' (token %" PRId64 ", %s left by "
                "the database's clock), which may be alive and working: "
                "give --force twice to free it anyway (the holder hears "
                "LOST at its next renewal, and a write it fences with "
                "token %" PRId64 " is refused)\n", o.holder, o.token, left,
                o.token);
        sqllock_close(db);
        return CLI_EXIT_BUSY;
    }
    if (rc == SQLLOCK_LOST) {
        /* Taken over, released or reaped since it was read. */
        fprintf(stderr, "sqllock: release --force: the lease of token %"
                PRId64 " was gone when it was to be freed (released, taken "
                "over or reaped meanwhile); nothing was changed\n", o.token);
        sqllock_close(db);
        return CLI_EXIT_LOST;
    }
    if (rc != SQLLOCK_OK) {
        rc = cli_audit_refused(db, rc, "release --force");
        sqllock_close(db);
        return rc;
    }
    sqllock_close(db);
    fputs("released ", stdout);
    cli_print_cell(name, 0);
    printf(" by force (token %" PRId64 ", holder '", o.token);
    cli_print_cell(o.holder, 0);
    printf("', %s); recorded in its history, in the same transaction, as "
           "%s%s\n", left, me, users ? " (and the database user)" : "");
    return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_DB;
}
