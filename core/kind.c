/*
 * kind.c -- one name, one meaning (DESIGN N1).
 *
 * A shared/exclusive lock (rw.c), a semaphore (sem.c) and an election
 * (leader.c) named NAME keep their rows under derived names, which a
 * plain lease on NAME never meets. So that a name is never taken both
 * ways -- a plain `sqllock run NAME` beside `sqllock run NAME --shared`
 * would overlap silently -- each of them first occupies the plain lease
 * row NAME itself with a kind marker: an ordinary grant of that row
 * (the acquire statements of every lease, no wake-up companion) to a
 * fixed owner per kind (SQLLOCK_KIND_OWNER_* in sqllock.h), whose ttl
 * (SQLLOCK__KIND_TTL_MS, about 1000 years) no reaper reaches. The unique
 * key of the lease table then decides between a plain acquire of NAME
 * and the marker's grant, on every driver and against every client
 * version: whichever comes second finds NAME held.
 *
 * The marker is sticky: nothing releases it (its owner is not an owner
 * id, so sqllock_lease_attach() and `sqllock release --owner` refuse it,
 * and `sqllock release --force` leaves it), so a primitive's handle
 * checks it once, before its first acquire. A plain acquire pays nothing
 * when it is granted; only when it finds NAME held does it read the row
 * (sqllock__kind_busy()), to tell a marker (SQLLOCK_EKIND, naming the
 * kind and how to take it) from a holder (SQLLOCK_BUSY as before).
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

typedef struct kind_info {
    const char *owner;          /* the marker's owner; NULL: a plain lease */
    const char *name;           /* sqllock_kind_marker()'s word */
    const char *what;           /* "a semaphore", for messages */
    const char *how;            /* how to take a name of this kind */
    const char *holder;         /* the marker's holder text */
} kind_info;

static const kind_info kinds[] = {
    [SQLLOCK__KIND_PLAIN] = {
        NULL, NULL, "a plain lease",
        "sqllock_lease_new() (`sqllock run NAME`)", NULL },
    [SQLLOCK__KIND_RW] = {
        SQLLOCK_KIND_OWNER_RW, "shared/exclusive lock",
        "a shared/exclusive lock",
        "sqllock_rw_new() (`sqllock run NAME --shared` or `--exclusive`)",
        "kind marker: shared/exclusive lock (contract N1)" },
    [SQLLOCK__KIND_SEM] = {
        SQLLOCK_KIND_OWNER_SEM, "semaphore", "a semaphore",
        "sqllock_sem_new() (`sqllock run NAME --permits N`)",
        "kind marker: semaphore (contract N1)" },
    [SQLLOCK__KIND_LEADER] = {
        SQLLOCK_KIND_OWNER_LEADER, "leader election", "a leader election",
        "sqllock_leader_start() (`sqllock run NAME --leader`)",
        "kind marker: leader election (contract N1)" },
};

#define KINDS ((int)(sizeof kinds / sizeof kinds[0]))

/* How many times the marker's grant and the read of NAME's row may cross
 * a plain lease that comes and goes in between before the call gives
 * up (SQLLOCK_BUSY). */
#define MARK_ROUNDS 5

int sqllock__kind_of_owner(const char *owner)
{
    int k;

    if (owner == NULL)
        return SQLLOCK__KIND_PLAIN;
    for (k = SQLLOCK__KIND_PLAIN + 1; k < KINDS; k++)
        if (strcmp(owner, kinds[k].owner) == 0)
            return k;
    return SQLLOCK__KIND_PLAIN;
}

const char *sqllock_kind_marker(const char *owner)
{
    return kinds[sqllock__kind_of_owner(owner)].name;
}

