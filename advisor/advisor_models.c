/*
 * advisor_models.c - what the advisor knows about models, memory and speed:
 * the known-model table, the parameter count of a transformer shape, the
 * activation bytes (Korthikanti et al. 2022), each implementation's model
 * states (the ZeRO paper, DeepSpeed's estimators and real buffers, torch's
 * DDP / ZeroRedundancyOptimizer / FSDP), the bytes each strategy moves per
 * step, and the peak FLOP/s table. Every figure names its source here and in
 * advisor/README.md; figures that are assumptions say so.
 *
 * Threading: none; only constant tables.
 */
#include "advisor_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define MIB (1024.0 * 1024.0)

/*
 * CNN and ViT entries: measured by advisor/measure_cnn.py on Debian 12's
 * python3-torch 1.13.1 and python3-torchvision 0.14.1 (CPU, fp32, 224 x
 * 224, training mode), output kept in advisor/cnn_measured.txt. Saved
 * activations are the bytes torch.autograd.graph.saved_tensors_hooks sees
 * (parameters excluded, each storage once) at batch 1 and 2: per sample =
 * b2 - b1, fixed = 2 b1 - b2. The 16-bit figure halves the floating-point
 * tensors and keeps the others (max-pool indices are int64). FLOPs are the
 * forward multiply-adds x 2 of every Conv2d and Linear (and, for ViT, the
 * attention matmuls), counted with forward hooks. Largest layer: the most
 * parameters one module holds itself, as DeepSpeed's model_to_params().
 */
#define RESNET_SRC                                                                                 \
    "He et al. 2016, Deep Residual Learning (arXiv:1512.03385) table 1; torchvision 0.14 "         \
    "resnet; activations and FLOPs: advisor/measure_cnn.py -> advisor/cnn_measured.txt"

