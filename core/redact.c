/*
 * redact.c -- the secrets of a database URL kept out of what a person
 * sees.
 *
 * sqllock__url_redact() shows a URL in a message with each secret in it
 * replaced by "***"; sqllock__url_secrets() lists the same secrets, and
 * the URL's public parts, for sqllock__scrub() (error.c), which takes
 * them out of every message a handle stores. Both find the secrets with
 * find_secrets(), in the text as written, so that they agree and do not
 * need the URL to parse: a malformed URL is where a password most often
 * ends up in a message. sqllock_url_redact() is the public face, so that
 * a tool shows a URL with the same secrets hidden as sqllock_errmsg()
 * does.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

/* Names of parameters that carry a secret, compared percent-decoded and
 * in any case. Their values are hidden wherever "name=" follows a '?' or
 * a '&' (also outside the query), or starts libpq's "name = value" form. */
static const char *const secret_names[] = {
    "password", "pass", "passwd", "pwd", "sslpassword", NULL
};

/* The query parameters whose values messages may show: those that the
 * drivers take and that carry no secret (sqllock's own, libpq's, and the
 * MySQL client's TLS options). Any other parameter's value -- a misspelt
 * "pwd=", a "secret=" meant for another program -- is hidden, and only
 * its name is shown, so that a message can still say which one is
 * wrong. */
static const char *const public_params[] = {
    /* sqllock's SQLite and MySQL drivers */
    "busy_timeout", "socket", "ssl_mode", "option_file", "option_group",
    /* sqllock's PostgreSQL driver (docs/poolers.md) */
    "pooler", "listen_host", "listen_port",
    /* the MySQL client's TLS options (file names and protocol names) */
    "ssl_ca", "ssl_capath", "ssl_cert", "ssl_cipher", "ssl_crl",
    "ssl_crlpath", "ssl_key", "tls_version",
    /* libpq's connection parameters, but password and sslpassword */
    "application_name", "channel_binding", "client_encoding",
    "connect_timeout", "dbname", "fallback_application_name",
    "gssdelegation", "gssencmode", "gsslib", "host", "hostaddr",
    "keepalives", "keepalives_count", "keepalives_idle",
    "keepalives_interval", "krbsrvname", "load_balance_hosts", "options",
    "passfile", "port", "replication", "require_auth", "requirepeer",
    "requiressl", "service", "ssl_max_protocol_version",
    "ssl_min_protocol_version", "sslcert", "sslcertmode", "sslcompression",
    "sslcrl", "sslcrldir", "sslkey", "sslmode", "sslnegotiation",
    "sslrootcert", "sslsni", "target_session_attrs", "tcp_user_timeout",
    "user", NULL
};

static int in_list(const char *const *list, const char *name)
{
    for (; *list != NULL; list++)
        if (strcasecmp(*list, name) == 0)
            return 1;
    return 0;
}

int sqllock__url_param_public(const char *name)
{
    const char *const *p;

    /* Exact case: libpq's names are, and "Host" is no parameter. */
    for (p = public_params; *p != NULL; p++)
        if (strcmp(*p, name) == 0)
            return 1;
    return 0;
}

void sqllock__wipe(void *p, size_t n)
{
    volatile unsigned char *v = p;

    /* Through a volatile pointer, so that the stores are not dropped as
     * dead before a free(). */
    while (n-- > 0)
        *v++ = 0;
}

/* 1 when the text starts with a scheme and its ':' ("postgres:"). */
static int has_scheme(const char *text)
{
    const char *p = text;

    if (!isalpha((unsigned char)*p))
        return 0;
    while (isalnum((unsigned char)*p) || *p == '+' || *p == '-' || *p == '.')
        p++;
    return *p == ':';
}

