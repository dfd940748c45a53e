/*
 * metrics_db.c -- the lock tables as the database sees them, in the
 * OpenMetrics text format (issue 31): sqllock_metrics_db_text(), and
 * `sqllock metrics` (tools/metrics.c) for node_exporter's textfile
 * collector. Where core/metrics.c counts what this process's calls did,
 * this file reads what every client left in the database: the live rows
 * of the lease table by kind, fair waiters, expired rows not yet reaped,
 * the oldest holds, the outcome of the runs each name's history keeps,
 * and each name's last schedule slot and the slots missed since.
 *
 * The scrape is a list of parts (`parts` below), each one read of the
 * database that appends its metric families to the text: the lease rows
 * (one sqllock_list() walk), then the run histories (one
 * sqllock_record_list() walk of "sqllock:history:"), then the schedule
 * slots of `sqllock run --once-per` (one walk of "sqllock:slot:"). The
 * slots missed are counted by the scraping host's clock, as `sqllock
 * history` counts them (tools/slot_view.c).
 *
 * Memory. Each walk is streamed: the callbacks fold every row into fixed
 * counters and a fixed table of the SQLLOCK_METRICS_DB_OLDEST oldest
 * holds, and keep nothing per row. What grows is the text itself, which
 * has a bounded number of series: the per-name series of the histories
 * and of the slots each stop after SQLLOCK_METRICS_DB_NAMES_MAX names.
 * The cost in the database is a full read of the lease table and range
 * reads of the history and slot records per scrape; PostgreSQL's and
 * MySQL's client libraries receive a statement's whole result before the
 * first row is handed over, so while the walk runs they hold the table's
 * rows (150 to 260 bytes each; include/sqllock.h says what 100 000 rows
 * cost). In the process, a name of a cron schedule whose last slot run
 * is long past costs a walk of up to SLOTS_MISSED_MAX slots.
 *
 * OpenMetrics asks that the samples of one family come together; the
 * four per-name families of the histories, and those of the slots, are
 * therefore written into texts of their own during the one walk and
 * joined after it.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

#define HISTORY_PREFIX "sqllock:history:"
/* The text builder's calls (core/omtext.c), by shorter names. */
#define mt_printf sqllock__mt_printf
#define mt_append sqllock__mt_append
#define mt_label sqllock__mt_label
#define mt_free sqllock__mt_free
/* A macro's value as a string, for the help texts. */
#define STR_(x) #x
#define STR(x) STR_(x)

/* Milliseconds as seconds, to the millisecond. */
static void mt_seconds(sqllock__mtext *t, int64_t ms)
{
    if (ms < 0)
        ms = 0;
    mt_printf(t, "%" PRId64 ".%03d", ms / 1000, (int)(ms % 1000));
}

/* ---- the lease rows ---- */

/* The kinds of the live rows, as the label kind="..." names them. */
enum {
    K_LEASE,                    /* a plain lease (a fair lock's too) */
    K_SHARED,                   /* a reader of a shared/exclusive lock */
    K_EXCLUSIVE,                /* its writer (waiting for readers, or in) */
    K_SEMAPHORE,                /* a permit */
    K_LEADER,                   /* an election's leadership */
    K_FAIR_WAITER,              /* a place in a fair lock's queue */
    K_OTHER,                    /* a derived row of a tag unknown here */
    K_COUNT
};

static const char *const kind_label[K_COUNT] = {
    "lease", "shared", "exclusive", "semaphore", "leader", "fair_waiter",
    "other"
};

/* The kind of a row that is not a kind marker, from its name: a plain
 * name is a lease; a derived one (NAME 0x1f TAG, core/internal.h) is
 * told by its tag, as core/kind.c's owner_of_tag() tells it. */
static int kind_of_row(const char *name, const char **sep)
{
    const char *tag;

    *sep = strchr(name, SQLLOCK__SEP);
    if (*sep == NULL)
        return K_LEASE;
    tag = *sep + 1;
    if (tag[0] == 'w' && tag[1] == '\0')
        return K_EXCLUSIVE;
    if (tag[0] == 'r')
        return K_SHARED;
    if (tag[0] == 'p')
        return K_SEMAPHORE;
    if (tag[0] == 'q')
        return K_FAIR_WAITER;
    if (strcmp(tag, "leader") == 0)
        return K_LEADER;
    return K_OTHER;
}

