/*
 * fuzz_url.c -- libFuzzer target for the URL parser and the redactor
 * (core/url.c, issue 7 "Hostile input").
 *
 * The input is the URL text (cut at its first NUL, as a C string would
 * be). Besides "no crash, no leak, no undefined behaviour" it checks:
 *
 *   - a URL with "%00" never parses (a decoded NUL would cut a C string);
 *   - a URL that parses has a lower-case scheme equal to its prefix, a
 *     port in 0..65535, a path, at most 32 query parameters with
 *     non-empty names, and a failure always says why;
 *   - parsing is a fixed point: the parts, each percent-encoded again and
 *     put back together, parse to exactly the same parts;
 *   - redaction never leaves a password in its output: neither the user
 *     info's password nor the value of a password=, pass=, passwd=, pwd=
 *     or sslpassword= query parameter (whose name may be percent-encoded,
 *     as libpq decodes it), nor the value of any query parameter whose
 *     name is not a public one (sqllock__url_param_public()), nor such a
 *     name without a value. A password is checked when its text is in the
 *     URL only once and has no '*' (otherwise the same bytes may
 *     rightly remain elsewhere, or "***" itself may spell them), and so
 *     is each piece of 3 to 8 bytes of it that is in the URL only once;
 *   - message scrubbing (sqllock__url_secrets(), sqllock__scrub()): a
 *     message that is the URL's decoded password, 4 bytes or more, comes
 *     out as "***" (unless the password is one of the words of the
 *     drivers' messages, which stay); a message that is the text after
 *     an '@' of the user info's password, 2 bytes or more, followed by
 *     "@host" (what libpq shows of "u:p@ss@host"), starts with "***";
 *     and scrubbing any message (the URL itself) leaves a string that
 *     fits its buffer.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                        \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "fuzz_url: property failed: %s (line %d)\n",   \
                    #cond, __LINE__);                                      \
            abort();                                                       \
        }                                                                  \
    } while (0)

/* Number of (possibly overlapping) occurrences of needle[0..n) in hay. */
static size_t count_in(const char *hay, const char *needle, size_t n)
{
    size_t count = 0, hlen = strlen(hay), i;

    if (n == 0 || n > hlen)
        return 0;
    for (i = 0; i + n <= hlen; i++)
        if (memcmp(hay + i, needle, n) == 0)
            count++;
    return count;
}

/* 1 when the redacted text must not contain s[0..n): s is the only
 * occurrence in the URL and has no '*'. */
static int distinctive(const char *url, const char *s, size_t n)
{
    return n > 0 && memchr(s, '*', n) == NULL && count_in(url, s, n) == 1;
}

static void check_absent(const char *url, const char *red, const char *s,
                         size_t n)
{
    size_t w, i;

    if (distinctive(url, s, n) && count_in(red, s, n) != 0) {
        fprintf(stderr, "fuzz_url: redaction left the password '%.*s' in "
                "'%s' (URL '%s')\n", (int)n, s, red, url);
        abort();
    }
    /* No part of it either: every piece of 3 to 8 bytes that is in the
     * URL only once (first 64 bytes of the password). */
    for (w = 3; w <= 8 && w < n; w++)
        for (i = 0; i + w <= n && i < 64; i++)
            if (distinctive(url, s + i, w) && count_in(red, s + i, w) != 0) {
                fprintf(stderr, "fuzz_url: redaction left '%.*s' of the "
                        "password '%.*s' in '%s' (URL '%s')\n", (int)w,
                        s + i, (int)n, s, red, url);
                abort();
            }
}