static const struct adv_known known[] = {
    /* figures: advisor/cnn_measured.txt (torch 1.13.1, torchvision 0.14.1, 2026-12-01) */
    {"resnet50",
     ADV_MODEL_MEASURED,
     {.layers = 0},
     {.params = 25557032,
      .act_bytes_per_sample = 85909504,
      .act_bytes_per_sample16 = 43757568,
      .act_fixed_bytes = 424960,
      .fwd_flops_per_sample = 8178368512,
      .largest_layer_params = 2359296},
     25.6e6,
     RESNET_SRC},
    {"resnet101",
     ADV_MODEL_MEASURED,
     {.layers = 0},
     {.params = 44549160,
      .act_bytes_per_sample = 126853120,
      .act_bytes_per_sample16 = 64229376,
      .act_fixed_bytes = 842752,
      .fwd_flops_per_sample = 15602810880,
      .largest_layer_params = 2359296},
     44.5e6,
     RESNET_SRC},
    {"vit-base",
     ADV_MODEL_MEASURED,
     {.layers = 0},
     {.params = 86567656,
      .act_bytes_per_sample = 140401192,
      .act_bytes_per_sample16 = 70200596,
      .act_fixed_bytes = 96,
      .fwd_flops_per_sample = 35127656448,
      .largest_layer_params = 2362368},
     86e6,
     "Dosovitskiy et al. 2021, An Image is Worth 16x16 Words (arXiv:2010.11929) table 1 "
     "(ViT-Base/16: 12 layers, hidden 768, MLP 3072, 12 heads, 86M); torchvision 0.14 vit_b_16; "
     "activations and FLOPs: advisor/measure_cnn.py -> advisor/cnn_measured.txt"},
    {"bert-base",
     ADV_MODEL_TRANSFORMER,
     {ADV_ARCH_ENCODER, 12, 768, 12, 12, 3072, 30522, 512, 512, false, true, true, false, true,
      ADV_NORM_LAYERNORM},
     {.params = 0},
     110e6,
     "Devlin et al. 2019, BERT (arXiv:1810.04805) section 3 (L=12, H=768, A=12, 110M); "
     "Hugging Face bert-base-uncased config.json (intermediate_size 3072, vocab_size 30522, "
     "max_position_embeddings 512, dropout 0.1)"},
    {"bert-large",
     ADV_MODEL_TRANSFORMER,
     {ADV_ARCH_ENCODER, 24, 1024, 16, 16, 4096, 30522, 512, 512, false, true, true, false, true,
      ADV_NORM_LAYERNORM},
     {.params = 0},
     340e6,
     "Devlin et al. 2019, BERT (arXiv:1810.04805) section 3 (L=24, H=1024, A=16, 340M); "
     "Hugging Face bert-large-uncased config.json"},
    {"gpt2",
     ADV_MODEL_TRANSFORMER,
     {ADV_ARCH_DECODER, 12, 768, 12, 12, 3072, 50257, 1024, 1024, false, true, true, false, true,
      ADV_NORM_LAYERNORM},
     {.params = 0},
     124e6,
     "Radford et al. 2019, Language Models are Unsupervised Multitask Learners, table 2; "
     "Hugging Face gpt2 config.json (n_layer 12, n_embd 768, n_head 12, n_positions 1024, "
     "vocab_size 50257, pdrop 0.1; model card: 124M)"},
    {"gpt2-medium",
     ADV_MODEL_TRANSFORMER,
     {ADV_ARCH_DECODER, 24, 1024, 16, 16, 4096, 50257, 1024, 1024, false, true, true, false, true,
      ADV_NORM_LAYERNORM},
     {.params = 0},
     355e6,
     "Radford et al. 2019 table 2; Hugging Face gpt2-medium config.json (n_layer 24, n_embd "
     "1024, n_head 16; model card: 355M)"},
    {"gpt2-large",
     ADV_MODEL_TRANSFORMER,
     {ADV_ARCH_DECODER, 36, 1280, 20, 20, 5120, 50257, 1024, 1024, false, true, true, false, true,
      ADV_NORM_LAYERNORM},
     {.params = 0},
     774e6,
     "Radford et al. 2019 table 2; Hugging Face gpt2-large config.json (n_layer 36, n_embd "
     "1280, n_head 20; model card: 774M)"},
    {"gpt2-xl",
     ADV_MODEL_TRANSFORMER,
     {ADV_ARCH_DECODER, 48, 1600, 25, 25, 6400, 50257, 1024, 1024, false, true, true, false, true,
      ADV_NORM_LAYERNORM},
     {.params = 0},
     1558e6,
     "Radford et al. 2019 table 2; Hugging Face gpt2-xl config.json (n_layer 48, n_embd 1600, "
     "n_head 25; model card: 1.5B, 1,557.6M counted)"},
    {"llama-2-7b",
     ADV_MODEL_TRANSFORMER,
     {ADV_ARCH_DECODER, 32, 4096, 32, 32, 11008, 32000, 4096, 0, true, false, false, false, false,
      ADV_NORM_RMSNORM},
     {.params = 0},
     6.74e9,
     "Touvron et al. 2023, Llama 2 (arXiv:2307.09288) table 1 (context 4k); Hugging Face "
     "meta-llama/Llama-2-7b-hf config.json (num_hidden_layers 32, hidden_size 4096, "
     "intermediate_size 11008, num_attention_heads 32, vocab_size 32000; 6.74B)"},
    {"llama-2-13b",
     ADV_MODEL_TRANSFORMER,
     {ADV_ARCH_DECODER, 40, 5120, 40, 40, 13824, 32000, 4096, 0, true, false, false, false, false,
      ADV_NORM_RMSNORM},
     {.params = 0},
     13.0e9,
     "Touvron et al. 2023, Llama 2 (arXiv:2307.09288) table 1; Hugging Face "
     "meta-llama/Llama-2-13b-hf config.json (40 layers, hidden 5120, intermediate 13824, 40 "
     "heads)"},
    {"qwen2-7b",
     ADV_MODEL_TRANSFORMER,
     {ADV_ARCH_DECODER, 28, 3584, 28, 4, 18944, 152064, 4096, 0, true, false, false, true, false,
      ADV_NORM_RMSNORM},
     {.params = 0},
     7.62e9,
     "Yang et al. 2024, Qwen2 Technical Report (arXiv:2407.10671) table 1 (7B: 28 layers, "
     "hidden 3584, 28 query / 4 KV heads, intermediate 18944, vocabulary 151,646 tokens, "
     "pre-training context 4,096); Hugging Face Qwen/Qwen2-7B config.json (vocab_size 152064, "
     "tie_word_embeddings false, q/k/v biases)"},
    {"chatglm3-6b",
     ADV_MODEL_TRANSFORMER,
     {ADV_ARCH_DECODER, 28, 4096, 32, 2, 13696, 65024, 8192, 0, true, false, false, true, false,
      ADV_NORM_RMSNORM},
     {.params = 0},
     6.24e9,
     "THUDM/chatglm3-6b config.json (num_layers 28, hidden_size 4096, num_attention_heads 32, "
     "multi_query_group_num 2, ffn_hidden_size 13696, padded_vocab_size 65024, seq_length 8192, "
     "add_qkv_bias, untied output_layer); GLM team 2024, ChatGLM (arXiv:2406.12793)"},
    {"baichuan2-7b",
     ADV_MODEL_TRANSFORMER,
     {ADV_ARCH_DECODER, 32, 4096, 32, 32, 11008, 125696, 4096, 0, true, false, false, false, false,
      ADV_NORM_RMSNORM},
     {.params = 0},
     7.51e9,
     "Yang et al. 2023, Baichuan 2 (arXiv:2309.10305) table 2 (7B: 32 layers, hidden 4096, 32 "
     "heads, vocabulary 125,696, context 4,096); Hugging Face baichuan-inc/Baichuan2-7B-Base "
     "config.json (intermediate_size 11008)"},
};

