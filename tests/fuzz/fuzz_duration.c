/*
 * fuzz_duration.c -- libFuzzer target for sqllock_parse_duration()
 * (core/util.c), which reads every --ttl, --wait, --kill-after,
 * --renew-every and --older-than of the tool.
 *
 * The input is the text (cut at its first NUL). Besides "no crash, no
 * undefined behaviour" it checks the parser against a reference written
 * independently here, with 128-bit arithmetic and the fraction divided
 * out digit by digit from its end (the parser strips the fraction's
 * ending zeros and divides once):
 *
 *   - it accepts exactly the texts of the grammar of sqllock.h -- a bare
 *     whole number of seconds, or components DIGITS[.DIGITS]UNIT with
 *     units ms, s, m, h, d strictly largest first and a fraction only in
 *     the last -- whose value is a whole number of milliseconds that fits
 *     in int64 (so it never overflows, never wraps to a negative or small
 *     number, never rounds), and gives exactly that value;
 *   - a value it returns reads back the same, written every way the
 *     grammar allows: "<ms>ms", "<n>s" (and bare "<n>"), "<n>m", "<n>h",
 *     "<n>d" where the value divides evenly, each unit with a decimal
 *     fraction where one ends within 10 digits, and the compound forms
 *     ("1d2h3m4s5ms" and "1d2h3m4.005s");
 *   - one millisecond more than the largest value is refused;
 *   - on failure it leaves *ms alone and gives a reason (the internal
 *     sqllock__parse_duration()), on success none.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "sqllock.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                        \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "fuzz_duration: property failed: %s "          \
                    "(line %d)\n", #cond, __LINE__);                       \
            abort();                                                       \
        }                                                                  \
    } while (0)

typedef unsigned __int128 u128;

/* Units largest first; a component's unit must stand later here than the
 * one before it. */
static const char *const ref_names[] = { "d", "h", "m", "s", "ms" };
static const int64_t ref_scale[] = { 86400000, 3600000, 60000, 1000, 1 };
#define REF_UNITS 5

static int ref_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Adds a * b to *sum, saturating at just above INT64_MAX (which is all
 * the reference needs to tell "fits" from "does not"). */
static void ref_add(u128 *sum, u128 a, u128 b)
{
    const u128 cap = (u128)INT64_MAX + 1;

    if (a > cap)
        a = cap;
    if (b != 0 && a > cap / b) {
        *sum = cap;
        return;
    }
    *sum += a * b;
    if (*sum > cap)
        *sum = cap;
}

/* The reference: 1 and *ms when the text is valid, else 0. */
static int reference(const char *s, int64_t *ms)
{
    const u128 cap = (u128)INT64_MAX + 1;
    size_t n = strlen(s), i = 0, j;
    u128 total = 0, whole;
    int prev = -1;

    if (n == 0)
        return 0;
    if (strspn(s, "0123456789") == n) {
        /* A bare number: whole seconds. */
        for (whole = 0, j = 0; j < n; j++) {
            whole = whole * 10 + (unsigned)(s[j] - '0');
            if (whole > cap)
                whole = cap;
        }
        ref_add(&total, whole, 1000);
        if (total > (u128)INT64_MAX)
            return 0;
        *ms = (int64_t)total;
        return 1;
    }
    while (i < n) {
        size_t d0 = i, f0 = 0, f1 = 0, u0, len;
        int unit = -1, u, has_frac = 0;
        u128 x;

        while (ref_digit(s[i]))
            i++;
        if (i == d0)
            return 0;
        if (s[i] == '.') {
            has_frac = 1;
            f0 = ++i;
            while (ref_digit(s[i]))
                i++;
            f1 = i;
            if (f1 == f0)
                return 0;
        }
        u0 = i;
        while ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z'))
            i++;
        len = i - u0;
        for (u = 0; u < REF_UNITS; u++)
            if (strlen(ref_names[u]) == len &&
                strncmp(ref_names[u], s + u0, len) == 0)
                unit = u;
        if (unit < 0 || unit <= prev)
            return 0;
        prev = unit;
        if (has_frac && i < n)
            return 0;
        for (whole = 0, j = d0; ref_digit(s[j]); j++) {
            whole = whole * 10 + (unsigned)(s[j] - '0');
            if (whole > cap)
                whole = cap;
        }
        ref_add(&total, whole, (u128)ref_scale[unit]);
        if (has_frac) {
            /* 0.d1..dk of the unit = (d1*U + (d2*U + ... (dk*U)/10 ...)
             * /10)/10; the whole is a whole number of milliseconds only
             * if every step divides exactly. */
            x = 0;
            for (j = f1; j > f0; j--) {
                x += (u128)(s[j - 1] - '0') * (u128)ref_scale[unit];
                if (x % 10 != 0)
                    return 0;
                x /= 10;
            }
            ref_add(&total, x, 1);
        }
    }
    if (total > (u128)INT64_MAX)
        return 0;
    *ms = (int64_t)total;
    return 1;
}

