/*
 * observe.h -- an observer's state (issue 31), shared by core/observe.c
 * (the calls, the waiting between polls, the LISTENs and the poll's
 * statement) and core/observe_diff.c (a poll's rows held against the
 * holds it follows, and the changes that makes). Not installed.
 */
#ifndef SQLLOCK_OBSERVE_H
#define SQLLOCK_OBSERVE_H

#include "internal.h"

/* The room for a row's name as `sqllock list` shows it: "BASE [TAG]",
 * the separator byte turned into " [" and a closing "]". */
#define SQLLOCK__OBS_SHOWN_MAX (SQLLOCK__DERIVED_MAX + 3)

/* A lease row: one that a poll read, or one the observer follows. */
typedef struct sqllock__obs_hold {
    char name[SQLLOCK__DERIVED_MAX + 1];   /* as in the table */
    char holder[SQLLOCK_HOLDER_MAX + 1];
    int watched;                /* the index of the name it falls under */
    int expired;                /* followed: its EXPIRED was reported */
    int64_t token;
    int64_t acquired_at_ms;     /* by the server's clock */
    int64_t expires_at_ms;
    int64_t remaining_ms;       /* at the poll that read it */
    int64_t seen_ms;            /* followed: the server's now at the last
                                   poll that read the row */
} sqllock__obs_hold;

/* A change not yet handed out, its texts its own. */
typedef struct sqllock__obs_change {
    int type;                   /* SQLLOCK_CHANGE_* */
    int watched;
    char name[SQLLOCK__OBS_SHOWN_MAX + 1];
    char holder[SQLLOCK_HOLDER_MAX + 1];
    int64_t token;
    int64_t old_token;
    int64_t expires_at_ms;
    int64_t seen_at_ms;
    int64_t lag_ms;
} sqllock__obs_change;

struct sqllock_observer {
    sqllock_db *db;
    int n;                      /* the names given, in their order */
    char **names;
    char *json;                 /* LEASE_OBSERVE's argument: the names */
    int64_t interval_ms;
    int include_initial;
    /* Wake-ups (PostgreSQL): the channels of the rows followed, of
     * which the first `listened` are LISTENed to on the connection of
     * generation listen_gen (db->conn_gen). */
    int notify;
    char (*chans)[SQLLOCK__CHANNEL_MAX];
    int nchans;
    int capchans;
    int listened;
    uint64_t listen_gen;
    /* The holds followed, and the rows of the last poll, both in byte
     * order of their names. */
    sqllock__obs_hold *holds;
    size_t nholds;
    sqllock__obs_hold *rows;
    size_t nrows;
    size_t caprows;
    int64_t now_ms;             /* the server's now at the last poll */
    int64_t due_us;             /* the next poll (sqllock__now_us()) */
    /* Changes made by a poll and not yet handed out: queue[qhead ..
     * qlen). `cur` is the one handed out last, whose texts the caller
     * borrows. */
    sqllock__obs_change *queue;
    size_t qhead;
    size_t qlen;
    size_t qcap;
    sqllock__obs_change cur;
};

/* Compares the rows of the poll just made (o->rows, o->now_ms) with the
 * holds followed, queues the changes that shows, and makes the rows the
 * holds followed. `initial`: the first poll, whose rows are the state
 * the observer starts from (HELD and FREE, when asked for). Reads the
 * history of a name one of whose holds ended, to tell a forced release;
 * on a failure of that read nothing is changed (the poll may be made
 * again). */
int sqllock__obs_diff(sqllock_observer *o, int initial);

/* The channel a release of the row `name` notifies (core/lease_row.c): a
 * reader's row of a shared/exclusive lock notifies its writer's row's,
 * every other row its own. */
void sqllock__obs_channel(const char *name, char *out);

#endif /* SQLLOCK_OBSERVE_H */