const struct adv_known *adv_known_table(size_t *n)
{
    *n = sizeof(known) / sizeof(known[0]);
    return known;
}

const struct adv_known *adv_known_find(const char *name)
{
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
        if (strcmp(known[i].name, name) == 0)
            return &known[i];
    }
    return NULL;
}

double adv_transformer_params(const struct adv_transformer *tf)
{
    double h = tf->hidden, f = tf->ffn, v = tf->vocab;
    double kv = (tf->kv_heads > 0 ? tf->kv_heads : tf->heads) * (h / tf->heads);
    double norm = tf->norm == ADV_NORM_LAYERNORM ? 2 * h : h; /* weight (+ bias) */
    double layer, total;

    layer = 2 * h * h + 2 * h * kv;           /* q, o; k, v (grouped) */
    layer += (tf->gated_mlp ? 3 : 2) * h * f; /* up (+ gate), down */
    if (tf->bias)
        layer += h + 2 * kv + h + (tf->gated_mlp ? 2 * f : f) + h;
    else if (tf->qkv_bias)
        layer += h + 2 * kv;
    layer += 2 * norm;
    total = tf->layers * layer + v * h + (double)tf->positions * h;
    if (!tf->tied_embeddings)
        total += v * h; /* a separate LM head */
    if (tf->arch == ADV_ARCH_ENCODER)
        total += 2 * h + 2 * h + h * h + h; /* BERT: token types, embedding LayerNorm, pooler */
    else
        total += norm; /* the final norm */
    return total;
}

/*
 * One layer's saved activations, generalising Korthikanti et al. 2022
 * section 4.1 (their count is for 16-bit activations, act_bytes = 2; masks
 * are 1 byte):
 *   2 norms: their inputs, 2 x sbh x act_bytes (the paper: 4sbh)
 *   attention: the inputs of the QKV projection, Q, K, V and the output
 *     projection, 5 sbh x act_bytes (the paper: 2 + 4 + 2 + 2 = 10sbh), and
 *     the output dropout mask sbh (1 byte); eager attention keeps the
 *     softmax output a s^2 b, with dropout also its mask (1 byte) and the
 *     dropped-out scores (the paper: 5as^2b); fused kernels keep an fp32
 *     log-sum-exp per row and head instead (4 a s b)
 *   MLP (GeLU): input sbh, GeLU input sbf, second input sbf, dropout mask
 *     (the paper with f = 4h: 2 + 8 + 8 + 1 = 19sbh); gated (SwiGLU as in
 *     Hugging Face's Llama): input sbh, gate output, up output, activation
 *     output and product, 4 sbf.
 * For f = 4h, GeLU, dropout and eager attention this is exactly
 * sbh(34 + 5as/h). Grouped-query attention is counted with full-size K and
 * V, as Hugging Face's eager attention repeats them (repeat_kv) before the
 * matmul. Selective recomputation drops the s^2 terms (the paper: 34sbh);
 * full recomputation keeps the layer input (2sbh).
 */
