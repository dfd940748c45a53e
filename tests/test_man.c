/*
 * test_man.c -- the manual page sqllock(1) (issue 15): `cmake --install`
 * puts it in <prefix>/<mandir>/man1 (its component "man" alone here, so
 * that a tree where only the tool and the tests were built will do), and
 * it says what `sqllock --help` says, so that the two cannot drift apart:
 *   - every command that --help lists is an item of COMMANDS, and every
 *     option an item of OPTIONS;
 *   - every option name that --help mentions anywhere is in the page;
 *   - the words of the page, from SYNOPSIS to the end of the last section
 *     of the help, are the words of --help, in order (the page's own
 *     headings, NAME and the sentence that introduces the sections aside);
 *   - `man -l` (when man is installed) renders it without a warning, with
 *     every command and option in its output.
 *
 * SQLLOCK_CLI_PATH is the built tool, SQLLOCK_CMAKE_COMMAND the cmake of
 * the build, SQLLOCK_BINARY_DIR its build tree and SQLLOCK_MANDIR the
 * install's man directory (CMAKE_INSTALL_MANDIR), from
 * tests/CMakeLists.txt.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_spawn.h"
#include "test_run.h"

#if !defined(SQLLOCK_CLI_PATH) || !defined(SQLLOCK_CMAKE_COMMAND) ||        \
    !defined(SQLLOCK_BINARY_DIR) || !defined(SQLLOCK_MANDIR)
#error "tests/CMakeLists.txt defines the paths this test needs"
#endif

#define MAX_WORDS 8000
#define MAX_NAMES 200

typedef struct fixture {
    char *dir;
    char *help;                /* sqllock --help */
    char *page;                /* the installed sqllock.1 */
    char page_path[4300];
    char cmds[MAX_NAMES][64];  /* the commands of --help */
    int ncmds;
    char opts[MAX_NAMES][64];  /* every option name --help mentions */
    int nopts;
    char items[MAX_NAMES][64]; /* the option names of its Options items */
    int nitems;
} fixture;

/* The whole file at `path`, NUL-terminated, or NULL. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;

    if (f == NULL)
        return NULL;
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
        fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return NULL;
    }
    buf = malloc((size_t)n + 1);
    if (buf != NULL && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (buf != NULL)
        buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Runs argv with `envp` (NULL: this process's), stdout and stderr to
 * files in f->dir; returns the exit code, and the outputs in *out and
 * *err (malloc'd; either may be NULL to drop it). */
static int run(fixture *f, const char *const *argv, char *const *envp,
               char **out, char **err)
{
    char o[4300], e[4300];
    int code;

    snprintf(o, sizeof o, "%s/out", f->dir);
    snprintf(e, sizeof e, "%s/err", f->dir);
    code = tu_wait_for(tu_spawn_env(argv, envp != NULL ? envp : environ, o,
                                    e, 1), 120000);
    if (code < 0)
        fail_msg("%s did not end within 120 s", argv[0]);
    if (out != NULL)
        *out = slurp(o);
    if (err != NULL)
        *err = slurp(e);
    return code;
}

static int add_name(char names[][64], int *n, const char *s, size_t len)
{
    int i;

    if (len == 0 || len >= 64)
        return 0;
    for (i = 0; i < *n; i++)
        if (strlen(names[i]) == len && strncmp(names[i], s, len) == 0)
            return 0;
    if (*n == MAX_NAMES)
        fail_msg("more than %d names in the help", MAX_NAMES);
    memcpy(names[*n], s, len);
    names[(*n)++][len] = '\0';
    return 1;
}

static int opt_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
}

/* The commands (the first word of each line at column 2 of Commands),
 * every option name in the text ("--name", "-X" standing alone), and the
 * option names of the items of Options. */
