"""Majority verdicts of several blind judges of qac triplets (bench/records/qac_rubric.md), and how far they agree.

    python bench/qac_majority.py INPUT.jsonl VERDICTS1.jsonl VERDICTS2.jsonl VERDICTS3.jsonl [--json OUT]

INPUT is what the judges saw (bench/qac_for_blind_judging.py, numbered from 1 as "n"); each VERDICTS file holds one
judge's lines {n, answerable, type_fits, grammatical, pass, why}. Prints, per criterion, the triplets a majority
passes, how many verdicts were unanimous, and Fleiss' kappa (agreement beyond chance); then every triplet a
majority fails, with each judge's reason.
"""
import argparse
import json

CRITERIA = ("answerable", "type_fits", "grammatical", "pass")


def fleiss_kappa(votes: list[list[bool]]) -> float:
    """Fleiss' kappa for yes/no votes, one list of the judges' votes per item (every item the same number)."""
    n, k = len(votes), len(votes[0])
    yes = [sum(v) for v in votes]
    agreement = sum((y * (y - 1) + (k - y) * (k - y - 1)) / (k * (k - 1)) for y in yes) / n
    p = sum(yes) / (n * k)
    chance = p * p + (1 - p) * (1 - p)
    return 1.0 if chance == 1 else (agreement - chance) / (1 - chance)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input")
    parser.add_argument("verdicts", nargs="+")
    parser.add_argument("--json", help="write the table and the majority's failures here")
    args = parser.parse_args()
    items = [json.loads(line) for line in open(args.input, encoding="utf-8")]
    judges = [{v["n"]: v for v in map(json.loads, open(path, encoding="utf-8"))} for path in args.verdicts]
    if any(set(j) != {i["n"] for i in items} for j in judges):
        raise SystemExit("every judge must judge every triplet of the input")
    table = {}
    for c in CRITERIA:
        votes = [[j[i["n"]][c] for j in judges] for i in items]
        table[c] = {"majority_pass": sum(2 * sum(v) > len(v) for v in votes),
                    "unanimous": sum(len(set(v)) == 1 for v in votes), "fleiss_kappa": round(fleiss_kappa(votes), 3)}
    print(f"{len(items)} triplets, {len(judges)} judges")
    for c, row in table.items():
        print(f"  {c:12} majority pass {row['majority_pass']:3} ({row['majority_pass'] / len(items):.1%})  "
              f"unanimous {row['unanimous']:3}  Fleiss' kappa {row['fleiss_kappa']}")
    failed = []
    for i in items:
        votes = [j[i["n"]]["pass"] for j in judges]
        if 2 * sum(votes) <= len(votes):
            failed.append({"n": i["n"], "question": i["question"], "answer": i["answer"],
                           "why": [j[i["n"]]["why"] for j in judges]})
            print(f"- {i['n']}: {i['question']} -> {i['answer']}")
            for why in failed[-1]["why"]:
                print(f"    {why or '(pass)'}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"triplets": len(items), "judges": len(judges), "criteria": table, "majority_fails": failed},
                      f, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