double adv_layer_act_bytes(const struct adv_transformer *tf, enum adv_attn attn, double s, double b,
                           int act_bytes, enum adv_recompute r)
{
    double h = tf->hidden, f = tf->ffn, a = tf->heads, w = act_bytes;
    double sbh = s * b * h, sbf = s * b * f, as2b = a * s * s * b;
    double x;

    if (r == ADV_RECOMP_FULL)
        return sbh * w;
    x = 2 * sbh * w;  /* norms */
    x += 5 * sbh * w; /* attention linears */
    if (tf->dropout)
        x += sbh; /* attention output dropout mask */
    if (tf->gated_mlp)
        x += sbh * w + 4 * sbf * w;
    else
        x += sbh * w + 2 * sbf * w;
    if (tf->dropout)
        x += sbh; /* MLP dropout mask */
    if (r == ADV_RECOMP_SELECTIVE)
        return x;
    if (attn == ADV_ATTN_FUSED) {
        x += 4 * a * s * b;
    } else {
        x += as2b * w;
        if (tf->dropout)
            x += as2b + as2b * w;
    }
    return x;
}

/*
 * The LM head per sample. Korthikanti et al. count the fp32 logits the
 * cross-entropy keeps (4sbV). Hugging Face causal-LM and masked-LM models
 * also return the logits in the activation dtype and keep them until the
 * step ends, and upcast them to fp32 for the loss (log_softmax saves its
 * fp32 output): act_bytes + 4 bytes per logit. With fp32 activations both
 * are fp32 tensors.
 */
double adv_logits_bytes(const struct adv_model_info *mi, int act_bytes)
{
    if (mi->kind != ADV_MODEL_TRANSFORMER || mi->tf.vocab == 0)
        return 0;
    return (double)mi->seq_len * mi->tf.vocab * (act_bytes + 4);
}

double adv_logits_live_bytes(const struct adv_model_info *mi, int act_bytes)
{
    if (mi->kind != ADV_MODEL_TRANSFORMER || mi->tf.vocab == 0)
        return 0;
    return (double)mi->seq_len * mi->tf.vocab * act_bytes;
}

/* Activations of one sample: layers + embedding dropout + final norm and head + logits. */
static void transformer_act(const struct adv_model_info *mi, int w, double *none, double *ckpt)
{
    const struct adv_transformer *tf = &mi->tf;
    double s = mi->seq_len, h = tf->hidden;
    double layer = adv_layer_act_bytes(tf, mi->attn, s, 1, w, ADV_RECOMP_NONE);
    double input = adv_layer_act_bytes(tf, mi->attn, s, 1, w, ADV_RECOMP_FULL);
    double outside = 0;

    if (tf->dropout)
        outside += s * h; /* dropout mask after the embeddings (the paper: sbh) */
    if (tf->vocab > 0)
        outside += 2 * s * h * w + adv_logits_bytes(mi, w); /* final norm, head input, logits */
    *none = tf->layers * layer + outside;
    /* Full recomputation: every layer's input, plus one layer recomputed at a time. */
    *ckpt = tf->layers * input + layer + outside;
}

double adv_opt_state_bytes(enum adv_optimizer o)
{
    switch (o) {
    case ADV_OPT_SGD:
        return 0; /* torch.optim.SGD without momentum keeps no state */
    case ADV_OPT_SGD_MOMENTUM:
        return 4; /* momentum_buffer, fp32 */
    case ADV_OPT_ADAM:
    case ADV_OPT_ADAMW:
    default:
        return 8; /* exp_avg and exp_avg_sq, fp32 (the ZeRO paper's K = 12 adds the fp32 copy) */
    }
}

double adv_zero_paper_bytes(int stage, double psi, double k, int nd)
{
    switch (stage) {
    case 0:
        return (2 + 2 + k) * psi;
    case 1:
        return 2 * psi + 2 * psi + k * psi / nd;
    case 2:
        return 2 * psi + (2 + k) * psi / nd;
    default:
        return (2 + 2 + k) * psi / nd;
    }
}

/* deepspeed/runtime/zero/stage_1_and_2.py estimate_zero2_model_states_mem_needs() */
void adv_ds_zero2_estimate(double params, int gpus_per_node, int nodes, bool cpu_offload,
                           double buffer_factor, double *gpu_bytes, double *cpu_bytes)
{
    int total_gpus = nodes * gpus_per_node;
    double big = 4.0 * total_gpus > 16 ? 4.0 * total_gpus : 16;

    if (cpu_offload) {
        *gpu_bytes = 2 * params;
        *cpu_bytes = params * big * buffer_factor;
    } else {
        *gpu_bytes = 4 * params + floor(16 * params / total_gpus);
        *cpu_bytes = params * 4 * gpus_per_node * buffer_factor;
    }
}

