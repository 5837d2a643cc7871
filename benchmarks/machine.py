"""What the benchmarks say about the machine they ran on."""

from __future__ import annotations

import platform
from pathlib import Path


def cpu_name() -> str:
    """The CPU's model name with its family and model numbers (``/proc/cpuinfo``), or what
    ``platform`` knows. A virtual machine may call every generation "AMD EPYC"; the numbers tell
    them apart (family 23 is Zen 1 or 2, 25 Zen 3 or 4, 26 Zen 5)."""
    try:
        fields: dict[str, str] = {}
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if not line.strip():
                break                                   # the first processor's block is enough
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    except OSError:
        fields = {}
    name = fields.get("model name")
    if not name:
        return platform.processor() or platform.machine()
    if "cpu family" in fields and "model" in fields:
        return f"{name} (family {fields['cpu family']}, model {fields['model']})"
    return name
