/*
 * tu_history.c -- the recorder and the checker of tu_history.h.
 *
 * The checker reads the whole file, sorts the events by time, pairs each
 * completion with its invocation, rebuilds the holds from the sections,
 * and judges rule by rule, name by name. Sizes are a fault test's: up to
 * some hundred thousand events, each rule O(n log n) or O(n x the ops
 * within one ttl).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sqllock.h"
#include "tu_history.h"

/* ------------------------------------------------------------------ */
/* Recording                                                           */
/* ------------------------------------------------------------------ */

struct tu_hist {
    int fd;
    _Atomic int64_t next;
    char path[1024];
};

#define LINE_MAX_ 1024
#define WORD_MAX 48
#define NAME_MAX_ 640            /* 200 bytes escaped, and room */

tu_hist *tu_hist_open(const char *path)
{
    tu_hist *h;

    if (path == NULL || strlen(path) >= sizeof h->path) {
        errno = EINVAL;
        return NULL;
    }
    h = calloc(1, sizeof *h);
    if (h == NULL)
        return NULL;
    h->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (h->fd < 0) {
        int e = errno;

        free(h);
        errno = e;
        return NULL;
    }
    strcpy(h->path, path);
    return h;
}

void tu_hist_close(tu_hist *h)
{
    if (h == NULL)
        return;
    close(h->fd);
    free(h);
}

const char *tu_hist_path(const tu_hist *h)
{
    return h != NULL ? h->path : "";
}

int64_t tu_hist_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Writes `s` into `out` (of `size`), bytes outside '!'..'~' and '%' as
 * %XX; "-" for an empty string. */
static void escape(char *out, size_t size, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;

    if (s == NULL || *s == '\0')
        s = "-";
    for (; *s != '\0' && n + 4 < size; s++) {
        unsigned char c = (unsigned char)*s;

        if (c < '!' || c > '~' || c == '%') {
            out[n++] = '%';
            out[n++] = hex[c >> 4];
            out[n++] = hex[c & 15];
        } else {
            out[n++] = (char)c;
        }
    }
    out[n] = '\0';
}

static void put(tu_hist *h, const char *line, int len)
{
    ssize_t w;

    if (h == NULL || len <= 0 || len >= LINE_MAX_)
        return;
    /* One write() of a whole line on an O_APPEND descriptor: lines of
     * several processes never interleave. */
    do
        w = write(h->fd, line, (size_t)len);
    while (w < 0 && errno == EINTR);
}

int64_t tu_hist_invoke(tu_hist *h, const char *client, const char *op,
                       const char *name, int64_t token, int64_t ttl_ms)
{
    char line[LINE_MAX_], who[WORD_MAX * 3], what[NAME_MAX_];
    int64_t seq;

    if (h == NULL)
        return 0;
    /* Unique across the processes that share the file: a forked child
     * counts on from its parent's count, under another pid. */
    seq = ((int64_t)getpid() << 24) | (atomic_fetch_add(&h->next, 1) + 1);
    escape(who, sizeof who, client);
    escape(what, sizeof what, name);
    put(h, line, snprintf(line, sizeof line, "%lld %s %lld I %s %s %lld %lld\n",
                          (long long)tu_hist_now_us(), who, (long long)seq,
                          op, what, (long long)token, (long long)ttl_ms));
    return seq;
}

void tu_hist_complete(tu_hist *h, const char *client, int64_t seq,
                      const char *outcome, int64_t token)
{
    char line[LINE_MAX_], who[WORD_MAX * 3];

    if (h == NULL)
        return;
    escape(who, sizeof who, client);
    put(h, line, snprintf(line, sizeof line, "%lld %s %lld C %s %lld\n",
                          (long long)tu_hist_now_us(), who, (long long)seq,
                          outcome, (long long)token));
}

const char *tu_hist_outcome(int status)
{
    switch (status) {
    case SQLLOCK_OK:
        return "ok";
    case SQLLOCK_LOST:
        return "lost";
    case SQLLOCK_ECONNECT:
    case SQLLOCK_ECANCELED:
    case SQLLOCK_EDB:
    case SQLLOCK_ESYS:
        /* The statement may have run (and committed) on the server:
         * a lost connection, a canceled wait for a synchronous standby,
         * an error of unknown kind. */
        return "info";
    default:
        return "fail";
    }
}

static void point_at(tu_hist *h, int64_t t, const char *client,
                     const char *kind, const char *name, int64_t a,
                     const char *b)
{
    char line[LINE_MAX_], who[WORD_MAX * 3], what[NAME_MAX_];

    if (h == NULL)
        return;
    escape(who, sizeof who, client);
    escape(what, sizeof what, name);
    put(h, line, snprintf(line, sizeof line, "%lld %s 0 %s %s %lld%s%s\n",
                          (long long)t, who, kind, what,
                          (long long)a, b != NULL ? " " : "",
                          b != NULL ? b : ""));
}