/*
 * The user info's password as messages must hide it: from the first ':'
 * after "://" to the last '@' -- the parser's rule, but the last '@' is
 * looked for in the whole text, not only in the authority: a password
 * with an unescaped '/', '?' or '#' makes the URL malformed, and must be
 * hidden all the same (better to hide too much of a message than too
 * little). Without "//" (a URL missing it, or missing its scheme:
 * "u:pw@host/db"), the same from the start of the text, and without a
 * ':' before the '@' all of it before the '@' -- except for sqlite:,
 * whose file path may hold both. With `authority`, the last '@' is
 * looked for only up to the first '/' or '?', as the parser does; that
 * span is a secret of its own when it differs. Returns 0 when there is
 * none, else 1 with the bytes [*b, *e) of the text.
 */
static int userinfo_span(const char *text, int authority, size_t *b,
                         size_t *e)
{
    const char *a = strstr(text, "://"), *at = NULL, *colon, *p, *end;

    if (a != NULL)
        a += 3;
    else if (strncasecmp(text, "sqlite:", 7) == 0)
        return 0;
    else
        a = text;
    end = authority ? a + strcspn(a, "/?") : a + strlen(a);
    for (p = a; p < end; p++)
        if (*p == '@')
            at = p;
    if (at == NULL)
        return 0;
    colon = memchr(a, ':', (size_t)(at - a));
    if (colon == NULL && a != text)
        return 0;              /* "scheme://user@host": no password */
    *b = colon != NULL ? (size_t)(colon + 1 - text) : 0;
    *e = (size_t)(at - text);
    return 1;
}

/* Reads the name of the parameter at p, up to '=', a byte of `stop` or
 * the end, percent-decoded into name[size] as libpq decodes it
 * ("pass%77ord" is "password"). Returns its length as written; *fits is 0
 * when the decoded name did not fit (no name in the lists is as long). */
static size_t param_name(const char *p, const char *stop, char *name,
                         size_t size, int *fits)
{
    size_t n = 0, i = 0;

    *fits = 1;
    while (p[i] != '\0' && p[i] != '=' && strchr(stop, p[i]) == NULL) {
        int c = (unsigned char)p[i];

        /* "%00" is left as written, as libpq refuses it. */
        if (c == '%' && sqllock__hexval((unsigned char)p[i + 1]) >= 0 &&
            sqllock__hexval((unsigned char)p[i + 2]) >= 0 &&
            (sqllock__hexval((unsigned char)p[i + 1]) |
             sqllock__hexval((unsigned char)p[i + 2])) != 0) {
            c = sqllock__hexval((unsigned char)p[i + 1]) * 16 +
                sqllock__hexval((unsigned char)p[i + 2]);
            i += 3;
        } else {
            i++;
        }
        if (n + 1 < size)
            name[n++] = (char)c;
        else
            *fits = 0;
    }
    name[n] = '\0';
    return i;
}

/* The list sqllock__url_secrets() builds: entries of a kind byte, the
 * text and a NUL, ended by a lone NUL. */
typedef struct slist {
    char *buf;
    size_t len, cap;
    int failed;
} slist;

static void add_entry(slist *s, int kind, const char *p, size_t n)
{
    size_t min = kind == SQLLOCK__SCRUB_SECRET ? SQLLOCK__SCRUB_MIN
               : kind == SQLLOCK__SCRUB_BEFORE_AT ? 2 : 1;

    if (s->failed || n < min)
        return;
    if (s->len + n + 3 > s->cap) {
        size_t cap = 2 * s->cap + n + 64;
        char *b = malloc(cap);

        /* Not realloc(): the old buffer is wiped before it is freed. */
        if (b == NULL) {
            s->failed = 1;
            return;
        }
        if (s->buf != NULL) {
            memcpy(b, s->buf, s->len);
            sqllock__wipe(s->buf, s->cap);
            free(s->buf);
        }
        s->buf = b;
        s->cap = cap;
    }
    s->buf[s->len++] = (char)kind;
    memcpy(s->buf + s->len, p, n);
    s->len += n;
    s->buf[s->len++] = '\0';
}

