/*
 * slot.c -- at most one run per schedule slot (issue 31; `sqllock run
 * --once-per`): the record of the last slot a job ran in. The slots
 * themselves are cut by a schedule (core/cron.c).
 *
 * One of the versioned records (DESIGN O1) per lock name, keyed
 * "sqllock:slot:NAME" (cut and hashed as the history's key is,
 * sqllock__record_key()), whose value is one line:
 *
 *   SLOT_MS \t SCHEDULE \t STATE \t TOKEN \t WHO \t START_MS \t END_MS
 *   \t EXIT \t PREV_SLOT_MS \n
 *
 * the start of the slot (ms since the epoch), the schedule it was judged
 * by, the state of its run (running, ok, failed, timeout, lost), the
 * run's lease token, who ran it, when it started and ended (its host's
 * clock; END_MS 0 while it runs), its exit code, and the start of the
 * slot recorded before (0 for none), from which `sqllock history` counts
 * the slots in which nothing ran. A reader ignores fields after these
 * (a later version may append some).
 *
 * The claim is a compare-and-set on the record's version: the run reads
 * the record, decides, and writes "running" for its slot only if the
 * record is still the one it read. Its caller holds NAME's lease, which
 * keeps the runs of one name apart; the compare-and-set is what keeps a
 * slot to one run even when that lease was lost between the read and
 * the write (another run then wrote between them, and the write changes
 * nothing). A run whose write finds the record moved by another run's
 * claim (a new token) does not run; one that finds it moved by the last
 * run's own final write (the same token) decides again.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

#define SLOT_PREFIX SQLLOCK_SLOT_KEY_PREFIX
/* The fields of the line, and the longest line. */
#define SLOT_FIELDS 9
#define SLOT_LINE_MAX (SQLLOCK_SCHEDULE_MAX + SQLLOCK_HOLDER_MAX + 256)
/* Tries of a claim or a final write whose compare-and-set lost to
 * another write. */
#define SLOT_ATTEMPTS 16

void sqllock_slot_key(const char *name, char *key, size_t size)
{
    sqllock__record_key(SLOT_PREFIX, name, key, size);
}

/* The wall clock, ms since the epoch. */
static int64_t wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Copies `s` into out[max + 1] as a field of the line: each run of
 * white space and control characters becomes one space, and it is cut
 * to `max` bytes at a character's start. */
static void field(char *out, const char *s, size_t max)
{
    size_t n = 0;
    int space = 0;

    for (; s != NULL && *s != '\0' && n < max; s++) {
        unsigned char c = (unsigned char)*s;

        if (c <= 0x20 || c == 0x7f) {
            space = n > 0;
            continue;
        }
        if (space) {
            if (n + 1 >= max)
                break;
            out[n++] = ' ';
            space = 0;
        }
        out[n++] = (char)c;
    }
    /* The byte after the cut continues a character: drop its start. */
    if (n == max && s != NULL && ((unsigned char)*s & 0xC0) == 0x80)
        while (n > 0 && ((unsigned char)out[--n] & 0xC0) == 0x80)
            ;
    out[n] = '\0';
}

/* The line of `r`, in buf[SLOT_LINE_MAX]; its length. */
static size_t slot_format(const sqllock_slot_info *r, char *buf)
{
    char sched[SQLLOCK_SCHEDULE_MAX + 1], who[SQLLOCK_HOLDER_MAX + 1];
    int n;

    field(sched, r->schedule, SQLLOCK_SCHEDULE_MAX);
    field(who, r->who, SQLLOCK_HOLDER_MAX);
    n = snprintf(buf, SLOT_LINE_MAX, "%" PRId64 "\t%s\t%s\t%" PRId64 "\t%s\t%"
                 PRId64 "\t%" PRId64 "\t%d\t%" PRId64 "\n", r->slot_ms,
                 sched, r->state, r->token, who, r->start_ms, r->end_ms,
                 r->exit_code, r->prev_slot_ms);
    return n > 0 && n < SLOT_LINE_MAX ? (size_t)n : 0;
}

/* A whole decimal number, possibly negative. */
static int read_int(const char *s, int64_t *v)
{
    char *end;

    if (*s == '\0')
        return -1;
    *v = strtoll(s, &end, 10);
    return *end == '\0' ? 0 : -1;
}

/* Splits the record's text (NUL-terminated, changed in place) into *r,
 * whose strings then point into it. 0, or -1 when it is not a slot's
 * line. */
