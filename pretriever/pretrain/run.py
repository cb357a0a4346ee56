"""``pretriever pretrain``: pre-train a sentence-transformers encoder with coCondenser or CoT-MAE.

The encoder is loaded with its MLM head (created and tied to the input embeddings when the
checkpoint has none, as for the packaged MiniLM; from ``model.pt`` beside it when an earlier
run kept it there), wrapped by the objective (whose Condenser head or decoder starts from
``model.pt`` when the checkpoint has one, as Luyu/condenser's do: :func:`load_head`), and
trained with AdamW, a linear warm-up then
linear decay (as ``get_linear_schedule_with_warmup``) and gradient accumulation; with
``--head-warmup-steps`` the new heads first train alone on a frozen encoder
(:func:`make_optimizer`). Checkpoints (``MODEL_DIR/checkpoints/step-N.pt``: weights,
optimizer, schedule, random state, loss curve) are written every ``save_steps`` and
``--resume`` continues from the newest; with ``--eval-pairs`` the held-out MLM loss and
perplexity are measured along the way (:mod:`pretriever.pretrain.heldout`), and
``--target-perplexity`` ends the run when it is reached. At the end the encoder's weights
are copied back into the model's sentence-transformers Transformer module and saved:
MODEL_DIR is a plain sentence-transformers model (the input's modules, with the pooling and
normalisation that were trained: the model's own, or ``--pooling``/``--normalize`` when
given, recorded in its pooling config) that ``pretriever train``, ``index`` and ``evaluate``
use as is, with the MLM head, the Condenser head or the decoders in ``model.pt`` (for a later
``pretrain``, as luyug's and caskcsg's checkpoints keep them; :func:`save_encoder`) and
``pretrain.json`` (settings, pairs per method, loss curve per term, word pieces read, held-out
figures, time, pairs/s). Under torchrun each process takes its share of every global batch
(:mod:`pretriever.pretrain.distributed`), and the first alone writes MODEL_DIR.
"""

from __future__ import annotations

import logging
import math
import os
import pickle
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pretriever import __version__
from pretriever.io import atomic_path, read_json
from pretriever.models import load_model, model_label, resolve_device, resolve_model
from pretriever.pretrain.config import PretrainConfig
from pretriever.pretrain.data import PretrainPairs, batch_texts, epoch_batches, load_pairs
from pretriever.pretrain.distributed import rng_states, share, sum_gradients, summed
from pretriever.pretrain.errors import PretrainError
from pretriever.pretrain.gradcache import gradcache_step
from pretriever.pretrain.heldout import heldout_mlm, heldout_texts
from pretriever.pretrain.manifest import PretrainManifest
from pretriever.pretrain.objectives import OBJECTIVES, Objective
from pretriever.progress import QUIET, Reporter
from pretriever.training import process_barrier, process_rank, resolve_precision, world_size
from pretriever.stage import OutputFolder, StageResult
from pretriever.train.model import is_sentence_transformers_model, shape_pooling

log = logging.getLogger(__name__)

REPORT = PretrainManifest.FILE
CHECKPOINTS = "checkpoints"
SAVING = ".saving"  # the encoder is saved here whole, then moved into place
INIT = ".init"  # --init random: the randomly initialised checkpoint the run starts from


@dataclass(kw_only=True)
class PretrainResult(StageResult):
    """MODEL_DIR (``out``), its pretrain.json (``manifest``; None until written) and the run's figures."""

    manifest: PretrainManifest | None = None

    config: PretrainConfig
    steps: int = 0
    pairs_seen: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0  # process CPU time inside the training loop (this run only)
    tokens_seen: int = 0  # word pieces the encoder read (padding not counted)
    curve: list[dict[str, float]] = field(default_factory=list)
    held_out: list[dict[str, float]] = field(default_factory=list)  # --eval-pairs: figures per evaluation
    stopped: str | None = None  # why the run ended before its planned steps

    @property
    def rate(self) -> float:
        return self.pairs_seen / self.seconds if self.seconds > 0 else 0.0


