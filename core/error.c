/*
 * error.c -- the one writer of a handle's last error message.
 *
 * Every message goes through sqllock__vformat(), which cuts at a UTF-8
 * character boundary when the text is too long and turns CR, LF and tab
 * into single spaces (libpq's messages end with a newline and indent their
 * second lines; curl's rule for its error buffer is the same: no line
 * breaks in a message).
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

void sqllock__vformat(char *buf, size_t size, const char *fmt, va_list ap)
{
    int n;
    size_t len, i;

    if (size == 0)
        return;
    n = vsnprintf(buf, size, fmt, ap);
    if (n < 0) {
        buf[0] = '\0';
        return;
    }
    len = strlen(buf);
    if ((size_t)n >= size && len > 0) {
        /* Cut: step back over a partial UTF-8 sequence at the end. */
        size_t end = len;
        while (end > 0 && ((unsigned char)buf[end - 1] & 0xC0) == 0x80)
            end--;
        if (end > 0 && ((unsigned char)buf[end - 1] & 0x80)) {
            unsigned char lead = (unsigned char)buf[end - 1];
            size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
            if (len - (end - 1) < need)
                len = end - 1;
        }
        buf[len] = '\0';
    }
    /* Line breaks and tabs become single spaces (libpq's messages carry
     * "\n\t" between their lines). */
    {
        size_t o = 0;
        for (i = 0; i < len; i++) {
            char c = buf[i];
            if (c == '\n' || c == '\r' || c == '\t') {
                if (o == 0 || buf[o - 1] == ' ')
                    continue;
                c = ' ';
            }
            buf[o++] = c;
        }
        len = o;
        buf[len] = '\0';
    }
    while (len > 0 && buf[len - 1] == ' ')
        buf[--len] = '\0';
}

int sqllock__fail(sqllock_db *db, int status, const char *fmt, ...)
{
    va_list ap;

    if (db == NULL)
        return status;
    db->errcode = status;
    va_start(ap, fmt);
    sqllock__vformat(db->errmsg, sizeof db->errmsg, fmt, ap);
    va_end(ap);
    return status;
}

int sqllock__fail_db(sqllock_db *db, const sqllock_dberr *err,
                     const char *what)
{
    int status = err->status != SQLLOCK_OK ? err->status : SQLLOCK_EDB;

    if (err->code[0] != '\0')
        return sqllock__fail(db, status, "%s: %s (%s %s)", what,
                             err->msg[0] ? err->msg : sqllock_strerror(status),
                             db && db->drv ? db->drv->name : "database",
                             err->code);
    return sqllock__fail(db, status, "%s: %s", what,
                         err->msg[0] ? err->msg : sqllock_strerror(status));
}

int sqllock__ok(sqllock_db *db)
{
    if (db != NULL) {
        db->errcode = SQLLOCK_OK;
        db->errmsg[0] = '\0';
    }
    return SQLLOCK_OK;
}

int sqllock_dberr_set(sqllock_dberr *err, int status, const char *code,
                      const char *fmt, ...)
{
    va_list ap;

    if (err == NULL)
        return status;
    err->status = status;
    snprintf(err->code, sizeof err->code, "%s", code ? code : "");
    va_start(ap, fmt);
    sqllock__vformat(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return status;
}

const char *sqllock_errmsg(const sqllock_db *db)
{
    if (db == NULL)
        return "no database handle";
    if (db->errcode == SQLLOCK_OK)
        return "success";
    return db->errmsg[0] ? db->errmsg : sqllock_strerror(db->errcode);
}

int sqllock_errcode(const sqllock_db *db)
{
    return db == NULL ? SQLLOCK_EINVAL : db->errcode;
}
