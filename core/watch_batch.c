/*
 * watch_batch.c -- one renewal of the watchdog's batch (DESIGN L6, L7):
 * the leases due together, renewed in one statement per durability
 * (LEASE_RENEW_MANY, whose one bound argument is a JSON array of [name,
 * owner, token, ttl_ms] built here), the statement's answer read back as
 * which leases it renewed (RETURNING, or LEASE_RENEWED_MANY on the same
 * connection); or, without the batch statements, one LEASE_RENEW per
 * lease, each timed from its own send. What each outcome means for its
 * lease is watch.c's (settle()).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "renewer.h"

static int json_put(struct sqllock__renewer *r, const char *s, size_t len)
{
    if (r->json_len + len + 1 > r->json_cap) {
        size_t cap = r->json_cap ? r->json_cap : 4096;
        char *p;
        while (cap < r->json_len + len + 1)
            cap *= 2;
        p = realloc(r->json, cap);
        if (p == NULL)
            return -1;
        r->json = p;
        r->json_cap = cap;
    }
    memcpy(r->json + r->json_len, s, len);
    r->json_len += len;
    r->json[r->json_len] = '\0';
    return 0;
}

/* A JSON string. Names are valid UTF-8 and owners hexadecimal; a
 * user's name has no control characters (sqllock__name_ok), but a
 * derived name (internal.h) has its separator 0x1f, which JSON wants
 * written as \u001f. */
static int json_str(struct sqllock__renewer *r, const char *s, size_t len)
{
    char esc[8];
    size_t i, from = 0;

    if (json_put(r, "\"", 1) != 0)
        return -1;
    for (i = 0; i < len; i++)
        if ((unsigned char)s[i] < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", (unsigned char)s[i]);
            if (json_put(r, s + from, i - from) != 0 ||
                json_put(r, esc, 6) != 0)
                return -1;
            from = i + 1;
        } else if (s[i] == '"' || s[i] == '\\') {
            if (json_put(r, s + from, i - from) != 0 ||
                json_put(r, "\\", 1) != 0)
                return -1;
            from = i;
        }
    if (json_put(r, s + from, len - from) != 0)
        return -1;
    return json_put(r, "\"", 1);
}

/* 1 when a and b renew the same row: one grant (name and token) of one
 * owner, watched through two handles (sqllock_lease_attach()). */
static int same_row(const watch_entry *a, const watch_entry *b)
{
    return a->token == b->token && strcmp(a->name, b->name) == 0 &&
           strcmp(a->owner, b->owner) == 0;
}

/* [[name, owner, token, ttl_ms], ...] of v[0..n), sorted by cmp_entry():
 * a row watched more than once goes once, with the longest of their
 * ttls (each entry's local deadline still counts its own, never
 * longer). An element twice would match the row twice, and the UPDATE
 * renews a row once: the second would read as not renewed (LOST).
 * *sent counts the elements. */
static int build_json(struct sqllock__renewer *r, watch_entry **v, size_t n,
                      size_t *sent)
{
    char num[64];
    size_t i, j;
    int64_t ttl;
    int len;

    r->json_len = 0;
    *sent = 0;
    if (json_put(r, "[", 1) != 0)
        return -1;
    for (i = 0; i < n; i = j) {
        ttl = v[i]->ttl_ms;
        for (j = i + 1; j < n && same_row(v[i], v[j]); j++)
            if (v[j]->ttl_ms > ttl)
                ttl = v[j]->ttl_ms;
        if (json_put(r, i ? ",[" : "[", i ? 2 : 1) != 0 ||
            json_str(r, v[i]->name, v[i]->name_len) != 0 ||
            json_put(r, ",", 1) != 0 ||
            json_str(r, v[i]->owner, strlen(v[i]->owner)) != 0)
            return -1;
        len = snprintf(num, sizeof num, ",%lld,%lld]",
                       (long long)v[i]->token, (long long)ttl);
        if (json_put(r, num, (size_t)len) != 0)
            return -1;
        (*sent)++;
    }
    return json_put(r, "]", 1);
}