static int slot_parse(char *text, sqllock_slot_info *r)
{
    char *f[SLOT_FIELDS], *p = text, *nl;
    int64_t v;
    int i;

    memset(r, 0, sizeof *r);
    nl = strchr(text, '\n');
    if (nl != NULL)
        *nl = '\0';
    for (i = 0; i < SLOT_FIELDS; i++) {
        f[i] = p;
        p = strchr(p, '\t');
        if (p == NULL) {
            if (i != SLOT_FIELDS - 1)
                return -1;
            break;
        }
        *p++ = '\0';
    }
    if (read_int(f[0], &r->slot_ms) || f[1][0] == '\0' || f[2][0] == '\0' ||
        read_int(f[3], &r->token) || read_int(f[5], &r->start_ms) ||
        read_int(f[6], &r->end_ms) || read_int(f[7], &v) ||
        v < INT32_MIN || v > INT32_MAX || read_int(f[8], &r->prev_slot_ms))
        return -1;
    r->schedule = f[1];
    r->state = f[2];
    r->who = f[4];
    r->exit_code = (int)v;
    return 0;
}

/* Reads the slot record of `key` into *r (strings in *text, to be freed
 * with free()). SQLLOCK_OK, SQLLOCK_NOTFOUND, or a failure. */
static int slot_get(sqllock_db *db, const char *name, const char *key,
                    sqllock_slot_info *r, char **text)
{
    void *value = NULL;
    int64_t version = 0;
    int rc;

    *text = NULL;
    memset(r, 0, sizeof *r);
    rc = sqllock_record_get(db, key, &value, NULL, &version);
    if (rc != SQLLOCK_OK)
        return rc;
    if (slot_parse(value, r) != 0) {
        sqllock_free(value);
        return sqllock__fail(db, SQLLOCK_EINVAL, "the record '%s' does not "
                             "hold the schedule slot of '%s' as sqllock "
                             "writes it; nothing was run or changed (delete "
                             "the record to start the slots afresh)", key,
                             name);
    }
    r->version = version;
    *text = value;
    return SQLLOCK_OK;
}

static int check_state(sqllock_db *db, const char *state)
{
    static const char *const states[] = { "ok", "failed", "timeout", "lost",
                                          NULL };
    int i;

    for (i = 0; state != NULL && states[i] != NULL; i++)
        if (strcmp(state, states[i]) == 0)
            return SQLLOCK_OK;
    return sqllock__fail(db, SQLLOCK_EINVAL, "sqllock_slot_finish: the "
                         "state must be ok, failed, timeout or lost, not "
                         "'%s'", state != NULL ? state : "(null)");
}

int sqllock_slot_parse(const void *value, size_t len,
                       int (*cb)(void *ctx, const sqllock_slot_info *info),
                       void *ctx)
{
    sqllock_slot_info r;
    char *text;
    int rc = SQLLOCK_OK;

    if (value == NULL || len > SQLLOCK_VALUE_MAX)
        return SQLLOCK_EINVAL;
    text = malloc(len + 1);
    if (text == NULL)
        return SQLLOCK_ENOMEM;
    memcpy(text, value, len);
    text[len] = '\0';
    if (strlen(text) != len || slot_parse(text, &r) != 0)
        rc = SQLLOCK_EINVAL;
    else if (cb != NULL)
        cb(ctx, &r);
    free(text);
    return rc;
}

int sqllock_slot_read(sqllock_db *db, const char *name,
                      int (*cb)(void *ctx, const sqllock_slot_info *info),
                      void *ctx)
{
    char key[SQLLOCK_NAME_MAX + 1], *text = NULL;
    sqllock_slot_info r;
    int rc;

    if ((rc = sqllock__check_db(db)) != SQLLOCK_OK ||
        (rc = sqllock__check_name(db, name, "lock name")) != SQLLOCK_OK)
        return rc;
    sqllock_slot_key(name, key, sizeof key);
    rc = slot_get(db, name, key, &r, &text);
    if (rc == SQLLOCK_NOTFOUND)
        return sqllock__fail(db, SQLLOCK_NOTFOUND, "'%s' has no schedule "
                             "slot record (no run with a schedule yet)",
                             name);
    if (rc == SQLLOCK_OK && cb != NULL)
        cb(ctx, &r);
    free(text);
    return rc;
}