/* A secret x[0..n), and what of it a message could show when something
 * took one of its '@'s for the end of the user info (libpq takes the
 * first): each piece between its '@'s, and each tail after an '@' where
 * an '@' follows it in the message ("ss@host" of "p@ss"). */
static void add_secret_parts(slist *s, const char *x, size_t n)
{
    size_t k, start = 0;

    add_entry(s, SQLLOCK__SCRUB_SECRET, x, n);
    if (memchr(x, '@', n) == NULL)
        return;
    for (k = 0; k <= n; k++) {
        if (k < n && x[k] != '@')
            continue;
        add_entry(s, SQLLOCK__SCRUB_SECRET, x + start, k - start);
        if (k < n)
            add_entry(s, SQLLOCK__SCRUB_BEFORE_AT, x + k + 1, n - k - 1);
        start = k + 1;
    }
}

/* Adds the secret x[0..n) as written and percent-decoded (as a driver
 * may show it), with their parts. */
static void add_secret(slist *s, const char *x, size_t n)
{
    char *d = malloc(n + 1);
    size_t i, dn = 0;

    add_secret_parts(s, x, n);
    if (d == NULL) {
        s->failed = 1;
        return;
    }
    for (i = 0; i < n; i++) {
        int hi = i + 2 < n ? sqllock__hexval((unsigned char)x[i + 1]) : -1;
        int lo = hi >= 0 ? sqllock__hexval((unsigned char)x[i + 2]) : -1;

        if (x[i] == '%' && lo >= 0 && (hi | lo) != 0) {
            d[dn++] = (char)(hi * 16 + lo);
            i += 2;
        } else {
            d[dn++] = x[i];
        }
    }
    if (dn != n)
        add_secret_parts(s, d, dn);
    sqllock__wipe(d, n + 1);
    free(d);
}

/* Where the secrets found go: for redaction, hide[i] is set for each
 * secret byte of the text and mark[i] where a secret (maybe empty)
 * starts, where the redacted text says "***" once for the whole hidden
 * run; for scrubbing, each secret is added to `list` on its own (hidden
 * runs may join two). Secrets are found first and may overlap, so that
 * one cannot end where another's hiding resumed copying (a password's
 * '@' taken for the end of the user info, say). */
typedef struct finder {
    const char *text;
    unsigned char *hide, *mark;    /* or NULL */
    slist *list;                   /* or NULL */
    int no_public;                 /* hide public parameters' values too */
} finder;

static void hide_run(finder *f, size_t b, size_t e)
{
    if (f->hide != NULL) {
        f->mark[b] = 1;
        memset(f->hide + b, 1, e - b);
    }
    if (f->list != NULL && e > b)
        add_secret(f->list, f->text + b, e - b);
}

#define SPACES " \t\n\v\f\r"

/* Hides what must be hidden of the parameter whose name starts at
 * text[b]: the value of a secret's name; with `all`, also the value of
 * any name that is not public, and a lone name that is not ("?s3cret").
 * `conninfo`: libpq's "name = value" form, in which white space ends a
 * value unless it is quoted; otherwise "name=value" ended by '&'. */
static void hide_param(finder *f, size_t b, int all, int conninfo)
{
    const char *text = f->text;
    char name[24];
    int fits, secret, public_;
    size_t i, e;

    i = b + param_name(text + b, conninfo ? SPACES : "&", name, sizeof name,
                       &fits);
    if (i == b && conninfo)
        return;
    secret = fits && in_list(secret_names, name);
    public_ = !f->no_public && fits && i > b &&
              sqllock__url_param_public(name);
    if (conninfo)
        i += strspn(text + i, SPACES);
    if (text[i] != '=') {
        if (all && !conninfo && i > b && !public_)
            hide_run(f, b, i);
        return;
    }
    if (!secret && (!all || public_))
        return;
    i++;
    if (!conninfo) {
        e = i + strcspn(text + i, "&");
    } else {
        i += strspn(text + i, SPACES);
        e = i;
        if (text[e] == '\'') {
            /* Quoted, with backslash escapes. */
            for (e++; text[e] != '\0' && text[e] != '\''; e++)
                if (text[e] == '\\' && text[e + 1] != '\0')
                    e++;
            if (text[e] == '\'')
                e++;
        } else {
            e += strcspn(text + e, SPACES);
        }
    }
    hide_run(f, i, e);
}

