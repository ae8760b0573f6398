"""Names travel with the data: a DataFrame's columns are the model's feature names, matched by
name at predict as the CLI matches an ARFF file's; label names reach meta.json and the CLI."""

import json
import subprocess
import warnings

import numpy as np
import pytest

from cardinal_pnc import CardinalClassifier

from conftest import SMALL

pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def frames(problem):
    X, Y, Xt, _ = problem
    cols = [f"f{j}" for j in range(X.shape[1])]
    labels = [f"label {k}" for k in range(Y.shape[1])]
    return (
        pd.DataFrame(X, columns=cols),
        pd.DataFrame(Y, columns=labels),
        pd.DataFrame(Xt, columns=cols),
    )


@pytest.fixture(scope="module")
def named(frames):
    X, Y, _ = frames
    return CardinalClassifier(**SMALL).fit(X, Y)


def test_fit_on_a_dataframe_records_feature_and_label_names(frames, named):
    X, Y, _ = frames
    assert named.feature_names_in_.dtype == object
    assert list(named.feature_names_in_) == list(X.columns)
    assert named.label_names_ == list(Y.columns)
    # Arrays carry no names.
    plain = CardinalClassifier(**SMALL).fit(X.to_numpy(), Y.to_numpy())
    assert not hasattr(plain, "feature_names_in_") and plain.label_names_ == []
    given = CardinalClassifier(**SMALL).fit(X.to_numpy(), Y.to_numpy(), label_names=list("abcdefgh"))
    assert given.label_names_ == list("abcdefgh")
    with pytest.raises(ValueError, match="label_names='abcdefgh': expected a list"):
        CardinalClassifier(**SMALL).fit(X, Y.to_numpy(), label_names="abcdefgh")
    with pytest.raises(ValueError, match="label_names: 3 names for the 8 columns of Y"):
        CardinalClassifier(**SMALL).fit(X, Y.to_numpy(), label_names=["a", "b", "c"])


def test_reordered_columns_are_aligned_by_name(frames, named):
    _, _, Xt = frames
    want = named.predict_proba(Xt)
    shuffled = Xt[list(reversed(Xt.columns))]
    np.testing.assert_array_equal(named.predict_proba(shuffled), want)
    np.testing.assert_array_equal(named.predict(shuffled), named.predict(Xt))
    # Same names, same order: no warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        named.predict(Xt)


def test_missing_extra_and_renamed_columns_are_refused_by_name(frames, named):
    _, _, Xt = frames
    with pytest.raises(ValueError, match="missing: `f3`"):
        named.predict(Xt.drop(columns=["f3"]))
    with pytest.raises(ValueError, match="does not know: `surprise`"):
        named.predict(Xt.assign(surprise=1.0))
    with pytest.raises(ValueError, match=r"missing: `f0`.*does not know: `zero`"):
        named.predict_proba(Xt.rename(columns={"f0": "zero"}))


def test_arrays_and_frames_mixed_warn_as_scikit_learn_does(frames, named):
    X, Y, Xt = frames
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        named.predict(Xt.to_numpy())
    plain = CardinalClassifier(**SMALL).fit(X.to_numpy(), Y.to_numpy())
    with pytest.warns(UserWarning, match="fitted without feature names"):
        plain.predict(Xt)


def test_names_survive_save_load_and_pickle(frames, named, tmp_path):
    import pickle

    _, Y, Xt = frames
    named.save(tmp_path / "m")
    meta = json.loads((tmp_path / "m" / "meta.json").read_text())
    assert meta["label_names"] == list(Y.columns)
    assert meta["feature_names"] == list(Xt.columns)
    for again in (CardinalClassifier.load(tmp_path / "m"), pickle.loads(pickle.dumps(named))):
        assert list(again.feature_names_in_) == list(Xt.columns)
        assert again.label_names_ == list(Y.columns)
        np.testing.assert_array_equal(
            again.predict_proba(Xt[list(reversed(Xt.columns))]), named.predict_proba(Xt)
        )


def test_the_cli_prints_the_label_names_and_matches_features_by_name(frames, named, tmp_path, cli):
    _, _, Xt = frames
    named.save(tmp_path / "m")
    # An ARFF file of five rows whose attributes are the DataFrame's columns, reversed.
    cols = list(reversed(Xt.columns))
    rows = Xt[cols].to_numpy()[:5]
    data = tmp_path / "new.arff"
    with open(data, "w") as f:
        f.write("@relation new\n")
        for c in cols:
            f.write(f"@attribute {c} numeric\n")
        f.write("@data\n")
        for x in rows:
            f.write(",".join(f"{v:.9g}" for v in x) + "\n")
    lines = subprocess.run(
        [cli, "predict", "--model", str(tmp_path / "m"), "--data", str(data)],
        check=True, capture_output=True, text=True,
    ).stdout.splitlines()
    assert len(lines) == 5
    want = named.predict(Xt.iloc[:5])
    for line, row in zip(lines, want):
        # The same labels as Python's, by name: the CLI aligned the reversed columns.
        assert json.loads(line)["labels"] == [f"label {k}" for k in np.flatnonzero(row)]