static int hexv(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Percent-decodes s[0..n) into out (at most n bytes plus a NUL), leaving
 * a bad escape, and "%00" (which libpq refuses), as it is: the driver's
 * view of a query parameter name. */
static void pct_decode(const char *s, size_t n, char *out)
{
    size_t i, o = 0;

    for (i = 0; i < n; i++) {
        if (s[i] == '%' && i + 2 < n && hexv(s[i + 1]) >= 0 &&
            hexv(s[i + 2]) >= 0 && (hexv(s[i + 1]) | hexv(s[i + 2])) != 0) {
            out[o++] = (char)(hexv(s[i + 1]) * 16 + hexv(s[i + 2]));
            i += 2;
        } else {
            out[o++] = s[i];
        }
    }
    out[o] = '\0';
}

static int secret_key(const char *k)
{
    return strcasecmp(k, "password") == 0 || strcasecmp(k, "pass") == 0 ||
           strcasecmp(k, "passwd") == 0 || strcasecmp(k, "pwd") == 0 ||
           strcasecmp(k, "sslpassword") == 0;
}

/* The user info's password as the parser sees it: the raw text between
 * the first ':' of the user info and the authority's last '@'. */
static void check_userinfo(const char *url, const char *red)
{
    const char *a = strchr(url, ':'), *end, *at = NULL, *p, *colon;

    if (a == NULL || strncmp(a, "://", 3) != 0)
        return;
    a += 3;
    end = a + strcspn(a, "/?");
    for (p = a; p < end; p++)
        if (*p == '@')
            at = p;
    if (at == NULL)
        return;
    colon = memchr(a, ':', (size_t)(at - a));
    if (colon != NULL)
        check_absent(url, red, colon + 1, (size_t)(at - colon - 1));
}

/* The values of password-like query parameters, found in the raw text as
 * the parser finds them (after the first '?', split at '&' and the first
 * '='), with the name decoded as libpq decodes it. */
static void check_query(const char *url, const char *red)
{
    const char *q = strchr(url, '?');

    if (q == NULL)
        return;
    q++;
    while (*q != '\0') {
        size_t len = strcspn(q, "&");
        const char *eq = memchr(q, '=', len);

        if (eq != NULL) {
            char *key = malloc((size_t)(eq - q) + 1);
            if (key == NULL)
                abort();
            pct_decode(q, (size_t)(eq - q), key);
            /* A name that does not fit the redactor's buffer (23 bytes
             * decoded) is neither secret nor public to it: hidden. */
            if (secret_key(key) || strlen(key) > 23 ||
                !sqllock__url_param_public(key))
                check_absent(url, red, eq + 1, (size_t)(q + len - eq - 1));
            free(key);
        } else if (len > 0) {
            char *key = malloc(len + 1);
            if (key == NULL)
                abort();
            pct_decode(q, len, key);
            if (strlen(key) > 23 || !sqllock__url_param_public(key))
                check_absent(url, red, q, len);
            free(key);
        }
        q += len;
        if (*q == '&')
            q++;
    }
}

/* Appends s, percent-encoding every byte but letters, digits and, when
 * `slash` is set, '/'. */
static char *put_enc(char *o, const char *s, int slash)
{
    static const char hex[] = "0123456789ABCDEF";

    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
            (c >= '0' && c <= '9') || (slash && c == '/')) {
            *o++ = (char)c;
        } else {
            *o++ = '%';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        }
    }
    return o;
}

static int same(const char *a, const char *b)
{
    if (a == NULL || b == NULL)
        return a == b;
    return strcmp(a, b) == 0;
}

/* Rebuilds the URL from its parsed parts and checks that it parses to
 * the same parts. */
static void check_fixed_point(const char *text, const sqllock_url *u)
{
    size_t cap = 3 * strlen(text) + 64;
    char *buf = malloc(cap), *o = buf, why[256];
    sqllock_url *v = NULL;
    int i, rc;

    if (buf == NULL)
        abort();
    o += sprintf(o, "%s:", u->scheme);
    if (u->has_authority) {
        *o++ = '/';
        *o++ = '/';
        if (u->user != NULL) {
            o = put_enc(o, u->user, 0);
            if (u->password != NULL) {
                *o++ = ':';
                o = put_enc(o, u->password, 0);
            }
            *o++ = '@';
        }
        if (u->host != NULL)
            o = put_enc(o, u->host, 0);
        if (u->port != 0)
            o += sprintf(o, ":%d", u->port);
    }
    /* After an authority the path is empty or starts with '/', which
     * must stay literal to end the authority; without one, an encoded
     * "//" must not become an authority. */
    o = put_enc(o, u->path, u->has_authority);
    if (u->nparams > 0) {
        *o++ = '?';
        for (i = 0; i < u->nparams; i++) {
            if (i > 0)
                *o++ = '&';
            o = put_enc(o, u->keys[i], 0);
            *o++ = '=';
            o = put_enc(o, u->values[i], 0);
        }
    }
    *o = '\0';
    CHECK((size_t)(o - buf) < cap);
    why[0] = '\0';
    rc = sqllock__url_parse(buf, &v, why, sizeof why);
    if (rc != SQLLOCK_OK) {
        fprintf(stderr, "fuzz_url: '%s' parsed, but its rebuilt form '%s' "
                "did not: %s\n", text, buf, why);
        abort();
    }
    CHECK(strcmp(v->scheme, u->scheme) == 0);
    CHECK(v->has_authority == u->has_authority);
    CHECK(same(v->user, u->user));
    CHECK(same(v->password, u->password));
    CHECK(same(v->host, u->host));
    CHECK(v->port == u->port);
    CHECK(strcmp(v->path, u->path) == 0);
    CHECK(v->nparams == u->nparams);
    for (i = 0; i < u->nparams; i++) {
        CHECK(strcmp(v->keys[i], u->keys[i]) == 0);
        CHECK(strcmp(v->values[i], u->values[i]) == 0);
    }
    sqllock__url_free(v);
    free(buf);
}

