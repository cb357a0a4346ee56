"""The reference-route triplets of a qac run, for blind judging: question, answer, context (the whole positive
block), statement; rows sorted by pair_id, then shuffled with random.Random(0). No judgement."""
import json, random, sys
import pyarrow.parquet as pq
rows = sorted(pq.read_table(sys.argv[1] + "/qac.parquet").to_pylist(), key=lambda r: r["pair_id"])
rows = [r for r in rows if r["context_source"] == "reference"]
random.Random(0).shuffle(rows)
with open(sys.argv[2], "w") as f:
    for r in rows:
        f.write(json.dumps({"question": r["query"], "answer": r["answer"], "context": r["positive_text"],
                            "statement": r["statement"]}, ensure_ascii=False) + "\n")
print(len(rows), "written to", sys.argv[2])