/* Finds the secrets of f->text, of len bytes (hide[] and mark[], when
 * given, have len + 1 bytes, zeroed). */
static void find_secrets(finder *f, size_t len)
{
    const char *text = f->text, *q = strchr(text, '?');
    size_t b = 0, e = 0, b2, e2, i;

    if (userinfo_span(text, 0, &b, &e))
        hide_run(f, b, e);
    if (userinfo_span(text, 1, &b2, &e2) && (b2 != b || e2 != e))
        hide_run(f, b2, e2);
    /* A secret's name after any '?' or '&', also one before the last '@'
     * (that '@' may be in the query, as in "postgres://h/db?password=
     * s3cr@t"); in the query (from its first '?', as the parser reads
     * it), every parameter that is not public. */
    for (i = 0; i < len; i++)
        if (text[i] == '?' || text[i] == '&')
            hide_param(f, i + 1, q != NULL && text + i >= q, 0);
    /* No scheme: perhaps libpq's "host=h password=x", which the parser
     * refuses, quoting it. */
    if (!has_scheme(text)) {
        hide_param(f, 0, 1, 1);
        for (i = 0; i < len; i++)
            if (strchr(SPACES, text[i]) != NULL)
                hide_param(f, i + 1, 1, 1);
    }
}

/* sqllock__url_redact(), and with `no_public`
 * sqllock__url_redact_params(). */
static char *redact(const char *text, int no_public)
{
    unsigned char *hide, *mark;
    size_t len, i;
    char *out, *o;

    if (text == NULL)
        return NULL;
    len = strlen(text);
    hide = calloc(2, len + 1);
    if (hide == NULL)
        return NULL;
    mark = hide + len + 1;
    {
        finder f = { NULL, NULL, NULL, NULL, 0 };

        f.text = text;
        f.hide = hide;
        f.mark = mark;
        f.no_public = no_public;
        find_secrets(&f, len);
    }
    /* At most one "***" per mark, and at most one mark per byte of input
     * plus one at its end. */
    out = malloc(4 * len + 4);
    if (out != NULL) {
        o = out;
        for (i = 0; i <= len; i++) {
            if (mark[i] && (i == 0 || !hide[i - 1])) {
                memcpy(o, "***", 3);
                o += 3;
            }
            if (i < len && !hide[i])
                *o++ = text[i];
        }
        *o = '\0';
    }
    free(hide);
    return out;
}

char *sqllock__url_redact(const char *text)
{
    return redact(text, 0);
}

char *sqllock__url_redact_params(const char *text)
{
    return redact(text, 1);
}

/* Adds p[0..n) as a public part, unless it holds a secret found so far
 * with an '@' after it: then it holds a user info, as the path of
 * "postgres:u:pw@h" (no "//") does. Elsewhere a secret may well be in a
 * public part -- a password that is also part of the host name -- and
 * the scrubber leaves it there. */
static void add_public_part(slist *s, const char *p, size_t n)
{
    const char *e;
    size_t en, i;

    if (s->buf != NULL) {
        /* The list has no end mark yet: s->len bounds it. */
        for (e = s->buf; e < s->buf + s->len; e += en + 1) {
            en = strlen(e);
            if (*e == SQLLOCK__SCRUB_PUBLIC || en > n)
                continue;
            for (i = 0; i + en <= n; i++)
                if (memcmp(p + i, e + 1, en - 1) == 0 &&
                    p[i + en - 1] == '@')
                    return;
        }
    }
    add_entry(s, SQLLOCK__SCRUB_PUBLIC, p, n);
}

