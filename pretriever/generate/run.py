"""``pretriever generate``: C candidate queries per passage from a seq2seq model, or imported from a file.

The store's passages, in index order (the order of ``pretriever index``), are cut into
chunks of ``checkpoint_every``; each chunk's queries are written atomically to
``QUERIES_DIR/parts/part-NNNNNN.parquet``. ``--resume`` skips the parts already there,
``--shard i/n`` does every n-th chunk, and whichever run finds every part present writes
``generated_queries.parquet`` (passage_id, candidate, text; sorted by passage order, then
candidate) and ``manifest.json``. Every sequence samples from its own seeded generator
(:mod:`pretriever.generate.sampling`), so batching, sharding and resuming never change a
query.
"""

from __future__ import annotations

import time
from dataclasses import replace

import pyarrow as pa

from pretriever.generate.config import GenerateConfig
from pretriever.generate.errors import GenerateError
from pretriever.generate.folder import SCHEMA, GenerateResult, finish, open_passages, part_path, prepare
from pretriever.generate.importer import import_queries
from pretriever.generate.prefix import resolve_prefix
from pretriever.generate.sampling import row_seed, seeded_sampler
from pretriever.io import write_parquet
from pretriever.models import resolve_device
from pretriever.progress import QUIET, Reporter
from pretriever.training import precision_dtype, resolve_precision

GENERATING = "generating"  # the Reporter's task: passages done of those this run does


def _load_generator(cfg: GenerateConfig):
    """(tokenizer, model, device) with bf16 on GPU unless told otherwise."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    device = resolve_device(cfg.device)
    precision = resolve_precision(cfg.precision, device)
    dtype = precision_dtype(precision)
    try:
        tokenizer = AutoTokenizer.from_pretrained(cfg.model)
        model = AutoModelForSeq2SeqLM.from_pretrained(cfg.model, dtype=dtype)
    except (OSError, ValueError) as err:
        raise GenerateError(f"cannot load seq2seq model {cfg.model!r}: {err}") from err
    return tokenizer, model.to(device).eval(), device


def generate_batch(tokenizer, model, device: str, ids: list[str], texts: list[str], cfg: GenerateConfig) -> list[str]:
    """``per_passage`` queries for each passage, passage-major (passage 0's candidates first)."""
    import torch  # heavy

    enc = tokenizer([cfg.prefix + t for t in texts], max_length=cfg.max_input_length, truncation=True,
                    padding=True, return_tensors="pt", return_token_type_ids=False)
    # one row per (passage, candidate): greedy search over the sampler's choice allows no num_return_sequences
    enc = {k: v.repeat_interleave(cfg.per_passage, dim=0).to(device) for k, v in enc.items()}
    seeds = [row_seed(cfg.seed, pid, c) for pid in ids for c in range(cfg.per_passage)]
    with torch.inference_mode():
        out = model.generate(**enc, do_sample=False, num_beams=1, max_new_tokens=cfg.max_output_length,
                             top_k=None, top_p=None, temperature=None,
                             logits_processor=[seeded_sampler(seeds, cfg.top_k, cfg.top_p)])
    return [t.strip() for t in tokenizer.batch_decode(out, skip_special_tokens=True)]


def run(cfg: GenerateConfig, report: Reporter = QUIET) -> GenerateResult:
    """Generate the queries of ``cfg.corpus`` (or this shard of it) into ``cfg.out``; without ``cfg.prefix``
    the model's own (:mod:`pretriever.generate.prefix`), recorded in the run's settings and manifest (and why, in
    ``prefix_note``). ``report`` hears the passages done. With ``cfg.from_file`` the queries are imported from
    it instead (:func:`pretriever.generate.importer.import_queries`): the whole stage, as the command runs it."""
    if cfg.from_file is not None:
        return import_queries(cfg)
    started = time.perf_counter()
    prefix, note = resolve_prefix(str(cfg.model), cfg.prefix)
    cfg = replace(cfg, prefix=prefix)
    source = open_passages(cfg.corpus)
    total = min(len(source), cfg.limit) if cfg.limit is not None else len(source)
    state = {**cfg.run_settings(), "passages": source.fingerprint()}
    prepare(cfg, state, report)
    every = cfg.checkpoint_every
    chunks = range((total + every - 1) // every)
    mine = [j for j in chunks if cfg.shard is None or j % cfg.shard.count == cfg.shard.index]
    todo = [j for j in mine if not part_path(cfg.out, j).exists()]
    result = GenerateResult(cfg, out=cfg.out, skipped={"empty_passages": 0}, prefix_note=note)
    to_do = sum(min(every, total - j * every) for j in todo)
    if todo:
        tokenizer, model, device = _load_generator(cfg)
    for j in todo:
        lo, hi = j * every, min((j + 1) * every, total)
        ids, texts = source.read(lo, hi, cfg.prepend_title)
        rows: dict[str, list] = {"passage_id": [], "candidate": [], "text": []}
        for b in range(0, len(ids), cfg.batch_size):
            bids, btexts = ids[b:b + cfg.batch_size], texts[b:b + cfg.batch_size]
            keep = [i for i, t in enumerate(btexts) if t.strip()]
            result.skipped["empty_passages"] += len(bids) - len(keep)
            bids, btexts = [bids[i] for i in keep], [btexts[i] for i in keep]
            if bids:
                queries = generate_batch(tokenizer, model, device, bids, btexts, cfg)
                for i, pid in enumerate(bids):
                    for c in range(cfg.per_passage):
                        rows["passage_id"].append(pid)
                        rows["candidate"].append(c)
                        rows["text"].append(queries[i * cfg.per_passage + c])
            result.passages += len(bids)
            report.progress(GENERATING, result.passages + result.skipped["empty_passages"], to_do, unit="passages")
        write_parquet(pa.table(rows, schema=SCHEMA), part_path(cfg.out, j))
        result.queries += len(rows["text"])
    source.close()
    result.seconds = time.perf_counter() - started
    if all(part_path(cfg.out, j).exists() for j in chunks):
        finish(cfg, [part_path(cfg.out, j) for j in chunks], result, total, {"skipped_last_run": result.skipped})
    return result
