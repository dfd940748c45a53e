/*
 * redact.c -- sqllock_url_redact(): a database URL as a person may see it.
 *
 * The public face of sqllock__url_redact() (core/url.c), which every
 * message of the library already uses, so that a tool shows a URL with the
 * same secrets hidden as sqllock_errmsg() does.
 */
#include <stdlib.h>

#include "internal.h"

int sqllock_url_redact(const char *url, char **out)
{
    if (out != NULL)
        *out = NULL;
    if (url == NULL || out == NULL)
        return SQLLOCK_EINVAL;
    *out = sqllock__url_redact(url);
    return *out != NULL ? SQLLOCK_OK : SQLLOCK_ENOMEM;
}
