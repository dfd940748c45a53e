/*
 * check.c -- what the core takes from the caller, checked before anything
 * is sent: the handle, lock names (and the derived names a primitive
 * keeps its rows under), the identifiers of the application's tables and
 * the versions of versioned rows.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

int sqllock__check_name(sqllock_db *db, const char *name, const char *what)
{
    size_t len;

    if (name == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the %s is NULL", what);
    len = strlen(name);
    if (len == 0)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the %s is empty", what);
    if (len > SQLLOCK_NAME_MAX)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the %s is %zu bytes "
                             "long; the limit is %d bytes", what, len,
                             SQLLOCK_NAME_MAX);
    if (!sqllock__name_ok(name, len))
        return sqllock__fail(db, SQLLOCK_EINVAL, "the %s is not valid "
                             "UTF-8 or has control characters", what);
    return SQLLOCK_OK;
}

int sqllock__derived_name(sqllock_db *db, char *out, const char *base,
                          const char *tag, const char *what)
{
    size_t blen, tlen, i;
    int rc;

    if ((rc = sqllock__check_name(db, base, what)) != SQLLOCK_OK)
        return rc;
    blen = strlen(base);
    if (blen > SQLLOCK_PRIMITIVE_NAME_MAX)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the %s is %zu bytes long; "
                             "the limit is %d bytes (SQLLOCK_PRIMITIVE_NAME_MAX)",
                             what, blen, SQLLOCK_PRIMITIVE_NAME_MAX);
    tlen = tag != NULL ? strlen(tag) : 0;
    if (tlen > SQLLOCK__TAG_MAX)
        return sqllock__fail(db, SQLLOCK_EINVAL, "derived name tag too "
                             "long");
    for (i = 0; i < tlen; i++)
        if (tag[i] < 0x21 || tag[i] > 0x7e)
            return sqllock__fail(db, SQLLOCK_EINVAL, "derived name tag "
                                 "not printable");
    memcpy(out, base, blen);
    out[blen] = SQLLOCK__SEP;
    if (tlen > 0)
        memcpy(out + blen + 1, tag, tlen);
    out[blen + 1 + tlen] = '\0';
    return SQLLOCK_OK;
}

void sqllock__derived_range(const char *base, char *lo, char *hi)
{
    size_t blen = strlen(base);

    memcpy(lo, base, blen);
    lo[blen] = SQLLOCK__SEP;
    lo[blen + 1] = '\0';
    memcpy(hi, base, blen);
    hi[blen] = ' ';             /* the byte after the separator */
    hi[blen + 1] = '\0';
}

/* [A-Za-z_][A-Za-z0-9_]*, 1..SQLLOCK__IDENT_MAX bytes, over s[0..len). */
static int ident_ok(const char *s, size_t len)
{
    size_t i;

    if (len == 0 || len > SQLLOCK__IDENT_MAX)
        return 0;
    for (i = 0; i < len; i++) {
        char c = s[i];
        int alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    c == '_';
        if (!alpha && !(i > 0 && c >= '0' && c <= '9'))
            return 0;
    }
    return 1;
}

int sqllock__check_ident(sqllock_db *db, const char *s, int qualified,
                        const char *what)
{
    const char *dot;

    if (s == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the %s is NULL", what);
    dot = qualified ? strchr(s, '.') : NULL;
    if (dot != NULL ? (ident_ok(s, (size_t)(dot - s)) &&
                       ident_ok(dot + 1, strlen(dot + 1)))
                    : ident_ok(s, strlen(s)))
        return SQLLOCK_OK;
    return sqllock__fail(db, SQLLOCK_EINVAL, "the %s '%.80s%s' is not a valid "
                         "identifier: use [A-Za-z_][A-Za-z0-9_]*, at most %d "
                         "characters%s", what, s, strlen(s) > 80 ? "..." : "",
                         SQLLOCK__IDENT_MAX,
                         qualified ? ", optionally schema.table" : "");
}

int sqllock__check_db(sqllock_db *db)
{
    if (db == NULL)
        return SQLLOCK_EINVAL;
    if (db->drv == NULL)
        return sqllock__fail(db, SQLLOCK_EMISUSE, "the handle has no driver "
                             "(its open failed)");
    return SQLLOCK_OK;
}

int sqllock__check_version(sqllock_db *db, int64_t expected)
{
    if (expected < 1)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the expected version must "
                             "be positive (got %lld)", (long long)expected);
    if (expected == INT64_MAX)
        return sqllock__fail(db, SQLLOCK_EINVAL, "version overflow: the "
                             "record is at the largest version");
    return SQLLOCK_OK;
}
