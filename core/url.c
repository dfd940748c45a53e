/*
 * url.c -- database URLs: scheme ":" ["//" authority] path ["?" query].
 *
 * The parser is shared by every driver, so URLs fail the same way whatever
 * the database. Parts are percent-decoded; a decoded NUL byte is refused,
 * since a C string could not carry it. Drivers that hand the URL to their
 * client library whole (libpq) still get `raw`.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

#define URL_MAX_PARAMS 32

typedef struct url_impl {
    sqllock_url pub;           /* first: the pointer handed out */
    char *buf;                 /* all decoded strings, NUL-separated */
    const char *keys[URL_MAX_PARAMS];
    const char *values[URL_MAX_PARAMS];
} url_impl;

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decodes src[0..len) into *out (advancing it, NUL-terminating). */
static int decode(const char *src, size_t len, char **out, const char **res,
                  const char *part, char *why, size_t why_size)
{
    char *o = *out;
    size_t i;

    *res = o;
    for (i = 0; i < len; i++) {
        if (src[i] == '%') {
            int hi, lo;
            if (i + 2 >= len) {
                snprintf(why, why_size, "truncated %%-escape in the %s", part);
                return SQLLOCK_EURL;
            }
            hi = hexval((unsigned char)src[i + 1]);
            lo = hi < 0 ? -1 : hexval((unsigned char)src[i + 2]);
            if (hi < 0 || lo < 0) {
                snprintf(why, why_size, "bad %%-escape in the %s", part);
                return SQLLOCK_EURL;
            }
            if (hi == 0 && lo == 0) {
                snprintf(why, why_size, "%%00 (a NUL byte) in the %s", part);
                return SQLLOCK_EURL;
            }
            *o++ = (char)(hi * 16 + lo);
            i += 2;
        } else {
            *o++ = src[i];
        }
    }
    *o++ = '\0';
    *out = o;
    return SQLLOCK_OK;
}

static int parse_port(const char *s, size_t len, int *port)
{
    long v = 0;
    size_t i;

    if (len == 0 || len > 5)
        return 0;
    for (i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        v = v * 10 + (s[i] - '0');
    }
    if (v < 1 || v > 65535)
        return 0;
    *port = (int)v;
    return 1;
}

static int parse_authority(url_impl *u, const char *a, size_t alen, char **o,
                           char *why, size_t why_size)
{
    const char *at = NULL, *hp, *colon = NULL, *p;
    size_t hplen;
    int rc;

    for (p = a; p < a + alen; p++)
        if (*p == '@')
            at = p;            /* the last '@' ends the user info */
    if (at != NULL) {
        const char *uc = memchr(a, ':', (size_t)(at - a));
        size_t ulen = uc ? (size_t)(uc - a) : (size_t)(at - a);
        rc = decode(a, ulen, o, &u->pub.user, "user name", why, why_size);
        if (rc != SQLLOCK_OK)
            return rc;
        if (uc != NULL) {
            rc = decode(uc + 1, (size_t)(at - uc - 1), o, &u->pub.password,
                        "password", why, why_size);
            if (rc != SQLLOCK_OK)
                return rc;
        }
        hp = at + 1;
    } else {
        hp = a;
    }
    hplen = (size_t)(a + alen - hp);
    if (memchr(hp, ',', hplen) != NULL) {
        /* Several hosts ("h1:p1,h2:p2"): kept whole for the driver. */
        return decode(hp, hplen, o, &u->pub.host, "host list", why, why_size);
    }
    if (hplen > 0 && hp[0] == '[') {
        const char *close = memchr(hp, ']', hplen);
        if (close == NULL) {
            snprintf(why, why_size, "unclosed '[' in the host");
            return SQLLOCK_EURL;
        }
        rc = decode(hp + 1, (size_t)(close - hp - 1), o, &u->pub.host, "host",
                    why, why_size);
        if (rc != SQLLOCK_OK)
            return rc;
        p = close + 1;
        if (p < hp + hplen) {
            if (*p != ':') {
                snprintf(why, why_size, "junk after ']' in the host");
                return SQLLOCK_EURL;
            }
            colon = p;
        }
    } else {
        colon = memchr(hp, ':', hplen);
        rc = decode(hp, colon ? (size_t)(colon - hp) : hplen, o,
                    &u->pub.host, "host", why, why_size);
        if (rc != SQLLOCK_OK)
            return rc;
    }
    if (colon != NULL &&
        !parse_port(colon + 1, (size_t)(hp + hplen - colon - 1), &u->pub.port)) {
        snprintf(why, why_size, "the port must be a number from 1 to 65535");
        return SQLLOCK_EURL;
    }
    if (u->pub.host[0] == '\0')
        u->pub.host = NULL;
    return SQLLOCK_OK;
}