int sqllock_slot_claim(sqllock_db *db, const char *name,
                       const sqllock_slot_options *opts,
                       int (*cb)(void *ctx, const sqllock_slot_info *found),
                       void *ctx)
{
    char key[SQLLOCK_NAME_MAX + 1], line[SLOT_LINE_MAX], *text = NULL;
    sqllock_slot_info found, mine;
    int64_t first_token = 0;
    int rc, attempt, first_exists = 0, exists = 0;
    const char *why;
    size_t len;

    if ((rc = sqllock__check_db(db)) != SQLLOCK_OK ||
        (rc = sqllock__check_name(db, name, "lock name")) != SQLLOCK_OK)
        return rc;
    if (opts == NULL || opts->struct_version < 1)
        return sqllock__fail(db, SQLLOCK_EINVAL, "sqllock_slot_claim: "
                             "options without a struct_version (use "
                             "SQLLOCK_SLOT_OPTIONS_INIT)");
    if (sqllock_schedule_check(opts->schedule, &why) != SQLLOCK_OK)
        return sqllock__fail(db, SQLLOCK_EINVAL, "sqllock_slot_claim: bad "
                             "schedule: %s", why);
    if (opts->token < 0)
        return sqllock__fail(db, SQLLOCK_EINVAL, "sqllock_slot_claim: the "
                             "token must not be negative");
    sqllock_slot_key(name, key, sizeof key);
    memset(&mine, 0, sizeof mine);
    mine.slot_ms = opts->slot_ms;
    mine.schedule = opts->schedule;
    mine.state = "running";
    mine.token = opts->token;
    mine.who = opts->who != NULL ? opts->who : "";
    mine.start_ms = opts->start_ms != 0 ? opts->start_ms : wall_ms();
    for (attempt = 0; attempt < SLOT_ATTEMPTS; attempt++) {
        free(text);
        rc = slot_get(db, name, key, &found, &text);
        if (rc != SQLLOCK_OK && rc != SQLLOCK_NOTFOUND)
            break;
        exists = rc == SQLLOCK_OK;
        if (attempt == 0) {
            first_exists = exists;
            first_token = found.token;
        } else if (exists != first_exists || found.token != first_token) {
            /* Another run's claim came between the read and the write. */
            rc = sqllock__fail(db, SQLLOCK_CONFLICT, "another run (token %"
                               PRId64 ") claimed the slot of '%s' between "
                               "this run's read and write", found.token,
                               name);
            break;
        }
        if (exists && found.slot_ms > mine.slot_ms) {
            rc = sqllock__fail(db, SQLLOCK_BUSY, "'%s' already ran in a "
                               "later slot (never going back)", name);
            break;
        }
        if (exists && found.slot_ms == mine.slot_ms &&
            (strcmp(found.state, "ok") == 0 || !opts->retry_failed)) {
            rc = sqllock__fail(db, SQLLOCK_BUSY, "'%s' already ran in "
                               "this slot (%s)", name, found.state);
            break;
        }
        mine.prev_slot_ms = !exists ? 0
                            : found.slot_ms == mine.slot_ms
                                ? found.prev_slot_ms : found.slot_ms;
        len = slot_format(&mine, line);
        if (len == 0) {
            rc = sqllock__fail(db, SQLLOCK_EINVAL, "sqllock_slot_claim: the "
                               "record would be too long");
            break;
        }
        rc = exists ? sqllock_record_cas(db, key, found.version, line, len,
                                         NULL)
                    : sqllock_record_create(db, key, line, len);
        /* A write that lost to another (or, on Galera, its
         * certification): read again. */
        if (rc != SQLLOCK_CONFLICT && rc != SQLLOCK_EDEADLOCK)
            break;
    }
    if (attempt == SLOT_ATTEMPTS)
        rc = sqllock__fail(db, SQLLOCK_CONFLICT, "the slot record of '%s' "
                           "was changed by other writers in each of %d "
                           "attempts", name, SLOT_ATTEMPTS);
    if (exists && cb != NULL && text != NULL)
        cb(ctx, &found);
    free(text);
    return rc == SQLLOCK_OK ? sqllock__ok(db) : rc;
}

int sqllock_slot_finish(sqllock_db *db, const char *name, int64_t token,
                        const char *state, int exit_code, int64_t end_ms)
{
    char key[SQLLOCK_NAME_MAX + 1], line[SLOT_LINE_MAX], *text = NULL;
    sqllock_slot_info r;
    int rc = SQLLOCK_CONFLICT, attempt;
    size_t len;

    if ((rc = sqllock__check_db(db)) != SQLLOCK_OK ||
        (rc = sqllock__check_name(db, name, "lock name")) != SQLLOCK_OK ||
        (rc = check_state(db, state)) != SQLLOCK_OK)
        return rc;
    sqllock_slot_key(name, key, sizeof key);
    if (end_ms == 0)
        end_ms = wall_ms();
    for (attempt = 0; attempt < SLOT_ATTEMPTS; attempt++) {
        free(text);
        rc = slot_get(db, name, key, &r, &text);
        if (rc == SQLLOCK_NOTFOUND)
            rc = sqllock__fail(db, SQLLOCK_NOTFOUND, "'%s' has no schedule "
                               "slot record: its run's end is not noted",
                               name);
        if (rc != SQLLOCK_OK)
            break;
        if (r.token != token) {
            rc = sqllock__fail(db, SQLLOCK_CONFLICT, "the slot record of '%s' "
                               "is another run's now (token %" PRId64 ", not "
                               "%" PRId64 "): it was left as it is", name,
                               r.token, token);
            break;
        }
        r.state = state;
        r.exit_code = exit_code;
        r.end_ms = end_ms;
        len = slot_format(&r, line);
        rc = len > 0 ? sqllock_record_cas(db, key, r.version, line, len, NULL)
                     : sqllock__fail(db, SQLLOCK_EINVAL, "sqllock_slot_finish: "
                                     "the record would be too long");
        if (rc != SQLLOCK_CONFLICT && rc != SQLLOCK_EDEADLOCK)
            break;
    }
    free(text);
    return rc == SQLLOCK_OK ? sqllock__ok(db) : rc;
}