/* Orders a batch by (token, name), to find a returned row's lease. */
static int cmp_entry(const void *a, const void *b)
{
    const watch_entry *x = *(watch_entry *const *)a;
    const watch_entry *y = *(watch_entry *const *)b;

    if (x->token != y->token)
        return x->token < y->token ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Marks the leases of v[0..n) that a returned (name, token) names:
 * every entry of that row (it may be watched more than once). */
static void mark_renewed(watch_entry **v, size_t n, const char *name,
                         int64_t token)
{
    size_t lo = 0, hi = n, i;

    if (name == NULL)
        return;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = v[mid]->token < token ? -1 : v[mid]->token > token ? 1
                : strcmp(v[mid]->name, name);
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* lo: the first entry not before (token, name). */
    for (i = lo; i < n && v[i]->token == token &&
                 strcmp(v[i]->name, name) == 0; i++)
        v[i]->renewed = 1;
}

/* Reads the rows (name, token) of statement `id` into the batch's marks. */
static int read_renewed(sqllock_db *db, sqllock_sql_id id, watch_entry **v,
                        size_t n)
{
    int rc, has_row;

    for (;;) {
        rc = sqllock__fetch(db, id, &has_row, "renewing leases");
        if (rc != SQLLOCK_OK)
            return rc;
        if (!has_row)
            break;
        mark_renewed(v, n, db->drv->column_text(db->stmts[id], 0),
                     db->drv->column_int64(db->stmts[id], 1));
    }
    sqllock__end(db, id);
    return SQLLOCK_OK;
}

/* Whether this connection's driver renews a batch of `fast` leases in one
 * statement. */
static int can_batch(sqllock_db *db, int fast)
{
    const sqllock_sql *many, *renewed;

    if (db->drv == NULL)
        return 0;
    many = sqllock__sql_of(db->drv, fast ? SQLLOCK_SQL_LEASE_RENEW_MANY_FAST
                                         : SQLLOCK_SQL_LEASE_RENEW_MANY);
    if (many == NULL)
        return 0;
    if (db->drv->caps & SQLLOCK_CAP_RETURNING)
        return 1;
    renewed = sqllock__sql_of(db->drv, SQLLOCK_SQL_LEASE_RENEWED_MANY);
    return renewed != NULL;
}

void sqllock__watch_renew_group(struct sqllock__renewer *r, watch_entry **v,
                                size_t n, int fast, char *msg)
{
    sqllock_db *db = r->db;
    sqllock_sql_id id = fast ? SQLLOCK_SQL_LEASE_RENEW_MANY_FAST
                             : SQLLOCK_SQL_LEASE_RENEW_MANY;
    sqllock_value arg;
    int64_t sent_us, affected;
    size_t i, sent = 0;
    int rc;

    if (n == 0)
        return;
    if (!can_batch(db, fast)) {
        /* One LEASE_RENEW per lease, each timed from its own send. */
        for (i = 0; i < n; i++) {
            affected = 0;
            v[i]->sent_us = sqllock__now_us();
            rc = sqllock__lease_renew_raw(db, v[i]->name, v[i]->owner,
                                          v[i]->token, v[i]->ttl_ms,
                                          v[i]->fast, &affected);
            v[i]->rc = rc;
            v[i]->renewed = rc == SQLLOCK_OK && affected > 0;
            if (rc != SQLLOCK_OK)
                memcpy(msg, sqllock_errmsg(db), SQLLOCK__ERRMSG_MAX);
        }
        return;
    }
    qsort(v, n, sizeof *v, cmp_entry);
    for (i = 0; i < n; i++)
        v[i]->renewed = 0;
    if (build_json(r, v, n, &sent) != 0) {
        rc = sqllock__fail(db, SQLLOCK_ENOMEM, "out of memory");
        sent_us = sqllock__now_us();
    } else {
        arg = sqllock__text(r->json);
        arg.len = r->json_len;
        sent_us = sqllock__now_us();
        rc = sqllock__run(db, id, &arg, 1, "renewing leases");
        if (rc == SQLLOCK_OK && (db->drv->caps & SQLLOCK_CAP_RETURNING)) {
            rc = read_renewed(db, id, v, n);
        } else if (rc == SQLLOCK_OK) {
            /* Each element names a different row (a name's grant has one
             * token, and a row watched twice goes once), and each row the
             * UPDATE matched counts 1 (its expiry always changes): as
             * many affected rows as elements means all were renewed, and
             * the SELECT is needed only when some were not. */
            affected = db->drv->affected_rows(db->stmts[id]);
            sqllock__end(db, id);
            if (affected == (int64_t)sent) {
                for (i = 0; i < n; i++)
                    v[i]->renewed = 1;
            } else {
                rc = sqllock__run(db, SQLLOCK_SQL_LEASE_RENEWED_MANY, &arg, 1,
                                  "reading which leases were renewed");
                if (rc == SQLLOCK_OK)
                    rc = read_renewed(db, SQLLOCK_SQL_LEASE_RENEWED_MANY, v,
                                      n);
            }
        }
    }
    if (rc != SQLLOCK_OK)
        memcpy(msg, sqllock_errmsg(db), SQLLOCK__ERRMSG_MAX);
    for (i = 0; i < n; i++) {
        v[i]->rc = rc;
        v[i]->sent_us = sent_us;
        if (rc != SQLLOCK_OK)
            v[i]->renewed = 0;
    }
}
