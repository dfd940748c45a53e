/*
 * pg_url.c -- what a postgres: URL asks of the driver, and the URL that
 * goes to libpq.
 *
 * libpq parses the URL itself (so sslmode, sslrootcert, unix-socket
 * hosts, host lists with target_session_attrs, service names and the PG*
 * environment variables all work as libpq users expect), but it is not
 * handed the text as the application wrote it. It gets a URL rebuilt from
 * the parts the core decoded, re-encoded, for two reasons:
 *
 *  - sqllock's own parameters (pooler=, listen_host=, listen_port=) are
 *    taken out: libpq refuses a parameter it does not know;
 *  - the user info is read by the same rule everywhere: it ends at the
 *    LAST '@' of the authority (core/url.c). libpq stops at the first, so
 *    a password with an unescaped '@' ("p@ss") would make libpq connect to
 *    a host named "ss@host" and print that name -- the rest of the
 *    password -- in its message. Re-encoded, the password reaches libpq
 *    whole and never shows.
 *
 * A URL without "//" (no authority) is handed over as written.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pg.h"

/* A growing string; `failed` once memory ran out. */
typedef struct strbuf {
    char *s;
    size_t len, cap;
    int failed;
} strbuf;

static void sb_add(strbuf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 128;
        char *p;

        while (cap < b->len + n + 1)
            cap *= 2;
        p = realloc(b->s, cap);
        if (p == NULL) {
            b->failed = 1;
            return;
        }
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void sb_str(strbuf *b, const char *s)
{
    sb_add(b, s, strlen(s));
}

/* Appends `s` percent-encoded: every byte but the unreserved ones
 * (RFC 3986) and those in `keep` becomes %XX. */
static void sb_enc(strbuf *b, const char *s, const char *keep)
{
    static const char hex[] = "0123456789ABCDEF";
    char e[3];

    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;

        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
            c == '~' || (c != '\0' && strchr(keep, c) != NULL)) {
            sb_add(b, (const char *)&c, 1);
        } else {
            e[0] = '%';
            e[1] = hex[c >> 4];
            e[2] = hex[c & 15];
            sb_add(b, e, 3);
        }
    }
}

/* 1 if `key` is one of sqllock's own parameters. */
static int own_param(const char *key)
{
    return strcmp(key, "pooler") == 0 || strcmp(key, "listen_host") == 0 ||
           strcmp(key, "listen_port") == 0;
}

/* The URL for libpq: `url` re-encoded without sqllock's parameters, with
 * its host and port replaced by `host` and `port` when those are given
 * (non-NULL, non-zero). Without listen_host, the listener connects to the
 * host the core picked (listen_port alone: that host, another port).
 * NULL when memory ran out. */
