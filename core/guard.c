/*
 * guard.c -- the text that guards the application's own writes (DESIGN
 * G1).
 *
 * A guard is a boolean SQL expression that an application puts in the
 * WHERE of its own write: true while the lease (name, token) is held by
 * the server's clock at the time it is evaluated, and it keeps the lease
 * row from being taken over until the write's transaction ends. Its text
 * is each dialect's LEASE_GUARD (in the driver's SQL
 * file, DESIGN D1); the core only rewrites its placeholders into the
 * style of the application's client library; table.c puts it into the
 * UPDATE of sqllock_table_guarded_update(). No value is ever pasted into
 * the text (D3): the application binds the name and the token.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* PostgreSQL takes at most 65535 parameters in one statement. */
#define FIRST_MAX 65534
/* The longest guard text the core writes, with its NUL. */
#define GUARD_TEXT_MAX 4096

/* A text being written into out[size]; `len` counts what the whole text
 * needs, also past the end. */
typedef struct gbuf {
    char *out;
    size_t size;
    size_t len;
} gbuf;

static void put(gbuf *g, const char *s, size_t n)
{
    if (g->len < g->size)
        memcpy(g->out + g->len, s,
               n < g->size - g->len ? n : g->size - g->len);
    g->len += n;
}

/* The placeholder of core argument `arg` (1 name, 2 token) in `style`. */
static void put_placeholder(gbuf *g, int style, int first, int arg)
{
    static const char *const names[] = { "sqllock_name", "sqllock_token" };
    char ph[40];

    switch (style) {
    case SQLLOCK_PARAM_QMARK:
        snprintf(ph, sizeof ph, "?");
        break;
    case SQLLOCK_PARAM_DOLLAR:
        snprintf(ph, sizeof ph, "$%d", first + arg - 1);
        break;
    case SQLLOCK_PARAM_FORMAT:
        snprintf(ph, sizeof ph, "%%s");
        break;
    case SQLLOCK_PARAM_PYFORMAT:
        snprintf(ph, sizeof ph, "%%(%s)s", names[arg - 1]);
        break;
    case SQLLOCK_PARAM_NAMED:
        snprintf(ph, sizeof ph, ":%s", names[arg - 1]);
        break;
    default: /* SQLLOCK_PARAM_NUMERIC */
        snprintf(ph, sizeof ph, ":%d", first + arg - 1);
        break;
    }
    put(g, ph, strlen(ph));
}

/* The length of the native placeholder at s (0 if none): "$<digits>"
 * for a DOLLAR dialect, "?" with optional digits for a QUESTION one. */
static size_t native_placeholder(const sqllock_dialect *d, const char *s)
{
    size_t n = 1;

    if (d->placeholder == SQLLOCK_PLACEHOLDER_DOLLAR) {
        if (s[0] != '$' || s[1] < '0' || s[1] > '9')
            return 0;
    } else if (s[0] != '?') {
        return 0;
    }
    while (s[n] >= '0' && s[n] <= '9')
        n++;
    return n;
}

int sqllock__guard_text(sqllock_db *db, int style, int first, char *out,
                        size_t size, size_t *len)
{
    const sqllock_sql *sql = sqllock__sql_of(db->drv, SQLLOCK_SQL_LEASE_GUARD);
    const sqllock_dialect *d = db->drv->dialect;
    const char *s, *args;
    int k = 0, quoted = 0;
    char text[GUARD_TEXT_MAX];
    gbuf g = { text, sizeof text, 0 };

    if (len != NULL)
        *len = 0;
    if (sql == NULL)
        return sqllock__fail(db, SQLLOCK_EUNSUPPORTED, "the %s driver has "
                             "no lease guard (its dialect has no "
                             "LEASE_GUARD)",
                             db->drv->name);
    args = sql->args != NULL ? sql->args : "12";
    for (s = sql->text; *s != '\0';) {
        size_t n = quoted ? 0 : native_placeholder(d, s);
        if (n > 0) {
            /* The k-th placeholder binds core argument args[k]; the
             * positional styles need them as name, then token. */
            int arg = args[k] == '1' ? 1 : args[k] == '2' ? 2 : 0;
            if (arg == 0 || ((style == SQLLOCK_PARAM_QMARK ||
                              style == SQLLOCK_PARAM_FORMAT) && arg != k + 1))
                return sqllock__fail(db, SQLLOCK_EUNSUPPORTED, "the %s "
                                     "driver's lease guard does not bind "
                                     "the name, then the token", db->drv->name);
            put_placeholder(&g, style, first, arg);
            k++;
            s += n;
            continue;
        }
        if (*s == '\'')
            quoted = !quoted;
        if (*s == '%' && (style == SQLLOCK_PARAM_FORMAT ||
                          style == SQLLOCK_PARAM_PYFORMAT))
            put(&g, "%", 1);
        put(&g, s, 1);
        s++;
    }
    if (args[k] != '\0')
        return sqllock__fail(db, SQLLOCK_EUNSUPPORTED, "the %s driver's "
                             "lease guard has fewer placeholders than "
                             "arguments", db->drv->name);
    if (g.len >= sizeof text)
        return sqllock__fail(db, SQLLOCK_EUNSUPPORTED, "the %s driver's "
                             "lease guard is longer than %d bytes",
                             db->drv->name, GUARD_TEXT_MAX - 1);
    if (len != NULL)
        *len = g.len;
    /* Nothing is written into a buffer that is too small. */
    if (g.len >= size)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the guard is %zu bytes "
                             "long; the buffer holds %zu (with its NUL)",
                             g.len, size);
    memcpy(out, text, g.len);
    out[g.len] = '\0';
    return SQLLOCK_OK;
}

int sqllock_guard_sql(sqllock_db *db, const char *name, int64_t token,
                      int style, int first, char *buf, size_t size,
                      size_t *len)
{
    int rc;

    if (len != NULL)
        *len = 0;
    if (db == NULL)
        return SQLLOCK_EINVAL;
    if (db->drv == NULL)
        return sqllock__fail(db, SQLLOCK_EMISUSE, "the handle has no driver "
                             "(its open failed)");
    if ((rc = sqllock__check_name(db, name, "lock name")) != SQLLOCK_OK)
        return rc;
    if (token <= 0)
        return sqllock__fail(db, SQLLOCK_EINVAL, "lease token %lld: a token "
                             "is positive (0 is that of a lease that is not "
                             "held, or in fast mode, which has no token and "
                             "cannot guard)", (long long)token);
    if (style < SQLLOCK_PARAM_QMARK || style > SQLLOCK_PARAM_NUMERIC)
        return sqllock__fail(db, SQLLOCK_EINVAL, "unknown placeholder style "
                             "%d (use one of SQLLOCK_PARAM_*)", style);
    if ((style == SQLLOCK_PARAM_DOLLAR || style == SQLLOCK_PARAM_NUMERIC) &&
        (first < 1 || first > FIRST_MAX))
        return sqllock__fail(db, SQLLOCK_EINVAL, "the first placeholder's "
                             "number must be 1 to %d (got %d)", FIRST_MAX,
                             first);
    if (buf == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the buffer is NULL");
    rc = sqllock__guard_text(db, style, first, buf, size, len);
    return rc == SQLLOCK_OK ? sqllock__ok(db) : rc;
}
