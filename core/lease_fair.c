/*
 * lease_fair.c -- fair (FIFO) waiting, opt-in (DESIGN M3,
 * SQLLOCK_LEASE_FAIR).
 *
 * The lock is the ordinary lease row NAME: exclusion is L1-L10's,
 * whatever the queue does. The queue is a set of lease rows
 * NAME 0x1f "q" + 16 random hex digits (derived names, internal.h), one
 * per waiter, each with the waiter's ttl and renewed by the waiter itself
 * while it waits (every ttl/3). A row's fencing token is its ticket:
 * tokens grow across all names on the three databases (PostgreSQL's
 * sequence, MySQL's AUTO_INCREMENT, SQLite's counter), so a waiter whose
 * enqueue committed before another's began holds the smaller ticket.
 *
 * A waiting acquire (ZooKeeper's lock recipe): enqueue, then loop: read
 * NAME's queue rows (LEASE_RANGE, one index range scan); if a live row
 * with a smaller ticket exists, pause on the nearest one only -- its
 * release (the waiter ahead leaves the queue when it is granted or gives
 * up) wakes this waiter through the usual machinery (lease_wait.c: its
 * row's NOTIFY channel on PostgreSQL, its companion session lock on
 * MySQL, which the queue row took with its grant, the in-process key),
 * and a waiter ahead that died is waited for no longer than its row's
 * remaining ttl by the server's clock; if none, this waiter is the head:
 * it tries NAME, and pauses on NAME's release while it is held. When
 * granted it deletes its queue row, which wakes the waiter behind it, the
 * new head. So a release wakes one waiter, and each handoff moves two
 * (the new holder and the new head). On timeout or error the waiter
 * deletes its row. A waiter whose own row was lost (it paused for longer
 * than its ttl) enqueues again, at the back.
 *
 * Two tickets drawn close together may commit in the other order; then
 * both waiters may see themselves as the head for a moment and both try
 * NAME: one wins, the other waits. FIFO order is promised between
 * enqueues that did not overlap.
 *
 * A try (no wait) succeeds only when no live queue row exists, and a
 * waiting acquire first tries that way before it enqueues: an uncontended
 * fair acquire costs one range scan more than an unfair one.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define QUEUE_TAG 'q'
/* Polling (no wake-ups), the backoff cap of the head and of the second
 * in line is backoff_min x 2^NEAR_ATTEMPTS, of the others twice that. */
#define NEAR_ATTEMPTS 2

/* What a scan of NAME's queue found. */
typedef struct fair_scan {
    const char *prefix;        /* NAME 0x1f 'q' */
    size_t prefix_len;
    int64_t mine;              /* own ticket; 0: not queued */
    int live;                  /* live queue rows (own one excluded) */
    int before;                /* live rows with a smaller ticket */
    int64_t ahead;             /* the nearest live ticket below mine, or 0 */
    int64_t ahead_left_ms;     /* its remaining ttl, by the server's clock */
    char ahead_name[SQLLOCK__DERIVED_MAX + 1];
} fair_scan;

static int scan_row(void *ctx, const sqllock_lease_info *in)
{
    fair_scan *f = ctx;

    if (strncmp(in->name, f->prefix, f->prefix_len) != 0)
        return 0;               /* another primitive's row of NAME */
    if (in->remaining_ms <= 0 || in->token == f->mine)
        return 0;               /* expired (a dead waiter), or our own */
    f->live++;
    if (f->mine != 0 && in->token < f->mine)
        f->before++;
    if (f->mine != 0 && in->token < f->mine && in->token > f->ahead) {
        f->ahead = in->token;
        f->ahead_left_ms = in->remaining_ms;
        snprintf(f->ahead_name, sizeof f->ahead_name, "%s", in->name);
    }
    return 0;
}

static int scan_queue(sqllock_lease *l, int64_t mine, fair_scan *f)
{
    char prefix[SQLLOCK__DERIVED_MAX + 2], lo[SQLLOCK__DERIVED_MAX + 1],
         hi[SQLLOCK__DERIVED_MAX + 1];
    size_t n = strlen(l->name);
    int rc;

    memset(f, 0, sizeof *f);
    memcpy(prefix, l->name, n);
    prefix[n] = SQLLOCK__SEP;
    prefix[n + 1] = QUEUE_TAG;
    prefix[n + 2] = '\0';
    f->prefix = prefix;
    f->prefix_len = n + 2;
    f->mine = mine;
    sqllock__derived_range(l->name, lo, hi);
    rc = sqllock__lease_range(l->db, lo, hi, scan_row, f,
                              "reading the fair queue");
    f->prefix = NULL;
    return rc;
}