/* One of the oldest holds: a lock name (a derived row's base name) and
 * kind, with the age of its oldest live row. */
typedef struct oldest {
    int64_t age_ms;
    int kind;
    char name[SQLLOCK_NAME_MAX + 1];
} oldest;

typedef struct lease_scan {
    int64_t rows;               /* every row read */
    int64_t held[K_COUNT];      /* live rows by kind (markers apart) */
    int64_t expired;            /* rows past their expiry, not reaped */
    int64_t markers;            /* kind markers (contract N1) */
    int64_t oldest_ms;          /* the oldest live hold's age; -1 none */
    int n;                      /* entries of top[] in use */
    oldest top[SQLLOCK_METRICS_DB_OLDEST];
} lease_scan;

/* Keeps (name, kind, age) among the SQLLOCK_METRICS_DB_OLDEST lock
 * names whose oldest hold is the oldest, one entry per name and kind.
 * A name pushed out by older ones never needs to come back with a
 * younger row, so one pass finds the same entries as a sort would. */
static void keep_oldest(lease_scan *s, const char *name, size_t n, int kind,
                        int64_t age)
{
    int i, young = 0;

    for (i = 0; i < s->n; i++)
        if (s->top[i].kind == kind && strncmp(s->top[i].name, name, n) == 0 &&
            s->top[i].name[n] == '\0') {
            if (age > s->top[i].age_ms)
                s->top[i].age_ms = age;
            return;
        }
    if (s->n < SQLLOCK_METRICS_DB_OLDEST) {
        i = s->n++;
    } else {
        for (i = 1; i < s->n; i++)
            if (s->top[i].age_ms < s->top[young].age_ms)
                young = i;
        if (age <= s->top[young].age_ms)
            return;
        i = young;
    }
    s->top[i].age_ms = age;
    s->top[i].kind = kind;
    memcpy(s->top[i].name, name, n);
    s->top[i].name[n] = '\0';
}

/* sqllock_list()'s callback: folds the row into the counts. */
static int lease_row(void *ctx, const sqllock_lease_info *info)
{
    lease_scan *s = ctx;
    const char *sep;
    int64_t age;
    int kind;

    s->rows++;
    if (sqllock_kind_marker(info->owner) != NULL) {
        s->markers++;           /* a name's kind, not a hold */
        return 0;
    }
    if (info->remaining_ms <= 0) {
        s->expired++;
        return 0;
    }
    kind = kind_of_row(info->name, &sep);
    s->held[kind]++;
    if (kind == K_FAIR_WAITER)
        return 0;               /* a place in a queue, not a hold */
    /* The server's time of the read is expires_at - remaining. */
    age = info->expires_at_ms - info->remaining_ms - info->acquired_at_ms;
    if (age < 0)
        age = 0;
    if (age > s->oldest_ms)
        s->oldest_ms = age;
    keep_oldest(s, info->name,
                sep != NULL ? (size_t)(sep - info->name) : strlen(info->name),
                kind, age);
    return 0;
}

