"""Every docstring example of hprm_core runs and shows what it says (an example nobody runs
goes stale with the first change of the API it shows)."""

import pytest

from hprm_core.testing import modules_with_examples, run_examples


@pytest.mark.parametrize("module", modules_with_examples("hprm_core"))
def test_the_docstring_examples_run(module):
    run_examples(module)


def test_a_wrong_example_fails_and_a_missing_dependency_skips(tmp_path, monkeypatch):
    pkg = tmp_path / "exampled"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text('"""\n>>> 1 + 1\n2\n"""\n')
    (pkg / "wrong.py").write_text('def f():\n    """\n    >>> f()\n    3\n    """\n    return 2\n')
    (pkg / "needs.py").write_text('"""\n>>> 1\n1\n"""\nimport no_such_dependency_here\n')
    (pkg / "broken.py").write_text('"""\n>>> 1\n1\n"""\nimport exampled.missing_module\n')
    (pkg / "plain.py").write_text("x = 1  # no example: not listed\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    names = modules_with_examples("exampled")
    assert names == ["exampled.broken", "exampled.needs", "exampled.sub", "exampled.wrong"]
    run_examples("exampled.sub")
    with pytest.raises(AssertionError, match=r"1 of 1 examples failed:(.|\n)*Expected:\s+3"):
        run_examples("exampled.wrong")
    with pytest.raises(pytest.skip.Exception, match="needs no_such_dependency_here"):
        run_examples("exampled.needs")
    with pytest.raises(ModuleNotFoundError, match=r"exampled\.missing_module"):
        run_examples("exampled.broken")  # its own package's module: a bug, not a skip