static void read_help(fixture *f)
{
    const char *p = f->help;
    int section = 0;           /* 1: Commands, 2: Options */

    while (*p != '\0') {
        const char *nl = strchr(p, '\n');
        size_t len = nl != NULL ? (size_t)(nl - p) : strlen(p);
        size_t i;

        if (len > 0 && p[0] != ' ' && p[len - 1] == ':')
            section = strncmp(p, "Commands:", 9) == 0 ? 1
                    : strncmp(p, "Options:", 8) == 0 ? 2 : 0;
        else if (section == 1 && len > 2 && p[0] == ' ' && p[1] == ' ' &&
                 p[2] != ' ')
            add_name(f->cmds, &f->ncmds, p + 2, strcspn(p + 2, " \n"));
        else if (section == 2 && len > 3 && strncmp(p, "  -", 3) == 0) {
            /* "  -h, --help  print" / "  --db URL  the database". */
            const char *w = p + 2;

            /* The term ends at two blanks (or, for a term too long
             * for the column, at a word that is no option name). */
            while (*w == '-' && (strstr(p, "  ") == NULL ||
                                 w < strstr(p + 2, "  "))) {
                size_t n = 1;

                while (opt_char(w[n]) || (w[n] >= 'A' && w[n] <= 'Z' &&
                                          w[0] == '-' && n == 1))
                    n++;
                add_name(f->items, &f->nitems, w, n);
                w += n;
                /* Past its placeholder and a comma to the next name. */
                w += strcspn(w, ",\n");
                if (*w != ',')
                    break;
                w += strspn(w, ", ");
            }
        }
        /* Option names anywhere: "--x..." and "-X" after a blank, a
         * bracket, a bar, a quote or an opening parenthesis. */
        for (i = 0; i < len; i++) {
            size_t n;

            if (p[i] != '-' || (i > 0 && strchr(" [|(\"", p[i - 1]) == NULL))
                continue;
            if (p[i + 1] == '-') {
                for (n = 2; i + n < len && opt_char(p[i + n]); n++)
                    ;
                if (n > 2 && p[i + 2] != '-')
                    add_name(f->opts, &f->nopts, p + i, n);
                i += n - 1;
            } else if (((p[i + 1] >= 'a' && p[i + 1] <= 'z') ||
                        (p[i + 1] >= 'A' && p[i + 1] <= 'Z')) &&
                       (i + 2 >= len || strchr(" ,]|)", p[i + 2]) != NULL)) {
                add_name(f->opts, &f->nopts, p + i, 2);
            }
        }
        p += len;
        if (*p == '\n')
            p++;
    }
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    const char *help_argv[] = { SQLLOCK_CLI_PATH, "--help", NULL };
    char prefix[4200];
    const char *install_argv[] = { SQLLOCK_CMAKE_COMMAND, "--install",
                                   SQLLOCK_BINARY_DIR, "--prefix", prefix,
                                   "--component", "man", NULL };
    char *out = NULL, *err = NULL;
    int code;

    if (f == NULL || (f->dir = tu_mkdtemp()) == NULL)
        return -1;
    *state = f;
    if (run(f, help_argv, NULL, &f->help, NULL) != 0 || f->help == NULL) {
        fprintf(stderr, "sqllock --help failed\n");
        return -1;
    }
    read_help(f);
    snprintf(prefix, sizeof prefix, "%s/prefix", f->dir);
    code = run(f, install_argv, NULL, &out, &err);
    if (code != 0) {
        fprintf(stderr, "cmake --install: exit %d\n%s%s\n", code,
                out ? out : "", err ? err : "");
        free(out);
        free(err);
        return -1;
    }
    free(out);
    free(err);
    snprintf(f->page_path, sizeof f->page_path, "%s/%s/man1/sqllock.1",
             prefix, SQLLOCK_MANDIR);
    f->page = slurp(f->page_path);
    return 0;
}

/* Removes the installed tree: `rm -rf`, as the tree has folders. */
static int teardown(void **state)
{
    fixture *f = *state;

    if (f != NULL) {
        if (f->dir != NULL) {
            const char *argv[] = { "/bin/rm", "-rf", f->dir, NULL };
            pid_t pid = tu_spawn(argv, "/dev/null", "/dev/null", 0);

            tu_wait(pid);
        }
        free(f->dir);
        free(f->help);
        free(f->page);
        free(f);
    }
    return 0;
}

/* The text of a roff line without font changes and escapes: "\fB\-\-db\fR"
 * is "--db". */
static void plain(const char *s, size_t len, char *out, size_t size)
{
    size_t i, o = 0;

    for (i = 0; i < len && o + 1 < size; i++) {
        if (s[i] == '\\' && i + 1 < len) {
            char c = s[i + 1];

            if (c == 'f' && i + 2 < len) {
                i += 2;                        /* \fB, \fI, \fR, \fP */
            } else if (c == '-' || c == '\\') {
                out[o++] = c;
                i++;
            } else if (c == 'e') {
                out[o++] = '\\';
                i++;
            } else if (c == '&') {
                i++;
            } else if (c == '"') {
                /* A comment: the rest of the line. */
                while (i < len && s[i] != '\n')
                    i++;
                i--;
            } else {
                fail_msg("an escape the test does not know: \\%c", c);
            }
            continue;
        }
        out[o++] = s[i];
    }
    out[o] = '\0';
}

/* The page's lines from `from` (".SH NAME") up to `to` (or the end). */
typedef struct span {
    const char *start, *end;
} span;

