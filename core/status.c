/*
 * status.c -- names and sentences for status codes, and the version.
 * Both tables come from SQLLOCK_STATUS_MAP in sqllock.h, so a code cannot
 * be added to the enum and forgotten here.
 */
#include "internal.h"

#define SQLLOCK_STR_(x) #x
#define SQLLOCK_XSTR_(x) SQLLOCK_STR_(x)

const char *sqllock_version_string(void)
{
    return SQLLOCK_XSTR_(SQLLOCK_VERSION_MAJOR) "."
           SQLLOCK_XSTR_(SQLLOCK_VERSION_MINOR) "."
           SQLLOCK_XSTR_(SQLLOCK_VERSION_PATCH);
}

const char *sqllock_strerror(int status)
{
    switch (status) {
#define SQLLOCK_STATUS_TEXT_(name, code, text) case code: return text;
        SQLLOCK_STATUS_MAP(SQLLOCK_STATUS_TEXT_)
#undef SQLLOCK_STATUS_TEXT_
    }
    return "unknown status code";
}

const char *sqllock_errname(int status)
{
    switch (status) {
#define SQLLOCK_STATUS_NAME_(name, code, text) case code: return "SQLLOCK_" #name;
        SQLLOCK_STATUS_MAP(SQLLOCK_STATUS_NAME_)
#undef SQLLOCK_STATUS_NAME_
    }
    return "SQLLOCK_UNKNOWN";
}

int sqllock_retryable(int status)
{
    switch (status) {
    case SQLLOCK_BUSY:
    case SQLLOCK_TIMEOUT:
    case SQLLOCK_CONFLICT:
    case SQLLOCK_EDBBUSY:
    case SQLLOCK_ELOCKED:
    case SQLLOCK_EDEADLOCK:
    case SQLLOCK_ESERIALIZATION:
        return 1;
    default:
        return 0;
    }
}
