/*
 * tu_history.h -- a history of lock operations, recorded by the clients
 * of a fault test (threads, forked processes, the tool's children, a
 * script), and one checker that judges any such history against the
 * lease model: a mutex (or N permits, or shared and exclusive holds) with
 * a server-judged expiry and fencing tokens (issue 30 item 3).
 *
 * RECORDING. A history is a text file of one event per line, appended
 * with one write() each on an O_APPEND descriptor, so that every process
 * of a test may write to it at once (open it before fork(), or again in
 * each process). Times are CLOCK_MONOTONIC microseconds, one clock for
 * every process of the machine. An operation is two events: its
 * invocation, before the call, and its completion, after it, with the
 * outcome; a process killed in between leaves the invocation alone,
 * which the checker takes as "may or may not have happened". A critical
 * section is two events too: S when the client starts acting as the
 * holder, E when it stops (or when its process is known dead: the test
 * records E for a killed child when it reaps it). N records that a client
 * was told of its loss (a watchdog's callback, a status).
 *
 *   t client seq I op name token ttl_ms        op: acquire renew release
 *                                              write force
 *   t client seq C outcome token               outcome: ok fail lost info
 *   t client 0 S name token mode               mode: x (exclusive) s
 *   t client 0 E name token
 *   t client 0 N name token                    told of the loss
 *   t client 0 W name token                    renewed out of sight from
 *                                              now on (a watchdog)
 *   t - 0 K name capacity                      N permits (default 1)
 *   t - 0 F name value                         the final value that the
 *                                              name's ok writes counted
 *
 * An acquire's token is the one its completion gives; a renewal, release
 * or write names the token of the hold it acts for. "fail" means the
 * operation certainly did nothing (BUSY, TIMEOUT, a refused write);
 * "lost" that the client was told its hold is gone (SQLLOCK_LOST); "info"
 * that it may or may not have taken effect (SQLLOCK_ECONNECT: the
 * statement may have run). A "force" is an operator's forced release of
 * the name (sqllock release --force).
 *
 * THE MODEL, rule by rule (a report names the rule):
 *   H1 (DESIGN L1, M1, M2) holds never overlap beyond the name's
 *      capacity, shared holds excepted: a hold lasts from S to the first
 *      of E, the client's N, or an operation of the client on that token
 *      that ended "lost" (or to the end of the history).
 *   H2 (L5) a grant that completed before another grant of the name was
 *      invoked has the smaller token; no token is granted twice.
 *   H3 (L10, DESIGN's "nothing acknowledged and then forgotten") an
 *      acknowledged grant or renewal invoked at i with ttl T keeps the
 *      name until i + T on the server's clock: no conflicting later grant
 *      (a larger token, or one invoked after it was acknowledged, should
 *      the tokens have been forgotten too) completes before then, unless
 *      the holder invoked its release, or an operator forced it, first.
 *   H4 (L4) a release or renewal of a token that a conflicting grant of
 *      a larger token has superseded (that grant completed before it was
 *      invoked) is never acknowledged: it reports lost.
 *   H5 (G1) a write accepted for a token was invoked while that hold
 *      could be live: not after a conflicting grant of a larger token
 *      completed, not after its own release was acknowledged, not after
 *      every grant and renewal of it had ended more than its ttl ago.
 *   H6 (G1, L10) an F value counts every acknowledged write of the name,
 *      and nothing beyond the acknowledged and the undecided ones.
 * Server time and CLOCK_MONOTONIC are taken to run at the same rate up
 * to 0.1 % (plus 2 ms of rounding): a lease of ttl T is judged to last
 * T - (2 ms + T / 1000) at least.
 */
#ifndef SQLLOCK_TU_HISTORY_H
#define SQLLOCK_TU_HISTORY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct tu_hist tu_hist;

/* Opens `path` to append to (created if missing); NULL on failure, with
 * errno. A handle may be shared by threads; a forked child may use its
 * parent's. */
tu_hist *tu_hist_open(const char *path);
void tu_hist_close(tu_hist *h);
const char *tu_hist_path(const tu_hist *h);

/* CLOCK_MONOTONIC, in microseconds. */
int64_t tu_hist_now_us(void);

/* Records an invocation; the sequence number that its completion names.
 * `client` is a word of up to 47 characters without blanks; `name` a
 * lock name of up to 200 (blanks and other bytes outside '!'..'~' are
 * written as %XX). */
int64_t tu_hist_invoke(tu_hist *h, const char *client, const char *op,
                       const char *name, int64_t token, int64_t ttl_ms);
void tu_hist_complete(tu_hist *h, const char *client, int64_t seq,
                      const char *outcome, int64_t token);
/* The outcome word of a status: "ok", "lost", "info" (SQLLOCK_ECONNECT
 * and other statuses after which the statement may have run), "fail". */
const char *tu_hist_outcome(int status);

void tu_hist_section(tu_hist *h, const char *client, const char *name,
                     int64_t token, int shared);        /* S */
void tu_hist_section_end(tu_hist *h, const char *client, const char *name,
                         int64_t token);                 /* E */
void tu_hist_told_lost(tu_hist *h, const char *client, const char *name,
                       int64_t token);                   /* N */
/* E at a time already past (tu_hist_now_us() time): a holder's L6 local
 * deadline that passed before it stopped, say. */
void tu_hist_section_end_at(tu_hist *h, const char *client,
                            const char *name, int64_t token, int64_t t_us);
/* The lease of `token` is renewed from now on by a renewer whose
 * renewals the history does not see (sqllock_lease_watch()): H5 takes it
 * as live until its release or a superseding grant. */
void tu_hist_watched(tu_hist *h, const char *client, const char *name,
                     int64_t token);                     /* W */
void tu_hist_capacity(tu_hist *h, const char *name, int capacity);
void tu_hist_final(tu_hist *h, const char *name, int64_t value);

/* The rules, as indexes of tu_hist_result.broken. */
enum { TU_H1 = 1, TU_H2, TU_H3, TU_H4, TU_H5, TU_H6, TU_H_RULES };

typedef struct tu_hist_result {
    int events, ops, grants, sections, undecided;
    int broken[TU_H_RULES];            /* violations per rule */
    int violations;                    /* their sum */
} tu_hist_result;

/* Checks the history in `path`. Writes one line per violation (the
 * first 20 of each rule), and a summary line, to `report` (NULL: none).
 * Returns the number of violations, or -1 when the file cannot be read
 * or a line is malformed (said in the report). */
int tu_hist_check(const char *path, FILE *report, tu_hist_result *out);

#endif /* SQLLOCK_TU_HISTORY_H */
