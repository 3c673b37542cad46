"""Render a harness.result/1 JSON as the Markdown table used in the READMEs: python harness/results/table.py FILE"""

import json
import sys


def table(path: str) -> str:
    r = json.load(open(path))
    c = r["config"]
    lines = [f"Board {c['board']}, {', '.join(c['tasks'])}, {c['items']} items/task, {c['length']} tokens, "
             f"{r['environment']['sandbox']}, {r['environment']['seconds']:.0f} s",
             "", "| method | keep | norm. accuracy [95% CI] | KL | top-1 | eviction cost (oracle) | KV bytes vs full | compress s | decode tok/s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for a in r["aggregates"]:
        if a["task"] != "*":
            continue
        ci = a["normalized_ci95"]
        acc = f"{a['normalized_accuracy']:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "–"
        lines.append(f"| {a['method']} | {a['budget']:g} | {acc} | {a['kl']:.3f} | {a['top1']:.2f} | "
                     f"{a['eviction_cost']:.2f} ({a['eviction_cost_oracle']:.2f}) | {a['kv_bytes_ratio']:.3f} | "
                     f"{a['compress_s']:.3f} | {a['decode_tok_s']:.1f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(sys.argv[1]))
