"""Every docstring example of carla_demo runs and shows what it says (an example nobody runs
goes stale with the first change of the API it shows)."""

import pytest

from hprm_core.testing import modules_with_examples, run_examples


@pytest.mark.parametrize("module", modules_with_examples("carla_demo"))
def test_the_docstring_examples_run(module):
    run_examples(module)
