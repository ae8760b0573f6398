"""The conftest's rule for a missing prerequisite: a skip on a developer's machine, a failure
under CI."""

import pytest

from conftest import in_ci, skip_unless_ci


def test_ci_is_any_value_but_empty_zero_or_false():
    for v in ["true", "1", "yes", "TRUE"]:
        assert in_ci(v), v
    for v in ["", " ", "0", "false", "False"]:
        assert not in_ci(v), v


def test_a_missing_prerequisite_skips_outside_ci(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception):
        skip_unless_ci("no thing")


def test_a_missing_prerequisite_fails_under_ci(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="no thing, and CI is set"):
        skip_unless_ci("no thing")
