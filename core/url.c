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

/* 1 if the query parameter starting at p (after '?' or '&') carries a
 * secret: password=, pass=, passwd=, sslpassword= (libpq, MySQL). */
static int secret_param(const char *p)
{
    static const char *const keys[] = {
        "password=", "pass=", "passwd=", "sslpassword=", NULL
    };
    int i;

    for (i = 0; keys[i] != NULL; i++)
        if (strncasecmp(p, keys[i], strlen(keys[i])) == 0)
            return (int)strlen(keys[i]);
    return 0;
}

char *sqllock__url_redact(const char *text)
{
    const char *a, *at = NULL, *colon = NULL, *p;
    char *out, *o;
    int after_sep = 0;

    if (text == NULL)
        return NULL;
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
    /* "***" is never longer than what it replaces plus 3 bytes, and at
     * most one replacement happens per byte of input. */
    out = malloc(4 * strlen(text) + 4);
    if (out == NULL)
        return NULL;
    o = out;
    for (p = text; *p;) {
        int klen;

        if (colon != NULL && p == colon + 1) {
            memcpy(o, "***", 3);
            o += 3;
            p = at;
            continue;
        }
        if (after_sep && (klen = secret_param(p)) > 0) {
            memcpy(o, p, (size_t)klen);
            o += klen;
            memcpy(o, "***", 3);
            o += 3;
            p += klen + strcspn(p + klen, "&");
            after_sep = 0;
            continue;
        }
        after_sep = (*p == '?' || *p == '&') && (at == NULL || p > at);
        *o++ = *p++;
    }
    *o = '\0';
    return out;
}