def build_objective(cfg: PretrainConfig, device: str):
    """(sentence-transformers model, objective module, notes): the encoder with an MLM head, wrapped; the model
    has the pooling that the objective trains (``cfg.pooling``/``cfg.normalize`` or its own)."""
    import torch  # heavy: imported when training starts
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModelForMaskedLM
    from transformers.utils import logging as hf_logging

    if cfg.objective not in OBJECTIVES:
        raise PretrainError(f"unknown objective {cfg.objective!r}; choose from {', '.join(OBJECTIVES)}")
    ref = resolve_model(cfg.model)
    if cfg.init == "random":
        ref = random_encoder(ref, cfg, Path(cfg.out) / INIT)
    try:
        st = load_model(ref, device="cpu")
    except (OSError, ValueError) as err:
        raise PretrainError(f"cannot load model {cfg.model or ref!r}: {err}") from err
    transformer = st[0]
    if not hasattr(transformer, "auto_model"):
        raise PretrainError(f"{ref}: the first module is {type(transformer).__name__}, not a Transformer encoder")
    modules, pooling, normalize = shape_pooling(list(st.children()), cfg.pooling, cfg.normalize,
                                                is_sentence_transformers_model(ref), model_label(cfg.model))
    st = SentenceTransformer(modules=modules, device="cpu", prompts=st.prompts,
                             default_prompt_name=st.default_prompt_name,
                             similarity_fn_name="cosine" if cfg.similarity == "cos" else "dot")
    torch.manual_seed(cfg.seed)
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the load report lists the missing head we create here
    try:
        mlm, info = AutoModelForMaskedLM.from_pretrained(ref, output_loading_info=True)
    except (OSError, ValueError) as err:
        raise PretrainError(f"{ref}: cannot load its encoder as a masked language model ({err}); "
                            "pre-training needs a BERT-style encoder") from err
    finally:
        hf_logging.set_verbosity(verbosity)
    created = sorted(k for k in info["missing_keys"] if not k.startswith(mlm.base_model_prefix + "."))
    missing_encoder = sorted(set(info["missing_keys"]) - set(created))
    if missing_encoder:
        raise PretrainError(f"{ref}: encoder weights missing when loaded for MLM: {', '.join(missing_encoder[:5])}")
    mlm.tie_weights()
    try:
        objective = OBJECTIVES[cfg.objective](mlm, transformer.tokenizer, cfg, modules[1:])
    except (TypeError, ValueError) as err:
        raise PretrainError(str(err)) from err
    heads = load_head(objective, ref)
    notes = {"mlm_head": f"from {HEAD_FILE} beside the encoder (its output matrix: the input embeddings)"
             if "mlm_head" in heads.get("head_modules", []) else
             "created and tied to the input embeddings" if created else "from the checkpoint",
             "created_weights": created, "pooling": pooling, "normalize": normalize, **heads}
    return st, objective.to(device), notes


def random_encoder(tokenizer_ref: str, cfg: PretrainConfig, folder: Path) -> str:
    """A plain Hugging Face masked-LM checkpoint in ``folder``: a BERT of ``cfg.init_layers`` x ``cfg.init_hidden``
    (``cfg.init_heads`` heads, feed-forward 4 x hidden, 512 positions) with weights drawn from ``cfg.seed`` (BERT's
    own initialisation) and the tokenizer of ``tokenizer_ref``; its path. Drawn again alike on --resume."""
    import torch  # heavy
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    try:
        tokenizer = AutoTokenizer.from_pretrained(tokenizer_ref)
    except (OSError, ValueError) as err:
        raise PretrainError(f"--init random: cannot load the tokenizer of {tokenizer_ref!r}: {err}") from err
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=cfg.init_hidden, num_hidden_layers=cfg.init_layers,
                        num_attention_heads=cfg.init_heads, intermediate_size=4 * cfg.init_hidden,
                        max_position_embeddings=512, pad_token_id=tokenizer.pad_token_id)
    if process_rank() == 0:  # several processes: the first writes it, the others load it (see run)
        torch.manual_seed(cfg.seed)
        folder.mkdir(parents=True, exist_ok=True)
        BertForMaskedLM(config).save_pretrained(folder)
        tokenizer.save_pretrained(folder)
    return str(folder)


HEAD_FILE = "model.pt"  # where Condenser/coCondenser (luyug) and caskcsg's code keep the head beside the encoder
MLM_HEAD = "mlm_head."  # model.pt's prefix for the MLM head that pretriever pretrain keeps beside the encoder


