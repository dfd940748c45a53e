/*
 * error.c -- the one writer of a handle's last error message.
 *
 * Every message goes through sqllock__vformat(), which cuts at a UTF-8
 * character boundary when the text is too long and turns CR, LF and tab
 * into single spaces (libpq's messages end with a newline and indent their
 * second lines; curl's rule for its error buffer is the same: no line
 * breaks in a message). Then sqllock__scrub() takes out whatever of the
 * handle's URL is secret (DESIGN C4): the core quotes URLs redacted, but
 * a driver or its client library may quote what it parsed -- libpq shows
 * the rest of a password with an unescaped '@' as a host name -- and
 * this is the one place every message passes.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

/* The length of buf[0..len) without a partial UTF-8 sequence at its
 * end, for a text that was cut there. */
static size_t utf8_whole(const char *buf, size_t len)
{
    size_t end = len;

    while (end > 0 && ((unsigned char)buf[end - 1] & 0xC0) == 0x80)
        end--;
    if (end > 0 && ((unsigned char)buf[end - 1] & 0x80)) {
        unsigned char lead = (unsigned char)buf[end - 1];
        size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
        if (len - (end - 1) < need)
            return end - 1;
    }
    return len;
}

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
        len = utf8_whole(buf, len);
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

/* Words of 4 letters or more from the messages of the core, libpq, the
 * MySQL client and SQLite when a connect fails. A password that is one
 * of them is not taken out of the message where the word stands:
 * "*** authentication failed" or "Can't connect to *** server" would
 * hide nothing and show, by the shape of the hole, what the password
 * is. Compared in any case. */
static const char *const message_words[] = {
    "abnormally", "accepting", "access", "address", "allowed",
    "authentication", "before", "cannot", "closed", "communication",
    "connect", "connection", "connections", "control", "could", "database",
    "denied", "directory", "does", "domain", "driver", "empty", "entry",
    "error", "exist", "expired", "failed", "fatal", "file", "from", "host",
    "initial", "invalid", "known", "local", "locally", "localhost", "lost",
    "mariadb", "means", "missing", "must", "mysql", "name", "number",
    "open", "option", "packet", "parameter", "password", "port", "postgres",
    "postgresql", "probably", "processing", "query", "reading", "refused",
    "request", "role", "running", "scheme", "schemes", "server", "service",
    "socket", "sqlite", "sqllock", "string", "such", "system", "terminated",
    "that", "this", "through", "timeout", "translate", "unable",
    "unexpectedly", "unix", "unknown", "user", "using", "while", "with",
    NULL
};

int sqllock__message_word(const char *w)
{
    size_t k;

    for (k = 0; message_words[k] != NULL; k++)
        if (strcasecmp(w, message_words[k]) == 0)
            return 1;
    return 0;
}

/* Marks in prot[] every occurrence of p[0..n) in msg[0..len): in any
 * case with `nocase`, else exactly. */
static void protect(const char *msg, size_t len, const char *p, size_t n,
                    int nocase, unsigned char *prot)
{
    size_t i, k;

    for (i = 0; n > 0 && i + n <= len; i++) {
        for (k = 0; k < n; k++)
            if (nocase ? tolower((unsigned char)msg[i + k]) !=
                             tolower((unsigned char)p[k])
                       : msg[i + k] != p[k])
                break;
        if (k == n)
            memset(prot + i, 1, n);
    }
}

void sqllock__scrub(char *msg, size_t size, const char *secrets)
{
    unsigned char prot[SQLLOCK__ERRMSG_MAX];
    char out[SQLLOCK__ERRMSG_MAX];
    const char *e;
    size_t len, i, o = 0, k;
    int changed = 0, full = 0;

    if (secrets == NULL || msg == NULL || size == 0)
        return;
    if (size > sizeof out)
        size = sizeof out;     /* only handle messages come here */
    for (len = 0; len + 1 < size && msg[len] != '\0'; len++)
        ;
    memset(prot, 0, len);
    for (e = secrets; *e != '\0'; e += strlen(e) + 1)
        if (*e == SQLLOCK__SCRUB_PUBLIC)
            protect(msg, len, e + 1, strlen(e + 1), 0, prot);
    for (k = 0; message_words[k] != NULL; k++)
        protect(msg, len, message_words[k], strlen(message_words[k]), 1,
                prot);
    for (i = 0; i < len && !full;) {
        size_t best = 0, n;

        /* The longest secret that starts here and is not all inside
         * something public. A tail counts only with its '@' after it,
         * and then always: "ss@host" is what a first-'@' reading of
         * "p@ss@host" shows, whatever else "ss" is. */
        for (e = secrets; *e != '\0'; e += n + 2) {
            n = strlen(e + 1);
            if (*e == SQLLOCK__SCRUB_PUBLIC || n <= best || n > len - i ||
                memcmp(msg + i, e + 1, n) != 0)
                continue;
            if (*e == SQLLOCK__SCRUB_BEFORE_AT) {
                if (msg[i + n] == '@')
                    best = n;
                continue;
            }
            for (k = 0; k < n && prot[i + k]; k++)
                ;
            if (k < n)
                best = n;
        }
        if (best > 0) {
            changed = 1;
            full = o + 3 >= size;
            if (!full) {
                memcpy(out + o, "***", 3);
                o += 3;
            }
            i += best;
        } else {
            full = o + 1 >= size;
            if (!full)
                out[o++] = msg[i++];
        }
    }
    if (!changed)
        return;
    /* "***" may be longer than what it hides (a tail of 2 bytes): the
     * text is cut, never the asterisks. */
    if (full)
        o = utf8_whole(out, o);
    memcpy(msg, out, o);
    msg[o] = '\0';
    sqllock__wipe(out, sizeof out);
}

