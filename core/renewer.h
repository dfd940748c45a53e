/*
 * renewer.h -- the renewer's entries and state, shared by the two files of
 * the watchdog: watch.c (the thread, its heap, watch and unwatch) and
 * watch_batch.c (one batch renewal statement). Nothing else includes it.
 */
#ifndef SQLLOCK_RENEWER_H
#define SQLLOCK_RENEWER_H

#include <pthread.h>
#include <stdint.h>

#include "internal.h"

#define NOT_QUEUED SIZE_MAX

typedef struct watch_entry {
    sqllock_lease *lease;
    char owner[SQLLOCK_OWNER_LEN + 1];
    int64_t token;
    int64_t ttl_ms;
    int64_t margin_ms;
    int fast;                   /* SQLLOCK_LEASE_FAST */
    int64_t interval_us;
    int64_t retry_us;
    int64_t interval_given_ms;  /* the watch options' (0: ttl / 3) */
    int64_t retry_given_ms;     /* (0: interval / 4) */
    int64_t due_us;             /* when the next renewal is due */
    int64_t key_us;             /* the heap's order: when it needs the
                                   renewer next */
    size_t pos;                 /* index in the heap, or NOT_QUEUED */
    int state;                  /* last state reported to the callback */
    int inflight;               /* taken into the batch in progress */
    int removed;                /* unwatched while in the batch or its
                                   callback ran: dropped after */
    /* The outcome of its renewal in the batch in progress. */
    int rc;
    int renewed;
    int64_t sent_us;
    sqllock_watch_fn callback;
    void *ctx;
    size_t name_len;
    char name[];                /* NUL-terminated */
} watch_entry;

struct sqllock__renewer {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t wake;        /* a new lease, or stop */
    pthread_cond_t idle;        /* `busy` went back to NULL */
    sqllock_db *db;             /* the renewer's own connection */
    watch_entry **heap;         /* min-heap on key_us */
    size_t n, cap;
    watch_entry *batch[SQLLOCK_RENEW_BATCH_MAX];
    size_t nbatch;
    size_t ninflight;           /* entries out of the heap in a batch,
                                   which come back to it: the heap keeps
                                   room for them */
    sqllock_lease *busy;        /* being called back right now */
    char *json;                 /* the batch argument being built */
    size_t json_len, json_cap;
    int stop;
};

/* Renews v[0..n), all durable or all fast, with the renewer's mutex
 * released; each entry's rc, renewed and sent_us say how. `msg` (of
 * SQLLOCK__ERRMSG_MAX bytes) gets the statement's failure
 * (watch_batch.c). */
void sqllock__watch_renew_group(struct sqllock__renewer *r, watch_entry **v,
                                size_t n, int fast, char *msg);

#endif /* SQLLOCK_RENEWER_H */