static int cmp_oldest(const void *a, const void *b)
{
    const oldest *x = a, *y = b;

    if (x->age_ms != y->age_ms)
        return x->age_ms > y->age_ms ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int part_leases(sqllock_db *db, sqllock__mtext *t)
{
    lease_scan *s = calloc(1, sizeof *s);
    int rc, k, i;

    if (s == NULL)
        return SQLLOCK_ENOMEM;
    s->oldest_ms = -1;
    rc = sqllock_list(db, lease_row, s);
    if (rc != SQLLOCK_OK) {
        free(s);
        return rc;
    }
    sqllock__mt_family(
        t, "sqllock_db_lease_rows", "gauge", NULL,
        "Rows of the lease table read by this scrape: live, expired and "
        "kind markers.");
    mt_printf(t, "sqllock_db_lease_rows %" PRId64 "\n", s->rows);
    sqllock__mt_family(
        t, "sqllock_db_locks_held", "gauge", NULL,
        "Live rows of the lease table by kind, by the database's clock "
        "(a shared/exclusive lock's writer row counts as exclusive while "
        "it waits for readers; fair_waiter rows are places in a fair "
        "queue; kind markers are not counted).");
    for (k = 0; k < K_COUNT; k++)
        mt_printf(t, "sqllock_db_locks_held{kind=\"%s\"} %" PRId64 "\n",
                  kind_label[k], s->held[k]);
    sqllock__mt_family(t, "sqllock_db_waiters_queued", "gauge", NULL,
                       "Live waiters queued in fair locks' queues.");
    mt_printf(t, "sqllock_db_waiters_queued %" PRId64 "\n",
              s->held[K_FAIR_WAITER]);
    sqllock__mt_family(
        t, "sqllock_db_expired_rows", "gauge", NULL,
        "Rows of the lease table past their expiry and not yet taken "
        "over or reaped.");
    mt_printf(t, "sqllock_db_expired_rows %" PRId64 "\n", s->expired);
    sqllock__mt_family(
        t, "sqllock_db_kind_markers", "gauge", NULL,
        "Names marked as a shared/exclusive lock, a semaphore or an "
        "election (contract N1).");
    mt_printf(t, "sqllock_db_kind_markers %" PRId64 "\n", s->markers);
    sqllock__mt_family(
        t, "sqllock_db_oldest_hold_seconds", "gauge", "seconds",
        "Age by the database's clock of the oldest live hold (fair "
        "waiters apart), since its grant; 0 when none.");
    mt_printf(t, "sqllock_db_oldest_hold_seconds ");
    mt_seconds(t, s->oldest_ms);
    mt_printf(t, "\n");
    sqllock__mt_family(
        t, "sqllock_db_hold_age_seconds", "gauge", "seconds",
        "Age by the database's clock of the oldest live hold of each of "
        "the lock names held longest (at most "
        STR(SQLLOCK_METRICS_DB_OLDEST) " series).");
    qsort(s->top, (size_t)s->n, sizeof *s->top, cmp_oldest);
    for (i = 0; i < s->n; i++) {
        mt_printf(t, "sqllock_db_hold_age_seconds{name=\"");
        mt_label(t, s->top[i].name, strlen(s->top[i].name));
        mt_printf(t, "\",kind=\"%s\"} ", kind_label[s->top[i].kind]);
        mt_seconds(t, s->top[i].age_ms);
        mt_printf(t, "\n");
    }
    free(s);
    return SQLLOCK_OK;
}

/* ---- the run histories ---- */

typedef struct history_scan {
    int64_t names;              /* history records seen */
    sqllock__mtext failures, last_end, last_exit, forced;
} history_scan;

/* One line of a history value, parsed: kind, end time, exit code and
 * status (core/history.c writes them; a field may be empty). 0 when the
 * line is not one. */
static int history_line(const char *p, size_t n, char *kind, size_t ksize,
                        int64_t *end_ms, int64_t *exit_code, char *status,
                        size_t ssize)
{
    char line[SQLLOCK_HISTORY_LINE_MAX + 1], *f[7], *q;
    int i;

    if (n >= sizeof line)
        return 0;
    memcpy(line, p, n);
    line[n] = '\0';
    f[0] = line;
    for (i = 1, q = line; i < 7; i++) {
        q = strchr(q, '\t');
        if (q == NULL)
            break;
        *q++ = '\0';
        f[i] = q;
    }
    if (i < 6)
        return 0;
    snprintf(kind, ksize, "%s", f[0]);
    *end_ms = strtoll(f[3], NULL, 10);
    *exit_code = strtoll(f[4], NULL, 10);
    snprintf(status, ssize, "%s", f[5]);
    return 1;
}

/* sqllock_record_list()'s callback: the series of one name's history. */
static int history_record(void *ctx, const char *key, const void *value,
                          size_t len, int64_t version)
{
    history_scan *h = ctx;
    const char *p = value, *end = p + len;
    const char *name = key + strlen(HISTORY_PREFIX);
    char kind[16], status[32];
    int64_t failures = 0, forced = 0, last_end = -1, last_exit = 0, e, x;
    int finished;

    (void)version;
    if (++h->names > SQLLOCK_METRICS_DB_NAMES_MAX)
        return 0;               /* counted, not shown */
    while (p != NULL && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);

        if (history_line(p, n, kind, sizeof kind, &e, &x, status,
                         sizeof status)) {
            if (strcmp(kind, "force") == 0)
                forced++;
            finished = strcmp(kind, "run") == 0 && e > 0 &&
                       strcmp(status, "running") != 0;
            if (finished && (x != 0 || strcmp(status, "ok") != 0))
                failures++;
            if (finished && e > last_end) {
                last_end = e;
                last_exit = x;
            }
        }
        p = nl != NULL ? nl + 1 : end;
    }
    mt_printf(&h->failures, "sqllock_db_run_failures{name=\"");
    mt_label(&h->failures, name, strlen(name));
    mt_printf(&h->failures, "\"} %" PRId64 "\n", failures);
    mt_printf(&h->forced, "sqllock_db_forced_releases{name=\"");
    mt_label(&h->forced, name, strlen(name));
    mt_printf(&h->forced, "\"} %" PRId64 "\n", forced);
    if (last_end > 0) {
        mt_printf(&h->last_end, "sqllock_db_run_last_end_timestamp_seconds"
                  "{name=\"");
        mt_label(&h->last_end, name, strlen(name));
        mt_printf(&h->last_end, "\"} ");
        mt_seconds(&h->last_end, last_end);
        mt_printf(&h->last_end, "\n");
        mt_printf(&h->last_exit, "sqllock_db_run_last_exit_code{name=\"");
        mt_label(&h->last_exit, name, strlen(name));
        mt_printf(&h->last_exit, "\"} %" PRId64 "\n", last_exit);
    }
    return 0;
}

