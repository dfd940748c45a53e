/*
 * history.c -- who runs the tool, for the audit lines of a name's
 * history, and the message of an audit the database refused. The history
 * record itself (its key, its lines, the forced release that writes one
 * in the same transaction as its delete, DESIGN C5) is the library's:
 * sqllock_history_note(), sqllock_history_clear(),
 * sqllock_force_release() (core/history.c).
 */
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "cli.h"

/* "user@host" of whoever runs the tool in `me`; in `who` the same and,
 * on a database with users, " as " and the role marker that becomes the
 * database user it connected as (SQLLOCK_HISTORY_ROLE). */
void cli_who_am_i(sqllock_db *db, char *me, size_t me_size, char *who,
                 size_t who_size)
{
    char host[256];
    struct passwd *pw = getpwuid(getuid());

    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "?");
    host[sizeof host - 1] = '\0';
    snprintf(me, me_size, "%s@%s", pw != NULL ? pw->pw_name : "?", host);
    snprintf(who, who_size, "%s%s", me,
             strcmp(sqllock_db_driver(db), "sqlite") == 0
             ? "" : " as " SQLLOCK_HISTORY_ROLE);
}

/* The message for an audit write the database refused for want of a
 * right: which one, and to whom it is given (docs/credentials.md). */
int cli_audit_refused(sqllock_db *db, int rc, const char *what)
{
    if (rc == SQLLOCK_EPERM)
        return cli_db_error(db, rc, "%s: refused: the audit record could "
                            "not be written, so nothing was changed; the "
                            "operator's role needs SELECT, INSERT and "
                            "UPDATE on sqllock_record besides DELETE on "
                            "sqllock_lease (docs/credentials.md, 'An "
                            "operator role')", what);
    return cli_db_error(db, rc, "%s: nothing was changed", what);
}

