"""Random-initialised models of each architecture family the harness supports, built offline from a config.

No weights exist for them and none are downloaded: they test that the harness finds the attention layers,
leaves recurrent state alone, applies the model's own RoPE and matches the unmodified model's output, and the
GPU check sizes them up to measure throughput and memory at long contexts. ``tiny`` builds run on a CPU in
seconds; ``mid`` is a few hundred million parameters (the GPU check).

    python -m harness.families            # list the families and what the harness sees in each
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

FAMILIES = ("llama", "gemma3", "qwen3_5", "qwen3_next", "lfm2", "jamba", "bamba", "falcon_h1", "nemotron_h")
HYBRID = ("qwen3_5", "qwen3_next", "lfm2", "jamba", "bamba", "falcon_h1", "nemotron_h")


@dataclass(frozen=True)
class Size:
    hidden: int
    layers: int  # a multiple of 4: the hybrid patterns below repeat every 4 layers
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int


SIZES = {"tiny": Size(hidden=64, layers=8, heads=4, kv_heads=2, head_dim=32, ffn=128),
         "mid": Size(hidden=1024, layers=16, heads=16, kv_heads=4, head_dim=128, ffn=2816)}


def config(family: str, size: str = "tiny", vocab_size: int = 512, max_positions: int = 4096,
           sliding_window: int = 16) -> Any:
    """The config of ``family`` at ``size``: every 4th layer attention in the hybrids (as Qwen 3.5 and
    Qwen3-Next), the last of every 4 global in Gemma 3 (the others sliding, window ``sliding_window``)."""
    from transformers import AutoConfig

    s = SIZES[size]
    n = s.layers
    every4 = [i for i in range(n) if i % 4 == 3]
    common = dict(vocab_size=vocab_size, hidden_size=s.hidden, intermediate_size=s.ffn, num_hidden_layers=n,
                  num_attention_heads=s.heads, num_key_value_heads=s.kv_heads, max_position_embeddings=max_positions,
                  tie_word_embeddings=True, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    if family == "llama":
        return AutoConfig.for_model("llama", head_dim=s.head_dim, **common)
    if family == "gemma3":
        types = ["full_attention" if i % 4 == 3 else "sliding_attention" for i in range(n)]
        return AutoConfig.for_model("gemma3_text", head_dim=s.head_dim, layer_types=types,
                                    sliding_window=sliding_window, query_pre_attn_scalar=s.head_dim // 2, **common)
    if family in ("qwen3_5", "qwen3_next"):
        types = ["full_attention" if i in every4 else "linear_attention" for i in range(n)]
        extra = dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=s.ffn // 2,
                     shared_expert_intermediate_size=s.ffn // 2, decoder_sparse_step=1) if family == "qwen3_next" else {}
        return AutoConfig.for_model("qwen3_5_text" if family == "qwen3_5" else "qwen3_next", head_dim=2 * s.head_dim,
                                    layer_types=types, linear_num_key_heads=s.kv_heads,
                                    linear_num_value_heads=s.heads, linear_key_head_dim=s.head_dim,
                                    linear_value_head_dim=s.head_dim, linear_conv_kernel_dim=4, **extra,
                                    rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                                     "partial_rotary_factor": 0.25}, **common)
    if family == "lfm2":
        return AutoConfig.for_model("lfm2", full_attn_idxs=every4, block_auto_adjust_ff_dim=False,
                                    **{**common, "max_position_embeddings": max_positions})
    if family == "jamba":  # attention every 4th layer, no positional encoding at all (Mamba carries order)
        return AutoConfig.for_model("jamba", attn_layer_period=4, attn_layer_offset=3, num_experts=1,
                                    expert_layer_period=1, expert_layer_offset=0,
                                    mamba_d_state=8, mamba_expand=2, **common)
    if family == "bamba":  # partial RoPE (half of each head)
        return AutoConfig.for_model("bamba", attn_layer_indices=every4, mamba_n_heads=8, mamba_d_head=s.hidden // 4,
                                    mamba_n_groups=1, mamba_d_state=16, mamba_chunk_size=32,
                                    rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                                     "partial_rotary_factor": 0.5}, **common)
    if family == "falcon_h1":  # attention and Mamba side by side in every layer
        return AutoConfig.for_model("falcon_h1", head_dim=s.head_dim, mamba_d_ssm=2 * s.hidden, mamba_n_heads=8,
                                    mamba_d_head=s.hidden // 4, mamba_n_groups=1, mamba_d_state=16,
                                    mamba_chunk_size=32, **common)
    if family == "nemotron_h":  # separate Mamba, attention and MLP blocks
        pattern = ["mamba", "mlp", "attention", "mlp"] * (n // 4)
        return AutoConfig.for_model("nemotron_h", layers_block_type=pattern, head_dim=s.head_dim, mamba_num_heads=8,
                                    mamba_head_dim=s.hidden // 4, n_groups=1, ssm_state_size=16, chunk_size=32,
                                    **common)
    raise ValueError(f"unknown family {family!r} ({', '.join(FAMILIES)})")


def build(family: str, size: str = "tiny", vocab_size: int = 512, seed: int = 0, dtype: Any = None,
          device: str = "cpu", **kwargs: Any) -> Any:
    """A random-initialised causal LM of ``family`` (deterministic for a seed and device), in eval mode,
    initialised directly on ``device``."""
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    cfg = config(family, size, vocab_size, **kwargs)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(cfg, dtype=dtype or torch.float32)
    return model.eval()


CHAT_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
                 "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def byte_tokenizer() -> Any:
    """A byte-level tokenizer (one token per UTF-8 byte, ids 3..258) with a ChatML template, built in code:
    the harness's task and chat plumbing runs on the random models without any downloaded vocabulary."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    specials = ["<pad>", "<|im_start|>", "<|im_end|>"]
    vocab = {t: i for i, t in enumerate(specials + sorted(alphabet))}
    tk = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tk.decoder = decoders.ByteLevel()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="<|im_end|>",
                                  additional_special_tokens=["<|im_start|>"])
    tok.chat_template = CHAT_TEMPLATE
    return tok


def loaded(family: str, size: str = "tiny", device: str = "cpu", **kwargs: Any) -> Any:
    """A ``harness.model.LoadedModel`` of a random ``family`` model with the byte tokenizer (for ``Engine``)."""
    from pathlib import Path

    import torch

    from harness.model import LoadedModel

    dtype = kwargs.pop("dtype", None) or (torch.bfloat16 if device.startswith("cuda") else torch.float32)
    model = build(family, size, dtype=dtype, device=device, **kwargs)
    return LoadedModel(name=f"random-{family}-{size}", path=Path("."), model=model, tokenizer=byte_tokenizer(),
                       device=device, dtype=str(dtype).removeprefix("torch."))


def main(argv: list[str] | None = None) -> int:
    from harness.arch import describe

    args = argv if argv is not None else sys.argv[1:]
    for family in args or FAMILIES:
        info = describe(build(family), family)
        print(f"{family:12s} attention layers {list(info.attention_layers)} sliding {list(info.sliding_layers)} "
              f"recurrent {list(info.recurrent_layers)} rotary dim {info.rotary_dim} of {info.head_dim}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
