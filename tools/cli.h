/*
 * cli.h -- declarations shared by the files of the `sqllock` command-line
 * tool: its exit codes, its option parser and value parsers (args.c),
 * the help (help.c), error printing and exit codes (cli.c), its database
 * helpers (dburl.c) and the entry points of the subcommands, each in a
 * file of its own (lock.c, list.c, run.c, reap.c, ops.c, demo_cmd.c);
 * sqllock.c has main() alone and nothing calls into it. The tool uses
 * only the library's public header. Not installed; nothing here is part
 * of the library's API.
 */
#ifndef SQLLOCK_CLI_H
#define SQLLOCK_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "sqllock.h"

/* The tool's exit codes, in one place. The numbers 64, 69, 75, 76 and 78
 * are the BSD sysexits.h values for the same meanings; 126 and 127 are what a
 * POSIX shell returns when a command cannot be executed or is not found. */
#define CLI_EXIT_OK 0
#define CLI_EXIT_FAIL 1        /* the demo saw a lock failure (its own
                                  DEMO_EXIT_FAIL, examples/demo/demo.h) */
#define CLI_EXIT_USAGE 64      /* bad option, argument, duration or name */
#define CLI_EXIT_DB 69         /* the database (or the system) failed */
#define CLI_EXIT_BUSY 75       /* the lock is held elsewhere */
#define CLI_EXIT_LOST 76       /* the lease was lost */
#define CLI_EXIT_KIND 78       /* the name is another kind of lock
                                  (SQLLOCK_EKIND, contract N1): a
                                  configuration to fix, EX_CONFIG */
