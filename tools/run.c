/*
 * run.c -- `sqllock run NAME --ttl DUR ... -- CMD ARGS...`: runs a command
 * while holding a lease, and keeps the lease alive while it runs.
 *
 * Three processes take part. The runner (this file) holds the lease; the
 * guard (guard.c), a small single-threaded process forked before
 * anything else happens, starts the command and sees to it that nothing
 * of it runs on once the runner is gone (DESIGN X1): the runner's end of
 * file on their pipe makes the guard kill the command's group and every
 * descendant, and it stops the command by itself when the lease's local
 * deadline passes while the runner is stopped and cannot tell it of a
 * renewal. guard.c explains how, and what it does not cover.
 *
 * The lease is renewed by the library's watchdog (sqllock_lease_watch(),
 * DESIGN L7): a renewer thread with its own connection -- or, behind a
 * pooler that gives each client connection a server connection of its
 * own (pooler=session, pooler=pgpool), by a thread of this file on the
 * run's own connection (run_share_renew()), so that a run holds one slot of
 * the pool, not two. The main thread
 * is a supervisor that never talks to the database while the command
 * runs, so a renewal that hangs cannot keep it from acting: it waits,
 * with pselect(), on the wake-up pipe, the pipe from the guard, and a
 * timeout. The wake-up pipe is written by the signal handlers (one byte:
 * the signal number) and by the watch callback (a zero byte). The
 * timeout is the lease's local deadline (DESIGN L6), so the supervisor
 * sees the lease lost when that deadline passes even if the renewer is
 * stuck and never calls back, and at most a quarter of the renewal
 * interval, so that it passes each new deadline on to the guard soon
 * after the renewal that set it.
 *
 * DESIGN X3: each time the supervisor wakes, it looks at the lease's
 * state before anything else -- before it reads what the guard reported
 * meanwhile -- so a runner that wakes from a pause past its deadline
 * treats the lease as lost even when the command has ended meanwhile.
 * DESIGN X2: the exit code is 76 whenever the lease was not held without
 * a break from the grant until the command and what it left running had
 * ended: a renewal found another owner, the deadline passed (also when
 * the guard reports that the command ended after it), or the release
 * found the lease taken over. Each such message says when the loss was
 * noticed.
 *
 * SIGCHLD, SIGINT, SIGTERM and SIGHUP are blocked except inside pselect(),
 * so their handlers run only there, on the main thread. They are blocked
 * before the watch starts the renewer thread, which inherits that mask.
 * INT, TERM and HUP are passed on to the command, through the guard; a
 * signal that was ignored when sqllock started (nohup) stays ignored, as
 * a shell does it.
 *
 * The command gets a process group of its own, and every signal sent to
 * it goes to that whole group, so that a shell script's children stop
 * with it when the lease is lost. The exception: when sqllock runs in the
 * foreground of its terminal, the command joins sqllock's group so that
 * it can use the terminal; the signals then go to the command alone, and
 * those the terminal sends reach the command directly (they are not
 * passed on twice).
 *
 * If the lease is lost, the command gets --signal (SIGTERM), then SIGKILL
 * after --kill-after (10 s) if it is still running, and the tool exits
 * 76. When the command has ended, whatever it left running gets --signal,
 * then SIGKILL after --kill-after -- at once when the lease was lost --
 * and the lease is given up only when nothing of the job is left.
 *
 * DESIGN X4, --hold-at-least DUR: when the command ends sooner than DUR
 * after the grant, the lease is not released but set to expire DUR after
 * the grant (one renewal with the time left as its ttl), and sqllock
 * exits. The runner then has nothing left to be killed in: the name stays
 * held until then whatever happens to it.
 *
 * The command's environment is sqllock's own with the lease's
 * SQLLOCK_NAME, SQLLOCK_OWNER and SQLLOCK_TOKEN, and without SQLLOCK_DB
 * and SQLLOCK_DB_FILE (DESIGN C4: the URL may hold a password), unless
 * --export-db asks for the database: the runner sends those variables to
 * the guard, which builds the environment. sqllock's own environment is
 * never changed: the renewer thread runs meanwhile, and libpq reads its
 * PG* variables on each connect.
 *
 * --leader (DESIGN M4): the lease is the leadership of the election NAME
 * (sqllock_leader_lease_new(): the row NAME 0x1f "leader", which every
 * sqllock_leader of that election campaigns for), and the runner waits
 * for it -- forever unless --wait or --skip says otherwise; a hand-over
 * wakes it at once -- then runs the command as for a lock: X1-X3 hold,
 * the command is stopped when the leadership is lost and the exit code
 * is then 76; SIGTERM or SIGINT reach the command, and when it has ended
 * the release hands the leadership over; a command that ends by itself
 * hands it over too, and its exit code is the tool's. The runner
 * campaigns once: after a loss it exits (76), and whoever started it
 * (a service manager) starts it again to campaign again.
 *
 * --quiet leaves out the message about a busy lock (errors are still
 * printed); that message names the holder and the time it has left, as
 * `list` shows them (never the owner id, which can release the lock).
 * --verbose prints a line for each event, each message with the time.
 *
 * --max-runtime DUR (run_super.c) stops the command when it has run
 * DUR, as a loss does, and the exit code is then 124 (76 when the lease
 * was lost too). --once-per DUR and --once-per-cron EXPR (run_slot.c)
 * run the command at most once per slot of a schedule across hosts,
 * through NAME's slot record, claimed holding the lease before the
 * command starts. --metrics-file PATH (run_metrics.c) writes the run's
 * outcome, whatever it was, for Prometheus (cli_cmd_run()).
 *
 * The parts, each calling only those below it: this file (the options
 * and the order of a run: run_held()), run_metrics.c (--metrics-file),
 * run_super.c (the supervision of the command: signals, the guard's
 * pipes, the supervisor's loop, --max-runtime), run_hold.c (giving the
 * lease up: the release through an outage, --hold-at-least, the busy
 * message), run_watch.c (the lease while the command runs: the
 * renewals' news, the runner's own renewer behind a session pooler,
 * losses), run_slot.c (the schedule slot), run_history.c (the run in its
 * name's history, and the writes after the job tried again through an
 * outage) and, under them all, run_base.c (the runner's state in
 * run_base.h, the messages, the writes to the wake-up pipe and to the
 * guard).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/select.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "run_history.h"
#include "run_hold.h"
#include "run_metrics.h"
#include "run_slot.h"
#include "run_super.h"
#include "run_watch.h"

/* Runs the command while the lease is held, and gives the lease up
 * after it. Returns the tool's exit code. */
