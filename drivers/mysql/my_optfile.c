/*
 * my_optfile.c -- MySQL option files (my.cnf) for the MySQL/MariaDB driver.
 *
 * The driver reads the file itself instead of handing it to the client
 * library (MYSQL_READ_DEFAULT_FILE): the library reads its file inside
 * mysql_real_connect(), after every option the driver set, and its values
 * then replace the driver's, so a URL's ssl_ca could not win over the
 * file's, and options such as return-found-rows (which would count a
 * lease held by another owner as taken) or reconnect would reach the
 * connection. Here only user, password and the TLS options are taken,
 * and the URL's own values win over them (see mysql.c).
 *
 * The syntax is MySQL's (mysys/my_default.cc): [group] lines; "name",
 * "name = value", the value optionally in matching quotes, with the
 * escapes \b \t \n \r \s \\ \" \'; '#' outside quotes starts a comment,
 * as does a line that begins with ';'; '_' and '-' in a name are the
 * same, and a "loose-" prefix is ignored; !include FILE and !includedir
 * DIR (its *.cnf files, in name order), nested up to 10 deep. Like
 * MySQL's clients, a file anyone may write is not trusted; MySQL skips it
 * with a warning, and since the library never prints, it is refused
 * instead, saying why. A file or directory named by !include must exist.
 *
 * A password is never copied into a message: errors name the file, the
 * line and at most the option's name. Buffers that held a line are
 * overwritten before they are freed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "my.h"

/* MySQL's own limit on !include nesting. */
#define OPTFILE_MAX_DEPTH 10

const char *const sqllock__my_tls_names[MY_TLS_N] = {
    "ca", "capath", "cert", "key", "cipher", "crl", "crlpath"
};

static const struct {
    const char *name;
    my_ssl_mode mode;
} ssl_modes[] = {
    { "DISABLED", MY_SSL_DISABLED },
    { "PREFERRED", MY_SSL_PREFERRED },
    { "REQUIRED", MY_SSL_REQUIRED },
    { "VERIFY_CA", MY_SSL_VERIFY_CA },
    { "VERIFY_IDENTITY", MY_SSL_VERIFY_IDENTITY },
};

int sqllock__my_ssl_mode_parse(const char *name, my_ssl_mode *mode)
{
    size_t i;

    for (i = 0; i < sizeof ssl_modes / sizeof ssl_modes[0]; i++) {
        if (strcasecmp(name, ssl_modes[i].name) == 0) {
            *mode = ssl_modes[i].mode;
            return 1;
        }
    }
    return 0;
}

const char *sqllock__my_ssl_mode_name(my_ssl_mode mode)
{
    size_t i;

    for (i = 0; i < sizeof ssl_modes / sizeof ssl_modes[0]; i++)
        if (ssl_modes[i].mode == mode)
            return ssl_modes[i].name;
    return "(none)";
}

/* Overwrites n bytes so that a password does not linger in freed memory;
 * the volatile access keeps the compiler from dropping the stores. */
static void wipe(void *p, size_t n)
{
    volatile unsigned char *v = p;

    while (n-- > 0)
        *v++ = 0;
}

static void free_secret(char *s)
{
    if (s != NULL) {
        wipe(s, strlen(s));
        free(s);
    }
}

void sqllock__my_optfile_free(my_optfile *f)
{
    int i;

    if (f == NULL)
        return;
    free(f->user);
    free_secret(f->password);
    for (i = 0; i < MY_TLS_N; i++)
        free(f->tls[i]);
    memset(f, 0, sizeof *f);
}

/* The state of one read, across !include. */
typedef struct reader {
    const char *group;          /* the extra group, or NULL */
    my_optfile *out;
    sqllock_dberr *err;
} reader;

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' ||
           c == '\f';
}

/* 1 if options of group `name` are read. Group names are compared without
 * regard to ASCII case, as MySQL compares them. */
static int wanted_group(const reader *r, const char *name)
{
    return strcasecmp(name, "client") == 0 ||
           strcasecmp(name, "client-server") == 0 ||
           strcasecmp(name, "client-mariadb") == 0 ||
           (r->group != NULL && strcasecmp(name, r->group) == 0);
}

