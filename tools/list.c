/*
 * list.c -- `sqllock list [--json]`: every row of the lease table, as an
 * aligned table for people or as a JSON array for programs.
 *
 * The rows are copied out of sqllock_list()'s callback first and printed
 * afterwards, so the table's columns can be sized to fit, and so that an
 * error halfway through the walk never leaves half a JSON document on
 * stdout.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* One lease row, with its strings owned by the copy. */
typedef struct list_row {
    char *name;
    char *owner;
    char *holder;
    int64_t token;
    int64_t acquired_at_ms;
    int64_t expires_at_ms;
    int64_t remaining_ms;
    int marker;                 /* a kind marker (contract N1) */
} list_row;

typedef struct list_rows {
    list_row *rows;
    size_t count;
    size_t cap;
} list_rows;

static char *copy_text(const char *s)
{
    size_t n;
    char *c;

    if (s == NULL)
        s = "";
    n = strlen(s) + 1;
    c = malloc(n);
    if (c != NULL)
        memcpy(c, s, n);
    return c;
}

static void rows_free(list_rows *lr)
{
    size_t i;

    for (i = 0; i < lr->count; i++) {
        free(lr->rows[i].name);
        free(lr->rows[i].owner);
        free(lr->rows[i].holder);
    }
    free(lr->rows);
}

/* A copy of a row's name for people: a row a semaphore, a shared lock,
 * a fair queue or an election keeps under NAME (NAME, the separator
 * 0x1f, a tag; see core/internal.h) is shown as "NAME [tag]", and the
 * row NAME that marks it as one of them (its owner is a kind marker's,
 * sqllock_kind_marker()) as "NAME [kind: semaphore]". */
static char *display_name(const char *name, const char *owner)
{
    const char *sep = strchr(name, '\x1f'), *kind = sqllock_kind_marker(owner);
    size_t blen;
    char *out;

    if (sep == NULL && kind != NULL) {
        out = malloc(strlen(name) + strlen(kind) + 10);
        if (out != NULL)
            sprintf(out, "%s [kind: %s]", name, kind);
        return out;
    }
    if (sep == NULL)
        return copy_text(name);
    blen = (size_t)(sep - name);
    out = malloc(strlen(name) + 3);
    if (out == NULL)
        return NULL;
    memcpy(out, name, blen);
    sprintf(out + blen, " [%s]", sep + 1);
    return out;
}

/* The sqllock_list() callback: appends a copy of the row. */
static int collect_row(void *ctx, const sqllock_lease_info *info)
{
    list_rows *lr = ctx;
    list_row *r;

    if (lr->count == lr->cap) {
        size_t cap = lr->cap != 0 ? lr->cap * 2 : 16;
        list_row *grown = realloc(lr->rows, cap * sizeof *grown);

        if (grown == NULL)
            return SQLLOCK_ENOMEM;
        lr->rows = grown;
        lr->cap = cap;
    }
    r = &lr->rows[lr->count];
    r->name = display_name(info->name, info->owner);
    r->marker = sqllock_kind_marker(info->owner) != NULL;
    r->owner = copy_text(info->owner);
    r->holder = copy_text(info->holder);
    r->token = info->token;
    r->acquired_at_ms = info->acquired_at_ms;
    r->expires_at_ms = info->expires_at_ms;
    r->remaining_ms = info->remaining_ms;
    if (r->name == NULL || r->owner == NULL || r->holder == NULL) {
        free(r->name);
        free(r->owner);
        free(r->holder);
        return SQLLOCK_ENOMEM;
    }
    lr->count++;
    return 0;
}

/* The number of terminal columns `s` takes: one per UTF-8 code point (a
 * fair guess for the scripts lock names are written in). */
static size_t text_width(const char *s)
{
    size_t w = 0;

    for (; *s != '\0'; s++) {
        if (((unsigned char)*s & 0xC0) != 0x80)
            w++;
    }
    return w;
}

/* The length of the valid UTF-8 sequence at `s` (1 to 4), or 0 when the
 * bytes there are not one: overlong forms, surrogates and values above
 * U+10FFFF are not valid. */
static size_t utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    size_t n, i;
    unsigned long cp;

    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4, cp = c & 0x07;
    else
        return 0;
    for (i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000)
        || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
        return 0;
    return n;
}

int cli_text_ok(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, n;

    while (i < len) {
        if (p[i] < 0x20 || p[i] == 0x7F)
            return 0;
        n = utf8_len(p + i);
        /* Not a sequence, one cut by `len`, or a C1 control character
         * (U+0080..U+009F: C2 80..C2 9F). */
        if (n == 0 || n > len - i || (p[i] == 0xC2 && p[i + 1] < 0xA0))
            return 0;
        i += n;
    }
    return 1;
}

/* Prints `text` for the table, padded with spaces to `width` columns.
 * Control characters and bytes that are not valid UTF-8 are shown as '?',
 * so that a stray byte in the table can neither move the terminal's
 * cursor nor garble the columns. */
void cli_print_cell(const char *text, size_t width)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t w = text_width(text);

    while (*s != '\0') {
        size_t n = utf8_len(s);

        if (n == 0 || (n == 1 && (*s < 0x20 || *s == 0x7F))) {
            putchar('?');
            s++;
        } else {
            fwrite(s, 1, n, stdout);
            s += n;
        }
    }
    for (; w < width; w++)
        putchar(' ');
}

void cli_format_span(char *buf, size_t size, int64_t ms)
{
    if (ms < 0)
        ms = 0;
    if (ms < 60000)
        snprintf(buf, size, "%" PRId64 ".%" PRId64 "s", ms / 1000,
                 ms % 1000 / 100);
    else if (ms < 3600000)
        snprintf(buf, size, "%" PRId64 "m%02" PRId64 "s", ms / 60000,
                 ms % 60000 / 1000);
    else
        snprintf(buf, size, "%" PRId64 "h%02" PRId64 "m", ms / 3600000,
                 ms % 3600000 / 60000);
}