def _beside(ref: str, name: str) -> Path | None:
    """``name`` in the model's folder, or in the local Hugging Face cache for a hub name (no download)."""
    if Path(ref).is_dir():
        return Path(ref) / name if (Path(ref) / name).is_file() else None
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(ref, name)
    except Exception:  # noqa: BLE001 - not a hub name: nothing beside it
        return None
    return Path(found) if isinstance(found, str) else None


def load_head(objective: Objective, ref: str) -> dict[str, Any]:
    """Start the objective's heads from the checkpoint's ``model.pt`` when it has one: Luyu/condenser and caskcsg's
    checkpoints save everything but the encoder there (``c_head.N.*``: transformer layers shaped as ours; caskcsg's
    CoT-MAE also ``d_head.N.*`` and ``d_head_ln_f.*``: the AR decoder's GPT-2 blocks and final LayerNorm), each
    prefix filling the module that ``objective.heads`` names; ``mlm_head.*``, what :func:`save_encoder` keeps,
    fills the MLM head (all but its output matrix, which is the input embeddings). As their
    ``load_state_dict(strict=False)``, layers it lacks stay new (``head_weights_new`` lists them, and a whole head
    it lacks too) and extra ones (or buffers such as caskcsg's window mask) are left out, and so are the Condenser
    head and decoders of a folder that another pretriever objective trained (its pretrain.json says which). Read
    with ``weights_only``: tensors only, never code."""
    import torch  # heavy

    path = _beside(ref, HEAD_FILE)
    if path is None:
        return {"head": "new"}
    trained_for = _objective_of(ref)
    foreign = trained_for is not None and trained_for != objective.name  # another objective's layers, same names
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, OSError) as err:
        raise PretrainError(f"{path}: not a head checkpoint that can be read safely (tensors only): "
                            f"{str(err).splitlines()[0][:200]}") from err
    if not isinstance(state, dict):
        raise PretrainError(f"{path}: expected a state dict of the head (c_head.N.* tensors)")
    loaded, new, left_out, modules = 0, [], [], []
    tied = objective.encoder.get_input_embeddings().weight
    for prefix, name in {MLM_HEAD: "mlm_head", **objective.heads}.items():
        weights = {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}
        module = getattr(objective, name, None)
        # none in the file (a start saved by --objective mlm), no such layers here (c_head for CoT-MAE with only
        # the AR decoder), or another objective's layers: what the file has is left out, the head stays new (the
        # MLM head's source is in notes["mlm_head"])
        if not weights or module is None or (foreign and prefix != MLM_HEAD):
            left_out += [prefix + k for k in weights]
            if module is not None and prefix != MLM_HEAD:
                new += [prefix + k for k in module.state_dict()]
            continue
        try:
            missing, unexpected = module.load_state_dict(weights, strict=False)
        except RuntimeError as err:  # shapes differ: another hidden size
            raise PretrainError(f"{path}: its {prefix.rstrip('.')} does not fit this encoder's {name}: "
                                f"{str(err).splitlines()[-1].strip()[:200]}") from err
        loaded += len(weights) - len(unexpected)
        own = module.state_dict(keep_vars=True)
        new += [prefix + k for k in missing if own[k] is not tied]
        left_out += [prefix + k for k in unexpected]
        modules.append(name)
    why = {"head_weights_left_out": sorted(left_out),
           **({"head_left_out_because": f"trained by {trained_for}, not {objective.name}"} if foreign else {})}
    if not loaded:
        held = ", ".join(p.rstrip(".") for p in objective.heads)
        return {"head": f"new ({path} holds no {held} weights that fit this objective)", **why}
    return {"head": f"from {path}", "head_modules": modules, "head_weights_loaded": loaded,
            "head_weights_new": sorted(new), **why}


def _objective_of(ref: str) -> str | None:
    """The objective that trained the model ``ref`` (its pretrain.json), None for a checkpoint pretriever did not
    pre-train (luyug's and caskcsg's: their heads are taken as they are)."""
    path = _beside(ref, PretrainManifest.FILE)
    if path is None:
        return None
    data = read_json(path, PretrainError, "the report of the pre-training run that made this model")
    return data.get("objective") if isinstance(data, dict) else None


