/*
 * candidate.h -- a candidate of an election, shared by the two files of
 * elections: leader.c (the public calls) and leader_campaign.c (the
 * campaign thread). Nothing else includes it.
 */
#ifndef SQLLOCK_CANDIDATE_H
#define SQLLOCK_CANDIDATE_H

#include <pthread.h>
#include <stdint.h>

#include "internal.h"

#define LEADER_TAG "leader"
/* The longest pause between two tries of a campaign: bounds the extra
 * time after a crashed leader's expiry, and the time stop() waits. */
#define LEADER_BACKOFF_MAX_MS 250
/* How many times a new leader reads and writes the election's term
 * record before it gives up on a conflict (a write of another leader's
 * came between: rare, since one leader is granted at a time). */
#define LEADER_NOTE_TRIES 4

struct sqllock_leader {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;             /* CLOCK_MONOTONIC: notes, resign, stop */
    sqllock_db *db;                /* the campaign thread's */
    sqllock_lease *lease;          /* the leadership lease, on db */
    sqllock_leader_options opts;   /* callbacks and times */
    int64_t interval_ms;
    int64_t resign_hold_ms;
    _Atomic int acting;            /* leader, as far as others may see */
    _Atomic int64_t term;          /* its token while acting */
    /* Under mu. */
    int stop;
    int leading;                   /* in lead() */
    int resign_req;
    uint64_t resign_done;          /* counts resigns carried out */
    int resign_rc;
    int note;                      /* the watch callback reported */
    int note_status;
    char note_msg[256];
    char error[SQLLOCK__ERRMSG_MAX];
    /* The campaign thread's own. */
    int64_t seen_token;            /* last leader seen */
    int64_t hold_until_us;         /* after a resign: stay out till then */
    int64_t hold_token;            /* ... or until a term after this one
                                      is seen or noted */
    char name[SQLLOCK_PRIMITIVE_NAME_MAX + 1];
    char row[SQLLOCK__DERIVED_MAX + 1];
    char holder[SQLLOCK_HOLDER_MAX + 1];
};

/* The campaign thread's body (leader_campaign.c); `arg` is the
 * candidate. */
void *sqllock__leader_main(void *arg);

#endif /* SQLLOCK_CANDIDATE_H */
