/*
 * addon.c -- the module's entry point and its synchronous helpers: the
 * status table, the clock, durations. Every call that may block is a job
 * of conn.c; what is here returns at once.
 */
#include <stdio.h>
#include <string.h>

#include "addon.h"

napi_value make_error(napi_env env, int status, const char *msg)
{
    napi_value text, err, st;
    napi_create_string_utf8(env, msg ? msg : sqllock_strerror(status),
                            NAPI_AUTO_LENGTH, &text);
    napi_create_error(env, NULL, text, &err);
    napi_create_int32(env, status, &st);
    napi_set_named_property(env, err, "status", st);
    return err;
}

napi_value throw_status(napi_env env, int status, const char *msg)
{
    napi_throw(env, make_error(env, status, msg));
    return NULL;
}

/* statuses() -> [[code, name, text, retryable], ...] for every code of the
 * library's table (SQLLOCK_STATUS_MAP), walked through sqllock_errname()
 * so that a code added to the library appears without a change here. */
static napi_value Statuses(napi_env env, napi_callback_info info)
{
    napi_value out, row, v;
    (void)info;
    NAPI_CALL(env, napi_create_array(env, &out));
    uint32_t k = 0;
    for (int code = 0; code < 1000; code++) {
        const char *name = sqllock_errname(code);
        if (strcmp(name, "SQLLOCK_UNKNOWN") == 0)
            continue;
        napi_create_array_with_length(env, 4, &row);
        napi_create_int32(env, code, &v);
        napi_set_element(env, row, 0, v);
        napi_create_string_utf8(env, name + strlen("SQLLOCK_"),
                                NAPI_AUTO_LENGTH, &v);
        napi_set_element(env, row, 1, v);
        napi_create_string_utf8(env, sqllock_strerror(code),
                                NAPI_AUTO_LENGTH, &v);
        napi_set_element(env, row, 2, v);
        napi_get_boolean(env, sqllock_retryable(code), &v);
        napi_set_element(env, row, 3, v);
        napi_set_element(env, out, k++, row);
    }
    return out;
}

/* nowUs() -> number: sqllock_now_us(), the clock of local deadlines and of
 * the interop workers' lines. */
static napi_value NowUs(napi_env env, napi_callback_info info)
{
    napi_value v;
    (void)info;
    NAPI_CALL(env, napi_create_double(env, (double)sqllock_now_us(), &v));
    return v;
}

/* parseDuration(text) -> ms, or throws EINVAL saying why. */
static napi_value ParseDuration(napi_env env, napi_callback_info info)
{
    size_t argc = 1, len;
    napi_value argv[1], v;
    char text[128];
    NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    if (argc < 1 || napi_get_value_string_utf8(env, argv[0], text,
                                               sizeof text, &len) != napi_ok) {
        napi_throw_type_error(env, NULL, "a duration text is required");
        return NULL;
    }
    int64_t ms = 0;
    const char *why = NULL;
    if (len >= sizeof text - 1 ||
        sqllock_parse_duration_why(text, &ms, &why) != SQLLOCK_OK) {
        char msg[300];
        snprintf(msg, sizeof msg, "bad duration '%.100s': %s", text,
                 why ? why : "too long");
        return throw_status(env, SQLLOCK_EINVAL, msg);
    }
    NAPI_CALL(env, napi_create_double(env, (double)ms, &v));
    return v;
}

static napi_value Version(napi_env env, napi_callback_info info)
{
    napi_value v;
    (void)info;
    NAPI_CALL(env, napi_create_string_utf8(env, sqllock_version_string(),
                                           NAPI_AUTO_LENGTH, &v));
    return v;
}

static void set_int(napi_env env, napi_value o, const char *k, int64_t n)
{
    napi_value v;
    napi_create_double(env, (double)n, &v);
    napi_set_named_property(env, o, k, v);
}

static napi_value Init(napi_env env, napi_value exports)
{
    napi_property_descriptor props[] = {
        { "statuses", NULL, Statuses, NULL, NULL, NULL, napi_default, NULL },
        { "nowUs", NULL, NowUs, NULL, NULL, NULL, napi_default, NULL },
        { "parseDuration", NULL, ParseDuration, NULL, NULL, NULL,
          napi_default, NULL },
        { "version", NULL, Version, NULL, NULL, NULL, napi_default, NULL },
    };
    NAPI_CALL(env, napi_define_properties(env, exports,
                                          sizeof props / sizeof props[0],
                                          props));
    if (conn_init(env, exports) == NULL || leader_init(env, exports) == NULL ||
        inspect_init(env, exports) == NULL)
        return NULL;
    napi_value ops;
    NAPI_CALL(env, napi_create_object(env, &ops));
    static const struct { const char *name; int op; } table[] = {
        { "OPEN", OP_OPEN }, { "CLOSE", OP_CLOSE }, { "ACQUIRE", OP_ACQUIRE },
        { "RELEASE", OP_RELEASE }, { "RENEW", OP_RENEW }, { "EXEC", OP_EXEC },
        { "TXN_BEGIN", OP_TXN_BEGIN }, { "TXN_LOCK", OP_TXN_LOCK },
        { "TXN_COMMIT", OP_TXN_COMMIT }, { "TXN_ROLLBACK", OP_TXN_ROLLBACK },
        { "REC_GET", OP_REC_GET }, { "REC_CREATE", OP_REC_CREATE },
        { "REC_CAS", OP_REC_CAS }, { "REC_DELETE", OP_REC_DELETE },
        { "GUARD", OP_GUARD }, { "LOOKUP", OP_LOOKUP },
        { "SEM_COUNT", OP_SEM_COUNT }, { "LEADER_GET", OP_LEADER_GET },
        { "LEADER_START", OP_LEADER_START },
        { "LEADER_RESIGN", OP_LEADER_RESIGN },
        { "LEADER_STOP", OP_LEADER_STOP }, { "BENCH_C", OP_BENCH_C },
        { "ACQUIRE_MANY", OP_ACQUIRE_MANY },
        { "RELEASE_MANY", OP_RELEASE_MANY },
        { "TXN_LOCK_ROWS", OP_TXN_LOCK_ROWS }, { "LIST", OP_LIST },
        { "FORCE", OP_FORCE }, { "REAP", OP_REAP },
        { "REAPER_START", OP_REAPER_START }, { "REAPER_STOP", OP_REAPER_STOP },
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        set_int(env, ops, table[i].name, table[i].op);
    NAPI_CALL(env, napi_set_named_property(env, exports, "ops", ops));
    set_int(env, exports, "SLICE_MS", SLICE_MS);
    set_int(env, exports, "ABORTED", ST_ABORTED);
    set_int(env, exports, "NAME_MAX", SQLLOCK_NAME_MAX);
    set_int(env, exports, "PRIMITIVE_NAME_MAX", SQLLOCK_PRIMITIVE_NAME_MAX);
    set_int(env, exports, "LEASE_FAIR", SQLLOCK_LEASE_FAIR);
    set_int(env, exports, "LEASE_MANY_MAX", SQLLOCK_LEASE_MANY_MAX);
    return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