def save_encoder(st, objective: Objective, out: Path) -> None:
    """Copy the trained encoder into the sentence-transformers model and save it (atomically), with the heads
    beside it in ``model.pt``, as luyug's and caskcsg's checkpoints keep them: the MLM head (``mlm_head.*``, all
    but the output matrix, which is the input embeddings) and the objective's own (``c_head.*``, ``d_head.*``:
    :attr:`Objective.heads`). A later ``pretrain --model`` of this folder continues with the heads the encoder was
    trained with (a plain start's MLM head; a Condenser head, as coCondenser starts from Condenser's), and the
    trained heads can be inspected (``bench/probe_head_reads_h.py``)."""
    import torch  # heavy

    target = st[0].auto_model
    state = {k: v.detach().cpu() for k, v in objective.encoder.state_dict().items()}
    missing, unexpected = target.load_state_dict(state, strict=False)
    if unexpected or any(not k.startswith("pooler.") for k in missing):
        raise PretrainError(f"cannot copy the encoder back: missing {missing}, unexpected {unexpected}")
    tmp = out / SAVING
    shutil.rmtree(tmp, ignore_errors=True)
    st.save(str(tmp))
    tied = objective.encoder.get_input_embeddings().weight
    heads = {MLM_HEAD + k: v for k, v in objective.mlm_head.state_dict(keep_vars=True).items() if v is not tied}
    for prefix, name in objective.heads.items():
        module = getattr(objective, name, None)
        heads.update({prefix + k: v for k, v in (module.state_dict() if module is not None else {}).items()})
    torch.save({k: v.detach().cpu() for k, v in heads.items()}, tmp / HEAD_FILE)
    for item in tmp.iterdir():
        dest = out / item.name
        if dest.is_dir():
            shutil.rmtree(dest)
        item.replace(dest)
    tmp.rmdir()


def _folder(out: Path, report: Reporter = QUIET) -> OutputFolder:
    """MODEL_DIR: its checkpoints are ``checkpoints/step-N.pt``, each written atomically; the encoder's files (as
    many as its save writes) are listed in the marker once it is saved."""
    return OutputFolder(out, stage="pretrain", holds="a pre-training run", owns=(REPORT, CHECKPOINTS, SAVING, INIT),
                        error=PretrainError, prefix="step-", suffix=".pt", complete=None, report=report)


def plan(cfg: PretrainConfig, pairs: PretrainPairs, processes: int = 1) -> tuple[int, int]:
    """(micro-batches per epoch, optimizer steps in all), at a global batch of ``processes`` x ``cfg.batch_size``."""
    per_epoch = len(epoch_batches(pairs, 0, cfg.batch_size * processes, cfg.seed, cfg.mix))
    if per_epoch == 0:
        raise PretrainError(f"{len(pairs.groups):,} pairs per epoch make no full batch of {cfg.batch_size} x "
                            f"{processes} process(es); lower --batch-size")
    steps = cfg.max_steps or max(1, math.ceil(cfg.epochs * per_epoch / cfg.gradient_accumulation))
    return per_epoch, steps


