/*
 * help.c -- the text of `sqllock --help`, in one place: tools/mkman.c
 * makes the manual page sqllock(1) from it at build time, and `sqllock
 * COMMAND --help` prints the part of it that is about COMMAND, found by
 * the layout mkman reads too (a command's item under "Commands:", the
 * items of "Options:").
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* The help, in parts: C99 promises string literals of only 4095 bytes. */
static const char *const help_text[] = {
"usage: sqllock [--db URL | --db-file PATH | --local] COMMAND [ARGS...]\n"
"       sqllock -h | --help | -V | --version\n"
"       sqllock COMMAND --help\n"
"\n"
"Distributed lease locks on the SQL database you already run.\n"
"\n"
"Commands:\n"
"  init\n"
"      Create the sqllock tables if they do not exist (idempotent) and\n"
"      print the schema version, and what a row lock excludes there:\n"
"      \"row locks: exclusive\" (every client waits), \"node\" (a Galera\n"
"      cluster: only clients of the same node wait) or \"database\"\n"
"      (SQLite: a transaction locks the whole database).\n"
"  acquire NAME --ttl DUR [--wait DUR] [--holder TEXT] [--quiet]\n"
"      Take the lease on NAME and print it as shell assignments, so that\n"
"      eval \"$(sqllock acquire NAME --ttl 30s)\" sets SQLLOCK_NAME,\n"
"      SQLLOCK_OWNER, SQLLOCK_TOKEN and SQLLOCK_TTL_MS. The lease is not\n"
"      renewed: it stays held until `sqllock release` or until --ttl has\n"
"      passed.\n"
"  release NAME --owner ID --token N\n"
"      Release a lease taken by `acquire`. Exit 76 if it was lost (it\n"
"      expired, then was taken over by a later grant or removed); exit\n"
"      75, releasing nothing, if NAME is held live by a lease that ID and\n"
"      N do not name and that is not a later grant (a wrong owner or\n"
"      token).\n"
"  release NAME --force [--force]\n"
"      Free NAME's lease whoever holds it, for an operator who must free\n"
"      a stuck lock; recorded in NAME's history (who: user@host and the\n"
"      database user; when; which token) in the same transaction: a role\n"
"      that cannot write the record frees nothing (exit 69, naming the\n"
"      right it lacks).\n"
"      A lease still live by the database's clock is freed only with\n"
"      --force twice (exit 75 with one, saying who holds it): its holder\n"
"      may be alive, and hears LOST at its next renewal. NAME's kind\n"
"      marker (see list) is never freed (exit 78). The row of a\n"
"      shared/exclusive lock, a semaphore, a fair queue or an election\n"
"      is named as list prints it (\"NAME [w]\", \"NAME [p2]\", ...), here\n"
"      and in show, when NAME itself has no such row; its forced release\n"
"      goes in NAME's history.\n"
"  show NAME [--json]\n"
"      Show NAME's lease: holder, owner, token, when it was acquired and\n"
"      expires, and the time left, by the database's clock. NAME is\n"
"      checked as acquire checks it (so are history's and release's).\n"
"  history NAME [--json] [--clear | --clear-all]\n"
"      Show NAME's last runs under `run` and forced releases, newest\n"
"      first (start, end, duration, exit code, status, who; times by the\n"
"      clock of the host that wrote them): 20 runs, and apart 20 forced\n"
"      releases and clearings. --clear deletes the runs and keeps the\n"
"      forced releases; --clear-all deletes those too. Either notes\n"
"      itself in the history, with who cleared.\n"
"      After them, the slot of `run --once-per` (kept apart, never\n"
"      cleared): the last slot that had a run, how the run went, and the\n"
"      slots in which nothing ran, between the last two and since\n"
"      (--json: a last element of kind \"slot\").\n"
"  list [--json]\n"
"      Show every lease row: NAME, OWNER, TOKEN, HOLDER and LEFT (the\n"
"      time left by the database's clock). --json prints a JSON array of\n"
"      {name, owner, token, holder, acquired_at_ms, expires_at_ms,\n"
"      remaining_ms} objects. The rows of a shared/exclusive lock, a\n"
"      semaphore or an election show as \"NAME [tag]\", and the row that\n"
"      marks NAME as one of them as \"NAME [kind: shared/exclusive lock]\"\n"
"      (or semaphore, leader election), with LEFT \"never\": a name has\n"
"      one kind for good (contract N1). list, show and history never\n"
"      create a SQLite file that does not exist (exit 69, saying so).\n",
"  watch NAME... [--json] [--interval DUR] [--count N] [--timeout DUR]\n"
"      [--initial]\n"
"      Follow the locks NAME... (up to 256) without holding them: print a\n"
"      line per change, TIME NAME CHANGE token=N [old_token=N] holder=TEXT,\n"
"      TIME by the database's clock in the local time zone, CHANGE one of\n"
"      acquired, released, expired (the lease ran out unrenewed),\n"
"      taken_over (granted again after it expired; old_token is the\n"
"      expired one's) and force_released (release --force). NAME covers\n"
"      the rows list shows under it: an election's \"NAME [leader]\" (a\n"
"      line per new leader), a semaphore's permits \"NAME [p0]\", ..., a\n"
"      shared/exclusive lock's writer \"NAME [w]\" and readers\n"
"      \"NAME [r...]\"; not a fair lock's waiters, nor the kind marker.\n"
"      --initial first prints each NAME's state: held (a line per live\n"
"      row) or free. A change is printed within --interval (default 1s,\n"
"      at least 50ms; one query per interval for all the names) and a\n"
"      round trip after it happened; on PostgreSQL a release at once\n"
"      (LISTEN; not a forced release). A hold that begins and ends\n"
"      within one interval is not seen. --json prints one object per\n"
"      line: {time, name, watched, change, token, old_token, holder,\n"
"      expires_at_ms, seen_at_ms, lag_ms}. Exit 0 after --count N\n"
"      changes, after --timeout, or on SIGINT or SIGTERM; a lost\n"
"      connection is said once and tried again at every interval.\n",
"  run NAME [--also NAME2... | --permits N] [--ttl DUR] [--wait DUR | --skip]\n"
"      [--holder TEXT] [--busy-exit CODE] [--signal SIG] [--kill-after DUR]\n"
"      [--renew-every DUR] [--hold-at-least DUR] [--release-timeout DUR]\n"
"      [--quiet | --verbose] [--no-history] [--export-db]\n"
"      [--shared | --exclusive] [--leader] [--fair] [--max-runtime DUR]\n"
"      [--once-per DUR | --once-per-cron EXPR] [--retry-failed]\n"
"      [--slot-done-exit CODE] [--metrics-file PATH] -- CMD [ARGS...]\n"
"      Run CMD while holding the lease on NAME. CMD gets SQLLOCK_NAME,\n"
"      SQLLOCK_OWNER and SQLLOCK_TOKEN in its environment, and not\n"
"      SQLLOCK_DB or SQLLOCK_DB_FILE: the database's URL may hold a\n"
"      password. With --export-db, CMD gets the database sqllock used\n"
"      instead, as SQLLOCK_DB=URL (from --db or $SQLLOCK_DB) or\n"
"      SQLLOCK_DB_FILE=PATH (from --db-file or $SQLLOCK_DB_FILE).\n"
"      With --also (up to 63 times), CMD runs holding NAME and every\n"
"      NAME2, taken all or none in one transaction, in byte order of the\n"
"      names (two such runs never deadlock), each with its own token:\n"
"      SQLLOCK_NAME and SQLLOCK_TOKEN are NAME's, SQLLOCK_NAMES lists\n"
"      the names one per line (NAME first, then the --also names in\n"
"      order) and SQLLOCK_TOKENS their tokens in that order, separated\n"
"      by spaces. Every lease is renewed; losing any one is losing the\n"
"      lock. Not with --hold-at-least.\n"
"      With --shared, CMD runs holding a shared (read) hold of NAME's\n"
"      shared/exclusive lock: many --shared runs at once, none while an\n"
"      --exclusive run holds it; an --exclusive run waits for the shared\n"
"      runs inside, and no new one starts meanwhile (writer preference).\n"
"      Each hold has its own lease and token; SQLLOCK_NAME is NAME. One\n"
"      name, one kind: once NAME has been a shared/exclusive lock, a run\n"
"      without either flag (the plain lease on NAME) exits 78 saying so,\n"
"      and a --shared or --exclusive run exits 78 while NAME is held as a\n"
"      plain lease (likewise --permits and --leader). Not with --also or\n"
"      --hold-at-least; --shared runs are not in NAME's history.\n"
"      With --permits N, NAME is a semaphore of N permits: CMD runs\n"
"      holding one of them, a lease of its own (renewed, watched and\n"
"      released as NAME's lease would be), so that at most N such runs\n"
"      run at once; SQLLOCK_PERMIT (0..N-1) says which, SQLLOCK_TOKEN is\n"
"      the permit's token. Runs that give a lower N than others take\n"
"      only permits below it. Not with --also or --hold-at-least.\n"
"      While it runs, a thread of sqllock renews the lease every ttl/3\n"
"      (or every --renew-every, which must be shorter than the ttl minus\n"
"      ttl/10). The ttl is " CLI_RUN_TTL_DEFAULT " without --ttl: a shorter one frees\n"
"      the lock sooner after sqllock dies, and costs more renewals.\n"
"      Behind pooler=session or pooler=pgpool it renews on the run's own\n"
"      connection (one server connection per run, not two), and with\n"
"      --wait a connect the pool cannot serve yet is tried again until\n"
"      the wait ends.\n"
"      If the lock is held elsewhere, CMD does not run and the exit code\n"
"      is 75 (or CODE): at once with --skip (the default), or once\n"
"      --wait has run out (a release wakes the wait early). The message\n"
"      names the holder and the time it has left; --quiet leaves it out\n"
"      (errors are still printed). --verbose prints a line, with the\n"
"      time, for each event: acquired (and the token), started, renewal\n"
"      failing, renewed late, lost, exited, released; and the\n"
"      library's own events (its log hook): a connection made again\n"
"      after one was lost, a pooler or setting refused.\n"
"      When CMD ends, what it left running gets --signal, then SIGKILL\n"
"      after --kill-after; then the lease is released and the exit code\n"
"      is CMD's. With --hold-at-least DUR, if CMD ends sooner than DUR\n"
"      after the grant, the lease stays held until then (it is set to\n"
"      expire then, not released): the job runs at most once per DUR,\n"
"      whichever hosts try. Each run is noted in NAME's history (see\n"
"      history) unless --no-history.\n"
"      When the database cannot be reached as CMD ends (a restart, a\n"
"      failover, a pooler restart), the release, the history record and\n"
"      --hold-at-least's renewal are tried again on fresh connections,\n"
"      every half second at most, for up to --release-timeout (default\n"
"      60s; the release no longer than the lease's own time, after\n"
"      which it expires by itself); sqllock says once that it is trying\n"
"      again, and how it ended.\n"
"      With --leader, NAME is an election: sqllock campaigns for its\n"
"      leadership (the lease on the row NAME [leader], which every\n"
"      sqllock_leader of NAME campaigns for too), waiting for it until\n"
"      elected (unless --wait or --skip), and runs CMD only while leader;\n"
"      SQLLOCK_TOKEN is the term. When CMD ends, or SIGTERM or SIGINT\n"
"      stops it, the release hands the leadership over at once. After a\n"
"      loss it exits 76 without campaigning again (a service manager\n"
"      restarts it). No history is noted. Not with --also or\n"
"      --hold-at-least.\n"
"      With --fair, waiting runs queue in the database and are served\n"
"      in the order they started waiting (the oldest live one first; one\n"
"      that dies leaves the queue within its ttl); while any is queued a\n"
"      --skip run finds the lock busy. Not with --also.\n"
"      If the lease is lost while CMD runs (a renewal finds another\n"
"      owner, or none succeeds before the lease's time runs out), CMD\n"
"      gets SIGTERM (or --signal), then SIGKILL after --kill-after\n"
"      (default 10s; 0: at once) if it is still running. The exit code\n"
"      is 76 whenever the lease was not held from the grant until CMD\n"
"      ended -- also when sqllock itself was stopped past the lease's\n"
"      time, or its release finds the lease taken over -- whatever CMD\n"
"      returned.\n",
"      The lease's ttl is no limit on how long CMD runs: the lease is\n"
"      renewed for as long as CMD runs. --max-runtime DUR is one: when\n"
"      CMD has run DUR (from its start, on a clock that counts the time\n"
"      the host was suspended), it gets --signal, then SIGKILL after\n"
"      --kill-after, as after a loss, whatever the lease does; sqllock\n"
"      says it ran longer than --max-runtime and exits 124 (76 if the\n"
"      lease was lost too), and NAME's history says \"timeout\".\n"
"      With --once-per DUR (slots [k*DUR, (k+1)*DUR) of Unix time, UTC)\n"
"      or --once-per-cron EXPR (five fields, \"M H DOM MON DOW\": numbers,\n"
"      ranges a-b, steps */n and a-b/n, lists a,b, *; or @hourly,\n"
"      @daily, @weekly, @monthly, @yearly; a slot runs from one minute it\n"
"      matches to the next, in this host's time zone, TZ honoured), CMD\n"
"      runs at most once per slot, whichever hosts try: holding the\n"
"      lease, sqllock reads NAME's slot record and notes \"running\" for\n"
"      its slot with a compare-and-set before CMD starts, then how it\n"
"      ended (ok, failed, timeout, lost). The slot is the one sqllock\n"
"      started in, by this host's clock, as cron fires by it: the hosts'\n"
"      clocks must agree to far less than a slot. When the slot, or a\n"
"      later one, had its run, CMD does not run: sqllock says so (\"NAME:\n"
"      already ran in the slot starting TIME (on WHO, exit N)\"; not with\n"
"      --quiet) and exits 0, or --slot-done-exit CODE. A run that did\n"
"      not end ok (failed, timeout, lost, or still \"running\": its runner\n"
"      died) is not run again in its slot, unless --retry-failed. WHO is\n"
"      --holder, or user@host. Not with --leader, --shared, --exclusive\n"
"      or --permits. history shows the slot.\n"
"      With --metrics-file PATH, whatever the outcome, PATH gets the\n"
"      run's metrics for node_exporter's textfile collector, in the\n"
"      Prometheus text format, each with name=\"NAME\": start, end, wait\n"
"      for the lock and duration of CMD in seconds, the exit code, and\n"
"      the outcome (ran, busy, skipped_slot, lost, timeout, error). PATH\n"
"      is replaced whole (written as PATH.tmp.PID, then renamed). Give\n"
"      each job a file of its own (JOB.prom): one shared keeps only the\n"
"      last run's.\n"
"      CMD is started by a guard, a small process of sqllock's: if\n"
"      sqllock dies (kill -9, the OOM killer), the guard kills CMD and\n"
"      everything CMD started at once; if sqllock is stopped past the\n"
"      lease's time, the guard stops CMD as if the lease were lost.\n"
"      SIGINT, SIGTERM and SIGHUP sent to sqllock are passed on to CMD.\n"
"      CMD runs in a process group of its own, and all these signals go\n"
"      to the whole group, so that its children stop too. In the\n"
"      foreground of a terminal, CMD joins sqllock's group instead, so\n"
"      that it can use the terminal; the signals then go to CMD alone,\n"
"      and those the terminal sends reach CMD directly (they are not\n"
"      passed on twice).\n"
"      \"--\" may be left out when CMD does not start with '-'.\n",
"  reap [--older-than DUR] [--batch N]\n"
"      Delete the lease rows that expired more than DUR ago (default 0:\n"
"      every expired row) by the database's clock, at most N rows per\n"
"      statement (default 1000), and print how many were deleted. Live\n"
"      leases are never touched; several hosts may run it at once. For\n"
"      cron, e.g. every five minutes with --older-than 1h.\n"
"  metrics\n"
"      Print the lock tables as the database sees them, in the\n"
"      OpenMetrics text format (Prometheus): live holds by kind (lease,\n"
"      shared, exclusive, semaphore, leader, fair_waiter), queued fair\n"
"      waiters, expired rows not yet reaped, the age of the oldest holds\n"
"      (the 10 names held longest), and for each name with a history (500\n"
"      at most) its failed runs among the kept ones, its last run's end\n"
"      and exit code and its forced releases; for each name run with\n"
"      --once-per (500 at most), its last slot run, that run's state and\n"
"      exit code, and the slots missed since. Every metric is a gauge\n"
"      named sqllock_db_*. For node_exporter's textfile collector, e.g.\n"
"      every minute from cron:\n"
"        f=/var/lib/node_exporter/sqllock.prom\n"
"        sqllock metrics > $f.$$ && mv $f.$$ $f\n"
"      On a failure it prints nothing on stdout and exits 69, so that the\n"
"      mv keeps the last good file (alert on its age,\n"
"      node_textfile_mtime_seconds). Each run reads the whole lease table\n"
"      once.\n"
"  demo [--workers N] [--stock N] [--db URL | --db-file PATH]\n"
"      Show the classic oversell race: worker processes (default 8)\n"
"      sell a stock of items (default 20) with no lock, with a lease\n"
"      lock, with a row lock (SELECT ... FOR UPDATE in a transaction),\n"
"      with optimistic versioned writes (conflicts retried) and with one\n"
"      conditional UPDATE per purchase; a table shows what each sold.\n"
"      Uses a fresh temporary SQLite file (removed at the end)\n"
"      unless --db or --db-file names a database (SQLite, PostgreSQL or\n"
"      MySQL), in which it creates tables demo_stock and demo_sale,\n"
"      marked as its own by a column made_by_sqllock_demo, and drops them\n"
"      at the end; a table of either name without that column is never\n"
"      touched (the demo stops). $SQLLOCK_DB, $SQLLOCK_DB_FILE and the\n"
"      file of --local are never used.\n"
"      Exit code 1 if any mode but \"no lock\" sold anything but the\n"
"      stock.\n"
"\n",
"Options:\n"
"  --db URL          the database, before or after the command (see below)\n"
"  --db-file PATH    the database: the first line of the file PATH\n"
"  --local           the database: a file of this host, for a lock that\n"
"                    keeps out only this host's processes (see below)\n"
"  --ttl DUR         how long a lease lasts after each acquire or renewal\n"
"                    (acquire: required; run: default " CLI_RUN_TTL_DEFAULT ")\n"
"  --wait DUR        how long to wait for a busy lock (default 0: try once)\n"
"  --holder TEXT     who holds the lock, shown by `list` (default host:pid)\n"
"  --owner ID        the owner id that `acquire` printed\n"
"  --token N         the fencing token that `acquire` printed\n"
"  --also NAME2      run: hold NAME2 too, taken with NAME all or none\n"
"  --shared          run: a shared (read) hold of NAME's shared/exclusive lock\n"
"  --exclusive       run: the exclusive (write) hold of that lock\n"
"  --permits N       run: NAME is a semaphore of N permits (1 to 1000)\n"
"  --busy-exit CODE  run: the exit code when the lock is busy (default 75)\n"
"  --skip            run: try the lock once (the default; not with --wait)\n"
"  --signal SIG      run: sent to CMD when the lease is lost (default TERM;\n"
"                    TERM, INT, HUP, QUIT, USR1, USR2, KILL, ... or a number)\n"
"  --kill-after DUR  run: SIGKILL follows --signal after DUR (default 10s)\n"
"  --renew-every DUR run: the time between renewals (default ttl/3)\n"
"  --hold-at-least DUR\n"
"                    run: keep the lock until DUR after the grant\n"
"  --release-timeout DUR\n"
"                    run: how long to try the release again while the\n"
"                    database cannot be reached (default 60s)\n"
"  --quiet           run, acquire: no message when the lock is busy\n"
"  --verbose         run: a line, with the time, for each event\n"
"  --no-history      run: do not note the run in NAME's history\n"
"  --export-db       run: CMD gets SQLLOCK_DB or SQLLOCK_DB_FILE\n"
"  --leader          run: campaign for the leadership of NAME, run CMD\n"
"                    while leader\n"
"  --fair            run: wait in a first-come-first-served queue\n"
"  --max-runtime DUR run: stop CMD when it has run DUR (exit 124)\n"
"  --once-per DUR    run: run CMD at most once per slot of DUR\n"
"  --once-per-cron EXPR\n"
"                    run: at most once per slot of a cron expression\n"
"  --retry-failed    run: run again a slot whose run did not end ok\n"
"  --slot-done-exit CODE\n"
"                    run: the exit code when the slot had its run\n"
"                    (default 0)\n"
"  --metrics-file PATH\n"
"                    run: write the run's metrics to PATH (Prometheus)\n"
"  --older-than DUR  reap: only leases expired longer ago (default 0)\n"
"  --batch N         reap: rows per DELETE statement (default 1000)\n"
"  --json            list, show, history, watch: print JSON\n"
"  --interval DUR    watch: the time between looks (default 1s)\n"
"  --count N         watch: exit after N changes\n"
"  --timeout DUR     watch: exit after DUR\n"
"  --initial         watch: print each NAME's state first\n"
"  --clear           history: delete the runs (forced releases stay)\n"
"  --clear-all       history: delete the forced releases too\n"
"  --workers N, --stock N\n"
"                    demo: the number of worker processes and items\n"
"  -h, --help        print this help (after COMMAND: that command's part)\n"
"  -V, --version     print the library's version\n"
"\n"
"  DUR is a number with a unit, ms, s, m, h or d, or several of them,\n"
"  largest first: \"500ms\", \"30s\", \"1m30s\", \"1.5h\", \"2d12h\"; a bare\n"
"  whole number is seconds. Only the last number may have a fraction,\n"
"  and the total must be a whole number of milliseconds, at most\n"
"  " CLI_DURATION_MAX_TEXT ". Options that take a value accept\n"
"  \"--opt VALUE\" and \"--opt=VALUE\"; \"--\" ends the options.\n"
"\n",
"Database:\n"
"  The URL is the first of: --db URL; --db-file PATH (the first line of\n"
"  the file that is not blank); --local; $" CLI_DB_ENV "; $" CLI_DB_FILE_ENV " (a\n"
"  file, as --db-file). Two of --db, --db-file and --local together are\n"
"  an error. With none of the five, every command but demo refuses to\n"
"  run (exit 64): cron and systemd start jobs without the variables of\n"
"  your shell, and a lock in a file of each host would let every host\n"
"  run the job. --local asks for such a lock by name: it keeps out only\n"
"  the processes of this host, in " CLI_DEFAULT_DB_URL ", whose\n"
"  tables sqllock creates by itself. For any other URL, run `sqllock\n"
"  init` once first; until then lock commands fail and say so.\n"
"  URLs look like sqlite:///abs/path.db, sqlite:rel/path.db,\n"
"  postgres://user:pass@host:5432/db, mysql://user:pass@host/db.\n"
"\n"
"  Passwords: every local user can read a process's arguments. sqllock\n"
"  overwrites the password of --db in its own arguments (ps shows\n"
"  user:***@host) as soon as it has read them, but until then, and in\n"
"  the shell's history, it is there to see. Put it in a file of mode\n"
"  0600 (--db-file, $" CLI_DB_FILE_ENV "), in $" CLI_DB_ENV ", or for PostgreSQL in\n"
"  ~/.pgpass or a service file (a URL without a password uses them).\n"
"  A file that its group or others may read is refused (exit 64; chmod\n"
"  600 it), and so is one whose line is not a URL (what it holds is\n"
"  never shown). Messages never show a password.\n"
"\n"
"Exit status:\n"
"    0  success\n"
"   64  usage error: bad option, missing argument, bad duration or name,\n"
"       a malformed database URL or an unknown scheme, a --db-file that\n"
"       is not a URL or that others may read\n"
"   69  database or system error (cannot connect, no schema, ...)\n"
"   75  the lock is held elsewhere (busy, or --wait ran out; release:\n"
"       by another owner)\n"
"   76  the lease was lost (release or renewal found another owner;\n"
"       run: the lease was not held all the while CMD ran)\n"
"   78  NAME is another kind of lock: a plain lease on a name used by\n"
"       --shared, --exclusive, --permits or --leader, one of those on a\n"
"       name held as a plain lease, or two of them on one name; the\n"
"       message names the kind in use\n"
"  124  run: CMD ran longer than --max-runtime and was stopped\n"
"  run: otherwise CMD's own exit status, 128+N if CMD was killed by\n"
"       signal N, 126 if CMD could not be executed, 127 if not found.\n"
"  demo: 1 if a mode other than \"no lock\" oversold or undersold.\n"
};