static void point(tu_hist *h, const char *client, const char *kind,
                  const char *name, int64_t a, const char *b)
{
    point_at(h, tu_hist_now_us(), client, kind, name, a, b);
}

void tu_hist_section_end_at(tu_hist *h, const char *client,
                            const char *name, int64_t token, int64_t t_us)
{
    point_at(h, t_us, client, "E", name, token, NULL);
}

void tu_hist_section(tu_hist *h, const char *client, const char *name,
                     int64_t token, int shared)
{
    point(h, client, "S", name, token, shared ? "s" : "x");
}

void tu_hist_section_end(tu_hist *h, const char *client, const char *name,
                         int64_t token)
{
    point(h, client, "E", name, token, NULL);
}

void tu_hist_told_lost(tu_hist *h, const char *client, const char *name,
                       int64_t token)
{
    point(h, client, "N", name, token, NULL);
}

void tu_hist_watched(tu_hist *h, const char *client, const char *name,
                     int64_t token)
{
    point(h, client, "W", name, token, NULL);
}

void tu_hist_capacity(tu_hist *h, const char *name, int capacity)
{
    point(h, "-", "K", name, capacity, NULL);
}

void tu_hist_final(tu_hist *h, const char *name, int64_t value)
{
    point(h, "-", "F", name, value, NULL);
}

/* ------------------------------------------------------------------ */
/* Reading                                                             */
/* ------------------------------------------------------------------ */

enum { OP_ACQUIRE, OP_SHARE, OP_RENEW, OP_RELEASE, OP_WRITE, OP_FORCE,
       OP_WATCH };
enum { OUT_NONE, OUT_OK, OUT_FAIL, OUT_LOST, OUT_INFO };

static const char *const op_words[] = {"acquire", "share", "renew",
                                       "release", "write", "force",
                                       "watch"};
static const char *const out_words[] = {"(no completion)", "ok", "fail",
                                        "lost", "info"};

typedef struct ev {
    int64_t t, seq, a, b;
    int line, client, name;
    char kind;                   /* I C S E N K F */
    int op, outcome, shared;
} ev;

typedef struct op {
    int64_t invoke, complete;    /* complete: INT64_MAX without one */
    int64_t token, ttl_us, seq;
    int client, name, op, outcome, shared;
} op;

typedef struct hold {
    int64_t start, end, token;
    int client, name, shared, open;
} hold;

/* Interned words: index by string through an open-addressing table. */
typedef struct strtab {
    char **s;
    int n, cap;
    int *slot;                   /* index + 1; 0: empty */
    int nslot;                   /* a power of two, over 2 n */
} strtab;

typedef struct hist {
    ev *ev;
    int nev, capev;
    op *op;
    int nop;
    hold *hold;
    int nhold;
    strtab clients, names;
    int *capacity;               /* per name; 0: not given (1) */
    int64_t t0;
    FILE *report;
    tu_hist_result *res;
    int shown[TU_H_RULES];
} hist;

