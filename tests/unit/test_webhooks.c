/*
 * test_webhooks.c - the bodies sent to each receiver format.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
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

/* A handoff of 40 long Chinese messages: the WeCom text stays under its
 * 2048 bytes, in whole characters, with the heading and the newest message;
 * the generic body keeps the whole conversation. */
static void test_handoff_text(void **state)
{
    json_t *conv = json_array(), *p;
    char msg[2100];
    char *s, *text_s;
    const char *text;
    json_t *j;
    (void)state;
    for (int i = 0; i < 40; i++) {
        size_t n = 0;
        while (n + 3 < 2000) {
            memcpy(msg + n, "退", 3); /* 3 bytes, so a cut at 300 falls inside one */
            n += 3;
        }
        snprintf(msg + n, sizeof(msg) - n, "%d", i);
        json_array_append_new(conv, json_pack("{s:s,s:s}", "role",
                                              i % 2 && i != 39 ? "assistant" : "user", "content",
                                              i == 39 ? "我要转人工" : msg));
    }
    p = json_pack("{s:s,s:s,s:s,s:s,s:o}", "event", "serve.handoff", "deployment", "helpdesk",
                  "visitor", "203.0.113.9", "message", "", "conversation", conv);
    text_s = json_dumps(p, JSON_COMPACT);
    assert_non_null(text_s);
    s = webhooks_render("wecom", text_s, 0, "");
    assert_non_null(s); /* NULL when the text is not whole UTF-8 */
    j = json_loads(s, 0, NULL);
    assert_non_null(j);
    text = json_string_value(json_object_get(json_object_get(j, "text"), "content"));
    assert_true(strlen(text) <= 2000);
    assert_non_null(strstr(text, "访客请求人工客服"));
    assert_non_null(strstr(text, "helpdesk (203.0.113.9)"));
    assert_non_null(strstr(text, "访客 visitor: 我要转人工"));
    assert_non_null(strstr(text, "\n…\n"));
    json_decref(j);
    free(s);
    s = webhooks_render("generic", text_s, 0, "");
    j = json_loads(s, 0, NULL);
    assert_int_equal(json_array_size(json_object_get(j, "conversation")), 40);
    json_decref(j);
    free(s);
    free(text_s);
    json_decref(p);
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
        cmocka_unit_test(test_handoff_text),
        cmocka_unit_test(test_bad_payload),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
