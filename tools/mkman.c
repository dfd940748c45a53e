/*
 * mkman.c -- makes the manual page sqllock(1) from the tool's own help, at
 * build time, so that `sqllock --help` and `man sqllock` cannot say
 * different things: the help text in help.c is the one source of both.
 *
 *     mkman TOOL OUT [TITLE FILE]...
 *
 * runs `TOOL --help` and `TOOL --version` and writes the page, in the
 * man(7) macros, to OUT. Each TITLE FILE pair adds FILE verbatim under
 * EXAMPLES (the files of examples/, which tests/test_examples.c runs).
 * Not installed; a build helper only.
 *
 * The help has a layout this program reads (and tests/test_man.c checks
 * the result against the help, so that a change of layout that it reads
 * wrongly fails the tests rather than the page):
 *   - "usage: sqllock ..." and the lines under it: SYNOPSIS;
 *   - the text up to the first heading: its first sentence is the NAME
 *     line, the whole is DESCRIPTION;
 *   - a line at column 0 ending in ':' starts a section ("Commands:" is
 *     COMMANDS, "Exit status:" EXIT STATUS);
 *   - in a section, an item is a line indented at most 4 columns whose
 *     term and text are split by two spaces or more ("  --db URL   the
 *     database", "   64  usage error"; in Options, one space after an
 *     option's names and placeholders is enough), or a term alone at
 *     column 2 with its text under it, indented deeper (a command, or an
 *     option such as "--workers N, --stock N"); in Commands, the lines
 *     right under a term that start with '[' or '-' continue the term
 *     (the options of `run`);
 *   - any other line is running text; a blank line ends a paragraph.
 * Option names (words that start with '-') are set in bold, placeholders
 * (words in capitals: URL, DUR, NAME) in italics.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_LINES 2000

typedef struct text {
    char *buf;                 /* the output, lines split in place */
    char *line[MAX_LINES];
    size_t n;
} text;

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "mkman: %s%s%s\n", what, detail ? ": " : "",
            detail ? detail : "");
    exit(1);
}

