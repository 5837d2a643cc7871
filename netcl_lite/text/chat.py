"""Chat templating: messages -> token ids, with role markers that only the template can produce.

Template, per message, then optionally the header of the reply the model should write::

    <|start|>{role}<|message|>{content}<|end|>   ...   <|start|>assistant<|message|>

The markers are special tokens of the tokenizer. Roles come from a fixed
list and contents are encoded with ``encode_ordinary``, so a message that
*contains* the text ``<|end|><|start|>system<|message|>`` is just text: it
cannot close its own turn or open a system turn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from netcl_lite.checks import flag
from netcl_lite.text.patterns import split_budget

__all__ = ["DEFAULT_ROLES", "ChatFormat"]

DEFAULT_ROLES = ("system", "user", "assistant", "tool")


class ChatFormat:
    """Render ``[{"role": ..., "content": ...}, ...]`` with the markers ``start``, ``message``, ``end``.

    >>> from netcl_lite.text import BPETokenizer
    >>> tok = BPETokenizer(special_tokens={"<|start|>": 256, "<|message|>": 257, "<|end|>": 258})
    >>> chat = ChatFormat(tok)
    >>> chat.render_text([{"role": "user", "content": "hi"}], add_generation_prompt=True)
    '<|start|>user<|message|>hi<|end|><|start|>assistant<|message|>'
    >>> chat.render([{"role": "user", "content": "hi"}])
    [256, 117, 115, 101, 114, 257, 104, 105, 258]
    """

    def __init__(self, tokenizer, *, roles: Sequence[str] = DEFAULT_ROLES, start: str = "<|start|>",
                 message: str = "<|message|>", end: str = "<|end|>"):
        if not (hasattr(tokenizer, "encode_ordinary") and hasattr(tokenizer, "special_tokens")):
            raise TypeError(f"tokenizer must be a BPETokenizer, got {type(tokenizer).__name__}")
        markers = {"start": start, "message": message, "end": end}
        missing = [m for m in markers.values() if m not in tokenizer.special_tokens]
        if missing:
            raise ValueError(f"the tokenizer has no special tokens {missing}; add them first, e.g. "
                             f"tokenizer.add_token({missing[0]!r}) (and grow the model's embedding "
                             f"and output rows to tokenizer.n_vocab)")
        if isinstance(roles, str) or not all(isinstance(r, str) and r for r in roles) or not roles:
            raise TypeError(f"roles must be a sequence of non-empty str, got {roles!r}")
        for role in roles:
            if any(m in role for m in markers.values()):
                raise ValueError(f"role {role!r} contains a marker string")
        self.tokenizer = tokenizer
        self.roles = tuple(roles)
        self.markers = markers
        self._ids = {name: tokenizer.special_tokens[text] for name, text in markers.items()}

    def render(self, messages: Sequence[Mapping[str, str]], *, add_generation_prompt: bool = False
               ) -> list[int]:
        """Token ids of the conversation (contents encoded as ordinary text)."""
        ids, turns = [], list(self._checked(messages, add_generation_prompt))
        with split_budget(sum(len(role) + len(content or "") for role, content in turns)):  # one limit, not one a message
            for role, content in turns:
                ids.append(self._ids["start"])
                ids += self.tokenizer.encode_ordinary(role)
                ids.append(self._ids["message"])
                if content is not None:
                    ids += self.tokenizer.encode_ordinary(content)
                    ids.append(self._ids["end"])
        return ids

    def render_text(self, messages: Sequence[Mapping[str, str]], *, add_generation_prompt: bool = False
                    ) -> str:
        """The template as a string, for reading. Do not re-encode it with special tokens allowed:
        that would turn marker text inside contents into real markers; use :meth:`render`."""
        start, message, end = self.markers["start"], self.markers["message"], self.markers["end"]
        return "".join(f"{start}{role}{message}" + ("" if content is None else f"{content}{end}")
                       for role, content in self._checked(messages, add_generation_prompt))

    def decode(self, ids) -> str:
        """Text of rendered ids, markers included (``tokenizer.decode``)."""
        return self.tokenizer.decode(ids)

    def _checked(self, messages, add_generation_prompt: bool) -> list[tuple[str, str | None]]:
        if isinstance(messages, (str, Mapping)) or not isinstance(messages, Sequence):
            raise TypeError(f"messages must be a list of {{'role': ..., 'content': ...}} dicts, got "
                            f"{type(messages).__name__}")
        flag("add_generation_prompt", add_generation_prompt)
        turns = []
        for i, msg in enumerate(messages):
            if not isinstance(msg, Mapping) or set(msg) != {"role", "content"}:
                raise ValueError(f"message {i} must be a dict with exactly the keys 'role' and "
                                 f"'content', got {msg!r}")
            role, content = msg["role"], msg["content"]
            if role not in self.roles:
                raise ValueError(f"message {i} has role {role!r}; allowed roles are {list(self.roles)}")
            if not isinstance(content, str):
                raise TypeError(f"message {i} content must be a str, got {type(content).__name__}")
            turns.append((role, content))
        if add_generation_prompt:
            if "assistant" not in self.roles:
                raise ValueError("add_generation_prompt needs an 'assistant' role in roles")
            turns.append(("assistant", None))  # the header only: the model writes the rest
        return turns
