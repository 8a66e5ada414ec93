"""The README examples, run as doctests against ``hsd serve --demo``.

Each README (this client's and the project's) gets a fresh hsd with the
demo table and the ``kv`` table its write examples use; the ports 9998 and
9999 in the text are replaced by the ones hsd picked.
"""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

from servers import REPO, hsd_sql, start_hsd

READMES = {
    "client": REPO / "clients" / "python" / "README.md",
    "project": REPO / "README.md",
}


@pytest.mark.parametrize("name", sorted(READMES))
def test_readme_examples(name: str, tmp_path: Path) -> None:
    text = READMES[name].read_text()
    data = tmp_path / "data"
    proc = start_hsd(data, ["--demo"])
    try:
        hsd_sql(data, "test", "CREATE TABLE items (k TEXT PRIMARY KEY, v TEXT, n INTEGER)")
        text = text.replace("9999", str(proc.write_port)).replace("9998", str(proc.read_port))
        test = doctest.DocTestParser().get_doctest(text, {}, name, str(READMES[name]), 0)
        assert test.examples, f"{READMES[name]} has no >>> examples"
        runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
        runner.run(test)
        result = runner.summarize(verbose=False)
        assert result.failed == 0, f"{result.failed} README example(s) failed, see above"
    finally:
        proc.stop()