static int parse_query(url_impl *u, const char *q, char **o, char *why,
                       size_t why_size)
{
    while (*q != '\0') {
        const char *amp = strchr(q, '&');
        size_t len = amp ? (size_t)(amp - q) : strlen(q);
        const char *eq = memchr(q, '=', len);
        int rc;

        if (len > 0) {
            if (eq == NULL || eq == q) {
                snprintf(why, why_size,
                         "query parameters must be name=value pairs");
                return SQLLOCK_EURL;
            }
            if (u->pub.nparams == URL_MAX_PARAMS) {
                snprintf(why, why_size, "more than %d query parameters",
                         URL_MAX_PARAMS);
                return SQLLOCK_EURL;
            }
            rc = decode(q, (size_t)(eq - q), o, &u->keys[u->pub.nparams],
                        "query", why, why_size);
            if (rc == SQLLOCK_OK)
                rc = decode(eq + 1, (size_t)(q + len - eq - 1), o,
                            &u->values[u->pub.nparams], "query", why, why_size);
            if (rc != SQLLOCK_OK)
                return rc;
            u->pub.nparams++;
        }
        q += len;
        if (*q == '&')
            q++;
    }
    return SQLLOCK_OK;
}

int sqllock__url_parse(const char *text, sqllock_url **out, char *why,
                       size_t why_size)
{
    url_impl *u;
    const char *p, *rest, *qmark;
    char *o, *scheme;
    size_t tlen, i;
    int rc;

    *out = NULL;
    if (text == NULL || *text == '\0') {
        snprintf(why, why_size, "the URL is empty");
        return SQLLOCK_EURL;
    }
    for (p = text; *p; p++) {
        if ((unsigned char)*p < 0x20 || *p == 0x7F) {
            snprintf(why, why_size, "control character in the URL");
            return SQLLOCK_EURL;
        }
    }
    p = text;
    if (!isalpha((unsigned char)*p)) {
        snprintf(why, why_size, "the URL must start with a scheme such as "
                 "sqlite:, postgres: or mysql:");
        return SQLLOCK_EURL;
    }
    while (isalnum((unsigned char)*p) || *p == '+' || *p == '-' || *p == '.')
        p++;
    if (*p != ':') {
        snprintf(why, why_size, "no ':' after the URL's scheme");
        return SQLLOCK_EURL;
    }
    tlen = strlen(text);
    u = calloc(1, sizeof *u);
    if (u == NULL)
        return SQLLOCK_ENOMEM;
    /* Decoded parts never grow, so twice the text (plus NULs) suffices. */
    u->buf = malloc(2 * tlen + 16);
    if (u->buf == NULL) {
        free(u);
        return SQLLOCK_ENOMEM;
    }
    o = u->buf;
    u->pub.raw = text;
    u->pub.keys = u->keys;
    u->pub.values = u->values;
    scheme = o;
    for (i = 0; text + i < p; i++)
        *o++ = (char)tolower((unsigned char)text[i]);
    *o++ = '\0';
    u->pub.scheme = scheme;

    rest = p + 1;
    qmark = strchr(rest, '?');
    if (strncmp(rest, "//", 2) == 0) {
        const char *a = rest + 2;
        size_t alen = strcspn(a, "/?");
        u->pub.has_authority = 1;
        rc = parse_authority(u, a, alen, &o, why, why_size);
        if (rc != SQLLOCK_OK)
            goto fail;
        rest = a + alen;
    }
    rc = decode(rest, qmark ? (size_t)(qmark - rest) : strlen(rest), &o,
                &u->pub.path, "path", why, why_size);
    if (rc == SQLLOCK_OK && qmark != NULL)
        rc = parse_query(u, qmark + 1, &o, why, why_size);
    if (rc != SQLLOCK_OK)
        goto fail;
    u->pub.raw = text;
    *out = &u->pub;
    return SQLLOCK_OK;

fail:
    free(u->buf);
    free(u);
    return rc;
}