int sqllock__fair_try(sqllock_lease *l)
{
    fair_scan f;
    int rc;

    if (l->count > 0)
        return sqllock__lease_try_plain(l);     /* reentrant (L8) */
    if ((rc = scan_queue(l, 0, &f)) != SQLLOCK_OK)
        return rc;
    if (f.live > 0)
        return sqllock__fail(l->db, SQLLOCK_BUSY, "lock '%s' has %d "
                             "waiter%s queued (fair waiting)", l->name,
                             f.live, f.live == 1 ? "" : "s");
    return sqllock__lease_try_plain(l);
}

/* A fresh queue row for `l`: NAME 0x1f q + 16 random hex digits. */
static int queue_entry_new(sqllock_lease *l, sqllock_lease **out)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char raw[8];
    char tag[2 + 2 * sizeof raw], name[SQLLOCK__DERIVED_MAX + 1];
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    size_t i;
    int rc;

    if (sqllock__random(raw, sizeof raw) != SQLLOCK_OK)
        return sqllock__fail(l->db, SQLLOCK_ESYS, "cannot read the OS's "
                             "random source for a queue entry");
    tag[0] = QUEUE_TAG;
    for (i = 0; i < sizeof raw; i++) {
        tag[1 + 2 * i] = hex[raw[i] >> 4];
        tag[2 + 2 * i] = hex[raw[i] & 15];
    }
    tag[sizeof tag - 1] = '\0';
    rc = sqllock__derived_name(l->db, name, l->name, tag, "lock name");
    if (rc != SQLLOCK_OK)
        return rc;
    o.ttl_ms = l->ttl_ms;
    o.safety_margin_ms = l->margin_ms;
    o.backoff_min_ms = l->backoff_min_ms;
    o.backoff_max_ms = l->backoff_max_ms;
    o.release_timeout_ms = l->release_timeout_ms;
    o.holder = l->holder;
    o.flags = l->flags & SQLLOCK_LEASE_NO_WAKEUP;
    return sqllock__lease_new_derived(l->db, name, &o, out);
}

/* Takes a queue row (a fresh ticket); a random name is never busy, but a
 * database that rolls the insert back is tried again (as any try). */
static int enqueue(sqllock_lease *q)
{
    int rc, attempt;

    for (attempt = 0;; attempt++) {
        rc = sqllock__lease_try_plain(q);
        if ((rc != SQLLOCK_BUSY && rc != SQLLOCK_EDBBUSY) ||
            attempt == SQLLOCK__ROLLBACK_RETRIES)
            return rc;
        sqllock__sleep_ms(sqllock__rand_upto(q->backoff_min_ms));
    }
}

/* Leaves the queue; the status `rc` and its message are kept. */
static int leave(sqllock_lease *q, int rc)
{
    char msg[SQLLOCK__ERRMSG_MAX];
    sqllock_db *db = q->db;
    int code = db->errcode;

    memcpy(msg, db->errmsg, sizeof msg);
    if (q->count > 0)
        (void)sqllock_lease_release(q);         /* wakes the next one */
    sqllock_lease_free(q);
    db->errcode = code;
    memcpy(db->errmsg, msg, sizeof msg);
    return rc;
}

/* The stand-in of the queue row ahead, for sqllock__wait_pause(): only its
 * name, wake key and the waiter's wait settings are used. */
static void ahead_set(sqllock_lease *a, const sqllock_lease *l,
                      const char *name)
{
    memset(a, 0, sizeof *a);
    a->db = l->db;
    a->ttl_ms = l->ttl_ms;
    a->margin_ms = l->margin_ms;
    a->backoff_min_ms = l->backoff_min_ms;
    a->backoff_max_ms = l->backoff_max_ms;
    a->flags = l->flags & SQLLOCK_LEASE_NO_WAKEUP;
    snprintf(a->name, sizeof a->name, "%s", name);
    a->wake_key = sqllock__wake_key(l->db->url, name);
    atomic_init(&a->state, SQLLOCK_STATE_NOT_HELD);
    atomic_init(&a->deadline_us, 0);
}