def run(cfg: PretrainConfig, report: Reporter = QUIET) -> PretrainResult:
    """Pre-train ``cfg.model`` on ``cfg.pairs`` into ``cfg.out`` (see the module docstring); ``report`` hears
    the optimizer steps (task ``pretraining``, with the loss terms of the last logging step). Under torchrun each
    process takes its share of every global batch (:mod:`pretriever.pretrain.distributed`); the first writes."""
    import torch  # heavy

    started = time.perf_counter()
    processes, rank = world_size(), process_rank()
    main, wait = rank == 0, process_barrier()  # several processes: the first owns cfg.out and reports
    report = report if main else QUIET
    folder = _folder(cfg.out, report)
    if main:
        resume_from = folder.prepare(resume=cfg.resume, overwrite=cfg.overwrite)
    wait()
    if not main:
        resume_from = folder.last_checkpoint() if cfg.resume else None
    pairs = load_pairs(cfg.pairs, list(cfg.mix) if cfg.mix else None)
    per_epoch, total_steps = plan(cfg, pairs, processes)
    held_texts = heldout_texts(cfg.eval_pairs) if cfg.eval_pairs else []
    device = resolve_device(cfg.device)
    if processes > 1 and device.startswith("cuda"):
        device = f"cuda:{int(os.environ.get('LOCAL_RANK', rank))}"
    if main:  # the first process draws --init random's start; the others load it
        st, objective, notes = build_objective(cfg, device)
    wait()
    if not main:
        st, objective, notes = build_objective(cfg, device)
    if cfg.gradient_accumulation > 1:
        notes["warning"] = (f"--gradient-accumulation {cfg.gradient_accumulation} averages the gradients of "
                            f"{cfg.gradient_accumulation} batches of {cfg.batch_size}; it does not add in-batch "
                            f"negatives: each contrastive term still scores {cfg.batch_size} pairs (for more, raise "
                            "--batch-size with --mini-batch-size: GradCache)")
        log.warning(notes["warning"])
    encoder_params, optimizer, scheduler = make_optimizer(cfg, objective, total_steps, device)
    autocast, scaler = mixed_precision(resolve_precision(cfg.precision, device), device)
    trained = Trained(objective, optimizer, scheduler, scaler)
    params = [p for group in optimizer.param_groups for p in group["params"]]
    if cfg.head_warmup_steps:
        notes["head_warmup"] = {"steps": min(cfg.head_warmup_steps, total_steps), "head_lr": cfg.head_lr,
                                "frozen_parameters": sum(p.numel() for p in encoder_params),
                                "trained_parameters": sum(p.numel() for p in params) - sum(
                                    p.numel() for p in encoder_params)}
    result = PretrainResult(out=cfg.out, config=cfg)
    step, micro, seconds_before = 0, 0, 0.0
    if resume_from is not None:
        state = _load_checkpoint(resume_from, device)
        same = {"resume": cfg.resume, "overwrite": cfg.overwrite}
        if cfg.to_json() | state["settings"] | same != cfg.to_json():  # an option added since keeps its value
            raise PretrainError(f"{resume_from} was written with other settings; resume with the same options")
        if state.get("processes", 1) != processes:  # another global batch, and each process's random state
            raise PretrainError(f"{resume_from} was written by {state.get('processes', 1)} process(es); resume with "
                                f"as many (this run has {processes})")
        trained.restore(state, rank)
        step, micro, result.curve = state["step"], state["micro"], state["curve"]
        result.pairs_seen, seconds_before = state["pairs_seen"], state["seconds"]
        result.tokens_seen, result.held_out = state.get("tokens_seen", 0), state.get("held_out", [])
    else:
        torch.manual_seed(cfg.seed + rank)  # each process its own masks and dropout
    objective.train()
    sums: dict[str, Any] = {}  # each term's sum since the last logging step, tensors on the device
    terms: dict[str, float] = {}  # the last logged terms, shown with the progress
    count = tokens = 0
    batches: tuple[int, list] = (-1, [])
    loop_start, cpu_start = time.perf_counter(), time.process_time()
    while step < total_steps:
        freeze(encoder_params, step < cfg.head_warmup_steps)  # set at every step: a resumed run inside the warm-up too
        epoch, index = divmod(micro, per_epoch)
        if batches[0] != epoch:
            batches = (epoch, epoch_batches(pairs, epoch, cfg.batch_size * processes, cfg.seed, cfg.mix))
        batch = share(batches[1][index], rank, processes)
        inputs = objective.prepare(*batch_texts(pairs, batch, epoch, cfg.seed),
                                   [pairs.methods[pairs.method[i]] for i in batch])
        tokens += int(inputs[objective.encoder_rows[1]].sum())  # on the host: no device sync
        inputs = {k: v.to(device, non_blocking=True) for k, v in inputs.items()}
        # fp16: the loss scaled by GradScaler's factor (a tensor, no host sync), unscaled before clipping
        scale = (scaler.scale(torch.ones((), device=device)) if scaler else 1.0) / cfg.gradient_accumulation
        if cfg.mini_batch_size:
            out = gradcache_step(objective, inputs, cfg.mini_batch_size, scale, autocast)
        else:
            with autocast:
                out = objective(**inputs)
            (out["loss"] * scale).backward()
        for name, value in out.items():  # summed on the device, read at logging steps: no sync per step
            sums[name] = sums.get(name, 0.0) + (value.detach() if torch.is_tensor(value) else value)
        count += 1
        micro += 1
        result.pairs_seen += len(batch) * processes
        if micro % cfg.gradient_accumulation:
            continue
        sum_gradients(params)  # several processes: the global batch's gradient (a no-op in one)
        if scaler:
            scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        if scaler:
            scaler.step(optimizer)  # skipped when a gradient overflowed; the scale then shrinks
            scaler.update()
        else:
            optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        if step % cfg.logging_steps == 0 or step == total_steps or step % cfg.save_steps == 0:
            tokens_now = torch.tensor(tokens, device=device)  # the word pieces every process read since
            result.tokens_seen += int(summed({"tokens": tokens_now})["tokens"])
            tokens = 0
        if step % cfg.logging_steps == 0 or step == total_steps:
            terms = {k: float(v) / count for k, v in summed(sums).items()}
            lrs = dict(zip((g["name"] for g in optimizer.param_groups), scheduler.get_last_lr()))
            result.curve.append({"step": step, "epoch": round(micro / per_epoch, 3),
                                 "learning_rate": lrs.get("encoder", lrs.get("encoder-no-decay", 0.0)),
                                 **({"head_learning_rate": lrs.get("heads", lrs.get("heads-no-decay", 0.0))}
                                    if cfg.head_warmup_steps else {}), **terms})
            sums, count = {}, 0
        report.progress("pretraining", step, total_steps, unit="steps", **terms)
        if held_texts and (step % cfg.eval_steps == 0 or step == total_steps):
            figures = heldout_mlm(objective, held_texts, cfg.mask_rate, cfg.batch_size * 2, cfg.seed)
            result.held_out.append({"step": step, **figures})
            log.info("step %d: held-out MLM loss %.4f, perplexity %.2f", step, figures["loss"], figures["perplexity"])
            if cfg.target_perplexity is not None and figures["perplexity"] <= cfg.target_perplexity:
                result.stopped = (f"held-out perplexity {figures['perplexity']:.2f} reached the target "
                                  f"{cfg.target_perplexity:g} at step {step} of {total_steps}")
                break
        if step % cfg.save_steps == 0 and step < total_steps:
            elapsed = seconds_before + time.perf_counter() - loop_start
            rngs = rng_states(torch.get_rng_state())  # every process's (a collective: all take part)
            if main:
                _save_checkpoint(cfg, trained, result, step=step, micro=micro, seconds=elapsed, rngs=rngs)
    result.tokens_seen += int(summed({"tokens": torch.tensor(tokens, device=device)})["tokens"])  # since the last
    result.steps = step
    result.seconds = seconds_before + time.perf_counter() - loop_start
    result.cpu_seconds = time.process_time() - cpu_start
    result.manifest = pretrain_report(cfg, pairs, notes, result, per_epoch, total_steps, device,
                                      time.perf_counter() - started)
    if main:
        save_encoder(st, objective, cfg.out)
        result.manifest.write(cfg.out)
        shutil.rmtree(cfg.out / CHECKPOINTS, ignore_errors=True)
        shutil.rmtree(cfg.out / INIT, ignore_errors=True)
        folder.seal()
    wait()  # the other processes return once the folder is whole
    return result


