"""load_dataset as the CLI reads data: --dataset, or --train/--test/--labels; MULAN folders
whose files carry a variant after -train/-test."""

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from cardinal import load_dataset

TINY = Path(__file__).resolve().parents[2] / "crates/cardinal-data/tests/fixtures/data/tiny"


def same(a, b):
    np.testing.assert_array_equal(a.X_train.toarray(), b.X_train.toarray())
    np.testing.assert_array_equal(a.Y_train, b.Y_train)
    np.testing.assert_array_equal(a.X_test.toarray(), b.X_test.toarray())
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


def test_errors_name_the_python_keyword(monkeypatch):
    monkeypatch.delenv("CARDINAL_DATA", raising=False)
    with pytest.raises(ValueError, match="not found") as e:
        load_dataset("emotions-not-here")
    assert "data_dir=" in str(e.value) and "--data-dir" not in str(e.value)
    with pytest.raises(ValueError, match="train_fraction"):
        load_dataset(TINY, train_fraction=1.5)