static int run_held(run_state *st)
{
    char ttl[32], every[32];
    const char *status;
    int code, i;

    if (st->leader)
        run_event(st, "elected leader of '%s' (the token below is the term)",
                  st->name);
    if (st->sem != NULL)
        run_event(st, "acquired permit %d of %d of semaphore '%s'",
                  sqllock_sem_permit(st->sem), st->permits, st->name);
    run_event(st, "acquired %s: token %" PRId64 ", ttl %s, renewed "
              "every %s", st->what, sqllock_lease_token(st->lease),
              run_span(ttl, sizeof ttl, st->ttl_ms),
              run_span(every, sizeof every, st->every_ms));
    /* --once-per: the slot is claimed holding the lease, before the
     * command runs; a slot that had its run gives the lease back. */
    code = run_slot_claim(st);
    if (code >= 0)
        return run_give_back(st, code);
    if (pthread_mutex_init(&st->mu, NULL) != 0) {
        run_say(st, "cannot make a mutex");
        return run_give_back(st, CLI_EXIT_DB);
    }
    st->history_token = sqllock_lease_token(st->lease);
    st->history_start_ms = run_history_now_ms();
    run_note_history(st, 0, 0, "running");
    code = run_start_and_supervise(st);
    /* The handle is the main thread's again, and what its renewer said
     * last, should it have said it after the supervisor's last look, is
     * taken. */
    if (st->share) {
        run_share_stop(st);
        run_take_note(st);
    }
    if (st->cmd > 0 && (sqllock_lease_count(st->lease) > 0 || st->lost))
        code = run_give_up(st, code);
    /* --max-runtime ran out: 124, unless the lease was lost too (76,
     * DESIGN X2). */
    if (st->timed_out && !st->broken) {
        run_say(st, "exit %d, not the command's %d: it ran longer than "
                "--max-runtime %s", CLI_EXIT_TIMEOUT, code,
                st->runtime_text);
        code = CLI_EXIT_TIMEOUT;
    }
    st->outcome = st->broken ? RUN_OUTCOME_LOST
                  : st->timed_out ? RUN_OUTCOME_TIMEOUT
                  : st->cmd > 0 ? RUN_OUTCOME_RAN : RUN_OUTCOME_ERROR;
    status = st->broken ? "lost" : st->timed_out ? "timeout"
             : code == CLI_EXIT_OK ? "ok" : "failed";
    run_slot_finish(st, code, status);
    run_note_history(st, run_history_now_ms(), code, status);
    /* The renewer is stopped by now (release and free unwatch, and
     * run_hold_until() closes the handle), so the callback can no longer
     * write to the pipe. */
    if (st->lease != NULL)
        sqllock_lease_unwatch(st->lease);
    for (i = 0; i < st->nalso; i++)
        sqllock_lease_unwatch(st->also[i]);
    if (st->wake[0] >= 0) {
        close(st->wake[0]);
        close(st->wake[1]);
    }
    pthread_mutex_destroy(&st->mu);
    return code;
}

