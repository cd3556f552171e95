/*
 * msg.h - the command line's message catalogue: every line the CLI itself
 * writes for a person (errors, confirmations, table headers, help) in
 * English and in Chinese (zh-CN), chosen by the user's locale.
 *
 * A message is an id (enum cli_msg) naming a printf format in both
 * languages. Both formats of one id take the same conversions in the same
 * order (tests/unit/test_cli_msg.c checks it), so a caller's arguments fit
 * whichever is printed. What the server says (its error messages, job
 * names, states) is printed as it came, untranslated.
 *
 * Language: Chinese when the first set of LC_ALL, LC_MESSAGES, LANG starts
 * with "zh", English otherwise (C, POSIX and unset too: scripts and logs
 * read the same everywhere). Template names keep their own rule
 * (submit.h cli_user_lang: the product's first language unless "en").
 *
 * Thread-safety: reentrant; nothing but getenv() is read.
 */
#ifndef TY_CLI_MSG_H
#define TY_CLI_MSG_H

#include <stdio.h>

#include "err.h"

/* X(id, English, Chinese): formats; keep the conversions identical. */
#define CLI_MESSAGES(X)                                                                            \
    X(M_OOM, "out of memory", "内存不足")                                                          \
    X(M_UNREACHABLE, "cannot reach the server at %s: %s", "无法连接服务器 %s：%s")                 \
    X(M_REPLY_TOO_BIG, "the server's reply is over %d bytes", "服务器的回复超过 %d 字节")          \
    X(M_BAD_REPLY, "the server's reply is not the expected JSON", "服务器的回复不是预期的 JSON")   \
    X(M_BAD_URL, "the server URL must start with http:// or https:// (got %s)",                    \
      "服务器地址必须以 http:// 或 https:// 开头（收到 %s）")                                      \
    X(M_HINT_LOGIN, "run 'trainyard login', or set TRAINYARD_TOKEN to an API token",               \
      "请运行 'trainyard login'，或把 TRAINYARD_TOKEN 设为 API 令牌")                              \
    X(M_UNKNOWN_OPTION, "unknown option %s", "未知选项 %s")                                        \
    X(M_NEEDS_VALUE, "%s needs a value", "%s 需要一个值")                                          \
    X(M_SEE_HELP, "'trainyard %s --help' describes the options",                                   \
      "'trainyard %s --help' 列出全部选项")                                                        \
    X(M_UNKNOWN_COMMAND, "unknown command %s", "未知命令 %s")                                      \
    X(M_EXTRA_ARG, "unexpected argument %s", "多余的参数 %s")                                      \
    X(M_REQUIRED, "%s is required", "缺少 %s")                                                     \
    X(M_BAD_INT, "%s must be an integer from %ld to %ld (got %s)",                                 \
      "%s 必须是 %ld 到 %ld 之间的整数（收到 %s）")                                                \
    X(M_READ_FILE, "cannot read %s: %s", "无法读取 %s：%s")                                        \
    X(M_WRITE_FILE, "cannot write %s: %s", "无法写入 %s：%s")                                      \
    X(M_NOT_JSON, "%s is not a JSON object: %s (line %d)", "%s 不是 JSON 对象：%s（第 %d 行）")    \
    X(M_NO_HOME, "neither XDG_CONFIG_HOME nor HOME is set: no place for the login file",           \
      "XDG_CONFIG_HOME 和 HOME 都未设置：无处保存登录文件")                                        \
    X(M_CFG_LINE, "%s, line %d: %s", "%s 第 %d 行：%s")                                            \
    X(M_CFG_SYNTAX, "not KEY=VALUE", "不是 KEY=VALUE 格式")                                        \
    X(M_CFG_KEY, "unknown key", "未知的键")                                                        \
    X(M_CFG_LONG, "too long", "过长")                                                              \
    X(M_CFG_DUP, "key given twice", "键重复")                                                      \
    X(M_CFG_TEXT, "not UTF-8 text", "不是 UTF-8 文本")                                             \
    X(M_CFG_MODE, "%s can be read by others (mode %03o): run chmod 600 %s",                        \
      "%s 可被他人读取（权限 %03o）：请运行 chmod 600 %s")                                         \
    X(M_W_SUBMIT, "the server refused the job", "服务器拒绝了该作业")                              \
    X(M_W_TEMPLATE, "cannot read the template", "无法读取模板")                                    \
    X(M_W_TEMPLATES, "cannot list the templates", "无法列出模板")                                  \
    X(M_W_JOBS, "cannot list the jobs", "无法列出作业")                                            \
    X(M_W_JOB, "cannot read the job", "无法读取作业")                                              \
    X(M_W_LOGS, "cannot read the logs", "无法读取日志")                                            \
    X(M_W_CANCEL, "cannot cancel the job", "无法取消作业")                                         \
    X(M_W_NODES, "cannot list the nodes", "无法列出节点")                                          \
    X(M_W_NODE, "cannot change the node", "无法更改节点状态")                                      \
    X(M_W_ADVISOR, "the advisor refused the request", "资源顾问拒绝了该请求")                      \
    X(M_W_TOKENS, "cannot list the tokens", "无法列出令牌")                                        \
    X(M_W_DEPLOY, "the server refused the deployment", "服务器拒绝了该部署")                       \
    X(M_W_DEPLOYMENTS, "cannot list the deployments", "无法列出部署")                              \
    X(M_W_DEPLOYMENT, "cannot read or change the deployment", "无法读取或修改该部署")              \
    X(M_W_CHAT, "the gateway refused the chat", "网关拒绝了对话")                                  \
    X(M_CHAT_NO_KEY, "no key for the gateway: give --key KEY or set TRAINYARD_API_KEY",            \
      "没有网关密钥：请使用 --key KEY 或设置 TRAINYARD_API_KEY")                                   \
    X(M_CHAT_CUT, "the answer was cut off", "回答中断")                                            \
    X(M_BAD_MODEL_REF, "MODEL must be NAME, NAME:VERSION or NAME@ALIAS (got %s)",                  \
      "MODEL 必须是 NAME、NAME:VERSION 或 NAME@ALIAS（收到 %s）")                                  \
    X(M_DEPLOYMENT_LINE, "deployment %s: %s, model %s version %s, %s of %s replicas ready",        \
      "部署 %s：%s，模型 %s 版本 %s，%s/%s 个副本就绪")                                            \
    X(M_W_TOKEN_CREATE, "cannot create the token", "无法创建令牌")                                 \
    X(M_W_TOKEN_REVOKE, "cannot revoke the token", "无法吊销令牌")                                 \
    X(M_W_JOIN_TOKENS, "cannot list the join tokens", "无法列出加入令牌")                          \
    X(M_W_JOIN_TOKEN_CREATE, "cannot create the join token", "无法创建加入令牌")                   \
    X(M_W_JOIN_TOKEN_REVOKE, "cannot revoke the join token", "无法吊销加入令牌")                   \
    X(M_W_LOGIN, "cannot sign in", "登录失败")                                                     \
    X(M_W_EXPORT, "cannot export the audit log", "无法导出审计日志")                               \
    X(M_W_MODELS, "cannot list the models", "无法列出模型")                                        \
    X(M_W_MODEL, "cannot read the model", "无法读取模型")                                          \
    X(M_W_MODEL_REGISTER, "the server refused the registration", "服务器拒绝了该注册")             \
    X(M_W_MODEL_ALIAS, "cannot change the alias", "无法更改别名")                                  \
    X(M_MORE_MODELS, "more: --cursor %s", "更多：--cursor %s")                                     \
    X(M_MODEL_HEAD, "model %s (team %s, site %s), aliases: %s",                                    \
      "模型 %s（团队 %s，站点 %s），别名：%s")                                                     \
    X(M_MODEL_REGISTERED, "model %s version %s registered: %s files, manifest %s",                 \
      "模型 %s 版本 %s 已注册：%s 个文件，清单 %s")                                                \
    X(M_LINEAGE_WARNING,                                                                           \
      "its lineage is incomplete (a dataset has no digest): deploying it needs an admin's "        \
      "override",                                                                                  \
      "其血缘不完整（某个数据集没有摘要）：部署需要管理员批准")                                    \
    X(M_LINEAGE_COMPLETE, "complete", "完整")                                                      \
    X(M_LINEAGE_INCOMPLETE, "incomplete", "不完整")                                                \
    X(M_ALIAS_SET, "alias %s of %s now points at version %s", "别名 %s（模型 %s）已指向版本 %s")   \
    X(M_ALIAS_MOVED, "alias %s of %s moved to version %s (was %s)",                                \
      "别名 %s（模型 %s）已移到版本 %s（原为 %s）")                                                \
    X(M_ALIAS_DELETED, "alias %s of %s removed (it pointed at version %s)",                        \
      "别名 %s（模型 %s）已删除（原指向版本 %s）")                                                 \
    X(M_SUBMITTED_TPL, "job %s submitted: %s (template %s), %s",                                   \
      "作业 %s 已提交：%s（模板 %s），%s")                                                         \
    X(M_SUBMITTED, "job %s submitted: %s, %s", "作业 %s 已提交：%s，%s")                           \
    X(M_W_ME, "cannot read your teams", "无法读取您所在的团队")                                    \
    X(M_TEAM_CHOOSE, "you are in several teams (%s): choose one with --team",                      \
      "您属于多个团队（%s）：请用 --team 选择一个")                                                \
    X(M_FILE_OR_TEMPLATE, "give a job file or --template, not both",                               \
      "作业文件与 --template 只能二选一")                                                          \
    X(M_NEED_SPEC,                                                                                 \
      "--template ID is required ('trainyard templates' lists them), or a job file (- for stdin)", \
      "需要 --template ID（'trainyard templates' 列出全部模板）或作业文件（- 读标准输入）")        \
    X(M_NOT_UTF8, "%s: the value is not valid UTF-8", "%s：值不是有效的 UTF-8")                    \
    X(M_PARAM_KV, "--param wants NAME=VALUE (got %s)", "--param 需要 NAME=VALUE 格式（收到 %s）")  \
    X(M_PARAM_LONG, "--param name is over %d characters", "--param 名称超过 %d 个字符")            \
    X(M_PARAM_CHARS, "--param name %.*s: letters, digits and _ only",                              \
      "--param 名称 %.*s：只能包含字母、数字和 _")                                                 \
    X(M_PARAM_TWICE, "--param %.*s given twice", "--param %.*s 重复给出")                          \
    X(M_PARAM_MAX, "at most %d --param", "--param 最多 %d 个")                                     \
    X(M_GPUS, "--gpus wants a whole number from 1 to %d (got %s)",                                 \
      "--gpus 必须是 1 到 %d 之间的整数（收到 %s）")                                               \
    X(M_DATASET_EMPTY, "--dataset needs a path or a registered name",                              \
      "--dataset 需要路径或已登记的数据集名称")                                                    \
    X(M_DATASET_MAX, "at most %d --dataset", "--dataset 最多 %d 个")                               \
    X(M_BARE_PARAM, "unexpected argument %s (parameters go as --param %s)",                        \
      "多余的参数 %s（参数请写成 --param %s）")                                                    \
    X(M_FILE_TPL_OPTS,                                                                             \
      "--param, --dataset, --gpus, --team and --name go with --template; a job file says them "    \
      "itself",                                                                                    \
      "--param、--dataset、--gpus、--team 和 --name 只用于 --template；作业文件自己给出这些值")    \
    X(M_CANCELLED, "job %s: cancel requested, %s", "作业 %s：已请求取消，%s")                      \
    X(M_DRAINING, "node %s is draining: no new work is placed on it",                              \
      "节点 %s 正在排空：不再分配新任务")                                                          \
    X(M_READY, "node %s is ready", "节点 %s 已就绪")                                               \
    X(M_NO_NODE, "no node named %s", "没有名为 %s 的节点")                                         \
    X(M_LOGIN_OK, "signed in to %s as %s (%s); the token is in %s",                                \
      "已登录 %s，用户 %s（%s）；令牌保存在 %s")                                                   \
    X(M_LOGOUT_OK, "signed out of %s: the token is revoked and %s removed",                        \
      "已退出 %s：令牌已吊销，%s 已删除")                                                          \
    X(M_LOGOUT_LOCAL, "%s removed; the server did not revoke the token",                           \
      "%s 已删除；服务器未吊销该令牌")                                                             \
    X(M_NOT_LOGGED_IN, "not signed in (no %s)", "未登录（没有 %s）")                               \
    X(M_PROMPT_USER, "username: ", "用户名：")                                                     \
    X(M_PROMPT_PASSWORD, "password for %s at %s: ", "%s 在 %s 的密码：")                           \
    X(M_NO_PASSWORD, "no password given", "未提供密码")                                            \
    X(M_TOKEN_CREATED,                                                                             \
      "token %s created (%s); it is shown this once:", "令牌 %s 已创建（%s）；只显示这一次：")     \
    X(M_TOKEN_REVOKED, "token %s revoked", "令牌 %s 已吊销")                                       \
    X(M_JOIN_TOKEN_CREATED, "join token %s created (expires %s); it is shown this once:",          \
      "加入令牌 %s 已创建（过期时间 %s）；只显示这一次：")                                         \
    X(M_JOIN_TOKEN_REVOKED, "join token %s revoked", "加入令牌 %s 已吊销")                         \
    X(M_EXPORT_DONE, "audit export written to %s", "审计导出已写入 %s")                            \
    X(M_LOGS_END, "job %s ended: %s", "作业 %s 已结束：%s")                                        \
    X(M_STREAM_CUT, "the log stream was cut (%s); reconnecting", "日志流中断（%s）；正在重连")     \
    X(M_KEY_NEEDS_FILE, "--public-key needs a file", "--public-key 需要一个文件")                  \
    X(M_ONE_EXPORT, "one export at a time (got %s and %s)",                                        \
      "一次只能校验一个导出文件（收到 %s 和 %s）")                                                 \
    X(M_KEY_OPEN, "cannot open public key %s: %s", "无法打开公钥 %s：%s")                          \
    X(M_KEY_READ, "cannot read public key %s: %s", "无法读取公钥 %s：%s")                          \
    X(M_KEY_BIG, "public key %s is larger than %d bytes", "公钥 %s 超过 %d 字节")                  \
    X(M_KEY_BAD, "public key %s: %s", "公钥 %s：%s")                                               \
    X(M_RING_BAD, "key ring %s: %s", "密钥环 %s：%s")                                              \
    X(M_OPEN_FILE, "cannot open %s: %s", "无法打开 %s：%s")                                        \
    X(M_FILE_WHAT, "%s: %s", "%s：%s")                                                             \
    X(M_UNKNOWN_SUB, "unknown audit subcommand %s", "未知的 audit 子命令 %s")                      \
    X(M_NONE, "(none)", "（无）")                                                                  \
    X(H_ID, "ID", "编号")                                                                          \
    X(H_NAME, "NAME", "名称")                                                                      \
    X(H_TEAM, "TEAM", "团队")                                                                      \
    X(H_USER, "USER", "用户")                                                                      \
    X(H_STATE, "STATE", "状态")                                                                    \
    X(H_GPUS, "GPUS", "GPU")                                                                       \
    X(H_CREATED, "CREATED", "创建时间")                                                            \
    X(H_INDUSTRY, "INDUSTRY", "行业")                                                              \
    X(H_HOST, "HOST", "主机")                                                                      \
    X(H_USED, "USED", "已用")                                                                      \
    X(H_SITE, "SITE", "站点")                                                                      \
    X(H_LAST_SEEN, "LAST SEEN", "最近心跳")                                                        \
    X(H_EXPIRES, "EXPIRES", "过期时间")                                                            \
    X(H_LAST_USED, "LAST USED", "最近使用")                                                        \
    X(H_REVOKED, "REVOKED", "已吊销")                                                              \
    X(H_NODE, "NODE", "节点")                                                                      \
    X(H_POS, "POS", "位置")                                                                        \
    X(H_PRIO, "PRIO", "优先级")                                                                    \
    X(H_EST_START, "ESTIMATED START", "预计开始")                                                  \
    X(H_RUN, "RUN", "预计运行")                                                                    \
    X(H_MODEL, "MODEL", "模型")                                                                    \
    X(H_READY, "READY", "就绪")                                                                    \
    X(H_ATTEMPT, "ATTEMPT", "尝试")                                                                \
    X(H_WHY, "WHY IT WAITS", "等待原因")                                                           \
    X(H_LATEST, "LATEST", "最新")                                                                  \
    X(H_VERSIONS, "VERSIONS", "版本数")                                                            \
    X(H_ALIASES, "ALIASES", "别名")                                                                \
    X(H_VERSION, "VERSION", "版本")                                                                \
    X(H_SOURCE, "SOURCE", "来源")                                                                  \
    X(H_JOB, "JOB", "作业")                                                                        \
    X(H_STEP, "STEP", "步数")                                                                      \
    X(H_SERVE, "SERVE", "服务类型")                                                                \
    X(H_FILES, "FILES", "文件数")                                                                  \
    X(H_MANIFEST, "MANIFEST", "清单")                                                              \
    X(H_LINEAGE, "LINEAGE", "血缘")                                                                \
    X(M_UNKNOWN, "unknown", "未知")                                                                \
    X(M_FORECAST_OF, "forecast of %s", "预测时间 %s")                                              \
    X(M_FORECAST_NONE, "(none yet: the scheduler has not made one)",                               \
      "（暂无：调度器尚未做出预测）")                                                              \
    X(M_QUEUE_MORE, "%zu of %lld shown; the next page: --cursor %s (or --all)",                    \
      "已显示 %zu 个，共 %lld 个；下一页：--cursor %s（或 --all）")                                \
    X(Q_NONE, "starts at the next pass", "下一轮调度即开始")                                       \
    X(Q_GPUS, "waiting for GPUs: needs %lld, %lld free where it fits",                             \
      "等待 GPU：需要 %lld 张，可放置处空闲 %lld 张")                                              \
    X(Q_QUOTA, "its team is over quota", "所在团队超出配额")                                       \
    X(Q_BEHIND, "behind job %s", "排在作业 %s 之后")                                               \
    X(Q_BEHIND_ANY, "behind higher-priority or earlier jobs", "排在更高优先级或更早的作业之后")    \
    X(Q_RESERVED, "the GPUs it could use are reserved for job %s",                                 \
      "它可用的 GPU 已为作业 %s 预留")                                                             \
    X(Q_RESERVED_ANY, "the GPUs it could use are reserved for another job",                        \
      "它可用的 GPU 已为其他作业预留")                                                             \
    X(Q_SITE_SMALL, "its site has too few nodes of that size: never starts",                       \
      "所在站点这种规模的节点不够：永远无法开始")                                                  \
    X(Q_DRAINING, "the only nodes that fit are draining", "能容纳它的节点都在排空")                \
    X(K_PRIORITY, "priority", "优先级")                                                            \
    X(K_RESTARTS, "restarts", "重启次数")                                                          \
    X(K_REASON, "reason", "原因")                                                                  \
    X(K_STARTED, "started", "开始时间")                                                            \
    X(K_FINISHED, "finished", "结束时间")                                                          \
    X(K_COMMAND, "command", "命令")                                                                \
    X(K_DROPPED, "output lines dropped", "丢弃的输出行数")                                         \
    X(K_STRATEGY, "strategy", "并行策略")                                                          \
    X(K_STATUS, "status", "结论")                                                                  \
    X(K_PRECISION, "precision", "精度")                                                            \
    X(K_BATCH, "batch", "批大小")                                                                  \
    X(K_MEMORY, "memory per GPU", "每张 GPU 显存")                                                 \
    X(K_STEP, "step", "每步耗时")                                                                  \
    X(K_WARNING, "warning", "警告")                                                                \
    X(S_LOGIN, "sign in and store a token in ~/.config/trainyard",                                 \
      "登录并把令牌保存到 ~/.config/trainyard")                                                    \
    X(S_LOGOUT, "revoke the stored token and remove it", "吊销并删除保存的令牌")                   \
    X(S_SUBMIT, "submit a job from a JSON file or a template", "从 JSON 文件或模板提交作业")       \
    X(S_LS, "list jobs", "列出作业")                                                               \
    X(S_SHOW, "show one job", "查看一个作业")                                                      \
    X(S_LOGS, "print a job's logs (-f follows them)", "查看作业日志（-f 持续跟踪）")               \
    X(S_CANCEL, "cancel a job", "取消作业")                                                        \
    X(S_QUEUE, "the queue: estimated starts and why each job waits",                               \
      "队列：预计开始时间及每个作业等待的原因")                                                    \
    X(S_NODES, "list the nodes and their GPUs; their join tokens", "列出节点及其 GPU；加入令牌")   \
    X(S_DRAIN, "stop placing work on a node", "停止向节点分配任务")                                \
    X(S_UNDRAIN, "place work on a drained node again", "恢复向已排空节点分配任务")                 \
    X(S_TEMPLATES, "list the server's job templates", "列出服务器上的作业模板")                    \
    X(S_ADVISOR, "ask the advisor for a parallel strategy", "向资源顾问询问并行策略")              \
    X(S_TOKENS, "list, create or revoke API tokens", "列出、创建或吊销 API 令牌")                  \
    X(S_DEPLOY, "deploy a model version as a service", "把模型版本部署为服务")                     \
    X(S_DEPLOYMENTS, "list deployments; show, scale, stop or start one",                           \
      "列出部署；查看、扩缩、停止或启动某个部署")                                                  \
    X(S_CANARY, "send a share of a deployment's requests to another version; promote it",          \
      "把部署的一部分请求发往另一个版本（金丝雀）；或将其转正")                                    \
    X(S_ROLLBACK, "send a deployment's canary nothing and stop its replicas",                      \
      "让部署的金丝雀版本不再接收请求，并停止其副本")                                              \
    X(S_MODELS, "list, show and register models; move their aliases",                              \
      "列出、查看和注册模型；调整别名")                                                            \
    X(S_CHAT, "chat with a deployment through the gateway", "通过网关与部署的模型对话")            \
    X(S_AUDIT, "export the audit log, or verify an export offline",                                \
      "导出审计日志，或离线校验导出文件")                                                          \
    X(S_VERSION, "print the version", "显示版本")                                                  \
    X(S_HELP, "print this help", "显示本帮助")                                                     \
    X(HELP_USAGE, "usage: trainyard COMMAND [ARGS...]", "用法：trainyard 命令 [参数...]")          \
    X(HELP_COMMANDS, "commands:", "命令：")                                                        \
    X(HELP_MORE, "'trainyard COMMAND --help' describes a command.",                                \
      "'trainyard 命令 --help' 介绍该命令。")                                                      \
    X(HELP_ENV,                                                                                    \
      "The server and token come from TRAINYARD_URL and TRAINYARD_TOKEN when set, else from "      \
      "'trainyard login'.",                                                                        \
      "服务器地址和令牌优先取自 TRAINYARD_URL 和 TRAINYARD_TOKEN，否则取自 'trainyard login'。")   \
    X(HELP_EXIT, "exit status:", "退出码：")                                                       \
    X(HELP_EXIT_0, "success", "成功")                                                              \
    X(HELP_EXIT_1, "other failure (a refused input, a failed verification)",                       \
      "其他失败（输入被拒绝、校验未通过）")                                                        \
    X(HELP_EXIT_2, "usage error, or a local file that cannot be read",                             \
      "用法错误，或本地文件无法读取")                                                              \
    X(HELP_EXIT_3, "not signed in, bad token, or not allowed (401, 403)",                          \
      "未登录、令牌无效或无权限（401、403）")                                                      \
    X(HELP_EXIT_4, "not found (404)", "对象不存在（404）")                                         \
    X(HELP_EXIT_5, "refused by policy or by the current state (403 policy, 409)",                  \
      "被策略或当前状态拒绝（403 策略、409）")                                                     \
    X(HELP_EXIT_6, "the server cannot be reached or fails (5xx)",                                  \
      "无法连接服务器或服务器出错（5xx）")

enum cli_msg {
#define CLI_MSG_ENUM(id, en, zh) id,
    CLI_MESSAGES(CLI_MSG_ENUM)
#undef CLI_MSG_ENUM
        CLI_MSG_COUNT
};

enum cli_lang {
    CLI_LANG_EN = 0,
    CLI_LANG_ZH = 1,
};

/* The language for messages from these locale values (each may be NULL or
 * empty): the first set one starting with "zh" is Chinese, else English. */
enum cli_lang cli_lang_of(const char *lc_all, const char *lc_messages, const char *lang);

/* cli_lang_of() of the environment. */
enum cli_lang cli_lang_env(void);

/* The format of id in lang; a static string, never NULL. */
const char *cli_msg_in(enum cli_msg id, enum cli_lang lang);

/* The format of id in the environment's language. */
const char *cli_msg(enum cli_msg id);

/* "trainyard: " + the message id formatted in the environment's language +
 * "\n" on f. The format is the catalogue's, checked by the unit test. */
void cli_errf(FILE *f, enum cli_msg id, ...);

/* The message id formatted into buf (size n, always terminated). */
void cli_msgf(char *buf, size_t n, enum cli_msg id, ...);

#endif