/* Adds the public parts of a parsed URL: its user, host (and each host
 * of a list, with and without its port), database or path, port,
 * scheme, the names of its parameters and the values of the public
 * ones. */
static void add_public(slist *s, const sqllock_url *u)
{
    char num[16];
    const char *h;
    size_t n = 0;
    int i;

    add_public_part(s, u->scheme, strlen(u->scheme));
    if (u->user != NULL)
        add_public_part(s, u->user, strlen(u->user));
    if (u->host != NULL)
        add_public_part(s, u->host, strlen(u->host));
    for (h = u->host; h != NULL && strchr(u->host, ',') != NULL;
         h = h[n] != '\0' ? h + n + 1 : NULL) {
        size_t k;

        n = strcspn(h, ",");
        add_public_part(s, h, n);
        for (k = n; k > 0 && h[k - 1] != ':'; k--)
            ;
        if (k > 1)
            add_public_part(s, h, k - 1);
    }
    add_public_part(s, u->path, strlen(u->path));
    if (u->path[0] == '/')
        add_public_part(s, u->path + 1, strlen(u->path + 1));
    if (u->port != 0) {
        snprintf(num, sizeof num, "%d", u->port);
        add_public_part(s, num, strlen(num));
    }
    for (i = 0; i < u->nparams; i++) {
        add_public_part(s, u->keys[i], strlen(u->keys[i]));
        if (sqllock__url_param_public(u->keys[i]))
            add_public_part(s, u->values[i], strlen(u->values[i]));
    }
}

char *sqllock__url_secrets(const char *text)
{
    finder f = { NULL, NULL, NULL, NULL, 0 };
    sqllock_url *u = NULL;
    char why[256];
    slist s;

    if (text == NULL)
        return NULL;
    memset(&s, 0, sizeof s);
    f.text = text;
    f.list = &s;
    find_secrets(&f, strlen(text));
    /* The parser's view too, where it differs: its password ends at the
     * authority's last '@', which an '@' in the query moves for the rule
     * above. Then the public parts, which must come last. */
    if (sqllock__url_parse(text, &u, why, sizeof why) == SQLLOCK_OK) {
        int k;

        if (u->password != NULL)
            add_secret_parts(&s, u->password, strlen(u->password));
        for (k = 0; k < u->nparams; k++)
            if (!sqllock__url_param_public(u->keys[k]))
                add_secret_parts(&s, u->values[k], strlen(u->values[k]));
        add_public(&s, u);
        sqllock__url_free(u);
    }
    /* Each entry left room for the lone NUL at the end. */
    if (s.buf == NULL && !s.failed) {
        s.buf = malloc(1);
        s.failed = s.buf == NULL;
    }
    if (s.failed) {
        if (s.buf != NULL) {
            sqllock__wipe(s.buf, s.cap);
            free(s.buf);
        }
        return NULL;
    }
    s.buf[s.len] = '\0';
    return s.buf;
}

void sqllock__secrets_free(char *secrets)
{
    if (secrets != NULL) {
        size_t n = 0;

        /* Up to and with the lone NUL that ends the list. */
        while (secrets[n] != '\0')
            n += strlen(secrets + n) + 1;
        sqllock__wipe(secrets, n + 1);
        free(secrets);
    }
}

/* sqllock_url_redact(): a database URL as a person may see it, with the
 * same secrets hidden as in every message of the library. */
int sqllock_url_redact(const char *url, char **out)
{
    if (out != NULL)
        *out = NULL;
    if (url == NULL || out == NULL)
        return SQLLOCK_EINVAL;
    *out = sqllock__url_redact(url);
    return *out != NULL ? SQLLOCK_OK : SQLLOCK_ENOMEM;
}
