"""The page-block extraction itself: fence attributes never make a python block disappear; and the
runner that runs each block as a reader would."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from pytest_codeblocks import extract_from_buffer

import doc_blocks

PAGE = '''
```python title="a.py" hl_lines="1"
print(1)
```

```py
print(2)
```

```{.python .annotate}
print(3)
```

    ```python linenums="1"
    print(4)
    ```

```{.python .excerpt title="netcl_lite/x.py"}
x = 5
```

```text
print("not python")
```
'''


def test_attributes_do_not_hide_python_blocks():
    found = extract_from_buffer(io.StringIO(doc_blocks.normalize(PAGE)))
    runnable = [b.code.strip() for b in found if b.syntax == "python"]
    excerpts = [b.code.strip() for b in found if b.syntax == "python-excerpt"]
    assert runnable == ["print(1)", "print(2)", "print(3)", "print(4)"]
    assert excerpts == ["x = 5"]


def test_plain_extraction_would_have_skipped_them():
    """Why normalize exists: pytest-codeblocks alone keeps only the bare `python` fence info."""
    found = extract_from_buffer(io.StringIO(PAGE))
    assert sum(b.syntax == "python" for b in found) == 0


def test_the_doc_test_runner_reads_what_a_block_prints_as_the_build_does(tmp_path):
    """run_code, which runs each page block in the reader test, reads its stdout as the build reads a
    snippet's (site_build.runner.HOW): bytes, decoded as UTF-8, carriage returns kept (text mode
    turned them into newlines); bytes that are not UTF-8 are an error naming the block and the byte
    (a bare UnicodeDecodeError from inside subprocess, or the locale's decoding)."""
    from site_build import runner

    proc = runner.run_code("import sys\nsys.stdout.buffer.write(b'a\\r\\nb\\xc3\\xa9\\rc\\n')\n", tmp_path)
    assert proc.returncode == 0 and proc.stdout == "a\r\nb\u00e9\rc\n", repr(proc.stdout)
    with pytest.raises(runner.SnippetError, match=r"block\.py printed bytes that are not UTF-8 \(at byte 3: "
                                                  r"b'\\xff\\n'\); print text"):
        runner.run_code("import sys\nsys.stdout.buffer.write(b'ok\\n\\xff\\n')\n", tmp_path)
    proc = runner.run_code("import sys\nsys.stderr.buffer.write(b'\\xff')\nraise SystemExit(3)\n", tmp_path)
    assert proc.returncode == 3 and proc.stderr == "\ufffd", repr(proc.stderr)     # stderr is only shown


def test_the_runner_runs_a_snippet_as_a_reader_does(tmp_path, monkeypatch):
    """site_build.runner, shared by the build and the doc tests: a fresh interpreter in a scratch
    folder, without the build's PYTHONPATH or pytest's variables (its PYTHONPATH is the prelude's own folder,
    new for the run and removed after it, which a Python the snippet starts inherits); a failing snippet
    raises with its stderr."""
    from site_build import runner

    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "planted"))
    monkeypatch.setenv("PYTEST_PLANTED", "1")
    snippet = tmp_path / "where.py"
    snippet.write_text("import os, sys\nprint(os.getcwd())\nprint(os.environ.get('PYTHONPATH'))\n"
                       "print(os.environ.get('PYTEST_PLANTED'))\nprint(sys.executable)\n")
    cwd, pythonpath, planted, python = runner.run_snippet(snippet).splitlines()
    assert cwd != str(tmp_path) and not Path(cwd).exists(), "the scratch folder is new and removed after"
    assert planted == "None" and str(tmp_path) not in pythonpath, pythonpath
    assert Path(pythonpath).name.startswith("netcl-lite-prelude-") and not Path(pythonpath).exists()
    proc = runner.run_code("print(1 + 1)\n", tmp_path)
    assert proc.returncode == 0 and proc.stdout == "2\n" and (tmp_path / "block.py").is_file()
    (tmp_path / "fails.py").write_text("raise SystemExit('no such model')\n")
    with pytest.raises(RuntimeError, match="no such model"):
        runner.run_snippet(tmp_path / "fails.py")
    with pytest.raises(TypeError, match="drop must be"):
        runner.reader_env(drop="PYTEST")