void cli_format_left(char *buf, size_t size, int64_t remaining_ms)
{
    char span[32];

    if (remaining_ms >= 0) {
        cli_format_span(buf, size, remaining_ms);
    } else {
        cli_format_span(span, sizeof span,
                    remaining_ms == INT64_MIN ? INT64_MAX : -remaining_ms);
        snprintf(buf, size, "expired %s ago", span);
    }
}

static void print_table(const list_rows *lr)
{
    static const char *const heads[] = { "NAME", "OWNER", "TOKEN", "HOLDER" };
    size_t width[4], i, c;
    char num[32];

    for (c = 0; c < 4; c++)
        width[c] = strlen(heads[c]);
    for (i = 0; i < lr->count; i++) {
        const list_row *r = &lr->rows[i];
        size_t w;

        if ((w = text_width(r->name)) > width[0])
            width[0] = w;
        if ((w = text_width(r->owner)) > width[1])
            width[1] = w;
        if ((w = (size_t)snprintf(num, sizeof num, "%" PRId64, r->token))
            > width[2])
            width[2] = w;
        if ((w = text_width(r->holder)) > width[3])
            width[3] = w;
    }
    for (c = 0; c < 4; c++) {
        cli_print_cell(heads[c], width[c]);
        fputs("  ", stdout);
    }
    puts("LEFT");
    for (i = 0; i < lr->count; i++) {
        const list_row *r = &lr->rows[i];
        char left[64];

        cli_print_cell(r->name, width[0]);
        fputs("  ", stdout);
        cli_print_cell(r->owner, width[1]);
        fputs("  ", stdout);
        printf("%*" PRId64 "  ", (int)width[2], r->token);
        cli_print_cell(r->holder, width[3]);
        /* A marker's thousand years are "never" (it is never freed). */
        if (r->marker)
            snprintf(left, sizeof left, "never");
        else
            cli_format_left(left, sizeof left, r->remaining_ms);
        printf("  %s\n", left);
    }
}

/* Prints `s` as a JSON string: quotes, backslashes and control characters
 * escaped; any byte that is not valid UTF-8 becomes U+FFFD, so the output
 * is always valid JSON. */
void cli_print_json_string(const char *text)
{
    const unsigned char *s = (const unsigned char *)text;

    putchar('"');
    while (*s != '\0') {
        size_t n = utf8_len(s);

        if (n == 0) {
            fputs("\\ufffd", stdout);
            s++;
            continue;
        }
        if (n > 1) {
            fwrite(s, 1, n, stdout);
        } else if (*s == '"' || *s == '\\') {
            putchar('\\');
            putchar(*s);
        } else if (*s == '\n') {
            fputs("\\n", stdout);
        } else if (*s == '\r') {
            fputs("\\r", stdout);
        } else if (*s == '\t') {
            fputs("\\t", stdout);
        } else if (*s < 0x20 || *s == 0x7F) {
            printf("\\u%04x", *s);
        } else {
            putchar(*s);
        }
        s += n;
    }
    putchar('"');
}

static void print_json(const list_rows *lr)
{
    size_t i;

    if (lr->count == 0) {
        puts("[]");
        return;
    }
    puts("[");
    for (i = 0; i < lr->count; i++) {
        const list_row *r = &lr->rows[i];

        fputs("  {\"name\": ", stdout);
        cli_print_json_string(r->name);
        fputs(", \"owner\": ", stdout);
        cli_print_json_string(r->owner);
        printf(", \"token\": %" PRId64 ", \"holder\": ", r->token);
        cli_print_json_string(r->holder);
        printf(", \"acquired_at_ms\": %" PRId64 ", \"expires_at_ms\": %"
               PRId64 ", \"remaining_ms\": %" PRId64 "}%s\n",
               r->acquired_at_ms, r->expires_at_ms, r->remaining_ms,
               i + 1 < lr->count ? "," : "");
    }
    puts("]");
}

int cli_cmd_list(const cli_ctx *ctx, int argc, char **argv)
{
    cli_ctx c = *ctx;
    int help = 0, json = 0, npos, rc;
    const cli_opt opts[] = {
        CLI_OPTS_DB(c), { "json", NULL, &json, 0 },
        { "help", NULL, &help, 0 }, { NULL, NULL, NULL, 0 }
    };
    list_rows lr = { NULL, 0, 0 };
    sqllock_db *db;

    rc = cli_parse("list", argc, argv, opts, NULL, 0, &npos, NULL);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (help)
        return cli_help();
    rc = cli_open_db(&c, NULL, CLI_OPEN_READ, &db, NULL);
    if (rc != CLI_EXIT_OK)
        return rc;
    rc = sqllock_list(db, collect_row, &lr);
    if (rc != SQLLOCK_OK) {
        if (rc == SQLLOCK_ENOMEM && sqllock_errcode(db) == SQLLOCK_OK)
            cli_error("list: %s", sqllock_strerror(rc));
        else
            cli_db_error(db, rc, "list");
        rc = CLI_EXIT_DB;
    } else {
        if (json)
            print_json(&lr);
        else
            print_table(&lr);
        rc = fflush(stdout) == 0 && !ferror(stdout) ? CLI_EXIT_OK
                                                    : CLI_EXIT_DB;
        if (rc != CLI_EXIT_OK)
            cli_error("list: cannot write to stdout");
    }
    rows_free(&lr);
    sqllock_close(db);
    return rc;
}
