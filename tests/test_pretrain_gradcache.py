"""pretriever pretrain --mini-batch-size: GradCache gives the gradients of one pass over the whole batch, replays
dropout in its second pass, and runs in the training loop."""

from __future__ import annotations

import pytest
import torch

from pretriever.pretrain import PretrainConfig
from pretriever.pretrain.gradcache import gradcache_step
from pretriever.pretrain.objectives.base import rows_of
from pretriever.pretrain.run import build_objective, run
from pretrain_fixtures import tiny_bert_st, write_pairs

XS = ["Vitamin D deficiency is common in patients with depression and low sunlight exposure in winter.",
      "Aspirin lowers the risk of colorectal cancer.",
      "Microglia prune synapses during development of the visual cortex in young mice.",
      "Statins reduce cholesterol.",
      "Sleep deprivation impairs memory consolidation in the hippocampus of healthy adults.",
      "Smoking causes lung cancer."]
YS = ["does vitamin d affect mood", "aspirin and cancer risk", "what do microglia do in the developing brain",
      "statins and cholesterol levels in older patients with heart disease", "sleep and memory", "smoking risks"]
METHODS = ["cc", "qc", "cc", "qc", "qc", "cc"]  # CoT-MAE auto: symmetric and AR decoders in one batch


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return tiny_bert_st(tmp_path_factory.mktemp("bert") / "st", pooling="mean", normalize=True)


def objective_for(tiny, tmp_path, **kw):
    cfg = PretrainConfig(pairs=tmp_path, out=tmp_path / "m", model=str(tiny), **kw)
    return build_objective(cfg, "cpu")[1]


def gradients(objective) -> dict[str, torch.Tensor]:
    grads = {n: p.grad.clone() for n, p in objective.named_parameters() if p.grad is not None}
    objective.zero_grad(set_to_none=True)
    return grads


@pytest.mark.parametrize("objective,options", [
    ("cocondenser", {}),
    ("cocondenser", {"mlm_weight": 0.0}),  # the contrastive term alone: every encoder gradient comes from the cache
    ("cotmae", {}),
])
@pytest.mark.parametrize("mini_batch", [1, 5, 64])
def test_gradcache_gives_the_gradients_of_the_whole_batch(tiny, tmp_path, objective, options, mini_batch):
    """Dropout off: the chunked gradients equal one pass over the whole batch (chunks of 5 rows leave a short last
    chunk and cut its trailing padding; chunks of 1 split every row, so the contrastive term's gradient reaches the
    encoder only through the cache; 64 holds the whole batch: one plain pass)."""
    model = objective_for(tiny, tmp_path, objective=objective, scale=5.0, **options).eval()
    torch.manual_seed(0)
    inputs = model.prepare(XS, YS, METHODS)
    whole = model(**inputs)
    (whole["loss"] * 0.5).backward()
    expected = gradients(model)
    cached = gradcache_step(model, inputs, mini_batch, scale=0.5)
    got = gradients(model)
    assert set(cached) == set(whole)
    for name in whole:
        assert cached[name].item() == pytest.approx(whole[name].item(), rel=1e-5, abs=1e-6), name
    assert set(got) == set(expected)
    encoder = [n for n in expected if n.startswith("mlm.bert.encoder.")]
    assert encoder and all(expected[n].abs().max() > 0 for n in encoder)
    for name, grad in expected.items():
        assert torch.allclose(got[name], grad, rtol=1e-4, atol=1e-5), (name, (got[name] - grad).abs().max())