/* deepspeed/runtime/zero/stage3.py estimate_zero3_model_states_mem_needs() */
void adv_ds_zero3_estimate(double params, double largest_layer_params, int gpus_per_node, int nodes,
                           bool cpu_offload, bool cpu_offload_params, bool zero_init,
                           double buffer_factor, double *gpu_bytes, double *cpu_bytes)
{
    int total_gpus = nodes * gpus_per_node;
    double gpus_factor = 1.0 / nodes;
    double largest = 4 * largest_layer_params;
    double m;

    if (cpu_offload) {
        if (cpu_offload_params) {
            *gpu_bytes = largest;
            m = 18 * gpus_factor;
        } else {
            *gpu_bytes = largest + floor(2 * params / total_gpus);
            m = 16 * gpus_factor;
        }
        if (!zero_init && 4.0 * gpus_per_node > m)
            m = 4.0 * gpus_per_node;
        *cpu_bytes = params * m * buffer_factor;
    } else {
        *gpu_bytes = largest + floor(18 * params / total_gpus);
        if (zero_init)
            *cpu_bytes = largest_layer_params * 4 * gpus_per_node * buffer_factor;
        else
            *cpu_bytes = params * 4 * gpus_per_node * buffer_factor;
    }
}

void adv_fsdp_units(const struct adv_model_info *mi, double *root, double *unit)
{
    if (mi->kind == ADV_MODEL_TRANSFORMER) {
        /* transformer_auto_wrap_policy over the block class: each block is a
         * unit; the root keeps the embeddings, the final norm and the head. */
        double blocks;
        struct adv_transformer one = mi->tf;

        one.layers = 1;
        one.vocab = 0;
        one.positions = 0;
        one.tied_embeddings = true;
        blocks = adv_transformer_params(&one);
        if (mi->tf.arch == ADV_ARCH_ENCODER)
            blocks -=
                2 * one.hidden + 2 * one.hidden + (double)one.hidden * one.hidden + one.hidden;
        else
            blocks -= one.norm == ADV_NORM_LAYERNORM ? 2.0 * one.hidden : one.hidden;
        *unit = blocks;
        *root = mi->params - mi->tf.layers * blocks;
    } else {
        /* size_based_auto_wrap_policy: assumed to end with units of about the
         * largest module; the root holds what is left, taken as one more. */
        *unit = mi->largest_layer_params;
        *root = mi->largest_layer_params;
    }
    if (*root < 0)
        *root = 0;
}

/*
 * ZeRO bucket sizes the emitted DeepSpeed config sets, in elements:
 * DeepSpeed's stage-3 prefetch default 5e7 (docs: stage3_prefetch_bucket_size),
 * also used for reduce_bucket_size and allgather_bucket_size instead of
 * their 5e8 default (1 GB of 16-bit buffers each), and never above the
 * model itself.
 */
double adv_ds_bucket_elems(const struct adv_model_info *mi)
{
    return mi->params < 5e7 ? mi->params : 5e7;
}

double adv_fixed_bytes(bool cpu)
{
    /*
     * GPU: the CUDA context and the libraries' workspaces. PyTorch forum
     * answers measure the context at 723 MiB ("what is the reason for
     * pytorch's gpu memory floor", discuss.pytorch.org/t/73021) and "~700+
     * MB" (/t/81330); rounded up to 1 GiB for the cuBLAS/cuDNN workspaces.
     * CPU: the resident size of a training process after import torch and
     * torchvision, measured by advisor/measure_cnn.py (cnn_measured.txt).
     */
    return cpu ? 251699200.0 : 1024 * MIB; /* cnn_measured.txt: cpu_rank_rss_bytes */
}

#define DDP_BUCKET_BYTES (25 * MIB) /* torch DDP bucket_cap_mb default 25 (DDP docs) */

/* Autocast's cached 16-bit copies of the weights (torch AMP), GPU only. */
static double autocast_bytes(double params, enum adv_precision p, bool cpu)
{
    return (!cpu && p != ADV_PREC_FP32) ? 2 * params : 0;
}

void adv_cost(const struct adv_model_info *mi, enum adv_strategy s, enum adv_engine g,
              enum adv_precision p, enum adv_optimizer o, int n, int gpus_per_node, bool cpu,
              struct cost *c)
{
    double P = mi->params, L = mi->largest_layer_params, os = adv_opt_state_bytes(o);
    double w = p == ADV_PREC_FP32 ? 4 : 2;      /* bytes of a low-precision parameter */
    double master = p == ADV_PREC_FP32 ? 0 : 4; /* DeepSpeed's fp32 master copy */
    double rb = adv_ds_bucket_elems(mi);
    int act_w = p == ADV_PREC_FP32 ? 4 : 2;
    double root, unit;
    double gpn = gpus_per_node < n ? gpus_per_node : n;

