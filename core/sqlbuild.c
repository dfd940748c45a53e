/*
 * sqlbuild.c -- SQL text on the application's tables, built at run time
 * from identifiers check.c has validated, quoted as the dialect quotes
 * them, with the dialect's placeholders; every value is bound, never
 * pasted (contract D3).
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

void sqllock__sb_add(sqllock__sqlbuf *b, const char *s)
{
    size_t n = strlen(s);

    if (b->len + n >= sizeof b->text) {
        b->overflow = 1;
        return;
    }
    memcpy(b->text + b->len, s, n + 1);
    b->len += n;
}

/* Appends a validated identifier, quoted; "schema.table" becomes
 * "schema"."table". */
void sqllock__sb_ident(sqllock__sqlbuf *b, const char *ident)
{
    char q[2] = { b->d->ident_quote ? b->d->ident_quote : '"', '\0' };
    const char *dot = strchr(ident, '.');
    char part[SQLLOCK__IDENT_MAX + 1];

    if (dot != NULL) {
        memcpy(part, ident, (size_t)(dot - ident));
        part[dot - ident] = '\0';
        sqllock__sb_add(b, q);
        sqllock__sb_add(b, part);
        sqllock__sb_add(b, q);
        sqllock__sb_add(b, ".");
        ident = dot + 1;
    }
    sqllock__sb_add(b, q);
    sqllock__sb_add(b, ident);
    sqllock__sb_add(b, q);
}

void sqllock__sb_placeholder(sqllock__sqlbuf *b)
{
    char ph[16];

    b->nph++;
    if (b->d->placeholder == SQLLOCK_PLACEHOLDER_DOLLAR)
        snprintf(ph, sizeof ph, "$%d", b->nph);
    else
        snprintf(ph, sizeof ph, "?");
    sqllock__sb_add(b, ph);
}

int sqllock__sql_select_key(sqllock_db *db, const sqllock_table *t,
                            const char *suffix, char *out, size_t size)
{
    sqllock__sqlbuf b;

    memset(&b, 0, sizeof b);
    b.d = db->drv->dialect;
    sqllock__sb_add(&b, "SELECT ");
    sqllock__sb_ident(&b, t->key_column);
    sqllock__sb_add(&b, " FROM ");
    sqllock__sb_ident(&b, t->table);
    sqllock__sb_add(&b, " WHERE ");
    sqllock__sb_ident(&b, t->key_column);
    sqllock__sb_add(&b, " = ");
    sqllock__sb_placeholder(&b);
    sqllock__sb_add(&b, suffix != NULL ? suffix : "");
    if (b.overflow || b.len >= size)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the statement would be "
                             "longer than %zu bytes", size);
    memcpy(out, b.text, b.len + 1);
    return SQLLOCK_OK;
}
