"""Synthetic corpus stores with Wikipedia-like link statistics, for benchmarking ``pretriever mine``.

Writes the store's tables directly (``pretriever/corpus/schema.py``), no dump and no build:

- about 7 links per passage (Poisson), about 3.4 passages per document (1 + Poisson(2.4)),
  4-6 sentences of 20 filler words per passage, each link's anchor (the target's title)
  inserted into a sentence, so every link's offsets fall inside its sentence and passage;
- targets: 60% drawn from a Zipf-like law over all entities (power-law in-degree), 40% from
  the source document's neighbourhood (topical clusters, so co-mentions happen), a share of
  entities outside the store (``target_doc_id`` null); then ``--reciprocal`` of the links
  between documents get a link back (overwriting a random link of the target document), so
  dual-link pairs are common;
- section 0 (the lead) holds the first passage, later sections two passages each.

Only integer arrays of one value per link are held for the whole corpus (tens of bytes a
link); text is built per part of ``--part-links`` links with vectorised pyarrow kernels
and written as ``part-NNNNN.parquet`` files, so memory stays bounded.

    python bench/synthetic_corpus.py --links 1000000 --out /tmp/syn-1e6
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pretriever.corpus.schema import STORE_TABLES

WORDS_PER_SENTENCE = 20
VOCAB = 2000


def group_excl_cumsum(x: np.ndarray, first: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Exclusive cumulative sum of ``x`` restarting at each group (rows sorted by group)."""
    cs = np.cumsum(x, dtype=np.int64) - x
    return cs - cs[first][group]


def zipf_ranks(rng: np.random.Generator, n: int, universe: int, a: float) -> np.ndarray:
    """Ranks in [0, universe) with P(r) ~ 1/(r+1)^a (continuous inverse-CDF approximation)."""
    u = rng.random(n)
    top = float(universe + 1) ** (1 - a)
    r = np.floor((1 + u * (top - 1)) ** (1 / (1 - a))) - 1
    return np.clip(r, 0, universe - 1).astype(np.int64)


def write_table(table: pa.Table, path: Path) -> None:
    pq.write_table(table, path, compression="zstd")