static span section_of(const char *page, const char *name)
{
    char head[80];
    span s = { NULL, NULL };
    const char *p;

    snprintf(head, sizeof head, "\n.SH %s\n", name);
    p = strstr(page, head);
    if (p == NULL)
        return s;
    s.start = p + strlen(head);
    p = strstr(s.start, "\n.SH ");
    s.end = p != NULL ? p + 1 : s.start + strlen(s.start);
    return s;
}

/* Is `name` an item (a tag after .TP) of the span, as its first word
 * (`first`) or anywhere in the tag? */
static int is_item(span s, const char *name, int first)
{
    const char *p = s.start;

    while (p != NULL && p < s.end) {
        if (strncmp(p, ".TP\n", 4) == 0) {
            const char *tag = p + 4, *nl = strchr(tag, '\n');
            char text[2048];
            size_t n = strlen(name);
            const char *hit;

            plain(tag, nl != NULL ? (size_t)(nl - tag) : strlen(tag), text,
                  sizeof text);
            for (hit = strstr(text, name); hit != NULL;
                 hit = strstr(hit + 1, name)) {
                int before = hit == text || strchr(" [|,", hit[-1]) != NULL;
                int after = hit[n] == '\0' || strchr(" ],|", hit[n]) != NULL;

                if (before && after && (!first || hit == text))
                    return 1;
            }
        }
        p = strchr(p, '\n');
        if (p != NULL)
            p++;
    }
    return 0;
}

/* Is the option name `name` in `text` as a whole word? */
static int has_word(const char *text, const char *name)
{
    size_t n = strlen(name);
    const char *hit;

    for (hit = strstr(text, name); hit != NULL; hit = strstr(hit + 1, name))
        if ((hit == text || !opt_char(hit[-1])) && !opt_char(hit[n]) &&
            hit[n] != '_')
            return 1;
    return 0;
}

/* cmake --install put the page in <prefix>/<mandir>/man1, made by mkman. */
static void test_man_installed(void **state)
{
    fixture *f = *state;
    static const char *const sections[] = {
        "NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "OPTIONS",
        "DATABASE", "EXIT STATUS", "EXAMPLES", "SEE ALSO",
    };
    size_t i;

    if (f->page == NULL)
        fail_msg("cmake --install did not install %s", f->page_path);
    assert_non_null(strstr(f->page, "\n.TH SQLLOCK 1 "));
    for (i = 0; i < sizeof sections / sizeof sections[0]; i++)
        if (section_of(f->page, sections[i]).start == NULL)
            fail_msg("the page has no section %s", sections[i]);
    printf("man: --help lists %d commands, %d option names, %d items of "
           "Options\n", f->ncmds, f->nopts, f->nitems);
    /* The parse of the help found what there is to find. */
    assert_true(f->ncmds >= 7);
    assert_true(f->nitems >= 10);
    assert_true(f->nopts >= f->nitems);
}

/* Every command is an item of COMMANDS, every option of the help's
 * Options an item of OPTIONS, every option name anywhere in --help is in
 * the page. */
static void test_man_lists_every_command_and_option(void **state)
{
    fixture *f = *state;
    span cmds, opts;
    char *text;
    size_t len;
    int i;

    assert_non_null(f->page);
    cmds = section_of(f->page, "COMMANDS");
    opts = section_of(f->page, "OPTIONS");
    assert_non_null(cmds.start);
    assert_non_null(opts.start);
    for (i = 0; i < f->ncmds; i++)
        if (!is_item(cmds, f->cmds[i], 1))
            fail_msg("COMMANDS has no item for \"%s\"", f->cmds[i]);
    for (i = 0; i < f->nitems; i++)
        if (!is_item(opts, f->items[i], 0))
            fail_msg("OPTIONS has no item for \"%s\"", f->items[i]);
    len = strlen(f->page);
    text = malloc(len + 1);
    assert_non_null(text);
    plain(f->page, len, text, len + 1);
    for (i = 0; i < f->nopts; i++)
        if (!has_word(text, f->opts[i]))
            fail_msg("the page does not mention %s", f->opts[i]);
    free(text);
}

/* Splits text into words (at blanks) into w[]; returns the count. */
static int words(char *text, char **w, int max)
{
    int n = 0;
    char *save = NULL, *t;

    for (t = strtok_r(text, " \t\n", &save); t != NULL;
         t = strtok_r(NULL, " \t\n", &save)) {
        if (n == max)
            fail_msg("more than %d words", max);
        w[n++] = t;
    }
    return n;
}