#define CLI_EXIT_TIMEOUT 124   /* run: the command ran past --max-runtime
                                  (timeout(1)'s code) */
#define CLI_EXIT_NOEXEC 126    /* run: the command could not be executed */
#define CLI_EXIT_NOTFOUND 127  /* run: the command was not found */

/* The database of --local: a file of this host, for locks that need to
 * keep out only the other processes of this host (see cli_db_url()).
 * Only for this one does the tool create the schema by itself. */
#define CLI_DEFAULT_DB_FILE "/var/tmp/sqllock.db"
#define CLI_DEFAULT_DB_URL "sqlite://" CLI_DEFAULT_DB_FILE
#define CLI_DB_ENV "SQLLOCK_DB"
#define CLI_DB_FILE_ENV "SQLLOCK_DB_FILE"
/* The largest file --db-file reads: a URL with 16 hosts and every
 * parameter fits many times over. */
#define CLI_DB_FILE_MAX 16384

/* The longest duration any option takes: 100 years (36500d), which keeps
 * every deadline the tool and the library compute from it, in
 * microseconds of a monotonic clock, far from overflowing an int64
 * ("--hold-at-least 99999999999h" once wrapped around and released at
 * once). */
#define CLI_DURATION_MAX_MS INT64_C(3153600000000)
#define CLI_DURATION_MAX_TEXT "36500d (100 years)"

/* The ttl of `run` without --ttl: its watchdog renews the lease every
 * ttl/3, so a short default costs a renewal every 20 s and lets a dead
 * runner's lock go within a minute. `acquire` has no watchdog and no
 * default: its ttl is how long the lock stays held. */
#define CLI_RUN_TTL_DEFAULT "60s"

/* What every subcommand gets from main(): the values of the --db and
 * --db-file options seen before the subcommand (a later one of the same
 * option overrides it), NULL when none, and whether --local was. */
typedef struct cli_ctx {
    const char *db_opt;
    const char *db_file_opt;
    int local;
} cli_ctx;

/* One option a command accepts, by its long name without the dashes
 * ("ttl" for --ttl). An option with `value` takes an argument, given as
 * "--ttl 5s" or "--ttl=5s", stored there (a repeat overrides); one with
 * `flag` takes none and sets *flag to 1. "-h" is read as "--help" and
 * "-V" as "--version" (an error where there is no such option). An
 * option with `secret` set (--db: a URL may hold a password) stores a
 * copy of its value, and the argument itself is overwritten in place with
 * the value redacted (cli_hide_arg()), so that /proc/PID/cmdline and ps
 * no longer show the password. */
typedef struct cli_opt {
    const char *name;
    const char **value;
    int *flag;
    int secret;
} cli_opt;

/* A repeatable option (run --also): its entry has `secret` set to
 * CLI_OPT_LIST and `value` pointing to a cli_list (cast), to whose v[]
 * each value is appended, at most `max` of them (more is a usage
 * error). */
#define CLI_OPT_LIST 2
typedef struct cli_list {
    const char **v;
    int n;
    int max;
} cli_list;

/* The entries of the options that name the database, for the option
 * table of every command that opens one. */
#define CLI_OPTS_DB(ctx)                                                   \
    { "db", &(ctx).db_opt, NULL, 1 },                                      \
    { "db-file", &(ctx).db_file_opt, NULL, 0 },                            \
    { "local", NULL, &(ctx).local, 0 }

/*
 * Parses the arguments of command `cmd` against `opts` (terminated by an
 * entry with a NULL name). Up to `maxpos` positional arguments go to
 * pos[]. When `rest` is NULL, "--" makes every later argument positional
 * and a positional beyond `maxpos` is an error. When `rest` is not NULL,
 * "--", or a positional argument beyond `maxpos`, ends the parse and
 * *rest is set to the index of the first argument after the options
 * (argc when there is none). Returns CLI_EXIT_OK, or CLI_EXIT_USAGE after
 * printing what was wrong to stderr (CLI_EXIT_DB when out of memory).
 */
int cli_parse(const char *cmd, int argc, char **argv, const cli_opt *opts,
              const char **pos, int maxpos, int *npos, int *rest);

/* Prints the hint that follows a usage error to stderr; returns
 * CLI_EXIT_USAGE. */
int cli_usage(void);

/* Prints the help to stdout (help.c); returns the exit code. After
 * cli_help_command(CMD) (main() calls it before the command runs), only
 * CMD's part: its usage, its entry under Commands, the options it names
 * and where the rest is; otherwise the full help. */
int cli_help(void);
void cli_help_command(const char *cmd);

/* Copies the value `arg` of a secret option (kept until
 * cli_free_secrets()) and overwrites `arg` in place with the value as
 * sqllock_url_redact() shows it, cut to its length and NUL-padded when
 * longer; an argument with nothing to hide is left alone. Returns the
 * copy, or NULL when out of memory. */
const char *cli_hide_arg(char *arg);

/* Wipes and frees the copies cli_hide_arg() made. */
void cli_free_secrets(void);

/* Zeroes n bytes at p (a secret) in a way the compiler keeps before a
 * free() (args.c). */
void cli_wipe(void *p, size_t n);

/* Parses a duration option with sqllock_parse_duration_why(), at most
 * CLI_DURATION_MAX_MS. A NULL text leaves *ms alone. Returns CLI_EXIT_OK,
 * or CLI_EXIT_USAGE after naming the option, the bad text and what is
 * wrong with it on stderr. */
int cli_parse_duration(const char *cmd, const char *opt, const char *text,
                       int64_t *ms);

/* Parses a decimal integer option in [min, max]; the same contract. */
int cli_parse_int(const char *cmd, const char *opt, const char *text,
                  int64_t min, int64_t max, int64_t *out);

/* The exit code for a library status (cli.c): 0, 64 (EINVAL, and EURL
 * and ESCHEME: a database URL that is malformed or names no driver is
 * the caller's to fix, like a bad option), 75 (BUSY, TIMEOUT), 76 (LOST),
 * 78 (EKIND), else 69. */
int cli_exit_code(int status);

/* Prints "sqllock: <what>: <message>" to stderr, where <what> is formatted
 * like printf and <message> is sqllock_errmsg(db) (or the status's own
 * sentence without a handle), and returns cli_exit_code(status). */
int cli_db_error(const sqllock_db *db, int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* After a failed sqllock_open() of `url` with SQLLOCK_ENOTBUILT (cli.c):
 * prints to stderr which package to install for the URL's driver and how
 * to build sqllock again, so that it has the driver. */
void cli_notbuilt_hint(const char *url);

/* Prints "sqllock: <what>" to stderr; returns nothing. */
void cli_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Options shared by the commands that take a lease (acquire, run): the
 * texts as given, then the values cli_lease_args_check() parsed. */
typedef struct cli_lease_args {
    const char *ttl;
    const char *wait;
    const char *holder;
    int64_t ttl_ms;
    int64_t wait_ms;
} cli_lease_args;

/* Checks --ttl (> 0; required, but for `cmd` "run", where it is
 * CLI_RUN_TTL_DEFAULT when not given) and --wait (default 0) of `cmd`;
 * returns CLI_EXIT_OK or CLI_EXIT_USAGE after printing what was wrong. */
int cli_lease_args_check(const char *cmd, cli_lease_args *la);

/* The grace between --signal and SIGKILL when --kill-after is not given. */
#define CLI_RUN_KILL_AFTER_MS 10000

/* The options only `run` takes: the texts as given (and --skip), then the
 * values cli_run_args_check() parsed. */
typedef struct cli_run_args {
    const char *signal;
    const char *kill_after;
    const char *renew_every;
    const char *busy_exit;
    const char *hold_at_least;
    int skip;
    int quiet;
    int verbose;
    int no_history;
    int lost_signal;
    int64_t kill_after_ms;
    int64_t renew_every_ms;
    int64_t busy_exit_code;
    int64_t hold_ms;
} cli_run_args;

/* Checks the run-only options against the lease's ttl (`la` as
 * cli_lease_args_check() left it); the same contract. */
int cli_run_args_check(cli_run_args *ra, const cli_lease_args *la);

/* Parses --signal: a name with or without "SIG", in any case, or a number
 * from 1 to NSIG - 1; the same contract. */
int cli_parse_signal(const char *text, int *sig);

/* "SIGTERM" for SIGTERM, "signal 40" for one without a name in the
 * tool's table; written into buf[size], which is returned. */
const char *cli_signame(int sig, char *buf, size_t size);

/* Where the URL of the database came from. */
enum cli_db_source {
    CLI_DB_DEFAULT,            /* --local: CLI_DEFAULT_DB_URL */
    CLI_DB_OPTION,             /* --db */
    CLI_DB_FILE_OPTION,        /* --db-file */
    CLI_DB_VAR,                /* $SQLLOCK_DB */
    CLI_DB_FILE_VAR            /* $SQLLOCK_DB_FILE */
};

/* The database URL a command uses, and where it came from. */
typedef struct cli_db {
    char *url;                 /* allocated; wiped by cli_db_free() */
    int source;                /* enum cli_db_source */
    const char *file;          /* the file read, for the two FILE sources */
} cli_db;

/*
 * Finds the database URL of a command, the first of: --db, --db-file,
 * --local (CLI_DEFAULT_DB_URL), $SQLLOCK_DB, $SQLLOCK_DB_FILE (a variable
 * set but empty counts as unset). Any two of --db, --db-file and --local
 * together are a usage error, and so is none of the five: a command that
 * names no database is refused, saying how to name one, rather than
 * given a file of this host that would keep out nobody on another. A
 * file gives its first line that is not blank, without the white space
 * around it; a file that cannot be read, is larger than CLI_DB_FILE_MAX,
 * holds a NUL byte or no such line is an error (69), and so is a
 * regular file that its group or others may read (64: `chmod 600` it,
 * as libpq wants of ~/.pgpass). What the file holds is never printed.
 * Returns CLI_EXIT_OK with *db filled (free with cli_db_free()), or an
 * exit code after printing why.
 */
int cli_db_url(const cli_ctx *ctx, cli_db *db);
void cli_db_free(cli_db *db);

/* How cli_open_db() opens the database: CLI_OPEN_LOCK for a command
 * that takes locks (with --local alone, the schema is created first);
 * CLI_OPEN_READ for one that only reads (list, show, history), which
 * never creates a SQLite file that is not there, but says so. */
#define CLI_OPEN_LOCK 1
#define CLI_OPEN_READ 2

/*
 * Opens the database for a command (cli_db_url()), as `flags` says (0
 * or CLI_OPEN_*). `opts` may be NULL. `where`, when not NULL, gets the
 * URL and its source (free with cli_db_free(), also after a failure).
 * A URL that is not one (a file that holds something else: a .pgpass
 * line, a password alone) is named by the file it came from, never
 * quoted. Returns CLI_EXIT_OK with *out set, or an exit code after
 * printing why: 64 for a malformed URL or an unknown scheme.
 */
int cli_open_db(const cli_ctx *ctx, const sqllock_options *opts,
                int flags, sqllock_db **out, cli_db *where);
/* As cli_open_db(), but a connect that fails (SQLLOCK_ECONNECT: the
 * server is down, or a session pooler had no server connection to give
 * within the connect timeout) is tried again, with a pause growing to
 * 1 s, until `wait_ms` has passed: `run --wait` behind a session pool
 * waits for a slot as it waits for the lock. */
int cli_open_db_within(const cli_ctx *ctx, const sqllock_options *opts,
                       int flags, int64_t wait_ms, sqllock_db **out,
                       cli_db *where);

/* 1 when the URL's pooler= parameter (the PostgreSQL driver's,
 * docs/poolers.md) names a pooler that gives each client connection a
 * server connection for the client's whole session: `session`
 * (PgBouncer) or `pgpool` (pgpool-II). Each connection of the tool then
 * holds a slot of the pool while it lives (`run` opens one only). */
int cli_db_session_pooler(const char *url);

/* Output helpers (list.c). cli_print_cell() prints `text` padded to
 * `width` columns, control characters and bytes that are not valid UTF-8
 * as '?'; cli_print_json_string() prints it as a JSON string (invalid
 * bytes as U+FFFD); cli_format_left() writes a remaining time, "29.8s",
 * "4m05s", "2h10m", or "expired 3.2s ago" when negative. */
void cli_print_cell(const char *text, size_t width);
/* 1 if text[0..len) is valid UTF-8 without control characters (C0, DEL,
 * C1), as the library writes a lease's holder. */
int cli_text_ok(const char *text, size_t len);
void cli_print_json_string(const char *text);
void cli_format_left(char *buf, size_t size, int64_t remaining_ms);
/* A span of time: "0.4s", "29.8s", "4m05s", "2h10m" (a negative one as
 * 0); tenths are cut, not rounded, so a lease never looks longer than it
 * is. */
void cli_format_span(char *buf, size_t size, int64_t ms);

/* The run history and the operator's commands (ops.c). The history
 * record is the library's (sqllock_history_key(), sqllock_history_note(),
 * sqllock_history_clear(), sqllock_force_release()). cli_who_am_i()
 * gives "user@host" of whoever runs the tool in `me`, and in `who` the
 * same with, on a database with users, the database user it connected
 * as (SQLLOCK_HISTORY_ROLE); cli_audit_refused() is the message of an
 * audit write the database refused (tools/history.c). */
void cli_who_am_i(sqllock_db *db, char *me, size_t me_size, char *who,
                  size_t who_size);
int cli_audit_refused(sqllock_db *db, int rc, const char *what);
/* `sqllock release NAME --force`: frees a lease whatever its owner
 * (ops.c); cli_cmd_release() hands over when --force was given. */
int cli_force_release(const cli_ctx *ctx, const char *name, int force);
/* After `release NAME --owner OWNER --token TOKEN` got SQLLOCK_LOST on
 * `db` (ops.c): reads NAME's row and says what it is, returning the exit
 * code: 75 when a live lease holds NAME that is not OWNER's and not
 * newer than TOKEN (the release was refused: nothing of TOKEN's was
 * there to lose), 76 when TOKEN's lease was lost (its row is gone, or a
 * later grant holds NAME), 78 for NAME's kind marker. */
int cli_release_lost(sqllock_db *db, const char *name, const char *owner,
                     int64_t token);

/* NAME's schedule slot record (`run --once-per`) as `history` shows it
 * (slot_view.c): cli_slot_load() reads it into *v (v->found 0 when
 * there is none; a record it cannot read is a warning on stderr, and
 * its status is returned); cli_slot_print() prints it after the runs,
 * as text or (json) as the array's last element, of kind "slot" --
 * `first` says whether an element came before -- and returns the new
 * `first`. */
typedef struct cli_slot_view {
    int found;
    sqllock_slot_info info;
    char schedule[SQLLOCK_SCHEDULE_MAX + 1];
    char state[32];
    char who[SQLLOCK_HOLDER_MAX + 1];
} cli_slot_view;
int cli_slot_load(sqllock_db *db, const char *name, cli_slot_view *v);
int cli_slot_print(const cli_slot_view *v, int json, int first);

/* The subcommands that live in files of their own. Each takes the
 * arguments after its name and returns the tool's exit code. */
int cli_cmd_init(const cli_ctx *ctx, int argc, char **argv);
int cli_cmd_acquire(const cli_ctx *ctx, int argc, char **argv);
int cli_cmd_release(const cli_ctx *ctx, int argc, char **argv);
int cli_cmd_run(const cli_ctx *ctx, int argc, char **argv);
int cli_cmd_list(const cli_ctx *ctx, int argc, char **argv);
int cli_cmd_demo(const cli_ctx *ctx, int argc, char **argv);
int cli_cmd_reap(const cli_ctx *ctx, int argc, char **argv);
int cli_cmd_show(const cli_ctx *ctx, int argc, char **argv);
int cli_cmd_history(const cli_ctx *ctx, int argc, char **argv);
/* `sqllock watch` (watch.c): each change of the names' holds. */
int cli_cmd_watch(const cli_ctx *ctx, int argc, char **argv);
/* `sqllock metrics` (metrics.c): the database's view, OpenMetrics. */
int cli_cmd_metrics(const cli_ctx *ctx, int argc, char **argv);

#endif /* SQLLOCK_CLI_H */
