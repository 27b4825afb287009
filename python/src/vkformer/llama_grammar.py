"""`vkformer.LlamaGrammar`: llama-cpp-python's grammar object on the library's grammar sampler.

A grammar constrains generation: only tokens that continue a string the grammar derives are
drawn (the library's ``vkf_sampler_params.grammar``, applied before the other samplers, as
llama.cpp's grammar-first order), and the generation ends when the grammar is complete and
nothing can extend it. Grammars are llama.cpp's GBNF (its ``grammars/*.gbnf`` work as they
are); ``from_json_schema`` writes one with the library's converter (``vkformer generate -j``).

    from vkformer import Llama, LlamaGrammar
    g = LlamaGrammar.from_string('root ::= "yes" | "no"')
    llm("Is the sky blue? ", grammar=g)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

from . import _core, _errors

LLAMA_GRAMMAR_DEFAULT_ROOT = "root"


class LlamaGrammar:
    """A GBNF grammar, checked when it is made (a mistake raises :class:`vkformer.FormatError`,
    a ValueError, naming its line and column).

    Make one with :meth:`from_string`, :meth:`from_file` or :meth:`from_json_schema`, and pass
    it as ``grammar=`` to ``Llama.__call__`` / ``create_completion`` /
    ``create_chat_completion`` / ``generate``. It holds no state of a generation: one object
    serves any number of calls.
    """

    def __init__(self, *, _grammar: str, _root: str = LLAMA_GRAMMAR_DEFAULT_ROOT) -> None:
        if not isinstance(_grammar, str):
            raise TypeError("grammar: expected GBNF text (a str)")
        _core.grammar_check(_grammar, _root)
        self._grammar = _grammar
        self._root = _root

    @property
    def grammar(self) -> str:
        """The GBNF text."""
        return self._grammar

    @property
    def root(self) -> str:
        """The start rule."""
        return self._root

    def reset(self) -> None:
        """Kept for llama-cpp-python's scripts: each generation starts the grammar afresh."""

    def __repr__(self) -> str:
        head = self._grammar if len(self._grammar) <= 60 else self._grammar[:57] + "..."
        return f"LlamaGrammar({head!r})"

    @classmethod
    def from_string(cls, grammar: str, verbose: bool = True) -> "LlamaGrammar":
        """A grammar from GBNF text (``root ::= ...``)."""
        return cls(_grammar=grammar)

    @classmethod
    def from_file(cls, file: Union[str, Path], verbose: bool = True) -> "LlamaGrammar":
        """A grammar from a .gbnf file (an unreadable file raises OSError naming it)."""
        text = Path(file).read_text(encoding="utf-8")
        if not text.strip():
            raise ValueError(f"{file}: the grammar file is empty")
        try:
            return cls(_grammar=text)
        except _errors.VkformerError as e:  # the file's name beside the line and column
            raise type(e)(f"{file}: {e.message}", e.status) from None

    @classmethod
    def from_json_schema(cls, json_schema: Union[str, Dict[str, Any]],
                         verbose: bool = True) -> "LlamaGrammar":
        """The grammar of the JSON texts a JSON Schema (a JSON string, or a dict) validates.

        Keywords the library cannot enforce (``uniqueItems``, ``not``, formats such as
        ``email``, ...) raise :class:`vkformer.UnsupportedError` naming them: a grammar that
        ignored one would let the model write what the schema rejects."""
        return cls(_grammar=_core.json_schema_to_grammar(json_schema))


def json_schema_to_gbnf(schema: Union[str, Dict[str, Any]],
                        prop_order: Optional[List[str]] = None) -> str:
    """llama-cpp-python's helper: the GBNF text of a JSON Schema. ``prop_order`` is refused:
    properties come in the schema's order, required ones first (as llama.cpp writes them)."""
    if prop_order:
        raise ValueError("prop_order: not supported by vkformer: properties come in the "
                         "schema's order, required ones first")
    return _core.json_schema_to_grammar(schema if isinstance(schema, str) else json.dumps(schema))


# any JSON value (llama.cpp's grammars/json.gbnf's language), from the library's converter
JSON_GBNF: str = _core.json_schema_to_grammar("{}")
