"""The two-layer paged decoder: silent under the guard when correct, caught when a bug is seeded."""
import pytest
import torch
from decoder import Decoder

import kvlint


def test_correct_decoder_is_silent_and_unchanged():
    plain = Decoder().generate()
    with kvlint.patch(mode="collect", checks="full") as handle:
        guarded = Decoder().generate()
    assert handle.findings == []
    assert all(torch.equal(a, b) for a, b in zip(plain, guarded))


@pytest.mark.parametrize("bug, code", [
    ("int64_block_table", "KV301"),
    ("kv_len_in_layer", "KV401"),
    ("non_cumulative_tnd", "KV315"),
    ("wrong_block_size", "KV312"),
    ("duplicate_slots", "KV319"),
])
def test_seeded_bug_is_caught(bug, code):
    with kvlint.patch(), pytest.raises(kvlint.ContractError) as info:
        Decoder(bugs=[bug]).generate()
    assert info.value.code == code
    assert "__init__.py:" in str(info.value)  # the decoder's own line, not kvlint's or torch's


def test_runner_advancing_kv_len_between_steps_is_not_kv401():
    """kv_len mutated in place once per step, outside the layers, is the correct discipline."""
    with kvlint.patch(mode="collect") as handle:
        model = Decoder()
        model.generate(steps=4)
    assert [f for f in handle.findings if f.code == "KV401"] == []