/* Runs `tool arg` and keeps its standard output, split into lines. */
static void run_tool(const char *tool, const char *arg, text *t)
{
    char *argv[3];
    size_t len = 0, cap = 8192;
    int fds[2], st;
    pid_t pid;
    ssize_t n;

    argv[0] = (char *)tool;
    argv[1] = (char *)arg;
    argv[2] = NULL;
    t->buf = malloc(cap);
    if (t->buf == NULL)
        die("out of memory", NULL);
    if (pipe(fds) != 0)
        die("pipe", strerror(errno));
    pid = fork();
    if (pid < 0)
        die("fork", strerror(errno));
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execv(tool, argv);
        fprintf(stderr, "mkman: cannot run %s: %s\n", tool, strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    for (;;) {
        if (len + 1 >= cap) {
            char *nb = realloc(t->buf, cap * 2);
            if (nb == NULL)
                die("out of memory", NULL);
            t->buf = nb;
            cap *= 2;
        }
        n = read(fds[0], t->buf + len, cap - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            die("read", strerror(errno));
        if (n == 0)
            break;
        len += (size_t)n;
    }
    close(fds[0]);
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            die("waitpid", strerror(errno));
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        die("the tool failed with", arg);
    t->buf[len] = '\0';
    t->n = 0;
    {
        char *p = t->buf;

        while (*p != '\0') {
            char *nl = strchr(p, '\n');

            if (t->n == MAX_LINES)
                die("the help is too long", NULL);
            t->line[t->n++] = p;
            if (nl == NULL)
                break;
            *nl = '\0';
            p = nl + 1;
        }
    }
}

static int indent_of(const char *s)
{
    int i = 0;

    while (s[i] == ' ')
        i++;
    return i;
}

static int is_blank(const char *s)
{
    return s[indent_of(s)] == '\0';
}

/* Writes n bytes of s as text in a line: '\' and '-' escaped, and a line
 * that would start with '.' or '\'' guarded. */
static void put_text(FILE *o, const char *s, size_t n, int line_start)
{
    size_t i;

    if (line_start && n > 0 && (s[0] == '.' || s[0] == '\''))
        fputs("\\&", o);
    for (i = 0; i < n; i++) {
        if (s[i] == '\\')
            fputs("\\e", o);
        else if (s[i] == '-')
            fputs("\\-", o);
        else
            fputc(s[i], o);
    }
}

static void put_line(FILE *o, const char *s)
{
    put_text(o, s, strlen(s), 1);
    fputc('\n', o);
}

/* A word of a term or synopsis: letters, digits and "_.-". */
static int word_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
}

/* Writes a term or a synopsis line with fonts: option names in bold, a
 * placeholder in capitals in italics, and the first word in bold when
 * `first_bold` (a command's name). */
static void put_styled(FILE *o, const char *s, int first_bold)
{
    const char *p = s;
    int first = 1;

    while (*p != '\0') {
        const char *w = p, *e;
        const char *font = NULL;
        size_t n, k;
        int caps = 0, lower = 0;

        if (!word_char(*p)) {
            put_text(o, p, 1, p == s);
            p++;
            continue;
        }
        while (word_char(*p))
            p++;
        /* "ARGS..." is the word ARGS and its dots. */
        e = p;
        while (e > w && e[-1] == '.')
            e--;
        n = (size_t)(e - w);
        for (k = 0; k < n; k++) {
            if (w[k] >= 'A' && w[k] <= 'Z')
                caps = 1;
            if (w[k] >= 'a' && w[k] <= 'z')
                lower = 1;
        }
        if (n > 0 && ((first && first_bold) || (w[0] == '-' && n > 1)))
            font = "\\fB";
        else if (n > 0 && caps && !lower)
            font = "\\fI";
        if (font != NULL)
            fputs(font, o);
        put_text(o, w, n, w == s && font == NULL);
        if (font != NULL)
            fputs("\\fR", o);
        put_text(o, e, (size_t)(p - e), 0);
        first = 0;
    }
    fputc('\n', o);
}

/* 1 if the word w[0..n) is a placeholder: capitals and digits, at least
 * one capital ("URL", "DUR", "N"), or "|". */
static int is_placeholder(const char *w, size_t n)
{
    size_t k;
    int caps = 0;

    if (n == 1 && w[0] == '|')
        return 1;
    for (k = 0; k < n; k++) {
        if (w[k] >= 'A' && w[k] <= 'Z')
            caps = 1;
        else if (!(w[k] >= '0' && w[k] <= '9') && w[k] != '_' &&
                 w[k] != '.')
            return 0;
    }
    return caps;
}

/* Where the text of an item starts in s (past its indent): after the
 * first run of two spaces or more that follows some text; in Options
 * (`options`), for an option ("-..."), also after its names and
 * placeholders when a single space parts them from the text
 * ("--renew-every DUR run: the time ...", a term too long for the
 * column). NULL when s is not a term with text. */
static const char *term_gap(const char *s, int options)
{
    const char *p = s + indent_of(s);
    const char *gap = strstr(p, "  ");
    const char *w = p;

    if (gap != NULL && gap > p)
        return gap;
    if (!options || *p != '-')
        return NULL;
    /* Words separated by one space: "-h,", "--db", "URL", "|". */
    while (*w != '\0') {
        const char *e = strchr(w, ' ');
        size_t n = e != NULL ? (size_t)(e - w) : strlen(w);
        size_t m = n > 0 && w[n - 1] == ',' ? n - 1 : n;

        if (!(m > 1 && w[0] == '-') && !is_placeholder(w, m))
            return w > p ? w - 1 : NULL;
        if (e == NULL)
            return NULL;
        w = e + 1;
    }
    return NULL;
}

/* The sections whose items this program reads in their own way. */
enum { SEC_OTHER, SEC_COMMANDS, SEC_OPTIONS };

/* One section of the help, lines [0, n), of kind `kind`. */
static void put_section(FILE *o, char **l, size_t n, int kind)
{
    int commands = kind == SEC_COMMANDS;
    size_t i = 0;
    int para = 1;              /* running text starts a paragraph */
    int prev = 0;              /* the indent of the running line before */

    while (i < n) {
        const char *s = l[i];
        int ind = indent_of(s);
        const char *gap = term_gap(s, kind == SEC_OPTIONS);
        int next = i + 1 < n && !is_blank(l[i + 1]) ? indent_of(l[i + 1]) : -1;

        if (is_blank(s)) {
            para = 1;
            i++;
            continue;
        }
        if (ind <= 4 && gap != NULL) {
            /* "  --db URL          the database": term and text. */
            char term[512];
            size_t tn = (size_t)(gap - (s + ind));

            if (tn >= sizeof term)
                die("a term is too long", s);
            memcpy(term, s + ind, tn);
            term[tn] = '\0';
            fputs(".TP\n", o);
            put_styled(o, term, 0);
            put_line(o, gap + indent_of(gap));
            for (i++; i < n && !is_blank(l[i]) && indent_of(l[i]) > ind + 2;
                 i++)
                put_line(o, l[i] + indent_of(l[i]));
            para = 1;
            continue;
        }
        if (ind == 2 && next >= 6 && (commands || s[ind] == '-')) {
            /* A term alone, its text under it. */
            char term[2048];
            size_t tn = strlen(s + ind);

            if (tn >= sizeof term)
                die("a term is too long", s);
            memcpy(term, s + ind, tn + 1);
            for (i++; commands && i < n && indent_of(l[i]) >= 6 &&
                      (l[i][indent_of(l[i])] == '[' ||
                       l[i][indent_of(l[i])] == '-'); i++) {
                const char *c = l[i] + indent_of(l[i]);

                if (tn + 1 + strlen(c) >= sizeof term)
                    die("a term is too long", s);
                term[tn++] = ' ';
                memcpy(term + tn, c, strlen(c) + 1);
                tn += strlen(c);
            }
            fputs(".TP\n", o);
            put_styled(o, term, commands);
            for (; i < n && !is_blank(l[i]) && indent_of(l[i]) > 2; i++)
                put_line(o, l[i] + indent_of(l[i]));
            para = 1;
            continue;
        }
        /* Running text: a new paragraph after a blank line or an item,
         * or where a line goes back to a smaller indent ("  run: ..."
         * after its continuation "       signal N, ..."). */
        if (para || ind < prev)
            fputs(".PP\n", o);
        para = 0;
        prev = ind;
        put_line(o, s + ind);
        i++;
    }
}

/* "Exit status:" as the heading "EXIT STATUS". */
static void put_heading(FILE *o, const char *s)
{
    size_t i, n = strlen(s) - 1;       /* without the ':' */

    fputs(".SH ", o);
    for (i = 0; i < n; i++)
        fputc(s[i] >= 'a' && s[i] <= 'z' ? s[i] - 'a' + 'A' : s[i], o);
    fputc('\n', o);
}

static int is_heading(const char *s)
{
    size_t n = strlen(s);

    return n > 1 && s[0] != ' ' && s[n - 1] == ':';
}

/* A file under EXAMPLES, as it is. */
static void put_example(FILE *o, const char *title, const char *path)
{
    FILE *f = fopen(path, "r");
    char line[4096];

    if (f == NULL)
        die("cannot read", path);
    fputs(".SS ", o);
    put_text(o, title, strlen(title), 0);
    fputs("\n.PP\n.RS 4\n.nf\n", o);
    while (fgets(line, sizeof line, f) != NULL) {
        size_t n = strlen(line);

        if (n > 0 && line[n - 1] == '\n')
            line[--n] = '\0';
        else if (!feof(f))
            die("a line is too long in", path);
        put_line(o, line);
    }
    if (ferror(f))
        die("cannot read", path);
    fclose(f);
    fputs(".fi\n.RE\n", o);
}

int main(int argc, char **argv)
{
    text help, version;
    size_t i, start;
    FILE *o;
    const char *ver, *sentence_end;
    char tmp[4096];
    int a, blank;

    if (argc < 3 || argc % 2 != 1) {
        fputs("usage: mkman TOOL OUT [TITLE FILE]...\n", stderr);
        return 2;
    }
    run_tool(argv[1], "--help", &help);
    run_tool(argv[1], "--version", &version);
    if (help.n < 3 || strncmp(help.line[0], "usage: ", 7) != 0)
        die("the help does not start with \"usage: \"", help.line[0]);
    ver = version.n > 0 ? version.line[0] : "sqllock";
    /* Written beside OUT and renamed at the end, so that a failure
     * leaves no page that looks made. */
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", argv[2]) >= sizeof tmp)
        die("the path is too long", argv[2]);
    o = fopen(tmp, "w");
    if (o == NULL)
        die("cannot write", tmp);

    fputs(".\\\" sqllock(1), made by tools/mkman.c from `sqllock --help`: "
          "edit the help\n.\\\" text in tools/help.c, not this file.\n", o);
    fprintf(o, ".TH SQLLOCK 1 \"\" \"%s\" \"User Commands\"\n", ver);
    /* URLs and option names: neither hyphenated nor stretched. */
    fputs(".nh\n.ad l\n", o);

    /* The usage lines, then the text before the first heading. */
    for (i = 1; i < help.n && !is_blank(help.line[i]) &&
                help.line[i][0] == ' '; i++)
        ;
    start = i;
    while (start < help.n && is_blank(help.line[start]))
        start++;
    if (start >= help.n || is_heading(help.line[start]))
        die("the help has no description before its first heading", NULL);
    sentence_end = strstr(help.line[start], ". ");
    if (sentence_end == NULL && help.line[start][strlen(help.line[start]) - 1]
                                == '.')
        sentence_end = help.line[start] + strlen(help.line[start]) - 1;
    if (sentence_end == NULL)
        die("the description's first line is not a sentence",
            help.line[start]);
    fputs(".SH NAME\nsqllock \\- ", o);
    {
        /* The sentence without its '.', starting in lower case. */
        char first[512];
        size_t n = (size_t)(sentence_end - help.line[start]);

        if (n >= sizeof first)
            die("the first sentence is too long", help.line[start]);
        memcpy(first, help.line[start], n);
        first[n] = '\0';
        if (first[0] >= 'A' && first[0] <= 'Z' &&
            !(first[1] >= 'A' && first[1] <= 'Z'))
            first[0] = (char)(first[0] - 'A' + 'a');
        put_text(o, first, n, 0);
        fputc('\n', o);
    }
    fputs(".SH SYNOPSIS\n.nf\n", o);
    for (a = 0; a < (int)start && !is_blank(help.line[a]); a++) {
        const char *s = help.line[a];

        if (a == 0)
            s += 7;
        put_styled(o, s + indent_of(s), 1);
    }
    fputs(".fi\n.SH DESCRIPTION\n", o);
    for (blank = 0, i = start; i < help.n && !is_heading(help.line[i]);
         i++) {
        if (is_blank(help.line[i])) {
            blank = 1;
            continue;
        }
        if (blank)
            fputs(".PP\n", o);
        blank = 0;
        put_line(o, help.line[i]);
    }
    fputs(".PP\nThe sections below are the text of \\fBsqllock \\-\\-help"
          "\\fR.\n", o);

    /* The sections. */
    while (i < help.n) {
        size_t end = i + 1;

        while (end < help.n && !is_heading(help.line[end]))
            end++;
        put_heading(o, help.line[i]);
        put_section(o, help.line + i + 1, end - i - 1,
                    strcmp(help.line[i], "Commands:") == 0 ? SEC_COMMANDS
                    : strcmp(help.line[i], "Options:") == 0 ? SEC_OPTIONS
                    : SEC_OTHER);
        i = end;
    }

    if (argc > 3) {
        fputs(".SH EXAMPLES\n", o);
        for (a = 3; a + 1 < argc; a += 2)
            put_example(o, argv[a], argv[a + 1]);
    }
    fputs(".SH SEE ALSO\n\\fBflock\\fR(1), \\fBcrontab\\fR(5), "
          "\\fBsystemd.service\\fR(5), \\fBsystemd.timer\\fR(5)\n", o);
    if (ferror(o) || fclose(o) != 0)
        die("cannot write", tmp);
    if (rename(tmp, argv[2]) != 0)
        die("cannot rename it to", argv[2]);
    free(help.buf);
    free(version.buf);
    return 0;
}
