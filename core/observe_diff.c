/*
 * observe_diff.c -- what changed between two polls of an observer
 * (issue 31): the rows a poll read, held against the holds the observer
 * follows, each judged by the lease row and the server's clock alone.
 *
 * For one row name, from one poll to the next:
 *   no row, then a row          ACQUIRED (and EXPIRED too, if it has
 *                               expired already)
 *   a row, then none            FORCE_RELEASED when NAME's history has
 *                               a "force" line of its token (an
 *                               operator's release writes it in the
 *                               delete's transaction, DESIGN C5);
 *                               else RELEASED when the server's clock is
 *                               still before the expiry last seen; else
 *                               EXPIRED (nothing more when that was
 *                               reported already: the reaper took it)
 *   the same token              nothing (a renewal), or EXPIRED once
 *                               when the expiry has passed, or ACQUIRED
 *                               again when a late renewal made an
 *                               expired lease live again
 *   another token               the old hold's end as above -- judged
 *                               by the new grant's time: before the old
 *                               expiry, the old row was deleted first
 *                               (RELEASED), else it had expired -- then
 *                               ACQUIRED, or TAKEN_OVER after an expiry
 * The changes of a poll are queued in byte order of the row names.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "observe.h"

/* The history record of each name, read at most once per poll, and only
 * for a name one of whose holds ended. */
typedef struct hist {
    int loaded;
    char *value;
    size_t len;
} hist;

/* Reads the history of name `w` into h, unless it is there already. */
static int load_history(sqllock_observer *o, int w, hist *h)
{
    char key[SQLLOCK_NAME_MAX + 1];
    void *value = NULL;
    size_t len = 0;
    int rc;

    if (h->loaded)
        return SQLLOCK_OK;
    sqllock_history_key(o->names[w], key, sizeof key);
    rc = sqllock_record_get(o->db, key, &value, &len, NULL);
    if (rc == SQLLOCK_NOTFOUND)
        rc = SQLLOCK_OK;
    if (rc != SQLLOCK_OK)
        return rc;
    h->loaded = 1;
    h->value = value;
    h->len = len;
    return SQLLOCK_OK;
}

/* 1 when the history has the audit line of a forced release of `token`:
 * "force" TAB token TAB ... at the start of a line (core/history.c). */
static int forced(const hist *h, int64_t token)
{
    char head[40];
    const char *p = h->value, *end = p != NULL ? p + h->len : NULL;
    size_t n;

    n = (size_t)snprintf(head, sizeof head, "force\t%" PRId64 "\t", token);
    while (p != NULL && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));

        if ((size_t)(end - p) > n && memcmp(p, head, n) == 0)
            return 1;
        p = nl != NULL ? nl + 1 : end;
    }
    return 0;
}

/* The row `name` as `sqllock list` shows it: "BASE [TAG]". */
static void shown_name(const char *name, char *out, size_t size)
{
    const char *sep = strchr(name, SQLLOCK__SEP);

    if (sep == NULL)
        snprintf(out, size, "%s", name);
    else
        snprintf(out, size, "%.*s [%s]", (int)(sep - name), name, sep + 1);
}

static int64_t at_least_0(int64_t v)
{
    return v > 0 ? v : 0;
}

/* Queues a change of the hold `h` (for its name, holder and token). */
static int emit(sqllock_observer *o, int type, const sqllock__obs_hold *h,
                int64_t old_token, int64_t lag_ms)
{
    sqllock__obs_change *c;

    if (o->qlen == o->qcap) {
        size_t cap = o->qcap > 0 ? o->qcap * 2 : 16;
        sqllock__obs_change *grown = realloc(o->queue, cap * sizeof *grown);

        if (grown == NULL)
            return sqllock__fail(o->db, SQLLOCK_ENOMEM, "observing lock "
                                 "names: out of memory");
        o->queue = grown;
        o->qcap = cap;
    }
    c = &o->queue[o->qlen++];
    memset(c, 0, sizeof *c);
    c->type = type;
    c->watched = h->watched;
    shown_name(h->name, c->name, sizeof c->name);
    snprintf(c->holder, sizeof c->holder, "%s", h->holder);
    c->token = h->token;
    c->old_token = old_token;
    c->expires_at_ms = h->expires_at_ms;
    c->seen_at_ms = o->now_ms;
    c->lag_ms = at_least_0(lag_ms);
    return SQLLOCK_OK;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const sqllock__obs_hold *)a)->name,
                  ((const sqllock__obs_hold *)b)->name);
}

/* The row of the hold `h` in the poll's rows (sorted), or NULL. */
static const sqllock__obs_hold *row_of(const sqllock_observer *o,
                                       const sqllock__obs_hold *h)
{
    return bsearch(h, o->rows, o->nrows, sizeof *o->rows, by_name);
}

/* The end of the followed hold `h`, whose row is gone (`r` NULL) or
 * holds another token (`r`): its change, if any. *expired_first says
 * whether the hold had expired before it ended (so that a new grant is a
 * takeover). */
static int hold_ended(sqllock_observer *o, const sqllock__obs_hold *h,
                      const sqllock__obs_hold *r, const hist *hs,
                      int *expired_first)
{
    int64_t when = r != NULL ? r->acquired_at_ms : o->now_ms;

    *expired_first = 0;
    if (forced(&hs[h->watched], h->token))
        return emit(o, SQLLOCK_CHANGE_FORCE_RELEASED, h, 0,
                    o->now_ms - h->seen_ms);
    if (h->expired) {
        *expired_first = 1;
        return SQLLOCK_OK;      /* reported; reaped or taken over since */
    }
    if (when < h->expires_at_ms)
        return emit(o, SQLLOCK_CHANGE_RELEASED, h, 0, o->now_ms - h->seen_ms);
    *expired_first = 1;
    return emit(o, SQLLOCK_CHANGE_EXPIRED, h, 0, o->now_ms - h->expires_at_ms);
}

