/*
 * observe.c -- observers (issue 31): following lock names, and telling
 * the caller each time one changes hands, without holding or writing
 * anything.
 *
 * An observer reads the lease rows of its names with one statement per
 * poll (LEASE_OBSERVE: every name's range at once, and the server's
 * clock), on the handle's own connection and in the caller's thread:
 * sqllock_observer_next() waits for the next poll, makes it, and hands
 * out the changes that observe_diff.c finds between it and the rows it
 * follows. It has no thread of its own, so the tool and the Python
 * binding drive it the same way.
 *
 * Between polls it sleeps, for the poll interval; on PostgreSQL it
 * LISTENs on the wake-up channel of every row it follows (the channels
 * lease_row.c's release notifies), so that a release ends the sleep and
 * is seen one round trip after its commit. A row seen for the first time
 * adds its channel, and a poll follows the LISTEN at once (a release
 * between the poll that found the row and the LISTEN was not heard).
 * The LISTENs go with a lost connection and are made again on the next.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "observe.h"

#define DEFAULT_INTERVAL_MS 1000

static const char *const change_names[] = {
    [SQLLOCK_CHANGE_HELD] = "held",
    [SQLLOCK_CHANGE_FREE] = "free",
    [SQLLOCK_CHANGE_ACQUIRED] = "acquired",
    [SQLLOCK_CHANGE_RELEASED] = "released",
    [SQLLOCK_CHANGE_EXPIRED] = "expired",
    [SQLLOCK_CHANGE_TAKEN_OVER] = "taken_over",
    [SQLLOCK_CHANGE_FORCE_RELEASED] = "force_released",
};

const char *sqllock_change_name(int type)
{
    if (type < SQLLOCK_CHANGE_HELD || type > SQLLOCK_CHANGE_FORCE_RELEASED)
        return "unknown";
    return change_names[type];
}

void sqllock__obs_channel(const char *name, char *out)
{
    char w[SQLLOCK__DERIVED_MAX + 1];
    const char *sep = strchr(name, SQLLOCK__SEP);

    /* A reader's row, BASE SEP "r" and 16 hex digits (core/rw.c). */
    if (sep != NULL && sep[1] == 'r' && strlen(sep + 1) == 17) {
        size_t n = (size_t)(sep - name) + 1;

        memcpy(w, name, n);
        w[n] = 'w';
        w[n + 1] = '\0';
        sqllock__wake_channel(w, out);
        return;
    }
    sqllock__wake_channel(name, out);
}

/* ---- the names -------------------------------------------------------- */

/* The names, as the JSON array LEASE_OBSERVE takes: checked lock names
 * have no control characters, so only '"' and '\' need escaping. */
static char *names_json(char *const *names, int n)
{
    size_t size = 3, len = 0;
    const char *p;
    char *json;
    int i;

    for (i = 0; i < n; i++)
        size += 2 * strlen(names[i]) + 3;
    json = malloc(size);
    if (json == NULL)
        return NULL;
    json[len++] = '[';
    for (i = 0; i < n; i++) {
        if (i > 0)
            json[len++] = ',';
        json[len++] = '"';
        for (p = names[i]; *p != '\0'; p++) {
            if (*p == '"' || *p == '\\')
                json[len++] = '\\';
            json[len++] = *p;
        }
        json[len++] = '"';
    }
    json[len++] = ']';
    json[len] = '\0';
    return json;
}

/* The caller's names: each a lock name, none twice. */
static int check_names(sqllock_db *db, const char *const *names, int n)
{
    int i, j, rc;

    if (names == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "sqllock_observer_new: the "
                             "array of names is NULL");
    if (n < 1 || n > SQLLOCK_OBSERVER_NAMES_MAX)
        return sqllock__fail(db, SQLLOCK_EINVAL, "sqllock_observer_new: %d "
                             "names; give 1 to %d", n,
                             SQLLOCK_OBSERVER_NAMES_MAX);
    for (i = 0; i < n; i++) {
        if ((rc = sqllock__check_name(db, names[i], "lock name")) !=
            SQLLOCK_OK)
            return rc;
        for (j = 0; j < i; j++)
            if (strcmp(names[i], names[j]) == 0)
                return sqllock__fail(db, SQLLOCK_EINVAL, "sqllock_observer_"
                                     "new: the name '%s' is given twice",
                                     names[i]);
    }
    return SQLLOCK_OK;
}

/* ---- wake-ups (PostgreSQL) --------------------------------------------- */

/* Adds the channel a release of the row `name` notifies: 1 when it is
 * new, 0 when known, -1 when out of memory. */