static int part_histories(sqllock_db *db, sqllock__mtext *t)
{
    history_scan h;
    int rc;

    memset(&h, 0, sizeof h);
    rc = sqllock_record_list(db, HISTORY_PREFIX, history_record, &h);
    if (rc == SQLLOCK_OK && (h.failures.oom || h.forced.oom ||
                             h.last_end.oom || h.last_exit.oom))
        rc = SQLLOCK_ENOMEM;
    if (rc == SQLLOCK_OK) {
        sqllock__mt_family(
            t, "sqllock_db_run_histories", "gauge", NULL,
            "Lock names with a run history (`sqllock run`); the per-name "
            "series below show the first "
            STR(SQLLOCK_METRICS_DB_NAMES_MAX) " in name order.");
        mt_printf(t, "sqllock_db_run_histories %" PRId64 "\n", h.names);
        sqllock__mt_family(
            t, "sqllock_db_run_failures", "gauge", NULL,
            "Finished runs among those a name's history keeps (its last "
            STR(SQLLOCK_HISTORY_MAX) ") that exited non-zero or "
            "did not end ok.");
        mt_append(t, h.failures.buf != NULL ? h.failures.buf : "",
                  h.failures.len);
        sqllock__mt_family(
            t, "sqllock_db_run_last_end_timestamp_seconds", "gauge",
            "seconds", "When the last finished run of a name ended, by "
            "the clock of the host that ran it (Unix time).");
        mt_append(t, h.last_end.buf != NULL ? h.last_end.buf : "",
                  h.last_end.len);
        sqllock__mt_family(
            t, "sqllock_db_run_last_exit_code", "gauge", NULL,
            "The exit code of the last finished run of a name.");
        mt_append(t, h.last_exit.buf != NULL ? h.last_exit.buf : "",
                  h.last_exit.len);
        sqllock__mt_family(
            t, "sqllock_db_forced_releases", "gauge", NULL,
            "Forced releases of a name among the audit lines its history "
            "keeps (its last " STR(SQLLOCK_HISTORY_MAX) ").");
        mt_append(t, h.forced.buf != NULL ? h.forced.buf : "",
                  h.forced.len);
    }
    mt_free(&h.failures);
    mt_free(&h.last_end);
    mt_free(&h.last_exit);
    mt_free(&h.forced);
    return rc;
}

/* ---- the schedule slots ---- */

/* The most slots missed counted per name (`sqllock history` counts up
 * to 100 000: tools/slot_view.c). A cron schedule is walked slot by
 * slot, so this bounds the work of a name whose last run is long past:
 * about 0.5 ms per name, 0.25 s for SQLLOCK_METRICS_DB_NAMES_MAX stale
 * names, per scrape. An alert needs "more than 0", not the count. */
#define SLOTS_MISSED_MAX 1000

/* The states of a slot's run (core/slot.c), the state set's labels. */
static const char *const slot_states[] = {
    "running", "ok", "failed", "timeout", "lost"
};
#define SLOT_STATES (sizeof slot_states / sizeof slot_states[0])