    memset(c, 0, sizeof(*c));
    c->fixed = adv_fixed_bytes(cpu);
    if (mi->kind == ADV_MODEL_TRANSFORMER) {
        transformer_act(mi, act_w, &c->act_sample, &c->act_sample_ckpt);
    } else {
        if (act_w == 4) {
            c->act_sample = mi->ms.act_bytes_per_sample;
            c->act_fixed = mi->ms.act_fixed_bytes;
        } else {
            c->act_sample = mi->ms.act_bytes_per_sample16 > 0 ? mi->ms.act_bytes_per_sample16
                                                              : mi->ms.act_bytes_per_sample / 2;
            c->act_fixed = mi->ms.act_fixed_bytes / 2;
        }
        c->act_sample_ckpt = c->act_sample; /* no block structure known: no checkpointing */
    }
    adv_fsdp_units(mi, &root, &unit);

    switch (s) {
    case ADV_STRATEGY_DDP:
        /* torch DDP with AMP (or fp32): fp32 parameters and gradients, the
         * optimizer's fp32 states; gradient_as_bucket_view=True (emitted), so
         * the buckets are the gradients and one bucket is in flight. */
        c->params = 4 * P;
        c->grads = 4 * P;
        c->optim = os * P;
        c->buffers = DDP_BUCKET_BYTES + autocast_bytes(P, p, cpu);
        break;
    case ADV_STRATEGY_ZERO1:
        if (g == ADV_ENGINE_TORCH) {
            /* torch.distributed.optim.ZeroRedundancyOptimizer over DDP: ZeRO-1
             * over fp32 (or AMP) parameters; it assigns whole tensors to
             * ranks, so the largest rank holds at least the largest one. */
            double shard = P / n > L ? P / n : L;
            c->params = 4 * P;
            c->grads = 4 * P;
            c->optim = os * (n > 1 ? shard : P);
            c->buffers = DDP_BUCKET_BYTES + autocast_bytes(P, p, cpu);
        } else {
            /* DeepSpeed stage 1 (stage_1_and_2.py): 16-bit parameters and
             * full 16-bit gradients; the fp32 master, states and fp32
             * gradient partition: its estimator's 4P + 16P/N for Adam. Two
             * reduce buckets (overlap_comm) and one all-gather bucket. */
            c->params = w * P;
            c->grads = w * P + 4 * P / n;
            c->optim = (master + os) * P / n;
            c->buffers = 3 * w * rb;
        }
        break;
    case ADV_STRATEGY_ZERO2:
        /* DeepSpeed stage 2, real buffers: gradients are reduce-scattered
         * bucket by bucket and only this rank's 16-bit partition is kept
         * (2P + 18P/N for Adam: the ZeRO paper's stage-2 figure plus the fp32
         * gradient partition). DeepSpeed's own estimator
         * (adv_ds_zero2_estimate) counts full 16-bit gradients, 4P + 16P/N. */
        c->params = w * P;
        c->grads = w * P / n + 4 * P / n;
        c->optim = (master + os) * P / n;
        c->buffers = 3 * w * rb;
        break;
    case ADV_STRATEGY_ZERO3:
        /* DeepSpeed stage 3, its estimator: 18P/N for Adam (16-bit and fp32
         * parameter partitions, fp32 gradient partition, states) + 4 x the
         * largest layer (gathered 16-bit parameters and gradients); plus the
         * prefetch and reduce buckets the emitted config sets. */
        c->params = w * P / n;
        c->grads = 4 * P / n;
        c->optim = (master + os) * P / n;
        c->buffers = 2 * w * L + w * rb + 2 * w * rb;
        break;
    case ADV_STRATEGY_FSDP:
        /* torch FSDP FULL_SHARD, MixedPrecision(param/reduce dtype 16-bit):
         * fp32 flat-parameter shard and its 16-bit copy, fp32 gradient shard,
         * fp32 states; gathered: the root unit, the current and the
         * prefetched unit (BACKWARD_PRE), and one unit's unsharded gradient. */
        c->params = 4 * P / n + (p == ADV_PREC_FP32 ? 0 : w * P / n);
        c->grads = 4 * P / n;
        c->optim = os * P / n;
        c->buffers = w * (root + 2 * unit) + w * unit;
        break;
    case ADV_STRATEGY_ZERO3_OFFLOAD_OPT:
        /* DeepSpeed stage 3 + offload_optimizer: its estimator's GPU part
         * 4L + 2P/N, host 16P/N per GPU (zero_init) x 1.5. */
        c->params = w * P / n;
        c->buffers = 2 * w * L + w * rb + 2 * w * rb;
        c->cpu_node = (4 + 4 + os) * P / n * gpn * 1.5;
        break;
    case ADV_STRATEGY_ZERO3_OFFLOAD_ALL:
        /* + offload_param: GPU 4L; host 18P/N per GPU (zero_init) x 1.5. */
        c->buffers = 2 * w * L + w * rb + 2 * w * rb;
        c->cpu_node = (w + 4 + 4 + os) * P / n * gpn * 1.5;
        break;
    case ADV_STRATEGY_FSDP_OFFLOAD:
        /* FSDP CPUOffload(offload_params=True): shards, gradients and the
         * optimizer step on the host; the GPU holds the gathered units. Host
         * bytes taken with DeepSpeed's 1.5 buffer factor as well. */
        c->buffers = w * (root + 2 * unit) + w * unit;
        c->cpu_node = (4 + 4 + os) * P / n * gpn * 1.5;
        break;
    default:
        break;
    }
}

