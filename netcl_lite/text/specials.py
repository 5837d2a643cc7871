"""Special tokens: the strings a tokenizer maps to ids of their own, and which of them a call allows.

tiktoken's policy: a call lists the special tokens it allows (``allowed_special``); the text of
any other one (``disallowed_special``, by default all the rest) is an error, because encoding it
silently would either hide text that looks like control tokens or let whoever wrote the text
forge them. :class:`SpecialTokens` holds the ``{string: id}`` map of one tokenizer, checks a
call's choice (:meth:`~SpecialTokens.allowed`) and cuts a text at the allowed ones
(:meth:`~SpecialTokens.split`).

    >>> specials = SpecialTokens({"<|endoftext|>": 300})
    >>> allowed = specials.allowed("all", "all", ["hi<|endoftext|>"])
    >>> specials.split("hi<|endoftext|>!", allowed)
    ['hi', 300, '!']
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Iterable, Mapping

from netcl_lite.text.model_file import check_special_tokens

__all__ = ["SpecialTokens"]


class SpecialTokens:
    """``ids``: ``{string: id}``; :meth:`update` replaces it (the compiled searches start over)."""

    def __init__(self, ids: Mapping[str, int] | None = None):
        self.ids: dict[str, int] = {}
        self._res: dict[frozenset, re.Pattern] = {}
        self.update(dict(ids or {}))

    def update(self, ids: dict[str, int]) -> None:
        self.ids = ids
        self._res.clear()

    def register(self, special_tokens: Mapping[str, int], byte_level_ids) -> dict[str, int]:
        """Add ``{string: id}`` (ids unused by ``byte_level_ids`` and by each other); return the new ones.
        A string that is already a special token keeps its id (another id is an error)."""
        if not isinstance(special_tokens, Mapping):
            raise TypeError(f"special_tokens must be a mapping {{string: id}}, got "
                            f"{type(special_tokens).__name__}")
        new = {}
        for name, token_id in special_tokens.items():
            if isinstance(token_id, numbers.Integral) and not isinstance(token_id, bool):
                token_id = int(token_id)
            if name in self.ids and self.ids[name] != token_id:
                raise ValueError(f"special token {name!r} already has id {self.ids[name]}")
            new[name] = token_id
        merged = {**self.ids, **new}
        check_special_tokens(merged, byte_level_ids, "special_tokens")
        self.update(merged)
        return new

    def chosen(self, name: str, value) -> frozenset:
        """``value`` (``"all"`` or an iterable of special-token strings) as a set; ``name`` names the
        parameter in an error."""
        if isinstance(value, str):
            if value == "all":
                return frozenset(self.ids)
            raise TypeError(f'{name} must be "all" or a set of special-token strings, got {value!r}')
        if not isinstance(value, Iterable) or isinstance(value, (bytes, bytearray, memoryview)):
            if not isinstance(value, (bytes, bytearray, memoryview)) and not value:    # None, False: none
                return frozenset()
            raise TypeError(f'{name} must be "all" or a set of special-token strings, got {value!r:.80}')
        try:                                    # a NumPy array too: its truth value would be ambiguous
            chosen = frozenset(value)
        except TypeError:                       # an element that is unhashable (a list)
            chosen = None
        bad = next((v for v in chosen if not isinstance(v, str)), None) if chosen is not None else value
        if chosen is None or bad is not None:
            raise TypeError(f'{name} must be "all" or a set of special-token strings, got '
                            f'{"an element " + type(bad).__name__ + " " if chosen is not None else ""}{bad!r:.80}')
        unknown = sorted(map(str, chosen - set(self.ids)))
        if unknown:
            raise ValueError(f"{name}: {unknown} are not special tokens of this tokenizer "
                             f"(it has {sorted(self.ids)}); register them first")
        return chosen

    def allowed(self, allowed_special, disallowed_special, texts: list[str], batch: bool = False
                ) -> frozenset:
        """The tokens a call allows, after checking that no text holds a disallowed one; the error
        names the token, where it is (``text[i]`` for a ``batch``) and what to pass instead."""
        allowed = self.chosen("allowed_special", allowed_special)
        if disallowed_special == "all":
            disallowed = frozenset(self.ids) - allowed
        else:
            disallowed = self.chosen("disallowed_special", disallowed_special)
        if disallowed:
            search = self.regex(disallowed).search
            for i, text in enumerate(texts):
                if found := search(text):
                    where, plain = ((f"text[{i}]", "encode_ordinary_batch()") if batch
                                    else ("text", "encode_ordinary()"))
                    token = found.group()
                    raise ValueError(
                        f"{where} contains the special token {token!r} at index {found.start()}, which this "
                        f"call does not allow; pass allowed_special={{{token!r}}} (or \"all\") if the text "
                        f"is trusted, or use {plain} to encode it as plain text")
        return allowed

    def regex(self, names: frozenset) -> re.Pattern:
        """A search for any of ``names``, longest first (a token that extends another one wins)."""
        found = self._res.get(names)
        if found is None:
            alternatives = sorted(names, key=lambda s: (-len(s), s))
            found = self._res[names] = re.compile("|".join(map(re.escape, alternatives)))
        return found

    def split(self, text: str, allowed: frozenset) -> list[str | int]:
        """``text`` as plain pieces (``str``, the first and last ones possibly empty) with the id of
        each allowed special token between them."""
        out: list[str | int] = []
        start = 0
        for found in self.regex(allowed).finditer(text):
            out += (text[start:found.start()], self.ids[found.group()])
            start = found.end()
        out.append(text[start:])
        return out