def mixed_precision(precision: str, device: str) -> tuple[Any, Any]:
    """``torch.autocast`` for ``precision`` (fp32, fp16 or bf16) on ``device``, disabled at fp32, and a GradScaler
    for fp16 (None otherwise): fp16's narrow range underflows small gradients unless the loss is scaled."""
    import torch  # heavy

    kind = torch.device(device).type
    if precision == "fp32":
        return torch.autocast(kind, enabled=False), None
    dtype = torch.float16 if precision == "fp16" else torch.bfloat16
    return torch.autocast(kind, dtype=dtype), torch.amp.GradScaler(kind) if precision == "fp16" else None


def make_optimizer(cfg: PretrainConfig, objective: Objective, total_steps: int, device: str):
    """(the encoder's parameters, AdamW, its schedule). The parameters fall in four groups, named: ``encoder`` and
    ``heads`` (the objective's other weights: MLM head, Condenser head, decoders), each with and without weight
    decay (biases and LayerNorm weights, by module type: none). The schedule is linear warm-up then linear decay; with
    ``head_warmup_steps`` W it runs twice: over steps 0..W for the heads at ``head_lr`` (the encoder at 0, and
    frozen by :func:`freeze`), then over W..total for every group at ``learning_rate``."""
    import torch  # heavy
    from transformers import Trainer

    # transformers' Trainer's rule, which the official trainers use: no decay for the weights of LayerNorm modules
    # (found by type: GPT-2's ln_1/ln_2 and the AR decoder's final norm too) nor for any bias
    decay = set(Trainer.get_decay_parameter_names(None, objective))  # reads no Trainer state
    encoder_ids = {id(p) for m in (objective.encoder, objective.pooling) for p in m.parameters()}
    groups: dict[str, list] = {"encoder": [], "encoder-no-decay": [], "heads": [], "heads-no-decay": []}
    for name, p in objective.named_parameters():  # a tied weight (the MLM output matrix) is listed once
        if p.requires_grad:
            side = "encoder" if id(p) in encoder_ids else "heads"
            groups[side + ("" if name in decay else "-no-decay")].append(p)
    warm = min(cfg.head_warmup_steps, total_steps)
    head_lr = cfg.head_lr if warm else cfg.learning_rate
    optimizer = torch.optim.AdamW(
        [{"params": ps, "name": name, "lr": head_lr if name.startswith("heads") else cfg.learning_rate,
          "weight_decay": 0.0 if name.endswith("no-decay") else cfg.weight_decay}
         for name, ps in groups.items() if ps],
        fused=torch.device(device).type in ("cpu", "cuda"))
    # fused: one kernel over all parameters instead of a Python loop of ~10 tensor operations per parameter (the
    # same AdamW; what transformers' Trainer uses by default, adamw_torch_fused)

    def linear(step: int, start: int, end: int) -> float:
        """transformers' get_linear_schedule_with_warmup over steps start..end."""
        length, at = end - start, step - start
        up = int(cfg.warmup_ratio * length)
        if at < up:
            return at / max(1, up)
        return max(0.0, (end - step) / max(1, length - up))

    def encoder_factor(step: int) -> float:
        return 0.0 if step < warm else linear(step, warm, total_steps)

    def head_factor(step: int) -> float:
        return linear(step, 0, warm) if step < warm else linear(step, warm, total_steps) * cfg.learning_rate / head_lr

    factors = [head_factor if g["name"].startswith("heads") else encoder_factor for g in optimizer.param_groups]
    encoder = groups["encoder"] + groups["encoder-no-decay"]
    return encoder, optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, factors)