static int add_channel(sqllock_observer *o, const char *name)
{
    char ch[SQLLOCK__CHANNEL_MAX];
    int i;

    sqllock__obs_channel(name, ch);
    for (i = 0; i < o->nchans; i++)
        if (strcmp(o->chans[i], ch) == 0)
            return 0;
    if (o->nchans == o->capchans) {
        int cap = o->capchans > 0 ? o->capchans * 2 : 16;
        char (*grown)[SQLLOCK__CHANNEL_MAX] =
            realloc(o->chans, (size_t)cap * sizeof *grown);

        if (grown == NULL)
            return -1;
        o->chans = grown;
        o->capchans = cap;
    }
    memcpy(o->chans[o->nchans++], ch, sizeof ch);
    return 1;
}

/* LISTENs on the channels not yet listened to on this connection (all
 * of them after a new connect). Where the connection cannot LISTEN
 * (a pooler, a listener that failed) the observer polls from then on;
 * only a connection that cannot be had fails the poll. */
static int listen_more(sqllock_observer *o)
{
    sqllock_db *db = o->db;
    int rc;

    if (!o->notify)
        return SQLLOCK_OK;
    if (db->conn == NULL || o->listen_gen != db->conn_gen)
        o->listened = 0;
    while (o->listened < o->nchans) {
        rc = sqllock__listen(db, o->chans[o->listened], 1);
        if (rc == SQLLOCK_ECONNECT) {
            char why[SQLLOCK__ERRMSG_MAX];

            /* A connect that failed said why on the handle; a LISTEN
             * whose connection was lost leaves the message alone. */
            snprintf(why, sizeof why, "%s", db->errcode == SQLLOCK_ECONNECT
                     ? db->errmsg : "the connection was lost");
            o->listened = 0;
            return sqllock__fail(db, rc, "observing lock names: LISTEN: "
                                 "%s", why);
        }
        if (rc != SQLLOCK_OK) {
            o->notify = 0;
            return SQLLOCK_OK;
        }
        /* The first LISTEN may have connected. */
        if (o->listened == 0)
            o->listen_gen = db->conn_gen;
        o->listened++;
    }
    return SQLLOCK_OK;
}

/* Sleeps until `until_us`, or until a notification comes on a channel
 * listened to (*woke = 1). */
static void pause_until(sqllock_observer *o, int64_t until_us, int *woke)
{
    sqllock_db *db = o->db;

    *woke = 0;
    if (o->notify && o->listened > 0 && db->conn != NULL &&
        o->listen_gen == db->conn_gen) {
        if (sqllock__wait_notify(db, until_us, woke) == SQLLOCK_OK)
            return;
        /* The connection went, and its LISTENs with it: the next poll
         * connects and LISTENs again. */
        o->listened = 0;
        *woke = 0;
    }
    sqllock__sleep_until(until_us);
}

/* ---- the poll ----------------------------------------------------------- */

/* The index of the name the row `name` falls under (the name itself, or
 * NAME SEP TAG), or -1. */
static int watched_of(const sqllock_observer *o, const char *name)
{
    const char *sep = strchr(name, SQLLOCK__SEP);
    size_t n = sep != NULL ? (size_t)(sep - name) : strlen(name);
    int i;

    for (i = 0; i < o->n; i++)
        if (strlen(o->names[i]) == n && memcmp(o->names[i], name, n) == 0)
            return i;
    return -1;
}

/* Whether the observer reports a row's holds: not a kind marker (contract
 * N1: a name's kind, never a hold) nor a fair lock's waiter (a queue row,
 * tag "q": waiting is not holding). */
static int followed(const char *name, const char *owner)
{
    const char *sep = strchr(name, SQLLOCK__SEP);

    if (sqllock__kind_of_owner(owner) != SQLLOCK__KIND_PLAIN)
        return 0;
    return sep == NULL || sep[1] != 'q';
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const sqllock__obs_hold *)a)->name,
                  ((const sqllock__obs_hold *)b)->name);
}