static char *rebuild(const sqllock_url *url, const char *host, int port)
{
    strbuf b = { NULL, 0, 0, 0 };
    const char *h = host != NULL ? host : url->host;
    int p = port != 0 ? port : url->port;
    char num[16];
    int i, first = 1;

    sb_str(&b, "postgresql://");
    if (url->user != NULL) {
        sb_enc(&b, url->user, "");
        if (url->password != NULL) {
            sb_str(&b, ":");
            sb_enc(&b, url->password, "");
        }
        sb_str(&b, "@");
    }
    if (h != NULL) {
        /* One host: the core hands the driver one host of a list at a
         * time (core/failover.c). */
        if (strchr(h, ':') != NULL) {
            sb_str(&b, "[");                 /* an IPv6 address */
            sb_enc(&b, h, ":");
            sb_str(&b, "]");
        } else
            sb_enc(&b, h, "");
    }
    if (p != 0) {
        snprintf(num, sizeof num, ":%d", p);
        sb_str(&b, num);
    }
    sb_enc(&b, url->path, "/");
    for (i = 0; i < url->nparams; i++) {
        if (own_param(url->keys[i]))
            continue;
        sb_str(&b, first ? "?" : "&");
        first = 0;
        sb_enc(&b, url->keys[i], "");
        sb_str(&b, "=");
        sb_enc(&b, url->values[i], "");
    }
    if (b.failed || b.s == NULL) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

static int parse_port(const char *s, int *port)
{
    long v = 0;
    int n = 0;

    for (; *s; s++, n++) {
        if (*s < '0' || *s > '9' || n == 5)
            return 0;
        v = v * 10 + (*s - '0');
    }
    if (n == 0 || v < 1 || v > 65535)
        return 0;
    *port = (int)v;
    return 1;
}

/*
 * libpq's parameters whose values it checks itself, and quotes in its
 * message when it refuses one ('invalid sslmode value: "S3cret"'): a
 * password pasted into the wrong parameter would be shown (DESIGN C4).
 * They are checked here first, as libpq checks them, and refused with a
 * message that names the parameter and what it takes, not the value.
 */
static const struct pg_checked {
    const char *name;
    const char *takes;          /* "|a|b|c|", or NULL for an integer */
    const char *say;
} pg_checked[] = {
    { "sslmode", "|disable|allow|prefer|require|verify-ca|verify-full|",
      "disable, allow, prefer, require, verify-ca or verify-full" },
    { "gssencmode", "|disable|prefer|require|", "disable, prefer or require" },
    { "channel_binding", "|disable|prefer|require|",
      "disable, prefer or require" },
    { "target_session_attrs",
      "|any|read-write|read-only|primary|standby|prefer-standby|",
      "any, read-write, read-only, primary, standby or prefer-standby" },
    { "port", NULL, "a port number" },
    { "connect_timeout", NULL, "a whole number of seconds" },
    { "keepalives", NULL, "a whole number (0 turns them off)" },
    { "keepalives_idle", NULL, "a whole number of seconds" },
    { "keepalives_interval", NULL, "a whole number of seconds" },
    { "keepalives_count", NULL, "a whole number" },
    { "tcp_user_timeout", NULL, "a whole number of milliseconds" },
};

/* 1 when libpq takes `v` as an integer: an optional sign, digits, white
 * space around them (libpq's parse_int_param()). */
static int libpq_int(const char *v)
{
    const char *d;

    v += strspn(v, " \t\n\r\f\v");
    if (*v == '+' || *v == '-')
        v++;
    d = v;
    v += strspn(v, "0123456789");
    if (v == d || v - d > 9)
        return 0;
    v += strspn(v, " \t\n\r\f\v");
    return *v == '\0';
}

/* Checks the value of a parameter of pg_checked[]: SQLLOCK_OK, or
 * SQLLOCK_EURL without the value. */
static int check_libpq_value(const char *k, const char *v, sqllock_dberr *err)
{
    size_t i, n = strlen(v);

    for (i = 0; i < sizeof pg_checked / sizeof pg_checked[0]; i++) {
        const struct pg_checked *c = &pg_checked[i];
        const char *at;

        if (strcmp(k, c->name) != 0)
            continue;
        if (c->takes == NULL ? libpq_int(v)
            : (n > 0 && strchr(v, '|') == NULL &&
               (at = strstr(c->takes, v)) != NULL && at[-1] == '|' &&
               at[n] == '|'))
            return SQLLOCK_OK;
        return sqllock_dberr_set(err, SQLLOCK_EURL, "", "%s must be %s; the "
                                 "value given is not (it is not shown, in "
                                 "case it is a secret)", c->name, c->say);
    }
    return SQLLOCK_OK;
}

int sqllock__pg_url_read(const sqllock_url *url, pg_target *t,
                         sqllock_dberr *err)
{
    const char *listen_host = NULL;
    int listen_port = 0, i, own = 0;

    memset(t, 0, sizeof *t);
    t->pooler = PG_POOLER_NONE;
    for (i = 0; i < url->nparams; i++) {
        const char *k = url->keys[i], *v = url->values[i];

        /* libpq's own host lists (host=h1,h2) would be tried inside one
         * connect, outside the core's failover and its per-host bound. */
        if ((strcmp(k, "host") == 0 || strcmp(k, "hostaddr") == 0 ||
             strcmp(k, "port") == 0) && strchr(v, ',') != NULL)
            return sqllock_dberr_set(err, SQLLOCK_EURL, "", "%s= names one "
                                     "%s: write a host list in the URL's "
                                     "authority (postgres://user@h1:5432,"
                                     "h2:5432/db), whose hosts sqllock "
                                     "tries in turn, each with the connect "
                                     "timeout", k, strcmp(k, "port") == 0
                                     ? "port" : "host");
        if (check_libpq_value(k, v, err) != SQLLOCK_OK)
            return SQLLOCK_EURL;
        if (!own_param(k))
            continue;
        own = 1;
        if (strcmp(k, "pooler") == 0) {
            if (strcasecmp(v, "none") == 0)
                t->pooler = PG_POOLER_NONE;
            else if (strcasecmp(v, "session") == 0)
                t->pooler = PG_POOLER_SESSION;
            else if (strcasecmp(v, "transaction") == 0)
                t->pooler = PG_POOLER_TRANSACTION;
            else if (strcasecmp(v, "pgpool") == 0)
                t->pooler = PG_POOLER_PGPOOL;
            else if (strcasecmp(v, "statement") == 0)
                return sqllock_dberr_set(err, SQLLOCK_EURL, "", "pooler="
                                         "statement is not supported: a "
                                         "statement pooler cannot keep the "
                                         "transaction a row lock lives in "
                                         "(use a pool in transaction mode "
                                         "and pooler=transaction)");
            else
                return sqllock_dberr_set(err, SQLLOCK_EURL, "", "pooler must "
                                         "be none, session, transaction or "
                                         "pgpool");
        } else if (strcmp(k, "listen_host") == 0) {
            if (v[0] == '\0' || strchr(v, ',') != NULL)
                return sqllock_dberr_set(err, SQLLOCK_EURL, "", "listen_host "
                                         "must name one host");
            listen_host = v;
        } else if (!parse_port(v, &listen_port)) {
            return sqllock_dberr_set(err, SQLLOCK_EURL, "", "listen_port "
                                     "must be a number from 1 to 65535");
        }
    }
    if (!url->has_authority) {
        if (own)
            return sqllock_dberr_set(err, SQLLOCK_EURL, "", "pooler=, "
                                     "listen_host= and listen_port= need a "
                                     "URL of the form postgres://host/db");
        t->libpq_url = malloc(strlen(url->raw) + 1);
        if (t->libpq_url == NULL)
            return sqllock_dberr_set(err, SQLLOCK_ENOMEM, "",
                                     "out of memory");
        strcpy(t->libpq_url, url->raw);
        return SQLLOCK_OK;
    }
    if (listen_host == NULL && listen_port != 0 && url->nhosts > 1)
        return sqllock_dberr_set(err, SQLLOCK_EURL, "", "with a host list, "
                                 "listen_port needs listen_host: the server "
                                 "to LISTEN on, past the pooler");
    t->libpq_url = rebuild(url, NULL, 0);
    if (t->libpq_url == NULL)
        return sqllock_dberr_set(err, SQLLOCK_ENOMEM, "", "out of memory");
    if (listen_host != NULL || listen_port != 0) {
        t->listen_url = rebuild(url, listen_host, listen_port);
        if (t->listen_url == NULL) {
            sqllock__pg_target_free(t);
            return sqllock_dberr_set(err, SQLLOCK_ENOMEM, "",
                                     "out of memory");
        }
    }
    return SQLLOCK_OK;
}

void sqllock__pg_target_free(pg_target *t)
{
    free(t->libpq_url);
    free(t->listen_url);
    t->libpq_url = NULL;
    t->listen_url = NULL;
}