/* Ends the line at a '#' outside quotes (MySQL's remove_end_comment()). */
static void cut_comment(char *p)
{
    char quote = 0;
    int escape = 0;

    for (; *p != '\0'; p++) {
        if ((*p == '\'' || *p == '"') && !escape) {
            if (quote == 0)
                quote = *p;
            else if (quote == *p)
                quote = 0;
        }
        if (quote == 0 && *p == '#') {
            *p = '\0';
            return;
        }
        escape = quote != 0 && *p == '\\' && !escape;
    }
}

/* Turns the text after '=' into the value, in place: blanks around it
 * and one pair of matching quotes go, escapes are decoded. */
static char *decode_value(char *v)
{
    char *end, *o, *start;

    while (is_space(*v))
        v++;
    end = v + strlen(v);
    while (end > v && is_space(end[-1]))
        end--;
    if (end - v >= 2 && (*v == '"' || *v == '\'') && end[-1] == *v) {
        v++;
        end--;
    }
    start = o = v;
    for (; v < end; v++) {
        if (*v == '\\' && v + 1 < end) {
            switch (*++v) {
            case 'n': *o++ = '\n'; break;
            case 't': *o++ = '\t'; break;
            case 'r': *o++ = '\r'; break;
            case 'b': *o++ = '\b'; break;
            case 's': *o++ = ' '; break;
            case '"': *o++ = '"'; break;
            case '\'': *o++ = '\''; break;
            case '\\': *o++ = '\\'; break;
            default:            /* unknown: kept as written */
                *o++ = '\\';
                *o++ = *v;
                break;
            }
        } else {
            *o++ = *v;
        }
    }
    *o = '\0';
    return start;
}

/* Replaces *slot with a copy of `v` (NULL or "" clears it). */
static int set_copy(char **slot, const char *v, int secret, sqllock_dberr *err)
{
    char *copy = NULL;

    if (v != NULL && (v[0] != '\0' || secret)) {
        copy = malloc(strlen(v) + 1);
        if (copy == NULL)
            return sqllock_dberr_set(err, SQLLOCK_ENOMEM, "", "out of memory");
        strcpy(copy, v);
    }
    if (secret)
        free_secret(*slot);
    else
        free(*slot);
    *slot = copy;
    return SQLLOCK_OK;
}

/* A boolean option's value as MySQL reads one; -1 if it is none. */
static int bool_value(const char *v)
{
    if (v == NULL || strcmp(v, "1") == 0 || strcasecmp(v, "on") == 0 ||
        strcasecmp(v, "true") == 0)
        return 1;
    if (strcmp(v, "0") == 0 || strcasecmp(v, "off") == 0 ||
        strcasecmp(v, "false") == 0)
        return 0;
    return -1;
}

/* Takes option `key` (normalised in place) with `value` (NULL when the
 * line has no '='), read at path:line. */
