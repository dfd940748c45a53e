/*
 * observe.h -- what the files of test_observe share: the URL of the group
 * running, and the cases of `sqllock watch` (observe/tool.c) with their
 * fixture.
 */
#ifndef SQLLOCK_TEST_OBSERVE_H
#define SQLLOCK_TEST_OBSERVE_H

extern const char *g_url;

int tool_setup(void **state);
int tool_teardown(void **state);
void test_observe_tool_watch_json_count(void **state);
void test_observe_tool_watch_exits(void **state);

#endif