/* Runs LEASE_OBSERVE into o->rows (sorted by name) and o->now_ms. */
static int read_rows(sqllock_observer *o)
{
    const char *what = "observing the lock names";
    sqllock_sql_id id = SQLLOCK_SQL_LEASE_OBSERVE;
    sqllock_db *db = o->db;
    sqllock_value arg = sqllock__text(o->json);
    sqllock_stmt *st;
    int rc, has_row = 0, got_now = 0;

    o->nrows = 0;
    rc = sqllock__run(db, id, &arg, 1, what);
    if (rc != SQLLOCK_OK)
        return rc;
    st = db->stmts[id];
    for (;;) {
        sqllock__obs_hold *r;
        const char *name;

        rc = sqllock__fetch(db, id, &has_row, what);
        if (rc != SQLLOCK_OK)
            return rc;
        if (!has_row)
            break;
        o->now_ms = db->drv->column_int64(st, 7);
        got_now = 1;
        name = db->drv->column_text(st, 0);
        if (name[0] == '\0' || strlen(name) > SQLLOCK__DERIVED_MAX ||
            !followed(name, db->drv->column_text(st, 1)))
            continue;           /* the row of the clock alone, or none of
                                   ours */
        if (o->nrows == o->caprows) {
            size_t cap = o->caprows > 0 ? o->caprows * 2 : 16;
            sqllock__obs_hold *grown = realloc(o->rows, cap * sizeof *grown);

            if (grown == NULL) {
                sqllock__end(db, id);
                return sqllock__fail(db, SQLLOCK_ENOMEM, "%s: out of memory",
                                     what);
            }
            o->rows = grown;
            o->caprows = cap;
        }
        r = &o->rows[o->nrows];
        memset(r, 0, sizeof *r);
        snprintf(r->name, sizeof r->name, "%s", name);
        snprintf(r->holder, sizeof r->holder, "%s",
                 db->drv->column_text(st, 2));
        r->watched = watched_of(o, r->name);
        r->token = db->drv->column_int64(st, 3);
        r->acquired_at_ms = db->drv->column_int64(st, 4);
        r->expires_at_ms = db->drv->column_int64(st, 5);
        r->remaining_ms = db->drv->column_int64(st, 6);
        if (r->watched >= 0)
            o->nrows++;
    }
    sqllock__end(db, id);
    if (!got_now)
        return sqllock__fail(db, SQLLOCK_EDB, "%s: the statement returned "
                             "no row (not even the server's clock)", what);
    if (o->nrows > 1)           /* never qsort(NULL, 0): UBSan */
        qsort(o->rows, o->nrows, sizeof *o->rows, by_name);
    return SQLLOCK_OK;
}

/* One poll: the LISTENs the connection lacks, the rows, the changes. The
 * next poll is due an interval later, or at once when a row brought a
 * channel that was not listened to yet. */
static int poll_once(sqllock_observer *o, int initial)
{
    sqllock_db *db = o->db;
    size_t i;
    int rc, fresh = 0;

    o->due_us = sqllock__now_us() + o->interval_ms * 1000;
    if (db->in_txn)
        return sqllock__fail(db, SQLLOCK_EMISUSE, "observing lock names: a "
                             "row-lock transaction is open on this handle; "
                             "use a handle of its own for the observer, or "
                             "end the transaction first");
    rc = listen_more(o);
    if (rc == SQLLOCK_OK)
        rc = read_rows(o);
    if (rc == SQLLOCK_OK)
        rc = sqllock__obs_diff(o, initial);
    if (rc != SQLLOCK_OK)
        return rc;
    if (o->notify) {
        for (i = 0; i < o->nholds; i++) {
            int added = add_channel(o, o->holds[i].name);

            if (added < 0)
                return sqllock__fail(db, SQLLOCK_ENOMEM, "observing lock "
                                     "names: out of memory");
            fresh |= added;
        }
        if (fresh) {
            rc = listen_more(o);
            if (rc != SQLLOCK_OK)
                return rc;
            if (o->notify)
                o->due_us = sqllock__now_us();
        }
    }
    return sqllock__ok(db);
}

/* ---- the calls ---------------------------------------------------------- */

void sqllock_observer_free(sqllock_observer *o)
{
    int i;

    if (o == NULL)
        return;
    /* UNLISTEN what this connection listens to for the observer (on a
     * connection that is there: never a connect for it). */
    if (o->notify && o->db->conn != NULL && o->listen_gen == o->db->conn_gen)
        for (i = 0; i < o->listened; i++)
            sqllock__listen(o->db, o->chans[i], 0);
    for (i = 0; i < o->n; i++)
        free(o->names[i]);
    free(o->names);
    free(o->json);
    free(o->chans);
    free(o->holds);
    free(o->rows);
    free(o->queue);
    free(o);
}