def generate(out: Path, links: int, seed: int = 0, part_links: int = 1_000_000, outside: float = 0.15,
             local: float = 0.4, reciprocal: float = 0.2, zipf_a: float = 0.9) -> dict:
    started = time.perf_counter()
    rng = np.random.default_rng(seed)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)

    # -- structure: documents -> passages -> sentences, links per passage -----------------
    n_pass_target = max(1, round(links / 7))
    n_docs = max(2, round(n_pass_target / 3.4))
    pass_per_doc = 1 + rng.poisson(2.4, n_docs)
    n_pass = int(pass_per_doc.sum())
    p_doc = np.repeat(np.arange(n_docs), pass_per_doc)
    doc_first_p = np.cumsum(pass_per_doc) - pass_per_doc
    p_pos = np.arange(n_pass) - doc_first_p[p_doc]
    links_per_p = rng.poisson(links / n_pass, n_pass)
    diff = links - int(links_per_p.sum())  # hit the requested number exactly
    if diff:
        idx = rng.integers(0, n_pass, abs(diff))
        np.add.at(links_per_p, idx, np.sign(diff))
        while (links_per_p < 0).any():
            neg = links_per_p < 0
            deficit = -int(links_per_p[neg].sum())
            links_per_p[neg] = 0
            np.add.at(links_per_p, rng.integers(0, n_pass, deficit), -1)
    links_per_p = np.minimum(links_per_p, 4 * WORDS_PER_SENTENCE)  # room in the sentences
    n_links = int(links_per_p.sum())
    sent_per_p = rng.integers(4, 7, n_pass)
    l_pass = np.repeat(np.arange(n_pass), links_per_p)
    l_doc = p_doc[l_pass]
    links_per_doc = np.bincount(l_doc, minlength=n_docs)
    doc_first_l = np.cumsum(links_per_doc) - links_per_doc

    # -- targets ---------------------------------------------------------------------------
    n_out = max(1, int(n_docs * outside / (1 - outside)))
    universe = n_docs + n_out
    perm = rng.permutation(universe)  # rank -> entity (entities >= n_docs are outside the store)
    target = perm[zipf_ranks(rng, n_links, universe, zipf_a)]
    is_local = rng.random(n_links) < local
    near = l_doc[is_local] + rng.integers(-40, 41, int(is_local.sum()))
    target[is_local] = np.mod(near, n_docs)
    recip = np.flatnonzero((rng.random(n_links) < reciprocal) & (target < n_docs))
    back_doc = target[recip]
    has = links_per_doc[back_doc] > 0
    recip, back_doc = recip[has], back_doc[has]
    slot = doc_first_l[back_doc] + (rng.random(len(recip)) * links_per_doc[back_doc]).astype(np.int64)
    target[slot] = l_doc[recip]
    self_link = target == l_doc
    target[self_link] = np.mod(target[self_link] + 1, n_docs)
    del is_local, near, recip, back_doc, has, slot, self_link

    titles = pa.array([f"Topic {i}" for i in range(n_docs)] + [f"Elsewhere {i}" for i in range(n_out)])
    title_len = pc.utf8_length(titles).to_numpy().astype(np.int64)
    vocab = pa.array([f"w{i}" for i in range(VOCAB)])
    vocab_len = pc.utf8_length(vocab).to_numpy().astype(np.int64)
    tokens_dict = pa.concat_arrays([vocab, titles])
    tokens_len = np.concatenate([vocab_len, title_len])
    doc_ids = pc.cast(pa.array(np.arange(1, universe + 1)), pa.string())

    # -- parts: consecutive documents, about part_links links each ----------------------------
    for name, (schema, is_dir) in STORE_TABLES.items():
        if is_dir:
            (out / name).mkdir()
    bounds = [0]
    cum = np.cumsum(links_per_doc)
    while bounds[-1] < n_docs:
        nxt = int(np.searchsorted(cum, (cum[bounds[-1] - 1] if bounds[-1] else 0) + part_links, "right"))
        bounds.append(min(n_docs, max(nxt, bounds[-1] + 1)))
    doc_stats = {k: np.zeros(n_docs, np.int64) for k in ("n_sentences", "n_words")}
    totals = {"passages": 0, "sentences": 0, "sections": 0}
    for part, (d0, d1) in enumerate(zip(bounds[:-1], bounds[1:])):
        p0, p1 = int(doc_first_p[d0]), int(doc_first_p[d1 - 1] + pass_per_doc[d1 - 1])
        l0, l1 = int(doc_first_l[d0]), int(doc_first_l[d1 - 1] + links_per_doc[d1 - 1])
        fname = f"part-{part:05d}.parquet"
        # passages of the part
        pd_ = p_doc[p0:p1]
        ppos = p_pos[p0:p1]
        nsp = sent_per_p[p0:p1]
        nlp = links_per_p[p0:p1]
        np_ = p1 - p0
        # sentences
        s_pass = np.repeat(np.arange(np_), nsp)
        ns = len(s_pass)
        s_first = np.cumsum(nsp) - nsp
        # links: link j of a passage with L links goes to sentence j * S // L
        ll_pass = np.repeat(np.arange(np_), nlp)
        nl = len(ll_pass)
        l_first_p = np.cumsum(nlp) - nlp
        j = np.arange(nl) - l_first_p[ll_pass]
        l_sent = s_first[ll_pass] + (j * nsp[ll_pass]) // np.maximum(nlp[ll_pass], 1)
        links_per_s = np.bincount(l_sent, minlength=ns)
        s_first_l = np.cumsum(links_per_s) - links_per_s
        k = np.arange(nl) - s_first_l[l_sent]
        ls = links_per_s[l_sent]
        slot = ((2 * k + 1) * WORDS_PER_SENTENCE) // (2 * ls)  # distinct slots, spread out
        # tokens: WORDS_PER_SENTENCE per sentence, link anchors replacing the filler at their slot
        tok = rng.integers(0, VOCAB, ns * WORDS_PER_SENTENCE)
        tgt = target[l0:l1]
        tok[l_sent * WORDS_PER_SENTENCE + slot] = VOCAB + tgt
        tlen = tokens_len[tok]
        tok_off = np.arange(0, ns * WORDS_PER_SENTENCE + 1, WORDS_PER_SENTENCE, dtype=np.int32)
        words = pa.ListArray.from_arrays(pa.array(tok_off), tokens_dict.take(pa.array(tok)))
        s_text = pc.binary_join(words, " ")
        tstart = (np.cumsum(tlen + 1) - (tlen + 1)).reshape(ns, WORDS_PER_SENTENCE)
        tstart = tstart - tstart[:, :1]  # token start inside its sentence
        s_len = tlen.reshape(ns, WORDS_PER_SENTENCE).sum(1) + WORDS_PER_SENTENCE - 1
        del tok, tlen, words
        # passages: sentences joined by " "; document text: passages joined by "\n"
        s_in_pass_start = group_excl_cumsum(s_len + 1, s_first, s_pass)
        p_len = np.bincount(s_pass, weights=s_len + 1, minlength=np_).astype(np.int64) - 1
        dloc = pd_ - d0
        p_first_in_part = doc_first_p[d0:d1] - p0
        p_start = group_excl_cumsum(p_len + 1, p_first_in_part, dloc)
        p_text = pc.binary_join(pa.ListArray.from_arrays(pa.array(np.append(s_first, ns).astype(np.int32)), s_text), " ")
        s_start = p_start[s_pass] + s_in_pass_start
        s_words = WORDS_PER_SENTENCE + links_per_s  # each anchor "Topic N" is two words
        p_words = np.bincount(s_pass, weights=s_words, minlength=np_).astype(np.int64)
        # document-level sentence indices
        s_doc = pd_[s_pass]
        sent_per_doc = np.bincount(s_doc - d0, minlength=d1 - d0)
        s_idx = np.arange(ns) - (np.cumsum(sent_per_doc) - sent_per_doc)[s_doc - d0]
        doc_stats["n_sentences"][d0:d1] = sent_per_doc
        doc_stats["n_words"][d0:d1] = np.bincount(dloc, weights=p_words, minlength=d1 - d0)
        pid = pc.binary_join_element_wise(doc_ids.take(pa.array(pd_)), pc.cast(pa.array(ppos), pa.string()), "-")
        sec = np.where(ppos == 0, 0, 1 + (ppos - 1) // 2).astype(np.int32)
        write_table(pa.table({
            "passage_id": pid, "doc_id": doc_ids.take(pa.array(pd_)), "position": ppos.astype(np.int32),
            "section_idx": sec, "start": p_start.astype(np.int32), "n_words": p_words.astype(np.int32),
            "text": p_text}, schema=STORE_TABLES["passages"][0]), out / "passages" / fname)
        s_doc_ids = doc_ids.take(pa.array(s_doc))
        write_table(pa.table({
            "doc_id": s_doc_ids, "sentence_idx": s_idx.astype(np.int32), "passage_id": pid.take(pa.array(s_pass)),
            "section_idx": sec[s_pass], "start": s_start.astype(np.int32),
            "end": (s_start + s_len).astype(np.int32), "text": s_text, "has_hole": np.zeros(ns, dtype=bool),
            "is_list_item": np.zeros(ns, dtype=bool)}, schema=STORE_TABLES["sentences"][0]),
            out / "sentences" / fname)
        first_of_sec = np.flatnonzero((ppos == 0) | ((ppos >= 1) & ((ppos - 1) % 2 == 0)))
        write_table(pa.table({
            "doc_id": doc_ids.take(pa.array(pd_[first_of_sec])), "section_idx": sec[first_of_sec],
            "start": p_start[first_of_sec].astype(np.int32),
            "title": pc.if_else(pa.array(sec[first_of_sec] == 0), "",
                                pc.binary_join_element_wise("Section ", pc.cast(pa.array(sec[first_of_sec]), pa.string()), ""))},
            schema=STORE_TABLES["sections"][0]), out / "sections" / fname)
        # links
        a_start_s = tstart[l_sent, slot]
        a_len = title_len[tgt]
        l_start = s_start[l_sent] + a_start_s
        l_pstart = s_in_pass_start[l_sent] + a_start_s
        ldoc = pd_[ll_pass]
        l_idx = np.arange(nl) - (doc_first_l[ldoc] - l0)
        anchor = titles.take(pa.array(tgt))
        tdoc = doc_ids.take(pa.array(tgt))
        tdoc = pc.if_else(pa.array(tgt < n_docs), tdoc, pa.scalar(None, pa.string()))
        write_table(pa.table({
            "doc_id": doc_ids.take(pa.array(ldoc)), "link_idx": l_idx.astype(np.int32),
            "passage_id": pid.take(pa.array(ll_pass)), "sentence_idx": s_idx[l_sent].astype(np.int32),
            "start": l_start.astype(np.int32), "end": (l_start + a_len).astype(np.int32),
            "passage_start": l_pstart.astype(np.int32), "passage_end": (l_pstart + a_len).astype(np.int32),
            "anchor": anchor, "written_target": anchor, "target_title": anchor, "target_doc_id": tdoc,
            "via_redirect": pa.array(np.zeros(nl, bool))}, schema=STORE_TABLES["links"][0]), out / "links" / fname)
        totals["passages"] += np_
        totals["sentences"] += ns
        totals["sections"] += len(first_of_sec)
    write_table(STORE_TABLES["citations"][0].empty_table(), out / "citations" / "part-00000.parquet")

    # -- per-document tables ------------------------------------------------------------------
    did = doc_ids.slice(0, n_docs)
    dt = titles.slice(0, n_docs)
    zeros = pa.array(np.zeros(n_docs, np.int32))
    cols = {"doc_id": did, "title": dt, "is_disambiguation": pa.array(np.zeros(n_docs, bool)),
            "n_passages": pa.array(pass_per_doc.astype(np.int32)),
            "n_sentences": pa.array(doc_stats["n_sentences"].astype(np.int32)),
            "n_links": pa.array(links_per_doc.astype(np.int32)), "n_citations": zeros,
            "n_words": pa.array(doc_stats["n_words"].astype(np.int32))}
    write_table(pa.table(cols, schema=STORE_TABLES["documents"][0]), out / "documents.parquet")
    pages = {**cols, "namespace": zeros, "status": pa.array(["kept"] * n_docs),
             "redirect_to": pa.nulls(n_docs, pa.string()), "reason": pa.nulls(n_docs, pa.string())}
    write_table(pa.table({f.name: pages[f.name] for f in STORE_TABLES["pages"][0]}, schema=STORE_TABLES["pages"][0]),
                out / "pages.parquet")
    write_table(STORE_TABLES["redirects"][0].empty_table(), out / "redirects.parquet")
    counts = {"documents": n_docs, "pages": n_docs, "redirects": 0, "passages": totals["passages"],
              "sentences": totals["sentences"], "sections": totals["sections"], "links": n_links,
              "links_to_documents": int((target < n_docs).sum()), "citations": 0,
              "entities_outside_store": n_out, "links_dropped": {}}
    manifest = {"pretriever_version": "synthetic",
                "input": {"path": "synthetic", "bytes": 0, "format": "synthetic"},
                "options": {"links": links, "seed": seed, "part_links": part_links, "outside": outside,
                            "local": local, "reciprocal": reciprocal, "zipf_a": zipf_a},
                "counts": counts, "dropped_documents": [], "errors": [],
                "tables": {name: (f"{name}/" if is_dir else f"{name}.parquet")
                           for name, (_, is_dir) in STORE_TABLES.items()},
                "build_seconds": round(time.perf_counter() - started, 2)}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    return manifest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--links", type=float, default=1e5, help="number of links (1e5, 1e6, 1e7)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--part-links", type=int, default=1_000_000)
    ap.add_argument("--reciprocal", type=float, default=0.2)
    args = ap.parse_args()
    m = generate(args.out, int(args.links), seed=args.seed, part_links=args.part_links, reciprocal=args.reciprocal)
    print(json.dumps({"counts": m["counts"], "seconds": m["build_seconds"]}))


if __name__ == "__main__":
    main()
