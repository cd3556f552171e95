/*
 * test_webhooks.c - the bodies sent to each receiver format.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "webhooks.h"

static const char payload[] =
    "{\"event\":\"job.failed\",\"message\":\"rank 1 exited with "
    "3\",\"ts\":\"2026-01-01T00:00:00Z\","
    "\"job\":{\"id\":\"42\",\"name\":\"resnet\",\"team\":\"vision\",\"state\":\"FAILED\"}}";

static json_t *render(const char *format, const char *sign)
{
    char *s = webhooks_render(format, payload, 1700000000, sign);
    json_t *j;

    assert_non_null(s);
    j = json_loads(s, 0, NULL);
    free(s);
    assert_non_null(j);
    return j;
}

static void test_generic_is_the_payload(void **state)
{
    json_t *j = render("generic", "");
    (void)state;
    assert_string_equal(json_string_value(json_object_get(j, "event")), "job.failed");
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "job"), "id")), "42");
    json_decref(j);
}

static void test_chat_formats(void **state)
{
    const char *formats[] = {"wecom", "dingtalk"};
    json_t *j;
    const char *text;
    (void)state;
    for (int i = 0; i < 2; i++) {
        j = render(formats[i], "");
        assert_string_equal(json_string_value(json_object_get(j, "msgtype")), "text");
        text = json_string_value(json_object_get(json_object_get(j, "text"), "content"));
        assert_non_null(strstr(text, "训练作业失败"));
        assert_non_null(strstr(text, "job failed"));
        assert_non_null(strstr(text, "#42 resnet"));
        assert_non_null(strstr(text, "rank 1 exited with 3"));
        json_decref(j);
    }
    j = render("feishu", "c2lnbg==");
    assert_string_equal(json_string_value(json_object_get(j, "msg_type")), "text");
    assert_non_null(strstr(
        json_string_value(json_object_get(json_object_get(j, "content"), "text")), "team vision"));
    assert_string_equal(json_string_value(json_object_get(j, "timestamp")), "1700000000");
    assert_string_equal(json_string_value(json_object_get(j, "sign")), "c2lnbg==");
    json_decref(j);
}

static void test_bad_payload(void **state)
{
    (void)state;
    assert_null(webhooks_render("generic", "{not json", 0, ""));
    assert_null(webhooks_render("carrier-pigeon", payload, 0, ""));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_generic_is_the_payload),
        cmocka_unit_test(test_chat_formats),
        cmocka_unit_test(test_bad_payload),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
