"""pretriever pretrain: coCondenser and CoT-MAE losses by hand, mask rates, what the decoder sees, saved models,
and pretrain -> train -> index -> evaluate on a tiny SciFact corpus."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file
from typer.testing import CliRunner

from pretriever.cli import app
from pretriever import mine
from pretriever.mine import MineConfig
from pretriever.pretrain import PretrainConfig, PretrainError
from pretriever.pretrain.data import batch_texts, epoch_batches, load_pairs
from pretriever.pretrain.heldout import heldout_mlm
from pretriever.pretrain.objectives.base import mlm_loss, mlm_losses, run_layers
from pretriever.pretrain.objectives.cocondenser import contrastive_loss
from pretriever.pretrain.objectives.cotmae import window_mask
from pretriever.pretrain.run import build_objective, run
from pretriever.stage import MARKER
from pretriever.testing import beir_subset, minilm_tokenizer
from conftest import SCIFACT, build, shared
from pretrain_fixtures import tiny_bert_st, tiny_condenser, write_pairs
from train_callbacks import Interrupt

OLD_PRETRAIN_JSON = Path(__file__).parent / "data" / "stage_layout_0.1" / "pretrain" / "pretrain.json"

XS = ["Vitamin D deficiency is common in patients with depression and low sunlight exposure.",
      "Aspirin lowers the risk of colorectal cancer in long term users.",
      "Microglia prune synapses during development of the visual cortex."]
YS = ["does vitamin d affect mood", "aspirin and cancer risk", "what do microglia do in the brain"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return tiny_bert_st(tmp_path_factory.mktemp("bert") / "st")


def objective_for(tiny, tmp_path, **kw):
    cfg = PretrainConfig(pairs=tmp_path, out=tmp_path / "m", model=str(tiny), **kw)
    _, objective, notes = build_objective(cfg, "cpu")
    return objective.eval(), notes


def phi(objective, hidden):
    """The BERT MLM head by hand: dense, GELU, LayerNorm, then the (tied) word embeddings plus a bias."""
    head = objective.mlm.cls.predictions
    h = F.gelu(F.linear(hidden, head.transform.dense.weight, head.transform.dense.bias))
    h = F.layer_norm(h, (h.shape[-1],), head.transform.LayerNorm.weight, head.transform.LayerNorm.bias,
                     head.transform.LayerNorm.eps)
    return h @ objective.encoder.embeddings.word_embeddings.weight.T + head.bias


def ce_by_hand(logits, labels):
    keep = labels != -100
    logp = logits.log_softmax(-1)[keep]
    return -logp[torch.arange(len(logp)), labels[keep]].mean()


def test_cocondenser_loss_by_hand(tiny, tmp_path):
    objective, notes = objective_for(tiny, tmp_path, objective="cocondenser", similarity="dot", scale=2.0,
                                     head_layers=1)
    assert notes["mlm_head"] == "created and tied to the input embeddings"
    torch.manual_seed(3)
    inputs = objective.prepare(XS, YS)
    with torch.no_grad():
        terms = objective(**inputs)
        out = objective.encoder(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"],
                                output_hidden_states=True)
        last, middle = out.hidden_states[2], out.hidden_states[1]  # L = 2, M = L/2 = 1
        labels = inputs["labels"]
        mlm = ce_by_hand(phi(objective, last), labels)
        head_in = torch.cat([last[:, :1], middle[:, 1:]], 1)
        pad = (1 - inputs["attention_mask"][:, None, None, :].float()) * torch.finfo(torch.float32).min
        aux = ce_by_hand(phi(objective, objective.condenser[0](head_in, attention_mask=pad)), labels)
        h = last[:, 0]  # the tiny model pools by [CLS] and does not normalise
        # the official code (caskcsg/ir cocondenser/modeling.py): spans interleaved x_1, y_1, x_2, y_2, ...
        z = torch.stack([h[:3], h[3:]], 1).reshape(6, -1)
        s = z @ z.T * 2.0
        s.fill_diagonal_(float("-inf"))
        cl = F.cross_entropy(s, torch.arange(6).view(-1, 2).flip([1]).flatten())
    assert (labels != -100).any()
    assert terms["mlm"].item() == pytest.approx(mlm.item(), rel=1e-5)
    assert terms["aux"].item() == pytest.approx(aux.item(), rel=1e-5)
    assert terms["cl"].item() == pytest.approx(cl.item(), rel=1e-5)
    assert terms["loss"].item() == pytest.approx((mlm + aux + cl).item(), rel=1e-5)
    assert abs(terms["mlm"].item() - terms["aux"].item()) > 1e-6  # the head is not the encoder


def test_the_last_layer_at_the_masked_positions_is_the_whole_layer_there(tiny, tmp_path):
    """run_layers with targets (the Condenser head, CoT-MAE's MLM decoder) computes the last layer's attention
    output and feed-forward at the masked positions only: the states there and every gradient are those of the
    whole layers; mlm_losses (one head call for the encoder's and the head's states) equals one mlm_loss each."""
    objective, _ = objective_for(tiny, tmp_path, objective="cocondenser", head_layers=2)
    objective.eval()
    torch.manual_seed(3)
    hidden = torch.randn(3, 7, 32, requires_grad=True)
    mask = torch.tensor([[1] * 7, [1] * 5 + [0] * 2, [1] * 3 + [0] * 4])
    targets = torch.zeros(3, 7, dtype=torch.bool)
    targets[0, [1, 4]] = targets[1, 2] = targets[2, 1] = True
    labels = torch.full((3, 7), -100)
    labels[targets] = torch.tensor([5, 17, 2000, 42])

    def grads(loss):
        params = [hidden, *objective.condenser.parameters(), *objective.mlm_head.parameters()]
        return torch.autograd.grad(loss, params, allow_unused=True)

    whole = run_layers(objective.condenser, hidden, mask)
    part = run_layers(objective.condenser, hidden, mask, targets)
    assert part.shape == (4, 32) and torch.allclose(part, whole[targets], atol=1e-6)
    assert not torch.allclose(whole[targets], hidden[targets], atol=1e-3)  # the layers did something
    expected = mlm_loss(objective.mlm_head, hidden, labels) + 2 * mlm_loss(objective.mlm_head, whole, labels)
    mlm, head = mlm_losses(objective.mlm_head, [hidden[targets], part], labels[targets])
    assert mlm.item() == pytest.approx(mlm_loss(objective.mlm_head, hidden, labels).item(), rel=1e-6)
    assert (mlm + 2 * head).item() == pytest.approx(expected.item(), rel=1e-6)
    for got, want in zip(grads(mlm + 2 * head), grads(expected)):
        assert (got is None) == (want is None)
        assert got is None or torch.allclose(got, want, rtol=1e-4, atol=1e-6)


def test_cocondenser_contrastive_loss_is_the_official_2b_by_2b_one():
    """Two pairs in 2-D, dot, scale 1: every span is an anchor; its partner is the positive and the other two
    spans (not only the other pair's y) are the negatives; the span itself is left out."""
    x1, y1, x2, y2 = [1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [-1.0, 0.0]

    def nll(positive, negatives):
        return -positive + math.log(sum(math.exp(v) for v in [positive, *negatives]))

    # dot products: x1.y1 = 1, x1.x2 = 0, x1.y2 = -1, y1.x2 = 1, y1.y2 = -1, x2.y2 = 0
    by_hand = (nll(1, [0, -1]) + nll(1, [1, -1]) + nll(0, [0, 1]) + nll(0, [-1, -1])) / 4
    assert by_hand == pytest.approx(0.817280, abs=1e-6)
    got = contrastive_loss(torch.tensor([x1, x2, y1, y2]), scale=1.0, similarity="dot")
    assert got.item() == pytest.approx(by_hand, rel=1e-6)
    one_way = (nll(1, [-1]) + nll(0, [1])) / 2  # the former B x B loss, x -> y only: not what the papers train
    assert abs(got.item() - one_way) > 0.05
    scaled = contrastive_loss(torch.tensor([x1, x2, y1, y2]) * 3, scale=20.0, similarity="cos")
    assert scaled.item() == pytest.approx(contrastive_loss(F.normalize(torch.tensor([x1, x2, y1, y2]), dim=-1),
                                                           scale=20.0, similarity="dot").item(), rel=1e-6)


def test_the_objective_trains_the_vector_that_encode_returns(tmp_path):
    """A mean-pooled, normalised model (as the packaged MiniLM): the objective's embedding of unmasked text is
    what the model's ``encode`` returns, and the Condenser head's first position reads that vector before its
    normalisation (the mean of the last layer's token states, at their scale: a unit vector there was drowned by
    token states of norm 10 and more, and the head ignored it)."""
    from sentence_transformers import SentenceTransformer

    base = tiny_bert_st(tmp_path / "mean", pooling="mean", normalize=True)
    objective, notes = objective_for(base, tmp_path, objective="cocondenser")
    assert notes["pooling"] == "mean" and notes["normalize"] is True
    enc = objective.tokenize(XS)
    with torch.no_grad():
        last = objective.encoder(**enc).last_hidden_state
        h = objective.sentence_embedding(last, enc["attention_mask"])
    expected = SentenceTransformer(str(base), device="cpu").encode(XS, convert_to_tensor=True)
    assert torch.allclose(h, expected, atol=1e-5)
    assert not torch.allclose(h, last[:, 0], atol=1e-3)
    seen = {}
    hook = objective.condenser[0].register_forward_pre_hook(lambda m, args: seen.update(hidden=args[0]))
    inputs = objective.prepare(XS, YS)
    with torch.no_grad():
        objective(**inputs)
        last = objective.encoder(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"])[0]
        h = objective.sentence_embedding(last, inputs["attention_mask"])
    hook.remove()
    pooled = objective.pooled(last, inputs["attention_mask"])
    assert torch.allclose(F.normalize(pooled, dim=-1), h, atol=1e-6)
    assert torch.allclose(seen["hidden"][:, 0], pooled, atol=1e-6)
    assert (pooled.norm(dim=-1) > 2).all()  # not the unit vector h


def test_the_cotmae_decoders_read_the_pooled_vector_before_normalisation(tmp_path):
    """Both decoders (context MLM and AR) start from the partner's pooled vector at the token embeddings' scale."""
    base = tiny_bert_st(tmp_path / "mean", pooling="mean", normalize=True)
    objective, _ = objective_for(base, tmp_path, objective="cotmae", decoder="auto")
    seen = {}
    hooks = [objective.decoder[0].register_forward_pre_hook(lambda m, args: seen.update(ctx=args[0])),
             objective.ar_decoder[0].register_forward_pre_hook(lambda m, args: seen.update(ar=args[0]))]
    torch.manual_seed(2)
    inputs = objective.prepare(XS, YS, ["cc", "qc", "cc"])
    with torch.no_grad():
        objective(**inputs)
        last = objective.encoder(input_ids=inputs["x_ids"], attention_mask=inputs["x_mask"]).last_hidden_state
        pooled = objective.pooled(last, inputs["x_mask"])
    for hook in hooks:
        hook.remove()
    assert torch.allclose(seen["ctx"][:, 0], pooled[inputs["y_src"]], atol=1e-6)
    assert torch.allclose(seen["ar"][:, 0], pooled[inputs["ar_src"]], atol=1e-6)  # eval: no dropout
    assert not torch.allclose(pooled.norm(dim=-1), torch.ones(len(pooled)), atol=0.1)


def test_contrastive_only_pretraining_moves_what_encode_returns(tmp_path):
    """--mlm-weight 0: coCondenser's contrastive term alone, on a mean-pooled, normalised model. The saved model's
    ``encode`` changes and the same loss computed from its embeddings falls (before: the whole point was lost on
    a [CLS] vector that the model never returns)."""
    from sentence_transformers import SentenceTransformer

    xs = XS + ["Statins reduce cholesterol in adults.", "Sleep loss impairs memory consolidation.",
               "Insulin resistance precedes type 2 diabetes.", "Smoking damages lung tissue over decades.",
               "Exercise improves cardiovascular health.", "Gut bacteria influence the immune system."]
    ys = YS + ["statins and cholesterol", "sleep and memory", "what comes before diabetes", "smoking lungs",
               "exercise heart", "microbiome immunity"]
    base = tiny_bert_st(tmp_path / "mean", pooling="mean", normalize=True)
    out = tmp_path / "m"
    run(PretrainConfig(pairs=write_pairs(tmp_path, xs, ys), out=out, model=str(base), mlm_weight=0,
                       batch_size=9, max_steps=15, learning_rate=1e-3, warmup_ratio=0.0, max_length=24))

    def loss(model_dir):
        model = SentenceTransformer(str(model_dir), device="cpu")
        emb = model.encode(xs + ys, convert_to_tensor=True)
        return emb, contrastive_loss(emb, scale=20.0).item()

    (before, loss_before), (after, loss_after) = loss(base), loss(out)
    assert not torch.allclose(before, after, atol=1e-3)
    assert loss_after < loss_before - 0.1, (loss_before, loss_after)
    report = json.loads((out / "pretrain.json").read_text())
    assert report["model"]["pooling"] == "mean" and report["model"]["normalize"] is True


def test_cls_pooling_when_asked_is_saved(tiny, tmp_path):
    from sentence_transformers import SentenceTransformer

    base = tiny_bert_st(tmp_path / "mean", pooling="mean", normalize=True)
    out = tmp_path / "m"
    run(PretrainConfig(pairs=write_pairs(tmp_path, XS, YS), out=out, model=str(base), pooling="cls",
                       batch_size=3, max_steps=1, max_length=16))
    assert json.loads((out / "1_Pooling" / "config.json").read_text())["pooling_mode"] == "cls"
    model = SentenceTransformer(str(out), device="cpu")
    assert [type(m).__name__ for m in model] == ["Transformer", "Pooling", "Normalize"]  # its own normalisation


@pytest.mark.parametrize("objective,layers", [("cocondenser", 1), ("cotmae", 2)])
def test_the_head_starts_from_a_condenser_checkpoints_model_pt(tmp_path, objective, layers):
    """Luyu/condenser's layout: the encoder with its MLM head, and model.pt beside it with c_head.N.*. The head
    starts from those weights (a layer model.pt lacks stays new; one it has beyond ours is left out)."""
    path = tiny_condenser(tmp_path / "condenser", head_layers=2)
    saved = torch.load(path / "model.pt", weights_only=True)
    option = "head_layers" if objective == "cocondenser" else "decoder_layers"
    model, notes = objective_for(path, tmp_path, objective=objective, **{option: layers})
    head = getattr(model, model.heads["c_head."])
    assert notes["head"] == f"from {path / 'model.pt'}" and notes["mlm_head"] == "from the checkpoint"
    assert notes["pooling"] == "cls" and notes["normalize"] is False  # a plain checkpoint: the paper's [CLS]
    for key, value in head.state_dict().items():
        assert torch.equal(value, saved[f"c_head.{key}"])
    assert notes["head_weights_loaded"] == len(head.state_dict())
    # CoT-MAE's AR decoder (--decoder auto) has no weights in a Condenser checkpoint: listed as new
    assert bool(notes["head_weights_new"]) == (objective == "cotmae")
    assert all(k.startswith(("d_head.", "d_head_ln_f.")) for k in notes["head_weights_new"])
    assert bool(notes["head_weights_left_out"]) == (layers == 1)  # model.pt's second layer has no place
    (path / "model.pt").unlink()
    _, fresh = objective_for(path, tmp_path, objective=objective)
    assert fresh["head"] == "new"


def test_the_ar_decoder_starts_from_a_cotmae_checkpoints_d_head(tmp_path):
    """caskcsg's CoT-MAE saves its AR decoder in model.pt as d_head.N.* (GPT-2 blocks) and d_head_ln_f.*: with
    --decoder ar they fill our AR decoder and its final LayerNorm; its window-mask buffer and the c_head layers
    (no place with the AR decoder alone) are left out and reported."""
    path = tiny_condenser(tmp_path / "cotmae", ar_layers=1)
    saved = torch.load(path / "model.pt", weights_only=True)
    model, notes = objective_for(path, tmp_path, objective="cotmae", decoder="ar")
    assert notes["head"] == f"from {path / 'model.pt'}" and notes["head_modules"] == ["ar_decoder", "ar_norm"]
    for key, value in model.ar_decoder.state_dict().items():
        assert torch.equal(value, saved[f"d_head.{key}"]), key
    assert torch.equal(model.ar_norm.weight, saved["d_head_ln_f.weight"])
    assert notes["head_weights_loaded"] == len(model.ar_decoder.state_dict()) + 2 and notes["head_weights_new"] == []
    assert "d_head.0.attn.bias" in notes["head_weights_left_out"]
    assert any(k.startswith("c_head.") for k in notes["head_weights_left_out"])
    both, notes = objective_for(path, tmp_path, objective="cotmae")  # auto: both decoders, each from its weights
    assert notes["head_modules"] == ["decoder", "ar_decoder", "ar_norm"]
    assert torch.equal(both.decoder[0].output.dense.weight, saved["c_head.0.output.dense.weight"])


def test_a_model_pt_that_would_run_code_is_refused(tmp_path):
    path = tiny_condenser(tmp_path / "condenser")
    marker = tmp_path / "the-code-ran"
    torch.save({"c_head.0.x": _Planted(marker)}, path / "model.pt")
    with pytest.raises(PretrainError, match=r"model\.pt.*tensors only"):
        objective_for(path, tmp_path, objective="cocondenser")
    assert not marker.exists()


def test_gradient_accumulation_warns_that_it_adds_no_in_batch_negatives(tiny, tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        result = run(PretrainConfig(pairs=write_pairs(tmp_path, XS + YS, YS + XS), out=tmp_path / "m",
                                    model=str(tiny), batch_size=3, gradient_accumulation=2, max_steps=1,
                                    max_length=16))
    assert "does not add in-batch negatives" in caplog.text
    assert "scores 3 pairs" in result.manifest.model["warning"] and result.pairs_seen == 6


def test_cotmae_ar_decoder_reads_the_unmasked_query_through_a_window_of_3(tiny, tmp_path):
    """caskcsg's query-as-context decoder: GPT-2 blocks over [h_x ; e(y)] with y unmasked; position i sees h_x and
    positions i-2..i only; each position predicts the next token (padding ignored)."""
    objective, _ = objective_for(tiny, tmp_path, objective="cotmae", decoder="ar")
    assert objective.decoder is None and len(objective.ar_decoder) == 1
    torch.manual_seed(5)
    inputs = objective.prepare(XS, YS, ["qc"] * 3)
    assert "y_ids" not in inputs and inputs["ar_src"].tolist() == [0, 1, 2]
    assert torch.equal(inputs["ar_ids"], objective.tokenize(YS)["input_ids"])  # the query as it is, unmasked
    with torch.no_grad():
        terms = objective(**inputs)
        last = objective.encoder(input_ids=inputs["x_ids"], attention_mask=inputs["x_mask"]).last_hidden_state
        ids, mask = inputs["ar_ids"], inputs["ar_mask"]
        hidden = torch.cat([last[:, :1], objective.encoder.embeddings(input_ids=ids)[:, 1:]], 1)

        def decode(h):
            out = objective.ar_decoder[0](h, attention_mask=window_mask(mask, 3, h.dtype))
            return objective.ar_norm(out[0] if isinstance(out, tuple) else out)

        logits = phi(objective, decode(hidden))
        targets = ids.masked_fill(mask == 0, -100)
        by_hand = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), targets[:, 1:].reshape(-1),
                                  ignore_index=-100)
        assert terms["ar"].item() == pytest.approx(by_hand.item(), rel=1e-5)
        assert terms["loss"].item() == pytest.approx((terms["mlm"] + terms["ar"]).item(), rel=1e-6)
        row, i = 2, int(mask[2].sum()) - 1  # the last real position of the longest query
        assert i >= 5
        base = decode(hidden)[row, i]
        for j, seen in [(0, True), (i - 2, True), (i - 1, True), (i - 3, False), (1, False)]:
            changed = hidden.clone()
            changed[row, j] += torch.linspace(-1.0, 1.0, hidden.shape[-1])  # not a constant: LayerNorm drops those
            assert (not torch.allclose(decode(changed)[row, i], base, atol=1e-6)) == seen, j


def test_cotmae_auto_is_ar_for_qc_and_symmetric_for_context_pairs(tiny, tmp_path):
    """Per example: qc goes to the AR decoder; cc is CoT-MAE v1: both spans encoded, each decoded at 45% from the
    other's embedding by a 2-layer decoder."""
    objective, _ = objective_for(tiny, tmp_path, objective="cotmae")
    assert len(objective.decoder) == 2 and len(objective.ar_decoder) == 1
    torch.manual_seed(6)
    inputs = objective.prepare(XS, YS, ["cc", "qc", "cc"])
    tokenize = objective.tokenize
    encoded = XS + [YS[0], YS[2]]
    decoded = [YS[0], YS[2], XS[0], XS[2]]
    for key, texts in (("x", encoded), ("y", decoded)):
        plain = tokenize(texts)
        assert torch.equal(inputs[f"{key}_mask"], plain["attention_mask"])
        kept = inputs[f"{key}_labels"] == -100
        assert torch.equal(inputs[f"{key}_ids"][kept], plain["input_ids"][kept])  # only masked pieces differ
    assert inputs["y_src"].tolist() == [0, 2, 3, 4]  # y_1 from h(x_1), y_3 from h(x_3), x_1 from h(y_1), ...
    assert inputs["ar_src"].tolist() == [1] and torch.equal(inputs["ar_ids"], tokenize([YS[1]])["input_ids"])
    seen = {}
    hook = objective.decoder[0].register_forward_pre_hook(lambda m, args: seen.update(hidden=args[0]))
    with torch.no_grad():
        terms = objective(**inputs)
        last = objective.encoder(input_ids=inputs["x_ids"], attention_mask=inputs["x_mask"]).last_hidden_state
    hook.remove()
    assert torch.allclose(seen["hidden"][:, 0], last[[0, 2, 3, 4], 0])
    assert all(terms[t].item() > 0 for t in ("mlm", "ctx_mlm", "ar"))
    assert terms["loss"].item() == pytest.approx(sum(terms[t].item() for t in ("mlm", "ctx_mlm", "ar")), rel=1e-5)


def test_cotmae_loss_by_hand_and_what_the_decoder_sees(tiny, tmp_path):
    objective, _ = objective_for(tiny, tmp_path, objective="cotmae", decoder="mlm")  # eq. 10, one direction
    torch.manual_seed(4)
    inputs = objective.prepare(XS, YS)
    seen = {}
    layer = objective.decoder[0]  # one layer, the last: its attention reads every position (run_layers)
    pre = layer.attention.self.register_forward_pre_hook(
        lambda m, args, kwargs: seen.update(hidden=args[0], **kwargs), with_kwargs=True)
    with torch.no_grad():
        terms = objective(**inputs)
        x_last = objective.encoder(input_ids=inputs["x_ids"], attention_mask=inputs["x_mask"]).last_hidden_state
        y_embedded = objective.encoder.embeddings(input_ids=inputs["y_ids"])
    pre.remove()
    hidden = seen["hidden"]
    # the decoder reads y's positions only: x's [CLS] vector in place of y's [CLS], then masked y's embeddings
    assert hidden.shape[:2] == inputs["y_ids"].shape
    assert torch.allclose(hidden[:, 0], x_last[:, 0])
    assert torch.allclose(hidden[:, 1:], y_embedded[:, 1:])
    pad = (1 - inputs["y_mask"][:, None, None, :].float()) * torch.finfo(torch.float32).min
    assert torch.equal(seen["attention_mask"], pad)
    labels = inputs["y_labels"]
    tok = minilm_tokenizer()
    assert (inputs["y_ids"][labels != -100] != labels[labels != -100]).any()  # the targets are hidden from it
    assert (inputs["y_ids"] == tok.mask_token_id).sum() > 0
    mlm = ce_by_hand(phi(objective, x_last), inputs["x_labels"])
    with torch.no_grad():  # the whole layer at every position, as eq. 10 reads
        ctx = ce_by_hand(phi(objective, layer(hidden, attention_mask=pad)), labels)
    assert terms["mlm"].item() == pytest.approx(mlm.item(), rel=1e-5)
    assert terms["ctx_mlm"].item() == pytest.approx(ctx.item(), rel=1e-5)
    assert terms["loss"].item() == pytest.approx((mlm + ctx).item(), rel=1e-5)


@pytest.mark.parametrize("objective,option,key,rate", [
    ("cocondenser", "mask_rate", "labels", 0.15), ("cocondenser", "mask_rate", "labels", 0.4),
    ("cotmae", "encoder_mask_rate", "x_labels", 0.30), ("cotmae", "decoder_mask_rate", "y_labels", 0.45)])
def test_mask_rates_and_whole_words(tiny, tmp_path, objective, option, key, rate):
    """As the official collators: per sequence up to max(1, round(rate x n)) of its n word pieces and at least one,
    whole words (a word's pieces all or none), never [CLS]/[SEP]/padding, then 80% [MASK], 10% random, 10% kept."""
    model, _ = objective_for(tiny, tmp_path, objective=objective, **{option: rate})
    tok = minilm_tokenizer()
    torch.manual_seed(0)
    texts = [" ".join(XS)] * 100 + ["Microglia prune synapses."] * 100  # "microglia" is several pieces
    inputs = model.prepare(texts, texts)
    labels = inputs[key]
    enc = model.tokenize((texts + texts)[:len(labels)])  # coCondenser masks x and y in one batch
    ids = enc["input_ids"]
    masked = labels != -100
    maskable = (enc["attention_mask"].sum(1) - 2)  # every piece but [CLS], [SEP] and padding
    targets = [max(1, round(rate * n)) for n in maskable.tolist()]
    counts = masked.sum(1).tolist()
    assert all(1 <= c <= t for c, t in zip(counts, targets))  # a word that would overshoot is skipped
    assert sum(counts) >= 0.9 * sum(targets)
    assert not masked[:, 0].any() and not masked[ids == tok.pad_token_id].any()
    assert torch.equal(labels[masked], ids[masked])
    for row in range(len(ids)):
        words: dict[int, set[bool]] = {}
        for i, w in enumerate(enc.word_ids(row)):
            if w is not None:
                words.setdefault(w, set()).add(bool(masked[row, i]))
        assert all(len(v) == 1 for v in words.values())  # a word is masked whole or not at all
    assert any(len([w for w in enc.word_ids(r) if w == 0]) > 1 for r in range(len(ids)))  # words of many pieces
    shown = inputs["input_ids" if key == "labels" else key.replace("labels", "ids")][masked]
    assert (shown == tok.mask_token_id).float().mean().item() == pytest.approx(0.8, abs=0.03)
    assert (shown == labels[masked]).float().mean().item() == pytest.approx(0.1, abs=0.03)  # left as it was


def test_a_long_text_is_cut_at_a_random_offset_as_the_official_collators(tiny, tmp_path):
    """caskcsg/ir and luyug/Condenser ``_truncate``: a text over max_length keeps max_length - 2 consecutive word
    pieces from a random offset (not always its beginning), between [CLS] and [SEP]; word ids follow the cut, so
    masking stays whole-word; a short text is left whole; the offset comes from torch's seeded generator."""
    model, _ = objective_for(tiny, tmp_path, objective="cocondenser", max_length=12)
    tok = minilm_tokenizer()
    long, short = " ".join(XS), YS[1]
    pieces = tok(long, add_special_tokens=False)["input_ids"]
    assert len(pieces) > 30
    starts = set()
    for seed in range(20):
        torch.manual_seed(seed)
        enc = model.tokenize([long, short])
        row = enc["input_ids"][0].tolist()
        assert len(row) == 12 and row[0] == tok.cls_token_id and row[-1] == tok.sep_token_id
        start = next(i for i in range(len(pieces) - 9) if pieces[i:i + 10] == row[1:-1])
        starts.add(start)
        words = tok(long, add_special_tokens=False).word_ids()
        assert enc.word_ids(0) == [None, *words[start:start + 10], None]
        assert enc["input_ids"][1][enc["attention_mask"][1] == 1].tolist() == tok(short)["input_ids"]
        torch.manual_seed(seed)
        assert torch.equal(model.tokenize([long, short])["input_ids"], enc["input_ids"])
    assert len(starts) > 5 and 0 < max(starts) <= len(pieces) - 10


def test_one_generated_query_per_passage_per_epoch(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"method": "qc", "query": f"q{p}-{c}", "positive_text": f"passage {p}", "positive_passage_id": f"p{p}",
             "candidate": c} for p in range(8) for c in range(3)]
    rows += [{"method": "cc", "query": f"x{i}", "positive_text": f"y{i}", "positive_passage_id": f"c{i}",
              "candidate": None} for i in range(8)]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "pairs.parquet")
    pairs = load_pairs(tmp_path)
    assert pairs.per_method == {"qc": 8, "cc": 8} and len(pairs.x) == 32
    picked = {e: [pairs.y[i] for b in epoch_batches(pairs, e, 4, 0, None) for i in b] for e in range(3)}
    for ys in picked.values():
        qc = [y for y in ys if y.startswith("q")]
        assert len(qc) == 8 and len({y.split("-")[0] for y in qc}) == 8  # each passage once, one candidate
    assert len({y for ys in picked.values() for y in ys if y.startswith("q")}) > 8  # other candidates next epochs
    mixed = epoch_batches(pairs, 0, 4, 0, {"qc": 0.5, "cc": 0.5})
    assert any(len({pairs.method[i] for i in b}) == 2 for b in mixed)  # contexts mix within a batch (per example)
    assert all(len(b) == 4 for b in mixed) and len({i for b in mixed for i in b}) == 4 * len(mixed)
    with pytest.raises(PretrainError, match="ict"):
        load_pairs(tmp_path, ["ict"])


def test_cc_draws_two_passages_of_a_document_anew_each_time_it_is_read(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    docs = {"D1": [f"d1 passage {k}" for k in range(4)], "D2": [f"d2 passage {k}" for k in range(3)]}
    rows = [{"method": "cc", "query": ps[k], "positive_text": ps[(k + 1) % len(ps)], "query_doc_id": d}
            for d, ps in docs.items() for k in range(len(ps))]  # mine's circle: each passage paired with the next
    mined = {(r["positive_text"], r["query"]) for r in rows}
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "cc.parquet")
    pairs = load_pairs(tmp_path)
    assert pairs.per_method == {"cc": 2}  # a unit is a document, read once per epoch
    drawn = set()
    for epoch in range(20):
        (batch,) = epoch_batches(pairs, epoch, 2, 0, None)
        xs, ys = batch_texts(pairs, batch, epoch, 0)
        assert batch_texts(pairs, batch, epoch, 0) == (xs, ys)  # seeded: a resumed run draws the same
        for x, y in zip(xs, ys):
            assert x != y and any(x in ps and y in ps for ps in docs.values())
            drawn.add((x, y))
    assert len(drawn) > len(mined) and drawn - mined  # pairs the mining never fixed


def test_a_pair_two_methods_found_is_pretrained_once(tiny, tmp_path):
    """cc and ict both give (passage A, passage B): it is kept once, by the method read first, and counted;
    the same pair twice within one method is that method's own business and stays."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    cc = [{"method": "cc", "query": f"x{i}", "positive_text": f"y{i}"} for i in range(6)]
    ict = [{"method": "ict", "query": f"x{i}", "positive_text": f"y{i}"} for i in range(2)]  # found by cc too
    ict += [{"method": "ict", "query": f"s{i}", "positive_text": f"y{i}"} for i in range(4)]  # new positives' pairs
    ict += [{"method": "ict", "query": "s0", "positive_text": "y0"}]  # ict's own repeat
    pq.write_table(pa.Table.from_pylist(cc), tmp_path / "cc.parquet")
    pq.write_table(pa.Table.from_pylist(ict), tmp_path / "ict.parquet")
    pairs = load_pairs(tmp_path)
    assert pairs.duplicate_across == {"ict": 2} and pairs.per_method == {"cc": 6, "ict": 5}
    assert [y for y, m in zip(pairs.y, pairs.method) if pairs.methods[m] == "ict"] == ["s0", "s1", "s2", "s3", "s0"]
    assert load_pairs(tmp_path, ["ict"]).duplicate_across == {}  # alone, ict keeps all of its pairs
    result = run(PretrainConfig(pairs=tmp_path, out=tmp_path / "m", model=str(tiny), batch_size=2,
                                max_steps=1, max_length=16))
    assert result.manifest.pairs["duplicate_across_methods"] == {"ict": 2}
    written = json.loads((tmp_path / "m" / "pretrain.json").read_text())
    assert written["pairs"]["rows"] == 11
    assert list(written) == list(json.loads(OLD_PRETRAIN_JSON.read_text()))  # the keys and order 0.1.0 wrote


@pytest.fixture(scope="module")
def scifact(tmp_path_factory):
    root = tmp_path_factory.mktemp("e2e")
    beir = beir_subset(root / "beir", shared(SCIFACT), n_docs=30, n_queries=8)
    store = build(beir, root / "store", words=60, workers=1)
    mine.run(MineConfig(corpus=store.path, out=root / "pairs", methods="cc", negatives="none", stats_sample=10))
    return root, beir, store


@pytest.mark.parametrize("objective", ["cocondenser", "cotmae"])
def test_saved_model_is_plain_and_reloads(tiny, scifact, tmp_path, objective):
    from sentence_transformers import SentenceTransformer

    root, _, _ = scifact
    out = tmp_path / objective
    result = run(PretrainConfig(pairs=root / "pairs", out=out, objective=objective, model=str(tiny),
                                batch_size=4, max_steps=3, logging_steps=1, max_length=48))
    before, after = load_file(tiny / "model.safetensors"), load_file(out / "model.safetensors")
    assert set(after) == set(before)  # no MLM head, Condenser head or decoder weights (those are in model.pt)
    assert not any(k.startswith(("cls.", "condenser", "decoder")) for k in after)
    assert not torch.equal(before["embeddings.word_embeddings.weight"], after["embeddings.word_embeddings.weight"])
    report = json.loads((out / "pretrain.json").read_text())
    assert report["steps"] == 3 and [p["step"] for p in report["loss_curve"]] == [1, 2, 3]
    assert set(report["loss_curve"][0]) >= {"loss", *report["terms"]}
    assert result.pairs_seen == 12
    model = SentenceTransformer(str(out), device="cpu")
    assert model.encode(["a query"]).shape == (1, 32)


def test_resume_gives_the_same_model(tiny, scifact, tmp_path):
    root, _, _ = scifact
    options = dict(pairs=root / "pairs", objective="cotmae", model=str(tiny), batch_size=4, max_steps=4,
                   save_steps=2, max_length=48)
    run(PretrainConfig(out=tmp_path / "whole", **options))
    part = tmp_path / "part"
    with pytest.raises(KeyboardInterrupt):
        run(PretrainConfig(out=part, **options), Interrupt(3, "pretraining"))
    assert (part / "checkpoints" / "step-2.pt").exists()
    with pytest.raises(PretrainError, match="--resume"):
        run(PretrainConfig(out=part, **options))
    run(PretrainConfig(out=part, resume=True, **options))
    a, b = load_file(tmp_path / "whole" / "model.safetensors"), load_file(part / "model.safetensors")
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)


class _Planted:
    """Unpickling this runs code (it makes a folder): what a planted checkpoint could do."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        import os

        return os.mkdir, (self.marker,)


def test_resume_refuses_a_planted_checkpoint_without_running_it(tiny, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist([{"method": "cc", "query": f"x{i}", "positive_text": f"y{i}"}
                                         for i in range(4)]), tmp_path / "cc.parquet")
    out, marker = tmp_path / "m", tmp_path / "the-code-ran"
    (out / "checkpoints").mkdir(parents=True)
    (out / MARKER).write_text(json.dumps({"stage": "pretrain"}))  # a run folder of pretriever's, a checkpoint planted
    torch.save({"model": _Planted(marker), "step": 2}, out / "checkpoints" / "step-2.pt")
    with pytest.raises(PretrainError, match=r"step-2\.pt.*(refused|not a checkpoint)"):
        run(PretrainConfig(pairs=tmp_path, out=out, model=str(tiny), batch_size=2, max_steps=4, max_length=16,
                           resume=True))
    assert not marker.exists()


def test_pretrain_train_index_evaluate(scifact, tmp_path):
    root, beir, store = scifact
    runner = CliRunner()
    base = tiny_bert_st(tmp_path / "base")
    steps = [
        ["pretrain", str(root / "pairs"), "--objective", "cocondenser", "--model", str(base), "--batch-size", "4",
         "--max-steps", "4", "--max-length", "64", "--out", str(tmp_path / "pre")],
        ["train", "--beir", str(beir), "--split", "test", "--corpus", str(store.path), "--model",
         str(tmp_path / "pre"), "--batch-size", "4", "--max-steps", "2", "--max-query-length", "32",
         "--max-passage-length", "64", "--out", str(tmp_path / "ft")],
        ["index", "build", str(store.path), "--model", str(tmp_path / "ft"), "--out", str(tmp_path / "index")],
        ["evaluate", "--index", str(tmp_path / "index"), "--queries", str(beir / "queries.jsonl"), "--qrels",
         str(beir / "qrels" / "test.tsv"), "--no-plots", "--out", str(tmp_path / "eval")],
    ]
    for argv in steps:
        result = runner.invoke(app, argv, terminal_width=200)
        assert result.exit_code == 0, (argv[0], result.output)
    results = json.loads((tmp_path / "eval" / "results.json").read_text())
    (metrics,) = results["systems"].values()
    assert results["dataset"]["queries"] == 8
    assert 0.0 <= metrics["nDCG@10"] <= 1.0


@pytest.mark.parametrize("objective", ["cocondenser", "cotmae"])
def test_head_warmup_trains_the_heads_on_a_frozen_encoder(tiny, scifact, tmp_path, objective):
    """--head-warmup-steps: a run that stops inside the warm-up leaves the encoder exactly as it was and has moved
    the heads; the same run continued past the warm-up moves the encoder too. The warm-up's checkpoint resumes
    frozen: interrupted at step 3 of a 4-step warm-up (checkpoint at 2), resumed, the encoder is still unchanged."""
    root, _, _ = scifact
    options = dict(pairs=root / "pairs", objective=objective, model=str(tiny), batch_size=4, max_length=48,
                   head_warmup_steps=4, head_lr=1e-3, learning_rate=1e-3, logging_steps=1)
    before = load_file(tiny / "model.safetensors")

    def checkpoint_state(out):
        return torch.load(sorted((out / "checkpoints").glob("step-*.pt"))[-1], weights_only=True)["model"]

    warm = tmp_path / "warm"  # 4 warm-up steps, interrupted after step 3: its checkpoint is step 2, inside
    with pytest.raises(KeyboardInterrupt):
        run(PretrainConfig(out=warm, max_steps=6, save_steps=2, **options), Interrupt(3, "pretraining"))
    at_start = build_objective(PretrainConfig(out=tmp_path / "x", **options), "cpu")[1].state_dict()
    state = checkpoint_state(warm)
    encoder = [k for k in state if k.startswith("mlm.") and not k.startswith(("mlm.cls.", "mlm.lm_head."))]
    heads = [k for k in state if k not in encoder]
    assert encoder and heads
    assert all(torch.equal(state[k], at_start[k]) for k in encoder)
    assert any(not torch.equal(state[k], at_start[k]) for k in heads)
    # resumed inside the warm-up, stopped at its end (step 4 of 6): the encoder is still the starting one
    with pytest.raises(KeyboardInterrupt):
        run(PretrainConfig(out=warm, max_steps=6, save_steps=2, resume=True, **options),
            Interrupt(5, "pretraining"))
    state = checkpoint_state(warm)
    assert sorted((warm / "checkpoints").glob("step-*.pt"))[-1].name == "step-4.pt"
    assert all(torch.equal(state[k], at_start[k]) for k in encoder)
    # a run whose steps are all warm-up saves the starting encoder; with joint steps after it, the encoder moves
    only = tmp_path / "only"
    run(PretrainConfig(out=only, max_steps=4, **options))
    saved = load_file(only / "model.safetensors")
    assert all(torch.equal(saved[k], before[k]) for k in before)
    report = json.loads((only / "pretrain.json").read_text())
    assert report["model"]["head_warmup"]["steps"] == 4 and report["options"]["head_lr"] == 1e-3
    assert all(p["learning_rate"] == 0.0 and p["head_learning_rate"] > 0 for p in report["loss_curve"][:3])
    run(PretrainConfig(out=warm, max_steps=6, save_steps=2, resume=True, **options))
    moved = load_file(warm / "model.safetensors")
    assert not torch.equal(moved["embeddings.word_embeddings.weight"], before["embeddings.word_embeddings.weight"])
    curve = json.loads((warm / "pretrain.json").read_text())["loss_curve"]
    # each point shows the rate of the step after it (steps 0-3 warm-up, 4-5 joint, decaying to 0 after 5)
    assert [p["learning_rate"] > 0 for p in curve] == [False] * 3 + [True, True, False]


def test_head_warmup_refuses_a_contrastive_only_cocondenser(tmp_path):
    with pytest.raises(ValueError, match="nothing to warm up"):
        PretrainConfig(pairs=tmp_path, out=tmp_path / "m", mlm_weight=0, head_warmup_steps=10)


@pytest.mark.parametrize("decoder,term", [("symmetric", "ctx_mlm"), ("mlm", "ctx_mlm"), ("ar", "ar")])
def test_every_cotmae_context_is_weighted_alike(tiny, tmp_path, decoder, term):
    """Loss = w L_mlm + v (decoder term), whichever decoder reads the context (the cc, title and ICT arms of
    issue 21 were weighted 0.1 (MLM + ctx-MLM) for one and 0.1 MLM + 1 AR for the others)."""
    objective, _ = objective_for(tiny, tmp_path, objective="cotmae", decoder=decoder, mlm_weight=0.1,
                                 decoder_weight=0.5)
    torch.manual_seed(5)
    with torch.no_grad():
        out = objective(**objective.prepare(XS, YS, ["qc" if decoder == "ar" else "cc"] * len(XS)))
    assert out[term].item() > 0
    assert out["loss"].item() == pytest.approx(0.1 * out["mlm"].item() + 0.5 * out[term].item(), rel=1e-5)


def test_no_layernorm_weight_or_bias_is_decayed_by_module_type(tiny, tmp_path):
    """GPT-2's ln_1/ln_2 and the AR decoder's final norm are LayerNorms whose names a name filter missed."""
    from torch import nn

    from pretriever.pretrain.run import make_optimizer

    objective, _ = objective_for(tiny, tmp_path, objective="cotmae", decoder="auto")
    cfg = PretrainConfig(pairs=tmp_path, out=tmp_path / "m", model=str(tiny), objective="cotmae")
    _, optimizer, _ = make_optimizer(cfg, objective, 10, "cpu")
    decayed = {id(p) for g in optimizer.param_groups if g["weight_decay"] > 0 for p in g["params"]}
    norms = [m for m in objective.modules() if isinstance(m, nn.LayerNorm)]
    assert len(norms) > 3 and any(m is objective.ar_norm for m in norms)
    assert not any(id(p) in decayed for m in norms for p in m.parameters())
    assert not any(id(p) in decayed for name, p in objective.named_parameters() if name.endswith("bias"))
    assert any(id(p) in decayed for p in objective.ar_decoder[0].attn.c_attn.parameters())  # a weight matrix


def test_mlm_alone_from_a_random_start_is_a_plain_model_of_the_given_shape(tmp_path):
    """--objective mlm --init random: a BERT of the asked shape from nothing (the MiniLM tokenizer), trained on
    masked tokens alone; its MLM loss falls on the texts it sees, and the saved model encodes."""
    from sentence_transformers import SentenceTransformer

    xs = XS * 4
    ys = YS * 4
    out = tmp_path / "plain"
    result = run(PretrainConfig(pairs=write_pairs(tmp_path, xs, ys), out=out, objective="mlm", init="random",
                                init_layers=2, init_hidden=64, init_heads=2, batch_size=6, max_steps=30,
                                learning_rate=1e-3, warmup_ratio=0.0, logging_steps=5, max_length=32))
    curve = [row["mlm"] for row in result.curve]
    assert curve[-1] < curve[0] - 1.0  # from about ln(30522) = 10.3
    assert set(result.curve[0]) >= {"step", "mlm", "loss"} and "cl" not in result.curve[0]
    config = json.loads((out / "config.json").read_text())
    assert (config["num_hidden_layers"], config["hidden_size"], config["num_attention_heads"]) == (2, 64, 2)
    assert result.manifest.model["base"].startswith("random BERT 2 x 64")
    assert not (out / ".init").exists() and not (out / "checkpoints").exists()
    assert SentenceTransformer(str(out), device="cpu").encode(["a sentence"]).shape == (1, 64)


@pytest.mark.parametrize("options,message", [
    ({"objective": "mlm", "mlm_weight": 0}, "nothing to train"),
    ({"objective": "cotmae", "mlm_weight": 0, "decoder_weight": 0}, "nothing to train"),
    ({"init": "zeros"}, "init must be one of model, random"),
    ({"init": "random", "init_hidden": 100, "init_heads": 3}, "multiple of init_heads"),
    ({"target_perplexity": 50.0}, "target_perplexity needs eval_pairs"),
    ({"eval_pairs": "held", "target_perplexity": 1.0}, "above 1"),
    ({"eval_pairs": "held", "eval_steps": 0}, "eval_steps must be at least 1")])
def test_pretrain_settings_that_cannot_train_are_refused(tmp_path, options, message):
    with pytest.raises(ValueError, match=message):
        PretrainConfig(pairs=tmp_path, out=tmp_path / "m", **options)


def test_the_held_out_mlm_loss_is_the_mlm_term_on_fixed_masks_and_leaves_training_as_it_was(tiny, tmp_path):
    """heldout_mlm: the MLM objective's own loss on those texts (the same windows and masks, dropout off), the same
    at every call, perplexity its exp; the training's random state and mode are left as they were."""
    objective, _ = objective_for(tiny, tmp_path, objective="mlm")
    objective.train()
    torch.manual_seed(11)
    before = torch.get_rng_state()
    texts = XS + YS
    figures = heldout_mlm(objective, texts, 0.15, batch_size=len(texts), seed=7)
    assert torch.equal(torch.get_rng_state(), before) and objective.training
    assert heldout_mlm(objective, texts, 0.15, batch_size=len(texts), seed=7) == figures
    objective.eval()
    torch.manual_seed(7)
    with torch.no_grad():
        inputs = objective.prepare(XS, YS)  # masks x then y, as the held-out texts above, from the same seed
        expected = objective(**inputs)["mlm"].item()
    assert figures["masked_tokens"] == int((inputs["labels"] != -100).sum()) and figures["texts"] == 6
    assert figures["loss"] == pytest.approx(expected, rel=1e-5)
    assert figures["perplexity"] == pytest.approx(math.exp(expected), rel=1e-5)


def test_held_out_perplexity_is_recorded_and_a_target_stops_the_run(tiny, tmp_path):
    """--eval-pairs: the held-out figures every --eval-steps and at the last step, and the word pieces read;
    --target-perplexity: the first evaluation at or below it ends the run, and the model is saved there."""
    (tmp_path / "train").mkdir()
    (tmp_path / "held").mkdir()
    train, held = write_pairs(tmp_path / "train", XS * 2, YS * 2), write_pairs(tmp_path / "held", XS[:2], YS[:2])
    options = dict(pairs=train, objective="mlm", model=str(tiny), batch_size=3, max_steps=4, max_length=32,
                   eval_pairs=held, eval_steps=3)
    result = run(PretrainConfig(out=tmp_path / "whole", **options))
    curve = result.manifest.held_out["curve"]
    assert [row["step"] for row in curve] == [3, 4] and all(row["texts"] == 4 for row in curve)
    assert result.manifest.stopped is None and result.manifest.held_out["mask_rate"] == 0.15
    tokenizer = minilm_tokenizer()
    pieces = sum(len(tokenizer(t)["input_ids"]) for t in XS + YS)
    assert result.manifest.tokens_seen == 2 * 2 * pieces  # 2 epochs of the 6 pairs, each text read whole
    stopped = run(PretrainConfig(out=tmp_path / "stopped", target_perplexity=1e9, **options))
    assert stopped.steps == 3 and stopped.manifest.steps == 3 and stopped.manifest.planned_steps == 4
    assert "reached the target 1e+09 at step 3 of 4" in stopped.manifest.stopped
    assert [row["step"] for row in stopped.manifest.held_out["curve"]] == [3]
    assert (tmp_path / "stopped" / "model.safetensors").exists()


def test_the_mlm_head_is_kept_beside_the_model_and_a_later_run_starts_from_it(tiny, tmp_path):
    """The MLM head a run trained is saved in model.pt (mlm_head.*, not the output matrix: the input
    embeddings), and `pretrain --model` of that folder starts from it: a plain start's arms continue with the
    head its encoder learnt with (before, every later run drew a new head)."""
    out = tmp_path / "plain"
    run(PretrainConfig(pairs=write_pairs(tmp_path, XS * 2, YS * 2), out=out, objective="mlm", model=str(tiny),
                       batch_size=3, max_steps=2, max_length=32, learning_rate=1e-2))
    saved = torch.load(out / "model.pt", weights_only=True)
    assert saved and all(k.startswith("mlm_head.") for k in saved)
    assert "mlm_head.predictions.decoder.weight" not in saved and "mlm_head.predictions.bias" in saved
    fresh, _ = objective_for(tiny, tmp_path, objective="cocondenser")
    later, notes = objective_for(out, tmp_path, objective="cocondenser")
    assert notes["mlm_head"].startswith("from model.pt") and notes["head_modules"] == ["mlm_head"]
    # the Condenser head is the new part, and says so (before, a start's arms listed nothing new)
    assert notes["head_weights_new"] == sorted(f"c_head.{k}" for k in later.condenser.state_dict())
    assert notes["head_weights_left_out"] == []
    head = later.mlm_head.state_dict()
    assert all(torch.equal(head[k[len("mlm_head."):]], v) for k, v in saved.items())
    dense = "predictions.transform.dense.weight"
    assert not torch.equal(head[dense], fresh.mlm_head.state_dict()[dense])  # trained, not drawn anew
    assert later.mlm_head.predictions.decoder.weight is later.encoder.get_input_embeddings().weight



def test_the_condenser_head_and_decoders_are_kept_and_a_later_run_of_the_same_objective_starts_from_them(
        tiny, tmp_path):
    """model.pt keeps the objective's own heads too (c_head.*, d_head.*, as luyug's and caskcsg's checkpoints):
    a later run of the same objective starts from the trained weights (coCondenser from Condenser's head), and
    one of another objective leaves them out, saying why (the same names hold other layers)."""
    out = tmp_path / "cocondenser"
    run(PretrainConfig(pairs=write_pairs(tmp_path, XS * 2, YS * 2), out=out, objective="cocondenser",
                       model=str(tiny), batch_size=3, max_steps=2, max_length=32, learning_rate=1e-2))
    saved = torch.load(out / "model.pt", weights_only=True)
    assert {k.split(".")[0] for k in saved} == {"mlm_head", "c_head"}
    fresh, _ = objective_for(tiny, tmp_path, objective="cocondenser")
    later, notes = objective_for(out, tmp_path, objective="cocondenser")
    assert notes["head_modules"] == ["mlm_head", "condenser"] and notes["head_weights_new"] == []
    head = later.condenser.state_dict()
    assert head and all(torch.equal(v, saved[f"c_head.{k}"]) for k, v in head.items())
    weight = "0.attention.self.query.weight"
    assert not torch.equal(head[weight], fresh.condenser.state_dict()[weight])  # trained, not drawn anew
    other, notes = objective_for(out, tmp_path, objective="cotmae", decoder="symmetric")
    assert notes["head_modules"] == ["mlm_head"]
    assert notes["head_left_out_because"] == "trained by cocondenser, not cotmae"
    assert notes["head_weights_new"] == sorted(f"c_head.{k}" for k in other.decoder.state_dict())
    assert set(notes["head_weights_left_out"]) == {k for k in saved if k.startswith("c_head.")}
    assert not torch.equal(other.decoder.state_dict()[weight], saved[f"c_head.{weight}"])

def test_mixed_precision_is_autocast_at_half_precision_and_scales_only_fp16():
    from pretriever.pretrain.run import mixed_precision

    off, none = mixed_precision("fp32", "cpu")
    assert none is None and not off._enabled
    bf16, none = mixed_precision("bf16", "cpu")
    assert none is None and bf16._enabled and bf16.fast_dtype == torch.bfloat16
    fp16, scaler = mixed_precision("fp16", "cpu")
    assert fp16.fast_dtype == torch.float16 and isinstance(scaler, torch.amp.GradScaler)


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_pretrain_at_half_precision_trains_and_resumes(tiny, scifact, tmp_path, precision):
    """--precision on the CPU (what a GPU run does with its autocast and, for fp16, a scaled loss through
    GradCache): the losses stay near the fp32 run's, the saved weights are fp32 and finite, and fp16's loss scale
    is in the checkpoint, so a resumed run goes on with it."""
    root, _, _ = scifact
    options = dict(pairs=root / "pairs", objective="cocondenser", model=str(tiny), batch_size=4, max_steps=4,
                   logging_steps=1, max_length=48, mini_batch_size=2, save_steps=2)
    full = run(PretrainConfig(out=tmp_path / "fp32", precision="fp32", **options))
    half = run(PretrainConfig(out=tmp_path / precision, precision=precision, **options))
    report = json.loads((tmp_path / precision / "pretrain.json").read_text())
    assert report["precision"] == precision and report["options"]["precision"] == precision
    for a, b in zip(full.manifest.loss_curve, half.manifest.loss_curve):
        assert a["loss"] != b["loss"] and b["loss"] == pytest.approx(a["loss"], rel=0.05)
    weights = load_file(tmp_path / precision / "model.safetensors")
    assert all(w.dtype == torch.float32 and torch.isfinite(w).all() for w in weights.values())
    with pytest.raises(KeyboardInterrupt):
        run(PretrainConfig(out=tmp_path / "cut", precision=precision, **options), Interrupt(3, "pretraining"))
    state = torch.load(tmp_path / "cut" / "checkpoints" / "step-2.pt", weights_only=True)
    assert ("scaler" in state) == (precision == "fp16")
    run(PretrainConfig(out=tmp_path / "cut", precision=precision, resume=True, **options))
    assert load_file(tmp_path / "cut" / "model.safetensors").keys() == weights.keys()
