/*
 * rows.c -- reading the lease table: sqllock_list(), the rows under one
 * name (LEASE_RANGE), and the row of exactly one name.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* Runs LEASE_LIST or LEASE_RANGE and hands each row to `cb` until it
 * returns non-zero (then returned). */
static int lease_rows(sqllock_db *db, sqllock_sql_id id,
                      const sqllock_value *args, int nargs,
                      int (*cb)(void *ctx, const sqllock_lease_info *),
                      void *ctx, const char *what)
{
    sqllock_stmt *st;
    int rc, has_row = 0, stop = 0;

    rc = sqllock__run(db, id, args, nargs, what);
    if (rc != SQLLOCK_OK)
        return rc;
    st = db->stmts[id];
    for (;;) {
        sqllock_lease_info info;

        rc = sqllock__fetch(db, id, &has_row, what);
        if (rc != SQLLOCK_OK)
            return rc;
        if (!has_row)
            break;
        info.name = db->drv->column_text(st, 0);
        info.owner = db->drv->column_text(st, 1);
        info.holder = db->drv->column_text(st, 2);
        info.token = db->drv->column_int64(st, 3);
        info.acquired_at_ms = db->drv->column_int64(st, 4);
        info.expires_at_ms = db->drv->column_int64(st, 5);
        info.remaining_ms = db->drv->column_int64(st, 6);
        stop = cb(ctx, &info);
        if (stop != 0)
            break;
    }
    sqllock__end(db, id);
    sqllock__ok(db);
    return stop;
}

int sqllock_list(sqllock_db *db,
                 int (*cb)(void *ctx, const sqllock_lease_info *), void *ctx)
{
    int rc;

    if (db == NULL)
        return SQLLOCK_EINVAL;
    if (cb == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "sqllock_list: the callback "
                             "is NULL");
    if ((rc = sqllock__refuse_borrowed(db, "sqllock_list")) != SQLLOCK_OK)
        return rc;
    return lease_rows(db, SQLLOCK_SQL_LEASE_LIST, NULL, 0, cb, ctx,
                      "listing leases");
}

int sqllock__lease_range(sqllock_db *db, const char *lo, const char *hi,
                         int (*cb)(void *ctx, const sqllock_lease_info *),
                         void *ctx, const char *what)
{
    sqllock_value args[2];
    int rc;

    if ((rc = sqllock__refuse_borrowed(db, what)) != SQLLOCK_OK)
        return rc;
    args[0] = sqllock__text(lo);
    args[1] = sqllock__text(hi);
    return lease_rows(db, SQLLOCK_SQL_LEASE_RANGE, args, 2, cb, ctx, what);
}

typedef struct get_ctx {
    const char *name;
    sqllock_lease_info *info;
    char *buf;          /* owner, holder (copied: the row's texts end with
                           the statement) */
    int found;
} get_ctx;

static int get_row(void *ctx, const sqllock_lease_info *in)
{
    get_ctx *g = ctx;

    if (strcmp(in->name, g->name) != 0)
        return 0;
    *g->info = *in;
    g->info->name = g->name;
    snprintf(g->buf, SQLLOCK_OWNER_LEN + 1, "%s", in->owner);
    snprintf(g->buf + SQLLOCK_OWNER_LEN + 1, SQLLOCK_HOLDER_MAX + 1, "%s",
             in->holder);
    g->info->owner = g->buf;
    g->info->holder = g->buf + SQLLOCK_OWNER_LEN + 1;
    g->found = 1;
    return -1;          /* no status: told apart from an error's */
}

int sqllock__lease_get(sqllock_db *db, const char *name,
                       sqllock_lease_info *info,
                       char buf[SQLLOCK__LEASE_GET_BUF], int *found,
                       const char *what)
{
    char hi[SQLLOCK__DERIVED_MAX + 2];
    get_ctx g;
    int rc;
    size_t len = strlen(name);

    *found = 0;
    if (len > SQLLOCK__DERIVED_MAX)
        return sqllock__fail(db, SQLLOCK_EINVAL, "%s: the name is too long",
                             what);
    memcpy(hi, name, len);
    hi[len] = '\x01';        /* names have no control characters */
    hi[len + 1] = '\0';
    memset(info, 0, sizeof *info);
    g.name = name;
    g.info = info;
    g.buf = buf;
    g.found = 0;
    rc = sqllock__lease_range(db, name, hi, get_row, &g, what);
    if (rc > 0)
        return rc;      /* the statement failed: not "no row" */
    *found = g.found;
    return sqllock__ok(db);
}

/* The row that `typed` names as sqllock list shows a primitive's row,
 * "BASE [TAG]" (BASE 0x1f TAG), into `row`: 1 when it has that form (a
 * tag of printable ASCII without ']', not a kind marker's "kind:..."),
 * else 0. */
static int display_row(const char *typed, char *row)
{
    const char *open = NULL, *p;
    size_t tlen = strlen(typed), blen, taglen, i;

    if (tlen < 5 || typed[tlen - 1] != ']')
        return 0;
    for (p = typed; (p = strstr(p, " [")) != NULL; p++)
        open = p;
    if (open == NULL || open == typed)
        return 0;
    blen = (size_t)(open - typed);
    taglen = tlen - blen - 3;
    if (taglen == 0 || blen + 1 + taglen > SQLLOCK__DERIVED_MAX ||
        strncmp(open + 2, "kind:", 5) == 0)
        return 0;
    for (i = 0; i < taglen; i++)
        if (open[2 + i] < 0x21 || open[2 + i] > 0x7e || open[2 + i] == ']')
            return 0;
    memcpy(row, typed, blen);
    row[blen] = SQLLOCK__SEP;
    memcpy(row + blen + 1, open + 2, taglen);
    row[blen + 1 + taglen] = '\0';
    return 1;
}

int sqllock_lease_lookup(sqllock_db *db, const char *name,
                         int (*cb)(void *ctx, const sqllock_lease_info *),
                         void *ctx)
{
    char buf[SQLLOCK__LEASE_GET_BUF], row[SQLLOCK__DERIVED_MAX + 1];
    sqllock_lease_info info;
    int found = 0, rc;

    if (db == NULL)
        return SQLLOCK_EINVAL;
    if (cb == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "sqllock_lease_lookup: the "
                             "callback is NULL");
    if (name == NULL || name[0] == '\0')
        return sqllock__fail(db, SQLLOCK_EINVAL, "sqllock_lease_lookup: the "
                             "name is %s", name == NULL ? "NULL" : "empty");
    rc = sqllock__lease_get(db, name, &info, buf, &found,
                            "looking up a lease");
    if (rc == SQLLOCK_OK && !found && display_row(name, row))
        rc = sqllock__lease_get(db, row, &info, buf, &found,
                                "looking up a lease");
    if (rc != SQLLOCK_OK)
        return rc;
    if (!found)
        return sqllock__fail(db, SQLLOCK_NOTFOUND, "no lease row '%s'",
                             name);
    cb(ctx, &info);
    return sqllock__ok(db);
}