/* A grant seen for the first time in the row `r`: ACQUIRED, or TAKEN_OVER
 * of `old_token` (0: none); then EXPIRED if it has already. */
static int granted(sqllock_observer *o, sqllock__obs_hold *r,
                   int64_t old_token)
{
    int rc = emit(o, old_token != 0 ? SQLLOCK_CHANGE_TAKEN_OVER
                                    : SQLLOCK_CHANGE_ACQUIRED, r, old_token,
                  o->now_ms - r->acquired_at_ms);

    if (rc == SQLLOCK_OK && r->remaining_ms <= 0) {
        r->expired = 1;
        rc = emit(o, SQLLOCK_CHANGE_EXPIRED, r, 0,
                  o->now_ms - r->expires_at_ms);
    }
    return rc;
}

/* The same row, from the followed hold `h` to the row `r` (which then
 * replaces it). */
static int compare(sqllock_observer *o, const sqllock__obs_hold *h,
                   sqllock__obs_hold *r, const hist *hs)
{
    int expired_first, rc;

    if (r->token == h->token) {
        r->expired = h->expired;
        if (h->expired && r->remaining_ms > 0) {
            /* Renewed after its expiry, no one having taken it over: by
             * the server's clock it was free meanwhile, and is held
             * again. */
            r->expired = 0;
            return emit(o, SQLLOCK_CHANGE_ACQUIRED, r, 0,
                        o->now_ms - h->seen_ms);
        }
        if (!h->expired && r->remaining_ms <= 0) {
            r->expired = 1;
            return emit(o, SQLLOCK_CHANGE_EXPIRED, r, 0,
                        o->now_ms - r->expires_at_ms);
        }
        return SQLLOCK_OK;      /* nothing, or a renewal */
    }
    rc = hold_ended(o, h, r, hs, &expired_first);
    if (rc != SQLLOCK_OK)
        return rc;
    return granted(o, r, expired_first ? h->token : 0);
}

/* The state the observer starts from: HELD for each live row, FREE for a
 * name without one, in the order the names were given. */
static int initial_state(sqllock_observer *o)
{
    sqllock__obs_hold free_row;
    size_t i;
    int w, rc, any;

    for (w = 0; w < o->n; w++) {
        any = 0;
        for (i = 0; i < o->nholds; i++) {
            if (o->holds[i].watched != w || o->holds[i].expired)
                continue;
            any = 1;
            if ((rc = emit(o, SQLLOCK_CHANGE_HELD, &o->holds[i], 0, 0)) !=
                SQLLOCK_OK)
                return rc;
        }
        if (any)
            continue;
        memset(&free_row, 0, sizeof free_row);
        snprintf(free_row.name, sizeof free_row.name, "%s", o->names[w]);
        free_row.watched = w;
        if ((rc = emit(o, SQLLOCK_CHANGE_FREE, &free_row, 0, 0)) !=
            SQLLOCK_OK)
            return rc;
    }
    return SQLLOCK_OK;
}

/* Reads the histories the poll needs: those of the names with a
 * followed hold whose row is gone or has another token. */
static int load_needed(sqllock_observer *o, hist *hs)
{
    const sqllock__obs_hold *r;
    size_t i;
    int rc;

    for (i = 0; i < o->nholds; i++) {
        r = row_of(o, &o->holds[i]);
        if (r != NULL && r->token == o->holds[i].token)
            continue;
        rc = load_history(o, o->holds[i].watched, &hs[o->holds[i].watched]);
        if (rc != SQLLOCK_OK)
            return rc;
    }
    return SQLLOCK_OK;
}

int sqllock__obs_diff(sqllock_observer *o, int initial)
{
    sqllock__obs_hold *next;
    size_t i = 0, j = 0, k = 0, queued = o->qlen;
    hist *hs;
    int rc = SQLLOCK_OK, w;

    hs = calloc((size_t)o->n, sizeof *hs);
    next = malloc((o->nholds + o->nrows + 1) * sizeof *next);
    if (hs == NULL || next == NULL) {
        free(hs);
        free(next);
        return sqllock__fail(o->db, SQLLOCK_ENOMEM, "observing lock names: "
                             "out of memory");
    }
    if (!initial)
        rc = load_needed(o, hs);
    /* Both lists in byte order of the names: a merge. */
    while (rc == SQLLOCK_OK && (i < o->nholds || j < o->nrows)) {
        int cmp = i == o->nholds ? 1 : j == o->nrows ? -1
                  : strcmp(o->holds[i].name, o->rows[j].name);

        if (cmp < 0) {
            int expired_first;

            rc = hold_ended(o, &o->holds[i++], NULL, hs, &expired_first);
            continue;
        }
        next[k] = o->rows[j++];
        next[k].seen_ms = o->now_ms;
        if (initial)
            next[k].expired = next[k].remaining_ms <= 0;
        else if (cmp > 0)
            rc = granted(o, &next[k], 0);
        else
            rc = compare(o, &o->holds[i++], &next[k], hs);
        k++;
    }
    for (w = 0; w < o->n; w++)
        sqllock_free(hs[w].value);
    free(hs);
    if (rc != SQLLOCK_OK) {
        /* Nothing of this poll counts: its changes go, and the holds
         * stay as they were, for the next poll to compare again. */
        free(next);
        o->qlen = queued;
        if (o->qhead == o->qlen)
            o->qhead = o->qlen = 0;
        return rc;
    }
    free(o->holds);
    o->holds = next;
    o->nholds = k;
    if (initial && o->include_initial)
        return initial_state(o);
    return SQLLOCK_OK;
}