/* `sqllock run`, but for --metrics-file (cli_cmd_run()): st is zeroed,
 * *metrics gets --metrics-file's path once it is parsed. */
static int run_cmd(run_state *st, const char **metrics, const cli_ctx *ctx,
                   int argc, char **argv)
{
    cli_ctx c = *ctx;
    cli_lease_args la = { NULL, NULL, NULL, 0, 0 };
    cli_list also = { NULL, 0, 0 };
    cli_run_args ra;
    cli_guard_cfg gcfg;
    const char *name = NULL, *permits = NULL, *release_timeout = NULL;
    const char *max_runtime = NULL, *metrics_file = NULL;
    int help = 0, export_db = 0, shared = 0, exclusive = 0, leader = 0;
    int fair = 0, npos, rest, rc, i;
    run_slot_args sa = { NULL, NULL, NULL, 0 };
    int64_t npermits = 0, release_timeout_ms = RUN_RELEASE_TIMEOUT_MS;
    sqllock_options dbo = SQLLOCK_OPTIONS_INIT;
    sqllock_lease_options lo = SQLLOCK_LEASE_OPTIONS_INIT;
    cli_db where;
    char wait[32];
    int64_t open_start, open_ms;

    memset(&ra, 0, sizeof ra);
    memset(&where, 0, sizeof where);
    also.v = st->also_names;
    also.max = SQLLOCK_LEASE_MANY_MAX - 1;
    {
        const cli_opt opts[] = {
            CLI_OPTS_DB(c), { "ttl", &la.ttl, NULL, 0 },
            { "wait", &la.wait, NULL, 0 }, { "skip", NULL, &ra.skip, 0 },
            { "holder", &la.holder, NULL, 0 },
            { "busy-exit", &ra.busy_exit, NULL, 0 },
            { "signal", &ra.signal, NULL, 0 },
            { "kill-after", &ra.kill_after, NULL, 0 },
            { "renew-every", &ra.renew_every, NULL, 0 },
            { "hold-at-least", &ra.hold_at_least, NULL, 0 },
            { "release-timeout", &release_timeout, NULL, 0 },
            { "quiet", NULL, &ra.quiet, 0 },
            { "verbose", NULL, &ra.verbose, 0 },
            { "no-history", NULL, &ra.no_history, 0 },
            { "export-db", NULL, &export_db, 0 },
            { "leader", NULL, &leader, 0 },
            { "fair", NULL, &fair, 0 },
            { "also", (const char **)(void *)&also, NULL, CLI_OPT_LIST },
            { "shared", NULL, &shared, 0 },
            { "exclusive", NULL, &exclusive, 0 },
            { "permits", &permits, NULL, 0 },
            { "max-runtime", &max_runtime, NULL, 0 },
            { "once-per", &sa.once_per, NULL, 0 },
            { "once-per-cron", &sa.once_per_cron, NULL, 0 },
            { "retry-failed", NULL, &sa.retry_failed, 0 },
            { "slot-done-exit", &sa.done_exit, NULL, 0 },
            { "metrics-file", &metrics_file, NULL, 0 },
            { "help", NULL, &help, 0 }, { NULL, NULL, NULL, 0 }
        };

        rc = cli_parse("run", argc, argv, opts, &name, 1, &npos, &rest);
    }
    if (rc != CLI_EXIT_OK)
        return rc;
    if (help)
        return cli_help();
    if (npos != 1 || rest >= argc) {
        cli_error("run: needs NAME and a command after '--'");
        return cli_usage();
    }
    /* From here on every outcome, a usage error too, goes to
     * --metrics-file. */
    st->name = name;
    if (metrics_file != NULL && metrics_file[0] == '\0') {
        cli_error("run: --metrics-file needs a path");
        return cli_usage();
    }
    *metrics = metrics_file;
    rc = cli_lease_args_check("run", &la);
    if (rc == CLI_EXIT_OK)
        rc = cli_run_args_check(&ra, &la);
    if (rc == CLI_EXIT_OK)
        rc = cli_parse_duration("run", "release-timeout", release_timeout,
                                &release_timeout_ms);
    if (rc == CLI_EXIT_OK && release_timeout_ms <= 0) {
        cli_error("run: --release-timeout must be longer than 0");
        rc = cli_usage();
    }
    if (rc == CLI_EXIT_OK)
        rc = cli_parse_duration("run", "max-runtime", max_runtime,
                                &st->runtime_ms);
    if (rc == CLI_EXIT_OK && max_runtime != NULL && st->runtime_ms <= 0) {
        cli_error("run: --max-runtime must be longer than 0, not '%s'",
                  max_runtime);
        rc = cli_usage();
    }
    st->runtime_text = max_runtime;
    /* --once-per, --once-per-cron: for the plain lease (and --also). */
    if (rc == CLI_EXIT_OK)
        rc = run_slot_check(st, &sa, leader ? "--leader"
                                     : shared ? "--shared"
                                     : exclusive ? "--exclusive"
                                     : permits != NULL ? "--permits" : NULL);
    st->nalso = also.n;
    if (rc == CLI_EXIT_OK && st->nalso > 0 && ra.hold_ms > 0) {
        cli_error("run: --hold-at-least cannot be used with --also");
        rc = cli_usage();
    }
    if (rc == CLI_EXIT_OK && shared && exclusive) {
        cli_error("run: --shared and --exclusive exclude each other");
        rc = cli_usage();
    }
    if (rc == CLI_EXIT_OK && (shared || exclusive) &&
        (st->nalso > 0 || ra.hold_ms > 0)) {
        cli_error("run: --%s cannot be used with --also or --hold-at-least",
                  shared ? "shared" : "exclusive");
        rc = cli_usage();
    }
    if (rc == CLI_EXIT_OK && leader && (shared || exclusive)) {
        cli_error("run: --leader cannot be used with --shared or "
                  "--exclusive");
        rc = cli_usage();
    }
    if (rc == CLI_EXIT_OK && leader && (st->nalso > 0 || ra.hold_ms > 0)) {
        cli_error("run: --leader cannot be used with --also or "
                  "--hold-at-least");
        rc = cli_usage();
    }
    if (rc == CLI_EXIT_OK && fair && (shared || exclusive || leader)) {
        cli_error("run: --fair cannot be used with --%s",
                  shared ? "shared" : exclusive ? "exclusive" : "leader");
        rc = cli_usage();
    }
    /* Fair waiting (DESIGN M3) is for one name. */
    if (rc == CLI_EXIT_OK && st->nalso > 0 && fair) {
        cli_error("run: --fair cannot be used with --also");
        rc = cli_usage();
    }
    if (rc == CLI_EXIT_OK && permits != NULL &&
        (shared || exclusive || leader || fair)) {
        cli_error("run: --permits cannot be used with --%s",
                  shared ? "shared" : exclusive ? "exclusive"
                  : leader ? "leader" : "fair");
        rc = cli_usage();
    }
    if (rc == CLI_EXIT_OK && permits != NULL) {
        /* --permits N: a permit of semaphore NAME (DESIGN M1). */
        rc = cli_parse_int("run", "permits", permits, 1,
                           SQLLOCK_SEM_PERMITS_MAX, &npermits);
        if (rc == CLI_EXIT_OK && (st->nalso > 0 || ra.hold_ms > 0)) {
            cli_error("run: --permits cannot be used with %s",
                      st->nalso > 0 ? "--also" : "--hold-at-least");
            rc = cli_usage();
        }
    }
    if (rc != CLI_EXIT_OK)
        return rc;
    /* A candidate waits for the leadership until it gets it. */
    if (leader && la.wait == NULL && !ra.skip)
        la.wait_ms = SQLLOCK_WAIT_FOREVER;

    st->name = name;
    st->leader = leader;
    snprintf(st->what, sizeof st->what,
             leader ? "the leadership of '%s'"
             : npermits > 0 ? "a permit of semaphore '%s'"
             : shared ? "shared lock '%s'"
             : exclusive ? "exclusive lock '%s'" : "lock '%s'", name);
    st->permits = (int)npermits;
    st->cmd0 = argv[rest];
    st->where = &where;
    st->dbo = &dbo;
    st->export_db = export_db;
    st->lost_signal = ra.lost_signal;
    st->ttl_ms = la.ttl_ms;
    st->interval_ms = ra.renew_every_ms;
    st->every_ms = ra.renew_every_ms ? ra.renew_every_ms : la.ttl_ms / 3;
    st->hold_ms = ra.hold_ms;
    st->release_timeout_ms = release_timeout_ms;
    st->verbose = ra.verbose;
    if (st->verbose)
        sqllock_log_set(run_log_event, NULL, SQLLOCK_LOG_INFO);
    st->quiet = ra.quiet;
    /* NAME's history is of its exclusive runs (and plain ones) only:
     * many shared runs hold at once, and an election is not a lock. */
    st->history = !ra.no_history && !shared && !leader;
    if (la.holder != NULL) {
        snprintf(st->history_who, sizeof st->history_who, "%s", la.holder);
        snprintf(st->slot_who, sizeof st->slot_who, "%s", la.holder);
    } else {
        char host[256];

        if (gethostname(host, sizeof host) != 0)
            snprintf(host, sizeof host, "?");
        host[sizeof host - 1] = '\0';
        snprintf(st->history_who, sizeof st->history_who, "%s:%ld", host,
                 (long)getpid());
    }
    st->wake[0] = st->wake[1] = -1;
    st->ctl = st->sts = -1;
    tzset();
    /* The guard first: before the database is opened and before any
     * thread starts (guard.c). */
    gcfg.cmd = argv + rest;
    gcfg.lost_signal = ra.lost_signal;
    gcfg.kill_after_ms = ra.kill_after_ms;
    st->guard = cli_guard_start(&gcfg, &st->ctl, &st->sts);
    if (st->guard < 0) {
        cli_error("run: cannot start the guard process: %s",
                  strerror(errno));
        return CLI_EXIT_DB;
    }
#ifdef __linux__
    /* Should the guard die, what the command started comes here. */
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
#endif
    /* A guard that is gone must not kill this process through a write
     * to its pipe. The command gets back the disposition sqllock started
     * with (the guard was forked before this). */
    signal(SIGPIPE, SIG_IGN);
    /* A renewal must not sit in the database's busy wait for longer than
     * a renewal interval, or the lease could run out meanwhile. The
     * renewer's connection takes this from the handle. */
    dbo.busy_timeout_ms = st->every_ms < 5000
                              ? (st->every_ms > 0 ? st->every_ms : 1) : 5000;
    /* Behind a session pooler the run holds one server connection, not
     * two (run_share_renew()), and one it cannot get yet it waits for as it
     * waits for the lock (--wait). */
    rc = cli_db_url(&c, &where);
    if (rc != CLI_EXIT_OK) {
        run_end_guard(st);
        close(st->sts);
        cli_db_free(&where);
        return rc;
    }
    st->share = cli_db_session_pooler(where.url);
    cli_db_free(&where);
    open_start = cli_guard_now_us();
    rc = cli_open_db_within(&c, &dbo, 1, st->share && !ra.skip ? la.wait_ms
                                                              : 0,
                            &st->db, &where);
    if (rc != CLI_EXIT_OK) {
        run_end_guard(st);
        close(st->sts);
        cli_db_free(&where);
        return rc;
    }
    lo.ttl_ms = la.ttl_ms;
    lo.holder = la.holder;
    lo.flags = fair ? SQLLOCK_LEASE_FAIR : 0;
    /* One retry at once in the library; run_release_persisting() does the
     * rest, with the run's messages. */
    lo.release_timeout_ms = 1;
    if (shared || exclusive) {
        rc = sqllock_rw_new(st->db, name, shared, &lo, &st->rw);
        st->lease = sqllock_rw_lease(st->rw);
    } else if (leader) {
        rc = sqllock_leader_lease_new(st->db, name, &lo, &st->lease);
    } else if (st->permits > 0) {
        rc = sqllock_sem_new(st->db, name, st->permits, &lo, &st->sem);
    } else {
        rc = sqllock_lease_new(st->db, name, &lo, &st->lease);
    }
    for (i = 0; rc == SQLLOCK_OK && i < st->nalso; i++)
        rc = sqllock_lease_new(st->db, st->also_names[i], &lo, &st->also[i]);
    if (rc == SQLLOCK_OK && !st->share)
        rc = run_prepare_renewer(st->db);
    /* The wait for a pool's slot came out of --wait. */
    open_ms = (cli_guard_now_us() - open_start) / 1000;
    if (st->share && open_ms >= 1000)
        run_event(st, "connected after %s (waiting for the pooler's server "
                  "connection, or for the server)",
                  run_span(wait, sizeof wait, open_ms));
    if (st->share && la.wait_ms > 0 && la.wait_ms != SQLLOCK_WAIT_FOREVER) {
        la.wait_ms -= open_ms;
        if (la.wait_ms < 0)
            la.wait_ms = 0;
    }
    if (rc == SQLLOCK_OK && leader && !ra.skip &&
        la.wait_ms == SQLLOCK_WAIT_FOREVER)
        run_event(st, "campaigning for the leadership of '%s'", name);
    else if (rc == SQLLOCK_OK && !ra.skip && la.wait_ms > 0)
        run_event(st, "acquiring %s, waiting up to %s while it is busy",
                  st->what, run_span(wait, sizeof wait, la.wait_ms));
    if (rc == SQLLOCK_OK && st->nalso > 0) {
        sqllock_lease *all[SQLLOCK_LEASE_MANY_MAX];

        all[0] = st->lease;
        for (i = 0; i < st->nalso; i++)
            all[i + 1] = st->also[i];
        rc = sqllock_lease_acquire_many(st->db, all, st->nalso + 1,
                                        ra.skip ? 0 : la.wait_ms);
    } else if (rc == SQLLOCK_OK && st->rw != NULL) {
        rc = sqllock_rw_acquire(st->rw, ra.skip ? 0 : la.wait_ms);
    } else if (rc == SQLLOCK_OK && st->sem != NULL) {
        rc = sqllock_sem_acquire(st->sem, ra.skip ? 0 : la.wait_ms);
        st->lease = sqllock_sem_lease(st->sem);
    } else if (rc == SQLLOCK_OK) {
        rc = sqllock_lease_acquire(st->lease, ra.skip ? 0 : la.wait_ms);
    }
    st->granted_us = cli_guard_now_us();
    if ((rc == SQLLOCK_BUSY || rc == SQLLOCK_TIMEOUT) && st->nalso > 0) {
        /* The library's message names the lock found held. */
        if (!ra.quiet)
            cli_error("run: %s", sqllock_errmsg(st->db));
        st->outcome = RUN_OUTCOME_BUSY;
        rc = (int)ra.busy_exit_code;
    } else if ((rc == SQLLOCK_BUSY || rc == SQLLOCK_TIMEOUT) &&
               st->sem != NULL) {
        if (!ra.quiet)
            run_say(st, "not running '%s': %s", st->cmd0,
                    sqllock_errmsg(st->db));
        st->outcome = RUN_OUTCOME_BUSY;
        rc = (int)ra.busy_exit_code;
    } else if (rc == SQLLOCK_BUSY || rc == SQLLOCK_TIMEOUT) {
        if (!ra.quiet)
            run_busy_message(st);
        st->outcome = RUN_OUTCOME_BUSY;
        rc = (int)ra.busy_exit_code;
    } else if (rc != SQLLOCK_OK) {
        rc = cli_db_error(st->db, rc, "run");
    } else {
        rc = run_held(st);
    }
    /* The guard has exited after the job, or exits now: it never got
     * CLI_GUARD_START. */
    run_end_guard(st);
    if (st->sts >= 0)
        close(st->sts);
    if (st->rw != NULL)
        sqllock_rw_free(st->rw);
    else if (st->sem != NULL)
        sqllock_sem_free(st->sem);   /* and its permit's lease, its own */
    else
        sqllock_lease_free(st->lease);
    for (i = 0; i < st->nalso; i++)
        sqllock_lease_free(st->also[i]);
    sqllock_close(st->db);
    sqllock_close(st->own_db);
    cli_db_free(&where);
    return rc;
}

int cli_cmd_run(const cli_ctx *ctx, int argc, char **argv)
{
    const char *metrics = NULL;
    struct timespec ts;
    run_state st;
    int rc;

    memset(&st, 0, sizeof st);
    /* The run's start: --once-per's slot is the one it began in, and
     * --metrics-file counts the wait from here. */
    clock_gettime(CLOCK_REALTIME, &ts);
    st.start_wall_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    st.start_us = cli_guard_now_us();
    rc = run_cmd(&st, &metrics, ctx, argc, argv);
    if (metrics != NULL)
        run_metrics_write(&st, metrics, rc);
    return rc;
}
