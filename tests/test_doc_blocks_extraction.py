"""The page-block extraction itself: fence attributes never make a python block disappear."""

from __future__ import annotations

import io

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