void sqllock__url_free(sqllock_url *url)
{
    url_impl *u = (url_impl *)url;

    if (u != NULL) {
        free(u->buf);
        free(u);
    }
}

/* If the query parameter starting at p (after '?' or '&') carries a
 * secret -- password=, pass=, passwd=, sslpassword= (libpq, MySQL), in
 * any case -- the length of its name and '=' as written, else 0. The name
 * is compared percent-decoded, as libpq decodes it: "pass%77ord=" is a
 * password too. */
static int secret_param(const char *p)
{
    static const char *const keys[] = {
        "password", "pass", "passwd", "sslpassword", NULL
    };
    char name[16];
    size_t n = 0, i = 0;
    int k;

    while (p[i] != '\0' && p[i] != '=' && p[i] != '&') {
        int c = (unsigned char)p[i];
        if (c == '%' && hexval((unsigned char)p[i + 1]) >= 0 &&
            hexval((unsigned char)p[i + 2]) >= 0) {
            c = hexval((unsigned char)p[i + 1]) * 16 +
                hexval((unsigned char)p[i + 2]);
            i += 3;
        } else {
            i++;
        }
        if (n == sizeof name - 1)
            return 0;          /* longer than any secret's name */
        name[n++] = (char)c;
    }
    if (p[i] != '=')
        return 0;
    name[n] = '\0';
    for (k = 0; keys[k] != NULL; k++)
        if (strcasecmp(name, keys[k]) == 0)
            return (int)i + 1;
    return 0;
}

char *sqllock__url_redact(const char *text)
{
    const char *a, *at = NULL, *colon = NULL, *p;
    unsigned char *hide, *mark;
    size_t len, i, e;
    char *out, *o;

    if (text == NULL)
        return NULL;
    len = strlen(text);
    /* hide[i]: byte i is secret; mark[i]: a secret (maybe empty) starts
     * at i, where "***" is written once for the whole hidden run. The
     * secrets are found first and may overlap, so that one cannot end
     * where another's hiding resumed copying (a password's '@' taken for
     * the end of the user info, say). */
    hide = calloc(2, len + 1);
    if (hide == NULL)
        return NULL;
    mark = hide + len + 1;
    /* The user info ends at the last '@'. A password with an unescaped
     * '/', '?' or '#' makes the URL malformed, but it must be hidden all
     * the same, so the search does not stop at the path or the query:
     * better to hide too much of a message than too little. */
    a = strstr(text, "://");
    if (a != NULL) {
        a += 3;
        for (p = a; *p; p++)
            if (*p == '@')
                at = p;
        if (at != NULL)
            colon = memchr(a, ':', (size_t)(at - a));
    }
    if (colon != NULL) {
        mark[colon + 1 - text] = 1;
        memset(hide + (colon + 1 - text), 1, (size_t)(at - colon - 1));
    }
    /* A secret query parameter's value runs to the next '&'. Every '?'
     * and '&' counts, also one before the last '@' (that '@' may be in
     * the query, as in "postgres://h/db?password=s3cr@t"). */
    for (i = 0; i < len; i++) {
        int klen;

        if ((text[i] != '?' && text[i] != '&') ||
            (klen = secret_param(text + i + 1)) == 0)
            continue;
        i += 1 + (size_t)klen;
        e = i + strcspn(text + i, "&");
        mark[i] = 1;
        memset(hide + i, 1, e - i);
        i = e - 1;
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