static unsigned hash(const char *s)
{
    unsigned h = 2166136261u;

    for (; *s != '\0'; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static int intern(strtab *t, const char *s)
{
    unsigned i;

    if (2 * (t->n + 1) > t->nslot) {
        int nslot = t->nslot ? 2 * t->nslot : 256, k;
        int *slot = calloc((size_t)nslot, sizeof *slot);

        if (slot == NULL)
            return -1;
        for (k = 0; k < t->n; k++) {
            for (i = hash(t->s[k]) & (unsigned)(nslot - 1); slot[i] != 0;
                 i = (i + 1) & (unsigned)(nslot - 1))
                ;
            slot[i] = k + 1;
        }
        free(t->slot);
        t->slot = slot;
        t->nslot = nslot;
    }
    for (i = hash(s) & (unsigned)(t->nslot - 1); t->slot[i] != 0;
         i = (i + 1) & (unsigned)(t->nslot - 1))
        if (strcmp(t->s[t->slot[i] - 1], s) == 0)
            return t->slot[i] - 1;
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 64;
        char **p = realloc(t->s, (size_t)cap * sizeof *p);

        if (p == NULL)
            return -1;
        t->s = p;
        t->cap = cap;
    }
    t->s[t->n] = strdup(s);
    if (t->s[t->n] == NULL)
        return -1;
    t->slot[i] = t->n + 1;
    return t->n++;
}

static void strtab_free(strtab *t)
{
    int i;

    for (i = 0; i < t->n; i++)
        free(t->s[i]);
    free(t->s);
    free(t->slot);
}

static int word_index(const char *w, const char *const *words, int n)
{
    int i;

    for (i = 0; i < n; i++)
        if (strcmp(w, words[i]) == 0)
            return i;
    return -1;
}

/* Parses one line into *e; 0, or -1 when malformed. */
static int parse(hist *H, char *line, int lineno, ev *e)
{
    char who[WORD_MAX * 3 + 1], kind[4], w1[NAME_MAX_ + 1],
         w2[NAME_MAX_ + 1], w3[32];
    long long t, seq, a = 0, b = 0;
    int n;

    memset(e, 0, sizeof *e);
    e->line = lineno;
    n = sscanf(line, "%lld %144s %lld %3s", &t, who, &seq, kind);
    if (n != 4 || kind[1] != '\0')
        return -1;
    e->t = t;
    e->seq = seq;
    e->kind = kind[0];
    e->client = intern(&H->clients, who);
    if (e->client < 0)
        return -1;
    switch (e->kind) {
    case 'I':
        if (sscanf(line, "%*s %*s %*s %*s %640s %640s %lld %lld", w1, w2,
                   &a, &b) != 4)
            return -1;
        e->op = word_index(w1, op_words, 6);
        e->name = intern(&H->names, w2);
        if (e->op < 0 || e->name < 0 || b < 0)
            return -1;
        e->a = a;
        e->b = b;
        return 0;
    case 'C':
        if (sscanf(line, "%*s %*s %*s %*s %640s %lld", w1, &a) != 2)
            return -1;
        e->outcome = word_index(w1, out_words, 5);
        if (e->outcome <= OUT_NONE)
            return -1;
        e->a = a;
        return 0;
    case 'S':
        n = sscanf(line, "%*s %*s %*s %*s %640s %lld %31s", w1, &a, w3);
        if (n != 3 || (strcmp(w3, "x") != 0 && strcmp(w3, "s") != 0))
            return -1;
        e->shared = w3[0] == 's';
        break;
    case 'E':
    case 'N':
    case 'W':
    case 'K':
    case 'F':
        if (sscanf(line, "%*s %*s %*s %*s %640s %lld", w1, &a) != 2)
            return -1;
        break;
    default:
        return -1;
    }
    e->name = intern(&H->names, w1);
    e->a = a;
    return e->name < 0 ? -1 : 0;
}

static int by_time(const void *x, const void *y)
{
    const ev *a = x, *b = y;

    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    return a->line - b->line;
}

static int read_file(hist *H, const char *path)
{
    FILE *f = fopen(path, "r");
    char line[LINE_MAX_ + 2];
    int lineno = 0;

    if (f == NULL) {
        if (H->report != NULL)
            fprintf(H->report, "history %s: %s\n", path, strerror(errno));
        return -1;
    }
    while (fgets(line, sizeof line, f) != NULL) {
        lineno++;
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (H->nev == H->capev) {
            int cap = H->capev ? 2 * H->capev : 1024;
            ev *p = realloc(H->ev, (size_t)cap * sizeof *p);

            if (p == NULL)
                break;
            H->ev = p;
            H->capev = cap;
        }
        if (parse(H, line, lineno, &H->ev[H->nev]) != 0) {
            if (H->report != NULL)
                fprintf(H->report, "history %s:%d: malformed: %s", path,
                        lineno, line);
            fclose(f);
            return -1;
        }
        H->nev++;
    }
    fclose(f);
    if (H->nev > 0)                     /* an empty file: H->ev NULL */
        qsort(H->ev, (size_t)H->nev, sizeof *H->ev, by_time);
    H->t0 = H->nev > 0 ? H->ev[0].t : 0;
    return 0;
}

static int by_client_seq(const void *x, const void *y)
{
    const op *a = x, *b = y;

    if (a->client != b->client)
        return a->client - b->client;
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    return 0;
}

/* The operations, from the invocations, each with its completion. */
static int build_ops(hist *H)
{
    int i, n = 0;

    for (i = 0; i < H->nev; i++)
        n += H->ev[i].kind == 'I' || H->ev[i].kind == 'W';
    H->op = calloc((size_t)n + 1, sizeof *H->op);
    if (H->op == NULL)
        return -1;
    for (i = 0; i < H->nev; i++) {
        const ev *e = &H->ev[i];
        op *o;

        if (e->kind != 'I' && e->kind != 'W')
            continue;
        o = &H->op[H->nop++];
        o->invoke = e->t;
        o->complete = INT64_MAX;
        if (e->kind == 'W') {
            /* An instant, not an operation: its own sequence, which no
             * completion names. */
            o->complete = e->t;
            o->outcome = OUT_OK;
            o->seq = -1 - i;
            o->client = e->client;
            o->name = e->name;
            o->op = OP_WATCH;
            o->token = e->a;
            continue;
        }
        o->seq = e->seq;
        o->client = e->client;
        o->name = e->name;
        o->op = e->op;
        o->token = e->a;
        o->ttl_us = e->b * 1000;
        o->shared = e->op == OP_SHARE;
    }
    qsort(H->op, (size_t)H->nop, sizeof *H->op, by_client_seq);
    for (i = 0; i < H->nev; i++) {
        const ev *e = &H->ev[i];
        op key, *o;

        if (e->kind != 'C')
            continue;
        key.client = e->client;
        key.seq = e->seq;
        o = bsearch(&key, H->op, (size_t)H->nop, sizeof *H->op,
                    by_client_seq);
        if (o == NULL || o->outcome != OUT_NONE) {
            if (H->report != NULL)
                fprintf(H->report, "history line %d: a completion of %s "
                        "with no invocation (seq %lld)\n", e->line,
                        H->clients.s[e->client], (long long)e->seq);
            return -1;
        }
        o->complete = e->t;
        o->outcome = e->outcome;
        if (o->op == OP_ACQUIRE || o->op == OP_SHARE)
            o->token = e->a;
    }
    return 0;
}

/* The holds, from the sections: S opens one; E, N, or an operation of
 * the client on that token that ended "lost" closes it. */
static int build_holds(hist *H)
{
    struct { int client, name; int64_t token; } *early;
    int i, j, n = 0, nopen = 0, nearly = 0, closed, *open_ix;

    H->capacity = calloc((size_t)H->names.n + 1, sizeof *H->capacity);
    for (i = 0; i < H->nev; i++)
        n += H->ev[i].kind == 'S';
    H->hold = calloc((size_t)n + 1, sizeof *H->hold);
    open_ix = malloc(((size_t)n + 1) * sizeof *open_ix);
    early = malloc(((size_t)n + 1) * sizeof *early);
    if (H->hold == NULL || H->capacity == NULL || open_ix == NULL ||
        early == NULL) {
        free(open_ix);
        free(early);
        return -1;
    }
    for (i = 0; i < H->nev; i++) {
        const ev *e = &H->ev[i];
        int name = e->name, close_ = 0;
        int64_t token = e->a;

        switch (e->kind) {
        case 'S': {
            hold *h = &H->hold[H->nhold++];

            h->start = e->t;
            h->end = INT64_MAX;
            h->token = e->a;
            h->client = e->client;
            h->name = e->name;
            h->shared = e->shared;
            h->open = 1;
            /* Ended before it began (an E at a local deadline that had
             * passed by the grant: sqllock_lease_remaining_ms() 0):
             * an empty hold. */
            for (j = 0; j < nearly; j++)
                if (early[j].client == h->client && early[j].name == h->name
                    && early[j].token == h->token) {
                    h->end = h->start;
                    h->open = 0;
                    early[j] = early[--nearly];
                    break;
                }
            if (h->open)
                open_ix[nopen++] = H->nhold - 1;
            continue;
        }
        case 'K':
            H->capacity[e->name] = (int)e->a;
            continue;
        case 'E':
        case 'N':
            close_ = 1;
            break;
        case 'C': {
            op key, *o;

            if (e->outcome != OUT_LOST)
                continue;
            key.client = e->client;
            key.seq = e->seq;
            o = bsearch(&key, H->op, (size_t)H->nop, sizeof *H->op,
                        by_client_seq);
            if (o == NULL)
                continue;
            name = o->name;
            token = o->token;
            close_ = 1;
            break;
        }
        default:
            continue;
        }
        if (!close_)
            continue;
        closed = 0;
        for (j = nopen - 1; j >= 0; j--) {
            hold *h = &H->hold[open_ix[j]];

            if (h->client == e->client && h->name == name &&
                h->token == token) {
                h->end = e->t;
                h->open = 0;
                open_ix[j] = open_ix[--nopen];
                closed = 1;
            }
        }
        /* An E or N that closed nothing: kept, for a section of that
         * token that has not begun yet -- none that ended already (a
         * second E of one section is no such thing). */
        if (!closed && e->kind != 'C' && nearly < n + 1) {
            for (j = 0; j < H->nhold; j++)
                if (H->hold[j].client == e->client &&
                    H->hold[j].name == name && H->hold[j].token == token)
                    break;
            if (j == H->nhold) {
                early[nearly].client = e->client;
                early[nearly].name = name;
                early[nearly++].token = token;
            }
        }
    }
    free(open_ix);
    free(early);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Judging                                                             */
/* ------------------------------------------------------------------ */

static int64_t slack_us(int64_t ttl_us)
{
    return 2000 + ttl_us / 1000;
}

static double rel_s(const hist *H, int64_t t)
{
    return t == INT64_MAX ? -1.0 : (double)(t - H->t0) / 1e6;
}

static void broke(hist *H, int rule, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void broke(hist *H, int rule, const char *fmt, ...)
{
    va_list ap;

    H->res->broken[rule]++;
    H->res->violations++;
    if (H->report == NULL || H->shown[rule]++ >= 20)
        return;
    fprintf(H->report, "H%d ", rule);
    va_start(ap, fmt);
    vfprintf(H->report, fmt, ap);
    va_end(ap);
    fputc('\n', H->report);
}

static int cap_of(const hist *H, int name)
{
    return H->capacity[name] > 0 ? H->capacity[name] : 1;
}

static int by_name_start(const void *x, const void *y)
{
    const hold *a = x, *b = y;

    if (a->name != b->name)
        return a->name - b->name;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return 0;
}

/* H1: at each hold's start, the holds still open on its name (kept in
 * a list of the ones not yet ended, so that a long history of short
 * holds costs little). */
static void rule_h1(hist *H)
{
    int i, j, nlive = 0, *live;

    qsort(H->hold, (size_t)H->nhold, sizeof *H->hold, by_name_start);
    live = malloc(((size_t)H->nhold + 1) * sizeof *live);
    if (live == NULL)
        return;
    for (i = 0; i < H->nhold; i++) {
        const hold *h = &H->hold[i];
        int cap = cap_of(H, h->name), reported = 0, k = 0;

        if (i > 0 && H->hold[i - 1].name != h->name)
            nlive = 0;
        for (j = 0; j < nlive; j++)
            if (H->hold[live[j]].end > h->start)
                live[k++] = live[j];
        nlive = k;
        for (j = 0; j < nlive && cap == 1 && !reported; j++) {
            const hold *g = &H->hold[live[j]];

            if (h->shared && g->shared)
                continue;
            reported = 1;
            broke(H, TU_H1, "name '%s': %s (token %lld, %s, %.3f s to "
                  "%.3f s) and %s (token %lld, %s, from %.3f s) held it at "
                  "once, and neither had been told of a loss",
                  H->names.s[h->name], H->clients.s[g->client],
                  (long long)g->token, g->shared ? "shared" : "exclusive",
                  rel_s(H, g->start), rel_s(H, g->end),
                  H->clients.s[h->client], (long long)h->token,
                  h->shared ? "shared" : "exclusive", rel_s(H, h->start));
        }
        if (cap > 1 && nlive >= cap)
            broke(H, TU_H1, "name '%s': %d holds at %.3f s, over its "
                  "capacity of %d (the latest: %s, token %lld)",
                  H->names.s[h->name], nlive + 1, rel_s(H, h->start), cap,
                  H->clients.s[h->client], (long long)h->token);
        live[nlive++] = i;
    }
    free(live);
}

/* What the judging of one name works from: its acknowledged grants by
 * completion, with the largest token (of any grant, and of exclusive
 * ones) completed so far; its leases by token; its forced releases. */
typedef struct lease {
    int64_t token;
    const op *grant;             /* the acknowledged acquire; NULL: none */
    int64_t release_invoked;     /* the first release's invocation */
    int64_t released;            /* the first acknowledged release's end */
    int64_t live_until;          /* the latest a server could keep it */
} lease;

typedef struct name_ix {
    const op **ops;              /* the name's operations */
    int nops;
    const op **by_done;          /* its grants, by completion */
    int64_t *max_any, *max_excl;
    int n;
    lease *lease;                /* by token */
    int nlease;
    int64_t *forced;             /* forced releases' invocations, sorted */
    int nforced;
} name_ix;

static int is_grant(const op *o)
{
    return (o->op == OP_ACQUIRE || o->op == OP_SHARE) && o->outcome == OUT_OK;
}

static int cmp64(int64_t a, int64_t b)
{
    return a < b ? -1 : a > b;
}

static int by_complete(const void *x, const void *y)
{
    const op *a = *(const op *const *)x, *b = *(const op *const *)y;

    return cmp64(a->complete, b->complete);
}

static int by_invoke(const void *x, const void *y)
{
    const op *a = *(const op *const *)x, *b = *(const op *const *)y;

    return cmp64(a->invoke, b->invoke);
}

static int by_token(const void *x, const void *y)
{
    const op *a = *(const op *const *)x, *b = *(const op *const *)y;

    if (a->token != b->token)
        return cmp64(a->token, b->token);
    return a->client - b->client;
}

static int by_i64(const void *x, const void *y)
{
    return cmp64(*(const int64_t *)x, *(const int64_t *)y);
}

static lease *lease_of(const name_ix *g, int64_t token)
{
    int lo = 0, hi = g->nlease;

    while (lo < hi) {
        int mid = (lo + hi) / 2;

        if (g->lease[mid].token == token)
            return &g->lease[mid];
        if (g->lease[mid].token < token)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static void name_ix_free(name_ix *g)
{
    free(g->by_done);
    free(g->max_any);
    free(g->max_excl);
    free(g->lease);
    free(g->forced);
}

/* `ops`: the name's `n` operations (sorted by token here). */
static int name_ix_build(const op **ops, int n, name_ix *g)
{
    int i;

    memset(g, 0, sizeof *g);
    g->ops = ops;
    g->nops = n;
    g->by_done = calloc((size_t)n + 1, sizeof *g->by_done);
    g->max_any = calloc((size_t)n + 1, sizeof *g->max_any);
    g->max_excl = calloc((size_t)n + 1, sizeof *g->max_excl);
    g->lease = calloc((size_t)n + 1, sizeof *g->lease);
    g->forced = calloc((size_t)n + 1, sizeof *g->forced);
    if (g->by_done == NULL || g->max_any == NULL || g->max_excl == NULL ||
        g->lease == NULL || g->forced == NULL)
        return -1;
    qsort(ops, (size_t)n, sizeof *ops, by_token);
    for (i = 0; i < n; i++) {
        const op *o = ops[i];
        lease *l;

        if (o->op == OP_FORCE) {
            g->forced[g->nforced++] = o->invoke;
            continue;
        }
        if (is_grant(o))
            g->by_done[g->n++] = o;
        if (g->nlease == 0 || g->lease[g->nlease - 1].token != o->token) {
            l = &g->lease[g->nlease++];
            l->token = o->token;
            l->release_invoked = INT64_MAX;
            l->released = INT64_MAX;
        }
        l = &g->lease[g->nlease - 1];
        if (is_grant(o) && l->grant == NULL)
            l->grant = o;
        if (o->op == OP_RELEASE) {
            if (o->invoke < l->release_invoked)
                l->release_invoked = o->invoke;
            if (o->outcome == OUT_OK && o->complete < l->released)
                l->released = o->complete;
        }
        if (o->op == OP_WATCH)
            l->live_until = INT64_MAX;
        if (o->op == OP_ACQUIRE || o->op == OP_SHARE || o->op == OP_RENEW) {
            /* An acknowledged one holds it to its end + ttl at most; an
             * undecided one may run on the server any time later. */
            int64_t u = INT64_MAX;

            if (o->outcome == OUT_OK)
                u = o->complete + o->ttl_us + slack_us(o->ttl_us);
            if ((o->outcome == OUT_OK || o->outcome == OUT_INFO ||
                 o->outcome == OUT_NONE) && u > l->live_until)
                l->live_until = u;
        }
    }
    qsort(g->forced, (size_t)g->nforced, sizeof *g->forced, by_i64);
    qsort(g->by_done, (size_t)g->n, sizeof *g->by_done, by_complete);
    for (i = 0; i < g->n; i++) {
        int64_t t = g->by_done[i]->token;

        g->max_any[i] = i > 0 && g->max_any[i - 1] > t ? g->max_any[i - 1]
                                                       : t;
        g->max_excl[i] = i > 0 ? g->max_excl[i - 1] : 0;
        if (!g->by_done[i]->shared && t > g->max_excl[i])
            g->max_excl[i] = t;
    }
    return 0;
}

/* The number of grants completed before `t`. */
static int done_before(const name_ix *g, int64_t t)
{
    int lo = 0, hi = g->n;

    while (lo < hi) {
        int mid = (lo + hi) / 2;

        if (g->by_done[mid]->complete < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The largest token of a grant that conflicts with a hold of mode
 * `shared` and completed before `t`; 0 if none. */
static int64_t superseded_by(const name_ix *g, int shared, int64_t t)
{
    int k = done_before(g, t);

    if (k == 0)
        return 0;
    return shared ? g->max_excl[k - 1] : g->max_any[k - 1];
}

/* The first forced release invoked at or after `from`; INT64_MAX: none. */
static int64_t forced_from(const name_ix *g, int64_t from)
{
    int lo = 0, hi = g->nforced;

    while (lo < hi) {
        int mid = (lo + hi) / 2;

        if (g->forced[mid] < from)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < g->nforced ? g->forced[lo] : INT64_MAX;
}

static int is_shared(const name_ix *g, int64_t token)
{
    const lease *l = lease_of(g, token);

    return l != NULL && l->grant != NULL && l->grant->shared;
}

/* H2 on one name. */
static void rule_h2(hist *H, const name_ix *g)
{
    const op **v;
    int i, k = 0;
    int64_t max = 0;
    const op *max_op = NULL;

    if (g->n == 0)
        return;
    v = malloc((size_t)g->n * sizeof *v);
    if (v == NULL)
        return;
    memcpy(v, g->by_done, (size_t)g->n * sizeof *v);
    qsort(v, (size_t)g->n, sizeof *v, by_invoke);
    for (i = 0; i < g->n; i++) {
        const op *b = v[i];

        for (; k < g->n && g->by_done[k]->complete < b->invoke; k++)
            if (g->by_done[k]->token >= max) {
                max = g->by_done[k]->token;
                max_op = g->by_done[k];
            }
        /* The same holder granted its own token again counts up (L8). */
        if (max_op != NULL && b->token <= max &&
            !(b->token == max && b->client == max_op->client))
            broke(H, TU_H2, "name '%s': %s was granted token %lld by an "
                  "acquire invoked at %.3f s, after %s's grant of token "
                  "%lld had completed (%.3f s)", H->names.s[b->name],
                  H->clients.s[b->client], (long long)b->token,
                  rel_s(H, b->invoke), H->clients.s[max_op->client],
                  (long long)max, rel_s(H, max_op->complete));
    }
    qsort(v, (size_t)g->n, sizeof *v, by_token);
    for (i = 1; i < g->n; i++)
        if (v[i]->token == v[i - 1]->token &&
            v[i]->client != v[i - 1]->client)
            broke(H, TU_H2, "name '%s': token %lld was granted to %s and "
                  "to %s", H->names.s[v[i]->name], (long long)v[i]->token,
                  H->clients.s[v[i - 1]->client], H->clients.s[v[i]->client]);
    free(v);
}

/* H3 on one name of capacity 1: each acknowledged grant or renewal
 * against the grants that completed within its guaranteed time, before
 * its holder let it go. */
static void rule_h3(hist *H, const name_ix *g)
{
    int i, k;

    for (i = 0; i < g->nops; i++) {
        const op *x = g->ops[i];
        const lease *l;
        int64_t until, f;

        if (x->outcome != OUT_OK ||
            (x->op != OP_ACQUIRE && x->op != OP_SHARE && x->op != OP_RENEW))
            continue;
        l = lease_of(g, x->token);
        until = x->invoke + x->ttl_us - slack_us(x->ttl_us);
        if (l != NULL && l->release_invoked < until)
            until = l->release_invoked;
        f = forced_from(g, x->invoke);
        if (f < until)
            until = f;
        for (k = done_before(g, x->invoke);
             k < g->n && g->by_done[k]->complete < until; k++) {
            const op *b = g->by_done[k];

            /* A later grant: a larger token, or -- when the tokens
             * themselves were forgotten and issued again (H2 says so) --
             * one asked for after x was acknowledged. */
            if (b->token == x->token && b->client == x->client)
                continue;
            if (b->token <= x->token && b->invoke <= x->complete)
                continue;
            if (b->shared && is_shared(g, x->token))
                continue;
            broke(H, TU_H3, "name '%s': %s's acknowledged %s of token %lld "
                  "(invoked at %.3f s, ttl %lld ms) was forgotten: %s was "
                  "granted token %lld at %.3f s, %.3f s before that ttl "
                  "ran out, with no release or forced release before",
                  H->names.s[x->name], H->clients.s[x->client],
                  x->op == OP_RENEW ? "renewal" : "grant",
                  (long long)x->token, rel_s(H, x->invoke),
                  (long long)(x->ttl_us / 1000), H->clients.s[b->client],
                  (long long)b->token, rel_s(H, b->complete),
                  (double)(x->invoke + x->ttl_us - b->complete) / 1e6);
            break;
        }
    }
}

/* H4 and H5 on one name of capacity 1. */
static void rule_h4_h5(hist *H, const name_ix *g)
{
    int i;

    for (i = 0; i < g->nops; i++) {
        const op *x = g->ops[i];
        const lease *l;
        int64_t over;

        if (x->outcome != OUT_OK ||
            (x->op != OP_RELEASE && x->op != OP_RENEW && x->op != OP_WRITE))
            continue;
        over = superseded_by(g, is_shared(g, x->token), x->invoke);
        if (over > x->token) {
            broke(H, x->op == OP_WRITE ? TU_H5 : TU_H4, "name '%s': %s's "
                  "%s for token %lld, invoked at %.3f s, was acknowledged, "
                  "though a conflicting grant of token %lld had completed "
                  "before", H->names.s[x->name], H->clients.s[x->client],
                  op_words[x->op], (long long)x->token, rel_s(H, x->invoke),
                  (long long)over);
            continue;
        }
        if (x->op != OP_WRITE || (l = lease_of(g, x->token)) == NULL)
            continue;
        if (l->released < x->invoke)
            broke(H, TU_H5, "name '%s': %s's write for token %lld, invoked "
                  "at %.3f s, was accepted after the hold's release had "
                  "been acknowledged (%.3f s)", H->names.s[x->name],
                  H->clients.s[x->client], (long long)x->token,
                  rel_s(H, x->invoke), rel_s(H, l->released));
        else if (l->grant != NULL && x->invoke > l->live_until)
            /* Judged only when its grant is in the history: a hold
             * granted out of sight (inside `sqllock run`) has an expiry
             * the history cannot know. */
            broke(H, TU_H5, "name '%s': %s's write for token %lld, invoked "
                  "at %.3f s, was accepted after the hold had expired on "
                  "any server clock (%.3f s)", H->names.s[x->name],
                  H->clients.s[x->client], (long long)x->token,
                  rel_s(H, x->invoke), rel_s(H, l->live_until));
    }
}

/* H6: the F values against the writes. */
static void rule_h6(hist *H)
{
    int i, j;

    for (i = 0; i < H->nev; i++) {
        const ev *e = &H->ev[i];
        int64_t ok = 0, maybe = 0;

        if (e->kind != 'F')
            continue;
        for (j = 0; j < H->nop; j++) {
            const op *o = &H->op[j];

            if (o->name != e->name || o->op != OP_WRITE)
                continue;
            if (o->outcome == OUT_OK)
                ok++;
            else if (o->outcome == OUT_INFO || o->outcome == OUT_NONE)
                maybe++;
        }
        if (e->a < ok)
            broke(H, TU_H6, "name '%s': the final value %lld counts fewer "
                  "than the %lld acknowledged writes: %lld acknowledged "
                  "and then forgotten", H->names.s[e->name], (long long)e->a,
                  (long long)ok, (long long)(ok - e->a));
        else if (e->a > ok + maybe)
            broke(H, TU_H6, "name '%s': the final value %lld counts more "
                  "than the %lld acknowledged and %lld undecided writes",
                  H->names.s[e->name], (long long)e->a, (long long)ok,
                  (long long)maybe);
    }
}

static int by_name(const void *x, const void *y)
{
    const op *a = *(const op *const *)x, *b = *(const op *const *)y;

    return a->name - b->name;
}

int tu_hist_check(const char *path, FILE *report, tu_hist_result *out)
{
    hist H;
    tu_hist_result res;
    const op **byname = NULL;
    int rc = -1, i, j;

    memset(&H, 0, sizeof H);
    memset(&res, 0, sizeof res);
    H.report = report;
    H.res = &res;
    if (read_file(&H, path) != 0 || build_ops(&H) != 0 ||
        build_holds(&H) != 0)
        goto done;
    res.events = H.nev;
    res.ops = H.nop;
    res.sections = H.nhold;
    for (i = 0; i < H.nop; i++) {
        res.grants += is_grant(&H.op[i]);
        res.undecided += H.op[i].outcome == OUT_INFO ||
                         H.op[i].outcome == OUT_NONE;
    }
    rule_h1(&H);
    /* Name by name: the operations sorted by name, each run judged. */
    byname = malloc(((size_t)H.nop + 1) * sizeof *byname);
    if (byname == NULL)
        goto done;
    for (i = 0; i < H.nop; i++)
        byname[i] = &H.op[i];
    qsort(byname, (size_t)H.nop, sizeof *byname, by_name);
    for (i = 0; i < H.nop; i = j) {
        name_ix g;

        for (j = i; j < H.nop && byname[j]->name == byname[i]->name; j++)
            ;
        if (name_ix_build(byname + i, j - i, &g) != 0) {
            name_ix_free(&g);
            goto done;
        }
        rule_h2(&H, &g);
        if (cap_of(&H, byname[i]->name) == 1) {
            rule_h3(&H, &g);
            rule_h4_h5(&H, &g);
        }
        name_ix_free(&g);
    }
    rule_h6(&H);
    rc = res.violations;
    if (report != NULL)
        fprintf(report, "history %s: %d events, %d operations (%d grants, "
                "%d undecided), %d sections: %d violations (H1 %d, H2 %d, "
                "H3 %d, H4 %d, H5 %d, H6 %d)\n", path, res.events, res.ops,
                res.grants, res.undecided, res.sections, res.violations,
                res.broken[TU_H1], res.broken[TU_H2], res.broken[TU_H3],
                res.broken[TU_H4], res.broken[TU_H5], res.broken[TU_H6]);
done:
    if (out != NULL)
        *out = res;
    free(byname);
    free(H.ev);
    free(H.op);
    free(H.hold);
    free(H.capacity);
    strtab_free(&H.clients);
    strtab_free(&H.names);
    return rc;
}
