"""cardinal from Python on a synthetic multi-label problem, beside scikit-learn.

Run with the package installed (`pip install .`): `python examples/python_multilabel.py`.
It shows that

* dense and sparse inputs give identical predictions;
* the count constraint holds: |sum(predict_proba) - predict_count| <= 0.01 on every row;
* example-F1 on held-out rows, against scikit-learn's one-vs-rest logistic regression.

It exits with a non-zero status if either of the first two fails (the tests run it).
"""

import sys
import time

import numpy as np
import scipy.sparse
from sklearn.datasets import make_multilabel_classification
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from sklearn.model_selection import train_test_split
from sklearn.multiclass import OneVsRestClassifier

from cardinal_pnc import CardinalClassifier

X, Y = make_multilabel_classification(
    n_samples=3000, n_features=100, n_classes=20, n_labels=4, random_state=0
)
X_train, X_test, Y_train, Y_test = train_test_split(X, Y, test_size=0.3, random_state=0)

start = time.perf_counter()
dense = CardinalClassifier(random_state=0).fit(X_train, Y_train)
cardinal_seconds = time.perf_counter() - start
sparse = CardinalClassifier(random_state=0).fit(scipy.sparse.csr_matrix(X_train), Y_train)

pred = dense.predict(X_test)
same = np.array_equal(pred, sparse.predict(scipy.sparse.csr_matrix(X_test))) and np.array_equal(
    dense.predict_proba(X_test), sparse.predict_proba(scipy.sparse.csr_matrix(X_test))
)
print(f"dense and sparse inputs give identical predictions: {same}")

gap = np.abs(dense.predict_proba(X_test).sum(axis=1) - dense.predict_count(X_test))
print(f"count constraint: max |sum(y) - z| over {len(gap)} rows = {gap.max():.2e}")

start = time.perf_counter()
ovr = OneVsRestClassifier(LogisticRegression(max_iter=1000)).fit(X_train, Y_train)
ovr_seconds = time.perf_counter() - start

print(f"{'model':<40} {'example-F1':>10} {'fit (s)':>8}")
for name, p, secs in [
    ("cardinal (preset predict, seed 0)", pred, cardinal_seconds),
    ("one-vs-rest logistic regression", ovr.predict(X_test), ovr_seconds),
]:
    f1 = 100 * f1_score(Y_test, p, average="samples", zero_division=1.0)
    print(f"{name:<40} {f1:>10.2f} {secs:>8.2f}")

if not same or gap.max() > 0.01:
    sys.exit("the checks above failed")
