/*
 * race.c -- N1 under a race of processes taking fresh names at random as
 * plain leases and shared or exclusive holds, with the hold intervals
 * checked for overlaps.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "tu_fixture.h"
#include "kinds/kinds.h"

/* ---- the race ---- */

#define RACE_PROCS 4
#define RACE_ROUNDS 16
#define RACE_OPS 12
#define RACE_LOG (RACE_PROCS * RACE_ROUNDS * RACE_OPS)

enum { HOLD_PLAIN, HOLD_SHARED, HOLD_EXCLUSIVE };

typedef struct race_hold {
    int64_t enter_us, exit_us;
    int kind, round, proc;
} race_hold;

typedef struct race {
    char base[64];
    _Atomic int arrived[RACE_ROUNDS];
    _Atomic int nlog, failures, ekind, busy;
    race_hold log[RACE_LOG];
} race;

static int64_t mono_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* One contender: RACE_ROUNDS fresh names, each started together with
 * the others (a barrier in shared memory), RACE_OPS holds of each at
 * random as a plain lease (half of them), a shared or an exclusive
 * hold. */
static int race_child(void *arg, int p)
{
    race *c = arg;
    sqllock_db *db = tu_child_open(g_url, "kinds race");
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    char name[128];
    int round, op, kind, rc, slot;
    int64_t end;

    if (db == NULL)
        return 2;
    srand(97u * (unsigned)p + (unsigned)getpid());
    o.ttl_ms = tu_scaled_ms(10000);
    o.backoff_min_ms = 2;
    o.backoff_max_ms = 20;
    for (round = 0; round < RACE_ROUNDS; round++) {
        snprintf(name, sizeof name, "%s-%d", c->base, round);
        atomic_fetch_add(&c->arrived[round], 1);
        end = tu_now_ms() + tu_scaled_ms(30000);
        TU_WAIT_WHILE(atomic_load(&c->arrived[round]) < RACE_PROCS, end, 1);
        for (op = 0; op < RACE_OPS; op++) {
            sqllock_lease *l = NULL;
            sqllock_rw *rw = NULL;
            race_hold h;

            /* Plain half the time: the marker keeps plain leases out
             * once a name is marked, so they need the chances. */
            kind = rand() % 4;
            kind = kind < 2 ? HOLD_PLAIN : kind - 1;
            if (kind == HOLD_PLAIN)
                rc = sqllock_lease_new(db, name, &o, &l);
            else
                rc = sqllock_rw_new(db, name, kind == HOLD_SHARED, &o, &rw);
            if (rc == SQLLOCK_OK)
                rc = l != NULL ? sqllock_lease_acquire(l, 100)
                               : sqllock_rw_acquire(rw, 100);
            if (rc == SQLLOCK_OK) {
                h.enter_us = mono_us();
                tu_sleep_us(500 + rand() % 3000);
                h.exit_us = mono_us();
                h.kind = kind;
                h.round = round;
                h.proc = p;
                rc = l != NULL ? sqllock_lease_release(l)
                               : sqllock_rw_release(rw);
                if (rc != SQLLOCK_OK) {
                    fprintf(stderr, "race release: %s: %s\n",
                            sqllock_errname(rc), sqllock_errmsg(db));
                    atomic_fetch_add(&c->failures, 1);
                }
                slot = atomic_fetch_add(&c->nlog, 1);
                if (slot < RACE_LOG)
                    c->log[slot] = h;
            } else if (rc == SQLLOCK_EKIND) {
                atomic_fetch_add(&c->ekind, 1);
            } else if (rc == SQLLOCK_BUSY || rc == SQLLOCK_TIMEOUT) {
                atomic_fetch_add(&c->busy, 1);
            } else {
                fprintf(stderr, "race %s acquire: %s: %s\n",
                        kind == HOLD_PLAIN ? "plain" : kind == HOLD_SHARED ?
                        "shared" : "exclusive", sqllock_errname(rc),
                        sqllock_errmsg(db));
                atomic_fetch_add(&c->failures, 1);
            }
            sqllock_lease_free(l);
            sqllock_rw_free(rw);
            tu_sleep_us(rand() % 2000);
        }
    }
    sqllock_close(db);
    return 0;
}

/*
 * N1 under a race: RACE_PROCS processes take RACE_ROUNDS fresh names,
 * each name at random as a plain lease, a shared or an exclusive hold,
 * so that the first uses of a name race each other and a name can pass
 * from plain use to shared/exclusive use while others wait. Every hold
 * is logged (monotonic enter and exit, taken inside the hold); a plain
 * or exclusive hold must overlap no other hold of its name, whatever its
 * kind. Only OK, BUSY, TIMEOUT and EKIND may come back.
 */
void test_kinds_N1_race_plain_and_rw_never_overlap(void **state)
{
    race *c = tu_shared_map(sizeof *c);
    pid_t pid[RACE_PROCS];
    int i, j, n, overlaps = 0, count[3] = { 0, 0, 0 }, mixed = 0, r;
    (void)state;

    kn_name(c->base, sizeof c->base, "race");
    tu_fork_n(pid, RACE_PROCS, race_child, c);
    assert_int_equal(tu_wait_all(pid, RACE_PROCS), 0);
    n = atomic_load(&c->nlog);
    if (n > RACE_LOG)
        n = RACE_LOG;
    for (i = 0; i < n; i++) {
        const race_hold *a = &c->log[i];

        count[a->kind]++;
        if (a->kind == HOLD_SHARED)
            continue;
        for (j = 0; j < n; j++) {
            const race_hold *b = &c->log[j];

            if (j == i || b->round != a->round ||
                !(b->enter_us < a->exit_us && a->enter_us < b->exit_us))
                continue;
            if (++overlaps <= 5)
                print_message("    overlap on round %d: %s [%" PRId64 ", %"
                              PRId64 "] (process %d) and %s [%" PRId64 ", %"
                              PRId64 "] (process %d)\n", a->round,
                              a->kind == HOLD_PLAIN ? "plain" : "exclusive",
                              a->enter_us, a->exit_us, a->proc,
                              b->kind == HOLD_PLAIN ? "plain" :
                              b->kind == HOLD_SHARED ? "shared" : "exclusive",
                              b->enter_us, b->exit_us, b->proc);
        }
    }
    /* Rounds in which the name was held both ways (one after the
     * other): the transitions the marker guards. */
    for (r = 0; r < RACE_ROUNDS; r++) {
        int plain = 0, rw = 0;

        for (i = 0; i < n; i++)
            if (c->log[i].round == r) {
                plain += c->log[i].kind == HOLD_PLAIN;
                rw += c->log[i].kind != HOLD_PLAIN;
            }
        mixed += plain > 0 && rw > 0;
    }
    print_message("    %d plain, %d shared, %d exclusive holds; %d EKIND, "
                  "%d busy; %d of %d names held both ways\n", count[0],
                  count[1], count[2], atomic_load(&c->ekind),
                  atomic_load(&c->busy), mixed, RACE_ROUNDS);
    assert_int_equal(atomic_load(&c->failures), 0);
    if (overlaps != 0)
        fail_msg("N1: %d overlaps between a plain or exclusive hold and "
                 "another hold of the same name", overlaps);
    assert_true(count[HOLD_PLAIN] > 0);
    assert_true(count[HOLD_SHARED] + count[HOLD_EXCLUSIVE] > 0);
    assert_true(atomic_load(&c->ekind) > 0);
    munmap(c, sizeof *c);
}