/* The page says what --help says, word for word, in order. */
static void test_man_is_the_help(void **state)
{
    static const char intro[] = "The sections below are the text of "
                                "sqllock --help.";
    fixture *f = *state;
    char **hw = malloc(MAX_WORDS * sizeof *hw);
    char **pw = malloc(MAX_WORDS * sizeof *pw);
    char *help = tu_strdup(f->help), *body, *line;
    const char *p, *end;
    size_t blen = 0, cap;
    int nh, np, i;

    assert_non_null(f->page);
    assert_non_null(hw);
    assert_non_null(pw);
    assert_non_null(help);
    /* The help without "usage:" and its headings ("Commands:"). */
    for (line = help; *line != '\0';) {
        char *nl = strchr(line, '\n');
        size_t len = nl != NULL ? (size_t)(nl - line) : strlen(line);

        if (len > 0 && line[0] != ' ' && line[len - 1] == ':')
            memset(line, ' ', len);
        line += len;
        if (*line == '\n')
            line++;
    }
    memcpy(help, "      ", 6);                     /* "usage:" */
    nh = words(help, hw, MAX_WORDS);

    /* The page from SYNOPSIS to EXAMPLES, text lines only. */
    p = strstr(f->page, "\n.SH SYNOPSIS\n");
    end = strstr(f->page, "\n.SH EXAMPLES\n");
    assert_non_null(p);
    assert_non_null(end);
    cap = (size_t)(end - p) + 1;
    body = malloc(cap);
    assert_non_null(body);
    while (p < end) {
        const char *nl = strchr(p + 1, '\n');
        const char *s = p + 1;
        size_t len = (size_t)(nl - s);
        char text[4096];

        p = nl;
        if (len == 0 || s[0] == '.')
            continue;                          /* a request */
        plain(s, len, text, sizeof text);
        if (strcmp(text, intro) == 0)
            continue;
        blen += (size_t)snprintf(body + blen, cap - blen, "%s\n", text);
    }
    np = words(body, pw, MAX_WORDS);
    for (i = 0; i < nh && i < np; i++)
        if (strcmp(hw[i], pw[i]) != 0)
            fail_msg("word %d: --help says \"%s\", the page \"%s\" (after "
                     "\"%s %s\")", i, hw[i], pw[i], i > 1 ? hw[i - 2] : "",
                     i > 0 ? hw[i - 1] : "");
    if (nh != np)
        fail_msg("--help has %d words, the page %d", nh, np);
    free(body);
    free(help);
    free(hw);
    free(pw);
}

/* Where `prog` is on $PATH, into buf; 0 when it is not. */
static int find_on_path(const char *prog, char *buf, size_t size)
{
    const char *path = getenv("PATH");
    const char *p = path != NULL ? path : "/usr/bin:/bin";

    while (*p != '\0') {
        size_t n = strcspn(p, ":");

        snprintf(buf, size, "%.*s/%s", (int)n, p, prog);
        if (n > 0 && access(buf, X_OK) == 0)
            return 1;
        p += n;
        if (*p == ':')
            p++;
    }
    return 0;
}

/* man renders the page without a warning, and shows what the help
 * lists. */
static void test_man_renders(void **state)
{
    fixture *f = *state;
    char man[4200], path_var[4300];
    const char *argv[] = { man, "--warnings", "-l", f->page_path, NULL };
    char *env[] = { "LC_ALL=C", "MANWIDTH=80", "MANPAGER=cat", "PAGER=cat",
                    path_var, NULL };
    char *out = NULL, *err = NULL;
    int code, i;

    if (!find_on_path("man", man, sizeof man)) {
        tu_cannot_run("man is not installed (Debian package man-db); the "
                      "page is not rendered");
    }
    snprintf(path_var, sizeof path_var, "PATH=%s",
             getenv("PATH") != NULL ? getenv("PATH") : "/usr/bin:/bin");
    code = run(f, argv, env, &out, &err);
    if (code != 0 || err == NULL || err[0] != '\0' || out == NULL)
        fail_msg("man -l %s: exit %d, stderr:\n%s", f->page_path, code,
                 err != NULL ? err : "");
    assert_non_null(strstr(out, "SYNOPSIS"));
    for (i = 0; i < f->ncmds; i++)
        if (!has_word(out, f->cmds[i]))
            fail_msg("man does not show the command %s", f->cmds[i]);
    for (i = 0; i < f->nopts; i++)
        if (!has_word(out, f->opts[i]))
            fail_msg("man does not show %s:\n%s", f->opts[i], out);
    free(out);
    free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_man_installed),
        cmocka_unit_test(test_man_lists_every_command_and_option),
        cmocka_unit_test(test_man_is_the_help),
        cmocka_unit_test(test_man_renders),
    };
    int failed = cmocka_run_group_tests_name("man", tests, setup, teardown);

    /* No database: nothing to report; a case that could not run here
     * makes the entry skipped (under CI it failed). */
    return tu_status_merge(failed != 0, tu_skips != 0 ? TU_SKIPPED : 0);
}