/* A derived name in a message (NAME, the separator 0x1f, a tag: the row
 * of a semaphore's permit, a reader, a queued waiter, a leadership; see
 * internal.h) is shown as "NAME [tag]", as `sqllock list` shows it: the
 * tag ends at the first character that is not printable ASCII or is a
 * quote. Whoever made the call that failed -- sqllock_sem_*(), or
 * sqllock_lease_*() on the lease sqllock_sem_lease() gave -- reads the
 * same. */
static void show_derived(char *msg, size_t size)
{
    char out[SQLLOCK__ERRMSG_MAX];
    const char *m = msg;
    size_t o = 0;
    int open = 0;

    if (strchr(msg, SQLLOCK__SEP) == NULL)
        return;
    for (; *m != '\0' && o + 3 < sizeof out; m++) {
        if (*m == SQLLOCK__SEP) {
            out[o++] = ' ';
            out[o++] = '[';
            open = 1;
            continue;
        }
        if (open && (*m < 0x21 || *m > 0x7e || *m == '\'')) {
            out[o++] = ']';
            open = 0;
        }
        out[o++] = *m;
    }
    if (open && o + 1 < sizeof out)
        out[o++] = ']';
    if (o >= size)
        o = size - 1;
    memcpy(msg, out, o);
    msg[o] = '\0';
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
    show_derived(db->errmsg, sizeof db->errmsg);
    sqllock__scrub(db->errmsg, sizeof db->errmsg, db->secrets);
    /* A pooler, a server or a setting the library will not work with:
     * the log hook hears it too (issue 31). */
    if (status == SQLLOCK_EPROXY || status == SQLLOCK_EUNSUPPORTED)
        sqllock__log(SQLLOCK_EVENT_REFUSED, SQLLOCK_LOG_ERROR, db, NULL, 0,
                     status, 0, "%s", db->errmsg);
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

/* Names and sentences for status codes, and the version: both tables come
 * from SQLLOCK_STATUS_MAP in sqllock.h, so a code cannot be added to the
 * enum and forgotten here. */
#define SQLLOCK_STR_(x) #x
#define SQLLOCK_XSTR_(x) SQLLOCK_STR_(x)

const char *sqllock_version_string(void)
{
    return SQLLOCK_XSTR_(SQLLOCK_VERSION_MAJOR) "."
           SQLLOCK_XSTR_(SQLLOCK_VERSION_MINOR) "."
           SQLLOCK_XSTR_(SQLLOCK_VERSION_PATCH);
}

const char *sqllock_strerror(int status)
{
    switch (status) {
#define SQLLOCK_STATUS_TEXT_(name, code, text) case code: return text;
        SQLLOCK_STATUS_MAP(SQLLOCK_STATUS_TEXT_)
#undef SQLLOCK_STATUS_TEXT_
    }
    return "unknown status code";
}

const char *sqllock_errname(int status)
{
    switch (status) {
#define SQLLOCK_STATUS_NAME_(name, code, text) case code: return "SQLLOCK_" #name;
        SQLLOCK_STATUS_MAP(SQLLOCK_STATUS_NAME_)
#undef SQLLOCK_STATUS_NAME_
    }
    return "SQLLOCK_UNKNOWN";
}

int sqllock_retryable(int status)
{
    switch (status) {
    case SQLLOCK_BUSY:
    case SQLLOCK_TIMEOUT:
    case SQLLOCK_CONFLICT:
    case SQLLOCK_EDBBUSY:
    case SQLLOCK_ELOCKED:
    case SQLLOCK_EDEADLOCK:
    case SQLLOCK_ESERIALIZATION:
        return 1;
    default:
        return 0;
    }
}