def freeze(params: list, frozen: bool) -> None:
    """Freeze (or thaw) the encoder: no gradient is computed for it, and AdamW skips a weight without one (no
    update, no weight decay, no moment), so during the head warm-up the encoder stays exactly as it was."""
    for p in params:
        p.requires_grad_(not frozen)


CHECKPOINT_KEYS = ("model", "optimizer", "scheduler", "rng", "step", "micro", "curve", "pairs_seen", "seconds",
                   "settings")  # and, from checkpoints written since they were added, tokens_seen and held_out


def _load_checkpoint(path: Path, device: str) -> dict[str, Any]:
    """A checkpoint's state, unpickled with ``weights_only``: tensors and plain values only (all that
    :func:`_save_checkpoint` writes), so a file planted in MODEL_DIR cannot run code."""
    import torch  # heavy

    try:
        state = torch.load(path, map_location=device, weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, OSError) as err:
        boilerplate = ("Weights only load failed", "Please file an issue", "Check the documentation")
        reason = next((line.strip() for line in str(err).splitlines()
                       if line.strip() and not line.startswith(boilerplate)), type(err).__name__)[:200]
        raise PretrainError(f"{path}: refused, not a checkpoint of pretriever pretrain (only tensors and plain "
                            f"values are loaded; {reason}); start again with --overwrite") from err
    missing = [k for k in CHECKPOINT_KEYS if k not in state] if isinstance(state, dict) else list(CHECKPOINT_KEYS)
    if missing:
        raise PretrainError(f"{path}: not a checkpoint of pretriever pretrain (it lacks {', '.join(missing)}); "
                            "start again with --overwrite")
    return state


