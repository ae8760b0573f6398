"""kNN label scores, alone and blended post hoc with a proxy run's unary scores (issue 8).

Reads DATASET.npz (make_npz.py: the *training* file only) and, with --mlp, the --dump file
of a proxy.py run on the same fold. Scores on that fold of a 5-fold partition of train, the
partition proxy.py uses. The kNN score of a label is the similarity-weighted share of the K
nearest training rows (cosine of idf-weighted inputs, weights sim**P) that carry it.

    python3 knn_blend.py --fold 1 --mlp mlp_f1.npz --alpha 0.2,0.3

A blend of two predictors is an ensemble: evidence for what limits a single model, not a
candidate default (the issue asks for one model).
"""
import argparse, json, os
import numpy as np


def ex_f1(pred, gold):
    tp = (pred * gold).sum(1)
    den = pred.sum(1) + gold.sum(1)
    return float(np.where(den > 0, 2 * tp / np.maximum(den, 1e-12), 0.0).mean() * 100)


def top_k(scores, k):
    order = np.argsort(-scores, 1)
    ranks = np.empty_like(order)
    ranks[np.arange(len(scores))[:, None], order] = np.arange(scores.shape[1])[None, :]
    return (ranks < k[:, None]).astype(np.float32)


def knn_scores(X, Y, tr, rows, k, power, idf_weight):
    df = (X[tr] > 0).sum(0)
    idf = np.log((1 + len(tr)) / (1 + df)) + 1 if idf_weight else np.ones(X.shape[1])
    unit = lambda A: A / np.maximum(np.linalg.norm(A, axis=1, keepdims=True), 1e-6)
    sim = unit(X[rows] * idf) @ unit(X[tr] * idf).T
    idx = np.argpartition(-sim, k, 1)[:, :k]
    w = np.maximum(np.take_along_axis(sim, idx, 1), 0) ** power
    return (w[:, :, None] * Y[tr][idx]).sum(1) / np.maximum(w.sum(1, keepdims=True), 1e-9)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dataset", default="delicious")
    p.add_argument("--data-dir", default=os.path.dirname(os.path.abspath(__file__)))
    p.add_argument("--fold", type=int, default=0)
    p.add_argument("--k", type=int, default=25)
    p.add_argument("--power", type=float, default=3)
    p.add_argument("--no-idf", action="store_true")
    p.add_argument("--mlp", default="", help="proxy.py --dump file of the same fold")
    p.add_argument("--alpha", default="0.1,0.2,0.3,0.5")
    a = p.parse_args()
    d = np.load(os.path.join(a.data_dir, a.dataset + ".npz"))
    X, Y = d["Xtr"].astype(np.float32), d["Ytr"].astype(np.float32)
    folds = np.array_split(np.random.RandomState(12345).permutation(len(X)), 5)
    dv = folds[a.fold]
    tr = np.concatenate([f for i, f in enumerate(folds) if i != a.fold])
    gold = Y[dv]
    kn = knn_scores(X, Y, tr, dv, a.k, a.power, not a.no_idf)
    r = {"fold": a.fold, "k": a.k, "power": a.power, "idf": not a.no_idf,
         "knn_oracle_k": ex_f1(top_k(kn, gold.sum(1)), gold)}
    if a.mlp:
        m = np.load(a.mlp)
        assert np.array_equal(m["dv"], dv), "the dump is of another fold"
        prob, z = 1 / (1 + np.exp(-m["u"])), np.round(m["z"])
        r["mlp_top_round_z"] = ex_f1(top_k(prob, z), gold)
        for alpha in [float(v) for v in a.alpha.split(",")]:
            s = (1 - alpha) * prob + alpha * kn
            r[f"blend{alpha}_top_round_z"] = ex_f1(top_k(s, z), gold)
            r[f"blend{alpha}_oracle_k"] = ex_f1(top_k(s, gold.sum(1)), gold)
    print(json.dumps(r))


if __name__ == "__main__":
    main()