static int take_option(reader *r, const char *path, long line, char *key,
                       const char *value)
{
    my_optfile *f = r->out;
    char *p;
    int i, b;

    for (p = key; *p != '\0'; p++)
        if (*p == '_')
            *p = '-';
    if (strncmp(key, "loose-", 6) == 0)
        key += 6;
    if (strcmp(key, "user") == 0) {
        if (value == NULL)
            return sqllock_dberr_set(r->err, SQLLOCK_EURL, "", "option file "
                                     "%s, line %ld: 'user' needs a value",
                                     path, line);
        return set_copy(&f->user, value, 0, r->err);
    }
    if (strcmp(key, "password") == 0) {
        /* A bare "password" asks MySQL's programs to prompt; a library
         * cannot, so it leaves the password as it was. */
        if (value == NULL)
            return SQLLOCK_OK;
        return set_copy(&f->password, value, 1, r->err);
    }
    if (strcmp(key, "ssl-mode") == 0) {
        if (value == NULL || !sqllock__my_ssl_mode_parse(value, &f->mode))
            return sqllock_dberr_set(r->err, SQLLOCK_EURL, "", "option file "
                                     "%s, line %ld: ssl-mode must be "
                                     "DISABLED, PREFERRED, REQUIRED, "
                                     "VERIFY_CA or VERIFY_IDENTITY", path,
                                     line);
        return SQLLOCK_OK;
    }
    /* MariaDB's spelling of VERIFY_IDENTITY. */
    if (strcmp(key, "ssl-verify-server-cert") == 0) {
        b = bool_value(value);
        if (b < 0)
            return sqllock_dberr_set(r->err, SQLLOCK_EURL, "", "option file "
                                     "%s, line %ld: ssl-verify-server-cert "
                                     "takes 1, 0, ON, OFF, TRUE or FALSE",
                                     path, line);
        if (b)
            f->mode = MY_SSL_VERIFY_IDENTITY;
        return SQLLOCK_OK;
    }
    if (strncmp(key, "ssl-", 4) == 0) {
        for (i = 0; i < MY_TLS_N; i++) {
            if (strcmp(key + 4, sqllock__my_tls_names[i]) != 0)
                continue;
            if (value == NULL)
                return sqllock_dberr_set(r->err, SQLLOCK_EURL, "", "option "
                                         "file %s, line %ld: '%s' needs a "
                                         "value", path, line, key);
            return set_copy(&f->tls[i], value, 0, r->err);
        }
    }
    return SQLLOCK_OK;          /* not one of the driver's options */
}

static int read_file(reader *r, const char *path, int missing_ok, int depth);

