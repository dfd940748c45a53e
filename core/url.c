/*
 * url.c -- database URLs: scheme ":" ["//" authority] path ["?" query].
 *
 * The parser is shared by every driver, so URLs fail the same way whatever
 * the database. Parts are percent-decoded; a decoded NUL byte is refused,
 * since a C string could not carry it. Drivers that hand the URL to their
 * client library whole (libpq) still get `raw`. A host list is split
 * here, once, for every driver (parse_host_list()); core/failover.c
 * connects to its hosts in turn.
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
    sqllock_url_host hosts[SQLLOCK_URL_MAX_HOSTS];
} url_impl;

int sqllock__hexval(int c)
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
            hi = sqllock__hexval((unsigned char)src[i + 1]);
            lo = hi < 0 ? -1 : sqllock__hexval((unsigned char)src[i + 2]);
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

/*
 * Splits a host list, "h1:p1,h2,[::1]:p3" as written, into u->hosts: each
 * entry a host name (an IPv6 address in brackets) and an optional port,
 * percent-decoded. An empty entry, a bad port, a stray '[' or ':' and a
 * list of more than SQLLOCK_URL_MAX_HOSTS hosts are SQLLOCK_EURL, each
 * with its own words, so that every driver refuses a list the same way.
 */
static int parse_host_list(url_impl *u, const char *list, size_t len,
                           char **o, char *why, size_t why_size)
{
    const char *p = list, *end = list + len;
    int n = 0, rc;

    for (;;) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *e = comma != NULL ? comma : end;
        const char *name = p, *name_end, *colon = NULL;
        int elen = (int)(e - p);
        sqllock_url_host *h;

        if (n == SQLLOCK_URL_MAX_HOSTS) {
            snprintf(why, why_size, "the host list names more than %d "
                     "hosts", SQLLOCK_URL_MAX_HOSTS);
            return SQLLOCK_EURL;
        }
        h = &u->hosts[n++];
        if (p == e) {
            snprintf(why, why_size, "host %d of the host list is empty "
                     "(write host1:port1,host2:port2)", n);
            return SQLLOCK_EURL;
        }
        if (*p == '[') {
            const char *close = memchr(p, ']', (size_t)(e - p));

            if (close == NULL) {
                snprintf(why, why_size, "host %d of the host list has an "
                         "unclosed '[' ('%.*s')", n, elen, p);
                return SQLLOCK_EURL;
            }
            name = p + 1;
            name_end = close;
            if (close + 1 < e && close[1] == ':') {
                colon = close + 1;
            } else if (close + 1 < e) {
                snprintf(why, why_size, "host %d of the host list has junk "
                         "after ']' ('%.*s')", n, (int)(e - close - 1),
                         close + 1);
                return SQLLOCK_EURL;
            }
        } else {
            colon = memchr(p, ':', (size_t)(e - p));
            if (colon != NULL &&
                memchr(colon + 1, ':', (size_t)(e - colon - 1)) != NULL) {
                snprintf(why, why_size, "host %d of the host list, '%.*s', "
                         "has several ':': write an IPv6 address in "
                         "brackets, [::1]:5432", n, elen, p);
                return SQLLOCK_EURL;
            }
            name_end = colon != NULL ? colon : e;
        }
        if (name == name_end) {
            snprintf(why, why_size, "host %d of the host list has no host "
                     "name", n);
            return SQLLOCK_EURL;
        }
        h->port = 0;
        if (colon != NULL &&
            !parse_port(colon + 1, (size_t)(e - colon - 1), &h->port)) {
            snprintf(why, why_size, "host %d of the host list ('%.*s') has "
                     "the port '%.*s': a port is a number from 1 to 65535",
                     n, (int)(name_end - name), name, (int)(e - colon - 1),
                     colon + 1);
            return SQLLOCK_EURL;
        }
        rc = decode(name, (size_t)(name_end - name), o, &h->name, "host list",
                    why, why_size);
        if (rc != SQLLOCK_OK)
            return rc;
        if (comma == NULL)
            break;
        p = comma + 1;
    }
    u->pub.nhosts = n;
    return SQLLOCK_OK;
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
        /* Several hosts ("h1:p1,h2:p2"): kept whole in `host`, and split
         * into `hosts`. */
        rc = decode(hp, hplen, o, &u->pub.host, "host list", why, why_size);
        if (rc != SQLLOCK_OK)
            return rc;
        return parse_host_list(u, hp, hplen, o, why, why_size);
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
    if (u->pub.host != NULL) {
        u->hosts[0].name = u->pub.host;
        u->hosts[0].port = u->pub.port;
        u->pub.nhosts = 1;
    }
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
    u->pub.hosts = u->hosts;
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
