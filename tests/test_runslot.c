/*
 * test_runslot.c -- `sqllock run --max-runtime`, --once-per (at most one
 * run per schedule slot across hosts) and --metrics-file (issue 31),
 * with the built tool on every database URL in SQLLOCK_TEST_URLS:
 *
 *   - --max-runtime stops the command and its whole process group after
 *     its time, as a lost lease does (DESIGN X1: nothing of the job runs
 *     on), exit 124, "timeout" in the history; and 76 when the lease was
 *     lost too (X2);
 *   - two "hosts" (two runs with --holder and --wait, started together)
 *     in one slot run the command once; a third later in the slot does
 *     not; the next slot runs it again (the slot record's compare-and-set,
 *     DESIGN O1, behind NAME's lease);
 *   - a failed slot runs again only with --retry-failed, as does one
 *     whose runner died ("running" in the record); through the library,
 *     a later slot always wins, the final write names its token, and a
 *     record that is not a slot's is refused;
 *   - --metrics-file, parsed back, for a run that ran, a busy one, a
 *     skipped slot, a timeout and a usage error;
 *   - bad input: exit 64 with a message, and nothing runs (E2).
 *
 * The runs of a case that must fall in one slot of an hour wait first,
 * when the hour ends within a margin, for the next one (a state, the
 * slot, not a guessed time). The commands write their shell's pid to a
 * file first, which the test waits for.
 *
 * SQLLOCK_CLI_PATH is the built tool, passed in by tests/CMakeLists.txt.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <signal.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "tu_tool.h"

#ifndef SQLLOCK_CLI_PATH
#error "SQLLOCK_CLI_PATH must name the built sqllock tool"
#endif

/* The URL the current group runs on. */
static const char *g_url;

static int setup(void **state)
{
    tt_fixture *f = tt_setup(SQLLOCK_CLI_PATH, g_url, "runslot");

    if (f == NULL)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    tt_teardown(*state);
    return 0;
}

static int64_t wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* When the current slot of `schedule` ends within `margin_ms`, waits
 * until the next one has begun: the runs of a case then share a slot. */
static void away_from_slot_end(const char *schedule, int64_t margin_ms)
{
    int64_t start, end, now = wall_ms();

    assert_int_equal(sqllock_schedule_slot(schedule, now, &start, &end),
                     SQLLOCK_OK);
    if (end - now < margin_ms)
        tu_sleep_ms(end - now + 20);
}

/* The slot record of `name`, copied. */
typedef struct slot_rec {
    int found;
    sqllock_slot_info info;
    char schedule[SQLLOCK_SCHEDULE_MAX + 1];
    char state[32];
    char who[SQLLOCK_HOLDER_MAX + 1];
} slot_rec;

static int slot_cb(void *ctx, const sqllock_slot_info *info)
{
    slot_rec *r = ctx;

    r->found = 1;
    r->info = *info;
    snprintf(r->schedule, sizeof r->schedule, "%s", info->schedule);
    snprintf(r->state, sizeof r->state, "%s", info->state);
    snprintf(r->who, sizeof r->who, "%s", info->who);
    return 0;
}

static void slot_of(tt_fixture *f, const char *name, slot_rec *r)
{
    memset(r, 0, sizeof *r);
    EXPECT_RC(f->db, sqllock_slot_read(f->db, name, slot_cb, r), SQLLOCK_OK,
              "sqllock_slot_read");
}

/* The number of lines in the file `path` (0 when there is none). */
static int lines_in(const char *path)
{
    char buf[4096];
    size_t n = tu_read_file(path, buf, sizeof buf), i;
    int count = 0;

    for (i = 0; i < n; i++)
        count += buf[i] == '\n';
    return count;
}

/* Waits up to `ms` for `text` in the file `path`. */
static int file_says_within(const char *path, const char *text, int64_t ms)
{
    int64_t end = tu_now_ms() + ms;
    char buf[8192];

    do {
        if (tu_read_file(path, buf, sizeof buf) > 0 &&
            strstr(buf, text) != NULL)
            return 1;
        tu_sleep_ms(10);
    } while (tu_now_ms() < end);
    return 0;
}

/* ---- the metrics file ----------------------------------------------- */