typedef struct slot_scan {
    int64_t records;            /* slot records seen */
    int64_t now_ms;             /* the scraping host's clock */
    const char *name;           /* the name of the record being read */
    int oom;                    /* a record could not be read for lack
                                   of memory */
    sqllock__mtext start, state, exit_code, missed;
} slot_scan;

/* The wall clock, ms since the epoch. */
static int64_t wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Begins the sample `family`{name="NAME" (the caller ends it). */
static void name_sample(sqllock__mtext *t, const char *family,
                        const char *name)
{
    mt_printf(t, "%s{name=\"", family);
    mt_label(t, name, strlen(name));
    mt_printf(t, "\"");
}

/* sqllock_slot_parse()'s callback: the series of one name's record. */
static int slot_series(void *ctx, const sqllock_slot_info *r)
{
    slot_scan *s = ctx;
    int64_t now_slot = 0, missed = 0;
    size_t i;

    name_sample(&s->start, "sqllock_db_slot_last_start_timestamp_seconds",
                s->name);
    mt_printf(&s->start, "} ");
    mt_seconds(&s->start, r->slot_ms);
    mt_printf(&s->start, "\n");
    /* A state this version does not know (a later one's) is 0 in all. */
    for (i = 0; i < SLOT_STATES; i++) {
        name_sample(&s->state, "sqllock_db_slot_last_state", s->name);
        mt_printf(&s->state, ",state=\"%s\"} %d\n", slot_states[i],
                           strcmp(r->state, slot_states[i]) == 0);
    }
    if (strcmp(r->state, "running") != 0) {
        name_sample(&s->exit_code, "sqllock_db_slot_last_exit_code",
                    s->name);
        mt_printf(&s->exit_code, "} %d\n", r->exit_code);
    }
    /* The slots that began after the last one run and before the
     * current one (which may still get its run), by the schedule that
     * run noted; none when it cannot be counted here (a schedule this
     * version does not read, or a cron schedule without a slot within
     * ten years). */
    if (sqllock_schedule_slot(r->schedule, s->now_ms, &now_slot, NULL) ==
            SQLLOCK_OK &&
        sqllock_schedule_count(r->schedule, r->slot_ms, now_slot,
                               SLOTS_MISSED_MAX, &missed) == SQLLOCK_OK) {
        name_sample(&s->missed, "sqllock_db_slots_missed", s->name);
        mt_printf(&s->missed, "} %" PRId64 "\n", missed);
    }
    return 0;
}

/* sqllock_record_list()'s callback: one slot record. A record under the
 * prefix that is not a slot's is counted and has no series. */
static int slot_record(void *ctx, const char *key, const void *value,
                       size_t len, int64_t version)
{
    slot_scan *s = ctx;

    (void)version;
    if (++s->records > SQLLOCK_METRICS_DB_NAMES_MAX)
        return 0;               /* counted, not shown */
    s->name = key + strlen(SQLLOCK_SLOT_KEY_PREFIX);
    if (sqllock_slot_parse(value, len, slot_series, s) == SQLLOCK_ENOMEM)
        s->oom = 1;
    return 0;
}

static int part_slots(sqllock_db *db, sqllock__mtext *t)
{
    slot_scan s;
    int rc;

    memset(&s, 0, sizeof s);
    s.now_ms = wall_ms();
    rc = sqllock_record_list(db, SQLLOCK_SLOT_KEY_PREFIX, slot_record, &s);
    if (rc == SQLLOCK_OK && (s.oom || s.start.oom || s.state.oom ||
                             s.exit_code.oom || s.missed.oom))
        rc = SQLLOCK_ENOMEM;
    if (rc == SQLLOCK_OK) {
        sqllock__mt_family(
            t, "sqllock_db_slot_records", "gauge", NULL,
            "Schedule slot records (`sqllock run --once-per`, "
            "--once-per-cron), one per lock name; the per-name series "
            "below show the first " STR(SQLLOCK_METRICS_DB_NAMES_MAX)
            " in name order (a record that is not a slot record as "
            "sqllock writes it has none).");
        mt_printf(t, "sqllock_db_slot_records %" PRId64 "\n", s.records);
        sqllock__mt_family(
            t, "sqllock_db_slot_last_start_timestamp_seconds",
            "gauge", "seconds", "The start of the last slot in which a "
            "name's job ran (Unix time), as its schedule cut the clock "
            "of the host that ran it.");
        mt_append(t, s.start.buf != NULL ? s.start.buf : "",
                  s.start.len);
        sqllock__mt_family(
            t, "sqllock_db_slot_last_state", "gauge", NULL,
            "The state of the run of a name's last slot, as a state set: "
            "1 for the record's state (running, ok, failed, timeout, "
            "lost), 0 for the others.");
        mt_append(t, s.state.buf != NULL ? s.state.buf : "",
                  s.state.len);
        sqllock__mt_family(
            t, "sqllock_db_slot_last_exit_code", "gauge", NULL,
            "The exit code of the run of a name's last slot, once it "
            "ended (no sample while it runs).");
        mt_append(t, s.exit_code.buf != NULL ? s.exit_code.buf : "",
                  s.exit_code.len);
        sqllock__mt_family(
            t, "sqllock_db_slots_missed", "gauge", NULL,
            "Slots in which nothing ran since a name's last slot run, "
            "the current slot not counted (it may still get its run), "
            "by the schedule that run noted; at most "
            STR(SLOTS_MISSED_MAX) ". Counted by the clock (and, for a "
            "cron schedule, the time zone) of the host that scrapes, "
            "while each slot run was judged by its runner host's clock.");
        mt_append(t, s.missed.buf != NULL ? s.missed.buf : "",
                  s.missed.len);
    }
    mt_free(&s.start);
    mt_free(&s.state);
    mt_free(&s.exit_code);
    mt_free(&s.missed);
    return rc;
}

/* ---- the scrape ---- */

/* The parts of a scrape, in the order of the text. Each reads the
 * database once and appends its families; a failed read fails the
 * scrape. */
static const struct {
    const char *what;
    int (*read)(sqllock_db *db, sqllock__mtext *t);
} parts[] = {
    { "reading the lease table", part_leases },
    { "reading the run histories", part_histories },
    { "reading the schedule slots", part_slots },
};

int sqllock_metrics_db_text(sqllock_db *db, char **out)
{
    char msg[SQLLOCK__ERRMSG_MAX];
    int64_t t0 = sqllock__now_us();
    sqllock__mtext t = { NULL, 0, 0, 0 };
    size_t i;
    int rc = SQLLOCK_OK;

    if (db == NULL)
        return SQLLOCK_EINVAL;
    if (out == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "sqllock_metrics_db_text: "
                             "the output pointer is NULL");
    *out = NULL;
    for (i = 0; i < sizeof parts / sizeof parts[0] && rc == SQLLOCK_OK; i++) {
        rc = parts[i].read(db, &t);
        if (rc == SQLLOCK_OK && t.oom)
            rc = SQLLOCK_ENOMEM;
        if (rc == SQLLOCK_ENOMEM)
            rc = sqllock__fail(db, rc, "sqllock_metrics_db_text: %s: out of "
                               "memory", parts[i].what);
        else if (rc != SQLLOCK_OK) {
            snprintf(msg, sizeof msg, "%s", sqllock_errmsg(db));
            rc = sqllock__fail(db, rc, "sqllock_metrics_db_text: %s: %s",
                               parts[i].what, msg);
        }
    }
    if (rc != SQLLOCK_OK) {
        mt_free(&t);
        return rc;
    }
    sqllock__mt_family(
        &t, "sqllock_db_up", "gauge", NULL,
        "1: the scrape read the database (a failed scrape writes no "
        "text at all).");
    mt_printf(&t, "sqllock_db_up 1\n");
    sqllock__mt_family(
        &t, "sqllock_db_scrape_duration_seconds", "gauge", "seconds",
        "How long this scrape took, its statements included.");
    mt_printf(&t, "sqllock_db_scrape_duration_seconds %.6f\n",
              (double)(sqllock__now_us() - t0) / 1e6);
    mt_printf(&t, "# EOF\n");
    if (t.oom) {
        mt_free(&t);
        return sqllock__fail(db, SQLLOCK_ENOMEM, "sqllock_metrics_db_text: "
                             "out of memory");
    }
    *out = t.buf;
    return sqllock__ok(db);
}
