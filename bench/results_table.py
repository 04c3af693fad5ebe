#!/usr/bin/python3
"""Renders the JSON files of bench/reproduce_papers.sh as the markdown
tables of bench/notes/results-history.md, beside the papers' published nMSE.

usage: bench/results_table.py JSON_DIR > tables.md
"""
import json
import os
import sys

METHODS = ["knn", "knn-gw", "knn-egop", "kr", "kr-gw", "kr-egop"]

# Published nMSE (mean, sd). Trivedi et al. 2014 Table 1 (hNN = kr);
# Kpotufe & Boularias 2012 Table 1 (KR-rho / k-NN-rho = the gw methods).
EGOP_PAPER = {
    "delta_ailerons": {"kr": (0.3637, 0.0099), "kr-gw": (0.3381, 0.0087),
                       "kr-egop": (0.3264, 0.0095), "knn": (0.3364, 0.0087),
                       "knn-gw": (0.3161, 0.0058),
                       "knn-egop": (0.3154, 0.0100)},
    "boston": {"kr": (0.3033, 0.0681), "kr-gw": (0.2628, 0.0652),
               "kr-egop": (0.2776, 0.0550), "knn": (0.2897, 0.0632),
               "knn-gw": (0.2389, 0.0604), "knn-egop": (0.2546, 0.0550)},
    "wine_red": {"kr": (0.7107, 0.0157), "kr-gw": (0.7056, 0.0184),
                 "kr-egop": (0.6867, 0.0145), "knn": (0.6633, 0.0119),
                 "knn-gw": (0.6615, 0.0134), "knn-egop": (0.6574, 0.0171)},
    "sarcos-tau1": {"kr": (0.1433, 0.0087), "kr-gw": (0.0913, 0.0054),
                    "kr-egop": (0.1064, 0.0101), "knn": (0.1222, 0.0074),
                    "knn-gw": (0.0769, 0.0037), "knn-egop": (0.0890, 0.0072)},
    "sarcos-tau5": {"kr": (0.1101, 0.0033), "kr-gw": (0.0972, 0.0044),
                    "kr-egop": (0.0970, 0.0064), "knn": (0.0870, 0.0051),
                    "knn-gw": (0.0779, 0.0026), "knn-egop": (0.0752, 0.0051)},
}
GW_PAPER = {
    "sarcos-tau1": {"kr": (0.16, 0.02), "kr-gw": (0.14, 0.02),
                    "knn": (0.08, 0.01), "knn-gw": (0.07, 0.01)},
    "sarcos-tau5": {"kr": (0.14, 0.02), "kr-gw": (0.12, 0.01),
                    "knn": (0.08, 0.01), "knn-gw": (0.07, 0.01)},
    "boston": {"kr": (0.37, 0.08), "kr-gw": (0.25, 0.06),
               "knn": (0.28, 0.09), "knn-gw": (0.22, 0.06)},
    "wine_red": {"kr": (0.75, 0.03), "kr-gw": (0.75, 0.02),
                 "knn": (0.73, 0.04), "knn-gw": (0.72, 0.03)},
    "delta_ailerons": {"kr": (0.40, 0.02), "kr-gw": (0.39, 0.02),
                       "knn": (0.37, 0.01), "knn-gw": (0.34, 0.01)},
}


def cell(pair):
    return "%.4f ± %.4f" % pair if pair else ""


def main(directory):
    names = []
    for file in sorted(os.listdir(directory)):
        if file.endswith(".batch.json"):
            names.append(file[: -len(".batch.json")])
    summary = []
    for name in names:
        runs = {}
        for mode in ("batch", "online"):
            path = os.path.join(directory, "%s.%s.json" % (name, mode))
            if os.path.exists(path):
                with open(path) as f:
                    runs[mode] = json.load(f)
        batch = runs["batch"]
        print("### %s — target %s, train %d / test %d, %d repetitions\n" %
              (name, batch["target"], batch["train"], batch["test"],
               batch["reps"]))
        print("| method | batch nMSE | online nMSE | online / batch | "
              "Trivedi et al. 2014 | Kpotufe & Boularias 2012 | "
              "predict µs (batch / online) | fit s (batch / online) |")
        print("|---|---|---|---|---|---|---|---|")
        for method in METHODS:
            b = batch["results"].get(method)
            o = runs.get("online", {}).get("results", {}).get(method)
            if b is None:
                continue
            ratio = o["nmse_mean"] / b["nmse_mean"] if o else float("nan")
            summary.append((name, method, b["nmse_mean"],
                            o["nmse_mean"] if o else None))
            print("| %s | %s | %s | %.3f | %s | %s | %.1f / %.1f | %.2f / %.2f |"
                  % (method, cell((b["nmse_mean"], b["nmse_sd"])),
                     cell((o["nmse_mean"], o["nmse_sd"])) if o else "",
                     ratio, cell(EGOP_PAPER.get(name, {}).get(method)),
                     cell(GW_PAPER.get(name, {}).get(method)),
                     b["predict_us_mean"], o["predict_us_mean"] if o else 0,
                     b["fit_seconds"], o["fit_seconds"] if o else 0))
        print()
    # How often a learned metric beats the Euclidean one, and online vs batch.
    wins = {"batch": [0, 0], "online": [0, 0]}
    ratios = []
    by = {(n, m): (b, o) for n, m, b, o in summary}
    for name in names:
        for base in ("knn", "kr"):
            for metric in ("-gw", "-egop"):
                for i, mode in enumerate(("batch", "online")):
                    e = by.get((name, base))
                    l = by.get((name, base + metric))
                    if e and l and e[i] is not None and l[i] is not None:
                        wins[mode][0] += l[i] < e[i]
                        wins[mode][1] += 1
        for method in METHODS:
            b, o = by.get((name, method), (None, None))
            if b and o:
                ratios.append(o / b)
    line = ("Learned metric better than Euclidean: batch %d of %d, online %d "
            "of %d." % (wins["batch"][0], wins["batch"][1], wins["online"][0],
                        wins["online"][1]))
    if ratios:  # runs in both modes (reproduce_papers.sh's MODES)
        line += (" Online / batch nMSE: median %.3f, within 5%% in %d of %d, "
                 "worst %.3f." % (sorted(ratios)[len(ratios) // 2],
                                  sum(r <= 1.05 for r in ratios), len(ratios),
                                  max(ratios)))
    print(line + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