/* The command whose --help this is, or NULL for the whole help. */
static const char *help_cmd;

void cli_help_command(const char *cmd)
{
    help_cmd = cmd;
}

/* The help as one text, in buf[size]; its length, or 0 if it does not
 * fit. */
static size_t help_join(char *buf, size_t size)
{
    size_t i, n = 0, len;

    for (i = 0; i < sizeof help_text / sizeof *help_text; i++) {
        len = strlen(help_text[i]);
        if (n + len >= size)
            return 0;
        memcpy(buf + n, help_text[i], len);
        n += len;
    }
    buf[n] = '\0';
    return n;
}

/* The line at p, without its '\n': its length. */
static size_t line_len(const char *p)
{
    return strcspn(p, "\n");
}

/* The next line after the one at p, or NULL at the end. */
static const char *next_line(const char *p)
{
    p += line_len(p);
    return *p == '\n' ? p + 1 : NULL;
}

/* The line at p starts with `heading` at column 0 ("Options:"). */
static int is_heading(const char *p, const char *heading)
{
    size_t n = strlen(heading);

    return strncmp(p, heading, n) == 0 && (p[n] == '\n' || p[n] == '\0');
}

/* The line at p is an item of its section: two spaces and a word. */
static int is_item(const char *p)
{
    return p[0] == ' ' && p[1] == ' ' && p[2] != ' ' && p[2] != '\n' &&
           p[2] != '\0';
}