static void check_text(const char *text, int64_t want)
{
    int64_t back = -1;

    if (sqllock_parse_duration(text, &back) != SQLLOCK_OK || back != want) {
        fprintf(stderr, "fuzz_duration: '%s' does not read back as %lld "
                "(got %lld)\n", text, (long long)want, (long long)back);
        abort();
    }
}

static void check_reads_back(int64_t ms, int64_t unit, const char *suffix)
{
    char buf[48];

    if (ms % unit != 0)
        return;
    snprintf(buf, sizeof buf, "%lld%s", (long long)(ms / unit), suffix);
    check_text(buf, ms);
}

/* `ms` as one unit with a decimal fraction, where the fraction ends
 * within 10 digits. */
static void check_fraction(int64_t ms, int u)
{
    int64_t whole = ms / ref_scale[u], rest = ms % ref_scale[u];
    char digits[12], buf[64];
    int k;

    for (k = 0; k < 10 && rest != 0; k++) {
        rest *= 10;
        digits[k] = (char)('0' + rest / ref_scale[u]);
        rest %= ref_scale[u];
    }
    if (rest != 0 || k == 0)
        return;
    digits[k] = '\0';
    snprintf(buf, sizeof buf, "%lld.%s%s", (long long)whole, digits,
             ref_names[u]);
    check_text(buf, ms);
}

/* `ms` as components d, h, m, s and ms (or the milliseconds as a fraction
 * of the seconds), leaving out those that are 0. */
static void check_compound(int64_t ms, int frac_seconds)
{
    char buf[96];
    size_t o = 0;
    int64_t rest = ms;
    int u;

    buf[0] = '\0';
    for (u = 0; u < 3; u++) {
        if (rest / ref_scale[u] != 0)
            o += (size_t)snprintf(buf + o, sizeof buf - o, "%lld%s",
                                  (long long)(rest / ref_scale[u]),
                                  ref_names[u]);
        rest %= ref_scale[u];
    }
    if (frac_seconds && rest % 1000 != 0)
        o += (size_t)snprintf(buf + o, sizeof buf - o, "%lld.%03llds",
                              (long long)(rest / 1000),
                              (long long)(rest % 1000));
    else {
        if (rest / 1000 != 0)
            o += (size_t)snprintf(buf + o, sizeof buf - o, "%llds",
                                  (long long)(rest / 1000));
        if (rest % 1000 != 0)
            o += (size_t)snprintf(buf + o, sizeof buf - o, "%lldms",
                                  (long long)(rest % 1000));
    }
    if (o == 0)
        snprintf(buf, sizeof buf, "0s");
    check_text(buf, ms);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text;
    const char *why = "unset";
    int64_t ms = INT64_C(-7), want = 0, again = INT64_C(-7);
    int rc, ok, u;

    if (size > 256)
        return 0;
    text = malloc(size + 1);
    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';

    rc = sqllock_parse_duration(text, &ms);
    ok = reference(text, &want);
    CHECK(rc == SQLLOCK_OK || rc == SQLLOCK_EINVAL);
    if (ok != (rc == SQLLOCK_OK)) {
        fprintf(stderr, "fuzz_duration: '%s': parser says %d, reference "
                "says %s\n", text, rc, ok ? "valid" : "invalid");
        abort();
    }
    CHECK(sqllock__parse_duration(text, &again, &why) == rc);
    if (rc == SQLLOCK_OK) {
        CHECK(why == NULL);
        CHECK(again == ms);
        CHECK(ms == want);
        CHECK(ms >= 0);
        check_reads_back(ms, 1, "ms");
        check_reads_back(ms, 1000, "");
        check_reads_back(ms, 1000, "s");
        check_reads_back(ms, 60000, "m");
        check_reads_back(ms, 3600000, "h");
        check_reads_back(ms, 86400000, "d");
        for (u = 0; u < 4; u++)
            check_fraction(ms, u);
        check_compound(ms, 0);
        check_compound(ms, 1);
    } else {
        CHECK(ms == INT64_C(-7));
        CHECK(again == INT64_C(-7));
        CHECK(why != NULL && *why != '\0');
    }
    /* Overflow: one millisecond past the largest value. */
    CHECK(sqllock_parse_duration("9223372036854775808ms", &ms) ==
          SQLLOCK_EINVAL);
    CHECK(sqllock_parse_duration("106751991167d7h12m55.808s", &ms) ==
          SQLLOCK_EINVAL);
    CHECK(sqllock_parse_duration(NULL, &ms) == SQLLOCK_EINVAL);
    CHECK(sqllock_parse_duration(text, NULL) == SQLLOCK_EINVAL);
    free(text);
    return 0;
}