void adv_traffic(const struct adv_model_info *mi, enum adv_strategy s, enum adv_engine g,
                 enum adv_precision p, int n, int gpus_per_node, int k, struct traffic *t)
{
    double P = mi->params, w = p == ADV_PREC_FP32 ? 4 : 2;
    double ring = n > 1 ? (double)(n - 1) / n : 0; /* reduce-scatter or all-gather factor */
    double gpn = gpus_per_node < n ? gpus_per_node : n;

    memset(t, 0, sizeof(*t));
    switch (s) {
    case ADV_STRATEGY_DDP:
        t->once_bytes = 2 * ring * 4 * P; /* ring all-reduce of the fp32 gradients */
        break;
    case ADV_STRATEGY_ZERO1:
        if (g == ADV_ENGINE_TORCH)
            t->once_bytes = 2 * ring * 4 * P + ring * 4 * P; /* all-reduce + parameter broadcast */
        else
            t->once_bytes = 2 * ring * w * P; /* reduce-scatter + all-gather, 16-bit */
        break;
    case ADV_STRATEGY_ZERO2:
        t->micro_bytes = ring * w * P; /* gradients reduce-scattered every micro-step */
        t->once_bytes = ring * w * P;  /* updated parameters all-gathered once */
        break;
    case ADV_STRATEGY_ZERO3:
    case ADV_STRATEGY_FSDP:
        /* parameters gathered for the forward and again for the backward,
         * gradients reduce-scattered: 1.5x DDP's volume (ZeRO paper 7.2.2),
         * every micro-step */
        t->micro_bytes = 3 * ring * w * P;
        break;
    case ADV_STRATEGY_ZERO3_OFFLOAD_OPT:
        t->micro_bytes = 3 * ring * w * P;
        t->host_bytes = 2 * w * P / n; /* gradients out, parameters back */
        t->cpu_opt_params = P / n * gpn;
        break;
    case ADV_STRATEGY_ZERO3_OFFLOAD_ALL:
    case ADV_STRATEGY_FSDP_OFFLOAD:
        t->micro_bytes = 3 * ring * w * P;
        t->host_bytes = k * 3 * w * P / n + w * P / n; /* fetch twice, gradients out; update */
        t->cpu_opt_params = P / n * gpn;
        break;
    default:
        break;
    }
}

double adv_fwd_flops_per_sample(const struct adv_model_info *mi)
{
    if (mi->kind == ADV_MODEL_TRANSFORMER) {
        /* 2 x parameters per token, plus the attention scores and their
         * product with V: 2 x 2 x s x h per token and layer (PaLM, Chowdhery
         * et al. 2022, appendix B: 6N + 12 L H Q T per token for training). */
        double s = mi->seq_len;
        return s * (2 * mi->params + 4.0 * mi->tf.layers * mi->tf.hidden * s);
    }
    return mi->ms.fwd_flops_per_sample;
}

double adv_train_flops_per_sample(const struct adv_model_info *mi)
{
    return 3 * adv_fwd_flops_per_sample(mi); /* backward = 2 x forward (Kaplan et al. 2020) */
}

