"""load_dataset as the CLI reads data: --dataset, or --train/--test/--labels; MULAN folders
whose files carry a variant after -train/-test."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from cardinal_pnc import CardinalClassifier, load_dataset

TINY = Path(__file__).resolve().parents[2] / "crates/cardinal-data/tests/fixtures/data/tiny"


def dense(x):
    return x.toarray() if scipy.sparse.issparse(x) else x


def same(a, b):
    np.testing.assert_array_equal(dense(a.X_train), dense(b.X_train))
    np.testing.assert_array_equal(a.Y_train, b.Y_train)
    np.testing.assert_array_equal(dense(a.X_test), dense(b.X_test))
    np.testing.assert_array_equal(a.Y_test, b.Y_test)
    assert a.feature_names == b.feature_names and a.label_names == b.label_names


def test_train_test_and_labels_as_the_cli_takes_them(tmp_path):
    folder = load_dataset(TINY)
    assert folder.label_names == ["sport", "foot ball", "arts & music"]
    # The three files anywhere, under any names.
    for name, dest in [("tiny-train.arff", "a.arff"), ("tiny-test.arff", "b.arff"), ("tiny.xml", "c.xml")]:
        shutil.copy(TINY / name, tmp_path / dest)
    files = load_dataset(train=tmp_path / "a.arff", test=tmp_path / "b.arff", labels=tmp_path / "c.xml")
    same(files, folder)
    with pytest.raises(ValueError, match="train, test and labels go together"):
        load_dataset(train=tmp_path / "a.arff", test=tmp_path / "b.arff")
    with pytest.raises(ValueError, match="not both"):
        load_dataset(TINY, train=tmp_path / "a.arff", test=tmp_path / "b.arff", labels=tmp_path / "c.xml")
    with pytest.raises(ValueError, match="name_or_path"):
        load_dataset()


def test_a_folder_of_variant_files_like_corel5k(tmp_path):
    d = tmp_path / "corel5k"
    d.mkdir()
    shutil.copy(TINY / "tiny-train.arff", d / "Corel5k-train-sparse.arff")
    shutil.copy(TINY / "tiny-test.arff", d / "Corel5k-test-sparse.arff")
    shutil.copy(TINY / "tiny.xml", d / "Corel5k.xml")
    same(load_dataset(d), load_dataset(TINY))


def test_errors_name_the_python_keyword():
    # The module reads CARDINAL_DATA once, when it is imported: a fresh interpreter without it.
    env = {k: v for k, v in os.environ.items() if k != "CARDINAL_DATA"}
    code = (
        "from cardinal_pnc import load_dataset\n"
        "try:\n"
        "    load_dataset('emotions-not-here')\n"
        "except ValueError as e:\n"
        "    print(e)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    said = run.stdout
    assert "not found" in said and "data_dir=" in said and "--data-dir" not in said, said
    with pytest.raises(ValueError, match="train_fraction"):
        load_dataset(TINY, train_fraction=1.5)


def write_mulan(folder, rows, n_features, name="dense"):
    """A MULAN folder (dense ARFF rows: features then two labels, and the XML)."""
    folder.mkdir()
    head = [f"@relation {name}"]
    head += [f"@attribute f{j} numeric" for j in range(n_features)]
    head += ["@attribute a {0,1}", "@attribute b {0,1}", "@data"]
    for split, part in [("train", rows[:-4]), ("test", rows[-4:])]:
        lines = head + [",".join(str(v) for v in r) for r in part]
        (folder / f"{name}-{split}.arff").write_text("\n".join(lines) + "\n")
    (folder / f"{name}.xml").write_text(
        '<labels xmlns="http://mulan.sourceforge.net/labels">'
        '<label name="a"></label><label name="b"></label></labels>'
    )


def test_dense_data_comes_as_an_array_and_sparse_data_as_csr(tmp_path):
    """Numeric features (emotions-like: every entry non-zero) come dense, so that
    StandardScaler centres them; bag-of-words features (Bibtex) come as CSR; ``sparse=``
    chooses; both forms hold the same numbers."""
    rng = np.random.default_rng(0)
    rows = [[round(float(v), 3) for v in rng.normal(1.0, 1.0, 5)] + [i % 2, (i // 2) % 2]
            for i in range(24)]
    write_mulan(tmp_path / "dense", rows, 5)
    d = load_dataset(tmp_path / "dense")
    assert type(d.X_train) is np.ndarray and type(d.X_test) is np.ndarray
    assert d.X_train.dtype == np.float32 and d.X_train.shape == (20, 5)
    as_csr = load_dataset(tmp_path / "dense", sparse=True)
    assert scipy.sparse.isspmatrix_csr(as_csr.X_train)
    same(d, as_csr)
    np.testing.assert_allclose(d.X_train[0], rows[0][:5], rtol=1e-6)
    clf = make_pipeline(StandardScaler(), CardinalClassifier(hidden=8, epochs=2, random_state=0))
    assert clf.fit(d.X_train, d.Y_train).predict(d.X_test).shape == (4, 2)

    bibtex = load_dataset("bibtex")
    assert scipy.sparse.isspmatrix_csr(bibtex.X_train) and scipy.sparse.isspmatrix_csr(bibtex.X_test)
    assert bibtex.X_train.nnz < 0.5 * bibtex.X_train.shape[0] * bibtex.X_train.shape[1]
    # The tiny fixture stores 6 of its 15 training entries: sparse, unless asked otherwise.
    assert scipy.sparse.issparse(load_dataset(TINY).X_train)
    assert type(load_dataset(TINY, sparse=False).X_train) is np.ndarray
    with pytest.raises(ValueError, match="sparse="):
        load_dataset(TINY, sparse="yes")