/* Reads the *.cnf files of directory `dir`, in name order. */
static int read_dir(reader *r, const char *dir, const char *from, long line,
                    int depth)
{
    struct dirent **names = NULL;
    int n, i, rc = SQLLOCK_OK;

    n = scandir(dir, &names, NULL, alphasort);
    if (n < 0)
        return sqllock_dberr_set(r->err, SQLLOCK_EURL, "", "option file %s, "
                                 "line %ld: cannot read the directory %s "
                                 "named by !includedir: %s", from, line, dir,
                                 strerror(errno));
    for (i = 0; i < n; i++) {
        const char *name = names[i]->d_name;
        size_t len = strlen(name);
        char *path;

        if (rc == SQLLOCK_OK && len > 4 &&
            strcmp(name + len - 4, ".cnf") == 0) {
            path = malloc(strlen(dir) + len + 2);
            if (path == NULL) {
                rc = sqllock_dberr_set(r->err, SQLLOCK_ENOMEM, "",
                                       "out of memory");
            } else {
                sprintf(path, "%s/%s", dir, name);
                rc = read_file(r, path, 0, depth + 1);
                free(path);
            }
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

/* A "!include FILE" or "!includedir DIR" line (p after the '!'); other
 * directives are ignored, as MySQL ignores them. */
static int directive(reader *r, char *p, const char *path, long line,
                     int depth)
{
    char *end;
    int dir;

    while (is_space(*p))
        p++;
    if (strncmp(p, "includedir", 10) == 0 &&
        (is_space(p[10]) || p[10] == '\0')) {
        dir = 1;
        p += 10;
    } else if (strncmp(p, "include", 7) == 0 &&
               (is_space(p[7]) || p[7] == '\0')) {
        dir = 0;
        p += 7;
    } else {
        return SQLLOCK_OK;
    }
    while (is_space(*p))
        p++;
    end = p + strlen(p);
    while (end > p && is_space(end[-1]))
        end--;
    *end = '\0';
    if (*p == '\0')
        return sqllock_dberr_set(r->err, SQLLOCK_EURL, "", "option file %s, "
                                 "line %ld: !include%s without a path", path,
                                 line, dir ? "dir" : "");
    if (depth >= OPTFILE_MAX_DEPTH)
        return sqllock_dberr_set(r->err, SQLLOCK_EURL, "", "option file %s, "
                                 "line %ld: !include nested more than %d "
                                 "deep", path, line, OPTFILE_MAX_DEPTH);
    if (dir)
        return read_dir(r, p, path, line, depth);
    return read_file(r, p, 0, depth + 1);
}

/* One line of the file, without its newline. `in_group`: the line is in
 * a group whose options are read; `seen_group`: a group came before. */
static int read_line(reader *r, char *p, const char *path, long line,
                     int depth, int *in_group, int *seen_group)
{
    char *end, *eq;

    while (is_space(*p))
        p++;
    if (*p == '\0' || *p == '#' || *p == ';')
        return SQLLOCK_OK;
    if (*p == '!')
        return directive(r, p + 1, path, line, depth);
    if (*p == '[') {
        end = strchr(++p, ']');
        if (end == NULL)
            return sqllock_dberr_set(r->err, SQLLOCK_EURL, "", "option file "
                                     "%s, line %ld: a group name without "
                                     "']'", path, line);
        while (end > p && is_space(end[-1]))
            end--;
        while (is_space(*p))
            p++;
        *end = '\0';
        *seen_group = 1;
        *in_group = wanted_group(r, p);
        return SQLLOCK_OK;
    }
    if (!*seen_group)
        return sqllock_dberr_set(r->err, SQLLOCK_EURL, "", "option file %s, "
                                 "line %ld: an option before the first "
                                 "[group] line", path, line);
    if (!*in_group)
        return SQLLOCK_OK;
    cut_comment(p);
    eq = strchr(p, '=');
    end = eq != NULL ? eq : p + strlen(p);
    while (end > p && is_space(end[-1]))
        end--;
    *end = '\0';
    if (*p == '\0')
        return SQLLOCK_OK;      /* "= value": no name, nothing of ours */
    return take_option(r, path, line, p,
                       eq != NULL ? decode_value(eq + 1) : NULL);
}

static int read_file(reader *r, const char *path, int missing_ok, int depth)
{
    struct stat st;
    FILE *fp;
    char *buf = NULL;
    size_t cap = 0;
    ssize_t len;
    long line = 0;
    int fd, rc = SQLLOCK_OK, in_group = 0, seen_group = 0;

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (missing_ok && (errno == ENOENT || errno == ENOTDIR))
            return SQLLOCK_OK;
        /* The URL's option_file= that names no file it can open may be
         * a password pasted into the wrong parameter: it is not quoted
         * (DESIGN C4). A file that opens is a file, and is named. */
        if (depth == 0 && !missing_ok)
            return sqllock_dberr_set(r->err, SQLLOCK_EURL, "", "cannot "
                                     "read the option file that "
                                     "option_file= names: %s (the value is "
                                     "not shown, in case it is a secret)",
                                     strerror(errno));
        return sqllock_dberr_set(r->err, SQLLOCK_EURL, "", "cannot read the "
                                 "option file %s: %s", path, strerror(errno));
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return sqllock_dberr_set(r->err, SQLLOCK_EURL, "", "the option file "
                                 "%s is not a regular file", path);
    }
    if (st.st_mode & S_IWOTH) {
        close(fd);
        return sqllock_dberr_set(r->err, SQLLOCK_EURL, "", "the option file "
                                 "%s may be written by anyone: MySQL's "
                                 "clients ignore such a file and sqllock "
                                 "refuses it (chmod o-w, or better 600)",
                                 path);
    }
    fp = fdopen(fd, "r");
    if (fp == NULL) {
        close(fd);
        return sqllock_dberr_set(r->err, SQLLOCK_ENOMEM, "", "out of memory");
    }
    while (rc == SQLLOCK_OK && (len = getline(&buf, &cap, fp)) >= 0) {
        line++;
        while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
            buf[--len] = '\0';
        rc = read_line(r, buf, path, line, depth, &in_group, &seen_group);
        wipe(buf, cap);
    }
    if (rc == SQLLOCK_OK && ferror(fp))
        rc = sqllock_dberr_set(r->err, SQLLOCK_EURL, "", "cannot read the "
                               "option file %s: %s", path, strerror(errno));
    if (buf != NULL) {
        wipe(buf, cap);
        free(buf);
    }
    fclose(fp);
    if (rc == SQLLOCK_OK)
        r->out->files++;
    return rc;
}

int sqllock__my_optfile_read(const char *path, const char *group,
                             int missing_ok, my_optfile *out,
                             sqllock_dberr *err)
{
    reader r;

    r.group = group;
    r.out = out;
    r.err = err;
    return read_file(&r, path, missing_ok, 0);
}