@dataclass
class Trained:
    """What a checkpoint saves and a resumed run restores together: the weights, AdamW's moments, the schedule's
    step and torch's random state (the batch order and masking)."""

    objective: Objective
    optimizer: Any
    scheduler: Any
    scaler: Any = None  # fp16's GradScaler: its loss scale goes on where it was

    def state(self) -> dict[str, Any]:
        import torch  # heavy

        return {"model": self.objective.state_dict(), "optimizer": self.optimizer.state_dict(),
                "scheduler": self.scheduler.state_dict(), "rng": torch.get_rng_state(),
                **({"scaler": self.scaler.state_dict()} if self.scaler else {})}

    def restore(self, state: dict[str, Any], rank: int = 0) -> None:
        """Back to ``state``; process ``rank`` takes its own random state (``rngs``, since several processes)."""
        import torch  # heavy

        self.objective.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        torch.set_rng_state(state["rngs"][rank] if "rngs" in state else state["rng"])
        if self.scaler and "scaler" in state:
            self.scaler.load_state_dict(state["scaler"])


def _save_checkpoint(cfg: PretrainConfig, trained: Trained, result: PretrainResult, *, step: int, micro: int,
                     seconds: float, rngs: list | None = None) -> None:
    """MODEL_DIR/checkpoints/step-N.pt (atomically), the older ones removed; ``rngs``: every process's random
    state, in rank order (several processes)."""
    import torch  # heavy

    path = cfg.out / CHECKPOINTS / f"step-{step}.pt"
    state = {**trained.state(), **({"rngs": rngs, "processes": len(rngs)} if rngs else {}),
             "step": step, "micro": micro, "curve": result.curve,
             "pairs_seen": result.pairs_seen, "tokens_seen": result.tokens_seen, "held_out": result.held_out,
             "seconds": seconds, "settings": cfg.to_json()}
    with atomic_path(path) as tmp:
        torch.save(state, tmp)
    for old in _folder(cfg.out).all_checkpoints()[:-1]:
        old.unlink()


def pretrain_report(cfg: PretrainConfig, pairs: PretrainPairs, notes: dict[str, Any], result: PretrainResult,
                    per_epoch: int, total_steps: int, device: str, wall: float) -> PretrainManifest:
    """pretrain.json's content: the objective and its terms, the options, the pairs seen per method, the model kept and
    discarded, and the run's figures and loss curves.
    """
    return PretrainManifest.from_json({
        "pretriever_version": __version__,
        "objective": cfg.objective,
        "terms": ["loss", *OBJECTIVES[cfg.objective].terms],
        "options": cfg.to_json(),
        "pairs": {"rows": len(pairs.x), "per_epoch_by_method": pairs.per_method,
                  "duplicate_across_methods": pairs.duplicate_across, "batches_per_epoch": per_epoch,
                  "processes": world_size(), "global_batch_size": cfg.batch_size * world_size(),
                  "unlisted_files": pairs.unlisted},
        "model": {"base": resolve_model(cfg.model) if cfg.init == "model" else
                  f"random BERT {cfg.init_layers} x {cfg.init_hidden} ({cfg.init_heads} heads, seed {cfg.seed}), "
                  f"tokenizer of {resolve_model(cfg.model)}", **notes,
                  "kept": f"the MLM head, in {HEAD_FILE}",
                  "discarded": {"cocondenser": "Condenser head", "cotmae": "decoder(s)"}.get(cfg.objective, "nothing")},
        "steps": result.steps,
        "planned_steps": total_steps,
        "stopped": result.stopped,
        "pairs_seen": result.pairs_seen,
        "tokens_seen": result.tokens_seen,
        "device": device,
        "precision": resolve_precision(cfg.precision, device),
        "train_seconds": round(result.seconds, 2),
        "train_cpu_seconds": round(result.cpu_seconds, 2),
        "pairs_per_second": round(result.rate, 2),
        "wall_seconds": round(wall, 2),
        "loss_curve": result.curve,
        **({"held_out": {"pairs": str(cfg.eval_pairs), "mask_rate": cfg.mask_rate, "seed": cfg.seed,
                         "target_perplexity": cfg.target_perplexity, "curve": result.held_out}}
           if cfg.eval_pairs else {}),
    })