/* The scrubbing of messages, with the secrets of `text` (parsed as u). */
static void check_scrub(const char *text, const sqllock_url *u)
{
    char *secrets = sqllock__url_secrets(text);
    char msg[SQLLOCK__ERRMSG_MAX];
    const char *a, *at = NULL, *colon, *p, *end;

    CHECK(secrets != NULL);
    /* The decoded password alone. */
    if (u != NULL && u->password != NULL &&
        strlen(u->password) >= SQLLOCK__SCRUB_MIN &&
        strlen(u->password) < sizeof msg) {
        snprintf(msg, sizeof msg, "%s", u->password);
        sqllock__scrub(msg, sizeof msg, secrets);
        if (strcmp(msg, u->password) == 0)
            CHECK(sqllock__message_word(u->password));
        else
            CHECK(strcmp(msg, "***") == 0);
    }
    /* Each tail of the raw password after one of its '@'s, as libpq
     * shows it: "<tail>@host". */
    a = strstr(text, "://");
    if (u != NULL && a != NULL) {
        a += 3;
        end = a + strcspn(a, "/?");
        for (p = a; p < end; p++)
            if (*p == '@')
                at = p;
        colon = at != NULL ? memchr(a, ':', (size_t)(at - a)) : NULL;
        for (p = colon != NULL ? colon + 1 : at; colon != NULL && p < at;
             p++) {
            size_t n = (size_t)(at - p - 1);

            if (*p != '@' || n < 2 || n + 6 > sizeof msg)
                continue;
            snprintf(msg, sizeof msg, "%.*s@host", (int)n, p + 1);
            sqllock__scrub(msg, sizeof msg, secrets);
            CHECK(strncmp(msg, "***", 3) == 0);
        }
    }
    /* Any message: here the URL itself, cut to fit. */
    snprintf(msg, sizeof msg, "%s", text);
    sqllock__scrub(msg, sizeof msg, secrets);
    CHECK(strlen(msg) < sizeof msg);
    sqllock__secrets_free(secrets);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text, *red, why[256];
    sqllock_url *u = (sqllock_url *)1;
    size_t i, n;
    int rc;

    if (size > 4096)
        return 0;
    text = malloc(size + 1);
    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';

    why[0] = '\0';
    rc = sqllock__url_parse(text, &u, why, sizeof why);
    if (rc != SQLLOCK_OK) {
        CHECK(rc == SQLLOCK_EURL || rc == SQLLOCK_ENOMEM);
        CHECK(u == NULL);
        CHECK(why[0] != '\0' || rc == SQLLOCK_ENOMEM);
        check_scrub(text, NULL);
    } else {
        size_t slen = strcspn(text, ":");

        CHECK(strstr(text, "%00") == NULL);
        CHECK(u != NULL && u->raw == text);
        CHECK(strlen(u->scheme) == slen && slen > 0);
        for (i = 0; i < slen; i++)
            CHECK(u->scheme[i] == ((text[i] >= 'A' && text[i] <= 'Z')
                                       ? text[i] + 32 : text[i]));
        CHECK(u->port >= 0 && u->port <= 65535);
        CHECK(u->path != NULL);
        CHECK(u->nparams >= 0 && u->nparams <= 32);
        for (i = 0; i < (size_t)u->nparams; i++)
            CHECK(u->keys[i][0] != '\0' && u->values[i] != NULL);
        CHECK(u->host == NULL || u->host[0] != '\0');
        CHECK(u->has_authority || (u->user == NULL && u->host == NULL &&
                                   u->password == NULL && u->port == 0));
        check_fixed_point(text, u);
        check_scrub(text, u);
        sqllock__url_free(u);
    }

    red = sqllock__url_redact(text);
    if (red != NULL) {
        n = strlen(red);
        CHECK(n <= 4 * size + 3);
        check_userinfo(text, red);
        check_query(text, red);
        free(red);
    }
    free(text);
    return 0;
}