/* 1 when the option named by the item at p (its first word, "--ttl",
 * or "-h, --help") is one that the text [b, e) mentions, or one that
 * every command takes. */
static int option_named(const char *p, const char *b, const char *e)
{
    static const char *const always[] = {
        "--db", "--db-file", "--local", "-h,", NULL
    };
    size_t n = strcspn(p + 2, " \n"), i;
    const char *q;

    for (i = 0; always[i] != NULL; i++)
        if (strlen(always[i]) == n && strncmp(p + 2, always[i], n) == 0)
            return 1;
    for (q = b; q + n <= e; q++)
        if (strncmp(q, p + 2, n) == 0 &&
            (q + n == e || strchr(" ,.;:)]=\n", q[n]) != NULL) &&
            (q == b || strchr(" [(|", q[-1]) != NULL))
            return 1;
    return 0;
}

/* Prints the part of the help `text` that is about command `cmd`: its
 * items under Commands (release has two), the items under Options that
 * they name, and where the rest is. Returns 0 when the help has no item
 * for `cmd`. */
static int print_command(const char *text, const char *cmd)
{
    const char *p, *b = NULL, *e = NULL, *sec = NULL;
    size_t n = strlen(cmd);

    /* The items of `cmd`: "  run NAME ..." and the lines under it, up to
     * the next item or the end of the section. */
    for (p = text; p != NULL; p = next_line(p)) {
        if (is_heading(p, "Commands:")) {
            sec = p;
            continue;
        }
        if (sec == NULL)
            continue;
        if (p[0] != ' ' && p[0] != '\n')
            break;              /* the next heading */
        if (is_item(p)) {
            int mine = strncmp(p + 2, cmd, n) == 0 &&
                       (p[2 + n] == ' ' || p[2 + n] == '\n');

            if (mine && b == NULL)
                b = p;
            if (!mine && b != NULL && e == NULL)
                e = p;
        }
        if (p[0] == '\n' && b != NULL && e == NULL)
            e = p;
    }
    if (b == NULL)
        return 0;
    if (e == NULL)
        e = b + strlen(b);
    printf("usage: sqllock [--db URL | --db-file PATH | --local] %s ...\n"
           "\n", cmd);
    fwrite(b, 1, (size_t)(e - b), stdout);
    /* The options those items name, each with its lines. */
    for (p = text, sec = NULL; p != NULL; p = next_line(p)) {
        if (is_heading(p, "Options:")) {
            sec = p;
            fputs("\nOptions:\n", stdout);
            continue;
        }
        if (sec == NULL)
            continue;
        if (p[0] == '\n')
            break;
        if (is_item(p) && p[2] == '-' && option_named(p, b, e)) {
            const char *q = p;

            do {
                fwrite(q, 1, line_len(q) + 1, stdout);
                q = next_line(q);
            } while (q != NULL && strncmp(q, "     ", 5) == 0);
        }
    }
    printf("\nDurations (DUR), the database URL, passwords and exit "
           "status: sqllock --help.\n");
    return 1;
}

int cli_help(void)
{
    static char text[32768];
    size_t i;

    if (help_cmd != NULL && help_join(text, sizeof text) > 0 &&
        print_command(text, help_cmd))
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_DB;
    for (i = 0; i < sizeof help_text / sizeof *help_text; i++)
        fputs(help_text[i], stdout);
    return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_DB;
}