/* The value of the sample `metric`{name="NAME"[,outcome="outcome"]} in
 * the text; fails the test when it is missing, or when the metric has
 * no HELP and TYPE gauge lines before it. */
static double sample(const char *text, const char *metric,
                     const char *name, const char *outcome)
{
    char want[600], help[200], type[200];
    const char *p, *h, *t;

    if (outcome != NULL)
        snprintf(want, sizeof want, "\n%s{name=\"%s\",outcome=\"%s\"} ",
                 metric, name, outcome);
    else
        snprintf(want, sizeof want, "\n%s{name=\"%s\"} ", metric, name);
    snprintf(help, sizeof help, "# HELP %s ", metric);
    snprintf(type, sizeof type, "# TYPE %s gauge\n", metric);
    p = strstr(text, want);
    h = strstr(text, help);
    t = strstr(text, type);
    if (p == NULL || h == NULL || t == NULL || h > p || t > p)
        fail_msg("no sample %s (with HELP and TYPE gauge before it) in:\n%s",
                 want + 1, text);
    return strtod(p + strlen(want), NULL);
}

/* Checks the file's outcome (1 for it, 0 for the others) and exit code,
 * that each line is a comment or a well-formed sample, and that no
 * temporary file was left beside it. */
static void expect_metrics(tt_fixture *f, const char *path, const char *name,
                           const char *outcome, int code, char *text,
                           size_t size)
{
    static const char *const outcomes[] = {
        "ran", "busy", "skipped_slot", "lost", "timeout", "error", NULL
    };
    char *line, *save = NULL, copy[8192];
    struct dirent *d;
    DIR *dir;
    int i;

    if (tu_read_file(path, text, size) == 0)
        fail_msg("no metrics file %s; stderr: %s", path, f->err);
    for (i = 0; outcomes[i] != NULL; i++) {
        double v = sample(text, "sqllock_run_last_outcome", name,
                          outcomes[i]);

        if (v != (strcmp(outcomes[i], outcome) == 0 ? 1.0 : 0.0))
            fail_msg("outcome %s is %g, the run's was %s:\n%s", outcomes[i],
                     v, outcome, text);
    }
    if (sample(text, "sqllock_run_last_exit_code", name, NULL) != code)
        fail_msg("exit code in the metrics, want %d:\n%s", code, text);
    snprintf(copy, sizeof copy, "%s", text);
    for (line = strtok_r(copy, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        const char *p = line;

        if (strncmp(line, "# HELP sqllock_run_", 19) == 0 ||
            strncmp(line, "# TYPE sqllock_run_", 19) == 0)
            continue;
        /* [a-zA-Z_:][a-zA-Z0-9_:]* then {labels} and a value. */
        if (!(isalpha((unsigned char)*p) || *p == '_' || *p == ':'))
            fail_msg("bad line in the metrics: '%s'", line);
        while (isalnum((unsigned char)*p) || *p == '_' || *p == ':')
            p++;
        if (*p != '{' || strstr(p, "} ") == NULL)
            fail_msg("bad sample line in the metrics: '%s'", line);
    }
    dir = opendir(f->dir);
    assert_non_null(dir);
    while ((d = readdir(dir)) != NULL)
        if (strstr(d->d_name, ".tmp.") != NULL)
            fail_msg("a temporary file is left: %s", d->d_name);
    closedir(dir);
}

/* ---- the cases -------------------------------------------------------- */

/* X1 (and T1's clock): --max-runtime 1s stops `sleep 60` after about a
 * second -- --signal to the whole group, the child it left behind too --
 * and the tool exits 124, "timeout" in NAME's history and in the
 * metrics; the lease is released. */
static void test_runslot_X1_max_runtime_stops_the_group(void **state)
{
    tt_fixture *f = *state;
    const char *name = tt_name(f, "maxrt");
    char started[4300], child[4300], metrics[4300], script[9000];
    char text[8192], buf[64];
    int64_t t0, took;
    pid_t cmd, kid;
    int code;
    tt_job *j;

    tt_fpath(f, started, sizeof started, "started");
    tt_fpath(f, child, sizeof child, "child");
    tt_fpath(f, metrics, sizeof metrics, "m.prom");
    snprintf(script, sizeof script, "echo $$ > '%s'; sleep 60 & echo $! > "
             "'%s'; wait", started, child);
    t0 = tu_now_ms();
    TT_START(f, j, "run", name, "--max-runtime", "1s", "--kill-after", "5s",
             "--metrics-file", metrics, "--", "sh", "-c", script);
    cmd = tt_wait_started(f, j, started);
    code = tt_finish(f, j, tu_scaled_ms(20000));
    took = tu_now_ms() - t0;
    if (code != 124)
        fail_msg("exit %d, want 124; stderr: %s", code, f->err);
    if (took < 1000 || took > tu_scaled_ms(4000))
        fail_msg("stopped after %lld ms, want about 1 s", (long long)took);
    if (strstr(f->err, "ran longer than --max-runtime 1s") == NULL)
        fail_msg("no message: %s", f->err);
    /* Nothing of the group is left: the shell, and the sleep it left
     * behind. */
    assert_true(tu_read_file(child, buf, sizeof buf) > 0);
    kid = (pid_t)strtol(buf, NULL, 10);
    assert_true(kid > 0);
    assert_false(tt_pid_alive(cmd));
    assert_false(tt_pid_alive(kid));
    assert_int_equal(kill(-cmd, 0), -1);
    assert_int_equal(errno, ESRCH);
    tt_expect_no_row(f, name);
    TT_EXPECT_EXIT(f, 0, "history", name, "--json");
    if (strstr(f->out, "\"exit\": 124, \"status\": \"timeout\"") == NULL)
        fail_msg("the history does not say timeout: %s", f->out);
    expect_metrics(f, metrics, name, "timeout", 124, text, sizeof text);
    if (sample(text, "sqllock_run_last_duration_seconds", name, NULL) < 1.0)
        fail_msg("duration below the second it ran:\n%s", text);
}

/* X2: a command that ignores --signal after --max-runtime, and whose
 * lease is then taken over, makes the tool exit 76, not 124: the lease
 * was not held all the while it ran. (The test ends the command once
 * the loss is noticed; --kill-after would, much later.) */
static void test_runslot_X2_lost_wins_over_timeout(void **state)
{
    tt_fixture *f = *state;
    const char *name = tt_name(f, "maxrt-lost");
    char started[4300], script[9000];
    sqllock_lease *thief;
    pid_t cmd;
    int code;
    tt_job *j;

    tt_fpath(f, started, sizeof started, "started");
    snprintf(script, sizeof script, "trap '' TERM; echo $$ > '%s'; "
             "while :; do sleep 0.05; done", started);
    TT_START(f, j, "run", name, "--ttl", "1500ms", "--max-runtime", "300ms",
             "--kill-after", "60s", "--", "sh", "-c", script);
    cmd = tt_wait_started(f, j, started);
    if (!file_says_within(j->err, "ran longer than --max-runtime",
                          tu_scaled_ms(10000)))
        fail_msg("no timeout within 10 s");
    /* The lease taken over: the next renewal finds it lost. */
    tt_delete_row(f, name);
    thief = tt_lease_for(f, name, 30000);
    EXPECT_RC(f->db, sqllock_lease_acquire(thief, 0), SQLLOCK_OK, "acquire");
    if (!file_says_within(j->err, " lost (noticed at", tu_scaled_ms(10000)))
        fail_msg("the loss was not noticed within 10 s");
    kill(-cmd, SIGKILL);
    code = tt_finish(f, j, tu_scaled_ms(20000));
    if (code != 76)
        fail_msg("exit %d, want 76; stderr: %s", code, f->err);
    EXPECT_RC(f->db, sqllock_lease_release(thief), SQLLOCK_OK, "release");
}

/* O1 behind the lease: two hosts (--holder host-a, host-b) run NAME
 * --once-per 1h --wait, started together: the command runs once, the
 * other says the slot already ran and exits 0. A third run later in
 * the slot runs nothing either (exit 0, --slot-done-exit's code, or
 * nothing said with --quiet). The record and `history` say who ran it. */
static void test_runslot_O1_two_hosts_one_slot(void **state)
{
    tt_fixture *f = *state;
    const char *name = tt_name(f, "twohosts");
    char counter[4300], script[9000], err_a[16384], buf[64];
    int64_t slot;
    slot_rec r;
    tt_job *a, *b;
    int ca, cb;

    tt_fpath(f, counter, sizeof counter, "counter");
    snprintf(script, sizeof script, "n=$(cat '%s' 2>/dev/null || echo 0); "
             "echo $((n + 1)) > '%s'; sleep 0.2", counter, counter);
    away_from_slot_end("1h", tu_scaled_ms(20000));
    assert_int_equal(sqllock_schedule_slot("1h", wall_ms(), &slot, NULL),
                     SQLLOCK_OK);
    TT_START(f, a, "run", name, "--once-per", "1h", "--wait", "20s",
             "--holder", "host-a", "--", "sh", "-c", script);
    TT_START(f, b, "run", name, "--once-per", "1h", "--wait", "20s",
             "--holder", "host-b", "--", "sh", "-c", script);
    ca = tt_finish(f, a, tu_scaled_ms(30000));
    memcpy(err_a, f->err, sizeof err_a);
    cb = tt_finish(f, b, tu_scaled_ms(30000));
    if (ca != 0 || cb != 0)
        fail_msg("exits %d and %d, want 0 and 0; stderr: %s / %s", ca, cb,
                 err_a, f->err);
    assert_true(tu_read_file(counter, buf, sizeof buf) > 0);
    if (atoi(buf) != 1)
        fail_msg("the command ran %d times in one slot", atoi(buf));
    if (strstr(err_a, "already ran in the slot starting") == NULL &&
        strstr(f->err, "already ran in the slot starting") == NULL)
        fail_msg("neither says the slot already ran: %s / %s", err_a,
                 f->err);
    slot_of(f, name, &r);
    assert_string_equal(r.state, "ok");
    assert_string_equal(r.schedule, "1h");
    assert_int_equal(r.info.slot_ms, slot);
    assert_int_equal(r.info.prev_slot_ms, 0);
    assert_int_equal(r.info.exit_code, 0);
    assert_true(strcmp(r.who, "host-a") == 0 || strcmp(r.who, "host-b") == 0);
    assert_true(r.info.end_ms >= r.info.start_ms && r.info.start_ms > 0);

    /* Later in the slot. */
    TT_EXPECT_EXIT(f, 0, "run", name, "--once-per", "1h", "--", "sh", "-c",
                   script);
    assert_non_null(strstr(f->err, "already ran in the slot starting"));
    assert_non_null(strstr(f->err, r.who));
    TT_EXPECT_EXIT(f, 0, "run", name, "--once-per", "1h", "--quiet", "--",
                   "sh", "-c", script);
    assert_string_equal(f->err, "");
    TT_EXPECT_EXIT(f, 3, "run", name, "--once-per", "1h", "--slot-done-exit",
                   "3", "--", "sh", "-c", script);
    assert_true(tu_read_file(counter, buf, sizeof buf) > 0);
    assert_int_equal(atoi(buf), 1);
    tt_expect_no_row(f, name);
    TT_EXPECT_EXIT(f, 0, "history", name);
    if (strstr(f->out, "SLOT (schedule 1h") == NULL ||
        strstr(f->out, r.who) == NULL)
        fail_msg("history does not show the slot: %s", f->out);
}

/* O1: --once-per 2s; once the slot has changed (waited for by the
 * clock's slot, not a guessed sleep), the command runs again, and the
 * record keeps the slot before it, from which history counts the slots
 * missed in between. */
static void test_runslot_O1_next_slot_runs_again(void **state)
{
    tt_fixture *f = *state;
    const char *name = tt_name(f, "nextslot");
    char ran[4300], script[9000], want[200];
    int64_t s1, now_slot, end;
    slot_rec r;

    tt_fpath(f, ran, sizeof ran, "ran");
    snprintf(script, sizeof script, "echo x >> '%s'", ran);
    TT_EXPECT_EXIT(f, 0, "run", name, "--once-per", "2s", "--", "sh", "-c",
                   script);
    assert_int_equal(lines_in(ran), 1);
    slot_of(f, name, &r);
    s1 = r.info.slot_ms;
    assert_int_equal(s1 % 2000, 0);
    end = tu_now_ms() + tu_scaled_ms(10000);
    do {
        tu_sleep_ms(10);
        assert_int_equal(sqllock_schedule_slot("2s", wall_ms(), &now_slot,
                                               NULL), SQLLOCK_OK);
    } while (now_slot == s1 && tu_now_ms() < end);
    assert_true(now_slot > s1);
    TT_EXPECT_EXIT(f, 0, "run", name, "--once-per", "2s", "--", "sh", "-c",
                   script);
    assert_int_equal(lines_in(ran), 2);
    slot_of(f, name, &r);
    assert_true(r.info.slot_ms > s1);
    assert_int_equal(r.info.prev_slot_ms, s1);
    TT_EXPECT_EXIT(f, 0, "history", name, "--json");
    snprintf(want, sizeof want, "\"missed_before\": %lld,",
             (long long)((r.info.slot_ms - s1) / 2000 - 1));
    if (strstr(f->out, "\"kind\": \"slot\"") == NULL ||
        strstr(f->out, want) == NULL)
        fail_msg("history --json does not say %s: %s", want, f->out);
}

/* A failed slot (exit 3) is not run again by a later firing in the
 * slot -- at most once -- unless --retry-failed; a slot that ended ok
 * never. A slot still "running" in the record (its runner died; the
 * tool holds the lease) likewise. */
static void test_runslot_O1_retry_failed(void **state)
{
    tt_fixture *f = *state;
    const char *name = tt_name(f, "retry"), *dead = tt_name(f, "dead");
    sqllock_slot_options so = SQLLOCK_SLOT_OPTIONS_INIT;
    char ran[4300], script[9000], fail[9000], metrics[4300], text[8192];
    slot_rec r;

    tt_fpath(f, ran, sizeof ran, "ran");
    tt_fpath(f, metrics, sizeof metrics, "m.prom");
    snprintf(script, sizeof script, "echo x >> '%s'", ran);
    snprintf(fail, sizeof fail, "echo x >> '%s'; exit 3", ran);
    away_from_slot_end("1h", tu_scaled_ms(20000));
    TT_EXPECT_EXIT(f, 3, "run", name, "--once-per", "1h", "--", "sh", "-c",
                   fail);
    slot_of(f, name, &r);
    assert_string_equal(r.state, "failed");
    assert_int_equal(r.info.exit_code, 3);
    TT_EXPECT_EXIT(f, 0, "run", name, "--once-per", "1h", "--metrics-file",
                   metrics, "--", "sh", "-c", script);
    assert_int_equal(lines_in(ran), 1);
    assert_non_null(strstr(f->err, "failed, exit 3"));
    assert_non_null(strstr(f->err, "--retry-failed"));
    expect_metrics(f, metrics, name, "skipped_slot", 0, text, sizeof text);
    TT_EXPECT_EXIT(f, 0, "run", name, "--once-per", "1h", "--retry-failed",
                   "--", "sh", "-c", script);
    assert_int_equal(lines_in(ran), 2);
    slot_of(f, name, &r);
    assert_string_equal(r.state, "ok");
    assert_int_equal(r.info.prev_slot_ms, 0);
    TT_EXPECT_EXIT(f, 0, "run", name, "--once-per", "1h", "--retry-failed",
                   "--", "sh", "-c", script);
    assert_int_equal(lines_in(ran), 2);

    /* A runner that died: its claim says "running". */
    so.schedule = "1h";
    assert_int_equal(sqllock_schedule_slot("1h", wall_ms(), &so.slot_ms,
                                           NULL), SQLLOCK_OK);
    so.token = 1;
    so.who = "dead-host";
    EXPECT_RC(f->db, sqllock_slot_claim(f->db, dead, &so, NULL, NULL),
              SQLLOCK_OK, "sqllock_slot_claim");
    TT_EXPECT_EXIT(f, 0, "run", dead, "--once-per", "1h", "--", "sh", "-c",
                   script);
    assert_int_equal(lines_in(ran), 2);
    assert_non_null(strstr(f->err, "did not end"));
    TT_EXPECT_EXIT(f, 0, "run", dead, "--once-per", "1h", "--retry-failed",
                   "--", "sh", "-c", script);
    assert_int_equal(lines_in(ran), 3);
    slot_of(f, dead, &r);
    assert_string_equal(r.state, "ok");
    assert_true(r.info.token != 1);
}

/* Counts the slot records sqllock_record_list() shows under the prefix,
 * parsed back with sqllock_slot_parse(). */
typedef struct list_ctx {
    const char *key;
    int seen;
    slot_rec r;
} list_ctx;

static int list_cb(void *ctx, const char *key, const void *value, size_t len,
                   int64_t version)
{
    list_ctx *l = ctx;

    (void)version;
    if (strcmp(key, l->key) != 0)
        return 0;
    l->seen++;
    assert_int_equal(sqllock_slot_parse(value, len, slot_cb, &l->r),
                     SQLLOCK_OK);
    return 0;
}

/* O1 through the library: a later slot always wins (never going back),
 * an "ok" slot is never claimed again, the final write names its token
 * (another run's record is left alone), a long name gets a hashed key,
 * and a record that is not a slot's is refused -- by the API (EINVAL)
 * and by the tool (exit 69, the command not run). */
static void test_runslot_O1_slot_record_api(void **state)
{
    tt_fixture *f = *state;
    sqllock_slot_options so = SQLLOCK_SLOT_OPTIONS_INIT;
    const char *name = tt_name(f, "api"), *junk = tt_name(f, "junk");
    char key[SQLLOCK_NAME_MAX + 1], longname[SQLLOCK_NAME_MAX + 1];
    char ran[4300];
    list_ctx l;
    slot_rec r;

    so.schedule = "1h";
    so.slot_ms = 7200000;
    so.token = 10;
    so.who = "a\tb\nc";         /* tabs and breaks become spaces */
    EXPECT_RC(f->db, sqllock_slot_claim(f->db, name, &so, NULL, NULL),
              SQLLOCK_OK, "claim");
    slot_of(f, name, &r);
    assert_string_equal(r.who, "a b c");
    assert_string_equal(r.state, "running");
    /* The slot before: never going back, even with retry_failed. */
    so.slot_ms = 3600000;
    so.token = 11;
    so.retry_failed = 1;
    EXPECT_RC(f->db, sqllock_slot_claim(f->db, name, &so, slot_cb, &r),
              SQLLOCK_BUSY, "claim of an earlier slot");
    assert_int_equal(r.info.token, 10);
    /* Another token's final write leaves the record alone. */
    EXPECT_RC(f->db, sqllock_slot_finish(f->db, name, 11, "ok", 0, 0),
              SQLLOCK_CONFLICT, "finish of another token");
    assert_int_equal(sqllock_slot_finish(f->db, name, 10, "running", 0, 0),
                     SQLLOCK_EINVAL);
    EXPECT_RC(f->db, sqllock_slot_finish(f->db, name, 10, "ok", 0, 0),
              SQLLOCK_OK, "finish");
    so.slot_ms = 7200000;
    EXPECT_RC(f->db, sqllock_slot_claim(f->db, name, &so, NULL, NULL),
              SQLLOCK_BUSY, "claim of an ok slot with retry_failed");
    so.slot_ms = 10800000;
    EXPECT_RC(f->db, sqllock_slot_claim(f->db, name, &so, NULL, NULL),
              SQLLOCK_OK, "claim of the next slot");
    slot_of(f, name, &r);
    assert_int_equal(r.info.prev_slot_ms, 7200000);
    assert_int_equal(r.info.token, 11);
    /* sqllock_record_list() and sqllock_slot_parse(). */
    memset(&l, 0, sizeof l);
    sqllock_slot_key(name, key, sizeof key);
    l.key = key;
    EXPECT_RC(f->db, sqllock_record_list(f->db, SQLLOCK_SLOT_KEY_PREFIX,
                                         list_cb, &l), SQLLOCK_OK, "list");
    assert_int_equal(l.seen, 1);
    assert_int_equal(l.r.info.slot_ms, 10800000);
    assert_int_equal(sqllock_slot_parse("1\t2\t3", 5, NULL, NULL),
                     SQLLOCK_EINVAL);
    /* A name too long for the prefix: cut, with a hash. */
    memset(longname, 'n', SQLLOCK_NAME_MAX);
    memcpy(longname, name, strlen(name));
    longname[SQLLOCK_NAME_MAX] = '\0';
    so.slot_ms = 3600000;
    EXPECT_RC(f->db, sqllock_slot_claim(f->db, longname, &so, NULL, NULL),
              SQLLOCK_OK, "claim of a long name");
    sqllock_slot_key(longname, key, sizeof key);
    assert_true(strlen(key) <= SQLLOCK_NAME_MAX);
    assert_non_null(strchr(key, '#'));
    EXPECT_RC(f->db, sqllock_slot_finish(f->db, longname, 11, "failed", 2, 0),
              SQLLOCK_OK, "finish of a long name");
    /* Bad input. */
    assert_int_equal(sqllock_slot_claim(NULL, name, &so, NULL, NULL),
                     SQLLOCK_EINVAL);
    assert_int_equal(sqllock_slot_claim(f->db, name, NULL, NULL, NULL),
                     SQLLOCK_EINVAL);
    so.schedule = "61 * * * *";
    assert_int_equal(sqllock_slot_claim(f->db, name, &so, NULL, NULL),
                     SQLLOCK_EINVAL);
    assert_non_null(strstr(sqllock_errmsg(f->db), "minute field"));
    so.schedule = "1h";
    so.token = -1;
    assert_int_equal(sqllock_slot_claim(f->db, name, &so, NULL, NULL),
                     SQLLOCK_EINVAL);
    assert_int_equal(sqllock_slot_claim(f->db, "", &so, NULL, NULL),
                     SQLLOCK_EINVAL);
    assert_int_equal(sqllock_slot_read(f->db, junk, NULL, NULL),
                     SQLLOCK_NOTFOUND);
    /* Not a slot record: refused, nothing runs. */
    sqllock_slot_key(junk, key, sizeof key);
    EXPECT_RC(f->db, sqllock_record_create(f->db, key, "garbage", 7),
              SQLLOCK_OK, "record_create");
    assert_int_equal(sqllock_slot_read(f->db, junk, NULL, NULL),
                     SQLLOCK_EINVAL);
    tt_fpath(f, ran, sizeof ran, "ran");
    TT_EXPECT_EXIT(f, 69, "run", junk, "--once-per", "1h", "--", "touch",
                   ran);
    assert_false(tt_file_exists(ran));
    assert_non_null(strstr(f->err, "does not hold the schedule slot"));
    tt_expect_no_row(f, junk);
}

/* --once-per-cron: the slot starts on a minute the expression matches,
 * and the record keeps the expression. */
static void test_runslot_O1_cron_schedule(void **state)
{
    tt_fixture *f = *state;
    const char *name = tt_name(f, "cron");
    char ran[4300], script[9000];
    int64_t start;
    slot_rec r;

    tt_fpath(f, ran, sizeof ran, "ran");
    snprintf(script, sizeof script, "echo x >> '%s'", ran);
    away_from_slot_end("*/2 * * * *", tu_scaled_ms(10000));
    TT_EXPECT_EXIT(f, 0, "run", name, "--once-per-cron", "*/2 * * * *",
                   "--verbose", "--", "sh", "-c", script);
    assert_non_null(strstr(f->err, "this run has the slot starting"));
    TT_EXPECT_EXIT(f, 0, "run", name, "--once-per-cron", "*/2 * * * *", "--",
                   "sh", "-c", script);
    assert_int_equal(lines_in(ran), 1);
    slot_of(f, name, &r);
    assert_string_equal(r.schedule, "*/2 * * * *");
    assert_int_equal(sqllock_schedule_slot("*/2 * * * *", r.info.slot_ms,
                                           &start, NULL), SQLLOCK_OK);
    assert_int_equal(start, r.info.slot_ms);
}

/* --metrics-file for a run that ran (its duration), and one that found
 * the lock busy (exit 75, no duration). */
static void test_runslot_metrics_file(void **state)
{
    tt_fixture *f = *state;
    const char *name = tt_name(f, "metrics");
    char metrics[4300], text[8192];
    sqllock_lease *holder;
    double start, end;

    tt_fpath(f, metrics, sizeof metrics, "job.prom");
    TT_EXPECT_EXIT(f, 0, "run", name, "--metrics-file", metrics, "--", "sh",
                   "-c", "sleep 0.2");
    expect_metrics(f, metrics, name, "ran", 0, text, sizeof text);
    start = sample(text, "sqllock_run_last_start_timestamp_seconds", name,
                   NULL);
    end = sample(text, "sqllock_run_last_end_timestamp_seconds", name, NULL);
    if (start < wall_ms() / 1000.0 - 60 || end < start ||
        end > wall_ms() / 1000.0 + 1)
        fail_msg("start %f, end %f:\n%s", start, end, text);
    if (sample(text, "sqllock_run_last_duration_seconds", name, NULL) < 0.2 ||
        sample(text, "sqllock_run_last_wait_seconds", name, NULL) > end -
        start)
        fail_msg("duration or wait wrong:\n%s", text);

    holder = tt_lease_for(f, name, 30000);
    EXPECT_RC(f->db, sqllock_lease_acquire(holder, 0), SQLLOCK_OK, "acquire");
    TT_EXPECT_EXIT(f, 75, "run", name, "--metrics-file", metrics, "--",
                   "true");
    expect_metrics(f, metrics, name, "busy", 75, text, sizeof text);
    assert_true(sample(text, "sqllock_run_last_duration_seconds", name,
                       NULL) == 0.0);
    EXPECT_RC(f->db, sqllock_lease_release(holder), SQLLOCK_OK, "release");
}

/* E2: bad input exits 64 with a message, runs nothing and locks
 * nothing; with --metrics-file the usage error is the outcome "error". */
static void test_runslot_E2_bad_input(void **state)
{
    static const struct {
        const char *args[6];
        const char *says;
    } bad[] = {
        { { "--once-per", "0" }, "longer than 0" },
        { { "--once-per", "1x" }, "bad duration" },
        { { "--once-per-cron", "61 * * * *" }, "minute field" },
        { { "--once-per-cron", "0 3 * *" }, "five fields" },
        { { "--once-per-cron", "1h" }, "five fields" },
        { { "--once-per", "1h", "--once-per-cron", "0 * * * *" },
          "exclude each other" },
        { { "--once-per", "1h", "--leader" }, "with --leader" },
        { { "--once-per", "1h", "--shared" }, "with --shared" },
        { { "--once-per-cron", "@hourly", "--permits", "2" },
          "with --permits" },
        { { "--retry-failed" }, "needs --once-per" },
        { { "--slot-done-exit", "0" }, "needs --once-per" },
        { { "--once-per", "1h", "--slot-done-exit", "256" }, "bad value" },
        { { "--max-runtime", "0" }, "longer than 0" },
        { { "--max-runtime", "soon" }, "bad duration" },
        { { "--metrics-file", "" }, "needs a path" },
    };
    tt_fixture *f = *state;
    const char *name = tt_name(f, "bad");
    char ran[4300], metrics[4300], text[8192];
    size_t i;

    tt_fpath(f, ran, sizeof ran, "ran");
    for (i = 0; i < sizeof bad / sizeof *bad; i++) {
        const char *args[16];
        int n = 0, k, code;

        args[n++] = "run";
        args[n++] = name;
        for (k = 0; k < 6 && bad[i].args[k] != NULL; k++)
            args[n++] = bad[i].args[k];
        args[n++] = "--";
        args[n++] = "touch";
        args[n++] = ran;
        args[n] = NULL;
        code = tt_run_tool(f, args);
        if (code != 64 || strstr(f->err, bad[i].says) == NULL)
            fail_msg("run %s %s: exit %d, want 64 saying '%s'; stderr: %s",
                     bad[i].args[0], bad[i].args[1] != NULL ? bad[i].args[1]
                     : "", code, bad[i].says, f->err);
        assert_false(tt_file_exists(ran));
    }
    tt_fpath(f, metrics, sizeof metrics, "bad.prom");
    TT_EXPECT_EXIT(f, 64, "run", name, "--metrics-file", metrics,
                   "--once-per", "0", "--", "touch", ran);
    expect_metrics(f, metrics, name, "error", 64, text, sizeof text);
    tt_expect_no_row(f, name);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runslot_X1_max_runtime_stops_the_group),
        cmocka_unit_test(test_runslot_X2_lost_wins_over_timeout),
        cmocka_unit_test(test_runslot_O1_two_hosts_one_slot),
        cmocka_unit_test(test_runslot_O1_next_slot_runs_again),
        cmocka_unit_test(test_runslot_O1_retry_failed),
        cmocka_unit_test(test_runslot_O1_slot_record_api),
        cmocka_unit_test(test_runslot_O1_cron_schedule),
        cmocka_unit_test(test_runslot_metrics_file),
        cmocka_unit_test(test_runslot_E2_bad_input),
    };
    return TU_RUN_PER_URL("runslot", &g_url, tests, setup, teardown);
}