int sqllock_observer_new(sqllock_db *db, const char *const *names, int n,
                         const sqllock_observer_options *opts,
                         sqllock_observer **out)
{
    static const sqllock_observer_options defaults =
        SQLLOCK_OBSERVER_OPTIONS_INIT;
    sqllock_observer *o;
    int rc, i;

    if (out != NULL)
        *out = NULL;
    if ((rc = sqllock__check_db(db)) != SQLLOCK_OK)
        return rc;
    if (out == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "sqllock_observer_new: the "
                             "output pointer is NULL");
    if ((rc = check_names(db, names, n)) != SQLLOCK_OK)
        return rc;
    if (opts == NULL)
        opts = &defaults;
    if (opts->struct_version < 1)
        return sqllock__fail(db, SQLLOCK_EINVAL, "sqllock_observer_new: "
                             "options without a struct_version (use "
                             "SQLLOCK_OBSERVER_OPTIONS_INIT)");
    if (opts->interval_ms < 0 ||
        (opts->interval_ms > 0 &&
         opts->interval_ms < SQLLOCK_OBSERVER_INTERVAL_MIN_MS) ||
        opts->interval_ms > SQLLOCK__MAX_TIMEOUT_MS)
        return sqllock__fail(db, SQLLOCK_EINVAL, "sqllock_observer_new: the "
                             "poll interval must be at least %d ms, or 0 "
                             "for the default (got %lld ms)",
                             SQLLOCK_OBSERVER_INTERVAL_MIN_MS,
                             (long long)opts->interval_ms);
    if ((rc = sqllock__refuse_borrowed(db, "an observer")) != SQLLOCK_OK)
        return rc;
    if (sqllock__sql_of(db->drv, SQLLOCK_SQL_LEASE_OBSERVE) == NULL)
        return sqllock__fail(db, SQLLOCK_EUNSUPPORTED, "sqllock_observer_new: "
                             "the %s driver has no statement LEASE_OBSERVE "
                             "(it was built against an older "
                             "sqllock_driver.h)", db->drv->name);
    o = calloc(1, sizeof *o);
    if (o == NULL || (o->names = calloc((size_t)n, sizeof *o->names)) == NULL)
        goto nomem;
    o->db = db;
    o->n = n;
    for (i = 0; i < n; i++)
        if ((o->names[i] = malloc(strlen(names[i]) + 1)) == NULL)
            goto nomem;
        else
            strcpy(o->names[i], names[i]);
    if ((o->json = names_json(o->names, n)) == NULL)
        goto nomem;
    o->interval_ms = opts->interval_ms > 0 ? opts->interval_ms
                                           : DEFAULT_INTERVAL_MS;
    o->include_initial = opts->include_initial != 0;
    o->notify = sqllock__can_notify(db);
    if (o->notify)
        for (i = 0; i < n; i++)
            if (add_channel(o, o->names[i]) < 0)
                goto nomem;
    /* The state to start from, and the LISTENs before it, so that no
     * release after it goes unheard. */
    rc = poll_once(o, 1);
    if (rc != SQLLOCK_OK) {
        sqllock_observer_free(o);
        return rc;
    }
    *out = o;
    return sqllock__ok(db);
nomem:
    sqllock_observer_free(o);
    return sqllock__fail(db, SQLLOCK_ENOMEM, "sqllock_observer_new: out of "
                         "memory");
}

/* Hands out the oldest queued change: its texts move to o->cur, which
 * `out` then borrows. */
static void hand_out(sqllock_observer *o, sqllock_change *out)
{
    o->cur = o->queue[o->qhead++];
    if (o->qhead == o->qlen)
        o->qhead = o->qlen = 0;
    out->type = o->cur.type;
    out->name = o->cur.name;
    out->watched = o->names[o->cur.watched];
    out->token = o->cur.token;
    out->old_token = o->cur.old_token;
    out->holder = o->cur.holder;
    out->expires_at_ms = o->cur.expires_at_ms;
    out->seen_at_ms = o->cur.seen_at_ms;
    out->lag_ms = o->cur.lag_ms;
}

int sqllock_observer_next(sqllock_observer *o, sqllock_change *out,
                          int64_t timeout_ms)
{
    sqllock_db *db;
    int64_t deadline, now;
    int rc, woke;

    if (o == NULL)
        return SQLLOCK_EINVAL;
    db = o->db;
    if (out == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "sqllock_observer_next: "
                             "the output pointer is NULL");
    if (out->struct_version < 1)
        return sqllock__fail(db, SQLLOCK_EINVAL, "sqllock_observer_next: "
                             "the change has no struct_version (use "
                             "SQLLOCK_CHANGE_INIT)");
    if (timeout_ms < 0)
        return sqllock__fail(db, SQLLOCK_EINVAL, "sqllock_observer_next: "
                             "the timeout must not be negative (got %lld "
                             "ms)", (long long)timeout_ms);
    now = sqllock__now_us();
    deadline = timeout_ms >= SQLLOCK__MAX_TIMEOUT_MS ? INT64_MAX
                                                     : now + timeout_ms * 1000;
    for (;;) {
        if (o->qhead < o->qlen) {
            hand_out(o, out);
            return sqllock__ok(db);
        }
        now = sqllock__now_us();
        if (now >= o->due_us) {
            rc = poll_once(o, 0);
            if (rc != SQLLOCK_OK)
                return rc;
            continue;
        }
        if (now >= deadline)
            return sqllock__fail(db, SQLLOCK_TIMEOUT, "no change of the "
                                 "observed names within %lld ms",
                                 (long long)timeout_ms);
        pause_until(o, o->due_us < deadline ? o->due_us : deadline, &woke);
        if (woke)
            o->due_us = sqllock__now_us();
    }
}
