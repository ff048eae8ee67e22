"""aiter.torch.hf: a small random-weight Llama with libaiter's attention
(attn_implementation="aiter") and layers, against stock transformers."""
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
import aiter  # noqa: E402
import aiter.torch.hf as hf  # noqa: E402
from harness import assert_close, f64  # noqa: E402


def tiny_llama(dtype, attn):
    config = transformers.LlamaConfig(vocab_size=301, hidden_size=256, intermediate_size=344, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                                      rms_norm_eps=1e-5, attn_implementation=attn)
    torch.manual_seed(1234)
    return transformers.LlamaForCausalLM(config).to(dtype).eval()


def both(dtype):
    stock = tiny_llama(dtype, "sdpa")
    ours = tiny_llama(dtype, hf.NAME)
    ours.load_state_dict(stock.state_dict())
    return stock, hf.use_aiter_ops(ours)


def test_layers_are_swapped():
    _, ours = both(torch.float32)
    kinds = {type(m).__name__ for m in ours.modules()}
    assert {"AiterRMSNorm", "AiterGatedMLP", "AiterLinear"} <= kinds
    assert not any(isinstance(m, torch.nn.Linear) for m in ours.modules())
    assert ours.config._attn_implementation == "aiter"


def test_bf16_logits_match_stock():
    stock, ours = both(torch.bfloat16)
    ids = torch.randint(0, 301, (2, 19))
    with torch.no_grad():
        ref, out = stock(ids).logits, ours(ids).logits
    reference64 = f64(tiny_llama(torch.float32, "sdpa")(ids).logits.detach())
    # bf16 runs of the same model differ by their roundings: both within bf16 reach of fp32.
    scale = abs(reference64).max()
    assert_close(ref, reference64, "bfloat16", rtol=0, atol=0.02 * scale)
    assert_close(out, reference64, "bfloat16", rtol=0, atol=0.02 * scale)
    assert_close(out, f64(ref), "bfloat16", rtol=0, atol=0.02 * scale)


def test_greedy_generation_matches_stock():
    stock, ours = both(torch.float32)
    ids = torch.randint(0, 301, (1, 7))
    with torch.no_grad():
        expected = stock.generate(ids, max_new_tokens=10, do_sample=False)
        got = ours.generate(ids, max_new_tokens=10, do_sample=False)
    assert torch.equal(got, expected)


def test_left_padded_batch_matches_stock():
    stock, ours = both(torch.float32)
    ids = torch.randint(0, 301, (3, 9))
    mask = torch.ones(3, 9, dtype=torch.long)
    mask[1, :4] = 0
    mask[2, :1] = 0
    with torch.no_grad():
        ref, out = stock(ids, attention_mask=mask).logits, ours(ids, attention_mask=mask).logits
        valid = mask.bool()
        assert_close(out[valid], f64(ref[valid]), "float32", rtol=1e-4, atol=1e-4)
        expected = stock.generate(ids, attention_mask=mask, max_new_tokens=6, do_sample=False)
        got = ours.generate(ids, attention_mask=mask, max_new_tokens=6, do_sample=False)
    assert torch.equal(got, expected)


def test_a_mask_with_holes_is_refused():
    _, ours = both(torch.float32)
    mask = torch.tensor([[1, 1, 0, 1, 1]])
    with torch.no_grad(), pytest.raises(aiter.InvalidArgumentError, match="one run of ones"):
        ours(torch.randint(0, 301, (1, 5)), attention_mask=mask)