@pytest.mark.parametrize("objective", ["cocondenser", "cotmae"])
def test_gradcache_replays_dropout_in_its_second_pass(tiny, tmp_path, objective):
    """Dropout on: each chunk encoded without a graph is encoded again with one, identically, as the cached
    gradient assumes; the widest chunk is encoded once, with its graph, which the second pass reuses. The step
    gives a finite loss and gradients."""
    model = objective_for(tiny, tmp_path, objective=objective).train()
    torch.manual_seed(1)
    inputs = model.prepare(XS, YS, METHODS)
    seen: dict[tuple[int, ...], list[tuple[bool, torch.Tensor]]] = {}
    encode = model.encode
    ids, mask = model.encoder_rows[0][0], model.encoder_rows[1]

    def recording(chunk):
        h, state = encode(chunk)
        seen.setdefault(tuple(chunk[ids][0].tolist()), []).append((torch.is_grad_enabled(), h.detach().clone()))
        return h, state

    model.encode = recording
    out = gradcache_step(model, inputs, 4)
    assert len(seen) == 3  # 12 rows (coCondenser), 9 (CoT-MAE: 6 x and 3 symmetric y) in 4s
    once = [calls for calls in seen.values() if len(calls) == 1]
    twice = [calls for calls in seen.values() if len(calls) == 2]
    assert len(once) == 1 and once[0][0][0]  # encoded once, with a graph
    width = {i: int(inputs[mask][i:i + 4].any(0).nonzero().max()) + 1 for i in range(0, len(inputs[ids]), 4)}
    widest = max(width, key=lambda i: len(inputs[ids][i:i + 4]) * width[i])
    assert len(seen[tuple(inputs[ids][widest, :width[widest]].tolist())]) == 1
    for (first_grad, first), (second_grad, second) in twice:
        assert not first_grad and second_grad
        assert torch.equal(first, second)
    again = encode({k: inputs[k][:4] for k in model.encoder_rows[0]})[0]
    assert not torch.allclose(again, next(iter(seen.values()))[0][1])  # dropout is on: another draw differs
    assert torch.isfinite(out["loss"]) and out["loss"] > 0
    grads = gradients(model)
    assert grads and all(torch.isfinite(g).all() for g in grads.values())


def test_the_kept_chunk_draws_what_encoding_it_again_would_have(tiny, tmp_path):
    """Dropout on: the step's loss terms and gradients with the widest chunk's graph kept equal those of encoding
    every chunk twice (the random state of its Condenser head too), chunk by chunk."""
    model = objective_for(tiny, tmp_path, objective="cocondenser").train()
    torch.manual_seed(2)
    inputs = model.prepare(XS, YS, METHODS)
    torch.manual_seed(5)
    kept = gradcache_step(model, inputs, 4)
    got = gradients(model)
    from sentence_transformers.base.losses.gradcache import RandContext

    torch.manual_seed(5)  # by hand: every chunk without a graph, then again with one under its random state
    chunks = [{k: inputs[k][i:i + 4] for k in model.encoder_rows[0]} for i in range(0, 12, 4)]
    chunks = [rows_of(c, model.encoder_rows, slice(None)) for c in chunks]
    counts = model.counts(inputs)
    states, hs = [], []
    with torch.no_grad():
        for c in chunks:
            states.append(RandContext(*c.values()))
            hs.append(model.encode(c)[0])
    h = torch.cat(hs).requires_grad_()
    model.weighted(model.batch_terms(h, inputs, counts)).backward()
    terms = {}
    for i, (c, state) in enumerate(zip(chunks, states)):
        with state:
            h_c, st = model.encode(c)
            part = model.row_terms(h_c, st, c, counts)
        (model.weighted(part) + torch.dot(h_c.flatten(), h.grad[4 * i:4 * i + 4].flatten())).backward()
        terms = {k: terms.get(k, 0) + v.detach() for k, v in part.items()}
    expected = gradients(model)
    for name in ("mlm", "aux"):
        assert kept[name].item() == pytest.approx(terms[name].item(), rel=1e-5)
    for name, grad in expected.items():
        assert torch.allclose(got[name], grad, rtol=1e-4, atol=1e-6), name


def test_pretrain_with_mini_batch_size_steps_and_records_it(tiny, tmp_path):
    pairs = write_pairs(tmp_path, XS, YS)
    result = run(PretrainConfig(pairs=pairs, out=tmp_path / "m", model=str(tiny), batch_size=6,
                                mini_batch_size=4, max_steps=2, max_length=24))
    assert result.steps == 2 and result.manifest.options["mini_batch_size"] == 4
    assert all(torch.isfinite(torch.tensor(row["cl"])) for row in result.curve)


def test_mini_batch_size_must_be_positive(tmp_path):
    with pytest.raises(ValueError, match="mini_batch_size must be at least 1"):
        PretrainConfig(pairs=tmp_path, out=tmp_path / "m", mini_batch_size=0)
