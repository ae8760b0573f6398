"""Writes DATASET.npz (the training file only: Xtr, Ytr as uint8) for proxy.py, with the
PyTorch peer's ARFF reader.

    python3 make_npz.py --dataset delicious --data-root ../../../shared/data \
        --peer ../../../shared/peers/torch
"""
import argparse, os, sys
import numpy as np

p = argparse.ArgumentParser()
p.add_argument("--dataset", default="delicious")
p.add_argument("--data-root", required=True)
p.add_argument("--peer", required=True, help="folder of the peer's pac.py")
p.add_argument("--out-dir", default=os.path.dirname(os.path.abspath(__file__)))
a = p.parse_args()
sys.path.insert(0, a.peer)
import pac  # noqa: E402

Xtr, Ytr, _, _ = pac.load_dataset(a.dataset, a.data_root)
np.savez_compressed(os.path.join(a.out_dir, a.dataset + ".npz"),
                    Xtr=Xtr.astype(np.uint8), Ytr=Ytr.astype(np.uint8))
print(a.dataset, Xtr.shape, Ytr.shape)