int sqllock__fair_acquire(sqllock_lease *l, int64_t wait_ms)
{
    sqllock_db *db = l->db;
    sqllock_lease *q = NULL, ahead, *waited[2];
    char channel[SQLLOCK__CHANNEL_MAX];
    sqllock__wait w;
    fair_scan f;
    int64_t deadline, renew_at, now, until, kind_next = 0, checked = 0;
    uint64_t seen;
    int rc, target = -1, t;

    if (l->count > 0 || wait_ms == 0)
        return sqllock__kind_busy(l, sqllock__fair_try(l), NULL);
    if ((rc = sqllock__lease_canceled(l)) != SQLLOCK_OK)
        return rc;
    /* No queue: an ordinary try, as any other waiter's first; a name
     * found held is read, to tell a kind marker from a holder (N1). */
    rc = sqllock__kind_busy(l, sqllock__fair_try(l), &kind_next);
    if (rc != SQLLOCK_BUSY && rc != SQLLOCK_EDBBUSY)
        return rc;
    if ((rc = queue_entry_new(l, &q)) != SQLLOCK_OK)
        return rc;
    ahead_set(&ahead, l, "");
    waited[0] = l;
    waited[1] = &ahead;
    sqllock__wait_start(&w, db, 2, wait_ms);
    deadline = w.deadline;
    renew_at = 0;
    for (;;) {
        /* A cancel from another thread ends the wait, and our place in
         * the queue with it (leave() below). */
        if ((rc = sqllock__lease_canceled(l)) != SQLLOCK_OK)
            break;
        now = sqllock__now_ms();
        if (q->count == 0) {
            /* Not queued (the first round, or our row was lost while we
             * paused longer than its ttl): a new ticket, at the back. */
            if ((rc = enqueue(q)) != SQLLOCK_OK)
                break;
            renew_at = sqllock__now_ms() + q->ttl_ms / 3;
        } else if (now >= renew_at) {
            rc = sqllock_lease_renew(q);
            if (rc == SQLLOCK_LOST)
                continue;
            if (rc != SQLLOCK_OK && rc != SQLLOCK_EDBBUSY)
                break;
            renew_at = now + (rc == SQLLOCK_OK ? q->ttl_ms / 3
                                               : q->backoff_min_ms);
        }
        if ((rc = scan_queue(l, q->token, &f)) != SQLLOCK_OK)
            break;
        if (f.ahead != 0) {
            t = 1;
            if (strcmp(ahead.name, f.ahead_name) != 0) {
                /* A new waiter ahead: stop listening for the old one. */
                if (w.listened[1]) {
                    sqllock__wake_channel(ahead.name, channel);
                    sqllock__listen(db, channel, 0);
                    w.listened[1] = 0;
                    w.listening = w.listened[0];
                }
                ahead_set(&ahead, l, f.ahead_name);
                target = -1;
            }
            seen = sqllock__wake_gen(ahead.wake_key);
        } else {
            /* The head: try the lock itself (and, once a second while
             * it is held, read its row: a kind marker made meanwhile
             * ends the wait, N1). */
            t = 0;
            seen = sqllock__wake_gen(l->wake_key);
            rc = sqllock__lease_try_plain(l);
            if (rc == SQLLOCK_OK) {
                rc = leave(q, SQLLOCK_OK);
                q = NULL;
                break;
            }
            checked = kind_next;
            rc = sqllock__kind_busy(l, rc, &kind_next);
            if (checked != kind_next && rc == SQLLOCK_BUSY)
                checked = -1;
            if (rc != SQLLOCK_BUSY && rc != SQLLOCK_EDBBUSY)
                break;
        }
        now = sqllock__now_ms();
        if (now >= deadline) {
            /* A last look at NAME's row, unless this round had one. */
            if (!(t == 0 && checked == -1) &&
                (rc = sqllock__kind_busy(l, SQLLOCK_BUSY, NULL)) !=
                    SQLLOCK_BUSY)
                break;
            rc = sqllock__fail(db, SQLLOCK_TIMEOUT, "lock '%s' was still "
                               "held by another owner, or queued for, "
                               "after waiting %lld ms (fair waiting)",
                               l->name, (long long)wait_ms);
            break;
        }
        if (target != t) {
            /* What we wait on changed: its backoff starts afresh. */
            target = t;
            w.attempt = 0;
            w.plain_next = 0;
        }
        /* Where nothing wakes a waiter (SQLite across processes,
         * Galera, SQLLOCK_LEASE_NO_WAKEUP), a handoff waits for the next
         * waiter's poll, and a waiter moves up while it sleeps: the head
         * and the second poll at most 4 x backoff_min apart, the others
         * 8 x (a waiter still far back would otherwise sleep through its
         * turn). */
        if ((l->flags & SQLLOCK_LEASE_NO_WAKEUP) ||
            (!w.notify && w.session == 0)) {
            int near = NEAR_ATTEMPTS + (f.before > 1);
            if (w.attempt > near)
                w.attempt = near;
        }
        /* Pause no longer than the wait, the next renewal of our row, and
         * (a waiter ahead) that row's remaining ttl: a dead waiter ahead
         * delays us by its ttl at most. */
        until = deadline < renew_at ? deadline : renew_at;
        if (t == 1 && now + f.ahead_left_ms + 1 < until)
            until = now + f.ahead_left_ms + 1;
        if (until <= now)
            until = now + 1;
        w.deadline = until;
        sqllock__wait_pause(&w, waited[t], t, seen);
        w.deadline = deadline;
    }
    sqllock__wait_end(&w, waited);
    if (q != NULL)
        rc = leave(q, rc);
    return rc;
}