/*
 * Dense peak FLOP/s by compute capability, from NVIDIA's data sheets
 * (tensor cores, without sparsity): the highest row at or below the GPU's
 * cc is used. 16-bit column: bf16 from 8.0 on, fp16 before.
 */
static const struct {
    int cc10;
    double tf16, tf32; /* TFLOP/s */
    const char *gpu;
} peaks[] = {
    {60, 21.2, 10.6, "P100 SXM2 (data sheet)"},
    {61, 0.19, 12.0, "P40 (fp16 runs at 1/64: CUDA guide throughput table)"},
    {70, 125, 15.7, "V100 SXM2 (data sheet)"},
    {75, 65, 8.1, "T4 (data sheet)"},
    {80, 312, 19.5, "A100 (data sheet)"},
    {86, 125, 31.2, "A10 (data sheet; 250 with sparsity)"},
    {89, 121, 30.3, "L4 (data sheet; 242 with sparsity)"},
    {90, 989, 67, "H100 SXM / H200 (data sheet; 1,979 with sparsity)"},
};

/* One CPU process: fp32 1024 x 1024 matmul on one thread, measured by
 * advisor/measure_cnn.py on the project machine (cnn_measured.txt:
 * cpu_sgemm_gflops_1_thread 5.2, a shared 2-core Intel Xeon under load). */
#define CPU_SGEMM_FLOPS 5.2e9

double adv_peak_flops(int cc10, enum adv_precision p)
{
    size_t best = 0;

    if (cc10 <= 0)
        return CPU_SGEMM_FLOPS;
    for (size_t i = 0; i < sizeof(peaks) / sizeof(peaks[0]); i++) {
        if (peaks[i].cc10 <= cc10)
            best = i;
    }
    return 1e12 * (p == ADV_PREC_FP32 ? peaks[best].tf32 : peaks[best].tf16);
}

double adv_efficiency(const struct adv_model_info *mi, bool cpu)
{
    if (cpu)
        return 0.5; /* assumed share of the measured sgemm rate */
    if (mi->kind == ADV_MODEL_TRANSFORMER)
        return 0.35; /* between the 21-46 % MFU of PaLM's table 3 (GPT-3 .. PaLM) */
    return 0.25;     /* CNNs: assumed; the job page shows the measured rate */
}

enum rc adv_resolve_model(const struct adv_model *m, struct adv_model_info *info, struct err *e)
{
    memset(info, 0, sizeof(*info));
    info->attn = m->attn;
    snprintf(info->name, sizeof(info->name), "%s", m->name);
    if (m->kind == ADV_MODEL_KNOWN) {
        const struct adv_known *k = adv_known_find(m->name);

        if (k == NULL)
            return err_set(e, RC_EINVAL, "model.name", "unknown model \"%.40s\"", m->name);
        info->kind = k->kind;
        info->tf = k->tf;
        info->ms = k->ms;
        if (k->kind == ADV_MODEL_TRANSFORMER && m->seq_len > 0)
            info->tf.seq_len = m->seq_len;
    } else if (m->kind == ADV_MODEL_TRANSFORMER) {
        info->kind = ADV_MODEL_TRANSFORMER;
        info->tf = m->tf;
    } else {
        info->kind = ADV_MODEL_MEASURED;
        info->ms = m->ms;
    }
    if (info->kind == ADV_MODEL_TRANSFORMER) {
        const struct adv_transformer *tf = &info->tf;
        double h = tf->hidden;

        if (tf->kv_heads == 0)
            info->tf.kv_heads = tf->heads;
        info->seq_len = tf->seq_len;
        info->params = adv_transformer_params(&info->tf);
        /* The largest module: the token (or position) embedding, or one FFN matrix. */
        info->largest_layer_params = (double)tf->vocab * h;
        if ((double)tf->positions * h > info->largest_layer_params)
            info->largest_layer_params = (double)tf->positions * h;
        if (h * tf->ffn > info->largest_layer_params)
            info->largest_layer_params = h * tf->ffn;
        info->ms = (struct adv_measured){0};
    } else {
        info->params = info->ms.params;
        info->largest_layer_params = info->ms.largest_layer_params > 0
                                         ? info->ms.largest_layer_params
                                         : info->ms.params; /* unknown: the whole model */
        info->tf = (struct adv_transformer){0};
    }
    return RC_OK;
}