int sqllock__kind_mark(sqllock_db *db, const char *base, int kind)
{
    char buf[SQLLOCK__LEASE_GET_BUF];
    sqllock_lease_info info;
    int rc, found, round, there;

    for (round = 0; round < MARK_ROUNDS; round++) {
        /* Read first: once a name is marked, as it is for every handle
         * but the first, this is the one round trip. */
        rc = sqllock__lease_get(db, base, &info, buf, &found,
                                "reading the row of the name");
        if (rc == SQLLOCK_EUNSUPPORTED) {
            char why[SQLLOCK__ERRMSG_MAX];

            /* A dialect without LEASE_RANGE: N1 cannot be kept, so
             * the primitive is not used. */
            memcpy(why, db->errmsg, sizeof why);
            return sqllock__fail(db, rc, "%s '%s': its check that the "
                                 "name is no other kind of lock (contract "
                                 "N1) reads the name's row, which needs "
                                 "the statement LEASE_RANGE (%s)",
                                 kinds[kind].name, base, why);
        }
        if (rc != SQLLOCK_OK)
            return rc;
        if (found && info.remaining_ms > 0) {
            there = sqllock__kind_of_owner(info.owner);
            if (there == kind)
                return sqllock__ok(db);
            if (there != SQLLOCK__KIND_PLAIN)
                return sqllock__fail(db, SQLLOCK_EKIND, "%s '%s': the "
                                     "name is %s (one name, one meaning: "
                                     "contract N1); take it with %s, or "
                                     "use another name", kinds[kind].name,
                                     base, kinds[there].what,
                                     kinds[there].how);
            return sqllock__fail(db, SQLLOCK_EKIND, "%s '%s': the name is "
                                 "held as a plain lease (holder '%s'; one "
                                 "name, one meaning: contract N1); take it "
                                 "with %s, or use another name",
                                 kinds[kind].name, base, info.holder,
                                 kinds[SQLLOCK__KIND_PLAIN].how);
        }
        /* No row, or an expired one, which the grant takes over. */
        rc = sqllock__lease_grant_fixed(db, base, kinds[kind].owner,
                                        kinds[kind].holder,
                                        SQLLOCK__KIND_TTL_MS);
        if (rc != SQLLOCK_BUSY)
            return rc == SQLLOCK_OK ? sqllock__ok(db) : rc;
        /* Taken meanwhile (a plain lease, or the same marker made by
         * another client): read again. */
    }
    return sqllock__fail(db, SQLLOCK_BUSY, "%s '%s': the name's row kept "
                         "changing hands while its kind was checked; try "
                         "again", kinds[kind].name, base);
}

int sqllock__kind_busy(sqllock_lease *l, int rc, int64_t *next_ms)
{
    char buf[SQLLOCK__LEASE_GET_BUF], msg[SQLLOCK__ERRMSG_MAX];
    sqllock_db *db = l->db;
    sqllock_lease_info info;
    int64_t now;
    int found = 0, code, there = SQLLOCK__KIND_PLAIN;

    if (rc != SQLLOCK_BUSY || l->derived)
        return rc;
    now = sqllock__now_ms();
    if (next_ms != NULL) {
        if (now < *next_ms)
            return rc;
        *next_ms = now + SQLLOCK__KIND_RECHECK_MS;
    }
    code = db->errcode;
    memcpy(msg, db->errmsg, sizeof msg);
    if (sqllock__lease_get(db, l->name, &info, buf, &found,
                           "reading the row of the lock") == SQLLOCK_OK &&
        found && info.remaining_ms > 0 &&
        (there = sqllock__kind_of_owner(info.owner)) != SQLLOCK__KIND_PLAIN)
        return sqllock__fail(db, SQLLOCK_EKIND, "lock '%s' is %s, not a "
                             "plain lease (one name, one meaning: contract "
                             "N1): take it with %s", l->name,
                             kinds[there].what, kinds[there].how);
    /* A holder (or a row gone meanwhile, or a read that failed): the
     * acquire's own outcome stands. */
    db->errcode = code;
    memcpy(db->errmsg, msg, sizeof msg);
    return rc;
}

/* The primitive whose row `tag` (after the separator) is, for the
 * message of a refused acquire. */
static const char *owner_of_tag(const char *tag, const char **how)
{
    if (tag[0] == 'w' && tag[1] == '\0') {
        *how = "sqllock_rw_acquire()";
        return "the writer's row of a shared/exclusive lock";
    }
    if (tag[0] == 'r') {
        *how = "sqllock_rw_acquire()";
        return "a reader's row of a shared/exclusive lock";
    }
    if (tag[0] == 'p') {
        *how = "sqllock_sem_acquire()";
        return "a permit of a semaphore";
    }
    if (tag[0] == 'q') {
        *how = "sqllock_lease_acquire() on the fair lease";
        return "a waiter's row of a fair lock's queue";
    }
    if (strcmp(tag, "leader") == 0) {
        *how = "sqllock_leader_start() or sqllock_leader_lease_new()";
        return "the row of an election";
    }
    *how = "the primitive's own calls";
    return "a row of a semaphore, shared/exclusive lock, fair queue or "
           "election";
}

int sqllock__lease_acquirable(sqllock_lease *l)
{
    char base[SQLLOCK_NAME_MAX + 1];
    const char *sep, *how, *what;
    size_t n;
    int rc;

    if (!l->derived)
        return SQLLOCK_OK;
    sep = strchr(l->name, SQLLOCK__SEP);
    if (l->kind == SQLLOCK__KIND_LEADER && sep != NULL) {
        if (l->kind_checked)
            return SQLLOCK_OK;
        n = (size_t)(sep - l->name);
        memcpy(base, l->name, n);
        base[n] = '\0';
        rc = sqllock__kind_mark(l->db, base, SQLLOCK__KIND_LEADER);
        if (rc == SQLLOCK_OK)
            l->kind_checked = 1;
        return rc;
    }
    what = owner_of_tag(sep != NULL ? sep + 1 : "", &how);
    return sqllock__fail(l->db, SQLLOCK_EMISUSE, "acquiring lock '%s': this "
                         "lease handle is %s, which is taken only through "
                         "%s (renew, release and read it here)", l->name,
                         what, how);
}
